"""Scaling benchmark: fit time, peak memory and test error against n.

For each n, a fresh subprocess (so each peak RSS is its own) generates a synthetic corpus
with ``linlap.datasets.make_text_corpus`` (n training rows + 10,000 test rows; ~80 nnz per
row, 100,000 features, 2 classes), keeps 1,000 labels, builds the default large-n graph
(``KNNGraph(n_neighbors=K)``: SVD embedding + pynndescent above 50,000 rows) and fits
LapRLSClassifier and LapSVMClassifier on it; LinearSVC on the 1,000 labels is the
supervised baseline. Times are split into generate (= vectorise) / graph / solve.

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=2 PYTHONPATH=. \\
        python bench/scale.py --n 100000 300000 1000000 2000000 [--k 10] [--plot bench/scale.png]

Each run appends its rows to ``--json``; ``--replot --plot bench/scale.png`` redraws the plot
from the last row per n there (runs made one n at a time).

``--imdb`` runs the real IMDB pipeline instead (75,000 training reviews incl. the 50,000
unlabeled, 1,000 labels, 25,000 test reviews).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _data import add_data_dir, archive as data_archive  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _peak_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # Linux: KiB


def run_one(n, k, n_labeled, seed):
    """Everything for one n, in this process; returns a dict."""
    from sklearn.svm import LinearSVC

    from linlap import KNNGraph, LapRLSClassifier, LapSVMClassifier
    from linlap.datasets import make_text_corpus

    warnings.simplefilter("ignore")
    n_test = 10_000
    out = {"n": n, "k": k}
    t = time.perf_counter()
    X_all, y_all = make_text_corpus(n + n_test, random_state=seed)
    X, y_true, X_test, y_test = X_all[:n], y_all[:n], X_all[n:], y_all[n:]
    del X_all
    out["generate_s"] = time.perf_counter() - t
    out["nnz_per_row"] = X.nnz / n
    out["d"] = X.shape[1]
    rng = np.random.RandomState(seed)
    lab = rng.choice(n, n_labeled, replace=False)
    y = np.full(n, -1)
    y[lab] = y_true[lab]

    t = time.perf_counter()
    graph = KNNGraph(n_neighbors=k, random_state=seed, n_jobs=2, verbose=True).fit(X)
    out["graph_s"] = time.perf_counter() - t
    out["graph_steps"] = {key: round(v, 1) for key, v in graph.build_time_.items()}
    out["algorithm"], out["space"], out["recall"] = graph.algorithm_, graph.space_, graph.recall_
    out["peak_gb_graph"] = _peak_gb()

    svc = LinearSVC(random_state=0).fit(X[lab], y_true[lab])
    out["linearsvc_err"] = 100 * np.mean(svc.predict(X_test) != y_test)
    for name, est in [("laprls", LapRLSClassifier(graph=graph)),
                      ("lapsvm", LapSVMClassifier(graph=graph))]:
        t = time.perf_counter()
        est.fit(X, y)
        out[f"{name}_s"] = time.perf_counter() - t
        out[f"{name}_iter"] = int(est.n_iter_)
        out[f"{name}_err"] = 100 * np.mean(est.predict(X_test) != y_test)
    out["peak_gb"] = _peak_gb()
    return out


def run_imdb(k, n_labeled, seed, data_dir):
    """The real IMDB pipeline: vectorise train + unsup, graph, fit, test on the test set."""
    from sklearn.svm import LinearSVC

    from linlap import KNNGraph, LapRLSClassifier, LapSVMClassifier
    from linlap.datasets import load_imdb
    from linlap.text import make_vectorizer

    warnings.simplefilter("ignore")
    archive = data_archive(data_dir, "imdb")
    t0 = time.perf_counter()
    train, unsup, test = (load_imdb(archive, s) for s in ("train", "unsup", "test"))
    out = {"n": len(train.data) + len(unsup.data), "k": k, "read_s": time.perf_counter() - t0}
    t = time.perf_counter()
    vec = make_vectorizer()
    X = vec.fit_transform(train.data + unsup.data)
    X_test = vec.transform(test.data)
    out["generate_s"] = time.perf_counter() - t
    out["nnz_per_row"], out["d"] = X.nnz / X.shape[0], X.shape[1]
    lab = np.random.RandomState(seed).choice(len(train.data), n_labeled, replace=False)
    y = np.full(X.shape[0], -1)
    y[lab] = train.target[lab]
    t = time.perf_counter()
    graph = KNNGraph(n_neighbors=k, random_state=seed, n_jobs=2, verbose=True).fit(X)
    out["graph_s"] = time.perf_counter() - t
    out["algorithm"], out["space"], out["recall"] = graph.algorithm_, graph.space_, graph.recall_
    svc = LinearSVC(random_state=0).fit(X[lab], train.target[lab])
    out["linearsvc_err"] = 100 * np.mean(svc.predict(X_test) != test.target)
    for name, est in [("laprls", LapRLSClassifier(graph=graph)),
                      ("lapsvm", LapSVMClassifier(graph=graph))]:
        t = time.perf_counter()
        est.fit(X, y)
        out[f"{name}_s"] = time.perf_counter() - t
        out[f"{name}_iter"] = int(est.n_iter_)
        out[f"{name}_err"] = 100 * np.mean(est.predict(X_test) != test.target)
    out["total_s"] = time.perf_counter() - t0
    out["peak_gb"] = _peak_gb()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--labels", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plot", default=None, help="write a log-log PNG of time against n")
    ap.add_argument("--json", default=os.path.join(HERE, "_cache", "scale.jsonl"),
                    help="append each result as a JSON line here")
    ap.add_argument("--imdb", action="store_true", help="the real IMDB pipeline instead")
    add_data_dir(ap)
    ap.add_argument("--replot", action="store_true",
                    help="only redraw --plot from the rows already in --json")
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.one is not None:  # child process
        print("RESULT " + json.dumps(run_one(args.one, args.k, args.labels, args.seed)),
              flush=True)
        return
    if args.replot:  # the plot from the synthetic rows already in --json (last run per n)
        by_n = {}
        with open(args.json) as fh:
            for line in fh:
                r = json.loads(line)
                if "read_s" not in r and r["k"] == args.k:
                    by_n[r["n"]] = r
        plot_rows(list(by_n.values()), args.plot)
        return
    if args.imdb:
        r = run_imdb(args.k, args.labels, args.seed, args.data_dir)
        print(json.dumps(r))
        print(f"IMDB ({r['n']:,} training reviews, {args.labels} labels): read {r['read_s']:.0f} s,"
              f" vectorise {r['generate_s']:.0f} s, graph {r['graph_s']:.0f} s "
              f"({r['algorithm']}/{r['space']}, recall {r['recall']}), LapRLS "
              f"{r['laprls_s']:.0f} s, LapSVM {r['lapsvm_s']:.0f} s; whole pipeline "
              f"{r['total_s']:.0f} s, peak {r['peak_gb']:.1f} GB. Test error: LinearSVC "
              f"{r['linearsvc_err']:.1f} %, LapRLS {r['laprls_err']:.1f} %, LapSVM "
              f"{r['lapsvm_err']:.1f} %")
        return

    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    rows = []
    print("| n | nnz/row | graph | recall@k | generate s | graph s | LapRLS s (CG it) "
          "| LapSVM s (Newton) | peak GB | err LinearSVC | err LapRLS | err LapSVM |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.n:
        cmd = [sys.executable, __file__, "--one", str(n), "--k", str(args.k),
               "--labels", str(args.labels), "--seed", str(args.seed)]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        if proc.returncode or not line:
            print(f"| {n:,} | failed (exit {proc.returncode}) |")
            continue
        r = json.loads(line[0][7:])
        rows.append(r)
        with open(args.json, "a") as fh:
            fh.write(json.dumps(r) + "\n")
        rec = "exact" if r["recall"] is None else f"{r['recall']:.3f}"
        print(f"| {n:,} | {r['nnz_per_row']:.0f} | {r['algorithm']}/{r['space']} k={r['k']} "
              f"| {rec} | {r['generate_s']:.0f} | {r['graph_s']:.0f} "
              f"| {r['laprls_s']:.0f} ({r['laprls_iter']}) | {r['lapsvm_s']:.0f} "
              f"({r['lapsvm_iter']}) | {r['peak_gb']:.1f} | {r['linearsvc_err']:.1f} "
              f"| {r['laprls_err']:.1f} | {r['lapsvm_err']:.1f} |", flush=True)
    if args.plot and rows:
        plot_rows(rows, args.plot)


def plot_rows(rows, path):
    """Log-log PNG of each step's time against n."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(rows, key=lambda r: r["n"])
    ns = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(5, 4))
    for key, label in [("generate_s", "generate"), ("graph_s", "graph"),
                       ("laprls_s", "LapRLS solve"), ("lapsvm_s", "LapSVM solve")]:
        ax.loglog(ns, [r[key] for r in rows], "o-", label=label)
    ax.loglog(ns, [rows[0]["graph_s"] * n / ns[0] for n in ns], "k:", label="∝ n")
    ax.set_xlabel("documents n")
    ax.set_ylabel("seconds")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"wrote {path}")

if __name__ == "__main__":
    main()
