"""The defaults on the matrices users bring: counts, unnormalised TF-IDF, rescaled rows.

    python bench/preprocessing.py [--data-dir DIR] [--corpora pcmac,20ng-top] [--draws 5]

Corpora (as in ``bench/emr.py``): ``pcmac`` (bundled; 50 labels) and ``20ng-top`` (20
Newsgroups by top-level group, 7 classes, 5 labels per class; DIR, default $LINLAP_DATA,
holds ``20news-bydate.tar.gz``). Each vectoriser is fitted on the training texts; the same
label draws (``mask_labels``, seeds 0…draws−1) for every row; each matrix gets the graph
``KNNGraph()`` builds on it (cosine: the same graph for X and any rescaling of its rows).
Rows: ``LapRLSClassifier()`` and ``LapSVMClassifier()`` at their defaults, LapRLS with
the 'scaled' γ_A multiplied by the mean squared norm of the non-empty rows (a rule that
would make the fit free of a uniform scale of X; not adopted, see bench/RESULTS.md), and
LinearSVC on the labeled rows (``random_state=0``: liblinear shuffles its coordinates).
Printed: test error % (mean ± std), the 5th / 50th / 95th percentile of the non-empty rows'
norms, and whether ``fit`` warned about the rows (unequal norms, or norms far from 1 with
the 'scaled' γ_A).
"""

import argparse
import os
import sys
import warnings

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer
from sklearn.svm import LinearSVC

from linlap import KNNGraph, LapRLSClassifier, LapSVMClassifier
from linlap.datasets import load_20newsgroups, load_pcmac, mask_labels
from linlap.estimators import scaled_gamma_A
from linlap.estimators._base import ROW_NORM_WARNING, row_squared_norms
from linlap.text import make_vectorizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _data import add_data_dir, archive as data_archive, top_level_codes  # noqa: E402


class Scaled:
    """A vectoriser's output times a constant (a uniform rescaling of every row)."""

    def __init__(self, vectorizer, factor):
        self.vectorizer, self.factor = vectorizer, factor

    def fit_transform(self, texts):
        return self.factor * self.vectorizer.fit_transform(texts)

    def transform(self, texts):
        return self.factor * self.vectorizer.transform(texts)


VECTORIZERS = {
    "TF-IDF, `make_vectorizer()` (rows of norm 1)": lambda: make_vectorizer(),
    "the same × 0.1": lambda: Scaled(make_vectorizer(), 0.1),
    "the same × 10": lambda: Scaled(make_vectorizer(), 10.0),
    "TF-IDF without row normalisation (`norm=None`)": lambda: make_vectorizer(norm=None),
    "counts (`CountVectorizer(stop_words='english', min_df=2)`)":
        lambda: CountVectorizer(stop_words="english", min_df=2),
    "the same counts + `Normalizer()`":
        lambda: make_pipeline(CountVectorizer(stop_words="english", min_df=2), Normalizer()),
}


def load(name, data_dir):
    if name == "pcmac":
        tr, te = load_pcmac("train"), load_pcmac("test")
        return tr.data, tr.target, te.data, te.target, dict(n_labeled=50, per_class=False)
    if name != "20ng-top":
        raise SystemExit(f"unknown corpus {name!r}: pcmac or 20ng-top")
    path = data_archive(data_dir, "20ng")
    tr, te = load_20newsgroups(path, "train"), load_20newsgroups(path, "test")
    code = top_level_codes(tr.target_names)
    return tr.data, code[tr.target], te.data, code[te.target], dict(n_labeled=5,
                                                                      per_class=True)


def run(name, args):
    texts, y, test_texts, yt, draw = load(name, args.data_dir)
    n_classes = np.unique(y).size
    print(f"\n### {name}: {len(texts)} training docs, {len(test_texts)} test, "
          f"{draw['n_labeled']} labels{' per class' if draw['per_class'] else ''}, "
          f"{args.draws} draws\n")
    print("| matrix | row norms p5 / p50 / p95 | fit warns | LapRLS | LapSVM "
          "| LapRLS, 'scaled' γ_A × mean squared row norm | LinearSVC |")
    print("|---|---|---|---|---|---|---|", flush=True)
    for label, make in VECTORIZERS.items():
        vec = make()
        X, Xt = vec.fit_transform(texts).astype(np.float64), vec.transform(test_texts)
        squared = row_squared_norms(X)
        norms = np.sqrt(squared[squared > 0])
        mean_squared = float(np.mean(norms ** 2))
        graph = KNNGraph().fit(X)
        errs = {k: [] for k in ("rls", "svm", "unit", "lsvc")}
        warned = False
        for seed in range(args.draws):
            ys = mask_labels(y, draw["n_labeled"], per_class=draw["per_class"],
                             random_state=seed)
            lab = ys != -1
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                rls = LapRLSClassifier(graph=graph).fit(X, ys)
            warned |= any(str(w.message).startswith(ROW_NORM_WARNING) for w in caught)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                svm = LapSVMClassifier(graph=graph).fit(X, ys)
                unit = LapRLSClassifier(gamma_A=scaled_gamma_A(int(lab.sum()), n_classes)
                                        * mean_squared, graph=graph).fit(X, ys)
                lsvc = LinearSVC(random_state=0).fit(X[lab], ys[lab])
            for key, model in (("rls", rls), ("svm", svm), ("unit", unit), ("lsvc", lsvc)):
                errs[key].append(100 * np.mean(model.predict(Xt) != yt))
        cells = " | ".join(f"{np.mean(e):.1f} ± {np.std(e):.1f}" for e in errs.values())
        p5, p50, p95 = np.percentile(norms, [5, 50, 95])
        print(f"| {label} | {p5:.3g} / {p50:.3g} / {p95:.3g} | {'yes' if warned else 'no'} "
              f"| {cells} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_dir(ap)
    ap.add_argument("--corpora", default="pcmac,20ng-top")
    ap.add_argument("--draws", type=int, default=5)
    args = ap.parse_args()
    for name in args.corpora.split(","):
        run(name, args)


if __name__ == "__main__":
    main()
