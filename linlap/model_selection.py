"""Choosing γ: the LapSVM solution path and the grid searches (defined in
:mod:`linlap.estimators.path` and :mod:`linlap.estimators.cv`)."""

from .estimators.cv import LapRLSClassifierCV, LapSVMClassifierCV
from .estimators.path import LapSVMPathClassifier

__all__ = ["LapSVMPathClassifier", "LapRLSClassifierCV", "LapSVMClassifierCV"]
