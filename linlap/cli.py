"""The ``linlap`` command: a thin layer over the estimators."""

import argparse
import sys
import time

__all__ = ["main"]


def _demo(args):
    import numpy as np
    from sklearn.svm import LinearSVC

    from .datasets import load_pcmac, mask_labels
    from .estimators import LapRLSClassifier
    from .graph import KNNGraph
    from .text import make_vectorizer

    train, test = load_pcmac("train"), load_pcmac("test")
    y_semi = mask_labels(train.target, args.n_labels, random_state=args.seed)
    labeled = y_semi != -1
    print(f"PCMAC (bundled 20 Newsgroups, {train.target_names[0]} vs "
          f"{train.target_names[1]}): {len(train.data)} training documents "
          f"({labeled.sum()} labeled, {(~labeled).sum()} unlabeled), "
          f"{len(test.data)} test documents.")

    timings = {}
    t = time.perf_counter()
    vectorizer = make_vectorizer()
    X_train = vectorizer.fit_transform(train.data)
    X_test = vectorizer.transform(test.data)
    timings["vectorize"] = time.perf_counter() - t

    t = time.perf_counter()
    graph = KNNGraph(random_state=args.seed).fit(X_train)
    timings["graph"] = time.perf_counter() - t

    t = time.perf_counter()
    clf = LapRLSClassifier(graph=graph).fit(X_train, y_semi)
    timings["solve"] = time.perf_counter() - t

    t = time.perf_counter()
    svc = LinearSVC().fit(X_train[labeled], y_semi[labeled])
    timings["LinearSVC"] = time.perf_counter() - t

    err = 100 * np.mean(clf.predict(X_test) != test.target)
    err_svc = 100 * np.mean(svc.predict(X_test) != test.target)
    print(f"  vectorize  {timings['vectorize']:6.2f} s   TF-IDF, {X_train.shape[1]:,} terms")
    print(f"  graph      {timings['graph']:6.2f} s   {graph.n_neighbors}-NN "
          f"({'normalised' if graph.normalized else 'unnormalised'} Laplacian, "
          f"power {graph.power})")
    print(f"  solve      {timings['solve']:6.2f} s   LapRLS by CG, {clf.n_iter_} iterations")
    n_lab, n_unl = int(labeled.sum()), int((~labeled).sum())
    print(f"Test error on {len(test.data)} held-out documents:")
    print(f"  LapRLSClassifier  {f'{n_lab} labels + {n_unl} unlabeled':<28} {err:5.1f} %")
    print(f"  LinearSVC         {f'{n_lab} labels only':<28} {err_svc:5.1f} %")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(
        prog="linlap",
        description="Semi-supervised text classification by manifold regularisation.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="fit LapRLS on the bundled PCMAC corpus and compare "
                                       "with a supervised LinearSVC")
    demo.add_argument("--n-labels", type=int, default=50,
                      help="labeled training documents (default 50)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the label draw")
    demo.set_defaults(func=_demo)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except (ValueError, OSError) as exc:
        print(f"linlap: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
