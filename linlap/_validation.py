"""Parameter checks shared by the estimators (messages name the parameter and its value)."""

import numbers

import numpy as np

__all__ = ["is_int", "check_nonnegative", "check_tol", "check_positive_int", "check_graph_param"]


def is_int(x):
    """An integer, not a bool."""
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))


def check_nonnegative(est, *names):
    """Each named parameter is a finite real number >= 0 (not a bool)."""
    for name in names:
        v = getattr(est, name)
        if (not isinstance(v, numbers.Real) or isinstance(v, (bool, np.bool_))
                or not np.isfinite(v) or v < 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {v!r}.")


def check_tol(est):
    if not isinstance(est.tol, numbers.Real) or not est.tol > 0:
        raise ValueError(f"tol must be > 0, got {est.tol!r}.")


def check_positive_int(est, *names):
    """Each named parameter is an integer >= 1 (not a bool)."""
    for name in names:
        v = getattr(est, name)
        if not isinstance(v, numbers.Integral) or isinstance(v, (bool, np.bool_)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}.")


def check_graph_param(est):
    from .graph import KNNGraph

    if est.graph is not None and not isinstance(est.graph, KNNGraph):
        raise ValueError(f"graph must be None or a linlap.KNNGraph, got "
                         f"{type(est.graph).__name__}.")
