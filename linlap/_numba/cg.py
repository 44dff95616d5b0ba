"""numba kernels of the CG loops on (m, c) blocks: column dot products and the fused
``x += α p, r −= α Ap, ‖r‖²`` and ``p = z + β p`` updates."""

import numpy as np
from numba import njit

__all__ = ["column_dots", "cg_update", "cg_direction", "shifted_cg_step"]


@njit(cache=True, nogil=True)
def column_dots(A, B, out):
    """``out[j] = Σ_i A[i, j] B[i, j]``."""
    c = A.shape[1]
    for j in range(c):
        out[j] = 0.0
    for i in range(A.shape[0]):
        for j in range(c):
            out[j] += A[i, j] * B[i, j]


@njit(cache=True, nogil=True)
def cg_update(X, R, P, AP, alpha, rr):
    """``X += P α``, ``R −= AP α`` (α per column) and ``rr[j] = ‖R[:, j]‖²``, one pass."""
    c = X.shape[1]
    for j in range(c):
        rr[j] = 0.0
    for i in range(X.shape[0]):
        for j in range(c):
            X[i, j] += alpha[j] * P[i, j]
            r = R[i, j] - alpha[j] * AP[i, j]
            R[i, j] = r
            rr[j] += r * r


@njit(cache=True, nogil=True)
def cg_direction(P, Zr, beta):
    """``P = Zr + P β`` (β per column), in place."""
    c = P.shape[1]
    for i in range(P.shape[0]):
        for j in range(c):
            P[i, j] = Zr[i, j] + beta[j] * P[i, j]


@njit(cache=True, nogil=True)
def shifted_cg_step(X, Ps, P, R, AP, rr, zeta, zeta_old, alpha_old, beta_old, delta, active,
               b_norm, tol, t, residual, n_iter_shift, converged):
    """One CG step of every running column after ``AP = (A + base) P``: the base
    recurrence (R, P, scalars) and every running shifted system (X, Ps, ζ), in place.

    A column whose ``pᵀAp ≤ 0`` (round-off at its solution) ends its systems.
    """
    q, m, k = X.shape
    for j in range(k):
        running = False
        for s in range(q):
            running = running or active[s, j]
        if not running:
            continue
        pAp = 0.0
        for i in range(m):
            pAp += P[i, j] * AP[i, j]
        if not pAp > 0:
            for s in range(q):
                active[s, j] = False
            continue
        alpha = rr[j] / pAp
        rr_new = 0.0
        for i in range(m):
            r = R[i, j] - alpha * AP[i, j]
            R[i, j] = r
            rr_new += r * r
        beta = rr_new / rr[j] if rr[j] > 0 else 0.0
        for s in range(q):
            if not active[s, j]:
                continue
            den = (alpha_old[j] * zeta_old[s, j] * (1.0 + delta[s, j] * alpha)
                   + alpha * beta_old[j] * (zeta_old[s, j] - zeta[s, j]))
            zn = zeta[s, j] * zeta_old[s, j] * alpha_old[j] / den if den != 0.0 else 0.0
            ratio = zn / zeta[s, j] if zeta[s, j] != 0.0 else 0.0
            a_s = alpha * ratio
            b_s = beta * ratio * ratio
            for i in range(m):
                p = Ps[s, i, j]
                X[s, i, j] += a_s * p
                Ps[s, i, j] = b_s * p + zn * R[i, j]
            zeta_old[s, j] = zeta[s, j]
            zeta[s, j] = zn
            res = abs(zn) * np.sqrt(rr_new) / b_norm[j]
            residual[s, j] = res
            n_iter_shift[s, j] = t
            if res <= tol:
                converged[s, j] = True
                active[s, j] = False
        for i in range(m):
            P[i, j] = R[i, j] + beta * P[i, j]
        alpha_old[j] = alpha
        beta_old[j] = beta
        rr[j] = rr_new
