"""The kNN graph of rows held in row blocks by Dask workers.

:func:`fit_graph` builds the same object as :meth:`linlap.KNNGraph.fit`, in the space
``KNNGraph.fit`` would choose ('auto': the input space with the exact search up to
``exact_max_samples`` non-empty rows, the SVD space above): the neighbours of every row
block are found on the workers and only the n × k neighbour lists (and, in the SVD space,
the rows the SVD is fitted on) come to the client, where the weights, the node order and
the Laplacian are made by the code of ``KNNGraph.fit`` itself
(``KNNGraph._fit_from_neighbors``).
"""

import operator
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from .._memory import check_memory
from .._progress import progress
from .._validation import check_int
from .operator import check_client, check_dask_layout
from ..graph import KNNGraph
from ..graph import search

__all__ = ["fit_graph"]

#: Bytes of the dense block of similarities of one exact block-pair search (per task).
EXACT_BLOCK_BYTES = 64 * 2**20
#: An index block with at most this many times ``n_search`` rows is searched exactly
#: (pynndescent needs many more rows than neighbours).
EXACT_BELOW = 4


# -- what runs on the workers ----------------------------------------------------------
def _prepare(Xb):
    """Row-normalised float64 copy of the block and its empty rows (local indices)."""
    if sp.issparse(Xb) and Xb.format != "csr":
        Xb = Xb.tocsr()
    Xn, empty = search.prepare_input(Xb, min_samples=0)
    return Xn, empty


def _meta(prep):
    Xn, empty = prep
    nnz = Xn.nnz if sp.issparse(Xn) else Xn.size
    return Xn.shape, empty, int(nnz)


def _take_rows(prep, local_rows):
    return prep[0][local_rows]


def _project(prep, svd, local_rows):
    """The unit SVD embedding (float64) of the block's non-empty rows, and the number of
    them with a zero embedding (see :func:`linlap.graph.search.normalize_embedding`)."""
    Xn = prep[0]
    if local_rows.size == 0:  # a block of empty rows only
        return np.empty((0, svd.components_.shape[0])), 0
    E = np.ascontiguousarray(svd.transform(Xn[local_rows]), dtype=np.float64)
    return E, search.normalize_embedding(E)


def _sort_candidates(ids, dist, k):
    """The k best of each row's candidates by (distance, index); repeats and -1 dropped
    (-1 / inf fill rows with fewer than k)."""
    ids = np.asarray(ids, dtype=np.int64)
    dist = np.where(ids < 0, np.inf, dist)
    if ids.shape[1] > 1:  # a repeated candidate counts once
        o = np.argsort(ids, axis=1, kind="stable")
        s_ids = np.take_along_axis(ids, o, axis=1)
        rep = np.zeros_like(ids, dtype=bool)
        rep[:, 1:] = (s_ids[:, 1:] == s_ids[:, :-1]) & (s_ids[:, 1:] >= 0)
        dup = np.zeros_like(rep)
        np.put_along_axis(dup, o, rep, axis=1)
        dist = np.where(dup, np.inf, dist)
    ids = np.where(np.isfinite(dist), ids, -1)
    key_ids = np.where(ids < 0, np.iinfo(np.int64).max, ids)
    order = np.lexsort((key_ids, dist), axis=-1)[:, :k]
    ids = np.take_along_axis(ids, order, axis=1)
    dist = np.take_along_axis(dist, order, axis=1)
    if ids.shape[1] < k:
        pad = k - ids.shape[1]
        ids = np.hstack([ids, np.full((ids.shape[0], pad), -1, dtype=np.int64)])
        dist = np.hstack([dist, np.full((dist.shape[0], pad), np.inf)])
    return ids, dist


def _merge(k, *parts):
    """The global top k of a query block from the candidates of every index block."""
    ids = np.hstack([p[0] for p in parts])
    dist = np.hstack([p[1] for p in parts])
    return _sort_candidates(ids, dist, k)


def _exact_sims(Q, qids, E, ids, k):
    """Exact k nearest rows of E (global indices ``ids``, sorted) for the query rows Q
    (global indices ``qids``), by cosine similarity (unit rows, CSR or dense); a query
    row is never its own neighbour. Returns ``(indices, similarities)`` sorted and
    tie-broken as :func:`linlap.graph.search.exact_knn` does
    (:func:`~linlap.graph.search.top_k_similarities`: similarities within ``TIE_TOL``
    tie, the lowest indices win), -1 / -inf where E has fewer than k rows."""
    m, n = Q.shape[0], E.shape[0]
    kk = min(k, n)
    out_i = np.full((m, kk), -1, dtype=np.int64)
    out_s = np.full((m, kk), -np.inf)
    if m == 0 or kk == 0:
        return out_i, out_s
    sparse = sp.issparse(E)
    ET = search.transpose(E) if sparse else E.T
    if sp.issparse(Q) != sparse:  # blocks of both kinds: the query block takes E's
        Q = sp.csr_matrix(Q) if sparse else Q.toarray()
    pos = np.minimum(np.searchsorted(ids, qids), n - 1)
    is_self = ids[pos] == qids
    # the dense similarities and argpartition's indices: about 16 bytes per entry
    chunk = max(1, min(m, int(EXACT_BLOCK_BYTES // (16 * n))))
    for s in range(0, m, chunk):
        # the in-memory search's block product (the same bits)
        S = search.similarity_block(Q, np.arange(s, min(s + chunk, m)), ET)
        rows = np.flatnonzero(is_self[s:s + chunk])
        S[rows, pos[s:s + chunk][rows]] = -np.inf  # never our own neighbour
        top, sims = search.top_k_similarities(S, kk)  # the columns of E are in id order
        ok = np.isfinite(sims)
        out_i[s:s + chunk] = np.where(ok, ids[top], -1)
        out_s[s:s + chunk] = np.where(ok, sims, -np.inf)
    return out_i, out_s


def _merge_exact(k, *parts):
    """The global top k (indices, distances) of a query block from the ``(indices,
    similarities)`` of :func:`_exact_sims` over every block, with the same tie rule: the
    candidates are put in index order and selected as one row of the full search would
    be (so the result does not depend on the row blocks)."""
    ids = np.hstack([p[0] for p in parts]).astype(np.int64, copy=False)
    sims = np.hstack([p[1] for p in parts])
    m = ids.shape[0]
    out_i = np.full((m, k), -1, dtype=np.int64)
    out_d = np.full((m, k), np.inf)
    if m == 0 or ids.shape[1] == 0:
        return out_i, out_d
    sims = np.where(ids < 0, -np.inf, sims)
    o = np.argsort(np.where(ids < 0, np.iinfo(np.int64).max, ids), axis=1, kind="stable")
    ids = np.take_along_axis(ids, o, axis=1)
    sims = np.take_along_axis(sims, o, axis=1)
    kk = min(k, ids.shape[1])
    top, best = search.top_k_similarities(sims, kk)
    ok = np.isfinite(best)
    out_i[:, :kk] = np.where(ok, np.take_along_axis(ids, top, axis=1), -1)
    out_d[:, :kk] = np.where(ok, search.cos_to_dist(np.where(ok, best, -1.0)), np.inf)
    return out_i, out_d


def _exact_pair(Q, qids, E, ids, k):
    """:func:`_exact_sims` as (indices, distances) (-1 / inf fill), for merging with
    pynndescent's candidates."""
    out_i, sims = _exact_sims(Q, qids, E, ids, k)
    ok = out_i >= 0
    return out_i, np.where(ok, search.cos_to_dist(np.where(ok, sims, -1.0)), np.inf)


def _exact_dist(Q, E, cand_local):
    """Exact distances (float64) from each query row to its candidate rows of E
    (-1: no candidate, distance inf)."""
    valid = cand_local >= 0
    c = np.where(valid, cand_local, 0)
    out = np.empty(c.shape)
    chunk = max(1, int(EXACT_BLOCK_BYTES // (8 * max(1, c.shape[1]) * max(1, E.shape[1]))))
    for s in range(0, c.shape[0], chunk):
        cos = np.einsum("ij,ikj->ik", Q[s:s + chunk], E[c[s:s + chunk]])
        out[s:s + chunk] = search.cos_to_dist(cos)
    return np.where(valid, out, np.inf)


def _build_index(E, n_search, random_state, n_jobs, kwds, prepare):
    """A pynndescent index of the block (float32), with its own kNN graph."""
    import pynndescent

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Failed to correctly find n_neighbors")
        index = pynndescent.NNDescent(
            E.astype(np.float32), metric="cosine", n_neighbors=n_search,
            random_state=random_state, n_jobs=n_jobs, **(kwds or {}))
        if prepare:
            index.prepare()  # the search graph of index.query
    return index


def _own_candidates(index, E, ids, k):
    """The block's own neighbours from its index's kNN graph, exact distances."""
    cand = np.asarray(index.neighbor_graph[0], dtype=np.int64)
    n = E.shape[0]
    cand = np.where((cand >= 0) & (cand < n) & (cand != np.arange(n)[:, None]), cand, -1)
    dist = _exact_dist(E, E, cand)
    return _sort_candidates(np.where(cand >= 0, ids[np.maximum(cand, 0)], -1), dist, k)


def _query_candidates(index, E, ids, Q, n_query, k):
    """Neighbours of the query rows Q (another block) in this block's index."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Failed to correctly find n_neighbors")
        cand, _ = index.query(Q.astype(np.float32), k=min(n_query, E.shape[0]))
    cand = np.asarray(cand, dtype=np.int64)
    cand = np.where((cand >= 0) & (cand < E.shape[0]), cand, -1)
    dist = _exact_dist(Q, E, cand)
    return _sort_candidates(np.where(cand >= 0, ids[np.maximum(cand, 0)], -1), dist, k)


# -- the client side -------------------------------------------------------------------
def _check_input(graph, X):
    try:
        import dask.array as da
    except ImportError as exc:  # pragma: no cover
        raise ImportError("fit_graph needs dask: pip install linlap[dask]") from exc
    if not isinstance(graph, KNNGraph):
        raise TypeError(f"graph must be a KNNGraph (its parameters say what to build), "
                        f"got {type(graph).__name__}.")
    if not isinstance(X, da.Array):
        raise TypeError(f"X must be a dask array chunked by rows, got {type(X).__name__}.")
    check_dask_layout(X)


def fit_graph(graph, X, *, client=None, sample_size=None, recall_sample=None,
              random_state=None, verbose=None):
    r"""Fit a :class:`~linlap.KNNGraph` on a dask array of row blocks, the search on the workers.

    The result is a fitted ``KNNGraph`` over all rows of X, in X's row order, used exactly
    like ``KNNGraph.fit(X)``'s (``laplacian_matvec``, ``scale_``, ``neighbors_``,
    ``distances_``, ``recall_``, ``save``/``load``, ``subgraph``, ``with_laplacian``); the
    weights, the node order and the Laplacian are made by the same code as
    ``KNNGraph.fit``. ``graph`` itself is not modified.

    **Space and method** are resolved as ``KNNGraph.fit`` resolves them: ``space='auto'``
    is the input space ('tfidf') when X has at most ``exact_max_samples`` non-empty rows,
    else the SVD space; ``algorithm='auto'`` is exact up to the same threshold, else
    nndescent. The input space is searched exactly only: ``algorithm='nndescent'`` with
    ``space='auto'`` searches the SVD space at any size (in memory, below the threshold,
    pynndescent would search the TF-IDF space: another graph), and with
    ``space='tfidf'`` it is refused.

    **Method.**

    1. Each block is validated and L2-row-normalised on its worker (a private copy);
       empty rows (no nonzero entry) are left out of the search and become isolated
       nodes, as in ``KNNGraph.fit`` (``n_empty_``, one warning). The blocks' real shapes
       are checked against ``X.chunks``.
    2. SVD space only: ``TruncatedSVD(n_components)`` is fitted on the client on at most
       ``sample_size`` random non-empty rows, gathered from the workers (all of them
       when there are fewer); the projection is sent to every worker, which embeds its
       block's rows and scales them to unit length: the space and geometry of
       ``KNNGraph(space='svd')``, distance :math:`d = \sqrt{\max(0, 2 - 2\cos)}` in that
       space.
    3. Neighbours. ``algorithm='exact'``: for every pair of blocks (b, c), the cosines of
       block b's rows to block c's (the sparse product :math:`X_b X_c^\top` in the input
       space, dense products in the SVD space; blocked rows, bounded memory) on a
       worker, the k best of each row kept by
       :func:`linlap.graph.search.top_k_similarities` (the in-memory exact search's rule:
       similarities within ``TIE_TOL`` tie, the lowest indices win), then the candidates
       of all blocks of a row, in index order, selected by the same function: the
       neighbour lists of ``KNNGraph(algorithm='exact').fit`` in the same space, for any
       block layout (except, as in memory, the choice among rows at similarity 0 — no
       common term — when they fill the last places). ``algorithm='nndescent'`` (SVD
       space): each worker builds a pynndescent index of its own block (float32); a
       block's own candidates come from its index's kNN graph and those in every other
       block from ``index.query`` of its rows on the index's worker,
       ``n_search_neighbors`` candidates per index (None: ``n_neighbors + 10``); small
       blocks (at most 4 × ``n_search_neighbors`` rows) are searched exactly. The
       distances of all candidates are recomputed exactly in float64, self-matches
       dropped, and the candidates of all B indices merged on the workers to the top k
       by (distance, index). Rows left with fewer than k valid candidates are redone by
       exact search over all blocks (``n_repaired_``).
    4. Recall (``nndescent`` only, ``recall_sample > 0``): on ``recall_sample`` random
       non-empty rows, the exact k nearest neighbours over all blocks in the same SVD
       space; ``recall_`` is the tie-aware recall@k of the merged lists, as
       ``KNNGraph.recall_`` (a neighbour counts when its distance does not exceed the
       exact k-th distance).
    5. The client assembles the n × k lists (-1 / inf for empty rows) and finishes as
       ``KNNGraph.fit`` does (weights, symmetrisation, ``reorder``, degrees, L).

    In the input space (the default up to ``exact_max_samples`` rows) the result is that
    of ``KNNGraph(...).fit(X.compute())``: same neighbours, distances up to round-off of
    dense products (sparse ones are bitwise the same). In the SVD space, with
    ``algorithm='exact'``, a ``random_state`` and ``sample_size >=`` the number of
    non-empty rows (the SVD fitted on all of them), the result is that of
    ``KNNGraph(space='svd', algorithm='exact', random_state=...).fit(X.compute())``, up to
    round-off in the dot products. With ``nndescent`` the draws of the random generator
    are those of ``KNNGraph.fit``, but the search differs (B indices instead of one).
    ``random_state=None`` (here and in ``graph``) draws from NumPy's global generator, as
    ``KNNGraph.fit`` does: the randomised SVD and pynndescent then make the SVD-space
    graph irreproducible, in memory as here; the input-space exact search draws nothing.

    **Memory.** Client: in the SVD space, the SVD sample while the SVD is fitted — up to
    ``sample_size`` rows of X, all of X when it has fewer non-empty rows — then the
    n × k neighbour lists and distances, W and its renumbered copy (the same as
    ``KNNGraph.fit`` after its search: about 120 n k bytes, + 36 n k with ``reorder``),
    and the n row indices of the blocks. Workers: each holds its block of X, a
    normalised copy (the searched rows in the input space; in the SVD space until the
    projection is done, then its embedding, 8 × ``n_components`` bytes per row), its
    index and, during the search, the rows of the block being compared (one other block
    at a time per task, with a dense block of similarities of at most 64 MiB) and the
    candidate lists of its rows. Apart from the SVD sample, neither X nor the embedding
    is gathered to the client.

    Parameters
    ----------
    graph : KNNGraph
        Its parameters say what to build: ``n_neighbors``, ``weight``, ``heat_sigma``,
        ``symmetrize``, ``normalized``, ``power``, ``space``, ``n_components``,
        ``algorithm``, ``exact_max_samples`` (the threshold of 'auto'),
        ``n_search_neighbors``, ``nndescent_kwds``, ``reorder``, ``n_jobs``
        (pynndescent threads per worker task). A fitted graph is not refitted: a new one
        is returned.
    X : dask array of shape (n_samples, n_features)
        Documents as rows (e.g. TF-IDF), chunked by rows only (one chunk along the
        columns), with known chunk sizes and column count; chunks are scipy sparse
        matrices or ndarrays. Must be finite.
    client : distributed.Client, optional
        Default: the current client. A closed client is refused.
    sample_size : int or None, default=None
        Rows the SVD is fitted on (None: ``graph.svd_sample``; SVD space only).
    recall_sample : int or None, default=None
        Rows of the recall check (None: ``graph.recall_sample``; 0 disables it).
    random_state : int, RandomState instance or None, default=None
        Seeds the SVD sample and fit, pynndescent and the recall sample
        (None: ``graph.random_state``).
    verbose : bool or None, default=None
        Print each step and its time, and the progress of the search (None:
        ``graph.verbose``).

    Returns
    -------
    graph : KNNGraph
        Fitted; ``space_`` is 'tfidf' or 'svd' as resolved; ``build_time_`` has 'svd'
        (SVD space: sample, fit and projection), 'search', 'recall' (if measured),
        'weights', 'reorder' (if renumbered) and 'total'.
    """
    t_start = time.perf_counter()
    _check_input(graph, X)
    out = type(graph)(**graph.get_params(deep=False))
    out._check_params()
    sample_size = out.svd_sample if sample_size is None else check_int("sample_size",
                                                                       sample_size, 1)
    recall_sample = (out.recall_sample if recall_sample is None
                     else check_int("recall_sample", recall_sample, 0))
    rng = check_random_state(out.random_state if random_state is None else random_state)
    verbose = bool(out.verbose if verbose is None else verbose)
    if client is None:
        from distributed import get_client
        client = get_client()
    check_client(client)

    futures = []  # released in the end
    try:  # as current: wait / as_completed / dask compute use this client, not the default
        with client.as_current():
            return _fit(out, X, client, sample_size, recall_sample, rng, verbose, t_start,
                        futures)
    finally:
        for f in futures:
            f.release()


def _fit(out, X, client, sample_size, recall_sample, rng, verbose, t_start, futures):
    import dask

    from distributed import wait

    k = out.n_neighbors
    n, d = int(X.shape[0]), int(X.shape[1])
    sizes = [int(c) for c in X.chunks[0]]
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    keep = [b for b, s in enumerate(sizes) if s > 0]
    chunks = X.to_delayed()[:, 0]
    prep = client.compute([dask.delayed(_prepare)(chunks[b]) for b in keep])
    futures += prep
    meta = client.gather([client.submit(_meta, p, pure=False) for p in prep])
    if n < 2:
        raise ValueError(f"KNNGraph needs at least 2 samples, got n_samples={n}.")
    local_rows, ids = [], []
    for b, (shape, empty, _) in zip(keep, meta):
        if shape != (sizes[b], d):
            raise ValueError(f"row block {b} has shape {shape}, X.chunks declares "
                             f"{(sizes[b], d)}.")
        rows = np.setdiff1d(np.arange(sizes[b]), empty, assume_unique=True)
        local_rows.append(rows)
        ids.append(bounds[b] + rows)
    n_search = int(sum(r.size for r in ids))
    n_empty = n - n_search
    nnz = sum(m[2] for m in meta)
    if n_empty:
        warnings.warn(
            f"{n_empty} of {n} rows of X are empty (no nonzero entry): they become "
            f"isolated nodes of the graph (no edge; n_empty_ counts them).",
            UserWarning, stacklevel=3)
    if k >= n_search:
        what = (f"the {n_search} non-empty rows ({n_empty} rows of X are empty)"
                if n_empty else f"n_samples={n}")
        raise ValueError(f"n_neighbors={k} must be smaller than {what} (every row needs k "
                         f"other rows as neighbours).")
    # 'auto' as KNNGraph.fit resolves it
    algorithm = out.algorithm
    if algorithm == "auto":
        algorithm = "exact" if n_search <= out.exact_max_samples else "nndescent"
    space = out.space
    if space == "auto":  # pynndescent runs in the SVD space here (see Space and method)
        space = ("tfidf" if n_search <= out.exact_max_samples and algorithm == "exact"
                 else "svd")
    if space == "tfidf" and algorithm != "exact":
        raise ValueError(
            f"fit_graph searches the input space (space='tfidf') exactly only, but "
            f"algorithm={out.algorithm!r} is nndescent here: use algorithm='exact', or "
            f"space='svd' (or 'auto') for pynndescent in the SVD space.")
    if space == "svd":
        if out.n_components > min(n_search, d):
            raise ValueError(
                f"n_components={out.n_components} must be <= min(n_samples, n_features)"
                f" = {min(n_search, d)} for space='svd'.")
        if sample_size < out.n_components:
            raise ValueError(f"sample_size={sample_size} (svd_sample) must be >= "
                             f"n_components={out.n_components}: the SVD is fitted on "
                             f"sample_size rows.")
    reorder = out._reorders(n)
    n_fit = min(sample_size, n_search) if space == "svd" else 0
    check_memory(120 * n * k + (36 * n * k if reorder else 0) + 12 * nnz * n_fit // n_search
                 + 8 * n, f"Building the {k}-NN graph of {n} rows on the client",
                 "Use a smaller n_neighbors or sample_size.")
    starts = np.concatenate([[0], np.cumsum([r.size for r in ids])])
    times = {}
    if space == "tfidf":  # the search on the normalised non-empty rows themselves
        emb = [client.submit(_take_rows, p, r, pure=False) for p, r in zip(prep, local_rows)]
        futures += emb
        wait(emb)
        for f in prep:
            f.release()
    else:
        emb = _svd_space(out, client, prep, local_rows, starts, n_search, sample_size, rng,
                         verbose, times, futures)
    return _search(out, client, emb, ids, starts, n, d, k, n_empty, algorithm, space,
                   recall_sample, rng, verbose, times, t_start, futures)


def _svd_space(out, client, prep, local_rows, starts, n_search, sample_size, rng, verbose,
               times, futures):
    """The unit SVD embedding of every block's non-empty rows (futures, on the workers)."""
    from sklearn.decomposition import TruncatedSVD

    t0 = time.perf_counter()
    fit_rows = np.arange(n_search) if n_search <= sample_size else np.sort(
        rng.choice(n_search, size=sample_size, replace=False))
    if verbose:
        search.log(f"TruncatedSVD to {out.n_components} dimensions, fitted on "
                   f"{fit_rows.size} of {n_search} rows gathered from {len(prep)} blocks")
    parts = []
    for j, p in enumerate(prep):
        sel = fit_rows[(fit_rows >= starts[j]) & (fit_rows < starts[j + 1])] - starts[j]
        if sel.size:
            parts.append(client.submit(_take_rows, p, local_rows[j][sel], pure=False))
    parts = client.gather(parts)
    sample = (sp.vstack([sp.csr_matrix(P) for P in parts], format="csr")
              if any(sp.issparse(P) for P in parts) else np.vstack(parts))
    svd = TruncatedSVD(n_components=out.n_components, algorithm="randomized",
                       random_state=rng.randint(np.iinfo(np.int32).max))
    svd.fit(sample)
    del sample, parts
    svd_f = client.scatter(svd, broadcast=True, hash=False)
    proj = [client.submit(_project, p, svd_f, r, pure=False) for p, r in zip(prep, local_rows)]
    emb = [client.submit(operator.getitem, f, 0, pure=False) for f in proj]
    futures += emb
    n_zero = sum(client.gather([client.submit(operator.getitem, f, 1, pure=False)
                                for f in proj]))
    for f in prep + proj + [svd_f]:
        f.release()
    if n_zero:
        warnings.warn(f"{n_zero} rows have a zero SVD embedding; increase n_components.",
                      RuntimeWarning, stacklevel=4)
    times["svd"] = time.perf_counter() - t0
    if verbose:
        search.log(f"embedding done in {times['svd']:.1f} s")
    return emb


def _search(out, client, emb, ids, starts, n, d, k, n_empty, algorithm, space,
            recall_sample, rng, verbose, times, t_start, futures):
    """The neighbour lists over the blocks' rows ``emb`` (futures), and the fitted graph."""
    from distributed import as_completed, wait

    n_search = int(starts[-1])
    t0 = time.perf_counter()
    B = len(emb)
    n_search_nb = out.n_search_neighbors if out.n_search_neighbors is not None else k + 10
    cand = [[None] * B for _ in range(B)]  # cand[b][c]: rows of block b in block c
    if algorithm == "exact":
        if verbose:
            search.log(f"exact {k}-NN search over {n_search} rows ({space} space): "
                       f"{B}x{B} block pairs")
        for b in range(B):
            for c in range(B):
                cand[b][c] = client.submit(_exact_sims, emb[b], ids[b], emb[c], ids[c], k,
                                           pure=False)
    else:
        if verbose:
            search.log(f"pynndescent: one index per block ({B} blocks), {n_search_nb} "
                       f"candidates per index, keeping the best {k}")
        seed = rng.randint(np.iinfo(np.int32).max)
        n_jobs = search.effective_n_jobs(out.n_jobs)
        index = [None] * B
        for c in range(B):
            if ids[c].size > EXACT_BELOW * n_search_nb:
                index[c] = client.submit(
                    _build_index, emb[c], min(n_search_nb, ids[c].size - 1),
                    (seed + c) % np.iinfo(np.int32).max, n_jobs, out.nndescent_kwds, B > 1,
                    pure=False)
        built = [f for f in index if f is not None]
        wait(built)
        where = client.who_has(built)
        for c in range(B):
            for b in range(B):
                if index[c] is None:
                    cand[b][c] = client.submit(_exact_pair, emb[b], ids[b], emb[c], ids[c],
                                               k, pure=False)
                elif b == c:
                    cand[b][c] = client.submit(_own_candidates, index[c], emb[c], ids[c], k,
                                               pure=False)
                else:  # on the index's worker: the query block travels, not the index
                    cand[b][c] = client.submit(
                        _query_candidates, index[c], emb[c], ids[c], emb[b], n_search_nb, k,
                        workers=list(where[index[c].key]), allow_other_workers=True,
                        pure=False)
        futures += built
    merge = _merge_exact if algorithm == "exact" else _merge
    merged = [client.submit(merge, k, *cand[b], pure=False) for b in range(B)]
    neighbors = np.full((n, k), -1, dtype=np.int64)
    distances = np.full((n, k), np.inf)
    bar = progress(verbose, total=n_search, desc="fit_graph search", unit="rows")

    position = {f.key: b for b, f in enumerate(merged)}
    try:
        for f in as_completed(merged):
            b = position[f.key]
            neighbors[ids[b]], distances[ids[b]] = f.result()
            bar.update(ids[b].size)
            f.release()
    finally:
        bar.close()
    for row in cand:
        for f in row:
            f.release()
    if algorithm == "nndescent":
        for f in index:
            if f is not None:
                f.release()
    all_ids = np.concatenate(ids)
    bad = all_ids[np.any(neighbors[all_ids] < 0, axis=1)]
    if bad.size:
        if verbose:
            search.log(f"repairing {bad.size} rows by exact search")
        neighbors[bad], distances[bad] = _exact_rows(client, emb, ids, starts, all_ids, bad, k)
    if np.any(neighbors[all_ids] < 0) or not np.all(np.isfinite(distances[all_ids])):
        raise RuntimeError("internal error: invalid neighbours after repair")
    times["search"] = time.perf_counter() - t0
    if verbose:
        search.log(f"search done in {times['search']:.1f} s"
                   + (f" ({bad.size} rows repaired by exact search)" if bad.size else ""))

    recall = None
    if algorithm == "nndescent" and recall_sample > 0:
        t0 = time.perf_counter()
        sample = all_ids[np.sort(rng.choice(n_search, size=min(recall_sample, n_search),
                                            replace=False))]
        _, exact = _exact_rows(client, emb, ids, starts, all_ids, sample, k)
        recall = float(np.mean(distances[sample] <= exact[:, -1:] + 1e-9))
        times["recall"] = time.perf_counter() - t0
        if verbose:
            search.log(f"recall@{k} on {sample.size} sampled rows: {recall:.3f} "
                       f"({times['recall']:.1f} s)")
    for f in emb:
        f.release()
    return out._fit_from_neighbors(
        neighbors, distances, n_features=d, n_empty=n_empty, algorithm=algorithm,
        space=space, recall=recall, n_repaired=bad.size, times=times, t_start=t_start)


def _exact_rows(client, emb, ids, starts, all_ids, rows, k):
    """Exact k nearest neighbours (global indices, distances) of the given global rows
    over all blocks: their embeddings are gathered (len(rows) × n_components), sent to
    every block and the per-block results merged on the client."""
    pos = np.searchsorted(all_ids, rows)  # position among the non-empty rows
    block = np.searchsorted(starts, pos, side="right") - 1
    Q = np.empty((rows.size, 0))
    parts = []
    for j in np.unique(block):
        sel = np.flatnonzero(block == j)
        parts.append((sel, client.submit(operator.getitem, emb[j], pos[sel] - starts[j],
                                         pure=False)))
    for sel, f in parts:
        Ej = f.result()
        if Q.shape[1] == 0:
            Q = np.empty((rows.size, Ej.shape[1]))
        Q[sel] = Ej
        f.release()
    Qf = client.scatter(Q, broadcast=True, hash=False)
    res = client.gather([client.submit(_exact_sims, Qf, rows, emb[c], ids[c], k, pure=False)
                         for c in range(len(emb))])
    Qf.release()
    return _merge_exact(k, *res)
