"""Whole (γ_I, γ_A) grids of the linear LapRLS and LapSVM from shifted CG runs."""

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from .._numba.csr import scoring_decisions
from .._validation import check_int, check_real
from ._problem import LinearSolution, check_rows_and_targets, predict_index
from .lapsvm_newton import lapsvm_newton
from .normal_operator import NormalOperator, augmented_rows_T
from .shifted_cg import ShiftedCGInfo, shifted_cg

__all__ = ["laprls_grid", "lapsvm_grid"]


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
    the grid (:func:`~linlap.solvers.shifted_cg.shifted_cg`: one pass over X, p graph
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
    if patience is not None:
        check_int("patience", patience, 1)
    check_real("tol", tol, 0, low_open=True)
    check_int("max_iter", max_iter, 1)
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
                      f"{residual[running].max():.3g} > tol={tol:g} after "
                      f"{n_iter_shift[running].max()} iterations (max_iter={max_iter}); "
                      f"increase max_iter or loosen tol.", ConvergenceWarning, stacklevel=2)
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
            scoring_decisions(Xs.indptr, Xs.indices, Xs.data, Z, self.a, self.r_b,
                               self.a_bb, active, F)
        else:
            b = (self.r_b - np.einsum("d,qdk->qk", self.a, Z)) / self.a_bb
            F[...] = np.einsum("vd,qdk->qvk", Xs, Z) + b[:, None, :]
        # (stopped systems keep stale values: their counters no longer matter)
        labels = predict_index(F)                                            # (q, v)
        if self.labels is not None:
            same = (labels == self.labels).all(axis=1)
            self.same = np.where(same, self.same + 1, 0)
        self.labels = labels
        return np.repeat((self.same >= self.patience)[:, None], self.c, axis=1)


def lapsvm_grid(
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
    max_iter=50,
    cg_max_iter=1000,
    monitor_rows=None,
    patience=None,
):
    """Squared-hinge LapSVM for every (γ_I, γ_A) of a grid, from the LapRLS grid.

    Minimises, for each grid point and target column, the objective of
    :func:`lapsvm_newton`. For ±1 targets the squared hinge ``max(0, 1 − y f)²`` equals
    the squared loss ``(y − f)²`` wherever ``y f ≤ 1``, and both are C¹; so when the
    LapRLS minimiser has ``y_i f_i ≤ 1`` on every labeled row, the two objectives have
    the same (zero) gradient there and it is the LapSVM minimiser as well. The LapRLS
    solutions of the whole grid come from one shifted CG run per γ_I
    (:func:`linlap.solvers.grid.laprls_grid`, with its early stopping); only the
    points where a labeled row lies beyond the margin are solved by finite Newton,
    warm-started from their LapRLS point. (With ``patience``, a LapRLS point stopped
    early is kept as it stands when every labeled row has ``y f ≤ 1``: the argument
    above holds at the LapRLS minimiser, so such a point is as approximate as the
    early stop.)

    Parameters
    ----------
    X, targets, labeled_rows, laplacian_matvec, gamma_A, gamma_I, scale, fit_intercept
        As in :func:`~linlap.solvers.grid.laprls_grid` (targets ±1).
    tol : float, default=1e-6
        CG tolerance of the LapRLS grid and tolerance of the Newton refinements.
    max_iter, cg_max_iter : int
        Newton steps and CG iterations per step of the refinements (the grid's shifted
        CG runs at most ``cg_max_iter`` iterations).
    monitor_rows, patience
        Early stopping of the LapRLS grid (see ``laprls_grid``).

    Returns
    -------
    coef : ndarray of shape (g, q, c, d)
    intercept : ndarray of shape (g, q, c)
    newton_steps : ndarray of int, shape (g, q)
        Newton steps of each point's refinement (0: the LapRLS point was kept).
    info : ShiftedCGInfo
        Of the LapRLS grid, with ``converged`` (and ``stopped`` False) of the points
        finished by finite Newton set from their Newton solve.
    """
    T, rows = check_rows_and_targets(X.shape[0], targets, labeled_rows)
    if not np.all(np.abs(T) == 1):
        raise ValueError("targets of the SVM losses must be +1 or -1.")
    coef, intercept, info = laprls_grid(
        X, T, rows, laplacian_matvec, gamma_A=gamma_A, gamma_I=gamma_I, scale=scale,
        fit_intercept=fit_intercept, tol=tol, max_iter=cg_max_iter,
        monitor_rows=monitor_rows, patience=patience, warn=False)
    g, q, c = coef.shape[:3]
    gA = np.atleast_1d(np.asarray(gamma_A, dtype=np.float64))
    gI = np.atleast_1d(np.asarray(gamma_I, dtype=np.float64))
    Xl = X[rows]
    steps = np.zeros((g, q), dtype=int)
    unconverged = 0
    for j in range(g):
        for i in range(q):
            O = np.asarray(Xl @ coef[j, i].T) + intercept[j, i]
            if np.all(T * O <= 1.0):
                continue
            init = LinearSolution(coef[j, i], intercept[j, i], None, 0, 0.0, True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                sol = lapsvm_newton(X, T, rows, laplacian_matvec, gamma_A=gA[i],
                                    gamma_I=gI[j], scale=scale,
                                    fit_intercept=fit_intercept, tol=tol, max_iter=max_iter,
                                    cg_max_iter=cg_max_iter, init=init)
            coef[j, i], intercept[j, i] = sol.coef, sol.intercept
            steps[j, i] = sol.n_iter
            unconverged += not sol.converged
            # info describes the points returned: this one is Newton's
            cols = slice(j * c, (j + 1) * c)
            info.converged[i, cols] = sol.converged
            info.stopped[i, cols] = False
    if unconverged:  # one warning for the grid, not one per point
        warnings.warn(f"lapsvm_grid: {unconverged} of the {g * q} points' finite Newton "
                      f"refinements stopped before tol={tol:g} (max_iter={max_iter}, "
                      f"cg_max_iter={cg_max_iter}); increase them (through "
                      f"LapSVMClassifierCV: max_iter, or leave out the smallest gamma_A, whose "
                      f"CG is slowest).", ConvergenceWarning,
                      stacklevel=2)
    return coef, intercept, steps, info
