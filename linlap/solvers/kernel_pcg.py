"""Kernel-mode Laplacian SVM / RLS in the primal (seed 003, Melacci & Belkin 2011).

The model is ``f(x) = Σ_j α_j k(x_j, x) + b`` over all n training rows, so that on the
training rows ``f = K α + b 1``. Every solver here minimises, per target column y
(one-vs-rest, ±1 targets),

    J(α, b) = (1/l) Σ_{i labeled} V(y_i, f_i) + γ_A αᵀ K α + γ_I s fᵀ L^p f,

with V the squared hinge ``max(0, 1 − y f)²`` (LapSVM) or the squared loss
``(y − f)²`` (LapRLS), ``s`` the graph scale (``KNNGraph.scale_ = 1/trace(L)``) and the
bias outside ``αᵀKα``. This is linlap's scaling; seed 003's eq. 7 is
``½(Σ_i V + γ_A' αᵀKα + γ_I' fᵀLf)``, i.e. ``γ_A = γ_A'/l`` and ``γ_I s = γ_I'/l``.

With ``E`` the error vectors (labeled rows with ``y_i f_i < 1``; all labeled rows for
the squared loss) and ``M = L^p``, the gradient is

    ∇_α = K g,   g = (2/l) I_E (f − y) + 2γ_A α + 2γ_I s M f,
    ∇_b = (2/l) 1ᵀ I_E (f − y) + 2γ_I s 1ᵀ M f,

so the preconditioner ``P = blockdiag(1, K)`` of seed 003 §3.2 gives the
preconditioned gradient ``(∇_b, g)`` without any solve. (For the normalised Laplacian
``M 1 ≠ 0`` and the bias enters the graph term, hence the ``1ᵀ M f`` in ``∇_b``.)

* :func:`kernel_pcg` — Algorithm 1: preconditioned nonlinear CG with Polak–Ribière
  updates and automatic restart (ρ clipped at 0), exact line search over the
  breakpoints of the piecewise-linear derivative (§3.2.1), and the early stopping
  checks of §4.1 (Algorithms 2 and 3). One product with K and one application of
  L^p per iteration; all target columns advance together and share both.
* :func:`~linlap.solvers.kernel_newton.kernel_newton` — §3.1: Newton's method on the
  (n+1)-square system of the
  current error vectors (dense, O(n³) per step), the exact reference for moderate n.
  With the squared loss one step is the closed form (seed 001 eq. 8 with a bias).
"""

import math
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ._problem import check_rows_and_targets, check_weights, predict_index
from .lapsvm_newton import squared_hinge_line_search

__all__ = ["KernelSolution", "kernel_objective", "kernel_line_search", "kernel_pcg",
           "kernel_scale", "EARLY_STOPPING"]

EARLY_STOPPING = (None, "stability", "validation", "mixed")
LOSSES = ("squared_hinge", "squared")


class KernelSolution:
    """Result of a kernel-mode solver.

    Attributes
    ----------
    dual_coef : ndarray of shape (n_columns, n)
        α of each target column.
    intercept : ndarray of shape (n_columns,)
    decision : ndarray of shape (n, n_columns)
        ``f = K α + b`` on every training row.
    n_iter : int
        PCG iterations, or Newton steps (the largest over columns).
    converged : bool
        The gradient tolerance (PCG), the error-vector test (Newton) or an early
        stopping check ended the run (False when ``max_iter`` did, or PCG 'stalled').
    stop_reason : str
        'tol', 'stability', 'validation', 'mixed', 'max_iter' or 'stalled' (PCG's
        recomputed gradient stayed above tol: see :func:`kernel_pcg`); 'newton' for
        Newton.
    residual : float
        Largest relative preconditioned gradient norm ``√(∇ᵀP⁻¹∇ / ∇₀ᵀP⁻¹∇₀)`` at the
        end (PCG; 0.0 for a converged Newton run).
    history : ndarray of shape (n_iter + 1, n_columns)
        J of each column after each iteration (PCG) or step (Newton).
    ls_pieces : ndarray
        Per iteration, the mean over columns of the number of linear pieces of the
        line-search derivative visited (seed 003's "LS iterations").
    checks : list of dict
        The early stopping checks performed: iteration, changed fraction, validation
        errors.
    """

    def __init__(self, dual_coef, intercept, decision, n_iter, converged, stop_reason,
                 residual, history, ls_pieces=None, checks=None):
        self.dual_coef = dual_coef
        self.intercept = intercept
        self.decision = decision
        self.n_iter = n_iter
        self.converged = converged
        self.stop_reason = stop_reason
        self.residual = residual
        self.history = history
        self.ls_pieces = np.asarray(ls_pieces if ls_pieces is not None else [], dtype=float)
        self.checks = checks or []


# -- checks ---------------------------------------------------------------------------
def kernel_scale(diagonal):
    """σ = mean of diag(K), given that diagonal (1 when it is not a positive finite
    normal number: a subnormal σ, as for rows of norm 1e-160 under the linear kernel, would
    make γ_A / σ overflow).

    :func:`kernel_pcg` runs on ``K / σ`` (``kernel_scale=σ``) so that the bias block of its
    preconditioner ``blockdiag(1, K)`` weighs as the α block does: with K ~ 10¹² (rows of
    norm 10⁶ under the linear kernel) the bias's gradient would otherwise not count in the
    stopping rule. σ = 1 for the RBF kernel and, under the linear kernel, for unit rows
    without empty ones (each empty row lowers the mean).
    """
    sigma = float(np.mean(diagonal)) if len(diagonal) else 1.0
    return sigma if np.isfinite(sigma) and sigma >= np.finfo(np.float64).tiny else 1.0


def _check_problem(n, targets, labeled_rows, gamma_A, gamma_I, scale, loss):
    Y, rows = check_rows_and_targets(n, targets, labeled_rows)
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}.")
    if not np.all(np.isfinite(Y)):
        raise ValueError("targets must be finite.")
    if loss == "squared_hinge" and not np.all(np.abs(Y) == 1):
        raise ValueError("targets of the squared hinge must be +1 or -1.")
    check_weights(gamma_A, gamma_I, scale)
    if not gamma_A > 0:
        raise ValueError("gamma_A must be > 0 in kernel mode (with γ_A = 0 the α of the "
                         "expansion is not determined).")
    return Y, rows


def _loss_terms(Y, O, loss):
    """Residual ``e = I_E (f − y)`` on the labeled rows and the mean loss per column."""
    R = O - Y
    if loss == "squared_hinge":
        R = np.where(Y * O < 1.0, R, 0.0)
    return R, np.mean(R * R, axis=0)


def _objective(Y, F, rows, A, b, MF, gamma_A, gamma_I, scale, loss):
    """J per column from ``F = Kα + b`` on all rows, α (``A``, n × k), b and ``MF = L^p F``
    (None without a graph term), using ``αᵀKα = αᵀ(F − b)``."""
    J = _loss_terms(Y, F[rows], loss)[1] + gamma_A * np.einsum("ij,ij->j", A, F - b)
    if MF is not None and gamma_I > 0:
        J = J + gamma_I * scale * np.einsum("ij,ij->j", F, MF)
    return J


# -- objective and line search ----------------------------------------------------------
def kernel_objective(kernel_matvec, targets, labeled_rows, laplacian_matvec, dual_coef,
                     intercept, *, gamma_A, gamma_I, scale, loss="squared_hinge"):
    """Evaluate J(α, b) (see the module docstring) for each column.

    Parameters
    ----------
    kernel_matvec : callable
        ``V ↦ K V`` for V of shape (n, m).
    targets : ndarray of shape (l,) or (l, k)
    labeled_rows : ndarray of int, shape (l,)
    laplacian_matvec : callable or None
        ``F ↦ L^p F``; may be None when ``gamma_I == 0``.
    dual_coef : ndarray of shape (k, n) or (n,)
    intercept : ndarray of shape (k,) or float
    gamma_A, gamma_I, scale : float
    loss : {'squared_hinge', 'squared'}

    Returns
    -------
    J : ndarray of shape (k,)
    """
    A = np.atleast_2d(np.asarray(dual_coef, dtype=np.float64)).T
    Y, rows = _check_problem(A.shape[0], targets, labeled_rows, gamma_A, gamma_I, scale,
                             loss)
    b = np.atleast_1d(np.asarray(intercept, dtype=np.float64))
    F = np.asarray(kernel_matvec(A)) + b
    MF = laplacian_matvec(F) if gamma_I > 0 else None
    return _objective(Y, F, rows, A, b, MF, gamma_A, gamma_I, scale, loss)


def kernel_line_search(y, o, od, slope, curv, n_labeled, loss="squared_hinge"):
    """Exact minimiser over s ≥ 0 of J along a direction (seed 003 §3.2.1).

    Along ``z + s d`` the labeled outputs move as ``o + s·od`` and the regularisers
    contribute the exact quadratic ``slope·s + curv·s²``, so

        φ(s) = (1/l) Σ_i V(y_i, o_i + s od_i) + slope·s + curv·s² + const.

    For the squared hinge φ′ is piecewise linear with breakpoints where labeled rows
    enter or leave the error vectors; they are walked in order from s = 0 to the first
    zero crossing (:func:`linlap.solvers.lapsvm_newton.squared_hinge_line_search`). For the
    squared loss there is no breakpoint and ``s = −φ′(0)/φ″``.

    Parameters
    ----------
    y, o, od : ndarray of shape (l,)
        Targets, current outputs and output direction of the labeled rows.
    slope, curv : float
        Linear and quadratic coefficients of the regularisers along the line.
    n_labeled : int
        The l of the 1/l loss weight.
    loss : {'squared_hinge', 'squared'}

    Returns
    -------
    s : float
        The minimiser (0.0 when the direction is not a descent direction).
    pieces : int
        Linear pieces of φ′ visited (1 + breakpoints passed), the "LS iterations"
        of seed 003's Table 6.
    """
    y, o, od = (np.asarray(a, dtype=np.float64) for a in (y, o, od))
    if loss == "squared":
        g = slope + (2.0 / n_labeled) * np.dot(o - y, od)
        h = 2.0 * curv + (2.0 / n_labeled) * np.dot(od, od)
        if g >= 0 or h <= 0:
            return 0.0, 1
        return float(-g / h), 1
    s = squared_hinge_line_search(y, o, o + od, slope, curv, n_labeled)
    yo, yd = y * o, y * od
    active = yo < 1
    moving = (active & (yd > 0)) | (~active & (yd < 0))
    t = (1.0 - yo[moving]) / yd[moving]
    return s, 1 + int(np.count_nonzero(t < s))


# -- PCG (Algorithm 1) --------------------------------------------------------------------
#: Restarts from the recomputed gradient when a run that met tol on its updated
#: gradient fails it on the recomputed one (drift on an ill-conditioned K); then 'stalled'
VERIFY_RESTARTS = 3
#: The recomputed gradient is checked against max(tol, VERIFY_FLOOR): recomputing f = Kα
#: + b has its own round-off, 2–3e-9 of the gradient at zero on the well-posed problems
#: of tests/test_kernel_solvers.py at tol=1e-10, so below ≈ √ε the check cannot tell drift
#: from round-off and the updated gradient is trusted as before
VERIFY_FLOOR = 1e-8


def kernel_pcg(kernel_matvec, targets, labeled_rows, laplacian_matvec, *, n_samples,
               gamma_A, gamma_I, scale, loss="squared_hinge", fit_intercept=True, tol=1e-6,
               max_iter=1000, early_stopping=None, unlabeled_rows=None, check_every=None,
               stability_tol=0.015, validation=None, init=None, callback=None,
               kernel_scale=1.0):
    """Primal kernel LapSVM / LapRLS by preconditioned CG (seed 003 Algorithm 1).

    Minimises J(α, b) of the module docstring for every column of ``targets`` at once
    (each column keeps its own line search, Polak–Ribière ρ and error vectors; all
    share each product with K and each application of L^p). Starting from
    ``z = (b, α) = 0`` (or ``init``) with ``d = −∇̂``, each iteration: exact line search
    along d, update, preconditioned gradient ``∇̂ = P⁻¹∇`` with ``P = blockdiag(1, K)``,
    ``ρ = max(∇̂ᵀP(∇̂ − ∇̂_old) / ∇̂_oldᵀP∇̂_old, 0)`` (ρ = 0 restarts), ``d = −∇̂ + ρ d``.
    ``K d`` is carried along (``K d = −K∇̂ + ρ K d``), so one K product per iteration
    suffices, and f, L^p f are updated, not recomputed.

    With ``kernel_scale=σ`` the iterations run on ``(K/σ, γ_A/σ, σα)``, the same J as a
    function of f, which is ``P = blockdiag(1, K/σ)`` for K: use σ = mean of diag(K)
    (:func:`kernel_scale`) so that the bias counts in the stopping rule whatever K's
    scale. ``init``, the returned α and the validation decisions are for K itself.

    Stopping (in every mode a column stops when ``√(∇̂ᵀ∇ / ∇̂₀ᵀ∇₀) ≤ tol``, ∇₀ the
    gradient at z = 0, or when no descent is left at machine precision):

    * A run that meets ``tol`` on its updated gradient is checked on f, L^p f and the
      gradient recomputed from (α, b): on an ill-conditioned K the updated ones drift.
      Columns above ``max(tol, 1e-8)`` (``VERIFY_FLOOR``: recomputing has round-off of
      its own) restart from the recomputed gradient, at most ``VERIFY_RESTARTS`` (3)
      times; a restart that finds no descent ends as 'tol' (the minimiser to machine
      precision), one still above after the last restart as 'stalled' (not converged,
      ConvergenceWarning). Every run returns f = K α + b recomputed.

    * ``early_stopping=None``: run until every column meets ``tol`` (or ``max_iter``).
    * ``'stability'`` (Algorithm 2): every θ iterations (θ = ``check_every``, default
      round(√n / 2)), stop when fewer than ``stability_tol`` (1.5%) of the unlabeled
      rows changed predicted label since the previous check (the label is the sign of
      f for one column, the argmax over columns for one-vs-rest; all columns stop
      together). Algorithm 2's ``‖d − d_old‖₁/u`` counts a flipped ±1 decision twice;
      here a change counts once. The first check only records the labels.
    * ``'validation'`` (Algorithm 3): every θ iterations, stop unless the number of
      misclassified validation rows fell by at least one since the previous check
      (before the first check: all of them).
    * ``'mixed'``: stop when both checks would stop; each check's reference (labels,
      error count) is updated at every check that does not stop.

    Parameters
    ----------
    kernel_matvec : callable
        ``V ↦ K V`` for V of shape (n, m) (e.g. :class:`linlap.gram.GramOperator`).
    targets : ndarray of shape (l,) or (l, k)
        ±1 targets of the labeled rows (any real targets for ``loss='squared'``).
    labeled_rows : ndarray of int, shape (l,)
    laplacian_matvec : callable or None
        ``F ↦ L^p F`` for F of shape (n, m); None when ``gamma_I == 0``.
    n_samples : int
        n, the number of training rows (size of K).
    gamma_A : float (> 0)
    gamma_I, scale : float
    loss : {'squared_hinge', 'squared'}
    fit_intercept : bool
    tol : float
        Tolerance on ``√(∇̂ᵀ∇ / ∇̂₀ᵀ∇₀)``, ∇₀ the gradient at z = 0 (also with ``init``).
    max_iter : int
    early_stopping : {None, 'stability', 'validation', 'mixed'}
    unlabeled_rows : ndarray of int or None
        U of the stability check (None or empty: all training rows).
    check_every : int or None
        θ; None means ``max(1, round(√n / 2))``.
    stability_tol : float
        η of the stability check, a fraction (0.015 = 1.5%).
    validation : (callable, ndarray) or None
        ``(decision, y_idx)``: ``decision(A, b)`` returns the validation decisions
        ``K(X_val, X) A + b`` of shape (v, k); ``y_idx`` the true label index of each
        validation row (0/1 for one column, meaning f < 0 / f > 0; the column index
        otherwise).
    init : (ndarray, ndarray) or None
        ``(dual_coef (k, n), intercept (k,))`` to start from (warm start).
    callback : callable or None
        ``callback(iteration, residual)`` after every iteration.
    kernel_scale : float (> 0), default=1.0
        σ: run on K/σ (see above); :func:`kernel_scale` of diag(K).

    Returns
    -------
    KernelSolution
    """
    n = int(n_samples)
    sigma = kernel_scale
    if not (isinstance(sigma, (int, float, np.floating, np.integer)) and np.isfinite(sigma)
            and sigma > 0):
        raise ValueError(f"kernel_scale must be a finite number > 0, got {sigma!r}.")
    sigma = float(sigma)
    if sigma != 1.0:  # the same J on (K/σ, γ_A/σ, σα); α and init are K's
        unscaled_matvec = kernel_matvec

        def kernel_matvec(V):
            return np.asarray(unscaled_matvec(V)) / sigma

        gamma_A = gamma_A / sigma
        if validation is not None:
            unscaled_decision = validation[0]
            validation = (lambda A, b: unscaled_decision(A / sigma, b), validation[1])
    Y, rows = _check_problem(n, targets, labeled_rows, gamma_A, gamma_I, scale, loss)
    if early_stopping not in EARLY_STOPPING:
        raise ValueError(f"early_stopping must be one of {EARLY_STOPPING}, got "
                         f"{early_stopping!r}.")
    if early_stopping in ("validation", "mixed") and validation is None:
        raise ValueError(f"early_stopping={early_stopping!r} needs validation data.")
    if not (tol > 0):
        raise ValueError(f"tol must be > 0, got {tol!r}.")
    if not (0 < stability_tol < 1):
        raise ValueError(f"stability_tol must be in (0, 1), got {stability_tol!r}.")
    l, k = Y.shape
    theta = check_every if check_every is not None else max(1, int(round(math.sqrt(n) / 2)))
    if int(theta) != theta or theta < 1:
        raise ValueError(f"check_every must be an integer >= 1, got {check_every!r}.")
    U = (np.arange(n) if unlabeled_rows is None or len(unlabeled_rows) == 0
         else np.asarray(unlabeled_rows, dtype=np.intp))
    graph = gamma_I > 0
    gs = 2.0 * gamma_I * scale if graph else 0.0

    def Mmul(F):
        return np.asarray(laplacian_matvec(F), dtype=np.float64)

    if init is not None:
        A = np.array(np.asarray(init[0], dtype=np.float64).T * sigma, order="C")
        b = np.array(init[1], dtype=np.float64).reshape(k)
        if A.shape != (n, k):
            raise ValueError(f"init dual_coef must have shape ({k}, {n}).")
        if not fit_intercept:
            b[:] = 0.0
    else:
        A, b = np.zeros((n, k)), np.zeros(k)
    F, MF = np.zeros((n, k)), np.zeros((n, k))

    def recompute_f():
        """f = K α + b and L^p f from (α, b) (the iterations update them instead)."""
        nonlocal F, MF
        F = np.asarray(kernel_matvec(A)) + b
        if graph:
            MF = Mmul(F)

    if init is not None:
        recompute_f()

    def gradient(cols):
        R, _ = _loss_terms(Y[:, cols], F[rows][:, cols], loss)
        G = 2.0 * gamma_A * A[:, cols]
        G[rows] += (2.0 / l) * R
        gb = (2.0 / l) * R.sum(axis=0)
        if graph:
            G += gs * MF[:, cols]
            gb = gb + gs * MF[:, cols].sum(axis=0)
        if not fit_intercept:
            gb = np.zeros_like(gb)
        return G, gb

    def objective():
        return _objective(Y, F, rows, A, b, MF if graph else None, gamma_A, gamma_I, scale,
                          loss)

    allc = np.arange(k)

    def full_gradient(iteration):
        """∇̂ of every column at the current f, K∇̂ and ∇̂ᵀP∇̂."""
        G, gb = gradient(allc)
        KG = np.asarray(kernel_matvec(G))
        gPg = gb * gb + np.einsum("ij,ij->j", G, KG)
        _check_finite_gradient(gPg, iteration)
        return G, gb, KG, gPg

    def relative(gPg):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(gPg0 > 0, np.sqrt(np.maximum(gPg, 0.0) / gPg0), 0.0)

    G, gb, KG, gPg = full_gradient(0)
    if init is None:
        gPg0 = gPg.copy()
    else:  # tol stays relative to the gradient at z = 0, whatever the start
        G0 = np.zeros((n, k))
        G0[rows] = -(2.0 / l) * Y
        gb0 = -(2.0 / l) * Y.sum(axis=0) if fit_intercept else np.zeros(k)
        gPg0 = gb0 * gb0 + np.einsum("ij,ij->j", G0, np.asarray(kernel_matvec(G0)))
    _check_finite_gradient(gPg0, 0)
    D, db, KD = -G, -gb, -KG
    steepest = np.ones(k, dtype=bool)  # the current direction is −∇̂ (no PR term)
    rel = relative(gPg)
    active = (gPg > 0) & (rel > tol)
    history = [objective()]
    ls_pieces, checks = [], []
    prev_pred, prev_err = None, None
    if validation is not None:
        val_decision, val_idx = validation
        val_idx = np.asarray(val_idx)
        prev_err = val_idx.size
    stop_reason, t = "tol", 0
    restarts, progressed, fresh = 0, True, True  # fresh: F, MF computed from (α, b)
    while True:
        while active.any():
            if t >= max_iter:
                stop_reason = "max_iter"
                break
            t += 1
            cols = np.flatnonzero(active)
            Dc, KDc = D[:, cols], KD[:, cols]
            Fd = KDc + db[cols]
            slope = 2.0 * gamma_A * np.einsum("ij,ij->j", F[:, cols] - b[cols], Dc)
            curv = gamma_A * np.einsum("ij,ij->j", Dc, KDc)
            if graph:
                MFd = Mmul(Fd)
                slope = slope + gs * np.einsum("ij,ij->j", MF[:, cols], Fd)
                curv = curv + 0.5 * gs * np.einsum("ij,ij->j", Fd, MFd)
            steps, pieces = np.zeros(cols.size), np.zeros(cols.size)
            for j, c in enumerate(cols):
                steps[j], pieces[j] = kernel_line_search(Y[:, c], F[rows, c], Fd[rows, j],
                                                         slope[j], curv[j], l, loss)
            ls_pieces.append(float(pieces.mean()))
            progressed |= bool(np.any(steps != 0.0))
            fresh = False
            A[:, cols] += steps * Dc
            b[cols] += steps * db[cols]
            F[:, cols] += steps * Fd
            if graph:
                MF[:, cols] += steps * MFd
            Gn, gbn = gradient(cols)
            KGn = np.asarray(kernel_matvec(Gn))
            gPgn = gbn * gbn + np.einsum("ij,ij->j", Gn, KGn)
            _check_finite_gradient(gPgn, t)
            cross = gbn * gb[cols] + np.einsum("ij,ij->j", KGn, G[:, cols])
            with np.errstate(divide="ignore", invalid="ignore"):
                rho = np.where(gPg[cols] > 0, (gPgn - cross) / gPg[cols], 0.0)
            rho = np.maximum(rho, 0.0)
            # No descent along d (φ′(0) ≥ 0 by round-off near the optimum): restart with
            # the steepest direction; if that was already the direction, the column is
            # at the optimum to machine precision.
            stuck = steps == 0.0
            rho[stuck] = 0.0
            done = stuck & steepest[cols]
            steepest[cols] = rho == 0.0
            D[:, cols] = -Gn + rho * Dc
            KD[:, cols] = -KGn + rho * KDc
            db[cols] = -gbn + rho * db[cols]
            G[:, cols], gb[cols], gPg[cols] = Gn, gbn, gPgn
            with np.errstate(divide="ignore", invalid="ignore"):
                rel[cols] = np.sqrt(np.maximum(gPgn, 0.0) / gPg0[cols])
            active[cols] = (rel[cols] > tol) & ~done
            history.append(objective())
            if callback is not None:
                callback(t, float(rel.max()))
            if early_stopping is not None and t % theta == 0 and active.any():
                rec = {"iteration": t}
                stable = improved = None
                if early_stopping in ("stability", "mixed"):
                    pred = predict_index(F[U])
                    if prev_pred is not None:
                        rec["changed"] = float(np.mean(pred != prev_pred))
                        stable = rec["changed"] < stability_tol
                    else:
                        stable = False
                    prev_pred = pred
                if early_stopping in ("validation", "mixed"):
                    err = int(np.count_nonzero(
                        predict_index(np.asarray(val_decision(A.T, b))) != val_idx))
                    rec["val_errors"] = err
                    improved = err <= prev_err - 1
                    prev_err = err
                checks.append(rec)
                stop = {"stability": stable, "validation": not improved,
                        "mixed": stable and not improved}[early_stopping]
                if stop:
                    stop_reason = early_stopping
                    break
        if stop_reason != "tol":
            break
        # The run claims the minimiser: check it on f, L^p f and the gradient recomputed
        # from (α, b). Updated over many iterations they drift from K α + b on an
        # ill-conditioned K, and a run can end on a gradient that is not the true one.
        if not fresh:  # else no iteration ran: f and the gradient are exact already
            recompute_f()
            fresh = True
            G, gb, KG, gPg = full_gradient(t)
            rel = relative(gPg)
            history[-1] = objective()
        active = rel > max(tol, VERIFY_FLOOR)
        if not active.any() or not progressed:
            # met on the recomputed gradient, or a restart from it found no descent:
            # the minimiser to machine precision (the 'tol' exit's second case)
            break
        if restarts == VERIFY_RESTARTS or t >= max_iter:
            stop_reason = "stalled" if t < max_iter else "max_iter"
            break
        restarts, progressed = restarts + 1, False  # restart from the recomputed gradient
        D, db, KD = -G, -gb, -KG
        steepest[:] = True
    if not fresh:  # f returned as K α + b (transduction_ agrees with predict)
        recompute_f()
        history[-1] = objective()
    converged = stop_reason not in ("max_iter", "stalled")
    if stop_reason == "max_iter":
        warnings.warn(f"Kernel PCG stopped at max_iter={max_iter} without meeting tol="
                      f"{tol:g} (relative gradient {rel.max():.2e}) or an early stopping "
                      "check; increase max_iter.", ConvergenceWarning, stacklevel=2)
    elif stop_reason == "stalled":
        warnings.warn(f"Kernel PCG stalled: its relative gradient, recomputed from α and "
                      f"b, stays at {rel.max():.2e}, above tol={tol:g}, after "
                      f"{VERIFY_RESTARTS} restarts (K is too ill-conditioned for float64 at "
                      f"this tol); the model is not the minimiser of J. Normalise the rows "
                      f"of X, lower the kernel's gamma or degree, raise gamma_A, or loosen "
                      f"tol.", ConvergenceWarning, stacklevel=2)
    return KernelSolution(A.T / sigma, b, F, t, converged, stop_reason, float(rel.max()),
                          np.array(history), ls_pieces, checks)


def _check_finite_gradient(gPg, iteration):
    """A NaN or infinite (preconditioned) gradient norm is an overflow, never convergence
    (``rel > tol`` is False for NaN, which would stop the columns as if converged)."""
    if not np.all(np.isfinite(gPg)):
        raise ValueError(
            f"Kernel PCG: the gradient became non-finite at iteration {iteration} (K or the "
            f"graph term overflows float64): lower the kernel's gamma or degree (or "
            f"|coef0|), the Laplacian power, or gamma_A / gamma_I.")
