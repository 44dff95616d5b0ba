"""Parameter and input checks of the estimators and solvers: each bad value gets a
ValueError naming it (not a silent zero model, a hang or an unrelated numpy error)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from linlap import (EMRClassifier, KernelLapRLSClassifier, KernelLapSVMClassifier, KNNGraph,
                    LapRLSClassifier, LapRLSClassifierCV, LapS3VMClassifier, LapSVMClassifier,
                    LapSVMClassifierCV, LapSVMPathClassifier, LaplacianSpectralClustering)
from linlap.solvers import batched_cg
from linlap.solvers.kernel_pcg import kernel_pcg
from reference import blobs


def semi(y, per_class=5):
    out = np.full(y.size, -1)
    for c in np.unique(y):
        rows = np.flatnonzero(y == c)[:per_class]
        out[rows] = c
    return out


@pytest.fixture(scope="module")
def data():
    X, y = blobs(seed=31, n=60)
    return X, semi(y)


# -- 4, 10: bools, memory_budget ------------------------------------------------------------

@pytest.mark.parametrize("budget", [np.nan, -np.inf, "abc", None, [1, 2], 0, True])
@pytest.mark.parametrize("solver", ["newton", "tinv"])
def test_lapsvm_memory_budget_is_checked(data, solver, budget):
    X, y = data
    with pytest.raises(ValueError, match="^memory_budget must"):
        LapSVMClassifier(solver=solver, memory_budget=budget).fit(X, y)


@pytest.mark.parametrize("budget", [None, np.nan, "abc"])
def test_lapsvm_cv_memory_budget_is_checked(data, budget):
    X, y = data
    with pytest.raises(ValueError, match="^memory_budget must"):
        LapSVMClassifierCV(memory_budget=budget).fit(X, y)


# -- 6: kernel parameters ---------------------------------------------------------------------

@pytest.mark.parametrize("Est", [KernelLapRLSClassifier, KernelLapSVMClassifier])
@pytest.mark.parametrize("kw, name", [
    (dict(recompute_kernel="no"), "recompute_kernel"),
    (dict(recompute_kernel=np.nan), "recompute_kernel"),
    (dict(check_every=True), "check_every"),
    (dict(coef0="abc"), "coef0"), (dict(coef0=np.nan), "coef0"), (dict(coef0=None), "coef0"),
    (dict(kernel="poly", coef0="abc"), "coef0"), (dict(kernel="poly", degree=True), "degree"),
    (dict(gamma=True), "gamma"), (dict(gamma=10**400), "gamma"),
])
def test_kernel_parameters_are_checked(data, Est, kw, name):
    X, y = data
    with pytest.raises(ValueError, match=f"^{name} must"):
        Est(**kw).fit(X, y)


def test_spectral_clustering_checks_coef0_for_every_kernel():
    X, _ = blobs(seed=31, n=30)
    for kernel in ("rbf", "poly", "linear"):
        with pytest.raises(ValueError, match="^coef0 must"):
            LaplacianSpectralClustering(kernel=kernel, coef0="abc").fit(X)


# -- 5: kernel overflow -------------------------------------------------------------------

@pytest.mark.parametrize("Est, solvers", [(KernelLapRLSClassifier, ["pcg", "direct"]),
                                          (KernelLapSVMClassifier, ["pcg", "newton", "dual"])])
@pytest.mark.parametrize("kw", [dict(gamma=1e10, degree=50), dict(gamma=1.0, degree=400)])
def test_kernel_overflow_is_an_error_not_a_zero_model(data, Est, solvers, kw):
    X, y = data
    for solver in solvers:
        with pytest.raises(ValueError, match=r"poly kernel .*non-finite.*degree="):
            Est(kernel="poly", solver=solver, **kw).fit(X, y)


def test_kernel_pcg_treats_a_nonfinite_gradient_as_an_error():
    """A NaN gradient norm fails ``rel > tol``: before, the columns stopped as converged
    (stop_reason 'tol', α = 0)."""
    n = 20
    rows = np.arange(6)
    Y = np.where(np.arange(6) % 2 == 0, 1.0, -1.0)[:, None]

    def kernel_matvec(V):
        return np.full(np.shape(V), np.nan)

    with pytest.raises(ValueError, match="non-finite"):
        kernel_pcg(kernel_matvec, Y, rows, lambda F: F, n_samples=n, gamma_A=1e-2,
                   gamma_I=0.0, scale=1.0, tol=1e-6, max_iter=50)


# -- 7: the Laplacian power and CG on a non-finite operator ------------------------------------

@pytest.mark.parametrize("power", [101, 2000, 10**30, True, 0])
def test_knngraph_power_is_bounded(data, power):
    X, _ = data
    with pytest.raises(ValueError, match=r"^power must be an integer in \[1, 100\]"):
        KNNGraph(n_neighbors=5, power=power).fit(X)
    g = KNNGraph(n_neighbors=5).fit(X)
    with pytest.raises(ValueError, match="^power must"):
        g.with_laplacian(power=power)


def test_power_100_still_fits(data):
    X, y = data
    g = KNNGraph(n_neighbors=5, power=100).fit(X)
    clf = LapRLSClassifier(graph=g).fit(X, y)
    assert np.all(np.isfinite(clf.coef_)) and np.any(clf.coef_ != 0)


@pytest.mark.parametrize("Est", [LapRLSClassifierCV, LapSVMClassifierCV])
def test_cv_power_lists_are_bounded_before_any_work(data, Est, monkeypatch):
    X, y = data

    def no_graph(*args, **kwargs):
        raise AssertionError("a graph was built before the power check")

    monkeypatch.setattr(KNNGraph, "fit", no_graph)
    with pytest.raises(ValueError, match="^power must"):
        Est(power=[1, 10**30]).fit(X, y)


@pytest.mark.parametrize("fitted", [False, True])
def test_emr_candidate_powers_are_bounded(data, fitted):
    X, y = data
    graph = KNNGraph(n_neighbors=5)
    if fitted:
        graph = graph.fit(X)
    with pytest.raises(ValueError, match="^power must"):
        EMRClassifier(graph=graph, candidates={"power": [1, 2000]}).fit(X, y)
    with pytest.raises(ValueError, match="^power must"):
        EMRClassifier(candidates=[KNNGraph(n_neighbors=5), KNNGraph(n_neighbors=5, power=101)]
                      ).fit(X, y)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_batched_cg_raises_on_a_nonfinite_operator(bad):
    """A NaN pᵀAp used to be taken for round-off: the column stopped at its start."""
    A = np.diag(np.arange(1.0, 6.0))

    def matvec(P):
        out = A @ P
        out[0] = bad
        return out

    with pytest.raises(FloatingPointError, match="non-finite"):
        batched_cg(matvec, np.ones((5, 2)), tol=1e-10, max_iter=20, warn=False)
    with pytest.raises(ValueError, match="non-finite"):
        batched_cg(matvec, np.ones(5), tol=1e-10, max_iter=20, warn=False)


# -- 8: a y whose dtype cannot hold the marker ---------------------------------------------

@pytest.mark.parametrize("Est", [LapRLSClassifier, KernelLapRLSClassifier])
def test_marker_that_y_cannot_hold(data, Est):
    X, y = data
    for dtype in (np.uint8, np.uint16):
        # -1 wrapped to 255 / 65535: a class, or the marker? taken as a class, said so
        with pytest.warns(UserWarning, match=f"dtype {np.dtype(dtype).name}.*cannot hold"):
            clf = Est().fit(X, y.astype(dtype))
        assert clf.classes_.size == 3
    for marker in ("-1", True):
        with pytest.raises(ValueError, match="holds numbers"):
            Est(unlabeled=marker).fit(X, y)
        with pytest.raises(ValueError, match="holds numbers"):
            Est(unlabeled=marker).fit(X, y.astype(float))


def test_markers_that_fit_y_still_work(data):
    X, y = data
    ref = LapRLSClassifier().fit(X, y)
    # a fully labeled uint8 y with the default marker (a 0/255 mask's classes included)
    y_full = np.where(y == -1, 0, y).astype(np.uint8)
    assert LapRLSClassifier().fit(X, y_full).classes_.dtype == np.uint8
    with pytest.warns(UserWarning, match="taken as a class"):
        clf = LapRLSClassifier().fit(X, (255 * np.where(y == -1, 0, y)).astype(np.uint8))
    assert list(clf.classes_) == [0, 255]
    # a signed y, -1.0 as marker; int labels held as objects with None; bools with None/NaN
    np.testing.assert_allclose(LapRLSClassifier(unlabeled=-1.0).fit(X, y).coef_, ref.coef_)
    y_obj = np.array([None if v == -1 else int(v) for v in y], dtype=object)
    np.testing.assert_allclose(LapRLSClassifier(unlabeled=None).fit(X, y_obj).coef_,
                               ref.coef_)
    for marker in (None, np.nan):
        y_bool = np.array([marker if v == -1 else bool(v) for v in y], dtype=object)
        clf = LapRLSClassifier(unlabeled=marker).fit(X, y_bool)
        assert list(clf.classes_) == [False, True]
        np.testing.assert_allclose(clf.coef_, ref.coef_)
    # a uint8 y whose marker is the wrapped value, named as such
    y_u8 = y.astype(np.uint8)
    np.testing.assert_allclose(LapRLSClassifier(unlabeled=255).fit(X, y_u8).coef_, ref.coef_)


# -- 9: every labeled row empty ---------------------------------------------------------------

@pytest.mark.parametrize("Est", [LapRLSClassifier, LapSVMClassifier, KernelLapRLSClassifier,
                                 KernelLapSVMClassifier, LapSVMPathClassifier, EMRClassifier,
                                 LapRLSClassifierCV, LapSVMClassifierCV, LapS3VMClassifier])
def test_every_labeled_row_empty_is_an_error(data, Est):
    X, y = data
    X = sp.lil_matrix(X)
    X[np.flatnonzero(y != -1), :] = 0
    with pytest.raises(ValueError, match="every labeled row is empty: nothing to learn from"):
        Est().fit(sp.csr_matrix(X), y)


# -- 11: integers beyond int64 --------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: LapRLSClassifier(gamma_A=10**30), lambda: LapRLSClassifier(gamma_I=10**30),
    lambda: LapSVMClassifier(gamma_A=10**30), lambda: LapSVMClassifier(solver="tinv",
                                                                       gamma_A=10**30),
    lambda: KernelLapRLSClassifier(gamma=10**30), lambda: KernelLapRLSClassifier(gamma_A=10**30),
    lambda: KernelLapSVMClassifier(gamma_I=10**30), lambda: LapS3VMClassifier(gamma_U=10**30),
    lambda: LapSVMPathClassifier(rho=10**30, cv=2), lambda: EMRClassifier(gamma_R=10**30),
    lambda: LapRLSClassifier(graph=KNNGraph(n_neighbors=5, weight="heat",
                                            heat_sigma=10**30)),
])
def test_integers_beyond_int64_are_numbers(data, make):
    X, y = data
    est = make().fit(X, y)
    assert np.all(np.isfinite(est.decision_function(X)))


def test_integers_beyond_int64_give_the_float_model(data):
    X, y = data
    a = LapRLSClassifier(gamma_I=10**20).fit(X, y)
    b = LapRLSClassifier(gamma_I=1e20).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)


@pytest.mark.parametrize("make, name", [
    (lambda: LapRLSClassifier(gamma_A=10**400), "gamma_A"),
    (lambda: LapRLSClassifier(gamma_I=-10**30), "gamma_I"),
    (lambda: KernelLapRLSClassifier(gamma_A=10**400), "gamma_A"),
    (lambda: EMRClassifier(gamma_R=10**400), "gamma_R"),
    (lambda: LapRLSClassifier(graph=KNNGraph(weight="heat", heat_sigma=10**400)),
     "heat_sigma"),
    (lambda: LapRLSClassifierCV(gamma_A=[10**400]), "every gamma_A"),
])
def test_integers_overflowing_float64_are_refused(data, make, name):
    X, y = data
    with pytest.raises(ValueError, match=f"^{name} must"):
        make().fit(X, y)


def test_spectral_clustering_reg_beyond_int64():
    X, _ = blobs(seed=31, n=30)
    LaplacianSpectralClustering(reg=10**30, random_state=0).fit(X)
    with pytest.raises(ValueError, match="^reg must"):
        LaplacianSpectralClustering(reg=10**400).fit(X)


# -- 12: S3VM with a huge gamma_A ---------------------------------------------------------------

def test_s3vm_huge_gamma_A_names_the_weights(data):
    X, y = data
    with pytest.raises(ValueError, match=r"gamma_A=1e\+300.*huge weight") as info:
        LapS3VMClassifier(gamma_A=1e300).fit(X, y)
    assert "are not tiny" not in str(info.value)


def test_mask_labels_on_string_labels_fits_with_the_default_marker(data):
    """mask_labels writes -1 into an object array of strings: the default marker marks
    those rows (it was refused as 'matches no row')."""
    from linlap.datasets import mask_labels

    X, y = data
    names = np.array(["neg", "pos"])[np.where(y == -1, 0, y)]
    ym = mask_labels(names, 4, per_class=True, random_state=0)
    clf = LapRLSClassifier().fit(X, ym)
    assert list(clf.classes_) == ["neg", "pos"]
    # a string y the marker matches nowhere is still refused
    with pytest.raises(ValueError, match="matches no row"):
        LapRLSClassifier().fit(X, names)


def test_few_unlabeled_rows_warn_with_the_scaled_gamma_I(data):
    X, y = data
    lab = y != -1
    with pytest.warns(UserWarning, match="rows are unlabeled: gamma_I='scaled'") as record:
        LapRLSClassifier().fit(X[lab], y[lab])
    assert record[0].filename == __file__  # points at the caller's line
    # EMR resolves 'scaled' before its base fits: it warns itself, once
    with pytest.warns(UserWarning, match="rows are unlabeled: gamma_I='scaled'") as record:
        EMRClassifier(candidates={"power": [1, 2]}, max_iter=2).fit(X[lab], y[lab])
    assert sum("rows are unlabeled" in str(w.message) for w in record) == 1
    assert record[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", "The rows of X")  # the fixture's row norms
        LapRLSClassifier(gamma_I=0.1).fit(X[lab], y[lab])  # a chosen weight: no warning
        LapRLSClassifier().fit(X, y)


def test_nonempty_rows_sums_duplicates_without_touching_X():
    """Non-canonical CSR (duplicates that may cancel, unsorted indices): the mask equals
    the dense one, and X keeps its entries (no sum_duplicates or sort in place)."""
    from linlap.estimators._base import nonempty_rows

    rng = np.random.default_rng(0)
    for _ in range(200):
        n, d, nnz = rng.integers(1, 30), rng.integers(1, 8), rng.integers(0, 60)
        rows, cols = rng.integers(0, n, nnz), rng.integers(0, d, nnz)
        vals = rng.choice([-2.0, -1.0, 0.0, 1.0, 2.0], nnz)
        order = np.argsort(rows, kind="stable")
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])
        for dtype in (np.float64, np.float32, np.int64):
            X = sp.csr_matrix((vals[order].astype(dtype), cols[order], indptr), shape=(n, d))
            dense = sp.coo_matrix((vals, (rows, cols)), shape=(n, d)).toarray()  # summed
            np.testing.assert_array_equal(nonempty_rows(X), np.any(dense != 0, axis=1))
            assert X.nnz == nnz
            np.testing.assert_array_equal(X.indices, cols[order])


def test_default_graph_caps_the_svd_dimension_by_rows_and_features():
    """The graph the estimators (and ``linlap fit``) build caps the SVD's dimension as it
    caps k, so the SVD space (above 50,000 rows, or asked for) works on few features."""
    from linlap.estimators._base import default_graph

    rng = np.random.default_rng(0)
    X = rng.random((200, 10))
    g = default_graph(X)
    assert g.n_components == 10 and g.n_neighbors == 10  # 200 / 20
    X[30:] = 0.0  # 30 non-empty rows
    assert default_graph(sp.csr_matrix(X)).n_components == 10
    assert default_graph(sp.csr_matrix(rng.random((30, 80)))).n_components == 30
    fitted = default_graph(X[:30], space="svd", n_neighbors=5).fit(X[:30])
    assert fitted.space_ == "svd" and fitted.n_neighbors == 5
