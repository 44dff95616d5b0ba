"""Mercer kernels of the kernel mode: Gram matrices and kernel-times-matrix products.

The kernels follow scikit-learn's :func:`~sklearn.metrics.pairwise.pairwise_kernels`
conventions exactly (same names, parameters and defaults):

* ``'linear'``:      :math:`k(x, z) = x·z`
* ``'rbf'``:         :math:`k(x, z) = \\exp(-γ ‖x − z‖²)`, γ defaulting to 1/n_features
* ``'poly'``:        :math:`k(x, z) = (γ x·z + c_0)^{degree}`, γ defaulting to
  1/n_features (``'polynomial'`` is an alias)

Input rows are dense float64 arrays or CSR matrices. Every routine is parallel over
the rows of the left operand (numba ``prange``) and keeps its memory bounded:

* sparse rows: each row's dot products with all rows of B are accumulated in one
  dense n_B-vector through an inverted index of B (its transpose in CSR), cost
  ``Σ_f nnz_A(f) · nnz_B(f)`` over the features f, then transformed in place;
* dense rows: blocks of rows of ``A Bᵀ`` by BLAS (at most ``_DENSE_BLOCK_BYTES``),
  transformed by numba.

:func:`kernel_matrix` materialises K(A, B); :func:`kernel_product` returns
``K(A, B) @ V`` without ever holding more than one block of K. :class:`GramOperator`
is what the solvers use: the training Gram matrix cached when it fits the memory
budget (float64 if ``8 n²`` bytes fit, else float32 if ``4 n²`` bytes fit; products
always accumulate in float64), otherwise recomputed block by block at every product.
"""

import numpy as np
import scipy.sparse as sp

from ._validation import is_finite_real, is_int
from ._numba.gram import (gram_matvec, sparse_gram, sparse_gram_sym, sparse_product,
                          transform_block)

__all__ = ["KERNELS", "kernel_matrix", "kernel_product", "GramOperator", "check_kernel_params",
           "check_kernel_choice"]

KERNELS = ("rbf", "poly", "polynomial", "linear")
_KIND = {"linear": 0, "rbf": 1, "poly": 2, "polynomial": 2}
#: dense rows: bytes of one block of A Bᵀ held at a time
_DENSE_BLOCK_BYTES = 32 * 2**20


# -- parameters and input ------------------------------------------------------------
def _check_coef0(coef0):
    """``coef0`` is a finite real number (every kernel: it is converted even when unused)."""
    if not is_finite_real(coef0):
        raise ValueError(f"coef0 must be a finite number, got {coef0!r}.")
    return float(coef0)


def _check_degree(degree):
    if not is_int(degree) or degree < 1:
        raise ValueError(f"degree must be an integer >= 1, got {degree!r}.")
    return int(degree)


def check_kernel_params(kernel, gamma, degree, coef0, n_features):
    """Validate kernel parameters; return ``(kind, gamma, degree, coef0)`` as numbers."""
    if kernel not in _KIND:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}.")
    kind = _KIND[kernel]
    if gamma is None:
        gamma = 1.0 / n_features
    if not is_finite_real(gamma) or gamma <= 0:
        raise ValueError(f"gamma must be None or a finite number > 0, got {gamma!r}.")
    coef0 = _check_coef0(coef0)
    degree = _check_degree(degree) if kind == 2 else 1
    return kind, float(gamma), degree, coef0


def check_kernel_choice(kernel, gamma, degree=3, coef0=1.0):
    """An estimator's ``kernel``, ``gamma`` ('scale', 'auto' or a number > 0), ``degree``
    (poly) and ``coef0`` (a finite number, for every kernel)."""
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}.")
    if not ((isinstance(gamma, str) and gamma in ("scale", "auto"))
            or (is_finite_real(gamma) and gamma > 0)):
        raise ValueError(f"gamma must be 'scale', 'auto' or a number > 0, got {gamma!r}.")
    if _KIND[kernel] == 2:
        _check_degree(degree)
    _check_coef0(coef0)


def _check_finite_kernel(out, params, V=None):
    """``out`` (a block of K, or a product K V) is finite — unless V itself is not (then
    the caller's iterate diverged, which is not the kernel's doing); else ValueError
    naming the kernel parameters that overflowed."""
    # the sum is finite only if every entry is (no boolean copy of the block per product)
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.sum(out)
    if np.isfinite(total) or np.all(np.isfinite(out)) or (
            V is not None and not np.all(np.isfinite(V))):
        return out
    kind, gamma, degree, coef0 = params
    name = {0: "linear", 1: "rbf", 2: "poly"}[kind]
    what = {0: "x·z", 1: f"exp(-gamma ||x - z||²) with gamma={gamma:.6g}",
            2: f"(gamma x·z + coef0)^degree with gamma={gamma:.6g}, coef0={coef0:.6g}, "
               f"degree={degree}"}[kind]
    raise ValueError(
        f"The {name} kernel gives non-finite values on X: {what} overflows float64 (or the "
        f"float32 cache of K). Lower gamma or degree (or |coef0|), or rescale X.")


def as_kernel_input(X, name="X"):
    """Return X as CSR float64 (sorted, no duplicates) or C-contiguous float64 ndarray."""
    if sp.issparse(X):
        Xc = sp.csr_matrix(X, dtype=np.float64)
        if not Xc.has_canonical_format:
            Xc = Xc.copy()
            Xc.sum_duplicates()
        if not np.all(np.isfinite(Xc.data)):
            raise ValueError(f"{name} contains NaN or infinite values.")
        return Xc
    Xc = np.ascontiguousarray(X, dtype=np.float64)
    if Xc.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {Xc.shape}.")
    if not np.all(np.isfinite(Xc)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return Xc


def _row_sq_norms(X):
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    return np.einsum("ij,ij->i", X, X)

# -- public functions -------------------------------------------------------------------
def _prepare(A, B, kernel, gamma, degree, coef0):
    A = as_kernel_input(A, "A")
    B = A if B is None else as_kernel_input(B, "B")
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"A has {A.shape[1]} features but B has {B.shape[1]}.")
    if sp.issparse(A) != sp.issparse(B):
        A, B = (sp.csr_matrix(A), sp.csr_matrix(B))
    params = check_kernel_params(kernel, gamma, degree, coef0, A.shape[1])
    return A, B, params


def _dense_blocks(na, nb):
    rows = max(1, min(na, _DENSE_BLOCK_BYTES // (8 * max(nb, 1))))
    return range(0, na, rows), rows


def _gram_into(A, B, a2, b2, params, out, BT=None):
    """K(A, B) into ``out``, checked finite."""
    return _check_finite_kernel(_gram_fill(A, B, a2, b2, params, out, BT), params)


def _gram_fill(A, B, a2, b2, params, out, BT=None):
    kind, gamma, degree, coef0 = params
    if sp.issparse(A) and A is B:
        BT = B.T.tocsr() if BT is None else BT
        BT.sort_indices()  # the binary search needs each feature's rows sorted
        sparse_gram_sym(A.indptr, A.indices, A.data, a2, BT.indptr, BT.indices, BT.data,
                         kind, gamma, degree, coef0, out)
        return out
    if sp.issparse(A):
        BT = B.T.tocsr() if BT is None else BT
        sparse_gram(A.indptr, A.indices, A.data, a2, BT.indptr, BT.indices, BT.data, b2,
                     kind, gamma, degree, coef0, out)
        return out
    starts, rows = _dense_blocks(A.shape[0], B.shape[0])
    for s in starts:
        G = A[s:s + rows] @ B.T
        transform_block(G, a2[s:s + rows], b2, kind, gamma, degree, coef0, out[s:s + rows])
    return out


def kernel_matrix(A, B=None, *, kernel="rbf", gamma=None, degree=3, coef0=1.0,
                  dtype=np.float64):
    """Gram matrix ``K[i, j] = k(a_i, b_j)`` (parallel over the rows of A).

    Parameters
    ----------
    A : ndarray or sparse matrix of shape (n_A, d)
    B : ndarray or sparse matrix of shape (n_B, d), default=None
        None means A (the square training Gram matrix).
    kernel : {'rbf', 'poly', 'polynomial', 'linear'}, default='rbf'
    gamma : float or None, default=None
        None means ``1 / n_features`` (rbf and poly), as in scikit-learn.
    degree : int, default=3
    coef0 : float, default=1.0
    dtype : {np.float64, np.float32}, default=np.float64
        Storage type of K (values are computed in float64).

    Returns
    -------
    K : ndarray of shape (n_A, n_B)
    """
    A, B, params = _prepare(A, B, kernel, gamma, degree, coef0)
    out = np.empty((A.shape[0], B.shape[0]), dtype=dtype)
    return _gram_into(A, B, _row_sq_norms(A), _row_sq_norms(B), params, out)


def _product(A, B, a2, b2, params, V, BT=None):
    """``K(A, B) @ V`` without forming K, checked finite (when V is)."""
    return _check_finite_kernel(_product_raw(A, B, a2, b2, params, V, BT), params, V)


def _product_raw(A, B, a2, b2, params, V, BT=None):
    kind, gamma, degree, coef0 = params
    out = np.empty((A.shape[0], V.shape[1]))
    if sp.issparse(A):
        BT = B.T.tocsr() if BT is None else BT
        Vt = np.ascontiguousarray(V.T)
        sparse_product(A.indptr, A.indices, A.data, a2, BT.indptr, BT.indices, BT.data,
                        b2, kind, gamma, degree, coef0, Vt, out)
        return out
    starts, rows = _dense_blocks(A.shape[0], B.shape[0])
    block = np.empty((min(rows, A.shape[0]), B.shape[0]))
    for s in starts:
        G = A[s:s + rows] @ B.T
        blk = block[:G.shape[0]]
        transform_block(G, a2[s:s + rows], b2, kind, gamma, degree, coef0, blk)
        out[s:s + rows] = blk @ V
    return out


def kernel_product(A, B, V, *, kernel="rbf", gamma=None, degree=3, coef0=1.0):
    """``K(A, B) @ V`` without forming K (memory: one block of K rows per thread).

    Parameters
    ----------
    A : ndarray or sparse matrix of shape (n_A, d)
    B : ndarray or sparse matrix of shape (n_B, d), or None (means A)
    V : ndarray of shape (n_B,) or (n_B, m)
    kernel, gamma, degree, coef0
        As in :func:`kernel_matrix`.

    Returns
    -------
    KV : ndarray of shape (n_A,) or (n_A, m), float64
    """
    A, B, params = _prepare(A, B, kernel, gamma, degree, coef0)
    V = np.asarray(V, dtype=np.float64)
    vec = V.ndim == 1
    V2 = V[:, None] if vec else V
    if V2.ndim != 2 or V2.shape[0] != B.shape[0]:
        raise ValueError(f"V must have {B.shape[0]} rows, got shape {V.shape}.")
    out = _product(A, B, _row_sq_norms(A), _row_sq_norms(B), params, V2)
    return out[:, 0] if vec else out


class GramOperator:
    """The training Gram matrix K as an operator ``V ↦ K V``, cached when it fits.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)
        Training rows (dense float64 or CSR).
    kernel, gamma, degree, coef0
        As in :func:`kernel_matrix` (γ = None: ``1/n_features``).
    memory_budget : int, default=2**31
        Bytes allowed for the cached K: float64 when ``8 n²`` bytes fit, else float32
        when ``4 n²`` fit (products still sum in float64), else K is not stored and
        every product recomputes it block by block (O(n² d̄) per product).

    Attributes
    ----------
    K : ndarray of shape (n, n) or None
        The cached Gram matrix.
    cache_dtype : numpy dtype or None
    gamma : float
        The γ used (resolved from None).
    n_products : int
        Number of products computed (columns of V counted once per call).
    """

    def __init__(self, X, *, kernel="rbf", gamma=None, degree=3, coef0=1.0,
                 memory_budget=2**31):
        self.X = as_kernel_input(X)
        n, d = self.X.shape
        self.kernel = kernel
        self.params = check_kernel_params(kernel, gamma, degree, coef0, d)
        self.gamma = self.params[1]
        self.n = n
        self.sq_norms = _row_sq_norms(self.X)
        self._XT = self.X.T.tocsr() if sp.issparse(self.X) else None
        self.n_products = 0
        if 8 * n * n <= memory_budget:
            self.cache_dtype = np.dtype(np.float64)
        elif 4 * n * n <= memory_budget:
            self.cache_dtype = np.dtype(np.float32)
        else:
            self.cache_dtype = None
        self.K = None
        if self.cache_dtype is not None:
            self.K = np.empty((n, n), dtype=self.cache_dtype)
            _gram_into(self.X, self.X, self.sq_norms, self.sq_norms, self.params, self.K,
                       BT=self._XT)

    @property
    def shape(self):
        return (self.n, self.n)

    def matvec(self, V):
        """Return ``K V`` (float64) for V of shape (n,) or (n, m)."""
        V, V2, vec = self._coefficients(V)
        self.n_products += 1
        if V2.shape[1] == 0:
            out = np.zeros((self.n, 0))
        elif self.K is not None:
            out = np.empty((self.n, V2.shape[1]))
            gram_matvec(self.K, np.ascontiguousarray(V2.T), out,
                        work=self.n * self.n * V2.shape[1])
            _check_finite_kernel(out, self.params, V2)
        else:
            out = _product(self.X, self.X, self.sq_norms, self.sq_norms, self.params, V2,
                           BT=self._XT)
        return out[:, 0] if vec else out

    __call__ = matvec

    def _coefficients(self, V):
        """V as float64, as 2-D, and whether it was 1-D; one row per training row (the
        kernels index V by the training rows: a wrong length is no mere shape error)."""
        V = np.asarray(V, dtype=np.float64)
        vec = V.ndim == 1
        V2 = V[:, None] if vec else V
        if V2.ndim != 2 or V2.shape[0] != self.n:
            raise ValueError(f"V must have shape ({self.n},) or ({self.n}, m), got {V.shape}.")
        return V, V2, vec

    def diagonal(self):
        """diag(K) in float64, from the row norms (no product)."""
        kind, gamma, degree, coef0 = self.params
        if kind == 0:
            return self.sq_norms.copy()
        if kind == 1:
            return np.ones(self.n)
        return (gamma * self.sq_norms + coef0) ** degree

    def dense(self):
        """The full K in float64 (the cached one, or computed now)."""
        if self.K is not None and self.K.dtype == np.float64:
            return self.K
        if self.K is not None:
            return self.K.astype(np.float64)
        out = np.empty((self.n, self.n))
        return _gram_into(self.X, self.X, self.sq_norms, self.sq_norms, self.params, out,
                          BT=self._XT)

    def cross(self, Xnew, V):
        """``K(Xnew, X) V``: the kernel between new rows and the training rows, times V."""
        A = as_kernel_input(Xnew, "X")
        if A.shape[1] != self.X.shape[1]:
            raise ValueError(f"X has {A.shape[1]} features, but the kernel was fitted "
                             f"on {self.X.shape[1]}.")
        if sp.issparse(A) != sp.issparse(self.X):
            A = sp.csr_matrix(A) if sp.issparse(self.X) else A.toarray()
        V, V2, vec = self._coefficients(V)
        XT = self._XT if sp.issparse(self.X) else None
        out = _product(A, self.X, _row_sq_norms(A), self.sq_norms, self.params, V2, BT=XT)
        return out[:, 0] if vec else out
