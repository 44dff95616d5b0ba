"""What LapRLS feature weights rank, on the bundled PCMAC (the README's "Reading feature
weights"): weight on terms of no labeled document, stability of the top terms across label
draws against LinearSVC, the effect of fit_intercept and of the TF-IDF normalisation, and
feature selection with SelectFromModel with the graph rebuilt or shared.

    PYTHONPATH=. python bench/feature_weights.py [--draws 5] [--top 50]

Training split of PCMAC with 50 labels per draw (``mask_labels``, seeds 0…draws−1), the
test split for accuracy; `make_vectorizer()` TF-IDF; one default `KNNGraph` on the
training and test documents (all rows are in the fit, test rows unlabeled).
"""

import argparse
import itertools
import warnings

import numpy as np
from sklearn.feature_selection import SelectFromModel
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.svm import LinearSVC

from linlap import KNNGraph, LapRLSClassifier
from linlap.datasets import load_pcmac, mask_labels
from linlap.text import make_vectorizer


def top_terms(w, top):
    return set(np.argsort(-np.abs(w), kind="stable")[:top].tolist())


def jaccard(a, b):
    return len(a & b) / len(a | b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--top", type=int, default=50)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    b = load_pcmac()
    test = b.subset == "test"
    texts = np.array(b.data, dtype=object)
    vec = make_vectorizer()
    X = vec.fit_transform(texts).tocsr()
    names = vec.get_feature_names_out()
    graph = KNNGraph().fit(X)
    acc = lambda model, Z: np.mean(model.predict(Z[test]) == b.target[test])  # noqa: E731

    tops = {"LapRLSClassifier()": [], "LinearSVC (labels only)": []}
    for seed in range(args.draws):
        y = mask_labels(np.where(test, -1, b.target), 50, random_state=seed)
        lab = y != -1
        lap = LapRLSClassifier(graph=graph).fit(X, y)
        svc = LinearSVC().fit(X[lab], y[lab])
        tops["LapRLSClassifier()"].append(top_terms(lap.coef_.ravel(), args.top))
        tops["LinearSVC (labels only)"].append(top_terms(svc.coef_.ravel(), args.top))
        if seed == 0:
            w = lap.coef_.ravel()
            absent = np.asarray((X[lab] > 0).sum(axis=0)).ravel() == 0
            print(f"draw 0: {absent.sum()} terms in no labeled document; {np.count_nonzero(w[absent])} "
                  f"of them with a nonzero weight, {np.abs(w[absent]).sum() / np.abs(w).sum():.0%} "
                  f"of sum |w|, {sum(absent[j] for j in tops['LapRLSClassifier()'][0])} of the "
                  f"top {args.top} by |w|")
            order = np.argsort(-np.abs(w), kind="stable")[:args.top]
            print("  those in the top, by |w|: "
                  + ", ".join(f"{names[j]} (rank {r + 1})" for r, j in enumerate(order)
                              if absent[j]))
            y0, w0 = y, w
    for name, sets in tops.items():
        J = [jaccard(p, q) for p, q in itertools.combinations(sets, 2)]
        print(f"{name}: mean pairwise Jaccard of the top {args.top} over {args.draws} draws "
              f"{np.mean(J):.3f}")

    # fit_intercept=False and unnormalised TF-IDF, draw 0
    rank = lambda w: np.argsort(np.argsort(-np.abs(w), kind="stable"))  # noqa: E731
    nb = LapRLSClassifier(graph=graph, fit_intercept=False).fit(X, y0).coef_.ravel()
    for term in ("subject", "lines", "organization"):
        j = int(np.flatnonzero(names == term)[0])
        print(f"|w| rank of {term!r}: {rank(w0)[j] + 1} with the intercept, "
              f"{rank(nb)[j] + 1} with fit_intercept=False")
    raw = make_vectorizer().set_params(norm=None)
    X2 = raw.fit_transform(texts).tocsr()
    w2 = LapRLSClassifier(graph=graph).fit(X2, y0).coef_.ravel()
    print(f"norm=None on the same graph: top-{args.top} Jaccard with the default's "
          f"{jaccard(top_terms(w2, args.top), top_terms(w0, args.top)):.2f}")

    # SelectFromModel, top 200 terms, draw 0
    full = make_pipeline(make_vectorizer(), LapRLSClassifier()).fit(texts, y0)
    rebuilt = Pipeline([("v", make_vectorizer()),
                        ("s", SelectFromModel(LapRLSClassifier(), max_features=200,
                                              threshold=-np.inf)),
                        ("c", LapRLSClassifier())]).fit(texts, y0)
    shared = make_pipeline(SelectFromModel(LapRLSClassifier(graph=graph), max_features=200,
                                           threshold=-np.inf),
                           LapRLSClassifier(graph=graph)).fit(X, y0)
    print(f"test accuracy, draw 0: every term {acc(full, texts):.3f}; top 200 by "
          f"SelectFromModel, graph rebuilt on them {acc(rebuilt, texts):.3f}, the full "
          f"vocabulary's graph shared {acc(shared, X):.3f}")


if __name__ == "__main__":
    main()
