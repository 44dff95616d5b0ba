"""Kernel variants tried for the passes of one CG iteration, and not adopted.

    NUMBA_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python bench/kernel_variants.py \
        [--k 50] [--n 1000000] [--rounds 7]

On the ``--corpus`` problem of ``bench/operators.py`` (X = ``make_text_corpus(n)``, TF-IDF;
``KNNGraph(n_neighbors=k)`` fitted on it, renumbered; both cached in ``bench/_cache/``), times
single passes (c = 1, all numba threads) of the library's kernels next to variants of them:

* X passes — ``csr_matmat`` (X·w) and ``csr_rmatmat_blocks`` (Xᵀ·u); the X·w loop reading X
  with no gather, and with every gather confined to ``w[:1024]`` (L1): what the gather costs;
  both library kernels on X with its columns renumbered by document frequency (a second copy
  of X's indices).
* one graph pass — ``laplacian_pass`` on the renumbered graph; its loop reading W only (no
  gather); gathering a float32 copy of the iterate; two rows interleaved; four scalar
  accumulators; SELL-4 storage (4 rows a lane group, rows sorted by length within windows of
  64); a software prefetch of the neighbours of the row ``ahead`` rows on (``llvm.prefetch``);
  the graph renumbered by a second level of label propagation on its intra-cluster edges.

Each of ``--rounds`` rounds times the streaming reference of ``bench/operators.py`` and every
variant once, back to back; the table gives medians over the rounds, and each variant's time
relative to its library kernel. Every variant's output is checked against the library's.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# (importing bench/operators.py also sets the NUMBA / OPENBLAS thread defaults)
from operators import _pass_stream, corpus_problem, stream_bandwidth  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from llvmlite import ir  # noqa: E402
from numba import get_num_threads, njit, prange, types, uintp  # noqa: E402
from numba.core import cgutils  # noqa: E402
from numba.extending import intrinsic  # noqa: E402
from scipy.sparse.csgraph import reverse_cuthill_mckee  # noqa: E402

from linlap._numba.csr import csr_matmat, csr_rmatmat_blocks, row_blocks  # noqa: E402
from linlap._numba.dispatch import ROW_SUM_FASTMATH as _ROW_SUM_FASTMATH  # noqa: E402
from linlap._numba.graph import label_propagation, laplacian_pass  # noqa: E402
from linlap.graph.reorder import renumber_csr as _renumber_csr  # noqa: E402

FM = set(_ROW_SUM_FASTMATH)


@njit(parallel=True, fastmath=FM)
def x_gather_l1(indptr, indices, data, w, out):
    """The X·w loop with every gather confined to w[:1024] (32 KB, L1)."""
    for i in prange(indptr.shape[0] - 1):
        acc = 0.0
        for jj in range(uintp(indptr[i]), uintp(indptr[i + 1])):
            acc += data[jj] * w[uintp(indices[jj]) & uintp(1023), 0]
        out[i, 0] = acc


@njit(parallel=True, fastmath=FM)
def pass_two_rows(indptr, indices, data, x, a, b, out):
    """Rows 2h and 2h + 1 summed together (two independent chains)."""
    n = x.shape[0]
    for h in prange((n + 1) // 2):
        q = uintp(2 * h)
        q1 = min(q + uintp(1), uintp(n - 1))
        lo0, lo1 = uintp(indptr[q]), uintp(indptr[q1])
        hi0, hi1 = uintp(indptr[q + 1]), uintp(indptr[q1 + 1])
        if q1 == q:
            hi1 = lo1
        m = min(hi0 - lo0, hi1 - lo1)
        s0 = 0.0
        s1 = 0.0
        for t in range(m):
            s0 += data[lo0 + t] * x[uintp(indices[lo0 + t]), 0]
            s1 += data[lo1 + t] * x[uintp(indices[lo1 + t]), 0]
        for jj in range(lo0 + m, hi0):
            s0 += data[jj] * x[uintp(indices[jj]), 0]
        for jj in range(lo1 + m, hi1):
            s1 += data[jj] * x[uintp(indices[jj]), 0]
        out[q, 0] = a[q] * x[q, 0] - b[q] * s0
        if q1 != q:
            out[q1, 0] = a[q1] * x[q1, 0] - b[q1] * s1


@njit(parallel=True)
def pass_four_sums(indptr, indices, data, x, a, b, out):
    """Four scalar accumulators, stride 4 (no reassociation licence needed)."""
    for q in prange(x.shape[0]):
        lo, hi = uintp(indptr[q]), uintp(indptr[q + 1])
        m = lo + ((hi - lo) & ~uintp(3))
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for jj in range(lo, m, 4):
            s0 += data[jj] * x[uintp(indices[jj]), 0]
            s1 += data[jj + 1] * x[uintp(indices[jj + 1]), 0]
            s2 += data[jj + 2] * x[uintp(indices[jj + 2]), 0]
            s3 += data[jj + 3] * x[uintp(indices[jj + 3]), 0]
        for jj in range(m, hi):
            s0 += data[jj] * x[uintp(indices[jj]), 0]
        out[q, 0] = a[q] * x[q, 0] - b[q] * ((s0 + s1) + (s2 + s3))


def sell4(indptr, indices, data, sigma=64):
    """SELL-4-σ arrays: rows sorted by length within windows of σ, packed 4 at a time
    column-major (entry t of lane r at ``start + 4 t + r``), short lanes padded with
    zero weights pointing at the row itself."""
    n = indptr.shape[0] - 1
    lengths = np.diff(indptr)
    window = np.arange(n) // sigma
    perm = np.lexsort((-lengths, window))
    n_chunks = (n + 3) // 4
    padded = np.zeros(4 * n_chunks, dtype=np.int64)
    padded[:n] = lengths[perm]
    chunk_len = padded.reshape(n_chunks, 4).max(axis=1)
    chunk_ptr = np.zeros(n_chunks + 1, dtype=np.int64)
    np.cumsum(4 * chunk_len, out=chunk_ptr[1:])
    s_indices = np.empty(chunk_ptr[-1], dtype=indices.dtype)
    s_data = np.zeros(chunk_ptr[-1], dtype=data.dtype)
    _fill_sell4(indptr, indices, data, perm, chunk_ptr, s_indices, s_data)
    return chunk_ptr, s_indices, s_data, perm


@njit
def _fill_sell4(indptr, indices, data, perm, chunk_ptr, s_indices, s_data):
    for k in range(perm.shape[0]):
        q = perm[k]
        start = chunk_ptr[k // 4] + k % 4
        length = (chunk_ptr[k // 4 + 1] - chunk_ptr[k // 4]) // 4
        row = indptr[q + 1] - indptr[q]
        for t in range(length):
            if t < row:
                s_indices[start + 4 * t] = indices[indptr[q] + t]
                s_data[start + 4 * t] = data[indptr[q] + t]
            else:
                s_indices[start + 4 * t] = q


@njit(parallel=True, fastmath=FM)
def pass_sell4(chunk_ptr, s_indices, s_data, perm, x, a, b, out):
    n = x.shape[0]
    for ch in prange(chunk_ptr.shape[0] - 1):
        start = uintp(chunk_ptr[ch])
        length = (uintp(chunk_ptr[ch + 1]) - start) // uintp(4)
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for t in range(length):
            p = start + uintp(4) * t
            s0 += s_data[p] * x[uintp(s_indices[p]), 0]
            s1 += s_data[p + 1] * x[uintp(s_indices[p + 1]), 0]
            s2 += s_data[p + 2] * x[uintp(s_indices[p + 2]), 0]
            s3 += s_data[p + 3] * x[uintp(s_indices[p + 3]), 0]
        k = 4 * ch
        for r in range(min(4, n - k)):
            q = uintp(perm[k + r])
            s = s0 if r == 0 else s1 if r == 1 else s2 if r == 2 else s3
            out[q, 0] = a[q] * x[q, 0] - b[q] * s


@intrinsic
def _prefetch_row(typingctx, arr, i):
    """Prefetch ``arr[i, 0]`` for reading into all cache levels (``llvm.prefetch``)."""
    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = context.cast(builder, args[1], signature.args[1], types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary,
                                       [idx, context.get_constant(types.intp, 0)])
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32]),
            "llvm.prefetch.p0")
        builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return types.void(arr, i), codegen


@njit(parallel=True, fastmath=FM)
def pass_prefetch(indptr, indices, data, x, a, b, out, ahead):
    """The library's loop, first prefetching the neighbours of row q + ahead."""
    n = x.shape[0]
    for q in prange(n):
        r = min(q + ahead, n - 1)
        for jj in range(uintp(indptr[r]), uintp(indptr[r + 1])):
            _prefetch_row(x, uintp(indices[jj]))
        acc = 0.0
        for jj in range(uintp(indptr[q]), uintp(indptr[q + 1])):
            acc += data[jj] * x[uintp(indices[jj]), 0]
        out[q, 0] = a[q] * x[q, 0] - b[q] * acc


def two_level_order(W, max_sweeps=10):
    """``linlap.graph.reorder.locality_order`` followed by a second label propagation on the
    intra-cluster edges only (clusters sorted, then sub-clusters, then RCM position)."""
    n = W.shape[0]
    rcm = np.asarray(reverse_cuthill_mckee(W, symmetric_mode=True), dtype=np.int64)
    indptr, indices, data = _renumber_csr(W, rcm)
    levels = []
    for level in range(2):
        if level:  # keep the intra-cluster edges only
            rows = np.repeat(np.arange(n), np.diff(indptr))
            keep = levels[0][rows] == levels[0][indices]
            indptr = np.concatenate([[0], np.cumsum(np.bincount(rows[keep], minlength=n))])
            indices, data = indices[keep], data[keep]
        labels = np.arange(n, dtype=np.int64)
        touched = np.empty(int(np.diff(indptr).max(initial=1)), dtype=np.int64)
        label_propagation(indptr, indices, data, labels, np.zeros(n), touched, max_sweeps,
                          max(1, n // 1000))
        levels.append(labels)
    sizes = np.bincount(levels[0])
    print(f"label propagation: {np.count_nonzero(sizes)} clusters (largest {sizes.max()}), "
          f"{np.count_nonzero(np.bincount(levels[1]))} after the second level")
    return rcm[np.lexsort((levels[1], levels[0]))]


def edge_spans(indptr, indices):
    rows = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
    span = np.abs(indices - rows)
    return ", ".join(f"{np.mean(span <= h):.1%} within ±{h}" for h in (512, 4096, 131072))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=50, help="n_neighbors of the corpus graph")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    X, g, _ = corpus_problem(args.n, args.k, args.seed)
    n, d = X.shape
    g.laplacian_matvec(np.zeros(n))  # sets up the renumbered copy if the cache lacks it
    ren = g._passes
    if g.node_order_ is None:
        sys.exit("the graph is not renumbered (n below the reorder threshold?)")
    indptr, indices, data = ren.csr
    a, b = ren.vectors["nonisolated"], ren.vectors["inv_degree"]
    W_ren = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    print(f"X {n} x {d}, {X.nnz / n:.1f} nnz/row; renumbered graph {data.shape[0] / n:.1f} "
          f"entries/row; its edges: {edge_spans(indptr, indices)}")

    # X passes
    w = rng.standard_normal((d, 1))
    u = rng.standard_normal((n, 1))
    out_n = np.empty((n, 1))
    counts = np.bincount(X.indices, minlength=d)
    rank = np.empty(d, dtype=X.indices.dtype)
    rank[np.argsort(-counts, kind="stable")] = np.arange(d)
    X_freq = sp.csr_matrix((X.data, rank[X.indices], X.indptr), shape=X.shape)
    print(f"columns by document frequency: the first 4,096 hold "
          f"{np.sort(counts)[::-1][:4096].sum() / X.nnz:.0%} of the nonzeros")
    bounds = row_blocks(X.indptr, get_num_threads())  # as NormalOperator does
    buf = np.empty((bounds.shape[0] - 1, d, 1))
    colsum = np.empty((bounds.shape[0] - 1, 1))
    no_bias = np.zeros(1)

    def matmat(M, w):
        return lambda: csr_matmat.parallel(M.indptr, M.indices, M.data, w, no_bias, False, out_n)

    def rmatmat(M):
        return lambda: csr_rmatmat_blocks.parallel(M.indptr, M.indices, M.data, u, bounds, buf,
                                                   colsum)

    x_cases = [
        ("X·w: library (csr_matmat)", "X·w", matmat(X, w), None),
        ("X·w loop, no gather (reads X only)", "X·w",
         lambda: _pass_stream(X.indptr, X.indices, X.data, w, out_n[:, 0]), None),
        ("X·w loop, gathers confined to w[:1024] (L1)", "X·w",
         lambda: x_gather_l1(X.indptr, X.indices, X.data, w, out_n), None),
        ("X·w: columns by frequency", "X·w", matmat(X_freq, w[np.argsort(rank)]), "X·w"),
        ("Xᵀ·u: library (csr_rmatmat_blocks)", "Xᵀ·u", rmatmat(X), None),
        ("Xᵀ·u: columns by frequency", "Xᵀ·u", rmatmat(X_freq), "Xᵀ·u"),
    ]

    # graph passes (renumbered order)
    x = rng.standard_normal((n, 1))
    x32 = x.astype(np.float32)
    chunk_ptr, s_indices, s_data, perm = sell4(indptr, indices, data)
    print(f"SELL-4 (windows of 64): {s_data.shape[0] / data.shape[0] - 1:.1%} padding")
    t = time.perf_counter()
    order2 = two_level_order(W_ren)
    ip2, ix2, dt2 = _renumber_csr(W_ren, order2)
    print(f"two-level order in {time.perf_counter() - t:.1f} s; its edges: "
          f"{edge_spans(ip2, ix2)}")
    a2, b2 = a[order2], b[order2]
    x2 = x[order2]
    no_rows = np.empty(0, dtype=np.int64)

    def lib(ip, ix, dt, x, a, b):
        return lambda: laplacian_pass.parallel(ip, ix, dt, x, a, b, 1.0, out_n, no_rows)

    g_cases = [
        ("graph pass: library (laplacian_pass)", "pass", lib(indptr, indices, data, x, a, b),
         None),
        ("pass loop, no gather (reads W only)", "pass",
         lambda: _pass_stream(indptr, indices, data, x, out_n[:, 0]), None),
        ("pass gathering a float32 iterate", "pass", lib(indptr, indices, data, x32, a, b),
         "pass32"),
        ("pass, two rows interleaved", "pass",
         lambda: pass_two_rows(indptr, indices, data, x, a, b, out_n), "pass"),
        ("pass, four scalar accumulators", "pass",
         lambda: pass_four_sums(indptr, indices, data, x, a, b, out_n), "pass"),
        ("pass, SELL-4 storage", "pass",
         lambda: pass_sell4(chunk_ptr, s_indices, s_data, perm, x, a, b, out_n), "pass"),
        ("pass, prefetch 2 rows ahead", "pass",
         lambda: pass_prefetch(indptr, indices, data, x, a, b, out_n, 2), "pass"),
        ("pass, prefetch 8 rows ahead", "pass",
         lambda: pass_prefetch(indptr, indices, data, x, a, b, out_n, 8), "pass"),
        ("pass, two-level label propagation order", "pass", lib(ip2, ix2, dt2, x2, a2, b2),
         "pass2"),
    ]
    cases = x_cases + g_cases

    # every variant's output against the library's (compiles everything too)
    ref = {"X·w": lambda: matmat(X, w)(), "Xᵀ·u": lambda: rmatmat(X)(),
           "pass": lambda: lib(indptr, indices, data, x, a, b)()}
    results = {}
    for key, fn in ref.items():
        fn()
        results[key] = (buf.sum(axis=0) if key == "Xᵀ·u" else out_n).copy()
    results["pass32"] = results["pass"]
    results["pass2"] = results["pass"][order2]
    for name, _, fn, check in cases:
        fn()
        if check is not None:
            got = buf.sum(axis=0) if check == "Xᵀ·u" else out_n
            # the frequency-ordered Xᵀ·u comes out in the new column order
            want = results[check][np.argsort(rank)] if check == "Xᵀ·u" else results[check]
            tol = 1e-5 if check == "pass32" else 1e-9
            if not np.allclose(got, want, rtol=tol, atol=tol * np.abs(want).max()):
                sys.exit(f"{name}: output differs from the library kernel's")

    times = {name: [] for name, *_ in cases}
    stream = []
    for _ in range(args.rounds):
        stream.append(max(stream_bandwidth(repeat=2).values()))
        for name, _, fn, _ in cases:
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    print(f"\nstreaming reference (a += b, median of {args.rounds} rounds): "
          f"{np.median(stream):.1f} GB/s\n")
    x_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    w_bytes = data.nbytes + indices.nbytes + indptr.nbytes
    lib_time = {}  # the library kernel is listed first among the cases of its kind
    for name, kind, _, _ in cases:
        lib_time.setdefault(kind, np.median(times[name]))
    print("| kernel | ms (median) | GB/s of the matrix | vs library |")
    print("|---|---|---|---|")
    for name, kind, _, _ in cases:
        t = np.median(times[name])
        nbytes = w_bytes if kind == "pass" else x_bytes
        print(f"| {name} | {t * 1e3:.1f} | {nbytes / t / 1e9:.1f} | {t / lib_time[kind]:.2f}× |")
    print(f"\nload average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
