"""One CG iteration of linear LapRLS against the machine's streaming bandwidth.

    NUMBA_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python bench/operators.py \
        [--n 1000000] [--d 100000] [--nnz 80] [--degree 75] [--power 5] [--columns 1,20] \
        [--threads 1,2] [--window W] [--dtypes float64,float32] [--repeat R] [--probe]
    ... python bench/operators.py --corpus [--k 10] [--n 1000000] ...

(``--n 100000 --d 20000`` runs in about a minute.)

``--corpus`` replaces the synthetic problem by a real one: X = ``make_text_corpus(n)`` (TF-IDF)
and ``KNNGraph(n_neighbors=k)`` fitted on it (SVD + pynndescent above 50,000 rows; ~5 min at
n = 10⁶, k = 10 on 2 quiet cores), both cached under ``bench/_cache/``; the iteration is timed
with the graph in its original node order and renumbered (``KNNGraph(reorder=...)``,
``node_order_``), and the edge spans |position(i) − position(j)| of both orders are printed.

Builds, once, a synthetic problem of the issue's size: X (n × d CSR, ``--nnz`` nonzeros
per row, columns drawn from a Zipf-like law P(rank r) ∝ 1/r, sorted per row, rows
L2-normalised), stored in float64 and in float32; and a random symmetric graph W with
about ``--degree`` entries per row (a union k = 50 kNN graph has ≈ 1.5k; no kNN search is
needed to time the operator; neighbours uniform over all nodes, or within ±W of the node
with ``--window W``), loaded into a KNNGraph (normalised Laplacian, power p).
Then, in the same run:

(a) streaming bandwidth: a large ``a += b`` (256 MiB arrays), by numpy (one thread)
    and by a numba prange loop (all numba threads); bytes moved = 3 × the array size
    per pass (read a, read b, write a; the write-allocate read is not counted — the
    usual STREAM convention). The larger is the reference. It is measured once at the
    start and again in every timing round, next to (b) and (c): on a shared machine
    it drifted 24–46 GB/s within one hour here, so each row's "% of stream" and
    "speed-up" are medians of ratios taken within a round.
(b) one CG iteration of linlap: ``batched_cg`` on ``NormalOperator`` (numba kernels,
    ``laplacian_matvec(out=, work=)``), c = 1 and c = 20 right-hand sides, time per
    iteration over a few iterations after a warm-up; also the three passes alone.
(c) the same iteration done with plain scipy/numpy: ``X @ P``, p × the scipy
    Laplacian product (``KNNGraph._apply_laplacian``), ``X.T @ U``, and the textbook
    batched CG vector updates.

"Bytes an iteration must stream" (the same numerator for (b) and (c)):
2 × X (data + indices + indptr) + p × W (data + indices + indptr) + the dense vectors
8c·[(2 + 2p) n + 14 m]: F written, p passes each reading and writing an n × c block, U
read by Xᵀ, and ~14 (m × c) blocks (m = d + 1) for the Xᵀ reduction and the CG
updates. The random gathers (rows of the n × c block at the graph neighbours, rows of
the d × c block at the columns of X) are not counted: they are what makes c = 20 slower
than its byte count says.
"""

import argparse
import gc
import os
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "2")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from numba import get_num_threads, njit, prange, set_num_threads, uintp  # noqa: E402

from linlap import KNNGraph  # noqa: E402
from linlap._numba.dispatch import ROW_SUM_FASTMATH as _ROW_SUM_FASTMATH  # noqa: E402
from linlap.solvers.normal_operator import NormalOperator  # noqa: E402
from linlap.solvers import batched_cg  # noqa: E402

GB = 1e9


@njit(parallel=True, cache=True)
def _stream_add(a, b):
    for i in prange(a.shape[0]):
        a[i] += b[i]


def stream_bandwidth(mib=256, repeat=5):
    n = mib * 2**20 // 8
    a, b = np.ones(n), np.ones(n)
    _stream_add(a, b)
    res = {}
    for name, fn in (("numpy a += b (1 thread)", lambda: np.add(a, b, out=a)),
                     (f"numba prange a += b ({get_num_threads()} threads)",
                      lambda: _stream_add(a, b))):
        best = np.inf
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t)
        res[name] = 3 * a.nbytes / best / GB
    return res


@njit(parallel=True, cache=True, fastmath=set(_ROW_SUM_FASTMATH))
def _pass_stream(indptr, indices, data, x, out):
    """A CSR pass's loop without the gather: reads the matrix only (the library's
    row-sum licence, as the gathering loop below)."""
    for i in prange(indptr.shape[0] - 1):
        acc = 0.0
        for jj in range(uintp(indptr[i]), uintp(indptr[i + 1])):
            acc += data[jj] * indices[jj]
        out[i] = acc


@njit(parallel=True, cache=True, fastmath=set(_ROW_SUM_FASTMATH))
def _pass_gather(indptr, indices, data, x, out):
    """The same loop gathering x at the neighbours (what a graph pass does at c = 1)."""
    for i in prange(indptr.shape[0] - 1):
        acc = 0.0
        for jj in range(uintp(indptr[i]), uintp(indptr[i + 1])):
            acc += data[jj] * x[uintp(indices[jj])]
        out[i] = acc


def gather_probe(W, rng, repeat=3, windows=(512, 8192)):
    """Seconds of one pass over W without and with the gather of x (float64, float32).

    Also with W's column indices replaced by random positions within ±window of
    each row (same row lengths and weights): what the pass would cost if an
    ordering put every neighbour that close (a bound for better renumberings).
    """
    n = W.shape[0]
    x = rng.standard_normal(n)
    out = np.empty(n)
    cases = [("W only", _pass_stream, W.indices, x),
             ("gather x float64", _pass_gather, W.indices, x),
             ("gather x float32", _pass_gather, W.indices, x.astype(np.float32))]
    rows = np.repeat(np.arange(n), np.diff(W.indptr))
    for h in windows:
        near = np.clip(rows + rng.integers(-h, h + 1, size=rows.size), 0, n - 1)
        cases.append((f"gather x float64, neighbours within ±{h} (synthetic)", _pass_gather,
                      near.astype(W.indices.dtype), x))
    del rows
    res = {}
    for name, fn, indices, arg in cases:
        fn(W.indptr, indices, W.data, arg, out)
        res[name] = timed(lambda: fn(W.indptr, indices, W.data, arg, out), repeat)
    return res


def make_X(n, d, nnz, rng):
    """CSR float64 X: ``nnz`` Zipf-like columns per row, sorted, rows L2-normalised."""
    u = rng.random((n, nnz))
    ranks = np.minimum((np.exp(u * np.log(d + 1.0)) - 1.0).astype(np.int64), d - 1)
    del u
    perm = rng.permutation(d).astype(np.int32)  # popular terms spread over the columns
    cols = perm[ranks]
    del ranks
    cols.sort(axis=1)
    data = rng.random((n, nnz)) + 0.05
    data /= np.sqrt((data * data).sum(axis=1, keepdims=True))
    indptr = np.arange(0, n * nnz + 1, nnz, dtype=np.int64)
    if indptr[-1] < 2**31:
        indptr = indptr.astype(np.int32)
    X = sp.csr_matrix((data.ravel(), cols.ravel(), indptr), shape=(n, d))
    return X  # duplicate columns within a row are kept (products sum them)


def make_graph(n, degree, power, rng, window=None):
    """KNNGraph over a random symmetric W with ≈ ``degree`` entries per row.

    ``window=None``: neighbours uniform over all n nodes (no locality at all: every
    gather of a neighbour's row is a cache miss once n × c × 8 bytes exceed the
    cache). ``window=w``: neighbours uniform within ±w of the node (a graph whose
    nodes were ordered for locality, e.g. by cluster).
    """
    h = max(1, degree // 2)
    rows = np.repeat(np.arange(n, dtype=np.int32), h)
    if window is None:
        cols = rng.integers(0, n, size=n * h, dtype=np.int32)
    else:
        cols = (rows + rng.integers(-window, window + 1, size=n * h)) % n
        cols = cols.astype(np.int32)
    keep = rows != cols
    rows, cols = rows[keep], cols[keep]
    w = rng.random(rows.size) * 0.9 + 0.1
    W = sp.coo_matrix((np.concatenate([w, w]), (np.concatenate([rows, cols]),
                                                np.concatenate([cols, rows]))), shape=(n, n))
    del rows, cols, w, keep
    W = W.tocsr()  # sums the (rare) repeated pairs, symmetrically
    W.sort_indices()
    g = KNNGraph(n_neighbors=50, normalized=True, power=power)
    # what fit() sets after its search (no kNN search is needed to time the operator)
    g.adjacency_ = W
    g.degree_ = np.asarray(W.sum(axis=1)).ravel()
    g.n_samples_fit_ = n
    g.node_order_ = None  # the synthetic graph is timed in the order it was drawn
    g._set_laplacian()
    return g


CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_cache")


def corpus_problem(n, k, seed, verbose=True):
    """A real kNN graph: ``KNNGraph(n_neighbors=k)`` fitted on ``make_text_corpus(n)``.

    X (TF-IDF, float64 CSR) and the fitted graph are cached under ``bench/_cache/``
    (``operators_corpus_n{n}_k{k}_s{seed}.{X.npz,graph.npz}``): the graph costs ~5 min
    at n = 10⁶, k = 10 on 2 quiet cores. Returns ``(X, graph, build_seconds or None)``.
    """
    from linlap.datasets import make_text_corpus

    base = os.path.join(CACHE, f"operators_corpus_n{n}_k{k}_s{seed}")
    fx, fg = base + ".X.npz", base + ".graph.npz"
    if os.path.exists(fx) and os.path.exists(fg):
        return sp.load_npz(fx).tocsr(), KNNGraph.load(fg), None
    os.makedirs(CACHE, exist_ok=True)
    t = time.perf_counter()
    X, _ = make_text_corpus(n, random_state=seed)
    X = sp.csr_matrix(X)
    t_gen = time.perf_counter() - t
    t = time.perf_counter()
    g = KNNGraph(n_neighbors=k, random_state=seed, n_jobs=2, verbose=verbose).fit(X)
    t_graph = time.perf_counter() - t
    sp.save_npz(fx + ".tmp.npz", X, compressed=False)
    os.replace(fx + ".tmp.npz", fx)
    g.save(fg)
    return X, g, {"generate_s": t_gen, "graph_s": t_graph}


def csr_bytes(M):
    return M.data.nbytes + M.indices.nbytes + M.indptr.nbytes


def scipy_matvec(X, g, rows, alpha, beta, P):
    d = X.shape[1]
    F = X @ P[:d] + P[d]
    U = F
    for _ in range(g.power):
        U = g._apply_laplacian(U)
    U = beta * U
    U[rows] += F[rows]
    return np.vstack([X.T @ U + alpha * P[:d], U.sum(axis=0, keepdims=True)])


def scipy_cg(matvec, B, n_iter):
    """The textbook batched CG (per-column scalars) with numpy temporaries."""
    X = np.zeros_like(B)
    R = B.copy()
    P = R.copy()
    rr = np.einsum("ij,ij->j", R, R)
    for _ in range(n_iter):
        AP = matvec(P)
        alpha = rr / np.einsum("ij,ij->j", P, AP)
        X += P * alpha
        R -= AP * alpha
        rr_new = np.einsum("ij,ij->j", R, R)
        P = R + P * (rr_new / rr)
        rr = rr_new
    return X


def timed(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def graph_variants(g, corpus):
    """[(label, graph)]: the corpus graph in its original node order and renumbered."""
    if not corpus:
        return [("-", g)]
    import copy

    g0 = copy.copy(g)  # shares W and the vectors; no renumbering
    g0.node_order_ = None
    g0._set_laplacian()
    out = [("original", g0)]
    if g.node_order_ is None:  # cached by a version without renumbering
        import linlap.graph.reorder as lg

        g = copy.copy(g)
        g.node_order_ = lg.locality_order(g.adjacency_)
        g._set_laplacian()
    out.append(("renumbered", g))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=100_000)
    ap.add_argument("--nnz", type=int, default=80, help="nonzeros per row of X")
    ap.add_argument("--degree", type=int, default=75, help="entries per row of W (about)")
    ap.add_argument("--power", type=int, default=5)
    ap.add_argument("--columns", default="1,20")
    ap.add_argument("--labeled", type=int, default=1000)
    ap.add_argument("--iters", type=int, default=2, help="timed CG iterations")
    ap.add_argument("--scipy-iters", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=None,
                    help="timing rounds per row (the median is reported; the passes alone: "
                         "best of this many); default 2 for c = 1, 1 otherwise")
    ap.add_argument("--dtypes", default="float64,float32")
    ap.add_argument("--threads", default=None,
                    help="numba thread counts to time, e.g. 1,2 (default: all numba threads)")
    ap.add_argument("--window", type=int, default=None,
                    help="draw graph neighbours within ±window of each node (locality); "
                         "default: uniform over all nodes")
    ap.add_argument("--corpus", action="store_true",
                    help="a real problem instead of the synthetic one: X = make_text_corpus(n) "
                         "and KNNGraph(n_neighbors=k) fitted on it (cached in bench/_cache/), "
                         "timed in the original node order and renumbered")
    ap.add_argument("--k", type=int, default=10, help="n_neighbors of the --corpus graph")
    ap.add_argument("--probe", action="store_true",
                    help="only time one graph pass without / with the gather (c = 1), and with "
                         "synthetic near neighbours (a locality bound), and exit")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    columns = [int(c) for c in args.columns.split(",")]

    threads = ([int(t) for t in args.threads.split(",")] if args.threads
               else [get_num_threads()])
    print(f"numba threads available: {get_num_threads()}; load average before: "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    bw = {}
    for nt in threads:
        set_num_threads(nt)
        bw.update(stream_bandwidth())
    for name, v in bw.items():
        print(f"streaming bandwidth, {name}: {v:.2f} GB/s")

    t = time.perf_counter()
    if args.corpus:
        X64, g, built = corpus_problem(args.n, args.k, args.seed)
        if g.power != args.power:
            g = g.with_laplacian(power=args.power)
        n, d = X64.shape
        what = (f"make_text_corpus({n}) ({X64.nnz / n:.1f} nnz/row) and its "
                f"KNNGraph(n_neighbors={args.k}) ({'built: ' + str(built) if built else 'cached'})")
    else:
        n, d = args.n, args.d
        X64 = make_X(n, d, args.nnz, rng)
        g = make_graph(n, args.degree, args.power, rng, args.window)
        what = (f"synthetic X ({n} x {d}, {X64.nnz / n:.1f} nnz/row), neighbours "
                f"{'uniform' if args.window is None else f'within ±{args.window}'}")
    W = g.adjacency_
    print(f"{what}; W {W.nnz / n:.1f} entries/row, {csr_bytes(W) / GB:.2f} GB; "
          f"loaded in {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    variants = graph_variants(g, args.corpus)
    if args.corpus:
        print(f"renumbering available in {time.perf_counter() - t:.1f} s "
              "(computed here only if the cached graph lacks it)")
        coo_r = np.repeat(np.arange(n), np.diff(W.indptr))
        for label, gv in variants:
            pos = np.arange(n)
            if gv.node_order_ is not None:
                pos[gv.node_order_] = np.arange(n)
            span = np.abs(pos[coo_r] - pos[W.indices])
            print(f"edge spans |pos(i) - pos(j)|, {label} order: median {np.median(span):.0f}; "
                  + ", ".join(f"within {lim:.0e}: {np.mean(span <= lim):.1%}"
                              for lim in (1e3, 1e4, 1e5)))
        del coo_r, pos, span
    if args.probe:
        for label, gv in variants:
            Wv = gv.adjacency_
            if gv.node_order_ is not None:
                indptr, indices, data = gv._passes.csr
                Wv = sp.csr_matrix((data, indices, indptr), shape=W.shape)
            for nt in threads:
                set_num_threads(nt)
                for name, t in gather_probe(Wv, rng).items():
                    print(f"one graph pass ({label} order), {nt} thread(s), {name}: "
                          f"{t * 1e3:.0f} ms ({(Wv.data.nbytes + Wv.indices.nbytes) / t / GB:.2f}"
                          f" GB/s of W)")
        return
    rows = rng.choice(n, args.labeled, replace=False)
    l = rows.size
    alpha, beta = 1e-4 * l, 10.0 * g.scale_ * l
    m = d + 1

    print("\nPer row: medians over the rounds; '% of stream' and 'speed-up' are medians of the "
          "ratios within a round (stream = numba/numpy a += b with all threads, same round).")
    print("\n| X dtype | c | node order | threads | X GB | bytes/iter GB | linlap s/iter "
          "| linlap GB/s | stream GB/s | % of stream | scipy s/iter | scipy GB/s | speed-up "
          "| X·W s | L^p s | Xᵀ·U s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for dtname in args.dtypes.split(","):
        X = X64 if dtname == "float64" else sp.csr_matrix(
            (X64.data.astype(np.float32), X64.indices, X64.indptr), shape=X64.shape)
        for c in columns:
            B = rng.standard_normal((m, c))
            nbytes = (2 * csr_bytes(X) + args.power * csr_bytes(W)
                      + 8 * c * ((2 + 2 * args.power) * n + 14 * m))
            mv = lambda P: scipy_matvec(X, g, rows, alpha, beta, P)  # noqa: E731
            for label, gv in variants:
                for nt in threads:
                    set_num_threads(nt)
                    op = NormalOperator(X, rows, gv.laplacian_matvec, alpha=alpha, beta=beta)
                    batched_cg(op.matvec, B, tol=0.0, max_iter=1, warn=False)  # compile, size
                    # `rep` rounds, each timing side by side the streaming reference (all
                    # threads), `iters` linlap iterations and the plain scipy iteration
                    # (single-threaded whatever numba's setting, original order); the
                    # ratios are taken within a round, so a shared machine's drift between
                    # rounds cancels, and their median is reported
                    rep = args.repeat or (2 if c == 1 else 1)
                    t_its, t_scs, bws = [], [], []
                    for _ in range(rep):
                        set_num_threads(max(threads))
                        bws.append(max(stream_bandwidth(repeat=2).values()))
                        set_num_threads(nt)
                        t_its.append(timed(lambda: batched_cg(
                            op.matvec, B, tol=0.0, max_iter=args.iters, warn=False),
                            1) / args.iters)
                        if args.scipy_iters > 0:
                            t_scs.append(timed(lambda: scipy_cg(mv, B, args.scipy_iters), 1)
                                         / args.scipy_iters)
                    t_its, bws = np.array(t_its), np.array(bws)
                    t_it = float(np.median(t_its))
                    pct = float(np.median(100 * nbytes / t_its / GB / bws))
                    bw_row = float(np.median(bws))
                    if t_scs:
                        t_scs = np.array(t_scs)
                        t_sc, speedup = float(np.median(t_scs)), float(np.median(t_scs / t_its))
                    else:
                        t_sc = speedup = np.nan
                    gc.collect()
                    # the passes alone
                    Z = np.ascontiguousarray(B)
                    F = np.empty((n, c))
                    U = np.empty((n, c))
                    work = np.empty(n * c)
                    out = np.empty((m, c))
                    t_fw = timed(lambda: op._forward(Z, F), rep)
                    t_lap = timed(lambda: gv.laplacian_matvec(F, out=U, work=work), rep)
                    t_all = timed(lambda: op.matvec(Z, out=out), rep)
                    t_rt = max(t_all - t_fw - t_lap, 0.0)
                    op = F = U = work = None  # free the buffers before the next size
                    gc.collect()
                    print(f"| {dtname} | {c} | {label} | {nt} | {csr_bytes(X) / GB:.2f} | "
                          f"{nbytes / GB:.2f} | {t_it:.3f} | {nbytes / t_it / GB:.2f} | "
                          f"{bw_row:.1f} | {pct:.0f}% | {t_sc:.3f} | "
                          f"{nbytes / t_sc / GB:.2f} | {speedup:.2f}× | "
                          f"{t_fw:.3f} | {t_lap:.3f} | {t_rt:.3f} |", flush=True)
        if X is not X64:
            del X
            gc.collect()
    print(f"\nload average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
