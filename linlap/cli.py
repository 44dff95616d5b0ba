"""The ``linlap`` command: a thin layer over the estimators."""

import argparse
import os
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


# ----------------------------------------------------------------------------- helpers

_CHUNK = 10_000


class _Reporter:
    """Step lines and progress bars on stderr; silent with --quiet."""

    def __init__(self, quiet=False):
        self.quiet = quiet

    def line(self, msg):
        if not self.quiet:
            print(msg, file=sys.stderr, flush=True)

    def step(self, msg, chatty=False):
        """Context manager printing ``msg… 1.2 s``; ``chatty``: the step prints lines
        of its own, so the timing goes on a line of its own too."""
        reporter = self
        end = "\n" if chatty or sys.stderr.isatty() else " "

        class _Step:
            def __enter__(self):
                self.t = time.perf_counter()
                if not reporter.quiet:
                    print(f"{msg}…", end=end, file=sys.stderr, flush=True)
                return self

            def __exit__(self, exc_type, exc, tb):
                if not reporter.quiet:
                    head = f"{msg}: " if end == "\n" else ""
                    if exc_type is None:
                        print(f"{head}{time.perf_counter() - self.t:.1f} s",
                              file=sys.stderr, flush=True)
                    else:
                        print(f"{head}failed", file=sys.stderr, flush=True)
                return False
        return _Step()

    def bar(self, total=None, desc="", unit="docs"):
        """A tqdm bar on a terminal (if tqdm is installed), else a no-op object."""
        if not self.quiet and sys.stderr.isatty():
            try:
                from tqdm import tqdm
            except ImportError:
                pass
            else:
                return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr,
                            leave=False, dynamic_ncols=True)
        return _NoBar()


class _NoBar:
    def update(self, n=1):
        pass

    def close(self):
        pass


def _reader_kwargs(args):
    return dict(text_column=args.text_column, label_column=args.label_column,
                unlabeled_label=args.unlabeled_label)


def _add_input_options(p, labels_help="label column/field (empty or missing = unlabeled)"):
    from .io import FORMATS

    p.add_argument("--format", choices=FORMATS, default="auto",
                   help="input format (default: from the suffix: .jsonl/.ndjson/.json, "
                        ".csv/.tsv, .svm/.svmlight/.libsvm, or a directory)")
    p.add_argument("--text-column", default="text", metavar="NAME",
                   help="text column/field of CSV and JSON-lines input (default: text)")
    p.add_argument("--label-column", default="label", metavar="NAME",
                   help=f"{labels_help} (default: label)")
    p.add_argument("--unlabeled-label", default=None, metavar="VALUE",
                   help="a label value that means 'unlabeled'. CSV/JSON-lines: an empty "
                        "or missing label is always unlabeled; svmlight: default 0")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bars or step timings on stderr")


def _model_input_kind(model):
    """'text' if the model starts with a text vectorizer, else 'matrix'."""
    from sklearn.pipeline import Pipeline

    if isinstance(model, Pipeline) and hasattr(model.steps[0][1], "build_analyzer"):
        return "text"
    return "matrix"


def _load_model(path):
    from .persistence import load

    model = load(path)
    if not (hasattr(model, "predict") and hasattr(model, "decision_function")):
        raise ValueError(f"{path}: the saved object is not a classifier")
    return model


def _model_batches(model, args, fmt_path, need_labels=False):
    from .io import detect_format, iter_batches

    fmt = detect_format(fmt_path, args.format)
    kind = _model_input_kind(model)
    if (kind == "text") != (fmt != "svmlight"):
        if kind == "text":
            raise ValueError(f"{fmt_path}: the model was fit on text, but this input is "
                             f"svmlight; give it CSV, JSON-lines or a directory of texts")
        raise ValueError(f"{fmt_path}: the model was fit on an svmlight matrix; give it "
                         f"svmlight input (--format svmlight)")
    n_features = None
    if kind == "matrix":
        est = model.steps[-1][1] if hasattr(model, "steps") else model
        n_features = int(est.n_features_in_)
    return iter_batches(fmt_path, fmt, chunk_size=args.chunk_size, need_labels=need_labels,
                        n_features=n_features, **_reader_kwargs(args))


def _parse_class_prior(text):
    if text is None or text.lower() == "none":
        return None
    if text.lower() == "labeled":
        return "labeled"
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"--class-prior must be none, labeled or comma-separated "
                         f"proportions in the order of the sorted class names, got "
                         f"{text!r}") from None
    return values


def _make_text_vectorizer(args):
    ngram = (1, args.ngram_max)
    stop = None if args.stop_words == "none" else args.stop_words
    if args.vectorizer == "tfidf":
        if args.embedding:
            from .text import EmbeddedTfidfVectorizer
            return [("vectorizer", EmbeddedTfidfVectorizer(
                n_components=args.embedding, min_df=args.min_df, stop_words=stop,
                ngram_range=ngram))]
        from .text import make_vectorizer
        return [("vectorizer", make_vectorizer(min_df=args.min_df, stop_words=stop,
                                               ngram_range=ngram))]
    if args.embedding:
        raise ValueError("--embedding needs --vectorizer tfidf (a vocabulary)")
    from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
    return [("vectorizer", HashingVectorizer(n_features=args.n_features, ngram_range=ngram,
                                             stop_words=stop, alternate_sign=False,
                                             norm=None)),
            ("tfidf", TfidfTransformer(sublinear_tf=True))]


# ----------------------------------------------------------------------------- fit

def _fit(args):
    import numpy as np
    from sklearn.pipeline import Pipeline

    from .estimators import LapRLSClassifier, LapSVMClassifier
    from .graph import KNNGraph
    from .io import detect_format, iter_batches
    from .persistence import save

    rep = _Reporter(args.quiet)
    out_dir = os.path.dirname(os.path.abspath(args.model))
    if not os.path.isdir(out_dir):
        raise ValueError(f"{args.model}: cannot write the model there: no directory {out_dir}")
    if os.path.isdir(args.model):
        raise ValueError(f"{args.model}: is a directory; give a file name for --model")
    if args.n_neighbors < 1:
        raise ValueError("--n-neighbors must be >= 1")
    if args.embedding < 0:
        raise ValueError("--embedding must be >= 0 (0: no embedding)")
    class_prior = _parse_class_prior(args.class_prior)
    fmt = detect_format(args.data, args.format)
    with rep.step(f"reading {args.data}"):
        bar = rep.bar(desc="reading")
        try:
            batches = []
            for b in iter_batches(args.data, fmt, need_labels=True, **_reader_kwargs(args)):
                batches.append(b)
                bar.update(len(b))
        finally:
            bar.close()
        from .io import concat_batches
        batch = concat_batches(batches)
        del batches
    labels = batch.labels
    n = len(labels)
    labeled = np.array([lab is not None for lab in labels])
    n_lab = int(labeled.sum())
    if n_lab == 0:
        raise ValueError(f"{args.data}: all {n} rows are unlabeled; label at least one "
                         f"row of each of two classes (column {args.label_column!r})")
    classes = sorted({lab for lab in labels if lab is not None})
    if len(classes) < 2:
        raise ValueError(f"{args.data}: the labeled rows hold only one class "
                         f"({classes[0]!r}); a classifier needs at least two")
    if n < 3:
        raise ValueError(f"{args.data}: only {n} rows; the graph needs at least 3")
    rep.line(f"{n} documents: {n_lab} labeled ({len(classes)} classes: "
             f"{', '.join(classes[:10])}{', …' if len(classes) > 10 else ''}), "
             f"{n - n_lab} unlabeled")
    if class_prior is not None and not isinstance(class_prior, str) \
            and len(class_prior) != len(classes):
        raise ValueError(f"--class-prior gives {len(class_prior)} proportions for "
                         f"{len(classes)} classes ({', '.join(classes)})")
    y = np.array(["" if lab is None else lab for lab in labels], dtype=object)

    if fmt == "svmlight":
        pre = []
        X = batch.data
        rep.line(f"svmlight matrix: {X.shape[1]:,} features")
    else:
        pre = _make_text_vectorizer(args)
        with rep.step(f"vectorizing ({args.vectorizer})"):
            X = batch.data
            for _, step in pre:
                X = step.fit_transform(X)
        if args.vectorizer == "tfidf":
            if args.embedding:
                m = pre[0][1].word_vectors_.shape[1]
                rep.line(f"vocabulary: {X.shape[1] - m:,} terms + {m} embedding dimensions")
            else:
                rep.line(f"vocabulary: {X.shape[1]:,} terms")
    del batch

    k = min(args.n_neighbors, n - 1)
    # graph and solver progress (both on stderr) when asked, or on a terminal
    verbose = args.verbose or (not args.quiet and sys.stderr.isatty())
    graph = KNNGraph(n_neighbors=k, weight=args.weight, power=args.power,
                     random_state=args.seed, verbose=bool(verbose))
    with rep.step(f"building the {k}-NN graph", chatty=graph.verbose):
        graph.fit(X)
    common = dict(gamma_A=args.gamma_A, gamma_I=args.gamma_I, graph=graph,
                  class_prior=class_prior, unlabeled="", verbose=int(verbose))
    if args.estimator == "laprls":
        est = LapRLSClassifier(**common)
    else:
        est = LapSVMClassifier(**common)
    with rep.step(f"solving ({args.estimator})", chatty=verbose):
        est.fit(X, y)
    rep.line(f"{est.n_iter_} solver iterations")
    model = Pipeline(pre + [("classifier", est)]) if pre else est
    if n - n_lab:
        pred = est.transduction_[~labeled]
        values, counts = np.unique(pred.astype(str), return_counts=True)
        rep.line("unlabeled rows predicted as: " + ", ".join(
            f"{v} {c}" for v, c in zip(values, counts)))
    with rep.step(f"saving {args.model}"):
        save(model, args.model)
    return 0


# ----------------------------------------------------------------------------- predict

def _open_out(path):
    if path in (None, "-"):
        return sys.stdout, False
    return open(path, "w", encoding="utf-8", newline=""), True


def _predict(args):
    import csv

    import numpy as np

    rep = _Reporter(args.quiet)
    model = _load_model(args.model)
    est = model.steps[-1][1] if hasattr(model, "steps") else model
    classes = [str(c) for c in est.classes_]
    out, close = _open_out(args.out)
    writer = csv.writer(out, lineterminator="\n")
    if args.decision_values:
        if len(classes) == 2:
            writer.writerow(["prediction", f"decision_{classes[1]}"])
        else:
            writer.writerow(["prediction"] + [f"decision_{c}" for c in classes])
    total = 0
    bar = rep.bar(desc="predicting")
    t = time.perf_counter()
    try:
        for batch in _model_batches(model, args, args.data):
            if not len(batch):
                continue
            if args.decision_values:
                D = np.atleast_1d(model.decision_function(batch.data))
                if D.ndim == 1:
                    D = D[:, None]
                idx = (D[:, 0] > 0).astype(int) if len(classes) == 2 else D.argmax(axis=1)
                for i, row in zip(idx, D):
                    writer.writerow([classes[i]] + [f"{v:.6g}" for v in row])
            else:
                for label in model.predict(batch.data):
                    writer.writerow([label])
            total += len(batch)
            bar.update(len(batch))
    finally:
        bar.close()
        if close:
            out.close()
        else:
            out.flush()
    rep.line(f"predicted {total} documents in {time.perf_counter() - t:.1f} s"
             + (f" → {args.out}" if close else ""))
    return 0


# ----------------------------------------------------------------------------- evaluate

def _evaluate(args):
    from sklearn.metrics import (accuracy_score, classification_report, confusion_matrix,
                                 f1_score)

    rep = _Reporter(args.quiet)
    model = _load_model(args.model)
    y_true, y_pred = [], []
    bar = rep.bar(desc="evaluating")
    try:
        for batch in _model_batches(model, args, args.data, need_labels=True):
            keep = [i for i, lab in enumerate(batch.labels) if lab is not None]
            if not keep:
                continue
            data = batch.data[keep] if hasattr(batch.data, "tocsr") else \
                [batch.data[i] for i in keep]
            y_pred.extend(str(p) for p in model.predict(data))
            y_true.extend(batch.labels[i] for i in keep)
            bar.update(len(batch))
    finally:
        bar.close()
    if not y_true:
        raise ValueError(f"{args.data}: no labeled rows to evaluate on (column "
                         f"{args.label_column!r})")
    labels = sorted(set(y_true) | set(y_pred))
    print(f"{len(y_true)} labeled documents in {args.data}")
    print(f"accuracy  {accuracy_score(y_true, y_pred):.4f}")
    print(f"macro-F1  {f1_score(y_true, y_pred, average='macro', labels=labels, zero_division=0):.4f}")
    print()
    print(classification_report(y_true, y_pred, labels=labels, digits=4, zero_division=0))
    cm = confusion_matrix(y_true, y_pred, labels=labels)
    width = max(max(len(lab) for lab in labels), max(len(str(v)) for v in cm.ravel()), 4)
    print("confusion matrix (rows: true, columns: predicted)")
    print(" " * width + "  " + "  ".join(f"{lab:>{width}}" for lab in labels))
    for lab, row in zip(labels, cm):
        print(f"{lab:>{width}}  " + "  ".join(f"{int(v):>{width}}" for v in row))
    unknown = sorted(set(y_true) - {str(c) for c in (model.steps[-1][1] if hasattr(
        model, "steps") else model).classes_})
    if unknown:
        print(f"note: classes absent from the model: {', '.join(unknown)}", file=sys.stderr)
    return 0


# ----------------------------------------------------------------------------- top-features

def _top_features(args):
    import numpy as np

    from .inspection import _split

    if args.n < 1:
        raise ValueError("-n must be >= 1")
    model = _load_model(args.model)
    est, names = _split(model)
    coef = np.atleast_2d(np.asarray(est.coef_))
    classes = [str(c) for c in est.classes_]
    if names is None:
        why = ("the model's vectorizer hashes terms" if _model_input_kind(model) == "text"
               else "the model was fit on an svmlight matrix")
        print(f"(term names are unavailable: {why}; showing feature indices)")
        names = np.array([f"feature {j}" for j in range(coef.shape[1])], dtype=object)
    if coef.shape[0] == 1 and len(classes) == 2:
        rows = [(f"{classes[1]} (positive weights; negative weights point to "
                 f"{classes[0]})", coef[0])]
    else:
        rows = list(zip(classes, coef))
    n = min(args.n, coef.shape[1])
    for title, w in rows:
        order = np.argsort(-w, kind="stable")
        print(f"class {title}")
        print("  highest:")
        for j in order[:n]:
            print(f"    {w[j]:+10.4f}  {names[j]}")
        print("  lowest:")
        for j in order[::-1][:n]:
            print(f"    {w[j]:+10.4f}  {names[j]}")
    return 0


# ----------------------------------------------------------------------------- plot

def _plot_data(args):
    """(X_train, y_train, X_test, y_test, title) from DATA or the bundled PCMAC."""
    import numpy as np

    from .text import make_vectorizer

    if args.data is None:
        from .datasets import load_pcmac
        train, test = load_pcmac("train"), load_pcmac("test")
        texts, y, t_texts, t_y = train.data, train.target, test.data, test.target
        title = "PCMAC"
    else:
        from .io import read_all
        batch = read_all(args.data, args.format, need_labels=True, **_reader_kwargs(args))
        keep = [i for i, lab in enumerate(batch.labels) if lab is not None]
        if len(keep) < 10:
            raise ValueError(f"{args.data}: {len(keep)} labeled rows; plots need at "
                             f"least 10 (30 % are held out as the test set)")
        rng = np.random.RandomState(args.seed)
        keep = rng.permutation(keep)
        cut = int(0.7 * len(keep))
        texts = [batch.data[i] for i in keep[:cut]]
        t_texts = [batch.data[i] for i in keep[cut:]]
        labels = np.array(batch.labels, dtype=object)
        y, t_y = labels[keep[:cut]], labels[keep[cut:]]
        title = str(args.data)
    vec = make_vectorizer()
    X = vec.fit_transform(texts)
    return X, np.asarray(y), vec.transform(t_texts), np.asarray(t_y), title


def _plot(args):
    import numpy as np

    from .datasets import mask_labels
    from .estimators import LapRLSClassifier, LapSVMClassifier
    from .graph import KNNGraph
    from .plots import _pyplot, plot_convergence, plot_label_curve

    _pyplot()  # fail early, with one line, when matplotlib is missing
    rep = _Reporter(args.quiet)
    with rep.step("reading and vectorizing"):
        X, y, X_test, y_test, title = _plot_data(args)
    k = min(args.n_neighbors, X.shape[0] - 1)
    with rep.step(f"building the {k}-NN graph"):
        graph = KNNGraph(n_neighbors=k, random_state=args.seed).fit(X)
    marker = -1 if y.dtype.kind in "iu" else ""
    if args.kind == "path":
        from .model_selection import LapSVMPathClassifier
        from .plots import plot_path

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


# ----------------------------------------------------------------------------- parser

def build_parser():
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="linlap",
        description="Semi-supervised text classification by manifold regularisation.",
    )
    parser.add_argument("--version", action="version", version=f"linlap {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="fit LapRLS on the bundled PCMAC corpus and compare "
                                       "with a supervised LinearSVC")
    demo.add_argument("--n-labels", type=int, default=50,
                      help="labeled training documents (default 50)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the label draw")
    demo.set_defaults(func=_demo)

    fit = sub.add_parser(
        "fit", help="fit a model on labeled + unlabeled documents and save it",
        description="Fit a semi-supervised classifier on DATA (rows with an empty or "
                    "missing label are the unlabeled documents) and save it with "
                    "linlap.save.")
    fit.add_argument("data", metavar="DATA",
                     help="JSON-lines, CSV/TSV, svmlight file, or a directory with one "
                          "folder of text files per class plus unlabeled/")
    fit.add_argument("--model", required=True, metavar="OUT", help="model file to write")
    _add_input_options(fit)
    g = fit.add_argument_group("vectorizer (text input)")
    g.add_argument("--vectorizer", choices=("tfidf", "hashing"), default="tfidf",
                   help="TF-IDF with a vocabulary (default) or a HashingVectorizer + "
                        "TF-IDF weighting (no vocabulary kept: term names unavailable)")
    g.add_argument("--ngram-max", type=int, default=1, metavar="N",
                   help="use word n-grams for n = 1..N (default 1)")
    g.add_argument("--min-df", type=int, default=2, metavar="N",
                   help="tfidf: drop terms in fewer than N documents (default 2)")
    g.add_argument("--stop-words", choices=("english", "none"), default="english",
                   help="stop-word list (default english)")
    g.add_argument("--n-features", type=int, default=2**20, metavar="N",
                   help="hashing: number of hashed features (default 2**20)")
    g.add_argument("--embedding", type=int, default=0, metavar="N",
                   help="tfidf: append N-dimensional document embeddings learned from all "
                        "the texts, labeled and unlabeled (PPMI word vectors; "
                        "linlap.text.EmbeddedTfidfVectorizer); 0 = off (default)")
    g = fit.add_argument_group("graph")
    g.add_argument("--n-neighbors", type=int, default=50, metavar="K",
                   help="neighbours per document (default 50, capped at n-1)")
    g.add_argument("--power", type=int, default=5, metavar="P",
                   help="power of the Laplacian (default 5)")
    g.add_argument("--weight", choices=("cosine", "heat", "binary"), default="cosine",
                   help="edge weights (default cosine)")
    g.add_argument("--seed", type=int, default=0, help="random seed of the graph search")
    g = fit.add_argument_group("estimator")
    g.add_argument("--estimator", choices=("laprls", "lapsvm"), default="laprls",
                   help="Laplacian RLS (default) or Laplacian SVM (finite Newton)")
    g.add_argument("--gamma-A", type=float, default=1e-4, metavar="G",
                   help="ambient (ridge) weight γ_A (default 1e-4)")
    g.add_argument("--gamma-I", type=float, default=10.0, metavar="G",
                   help="intrinsic (graph) weight γ_I (default 10)")
    g.add_argument("--class-prior", default="none", metavar="PRIOR",
                   help="class-balance constraint on the unlabeled rows: none (default), "
                        "labeled (proportions of the labeled rows) or comma-separated "
                        "proportions in sorted class-name order, e.g. 0.3,0.7")
    fit.add_argument("-v", "--verbose", action="store_true",
                     help="report graph-search progress and solver iterations (the "
                          "default on a terminal)")
    fit.set_defaults(func=_fit)

    pred = sub.add_parser("predict", help="predict labels of documents with a saved model",
                          description="Predict DATA in chunks (bounded memory); write one "
                                      "prediction per line.")
    pred.add_argument("model", metavar="MODEL")
    pred.add_argument("data", metavar="DATA")
    pred.add_argument("--out", default="-", metavar="FILE",
                      help="output file (default: standard output)")
    pred.add_argument("--decision-values", action="store_true",
                      help="write CSV: prediction and decision value(s) (binary: one "
                           "column, positive means the second class)")
    pred.add_argument("--chunk-size", type=int, default=_CHUNK, metavar="N",
                      help=f"documents per chunk (default {_CHUNK})")
    _add_input_options(pred, "label column (ignored)")
    pred.set_defaults(func=_predict)

    ev = sub.add_parser("evaluate", help="accuracy, macro-F1, per-class precision/recall "
                                         "and confusion matrix on labeled documents")
    ev.add_argument("model", metavar="MODEL")
    ev.add_argument("data", metavar="DATA")
    ev.add_argument("--chunk-size", type=int, default=_CHUNK, metavar="N",
                    help=f"documents per chunk (default {_CHUNK})")
    _add_input_options(ev, "label column (unlabeled rows are skipped)")
    ev.set_defaults(func=_evaluate)

    top = sub.add_parser("top-features", help="highest- and lowest-weighted terms per class")
    top.add_argument("model", metavar="MODEL")
    top.add_argument("-n", type=int, default=30, help="terms per list (default 30)")
    top.set_defaults(func=_top_features)
    pl = sub.add_parser("plot", help="write a PNG: solver convergence, test error vs "
                                     "number of labels, or the solution path (needs "
                                     "matplotlib)",
                        description="Plots on DATA (labeled rows; 30 %% held out as test "
                                    "set) or, without DATA, the bundled PCMAC corpus.")
    pl.add_argument("kind", choices=("convergence", "labels", "path"),
                    help="convergence: CG residual / Newton objective per iteration; "
                         "labels: test error against the number of labels; path: the "
                         "LapSVM solution path (error or decision values against lambda)")
    pl.add_argument("--path-kind", choices=("error", "decision"), default="error",
                    help="for 'path': cross-validated error (default) or the decision "
                         "values of the labeled rows along the path")
    pl.add_argument("data", metavar="DATA", nargs="?", default=None)
    pl.add_argument("--out", required=True, metavar="PNG")
    pl.add_argument("--n-labels", type=lambda t: [int(v) for v in t.split(",")],
                    default=None, metavar="N[,N...]",
                    help="labels to draw (default 50 for convergence, "
                         "10,20,50,100,200,400 for labels)")
    pl.add_argument("--n-neighbors", type=int, default=50, metavar="K")
    pl.add_argument("--seed", type=int, default=0)
    _add_input_options(pl)
    pl.set_defaults(func=_plot_entry)
    return parser


def _plot_entry(args):
    if args.n_labels is None:
        args.n_labels = ([50] if args.kind in ("convergence", "path")
                         else [10, 20, 50, 100, 200, 400])
    return _plot(args)


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except BrokenPipeError:  # `linlap ... | head`: not an error
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except (ValueError, OSError, MemoryError) as exc:
        msg = " ".join(str(exc).split()) or type(exc).__name__
        if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
            msg = f"{exc.filename}: {exc.strerror}"
        print(f"linlap: error: {msg}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("linlap: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
