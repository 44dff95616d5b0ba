"""Parameter checks shared by the estimators, the datasets and the distributed readers
(messages name the parameter and its value)."""

import math
import numbers

import numpy as np

__all__ = ["is_int", "is_finite_real", "is_finite_number", "check_int", "check_real",
           "check_nonnegative", "check_tol", "check_positive_int", "check_graph_param", "check_extreme_values", "check_flags",
           "check_verbose", "user_stacklevel"]

#: Largest |x| the solvers accept: their sums of squares (‖X p‖², CG's ‖A p‖²) stay far
#: from float64 overflow below it, and no document feature comes near it.
MAX_ABS_VALUE = 1e30
#: Smallest largest-|x| a linear fit accepts: below it the solvers' sums of squares
#: (‖x‖², CG's pᵀAp) underflow, and the fit would be the zero model without a warning.
MIN_MAX_ABS_VALUE = 1e-100


def is_int(x):
    """An integer, not a bool."""
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))


def is_finite_real(x):
    """A real number (not a bool) that is finite as a float: an integer beyond int64
    (10**30) is one, a float or integer overflowing float64 (10**400) is not."""
    return (isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))
            and is_finite_number(x))


def is_finite_number(x):
    """``float(x)`` is finite (any number: bools, 0-d arrays and integers beyond int64
    included): the solvers' check of weights the estimators validated (``np.isfinite``
    refuses a Python int beyond int64)."""
    try:
        return math.isfinite(float(x))
    except (OverflowError, TypeError, ValueError):
        return False


def check_int(name, value, low=1, high=None):
    """``value`` as an int, if it is an integer (not a bool) ``>= low`` and, unless
    ``high`` is None, ``<= high``; else ValueError naming the parameter ``name``."""
    if not is_int(value) or value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be an integer {bound}, got {value!r}.")
    return int(value)


def check_real(name, value, low=-np.inf, high=np.inf, *, low_open=False, high_open=False):
    """``value`` as a float, if it is a finite real number (not a bool) between ``low``
    and ``high``, each included unless ``low_open`` / ``high_open``; else ValueError
    naming the parameter ``name``."""
    ok = is_finite_real(value)
    if ok:
        v = float(value)
        ok = (v > low if low_open else v >= low) and (v < high if high_open else v <= high)
    if not ok:
        if high == np.inf:
            bound = f"{'>' if low_open else '>='} {low}"
        elif low == -np.inf:
            bound = f"{'<' if high_open else '<='} {high}"
        else:
            bound = f"in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}.")
    return v


def check_nonnegative(est, *names):
    """Each named parameter is a finite real number >= 0 (not a bool)."""
    for name in names:
        check_real(name, getattr(est, name), 0)


#: The smallest tol accepted: the smallest normal float64 (a subnormal tol times a norm
#: underflows, and the solvers' tests divide by it)
MIN_TOL = float(np.finfo(np.float64).tiny)


def check_tol(est):
    """``tol`` is a relative tolerance: a number strictly between 0 and 1 (at 1 or more
    every solver would stop before its first step and return the zero model), and not
    subnormal (below ``MIN_TOL``)."""
    v = est.tol
    if (not isinstance(v, numbers.Real) or isinstance(v, (bool, np.bool_))
            or not 0 < v < 1):
        raise ValueError(f"tol must be a number strictly between 0 and 1, got {v!r}.")
    if v < MIN_TOL:
        raise ValueError(f"tol must be at least {MIN_TOL:.3g} (the smallest normal float64), "
                         f"got {v!r}.")


def check_flags(est, *names):
    """Each named parameter is True or False (a string such as "no" would be truthy)."""
    for name in names:
        v = getattr(est, name)
        if not isinstance(v, (bool, np.bool_)):
            raise ValueError(f"{name} must be True or False, got {v!r}.")


def check_verbose(est):
    """``verbose`` is a bool or an integer >= 0."""
    v = est.verbose
    if not (isinstance(v, (bool, np.bool_)) or (isinstance(v, numbers.Integral) and v >= 0)):
        raise ValueError(f"verbose must be an integer >= 0 or a bool, got {v!r}.")


def check_positive_int(est, *names):
    """Each named parameter is an integer >= 1 (not a bool)."""
    for name in names:
        check_int(name, getattr(est, name), 1)


def check_graph_param(est):
    from .graph import KNNGraph

    if est.graph is not None and not isinstance(est.graph, KNNGraph):
        raise ValueError(f"graph must be None or a linlap.KNNGraph, got "
                         f"{type(est.graph).__name__}.")


def check_extreme_values(X, refuse_tiny=False):
    """X has no value of magnitude above ``MAX_ABS_VALUE`` (finite values are checked by
    scikit-learn's validation before) and, with ``refuse_tiny`` (a linear fit), is zero
    or has some value of magnitude at least ``MIN_MAX_ABS_VALUE``."""
    import scipy.sparse as sp

    data = X.data if sp.issparse(X) else X
    top = max(float(data.max()), -float(data.min())) if data.size else 0.0  # no |X| copy
    if top > MAX_ABS_VALUE:
        raise ValueError(f"X has extreme values (max |x| = {top:.3g} > {MAX_ABS_VALUE:g}): the "
                         f"solvers' sums of squares would overflow to non-finite values. "
                         f"Rescale X (e.g. TF-IDF rows of unit norm).")
    if refuse_tiny and 0 < top < MIN_MAX_ABS_VALUE:
        raise ValueError(f"X has only tiny values (max |x| = {top:.3g} < {MIN_MAX_ABS_VALUE:g}):"
                         f" the solvers' sums of squares would underflow to 0 and the fit "
                         f"would be the zero model. Rescale X (e.g. TF-IDF rows of unit "
                         f"norm).")


def user_stacklevel():
    """The ``stacklevel`` that makes a warning issued by the calling function point at the
    first frame outside linlap (the user's line, or scikit-learn's Pipeline calling it),
    however deep in linlap the warning is raised."""
    import os
    import sys

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level
