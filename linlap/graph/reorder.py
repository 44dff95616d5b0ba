"""Node renumbering for memory locality of the Laplacian passes."""

import numpy as np

__all__ = ["REORDER_MIN_SAMPLES", "locality_order", "renumber_csr"]

# reorder='auto' renumbers the nodes for the Laplacian passes from this many rows
# on (below it the n × c blocks the passes gather from stay in cache anyway).
REORDER_MIN_SAMPLES = 100_000


def locality_order(W, max_sweeps=10):
    """Node order putting graph neighbours at nearby positions (int64 permutation).

    Two steps, both O(nnz(W)) per sweep:

    1. reverse Cuthill–McKee on the symmetric W — a breadth-first numbering,
       so a node's neighbours are within about one BFS level of it.  On a kNN
       graph of high-dimensional data the levels are wide (tens of thousands of
       nodes at n = 10⁶), so this alone leaves most neighbours far away;
    2. clusters by weighted label propagation (at most ``max_sweeps`` sweeps,
       visiting nodes in RCM order, labels started at the RCM positions, so
       its memory accesses stay local too), then the nodes sorted by cluster
       and by RCM position within a cluster.

    On the 10-NN graph of 10⁶ documents of ``make_text_corpus`` (bench/RESULTS.md)
    this puts 80 % of the edges within 10⁴ positions (RCM alone: 26 %).
    """
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    from .._numba.graph import label_propagation

    n = W.shape[0]
    rcm = np.asarray(reverse_cuthill_mckee(W, symmetric_mode=True), dtype=np.int64)
    if W.nnz == 0 or max_sweeps < 1:
        return rcm
    # run on the RCM-renumbered graph, visiting rows in storage order: every
    # access is then near the current row (on W itself it is ~10x slower)
    indptr, indices, data = renumber_csr(W, rcm)
    labels = np.arange(n, dtype=np.int64)
    acc = np.zeros(n)
    touched = np.empty(int(np.diff(indptr).max()), dtype=np.int64)
    label_propagation(indptr, indices, data, labels, acc, touched, max_sweeps, max(1, n // 1000))
    return rcm[np.argsort(labels, kind="stable")]


def renumber_csr(W, order):
    """CSR arrays ``(indptr, indices, data)`` of P W Pᵀ: row q is node ``order[q]``,
    column indices are new positions, rows sorted.

    A full copy: reading W's own values through the order instead (no copy) made
    each Laplacian pass 7–10× slower (bench/RESULTS.md).
    """
    from .._numba.graph import permute_csr

    n = W.shape[0]
    idx_dtype = np.int32 if n < 2**31 else np.int64
    inverse = np.empty(n, dtype=idx_dtype)
    inverse[order] = np.arange(n, dtype=idx_dtype)
    indptr = np.zeros(n + 1, dtype=np.int64 if W.nnz >= 2**31 else W.indptr.dtype)
    np.cumsum(np.diff(W.indptr)[order], out=indptr[1:])
    indices = np.empty(W.nnz, dtype=idx_dtype)
    data = np.empty(W.nnz, dtype=W.data.dtype)
    permute_csr(W.indptr, W.indices, W.data, order, inverse, indptr, indices, data,
                work=W.nnz)
    return indptr, indices, data

