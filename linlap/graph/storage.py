"""Saving and loading a fitted :class:`~linlap.graph.KNNGraph` (NumPy ``.npz``, no pickle)."""

import json
import os
import zipfile
from zlib import error as zlib_error

import numpy as np
import scipy.sparse as sp

from .._atomic import atomic_write
from .._validation import is_int
from ..persistence import _has_model_header
from .weights import MIN_WEIGHT

__all__ = ["save_graph", "load_graph"]

FORMAT_TAG = "linlap.KNNGraph"
FORMAT_VERSION = 1
_META = ("heat_sigma_", "algorithm_", "space_", "recall_", "n_repaired_", "n_samples_fit_",
         "n_features_in_", "build_time_")
_ARRAYS = ("params", "meta", "neighbors", "distances", "adj_data", "adj_indices",
           "adj_indptr", "degree")


def _plain(value):
    """A parameter as JSON can hold it (NumPy scalars as Python ones, also in dicts)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value.item() if isinstance(value, np.generic) else value


def save_graph(graph, path):
    """Write a fitted graph to ``path`` atomically (temporary file, then rename)."""
    params = graph.get_params(deep=False)
    if not (params["random_state"] is None or is_int(params["random_state"])):
        params["random_state"] = None
    params = {key: _plain(v) for key, v in params.items()}
    meta = {name: getattr(graph, name) for name in _META}
    meta["n_samples_fit_"] = int(meta["n_samples_fit_"])
    meta["n_features_in_"] = int(meta["n_features_in_"])
    meta["reordered"] = graph.node_order_ is not None
    meta["rows_fingerprint_"] = getattr(graph, "rows_fingerprint_", None)
    try:
        params_json = json.dumps(params)
        meta_json = json.dumps(meta)
    except TypeError as exc:
        raise ValueError(f"cannot save: a parameter is not JSON-serialisable ({exc}).") from exc
    W = graph.adjacency_
    arrays = {
        "format": np.array(FORMAT_TAG),
        "version": np.array(FORMAT_VERSION, dtype=np.int64),
        "params": np.array(params_json),
        "meta": np.array(meta_json),
        "neighbors": graph.neighbors_,
        "distances": graph.distances_,
        "adj_data": W.data,
        "adj_indices": W.indices,
        "adj_indptr": W.indptr,
        "degree": graph.degree_,
    }
    if meta["reordered"]:
        arrays["node_order"] = graph.node_order_
    with atomic_write(path, prefix=".knngraph-") as fh:
        np.savez(fh, **arrays)


def load_graph(cls, path):
    """Read a file written by :func:`save_graph` into a new fitted ``cls`` (KNNGraph).

    Raises ValueError if the file is not a linlap KNNGraph file, is of an unsupported
    version, or is corrupt, truncated or inconsistent.
    """
    path = os.fspath(path)
    bad = f"{path!r} is not a valid linlap KNNGraph file"
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise ValueError(f"{bad}: {exc}") from exc
    # np.load would take another file for a .npy array or a pickle, and its message for
    # the latter advises unpickling it
    if head[:2] != b"PK":
        what = ("a linlap model file: read it with linlap.load" if _has_model_header(path)
                else "not an .npz archive (KNNGraph.save writes one)")
        raise ValueError(f"{bad}: {what}")
    try:
        npz = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{bad}: {exc}") from exc
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise ValueError(f"{bad}: not an .npz archive")
    try:
        with npz:
            files = set(npz.files)
            if "format" not in files or str(npz["format"][()]) != FORMAT_TAG:
                raise ValueError(f"missing or foreign format tag (expected {FORMAT_TAG!r})")
            version = int(npz["version"][()])
            if version != FORMAT_VERSION:
                raise ValueError(f"unsupported format version {version} "
                                 f"(this linlap reads version {FORMAT_VERSION})")
            data = {key: npz[key] for key in _ARRAYS}
            if "node_order" in files:
                data["node_order"] = npz["node_order"]
    except (ValueError, TypeError, KeyError, OSError, EOFError, zipfile.BadZipFile,
            zlib_error) as exc:
        raise ValueError(f"{bad}: {exc}") from exc
    try:
        params = json.loads(str(data["params"][()]))
        meta = json.loads(str(data["meta"][()]))
        graph = cls(**params)
        graph._check_params()
        _check_loaded_arrays(data, params, meta)
    except (ValueError, TypeError, KeyError, json.JSONDecodeError) as exc:
        raise ValueError(f"{bad}: {exc}") from exc
    n = int(meta["n_samples_fit_"])
    graph.neighbors_ = data["neighbors"].astype(np.int64, copy=False)
    graph.distances_ = data["distances"].astype(np.float64, copy=False)
    graph.adjacency_ = sp.csr_matrix(
        (data["adj_data"], data["adj_indices"], data["adj_indptr"]), shape=(n, n))
    graph.degree_ = data["degree"].astype(np.float64, copy=False)
    for key in _META:
        setattr(graph, key, meta[key])
    graph.rows_fingerprint_ = meta.get("rows_fingerprint_")  # files of before: none
    graph.node_order_ = (data["node_order"].astype(np.int64, copy=False)
                         if meta["reordered"] else None)
    graph.n_empty_ = int(np.count_nonzero(graph.neighbors_[:, 0] == -1)) if n else 0
    graph._set_laplacian()
    return graph


def _check_loaded_arrays(data, params, meta):
    missing = [key for key in _META + ("reordered",) if key not in meta]
    if missing:
        raise ValueError(f"metadata lacks {missing}")
    nb, dist = data["neighbors"], data["distances"]
    n = int(meta["n_samples_fit_"])
    k = int(params["n_neighbors"])
    if nb.dtype.kind not in "iu" or nb.shape != (n, k):
        raise ValueError(f"neighbors array has shape {nb.shape} / dtype {nb.dtype}, "
                         f"expected ({n}, {k}) integers")
    if dist.dtype.kind != "f" or dist.shape != (n, k):
        raise ValueError(f"distances array has shape {dist.shape}, expected ({n}, {k})")
    none = nb == -1  # the rows of empty documents have no neighbour
    if np.any(none.any(axis=1) != none.all(axis=1)):
        raise ValueError("a row mixes neighbours and -1 (no neighbour)")
    if nb.size and (nb.min() < -1 or nb.max() >= n):
        raise ValueError("neighbor indices out of range")
    if not np.all(np.isfinite(dist[~none])) or (dist.size and dist.min() < 0) \
            or not np.all(np.isinf(dist[none])):
        raise ValueError("distances must be finite and >= 0 (inf where there is no neighbour)")
    indptr, indices, values = data["adj_indptr"], data["adj_indices"], data["adj_data"]
    if indptr.ndim != 1 or indptr.shape[0] != n + 1 or indptr.dtype.kind not in "iu":
        raise ValueError(f"adjacency indptr has shape {indptr.shape}, expected ({n + 1},)")
    if indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != indices.shape[0] \
            or indices.shape != values.shape or indices.ndim != 1:
        raise ValueError("adjacency arrays are inconsistent (truncated?)")
    if indices.size and (indices.min() < 0 or indices.max() >= n):
        raise ValueError("adjacency column indices out of range")
    if values.dtype.kind != "f" or not np.all(np.isfinite(values)) \
            or np.any(values < MIN_WEIGHT):
        raise ValueError(f"adjacency weights must be finite and at least {MIN_WEIGHT:.3g} "
                         f"(the smallest normal float)")
    W = sp.csr_matrix((values, indices, indptr), shape=(n, n))
    if W.diagonal().any():
        raise ValueError("adjacency has a nonzero diagonal")
    if (W != W.T).nnz:
        raise ValueError("adjacency matrix is not symmetric")
    if meta["reordered"]:
        order = data.get("node_order")
        if (order is None or order.dtype.kind not in "iu" or order.shape != (n,)
                or not np.array_equal(np.sort(order), np.arange(n))):
            raise ValueError("node_order is missing or not a permutation of the rows")
    deg = data["degree"]
    if deg.shape != (n,) or not np.allclose(deg, np.asarray(W.sum(axis=1)).ravel(),
                                            rtol=1e-10, atol=1e-12):
        raise ValueError("degree vector does not match the adjacency matrix")
