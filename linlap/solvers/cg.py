"""Conjugate gradients on a block of right-hand sides sharing one SPD operator.

Every class of a one-vs-rest problem (and the extra column of the class-balance
constraint) solves a system with the *same* operator, so the expensive part of a
matvec — passes over X and over the graph — is done once per iteration for all
columns. Each column keeps its own CG scalars (this is "batched" CG, not the
block-Krylov variant), so each column follows exactly the iterates plain CG would
produce on its own, and converged columns are frozen.

Memory traffic: the iterates of the running columns live in four
preallocated (m, c) blocks (x, r, p, Ap), compacted only when a column freezes;
the updates ``x += α p, r −= α Ap, ‖r‖²`` and ``p = r + β p`` are fused numba
passes, and an operator whose ``matvec`` takes ``out=`` writes ``A p`` in place —
so an iteration allocates no array (a preconditioner, if given, may).
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .normal_operator import accepts_keyword

__all__ = ["batched_cg", "CGInfo", "NonFiniteOperatorError"]


class NonFiniteOperatorError(ValueError, FloatingPointError):
    """The CG operator returned NaN or inf: it overflows float64 (a Laplacian power or
    weights too large), which no number of iterations cures."""


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
    R0=None,
    on_update=None,
    energy_rtol=None,
    energy_offset=None,
    energy_delay=10,
):
    """Solve ``A X = B`` column by column with conjugate gradients, sharing matvecs.

    Parameters
    ----------
    matvec : callable
        ``matvec(P)`` returns ``A @ P`` for a block ``P`` of shape (m, k), for any
        number of columns k. ``A`` must be symmetric positive definite. If it
        accepts an ``out`` keyword (as :meth:`linlap.solvers.normal_operator.NormalOperator.matvec`
        does) it is called as ``matvec(P, out=AP)`` with a preallocated C-contiguous
        float64 block and must write ``A @ P`` there.
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
    R0 : ndarray of the same shape as B, optional
        The residual ``B − A X0`` when the caller already has it (saves the product
        with ``X0``); only with ``X0``.
    on_update : callable, optional
        Called as ``on_update(columns, alpha, positions)`` after each product, as the
        columns ``columns`` (indices into B) of the iterate move by ``alpha`` times
        the directions just multiplied, which were the columns ``positions`` of that
        product's block: for a caller tracking a linear image of the iterate (finite
        Newton keeps ``X̃ x`` and ``L^p X̃ x`` from the operator's own passes).
    energy_rtol : float, optional
        Also require, before a column stops, that its error in the A-norm be small
        against the objective it minimises: with ``φ(x) = ½xᵀAx − bᵀx``, the decrease
        ``Σ α_j r_jᵀz_j`` of ``2φ`` over the last ``energy_delay`` iterations (the last
        half of those done, if fewer) — the
        Hestenes–Stiefel estimate of ``‖x − x*‖²_A`` at the start of that window, a
        lower bound (Strakoš & Tichý 2002) — must be at most ``energy_rtol ·
        |energy_offset − xᵀb − xᵀr|`` (``−xᵀb − xᵀr = 2φ(x)``). A relative residual
        can be small while x is far from x* in an ill-conditioned A; this bounds the
        objective instead (see :func:`~linlap.solvers.laprls.laprls_linear`). The rule
        needs iterations to estimate from: a column whose start (``X0``) already meets
        ``tol`` does not iterate.
    energy_offset : ndarray of shape (n_columns,), optional
        The constant making ``energy_offset + 2φ(x)`` the objective (times a scale) of
        each column; zeros when omitted (then the reference is ``|2φ(x)| ≈ ‖x*‖²_A``).
    energy_delay : int, default=10
        Iterations in the estimate's window.

    Returns
    -------
    X : ndarray, same shape as B
    info : CGInfo
    """
    from .._numba.cg import cg_direction, cg_update, column_dots

    B = np.asarray(B, dtype=np.float64)
    vector = B.ndim == 1
    if vector:
        B = B[:, None]
    m, k = B.shape
    if not np.all(np.isfinite(B)):
        raise ValueError(f"{name}: the right-hand side B has NaN or infinite values.")

    def start(V, what):
        """X0 or R0 as an (m, k) float64 copy: B's shape (a 1-D B: (m,)), finite."""
        V = np.array(V, dtype=np.float64)
        if V.shape != ((m,) if vector else (m, k)):
            raise ValueError(f"{what} must have the shape of B, "
                             f"{(m,) if vector else (m, k)}, got {V.shape}.")
        if not np.all(np.isfinite(V)):
            raise ValueError(f"{name}: {what} has NaN or infinite values.")
        return V.reshape(m, k)

    X = np.zeros((m, k)) if X0 is None else start(X0, "X0")

    b_norm = np.linalg.norm(B, axis=0)
    # A zero right-hand side has the exact solution 0, whatever the start.
    zero_rhs = b_norm == 0
    X[:, zero_rhs] = 0.0
    b_norm[zero_rhs] = 1.0

    with_out = accepts_keyword(matvec, "out")

    def apply(P, columns, out):
        if with_out:
            if column_matvec:
                matvec(P, columns, out=out)
            else:
                matvec(P, out=out)
        else:
            out[...] = matvec(P, columns) if column_matvec else matvec(P)
        return out

    if R0 is not None:
        if X0 is None:
            raise ValueError("R0 is the residual of X0: pass X0 too.")
        R = start(R0, "R0")
        R[:, zero_rhs] = 0.0  # X is 0 there
    elif X0 is not None:
        R = B - apply(X, np.arange(k), np.empty((m, k)))
    else:
        R = B.copy()
    Zp = precond(R) if precond is not None else R
    rz = np.einsum("ij,ij->j", R, Zp)
    rel = np.linalg.norm(R, axis=0) / b_norm
    rel[zero_rhs] = 0.0
    active = rel > tol
    broke = np.zeros(k, dtype=bool)  # stopped by pᵀAp <= 0
    history = []
    n_iter = 0
    if energy_rtol is not None:
        offset = (np.zeros(k) if energy_offset is None
                  else np.asarray(energy_offset, dtype=np.float64).reshape(k))
        window = np.zeros((k, max(int(energy_delay), 1)))  # α_j r_jᵀz_j, by iteration

        def energy_small(columns, Xc, Rc):
            """Whether the running columns ``columns`` (iterates Xc, residuals Rc) meet the
            energy rule."""
            two_phi = -(np.einsum("ij,ij->j", Xc, B[:, columns])
                        + np.einsum("ij,ij->j", Xc, Rc))
            # the last d steps; before d iterations the last half of them (a window
            # reaching back to x₀ would measure the whole first error, not the last
            # iterates': a fit that converges in a few steps would run d of them)
            d = window.shape[1]
            w = d if n_iter >= d else max(1, n_iter // 2)
            recent = (n_iter - 1 - np.arange(w)) % d
            # a floor of 1e-10 |c|: c + 2φ → 0 (an objective that vanishes at x*) is
            # known only to round-off in c
            reference = np.maximum(np.abs(offset[columns] + two_phi),
                                   1e-10 * np.abs(offset[columns]))
            return window[np.ix_(columns, recent)].sum(axis=1) <= energy_rtol * reference

    # Running columns, compacted into C-contiguous (m, na) views of flat buffers.
    cols = np.flatnonzero(active)
    na = cols.size
    flat = {key: np.empty(m * max(na, 1)) for key in ("X", "R", "P", "AP")}

    def block(key, width):
        return flat[key][: m * width].reshape(m, width)

    Xa, Ra, Pa, APa = (block(key, na) for key in ("X", "R", "P", "AP"))
    Xa[...] = X[:, cols]
    Ra[...] = R[:, cols]
    Pa[...] = Zp[:, cols]
    pAp, rr = np.empty(k), np.empty(k)

    def freeze(keep):
        """Write the running columns back and keep only ``keep`` (bool over cols)."""
        nonlocal cols, Xa, Ra, Pa, APa
        X[:, cols] = Xa
        R[:, cols] = Ra
        kept = [arr[:, keep].copy() for arr in (Xa, Ra, Pa)]
        cols = cols[keep]
        Xa, Ra, Pa = (block(key, cols.size) for key in ("X", "R", "P"))
        APa = block("AP", cols.size)
        for dst, src in zip((Xa, Ra, Pa), kept):
            dst[...] = src

    while n_iter < max_iter and cols.size:
        na = cols.size
        apply(Pa, cols, APa)
        column_dots(Pa, APa, pAp[:na])
        if not np.all(np.isfinite(pAp[:na])):
            # not round-off: the operator overflowed (or was given non-finite data)
            raise NonFiniteOperatorError(
                f"{name}: the operator returned non-finite values (pᵀAp = "
                f"{pAp[:na][~np.isfinite(pAp[:na])][0]} at iteration {n_iter + 1}): A "
                f"overflows float64 — e.g. a Laplacian power too large (L^p's eigenvalues "
                f"reach 2^p), or weights or values of X too large.")
        # pAp <= 0 can only come from round-off (A is SPD): stop those columns.
        ok = pAp[:na] > 0
        positions = None
        if not ok.all():
            positions = np.flatnonzero(ok)
            active[cols[~ok]] = False
            broke[cols[~ok]] = True
            APa_ok = APa[:, ok].copy()
            pAp[: ok.sum()] = pAp[:na][ok]
            freeze(ok)
            if cols.size == 0:
                break
            na = cols.size
            APa[...] = APa_ok
        alpha = rz[cols] / pAp[:na]
        if energy_rtol is not None:
            window[cols, n_iter % window.shape[1]] = alpha * rz[cols]
        if on_update is not None:
            on_update(cols, alpha, np.arange(na) if positions is None else positions)
        cg_update(Xa, Ra, Pa, APa, alpha, rr[:na])
        if precond is not None:
            Za = np.ascontiguousarray(precond(Ra), dtype=np.float64)
            rz_new = np.einsum("ij,ij->j", Ra, Za)
        else:
            Za, rz_new = Ra, rr[:na].copy()
        beta = rz_new / rz[cols]
        rz[cols] = rz_new
        cg_direction(Pa, Za, beta)
        rel[cols] = np.sqrt(rr[:na]) / b_norm[cols]
        n_iter += 1
        active[cols] = rel[cols] > tol
        if energy_rtol is not None and not active[cols].all():
            met = ~active[cols]
            active[cols[met]] = ~energy_small(cols[met], Xa[:, met], Ra[:, met])
        worst = float(rel[cols].max())
        history.append(worst)
        if callback is not None:
            callback(n_iter, worst)
        still = active[cols]
        if not still.all():
            freeze(still)
    if cols.size:
        X[:, cols] = Xa
        R[:, cols] = Ra

    converged = rel <= tol
    if energy_rtol is not None:
        converged &= ~active  # a column still running did not meet the energy rule
    if warn and not converged.all():
        broken = broke & ~converged
        why = ("; increase max_iter or loosen tol" if not broken.all() else "")
        if broken.any():
            why += (f"; {int(broken.sum())} column(s) stopped with pᵀAp <= 0 before tol: "
                    f"A is not positive definite along them (or round-off ends them)")
        warnings.warn(
            f"{name} did not converge: relative residual {rel.max():.3g} (tol={tol:g}"
            f"{'' if energy_rtol is None else ', and the objective rule'}) after "
            f"{n_iter} iterations{why}.",
            ConvergenceWarning,
            stacklevel=2,
        )
    if vector:
        X = X[:, 0]
    return X, CGInfo(n_iter, rel, converged, history)
