"""Conjugate gradients for a family of shifted systems ``(A + σ I) x = b`` at once.

Krylov spaces are shift-invariant: ``K_k(A + σI, b) = K_k(A, b)``. CG run on one
("base") system therefore yields the CG iterates of every shifted system from the
same search directions, each at the price of a few vector updates — the residual of a
shifted system is a scalar multiple ``ζ`` of the base residual (Frommer & Maass 1999;
Jegerlehner 1996, "Krylov space solvers for shifted linear systems"). linlap uses it to
solve the LapRLS normal equations for every γ_A of a grid with one sequence of passes
over X and the graph (:func:`linlap.solvers.grid.laprls_grid`).
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._numba.cg import shifted_cg_step
from .cg import NonFiniteOperatorError
from .normal_operator import accepts_keyword

__all__ = ["shifted_cg", "ShiftedCGInfo"]


class ShiftedCGInfo:
    """What a shifted CG run did.

    Attributes
    ----------
    n_iter : int
        Iterations of the base recurrence (one product with A each).
    n_iter_shift : ndarray of int, shape (q, k)
        Iteration at which each shifted system stopped (converged, stopped by the
        monitor, or ``n_iter``).
    residual : ndarray of shape (q, k)
        Relative residual ``‖b − (A + σ) x‖ / ‖b‖`` of each system when it stopped
        (from the recurrence).
    converged : ndarray of bool, shape (q, k)
        Reached ``tol``.
    stopped : ndarray of bool, shape (q, k)
        Stopped by ``monitor`` before reaching ``tol``.
    """

    def __init__(self, n_iter, n_iter_shift, residual, converged, stopped):
        self.n_iter = n_iter
        self.n_iter_shift = n_iter_shift
        self.residual = residual
        self.converged = converged
        self.stopped = stopped

    def __repr__(self):
        return (f"ShiftedCGInfo(n_iter={self.n_iter}, max_residual={self.residual.max():.3g}, "
                f"converged={int(self.converged.sum())}/{self.converged.size})")


def shifted_cg(matvec, B, shifts, *, tol=1e-6, max_iter=1000, monitor=None, warn=True,
               name="shifted CG"):
    """Solve ``(A + σ_{ij} I) x_{ij} = b_j`` for every shift i and column j.

    Parameters
    ----------
    matvec : callable
        ``matvec(P)`` returns ``A @ P`` for a block P of shape (m, k) (``out=`` is
        used when accepted). ``A`` must be symmetric and ``A + σ I`` positive definite
        for every shift.
    B : ndarray of shape (m, k)
        Right-hand sides, one per column.
    shifts : ndarray of shape (q,) or (q, k)
        The shifts σ, the same for every column or one set per column (columns may
        belong to differently scaled systems). The base recurrence of a column runs on
        its smallest shift, the slowest to converge, so every other system of the
        column is done when the base is.
    tol : float, default=1e-6
        A system stops when its relative residual is ``≤ tol``.
    max_iter : int, default=1000
    monitor : callable, optional
        ``monitor(iteration, X, active)`` after every iteration, with the
        current solutions X of shape (q, m, k) and the bool mask (q, k) of systems
        still running; returns a bool mask (q, k) of systems to stop now (early
        stopping: e.g. when their predictions no longer change).
    warn : bool, default=True
        ConvergenceWarning when systems stop at ``max_iter`` without meeting ``tol``.
    name : str

    Returns
    -------
    X : ndarray of shape (q, m, k)
    info : ShiftedCGInfo

    Notes
    -----
    For base iterates (α_t, β_t, r_t, p_t) and ``δ = σ − σ_base ≥ 0`` the shifted
    system's residual is ``ζ_t r_t`` with

        ζ_{t+1} = ζ_t ζ_{t−1} α_{t−1} / (α_{t−1} ζ_{t−1} (1 + δ α_t) + α_t β_{t−1} (ζ_{t−1} − ζ_t)),

    (``ζ_0 = ζ_{−1} = 1``, ``α_{−1} = 1``, ``β_{−1} = 0``) and its iterates are
    ``x += α_t (ζ_{t+1}/ζ_t) p``, ``p ← ζ_{t+1} r_{t+1} + β_t (ζ_{t+1}/ζ_t)² p``.
    Memory: two (m, k) blocks per shift besides the base CG's four.
    """
    B = np.asarray(B, dtype=np.float64)
    if B.ndim != 2:
        raise ValueError(f"B must have shape (m, k), got {B.shape}.")
    if not np.all(np.isfinite(B)):
        raise ValueError(f"{name}: the right-hand side B has NaN or infinite values.")
    m, k = B.shape
    S = np.asarray(shifts, dtype=np.float64)
    if S.ndim == 1:
        S = np.repeat(S[:, None], k, axis=1)
    if S.ndim != 2 or S.shape[1] != k or S.shape[0] == 0:
        raise ValueError(f"shifts must have shape (q,) or (q, {k}), got {np.shape(shifts)}.")
    if not np.all(np.isfinite(S)):
        raise ValueError("shifts must be finite.")
    q = S.shape[0]
    base = S.min(axis=0)                      # (k,)
    delta = S - base                          # (q, k) ≥ 0

    with_out = accepts_keyword(matvec, "out")
    AP = np.empty((m, k))

    def apply(P, out):
        """``out = (A + base) P`` (columns of stopped systems included: cheap for the
        few columns of a grid, and it keeps the product one call)."""
        res = matvec(P, out=out) if with_out else matvec(P)
        if res is not out:
            out[...] = res
        out += base * P
        return out

    b_norm = np.linalg.norm(B, axis=0)
    zero = b_norm == 0
    b_norm[zero] = 1.0
    X = np.zeros((q, m, k))
    R = B.copy()
    P = B.copy()
    Ps = np.repeat(B[None], q, axis=0)        # shifted search directions
    rr = np.einsum("ij,ij->j", R, R)
    zeta = np.ones((q, k))
    zeta_old = np.ones((q, k))
    alpha_old = np.ones(k)
    beta_old = np.zeros(k)
    active = np.repeat(~zero[None], q, axis=0)
    converged = np.repeat(zero[None], q, axis=0)
    stopped = np.zeros((q, k), dtype=bool)
    residual = np.where(zero[None], 0.0, np.ones((q, k)))
    n_iter_shift = np.zeros((q, k), dtype=np.int64)
    t = 0
    while t < max_iter and active.any():
        apply(P, AP)
        t += 1
        running = active.any(axis=0)
        if not np.all(np.isfinite(AP[:, running])):
            raise NonFiniteOperatorError(
                f"{name}: the operator returned non-finite values at iteration {t}: A "
                f"overflows float64 — e.g. a Laplacian power too large (L^p's eigenvalues "
                f"reach 2^p), or weights or values of X too large.")
        shifted_cg_step(X, Ps, P, R, AP, rr, zeta, zeta_old, alpha_old, beta_old, delta, active,
                   b_norm, tol, t, residual, n_iter_shift, converged)
        if monitor is not None and active.any():
            stop = np.asarray(monitor(t, X, active.copy()), dtype=bool) & active
            stopped |= stop
            active &= ~stop
    unfinished = ~(converged | stopped)  # still running at max_iter, or pᵀAp <= 0
    if warn and unfinished.any():
        broken = unfinished & ~active
        why = "; increase max_iter or loosen tol" if active.any() else ""
        if broken.any():
            why += (f"; {int(broken.sum())} system(s) stopped with pᵀAp <= 0 before tol: the "
                    f"base operator is not positive definite (or round-off ends them)")
        warnings.warn(f"{name} did not converge: relative residual "
                      f"{residual[unfinished].max():.3g} > tol={tol:g} after {t} "
                      f"iterations{why}.", ConvergenceWarning, stacklevel=2)
    return X, ShiftedCGInfo(t, n_iter_shift, residual, converged, stopped)
