"""20 Newsgroups end to end: vectorize, build the graph once, fit LapRLS and LapSVM,
compare with a supervised LinearSVC, save the model and print the top terms.

The classes are the group names (not their indices), so that the saved model's
predictions, ``linlap top-features`` and ``linlap evaluate`` on a file labeled with
group names speak of the groups.

    python scripts/20newsgroups_end_to_end.py --archive PATH/20news-bydate.tar.gz
                                              [--n-labels 400] [--model 20news.joblib]
"""

import argparse
import time

import numpy as np
from sklearn.metrics import accuracy_score
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC

import linlap
from linlap import KNNGraph, LapRLSClassifier, LapSVMClassifier
from linlap.datasets import load_20newsgroups, mask_labels
from linlap.text import make_vectorizer


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--archive", required=True, help="path of 20news-bydate.tar.gz")
parser.add_argument("--n-labels", type=int, default=400, help="labeled training posts")
parser.add_argument("--model", default="20news.joblib", help="where to save the model")
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

train = load_20newsgroups(args.archive, "train")
test = load_20newsgroups(args.archive, "test")
groups = np.asarray(train.target_names, dtype=object)
y_test = groups[test.target]
# string labels: "" marks the unlabeled posts (the estimators' unlabeled="")
y = mask_labels(groups[train.target], args.n_labels, per_class=False,
                random_state=args.seed, unlabeled="")
labeled = y != ""
print(f"{len(train.data)} training posts ({labeled.sum()} labeled), {len(test.data)} test")

t = time.perf_counter()
vectorizer = make_vectorizer()
X = vectorizer.fit_transform(train.data)
X_test = vectorizer.transform(test.data)
print(f"vectorized: {X.shape[1]:,} terms, {time.perf_counter() - t:.1f} s")

t = time.perf_counter()
graph = KNNGraph(n_neighbors=50, random_state=args.seed).fit(X)   # built once, shared
print(f"graph: {time.perf_counter() - t:.1f} s")

fitted = {}
for name, clf in [("LapRLS", LapRLSClassifier(graph=graph, unlabeled="")),
                  ("LapSVM", LapSVMClassifier(graph=graph, unlabeled=""))]:
    t = time.perf_counter()
    clf.fit(X, y)
    acc = accuracy_score(y_test, clf.predict(X_test))
    print(f"{name:8s} accuracy {acc:.3f}  ({time.perf_counter() - t:.1f} s)")
    fitted[name] = clf

svc = LinearSVC().fit(X[labeled], y[labeled])
print(f"LinearSVC accuracy {accuracy_score(y_test, svc.predict(X_test)):.3f} "
      f"(labeled posts only)")

# a pipeline that predicts raw text; the graph is not saved (predict uses coef_)
model = make_pipeline(vectorizer, fitted["LapRLS"])
linlap.save(model, args.model)
print(f"saved {args.model}; try: linlap top-features {args.model} -n 10")

weights = linlap.feature_weights(model, top=3)
rows = weights.to_dict("records") if hasattr(weights, "to_dict") else weights
for r in rows[:12]:
    print(f"  {r['class']:28s} {r['weight']:+.3f}  {r['term']}")
