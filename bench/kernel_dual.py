"""The hinge-loss LapSVM dual (seed 001 eqs. 9–11) against the primal PCG LapSVM (seed 003)
on the bundled PCMAC, each at its best (γ_A, γ_I) of a common grid.

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 PYTHONPATH=. python bench/kernel_dual.py \
        [--reps 2] [--gamma-A 1e-6,1e-5,1e-4,1e-3,1e-2] [--gamma-I 1,10,100,1000]

Protocol of ``bench/kernel.py tables`` for PCMAC: TF-IDF by
``linlap.text.make_vectorizer`` on all 1,946 posts, 4 stratified folds × ``--reps``
shuffles; per split 3 folds train, 1 fold is the test set; 50 labeled rows drawn from
the training folds (every class present), the rest of the training folds unlabeled;
KNNGraph defaults (50-NN cosine, normalised Laplacian, p = 5) on the training rows; RBF
with σ = 2.7 (γ = 1/(2σ²)). Methods: ``solver='dual'`` (hinge loss), ``solver='pcg'``
with the stability check (the default) and run to ``tol`` (``early_stopping=None``,
squared hinge). For every method the grid point with the lowest mean test error over
the splits is reported ("best settings", chosen on the test folds alike for all
methods), with its mean solve time (``fit_time_['solve']``: K and the graph
excluded). All fits of a split run one after another in the same process, so the
times are side by side. The data are bundled, so no ``--data-dir`` is needed.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel import draw, load_set  # noqa: E402

from linlap.estimators import KernelLapSVMClassifier  # noqa: E402

METHODS = {"dual": dict(solver="dual"),
           "pcg [stability]": dict(solver="pcg", early_stopping="stability"),
           "pcg [tol]": dict(solver="pcg", early_stopping=None)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--gamma-A", default="1e-6,1e-5,1e-4,1e-3,1e-2")
    ap.add_argument("--gamma-I", default="1,10,100,1000")
    args = ap.parse_args()
    gAs = [float(v) for v in args.gamma_A.split(",")]
    gIs = [float(v) for v in args.gamma_I.split(",")]
    rng = np.random.default_rng(0)
    X, y, cfg = load_set("pcmac", rng)
    gamma = 1.0 / (2 * cfg["sigma"] ** 2)
    splits = []
    for rep in range(args.reps):
        skf = StratifiedKFold(4, shuffle=True, random_state=rep)
        for tr, te in skf.split(np.zeros(len(y)), y):
            L, V, U = draw(y[tr], cfg["n_lab"], cfg["n_val"], rng)
            train = tr[np.r_[L, V, U]]  # V joins U: no validation set here
            ym = np.full(train.size, -1)
            ym[:L.size] = y[train][:L.size]
            splits.append(dict(Xtr=X[train], ym=ym, Xte=X[te], yte=y[te],
                               g=cfg["graph"](X[train])))
    # warm-up: compile numba code and import libsvm outside the timed fits
    sp0 = splits[0]
    for kw in METHODS.values():
        KernelLapSVMClassifier(1e-4, 10.0, gamma=gamma, graph=sp0["g"], **kw).fit(
            sp0["Xtr"], sp0["ym"])
    err = {m: np.zeros((len(gAs), len(gIs), len(splits))) for m in METHODS}
    tim = {m: np.zeros((len(gAs), len(gIs), len(splits))) for m in METHODS}
    t0 = time.perf_counter()
    for s, sp in enumerate(splits):
        for i, gA in enumerate(gAs):
            for j, gI in enumerate(gIs):
                for m, kw in METHODS.items():
                    clf = KernelLapSVMClassifier(gA, gI, gamma=gamma, graph=sp["g"],
                                                 memory_budget=2**33, **kw)
                    clf.fit(sp["Xtr"], sp["ym"])
                    err[m][i, j, s] = 100 * np.mean(clf.predict(sp["Xte"]) != sp["yte"])
                    tim[m][i, j, s] = clf.fit_time_["solve"]
        print(f"# split {s + 1}/{len(splits)} done ({time.perf_counter() - t0:.0f} s)",
              file=sys.stderr, flush=True)
    print(f"PCMAC, {len(splits)} splits (4 folds × {args.reps}), |L| = 50, RBF σ = "
          f"{cfg['sigma']}, grid γ_A ∈ {gAs}, γ_I ∈ {gIs}\n")
    print("| method | best γ_A | best γ_I | test error % (std, ± s.e.) | solve time s "
          "at best | solve time s, mean over grid |")
    print("|---|---|---|---|---|---|")
    for m in METHODS:
        mean = err[m].mean(axis=2)
        i, j = np.unravel_index(np.argmin(mean), mean.shape)
        e = err[m][i, j]
        print(f"| {m} | {gAs[i]:g} | {gIs[j]:g} | {e.mean():.2f} ({e.std():.2f}, "
              f"± {e.std(ddof=1) / np.sqrt(e.size):.2f}) | {tim[m][i, j].mean():.3f} | "
              f"{tim[m].mean():.3f} |")
    print("\nMean test error % over the splits at every grid point (rows γ_A, columns γ_I):")
    for m in METHODS:
        print(f"\n{m}:\n")
        print("| γ_A \\ γ_I | " + " | ".join(f"{v:g}" for v in gIs) + " |")
        print("|---|" + "---|" * len(gIs))
        for i, gA in enumerate(gAs):
            print(f"| {gA:g} | " + " | ".join(
                f"{err[m][i, j].mean():.2f} ({tim[m][i, j].mean():.2f} s)"
                for j in range(len(gIs))) + " |")


if __name__ == "__main__":
    main()
