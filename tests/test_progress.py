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
