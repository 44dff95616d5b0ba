"""Save and load fitted linlap models (``linlap.save`` / ``linlap.load``).

A model file is a first line ``LINLAP-MODEL 2``, a JSON header line ::

    {"format": "linlap-model", "linlap_version": ..., "sklearn_version": ...,
     "bytes": N, "sha256": ..., "metadata": {...}}

and the joblib dump of the model: N bytes, to the end of the file, with their SHA-256.
:func:`load` checks the header — the tag and both versions — and the length and
checksum of the model bytes before it unpickles them: a file from another version is
refused without running its pickle, and a truncated or damaged file is refused whether
or not it was compressed. (Files of linlap's first format — a joblib dump of the
header dict with the model in it — still load; they have no checksum. A file that
starts neither with the first line nor with the bytes of a joblib dump, e.g. a text
file, is refused without being unpickled.) Like every pickle-based format, a model
file can run code when loaded: load only files you trust.
"""

import copy
import hashlib
import json
import os
import re
import warnings

import numpy as np

from ._atomic import atomic_write

__all__ = ["save", "load", "FORMAT_TAG"]

FORMAT_TAG = "linlap-model"
#: first line of a model file: the format's name, then its version
MAGIC_PREFIX = b"LINLAP-MODEL"
MAGIC = MAGIC_PREFIX + b" 2\n"
_HEADER_MAX = 4096  # bytes of the header line

#: How a file of the first format (``joblib.dump(header_dict, fh, compress=...)``) can
#: start: a binary pickle (protocol 2-5; joblib never writes the text protocols) or one
#: of the streams of joblib's compressors (zlib, the default, with each of its
#: compression-level flags; gzip, bz2, lzma, xz, lz4).
_FIRST_FORMAT_STARTS = (
    *(b"\x80" + bytes([protocol]) for protocol in range(2, 6)),
    *(b"\x78" + flag for flag in (b"\x01", b"\x5e", b"\x9c", b"\xda")),
    b"\x1f\x8b", b"BZh", b"\x5d\x00\x00", b"\xfd7zXZ\x00", b"\x04\x22\x4d\x18",
)


class _HashingWriter:
    """A write-only file that passes the bytes on to ``fh`` and hashes and counts them
    (joblib's pickler also asks for ``tell``)."""

    def __init__(self, fh):
        self.fh, self.sha256, self.size = fh, hashlib.sha256(), 0

    def write(self, data):
        self.sha256.update(data)
        self.size += len(data)
        return self.fh.write(data)

    def flush(self):
        self.fh.flush()

    def tell(self):
        return self.fh.tell()


def _header_line(linlap_version, sklearn_version, size, sha256, metadata):
    """The JSON header, the same length whatever the size and digest (it is written
    before the model with placeholders, then over them)."""
    return (json.dumps({"format": FORMAT_TAG, "linlap_version": linlap_version,
                        "sklearn_version": sklearn_version, "bytes": f"{size:020d}",
                        "sha256": sha256, "metadata": metadata}) + "\n").encode()


def _versions():
    import sklearn

    from . import __version__
    return __version__, sklearn.__version__


def _major_minor(version):
    m = re.match(r"(\d+)\.(\d+)", str(version))
    return (int(m.group(1)), int(m.group(2))) if m else None


def _strip_estimator(est):
    """Shallow copy of a fitted linlap estimator without its training-set state.

    The fitted graph (``graph_``, and a fitted ``graph`` parameter) is n × k and the
    solver state holds n-row arrays; neither is needed to predict (predictions use
    ``coef_`` and ``intercept_``). The graph parameter is replaced by an unfitted
    KNNGraph with the same parameters, so the file still records how it was built.
    ``transduction_`` (one label per training row) is kept. The refitted model of a
    CV estimator (``best_estimator_``) and the base model of ``EMRClassifier``
    (``estimator_``) are stripped the same way, and EMR's candidate graphs (``graphs_``)
    are left out, as are the solver objects of ``LapSVMPathClassifier.path_['paths']``
    (each holds a d × l reduction: 76 MB at d = 10⁵, l = 100; the rest of ``path_``
    — grid, errors, breakpoints — is kept).
    """
    from .graph import KNNGraph

    if not (hasattr(est, "graph_") or hasattr(est, "_solution")):
        return est
    est = copy.copy(est)
    if getattr(est, "graph_", None) is not None:
        est.graph_ = None
    for name in ("best_estimator_", "estimator_"):
        if getattr(est, name, None) is not None:
            setattr(est, name, _strip_estimator(getattr(est, name)))
    if getattr(est, "graphs_", None) is not None:
        est.graphs_ = None
    if isinstance(getattr(est, "path_", None), dict) and est.path_.get("paths") is not None:
        est.path_ = dict(est.path_, paths=None)
    if hasattr(est, "_solution"):
        est._solution = None
    est.__dict__.pop("_tinv_cache", None)
    graph = getattr(est, "graph", None)
    if isinstance(graph, KNNGraph) and hasattr(graph, "adjacency_"):
        est.graph = KNNGraph(**graph.get_params(deep=False))
    return est


def _strip(model):
    from sklearn.pipeline import Pipeline

    if isinstance(model, Pipeline):
        stripped = copy.copy(model)
        stripped.steps = [(name, _strip(step)) for name, step in model.steps]
        return stripped
    return _strip_estimator(model)


def save(model, path, *, keep_graph=False, compress=3, metadata=None):
    """Save a fitted model (a Pipeline or a bare estimator) to ``path``, atomically.

    The model is written to a temporary file in the destination directory, flushed
    to disk and renamed over ``path``: an interrupted save leaves any previous file
    at ``path`` untouched and no temporary file behind (a process killed outright
    leaves its temporary file, which a later save to that directory removes once it is
    an hour old).

    Parameters
    ----------
    model : object
        Usually ``Pipeline([vectorizer, LapRLSClassifier/LapSVMClassifier])``.
    path : str or path-like
    keep_graph : bool, default=False
        By default the fitted kNN graph (``graph_``, also that of a CV estimator's
        ``best_estimator_`` and EMR's ``estimator_``, and EMR's candidate ``graphs_``;
        large, and not needed to predict) and the solver's n-row state are left out of
        the file; the graph's parameters are kept, and so is ``transduction_``. The model object passed in
        is not modified. ``keep_graph=True`` saves everything.
    compress : int, default=3
        joblib compression level (0: none). With ``keep_graph=True`` on a large corpus,
        compressing the graph's arrays costs far more time than it saves space (zlib on
        mostly incompressible floats): pass ``compress=0``, or keep the graph apart with
        :meth:`KNNGraph.save` (``.npz``).
    metadata : dict or None, default=None
        A few JSON values kept in the file's header line (at most about 4 kB in all),
        returned by ``load(path, with_metadata=True)``. ``linlap fit`` records there
        how it read its input (``{"unlabeled_label": ...}``).

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If ``model`` is an estimator (or Pipeline) that is not fitted.
    """
    import joblib
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    if hasattr(model, "fit"):  # an unfitted model would fail only at predict, after loading
        try:
            check_is_fitted(model)
        except NotFittedError:
            raise NotFittedError(f"cannot save an unfitted {type(model).__name__}: fit it "
                                 f"first.") from None
    linlap_version, sklearn_version = _versions()
    metadata = {} if metadata is None else dict(metadata)
    header = _header_line(linlap_version, sklearn_version, 0, "0" * 64, metadata)
    if len(header) > _HEADER_MAX:  # load reads at most that much of the line
        raise ValueError(f"the metadata take {len(header)} bytes of the header line, "
                         f"more than its {_HEADER_MAX}")
    if not isinstance(keep_graph, (bool, np.bool_)):
        raise ValueError(f"keep_graph must be True or False, got {keep_graph!r}.")
    model = model if keep_graph else _strip(model)
    with atomic_write(path, prefix=".linlap-") as fh:
        fh.write(MAGIC)
        start = fh.tell()
        fh.write(header)
        body = _HashingWriter(fh)
        joblib.dump(model, body, compress=compress)
        fh.seek(start)  # the header again, now with the length and digest
        fh.write(_header_line(linlap_version, sklearn_version, body.size,
                              body.sha256.hexdigest(), metadata))


def load(path, *, check_versions=True, with_metadata=False):
    """Load a model written by :func:`save`.

    The header (format tag, versions) and the checksum of the model bytes are checked
    before the model is unpickled.

    Parameters
    ----------
    path : str or path-like
    check_versions : bool, default=True
    with_metadata : bool, default=False
        Return ``(model, metadata)``: the ``metadata`` dict given to :func:`save`
        (empty for files saved without it).

    Raises
    ------
    ValueError
        If the file is not a linlap model (it is refused before anything is unpickled
        unless it starts like a joblib dump, linlap's first format), is truncated or
        corrupt (its length or
        SHA-256 differs from the header's), was written by an incompatible version
        (another scikit-learn major.minor release, or another linlap major version;
        ``check_versions=False`` skips that check, at your own risk), or its model
        cannot be unpickled here (e.g. a class this installation lacks).
    OSError
        If the file cannot be read.
    """
    import joblib
    from sklearn.exceptions import InconsistentVersionWarning

    path = os.fspath(path)
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such model file")
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a directory, not a model file")
    with open(path, "rb") as fh:
        head = fh.read(len(MAGIC))
        if head != MAGIC:
            if head == MAGIC[:-1] + b"\r":  # "LINLAP-MODEL 2\r": CRLF line endings
                raise ValueError(f"{path}: the model file is corrupt: its line endings were "
                                 f"converted to CRLF (\\r\\n), as a copy in text mode does "
                                 f"(an FTP transfer in ASCII mode, git with core.autocrlf, "
                                 f"a Windows text editor); copy it again in binary mode (for "
                                 f"git, mark model files binary in .gitattributes), or refit "
                                 f"the model")
            if head.startswith(MAGIC[:-2]):  # "LINLAP-MODEL " and another version
                raise ValueError(f"{path}: a model file of another format "
                                 f"({head.decode(errors='replace').strip()!r}, this linlap "
                                 f"reads {MAGIC.decode().strip()!r}); use the linlap "
                                 f"version that wrote it, or refit the model")
            if not _starts_like_a_model_file(head):
                raise ValueError(f"{path}: not a linlap model file (it starts with neither "
                                 f"the line {MAGIC.decode().strip()!r} nor the bytes of a "
                                 f"joblib dump; save models with linlap.save or "
                                 f"`linlap fit`)")
            model, metadata = _load_first_format(path, check_versions), {}
            return (model, metadata) if with_metadata else model
        header = _read_header(path, fh)
        if check_versions:
            _check_versions(path, header)
        start = fh.tell()
        size = os.fstat(fh.fileno()).st_size - start
        digest = hashlib.sha256()
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
        if size != int(header["bytes"]) or digest.hexdigest() != header["sha256"]:
            what = "truncated" if size < int(header["bytes"]) else "corrupt"
            raise ValueError(f"{path}: the model file is {what} ({size} bytes of model data "
                             f"where its header has {int(header['bytes'])}"
                             + ("" if size != int(header["bytes"]) else
                                ", and their SHA-256 differs from the header's") + ")")
        fh.seek(start)
        with warnings.catch_warnings():
            if check_versions:  # same major.minor: the patch releases may differ
                warnings.simplefilter("ignore", InconsistentVersionWarning)
            try:
                model = joblib.load(fh)
            except MemoryError:
                raise
            except Exception as exc:  # intact bytes: a class or module missing here
                if isinstance(exc, OSError) and exc.errno is not None:
                    raise
                raise ValueError(f"{path}: the model could not be loaded "
                                 f"({_describe(exc)})") from None
    metadata = header.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    return (model, metadata) if with_metadata else model


def _starts_like_a_model_file(head):
    """Whether the first bytes of a file are a model file's first line or those of a
    joblib dump (the first format): the files :func:`load` unpickles."""
    return head == MAGIC or head.startswith(_FIRST_FORMAT_STARTS)


def _has_model_header(path):
    """Whether ``path`` starts with a model file's first line, ``LINLAP-MODEL`` (line ends
    converted or not): what a data file never starts with, unlike a compressed stream,
    which may also be a first-format model file."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(MAGIC_PREFIX)) == MAGIC_PREFIX
    except OSError:
        return False


def _is_model_file(path):
    """Whether ``path`` is a file :func:`load` would read as a model (by its start)."""
    try:
        with open(path, "rb") as fh:
            return _starts_like_a_model_file(fh.read(len(MAGIC)))
    except OSError:
        return False


def _describe(exc):
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _read_header(path, fh):
    line = fh.readline(_HEADER_MAX)
    try:
        header = json.loads(line)
    except ValueError:
        header = None
    if not (isinstance(header, dict) and header.get("format") == FORMAT_TAG
            and isinstance(header.get("bytes"), str) and header["bytes"].isdigit()
            and isinstance(header.get("sha256"), str)
            and _major_minor(header.get("sklearn_version")) is not None
            and _major_minor(header.get("linlap_version")) is not None):
        raise ValueError(f"{path}: the model file is corrupt (its header line is damaged)")
    return header


def _load_first_format(path, check_versions):
    """A file of the first format: a joblib dump of the header dict with the model."""
    import joblib

    try:
        payload = joblib.load(path)
    except MemoryError:
        raise
    except Exception as exc:  # truncated / foreign files fail in many ways
        if isinstance(exc, OSError) and exc.errno is not None:  # a real I/O error
            raise
        raise ValueError(f"{path}: not a linlap model file, or truncated/corrupt "
                         f"({_describe(exc)})") from None
    if not (isinstance(payload, dict) and payload.get("format") == FORMAT_TAG
            and "model" in payload):
        raise ValueError(f"{path}: not a linlap model file (no {FORMAT_TAG!r} tag; save "
                         f"models with linlap.save or `linlap fit`)")
    if check_versions:
        _check_versions(path, payload)
    return payload["model"]


def _check_versions(path, payload):
    """The saved scikit-learn major.minor and linlap major equal the installed ones."""
    linlap_version, sklearn_version = _versions()
    saved_sk = payload.get("sklearn_version")
    if _major_minor(saved_sk) is None or _major_minor(payload.get("linlap_version")) is None:
        raise ValueError(f"{path}: the model file is corrupt (it does not say which "
                         f"scikit-learn and linlap versions saved it)")
    if _major_minor(saved_sk) != _major_minor(sklearn_version):
        raise ValueError(
            f"{path}: the model was saved with scikit-learn {saved_sk}, but "
            f"scikit-learn {sklearn_version} is installed; install scikit-learn=="
            f"{saved_sk} to load it, or refit the model")
    saved_ll = payload.get("linlap_version")
    mm = _major_minor(saved_ll)
    if mm is None or mm[0] != _major_minor(linlap_version)[0]:
        raise ValueError(
            f"{path}: the model was saved with linlap {saved_ll}, incompatible with "
            f"the installed linlap {linlap_version} (different major version); refit "
            f"the model")
