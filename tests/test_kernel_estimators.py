"""KernelLapSVMClassifier / KernelLapRLSClassifier: estimator conventions, solvers agree,
early stopping on the two moons of seed 003 Figure 3, memory refusal."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import make_moons
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from linlap import KNNGraph
from linlap.estimators import KernelLapRLSClassifier, KernelLapSVMClassifier


def euclidean_graph(X, k):
    """kNN graph by Euclidean distance through KNNGraph's cosine search: lifting x to
    (x, c) with c ≫ ‖x‖ makes the angle between lifted points monotone in ‖x − z‖ up to
    O(‖x‖²/c²), enough to find the same neighbours on a small 2-D set."""
    Z = np.hstack([X, np.full((X.shape[0], 1), 1e3 * np.abs(X).max())])
    return KNNGraph(n_neighbors=k, weight="binary", normalized=False, power=1,
                    algorithm="exact").fit(Z)


@pytest.fixture(scope="module")
def moons():
    X, truth = make_moons(200, noise=0.05, random_state=0)
    y = np.full(200, -1)
    for c in (0, 1):  # one labeled point per class, as in Figure 3
        y[np.flatnonzero(truth == c)[0]] = c
    return X, y, truth, euclidean_graph(X, 6)


def test_euclidean_lift_gives_euclidean_neighbours(moons):
    X, _, _, g = moons
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    exact = np.argsort(D, axis=1)[:, :6]
    same = np.mean([len(set(a) & set(b)) / 6 for a, b in zip(exact, g.neighbors_)])
    assert same > 0.98


def test_two_moons_stability_check_stops_early_at_the_optimum_accuracy(moons):
    X, y, truth, g = moons
    kw = dict(gamma_A=1e-4, gamma_I=10.0, gamma=4.0, graph=g)
    newton = KernelLapSVMClassifier(solver="newton", **kw).fit(X, y)
    full = KernelLapSVMClassifier(early_stopping=None, tol=1e-8, **kw).fit(X, y)
    early = KernelLapSVMClassifier(early_stopping="stability", **kw).fit(X, y)
    acc = lambda c: np.mean(c.transduction_ == truth)  # noqa: E731
    assert acc(newton) >= 0.99
    assert early.stop_reason_ == "stability" and early.n_iter_ <= 40
    assert early.n_iter_ < full.n_iter_ / 2
    assert acc(early) == acc(newton) == acc(full)
    np.testing.assert_allclose(full.decision_function(X), newton.decision_function(X),
                               atol=1e-5)
    # θ = round(√200 / 2) = 7; the first check only records the labels
    assert early.n_iter_ % 7 == 0 and early.n_iter_ >= 14


@pytest.mark.parametrize("sparse", [True, False])
def test_pcg_matches_newton_and_predicts_out_of_sample(sparse):
    rng = np.random.default_rng(0)
    n = 90
    X = sp.random(n + 20, 12, density=0.5, random_state=rng, format="csr")
    X.data = rng.random(X.data.size)
    truth = (np.asarray(X[:, :6].sum(axis=1)).ravel() > np.asarray(X[:, 6:].sum(axis=1)).ravel())
    truth = truth.astype(int)
    Xtr, Xte = (X[:n], X[n:]) if sparse else (X[:n].toarray(), X[n:].toarray())
    y = np.full(n, -1)
    y[:24] = truth[:24]
    g = KNNGraph(n_neighbors=8).fit(Xtr)
    kw = dict(gamma_A=1e-2, gamma_I=0.1, gamma=0.5, graph=g)
    pcg = KernelLapSVMClassifier(early_stopping=None, tol=1e-10, **kw).fit(Xtr, y)
    newton = KernelLapSVMClassifier(solver="newton", **kw).fit(Xtr, y)
    assert pcg.stop_reason_ == "tol" and newton.stop_reason_ == "newton"
    np.testing.assert_allclose(pcg.decision_function(Xte), newton.decision_function(Xte),
                               atol=1e-6)
    # decision_function is K(X, X_fit) α + b with scikit-learn's kernel
    K = pairwise_kernels(Xte, Xtr, metric="rbf", gamma=0.5)
    np.testing.assert_allclose(pcg.decision_function(Xte),
                               K @ pcg.dual_coef_[0] + pcg.intercept_[0], atol=1e-10)
    assert pcg.dual_coef_.shape == (1, n) and pcg.intercept_.shape == (1,)
    assert pcg.graph_ is g
    np.testing.assert_array_equal(pcg.predict(Xte),
                                  (pcg.decision_function(Xte) > 0).astype(int))
    # transduction_: given labels on labeled rows, predictions elsewhere
    np.testing.assert_array_equal(pcg.transduction_[:24], y[:24])
    np.testing.assert_array_equal(pcg.transduction_[24:], pcg.predict(Xtr[24:]))


def test_laprls_direct_and_pcg_agree_multiclass_string_labels():
    rng = np.random.default_rng(1)
    centers = np.array([[0, 0], [3, 0], [0, 3]])
    X = np.vstack([c + rng.normal(0, 0.6, (40, 2)) for c in centers])
    names = np.array(["a", "b", "c"])
    truth = np.repeat(names, 40)
    y = np.full(120, "", dtype=object)
    for i in (0, 1, 40, 41, 80, 81):
        y[i] = truth[i]
    g = euclidean_graph(X, 6)
    kw = dict(gamma_A=1e-3, gamma_I=1.0, gamma=1.0, graph=g, unlabeled="")
    direct = KernelLapRLSClassifier(**kw).fit(X, y)
    pcg = KernelLapRLSClassifier(solver="pcg", early_stopping=None, tol=1e-10, **kw).fit(X, y)
    assert direct.solver_ == "direct" and direct.stop_reason_ == "direct"
    assert pcg.solver_ == "pcg"
    assert list(direct.classes_) == ["a", "b", "c"]
    assert direct.dual_coef_.shape == (3, 120) and direct.decision_function(X).shape == (120, 3)
    np.testing.assert_allclose(pcg.decision_function(X), direct.decision_function(X),
                               atol=1e-6)
    assert np.mean(direct.predict(X) == truth) > 0.9
    assert np.mean(direct.transduction_ == truth) > 0.9
    # the one-vs-rest SVM with the stability check on the same data
    svm = KernelLapSVMClassifier(**kw).fit(X, y)
    assert svm.stop_reason_ in ("stability", "tol")
    assert np.mean(svm.predict(X) == truth) > 0.9


def test_validation_and_mixed_checks(moons):
    X, y, truth, g = moons
    Xv, yv = make_moons(30, noise=0.05, random_state=1)
    kw = dict(gamma_A=1e-4, gamma_I=10.0, gamma=4.0, graph=g)
    val = KernelLapSVMClassifier(early_stopping="validation", **kw).fit(X, y, X_val=Xv,
                                                                       y_val=yv)
    mixed = KernelLapSVMClassifier(early_stopping="mixed", **kw).fit(X, y, X_val=Xv,
                                                                  y_val=yv)
    stab = KernelLapSVMClassifier(early_stopping="stability", **kw).fit(X, y)
    assert val.stop_reason_ == "validation" and mixed.stop_reason_ == "mixed"
    assert mixed.n_iter_ >= max(val.n_iter_, stab.n_iter_)
    with pytest.raises(ValueError, match="X_val"):
        KernelLapSVMClassifier(early_stopping="validation", **kw).fit(X, y)
    with pytest.raises(ValueError, match="not among"):
        KernelLapSVMClassifier(early_stopping="validation", **kw).fit(
            X, y, X_val=Xv, y_val=np.where(yv == 1, 7, 0))
    with pytest.raises(ValueError, match="not among.*None"):  # not a TypeError from sorting
        KernelLapSVMClassifier(early_stopping="validation", **kw).fit(
            X, y, X_val=Xv, y_val=np.where(yv == 1, None, 0).astype(object))
    with pytest.raises(ValueError, match="both"):
        KernelLapSVMClassifier(**kw).fit(X, y, X_val=Xv)


def test_memory_budget_refusal_and_recomputed_kernel(moons):
    X, y, truth, g = moons
    kw = dict(gamma_A=1e-4, gamma_I=10.0, gamma=4.0, graph=g, early_stopping=None, tol=1e-9)
    small = 4 * 200 * 200 - 1
    with pytest.raises(ValueError, match="LapSVMClassifier"):
        KernelLapSVMClassifier(memory_budget=small, **kw).fit(X, y)
    with pytest.raises(ValueError, match="solver='pcg'"):
        KernelLapSVMClassifier(solver="newton", memory_budget=10**5, **kw).fit(X, y)
    with pytest.raises(ValueError, match="LapRLSClassifier"):
        KernelLapRLSClassifier(solver="direct", memory_budget=10**5, **kw).fit(X, y)
    rec = KernelLapSVMClassifier(memory_budget=small, recompute_kernel=True, **kw).fit(X, y)
    f32 = KernelLapSVMClassifier(memory_budget=8 * 200 * 200 - 1, **kw).fit(X, y)
    ref = KernelLapSVMClassifier(**kw).fit(X, y)
    assert rec.kernel_dtype_ is None and f32.kernel_dtype_ == np.float32
    assert ref.kernel_dtype_ == np.float64
    np.testing.assert_allclose(rec.decision_function(X), ref.decision_function(X), atol=1e-7)
    np.testing.assert_allclose(f32.decision_function(X), ref.decision_function(X), atol=1e-4)


def test_graph_built_when_none_and_prebuilt_graph_checked():
    rng = np.random.default_rng(3)
    X = rng.random((10, 5))
    y = np.full(10, -1)
    y[:4] = [0, 1, 0, 1]
    clf = KernelLapSVMClassifier().fit(X, y)
    assert clf.graph_.n_samples_fit_ == 10 and clf.graph_.n_neighbors == 5
    g = KNNGraph(n_neighbors=5).fit(X[:8])
    with pytest.raises(ValueError, match="built on 8 rows"):
        KernelLapSVMClassifier(graph=g).fit(X, y)


def test_warm_start_and_clone(moons):
    X, y, truth, g = moons
    kw = dict(gamma_A=1e-4, gamma_I=10.0, gamma=4.0, graph=g, early_stopping=None, tol=1e-8)
    clf = KernelLapSVMClassifier(warm_start=True, **kw).fit(X, y)
    first = clf.n_iter_
    clf.fit(X, y)
    assert clf.n_iter_ < first / 4
    c2 = clone(clf)
    assert c2.get_params()["graph"] is g and not hasattr(c2, "dual_coef_")


def test_pipeline_with_fit_params(moons):
    X, y, truth, g = moons
    Xv, yv = make_moons(30, noise=0.05, random_state=1)
    pipe = make_pipeline(FunctionTransformer(),
                         KernelLapSVMClassifier(1e-4, 10.0, gamma=4.0, graph=g,
                                                early_stopping="validation"))
    pipe.fit(X, y, kernellapsvmclassifier__X_val=Xv, kernellapsvmclassifier__y_val=yv)
    assert np.mean(pipe.predict(X) == truth) > 0.95


@pytest.mark.parametrize("params,match", [
    (dict(gamma_A=0.0), "gamma_A"),
    (dict(gamma_I=-1.0), "gamma_I"),
    (dict(kernel="sigmoid"), "kernel"),
    (dict(gamma=0.0), "gamma must"),
    (dict(gamma="wide"), "gamma must"),
    (dict(solver="lbfgs"), "solver"),
    (dict(early_stopping="sometimes"), "early_stopping"),
    (dict(tol=0), "tol"),
    (dict(tol=1.0), "tol must be a number strictly between 0 and 1"),
    (dict(tol=1e-320), "tol must be at least 2.23e-308"),
    (dict(max_iter=0), "max_iter"),
    (dict(check_every=0), "check_every"),
    (dict(stability_tol=1.5), "stability_tol"),
    (dict(graph="knn"), "graph"),
])
def test_bad_parameters(params, match):
    X = np.random.default_rng(0).random((10, 3))
    y = np.array([0, 1] + [-1] * 8)
    with pytest.raises(ValueError, match=match):
        KernelLapSVMClassifier(**params).fit(X, y)


def test_bad_labels():
    X = np.random.default_rng(0).random((10, 3))
    with pytest.raises(ValueError, match="no labeled rows"):
        KernelLapSVMClassifier().fit(X, np.full(10, -1))
    with pytest.raises(ValueError, match="single class"):
        KernelLapSVMClassifier().fit(X, np.array([1, 1] + [-1] * 8))
    with pytest.raises(ValueError, match="NaN|infinity"):
        X2 = X.copy()
        X2[0, 0] = np.nan
        KernelLapSVMClassifier().fit(X2, np.array([0, 1] + [-1] * 8))


def test_auto_solver_falls_back_to_pcg_within_the_budget():
    rng = np.random.default_rng(4)
    X = rng.random((120, 5))
    y = np.full(120, -1)
    y[:20] = np.arange(20) % 2
    g = KNNGraph(n_neighbors=5).fit(X)
    # direct needs 3·8·121² ≈ 351 kB; the float64 Gram matrix 115 kB
    clf = KernelLapRLSClassifier(graph=g, memory_budget=200_000).fit(X, y)
    assert clf.solver_ == "pcg"
    with pytest.raises(ValueError, match="solver='pcg'"):
        KernelLapRLSClassifier(graph=g, solver="direct", memory_budget=200_000).fit(X, y)


# -- ill-conditioned dense solves and the row-norm warnings ---------------------------------
def gaussian_rows(n=80, seed=1):
    """Unit rows in 6 dimensions, classes by a linear rule, 10 labeled rows per class, and
    a kNN graph (cosine: the same for the rows scaled by any factor)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 6))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    truth = (X @ rng.standard_normal(6) > 0).astype(int)
    y = np.full(n, -1)
    for c in (0, 1):
        y[np.flatnonzero(truth == c)[:10]] = c
    return X, truth, y, KNNGraph(n_neighbors=6, power=2, algorithm="exact").fit(X)


def linear_kernel_J(clf, X, y, g, loss):
    """J of a fitted linear-kernel model, and min J over the same problem written in
    feature space on the rows X / m (m their norm): (w, b) by L-BFGS, γ_A / m²."""
    from scipy.optimize import minimize

    rows = np.flatnonzero(y != -1)
    t = np.where(y[rows] == clf.classes_[1], 1.0, -1.0)
    M = g.laplacian_matvec(np.eye(X.shape[0]))
    c = clf.gamma_I * g.scale_

    def J(f, ridge):
        o = f[rows]
        e = np.where(t * o < 1, o - t, 0.0) if loss == "squared_hinge" else o - t
        return np.mean(e * e) + ridge + c * f @ M @ f, e

    a = clf.dual_coef_[0]
    K = X @ X.T
    J_fit = J(K @ a + clf.intercept_[0], clf.gamma_A * a @ K @ a)[0]
    m = np.linalg.norm(X[0])
    Xu, gA = X / m, clf.gamma_A / m ** 2

    def fun(z):
        f = Xu @ z[:-1] + z[-1]
        value, e = J(f, gA * z[:-1] @ z[:-1])
        gf = 2 * c * M @ f
        gf[rows] += 2 * e / rows.size
        return value, np.r_[Xu.T @ gf + 2 * gA * z[:-1], gf.sum()]

    J_min = minimize(fun, np.zeros(X.shape[1] + 1), jac=True, method="L-BFGS-B",
                     options=dict(maxiter=10000, ftol=1e-16, gtol=1e-14)).fun
    return J_fit, J_min


@pytest.mark.parametrize("scale,gamma_A", [(1e6, 1e-4), (1.0, 1e-16)])
@pytest.mark.parametrize("Est,solver,loss", [(KernelLapRLSClassifier, "auto", "squared"),
                                             (KernelLapSVMClassifier, "newton", "squared_hinge")])
def test_dense_solvers_finish_an_ill_conditioned_fit_by_pcg(scale, gamma_A, Est, solver, loss):
    # rows of norm 1e6 under the linear kernel (or unit rows with gamma_A = 1e-16): the
    # dense solve returned a model far from the minimiser (56 % or 50 % on its own labeled
    # rows) with no warning, or only "increase max_iter"
    from scipy.linalg import LinAlgWarning

    X, truth, y, g = gaussian_rows()
    X = X * scale
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = Est(gamma_A, 1.0, kernel="linear", solver=solver, graph=g).fit(X, y)
    J_fit, J_min = linear_kernel_J(clf, X, y, g, loss)
    assert abs(J_fit - J_min) < 1e-7
    lab = y != -1
    assert np.all(clf.predict(X[lab]) == y[lab])
    kinds = [w.category for w in caught]
    assert LinAlgWarning in kinds and clf.solver_ == "pcg" and clf.stop_reason_ == "tol"
    assert any("Solved by PCG" in str(w.message) for w in caught)
    # the row-norm warning tells why, for the rows of norm 1e6
    assert (UserWarning in kinds) == (scale != 1.0)


@pytest.mark.parametrize("Est,loss", [(KernelLapRLSClassifier, "squared"),
                                      (KernelLapSVMClassifier, "squared_hinge")])
def test_pcg_reaches_the_minimum_whatever_the_scale_of_K(Est, loss):
    # rows of norm 1e6 under the linear kernel: K ~ 1e12. PCG's preconditioner
    # blockdiag(1, K) left the bias's gradient out of the stopping rule, and
    # solver='pcg' stopped at its tol with J 1.2e-3 above the minimum; it now runs on
    # K / mean(diag K)
    X, truth, y, g = gaussian_rows()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the rows' norm
        clf = Est(1e-4, 1.0, kernel="linear", solver="pcg", early_stopping=None,
                  graph=g).fit(X * 1e6, y)
    J_fit, J_min = linear_kernel_J(clf, X * 1e6, y, g, loss)
    assert clf.stop_reason_ == "tol" and abs(J_fit - J_min) < 1e-8


def test_dual_refuses_an_ill_conditioned_fit_and_names_the_remedies():
    X, truth, y, g = gaussian_rows()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the rows' norm
        with pytest.raises(ValueError, match="worse than the zero model.*normalise the rows"):
            KernelLapSVMClassifier(kernel="linear", solver="dual", graph=g).fit(X * 1e6, y)


def test_dense_fit_with_a_huge_laplacian_power_warns_that_it_is_not_the_minimiser():
    # graph power 100 (accepted): the closed form returned J above the zero model's, at
    # 50 % on its own labeled rows, silently
    from sklearn.exceptions import ConvergenceWarning

    X, truth, y, _ = gaussian_rows()
    g = KNNGraph(n_neighbors=6, power=100, algorithm="exact").fit(X)
    with pytest.warns(ConvergenceWarning, match="not the minimiser of J"):
        clf = KernelLapRLSClassifier(graph=g, max_iter=200).fit(X, y)
    assert clf.solver_ == "pcg" and clf.stop_reason_ == "max_iter" and clf.n_iter_ == 200


def test_row_norm_warnings_of_the_kernel_classifiers():
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.feature_extraction.text import TfidfVectorizer

    X, truth, y, g = gaussian_rows()
    # scaled rows: with the linear kernel gamma_A acts as gamma_A / m² (solver='pcg': at
    # this scale the closed form would add a LinAlgWarning)
    with pytest.warns(UserWarning, match="norms around 1e\\+03.*acts as 1e-10"):
        KernelLapRLSClassifier(kernel="linear", solver="pcg", graph=g).fit(X * 1e3, y)
    # rows of unequal norms: the graph term compares x·w-like decision values (with the
    # linear kernel their median, 2.6, warns too)
    uneven = X * np.linspace(0.2, 5, X.shape[0])[:, None]
    for kernel in ("linear", "poly"):
        with pytest.warns(UserWarning) as record:
            KernelLapRLSClassifier(kernel=kernel, graph=g).fit(uneven, y)
        messages = [str(w.message) for w in record]
        assert any(m.startswith("The rows of X are not normalised") for m in messages)
        assert any("norms around 2.6" in m for m in messages) == (kernel == "linear")
    # the polynomial kernel depends on the rows' scale unless gamma='scale'
    with pytest.warns(UserWarning, match="norms around 1e\\+03.*kernel='poly' and gamma=1.0"):
        KernelLapRLSClassifier(kernel="poly", gamma=1.0, degree=2, solver="pcg", graph=g,
                               max_iter=5).fit(X * 1e3, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        KernelLapRLSClassifier(kernel="poly", degree=2, solver="pcg", graph=g,
                               max_iter=5).fit(X * 1e3, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the RBF kernel compares distances: no warning on either
        KernelLapRLSClassifier(graph=g).fit(uneven, y)
        KernelLapRLSClassifier(graph=g).fit(X * 1e3, y)
        # unit-norm TF-IDF rows: none with any kernel
        docs = [f"alpha beta {w} gamma {w}{i % 3}" for i, w in
                enumerate(["delta", "epsilon", "zeta", "eta"] * 10)]
        T = TfidfVectorizer().fit_transform(docs)
        labels = np.full(len(docs), -1)
        labels[:4] = [0, 1, 0, 1]
        gt = KNNGraph(n_neighbors=5).fit(T)
        for kernel in ("linear", "poly", "rbf"):
            KernelLapRLSClassifier(kernel=kernel, graph=gt).fit(T, labels)


def test_rows_too_small_for_float64():
    # rows of norm 1e-160: K's mean diagonal is subnormal (PCG's kernel_scale falls back
    # to 1 instead of overflowing gamma_A / sigma and blaming gamma_A), and gamma='scale'
    # would be infinite (said so, not "gamma must be finite")
    from linlap.solvers.kernel_pcg import kernel_scale

    assert kernel_scale(np.full(5, 1e-320)) == 1.0 and kernel_scale(np.full(5, 4.0)) == 4.0
    X, truth, y, g = gaussian_rows()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the rows' scale, warned
        clf = KernelLapRLSClassifier(kernel="linear", gamma=1.0, solver="pcg",
                                     graph=g).fit(X * 1e-160, y)
        assert clf.stop_reason_ == "tol"
        with pytest.raises(ValueError, match="gamma='scale' is 1 / \\(n_features x X.var"):
            KernelLapRLSClassifier(kernel="linear", graph=g).fit(X * 1e-160, y)


def test_a_document_labeled_with_both_classes_is_no_ill_conditioned_solve():
    # two identical rows with opposite labels: K annihilates the gradient at z = 0, so the
    # zero model is a minimiser; the relative gradient of the dense solve was inf (0 in
    # the denominator), a spurious LinAlgWarning and a fallback to PCG
    rng = np.random.default_rng(1)
    X = rng.standard_normal((80, 6))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X[1] = X[0]
    y = np.full(80, -1)
    y[0], y[1] = 0, 1
    g = KNNGraph(n_neighbors=6, power=2, algorithm="exact").fit(X)
    for est in (KernelLapRLSClassifier(solver="direct", graph=g),
                KernelLapSVMClassifier(solver="newton", graph=g)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            est.fit(X, y)
        assert est.solver_ == est.solver
        assert np.abs(est.decision_function(X)).max() < 1e-9
