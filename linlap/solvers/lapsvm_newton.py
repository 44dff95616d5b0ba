"""Linear Laplacian SVM by the L2-SVM modified finite Newton method (seed 004 §4.2).

Keerthi & DeCoste (2005), as the SVMlin code implements it, with the graph term of
manifold regularisation added (docs/design.md, "Finite Newton for the squared hinge"):
each Newton step is a LapRLS solve restricted to the active labeled rows, by CG
through products with X, followed by an exact line search on the piecewise
quadratic 1-D objective.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .normal_operator import NormalOperator
from .cg import batched_cg
from ._problem import (LinearSolution, balance_constraint, check_problem,
                       check_rows_and_targets, check_weights)

__all__ = ["lapsvm_newton", "lapsvm_objective", "squared_hinge_line_search", "regulariser_line"]

#: CG relative tolerance, KKT slack and CG iteration cap of the early Newton steps
#: (SVMlin's BIG_EPSILON / SMALL_CGITERMAX): cheap approximate steps far from the
#: solution, tightened to ``tol`` once the active set looks right.
LOOSE_TOL = 1e-2
LOOSE_CG_ITER = 10
#: Lowest tight CG tolerance the objective-gap bound asks for (round-off floor).
_CG_TOL_FLOOR = 1e-12


def _objective(Y, O, W, F, LF, gamma_A, gamma_I, scale, loss="squared_hinge", weights=None):
    """J per column from the labeled outputs O, weights W (d, k), F and L^p F.

    ``weights`` (shape of O): per-row loss weights replacing the ``1/l`` of the mean.
    """
    xi = np.maximum(0.0, 1.0 - Y * O)
    V = xi * xi if loss == "squared_hinge" else xi
    J = np.mean(V, axis=0) if weights is None else np.einsum("ij,ij->j", weights, V)
    J = J + gamma_A * np.einsum("ij,ij->j", W, W)
    if gamma_I > 0:
        J = J + gamma_I * scale * np.einsum("ij,ij->j", F, LF)
    return J


def lapsvm_objective(X, targets, labeled_rows, laplacian_matvec, coef, intercept, *,
                     gamma_A, gamma_I, scale, loss="squared_hinge"):
    """Evaluate the linear LapSVM objective for given coefficients.

    For each column ``y`` of ``targets`` and the matching row of ``coef``::

        J(w, b) = (1/l) Σ_{i labeled} V(y_i, f_i) + γ_A ‖w‖² + γ_I s fᵀ L^p f,
        f = X w + b  (all n rows),

    with ``V(y, f) = max(0, 1 − y f)²`` (``loss='squared_hinge'``) or
    ``max(0, 1 − y f)`` (``loss='hinge'``) and ``s = scale``.

    Parameters
    ----------
    X : sparse matrix or ndarray of shape (n, d)
    targets : ndarray of shape (l,) or (l, k), ±1
    labeled_rows : ndarray of int, shape (l,)
    laplacian_matvec : callable or None
        ``F ↦ L^p F``; may be None when ``gamma_I == 0``.
    coef : ndarray of shape (k, d) or (d,)
    intercept : ndarray of shape (k,) or float
    gamma_A, gamma_I, scale : float
    loss : {'squared_hinge', 'hinge'}

    Returns
    -------
    J : ndarray of shape (k,)
    """
    Y, rows = check_problem(X, targets, labeled_rows, gamma_A=gamma_A, gamma_I=gamma_I,
                            scale=scale)
    if loss not in ("squared_hinge", "hinge"):
        raise ValueError(f"loss must be 'squared_hinge' or 'hinge', got {loss!r}.")
    W = np.atleast_2d(np.asarray(coef, dtype=np.float64)).T
    F = np.asarray(X @ W) + np.atleast_1d(np.asarray(intercept, dtype=np.float64))
    LF = laplacian_matvec(F) if gamma_I > 0 else None
    return _objective(Y, F[rows], W, F, LF, gamma_A, gamma_I, scale, loss)


#: Breakpoints left when the line search stops halving by selection and sorts.
_LINE_SEARCH_SORTED = 512


def squared_hinge_line_search(y, o, o_bar, reg_slope, reg_curvature, n_labeled,
                              weights=None):
    """Exact minimiser over δ ≥ 0 of the 1-D finite Newton objective.

    Along ``o + δ (o_bar − o)`` (the labeled outputs moving towards the Newton
    point) the objective is

        φ(δ) = (1/l) Σ_i max(0, 1 − y_i (o_i + δ d_i))² + reg_slope · δ + reg_curvature · δ²
              + const,       d = o_bar − o,  l = n_labeled,

    where the last two terms are the exact quadratic of the regularisers along the
    line. φ is convex and C¹; φ′ is piecewise linear with breakpoints
    ``δ_i = (1 − y_i o_i) / (y_i d_i)`` where rows enter or leave the active set.
    Starting from φ′(0) on the current active set, the breakpoints are halved by
    selection (evaluating φ′ at their median) until a few hundred remain around the
    zero, which are sorted and walked (vectorised by cumulative sums) to the first zero
    crossing of φ′: linear time in the rows. The step may exceed 1.

    Parameters
    ----------
    y, o, o_bar : ndarray of shape (l,)
        Targets (±1), current outputs, Newton-point outputs of the labeled rows.
    reg_slope, reg_curvature : float
        Linear and quadratic coefficients of the regularisers along the line.
    n_labeled : int
        ``l`` of the ``1/l`` loss weight.
    weights : ndarray of shape (l,), optional
        Per-row loss weights ``ω_i``: the loss term becomes
        ``(1/l) Σ_i ω_i max(0, 1 − y_i (o_i + δ d_i))²``. None: every ``ω_i = 1``.

    Returns
    -------
    delta : float
        The minimiser (0 when φ′(0) ≥ 0, i.e. no descent along the direction).
    """
    d = o_bar - o
    yo, yd = y * o, y * d
    active = yo < 1
    w = 2.0 / n_labeled if weights is None else 2.0 / n_labeled * np.asarray(weights)
    # φ′(δ) = g + h δ on the current piece; a row active on it adds w·(d(o − y) + δ d²).
    rows_g, rows_h = w * d * (o - y), w * d * d
    g = reg_slope + rows_g[active].sum()
    h = 2.0 * reg_curvature + rows_h[active].sum()
    if g >= 0:
        return 0.0
    # Rows change status only when moving towards the margin: active ones leave
    # (y d > 0), inactive ones enter (y d < 0); their breakpoints are ≥ 0.
    leave, enter = active & (yd > 0), ~active & (yd < 0)
    change = np.flatnonzero(leave | enter)
    t = (1.0 - yo[change]) / yd[change]
    sign = np.where(enter[change], 1.0, -1.0)
    dg, dh = sign * rows_g[change], sign * rows_h[change]
    # φ′ is continuous and nondecreasing, so its zero lies on the piece where it changes
    # sign. Halve the breakpoints by selection (linear time) until few remain — passing
    # a median moves (g, h) to the piece beyond it — and sort only those.
    passed_end = 1.0  # where the pieces handed to the sort start (for the fallback below)
    while t.size > _LINE_SEARCH_SORTED:
        pivot = np.partition(t, t.size // 2)[t.size // 2]
        passed = t <= pivot
        g_p, h_p = g + dg[passed].sum(), h + dh[passed].sum()
        if g_p + h_p * pivot >= 0:
            if passed.all():  # ties at the median: nothing to drop
                break
            keep = passed
        else:
            g, h, passed_end = g_p, h_p, pivot
            keep = ~passed
        t, dg, dh = t[keep], dg[keep], dh[keep]
    order = np.argsort(t, kind="stable")
    t, dg, dh = t[order], dg[order], dh[order]
    # Coefficients of φ′ on piece m = [t_{m-1}, t_m] (piece 0 starts where the
    # selection left off).
    G = g + np.concatenate([[0.0], np.cumsum(dg)])
    H = h + np.concatenate([[0.0], np.cumsum(dh)])
    # The zero lies on the first piece whose right end has φ′ ≥ 0, or on the last.
    crossed = np.flatnonzero(G[:-1] + H[:-1] * t >= 0)
    m = crossed[0] if crossed.size else t.size
    if H[m] <= 0:  # flat last piece (round-off): any point past the last breakpoint
        return float(t[-1]) if t.size else passed_end
    return float(-G[m] / H[m])


def regulariser_line(W, dW, LF, dF, LdF, gamma_A, gamma_I, scale):
    """Exact quadratic of the regularisers along ``w + δ dw`` (finite Newton step 4).

    ``γ_A ‖w + δ dw‖² + γ_I s (f + δ df)ᵀL^p(f + δ df) = const + slope δ + curv δ²``
    per column, from ``L^p f`` (kept up to date) and ``L^p df`` (one graph pass).
    ``LF`` is None when there is no graph term.
    """
    slope = 2 * gamma_A * np.einsum("ij,ij->j", W, dW)
    curv = gamma_A * np.einsum("ij,ij->j", dW, dW)
    if LF is not None:
        slope = slope + 2 * gamma_I * scale * np.einsum("ij,ij->j", LF, dF)
        curv = curv + gamma_I * scale * np.einsum("ij,ij->j", dF, LdF)
    return slope, curv


def _solve_columns(op, B, X0, tol, max_iter, R0=None, on_update=None):
    """Solve ``A_j z_j = B[:, j]``, ``A_j`` = ``op`` with mask column j, by batched CG.

    Every column keeps its own CG scalars while each iteration does one pass over X
    and the graph for all the columns still running. ``R0``: the residual at X0;
    ``on_update``: see :func:`~linlap.solvers.cg.batched_cg`.
    """
    return batched_cg(op.matvec, B, X0, tol=tol, max_iter=max_iter, warn=False,
                      column_matvec=True, name="LapSVM Newton conjugate gradients", R0=R0,
                      on_update=on_update)


def lapsvm_newton(
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
    max_iter=50,
    cg_max_iter=1000,
    init=None,
    callback=None,
    row_weights=None,
    base_operator=None,
    gradient_check=True,
    init_decision=None,
    keep_laplacian_decision=False,
):
    """Minimise the linear LapSVM (squared hinge) objective by finite Newton.

    For each column ``y`` of ``targets`` (±1; one column per one-vs-rest class)::

        J(w, b) = (1/l) Σ_{i labeled} max(0, 1 − y_i f_i)² + γ_A ‖w‖² + γ_I s fᵀ L^p f,
        f = X w + b  (all n rows),  s = scale,

    the bias outside ``‖w‖²`` (linlap uses ``s = 1/trace(L)``). J is convex, piecewise
    quadratic and C¹. With ``row_weights`` ``ω`` the loss term is the weighted sum
    ``Σ_r ω_r max(0, 1 − y_r f_{i_r})²`` over the loss rows ``i_r = labeled_rows[r]``
    instead of the mean (the default is ``ω_r = 1/l``); a row index may then repeat,
    e.g. an unlabeled row once with target +1 and once with −1.

    The L2-SVM modified finite Newton method (Keerthi & DeCoste 2005; docs/design.md):
    (1) active set ``I = {labeled i : y_i f_i < 1}`` per column; (2) the Newton point
    is the LapRLS solution with loss rows ``I`` — normal equations
    ``A_I z = X̃_Iᵀ y_I`` (:class:`~linlap.solvers.normal_operator.NormalOperator`, per-column
    mask) — by CG warm-started at the current point, all columns in one CG run
    sharing every pass over X and the graph; early steps use a loose tolerance
    (ε = 1e-2) and at most 10 CG iterations, later ones ε = ``tol``; (3) if CG
    converged and the Newton point is consistent with ``I`` (``y_i f̄_i ≤ 1 + ε`` on
    I, ``≥ 1 − ε`` off it): at the loose ε switch to the tight phase and redo the
    step, at the tight ε accept it (it is the minimiser); (4) otherwise an exact line
    search (:func:`squared_hinge_line_search`) along the Newton direction; (5) in the
    tight phase a column stops when its active set is unchanged and its relative
    objective decrease is below ``tol`` (a loose step that stalls — it may not even
    descend, CG being inexact — switches to the tight phase instead); (6) a tight stop
    is refused while the worst-case objective-gap bound of its CG residual r,
    ``J − J* ≤ ‖r‖²/(γ_A l²)`` (the operator is ⪰ γ_A l on w; an estimate where the
    bias couples), exceeds 100·tol·J, and the tight CG tolerance then drops to meet
    tol·J: with a small γ_A a relative residual of tol leaves J far above its minimum
    (not with balance, a distributed operator or γ_A = 0).

    With ``balance`` the minimiser is taken subject to ``(1/u) Σ_{i∈U} f_i = r`` per
    column (class-balance constraint): the start is made feasible and each Newton
    point is ``z = z₀ + ν z₁`` with ``A_I z₀ = X̃_Iᵀ y_I``, ``A_I z₁ = c``
    (``c = [mean of the unlabeled rows; 1]``), ``ν = (r − cᵀz₀)/(cᵀz₁)``. Since
    ``A_I`` depends on the column's active set, ``z₁`` is per column: k more
    columns of the same CG run. Every iterate is then feasible.

    Parameters
    ----------
    X : sparse matrix (CSR) or ndarray of shape (n, d)
    targets : ndarray of shape (l,) or (l, k)
        ±1 targets of the labeled rows.
    labeled_rows : ndarray of int, shape (l,)
    laplacian_matvec : callable or None
        ``F ↦ L^p F`` for F of shape (n, k); may be None when ``gamma_I == 0``.
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
    tol : float, default=1e-6
        Tight CG relative tolerance, slack of the optimality check and relative
        objective decrease that stops a column (step 6 tightens the CG tolerance
        below it when the residual cannot bound the objective gap).
    max_iter : int, default=50
        Maximum number of Newton steps.
    cg_max_iter : int, default=1000
        Maximum CG iterations per (tight) Newton step.
    init : LinearSolution, optional
        Warm start from its ``coef`` / ``intercept`` (and, with ``balance``, the
        constraint columns kept in its ``state``).
    callback : callable, optional
        ``callback(step, relative_decrease)`` after each Newton step, with the
        largest relative objective decrease over the columns still running.
    row_weights : ndarray of shape (l,) or (l, k), optional
        Loss weight ``ω_r ≥ 0`` of each loss row (per target column when 2-D),
        replacing ``1/l``; ``labeled_rows`` may then repeat. Rows of weight 0 are
        never active. None: ``ω_r = 1/l`` (the LapSVM objective above).
    base_operator : operator, optional
        Where the products with X come from instead of a
        :class:`~linlap.solvers.normal_operator.NormalOperator` over X (X is then
        ignored and may be None): an object with ``n_samples``, ``n_features``,
        ``with_loss(rows, mask, alpha=, beta=)`` returning an operator with
        ``matvec``, ``rhs``, ``decision`` and ``apply_to_decision``, and
        ``row_mean(rows)``, built with the same ``fit_intercept`` — e.g.
        :class:`linlap.distributed.DistributedNormalOperator` (X on Dask workers).
    gradient_check : bool, default=True
        Recompute the decision values from the final z (one pass over X), their
        ``L^p f`` (one graph pass) and the relative gradient norm from those (one Xᵀ
        pass, plus one for the norm of the gradient at 0 that scales it; with a distributed ``base_operator`` a product from the decision values
        and two right-hand sides) — independent of the f and L^p f the Newton steps
        updated, so that their drift cannot hide. False: return the decision values the
        Newton steps updated and ``residual = nan`` — for callers that solve many
        warm-started problems and use only the last residual
        (:func:`linlap.solvers.s3vm.s3vm_annealing`); ``state`` then also holds
        ``laplacian_decision``, ``L^p`` of those decision values (None without a graph
        term).
    init_decision : tuple (F, LF), optional
        ``F = X̃ z`` and ``L^p F`` of ``init``'s coefficients on this X and graph —
        a previous solve's ``decision`` and ``state['laplacian_decision']`` — to start
        from without their passes. Ignored with ``balance`` (the start moves then).
        Without it a start at ``w = 0`` (the default) needs no pass either:
        ``f = b 1``, and ``L^p f = 0`` when also ``b = 0`` (else one graph pass:
        ``L^p 1 ≠ 0`` for the normalised Laplacian).
    keep_laplacian_decision : bool, default=False
        With ``gradient_check``: keep the recomputed ``L^p f`` of the returned decision
        values in ``state['laplacian_decision']`` too, for a next solve's
        ``init_decision`` (an (n, k) array a fitted estimator should not hold; always
        kept without the check; never with a distributed ``base_operator``).

    Returns
    -------
    LinearSolution
        ``n_iter`` counts Newton steps. ``residual`` is the largest relative
        gradient norm ``‖∇J(z)‖ / ‖∇J(0)‖`` (with ``balance``, of the gradient's
        component orthogonal to ``c``, which vanishes at the constrained optimum).
        ``state`` holds ``cg_iter`` (total CG iterations), ``objective`` (J per
        column), ``Z1`` (constraint columns, for warm starts) and, without the gradient
        check or with ``keep_laplacian_decision``, ``laplacian_decision``; ``history``
        the total objective after each step.
    """
    if base_operator is None:
        Y, rows = check_problem(X, targets, labeled_rows, gamma_A=gamma_A, gamma_I=gamma_I,
                                scale=scale, allow_repeats=row_weights is not None)
    else:  # X lives behind the operator (linlap.distributed): check the rest alike
        Y, rows = check_rows_and_targets(base_operator.n_samples, targets, labeled_rows,
                                         row_weights is not None)
        if not np.all(np.abs(Y) == 1):
            raise ValueError("targets of the SVM losses must be +1 or -1.")
        check_weights(gamma_A, gamma_I, scale)
    if not tol > 0 or max_iter < 1 or cg_max_iter < 1:
        raise ValueError("tol must be > 0, max_iter and cg_max_iter >= 1.")
    # Internally every row's loss weight is ω_r l (the operator is l-scaled), so the
    # default ω = 1/l is the all-ones weight, i.e. no weight at all (Wt = None).
    Wt = None
    if row_weights is not None:
        Wt = np.asarray(row_weights, dtype=np.float64)
        Wt = np.repeat(Wt[:, None], Y.shape[1], axis=1) if Wt.ndim == 1 else Wt
        if Wt.shape != Y.shape or not np.all(np.isfinite(Wt)) or np.any(Wt < 0):
            raise ValueError(f"row_weights must be finite, >= 0 and of shape {Y.shape[:1]} or "
                             f"{Y.shape}, got {np.shape(row_weights)}.")
        Wt = Wt * Y.shape[0]
    if gamma_A == 0 and gamma_I == 0:
        raise ValueError("gamma_A and gamma_I cannot both be 0.")
    n, d = X.shape if base_operator is None else (base_operator.n_samples,
                                                  base_operator.n_features)
    l, k = Y.shape
    m = d + bool(fit_intercept)
    lap = laplacian_matvec if gamma_I > 0 else None
    if gamma_I > 0 and not callable(laplacian_matvec):
        raise ValueError("laplacian_matvec must be a callable F -> L^p F when gamma_I > 0.")

    def operator(mask=None, keep_products=False):
        if Wt is not None and mask is None:  # weighted loss rows (else: mask carries Wt)
            mask = Wt
        if base_operator is not None:
            return base_operator.with_loss(rows, mask, alpha=gamma_A * l,
                                           beta=gamma_I * scale * l)
        return NormalOperator(X, rows, lap, alpha=gamma_A * l, beta=gamma_I * scale * l,
                              fit_intercept=fit_intercept, mask=mask,
                              keep_products=keep_products)

    def active(Yc, Oc, cols):
        """Active set of the columns ``cols``, and the mask that weights its rows."""
        act = Yc * Oc < 1
        if Wt is None:
            return act, act
        act &= Wt[:, cols] > 0
        return act, act * Wt[:, cols]

    Z = np.zeros((m, k))
    Z1 = np.zeros((m, k))
    if init is not None:
        if np.shape(init.coef) != (k, d):
            raise ValueError(f"init.coef has shape {np.shape(init.coef)}, expected {(k, d)}.")
        Z[:d] = np.asarray(init.coef, dtype=np.float64).T
        if fit_intercept:
            Z[d] = init.intercept
        if init.state.get("Z1") is not None and init.state["Z1"].shape == (m, k):
            Z1 = init.state["Z1"].copy()

    c = r = None
    if balance is not None:
        r, c = balance_constraint(X, balance, unlabeled_rows, k, fit_intercept,
                                  base_operator)
        # Move to the feasible set (along the bias, else along c): every Newton point
        # is feasible, so every iterate of the line searches stays feasible.
        e = np.zeros(m)
        if fit_intercept:
            e[d] = 1.0
        else:
            e = c
        if c @ e == 0:
            raise ValueError("The class-balance constraint cannot be met: the unlabeled rows "
                             "have zero mean and there is no intercept.")
        Z += np.outer(e, (r - c @ Z) / (c @ e))

    if init_decision is not None and init is not None and balance is None:
        F = np.array(init_decision[0], dtype=np.float64).reshape(n, k)
        LF = None
        if lap is not None:
            LF = (lap(F) if init_decision[1] is None
                  else np.array(init_decision[1], dtype=np.float64).reshape(n, k))
    elif not Z[:d].any():
        # w = 0 (a cold start, possibly moved onto the balance constraint along the
        # bias): f = b 1 without a pass over X, and L^p f = 0 without a graph pass when
        # b = 0 too — only then: L^p 1 ≠ 0 for the normalised Laplacian
        F = np.zeros((n, k))
        if fit_intercept:
            F += Z[d]
        LF = None
        if lap is not None:
            LF = lap(F) if F.any() else np.zeros((n, k))
    else:
        F = operator().decision(Z)
        LF = lap(F) if lap is not None else None
    O = F[rows]
    J = _objective(Y, O, Z[:d], F, LF, gamma_A, gamma_I, scale,
                   weights=None if Wt is None else Wt / l)
    # With balance, z₀ (the unconstrained solution for the active set) is warm-started
    # from its previous value: the current point solves the constrained system, not
    # A z₀ = rhs. Without balance the current point is the warm start (SVMlin).
    Z0 = Z.copy()
    # B and the CG's first residual of a loose step that is redone tightly from the same
    # point (same active set): reused instead of one more Xᵀ pass.
    redo = np.zeros(k, dtype=bool)
    kept_B = kept_R = None
    # Without balance and with a NormalOperator: the CG residual from the kept f and L^p f.
    residual_from_kept = balance is None and base_operator is None
    tight = False  # phase: loose early Newton steps, then tight ones (one CG run for all)
    # A tight stop must also bound the objective gap: the relative residual tol alone does
    # not when γ_A is small (CG then stops far from the minimiser). For the active set's
    # quadratic l (J − J*) = rᵀA⁻¹r ≤ ‖r‖²/(γ_A l), r the CG residual, A ⪰ γ_A l on w (an
    # estimate where the bias couples to w). No such bound without γ_A, with balance or a
    # distributed operator: the residual rule alone there.
    certify = gamma_A > 0 and balance is None and base_operator is None
    cg_tol = tol
    running = np.ones(k, dtype=bool)
    cg_failed = np.zeros(k, dtype=bool)  # stopped on a tight step whose CG hit cg_max_iter
    history = [float(J.sum())]
    cg_iter = 0
    converged = False

    for n_iter in range(1, max_iter + 1):
        cols = np.flatnonzero(running)
        Yc, Oc = Y[:, cols], O[:, cols]
        act, actw = active(Yc, Oc, cols)
        # with balance, column j + |cols| (the constraint column z₁ of class j) shares
        # class j's active set
        # the products with a NormalOperator keep their passes (below)
        op = operator(mask=actw if balance is None else np.hstack([actw, actw]),
                      keep_products=balance is None)
        slack = tol if tight else max(LOOSE_TOL, tol)
        cg = dict(tol=cg_tol, max_iter=cg_max_iter) if tight else \
            dict(tol=slack, max_iter=min(LOOSE_CG_ITER, cg_max_iter))
        tracked = None
        if residual_from_kept:
            # The CG starts at the current point, whose F and L^p F are kept up to
            # date: its residual needs one Xᵀ pass, not a product with A; and the
            # Newton step's images X̃ dz and L^p X̃ dz are summed from the CG's own
            # products (dz = Σ α_i p_i), not recomputed by two more passes.
            if redo[cols].all():
                B, R0 = kept_B[:, cols], kept_R[:, cols]
            else:
                B, R0 = op.rhs_and_residual(Yc, F[:, cols],
                                            None if lap is None else LF[:, cols],
                                            Z[:, cols], np.arange(cols.size))
            on_update = None
            if np.all(np.any(B != 0, axis=0)):  # (CG sets a zero column's z to 0 directly)
                tracked = (np.zeros((n, cols.size)),
                           np.zeros((n, cols.size)) if lap is not None else None)

                def on_update(cc, alpha, positions):
                    Fp, LFp = op.last_products()
                    tracked[0][:, cc] += Fp[:, positions] * alpha
                    if LFp is not None:
                        tracked[1][:, cc] += LFp[:, positions] * alpha

            Zbar, info = _solve_columns(op, B, Z[:, cols], R0=R0, on_update=on_update, **cg)
        elif balance is None:
            B = op.rhs(Yc, np.arange(cols.size))
            Zbar, info = _solve_columns(op, B, Z[:, cols], **cg)
        else:
            B = np.hstack([op.rhs(Yc, np.arange(cols.size)),
                           np.repeat(c[:, None], cols.size, axis=1)])
            sol, info = _solve_columns(op, B, np.hstack([Z0[:, cols], Z1[:, cols]]), **cg)
            Z0[:, cols], Z1[:, cols] = sol[:, :cols.size], sol[:, cols.size:]
            nu = (r[cols] - c @ Z0[:, cols]) / (c @ Z1[:, cols])
            Zbar = Z0[:, cols] + Z1[:, cols] * nu
        cg_iter += info.n_iter

        dZ = Zbar - Z[:, cols]
        if tracked is not None:
            dF, LdF = tracked
        else:
            dF = op.decision(dZ)
            LdF = lap(dF) if lap is not None else None
        Obar = Oc + dF[rows]
        slope, curv = regulariser_line(Z[:d, cols], dZ[:d], None if lap is None else LF[:, cols],
                                       dF, LdF, gamma_A, gamma_I, scale)

        cg_ok = bool(info.converged.all())
        tighten = False
        worst = 0.0
        redo[cols] = False
        for jj, j in enumerate(cols):
            yo_bar = Yc[:, jj] * Obar[:, jj]
            a = act[:, jj]
            off = ~a if Wt is None else ~a & (Wt[:, j] > 0)
            accept = cg_ok and np.all(yo_bar[a] <= 1 + slack) and np.all(yo_bar[off] >= 1 - slack)
            if accept and not tight:
                tighten = True  # looks optimal at the loose tolerance: redo tightly
                if residual_from_kept:
                    if kept_B is None:
                        kept_B, kept_R = np.empty((m, k)), np.empty((m, k))
                    kept_B[:, j], kept_R[:, j] = B[:, jj], R0[:, jj]
                    redo[j] = True
                continue
            delta = 1.0 if accept else squared_hinge_line_search(
                Yc[:, jj], Oc[:, jj], Obar[:, jj], slope[jj], curv[jj], l,
                None if Wt is None else Wt[:, j])
            Z[:, j] += delta * dZ[:, jj]
            F[:, j] += delta * dF[:, jj]
            O[:, j] = F[rows, j]
            if lap is not None:
                LF[:, j] += delta * LdF[:, jj]
            J_old = J[j]
            J[j] = _objective(Y[:, [j]], O[:, [j]], Z[:d, [j]], F[:, [j]],
                              None if lap is None else LF[:, [j]],
                              gamma_A, gamma_I, scale,
                              weights=None if Wt is None else Wt[:, [j]] / l)[0]
            decrease = (J_old - J[j]) / max(abs(J_old), np.finfo(float).tiny)
            worst = max(worst, decrease)
            stalled = decrease < tol and np.array_equal(active(Y[:, [j]], O[:, [j]], [j])[0][:, 0],
                                                        a)
            stop = accept or (stalled and tight)
            if stop and certify and cg_tol > _CG_TOL_FLOOR:
                b_norm = np.linalg.norm(B[:, jj])
                allowed = l * np.sqrt(tol * J[j] * gamma_A)   # ‖r‖ for a gap of tol J
                # the bound is worst case (curvature γ_A l everywhere): refuse only a stop
                # it cannot keep within 100 tol J, then solve to within tol J
                if info.residual[jj] * b_norm > 10 * allowed:
                    cg_tol = max(_CG_TOL_FLOOR, min(cg_tol, 0.5 * allowed / b_norm))
                    stop = False
            if stop:
                running[j] = False
                cg_failed[j] = not cg_ok
            elif stalled:
                tighten = True  # a loose step is inexact, need not even descend: never stop on it
        tight = tight or tighten
        history.append(float(J.sum()))
        if callback is not None:
            callback(n_iter, worst)
        if not running.any():
            converged = not cg_failed.any()
            break

    if running.any():
        warnings.warn(
            f"LapSVM finite Newton did not converge in max_iter={max_iter} Newton steps "
            f"({int(running.sum())} of {k} target columns still running); increase max_iter.",
            ConvergenceWarning, stacklevel=2,
        )
    elif not converged:
        warnings.warn(
            f"LapSVM finite Newton stopped making progress while CG did not reach tol={tol:g} "
            f"in cg_max_iter={cg_max_iter} iterations; increase cg_max_iter (through "
            f"LapSVMClassifier: a larger gamma_A or tol, as a small gamma_A makes CG slow).",
            ConvergenceWarning, stacklevel=2,
        )

    coef = Z[:d].T.copy()
    intercept = Z[d].copy() if fit_intercept else np.zeros(k)
    state = {"cg_iter": cg_iter, "objective": J.copy(), "Z1": Z1 if c is not None else None}
    if not gradient_check:
        state["laplacian_decision"] = LF
        return LinearSolution(coef, intercept, F, n_iter, float("nan"), converged, state,
                              history)
    # Final decision values and the relative gradient norm, from f = X̃ z and L^p f
    # recomputed (one pass over X, one graph pass) — not from the f and L^p f the steps
    # updated, whose accumulated round-off this check is there to catch — then kept.
    op = operator(mask=active(Y, O, np.arange(k))[1])
    F = op.decision(Z)
    if base_operator is None:
        LF = lap(F) if lap is not None else None
        # (l/2) ∇J = A z − B = −(B − A z) from f and L^p f: one Xᵀ pass (B on it too)
        grad = -op.rhs_and_residual(Y, F, LF, Z)[1]
        if keep_laplacian_decision:
            state["laplacian_decision"] = LF
    else:
        grad = op.apply_to_decision(F, Z) - op.rhs(Y)  # = (l/2) ∇J
    g0 = np.linalg.norm(operator().rhs(Y), axis=0)  # (l/2) ‖∇J(0)‖: every row active at 0
    if c is not None:
        grad -= np.outer(c, (c @ grad) / (c @ c))
    residual = float(np.max(np.linalg.norm(grad, axis=0) / np.where(g0 > 0, g0, 1.0)))
    return LinearSolution(coef, intercept, F, n_iter, residual, converged, state, history)
