"""Label helpers shared by the loaders and the estimators."""

import numbers

import numpy as np

__all__ = ["marker_mask"]


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
