"""Kernel-mode Laplacian SVM / RLS by Newton's method (seed 003 §3.1) and kernel LapRLS
in closed form (seed 001 eq. 8, with a bias): the exact reference for moderate n.

The objective, scaling and notation are those of :mod:`linlap.solvers.kernel_pcg`.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .kernel_pcg import KernelSolution, _check_problem, _objective, kernel_line_search

__all__ = ["kernel_newton"]

def kernel_newton(K, targets, labeled_rows, laplacian_matvec, *, gamma_A, gamma_I, scale,
                  loss="squared_hinge", fit_intercept=True, tol=1e-9, max_iter=50,
                  callback=None):
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

    Returns
    -------
    KernelSolution
        ``n_iter`` is the largest number of steps over columns.
    """
    K = np.asarray(K, dtype=np.float64)
    n = K.shape[0]
    if K.ndim != 2 or K.shape != (n, n):
        raise ValueError(f"K must be square, got shape {K.shape}.")
    Y, rows = _check_problem(n, targets, labeled_rows, gamma_A, gamma_I, scale, loss)
    l, k = Y.shape
    graph = gamma_I > 0
    c = gamma_I * scale * l if graph else 0.0
    m = n + 1 if fit_intercept else n
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
        return KernelSolution(coefs, intercepts, F, 1, True, "direct", 0.0, Jd[None, :])
    hist, steps_max, converged = [], 0, True
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
    if not converged:
        warnings.warn(f"Kernel Newton reached max_iter={max_iter} before the error "
                      "vectors settled; increase max_iter.", ConvergenceWarning,
                      stacklevel=2)
    width = max(len(h) for h in hist)
    history = np.array([h + [h[-1]] * (width - len(h)) for h in hist]).T
    return KernelSolution(coefs, intercepts, F, steps_max, converged, "newton",
                          0.0 if converged else np.nan, history)
