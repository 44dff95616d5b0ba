"""Linear LapRLS with X in row blocks on Dask workers."""

import numpy as np

from ..solvers._problem import LinearSolution, check_rows_and_targets, check_weights
from ..solvers.cg import batched_cg
from .operator import DistributedNormalOperator

__all__ = ["laprls_fit"]


def laprls_fit(X, targets, labeled_rows, graph, *, gamma_A, gamma_I, balance=None,
               unlabeled_rows=None, fit_intercept=True, tol=1e-6, max_iter=1000, init=None,
               callback=None, client=None, retries=2):
    """Minimise the linear LapRLS objective with X in row blocks on a Dask cluster.

    The problem and the method are those of :func:`linlap.solvers.laprls_linear`:
    for each column ``y`` of ``targets``

        J(w, b) = (1/l) Σ_{i∈labeled} (y_i − f_i)² + γ_A ‖w‖² + γ_I s fᵀ L^p f,
        f = X w + b,   s = graph.scale_ (= 1/trace(L)),

    minimised by batched CG on the normal equations ``A z = X̃_lᵀ y`` (all columns in
    one solve; with ``balance`` one more column and ``z = z₀ + ν z₁``). Only the
    products with X run on the workers
    (:class:`~linlap.distributed.operator.DistributedNormalOperator`); CG's vectors of
    length d + 1 and the graph stay on the client. On the same graph the result equals
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

    Returns
    -------
    LinearSolution
        ``decision`` holds ``f`` for all n rows (gathered on the client).
    """
    if not hasattr(graph, "laplacian_matvec") or not hasattr(graph, "scale_"):
        raise TypeError("graph must be a fitted KNNGraph (laplacian_matvec and scale_).")
    scale = float(graph.scale_)
    check_weights(gamma_A, gamma_I, scale)
    if gamma_A == 0 and gamma_I == 0:
        raise ValueError("gamma_A and gamma_I cannot both be 0.")
    op = DistributedNormalOperator(
        X, np.empty(0, dtype=np.intp), graph.laplacian_matvec if gamma_I > 0 else None,
        alpha=0.0, beta=0.0, fit_intercept=fit_intercept, client=client, retries=retries)
    try:
        n = op.n_samples
        n_graph = getattr(graph, "n_samples_fit_", n)
        if n_graph != n:
            raise ValueError(f"The graph has {n_graph} nodes but X has {n} rows.")
        T, rows = check_rows_and_targets(n, targets, labeled_rows)
        if not np.all(np.isfinite(T)):
            raise ValueError("targets must be finite.")
        l, k = T.shape
        op.set_rows(rows)
        op.alpha, op.beta = gamma_A * l, gamma_I * scale * l
        B = op.rhs(T)
        c = None
        if balance is not None:
            if unlabeled_rows is None or len(unlabeled_rows) == 0:
                raise ValueError("balance needs a non-empty unlabeled_rows.")
            c = op.row_mean(unlabeled_rows)
            B = np.hstack([B, c[:, None]])
        Z0 = None
        if init is not None:
            Z0 = init.state.get("Z")
            if Z0 is not None and Z0.shape != B.shape:
                Z0 = None
        Z, info = batched_cg(op.matvec, B, Z0, tol=tol, max_iter=max_iter, callback=callback,
                             name="LapRLS conjugate gradients (Dask)")
        state = {"Z": Z.copy(), "n_matvec": op.n_matvec}
        if balance is not None:
            Z0_, z1 = Z[:, :k], Z[:, k]
            nu = (np.asarray(balance, float) - c @ Z0_) / (c @ z1)
            Z = Z0_ + np.outer(z1, nu)
        F = op.decision(Z)
    finally:
        op.release()
    d = op.n_features
    coef = Z[:d].T.copy()
    intercept = Z[d].copy() if fit_intercept else np.zeros(k)
    return LinearSolution(coef, intercept, F, info.n_iter, float(info.residual.max()),
                          bool(info.converged.all()), state, info.history)
