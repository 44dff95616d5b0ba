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

import types

import numpy as np
from numba import njit, prange, uintp

__all__ = ["csr_matmat", "csr_rmatmat_blocks", "reduce_blocks", "laplacian_pass",
           "scale_rows", "permute_csr", "label_propagation",
           "add_loss_rows", "column_dots", "cg_update", "cg_direction", "row_blocks"]

#: Below this many multiply-adds a kernel runs on the calling thread only. With the
#: other core idle the parallel build already wins at 2·10⁴ (11 vs 14 µs a call;
#: 1.9× at 3·10⁵), but with the other core busy a call waits for a preempted worker
#: (~10 ms a call, measured on PCMAC-sized graphs) — so small calls stay serial.
SERIAL_WORK = 1 << 18


#: Blocks of up to this many columns go through the 4-column scalar kernels below;
#: wider blocks use one loop over the columns (which the compiler vectorises).
CHUNKED_MAX_COLUMNS = 8


@njit(inline="always")
def _row_sums4(lo, hi, indices, data, x, c0, w):
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


def _renamed_copy(pyfunc, suffix):
    """The same Python function under another (qualified) name.

    numba's on-disk cache files a compiled function under its module, qualified
    name and line, and the index key holds the signature but not the compile
    options (numba issue #6845): compiling one function both with and without
    ``parallel=True`` lets either build be loaded for the other — the parallel
    build then runs on one thread.  The serial build gets its own name, so its
    cache entries are its own.
    """
    copy = types.FunctionType(pyfunc.__code__, pyfunc.__globals__, pyfunc.__name__ + suffix,
                              pyfunc.__defaults__, pyfunc.__closure__)
    copy.__qualname__ = pyfunc.__qualname__ + suffix
    copy.__doc__ = pyfunc.__doc__
    return copy


#: Floating-point licence for the kernels that sum along CSR rows: reassociating
#: the sum (and fusing multiply-adds) lets LLVM split it over several accumulators
#: instead of one chain of dependent additions — 7–20 % faster passes over X and
#: the graph; the sums change in the last bits only.
_ROW_SUM_FASTMATH = frozenset({"reassoc", "contract"})


def _threaded(pyfunc=None, *, fastmath=False):
    """Compile ``pyfunc`` twice — parallel (prange) and serial — and dispatch on size.

    The returned function takes the kernel's arguments plus ``work=`` (an estimate
    of the multiply-adds; None means large) and runs the serial build below
    ``SERIAL_WORK``.  ``fastmath`` is passed to both builds.
    """
    if pyfunc is None:
        return lambda f: _threaded(f, fastmath=fastmath)
    fm = set(fastmath) if fastmath else False
    parallel = njit(parallel=True, cache=True, nogil=True, fastmath=fm)(pyfunc)
    serial = njit(cache=True, nogil=True, fastmath=fm)(_renamed_copy(pyfunc, "_serial"))

    def kernel(*args, work=None):
        run = serial if work is not None and work < SERIAL_WORK else parallel
        return run(*args)

    kernel.__name__ = pyfunc.__name__
    kernel.__doc__ = pyfunc.__doc__
    kernel.parallel, kernel.serial = parallel, serial
    return kernel



@_threaded(fastmath=_ROW_SUM_FASTMATH)
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
                sums = _row_sums4(lo, hi, indices, data, W, c0, w)
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


@_threaded(fastmath=_ROW_SUM_FASTMATH)
def laplacian_pass(indptr, indices, data, x, a, b, coef, out, out_rows):
    """One fused pass ``y_q = coef (a_q x_q − b_q Σ_j w_qj x_j)``, parallel over rows.

    The result of row q goes to ``out[out_rows[q]]``, or to ``out[q]`` when
    ``out_rows`` is empty — the scatter fuses the final un-permutation of a
    renumbered graph's product into its last pass.  ``x`` may be float32 or
    float64; the sums and ``out`` are float64.  ``out`` must not overlap ``x``.
    """
    n = x.shape[0]
    c = uintp(x.shape[1])
    scatter = out_rows.shape[0] > 0
    if c == 1:
        for q in prange(n):
            acc = 0.0
            for jj in range(uintp(indptr[q]), uintp(indptr[q + 1])):
                acc += data[jj] * x[uintp(indices[jj]), 0]
            dst = uintp(out_rows[q]) if scatter else uintp(q)
            out[dst, 0] = coef * (a[q] * x[q, 0] - b[q] * acc)
    elif c <= CHUNKED_MAX_COLUMNS:
        for q in prange(n):
            dst = uintp(out_rows[q]) if scatter else uintp(q)
            lo, hi = uintp(indptr[q]), uintp(indptr[q + 1])
            aq = a[q]
            bq = b[q]
            for c0 in range(0, c, 4):
                w = min(uintp(4), c - c0)
                sums = _row_sums4(lo, hi, indices, data, x, c0, w)
                for t in range(w):
                    out[dst, c0 + t] = coef * (aq * x[q, c0 + t] - bq * sums[t])
    else:
        for q in prange(n):
            dst = uintp(out_rows[q]) if scatter else uintp(q)
            for col in range(c):
                out[dst, col] = 0.0
            for jj in range(uintp(indptr[q]), uintp(indptr[q + 1])):
                v = data[jj]
                j = uintp(indices[jj])
                for col in range(c):
                    out[dst, col] += v * x[j, col]
            aq = a[q]
            bq = b[q]
            for col in range(c):
                out[dst, col] = coef * (aq * x[q, col] - bq * out[dst, col])


@_threaded
def scale_rows(g, x, src_rows, out):
    """``out[q, :] = g[q] x[src_rows[q], :]``, or ``g[q] x[q, :]`` when ``src_rows`` is
    empty (a diagonal scaling, optionally fused with a row permutation); x float32 or
    float64, out float64."""
    c = x.shape[1]
    gather = src_rows.shape[0] > 0
    for q in prange(out.shape[0]):
        gq = g[q]
        s = uintp(src_rows[q]) if gather else uintp(q)
        for col in range(c):
            out[q, col] = gq * x[s, col]


@_threaded
def permute_csr(indptr, indices, data, order, inverse, out_indptr, out_indices, out_data):
    """Symmetric renumbering ``P W Pᵀ`` of a CSR matrix, column indices sorted per row.

    Row q of the result is row ``order[q]`` of the input with every column j
    renamed ``inverse[j]`` (``inverse[order[q]] = q``). ``out_indptr`` must hold
    the cumulative row lengths in the new order.
    """
    n = order.shape[0]
    for q in prange(n):
        r = order[q]
        start = indptr[r]
        length = indptr[r + 1] - start
        o = out_indptr[q]
        for t in range(length):
            out_indices[o + t] = inverse[indices[start + t]]
            out_data[o + t] = data[start + t]
        if length > 64:  # a hub: sort by argsort (allocates, but such rows are rare)
            perm = np.argsort(out_indices[o:o + length], kind="mergesort")
            idx = out_indices[o:o + length][perm]
            val = out_data[o:o + length][perm]
            out_indices[o:o + length] = idx
            out_data[o:o + length] = val
            continue
        # insertion sort of the row by the new column index (rows are short)
        for t in range(1, length):
            key = out_indices[o + t]
            val = out_data[o + t]
            u = t - 1
            while u >= 0 and out_indices[o + u] > key:
                out_indices[o + u + 1] = out_indices[o + u]
                out_data[o + u + 1] = out_data[o + u]
                u -= 1
            out_indices[o + u + 1] = key
            out_data[o + u + 1] = val


@njit(cache=True, nogil=True)
def label_propagation(indptr, indices, data, labels, acc, touched, max_iter, tol):
    """Weighted label propagation (community detection) on a symmetric CSR graph.

    Nodes are visited in storage order; each takes the label of largest
    total edge weight among its neighbours (ties keep the current label, else
    the first seen), updated in place (asynchronous, serial, deterministic).
    Stops after ``max_iter`` sweeps or when fewer than ``tol`` nodes changed.
    ``labels`` (int, < n) holds the initial labels; ``acc`` (float64, n,
    all zero) and ``touched`` (int, at least the maximal degree) are scratch.
    Returns the number of sweeps.
    """
    n = labels.shape[0]
    sweeps = 0
    for it in range(max_iter):
        sweeps += 1
        changed = 0
        for i in range(n):
            m = 0
            for jj in range(indptr[i], indptr[i + 1]):
                lab = labels[indices[jj]]
                if acc[lab] == 0.0:
                    touched[m] = lab
                    m += 1
                acc[lab] += data[jj]
            if m == 0:
                continue
            cur = labels[i]
            best = cur
            best_w = acc[cur]
            for u in range(m):
                lab = touched[u]
                if acc[lab] > best_w:
                    best_w = acc[lab]
                    best = lab
            for u in range(m):
                acc[touched[u]] = 0.0
            if best != cur:
                labels[i] = best
                changed += 1
        if changed < tol:
            break
    return sweeps


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
