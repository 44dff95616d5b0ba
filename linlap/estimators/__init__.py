"""scikit-learn estimators: thin wrappers over the solvers in :mod:`linlap.solvers`.

:mod:`.linear` (LapRLS, LapSVM), :mod:`.kernel` (kernel mode), :mod:`.cv` (grid
searches), :mod:`.path` (solution path); what they share is in :mod:`._base`.
"""

from ._base import SCALED_GAMMA_A, SCALED_GAMMA_I, scaled_gamma_A, scaled_gamma_I
from .clustering import LaplacianSpectralClustering
from .emr import EMRClassifier
from .cv import LapRLSClassifierCV, LapSVMClassifierCV
from .kernel import KernelLapRLSClassifier, KernelLapSVMClassifier
from .linear import LapRLSClassifier, LapSVMClassifier
from .path import LapSVMPathClassifier, lapsvm_path
from .s3vm import LapS3VMClassifier

__all__ = ["LapRLSClassifier", "LapSVMClassifier", "KernelLapRLSClassifier",
           "KernelLapSVMClassifier", "LapRLSClassifierCV", "LapSVMClassifierCV",
           "LapSVMPathClassifier", "lapsvm_path", "LaplacianSpectralClustering",
           "LapS3VMClassifier", "EMRClassifier", "scaled_gamma_I", "SCALED_GAMMA_I",
           "scaled_gamma_A", "SCALED_GAMMA_A"]
