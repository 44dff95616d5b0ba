"""numba kernels for the products of one CG iteration (issue 7, part 2).

All kernels take the raw CSR arrays ``(indptr, indices, data)`` — any integer
index type, float32 or float64 values — and write into preallocated float64
outputs (scratch buffers are passed in too): sums are accumulated in float64
whatever the input precision, and no kernel allocates. Array positions are cast
to unsigned integers (``uintp``) so that numba emits no negative-index
wraparound test in the inner loops (that test made the gathers ~1.5× slower).

* :func:`csr_matmat` — ``out = X W (+ bias)``, parallel over rows (each row a
  sparse dot with the c columns of W).
* :func:`csr_rmatmat_blocks` + :func:`reduce_blocks` — ``out = coef · Xᵀ U + α Z``
  without a transpose copy of X: each thread streams a contiguous block of rows
  and scatters into its own (d, c) buffer; the buffers are summed at the end.
* :func:`laplacian_pass` — one fused CSR pass of the scaled form of a graph
  Laplacian, ``y_i = coef (a_i x_i − b_i Σ_j w_ij x_j)``, parallel over rows;
  the diagonal scalings of ``I − D^{-1/2} W D^{-1/2}`` or ``D − W`` are done
  inside the pass (see :func:`linlap.graph.KNNGraph.laplacian_matvec`).
* small CG helpers on (m, c) blocks: column dot products and the fused
  ``x += α p, r −= α Ap, ‖r‖²`` and ``p = z + β p`` updates.

Only C-contiguous 2-D dense operands are passed (the callers guarantee it).
"""

import numpy as np
from numba import njit, prange, uintp

__all__ = ["csr_matmat", "csr_rmatmat_blocks", "reduce_blocks", "laplacian_pass", "scale_rows",
           "add_loss_rows", "column_dots", "cg_update", "cg_direction", "row_blocks"]

#: Below this many multiply-adds a kernel runs on the calling thread only: waking
#: the thread pool costs more than it saves on small problems (~10 ms a call on a
#: loaded machine, measured on PCMAC-sized graphs).
SERIAL_WORK = 1 << 18


def _threaded(pyfunc):
    """Compile ``pyfunc`` twice — parallel (prange) and serial — and dispatch on size.

    The returned function takes the kernel's arguments plus ``work=`` (an estimate
    of the multiply-adds; None means large) and runs the serial build below
    ``SERIAL_WORK``.
    """
    parallel = njit(parallel=True, cache=True, nogil=True)(pyfunc)
    serial = njit(cache=True, nogil=True)(pyfunc)

    def kernel(*args, work=None):
        run = serial if work is not None and work < SERIAL_WORK else parallel
        return run(*args)

    kernel.__name__ = pyfunc.__name__
    kernel.__doc__ = pyfunc.__doc__
    kernel.parallel, kernel.serial = parallel, serial
    return kernel



@_threaded
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


@_threaded
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
        else:
            for i in range(uintp(bounds[t]), uintp(bounds[t + 1])):
                for col in range(c):
                    colsum[t, col] += U[i, col]
                for jj in range(uintp(indptr[i]), uintp(indptr[i + 1])):
                    v = data[jj]
                    j = uintp(indices[jj])
                    for col in range(c):
                        B[j, col] += v * U[i, col]


@_threaded
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


@_threaded
def laplacian_pass(indptr, indices, data, x, a, b, coef, out):
    """One fused pass ``out_i = coef (a_i x_i − b_i Σ_j w_ij x_j)``, parallel over rows.

    ``x`` may be float32 or float64; the sums and ``out`` are float64. ``out``
    must not overlap ``x``.
    """
    n = indptr.shape[0] - 1
    c = uintp(x.shape[1])
    if c == 1:
        for i in prange(n):
            acc = 0.0
            for jj in range(uintp(indptr[i]), uintp(indptr[i + 1])):
                acc += data[jj] * x[uintp(indices[jj]), 0]
            out[i, 0] = coef * (a[i] * x[i, 0] - b[i] * acc)
    else:
        for i in prange(n):
            for col in range(c):
                out[i, col] = 0.0
            for jj in range(uintp(indptr[i]), uintp(indptr[i + 1])):
                v = data[jj]
                j = uintp(indices[jj])
                for col in range(c):
                    out[i, col] += v * x[j, col]
            ai = a[i]
            bi = b[i]
            for col in range(c):
                out[i, col] = coef * (ai * x[i, col] - bi * out[i, col])


@_threaded
def scale_rows(g, x, out):
    """``out[i, :] = g[i] x[i, :]`` (x float32 or float64, out float64)."""
    c = x.shape[1]
    for i in prange(x.shape[0]):
        gi = g[i]
        for col in range(c):
            out[i, col] = gi * x[i, col]


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
