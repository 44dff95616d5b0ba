"""Input readers of the ``linlap`` command: JSON-lines, CSV/TSV, svmlight/libsvm and
``load_files``-style directories.

Every reader streams: it yields :class:`Batch` objects of at most ``chunk_size``
documents, so ``linlap predict`` runs in bounded memory over arbitrarily large files.
Every problem with the input (missing file or column, bad line, text that is not
UTF-8, empty file) raises :class:`ValueError` with a message naming the file and the
line or row, which the command prints as one ``linlap: error: ...`` line.

Labels are returned as strings (``None`` for an unlabeled row), whatever the format,
so that a model fit on one format evaluates on another.

A path ``'-'`` reads standard input (its format must be given: JSON-lines, CSV or
svmlight); messages call it ``<stdin>``.
"""

import contextlib
import csv
import json
import os
import sys
import warnings
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Batch", "FORMATS", "detect_format", "iter_batches", "read_all",
           "unlabeled_marker", "SVMLIGHT_UNLABELED"]

FORMATS = ("auto", "jsonl", "csv", "svmlight", "dir")

#: Label value that marks an unlabeled row of an svmlight file by default (the
#: SVMlight transductive convention; ``-1`` and ``1`` are the usual binary classes).
SVMLIGHT_UNLABELED = "0"

#: Largest feature index of an svmlight file (int32 column indices; a larger index is
#: a corrupt line, and would make the model's weight vector absurdly long).
MAX_SVMLIGHT_INDEX = 2**31 - 2

_SUFFIXES = {
    ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
    ".csv": "csv", ".tsv": "csv",
    ".svm": "svmlight", ".svmlight": "svmlight", ".libsvm": "svmlight",
}


class _Stdin(str):
    """The name of standard input in messages; the readers open stdin for it (a type of
    its own, so that a file named like it is still a file)."""


STDIN = _Stdin("<stdin>")


@dataclass
class Batch:
    """A chunk of input rows.

    data : list of str (text formats) or scipy.sparse.csr_matrix (svmlight)
    labels : list of (str or None); None = unlabeled (or no label column)
    ids : list of str; for ``dir`` input the file's path relative to the directory;
        else the 1-based line number (JSON-lines, svmlight) or record number after the
        header (CSV: blank lines are not counted, a record over several lines counts
        once, as pandas numbers rows)
    """
    data: object
    labels: list
    ids: list = field(default_factory=list)

    def __len__(self):
        return len(self.labels)


def detect_format(path, fmt="auto"):
    """Return the concrete format of ``path`` (``fmt`` unless it is 'auto'; ``'-'``,
    standard input, needs a file format)."""
    path = os.fspath(path)
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    if path == "-":
        if fmt in ("auto", "dir"):
            raise ValueError("standard input ('-'): give its format with --format jsonl, "
                             "csv or svmlight")
        return fmt
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file or directory")
    if fmt != "auto":
        if (fmt == "dir") != os.path.isdir(path):
            what = "is a directory" if os.path.isdir(path) else "is not a directory"
            raise ValueError(f"{path}: {what}, but --format {fmt} was given")
        return fmt
    if os.path.isdir(path):
        return "dir"
    name = path.lower()
    for compressed in (".gz", ".bz2", ".xz"):
        if name.endswith(compressed):
            raise ValueError(f"{path}: compressed input is not supported; decompress it "
                             f"first (e.g. with gunzip / xz -d)")
    ext = os.path.splitext(name)[1]
    if ext in _SUFFIXES:
        return _SUFFIXES[ext]
    raise ValueError(f"{path}: cannot tell the format from the file name; pass "
                     f"--format jsonl, csv, svmlight or dir")


def _decoded_lines(path):
    """Yield (line_number, str) from a file (or :data:`STDIN`), refusing non-UTF-8 bytes
    with the line."""
    opened = contextlib.nullcontext(sys.stdin.buffer) if isinstance(path, _Stdin) \
        else open(path, "rb")
    with opened as fh:
        first = True
        for number, raw in enumerate(fh, start=1):
            if first and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            first = False
            yield number, _decode_line(path, number, raw)


def _decode_line(path, number, raw):
    """The bytes ``raw`` of line ``number`` of ``path`` as text; non-UTF-8 bytes raise
    ValueError naming the file, the line and the column (also used by
    :mod:`linlap.distributed.text`)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}, line {number}: not valid UTF-8 text (byte "
                         f"{raw[exc.start]:#04x} at column {exc.start + 1}); "
                         f"re-encode the file as UTF-8") from None


def _cr_only(number, line):
    """Whether line ``number`` is a whole file with CR-only line endings: the first line,
    with no newline, holding carriage returns before its end."""
    return number == 1 and not line.endswith("\n") and "\r" in line.rstrip("\r\n")


def _old_mac_line_ends(number, line, fix="remove it"):
    """Why line ``number`` (``line``, as :func:`_decoded_lines` gives it) may be
    unreadable if it holds carriage returns that end no line of their own ('' if it
    has none): old Mac (CR-only) line endings, when the file has CRs and no newline at
    all, so that it reads as one line; else a stray CR inside a line, named by its
    column (``fix`` says what to do about it)."""
    body = line.rstrip("\r\n")
    if "\r" not in body:
        return ""
    if _cr_only(number, line):
        return ("the file's lines end in a carriage return alone (old Mac line endings); "
                "convert them to newlines, e.g. with tr '\\r' '\\n'")
    column = body.index("\r") + 1
    return f"a stray carriage return (\\r) at column {column} of the line; {fix}"


def _normalise_label(value, unlabeled):
    if value is None:
        return None
    if isinstance(value, bool):
        value = str(value).lower()
    elif isinstance(value, float) and value.is_integer():
        value = str(int(value))
    else:
        value = str(value)
    value = value.strip()
    if value == "" or (unlabeled is not None and value == unlabeled):
        return None
    return value


def _refuse_constant(name):
    raise ValueError(f"{name} is not a JSON value; write a label as a string or a finite "
                     f"number")


def _jsonl_record(path, number, line, text_column, label_column, unlabeled):
    """``(text, label, has_label_field)`` of one non-blank JSON line (errors name the line)."""
    try:
        record = json.loads(line, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:  # its line is that of the text: always 1 here
        raise ValueError(f"{path}, line {number}: not valid JSON ({exc.msg}: column "
                         f"{exc.colno})") from None
    except ValueError as exc:  # NaN / Infinity: Python's json reads them, JSON has none
        raise ValueError(f"{path}, line {number}: not valid JSON ({exc})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path}, line {number}: expected a JSON object "
                         f"{{\"{text_column}\": ...}}, got {type(record).__name__}")
    if text_column not in record:
        raise ValueError(f"{path}, line {number}: no {text_column!r} field (fields: "
                         f"{', '.join(map(repr, record)) or 'none'}); choose the text "
                         f"field with --text-column")
    text = record[text_column]
    if not isinstance(text, str):
        raise ValueError(f"{path}, line {number}: field {text_column!r} is "
                         f"{type(text).__name__}, not a string")
    label = record.get(label_column)
    if isinstance(label, (list, dict)):
        raise ValueError(f"{path}, line {number}: field {label_column!r} is a JSON "
                         f"{'array' if isinstance(label, list) else 'object'}, not a "
                         f"label (a string, number, true/false, or null/empty for "
                         f"unlabeled)")
    return text, _normalise_label(label, unlabeled), label_column in record


def _iter_jsonl(path, text_column, label_column, unlabeled, chunk_size, need_labels):
    texts, labels, ids = [], [], []
    seen = has_label_field = False
    for number, line in _decoded_lines(path):
        if not line.strip():
            continue
        if not seen and line.lstrip().startswith("["):
            raise ValueError(f"{path}: this is a JSON array; linlap reads one JSON object "
                             f"per line (JSON lines): convert it, e.g. with "
                             f"jq -c '.[]' < {path} > data.jsonl")
        seen = True
        try:
            text, label, has_label = _jsonl_record(path, number, line, text_column,
                                                   label_column, unlabeled)
        except ValueError as exc:
            cause = _old_mac_line_ends(number, line, "write it as \\r in a JSON string")
            if cause:
                raise ValueError(f"{exc}; {cause}") from None
            raise
        has_label_field = has_label_field or has_label
        texts.append(text)
        labels.append(label)
        ids.append(str(number))
        if len(texts) >= chunk_size:
            yield Batch(texts, labels, ids)
            texts, labels, ids = [], [], []
    if not seen:
        raise ValueError(f"{path}: the file is empty (no JSON lines)")
    if need_labels and not has_label_field:
        raise ValueError(f"{path}: no line has a {label_column!r} field; choose the label "
                         f"field with --label-column")
    if texts:
        yield Batch(texts, labels, ids)


def _iter_csv(path, text_column, label_column, unlabeled, chunk_size, need_labels):
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    delimiter = "\t" if path.lower().endswith(".tsv") else ","
    lines = _decoded_lines(path)
    line_no, last_line = [0], [""]

    def text_lines():
        for number, line in lines:
            line_no[0], last_line[0] = number, line
            yield line

    def bad_csv(exc):
        # not Python's hint, which misleads
        cause = _old_mac_line_ends(line_no[0], last_line[0], "remove it, or quote the field")
        if cause:
            return ValueError(f"{path}, line {line_no[0]}: bad CSV: {cause}")
        if delimiter == "\t" and '"' in last_line[0]:
            cause = ("; in a .tsv file double quotes follow the CSV rules: a field that "
                     "starts with a quote is quoted, up to the next lone quote, across "
                     "tabs and lines; write a field that begins with a literal quote "
                     "quoted, its quotes doubled (\"\"\"Quoted\"\" title\")")
        return ValueError(f"{path}, line {line_no[0]}: bad CSV ({exc}){cause}")

    # strict: an unclosed quote is an error, not a field that swallows the rest of the file
    reader = csv.reader(text_lines(), delimiter=delimiter, strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise ValueError(f"{path}: the file is empty (expected a header row with a "
                         f"{text_column!r} column)") from None
    except csv.Error as exc:
        raise bad_csv(exc) from None
    header = [h.strip() for h in header]
    if text_column not in header:
        raise ValueError(f"{path}: no {text_column!r} column (columns: "
                         f"{', '.join(map(repr, header))}); choose it with --text-column")
    if need_labels and label_column not in header:
        raise ValueError(f"{path}: no {label_column!r} column (columns: "
                         f"{', '.join(map(repr, header))}); choose it with --label-column")
    ti = header.index(text_column)
    li = header.index(label_column) if label_column in header else None
    texts, labels, ids = [], [], []
    row_no = kept = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise bad_csv(exc) from None
        if not row or (len(row) == 1 and not row[0].strip() and len(header) > 1):
            continue  # a blank line: no record, not counted
        row_no += 1
        if len(row) != len(header):
            raise ValueError(f"{path}, line {line_no[0]} (row {row_no}): {len(row)} fields, "
                             f"but the header has {len(header)}")
        kept += 1
        texts.append(row[ti])
        labels.append(_normalise_label(row[li], unlabeled) if li is not None else None)
        ids.append(str(row_no))
        if len(texts) >= chunk_size:
            yield Batch(texts, labels, ids)
            texts, labels, ids = [], [], []
    if kept == 0:
        raise ValueError(f"{path}: no data rows after the header")
    if texts:
        yield Batch(texts, labels, ids)


def _svmlight_label(token):
    try:
        value = float(token)
    except ValueError:
        return None
    if not np.isfinite(value):
        return None
    return str(int(value)) if value.is_integer() else repr(value)


def unlabeled_marker(fmt, unlabeled_label, option="unlabeled_label"):
    """The label value that marks an unlabeled row of ``fmt`` input, as its reader
    compares labels (None: only empty or missing labels are unlabeled).

    svmlight: ``unlabeled_label`` as a number written like the labels (``'-5.0'`` is
    ``'-5'``), default ``'0'``; JSON-lines and CSV: the value stripped; a directory
    takes none (its unlabeled documents are those in ``unlabeled/``). ``option`` names
    the value in messages.
    """
    if unlabeled_label is None:
        return SVMLIGHT_UNLABELED if fmt == "svmlight" else None
    given = str(unlabeled_label).strip()
    if fmt == "dir":
        raise ValueError(f"{option}: a directory's unlabeled documents are the files in "
                         f"its 'unlabeled/' folder; {option} applies to files only")
    if fmt == "svmlight":
        marker = _svmlight_label(given)
        if marker is None:  # a value no svmlight label can equal
            raise ValueError(f"{option} {given!r}: svmlight labels are numbers")
        return marker
    return given


#: distinct feature indices beyond the model's that a reader counts exactly
_MAX_COUNTED = 100_000


def _iter_svmlight(path, unlabeled, chunk_size, n_features):
    import scipy.sparse as sp

    labels, ids, indptr, indices, values = [], [], [0], [], []
    max_index = -1
    seen = False
    # entries beyond n_features, and their indices (up to _MAX_COUNTED: bounded memory)
    dropped, dropped_indices, top = 0, set(), -1

    def flush():
        width = n_features if n_features is not None else max_index + 1
        X = sp.csr_matrix((np.asarray(values, dtype=np.float64),
                           np.asarray(indices, dtype=np.int64),
                           np.asarray(indptr, dtype=np.int64)), shape=(len(labels), width))
        X.sum_duplicates()
        return Batch(X, labels, ids)

    for number, line in _decoded_lines(path):
        if _cr_only(number, line):
            # old Mac line endings: its lines would read as one, the CRs as blanks
            raise ValueError(f"{path}, line 1: bad svmlight file: "
                             f"{_old_mac_line_ends(number, line)}")
        content = line.split("#", 1)[0].strip()
        if not content:
            continue
        seen = True
        tokens = content.split()
        label = _svmlight_label(tokens[0])
        if label is None:
            raise ValueError(f"{path}, line {number}: bad svmlight line: the label "
                             f"{tokens[0]!r} is not a number")
        for token in tokens[1:]:
            idx, sep, val = token.partition(":")
            if idx == "qid":
                continue
            try:
                if not sep or not (idx.isascii() and idx.isdigit()):  # int() takes "1_0"
                    raise ValueError
                j, v = int(idx), float(val)
                if not 0 <= j <= MAX_SVMLIGHT_INDEX or not np.isfinite(v):
                    raise ValueError
            except ValueError:
                raise ValueError(f"{path}, line {number}: bad svmlight line: {token!r} is "
                                 f"not index:value (an integer in [0, {MAX_SVMLIGHT_INDEX}] "
                                 f"and a finite number)") from None
            if n_features is not None and j >= n_features:
                # a feature the model never saw: ignored, like an unknown word (but
                # counted: many of them mean another feature space, warned of below)
                if v:
                    dropped += 1
                    top = max(top, j)
                    if len(dropped_indices) < _MAX_COUNTED:
                        dropped_indices.add(j)
                continue
            max_index = max(max_index, j)
            indices.append(j)
            values.append(v)
        labels.append(None if label == unlabeled else label)
        ids.append(str(number))
        indptr.append(len(indices))
        if len(labels) >= chunk_size and n_features is not None:
            yield flush()
            labels, ids, indptr, indices, values = [], [], [0], [], []
    if not seen:
        raise ValueError(f"{path}: the file is empty (no svmlight lines)")
    if labels:
        yield flush()
    if dropped:
        distinct = len(dropped_indices)
        distinct = f"{distinct:,}" if distinct < _MAX_COUNTED else f"at least {distinct:,}"
        warnings.warn(f"{path}: {dropped:,} nonzero entries, in {distinct} distinct "
                      f"feature indices (up to {top:,}), are "
                      f"beyond the model's {n_features:,} features (indices 0 to "
                      f"{n_features - 1:,}) and were ignored; was the file made with "
                      f"another vectorizer or feature numbering than the model's?",
                      UserWarning, stacklevel=2)


def _visible(names):
    """``names`` in name order, without the hidden ones (starting with '.')."""
    return sorted(name for name in names if not name.startswith("."))


def _dir_files(path, need_labels, unlabeled_dir):
    """``(file, label)`` of the documents of a directory, in this order: the files
    directly in it (read only when labels are not needed: they have no class), then
    each sub-folder in name order, a folder's files in name order before its own
    sub-folders. Hidden files and folders (names starting with '.') are skipped."""
    names = _visible(os.listdir(path))
    is_folder = {name: os.path.isdir(os.path.join(path, name)) for name in names}
    folders = [name for name in names if is_folder[name]]
    files = [name for name in names if not is_folder[name]]
    if need_labels:
        if not folders:
            raise ValueError(f"{path}: no sub-folders; expected one folder of text files "
                             f"per class (and optionally {unlabeled_dir}/)")
        if files:
            warnings.warn(f"{path}: {len(files)} file(s) directly in the directory are "
                          f"not read (e.g. {files[0]!r}): documents with labels are in "
                          f"the class folders, unlabeled ones in {unlabeled_dir}/",
                          UserWarning, stacklevel=2)
    else:
        for name in files:
            yield os.path.join(path, name), None
    for entry in folders:
        label = None if entry == unlabeled_dir else entry
        for root, dirs, sub_files in os.walk(os.path.join(path, entry)):
            dirs[:] = _visible(dirs)
            for name in _visible(sub_files):
                yield os.path.join(root, name), label


def _iter_dir(path, chunk_size, need_labels, unlabeled_dir="unlabeled"):
    texts, labels, ids = [], [], []
    total = 0
    for file, label in _dir_files(path, need_labels, unlabeled_dir):
        with open(file, "rb") as fh:
            raw = fh.read()
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{file}: not valid UTF-8 text (byte "
                             f"{raw[exc.start]:#04x} at offset {exc.start}); "
                             f"re-encode the file as UTF-8") from None
        texts.append(text)
        labels.append(label)
        ids.append(os.path.relpath(file, path))
        total += 1
        if len(texts) >= chunk_size:
            yield Batch(texts, labels, ids)
            texts, labels, ids = [], [], []
    if total == 0:
        raise ValueError(f"{path}: the class folders hold no files" if need_labels else
                         f"{path}: no files (hidden ones, starting with '.', are skipped)")
    if texts:
        yield Batch(texts, labels, ids)


def iter_batches(path, fmt="auto", *, text_column="text", label_column="label",
                 unlabeled_label=None, chunk_size=10_000, need_labels=False, n_features=None):
    """Yield :class:`Batch` objects of at most ``chunk_size`` rows from ``path``.

    Parameters
    ----------
    path : str or path-like
        A file, a directory, or ``'-'``: standard input (with a ``fmt`` other than
        'auto' and 'dir'; CSV from standard input is comma-separated).
    fmt : {'auto', 'jsonl', 'csv', 'svmlight', 'dir'}
        'auto' guesses from the suffix (.jsonl/.ndjson/.json, .csv/.tsv,
        .svm/.svmlight/.libsvm) or a directory.
    text_column, label_column : str
        Field/column names (JSON-lines, CSV).
    unlabeled_label : str or None
        An extra label value meaning "unlabeled". Text formats: an empty or missing
        label is always unlabeled. svmlight: default ``'0'``. Not for a directory
        (see :func:`unlabeled_marker`).
    need_labels : bool
        Refuse a CSV/JSON-lines file without the label column. A directory: True reads
        its class folders and ``unlabeled/`` (files directly in it are skipped with a
        warning); False reads every file, those directly in it first, then the
        sub-folders' in name order.
    n_features : int or None
        svmlight: width of the matrices, the model's (features beyond it are ignored,
        with a warning once the file is read). None reads the whole file as one batch
        and uses the largest index + 1.
    """
    path = os.fspath(path)
    fmt = detect_format(path, fmt)
    if path == "-":
        path = STDIN
    if chunk_size < 1:
        raise ValueError("chunk size must be >= 1")
    unlabeled_label = unlabeled_marker(fmt, unlabeled_label)
    if fmt == "jsonl":
        return _iter_jsonl(path, text_column, label_column, unlabeled_label, chunk_size,
                           need_labels)
    if fmt == "csv":
        return _iter_csv(path, text_column, label_column, unlabeled_label, chunk_size,
                         need_labels)
    if fmt == "svmlight":
        return _iter_svmlight(path, unlabeled_label, chunk_size, n_features)
    return _iter_dir(path, chunk_size, need_labels)


def concat_batches(batches):
    """One :class:`Batch` from several (sparse rows stacked, texts concatenated)."""
    import scipy.sparse as sp

    labels = [lab for b in batches for lab in b.labels]
    ids = [i for b in batches for i in b.ids]
    if batches and sp.issparse(batches[0].data):
        data = sp.vstack([b.data for b in batches], format="csr")
    else:
        data = [t for b in batches for t in b.data]
    return Batch(data, labels, ids)


def read_all(path, fmt="auto", **kwargs):
    """Read the whole input as one :class:`Batch`."""
    return concat_batches(list(iter_batches(path, fmt, chunk_size=kwargs.pop("chunk_size", 10_000),
                                            **kwargs)))
