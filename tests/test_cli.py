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
    # the note on stderr (as evaluate's), the lists alone on stdout
    assert "unavailable" in res.stderr and "feature " in res.stdout
    assert res.stdout.startswith("class ") and "unavailable" not in res.stdout
    quiet = run("top-features", tmp_path / "h.model", "-n", 3, "-q")  # the lists alone
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == res.stdout
    res = run("evaluate", tmp_path / "h.model", tmp_path / "docs", "-q")
    assert res.returncode == 0, res.stderr
    assert "30 labeled documents" in res.stdout


def test_huge_row_norms_warn_in_the_terms_of_the_command(tmp_path, capsys):
    """The intercept warning for rows of huge norm advises --normalize l2, not sklearn's
    Normalizer (it was not spelled)."""
    from linlap.cli import main

    rng = np.random.RandomState(0)
    lines = [f"{(1 if i % 2 else -1) if i < 20 else 0} "
             + " ".join(f"{j}:{1e5 * rng.rand():.1f}" for j in range(1, 6)) for i in range(60)]
    (tmp_path / "d.svm").write_text("\n".join(lines) + "\n")
    assert main(["fit", str(tmp_path / "d.svm"), "--model", str(tmp_path / "m"),
                 "--n-neighbors", "5", "--gamma-A", "1e-3", "-q"]) == 0
    err = [ln for ln in capsys.readouterr().err.splitlines() if "intercept" in ln]
    assert len(err) == 1 and "(--normalize l2)" in err[0] and "sklearn" not in err[0], err


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
    res = run()  # no command: usage and an error on stderr (it was the help on stdout)
    assert res.returncode == 2 and res.stdout == "" and res.stderr.startswith("usage: linlap")
    assert "linlap: error: give a command: demo, fit, predict, evaluate, top-features, " \
        "plot" in res.stderr


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
        return lines[0]

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
               "svmlight labels are numbers", 2)
    png = tmp_path / "c.png"
    assert main(["plot", "convergence", str(svm), "--out", str(png), "--n-labels", "10",
                 "-q"]) == 0
    assert png.stat().st_size > 0
    # too few labels for the path's folds: the advice is an option of plot
    line = error_line(main(["plot", "path", str(svm), "--out", str(png), "--n-labels", "3",
                            "-q"]), "cross-validation needs at least 2 labeled rows")
    assert line.endswith("; use a larger --n-labels.") and "validation=" not in line
    # a directory's unlabeled documents are its unlabeled/ folder
    for c in ("car", "fruit", "unknown"):
        (tmp_path / "dir" / c).mkdir(parents=True)
    for i, (t, c) in enumerate(zip(texts, y)):
        (tmp_path / "dir" / (c if i < 10 else "unknown") / f"{i}.txt").write_text(t)
    error_line(main(["fit", str(tmp_path / "dir"), "--model", str(model),
                     "--unlabeled-label", "unknown"]), "'unlabeled/' folder", 2)


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


# ------------------------------------------------- review: inputs, outputs and messages

def _error_of(capsys, code, expected, *fragments):
    """The one ``linlap: error:`` line of an in-process run, with its exit status."""
    err = capsys.readouterr().err.splitlines()
    lines = [ln for ln in err if ln.startswith("linlap: error:")]
    assert code == expected and len(lines) == 1, (code, err)
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def _write_texts_csv(path, texts, labels):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows(zip(texts, labels))
    return path


def test_plot_data_keeps_the_unlabeled_rows_for_the_graph(tmp_path):
    import argparse

    from linlap.cli.plot import _plot_data
    from linlap.datasets import mask_labels

    texts, y = _two_topic_texts(100)
    labels = [c if i % 4 == 0 else "" for i, c in enumerate(y)]  # 25 labeled, 75 not
    data = _write_texts_csv(tmp_path / "d.csv", texts, labels)
    args = argparse.Namespace(data=str(data), seed=0, text_column="text",
                              label_column="label")
    X, y_train, X_test, y_test, _ = _plot_data(args, "csv", None)
    # 30 % of the 25 labeled rows are the test set; every other row trains, unlabeled too
    assert X_test.shape[0] == len(y_test) == 8 and "" not in set(y_test)
    assert X.shape[0] == len(y_train) == 92
    assert (y_train == "").sum() == 75 and (y_train != "").sum() == 17
    # the labels are drawn from the labeled rows only
    drawn = mask_labels(y_train, 17, random_state=0, unlabeled="")
    np.testing.assert_array_equal(drawn, y_train)


def test_svmlight_class_0_and_the_unlabeled_label_the_model_remembers(tmp_path, capsys):
    from linlap import KNNGraph, LapRLSClassifier, save
    from linlap.cli import main

    rng = np.random.RandomState(0)
    rows, labels = [], []
    for i in range(60):
        c = i % 2
        feats = {1 + j + 5 * c: 1.0 for j in rng.choice(5, 2, replace=False)}
        feats[20] = rng.rand()
        rows.append(" ".join(f"{j}:{v:.3f}" for j, v in sorted(feats.items())))
        labels.append(c if i < 20 else -5)
    train = _write(tmp_path / "train.svm",
                   "".join(f"{lab} {row}\n" for lab, row in zip(labels, rows)))
    test = _write(tmp_path / "test.svm",
                  "".join(f"{i % 2} {row}\n" for i, row in enumerate(rows)))
    model = tmp_path / "m.model"
    assert main(["fit", str(train), "--model", str(model), "--unlabeled-label", "-5.0",
                 "--n-neighbors", "5", "-q"]) == 0
    # evaluate reads the test file with the fit's marker: class 0 is scored, not skipped
    assert main(["evaluate", str(model), str(test), "-q"]) == 0
    out = capsys.readouterr().out
    assert "60 labeled documents" in out and float(out.split("macro-F1")[1].split()[0]) > 0.7
    # an explicit marker that is a class of the model: refused before reading
    _error_of(capsys, main(["evaluate", str(model), str(test), "--unlabeled-label", "0"]), 2,
              "'0' is a class of the model", "--unlabeled-label")
    # a model saved without the marker (from Python): svmlight's default 0 is a class
    X = np.zeros((60, 21))
    for i, row in enumerate(rows):
        for token in row.split():
            j, v = token.split(":")
            X[i, int(j)] = float(v)
    y = np.array([i % 2 if i < 20 else -1 for i in range(60)])
    save(LapRLSClassifier(graph=KNNGraph(n_neighbors=5)).fit(X, y), tmp_path / "py.model")
    _error_of(capsys, main(["evaluate", str(tmp_path / "py.model"), str(test)]), 2,
              "'0' is a class of the model", "default of svmlight input")
    # fit without the marker: class 0 read as unlabeled, and the message says so
    _error_of(capsys, main(["fit", str(test), "--model", str(model), "-q"]), 1,
              "only one class ('1')", "label 0 marks unlabeled rows by default",
              "--unlabeled-label")


def test_model_file_records_the_unlabeled_label(tmp_path, capsys):
    from linlap import load
    from linlap.cli import main

    texts, y = _two_topic_texts(40)
    data = _write_texts_csv(tmp_path / "d.csv", texts,
                            [c if i < 12 else "?" for i, c in enumerate(y)])
    assert main(["fit", str(data), "--model", str(tmp_path / "m"), "--unlabeled-label", " ? ",
                 "--n-neighbors", "5", "-q"]) == 0
    model, metadata = load(tmp_path / "m", with_metadata=True)
    assert metadata == {"unlabeled_label": "?"} and "?" not in model[-1].classes_
    # the rows marked '?' are skipped by evaluate without the option
    assert main(["evaluate", str(tmp_path / "m"), str(data), "-q"]) == 0
    assert "12 labeled documents" in capsys.readouterr().out
    # svmlight input to this text model: the mismatch is the error, not the recorded '?'
    # (it was "--unlabeled-label '?': svmlight labels are numbers", exit 2, an option
    # the user never gave)
    svm = _write(tmp_path / "t.svm", "1 1:0.5 2:0.3\n0 3:1\n")
    _error_of(capsys, main(["predict", str(tmp_path / "m"), str(svm), "-q"]), 1,
              "the model was fit on text, but this input is svmlight")


def _fit_small_text_model(tmp_path):
    """``(texts, y, data, model)``: 40 two-topic texts, 12 labeled, in ``d.csv``, and the
    model ``linlap fit`` saved from them in ``m.model``."""
    from linlap.cli import main

    texts, y = _two_topic_texts(40)
    data = _write_texts_csv(tmp_path / "d.csv", texts, [c if i < 12 else "" for i, c in
                                                      enumerate(y)])
    model = tmp_path / "m.model"
    assert main(["fit", str(data), "--model", str(model), "--n-neighbors", "5", "-q"]) == 0
    return texts, y, data, model


def test_predict_out_naming_model_or_data_is_refused(tmp_path, capsys):
    from linlap.cli import main

    texts, y, data, model = _fit_small_text_model(tmp_path)
    before = model.read_bytes(), data.read_bytes()
    _error_of(capsys, main(["predict", str(model), str(data), "--out", str(model)]), 2,
              "is the model file (MODEL)")
    _error_of(capsys, main(["predict", str(model), str(data), "--out",
                            str(tmp_path / "." / "d.csv")]), 2, "is the input file (DATA)")
    assert (model.read_bytes(), data.read_bytes()) == before
    # and a plot over its DATA
    pytest.importorskip("matplotlib")
    png = _write(tmp_path / "d.png", data.read_text())
    _error_of(capsys, main(["plot", "labels", str(png), "--format", "csv", "--out",
                            str(png)]), 2, "is the input file (DATA)")


def test_predict_a_folder_of_files_with_ids(tmp_path, capsys):
    from linlap.cli import main

    texts, y, data, model = _fit_small_text_model(tmp_path)
    flat = tmp_path / "flat"
    flat.mkdir()
    for name, text in (("b.txt", "apple pear plum"), ("a.txt", "engine wheel brake"),
                       (".hidden", "grape melon")):
        (flat / name).write_text(text)
    assert main(["predict", str(model), str(flat), "--ids", "-q"]) == 0
    assert capsys.readouterr().out.splitlines() == ["id,prediction", "a.txt,car",
                                                    "b.txt,fruit"]
    # files directly in the folder come first, then the sub-folders' (hidden ones skipped)
    (flat / "sub" / ".git").mkdir(parents=True)
    (flat / "sub" / "c.txt").write_text("cherry grape")
    (flat / "sub" / ".git" / "HEAD").write_text("ref: engine")
    (flat / "0.txt").write_text("gear tyre clutch")
    assert main(["predict", str(model), str(flat), "--ids", "--decision-values", "-q"]) == 0
    rows = list(csv.reader(capsys.readouterr().out.splitlines()))
    assert rows[0] == ["id", "prediction", "decision_fruit"]
    assert [r[:2] for r in rows[1:]] == [["0.txt", "car"], ["a.txt", "car"],
                                         ["b.txt", "fruit"], [os.path.join("sub", "c.txt"),
                                                              "fruit"]]
    # with labels (fit, evaluate), files directly in the directory are not read: a warning
    (flat / "car").mkdir()
    (flat / "car" / "x.txt").write_text("engine wheel")
    assert main(["evaluate", str(model), str(flat), "-q"]) == 0
    err = capsys.readouterr().err
    assert "linlap: warning:" in err and "3 file(s) directly in the directory" in err


def test_predict_ids_of_csv_rows(tmp_path, capsys):
    from linlap.cli import main

    texts, y, data, model = _fit_small_text_model(tmp_path)
    assert main(["predict", str(model), str(data), "--ids", "-q"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == "id,prediction" and [r.split(",")[0] for r in rows[1:]] == \
        [str(i) for i in range(1, 41)]


def test_plain_predictions_are_the_bare_labels(tmp_path, capsys):
    """One label per line as the class is named, a comma or quote included (was CSV-quoted:
    '"mac, apple"'); CSV quoting only with --ids; a name with a line break is refused there."""
    from linlap.cli import main

    texts, y = _two_topic_texts(40)
    names = {"car": 'pc "ibm"', "fruit": "mac, apple"}
    data = _write_texts_csv(tmp_path / "d.csv", texts,
                            [names[c] if i < 12 else "" for i, c in enumerate(y)])
    model = tmp_path / "m"
    assert main(["fit", str(data), "--model", str(model), "--n-neighbors", "5", "-q"]) == 0
    capsys.readouterr()
    assert main(["predict", str(model), str(data), "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 40 and set(lines) <= {'pc "ibm"', "mac, apple"}
    assert main(["predict", str(model), str(data), "-q", "--ids"]) == 0
    rows = list(csv.reader(capsys.readouterr().out.splitlines()))
    assert [r[1] for r in rows[1:]] == lines
    broken = _write_texts_csv(tmp_path / "b.csv", texts,
                              ["two\nlines" if c == "car" and i < 12 else c if i < 12 else ""
                               for i, c in enumerate(y)])
    assert main(["fit", str(broken), "--model", str(model), "--n-neighbors", "5", "-q"]) == 0
    capsys.readouterr()
    _error_of(capsys, main(["predict", str(model), str(data), "-q"]), 2,
              "contains a line break", "--ids")
    assert main(["predict", str(model), str(data), "-q", "--ids"]) == 0


def test_labels_that_look_like_documents_warn_and_are_shown_short(tmp_path, capsys):
    """Swapped --text-column / --label-column: the report showed whole documents as class
    names, and nothing said the columns looked swapped."""
    from linlap.cli import main

    texts, y = _two_topic_texts(40)
    docs = [f"{t}\nsecond line of a longer document {i}" for i, t in enumerate(texts)]
    data = _write_texts_csv(tmp_path / "d.csv", docs, y)
    model = str(tmp_path / "m")
    assert main(["fit", str(data), "--model", model, "--text-column", "label",
                 "--label-column", "text", "--n-neighbors", "5"]) == 0
    err = capsys.readouterr().err
    assert "40 class names look like documents" in err and "--label-column" in err
    report = next(ln for ln in err.splitlines() if ln.startswith("40 documents"))
    assert "second line" not in report and "⏎" in report and len(report) < 600
    # one label per class is a normal setting, not a sign of swapped columns
    short = _write_texts_csv(tmp_path / "s.csv", texts,
                             [f"c{i}" if i < 12 else "" for i in range(40)])
    assert main(["fit", str(short), "--model", model, "--n-neighbors", "5", "-q"]) == 0
    assert "the right one" not in capsys.readouterr().err
    # ordinary labels: no such warning
    normal = _write_texts_csv(tmp_path / "n.csv", texts, [c if i < 12 else ""
                                                          for i, c in enumerate(y)])
    assert main(["fit", str(normal), "--model", model, "--n-neighbors", "5", "-q"]) == 0
    assert "the right one" not in capsys.readouterr().err


@pytest.mark.parametrize("argv, fragment", [
    (["fit", "{svm}", "--model", "{m}", "--unlabeled-label", "?"], "svmlight labels are numbers"),
    (["fit", "{dir}", "--model", "{m}", "--unlabeled-label", "x"], "'unlabeled/' folder"),
    (["evaluate", "{model}", "{dir}", "--unlabeled-label", "x"], "'unlabeled/' folder"),
    (["plot", "labels", "{svm}", "--out", "{png}", "--unlabeled-label", "?"],
     "svmlight labels are numbers"),
    (["fit", "{csv}", "--model", "{m}", "--class-prior", "1,1"], "sum to 2"),
    (["fit", "{csv}", "--model", "{m}", "--class-prior", "0.5,nan"], "in [0, 1]"),
    (["fit", "{csv}", "--model", "{m}", "--class-prior", "1.5,-0.5"], "in [0, 1]"),
    (["demo", "--n-labels", "2000"], "--n-labels 2000: the PCMAC training set has 1168"),
    # options of the other vectorizer (were ignored)
    (["fit", "{csv}", "--model", "{m}", "--vectorizer", "hashing", "--min-df", "50"],
     "--min-df applies to --vectorizer tfidf only"),
    (["fit", "{csv}", "--model", "{m}", "--n-features", "10"],
     "--n-features applies to --vectorizer hashing only"),
    # weights the estimator refuses (were refused once the graph was built, exit 1)
    (["fit", "{csv}", "--model", "{m}", "--gamma-A", "0", "--gamma-I", "0"],
     "--gamma-A 0 and --gamma-I 0: give one of them > 0"),
    (["fit", "{csv}", "--model", "{m}", "--gamma-A", "0", "--gamma-I", "auto"],
     "--gamma-I auto needs --gamma-A > 0"),
    # DATA and --format at odds (were exit 1)
    (["fit", "-", "--model", "{m}"], "DATA - (standard input) needs --format"),
    (["evaluate", "{model}", "-", "--format", "dir"], "DATA - (standard input) needs"),
    (["fit", "{csv}", "--model", "{m}", "--format", "dir"], "d.csv is not a directory"),
    (["predict", "{model}", "{dir}", "--format", "csv"], "--format csv: "),
])
def test_options_refused_before_reading_exit_2(tmp_path, capsys, monkeypatch, argv, fragment):
    import linlap.io
    from linlap.cli import main

    if "plot" in argv:
        pytest.importorskip("matplotlib")
    texts, y = _two_topic_texts(30)
    paths = {"csv": _write_texts_csv(tmp_path / "d.csv", texts,
                                     [c if i < 10 else "" for i, c in enumerate(y)]),
             "svm": _write(tmp_path / "d.svm", "1 1:1\n-1 2:1\n"),
             "dir": tmp_path / "dir", "m": tmp_path / "new.model", "png": tmp_path / "p.png"}
    (tmp_path / "dir" / "a").mkdir(parents=True)
    (tmp_path / "dir" / "a" / "x.txt").write_text("apple")
    if "{model}" in argv:
        paths["model"] = tmp_path / "m.model"
        assert main(["fit", str(paths["csv"]), "--model", str(paths["model"]), "-q",
                     "--n-neighbors", "5"]) == 0

    def no_reading(*args, **kwargs):
        raise AssertionError("the input was read")

    monkeypatch.setattr(linlap.io, "_decoded_lines", no_reading)
    monkeypatch.setattr(linlap.io, "_dir_files", no_reading)
    argv = [a.format(**{k: str(v) for k, v in paths.items()}) for a in argv]
    _error_of(capsys, main(argv), 2, fragment)
    assert not paths["m"].exists() and not paths["png"].exists()


@pytest.mark.parametrize("name, content, fragments", [
    ("array.json", '[\n  {"text": "apple pear", "label": "a"},\n  {"text": "disk", '
     '"label": "b"}\n]\n', ["array.json", "this is a JSON array",
                            "one JSON object per line"]),
    ("oneline.jsonl", '[{"text": "apple pear", "label": "a"}]\n', ["this is a JSON array"]),
    ("mac.csv", "text,label\rapple pear,a\rdisk chip,b\r", ["mac.csv", "line 1",
                                                           "old Mac line endings"]),
    ("mac.jsonl", '{"text": "apple", "label": "a"}\r{"text": "disk", "label": "b"}\r',
     ["line 1", "old Mac line endings"]),
])
def test_input_mistakes_named(tmp_path, capsys, name, content, fragments):
    from linlap.cli import main

    path = _write(tmp_path / name, content)
    line = _error_of(capsys, main(["fit", str(path), "--model", str(tmp_path / "m")]), 1,
                     *fragments)
    assert "universal-newline" not in line


def test_data_from_standard_input(tmp_path, corpus, model):
    test = (corpus / "test.jsonl").read_text(encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def run_stdin(*args):
        return subprocess.run([sys.executable, "-m", "linlap", *map(str, args)], input=test,
                              capture_output=True, text=True, env=env, timeout=300)

    from_file = run("predict", model, corpus / "test.jsonl", "--text-column", "body", "-q")
    res = run_stdin("predict", model, "-", "--format", "jsonl", "--text-column", "body",
                    "--chunk-size", 50, "-q")
    assert res.returncode == 0, res.stderr
    assert res.stdout == from_file.stdout and len(res.stdout.splitlines()) == 200
    res = run_stdin("evaluate", model, "-", "--format", "jsonl", "--text-column", "body",
                    "--label-column", "topic", "-q")
    # named as the readers name it (was "in -")
    assert res.returncode == 0 and "200 labeled documents in <stdin>" in res.stdout, res.stderr
    res = run_stdin("fit", "-", "--format", "jsonl", "--text-column", "body", "--label-column",
                    "topic", "--model", tmp_path / "m", "--n-neighbors", 5, "--power", 1,
                    "--gamma-I", 0.1)
    assert res.returncode == 0 and "reading <stdin>" in res.stderr, res.stderr
    res = run_stdin("predict", model, "-")
    assert res.returncode == 2 and res.stderr.startswith("linlap: error: DATA - (standard "
                                                         "input) needs --format"), res.stderr
    bad = subprocess.run([sys.executable, "-m", "linlap", "predict", str(model), "-",
                          "--format", "jsonl", "--text-column", "body"],
                         input='{"body": "fine"}\n{"body": oops}\n', capture_output=True,
                         text=True, env=env, timeout=300)
    assert_user_error(bad, "<stdin>, line 2", "not valid JSON")


def test_a_model_file_as_data_is_named(tmp_path, capsys, corpus, model):
    """Read as CSV a model file failed on a missing 'text' column ('LINLAP-MODEL 2')."""
    from linlap.cli import main

    for argv in (["fit", str(model), "--model", str(tmp_path / "m"), "--format", "csv"],
                 ["fit", str(model), "--model", str(tmp_path / "m")],
                 ["evaluate", str(model), str(model), "--format", "csv"],
                 ["predict", str(model), str(model)]):
        _error_of(capsys, main(argv), 2, f"DATA {model} is a linlap model file, not documents")
    # line ends converted (a damaged model) is still a model by its first line ...
    crlf = tmp_path / "crlf.model"
    crlf.write_bytes(model.read_bytes().replace(b"\n", b"\r\n"))
    _error_of(capsys, main(["fit", str(crlf), "--model", str(tmp_path / "m"), "--format",
                            "csv"]), 2, "is a linlap model file, not documents")
    # ... and as MODEL it is no sign of a swap: load's own diagnosis is reached
    line = _error_of(capsys, main(["predict", str(crlf), str(model)]), 2)
    assert "did you swap" not in line, line
    # compressed data is no model file (a compressed stream may start one of the first
    # format): the compressed-input message, as before
    import gzip
    gz = tmp_path / "d.csv.gz"
    gz.write_bytes(gzip.compress(b"text,label\na b,x\n"))
    line = _error_of(capsys, main(["fit", str(gz), "--model", str(tmp_path / "m")]), 1)
    assert "model file" not in line and "compressed" in line, line


def test_model_and_data_swapped(corpus, model):
    res = run("predict", corpus / "train.csv", model)
    assert res.returncode == 2 and "did you swap MODEL and DATA" in res.stderr, res.stderr
    assert "train.csv is not one" in res.stderr
    assert "ModuleNotFoundError" not in res.stderr


def test_warnings_print_on_lines_of_their_own(tmp_path):
    texts, y = _two_topic_texts(40)
    data = _write_texts_csv(tmp_path / "d.csv", texts + [""] * 5,
                            [c if i < 12 else "" for i, c in enumerate(y)] + [""] * 5)
    res = run("fit", data, "--model", tmp_path / "m", "--n-neighbors", 5)
    assert res.returncode == 0, res.stderr
    lines = res.stderr.splitlines()
    warning = [ln for ln in lines if "linlap: warning" in ln]
    assert len(warning) == 1 and warning[0].startswith("linlap: warning: 5 of 45 rows"), lines
    assert "UserWarning" not in res.stderr and ".py:" not in res.stderr
    # the interrupted step line is finished, and its timing repeats its name
    i = lines.index(warning[0])
    assert lines[i - 1].startswith("building the") and lines[i - 1].rstrip().endswith("…")
    assert lines[i + 1].startswith("building the") and lines[i + 1].endswith(" s")


def test_evaluate_fails_when_no_label_is_a_class_of_the_model(tmp_path, capsys):
    from linlap.cli import main

    texts, y, data, model = _fit_small_text_model(tmp_path)
    other = _write_texts_csv(tmp_path / "o.csv", texts, np.where(y == "car", "0", "1"))
    _error_of(capsys, main(["evaluate", str(model), str(other), "-q"]), 1,
              "none of its labels (0, 1) is a class of the model (car, fruit)")
    # some labels unknown: evaluated, with a note
    some = _write_texts_csv(tmp_path / "s.csv", texts, np.where(y == "car", "car", "boat"))
    assert main(["evaluate", str(model), str(some), "-q"]) == 0
    assert "classes absent from the model: boat" in capsys.readouterr().err


def test_20newsgroups_script_fits_on_group_names(tmp_path):
    import io
    import tarfile

    train, test = load_pcmac("train"), load_pcmac("test")
    archive = tmp_path / "20news-bydate.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for split, bunch, n in (("train", train, 120), ("test", test, 40)):
            for i in np.random.RandomState(0).permutation(len(bunch.data))[:n]:
                data = bunch.data[i].encode("latin-1", "replace")
                info = tarfile.TarInfo(f"20news-bydate-{split}/"
                                       f"{bunch.target_names[bunch.target[i]]}/{1000 + i}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    model = tmp_path / "20news.joblib"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OPENBLAS_NUM_THREADS="1")
    res = subprocess.run([sys.executable, os.path.join(ROOT, "scripts",
                                                       "20newsgroups_end_to_end.py"),
                          "--archive", str(archive), "--n-labels", "20", "--model",
                          str(model)], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "comp.sys.mac.hardware" in res.stdout  # the top terms name the groups
    top = run("top-features", model, "-n", 1)
    assert top.returncode == 0 and "class comp.sys.mac.hardware" in top.stdout, top.stdout
    with open(tmp_path / "test.jsonl", "w", encoding="utf-8") as f:
        for i in np.random.RandomState(1).permutation(len(test.data))[:40]:
            f.write(json.dumps({"text": test.data[i],
                                "label": test.target_names[test.target[i]]}) + "\n")
    # the model's classes are the labels of a file labeled with group names
    res = run("evaluate", model, tmp_path / "test.jsonl", "-q")
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert "40 labeled documents" in res.stdout


# ------------------------------------------- review: data safety, names, markers, CRs

def test_output_inside_a_directory_data_is_refused(tmp_path, capsys):
    from linlap.cli import main

    texts, y, data, model = _fit_small_text_model(tmp_path)
    docs = tmp_path / "docs"
    for label in ("car", "fruit"):
        (docs / label).mkdir(parents=True)
    for i, (text, label) in enumerate(zip(texts, y)):
        (docs / label / f"{i:02d}.txt").write_text(text)
    victim = docs / "car" / sorted(os.listdir(docs / "car"))[0]
    before = victim.read_bytes()
    # predict --out / fit --model naming a document of DATA: refused, the document intact
    _error_of(capsys, main(["predict", str(model), str(docs), "--out", str(victim), "-q"]), 2,
              "is inside", "the input directory (DATA)")
    _error_of(capsys, main(["fit", str(docs), "--model", str(victim), "-q",
                            "--n-neighbors", "5"]), 2, "is inside", "input directory (DATA)")
    assert victim.read_bytes() == before
    # a new file in it, through another spelling of the path or a symbolic link, too
    _error_of(capsys, main(["predict", str(model), str(docs), "--out",
                            str(docs / ".." / "docs" / "new.csv"), "-q"]), 2, "is inside")
    os.symlink(docs / "fruit", tmp_path / "link")
    _error_of(capsys, main(["predict", str(model), str(docs), "--out",
                            str(tmp_path / "link" / "p.csv"), "-q"]), 2, "is inside")
    assert not (docs / "new.csv").exists() and not (docs / "fruit" / "p.csv").exists()
    # beside the directory (a name sharing its prefix) is fine
    out = tmp_path / "docs.csv"
    assert main(["predict", str(model), str(docs), "--out", str(out), "-q"]) == 0
    assert len(out.read_text().splitlines()) == 40
    # so is a hidden name inside it: the directory reader skips hidden files
    hidden = docs / ".predictions.csv"
    assert main(["predict", str(model), str(docs), "--out", str(hidden), "-q"]) == 0
    assert hidden.read_text() == out.read_text()
    assert main(["predict", str(model), str(docs), "--out", str(out), "-q"]) == 0
    assert len(out.read_text().splitlines()) == 40  # the hidden file is no document


def _run_strict_stdout(*args):
    """``run`` with a standard output that refuses what UTF-8 cannot encode, as in a
    UTF-8 locale (not the C locale)."""
    env = dict(os.environ, PYTHONIOENCODING="utf-8:strict",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return subprocess.run([sys.executable, "-m", "linlap", *map(str, args)],
                          capture_output=True, env=env, timeout=300)


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="names must be bytes")
def test_names_that_are_not_utf8_are_written_as_their_bytes(tmp_path):
    texts, y, data, model = _fit_small_text_model(tmp_path)
    flat = tmp_path / "flat"
    flat.mkdir()
    with open(os.path.join(os.fsencode(flat), b"bad\xe9.txt"), "w") as f:
        f.write("apple pear plum")
    # --out as standard output (it was: 'utf-8' codec can't encode ... surrogates)
    out = tmp_path / "p.csv"
    res = _run_strict_stdout("predict", model, flat, "--ids", "-q", "--out", out)
    assert res.returncode == 0, res.stderr
    assert out.read_bytes() == b"id,prediction\nbad\xe9.txt,fruit\n"
    res = _run_strict_stdout("predict", model, flat, "--ids", "-q")
    assert res.returncode == 0 and res.stdout == b"id,prediction\nbad\xe9.txt,fruit\n"
    # a class folder so named: a class of the model, predicted and evaluated
    docs = tmp_path / "docs"
    for i, (text, label) in enumerate(zip(texts, y)):
        folder = os.path.join(os.fsencode(docs), b"fr\xfcit" if label == "fruit" else b"car")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, b"%02d.txt" % i), "w") as f:
            f.write(text)
    res = _run_strict_stdout("fit", docs, "--model", tmp_path / "d.model", "-q",
                             "--n-neighbors", "5")
    assert res.returncode == 0, res.stderr
    res = _run_strict_stdout("predict", tmp_path / "d.model", data, "-q", "--out", out)
    assert res.returncode == 0, res.stderr
    assert set(out.read_bytes().splitlines()) == {b"car", b"fr\xfcit"}
    res = _run_strict_stdout("evaluate", tmp_path / "d.model", docs, "-q")
    assert res.returncode == 0, res.stderr
    assert b"40 labeled documents" in res.stdout and b"confusion matrix" in res.stdout
    assert b"fr\xfcit" in res.stdout.splitlines()[-1]  # the last row printed whole


@pytest.mark.parametrize("marker", ["-1", "?", "unlabeled", "NaN"])
def test_fit_warns_of_a_class_spelled_like_an_unlabeled_marker(tmp_path, capsys, marker):
    from linlap.cli import main

    texts, y = _two_topic_texts(40)
    data = _write_texts_csv(tmp_path / "d.csv", texts,
                            [c if i < 12 else marker for i, c in enumerate(y)])
    assert main(["fit", str(data), "--model", str(tmp_path / "m"), "--n-neighbors", "5",
                 "-q"]) == 0  # a warning, not an error: -1 can be a real class
    warnings = [ln for ln in capsys.readouterr().err.splitlines()
                if ln.startswith("linlap: warning:") and "spelled like" in ln]
    assert len(warnings) == 1 and f"the class {marker!r} (28 rows)" in warnings[0]
    assert "--unlabeled-label" in warnings[0], warnings  # (and: no row is unlabeled)
    # with the option: no warning, 28 unlabeled rows
    assert main(["fit", str(data), "--model", str(tmp_path / "m"), "--n-neighbors", "5",
                 f"--unlabeled-label={marker}"]) == 0
    err = capsys.readouterr().err
    assert "linlap: warning" not in err and "28 unlabeled" in err
    # rows left unlabeled (empty): the class is taken as meant, no warning
    data = _write_texts_csv(tmp_path / "e.csv", texts,
                            [c if i < 12 else marker if i < 20 else ""
                             for i, c in enumerate(y)])
    assert main(["fit", str(data), "--model", str(tmp_path / "m"), "--n-neighbors", "5",
                 "-q"]) == 0
    assert "linlap: warning" not in capsys.readouterr().err


@pytest.mark.parametrize("command", ["fit", "evaluate", "plot"])
def test_label_column_equal_to_text_column_is_a_usage_error(tmp_path, capsys, command):
    from linlap.cli import main

    texts, y, data, model = _fit_small_text_model(tmp_path)
    argv = {"fit": ["fit", str(data), "--model", str(tmp_path / "new.model")],
            "evaluate": ["evaluate", str(model), str(data)],
            "plot": ["plot", "labels", str(data), "--out", str(tmp_path / "p.png")]}[command]
    if command == "plot":
        pytest.importorskip("matplotlib")
    _error_of(capsys, main(argv + ["--label-column", "text"]), 2,
              "--label-column text is also the text column")
    _error_of(capsys, main(argv + ["--text-column", "label"]), 2,
              "--label-column label is also the text column")
    assert not (tmp_path / "new.model").exists() and not (tmp_path / "p.png").exists()
    # predict ignores the labels: a text column named 'label' is fine there
    assert main(["predict", str(model), str(data), "--text-column", "label", "-q"]) == 0


def test_tsv_quotes_follow_csv_rules_and_the_error_says_so(tmp_path, capsys):
    from linlap.cli import main

    texts, y, data, model = _fit_small_text_model(tmp_path)
    bad = _write(tmp_path / "q.tsv", 'text\tlabel\n"Quoted" title then text\tcar\n')
    _error_of(capsys, main(["predict", str(model), str(bad), "-q"]), 1, "q.tsv, line 2",
              "bad CSV", "in a .tsv file double quotes follow the CSV rules",
              '"""Quoted"" title"')
    # written as the message says, it reads
    good = _write(tmp_path / "g.tsv", 'text\tlabel\n"""Quoted"" title then text"\tcar\n')
    assert main(["predict", str(model), str(good), "-q"]) == 0
    # a .csv file's bad quote: no TSV advice
    bad = _write(tmp_path / "q.csv", 'text,label\n"Quoted" title then text,car\n')
    line = _error_of(capsys, main(["predict", str(model), str(bad), "-q"]), 1, "bad CSV")
    assert ".tsv" not in line


@pytest.mark.parametrize("name, content, fragments", [
    ("stray.csv", "text,label\nfirst doc,car\nhello\rworld,car\nthird,fruit\n",
     ["stray.csv, line 3", "stray carriage return (\\r) at column 6", "quote the field"]),
    ("stray.jsonl", '{"text": "a", "label": "car"}\n{"text": "x\ry", "label": "car"}\n',
     ["stray.jsonl, line 2", "(Invalid control character at: column 12)",
      "stray carriage return (\\r) at column 12", "JSON string"]),
    ("stray1.jsonl", '{"text": "x\ry", "label": "car"}\n{"text": "b", "label": "fruit"}\n',
     ["line 1", "stray carriage return"]),
    ("mac.svm", "1 1:0.5\r-1 2:0.5\r", ["mac.svm, line 1", "old Mac line endings"]),
    ("mac2.svm", "1 1:0.5 # a comment\r-1 2:0.5\r", ["old Mac line endings"]),
])
def test_carriage_returns_are_named_where_they_are(tmp_path, capsys, name, content, fragments):
    from linlap.cli import main

    path = _write(tmp_path / name, content)
    line = _error_of(capsys, main(["fit", str(path), "--model", str(tmp_path / "m")]), 1,
                     *fragments)
    if "stray" in name:
        assert "old Mac" not in line and "tr '" not in line


def test_svmlight_with_crlf_or_a_stray_cr_still_reads(tmp_path):
    from linlap.io import read_all

    for content in ("1 1:0.5\r\n-1 2:0.5\r\n", "1 1:0.5\r2:0.25\n-1 2:0.5\n"):
        batch = read_all(_write(tmp_path / "d.svm", content))
        assert batch.labels == ["1", "-1"]


def test_csv_ids_count_records_not_blank_lines(tmp_path, capsys):
    from linlap.cli import main
    from linlap.io import read_all

    texts, y, data, model = _fit_small_text_model(tmp_path)
    blank = _write(tmp_path / "b.csv", 'text,label\nfirst apple,fruit\n\n"second\nengine",car\n'
                                       '\nthird plum,fruit\n')
    assert read_all(blank).ids == ["1", "2", "3"]  # as pandas numbers them
    assert main(["predict", str(model), str(blank), "--ids", "-q"]) == 0
    assert [r.split(",")[0] for r in capsys.readouterr().out.splitlines()] == \
        ["id", "1", "2", "3"]
    # a malformed record is named by its line and record number
    bad = _write(tmp_path / "x.csv", "text,label\n\napple,fruit,extra\n")
    _error_of(capsys, main(["predict", str(model), str(bad), "-q"]), 1,
              "x.csv, line 3 (row 1): 3 fields")


def test_failed_write_of_the_output_names_it(tmp_path, capsys, monkeypatch):
    import errno

    import joblib

    from linlap.cli import main

    texts, y, data, model = _fit_small_text_model(tmp_path)
    before = model.read_bytes()

    def full_disk(obj, fh, **kwargs):
        fh.write(b"x" * 100)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(joblib, "dump", full_disk)
    line = _error_of(capsys, main(["fit", str(data), "--model", str(model), "-q",
                                   "--n-neighbors", "5"]), 1)
    assert line == f"linlap: error: {model}: No space left on device"
    assert model.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["d.csv",
                                                                            "m.model"]
    monkeypatch.undo()

    def failing_fsync(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    out = tmp_path / "p.txt"
    line = _error_of(capsys, main(["predict", str(model), str(data), "--out", str(out),
                                   "-q"]), 1)
    assert line == f"linlap: error: {out}: Input/output error"
    assert not out.exists()


# ------------------------------------------- review: top-features names, embeddings, --top

def _feature_lines(out):
    return [ln.split()[1] for ln in out.splitlines() if ln.startswith("    ")]


def test_top_features_of_a_bare_classifier_says_it_has_no_vectorizer(tmp_path, capsys):
    """A classifier saved from Python without its vectorizer: not 'an svmlight matrix'."""
    from linlap import KNNGraph, LapRLSClassifier, save
    from linlap.cli import main
    from linlap.text import make_vectorizer

    texts, y = _two_topic_texts(40)
    X = make_vectorizer(min_df=1, stop_words=None).fit_transform(texts)
    est = LapRLSClassifier(graph=KNNGraph(n_neighbors=3), unlabeled="").fit(
        X, np.where(np.arange(40) < 10, y, ""))
    save(est, tmp_path / "bare.model")
    assert main(["top-features", str(tmp_path / "bare.model"), "-n", "2"]) == 0
    out, note = capsys.readouterr()
    assert out.startswith("class ")
    assert "svmlight matrix" not in note and "has no vectorizer" in note, note
    assert "columns are shown as indices" in note
    # the indices are the columns of coef_ (0-based, as the matrix it was fit on)
    order = np.argsort(-est.coef_[0], kind="stable")
    assert [ln for ln in out.splitlines() if ln.startswith("    ")][0].endswith(
        f"feature {order[0]}")
    # predict on text: what the model expects, not how it was fit (it was 'the model was
    # fit on an svmlight matrix', of a model fit on text)
    data = _write_texts_csv(tmp_path / "d.csv", texts, y)
    line = _error_of(capsys, main(["predict", str(tmp_path / "bare.model"), str(data)]), 1,
                     "d.csv: the model has no vectorizer", "svmlight input")
    assert "fit on" not in line


def test_top_features_ranks_terms_not_embedding_dimensions(tmp_path, capsys):
    """--embedding's dense dimensions are left out of the term lists, with a note."""
    from sklearn.pipeline import Pipeline

    from linlap import KNNGraph, LapRLSClassifier, save
    from linlap.cli import main
    from linlap.text import EmbeddedTfidfVectorizer

    texts, y = _two_topic_texts(40)
    model = Pipeline([("vectorizer", EmbeddedTfidfVectorizer(
        n_components=3, min_df=1, stop_words=None, weight=5.0)),
        ("classifier", LapRLSClassifier(graph=KNNGraph(n_neighbors=3), unlabeled=""))])
    model.fit(texts, np.where(np.arange(40) < 10, y, ""))
    save(model, tmp_path / "emb.model")
    n_terms = len(model[0].vocabulary_)
    # lists as long as the vocabulary: every column the command ranks is printed
    assert main(["top-features", str(tmp_path / "emb.model"), "-n", "100"]) == 0
    out, note = capsys.readouterr()
    listed = _feature_lines(out)
    assert not [t for t in listed if t.startswith("embedding_")], out
    assert sorted(set(listed)) == sorted(model[0].vocabulary_) and len(listed) == 2 * n_terms
    assert "3 embedding dimensions" in note and "left out" in note and "scale" in note
    assert "last 3 columns of model[-1].coef_" in note


def test_top_features_top_is_the_long_form_of_n(tmp_path, capsys):
    from linlap.cli import main

    texts, y, data, model = _fit_small_text_model(tmp_path)
    capsys.readouterr()
    assert main(["top-features", str(model), "--top", "2"]) == 0
    long = capsys.readouterr().out
    assert main(["top-features", str(model), "-n", "2"]) == 0
    assert capsys.readouterr().out == long and len(_feature_lines(long)) == 4
    with pytest.raises(SystemExit) as exc:
        main(["top-features", str(model), "--top", "0"])
    assert exc.value.code == 2 and "must be >= 1" in capsys.readouterr().err
    res = run("top-features", "--help")
    assert "-n N, --top N" in res.stdout


@pytest.mark.parametrize("space, words", [("auto", "exact search in the document vectors"),
                                          ("svd", "exact search in the SVD embedding")])
def test_graph_space_option(corpus, tmp_path, space, words):
    """--graph-space reaches KNNGraph(space=...), and fit says where it searched."""
    out = tmp_path / "m.joblib"
    res = run("fit", corpus / "train.csv", "--model", out, "--text-column", "body",
              "--label-column", "topic", "--n-neighbors", 10, "--graph-space", space)
    assert res.returncode == 0, res.stderr
    assert f"graph: {words}" in res.stderr, res.stderr
    res = run("evaluate", out, corpus / "test.jsonl", "--text-column", "body",
              "--label-column", "topic")
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("vectorizer", ["tfidf", "hashing"])
def test_graph_space_svd_on_fewer_documents_or_terms_than_svd_dimensions(tmp_path, vectorizer):
    """The SVD's 50 dimensions are capped by the documents and terms, as k is."""
    data = tmp_path / "tiny.csv"
    rows = [("apple banana cherry", "a"), ("banana cherry date", "b"),
            ("apple cherry", "a"), ("date elder", "b")] + [
        (t, "") for t in ("apple date", "banana elder", "cherry date apple", "elder banana",
                          "apple banana", "date cherry", "elder apple", "banana date")]
    with open(data, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows(rows)
    res = run("fit", data, "--model", tmp_path / "m.joblib", "--graph-space", "svd",
              "--vectorizer", vectorizer, *(["--min-df", 1] if vectorizer == "tfidf" else []))
    assert res.returncode == 0, res.stderr
    assert "graph: exact search in the SVD embedding" in res.stderr


def test_graph_space_option_refuses_other_values(capsys):
    from linlap.cli import main
    with pytest.raises(SystemExit) as exc:
        main(["fit", "x.csv", "--model", "m", "--graph-space", "pca"])
    assert exc.value.code == 2
    assert "--graph-space" in capsys.readouterr().err


# ------------------------------------- review: device/FIFO outputs, a closed stderr, --model -

def _env():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_outputs_that_are_no_regular_file_are_written_in_place(tmp_path, capfd):
    """--out a FIFO, a link to one or /dev/stdout: written into, never replaced."""
    import stat

    from linlap.cli import main
    from test_persistence import _fifo_reader

    texts, y, data, model = _fit_small_text_model(tmp_path)
    assert main(["predict", str(model), str(data), "-q"]) == 0
    expected = capfd.readouterr().out.encode()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "link").symlink_to(fifo)
    for out in (fifo, tmp_path / "link"):
        received = []
        stop = _fifo_reader(fifo, received)
        code = main(["predict", str(model), str(data), "--out", str(out), "-q"])
        stop()
        assert code == 0 and received == [expected]
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    # a model needs a seekable file: a pipe is refused before the fit
    _error_of(capfd, main(["fit", str(data), "--model", str(fifo), "-q"]), 2,
              f"--model {fifo} is a pipe")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["d.csv", "fifo", "link", "m.model"]
    # /dev/stdout: on capfd's deleted temporary file (was: a new file '... (deleted)')
    capfd.readouterr()
    assert main(["predict", str(model), str(data), "--out", "/dev/stdout", "-q"]) == 0
    assert capfd.readouterr().out.encode() == expected
    # and on a pipe (was: '/proc/<pid>/fd/pipe:[…]: No such file or directory')
    res = subprocess.run([sys.executable, "-m", "linlap", "predict", str(model), str(data),
                          "--out", "/dev/stdout", "-q"], capture_output=True, env=_env(),
                         timeout=300)
    assert res.returncode == 0 and res.stdout == expected, res.stderr
    # and on a regular file the shell opened: written through, never replaced (`>> log`
    # kept its lines and `2>&1` its stderr lines: both were lost to a rename)
    log = tmp_path / "log"
    for mode, before in (("ab", b"earlier\n"), ("wb", b"")):
        log.write_bytes(b"earlier\n")
        with open(log, mode) as fh:
            res = subprocess.run([sys.executable, "-m", "linlap", "predict", str(model),
                                  str(data), "--out", "/dev/stdout"], stdout=fh,
                                 stderr=subprocess.STDOUT, env=_env(), timeout=300)
        assert res.returncode == 0
        text = log.read_bytes()
        assert text.startswith(before + expected) and b"predicted" in text[len(before):]
    assert sorted(os.listdir(tmp_path)) == ["d.csv", "fifo", "link", "log", "m.model"]


def test_a_closed_stderr_does_not_stop_fit(tmp_path):
    """`linlap fit ... 2>&1 | head -1`: progress lines, solver iterations and warnings
    that find stderr closed are dropped; the fit completes and saves (it stopped at the
    first line and exited 0 with no model)."""
    import linlap

    texts, y = _two_topic_texts(40)
    data = _write_texts_csv(tmp_path / "d.csv", texts + [""] * 3,  # empty rows: a warning
                            [c if i < 12 else "" for i, c in enumerate(y)] + [""] * 3)
    model = tmp_path / "m.model"
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        res = subprocess.run([sys.executable, "-m", "linlap", "fit", str(data), "--model",
                              str(model), "--n-neighbors", "5", "-v"], stderr=write,
                             stdout=subprocess.PIPE, env=_env(), timeout=300)
    finally:
        os.close(write)
    assert res.returncode == 0 and res.stdout == b""
    assert linlap.load(model).predict(["apple pear plum"])[0] == "fruit"


def test_broken_pipe_of_a_named_output_is_an_error(tmp_path, capsys, monkeypatch):
    """Only standard output closed by its reader (`| head`) ends a command quietly with
    status 0; a named output whose reader left (a FIFO) is an error."""
    import errno

    import linlap.cli
    from linlap.cli import main

    def reader_left(args):
        raise BrokenPipeError(errno.EPIPE, "Broken pipe", "out.fifo")

    monkeypatch.setattr(linlap.cli, "_predict", reader_left)
    _error_of(capsys, main(["predict", "m", "d.csv"]), 1, "out.fifo: Broken pipe")


def test_model_to_standard_output_is_refused(tmp_path, capsys):
    from linlap.cli import main

    for model in ("-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"):
        _error_of(capsys, main(["fit", "missing.csv", "--model", model]), 2,
                  f"--model needs a file name; '{model}' (standard output or another "
                  f"open descriptor) is not supported")
    assert not os.path.exists("-")


# ------------------------------------- review: svmlight feature spaces and markers, messages

def _svmlight_rows(n=60, seed=0):
    """``n`` rows of two classes over features 1…20 (class c: 1…5 or 6…10, plus 20)."""
    rng = np.random.RandomState(seed)
    rows = []
    for i in range(n):
        feats = {1 + j + 5 * (i % 2): 1.0 for j in rng.choice(5, 2, replace=False)}
        feats[20] = rng.rand()
        rows.append(" ".join(f"{j}:{v:.3f}" for j, v in sorted(feats.items())))
    return rows


def test_svmlight_features_beyond_the_model_are_dropped_with_a_warning(tmp_path, capsys):
    from linlap.cli import main

    rows = _svmlight_rows()
    train = _write(tmp_path / "train.svm", "".join(
        f"{(i % 2) * 2 - 1 if i < 20 else 0} {row}\n" for i, row in enumerate(rows)))
    model = tmp_path / "m.model"
    assert main(["fit", str(train), "--model", str(model), "--n-neighbors", "5", "-q"]) == 0
    assert main(["predict", str(model), str(train), "-q"]) == 0
    expected = capsys.readouterr().out
    # five nonzero entries at indices 21 and 30, beyond the model's 21 features (0…20),
    # and a zero (not counted)
    extra = {0: " 21:0.5 30:1", 1: " 21:0.5 30:2", 2: " 30:0.25", 3: " 22:0"}
    wide = _write(tmp_path / "wide.svm", "".join(
        f"{(i % 2) * 2 - 1} {row}{extra.get(i, '')}\n" for i, row in enumerate(rows)))
    assert main(["predict", str(model), str(wide), "-q"]) == 0
    out, err = capsys.readouterr()
    assert out == expected  # still dropped, like unknown words
    warnings = [ln for ln in err.splitlines() if ln.startswith("linlap: warning:")]
    assert warnings == [f"linlap: warning: {wide}: 5 nonzero entries, in 2 distinct "
                        f"feature indices (up to 30), are beyond the model's 21 features "
                        f"(indices 0 to 20) and were ignored; was the file made with "
                        f"another vectorizer or feature numbering than the model's?"]
    assert main(["evaluate", str(model), str(wide), "-q"]) == 0
    assert "beyond the model's 21 features" in capsys.readouterr().err
    # a file within the model's features: no warning
    assert main(["evaluate", str(model), str(train), "-q"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_svmlight_classes_0_1_with_unlabeled_rows_marked_minus_1(tmp_path, capsys):
    """0 is svmlight's default marker: a 0/1 file whose unlabeled rows are -1 loses its
    class 0 and gains a class -1; fit says how to read it (it said only 'only 10 of the
    60 rows are unlabeled')."""
    from linlap.cli import main

    rows = _svmlight_rows()
    data = _write(tmp_path / "d.svm", "".join(
        f"{i % 2 if i < 20 else -1} {row}\n" for i, row in enumerate(rows)))
    model = str(tmp_path / "m.model")
    assert main(["fit", str(data), "--model", model, "--n-neighbors", "5", "-q"]) == 0
    hints = [ln for ln in capsys.readouterr().err.splitlines() if "-1 is read as" in ln]
    assert hints == [f"linlap: warning: {data}: -1 is read as a class (40 rows) and only "
                     f"the 10 rows labeled 0 as unlabeled (0 is svmlight's default "
                     f"marker); pass --unlabeled-label -1 if -1 marks your unlabeled rows "
                     f"(0 is then a class)"]
    # following it: classes 0 and 1, 40 unlabeled rows, no hint
    assert main(["fit", str(data), "--model", model, "--n-neighbors", "5",
                 "--unlabeled-label", "-1"]) == 0
    err = capsys.readouterr().err
    assert "40 unlabeled" in err and "classes: 0, 1" in err and "warning" not in err
    # the SVMlight convention (-1/+1 classes, 0 unlabeled): no hint
    data = _write(tmp_path / "pm.svm", "".join(
        f"{(i % 2) * 2 - 1 if i < 20 else 0.0} {row}\n" for i, row in enumerate(rows)))
    assert main(["fit", str(data), "--model", model, "--n-neighbors", "5", "-q"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_vectorizer_errors_name_the_file_and_the_option(tmp_path, capsys):
    from linlap.cli import main

    texts, y = _two_topic_texts(30)
    data = _write_texts_csv(tmp_path / "d.csv", texts, [c if i < 10 else ""
                                                        for i, c in enumerate(y)])
    model = str(tmp_path / "m.model")
    # was scikit-learn's 'max_df corresponds to < documents than min_df'
    line = _error_of(capsys, main(["fit", str(data), "--model", model, "--min-df", "31"]), 1,
                     f"{data}: --min-df 31 is more than the 30 documents")
    assert "max_df" not in line
    # was 'empty vocabulary; perhaps the documents only contain stop words'
    stop = _write_texts_csv(tmp_path / "s.csv", ["the and of", "is the", "of and", "the is"],
                            ["a", "b", "", ""])
    _error_of(capsys, main(["fit", str(stop), "--model", model]), 1,
              f"{stop}: no term is left after the vectorizer's filtering",
              "--min-df 2", "--stop-words english", "lower --min-df or pass --stop-words none")
    # was 'After pruning, no terms remain. Try a lower min_df or a higher max_df.'
    once = _write_texts_csv(tmp_path / "o.csv", ["apple pear", "engine wheel", "plum", "gear"],
                            ["a", "b", "", ""])
    line = _error_of(capsys, main(["fit", str(once), "--model", model, "--stop-words",
                                   "none"]), 1, f"{once}: no term is left", "--min-df 2")
    assert "stop" not in line
    # hashing: no vocabulary, but no term either (was 'X has 0 non-empty rows: ...')
    line = _error_of(capsys, main(["fit", str(stop), "--model", model, "--vectorizer",
                                   "hashing"]), 1, f"{stop}: no term is left",
                     "--stop-words english", "pass --stop-words none")
    assert "--min-df" not in line  # not applied by hashing
    signs = _write_texts_csv(tmp_path / "x.csv", ["a b", "!!", "c", "? d"], ["a", "b", "", ""])
    _error_of(capsys, main(["fit", str(signs), "--model", model, "--vectorizer", "hashing",
                            "--stop-words", "none"]), 1,
              f"{signs}: no term in the documents (terms are words of two or more")
    empty = _write_texts_csv(tmp_path / "e.csv", ["", " ", "", ""], ["a", "b", "", ""])
    for vectorizer in ("tfidf", "hashing"):
        _error_of(capsys, main(["fit", str(empty), "--model", model, "--vectorizer",
                                vectorizer]), 1, f"{empty}: every document is empty")
    assert not os.path.exists(model)


def test_fit_says_when_embedding_is_capped(tmp_path, capsys):
    from linlap.cli import main

    texts, y = _two_topic_texts(30)
    data = _write_texts_csv(tmp_path / "d.csv", texts, [c if i < 10 else ""
                                                        for i, c in enumerate(y)])
    assert main(["fit", str(data), "--model", str(tmp_path / "m"), "--n-neighbors", "5",
                 "--embedding", "50"]) == 0
    line = next(ln for ln in capsys.readouterr().err.splitlines() if "vocabulary" in ln)
    assert line == ("vocabulary: 12 terms + 11 embedding dimensions (--embedding 50 capped: "
                    "at most the terms - 1)")


def test_help_states_defaults_and_arguments():
    def seed_help(*cmd):
        text = run(*cmd, "--help").stdout.split("\n  --seed SEED")[1]
        return " ".join(text.split("\n\n")[0].split("\n  -")[0].split())

    seed = seed_help("fit")
    assert "SVD" in seed and "approximate" in seed and "(default 0)" in seed, seed
    assert seed_help("demo").endswith("(default 0)")
    assert seed_help("plot", "labels").endswith("(default 0)")
    for cmd in ("predict", "evaluate"):
        res = run(cmd, "--help")
        args = res.stdout.split("positional arguments:")[1].split("options:")[0]
        assert "a model file written by linlap fit" in args
        assert len([ln for ln in args.splitlines() if ln.strip()]) > 2  # DATA's help too
    assert "Predict the labeled rows of DATA" in run("evaluate", "--help").stdout


# ------------------------------------- review: Ctrl-C at start-up, a terminal as --model,
#                                        the estimators' advice in the CLI's terms, plot's skips

@pytest.mark.skipif(os.name == "nt", reason="needs POSIX signals")
@pytest.mark.parametrize("launch", [["-m", "linlap"],  # and the console script's code:
                                    ["-c", "import sys; from linlap.cli import main; "
                                           "sys.exit(main())"]],
                         ids=["python -m linlap", "linlap"])
@pytest.mark.parametrize("module", ["numpy", "sklearn"])
def test_ctrl_c_while_the_modules_load_is_one_line_and_status_130(tmp_path, module, launch):
    """Ctrl-C in the first second of `linlap fit`, while NumPy, SciPy, scikit-learn, numba
    and linlap load: one `linlap: interrupted` line and status 130, as later (was: a
    traceback). `-X importtime` prints a line as each module is loaded, so the signal is
    sent while ``module`` is being imported, not after a guessed delay."""
    import signal

    texts, y = _two_topic_texts(40)
    data = _write_texts_csv(tmp_path / "d.csv", texts,
                            [c if i < 12 else "" for i, c in enumerate(y)])
    proc = subprocess.Popen([sys.executable, "-X", "importtime", *launch, "fit",
                             str(data), "--model", str(tmp_path / "m"), "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=_env())
    try:
        err = ""
        for line in proc.stderr:
            err += line
            # 'import time: self | cumulative | <indent>numpy.core._multiarray_umath'
            if line.rsplit("|", 1)[-1].strip().split(".")[0] == module:
                break
        else:
            pytest.fail(f"{module} was never imported:\n{err}")
        # it cannot finish while loading its modules
        assert proc.poll() is None, f"the run ended while loading {module}:\n{err}"
        proc.send_signal(signal.SIGINT)
        err += proc.communicate(timeout=300)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in err, err
    assert [ln for ln in err.splitlines() if not ln.startswith("import time:")] == [
        "linlap: interrupted"], err
    # 130; or, when the interrupt struck inside a string a module being imported runs
    # with exec() (SciPy's array-API shim does), CPython ends the process by SIGINT after
    # the handler ran: the shell's status is 130 then too
    assert proc.returncode in (130, -signal.SIGINT), proc.returncode
    assert not (tmp_path / "m").exists()


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs pseudo-terminals")
def test_model_to_a_terminal_is_refused_before_the_fit(tmp_path, capsys):
    """A terminal cannot take a model (binary, and written with seeks): refused as a
    wrong command line before any input is read (was: the whole fit, binary bytes on the
    terminal, then 'Illegal seek')."""
    from linlap.cli import main

    texts, y = _two_topic_texts(40)
    data = _write_texts_csv(tmp_path / "d.csv", texts,
                            [c if i < 12 else "" for i, c in enumerate(y)])
    master, slave = os.openpty()
    try:
        tty = os.ttyname(slave)
        (tmp_path / "link").symlink_to(tty)
        for model in (tty, str(tmp_path / "link"), "/dev/tty"):
            code = main(["fit", str(data), "--model", model])
            err = capsys.readouterr().err
            assert code == 2 and err.splitlines() == [
                f"linlap: error: --model {model} is a terminal; a model is a binary file "
                f"written with seeks: give a regular file"], err  # no step line: no work
        os.set_blocking(master, False)
        with pytest.raises(BlockingIOError):  # nothing reached the terminal
            os.read(master, 100)
    finally:
        os.close(master)
        os.close(slave)
    # another character device is still written in place
    assert main(["fit", str(data), "--model", os.devnull, "-q"]) == 0


def test_estimator_advice_is_given_in_the_options_of_linlap_fit(tmp_path, capsys):
    """The estimators' warnings and errors name their Python keywords (gamma_I='scaled',
    class_prior=None, LapSVMClassifier, unlabeled rows 'labeled -1'); `linlap fit` shows
    its options instead (sklearn's Normalizer: --normalize l2)."""
    from linlap.cli import main

    texts, y = _two_topic_texts(40)
    model = str(tmp_path / "m")
    few = _write_texts_csv(tmp_path / "few.csv", texts,
                           [c if i < 30 else "" for i, c in enumerate(y)])
    assert main(["fit", str(few), "--model", model, "--n-neighbors", "5", "-q"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "linlap: warning: only 10 of the 40 rows are unlabeled: --gamma-I scaled assumes "
        "many unlabeled documents (it was measured with 20 or more per labeled one), and "
        "with few the graph term can override the labels (predictions of one class). Fit "
        "on the unlabeled documents too (rows with an empty label; see --unlabeled-label), "
        "or pass a smaller --gamma-I (--gamma-I 0: the "
        "labels alone)."]
    # the same with EMR over several graphs (which resolves 'scaled' itself)
    assert main(["fit", str(few), "--model", model, "--n-neighbors", "5", "--power", "1,5",
                 "-q"]) == 0
    assert [line for line in capsys.readouterr().err.splitlines()
            if "rows are unlabeled" in line] == [
        "linlap: warning: only 10 of the 40 rows are unlabeled: --gamma-I scaled assumes "
        "many unlabeled documents (it was measured with 20 or more per labeled one), and "
        "with few the graph term can override the labels (predictions of one class). Fit "
        "on the unlabeled documents too (rows with an empty label; see --unlabeled-label), "
        "or pass a smaller --gamma-I (--gamma-I 0: the labels alone)."]
    labeled = _write_texts_csv(tmp_path / "all.csv", texts, y)
    for extra, expected in (
            (["--class-prior", "labeled"], "--class-prior needs unlabeled rows to constrain, "
                                           "but every row is labeled; use --class-prior none."),
            (["--estimator", "laps3vm"], "--estimator laps3vm needs unlabeled rows for its "
                                         "unlabeled loss and class balance, but every row "
                                         "is labeled; --estimator lapsvm fits labeled rows "
                                         "alone.")):
        line = _error_of(capsys, main(["fit", str(labeled), "--model", model,
                                       "--n-neighbors", "5", "-q", *extra]), 1)
        assert line == f"linlap: error: {expected}"
    one = _write_texts_csv(tmp_path / "one.csv", texts,
                           [c if i < 39 else "" for i, c in enumerate(y)])
    _error_of(capsys, main(["fit", str(one), "--model", model, "--n-neighbors", "5", "-q",
                            "--estimator", "laps3vm"]), 1,
              "--class-prior predicted estimates the class balance of the unlabeled rows")
    # svmlight rows far from unit norm: --gamma-A, and sklearn's Normalizer is --normalize
    rows = _svmlight_rows()
    data = _write(tmp_path / "big.svm", "".join(
        f"{(i % 2) * 2 - 1 if i < 20 else 0} "
        + " ".join(f"{kv.split(':')[0]}:{50 * float(kv.split(':')[1]):g}"
                   for kv in row.split()) + "\n" for i, row in enumerate(rows)))
    assert main(["fit", str(data), "--model", model, "--n-neighbors", "5", "-q"]) == 0
    norm = [ln for ln in capsys.readouterr().err.splitlines() if "norms around" in ln]
    assert len(norm) == 1 and "--gamma-A scaled was measured" in norm[0], norm
    assert norm[0].endswith("(--normalize l2) or give --gamma-A a number.")
    assert "gamma_A" not in norm[0]


def test_fit_normalize_l2_scales_svmlight_rows_in_fit_and_predict(tmp_path, capsys):
    """svmlight rows of uneven length: the row-norm warning advises --normalize l2; with
    it the model (a Normalizer, then the classifier) is the same for any scaling of the
    rows, predict scales its rows too, and top-features still names columns by index."""
    from linlap.cli import main
    from linlap.persistence import load

    rows = _svmlight_rows()
    # every other row 30 times longer: norms spread, the graph would see length
    scaled = [" ".join(f"{kv.split(':')[0]}:{(30 if i % 4 < 2 else 1) * float(kv.split(':')[1]):g}"
                       for kv in row.split()) for i, row in enumerate(rows)]

    def svm(name, body):
        return _write(tmp_path / name, "".join(
            f"{(i % 2) * 2 - 1 if i < 20 else 0} {row}\n" for i, row in enumerate(body)))

    uneven, plain = svm("uneven.svm", scaled), svm("plain.svm", rows)
    models = {}
    for name, data, extra in (("as_given", uneven, []),
                              ("uneven", uneven, ["--normalize", "l2"]),
                              ("plain", plain, ["--normalize", "l2"])):
        models[name] = str(tmp_path / f"{name}.model")
        assert main(["fit", str(data), "--model", models[name], "--n-neighbors", "5",
                     "-q", *extra]) == 0
        err = capsys.readouterr().err
        assert ("not normalised" in err) == (name == "as_given"), err
        if name == "as_given":
            assert "Pass --normalize l2 to scale the rows to unit length." in err
    a, b = load(models["uneven"]), load(models["plain"])
    assert [name for name, _ in a.steps] == ["normalizer", "classifier"]
    np.testing.assert_allclose(a[-1].coef_, b[-1].coef_, rtol=1e-6, atol=1e-9)
    outs = []
    for model, data in ((models["uneven"], uneven), (models["uneven"], plain),
                        (models["plain"], uneven)):
        assert main(["predict", model, str(data), "-q"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] == outs[2] and len(outs[0].split()) == len(rows)
    assert main(["top-features", models["uneven"], "-n", "2"]) == 0
    out, err = capsys.readouterr()
    assert "feature " in out and "x1" not in out and "has no vectorizer" in err
    # text input is TF-IDF: rows of unit length already
    texts, y = _two_topic_texts(20)
    csv = _write_texts_csv(tmp_path / "t.csv", texts, y)
    _error_of(capsys, main(["fit", str(csv), "--model", models["plain"], "--normalize",
                            "l2", "-q"]), 2, "--normalize l2 applies to svmlight input")



def test_graph_memory_error_names_the_n_neighbors_option(tmp_path, capsys, monkeypatch):
    """KNNGraph's memory check advises 'a smaller n_neighbors': --n-neighbors in fit and
    plot."""
    pytest.importorskip("matplotlib")
    import linlap._memory
    from linlap.cli import main

    texts, y = _two_topic_texts(40)
    data = _write_texts_csv(tmp_path / "d.csv", texts,
                            [c if i < 12 else "" for i, c in enumerate(y)])
    monkeypatch.setattr(linlap._memory, "available_bytes", lambda: 1000)
    for argv in (["fit", str(data), "--model", str(tmp_path / "m")],
                 ["plot", "labels", str(data), "--out", str(tmp_path / "p.png")]):
        line = _error_of(capsys, main([*argv, "--n-neighbors", "5", "-q"]), 1,
                         "Building the 5-NN graph of")
        assert line.endswith("Use a smaller --n-neighbors, or fewer rows."), line


def test_demo_refuses_a_single_label_as_a_wrong_command_line(capsys):
    """`linlap demo --n-labels 1` can draw only one class: refused as the command line
    (exit 2), before anything is read (it was refused after the draw, exit 1)."""
    from linlap.cli import main

    # known before anything is read: a wrong command line, exit 2 (was 1)
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--n-labels", "1"])
    assert exc.value.code == 2
    assert "argument --n-labels: must be >= 2, got 1" in capsys.readouterr().err


def test_plot_labels_notes_skipped_label_counts_even_with_quiet(tmp_path, capsys):
    """--quiet silences progress, not the note that the plot lacks some of the label
    counts asked for (it was a step line, dropped with -q)."""
    pytest.importorskip("matplotlib")
    from linlap.cli import main

    texts, y = _two_topic_texts(80)
    data = _write_texts_csv(tmp_path / "d.csv", texts,
                            [c if i < 40 else "" for i, c in enumerate(y)])
    png = tmp_path / "p.png"
    assert main(["plot", "labels", str(data), "--out", str(png), "--n-labels", "1,1,10,500",
                 "--n-neighbors", "5", "-q"]) == 0
    skip_1 = ("linlap: warning: skipping 1 labels: --n-labels 1: a classifier needs labels "
              "of two classes; draw at least 2")
    assert capsys.readouterr().err.splitlines() == [  # a repeated count's skip said again
        skip_1, skip_1,
        f"linlap: warning: skipping 500 labels: --n-labels 500: {data} has only 28 "
        f"labeled training documents"]
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_ctrl_c_that_an_import_turns_into_an_import_error_is_an_interruption(tmp_path):
    """A SIGINT landing while NumPy's C core imports `datetime` reaches the command as an
    ImportError (the KeyboardInterrupt replaced, not chained): still one `linlap:
    interrupted` line and status 130 (was: NumPy's install advice, a traceback, status 1).
    Deterministic: an import hook sends the signal when `datetime` is imported."""
    texts, y = _two_topic_texts(40)
    data = _write_texts_csv(tmp_path / "d.csv", texts,
                            [c if i < 12 else "" for i, c in enumerate(y)])
    script = tmp_path / "interrupt_on_datetime.py"
    script.write_text(
        "import os, signal, sys\n"
        "class Hook:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'datetime':\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "sys.meta_path.insert(0, Hook())\n"
        "from linlap.cli import main\n"
        f"sys.exit(main(['fit', {str(data)!r}, '--model', {str(tmp_path / 'm')!r}, '-q']))\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=_env(), timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines() == ["linlap: interrupted"], proc.stderr
    assert proc.returncode == 130
    assert not (tmp_path / "m").exists()


def test_spelled_messages_in_the_terms_of_linlap_fit():
    """The rewording of estimator messages for `linlap fit`: options where the command has
    them, the advice of the one message naming both gamma_A and tol as the command can
    follow it, class names left alone where they are no advice, the unlabeled marker of
    the input at hand."""
    from linlap.cli._common import _spelled
    from linlap.cli.fit import _fit_spellings

    def spelled(message, fmt="csv", marker=None, estimator="laprls"):
        with pytest.raises(ValueError) as info:
            with _spelled(_fit_spellings(fmt, marker, estimator)):
                raise ValueError(message)
        return str(info.value)

    assert spelled(
        "LapSVM finite Newton stopped making progress while CG did not reach tol=0.0001 in "
        "cg_max_iter=2 iterations; increase cg_max_iter (through LapSVMClassifier: a larger "
        "gamma_A or tol, as a small gamma_A makes CG slow).") == (
        "LapSVM finite Newton stopped making progress while CG did not reach --tol 0.0001 "
        "in cg_max_iter=2 iterations; use a larger --gamma-A or --tol (a small --gamma-A "
        "makes CG slow).")
    memory = "Fitting LapSVMClassifier on 40 rows x 12 features needs about 9 GiB"
    assert spelled(memory) == memory
    assert spelled("LapS3VMClassifier needs unlabeled rows (y == '') for its unlabeled loss "
                   "and class balance, but every row of y is labeled; LapSVMClassifier fits "
                   "labeled rows alone.") == (
        "--estimator laps3vm needs unlabeled rows for its unlabeled loss and class balance, "
        "but every row is labeled; --estimator lapsvm fits labeled rows alone.")
    few = "Fit on the unlabeled rows too (labeled -1, or your unlabeled marker), or pass"
    assert spelled(few, "svmlight", "0") == (
        "Fit on the unlabeled rows too (rows labeled 0; see --unlabeled-label), or pass")
    assert spelled(few, "csv", None) == (
        "Fit on the unlabeled rows too (rows with an empty label; see --unlabeled-label), "
        "or pass")
    assert spelled(few, "dir", None) == (
        "Fit on the unlabeled rows too (the documents of its unlabeled/ folder), or pass")
    assert spelled("gamma_I='scaled' or gamma_A=1e-3, class_prior=None") == (
        "--gamma-I scaled or --gamma-A 1e-3, --class-prior none")


def test_one_class_data_is_said_so_whatever_the_label_count(tmp_path, capsys):
    """Labels of one class only: no draw can help, so the error says that rather than
    'draw at least 2'."""
    from linlap.cli import main

    texts, _ = _two_topic_texts(80)
    data = _write_texts_csv(tmp_path / "d.csv", texts,
                            ["car" if i < 30 else "" for i in range(80)])
    for n in ("1", "4"):
        assert main(["plot", "convergence", str(data), "--out", str(tmp_path / "p.png"),
                     "--n-labels", n, "--n-neighbors", "5", "-q"]) == 1
        assert capsys.readouterr().err.splitlines() == [
            "linlap: error: every labeled document is of class 'car'; a classifier needs "
            "labels of two classes"]


# ------------------------------------------ --max-iter and --tol, the solvers' advice in them

@pytest.mark.parametrize("option, value, message", [
    ("--max-iter", "0", "must be >= 1, got 0"),
    ("--max-iter", "-5", "must be >= 1, got -5"),
    ("--max-iter", "1.5", "expected an integer, got '1.5'"),
    ("--tol", "0", "must be a number strictly between 0 and 1, got '0'"),
    ("--tol", "-1e-4", "must be a number strictly between 0 and 1, got '-1e-4'"),
    ("--tol", "1", "must be a number strictly between 0 and 1, got '1'"),
    ("--tol", "inf", "must be a number strictly between 0 and 1, got 'inf'"),
    ("--tol", "nan", "must be a number strictly between 0 and 1, got 'nan'"),
    ("--tol", "1e-320", "must be at least 2.23e-308 (the smallest normal float64), got "
                        "'1e-320'"),
    ("--tol", "small", "expected a number, got 'small'"),
])
def test_max_iter_and_tol_refuse_bad_values_before_reading(option, value, message, capsys):
    """A wrong command line (exit 2, before DATA is opened), naming the option; --tol is
    refused at 1 or more as the estimators refuse it (they would stop before their first
    step), not after the input is read."""
    from linlap.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["fit", "missing.csv", "--model", "m", f"{option}={value}"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err
    assert err.splitlines()[-1] == f"linlap fit: error: argument {option}: {message}", err


def test_fit_help_says_what_max_iter_counts_and_the_defaults(capsys):
    from linlap.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["fit", "--help"])
    out = "".join(capsys.readouterr().out.split())  # wherever the lines break

    def has(text, *fragments):
        return all("".join(f.split()) in text for f in fragments)

    max_iter = out.split("--max-iterN")[-1].split("--tolT")[0]  # the help, not the usage
    assert has(max_iter, "laprls, conjugate-gradient iterations (default 1000)",
               "lapsvm, finite Newton steps (default 50)",
               "laps3vm, finite Newton steps of each of its LapSVM solves (default 50)",
               "--gamma-I auto", "capped at N CG iterations too (laprls) or at 1000 "
                                 "(lapsvm)"), max_iter
    tol = out.split("--tolT")[-1]
    assert has(tol, "in (0, 1) (default 1e-4)", "--gamma-I auto"), tol
    args = build_parser().parse_args(["fit", "x.csv", "--model", "m"])
    assert args.max_iter is None and args.tol is None  # the estimator's own defaults


@pytest.mark.parametrize("estimator, max_iter", [("laprls", 1000), ("lapsvm", 50),
                                                 ("laps3vm", 50)])
def test_max_iter_and_tol_reach_the_estimator(tmp_path, capsys, estimator, max_iter):
    """The saved model's estimator has --max-iter and --tol; without them, its own
    defaults (what --max-iter counts differs per estimator)."""
    import linlap
    from linlap.cli import main

    texts, y = _two_topic_texts(40)
    data = _write_texts_csv(tmp_path / "d.csv", texts,
                            [c if i < 12 else "" for i, c in enumerate(y)])
    model = str(tmp_path / "m")
    common = ["fit", str(data), "--model", model, "--n-neighbors", "5", "-q",
              "--estimator", estimator]
    assert main(common) == 0
    est = linlap.load(model).steps[-1][1]
    assert (est.max_iter, est.tol) == (max_iter, 1e-4)
    assert main([*common, "--max-iter", "7", "--tol", "1e-6"]) == 0
    est = linlap.load(model).steps[-1][1]
    assert (est.max_iter, est.tol) == (7, 1e-6)


@pytest.mark.parametrize("estimator, start, end", [
    ("laprls", "linlap: warning: LapRLS conjugate gradients did not converge: relative "
               "residual ", "(--tol 0.001, and the objective rule) after 1 iterations; "
                            "increase --max-iter or loosen --tol."),
    ("lapsvm", "linlap: warning: LapSVM finite Newton did not converge in --max-iter 1 "
               "Newton steps", "; increase --max-iter."),
    ("laps3vm", "linlap: warning: S3VM annealing: some inner finite Newton solves stopped "
                "before converging", "; increase --max-iter, or use a larger --gamma-A or "
                                     "--tol (a small --gamma-A makes CG slow)."),
])
def test_fit_stopped_by_max_iter_advises_the_options(tmp_path, capsys, estimator, start,
                                                     end):
    """The solvers advise 'increase max_iter or loosen tol' (tol=0.001, max_iter=1):
    `linlap fit` names --max-iter and --tol, the options that set them; the S³VM's
    advice to raise cg_max_iter (no option) as the options that help."""
    from linlap.cli import main

    texts, y = _two_topic_texts(40)
    data = _write_texts_csv(tmp_path / "d.csv", texts,
                            [c if i < 12 else "" for i, c in enumerate(y)])
    assert main(["fit", str(data), "--model", str(tmp_path / "m"), "--n-neighbors", "5",
                 "-q", "--estimator", estimator, "--max-iter", "1", "--tol", "1e-3"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(start) and lines[0].endswith(end), lines
    assert "max_iter" not in lines[0] and "tol=" not in lines[0]


def test_lapsvm_auto_cross_validation_advice_does_not_offer_max_iter(tmp_path, capsys,
                                                                     monkeypatch):
    """With --estimator lapsvm --gamma-I auto the cross-validation's LapRLS fits stop at
    their own CG cap, which --max-iter (Newton steps) does not set: their warning advises
    --tol only, and says why. (The cap, 1000, is lowered to 1 here to reach it.)"""
    from linlap.cli import main
    from linlap.estimators import LapSVMClassifier

    texts, y = _two_topic_texts(40)
    data = _write_texts_csv(tmp_path / "d.csv", texts,
                            [c if i < 12 else "" for i, c in enumerate(y)])
    monkeypatch.setattr(LapSVMClassifier, "_auto_gamma_I_max_iter", 1)
    argv = ["fit", str(data), "--model", str(tmp_path / "m"), "--n-neighbors", "5", "-q",
            "--gamma-I", "auto"]
    assert main([*argv, "--estimator", "lapsvm"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(
        ln.startswith("linlap: warning: LapRLS conjugate gradients did not converge")
        and ln.endswith("after 1 iterations; loosen --tol (with --estimator lapsvm, "
                        "--max-iter counts Newton steps, not the CG iterations of the LapRLS "
                        "fits of --gamma-I auto's cross-validation).") for ln in lines), lines
    # laprls: --max-iter is that cap, and advised as such
    assert main([*argv, "--max-iter", "1"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(ln.endswith("; increase --max-iter or loosen --tol.")
                         for ln in lines), lines


def test_spelled_max_iter_and_tol_in_the_terms_of_linlap_fit():
    """max_iter and tol become --max-iter and --tol wherever the solvers name them, with
    their values (``tol=1e-06`` → ``--tol 1e-06``); cg_max_iter, inner_tol and the like
    stay whole."""
    from linlap.cli._common import _spelled
    from linlap.cli.fit import _fit_spellings

    def spelled(message, estimator="laprls"):
        with pytest.raises(ValueError) as info:
            with _spelled(_fit_spellings("csv", None, estimator)):
                raise ValueError(message)
        return str(info.value)

    assert spelled("LapRLS conjugate gradients did not converge: relative residual 0.01 "
                   "(tol=1e-06, and the objective rule) after 1000 iterations; increase "
                   "max_iter or loosen tol.") == (
        "LapRLS conjugate gradients did not converge: relative residual 0.01 (--tol 1e-06, "
        "and the objective rule) after 1000 iterations; increase --max-iter or loosen "
        "--tol.")
    assert spelled("residual 0.2 > tol=0.0001 after max_iter=1000 iterations; increase "
                   "max_iter or loosen tol.") == (
        "residual 0.2 > --tol 0.0001 after --max-iter 1000 iterations; increase --max-iter "
        "or loosen --tol.")
    assert spelled("S3VM annealing: some inner finite Newton solves stopped before "
                   "converging; increase max_iter or cg_max_iter.") == (
        "S3VM annealing: some inner finite Newton solves stopped before converging; "
        "increase --max-iter, or use a larger --gamma-A or --tol (a small --gamma-A makes "
        "CG slow).")
    kept = "cg_max_iter=1000 and inner_tol=0.01, qp_tol"
    assert spelled(kept) == kept
    # the LapRLS CG of lapsvm is the --gamma-I auto cross-validation's, not --max-iter's
    assert spelled("LapRLS conjugate gradients did not converge: relative residual 0.5 "
                   "(tol=0.0001, and the objective rule) after 1000 iterations; increase "
                   "max_iter or loosen tol.", "lapsvm").endswith(
        "(--tol 0.0001, and the objective rule) after 1000 iterations; loosen --tol (with "
        "--estimator lapsvm, --max-iter counts Newton steps, not the CG iterations of the "
        "LapRLS fits of --gamma-I auto's cross-validation).")


# ------------------------- candidate graphs: lists of --n-neighbors / --power (EMRClassifier)

def _emr_data(tmp_path, n=40, n_labeled=12):
    """A small two-topic CSV, its texts and its labels ('' = unlabeled) as fit reads them."""
    texts, y = _two_topic_texts(n)
    labels = np.array([c if i < n_labeled else "" for i, c in enumerate(y)], dtype=object)
    return _write_texts_csv(tmp_path / "d.csv", texts, labels), texts, labels


def test_one_value_each_fits_the_single_graph_estimator_as_before(tmp_path, capsys):
    """--n-neighbors 5 --power 3 (one value each, parsed as lists now): the estimator
    itself on the one graph, the same coefficients as a direct fit, no EMR."""
    from sklearn.base import clone

    import linlap
    from linlap import LapRLSClassifier
    from linlap.cli import main
    from linlap.estimators._base import default_graph

    data, texts, y = _emr_data(tmp_path)
    model = str(tmp_path / "m")
    assert main(["fit", str(data), "--model", model, "--n-neighbors", "5", "--power", "3"]) == 0
    err = capsys.readouterr().err
    assert "solving (laprls)…" in err and "EMR" not in err and "graph weights" not in err
    m = linlap.load(model)
    est = m[-1]
    assert type(est) is LapRLSClassifier
    assert (est.graph.n_neighbors, est.graph.power) == (5, 3)
    X = clone(m[0]).fit_transform(texts)  # as fit vectorized them
    direct = LapRLSClassifier(graph=default_graph(X, random_state=0, n_neighbors=5, power=3),
                              unlabeled="").fit(X, y)
    np.testing.assert_array_equal(est.coef_, direct.coef_)
    np.testing.assert_array_equal(est.intercept_, direct.intercept_)


@pytest.mark.parametrize("extra, estimator, candidates, gamma_R", [
    (["--n-neighbors", "5", "--power", "1,5"], "laprls", {"power": [1, 5]}, "auto"),
    (["--n-neighbors", "3,6", "--power", "2", "--estimator", "lapsvm", "--gamma-R", "0.05"],
     "lapsvm", {"n_neighbors": [3, 6]}, 0.05),
])
def test_candidate_graphs_fit_emr_as_a_direct_fit_would(tmp_path, capsys, extra, estimator,
                                                        candidates, gamma_R):
    """Several values: EMRClassifier over the base estimator, its candidates the options
    given several values, one search at the largest k; the same μ and coefficients as
    EMRClassifier fit directly on the same matrix and graph, the weights printed per
    candidate; the file keeps no graph."""
    from sklearn.base import clone

    import linlap
    from linlap import EMRClassifier, LapRLSClassifier, LapSVMClassifier
    from linlap.cli import main
    from linlap.estimators._base import default_graph

    data, texts, y = _emr_data(tmp_path)
    model = str(tmp_path / "m")
    assert main(["fit", str(data), "--model", model, *extra]) == 0
    err = capsys.readouterr().err
    m = linlap.load(model)
    emr = m[-1]
    assert type(emr) is EMRClassifier
    assert emr.candidates == candidates and emr.gamma_R == gamma_R
    assert type(emr.estimator_) is {"laprls": LapRLSClassifier,
                                    "lapsvm": LapSVMClassifier}[estimator]
    assert emr.mu_.shape == (2,) and abs(emr.mu_.sum() - 1) < 1e-12 and np.all(emr.mu_ >= 0)
    # linlap.save kept the graphs' parameters, not the graphs
    assert emr.graphs_ is None and emr.graph_ is None and emr.estimator_.graph_ is None
    assert emr.estimator.graph is None and not hasattr(emr.graph, "adjacency_")
    assert emr.graph.n_neighbors == max(candidates.get("n_neighbors", [5]))
    X = clone(m[0]).fit_transform(texts)  # as fit vectorized them
    base = {"laprls": LapRLSClassifier, "lapsvm": LapSVMClassifier}[estimator]
    graph = default_graph(X, random_state=0, n_neighbors=emr.graph.n_neighbors,
                          power=int(extra[extra.index("--power") + 1].split(",")[0])).fit(X)
    direct = EMRClassifier(base(unlabeled=""), candidates=candidates, graph=graph,
                           gamma_R=gamma_R).fit(X, y)
    np.testing.assert_allclose(emr.mu_, direct.mu_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(emr.coef_, direct.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(emr.intercept_, direct.intercept_, rtol=1e-10, atol=1e-12)
    assert f"solving ({estimator}, EMR over 2 graphs)…" in err
    assert f"EMR: {direct.n_iter_} {estimator} fits, gamma_A = " in err
    shown = ", ".join(f"k={k} p={p}: {mu:.2f}" for (k, p), mu in zip(
        [(g.n_neighbors, g.power) for g in direct.graphs_], direct.mu_))
    assert f"graph weights: {shown}\n" in err, err
    # -q: no summary
    assert main(["fit", str(data), "--model", model, *extra, "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_emr_model_predicts_evaluates_and_lists_top_features(tmp_path):
    """The saved EMR model works with the commands that read models: predict (labels and
    decision values as the loaded model gives them), evaluate and top-features."""
    import linlap

    data, texts, y = _emr_data(tmp_path)
    model = tmp_path / "emr.model"
    res = run("fit", data, "--model", model, "--power", "1,2,5", "--n-neighbors", "4,8", "-q")
    assert res.returncode == 0 and res.stderr == "", res.stderr
    m = linlap.load(model)
    assert m[-1].mu_.shape == (6,)
    res = run("predict", model, data, "--decision-values", "-q")
    assert res.returncode == 0, res.stderr
    rows = list(csv.reader(res.stdout.splitlines()))
    assert rows[0] == ["prediction", "decision_fruit"]
    assert [r[0] for r in rows[1:]] == list(m.predict(texts))
    np.testing.assert_allclose([float(r[1]) for r in rows[1:]], m.decision_function(texts),
                               rtol=1e-6, atol=1e-9)
    res = run("evaluate", model, data, "-q")
    assert res.returncode == 0, res.stderr
    assert "12 labeled documents" in res.stdout and "accuracy  1.0000" in res.stdout
    res = run("top-features", model, "-n", 2)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("class fruit (positive weights")
    fruit = {"apple", "pear", "plum", "cherry", "grape", "melon"}
    highest = res.stdout.split("highest:\n")[1].split("lowest:")[0].split()[1::2]
    assert len(highest) == 2 and set(highest) <= fruit, res.stdout


def test_candidate_k_equal_once_capped_are_merged_with_a_warning(tmp_path, capsys):
    """On 40 documents k is capped at 39: --n-neighbors 39,50 leaves one k, said in a
    warning; the grid is the rest (two powers at k = 39, not four candidates)."""
    import linlap
    from linlap.cli import main

    data, _, _ = _emr_data(tmp_path)
    model = str(tmp_path / "m")
    assert main(["fit", str(data), "--model", model, "--n-neighbors", "39,50", "--power",
                 "1,2", "-q"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "linlap: warning: --n-neighbors 39,50: each value is capped at 39 (the non-empty "
        "documents - 1), which makes some equal: the candidate graphs have k = 39"]
    emr = linlap.load(model)[-1]
    assert emr.candidates == {"power": [1, 2]}
    assert emr.mu_.shape == (2,) and emr.graph.n_neighbors == 39
    # one k left and one power: the single graph (was EMR "over 1 graphs")
    assert main(["fit", str(data), "--model", model, "--n-neighbors", "39,50", "--gamma-R",
                 "1", "-q"]) == 0
    assert capsys.readouterr().err.splitlines()[1:] == [
        "linlap: warning: one candidate graph is left (k = 39): fitting the single graph; "
        "--gamma-R does not apply"]
    single = linlap.load(model)[-1]
    assert type(single).__name__ == "LapRLSClassifier" and single.graph.n_neighbors == 39
    # values the cap keeps apart: no warning
    assert main(["fit", str(data), "--model", model, "--n-neighbors", "10,50", "-q"]) == 0
    assert capsys.readouterr().err == ""
    assert linlap.load(model)[-1].candidates == {"n_neighbors": [10, 39]}


@pytest.mark.parametrize("extra, fragment", [
    (["--power", "1,5", "--estimator", "laps3vm"],
     "--power 1,5: candidate graphs (EMRClassifier) take --estimator laprls or lapsvm, not "
     "laps3vm"),
    (["--n-neighbors", "5,10", "--estimator", "laps3vm"], "--n-neighbors 5,10: candidate"),
    (["--gamma-R", "1"], "--gamma-R weighs candidate graphs: it needs several "
                         "--n-neighbors or --power values"),
    (["--power", "2", "--n-neighbors", "5", "--gamma-R", "auto"], "--gamma-R weighs"),
    (["--power", "1,5", "--gamma-I", "auto"],
     "--power 1,5: --gamma-I auto is not available with candidate graphs"),
    (["--power", "1,5", "--gamma-I", "0"],
     "--power 1,5: --gamma-I 0 leaves no graph term for the candidate graphs' weights"),
    (["--power", "2,101"], "--power 101: the largest power is 100"),
    (["--power", "101"], "--power 101: the largest power is 100"),
])
def test_candidate_graph_option_conflicts_exit_2_before_reading(extra, fragment, capsys):
    from linlap.cli import main

    assert main(["fit", "missing.csv", "--model", "m", *extra]) == 2  # never opened
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("linlap: error:") and fragment in err[0], err


@pytest.mark.parametrize("option, value, message", [
    ("--power", "1,1", "each value may be given once, got 1 more than once in '1,1'"),
    ("--n-neighbors", "5,10,5,10", "each value may be given once, got 5, 10 more than once "
                                   "in '5,10,5,10'"),
    ("--power", "1,0", "must be >= 1, got 0"),
    ("--n-neighbors", "0,5", "must be >= 1, got 0"),
    ("--power", "1,,2", "expected an integer, got ''"),
    ("--n-neighbors", "5,", "expected an integer, got ''"),
    ("--power", "1,2.5", "expected an integer, got '2.5'"),
    ("--gamma-R", "-1", "must be a finite number >= 0, got '-1'"),
    ("--gamma-R", "scaled", "expected a number or 'auto', got 'scaled'"),
])
def test_bad_candidate_values_are_usage_errors(option, value, message, capsys):
    from linlap.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["fit", "missing.csv", "--model", "m", f"{option}={value}"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err
    assert err.splitlines()[-1] == f"linlap fit: error: argument {option}: {message}", err


def test_emr_warnings_in_the_terms_of_linlap_fit():
    """EMR's warning names its own max_iter and tol (no option sets them) and its base
    estimator's (--max-iter, --tol): its own are not spelled as the options. The
    message is EMRClassifier's own, so a change of its wording fails here."""
    import warnings

    from linlap import EMRClassifier, LapRLSClassifier
    from linlap.cli._common import _spelled
    from linlap.cli.fit import _fit_spellings
    from linlap.estimators._base import default_graph
    from linlap.text import make_vectorizer

    texts, y = _two_topic_texts(40)
    y = np.array([c if i < 12 else "" for i, c in enumerate(y)], dtype=object)
    X = make_vectorizer().fit_transform(texts)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # the first f step stops at the base's cap, EMR at its own: both problems
        EMRClassifier(LapRLSClassifier(unlabeled="", max_iter=1), candidates={"power": [1, 5]},
                      graph=default_graph(X, n_neighbors=5), max_iter=2).fit(X, y)
    emr = [str(w.message) for w in caught if str(w.message).startswith("EMR:")]
    assert len(emr) == 1, [str(w.message) for w in caught]
    with pytest.raises(ValueError) as info:
        with _spelled(_fit_spellings("csv", None, "laprls", emr=True)):
            raise ValueError(emr[0])
    text = str(info.value)
    assert ("did not converge to their tolerance 0.01 (min(10 x --tol, 0.001); the first "
            "0.01) within --max-iter 1: increase --max-iter; it stopped at its cap of 2 "
            "fits before its rule (a relative decrease below 0.001) was met (linlap fit has "
            "no option for that cap: fit EMRClassifier from Python to raise it)") in text, text
    assert "max_iter" not in text and "tol=" not in text, text
    # without emr, EMR's cap would read as --max-iter: the reason for its spellings
    with pytest.raises(ValueError) as info:
        with _spelled(_fit_spellings("csv", None, "laprls")):
            raise ValueError(emr[0])
    assert "it stopped at --max-iter 2" in str(info.value)
