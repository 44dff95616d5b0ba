"""Regularised spectral clustering (seed 001 §5.4): the eigenfunctions of eq. 13.

With no labels the manifold-regularised objective reduces to seed 001 eq. 12. In
linlap's scaling (graph term times ``s = 1/trace(L)``, ``KNNGraph.scale_``, and the
Laplacian power ``M = L^p``) each eigenfunction f of the RKHS minimises

    R(f) = reg ‖f‖²_K + s fᵀ M f      subject to   1ᵀ f = 0,  fᵀ f = 1,

f evaluated on the n training rows (seed 001's γ is ``reg / s``). By the representer
theorem ``f = K α`` and the constraints are ``1ᵀKα = 0``, ``αᵀK²α = 1``: eq. 13,
``P(reg K + s KMK)P v = λ P K² P v`` with P the projection orthogonal to K1. The
next eigenfunctions minimise R under the same constraints and orthogonality (in
``fᵀf``) to the previous ones; λ = R(f).

Both solvers below write ``K = ΦΦᵀ`` with a feature matrix Φ (n × r) and f = Φw, so
that ``‖f‖²_K = ‖w‖²`` for the minimiser (w in the row space of Φ) and eq. 13 becomes
the r × r pencil

    Φᵀ Φ w = μ (reg I + s Φᵀ M Φ) w,    w ⊥ m = Φᵀ1,    λ = 1/μ,

whose right-hand matrix is positive definite (eigenvalues ≥ reg > 0), so the wanted
eigenfunctions are its *largest* μ; any w outside the row space has μ = 0. The
constraint is imposed by projecting both sides on m^⊥ and giving the m direction
μ = 0.

* :func:`linear_spectral_embedding` — K = XXᵀ, Φ = X: the pencil lives in feature
  space and every product goes through X (``Xᵀ(M(XV))``), so K is never formed and
  sparse text of any n runs in O(nnz(X) + p·nnz(W)) per iteration. Solved densely
  (``scipy.linalg.eigh`` on the d × d pencil) when d is small, else by LOBPCG
  (``scipy.sparse.linalg.lobpcg``) on the operators.
* :func:`kernel_spectral_embedding` — a dense Gram matrix: ``K = UΛUᵀ`` by
  ``eigh``, Φ = U_r Λ_r^½ over the r eigenvalues above ``rtol · λ_max`` (directions
  of K with smaller eigenvalues have ``R ≥ reg/λ`` and never minimise), then the same
  pencil; ``α = U_r Λ_r^{-½} w``. O(n³): moderate n only.

Out-of-sample extension: ``f(x) = xᵀw`` (linear) or ``Σ_j α_j k(x_j, x)`` (kernel).
"""

import warnings

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, lobpcg
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .._validation import is_finite_number

__all__ = ["SpectralSolution", "linear_spectral_embedding", "kernel_spectral_embedding"]


class SpectralSolution:
    """Eigenfunctions of eq. 13.

    Attributes
    ----------
    coef : ndarray of shape (d, k) or (n, k)
        w of each eigenfunction (linear: ``f(x) = xᵀw``) or α (kernel:
        ``f(x) = Σ_j α_j k(x_j, x)``), ordered by increasing λ.
    embedding : ndarray of shape (n, k)
        f on the training rows: mean zero, unit norm, mutually orthogonal; the sign
        makes the entry of largest magnitude positive.
    eigenvalues : ndarray of shape (k,)
        λ = R(f) = reg ‖f‖²_K + s fᵀMf, increasing.
    n_iter : int
        LOBPCG iterations (0 for the dense solve), counted as its products with the
        operator after the first.
    method : str
        'dense' or 'lobpcg'.
    """

    def __init__(self, coef, embedding, eigenvalues, n_iter, method):
        self.coef = coef
        self.embedding = embedding
        self.eigenvalues = eigenvalues
        self.n_iter = n_iter
        self.method = method


def _check(reg, scale, n_components, n):
    if not (is_finite_number(reg) and reg > 0):
        raise ValueError(f"reg must be a finite number > 0, got {reg!r}.")
    if not (is_finite_number(scale) and scale >= 0):
        raise ValueError(f"scale must be a finite number >= 0, got {scale!r}.")
    if not (isinstance(n_components, (int, np.integer)) and 1 <= n_components < n):
        raise ValueError(f"n_components must be an integer in [1, n_samples), got "
                         f"{n_components!r}.")


def _finish(Wd, Xmul, eig_mu, reg, scale, laplacian_matvec):
    """Normalise to ‖f‖ = 1, fix signs, order by λ; Wd (d, k), Xmul: W ↦ XW."""
    F = np.asarray(Xmul(Wd), dtype=np.float64)
    norms = np.linalg.norm(F, axis=0)
    norms[norms == 0] = 1.0
    Wd, F = Wd / norms, F / norms
    idx = np.argmax(np.abs(F), axis=0)
    sign = np.sign(F[idx, np.arange(F.shape[1])])
    sign[sign == 0] = 1.0
    Wd, F = Wd * sign, F * sign
    lam = reg * np.einsum("ij,ij->j", Wd, Wd)
    if scale > 0:
        lam += scale * np.einsum("ij,ij->j", F, np.asarray(laplacian_matvec(F)))
    order = np.argsort(lam, kind="stable")
    return Wd[:, order], F[:, order], lam[order]


def _check_rank(mu, k, rtol=1e-10):
    """The k largest generalised eigenvalues ``mu`` are all nonzero: else the centred X has
    fewer than k directions (e.g. fewer distinct documents than k + 1) and the embedding
    would repeat one eigenfunction or be constant."""
    top = float(np.max(mu)) if np.size(mu) else 0.0
    rank = int(np.sum(mu > rtol * top)) if top > 0 else 0
    if rank < k:
        raise ValueError(f"the centred X has rank {rank} in the eigenproblem (eigenvalues above "
                         f"{rtol:g} of the largest): too low for n_components={k}; use fewer "
                         f"components or clusters (are most documents duplicates?).")


def linear_spectral_embedding(X, laplacian_matvec, *, reg, scale, n_components=1,
                              dense_max_features=2000, tol=1e-6, max_iter=500,
                              random_state=None):
    """Eigenfunctions of eq. 13 with the linear kernel K = XXᵀ, through X only.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
    laplacian_matvec : callable
        ``V ↦ L^p V`` for V of shape (n, m) (``KNNGraph.laplacian_matvec``).
    reg : float
        > 0, the weight of ‖f‖²_K = ‖w‖².
    scale : float
        s of the graph term (``graph.scale_``).
    n_components : int
        Number k of eigenfunctions.
    dense_max_features : int
        d up to which the d × d pencil is formed and solved by ``scipy.linalg.eigh``;
        above, LOBPCG on the operators.
    tol, max_iter : LOBPCG residual tolerance and iterations (2k + 2 block vectors,
        the largest k kept). LOBPCG returns its best iterate; when the residual norm of
        a kept vector is still above ``tol`` a ConvergenceWarning says so.
    random_state : int, RandomState or None
        Start block of LOBPCG.

    Returns
    -------
    SpectralSolution
        ``coef`` (d, k): ``f(x) = xᵀ w``.
    """
    n, d = X.shape
    _check(reg, scale, n_components, n)
    k = int(n_components)
    if k >= d:
        raise ValueError(f"n_components={k} must be smaller than n_features={d}.")
    ones = np.ones(n)
    m = np.asarray(X.T @ ones, dtype=np.float64).ravel()
    mn = np.linalg.norm(m)
    mhat = m / mn if mn > 0 else m
    total = float(X.multiply(X).sum()) if sp.issparse(X) else float(np.sum(X * X))
    if total - mn * mn / n <= 1e-10 * total:  # Σ‖x_i − x̄‖²: every row the same
        raise ValueError(f"the centred X is zero (every row the same): too low a rank for "
                         f"n_components={k}.")

    def proj(V):
        return V - np.outer(mhat, mhat @ V)

    def Xmul(W):
        return np.asarray(X @ W, dtype=np.float64)

    def XTmul(V):
        return np.asarray(X.T @ V, dtype=np.float64)

    def Mmul(V):
        return np.asarray(laplacian_matvec(V), dtype=np.float64) if scale > 0 else 0.0 * V

    if d <= dense_max_features:
        Xd = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        A = Xd.T @ Xd
        B = reg * np.eye(d) + scale * (Xd.T @ Mmul(Xd)) if scale > 0 else reg * np.eye(d)
        P = np.eye(d) - np.outer(mhat, mhat)
        A = P @ A @ P
        B = P @ B @ P + reg * np.outer(mhat, mhat)
        A, B = 0.5 * (A + A.T), 0.5 * (B + B.T)
        try:
            mu, V = sla.eigh(A, B, subset_by_index=[d - k, d - 1])
        except np.linalg.LinAlgError as exc:  # B numerically indefinite: reg ≪ ‖X‖²
            raise ValueError(f"the eigenproblem is numerically singular ({exc}): reg={reg:g} "
                             f"is negligible against XᵀX; rescale X (e.g. TF-IDF rows of "
                             f"unit norm) or use a larger reg.") from None
        _check_rank(mu, k)
        Wd, F, lam = _finish(V[:, ::-1], Xmul, mu[::-1], reg, scale, laplacian_matvec)
        return SpectralSolution(Wd, F, lam, 0, "dense")

    n_products = [0]  # products with A: one for the start block, one per iteration

    def Aop(V):
        n_products[0] += 1
        V = V.reshape(d, -1)
        PV = proj(V)
        return proj(XTmul(Xmul(PV)))

    def Bop(V):
        V = V.reshape(d, -1)
        PV = proj(V)
        out = reg * PV
        if scale > 0:
            out = out + scale * XTmul(Mmul(Xmul(PV)))
        return proj(out) + reg * np.outer(mhat, mhat @ V)

    A_op = LinearOperator((d, d), matvec=Aop, matmat=Aop, dtype=np.float64)
    B_op = LinearOperator((d, d), matvec=Bop, matmat=Bop, dtype=np.float64)
    block = min(2 * k + 2, d - 1)
    V0 = proj(check_random_state(random_state).standard_normal((d, block)))
    with warnings.catch_warnings():
        # scipy's own warnings (its dense fallback, its exit before tol) are replaced
        # by the ConvergenceWarning below, which names the parameters to change
        warnings.simplefilter("ignore", UserWarning)
        # (for d < 5 · block, lobpcg itself falls back to a dense eigh: 2 outputs)
        res = lobpcg(A_op, V0, B=B_op, tol=tol, maxiter=max_iter, largest=True,
                     retResidualNormsHistory=True)
    mu, V = res[0], res[1]
    order = np.argsort(mu)[::-1][:k]
    n_iter = 0
    if len(res) > 2:
        n_iter = min(max(n_products[0] - 1, 0), max_iter)
        # the last entry of the history: the residual norms of the returned vectors
        residual = np.asarray(res[2][-1], dtype=np.float64).reshape(-1)[order]
        if not np.all(residual <= tol):
            warnings.warn(f"LOBPCG stopped after {n_iter} iterations with residual norms "
                          f"up to {np.nanmax(residual):.3g} > tol={tol:g} (its best iterate "
                          f"is returned); increase max_iter, or use a larger reg.",
                          ConvergenceWarning, stacklevel=2)
    _check_rank(mu[order], k)
    Wd, F, lam = _finish(proj(V[:, order]), Xmul, mu[order], reg, scale, laplacian_matvec)
    return SpectralSolution(Wd, F, lam, n_iter, "lobpcg")


def kernel_spectral_embedding(K, laplacian_matvec, *, reg, scale, n_components=1,
                              rtol=1e-10, tol=1e-6, max_iter=500, random_state=None):
    """Eigenfunctions of eq. 13 for a dense Gram matrix K (moderate n).

    ``K = UΛUᵀ`` by ``scipy.linalg.eigh``; Φ = U_r Λ_r^½ over the eigenvalues above
    ``rtol · λ_max``; then :func:`linear_spectral_embedding` on Φ (dense pencil for
    r <= 2000, LOBPCG above) and ``α = U_r Λ_r^{-½} w``.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Symmetric positive semidefinite Gram matrix of the training rows.
    laplacian_matvec, reg, scale, n_components, tol, max_iter, random_state
        As in :func:`linear_spectral_embedding`.
    rtol : float
        Relative eigenvalue cut of K.

    Returns
    -------
    SpectralSolution
        ``coef`` (n, k) is α: ``f(x) = Σ_j α_j k(x_j, x)``.
    """
    K = np.asarray(K, dtype=np.float64)
    n = K.shape[0]
    if K.shape != (n, n):
        raise ValueError(f"K must be square, got shape {K.shape}.")
    _check(reg, scale, n_components, n)
    lam, U = sla.eigh(0.5 * (K + K.T))
    keep = lam > rtol * max(lam[-1], 0.0)
    if keep.sum() <= n_components:
        raise ValueError(f"K has rank {int(keep.sum())} (eigenvalues above {rtol:g} of the "
                         f"largest): too low for n_components={n_components}.")
    U, lam = U[:, keep], lam[keep]
    Phi = U * np.sqrt(lam)
    sol = linear_spectral_embedding(Phi, laplacian_matvec, reg=reg, scale=scale,
                                    n_components=n_components, tol=tol, max_iter=max_iter,
                                    random_state=random_state)
    sol.coef = U @ (sol.coef / np.sqrt(lam)[:, None])
    return sol
