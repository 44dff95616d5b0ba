"""numba kernels over the raw CSR arrays of X: ``X W (+ b)``, ``coef · Xᵀ U + α Z``
(without a transposed copy) and the loss-row corrections of the normal equations.

All kernels take ``(indptr, indices, data)`` — any integer index type, float32 or
float64 values — and write into preallocated float64 outputs (scratch buffers are
passed in too): sums are accumulated in float64 whatever the input precision, and no
kernel allocates. Array positions are cast to unsigned integers (``uintp``) so that
numba emits no negative-index wraparound test in the inner loops (that test made the
gathers ~1.5× slower). Only C-contiguous 2-D dense operands are passed.
"""

import numpy as np
from numba import njit, prange, uintp

from .dispatch import ROW_SUM_FASTMATH, threaded

__all__ = ["csr_matmat", "csr_rmatmat_blocks", "reduce_blocks", "row_blocks", "add_loss_rows",
           "scoring_decisions", "csr_row_squared_norms", "csr_nonempty_rows",
           "row_sums4", "CHUNKED_MAX_COLUMNS"]

#: Blocks of up to this many columns go through the 4-column scalar kernels below;
#: wider blocks use one loop over the columns (which the compiler vectorises).
CHUNKED_MAX_COLUMNS = 8


@njit(inline="always")
def row_sums4(lo, hi, indices, data, x, c0, w):
    """``Σ_jj data[jj] x[indices[jj], c0 + t]`` for t < w ≤ 4, in scalar registers.

    With a run-time number of columns the column loop keeps its sums in memory and
    is poorly vectorised: on PCMAC a pass over 2–8 columns cost as much as 5–7
    single-column passes whatever the number of columns; four named accumulators
    avoid both.
    """
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    if w == 4:
        for jj in range(lo, hi):
            v = data[jj]
            j = uintp(indices[jj])
            s0 += v * x[j, c0]
            s1 += v * x[j, c0 + 1]
            s2 += v * x[j, c0 + 2]
            s3 += v * x[j, c0 + 3]
    elif w == 3:
        for jj in range(lo, hi):
            v = data[jj]
            j = uintp(indices[jj])
            s0 += v * x[j, c0]
            s1 += v * x[j, c0 + 1]
            s2 += v * x[j, c0 + 2]
    elif w == 2:
        for jj in range(lo, hi):
            v = data[jj]
            j = uintp(indices[jj])
            s0 += v * x[j, c0]
            s1 += v * x[j, c0 + 1]
    else:
        for jj in range(lo, hi):
            s0 += data[jj] * x[uintp(indices[jj]), c0]
    return s0, s1, s2, s3


@njit(inline="always")
def _scatter4(lo, hi, indices, data, B, c0, w, u0, u1, u2, u3):
    """``B[indices[jj], c0 + t] += data[jj] u_t`` for t < w ≤ 4."""
    if w == 4:
        for jj in range(lo, hi):
            v = data[jj]
            j = uintp(indices[jj])
            B[j, c0] += v * u0
            B[j, c0 + 1] += v * u1
            B[j, c0 + 2] += v * u2
            B[j, c0 + 3] += v * u3
    elif w == 3:
        for jj in range(lo, hi):
            v = data[jj]
            j = uintp(indices[jj])
            B[j, c0] += v * u0
            B[j, c0 + 1] += v * u1
            B[j, c0 + 2] += v * u2
    elif w == 2:
        for jj in range(lo, hi):
            v = data[jj]
            j = uintp(indices[jj])
            B[j, c0] += v * u0
            B[j, c0 + 1] += v * u1
    else:
        for jj in range(lo, hi):
            B[uintp(indices[jj]), c0] += data[jj] * u0


@threaded(fastmath=ROW_SUM_FASTMATH)
def csr_matmat(indptr, indices, data, W, bias, use_bias, out):
    """``out[i, :] = Σ_jj data[jj] W[indices[jj], :] (+ bias)`` for every row i."""
    n = indptr.shape[0] - 1
    c = uintp(W.shape[1])
    if c == 1:
        for i in prange(n):
            acc = 0.0
            for jj in range(uintp(indptr[i]), uintp(indptr[i + 1])):
                acc += data[jj] * W[uintp(indices[jj]), 0]
            if use_bias:
                acc += bias[0]
            out[i, 0] = acc
    elif c <= CHUNKED_MAX_COLUMNS:
        for i in prange(n):
            lo, hi = uintp(indptr[i]), uintp(indptr[i + 1])
            for c0 in range(0, c, 4):
                w = min(uintp(4), c - c0)
                sums = row_sums4(lo, hi, indices, data, W, c0, w)
                for t in range(w):
                    out[i, c0 + t] = sums[t] + (bias[c0 + t] if use_bias else 0.0)
    else:
        for i in prange(n):
            for col in range(c):
                out[i, col] = bias[col] if use_bias else 0.0
            for jj in range(uintp(indptr[i]), uintp(indptr[i + 1])):
                v = data[jj]
                j = uintp(indices[jj])
                for col in range(c):
                    out[i, col] += v * W[j, col]


def row_blocks(indptr, n_blocks):
    """Row boundaries splitting a CSR matrix into ``n_blocks`` of about equal nnz."""
    n = indptr.shape[0] - 1
    n_blocks = max(1, min(int(n_blocks), max(n, 1)))
    targets = np.linspace(0, indptr[-1], n_blocks + 1)
    bounds = np.searchsorted(indptr, targets, side="left").astype(np.int64)
    bounds[0], bounds[-1] = 0, n
    return np.maximum.accumulate(np.minimum(bounds, n))


@threaded
def csr_rmatmat_blocks(indptr, indices, data, U, bounds, buf, colsum):
    """Per-block partial products ``buf[t] = X_tᵀ U_t`` and ``colsum[t] = 1ᵀ U_t``.

    Block t holds rows ``bounds[t]:bounds[t + 1]``; one thread streams it and
    scatters into its own ``buf[t]`` of shape (d, c), so X is read once, in
    order, and never transposed.
    """
    n_blocks = bounds.shape[0] - 1
    d = buf.shape[1]
    c = uintp(U.shape[1])
    for t in prange(n_blocks):
        B = buf[t]
        for f in range(d):
            for col in range(c):
                B[f, col] = 0.0
        for col in range(c):
            colsum[t, col] = 0.0
        if c == 1:
            s = 0.0
            for i in range(uintp(bounds[t]), uintp(bounds[t + 1])):
                u = U[i, 0]
                s += u
                if u != 0.0:
                    for jj in range(uintp(indptr[i]), uintp(indptr[i + 1])):
                        B[uintp(indices[jj]), 0] += data[jj] * u
            colsum[t, 0] = s
        elif c <= CHUNKED_MAX_COLUMNS:
            for i in range(uintp(bounds[t]), uintp(bounds[t + 1])):
                lo, hi = uintp(indptr[i]), uintp(indptr[i + 1])
                for c0 in range(0, c, 4):
                    w = min(uintp(4), c - c0)
                    u0 = U[i, c0]
                    u1 = U[i, c0 + 1] if w > 1 else 0.0
                    u2 = U[i, c0 + 2] if w > 2 else 0.0
                    u3 = U[i, c0 + 3] if w > 3 else 0.0
                    colsum[t, c0] += u0
                    if w > 1:
                        colsum[t, c0 + 1] += u1
                    if w > 2:
                        colsum[t, c0 + 2] += u2
                    if w > 3:
                        colsum[t, c0 + 3] += u3
                    _scatter4(lo, hi, indices, data, B, c0, w, u0, u1, u2, u3)
        else:
            for i in range(uintp(bounds[t]), uintp(bounds[t + 1])):
                for col in range(c):
                    colsum[t, col] += U[i, col]
                for jj in range(uintp(indptr[i]), uintp(indptr[i + 1])):
                    v = data[jj]
                    j = uintp(indices[jj])
                    for col in range(c):
                        B[j, col] += v * U[i, col]


@threaded
def reduce_blocks(buf, n_blocks, colsum, coef, alpha, Z, use_bias, out):
    """``out[:d] = coef Σ_t buf[t] + α Z[:d]``; with a bias ``out[d] = coef Σ_t colsum[t]``."""
    d = buf.shape[1]
    c = buf.shape[2]
    for f in prange(d):
        for col in range(c):
            s = 0.0
            for t in range(n_blocks):
                s += buf[t, f, col]
            out[f, col] = coef * s + alpha * Z[f, col]
    if use_bias:
        for col in range(c):
            s = 0.0
            for t in range(n_blocks):
                s += colsum[t, col]
            out[d, col] = coef * s


@njit(cache=True, nogil=True)
def add_loss_rows(U, F, rows, coef, mask, columns, use_mask):
    """``U[rows[r], j] += coef · F[rows[r], j] · mask[r, columns[j]]`` (mask optional)."""
    c = U.shape[1]
    for r in range(rows.shape[0]):
        i = rows[r]
        if use_mask:
            for j in range(c):
                U[i, j] += coef * F[i, j] * mask[r, columns[j]]
        else:
            for j in range(c):
                U[i, j] += coef * F[i, j]



@njit(cache=True, nogil=True)
def scoring_decisions(indptr, indices, data, Z, a, r_b, a_bb, active, F):
    """``F[s, v, j] = x_v · Z[s, :, j] + b_sj`` for CSR rows x_v and the running systems
    (``active[s, j]``), with the eliminated bias ``b_sj = (r_b[j] − a · Z[s, :, j]) / a_bb``."""
    q, d, k = Z.shape
    nv = indptr.shape[0] - 1
    for s in range(q):
        for j in range(k):
            if not active[s, j]:
                continue
            acc = 0.0
            for f in range(d):
                acc += a[f] * Z[s, f, j]
            b = (r_b[j] - acc) / a_bb
            for r in range(nv):
                acc = 0.0
                for t in range(uintp(indptr[r]), uintp(indptr[r + 1])):
                    acc += data[t] * Z[s, uintp(indices[t]), j]
                F[s, r, j] = acc + b


@njit(cache=True, nogil=True)
def csr_row_squared_norms(indptr, data, out):
    """``out[i] = Σ data[p]²`` over row i's stored entries, summed in float64 whatever
    data's dtype (no overflow of float32 or integer squares, no temporary of nnz values)."""
    for i in range(out.shape[0]):
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            v = np.float64(data[p])
            s += v * v
        out[i] = s


@njit(cache=True, nogil=True)
def csr_nonempty_rows(indptr, indices, data, out):
    """``out[i]``: row i's entries, duplicates summed, are not all zero — without a copy.

    A row whose stored values are all ≥ 0 (or all ≤ 0) is non-empty exactly when one of
    them is nonzero: such duplicates cannot cancel. Only a row with values of both signs
    has its duplicates summed (a sorted copy of that row alone). NaN counts as nonzero.
    """
    for i in range(out.shape[0]):
        pos = False
        neg = False
        for p in range(indptr[i], indptr[i + 1]):
            v = data[p]
            if v > 0 or v != v:
                pos = True
            elif v < 0:
                neg = True
        if not (pos and neg):
            out[i] = pos or neg
            continue
        a, b = indptr[i], indptr[i + 1]
        order = np.argsort(indices[a:b], kind="mergesort")
        out[i] = False
        p = 0
        while p < b - a:
            col = indices[a + order[p]]
            s = 0.0
            while p < b - a and indices[a + order[p]] == col:
                s += data[a + order[p]]
                p += 1
            if s != 0.0:
                out[i] = True
                break
