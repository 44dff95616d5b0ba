"""Kernel-mode Laplacian SVM / RLS by Newton's method (seed 003 §3.1) and kernel LapRLS
in closed form (seed 001 eq. 8, with a bias): the exact reference for moderate n.

The objective, scaling and notation are those of :mod:`linlap.solvers.kernel_pcg`.

Every dense solve is checked (:func:`relative_gradient`, PCG's residual): when the
(n+1)-square system is too ill-conditioned for float64 to give the minimiser, PCG
finishes the job and a warning says so (see :func:`kernel_newton`).
"""

import warnings

import numpy as np
from scipy.linalg import LinAlgWarning
from sklearn.exceptions import ConvergenceWarning

from .._validation import user_stacklevel
from .kernel_pcg import (KernelSolution, _check_problem, _objective, kernel_line_search,
                         kernel_pcg, kernel_scale)

__all__ = ["kernel_newton", "relative_gradient", "DENSE_RTOL"]

#: Largest relative gradient (PCG's residual) at which :func:`kernel_newton` accepts a
#: dense solve: PCG's default ``tol``. Well-posed problems typically give 1e-10 or less.
DENSE_RTOL = 1e-6


def relative_gradient(K, targets, labeled_rows, laplacian_matvec, dual_coef, intercept, *,
                      gamma_A, gamma_I, scale, loss="squared_hinge", fit_intercept=True,
                      error_rows=None, decision=None):
    """PCG's residual ``√(∇̂ᵀ∇ / ∇̂₀ᵀ∇₀)`` of (α, b), per column, on the problem scaled to
    ``K / σ``, σ = mean of diag(K).

    That is the gradient of J in the norm of the preconditioner
    ``P = blockdiag(1, K / σ)`` relative to the gradient at z = 0, with
    ``∇̂ = (∇_b, g)``, ``g = (2/l) I_E (f − y) + 2γ_A α + 2γ_I s M f``. J is the same
    function of f for ``(K, γ_A, α)`` and ``(K/σ, γ_A/σ, σα)``; the scaling only balances
    the bias part against the α part (rows of norm 1e6 under the linear kernel would
    otherwise leave ∇_b unweighted). This is the residual
    :func:`~linlap.solvers.kernel_pcg.kernel_pcg` stops on with ``kernel_scale=σ``, as
    the kernel classifiers run it. ∇̂ is also the
    residual of the (n+1)-square system of :func:`kernel_newton` (rows scaled by 2/l),
    so this is that system's relative residual in the norm that matters: directions in
    which K is small, which barely move f, count little.

    Parameters
    ----------
    K : ndarray of shape (n, n)
    targets, labeled_rows, laplacian_matvec, gamma_A, gamma_I, scale, loss, fit_intercept
        As in :func:`kernel_newton`.
    dual_coef : ndarray of shape (k, n)
    intercept : ndarray of shape (k,)
    error_rows : ndarray of bool, shape (l, k), or None
        The error vectors E of the squared loss on E (a Newton point's subproblem);
        None: those of ``loss`` at (α, b).
    decision : ndarray of shape (n, k) or None
        ``f = Kα + b`` when already computed.

    Returns
    -------
    ndarray of shape (k,)
    """
    Y, rows = _check_problem(K.shape[0], targets, labeled_rows, gamma_A, gamma_I, scale, loss)
    A = np.atleast_2d(np.asarray(dual_coef, dtype=np.float64)).T
    b = np.atleast_1d(np.asarray(intercept, dtype=np.float64))
    if decision is None:
        F = K @ A + b
    else:
        F = np.asarray(decision, dtype=np.float64).reshape(A.shape)
    l = rows.size
    R = F[rows] - Y
    if error_rows is not None:
        R = np.where(error_rows, R, 0.0)
    elif loss == "squared_hinge":
        R = np.where(Y * F[rows] < 1.0, R, 0.0)
    G = np.zeros_like(A)  # g without its γ_A α term, whose column sums are ∇_b
    G[rows] = (2.0 / l) * R
    if gamma_I > 0:
        G += 2.0 * gamma_I * scale * np.asarray(laplacian_matvec(F), dtype=np.float64)
    gb = G.sum(axis=0)
    G += 2.0 * gamma_A * A
    # at z = 0 every labeled row is an error vector: ∇̂₀ = −(2/l)(1ᵀy, y on the rows)
    G0 = -(2.0 / l) * Y
    gb0 = G0.sum(axis=0)
    if not fit_intercept:
        gb, gb0 = 0.0, 0.0
    sigma = kernel_scale(np.diagonal(K))
    num = gb * gb + np.einsum("ij,ij->j", G, K @ G) / sigma
    den = gb0 * gb0 + np.einsum("ij,ij->j", G0, K[np.ix_(rows, rows)] @ G0) / sigma
    # den = 0 with targets: K annihilates the gradient at z = 0 (one document labeled with
    # both classes), so z = 0 is a minimiser; measure against that gradient with K / σ
    # (unit mean diagonal) taken as I, not against 0 (which made any round-off infinite)
    den = np.where(den > 0, den, gb0 * gb0 + np.einsum("ij,ij->j", G0, G0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rel = np.sqrt(np.maximum(num, 0.0) / den)
    # den = 0 still: all-zero targets, whose minimiser is z = 0; NaN: an overflow
    rel = np.where(den > 0, rel, np.where(num > 0, np.inf, 0.0))
    return np.where(np.isnan(rel), np.inf, rel)


def kernel_newton(K, targets, labeled_rows, laplacian_matvec, *, gamma_A, gamma_I, scale,
                  loss="squared_hinge", fit_intercept=True, tol=1e-9, max_iter=50,
                  callback=None, rtol=DENSE_RTOL, fallback_max_iter=1000):
    """Primal kernel LapSVM by Newton's method (seed 003 §3.1); LapRLS in closed form.

    For fixed error vectors E, ∇J = 0 (divided by K, which is nonsingular in the
    reduced system whenever γ_A > 0) is the (n+1)-square linear system, l-scaled,

        (I_E K + γ_A l I + c M K) α + (I_E 1 + c M 1) b = I_E y
        1ᵀ(I_E K + c M K) α + (|E| + c 1ᵀ M 1) b       = 1ᵀ I_E y,     c = γ_I s l,

    solved densely (LU). Each step solves it for the current E, then takes the exact
    line search step towards that Newton point (seed 003 eq. 11 with step size by
    §3.2.1); it stops when the Newton point's error vectors are the ones it was
    computed with (within ``tol`` of the margin), which makes it the exact minimiser.
    For ``loss='squared'`` E is all labeled rows and the first step is the closed form
    (seed 001 eq. 8 with a bias and linlap's scaling).

    Checked solves. The system's condition grows as ‖K‖ / (γ_A l) and with ‖c M K‖
    (rows of large norm under the linear or polynomial kernel, a tiny γ_A, a high
    Laplacian power); past about 1/ε the LU solution can be far from the minimiser,
    worse than the zero model, with nothing to show for it. Every Newton point (and
    the closed form) is therefore checked by its :func:`relative_gradient` — PCG's
    residual, the system's relative residual in the K-norm — and accepted only when it
    is at most ``rtol`` (well-posed problems typically give 1e-10 or less). Otherwise
    the solver finishes with :func:`~linlap.solvers.kernel_pcg.kernel_pcg` (``tol=rtol``,
    no early stopping, at most ``fallback_max_iter`` iterations, on K scaled to unit mean
    diagonal as in :func:`relative_gradient`; it needs no solve and minimises the same
    J) from the last accepted point — the last Newton iterate (every Newton point it
    moved towards passed the check), or zero for the columns of a rejected closed form
    (a rejected solve can carry huge α components that K nearly annihilates: harmless
    to J in exact arithmetic, not to f = Kα in floating point) — and warns: a
    :class:`scipy.linalg.LinAlgWarning` when PCG reached ``rtol``, a
    :class:`~sklearn.exceptions.ConvergenceWarning` saying that the result is not the
    minimiser when it did not. The result is then PCG's (``stop_reason`` 'tol',
    'max_iter' or 'stalled'). (LAPACK's condition estimate, on which ``scipy.linalg.solve`` warns
    when rcond < ε, is not the test: it bounds the error in α a priori, in the worst
    case, while J depends on f; on the problems measured it let solves through with a
    relative gradient of 3e-3 (rcond 1.5e-15). The residual measures the returned
    point itself, for one more product with K — O(n²) against the solve's O(n³).)

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The Gram matrix (float64).
    targets, labeled_rows, laplacian_matvec, gamma_A, gamma_I, scale, loss, fit_intercept
        As in :func:`kernel_pcg`.
    tol : float
        Slack of the error-vector test.
    max_iter : int
        Newton steps per column.
    callback : callable or None
        ``callback(step, n_error_vectors)``.
    rtol : float
        Largest accepted :func:`relative_gradient` of a Newton point or of the closed
        form (default ``DENSE_RTOL`` = 1e-6, PCG's default ``tol``); also the ``tol``
        of the PCG that takes over past it.
    fallback_max_iter : int
        ``max_iter`` of that PCG.

    Returns
    -------
    KernelSolution
        ``n_iter`` is the largest number of steps over columns (PCG iterations when PCG
        took over).
    """
    K = np.asarray(K, dtype=np.float64)
    n = K.shape[0]
    if K.ndim != 2 or K.shape != (n, n):
        raise ValueError(f"K must be square, got shape {K.shape}.")
    Y, rows = _check_problem(n, targets, labeled_rows, gamma_A, gamma_I, scale, loss)
    if not rtol > 0:
        raise ValueError(f"rtol must be > 0, got {rtol!r}.")
    l, k = Y.shape
    graph = gamma_I > 0
    c = gamma_I * scale * l if graph else 0.0
    m = n + 1 if fit_intercept else n
    weights = dict(gamma_A=gamma_A, gamma_I=gamma_I, scale=scale, fit_intercept=fit_intercept)
    base = np.zeros((m, m))
    if graph:
        MK = np.asarray(laplacian_matvec(K), dtype=np.float64)
        base[:n, :n] = c * MK
        if fit_intercept:
            M1 = np.asarray(laplacian_matvec(np.ones(n)), dtype=np.float64)
            base[:n, n] = c * M1
            base[n, :n] = c * MK.sum(axis=0)
            base[n, n] = c * M1.sum()
        del MK
    base[np.arange(n), np.arange(n)] += gamma_A * l

    def Mmul(v):
        return np.asarray(laplacian_matvec(v), dtype=np.float64) if graph else 0.0 * v

    def solve(erows, yE):
        H = base.copy()
        H[erows, :n] += K[erows]
        rhs = np.zeros(m)
        rhs[erows] = yE
        if fit_intercept:
            H[erows, n] += 1.0
            H[n, :n] += K[erows].sum(axis=0)
            H[n, n] += erows.size
            rhs[n] = yE.sum()
        try:
            z = np.linalg.solve(H, rhs)
        except np.linalg.LinAlgError:
            z = np.linalg.lstsq(H, rhs, rcond=None)[0]
        return z[:n], (z[n] if fit_intercept else 0.0)

    def J(a, bb, f):
        return _objective(y[:, None], f[:, None], rows, a[:, None], bb,
                          Mmul(f)[:, None] if graph else None, gamma_A, gamma_I, scale,
                          loss)[0]

    def fallback(what, rel, A0, b0):
        return _pcg_fallback(K, Y, rows, laplacian_matvec, what, rel, (A0, b0), loss=loss,
                             rtol=rtol, max_iter=fallback_max_iter, **weights)

    coefs, intercepts, F = np.zeros((k, n)), np.zeros(k), np.zeros((n, k))
    if loss == "squared":
        # E = all labeled rows for every column: one matrix, k right-hand sides.
        H = base.copy()
        H[rows, :n] += K[rows]
        rhs = np.zeros((m, k))
        rhs[rows] = Y
        if fit_intercept:
            H[rows, n] += 1.0
            H[n, :n] += K[rows].sum(axis=0)
            H[n, n] += l
            rhs[n] = Y.sum(axis=0)
        try:
            Z = np.linalg.solve(H, rhs)
        except np.linalg.LinAlgError:
            Z = np.linalg.lstsq(H, rhs, rcond=None)[0]
        del H
        coefs = Z[:n].T.copy()
        intercepts = Z[n].copy() if fit_intercept else np.zeros(k)
        F = K @ Z[:n] + intercepts
        MF = laplacian_matvec(F) if graph else 0.0 * F
        Jd = _objective(Y, F, rows, Z[:n], intercepts, MF if graph else None, gamma_A,
                        gamma_I, scale, loss)
        if callback is not None:
            callback(1, l)
        rel = relative_gradient(K, Y, rows, laplacian_matvec, coefs, intercepts,
                                loss=loss, decision=F, **weights)
        if np.all(rel <= rtol):
            return KernelSolution(coefs, intercepts, F, 1, True, "direct", 0.0, Jd[None, :])
        # PCG from the closed form's columns that passed, from zero for the others: a
        # rejected solve can carry huge α components that K nearly annihilates, harmless
        # to J in exact arithmetic but not to f = Kα in floating point
        bad = ~(rel <= rtol)
        coefs[bad], intercepts[bad] = 0.0, 0.0
        return fallback("The closed form (solver='direct')", rel, coefs, intercepts)
    hist, steps_max, converged, rejected = [], 0, True, np.zeros(k)
    for col in range(k):
        y = Y[:, col]
        a, bb, f = np.zeros(n), 0.0, np.zeros(n)
        h = [J(a, bb, f)]
        ok = False
        for step in range(1, max_iter + 1):
            act = (y * f[rows] < 1.0) if loss == "squared_hinge" else np.ones(l, bool)
            a_bar, b_bar = solve(rows[act], y[act])
            f_bar = K @ a_bar + b_bar
            if callback is not None:
                callback(step, int(act.sum()))
            # the Newton point minimises the squared loss on E: check it did
            r = relative_gradient(K, y, rows, laplacian_matvec, a_bar, b_bar, loss=loss,
                                  error_rows=act[:, None], decision=f_bar, **weights)[0]
            if not r <= rtol:
                rejected[col] = r
                break
            yo = y * f_bar[rows]
            if loss == "squared" or (np.all(yo[act] <= 1.0 + tol)
                                     and np.all(yo[~act] >= 1.0 - tol)):
                a, bb, f = a_bar, b_bar, f_bar
                h.append(J(a, bb, f))
                ok = True
                break
            da, dbb, fd = a_bar - a, b_bar - bb, f_bar - f
            slope = 2 * gamma_A * (f - bb) @ da
            curv = gamma_A * da @ (fd - dbb)
            if graph:
                Mfd = Mmul(fd)
                slope += 2 * gamma_I * scale * Mmul(f) @ fd
                curv += gamma_I * scale * fd @ Mfd
            s, _ = kernel_line_search(y, f[rows], fd[rows], slope, curv, l, loss)
            a, bb, f = a + s * da, bb + s * dbb, f + s * fd
            h.append(J(a, bb, f))
        steps_max = max(steps_max, step)
        converged &= ok
        coefs[col], intercepts[col], F[:, col] = a, bb, f
        hist.append(h)
    if rejected.any():
        # from the last iterate of every column (those that converged stop at once)
        return fallback("A Newton step (solver='newton')", rejected[rejected > 0], coefs,
                        intercepts)
    if not converged:
        warnings.warn(f"Kernel Newton reached max_iter={max_iter} before the error "
                      "vectors settled; increase max_iter.", ConvergenceWarning,
                      stacklevel=user_stacklevel())
    width = max(len(h) for h in hist)
    history = np.array([h + [h[-1]] * (width - len(h)) for h in hist]).T
    return KernelSolution(coefs, intercepts, F, steps_max, converged, "newton",
                          0.0 if converged else np.nan, history)


#: The remedies named by the warnings of the dense solvers and the dual's error.
REMEDIES = ("normalise the rows of X (sklearn.preprocessing.Normalizer(); with the linear "
            "or polynomial kernel K grows with the square of their norm, which acts as "
            "gamma_A divided by it), raise gamma_A, or lower the Laplacian power (or the "
            "polynomial kernel's degree)")


def _pcg_fallback(K, Y, rows, laplacian_matvec, what, rel, init, *, gamma_A, gamma_I, scale,
                  loss, fit_intercept, rtol, max_iter):
    """PCG (early_stopping=None, tol=rtol) from ``init`` after a rejected dense solve, with
    one warning that says why and how it ended.

    A fallback with a warning rather than an error: PCG minimises the same J without any
    solve, so the user still gets the model asked for (the minimiser, when PCG
    converges), as scikit-learn's Ridge falls back to another solver with a warning
    when its direct solve fails; only when PCG does not converge either is the warning a
    ConvergenceWarning saying that the model is not the minimiser."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sol = kernel_pcg(lambda V: K @ V, Y, rows, laplacian_matvec, n_samples=K.shape[0],
                         gamma_A=gamma_A, gamma_I=gamma_I, scale=scale, loss=loss,
                         fit_intercept=fit_intercept, tol=rtol, max_iter=max_iter, init=init,
                         kernel_scale=kernel_scale(np.diagonal(K)))
    for w in caught:  # PCG's own max_iter warning is folded into ours
        if not issubclass(w.category, ConvergenceWarning):
            warnings.warn(w.message, w.category, stacklevel=user_stacklevel())
    why = (f"{what} is not accurate on this problem: its relative gradient (PCG's residual) "
           f"is {np.max(rel):.1e}, above rtol={rtol:g}, because the dense (n+1)² system is "
           f"too ill-conditioned for float64")
    if sol.converged:
        warnings.warn(f"{why}. Solved by PCG instead (solver='pcg' without early stopping), "
                      f"which reached rtol in {sol.n_iter} iterations. To keep the dense "
                      f"solver: {REMEDIES}.", LinAlgWarning, stacklevel=user_stacklevel())
    else:
        how = (f"stopped at max_iter={max_iter}" if sol.stop_reason == "max_iter" else
               f"stalled after {sol.n_iter} iterations (float64 round-off)")
        warnings.warn(f"{why}, and PCG (solver='pcg' without early stopping), which took "
                      f"over, {how} with a relative gradient of "
                      f"{sol.residual:.1e}: the returned model is not the minimiser of J. "
                      f"{REMEDIES[0].upper() + REMEDIES[1:]}; or raise max_iter.",
                      ConvergenceWarning, stacklevel=user_stacklevel())
    return sol
