"""Laplacian S³VM: manifold regularisation plus low-density separation.

The linear model ``f = X w + b`` minimises, for each ±1 target column (one per
one-vs-rest class),

    J(w, b) = (1/l) Σ_{i labeled} V(y_i f_i) + γ_A ‖w‖² + γ_I s fᵀ L^p f
              + (γ_U/u) Σ_{j unlabeled} [p_j V(f_j) + (1 − p_j) V(−f_j)],

``V(t) = max(0, 1 − t)²`` the squared hinge, ``s`` the graph scale, over ``w, b``
and the unlabeled labels ``p_j ∈ {0, 1}`` (1: row j is positive) subject to the
class balance ``(1/u) Σ_j p_j = π`` (π the wanted positive proportion, given or
estimated from LapSVM decision values: :func:`start_fraction`, :func:`blend_fraction`). Two
solvers, both built on the row-weighted finite Newton LapSVM
(:func:`linlap.solvers.lapsvm_newton.lapsvm_newton` with ``row_weights``):

- :func:`s3vm_annealing` — deterministic annealing (Sindhwani & Keerthi, SIGIR
  2006): relax ``p_j`` to ``[0, 1]``, add the entropy term
  ``(T/u) Σ_j [p_j log p_j + (1 − p_j) log(1 − p_j)]`` and follow the minimiser as
  the temperature T decreases;
- :func:`s3vm_switching` — transductive SVM by multi-switch label swapping (hard
  labels, γ_U raised gradually).

With ``γ_I = 0`` they are the linear S³VMs of SVMlin (DA and TSVM); with
``γ_U = 0`` both return the LapSVM minimiser.
"""

import warnings

import numpy as np
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning

from .._validation import is_finite_number
from ._problem import LinearSolution, check_problem
from .cg import NonFiniteOperatorError
from .lapsvm_newton import lapsvm_newton

__all__ = ["s3vm_annealing", "s3vm_switching", "s3vm_objective", "s3vm_problem",
           "balanced_soft_labels", "start_fraction", "split_fraction", "blend_fraction"]


#: γ_A of the extra LapSVM solve of ``positive_fraction='blend'``, relative to the γ_A of
#: the S³VM (the estimate is made from a less regularised fit than the start).
BLEND_GAMMA_A_FACTOR = 0.1


def _sq_hinge(t):
    xi = np.maximum(0.0, 1.0 - t)
    return xi * xi


def _check_fraction(positive_fraction, k):
    r = np.broadcast_to(np.asarray(positive_fraction, dtype=np.float64), (k,)).copy()
    if not np.all((r > 0) & (r < 1)):
        raise ValueError(f"positive_fraction must lie strictly between 0 and 1 (one per "
                         f"target column), got {positive_fraction!r}.")
    return r


def _check_unlabeled(n, labeled_rows, unlabeled_rows):
    U = np.asarray(unlabeled_rows)
    if U.ndim != 1 or U.size == 0 or not np.issubdtype(U.dtype, np.integer):
        raise ValueError("unlabeled_rows must be a non-empty 1-D array of row indices.")
    U = U.astype(np.intp)
    if U.min() < 0 or U.max() >= n or np.unique(U).size != U.size:
        raise ValueError(f"unlabeled_rows must be distinct indices in [0, {n}).")
    if np.intersect1d(U, labeled_rows).size:
        raise ValueError("unlabeled_rows and labeled_rows must not overlap.")
    return U


def _balance_root(g, fraction, temperature):
    """ν with ``mean(expit((ν − g)/T)) = fraction``, and those probabilities.

    The mean is increasing in ν with derivative ``mean(s (1 − s))/T``: Newton's
    iteration from the ``fraction``-quantile of g (the root's limit as T → 0), kept
    inside a bracket that every evaluation narrows, and bisection when a step leaves
    it. Stops when the step or the bracket is below ``1e-14 · max(1, max |g|)``, or
    the balance holds to round-off: 3–5 passes over g at the annealing temperatures
    (a bracketing method such as Brent's needs about twenty).
    """
    u = g.size
    lo, hi = g.min() - 50 * temperature, g.max() + 50 * temperature
    xtol = 1e-14 * max(1.0, float(np.abs(g).max()))
    m = min(u - 1, int(fraction * u))
    nu = float(np.partition(g, m)[m])
    scaled = g / temperature
    s = np.empty_like(g)

    def probabilities(nu):
        np.subtract(nu / temperature, scaled, out=s)
        return expit(s, out=s)

    for _ in range(200):
        probabilities(nu)
        total = s.sum()
        excess = total / u - fraction
        if abs(excess) <= 4 * np.finfo(float).eps:
            break
        if excess < 0:
            lo = nu
        else:
            hi = nu
        slope = (total - np.dot(s, s)) / (u * temperature)  # mean s (1 − s) / T
        step = nu - excess / slope if slope > 0 else np.nan
        if not lo < step < hi:  # also catches NaN
            step = 0.5 * (lo + hi)
        if abs(step - nu) <= xtol or hi - lo <= xtol:
            nu = step
            probabilities(nu)
            break
        nu = step
    else:
        probabilities(nu)
    return nu, s


def balanced_soft_labels(G, temperature, positive_fraction):
    """The label probabilities minimising the annealed objective for fixed f.

    Per column, minimises ``Σ_j p_j g_j + T Σ_j [p_j log p_j + (1 − p_j) log(1 − p_j)]``
    subject to ``(1/u) Σ_j p_j = π``: ``p_j = 1 / (1 + exp((g_j − ν)/T))`` with ν the
    root of the (increasing, 1-D) balance equation, found by a safeguarded Newton
    iteration (:func:`_balance_root`). At ``T = 0`` the minimiser of the linear
    program: ``p_j = 1`` on the ``⌊π u⌋`` rows of smallest ``g_j``, one fractional
    entry for the remainder, 0 elsewhere (ties in g broken arbitrarily: the objective
    does not depend on how); found by selection, not a sort.

    Parameters
    ----------
    G : ndarray of shape (u, k)
        ``g_j = γ_U (V(f_j) − V(−f_j))``: the cost of labelling row j positive rather
        than negative.
    temperature : float
        ``T ≥ 0``.
    positive_fraction : float or ndarray of shape (k,)
        π per column, in (0, 1).

    Returns
    -------
    P : ndarray of shape (u, k)
    """
    G = np.asarray(G, dtype=np.float64)
    u, k = G.shape
    r = _check_fraction(positive_fraction, k)
    P = np.empty_like(G)
    for j in range(k):
        g = G[:, j]
        if temperature > 0:
            P[:, j] = _balance_root(g, r[j], float(temperature))[1]
            continue
        R = r[j] * u
        m = int(np.floor(R))
        p = np.zeros(u)
        if m < u:
            order = np.argpartition(g, m)  # the m smallest first, then the (m+1)-th
            p[order[:m]] = 1.0
            p[order[m]] = R - m
        else:
            p[:] = 1.0
        P[:, j] = p
    return P


def s3vm_problem(labeled_rows, targets, unlabeled_rows, P, gamma_U):
    """Loss rows, targets and weights of the weighted LapSVM for fixed labels ``P``.

    The S³VM objective for fixed ``P`` is a squared-hinge LapSVM whose loss rows are
    the labeled rows (weight ``1/l``) and every unlabeled row twice: target +1 with
    weight ``γ_U p_j / u`` and target −1 with weight ``γ_U (1 − p_j) / u`` (per
    column). Copies whose weight is 0 in every column are left out (hard labels
    thus give each unlabeled row once).

    Returns
    -------
    rows : ndarray of int, shape (m,)
    T : ndarray of shape (m, k), ±1
    W : ndarray of shape (m, k), ≥ 0
    """
    Y = np.asarray(targets, dtype=np.float64)
    Y = Y[:, None] if Y.ndim == 1 else Y
    l, k = Y.shape
    U = np.asarray(unlabeled_rows, dtype=np.intp)
    u = U.size
    P = np.asarray(P, dtype=np.float64).reshape(u, k)
    rows = np.concatenate([labeled_rows, U, U])
    T = np.vstack([Y, np.ones((u, k)), -np.ones((u, k))])
    W = np.vstack([np.full((l, k), 1.0 / l), gamma_U / u * P, gamma_U / u * (1.0 - P)])
    keep = np.ones(rows.size, dtype=bool)
    keep[l:] = np.any(W[l:] > 0, axis=1)
    return rows[keep], T[keep], W[keep]


def s3vm_objective(X, targets, labeled_rows, unlabeled_rows, laplacian_matvec, coef,
                   intercept, *, gamma_A, gamma_I, gamma_U, scale, positive_fraction=None,
                   P=None):
    """Evaluate the S³VM objective of the module docstring.

    With ``P`` (shape (u, k), entries in [0, 1]) the objective at those labels (no
    entropy term); otherwise its minimum over the balanced labels,
    ``min {J(w, b, p) : p ∈ [0, 1]^u, (1/u) Σ p_j = π}`` — the objective of ``(w, b)``
    alone, reached at hard labels (:func:`balanced_soft_labels` at ``T = 0``).

    Returns
    -------
    J : ndarray of shape (k,)
    """
    Y, rows = check_problem(X, targets, labeled_rows, gamma_A=gamma_A, gamma_I=gamma_I,
                            scale=scale)
    U = _check_unlabeled(X.shape[0], rows, unlabeled_rows)
    Wc = np.atleast_2d(np.asarray(coef, dtype=np.float64)).T
    F = np.asarray(X @ Wc) + np.atleast_1d(np.asarray(intercept, dtype=np.float64))
    if P is None:
        if positive_fraction is None:
            raise ValueError("s3vm_objective needs P or positive_fraction.")
        FU = F[U]
        P = balanced_soft_labels(gamma_U * (_sq_hinge(FU) - _sq_hinge(-FU)), 0.0,
                                 _check_fraction(positive_fraction, Y.shape[1]))
    return _objective_values(F, Wc, Y, rows, U, laplacian_matvec, gamma_A, gamma_I, gamma_U,
                             scale, P)


def _objective_values(F, Wc, Y, rows, U, laplacian_matvec, gamma_A, gamma_I, gamma_U, scale,
                      P, LF=None):
    """The S³VM objective per column from checked arrays: F the decision values of all
    rows (n, k), Wc the weights (d, k), P the labels of the rows U (u, k); ``LF``:
    ``L^p F`` when the caller has it (else one graph product)."""
    J = _sq_hinge(Y * F[rows]).mean(axis=0) + gamma_A * np.einsum("ij,ij->j", Wc, Wc)
    if gamma_I > 0:
        LF = laplacian_matvec(F) if LF is None else LF
        J = J + gamma_I * scale * np.einsum("ij,ij->j", F, LF)
    FU = F[U]
    P = np.asarray(P, dtype=np.float64).reshape(U.size, Y.shape[1])
    return J + gamma_U * np.mean(P * _sq_hinge(FU) + (1 - P) * _sq_hinge(-FU), axis=0)


def start_fraction(F_unlabeled, classes=False):
    """Class balance estimated from decision values on the unlabeled rows.

    ``π = (1 + (1/u) Σ_j clip(f_j, −1, 1)) / 2`` per column; with ``classes=True``
    (the columns are one-vs-rest classes) these are then divided by their sum; finally
    clipped to ``[1/u, 1 − 1/u]``. The pointwise minimiser of the expected squared
    hinge ``E[V(y f)]`` is ``f = 2 P(y = 1 | x) − 1`` (clipped to [−1, 1]), so for a
    squared-hinge fit the mean of the clipped decision values estimates ``2π − 1``;
    a regularised fit shrinks f toward 0 and so π toward ½, which for many one-vs-rest
    classes inflates every π alike — the division by the sum undoes that.

    Parameters
    ----------
    F_unlabeled : ndarray of shape (u, k)
    classes : bool, default=False
        Normalise the k estimates to sum to 1.

    Returns
    -------
    pi : ndarray of shape (k,)
    """
    F = _columns(F_unlabeled)
    return _normalised(_clipped_mean(F), F.shape[0], classes)


def _columns(F_unlabeled):
    F = np.asarray(F_unlabeled, dtype=np.float64)
    return F[:, None] if F.ndim == 1 else F


def _clipped_mean(F):
    """(1 + mean clip(f, −1, 1)) / 2 per column."""
    return (1.0 + np.clip(F, -1.0, 1.0).mean(axis=0)) / 2.0


def _normalised(pi, u, classes):
    """Divided by the sum over the columns (``classes``), clipped to [1/u, 1 − 1/u]."""
    if classes:
        pi = pi / pi.sum()
    return np.clip(pi, 1.0 / u, 1.0 - 1.0 / u)


def split_fraction(F_unlabeled, max_iter=100):
    """Fraction of the decision values above the two-means threshold.

    Per column, 1-D two-means clustering of the values ``f_j`` (Lloyd's iteration on
    the threshold): ``t₀ = mean f``, ``t_{i+1} = (mean{f_j > t_i} + mean{f_j ≤ t_i}) / 2``
    until ``t`` repeats or after ``max_iter`` updates; returned ``(1/u) #{f_j > t}``.
    A column whose values are all equal gives ½.

    Parameters
    ----------
    F_unlabeled : ndarray of shape (u,) or (u, k)
    max_iter : int, default=100

    Returns
    -------
    pi : ndarray of shape (k,)
    """
    F = _columns(F_unlabeled)
    out = np.full(F.shape[1], 0.5)
    for c in range(F.shape[1]):
        f = F[:, c]
        t = f.mean()
        if not f.max() > f.min():
            continue
        for _ in range(max_iter):
            up = f > t
            if up.all() or not up.any():  # round-off at nearly equal values
                break
            t_new = (f[up].mean() + f[~up].mean()) / 2.0
            if t_new == t:
                break
            t = t_new
        out[c] = np.mean(f > t)
    return out


def blend_fraction(F_unlabeled, classes=False):
    """Class balance: the mean of the clipped-mean and the two-means estimates.

    ``π = ½ [(1 + (1/u) Σ_j clip(f_j, −1, 1)) / 2 + m(f)]`` per column, ``m(f)`` the
    fraction above the two-means threshold (:func:`split_fraction`); with
    ``classes=True`` divided by the sum over the columns; finally clipped to
    ``[1/u, 1 − 1/u]``. The clipped mean follows the level of f (its intercept), the
    two-means split the shape of its distribution (where it separates into two
    groups); their errors partly cancel.

    Parameters
    ----------
    F_unlabeled : ndarray of shape (u,) or (u, k)
    classes : bool, default=False

    Returns
    -------
    pi : ndarray of shape (k,)
    """
    F = _columns(F_unlabeled)
    return _normalised((_clipped_mean(F) + split_fraction(F)) / 2.0, F.shape[0], classes)


def _mean_entropy(P):
    """Binary entropy of P per column, in units of log 2, summed over all rows but the
    most uncertain one and divided by the rows (1 − 1/u: every p_j = ½). The balance keeps
    one p_j fractional even at T → 0 when πu is not a whole number; counted, its entropy
    alone (up to 1/u) could stay above ``entropy_tol`` for a few hundred rows."""
    Q = np.clip(P, 1e-300, 1.0)
    R = np.clip(1.0 - P, 1e-300, 1.0)
    H = -(P * np.log(Q) + (1 - P) * np.log(R)) / np.log(2.0)
    return (H.sum(axis=0) - H.max(axis=0)) / P.shape[0]


def _mean_kl(P, Q):
    """Mean binary KL divergence KL(P ‖ Q) per column (probabilities clipped at 1e-12)."""
    P = np.clip(P, 1e-12, 1 - 1e-12)
    Q = np.clip(Q, 1e-12, 1 - 1e-12)
    return np.mean(P * np.log(P / Q) + (1 - P) * np.log((1 - P) / (1 - Q)), axis=0)


class _Solver:
    """The shared pieces: the start (LapSVM on the labeled rows) and weighted solves."""

    def __init__(self, X, targets, labeled_rows, unlabeled_rows, laplacian_matvec, gamma_A,
                 gamma_I, gamma_U, scale, positive_fraction, fit_intercept, tol, max_iter,
                 cg_max_iter, balance="labels"):
        Y, rows = check_problem(X, targets, labeled_rows, gamma_A=gamma_A, gamma_I=gamma_I,
                                scale=scale)
        if not (is_finite_number(gamma_U) and gamma_U >= 0):
            raise ValueError(f"gamma_U must be a finite number >= 0, got {gamma_U!r}.")
        self.U = _check_unlabeled(X.shape[0], rows, unlabeled_rows)
        self.Y, self.rows = Y, rows
        self.k = Y.shape[1]
        if isinstance(positive_fraction, str):
            if positive_fraction not in ("start", "start-classes", "blend", "blend-classes"):
                raise ValueError(f"positive_fraction must be 'start', 'start-classes', "
                                 f"'blend', 'blend-classes' or proportions, got "
                                 f"{positive_fraction!r}.")
            if self.U.size < 2:  # [1/u, 1 − 1/u] would leave no valid π
                raise ValueError(f"positive_fraction={positive_fraction!r} estimates π from "
                                 f"the unlabeled rows and needs at least 2 of them, got "
                                 f"{self.U.size}; pass π instead.")
            if balance != "labels":
                raise ValueError(f"positive_fraction={positive_fraction!r} needs "
                                 f"balance='labels' (the start's decision values would "
                                 f"depend on π).")
            self.r = None  # estimated from the start (estimate_fraction)
            self.classes = positive_fraction.endswith("-classes")
            self.blend = positive_fraction.startswith("blend")
        else:
            self.r = _check_fraction(positive_fraction, self.k)
        self.X, self.lap = X, laplacian_matvec
        self.kw = dict(gamma_A=gamma_A, gamma_I=gamma_I, scale=scale,
                       fit_intercept=fit_intercept, max_iter=max_iter, cg_max_iter=cg_max_iter)
        self.gamma_U, self.tol = gamma_U, tol
        if balance not in ("labels", "mean"):
            raise ValueError(f"balance must be 'labels' or 'mean', got {balance!r}.")
        # 'mean': pin the mean decision value over U to 2π − 1 (the LapSVM class_prior
        # constraint) instead of the labels' proportion
        self.mean = None if balance == "labels" else 2.0 * self.r - 1.0
        self.n_solves = self.newton_steps = self.cg_iter = 0
        self.warned = False

    def solve(self, P=None, init=None, tol=None, gamma_A=None):
        """LapSVM on the labeled rows (P None) or the weighted problem for labels P
        (``gamma_A``: another γ_A than the S³VM's, for the 'blend' estimate)."""
        tol = self.tol if tol is None else tol
        kw = self.kw if gamma_A is None else dict(self.kw, gamma_A=gamma_A)
        # the loose solves while annealing: no final gradient check (its residual is
        # never reported; it costs a pass over X, a graph pass and one or two Xᵀ passes
        # per solve); the tight ones keep the L^p f their check recomputes
        kw = dict(kw, gradient_check=tol <= self.tol, keep_laplacian_decision=True)
        if init is not None and "laplacian_decision" in init.state:
            # the previous solve's f and L^p f (updated by a loose solve, recomputed by a
            # tight one's check): the next solve and the objective start without their
            # passes
            kw["init_decision"] = (init.decision, init.state["laplacian_decision"])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            bal = {} if self.mean is None else dict(balance=self.mean, unlabeled_rows=self.U)
            try:
                if P is None:
                    sol = lapsvm_newton(self.X, self.Y, self.rows, self.lap, tol=tol,
                                        init=init, **bal, **kw)
                else:
                    rows, T, W = s3vm_problem(self.rows, self.Y, self.U, P, self.gamma_U)
                    sol = lapsvm_newton(self.X, T, rows, self.lap, tol=tol, init=init,
                                        row_weights=W, **bal, **kw)
            except NonFiniteOperatorError as exc:
                raise ValueError(self._overflow_message(kw)) from exc
        if not (np.all(np.isfinite(sol.coef)) and np.all(np.isfinite(sol.intercept))):
            raise ValueError(self._overflow_message(kw))
        self.warned |= any(issubclass(w.category, ConvergenceWarning) for w in caught)
        self.n_solves += 1
        self.newton_steps += sol.n_iter
        self.cg_iter += sol.state.get("cg_iter", 0)
        return sol

    def _overflow_message(self, kw):
        """Why a solve came out non-finite: a weight too large (γ·‖w‖² or the row-weighted
        sums beyond float64; a huge γ_A leaves w ≈ 0 anyway) or too small (the system near
        singular), or extreme values of X."""
        return (f"The S3VM's LapSVM solve produced non-finite values with gamma_A="
                f"{kw['gamma_A']:.3g}, gamma_I={kw['gamma_I']:.3g}, gamma_U="
                f"{self.gamma_U:.3g}: a huge weight takes the solver's float64 sums out of "
                f"range (gamma * ||w||^2 overflows), a tiny one leaves the system near "
                f"singular. Lower a huge gamma_A / gamma_I (or raise a tiny one), or "
                f"rescale X (rows of unit norm).")

    def estimate_fraction(self, sol):
        """π when asked for: 'start' — :func:`start_fraction` of the start's decision
        values; 'blend' — :func:`blend_fraction` of those of one more LapSVM solve at
        ``BLEND_GAMMA_A_FACTOR · γ_A`` (warm-started from the start)."""
        if self.r is not None:
            return
        if not self.blend:
            self.r = start_fraction(sol.decision[self.U], classes=self.classes)
            return
        if self.kw["gamma_A"] > 0:
            est = self.solve(init=sol, gamma_A=BLEND_GAMMA_A_FACTOR * self.kw["gamma_A"])
            F = est.decision[self.U]
        else:  # γ_A = 0: the start is that solve
            F = sol.decision[self.U]
        self.r = blend_fraction(F, classes=self.classes)

    def costs(self, FU):
        return self.gamma_U * (_sq_hinge(FU) - _sq_hinge(-FU))

    def labels(self, FU, T):
        """The labels minimising the objective at temperature T for fixed f."""
        G = self.costs(FU)
        if self.mean is None:
            return balanced_soft_labels(G, T, self.r)
        if T > 0:
            return expit(-G / T)
        return (G < 0) + 0.5 * (G == 0)

    def finish(self, sol, P, n_iter, history, extra, name):
        if self.warned:
            warnings.warn(f"{name}: some inner finite Newton solves stopped before converging; "
                          f"increase max_iter or cg_max_iter.", ConvergenceWarning, stacklevel=3)
        state = {"P": P, "positive_fraction": self.r, "n_solves": self.n_solves,
                 "newton_steps": self.newton_steps, "cg_iter": self.cg_iter, **extra}
        return LinearSolution(sol.coef, sol.intercept, sol.decision, n_iter, sol.residual,
                              sol.converged and not self.warned, state, history)


def s3vm_annealing(
    X,
    targets,
    labeled_rows,
    unlabeled_rows,
    laplacian_matvec,
    *,
    gamma_A,
    gamma_I,
    gamma_U,
    scale,
    positive_fraction,
    fit_intercept=True,
    temperature=None,
    annealing_rate=1.5,
    entropy_tol=1e-3,
    kl_tol=1e-3,
    max_outer=30,
    max_inner=10,
    balance="labels",
    tol=1e-4,
    inner_tol=1e-2,
    max_iter=50,
    cg_max_iter=1000,
    init=None,
    callback=None,
):
    """Laplacian S³VM by deterministic annealing (Sindhwani & Keerthi, SIGIR 2006).

    Minimises, for each ±1 column of ``targets``, the annealed objective

        J_T(w, b, p) = (1/l) Σ_{i labeled} V(y_i f_i) + γ_A ‖w‖² + γ_I s fᵀ L^p f
                       + (γ_U/u) Σ_j [p_j V(f_j) + (1 − p_j) V(−f_j)]
                       + (T/u) Σ_j [p_j log p_j + (1 − p_j) log(1 − p_j)],

    ``V(t) = max(0, 1 − t)²``, ``f = X w + b``, over ``w, b`` and ``p ∈ [0, 1]^u`` with
    ``(1/u) Σ_j p_j = π``, while T decreases; as ``T → 0`` ``p`` becomes hard and
    ``J_T`` the S³VM objective (:func:`s3vm_objective`).

    Algorithm: start from the LapSVM on the labeled rows alone (``init`` warm-starts
    it; ``positive_fraction='start'`` or ``'blend'`` estimates π from it);
    ``T = temperature`` (default γ_U). At each T alternate (i) ``p`` for fixed ``f`` in
    closed form (:func:`balanced_soft_labels` with ``g_j = γ_U (V(f_j) − V(−f_j))``) and
    (ii) ``f`` for fixed ``p``: the row-weighted squared-hinge LapSVM of
    :func:`s3vm_problem` by finite Newton, warm-started from the last ``f``. The
    alternation at one T stops when the new ``p`` is within ``kl_tol`` (mean binary
    KL divergence, largest over columns) of the ``p`` the current ``f`` was solved
    for — then no solve is done — or after ``max_inner`` solves. Then, unless the
    mean entropy of ``p`` (in units of log 2, largest over columns; the most uncertain
    p_j left out, as the balance keeps one p_j fractional at any T) is below
    ``entropy_tol``, ``T`` is divided by ``annealing_rate``; at most ``max_outer``
    temperatures. The solves while annealing stop at the loose tolerance
    ``max(tol, inner_tol)``. Finally ``T = 0``: the hard balanced labels of ``f`` and
    ``f`` solved for them at ``tol``, alternately, until the labels repeat (at least
    one, at most ``max_inner`` solves). All target columns share every solve (one
    batched finite Newton run).

    Parameters
    ----------
    X : sparse matrix (CSR) or ndarray of shape (n, d)
    targets : ndarray of shape (l,) or (l, k)
        ±1 targets of the labeled rows.
    labeled_rows, unlabeled_rows : ndarray of int
        Disjoint row indices.
    laplacian_matvec : callable or None
        ``F ↦ L^p F``; may be None when ``gamma_I == 0``.
    gamma_A, gamma_I, gamma_U : float
        Weights of ``‖w‖²``, the graph term and the unlabeled loss (≥ 0).
    scale : float
        ``s``, the normalisation of the graph term.
    positive_fraction : float, ndarray of shape (k,) or str
        One of 'start', 'start-classes', 'blend', 'blend-classes', or proportions:
        π per column, in (0, 1). 'start': estimated from the decision values of the
        LapSVM start on the unlabeled rows by :func:`start_fraction`,
        ``π = (1 + mean_j clip(f_j, −1, 1)) / 2`` (clipped to ``[1/u, 1 − 1/u]``).
        'blend': one more LapSVM solve on the labeled rows, the same as the start
        but with γ_A multiplied by ``BLEND_GAMMA_A_FACTOR`` (0.1; warm-started from
        the start; no extra solve when γ_A = 0), and π from its decision values g
        on the unlabeled rows by :func:`blend_fraction`,
        ``π = ½ [(1 + mean_j clip(g_j, −1, 1)) / 2 + #{g_j > t}/u]``, t the
        two-means threshold of g (:func:`split_fraction`), clipped to
        ``[1/u, 1 − 1/u]``. '-classes': the estimates divided by their sum over the
        columns (one-vs-rest classes) before the clipping. All need
        ``balance='labels'``.
    fit_intercept : bool, default=True
    temperature : float or None, default=None
        Initial T; None: γ_U. The labels depend on ``g_j / T`` with ``|g_j| = 4 γ_U |f_j|``
        for ``|f_j| ≤ 1``, so T = γ_U starts with p_j within ``σ(±4|f_j|)`` of ½ — soft for
        the start's small decision values; a hotter start only spends solves on p ≈ ½
        (from T = 10 γ_U: 1.3× the time for the same test error on the binary sets of
        ``bench/s3vm.py``).
    annealing_rate : float, default=1.5
        Divisor of T per outer step.
    entropy_tol, kl_tol : float, default=1e-3
        The stopping rules above.
    max_outer, max_inner : int
    balance : {'labels', 'mean'}, default='labels'
        'labels': the constraint ``(1/u) Σ_j p_j = π`` on the labels (above).
        'mean': instead the mean decision value over the unlabeled rows is pinned to
        ``2π − 1`` in every solve (the LapSVM ``balance`` constraint) and ``p`` is
        unconstrained (``ν = 0``).
    tol, max_iter, cg_max_iter
        Of each finite Newton solve (:func:`~linlap.solvers.lapsvm_newton.lapsvm_newton`).
    inner_tol : float, default=1e-2
        Loosest tolerance of the solves while annealing.
    init : LinearSolution, optional
        Warm start of the initial LapSVM.
    callback : callable, optional
        ``callback(outer_step, temperature)`` after each temperature.

    Returns
    -------
    LinearSolution
        ``n_iter`` is the number of temperatures visited; ``state`` holds ``P`` (the
        final labels, (u, k)), ``positive_fraction`` (π used, (k,)), ``n_solves``
        (finite Newton runs, the start and the 'blend' solve included),
        ``newton_steps``, ``cg_iter``, ``start`` (the LapSVM start as
        ``(coef, intercept)``) and ``temperatures``; ``history`` the S³VM objective
        (summed over columns, at the hard labels) after each temperature and after
        the final ``T = 0`` step.
    """
    if not ((temperature is None or temperature > 0) and annealing_rate > 1
            and entropy_tol > 0 and kl_tol > 0 and max_outer >= 1 and max_inner >= 1):
        raise ValueError("temperature, entropy_tol and kl_tol must be > 0, annealing_rate "
                         "> 1, max_outer and max_inner >= 1.")
    S = _Solver(X, targets, labeled_rows, unlabeled_rows, laplacian_matvec, gamma_A, gamma_I,
                gamma_U, scale, positive_fraction, fit_intercept, tol, max_iter, cg_max_iter,
                balance)
    sol = S.solve(init=init)
    S.estimate_fraction(sol)
    start = (sol.coef.copy(), sol.intercept.copy())
    if gamma_U == 0:  # the LapSVM minimiser, whatever p
        P = balanced_soft_labels(np.zeros((S.U.size, S.k)), 0.0, S.r)
        return S.finish(sol, P, 0, [], {"start": start, "temperatures": []}, "S3VM annealing")
    T = float(gamma_U if temperature is None else temperature)
    P_f = None  # the labels the current f was solved for (None: the LapSVM start)
    history, temps = [], []
    for outer in range(1, max_outer + 1):
        for _ in range(max_inner):
            P = S.labels(sol.decision[S.U], T)
            if P_f is not None and np.max(_mean_kl(P, P_f)) < kl_tol:
                break
            sol = S.solve(P, init=sol, tol=max(tol, inner_tol))
            P_f = P
        temps.append(T)
        FU = sol.decision[S.U]
        hard = S.labels(FU, 0.0)
        history.append(float(_objective_from(S, sol, hard).sum()))
        if callback is not None:
            callback(outer, T)
        if np.max(_mean_entropy(P)) < entropy_tol:
            break
        T /= annealing_rate
    # T → 0: the hard balanced labels of f, and f solved (at tol) for them, until
    # they agree
    for i in range(max_inner):
        P = S.labels(sol.decision[S.U], 0.0)
        if i > 0 and np.array_equal(P, P_f):
            break
        sol = S.solve(P, init=sol)
        P_f = P
    history.append(float(_objective_from(S, sol, P).sum()))
    return S.finish(sol, P, outer, history, {"start": start, "temperatures": temps},
                    "S3VM annealing")


def _objective_from(S, sol, P):
    """S³VM objective at the solver's current point and labels P (per column), from the
    solve's own decision values and, when it kept it, their L^p f (no pass over X, no
    graph product, no re-validation)."""
    kw = S.kw
    return _objective_values(sol.decision, sol.coef.T, S.Y, S.rows, S.U, S.lap, kw["gamma_A"],
                             kw["gamma_I"], S.gamma_U, kw["scale"], P,
                             LF=sol.state.get("laplacian_decision"))


def _switch(Yu, FU, max_switches):
    """Multi-switch step: swap the labels of pairs (positive i, negative j) that lower the
    loss, ``V(f_i) + V(−f_j) > V(−f_i) + V(f_j)``, best pairs first, at most
    ``max_switches`` per column. Returns the number of swaps per column (in place)."""
    u, k = Yu.shape
    swaps = np.zeros(k, dtype=int)
    for j in range(k):
        f = FU[:, j]
        gain = _sq_hinge(f) - _sq_hinge(-f)  # loss saved by labelling the row negative
        pos = np.flatnonzero(Yu[:, j] > 0)
        neg = np.flatnonzero(Yu[:, j] < 0)
        pos = pos[np.argsort(-gain[pos], kind="stable")]
        neg = neg[np.argsort(gain[neg], kind="stable")]
        m = min(pos.size, neg.size, max_switches)
        net = gain[pos[:m]] - gain[neg[:m]]  # saving of swapping the pair
        m = int(np.argmax(net <= 1e-12)) if np.any(net <= 1e-12) else m
        Yu[pos[:m], j] = -1.0
        Yu[neg[:m], j] = 1.0
        swaps[j] = m
    return swaps


def s3vm_switching(
    X,
    targets,
    labeled_rows,
    unlabeled_rows,
    laplacian_matvec,
    *,
    gamma_A,
    gamma_I,
    gamma_U,
    scale,
    positive_fraction,
    fit_intercept=True,
    gamma_U_start=1e-2,
    annealing_rate=1.5,
    max_switches=None,
    max_rounds=20,
    tol=1e-4,
    inner_tol=1e-2,
    max_iter=50,
    cg_max_iter=1000,
    init=None,
    callback=None,
):
    """Laplacian S³VM by multi-switch label swapping (transductive SVM).

    Minimises the S³VM objective of :func:`s3vm_objective` over ``w, b`` and hard
    labels ``ŷ_j = ±1`` of the unlabeled rows with exactly ``round(π u)`` positives
    per column (SVMlin's multi-switch TSVM with the graph term added).

    Algorithm: start from the LapSVM on the labeled rows (``init`` warm-starts it;
    ``positive_fraction='start'`` or ``'blend'`` estimates π from it); label the ``round(π u)``
    unlabeled rows of largest ``f`` positive. Raise the
    unlabeled weight from ``gamma_U_start · γ_U`` by ``annealing_rate`` per stage up
    to γ_U; at each stage alternate a finite Newton solve of the hard-labelled
    problem (warm-started) with a switching pass that swaps every pair (positive
    row i, negative row j) with ``V(f_i) + V(−f_j) > V(−f_i) + V(f_j)``, best pairs
    first, at most ``max_switches`` pairs per column (None: no limit), until no pair
    swaps or ``max_rounds`` solves (at ``max(tol, inner_tol)`` before the last
    stage, at ``tol`` in it). Each swap keeps the balance and lowers the
    objective for fixed ``f``, each solve lowers it for fixed labels: at a fixed
    weight the objective decreases monotonically.

    Parameters
    ----------
    X, targets, labeled_rows, unlabeled_rows, laplacian_matvec, gamma_A, gamma_I,
    gamma_U, scale, positive_fraction, fit_intercept, tol, max_iter, cg_max_iter, init,
    inner_tol
        As in :func:`s3vm_annealing`.
    gamma_U_start : float, default=1e-2
        First unlabeled weight, relative to γ_U (1: no annealing of γ_U).
    annealing_rate : float, default=1.5
    max_switches : int or None
    max_rounds : int, default=20
        Solves per stage.
    callback : callable, optional
        ``callback(stage, gamma_U_stage)`` after each stage.

    Returns
    -------
    LinearSolution
        ``n_iter`` counts stages; ``state`` holds ``P`` (final labels as 0/1),
        ``positive_fraction`` (π used), ``n_solves``, ``newton_steps``, ``cg_iter``,
        ``switches`` (total swaps) and
        ``start``; ``history`` the objective at γ_U after each stage.
    """
    if not (0 < gamma_U_start <= 1 and annealing_rate > 1 and max_rounds >= 1):
        raise ValueError("gamma_U_start must be in (0, 1], annealing_rate > 1, "
                         "max_rounds >= 1.")
    if max_switches is not None and max_switches < 1:
        raise ValueError("max_switches must be None or >= 1.")
    S = _Solver(X, targets, labeled_rows, unlabeled_rows, laplacian_matvec, gamma_A, gamma_I,
                gamma_U, scale, positive_fraction, fit_intercept, tol, max_iter, cg_max_iter)
    sol = S.solve(init=init)
    S.estimate_fraction(sol)
    start = (sol.coef.copy(), sol.intercept.copy())
    u = S.U.size
    Yu = -np.ones((u, S.k))
    for j in range(S.k):
        m = int(round(S.r[j] * u))
        Yu[np.argsort(-sol.decision[S.U, j], kind="stable")[:m], j] = 1.0
    if gamma_U == 0:
        return S.finish(sol, (Yu > 0).astype(float), 0, [],
                        {"start": start, "switches": 0}, "S3VM switching")
    limit = u if max_switches is None else int(max_switches)
    weight = gamma_U * gamma_U_start
    history, switches, stage = [], 0, 0
    while True:
        stage += 1
        weight = min(weight, gamma_U)
        S.gamma_U = weight
        last = weight >= gamma_U  # the last stage solves at tol, earlier ones loosely
        stage_tol = tol if last else max(tol, inner_tol)
        for _ in range(max_rounds):
            sol = S.solve((Yu > 0).astype(float), init=sol, tol=stage_tol)
            n = _switch(Yu, sol.decision[S.U], limit)
            switches += int(n.sum())
            if not n.any():
                break
        else:  # out of rounds with labels just swapped: solve for them
            sol = S.solve((Yu > 0).astype(float), init=sol, tol=stage_tol)
        S.gamma_U = gamma_U
        history.append(float(_objective_from(S, sol, (Yu > 0).astype(float)).sum()))
        if callback is not None:
            callback(stage, weight)
        if weight >= gamma_U:
            break
        weight *= annealing_rate
    return S.finish(sol, (Yu > 0).astype(float), stage, history,
                    {"start": start, "switches": switches}, "S3VM switching")
