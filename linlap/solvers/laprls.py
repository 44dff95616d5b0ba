"""Linear Laplacian RLS by conjugate gradients through Xw (seed 004 §4.1)."""

import warnings

import numpy as np
import scipy.sparse as sp
from numba import njit, uintp
from sklearn.exceptions import ConvergenceWarning

from ..operators import NormalOperator, augmented_rows_T
from .cg import batched_cg

__all__ = ["laprls_linear", "laprls_grid", "LinearSolution", "unlabeled_mean"]


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


@njit(cache=True, nogil=True)
def _scoring_decisions(indptr, indices, data, Z, a, r_b, a_bb, active, F):
    """``F[s, v, j] = x_v · Z[s, :, j] + b_sj`` for CSR rows x_v and the running systems
    (``active[s, j]``), with the eliminated bias ``b_sj = (r_b[j] − a · Z[s, :, j]) / a_bb``."""
    q, d, k = Z.shape
    nv = indptr.shape[0] - 1
    for s in range(q):
        for j in range(k):
            if not active[s, j]:
                continue
            acc = 0.0
            for f in range(d):
                acc += a[f] * Z[s, f, j]
            b = (r_b[j] - acc) / a_bb
            for r in range(nv):
                acc = 0.0
                for t in range(uintp(indptr[r]), uintp(indptr[r + 1])):
                    acc += data[t] * Z[s, uintp(indices[t]), j]
                F[s, r, j] = acc + b


def laprls_grid(
    X,
    targets,
    labeled_rows,
    laplacian_matvec,
    *,
    gamma_A,
    gamma_I,
    scale,
    fit_intercept=True,
    tol=1e-6,
    max_iter=1000,
    monitor_rows=None,
    patience=None,
    warn=True,
):
    """Linear LapRLS for every (γ_I, γ_A) of a grid, one shifted CG run per γ_I.

    Minimises, for each ``γ_I = gamma_I[j]``, ``γ_A = gamma_A[i]`` and target column,
    the objective of :func:`laprls_linear`

        J(w, b) = (1/l) Σ_{i∈labeled} (y_i − f_i)² + γ_A ‖w‖² + γ_I s fᵀ L^p f,  f = X w + b.

    For a fixed γ_I the l-scaled normal equations are
    ``(X̃_lᵀX̃_l + β X̃ᵀL^pX̃ + γ_A l I_w) z = X̃_lᵀ y`` with ``β = γ_I s l``: every γ_A
    is a *shift* of one operator, so one CG recurrence serves the whole γ_A column of
    the grid (:func:`~linlap.solvers.shifted.shifted_cg`: one pass over X, p graph
    passes and one pass over Xᵀ per iteration for all the γ_A). The unpenalised bias,
    which the shift must not touch, is eliminated exactly: with ``a``, ``a_bb`` the
    bias column and corner of the operator, the shifted systems are on the Schur
    complement ``A_ww − a aᵀ / a_bb`` and ``b = (r_b − aᵀw) / a_bb``.

    Parameters
    ----------
    X : sparse matrix (CSR) or ndarray of shape (n, d)
    targets : ndarray of shape (l,) or (l, c)
    labeled_rows : ndarray of int, shape (l,)
    laplacian_matvec : callable
        ``F ↦ L^p F``.
    gamma_A : array-like of shape (q,)
        Values > 0.
    gamma_I : array-like of shape (g,)
        Values > 0.
    scale : float
        ``s`` (> 0).
    fit_intercept : bool, default=True
    tol, max_iter : float, int
        Relative residual of each shifted system, iterations of the recurrence.
    monitor_rows : sparse matrix or ndarray of shape (v, d), optional
        Rows whose predicted labels (the sign of f for one target column, the argmax
        over columns otherwise) drive early stopping with ``patience``.
    patience : int, optional
        Stop a (γ_I, γ_A) system (all its target columns), before ``tol``, once the
        labels of ``monitor_rows`` have stayed unchanged for ``patience`` consecutive
        iterations (model
        selection needs the labels, not the last digits; seed 003 §6.3 stops PCG on
        the same principle). None: every system runs to ``tol``.
    warn : bool, default=True
        ConvergenceWarning for systems stopped by ``max_iter``.

    Returns
    -------
    coef : ndarray of shape (g, q, c, d)
    intercept : ndarray of shape (g, q, c)
    info : ShiftedCGInfo
        Its arrays are indexed (q, g·c) (shift, then γ_I-major column); ``n_iter`` is
        the total over the γ_I runs (the number of products with the operator).
    """
    from .newton import check_rows_and_targets
    from .shifted import ShiftedCGInfo, shifted_cg

    T, rows = check_rows_and_targets(X.shape[0], targets, labeled_rows)
    gA = np.atleast_1d(np.asarray(gamma_A, dtype=np.float64))
    gI = np.atleast_1d(np.asarray(gamma_I, dtype=np.float64))
    if gA.ndim != 1 or gI.ndim != 1 or not gA.size or not gI.size:
        raise ValueError("gamma_A and gamma_I must be non-empty 1-D sequences.")
    if not (np.all(np.isfinite(gA)) and np.all(gA > 0) and np.all(np.isfinite(gI))
            and np.all(gI > 0)):
        raise ValueError("every gamma_A and gamma_I of the grid must be finite and > 0.")
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite number > 0, got {scale!r}.")
    if patience is not None and (int(patience) != patience or patience < 1):
        raise ValueError(f"patience must be None or an integer >= 1, got {patience!r}.")
    if patience is not None and monitor_rows is None:
        raise ValueError("patience needs monitor_rows.")
    l, c = T.shape
    n, d = X.shape
    g, q = gI.size, gA.size
    Xl = X[rows]
    rhs = augmented_rows_T(Xl, T, False)                 # X_lᵀ y  (d, c)
    if fit_intercept:
        Lp1 = np.asarray(laplacian_matvec(np.ones((n, 1))))[:, 0]
        XtLp1 = np.asarray(X.T @ Lp1).ravel()
        Xl1 = np.asarray(Xl.sum(axis=0)).ravel()
        r_b = T.sum(axis=0)                               # 1ᵀy  (c,)
    Xs = None
    if patience is not None:
        Xs = sp.csr_matrix(monitor_rows, dtype=np.float64) if sp.issparse(monitor_rows) \
            else np.ascontiguousarray(monitor_rows, dtype=np.float64)
        if Xs.ndim != 2 or Xs.shape[1] != d:
            raise ValueError(f"monitor_rows must have {d} columns, got shape {Xs.shape}.")

    coef = np.empty((g, q, c, d))
    intercept = np.zeros((g, q, c))
    n_iter_shift = np.zeros((q, g * c), dtype=int)
    residual = np.zeros((q, g * c))
    converged = np.zeros((q, g * c), dtype=bool)
    stopped = np.zeros((q, g * c), dtype=bool)
    n_iter = 0
    for j in range(g):
        beta = gI[j] * scale * l
        op = NormalOperator(X, rows, laplacian_matvec, alpha=0.0, beta=beta,
                            fit_intercept=False)
        if fit_intercept:
            a = (Xl1 + beta * XtLp1)[:, None]                 # (d, 1)
            a_bb = l + beta * Lp1.sum()
            B = rhs - a * (r_b / a_bb)

            def matvec(P, out=None, op=op, a=a, a_bb=a_bb):
                res = op.matvec(P, out=out)
                res -= a * ((a[:, 0] @ P) / a_bb)
                return res
        else:
            a, a_bb, B, matvec = np.zeros((d, 1)), 1.0, rhs, op.matvec
        rb = r_b if fit_intercept else np.zeros(c)
        monitor = None
        if Xs is not None:
            monitor = _StableLabels(Xs, a[:, 0], rb, a_bb, q, c, patience)
        Z, info = shifted_cg(matvec, B, gA * l, tol=tol, max_iter=max_iter, monitor=monitor,
                             warn=False, name="LapRLS grid CG")
        coef[j] = Z.transpose(0, 2, 1)
        if fit_intercept:
            intercept[j] = (rb - np.einsum("d,qdk->qk", a[:, 0], Z)) / a_bb
        cols = slice(j * c, (j + 1) * c)
        n_iter_shift[:, cols] = info.n_iter_shift
        residual[:, cols] = info.residual
        converged[:, cols] = info.converged
        stopped[:, cols] = info.stopped
        n_iter += info.n_iter
    running = ~(converged | stopped)
    if warn and running.any():
        warnings.warn(f"LapRLS grid CG did not converge: relative residual "
                      f"{residual[running].max():.3g} > tol={tol:g} after max_iter={max_iter} "
                      f"iterations; increase max_iter or loosen tol.", ConvergenceWarning,
                      stacklevel=2)
    return coef, intercept, ShiftedCGInfo(n_iter, n_iter_shift, residual, converged, stopped)


class _StableLabels:
    """Early stopping for :func:`laprls_grid`: stop a γ_A system once the predicted labels
    of the scoring rows have stayed the same for ``patience`` iterations."""

    def __init__(self, Xs, a, r_b, a_bb, q, c, patience):
        self.Xs, self.a, self.r_b, self.a_bb = Xs, a, r_b, a_bb
        self.c, self.patience = c, patience
        self.F = np.empty((q, Xs.shape[0], c))
        self.labels = None
        self.same = np.zeros(q, dtype=int)

    def __call__(self, t, Z, active):
        Xs, F = self.Xs, self.F
        if sp.issparse(Xs):
            _scoring_decisions(Xs.indptr, Xs.indices, Xs.data, Z, self.a, self.r_b,
                               self.a_bb, active, F)
        else:
            b = (self.r_b - np.einsum("d,qdk->qk", self.a, Z)) / self.a_bb
            F[...] = np.einsum("vd,qdk->qvk", Xs, Z) + b[:, None, :]
        # (stopped systems keep stale values: their counters no longer matter)
        labels = F[..., 0] > 0 if self.c == 1 else F.argmax(axis=2)       # (q, v)
        if self.labels is not None:
            same = (labels == self.labels).all(axis=1)
            self.same = np.where(same, self.same + 1, 0)
        self.labels = labels
        return np.repeat((self.same >= self.patience)[:, None], self.c, axis=1)
