"""``linlap demo``: LapRLS on the bundled PCMAC corpus against a supervised LinearSVC."""

import time

from ._common import _draw_labels, UsageError


def _demo(args):
    import numpy as np
    from sklearn.svm import LinearSVC

    from ..datasets import load_pcmac
    from ..estimators import LapRLSClassifier
    from ..graph import KNNGraph
    from ..text import make_vectorizer

    train, test = load_pcmac("train"), load_pcmac("test")
    if args.n_labels > len(train.target):
        raise UsageError(f"--n-labels {args.n_labels}: the PCMAC training set has "
                         f"{len(train.target)} documents; give at most that many")
    y_semi = _draw_labels(train.target, args.n_labels, args.seed)
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
