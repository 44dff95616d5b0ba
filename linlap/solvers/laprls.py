"""Linear Laplacian RLS by conjugate gradients through Xw (seed 004 §4.1)."""

import numpy as np

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
    """Linear LapRLS for every (γ_I, γ_A) of a grid from one shifted CG run.

    Minimises, for each ``γ_I = gamma_I[j]``, ``γ_A = gamma_A[i]`` and target column,
    the objective of :func:`laprls_linear`

        J(w, b) = (1/l) Σ_{i∈labeled} (y_i − f_i)² + γ_A ‖w‖² + γ_I s fᵀ L^p f,  f = X w + b.

    Dividing the l-scaled normal equations by ``β_j = γ_I s l`` gives, per column,
    ``((1/β_j) X̃_lᵀX̃_l + X̃ᵀL^pX̃ + σ_{ij} I_w) z = X̃_lᵀ y / β_j`` with
    ``σ_{ij} = γ_A l / β_j``: every γ_A is a *shift* of one operator, and one CG
    recurrence per γ_I serves them all (:func:`~linlap.solvers.shifted.shifted_cg`);
    the columns of all γ_I share each pass over X and the graph (the loss rows are
    weighted 1/β_j per column). The unpenalised bias, which the shift must not touch,
    is eliminated exactly: with ``a_j``, ``a_bb,j`` the bias column and corner of the
    operator, the shifted systems are on the Schur complement
    ``A_ww − a_j a_jᵀ / a_bb,j`` and ``b = (r_b − a_jᵀ w) / a_bb,j``.

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
        Stop a (γ_I, γ_A) system, before ``tol``, once the labels of ``monitor_rows``
        have stayed unchanged for ``patience`` consecutive iterations (model
        selection needs the labels, not the last digits; seed 003 §6.3 stops PCG on
        the same principle). None: every system runs to ``tol``.
    warn : bool, default=True
        ConvergenceWarning for systems stopped by ``max_iter``.

    Returns
    -------
    coef : ndarray of shape (g, q, c, d)
    intercept : ndarray of shape (g, q, c)
    info : ShiftedCGInfo
        Its arrays are indexed (q, g·c) (shift, then γ_I-major column).
    """
    from .newton import check_rows_and_targets
    from .shifted import shifted_cg

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
    d = X.shape[1]
    g, q = gI.size, gA.size
    k = g * c
    beta = gI * scale * l                          # (g,)
    col_beta = np.repeat(beta, c)                  # (k,) γ_I-major
    mask = np.repeat((1.0 / col_beta)[None], l, axis=0)
    op = NormalOperator(X, rows, laplacian_matvec, alpha=0.0, beta=1.0,
                        fit_intercept=False, mask=mask)
    Yk = np.tile(T, (1, g))                        # (l, k)
    Xl = X[rows]
    B = augmented_rows_T(Xl, Yk, False) / col_beta   # X_lᵀ y / β_j
    if fit_intercept:
        n = X.shape[0]
        Lp1 = np.asarray(laplacian_matvec(np.ones((n, 1))))[:, 0]
        a = (np.asarray(X.T @ Lp1).ravel()[:, None]
             + np.asarray(Xl.sum(axis=0)).ravel()[:, None] / col_beta)   # (d, k)
        a_bb = Lp1.sum() + l / col_beta                                    # (k,)
        r_b = Yk.sum(axis=0) / col_beta
        B = B - a * (r_b / a_bb)

        def matvec(P, columns, out=None):
            res = op.matvec(P, columns=columns, out=out)
            ac = a if columns.size == k else a[:, columns]
            res -= ac * (np.einsum("ij,ij->j", ac, P) / a_bb[columns])
            return res
    else:
        def matvec(P, columns, out=None):
            return op.matvec(P, columns=columns, out=out)

    def intercepts(Z):
        """(q, k) biases of the (q, d, k) solutions."""
        if not fit_intercept:
            return np.zeros((q, k))
        return (r_b[None] - np.einsum("dk,qdk->qk", a, Z)) / a_bb[None]

    monitor = None
    if patience is not None:
        from .._sparse_ops import csr_matmat
        from ..operators import _is_fast_csr

        Xs = monitor_rows
        fast = _is_fast_csr(Xs)
        Fbuf = np.empty((q, Xs.shape[0], k))
        state = {"labels": None, "same": np.zeros((q, g), dtype=int)}

        def monitor(t, Z, active):
            b = intercepts(Z)
            for i in range(q):      # F = Xs Z_i + b_i for every shift
                if fast:
                    csr_matmat(Xs.indptr, Xs.indices, Xs.data, Z[i], b[i], True, Fbuf[i],
                               work=Xs.nnz * k)
                else:
                    Fbuf[i] = np.asarray(Xs @ Z[i]) + b[i]
            F = Fbuf.reshape(q, -1, g, c)          # (q, v, g, c)
            labels = F[..., 0] > 0 if c == 1 else F.argmax(axis=3)
            prev = state["labels"]
            if prev is not None:
                same = (labels == prev).all(axis=1)                       # (q, g)
                state["same"] = np.where(same, state["same"] + 1, 0)
            state["labels"] = labels
            return np.repeat(state["same"] >= patience, c, axis=1)

    shifts = gA[:, None] * l / col_beta[None]      # (q, k)
    Z, info = shifted_cg(matvec, B, shifts, tol=tol, max_iter=max_iter, monitor=monitor,
                         column_matvec=True, warn=warn, name="LapRLS grid CG")
    b = intercepts(Z)
    coef = Z.reshape(q, d, g, c).transpose(2, 0, 3, 1)
    return coef, b.reshape(q, g, c).transpose(1, 0, 2), info
