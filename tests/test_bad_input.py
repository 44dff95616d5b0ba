"""Awkward and bad input: empty documents, label markers of every dtype, extreme values,
interrupted saves, malformed files — each gets the documented behaviour."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import linlap
from linlap import (KernelLapRLSClassifier, KNNGraph, LapRLSClassifier, LapRLSClassifierCV,
                    LapSVMClassifier)
from linlap._memory import check_memory
from reference import blobs, dense_solution


def semi(y, n_labeled, seed=0):
    rng = np.random.default_rng(seed)
    out = np.full(y.size, -1)
    for c in np.unique(y):  # at least one label per class
        out[rng.choice(np.flatnonzero(y == c))] = c
    rest = np.flatnonzero(out == -1)
    extra = rng.choice(rest, n_labeled - np.unique(y).size, replace=False)
    out[extra] = y[extra]
    return out


def with_empty_rows(X, rows):
    X = X.tolil()
    for i in rows:
        X[i, :] = 0
    return X.tocsr()


# -- empty documents ----------------------------------------------------------------------

@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("Est", [LapRLSClassifier, LapSVMClassifier])
def test_empty_documents_are_isolated_and_get_the_intercept(Est, sparse):
    X, y = blobs(seed=21)
    y_semi = semi(y, 12)
    lab = np.flatnonzero(y_semi != -1)
    empty = [int(lab[0]), 5, 17]  # one labeled empty document, two unlabeled
    Xe = with_empty_rows(X, empty)
    Xe = Xe if sparse else Xe.toarray()
    with pytest.warns(UserWarning, match="3 of 60 rows of X are empty"):
        clf = Est(graph=KNNGraph(n_neighbors=5, power=2), tol=1e-10).fit(Xe, y_semi)
    assert clf.graph_.n_empty_ == 3
    F = clf.decision_function(Xe)
    np.testing.assert_allclose(F[empty], clf.intercept_[0], atol=1e-12)
    assert np.all(np.isfinite(F)) and set(clf.predict(Xe)) <= set(clf.classes_)
    if Est is LapRLSClassifier:
        # the labeled empty row still counts in the loss: the dense reference minimiser
        # of the objective, with its empty row and isolated nodes, is what the fit found
        g = clf.graph_
        Xd = Xe.toarray() if sparse else Xe
        T = np.where(y_semi[lab] == 1, 1.0, -1.0)[:, None]
        ref = dense_solution(Xd, g.laplacian_matrix().toarray(), lab, T, clf.gamma_A_,
                             clf.gamma_I_, g.scale_)
        np.testing.assert_allclose(clf.coef_[0], ref[:-1, 0], rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(clf.intercept_[0], ref[-1, 0], rtol=1e-5, atol=1e-7)


def test_empty_documents_default_graph_and_kernel_mode():
    X, y = blobs(seed=22, n=7)
    y_semi = semi(y, 4)
    Xe = with_empty_rows(X, [2, 5])
    with pytest.warns(UserWarning, match="2 of 7 rows of X are empty"):
        clf = LapRLSClassifier().fit(Xe, y_semi)  # default graph: k from the 5 documents
    assert clf.graph_.n_neighbors == 4
    with pytest.warns(UserWarning, match="empty"):
        kern = KernelLapRLSClassifier(graph=KNNGraph(n_neighbors=3)).fit(Xe, y_semi)
    assert np.all(np.isfinite(kern.decision_function(Xe)))
    # fewer than two documents with a nonzero entry: a clear error
    with pytest.raises(ValueError, match="non-empty rows"):
        LapRLSClassifier().fit(with_empty_rows(X, range(1, 7)), y_semi)


def test_cli_fit_with_empty_and_stop_word_texts(tmp_path):
    rng = np.random.default_rng(0)
    words = {"a": ["apple", "pear", "plum", "fig"], "b": ["disk", "chip", "port", "card"]}
    rows = []
    for i in range(60):
        label = "ab"[i % 2]
        text = " ".join(rng.choice(words[label], 6))
        rows.append((text, label if i < 10 else ""))
    rows += [("", ""), ("the and of a", ""), ("", "a"), ("it is", "b")]
    train = tmp_path / "train.csv"
    with open(train, "w") as fh:
        fh.write("text,label\n" + "".join(f"{t},{lab}\n" for t, lab in rows))
    model = tmp_path / "m.joblib"

    def run(*args):
        return subprocess.run([sys.executable, "-m", "linlap", *map(str, args)],
                              capture_output=True, text=True)

    res = run("fit", train, "--model", model, "--n-neighbors", "5", "-q")
    assert res.returncode == 0, res.stderr
    res = run("predict", model, train, "--out", tmp_path / "pred.txt", "-q")
    assert res.returncode == 0, res.stderr
    pred = (tmp_path / "pred.txt").read_text().split()
    assert len(pred) == len(rows) and set(pred) <= {"a", "b"}


# -- label markers --------------------------------------------------------------------------

def test_cv_leaves_y_and_its_dtype_alone():
    X, y = blobs(seed=23, n=60)
    names = np.array(["neg", "pos"])[y]  # fully labeled, dtype <U3
    kw = dict(gamma_A=[1e-3, 1e-1], gamma_I=[1.0, 10.0], cv=2, method="warm")
    # the folds mark their held-out rows 'unknown': a <U3 copy of y would hold 'unk',
    # a third class; the reference is the same labels in an object array
    ref = LapRLSClassifierCV(unlabeled="unknown", **kw).fit(X, names.astype(object))
    before = names.copy()
    clf = LapRLSClassifierCV(unlabeled="unknown", **kw).fit(X, names)
    np.testing.assert_array_equal(names, before)
    assert list(clf.classes_) == ["neg", "pos"]
    np.testing.assert_allclose(clf.cv_results_["mean_test_score"],
                               ref.cv_results_["mean_test_score"])
    np.testing.assert_allclose(clf.coef_, ref.coef_)
    # fully labeled uint8 y: the held-out rows of each fold are marked without overflow
    clf = LapRLSClassifierCV(**kw).fit(X, y.astype(np.uint8))
    assert clf.classes_.dtype == np.uint8 and np.all(np.isfinite(clf.coef_))


@pytest.mark.parametrize("Est", [LapRLSClassifier, LapSVMClassifier, KernelLapRLSClassifier])
def test_string_labels_need_a_named_marker(Est):
    X, y = blobs(seed=24)
    names = np.array(["ant", "bee"])[y]
    y_semi = np.where(semi(y, 10) == -1, "", names)
    for yy in (y_semi, y_semi.astype(object)):
        with pytest.raises(ValueError, match=r"string labels.*unlabeled=''"):
            Est().fit(X, yy)
    assert list(Est(unlabeled="").fit(X, y_semi).classes_) == ["ant", "bee"]


@pytest.mark.parametrize("Est", [LapRLSClassifier, LapSVMClassifier])
def test_nan_marker_works_for_float_and_object_y(Est):
    X, y = blobs(seed=25)
    y_semi = semi(y, 10)
    ref = Est().fit(X, y_semi)
    y_nan = np.where(y_semi == -1, np.nan, y_semi.astype(float))
    clf = Est(unlabeled=np.nan).fit(X, y_nan)
    np.testing.assert_allclose(clf.coef_, ref.coef_)
    assert list(clf.classes_) == [0.0, 1.0]
    y_obj = np.array([None if v == -1 else ["x", "z"][v] for v in y_semi], dtype=object)
    y_obj[y_obj == None] = np.nan  # noqa: E711
    clf = Est(unlabeled=np.nan).fit(X, y_obj)
    np.testing.assert_allclose(clf.coef_, ref.coef_)
    with pytest.raises(ValueError, match="unlabeled=nan"):
        Est(unlabeled=np.nan).fit(X, y_semi)  # int y cannot hold NaN
    with pytest.raises(ValueError, match="NaN or infinite labels"):
        Est().fit(X, y_nan)  # NaN labels that are not the marker


def test_fully_labeled_plus_minus_one_names_the_marker():
    X, y = blobs(seed=26)
    with pytest.raises(ValueError, match=r"single class.*equal to -1 are unlabeled rows"):
        LapRLSClassifier().fit(X, np.where(y == 1, 1, -1))


def test_cv_warns_when_it_uses_fewer_folds():
    X, y = blobs(seed=27)
    y_semi = np.full(y.size, -1)
    for c, count in ((0, 3), (1, 5)):  # the smaller class has 3 labeled rows
        rows = np.flatnonzero(y == c)[:count]
        y_semi[rows] = c
    with pytest.warns(UserWarning, match=r"only 3 labeled rows, fewer than cv=10: using 3 "):
        LapRLSClassifierCV(gamma_A=[1e-2], gamma_I=[1.0], cv=10).fit(X, y_semi)


# -- extreme values, malformed files, interrupted saves, memory messages ---------------------

@pytest.mark.parametrize("Est", [LapRLSClassifier, LapSVMClassifier, KernelLapRLSClassifier])
def test_extreme_values_raise(Est):
    X, y = blobs(seed=28)
    with pytest.raises(ValueError, match="extreme values"):
        Est().fit(X * 1e80, semi(y, 10))
    clf = Est().fit(X * 1e10, semi(y, 10))  # large but harmless
    assert np.all(np.isfinite(clf.decision_function(X * 1e10)))


@pytest.mark.parametrize("label", ['["a"]', '{"x": 1}'])
def test_jsonl_label_that_is_not_a_value(tmp_path, label):
    path = tmp_path / "d.jsonl"
    lines = [json.dumps({"text": "apple pear", "label": "a"}),
             '{"text": "disk chip", "label": ' + label + '}']
    path.write_text("\n".join(lines) + "\n")
    from linlap.io import iter_batches

    with pytest.raises(ValueError, match=r"d\.jsonl, line 2: field 'label' is a JSON"):
        list(iter_batches(path))


def test_next_save_removes_temp_files_of_killed_saves(tmp_path):
    X, y = blobs(seed=29)
    clf = LapRLSClassifier().fit(X, semi(y, 10))
    path = tmp_path / "model.joblib"
    script = ("import os, signal, joblib, linlap\n"
              "def die(*a, **k): os.kill(os.getpid(), signal.SIGKILL)\n"
              "joblib.dump = die\n"
              f"linlap.save(object(), {str(path)!r})\n")
    subprocess.run([sys.executable, "-c", script])
    stale = [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    assert len(stale) == 1  # the killed save left its temporary file
    linlap.save(clf, path)  # removed only once an hour old (a live writer's may be recent)
    assert os.path.exists(tmp_path / stale[0])
    an_hour_ago = os.path.getmtime(tmp_path / stale[0]) - 3700
    os.utime(tmp_path / stale[0], (an_hour_ago, an_hour_ago))
    foreign = tmp_path / "notes.tmp"
    foreign.write_text("not ours")
    linlap.save(clf, path)
    assert sorted(os.listdir(tmp_path)) == ["model.joblib", "notes.tmp"]
    np.testing.assert_allclose(linlap.load(path).coef_, clf.coef_)


def test_memory_error_shows_digits_that_differ(monkeypatch):
    import linlap._memory as memory

    monkeypatch.setattr(memory, "available_bytes", lambda: 1_010_000_000)
    with pytest.raises(MemoryError) as err:
        check_memory(1_020_000_000, "A step")
    msg = str(err.value)
    assert "needs about 0.95 GiB but only 0.941 GiB" in msg
    assert "(1,020,000,000 and 1,010,000,000 bytes)" in msg


# -- duplicate documents ------------------------------------------------------------------------

def test_many_copies_of_a_labeled_document_under_the_normalised_laplacian():
    """Documented behaviour (KNNGraph, "Duplicates"): copies of one document have the same
    f but, in the normalised Laplacian, unequal degrees, so s fᵀL^pf penalises any f ≠ 0
    on them; many copies pull the labeled document's decision value towards 0. D − W has
    the constants in its null space and keeps it."""
    X, y = blobs(seed=30, n=80)
    y_semi = semi(y, 10)
    i = int(np.flatnonzero(y_semi != -1)[0])
    Xd = sp.vstack([X] + [X[i]] * 40).tocsr()
    yd = np.r_[y_semi, np.full(40, -1)]
    f = {}
    for normalized in (True, False):
        g = KNNGraph(n_neighbors=10, normalized=normalized, power=2)
        clf = LapRLSClassifier(gamma_I=10.0, graph=g).fit(Xd, yd)
        F = clf.decision_function(Xd)
        np.testing.assert_allclose(F[-40:], F[i])  # the copies share one decision value
        f[normalized] = abs(F[i])
    assert f[True] < 0.5 * f[False]
