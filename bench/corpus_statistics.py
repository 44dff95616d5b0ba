"""Statistics of a document-term matrix that say how "text-like" and how learnable it is:
what calibrates :func:`linlap.datasets.make_text_corpus` against real corpora
(``bench/corpus_stats.py`` prints them; the tests check them on known corpora)."""

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import normalize
from sklearn.svm import LinearSVC

from linlap.datasets import mask_labels
from linlap.datasets.synthetic import check_int
from linlap.graph.search import exact_knn


def corpus_statistics(X, y, *, X_test=None, y_test=None, n_neighbors=10, sample=2000,
                      n_labeled=1000, random_state=0, n_jobs=1):
    """Statistics of a document-term matrix that say how "text-like" and how learnable it is.

    Used to calibrate :func:`make_text_corpus` against real corpora (see
    ``bench/corpus_stats.py``); works on any CSR corpus with labels.

    Parameters
    ----------
    X : sparse matrix of shape (n, d)
        Documents (TF-IDF or counts; only the cosine geometry and the
        nonzero pattern are used, plus the values for the classifier).
    y : array-like of shape (n,)
        Integer labels; ``-1`` marks unlabeled rows (counted in the shape
        and sparsity statistics, left out of the label statistics).
    X_test, y_test : sparse matrix and array-like, optional
        A held-out test set for the supervised baseline. Without it the
        baseline is tested on (at most 20,000 of) the labeled rows not used
        for training.
    n_neighbors : int, default=10
        k of the kNN label-homophily.
    sample : int, default=2000
        Number of labeled rows whose neighbours are searched.
    n_labeled : int, default=1000
        Training labels of the supervised baseline (capped at half the
        labeled rows when no test set is given).
    random_state : int, default=0
        Seed of the row samples and of the labeled draw.
    n_jobs : int, default=1
        Threads of the exact neighbour search.

    Returns
    -------
    stats : dict
        ``n``, ``d``: shape. ``nnz_mean``, ``nnz_median``, ``nnz_p10``,
        ``nnz_p90``: nonzeros per row. ``vocab_used``: fraction of the
        columns with a nonzero. ``max_df``: document frequency of the most
        frequent term, as a fraction of n. ``top100_share``: share of all
        nonzeros held by the 100 most frequent terms. ``zipf_slope``:
        least-squares slope of log(df) against log(rank) over the ranks 10 to
        the last term with df >= 10 (at most rank 10,000; NaN if fewer than
        20 such ranks). ``homophily``: among the exact `n_neighbors` cosine
        nearest neighbours of `sample` labeled rows, searched among all
        labeled nonempty rows (blocked sparse dot products,
        ``linlap.graph.search.exact_knn``), the fraction sharing the row's label.
        ``homophily_shuffled``: the same with the labels randomly permuted
        (the chance level, about Σ_c π_c²). ``svm_error``: test error of
        ``LinearSVC()`` (C = 1, rows L2-normalised) trained on ``svm_n_labeled`` labeled rows
        drawn with :func:`mask_labels` (one per class first).
        ``svm_n_test``: its number of test rows.
    """
    if not sp.issparse(X) or X.ndim != 2:
        raise ValueError("X must be a 2-D scipy sparse matrix")
    X = sp.csr_matrix(X)
    y = np.asarray(y)
    n, d = X.shape
    if y.shape != (n,):
        raise ValueError(f"y must have shape ({n},), got {y.shape}")
    k = check_int("n_neighbors", n_neighbors, 1)
    sample = check_int("sample", sample, 1)
    n_labeled = check_int("n_labeled", n_labeled, 2)
    rng = np.random.default_rng(random_state)

    nnz = np.diff(X.indptr)
    df = np.bincount(X.indices, minlength=d)
    # duplicate (i, j) entries are counted once per row in df only if summed first
    if not X.has_canonical_format:
        Xc = X.copy()
        Xc.sum_duplicates()
        Xc.eliminate_zeros()
        nnz, df = np.diff(Xc.indptr), np.bincount(Xc.indices, minlength=d)
    dfs = np.sort(df)[::-1]
    stats = dict(
        n=n, d=d,
        nnz_mean=float(nnz.mean()), nnz_median=float(np.median(nnz)),
        nnz_p10=float(np.percentile(nnz, 10)), nnz_p90=float(np.percentile(nnz, 90)),
        vocab_used=float(np.mean(df > 0)),
        max_df=float(dfs[0] / n),
        top100_share=float(dfs[:100].sum() / max(dfs.sum(), 1)),
    )
    last = min(int(np.sum(dfs >= 10)), 10_000)
    if last - 10 >= 20:
        r = np.arange(10, last + 1)
        stats["zipf_slope"] = float(np.polyfit(np.log(r), np.log(dfs[r - 1]), 1)[0])
    else:
        stats["zipf_slope"] = float("nan")

    lab = np.flatnonzero((y != -1) & (nnz > 0))
    if lab.size <= k:
        raise ValueError(f"need more than n_neighbors={k} labeled nonempty rows, got {lab.size}")
    Xl = normalize(X[lab])
    yl = y[lab]
    rows = np.sort(rng.choice(lab.size, size=min(sample, lab.size), replace=False))
    ind, _ = exact_knn(Xl, k, rows, n_jobs=n_jobs)
    stats["homophily"] = float(np.mean(yl[ind] == yl[rows][:, None]))
    ys = rng.permutation(yl)
    stats["homophily_shuffled"] = float(np.mean(ys[ind] == ys[rows][:, None]))

    if X_test is None:
        n_train = min(n_labeled, lab.size // 2)
        ym = mask_labels(yl, n_train, random_state=int(rng.integers(2**31 - 1)))
        train = ym != -1
        rest = np.flatnonzero(~train)
        test = np.sort(rng.choice(rest, size=min(20_000, rest.size), replace=False))
        Xtr, ytr, Xte, yte = Xl[train], yl[train], Xl[test], yl[test]
    else:
        n_train = min(n_labeled, lab.size)
        ym = mask_labels(yl, n_train, random_state=int(rng.integers(2**31 - 1)))
        train = ym != -1
        Xtr, ytr = Xl[train], yl[train]
        Xte, yte = normalize(sp.csr_matrix(X_test)), np.asarray(y_test)
    clf = LinearSVC().fit(Xtr, ytr)
    stats["svm_error"] = float(np.mean(clf.predict(Xte) != yte))
    stats["svm_n_labeled"] = int(n_train)
    stats["svm_n_test"] = int(Xte.shape[0])
    return stats
