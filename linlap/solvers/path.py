"""The LapSVM solution path in λ for a fixed ratio ρ = γ_A/γ_I (seed 000).

Scaling. The project's hinge-loss LapSVM minimises

    J(w, b) = (1/l) Σ_{i labeled} max(0, 1 − y_i f_i) + γ_A ‖w‖² + γ_I s fᵀL^p f,
    f = X w + b (all n rows),  s = graph.scale_ = 1/trace(L),  bias outside ‖w‖².

Multiplying by l and writing ``λ/2 = l γ_I``, ``ρ = γ_A/γ_I`` gives seed 000's primal (5)

    l·J = Σ_i ξ_i + (λ/2) [ρ ‖w‖² + s fᵀL^p f],

so a point λ of the path is the minimiser of J with

    γ_I = λ / (2 l),    γ_A = ρ λ / (2 l)        (l = number of labeled rows).

The bias. ``f = Xw + b`` on all rows, so ``s fᵀL^pf`` contains b unless ``L^p 1 = 0``.
As in :mod:`linlap.solvers.lapsvm_tinv`, the change of variables ``w = w' − b u`` with
``A = ρI + s XᵀL^pX``, ``u = A^{-1}(s XᵀL^p1)`` turns the bracket into
``w'ᵀAw' + q_S b²`` and ``f_i = x_iᵀw' + a_i b`` with ``a_i = 1 − x_iᵀu`` and the Schur
complement ``q_S = s 1ᵀL^p1 − s (L^p1)ᵀXu ≥ 0``. Two cases:

* ``L^p 1 = 0`` (unnormalised Laplacian): ``u = 0``, ``a = 1``, ``q_S = 0`` — the bias is
  free and the dual (seed 000 eq. 11) carries the equality constraint ``Σ y_i α_i = 0``:

      max_α Σ α_i − (1/2λ) αᵀQα,  0 ≤ α ≤ 1,  yᵀα = 0,  Q = Y X_l A^{-1} X_lᵀ Y,

  ``w = (1/λ) A^{-1}X_lᵀYα``, ``b = α_0/λ`` (α_0 the multiplier of the constraint).
  The path starts by Lemma 1 (``l_+ = l_−``) or Lemma 2 (unbalanced; a small QP).
* ``L^p 1 ≠ 0`` (normalised Laplacian, the project default): the bias is penalised by
  ``q_S b²`` and acts as one more feature ``a_i/√q_S``; the dual has no equality
  constraint, ``Q = Y (X_l A^{-1}X_lᵀ + a aᵀ/q_S) Y``, ``b = aᵀYα/(λ q_S)``, and the path
  starts from α = 1 (the first point reaches the elbow at ``λ = max_i (Q1)_i``).
  ``fit_intercept=False`` is the same without the bias column.

Both are exactly the minimiser of J (the same change of variables as the T⁻¹ solver), so
``LapSVMClassifier(solver='tinv', loss='hinge', gamma_A=ρλ/(2l), gamma_I=λ/(2l))``
gives the same w, b.

Computing Q. Only ``V = A^{-1}X_lᵀ`` (d × l) and ``u`` are needed:

* ``method='gram'``, dense direct: for d ≤ n the Cholesky of A (d × d); for d > n the
  push-through identity ``A^{-1}Xᵀ = Xᵀ(ρI + s L^p K)^{-1}`` with ``K = XXᵀ`` (n × n) —
  one dense LU of an n × n matrix (seed 000's P matrix with the linear kernel), redone by
  the d × d Cholesky when G comes out asymmetric (the LU lost its digits). The LU is not
  used for d < n: K is singular and the n × n matrix ill-conditioned (~‖X‖²/ρ) where A
  is not.
* ``method='cg'``: one batched CG with l + 1 right-hand sides on ``A`` through products
  with X and L^p (never a d × d matrix), for large n.
* kernel mode (``kernel='precomputed'``, X is an n × n Gram matrix K):
  ``f = Kβ + b``, ``J`` with ``γ_A βᵀKβ``; the same formulas with the coefficients β
  over the n training rows, ``P = (ρI + s L^p K)^{-1}[J^T, s L^p1]``.

Following the path (Theorem 1). With ``h = Qα + y α_0`` (``= λ y_i f_i``), the elbow
``E = {i : h_i = λ}`` and every other α_i fixed at 0 (``h_i > λ``) or 1 (``h_i < λ``),
the elbow conditions are linear in λ, so α_E and α_0 move along

    [[0, y_Eᵀ], [y_E, Q_EE]] d[α_0; α_E]/dλ = [0; 1]      (free bias),
    Q_EE dα_E/dλ = 1                                       (no equality constraint),

until an elbow α reaches 0 or 1 or an outside point reaches the elbow. Between two
breakpoints α and α_0 are exactly linear in λ, hence w·λ and b·λ too.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._validation import check_int, check_real
from .path_reduction import PathReduction, path_reduction

_EPS = 1e-10   # relative tolerance of ties between events and of the elbow test

__all__ = ["PathReduction", "LapSVMPath", "path_reduction", "follow_path", "path_for_targets"]

def _lemma2_qp(Q, maj, mino):
    """α on the majority class: min αᵀQα, α_minority = 1, α_maj ∈ [0, 1], Σ α_maj = l_min.

    SMO on the most violating pair (exact two-variable steps), then an exact polish of
    the free variables by their KKT system. Returns α (l,) and the threshold c (the
    multiplier of the sum: (Qα)_i = c on fractional α_i, ≤ c where α_i = 1, ≥ c where 0).
    """
    lM, lm = maj.size, mino.size
    alpha = np.zeros(Q.shape[0])
    alpha[mino] = 1.0
    alpha[maj] = lm / lM
    QM = Q[np.ix_(maj, maj)]
    q = Q[maj] @ alpha                      # (Qα) on the majority rows
    diag = np.diag(QM)
    scale = max(np.abs(diag).max(), 1e-300)
    tol = 1e-13 * scale * max(1, Q.shape[0])
    x = alpha[maj].copy()
    max_iter = 200 * lM * lM + 1000
    for _ in range(max_iter):
        up = x < 1.0
        dn = x > 0.0
        if not up.any() or not dn.any():
            break
        i = np.flatnonzero(up)[np.argmin(q[up])]
        j = np.flatnonzero(dn)[np.argmax(q[dn])]
        gap = q[j] - q[i]
        if gap <= tol:
            break
        curv = diag[i] + diag[j] - 2 * QM[i, j]
        tmax = min(1.0 - x[i], x[j])
        t = tmax if curv <= 0 else min(tmax, gap / curv)
        x[i] += t
        x[j] -= t
        if x[i] > 1 - 1e-15:
            x[i] = 1.0
        if x[j] < 1e-15:
            x[j] = 0.0
        q += t * (QM[:, i] - QM[:, j])
    # polish: fractional set F, solve [Q_FF, -1; 1ᵀ, 0][x_F; c] = [-Q_FR x_R; l_m - Σ x_R]
    F = np.flatnonzero((x > 1e-9) & (x < 1 - 1e-9))
    if F.size:
        R = np.setdiff1d(np.arange(lM), F)
        xr = x[R]
        rhs_q = -(QM[np.ix_(F, R)] @ xr) - Q[np.ix_(maj[F], mino)].sum(axis=1)
        Kkt = np.zeros((F.size + 1, F.size + 1))
        Kkt[:-1, :-1] = QM[np.ix_(F, F)]
        Kkt[:-1, -1] = -1.0
        Kkt[-1, :-1] = 1.0
        sol = np.linalg.lstsq(Kkt, np.append(rhs_q, lm - xr.sum()), rcond=None)[0]
        xF = sol[:-1]
        if np.all(xF >= -1e-9) and np.all(xF <= 1 + 1e-9):
            x_new = x.copy()
            x_new[F] = np.clip(xF, 0.0, 1.0)
            q_new = QM @ x_new + Q[np.ix_(maj, mino)].sum(axis=1)
            c = sol[-1]
            ok = (np.all(q_new[x_new >= 1] <= c + 1e-8 * scale)
                  and np.all(q_new[x_new <= 0] >= c - 1e-8 * scale))
            if ok:
                x, q = x_new, q_new
    alpha[maj] = x
    return alpha


def _initial_free(Q, y):
    """Lemma 1 (l₊ = l₋) / Lemma 2 (unbalanced) start of the free-bias path.

    Returns α⁰, λ⁰, α₀⁰, the elbow mask and the slope dα₀/dλ valid for λ > λ⁰
    (α is constant there; α₀ = α₀⁰ + (λ − λ⁰)·y_M keeps every KKT condition, y_M the
    majority label — +1 when balanced), and a description.
    """
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
    yM = 1.0 if pos.size >= neg.size else -1.0
    maj, mino = (pos, neg) if yM > 0 else (neg, pos)
    if maj.size == mino.size:
        alpha = np.ones(y.size)
        lemma = "lemma1"
    else:
        alpha = _lemma2_qp(Q, maj, mino)
        lemma = "lemma2"
    q = Q @ alpha
    scale = max(np.abs(np.diag(Q)).max(), 1e-300) * max(1, y.size)
    tol = 1e-9 * scale
    active = maj[alpha[maj] > 1e-12]
    c = q[active].max()
    qm = q[mino].max()
    lam0 = 0.5 * (qm + c)
    alpha0 = yM * (lam0 - c)
    E = np.zeros(y.size, dtype=bool)
    E[maj[np.abs(q[maj] - c) <= tol]] = True
    E[maj[(alpha[maj] > 1e-12) & (alpha[maj] < 1 - 1e-12)]] = True
    E[mino[q[mino] >= qm - tol]] = True
    return alpha, lam0, alpha0, E, yM, lemma


# ---------------------------------------------------------------------------------------
# Following the path
# ---------------------------------------------------------------------------------------

class _RawPath:
    def __init__(self):
        self.lambdas, self.alphas, self.alpha0s, self.elbows, self.events = [], [], [], [], []

    def add(self, lam, alpha, alpha0, E, event):
        self.lambdas.append(float(lam))
        self.alphas.append(alpha.copy())
        self.alpha0s.append(float(alpha0))
        self.elbows.append(np.flatnonzero(E))
        self.events.append(event)


def _elbow_matrix(Q, y, idx, free):
    """The matrix of the elbow equations: Q_EE, bordered by y_E for a free bias."""
    if not free:
        return Q[np.ix_(idx, idx)]
    m = idx.size
    M = np.zeros((m + 1, m + 1))
    M[0, 1:] = y[idx]
    M[1:, 0] = y[idx]
    M[1:, 1:] = Q[np.ix_(idx, idx)]
    return M


def _elbow_direction(Q, y, E, free):
    """Solve the Theorem 1 system on the elbow; returns (dα_E, dα₀, ok)."""
    idx = np.flatnonzero(E)
    M = _elbow_matrix(Q, y, idx, free)
    rhs = np.r_[0.0, np.ones(idx.size)] if free else np.ones(idx.size)
    sol = np.linalg.lstsq(M, rhs, rcond=1e-12)[0]
    res = np.linalg.norm(M @ sol - rhs)
    ok = res <= 1e-7 * (1.0 + np.linalg.norm(M) * np.linalg.norm(sol))
    if free:
        return sol[1:], sol[0], ok
    return sol, 0.0, ok


def _resolve_elbow(Q, y, E, alpha, alpha0, lam, free):
    """Recompute α_E, α₀ exactly from the elbow equations (no drift along the path)."""
    idx = np.flatnonzero(E)
    rest = np.flatnonzero(~E)
    base = Q[np.ix_(idx, rest)] @ alpha[rest]
    M = _elbow_matrix(Q, y, idx, free)
    rhs = np.r_[-y[rest] @ alpha[rest], lam - base] if free else lam - base
    try:
        sol = np.linalg.solve(M, rhs)
    except np.linalg.LinAlgError:
        return alpha, alpha0
    if free:
        a0, aE = sol[0], sol[1:]
    else:
        a0, aE = alpha0, sol
    if np.any(aE < -1e-7) or np.any(aE > 1 + 1e-7) or not np.all(np.isfinite(sol)):
        return alpha, alpha0
    out = alpha.copy()
    out[idx] = np.clip(aE, 0.0, 1.0)
    return out, a0


def _bias_bounds(y, status):
    """Rows bounding α₀ with an empty elbow, from h_i = q_i + y_i α₀ against λ:
    Lp α₀ ≤ λ − q (upper, slope +1), Lm α₀ ≥ q − λ (lower, slope −1),
    Rp α₀ ≥ λ − q (lower, slope +1), Rm α₀ ≤ q − λ (upper, slope −1)."""
    L, R = status == 1, status == 0
    return L & (y > 0), L & (y < 0), R & (y > 0), R & (y < 0)


def _empty_elbow(q, y, status, lam_k, lam_min):
    """Free bias with an empty elbow: α fixed, α₀ free in an interval that shrinks as
    λ decreases. Returns (λ*, α₀*, joining mask) for the largest λ* < λ_k where the
    interval closes, or None when it stays open down to λ_min (then α₀ at λ_min)."""
    Lp, Lm, Rp, Rm = _bias_bounds(y, status)
    cu = np.r_[-q[Lp], q[Rm]]
    su = np.r_[np.ones(Lp.sum()), -np.ones(Rm.sum())]
    iu = np.r_[np.flatnonzero(Lp), np.flatnonzero(Rm)]
    cl = np.r_[q[Lm], -q[Rp]]
    sl = np.r_[-np.ones(Lm.sum()), np.ones(Rp.sum())]
    il = np.r_[np.flatnonzero(Lm), np.flatnonzero(Rp)]

    if cu.size and cl.size:
        CU, CL = np.meshgrid(cu, cl, indexing="ij")
        SU, SL = np.meshgrid(su, sl, indexing="ij")
        # only an upper bound rising with λ (slope +1) and a lower one falling (slope −1)
        # close as λ decreases; the other pairs move apart (a pair of rows that just
        # left together meets at λ_k with zero width and must not "close" the elbow)
        ok = SU > SL
        cand = np.unique((CL[ok] - CU[ok]) / (SU[ok] - SL[ok]))
        lim = lam_k * (1 + _EPS) if np.isfinite(lam_k) else np.inf
        cand = cand[(cand <= lim) & (cand > lam_min)][::-1]
        if cand.size:
            his = (cu[:, None] + su[:, None] * cand[None, :]).min(axis=0)
            los = (cl[:, None] + sl[:, None] * cand[None, :]).max(axis=0)
            width = np.abs(cu).max() + np.abs(cl).max() + cand.max()
            closed = np.flatnonzero(his - los <= _EPS * width)
            if closed.size:
                lam = cand[closed[0]]
                lo, hi = los[closed[0]], his[closed[0]]
                a0 = 0.5 * (lo + hi)
                tol = 1e-9 * width
                join = np.zeros(y.size, dtype=bool)
                join[iu[np.abs(cu + su * lam - hi) <= tol]] = True
                join[il[np.abs(cl + sl * lam - lo) <= tol]] = True
                return lam, a0, join
    return None


def follow_path(Q, y, *, free_bias, lambda_min=None, lambda_min_ratio=1e-6, max_steps=None):
    """Follow α(λ) of ``max Σα − (1/2λ) αᵀQα, 0 ≤ α ≤ 1 [, yᵀα = 0]`` from λ = ∞ down.

    Parameters
    ----------
    Q : ndarray (l, l)
        ``Y G Y``, symmetric positive semi-definite.
    y : ndarray (l,) of ±1
    free_bias : bool
        Equality constraint ``yᵀα = 0`` (an unpenalised bias; Lemma 1/2 start).
    lambda_min : float, optional
        Stop there (default ``lambda_min_ratio · λ⁰``).
    max_steps : int, optional
        Cap on breakpoints (default ``50 l + 100``).

    Returns
    -------
    dict with 'lambdas' (K,) decreasing, 'alphas' (K, l), 'alpha0' (K,), 'elbows' (list
    of index arrays), 'events' (list of str), 'slope0' (dα₀/dλ above λ⁰), 'init'
    ('lemma1', 'lemma2' or 'all-ones'), 'complete' (no event between the last breakpoint
    and 0: the last segment extends exactly to λ → 0), 'status' ('ok', 'max_steps',
    'degenerate'), 'zero_model' (all-ones start with Q1 = 0 up to round-off: α = 1 and the
    model is w = 0, b = 0 at every λ).
    """
    if lambda_min is not None:
        check_real("lambda_min", lambda_min, 0, low_open=True)
    else:
        check_real("lambda_min_ratio", lambda_min_ratio, 0, 1, low_open=True, high_open=True)
    if max_steps is not None:
        check_int("max_steps", max_steps, 1)
    y = np.asarray(y, dtype=np.float64)
    l = y.size
    Q = 0.5 * (Q + Q.T)
    raw = _RawPath()
    zero_model = False
    if free_bias:
        if not (np.any(y > 0) and np.any(y < 0)):
            raise ValueError("The path with a free bias needs labeled rows of both classes.")
        alpha, lam, alpha0, E, slope0, init = _initial_free(Q, y)
    else:
        alpha = np.ones(l)
        q = Q @ alpha
        lam = q.max()
        alpha0, slope0, init = 0.0, 0.0, "all-ones"
        # 1ᵀq = yᵀGy ≥ 0 vanishes only with Gy = 0 (G is PSD), i.e. with every q_i: then
        # w = 0, b = 0 for every λ. A max below 1e-10 of the largest row sum of |Q| (some
        # 10⁵ times the round-off of those sums and of G's entries) is that zero, not a
        # breakpoint: following it fits the round-off of G.
        zero_model = not lam > _EPS * np.abs(Q).sum(axis=1).max()
        if zero_model:
            lam = 0.0
        E = q >= lam - 1e-9 * max(abs(lam), 1e-300)
    if lambda_min is None:
        lambda_min = lambda_min_ratio * max(lam, 0.0)
    max_steps = max_steps or 50 * l + 100
    status = np.where(alpha >= 1.0, 1, 0).astype(np.int8)
    status[E] = 2
    if not lam > lambda_min:
        # no event above λ_min: α⁰ is optimal everywhere above it. Complete (exact down to
        # λ → 0) only without any event at λ > 0 (λ⁰ <= 0: the Q1 = 0 model); a λ_min at
        # or above λ⁰ stops before the first breakpoint, below which α⁰ is not optimal
        lam_end = lambda_min if lambda_min > 0 else 1.0
        a0 = alpha0 + (lam_end - lam) * slope0
        raw.add(lam_end, alpha, a0, np.zeros(l, bool), "Q1 = 0" if zero_model else "no event")
        return _pack(raw, slope0, init, not lam > 0, "ok", zero_model)
    raw.add(lam, alpha, alpha0, E, init)
    zero_steps = 0
    state = "ok"
    complete = False
    while True:
        if len(raw.lambdas) >= max_steps:
            state = "max_steps"
            warnings.warn(f"lapsvm_path stopped after max_steps={max_steps} breakpoints at "
                          f"λ = {lam:.4g} (above lambda_min = {lambda_min:.4g}).",
                          ConvergenceWarning, stacklevel=3)
            break
        E = status == 2
        q = Q @ alpha
        if free_bias and not E.any():
            nxt = _empty_elbow(q, y, status, lam, lambda_min)
            if nxt is None:
                lo_hi = _empty_interval_at(q, y, status, lambda_min)
                raw.add(lambda_min, alpha, lo_hi, np.zeros(l, bool), "end")
                complete = True
                break
            lam, alpha0, join = nxt
            status[join] = 2
            raw.add(lam, alpha, alpha0, status == 2, "empty elbow closes")
            continue
        if E.any():
            dE, d0, ok = _elbow_direction(Q, y, E, free_bias)
            if not ok:
                state = "degenerate"
                warnings.warn(f"lapsvm_path: inconsistent elbow system at λ = {lam:.4g} "
                              f"(elbow {np.flatnonzero(E).tolist()}); the path stops here.",
                              ConvergenceWarning, stacklevel=3)
                break
        else:
            dE, d0 = np.zeros(0), 0.0
        dalpha = np.zeros(l)
        dalpha[E] = dE
        h = q + y * alpha0
        dh = Q[:, E] @ dE + y * d0
        deltas = np.full(l, -np.inf)
        kinds = np.zeros(l, dtype=np.int8)   # new status at the event
        denom = dh - 1.0
        num = lam - h
        Lmask = (status == 1) & (denom < 0)
        Rmask = (status == 0) & (denom > 0)
        for mask in (Lmask, Rmask):
            deltas[mask] = np.minimum(num[mask] / denom[mask], 0.0)
            kinds[mask] = 2
        up = E & (dalpha < 0)        # α grows as λ decreases: reaches 1 → L
        dn = E & (dalpha > 0)        # α shrinks: reaches 0 → R
        deltas[up] = np.minimum((1.0 - alpha[up]) / dalpha[up], 0.0)
        kinds[up] = 1
        deltas[dn] = np.minimum(-alpha[dn] / dalpha[dn], 0.0)
        kinds[dn] = 0
        best = deltas.max()
        if not np.isfinite(best) or lam + best <= lambda_min:
            # no further event above λ_min: the segment ends at λ_min
            d = lambda_min - lam
            alpha_end = np.clip(alpha + d * dalpha, 0.0, 1.0)
            raw.add(lambda_min, alpha_end, alpha0 + d * d0, E, "end")
            # (an event at λ = 0 lands there up to round-off)
            complete = not np.isfinite(best) or lam + best <= _EPS * lam
            break
        hit = deltas >= best - _EPS * lam
        if best > -_EPS * lam:
            zero_steps += 1
            best = 0.0
            if zero_steps > 2 * l + 10:
                state = "degenerate"
                warnings.warn(f"lapsvm_path: events cycle at λ = {lam:.4g} (degenerate "
                              f"ties); the path stops here.", ConvergenceWarning,
                              stacklevel=3)
                break
        else:
            zero_steps = 0
        alpha = alpha + best * dalpha
        alpha0 = alpha0 + best * d0
        lam = lam + best
        for i in np.flatnonzero(hit):
            status[i] = kinds[i]
            if kinds[i] == 1:
                alpha[i] = 1.0
            elif kinds[i] == 0:
                alpha[i] = 0.0
        alpha = np.clip(alpha, 0.0, 1.0)
        E = status == 2
        if E.any():
            alpha, alpha0 = _resolve_elbow(Q, y, E, alpha, alpha0, lam, free_bias)
        names = {0: "leaves to R", 1: "leaves to L", 2: "enters elbow"}
        event = "; ".join(f"{i} {names[int(kinds[i])]}" for i in np.flatnonzero(hit))
        if best == 0.0 and len(raw.lambdas):
            # same λ: update the last breakpoint's sets instead of a zero-length segment
            raw.lambdas.pop(); raw.alphas.pop(); raw.alpha0s.pop()
            raw.elbows.pop(); prev = raw.events.pop()
            event = prev + "; " + event
        raw.add(lam, alpha, alpha0, E, event)
    return _pack(raw, slope0, init, complete, state)


def _empty_interval_at(q, y, status, lam):
    """Midpoint of the feasible α₀ interval at λ (empty elbow, free bias)."""
    Lp, Lm, Rp, Rm = _bias_bounds(y, status)
    his = np.r_[lam - q[Lp], q[Rm] - lam]
    los = np.r_[q[Lm] - lam, lam - q[Rp]]
    hi = his.min() if his.size else np.inf
    lo = los.max() if los.size else -np.inf
    if np.isfinite(hi) and np.isfinite(lo):
        return 0.5 * (hi + lo)
    return hi if np.isfinite(hi) else (lo if np.isfinite(lo) else 0.0)


def _pack(raw, slope0, init, complete, state, zero_model=False):
    return {
        "zero_model": bool(zero_model),
        "lambdas": np.array(raw.lambdas),
        "alphas": np.array(raw.alphas),
        "alpha0": np.array(raw.alpha0s),
        "elbows": raw.elbows,
        "events": raw.events,
        "slope0": float(slope0),
        "init": init,
        "complete": bool(complete),
        "status": state,
    }


# ---------------------------------------------------------------------------------------
# Result object and the public function
# ---------------------------------------------------------------------------------------

class LapSVMPath:
    """The whole hinge-loss LapSVM solution path in λ for one binary problem.

    A point λ is the minimiser of ``J = (1/l) Σ max(0, 1 − y f) + γ_A‖w‖² + γ_I s fᵀL^pf``
    with ``γ_I = λ/(2l)``, ``γ_A = ρλ/(2l)`` (see :mod:`linlap.solvers.path`).

    Attributes
    ----------
    lambdas : ndarray (K,)
        Breakpoints, strictly decreasing; the last one is ``lambda_min`` (the end).
    alphas : ndarray (K, l)
        Dual variables at the breakpoints.
    alpha0 : ndarray (K,)
        ``α₀ = λ b`` at the breakpoints (free bias; 0 otherwise).
    intercepts : ndarray (K,)
        ``b`` at the breakpoints.
    elbows : list of ndarray
        Elbow set (positions into the labeled rows) on the segment below each breakpoint.
    events : list of str
    gamma_I, gamma_A : ndarray (K,)
        The objective's weights at the breakpoints.
    labeled_rows : ndarray (l,)
    y : ndarray (l,) of ±1
    classes : ndarray (2,) or None
        ``classes[1]`` ↦ +1.
    reduction : PathReduction
    init : {'lemma1', 'lemma2', 'all-ones'}
    complete : bool
        The last segment has no event down to λ → 0 (values below the end are exact).
    status : {'ok', 'max_steps', 'degenerate'}
    zero_model : bool
        ``Q1 = 0`` up to round-off (e.g. one document labeled with both classes): the
        minimiser is w = 0, b = 0 at every λ, returned as exact zeros (``V(Yα)/λ`` would
        blow its round-off up as λ → 0).
    """

    def __init__(self, reduction, y, raw, positions=None, classes=None):
        self.reduction = reduction
        self.positions = np.arange(reduction.n_labeled) if positions is None else positions
        self.labeled_rows = reduction.labeled_rows[self.positions]
        self.y = np.asarray(y, dtype=np.float64)
        self.classes = classes
        self.lambdas = raw["lambdas"]
        self.alphas = raw["alphas"]
        self.alpha0 = raw["alpha0"]
        self.elbows = raw["elbows"]
        self.events = raw["events"]
        self.slope0 = raw["slope0"]
        self.init = raw["init"]
        self.complete = raw["complete"]
        self.status = raw["status"]
        self.zero_model = raw.get("zero_model", False)
        l = self.y.size
        self.gamma_I = self.lambdas / (2 * l)
        self.gamma_A = reduction.rho * self.gamma_I
        self.intercepts = np.array([self._bias(a, a0, lam) for a, a0, lam
                                    in zip(self.alphas, self.alpha0, self.lambdas)])

    def __repr__(self):
        return (f"LapSVMPath(l={self.y.size}, rho={self.reduction.rho:.3g}, "
                f"breakpoints={self.lambdas.size}, init={self.init!r}, status={self.status!r})")

    @property
    def n_labeled(self):
        return self.y.size

    def _bias(self, alpha, alpha0, lam):
        red = self.reduction
        if self.zero_model:
            return 0.0
        if red.bias == "free":
            return alpha0 / lam
        if red.bias == "penalized":
            a = red.a[self.positions]
            return float(a @ (self.y * alpha)) / (lam * red.q)
        return 0.0

    def dual_at(self, lam):
        """Exact (α, α₀) at λ by linear interpolation between breakpoints."""
        lam = float(lam)
        if not lam > 0:
            raise ValueError(f"lambda must be > 0, got {lam!r}.")
        L = self.lambdas
        if lam >= L[0]:
            return self.alphas[0].copy(), self.alpha0[0] + (lam - L[0]) * self.slope0
        if lam < L[-1]:
            if not self.complete or L.size < 2:
                if L.size < 2 and self.complete:
                    return self.alphas[0].copy(), self.alpha0[0] + (lam - L[0]) * self.slope0
                raise ValueError(f"lambda = {lam:.4g} is below the end of the computed path "
                                 f"({L[-1]:.4g}); recompute with a smaller lambda_min.")
            k = L.size - 2   # the last segment extends exactly to 0
        else:
            k = int(np.searchsorted(-L, -lam, side="right")) - 1
            k = min(max(k, 0), L.size - 2)
        t = (lam - L[k + 1]) / (L[k] - L[k + 1])
        alpha = self.alphas[k + 1] + t * (self.alphas[k] - self.alphas[k + 1])
        alpha0 = self.alpha0[k + 1] + t * (self.alpha0[k] - self.alpha0[k + 1])
        return alpha, alpha0

    def coef_at(self, lam):
        """``(w, b)`` at λ; w has length d (linear) or n (kernel coefficients β)."""
        alpha, alpha0 = self.dual_at(lam)
        red = self.reduction
        b = self._bias(alpha, alpha0, lam)
        if self.zero_model:
            return np.zeros(red.V.shape[0]), b
        w = red.V[:, self.positions] @ (self.y * alpha) / lam - b * red.u
        return w, b

    def decision_labeled(self, lams, positions=None):
        """Decision values ``f`` at rows ``positions`` of the reduction's labeled rows
        (default: this path's own) for each λ in ``lams``: array (len(lams), m).

        Uses only the l × l matrix G, so held-out labeled rows cost nothing extra.
        """
        red = self.reduction
        pos = self.positions if positions is None else np.asarray(positions)
        Gp = red.G[np.ix_(pos, self.positions)]
        if red.bias == "penalized":   # G holds a aᵀ/q; f = (G_raw Yα)/λ + a b
            Gp = Gp - np.outer(red.a[pos], red.a[self.positions]) / red.q
        out = np.zeros((len(lams), pos.size))
        if self.zero_model:
            return out
        for j, lam in enumerate(np.atleast_1d(lams)):
            alpha, alpha0 = self.dual_at(lam)
            b = self._bias(alpha, alpha0, lam)
            abias = 1.0 if red.bias == "free" else (0.0 if red.bias == "none" else red.a[pos])
            out[j] = Gp @ (self.y * alpha) / lam + abias * b
        return out


def path_for_targets(reduction, targets, positions=None, *, lambda_min=None,
                     lambda_min_ratio=1e-6, max_steps=None, classes=None):
    """Path for ±1 ``targets`` of the labeled rows ``positions`` of a reduction
    (default all): the sub-matrix of G serves every fold of a cross-validation."""
    pos = np.arange(reduction.n_labeled) if positions is None else np.asarray(positions)
    t = np.asarray(targets, dtype=np.float64)
    if t.shape != (pos.size,) or not np.all(np.abs(t) == 1):
        raise ValueError("targets must be ±1, one per labeled position.")
    if not (np.any(t > 0) and np.any(t < 0)):
        raise ValueError("The path needs labeled rows of both classes.")
    Q = reduction.G[np.ix_(pos, pos)] * np.outer(t, t)
    raw = follow_path(Q, t, free_bias=reduction.bias == "free", lambda_min=lambda_min,
                      lambda_min_ratio=lambda_min_ratio, max_steps=max_steps)
    return LapSVMPath(reduction, t, raw, positions=pos, classes=classes)
