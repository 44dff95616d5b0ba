"""Input readers of the ``linlap`` command: JSON-lines, CSV/TSV, svmlight/libsvm and
``load_files``-style directories.

Every reader streams: it yields :class:`Batch` objects of at most ``chunk_size``
documents, so ``linlap predict`` runs in bounded memory over arbitrarily large files.
Every problem with the input (missing file or column, bad line, text that is not
UTF-8, empty file) raises :class:`ValueError` with a message naming the file and the
line or row, which the command prints as one ``linlap: error: ...`` line.

Labels are returned as strings (``None`` for an unlabeled row), whatever the format,
so that a model fit on one format evaluates on another.
"""

import csv
import json
import os
import sys
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Batch", "FORMATS", "detect_format", "iter_batches", "read_all",
           "SVMLIGHT_UNLABELED"]

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


@dataclass
class Batch:
    """A chunk of input rows.

    data : list of str (text formats) or scipy.sparse.csr_matrix (svmlight)
    labels : list of (str or None); None = unlabeled (or no label column)
    ids : list of str; file names for ``dir`` input, else the 1-based line/row number
    """
    data: object
    labels: list
    ids: list = field(default_factory=list)

    def __len__(self):
        return len(self.labels)


def detect_format(path, fmt="auto"):
    """Return the concrete format of ``path`` (``fmt`` unless it is 'auto')."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file or directory")
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
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
    """Yield (line_number, str) from a file, refusing non-UTF-8 bytes with the line."""
    with open(path, "rb") as fh:
        first = True
        for number, raw in enumerate(fh, start=1):
            if first and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            first = False
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{path}, line {number}: not valid UTF-8 text (byte "
                                 f"{raw[exc.start]:#04x} at column {exc.start + 1}); "
                                 f"re-encode the file as UTF-8") from None


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
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}, line {number}: not valid JSON ({exc.msg})") from None
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
        seen = True
        text, label, has_label = _jsonl_record(path, number, line, text_column,
                                               label_column, unlabeled)
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
    line_no = [0]

    def text_lines():
        for number, line in lines:
            line_no[0] = number
            yield line

    # strict: an unclosed quote is an error, not a field that swallows the rest of the file
    reader = csv.reader(text_lines(), delimiter=delimiter, strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise ValueError(f"{path}: the file is empty (expected a header row with a "
                         f"{text_column!r} column)") from None
    except csv.Error as exc:
        raise ValueError(f"{path}, line {line_no[0]}: bad CSV ({exc})") from None
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
            raise ValueError(f"{path}, line {line_no[0]}: bad CSV ({exc})") from None
        row_no += 1
        if not row or (len(row) == 1 and not row[0].strip() and len(header) > 1):
            continue
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


def _iter_svmlight(path, unlabeled, chunk_size, n_features):
    import scipy.sparse as sp

    if unlabeled is None:
        unlabeled = SVMLIGHT_UNLABELED
    else:
        given, unlabeled = unlabeled, _svmlight_label(unlabeled)
        if unlabeled is None:  # a value no svmlight label can equal
            raise ValueError(f"unlabeled label {given!r}: svmlight labels are numbers")
    labels, ids, indptr, indices, values = [], [], [0], [], []
    max_index = -1
    seen = False

    def flush():
        width = n_features if n_features is not None else max_index + 1
        X = sp.csr_matrix((np.asarray(values, dtype=np.float64),
                           np.asarray(indices, dtype=np.int64),
                           np.asarray(indptr, dtype=np.int64)), shape=(len(labels), width))
        X.sum_duplicates()
        return Batch(X, labels, ids)

    for number, line in _decoded_lines(path):
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
                continue  # a feature the model never saw: ignored, like an unknown word
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


def _iter_dir(path, chunk_size, need_labels, unlabeled_dir="unlabeled"):
    entries = sorted(e for e in os.listdir(path) if os.path.isdir(os.path.join(path, e))
                     and not e.startswith("."))
    if not entries:
        raise ValueError(f"{path}: no sub-folders; expected one folder of text files per "
                         f"class (and optionally {unlabeled_dir}/)")
    texts, labels, ids = [], [], []
    total = 0
    for entry in entries:
        folder = os.path.join(path, entry)
        label = None if entry == unlabeled_dir else entry
        for root, dirs, files in os.walk(folder):
            dirs.sort()
            for name in sorted(files):
                if name.startswith("."):
                    continue
                file = os.path.join(root, name)
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
        raise ValueError(f"{path}: the class folders hold no files")
    if texts:
        yield Batch(texts, labels, ids)


def iter_batches(path, fmt="auto", *, text_column="text", label_column="label",
                 unlabeled_label=None, chunk_size=10_000, need_labels=False, n_features=None):
    """Yield :class:`Batch` objects of at most ``chunk_size`` rows from ``path``.

    Parameters
    ----------
    fmt : {'auto', 'jsonl', 'csv', 'svmlight', 'dir'}
        'auto' guesses from the suffix (.jsonl/.ndjson/.json, .csv/.tsv,
        .svm/.svmlight/.libsvm) or a directory.
    text_column, label_column : str
        Field/column names (JSON-lines, CSV).
    unlabeled_label : str or None
        An extra label value meaning "unlabeled". Text formats: an empty or missing
        label is always unlabeled. svmlight: default ``'0'``.
    need_labels : bool
        Refuse a CSV/JSON-lines file without the label column.
    n_features : int or None
        svmlight: width of the matrices (features beyond it are ignored). None reads
        the whole file as one batch and uses the largest index + 1.
    """
    path = os.fspath(path)
    fmt = detect_format(path, fmt)
    if chunk_size < 1:
        raise ValueError("chunk size must be >= 1")
    if unlabeled_label is not None:
        unlabeled_label = str(unlabeled_label).strip()
    if fmt == "jsonl":
        return _iter_jsonl(path, text_column, label_column, unlabeled_label, chunk_size,
                           need_labels)
    if fmt == "csv":
        return _iter_csv(path, text_column, label_column, unlabeled_label, chunk_size,
                         need_labels)
    if fmt == "svmlight":
        return _iter_svmlight(path, unlabeled_label, chunk_size, n_features)
    if unlabeled_label is not None:
        raise ValueError(f"{path}: a directory's unlabeled documents are the ones in its "
                         f"'unlabeled/' folder; an unlabeled label applies to files only")
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
