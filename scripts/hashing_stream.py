"""A HashingVectorizer over a large JSON-lines file, in bounded memory.

    python scripts/hashing_stream.py DATA.jsonl [--text-column text] [--label-column label]
                                     [--model stream.joblib]

HashingVectorizer keeps no vocabulary, so documents are vectorized chunk by chunk and
only the sparse matrix is kept in memory (never the texts). Rows whose label is empty
or missing are the unlabeled documents. The saved pipeline predicts raw text:
    linlap predict stream.joblib new.jsonl --out predictions.txt
"""

import argparse

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
from sklearn.pipeline import make_pipeline

import linlap
from linlap import KNNGraph, LapRLSClassifier
from linlap.io import iter_batches

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("data", help="JSON-lines file, one {text, label} object per line")
parser.add_argument("--text-column", default="text")
parser.add_argument("--label-column", default="label")
parser.add_argument("--model", default="stream.joblib")
parser.add_argument("--chunk-size", type=int, default=10_000)
parser.add_argument("--n-neighbors", type=int, default=20)
args = parser.parse_args()

hasher = HashingVectorizer(n_features=2**20, alternate_sign=False, norm=None,
                           stop_words="english")
blocks, labels = [], []
for batch in iter_batches(args.data, "jsonl", text_column=args.text_column,
                          label_column=args.label_column, chunk_size=args.chunk_size):
    blocks.append(hasher.transform(batch.data))          # stateless: no fit needed
    labels.extend("" if lab is None else lab for lab in batch.labels)
    print(f"\rhashed {len(labels):,} documents", end="", flush=True)
print()
counts = sp.vstack(blocks, format="csr")
del blocks
tfidf = TfidfTransformer(sublinear_tf=True)
X = tfidf.fit_transform(counts)
y = np.array(labels, dtype=object)
print(f"{X.shape[0]:,} documents, {(y != '').sum():,} labeled")

graph = KNNGraph(n_neighbors=args.n_neighbors, verbose=True).fit(X)
clf = LapRLSClassifier(graph=graph, unlabeled="", verbose=1).fit(X, y)
model = make_pipeline(hasher, tfidf, clf)
linlap.save(model, args.model)
print(f"saved {args.model}")
