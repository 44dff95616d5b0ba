"""Distributed kNN graph (``linlap.distributed.fit_graph``) against the single-machine one.

On the synthetic corpus (``linlap.datasets.make_text_corpus``, n documents), side by
side in the same run:

* ``single``: ``KNNGraph(space='svd', algorithm='nndescent')`` fitted in this process
  (pynndescent over all n rows, ``n_jobs`` threads), for each ``--jobs``;
* ``dask B=…``: :func:`linlap.distributed.fit_graph` with X as a dask array of B CSR row
  blocks on a LocalCluster of ``--workers`` processes × 1 thread (one pynndescent index
  per block, every block queried against every other block's index, merged to the top k).

All use the same seed, hence the same SVD (fitted on the same sample) and the same
recall sample: ``recall_`` of each is the tie-aware recall@k against exact neighbours in
that same SVD space on the same ``--recall-sample`` rows; "same nbrs" is the fraction
of the n k neighbour pairs shared with the first single-machine graph. pynndescent's numba
compilation is paid before the timing, in this process and in every worker (a small
warm-up fit of each kind), and reported separately.

    NUMBA_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=. \\
        python bench/dask_graph.py --n 100000
"""

import argparse
import time
import warnings

import numpy as np
import scipy.sparse as sp


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--blocks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2],
                    help="n_jobs of the single-machine KNNGraph (one row each)")
    ap.add_argument("--recall-sample", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import dask
    import dask.array as da
    from distributed import Client, LocalCluster

    from linlap import KNNGraph
    from linlap.datasets import make_text_corpus
    from linlap.distributed import csr_row_blocks, fit_graph

    def as_dask(blocks):
        return da.concatenate([da.from_delayed(dask.delayed(b), b.shape, dtype=b.dtype,
                                               meta=b[:0]) for b in blocks])

    warnings.simplefilter("ignore")
    t = time.perf_counter()
    X, _ = make_text_corpus(args.n, random_state=args.seed)
    X = X.tocsr()
    n, d = X.shape
    print(f"n={n} d={d} nnz={X.nnz} generated in {time.perf_counter() - t:.1f} s; "
          f"k={args.k}, recall sample {args.recall_sample}")
    params = dict(n_neighbors=args.k, space="svd", algorithm="nndescent",
                  recall_sample=args.recall_sample, random_state=args.seed)

    cluster = LocalCluster(n_workers=args.workers, processes=True, threads_per_worker=1,
                           dashboard_address=None, env={"NUMBA_NUM_THREADS": "1"})
    client = Client(cluster)
    # numba warm-up: this process, then every worker (one index per worker, queries)
    Xw, _ = make_text_corpus(4000, n_features=20_000, random_state=1)
    t = time.perf_counter()
    KNNGraph(**dict(params, recall_sample=0)).fit(Xw)
    t_jit_local = time.perf_counter() - t
    t = time.perf_counter()
    fit_graph(KNNGraph(**dict(params, recall_sample=0)), as_dask(csr_row_blocks(Xw, 2)),
              client=client)
    t_jit_dask = time.perf_counter() - t
    print(f"warm-up (numba compilation): single {t_jit_local:.1f} s, dask {t_jit_dask:.1f} s")

    rows = []
    ref = None
    for jobs in args.jobs:
        t = time.perf_counter()
        g = KNNGraph(**params, n_jobs=jobs).fit(X)
        rows.append((f"single n_jobs={jobs}", time.perf_counter() - t, g))
        if ref is None:
            ref = g
    for B in args.blocks:
        Xd = as_dask(csr_row_blocks(X, B))
        t = time.perf_counter()
        g = fit_graph(KNNGraph(**params), Xd, client=client)
        rows.append((f"dask B={B}", time.perf_counter() - t, g))

    def directed(g):  # the k-NN lists as a 0/1 matrix
        return sp.csr_matrix((np.ones(n * args.k), g.neighbors_.ravel(),
                              np.arange(0, n * args.k + 1, args.k)), shape=(n, n))

    t0 = rows[0][1]
    print(f"\n{'graph':<18}{'total s':>9}{'/ first':>9}{'svd s':>8}{'search s':>10}"
          f"{'recall s':>10}{'recall@k':>10}{'repaired':>10}{'same nbrs':>11}")
    for name, tt, g in rows:
        bt = g.build_time_
        same = directed(g).multiply(directed(ref)).sum() / (n * args.k)
        print(f"{name:<18}{tt:9.1f}{tt / t0:9.2f}{bt.get('svd', 0):8.1f}{bt['search']:10.1f}"
              f"{bt.get('recall', 0):10.1f}{g.recall_:10.4f}{g.n_repaired_:10d}{same:11.3f}")
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
