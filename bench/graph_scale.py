"""Which kNN strategy for large n? Build time, peak memory, recall@k and LapRLS test error.

On the synthetic corpus (``linlap.datasets.make_text_corpus``; n training rows + 10,000 test
rows, 1,000 labels), each strategy runs in its own subprocess (separate peak RSS):

* ``tfidf-nnd``: pynndescent on the sparse TF-IDF rows (cosine);
* ``svd-nnd``: pynndescent on a 50-dimensional TruncatedSVD embedding (the default above
  ``exact_max_samples``);
* ``exact``: blocked exact search on TF-IDF — timed on a block of rows and extrapolated
  (it costs n² row pairs), so no graph and no error for it;
* ``exact-full``: the same search over every row (``KNNGraph(algorithm='exact',
  space='tfidf')``, the default up to ``exact_max_samples``), with its graph's errors.

pynndescent compiles its kernels in every new process (not cached); that warm-up (a fit
on 3,000 rows) is timed separately ("JIT s") and left out of "build s". ``--defaults``
fits ``LapRLSClassifier()`` at its defaults instead of γ_I = 10.

Recall@k is measured against exact search *in the space searched* on 200 sampled rows.

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=2 PYTHONPATH=. \\
        python bench/graph_scale.py --n 100000 [--k 10]
"""

import argparse
import json
import resource
import subprocess
import sys
import time
import warnings

import numpy as np


def run(strategy, n, k, seed, defaults=False):
    from sklearn.svm import LinearSVC

    from linlap import KNNGraph, LapRLSClassifier
    from linlap.datasets import make_text_corpus
    from linlap.graph.search import exact_knn as _exact_knn, prepare_input as _prepare_input

    warnings.simplefilter("ignore")
    X_all, y_all = make_text_corpus(n + 10_000, random_state=seed)
    X, y_true, X_test, y_test = X_all[:n], y_all[:n], X_all[n:], y_all[n:]
    del X_all
    out = {"strategy": strategy, "n": n, "k": k}
    if strategy == "exact":
        Xn, _ = _prepare_input(X)
        XT = Xn.T.tocsr()
        rows = np.arange(2000)
        t = time.perf_counter()
        _exact_knn(Xn, k, rows, XT=XT, n_jobs=2)
        out["graph_s"] = (time.perf_counter() - t) * n / rows.size
        out["extrapolated"] = True
        out["peak_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
        return out
    if strategy == "exact-full":
        t = time.perf_counter()
        # space='tfidf': 'auto' would search the SVD space above exact_max_samples
        g = KNNGraph(n_neighbors=k, algorithm="exact", space="tfidf", n_jobs=2).fit(X)
        out["graph_s"] = time.perf_counter() - t
        out["recall"] = 1.0
    else:
        space = "tfidf" if strategy == "tfidf-nnd" else "svd"
        # compile pynndescent's kernels first so the timing is the search, not the JIT
        t = time.perf_counter()
        KNNGraph(n_neighbors=k, algorithm="nndescent", space=space, n_components=20,
                 recall_sample=0, random_state=seed).fit(X[:3000])
        out["jit_s"] = time.perf_counter() - t
        t = time.perf_counter()
        g = KNNGraph(n_neighbors=k, algorithm="nndescent", space=space, random_state=seed,
                     n_jobs=2).fit(X)
        out["graph_s"] = time.perf_counter() - t
        out["recall"] = g.recall_
    out["steps"] = {key: round(v, 1) for key, v in g.build_time_.items()}
    out["peak_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    lab = np.random.RandomState(seed).choice(n, 1000, replace=False)
    y = np.full(n, -1)
    y[lab] = y_true[lab]
    out["homophily"] = float(np.mean(y_true[g.neighbors_] == y_true[:, None]))
    out["linearsvc_err"] = 100 * np.mean(
        LinearSVC(random_state=0).fit(X[lab], y_true[lab]).predict(X_test) != y_test)
    # gamma_I=10: the default when RESULTS' "Graph strategy" table was measured
    est = LapRLSClassifier(graph=g) if defaults else LapRLSClassifier(gamma_I=10.0, graph=g)
    out["laprls_err"] = 100 * np.mean(est.fit(X, y).predict(X_test) != y_test)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100_000])
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--strategies", default="exact,svd-nnd,tfidf-nnd")
    ap.add_argument("--defaults", action="store_true",
                    help="LapRLSClassifier() at its defaults (else gamma_I=10)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    known = {"exact", "exact-full", "svd-nnd", "tfidf-nnd"}
    unknown = set(args.strategies.split(",")) - known
    if unknown:
        sys.exit(f"error: --strategies {sorted(unknown)} not among {sorted(known)}")
    if args.one:
        strategy, n = args.one.split(":")
        print("RESULT " + json.dumps(run(strategy, int(n), args.k, args.seed, args.defaults)),
              flush=True)
        return
    print("| n | strategy | build s | JIT s | peak GB | recall@k (own space) | homophily@k "
          "| err LinearSVC | err LapRLS |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in args.n:
        for strategy in args.strategies.split(","):
            proc = subprocess.run([sys.executable, __file__, "--one", f"{strategy}:{n}",
                                   "--k", str(args.k), "--seed", str(args.seed)]
                                  + ["--defaults"] * args.defaults,
                                  stdout=subprocess.PIPE, text=True)
            line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            if proc.returncode or not line:
                print(f"| {n:,} | {strategy} | failed (exit {proc.returncode}) |")
                continue
            r = json.loads(line[0][7:])
            if r.get("extrapolated"):
                print(f"| {n:,} | exact (k={r['k']}) | {r['graph_s']:.0f} (extrapolated from "
                      f"2,000 rows) | | {r['peak_gb']:.1f} | 1 | | | |", flush=True)
            else:
                jit = f"{r['jit_s']:.0f}" if "jit_s" in r else ""
                print(f"| {n:,} | {strategy} (k={r['k']}) | {r['graph_s']:.0f} | {jit} "
                      f"| {r['peak_gb']:.1f} | {r['recall']:.3f} | {r['homophily']:.3f} "
                      f"| {r['linearsvc_err']:.1f} | {r['laprls_err']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
