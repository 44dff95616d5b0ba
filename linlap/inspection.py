"""Reading a fitted model's feature weights (``linlap.feature_weights``)."""

import os

import numpy as np

from ._validation import is_int

__all__ = ["feature_weights"]


def _columns_of_a_matrix(model):
    """Whether the classifier's columns are those of the input matrix, without names: a
    bare estimator, or a Pipeline whose steps before it only rescale columns (a
    Normalizer, as ``linlap fit --normalize l2`` saves) of input without column names —
    scikit-learn would name them x0, x1, …: placeholders, not terms."""
    from sklearn.base import OneToOneFeatureMixin
    from sklearn.pipeline import Pipeline

    if not isinstance(model, Pipeline) or len(model.steps) < 2:
        return True
    pre = [step for _, step in model.steps[:-1]]
    return (all(isinstance(s, OneToOneFeatureMixin) for s in pre)
            and not hasattr(pre[0], "feature_names_in_"))


def _split(model):
    """(estimator, feature names or None) of a Pipeline or bare estimator."""
    from sklearn.pipeline import Pipeline

    est = model.steps[-1][1] if isinstance(model, Pipeline) else model
    if _columns_of_a_matrix(model):
        return est, None
    try:
        return est, model[:-1].get_feature_names_out()
    except Exception:  # hashing vectorizer, or a step without names
        return est, None


def _no_weights_message(est):
    """Why ``est`` has no term weights to read, or None when it has (coef_ and classes_).

    The message starts with ``a <Class> has no feature weights``, as the CLI prints it."""
    coef = getattr(est, "coef_", None)
    classes = getattr(est, "classes_", None)
    if coef is not None and classes is not None:
        return None
    from .estimators.clustering import LaplacianSpectralClustering
    from .estimators.kernel import _KernelLapClassifier

    name = type(est).__name__
    base = getattr(est, "estimator_", None)  # EMRClassifier's fitted base estimator
    kernel = (isinstance(est, _KernelLapClassifier) or isinstance(base, _KernelLapClassifier)
              or getattr(est, "dual_coef_", None) is not None
              or (isinstance(est, LaplacianSpectralClustering) and est.kernel != "linear"))
    if coef is None and kernel:
        return (f"a {name} has no feature weights: kernel models weigh training documents "
                f"(dual_coef_), not terms")
    if isinstance(est, LaplacianSpectralClustering):
        if coef is None:  # unfitted, linear kernel
            return (f"a {name} has no feature weights per class (clusters are not "
                    f"classes); once fitted, its coef_ (n_features × n_components) holds "
                    f"each eigenfunction's term weights")
        return (f"a {name} has no feature weights per class (clusters are not classes): "
                f"read its coef_ (n_features × n_components), each column one "
                f"eigenfunction's term weights")
    if coef is not None:
        return f"a {name} has coef_ but no classes_: feature_weights reads classifiers"
    if classes is not None:  # fitted, yet not linear
        return (f"a {name} has no feature weights (no coef_): feature_weights reads "
                f"linear classifiers")
    if not hasattr(est, "fit"):  # e.g. a model file's path
        hint = (": load a saved model first (linlap.load(path))"
                if isinstance(est, (str, bytes, os.PathLike)) else "")
        return (f"feature_weights needs a fitted linear classifier (with coef_ and "
                f"classes_), not a {name}{hint}")
    return (f"feature_weights needs a fitted linear classifier (with coef_ and classes_); "
            f"this {name} is not fitted: fit it first")


def _embedding_columns(model, n_columns):
    """Boolean mask over the ``n_columns`` columns of a Pipeline's classifier: True for
    the embedding dimensions of its :class:`~linlap.text.EmbeddedTfidfVectorizer`
    (followed through column-selecting steps such as ``SelectFromModel``); None when
    there are none or the columns cannot be traced."""
    from sklearn.pipeline import Pipeline

    from .text import EmbeddedTfidfVectorizer

    if not isinstance(model, Pipeline) or len(model.steps) < 2:
        return None
    vec = model.steps[0][1]
    if not isinstance(vec, EmbeddedTfidfVectorizer) or not hasattr(vec, "word_vectors_"):
        return None
    n_terms = len(vec.tfidf_.vocabulary_)
    emb = np.arange(n_terms + vec.word_vectors_.shape[1]) >= n_terms
    if len(model.steps) > 2:  # the steps in between: which columns reach the classifier
        try:
            cols = model[1:-1].get_feature_names_out(
                np.array([str(j) for j in range(emb.size)], dtype=object))
            emb = emb[np.array([int(c) for c in cols], dtype=np.intp)]
        except Exception:  # a step that makes new columns (or names none): not traced
            return None
    if emb.shape[0] != n_columns or not emb.any():
        return None
    return emb


class _Weights:
    """What ``feature_weights`` and ``linlap top-features`` rank: the classifier ``est``,
    ``coef`` (2-D ndarray, one row per entry of ``row_classes``) over the term columns
    ``columns`` of ``est.coef_``, their ``names`` (None: unknown, use ``columns``) and
    the number ``n_embedding`` of embedding dimensions left out."""

    def __init__(self, model, feature_names=None):
        est, names = _split(model)
        why = _no_weights_message(est)
        if why is not None:
            raise ValueError(why + ".")
        coef, classes = est.coef_, est.classes_
        coef = np.atleast_2d(np.asarray(coef.toarray() if hasattr(coef, "toarray") else coef))
        if feature_names is not None:
            names = np.asarray(feature_names, dtype=object)
        if names is not None and len(names) != coef.shape[1]:
            raise ValueError(f"{len(names)} feature names for {coef.shape[1]} weights.")
        row_classes = ([classes[1]] if coef.shape[0] == 1 and len(classes) == 2
                       else list(classes))
        if len(row_classes) != coef.shape[0]:
            raise ValueError(f"coef_ has {coef.shape[0]} rows for {len(classes)} classes.")
        columns = np.arange(coef.shape[1])
        emb = _embedding_columns(model, coef.shape[1])
        self.n_embedding = 0 if emb is None else int(emb.sum())
        if emb is not None:
            columns = np.flatnonzero(~emb)
            coef = coef[:, columns]
            names = None if names is None else names[columns]
        self.est, self.coef, self.row_classes = est, coef, row_classes
        self.columns, self.names = columns, names


def feature_weights(model, top=None, *, feature_names=None):
    """Tidy table of a fitted linear model's term weights: one row per (class, term).

    Parameters
    ----------
    model : Pipeline or estimator
        A fitted ``Pipeline(vectorizer, ..., LapRLSClassifier/LapSVMClassifier)`` or
        any fitted estimator with ``coef_`` and ``classes_``. Kernel models
        (``KernelLapRLSClassifier``, ...) weigh training documents, not terms, and
        spectral clustering has no classes: both are refused, saying so.
    top : int or None, default=None
        None: every term. An int n: per class, the n highest- and the n
        lowest-weighted terms.
    feature_names : array-like of str, optional
        Names of the columns of ``coef_``; by default taken from the pipeline's
        vectorizer (``get_feature_names_out``). When no names are available (a
        HashingVectorizer, a bare estimator) ``term`` is the integer column index.

    Returns
    -------
    pandas.DataFrame if pandas can be imported, else a list of dicts
        (pandas is not a dependency of linlap). Columns ``term``, ``class``,
        ``weight``; per class, sorted by decreasing weight, equal weights in column
        order (with ``top``: the n highest, then the n lowest, still by decreasing
        weight). A binary model has one weight vector, that of ``classes_[1]``
        (positive weights push towards ``classes_[1]``, negative towards
        ``classes_[0]``), so its rows all carry ``class = classes_[1]``. A
        multi-class model has one one-vs-rest row of ``coef_`` per class.

    Notes
    -----
    Only terms are ranked. A pipeline whose vectorizer is an
    :class:`~linlap.text.EmbeddedTfidfVectorizer` (``linlap fit --embedding``) gives
    its classifier dense embedding dimensions after the TF-IDF terms: every document
    has a value in each of them, on another scale than its sparse unit-norm TF-IDF
    row, so their weights do not rank against the terms' (they would crowd them out
    of both ends of the list). They are left out of the table. To read them, for the
    two-step pipeline ``linlap fit`` saves: ``k = model[0].word_vectors_.shape[1]``,
    ``model[-1].coef_[:, -k:]`` (named ``model[0].get_feature_names_out()[-k:]``,
    ``embedding_0`` ...). A bare classifier cannot tell which of its columns were
    embedding dimensions: all are ranked.
    """
    fw = _Weights(model, feature_names)
    coef, names, columns = fw.coef, fw.names, fw.columns
    if top is not None and not (is_int(top) and top >= 1):
        raise ValueError(f"top must be a positive integer or None, got {top!r}.")
    n_terms = coef.shape[1]
    k = n_terms if top is None or 2 * top >= n_terms else 2 * top  # rows per class
    terms = np.empty((coef.shape[0], k), dtype=np.intp)  # the column of each row, by class
    for i, w in enumerate(coef):
        terms[i] = _order(w) if k == n_terms else _extremes(w, top)
    labels = [c.item() if hasattr(c, "item") else c for c in fw.row_classes]
    if names is not None:  # str() of each name once, shared by the rows that name it
        text = np.empty(len(names), dtype=object)
        text[:] = [t if type(t) is str else str(t) for t in names]
    try:
        import pandas as pd
    except ImportError:  # the documented fallback: one dict per row, a class at a time
        rows = []
        for w, label, cols in zip(coef, labels, terms):
            term = (columns[cols] if names is None else text[cols]).tolist()
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
    term = columns[terms].astype(np.int64) if names is None else text[terms].tolist()
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
