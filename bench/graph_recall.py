"""Recall and build time of KNNGraph's approximate (pynndescent) search.

Builds the exact k-NN graph of a real corpus once (ground truth for every
row), then the approximate graph under several pynndescent settings, and
prints recall@k (over all rows, tie-aware: a returned neighbour counts when
it is no farther than the true k-th neighbour) and the search time.

    PYTHONPATH=. python bench/graph_recall.py                 # 20 Newsgroups, all 18,846 docs
    PYTHONPATH=. python bench/graph_recall.py --corpus imdb   # IMDB train, 25,000 reviews
    PYTHONPATH=. python bench/graph_recall.py --quick         # defaults only

Corpora are read from --data-dir (or $LINLAP_DATA); the TF-IDF matrix
is cached in bench/_cache/.  The first pynndescent call of a process pays a
numba JIT compilation; it is timed separately ("warm-up") and excluded from
the per-configuration times.
"""

import argparse
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

from linlap.graph import KNNGraph

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _data import add_data_dir, archive as data_archive  # noqa: E402

DATA = None  # --data-dir / LINLAP_DATA, set by main()
CACHE = os.path.join(HERE, "_cache")


def load_corpus(name):
    """TF-IDF (linlap.text.make_vectorizer) of a real corpus, empty rows dropped, cached."""
    from linlap.datasets import load_20newsgroups, load_imdb
    from linlap.text import make_vectorizer

    os.makedirs(CACHE, exist_ok=True)
    cache = os.path.join(CACHE, f"{name}_tfidf.npz")
    if os.path.exists(cache):
        return sp.load_npz(cache).tocsr()
    if name == "20news":
        docs = load_20newsgroups(data_archive(DATA, "20ng"), "all").data
    elif name == "imdb":
        docs = load_imdb(data_archive(DATA, "imdb"), "train").data
    else:
        raise SystemExit(f"unknown corpus {name}")
    X = make_vectorizer().fit_transform(docs).tocsr()
    X = X[np.diff(X.indptr) > 0]  # KNNGraph refuses empty documents
    sp.save_npz(cache, X)
    return X


def tie_aware_recall(g, exact):
    return float(np.mean(g.distances_ <= exact.distances_[:, -1:] + 1e-9))


def set_recall(g, exact):
    a, b = np.sort(g.neighbors_, axis=1), np.sort(exact.neighbors_, axis=1)
    k = a.shape[1]
    hits = sum(np.intersect1d(x, y, assume_unique=True).size for x, y in zip(a, b))
    return hits / (k * a.shape[0])


def main():
    global DATA
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_dir(ap)
    ap.add_argument("--corpus", default="20news", choices=["20news", "imdb"])
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--n-jobs", type=int, default=-1)
    ap.add_argument("--quick", action="store_true", help="only the default settings")
    ap.add_argument("--no-svd", action="store_true", help="skip the space='svd' rows")
    ap.add_argument("--n-search", default="",
                    help="comma-separated n_search_neighbors values to try (instead of the defaults "
                         "and the grid)")
    args = ap.parse_args()
    DATA = args.data_dir
    k = args.k

    t0 = time.perf_counter()
    X = load_corpus(args.corpus)
    print(f"# corpus {args.corpus}: {X.shape[0]} docs x {X.shape[1]} terms, {X.nnz} nonzeros "
          f"({X.nnz / X.shape[0]:.0f}/doc); loaded in {time.perf_counter() - t0:.1f} s; "
          f"k = {k}, n_jobs = {args.n_jobs}, {os.cpu_count()} cores", flush=True)

    common = dict(n_neighbors=k, n_jobs=args.n_jobs, random_state=0)
    c0 = time.process_time()
    exact = KNNGraph(algorithm="exact", **common).fit(X)
    print(f"exact search (tfidf): {exact.build_time_['search']:.1f} s wall, "
          f"{time.process_time() - c0:.0f} s CPU", flush=True)

    t0 = time.perf_counter()
    KNNGraph(algorithm="nndescent", recall_sample=0, **common).fit(X[:2000])
    print(f"pynndescent warm-up (numba JIT, 2000 rows): {time.perf_counter() - t0:.1f} s",
          flush=True)

    configs = [("defaults", {}, None)]
    if args.n_search:
        configs = [(f"n_search={v}", {}, int(v)) for v in args.n_search.split(",")]
    elif not args.quick:
        configs += [
            ("n_search=11 (pynndescent-ish)", {}, 11),
            ("n_search=20", {}, 20),
            ("n_search=30, max_candidates=15", {"max_candidates": 15}, 30),
            ("n_search=30, max_candidates=20", {"max_candidates": 20}, 30),
            ("n_search=30 (=max(3k,30))", {}, 30),
            ("n_search=30, n_trees=4", {"n_trees": 4}, 30),
            ("n_search=30, delta=0.01", {"delta": 0.01}, 30),
            ("n_search=45, max_candidates=30", {"max_candidates": 30}, 45),
        ]
    print()
    print("| space | setting | search wall s | fit CPU s | recall@k (tie-aware) "
          "| recall@k (set) | sampled recall_ | repaired rows |")
    print("|---|---|---|---|---|---|---|---|")
    for label, kwds, n_search in configs:
        c0 = time.process_time()
        g = KNNGraph(algorithm="nndescent", n_search_neighbors=n_search,
                     nndescent_kwds=kwds or None, recall_sample=1000, **common).fit(X)
        cpu = time.process_time() - c0
        print(f"| tfidf | {label} | {g.build_time_['search']:.1f} | {cpu:.0f} | "
              f"{tie_aware_recall(g, exact):.3f} | {set_recall(g, exact):.3f} | "
              f"{g.recall_:.3f} | {g.n_repaired_} |", flush=True)

    if not args.no_svd:
        c0 = time.process_time()
        svd_exact = KNNGraph(algorithm="exact", space="svd", n_components=100, **common).fit(X)
        cpu = time.process_time() - c0
        print(f"| svd100 | exact (svd step {svd_exact.build_time_['svd']:.1f} s) | "
              f"{svd_exact.build_time_['search']:.1f} | {cpu:.0f} | 1.000 | 1.000 | - | 0 |")
        t0 = time.perf_counter()
        KNNGraph(algorithm="nndescent", space="svd", n_components=20, recall_sample=0,
                 **common).fit(X[:2000])
        warm = time.perf_counter() - t0
        c0 = time.process_time()
        g = KNNGraph(algorithm="nndescent", space="svd", n_components=100,
                     recall_sample=1000, **common).fit(X)
        cpu = time.process_time() - c0
        print(f"| svd100 | defaults (dense warm-up {warm:.0f} s) | "
              f"{g.build_time_['search']:.1f} | {cpu:.0f} | "
              f"{tie_aware_recall(g, svd_exact):.3f} | "
              f"{set_recall(g, svd_exact):.3f} | {g.recall_:.3f} | {g.n_repaired_} |")
        print()
        print(f"SVD-100 neighbours vs TF-IDF neighbours (what the projection changes): "
              f"set recall {set_recall(svd_exact, exact):.3f}")


if __name__ == "__main__":
    main()
