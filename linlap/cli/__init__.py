"""The ``linlap`` command: a thin layer over the estimators, one module per command."""

import argparse
import os
import signal
import sys
import threading
import warnings

from ._common import _add_input_options, _CHUNK, show_warning, TEXT_OPTIONS, UsageError
from .demo import _demo
from .features import _top_features
from .fit import _fit
from .plot import _plot_entry
from .predict import _evaluate, _predict

__all__ = ["main", "build_parser"]


def _weight_arg(*names):
    """The type of a --gamma-* option: a finite number >= 0 or one of ``names``."""
    expected = (", ".join(["a number", *map(repr, names[:-1])]) + f" or {names[-1]!r}"
                if names else "a number")

    def parse(text):
        if text in names:
            return text
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        if not value >= 0 or value == float("inf"):
            raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
        return value

    return parse


def _tol_arg(text):
    """The type of --tol: a number strictly between 0 and 1, the estimators' relative
    tolerance (at 1 or more every solver would stop before its first step)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < 1:  # nan fails too
        raise argparse.ArgumentTypeError(f"must be a number strictly between 0 and 1, got "
                                         f"{text!r}")
    from .._validation import MIN_TOL
    if value < MIN_TOL:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_TOL:.3g} (the smallest "
                                         f"normal float64), got {text!r}")
    return value


def _int_arg(low, high=None):
    """An argparse type: an integer in [low, high] (a bad value is a wrong command line:
    exit 2)."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be <= {high}, got {value}")
        return value
    return parse


#: seeds go to NumPy, which takes 0 … 2**32 − 1
_seed_arg = _int_arg(0, 2**32 - 1)


def _int_list_arg(low=1, high=None, distinct=False):
    """An argparse type: N[,N...], each an integer in [low, high] (:func:`_int_arg`);
    ``distinct``: a value given twice is refused too (a list of candidates, where it
    would be the same candidate twice)."""
    item = _int_arg(low, high)

    def parse(text):
        values = [item(v) for v in text.split(",")]
        if distinct:
            repeated = sorted({v for v in values if values.count(v) > 1})
            if repeated:
                raise argparse.ArgumentTypeError(
                    f"each value may be given once, got {', '.join(map(str, repeated))} "
                    f"more than once in {text!r}")
        return values
    return parse


def _add_model_and_data(parser, data_help):
    """The MODEL and DATA arguments of the commands that apply a saved model."""
    parser.add_argument("model", metavar="MODEL", help="a model file written by linlap fit")
    parser.add_argument("data", metavar="DATA", help=data_help)


def build_parser():
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="linlap",
        description="Semi-supervised text classification by manifold regularisation.",
    )
    parser.add_argument("--version", action="version", version=f"linlap {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="fit LapRLS on the bundled PCMAC corpus and compare "
                                       "with a supervised LinearSVC")
    demo.add_argument("--n-labels", type=_int_arg(2), default=50,
                      help="labeled training documents, at least 2 (default 50)")
    demo.add_argument("--seed", type=_seed_arg, default=0,
                      help="seed of the label draw (default 0)")
    demo.set_defaults(func=_demo)

    fit = sub.add_parser(
        "fit", help="fit a model on labeled + unlabeled documents and save it",
        description="Fit a semi-supervised classifier on DATA (rows with an empty or "
                    "missing label are the unlabeled documents) and save it with "
                    "linlap.save.")
    fit.add_argument("data", metavar="DATA",
                     help="JSON-lines, CSV/TSV, svmlight file, a directory with one "
                          "folder of text files per class plus unlabeled/, or - "
                          "(standard input, with --format)")
    fit.add_argument("--model", required=True, metavar="OUT", help="model file to write")
    _add_input_options(fit)
    g = fit.add_argument_group("vectorizer (text input)")
    g.add_argument("--vectorizer", choices=("tfidf", "hashing"),
                   default=TEXT_OPTIONS["vectorizer"],
                   help="TF-IDF with a vocabulary (default) or a HashingVectorizer + "
                        "TF-IDF weighting (no vocabulary kept: term names unavailable)")
    g.add_argument("--ngram-max", type=_int_arg(1), default=TEXT_OPTIONS["ngram_max"], metavar="N",
                   help="use word n-grams for n = 1..N (default 1)")
    g.add_argument("--min-df", type=_int_arg(1), default=TEXT_OPTIONS["min_df"], metavar="N",
                   help="tfidf: drop terms in fewer than N documents (default 2)")
    g.add_argument("--stop-words", choices=("english", "none"),
                   default=TEXT_OPTIONS["stop_words"],
                   help="stop-word list (default english)")
    g.add_argument("--n-features", type=_int_arg(1), default=TEXT_OPTIONS["n_features"],
                   metavar="N",
                   help="hashing: number of hashed features (default 2**20)")
    g.add_argument("--embedding", type=_int_arg(0), default=TEXT_OPTIONS["embedding"], metavar="N",
                   help="tfidf: append N-dimensional document embeddings learned from all "
                        "the texts, labeled and unlabeled (PPMI word vectors; "
                        "linlap.text.EmbeddedTfidfVectorizer); 0 = off (default)")
    g = fit.add_argument_group("matrix input (svmlight)")
    g.add_argument("--normalize", choices=("none", "l2"), default="none",
                   help="l2: scale each row to unit length before the fit (kept in the "
                        "model, so predict and evaluate scale their rows too); none "
                        "(default): the rows as given. The graph and the default "
                        "--gamma-A scaled assume rows of about unit length, as text input's "
                        "TF-IDF rows are")
    g = fit.add_argument_group("graph")
    g.add_argument("--n-neighbors", type=_int_list_arg(1, distinct=True), default=None,
                   metavar="K[,K...]",
                   help="neighbours per document (default 50, at most a twentieth of the "
                        "non-empty documents but at least 5; any K is capped at the "
                        "non-empty documents - 1, and values a cap makes equal are "
                        "merged, with a warning). Several values, or several --power "
                        "values: candidate graphs (every K with every P) whose weights "
                        "are learned with the classifier (ensemble manifold "
                        "regularisation, EMRClassifier; one neighbour search, at the "
                        "largest K; laprls and lapsvm)")
    g.add_argument("--power", type=_int_list_arg(1, distinct=True), default=[5],
                   metavar="P[,P...]",
                   help="power of the Laplacian (default 5); several values: candidate "
                        "graphs, as for --n-neighbors (e.g. 1,2,5,8)")
    g.add_argument("--gamma-R", type=_weight_arg("auto"), default=None, metavar="G",
                   help="with candidate graphs only: weight γ_R of ‖μ‖², μ the graphs' "
                        "weights: a number (large keeps μ near uniform, 0 puts all the "
                        "weight on the graph the fit is smoothest on) or 'auto' (default: "
                        "the mean of the graphs' smoothness terms at uniform μ)")
    g.add_argument("--weight", choices=("cosine", "heat", "binary"), default="cosine",
                   help="edge weights (default cosine)")
    g.add_argument("--graph-space", choices=("auto", "tfidf", "svd"), default="auto",
                   help="where neighbours are searched: auto (default: the document vectors "
                        "up to 50,000 non-empty documents, a 50-dimensional SVD embedding "
                        "above), tfidf (always the document vectors) or svd (always the "
                        "embedding; on IMDB sentiment its graph was about a point more "
                        "accurate, on topic corpora 1.1-4.1 points less: "
                        "bench/RESULTS.md)")
    g.add_argument("--seed", type=_seed_arg, default=0,
                   help="seed of the graph's SVD and approximate (pynndescent) search, used "
                        "with --graph-space svd or above 50,000 documents; the default "
                        "exact search needs none (default 0)")
    g = fit.add_argument_group("estimator")
    g.add_argument("--estimator", choices=("laprls", "lapsvm", "laps3vm"), default="laprls",
                   help="Laplacian RLS (default), Laplacian SVM (finite Newton) or the "
                        "Laplacian S³VM: LapSVM plus a hinge loss on the unlabeled rows "
                        "with their class balance kept (low-density separation; a few "
                        "LapSVM fits' time, the most accurate on binary text in "
                        "bench/RESULTS.md)")
    g.add_argument("--gamma-A", type=_weight_arg("scaled"), default=None, metavar="G",
                   help="ambient (ridge) weight γ_A: a number or 'scaled' (default: 1e-6 "
                        "times the labeled documents per class, those clipped to "
                        "25…1000; laps3vm: a number, default 1e-3)")
    g.add_argument("--gamma-I", type=_weight_arg("scaled", "auto"), default=None, metavar="G",
                   help="intrinsic (graph) weight γ_I: a number, 'scaled' (default: 500 "
                        "over the labeled documents per class) or 'auto' (the scaled "
                        "value or less, chosen by cross-validation of the labeled "
                        "documents); laps3vm: a number, default 1")
    g.add_argument("--gamma-U", type=_weight_arg(), default=None, metavar="G",
                   help="laps3vm only: weight γ_U of the unlabeled rows' loss (default 1)")
    g.add_argument("--class-prior", default=None, metavar="PRIOR",
                   help="class-balance constraint on the unlabeled rows: none (the "
                        "default of laprls and lapsvm), labeled (proportions of the "
                        "labeled rows), predicted (estimated; laps3vm only, its default) "
                        "or comma-separated proportions in sorted class-name order, "
                        "e.g. 0.3,0.7")
    g.add_argument("--max-iter", type=_int_arg(1), default=None, metavar="N",
                   help="iteration cap of the solver: laprls, conjugate-gradient iterations "
                        "(default 1000); lapsvm, finite Newton steps (default 50); "
                        "laps3vm, finite Newton steps of each of its LapSVM solves (default "
                        "50). With --gamma-I auto, the LapRLS fits of its cross-validation "
                        "are capped at N CG iterations too (laprls) or at 1000 (lapsvm)")
    g.add_argument("--tol", type=_tol_arg, default=None, metavar="T",
                   help="relative tolerance of the solver, in (0, 1) (default 1e-4): "
                        "laprls, of the conjugate-gradient residual (and of the "
                        "objective's decrease); lapsvm, of the finite Newton steps (their "
                        "CG residual, optimality slack and relative decrease of the "
                        "objective); laps3vm, of its final LapSVM solves (those while "
                        "annealing stop at T or 1e-2, whichever is looser). The "
                        "cross-validation of --gamma-I auto uses it too")
    fit.add_argument("-v", "--verbose", action="store_true",
                     help="report graph-search progress and solver iterations (the "
                          "default on a terminal)")
    fit.set_defaults(func=_fit)

    pred = sub.add_parser("predict", help="predict labels of documents with a saved model",
                          description="Predict DATA in chunks (bounded memory); write one "
                                      "prediction per line, in the order of DATA. A "
                                      "directory: every file in it, those directly in it "
                                      "first, then each sub-folder's in name order (names "
                                      "starting with '.' skipped); --ids names them.")
    _add_model_and_data(pred, "a file, a directory of text files (in sub-folders or not), "
                              "or - (standard input, with --format)")
    pred.add_argument("--out", default="-", metavar="FILE",
                      help="output file (default: standard output; not MODEL or DATA)")
    pred.add_argument("--ids", action="store_true",
                      help="write CSV with a header and a first column 'id' naming each "
                           "document: its path relative to a directory DATA, its line "
                           "number in JSON-lines and svmlight, its record number after "
                           "the header in CSV (blank lines not counted)")
    pred.add_argument("--decision-values", action="store_true",
                      help="write CSV: prediction and decision value(s) (binary: one "
                           "column, positive means the second class)")
    pred.add_argument("--chunk-size", type=_int_arg(1), default=_CHUNK, metavar="N",
                      help=f"documents per chunk (default {_CHUNK})")
    _add_input_options(pred, "label column (ignored)")
    pred.set_defaults(func=_predict)

    ev = sub.add_parser("evaluate", help="accuracy, macro-F1, per-class precision/recall "
                                         "and confusion matrix on labeled documents",
                        description="Predict the labeled rows of DATA in chunks and print "
                                    "accuracy, macro-F1, per-class precision, recall and "
                                    "F1, and the confusion matrix. Unlabeled rows are "
                                    "skipped; classes absent from the model are noted on "
                                    "stderr.")
    _add_model_and_data(ev, "labeled documents: a file, a directory with one folder of "
                            "text files per class, or - (standard input, with --format)")
    ev.add_argument("--chunk-size", type=_int_arg(1), default=_CHUNK, metavar="N",
                    help=f"documents per chunk (default {_CHUNK})")
    _add_input_options(ev, "label column (unlabeled rows are skipped)")
    ev.set_defaults(func=_evaluate)

    top = sub.add_parser("top-features", help="highest- and lowest-weighted terms per class",
                         description="Per class, the N highest- and the N lowest-weighted "
                                     "terms of a linear model (lowest: most negative "
                                     "first; equal weights in column order, reversed for "
                                     "lowest). Binary: one list, for the second class in "
                                     "sorted order (negative weights point to the first). "
                                     "Without a vocabulary (hashing, svmlight input, a "
                                     "classifier saved alone) columns are shown as "
                                     "indices; --embedding dimensions are left out.")
    top.add_argument("model", metavar="MODEL", help="a model file written by linlap fit")
    top.add_argument("-n", "--top", dest="n", type=_int_arg(1), default=30, metavar="N",
                     help="terms per list (default 30)")
    top.add_argument("-q", "--quiet", action="store_true",
                     help="no notes on stderr (why terms have no names, embedding "
                          "dimensions left out): the lists alone")
    top.set_defaults(func=_top_features)
    pl = sub.add_parser("plot", help="write a PNG: solver convergence, test error vs "
                                     "number of labels, or the solution path (needs "
                                     "matplotlib)",
                        description="Plots on DATA or, without DATA, the bundled PCMAC "
                                    "corpus. DATA: 30 % of its labeled rows are held out "
                                    "as the test set; the other rows, unlabeled ones "
                                    "included, make the graph, and the labels are drawn "
                                    "from its other labeled rows.")
    pl.add_argument("kind", choices=("convergence", "labels", "path"),
                    help="convergence: CG residual / Newton objective per iteration; "
                         "labels: test error against the number of labels; path: the "
                         "LapSVM solution path (error or decision values against lambda)")
    pl.add_argument("--path-kind", choices=("error", "decision"), default="error",
                    help="for 'path': cross-validated error (default) or the decision "
                         "values of the labeled rows along the path")
    pl.add_argument("data", metavar="DATA", nargs="?", default=None)
    pl.add_argument("--out", required=True, metavar="PNG",
                    help="the PNG file to write (replaced only when the plot is done)")
    pl.add_argument("--n-labels", type=_int_list_arg(),
                    default=None, metavar="N[,N...]",
                    help="labels to draw (default 50 for convergence and path, "
                         "10,20,50,100,200,400 for labels; convergence and path use the "
                         "first value)")
    pl.add_argument("--n-neighbors", type=_int_arg(1), default=None, metavar="K",
                    help="neighbours of the graph (default 50, at most a twentieth of the "
                         "documents but at least 5; any K is capped by the documents)")
    pl.add_argument("--seed", type=_seed_arg, default=0,
                    help="seed of the test split, the label draws and the graph search "
                         "(default 0)")
    _add_input_options(pl)
    pl.set_defaults(func=_plot_entry)
    parser.commands = tuple(sub.choices)  # named when none is given
    return parser



def main(argv=None):
    from .._progress import stderr_may_close

    interrupted = []

    def on_interrupt(signum, frame):
        interrupted.append(signum)
        raise KeyboardInterrupt

    # Ctrl-C is remembered as well as raised: one landing while numpy's C core loads
    # comes out as an ImportError (the KeyboardInterrupt replaced, not chained)
    previous = None
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
        previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        # a closed stderr (`2>&1 | head`) silences the diagnostics, never the work
        with stderr_may_close():
            try:
                return _main(argv)
            except Exception:  # Ctrl-C, also while the command's modules load
                if not interrupted:
                    raise
            except KeyboardInterrupt:
                pass
            print("linlap: interrupted", file=sys.stderr)
            return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _main(argv):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # usage and an error on stderr, exit 2 (argparse's convention)
        parser.error(f"give a command: {', '.join(parser.commands)} ('linlap --help' "
                     f"describes them)")
    try:
        with warnings.catch_warnings():  # restores showwarning for in-process callers
            warnings.showwarning = show_warning
            return args.func(args)
    except BrokenPipeError as exc:
        if exc.filename is not None:  # a named output whose reader left (a FIFO): failed
            return _error(exc)
        # standard output closed (`linlap ... | head`): not an error (stderr's writes
        # never raise here, and a named output's errors name it)
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except UsageError as exc:
        print(f"linlap: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except (ValueError, OSError, MemoryError) as exc:
        return _error(exc)


def _error(exc):
    """One ``linlap: error:`` line for an input or output problem; exit status 1."""
    msg = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        msg = f"{exc.filename}: {exc.strerror}"
    print(f"linlap: error: {msg}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
