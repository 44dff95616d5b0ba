"""What the commands share: input options, model loading, batches and progress."""

import contextlib
import io
import os
import re
import sys
import time
import warnings

from .._atomic import atomic_write
from .._progress import progress

_CHUNK = 10_000


class UsageError(ValueError):
    """Options that contradict each other or a malformed value: a wrong command line
    (one error line, exit status 2, before any input is read)."""


#: ``linlap fit``'s vectorizer options (text input only) and their defaults
TEXT_OPTIONS = {"vectorizer": "tfidf", "ngram_max": 1, "min_df": 2, "stop_words": "english",
                "n_features": 2**20, "embedding": 0}


class _Reporter:
    """Step lines and progress bars on stderr; silent with --quiet."""

    #: the step whose line ``msg…`` awaits its timing (off a terminal), if any: a
    #: warning printed meanwhile ends that line first (:func:`show_warning`)
    open_step = None

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
            interrupted = False  # by a warning: the timing goes on a line of its own

            def __enter__(self):
                self.t = time.perf_counter()
                if not reporter.quiet:
                    print(f"{msg}…", end=end, file=sys.stderr, flush=True)
                    if end != "\n":
                        _Reporter.open_step = self
                return self

            def __exit__(self, exc_type, exc, tb):
                if _Reporter.open_step is self:
                    _Reporter.open_step = None
                if not reporter.quiet:
                    head = f"{msg}: " if end == "\n" or self.interrupted else ""
                    if exc_type is None:
                        print(f"{head}{time.perf_counter() - self.t:.1f} s",
                              file=sys.stderr, flush=True)
                    else:
                        print(f"{head}failed", file=sys.stderr, flush=True)
                return False
        return _Step()

    def bar(self, total=None, desc="", unit="docs"):
        """A progress bar on a terminal (tqdm, if installed); silent elsewhere."""
        return progress(not self.quiet and sys.stderr.isatty(), total=total, desc=desc,
                        unit=unit)


def show_warning(message, category, filename, lineno, file=None, line=None):
    """``warnings.showwarning`` of the command: ``linlap: warning: <message>`` on a line
    of its own (after the open step line, if any; above the progress bars)."""
    step = _Reporter.open_step
    if step is not None:
        print(file=sys.stderr)
        step.interrupted, _Reporter.open_step = True, None
    text = f"linlap: warning: {' '.join(str(message).split())}"
    try:
        from tqdm import tqdm
    except ImportError:
        print(text, file=sys.stderr, flush=True)
    else:  # clears and redraws any bar on the terminal
        tqdm.write(text, file=sys.stderr)


#: KNNGraph's keyword that ``linlap fit`` and ``plot`` spell as an option (:func:`_spelled`)
_GRAPH_SPELLINGS = ((r"\bn_neighbors\b", "--n-neighbors"),)


@contextlib.contextmanager
def _spelled(spellings):
    """Within: the warnings and errors (ValueError, MemoryError) of the estimators and the
    graph in the command's terms, ``spellings`` (``(pattern, replacement)`` pairs for
    :func:`re.sub`) rewriting the Python keywords they name into its options
    (``gamma_I=0`` into ``--gamma-I 0``). The library's messages stay those of Python
    callers; a message that names none of them is left as it is."""
    def spell(text):
        for pattern, replacement in spellings:
            text = re.sub(pattern, replacement, text)
        return text

    shown = warnings.showwarning

    def show(message, category, *args, **kwargs):
        shown(spell(str(message)), category, *args, **kwargs)

    warnings.showwarning = show
    try:
        yield
    except (ValueError, MemoryError) as exc:
        text = spell(str(exc))
        if text == str(exc):
            raise
        raise (MemoryError if isinstance(exc, MemoryError) else ValueError)(text) from None
    finally:
        warnings.showwarning = shown


def _draw_labels(y, n, seed, unlabeled=-1):
    """``y`` with all but ``n`` of its labels hidden (:func:`linlap.datasets.mask_labels`,
    seeded by --seed), for the commands that draw their labels (demo, plot). A draw of a
    single class is refused in the command's terms (the estimator would refuse it with
    advice for Python callers: ``unlabeled=None``)."""
    import numpy as np

    from ..datasets import mask_labels

    present = np.unique(y[y != unlabeled])
    if present.size == 1:  # no draw can help
        raise ValueError(f"every labeled document is of class {str(present[0])!r}; a "
                         f"classifier needs labels of two classes")
    drawn = mask_labels(y, n, random_state=seed, unlabeled=unlabeled)
    classes = np.unique(drawn[drawn != unlabeled])
    if classes.size < 2:  # mask_labels draws a label of every class when n allows it
        if n == 1:
            raise ValueError("--n-labels 1: a classifier needs labels of two classes; "
                             "draw at least 2")
        raise ValueError(f"the {n} labels drawn are all of class {str(classes[0])!r}; a "
                         f"classifier needs labels of two classes")
    return drawn


def _data_name(args):
    """DATA as messages name it: ``<stdin>`` for ``-`` (as the readers' own messages do)."""
    return "<stdin>" if args.data == "-" else args.data


def _reader_kwargs(args, unlabeled_label):
    """The reader's options; ``unlabeled_label`` as :func:`_unlabeled_label` gives it."""
    return dict(text_column=args.text_column, label_column=args.label_column,
                unlabeled_label=unlabeled_label)


def _unlabeled_label(args, fmt, fitted_with=None):
    """The label that marks unlabeled rows of ``fmt`` input (as the reader compares
    labels): --unlabeled-label, else ``fitted_with``, the one the model was fit with
    (not for a directory, whose labels are folder names), else the format's default.
    A value the format cannot take is a wrong command line, refused before reading."""
    from ..io import unlabeled_marker

    value = args.unlabeled_label
    if value is None and fmt != "dir":
        value = fitted_with
    try:
        return unlabeled_marker(fmt, value, option="--unlabeled-label")
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _refuse_to_replace_inputs(option, output, inputs):
    """A wrong command line when the file ``option`` names is one of ``inputs``
    (``(path, description)`` pairs), or lies inside one that is a directory (DATA): the
    output would replace that input, or one of its documents (or be read as one by the
    next run)."""
    if output in (None, "-"):
        return
    for path, description in inputs:
        if path in (None, "-") or not os.path.exists(path):
            continue
        if os.path.isdir(path):
            folder = os.path.realpath(path)
            where = os.path.realpath(output)
            below = os.path.relpath(where, folder).split(os.sep)
            # a hidden name on the way is not a document of DATA (the reader skips them)
            if os.path.commonpath([folder, where]) == folder \
                    and not any(part.startswith(".") and part not in (".", "..")
                                for part in below):
                raise UsageError(f"{option} {output} is inside {path}, the "
                                 f"{description.replace('file', 'directory', 1)}: the "
                                 f"output would replace or add one of its documents; "
                                 f"give a file outside it")
        elif os.path.exists(output) and os.path.samefile(path, output):
            raise UsageError(f"{option} {output} is the {description}: the output would "
                             f"replace it; give another file name")


def _check_format_option(args):
    """A wrong command line when DATA is standard input without --format, or --format
    dir names a file (or a file format a directory), or DATA is a model file: before
    :func:`detect_format`."""
    from ..persistence import _has_model_header, _is_model_file

    if args.data == "-":
        if args.format in ("auto", "dir"):
            raise UsageError("DATA - (standard input) needs --format jsonl, csv or svmlight")
    elif os.path.isfile(args.data) and _has_model_header(args.data):
        # read as text it fails on a missing column, far from the cause; a model file by
        # its first line only (a compressed data file may start like a first-format one)
        model = getattr(args, "model", None) if args.command != "fit" else None
        swapped = (model is not None and not _has_model_header(model)
                   and not _is_model_file(model))
        raise UsageError(f"DATA {args.data} is a linlap model file, not documents"
                         + (f", and MODEL {model} is not one: did you swap MODEL and DATA? "
                            f"(linlap {args.command} MODEL DATA)" if swapped else ""))
    elif args.format != "auto" and os.path.exists(args.data) \
            and (args.format == "dir") != os.path.isdir(args.data):
        if args.format == "dir":
            raise UsageError(f"--format dir: {_data_name(args)} is not a directory")
        raise UsageError(f"--format {args.format}: {_data_name(args)} is a directory (--format "
                         f"dir, or leave --format out)")


def _check_columns(args):
    """A wrong command line when the label column is the text column (every document
    would be a class of its own): for the commands that read both."""
    if args.text_column.strip() == args.label_column.strip():
        raise UsageError(f"--label-column {args.label_column} is also the text column "
                         f"(--text-column); labels and texts must be different "
                         f"columns/fields")


def _add_input_options(p, labels_help="label column/field (empty or missing = unlabeled)"):
    from ..io import FORMATS

    p.add_argument("--format", choices=FORMATS, default="auto",
                   help="input format (default: from the suffix: .jsonl/.ndjson/.json, "
                        ".csv/.tsv, .svm/.svmlight/.libsvm, or a directory; needed when "
                        "DATA is -, standard input)")
    p.add_argument("--text-column", default="text", metavar="NAME",
                   help="text column/field of CSV and JSON-lines input (default: text)")
    p.add_argument("--label-column", default="label", metavar="NAME",
                   help=f"{labels_help} (default: label)")
    p.add_argument("--unlabeled-label", default=None, metavar="VALUE",
                   help="a label value that means 'unlabeled'. CSV/JSON-lines: an empty "
                        "or missing label is always unlabeled; svmlight: a number, "
                        "default 0; not for a directory (its unlabeled/ folder). "
                        "predict and evaluate: default the value the model was fit with")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bars or step timings on stderr")


def _model_input_kind(model):
    """'text' if the model starts with a text vectorizer, else 'matrix'."""
    from sklearn.pipeline import Pipeline

    if isinstance(model, Pipeline) and hasattr(model.steps[0][1], "build_analyzer"):
        return "text"
    return "matrix"


def _load_model(path, data=None):
    """``(model, metadata)`` from a model file (``linlap.load``); ``data``, the DATA
    argument, explains a model file given in its place."""
    from ..persistence import _is_model_file, load

    try:
        model, metadata = load(path, with_metadata=True)
    except ValueError as exc:
        if data is not None and not _is_model_file(path) and _is_model_file(data):
            raise ValueError(f"{exc}; DATA {data} is a model file: did you swap MODEL "
                             f"and DATA? (MODEL comes first)") from None
        raise
    if not (hasattr(model, "predict") and hasattr(model, "decision_function")):
        raise ValueError(f"{path}: the saved object is not a classifier")
    return model, metadata


def _classifier(model):
    """The classifier of a model: a Pipeline's last step, or the model itself."""
    return model.steps[-1][1] if hasattr(model, "steps") else model


def _model_classes(model):
    """The classes of a model as strings, the labels of the command's input."""
    return [str(c) for c in _classifier(model).classes_]


def _model_input(args, need_labels=False):
    """``(model, unlabeled_label, batches)`` for predict and evaluate: the model of
    args.model, the label marking unlabeled rows of args.data (:func:`_unlabeled_label`)
    and the batches of args.data, every option checked before any of DATA is read."""
    from ..io import detect_format, iter_batches

    if need_labels:
        _check_columns(args)
    _check_format_option(args)
    model, metadata = _load_model(args.model, args.data)
    fmt = detect_format(args.data, args.format)
    kind = _model_input_kind(model)
    # the model's kind before its recorded unlabeled label: that label fits the model's
    # input, not another format's
    if (kind == "text") != (fmt != "svmlight"):
        if kind == "text":
            raise ValueError(f"{_data_name(args)}: the model was fit on text, but this input is "
                             f"svmlight; give it CSV, JSON-lines or a directory of texts")
        raise ValueError(f"{_data_name(args)}: the model has no vectorizer (it expects a numeric "
                         f"matrix: svmlight input, --format svmlight)")
    unlabeled_label = _unlabeled_label(args, fmt, metadata.get("unlabeled_label"))
    n_features = None
    if kind == "matrix":
        n_features = int(_classifier(model).n_features_in_)
    batches = iter_batches(args.data, fmt, chunk_size=args.chunk_size,
                           need_labels=need_labels, n_features=n_features,
                           **_reader_kwargs(args, unlabeled_label))
    return model, unlabeled_label, batches


@contextlib.contextmanager
def _stdout():
    """Standard output that writes the undecodable bytes of file names (read with
    ``surrogateescape``, e.g. a class folder named in Latin-1) back as they were, instead
    of failing partway through (whatever the locale makes its error handler)."""
    stream = sys.stdout
    errors = getattr(stream, "errors", None)
    try:
        if errors not in (None, "surrogateescape"):
            stream.reconfigure(errors="surrogateescape")
    except (AttributeError, ValueError, io.UnsupportedOperation):
        errors = None  # not a text file we can reconfigure: left as it is
    try:
        yield stream
    finally:
        if errors not in (None, "surrogateescape"):
            with contextlib.suppress(AttributeError, ValueError, io.UnsupportedOperation):
                stream.reconfigure(errors=errors)


@contextlib.contextmanager
def _output(path):
    """Standard output (None or '-'), or a text file written through a temporary file
    that replaces ``path`` only when the run succeeds: an error leaves an existing file
    as it was. Both write names that are not UTF-8 (file and folder names, read with
    ``surrogateescape``) as their original bytes."""
    if path in (None, "-"):
        with _stdout() as stdout:
            yield stdout
            stdout.flush()
        return
    with atomic_write(path) as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8", errors="surrogateescape", newline="")
        try:
            yield text
            text.flush()
        finally:
            text.detach()  # atomic_write closes fh
