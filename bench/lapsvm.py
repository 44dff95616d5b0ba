"""LapSVM against LapRLS and peers on PCMAC (50 labels) and 20 Newsgroups (5 labels per
class), seeded draws, test split held out.

    python bench/lapsvm.py [--draws 10] [--data-dir DATA] [--sets pcmac,20ng]

Prints markdown tables (mean ± std test error %, mean fit time, Newton steps) for
bench/RESULTS.md. Every method sees the same TF-IDF (linlap.text.make_vectorizer fitted on
the training split) and the same labels. The graph-based linlap estimators share one
KNNGraph built on the training split (its build time is reported once); peers get the
same rows, labeled and unlabeled.
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.semi_supervised import LabelSpreading, SelfTrainingClassifier
from sklearn.svm import LinearSVC

from linlap import KNNGraph, LapRLSClassifier, LapSVMClassifier
from linlap.datasets import load_20newsgroups, load_pcmac, mask_labels
from linlap.text import make_vectorizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _data import add_data_dir, archive as data_archive  # noqa: E402



def load(name, data_dir):
    if name == "pcmac":
        return load_pcmac("train"), load_pcmac("test"), dict(n_labeled=50, per_class=False)
    path = data_archive(data_dir, "20ng")
    return (load_20newsgroups(path, "train"), load_20newsgroups(path, "test"),
            dict(n_labeled=5, per_class=True))


def run_set(name, draws, data_dir):
    train, test, draw = load(name, data_dir)
    t = time.perf_counter()
    vec = make_vectorizer()
    X, Xt = vec.fit_transform(train.data), vec.transform(test.data)
    t_vec = time.perf_counter() - t
    y, yt = train.target, test.target
    t = time.perf_counter()
    graph = KNNGraph(random_state=0).fit(X)
    t_graph = time.perf_counter() - t
    print(f"\n### {name}: {X.shape[0]} training docs, {Xt.shape[0]} test, {X.shape[1]} terms, "
          f"{len(np.unique(y))} classes, labels: {draw}\n")
    print(f"vectorize {t_vec:.1f} s; graph ({graph.n_neighbors}-NN, {graph.algorithm_}) "
          f"{t_graph:.1f} s (shared by the linlap rows below, not included in their fit time)\n")
    print("| method | test error % (mean ± std) | fit time s | iterations |")
    print("|---|---|---|---|")
    lab = lambda ys: ys != -1  # noqa: E731
    methods = [
        ("LapSVMClassifier (newton, defaults)", lambda: LapSVMClassifier(graph=graph)),
        ("LapRLSClassifier (defaults)", lambda: LapRLSClassifier(graph=graph)),
    ]
    if X.shape[1] <= 10000:
        methods.append(("LapSVMClassifier (tinv)", lambda: LapSVMClassifier(graph=graph,
                                                                             solver="tinv")))
    peers = [
        ("LinearSVC (labels only)", None),
        # the peers' (near-)best settings on PCMAC (bench/pcmac.py --peer-sweep)
        ("LabelSpreading(knn, k=20, alpha=0.2)",
         lambda: LabelSpreading(kernel="knn", n_neighbors=20, alpha=0.2)),
        ("SelfTraining(LogisticRegression(C=10), threshold=0.9)",
         lambda: SelfTrainingClassifier(LogisticRegression(C=10), threshold=0.9)),
    ]
    results = {}
    for label, make in methods + peers:
        errs, times, iters = [], [], []
        for seed in range(draws):
            ys = mask_labels(y, draw["n_labeled"], per_class=draw["per_class"], random_state=seed)
            t = time.perf_counter()
            if make is None:
                model = LinearSVC().fit(X[lab(ys)], ys[lab(ys)])
            else:
                model = make().fit(X, ys)
            times.append(time.perf_counter() - t)
            iters.append(getattr(model, "n_iter_", np.nan))
            errs.append(100 * np.mean(model.predict(Xt) != yt))
        results[label] = (np.mean(errs), np.std(errs), np.mean(times), np.nanmax(iters)
                          if not np.all(np.isnan(np.asarray(iters, float))) else np.nan)
        m, s, tm, it = results[label]
        it_txt = "" if np.isnan(it) else f"max {int(it)}"
        print(f"| {label} | {m:.1f} ± {s:.1f} | {tm:.2f} | {it_txt} |", flush=True)
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=10)
    add_data_dir(ap)
    ap.add_argument("--sets", default="pcmac,20ng")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    for name in args.sets.split(","):
        run_set(name, args.draws, args.data_dir)


if __name__ == "__main__":
    main()
