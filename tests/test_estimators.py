"""LapRLSClassifier: dense-reference correctness, conventions, bad input."""

import copy
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.feature_selection import SelectFromModel
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from linlap import KNNGraph, LapRLSClassifier, LapSVMClassifier
from linlap.datasets import load_pcmac, mask_labels

from reference import blobs, dense_solution


def semi(y, n_labeled, seed=0):
    return mask_labels(y, n_labeled, random_state=seed)


def reference_coef(X, y_semi, graph, gamma_A, gamma_I, classes, prior=None):
    """Dense solution of the documented objective, one-vs-rest as the estimator does."""
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X, float)
    lab = np.flatnonzero(y_semi != -1)
    unl = np.flatnonzero(y_semi == -1)
    idx = np.searchsorted(classes, y_semi[lab])
    if len(classes) == 2:
        T = np.where(idx == 1, 1.0, -1.0)[:, None]
    else:
        T = -np.ones((len(lab), len(classes)))
        T[np.arange(len(lab)), idx] = 1
    Lp = graph.laplacian_matrix(power=graph.power).toarray()
    s = 1.0 / np.trace(graph.laplacian_matrix(power=1).toarray())
    c = r = None
    if prior is not None:
        pi = np.bincount(idx, minlength=len(classes)) / len(idx) \
            if isinstance(prior, str) else np.asarray(prior)
        r = 2 * pi - 1
        r = r[1:] if len(classes) == 2 else r
        c = np.r_[Xd[unl].mean(axis=0), 1.0]
    Z = dense_solution(Xd, Lp, lab, T, gamma_A, gamma_I, s, c=c, r=r)
    return Z[:-1].T, Z[-1]


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("prior", [None, "labeled", "explicit"])
@pytest.mark.parametrize("normalized,power", [(True, 2), (False, 1)])
def test_matches_dense_reference(sparse, n_classes, prior, normalized, power):
    X, y = blobs(n_classes=n_classes, sparse=sparse, seed=n_classes)
    y_semi = semi(y, 12, seed=1)
    graph = KNNGraph(n_neighbors=5, normalized=normalized, power=power).fit(X)
    if prior == "explicit":
        prior = np.full(n_classes, 1.0 / n_classes)
    clf = LapRLSClassifier(gamma_A=1e-2, gamma_I=3.0, graph=graph, class_prior=prior,
                           tol=1e-12, max_iter=2000).fit(X, y_semi)
    coef, intercept = reference_coef(X, y_semi, graph, 1e-2, 3.0, clf.classes_, prior)
    np.testing.assert_allclose(clf.coef_, coef, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(clf.intercept_, intercept, rtol=1e-6, atol=1e-9)
    expected_rows = 1 if n_classes == 2 else n_classes
    assert clf.coef_.shape == (expected_rows, X.shape[1])
    assert clf.intercept_.shape == (expected_rows,)
    if prior is not None:
        # the class-balance constraint holds on the unlabeled rows
        unl = y_semi == -1
        f = np.atleast_2d(clf.decision_function(X[unl]).T).T
        target = 2 * (np.bincount(np.searchsorted(clf.classes_, y_semi[~unl]),
                                  minlength=n_classes) / (~unl).sum()) - 1 \
            if isinstance(prior, str) else 2 * np.asarray(prior) - 1
        target = target[1:] if n_classes == 2 else target
        np.testing.assert_allclose(f.mean(axis=0), target, atol=1e-8)


@pytest.mark.parametrize("Est", [LapRLSClassifier, LapSVMClassifier])
def test_string_labels_and_markers(Est):
    X, y = blobs(n_classes=3, seed=4)
    names = np.array(["ant", "bee", "cat"])[y].astype(object)
    y_semi = names.copy()
    y_semi[semi(y, 10) == -1] = ""
    clf = Est(unlabeled="").fit(X, y_semi)
    assert set(clf.classes_) == {"ant", "bee", "cat"}
    assert set(clf.predict(X)) <= set(clf.classes_)
    y_none = names.copy()
    y_none[semi(y, 10) == -1] = None
    clf2 = Est(unlabeled=None).fit(X, y_none)
    np.testing.assert_allclose(clf2.coef_, clf.coef_)
    # -1 may be a real class when another marker names the unlabeled rows
    y_pm = np.where(y == 0, -1, 1)
    y_pm_semi = np.where(semi(y, 10) == -1, 0, y_pm)
    clf3 = Est(unlabeled=0).fit(X, y_pm_semi)
    assert list(clf3.classes_) == [-1, 1]


@pytest.mark.parametrize("Est", [LapRLSClassifier, LapSVMClassifier])
def test_transduction_and_attributes(Est):
    X, y = blobs(n_classes=3, seed=2)
    y_semi = semi(y, 15)
    clf = Est(gamma_I=1.0, graph=KNNGraph(n_neighbors=6)).fit(X, y_semi)
    lab = y_semi != -1
    assert clf.transduction_.shape == y.shape
    np.testing.assert_array_equal(clf.transduction_[lab], y_semi[lab])
    np.testing.assert_array_equal(clf.transduction_[~lab], clf.predict(X[~lab]))
    assert clf.n_iter_ >= 1 and clf.n_features_in_ == X.shape[1]
    assert isinstance(clf.graph_, KNNGraph)
    assert clf.score(X, y) > 0.8


@pytest.mark.parametrize("Est", [LapRLSClassifier, LapSVMClassifier])
def test_prebuilt_graph_is_shared_not_rebuilt(Est):
    X, y = blobs(seed=3)
    graph = KNNGraph(n_neighbors=5).fit(X)
    a = Est(graph=graph)
    b = clone(a)
    assert b.graph is graph
    b.fit(X, semi(y, 10))
    assert b.graph_ is graph
    # an unfitted graph parameter is fitted on a copy, never changed itself
    unfitted = KNNGraph(n_neighbors=5)
    c = Est(graph=unfitted).fit(X, semi(y, 10))
    assert not hasattr(unfitted, "adjacency_") and c.graph_ is not unfitted
    with pytest.raises(ValueError, match="built on 60 rows but X has 59"):
        Est(graph=graph).fit(X[:59], semi(y, 10)[:59])


@pytest.mark.parametrize("sparse", [False, True])
def test_prebuilt_graph_on_other_rows_warns(sparse, tmp_path):
    X, y = blobs(seed=3)
    X = sp.csr_matrix(X) if sparse else X
    graph = KNNGraph(n_neighbors=5).fit(X)
    ys = semi(y, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same rows in another format, dtype or scale
        warnings.filterwarnings("ignore", "The rows of X")  # blobs' row norms
        for same in (X, X.toarray() if sparse else sp.csr_matrix(X), X.astype(np.float32),
                     3 * X):
            LapRLSClassifier(graph=graph).fit(same, ys)
        # a view and a reloaded graph carry the rows' fingerprint
        LapRLSClassifier(graph=graph.with_laplacian(power=2)).fit(X, ys)
        graph.save(tmp_path / "g.npz")
        LapRLSClassifier(graph=KNNGraph.load(tmp_path / "g.npz")).fit(X, ys)
    if sparse:  # the same matrix with every entry split into two duplicate halves
        dup = sp.csr_matrix((np.repeat(X.data / 2, 2), np.repeat(X.indices, 2),
                             2 * X.indptr), shape=X.shape)
        assert not dup.has_canonical_format and abs(dup - X).max() == 0
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warnings.filterwarnings("ignore", "The rows of X")
            LapRLSClassifier(graph=KNNGraph(n_neighbors=5).fit(dup)).fit(dup, ys)
            LapRLSClassifier(graph=graph).fit(dup, ys)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    with pytest.warns(UserWarning, match="does not look like the matrix"):
        LapRLSClassifier(graph=graph).fit(X[perm], ys[perm])
    other, _ = blobs(seed=4)
    with pytest.warns(UserWarning, match="does not look like the matrix"):
        LapRLSClassifier(graph=graph).fit(sp.csr_matrix(other) if sparse else other, ys)


def test_warm_start_fewer_iterations_same_model():
    X, y = blobs(n=120, d=30, n_classes=3, seed=5)
    y_semi = semi(y, 20)
    graph = KNNGraph(n_neighbors=6).fit(X)
    clf = LapRLSClassifier(gamma_I=1.0, graph=graph, warm_start=True, tol=1e-10).fit(X, y_semi)
    clf.set_params(gamma_I=1.1).fit(X, y_semi)
    warm_iter = clf.n_iter_
    cold = LapRLSClassifier(gamma_I=1.1, graph=graph, tol=1e-10).fit(X, y_semi)
    assert warm_iter < cold.n_iter_
    np.testing.assert_allclose(clf.coef_, cold.coef_, rtol=1e-6, atol=1e-9)


def test_pipeline_pickle_and_select_from_model():
    data = load_pcmac("train")
    order = np.random.default_rng(0).permutation(len(data.data))  # the corpus is sorted by class
    texts = [data.data[i] for i in order[:300]]
    held_out = [data.data[i] for i in order[300:400]]
    y_semi = mask_labels(data.target[order[:300]], 30, random_state=0)
    pipe = make_pipeline(TfidfVectorizer(sublinear_tf=True, min_df=2), LapRLSClassifier())
    pipe.fit(texts, y_semi)
    pred = pipe.predict(held_out)
    assert pred.shape == (100,)
    assert np.mean(pred == data.target[order[300:400]]) > 0.6
    again = pickle.loads(pickle.dumps(pipe))
    np.testing.assert_array_equal(again.predict(held_out), pred)
    clf = pipe[-1]
    sel = SelectFromModel(clf, prefit=True, max_features=50)
    Xs = sel.transform(pipe[0].transform(texts))
    assert Xs.shape == (300, 50)


def test_pcmac_defaults_beat_supervised():
    """Real text: the default LapRLS on 50 labels is far better than chance."""
    from linlap.text import make_vectorizer

    train, test = load_pcmac("train"), load_pcmac("test")
    vec = make_vectorizer()
    X, Xt = vec.fit_transform(train.data), vec.transform(test.data)
    y_semi = mask_labels(train.target, 50, random_state=0)
    clf = LapRLSClassifier().fit(X, y_semi)
    err = np.mean(clf.predict(Xt) != test.target)
    assert err < 0.25, err


# -- bad input ------------------------------------------------------------------------

@pytest.mark.parametrize("Est", [LapRLSClassifier, LapSVMClassifier])
def test_errors_name_the_problem(Est):
    X, y = blobs(seed=6)
    y_semi = semi(y, 10)
    with pytest.raises(ValueError, match="no labeled rows"):
        Est().fit(X, np.full(60, -1))
    with pytest.raises(ValueError, match="single class"):
        Est().fit(X, np.where(y_semi == -1, -1, 0))
    Xn = X.toarray()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Est().fit(Xn, y_semi)
    Xn[3, 2] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        Est().fit(sp.csr_matrix(Xn), y_semi)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        Est().fit(X, y_semi[:-1])
    with pytest.raises(ValueError, match="n_neighbors"):
        Est(graph=KNNGraph(n_neighbors=60)).fit(X, y_semi)
    Xe = X.tolil()
    Xe[7, :] = 0
    with pytest.warns(UserWarning, match="1 of 60 rows of X are empty"):
        Est().fit(Xe.tocsr(), y_semi)  # an empty document is an isolated node
    for bad in [dict(gamma_A=-1), dict(gamma_I=np.nan), dict(gamma_A=0, gamma_I=0),
                dict(tol=0), dict(tol=1.0), dict(tol=np.inf), dict(tol=1e-320),
                dict(max_iter=0), dict(class_prior="balanced"),
                dict(class_prior=[0.2, 0.2]), dict(class_prior=[1.5, -0.5]),
                dict(graph="knn")]:
        with pytest.raises(ValueError):
            Est(**bad).fit(X, y_semi)
    with pytest.raises(ValueError, match="needs unlabeled rows"):
        Est(class_prior="labeled").fit(X, y)
    # values fit refuses are refused here too (they give absurd or NaN scores, which
    # predict would turn into a class)
    clf = Est().fit(X, y_semi)
    Z = X[:3].toarray()
    Z[:] = 1e308
    Z[:, ::2] = -1e308
    for Zi in (Z, sp.csr_matrix(Z)):
        for method in (clf.decision_function, clf.predict):
            with pytest.raises(ValueError, match="extreme values"):
                method(Zi)
    clf.coef_ = clf.coef_ * 1e300  # other inputs (a list): caught on the scores
    with np.errstate(all="ignore"), pytest.raises(ValueError, match="non-finite decision"):
        clf.predict((X[:3].toarray() * 1e10).tolist())


@pytest.mark.parametrize("Est", [LapRLSClassifier, LapSVMClassifier])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_decision_function_on_csr_float32_and_float64(Est, n_classes, monkeypatch):
    """A CSR X of float32 or float64 values (int32 or int64 indices, matrix or array) is
    scored by the solvers' numba kernel, on its own arrays (no float64 copy): ``X @ coef_.T
    + intercept_`` to round-off, shape (n,) for two classes, the same predictions; the
    checks stay (NaN, feature count, overflowing scores)."""
    import importlib

    X, y = blobs(n_classes=n_classes, sparse=True, seed=11)
    clf = Est(graph=KNNGraph(n_neighbors=5)).fit(X, semi(y, 12))
    csr = importlib.import_module("linlap._numba.csr")
    kernel, scored = csr.csr_matmat, []

    def counting(indptr, indices, data, *args, **kwargs):
        scored.append(data)
        return kernel(indptr, indices, data, *args, **kwargs)

    monkeypatch.setattr(csr, "csr_matmat", counting)
    X64 = X.tocsr().astype(np.float64)
    wide = X64.copy()
    wide.indices, wide.indptr = wide.indices.astype(np.int64), wide.indptr.astype(np.int64)
    for A in (X64, X64.astype(np.float32), wide, sp.csr_array(X64.astype(np.float32))):
        ref = np.asarray(A @ clf.coef_.T + clf.intercept_)
        assert ref.dtype == np.float64
        F = clf.decision_function(A)
        assert scored.pop() is A.data and F.dtype == np.float64
        assert F.shape == ((X.shape[0],) if n_classes == 2 else (X.shape[0], n_classes))
        np.testing.assert_allclose(F, ref[:, 0] if n_classes == 2 else ref, rtol=1e-12,
                                   atol=1e-12 * np.abs(ref).max())
        np.testing.assert_array_equal(clf.predict(A), clf.predict(A.toarray()))
    Z = X64[:3].copy()
    Z.data[1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.decision_function(Z.astype(np.float32))
    with pytest.raises(ValueError, match="features"):
        clf.decision_function(X64[:, :-1])
    clf.coef_ = clf.coef_ * 1e300
    with np.errstate(all="ignore"), pytest.raises(ValueError, match="non-finite decision"):
        clf.predict(X64[:3] * 1e10)


@pytest.mark.parametrize("Est", [LapRLSClassifier, LapSVMClassifier])
def test_duplicate_documents_give_finite_model(Est):
    X, y = blobs(seed=7)
    Xd = sp.vstack([X, X[:10], X[:10]]).tocsr()  # every one of 10 rows three times
    yd = np.r_[semi(y, 10), np.full(20, -1)]
    for weight in ["binary", "heat", "cosine"]:
        clf = Est(graph=KNNGraph(n_neighbors=4, weight=weight)).fit(Xd, yd)
        assert np.all(np.isfinite(clf.coef_)) and np.all(np.isfinite(clf.intercept_))
        assert np.all(np.isfinite(clf.decision_function(Xd)))


def test_no_convergence_warns():
    from sklearn.exceptions import ConvergenceWarning

    X, y = blobs(seed=8)
    with pytest.warns(ConvergenceWarning):
        LapRLSClassifier(max_iter=1, tol=1e-12).fit(X, semi(y, 10))


# The one deliberate deviation: check_classifiers_classes uses the labels [-1, 1], but -1
# marks unlabeled rows (the scikit-learn semi_supervised convention;
# test_string_labels_and_markers shows -1 as a class with another marker).
EXPECTED_FAILED = {
    "check_classifiers_classes": "-1 marks unlabeled rows",
}


@pytest.mark.parametrize("Est", [LapRLSClassifier, LapSVMClassifier])
def test_accepts_integer_and_float32_input(Est):
    X, y = blobs(sparse=False, seed=9)
    y_semi = semi(y, 10)
    ref = Est().fit(X, y_semi)
    for dtype in (np.float32, np.int64, np.int32):
        Xc = (X * 10).astype(dtype)
        clf = Est().fit(Xc, y_semi)
        assert clf.coef_.dtype == np.float64 and np.all(np.isfinite(clf.coef_))
        assert clf.predict(Xc).shape == y.shape
    np.testing.assert_allclose(Est().fit(X.astype(np.float32), y_semi).coef_,
                               ref.coef_, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_lapsvm_solvers_agree_through_the_estimator(sparse, n_classes):
    X, y = blobs(n_classes=n_classes, sparse=sparse, seed=10 + n_classes)
    y_semi = semi(y, 12, seed=2)
    graph = KNNGraph(n_neighbors=5, power=2).fit(X)
    kw = dict(gamma_A=1e-2, gamma_I=3.0, graph=graph, tol=1e-10, max_iter=200)
    newton = LapSVMClassifier(solver="newton", **kw).fit(X, y_semi)
    tinv = LapSVMClassifier(solver="tinv", **kw).fit(X, y_semi)
    np.testing.assert_allclose(newton.coef_, tinv.coef_, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(newton.intercept_, tinv.intercept_, rtol=1e-4, atol=1e-6)
    # The squared hinge equals the squared loss while every labeled margin is < 1, so
    # LapSVM equals LapRLS exactly when LapRLS leaves all margins below 1, else differs.
    rls = LapRLSClassifier(**kw).fit(X, y_semi)
    lab = y_semi != -1
    F = np.atleast_2d(rls.decision_function(X[lab]).T).T
    T = np.where(y_semi[lab][:, None] == rls.classes_[None, :], 1.0, -1.0)
    T = T[:, 1:] if n_classes == 2 else T
    same = np.allclose(rls.coef_, newton.coef_, rtol=1e-6, atol=1e-9)
    assert same == bool(np.all(T * F < 1))


def test_lapsvm_tinv_factor_reused_and_budget_enforced():
    X, y = blobs(seed=12)
    y_semi = semi(y, 10)
    graph = KNNGraph(n_neighbors=5).fit(X)
    clf = LapSVMClassifier(solver="tinv", graph=graph).fit(X, y_semi)
    factor = clf._tinv_cache[1]
    clf.fit(X, semi(y, 10, seed=3))  # same graph and gamma ratio: same factor object
    assert clf._tinv_cache[1] is factor
    assert "_tinv_cache" not in pickle.loads(pickle.dumps(clf)).__dict__
    # ... while the live estimator keeps its factor through pickling and copying
    copy.deepcopy(clf)
    assert clf._tinv_cache[1] is factor
    with pytest.raises(ValueError, match="memory_budget"):
        LapSVMClassifier(solver="tinv", graph=graph, memory_budget=100).fit(X, y_semi)
    for bad in [dict(solver="sgd"), dict(loss="log"), dict(solver="newton", loss="hinge"),
                dict(solver="tinv", class_prior="labeled"), dict(solver="tinv", gamma_A=0)]:
        with pytest.raises(ValueError):
            LapSVMClassifier(graph=graph, **bad).fit(X, y_semi)


def test_lapsvm_tinv_factor_not_positive_definite_is_a_clear_error():
    # T² = I + ratio·XᵀL^pX ⪰ I exactly; the 100th power of an unnormalised Laplacian
    # (eigenvalues up to twice the largest degree) is beyond double precision
    rng = np.random.default_rng(5)
    X = rng.random((40, 12)) * (rng.random((40, 12)) < 0.5)
    X[X.sum(1) == 0, 0] = 1.0
    X = sp.csr_matrix(X / np.linalg.norm(X, axis=1, keepdims=True))
    y = rng.integers(2, size=40)
    y[:2] = [0, 1]
    y_semi = np.where(np.arange(40) < 12, y, -1)
    graph = KNNGraph(n_neighbors=5, normalized=False, power=100).fit(X)
    LapSVMClassifier(solver="newton", gamma_A=1e-3, gamma_I=1.0, graph=graph).fit(X, y_semi)
    with pytest.raises(ValueError, match="not numerically positive definite.*solver='newton'"):
        LapSVMClassifier(solver="tinv", gamma_A=1e-3, gamma_I=1.0, graph=graph).fit(X, y_semi)


def test_lapsvm_class_prior_holds():
    X, y = blobs(n_classes=3, seed=13)
    y_semi = semi(y, 12)
    clf = LapSVMClassifier(class_prior=[0.2, 0.3, 0.5], tol=1e-10,
                           graph=KNNGraph(n_neighbors=5)).fit(X, y_semi)
    f = clf.decision_function(X[y_semi == -1])
    np.testing.assert_allclose(f.mean(axis=0), 2 * np.array([0.2, 0.3, 0.5]) - 1, atol=1e-6)


@parametrize_with_checks([LapRLSClassifier(), LapSVMClassifier(),
                          LapSVMClassifier(solver="tinv", loss="hinge")],
                         expected_failed_checks=lambda est: EXPECTED_FAILED)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


@pytest.mark.parametrize("Est", [LapRLSClassifier, LapSVMClassifier])
def test_fit_does_not_modify_X(Est):
    X, y = blobs(seed=14)
    X = X.tocsr()
    # unsorted column indices within each row: a valid CSR matrix a fit must leave alone
    X.indices = X.indices.copy()
    for i in range(X.shape[0]):
        a, b = X.indptr[i], X.indptr[i + 1]
        X.indices[a:b] = X.indices[a:b][::-1]
        X.data[a:b] = X.data[a:b][::-1]
    X.has_sorted_indices = False
    before = (X.indices.copy(), X.data.copy(), X.indptr.copy())
    ref = Est(graph=KNNGraph(n_neighbors=5)).fit(X, semi(y, 10))
    for a, b in zip(before, (X.indices, X.data, X.indptr)):
        np.testing.assert_array_equal(a, b)
    # the default graph too (it counts the non-empty rows of X first), and X read-only
    for arr in (X.indices, X.data, X.indptr):
        arr.flags.writeable = False
    Est().fit(X, semi(y, 10))
    for a, b in zip(before, (X.indices, X.data, X.indptr)):
        np.testing.assert_array_equal(a, b)
    assert not X.has_sorted_indices and ref.coef_.shape[1] == X.shape[1]


def test_verbose_reports_graph_and_solver_steps(capsys):
    X, y = blobs(seed=15)
    LapRLSClassifier(verbose=1).fit(X, semi(y, 10))
    out = capsys.readouterr()
    assert "[KNNGraph]" in out.err and "[LapRLS] iteration 1" in out.err
    # the weights 'scaled' resolved to, as the CLI prints them
    est = LapRLSClassifier(gamma_I=3.0, verbose=1).fit(X, semi(y, 10))
    err = capsys.readouterr().err
    assert (f"[LapRLSClassifier] gamma_A = {est.gamma_A_:.3g} ('scaled'), gamma_I = 3; "
            f"10 labeled rows, {X.shape[0] - 10} unlabeled, 2 classes") in err
    LapRLSClassifier().fit(X, semi(y, 10))
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_fit_refuses_before_solving_when_memory_is_short(monkeypatch):
    import linlap._memory as memory

    rng = np.random.RandomState(0)
    X = sp.random(60, 30, density=0.3, format="csr", random_state=rng) + sp.eye(60, 30)
    y = np.where(rng.rand(60) < 0.5, 0, 1)
    y[10:] = -1
    graph = KNNGraph(n_neighbors=5, power=1).fit(X)
    monkeypatch.setattr(memory, "available_bytes", lambda: 1000)
    with pytest.raises(MemoryError, match="LapRLSClassifier on 60 rows"):
        LapRLSClassifier(graph=graph).fit(X, y)


@pytest.mark.parametrize("Est", [LapRLSClassifier, LapSVMClassifier])
def test_float32_csr_is_used_as_is_and_agrees_with_float64(Est):
    X, y = blobs(seed=5)
    X = sp.csr_matrix(X)
    graph = KNNGraph(n_neighbors=5).fit(X)
    y_semi = semi(y, 10)
    a = Est(graph=graph, tol=1e-8).fit(X, y_semi)
    b = Est(graph=graph, tol=1e-8).fit(X.astype(np.float32), y_semi)
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(b.transduction_, a.transduction_)


@pytest.mark.parametrize("bad", [dict(fit_intercept="no"), dict(fit_intercept=np.nan),
                                 dict(warm_start="yes"), dict(verbose=-3),
                                 dict(verbose="loud")])
def test_flags_and_verbose_validated(bad):
    from linlap import (KernelLapRLSClassifier, LapRLSClassifierCV, LapS3VMClassifier,
                        LapSVMPathClassifier)

    X, y = blobs(n=40, seed=3)
    ys = mask_labels(y, 10, random_state=3)
    g = KNNGraph(n_neighbors=5).fit(X)
    ests = [LapRLSClassifier(graph=g), LapSVMClassifier(graph=g), LapS3VMClassifier(graph=g),
            KernelLapRLSClassifier(graph=g), LapRLSClassifierCV(gamma_A=[1e-2], gamma_I=[1.0],
                                                                cv=2, graph=g)]
    if "warm_start" not in bad:
        ests.append(LapSVMPathClassifier(graph=g, cv=2))
    for est in ests:
        with pytest.raises(ValueError, match=next(iter(bad))):
            est.set_params(**bad).fit(X, ys)


def _clusters(n, d, seed, sparse_=False):
    rng = np.random.default_rng(seed)
    cls = rng.integers(0, 2, n)
    X = np.abs(rng.normal(size=(2, d))[cls] * 1.5 + rng.normal(size=(n, d)))
    X[rng.random(X.shape) < 0.3] = 0.0
    y = np.full(n, -1)
    lab = np.r_[np.flatnonzero(cls == 0)[:30], np.flatnonzero(cls == 1)[:30]]
    y[lab] = cls[lab]
    return (sp.csr_matrix(X) if sparse_ else X), y


def test_tinv_hinge_reaches_the_path_minimum():
    from linlap import lapsvm_path

    X, y = _clusters(300, 40, 2, sparse_=True)
    g = KNNGraph(n_neighbors=10, power=1).fit(X)
    gA, gI = 1e-7, 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no liblinear iteration limit
        e = LapSVMClassifier(gamma_A=gA, gamma_I=gI, solver="tinv", loss="hinge",
                             graph=g).fit(X, y)
    l = int((y != -1).sum())
    w, b = lapsvm_path(X, y, g, rho=gA / gI, lambda_min=l * gI).coef_at(2 * l * gI)
    lab = np.flatnonzero(y != -1)
    t = np.where(y[lab] == 1, 1.0, -1.0)
    Lp = g.laplacian_matrix()

    def J(w, b):
        f = X @ w + b
        return (np.maximum(0, 1 - t * f[lab]).mean() + gA * w @ w
                + gI * g.scale_ * f @ (Lp @ f))
    # (liblinear stops at tol=1e-4 on its projected gradient: J within 1e-3 relative)
    assert J(e.coef_[0], e.intercept_[0]) <= J(np.ravel(w), float(np.ravel(b)[0])) * (1 + 1e-3)


def test_tinv_factor_not_reused_after_X_or_graph_change():
    X, y = _clusters(120, 12, 5)
    X3, y3 = _clusters(120, 12, 99)
    g = KNNGraph(n_neighbors=6).fit(X)
    e = LapSVMClassifier(gamma_A=1e-3, gamma_I=0.5, solver="tinv", graph=g).fit(X, y)
    g.fit(X3)  # the same graph object, refitted in place
    e.fit(X3, y3)
    fresh = LapSVMClassifier(gamma_A=1e-3, gamma_I=0.5, solver="tinv", graph=g).fit(X3, y3)
    np.testing.assert_allclose(e.coef_, fresh.coef_, atol=1e-10)
    with pytest.warns(UserWarning, match="does not look like the matrix"):
        e.fit(2 * X3 + 0.1, y3)  # same shape and graph, other X (said so)
    with pytest.warns(UserWarning, match="does not look like the matrix"):
        fresh = LapSVMClassifier(gamma_A=1e-3, gamma_I=0.5, solver="tinv",
                                 graph=g).fit(2 * X3 + 0.1, y3)
    np.testing.assert_allclose(e.coef_, fresh.coef_, atol=1e-10)


def test_score_leaves_out_the_unlabeled_rows():
    # cross_val_score and GridSearchCV score a model with the y it is fitted with; the
    # rows marked unlabeled used to count as errors (0.195 for a 0.9-accurate model)
    from sklearn.model_selection import GridSearchCV, cross_val_score

    from linlap import EMRClassifier, LapRLSClassifierCV

    X, y = blobs(n=120, seed=3)
    ys = semi(y, 30)
    lab = ys != -1
    for est in (LapRLSClassifier(), LapSVMClassifier(),
                LapRLSClassifierCV(gamma_A=[1e-2], gamma_I=[1.0], cv=2),
                EMRClassifier(candidates={"power": [1, 2]})):
        est.fit(X, ys)
        assert est.score(X, ys) == np.mean(est.predict(X[lab]) == ys[lab])
        w = np.arange(1.0, 121.0)
        assert np.isclose(est.score(X, ys, sample_weight=w),
                          np.average(est.predict(X[lab]) == ys[lab], weights=w[lab]))
        with pytest.raises(ValueError, match="scoring needs labeled rows"):
            est.score(X, np.full(120, -1))
    scores = cross_val_score(LapRLSClassifier(), X, ys, cv=3)
    assert scores.min() > 0.7  # every fold's unlabeled rows left out of its score
    gs = GridSearchCV(LapRLSClassifier(), {"gamma_I": [1.0, 10.0]}, cv=3).fit(X, ys)
    assert gs.best_score_ > 0.7
    # string labels: the estimator's own marker
    yt = np.where(ys == -1, "", np.array(["a", "b"])[np.maximum(ys, 0)])
    est = LapRLSClassifier(unlabeled="").fit(X, yt)
    assert est.score(X, yt) == np.mean(est.predict(X[lab]) == yt[lab])


def test_labeled_scorer_scores_the_labeled_rows_only():
    from sklearn.metrics import f1_score
    from sklearn.model_selection import cross_val_score

    from linlap.model_selection import labeled_scorer

    X, y = blobs(n=120, seed=3)
    ys = semi(y, 30)
    lab = ys != -1
    est = LapRLSClassifier().fit(X, ys)
    f1 = labeled_scorer("f1_macro")
    assert np.isclose(f1(est, X, ys), f1_score(ys[lab], est.predict(X[lab]), average="macro"))
    # scikit-learn's scorer counts the unlabeled rows as a class; this one does not
    plain = cross_val_score(LapRLSClassifier(), X, ys, cv=3, scoring="accuracy")
    ours = cross_val_score(LapRLSClassifier(), X, ys, cv=3, scoring=labeled_scorer("accuracy"))
    assert plain.max() < 0.5 < 0.7 < ours.min()
    np.testing.assert_allclose(ours, cross_val_score(LapRLSClassifier(), X, ys, cv=3))
    # string labels with their marker
    yt = np.where(ys == -1, "", np.array(["a", "b"])[np.maximum(ys, 0)])
    est = LapRLSClassifier(unlabeled="").fit(X, yt)
    assert labeled_scorer("accuracy", unlabeled="")(est, X, yt) == est.score(X, yt)


@pytest.mark.parametrize("labels", ["int", "bool"])
@pytest.mark.parametrize("marker", [None, np.nan])
def test_numbers_held_as_objects_are_labels(labels, marker):
    # [0, 1, None, ...] (the README's way to use -1 as a class) was refused as an
    # "unknown label type"
    X, y = blobs(n=60, seed=1)
    ys = semi(y, 20)
    cast = int if labels == "int" else bool
    yo = np.array([marker if v == -1 else cast(v) for v in ys], dtype=object)
    ref = LapRLSClassifier().fit(X, ys)
    est = LapRLSClassifier(unlabeled=marker).fit(X, yo)
    assert est.classes_.dtype == (np.int64 if labels == "int" else bool)
    np.testing.assert_allclose(est.coef_, ref.coef_)
    np.testing.assert_array_equal(est.predict(X).astype(int), ref.predict(X))
    assert est.score(X, yo) == ref.score(X, ys)  # (sklearn's metrics refuse object ints)


def test_default_graph_is_seeded_and_sized_to_the_rows():
    from linlap.estimators._base import default_graph, default_n_neighbors

    # a twentieth of the documents, at least 5, at most 50 and fewer than the documents
    assert [default_n_neighbors(n) for n in (3, 60, 250, 999, 1000, 10**6)] == \
        [2, 5, 12, 49, 50, 50]
    X, y = blobs(n=200, seed=2)
    est = LapRLSClassifier().fit(X, semi(y, 20))
    assert est.graph_.n_neighbors == 10
    # above exact_max_samples the search is randomised: the default graph has a seed
    assert default_graph(X).random_state == 0


def test_wrappers_check_predict_X_against_their_own_fit():
    # CV and EMR handed X to their inner estimator, fitted on the validated array: a
    # DataFrame with its columns reordered was accepted (and a correct one warned)
    from linlap import EMRClassifier, KernelLapRLSClassifier, LapRLSClassifierCV

    X, y = blobs(n=60, seed=4)
    ys = semi(y, 20)
    for est in (LapRLSClassifierCV(gamma_A=[1e-2], gamma_I=[1.0], cv=2),
                EMRClassifier(candidates={"power": [1, 2]})):
        est.fit(X, ys)
        assert est.n_features_in_ == X.shape[1]
        with pytest.raises(ValueError, match=f"{type(est).__name__} is expecting 8 features"):
            est.predict(X[:, :5])
    # a refit with a kernel base forgets the linear fit's weights
    emr = EMRClassifier(candidates={"power": [1, 2]}).fit(X, ys)
    assert hasattr(emr, "coef_")
    emr.set_params(estimator=KernelLapRLSClassifier()).fit(X, ys)
    assert not hasattr(emr, "coef_") and not hasattr(emr, "intercept_")
