"""Many copies of one labeled document: its decision value under the normalised Laplacian
and under D − W.

    PYTHONPATH=. python bench/duplicates.py [--copies 120] [--docs 12]

PCMAC train (bundled), 50 labels (mask_labels, seed 0); each of the first ``--docs``
labeled documents in turn is copied ``--copies`` times into the unlabeled rows, and
LapRLS is fitted with the default graph (normalised L, p = 5, γ_I = 10) and with D − W
(p = 1, γ_I = 0.1). Prints the labeled document's decision value f without copies and
with them, and whether its sign is wrong.
"""

import argparse

import numpy as np
import scipy.sparse as sp

from linlap import KNNGraph, LapRLSClassifier
from linlap.datasets import load_pcmac, mask_labels
from linlap.text import make_vectorizer


def decision(X, y, i, normalized):
    g = KNNGraph(normalized=normalized, power=5 if normalized else 1).fit(X)
    clf = LapRLSClassifier(graph=g, gamma_I=10.0 if normalized else 0.1).fit(X, y)
    return float(clf.decision_function(X[[i]])[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--copies", type=int, default=120)
    ap.add_argument("--docs", type=int, default=12)
    args = ap.parse_args()
    train = load_pcmac("train")
    X = make_vectorizer().fit_transform(train.data)
    y = mask_labels(train.target, 50, random_state=0)
    print("| doc | label | f, normalised L^5 | f with copies | f, D − W | f with copies |")
    print("|---|---|---|---|---|---|")
    for i in np.flatnonzero(y != -1)[:args.docs]:
        Xd = sp.vstack([X] + [X[i]] * args.copies).tocsr()
        yd = np.r_[y, np.full(args.copies, -1)]
        row = []
        for normalized in (True, False):
            f0, f1 = decision(X, y, i, normalized), decision(Xd, yd, i, normalized)
            wrong = " (wrong sign)" if (f1 > 0) != (y[i] == 1) else ""
            row += [f"{f0:.3f}", f"{f1:.3f}{wrong}"]
        print(f"| {i} | {train.target_names[y[i]]} | " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
