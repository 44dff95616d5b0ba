"""numba kernels of the graph Laplacian passes and of the node renumbering."""

import numpy as np
from numba import njit, prange, uintp

from .csr import CHUNKED_MAX_COLUMNS, row_sums4
from .dispatch import ROW_SUM_FASTMATH, threaded

__all__ = ["laplacian_pass", "scale_rows", "add_scaled", "permute_csr", "label_propagation"]


@threaded(fastmath=ROW_SUM_FASTMATH)
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
                sums = row_sums4(lo, hi, indices, data, x, c0, w)
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


@threaded
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


@threaded
def add_scaled(alpha, x, out):
    """``out += alpha x`` for (n, c) blocks, in place whatever ``out``'s alignment (x
    float64, out float64)."""
    c = x.shape[1]
    for q in prange(out.shape[0]):
        for col in range(c):
            out[q, col] += alpha * x[q, col]


@threaded
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

