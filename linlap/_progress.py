"""Progress of long steps: a tqdm bar on a terminal, plain lines elsewhere.

One object per long step (graph search, solver iterations). When progress is wanted
(``verbose``), it is a tqdm bar if stderr is a terminal and tqdm is installed (the
``progress`` extra), else a line on stderr at every tenth of the work (or every
``every`` updates when the total is unknown) — so logs and pipes stay readable.
"""

import contextlib
import errno
import sys

__all__ = ["progress", "stderr_may_close"]


class _Quiet:
    def update(self, n=1, **info):
        pass

    def close(self):
        pass


class _Lines:
    def __init__(self, total, desc, unit, every):
        self.total, self.desc, self.unit, self.every = total, desc, unit, every
        self.done, self.next_report = 0, 0.1

    def update(self, n=1, **info):
        self.done += n
        extra = "".join(f", {key} {val:.3e}" if isinstance(val, float) else f", {key} {val}"
                        for key, val in info.items())
        if self.total:
            frac = self.done / self.total
            if frac >= self.next_report or self.done == self.total:
                print(f"[{self.desc}] {self.done}/{self.total} {self.unit} "
                      f"({100 * frac:.0f}%){extra}", file=sys.stderr, flush=True)
                self.next_report = int(frac * 10 + 1) / 10
        elif self.done == 1 or self.done % self.every == 0:
            print(f"[{self.desc}] {self.unit} {self.done}{extra}", file=sys.stderr, flush=True)

    def close(self):
        pass


class _Bar:
    def __init__(self, bar):
        self.bar = bar

    def update(self, n=1, **info):
        if info:
            self.bar.set_postfix({key: (f"{val:.2e}" if isinstance(val, float) else val)
                                  for key, val in info.items()}, refresh=False)
        self.bar.update(n)

    def close(self):
        self.bar.close()


def progress(verbose, total=None, desc="", unit="rows", every=10):
    """A progress reporter with ``update(n=1, **info)`` and ``close()``.

    Parameters
    ----------
    verbose : bool
        False: report nothing.
    total : int or None
        Amount of work, if known.
    desc, unit : str
        What is progressing and in what unit.
    every : int
        Without a total and without a terminal: print every ``every`` updates.
    """
    if not verbose:
        return _Quiet()
    if sys.stderr.isatty():
        try:
            from tqdm import tqdm
        except ImportError:
            pass
        else:
            return _Bar(tqdm(total=total, desc=desc, unit=f" {unit}", file=sys.stderr,
                             leave=False, dynamic_ncols=True))
    return _Lines(total, desc, unit, every)


class _DroppingStream:
    """A stream whose writes, once one finds its reader gone (EPIPE), are dropped."""

    def __init__(self, stream):
        self._stream = stream
        self.closed_by_reader = False

    def _call(self, method, *args):
        if self.closed_by_reader:
            return
        try:
            method(*args)
        except OSError as exc:  # BrokenPipeError, or EPIPE from a stream of its own
            if exc.errno != errno.EPIPE:
                raise
            self.closed_by_reader = True

    def write(self, text):
        self._call(self._stream.write, text)
        return len(text)

    def flush(self):
        self._call(self._stream.flush)

    def __getattr__(self, name):  # isatty, fileno, encoding, ...
        return getattr(self._stream, name)


@contextlib.contextmanager
def stderr_may_close():
    """Within: a write to ``sys.stderr`` that finds its reader gone (``linlap fit ...
    2>&1 | head -1``) is dropped, as are all later ones, instead of raising
    BrokenPipeError: progress lines, step timings and warnings never stop the work."""
    stream = sys.stderr
    sys.stderr = _DroppingStream(stream)
    try:
        yield
    finally:
        sys.stderr = stream
