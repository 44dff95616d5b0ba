"""Out-of-core TF-IDF on a Dask cluster: documents read and hashed by the workers.

A corpus too large for one machine's memory is cut into *chunks* described by cheap
metadata made on the client — a list of file names (a directory of text files, one
document per file) or a byte range of whole lines (a JSON-lines file) — and each
chunk's task on a worker reads its own documents, hashes them and keeps only the
sparse counts. No process ever holds all the documents; the client holds the chunk
descriptions and, in the end, one label per document.

:func:`hashing_tfidf_blocks` turns the chunks into the TF-IDF rows

    x_i = t_i / ‖t_i‖₂,   t_ij = tf(c_ij) · idf_j,   idf_j = ln((1 + n) / (1 + df_j)) + 1,

where ``c_ij`` counts the tokens of document i hashed to column j
(``HashingVectorizer(alternate_sign=False, norm=None)``), ``tf(c) = 1 + ln c`` with
``sublinear_tf`` (else ``c``), ``df_j`` is the number of documents with ``c_ij > 0``
and n the number of documents — exactly what
``TfidfTransformer(smooth_idf=True, sublinear_tf=...)`` computes on the whole
matrix in memory. The document frequencies are summed over the chunks by a tree
reduction on the workers; the idf vector is then applied to every block on the
worker that holds it. Every block is the result of a task (nothing is scattered
from memory), so Dask recomputes the blocks of a lost worker from the files.

Labels follow the conventions of ``linlap fit`` (:mod:`linlap.io`): they are
strings, and an unlabeled document gets the empty string ``""`` in ``y`` — pass
``unlabeled=""`` to linlap's estimators.
"""

import codecs
import os
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._validation import check_int
from ..io import _decode_line, _jsonl_record

__all__ = ["TextChunk", "text_dir_chunks", "jsonl_chunks", "text_chunks", "read_chunk",
           "hashing_tfidf_blocks"]

#: Suffixes read as JSON-lines by :func:`text_chunks` (as in ``linlap fit``).
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")


@dataclass(frozen=True)
class TextChunk:
    """The description of one chunk of documents (made on the client, read by a worker).

    Attributes
    ----------
    kind : {"files", "jsonl"}
        A list of text files (one document each) or a range of lines of a JSON-lines file.
    path : str
        Absolute path of the directory (``files``) or of the JSON-lines file.
    n_docs : int
        Number of documents (rows) of the chunk.
    files : tuple of str
        ``files``: absolute paths of the documents, in row order.
    labels : tuple of (str or None)
        ``files``: the label of each file (its class folder's name; None = unlabeled).
    start, stop : int
        ``jsonl``: byte offsets of the chunk's lines, ``[start, stop)``, whole lines.
    first_line : int
        ``jsonl``: the 1-based number of the line at ``start`` (for error messages).
    encoding : str
        ``files``: text encoding of the files (JSON-lines files are UTF-8).
    text_column, label_column : str
        ``jsonl``: the fields holding the text and the label.
    unlabeled_label : str or None
        ``jsonl``: a label value that also means "unlabeled" (besides empty, null or
        missing).
    """

    kind: str
    path: str
    n_docs: int
    files: tuple = ()
    labels: tuple = ()
    start: int = 0
    stop: int = 0
    first_line: int = 1
    encoding: str = "utf-8"
    text_column: str = "text"
    label_column: str = "label"
    unlabeled_label: object = field(default=None)


def _existing(path, want_dir):
    path = os.path.abspath(os.fspath(path))
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file or directory")
    if want_dir is not None and os.path.isdir(path) != want_dir:
        raise ValueError(f"{path}: {'not a directory' if want_dir else 'is a directory'}")
    return path


# -- planning on the client ----------------------------------------------------------------
def text_dir_chunks(path, chunk_size=1000, *, unlabeled_dir="unlabeled", encoding="utf-8"):
    """Describe a directory of text files (one document per file) as chunks of files.

    Only file names are listed here; no file is opened. Layout: each sub-folder is a
    class whose name is the label of every file under it (sub-sub-folders included),
    as in 20 Newsgroups or scikit-learn's ``load_files``; the files of the folder
    ``unlabeled_dir`` and those directly in ``path`` are unlabeled. Names starting
    with ``.`` are skipped. Rows are ordered by folder, then path, both sorted.

    Parameters
    ----------
    path : str or path-like
        The directory. The workers must see it at the same path (e.g. a shared
        filesystem).
    chunk_size : int, default=1000
        Documents per chunk (the last chunk may be smaller).
    unlabeled_dir : str, default="unlabeled"
        Name of the folder of unlabeled documents.
    encoding : str, default="utf-8"
        Encoding of the files, checked when a worker reads them (e.g. ``"latin-1"``
        for the 20 Newsgroups posts).

    Returns
    -------
    list of TextChunk
        With ``kind == "files"``.

    Raises
    ------
    FileNotFoundError
        If `path` does not exist.
    ValueError
        If `path` is not a directory or holds no file.
    """
    chunk_size = check_int("chunk_size", chunk_size)
    path = _existing(path, want_dir=True)
    try:
        codecs.lookup(encoding)  # an unknown encoding fails here, not on the workers
    except LookupError:
        raise ValueError(f"unknown encoding {encoding!r}") from None
    with os.scandir(path) as it:
        entries = sorted((e for e in it if not e.name.startswith(".")), key=lambda e: e.name)
    files, labels = [], []
    for e in entries:  # files at the top: unlabeled
        if e.is_file():
            files.append(e.path)
            labels.append(None)
    for e in entries:
        if not e.is_dir():
            continue
        label = None if e.name == unlabeled_dir else e.name
        for root, dirs, names in os.walk(e.path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                if not name.startswith("."):
                    files.append(os.path.join(root, name))
                    labels.append(label)
    if not files:
        raise ValueError(f"{path}: the directory holds no files; expected one text file per "
                         f"document, in one sub-folder per class (and {unlabeled_dir}/)")
    return [TextChunk("files", path, len(files[a:a + chunk_size]),
                      files=tuple(files[a:a + chunk_size]),
                      labels=tuple(labels[a:a + chunk_size]), encoding=encoding)
            for a in range(0, len(files), chunk_size)]


def _blank(raw):
    return not raw.strip()


def jsonl_chunks(path, chunk_size=1000, *, text_column="text", label_column="label",
                 unlabeled_label=None, progress=None):
    """Describe a JSON-lines file as chunks of whole lines (byte ranges).

    One streaming pass over the file on the client finds the byte offset of every
    ``chunk_size``-th non-blank line; nothing is parsed or kept. Each line is one
    JSON object with the document's text in ``text_column`` and, optionally, its label
    in ``label_column`` (empty, null or missing: unlabeled; a number or true/false is
    read as its string), as in ``linlap fit``. Lines are parsed, and their errors
    reported, by the workers (:func:`read_chunk`).

    Parameters
    ----------
    path : str or path-like
        The JSON-lines file (UTF-8). The workers must see it at the same path.
    chunk_size : int, default=1000
        Documents (non-blank lines) per chunk.
    text_column, label_column : str
        Field names of the text and of the label.
    unlabeled_label : str, optional
        A label value that also means "unlabeled" (e.g. ``"?"``).
    progress : callable, optional
        Called as ``progress(n_lines)`` after each chunk is found.

    Returns
    -------
    list of TextChunk
        With ``kind == "jsonl"``.

    Raises
    ------
    FileNotFoundError
        If `path` does not exist.
    ValueError
        If `path` is a directory or holds no non-blank line.
    """
    chunk_size = check_int("chunk_size", chunk_size)
    path = _existing(path, want_dir=False)
    if unlabeled_label is not None:
        unlabeled_label = str(unlabeled_label).strip()
    meta = dict(text_column=text_column, label_column=label_column,
                unlabeled_label=unlabeled_label)
    chunks = []
    start = first = None
    n = offset = 0
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                offset, raw = 3, raw[3:]
            if not _blank(raw):
                if n == 0:
                    start, first = offset, number
                n += 1
            offset += len(raw)
            if n == chunk_size:
                chunks.append(TextChunk("jsonl", path, n, start=start, stop=offset,
                                        first_line=first, **meta))
                n = 0
                if progress is not None:
                    progress(number)
    if n:
        chunks.append(TextChunk("jsonl", path, n, start=start, stop=offset, first_line=first,
                                **meta))
    if not chunks:
        raise ValueError(f"{path}: the file is empty (no JSON lines)")
    return chunks


def text_chunks(path, chunk_size=1000, **kwargs):
    """:func:`text_dir_chunks` for a directory, :func:`jsonl_chunks` for a ``.jsonl``,
    ``.ndjson`` or ``.json`` file (keywords passed on)."""
    spath = os.fspath(path)
    if os.path.isdir(spath):
        return text_dir_chunks(spath, chunk_size, **kwargs)
    if not os.path.exists(spath):
        raise FileNotFoundError(f"{os.path.abspath(spath)}: no such file or directory")
    if not spath.lower().endswith(JSONL_SUFFIXES):
        raise ValueError(f"{spath}: expected a directory of text files or a JSON-lines file "
                         f"({', '.join(JSONL_SUFFIXES)})")
    return jsonl_chunks(spath, chunk_size, **kwargs)


# -- reading on the workers ----------------------------------------------------------------
def _read_file(file, encoding):
    with open(file, "rb") as fh:
        raw = fh.read()
    enc = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
    try:
        return raw.decode(enc)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{file}: not valid {encoding} text (byte {raw[exc.start]:#04x} at "
                         f"offset {exc.start}); re-encode the file or give its encoding") \
            from None


def _read_jsonl_range(chunk):
    texts, labels = [], []
    with open(chunk.path, "rb") as fh:
        fh.seek(chunk.start)
        number, offset = chunk.first_line, chunk.start
        while offset < chunk.stop:
            raw = fh.readline()
            if not raw:
                break
            offset += len(raw)
            if not _blank(raw):
                text, label, _ = _jsonl_record(chunk.path, number,
                                               _decode_line(chunk.path, number, raw),
                                               chunk.text_column, chunk.label_column,
                                               chunk.unlabeled_label)
                texts.append(text)
                labels.append(label)
            number += 1
    if len(texts) != chunk.n_docs or offset != chunk.stop:
        raise ValueError(f"{chunk.path}: lines {chunk.first_line}-{number - 1} hold "
                         f"{len(texts)} documents, {chunk.n_docs} when the chunks were made: "
                         f"the file changed since")
    return texts, labels


def read_chunk(chunk):
    """Read the documents of one chunk (what a worker's task does).

    Opens only the chunk's own files (``files``) or reads only its byte range of the
    JSON-lines file (``jsonl``).

    Parameters
    ----------
    chunk : TextChunk

    Returns
    -------
    texts : list of str
    labels : list of (str or None)
        None for an unlabeled document.

    Raises
    ------
    ValueError
        For text that is not in the chunk's encoding (naming the file), or a JSON line
        that is not an object with a string text field and a scalar label (naming the
        file and the line).
    """
    if chunk.kind == "files":
        texts = [_read_file(f, chunk.encoding) for f in chunk.files]
        return texts, list(chunk.labels)
    if chunk.kind == "jsonl":
        return _read_jsonl_range(chunk)
    raise ValueError(f"unknown chunk kind {chunk.kind!r} (expected 'files' or 'jsonl')")


def _hash_chunk(chunk, hasher):
    """Counts (CSR, float64) and labels of one chunk."""
    texts, labels = read_chunk(chunk)
    counts = hasher.transform(texts).tocsr()
    counts.sum_duplicates()
    return counts, labels


def _labels_only(chunk):
    return read_chunk(chunk)[1] if chunk.kind == "jsonl" else list(chunk.labels)


def _doc_freq(counts):
    return np.bincount(counts.indices, minlength=counts.shape[1]).astype(np.int64)


def _total(*parts):
    return np.sum(parts, axis=0) if len(parts) > 1 else parts[0]


def _idf(df, n_docs, smooth_idf):
    """The idf vector of ``TfidfTransformer`` (columns no document has get 1)."""
    df = df.astype(np.float64) + float(smooth_idf)
    n = float(n_docs) + float(smooth_idf)
    idf = np.ones_like(df)
    seen = df > 0
    idf[seen] = np.log(n / df[seen]) + 1.0
    return idf


def _tfidf_block(counts, idf, sublinear_tf):
    """``normalize(tf(counts) · diag(idf))`` for one block (a new CSR matrix)."""
    from sklearn.preprocessing import normalize

    X = sp.csr_matrix(counts, dtype=np.float64, copy=True)
    if sublinear_tf:
        np.log(X.data, X.data)
        X.data += 1.0
    X.data *= idf[X.indices]
    return normalize(X, norm="l2", copy=False)


def _concat(*parts):
    return [lab for part in parts for lab in part]


def _get_client(client):
    if client is not None:
        return client
    try:
        from distributed import get_client
        return get_client()
    except (ImportError, ValueError):
        return None  # no Dask cluster: dask's local scheduler


def hashing_tfidf_blocks(chunks, *, n_features=2**20, sublinear_tf=True, smooth_idf=True,
                         stop_words="english", ngram_range=(1, 1), split_every=8,
                         persist=True, return_idf=False, client=None, verbose=False,
                         **hashing_params):
    """TF-IDF rows of the documents of ``chunks``, as a dask array of CSR row blocks.

    Builds the task graph (one chunk per block)::

        read + hash chunk b  →  counts_b  →  df_b ─┐
                                                   ├ tree sum → df → idf
        counts_b, idf  →  X_b = normalize(tf(counts_b) · diag(idf))

    Hashing: ``HashingVectorizer(n_features, alternate_sign=False, norm=None,
    stop_words, ngram_range, **hashing_params)`` on the worker. The document
    frequencies are summed ``split_every`` at a time on the workers. The idf is that of
    ``TfidfTransformer(smooth_idf=smooth_idf)``: ``ln((1 + n) / (1 + df_j)) + 1``
    (without smoothing ``ln(n / df_j) + 1``), n the total number of documents; with
    ``sublinear_tf`` the counts c become ``1 + ln c`` first; each row is then scaled to
    unit L2 norm (an empty document stays a zero row). The result equals
    ``TfidfTransformer(...).fit_transform(HashingVectorizer(...).transform(docs))`` on
    all documents at once, up to round-off.

    Parameters
    ----------
    chunks : list of TextChunk
        From :func:`text_chunks`, :func:`text_dir_chunks` or :func:`jsonl_chunks`.
    n_features : int, default=2**20
        Columns of X (hash buckets).
    sublinear_tf : bool, default=True
        Replace a count c by ``1 + ln c`` (linlap's default vectoriser does).
    smooth_idf : bool, default=True
    stop_words : {"english"} or list or None, default="english"
    ngram_range : tuple, default=(1, 1)
    split_every : int, default=8
        Fan-in of the tree reduction of the document frequencies.
    persist : bool, default=True
        Compute the blocks now and keep them in the workers' memory (``X`` is then a
        persisted dask array whose blocks Dask still knows how to recompute), reading
        every document once for both X and y. With False, X is returned lazy (the
        documents are read when it is computed) and the labels of JSON-lines chunks
        are read by a separate pass.
    return_idf : bool, default=False
        Also return the idf vector (to transform new documents the same way).
    client : distributed.Client, optional
        Default: the current client; without one, dask's local scheduler.
    verbose : bool, default=False
        Report the documents read as the chunks finish (on stderr).
    **hashing_params
        Other parameters of :class:`~sklearn.feature_extraction.text.HashingVectorizer`
        (``lowercase``, ``token_pattern``, ``binary``, ...).

    Returns
    -------
    X : dask.array.Array of shape (n, n_features), float64
        Chunks: one scipy CSR matrix per TextChunk (row chunk sizes known), one chunk
        along the columns; rows in chunk order.
    y : ndarray of shape (n,), dtype object
        The labels as strings; ``""`` marks an unlabeled document (pass
        ``unlabeled=""`` to linlap's estimators).
    idf : ndarray of shape (n_features,)
        Only with ``return_idf``.

    Raises
    ------
    ValueError
        For an empty chunk list or a fixed HashingVectorizer parameter in
        ``hashing_params``; the workers' reading errors (see :func:`read_chunk`) are
        raised here as they are.
    """
    import dask
    import dask.array as da
    from sklearn.feature_extraction.text import HashingVectorizer

    chunks = list(chunks)
    if not chunks or not all(isinstance(c, TextChunk) for c in chunks):
        raise ValueError("chunks must be a non-empty list of TextChunk (see text_chunks).")
    fixed = {"alternate_sign", "norm", "n_features", "dtype", "input"} & set(hashing_params)
    if fixed:
        raise ValueError(f"HashingVectorizer parameters {sorted(fixed)} are fixed here "
                         f"(alternate_sign=False, norm=None, float64 counts; n_features "
                         f"is a keyword of its own).")
    split_every = check_int("split_every", split_every, 2)
    n_features = check_int("n_features", n_features)
    hasher = HashingVectorizer(n_features=n_features, alternate_sign=False, norm=None,
                               stop_words=stop_words, ngram_range=ngram_range,
                               **hashing_params)
    hasher.transform([""])  # bad parameters fail here, on the client
    n_docs = sum(c.n_docs for c in chunks)

    counts, label_parts, dfs = [], [], []
    for c in chunks:
        cnt, lab = dask.delayed(_hash_chunk, nout=2, pure=False)(c, hasher)
        counts.append(cnt)
        label_parts.append(lab)
        dfs.append(dask.delayed(_doc_freq, pure=True)(cnt))
    while len(dfs) > 1:
        dfs = [dask.delayed(_total, pure=True)(*dfs[i:i + split_every])
               for i in range(0, len(dfs), split_every)]
    idf = dask.delayed(_idf, pure=True)(dfs[0], n_docs, bool(smooth_idf))
    meta = sp.csr_matrix((0, n_features), dtype=np.float64)
    X = da.concatenate([
        da.from_delayed(dask.delayed(_tfidf_block, pure=True)(cnt, idf, bool(sublinear_tf)),
                        shape=(c.n_docs, n_features), dtype=np.float64, meta=meta)
        for cnt, c in zip(counts, chunks)], axis=0)

    client = _get_client(client)
    if not persist:
        label_parts = [dask.delayed(_labels_only, pure=False)(c) for c in chunks]
    labels = dask.delayed(_concat, pure=True)(*label_parts)
    if client is None:
        if persist:
            X, idf_value, labels = dask.persist(X, idf, labels)
            idf_value, labels = dask.compute(idf_value, labels)
        else:
            idf_value, labels = (dask.compute(idf, labels) if return_idf
                                 else (None, labels.compute()))
    else:  # as current: wait / as_completed use this client, not the default one
        with client.as_current():
            wanted = [labels] + ([idf] if return_idf else [])
            if persist:
                # X, the labels and the idf in one graph: submitted apart, the idf task
                # (a dependency of X's blocks) would reach the scheduler twice under one
                # key with two different task specs (X's graph is optimised)
                from distributed import futures_of

                X, *wanted = client.persist([X] + wanted)
                futures = [futures_of(w)[0] for w in wanted]
            else:
                futures = client.compute(wanted)
            if verbose:
                _report(client, label_parts, chunks)
            results = client.gather(futures)
            labels, idf_value = results[0], (results[1] if return_idf else None)
            if persist:
                from distributed import wait
                wait(X)
    y = np.array(["" if lab is None else lab for lab in labels], dtype=object)
    if y.shape[0] != X.shape[0]:  # pragma: no cover - read_chunk checks each chunk
        raise RuntimeError(f"{y.shape[0]} labels for {X.shape[0]} rows")
    return (X, y, idf_value) if return_idf else (X, y)


def _report(client, label_parts, chunks):
    """Report the documents read as the chunks' tasks finish (their label outputs)."""
    from distributed import as_completed

    from .._progress import progress

    parts = client.compute(label_parts)
    size = {p.key: c.n_docs for p, c in zip(parts, chunks)}
    bar = progress(True, total=sum(size.values()), desc="hashing", unit="documents")
    for p in as_completed(parts):
        bar.update(size[p.key])
    bar.close()
    for p in parts:
        p.release()
