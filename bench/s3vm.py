"""Laplacian S³VM (graph + low-density separation) against LapSVM, the graph-free S³VM
(deterministic annealing and multi-switch TSVM) and LinearSVC on binary text.

    python bench/s3vm.py [--data-dir DIR] [--draws 10] [--sets pcmac,graphics-windows,...]
                         [--rows 'LapSVMClassifier(;...']
    python bench/s3vm.py --select [--draws 10] [--class-prior predicted]
    python bench/s3vm.py --multiclass --data-dir DIR [--draws 3]
    python bench/s3vm.py --memory 100000 [--timing]
    python bench/s3vm.py --prior-estimates [--sets pcmac,pcmac@0.7,...]
    python bench/s3vm.py [--rows ...] --graph-max-df 0.2
    python bench/s3vm.py --graph-grid

Sets: ``pcmac`` (bundled) and the 20 Newsgroups pairs ``graphics-windows``
(comp.graphics vs comp.windows.x), ``autos-motorcycles`` (rec.autos vs rec.motorcycles),
``med-space`` (sci.med vs sci.space), from ``20news-bydate.tar.gz`` in the data folder
(``--data-dir``, default the environment variable LINLAP_DATA). A set name with a suffix
``@π`` (e.g. ``pcmac@0.7``) is that set with rows of the class in excess dropped at random
(seed 0) from the training and test splits until class 1 makes up π of each: a check that
a class-balance estimate follows the data rather than assuming balance. 50 labels per draw
drawn from the training split; test split held out. Every method sees the same TF-IDF
(``linlap.text.make_vectorizer`` fitted on the training split) and labels; the graph
methods share one ``KNNGraph`` per set (its build time is printed once and is not in
the fit times). Times are per-draw ratios to the LapSVM fit of the same draw, in the
same process, after one untimed warm-up fit of every method. The run ends with the mean over
the sets and the margins of ``LapS3VMClassifier()`` (and of the grid's combined choice, when
run) over every other row, paired by set and
draw (mean, its standard error, draws won and lost). ``--graph-max-df m`` builds the shared
graph on the columns of document frequency ≤ m in the training rows only (rows
re-normalised; the models still see every term).

``--select`` chooses the S³VM weights without test labels: PCMAC's training split is
cut 70/30 (stratified, seed 0); the models are fitted on the 70 % (50 labels per draw)
and scored on the 30 %; the smallest mean validation error of each family is
reported (``--class-prior`` sets the balance of the grid). The package default of
``LapS3VMClassifier`` (grid with 'predicted') and the ``PLAIN`` / ``PLAIN_PRED`` settings
of the γ_I = 0 rows below are those choices; ``SELECTED`` is the grid's combined choice.
"""

import argparse
import itertools
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.svm import LinearSVC

from linlap import KNNGraph, LapS3VMClassifier, LapSVMClassifier
from linlap.datasets import load_20newsgroups, load_pcmac, mask_labels
from linlap.text import make_vectorizer

PAIRS = {
    "graphics-windows": ["comp.graphics", "comp.windows.x"],
    "autos-motorcycles": ["rec.autos", "rec.motorcycles"],
    "med-space": ["sci.med", "sci.space"],
}
N_LABELS = 50
#: the row every fit time is divided by
LAPSVM = "LapSVMClassifier() (defaults: gamma_A, gamma_I 'scaled')"
#: the LapSVM rows of the earlier defaults (γ_A 1e-4; γ_I 'scaled', then 10)
LAPSVM_A4 = "LapSVMClassifier(gamma_A=1e-4) (previous default: gamma_I 'scaled')"
LAPSVM_FIRST = "LapSVMClassifier(gamma_A=1e-4, gamma_I=10) (the first default)"
#: the combined model at its defaults: the row the margins are measured from
COMBINED = "LapS3VMClassifier() (defaults"
#: γ_A, γ_U of the graph-free S³VM rows, chosen by --select (γ_I = 0 family) with
#: class_prior='labeled' (PLAIN) and with class_prior='predicted' (PLAIN_PRED).
PLAIN = dict(gamma_A=1e-3, gamma_U=1.0)
PLAIN_PRED = dict(gamma_A=1e-2, gamma_U=10.0)
#: γ_A, γ_I, γ_U of the combined model chosen by --select --class-prior predicted.
SELECTED = dict(gamma_A=1e-2, gamma_I=10.0, gamma_U=10.0)


def data_dir(arg):
    d = arg or os.environ.get("LINLAP_DATA")
    if not d:
        sys.exit("error: the 20 Newsgroups sets need the data folder holding "
                 "20news-bydate.tar.gz: pass --data-dir or set LINLAP_DATA.")
    return Path(d)


def load(name, ddir):
    if name == "pcmac":
        return load_pcmac("train"), load_pcmac("test")
    if name not in PAIRS:
        sys.exit(f"error: unknown set {name!r}; choose from pcmac, {', '.join(PAIRS)}.")
    path = data_dir(ddir) / "20news-bydate.tar.gz"
    return (load_20newsgroups(path, "train", categories=PAIRS[name]),
            load_20newsgroups(path, "test", categories=PAIRS[name]))


def skew(split, pi, seed=0):
    """Documents and labels of ``split`` with the class-1 proportion cut to ``pi``: rows of
    the class in excess dropped at random (seed fixed)."""
    data, y = np.array(split.data, dtype=object), np.asarray(split.target)
    rng = np.random.default_rng(seed)
    i1, i0 = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    if pi > 0.5:
        i0 = rng.choice(i0, int(i1.size * (1 - pi) / pi), replace=False)
    else:
        i1 = rng.choice(i1, int(i0.size * pi / (1 - pi)), replace=False)
    keep = np.sort(np.concatenate([i0, i1]))
    return data[keep], y[keep]


class StartPrior:
    """LapS3VMClassifier(**kw) with π from the decision values f on the unlabeled rows of
    LapSVMClassifier(**svm), passed as class_prior (binary only; the fit time includes that
    extra LapSVM fit): ``rule='start'`` the clipped mean π = (1 + mean clip(f, −1, 1))/2
    (what 'predicted' does for γ_I = 0, from the S³VM's own start, when svm holds its γ_A,
    γ_I), ``rule='blend'`` the two-class γ_I > 0 rule (``blend_fraction``; svm with γ_A / 10)."""

    def __init__(self, svm, rule="start", **kw):
        self.svm, self.rule, self.kw = svm, rule, kw

    def fit(self, X, ys):
        from linlap.solvers.s3vm import blend_fraction, start_fraction

        unl = ys == -1
        f = (LapSVMClassifier(class_prior=None, graph=self.kw["graph"], **self.svm)
             .fit(X, ys).decision_function(X[unl]))
        pi = (start_fraction if self.rule == "start" else blend_fraction)(f)[0]
        self.model = LapS3VMClassifier(class_prior=[1 - pi, pi], **self.kw).fit(X, ys)
        return self

    def predict(self, X):
        return self.model.predict(X)


def _blend0(gamma_A, **kw):
    """The graph-free S³VM with the two-class γ_I > 0 rule (for comparison)."""
    return StartPrior(dict(gamma_A=gamma_A / 10, gamma_I=0.0), rule="blend", gamma_I=0.0,
                      gamma_A=gamma_A, **kw)


#: --graph-grid: neighbourhood sizes, powers and γ_I of LapS3VMClassifier()'s graph
GRID_K, GRID_P, GRID_GAMMA_I = (20, 50), (1, 2, 5), (1.0, 10.0)


def methods(graph, uniform=False, sweep=False, true_pi=None):
    if true_pi is not None:  # diagnostic (--graph-grid): other graphs, on test labels
        out = [(LAPSVM, lambda: LapSVMClassifier(graph=graph))]
        prior = [1 - true_pi, true_pi]
        for k, p, gI in itertools.product(GRID_K, GRID_P, GRID_GAMMA_I):
            g = (graph if k == graph.n_neighbors else graph.subgraph(k)).with_laplacian(power=p)
            out += [(f"LapS3VMClassifier(gamma_I={gI:g}), k {k}, p {p}",
                     lambda g=g, gI=gI: LapS3VMClassifier(gamma_I=gI, graph=g)),
                    (f"LapS3VMClassifier(gamma_I={gI:g}), k {k}, p {p}, true π",
                     lambda g=g, gI=gI: LapS3VMClassifier(gamma_I=gI, graph=g,
                                                          class_prior=prior))]
        return out
    if sweep:  # diagnostic: the γ_I of the combined model, on test labels
        return [(LAPSVM, lambda: LapSVMClassifier(graph=graph))] + [
            (f"LapS3VM γ_I={gI:g}, prior {pr}",
             lambda gI=gI, pr=pr: LapS3VMClassifier(gamma_I=gI, graph=graph, class_prior=pr))
            for pr in ("labeled", "predicted", (0.5, 0.5))
            for gI in (0.0, 0.1, 1.0, 10.0, 100.0)]
    lab, pred = dict(class_prior="labeled"), dict(class_prior="predicted")
    out = [
        ("LinearSVC (labels only)", None),
        (LAPSVM, lambda: LapSVMClassifier(graph=graph)),
        (LAPSVM_A4, lambda: LapSVMClassifier(gamma_A=1e-4, graph=graph)),
        (LAPSVM_FIRST, lambda: LapSVMClassifier(gamma_A=1e-4, gamma_I=10.0, graph=graph)),
        ("S³VM γ_I=0 (1e-3, 0, 1), annealing, 'labeled'",
         lambda: LapS3VMClassifier(gamma_I=0.0, graph=graph, **PLAIN, **lab)),
        ("S³VM γ_I=0 (1e-3, 0, 1), annealing, blend rule",
         lambda: _blend0(graph=graph, **PLAIN)),
        ("S³VM γ_I=0 (1e-2, 0, 10), annealing, blend rule",
         lambda: _blend0(graph=graph, **PLAIN_PRED)),
        ("S³VM γ_I=0 (1e-2, 0, 10), switching, blend rule",
         lambda: _blend0(graph=graph, solver="switching", **PLAIN_PRED)),
        ("LapS3VM (1e-3, 10, 1), annealing, 'labeled' (old defaults)",
         lambda: LapS3VMClassifier(gamma_I=10.0, graph=graph, **lab)),
        ("LapS3VM (1e-3, 10, 1), annealing, 'predicted'",
         lambda: LapS3VMClassifier(gamma_I=10.0, graph=graph, **pred)),
        ("LapS3VMClassifier() (defaults: (1e-3, 1, 1), annealing, 'predicted')",
         lambda: LapS3VMClassifier(graph=graph)),
        ("LapS3VM (1e-2, 10, 10), annealing, 'predicted' (the --select grid's combined choice)",
         lambda: LapS3VMClassifier(graph=graph, **SELECTED)),
        ("LapS3VMClassifier(solver='switching')",
         lambda: LapS3VMClassifier(graph=graph, solver="switching")),
        ("S³VM γ_I=0 (1e-3, 0, 1), annealing, 'predicted' (for γ_I = 0: clipped mean of its start)",
         lambda: LapS3VMClassifier(gamma_I=0.0, graph=graph, **PLAIN, **pred)),
        ("S³VM γ_I=0 (1e-2, 0, 10), annealing, 'predicted' (clipped mean of its start)",
         lambda: LapS3VMClassifier(gamma_I=0.0, graph=graph, **PLAIN_PRED, **pred)),
        ("LapS3VMClassifier(), earlier 'predicted' (clipped mean of its start)",
         lambda: StartPrior(dict(gamma_A=1e-3, gamma_I=1.0), graph=graph)),
        ("LapS3VMClassifier(), π: clipped mean of LapSVMClassifier() (1e-4, 10)",
         lambda: StartPrior(dict(gamma_A=1e-4, gamma_I=10.0), graph=graph)),
    ]
    if uniform:
        bal = dict(class_prior=[0.5, 0.5])
        out += [
            ("S³VM γ_I=0 (1e-3, 0, 1), annealing, class_prior=[.5, .5]",
             lambda: LapS3VMClassifier(gamma_I=0.0, graph=graph, **PLAIN, **bal)),
            ("LapS3VMClassifier(class_prior=[.5, .5])",
             lambda: LapS3VMClassifier(graph=graph, **bal)),
        ]
    return out


def selected(ms, rows):
    """The rows of ``ms`` whose names contain one of the ';'-separated substrings ``rows``
    (--rows; None: all), and the LapSVM row always: the time base."""
    if rows is None:
        return ms
    want = [w.strip().lower() for w in rows.split(";")]
    unmatched = [w for w in want if not any(w in m.lower() for m, _ in ms)]
    if unmatched:
        sys.exit(f"error: --rows {unmatched} match no row (';'-separated substrings of: "
                 f"{[m for m, _ in ms]})")
    return [(m, f) for m, f in ms if m == LAPSVM or any(w in m.lower() for w in want)]


def fit(make, X, ys):
    if make is None:
        lab = ys != -1
        return LinearSVC().fit(X[lab], ys[lab])
    return make().fit(X, ys)


def run_set(name, draws, ddir, uniform, sweep=False, rows=None, graph_max_df=None,
            graph_grid=False):
    base, _, pi = name.partition("@")
    train, test = load(base, ddir)
    (dtr, y), (dte, yt) = ((skew(train, float(pi)), skew(test, float(pi))) if pi else
                           ((train.data, train.target), (test.data, test.target)))
    vec = make_vectorizer()
    X, Xt = vec.fit_transform(dtr), vec.transform(dte)
    t = time.perf_counter()
    if graph_max_df is None:
        graph = KNNGraph(random_state=0).fit(X)
    else:  # the graph on the terms of document frequency ≤ graph_max_df only
        from sklearn.preprocessing import normalize
        df = np.asarray((X > 0).sum(axis=0)).ravel() / X.shape[0]
        graph = KNNGraph(random_state=0).fit(normalize(X[:, df <= graph_max_df]))
    t_graph = time.perf_counter() - t
    print(f"\n### {name}: {X.shape[0]} training docs ({100 * np.mean(y == 1):.0f} % class 1) "
          f"({N_LABELS} labeled), {Xt.shape[0]} test, "
          f"{X.shape[1]} terms, {draws} draws\n")
    cut = "" if graph_max_df is None else f" on the terms of df ≤ {graph_max_df:g}"
    print(f"graph ({graph.n_neighbors}-NN, {graph.algorithm_}{cut}) {t_graph:.1f} s, shared, "
          f"not in the fit times\n")
    ms = selected(methods(graph, uniform, sweep,
                          true_pi=float(np.mean(y == 1)) if graph_grid else None), rows)
    warm = mask_labels(y, N_LABELS, random_state=10**6)
    for _, make in ms:  # JIT warm-up, untimed
        fit(make, X, warm)
    errs = {m: [] for m, _ in ms}
    times = {m: [] for m, _ in ms}
    for seed in range(draws):
        ys = mask_labels(y, N_LABELS, random_state=seed)
        for label, make in ms:
            t = time.perf_counter()
            model = fit(make, X, ys)
            times[label].append(time.perf_counter() - t)
            errs[label].append(100 * np.mean(model.predict(Xt) != yt))
    base = np.array(times[LAPSVM])
    print("| method | test error % (mean ± std) | fit time s | × LapSVM fit (mean, max) |")
    print("|---|---|---|---|")
    out = {}
    for label, _ in ms:
        e, tm = np.array(errs[label]), np.array(times[label])
        ratio = tm / base
        out[label] = (e.mean(), ratio.mean(), e)
        print(f"| {label} | {e.mean():.1f} ± {e.std():.1f} | {tm.mean():.2f} | "
              f"{ratio.mean():.1f}, {ratio.max():.1f} |", flush=True)
    return out


def multiclass(draws, ddir, rows=None):
    """20 Newsgroups, 20 classes, 5 labels per class (one-vs-rest, shared graph)."""
    path = data_dir(ddir) / "20news-bydate.tar.gz"
    train, test = load_20newsgroups(path, "train"), load_20newsgroups(path, "test")
    vec = make_vectorizer()
    X, Xt = vec.fit_transform(train.data), vec.transform(test.data)
    y, yt = train.target, test.target
    t = time.perf_counter()
    graph = KNNGraph(random_state=0).fit(X)
    print(f"\n### 20 Newsgroups, 20 classes, 5 labels per class, {draws} draws\n\n"
          f"{X.shape[0]} training docs, {Xt.shape[0]} test, {X.shape[1]} terms; graph "
          f"{time.perf_counter() - t:.1f} s (shared, not in the fit times)\n")
    lab = dict(class_prior="labeled")
    ms = [(LAPSVM, lambda: LapSVMClassifier(graph=graph)),
          (LAPSVM_A4, lambda: LapSVMClassifier(gamma_A=1e-4, graph=graph)),
          ("S³VM γ_I=0 (1e-3, 0, 1), annealing, 'labeled'",
           lambda: LapS3VMClassifier(gamma_I=0.0, graph=graph, **PLAIN, **lab)),
          ("S³VM γ_I=0 (1e-3, 0, 1), annealing, 'predicted'",
           lambda: LapS3VMClassifier(gamma_I=0.0, graph=graph, **PLAIN)),
          ("LapS3VMClassifier(class_prior='labeled')",
           lambda: LapS3VMClassifier(graph=graph, **lab)),
          ("LapS3VMClassifier() (defaults: (1e-3, 1, 1), 'predicted')",
           lambda: LapS3VMClassifier(graph=graph))]
    ms = selected(ms, rows)
    small = KNNGraph(random_state=0).fit(X[:1000])  # JIT warm-up on 1,000 rows, untimed
    warm = mask_labels(y[:1000], 40, random_state=0)
    for est in (LapSVMClassifier(graph=small), LapS3VMClassifier(graph=small)):
        est.fit(X[:1000], warm)
    print("| method | test error % (mean ± std) | fit time s | × LapSVM fit (mean, max) |")
    print("|---|---|---|---|")
    errs = {m: [] for m, _ in ms}
    times = {m: [] for m, _ in ms}
    for seed in range(draws):
        ys = mask_labels(y, 5, per_class=True, random_state=seed)
        for label, make in ms:
            t = time.perf_counter()
            model = make().fit(X, ys)
            times[label].append(time.perf_counter() - t)
            errs[label].append(100 * np.mean(model.predict(Xt) != yt))
    base = np.array(times[LAPSVM])
    for label, _ in ms:
        e, tm = np.array(errs[label]), np.array(times[label])
        print(f"| {label} | {e.mean():.1f} ± {e.std():.1f} | {tm.mean():.1f} | "
              f"{(tm / base).mean():.1f}, {(tm / base).max():.1f} |", flush=True)


def memory(n, timing=False):
    """Traced peak of one LapSVM and one LapS3VM fit on a synthetic corpus of n rows
    (``timing``: instead, the median time of three untraced fits of each, after a
    warm-up pair)."""
    import tracemalloc

    from linlap.datasets import make_text_corpus

    X, y = make_text_corpus(n, random_state=0)
    t = time.perf_counter()
    graph = KNNGraph(n_neighbors=10, random_state=0).fit(X)
    xb = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 1e6
    print(f"\nmake_text_corpus({n}): {X.shape[1]} features, X {xb:.0f} MB; 10-NN graph "
          f"{time.perf_counter() - t:.0f} s; 1,000 labels\n")
    ys = mask_labels(y, 1000, random_state=0)
    if timing:
        kinds = (LapSVMClassifier, LapS3VMClassifier)
        for kind in kinds:  # warm-up (JIT compilation)
            kind(graph=graph).fit(X, ys)
        times = {kind: [] for kind in kinds}
        for _ in range(3):
            for kind in kinds:
                t = time.perf_counter()
                kind(graph=graph).fit(X, ys)
                times[kind].append(time.perf_counter() - t)
        a, b = (np.median(times[kind]) for kind in kinds)
        print(f"| LapSVMClassifier | LapS3VMClassifier | ratio |\n|---|---|---|\n"
              f"| {a:.2f} s | {b:.2f} s | {b / a:.1f}× |")
        return
    print("| fit | time s | traced peak MB (numpy allocations during fit) |")
    print("|---|---|---|")
    for _ in range(2):  # the first round includes JIT compilation
        for est in (LapSVMClassifier(graph=graph), LapS3VMClassifier(graph=graph)):
            tracemalloc.start()
            t = time.perf_counter()
            est.fit(X, ys)
            t = time.perf_counter() - t
            peak = tracemalloc.get_traced_memory()[1] / 1e6
            tracemalloc.stop()
            print(f"| {type(est).__name__} | {t:.1f} | {peak:.1f} |", flush=True)


def prior_estimates(sets, draws, ddir):
    """Error of class-balance estimates (|π̂ − π| on the unlabeled rows, points) per set."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import spsolve
    from scipy.special import expit

    from scipy.stats import gaussian_kde

    from linlap.solvers.lapsvm_newton import lapsvm_newton
    from linlap.solvers.s3vm import blend_fraction, split_fraction, start_fraction

    def valley(f):  # fraction above the lowest KDE point between the two highest modes
        g = np.linspace(f.min(), f.max(), 601)
        d = gaussian_kde(f)(g)
        peaks = np.flatnonzero((d[1:-1] > d[:-2]) & (d[1:-1] >= d[2:])) + 1
        if peaks.size < 2:
            return start_fraction(f)[0]  # unimodal: no valley
        a, b = np.sort(peaks[np.argsort(d[peaks])[-2:]])
        return np.mean(f > g[a + np.argmin(d[a:b + 1])])

    def em(p, pi0, n_iter=200):  # Saerens, Latinne & Decaestecker (2002) prior-shift EM
        pi = pi0
        for _ in range(n_iter):
            a, b = pi / pi0 * p, (1 - pi) / (1 - pi0) * (1 - p)
            pi = np.mean(a / (a + b))
        return pi

    starts = [("SVM (γ_I=0, γ_A=1e-3)", 0.0, 1e-3), ("SVM (γ_I=0, γ_A=1e-4)", 0.0, 1e-4),
              ("LapSVM γ_I=1, γ_A=1e-3", 1.0, 1e-3), ("LapSVM γ_I=1, γ_A=1e-4", 1.0, 1e-4),
              ("LapSVM γ_I=10, γ_A=1e-3", 10.0, 1e-3), ("LapSVM γ_I=10, γ_A=1e-4", 10.0, 1e-4)]
    err = {}
    for name in sets:
        base, _, pi = name.partition("@")
        train, _ = load(base, ddir)
        dtr, y = skew(train, float(pi)) if pi else (train.data, train.target)
        X = make_vectorizer().fit_transform(dtr)
        graph = KNNGraph(random_state=0).fit(X)
        W = graph.adjacency_.tocsr()
        W = ((W + W.T) / 2).tocsr()
        Lc = (sp.diags(np.asarray(W.sum(axis=1)).ravel()) - W).tocsr()
        for seed in range(draws):
            ys = mask_labels(y, N_LABELS, random_state=seed)
            lab, unl = np.flatnonzero(ys != -1), np.flatnonzero(ys == -1)
            t = np.where(ys[lab] == 1, 1.0, -1.0)[:, None]
            true = np.mean(y[unl] == 1)
            pl = np.mean(ys[lab] == 1)
            est = {"'labeled': labeled proportion": pl}
            for sname, gI, gA in starts:
                lap = graph.laplacian_matvec if gI else None
                f = lapsvm_newton(X, t, lab, lap, gamma_A=gA, gamma_I=gI, scale=graph.scale_,
                                  tol=1e-4).decision[unl, 0]
                est[f"{sname}: (1 + mean clip(f))/2"] = start_fraction(f)[0]
                est[f"{sname}: fraction f > 0"] = np.mean(f > 0)
                est[f"{sname}: prior-shift EM on σ(2f)"] = em(expit(2 * f), pl)
                est[f"{sname}: KDE valley between the two highest modes"] = valley(f)
                est[f"{sname}: two-means split"] = split_fraction(f)[0]
                est[f"{sname}: blend ½[(1 + mean clip(f))/2 + two-means]"] = \
                    blend_fraction(f)[0]
                if gI == 1.0 and gA == 1e-3:  # the clipped mean iterated: refit at π̂
                    p = start_fraction(f)[0]
                    for _ in range(3):
                        fb = lapsvm_newton(X, t, lab, lap, gamma_A=gA, gamma_I=gI,
                                           scale=graph.scale_, tol=1e-4,
                                           balance=np.array([2 * p - 1]),
                                           unlabeled_rows=unl).decision[unl, 0]
                        p = start_fraction(fb)[0]
                    est[f"{sname}: clipped mean, 3 refits with the balance at π̂"] = p
            Luu = Lc[unl][:, unl].tocsc()
            h = [spsolve(Luu, W[unl][:, lab] @ (ys[lab] == c).astype(float)) for c in (1, 0)]
            est["harmonic function (Zhu et al. 2003): fraction h₊ > h₋"] = np.mean(h[0] > h[1])
            n1 = np.sum(ys[lab] == 1)
            est["harmonic, class-normalised: h₊/l₊ > h₋/l₋"] = np.mean(
                h[0] / n1 > h[1] / (lab.size - n1))
            for k, v in est.items():
                err.setdefault(k, {}).setdefault(name, []).append(100 * (v - true))
        print(f"{name} done", file=sys.stderr, flush=True)
    print(f"\n|π̂ − π| on the unlabeled rows, points (mean over {draws} draws; in brackets the "
          f"mean signed error)\n")
    print("| estimate | " + " | ".join(sets) + " | mean |")
    print("|---|" + "---|" * (len(sets) + 1))
    for k, d in err.items():
        cells = [f"{np.mean(np.abs(d[s])):.1f} ({np.mean(d[s]):+.1f})" for s in sets]
        print(f"| {k} | " + " | ".join(cells)
              + f" | {np.mean([np.mean(np.abs(d[s])) for s in sets]):.1f} |")


def select(draws, prior="labeled"):
    """Validation grid on PCMAC's training split (no test labels)."""
    tr = load_pcmac("train")
    data, y = np.array(tr.data, dtype=object), tr.target
    itr, iva = train_test_split(np.arange(y.size), test_size=0.3, random_state=0, stratify=y)
    vec = make_vectorizer()
    X, Xv = vec.fit_transform(data[itr]), vec.transform(data[iva])
    y, yv = y[itr], y[iva]
    graph = KNNGraph(random_state=0).fit(X)
    print(f"\nPCMAC training split cut 70/30: fit on {X.shape[0]} docs ({N_LABELS} labeled), "
          f"validate on {Xv.shape[0]}; {draws} draws; solver='annealing', "
          f"class_prior={prior!r}\n")
    print("| γ_A | γ_I | γ_U | validation error % |")
    print("|---|---|---|---|")
    best = {}
    for gA, gI, gU in itertools.product([1e-4, 1e-3, 1e-2], [0.0, 1.0, 10.0, 100.0],
                                        [0.0, 0.1, 1.0, 10.0]):
        if gI == 0 and gU == 0:
            continue
        errs = []
        for seed in range(draws):
            ys = mask_labels(y, N_LABELS, random_state=seed)
            m = LapS3VMClassifier(gamma_A=gA, gamma_I=gI, gamma_U=gU, graph=graph,
                                  class_prior=prior).fit(X, ys)
            errs.append(100 * np.mean(m.predict(Xv) != yv))
        e = float(np.mean(errs))
        fam = "LapSVM (γ_U=0)" if gU == 0 else ("S³VM (γ_I=0)" if gI == 0 else "combined")
        if fam not in best or e < best[fam][0]:
            best[fam] = (e, gA, gI, gU)
        print(f"| {gA:g} | {gI:g} | {gU:g} | {e:.1f} |", flush=True)
    print("\nbest per family (mean validation error %, γ_A, γ_I, γ_U):")
    for fam, b in best.items():
        print(f"- {fam}: {b[0]:.1f} at γ_A={b[1]:g}, γ_I={b[2]:g}, γ_U={b[3]:g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None,
                    help="folder holding 20news-bydate.tar.gz (default: $LINLAP_DATA)")
    ap.add_argument("--draws", type=int, default=10)
    ap.add_argument("--sets", default="pcmac," + ",".join(PAIRS),
                    help="comma-separated set names, each optionally with @π (class-1 share)")
    ap.add_argument("--select", action="store_true",
                    help="run the PCMAC train/validation grid instead")
    ap.add_argument("--class-prior", default="labeled", choices=["labeled", "predicted"],
                    help="class_prior of the --select grid")
    ap.add_argument("--uniform-prior", action="store_true",
                    help="also run the S³VMs with class_prior=[0.5, 0.5]")
    ap.add_argument("--multiclass", action="store_true",
                    help="run the 20-class 20 Newsgroups protocol (5 labels per class) instead")
    ap.add_argument("--memory", type=int, default=None, metavar="N",
                    help="traced fit memory of LapSVM and LapS3VM on N synthetic rows instead")
    ap.add_argument("--timing", action="store_true",
                    help="with --memory: median untraced fit times instead of memory")
    ap.add_argument("--prior-estimates", action="store_true",
                    help="diagnostic: error of class-balance estimates on the unlabeled rows")
    ap.add_argument("--gamma-I-sweep", action="store_true",
                    help="diagnostic: LapS3VMClassifier test error against γ_I (test labels: "
                         "not a way to choose γ_I)")
    ap.add_argument("--graph-grid", action="store_true",
                    help="diagnostic: LapS3VMClassifier() on the k-NN subgraphs, k in "
                         + ", ".join(map(str, GRID_K)) + ", at p in "
                         + ", ".join(map(str, GRID_P)) + " and γ_I in "
                         + ", ".join(f"{g:g}" for g in GRID_GAMMA_I)
                         + ", at the estimated and the true class balance (test labels)")
    ap.add_argument("--graph-max-df", type=float, default=None, metavar="M",
                    help="build the shared graph on the terms of document frequency ≤ M only")
    ap.add_argument("--rows", default=None,
                    help="only the rows whose names contain one of these ';'-separated "
                         "substrings (and the LapSVMClassifier() row, the time base)")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    if args.select:
        select(args.draws, args.class_prior)
        return
    if args.memory:
        memory(args.memory, args.timing)
        return
    if args.multiclass:
        multiclass(args.draws, args.data_dir, args.rows)
        return
    sets = args.sets.split(",")
    if any(not s.startswith("pcmac") for s in sets):
        data_dir(args.data_dir)  # fail early with the message
    if args.prior_estimates:
        prior_estimates(sets, args.draws, args.data_dir)
        return
    results = {s: run_set(s, args.draws, args.data_dir, args.uniform_prior, args.gamma_I_sweep,
                          args.rows, args.graph_max_df, args.graph_grid)
               for s in sets}
    labels = list(next(iter(results.values())))
    print(f"\n### Mean over the {len(sets)} binary sets\n")
    print("| method | mean test error % | mean × LapSVM fit |")
    print("|---|---|---|")
    for label in labels:
        e = np.mean([results[s][label][0] for s in sets])
        r = np.mean([results[s][label][1] for s in sets])
        print(f"| {label} | {e:.1f} | {r:.1f} |")
    refs = [m for m in labels if m.startswith(COMBINED) or "grid's combined choice" in m]
    for ref in refs if len(labels) > 1 else []:
        print(f"\n### Margins of {ref}, points (other row − it), over the {len(sets)} sets × "
              f"{args.draws} draws\n")
        print("| against | mean margin | paired standard error | draws it wins / loses |")
        print("|---|---|---|---|")
        for label in labels:
            if label == ref:
                continue
            d = np.concatenate([results[s][label][2] - results[s][ref][2] for s in sets])
            print(f"| {label} | {d.mean():+.2f} | {d.std(ddof=1) / np.sqrt(d.size):.2f} | "
                  f"{np.sum(d > 0)} / {np.sum(d < 0)} |")


if __name__ == "__main__":
    main()
