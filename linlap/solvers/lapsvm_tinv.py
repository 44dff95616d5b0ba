"""Linear Laplacian SVM by T⁻¹ preprocessing (seed 004 §4.2), for small d.

With ``T₀² = I + ρ XᵀL^pX`` (``ρ = γ_I s / γ_A``) the regulariser of
the linear LapSVM is ``γ_A wᵀT₀²w`` plus the terms of the bias. Cholesky
``T₀² = RᵀR`` once (dense d × d), map the l labeled rows by ``x̂ = R^{-T}x``, solve a
standard SVM on those l rows, map back ``w = R^{-1}w̃``.

The bias. ``f = Xw + b`` on all n rows, so the graph term holds the bias too:

    γ_I s fᵀL^pf = γ_A ( wᵀ(T₀² − I)w + 2 b mᵀw + q b² ),  m = ρ XᵀL^p1,  q = ρ 1ᵀL^p1.

The change of variables ``w = w′ − b u`` with ``u = T₀^{-2} m`` removes the cross
term: the regulariser becomes ``γ_A (‖R w′‖² + q_S b²)`` with the Schur complement
``q_S = q − mᵀu ≥ 0``, and ``f_i = x̂_iᵀ w̃ + a_i b`` with ``w̃ = R w′`` and
``a_i = 1 − x_iᵀu``. So the l-row problem is

    min_{w̃, b}  (1/l) Σ_i V(y_i, x̂_iᵀw̃ + a_i b) + γ_A (‖w̃‖² + q_S b²),

exactly equivalent to the original one. When ``L^p 1 = 0`` (the unnormalised
Laplacian) ``m = 0``, ``u = 0``, ``a = 1``, ``q_S = 0``: the usual SVM with an
unpenalised bias. For the normalised Laplacian the bias is penalised by ``q_S``.
"""

import warnings

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC, LinearSVC

from .._validation import is_finite_number
from ._problem import LinearSolution, check_problem, laplacian_of_ones
from .lapsvm_newton import squared_hinge_line_search

__all__ = ["TinvFactor", "tinv_factor", "lapsvm_tinv"]

class TinvFactor:
    """The reusable dense factor of the T⁻¹ preprocessing.

    It depends on X, L^p, ``fit_intercept`` and only the ratio
    ``ρ = γ_I s / γ_A``, so one factor serves every target column and every
    ``γ_A`` at a fixed ratio (the weight of the loss relative to the regulariser).

    Attributes
    ----------
    R : ndarray of shape (d, d)
        Upper Cholesky factor, ``RᵀR = T₀² = I + ρ XᵀL^pX``.
    u : ndarray of shape (d,)
        ``T₀^{-2} m`` of the bias change of variables (zero when bias-free).
    q : float
        Schur complement ``q_S``: the bias penalty ``γ_A q_S b²`` of the l-row SVM.
    bias_free : bool
        ``L^p 1 = 0`` (up to round-off): the bias is unpenalised and ``u = 0``.
    ratio : float
        ``ρ = γ_I s / γ_A`` the factor was built for.
    fit_intercept : bool
    n_samples, n_features : int
    nbytes : int
        Memory of the dense factor.
    """

    def __init__(self, R, u, q, bias_free, ratio, fit_intercept, n_samples):
        self.R = R
        self.u = u
        self.q = q
        self.bias_free = bias_free
        self.ratio = ratio
        self.fit_intercept = fit_intercept
        self.n_samples = n_samples
        self.n_features = R.shape[0]
        self.nbytes = R.nbytes

    def __repr__(self):
        return (f"TinvFactor(d={self.n_features}, ratio={self.ratio:.3g}, "
                f"bias_free={self.bias_free}, q={self.q:.3g})")


def _check_tinv_weights(gamma_A, gamma_I, scale):
    if not (is_finite_number(gamma_A) and gamma_A > 0):
        raise ValueError(f"The T⁻¹ solver needs gamma_A > 0 (T² = γ_A I + γ_I s XᵀL^pX must be "
                         f"positive definite), got {gamma_A!r}; use solver='newton' (lapsvm_newton) otherwise.")
    if not (is_finite_number(gamma_I) and gamma_I >= 0):
        raise ValueError(f"gamma_I must be a finite number >= 0, got {gamma_I!r}.")
    if gamma_I > 0 and not (is_finite_number(scale) and scale >= 0):
        raise ValueError(f"scale must be a finite number >= 0, got {scale!r}.")
    return gamma_I * scale / gamma_A if gamma_I > 0 else 0.0


def tinv_factor(X, laplacian_matvec, *, gamma_A, gamma_I, scale, fit_intercept=True,
                memory_budget=2**30):
    """Build the dense factor of ``T₀² = I + (γ_I s / γ_A) XᵀL^pX`` and the bias terms.

    ``XᵀL^pX`` is formed column block by column block (``Xᵀ (L^p X[:, J])``), never
    densifying more than a block of X; the Cholesky factor overwrites it in place.

    Parameters
    ----------
    X : sparse matrix or ndarray of shape (n, d)
        All training rows.
    laplacian_matvec : callable or None
        ``F ↦ L^p F``; may be None when ``gamma_I == 0``.
    gamma_A : float
        Must be > 0.
    gamma_I, scale : float
        Only ``ρ = γ_I s / γ_A`` matters.
    fit_intercept : bool, default=True
    memory_budget : int, default=2**30
        Bytes allowed for the dense arrays (the d × d factor and one column's
        workspace). Over it the function refuses.

    Returns
    -------
    TinvFactor

    Raises
    ------
    ValueError
        When ``8 d²`` bytes (plus one column of workspace) exceed ``memory_budget``.
    """
    ratio = _check_tinv_weights(gamma_A, gamma_I, scale)
    n, d = X.shape
    per_column = 8 * (3 * n + d)  # a dense column of X, of L^p X (and a temporary), of XᵀL^pX
    needed = 8 * d * d + per_column
    if needed > memory_budget:
        raise ValueError(
            f"T⁻¹ preprocessing needs a dense d × d factor: d = {d} features take "
            f"{8 * d * d} bytes ({8 * d * d / 2**20:.1f} MiB; {needed} bytes with workspace), "
            f"over memory_budget = {memory_budget} bytes. Use solver='newton' (lapsvm_newton: "
            f"finite Newton through X, no d × d matrix) or reduce the features."
        )
    M = np.zeros((d, d))
    u, q, bias_free = np.zeros(d), 0.0, True
    if ratio > 0:
        if not callable(laplacian_matvec):
            raise ValueError("laplacian_matvec must be a callable F -> L^p F when gamma_I > 0.")
        block = int(max(1, min(d, (memory_budget - 8 * d * d) // per_column)))
        Xc = X.tocsc() if sp.issparse(X) else X  # cheap column slices
        for start in range(0, d, block):
            J = slice(start, min(d, start + block))
            Xb = Xc[:, J]
            Xb = Xb.toarray() if sp.issparse(Xb) else np.asarray(Xb, dtype=np.float64)
            M[:, J] = np.asarray(X.T @ laplacian_matvec(Xb))
        M *= ratio
        if fit_intercept:
            Lp1, bias_free = laplacian_of_ones(laplacian_matvec, n)
    M[np.diag_indices(d)] += 1.0
    # LAPACK reads only the upper triangle, so the blockwise round-off asymmetry of M
    # does not matter; overwrite M to keep one d × d array.
    try:
        R = sla.cholesky(M, lower=False, overwrite_a=True, check_finite=False)
    except np.linalg.LinAlgError:
        # I + ratio·XᵀL^pX ⪰ I in exact arithmetic: only round-off in XᵀL^pX (a high
        # power of a Laplacian with large eigenvalues) makes the factorisation fail
        raise ValueError(
            "T⁻¹ preprocessing: T² = I + (gamma_I/gamma_A)·XᵀL^pX is not numerically "
            "positive definite (round-off in XᵀL^pX: a high power of the Laplacian, "
            "e.g. an unnormalised one, has a spectrum too wide for double precision). "
            "Use solver='newton', a normalised graph or a smaller power, or a smaller "
            "gamma_I/gamma_A.") from None
    if fit_intercept and not bias_free:
        m = ratio * np.asarray(X.T @ Lp1).ravel()
        q0 = ratio * Lp1.sum()
        u = sla.cho_solve((R, False), m)
        q = q0 - m @ u
        if q <= 1e-12 * abs(q0):  # PSD ⇒ q_S = 0 only if L^p 1 = 0: round-off, bias free
            u, q, bias_free = np.zeros(d), 0.0, True
    return TinvFactor(R, u, float(q), bool(bias_free), ratio, bool(fit_intercept), n)


def _row_space(Xh):
    """``(Z, B)`` with ``X̂ = Z Bᵀ``, B (d × r) orthonormal, r = min(l, d); B None means I.

    The l-row minimiser lies in the row space of X̂, so ``w̃ = B c`` with ``‖w̃‖ = ‖c‖`` and
    ``f = Z c``: the problem in c has r ≤ l unknowns. The QR of X̂ᵀ (l < d) is backward
    stable and does not square X̂ as its Gram matrix ``X̂X̂ᵀ`` would.
    """
    l, d = Xh.shape
    if l >= d:
        return Xh, None
    B, Rq = np.linalg.qr(Xh.T)
    return Rq.T, B


def _l2svm_objective(y, o, c, b, lam, q):
    xi = np.maximum(0.0, 1.0 - y * o)
    return xi @ xi / y.size + lam * (c @ c + q * b * b)


def _l2svm(Z, y, a, lam, q, tol, max_iter):
    """Exact minimiser of the l-row squared-hinge SVM in the row space of X̂.

    Minimises ``(1/l) Σ max(0, 1 − y_i f_i)² + lam (‖c‖² + q b²)`` with ``f = Z c + a b``
    (``w̃ = B c``, see :func:`_row_space`). Finite Newton: the Newton point for the active
    set I is the ridge least-squares solution

        min ‖Z_I c + a_I b − y_I‖² + l·lam (‖c‖² + q b²),

    solved by QR of the stacked matrix ``[[Z_I, a_I], [√(l·lam) I, 0], [0, √(l·lam·q)]]``
    (b dropped without intercept). That matrix has full column rank (lam > 0; the bias
    column holds a_I or √q), and QR keeps its condition where the normal equations — or
    the l × l system of ``X̂X̂ᵀ + l·lam I`` — square it: with ‖X‖ ~ 10⁴ and lam ~ 10⁻⁸
    the squared system is singular in float64. A Newton point consistent with its own
    active set (to ``tol``) is the minimiser; otherwise an exact line search. The best
    iterate is returned, so the result is never worse than the start (c, b) = 0.

    Returns c (r,), b, Newton steps, converged, relative gradient norm.
    """
    l, r = Z.shape
    c, b, o = np.zeros(r), 0.0, np.zeros(l)
    mu = l * lam
    best = (_l2svm_objective(y, o, c, b, lam, q), c, b, o)
    converged = False
    for it in range(1, max_iter + 1):
        I = np.flatnonzero(y * o < 1)
        if a is None or (I.size == 0 and q == 0):
            # (no active row and a free bias: the Newton point keeps b, with c = 0)
            M = np.vstack([Z[I], np.sqrt(mu) * np.eye(r)])
            c_bar = _least_squares(M, np.r_[y[I], np.zeros(r)])
            b_bar = b
        else:
            M = np.zeros((I.size + r + 1, r + 1))
            M[:I.size, :r], M[:I.size, r] = Z[I], a[I]
            M[I.size:I.size + r, :r] = np.sqrt(mu) * np.eye(r)
            M[-1, r] = np.sqrt(mu * q)
            sol = _least_squares(M, np.r_[y[I], np.zeros(r + 1)])
            c_bar, b_bar = sol[:r], sol[r]
        o_bar = Z @ c_bar + (0.0 if a is None else a * b_bar)
        yo_bar = y * o_bar
        inside = np.zeros(l, dtype=bool)
        inside[I] = True
        if np.all(yo_bar[inside] <= 1 + tol) and np.all(yo_bar[~inside] >= 1 - tol):
            c, b, o = c_bar, b_bar, o_bar
            converged = True
        else:
            d_c, d_b = c_bar - c, b_bar - b
            slope = 2 * lam * (c @ d_c + q * b * d_b)
            curv = lam * (d_c @ d_c + q * d_b * d_b)
            delta = squared_hinge_line_search(y, o, o_bar, slope, curv, l)
            c, b, o = c + delta * d_c, b + delta * d_b, o + delta * (o_bar - o)
        J = _l2svm_objective(y, o, c, b, lam, q)
        if J <= best[0]:
            best = (J, c, b, o)
        if converged:
            break
    _, c, b, o = best
    # Relative gradient norm in (c, b) (= in (w̃, b)), against the gradient at the start 0.
    res = 2.0 / l * np.where(y * o < 1, o - y, 0.0)
    g_c, g0_c = Z.T @ res + 2 * lam * c, -2.0 / l * (Z.T @ y)
    num, den = g_c @ g_c, g0_c @ g0_c
    if a is not None:
        num += (a @ res + 2 * lam * q * b) ** 2
        den += (2.0 / l * a @ y) ** 2
    residual = float(np.sqrt(num / den)) if den > 0 else 0.0
    return c, b, it, converged, residual


def _least_squares(M, rhs):
    """Full-column-rank least squares by QR (the condition of M, not of MᵀM)."""
    Qm, Rm = np.linalg.qr(M)
    return sla.solve_triangular(Rm, Qm.T @ rhs, check_finite=False)


def _l1svm(Xh, G, y, a, lam, q, bias_free, tol, max_iter):
    """The l-row hinge SVM ``(1/l) Σ max(0, 1 − y_i f_i) + lam (‖w̃‖² + q b²)`` by libsvm/liblinear.

    Dividing by ``2 lam`` gives the standard ``½‖·‖² + C Σ hinge`` with
    ``C = 1/(2 l lam)``. An unpenalised bias (bias-free graph term) is libsvm's own
    intercept (SVC on the precomputed Gram ``G``); a penalised one is a feature
    ``a/√q`` of a bias-less liblinear SVM; no intercept: bias-less liblinear.

    Returns w̃ (d,), b, iterations, converged.
    """
    l = y.size
    C = 1.0 / (2 * l * lam)
    if a is not None and bias_free:
        svc = SVC(kernel="precomputed", C=C, tol=tol).fit(G, y)
        beta = np.zeros(l)
        # binary sklearn SVC: decision = dual_coef_ · K + intercept_, > 0 ↦ classes_[1] = +1
        beta[svc.support_] = svc.dual_coef_[0]
        return Xh.T @ beta, float(svc.intercept_[0]), int(svc.n_iter_[0]), svc.fit_status_ == 0
    H = Xh if a is None else np.column_stack([Xh, a / np.sqrt(q)])
    with warnings.catch_warnings():  # lapsvm_tinv warns itself, naming its max_iter
        warnings.simplefilter("ignore", ConvergenceWarning)
        svm = LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=C, tol=tol,
                        max_iter=max_iter, random_state=0).fit(H, y)
    coef = svm.coef_[0]
    b = 0.0 if a is None else float(coef[-1] / np.sqrt(q))
    return coef[: Xh.shape[1]], b, int(svm.n_iter_), svm.n_iter_ < max_iter


def lapsvm_tinv(
    X,
    targets,
    labeled_rows,
    laplacian_matvec,
    *,
    gamma_A,
    gamma_I,
    scale,
    loss="squared_hinge",
    fit_intercept=True,
    memory_budget=2**30,
    tol=1e-8,
    max_iter=1000,
    factor=None,
):
    """Minimise the linear LapSVM objective by T⁻¹ preprocessing (small d).

    For each column ``y`` of ``targets`` (±1)::

        J(w, b) = (1/l) Σ_{i labeled} V(y_i, f_i) + γ_A ‖w‖² + γ_I s fᵀ L^p f,
        f = X w + b  (all n rows),  s = scale,

    bias unpenalised, with ``V(y, f) = max(0, 1 − y f)²`` (``loss='squared_hinge'``,
    the same objective and minimiser as :func:`~linlap.solvers.lapsvm_newton.lapsvm_newton`)
    or ``V(y, f) = max(0, 1 − y f)`` (``loss='hinge'``).

    The regulariser is ``γ_A`` times a quadratic form in ``(w, b)``; after the
    change of variables described in :mod:`linlap.solvers.lapsvm_tinv` (Cholesky of
    ``T₀² = I + (γ_I s/γ_A) XᵀL^pX``, bias decoupled by its Schur complement) the
    problem becomes, exactly,

        min_{w̃, b} (1/l) Σ_i V(y_i, x̂_iᵀw̃ + a_i b) + γ_A (‖w̃‖² + q_S b²)

    on the l labeled rows only, with ``x̂ = R^{-T}x``, ``a_i = 1 − x_iᵀu`` (``a = 1``,
    ``q_S = 0`` — the usual unpenalised bias — when ``L^p 1 = 0``). Then
    ``w = R^{-1}w̃ − b u``.

    The l-row problem is solved exactly: the squared hinge by a dense finite Newton
    in the row space of X̂ (min(l, d) unknowns; each Newton point a ridge least-squares
    problem solved by QR, which does not square the condition as ``X̂X̂ᵀ`` would; exact
    line search; never an iterate worse than w = 0, b = 0); the hinge
    by libsvm (``SVC(kernel='precomputed')``, its intercept unpenalised) when the
    bias is free, else by liblinear (``LinearSVC(loss='hinge')`` without intercept,
    the penalised bias as a feature ``a/√q_S``), both with ``C = 1/(2 l γ_A)``
    and tolerance ``tol``.

    Parameters
    ----------
    X : sparse matrix (CSR) or ndarray of shape (n, d)
    targets : ndarray of shape (l,) or (l, k)
        ±1 targets of the labeled rows (one column per one-vs-rest class).
    labeled_rows : ndarray of int, shape (l,)
    laplacian_matvec : callable or None
        ``F ↦ L^p F``; only used to build the factor (may be None with ``factor``
        or ``gamma_I == 0``).
    gamma_A : float
        Must be > 0 (T² must be positive definite).
    gamma_I, scale : float
    loss : {'squared_hinge', 'hinge'}, default='squared_hinge'
    fit_intercept : bool, default=True
    memory_budget : int, default=2**30
        Bytes allowed for the dense d × d factor; over it a ValueError names d,
        the bytes needed and the budget.
    tol : float, default=1e-8
        Slack of the finite Newton optimality check (squared hinge) or the
        libsvm / liblinear tolerance (hinge).
    max_iter : int, default=1000
        Newton steps (squared hinge) or liblinear passes (hinge; libsvm is not
        capped) of the l-row solver.
    factor : TinvFactor, optional
        A factor from :func:`tinv_factor` or from the ``state['factor']`` of a
        previous result, built for the same X, ``fit_intercept`` and ratio
        ``γ_I s / γ_A``: skips the d × d work.

    Returns
    -------
    LinearSolution
        ``n_iter``: largest number of l-row solver iterations over columns;
        ``residual``: largest relative gradient norm of the l-row problem
        (squared hinge; NaN for the hinge); ``state['factor']``: the factor.
    """
    Y, rows = check_problem(X, targets, labeled_rows, gamma_A=gamma_A, gamma_I=gamma_I,
                            scale=scale)
    if loss not in ("squared_hinge", "hinge"):
        raise ValueError(f"loss must be 'squared_hinge' or 'hinge', got {loss!r}.")
    if not tol > 0 or max_iter < 1:
        raise ValueError("tol must be > 0 and max_iter >= 1.")
    ratio = _check_tinv_weights(gamma_A, gamma_I, scale)
    n, d = X.shape
    l, k = Y.shape
    if factor is None:
        factor = tinv_factor(X, laplacian_matvec, gamma_A=gamma_A, gamma_I=gamma_I,
                             scale=scale, fit_intercept=fit_intercept,
                             memory_budget=memory_budget)
    elif (factor.n_samples, factor.n_features) != (n, d) \
            or factor.fit_intercept != bool(fit_intercept) \
            or not np.isclose(factor.ratio, ratio, rtol=1e-12, atol=0):
        raise ValueError(
            f"factor was built for n={factor.n_samples}, d={factor.n_features}, "
            f"fit_intercept={factor.fit_intercept}, gamma_I*scale/gamma_A={factor.ratio:.6g}; "
            f"got n={n}, d={d}, fit_intercept={bool(fit_intercept)}, ratio={ratio:.6g}."
        )

    Xl = X[rows]
    Xl = Xl.toarray() if sp.issparse(Xl) else np.asarray(Xl, dtype=np.float64)
    Xh = sla.solve_triangular(factor.R, Xl.T, trans="T", check_finite=False).T  # rows R^{-T}x
    a = 1.0 - Xl @ factor.u if fit_intercept else None
    if loss == "squared_hinge":
        Z, B = _row_space(Xh)
    else:
        G = Xh @ Xh.T

    Wt, b = np.zeros((d, k)), np.zeros(k)
    n_iter, converged, residual = 0, True, 0.0
    for j in range(k):
        y = Y[:, j]
        if loss == "squared_hinge":
            c, b[j], it, ok, res = _l2svm(Z, y, a, gamma_A, factor.q, tol, max_iter)
            Wt[:, j] = c if B is None else B @ c
            residual = max(residual, res)
        else:
            Wt[:, j], b[j], it, ok = _l1svm(Xh, G, y, a, gamma_A, factor.q, factor.bias_free,
                                           tol, max_iter)
            residual = np.nan
        n_iter, converged = max(n_iter, it), converged and ok
    if not converged:
        what = ("squared-hinge SVM", "Newton steps") if loss == "squared_hinge" else \
            ("hinge SVM (liblinear)", "passes")
        warnings.warn(f"The l-row {what[0]} of lapsvm_tinv did not converge in "
                      f"max_iter={max_iter} {what[1]}; increase max_iter.",
                      ConvergenceWarning, stacklevel=2)
    W = sla.solve_triangular(factor.R, Wt, check_finite=False) - np.outer(factor.u, b)
    F = np.asarray(X @ W) + b
    return LinearSolution(W.T.copy(), b, F, n_iter, residual, bool(converged),
                          {"factor": factor})
