"""Neighbour search for :class:`~linlap.graph.KNNGraph`: input checks, exact search by
blocked dot products, pynndescent with exact repair, the SVD space and the sampled recall.

Every function works on row-normalised (unit) rows and reports distances as
``d = sqrt(max(0, 2 - 2 cos))``. pynndescent is imported only when the approximate
search runs, numba when a search over sparse rows runs.
"""

import contextlib
import sys
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import normalize

from .._progress import progress

__all__ = ["prepare_input", "svd_embedding", "normalize_embedding", "exact_knn",
           "similarity_block", "top_k_similarities", "pair_distances",
           "approximate_search", "sampled_recall", "effective_n_jobs", "log"]

# Bytes allowed for the dense similarity block of the exact search (all
# worker threads together).  Bounds memory independently of n.
EXACT_MEMORY_BUDGET = 256 * 2**20
MAX_BLOCK_ROWS = 4096
# Rows projected on the SVD's components at a time (bounds the copy of a CSR row slice).
SVD_CHUNK = 100_000
# Squared distances below this are rounding noise of 2 - 2 cos: duplicates.
DUP_D2 = 1e-12
# Set by KNNGraph itself; letting nndescent_kwds override them would silently
# change the search.
RESERVED_NNDESCENT_KEYS = ("data", "metric", "n_neighbors", "random_state",
                           "n_jobs", "verbose", "compressed")


def log(msg):
    # progress goes to stderr, like the solvers': stdout is for a program's output
    print(f"[KNNGraph] {msg}", file=sys.stderr, flush=True)


def effective_n_jobs(n_jobs):
    # scikit-learn semantics: None -> 1 (or the active joblib backend), -1 -> all cores.
    from joblib import effective_n_jobs as joblib_n_jobs

    return max(1, int(joblib_n_jobs(n_jobs)))


# --------------------------------------------------------------------------
# Input validation
# --------------------------------------------------------------------------

def prepare_input(X, min_samples=2):
    """Validate X; return an L2-row-normalised float64 copy and its empty rows.

    The copy is CSR (sparse input) or a C-contiguous ndarray (dense input);
    the caller's X is never modified. Empty rows (no nonzero entry) stay all-zero
    in the copy; their indices are returned as the second value. ``min_samples``:
    the fewest rows accepted (a row block of a larger X may have fewer than 2).
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
        X = X if hasattr(X, "dtype") else np.asarray(X)
        if X.dtype.kind == "c":  # as for sparse X: the imaginary part would be dropped
            raise ValueError("X must hold real numbers, got a complex array.")
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
    if n < min_samples:
        raise ValueError(f"KNNGraph needs at least {min_samples} samples, got n_samples={n}.")
    if d < 1:
        raise ValueError("X has no features (n_features=0).")
    if bad.any():
        n_nan, n_inf = int(nonfinite_count[0]), int(nonfinite_count[1])
        raise ValueError(
            f"X contains non-finite values: {n_nan} NaN and {n_inf} inf entries. "
            "Remove or impute them before building the graph.")
    # Cosine geometry needs unit rows; this works on our private copy (and leaves the
    # empty rows at zero).
    Xc = unit_rows(Xc)
    if sp.issparse(Xc):
        Xc.sort_indices()
    return Xc, empty


def unit_rows(Xc):
    """Xc (float64, CSR without stored zeros, or ndarray) with L2-normalised rows, in
    place. Each row is first divided by its largest |x|: cosine ignores the scale, and
    the squares of values near 1e±160 would overflow to inf or underflow to 0 (which
    would leave such rows unnormalised, or zero)."""
    if sp.issparse(Xc):
        counts = np.diff(Xc.indptr)
        top = np.ones(Xc.shape[0])
        rows = counts > 0
        if rows.any():
            top[rows] = np.maximum.reduceat(np.abs(Xc.data), Xc.indptr[:-1][rows])
        Xc.data /= np.repeat(top, counts)
    elif Xc.size:
        top = np.abs(Xc).max(axis=1)
        top[top == 0] = 1.0
        Xc /= top[:, None]
    return normalize(Xc, norm="l2", copy=False)


def svd_embedding(Xn, n_components, svd_sample, rng, verbose):
    """Row-normalised TruncatedSVD embedding (float64) of the unit rows Xn.

    The SVD is fitted on at most ``svd_sample`` random rows (the leading
    directions of a large corpus are estimated as well from a sample, at a
    fraction of the cost) and applied to all rows in chunks of ``SVD_CHUNK``, so the
    extra memory is the n × n_components embedding. When the sample is every row, the
    fit's own projection of the rows is the embedding (sparse rows, or dense rows in
    one chunk). Sparse rows that use fewer than half of their columns (hashed features:
    2²⁰ columns for a few thousand documents' terms) are first cut to the columns they
    use: the same subspace, without the randomized SVD's dense work on the empty
    columns (its memory and time grow with the column count).
    """
    from sklearn.decomposition import TruncatedSVD

    if sp.issparse(Xn):
        used = np.bincount(Xn.indices, minlength=Xn.shape[1]) > 0
        n_used = np.count_nonzero(used)
        if n_components <= n_used and 2 * n_used < Xn.shape[1]:
            Xn = Xn[:, np.flatnonzero(used)]
    n = Xn.shape[0]
    fit_rows = np.arange(n) if n <= svd_sample else np.sort(
        rng.choice(n, size=svd_sample, replace=False))
    if verbose:
        log(f"TruncatedSVD to {n_components} dimensions, fitted on {fit_rows.size} of "
             f"{n} rows")
    svd = TruncatedSVD(n_components=n_components, algorithm="randomized",
                       random_state=rng.randint(np.iinfo(np.int32).max))
    if fit_rows.size == n and (sp.issparse(Xn) or n <= SVD_CHUNK):
        # The fit projects the rows it is fitted on (X Vᵀ, exactly as ``transform``,
        # since scikit-learn 0.24): with every row in the sample, that is the embedding,
        # with no second projection. (Not for dense rows in several chunks, where BLAS
        # may round a row differently in a chunk than in the whole product.)
        E = np.ascontiguousarray(svd.fit_transform(Xn), dtype=np.float64)
    else:
        svd.fit(Xn[fit_rows] if fit_rows.size < n else Xn)
        E = np.empty((n, n_components), dtype=np.float64)
        for start in range(0, n, SVD_CHUNK):
            stop = min(start + SVD_CHUNK, n)
            E[start:stop] = svd.transform(Xn[start:stop] if stop - start < n else Xn)
            if verbose and n > SVD_CHUNK:
                log(f"  projected {stop}/{n} rows")
    n_zero = normalize_embedding(E)
    if n_zero:
        warnings.warn(f"{n_zero} rows have a zero SVD embedding; "
                      "increase n_components.", RuntimeWarning)
    return E


def normalize_embedding(E):
    """Scale the rows of the embedding E to unit length in place; return the number of
    zero rows, which get the common direction 1/sqrt(n_components)."""
    norms = np.linalg.norm(E, axis=1)
    zero = norms == 0
    if zero.any():
        # Rows orthogonal to every component would stay 0; give them a common
        # arbitrary direction so cosine stays defined (no NaN).
        E[zero] = 1.0
        norms[zero] = np.sqrt(E.shape[1])
    E /= norms[:, None]
    return int(zero.sum())


# --------------------------------------------------------------------------
# Exact search
# --------------------------------------------------------------------------

def cos_to_dist(cos):
    """d = sqrt(max(0, 2 - 2 cos)) for unit vectors, with duplicates snapped to 0.

    The rounding error of cos is ~1e-16 but the square root amplifies it to
    ~1e-8; d^2 below DUP_D2 is taken as an exact duplicate (d = 0) so that
    the data-driven heat width and duplicate detection are not fooled.
    """
    d2 = 2.0 - 2.0 * np.asarray(cos, dtype=np.float64)
    d2[d2 < DUP_D2] = 0.0
    return np.sqrt(d2)


#: similarities this close count as tied in the exact search (then the lower index wins)
TIE_TOL = 1e-12


def exact_knn(X, k, rows=None, *, XT=None, n_jobs=1, verbose=False):
    """Exact k nearest neighbours of ``X[rows]`` among all rows of X.

    X has unit rows (CSR or dense).  Each query row excludes itself *by
    index* (with duplicate documents, self is not necessarily the top hit).
    Returns ``(indices, distances)`` of shape (len(rows), k), sorted by
    increasing distance d = sqrt(max(0, 2 - 2 cos)), ties by index (the lowest
    indices among rows tied with the k-th neighbour, so that a smaller k keeps a
    prefix; similarities within ``TIE_TOL`` are ties, so dense and CSR X give the same
    neighbours; except rows at similarity 0 — sharing no term with the query — which
    fill the last places in an unspecified choice).
    Memory is bounded by ``EXACT_MEMORY_BUDGET`` (the dense block of
    similarities), whatever n is.
    """
    n = X.shape[0]
    rows = np.arange(n) if rows is None else np.asarray(rows, dtype=np.int64)
    m = rows.shape[0]
    ind = np.empty((m, k), dtype=np.int64)
    dist = np.empty((m, k), dtype=np.float64)
    if m == 0:
        return ind, dist
    if XT is None:
        XT = transpose(X)
    n_workers = max(1, min(n_jobs, m))
    # ~3 dense n-vectors per block row (similarities, argpartition indices, slack).
    block = int(EXACT_MEMORY_BUDGET // (n_workers * 24 * n))
    block = max(1, min(MAX_BLOCK_ROWS, block, m))
    starts = list(range(0, m, block))
    # one block of similarities per thread, reused: a fresh one per block would be
    # page-faulted in again every time
    buffers = threading.local()

    def work(start):
        r = rows[start:start + block]
        b = r.shape[0]
        buf = getattr(buffers, "S", None)
        if buf is None:
            buf = buffers.S = np.empty((block, n))
        S = similarity_block(X, r, XT, out=buf[:b])
        S[np.arange(b), r] = -np.inf  # never our own neighbour
        top, sims = top_k_similarities(S, k)
        ind[start:start + b] = top
        dist[start:start + b] = cos_to_dist(sims)
        return b

    bar = progress(verbose, total=m, desc="KNNGraph exact search", unit="rows")
    if n_workers == 1 or len(starts) == 1:
        results = map(work, starts)
        pool = None
    else:
        # numba (sparse X) and BLAS (dense X) release the GIL in the products
        pool = ThreadPoolExecutor(n_workers)
        results = pool.map(work, starts)
    try:
        for b in results:
            bar.update(b)
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown()
    return ind, dist


def similarity_block(A, rows, BT, out=None):
    """The dense block ``A[rows] @ BT`` of dot products (cosine similarities of unit rows).

    Parameters
    ----------
    A : csr_matrix or ndarray of shape (n_A, d)
        Query rows (float64).
    rows : ndarray of shape (b,), int64
        The rows of A in the block.
    BT : csr_matrix or ndarray of shape (d, n_B)
        The candidate rows B, transposed as :func:`transpose` does (CSR when A is sparse);
        ``transpose(A)`` for the similarities of A's rows among themselves.
    out : ndarray of shape (b, n_B), float64, C-contiguous, optional
        Where to write the block; a new array if None.

    Returns
    -------
    S : ndarray of shape (b, n_B)
        ``out`` when given.

    Notes
    -----
    Sparse A: each row of the block is accumulated in place through the inverted index
    BT (numba, serial, without the GIL, so that the search's threads run one block
    each). scipy's sparse × sparse product and ``toarray`` took most of the exact
    search's time: the blocks of a text corpus are mostly nonzero, and the product
    builds them as CSR first. The sums run in the order of scipy's product (the
    features of the query row in their stored order), so the similarities are the
    same to the bit. Dense A: one BLAS product.
    """
    if out is None:
        out = np.empty((rows.shape[0], BT.shape[1]))
    if sp.issparse(A):
        from .._numba.gram import sparse_dot_rows  # lazy: numba is slow to import

        if not sp.issparse(BT) or BT.format != "csr" or BT.shape[0] != A.shape[1]:
            raise ValueError("similarity_block needs BT = transpose(B), a CSR matrix with "
                             "A's number of columns as rows.")

        sparse_dot_rows(rows, A.indptr, A.indices, A.data, BT.indptr, BT.indices,
                        BT.data, out)
        return out
    return np.matmul(A[rows], BT, out=out)


def top_k_similarities(S, k):
    """The k largest entries of each row of the dense similarity block S (columns are
    candidate rows in increasing index order; -inf: not a candidate): their columns and
    similarities, sorted by decreasing similarity, ties by column (the search's tie
    rule, shared by :func:`exact_knn` and the distributed exact search).

    Similarities within ``TIE_TOL`` of each other are ties; where more columns tie with
    the k-th than fit, the lowest columns are kept (as a smaller k would), except when
    the k-th similarity is at most ``TIE_TOL`` (rows sharing no term: an unspecified
    choice among them).
    """
    b, n = S.shape
    top = np.argpartition(S, n - k, axis=1)[:, n - k:]
    sims = np.take_along_axis(S, top, axis=1)
    # argpartition picks arbitrarily among similarities tied with the k-th: where
    # more rows tie than fit, keep the lowest indices (as a smaller k would). Not for
    # a k-th similarity of 0 (rows sharing no term, often thousands of them on short
    # texts: sorting those out doubled the search)
    # Ties are similarities within TIE_TOL: equal cosines come out of the dense and
    # the sparse product (or another row order) a few ulps apart.
    kth = sims.min(axis=1)
    tied = np.zeros(b, dtype=bool)
    if np.any(kth > TIE_TOL):  # one pass over the block (no copy of its rows)
        tied = (kth > TIE_TOL) & (
            np.count_nonzero(S >= (kth - TIE_TOL)[:, None], axis=1) > k)
    for i in np.flatnonzero(tied):
        above = np.flatnonzero(S[i] > kth[i] + TIE_TOL)
        band = np.flatnonzero(np.abs(S[i] - kth[i]) <= TIE_TOL)
        cand = np.r_[above, band[:k - above.size]]
        top[i], sims[i] = cand, S[i, cand]
    order = np.lexsort((top, -np.round(sims / TIE_TOL)), axis=-1)
    top = np.take_along_axis(top, order, axis=1)
    sims = np.take_along_axis(sims, order, axis=1)
    return top, sims


def pair_distances(X, i, j):
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
        out[s:s + chunk] = cos_to_dist(cos)
    return out


# --------------------------------------------------------------------------
# Approximate search
# --------------------------------------------------------------------------

def nndescent_search(X, n_neighbors, *, metric, random_state, n_jobs, verbose, kwds):
    """Run pynndescent and return its ``neighbor_graph`` (indices, distances).

    Isolated in a function so that tests can substitute it.
    """
    import pynndescent  # lazy: pulls in numba, slow to import and to JIT

    # pynndescent prints its progress: to stderr, with ours (stdout is a program's output)
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
        # Rows it fails on come back with -1; KNNGraph repairs those exactly.
        warnings.filterwarnings("ignore", message="Failed to correctly find n_neighbors")
        index = pynndescent.NNDescent(
            X, metric=metric, n_neighbors=n_neighbors, random_state=random_state,
            n_jobs=n_jobs, verbose=verbose, **(kwds or {}))
        indices, distances = index.neighbor_graph
    return np.asarray(indices), np.asarray(distances)


def select_candidates(cand, cand_dist, k):
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


def approximate_search(Xs, k, *, n_search, random_state, n_jobs, verbose, kwds):
    """k nearest neighbours of every row by pynndescent, repaired and re-sorted exactly.

    pynndescent is asked for ``n_search`` neighbours (it lists the row itself among
    them; None: ``k + 10`` on dense input, ``max(k + 10, 30)`` on sparse input, where
    NN-descent finds true neighbours less easily). The best k others are kept; rows it
    failed on (``-1``, too few, repeats) are redone by exact search. Distances of the
    kept neighbours are recomputed exactly in float64.

    Returns
    -------
    neighbors, distances : ndarray of shape (n, k)
    n_repaired : int
    XT : transposed Xs if the repair built it (reused by :func:`sampled_recall`), else None
    """
    n = Xs.shape[0]
    dense = not sp.issparse(Xs)
    if n_search is None:
        n_search = k + 10 if dense else max(k + 10, 30)
    # pynndescent cannot return more than n - 1 others; rows that end up short are
    # repaired below.
    n_search = max(int(min(n_search, n - 1)), 2)
    if verbose:
        log(f"pynndescent search: {n_search} neighbours per row over {n} rows, "
            f"keeping the best {k}")
    data = Xs if sp.issparse(Xs) else Xs.astype(np.float32)
    cand, cand_dist = nndescent_search(
        data, n_search, metric="cosine", random_state=random_state, n_jobs=n_jobs,
        verbose=bool(verbose), kwds=kwds)
    if cand.ndim != 2 or cand.shape[0] != n:
        raise RuntimeError(f"pynndescent returned a graph of shape {cand.shape} for {n} rows.")
    kept, bad = select_candidates(cand, cand_dist, k)
    good = np.setdiff1d(np.arange(n), bad, assume_unique=True)
    distances = np.full((n, k), np.inf)
    if good.size:
        ii = np.repeat(good, k)
        dist_good = pair_distances(Xs, ii, kept[good].ravel()).reshape(-1, k)
        # pynndescent orders by float32 distances; re-sort by exact ones.
        order = np.lexsort((kept[good], dist_good), axis=-1)
        kept[good] = np.take_along_axis(kept[good], order, axis=1)
        distances[good] = np.take_along_axis(dist_good, order, axis=1)
    XT = None
    if bad.size:
        if verbose:
            log(f"repairing {bad.size} rows by exact search")
        XT = transpose(Xs)
        kept[bad], distances[bad] = exact_knn(Xs, k, bad, XT=XT, n_jobs=n_jobs)
    if np.any(kept < 0) or not np.all(np.isfinite(distances)):
        raise RuntimeError("internal error: invalid neighbours after repair")
    return kept, distances, int(bad.size), XT


def sampled_recall(Xs, distances, k, sample_size, rng, *, XT=None, n_jobs=1):
    """Tie-aware recall@k of ``distances`` against exact search on ``sample_size`` rows.

    A returned neighbour counts as correct when its distance does not exceed the
    exact k-th distance (duplicates make the exact set ambiguous).
    """
    n = Xs.shape[0]
    sample = np.sort(rng.choice(n, size=min(sample_size, n), replace=False))
    _, exact_dist = exact_knn(Xs, k, sample, XT=XT if XT is not None else transpose(Xs),
                              n_jobs=n_jobs)
    kth = exact_dist[:, -1:] + 1e-9
    return float(np.mean(distances[sample] <= kth))


def transpose(Xs):
    """Xsᵀ in the layout the exact search multiplies by (CSR for sparse input)."""
    return Xs.T.tocsr() if sp.issparse(Xs) else Xs.T
