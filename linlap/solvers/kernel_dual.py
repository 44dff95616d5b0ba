"""Kernel Laplacian SVM with the hinge loss through its dual (seed 001 eqs. 9–11).

The model is ``f(x) = Σ_j α_j k(x_j, x) + b`` over all n training rows, so that on the
training rows ``f = K α + b 1``. Per target column y (±1, one-vs-rest) the solver
minimises, in linlap's scaling,

    J(α, b) = (1/l) Σ_{i labeled} max(0, 1 − y_i f_i) + γ_A αᵀKα + γ_I s fᵀ M f,

with ``M = L^p`` the Laplacian power and ``s = 1/trace(L)`` (``KNNGraph.scale_``); the
bias is not penalised by the first two terms. Seed 001 eq. 6 is the same objective
with ``γ_I/(u+l)²`` in place of ``γ_I s`` (seed 003's eq. 7 convention is
``γ_A = γ_A'/l``, ``γ_I s = γ_I'/l``). With ``c = γ_I s`` and

    A = 2γ_A I + 2c M K           (n × n; eq. 11's matrix),

the Lagrange dual over the l labeled rows is seed 001's eq. 9,

    max_β  Σ_i β_i − ½ βᵀ Q β,   0 ≤ β_i ≤ 1/l,
    Q = Y (J K A⁻¹ Jᵀ + a aᵀ/(2q)) Y                  (eq. 10 plus the bias term),

and the expansion is eq. 11 with the bias:

    α = A⁻¹ Jᵀ Y β − b u,    f = K A⁻¹ Jᵀ Y β + b a.

The bias. For the unnormalised Laplacian ``M 1 = 0``: ``u = 0``, ``a = 1``, the bias
is free and the dual has seed 001's equality constraint ``Σ_i y_i β_i = 0`` (``b`` is
its multiplier). For the normalised Laplacian ``m = M 1 ≠ 0`` and the graph term
penalises the bias; the change of variables ``α = α' − b u``, ``u = 2c A⁻¹ m``
separates it (``f = Kα' + b a``, ``a = 1 − K u``) into a penalty ``q b²`` with
``q = γ_A uᵀKu + c aᵀ M a ≥ 0``: the dual has no equality constraint, and at its optimum
``b = Σ_i β_i y_i a_i / (2q)``. Eliminating b would add the rank-one term ``a aᵀ/(2q)``
to Q, which for a small q (γ_I s ≪ γ_A) makes the QP too ill-conditioned to solve;
so b is kept as the variable of an outer 1-D problem instead (step 2). Without an
intercept (``fit_intercept=False``) Q is eq. 10 alone and there is no equality
constraint.

The two steps.

1. The linear systems. ``A⁻¹ Jᵀ`` (one right-hand side per labeled row; it does not
   depend on the labels, so it serves every class) and ``A⁻¹ m`` are solved together
   by CG in the K inner product: A is self-adjoint and positive definite for
   ``⟨x, z⟩_K = xᵀKz`` (``KA = 2γ_A K + 2c KMK``), so this is CG on ``KA x = K r``
   preconditioned by K, and needs one product with K (``GramOperator.matvec``) and
   one application of M per iteration; no n × n matrix is ever factorised or
   inverted. Start: ``x₀ = r / (2γ_A)`` (exact when γ_I = 0). A column stops when
   ``‖r − A x‖_K ≤ tol ‖r‖_K``.
2. The l-variable QP. With a free bias: libsvm (``sklearn.svm.SVC`` with
   ``kernel='precomputed'``) on ``2γ_A J K A⁻¹ Jᵀ`` with ``C = 1/(2 l γ_A)`` (the same
   problem divided by ``2γ_A``; libsvm caches kernel entries in float32, which limits
   the margins of the free support vectors to about 1e-6). Without an intercept: dual
   coordinate descent over the box, stopped when the largest projected-gradient entry
   is at most ``qp_tol`` (in the same scaled units as libsvm's ``tol``). With the
   penalised bias: ``max_b [−(q/2γ_A) b² + min_β ½βᵀQβ − (1 − b y∘a)ᵀβ]`` — concave in
   b — by Brent's method (``scipy.optimize.minimize_scalar``, relative tolerance
   1e-10), each inner box QP solved as above and warm-started from the last, then b
   polished to round-off on the final free set (where β is affine in b).

α is then eq. 11 by linearity, ``α = (A⁻¹Jᵀ)(y ∘ β) − b u``: the system of eq. 11 is
the one already solved in step 1.

The check. J of the returned (α, b) is evaluated with ``f = Kα + b`` recomputed, and
compared with the dual value ``D(β) = Σβ − ½ vᵀ J K A⁻¹ Jᵀ v − b sᵀβ + q b²``
(``v = y∘β``, ``s = y∘a``; for the free bias and without an intercept the b terms
vanish), a lower bound on min J up to the CG's solve (with the inexact A⁻¹Jᵀ of an
ill-conditioned problem it can exceed min J, and the gap then understates J − min J). A
duality gap above ``gap_tol`` in absolute value (1e-3; J of the zero model is 1) means
the model may not be the minimiser (a loose ``tol``, an iteration limit, or a problem too
ill-conditioned for floating point): a ConvergenceWarning gives it; a model worse than the
zero model (J > 1 + gap_tol) raises a ValueError that names the remedies.
"""

import warnings

import numpy as np
from numba import njit
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from .._validation import user_stacklevel
from ._problem import check_rows_and_targets, check_weights
from .kernel_newton import REMEDIES
from .kernel_pcg import KernelSolution

__all__ = ["DualSolution", "kernel_lapsvm_dual", "dual_system_cg", "dual_workspace_bytes"]

#: L^p 1 counts as zero (bias free of the graph term) below this fraction of
#: ‖L^p r‖ for a random ±1 vector r of the same norm (the rule of solvers/lapsvm_tinv.py).
_BIAS_FREE_RTOL = 1e-9
#: float64 n-vectors per right-hand side held by the CG of step 1
_CG_VECTORS = 7
#: Largest duality gap J − D(β) of :func:`kernel_lapsvm_dual` accepted without a warning,
#: in units of J (the zero model's J is 1). Well-posed problems give 1e-6 or less at the
#: default tolerances (libsvm's float32 kernel cache included); the ill-conditioned ones
#: seen gave models with J from 4 to 1e20.
DUAL_GAP_TOL = 1e-3


class DualSolution(KernelSolution):
    """Result of :func:`kernel_lapsvm_dual`: a :class:`~linlap.solvers.kernel_pcg.KernelSolution`
    plus the dual variables.

    Attributes
    ----------
    beta : ndarray of shape (n_columns, l)
        β of eq. 9 for each target column (``0 ≤ β ≤ 1/l``).
    bias_free : bool
        Whether the bias is unpenalised (``M 1 = 0`` or γ_I = 0): then
        ``Σ_i y_i β_i = 0``.
    qp_iter : int
        Iterations of the QP of step 2 (libsvm's, or coordinate-descent sweeps), the
        largest over columns (``n_iter`` holds the CG iterations of step 1).
    dual_value : ndarray of shape (n_columns,)
        The dual value D(β), a lower bound on min J (see :func:`kernel_lapsvm_dual`).
    gap : ndarray of shape (n_columns,)
        The duality gap ``J − D(β)``: J of the returned model is at most this above
        the minimum when the CG's solve is exact (see :func:`kernel_lapsvm_dual`).
    """


def dual_workspace_bytes(n, n_labeled):
    """Bytes of the step-1 CG block for n rows and l labeled rows (float64)."""
    return 8 * _CG_VECTORS * int(n) * (int(n_labeled) + 1)


def dual_system_cg(kernel_matvec, laplacian_matvec, R, *, gamma_A, c, tol=1e-8,
                   max_iter=1000):
    """Solve ``(2γ_A I + 2c M K) X = R`` by CG in the K inner product.

    Parameters
    ----------
    kernel_matvec : callable
        ``V ↦ K V`` for V of shape (n, m), K symmetric positive (semi)definite.
    laplacian_matvec : callable or None
        ``V ↦ M V`` (M symmetric PSD); unused when ``c == 0``.
    R : ndarray of shape (n, m)
        Right-hand sides.
    gamma_A : float
        > 0.
    c : float
        ``γ_I s`` (>= 0).
    tol : float
        A column stops when ``‖R − A X‖_K ≤ tol ‖R‖_K``.
    max_iter : int

    Returns
    -------
    X : ndarray of shape (n, m)
    KX : ndarray of shape (n, m)
        ``K X`` (accumulated along the iterations).
    n_iter : int
    converged : bool
        Every column met ``tol`` (or hit an exact breakdown ``pᵀKAp = 0``, which only
        a singular K allows and which leaves ``K X`` exact).
    """
    R = np.asarray(R, dtype=np.float64)
    X = R / (2.0 * gamma_A)
    KR = np.asarray(kernel_matvec(R), dtype=np.float64)
    KX = KR / (2.0 * gamma_A)
    if c == 0:
        return X, KX, 0, True
    norm0 = np.sqrt(np.maximum(np.einsum("ij,ij->j", R, KR), 0.0))
    # ρ = R − A X₀ = −(c/γ_A) M K R
    rho = -(c / gamma_A) * np.asarray(laplacian_matvec(KR), dtype=np.float64)
    Krho = np.asarray(kernel_matvec(rho), dtype=np.float64)
    rz = np.einsum("ij,ij->j", rho, Krho)
    active = np.flatnonzero(np.sqrt(np.maximum(rz, 0.0)) > tol * norm0)
    P, KP = rho.copy(), Krho.copy()
    it = 0
    while active.size and it < max_iter:
        it += 1
        p, Kp = P[:, active], KP[:, active]
        Ap = 2.0 * gamma_A * p + 2.0 * c * np.asarray(laplacian_matvec(Kp), dtype=np.float64)
        pAp = np.einsum("ij,ij->j", Kp, Ap)
        ok = pAp > 0
        step = np.where(ok, rz[active] / np.where(ok, pAp, 1.0), 0.0)
        X[:, active] += step * p
        KX[:, active] += step * Kp
        rho_a = rho[:, active] - step * Ap
        Krho_a = np.asarray(kernel_matvec(rho_a), dtype=np.float64)
        rz_new = np.einsum("ij,ij->j", rho_a, Krho_a)
        beta = np.where(ok, rz_new / np.where(rz[active] > 0, rz[active], 1.0), 0.0)
        rho[:, active], Krho[:, active] = rho_a, Krho_a
        P[:, active] = rho_a + beta * p
        KP[:, active] = Krho_a + beta * Kp
        rz[active] = rz_new
        done = (np.sqrt(np.maximum(rz_new, 0.0)) <= tol * norm0[active]) | ~ok
        active = active[~done]
    return X, KX, it, active.size == 0


@njit(cache=True)
def _box_qp(Q, C, p, beta, tol, max_iter):
    """min ½βᵀQβ − pᵀβ over 0 ≤ β ≤ C by cyclic coordinate descent (exact 1-D steps),
    from ``beta`` (updated in place)."""
    l = Q.shape[0]
    grad = Q @ beta - p
    for it in range(max_iter):
        viol = 0.0
        for i in range(l):
            g = grad[i]
            if beta[i] <= 0.0:
                pg = min(g, 0.0)
            elif beta[i] >= C:
                pg = max(g, 0.0)
            else:
                pg = g
            if abs(pg) > viol:
                viol = abs(pg)
            if pg == 0.0:
                continue
            if Q[i, i] > 0.0:
                new = min(max(beta[i] - g / Q[i, i], 0.0), C)
            else:
                new = C if g < 0.0 else 0.0
            d = new - beta[i]
            if d != 0.0:
                beta[i] = new
                for j in range(l):
                    grad[j] += d * Q[j, i]
        if viol <= tol:
            return beta, it + 1, True
    return beta, max_iter, False


def _penalised_bias_qp(Q, C, s, kappa, tol, max_iter):
    """The dual with the penalised bias: ``max_b [−κ b² + min_β ½βᵀQβ − (1 − b s)ᵀβ]``
    over 0 ≤ β ≤ C. For fixed b the inner problem is the box QP of the free-bias dual
    with a shifted linear term; the outer function of b is concave (a minimum of affine
    functions, minus κb²), maximised by Brent's method with each box QP warm-started
    from the last. (Eliminating b instead adds ``s sᵀ/(2κ)`` to Q, which for a small
    bias penalty κ — γ_I s ≪ γ_A — makes coordinate descent stall.)
    Returns ``(β, b, sweeps, converged)``."""
    from scipy.optimize import minimize_scalar

    state = {"beta": np.zeros(Q.shape[0]), "sweeps": 0, "ok": True}

    def negative_outer(b):
        p = 1.0 - b * s
        beta, it, ok = _box_qp(Q, C, p, state["beta"].copy(), tol, max_iter)
        value = kappa * b * b - (0.5 * beta @ (Q @ beta) - p @ beta)
        state.update(beta=beta, sweeps=state["sweeps"] + it, ok=state["ok"] and ok,
                     value=value)
        return value

    b = float(minimize_scalar(negative_outer, bracket=(-1.0, 1.0), tol=1e-10).x)
    negative_outer(b)  # the box QP at the b returned
    if kappa > 0:
        # polish b to round-off: with the free set F of β fixed, β_F is affine in b and
        # the optimality condition sᵀβ(b) = 2κb is one linear equation
        beta = state["beta"]
        free = (beta > 1e-12 * C) & (beta < C * (1 - 1e-12))
        dbeta = np.zeros_like(beta)
        if free.any():  # least squares: duplicated documents make Q_FF singular
            dbeta[free] = -np.linalg.lstsq(Q[np.ix_(free, free)], s[free], rcond=None)[0]
        slope = s @ dbeta - 2.0 * kappa
        if slope < 0:
            b_new = b - (s @ beta - 2.0 * kappa * b) / slope
            kept = dict(state)
            negative_outer(b_new)
            same = np.array_equal(state["beta"] > 1e-12 * C, beta > 1e-12 * C) and \
                np.array_equal(state["beta"] < C * (1 - 1e-12), beta < C * (1 - 1e-12))
            if same and state["value"] <= kept["value"]:
                b = b_new
            else:  # the active set changed (or no gain): keep Brent's point
                state.update(kept)
    return state["beta"], b, state["sweeps"], state["ok"]


def _dual_value(beta, y, a, G, q, b, C):
    """A lower bound on the minimum of J from the dual of one column with an intercept:
    the dual function ``D(β̃) = min_b [Σβ̃ − ½ vᵀGv − b sᵀβ̃ + q b²]`` (``v = y∘β̃``,
    ``s = y∘a``) at β̃, β moved minimally inside the box ``[0, C]`` so that the returned b
    is the minimiser (``sᵀβ̃ = 2qb``; for the free bias, q = 0, the equality constraint
    ``Σ y_i β̃_i = 0``). Evaluated at b itself: with q tiny the closed form
    ``−(sᵀβ)²/(4q)`` would turn round-off in ``sᵀβ`` into an arbitrarily large
    penalty. When no such β̃ exists, the dual function at β itself (−inf for q = 0)."""
    s = y * a
    r = 2.0 * q * b - s @ beta           # the change of sᵀβ that makes b the minimiser
    if r != 0.0:
        room = np.where(s * r > 0, C - beta, beta)   # of each β_i, in the needed direction
        cap = float(np.abs(s) @ room)
        if cap < abs(r):
            v = y * beta
            if q <= 0:
                return -np.inf
            return beta.sum() - 0.5 * v @ (G @ v) - (s @ beta) ** 2 / (4.0 * q)
        beta = np.clip(beta + np.sign(r) * np.sign(s) * room * (abs(r) / cap), 0.0, C)
    v = y * beta
    return beta.sum() - 0.5 * v @ (G @ v) - b * (s @ beta) + q * b * b


def _report_gap(J, gap, gap_tol, tol, cg_ok, qp_ok):
    """A duality gap above ``gap_tol``: a ValueError when the model is worse than the zero
    model (J of α = 0, b = 0 is 1), else a ConvergenceWarning that gives the gap."""
    wrong = ~(J < 1.0 + gap_tol)   # (NaN too)
    worst = int(np.argmax(wrong)) if wrong.any() else \
        int(np.argmax(np.where(np.isnan(gap), np.inf, np.abs(gap))))
    Jw, gw = J[worst], gap[worst]
    limits = "" if cg_ok and qp_ok else (
        f" The {'CG of step 1' if not cg_ok else 'QP of step 2'} stopped at its iteration "
        f"limit.")
    remedies = (REMEDIES.replace(", or lower", ", lower")
                + ", or use solver='pcg' (the squared hinge loss)")
    if wrong.any():
        # No other solver minimises the hinge loss (PCG and Newton minimise the squared
        # hinge): nothing to fall back on. A model worse than predicting nothing is a wrong
        # answer, and an error (which GridSearchCV scores as a failed fit) keeps it out of
        # use; a warning would be easy to miss.
        raise ValueError(
            f"The hinge-loss dual (solver='dual') did not find the minimiser: its model has "
            f"J = {Jw:.6g}, worse than the zero model's J = 1 (duality gap {gw:.3g}), "
            f"because the problem is too ill-conditioned for its linear system and QP in "
            f"floating point (K and the graph term L^p huge against gamma_A).{limits} To "
            f"fit it, {remedies}.")
    how = (f"the returned model's J = {Jw:.6g} may be {gw:.3g} or more above it (the "
           f"duality gap, itself computed with the CG's inexact solve; the zero model's J "
           f"is 1)" if gw > 0 else
           f"its dual value exceeds the returned model's J = {Jw:.6g} by {-gw:.3g}, which "
           f"a dual value cannot: the CG's inexact solve leaves no certificate that the "
           f"model is the minimiser")
    warnings.warn(
        f"The hinge-loss dual (solver='dual') did not reach the minimiser within gap_tol="
        f"{gap_tol:g}: {how}.{limits} Lower tol (the CG's relative "
        f"residual, {tol:g}) or raise max_iter; if the problem is ill-conditioned, "
        f"{remedies}.", ConvergenceWarning, stacklevel=user_stacklevel())


def _laplacian_of_ones_is_zero(laplacian_matvec, n):
    rng = np.random.default_rng(0)
    Z = np.column_stack([np.ones(n), rng.choice([-1.0, 1.0], n)])
    MZ = np.asarray(laplacian_matvec(Z), dtype=np.float64)
    return bool(np.linalg.norm(MZ[:, 0]) <= _BIAS_FREE_RTOL * np.linalg.norm(MZ[:, 1])), MZ[:, 0]


def kernel_lapsvm_dual(kernel_matvec, targets, labeled_rows, laplacian_matvec, *, n_samples,
                       gamma_A, gamma_I, scale, fit_intercept=True, tol=1e-8, max_iter=1000,
                       qp_tol=1e-6, qp_max_iter=100000, gap_tol=DUAL_GAP_TOL):
    """Hinge-loss kernel LapSVM by the dual QP and the linear system (seed 001 eqs. 9–11).

    Minimises, per target column, ``(1/l) Σ max(0, 1 − y_i f_i) + γ_A αᵀKα +
    γ_I s fᵀMf`` with ``f = Kα + b`` (see the module docstring for the dual, the bias
    and the two steps).

    Parameters
    ----------
    kernel_matvec : callable
        ``V ↦ K V`` for V of shape (n, m) (e.g. :meth:`linlap.gram.GramOperator.matvec`).
    targets : ndarray of shape (l,) or (l, k)
        ±1 targets of the labeled rows (one column per one-vs-rest problem).
    labeled_rows : ndarray of int, shape (l,)
    laplacian_matvec : callable or None
        ``V ↦ L^p V`` (``KNNGraph.laplacian_matvec``); may be None when γ_I = 0.
    n_samples : int
        n.
    gamma_A : float
        > 0.
    gamma_I, scale : float
        Graph weight and scale ``s`` (>= 0; s > 0 when γ_I > 0).
    fit_intercept : bool
    tol : float
        Relative K-norm residual at which the CG of step 1 stops.
    max_iter : int
        CG iterations of step 1.
    qp_tol : float
        Stopping tolerance of the QP of step 2 (libsvm's ``tol``; the projected
        gradient bound of the coordinate descent), in the problem divided by ``2γ_A``.
    qp_max_iter : int
        Sweeps of the coordinate descent (libsvm runs to its own tolerance).
    gap_tol : float
        Largest duality gap ``|J − D(β)|`` of a column accepted without a warning (see
        the Notes; J of the zero model is 1).

    Returns
    -------
    DualSolution
        ``dual_coef`` (k, n), ``intercept`` (k,), ``decision`` (n, k, ``f = Kα + b``
        recomputed with one product with K), ``beta`` (k, l), ``stop_reason='dual'``;
        ``n_iter`` the CG iterations of step 1; ``history`` holds J of each column (one
        row); ``dual_value`` and ``gap`` the dual value D(β) and ``J − D(β)`` of each.

    Raises
    ------
    ValueError
        When a column's model is worse than the zero model (J > 1 + ``gap_tol``).

    Warns
    -----
    ConvergenceWarning
        When a column's duality gap exceeds ``gap_tol`` in absolute value otherwise
        (a negative one: D(β) above J, no certificate) (and, as before, when
        the CG or the QP stops at its iteration limit).

    Notes
    -----
    ``D(β)`` is the dual function at β (the bias condition made exact by the smallest
    move of β inside the box, see ``_dual_value``), a lower bound on min J, so the gap
    bounds how far J of the returned model is above the minimum (with D evaluated on the
    CG's ``A⁻¹Jᵀ``, to about ``tol``). Well-posed problems give 1e-6 or less at the
    default tolerances (libsvm's float32 kernel cache included); a loose ``tol`` gives
    more (6.9e-3 at tol = 1e-4 on one problem, whose J was 3.6e-3 above the minimum).
    When the linear system or the QP cannot be solved accurately in floating point — K
    or the graph term L^p huge against γ_A, e.g. rows of norm 1e6 under the linear
    kernel, a Laplacian power of 100, a polynomial kernel of degree 40 — the model was
    worse than the zero model (J from 4 to 1e20 seen, against 1). No other solver here
    minimises the hinge loss, so that raises rather than return a wrong model; the
    message names the remedies.
    """
    n = int(n_samples)
    Y, rows = check_rows_and_targets(n, targets, labeled_rows)
    if not np.all(np.abs(Y) == 1):
        raise ValueError("targets of the hinge loss must be +1 or -1.")
    check_weights(gamma_A, gamma_I, scale)
    if not gamma_A > 0:
        raise ValueError("gamma_A must be > 0 in kernel mode (with γ_A = 0 the α of the "
                         "expansion is not determined).")
    l, k = Y.shape
    c = gamma_I * scale if (gamma_I > 0 and laplacian_matvec is not None) else 0.0
    bias_free, m_vec = True, None
    if c > 0 and fit_intercept:
        bias_free, m_vec = _laplacian_of_ones_is_zero(laplacian_matvec, n)

    # step 1: A⁻¹Jᵀ (and A⁻¹m) by CG in the K inner product
    R = np.zeros((n, l + (0 if bias_free else 1)))
    R[rows, np.arange(l)] = 1.0
    if not bias_free:
        R[:, l] = m_vec
    Mmv = laplacian_matvec if c > 0 else None
    Z, KZ, cg_iter, cg_ok = dual_system_cg(kernel_matvec, Mmv, R, gamma_A=gamma_A, c=c,
                                           tol=tol, max_iter=max_iter)
    if not cg_ok:
        warnings.warn(f"The CG of the LapSVM dual reached max_iter={max_iter} before "
                      f"tol={tol}; increase max_iter.", ConvergenceWarning, stacklevel=2)
    G = KZ[rows, :l]
    G = 0.5 * (G + G.T)
    if bias_free or not fit_intercept:
        u, a, q = np.zeros(n), np.ones(n), 0.0
    else:
        u = 2.0 * c * Z[:, l]
        Ku = 2.0 * c * KZ[:, l]
        a = 1.0 - Ku
        q = float(gamma_A * u @ Ku + c * a @ np.asarray(laplacian_matvec(a), dtype=np.float64))
        # ≥ 0 in exact arithmetic (0: the bias is nearly free); clearly negative: M is
        # not a Laplacian (not positive semi-definite)
        if q < -1e-8 * (gamma_A * abs(u @ Ku) + c * (a @ a)):
            raise ValueError("The bias penalty q is negative: laplacian_matvec is not "
                             "positive semi-definite.")
        q = max(q, 0.0)

    # step 2: the l-variable QP, scaled by 2γ_A (C = 1/(2 l γ_A))
    C = 1.0 / (2.0 * l * gamma_A)
    H = 2.0 * gamma_A * G
    B = np.zeros((k, l))
    coefs, intercepts, F = np.zeros((k, n)), np.zeros(k), np.zeros((n, k))
    qp_iter, qp_ok = 0, True
    for col in range(k):
        y = Y[:, col]
        if fit_intercept and bias_free:
            if np.all(y == y[0]):
                raise ValueError("Each target column needs both +1 and -1 rows for the "
                                 "free-bias dual (its equality constraint).")
            svc = SVC(kernel="precomputed", C=C, tol=qp_tol, cache_size=500).fit(H, y)
            bp = np.zeros(l)
            # binary SVC: dual_coef_ = y_i β'_i on the support, classes_ = [-1, 1]
            bp[svc.support_] = np.abs(svc.dual_coef_[0])
            b = float(svc.intercept_[0])
            it, ok = int(np.max(svc.n_iter_)), svc.fit_status_ == 0
        elif fit_intercept:  # penalised bias: b by a 1-D search around box QPs
            bp, b, it, ok = _penalised_bias_qp(np.ascontiguousarray(H * np.outer(y, y)), C,
                                               y * a[rows], q / (2.0 * gamma_A), qp_tol,
                                               qp_max_iter)
        else:
            bp, it, ok = _box_qp(np.ascontiguousarray(H * np.outer(y, y)), C, np.ones(l),
                                 np.zeros(l), qp_tol, qp_max_iter)
            b = 0.0
        beta = 2.0 * gamma_A * bp
        yb = y * beta
        coefs[col] = Z[:, :l] @ yb - b * u
        intercepts[col] = b
        B[col] = beta
        qp_iter, qp_ok = max(qp_iter, it), qp_ok and ok
    if not qp_ok:
        warnings.warn(f"The dual QP stopped at its iteration limit before qp_tol={qp_tol}.",
                      ConvergenceWarning, stacklevel=2)
    # J (hinge) of each column at the solution, with f = Kα + b recomputed, and the
    # duality gap J − D(β) ≥ J − min J: the certificate that the model is the minimiser
    F = np.asarray(kernel_matvec(np.ascontiguousarray(coefs.T)), dtype=np.float64) + intercepts
    J = np.mean(np.maximum(0.0, 1.0 - Y * F[rows]), axis=0)
    J += gamma_A * np.einsum("ij,ji->i", coefs, F - intercepts)
    if c > 0:
        J += c * np.einsum("ij,ij->j", F, np.asarray(laplacian_matvec(F), dtype=np.float64))
    if fit_intercept:
        D = np.array([_dual_value(B[col], Y[:, col], a[rows], G, q, intercepts[col], 1.0 / l)
                      for col in range(k)])
    else:
        V = Y * B.T
        D = B.sum(axis=1) - 0.5 * np.einsum("ij,ij->j", V, G @ V)
    with np.errstate(invalid="ignore"):
        gap = J - D
    # |gap|: D(β) is a lower bound on min J only up to the CG's solve, so a gap below
    # −gap_tol says the certificate is not valid either
    if not np.all(np.abs(gap) <= gap_tol):  # (NaN too)
        _report_gap(J, gap, gap_tol, tol, cg_ok, qp_ok)
    sol = DualSolution(coefs, intercepts, F, cg_iter, bool(cg_ok and qp_ok), "dual",
                       0.0, J[None, :])
    sol.beta = B
    sol.bias_free = bool(bias_free or not fit_intercept)
    sol.qp_iter = qp_iter
    sol.dual_value = D
    sol.gap = gap
    return sol
