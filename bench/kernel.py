"""Kernel mode (seed 003): Newton vs PCG with each early stopping check, in the shape of
seed 003's Tables 3, 6 and 7, plus the large-n timings of the kernel mode.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python bench/kernel.py tables [--reps 3] \
        [--sets g50c,pcmac,moons] [--methods newton,stability,validation,mixed]
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python bench/kernel.py check
    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 PYTHONPATH=. python bench/kernel.py speed \
        [--n 13334] [--gamma-A 1e-6] [--gamma-I 1000]
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python bench/kernel.py big [--corpus 20ng|imdb] [--n 20000]

``tables``: data sets G50C-like (two unit-covariance Gaussians in 50-D with equal
priors, means ±(1.645/√50)·1 so the Bayes error is 5%, 550 points, as seed 003 §6.1
describes G50C), PCMAC (``linlap.datasets.load_pcmac``, TF-IDF by
``linlap.text.make_vectorizer``) and two moons (400 points, noise 0.05). Protocol of
seed 003 §6.2: 4 stratified folds, repeated ``--reps`` times with new shuffles; per
split 3 folds train, 1 fold is the test set T; from the training folds a labeled set L
and a validation set V are drawn at random (at least one row per class each), the
rest is U. The graph and the expansion are over L ∪ U. Sizes |L|, |V| follow Table 2
(G50C, PCMAC: 50 and 50; moons: 4 and 10). RBF widths are the paper's σ
(γ = 1/(2σ²)): 17.5 for G50C, 2.7 for PCMAC; moons σ = 0.35.

G50C-like follows seed 003 as far as its text and its authors' code (Melacci's
LapSVMp v0.2, whose defaults the paper does not override for G50C) say: Euclidean
50-NN graph with heat weights exp(−d²/(2t²)), t = mean kNN distance, union
symmetrisation, normalised Laplacian, p = 5 (Table 8: σ = 17.5, nn = 50, p = 5);
no bias (that code refuses a bias with a normalised Laplacian); and the paper's
Table 8/9 weights for primal LapSVM, γ_A' = 0.1, γ_I' = 10 of its eq. 7
½(Σ_L V + γ_A' αᵀKα + γ_I' fᵀL^p f), converted to linlap's
(1/l) Σ_L V + γ_A αᵀKα + γ_I s fᵀL^p f, s = 1/trace(L), as γ_A = γ_A'/l,
γ_I = γ_I'·trace(L)/l (= 2/l times the paper's objective, so the same minimiser;
``check`` verifies it against the paper's Newton system). Each shuffle after the first
draws a new 550-point set, so ``--reps 25`` averages over 25 data sets × 4 folds.
The graph is built by KNNGraph's cosine search on rows lifted to (x, c), c ≫ ‖x‖,
which gives the Euclidean neighbours and (σ being scale-free) the Euclidean heat
weights; ``check`` measures the difference.

PCMAC uses KNNGraph defaults (50-NN, cosine weights, normalised Laplacian, p = 5 —
seed 003 uses nn = 50, p = 5 there); moons a Euclidean 6-NN binary graph, p = 1, built
the same lifted way. For these two γ_A, γ_I are chosen by Newton's validation error on
the first 4 splits over a grid (seed 003 did the same on V) and then fixed. Times are
solver times with K and the graph precomputed (as in seed 003's tables); the K time is
reported separately. Errors are mean (std) over splits, then ± the standard error of
the mean for U and T.

``check``: (1) the Bayes error of the G50C-like generator, analytic and by the Bayes
rule on 10⁶ draws; (2) the lifted heat graph against the exact Euclidean one; (3)
linlap's Newton with the converted weights against the paper's Newton system for
eq. 7 without bias, α = (γ_A' I + I_E K + γ_I' L^p K)⁻¹ I_E y iterated until E is
stable.

``speed``: one split of a G50C-like set with n_total rows (default 13,334, so that
L ∪ U ≈ 10,000): Newton vs PCG[stability], both single-threaded (set
NUMBA_NUM_THREADS=1 as above) so the ratio compares algorithms.

``big``: fit time of KernelLapSVMClassifier (RBF, sparse TF-IDF, K cached in float32
under the default 2 GiB budget, stability check) on all 18,846 posts of 20 Newsgroups
(binary: first 10 groups vs last 10, like seed 003's COIL20(B)/USPST(B)) or on the
first n reviews of IMDB train; graph built first and reported separately.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from linlap import KNNGraph
from linlap.estimators import KernelLapSVMClassifier

DATA = None  # --data-dir / LINLAP_DATA, set by main()
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import add_data_dir, archive as data_archive  # noqa: E402
METHODS = ("newton", "stability", "validation", "mixed")


# -- data ---------------------------------------------------------------------------------
# Means ±μ·1 in 50-D: ‖μ₁ − μ₀‖ = 2μ√50, and for two unit-covariance Gaussians with equal
# priors the Bayes error is Φ(−‖μ₁ − μ₀‖/2) = Φ(−μ√50) = 5% ⇔ μ√50 = Φ⁻¹(0.95) = 1.6448536.
G50C_MU = 1.6448536269514722 / np.sqrt(50)


def g50c_like(n, rng):
    y = np.r_[np.zeros(n // 2, int), np.ones(n - n // 2, int)]
    rng.shuffle(y)
    X = rng.standard_normal((n, 50)) + np.where(y[:, None] == 1, G50C_MU, -G50C_MU)
    return X, y


def euclidean_graph(X, k, power, weight="binary"):
    """Euclidean kNN graph (normalised Laplacian) through KNNGraph's cosine search on the
    rows lifted to (x, c), c ≫ ‖x‖: the lifted unit vectors are ≈ (x/c, 1), so their
    distances are ‖x_i − x_j‖/c to a relative O(‖x‖/c) and the neighbour order is the
    Euclidean one. ``weight='heat'`` with σ = the mean kNN distance (KNNGraph's default)
    is scale-free, hence the Euclidean heat graph of seed 003's code (σ = mean edge
    length); ``check`` measures the difference to the exact Euclidean W."""
    Z = np.hstack([X, np.full((X.shape[0], 1), 1e3 * np.abs(X).max())])
    return KNNGraph(n_neighbors=k, weight=weight, normalized=True, power=power,
                    algorithm="exact").fit(Z)


def load_set(name, rng):
    if name == "g50c":
        X, y = g50c_like(550, rng)
        # seed 003 Table 8 (LapSVM primal, Newton): σ = 17.5, nn = 50, p = 5,
        # γ_A' = 0.1, γ_I' = 10 in its eq. 7; heat weights and no bias as its code does
        # with a normalised Laplacian (see the module docstring).
        return X, y, dict(sigma=17.5, n_lab=50, n_val=50, paper=(1e-1, 10.0),
                          fit_intercept=False, fresh=lambda r: g50c_like(550, r),
                          graph=lambda Xtr: euclidean_graph(Xtr, 50, 5, "heat"))
    if name == "moons":
        from sklearn.datasets import make_moons
        X, y = make_moons(400, noise=0.05, random_state=int(rng.integers(1 << 31)))
        return X, y, dict(sigma=0.35, n_lab=4, n_val=10,
                          graph=lambda Xtr: euclidean_graph(Xtr, 6, 1))
    from linlap.datasets import load_pcmac
    from linlap.text import make_vectorizer
    b = load_pcmac("all")
    X = make_vectorizer().fit_transform(b.data)  # unsupervised: all docs, as seed 003
    return X, np.asarray(b.target), dict(sigma=2.7, n_lab=50, n_val=50,
                                         graph=lambda Xtr: KNNGraph(random_state=0).fit(Xtr))


def draw(y_train, n_lab, n_val, rng):
    """Indices (into the training folds) of L and V, each with every class present."""
    while True:
        perm = rng.permutation(y_train.size)
        L, V = perm[:n_lab], perm[n_lab:n_lab + n_val]
        k = np.unique(y_train).size
        if np.unique(y_train[L]).size == k and np.unique(y_train[V]).size == k:
            return L, V, perm[n_lab + n_val:]


def paper_to_linlap(gA_paper, gI_paper, n_labeled, graph):
    """Seed 003's eq. 7, ½(Σ_L V + γ_A' αᵀKα + γ_I' fᵀL^p f), times 2/l is linlap's
    (1/l) Σ_L V + γ_A αᵀKα + γ_I s fᵀL^p f (s = 1/trace L) when γ_A = γ_A'/l and
    γ_I = γ_I'·trace(L)/l — same minimiser."""
    return gA_paper / n_labeled, gI_paper * graph.trace_ / n_labeled


def fit_one(method, Xtr, ytr_masked, g, gamma, gA, gI, Xv, yv, fit_intercept=True):
    kw = dict(gamma=gamma, graph=g, memory_budget=2**34, fit_intercept=fit_intercept)
    if method == "newton":
        clf = KernelLapSVMClassifier(gA, gI, solver="newton", **kw)
        return clf.fit(Xtr, ytr_masked)
    clf = KernelLapSVMClassifier(gA, gI, early_stopping=method, **kw)
    return clf.fit(Xtr, ytr_masked, X_val=Xv, y_val=yv)


def warmup():
    """Load / compile every numba function once, so that no timed fit pays for it."""
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X, y = g50c_like(80, rng)
    ym = np.full(80, -1)
    ym[:10] = y[:10]
    g = euclidean_graph(X, 5, 2)
    for m in METHODS:
        fit_one(m, X, ym, g, 0.01, 1e-3, 1.0, X[10:20], y[10:20])
    Xs = sp.csr_matrix(np.abs(X))
    KernelLapSVMClassifier(graph=KNNGraph(n_neighbors=5).fit(Xs)).fit(Xs, ym).predict(Xs)


GRID_A = (1e-6, 1e-4, 1e-2)
GRID_I = (1.0, 10.0, 100.0)
GRID_PAPER = (1e-6, 1e-4, 1e-2, 1e-1, 1.0, 10.0, 100.0)  # seed 003 §6.3, for γ_A' and γ_I'


def select(splits, gamma):
    """(γ_A, γ_I) of the grid with the lowest mean Newton validation error on the
    given splits (seed 003 §6.3 chose them on V the same way)."""
    best = None
    for gA in GRID_A:
        for gI in GRID_I:
            err = np.mean([np.mean(fit_one("newton", sp["Xtr"], sp["ym"], sp["g"], gamma, gA,
                                           gI, sp["Xv"], sp["yv"]).predict(sp["Xv"])
                                   != sp["yv"]) for sp in splits])
            if best is None or err < best[0] - 1e-12:
                best = (err, gA, gI)
    return best[1], best[2]


def select_paper(splits, gamma, fit_intercept):
    """(γ_A', γ_I') of seed 003's 7 × 7 grid with the lowest mean Newton error on V over
    the given splits, each converted per split by :func:`paper_to_linlap`."""
    best = None
    for a in GRID_PAPER:
        for i in GRID_PAPER:
            err = np.mean([np.mean(fit_one("newton", sp["Xtr"], sp["ym"], sp["g"], gamma,
                                           *paper_to_linlap(a, i, sp["nl"], sp["g"]),
                                           sp["Xv"], sp["yv"], fit_intercept=fit_intercept)
                                   .predict(sp["Xv"]) != sp["yv"]) for sp in splits])
            if best is None or err < best[0] - 1e-12:
                best = (err, a, i)
    return best[1], best[2]


def tables(reps, sets, methods=METHODS, select_g50c=False):
    from sklearn.model_selection import StratifiedKFold

    warmup()
    print("| data set | method | solve time s | K time s | PCG iters | LS pieces/iter "
          "| error U % | error V % | error T % |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in sets:
        rng = np.random.default_rng(0)
        X, y, cfg = load_set(name, rng)
        gamma = 1.0 / (2 * cfg["sigma"] ** 2)
        fi = cfg.get("fit_intercept", True)
        splits = []
        for rep in range(reps):
            if "fresh" in cfg and rep > 0:  # a new draw of the synthetic set per shuffle
                X, y = cfg["fresh"](rng)
            skf = StratifiedKFold(4, shuffle=True, random_state=rep)
            for tr, te in skf.split(np.zeros(len(y)), y):
                L, V, U = draw(y[tr], cfg["n_lab"], cfg["n_val"], rng)
                train = tr[np.r_[L, U]]
                ym = np.full(train.size, -1)
                ym[:L.size] = y[train][:L.size]
                splits.append(dict(Xtr=X[train], ytr=y[train], ym=ym, nl=L.size,
                                   Xv=X[tr[V]], yv=y[tr[V]], Xte=X[te], yte=y[te],
                                   g=cfg["graph"](X[train])))
        if "paper" in cfg:  # the paper's (γ_A', γ_I'), converted per split
            pw = cfg["paper"]
            if select_g50c:  # or chosen as the paper did, on V over its 12 splits
                pw = select_paper(splits[:12], gamma, fi)
            for sp in splits:
                sp["gA"], sp["gI"] = paper_to_linlap(*pw, sp["nl"], sp["g"])
            tag = "V-selected " if select_g50c else ""
            head = (f"{tag}γ_A'={pw[0]:g}, γ_I'={pw[1]:g} → "
                    f"γ_A={splits[0]['gA']:.3g}, γ_I={splits[0]['gI']:.3g}")
        else:
            chosen = select(splits[:4], gamma)
            for sp in splits:
                sp["gA"], sp["gI"] = chosen
            head = f"γ_A={chosen[0]:g}, γ_I={chosen[1]:g}"
        rows = {m: [] for m in methods}
        for sp in splits:
            for m in methods:
                clf = fit_one(m, sp["Xtr"], sp["ym"], sp["g"], gamma, sp["gA"], sp["gI"],
                              sp["Xv"], sp["yv"], fit_intercept=fi)
                nl = sp["nl"]
                rows[m].append(dict(
                    t=clf.fit_time_["solve"], tk=clf.fit_time_["kernel"],
                    it=clf.n_iter_, ls=clf.ls_pieces_ or np.nan,
                    eu=100 * np.mean(clf.transduction_[nl:] != sp["ytr"][nl:]),
                    ev=100 * np.mean(clf.predict(sp["Xv"]) != sp["yv"]),
                    et=100 * np.mean(clf.predict(sp["Xte"]) != sp["yte"])))
        for m in methods:
            r = {k: np.array([d[k] for d in rows[m]]) for k in rows[m][0]}
            ms = lambda a: f"{np.mean(a):.2f} ({np.std(a):.2f})"  # noqa: E731
            se = lambda a: f" ±{np.std(a, ddof=1) / np.sqrt(a.size):.2f}"  # noqa: E731
            label = "Newton" if m == "newton" else f"PCG [{m}]"
            it = "-" if m == "newton" else ms(r["it"])
            ls = "-" if m == "newton" else f"{np.nanmean(r['ls']):.2f}"
            print(f"| {name} ({head}; {len(splits)} splits) | {label} | "
                  f"{np.mean(r['t']):.3f} ({np.std(r['t']):.3f}) | {np.mean(r['tk']):.3f} | "
                  f"{it} | {ls} | {ms(r['eu'])}{se(r['eu'])} | {ms(r['ev'])} | "
                  f"{ms(r['et'])}{se(r['et'])} |", flush=True)


def check():
    """The G50C-like set and the conversion of seed 003's hyper-parameters:

    1. Bayes error of ``g50c_like``: Φ(−μ√50) and the error of the Bayes rule
       sign(Σ_j x_j) on 10⁶ fresh points.
    2. The lifted-cosine heat graph against the exact Euclidean 50-NN heat graph
       (σ = mean kNN distance, union symmetrisation) on one training set.
    3. linlap's Newton with γ_A = γ_A'/l, γ_I = γ_I'·trace(L)/l, no bias, against the
       paper's own Newton system for eq. 7 without bias (seed 003 §3.1 / its code):
       α = (γ_A' I + I_E K + γ_I' L^p K)⁻¹ I_E y, iterated until E is stable.
    """
    from scipy.stats import norm
    from scipy.spatial.distance import cdist
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    print(f"1. Bayes error: Φ(−μ√50) = {100 * norm.cdf(-G50C_MU * np.sqrt(50)):.4f} %", end="")
    errs = []
    for _ in range(10):
        X, y = g50c_like(100_000, rng)
        errs.append(np.mean((X.sum(1) > 0) != (y == 1)))
    print(f"; Bayes rule on 10⁶ draws: {100 * np.mean(errs):.3f} % "
          f"(± {100 * np.sqrt(0.05 * 0.95 / 1e6):.3f})")

    X, y = g50c_like(550, rng)
    Xtr = X[:364]
    g = euclidean_graph(Xtr, 50, 5, "heat")
    D = cdist(Xtr, Xtr)
    np.fill_diagonal(D, np.inf)
    nb = np.argsort(D, axis=1)[:, :50]
    dk = np.take_along_axis(D, nb, 1)
    s = dk.mean()
    A = sp.csr_matrix((np.exp(-dk.ravel() ** 2 / (2 * s * s)),
                       (np.repeat(np.arange(364), 50), nb.ravel())), shape=(364, 364))
    W = A.maximum(A.T).toarray()
    Wg = g.adjacency_.toarray()
    print(f"2. heat graph: same edges {np.array_equal(W > 0, Wg > 0)}, "
          f"max |ΔW| = {np.abs(W - Wg).max():.2e} (weights in "
          f"[{W[W > 0].min():.3f}, {W.max():.3f}], σ = {s:.3f})")

    gA_p, gI_p = 1e-1, 10.0
    ym = np.full(364, -1)
    ym[:50] = y[:50]
    gamma = 1 / (2 * 17.5 ** 2)
    gA, gI = paper_to_linlap(gA_p, gI_p, 50, g)
    clf = fit_one("newton", Xtr, ym, g, gamma, gA, gI, None, None, fit_intercept=False)
    K = np.exp(-gamma * cdist(Xtr, Xtr, "sqeuclidean"))
    M = g.laplacian_matrix().toarray()
    yy = np.zeros(364)
    yy[:50] = np.where(y[:50] == clf.classes_[1], 1.0, -1.0)
    f = np.zeros(364)
    E = None
    for _ in range(50):
        E_new = np.zeros(364, bool)
        E_new[:50] = yy[:50] * f[:50] < 1
        if E is not None and np.array_equal(E, E_new):
            break
        E = E_new
        a = np.linalg.solve(gA_p * np.eye(364) + E[:, None] * K + gI_p * M @ K, E * yy)
        f = K @ a
    fl = clf.decision_function(Xtr)
    print(f"3. γ_A = {gA:.4g}, γ_I = {gI:.4g} (trace L = {g.trace_:g}, l = 50): "
          f"max |f_linlap − f_paper| = {np.abs(fl - f).max():.2e} "
          f"(max |f| = {np.abs(f).max():.3f}), max |Δα| = "
          f"{np.abs(clf.dual_coef_.ravel() - a).max():.2e}")


def speed(n_total, gA, gI):
    warmup()
    rng = np.random.default_rng(1)
    X, y = g50c_like(n_total, rng)
    te = rng.permutation(n_total)[: n_total // 4]
    tr = np.setdiff1d(np.arange(n_total), te)
    L, V, U = draw(y[tr], 50, 50, rng)
    train = tr[np.r_[L, U]]
    Xtr, ytr = X[train], y[train]
    ym = np.full(train.size, -1)
    ym[:50] = ytr[:50]
    Xv, yv = X[tr[V]], y[tr[V]]
    t = time.perf_counter()
    g = euclidean_graph(Xtr, 50, 5)
    print(f"G50C-like, n = {train.size} training rows (L = 50, U = {U.size}), "
          f"{te.size} test rows; graph {time.perf_counter() - t:.1f} s; γ_A = {gA:g}, "
          f"γ_I = {gI:g}")
    gamma = 1.0 / (2 * 17.5 ** 2)
    print("| method | K time s | solve time s | iterations | error U % | error T % |")
    print("|---|---|---|---|---|---|")
    for m in ("stability", "newton"):
        clf = fit_one(m, Xtr, ym, g, gamma, gA, gI, Xv, yv)
        eu = 100 * np.mean(clf.transduction_[50:] != ytr[50:])
        et = 100 * np.mean(clf.predict(X[te]) != y[te])
        print(f"| {'Newton' if m == 'newton' else 'PCG [stability]'} | "
              f"{clf.fit_time_['kernel']:.1f} | {clf.fit_time_['solve']:.1f} | {clf.n_iter_} | "
              f"{eu:.2f} | {et:.2f} |", flush=True)


def big(corpus, n, n_labeled):
    from linlap.text import make_vectorizer
    rng = np.random.default_rng(0)
    t = time.perf_counter()
    if corpus == "20ng":
        from linlap.datasets import load_20newsgroups
        b = load_20newsgroups(data_archive(DATA, "20ng"), "all")
        y = (np.asarray(b.target) >= 10).astype(int)
        docs = b.data
    else:
        from linlap.datasets import load_imdb
        b = load_imdb(data_archive(DATA, "imdb"), "train")
        idx = rng.permutation(len(b.data))[:n]
        docs = [b.data[i] for i in idx]
        y = np.asarray(b.target)[idx]
    warmup()
    X = make_vectorizer().fit_transform(docs)
    X = X[:n]
    y = y[:n]
    keep = np.diff(X.indptr) > 0  # empty documents cannot enter the graph
    X, y = X[keep], y[keep]
    print(f"{corpus}: {X.shape[0]} rows, {X.shape[1]} terms, {X.nnz / X.shape[0]:.0f} nnz/row; "
          f"load + TF-IDF {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    g = KNNGraph(random_state=0, n_jobs=2).fit(X)
    print(f"graph ({g.n_neighbors}-NN, {g.algorithm_}): {time.perf_counter() - t:.1f} s")
    ym = np.full(y.size, -1)
    lab = rng.choice(y.size, n_labeled, replace=False)
    ym[lab] = y[lab]
    t = time.perf_counter()
    clf = KernelLapSVMClassifier(graph=g).fit(X, ym)
    wall = time.perf_counter() - t
    unl = ym == -1
    print(f"KernelLapSVMClassifier defaults (γ_A={clf.gamma_A:g}, γ_I={clf.gamma_I:g}, "
          f"RBF γ={clf.gamma_:.3g}, K {clf.kernel_dtype_}): fit {wall:.1f} s "
          f"(K {clf.fit_time_['kernel']:.1f} s, PCG {clf.fit_time_['solve']:.1f} s, "
          f"{clf.n_iter_} iterations, stop: {clf.stop_reason_}); "
          f"error on U {100 * np.mean(clf.transduction_[unl] != y[unl]):.2f} % "
          f"({n_labeled} labels)")


def main():
    global DATA
    ap = argparse.ArgumentParser()
    add_data_dir(ap)
    ap.add_argument("what", choices=["tables", "speed", "big", "check"])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sets", default="g50c,pcmac,moons")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--select-g50c", action="store_true",
                    help="choose G50C's γ_A', γ_I' on V over seed 003's 7x7 grid instead "
                         "of taking its Table 8 values")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--corpus", default="20ng", choices=["20ng", "imdb"])
    ap.add_argument("--labels", type=int, default=200)
    ap.add_argument("--gamma-A", type=float, default=1e-6)
    ap.add_argument("--gamma-I", type=float, default=1000.0)
    a = ap.parse_args()
    DATA = a.data_dir
    if a.what == "tables":
        tables(a.reps, a.sets.split(","), tuple(a.methods.split(",")), a.select_g50c)
    elif a.what == "check":
        check()
    elif a.what == "speed":
        speed(a.n or 13334, a.gamma_A, a.gamma_I)
    else:
        big(a.corpus, a.n or 20000, a.labels)


if __name__ == "__main__":
    main()
