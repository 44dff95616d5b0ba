"""Linear LapSVM (finite Newton) with X in row blocks on Dask workers."""

from ..solvers.lapsvm_newton import lapsvm_newton
from .operator import graph_operator

__all__ = ["lapsvm_fit"]


def lapsvm_fit(X, targets, labeled_rows, graph, *, gamma_A, gamma_I, balance=None,
               unlabeled_rows=None, fit_intercept=True, tol=1e-6, max_iter=50,
               cg_max_iter=1000, init=None, callback=None, row_weights=None, client=None,
               retries=2, n_blocks=None, graph_on_workers=False):
    """Minimise the linear LapSVM (squared hinge) objective with X on a Dask cluster.

    The problem, the method and the stopping rules are those of
    :func:`linlap.solvers.lapsvm_newton`: for each ±1 column ``y`` of ``targets``

        J = (1/l) Σ_{i labeled} max(0, 1 − y_i f_i)² + γ_A ‖w‖² + γ_I s fᵀ L^p f,
        f = X w + b,   s = graph.scale_,

    by the L2-SVM modified finite Newton method; every Newton step's CG runs on the
    client with its products with X on the workers
    (:class:`~linlap.distributed.operator.DistributedNormalOperator`, one set of row
    blocks shared by all steps; the graph's L^p on the client or, with
    ``graph_on_workers``, on the workers); the line searches, once per Newton step,
    apply the graph on the client to the gathered f. On the same graph the result equals the single-machine solve up to
    round-off.

    Parameters
    ----------
    X : dask array or list of sparse matrices / ndarrays, shape (n, d)
        As in :func:`linlap.distributed.laprls_fit`.
    targets : ndarray of shape (l,) or (l, k)
        ±1 targets of the labeled rows.
    labeled_rows : ndarray of int
    graph : fitted KNNGraph
        Over all n rows, in the row order of X.
    gamma_A, gamma_I, balance, unlabeled_rows, fit_intercept : see lapsvm_newton
    tol, max_iter, cg_max_iter, init, callback, row_weights : see lapsvm_newton
        As in :func:`linlap.solvers.lapsvm_newton`.
    client : distributed.Client, optional
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
    """
    with graph_operator(X, graph, fit_intercept=fit_intercept, client=client,
                        retries=retries, n_blocks=n_blocks,
                        graph_on_workers=graph_on_workers) as op:
        return lapsvm_newton(
            None, targets, labeled_rows, graph.laplacian_matvec, gamma_A=gamma_A,
            gamma_I=gamma_I, scale=float(graph.scale_), balance=balance,
            unlabeled_rows=unlabeled_rows, fit_intercept=fit_intercept, tol=tol,
            max_iter=max_iter, cg_max_iter=cg_max_iter, init=init, callback=callback,
            row_weights=row_weights, base_operator=op)
