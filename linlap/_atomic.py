"""Atomic file replacement: an interrupted write never destroys the file it replaces."""

import contextlib
import os
import tempfile

__all__ = ["atomic_write"]


@contextlib.contextmanager
def atomic_write(path, prefix=".linlap-"):
    """Yield a binary file in ``path``'s directory; on success it replaces ``path``.

    The data is flushed and fsynced before ``os.replace``; on any exception the
    temporary file is removed and ``path`` is left as it was. The new file gets the
    permissions a plain ``open(path, 'wb')`` would give (``mkstemp`` makes it 0600).
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
