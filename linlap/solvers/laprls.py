"""Linear Laplacian RLS by conjugate gradients through Xw (seed 004 §4.1)."""

import numpy as np

from ..operators import NormalOperator
from .cg import batched_cg

__all__ = ["laprls_linear", "LinearSolution", "unlabeled_mean"]


class LinearSolution:
    """Result of a linear solver.

    Attributes
    ----------
    coef : ndarray of shape (n_columns, d)
    intercept : ndarray of shape (n_columns,)
    decision : ndarray of shape (n, n_columns)
        ``f = X w + b`` on every training row.
    n_iter : int
        Iterations of the solver (CG iterations for LapRLS).
    residual : float
        Final relative residual (largest over columns).
    converged : bool
    state : dict
        What a warm start needs (e.g. the constraint column's solution).
    history : list of float
        Per-iteration residuals (or objective values).
    """

    def __init__(self, coef, intercept, decision, n_iter, residual, converged, state=None,
                 history=None):
        self.coef = coef
        self.intercept = intercept
        self.decision = decision
        self.n_iter = n_iter
        self.residual = residual
        self.converged = converged
        self.state = state or {}
        self.history = history or []


def unlabeled_mean(X, unlabeled_rows, fit_intercept=True):
    """Gradient ``c`` of the class-balance constraint ``(1/u) Σ_{i∈U} f_i = r``.

    ``c = [mean of the unlabeled rows; 1]`` so that ``cᵀ z`` is the mean decision
    value over U. Computed as one sparse product, never densifying X.
    """
    u = len(unlabeled_rows)
    weights = np.full(u, 1.0 / u)
    c = np.asarray(X[unlabeled_rows].T @ weights).ravel()
    return np.append(c, 1.0) if fit_intercept else c


def laprls_linear(
    X,
    targets,
    labeled_rows,
    laplacian_matvec,
    *,
    gamma_A,
    gamma_I,
    scale,
    balance=None,
    unlabeled_rows=None,
    fit_intercept=True,
    tol=1e-6,
    max_iter=1000,
    init=None,
    callback=None,
):
    """Minimise the linear LapRLS objective for one or more target columns.

    For each column ``y`` of ``targets`` this minimises

        J(w, b) = (1/l) Σ_{i∈labeled} (y_i − f_i)² + γ_A ‖w‖² + γ_I s fᵀ L^p f,
        f = X w + b,

    with ``s = scale`` (linlap uses ``s = 1/trace(L)``), by CG on the (d+1)-square
    normal equations ``A z = X̃_lᵀ y`` (:class:`~linlap.operators.NormalOperator`),
    all columns in one batched solve.

    With ``balance`` (the class-balance constraint, DESIGN.md §2) the minimiser is
    taken subject to ``(1/u) Σ_{i∈U} f_i = r`` per column: solve ``A z₁ = c`` as one
    more column of the same solve and set ``z = z₀ + ν z₁`` with
    ``ν = (r − cᵀz₀)/(cᵀz₁)``.

    Parameters
    ----------
    X : sparse matrix (CSR) or ndarray of shape (n, d)
    targets : ndarray of shape (l, k)
        Targets of the labeled rows (±1 for classification).
    labeled_rows : ndarray of int, shape (l,)
    laplacian_matvec : callable
        ``F ↦ L^p F`` for F of shape (n, k).
    gamma_A, gamma_I : float
        Ambient and intrinsic regularisation weights (≥ 0).
    scale : float
        ``s``, the normalisation of the graph term.
    balance : ndarray of shape (k,), optional
        Wanted mean decision value ``r`` over the unlabeled rows, per column.
    unlabeled_rows : ndarray of int, optional
        Required with ``balance``.
    fit_intercept : bool, default=True
        Fit an unpenalised bias.
    tol, max_iter : float, int
        CG stopping rule (relative residual) and iteration cap.
    init : LinearSolution, optional
        Previous solution to start from (warm start).
    callback : callable, optional
        ``callback(iteration, residual)`` after each CG iteration.

    Returns
    -------
    LinearSolution
    """
    targets = np.asarray(targets, dtype=np.float64)
    if targets.ndim == 1:
        targets = targets[:, None]
    labeled_rows = np.asarray(labeled_rows, dtype=np.intp)
    l, k = targets.shape
    op = NormalOperator(
        X, labeled_rows, laplacian_matvec,
        alpha=gamma_A * l, beta=gamma_I * scale * l, fit_intercept=fit_intercept,
    )
    B = op.rhs(targets)
    if balance is not None:
        c = unlabeled_mean(X, unlabeled_rows, fit_intercept)
        B = np.hstack([B, c[:, None]])

    Z0 = None
    if init is not None:
        Z0 = init.state.get("Z")
        if Z0 is not None and Z0.shape != B.shape:
            Z0 = None
    Z, info = batched_cg(op.matvec, B, Z0, tol=tol, max_iter=max_iter, callback=callback,
                         name="LapRLS conjugate gradients")
    state = {"Z": Z.copy()}
    if balance is not None:
        Z0_, z1 = Z[:, :k], Z[:, k]
        nu = (np.asarray(balance, float) - c @ Z0_) / (c @ z1)
        Z = Z0_ + np.outer(z1, nu)
    F = op.decision(Z)
    d = X.shape[1]
    coef = Z[:d].T.copy()
    intercept = Z[d].copy() if fit_intercept else np.zeros(k)
    return LinearSolution(coef, intercept, F, info.n_iter, float(info.residual.max()),
                          bool(info.converged.all()), state, info.history)
