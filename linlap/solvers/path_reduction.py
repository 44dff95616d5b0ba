"""The l-variable reduction of the hinge-loss LapSVM for the solution path (seed 000):
``G = X_l A^{-1} X_lᵀ`` (plus the bias column) with ``A = ρI + s XᵀL^pX``.

See :mod:`linlap.solvers.path` for the derivation and the scaling.
"""

import warnings

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .._validation import is_finite_real
from ._problem import laplacian_of_ones
from .cg import batched_cg
from .normal_operator import NormalOperator

__all__ = ["PathReduction", "path_reduction"]

#: Relative asymmetry of the n × n reduction's G beyond which its LU lost the digits.
_ASYMMETRY_TOL = 1e-8


# ---------------------------------------------------------------------------------------
# The l-dimensional reduction (Q without labels)
# ---------------------------------------------------------------------------------------

class PathReduction:
    """Label-independent part of the path problem for fixed ρ.

    Attributes
    ----------
    G : ndarray (l, l)
        ``X_l A^{-1} X_lᵀ`` plus ``a aᵀ/q_S`` when the bias is penalised
        (``Q = Y G Y`` for any ±1 targets y of the labeled rows).
    a : ndarray (l,) or None
        Bias column of the labeled rows (None: no intercept).
    q : float
        Schur complement ``q_S`` (0 for a free bias).
    bias : {'free', 'penalized', 'none'}
    V : ndarray (p, l)
        ``w' = V (Yα)/λ``: p = d (linear) or n (kernel coefficients β).
    u : ndarray (p,)
        ``w = w' − b u``.
    labeled_rows : ndarray of int
    rho, scale : float
    kernel : bool
    method : str
    n_iter : int
        CG iterations (method 'cg'), else 0.
    """

    def __init__(self, G, a, q, bias, V, u, labeled_rows, rho, scale, kernel, method,
                 n_iter=0):
        self.G, self.a, self.q, self.bias = G, a, q, bias
        self.V, self.u = V, u
        self.labeled_rows = labeled_rows
        self.rho, self.scale, self.kernel, self.method = rho, scale, kernel, method
        self.n_iter = n_iter

    @property
    def n_labeled(self):
        return self.labeled_rows.size


def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def _primal_direct(X, rows, laplacian_matvec, scale, rho, m):
    """``(X_l A^{-1} X_lᵀ, A^{-1} X_lᵀ, A^{-1} m)`` by Cholesky of ``A = ρI + s XᵀL^pX`` (d ≤ n).

    When d < n, ``K = XXᵀ`` is singular and the n × n ``C = ρI + s L^pK`` has the
    condition ~‖X‖²/ρ that A does not (its extra eigenvalues ρ belong to the null space of
    K, which Xᵀ removes in exact arithmetic but LU mixes with the others). Cholesky's
    accuracy is also blind to the columns' scales, and G = HᵀH (H = R^{-T}X_lᵀ) stays PSD.
    A is positive definite in exact arithmetic (ρ > 0); when round-off breaks that, its
    eigenvalues are clipped at ρ, with a warning.
    """
    Xd = _dense(X)
    A = scale * (Xd.T @ np.asarray(laplacian_matvec(Xd)))
    A = 0.5 * (A + A.T)
    A[np.diag_indices_from(A)] += rho
    Xlt = Xd[rows].T
    try:
        R = sla.cholesky(A, lower=False, check_finite=False)
    except np.linalg.LinAlgError:
        warnings.warn(f"lapsvm_path: A = ρI + s XᵀL^pX is not numerically positive definite "
                      f"(ρ = {rho:.3g} is below the round-off of s XᵀL^pX); its eigenvalues "
                      f"are clipped at ρ, and the path is only as accurate as that allows.",
                      RuntimeWarning, stacklevel=4)
        ev, U = np.linalg.eigh(A)
        root = np.sqrt(np.maximum(ev, rho))[:, None]
        H = (U.T @ Xlt) / root                 # the same H, G, V, u with A = U diag(ev) Uᵀ
        V = U @ (H / root)
        u = None if m is None else U @ ((U.T @ (Xd.T @ m))[:, None] / root**2).ravel()
        return H.T @ H, V, u
    H = sla.solve_triangular(R, Xlt, trans="T", check_finite=False)
    V = sla.solve_triangular(R, H, check_finite=False)
    u = None if m is None else sla.cho_solve((R, False), Xd.T @ m, check_finite=False)
    return H.T @ H, V, u


def _check_rho(rho):
    if not (is_finite_real(rho) and rho > 0):
        raise ValueError(f"rho = gamma_A/gamma_I must be a finite number > 0, got {rho!r}.")
    return float(rho)


#: relative asymmetry of a precomputed Gram matrix accepted (float32 round-off and more)
_GRAM_SYMMETRY_RTOL = 1e-6


def _check_precomputed_gram(K):
    """A precomputed K is symmetric (to ``_GRAM_SYMMETRY_RTOL`` of its largest entry) with
    a nonnegative diagonal (``K_ii = k(x_i, x_i) >= 0`` for a Mercer kernel); else the
    path's Q is not a PSD matrix and the path means nothing."""
    top = abs(K).max() if K.size else 0.0
    if sp.issparse(K):
        asym = abs(K - K.T).max() if K.nnz else 0.0
        diag = K.diagonal()
    else:
        asym = np.abs(K - K.T).max() if K.size else 0.0
        diag = np.diag(K)
    asym = float(asym) / max(float(top), np.finfo(float).tiny)
    if asym > _GRAM_SYMMETRY_RTOL:
        raise ValueError(f"kernel='precomputed' needs a symmetric Gram matrix K = k(x_i, x_j); "
                         f"K - K^T reaches {asym:.3g} of its largest entry (tolerance "
                         f"{_GRAM_SYMMETRY_RTOL:g}).")
    if diag.size and diag.min() < -_GRAM_SYMMETRY_RTOL * float(top):
        i = int(np.argmin(diag))
        raise ValueError(f"kernel='precomputed' needs a Gram matrix with a nonnegative diagonal "
                         f"(K_ii = k(x_i, x_i) >= 0), got K[{i}, {i}] = {diag[i]:.6g}: pass K "
                         f"itself, not -K or a distance matrix.")


def path_reduction(X, labeled_rows, laplacian_matvec, scale, *, rho, fit_intercept=True,
                   kernel=None, method="auto", tol=1e-10, max_iter=5000,
                   memory_budget=2**30):
    """Compute ``G = X_l A^{-1} X_lᵀ`` (+ bias column) and the coefficient maps.

    Parameters
    ----------
    X : sparse matrix or ndarray (n, d), or ndarray (n, n) Gram matrix with
        ``kernel='precomputed'``
    labeled_rows : ndarray of int (l,)
    laplacian_matvec : callable ``F ↦ L^p F``
    scale : float
        ``s`` of the objective (``graph.scale_``).
    rho : float
        ``γ_A/γ_I > 0``.
    fit_intercept : bool
    kernel : None or 'precomputed'
    method : {'auto', 'gram', 'cg'}
        Linear mode only. 'gram': dense direct — Cholesky of the d × d ``A`` when
        d ≤ n, else the push-through LU of the n × n ``C = ρI + s L^pK`` (redone by the
        d × d Cholesky when the LU lost accuracy and A fits ``memory_budget``, else a
        warning). 'auto' takes 'gram' when its arrays fit ``memory_budget``, else 'cg'.
    tol, max_iter : CG tolerance and iterations (method 'cg').
    memory_budget : int
        Bytes for the dense arrays of 'gram' (X, L^pX and two d × d arrays when d ≤ n,
        else three n × n arrays) and of the kernel mode.

    Returns
    -------
    PathReduction
    """
    rho = _check_rho(rho)
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite number > 0 (a graph with edges), got {scale!r}.")
    if kernel not in (None, "precomputed"):
        raise ValueError(f"kernel must be None or 'precomputed', got {kernel!r}.")
    if method not in ("auto", "gram", "cg"):
        raise ValueError(f"method must be 'auto', 'gram' or 'cg', got {method!r}.")
    n, d = X.shape
    rows = np.asarray(labeled_rows, dtype=np.intp)
    l = rows.size
    # 'gram' factors A (d × d, X and L^pX dense beside it) when d ≤ n, else C (n × n)
    primal_bytes = 8 * (2 * n * d + 2 * d * d)
    primal = kernel is None and d <= n
    need_dense = primal_bytes if primal else 3 * 8 * n * n
    if kernel == "precomputed":
        if X.shape != (n, n):
            raise ValueError(f"kernel='precomputed' needs a square Gram matrix, got {X.shape}.")
        _check_precomputed_gram(X)
        method = "kernel"
        if need_dense > memory_budget:
            raise ValueError(f"The kernel path needs {need_dense} bytes for n = {n} (n × n "
                             f"arrays), over memory_budget = {memory_budget}; use the linear "
                             f"mode (method='cg').")
    elif method == "auto":
        method = "gram" if need_dense <= memory_budget else "cg"
    elif method == "gram" and need_dense > memory_budget:
        raise ValueError(f"method='gram' needs {need_dense} bytes for n = {n}, d = {d}, over "
                         f"memory_budget = {memory_budget}; use method='cg'.")

    # L^p 1: bias free when it vanishes (relative to L^p of a random ±1 vector)
    bias = "none"
    Lp1 = None
    if fit_intercept:
        Lp1, free = laplacian_of_ones(laplacian_matvec, n)
        bias = "free" if free else "penalized"
    n_iter = 0
    extra = bias == "penalized"

    if method == "gram" and primal:
        G, V, u = _primal_direct(X, rows, laplacian_matvec, scale, rho,
                                 scale * Lp1 if extra else None)
        Xu_all = np.asarray(X @ u).ravel() if extra else None
    elif method in ("gram", "kernel"):
        K = _dense(X @ X.T) if method == "gram" else np.asarray(X, dtype=np.float64)
        C = scale * np.asarray(laplacian_matvec(K))
        C[np.diag_indices(n)] += rho
        rhs = np.zeros((n, l + extra))
        rhs[rows, np.arange(l)] = 1.0
        if extra:
            rhs[:, l] = scale * Lp1
        P = sla.lu_solve(sla.lu_factor(C, check_finite=False), rhs, check_finite=False)
        KP = K @ P                     # = X A^{-1} [X_lᵀ, s XᵀL^p1] (the Gram of the push-through)
        G = KP[rows, :l]
        if method == "gram":
            V = np.asarray(X.T @ P[:, :l])
            u = np.asarray(X.T @ P[:, l]).ravel() if extra else None
        else:
            V = P[:, :l]
            u = P[:, l].copy() if extra else None
        Xu_all = KP[:, l] if extra else None
        # G is symmetric in exact arithmetic; its asymmetry shows the LU of the nonsymmetric C
        # lost the digits (columns of X or K of very different scales, ‖K‖/ρ near 1/eps)
        asym = np.abs(G - G.T).max() / max(np.abs(G).max(), np.finfo(float).tiny)
        if asym > _ASYMMETRY_TOL and method == "gram" and primal_bytes <= memory_budget:
            G, V, u = _primal_direct(X, rows, laplacian_matvec, scale, rho,
                                     scale * Lp1 if extra else None)
            Xu_all = np.asarray(X @ u).ravel() if extra else None
        elif asym > _ASYMMETRY_TOL:
            what = "X's columns" if method == "gram" else "the Gram matrix"
            warnings.warn(f"lapsvm_path: the n × n reduction lost accuracy (G = X_l A^{{-1}}X_lᵀ "
                          f"is asymmetric to {asym:.1e} of its largest entry): the scale of "
                          f"{what} over rho = {rho:.3g} is beyond float64, and the path is "
                          f"only that accurate. Normalise the rows of X or raise rho.",
                          RuntimeWarning, stacklevel=3)
    else:
        op = NormalOperator(X, np.zeros(0, dtype=np.intp), laplacian_matvec, alpha=rho,
                            beta=scale, fit_intercept=False)
        Xl = X[rows]
        B = _dense(Xl.T) if sp.issparse(Xl) else np.asarray(Xl, dtype=np.float64).T.copy()
        if extra:
            B = np.column_stack([B, scale * np.asarray(X.T @ Lp1).ravel()])
        Z, info = batched_cg(op, B, tol=tol, max_iter=max_iter, name="lapsvm_path CG")
        n_iter = info.n_iter
        V = Z[:, :l]
        G = np.asarray(Xl @ V)
        u = Z[:, l].copy() if extra else None
        Xu_all = np.asarray(X @ u).ravel() if extra else None
    G = 0.5 * (G + G.T)

    a, q = None, 0.0
    if bias == "free":
        a = np.ones(l)
        u = None
    elif bias == "penalized":
        q0 = scale * Lp1.sum()
        # q_S = s 1ᵀL^p1 − s (L^p1)ᵀXu is the minimum over w of ρ‖w‖² + s (1 − Xw)ᵀL^p(1 − Xw),
        # attained at u: summing those two nonnegative terms avoids the cancellation of the
        # difference, and an error in u changes q_S only to second order
        r = 1.0 - Xu_all
        penalty = u @ Xu_all if method == "kernel" else u @ u   # βᵀKβ or ‖w‖²
        q = rho * penalty + scale * float(r @ np.asarray(laplacian_matvec(r[:, None])).ravel())
        a = r[rows]
        if q <= 1e-12 * abs(q0):   # PSD Schur complement vanishes only by round-off
            bias, q, a, u = "free", 0.0, np.ones(l), None
        else:
            G = G + np.outer(a, a) / q
    p = V.shape[0]
    if u is None:
        u = np.zeros(p)
    return PathReduction(G, a, float(q), bias, V, u, rows, rho, float(scale),
                         method == "kernel", method, n_iter)
