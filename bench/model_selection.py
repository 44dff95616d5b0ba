"""Model selection on PCMAC: the LapSVM solution path and warm-started γ grids.

    python bench/model_selection.py [--draws 10] [--part all|accuracy|timing]

Protocol (seed 003's: labels for training plus as many held-out validation labels):
for seeds 0…9 the 50 training labels are ``mask_labels(y, 50, random_state=seed)`` — the
draws of bench/pcmac.py, so the defaults row repeats its 18.5 % — and 50 validation labels
are drawn from the remaining training rows (``default_rng(1000 + seed)``); validation rows
stay unlabeled for training and only score the candidates. Models are trained on the 50
labels only and tested on the PCMAC test split. One default graph (``KNNGraph()``) per
run, shared by every fit.

Timing part: (a) the whole LapSVM path for l = 100 labels after the graph is built
(Q by the n × n push-through, then the events); (b) the 7 × 7 γ_A × γ_I grid of
LapRLSClassifierCV (shifted CG with and without early stopping, per-candidate fits warm
and cold) and of LapSVMClassifierCV (warm and cold), against one cold LapRLSClassifier()
and one cold LapSVMClassifier() fit, timed in ``--rounds`` interleaved rounds (medians).
"""

import argparse
import sys
import time
import warnings

import numpy as np

from linlap import KNNGraph, LapRLSClassifier, LapSVMClassifier
from linlap.datasets import load_pcmac, mask_labels
from linlap.model_selection import (LapRLSClassifierCV, LapSVMClassifierCV,
                                    LapSVMPathClassifier)
from linlap.estimators import lapsvm_path
from linlap.text import make_vectorizer


def draw(y, seed, n_labels=50, n_val=50):
    ys = mask_labels(y, n_labels, random_state=seed)
    rest = np.flatnonzero(ys == -1)
    val = np.random.default_rng(1000 + seed).choice(rest, n_val, replace=False)
    yv = np.full(y.size, -1)
    yv[val] = y[val]
    return ys, yv


def accuracy(args, X, Xt, y, yt, graph):
    methods = {
        # the defaults when RESULTS' "Model selection" tables were measured
        "LapRLSClassifier(gamma_A=1e-4, gamma_I=10)": lambda ys, yv: LapRLSClassifier(
            gamma_A=1e-4, gamma_I=10.0, graph=graph).fit(X, ys),
        "LapSVMPathClassifier(rho=1e-5) (validation)":
            lambda ys, yv: LapSVMPathClassifier(rho=1e-5, graph=graph).fit(
                X, ys, validation=yv),
        "LapSVMPathClassifier(rho=1e-5) (5-fold CV on the 50 labels)":
            lambda ys, yv: LapSVMPathClassifier(rho=1e-5, graph=graph).fit(X, ys),
        "LapRLSClassifierCV 7×7 (validation)":
            lambda ys, yv: LapRLSClassifierCV(graph=graph).fit(X, ys, validation=yv),
        "LapRLSClassifierCV 7×7 patience=5 (validation)":
            lambda ys, yv: LapRLSClassifierCV(graph=graph, patience=5).fit(
                X, ys, validation=yv),
        "LapRLSClassifierCV 7×7 patience=3 (validation)":
            lambda ys, yv: LapRLSClassifierCV(graph=graph, patience=3).fit(
                X, ys, validation=yv),
        "LapRLSClassifierCV 7×7 patience=None (validation)":
            lambda ys, yv: LapRLSClassifierCV(graph=graph, patience=None).fit(
                X, ys, validation=yv),
        "LapRLSClassifierCV 7×7 method='warm' (validation)":
            lambda ys, yv: LapRLSClassifierCV(graph=graph, method="warm").fit(
                X, ys, validation=yv),
        "LapRLSClassifierCV 7×7 × prior {None, ½} (validation)":
            lambda ys, yv: LapRLSClassifierCV(graph=graph, class_prior=[None, [0.5, 0.5]]).fit(
                X, ys, validation=yv),
        "LapSVMClassifierCV 7×7 (validation)":
            lambda ys, yv: LapSVMClassifierCV(graph=graph).fit(X, ys, validation=yv),
        "LapRLSClassifierCV k {50, 100} × p {5, 8} × prior {None, ½} × 2×4 γ (validation)":
            lambda ys, yv: LapRLSClassifierCV(
                gamma_A=[1e-5, 1e-4], gamma_I=[1.0, 10.0, 100.0, 1000.0],
                n_neighbors=[50, 100], power=[5, 8], class_prior=[None, [0.5, 0.5]],
                graph=graph).fit(X, ys, validation=yv),
        "LapRLSClassifierCV k {50, 200} × p {5, 12} × prior {None, ½} × γ_A 1e-4 "
        "× γ_I {10, 100} (validation)":
            lambda ys, yv: LapRLSClassifierCV(
                gamma_A=[1e-4], gamma_I=[10.0, 100.0], n_neighbors=[50, 200], power=[5, 12],
                class_prior=[None, [0.5, 0.5]], graph=graph).fit(X, ys, validation=yv),
        "LapRLSClassifierCV k {50, 200} × p {5, 12} × prior ½ × γ_A 1e-4 × γ_I {10, 100} "
        "(validation)":
            lambda ys, yv: LapRLSClassifierCV(
                gamma_A=[1e-4], gamma_I=[10.0, 100.0], n_neighbors=[50, 200], power=[5, 12],
                class_prior=[0.5, 0.5], graph=graph).fit(X, ys, validation=yv),
        "LapSVMClassifierCV k {50, 200} × p {5, 12} × prior {None, ½} × γ_A 1e-4 "
        "× γ_I {10, 100} (validation)":
            lambda ys, yv: LapSVMClassifierCV(
                gamma_A=[1e-4], gamma_I=[10.0, 100.0], n_neighbors=[50, 200], power=[5, 12],
                class_prior=[None, [0.5, 0.5]], graph=graph).fit(X, ys, validation=yv),
        "LapRLSClassifierCV 7×7 × p {5, 8, 12} × prior {None, ½} (validation)":
            lambda ys, yv: LapRLSClassifierCV(graph=graph, power=[5, 8, 12],
                                              class_prior=[None, [0.5, 0.5]]).fit(
                X, ys, validation=yv),
    }
    if args.only:
        unknown = sorted(set(args.only) - set(methods))
        if unknown:
            sys.exit(f"error: no method named {unknown}; the names are {list(methods)}")
        methods = {k: v for k, v in methods.items() if k in args.only}
    print("| method | test error % (mean ± std) | fit time s (mean) | chosen (draw 0) |")
    print("|---|---|---|---|")
    for name, fit in methods.items():
        errs, times, chosen = [], [], None
        for seed in range(args.draws):
            ys, yv = draw(y, seed)
            t = time.perf_counter()
            m = fit(ys, yv)
            times.append(time.perf_counter() - t)
            errs.append(100 * np.mean(m.predict(Xt) != yt))
            if args.details:
                bp = getattr(m, "best_params_", None)
                bp = {k: v for k, v in bp.items() if v is not None} if bp else ""
                print(f"  draw {seed}: test error {errs[-1]:.1f} %, "
                      f"validation accuracy {getattr(m, 'best_score_', float('nan')):.2f}, "
                      f"{times[-1]:.1f} s, {bp}", file=sys.stderr, flush=True)
            if seed == 0:
                if hasattr(m, "best_params_"):
                    chosen = {k: v for k, v in m.best_params_.items() if v is not None}
                elif hasattr(m, "best_gamma_I_"):
                    chosen = f"γ_I = {m.best_gamma_I_:.3g}"
        print(f"| {name} | {np.mean(errs):.1f} ± {np.std(errs):.1f} | {np.mean(times):.2f} "
              f"| {chosen or ''} |", flush=True)


def timing(args, X, y, graph):
    ys = mask_labels(y, 100, random_state=0)
    lapsvm_path(X, ys, graph, rho=1e-5)       # warm-up (imports, first BLAS calls)
    for rho in (1e-3, 1e-5, 1e-7):
        t = time.perf_counter()
        p = lapsvm_path(X, ys, graph, rho=rho)
        print(f"path l = 100, rho = {rho:g}: {time.perf_counter() - t:.2f} s, "
              f"{p.lambdas.size} breakpoints, init {p.init}, bias {p.reduction.bias}, "
              f"method {p.reduction.method}", flush=True)
    ys, yv = draw(y, 0)
    # warm-ups (numba compilation, first BLAS calls)
    LapRLSClassifier(graph=graph).fit(X, ys)
    LapSVMClassifier(graph=graph).fit(X, ys)
    LapRLSClassifierCV(graph=graph, gamma_A=[1e-3], gamma_I=[1.0]).fit(X, ys, validation=yv)
    grids = {
        "LapRLSClassifierCV(method='shifted', patience=4) (default)":
            lambda: LapRLSClassifierCV(graph=graph, patience=4),
        "LapRLSClassifierCV(method='shifted', patience=5)":
            lambda: LapRLSClassifierCV(graph=graph, patience=5),
        "LapRLSClassifierCV(method='shifted', patience=None)":
            lambda: LapRLSClassifierCV(graph=graph, patience=None),
        "LapRLSClassifierCV(method='warm')": lambda: LapRLSClassifierCV(graph=graph,
                                                                        method="warm"),
        "LapRLSClassifierCV(method='warm', warm_start=False)":
            lambda: LapRLSClassifierCV(graph=graph, method="warm", warm_start=False),
        "LapSVMClassifierCV(method='shifted', patience=4) (default)":
            lambda: LapSVMClassifierCV(graph=graph),
        "LapSVMClassifierCV(method='warm')": lambda: LapSVMClassifierCV(graph=graph,
                                                                        method="warm"),
        "LapSVMClassifierCV(method='warm', warm_start=False)":
            lambda: LapSVMClassifierCV(graph=graph, method="warm", warm_start=False),
    }
    # interleaved rounds: every timing of a round shares the machine's state
    cold = {"LapRLSClassifier()": [], "LapSVMClassifier()": []}
    times = {name: [] for name in grids}
    iters = {}
    for _ in range(args.rounds):
        for name, Est in (("LapRLSClassifier()", LapRLSClassifier),
                          ("LapSVMClassifier()", LapSVMClassifier)):
            t = time.perf_counter()
            Est(gamma_I=10.0, graph=graph).fit(X, ys)  # the default then
            cold[name].append(time.perf_counter() - t)
        for name, make in grids.items():
            cv = make().fit(X, ys, validation=yv)
            times[name].append(cv.grid_time_)
            iters[name] = cv.cv_results_["mean_n_iter"].sum()
    rls = float(np.median(cold["LapRLSClassifier()"]))
    svm = float(np.median(cold["LapSVMClassifier()"]))
    print(f"7 × 7 grid (the CV estimators' default γ_A × γ_I), 50 labels + 50 validation "
          f"labels, medians of {args.rounds} interleaved rounds:")
    print(f"one cold LapRLSClassifier() fit: {1e3 * rls:.1f} ms; one cold "
          f"LapSVMClassifier() fit: {1e3 * svm:.1f} ms")
    print("| grid | grid time ms | × one cold LapRLS fit | × one cold LapSVM fit | "
          "iterations (sum over candidates) |")
    print("|---|---|---|---|---|")
    for name in grids:
        g = float(np.median(times[name]))
        print(f"| {name} | {1e3 * g:.0f} | {g / rls:.1f} | {g / svm:.1f} | {iters[name]:.0f} |",
              flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=10)
    ap.add_argument("--part", choices=["all", "accuracy", "timing"], default="all")
    ap.add_argument("--rounds", type=int, default=5, help="timing: interleaved rounds")
    ap.add_argument("--only", nargs="*", help="exact method names (table rows) to run")
    ap.add_argument("--details", action="store_true",
                    help="per draw: test error, validation accuracy, time, chosen setting "
                         "(on stderr)")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    train, test = load_pcmac("train"), load_pcmac("test")
    vec = make_vectorizer()
    X, Xt = vec.fit_transform(train.data), vec.transform(test.data)
    y, yt = train.target, test.target
    t = time.perf_counter()
    graph = KNNGraph().fit(X)
    print(f"PCMAC: {X.shape[0]} training docs, {Xt.shape[0]} test, {X.shape[1]} terms; "
          f"graph built in {time.perf_counter() - t:.2f} s\n", flush=True)
    if args.part in ("all", "timing"):
        timing(args, X, y, graph)
        print()
    if args.part in ("all", "accuracy"):
        accuracy(args, X, Xt, y, yt, graph)


if __name__ == "__main__":
    main()
