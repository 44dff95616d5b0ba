"""Ensemble manifold regularization (seed 002): the μ step and the alternation.

The joint objective (seed 002 eq. 3, with linlap's scaling of each graph term) is

    J(f, μ) = Σ_c [ (1/l) Σ_{i labeled} V(y_ic, f_ic) + γ_A ‖w_c‖² ]
              + Σ_k μ_k S_k(f) + γ_R ‖μ‖²,
    S_k(f) = γ_I s_k Σ_c f_cᵀ L_k^{p_k} f_c,     μ ∈ simplex {μ ≥ 0, Σ μ_k = 1},

summed over the target columns c (one per one-vs-rest class, all sharing μ), with
``s_k = 1/trace(L_k)`` the scale of candidate k. For fixed μ it is the base objective
with the graph term ``γ_I fᵀ (Σ_k μ_k s_k L_k^{p_k}) f``, i.e. a base solver called with
``scale=1`` and the combined operator of :func:`combined_laplacian_matvec`; for fixed
f it is the quadratic program of eq. 4 over the simplex, solved by the pairwise updates
of eq. 10 (:func:`update_mu`).
"""

import numpy as np

from .._validation import is_finite_number

__all__ = ["pair_update", "update_mu", "mu_objective", "combined_laplacian_matvec",
           "laplacian_quadratic_forms", "emr_alternate", "EMRResult"]


def mu_objective(mu, s, gamma_R):
    """``Σ_k μ_k s_k + γ_R ‖μ‖²`` (seed 002 eq. 4)."""
    mu = np.asarray(mu, dtype=np.float64)
    return float(mu @ np.asarray(s, dtype=np.float64) + gamma_R * (mu @ mu))


def pair_update(mu_i, mu_j, s_i, s_j, gamma_R):
    """Closed-form minimiser of eq. 4 over the pair (μ_i, μ_j), the others fixed (eq. 10).

    With ``c = μ_i + μ_j`` kept, ``μ_i* = (2γ_R c + s_j − s_i) / (4γ_R)`` clipped to
    ``[0, c]`` and ``μ_j* = c − μ_i*``. For ``γ_R = 0`` the pair's mass goes to the
    smaller ``s`` (unchanged on a tie).
    """
    c = mu_i + mu_j
    d = s_j - s_i
    if gamma_R > 0:
        # the unclipped minimiser c/2 + d/(4γ_R) is in [0, c] iff |d| ≤ 2γ_R c: test that
        # first, so that a tiny γ_R never divides into an overflow
        if abs(d) > 2.0 * gamma_R * c:
            a = c if d > 0 else 0.0
        else:
            a = min(max(0.5 * c + d / (4.0 * gamma_R), 0.0), c)
    elif s_i < s_j:
        a = c
    elif s_j < s_i:
        a = 0.0
    else:
        a = mu_i
    return a, c - a


def update_mu(s, gamma_R, mu=None, *, tol=1e-12, max_sweeps=1000):
    """Minimise ``Σ μ_k s_k + γ_R ‖μ‖²`` over the simplex by pairwise coordinate descent.

    Sweeps over all pairs (i < j) applying :func:`pair_update` (seed 002 eq. 10), until
    a sweep moves no weight by more than ``tol`` (or ``max_sweeps`` sweeps). Each pair
    update is the exact minimiser along its feasible line, so the objective never
    increases; for ``γ_R > 0`` the problem is strictly convex and the sweeps converge to
    its unique minimiser (the Euclidean projection of ``−s/(2γ_R)`` onto the simplex).

    Parameters
    ----------
    s : array-like of shape (m,)
        Smoothness of the current f on each candidate graph.
    gamma_R : float
        Weight of ``‖μ‖²`` (>= 0).
    mu : array-like of shape (m,), optional
        Start (a point of the simplex); default uniform ``1/m``.
    tol : float
    max_sweeps : int

    Returns
    -------
    mu : ndarray of shape (m,)
    """
    s = np.asarray(s, dtype=np.float64).ravel()
    m = s.size
    if m == 0:
        raise ValueError("s must have at least one entry.")
    if not (is_finite_number(gamma_R) and gamma_R >= 0):
        raise ValueError(f"gamma_R must be a finite number >= 0, got {gamma_R!r}.")
    mu = np.full(m, 1.0 / m) if mu is None else np.array(mu, dtype=np.float64).ravel()
    if mu.shape != (m,):
        raise ValueError(f"mu must have shape ({m},), got {mu.shape}.")
    for _ in range(max_sweeps):
        moved = 0.0
        for i in range(m - 1):
            for j in range(i + 1, m):
                a, b = pair_update(mu[i], mu[j], s[i], s[j], gamma_R)
                moved = max(moved, abs(a - mu[i]))
                mu[i], mu[j] = a, b
        if moved <= tol:
            break
    return mu


def combined_laplacian_matvec(groups, weights):
    """The operator ``F ↦ Σ_k weights_k L_k^{p_k} F`` as one callable.

    Parameters
    ----------
    groups : list of (power_sum, [(k, p), ...])
        ``power_sum(F, coefs, out=None, work=None)`` returns ``Σ_t coefs[t] L^t F`` for
        one Laplacian L (:meth:`KNNGraph.laplacian_power_sum` of its power-1 view); the
        pairs list the candidates that are powers ``L^p`` of it. A group costs
        ``max p`` passes of L however many powers it serves, and a candidate of weight 0
        costs nothing (a group with no weight is skipped).
    weights : array-like of shape (m,)

    Returns
    -------
    matvec : callable ``matvec(F, out=None, work=None)``
    """
    weights = np.asarray(weights, dtype=np.float64)
    live = []
    for power_sum, pairs in groups:
        coefs = {}
        for k, p in pairs:
            if weights[k] != 0:
                coefs[p] = coefs.get(p, 0.0) + weights[k]
        if coefs:
            live.append((power_sum, coefs))

    def matvec(F, out=None, work=None):
        F = np.asarray(F)
        if out is None:  # float64, or complex128 for complex F
            out = np.empty(F.shape, dtype=np.result_type(F.dtype, np.float64))
        if not live:
            out[...] = 0.0
            return out
        first, coefs = live[0]
        first(F, coefs, out=out, work=work)
        for power_sum, coefs in live[1:]:
            out += power_sum(F, coefs, work=work)
        return out

    return matvec


def laplacian_quadratic_forms(groups, m, F):
    """``[Σ_c F_cᵀ L_k^{p_k} F_c for k in range(m)]``, each group's powers shared.

    ``F_cᵀ L^p F_c = ⟨L^⌊p/2⌋ F_c, L^⌈p/2⌉ F_c⟩`` for a symmetric L (every KNNGraph
    Laplacian), so a group costs ``⌈max p / 2⌉`` applications of its ``step``, half of
    what forming ``L^p F`` would.
    """
    forms = np.zeros(m)
    for step, pairs in groups:
        half = [np.asarray(F)]  # L^t F for t = 0 … ⌈max p / 2⌉
        for _ in range((max(p for _, p in pairs) + 1) // 2):
            half.append(step(half[-1]))
        for k, p in pairs:
            forms[k] = float(np.sum(half[p // 2] * half[(p + 1) // 2]))
    return forms


class EMRResult:
    """Result of :func:`emr_alternate`.

    Attributes
    ----------
    solution : object
        The last f step's result (whatever ``solve_f`` returned).
    mu : ndarray of shape (m,)
    smoothness : ndarray of shape (m,)
        ``S_k(f)`` of the final f.
    gamma_R : float
        The γ_R used (resolved when ``'auto'``).
    objective : list of float
        J(f, μ): after the first f step (uniform μ), then after each μ step and the f
        step that follows it.
    n_iter : int
        f steps, the final one included.
    converged : bool
        Whether the alternation stopped by its rule (see :func:`emr_alternate`): the
        last μ step, after a final f step, left μ settled — and, when that f step was
        not a minimisation (``is_minimiser``), the f step itself lowered J by little.
        False when it ran to ``max_iter``.
    """

    def __init__(self, solution, mu, smoothness, gamma_R, objective, n_iter, converged):
        self.solution = solution
        self.mu = mu
        self.smoothness = smoothness
        self.gamma_R = gamma_R
        self.objective = objective
        self.n_iter = n_iter
        self.converged = converged


def emr_alternate(solve_f, smoothness, m, *, gamma_R="auto", tol=1e-3, max_iter=20,
                  callback=None, is_minimiser=None, stay_final=True):
    """Alternate the f step and the μ step of ensemble manifold regularization.

    Starting from ``μ = 1/m`` (seed 002 §2.1): (a) ``solve_f(μ, previous, final)``
    minimises J over f for fixed μ (warm-started from the previous f step's result) and
    returns ``(result, base)``, ``base`` being the loss and ambient part of J at the new
    f; (b) ``smoothness(result)`` returns ``S_k(f)`` for every candidate and μ is
    updated by :func:`update_mu`. J(f, μ) = base + μ·S + γ_R‖μ‖² is recorded after each
    μ step and each f step.

    The f steps are called with ``final=False`` and may be solved loosely
    (EMRClassifier: to 10× its base's tolerance, at most 1e-3; with a LapRLS base the
    first to 10× that, at most 1e-2, the later ones cut at 10 CG iterations: μ needs S
    only to a few digits, and each step starts from the last) until μ *settles*: a μ
    step lowers J by at most ``tol`` times J's terms in μ, μ·S + γ_R‖μ‖² (relative to J,
    whose loss can dwarf them, an f far from its minimiser would pass for settled μ).
    The next f step, at that μ, is called with ``final=True`` (solved to the base
    solver's own tolerance), and with ``stay_final`` (the default) so is every later
    one: back at a looser tolerance a warm-started step would often meet it without
    moving f — a no-op fit, and a μ step that changes nothing. (Without it, for final
    steps looser than the others, the steps after a final one that μ does not settle on
    are called with ``final=False`` again until μ settles.) The μ step after each final
    f step checks it: the alternation stops (``converged``), at that μ and that f, when
    μ is settled and either that f step minimises J over f (``is_minimiser(result)``; by
    default every step does) or it lowered J by at most ``tol`` times J's terms in f,
    base + μ·S. (An early-stopped f step — a kernel base's 'stability' check — is no
    minimiser: f can be far from the minimiser over f while μ barely moves, each further
    f step lowering J and shifting S; its own decrease is then what tells that f, too,
    has settled.) Otherwise μ takes its step and the alternation goes on. The
    ``max_iter``-th f step is a final one too (with ``m == 1`` or ``max_iter == 1``, the
    first), and the alternation ends after it without a check (not ``converged``, except
    for ``m == 1``). Each μ step is exact and each f step, warm-started, lowers J over f
    (CG and the Newton line searches only decrease their objective from the start), so J
    does not increase.

    Parameters
    ----------
    solve_f : callable ``(mu, previous, final) -> (result, base)``
    smoothness : callable ``result -> ndarray of shape (m,)``
    m : int
        Number of candidates.
    gamma_R : float or 'auto', default='auto'
        Weight of ``‖μ‖²``. ``'auto'`` is the data-driven value of seed 002 §4,
        ``γ_R = (1/m) Σ_k S_k(f₀)`` with f₀ the first f (uniform μ), then kept fixed
        so that every later step decreases the same J.
    tol : float, default=1e-3
        Decrease of J by a μ step, relative to μ·S + γ_R‖μ‖², below which μ counts as
        settled; and by a non-minimising final f step, relative to base + μ·S, below
        which f does.
    max_iter : int, default=20
        Most f steps, the final one included.
    callback : callable, optional
        ``callback(iteration, mu, objective)`` after each f step (iteration 1: the first,
        at uniform μ).
    is_minimiser : callable ``result -> bool``, optional
        Whether that f step's result minimises J over f at its μ (to the solver's
        tolerance); None: every f step does.
    stay_final : bool, default=True
        Whether every f step after the first final one is final too (right when the
        final steps are solved at least as tightly as the others).

    Returns
    -------
    EMRResult
    """
    if not (isinstance(m, (int, np.integer)) and m >= 1):
        raise ValueError(f"m must be an integer >= 1, got {m!r}.")
    if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 1):
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}.")
    if isinstance(gamma_R, str) and gamma_R != "auto":
        raise ValueError(f"gamma_R must be a number >= 0 or 'auto', got {gamma_R!r}.")
    mu = np.full(m, 1.0 / m)
    final = m == 1 or max_iter == 1
    result, base = solve_f(mu, None, final)
    S = np.asarray(smoothness(result), dtype=np.float64)
    if isinstance(gamma_R, str):
        gamma_R = float(S.mean())
    gamma_R = float(gamma_R)
    objective = [base + mu_objective(mu, S, gamma_R)]
    converged = m == 1
    n_iter = 1
    if callback is not None:  # the first f step, at uniform μ
        callback(n_iter, mu, objective[0])
    while not converged and n_iter < max_iter:
        mu_part = mu_objective(mu, S, gamma_R)  # J's terms in μ, before the step
        mu_next = update_mu(S, gamma_R, mu)
        J_mu = base + mu_objective(mu_next, S, gamma_R)
        # μ settled for this f — relative to the terms it changes, not to J, whose loss
        # can dwarf them
        settled = bool(objective[-1] - J_mu <= tol * max(mu_part, np.finfo(float).tiny))
        if settled and final:  # and f is solved to the base's tol: done, at this μ ...
            # ... if f minimises J at μ; an early-stopped f is no minimiser, and μ can
            # settle while each further f step still lowers J and shifts S: there the
            # f step's own decrease must be small too, relative (as μ's is to μ's
            # terms) to the terms of J it changes, base + μ·S — it is J less γ_R‖μ‖²
            f_part = objective[-1] - gamma_R * float(mu @ mu)
            if (is_minimiser is None or is_minimiser(result)
                    or objective[-2] - objective[-1]
                    <= tol * max(f_part, np.finfo(float).tiny)):
                converged = True
                break
        mu = mu_next
        # settled on a loose f: the next step, at this μ, is solved to the base's tol
        # and checked by one more μ step; once a step is, every later one is (back at
        # a looser tol, a step often meets it without moving f: a no-op fit); and
        # the last step the budget allows
        final = (final and stay_final) or settled or n_iter + 1 == max_iter
        result, base = solve_f(mu, result, final)
        n_iter += 1
        S = np.asarray(smoothness(result), dtype=np.float64)
        J = base + mu_objective(mu, S, gamma_R)
        # J after the μ step and after the following f step: both monotone
        objective.extend([J_mu, J])
        if callback is not None:
            callback(n_iter, mu, J)
    return EMRResult(result, mu, S, gamma_R, objective, n_iter, converged)
