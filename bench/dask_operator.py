"""Per-iteration cost of the Dask operator against the single-machine operator.

On the synthetic corpus (``linlap.datasets.make_text_corpus``, n documents, 1,000
labels, binary), one kNN graph is built; then, side by side in the same run:

* ``local``: :class:`linlap.solvers.normal_operator.NormalOperator` (numba, the client's
  NUMBA_NUM_THREADS threads), the product ``A z`` timed over ``--reps`` calls;
* ``dask B=…``: :class:`linlap.distributed.DistributedNormalOperator` on a LocalCluster
  of 2 worker processes × 1 thread, X in B CSR row blocks scattered to the workers;
  the product timed the same way, and split into its forward pass (X·w per block and
  the gather of f), the graph term on the client and the backward pass (Xᵀ(·) per
  block and the reduction);
* the pieces of a model of one iteration's time: one wave of B empty tasks (submit and
  gather: scheduler latency), the forward and backward pass of one block of n/B rows in
  this process (compute per block), the graph term, and the bytes moved;
* ``dask B=… halo``: the same with the graph term on the workers (``graph=``: L split by
  the row blocks, a halo exchange per power), rows in X's order and in the graph's
  locality order (X's rows and the graph permuted alike), with the halo rows per power;
* a full LapRLS fit (graph term on the client, then on the workers) and a full LapSVM
  fit by each path (same graph, same tol) and the difference of the models;
* the peak resident memory of the client and of each worker process.

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 PYTHONPATH=. \\
        python bench/dask_operator.py --n 100000
"""

import argparse
import os
import resource
import time
import warnings
from types import SimpleNamespace

import numpy as np


def _noop(block):
    return None


def timed(f, reps):
    f()  # warm-up (JIT, buffers)
    t = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - t) / reps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--blocks", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from distributed import Client, LocalCluster

    from linlap import KNNGraph
    from linlap.datasets import make_text_corpus
    from linlap.graph.reorder import locality_order
    from linlap.distributed import (DistributedNormalOperator, csr_row_blocks, lapsvm_fit,
                                    laprls_fit)
    from linlap.distributed.operator import _backward, _forward
    from linlap.solvers import laprls_linear, lapsvm_newton
    from linlap.solvers._problem import pm1_targets
    from linlap.solvers.normal_operator import NormalOperator

    warnings.simplefilter("ignore")
    X, y = make_text_corpus(args.n, random_state=args.seed)
    n, d = X.shape
    rng = np.random.default_rng(args.seed)
    labeled = np.sort(rng.choice(n, 1000, replace=False))
    T = pm1_targets(y[labeled], 2)
    t = time.perf_counter()
    graph = KNNGraph(n_neighbors=args.k, random_state=args.seed).fit(X)
    print(f"n={n} d={d} nnz={X.nnz} graph {time.perf_counter() - t:.1f} s, "
          f"numba threads on the client: {os.environ.get('NUMBA_NUM_THREADS', 'default')}")
    gA, gI = 1e-4, 10.0
    l = labeled.size
    kw = dict(alpha=gA * l, beta=gI * graph.scale_ * l)
    Z = rng.standard_normal((d + 1, 1))

    # the same graph with its nodes in a locality order (what X's rows would be sorted by)
    order = getattr(graph, "node_order_", None)
    if order is None:
        order = locality_order(graph.adjacency_)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(n)
    graph_ord = SimpleNamespace(adjacency_=graph.adjacency_[order][:, order].tocsr(),
                                degree_=graph.degree_[order], normalized=graph.normalized,
                                power=graph.power, n_samples_fit_=n,
                                laplacian_matvec=lambda F: graph.laplacian_matvec(F[inverse])[order])

    local = NormalOperator(X, labeled, graph.laplacian_matvec, **kw)
    out = np.empty_like(Z)
    t_local = timed(lambda: local.matvec(Z, out=out), args.reps)
    t_lap = timed(lambda: graph.laplacian_matvec(np.ones((n, 1))), args.reps)
    ref_AZ = local.matvec(Z)

    cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                           dashboard_address=None, env={"NUMBA_NUM_THREADS": "1"})
    client = Client(cluster)
    rows = [("local", t_local, None, None, None, None)]
    model = []
    for B in args.blocks:
        op = DistributedNormalOperator(csr_row_blocks(X, B), labeled, graph.laplacian_matvec,
                                       client=client, **kw)
        err = np.abs(op.matvec(Z) - ref_AZ).max() / np.abs(ref_AZ).max()
        t_mv = timed(lambda: op.matvec(Z), args.reps)
        F = op.forward(Z)
        t_fwd = timed(lambda: op.forward(Z), args.reps)
        t_bwd = timed(lambda: op.backward(F), args.reps)
        moved = 8 * (2 * n + 2 * B * (d + 1))
        rows.append((f"dask B={B}", t_mv, t_fwd, t_bwd, moved, err))
        # the pieces of the model: latency of a task wave, compute of one block
        t_wave = timed(lambda: client.gather([client.submit(_noop, b, pure=False)
                                              for b in op._blocks]), 3 * args.reps)
        Xb = csr_row_blocks(X, B)[0]
        Ub = np.ones((Xb.shape[0], 1))
        t_blk = timed(lambda: (_forward(Xb, Z, True), _backward(Xb, Ub, True)), args.reps)
        model.append((B, t_wave, t_blk, moved))
        op.release()
        # the graph term on the workers (halo exchange), rows in X's order and in the
        # graph's locality order (X's rows permuted, the same problem renumbered)
        for name, Xo, go, rows_o in (("halo", X, graph, labeled),
                                     ("halo, ordered", X[order], graph_ord, inverse[labeled])):
            op = DistributedNormalOperator(csr_row_blocks(Xo, B), rows_o, None, client=client,
                                           graph=go, **kw)
            err = np.abs(op.matvec(Z) - ref_AZ).max() / np.abs(ref_AZ).max()
            t_mv = timed(lambda: op.matvec(Z), args.reps)
            halo = int(op.halo_sizes.sum())
            moved = 8 * (graph.power * halo + 2 * B * (d + 1))
            rows.append((f"dask B={B} {name}", t_mv, None, None, moved, err))
            print(f"B={B} {name}: halo rows per power {halo} ({halo / n:.3f} n), "
                  f"{8 * graph.power * halo / 1e6:.2f} MB between workers per product")
            op.release()

    print(f"\nproduct A z (c = 1 column), mean of {args.reps}; graph term alone "
          f"{t_lap * 1e3:.1f} ms (on the client in the dask rows)")
    print(f"{'operator':<22}{'A z ms':>9}{'/ local':>9}{'fwd ms':>9}{'bwd ms':>9}"
          f"{'MB moved':>10}{'rel. diff':>11}")
    for name, tm, tf, tb, mv, err in rows:
        print(f"{name:<22}{tm * 1e3:9.1f}{tm / t_local:9.2f}"
              + (f"{tf * 1e3:9.1f}{tb * 1e3:9.1f}" if tf else f"{'':>18}")
              + (f"{mv / 1e6:10.2f}{err:11.1e}" if mv else ""))

    print("\nmodel of one dask iteration (2 workers): 2 task waves + graph term + "
          "ceil(B/2) blocks' compute (measured pieces, ms); rest = measured - sum, per MB moved")
    print(f"{'B':>3}{'wave':>8}{'block fwd+bwd':>15}{'graph':>8}{'sum':>8}{'measured':>10}"
          f"{'MB moved':>10}{'rest ms/MB':>12}")
    for (B, t_wave, t_blk, moved), row in zip(model, rows[1::3]):
        est = 2 * t_wave + t_lap + -(-B // 2) * t_blk
        print(f"{B:3d}{t_wave * 1e3:8.1f}{t_blk * 1e3:15.1f}{t_lap * 1e3:8.1f}{est * 1e3:8.1f}"
              f"{row[1] * 1e3:10.1f}{moved / 1e6:10.2f}"
              f"{(row[1] - est) * 1e3 / (moved / 1e6):12.1f}")

    fit = dict(gamma_A=gA, gamma_I=gI, tol=args.tol, max_iter=1000)
    t = time.perf_counter()
    ref = laprls_linear(X, T, labeled, graph.laplacian_matvec, scale=graph.scale_, **fit)
    t_ref = time.perf_counter() - t
    B = args.blocks[0]
    for on_workers in (False, True):
        t = time.perf_counter()
        sol = laprls_fit(csr_row_blocks(X, B), T, labeled, graph, client=client,
                         graph_on_workers=on_workers, **fit)
        t_sol = time.perf_counter() - t
        dcoef = np.abs(sol.coef - ref.coef).max()
        agree = np.mean((sol.decision > 0) == (ref.decision > 0))
        print(f"\nLapRLS fit, tol={args.tol}: local {t_ref:.1f} s / {ref.n_iter} it, "
              f"dask B={B}{' halo' if on_workers else ''} {t_sol:.1f} s / {sol.n_iter} it; "
              f"max|Δcoef| = {dcoef:.1e} (max|coef| = {np.abs(ref.coef).max():.1e}), max|Δf| = "
              f"{np.abs(sol.decision - ref.decision).max():.1e}, sign agreement {agree:.6f}")
    svm = dict(gamma_A=gA, gamma_I=gI, tol=args.tol)
    t = time.perf_counter()
    ref = lapsvm_newton(X, T, labeled, graph.laplacian_matvec, scale=graph.scale_, **svm)
    t_ref = time.perf_counter() - t
    t = time.perf_counter()
    sol = lapsvm_fit(csr_row_blocks(X, B), T, labeled, graph, client=client, **svm)
    t_sol = time.perf_counter() - t
    agree = np.mean((sol.decision > 0) == (ref.decision > 0))
    print(f"LapSVM fit, tol={args.tol}: local {t_ref:.1f} s / {ref.n_iter} Newton steps, "
          f"{ref.state['cg_iter']} CG it, dask B={B} {t_sol:.1f} s / {sol.n_iter} steps, "
          f"{sol.state['cg_iter']} CG it; max|Δcoef| = {np.abs(sol.coef - ref.coef).max():.1e}, "
          f"sign agreement {agree:.6f}")
    peak = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    print("peak resident memory (GB): client "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f}, workers "
          + ", ".join(f"{v / 2**20:.2f}" for v in peak.values()))
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
