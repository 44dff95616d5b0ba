"""Save and load fitted linlap models (``linlap.save`` / ``linlap.load``).

A model file is a joblib dump of the dict ::

    {"format": "linlap-model", "linlap_version": ..., "sklearn_version": ..., "model": ...}

:func:`load` checks the tag and both versions before handing the model back. Like every
pickle-based format, a model file can run code when loaded: load only files you trust.
"""

import copy
import errno
import os

from ._atomic import atomic_write

__all__ = ["save", "load", "FORMAT_TAG"]

FORMAT_TAG = "linlap-model"


def _versions():
    import sklearn

    from . import __version__
    return __version__, sklearn.__version__


def _major_minor(version):
    parts = str(version).split(".")
    try:
        return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)
    except (IndexError, ValueError):
        return None


def _strip_estimator(est):
    """Shallow copy of a fitted linlap estimator without its training-set state.

    The fitted graph (``graph_``, and a fitted ``graph`` parameter) is n × k and the
    solver state holds n-row arrays; neither is needed to predict (predictions use
    ``coef_`` and ``intercept_``). The graph parameter is replaced by an unfitted
    KNNGraph with the same parameters, so the file still records how it was built.
    ``transduction_`` (one label per training row) is kept.
    """
    from .graph import KNNGraph

    if not (hasattr(est, "graph_") or hasattr(est, "_solution")):
        return est
    est = copy.copy(est)
    if getattr(est, "graph_", None) is not None:
        est.graph_ = None
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


def save(model, path, *, keep_graph=False, compress=3):
    """Save a fitted model (a Pipeline or a bare estimator) to ``path``, atomically.

    The model is written to a temporary file in the destination directory, flushed
    to disk and renamed over ``path``: an interrupted save leaves any previous file
    at ``path`` untouched and no temporary file behind (a process killed outright
    leaves its temporary file, which the next save to that directory removes).

    Parameters
    ----------
    model : object
        Usually ``Pipeline([vectorizer, LapRLSClassifier/LapSVMClassifier])``.
    path : str or path-like
    keep_graph : bool, default=False
        By default the fitted kNN graph (``graph_``; large, and not needed to
        predict) and the solver's n-row state are left out of the file; the graph's
        parameters are kept, and so is ``transduction_``. The model object passed in
        is not modified. ``keep_graph=True`` saves everything.
    compress : int, default=3
        joblib compression level.
    """
    import joblib

    linlap_version, sklearn_version = _versions()
    payload = {
        "format": FORMAT_TAG,
        "linlap_version": linlap_version,
        "sklearn_version": sklearn_version,
        "model": model if keep_graph else _strip(model),
    }
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, "cannot save the model: no such directory",
                                directory)
    with atomic_write(path, prefix=".linlap-") as fh:
        joblib.dump(payload, fh, compress=compress)


def load(path, *, check_versions=True):
    """Load a model written by :func:`save`.

    Raises
    ------
    ValueError
        If the file is not a linlap model, is truncated or corrupt, or was written
        by an incompatible version: another scikit-learn major.minor release, or
        another linlap major version (``check_versions=False`` skips the version
        check, at your own risk).
    OSError
        If the file cannot be read.
    """
    import joblib

    path = os.fspath(path)
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such model file")
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a directory, not a model file")
    try:
        payload = joblib.load(path)
    except MemoryError:
        raise
    except Exception as exc:  # truncated / foreign files fail in many ways
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise ValueError(f"{path}: not a linlap model file, or truncated/corrupt "
                         f"({detail})") from None
    if not (isinstance(payload, dict) and payload.get("format") == FORMAT_TAG
            and "model" in payload):
        raise ValueError(f"{path}: not a linlap model file (no {FORMAT_TAG!r} tag; save "
                         f"models with linlap.save or `linlap fit`)")
    if check_versions:
        linlap_version, sklearn_version = _versions()
        saved_sk = payload.get("sklearn_version")
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
    return payload["model"]
