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
    rows = []
    for c, w in zip(row_classes, coef):
        order = np.argsort(-w, kind="stable")
        if top is not None and 2 * top < order.size:
            order = np.concatenate([order[:top], order[-top:]])
        label = c.item() if hasattr(c, "item") else c
        for j in order:
            term = names[j] if names is not None else int(j)
            rows.append({"term": str(term) if names is not None else term, "class": label,
                         "weight": float(w[j])})
    try:
        import pandas as pd
    except ImportError:
        return rows
    return pd.DataFrame(rows, columns=["term", "class", "weight"])
