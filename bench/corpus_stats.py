"""Synthetic corpus (linlap.datasets.make_text_corpus) against the real corpora, side by side.

Prints one Markdown table of bench/corpus_statistics.py for

* 20 Newsgroups (20 classes; 11,314 training posts, 7,532 test posts),
* IMDB sentiment (train 25,000 labeled + unsup 50,000 unlabeled reviews; test 25,000),
* make_text_corpus at its defaults (and a few variants, e.g. one sub-topic per class),

then (with --ssl) LinearSVC against LapRLSClassifier(gamma_I=10) on 20,000 synthetic documents with and
without sub-topics, then the time and peak memory of generating n = 10^6 documents with the
defaults. Real corpora are read from --data-dir (or $LINLAP_DATA) and vectorised with
linlap.text.make_vectorizer() fitted on the training rows (IMDB: train + unsup); the matrices
are cached in bench/_cache/corpus_stats_*.npz.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python bench/corpus_stats.py --ssl      # the RESULTS run
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python bench/corpus_stats.py --no-big   # skip the 10^6 run
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python bench/corpus_stats.py --big-only --big-n 1000000

Peak memory of the big run is measured twice, each time in a fresh subprocess that only imports
linlap and calls make_text_corpus: (1) the peak resident set size (``resource.getrusage(
RUSAGE_SELF).ru_maxrss``) minus its value just before the call (the interpreter, numpy, scipy),
in the timed run; (2) the peak of ``tracemalloc`` over the call, in a second, untimed run.
Both are compared with the bytes of the returned CSR (data + indices + indptr).
"""

import argparse
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _data import add_data_dir, archive as data_archive  # noqa: E402

DATA = None  # --data-dir / LINLAP_DATA, set by main()
CACHE = os.path.join(HERE, "_cache")


def _save(path, X, y, Xt, yt):
    np.savez(path, X_data=X.data, X_indices=X.indices, X_indptr=X.indptr, X_shape=X.shape, y=y,
             Xt_data=Xt.data, Xt_indices=Xt.indices, Xt_indptr=Xt.indptr, Xt_shape=Xt.shape, yt=yt)


def _load(path):
    z = np.load(path)
    X = sp.csr_matrix((z["X_data"], z["X_indices"], z["X_indptr"]), shape=tuple(z["X_shape"]))
    Xt = sp.csr_matrix((z["Xt_data"], z["Xt_indices"], z["Xt_indptr"]),
                       shape=tuple(z["Xt_shape"]))
    return X, z["y"], Xt, z["yt"]


def load_real(name):
    """(X, y, X_test, y_test): TF-IDF by make_vectorizer() fitted on the training rows; cached.

    20news: X = the 11,314 training posts, all labeled. imdb: X = the 25,000 labeled training
    reviews followed by the 50,000 unlabeled ones (y = -1). Rows left empty by the vectoriser
    are kept (they are few: corpus_statistics skips them in the neighbour search).
    """
    from linlap.datasets import load_20newsgroups, load_imdb
    from linlap.text import make_vectorizer

    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"corpus_stats_{name}.npz")
    if os.path.exists(path):
        return _load(path)
    if name == "20news":
        archive = data_archive(DATA, "20ng")
        train, test = load_20newsgroups(archive, "train"), load_20newsgroups(archive, "test")
        texts, y = train.data, train.target
    elif name == "imdb":
        archive = data_archive(DATA, "imdb")
        train, test = load_imdb(archive, "train"), load_imdb(archive, "test")
        unsup = load_imdb(archive, "unsup")
        texts = train.data + unsup.data
        y = np.concatenate([train.target, unsup.target])
    else:
        raise SystemExit(f"unknown corpus {name}")
    vec = make_vectorizer()
    X = vec.fit_transform(texts).tocsr()
    Xt = vec.transform(test.data).tocsr()
    _save(path, X, y, Xt, test.target)
    return X, y, Xt, test.target




BIG_CODE = r"""
import json, resource, sys, time, tracemalloc
import numpy as np
from linlap.datasets import make_text_corpus
n, dtype, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
make_text_corpus(1000, random_state=1, dtype=dtype)  # warm-up: imports, first-call costs
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
if mode == "trace":
    tracemalloc.start()
t = time.perf_counter(); c = time.process_time()
X, y = make_text_corpus(n, random_state=0, dtype=dtype)
wall, cpu = time.perf_counter() - t, time.process_time() - c
traced = tracemalloc.get_traced_memory()[1] if mode == "trace" else 0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
out = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
print(json.dumps(dict(n=n, d=X.shape[1], nnz=int(X.nnz), dtype=dtype, wall=wall, cpu=cpu,
                      base=base, peak=peak, traced=traced, output=out, labels=y.nbytes)))
"""


def big_run(n, dtype, mode="time"):
    """Generate n documents in a fresh subprocess.

    mode "time": wall/CPU time and peak RSS (ru_maxrss); mode "trace": the same under
    tracemalloc (slower), whose peak counts every numpy allocation of the call.
    """
    import json

    path = os.pathsep.join([os.path.dirname(HERE), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=path)
    res = subprocess.run([sys.executable, "-c", BIG_CODE, str(n), dtype, mode], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def synthetic(n_train, n_unlabeled, n_test, **kwargs):
    """A synthetic corpus shaped like a real one: (X, y, X_test, y_test).

    make_text_corpus counts for n_train + n_unlabeled + n_test documents, TF-IDF by
    TfidfTransformer(sublinear_tf=True) fitted on the first n_train + n_unlabeled rows (as the
    real corpora's vectoriser is fitted on their training rows); the n_unlabeled rows get y = -1.
    """
    from sklearn.feature_extraction.text import TfidfTransformer

    from linlap.datasets import make_text_corpus

    n = n_train + n_unlabeled
    C, y = make_text_corpus(n + n_test, output="counts", random_state=0, **kwargs)
    tf = TfidfTransformer(sublinear_tf=True).fit(C[:n])
    y_train = y[:n].copy()
    y_train[n_train:] = -1
    return tf.transform(C[:n]), y_train, tf.transform(C[n:]), y[n:]


COLUMNS = [("n", "rows", "{:,}"), ("d", "terms", "{:,}"), ("nnz_mean", "nnz/row mean", "{:.1f}"),
           ("nnz_median", "median", "{:.0f}"), ("nnz_p10", "p10", "{:.0f}"),
           ("nnz_p90", "p90", "{:.0f}"), ("vocab_used", "vocab used", "{:.3f}"),
           ("max_df", "max df/n", "{:.2f}"), ("top100_share", "top-100 share", "{:.3f}"),
           ("zipf_slope", "Zipf slope (df)", "{:.2f}"), ("homophily", "10-NN homophily", "{:.3f}"),
           ("homophily_shuffled", "shuffled", "{:.3f}"), ("svm_error", "LinearSVC error %", "{}")]


def row(name, s):
    cells = []
    for key, _, fmt in COLUMNS:
        if key == "svm_error":
            cells.append(f"{100 * s[key]:.1f} ({s['svm_n_labeled']:,} labels)")
        else:
            cells.append(fmt.format(s[key]))
    return "| " + name + " | " + " | ".join(cells) + " |"


def ssl_check(n, n_labeled, seeds, **kwargs):
    """Transductive error %: LinearSVC on the labels vs LapRLS (default KNNGraph, gamma_I=10)."""
    from sklearn.svm import LinearSVC

    from linlap import KNNGraph, LapRLSClassifier
    from linlap.datasets import make_text_corpus, mask_labels

    X, y = make_text_corpus(n, random_state=0, **kwargs)
    t = time.perf_counter()
    graph = KNNGraph(n_jobs=1).fit(X)
    t_graph = time.perf_counter() - t
    svc, lap = [], []
    for seed in seeds:
        ym = mask_labels(y, n_labeled, random_state=seed)
        u = ym == -1
        svc.append(np.mean(LinearSVC().fit(X[~u], y[~u]).predict(X[u]) != y[u]))
        clf = LapRLSClassifier(gamma_I=10.0, graph=graph).fit(X, ym)  # the default then
        lap.append(np.mean(clf.predict(X[u]) != y[u]))
    return 100 * np.array(svc), 100 * np.array(lap), t_graph


def main():
    global DATA
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_dir(ap)
    ap.add_argument("--no-big", action="store_true", help="skip the n = 10^6 generation")
    ap.add_argument("--big-only", action="store_true", help="only the n = 10^6 generation")
    ap.add_argument("--big-n", type=int, default=1_000_000)
    ap.add_argument("--ssl", action="store_true",
                    help="also LinearSVC vs LapRLS on n = 20,000 synthetic documents")
    ap.add_argument("--cache-only", action="store_true", help="only vectorise the real corpora")
    args = ap.parse_args()
    DATA = args.data_dir
    warnings.simplefilter("ignore")
    from corpus_statistics import corpus_statistics

    if args.cache_only:
        for name in ("20news", "imdb"):
            t = time.perf_counter()
            X, *_ = load_real(name)
            print(name, X.shape, X.nnz, f"{time.perf_counter() - t:.1f} s", flush=True)
        return

    if not args.big_only:
        print("| corpus | " + " | ".join(c[1] for c in COLUMNS) + " |")
        print("|---" * (len(COLUMNS) + 1) + "|")
        real = [("20 Newsgroups train (20 classes)", "20news"),
                ("IMDB train + unsup (2 classes)", "imdb")]
        for label, name in real:
            X, y, Xt, yt = load_real(name)
            print(row(label, corpus_statistics(X, y, X_test=Xt, y_test=yt)), flush=True)
        # synthetic sets shaped like the real ones (same rows, labeled rows and test rows)
        imdb_shape = (25_000, 50_000, 25_000)
        variants = [
            ("make_text_corpus() defaults, IMDB-shaped", imdb_shape, {}),
            ("  one blob per class (n_subtopics=1)", imdb_shape, dict(n_subtopics=1)),
            ("  one blob per class, topic_concentration=0.12", imdb_shape,
             dict(n_subtopics=1, topic_concentration=0.12)),
            ("make_text_corpus(n_classes=20, n_subtopics=4, topic_concentration=0.2), "
             "20NG-shaped", (11_314, 0, 7_532),
             dict(n_classes=20, n_subtopics=4, topic_concentration=0.2)),
        ]
        for label, shape, kw in variants:
            X, y, Xt, yt = synthetic(*shape, **kw)
            print(row(label, corpus_statistics(X, y, X_test=Xt, y_test=yt)), flush=True)

    if args.ssl and not args.big_only:
        print()
        print("| n = 20,000, 1,000 labels, 3 draws | LinearSVC error % "
              "| LapRLSClassifier(gamma_I=10) error % | graph s |")
        print("|---|---|---|---|")
        for label, kw in [("defaults (20 sub-topics per class)", {}),
                          ("one blob per class, topic_concentration=0.12",
                           dict(n_subtopics=1, topic_concentration=0.12))]:
            svc, lap, tg = ssl_check(20_000, 1000, range(3), **kw)
            print(f"| {label} | {svc.mean():.1f} ± {svc.std():.1f} | {lap.mean():.1f} ± "
                  f"{lap.std():.1f} | {tg:.0f} |", flush=True)

    if not args.no_big:
        print()
        print("| n | dtype | nnz | wall s | CPU s | peak RSS − baseline MB | tracemalloc peak MB "
              "| output CSR MB |")
        print("|---|---|---|---|---|---|---|---|")
        for dtype in ("float64", "float32"):
            r = big_run(args.big_n, dtype)
            tr = big_run(args.big_n, dtype, "trace")
            extra = (r["peak"] - r["base"]) / 2**20
            print(f"| {r['n']:,} | {dtype} | {r['nnz']:,} | {r['wall']:.1f} | {r['cpu']:.1f} | "
                  f"{extra:.0f} | {tr['traced'] / 2**20:.0f} | {r['output'] / 2**20:.0f} |",
                  flush=True)


if __name__ == "__main__":
    main()
