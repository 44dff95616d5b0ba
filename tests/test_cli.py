"""The ``linlap`` command driven as a user would: subprocesses on real files."""

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from linlap.datasets import load_pcmac

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, cwd=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return subprocess.run([sys.executable, "-m", "linlap", *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def assert_user_error(res, *fragments):
    assert res.returncode == 1, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("linlap: error:")]
    assert len(lines) == 1, res.stderr
    for frag in fragments:
        assert frag in lines[0], lines[0]


def short(name):
    return name.split(".")[-2]  # comp.sys.ibm.pc.hardware -> pc


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """train.csv (300 rows, 40 labeled), test.jsonl (200 labeled), test.svm pair."""
    d = tmp_path_factory.mktemp("cli")
    train, test = load_pcmac("train"), load_pcmac("test")
    rng = np.random.RandomState(0)
    idx = rng.permutation(len(train.data))[:300]
    lab = set(idx[:40])
    with open(d / "train.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "body", "topic"])
        for k, i in enumerate(idx):
            w.writerow([k, train.data[i],
                        short(train.target_names[train.target[i]]) if i in lab else ""])
    tidx = rng.permutation(len(test.data))[:200]
    with open(d / "test.jsonl", "w", encoding="utf-8") as f:
        for i in tidx:
            f.write(json.dumps({"body": test.data[i],
                                "topic": short(test.target_names[test.target[i]])}) + "\n")
    return d


@pytest.fixture(scope="module")
def model(corpus):
    res = run("fit", corpus / "train.csv", "--model", corpus / "model.joblib",
              "--text-column", "body", "--label-column", "topic", "--n-neighbors", 10)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    assert "40 labeled" in res.stderr and "260 unlabeled" in res.stderr
    assert "vectorizing" in res.stderr  # step lines unless --quiet
    assert "gamma_I = 25" in res.stderr  # the 'scaled' default: 500 · 2 classes / 40 labels
    return corpus / "model.joblib"


def test_fit_predict_evaluate_top_features(corpus, model):
    out = corpus / "pred.txt"
    res = run("predict", model, corpus / "test.jsonl", "--out", out,
              "--text-column", "body", "--chunk-size", 64, "--quiet")
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    preds = out.read_text().splitlines()
    assert len(preds) == 200 and set(preds) <= {"pc", "mac"}
    truth = [json.loads(line)["topic"] for line in
             (corpus / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    acc = np.mean(np.array(preds) == np.array(truth))
    assert acc > 0.7

    res = run("predict", model, corpus / "test.jsonl", "--out", corpus / "dec.csv",
              "--text-column", "body", "--decision-values", "-q")
    assert res.returncode == 0, res.stderr
    rows = list(csv.reader(open(corpus / "dec.csv", encoding="utf-8")))
    assert rows[0] == ["prediction", "decision_pc"]
    assert [r[0] for r in rows[1:]] == preds
    assert all((float(r[1]) > 0) == (r[0] == "pc") for r in rows[1:])

    res = run("evaluate", model, corpus / "test.jsonl", "--text-column", "body",
              "--label-column", "topic", "-q")
    assert res.returncode == 0, res.stderr
    assert f"accuracy  {acc:.4f}" in res.stdout
    assert "macro-F1" in res.stdout and "precision" in res.stdout
    assert "confusion matrix" in res.stdout

    res = run("top-features", model, "-n", 5)
    assert res.returncode == 0, res.stderr
    assert "highest" in res.stdout and "lowest" in res.stdout
    assert res.stdout.count("\n    ") == 10
    assert "apple" in res.stdout or "mac" in res.stdout


def test_hashing_lapsvm_and_directory_input(tmp_path):
    train = load_pcmac("train")
    rng = np.random.RandomState(1)
    idx = rng.permutation(len(train.data))[:120]
    for k, i in enumerate(idx):
        folder = short(train.target_names[train.target[i]]) if k < 30 else "unlabeled"
        (tmp_path / "docs" / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / "docs" / folder / f"{k}.txt").write_text(train.data[i], encoding="utf-8")
    res = run("fit", tmp_path / "docs", "--model", tmp_path / "h.model", "--vectorizer",
              "hashing", "--ngram-max", 2, "--estimator", "lapsvm", "--n-neighbors", 8,
              "--class-prior", "labeled", "-q")
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    res = run("top-features", tmp_path / "h.model", "-n", 3)
    assert res.returncode == 0, res.stderr
    assert "unavailable" in res.stdout and "feature " in res.stdout
    res = run("evaluate", tmp_path / "h.model", tmp_path / "docs", "-q")
    assert res.returncode == 0, res.stderr
    assert "30 labeled documents" in res.stdout


def test_svmlight_round_trip(tmp_path):
    rng = np.random.RandomState(0)
    lines = []
    for i in range(80):
        y = 1 if i % 2 else -1
        feats = {1 + int(j): 1.0 for j in rng.choice(5, 2, replace=False) + (0 if y > 0 else 5)}
        feats[20] = rng.rand()
        label = y if i < 20 else 0
        lines.append(f"{label} " + " ".join(f"{j}:{v:.3f}" for j, v in sorted(feats.items())))
    (tmp_path / "d.svm").write_text("\n".join(lines) + "\n")
    res = run("fit", tmp_path / "d.svm", "--model", tmp_path / "s.model", "--n-neighbors", 5,
              "-q")
    assert res.returncode == 0, res.stderr
    res = run("predict", tmp_path / "s.model", tmp_path / "d.svm", "--chunk-size", 7, "-q")
    assert res.returncode == 0, res.stderr
    assert len(res.stdout.split()) == 80 and set(res.stdout.split()) <= {"1", "-1"}
    res = run("top-features", tmp_path / "s.model", "-n", 2)
    assert res.returncode == 0 and "feature " in res.stdout
    # a matrix model refuses text input, clearly
    res = run("predict", tmp_path / "s.model", tmp_path / "d.svm", "--format", "csv")
    assert_user_error(res)


# -------------------------------------------------------------------- user errors

def _write(path, content, mode="w"):
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.mark.parametrize("name, content, extra, fragments", [
    ("missing_col.csv", "text,label\nhello,a\nworld,b\n", ["--text-column", "body"],
     ["'body'", "missing_col.csv", "--text-column"]),
    ("missing_label.csv", "text,cls\nhello,a\nworld,b\n", [],
     ["'label'", "--label-column"]),
    ("empty.csv", "", [], ["empty"]),
    ("empty.jsonl", "", [], ["empty"]),
    ("bad.svm", "1 1:0.5 2:1\n-1 3:zz\n", [], ["bad.svm", "line 2", "3:zz"]),
    ("badlabel.svm", "1 1:0.5\nfoo 3:1\n", [], ["line 2"]),
    ("latin1.csv", "text,label\nna\xefve caf\xe9,a\n".encode("latin-1"), [],
     ["latin1.csv", "line 2", "UTF-8"]),
    ("latin1.jsonl", b'{"text": "caf\xe9", "label": "a"}\n', [], ["line 1", "UTF-8"]),
    ("unlabeled.csv", "text,label\nhello there,\nworld wide,\nfoo bar,\n", [],
     ["unlabeled"]),
    ("oneclass.jsonl", '{"text": "a b", "label": "x"}\n{"text": "c d", "label": "x"}\n'
     '{"text": "e f"}\n', [], ["one class"]),
    ("badjson.jsonl", '{"text": "a b", "label": "x"}\n{"text": oops}\n', [],
     ["line 2", "JSON"]),
    ("ragged.csv", "text,label\nhello,a,extra\n", [], ["line 2", "fields"]),
    ("data.txt", "hello\n", [], ["--format"]),
    ("unclosed.csv", 'text,label\napple,a\n"engine wheel,b\nbrake motor,a\n', [],
     ["unclosed.csv", "bad CSV"]),
    ("nanlabel.jsonl", '{"text": "a b", "label": "x"}\n{"text": "c d", "label": NaN}\n', [],
     ["line 2", "NaN"]),
    ("blank.csv", "text,label\n\n\n", [], ["no data rows"]),
    ("hugeidx.svm", "1 1:0.5\n-1 9999999999999999999999:1\n", [], ["line 2", "99999"]),
    ("underscore.svm", "1 1_0:0.5\n-1 2:1\n", [], ["line 1", "1_0"]),
])
def test_malformed_input_gives_one_error_line(tmp_path, name, content, extra, fragments):
    path = _write(tmp_path / name, content)
    res = run("fit", path, "--model", tmp_path / "m.joblib", "--n-neighbors", 2, *extra)
    assert_user_error(res, *fragments)
    assert not (tmp_path / "m.joblib").exists()


def test_missing_files_and_corrupt_model(tmp_path, model, corpus):
    assert_user_error(run("fit", tmp_path / "nope.csv", "--model", tmp_path / "m"),
                      "nope.csv")
    assert_user_error(run("predict", tmp_path / "nope.model", corpus / "test.jsonl"),
                      "nope.model")
    assert_user_error(run("fit", corpus / "train.csv", "--model", tmp_path / "no" / "m"),
                      "no directory")
    junk = _write(tmp_path / "junk.model", b"this is not a model\n" * 10)
    assert_user_error(run("predict", junk, corpus / "test.jsonl"), "not a linlap model")
    truncated = tmp_path / "trunc.model"
    truncated.write_bytes(model.read_bytes()[: model.stat().st_size // 2])
    assert_user_error(run("evaluate", truncated, corpus / "test.jsonl"), "trunc.model")
    assert_user_error(run("top-features", truncated), "truncated")
    # evaluate needs labels
    nolab = _write(tmp_path / "nolab.jsonl", '{"body": "a mac"}\n')
    assert_user_error(run("evaluate", model, nolab, "--text-column", "body",
                          "--label-column", "topic"), "topic")


def test_usage_errors_exit_2(tmp_path):
    res = run("fit", tmp_path / "x.csv")  # --model missing
    assert res.returncode == 2 and "Traceback" not in res.stderr
    res = run("fit", tmp_path / "x.csv", "--model", "m", "--estimator", "svm")
    assert res.returncode == 2
    assert run().returncode == 2


@pytest.mark.parametrize("argv", [
    ["fit", "x.csv", "--model", "m", "--n-neighbors", "0"],
    ["fit", "x.csv", "--model", "m", "--power", "0"],
    ["fit", "x.csv", "--model", "m", "--min-df", "0"],
    ["fit", "x.csv", "--model", "m", "--ngram-max", "0"],
    ["fit", "x.csv", "--model", "m", "--embedding", "-1"],
    ["fit", "x.csv", "--model", "m", "--seed", "-1"],
    ["fit", "x.csv", "--model", "m", "--n-features", "two"],
    ["predict", "m", "x.csv", "--chunk-size", "0"],
    ["top-features", "m", "-n", "0"],
    ["plot", "labels", "--out", "p.png", "--n-labels", "10,0"],
    ["demo", "--n-labels", "0"],
])
def test_bad_integer_options_are_usage_errors(argv, capsys):
    from linlap.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "usage:" in err and ("must be >=" in err
                                                         or "expected an integer" in err)


@pytest.mark.parametrize("extra, fragment", [
    (["--model", " "], "--model: an empty file name"),
    (["--model", "m", "--class-prior", "foo"], "--class-prior must be none"),
    (["--model", "m", "--vectorizer", "hashing", "--embedding", "4"], "needs --vectorizer tfidf"),
])
def test_contradictory_or_malformed_options_exit_2_before_reading(extra, fragment, capsys):
    from linlap.cli import main

    assert main(["fit", "missing.csv", *extra]) == 2  # the file is never opened
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("linlap: error:") and fragment in err[0]


@pytest.mark.parametrize("value, parsed", [("scaled", "scaled"), ("auto", "auto"),
                                           ("3", 3.0), ("0", 0.0)])
def test_gamma_I_option_takes_numbers_and_names(value, parsed):
    from linlap.cli import build_parser

    args = build_parser().parse_args(["fit", "x.csv", "--model", "m", "--gamma-I", value])
    assert args.gamma_I == parsed
    # not given: the estimator's own default ('scaled' for laprls and lapsvm, the fixture
    # `model` checks the value it gives)
    assert build_parser().parse_args(["fit", "x.csv", "--model", "m"]).gamma_I is None


@pytest.mark.parametrize("value, parsed", [("scaled", "scaled"), ("3e-4", 3e-4), ("0", 0.0)])
def test_gamma_A_option_takes_numbers_and_scaled(value, parsed):
    from linlap.cli import build_parser

    args = build_parser().parse_args(["fit", "x.csv", "--model", "m", "--gamma-A", value])
    assert args.gamma_A == parsed
    assert build_parser().parse_args(["fit", "x.csv", "--model", "m"]).gamma_A is None


@pytest.mark.parametrize("option", ["--gamma-I", "--gamma-A", "--gamma-U"])
@pytest.mark.parametrize("value", ["banana", "-1", "inf", "nan"])
def test_gamma_options_refuse_bad_values(option, value, capsys):
    from linlap.cli import build_parser

    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["fit", "x.csv", "--model", "m", option, value])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and option in err and "Traceback" not in err


def test_gamma_A_option_refuses_auto(capsys):
    from linlap.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["fit", "x.csv", "--model", "m", "--gamma-A", "auto"])
    assert "expected a number or 'scaled'" in capsys.readouterr().err


def test_laps3vm_fit_evaluate_and_option_errors(corpus, tmp_path, capsys):
    from linlap.cli import main

    common = ["--text-column", "body", "--label-column", "topic", "--n-neighbors", 10]
    out = tmp_path / "s3vm.model"
    res = run("fit", corpus / "train.csv", "--model", out, "--estimator", "laps3vm", *common)
    assert res.returncode == 0, res.stderr
    # the estimator's defaults, and the balance it estimated for the 260 unlabeled rows
    assert "gamma_A = 0.001, gamma_I = 1, gamma_U = 1" in res.stderr
    line = next(ln for ln in res.stderr.splitlines() if "class balance kept" in ln)
    shares = dict(zip(line.split(": ")[1].split()[::2],
                      map(float, line.split(": ")[1].replace(",", "").split()[1::2])))
    assert set(shares) == {"mac", "pc"} and abs(sum(shares.values()) - 1) < 1e-9
    assert 0.3 < shares["pc"] < 0.7
    res = run("evaluate", out, corpus / "test.jsonl", "--text-column", "body",
              "--label-column", "topic", "-q")
    assert res.returncode == 0, res.stderr
    assert float(res.stdout.split("accuracy")[1].split()[0]) > 0.7
    # given weights and proportions are passed through
    res = run("fit", corpus / "train.csv", "--model", out, "--estimator", "laps3vm",
              "--gamma-A", "0.01", "--gamma-I", "10", "--gamma-U", "2", "--class-prior",
              "0.4,0.6", *common)
    assert res.returncode == 0, res.stderr
    assert "gamma_A = 0.01, gamma_I = 10, gamma_U = 2" in res.stderr
    assert "mac 0.400, pc 0.600" in res.stderr
    for extra, fragment in [
            (["--estimator", "laps3vm", "--gamma-I", "scaled"], "--gamma-I scaled is not"),
            (["--estimator", "laps3vm", "--gamma-A", "scaled"], "--gamma-A scaled is not"),
            (["--estimator", "laps3vm", "--class-prior", "none"], "not none"),
            (["--gamma-U", "2"], "--gamma-U applies to --estimator laps3vm only"),
            (["--estimator", "lapsvm", "--class-prior", "predicted"], "laps3vm only")]:
        # a wrong command line (exit 2), refused before the data is read: in-process
        assert main(["fit", str(corpus / "train.csv"), "--model", str(tmp_path / "bad.model"),
                     *extra, *map(str, common)]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith("linlap: error:") and fragment in err[0]
        assert not (tmp_path / "bad.model").exists()


def test_help_of_every_command():
    for cmd in ("fit", "predict", "evaluate", "top-features", "demo"):
        res = run(cmd, "--help")
        assert res.returncode == 0 and "usage: linlap" in res.stdout


def test_plot_commands_write_png(tmp_path, corpus):
    pytest.importorskip("matplotlib")
    res = run("plot", "convergence", "--out", tmp_path / "conv.png", "--n-neighbors", 10,
              "--n-labels", 30, "-q")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "conv.png").read_bytes()[:4] == b"\x89PNG"
    res = run("plot", "labels", corpus / "test.jsonl", "--text-column", "body",
              "--label-column", "topic", "--out", tmp_path / "labels.png",
              "--n-neighbors", 10, "--n-labels", "10,40", "-q")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "labels.png").read_bytes()[:4] == b"\x89PNG"
    res = run("plot", "path", "--out", tmp_path / "path.png", "--n-neighbors", 10,
              "--n-labels", 40)
    assert res.returncode == 0, res.stderr
    assert "breakpoints; chosen gamma_I" in res.stderr
    assert (tmp_path / "path.png").read_bytes()[:4] == b"\x89PNG"


def test_fit_with_embedding(corpus, tmp_path):
    out = tmp_path / "emb.joblib"
    res = run("fit", corpus / "train.csv", "--model", out, "--text-column", "body",
              "--label-column", "topic", "--n-neighbors", 10, "--embedding", 16)
    assert res.returncode == 0, res.stderr
    assert "16 embedding dimensions" in res.stderr
    res = run("evaluate", out, corpus / "test.jsonl", "--text-column", "body",
              "--label-column", "topic", "-q")
    assert res.returncode == 0, res.stderr
    assert float(res.stdout.split("accuracy")[1].split()[0]) > 0.7
    res = run("top-features", out, "-n", 3)
    assert res.returncode == 0, res.stderr
    res = run("fit", corpus / "train.csv", "--model", out, "--text-column", "body",
              "--label-column", "topic", "--vectorizer", "hashing", "--embedding", 16)
    assert res.returncode == 2 and "--embedding needs --vectorizer tfidf" in res.stderr
    res = run("fit", corpus / "train.csv", "--model", out, "--text-column", "body",
              "--label-column", "topic", "--embedding", -3)
    assert res.returncode == 2 and "--embedding: must be >= 0, got -3" in res.stderr


def _two_topic_texts(n, seed=0):
    rng = np.random.RandomState(seed)
    words = [["engine", "wheel", "brake", "gear", "tyre", "clutch"],
             ["apple", "pear", "plum", "cherry", "grape", "melon"]]
    y = rng.randint(2, size=n)
    texts = [" ".join(rng.choice(words[c], 5)) for c in y]
    return texts, np.where(y == 1, "fruit", "car")


def test_review_fixes_outputs_inputs_and_reports(tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file
    from sklearn.pipeline import make_pipeline

    from linlap import KernelLapRLSClassifier, save
    from linlap.cli import main
    from linlap.text import make_vectorizer

    def error_line(code, fragment, expected=1):
        err = capsys.readouterr().err.splitlines()
        lines = [ln for ln in err if ln.startswith("linlap: error:")]
        assert code == expected and len(lines) == 1 and fragment in lines[0], (code, err)

    # 45 documents and 10 empty ones: the default k (50) is capped by the 45, not by 55
    texts, y = _two_topic_texts(45)
    data = tmp_path / "some_empty.csv"
    with open(data, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        for i, (t, c) in enumerate(zip(texts, y)):
            w.writerow([t, c if i < 10 else ""])
        for _ in range(10):
            w.writerow(["", ""])
    model = tmp_path / "m.model"
    assert main(["fit", str(data), "--model", str(model), "-q"]) == 0
    # a failed predict leaves an existing --out file as it was
    keep = tmp_path / "keep.txt"
    keep.write_text("precious\n")
    error_line(main(["predict", str(model), str(tmp_path / "missing.csv"), "--out",
                     str(keep)]), "missing.csv")
    assert keep.read_text() == "precious\n"
    assert main(["predict", str(model), str(data), "--out", str(keep), "-q"]) == 0
    assert len(keep.read_text().splitlines()) == 55
    # the S³VM with gamma_U = 0 does not claim a class balance it did not apply
    assert main(["fit", str(data), "--model", str(model), "--estimator", "laps3vm",
                 "--gamma-U", "0"]) == 0
    err = capsys.readouterr().err
    assert "gamma_U = 0: no loss on the unlabeled rows" in err and "kept" not in err
    # top-features of a model without feature weights: one error line
    kernel = tmp_path / "kernel.model"
    save(make_pipeline(make_vectorizer(), KernelLapRLSClassifier(unlabeled="")).fit(
        texts, np.where(np.arange(45) < 10, y, "")), kernel)
    error_line(main(["top-features", str(kernel)]), "has no feature weights")
    # svmlight: text options refused, a non-numeric unlabeled label refused; plot reads it
    svm = tmp_path / "d.svm"
    dump_svmlight_file(make_vectorizer().fit_transform(texts), (y == "fruit") + 1, str(svm))
    error_line(main(["fit", str(svm), "--model", str(model), "--ngram-max", "2",
                     "--embedding", "5"]), "--ngram-max, --embedding: vectorizer options", 2)
    error_line(main(["fit", str(svm), "--model", str(model), "--unlabeled-label", "?"]),
               "svmlight labels are numbers")
    png = tmp_path / "c.png"
    assert main(["plot", "convergence", str(svm), "--out", str(png), "--n-labels", "10",
                 "-q"]) == 0
    assert png.stat().st_size > 0
    # a directory's unlabeled documents are its unlabeled/ folder
    for c in ("car", "fruit", "unknown"):
        (tmp_path / "dir" / c).mkdir(parents=True)
    for i, (t, c) in enumerate(zip(texts, y)):
        (tmp_path / "dir" / (c if i < 10 else "unknown") / f"{i}.txt").write_text(t)
    error_line(main(["fit", str(tmp_path / "dir"), "--model", str(model),
                     "--unlabeled-label", "unknown"]), "'unlabeled/' folder")


def test_destinations_checked_before_the_work(tmp_path, model, corpus):
    data = tmp_path / "v.csv"
    data.write_bytes((corpus / "train.csv").read_bytes())
    before = data.read_bytes()
    res = run("fit", data, "--model", data)
    assert res.returncode == 2 and "input file" in res.stderr, res.stderr
    assert data.read_bytes() == before  # the training data is not replaced by a model
    res = run("predict", model, corpus / "test.jsonl", "--out", tmp_path)
    assert_user_error(res, str(tmp_path), "is a directory")
    assert ".linlap-" not in res.stderr and res.stdout == ""
    assert_user_error(run("fit", corpus / "train.csv", "--model", f"{tmp_path}/new/"),
                      "is a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.csv"]


def test_plot_destination_and_seed_checked_first(tmp_path):
    pytest.importorskip("matplotlib")
    res = run("plot", "convergence", "--out", tmp_path / "conv.txt")
    assert res.returncode == 2 and ".png" in res.stderr
    assert_user_error(run("plot", "convergence", "--out", tmp_path / "no" / "x.png"),
                      "no directory")
    for cmd in (["demo"], ["plot", "convergence", "--out", tmp_path / "c.png"]):
        res = run(*cmd, "--seed", 2**32)
        assert res.returncode == 2 and "2**32" not in res.stderr and "<=" in res.stderr


def test_plot_convergence_of_each_estimator(tmp_path):
    pytest.importorskip("matplotlib")
    from linlap import (EMRClassifier, KNNGraph, LapRLSClassifier, LapS3VMClassifier,
                        LapSVMClassifier)
    from linlap.plots import plot_convergence

    X, y = blobs_for_plot()
    models = {"rls": LapRLSClassifier(), "svm": LapSVMClassifier(),
              "s3vm": LapS3VMClassifier()}
    g = KNNGraph(n_neighbors=5).fit(X)
    for m in models.values():
        m.set_params(graph=g).fit(X, y)
    out = tmp_path / "conv"  # no suffix: written as given, not conv.png
    assert plot_convergence(models, out) == out and out.read_bytes()[:4] == b"\x89PNG"
    for est in (LapSVMClassifier(solver="tinv", graph=g), EMRClassifier(graph=g)):
        with pytest.raises(ValueError, match="no per-iteration history"):
            plot_convergence({"x": est.fit(X, y)}, tmp_path / "x.png")
    with pytest.raises(ValueError, match="fit the estimator first"):
        plot_convergence({"x": LapRLSClassifier()}, tmp_path / "x.png")


def blobs_for_plot():
    rng = np.random.default_rng(0)
    X = np.abs(rng.normal(size=(60, 6)))
    X[:30, :3] += 2
    y = np.where(np.arange(60) < 30, 0, 1)
    y[np.r_[5:30, 35:60]] = -1
    return X, y
