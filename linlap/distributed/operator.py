"""The normal operator of manifold-regularised least squares over row blocks on Dask workers.

The same ``A`` as :class:`linlap.solvers.normal_operator.NormalOperator` (same
scaling, same unpenalised bias), with X held by the workers as CSR row blocks:

    A z = X̃_Rᵀ X̃_R z + α [w; 0] + β X̃ᵀ L^p X̃ z,     X̃ = [X, 1],
    α = γ_A l,   β = γ_I s l.

Two ways of applying the graph term are implemented. With ``graph=`` (the fits'
``graph_on_workers=True``), one product ``A Z`` for a block Z of shape (m, c),
m = d (+1 with the bias), runs entirely on the workers:

1. Z goes to every row block's task (``m c`` floats per block; above
   ``SCATTER_BYTES`` it is broadcast once per worker instead);
2. each row block b computes ``F_b = X_b w + b`` on the worker that holds it;
3. p times, each block applies its rows of L to its own values and its halo
   (:mod:`linlap.distributed.halo`): the rows of other blocks its rows have an edge
   to, sent worker to worker (``c`` floats per halo row);
4. each block forms ``U_b = β (L^p F)_b`` plus its loss rows of ``F_b`` and computes
   ``X̃_bᵀ U_b`` (``m c`` floats);
5. a tree reduction on the workers sums the block results down to two partial sums,
   which the client receives, adds, and adds ``α [w; 0]``.

No vector of length n passes through the client: per product the client sends Z and
receives ``2 m c`` floats, and the workers exchange ``8 c p h`` bytes, h the halo rows
of all blocks (``halo_sizes``). One client round trip, ``B + p (B + E) + B + B − 2``
tasks for B blocks and E (block, block) pairs that share an edge (at most B (B − 1)).
The halo is small when the rows are in a locality order; in a random row order a kNN
graph's halo approaches all rows of the other blocks (bench/RESULTS.md measures it).

Without ``graph`` (the fits' default), step 3 runs on the client: f is gathered
there (``n c`` floats), ``U = β L^p F`` plus the loss rows is computed by the graph's
own fused passes, and ``U_b`` goes back to block b's worker (``n c`` floats): two round
trips and ``2 B + B − 2`` tasks. This is also how
:meth:`~DistributedNormalOperator.apply_to_decision` works, from decision values
already on the client. Measured on two local workers (bench/RESULTS.md "Dask
operator") the all-gather is the faster of the two: the p sequential halo exchanges
cost more scheduler latency than the client's two n-vectors and its L^p pass, and the
halo of a text kNN graph is most of the other blocks' rows. The halo exchange is
for clusters where the client's bandwidth or the graph on the client is the limit.

Blocks: a dask array with more row chunks than ``n_blocks`` (default: the worker
threads) is rechunked to that many, since the tasks per product grow with B.

Faults: row blocks that come from a dask array are computed on the workers
from its task graph, so Dask recomputes a block whose worker died; a product
interrupted by the loss of a worker is re-run (``retries`` times). Blocks given
as in-memory CSR matrices are scattered to the workers and cannot be
recomputed: losing their worker raises a :class:`RuntimeError`.
"""

import contextlib
import copy

import numpy as np
import scipy.sparse as sp

from .._validation import MAX_ABS_VALUE, is_int
from ..solvers._problem import unlabeled_weights
from ..solvers.normal_operator import (NormalOperator, augmented_rows_T, check_block,
                                       select_loss_weights)
from .halo import apply_block, export_values, halo_sizes, partition_laplacian

__all__ = ["DistributedNormalOperator", "csr_row_blocks", "graph_operator", "check_client",
           "check_dask_layout", "check_numeric_dtype", "block_top", "check_row_block",
           "verified_blocks", "blocks_for_workers"]

#: A block of iterates larger than this (bytes) is broadcast to the workers once per
#: product instead of travelling inside each block's task.
SCATTER_BYTES = 2**20


def csr_row_blocks(X, n_blocks):
    """Split a CSR matrix into ``n_blocks`` CSR row blocks of (nearly) equal row counts."""
    X = sp.csr_matrix(X)
    bounds = np.linspace(0, X.shape[0], int(n_blocks) + 1).round().astype(int)
    return [X[a:b] for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


# -- checks shared by the fits on Dask ---------------------------------------------------
def check_client(client):
    """``client``, refused when it is closed (its scheduler connection is gone)."""
    if getattr(client, "status", None) in ("closing", "closed"):
        raise ValueError("the Dask client is closed: pass a running distributed.Client (or "
                         "client=None for the current one).")
    return client


def check_dask_layout(X, rows=True):
    """A dask array X chunked by rows only, with a known column count and (``rows``)
    known row chunk sizes."""
    if X.ndim != 2 or X.numblocks[1] != 1:
        raise ValueError("X must be a 2-D dask array chunked by rows only (one chunk "
                         f"along the columns), got chunks {X.chunks}.")
    if rows and any(np.isnan(c) for c in X.chunks[0]):
        raise ValueError("X has unknown row chunk sizes; call X.compute_chunk_sizes().")
    if np.isnan(X.shape[1]):
        raise ValueError("X has an unknown number of columns (X.shape[1] is nan); call "
                         "X.compute_chunk_sizes(), or declare the blocks' shape (e.g. "
                         "da.from_delayed(block, shape=(rows, n_features), ...)).")


def check_numeric_dtype(dtype):
    """Refuse a dtype that is not bool, integer, float (or object holding numbers), as
    scikit-learn's validation does in memory."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        raise ValueError(f"Complex data not supported: X has dtype {dtype}.")
    if dtype.kind not in "biufO":
        raise ValueError(f"X must have a numeric dtype (bool, integer or float), got dtype "
                         f"{dtype}; convert it first, e.g. X.astype(np.float64).")


def block_top(Xb):
    """max |x| of one block (after :func:`check_numeric_dtype`), not finite when it holds
    NaN or inf (they propagate through max and min)."""
    check_numeric_dtype(Xb.dtype)
    data = Xb.data if sp.issparse(Xb) else np.asarray(Xb)
    return max(float(data.max()), -float(data.min())) if data.size else 0.0


def check_row_block(Xb, b, declared=None):
    """Row block ``b`` of X: a 2-D sparse matrix or ndarray of the ``declared`` shape
    (the dask array's chunk), of a numeric dtype, finite and without extreme values
    (|x| <= 1e30, as the estimators' fit); returns it, a sparse block as CSR (the format
    the passes and a rechunk's row slices need)."""
    if not (sp.issparse(Xb) or isinstance(Xb, np.ndarray)) or Xb.ndim != 2:
        raise TypeError(f"a row block of X must be a 2-D scipy sparse matrix or ndarray, "
                        f"got {type(Xb).__name__}.")
    if sp.issparse(Xb) and Xb.format != "csr":
        Xb = Xb.tocsr()
    if declared is not None and tuple(Xb.shape) != tuple(declared):
        raise ValueError(f"row block {b} has shape {tuple(Xb.shape)}, X.chunks declares "
                         f"{tuple(declared)}.")
    top = block_top(Xb)
    if not np.isfinite(top):
        raise ValueError(f"Input X contains NaN or infinity (row block {b}).")
    if top > MAX_ABS_VALUE:
        raise ValueError(f"X has extreme values (max |x| = {top:.3g} > {MAX_ABS_VALUE:g}, row "
                         f"block {b}): the solvers' sums of squares would overflow. Rescale X "
                         f"(e.g. TF-IDF rows of unit norm).")
    return Xb


def _checked_mask(mask, n_rows):
    """The loss mask as float64 of shape (n_rows, k), or None."""
    if mask is None:
        return None
    mask = np.asarray(mask, dtype=np.float64)
    if mask.ndim != 2 or mask.shape[0] != n_rows:
        raise ValueError(f"mask must have shape (len(rows), k) = ({n_rows}, k), "
                         f"got {mask.shape}.")
    return mask


def _checked_beta(beta, laplacian_matvec):
    """β as a float; β ≠ 0 needs the graph product."""
    beta = float(beta)
    if beta != 0 and not callable(laplacian_matvec):
        raise ValueError("laplacian_matvec must be a callable F -> L^p F when beta != 0.")
    return beta


def _verified_block(Xb, block_info=None):
    info = block_info[0]
    declared = tuple(int(e - s) for s, e in info["array-location"])
    return check_row_block(Xb, info["chunk-location"][0], declared)


def verified_blocks(X):
    """X whose blocks are checked by :func:`check_row_block` (against ``X.chunks``) as they
    are computed, before any rechunking (which would cut or join lying blocks)."""
    check_dask_layout(X)
    return X.map_blocks(_verified_block, dtype=X.dtype, meta=X._meta)


def blocks_for_workers(X, n_blocks):
    """The verified X in at most ``n_blocks`` row blocks: the tasks per product grow with
    the blocks (and, with the graph on the workers, as blocks² per power of L)."""
    X = verified_blocks(X)  # each block against X.chunks, before rechunking
    if X.numblocks[0] > n_blocks:
        X = X.rechunk({0: -(-X.shape[0] // n_blocks)})
    return X


# -- what runs on the workers ----------------------------------------------------------
def _forward(Xb, Z, fit_intercept):
    """``X_b w (+ b)`` for the block (the numba pass of NormalOperator)."""
    op = NormalOperator(Xb, np.empty(0, dtype=np.intp), None, alpha=0.0, beta=0.0,
                        fit_intercept=fit_intercept)
    return op.decision(Z)


def _backward(Xb, Ub, fit_intercept):
    """``X̃_bᵀ U_b``."""
    return augmented_rows_T(Xb, Ub, fit_intercept)


def _add(a, b):
    return a + b


def _place_block(obj):
    """A graph block held by a worker (a task, so that Dask can recompute it)."""
    return obj


def _backward_with_graph(Xb, Fb, Vb, beta, local_rows, weights, unique, fit_intercept):
    """``X̃_bᵀ U_b`` with ``U_b = β (L^p F)_b`` plus the block's loss rows of ``F_b``."""
    U = np.zeros_like(Fb) if Vb is None else beta * Vb
    FR = Fb[local_rows]
    if weights is not None:
        FR = FR * weights
    if unique:
        U[local_rows] += FR
    else:
        np.add.at(U, local_rows, FR)
    return augmented_rows_T(Xb, U, fit_intercept)


def _lost(exc):
    """Whether ``exc`` says that a worker or its data was lost (the product can be re-run)."""
    from distributed import KilledWorker
    from distributed.client import FutureCancelledError

    try:
        from distributed.comm.core import CommClosedError
    except ImportError:  # pragma: no cover
        CommClosedError = OSError
    import asyncio
    import concurrent.futures

    return isinstance(exc, (KilledWorker, FutureCancelledError, CommClosedError,
                            asyncio.CancelledError, concurrent.futures.CancelledError))


class DistributedNormalOperator:
    """``A`` of the l-scaled normal equations with X in row blocks on Dask workers.

    Parameters
    ----------
    X : dask array or list of sparse matrices / ndarrays
        All training rows, as a dask array chunked by rows only (one chunk along the
        columns; chunks may be scipy CSR matrices or ndarrays) or as a list of
        row blocks in row order.
    rows : ndarray of int
        Rows that carry the squared loss (global row indices; may repeat).
    laplacian_matvec : callable or None
        ``F ↦ L^p F`` for F of shape (n, c), applied on the client to decision values
        gathered there (:meth:`apply_to_decision`, and :meth:`matvec` without
        ``graph``). May be None when ``beta == 0`` or when ``graph`` is given
        (default: ``graph.laplacian_matvec``).
    alpha, beta : float
        ``γ_A l`` and ``γ_I s l``, as in :class:`~linlap.solvers.normal_operator.NormalOperator`.
    fit_intercept : bool, default=True
    mask : ndarray of shape (len(rows), q), optional
        Per-column weights of the loss rows (as in ``NormalOperator``).
    client : distributed.Client, optional
        Default: the current client (``distributed.get_client()``).
    retries : int, default=2
        How many times a product interrupted by a lost worker is re-run.
    n_blocks : int, optional
        A dask array X with more row chunks than this is rechunked to this many row
        blocks (default: the cluster's worker threads when X is placed). Lists of
        blocks are used as given.
    graph : fitted KNNGraph, optional
        The graph of the rows (``adjacency_``, ``degree_``, ``normalized``,
        ``power``). When given, :meth:`matvec` applies ``L^p`` on the workers: L is
        split by the row blocks of X (:func:`~linlap.distributed.halo.partition_laplacian`)
        and each power is one product per block with a halo exchange between the
        workers, so no vector of length n passes through the client.

    Attributes
    ----------
    shape : tuple
    n_matvec : int
    bounds : ndarray of int
        Row offsets of the blocks (``bounds[b]:bounds[b+1]`` are block b's rows).
    halo_sizes : ndarray of int or None
        With ``graph``: the halo rows each block receives per power of L.
    """

    def __init__(self, X, rows, laplacian_matvec, *, alpha, beta, fit_intercept=True,
                 mask=None, client=None, retries=2, graph=None, n_blocks=None):
        from distributed import get_client

        if n_blocks is not None and not (is_int(n_blocks) and n_blocks >= 1):
            raise ValueError(f"n_blocks must be a positive int or None, got {n_blocks!r}.")
        self.n_blocks = n_blocks

        self.client = check_client(client if client is not None else get_client())
        self.rows = np.asarray(rows, dtype=np.intp)
        if laplacian_matvec is None and graph is not None:
            laplacian_matvec = graph.laplacian_matvec
        self.laplacian_matvec = laplacian_matvec
        self.alpha = float(alpha)
        self.beta = _checked_beta(beta, laplacian_matvec)
        self.fit_intercept = bool(fit_intercept)
        if not (is_int(retries) and retries >= 0):
            raise ValueError(f"retries must be an integer >= 0, got {retries!r}.")
        self.retries = int(retries)
        self.mask = _checked_mask(mask, self.rows.size)
        self._blocks, sizes, d, self.dtype = self._place(X)
        self.bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
        self.n_samples = int(self.bounds[-1])
        self.n_features = int(d)
        self.set_rows(self.rows)
        self.shape = (self.n_features + self.fit_intercept,) * 2
        self.n_matvec = 0
        self._graph_blocks, self.halo_sizes, self.power = None, None, None
        if graph is not None:
            self._place_graph(graph)

    def set_rows(self, rows):
        """Set the loss rows (global indices, may repeat)."""
        rows = np.asarray(rows, dtype=np.intp).ravel()
        if rows.size and (rows.min() < 0 or rows.max() >= self.n_samples):
            raise ValueError(f"rows must be indices in [0, {self.n_samples}).")
        if self.mask is not None and self.mask.shape[0] != rows.size:
            raise ValueError("mask and rows disagree in length.")
        self.rows = rows
        self._unique_rows = np.unique(rows).size == rows.size
        # each block's loss rows: (local indices, their positions in rows)
        owner = np.searchsorted(self.bounds, rows, side="right") - 1
        self._block_rows = []
        for b, start in enumerate(self.bounds[:-1]):
            pos = np.flatnonzero(owner == b)
            self._block_rows.append((rows[pos] - start, pos))

    def with_loss(self, rows, mask=None, *, alpha, beta):
        """The operator with other loss rows, mask and weights, sharing the row blocks
        (no data moves; :meth:`release` the original only)."""
        new = copy.copy(self)
        new.mask = None
        new.set_rows(rows)
        new.mask = _checked_mask(mask, new.rows.size)
        new.alpha, new.beta = float(alpha), _checked_beta(beta, new.laplacian_matvec)
        new.n_matvec = 0
        return new

    # -- placing the blocks on the workers ---------------------------------------------
    def _place(self, X):
        client = self.client
        try:
            import dask.array as da
        except ImportError:  # pragma: no cover
            da = None
        if da is not None and isinstance(X, da.Array):
            check_numeric_dtype(X.dtype)
            n_blocks = self.n_blocks
            if n_blocks is None:
                n_blocks = max(sum(client.nthreads().values()), 1)
            X = blocks_for_workers(X, n_blocks)  # each block checked on its worker
            delayed = list(X.to_delayed()[:, 0])
            futures = client.compute(delayed)
            self._scattered = False
            sizes = [int(c) for c in X.chunks[0]]
            self._wait_checked(futures)
            return futures, sizes, X.shape[1], X.dtype
        if isinstance(X, (list, tuple)):
            if len(X) == 0:
                raise ValueError("X must hold at least one row block.")
            blocks = [check_row_block(blk, b) for b, blk in enumerate(X)]
            widths = {b.shape[1] for b in blocks}
            if len(widths) != 1:
                raise ValueError(f"every row block must have the same number of columns, "
                                 f"got {sorted(widths)}.")
            futures = client.scatter(blocks, hash=False)
            self._scattered = True
            return futures, [b.shape[0] for b in blocks], widths.pop(), blocks[0].dtype
        raise TypeError("X must be a dask array of row blocks or a list of row blocks, got "
                        f"{type(X).__name__}.")

    def _wait_checked(self, futures):
        """Wait for the placed blocks; a block refused by :func:`check_row_block` raises its
        error here (the other blocks are released)."""
        from distributed import wait

        with self.client.as_current():
            wait(futures)
        for f in futures:
            if f.status == "error":
                try:
                    f.result()
                finally:
                    for g in futures:
                        g.release()

    def _place_graph(self, graph):
        """Split L by the row blocks and place each part on the worker of its X block."""
        import warnings

        from distributed import wait

        n_graph = getattr(graph, "n_samples_fit_", None)
        if n_graph != self.n_samples:
            raise ValueError(f"The graph has {n_graph} nodes but X has {self.n_samples} rows.")
        parts = partition_laplacian(graph.adjacency_, graph.degree_, bool(graph.normalized),
                                    self.bounds)
        self.power = int(graph.power)
        self.halo_sizes = halo_sizes(parts)
        self._imports = [[o for o, _ in blk.imports] for blk in parts]
        with self.client.as_current():  # wait() finds the default client otherwise
            wait(self._blocks)
        who = self.client.who_has(self._blocks)
        futures = []
        with warnings.catch_warnings():
            # the block rides in its task (recomputable), a large graph warns about that
            warnings.filterwarnings("ignore", message=".*[Ll]arge graph.*")
            for blk, xf in zip(parts, self._blocks):
                workers = list(who.get(xf.key, ())) or None
                futures.append(self.client.submit(_place_block, blk, workers=workers,
                                                  allow_other_workers=True, pure=False))
        self._graph_blocks = futures

    # -- the distributed passes --------------------------------------------------------
    def _run(self, step, *args):
        """Run ``step(*args)`` again when a worker was lost on the way (``retries`` times)."""
        for attempt in range(self.retries + 1):
            try:
                return step(*args)
            except Exception as exc:  # noqa: BLE001 - only lost-worker errors are retried
                if not _lost(exc):
                    raise
                gone = [i for i, f in enumerate(self._blocks) if f.status in ("lost", "cancelled")]
                if attempt == self.retries or (gone and self._scattered):
                    raise RuntimeError(
                        f"A Dask worker was lost during a product with X ({type(exc).__name__}: "
                        f"{exc}); lost row blocks: {gone or 'none'}, attempts: {attempt + 1}. "
                        "Row blocks scattered from memory cannot be recomputed: give X as a "
                        "dask array built from its source (e.g. dask.delayed loaders) so that "
                        "Dask can recompute lost blocks.") from exc

    def _forward_step(self, Z):
        client = self.client
        # a small Z rides in each task; a large one is broadcast once to every worker
        Zf = client.scatter(Z, broadcast=True, hash=False) if Z.nbytes > SCATTER_BYTES else Z
        parts = [client.submit(_forward, b, Zf, self.fit_intercept, pure=False)
                 for b in self._blocks]
        return np.concatenate(client.gather(parts), axis=0)

    def _backward_step(self, U):
        client = self.client
        parts = [client.submit(_backward, b, U[s:e], self.fit_intercept, pure=False)
                 for b, s, e in zip(self._blocks, self.bounds[:-1], self.bounds[1:])]
        return self._reduce(parts)

    def _reduce(self, parts):
        """Sum the blocks' (m, c) results: a tree on the workers, the last two here."""
        client = self.client
        while len(parts) > 2:  # tree reduction on the workers ...
            merged = [client.submit(_add, parts[i], parts[i + 1], pure=False)
                      for i in range(0, len(parts) - 1, 2)]
            parts = merged + ([parts[-1]] if len(parts) % 2 else [])
        # ... and the last (at most two) partial sums added on the client
        return np.asarray(sum(client.gather(parts)), dtype=np.float64)

    def _product_step(self, Z, columns):
        """``A Z`` with the graph term on the workers (one halo exchange per power)."""
        client = self.client
        Zf = client.scatter(Z, broadcast=True, hash=False) if Z.nbytes > SCATTER_BYTES else Z
        F = [client.submit(_forward, b, Zf, self.fit_intercept, pure=False)
             for b in self._blocks]
        V = [None] * len(F)
        if self.beta != 0:
            G = self._graph_blocks
            V = F
            for _ in range(self.power):
                V = [client.submit(apply_block, G[b], V[b],
                                   *[client.submit(export_values, G[o], V[o], b, pure=False)
                                     for o in self._imports[b]], pure=False)
                     for b in range(len(G))]
        w = self._loss_weights(Z.shape[1], columns)
        parts = []
        for b, (local, pos) in enumerate(self._block_rows):
            parts.append(client.submit(_backward_with_graph, self._blocks[b], F[b], V[b],
                                       self.beta, local, None if w is None else w[pos],
                                       self._unique_rows, self.fit_intercept, pure=False))
        return self._reduce(parts)

    def forward(self, Z):
        """``F = X̃ Z`` (n, c) for Z of shape (m, c)."""
        Z = np.ascontiguousarray(Z, dtype=np.float64)
        return self._run(self._forward_step, Z)

    def backward(self, U):
        """``X̃ᵀ U`` (m, c) for U of shape (n, c)."""
        U = np.ascontiguousarray(U, dtype=np.float64)
        return self._run(self._backward_step, U)

    # -- the interface of NormalOperator used by the solvers ----------------------------
    def _check_block(self, Z):
        return check_block(Z, self.shape[0])

    def decision(self, Z):
        """``f = X w + b`` for every training row, per column of Z."""
        Z = self._check_block(Z)
        F = self.forward(Z.reshape(Z.shape[0], -1))
        return F[:, 0] if Z.ndim == 1 else F

    def _loss_weights(self, c, columns):
        return select_loss_weights(self.mask, c, columns)

    def _add_rows(self, U, V):
        """``U[rows] += V`` (repeated rows add up)."""
        if self._unique_rows:
            U[self.rows] += V
        else:
            np.add.at(U, self.rows, V)

    def _apply(self, F, Z2, columns):
        """``A Z`` given ``F = X̃ Z`` (the graph and loss rows here, Xᵀ on the workers)."""
        w = self._loss_weights(Z2.shape[1], columns)
        if self.beta != 0:
            U = np.asarray(self.laplacian_matvec(F), dtype=np.float64) * self.beta
        else:
            U = np.zeros_like(F)
        FR = F[self.rows]
        self._add_rows(U, FR if w is None else FR * w)
        res = self.backward(U)
        d = self.n_features
        res[:d] += self.alpha * Z2[:d]
        return res

    def apply_to_decision(self, F, Z, columns=None):
        """``A z`` given ``F = X̃ z`` already computed (saves the forward pass)."""
        Z = self._check_block(Z)
        Z2 = np.ascontiguousarray(Z.reshape(Z.shape[0], -1), dtype=np.float64)
        F2 = np.ascontiguousarray(np.asarray(F).reshape(self.n_samples, -1), dtype=np.float64)
        res = self._apply(F2, Z2, columns)
        return res[:, 0] if Z.ndim == 1 else res

    def matvec(self, Z, columns=None, out=None):
        """``A Z`` for Z of shape (m, c) or (m,) (``columns``: the mask columns used)."""
        Z = self._check_block(Z)
        Z2 = np.ascontiguousarray(Z.reshape(Z.shape[0], -1), dtype=np.float64)
        self._loss_weights(Z2.shape[1], columns)  # checks columns before any work
        self.n_matvec += 1
        if self._graph_blocks is not None:
            res = self._run(self._product_step, Z2, columns)
            res[:self.n_features] += self.alpha * Z2[:self.n_features]
        else:
            res = self._apply(self.forward(Z2), Z2, columns)
        if out is not None:
            out[...] = res.reshape(out.shape)
            return out
        return res[:, 0] if Z.ndim == 1 else res

    __call__ = matvec

    def rhs(self, T, columns=None):
        """``X̃_Rᵀ T`` for targets T of shape (len(rows), k), rows weighted by the mask."""
        T = np.asarray(T, dtype=np.float64)
        if T.ndim == 1:
            T = T[:, None]
        w = self._loss_weights(T.shape[1], columns)
        if w is not None:
            T = T * w
        U = np.zeros((self.n_samples, T.shape[1]))
        self._add_rows(U, T)
        return self.backward(U)

    def row_mean(self, rows):
        """``[mean of X over rows; 1]`` (the class-balance gradient ``c``)."""
        c = self.backward(unlabeled_weights(self.n_samples, rows)[:, None])[:, 0]
        if self.fit_intercept:
            c[-1] = 1.0
        return c

    def release(self):
        """Drop the client's references to the row blocks (the workers may free them)."""
        for f in self._blocks + (self._graph_blocks or []):
            f.release()
        self._blocks, self._graph_blocks = [], None


@contextlib.contextmanager
def graph_operator(X, graph, *, fit_intercept, client=None, retries=2, graph_on_workers=False,
                   n_blocks=None):
    """The operator of X's row blocks for the rows of ``graph`` (a fitted KNNGraph),
    placed on the workers for the ``with`` block and released after it
    (``graph_on_workers``: L split by the row blocks, applied with halo exchange;
    else applied on the client to the gathered ``f``)."""
    if not hasattr(graph, "laplacian_matvec") or not hasattr(graph, "scale_"):
        raise TypeError("graph must be a fitted KNNGraph (laplacian_matvec and scale_).")
    op = DistributedNormalOperator(X, np.empty(0, dtype=np.intp), graph.laplacian_matvec,
                                   alpha=0.0, beta=0.0, fit_intercept=fit_intercept,
                                   client=client, retries=retries, n_blocks=n_blocks)
    try:
        n_graph = getattr(graph, "n_samples_fit_", op.n_samples)
        if n_graph != op.n_samples:
            raise ValueError(f"The graph has {n_graph} nodes but X has {op.n_samples} rows.")
        if graph_on_workers:
            op._place_graph(graph)
        yield op
    finally:
        op.release()
