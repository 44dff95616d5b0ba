"""numba cores of the Gram matrices and kernel products (:mod:`linlap.gram`).

Sparse rows: each row's dot products with all rows of B are accumulated in one dense
n_B-vector through an inverted index of B (its transpose in CSR), then transformed in
place. Dense rows: blocks of ``A Bᵀ`` come from BLAS and are transformed here.
"""

import numpy as np
from numba import njit, prange

from .dispatch import ROW_SUM_FASTMATH, threaded

__all__ = ["transform_block", "sparse_gram", "sparse_gram_sym", "sparse_product",
           "sparse_dot_rows", "gram_matvec"]

#: products K V with fewer multiply-adds run on the calling thread: waking the workers
#: costs more than such a product (much more on a machine whose cores are busy)
GRAM_SERIAL_WORK = 2**23


@njit(cache=True, inline="always")
def _transform(g, a2, b2, kind, gamma, degree, coef0):
    if kind == 0:
        return g
    if kind == 1:
        d2 = a2 + b2 - 2.0 * g
        if d2 < 0.0:
            d2 = 0.0
        return np.exp(-gamma * d2)
    base = gamma * g + coef0
    out = 1.0
    for _ in range(degree):
        out *= base
    return out


@njit(parallel=True, cache=True, nogil=True)
def transform_block(G, a2, b2, kind, gamma, degree, coef0, out):
    """out[i, j] = k from the dot products G[i, j] (rows of a block)."""
    for i in prange(G.shape[0]):
        for j in range(G.shape[1]):
            out[i, j] = _transform(G[i, j], a2[i], b2[j], kind, gamma, degree, coef0)


@njit(cache=True, nogil=True, inline="always")
def _sparse_row_dots(i, a_indptr, a_indices, a_data, bt_indptr, bt_indices, bt_data, acc):
    acc[:] = 0.0
    for p in range(a_indptr[i], a_indptr[i + 1]):
        f = a_indices[p]
        v = a_data[p]
        for q in range(bt_indptr[f], bt_indptr[f + 1]):
            acc[bt_indices[q]] += v * bt_data[q]


@njit(parallel=True, cache=True, nogil=True)
def sparse_gram(a_indptr, a_indices, a_data, a2, bt_indptr, bt_indices, bt_data, b2,
                 kind, gamma, degree, coef0, out):
    na, nb = out.shape
    n_chunks = (na + 15) // 16
    for ch in prange(n_chunks):
        acc = np.empty(nb)
        for i in range(ch * 16, min(na, ch * 16 + 16)):
            _sparse_row_dots(i, a_indptr, a_indices, a_data, bt_indptr, bt_indices,
                             bt_data, acc)
            for j in range(nb):
                out[i, j] = _transform(acc[j], a2[i], b2[j], kind, gamma, degree, coef0)


@njit(cache=True, nogil=True)
def sparse_dot_rows(rows, a_indptr, a_indices, a_data, bt_indptr, bt_indices, bt_data, out):
    """out[t, j] = a_{rows[t]} · b_j for every row j of B (Bᵀ given in CSR).

    Serial and without the GIL: the exact kNN search (:mod:`linlap.graph.search`) runs
    one row block per thread of its own. Each dot product is summed over the features
    of ``a_{rows[t]}`` in their stored order, as scipy's sparse product sums it.
    """
    for t in range(rows.shape[0]):
        _sparse_row_dots(rows[t], a_indptr, a_indices, a_data, bt_indptr, bt_indices,
                         bt_data, out[t])


@njit(parallel=True, cache=True, nogil=True)
def sparse_gram_sym(indptr, indices, data, sq, t_indptr, t_indices, t_data, kind, gamma,
                     degree, coef0, out):
    """Square Gram matrix of the CSR rows: upper triangle by the inverted index (each
    feature's row list is entered at the first row >= i by binary search, halving the
    work), then mirrored. Chunks of 16 rows are paired from both ends for balance."""
    n = out.shape[0]
    n_chunks = (n + 15) // 16
    for p in prange((n_chunks + 1) // 2):
        acc = np.empty(n)
        for which in range(2):
            ch = p if which == 0 else n_chunks - 1 - p
            if which == 1 and ch == p:
                break
            for i in range(ch * 16, min(n, ch * 16 + 16)):
                acc[i:] = 0.0
                for q in range(indptr[i], indptr[i + 1]):
                    f = indices[q]
                    v = data[q]
                    lo = np.searchsorted(t_indices[t_indptr[f]:t_indptr[f + 1]], i)
                    for r in range(t_indptr[f] + lo, t_indptr[f + 1]):
                        acc[t_indices[r]] += v * t_data[r]
                for j in range(i, n):
                    out[i, j] = _transform(acc[j], sq[i], sq[j], kind, gamma, degree, coef0)
    # mirror the upper triangle, in 64 × 64 tiles
    nt = (n + 63) // 64
    for bi in prange(nt):
        for bj in range(bi + 1):
            for i in range(bi * 64, min(n, bi * 64 + 64)):
                for j in range(bj * 64, min(i, bj * 64 + 64)):
                    out[i, j] = out[j, i]


@njit(parallel=True, cache=True, nogil=True)
def sparse_product(a_indptr, a_indices, a_data, a2, bt_indptr, bt_indices, bt_data, b2,
                    kind, gamma, degree, coef0, Vt, out):
    """out[i, c] = Σ_j k(a_i, b_j) Vt[c, j], one K row at a time (never stored)."""
    na = out.shape[0]
    m, nb = Vt.shape
    n_chunks = (na + 15) // 16
    for ch in prange(n_chunks):
        acc = np.empty(nb)
        for i in range(ch * 16, min(na, ch * 16 + 16)):
            _sparse_row_dots(i, a_indptr, a_indices, a_data, bt_indptr, bt_indices,
                             bt_data, acc)
            for j in range(nb):
                acc[j] = _transform(acc[j], a2[i], b2[j], kind, gamma, degree, coef0)
            for c in range(m):
                s = 0.0
                for j in range(nb):
                    s += acc[j] * Vt[c, j]
                out[i, c] = s


@njit(cache=True, nogil=True, fastmath=set(ROW_SUM_FASTMATH))
def gram_matvec_row(K, Vt, out, i):
    """out[i, c] = Σ_j K[i, j] Vt[c, j] (K float32 or float64; float64 sums).

    Four columns share each pass over the row of K; the sums are reassociated so
    that they vectorise.
    """
    m, nb = Vt.shape
    c = 0
    while c + 4 <= m:
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for j in range(nb):
            kij = np.float64(K[i, j])
            s0 += kij * Vt[c, j]
            s1 += kij * Vt[c + 1, j]
            s2 += kij * Vt[c + 2, j]
            s3 += kij * Vt[c + 3, j]
        out[i, c] = s0
        out[i, c + 1] = s1
        out[i, c + 2] = s2
        out[i, c + 3] = s3
        c += 4
    while c < m:
        s = 0.0
        for j in range(nb):
            s += np.float64(K[i, j]) * Vt[c, j]
        out[i, c] = s
        c += 1


@threaded(serial_work=GRAM_SERIAL_WORK)
def gram_matvec(K, Vt, out):
    """``out = K Vtᵀ``, one row of K at a time (K float32 or float64; float64 sums)."""
    for i in prange(K.shape[0]):
        gram_matvec_row(K, Vt, out, i)
