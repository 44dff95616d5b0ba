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
    # only tiny values: sums of squares underflow, the linear fit would be the zero model
    # (the kernel classifiers scale K: test_rows_too_small_for_float64)
    if Est is not KernelLapRLSClassifier:
        with pytest.raises(ValueError, match="only tiny values"):
            Est().fit(X * 1e-170, semi(y, 10))
    clf = Est().fit(X * 1e-90, semi(y, 10))  # small: fitted (the ridge weighs 1e180× more)
    assert np.all(np.isfinite(clf.decision_function(X * 1e-90)))


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


# -- argument checks of the solvers and estimators ------------------------------------------

def _solver_problem():
    """30 rows × 6 features, 8 labeled (both classes), a random Laplacian; X with its
    unlabeled rows emptied (their mean is 0); the Gram matrix; a path reduction."""
    from linlap.gram import kernel_matrix
    from linlap.solvers.path import path_reduction
    from reference import random_design, random_laplacian

    rng = np.random.default_rng(0)
    n = 30
    X = random_design(n, 6, rng, density=0.6)
    L = random_laplacian(n, rng)
    s = 1 / np.trace(L)
    lab, U = np.arange(8), np.arange(8, n)
    Xz = X.tolil()
    Xz[8:] = 0
    K = kernel_matrix(X, gamma=0.5)
    P = dict(n=n, X=X, Xz=Xz.tocsr(), Lmv=lambda F: L @ F, s=s, lab=lab, U=U,
             T=np.where(lab % 2 == 0, 1.0, -1.0), K=K, Kmv=lambda V: K @ V,
             kw=dict(gamma_A=1e-2, gamma_I=0.5, scale=s))
    P["red"] = path_reduction(X, lab, P["Lmv"], s, rho=0.1)
    return P


def _laprls(P, targets=None, laplacian_matvec="graph", **kw):
    from linlap.solvers.laprls import laprls_linear
    lmv = P["Lmv"] if laplacian_matvec == "graph" else laplacian_matvec
    return laprls_linear(P["X"], P["T"] if targets is None else targets, P["lab"], lmv,
                         **{**P["kw"], **kw})


def _s3vm_objective(P):
    from linlap.solvers.s3vm import s3vm_objective
    return s3vm_objective(P["X"], P["T"], P["lab"], P["U"], P["Lmv"], np.zeros(6), 0.0,
                          gamma_U=1.0, **P["kw"])


def _newton(P, **kw):
    from linlap.solvers.lapsvm_newton import lapsvm_newton
    args = {"X": P["X"], "targets": P["T"], "labeled_rows": P["lab"], **kw}
    return lapsvm_newton(args.pop("X"), args.pop("targets"), args.pop("labeled_rows"),
                         P["Lmv"], **{**P["kw"], **args})


def _dual(P, targets=None, **kw):
    from linlap.solvers.kernel_dual import kernel_lapsvm_dual
    lmv = kw.pop("laplacian_matvec", P["Lmv"])
    return kernel_lapsvm_dual(P["Kmv"], P["T"] if targets is None else targets, P["lab"], lmv,
                              n_samples=P["n"], **{**P["kw"], **kw})


def _pcg(P, targets=None, **kw):
    from linlap.solvers.kernel_pcg import kernel_pcg
    return kernel_pcg(P["Kmv"], P["T"] if targets is None else targets, P["lab"], P["Lmv"],
                      n_samples=P["n"], **{**P["kw"], **kw})


def _reduction(P, X=None, scale=None, **kw):
    from linlap.solvers.path import path_reduction
    kw.setdefault("rho", 0.1)
    return path_reduction(P["X"] if X is None else X, P["lab"], P["Lmv"],
                          P["s"] if scale is None else scale, **kw)


def _s3vm(P, solver="annealing", unlabeled=None, **kw):
    from linlap.solvers.s3vm import s3vm_annealing, s3vm_switching
    kw = {"gamma_U": 1.0, "positive_fraction": 0.5, **P["kw"], **kw}
    fn = s3vm_annealing if solver == "annealing" else s3vm_switching
    return fn(P["X"], P["T"], P["lab"], P["U"] if unlabeled is None else unlabeled, P["Lmv"],
              **kw)


def _emr(m=2, **kw):
    from linlap.solvers.emr import emr_alternate
    return emr_alternate(lambda mu, previous, final: (None, 0.0), lambda r: np.zeros(m), m,
                         **kw)


def _follow_one_class(P):
    from linlap.solvers.path import follow_path
    return follow_path(np.eye(4), np.ones(4), free_bias=True)


def _path_targets(P, t):
    from linlap.solvers.path import path_for_targets
    return path_for_targets(P["red"], t)


def _update_mu(s, **kw):
    from linlap.solvers.emr import update_mu
    return update_mu(s, 1.0, **kw)


def _grid(P, **kw):
    from linlap.solvers.grid import laprls_grid
    kw = {"gamma_A": [1e-2], "gamma_I": [1.0], "scale": P["s"], **kw}
    return laprls_grid(P["X"], P["T"], P["lab"], P["Lmv"], **kw)


def _gram(X):
    from linlap.gram import kernel_matrix
    return kernel_matrix(X)


SOLVER_ERRORS = [
    # laprls_linear's own checks
    pytest.param(lambda P: _laprls(P, gamma_A=0.0, gamma_I=0.0),
                 r"gamma_A and gamma_I cannot both be 0\.", id="laprls-both-weights-0"),
    pytest.param(lambda P: _laprls(P, laplacian_matvec=None),
                 r"laplacian_matvec must be a callable F -> L\^p F when gamma_I > 0\.",
                 id="laprls-no-laplacian"),
    pytest.param(lambda P: _laprls(P, balance=[0.0]),
                 r"balance needs a non-empty unlabeled_rows\.", id="laprls-balance-no-unlabeled"),
    pytest.param(lambda P: _laprls(P, targets=np.r_[np.nan, P["T"][1:]]),
                 r"targets must be finite\.", id="laprls-nan-target"),
    # lapsvm_newton: a balance that no f can meet
    pytest.param(lambda P: _newton(P, X=P["Xz"], balance=[0.2], unlabeled_rows=P["U"],
                                   fit_intercept=False),
                 r"class-balance constraint cannot be met: the unlabeled rows have zero mean "
                 r"and there is no intercept", id="newton-balance-unmeetable"),
    # the shared problem checks (_problem.py)
    pytest.param(lambda P: _newton(P, targets=P["T"][:0], labeled_rows=P["lab"][:0]),
                 r"labeled_rows must be a non-empty 1-D array of row indices",
                 id="problem-no-labeled-rows"),
    pytest.param(lambda P: _newton(P, labeled_rows=P["lab"].astype(float)),
                 r"labeled_rows must be a non-empty 1-D array of row indices",
                 id="problem-float-labeled-rows"),
    pytest.param(lambda P: _newton(P, scale=np.nan),
                 r"scale must be a finite number >= 0 \(0: a graph without edges\), got nan",
                 id="problem-scale-nan"),
    pytest.param(lambda P: _newton(P, X=P["X"].toarray().tolist()),
                 r"X must be a 2-D ndarray or scipy sparse matrix", id="problem-X-list"),
    # kernel_lapsvm_dual
    pytest.param(lambda P: _dual(P, targets=2 * P["T"]),
                 r"targets of the hinge loss must be \+1 or -1", id="dual-targets"),
    pytest.param(lambda P: _dual(P, gamma_A=0.0),
                 r"gamma_A must be > 0 in kernel mode", id="dual-gamma_A-0"),
    pytest.param(lambda P: _dual(P, laplacian_matvec=lambda F: -np.asarray(F)),
                 r"bias penalty q is negative: laplacian_matvec is not positive semi-definite",
                 id="dual-not-a-laplacian"),
    pytest.param(lambda P: _dual(P, targets=np.ones(8)),
                 r"needs both \+1 and -1 rows for the free-bias dual", id="dual-one-class"),
    # kernel_pcg
    pytest.param(lambda P: _pcg(P, targets=np.r_[np.nan, P["T"][1:]], loss="squared"),
                 r"targets must be finite", id="pcg-nan-target"),
    pytest.param(lambda P: _pcg(P, tol=0.0), r"tol must be > 0, got 0\.0", id="pcg-tol"),
    pytest.param(lambda P: _pcg(P, stability_tol=1.5),
                 r"stability_tol must be in \(0, 1\), got 1\.5", id="pcg-stability_tol"),
    pytest.param(lambda P: _pcg(P, check_every=2.5, early_stopping="stability"),
                 r"check_every must be an integer >= 1, got 2\.5", id="pcg-check_every"),
    pytest.param(lambda P: _pcg(P, init=(np.zeros((1, P["n"] - 1)), np.zeros(1))),
                 r"init dual_coef must have shape \(1, 30\)", id="pcg-init-shape"),
    # the solution path
    pytest.param(_follow_one_class,
                 r"path with a free bias needs labeled rows of both classes",
                 id="path-free-bias-one-class"),
    pytest.param(lambda P: _path_targets(P, np.r_[0.5, P["T"][1:]]),
                 r"targets must be ±1, one per labeled position", id="path-targets"),
    pytest.param(lambda P: _path_targets(P, np.ones(8)),
                 r"The path needs labeled rows of both classes", id="path-one-class"),
    pytest.param(lambda P: _reduction(P, rho=0.0),
                 r"rho = gamma_A/gamma_I must be a finite number > 0, got 0\.0",
                 id="reduction-rho"),
    pytest.param(lambda P: _reduction(P, scale=0.0),
                 r"scale must be a finite number > 0 \(a graph with edges\), got 0\.0",
                 id="reduction-scale"),
    pytest.param(lambda P: _reduction(P, kernel="rbf"),
                 r"kernel must be None or 'precomputed', got 'rbf'", id="reduction-kernel"),
    pytest.param(lambda P: _reduction(P, method="dense"),
                 r"method must be 'auto', 'gram' or 'cg', got 'dense'", id="reduction-method"),
    pytest.param(lambda P: _reduction(P, X=P["K"], kernel="precomputed", memory_budget=1000),
                 r"The kernel path needs 21600 bytes for n = 30 .* over memory_budget = 1000",
                 id="reduction-kernel-memory"),
    # the S³VM solvers
    pytest.param(lambda P: _s3vm(P, positive_fraction=1.0),
                 r"positive_fraction must lie strictly between 0 and 1", id="s3vm-fraction"),
    pytest.param(lambda P: _s3vm(P, unlabeled=P["U"][:0]),
                 r"unlabeled_rows must be a non-empty 1-D array of row indices",
                 id="s3vm-no-unlabeled"),
    pytest.param(lambda P: _s3vm(P, unlabeled=np.r_[P["U"], 30]),
                 r"unlabeled_rows must be distinct indices in \[0, 30\)", id="s3vm-out-of-range"),
    pytest.param(lambda P: _s3vm(P, unlabeled=np.r_[P["U"], P["U"][0]]),
                 r"unlabeled_rows must be distinct indices in \[0, 30\)", id="s3vm-repeated"),
    pytest.param(lambda P: _s3vm(P, unlabeled=np.r_[P["U"], 0]),
                 r"unlabeled_rows and labeled_rows must not overlap", id="s3vm-overlap"),
    pytest.param(_s3vm_objective,
                 r"s3vm_objective needs P or positive_fraction", id="s3vm-objective"),
    pytest.param(lambda P: _s3vm(P, "switching", gamma_U=-1.0),
                 r"gamma_U must be a finite number >= 0, got -1\.0", id="s3vm-gamma_U"),
    pytest.param(lambda P: _s3vm(P, "switching", gamma_U_start=0.0),
                 r"gamma_U_start must be in \(0, 1\]", id="s3vm-gamma_U_start"),
    # ensemble manifold regularisation
    pytest.param(lambda P: _update_mu([]), r"s must have at least one entry", id="emr-empty-s"),
    pytest.param(lambda P: _update_mu([1.0, 2.0], mu=[1.0]),
                 r"mu must have shape \(2,\), got \(1,\)", id="emr-mu-shape"),
    pytest.param(lambda P: _emr(m=0), r"m must be an integer >= 1, got 0", id="emr-m"),
    pytest.param(lambda P: _emr(max_iter=0), r"max_iter must be an integer >= 1, got 0",
                 id="emr-max_iter"),
    pytest.param(lambda P: _emr(gamma_R="big"),
                 r"gamma_R must be a number >= 0 or 'auto', got 'big'", id="emr-gamma_R"),
    # the shifted grid
    pytest.param(lambda P: _grid(P, gamma_A=[]),
                 r"gamma_A and gamma_I must be non-empty 1-D sequences", id="grid-empty"),
    pytest.param(lambda P: _grid(P, monitor_rows=np.ones((3, 5)), patience=2),
                 r"monitor_rows must have 6 columns, got shape \(3, 5\)", id="grid-monitor"),
    # kernel inputs
    pytest.param(lambda P: _gram(sp.csr_matrix(np.array([[np.nan, 1.0]]))),
                 r"A contains NaN or infinite values", id="gram-sparse-nan"),
    pytest.param(lambda P: _gram(np.ones(3)), r"A must be 2-D, got shape \(3,\)",
                 id="gram-1d"),
]


@pytest.fixture(scope="module")
def solver_problem():
    return _solver_problem()


@pytest.mark.parametrize("call, match", SOLVER_ERRORS)
def test_solver_argument_errors(solver_problem, call, match):
    with pytest.raises(ValueError, match=match):
        call(solver_problem)


def _estimator_errors():
    from linlap import KernelLapRLSClassifier, LapS3VMClassifier
    from linlap.estimators.emr import candidate_graphs

    def cv(**kw):
        return LapRLSClassifierCV(gamma_A=[1e-2], gamma_I=[1.0], **kw)

    return [
        pytest.param(lambda X, y, ys, g: LapRLSClassifier(graph=g, class_prior={0: 1.0}).fit(
            X, ys), r"class_prior has no proportion for classes \[", id="prior-dict-missing"),
        pytest.param(lambda X, y, ys, g: LapS3VMClassifier(graph=g, class_prior=[0.0, 1.0]).fit(
            X, ys), r"class_prior must give every class a proportion strictly between 0 and 1",
            id="s3vm-prior-0"),
        pytest.param(lambda X, y, ys, g: cv(graph=g).fit(X, ys, validation=(X, y, y)),
                     r"validation must be labels for rows of X or a pair \(X_val, y_val\)",
                     id="cv-validation-triple"),
        pytest.param(lambda X, y, ys, g: cv(graph=g).fit(X, ys, validation=(X, y[:5])),
                     r"y_val must have shape \(40,\), got \(5,\)", id="cv-y_val-shape"),
        pytest.param(lambda X, y, ys, g: cv(graph=g).fit(X, ys, validation=np.full(40, -1)),
                     r"validation holds no labeled row", id="cv-no-validation-row"),
        # its other rows NaN while the estimator's marker is -1: every row a label
        pytest.param(lambda X, y, ys, g: cv(graph=g).fit(X, ys, validation=np.where(
            ys == -1, y, np.nan)), r"but 10 of the 40 rows validation labels are labeled in "
            r"y\. Its other rows must hold the estimator's unlabeled marker, unlabeled=-1",
            id="cv-validation-marker"),
        pytest.param(lambda X, y, ys, g: cv(graph=g, n_neighbors=[0]).fit(X, ys),
                     r"n_neighbors must be None or integers >= 1, got 0", id="cv-k-0"),
        pytest.param(lambda X, y, ys, g: KernelLapRLSClassifier(graph=g).fit(
            X, ys, X_val=X, y_val=y[:5]), r"y_val must have shape \(40,\), got \(5,\)",
            id="kernel-y_val-shape"),
        pytest.param(lambda X, y, ys, g: candidate_graphs(X, {"power": [1]}, graph="knn"),
                     r"graph must be None or a linlap.KNNGraph, got str", id="emr-graph"),
        pytest.param(lambda X, y, ys, g: candidate_graphs(X, {"power": []}),
                     r"candidates\['power'\] is empty", id="emr-empty-grid"),
        pytest.param(lambda X, y, ys, g: candidate_graphs(X, [g, "g"]),
                     r"candidates must be KNNGraph objects, got str", id="emr-not-a-graph"),
    ]


@pytest.mark.parametrize("call, match", _estimator_errors())
def test_estimator_argument_errors(call, match):
    from linlap.datasets import mask_labels

    X, y = blobs(n=40, seed=1)
    ys = mask_labels(y, 10, random_state=1)
    g = KNNGraph(n_neighbors=5).fit(X)
    with pytest.raises(ValueError, match=match):
        call(X, y, ys, g)


def _with_nan_coef(fn):
    def wrapped(*args, **kwargs):
        sol = fn(*args, **kwargs)
        sol.coef = np.full_like(sol.coef, np.nan)
        return sol
    return wrapped


def test_non_finite_coefficients_never_escape_a_fit(monkeypatch):
    # no input is known to make the solvers return NaN: make them, and check the guards
    import linlap.estimators.linear as linear
    import linlap.solvers.s3vm as s3vm
    from linlap import LapS3VMClassifier, LapSVMPathClassifier
    from linlap.datasets import mask_labels
    from linlap.solvers.path import LapSVMPath
    from reference import semi_with_validation

    X, y = blobs(n=40, seed=2)
    ys = mask_labels(y, 10, random_state=2)
    g = KNNGraph(n_neighbors=5).fit(X)
    with monkeypatch.context() as m:
        m.setattr(linear, "laprls_linear", _with_nan_coef(linear.laprls_linear))
        with pytest.raises(ValueError, match="The solver produced non-finite coefficients; "
                                             "check that X has no extreme values"):
            LapRLSClassifier(graph=g).fit(X, ys)
    with monkeypatch.context() as m:
        m.setattr(s3vm, "lapsvm_newton", _with_nan_coef(s3vm.lapsvm_newton))
        with pytest.raises(ValueError, match=r"The S3VM's LapSVM solve produced non-finite "
                                             r"values with gamma_A=0\.001, gamma_I=1, "
                                             r"gamma_U=1"):
            LapS3VMClassifier(graph=g, class_prior="labeled").fit(X, ys)
    ys, yv = semi_with_validation(y, 10, 10, seed=2)
    with monkeypatch.context() as m:
        m.setattr(LapSVMPath, "coef_at", lambda self, lam: (np.full(X.shape[1], np.nan), 0.0))
        with pytest.raises(ValueError, match=r"The path produced non-finite coefficients"):
            LapSVMPathClassifier(graph=g, n_gammas=5).fit(X, ys, validation=yv)
