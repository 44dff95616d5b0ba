"""Linear regularised spectral clustering (seed 001 §5.4) of 20 Newsgroups by top-level group,
against scikit-learn's SpectralClustering and KMeans on the same TF-IDF.

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=. \
        python bench/spectral.py --data-dir DATA [--n 0] [--reg 1e-4,1e-3,1e-2]

Data: all 18,846 posts of ``20news-bydate.tar.gz`` (train then test; ``--n N`` keeps a
random subsample of N for all methods), TF-IDF by ``linlap.text.make_vectorizer``
fitted on them. Truth: the top-level group, the first dot-separated component of the
newsgroup name — alt (1 group), comp (5), misc (1), rec (4), sci (4), soc (1),
talk (4): 7 clusters.

Methods, each with n_clusters = 7 and ``random_state=0``:

* ``LaplacianSpectralClustering(kernel='linear')`` over ``KNNGraph(random_state=0)``
  (library defaults: 50-NN cosine, normalised Laplacian, p = 5), 7 eigenfunctions
  then k-means on the row-normalised embedding (the default), for each ``--reg``; the
  last column gives k-means on the same embedding without the row normalisation
  (``normalize_embedding=False``); the graph time is reported once (it is shared);
* ``sklearn.cluster.SpectralClustering(affinity='nearest_neighbors', n_neighbors=50,
  eigen_solver=--sklearn-eigen-solver)`` (its kNN graph on the same unit rows, Euclidean
  = cosine order; k-means labels). Its default ARPACK solver factorises the shifted
  Laplacian (shift-invert), which on the 18,846-post graph did not finish in 10 minutes
  on the test machine; ``lobpcg`` (scikit-learn's option for large graphs) does;
* ``sklearn.cluster.KMeans(n_init=10)`` on the TF-IDF rows.

Adjusted Rand index against the 7 top-level groups, and wall times in the same run
(the vectoriser excluded). The extra row "fit train / predict test" fits the
linear clustering on the 11,314 training posts (graph on them) and clusters the 7,532
test posts by the out-of-sample extension; its ARI is on the test posts.
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.metrics import adjusted_rand_score

from linlap import KNNGraph, LaplacianSpectralClustering
from linlap.datasets import load_20newsgroups
from linlap.text import make_vectorizer


def top_level(bunch):
    names = np.array([t.split(".")[0] for t in bunch.target_names])
    groups, y = np.unique(names[bunch.target], return_inverse=True)
    return y, groups


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=os.environ.get("LINLAP_DATA"))
    ap.add_argument("--n", type=int, default=0, help="subsample size (0: all posts)")
    ap.add_argument("--reg", default="1e-4,1e-3,1e-2")
    ap.add_argument("--skip-sklearn-spectral", action="store_true")
    ap.add_argument("--sklearn-eigen-solver", default="arpack",
                    choices=["arpack", "lobpcg", "amg"])
    args = ap.parse_args()
    if not args.data_dir:
        sys.exit("error: pass --data-dir or set LINLAP_DATA to the folder holding "
                 "20news-bydate.tar.gz")
    archive = Path(args.data_dir) / "20news-bydate.tar.gz"
    train = load_20newsgroups(archive, "train")
    b = load_20newsgroups(archive, "all")
    y, groups = top_level(b)
    n_train = len(train.data)
    idx = np.arange(len(b.data))
    if args.n:
        idx = np.sort(np.random.default_rng(0).choice(idx, args.n, replace=False))
    docs = [b.data[i] for i in idx]
    y = y[idx]
    X = make_vectorizer().fit_transform(docs).tocsr()
    k = groups.size
    print(f"20 Newsgroups, {X.shape[0]} posts × {X.shape[1]} TF-IDF features, "
          f"{k} top-level groups: " + ", ".join(
              f"{g} {np.sum(y == i)}" for i, g in enumerate(groups)) + "\n")
    rows = []

    t = time.perf_counter()
    g = KNNGraph(random_state=0).fit(X)
    t_graph = time.perf_counter() - t
    for reg in [float(v) for v in args.reg.split(",")]:
        t = time.perf_counter()
        clu = LaplacianSpectralClustering(k, reg=reg, graph=g, random_state=0).fit(X)
        dt = time.perf_counter() - t
        # the same eigenfunctions, k-means without the row normalisation
        raw = KMeans(k, n_init=10, random_state=0).fit_predict(clu.embedding_)
        rows.append((f"linlap LaplacianSpectralClustering linear, reg={reg:g} "
                     f"({clu.n_iter_} LOBPCG iterations)",
                     adjusted_rand_score(y, clu.labels_), dt, t_graph,
                     adjusted_rand_score(y, raw)))
        print(rows[-1], file=sys.stderr, flush=True)

    if not args.skip_sklearn_spectral:
        t = time.perf_counter()
        sc = SpectralClustering(k, affinity="nearest_neighbors", n_neighbors=50,
                                eigen_solver=args.sklearn_eigen_solver, random_state=0).fit(X)
        rows.append((f"sklearn SpectralClustering (50-NN affinity, "
                     f"eigen_solver={args.sklearn_eigen_solver!r})",
                     adjusted_rand_score(y, sc.labels_), time.perf_counter() - t, None))
        print(rows[-1], file=sys.stderr, flush=True)

    t = time.perf_counter()
    km = KMeans(k, n_init=10, random_state=0).fit(X)
    rows.append(("sklearn KMeans (n_init=10)", adjusted_rand_score(y, km.labels_),
                 time.perf_counter() - t, None))
    print(rows[-1], file=sys.stderr, flush=True)
    rows = [r if len(r) == 5 else r + (None,) for r in rows]

    if not args.n:  # out of sample: fit on train, cluster the test posts
        best = max((r for r in rows if r[0].startswith("linlap")), key=lambda r: r[1])
        reg = float(best[0].split("reg=")[1].split(" ")[0])
        tr, te = np.arange(n_train), np.arange(n_train, X.shape[0])
        t = time.perf_counter()
        gt = KNNGraph(random_state=0).fit(X[tr])
        tg = time.perf_counter() - t
        t = time.perf_counter()
        clu = LaplacianSpectralClustering(k, reg=reg, graph=gt, random_state=0).fit(X[tr])
        pred = clu.predict(X[te])
        rows.append((f"linlap linear, reg={reg:g}: fit train ({tr.size}), predict test "
                     f"({te.size}); ARI on test", adjusted_rand_score(y[te], pred),
                     time.perf_counter() - t, tg, None))

    print("| method | adjusted Rand | time s (clustering) | graph time s | adjusted Rand, "
          "embedding rows not normalised |")
    print("|---|---|---|---|---|")
    for name, ari, dt, tg, ari_raw in rows:
        print(f"| {name} | {ari:.3f} | {dt:.1f} | {'-' if tg is None else f'{tg:.1f}'} | "
              f"{'-' if ari_raw is None else f'{ari_raw:.3f}'} |")


if __name__ == "__main__":
    main()
