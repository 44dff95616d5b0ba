"""``linlap plot``: learning curves, convergence and solution-path figures."""

import warnings

from .._atomic import check_destination
from ._common import (_check_columns, _check_format_option, _data_name, _draw_labels,
                      _GRAPH_SPELLINGS, _reader_kwargs, _refuse_to_replace_inputs, _Reporter,
                      _spelled, _unlabeled_label, UsageError)


def _plot_data(args, fmt, unlabeled_label):
    """``(X, y, X_test, y_test, title)`` from DATA (in ``fmt``) or the bundled PCMAC.

    DATA: 30 % of its labeled rows are the test set; the training rows are all the
    others, unlabeled ones included (``""`` in ``y``), so that the graph is built on
    them and the labels are drawn among its labeled rows only.
    """
    import numpy as np

    from ..text import make_vectorizer

    if args.data is None:
        from ..datasets import load_pcmac
        train, test = load_pcmac("train"), load_pcmac("test")
        texts, y, t_texts, t_y = train.data, train.target, test.data, test.target
        title = "PCMAC"
    else:
        from ..io import read_all
        batch = read_all(args.data, fmt, need_labels=True,
                         **_reader_kwargs(args, unlabeled_label))
        labels = np.array(["" if lab is None else lab for lab in batch.labels], dtype=object)
        labeled = np.flatnonzero(labels != "")
        if len(labeled) < 10:
            raise ValueError(f"{_data_name(args)}: {len(labeled)} labeled rows; plots need at "
                             f"least 10 (30 % are held out as the test set)")
        rng = np.random.RandomState(args.seed)
        test = np.sort(rng.permutation(labeled)[int(0.7 * len(labeled)):])
        train = np.setdiff1d(np.arange(len(labels)), test)
        y, t_y = labels[train], labels[test]
        title = str(_data_name(args))
        if not isinstance(batch.data, list):  # svmlight: already a matrix
            X = batch.data.tocsr()
            return X[train], y, X[test], t_y, title
        texts = [batch.data[i] for i in train]
        t_texts = [batch.data[i] for i in test]
    vec = make_vectorizer()
    X = vec.fit_transform(texts)
    return X, np.asarray(y), vec.transform(t_texts), np.asarray(t_y), title


def _plot(args):
    import numpy as np

    from ..estimators._base import capped_n_neighbors
    from ..estimators import LapRLSClassifier, LapSVMClassifier
    from ..graph import KNNGraph
    from ..plots import _pyplot, plot_convergence, plot_label_curve

    _pyplot()  # fail early, with one line, when matplotlib is missing
    if not args.out.lower().endswith(".png"):
        raise UsageError(f"--out {args.out}: the plot is a PNG; give a file name ending "
                         f"in .png")
    check_destination(args.out)  # before the reading and fitting, not after
    fmt = unlabeled_label = None
    if args.data is not None:
        from ..io import detect_format
        _refuse_to_replace_inputs("--out", args.out, [(args.data, "input file (DATA)")])
        _check_columns(args)
        _check_format_option(args)
        fmt = detect_format(args.data, args.format)
        unlabeled_label = _unlabeled_label(args, fmt)
    rep = _Reporter(args.quiet)
    with rep.step("reading and vectorizing"):
        X, y, X_test, y_test, title = _plot_data(args, fmt, unlabeled_label)
    marker = -1 if y.dtype.kind in "iu" else ""
    n_labeled = int(np.sum(y != marker))
    rep.line(f"{title}: {len(y)} training documents ({n_labeled} labeled, "
             f"{len(y) - n_labeled} unlabeled), {len(y_test)} test documents")

    def draw_labels(n):
        """``y`` with all but ``n`` of its labels hidden."""
        if n > n_labeled:
            raise ValueError(f"--n-labels {n}: {title} has only {n_labeled} labeled "
                             f"training documents")
        return _draw_labels(y, n, args.seed, marker)

    n_lab = args.n_labels[0]
    if args.kind in ("path", "convergence"):  # one draw, checked before the graph
        y_semi = draw_labels(n_lab)
    k = capped_n_neighbors(X, args.n_neighbors)
    with rep.step(f"building the {k}-NN graph"), _spelled(_GRAPH_SPELLINGS):
        graph = KNNGraph(n_neighbors=k, random_state=args.seed).fit(X)
    if args.kind == "path":
        from ..model_selection import LapSVMPathClassifier
        from ..plots import plot_path

        with rep.step(f"solution path ({n_lab} labels, 5-fold choice of lambda)"), \
                _spelled(((r"; pass validation= instead\.", "; use a larger --n-labels."),)):
            est = LapSVMPathClassifier(graph=graph, unlabeled=marker).fit(X, y_semi)
        err = 100 * np.mean(est.predict(X_test) != y_test)
        rep.line(f"{len(est.path_['lambdas'])} breakpoints; chosen gamma_I = "
                 f"{est.best_gamma_I_:.3g}, test error {err:.1f} %")
        plot_path(est, args.out, kind=args.path_kind,
                  title=f"{title}, {n_lab} labels, rho = {est.rho:g}")
    elif args.kind == "convergence":
        ests = {}
        with rep.step("fitting LapRLS and LapSVM"):
            for name, cls in (("LapRLS (CG)", LapRLSClassifier),
                              ("LapSVM (finite Newton)", LapSVMClassifier)):
                ests[name] = cls(graph=graph, unlabeled=marker).fit(X, y_semi)
        plot_convergence(ests, args.out, title=f"{title}, {n_lab} labels")
    else:
        from sklearn.svm import LinearSVC
        errors = {"LapRLS": [], "LinearSVC (labels only)": []}
        ns = []
        for n in args.n_labels:
            with rep.step(f"{n} labels"):
                try:
                    y_semi = draw_labels(n)
                    lab = y_semi != marker
                    clf = LapRLSClassifier(graph=graph, unlabeled=marker).fit(X, y_semi)
                    svc = LinearSVC().fit(X[lab], y_semi[lab])
                except ValueError as exc:  # the plot lacks this point: said even with -q
                    with warnings.catch_warnings():  # each skip, a repeated count's too
                        warnings.simplefilter("always")
                        warnings.warn(f"skipping {n} labels: {exc}", UserWarning,
                                      stacklevel=2)
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
