"""The l-variable reduction of the hinge-loss LapSVM for the solution path (seed 000):
``G = X_l A^{-1} X_lᵀ`` (plus the bias column) with ``A = ρI + s XᵀL^pX``.

See :mod:`linlap.solvers.path` for the derivation and the scaling.
"""

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ._problem import laplacian_of_ones
from .cg import batched_cg
from .normal_operator import NormalOperator

__all__ = ["PathReduction", "path_reduction"]



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


def _check_rho(rho):
    if not (np.isscalar(rho) and np.isfinite(rho) and rho > 0):
        raise ValueError(f"rho = gamma_A/gamma_I must be a finite number > 0, got {rho!r}.")
    return float(rho)


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
        Linear mode only. 'auto' takes 'gram' when its three n × n arrays fit
        ``memory_budget``, else 'cg'.
    tol, max_iter : CG tolerance and iterations (method 'cg').
    memory_budget : int
        Bytes for the n × n arrays of 'gram' and the kernel mode.

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
    n = X.shape[0]
    rows = np.asarray(labeled_rows, dtype=np.intp)
    l = rows.size
    need_gram = 3 * 8 * n * n
    if kernel == "precomputed":
        if X.shape != (n, n):
            raise ValueError(f"kernel='precomputed' needs a square Gram matrix, got {X.shape}.")
        method = "kernel"
        if need_gram > memory_budget:
            raise ValueError(f"The kernel path needs {need_gram} bytes for n = {n} (n × n "
                             f"arrays), over memory_budget = {memory_budget}; use the linear "
                             f"mode (method='cg').")
    elif method == "auto":
        method = "gram" if need_gram <= memory_budget else "cg"
    elif method == "gram" and need_gram > memory_budget:
        raise ValueError(f"method='gram' needs {need_gram} bytes for n = {n}, over "
                         f"memory_budget = {memory_budget}; use method='cg'.")

    # L^p 1: bias free when it vanishes (relative to L^p of a random ±1 vector)
    bias = "none"
    Lp1 = None
    if fit_intercept:
        Lp1, free = laplacian_of_ones(laplacian_matvec, n)
        bias = "free" if free else "penalized"
    n_iter = 0
    extra = bias == "penalized"

    if method in ("gram", "kernel"):
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
        q = q0 - scale * Lp1 @ Xu_all
        a = 1.0 - Xu_all[rows]
        if q <= 1e-12 * abs(q0):   # PSD Schur complement vanishes only by round-off
            bias, q, a, u = "free", 0.0, np.ones(l), None
        else:
            G = G + np.outer(a, a) / q
    p = V.shape[0]
    if u is None:
        u = np.zeros(p)
    return PathReduction(G, a, float(q), bias, V, u, rows, rho, float(scale),
                         method == "kernel", method, n_iter)


# ---------------------------------------------------------------------------------------
# Initialisation (Lemmas 1 and 2)
# ---------------------------------------------------------------------------------------
