"""Shared pieces of the loaders: split names, archive checks and the returned Bunch."""

from __future__ import annotations

from pathlib import Path

import numpy as np

def check_subset(subset, allowed):
    if not isinstance(subset, str) or subset not in allowed:
        raise ValueError(f"subset must be one of {sorted(allowed)}, got {subset!r}")


def id_key(fid: str):
    """Sort key putting numeric ids in numeric order, any others after them."""
    head = fid.split("_", 1)[0]
    return (0, int(head), fid) if head.isdigit() else (1, 0, fid)


def make_bunch(data, target, target_names, subset, ids, descr):
    from sklearn.utils import Bunch

    return Bunch(
        data=list(data),
        target=np.asarray(target, dtype=np.int64).copy(),
        target_names=list(target_names),
        subset=np.array(list(subset), dtype=str),
        ids=np.array(list(ids), dtype=str),
        DESCR=descr,
    )


def check_archive(path) -> Path:
    if path is None:
        raise TypeError("path to the local archive is required (nothing is downloaded)")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"archive not found: {path}")
    return path
