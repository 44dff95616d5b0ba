"""LapSVMPathClassifier and the warm-started grid searches (linlap.model_selection)."""

import warnings

import numpy as np
import scipy.sparse as sp
import pytest
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.estimator_checks import parametrize_with_checks

from linlap import KNNGraph, LapRLSClassifier, LapSVMClassifier
from linlap.datasets import mask_labels
from linlap.estimators import lapsvm_path
from linlap.model_selection import (LapRLSClassifierCV, LapSVMClassifierCV,
                                    LapSVMPathClassifier)

from reference import blobs, semi_with_validation


# -- LapSVMPathClassifier --------------------------------------------------------------

@pytest.mark.parametrize("normalized", [False, True])
def test_path_classifier_point_equals_tinv_hinge(normalized):
    X, y = blobs(seed=1, noise=0.5)
    ys, yv = semi_with_validation(y, 14, 20, seed=1)
    g = KNNGraph(n_neighbors=6, normalized=normalized, power=2).fit(X)
    clf = LapSVMPathClassifier(rho=0.05, graph=g).fit(X, ys, validation=yv)
    assert clf.best_gamma_A_ == pytest.approx(0.05 * clf.best_gamma_I_)
    l = (ys != -1).sum()
    assert clf.best_lambda_ == pytest.approx(2 * l * clf.best_gamma_I_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = LapSVMClassifier(gamma_A=clf.best_gamma_A_, gamma_I=clf.best_gamma_I_,
                               solver="tinv", loss="hinge", graph=g, tol=1e-12,
                               max_iter=100000).fit(X, ys)
    # free bias (unnormalised L): libsvm, tight; penalised bias: liblinear stops short
    tol = 1e-6 if not normalized else 2e-2
    scale = 1 + np.abs(clf.coef_).max()
    np.testing.assert_allclose(clf.coef_, ref.coef_, atol=tol * scale)
    np.testing.assert_allclose(clf.intercept_, ref.intercept_, atol=tol * scale)


def test_path_classifier_selects_least_validation_error():
    X, y = blobs(n=80, seed=2, noise=0.5)
    ys, yv = semi_with_validation(y, 12, 30, seed=2)
    g = KNNGraph(n_neighbors=6).fit(X)
    clf = LapSVMPathClassifier(rho=1e-2, graph=g, n_gammas=25).fit(X, ys, validation=yv)
    info = clf.path_
    assert info["gamma_I"].shape == info["error"].shape == (25,)
    assert np.all(np.diff(info["gamma_I"]) < 0)
    assert info["error"][info["best_index"]] == info["error"].min()
    assert clf.best_score_ == pytest.approx(1 - info["error"].min())
    # the stored error is the validation error of the model at each grid point
    val = yv != -1
    for j in (0, info["best_index"], 24):
        w, b = info["paths"][0].coef_at(info["lambda"][j])
        pred = np.where(X[val] @ w + b > 0, clf.classes_[1], clf.classes_[0])
        assert np.mean(pred != yv[val]) == pytest.approx(info["error"][j])
    # out-of-sample validation rows give the same numbers
    clf2 = LapSVMPathClassifier(rho=1e-2, graph=g, n_gammas=25).fit(
        X, ys, validation=(X[val], yv[val]))
    np.testing.assert_allclose(clf2.path_["error"], info["error"])
    np.testing.assert_allclose(clf2.coef_, clf.coef_)
    # the pair as a list
    clf3 = LapSVMPathClassifier(rho=1e-2, graph=g, n_gammas=25).fit(
        X, ys, validation=[X[val], yv[val]])
    np.testing.assert_allclose(clf3.path_["error"], info["error"])


def test_path_classifier_cv_and_multiclass():
    X, y = blobs(n=90, n_classes=3, seed=3, noise=0.5)
    ys = mask_labels(y, 24, random_state=3)
    clf = LapSVMPathClassifier(rho=1e-2, graph=KNNGraph(n_neighbors=6), cv=3,
                               n_gammas=20).fit(X, ys)
    assert clf.coef_.shape == (3, X.shape[1]) and len(clf.path_["paths"]) == 3
    assert clf.path_["validation"] == "3-fold"
    assert 0 <= clf.best_score_ <= 1
    lab = ys != -1
    np.testing.assert_array_equal(clf.transduction_[lab], ys[lab])
    assert set(clf.predict(X)) <= set(clf.classes_)
    # each column is the path of its one-vs-rest problem at the chosen λ
    for c, p in enumerate(clf.path_["paths"]):
        w, b = p.coef_at(clf.best_lambda_)
        np.testing.assert_allclose(clf.coef_[c], w)



def test_path_classifier_cv_errors_are_fold_paths_at_their_own_lambda():
    # cv mode: each fold's path is followed on its training rows (held-out rows
    # unlabeled) and γ_I — not λ — is carried across the folds: a grid point γ_I is scored
    # at λ = 2 l_train γ_I of the fold's path; error and hinge are averaged over all
    # labeled rows. Reference: lapsvm_path on each fold's labels, evaluated by coef_at.
    X, y = blobs(n=80, seed=13, noise=0.7)
    ys = mask_labels(y, 24, random_state=13)
    g = KNNGraph(n_neighbors=6).fit(X)
    clf = LapSVMPathClassifier(rho=1e-2, graph=g, cv=3, n_gammas=12).fit(X, ys)
    assert clf.path_["validation"] == "3-fold"
    lab = np.flatnonzero(ys != -1)
    l = lab.size
    grid = clf.path_["gamma_I"]
    err, hinge = np.zeros(grid.size), np.zeros(grid.size)
    inside = np.ones(grid.size, bool)
    for train, test in StratifiedKFold(n_splits=3, shuffle=True, random_state=0).split(
            lab, ys[lab]):
        ytr = ys.copy()
        ytr[lab[test]] = -1
        p = lapsvm_path(X, ytr, g, rho=1e-2, lambda_min_ratio=1e-4)  # the classifier's end
        t = np.where(ys[lab[test]] == 1, 1.0, -1.0)
        for j, gamma_I in enumerate(grid):
            lam = 2 * train.size * gamma_I
            if lam < p.lambdas[-1]:        # below this fold's path: not compared
                inside[j] = False
                continue
            w, b = p.coef_at(lam)
            f = X[lab[test]] @ w + b
            err[j] += np.sum((f > 0) != (t > 0)) / l
            hinge[j] += np.sum(np.maximum(0.0, 1.0 - t * f)) / l
    assert inside.sum() >= 10
    np.testing.assert_allclose(clf.path_["error"][inside], err[inside], atol=1e-12)
    np.testing.assert_allclose(clf.path_["hinge"][inside], hinge[inside], rtol=1e-8)

def test_path_classifier_bad_input():
    X, y = blobs(seed=4, noise=0.5)
    ys, yv = semi_with_validation(y, 10, 10, seed=4)
    for bad in [dict(rho=0), dict(rho=-1.0), dict(cv=1), dict(n_gammas=1),
                dict(method="dense"), dict(lambda_min_ratio=2.0), dict(graph="knn")]:
        with pytest.raises(ValueError):
            LapSVMPathClassifier(**bad).fit(X, ys)
    overlap = yv.copy()
    overlap[ys != -1] = ys[ys != -1]
    with pytest.raises(ValueError, match="unlabeled in y"):
        LapSVMPathClassifier().fit(X, ys, validation=overlap)
    with pytest.raises(ValueError, match="shape"):
        LapSVMPathClassifier().fit(X, ys, validation=yv[:5])
    wrong = np.where(yv != -1, 7, -1)
    with pytest.raises(ValueError, match="not classes"):
        LapSVMPathClassifier().fit(X, ys, validation=wrong)


def test_plot_path(tmp_path):
    pytest.importorskip("matplotlib")
    X, y = blobs(seed=5, noise=0.5)
    ys, yv = semi_with_validation(y, 12, 20, seed=5)
    clf = LapSVMPathClassifier(rho=1e-2, graph=KNNGraph(n_neighbors=6)).fit(
        X, ys, validation=yv)
    for kind in ("error", "decision"):
        out = clf.plot_path(tmp_path / f"{kind}.png", kind=kind)
        assert (tmp_path / f"{kind}.png").stat().st_size > 1000 and str(out).endswith(".png")
    with pytest.raises(ValueError, match="kind"):
        clf.plot_path(tmp_path / "x.png", kind="alpha")


# -- grid searches ---------------------------------------------------------------------

@pytest.mark.parametrize("CV,Base", [(LapRLSClassifierCV, LapRLSClassifier),
                                     (LapSVMClassifierCV, LapSVMClassifier)])
def test_warm_grid_gives_the_cold_models(CV, Base):
    X, y = blobs(n=70, seed=6, noise=0.5)
    ys, yv = semi_with_validation(y, 14, 20, seed=6)
    g = KNNGraph(n_neighbors=6).fit(X)
    grid = dict(gamma_A=[1e-3, 1e-2, 1e-1], gamma_I=[0.1, 1.0, 10.0])
    kw = dict(graph=g, tol=1e-10)
    extra = {"method": "warm"}
    if CV is LapSVMClassifierCV:   # finite Newton fits are slower: a 2 × 2 grid
        grid = dict(gamma_A=[1e-3, 1e-1], gamma_I=[0.1, 10.0])
        kw["max_iter"] = 200
    warm = CV(**grid, **kw, **extra, warm_start=True).fit(X, ys, validation=yv)
    cold = CV(**grid, **kw, **extra, warm_start=False).fit(X, ys, validation=yv)
    np.testing.assert_allclose(warm.cv_results_["mean_test_score"],
                               cold.cv_results_["mean_test_score"])
    assert warm.best_params_ == cold.best_params_
    np.testing.assert_allclose(warm.coef_, cold.coef_, rtol=1e-6, atol=1e-9)
    # every grid point: the warm-started model equals a cold fit of the base estimator
    val = yv != -1
    for k, params in enumerate(warm.cv_results_["params"]):
        ref = Base(gamma_A=params["gamma_A"], gamma_I=params["gamma_I"], **kw).fit(X, ys)
        assert warm.cv_results_["split0_test_score"][k] == pytest.approx(
            np.mean(ref.predict(X[val]) == yv[val]))
    best = Base(gamma_A=warm.best_params_["gamma_A"], gamma_I=warm.best_params_["gamma_I"],
                **kw).fit(X, ys)
    np.testing.assert_allclose(warm.coef_, best.coef_, rtol=1e-6, atol=1e-9)
    assert warm.cv_results_["mean_test_score"][warm.best_index_] == \
        warm.cv_results_["mean_test_score"].max()


def test_warm_start_saves_iterations():
    X, y = blobs(n=120, d=50, seed=11, noise=0.5)
    ys, yv = semi_with_validation(y, 14, 20, seed=11)
    g = KNNGraph(n_neighbors=6).fit(X)
    grid = dict(gamma_A=[1e-6, 1e-5], gamma_I=[0.01, 0.03, 0.1], graph=g, method="warm")
    warm = LapRLSClassifierCV(**grid, warm_start=True).fit(X, ys, validation=yv)
    cold = LapRLSClassifierCV(**grid, warm_start=False).fit(X, ys, validation=yv)
    assert warm.cv_results_["mean_n_iter"].sum() < cold.cv_results_["mean_n_iter"].sum()


def test_grid_over_power_and_prior_shares_the_graph():
    X, y = blobs(n=70, n_classes=3, seed=7, noise=0.5)
    ys = mask_labels(y, 21, random_state=7)
    g = KNNGraph(n_neighbors=6, power=2).fit(X)
    clf = LapRLSClassifierCV(gamma_A=[1e-2], gamma_I=[1.0, 10.0], power=[1, 3],
                             class_prior=[None, "labeled"], graph=g, cv=3).fit(X, ys)
    res = clf.cv_results_
    assert len(res["params"]) == 8 and res["split2_test_score"].shape == (8,)
    assert set(res["param_power"]) == {1, 3}
    assert clf.graph_.adjacency_ is g.adjacency_          # never rebuilt
    assert clf.graph_.power == clf.best_params_["power"]
    # ranks: by mean accuracy, ties by the mean hinge loss, then by grid order
    order = sorted(range(8), key=lambda k: (-res["mean_test_score"][k],
                                            round(res["mean_test_hinge"][k], 12), k))
    np.testing.assert_array_equal(res["rank_test_score"][order], np.arange(1, 9))
    assert clf.best_index_ == order[0]
    np.testing.assert_allclose(res["mean_test_score"],
                               np.mean([res[f"split{s}_test_score"] for s in range(3)], axis=0))
    # a k grid: one graph per k, built once, each with its power views
    byk = LapRLSClassifierCV(gamma_A=[1e-2], gamma_I=[1.0], n_neighbors=[4, 6], power=[1, 2],
                             graph=g, cv=3).fit(X, ys)
    assert list(byk.cv_results_["param_n_neighbors"]) == [4, 4, 6, 6]
    assert byk.graph_.power == byk.best_params_["power"]
    assert byk.graph_.n_neighbors == byk.best_params_["n_neighbors"]
    if byk.best_params_["n_neighbors"] == 6:
        assert byk.graph_.adjacency_ is g.adjacency_
    # the refit equals the base estimator at the best params
    bp = clf.best_params_
    ref = LapRLSClassifier(gamma_A=bp["gamma_A"], gamma_I=bp["gamma_I"],
                           graph=g.with_laplacian(power=bp["power"]),
                           class_prior=bp["class_prior"]).fit(X, ys)
    np.testing.assert_allclose(clf.coef_, ref.coef_, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(clf.predict(X), ref.predict(X))


def test_grid_builds_graph_once_without_graph():
    X, y = blobs(n=50, seed=8, noise=0.5)
    ys = mask_labels(y, 12, random_state=8)
    clf = LapRLSClassifierCV(gamma_A=[1e-2], gamma_I=[1.0, 10.0], cv=2).fit(X, ys)
    assert isinstance(clf.graph_, KNNGraph) and clf.graph_time_ >= 0
    assert clf.best_estimator_.graph_ is clf.graph_
    # a flat list of proportions is one class_prior setting, not two
    one = LapRLSClassifierCV(gamma_A=[1e-2], gamma_I=[1.0], class_prior=[0.5, 0.5], cv=2,
                             graph=clf.graph_).fit(X, ys)
    assert len(one.cv_results_["params"]) == 1
    assert one.best_params_["class_prior"] == [0.5, 0.5]


def test_grid_bad_input():
    X, y = blobs(seed=9, noise=0.5)
    ys = mask_labels(y, 10, random_state=9)
    for bad in [dict(gamma_A=[]), dict(gamma_A=[-1.0]), dict(gamma_I=[np.nan]),
                dict(power=[0]), dict(cv=1), dict(graph="g"), dict(class_prior=[]),
                dict(method="fast"), dict(patience=0), dict(patience=2.5)]:
        with pytest.raises(ValueError):
            LapRLSClassifierCV(**bad).fit(X, ys)
    one = np.full(y.size, -1)
    one[:3] = y[:3]
    one[3] = 1 - y[0]
    if np.bincount(one[one != -1]).min() < 2:
        with pytest.raises(ValueError, match="validation"):
            LapRLSClassifierCV(gamma_A=[1e-2], gamma_I=[1.0]).fit(X, one)


# -- scikit-learn conventions ----------------------------------------------------------

EXPECTED_FAILED = {
    "check_classifiers_classes": "-1 marks unlabeled rows",
}


# Small grids keep the checks fast; the grid logic itself is tested above.
@parametrize_with_checks([LapRLSClassifierCV(gamma_A=[1e-2], gamma_I=[1.0, 10.0], cv=2),
                          LapSVMClassifierCV(gamma_A=[1e-2], gamma_I=[1.0], cv=2,
                                             solver="tinv", loss="hinge"),
                          LapSVMPathClassifier(cv=2, n_gammas=10)],
                         expected_failed_checks=lambda est: EXPECTED_FAILED)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


def test_clone_keeps_shared_graph():
    X, y = blobs(seed=10, noise=0.5)
    g = KNNGraph(n_neighbors=5).fit(X)
    est = LapRLSClassifierCV(graph=g)
    assert clone(est).graph is g


def test_grid_k_capped_deduplicated_and_built_only_as_asked(monkeypatch):
    X, y = blobs(n=40, seed=11, noise=0.5)
    X = X.tolil()
    X[30:] = 0  # 10 empty rows: at most 29 neighbours
    X = X.tocsr()
    ys = mask_labels(y, 12, random_state=11)
    ys[30:] = -1
    built = []
    fit = KNNGraph.fit
    monkeypatch.setattr(KNNGraph, "fit",
                        lambda self, X, y=None: built.append(self.n_neighbors) or fit(self, X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the empty rows
        clf = LapRLSClassifierCV(n_neighbors=[5, 100, 200], gamma_A=[1e-2], gamma_I=[1.0],
                                 cv=2).fit(X, ys)
    # one search at the largest (capped) k, the 5-NN graph its subgraph; no default graph
    assert built == [29]
    assert sorted({p["n_neighbors"] for p in clf.cv_results_["params"]}) == [5, 29]
    assert clf.graph_.n_neighbors == clf.best_params_["n_neighbors"]


def test_grid_on_a_graph_without_edges_fits_the_labels_alone():
    X = sp.identity(30, format="csr")  # orthogonal rows: every cosine weight is 0
    y = np.full(30, -1)
    y[:10] = np.arange(10) % 2
    for CV in (LapRLSClassifierCV, LapSVMClassifierCV):
        with pytest.warns(UserWarning, match="no edge"):
            clf = CV(gamma_A=[1e-3], gamma_I=[1.0], cv=2,
                     graph=KNNGraph(n_neighbors=5)).fit(X, y)
        plain = clf._base(gamma_A=1e-3, gamma_I=1.0, graph=clf.graph_)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plain.fit(X, y)
        np.testing.assert_allclose(clf.coef_, plain.coef_, atol=1e-8)


def test_grid_parameter_forms_and_early_checks():
    X, y = blobs(seed=12, noise=0.5)
    ys = mask_labels(y, 10, random_state=12)
    g = KNNGraph(n_neighbors=5).fit(X)
    one = LapRLSClassifierCV(gamma_A=np.array(1e-2), gamma_I=1.0, cv=2, graph=g).fit(X, ys)
    assert one.best_params_["gamma_A"] == 1e-2 and len(one.cv_results_["params"]) == 1
    for bad in [dict(power=[]), dict(gamma_A=[True]), dict(gamma_I=True), dict(tol=2.0),
                dict(max_iter=0), dict(n_neighbors=[])]:
        with pytest.raises(ValueError):
            LapRLSClassifierCV(cv=2, graph=g, **bad).fit(X, ys)


def test_grid_and_kernel_predict_refuse_non_finite_scores():
    from linlap import KernelLapRLSClassifier

    X, y = blobs(seed=13, noise=0.5)
    ys = mask_labels(y, 10, random_state=13)
    g = KNNGraph(n_neighbors=5).fit(X)
    for clf in (LapRLSClassifierCV(gamma_A=[1e-2], gamma_I=[1.0], cv=2, graph=g),
                KernelLapRLSClassifier(kernel="linear", graph=g)):
        clf.fit(X, ys)
        huge = np.full((1, X.shape[1]), 1e308)
        with pytest.raises(ValueError, match="extreme"):
            clf.predict(huge)
        np.testing.assert_array_equal(clf.predict(X[:5]), clf.predict(X[:5].toarray()))


def test_grid_k_none_and_its_value_share_one_graph(monkeypatch):
    X, y = blobs(n=60, seed=14, noise=0.5)
    ys = mask_labels(y, 12, random_state=14)
    built = []
    fit = KNNGraph.fit
    monkeypatch.setattr(KNNGraph, "fit",
                        lambda self, X, y=None: built.append(self.n_neighbors) or fit(self, X))
    # None: the default k, 5 on 60 rows (a twentieth of them, at least 5)
    LapRLSClassifierCV(n_neighbors=[None, 5], gamma_A=[1e-2], gamma_I=[1.0], cv=2).fit(X, ys)
    assert built == [5]


def test_grid_subgraphs_equal_their_own_searches():
    X, y = blobs(n=60, seed=15, noise=0.5)
    ys = mask_labels(y, 12, random_state=15)
    g = KNNGraph(n_neighbors=20, algorithm="exact").fit(X)
    clf = LapRLSClassifierCV(n_neighbors=[5, 10], gamma_A=[1e-2], gamma_I=[1.0], cv=2,
                             graph=g).fit(X, ys)
    k = clf.best_params_["n_neighbors"]
    own = KNNGraph(n_neighbors=k, algorithm="exact").fit(X)
    np.testing.assert_array_equal(clf.graph_.neighbors_, own.neighbors_)
    np.testing.assert_allclose(clf.graph_.adjacency_.toarray(), own.adjacency_.toarray(),
                               atol=1e-12)


def test_grid_reports_progress_and_checks_its_memory(monkeypatch, capsys):
    import linlap._memory as memory

    X, y = blobs(n=60, seed=16, noise=0.5)
    ys = mask_labels(y, 12, random_state=16)
    g = KNNGraph(n_neighbors=5).fit(X)
    LapRLSClassifierCV(gamma_A=[1e-3, 1e-2], gamma_I=[1.0, 10.0], cv=2, graph=g,
                       verbose=1).fit(X, ys)
    err = capsys.readouterr().err
    assert "[LapRLSClassifierCV grid] 8/8 candidates (100%)" in err
    # the shifted grid keeps every candidate's coefficients: checked before it starts
    needed = []
    from linlap.estimators import cv as cv_mod
    monkeypatch.setattr(cv_mod, "check_memory", lambda b, what, hint="": needed.append(b))
    LapRLSClassifierCV(gamma_A=[1e-3, 1e-2], gamma_I=[1.0, 10.0], cv=2, graph=g).fit(X, ys)
    assert needed[0] >= memory.grid_bytes(X.shape[1], 2, 2, 2) > 8 * X.shape[1] * 2 * 2 * 2
    monkeypatch.undo()
    monkeypatch.setattr(memory, "available_bytes", lambda: 1000)
    with pytest.raises(MemoryError, match="LapRLSClassifierCV: a grid of 2 x 2"):
        LapRLSClassifierCV(gamma_A=[1e-3, 1e-2], gamma_I=[1.0, 10.0], cv=2, graph=g).fit(X, ys)


@pytest.mark.parametrize("CV,Base,method", [(LapRLSClassifierCV, LapRLSClassifier, "shifted"),
                                            (LapRLSClassifierCV, LapRLSClassifier, "warm"),
                                            (LapSVMClassifierCV, LapSVMClassifier, "shifted"),
                                            (LapSVMClassifierCV, LapSVMClassifier, "warm")])
def test_kfold_scores_are_cold_fits_without_the_held_out_labels(CV, Base, method):
    # k-fold mode (no validation=): the labeled rows are split by
    # StratifiedKFold(cv, shuffle=True, random_state=0) over the class indices; a fold's
    # held-out rows are unlabeled (still in the graph) while the others train, and score
    X, y = blobs(n=70, n_classes=3, seed=12, noise=0.6)
    ys = mask_labels(y, 24, random_state=12)
    g = KNNGraph(n_neighbors=6).fit(X)
    gA, gI = [1e-3, 1e-1], [0.1, 10.0]
    kw = dict(graph=g, tol=1e-10, max_iter=5000 if Base is LapRLSClassifier else 200)
    cv = CV(gamma_A=gA, gamma_I=gI, cv=3, method=method, patience=None, **kw).fit(X, ys)
    res = cv.cv_results_
    lab = np.flatnonzero(ys != -1)
    classes = np.unique(ys[lab])
    y_idx = np.searchsorted(classes, ys[lab])
    folds = StratifiedKFold(n_splits=3, shuffle=True, random_state=0).split(lab, y_idx)
    hinge = np.zeros(len(res["params"]))
    assert cv.n_splits_ == 3
    for s, (train, test) in enumerate(folds):
        ytr = ys.copy()
        ytr[lab[test]] = -1
        Xte = X[lab[test]]
        T = np.where(y_idx[test][:, None] == np.arange(classes.size), 1.0, -1.0)
        for k, params in enumerate(res["params"]):
            ref = Base(gamma_A=params["gamma_A"], gamma_I=params["gamma_I"], **kw).fit(X, ytr)
            F = ref.decision_function(Xte)
            assert res[f"split{s}_test_score"][k] == pytest.approx(
                np.mean(ref.predict(Xte) == ys[lab[test]]))
            hinge[k] += np.maximum(0.0, 1.0 - T * F).sum(axis=1).mean() / 3
    np.testing.assert_allclose(res["mean_test_hinge"], hinge, rtol=1e-6)
