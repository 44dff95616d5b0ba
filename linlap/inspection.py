"""Reading a fitted model's feature weights (``linlap.feature_weights``)."""

import numpy as np

from ._validation import is_int

__all__ = ["feature_weights"]


def _split(model):
    """(estimator, feature names or None) of a Pipeline or bare estimator."""
    from sklearn.pipeline import Pipeline

    if isinstance(model, Pipeline):
        est = model.steps[-1][1]
        names = None
        if len(model.steps) > 1:
            try:
                names = model[:-1].get_feature_names_out()
            except Exception:  # hashing vectorizer, or a step without names
                names = None
        return est, names
    return model, None


def feature_weights(model, top=None, *, feature_names=None):
    """Tidy table of a fitted linear model's weights: one row per (class, term).

    Parameters
    ----------
    model : Pipeline or estimator
        A fitted ``Pipeline(vectorizer, ..., LapRLSClassifier/LapSVMClassifier)`` or
        any fitted estimator with ``coef_`` and ``classes_``.
    top : int or None, default=None
        None: every term. An int n: per class, the n highest- and the n
        lowest-weighted terms.
    feature_names : array-like of str, optional
        Names of the columns of ``coef_``; by default taken from the pipeline's
        vectorizer (``get_feature_names_out``). When no names are available (a
        HashingVectorizer, a bare estimator) ``term`` is the integer column index.

    Returns
    -------
    pandas.DataFrame if pandas is installed, else a list of dicts
        Columns ``term``, ``class``, ``weight``; per class, sorted by decreasing
        weight. A binary model has one weight vector, that of ``classes_[1]``
        (positive weights push towards ``classes_[1]``, negative towards
        ``classes_[0]``), so its rows all carry ``class = classes_[1]``.
    """
    est, names = _split(model)
    coef = getattr(est, "coef_", None)
    classes = getattr(est, "classes_", None)
    if coef is None or classes is None:
        raise ValueError("feature_weights needs a fitted linear classifier (with coef_ and "
                         "classes_); fit the model first.")
    coef = np.atleast_2d(np.asarray(coef.toarray() if hasattr(coef, "toarray") else coef))
    if feature_names is not None:
        names = np.asarray(feature_names, dtype=object)
    if names is not None and len(names) != coef.shape[1]:
        raise ValueError(f"{len(names)} feature names for {coef.shape[1]} weights.")
    row_classes = [classes[1]] if coef.shape[0] == 1 and len(classes) == 2 else list(classes)
    if len(row_classes) != coef.shape[0]:
        raise ValueError(f"coef_ has {coef.shape[0]} rows for {len(classes)} classes.")
    if top is not None and not (is_int(top) and top >= 1):
        raise ValueError(f"top must be a positive integer or None, got {top!r}.")
    n_terms = coef.shape[1]
    k = n_terms if top is None or 2 * top >= n_terms else 2 * top  # rows per class
    terms = np.empty((coef.shape[0], k), dtype=np.intp)  # the column of each row, by class
    for i, w in enumerate(coef):
        terms[i] = _order(w) if k == n_terms else _extremes(w, top)
    labels = [c.item() if hasattr(c, "item") else c for c in row_classes]
    if names is not None:  # str() of each name once, shared by the rows that name it
        text = np.empty(len(names), dtype=object)
        text[:] = [t if type(t) is str else str(t) for t in names]
    try:
        import pandas as pd
    except ImportError:  # the documented fallback: one dict per row, a class at a time
        rows = []
        for w, label, cols in zip(coef, labels, terms):
            term = (cols if names is None else text[cols]).tolist()
            rows += [{"term": t, "class": label, "weight": v}
                     for t, v in zip(term, w[cols].astype(np.float64).tolist())]
        return rows
    if not terms.size:  # no values to infer the column types from
        return pd.DataFrame([], columns=["term", "class", "weight"])
    # pandas infers the types of names and labels from Python lists, as it did from the
    # rows' dicts (int64 for integer classes, strings for the names)
    label = pd.Series(labels).repeat(k).reset_index(drop=True)
    weight = np.take_along_axis(coef, terms, axis=1).astype(np.float64).ravel()
    terms = terms.ravel()
    term = terms.astype(np.int64) if names is None else text[terms].tolist()
    return pd.DataFrame({"term": term, "class": label, "weight": weight},
                        columns=["term", "class", "weight"])


def _order(w):
    """Columns by decreasing weight, ties in column order (``argsort(-w)``, stable)."""
    return np.argsort(-w, kind="stable")


def _extremes(w, top):
    """``_order(w)``'s first ``top`` and last ``top`` entries, without sorting all of w."""
    a = -w
    n = a.shape[0]
    if a.dtype.kind not in "iuf" or (a.dtype.kind == "f" and np.isnan(a).any()):
        order = _order(w)  # NaN compares to nothing: sort all (it goes last)
        return np.concatenate([order[:top], order[-top:]])
    lo, hi = np.partition(a, [top - 1, n - top])[[top - 1, n - top]]
    # the `top` smallest of a: all below lo, then the first of those equal to lo (a stable
    # sort keeps ties in column order); the `top` largest: all above hi, then the last of
    # those equal to hi
    below, at_lo = np.flatnonzero(a < lo), np.flatnonzero(a == lo)
    above, at_hi = np.flatnonzero(a > hi), np.flatnonzero(a == hi)
    first = np.sort(np.concatenate([below, at_lo[:top - below.size]]))
    last = np.sort(np.concatenate([above, at_hi[at_hi.size - (top - above.size):]]))
    return np.concatenate([first[np.argsort(a[first], kind="stable")],
                           last[np.argsort(a[last], kind="stable")]])
