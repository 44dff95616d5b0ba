"""Linear LapRLS with X in row blocks on Dask workers."""

from ..solvers.laprls import laprls_linear
from .operator import graph_operator

__all__ = ["laprls_fit"]


def laprls_fit(X, targets, labeled_rows, graph, *, gamma_A, gamma_I, balance=None,
               unlabeled_rows=None, fit_intercept=True, tol=1e-6, max_iter=1000, init=None,
               callback=None, client=None, retries=2, n_blocks=None, graph_on_workers=False):
    """Minimise the linear LapRLS objective with X in row blocks on a Dask cluster.

    The problem and the method are those of :func:`linlap.solvers.laprls_linear`:
    for each column ``y`` of ``targets``

        J(w, b) = (1/l) Σ_{i∈labeled} (y_i − f_i)² + γ_A ‖w‖² + γ_I s fᵀ L^p f,
        f = X w + b,   s = graph.scale_ (= 1/trace(L)),

    minimised by batched CG on the normal equations ``A z = X̃_lᵀ y`` (all columns in
    one solve; with ``balance`` one more column and ``z = z₀ + ν z₁``). Each CG product
    runs X·w and Xᵀ(·) per row block on the workers and the graph's L^p on the
    client or, with ``graph_on_workers``, on the workers
    (:class:`~linlap.distributed.operator.DistributedNormalOperator`); CG's vectors of
    length d + 1 stay on the client. On the same graph the result equals
    the single-machine solve up to round-off in the summation order.

    Parameters
    ----------
    X : dask array or list of sparse matrices / ndarrays, shape (n, d)
        All training rows, chunked by rows (a dask array with one chunk along the
        columns, e.g. of scipy CSR chunks), or a list of row blocks in row order
        (scattered to the workers).
    targets : ndarray of shape (l,) or (l, k)
        Targets of the labeled rows (±1 for classification).
    labeled_rows : ndarray of int, shape (l,)
        Global row indices of the labeled rows.
    graph : fitted KNNGraph
        The graph over all n rows, in the row order of X (anything with
        ``laplacian_matvec`` and ``scale_`` works). Applied on the client.
    gamma_A, gamma_I : float
        Ambient and intrinsic regularisation weights (≥ 0, not both 0).
    balance : ndarray of shape (k,), optional
        Wanted mean decision value over ``unlabeled_rows`` per column.
    unlabeled_rows : ndarray of int, optional
        Required with ``balance``.
    fit_intercept : bool, default=True
        Fit an unpenalised bias.
    tol, max_iter : float, int
        CG stopping rule (relative residual ``‖b − A z‖ / ‖b‖`` below tol, per column)
        and iteration cap.
    init : LinearSolution, optional
        Warm start (its ``state['Z']``).
    callback : callable, optional
        ``callback(iteration, residual)`` after each CG iteration.
    client : distributed.Client, optional
        Default: the current client.
    retries : int, default=2
        Re-runs of a product interrupted by a lost worker.
    n_blocks : int, optional
        Row blocks of a dask array X (rechunked when it has more; default: the
        cluster's worker threads).
    graph_on_workers : bool, default=False
        Apply L^p in each CG product on the workers, L split by the row blocks, with
        a halo exchange per power; False: on the client, to the gathered f (faster
        on few workers, see :mod:`linlap.distributed.operator`).

    Returns
    -------
    LinearSolution
        ``decision`` holds ``f`` for all n rows (gathered on the client).
    """
    with graph_operator(X, graph, fit_intercept=fit_intercept, client=client,
                        retries=retries, n_blocks=n_blocks,
                        graph_on_workers=graph_on_workers) as op:
        return laprls_linear(
            None, targets, labeled_rows, graph.laplacian_matvec, gamma_A=gamma_A,
            gamma_I=gamma_I, scale=float(graph.scale_), balance=balance,
            unlabeled_rows=unlabeled_rows, fit_intercept=fit_intercept, tol=tol,
            max_iter=max_iter, init=init, callback=callback, base_operator=op)
