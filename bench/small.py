"""Small corpora: the default graph's neighbourhood size on a few hundred documents.

    python bench/small.py [--data-dir DIR] [--draws 10] [--sizes 60,120,250,500,1000]

Corpora: PCMAC (bundled, 2 classes) and 20 Newsgroups comp.graphics / rec.autos /
sci.med / talk.politics.misc (4 classes, from ``20news-bydate.tar.gz`` in DIR or
$LINLAP_DATA; skipped without it). Per size n and draw (seed): n training documents drawn
at random from the training split, a quarter of them labeled (``mask_labels``), the
TF-IDF (``make_vectorizer``) fitted on those n, and the whole test split scored. Rows:
``LapRLSClassifier()`` (its default graph: k = 50, at most a twentieth of the non-empty
documents but at least 5), the same with fixed k (the earlier default was k = 50 capped at
n − 1), and LinearSVC on the labels. Prints one markdown table per corpus: mean test error
% over the draws.
"""

import argparse
import warnings

import numpy as np
from sklearn.svm import LinearSVC

from linlap import KNNGraph, LapRLSClassifier
from linlap.datasets import load_20newsgroups, load_pcmac, mask_labels
from linlap.estimators._base import capped_n_neighbors
from linlap.text import make_vectorizer

from _data import add_data_dir, archive

GROUPS = ["comp.graphics", "rec.autos", "sci.med", "talk.politics.misc"]
FIXED_K = (5, 10, 20, 50)


def corpora(data_dir):
    yield "PCMAC", load_pcmac("train"), load_pcmac("test")
    if data_dir:
        path = archive(data_dir, "20ng")
        yield ("20 Newsgroups, 4 groups", load_20newsgroups(path, "train", categories=GROUPS),
               load_20newsgroups(path, "test", categories=GROUPS))


def run(name, train, test, sizes, draws):
    docs, y = np.array(train.data, dtype=object), np.asarray(train.target)
    rows = {}
    for n in sizes:
        for seed in range(draws):
            rng = np.random.default_rng(seed)
            pick = rng.choice(y.size, n, replace=False)
            vec = make_vectorizer()
            X = vec.fit_transform(docs[pick])
            Xt = vec.transform(test.data)
            ys = mask_labels(y[pick], n // 4, random_state=seed)
            lab = ys != -1
            models = {"LapRLSClassifier() (default k)": LapRLSClassifier()}
            for k in FIXED_K:
                models[f"k = {k}"] = LapRLSClassifier(
                    graph=KNNGraph(n_neighbors=capped_n_neighbors(X, k)))
            for label, model in models.items():
                model.fit(X, ys)
                err = 100 * np.mean(model.predict(Xt) != test.target)
                rows.setdefault(label, {}).setdefault(n, []).append(err)
                if label.startswith("LapRLSClassifier()"):
                    rows.setdefault("default k used", {}).setdefault(n, []).append(
                        model.graph_.n_neighbors)
            svc = LinearSVC().fit(X[lab], ys[lab])
            rows.setdefault("LinearSVC (labels only)", {}).setdefault(n, []).append(
                100 * np.mean(svc.predict(Xt) != test.target))
    print(f"\n#### {name}: test error % (mean over {draws} draws), n training documents, "
          f"n/4 labeled\n")
    print("| method | " + " | ".join(f"n = {n}" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for label, by_n in rows.items():
        fmt = "{:.0f}" if label == "default k used" else "{:.1f}"
        print(f"| {label} | " + " | ".join(fmt.format(np.mean(by_n[n])) for n in sizes) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_dir(ap)
    ap.add_argument("--draws", type=int, default=10)
    ap.add_argument("--sizes", default="60,120,250,500,1000")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    sizes = [int(s) for s in args.sizes.split(",")]
    for name, train, test in corpora(args.data_dir):
        run(name, train, test, sizes, args.draws)


if __name__ == "__main__":
    main()
