"""Atomic file replacement: an interrupted write never destroys the file it replaces."""

import contextlib
import errno
import glob
import os
import stat
import re
import socket
import tempfile
import time

__all__ = ["atomic_write", "check_destination", "names_a_descriptor"]

#: Seconds after which a temporary file of a writer that is not known to be running
#: (another host's, or one of this host whose process is gone) counts as abandoned.
STALE_AGE = 3600


def _host_name():
    """This host's name as it goes in a temporary file name (no '-' or '/')."""
    try:
        host = socket.gethostname()
    except OSError:
        host = ""
    return re.sub(r"[^A-Za-z0-9.]", "_", host)[:64] or "localhost"


_HOST = _host_name()

#: errors that writing a file raises, named after the destination even when the OS names
#: no file (a write to a full disk)
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}

#: and writing into a pipe or device: its reader gone, or a seek it cannot do
_IN_PLACE_ERRNOS = _WRITE_ERRNOS | {errno.EPIPE, errno.ESPIPE}


#: paths naming an open file descriptor of the process (/dev/stdout, /dev/fd/3, ...)
_DESCRIPTOR_PATH = re.compile(r"/dev/(stdin|stdout|stderr|fd/\d+)|/proc/(self|\d+)/fd/\d+")


def _descriptor_match(path):
    return _DESCRIPTOR_PATH.fullmatch(os.path.normpath(os.path.abspath(path)))


def names_a_descriptor(path):
    """Whether ``path`` names an open file descriptor (/dev/stdout, /dev/fd/N,
    /proc/self/fd/N): what it reaches was opened by the caller's shell (``> log``,
    ``>> log``), so it is written through, never replaced."""
    return _descriptor_match(path) is not None


def _own_descriptor(path):
    """The number of this process's descriptor that ``path`` names, else None."""
    m = _descriptor_match(path)
    if m is None:
        return None
    name = m.group(1)
    if name is not None:  # /dev/stdin, /dev/stdout, /dev/stderr, /dev/fd/N
        return ("stdin", "stdout", "stderr").index(name) if name.startswith("std") \
            else int(name[3:])
    if m.group(2) in ("self", str(os.getpid())):
        return int(m.group(0).rsplit("/", 1)[1])
    return None


def _in_place(path):
    """Whether :func:`atomic_write` writes ``path`` in place: it exists and names an
    open descriptor (/dev/stdout, even on a regular file: the shell's ``> log`` must
    stay the file written), or, symbolic links followed, is neither a regular file nor
    a directory (a device, FIFO or socket: /dev/null), or is a file no path names."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # a new file (or a dangling link: its target is made)
        return False
    if stat.S_ISDIR(st.st_mode):
        return False
    if not stat.S_ISREG(st.st_mode) or names_a_descriptor(path):
        return True
    try:
        return not os.path.samestat(st, os.stat(os.path.realpath(path)))
    except OSError:
        return True


def check_destination(path):
    """Raise now, naming ``path``, what would make :func:`atomic_write` fail at the end:
    an empty name, a directory, a missing directory, or one where files cannot be
    created (so that a long run is not wasted on an output it cannot write); for a
    device or FIFO, written in place, a socket or no permission to write it."""
    path = os.fspath(path)
    if not path.strip():
        raise ValueError("an empty file name given for the output")
    if _in_place(path):  # its directory needs no room for a temporary file
        if stat.S_ISSOCK(os.stat(path).st_mode):
            raise OSError(errno.ENXIO, "is a socket; give a file name", path)
        if not os.access(path, os.W_OK):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return
    if path.endswith(("/", os.sep)) or os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "is a directory; give a file name", path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, "cannot write there: no directory "
                                f"{directory}", path)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "cannot write there: no permission to create "
                              f"files in {directory}", path)


@contextlib.contextmanager
def atomic_write(path, prefix=".linlap-"):
    """Yield a binary file in ``path``'s directory; on success it replaces ``path``.

    The destination is checked first (:func:`check_destination`). The data is flushed
    and fsynced before ``os.replace``; on any exception the temporary file is removed
    and ``path`` is left as it was. The new file gets the permissions a plain
    ``open(path, 'wb')`` would give: those of the file it replaces, else 0666 less the
    umask (``mkstemp`` makes it 0600). A symbolic link is followed: its target is
    replaced. Errors name ``path``, not the temporary file.

    A destination that exists and is no regular file (a device such as /dev/null, a
    FIFO; links followed), or is a file no path names, is written in place, as a shell's
    ``>`` would: a replacement would destroy it, and its directory (/dev) may take no
    temporary file. A path naming one of this process's open descriptors (/dev/stdout,
    /dev/fd/N) is written through a duplicate of it, whatever it reaches, sharing its
    offset (the caller's shell opened it: ``> log``, ``>> log``, ``2>&1``); another
    process's (/proc/<pid>/fd/N) is appended to. What was written then stays written
    when an error follows.
    """
    path = os.fspath(path)
    if _in_place(path):
        check_destination(path)
        with _write_in_place(path) as fh:
            yield fh
        return
    if os.path.islink(path):  # write where the link points, as open() would
        path = os.path.realpath(path)
    check_destination(path)
    directory = os.path.dirname(os.path.abspath(path))
    remove_stale(directory, prefix)
    # the writer's process id and host in the name tell a later save whether it may
    # still be running (:func:`remove_stale`)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f"{prefix}{os.getpid()}@{_HOST}-",
                                   suffix=".tmp", dir=directory)
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, path) from None
    in_body = False
    try:
        try:
            with os.fdopen(fd, "wb") as fh:
                in_body = True
                yield fh
                in_body = False
                fh.flush()
                os.fsync(fh.fileno())
            try:
                mode = stat.S_IMODE(os.stat(path).st_mode)
            except OSError:  # a new file
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except OSError as exc:
            # this function's own steps (flush, fsync, close, chmod, rename) name the
            # destination, not the temporary file nor nothing; so does an error of the
            # caller's writes that names no file, if writing causes it (a full disk or
            # quota, a file too large) — other errors of the caller's (an input read
            # meanwhile, EIO on a pipe; another file named) are left as they are
            if exc.errno is None or exc.filename not in (None, tmp) or (
                    in_body and exc.errno not in _WRITE_ERRNOS):
                raise
            raise OSError(exc.errno, exc.strerror, path) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def _write_in_place(path):
    """``path`` opened for writing in place (see :func:`atomic_write`), with its error
    names: its own steps' errors (flush, close) and those of the caller's writes that
    writing causes name ``path``."""
    in_body = False
    fd = _own_descriptor(path)
    try:
        # one of this process's descriptors: written through a duplicate, sharing its
        # offset with the process's own writes (`> log 2>&1`: stderr's lines follow, not
        # overwrite; `>> log` appends); another's (/proc/<pid>/fd/N) appended to;
        # anything else opened as `>` would
        opened = (os.fdopen(os.dup(fd), "wb") if fd is not None
                  else open(path, "ab" if names_a_descriptor(path) else "wb"))
        with opened as fh:
            in_body = True
            yield fh
            in_body = False
    except OSError as exc:
        if exc.errno is None or exc.filename is not None or (
                in_body and exc.errno not in _IN_PLACE_ERRNOS):
            raise
        strerror = exc.strerror
        if exc.errno == errno.ESPIPE:  # e.g. a model file, whose header is rewritten
            strerror = f"{strerror}: this output must be a regular file, not a pipe"
        raise OSError(exc.errno, strerror, path) from None


def remove_stale(directory, prefix, max_age=STALE_AGE):
    """Remove temporary files of ``prefix`` left in ``directory`` by writers that died
    (killed before they could clean up).

    A file is removed only once it is ``max_age`` seconds old (by its modification
    time), and, unless its name shows it was written on another host, only if its
    writer's process id is no longer running here. Both, because a process id says nothing across
    PID namespaces (containers sharing a volume, or other hosts on a network file
    system): a live writer elsewhere looks dead from here, but its file is recent.
    """
    now = time.time()
    for tmp in glob.glob(os.path.join(glob.escape(directory), f"{glob.escape(prefix)}*.tmp")):
        name = os.path.basename(tmp)[len(prefix):-len(".tmp")]
        pid, at, rest = name.partition("@")
        if not at:  # an older name, '<pid>-<random>': no host
            pid = name.split("-", 1)[0]
        if not pid.isdigit():
            continue  # not a name atomic_write gives
        try:
            if now - os.stat(tmp).st_mtime < max_age:
                continue
        except OSError:
            continue  # gone already
        host = rest.rpartition("-")[0] if at else None  # None: an older name, no host
        if host in (_HOST, None) and _running(int(pid)):
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
