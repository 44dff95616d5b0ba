"""What the commands share: input options, model loading, batches and progress."""

import contextlib
import io
import sys
import time

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
        """A progress bar on a terminal (tqdm, if installed); silent elsewhere."""
        return progress(not self.quiet and sys.stderr.isatty(), total=total, desc=desc,
                        unit=unit)


def _reader_kwargs(args):
    return dict(text_column=args.text_column, label_column=args.label_column,
                unlabeled_label=args.unlabeled_label)


def _add_input_options(p, labels_help="label column/field (empty or missing = unlabeled)"):
    from ..io import FORMATS

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
    from ..persistence import load

    model = load(path)
    if not (hasattr(model, "predict") and hasattr(model, "decision_function")):
        raise ValueError(f"{path}: the saved object is not a classifier")
    return model


def _model_batches(model, args, fmt_path, need_labels=False):
    from ..io import detect_format, iter_batches

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



@contextlib.contextmanager
def _output(path):
    """Standard output (None or '-'), or a text file written through a temporary file
    that replaces ``path`` only when the run succeeds: an error leaves an existing file
    as it was (and ``--out`` may name the input)."""
    if path in (None, "-"):
        yield sys.stdout
        sys.stdout.flush()
        return
    with atomic_write(path) as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8", newline="")
        try:
            yield text
            text.flush()
        finally:
            text.detach()  # atomic_write closes fh
