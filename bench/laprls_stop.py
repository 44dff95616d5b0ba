"""LapRLS's stopping rule with small weights: the relative residual alone against the
residual plus the objective rule (``laprls_linear``'s ``ENERGY_RTOL``), on PCMAC.

    python bench/laprls_stop.py [--draws 3]

For each draw (50 labels, ``mask_labels`` seeds 0…) and each (γ_A, γ_I) the fit at the
default tol = 1e-4 with the rule switched off (``ENERGY_RTOL`` set huge) and on, against the
minimiser (tol = 1e-12): J's relative gap, CG iterations, the coefficients' relative
distance and the share of test predictions that differ, and the test errors.
"""

import argparse
import warnings

import numpy as np

import linlap.solvers.laprls as laprls
from linlap import KNNGraph, LapRLSClassifier
from linlap.datasets import load_pcmac, mask_labels
from linlap.text import make_vectorizer

SETTINGS = [(3e-6, 3e-3), (1e-6, 1e-3), (1e-6, 1e-2), (2.5e-5, 20.0)]


def objective(m, X, ys, g):
    lab = ys != -1
    f = m.decision_function(X)
    t = np.where(ys[lab] == m.classes_[1], 1.0, -1.0)
    w = m.coef_[0]
    return (np.mean((t - f[lab]) ** 2) + m.gamma_A_ * w @ w
            + m.gamma_I_ * g.scale_ * f @ g.laplacian_matvec(f))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=3)
    args = ap.parse_args()
    train, test = load_pcmac("train"), load_pcmac("test")
    vec = make_vectorizer()
    X, Xt = vec.fit_transform(train.data), vec.transform(test.data)
    y, yt = np.asarray(train.target), np.asarray(test.target)
    g = KNNGraph(random_state=0).fit(X)
    default = laprls.ENERGY_RTOL
    print("| draw | γ_A, γ_I | rule | CG iterations | J / J* − 1 | ‖w − w*‖/‖w*‖ | "
          "predictions differing % | test error % (minimiser) |")
    print("|---|---|---|---|---|---|---|---|")
    warnings.simplefilter("ignore")
    for seed in range(args.draws):
        ys = mask_labels(y, 50, random_state=seed)
        for gA, gI in SETTINGS:
            laprls.ENERGY_RTOL = default
            best = LapRLSClassifier(gamma_A=gA, gamma_I=gI, graph=g, tol=1e-12,
                                    max_iter=100000).fit(X, ys)
            J_star = objective(best, X, ys, g)
            for rule, rtol in (("residual", 1e30), ("residual + objective", default)):
                laprls.ENERGY_RTOL = rtol
                m = LapRLSClassifier(gamma_A=gA, gamma_I=gI, graph=g).fit(X, ys)
                gap = objective(m, X, ys, g) / J_star - 1
                dist = np.linalg.norm(m.coef_ - best.coef_) / np.linalg.norm(best.coef_)
                p, pb = m.predict(Xt), best.predict(Xt)
                print(f"| {seed} | {gA:g}, {gI:g} | {rule} | {m.n_iter_} | {gap:.2e} | "
                      f"{dist:.3f} | {100 * np.mean(p != pb):.1f} | "
                      f"{100 * np.mean(p != yt):.1f} ({100 * np.mean(pb != yt):.1f}) |",
                      flush=True)
    laprls.ENERGY_RTOL = default


if __name__ == "__main__":
    main()
