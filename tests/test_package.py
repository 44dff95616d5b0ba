"""Package-level promises: a light import, the demo command, the console entry point."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_python(code, *args):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, *args, "-c", code] if code else [sys.executable, *args],
                          capture_output=True, text=True, env=env, timeout=300)


def test_import_is_light():
    """import linlap loads neither scikit-learn, pynndescent nor numba."""
    out = run_python("import sys, linlap; "
                     "print(sorted(m for m in ('sklearn', 'pynndescent', 'numba', 'scipy') "
                     "if m in sys.modules))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    out = run_python("import linlap; print(linlap.LapRLSClassifier.__name__, linlap.__version__)")
    assert out.stdout.split()[0] == "LapRLSClassifier"
    # the modules the README reaches through the package (model_selection was missing)
    out = run_python("import linlap; print(linlap.model_selection.labeled_scorer.__name__, "
                     "linlap.datasets.load_pcmac.__name__)")
    assert out.stdout.split() == ["labeled_scorer", "load_pcmac"], out.stderr


def test_demo_runs_and_reports():
    out = run_python(None, "-m", "linlap", "demo")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for needle in ("PCMAC", "vectorize", "graph", "solve", "LapRLSClassifier", "LinearSVC"):
        assert needle in text
    errors = [float(line.split()[-2]) for line in text.splitlines()
              if line.strip().startswith(("LapRLSClassifier", "LinearSVC"))]
    assert len(errors) == 2 and all(0 <= e <= 100 for e in errors)


def test_cli_without_command_is_a_usage_error():
    out = run_python(None, "-m", "linlap")
    assert out.returncode == 2 and out.stdout == ""
    assert "usage:" in out.stderr and "give a command: demo, fit" in out.stderr
