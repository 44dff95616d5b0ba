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
    if path.is_dir():
        raise ValueError(f"{path} is a directory: pass the archive file itself")
    if not path.is_file():
        raise FileNotFoundError(f"archive not found: {path}")
    return path


#: compressed-stream signatures and their readers
_COMPRESSED = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "lzma"), (b"BZh", "bz2"))


def iter_tar_files(path):
    """``(name parts, read)`` for each regular file of the tar archive ``path`` (gzip, xz,
    bzip2 or plain), in one sequential pass; ``read()`` returns the file's bytes and must
    be called before the next item. The compressed stream is read to its end, so a
    truncated or damaged archive raises ValueError naming it (tarfile alone takes a
    header cut short for the end of the archive and returns part of it)."""
    import bz2
    import gzip
    import lzma
    import tarfile
    import zlib

    data_errors = (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError)

    def guarded(step):
        try:
            return step()
        except data_errors as exc:
            raise _damaged(path, exc) from None
        except OSError as exc:
            if exc.errno is not None:  # a real I/O error, not bad data
                raise
            raise _damaged(path, exc) from None

    with open(path, "rb") as raw:
        head = raw.read(6)
        raw.seek(0)
        kind = next((k for sig, k in _COMPRESSED if head.startswith(sig)), None)
        stream = {"gzip": lambda: gzip.GzipFile(fileobj=raw),
                  "lzma": lambda: lzma.LZMAFile(raw),
                  "bz2": lambda: bz2.BZ2File(raw)}.get(kind, lambda: raw)()
        tar = guarded(lambda: tarfile.open(fileobj=stream, mode="r|"))
        try:
            members = iter(tar)
            while True:
                member = guarded(lambda: next(members, None))
                if member is None:
                    break
                if member.isfile():
                    parts = [q for q in member.name.split("/") if q not in ("", ".")]
                    yield parts, lambda m=member: guarded(lambda: tar.extractfile(m).read())
            # a tar ends with zero blocks after its last member: none read means the
            # archive was cut at a member boundary (tarfile takes that for the end)
            if getattr(tar.fileobj, "pos", tar.offset + 1) <= tar.offset:
                raise _damaged(path, EOFError("no end-of-archive block"))
            while guarded(lambda: stream.read(1 << 20)):  # to the end: a cut stream raises
                pass
        finally:
            tar.close()
            if stream is not raw:
                stream.close()


def _damaged(path, exc):
    return ValueError(f"{path}: truncated, damaged or not a tar archive "
                      f"({type(exc).__name__}: {exc})")
