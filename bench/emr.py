"""Ensemble manifold regularization and out-of-the-box defaults across corpora.

    python bench/emr.py [--data-dir DIR] [--corpora pcmac,20ng,20ng-top,subjects,synthetic]
                        [--draws 5] [--methods all|'sub;sub;...'] [--study] [--gamma-I-sweep]
                        [--gamma-A-sweep] [--k-sweep] [--gamma-R-sweep]
                        [--cost [--repeats 3]]
                        [--loo-powers [--loo-dims 100,300]]
                        [--powers] [--smoothness]
                        [--df-graph [--df-cuts 0.5,0.2,0.1] [--max-df 0.5,0.2]]
                        [--cache-dir DIR]
                        [--graph exact,exact-svd,default]

DIR (default: the environment variable LINLAP_DATA) holds ``20news-bydate.tar.gz`` (and
``aclImdb_v1.tar.gz`` or ``aclImdb_v1_text.tar.xz`` for ``imdb``; ``bench/_data.py``). Corpora:

* ``pcmac``: the bundled PCMAC (train/test splits), 50 labels;
* ``pcmac-stop``: the same with English stop words kept in the TF-IDF
  (``make_vectorizer(stop_words=None)``);
* ``20ng``: 20 Newsgroups (bydate train/test), 20 classes, 5 labels per class;
* ``20ng-top``: the same posts labeled by top-level group (alt, comp, misc, rec, sci, soc,
  talk: 7 classes), 5 labels per class;
* ``subjects``: the ``Subject:`` lines of the 20 Newsgroups posts only ("Re:" removed),
  20 classes, 10 labels per class; training rows left empty by the TF-IDF are dropped;
* ``synthetic``: ``make_text_corpus(8000, random_state=0)`` (2 classes), first 5,000 rows
  for training, the other 3,000 for test, 50 labels;
* ``imdb``: 1,000 labeled training reviews plus the 50,000 unlabeled ones, test split;
* ``imdb-train``: the same without the 50,000 unlabeled reviews (25,000 training rows, the
  same label draws).

Every method sees the same TF-IDF (``linlap.text.make_vectorizer`` fitted on the training
texts) and, per draw (seeds 0…draws−1), the same labels (``mask_labels``). "best single
graph (validation)" and the validation-based rows also get as many held-out validation
labels, drawn from the unlabeled training rows (``default_rng(1000 + seed)``), which stay
unlabeled for training. The linlap rows share one 50-NN search per corpus (reported
once; EMR takes its candidates from it, as its own fit would from one search at k = 50), so
their fit times exclude it. ``--graph`` says which search (a comma-separated list runs the
methods once per graph, on the same TF-IDF and draws):

* ``exact`` (default): exact search in the TF-IDF space
  (``KNNGraph(algorithm='exact', space='tfidf')``);
* ``exact-svd``: exact search in the 50-dimensional TruncatedSVD space
  (``space='svd'``, ``random_state=0``) — what ``KNNGraph(algorithm='exact')`` searched
  above ``exact_max_samples`` (50,000) rows, so every IMDB figure measured with this script
  before this option existed (then with the SVD's ``random_state`` unset);
* ``default``: the graph ``KNNGraph(n_neighbors=50)`` builds by itself (exact in TF-IDF up to
  ``exact_max_samples`` rows, else pynndescent in the SVD space), ``random_state=0``.

 LabelSpreading's row is the best k of {10, 20, 50} by mean test
error (optimistic for it). Prints markdown tables: mean ± std test error %, mean fit time.
"""

import argparse
import os
import re
import sys
import time
import warnings
from pathlib import Path

import joblib
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.semi_supervised import LabelSpreading, SelfTrainingClassifier
from sklearn.svm import LinearSVC
from sklearn.utils.extmath import randomized_svd

from linlap import EMRClassifier, KNNGraph, LapRLSClassifier, LapSVMClassifier
from linlap.datasets import (load_20newsgroups, load_imdb, load_pcmac, make_text_corpus,
                             mask_labels)
from linlap.estimators._base import scaled_gamma_A, scaled_gamma_I
from linlap.estimators.emr import candidate_graphs
from linlap.model_selection import LapRLSClassifierCV
from linlap.text import make_vectorizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _data import archive as data_archive, top_level_codes  # noqa: E402

SEARCH_K = 50
AUTO = "LapRLSClassifier(gamma_I='auto')"
DEFAULT = "LapRLSClassifier() (defaults: gamma_A, gamma_I 'scaled')"
SCALED_I = "LapRLSClassifier(gamma_A=1e-4) (previous defaults: gamma_I 'scaled')"
PREVIOUS = "LapRLSClassifier(gamma_A=1e-4, gamma_I=10) (first defaults)"
#: γ_I of the rows measured before gamma_I='scaled' became the default (EMR, single graphs)
G10 = 10.0
#: γ_A of every row measured before gamma_A='scaled' became the default
GA4 = 1e-4
EMR = "EMRClassifier() (default candidates: k 50 × p {1, 2, 5, 8}, γ_I 'scaled')"
EMR10 = "EMRClassifier(LapRLSClassifier(gamma_I=10)) (candidates k 50 × p {1, 2, 5, 8})"
#: the first candidate grid tried (k 10 and 50 mixed); EMRClassifier() uses L^p, p 1, 2, 5, 8
GRID_KP = {"n_neighbors": [10, 50], "power": [1, 5]}


def _subject(text):
    m = re.search(r"^Subject:(.*)$", text, flags=re.MULTILINE)
    s = m.group(1) if m else ""
    return re.sub(r"^\s*((re|fwd?)\s*:\s*)+", "", s.strip(), flags=re.IGNORECASE)


def load_corpus(name, data_dir, **vectorizer):
    """(X, y, Xt, yt, draw settings) with the TF-IDF fitted on the training texts;
    ``vectorizer``: further keywords of ``make_vectorizer`` (e.g. ``max_df``)."""
    if name == "synthetic":
        X, y = make_text_corpus(8000, random_state=0)
        return X[:5000], y[:5000], X[5000:], y[5000:], dict(n_labeled=50, per_class=False)
    if name == "pcmac-stop":
        vectorizer = dict(vectorizer, stop_words=None)
        name = "pcmac"
    if name == "pcmac":
        train, test = load_pcmac("train"), load_pcmac("test")
        tr, te, y, yt = train.data, test.data, train.target, test.target
        draw = dict(n_labeled=50, per_class=False)
    elif name in ("imdb", "imdb-train"):
        archive = data_archive(data_dir, "imdb")
        train, test = load_imdb(archive, "train"), load_imdb(archive, "test")
        unsup = list(load_imdb(archive, "unsup").data) if name == "imdb" else []
        tr = list(train.data) + unsup
        y = np.concatenate([train.target, np.full(len(unsup), -2)])
        te, yt = test.data, test.target
        draw = dict(n_labeled=1000, per_class=False, pool=len(train.data))
    else:
        path = data_archive(data_dir, "20ng")
        train, test = load_20newsgroups(path, "train"), load_20newsgroups(path, "test")
        tr, te, y, yt = train.data, test.data, train.target, test.target
        draw = dict(n_labeled=5, per_class=True)
        if name == "20ng-top":
            code = top_level_codes(train.target_names)
            y, yt = code[y], code[yt]
        elif name == "subjects":
            tr, te = [_subject(t) for t in tr], [_subject(t) for t in te]
            draw = dict(n_labeled=10, per_class=True)
        elif name != "20ng":
            raise ValueError(f"unknown corpus {name!r}")
    vec = make_vectorizer(**vectorizer)
    X, Xt = vec.fit_transform(tr), vec.transform(te)
    keep = np.flatnonzero(X.getnnz(axis=1) > 0)
    if keep.size < X.shape[0]:
        draw["dropped_empty"] = int(X.shape[0] - keep.size)
        X, y = X[keep], y[keep]
    return X, y, Xt, yt, draw


def draw_labels(y, seed, draw):
    """Training labels (−1 elsewhere) and as many validation labels (−1 elsewhere)."""
    n_lab, per_class = draw["n_labeled"], draw["per_class"]
    if "pool" in draw:  # imdb: labels only from the labeled training reviews
        pool = draw["pool"]
        ys = np.full(y.size, -1)
        ys[:pool] = mask_labels(y[:pool], n_lab, random_state=seed)
    else:
        ys = mask_labels(y, n_lab, per_class=per_class, random_state=seed)
    n_val = int((ys != -1).sum())
    rest = np.flatnonzero(ys == -1)
    if "pool" in draw:
        rest = rest[rest < draw["pool"]]
    val = np.random.default_rng(1000 + seed).choice(rest, n_val, replace=False)
    yv = np.full(y.size, -1)
    yv[val] = y[val]
    return ys, yv


def one_se(sel):
    """The γ_I the same cross-validation errors give with one standard error (n_se=1)."""
    e = sel.errors
    l = e.shape[1]
    thr = (e - e[sel.best]).std(axis=1, ddof=1) / np.sqrt(l)
    return sel.grid[np.flatnonzero(sel.mean_error - sel.mean_error[sel.best]
                                   <= thr + 1e-12).max()]


def best_single_graph(graphs, make):
    """Fit one base model per candidate; keep the best on the validation labels."""
    def fit(X, ys, yv):
        val = yv != -1
        best, best_acc = None, -1.0
        for g in graphs:
            model = make(g).fit(X, ys)
            acc = np.mean(model.predict(X[val]) == yv[val])
            if acc > best_acc:
                best, best_acc = model, acc
        return best
    return fit


def methods_for(graph, graphs):
    """name -> fit(X, ys, yv) returning a fitted model."""
    lab = lambda ys: ys != -1  # noqa: E731
    m = {
        DEFAULT:
            lambda X, ys, yv: LapRLSClassifier(graph=graph).fit(X, ys),
        SCALED_I:
            lambda X, ys, yv: LapRLSClassifier(gamma_A=GA4, graph=graph).fit(X, ys),
        PREVIOUS:
            lambda X, ys, yv: LapRLSClassifier(gamma_A=GA4, gamma_I=G10, graph=graph).fit(X, ys),
        "LapSVMClassifier() (defaults: gamma_A, gamma_I 'scaled')":
            lambda X, ys, yv: LapSVMClassifier(graph=graph).fit(X, ys),
        "LapSVMClassifier(gamma_A=1e-4) (previous defaults: gamma_I 'scaled')":
            lambda X, ys, yv: LapSVMClassifier(gamma_A=GA4, graph=graph).fit(X, ys),
        "LapSVMClassifier(gamma_A=1e-4, gamma_I=10) (first defaults)":
            lambda X, ys, yv: LapSVMClassifier(gamma_A=GA4, gamma_I=G10, graph=graph).fit(X, ys),
        "EMRClassifier(LapRLSClassifier(gamma_I=10)), candidates k {10, 50} × p {1, 5}":
            lambda X, ys, yv: EMRClassifier(LapRLSClassifier(gamma_A=GA4, gamma_I=G10), graph=graph,
                                            candidates=GRID_KP).fit(X, ys),
        "EMRClassifier(LapSVMClassifier(gamma_I=10)), candidates k {10, 50} × p {1, 5}":
            lambda X, ys, yv: EMRClassifier(LapSVMClassifier(gamma_A=GA4, gamma_I=G10), graph=graph,
                                            candidates=GRID_KP).fit(X, ys),
        "best single graph of k {10, 50} × p {1, 5}, γ_I 10 (validation labels)":
            best_single_graph(graphs, lambda g: LapRLSClassifier(gamma_A=GA4, gamma_I=G10,
                                                                 graph=g)),
        "LapRLSClassifierCV(cv=3) 7×7 γ grid":
            lambda X, ys, yv: LapRLSClassifierCV(graph=graph, cv=3).fit(X, ys),
        "LinearSVC (labels only)":
            lambda X, ys, yv: LinearSVC().fit(X[lab(ys)], ys[lab(ys)]),
        "SelfTraining(LogisticRegression(C=10), threshold=0.9)":
            lambda X, ys, yv: SelfTrainingClassifier(LogisticRegression(C=10),
                                                     threshold=0.9).fit(X, ys),
    }
    for k in (10, 20, 50):
        m[f"LabelSpreading(knn, k={k}, alpha=0.2)"] = (
            lambda X, ys, yv, k=k: LabelSpreading(kernel="knn", n_neighbors=k,
                                                  alpha=0.2).fit(X, ys))
    return m


def study_methods(graph, graphs):
    """Candidate out-of-the-box choices (--study)."""
    return {
        "best single graph of k 50 × p {1, 2, 5, 8}, γ_I 10 (validation labels)":
            lambda X, ys, yv: best_single_graph(
                [graph.with_laplacian(power=p) for p in (1, 2, 5, 8)],
                lambda g: LapRLSClassifier(gamma_A=GA4, gamma_I=G10, graph=g))(X, ys, yv),
        EMR10:
            lambda X, ys, yv: EMRClassifier(LapRLSClassifier(gamma_A=GA4, gamma_I=G10),
                                            graph=graph).fit(X, ys),
        "best single graph of k 50 × p {1, 2, 5, 8}, γ_I 'scaled' (validation labels)":
            lambda X, ys, yv: best_single_graph(
                [graph.with_laplacian(power=p) for p in (1, 2, 5, 8)],
                lambda g: LapRLSClassifier(graph=g))(X, ys, yv),
        EMR:
            lambda X, ys, yv: EMRClassifier(graph=graph).fit(X, ys),
        # a loose base tol must not stall μ (EMRClassifier's LOOSE_TOL_MAX)
        "EMRClassifier(LapRLSClassifier(tol=1e-2))":
            lambda X, ys, yv: EMRClassifier(LapRLSClassifier(tol=1e-2),
                                            graph=graph).fit(X, ys),
        "LapRLSClassifier(tol=1e-2)":
            lambda X, ys, yv: LapRLSClassifier(tol=1e-2, graph=graph).fit(X, ys),
        "LapRLSClassifier(gamma_I=1)":
            lambda X, ys, yv: LapRLSClassifier(gamma_A=GA4, gamma_I=1.0,
                                               graph=graph).fit(X, ys),
        "EMRClassifier(LapRLSClassifier(gamma_I=1)), candidates k {10, 50} × p {1, 5}":
            lambda X, ys, yv: EMRClassifier(LapRLSClassifier(gamma_A=GA4, gamma_I=1.0),
                                            graph=graph,
                                            candidates=GRID_KP).fit(X, ys),
        AUTO:
            lambda X, ys, yv: LapRLSClassifier(gamma_I="auto", graph=graph).fit(X, ys),
        "LapRLSClassifierCV(gamma_A=1e-4, gamma_I {0.01, 0.1, 1, 10}, cv=3)":
            lambda X, ys, yv: LapRLSClassifierCV(gamma_A=[1e-4], gamma_I=[0.01, 0.1, 1, 10],
                                                 graph=graph, cv=3).fit(X, ys),
    }


#: γ_I values of --gamma-I-sweep (γ_A 1e-4, the default graph)
SWEEP_GAMMA_I = (0.0, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 1000.0)


def sweep_methods(graph):
    """LapRLS on the default graph at fixed γ_I (--gamma-I-sweep; read on test labels)."""
    return {f"LapRLSClassifier(gamma_I={g:g})":
            (lambda X, ys, yv, g=g: LapRLSClassifier(gamma_A=GA4, gamma_I=g,
                                                     graph=graph).fit(X, ys))
            for g in SWEEP_GAMMA_I}


#: γ_A values of --gamma-A-sweep (γ_I 'scaled', the default graph)
SWEEP_GAMMA_A = (1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3)


def gamma_A_sweep_methods(graph):
    """LapRLS on the default graph at fixed γ_A, γ_I 'scaled' (--gamma-A-sweep; read on
    test labels)."""
    return {f"LapRLSClassifier(gamma_A={g:g})":
            (lambda X, ys, yv, g=g: LapRLSClassifier(gamma_A=g, graph=graph).fit(X, ys))
            for g in SWEEP_GAMMA_A}


#: neighbourhood sizes of --k-sweep (subgraphs of the exact 50-NN graph)
SWEEP_K = (10, 20, 30, 50)


def k_sweep_methods(graph):
    """LapRLSClassifier(gamma_A=1e-4) on the k-NN subgraphs of the default graph (--k-sweep;
    read on test labels)."""
    return {f"LapRLSClassifier(gamma_A=1e-4), k={k}":
            (lambda X, ys, yv, g=(graph.subgraph(k) if k < graph.n_neighbors else graph):
             LapRLSClassifier(gamma_A=GA4, graph=g).fit(X, ys))
            for k in SWEEP_K}


#: multiples of γ_R 'auto' of --gamma-R-sweep (1e4: μ uniform to two digits)
SWEEP_GAMMA_R = (1, 3, 10, 100, 1e4)


def gamma_R_sweep_methods(graph):
    """EMRClassifier() at γ_R = m × the value 'auto' takes on the draw (--gamma-R-sweep;
    read on test labels). Each row fits EMRClassifier() once more to read that value."""
    def fit(X, ys, yv, m):
        e = EMRClassifier(graph=graph).fit(X, ys)
        return e if m == 1 else EMRClassifier(graph=graph, gamma_R=m * e.gamma_R_).fit(X, ys)
    return {f"EMRClassifier(gamma_R={m:g} × 'auto')":
            (lambda X, ys, yv, m=m: fit(X, ys, yv, m)) for m in SWEEP_GAMMA_R}


#: single powers of --powers, and the two candidate sets it compares
SINGLE_POWERS = (1, 2, 3, 5, 8)
POWER_SETS = ((1, 2, 5, 8), (1, 2, 3, 5))


def power_methods(graph):
    """LapRLSClassifier() on L^p of the shared graph for each single p, EMR over each set
    of POWER_SETS, and the single p of that set chosen on the validation labels (--powers;
    read on test labels)."""
    m = {f"LapRLSClassifier(), single graph p = {p}":
         (lambda X, ys, yv, p=p: LapRLSClassifier(graph=graph.with_laplacian(power=p))
          .fit(X, ys)) for p in SINGLE_POWERS}
    for powers in POWER_SETS:
        tag = "{" + ", ".join(map(str, powers)) + "}"
        m[f"EMRClassifier(candidates={{'power': {list(powers)}}}), p ∈ {tag}"] = (
            lambda X, ys, yv, powers=powers: EMRClassifier(
                graph=graph, candidates={"power": list(powers)}).fit(X, ys))
        m[f"validation-chosen p of {tag} (LapRLSClassifier())"] = (
            lambda X, ys, yv, powers=powers: best_single_graph(
                [graph.with_laplacian(power=p) for p in powers],
                lambda g: LapRLSClassifier(graph=g))(X, ys, yv))
    return m


#: --graph choices: the 50-NN graph every linlap row of a run shares
GRAPHS = {
    "exact": lambda: KNNGraph(n_neighbors=SEARCH_K, algorithm="exact", space="tfidf"),
    "exact-svd": lambda: KNNGraph(n_neighbors=SEARCH_K, algorithm="exact", space="svd",
                                  random_state=0),
    "default": lambda: KNNGraph(n_neighbors=SEARCH_K, random_state=0),
}


def load_with_graph(name, kind, args, corpus=None):
    """The corpus and its 50-NN graph of kind ``kind`` (a key of GRAPHS), from
    ``--cache-dir`` when saved there; ``corpus`` is an already loaded corpus."""
    suffix = f"_{kind}"
    cache = Path(args.cache_dir) / f"emr_{name}{suffix}.joblib" if args.cache_dir else None
    if cache is not None and cache.exists():
        return joblib.load(cache)
    t = time.perf_counter()
    X, y, Xt, yt, draw = corpus[:5] if corpus else load_corpus(name, args.data_dir)
    t_load = corpus[6] if corpus else time.perf_counter() - t
    t = time.perf_counter()
    graph = GRAPHS[kind]().fit(X)
    t_search = time.perf_counter() - t
    out = (X, y, Xt, yt, draw, graph, t_load, t_search)
    if cache is not None:
        joblib.dump(out, cache)
    return out


def run_corpus(name, args):
    corpus = None
    for kind in args.graph.split(","):
        corpus = load_with_graph(name, kind, args, corpus)
        run_on_graph(name, kind, corpus, args)


def run_cost(name, kind, corpus, args):
    """EMRClassifier() against one LapRLSClassifier() fit, per draw: ``--repeats`` fits of
    each, alternately, on the shared graph; medians, their ratio, EMR's f steps (CG
    iterations each) and test errors."""
    X, y, Xt, yt, draw, graph, t_load, t_search = corpus
    print(f"\n### {name} ({kind} graph, search {t_search:.1f} s): EMRClassifier() fit / "
          f"LapRLSClassifier() fit, medians of {args.repeats} alternate fits\n")
    print("| draw | LapRLS fit s (CG iterations) | EMR fit s | ratio | EMR f steps: CG "
          "iterations | μ | test error % LapRLS / EMR |")
    print("|---|---|---|---|---|---|---|", flush=True)
    ys0, _ = draw_labels(y, 0, draw)
    LapRLSClassifier(graph=graph).fit(X, ys0)  # warm-up (numba compilation), untimed
    steps = []

    class Counting(LapRLSClassifier):  # records each f step's CG iterations
        def fit(self, X, y):
            super().fit(X, y)
            steps.append(self.n_iter_)
            return self

    ratios = []
    for seed in range(args.draws):
        ys, _ = draw_labels(y, seed, draw)
        t_base, t_emr = [], []
        for _ in range(args.repeats):
            t = time.perf_counter()
            base = LapRLSClassifier(graph=graph).fit(X, ys)
            t_base.append(time.perf_counter() - t)
            steps.clear()
            t = time.perf_counter()
            emr = EMRClassifier(Counting(), graph=graph).fit(X, ys)
            t_emr.append(time.perf_counter() - t)
        ratio = np.median(t_emr) / np.median(t_base)
        ratios.append(ratio)
        errs = [100 * np.mean(m.predict(Xt) != yt) for m in (base, emr)]
        print(f"| {seed} | {np.median(t_base):.3g} ({base.n_iter_}) | {np.median(t_emr):.3g} "
              f"| {ratio:.2f} | {', '.join(map(str, steps))} | "
              f"{np.round(emr.mu_, 3).tolist()} | {errs[0]:.2f} / {errs[1]:.2f} |", flush=True)
    print(f"\nratio: median {np.median(ratios):.2f}, max {np.max(ratios):.2f}", flush=True)


#: powers of --loo-powers; the default candidates are (1, 2, 5, 8)
LOO_POWERS = (1, 2, 3, 5, 8)


def reduced_laprls_loo(Z, gram, labeled, ys, scale):
    """Leave-one-out predictions of LapRLSClassifier()'s objective restricted to w = V c,
    and three smooth label-based criteria of the same fit.

    ``Z`` is X V (V: top right singular vectors of X) with a column of ones (the intercept,
    unpenalised), ``gram`` Zᵀ L^p Z.
    The objective is LapRLS's, (1/l)‖T − Z_l c‖² + cᵀ P c with P = γ_A I' + γ_I s gram
    (I' without the intercept), the 'scaled' γ_A, γ_I and one-vs-rest ±1 targets T; it is
    quadratic, so the LOO residual of labeled row i is r_i / (1 − H_ii), H = Z_l A⁻¹ Z_lᵀ /
    l, A = Z_lᵀ Z_l / l + P (the other rows keep their weight 1/l and γ_A, γ_I their
    values). Returns the LOO labels, the model's coefficients and a dict of criteria,
    each smaller for a better p:

    * ``press``: Σ of the squared LOO residuals;
    * ``gcv``: l ‖R‖² / (l − tr H)² (generalised cross-validation);
    * ``evidence``: minus the log marginal likelihood of T under the Gaussian model whose
      MAP estimate is the fit (T ~ N(0, σ² (I + Z_l P⁻¹ Z_lᵀ / l)) per column, σ²
      shared and profiled out): (C/2) (log det A − log det P) + (lC/2) log Σ_c J_c, J_c
      the objective's minimum for column c — the Occam factor that EMR's μ step lacks.
      (Needs P positive definite, as with the normalised Laplacian; with D − W, L1 = 0
      leaves the intercept unpenalised, log det P = −∞ and the rule meaningless.)
    """
    classes = np.unique(ys[labeled])
    n_classes, n_lab = classes.size, labeled.size
    if n_classes == 2:
        targets = np.where(ys[labeled] == classes[1], 1.0, -1.0)[:, None]
    else:
        targets = np.where(ys[labeled][:, None] == classes[None, :], 1.0, -1.0)
    ridge = np.full(Z.shape[1], scaled_gamma_A(n_lab, n_classes))
    ridge[-1] = 0.0
    Zl = Z[labeled]
    P = np.diag(ridge) + scaled_gamma_I(n_lab, n_classes) * scale * (gram + gram.T) / 2
    A = Zl.T @ Zl / n_lab + P
    coef = np.linalg.solve(A, Zl.T @ targets / n_lab)
    hat = np.einsum("ij,ji->i", Zl, np.linalg.solve(A, Zl.T)) / n_lab
    resid = targets - Zl @ coef
    loo = targets - resid / (1 - hat)[:, None]
    pick = (loo[:, 0] > 0).astype(int) if n_classes == 2 else loo.argmax(axis=1)
    c = targets.shape[1]
    J = (resid ** 2).sum(axis=0) / n_lab + np.einsum("ic,ij,jc->c", coef, P, coef)
    criteria = {
        "press": float(((resid / (1 - hat)[:, None]) ** 2).sum()),
        "gcv": float(n_lab * (resid ** 2).sum() / (n_lab - hat.sum()) ** 2),
        "evidence": float(0.5 * c * (np.linalg.slogdet(A)[1] - np.linalg.slogdet(P)[1])
                          + 0.5 * n_lab * c * np.log(J.sum())),
    }
    return classes[pick], coef, criteria


def run_loo_powers(name, kind, corpus, args):
    """Can the training labels choose the power p? (--loo-powers)

    Per draw, for each p in LOO_POWERS: the leave-one-out error of the training labels
    under LapRLSClassifier()'s objective restricted to the top-r right singular vectors of
    X (exact and cheap there: an (r+1)-square system; r in --loo-dims), the validation
    error and the test error of LapRLSClassifier() on L^p (the full model). Then the test
    error of the p each rule picks — by the LOO error, or by the smooth criteria of
    :func:`reduced_laprls_loo` (PRESS, GCV, the evidence). Read on test labels: the
    study of a selection rule.
    """
    X, y, Xt, yt, draw, graph, t_load, t_search = corpus
    dims = [int(r) for r in args.loo_dims.split(",")]
    print(f"\n### {name}: can the labels choose p? LOO in an r-dimensional SVD space, "
          f"r in {dims}; {args.draws} draws\n", flush=True)
    graph1 = graph.with_laplacian(power=1)
    spaces, setup = {}, {}
    for r in dims:
        t = time.perf_counter()
        U, S, VT = randomized_svd(X, r, n_iter=4, random_state=0)
        Z = np.hstack([U * S, np.ones((X.shape[0], 1))])
        grams, LZ = {}, Z
        for p in range(1, max(LOO_POWERS) + 1):
            LZ = graph1.laplacian_matvec(LZ)
            if p in LOO_POWERS:
                grams[p] = Z.T @ LZ
        setup[r] = time.perf_counter() - t
        spaces[r] = (Z, grams)
    ys0, _ = draw_labels(y, 0, draw)
    t = time.perf_counter()
    LapRLSClassifier(graph=graph).fit(X, ys0)
    t_fit = time.perf_counter() - t
    print("setup (SVD + the Gram matrices Zᵀ L^p Z) s: "
          + ", ".join(f"r {r}: {setup[r]:.2f}" for r in dims)
          + f"; one LapRLSClassifier() fit (draw 0, after a warm-up fit): {t_fit:.2f} s\n")
    print("| draw | test error % of LapRLSClassifier() at p " + " / ".join(map(str, LOO_POWERS))
          + " | validation error % | " + " | ".join(f"LOO error %, r {r}" for r in dims) + " |")
    print("|---|---|---|" + "---|" * len(dims), flush=True)
    picks = {}
    for seed in range(args.draws):
        ys, yv = draw_labels(y, seed, draw)
        labeled, val = np.flatnonzero(ys != -1), np.flatnonzero(yv != -1)
        test, valid = {}, {}
        for p in LOO_POWERS:
            model = LapRLSClassifier(graph=graph.with_laplacian(power=p)).fit(X, ys)
            test[p] = 100 * np.mean(model.predict(Xt) != yt)
            valid[p] = 100 * np.mean(model.predict(X[val]) != yv[val])
        reduced = {r: {p: reduced_laprls_loo(spaces[r][0], spaces[r][1][p], labeled, ys,
                                             graph.scale_)
                       for p in LOO_POWERS} for r in dims}
        loo = {r: {p: 100 * np.mean(reduced[r][p][0] != ys[labeled]) for p in LOO_POWERS}
               for r in dims}
        fmt = lambda d: " / ".join(f"{d[p]:.1f}" for p in LOO_POWERS)  # noqa: E731
        print(f"| {seed} | {fmt(test)} | {fmt(valid)} | "
              + " | ".join(fmt(loo[r]) for r in dims) + " |", flush=True)
        picks.setdefault("p = 5 (the default)", []).append(test[5])
        for powers in ((1, 2, 5, 8), LOO_POWERS):
            tag = "{" + ", ".join(map(str, powers)) + "}"
            # ties go to the power nearest the default p = 5
            near5 = lambda score, p: (score[p], abs(p - 5))  # noqa: E731
            best = min(powers, key=lambda p: near5(valid, p))
            picks.setdefault(f"p of {tag} by validation error", []).append(test[best])
            for r in dims:
                e = loo[r]
                low = min(e[p] for p in powers)
                se = 100 * np.sqrt(low / 100 * (1 - low / 100) / labeled.size)
                rules = {"least LOO error (ties: nearest 5)":
                             min(powers, key=lambda p: near5(e, p)),
                         "largest p of least LOO error": max(p for p in powers if e[p] == low),
                         "largest p within 1 SE of the least LOO error":
                             max(p for p in powers if e[p] <= low + se)}
                for key, what in (("press", "least PRESS"), ("gcv", "least GCV"),
                                  ("evidence", "greatest evidence")):
                    rules[what] = min(powers, key=lambda p: reduced[r][p][2][key])
                for rule, p in rules.items():
                    picks.setdefault(f"p of {tag} by {rule}, r {r}", []).append(test[p])
    print(f"\n| rule ({name}, {args.draws} draws) | test error % of the p it picks (mean) |")
    print("|---|---|")
    for rule, errs in picks.items():
        print(f"| {rule} | {np.mean(errs):.2f} |")
    print(flush=True)


#: document-frequency cuts of --df-graph (the graph on the columns with df ≤ m)
DF_CUTS = "0.5,0.2,0.1"


def run_df_graph(name, kind, corpus, args):
    """A graph that ignores frequent terms (--df-graph; read on test labels).

    ``LapRLSClassifier()`` at its defaults on the shared 50-NN graph, then on the 50-NN
    graph (same kind) built on the columns of X with document frequency ≤ m in the
    training rows only, rows re-normalised to unit length (the classifier still sees every
    term; m in ``--df-cuts``), then — ``--max-df`` — on the TF-IDF of
    ``make_vectorizer(max_df=m)`` (scikit-learn's cut, made by the vectoriser: classifier
    and graph both lose the terms) with its own graph of the same kind.
    """
    from sklearn.preprocessing import normalize

    X, y, Xt, yt, draw, graph, t_load, t_search = corpus
    cuts = [float(m) for m in args.df_cuts.split(",") if m]
    max_dfs = [float(m) for m in args.max_df.split(",") if m] if args.max_df else []
    if max_dfs and name == "synthetic":
        print("(--max-df: the synthetic corpus has no texts to vectorise; skipped)")
        max_dfs = []
    print(f"\n### {name}: graph on the terms of document frequency ≤ m; {X.shape[0]} "
          f"training docs, {X.shape[1]} terms; labels {draw}; {args.draws} draws\n",
          flush=True)
    df = np.asarray((X > 0).sum(axis=0)).ravel() / X.shape[0]
    setups = [("default graph", X, Xt, y, graph, draw, X.shape[1])]
    for m in cuts:
        cols = np.flatnonzero(df <= m)
        g = GRAPHS[kind]().fit(normalize(X[:, cols]))
        setups.append((f"graph on df ≤ {m:g}", X, Xt, y, g, draw, cols.size))
    for m in max_dfs:
        X2, y2, Xt2, yt2, draw2 = load_corpus(name, args.data_dir, max_df=m)
        g = GRAPHS[kind]().fit(X2)
        setups.append((f"vectoriser max_df={m:g}", X2, Xt2, y2, g, draw2, X2.shape[1]))
    ys0, _ = draw_labels(y, 0, draw)
    LapRLSClassifier(graph=graph).fit(X, ys0)  # warm-up (numba compilation), untimed
    print("| LapRLSClassifier() on | graph terms | test error % (mean ± std) | per draw |")
    print("|---|---|---|---|", flush=True)
    for label, Xs, Xts, ys_all, g, dr, n_terms in setups:
        errs = []
        for seed in range(args.draws):
            ys, _ = draw_labels(ys_all, seed, dr)
            model = LapRLSClassifier(graph=g).fit(Xs, ys)
            errs.append(100 * np.mean(model.predict(Xts) != yt))
        print(f"| {label} | {n_terms} | {np.mean(errs):.1f} ± {np.std(errs):.1f} | "
              + ", ".join(f"{e:.1f}" for e in errs) + " |", flush=True)


#: powers of --smoothness; probes of its trace estimate
SMOOTH_POWERS = (1, 2, 3, 5, 8)
TRACE_PROBES = 64


def run_smoothness(name, kind, corpus, args):
    """Would another smoothness scale move EMR's μ off the highest powers? (--smoothness)

    For the fit f of ``LapRLSClassifier()`` (training rows' decision values, every class
    column) and each p in SMOOTH_POWERS, with S_p(f) = Σ_c f_cᵀ L^p f_c on the shared graph's
    normalised Laplacian L:

    * trace(L^p)/n, estimated by TRACE_PROBES Rademacher probes (seed 0), and the roughness
      of f against that of a random vector, n S_p(f) / (‖f‖² trace(L^p));
    * S_p(f) / S_p(f₀), f₀ the same model at γ_I = 0 (the labels alone);
    * S_p(f) / λ_j^p, λ_j the j-th smallest eigenvalue of L, j = C, 2C, 5C for C classes
      (ARPACK, on a connected graph; undefined when λ_j = 0, i.e. j ≤ the number of
      connected components);

    and, per draw, the p that minimises each (what a μ step on that scale would favour).
    """
    import scipy.sparse.linalg as sla
    from scipy.sparse.csgraph import connected_components

    X, y, Xt, yt, draw, graph, t_load, t_search = corpus
    graph1 = graph.with_laplacian(power=1)
    n = X.shape[0]
    n_classes = len(np.unique(y[y >= 0]))

    def powers_quad(F):
        """{p: Σ FᵀL^pF} (F: n × m)."""
        out, LF = {}, F
        for p in range(1, max(SMOOTH_POWERS) + 1):
            LF = graph1.laplacian_matvec(LF)
            if p in SMOOTH_POWERS:
                out[p] = float(np.sum(F * LF))
        return out

    Z = np.random.default_rng(0).choice([-1.0, 1.0], size=(n, TRACE_PROBES))
    trace = {p: v / TRACE_PROBES for p, v in powers_quad(Z).items()}
    js = [n_classes, 2 * n_classes, 5 * n_classes]
    # L's zero eigenvalues are the graph's connected components (exact); ARPACK would miss
    # such a repeated eigenvalue, so it runs only on a connected graph
    n_comp = connected_components(graph1.adjacency_, directed=False)[0]
    if n_comp == 1:
        op = sla.LinearOperator((n, n), matvec=lambda v: 2 * v - graph1.laplacian_matvec(v),
                                dtype=np.float64)
        vals = np.sort(2 - sla.eigsh(op, k=max(js), which="LA", return_eigenvectors=False,
                                     v0=np.ones(n)))
        lam = {j: float(vals[j - 1]) for j in js}
    else:  # λ_j = 0 for j ≤ n_comp; beyond, not computed
        lam = {j: 0.0 if j <= n_comp else float("nan") for j in js}
    fmt = lambda d: ", ".join(f"{d[p]:.3g}" for p in SMOOTH_POWERS)  # noqa: E731
    print(f"\n### {name}: smoothness scales, p = {', '.join(map(str, SMOOTH_POWERS))}; "
          f"{args.draws} draws\n")
    print(f"trace(L^p)/n ({TRACE_PROBES} probes): {fmt({p: t / n for p, t in trace.items()})}")
    print(f"connected components of the graph (zero eigenvalues of L): {n_comp}; λ_j of L: "
          + ", ".join(f"j {j}: {lam[j]:.3g}" for j in js) + "\n", flush=True)
    print("| draw | n S_p(f) / (‖f‖² trace(L^p)) | S_p(f) / S_p(f₀) | least at p: trace-scaled "
          "/ against f₀ / " + " / ".join(f"λ_{j}^p-scaled" for j in js) + " |")
    print("|---|---|---|---|", flush=True)
    for seed in range(args.draws):
        ys, _ = draw_labels(y, seed, draw)
        F = LapRLSClassifier(graph=graph).fit(X, ys).decision_function(X)
        F0 = LapRLSClassifier(graph=graph, gamma_I=0.0).fit(X, ys).decision_function(X)
        F, F0 = (np.asarray(a, dtype=np.float64).reshape(n, -1) for a in (F, F0))
        S, S0 = powers_quad(F), powers_quad(F0)
        rough = {p: n * S[p] / (np.sum(F * F) * trace[p]) for p in SMOOTH_POWERS}
        rel = {p: S[p] / S0[p] for p in SMOOTH_POWERS}
        picks = [min(SMOOTH_POWERS, key=rough.get), min(SMOOTH_POWERS, key=rel.get)]
        for j in js:
            picks.append("undefined" if not lam[j] > 1e-4 else
                         min(SMOOTH_POWERS, key=lambda p: S[p] / lam[j] ** p))
        print(f"| {seed} | {fmt(rough)} | {fmt(rel)} | {' / '.join(map(str, picks))} |",
              flush=True)


def run_on_graph(name, kind, corpus, args):
    X, y, Xt, yt, draw, graph, t_load, t_search = corpus
    if args.df_graph:
        return run_df_graph(name, kind, corpus, args)
    if args.smoothness:
        return run_smoothness(name, kind, corpus, args)
    if args.cost:
        return run_cost(name, kind, corpus, args)
    if args.loo_powers:
        return run_loo_powers(name, kind, corpus, args)
    graphs, _ = candidate_graphs(X, GRID_KP, graph)
    methods = (sweep_methods(graph) if args.gamma_I_sweep else
               gamma_A_sweep_methods(graph) if args.gamma_A_sweep else
               k_sweep_methods(graph) if args.k_sweep else
               gamma_R_sweep_methods(graph) if args.gamma_R_sweep else
               power_methods(graph) if args.powers else methods_for(graph, graphs))
    if args.study:
        methods.update(study_methods(graph, graphs))
    if args.methods != "all":
        wanted = [w.strip().lower() for w in args.methods.split(";")]
        unmatched = [w for w in wanted if not any(w in k.lower() for k in methods)]
        if unmatched:
            sys.exit(f"error: --methods {unmatched} match no method (';'-separated "
                     f"substrings of: {list(methods)})")
        methods = {k: v for k, v in methods.items()
                   if any(w in k.lower() for w in wanted)}
    print(f"\n### {name}: {X.shape[0]} training docs, {Xt.shape[0]} test, {X.shape[1]} terms, "
          f"{len(np.unique(yt))} classes; labels {draw}; {args.draws} draws\n")
    print(f"load + TF-IDF {t_load:.1f} s; {SEARCH_K}-NN graph ({kind}: "
          f"{graph.algorithm_} search in the {graph.space_} space) {t_search:.1f} s "
          f"(shared by the linlap rows, not in their fit time)\n", flush=True)
    ys0, _ = draw_labels(y, 0, draw)
    LapRLSClassifier(graph=graph).fit(X, ys0)  # warm-up (numba compilation), untimed
    print("| method | test error % (mean ± std) | fit time s | notes |")
    print("|---|---|---|---|", flush=True)
    res = {}
    for label, fit in methods.items():
        errs, times, notes = [], [], []
        for seed in range(args.draws):
            ys, yv = draw_labels(y, seed, draw)
            t = time.perf_counter()
            model = fit(X, ys, yv)
            times.append(time.perf_counter() - t)
            errs.append(100 * np.mean(model.predict(Xt) != yt))
            if isinstance(model, EMRClassifier):
                notes.append((model.n_iter_, np.round(model.mu_, 2)))
            sel = getattr(model, "gamma_I_selection_", None)
            if sel is not None:
                notes.append(sel)
        note = ""
        if notes and not isinstance(notes[0], tuple):
            note = ("γ_I chosen " + ", ".join(f"{s.gamma_I:g}" for s in notes)
                    + "; CV error % (draw 0) "
                    + ", ".join(f"{100 * e:.1f}" for e in notes[0].mean_error)
                    + "; 1 SE would choose " + ", ".join(f"{one_se(s):g}" for s in notes))
        elif notes:
            note = (f"f steps {min(n for n, _ in notes)}–{max(n for n, _ in notes)}; "
                    f"mu (draw 0) {notes[0][1].tolist()}")
        res[label] = (np.mean(errs), np.std(errs), np.mean(times), errs, times)
        print(f"| {label} | {np.mean(errs):.1f} ± {np.std(errs):.1f} | "
              f"{np.mean(times):.2f} | {note} |", flush=True)
    print("\nper-draw test error %:")
    for label, r in res.items():
        print(f"  {label}: " + ", ".join(f"{e:.2f}" for e in r[3]))
    ls = {k: v for k, v in res.items() if k.startswith("LabelSpreading")}
    if ls:
        best = min(ls, key=lambda k: ls[k][0])
        print(f"\nLabelSpreading best k (by test error): {best}: {ls[best][0]:.1f} %")
    base = res.get(DEFAULT)
    auto = res.get(AUTO)
    if base and auto:
        ratio = np.mean(auto[4]) / np.mean(base[4])
        print(f"gamma_I='auto' fit / default fit: {ratio:.2f}× (same run); with the search: "
              f"{(np.mean(auto[4]) + t_search) / (np.mean(base[4]) + t_search):.2f}×")
    emr = res.get(EMR)
    if base and emr:
        ratio = np.mean(emr[4]) / np.mean(base[4])
        print(f"EMR fit / default fit: {ratio:.2f}× (same run); with the search: "
              f"{(np.mean(emr[4]) + t_search) / (np.mean(base[4]) + t_search):.2f}×")
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=os.environ.get("LINLAP_DATA"))
    ap.add_argument("--corpora", default="pcmac,20ng,20ng-top,subjects,synthetic")
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--methods", default="all",
                    help="';'-separated substrings of method names, or 'all'")
    ap.add_argument("--study", action="store_true", help="also the default-choice candidates")
    ap.add_argument("--gamma-I-sweep", action="store_true",
                    help="only LapRLS at γ_I in " + ", ".join(f"{g:g}" for g in SWEEP_GAMMA_I))
    ap.add_argument("--gamma-A-sweep", action="store_true",
                    help="only LapRLS at γ_A in " + ", ".join(f"{g:g}" for g in SWEEP_GAMMA_A))
    ap.add_argument("--k-sweep", action="store_true",
                    help="only LapRLSClassifier() on the k-NN subgraph, k in "
                         + ", ".join(map(str, SWEEP_K)))
    ap.add_argument("--gamma-R-sweep", action="store_true",
                    help="only EMRClassifier() at γ_R = m × 'auto', m in "
                         + ", ".join(f"{m:g}" for m in SWEEP_GAMMA_R))
    ap.add_argument("--powers", action="store_true",
                    help="only LapRLSClassifier() on L^p, p in "
                         + ", ".join(map(str, SINGLE_POWERS)) + ", EMRClassifier() over "
                         "p {1, 2, 5, 8} and {1, 2, 3, 5}, and the p of each set chosen on "
                         "validation labels")
    ap.add_argument("--smoothness", action="store_true",
                    help="only the default fit's smoothness on L^p under other scales "
                         "(see run_smoothness)")
    ap.add_argument("--cost", action="store_true",
                    help="only EMRClassifier() against LapRLSClassifier(): fit times, "
                         "alternately, --repeats each per draw")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--loo-powers", action="store_true",
                    help="only the choice of L's power by the training labels' leave-one-out "
                         "error in an SVD space (see run_loo_powers)")
    ap.add_argument("--loo-dims", default="100,300",
                    help="SVD dimensions of --loo-powers, comma-separated")
    ap.add_argument("--df-graph", action="store_true",
                    help="only LapRLSClassifier() on graphs that ignore frequent terms "
                         "(see run_df_graph)")
    ap.add_argument("--df-cuts", default=DF_CUTS,
                    help="document-frequency cuts m of --df-graph, comma-separated")
    ap.add_argument("--max-df", default=None,
                    help="--df-graph: also the vectoriser's max_df at these values, "
                         "comma-separated")
    ap.add_argument("--cache-dir", default=None,
                    help="save / reuse each corpus's TF-IDF and 50-NN graph in this folder")
    ap.add_argument("--graph", default="exact",
                    help="comma-separated kinds of the shared 50-NN graph: "
                         + ", ".join(GRAPHS) + " (see the module docstring)")
    args = ap.parse_args()
    unknown = [g for g in args.graph.split(",") if g not in GRAPHS]
    if unknown:
        sys.exit(f"error: --graph {unknown}: choose from {list(GRAPHS)}")
    corpora = args.corpora.split(",")
    if args.data_dir is None and any(c not in ("pcmac", "synthetic") for c in corpora):
        sys.exit("bench/emr.py: give the data folder with --data-dir or set LINLAP_DATA "
                 "(it holds 20news-bydate.tar.gz and aclImdb_v1.tar.gz).")
    warnings.simplefilter("ignore")
    for name in corpora:
        run_corpus(name, args)


if __name__ == "__main__":
    main()
