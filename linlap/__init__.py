"""linlap — manifold-regularised semi-supervised linear classifiers for large sparse
document collections (Laplacian RLS and Laplacian SVM over a kNN document graph).

The public names are loaded on first use, so ``import linlap`` stays fast: scikit-
learn, pynndescent and numba are imported only when an estimator or graph is used.
"""

import importlib

__version__ = "0.1.0"

_LAZY = {
    "KNNGraph": "linlap.graph",
    "LapRLSClassifier": "linlap.estimators",
    "LapSVMClassifier": "linlap.estimators",
    "KernelLapRLSClassifier": "linlap.estimators",
    "KernelLapSVMClassifier": "linlap.estimators",
    "LapSVMPathClassifier": "linlap.estimators",
    "LapRLSClassifierCV": "linlap.estimators",
    "LapSVMClassifierCV": "linlap.estimators",
    "lapsvm_path": "linlap.estimators",
    "LaplacianSpectralClustering": "linlap.estimators",
    "LapS3VMClassifier": "linlap.estimators",
    "EMRClassifier": "linlap.estimators",
    "datasets": "linlap.datasets",
    "model_selection": "linlap.model_selection",
    "save": "linlap.persistence",
    "load": "linlap.persistence",
    "feature_weights": "linlap.inspection",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'linlap' has no attribute {name!r}")
    mod = importlib.import_module(module)
    value = mod if module.endswith("." + name) else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
