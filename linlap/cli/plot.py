"""``linlap plot``: learning curves, convergence and solution-path figures."""

from .._atomic import check_destination
from ._common import _reader_kwargs, _Reporter, UsageError


def _plot_data(args):
    """(X_train, y_train, X_test, y_test, title) from DATA or the bundled PCMAC."""
    import numpy as np

    from ..text import make_vectorizer

    if args.data is None:
        from ..datasets import load_pcmac
        train, test = load_pcmac("train"), load_pcmac("test")
        texts, y, t_texts, t_y = train.data, train.target, test.data, test.target
        title = "PCMAC"
    else:
        from ..io import read_all
        batch = read_all(args.data, args.format, need_labels=True, **_reader_kwargs(args))
        keep = [i for i, lab in enumerate(batch.labels) if lab is not None]
        if len(keep) < 10:
            raise ValueError(f"{args.data}: {len(keep)} labeled rows; plots need at "
                             f"least 10 (30 % are held out as the test set)")
        rng = np.random.RandomState(args.seed)
        keep = rng.permutation(keep)
        cut = int(0.7 * len(keep))
        labels = np.array(batch.labels, dtype=object)
        y, t_y = labels[keep[:cut]], labels[keep[cut:]]
        title = str(args.data)
        if not isinstance(batch.data, list):  # svmlight: already a matrix
            X = batch.data.tocsr()
            return X[keep[:cut]], np.asarray(y), X[keep[cut:]], np.asarray(t_y), title
        texts = [batch.data[i] for i in keep[:cut]]
        t_texts = [batch.data[i] for i in keep[cut:]]
    vec = make_vectorizer()
    X = vec.fit_transform(texts)
    return X, np.asarray(y), vec.transform(t_texts), np.asarray(t_y), title


def _plot(args):
    import numpy as np

    from ..datasets import mask_labels
    from ..estimators._base import capped_n_neighbors
    from ..estimators import LapRLSClassifier, LapSVMClassifier
    from ..graph import KNNGraph
    from ..plots import _pyplot, plot_convergence, plot_label_curve

    _pyplot()  # fail early, with one line, when matplotlib is missing
    if not args.out.lower().endswith(".png"):
        raise UsageError(f"--out {args.out}: the plot is a PNG; give a file name ending "
                         f"in .png")
    check_destination(args.out)  # before the reading and fitting, not after
    rep = _Reporter(args.quiet)
    with rep.step("reading and vectorizing"):
        X, y, X_test, y_test, title = _plot_data(args)
    k = capped_n_neighbors(X, args.n_neighbors)
    with rep.step(f"building the {k}-NN graph"):
        graph = KNNGraph(n_neighbors=k, random_state=args.seed).fit(X)
    marker = -1 if y.dtype.kind in "iu" else ""
    if args.kind == "path":
        from ..model_selection import LapSVMPathClassifier
        from ..plots import plot_path

        n_lab = args.n_labels[0]
        y_semi = mask_labels(y, n_lab, random_state=args.seed, unlabeled=marker)
        with rep.step(f"solution path ({n_lab} labels, 5-fold choice of lambda)"):
            est = LapSVMPathClassifier(graph=graph, unlabeled=marker).fit(X, y_semi)
        err = 100 * np.mean(est.predict(X_test) != y_test)
        rep.line(f"{len(est.path_['lambdas'])} breakpoints; chosen gamma_I = "
                 f"{est.best_gamma_I_:.3g}, test error {err:.1f} %")
        plot_path(est, args.out, kind=args.path_kind,
                  title=f"{title}, {n_lab} labels, rho = {est.rho:g}")
    elif args.kind == "convergence":
        y_semi = mask_labels(y, args.n_labels[0], random_state=args.seed, unlabeled=marker)
        ests = {}
        with rep.step("fitting LapRLS and LapSVM"):
            for name, cls in (("LapRLS (CG)", LapRLSClassifier),
                              ("LapSVM (finite Newton)", LapSVMClassifier)):
                ests[name] = cls(graph=graph, unlabeled=marker).fit(X, y_semi)
        plot_convergence(ests, args.out, title=f"{title}, {args.n_labels[0]} labels")
    else:
        from sklearn.svm import LinearSVC
        errors = {"LapRLS": [], "LinearSVC (labels only)": []}
        ns = []
        for n in args.n_labels:
            with rep.step(f"{n} labels"):
                try:
                    y_semi = mask_labels(y, n, random_state=args.seed, unlabeled=marker)
                    lab = y_semi != marker
                    clf = LapRLSClassifier(graph=graph, unlabeled=marker).fit(X, y_semi)
                    svc = LinearSVC().fit(X[lab], y_semi[lab])
                except ValueError as exc:
                    rep.line(f"skipping {n} labels: {exc}")
                    continue
                ns.append(n)
                errors["LapRLS"].append(100 * np.mean(clf.predict(X_test) != y_test))
                errors["LinearSVC (labels only)"].append(
                    100 * np.mean(svc.predict(X_test) != y_test))
        if not ns:
            raise ValueError("no label count could be fitted")
        plot_label_curve(ns, errors, args.out, title=title)
    rep.line(f"wrote {args.out}")
    return 0




def _plot_entry(args):
    if args.n_labels is None:
        args.n_labels = ([50] if args.kind in ("convergence", "path")
                         else [10, 20, 50, 100, 200, 400])
    return _plot(args)
