"""Label helpers shared by the loaders and the estimators."""

import numbers
import warnings

import numpy as np

__all__ = ["marker_mask", "check_marker_fits"]


def marker_mask(y, marker):
    """Boolean mask of the entries of ``y`` equal to ``marker`` (NaN matches NaN)."""
    if isinstance(marker, float) and marker != marker:
        if y.dtype.kind == "f":
            return np.isnan(y)
        return np.array([v != v for v in y], dtype=bool)
    if y.dtype.kind == "O":
        return np.array([_same_label(v, marker) for v in y], dtype=bool)
    if y.dtype.kind in "biuf" and isinstance(marker, numbers.Number) and not isinstance(marker, bool):
        return y == marker
    if y.dtype.kind in "US" and isinstance(marker, (str, bytes)):
        return y == marker
    return np.zeros(y.shape, dtype=bool)


def _same_label(value, marker):
    if isinstance(value, bool) != isinstance(marker, bool):
        return False
    try:
        return bool(value == marker)
    except (TypeError, ValueError):
        return False


def check_marker_fits(y, marker):
    """ValueError when ``y``'s dtype cannot hold ``marker``, so that no row could be marked
    unlabeled and the rows meant to be would become a class: a string or bool marker
    for a numeric y (``y == '-1'`` is never true). A warning for an integer marker outside
    the range of an integer y that holds the marker's wrapped value (-1 stored as 255 in
    uint8): those rows may be a real class (a 0/255 mask) or the marker wrapped around,
    and are taken as a class. Object arrays (which can hold any marker) and an integer y
    without the wrapped value are left alone."""
    kind = y.dtype.kind
    if kind not in "iuf":
        return
    if isinstance(marker, (str, bytes, bool, np.bool_)):
        raise ValueError(
            f"y holds numbers (dtype {y.dtype}), so the unlabeled marker {marker!r} "
            f"({type(marker).__name__}) matches no row and rows meant to be unlabeled "
            f"would become a class: pass the number that marks the unlabeled rows, e.g. "
            f"unlabeled=-1 (the same marker for a fully labeled y).")
    if kind in "iu" and isinstance(marker, numbers.Real) and not (
            isinstance(marker, float) and not marker.is_integer()):
        info = np.iinfo(y.dtype)
        try:
            m = int(marker)
        except (OverflowError, ValueError):  # inf
            return
        if info.min <= m <= info.max:
            return
        wrapped = m % 2 ** info.bits
        if kind == "i" and wrapped > info.max:
            wrapped -= 2 ** info.bits
        if np.any(y == wrapped):  # a class, or the marker wrapped: say which is assumed
            warnings.warn(
                f"y has dtype {y.dtype}, which cannot hold the unlabeled marker {marker!r}: "
                f"its rows equal to {wrapped} are taken as a class. If they are the "
                f"unlabeled rows (the marker wrapped around, e.g. by astype({y.dtype})), "
                f"keep y in a signed dtype that holds the marker (e.g. y.astype(np.int64) "
                f"before marking) or pass unlabeled={wrapped}.", UserWarning, stacklevel=3)
