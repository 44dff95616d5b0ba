"""Progress reporting: quiet unless asked; lines (not bars) when stderr is not a terminal."""

from linlap._progress import progress


def test_quiet_prints_nothing(capsys):
    bar = progress(False, total=10, desc="x")
    for _ in range(10):
        bar.update(1, residual=0.5)
    bar.close()
    assert capsys.readouterr().err == ""


def test_lines_at_every_tenth_of_a_known_total(capsys):
    bar = progress(True, total=200, desc="search", unit="rows")
    for _ in range(100):
        bar.update(2)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 10
    assert lines[0] == "[search] 20/200 rows (10%)" and lines[-1] == "[search] 200/200 rows (100%)"


def test_lines_every_few_updates_without_total(capsys):
    bar = progress(True, desc="CG", unit="iteration", every=5)
    for i in range(12):
        bar.update(1, relative_residual=10.0 ** -i)
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["[CG] iteration 1, relative_residual 1.000e+00",
                     "[CG] iteration 5, relative_residual 1.000e-04",
                     "[CG] iteration 10, relative_residual 1.000e-09"]


def test_a_closed_stderr_drops_the_lines_instead_of_stopping_the_work(monkeypatch):
    """`2>&1 | head -1`: the first write that finds the reader gone, and every later one,
    is dropped; other errors still raise."""
    import errno
    import sys

    import pytest

    from linlap._progress import stderr_may_close

    class ClosedPipe:
        def __init__(self, exc):
            self.exc, self.calls = exc, 0

        def write(self, text):
            self.calls += 1
            raise self.exc

        def flush(self):
            pass

        def isatty(self):
            return False

    closed = ClosedPipe(BrokenPipeError(errno.EPIPE, "Broken pipe"))
    monkeypatch.setattr(sys, "stderr", closed)
    with stderr_may_close():
        bar = progress(True, total=10, desc="search")
        for _ in range(10):
            bar.update(1)
        print("a step line", file=sys.stderr, flush=True)
    assert closed.calls == 1 and sys.stderr is closed
    full = ClosedPipe(OSError(errno.EIO, "Input/output error"))
    monkeypatch.setattr(sys, "stderr", full)
    with pytest.raises(OSError), stderr_may_close():
        print("a line", file=sys.stderr)
    assert sys.stderr is full
