"""Semi-supervised classification of a text corpus too large for one machine, on Dask.

    python scripts/dask_text.py DATA [--scheduler tcp://HOST:8786 | --workers N]
                                [--chunk-size N] [--n-features N] [--out predictions.txt]

DATA is a directory of text files, one document per file and one sub-folder per class
(folder name = label; files in unlabeled/ or at the top are unlabeled; the 20 Newsgroups
layout), or a JSON-lines file with a "text" field and an optional "label" field (empty,
null or missing = unlabeled). The client only lists the files / scans the line offsets;
the Dask workers read the documents chunk by chunk and hash them into TF-IDF row blocks
(HashingVectorizer, idf from document frequencies summed over all chunks), which stay
in the workers' memory. The kNN graph is then built over all rows on the workers and
LapRLS (or LapSVM) is fitted with X in those blocks.

Without --scheduler a LocalCluster of --workers processes is started on this machine.
With --scheduler the same code runs on a real cluster (started with `dask scheduler`
and `dask worker tcp://HOST:8786`): the workers must read DATA at the same path (e.g.
a shared filesystem) and have linlap installed.

Prints, on stdout, the labels predicted for the unlabeled documents (counts per class)
and, with --hide-labels, the accuracy on the labels hidden from the fit; --out writes
one predicted label per document, in row order.
"""

import argparse
import sys
import time

import numpy as np



def _weight(text):
    """--gamma-A / --gamma-I: 'scaled' (the estimators' default) or a number."""
    return text if text == "scaled" else float(text)

def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[2:]),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", help="a directory of text files (one sub-folder per class) or "
                                "a .jsonl / .ndjson / .json file")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="address of a running Dask scheduler, e.g. tcp://host:8786 "
                            "(default: start a LocalCluster)")
    where.add_argument("--workers", type=int, default=2, metavar="N",
                       help="worker processes of the LocalCluster (default: %(default)s)")
    p.add_argument("--chunk-size", type=int, default=2000, metavar="N",
                   help="documents per chunk = rows per block of X (default: %(default)s)")
    p.add_argument("--n-features", type=int, default=2**20, metavar="N",
                   help="hash buckets = columns of X (default: %(default)s)")
    p.add_argument("--text-column", default="text", help="JSON-lines: the text field")
    p.add_argument("--label-column", default="label", help="JSON-lines: the label field")
    p.add_argument("--unlabeled-label", metavar="VALUE",
                   help="JSON-lines: a label value that also means unlabeled (e.g. ?)")
    p.add_argument("--encoding", default="utf-8",
                   help="directory input: encoding of the files (20 Newsgroups: latin-1)")
    p.add_argument("--n-neighbors", type=int, default=50, metavar="K", help="k of the kNN graph")
    p.add_argument("--estimator", choices=("laprls", "lapsvm"), default="laprls")
    p.add_argument("--gamma-A", type=_weight, default="scaled", metavar="G",
                   help="ambient weight: a number or scaled (default: %(default)s, the "
                        "estimators' own)")
    p.add_argument("--gamma-I", type=_weight, default="scaled", metavar="G",
                   help="graph weight: a number or scaled (default: %(default)s, the "
                        "estimators' own)")
    p.add_argument("--hide-labels", type=float, default=0.0, metavar="FRACTION",
                   help="hide this fraction of the labels from the fit and report the "
                        "accuracy on them (default: 0)")
    p.add_argument("--seed", type=int, default=0, help="seed of --hide-labels")
    p.add_argument("--out", metavar="FILE",
                   help="write the predicted label of every document, one a line")
    args = p.parse_args(argv)
    if args.workers < 1 or args.chunk_size < 1 or args.n_features < 1:
        p.error("--workers, --chunk-size and --n-features must be positive")
    if not 0 <= args.hide_labels < 1:
        p.error("--hide-labels must be in [0, 1)")
    return args


def step(message):
    """Print a step's start; return a function that prints its end with the time taken."""
    t0 = time.perf_counter()
    print(f"{message} ...", flush=True)
    return lambda result="done": print(f"  {result} ({time.perf_counter() - t0:.1f} s)",
                                       flush=True)


def main(argv=None):
    args = parse_args(argv)
    from distributed import Client, LocalCluster

    from linlap import KNNGraph, LapRLSClassifier, LapSVMClassifier
    from linlap.distributed import hashing_tfidf_blocks, text_chunks

    # 1. The chunks: file lists or line offsets, made here; no document is read yet.
    done = step(f"listing {args.data}")
    if args.data.lower().endswith((".jsonl", ".ndjson", ".json")):
        chunks = text_chunks(args.data, args.chunk_size, text_column=args.text_column,
                             label_column=args.label_column,
                             unlabeled_label=args.unlabeled_label,
                             progress=lambda n: print(f"\r  {n:,} lines scanned", end="",
                                                      flush=True))
        print()
    else:
        chunks = text_chunks(args.data, args.chunk_size, encoding=args.encoding)
    n = sum(c.n_docs for c in chunks)
    done(f"{n:,} documents in {len(chunks)} chunks")

    if args.scheduler:
        client = Client(args.scheduler)
    else:
        client = Client(LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                     dashboard_address=None))
    with client:
        print(f"Dask: {len(client.scheduler_info()['workers'])} workers, "
              f"dashboard {client.dashboard_link}", flush=True)

        # 2. TF-IDF row blocks, read and hashed by the workers and kept there.
        done = step("reading and hashing the documents on the workers")
        X, y = hashing_tfidf_blocks(chunks, n_features=args.n_features, client=client,
                                    verbose=True)
        done(f"X: {X.shape[0]:,} x {X.shape[1]:,} in {X.numblocks[0]} row blocks")

        classes = sorted(set(y) - {""})
        if len(classes) < 2:
            sys.exit(f"dask_text.py: error: {args.data}: {len(classes)} class(es) among the "
                     f"labels; need at least two (unlabeled documents have no label)")
        labeled = np.flatnonzero(y != "")
        hidden = np.empty(0, dtype=np.intp)
        y_fit = y
        if args.hide_labels:
            rng = np.random.default_rng(args.seed)
            hidden = np.sort(rng.choice(labeled, int(args.hide_labels * labeled.size),
                                        replace=False))
            y_fit = y.copy()
            y_fit[hidden] = ""
        print(f"{labeled.size - hidden.size:,} labeled documents used, "
              f"{n - labeled.size + hidden.size:,} unlabeled, {len(classes)} classes",
              flush=True)

        # 3. The estimator on the dask array: the kNN graph searched on the workers
        # (linlap.distributed.fit_graph), then the solve with its products on the workers.
        done = step(f"building the {args.n_neighbors}-NN graph and fitting {args.estimator}")
        Est = LapRLSClassifier if args.estimator == "laprls" else LapSVMClassifier
        est = Est(gamma_A=args.gamma_A, gamma_I=args.gamma_I, unlabeled="", verbose=1,
                  graph=KNNGraph(n_neighbors=args.n_neighbors)).fit(X, y_fit)
        done(f"{est.n_iter_} iterations")

    pred = est.transduction_
    unl = np.flatnonzero(y == "")
    if unl.size:
        names, counts = np.unique(pred[unl], return_counts=True)
        print("unlabeled documents predicted as: "
              + ", ".join(f"{c} {k:,}" for c, k in zip(names, counts)))
    if hidden.size:
        print(f"accuracy on the {hidden.size:,} hidden labels: "
              f"{np.mean(pred[hidden] == y[hidden]):.4f}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.writelines(f"{p}\n" for p in pred)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
