"""``linlap fit``: vectorize, build the graph and fit an estimator; save the model."""

import math
import os
import stat
import sys
import warnings

from .._atomic import check_destination, names_a_descriptor
from ._common import (TEXT_OPTIONS, _check_columns, _check_format_option, _data_name,
                      _GRAPH_SPELLINGS, _reader_kwargs, _refuse_to_replace_inputs, _Reporter,
                      _spelled, _unlabeled_label, UsageError)


def _parse_class_prior(text):
    """--class-prior: None, 'labeled', 'predicted' or a list of proportions, each in
    [0, 1], summing to 1 (their number is checked against the classes once read)."""
    if text.lower() == "none":
        return None
    if text.lower() in ("labeled", "predicted"):
        return text.lower()
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise UsageError(f"--class-prior must be none, labeled, predicted or comma-separated "
                         f"proportions in the order of the sorted class names, got "
                         f"{text!r}") from None
    if not all(0 <= v <= 1 for v in values):  # nan fails too
        raise UsageError(f"--class-prior {text}: each proportion must be a number in "
                         f"[0, 1]")
    if not math.isclose(sum(values), 1, abs_tol=1e-6):  # the estimators' tolerance
        raise UsageError(f"--class-prior {text}: the proportions sum to {sum(values):g}; "
                         f"they must sum to 1")
    return values


def _is_terminal(path):
    """Whether ``path`` names a terminal, links followed: /dev/tty (the controlling
    terminal, if any), or a character device that says so once opened (/dev/pts/N;
    opened without becoming the controlling terminal, nor waiting for a serial line)."""
    if os.name == "nt":  # isatty is true of every character device there, NUL too
        return False
    try:
        if not stat.S_ISCHR(os.stat(path).st_mode):
            return False
        if os.path.realpath(path) == "/dev/tty":
            return True
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):  # none there, or one we cannot open: checked later
        return False
    try:
        return os.isatty(fd)
    finally:
        os.close(fd)


def _check_estimator_options(args):
    """The options that apply to --estimator laps3vm only, or not to it."""
    if args.estimator == "laps3vm":
        for option, value in (("--gamma-A", args.gamma_A), ("--gamma-I", args.gamma_I)):
            if isinstance(value, str):
                raise UsageError(f"{option} {value} is not available with --estimator "
                                 f"laps3vm; give a number")
        if args.class_prior is not None and args.class_prior.lower() == "none":
            raise UsageError("--estimator laps3vm keeps a class balance: --class-prior "
                             "predicted (default), labeled or proportions, not none")
        return
    if args.gamma_U is not None:
        raise UsageError("--gamma-U applies to --estimator laps3vm only")
    if args.class_prior is not None and args.class_prior.lower() == "predicted":
        raise UsageError("--class-prior predicted applies to --estimator laps3vm only")


def _check_weights(args):
    """Weights the estimators would refuse once the graph is built."""
    if args.gamma_A == 0 and args.gamma_I == 0:
        raise UsageError("--gamma-A 0 and --gamma-I 0: give one of them > 0 (with neither "
                         "the problem is unregularised and, with few labels, singular)")
    if args.gamma_I == "auto" and args.gamma_A == 0:
        raise UsageError("--gamma-I auto needs --gamma-A > 0 (its --gamma-I 0 candidate is "
                         "a ridge fit)")


def _candidate_grid(args):
    """The grid of candidate graphs the lists --n-neighbors and --power give
    (``EMRClassifier(candidates=...)``): the options given more than one value, or {}
    for a single graph. With it, the options that do not fit EMR are refused; so is a
    power KNNGraph would refuse, any of the list, before the input is read."""
    from ..graph.params import MAX_POWER

    large = [p for p in args.power if p > MAX_POWER]
    if large:  # as KNNGraph would, after the input was read
        raise UsageError(f"--power {large[0]}: the largest power is {MAX_POWER} (the "
                         f"normalised Laplacian's eigenvalues reach 2, so those of L^p "
                         f"reach 2^p)")
    grid = {name: values for name, values in (("n_neighbors", args.n_neighbors),
                                              ("power", args.power))
            if values is not None and len(values) > 1}
    if not grid:
        if args.gamma_R is not None:
            raise UsageError("--gamma-R weighs candidate graphs: it needs several "
                             "--n-neighbors or --power values")
        return grid
    given = " and ".join(f"--{name.replace('_', '-')} {','.join(map(str, values))}"
                         for name, values in grid.items())
    if args.estimator == "laps3vm":
        raise UsageError(f"{given}: candidate graphs (EMRClassifier) take --estimator "
                         f"laprls or lapsvm, not laps3vm; with laps3vm give one value of each")
    if args.gamma_I == "auto":  # EMR fits one γ_I for every candidate
        raise UsageError(f"{given}: --gamma-I auto is not available with candidate "
                         f"graphs; give a number or scaled")
    if args.gamma_I == 0:  # μ would weigh a term that is not there
        raise UsageError(f"{given}: --gamma-I 0 leaves no graph term for the candidate "
                         f"graphs' weights to weigh; give --gamma-I > 0, or one graph")
    return grid


def _merge_capped(values, k):
    """The candidate k of ``values`` capped at ``k``, the graph's own (capped by the
    documents as a single --n-neighbors is), values the cap makes equal merged with a
    warning: a smaller grid, not a wrong one."""
    capped = list(dict.fromkeys(min(v, k) for v in values))
    if len(capped) < len(values):
        warnings.warn(f"--n-neighbors {','.join(map(str, values))}: each value is capped "
                      f"at {k} (the non-empty documents - 1), which makes some equal: the "
                      f"candidate graphs have k = {', '.join(map(str, capped))}",
                      UserWarning, stacklevel=2)
    return capped


#: Class names longer than this are cut in fit's report (and hint at swapped columns)
CLASS_NAME_WIDTH = 40


def _short_name(name):
    """A class name on one short line: line breaks shown as ⏎, cut at CLASS_NAME_WIDTH."""
    name = str(name).replace("\r\n", "\n").replace("\r", "\n").replace("\n", " ⏎ ")
    return name if len(name) <= CLASS_NAME_WIDTH else name[:CLASS_NAME_WIDTH - 1] + "…"


def _warn_text_like_labels(args, fmt, classes):
    """Labels that look like documents (a line break, or longer than 200 characters):
    most often --text-column and --label-column swapped. (One label per class is a
    normal setting: not a sign.)"""
    if fmt not in ("csv", "jsonl"):
        return
    long = [c for c in classes if "\n" in c or "\r" in c or len(c) > 200]
    if not long:
        return
    why = f"{len(long)} class names look like documents (e.g. {_short_name(long[0])!r})"
    warnings.warn(f"{why}: is the label column {args.label_column!r} the right one "
                  f"(--label-column; the text column is {args.text_column!r}, "
                  f"--text-column)?", UserWarning, stacklevel=2)


def _make_text_vectorizer(args):
    ngram = (1, args.ngram_max)
    stop = None if args.stop_words == "none" else args.stop_words
    if args.vectorizer == "tfidf":
        if args.embedding:
            from ..text import EmbeddedTfidfVectorizer
            return [("vectorizer", EmbeddedTfidfVectorizer(
                n_components=args.embedding, min_df=args.min_df, stop_words=stop,
                ngram_range=ngram))]
        from ..text import make_vectorizer
        return [("vectorizer", make_vectorizer(min_df=args.min_df, stop_words=stop,
                                               ngram_range=ngram))]
    from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
    return [("vectorizer", HashingVectorizer(n_features=args.n_features, ngram_range=ngram,
                                             stop_words=stop, alternate_sign=False,
                                             norm=None)),
            ("tfidf", TfidfTransformer(sublinear_tf=True))]


#: label values that usually mean "no label" (compared case-insensitively): the Python
#: API's -1, question marks, and what spreadsheets and pandas write for a missing value
_MARKER_SPELLINGS = {"-1", "?", "??", "-", "--", "unlabeled", "unlabelled", "unknown",
                     "none", "null", "nil", "nan", "na", "n/a", "#n/a", "missing"}


def _warn_marker_classes(args, fmt, labels, classes):
    """Warn when every row is labeled and a class is spelled like an unlabeled marker:
    those rows were probably meant to be the unlabeled ones (a warning only: -1 or
    'unknown' can be a real class)."""
    import shlex
    if fmt == "svmlight":  # numbers: -1 is the usual negative class there
        return
    for c in classes:
        if c.strip().lower() not in _MARKER_SPELLINGS:
            continue
        count = sum(lab == c for lab in labels)
        if fmt == "dir":
            hint = "move those files into the folder unlabeled/"
        else:
            hint = (f"pass --unlabeled-label={shlex.quote(c)} (only an empty or missing "
                    f"label means unlabeled by default)")
        warnings.warn(f"{_data_name(args)}: no row is unlabeled, and the class {c!r} ({count} "
                      f"rows) is spelled like an unlabeled marker; if those rows are the "
                      f"unlabeled ones, {hint}", UserWarning, stacklevel=2)


def _warn_minus_one_class(args, labels, n_unlabeled):
    """svmlight input read with its default marker, 0: warn when -1 is a class of more
    rows than are unlabeled, as when a 0/1 file marks its unlabeled rows -1 (its class 0
    went unlabeled). Not when fewer: -1/+1 classes with unlabeled 0 rows is the
    SVMlight convention."""
    count = sum(lab == "-1" for lab in labels)
    if count <= n_unlabeled:
        return
    unlabeled = (f"only the {n_unlabeled} rows labeled 0 as unlabeled" if n_unlabeled
                 else "no row as unlabeled")
    warnings.warn(f"{_data_name(args)}: -1 is read as a class ({count} rows) and {unlabeled} "
                  f"(0 is svmlight's default marker); pass --unlabeled-label -1 if -1 "
                  f"marks your unlabeled rows (0 is then a class)", UserWarning,
                  stacklevel=2)


def _no_term_error(args):
    """The message for documents in which the vectorizer finds no term, naming DATA and
    the options that filter terms out."""
    tfidf = args.vectorizer == "tfidf"
    filters = [f"--min-df {args.min_df} drops the terms of fewer documents"] \
        if tfidf and args.min_df > 1 else []
    if args.stop_words != "none":
        filters.append(f"--stop-words {args.stop_words} drops the stop words")
    if not filters:  # the tokenizer's alone
        return (f"{_data_name(args)}: no term in the documents (terms are words of two or more "
                f"letters or digits)")
    fixes = (["lower --min-df"] if tfidf and args.min_df > 1 else []) + (
        ["pass --stop-words none"] if args.stop_words != "none" else [])
    return (f"{_data_name(args)}: no term is left after the vectorizer's filtering "
            f"({'; '.join(filters)}); {' or '.join(fixes)}")


def _vectorizer_error(args, exc):
    """The message of the vectorizer's ``exc``, naming DATA and the options."""
    msg = " ".join(str(exc).split())
    if "empty vocabulary" in msg or "no terms remain" in msg:  # scikit-learn's words
        return _no_term_error(args)
    if args.embedding:
        return f"{_data_name(args)}: --embedding {args.embedding}: {msg}"
    return f"{_data_name(args)}: {msg}"


# ----------------------------------------------------------------------------- fit

#: the estimators' Python terms as ``linlap fit`` spells them, for their warnings and
#: errors (:func:`_spelled`): ``gamma_I='scaled'`` → ``--gamma-I scaled``,
#: ``class_prior=None`` → ``--class-prior none``, ``max_iter=50`` → ``--max-iter 50``,
#: ``tol=0.0001`` → ``--tol 0.0001``, the advice to use another estimator class →
#: ``--estimator``, sklearn's Normalizer → ``--normalize l2``. Python keywords without an
#: option here (cg_max_iter) are left as they are, but advice to raise cg_max_iter is given
#: as the options that help instead;
#: the unlabeled marker's wording is added per input by :func:`_fit_spellings`.
_FIT_SPELLINGS = (
    # LapSVM's CG stall: what it advises through LapSVMClassifier is the command's too
    (r"; increase cg_max_iter \(through LapSVMClassifier: a larger gamma_A or tol, as a "
     r"small gamma_A makes CG slow\)",
     "; use a larger --gamma-A or --tol (a small --gamma-A makes CG slow)"),
    # S³VM's inner solves stopped by either cap: Newton steps, or the CG stall above
    (r"; increase max_iter or cg_max_iter\.",
     "; increase --max-iter, or use a larger --gamma-A or --tol (a small --gamma-A makes "
     "CG slow)."),
    # rows far from unit norm (svmlight input)
    (r"Normalise the rows: TfidfVectorizer's default norm='l2', or "
     r"sklearn\.preprocessing\.Normalizer\(\)\.",
     "Pass --normalize l2 to scale the rows to unit length."),
    (r"\(sklearn\.preprocessing\.Normalizer\(\)\)", "(--normalize l2)"),
    (r"\bclass_prior=None\b", "--class-prior none"),
    (r"\bclass_prior='(\w+)'", r"--class-prior \1"),
    (r"\bgamma_([AIU])='?([-+\w.]*\w)'?", r"--gamma-\1 \2"),
    (r"\b(gamma_[AIU]|class_prior)\b", lambda m: "--" + m[1].replace("_", "-")),
    # \b keeps cg_max_iter (and inner_tol, qp_tol) whole; (?<!-): not a --tol written
    # above
    (r"\bmax_iter=(\d+)", r"--max-iter \1"),
    (r"(?<!-)\btol=([-+\w.]*\w)", r"--tol \1"),
    (r"\bmax_iter\b", "--max-iter"),
    (r"(?<!-)\btol\b", "--tol"),
    (r"\bLapS3VMClassifier needs\b", "--estimator laps3vm needs"),
    (r"; LapSVMClassifier fits\b", "; --estimator lapsvm fits"),
    (r" \(y == ''\)", ""),  # the marker ``linlap fit`` passes: its rows' empty labels
    (r"\bevery row of y\b", "every row"),
)

#: --estimator lapsvm: its one LapRLS CG, that of the --gamma-I auto cross-validation
#: (LapSVMClassifier._auto_gamma_I_max_iter), is not capped by --max-iter (Newton steps)
_LAPSVM_SPELLINGS = (
    (r"(\bLapRLS conjugate gradients did not converge\b[^;]*); increase max_iter or "
     r"loosen tol\.",
     r"\1; loosen --tol (with --estimator lapsvm, --max-iter counts Newton steps, not "
     r"the CG iterations of the LapRLS fits of --gamma-I auto's cross-validation)."),
)


#: candidate graphs (EMRClassifier): its warning names its own max_iter and tol, which no
#: option sets (they are not --max-iter and --tol, the base estimator's), and those of
#: its base estimator, which are
_EMR_SPELLINGS = (
    (r"\bit stopped at max_iter=(\d+) f steps before its rule \(tol=([-+\w.]*\w)\) was "
     r"met: increase EMRClassifier's max_iter",
     r"it stopped at its cap of \1 fits before its rule (a relative decrease below \2) "
     r"was met (linlap fit has no option for that cap: fit EMRClassifier from Python to "
     r"raise it)"),
    (r"\bdid not converge to their tol=([^(]*) \(min\((\d+) x the estimator's tol, ",
     r"did not converge to their tolerance \1 (min(\2 x --tol, "),
    (r"\bwithin the estimator's max_iter=(\d+): increase the estimator's max_iter\b",
     r"within --max-iter \1: increase --max-iter"),
)


def _fit_spellings(fmt, unlabeled_label, estimator="laprls", emr=False):
    """:data:`_FIT_SPELLINGS` (after those of ``estimator``, the --estimator given, and
    with ``emr``, candidate graphs, EMR's) and the estimators' "(labeled -1, or your
    unlabeled marker)" in terms of this input: what marks its unlabeled rows."""
    if fmt == "dir":
        marker = "(the documents of its unlabeled/ folder)"
    elif unlabeled_label is None:
        marker = "(rows with an empty label; see --unlabeled-label)"
    else:
        marker = f"(rows labeled {unlabeled_label}; see --unlabeled-label)"
    own = (_EMR_SPELLINGS if emr else ()) + (_LAPSVM_SPELLINGS if estimator == "lapsvm"
                                             else ())
    return own + _FIT_SPELLINGS + ((r"\(labeled -1, or your unlabeled marker\)", marker),)


def _fit(args):
    import numpy as np
    from sklearn.pipeline import Pipeline

    from ..estimators import (EMRClassifier, LapRLSClassifier, LapS3VMClassifier,
                              LapSVMClassifier)
    from ..estimators._base import default_graph
    from ..io import detect_format, iter_batches
    from ..persistence import save

    rep = _Reporter(args.quiet)
    if not args.model.strip():
        raise UsageError("--model: an empty file name")
    if args.model == "-" or names_a_descriptor(args.model):
        raise UsageError(f"--model needs a file name; {args.model!r} (standard output or "
                         f"another open descriptor) is not supported for models")
    if os.path.exists(args.model) and stat.S_ISFIFO(os.stat(args.model).st_mode):
        # save() rewrites the header once the model is written: it needs to seek
        raise UsageError(f"--model {args.model} is a pipe; a model is written with "
                         f"seeks: give a regular file")
    if _is_terminal(args.model):  # no seeks either, and a model is no text to show
        raise UsageError(f"--model {args.model} is a terminal; a model is a binary file "
                         f"written with seeks: give a regular file")
    check_destination(args.model)  # before the fit, not after it
    _refuse_to_replace_inputs("--model", args.model, [(args.data, "input file (DATA)")])
    _check_columns(args)
    _check_estimator_options(args)
    _check_weights(args)
    grid = _candidate_grid(args)
    s3vm = args.estimator == "laps3vm"
    class_prior = _parse_class_prior(args.class_prior if args.class_prior is not None
                                     else "predicted" if s3vm else "none")
    if args.embedding and args.vectorizer != "tfidf":
        raise UsageError("--embedding needs --vectorizer tfidf (a vocabulary)")
    _check_format_option(args)
    fmt = detect_format(args.data, args.format)
    unlabeled_label = _unlabeled_label(args, fmt)
    if fmt == "svmlight":
        given = [f"--{name.replace('_', '-')}" for name, default in TEXT_OPTIONS.items()
                 if getattr(args, name) != default]
        if given:
            raise UsageError(f"{', '.join(given)}: vectorizer options apply to text input, "
                             f"not to an svmlight matrix")
    elif args.normalize != "none":
        raise UsageError(f"--normalize {args.normalize} applies to svmlight input; text "
                         f"input's TF-IDF rows are of unit length already")
    # an option of the other vectorizer would be ignored
    elif args.vectorizer == "hashing" and args.min_df != TEXT_OPTIONS["min_df"]:
        raise UsageError("--min-df applies to --vectorizer tfidf only (hashing keeps every "
                         "term)")
    elif args.vectorizer == "tfidf" and args.n_features != TEXT_OPTIONS["n_features"]:
        raise UsageError("--n-features applies to --vectorizer hashing only (tfidf has a "
                         "column per term of its vocabulary)")
    with rep.step(f"reading {_data_name(args)}"):
        bar = rep.bar(desc="reading")
        try:
            batches = []
            for b in iter_batches(args.data, fmt, need_labels=True,
                                  **_reader_kwargs(args, unlabeled_label)):
                batches.append(b)
                bar.update(len(b))
        finally:
            bar.close()
        from ..io import concat_batches
        batch = concat_batches(batches)
        del batches
    labels = batch.labels
    n = len(labels)
    labeled = np.array([lab is not None for lab in labels])
    n_lab = int(labeled.sum())
    # a 0/1 svmlight file read with the default marker: its class 0 went unlabeled
    zero_hint = ("; in svmlight input the label 0 marks unlabeled rows by default: if 0 is "
                 "a class, pass --unlabeled-label with a value that is not one, e.g. "
                 "--unlabeled-label -5" if fmt == "svmlight" and args.unlabeled_label is None
                 and n_lab < n else "")
    if n_lab == 0:
        where = "labels" if fmt == "svmlight" else f"column {args.label_column!r}"
        raise ValueError(f"{_data_name(args)}: all {n} rows are unlabeled; label at least one "
                         f"row of each of two classes ({where}){zero_hint}")
    classes = sorted({lab for lab in labels if lab is not None})
    if len(classes) < 2:
        raise ValueError(f"{_data_name(args)}: the labeled rows hold only one class "
                         f"({classes[0]!r}); a classifier needs at least two{zero_hint}")
    if n < 3:
        raise ValueError(f"{_data_name(args)}: only {n} rows; the graph needs at least 3")
    rep.line(f"{n} documents: {n_lab} labeled ({len(classes)} classes: "
             f"{', '.join(map(_short_name, classes[:10]))}"
             f"{', …' if len(classes) > 10 else ''}), {n - n_lab} unlabeled")
    _warn_text_like_labels(args, fmt, classes)
    if n_lab == n:
        _warn_marker_classes(args, fmt, labels, classes)
    if fmt == "svmlight" and args.unlabeled_label is None:
        _warn_minus_one_class(args, labels, n - n_lab)
    if class_prior is not None and not isinstance(class_prior, str) \
            and len(class_prior) != len(classes):
        raise ValueError(f"--class-prior gives {len(class_prior)} proportions for "
                         f"{len(classes)} classes ({', '.join(classes)})")
    y = np.array(["" if lab is None else lab for lab in labels], dtype=object)

    if fmt == "svmlight":
        X = batch.data
        rep.line(f"svmlight matrix: {X.shape[1]:,} features")
        pre = []
        if args.normalize == "l2":  # a step of the saved model: predict's rows too
            from sklearn.preprocessing import Normalizer
            pre = [("normalizer", Normalizer())]
            X = pre[0][1].fit_transform(X)
    else:
        if not any(text.strip() for text in batch.data):
            raise ValueError(f"{_data_name(args)}: every document is empty; no term to learn from")
        if args.vectorizer == "tfidf" and args.min_df > n:  # scikit-learn: "max_df < min_df"
            raise ValueError(f"{_data_name(args)}: --min-df {args.min_df} is more than the {n} "
                             f"documents: no term can be in that many")
        pre = _make_text_vectorizer(args)
        with rep.step(f"vectorizing ({args.vectorizer})"):
            X = batch.data
            try:
                for _, step in pre:
                    X = step.fit_transform(X)
            except ValueError as exc:
                raise ValueError(_vectorizer_error(args, exc)) from None
        if not X.nnz:  # hashing keeps no vocabulary to find empty, but no term either
            raise ValueError(_no_term_error(args))
        if args.vectorizer == "tfidf":
            if args.embedding:
                m = pre[0][1].word_vectors_.shape[1]
                capped = (f" (--embedding {args.embedding} capped: at most the terms - 1)"
                          if m < args.embedding else "")
                rep.line(f"vocabulary: {X.shape[1] - m:,} terms + {m} embedding "
                         f"dimensions{capped}")
            else:
                rep.line(f"vocabulary: {X.shape[1]:,} terms")
    del batch

    # graph and solver progress (both on stderr) when asked, or on a terminal
    verbose = args.verbose or (not args.quiet and sys.stderr.isatty())
    # the estimators' own default graph (k and the SVD's dimension capped by the
    # documents and terms) with the options given; with candidate graphs, their one
    # neighbour search: at the largest k (a grid over p sets each candidate's power)
    graph = default_graph(X, verbose, random_state=args.seed,
                          n_neighbors=None if args.n_neighbors is None
                          else max(args.n_neighbors),
                          weight=args.weight, power=args.power[0], space=args.graph_space)
    k = graph.n_neighbors
    if "n_neighbors" in grid:  # each value capped as the largest was
        grid["n_neighbors"] = _merge_capped(args.n_neighbors, k)
        if len(grid["n_neighbors"]) == 1:  # one k left: a grid only if --power is one
            del grid["n_neighbors"]
    if not grid and args.n_neighbors is not None and len(args.n_neighbors) > 1:
        warnings.warn(f"one candidate graph is left (k = {k}): fitting the single graph"
                      + ("; --gamma-R does not apply" if args.gamma_R is not None else ""),
                      UserWarning, stacklevel=2)
    with rep.step(f"building the {k}-NN graph", chatty=graph.verbose), \
            _spelled(_GRAPH_SPELLINGS):
        graph.fit(X)
    rep.line(f"graph: {'exact' if graph.algorithm_ == 'exact' else 'approximate (pynndescent)'}"
             f" search in the {'SVD embedding' if graph.space_ == 'svd' else 'document vectors'}")
    # weights not given: the estimator's own defaults
    weights = {name: value for name, value in (("gamma_A", args.gamma_A),
                                               ("gamma_I", args.gamma_I),
                                               ("gamma_U", args.gamma_U)) if value is not None}
    # the solver's caps likewise: not given, the estimator's own (they count different
    # iterations per estimator)
    solver = {name: value for name, value in (("max_iter", args.max_iter),
                                              ("tol", args.tol)) if value is not None}
    estimator = {"laprls": LapRLSClassifier, "lapsvm": LapSVMClassifier,
                 "laps3vm": LapS3VMClassifier}[args.estimator]
    if grid:  # EMR sets the base estimator's graph: the file keeps none there
        base = estimator(**weights, **solver, class_prior=class_prior, unlabeled="",
                         verbose=int(verbose))
        est = EMRClassifier(base, candidates=grid, graph=graph,
                            gamma_R="auto" if args.gamma_R is None else args.gamma_R,
                            verbose=int(verbose))
        what = f"{args.estimator}, EMR over {math.prod(map(len, grid.values()))} graphs"
    else:
        est = estimator(**weights, **solver, graph=graph, class_prior=class_prior,
                        unlabeled="", verbose=int(verbose))
        what = args.estimator
    with rep.step(f"solving ({what})", chatty=verbose), \
            _spelled(_fit_spellings(fmt, unlabeled_label, args.estimator, emr=bool(grid))):
        est.fit(X, y)
    if grid:
        rep.line(f"EMR: {est.n_iter_} {args.estimator} fits, gamma_A = "
                 f"{est.estimator_.gamma_A_:.3g}, gamma_I = {est.estimator_.gamma_I_:.3g}, "
                 f"gamma_R = {est.gamma_R_:.3g}")
        rep.line("graph weights: " + ", ".join(
            f"k={g.n_neighbors} p={g.power}: {mu:.2f}" for g, mu in zip(est.graphs_,
                                                                       est.mu_)))
    elif s3vm:
        rep.line(f"{est.n_solves_} weighted LapSVM solves over {est.n_iter_} temperatures, "
                 f"gamma_A = {est.gamma_A_:.3g}, gamma_I = {est.gamma_I_:.3g}, "
                 f"gamma_U = {est.gamma_U:.3g}")
        if est.gamma_U == 0:
            rep.line("gamma_U = 0: no loss on the unlabeled rows, the model is the LapSVM "
                     "start (no class balance applied)")
        elif len(classes) > 2:
            rep.line("share of the unlabeled rows kept positive by each one-vs-rest "
                     "column: " + ", ".join(f"{c} {p:.3f}" for c, p in
                                            zip(est.classes_, est.positive_fraction_)))
        else:
            pi = est.positive_fraction_[0]
            rep.line("class balance kept on the unlabeled rows: " + ", ".join(
                f"{c} {p:.3f}" for c, p in zip(est.classes_, (1.0 - pi, pi))))
    else:
        rep.line(f"{est.n_iter_} solver iterations, gamma_A = {est.gamma_A_:.3g}, "
                 f"gamma_I = {est.gamma_I_:.3g}")
    model = Pipeline(pre + [("classifier", est)]) if pre else est
    if n - n_lab:
        pred = est.transduction_[~labeled]
        values, counts = np.unique(pred.astype(str), return_counts=True)
        rep.line("unlabeled rows predicted as: " + ", ".join(
            f"{v} {c}" for v, c in zip(values, counts)))
    with rep.step(f"saving {args.model}"):
        # predict and evaluate read their input with the same marker by default
        save(model, args.model, metadata={"unlabeled_label": unlabeled_label})
    return 0
