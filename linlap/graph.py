"""k-nearest-neighbour document graph and its graph-Laplacian operator.

A :class:`KNNGraph` is built once over all (labeled and unlabeled) rows and
then shared by many estimators: model selection over the regularisation
weights must not rebuild it, and it can be saved and loaded.

pynndescent (and with it numba) is imported lazily, only when the approximate
search actually runs, so ``import linlap.graph`` stays cheap.
"""

from __future__ import annotations

import json
import numbers
import os
import sys
import time
import warnings
import zipfile
from zlib import error as zlib_error
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.preprocessing import normalize
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._atomic import atomic_write
from ._memory import check_memory, graph_bytes
from ._progress import progress

__all__ = ["KNNGraph"]

_FORMAT_TAG = "linlap.KNNGraph"
_FORMAT_VERSION = 1

# Bytes allowed for the dense similarity block of the exact search (all
# worker threads together).  Bounds memory independently of n.
_EXACT_MEMORY_BUDGET = 256 * 2**20
_MAX_BLOCK_ROWS = 4096
# Squared distances below this are rounding noise of 2 - 2 cos: duplicates.
_DUP_D2 = 1e-12

# Parameters passed to pynndescent.NNDescent unless overridden through
# ``nndescent_kwds``.  Empty on purpose: bench/graph_recall.py found no
# setting beating pynndescent's own defaults (see the KNNGraph docstring);
# what matters is asking for max(k + 10, 30) neighbours.
_NNDESCENT_DEFAULTS = {}

_WEIGHTS = ("binary", "heat", "cosine")
_SYMMETRIZE = ("union", "mutual")
_SPACES = ("auto", "tfidf", "svd")
_ALGORITHMS = ("auto", "exact", "nndescent")
# Set by KNNGraph itself; letting nndescent_kwds override them would silently
# change the search.
_RESERVED_NNDESCENT_KEYS = ("data", "metric", "n_neighbors", "random_state",
                            "n_jobs", "verbose", "compressed")

# reorder='auto' renumbers the nodes for the Laplacian passes from this many rows
# on (below it the n × c blocks the passes gather from stay in cache anyway).
_REORDER_MIN_SAMPLES = 100_000
# "no row permutation" for the Laplacian pass kernels
_NO_ROWS = np.empty(0, dtype=np.int64)
# the diagonal scalings the Laplacian passes read (see laplacian_matvec)
_PASS_VECTORS = ("_inv_sqrt_degree", "_nonisolated", "_sqrt_degree", "_inv_degree", "_unit",
                 "degree_")


def _is_int(x):
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))


def _log(msg):
    # progress goes to stderr, like the solvers': stdout is for a program's output
    print(f"[KNNGraph] {msg}", file=sys.stderr, flush=True)


def _effective_n_jobs(n_jobs):
    # scikit-learn semantics: None -> 1 (or the active joblib backend), -1 -> all cores.
    from joblib import effective_n_jobs

    return max(1, int(effective_n_jobs(n_jobs)))


# --------------------------------------------------------------------------
# Input validation
# --------------------------------------------------------------------------

def _prepare_input(X):
    """Validate X and return an L2-row-normalised float64 copy.

    The copy is CSR (sparse input) or a C-contiguous ndarray (dense input);
    the caller's X is never modified.
    """
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got a sparse array with shape {X.shape}.")
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X must hold real numbers, got dtype {X.dtype}.")
        Xc = sp.csr_matrix(X, dtype=np.float64, copy=True)
        Xc.sum_duplicates()  # canonical format: sorted, no repeated (i, j)
        bad = ~np.isfinite(Xc.data)
        nonfinite_count = (np.isnan(Xc.data).sum(), np.isinf(Xc.data).sum())
        Xc.eliminate_zeros()
        empty = np.flatnonzero(np.diff(Xc.indptr) == 0)
    else:
        try:
            Xc = np.array(X, dtype=np.float64, order="C", copy=True)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"X could not be converted to a float array: {exc}") from exc
        if Xc.ndim != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {Xc.shape}.")
        bad = ~np.isfinite(Xc)
        nonfinite_count = (np.isnan(Xc).sum(), np.isinf(Xc).sum())
        empty = np.flatnonzero(~np.any(Xc != 0, axis=1)) if Xc.size else np.arange(Xc.shape[0])
    n, d = Xc.shape
    if n < 2:
        raise ValueError(f"KNNGraph needs at least 2 samples, got n_samples={n}.")
    if d < 1:
        raise ValueError("X has no features (n_features=0).")
    if bad.any():
        n_nan, n_inf = int(nonfinite_count[0]), int(nonfinite_count[1])
        raise ValueError(
            f"X contains non-finite values: {n_nan} NaN and {n_inf} inf entries. "
            "Remove or impute them before building the graph.")
    if empty.size:
        first = ", ".join(str(i) for i in empty[:10])
        more = ", ..." if empty.size > 10 else ""
        raise ValueError(
            f"X has {empty.size} empty row(s) (no nonzero entries), e.g. rows [{first}{more}]. "
            "Empty documents carry no information for the graph (their cosine similarity "
            "to every other document is undefined) and must be removed before building it.")
    # Cosine geometry needs unit rows; normalize works on our private copy.
    Xc = normalize(Xc, norm="l2", copy=False)
    if sp.issparse(Xc):
        Xc.sort_indices()
    return Xc


def _svd_embedding(Xn, n_components, svd_sample, rng, verbose):
    """Row-normalised TruncatedSVD embedding (float64) of the unit rows Xn.

    The SVD is fitted on at most ``svd_sample`` random rows (the leading
    directions of a large corpus are estimated as well from a sample, at a
    fraction of the cost) and applied to all rows in chunks, so the extra
    memory is the n × n_components embedding.
    """
    from sklearn.decomposition import TruncatedSVD

    n = Xn.shape[0]
    fit_rows = np.arange(n) if n <= svd_sample else np.sort(
        rng.choice(n, size=svd_sample, replace=False))
    if verbose:
        _log(f"TruncatedSVD to {n_components} dimensions, fitted on {fit_rows.size} of "
             f"{n} rows")
    svd = TruncatedSVD(n_components=n_components, algorithm="randomized",
                       random_state=rng.randint(np.iinfo(np.int32).max))
    svd.fit(Xn[fit_rows] if fit_rows.size < n else Xn)
    E = np.empty((n, n_components), dtype=np.float64)
    chunk = 100_000
    for start in range(0, n, chunk):
        E[start:start + chunk] = svd.transform(Xn[start:start + chunk])
        if verbose and n > chunk:
            _log(f"  projected {min(start + chunk, n)}/{n} rows")
    norms = np.linalg.norm(E, axis=1)
    zero = norms == 0
    if zero.any():
        # Rows orthogonal to every component would stay 0; give them a common
        # arbitrary direction so cosine stays defined (no NaN).
        warnings.warn(f"{int(zero.sum())} rows have a zero SVD embedding; "
                      "increase n_components.", RuntimeWarning)
        E[zero] = 1.0
        norms[zero] = np.sqrt(n_components)
    E /= norms[:, None]
    return E


# --------------------------------------------------------------------------
# Exact search
# --------------------------------------------------------------------------

def _cos_to_dist(cos):
    """d = sqrt(max(0, 2 - 2 cos)) for unit vectors, with duplicates snapped to 0.

    The rounding error of cos is ~1e-16 but the square root amplifies it to
    ~1e-8; d^2 below _DUP_D2 is taken as an exact duplicate (d = 0) so that
    the data-driven heat width and duplicate detection are not fooled.
    """
    d2 = 2.0 - 2.0 * np.asarray(cos, dtype=np.float64)
    d2[d2 < _DUP_D2] = 0.0
    return np.sqrt(d2)


def _exact_knn(X, k, rows=None, *, XT=None, n_jobs=1, verbose=False):
    """Exact k nearest neighbours of ``X[rows]`` among all rows of X.

    X has unit rows (CSR or dense).  Each query row excludes itself *by
    index* (with duplicate documents, self is not necessarily the top hit).
    Returns ``(indices, distances)`` of shape (len(rows), k), sorted by
    increasing distance d = sqrt(max(0, 2 - 2 cos)), ties by index.
    Memory is bounded by ``_EXACT_MEMORY_BUDGET`` (the dense block of
    similarities), whatever n is.
    """
    n = X.shape[0]
    rows = np.arange(n) if rows is None else np.asarray(rows, dtype=np.int64)
    m = rows.shape[0]
    ind = np.empty((m, k), dtype=np.int64)
    dist = np.empty((m, k), dtype=np.float64)
    if m == 0:
        return ind, dist
    sparse = sp.issparse(X)
    if XT is None:
        XT = X.T.tocsr() if sparse else X.T
    n_workers = max(1, min(n_jobs, m))
    # ~3 dense n-vectors per block row (similarities, argpartition indices, slack).
    block = int(_EXACT_MEMORY_BUDGET // (n_workers * 24 * n))
    block = max(1, min(_MAX_BLOCK_ROWS, block, m))
    starts = list(range(0, m, block))

    def work(start):
        r = rows[start:start + block]
        b = r.shape[0]
        if sparse:
            S = (X[r] @ XT).toarray()
        else:
            S = X[r] @ XT
        S[np.arange(b), r] = -np.inf  # never our own neighbour
        top = np.argpartition(S, n - k, axis=1)[:, n - k:]
        sims = np.take_along_axis(S, top, axis=1)
        order = np.lexsort((top, -sims), axis=-1)
        top = np.take_along_axis(top, order, axis=1)
        sims = np.take_along_axis(sims, order, axis=1)
        ind[start:start + b] = top
        dist[start:start + b] = _cos_to_dist(sims)
        return b

    bar = progress(verbose, total=m, desc="KNNGraph exact search", unit="rows")
    if n_workers == 1 or len(starts) == 1:
        results = map(work, starts)
        pool = None
    else:
        pool = ThreadPoolExecutor(n_workers)  # scipy/BLAS release the GIL in the products
        results = pool.map(work, starts)
    try:
        for b in results:
            bar.update(b)
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown()
    return ind, dist


def _pair_distances(X, i, j):
    """Distances sqrt(max(0, 2 - 2 cos)) for the row pairs (i[t], j[t]) of unit-row X."""
    out = np.empty(i.shape[0], dtype=np.float64)
    if sp.issparse(X):
        avg_nnz = max(1.0, X.nnz / X.shape[0])
        chunk = max(1, int(4_000_000 // avg_nnz))  # bound the nnz of each gathered block
    else:
        chunk = max(1, int(4_000_000 // max(1, X.shape[1])))
    for s in range(0, i.shape[0], chunk):
        a, b = i[s:s + chunk], j[s:s + chunk]
        if sp.issparse(X):
            cos = np.asarray(X[a].multiply(X[b]).sum(axis=1)).ravel()
        else:
            cos = np.einsum("ij,ij->i", X[a], X[b])
        out[s:s + chunk] = _cos_to_dist(cos)
    return out


# --------------------------------------------------------------------------
# Approximate search
# --------------------------------------------------------------------------

def _nndescent_search(X, n_neighbors, *, metric, random_state, n_jobs, verbose, kwds):
    """Run pynndescent and return its ``neighbor_graph`` (indices, distances).

    Isolated in a function so that tests can substitute it.
    """
    import pynndescent  # lazy: pulls in numba, slow to import and to JIT

    params = dict(_NNDESCENT_DEFAULTS)
    params.update(kwds or {})
    with warnings.catch_warnings():
        # Rows it fails on come back with -1; KNNGraph repairs those exactly.
        warnings.filterwarnings("ignore", message="Failed to correctly find n_neighbors")
        index = pynndescent.NNDescent(
            X, metric=metric, n_neighbors=n_neighbors, random_state=random_state,
            n_jobs=n_jobs, verbose=verbose, **params)
        indices, distances = index.neighbor_graph
    return np.asarray(indices), np.asarray(distances)


def _select_candidates(cand, cand_dist, k):
    """The first k candidates of every row other than the row itself.

    pynndescent lists a row's neighbours nearest first, itself included
    (dropped here by index).  A row is *bad* when its first k other
    candidates contain a -1 (pynndescent found too few), an out-of-range
    index, a non-finite distance or a repeat, or when there are fewer than
    k of them.  Returns ``(kept, bad)``: kept is (n, k) with the bad rows
    left at -1, to be redone by exact search.
    """
    n, m = cand.shape
    cand = np.asarray(cand, dtype=np.int64)
    other = cand != np.arange(n)[:, None]
    keep = other & (np.cumsum(other, axis=1) <= k)
    ok = keep.sum(axis=1) == k
    usable = (cand >= 0) & (cand < n)
    if cand_dist is not None:
        usable &= np.isfinite(cand_dist)
    ok &= ~np.any(keep & ~usable, axis=1)
    kept = np.full((n, k), -1, dtype=np.int64)
    kept[ok] = cand[keep & ok[:, None]].reshape(-1, k)
    if k > 1:
        srt = np.sort(kept[ok], axis=1)
        ok[np.flatnonzero(ok)] = ~np.any(srt[:, 1:] == srt[:, :-1], axis=1)
        kept[~ok] = -1
    return kept, np.flatnonzero(~ok)


# --------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------

class KNNGraph(BaseEstimator):
    r"""k-nearest-neighbour graph over documents and its Laplacian operator.

    Built once over all rows (labeled and unlabeled) and passed to many
    estimators; model selection over the regularisation weights reuses it.
    ``sklearn.base.clone`` of a *fitted* graph returns the graph itself
    (it is immutable and meant to be shared); use :meth:`with_laplacian` to
    get the same graph with another Laplacian without rebuilding it.

    **Geometry.**  Rows are L2-normalised internally (on a copy) and compared
    by cosine.  The distance convention used everywhere (``distances_``, the
    heat kernel, the data-driven σ) is the Euclidean distance between unit
    vectors,

    .. math:: d(x_i, x_j) = \sqrt{\max(0,\ 2 - 2\cos(x_i, x_j))} \in [0, 2],

    computed in float64; d² below 1e-12 (the rounding level of 2 − 2 cos) is
    reported as exactly 0, so duplicate documents have distance 0.

    With ``space='svd'`` the rows are first projected by a
    ``TruncatedSVD(n_components)`` and re-normalised; neighbours, distances
    and weights are then all computed in that space.

    **Weights** on a kNN edge (i, j), j among the k nearest of i:

    * ``'binary'``: :math:`w_{ij} = 1`;
    * ``'heat'``: :math:`w_{ij} = \exp(-d_{ij}^2 / (2\sigma^2))`, σ =
      ``heat_sigma`` or, if None, the mean of all n·k kNN distances
      (1.0 if that mean is 0, i.e. every neighbour is a duplicate);
    * ``'cosine'``: :math:`w_{ij} = \max(0, \cos(x_i, x_j)) = \max(0, 1 - d_{ij}^2/2)`
      (an orthogonal neighbour gives no edge).

    Duplicate rows (d = 0) get weight 1 under every scheme.  The directed
    kNN matrix A is symmetrised as W = max(A, Aᵀ) (``'union'``) or
    W = min(A, Aᵀ) (``'mutual'``, which may leave nodes isolated).

    **Laplacian.**  Degree :math:`D = \mathrm{diag}(W\mathbf 1)`.

    * unnormalised (``normalized=False``): :math:`L = D - W`;
    * normalised (``normalized=True``):
      :math:`L = D^{-1/2}(D - W)D^{-1/2} = I - D^{-1/2} W D^{-1/2}`, with
      :math:`D^{-1/2}` of a zero degree taken as 0.  An isolated node
      therefore has an all-zero row and column (:math:`L_{ii} = 0`), exactly
      as in D − W: the graph says nothing about it.

    ``power=p`` means :math:`L^p`, applied by :meth:`laplacian_matvec` as p
    sparse products and never formed.

    **Node order.**  Each power of L is one pass over W that gathers, for
    every row, the rows of the current n × c block at its neighbours; when the
    neighbours of a node are scattered over all n positions (a kNN graph in
    document order), those gathers are cache misses and dominate the pass.
    With ``reorder`` (by default for n_samples >= 100,000) fit computes a node
    order ``node_order_`` once — reverse Cuthill–McKee, then clusters by label
    propagation sorted in that order — and keeps the renumbered copy
    P W Pᵀ (same nnz) for the passes: :meth:`laplacian_matvec` permutes its
    input once (fused with the first diagonal scaling), runs the p passes on
    the renumbered graph and writes the last pass's rows straight back to the
    original order.  Results, ``adjacency_``, :meth:`laplacian_matrix` and
    every other attribute stay in the original row order.  Cost: fit spends
    O(nnz(W)) more time (5.5 s at n = 10⁶ and 17 s at 2·10⁶, k = 10, on 2
    quiet cores: 3–6 % of the graph build) and the graph holds a second copy of
    W (12 bytes per stored entry plus the n-vectors; the renumbering briefly
    needs one more).  On the 10-NN graph of 10⁶ synthetic documents
    (``bench/operators.py --corpus``) the renumbering puts 80 % of the edges
    within 10⁴ positions instead of 2 %.  With 20 right-hand sides (a 160 MB
    block) it cut the time of the 5 Laplacian passes of a CG iteration by
    2.3–2.9×; with one (an 8 MB vector, which fits the 32 MB L3 of the test
    machine) by 0.8–2.5× — it helps when other processes evict that cache
    (runs on a loaded machine; see bench/RESULTS.md).

    **Scale of the graph term.**  linlap's objective multiplies the graph
    term by :math:`s = 1/\mathrm{trace}(L)` so that a good γ_I does not drift
    with n or k.  ``trace_`` is trace(L) — the number of non-isolated nodes
    for the normalised Laplacian, the sum of the degrees (= sum of W) for
    D − W — and ``scale_ = 1 / trace_`` (0.0 if the graph has no edge).
    The trace is that of L, also when ``power > 1``.

    **Defaults** (k = 50, cosine weights, union, normalised Laplacian, p = 5)
    were chosen by test error on real text: on the bundled PCMAC corpus (10
    draws of 50 labels, LapRLS, ``bench/pcmac.py --grid``) the error fell from
    31.6% with k = 10, p = 1 to 18.5% with these settings; larger k and p help
    further (16.2% at k = 200, p = 12; see bench/RESULTS.md).

    **Search.**  ``algorithm='exact'`` uses blocked sparse (or dense) dot
    products with memory bounded by the block size.  ``'nndescent'`` uses
    pynndescent's k-NN graph (``metric='cosine'``), asks it for
    ``n_search_neighbors`` neighbours and keeps the best k; rows for which
    pynndescent returns ``-1`` (it can, on sparse cosine data, when all
    candidates are orthogonal) or too few neighbours are repaired by exact
    search (``n_repaired_``).  Distances of the kept neighbours are
    recomputed exactly in float64, so both paths report identical distances
    for the same edge.  ``recall_`` is then measured on ``recall_sample``
    random rows against the exact neighbours in the same space.

    **Measured recall and time** (pynndescent 0.7.0; recall@k over *all*
    rows against exact search, tie-aware; the 2 cores were shared with other
    jobs, so compare CPU seconds; ``PYTHONPATH=. python bench/graph_recall.py
    -k K --n-jobs 1 --no-svd [--n-search ...] [--corpus imdb]``):

    * k = 50 (the default), 20 Newsgroups (18,846 docs, 75,565 terms, 108
      nnz/doc): asking pynndescent for 60 neighbours (the default
      ``max(k + 10, 30)``) gives recall 0.991 in 221 CPU-s, 75 gives 0.994 in
      243 CPU-s — while exact search takes 28 CPU-s.  Hence
      ``exact_max_samples=50000``: exact search costs n² but is ~8× cheaper
      at 19k rows, so by extrapolation it stays cheaper up to ~50k rows (an
      estimate, not yet measured at 50k).
    * k = 10, 20 Newsgroups (TF-IDF without stop-word removal): asking for
      11 neighbours gives recall 0.834,
      20 gives 0.944, 30 gives 0.975 (102 CPU-s; exact 42 CPU-s), 45 gives
      0.985 at about twice the time of 30.  IMDB train (25,000 reviews, 137
      nnz/doc), 30 neighbours: recall 0.857 (150 CPU-s; exact 106 CPU-s).
    * Lowering ``max_candidates`` (15, 20), ``n_trees=4`` or ``delta=0.01``
      saved no time worth their recall loss, so pynndescent's defaults are
      kept.  The sampled ``recall_`` agreed with the all-rows recall within
      0.005.
    * ``space='svd'`` (100 dims), k = 10, 20 Newsgroups: recall 0.999 in 12 s
      plus 18 s for the SVD, but measured against exact neighbours *in the
      SVD space*, which share only 35% of the TF-IDF neighbours — and on
      PCMAC SVD-space graphs gave LapRLS no better test error.

    The first pynndescent call of a process pays a numba JIT compilation of
    20-100 s.

    **Large n** (above ``exact_max_samples``, ``space='auto'``): exact search
    costs n² row pairs and pynndescent on sparse TF-IDF finds few true
    neighbours, so the rows are first embedded by a 50-dimensional
    TruncatedSVD (fitted on ``svd_sample`` rows) and pynndescent searches that
    dense space, asking for k + 10 candidates.  On the synthetic corpus of
    :func:`linlap.datasets.make_text_corpus` at n = 100,000, k = 10
    (``bench/graph_scale.py``, 2 loaded cores): SVD + pynndescent 132 s,
    recall@10 0.987 in its space; pynndescent on TF-IDF 1,235 s, recall 0.646;
    exact TF-IDF ≈ 1,340 s (extrapolated).  On 20 Newsgroups (5 labels per
    class, 3 draws, exact search in each space) LapRLS made 40.8 % error with
    the 50-dimensional SVD graph against 44.3 % with the TF-IDF graph (43.9 %
    at 100 dimensions); on the synthetic corpus the TF-IDF graph was the
    better one (see bench/RESULTS.md) — the SVD space is chosen for what can
    be built at scale, not because it is always the better graph.

    Parameters
    ----------
    n_neighbors : int, default=50
        k, the number of neighbours per row (1 <= k < n_samples).
    weight : {'binary', 'heat', 'cosine'}, default='cosine'
        Edge weights, see above.
    heat_sigma : float or None, default=None
        Width σ > 0 of the heat kernel; None chooses the mean kNN distance.
    symmetrize : {'union', 'mutual'}, default='union'
        W = max(A, Aᵀ) or W = min(A, Aᵀ).
    normalized : bool, default=True
        Normalised Laplacian I − D^{-1/2} W D^{-1/2} (True) or D − W (False).
        The estimators scale the graph term by s = 1/trace(L); the eigenvalues of
        D − W reach about twice the largest degree, so with ``normalized=False`` and
        p > 1 the term s fᵀL^p f is orders of magnitude larger than with the
        normalised Laplacian at the same γ_I (γ_I must shrink accordingly, or every
        prediction collapses to one class).
    power : int, default=5
        The operator applies L^p (p >= 1) by p sparse matrix products.
    space : {'auto', 'tfidf', 'svd'}, default='auto'
        Search neighbours on the (row-normalised) input itself, or on its
        row-normalised TruncatedSVD embedding. 'auto': the input itself when
        n_samples <= ``exact_max_samples``, else the SVD embedding (see
        "Large n" above).
    n_components : int, default=50
        Dimension of the SVD embedding (``space='svd'`` only).
    svd_sample : int, default=100000
        The SVD is fitted on at most this many random rows, then applied to
        all rows (``space='svd'`` only).
    algorithm : {'auto', 'exact', 'nndescent'}, default='auto'
        'auto' is exact when n_samples <= ``exact_max_samples``, else nndescent.
    exact_max_samples : int, default=50000
        Threshold of ``algorithm='auto'``.
    n_search_neighbors : int or None, default=None
        Number of neighbours pynndescent is asked for (it lists the row
        itself among them); the best k others are kept.  Must exceed k.
        None means ``max(n_neighbors + 10, 30)`` on sparse input and
        ``n_neighbors + 10`` on dense input or the SVD embedding.
    nndescent_kwds : dict or None, default=None
        Extra keyword arguments for ``pynndescent.NNDescent`` (e.g.
        ``n_trees``, ``n_iters``, ``max_candidates``, ``delta``), overriding
        linlap's defaults.  ``metric``, ``n_neighbors``, ``random_state``,
        ``n_jobs`` and ``verbose`` are set by KNNGraph and may not be given.
        ``diversify_prob`` and ``pruning_degree_multiplier`` only shape
        pynndescent's *query* graph, which KNNGraph never builds; they have
        no effect here.
    recall_sample : int, default=200
        Rows on which the approximate search is checked against exact
        search (recall@k); 0 disables the check.
    reorder : {'auto', True, False}, default='auto'
        Renumber the nodes for memory locality of :meth:`laplacian_matvec`
        (computed once in fit from W; see "Node order" above).  'auto'
        renumbers when n_samples >= 100,000.  Only the internal layout
        changes: every result and attribute stays in the original row order.
        Costs a second copy of W in memory.
    random_state : int, RandomState instance or None, default=None
        Seeds the SVD, pynndescent and the recall sample.
    n_jobs : int or None, default=None
        Threads for the search (scikit-learn convention: None means 1
        unless inside a ``joblib.parallel_backend`` context, -1 all cores).
        Passed to pynndescent and used by the exact search.
    verbose : bool, default=False
        Print each step and its time (and progress of the exact search).

    Attributes
    ----------
    neighbors_ : ndarray of shape (n_samples, n_neighbors), int64
        Indices of the k nearest neighbours of every row, nearest first.
    distances_ : ndarray of shape (n_samples, n_neighbors), float64
        Their distances d = sqrt(max(0, 2 − 2 cos)).
    adjacency_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        The symmetric weight matrix W (float64, zero diagonal, no explicit
        zeros, sorted indices).
    degree_ : ndarray of shape (n_samples,)
        Row sums of W.
    n_isolated_ : int
        Number of nodes with degree 0.
    trace_ : float
        trace(L).
    scale_ : float
        s = 1 / trace(L), the normalisation of the graph term.
    heat_sigma_ : float or None
        σ actually used (``weight='heat'`` only).
    algorithm_ : str
        'exact' or 'nndescent', as resolved.
    space_ : str
        'tfidf' or 'svd', as resolved.
    recall_ : float or None
        recall@k of the approximate search on ``recall_sample`` rows
        (tie-aware: a returned neighbour counts as correct when its distance
        does not exceed the exact k-th distance); None for the exact search
        or when ``recall_sample=0``.
    n_repaired_ : int
        Rows of the approximate search re-done by exact search.
    node_order_ : ndarray of shape (n_samples,), int64, or None
        The node numbering of the Laplacian passes (position q holds row
        ``node_order_[q]``), or None when the nodes were not renumbered.
    build_time_ : dict
        Seconds spent per step: 'svd' (if used), 'search', 'recall'
        (if measured), 'weights', 'reorder' (if renumbered) and 'total'.
    n_samples_fit_ : int
    n_features_in_ : int

    Examples
    --------
    >>> g = KNNGraph(n_neighbors=10, weight="heat").fit(X_tfidf)   # doctest: +SKIP
    >>> Lz = g.laplacian_matvec(z)                                   # doctest: +SKIP
    >>> g2 = g.with_laplacian(power=2)         # same graph, L^2       # doctest: +SKIP
    """

    def __init__(self, n_neighbors=50, *, weight="cosine", heat_sigma=None,
                 symmetrize="union", normalized=True, power=5, space="auto",
                 n_components=50, svd_sample=100_000, algorithm="auto",
                 exact_max_samples=50000,
                 n_search_neighbors=None, nndescent_kwds=None, recall_sample=200,
                 reorder="auto", random_state=None, n_jobs=None, verbose=False):
        self.n_neighbors = n_neighbors
        self.weight = weight
        self.heat_sigma = heat_sigma
        self.symmetrize = symmetrize
        self.normalized = normalized
        self.power = power
        self.space = space
        self.n_components = n_components
        self.svd_sample = svd_sample
        self.algorithm = algorithm
        self.exact_max_samples = exact_max_samples
        self.n_search_neighbors = n_search_neighbors
        self.nndescent_kwds = nndescent_kwds
        self.recall_sample = recall_sample
        self.reorder = reorder
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    # ------------------------------------------------------------------
    # parameter checks
    # ------------------------------------------------------------------
    def _check_params(self):
        def choice(name, options):
            val = getattr(self, name)
            if not isinstance(val, str) or val not in options:
                raise ValueError(f"{name} must be one of {options}, got {val!r}.")

        if not _is_int(self.n_neighbors) or self.n_neighbors < 1:
            raise ValueError(f"n_neighbors must be an integer >= 1, got {self.n_neighbors!r}.")
        choice("weight", _WEIGHTS)
        if self.heat_sigma is not None:
            if (not isinstance(self.heat_sigma, numbers.Real) or isinstance(self.heat_sigma, bool)
                    or not np.isfinite(self.heat_sigma) or self.heat_sigma <= 0):
                raise ValueError(
                    f"heat_sigma must be a finite number > 0 or None, got {self.heat_sigma!r}.")
        choice("symmetrize", _SYMMETRIZE)
        if not isinstance(self.normalized, (bool, np.bool_)):
            raise ValueError(f"normalized must be True or False, got {self.normalized!r}.")
        _check_power(self.power)
        choice("space", _SPACES)
        if not _is_int(self.n_components) or self.n_components < 1:
            raise ValueError(f"n_components must be an integer >= 1, got {self.n_components!r}.")
        if not _is_int(self.svd_sample) or self.svd_sample < 1:
            raise ValueError(f"svd_sample must be an integer >= 1, got {self.svd_sample!r}.")
        choice("algorithm", _ALGORITHMS)
        if not _is_int(self.exact_max_samples) or self.exact_max_samples < 0:
            raise ValueError(
                f"exact_max_samples must be an integer >= 0, got {self.exact_max_samples!r}.")
        if self.n_search_neighbors is not None and (
                not _is_int(self.n_search_neighbors)
                or self.n_search_neighbors <= self.n_neighbors):
            raise ValueError(
                "n_search_neighbors must be None or an integer > n_neighbors "
                f"(pynndescent lists each row as its own first neighbour), got "
                f"{self.n_search_neighbors!r} with n_neighbors={self.n_neighbors}.")
        if self.nndescent_kwds is not None:
            if not isinstance(self.nndescent_kwds, dict):
                raise ValueError(
                    f"nndescent_kwds must be a dict or None, got {type(self.nndescent_kwds)}.")
            reserved = sorted(set(self.nndescent_kwds) & set(_RESERVED_NNDESCENT_KEYS))
            if reserved:
                raise ValueError(
                    f"nndescent_kwds may not set {reserved}: KNNGraph sets them itself.")
        if not _is_int(self.recall_sample) or self.recall_sample < 0:
            raise ValueError(f"recall_sample must be an integer >= 0, got {self.recall_sample!r}.")
        if not (isinstance(self.reorder, (bool, np.bool_))
                or (isinstance(self.reorder, str) and self.reorder == "auto")):
            raise ValueError(f"reorder must be 'auto', True or False, got {self.reorder!r}.")
        if self.n_jobs is not None and (not _is_int(self.n_jobs) or self.n_jobs == 0):
            raise ValueError(f"n_jobs must be None or a nonzero integer, got {self.n_jobs!r}.")

    # ------------------------------------------------------------------
    # fit
    # ------------------------------------------------------------------
    def fit(self, X, y=None):
        """Build the kNN graph of the rows of X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Documents as rows (typically TF-IDF).  Must be finite and have
            no empty row.  Not modified.
        y : ignored
            Present for Pipeline compatibility.

        Returns
        -------
        self : KNNGraph
        """
        t_total = time.perf_counter()
        self._check_params()
        verbose = bool(self.verbose)
        Xn = _prepare_input(X)
        n, d = Xn.shape
        k = self.n_neighbors
        if k >= n:
            raise ValueError(
                f"n_neighbors={k} must be smaller than n_samples={n} "
                "(every row needs k other rows as neighbours).")
        rng = check_random_state(self.random_state)
        n_jobs = _effective_n_jobs(self.n_jobs)
        times = {}

        algorithm = self.algorithm
        if algorithm == "auto":
            algorithm = "exact" if n <= self.exact_max_samples else "nndescent"
        space = self.space
        if space == "auto":
            space = "tfidf" if n <= self.exact_max_samples else "svd"

        nnz = Xn.nnz if sp.issparse(Xn) else n * d
        reorder = self.reorder is True or (self.reorder == "auto" and n >= _REORDER_MIN_SAMPLES)
        check_memory(
            graph_bytes(n, nnz, k, space=space, n_components=self.n_components,
                        n_search=self.n_search_neighbors, reorder=reorder),
            f"Building the {k}-NN graph of {n} rows ({nnz} nonzeros)",
            "Use a smaller n_neighbors, or fewer rows.")

        if space == "svd":
            if self.n_components > min(n, d):
                raise ValueError(
                    f"n_components={self.n_components} must be <= min(n_samples, n_features)"
                    f" = {min(n, d)} for space='svd'.")
            t0 = time.perf_counter()
            Xs = _svd_embedding(Xn, self.n_components, self.svd_sample, rng, verbose)
            times["svd"] = time.perf_counter() - t0
        else:
            Xs = Xn
        del Xn

        t0 = time.perf_counter()
        XT = None
        recall, n_repaired = None, 0
        if algorithm == "exact":
            if verbose:
                _log(f"exact {k}-NN search over {n} rows")
            XT = Xs.T.tocsr() if sp.issparse(Xs) else Xs.T
            neighbors, distances = _exact_knn(Xs, k, XT=XT, n_jobs=n_jobs, verbose=verbose)
        else:
            neighbors, distances, n_repaired, XT = self._approximate_search(
                Xs, k, rng, n_jobs, verbose)
        times["search"] = time.perf_counter() - t0
        if verbose:
            _log(f"search done in {times['search']:.1f} s"
                 + (f" ({n_repaired} rows repaired by exact search)" if n_repaired else ""))

        if algorithm == "nndescent" and self.recall_sample > 0:
            t0 = time.perf_counter()
            m = min(self.recall_sample, n)
            sample = np.sort(rng.choice(n, size=m, replace=False))
            if XT is None:
                XT = Xs.T.tocsr() if sp.issparse(Xs) else Xs.T
            _, exact_dist = _exact_knn(Xs, k, sample, XT=XT, n_jobs=n_jobs)
            # Tie-aware recall: a neighbour is right if it is no farther than
            # the true k-th one (duplicates make the exact set ambiguous).
            kth = exact_dist[:, -1:] + 1e-9
            recall = float(np.mean(distances[sample] <= kth))
            times["recall"] = time.perf_counter() - t0
            if verbose:
                _log(f"recall@{k} on {m} sampled rows: {recall:.3f} "
                     f"({times['recall']:.1f} s)")
        del XT

        t0 = time.perf_counter()
        W, sigma = _weights_matrix(neighbors, distances, self.weight, self.heat_sigma,
                                   self.symmetrize)
        times["weights"] = time.perf_counter() - t0

        order = None
        if reorder:
            t0 = time.perf_counter()
            order = _locality_order(W)
            times["reorder"] = time.perf_counter() - t0
            if verbose:
                _log(f"nodes renumbered for locality in {times['reorder']:.1f} s")

        self.neighbors_ = neighbors
        self.distances_ = distances
        self.adjacency_ = W
        self.degree_ = np.asarray(W.sum(axis=1)).ravel()
        self.heat_sigma_ = sigma
        self.algorithm_ = algorithm
        self.space_ = space
        self.recall_ = recall
        self.n_repaired_ = int(n_repaired)
        self.n_samples_fit_ = n
        self.n_features_in_ = d
        self.node_order_ = order
        t0 = time.perf_counter()
        self._set_laplacian()  # builds the renumbered copy of W when order is set
        if order is not None:
            times["reorder"] += time.perf_counter() - t0
        times["total"] = time.perf_counter() - t_total
        self.build_time_ = times
        if verbose:
            _log(f"graph: {W.nnz // 2} edges, {self.n_isolated_} isolated nodes, "
                 f"trace(L) = {self.trace_:g}; total {times['total']:.1f} s")
        return self

    def _approximate_search(self, Xs, k, rng, n_jobs, verbose):
        n = Xs.shape[0]
        dense = not sp.issparse(Xs)
        n_search = self.n_search_neighbors
        if n_search is None:
            # a low-dimensional dense embedding is much easier for NN-descent than
            # sparse TF-IDF: k + 10 candidates already give recall ~0.99 there
            n_search = k + 10 if dense else max(k + 10, 30)
        # pynndescent cannot return more than n - 1 others; rows that end up
        # short are repaired below.
        n_search = int(min(n_search, n - 1))
        n_search = max(n_search, 2)
        if verbose:
            _log(f"pynndescent search: {n_search} neighbours per row over {n} rows, "
                 f"keeping the best {k}")
        data = Xs if sp.issparse(Xs) else Xs.astype(np.float32)
        cand, cand_dist = _nndescent_search(
            data, n_search, metric="cosine",
            random_state=rng.randint(np.iinfo(np.int32).max), n_jobs=n_jobs,
            verbose=bool(verbose), kwds=self.nndescent_kwds)
        if cand.ndim != 2 or cand.shape[0] != n:
            raise RuntimeError(f"pynndescent returned a graph of shape {cand.shape} "
                               f"for {n} rows.")
        kept, bad = _select_candidates(cand, cand_dist, k)
        good = np.setdiff1d(np.arange(n), bad, assume_unique=True)
        distances = np.full((n, k), np.inf)
        if good.size:
            ii = np.repeat(good, k)
            dist_good = _pair_distances(Xs, ii, kept[good].ravel()).reshape(-1, k)
            # pynndescent orders by float32 distances; re-sort by exact ones.
            order = np.lexsort((kept[good], dist_good), axis=-1)
            kept[good] = np.take_along_axis(kept[good], order, axis=1)
            distances[good] = np.take_along_axis(dist_good, order, axis=1)
        XT = None
        if bad.size:
            if verbose:
                _log(f"repairing {bad.size} rows by exact search")
            XT = Xs.T.tocsr() if sp.issparse(Xs) else Xs.T
            kept[bad], distances[bad] = _exact_knn(Xs, k, bad, XT=XT, n_jobs=n_jobs)
        if np.any(kept < 0) or not np.all(np.isfinite(distances)):
            raise RuntimeError("internal error: invalid neighbours after repair")
        return kept, distances, int(bad.size), XT

    # ------------------------------------------------------------------
    # Laplacian
    # ------------------------------------------------------------------
    def _set_laplacian(self):
        deg = self.degree_
        nz = deg > 0
        self.n_isolated_ = int(np.count_nonzero(~nz))
        inv_sqrt = np.zeros_like(deg)
        inv_sqrt[nz] = 1.0 / np.sqrt(deg[nz])  # D^{-1/2} of a zero degree is 0
        self._inv_sqrt_degree = inv_sqrt
        self._nonisolated = nz.astype(np.float64)
        # diagonal scalings of the fused passes of laplacian_matvec (n-vectors)
        self._sqrt_degree = np.sqrt(deg)
        inv = np.zeros_like(deg)
        inv[nz] = 1.0 / deg[nz]
        self._inv_degree = inv
        self._unit = np.ones_like(deg)
        self._set_renumbered()
        if self.normalized:
            self.trace_ = float(np.count_nonzero(nz))
        else:
            self.trace_ = float(deg.sum())
        self.scale_ = 1.0 / self.trace_ if self.trace_ > 0 else 0.0

    def _set_renumbered(self):
        """Kernel data of the renumbered graph (``node_order_`` set), else None.

        ``self._renumbered`` holds the CSR arrays the passes read — P W Pᵀ, with
        row q the node ``order[q]`` — and the five diagonal scalings in the new
        order.  The CSR part depends only on W and the order, so it is reused
        when it was built for the same objects (``with_laplacian`` shares it).
        """
        order = getattr(self, "node_order_", None)
        if order is None:
            self._renumbered = None
            return
        W = self.adjacency_
        prev = getattr(self, "_renumbered", None)
        if prev is not None and prev["W"] is W and prev["order"] is order:
            csr = prev["csr"]
        else:
            csr = _renumber_csr(W, order)
        vec = {name: getattr(self, name)[order] for name in _PASS_VECTORS}
        self._renumbered = {"W": W, "order": order, "csr": csr, "vec": vec}

    def __getstate__(self):
        # the renumbered copy of W is rebuilt on first use, not pickled
        state = dict(super().__getstate__())  # object.__getstate__ returns __dict__ itself
        state.pop("_renumbered", None)
        return state

    def _apply_laplacian(self, Z):
        """One product L Z by plain scipy/numpy operations (reference implementation;
        also used for complex input). :meth:`laplacian_matvec` uses fused numba passes."""
        W = self.adjacency_
        if Z.ndim == 1:
            col = lambda v: v  # noqa: E731
        else:
            col = lambda v: v[:, None]  # noqa: E731
        if self.normalized:
            s = col(self._inv_sqrt_degree)
            return col(self._nonisolated) * Z - s * (W @ (s * Z))
        return col(self.degree_) * Z - W @ Z

    def laplacian_matvec(self, Z, out=None, work=None):
        r"""Apply L^p to Z by p fused sparse passes (L^p is never formed).

        Each power is one parallel numba pass over the CSR arrays of W with every
        diagonal scaling folded in.  For the normalised Laplacian the passes carry
        :math:`v_t = D^{-1/2} L^t z`: one light pass over the vectors forms
        :math:`v_0 = D^{-1/2} z`, the graph passes compute
        :math:`v_{t+1} = \mathbb 1_{\deg>0} v_t - D^{-1} W v_t` and the last one
        returns :math:`L^p z = D^{1/2} v_{p-1} - D^{-1/2} W v_{p-1}` — so no scaled
        copy of W is kept and no pass is spent on the scalings in between.  W, the
        degree vectors and the sums are float64.  On a renumbered graph
        (``node_order_`` set) the passes run on P W Pᵀ: the first gathers Z into
        the new order (fused with the first scaling) and the last writes its rows
        back to the original order, so the result is the same, in the original
        order.

        Parameters
        ----------
        Z : ndarray of shape (n_samples,) or (n_samples, m)
            float32 or float64 (read as is, never copied when C-contiguous); other
            real types are converted to float64.
        out : ndarray of the shape of Z, float64, C-contiguous, optional
            Where to write the result (must not overlap Z or ``work``).
        work : float64 ndarray, C-contiguous, with at least ``Z.size`` elements, optional
            Scratch (needed for ``power >= 2``, the normalised Laplacian or a
            renumbered graph, see ``reorder``; allocated when missing).  With
            ``out`` and ``work`` given, the call allocates nothing (an iterative
            solver calling it every iteration).

        Returns
        -------
        LZ : ndarray of the shape of Z, float64
            :math:`L^p Z` (``out`` if given), float64 for float32 as well as
            float64 input.
        """
        check_is_fitted(self, "adjacency_")
        if sp.issparse(Z):
            raise TypeError("laplacian_matvec expects a dense array, got a sparse matrix.")
        Z = np.asarray(Z)
        if Z.dtype.kind not in "fc":
            Z = Z.astype(np.float64)
        n = self.n_samples_fit_
        if Z.ndim not in (1, 2) or Z.shape[0] != n:
            raise ValueError(f"Z must have shape ({n},) or ({n}, m), got {Z.shape}.")
        p = int(self.power)
        if Z.dtype.kind == "c":  # complex: plain scipy products, no kernel for it
            res = Z
            for _ in range(p):
                res = self._apply_laplacian(res)
            if out is not None:
                out[...] = res
                return out
            return res
        if Z.dtype not in (np.float32, np.float64):
            Z = Z.astype(np.float64)
        Z2 = np.ascontiguousarray(Z.reshape(n, -1))
        c = Z2.shape[1]
        if out is None:
            out = np.empty(Z.shape)
        elif (not isinstance(out, np.ndarray) or out.dtype != np.float64
              or out.shape != Z.shape or not out.flags.c_contiguous):
            raise ValueError(f"out must be a C-contiguous float64 array of shape {Z.shape}.")
        elif np.may_share_memory(out, Z2):
            raise ValueError("out must not overlap Z.")
        out2 = out.reshape(n, c)
        ren = getattr(self, "_renumbered", False)
        order = getattr(self, "node_order_", None)
        if ren is False or (ren is None) != (order is None) or (ren is not None and (
                ren["W"] is not self.adjacency_ or ren["order"] is not order)):
            # unpickled (possibly from a version without the pass vectors), or
            # adjacency_ / node_order_ replaced since
            self._set_laplacian()
            ren = self._renumbered
        tmp = None
        if p >= 2 or self.normalized or ren is not None:
            if work is None:
                tmp = np.empty((n, c))
            else:
                if (not isinstance(work, np.ndarray) or work.dtype != np.float64
                        or not work.flags.c_contiguous or work.size < n * c):
                    raise ValueError(f"work must be a C-contiguous float64 array with at "
                                     f"least {n * c} elements.")
                tmp = work.reshape(-1)[: n * c].reshape(n, c)
                if np.may_share_memory(tmp, out2) or np.may_share_memory(tmp, Z2):
                    raise ValueError("work must not overlap Z or out.")
        from ._sparse_ops import laplacian_pass, scale_rows

        if ren is not None:  # passes on P W Pᵀ, vectors in the new order
            (indptr, indices, data), v, order = ren["csr"], ren["vec"], ren["order"]
        else:
            W = self.adjacency_
            indptr, indices, data = W.indptr, W.indices, W.data
            v = {name: getattr(self, name) for name in _PASS_VECTORS}
            order = None
        x = Z2
        if self.normalized or order is not None:
            # v_0 = D^{-1/2} z (gathered into the new order on a renumbered graph), in
            # the buffer the first graph pass does not write
            x = tmp if (p - 1) % 2 == 0 else out2
            scale_rows(v["_inv_sqrt_degree"] if self.normalized else v["_unit"], Z2,
                       _NO_ROWS if order is None else order, x, work=n * c)
        work = (data.shape[0] + n) * c
        for t in range(1, p + 1):
            dest = out2 if (p - t) % 2 == 0 else tmp
            if self.normalized:
                a, b = ((v["_sqrt_degree"], v["_inv_sqrt_degree"]) if t == p
                        else (v["_nonisolated"], v["_inv_degree"]))
            else:
                a, b = v["degree_"], v["_unit"]
            # the last pass of a renumbered graph writes its rows back to the original order
            last_rows = order if t == p and order is not None else _NO_ROWS
            laplacian_pass(indptr, indices, data, x, a, b, 1.0, dest, last_rows, work=work)
            x = dest
        return out

    def laplacian_matrix(self, power=None):
        """Return L (or L^power) as an explicit sparse CSR matrix.

        For tests and small problems only: L^p fills in quickly with p.
        Solvers should use :meth:`laplacian_matvec`.

        Parameters
        ----------
        power : int or None, default=None
            Power of L; None uses ``self.power``.
        """
        check_is_fitted(self, "adjacency_")
        p = self.power if power is None else power
        _check_power(p)
        W = self.adjacency_
        if self.normalized:
            S = sp.diags(self._inv_sqrt_degree)
            L = sp.diags(self._nonisolated) - S @ W @ S
        else:
            L = sp.diags(self.degree_) - W
        L = sp.csr_matrix(L)
        out = L
        for _ in range(int(p) - 1):
            out = out @ L
        out = sp.csr_matrix(out)
        out.eliminate_zeros()
        out.sort_indices()
        return out

    def with_laplacian(self, normalized=None, power=None):
        """Same graph, other Laplacian: a new fitted KNNGraph, no rebuild.

        The neighbour arrays, the adjacency matrix and the degrees are
        *shared* (not copied) with ``self``; only the normalisation and/or
        the power differ.  Use it for model selection over p.

        Parameters
        ----------
        normalized : bool or None
            None keeps ``self.normalized``.
        power : int or None
            None keeps ``self.power``.

        Returns
        -------
        graph : KNNGraph
        """
        check_is_fitted(self, "adjacency_")
        params = self.get_params(deep=False)
        if normalized is not None:
            params["normalized"] = normalized
        if power is not None:
            params["power"] = power
        new = type(self)(**params)
        if not isinstance(new.normalized, (bool, np.bool_)):
            raise ValueError(f"normalized must be True or False, got {new.normalized!r}.")
        _check_power(new.power)
        for name in ("neighbors_", "distances_", "adjacency_", "degree_", "heat_sigma_",
                     "algorithm_", "space_", "recall_", "n_repaired_", "n_samples_fit_",
                     "n_features_in_", "build_time_"):
            setattr(new, name, getattr(self, name))
        new.node_order_ = getattr(self, "node_order_", None)
        if getattr(self, "_renumbered", None) is not None:
            new._renumbered = self._renumbered  # its CSR part is reused, not copied
        new._set_laplacian()
        return new

    def subgraph(self, n_neighbors=None, *, weight=None, heat_sigma=None, symmetrize=None,
                 normalized=None, power=None):
        """The graph of the k' <= k nearest neighbours of each row, no new search.

        The neighbour lists are sorted by distance, so the k'-NN lists are their
        first k' columns; only the weights, W and the degrees are recomputed (one
        O(n k') pass).  The result equals ``KNNGraph(n_neighbors=k', ...).fit(X)``
        up to the order of neighbours at tied distances.  The weights, the
        symmetrisation and the Laplacian may change too.  A renumbered graph keeps
        its ``node_order_`` (the subgraph's edges are a subset of its own).

        Parameters
        ----------
        n_neighbors : int or None
            k' (<= ``n_neighbors``); None keeps k.
        weight, heat_sigma, symmetrize, normalized, power
            As in the constructor; None keeps this graph's (``heat_sigma=None``
            keeps the given σ, or recomputes the data-driven one on the k' lists).

        Returns
        -------
        graph : KNNGraph
        """
        check_is_fitted(self, "adjacency_")
        params = self.get_params(deep=False)
        for name, value in (("n_neighbors", n_neighbors), ("weight", weight),
                            ("heat_sigma", heat_sigma), ("symmetrize", symmetrize),
                            ("normalized", normalized), ("power", power)):
            if value is not None:
                params[name] = value
        new = type(self)(**params)
        new._check_params()
        k = new.n_neighbors
        if k > self.n_neighbors:
            raise ValueError(f"n_neighbors={k} exceeds the {self.n_neighbors} neighbours "
                             f"this graph was built with.")
        t0 = time.perf_counter()
        neighbors = self.neighbors_[:, :k]
        distances = self.distances_[:, :k]
        W, sigma = _weights_matrix(neighbors, distances, new.weight, new.heat_sigma,
                                   new.symmetrize)
        new.neighbors_, new.distances_, new.adjacency_ = neighbors, distances, W
        new.degree_ = np.asarray(W.sum(axis=1)).ravel()
        new.heat_sigma_ = sigma
        for name in ("algorithm_", "space_", "recall_", "n_repaired_", "n_samples_fit_",
                     "n_features_in_"):
            setattr(new, name, getattr(self, name))
        new.node_order_ = getattr(self, "node_order_", None)
        new._set_laplacian()
        new.build_time_ = dict(self.build_time_, weights=time.perf_counter() - t0)
        return new

    # ------------------------------------------------------------------
    # sharing, persistence
    # ------------------------------------------------------------------
    def __sklearn_clone__(self):
        # A fitted graph is immutable and shared by many estimators: cloning
        # an estimator that holds it must not throw the graph away.
        if hasattr(self, "adjacency_"):
            return self
        return super().__sklearn_clone__()

    def save(self, path):
        """Save the fitted graph to ``path`` (NumPy ``.npz``, no pickle).

        The file is written exactly at ``path`` (no suffix is added),
        atomically: to a temporary file in the same directory, then renamed.
        A ``random_state`` that is not an int or None is saved as None.
        """
        check_is_fitted(self, "adjacency_")
        params = self.get_params(deep=False)
        if not (params["random_state"] is None or _is_int(params["random_state"])):
            params["random_state"] = None
        params = {key: (int(v) if _is_int(v) else v) for key, v in params.items()}
        meta = {
            "heat_sigma_": self.heat_sigma_,
            "algorithm_": self.algorithm_,
            "space_": self.space_,
            "recall_": self.recall_,
            "n_repaired_": self.n_repaired_,
            "n_samples_fit_": int(self.n_samples_fit_),
            "n_features_in_": int(self.n_features_in_),
            "build_time_": self.build_time_,
            "reordered": getattr(self, "node_order_", None) is not None,
        }
        try:
            params_json = json.dumps(params)
            meta_json = json.dumps(meta)
        except TypeError as exc:
            raise ValueError(f"cannot save: a parameter is not JSON-serialisable ({exc}).") from exc
        W = self.adjacency_
        arrays = {
            "format": np.array(_FORMAT_TAG),
            "version": np.array(_FORMAT_VERSION, dtype=np.int64),
            "params": np.array(params_json),
            "meta": np.array(meta_json),
            "neighbors": self.neighbors_,
            "distances": self.distances_,
            "adj_data": W.data,
            "adj_indices": W.indices,
            "adj_indptr": W.indptr,
            "degree": self.degree_,
        }
        if meta["reordered"]:
            arrays["node_order"] = self.node_order_
        with atomic_write(path, prefix=".knngraph-") as fh:
            np.savez(fh, **arrays)

    @classmethod
    def load(cls, path):
        """Load a graph written by :meth:`save`.

        Raises
        ------
        ValueError
            If the file is not a linlap KNNGraph file, is of an unsupported
            version, or is corrupt/truncated/inconsistent.
        """
        path = os.fspath(path)
        bad = f"{path!r} is not a valid linlap KNNGraph file"
        try:
            npz = np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{bad}: {exc}") from exc
        if not isinstance(npz, np.lib.npyio.NpzFile):
            raise ValueError(f"{bad}: not an .npz archive")
        try:
            with npz:
                files = set(npz.files)
                if "format" not in files or str(npz["format"][()]) != _FORMAT_TAG:
                    raise ValueError(f"missing or foreign format tag (expected {_FORMAT_TAG!r})")
                version = int(npz["version"][()])
                if version != _FORMAT_VERSION:
                    raise ValueError(f"unsupported format version {version} "
                                     f"(this linlap reads version {_FORMAT_VERSION})")
                data = {key: npz[key] for key in (
                    "params", "meta", "neighbors", "distances", "adj_data", "adj_indices",
                    "adj_indptr", "degree")}
                if "node_order" in files:
                    data["node_order"] = npz["node_order"]
        except (ValueError, TypeError, KeyError, OSError, EOFError, zipfile.BadZipFile,
                zlib_error) as exc:
            raise ValueError(f"{bad}: {exc}") from exc
        try:
            params = json.loads(str(data["params"][()]))
            meta = json.loads(str(data["meta"][()]))
            graph = cls(**params)
            graph._check_params()
            _check_loaded_arrays(data, params, meta)
        except (ValueError, TypeError, KeyError, json.JSONDecodeError) as exc:
            raise ValueError(f"{bad}: {exc}") from exc
        n = int(meta["n_samples_fit_"])
        graph.neighbors_ = data["neighbors"].astype(np.int64, copy=False)
        graph.distances_ = data["distances"].astype(np.float64, copy=False)
        graph.adjacency_ = sp.csr_matrix(
            (data["adj_data"], data["adj_indices"], data["adj_indptr"]), shape=(n, n))
        graph.degree_ = data["degree"].astype(np.float64, copy=False)
        for key in ("heat_sigma_", "algorithm_", "recall_", "n_repaired_", "n_samples_fit_",
                    "n_features_in_", "build_time_"):
            setattr(graph, key, meta[key])
        graph.space_ = meta.get("space_", params.get("space"))  # files from 0.1.0 lack it
        if "reordered" in meta:
            graph.node_order_ = (data["node_order"].astype(np.int64, copy=False)
                                 if meta["reordered"] else None)
        else:  # a file written before nodes were renumbered: decide as fit would
            graph.node_order_ = (_locality_order(graph.adjacency_) if graph.reorder is True or (
                graph.reorder == "auto" and n >= _REORDER_MIN_SAMPLES) else None)
        graph._set_laplacian()
        return graph


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def _locality_order(W, max_sweeps=10):
    """Node order putting graph neighbours at nearby positions (int64 permutation).

    Two steps, both O(nnz(W)) per sweep:

    1. reverse Cuthill–McKee on the symmetric W — a breadth-first numbering,
       so a node's neighbours are within about one BFS level of it.  On a kNN
       graph of high-dimensional data the levels are wide (tens of thousands of
       nodes at n = 10⁶), so this alone leaves most neighbours far away;
    2. clusters by weighted label propagation (at most ``max_sweeps`` sweeps,
       visiting nodes in RCM order, labels started at the RCM positions, so
       its memory accesses stay local too), then the nodes sorted by cluster
       and by RCM position within a cluster.

    On the 10-NN graph of 10⁶ documents of ``make_text_corpus`` (bench/RESULTS.md)
    this puts 80 % of the edges within 10⁴ positions (RCM alone: 26 %).
    """
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    from ._sparse_ops import label_propagation

    n = W.shape[0]
    rcm = np.asarray(reverse_cuthill_mckee(W, symmetric_mode=True), dtype=np.int64)
    if W.nnz == 0 or max_sweeps < 1:
        return rcm
    # run on the RCM-renumbered graph, visiting rows in storage order: every
    # access is then near the current row (on W itself it is ~10x slower)
    indptr, indices, data = _renumber_csr(W, rcm)
    labels = np.arange(n, dtype=np.int64)
    acc = np.zeros(n)
    touched = np.empty(int(np.diff(indptr).max()), dtype=np.int64)
    label_propagation(indptr, indices, data, labels, acc, touched, max_sweeps, max(1, n // 1000))
    return rcm[np.argsort(labels, kind="stable")]


def _renumber_csr(W, order):
    """CSR arrays ``(indptr, indices, data)`` of P W Pᵀ: row q is node ``order[q]``,
    column indices are new positions, rows sorted.

    A full copy: reading W's own values through the order instead (no copy) made
    each Laplacian pass 7–10× slower (bench/RESULTS.md).
    """
    from ._sparse_ops import permute_csr

    n = W.shape[0]
    idx_dtype = np.int32 if n < 2**31 else np.int64
    inverse = np.empty(n, dtype=idx_dtype)
    inverse[order] = np.arange(n, dtype=idx_dtype)
    indptr = np.zeros(n + 1, dtype=np.int64 if W.nnz >= 2**31 else W.indptr.dtype)
    np.cumsum(np.diff(W.indptr)[order], out=indptr[1:])
    indices = np.empty(W.nnz, dtype=idx_dtype)
    data = np.empty(W.nnz, dtype=W.data.dtype)
    permute_csr(W.indptr, W.indices, W.data, order, inverse, indptr, indices, data,
                work=W.nnz)
    return indptr, indices, data


def _check_power(p):
    if not _is_int(p) or p < 1:
        raise ValueError(f"power must be an integer >= 1, got {p!r}.")


def _weights_matrix(neighbors, distances, weight, heat_sigma, symmetrize):
    """Symmetric weight matrix W (CSR float64) and the heat σ used (or None)."""
    n, k = neighbors.shape
    sigma = None
    if weight == "binary":
        w = np.ones(n * k)
    elif weight == "heat":
        if heat_sigma is None:
            sigma = float(np.mean(distances))
            if not sigma > 0:  # every neighbour a duplicate: any scale works
                sigma = 1.0
        else:
            sigma = float(heat_sigma)
        w = np.exp(-(distances.ravel() ** 2) / (2.0 * sigma * sigma))
    else:  # cosine similarity of unit vectors, clipped so that W >= 0
        w = np.maximum(0.0, 1.0 - 0.5 * distances.ravel() ** 2)
    rows = np.repeat(np.arange(n), k)
    # neighbours are distinct and never the row itself, so no (i, j) repeats
    A = sp.csr_matrix((w, (rows, neighbors.ravel())), shape=(n, n))
    AT = sp.csr_matrix(A.T)
    W = A.maximum(AT) if symmetrize == "union" else A.minimum(AT)
    W = sp.csr_matrix(W, dtype=np.float64)
    W.eliminate_zeros()  # underflowed heat / orthogonal cosine weights: no edge
    W.sort_indices()
    return W, sigma


def _check_loaded_arrays(data, params, meta):
    nb, dist = data["neighbors"], data["distances"]
    n = int(meta["n_samples_fit_"])
    k = int(params["n_neighbors"])
    if nb.dtype.kind not in "iu" or nb.shape != (n, k):
        raise ValueError(f"neighbors array has shape {nb.shape} / dtype {nb.dtype}, "
                         f"expected ({n}, {k}) integers")
    if dist.dtype.kind != "f" or dist.shape != (n, k):
        raise ValueError(f"distances array has shape {dist.shape}, expected ({n}, {k})")
    if nb.size and (nb.min() < 0 or nb.max() >= n):
        raise ValueError("neighbor indices out of range")
    if not np.all(np.isfinite(dist)) or (dist.size and dist.min() < 0):
        raise ValueError("distances must be finite and >= 0")
    indptr, indices, values = data["adj_indptr"], data["adj_indices"], data["adj_data"]
    if indptr.ndim != 1 or indptr.shape[0] != n + 1 or indptr.dtype.kind not in "iu":
        raise ValueError(f"adjacency indptr has shape {indptr.shape}, expected ({n + 1},)")
    if indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != indices.shape[0] \
            or indices.shape != values.shape or indices.ndim != 1:
        raise ValueError("adjacency arrays are inconsistent (truncated?)")
    if indices.size and (indices.min() < 0 or indices.max() >= n):
        raise ValueError("adjacency column indices out of range")
    if values.dtype.kind != "f" or not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise ValueError("adjacency weights must be finite and > 0")
    W = sp.csr_matrix((values, indices, indptr), shape=(n, n))
    if W.diagonal().any():
        raise ValueError("adjacency has a nonzero diagonal")
    if (W != W.T).nnz:
        raise ValueError("adjacency matrix is not symmetric")
    if meta.get("reordered"):
        order = data.get("node_order")
        if (order is None or order.dtype.kind not in "iu" or order.shape != (n,)
                or not np.array_equal(np.sort(order), np.arange(n))):
            raise ValueError("node_order is missing or not a permutation of the rows")
    deg = data["degree"]
    if deg.shape != (n,) or not np.allclose(deg, np.asarray(W.sum(axis=1)).ravel(),
                                            rtol=1e-10, atol=1e-12):
        raise ValueError("degree vector does not match the adjacency matrix")
