"""Hiding labels: the usual way to turn a labeled corpus into a semi-supervised problem."""

from __future__ import annotations

import numbers

import numpy as np

from .._labels import marker_mask as _marker_mask

__all__ = ["mask_labels"]


def _masked_dtype(dtype, marker):
    """Dtype able to hold both the labels of ``dtype`` and ``marker``."""
    is_real = isinstance(marker, numbers.Real) and not isinstance(marker, bool)
    if dtype.kind in "iu" and isinstance(marker, numbers.Integral) and not isinstance(marker, bool):
        info = np.iinfo(dtype)
        if info.min <= marker <= info.max:
            return dtype
        wide = np.promote_types(dtype, np.min_scalar_type(marker))
        # uint64 with -1 promotes to float64, which would merge labels above 2**53
        return wide if wide.kind in "iu" else np.dtype(object)
    if dtype.kind == "f" and is_real:
        return dtype
    if dtype.kind == "b" and is_real:
        return np.promote_types(np.int8, np.min_scalar_type(marker))
    return np.dtype(object)


def mask_labels(y, n_labeled, *, per_class=False, random_state=None, unlabeled=-1):
    """Hide all but a few labels, to make a semi-supervised problem.

    Returns a copy of `y` in which every row except `n_labeled` rows (or
    `n_labeled` rows of each class when `per_class` is True), drawn at random
    without replacement, is replaced by the `unlabeled` marker -- the ``-1``
    convention of scikit-learn's semi-supervised estimators.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        The labels (integers, floats, strings or objects).
    n_labeled : int
        Number of rows that keep their label (in all, or per class when
        `per_class` is True). Must be at least 1.
    per_class : bool, default=False
        If True, keep `n_labeled` labels of every class (``n_labeled *
        n_classes`` rows in all), drawn uniformly within each class.
    random_state : int, RandomState instance or None, default=None
        Seed or generator for the draw (see
        :func:`sklearn.utils.check_random_state`). An int gives the same rows
        on every call.
    unlabeled : scalar, default=-1
        The marker written into the unlabeled rows.

    Returns
    -------
    y_masked : ndarray of shape (n_samples,)
        A new array. Its dtype is that of `y` whenever `y` can hold the marker
        (integer or float labels with a numeric marker, e.g. the default
        ``-1``); string labels, or a marker that does not fit, give an object
        array (or a wider integer type for unsigned labels and ``-1``, object for
        uint64).

    Raises
    ------
    ValueError
        If `y` is not one-dimensional, holds NaN labels (other than the `unlabeled`
        marker), mixes label types that cannot be ordered, `n_labeled` is not an
        integer >= 1, or `n_labeled` exceeds the number of labeled rows available (of
        the smallest class, when `per_class` is True).

    Notes
    -----
    Rows of `y` that already hold the `unlabeled` marker are treated as
    unlabeled: they stay unlabeled and are never drawn, and the marker is not
    counted as a class.

    Every class is represented. With ``per_class=False`` and `n_labeled` at
    least the number of classes C, the draw **seeds one row per class first**
    (one row drawn uniformly within each class, classes in sorted order), then
    draws the other ``n_labeled - C`` rows uniformly without replacement from
    all remaining rows. (This is not exactly a uniform draw conditioned on
    covering every class: for small `n_labeled`, rare classes are slightly
    over-represented.) When `n_labeled` is smaller than C, the rows are drawn
    uniformly and some classes are necessarily missing.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    >>> ym = mask_labels(y, 1, per_class=True, random_state=0)
    >>> sorted(ym[ym != -1].tolist())
    [0, 1, 2]
    >>> int((mask_labels(y, 4, random_state=0) != -1).sum())
    4
    """
    from sklearn.utils import check_random_state

    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
    if isinstance(n_labeled, bool) or not isinstance(n_labeled, numbers.Integral):
        raise ValueError(f"n_labeled must be an integer, got {n_labeled!r}")
    n_labeled = int(n_labeled)
    if n_labeled < 1:
        raise ValueError(f"n_labeled must be at least 1, got {n_labeled}")

    rng = check_random_state(random_state)
    already = _marker_mask(y, unlabeled)
    eligible = np.flatnonzero(~already)
    if y.dtype.kind in "fO" and _marker_mask(y[eligible], np.nan).any():  # NaN: no class
        raise ValueError("y has NaN labels: mark unlabeled rows with the `unlabeled` "
                         "marker (e.g. unlabeled=np.nan if NaN marks them), or drop them.")
    try:
        classes, codes = np.unique(y[eligible], return_inverse=True)
    except TypeError:  # labels np.unique cannot sort: mixed types
        kinds = sorted({type(v).__name__ for v in y[eligible].tolist()})
        raise ValueError(f"y mixes label types {kinds} that cannot be ordered; use one type "
                         f"(and mark unlabeled rows with `unlabeled`, e.g. unlabeled=None "
                         f"if None marks them).") from None
    codes = codes.ravel()
    n_classes = len(classes)

    if per_class:
        counts = np.bincount(codes, minlength=n_classes)
        if n_classes == 0 or n_labeled > counts.min():
            small = classes[np.argmin(counts)] if n_classes else None
            raise ValueError(
                f"n_labeled={n_labeled} per class exceeds the size of class {small!r} "
                f"({counts.min() if n_classes else 0} labeled rows)"
            )
        keep = np.concatenate(
            [rng.choice(eligible[codes == c], size=n_labeled, replace=False) for c in range(n_classes)]
        )
    else:
        if n_labeled > len(eligible):
            raise ValueError(f"n_labeled={n_labeled} exceeds the {len(eligible)} labeled rows of y")
        if n_classes <= n_labeled:
            seeds = np.array(
                [rng.choice(eligible[codes == c]) for c in range(n_classes)], dtype=np.intp
            )
            rest = np.setdiff1d(eligible, seeds, assume_unique=True)
            extra = rng.choice(rest, size=n_labeled - n_classes, replace=False)
            keep = np.concatenate([seeds, extra])
        else:
            keep = rng.choice(eligible, size=n_labeled, replace=False)

    out = y.astype(_masked_dtype(y.dtype, unlabeled), copy=True)
    hide = np.ones(len(y), dtype=bool)
    hide[keep] = False
    out[hide] = unlabeled
    return out


# --------------------------------------------------------------------------- synthetic corpus
