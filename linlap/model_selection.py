"""Choosing γ: the LapSVM solution path and the grid searches (defined in
:mod:`linlap.estimators.path` and :mod:`linlap.estimators.cv`), and a scorer of the
labeled rows for scikit-learn's own searches."""

from .estimators._base import labeled_scorer
from .estimators.cv import LapRLSClassifierCV, LapSVMClassifierCV
from .estimators.path import LapSVMPathClassifier

__all__ = ["LapSVMPathClassifier", "LapRLSClassifierCV", "LapSVMClassifierCV",
           "labeled_scorer"]
