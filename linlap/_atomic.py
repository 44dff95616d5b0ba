"""Atomic file replacement: an interrupted write never destroys the file it replaces."""

import contextlib
import glob
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
    remove_stale(directory, prefix)
    # the writer's process id in the name tells a later save whether it is still running
    fd, tmp = tempfile.mkstemp(prefix=f"{prefix}{os.getpid()}-", suffix=".tmp", dir=directory)
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


def remove_stale(directory, prefix):
    """Remove temporary files of ``prefix`` left in ``directory`` by writers that died
    (killed before they could clean up): those whose process id is no longer running."""
    for tmp in glob.glob(os.path.join(glob.escape(directory), f"{glob.escape(prefix)}*.tmp")):
        pid = os.path.basename(tmp)[len(prefix):].split("-", 1)[0]
        if not pid.isdigit() or _running(int(pid)):
            continue
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _running(pid):
    if pid == os.getpid() or os.name == "nt":  # Windows: os.kill(pid, 0) would kill it
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's), or cannot tell: keep its file
    return True
