"""Conjugate gradients on a block of right-hand sides sharing one SPD operator.

Every class of a one-vs-rest problem (and the extra column of the class-balance
constraint) solves a system with the *same* operator, so the expensive part of a
matvec — passes over X and over the graph — is done once per iteration for all
columns. Each column keeps its own CG scalars (this is "batched" CG, not the
block-Krylov variant), so each column follows exactly the iterates plain CG would
produce on its own, and converged columns are frozen.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

__all__ = ["batched_cg", "CGInfo"]


class CGInfo:
    """What a CG run did.

    Attributes
    ----------
    n_iter : int
        Iterations performed (the maximum over columns).
    residual : ndarray of shape (n_columns,)
        Final relative residual ``||b - A x|| / ||b||`` of each column.
    converged : ndarray of bool, shape (n_columns,)
        Whether each column reached ``tol``.
    history : list of float
        The largest relative residual over the still-active columns, one
        entry per iteration (for convergence plots and verbose output).
    """

    def __init__(self, n_iter, residual, converged, history):
        self.n_iter = n_iter
        self.residual = residual
        self.converged = converged
        self.history = history

    def __repr__(self):
        return (
            f"CGInfo(n_iter={self.n_iter}, max_residual={np.max(self.residual):.3g}, "
            f"converged={bool(np.all(self.converged))})"
        )


def batched_cg(
    matvec,
    B,
    X0=None,
    *,
    tol=1e-6,
    max_iter=1000,
    precond=None,
    callback=None,
    warn=True,
    name="CG",
    column_matvec=False,
):
    """Solve ``A X = B`` column by column with conjugate gradients, sharing matvecs.

    Parameters
    ----------
    matvec : callable
        ``matvec(P)`` returns ``A @ P`` for a block ``P`` of shape (m, k), for any
        number of columns k. ``A`` must be symmetric positive definite.
    B : ndarray of shape (m,) or (m, n_columns)
        Right-hand sides.
    X0 : ndarray of the same shape as B, optional
        Starting point (warm start). Zero when omitted.
    tol : float, default=1e-6
        Stop a column when ``||b - A x|| <= tol * ||b||``.
    max_iter : int, default=1000
        Maximum number of iterations.
    precond : callable, optional
        ``precond(R)`` applies an SPD approximation of ``A^{-1}`` to a block.
    callback : callable, optional
        Called as ``callback(iteration, max_relative_residual)`` after each step.
    warn : bool, default=True
        Emit a :class:`~sklearn.exceptions.ConvergenceWarning` when a column
        stops without reaching ``tol``.
    name : str
        How warnings name this solve.
    column_matvec : bool, default=False
        Call ``matvec(P, columns)``, where ``columns`` are the indices (into B) of
        the columns of ``P``: for systems whose operator differs by column but
        shares the expensive passes (one active set per class in finite Newton).

    Returns
    -------
    X : ndarray, same shape as B
    info : CGInfo
    """
    B = np.asarray(B, dtype=np.float64)
    vector = B.ndim == 1
    if vector:
        B = B[:, None]
    m, k = B.shape
    X = np.zeros((m, k)) if X0 is None else np.array(X0, dtype=np.float64).reshape(m, k)

    b_norm = np.linalg.norm(B, axis=0)
    # A zero right-hand side has the exact solution 0, whatever the start.
    zero_rhs = b_norm == 0
    X[:, zero_rhs] = 0.0
    b_norm[zero_rhs] = 1.0

    if column_matvec:
        apply = matvec
    else:
        def apply(P, columns):
            return matvec(P)
    R = B - apply(X, np.arange(k)) if X0 is not None else B.copy()
    Zp = precond(R) if precond is not None else R
    P = Zp.copy()
    rz = np.einsum("ij,ij->j", R, Zp)
    rel = np.linalg.norm(R, axis=0) / b_norm
    rel[zero_rhs] = 0.0
    active = rel > tol
    history = []
    n_iter = 0

    while n_iter < max_iter and active.any():
        cols = np.flatnonzero(active)
        Pa = P[:, cols]
        APa = apply(Pa, cols)
        pAp = np.einsum("ij,ij->j", Pa, APa)
        # pAp <= 0 can only come from round-off (A is SPD): stop those columns.
        ok = pAp > 0
        if not ok.all():
            active[cols[~ok]] = False
            cols, Pa, APa, pAp = cols[ok], Pa[:, ok], APa[:, ok], pAp[ok]
            if cols.size == 0:
                break
        alpha = rz[cols] / pAp
        X[:, cols] += Pa * alpha
        Ra = R[:, cols] - APa * alpha
        R[:, cols] = Ra
        Za = precond(Ra) if precond is not None else Ra
        rz_new = np.einsum("ij,ij->j", Ra, Za)
        beta = rz_new / rz[cols]
        rz[cols] = rz_new
        P[:, cols] = Za + Pa * beta
        rel[cols] = np.linalg.norm(Ra, axis=0) / b_norm[cols]
        n_iter += 1
        active[cols] = rel[cols] > tol
        worst = float(rel[cols].max())
        history.append(worst)
        if callback is not None:
            callback(n_iter, worst)

    converged = rel <= tol
    if warn and not converged.all():
        warnings.warn(
            f"{name} did not converge: relative residual {rel.max():.3g} > tol={tol:g} "
            f"after {n_iter} iterations; increase max_iter or loosen tol.",
            ConvergenceWarning,
            stacklevel=2,
        )
    if vector:
        X = X[:, 0]
    return X, CGInfo(n_iter, rel, converged, history)
