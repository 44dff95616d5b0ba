"""The weights of the defaults: gamma_I='scaled' (500 over the labeled rows per class),
gamma_A='scaled' (1e-6 times the labeled rows per class, clipped) — the defaults of
LapRLSClassifier and LapSVMClassifier — and gamma_I='auto' (the cross-validated choice,
linlap.estimators.cv.select_gamma_I)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from reference import dense_solution
from sklearn.model_selection import StratifiedKFold

from linlap import EMRClassifier, KNNGraph, LapRLSClassifier, LapSVMClassifier
from linlap.estimators import SCALED_GAMMA_A, SCALED_GAMMA_I, scaled_gamma_A, scaled_gamma_I
from linlap.estimators.cv import AUTO_GAMMA_I_FACTORS, select_gamma_I
from linlap.solvers._problem import pm1_targets, predict_index


def _problem(graph_carries_labels, sparse, n=240, d=40, n_classes=2, seed=0, signal=0.8):
    """Documents whose own features identify the class only weakly (a few noisy
    class-specific terms, of strength ``signal``), and a 10-NN graph built either on class-pure coordinates
    (it carries the labels) or on random coordinates (pure noise)."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_classes), n // n_classes)
    X = np.abs(rng.standard_normal((n, d))) * (rng.random((n, d)) < 0.3)
    for c in range(n_classes):
        X[y == c, 3 * c: 3 * c + 3] += signal * rng.random(((y == c).sum(), 3))
    X[:, -1] += 0.1
    if graph_carries_labels:
        Z = np.eye(n_classes)[y] + 0.05 * np.abs(rng.standard_normal((n, n_classes)))
        Z = np.hstack([Z, 0.02 * np.abs(rng.standard_normal((n, 3)))])
    else:
        Z = np.abs(rng.standard_normal((n, 5)))
    graph = KNNGraph(n_neighbors=10, algorithm="exact").fit(Z)
    ys = np.full(n, -1)
    for c in range(n_classes):
        ys[rng.choice(np.flatnonzero(y == c), 15, replace=False)] = c
    return (sp.csr_matrix(X) if sparse else X), y, ys, graph


@pytest.mark.parametrize("sparse", [False, True])
def test_rule_equals_its_formula(sparse):
    X, y, ys, graph = _problem(True, sparse, n=120, d=12, n_classes=3, seed=1)
    lab = np.flatnonzero(ys != -1)
    y_idx = ys[lab]
    grid = np.array([0.0, 0.1, 1.0, 10.0])
    sel = select_gamma_I(X, y_idx, lab, graph, gamma_A=1e-2, grid=grid, tol=1e-12,
                         max_iter=5000, patience=None)
    # dense reference: the same folds, each candidate by the dense normal equations
    Xd = X.toarray() if sparse else X
    Lp, s = graph.laplacian_matrix(), graph.scale_
    Lp = Lp.toarray() if sp.issparse(Lp) else Lp
    errors = np.zeros((grid.size, lab.size))
    skf = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
    for train, test in skf.split(np.zeros(lab.size), y_idx):
        T = pm1_targets(y_idx[train], 3)
        for c, g in enumerate(grid):
            z = dense_solution(Xd, Lp, lab[train], T, 1e-2, g, s)
            F = Xd[lab[test]] @ z[:-1] + z[-1]
            errors[c, test] = predict_index(F) != y_idx[test]
    np.testing.assert_array_equal(sel.errors, errors)
    mean = errors.mean(axis=1)
    best = np.argmin(mean)
    se = (errors - errors[best]).std(axis=1, ddof=1) / np.sqrt(lab.size)
    ok = mean - mean[best] <= 2 * se + 1e-12
    assert sel.gamma_I == grid[np.flatnonzero(ok).max()]
    np.testing.assert_allclose(sel.mean_error, mean)
    np.testing.assert_allclose(sel.threshold, 2 * se)
    # n_se=0: the smallest mean error, ties to the larger γ_I
    sel0 = select_gamma_I(X, y_idx, lab, graph, gamma_A=1e-2, grid=grid, n_se=0, tol=1e-12,
                          max_iter=5000, patience=None)
    assert sel0.gamma_I == grid[np.flatnonzero(mean == mean.min()).max()]


@pytest.mark.parametrize("sparse", [False, True])
def test_noise_graph_picks_small_gamma_I(sparse):
    # signal 1.2: the labels alone beat the noise graph by more than the rule's two
    # standard errors (at 0.8 the γ_I = 0 ridge fit, solved to its minimum, ties with it)
    X, y, ys, graph = _problem(False, sparse, signal=1.2)
    model = LapRLSClassifier(gamma_I="auto", graph=graph).fit(X, ys)
    sel = model.gamma_I_selection_
    # the candidates are the 'scaled' value (500 C / l = 500 · 2 / 30) times the factors
    np.testing.assert_allclose(sel.grid, 500 * 2 / 30 * np.array(AUTO_GAMMA_I_FACTORS))
    assert model.gamma_I_ <= 0.1 * sel.grid[-1]
    assert sel.mean_error[-1] > sel.mean_error[sel.best] + sel.threshold[-1]


@pytest.mark.parametrize("sparse", [False, True])
def test_label_graph_keeps_the_scaled_gamma_I(sparse):
    X, y, ys, graph = _problem(True, sparse)
    model = LapRLSClassifier(gamma_I="auto", graph=graph).fit(X, ys)
    scaled = 500 * 2 / 30
    assert model.gamma_I_ == pytest.approx(scaled)
    # and the chosen γ_I is what the fit used: the default fit
    ref = LapRLSClassifier(graph=graph).fit(X, ys)
    np.testing.assert_allclose(model.coef_, ref.coef_)
    sup = LapRLSClassifier(gamma_I=0.0, graph=graph).fit(X, ys)
    assert np.mean(model.transduction_ == y) > np.mean(sup.transduction_ == y) + 0.05


def test_lapsvm_auto_uses_the_chosen_gamma_I():
    X, y, ys, graph = _problem(False, True, signal=1.2)
    model = LapSVMClassifier(gamma_I="auto", graph=graph).fit(X, ys)
    assert model.gamma_I_ <= 0.1 * 500 * 2 / 30
    ref = LapSVMClassifier(gamma_I=model.gamma_I_, graph=graph).fit(X, ys)
    np.testing.assert_allclose(model.coef_, ref.coef_)


def test_numeric_gamma_I_is_kept():
    X, y, ys, graph = _problem(True, True, n=60)
    model = LapRLSClassifier(gamma_I=3.0, graph=graph).fit(X, ys)
    assert model.gamma_I_ == 3.0 and model.gamma_I_selection_ is None


def test_too_few_labels_per_class_keep_the_largest():
    X, y, ys, graph = _problem(True, True, n=60)
    ys = np.full(y.size, -1)
    ys[[0, 1, 59]] = y[[0, 1, 59]]  # one row of class 1: no fold can hold it out
    model = LapRLSClassifier(gamma_I="auto", graph=graph).fit(X, ys)
    assert model.gamma_I_ == pytest.approx(500 * 2 / 3)  # the 'scaled' value
    assert model.gamma_I_selection_.n_splits == 0


@pytest.mark.parametrize("params, match", [
    (dict(gamma_I="auto", gamma_A=0.0), "gamma_A > 0"),
    (dict(gamma_I="banana"), "gamma_I must be"),
    (dict(gamma_I=None), "gamma_I must be"),
])
def test_auto_validation(params, match):
    X, y, ys, graph = _problem(True, True, n=60)
    with pytest.raises(ValueError, match=match):
        LapRLSClassifier(graph=graph, **params).fit(X, ys)


def test_select_gamma_I_validation():
    X, y, ys, graph = _problem(True, True, n=60)
    lab = np.flatnonzero(ys != -1)
    with pytest.raises(ValueError, match="grid"):
        select_gamma_I(X, ys[lab], lab, graph, gamma_A=1e-4, grid=[-1.0, 1.0])
    with pytest.raises(ValueError, match="n_se"):
        select_gamma_I(X, ys[lab], lab, graph, gamma_A=1e-4, grid=[0.0, 1.0], n_se=-1)
    with pytest.raises(ValueError, match="gamma_A"):
        select_gamma_I(X, ys[lab], lab, graph, gamma_A=0.0, grid=[0.0, 1.0])


def test_other_estimators_refuse_auto():
    from linlap import LapS3VMClassifier

    X, y, ys, graph = _problem(True, True, n=60)
    with pytest.raises(ValueError, match="gamma_I must be"):
        LapS3VMClassifier(gamma_I="auto", graph=graph).fit(X, ys)


def test_scaled_gamma_I_formula():
    assert SCALED_GAMMA_I == 500.0
    assert scaled_gamma_I(50, 2) == 20.0     # 25 labels per class
    assert scaled_gamma_I(100, 20) == 100.0  # 5 per class
    assert scaled_gamma_I(1000, 2) == 1.0    # 500 per class


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("Estimator", [LapRLSClassifier, LapSVMClassifier])
def test_scaled_is_the_default_and_equals_its_number(Estimator, n_classes, sparse):
    X, y, ys, graph = _problem(True, sparse, n=120, d=12, n_classes=n_classes, seed=2)
    ys[np.flatnonzero(ys == 0)[:4]] = -1  # unequal class counts: C / l, not a per-class rule
    l = int((ys != -1).sum())
    model = Estimator(graph=graph).fit(X, ys)
    assert Estimator().gamma_I == "scaled"
    assert model.gamma_I_ == 500.0 * n_classes / l and model.gamma_I_selection_ is None
    ref = Estimator(gamma_I=500.0 * n_classes / l, graph=graph).fit(X, ys)
    np.testing.assert_array_equal(model.coef_, ref.coef_)
    np.testing.assert_array_equal(model.intercept_, ref.intercept_)


def test_scaled_follows_the_labels():
    """More labels per class, smaller γ_I: the graph stops overriding many labels."""
    X, y, ys, graph = _problem(True, True, n=120, d=12, seed=3)
    few = LapRLSClassifier(graph=graph).fit(X, ys)
    many = LapRLSClassifier(graph=graph).fit(X, y)  # every row labeled
    assert few.gamma_I_ == 500.0 * 2 / 30 and many.gamma_I_ == 500.0 * 2 / 120


def test_emr_resolves_scaled_once():
    X, y, ys, graph = _problem(True, True, n=120, d=12, seed=4)
    cands = [graph.with_laplacian(power=p) for p in (1, 2)]
    l = int((ys != -1).sum())
    a = EMRClassifier(candidates=cands, max_iter=3).fit(X, ys)
    b = EMRClassifier(LapRLSClassifier(gamma_I=500.0 * 2 / l), candidates=cands,
                      max_iter=3).fit(X, ys)
    np.testing.assert_allclose(a.mu_, b.mu_, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="number or 'scaled'"):
        EMRClassifier(LapRLSClassifier(gamma_I="auto"), candidates=cands).fit(X, ys)


def test_s3vm_refuses_scaled():
    from linlap import LapS3VMClassifier

    X, y, ys, graph = _problem(True, True, n=60)
    with pytest.raises(ValueError, match="gamma_I must be"):
        LapS3VMClassifier(gamma_I="scaled", graph=graph).fit(X, ys)


def test_scaled_gamma_A_formula():
    assert SCALED_GAMMA_A == 1e-6
    assert scaled_gamma_A(50, 2) == pytest.approx(2.5e-5)     # 25 labels per class
    assert scaled_gamma_A(100, 20) == pytest.approx(2.5e-5)   # 5 per class: clipped to 25
    assert scaled_gamma_A(1000, 2) == pytest.approx(5e-4)     # 500 per class
    assert scaled_gamma_A(10 ** 5, 2) == pytest.approx(1e-3)  # clipped to 1,000 per class


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("Estimator", [LapRLSClassifier, LapSVMClassifier])
def test_scaled_gamma_A_is_the_default_and_equals_its_number(Estimator, n_classes, sparse):
    X, y, ys, graph = _problem(True, sparse, n=300, d=12, n_classes=n_classes, seed=5)
    # 100 labels per class (two classes) or ~67: inside the clipping range, C / l counts
    ys = np.where(np.random.default_rng(0).random(y.size) < 2 / 3, y, -1)
    l = int((ys != -1).sum())
    model = Estimator(graph=graph).fit(X, ys)
    assert Estimator().gamma_A == "scaled"
    assert model.gamma_A_ == pytest.approx(1e-6 * l / n_classes)
    ref = Estimator(gamma_A=1e-6 * l / n_classes, graph=graph).fit(X, ys)
    np.testing.assert_allclose(model.coef_, ref.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(model.intercept_, ref.intercept_, rtol=1e-12, atol=1e-14)
    kept = Estimator(gamma_A=3e-4, graph=graph).fit(X, ys)
    assert kept.gamma_A_ == 3e-4


def test_scaled_gamma_A_follows_the_labels():
    """More labels per class, larger γ_A: the ridge, not the graph, holds many labels."""
    X, y, ys, graph = _problem(True, True, n=2400, d=12, seed=6)
    few = LapRLSClassifier(graph=graph).fit(X, ys)   # 15 per class: clipped to 25
    many = LapRLSClassifier(graph=graph).fit(X, y)   # 1,200 per class: clipped to 1,000
    half = np.where(np.arange(y.size) % 2 == 0, y, -1)
    mid = LapRLSClassifier(graph=graph).fit(X, half)  # 600 per class
    assert few.gamma_A_ == pytest.approx(2.5e-5)
    assert mid.gamma_A_ == pytest.approx(6e-4)
    assert many.gamma_A_ == pytest.approx(1e-3)


@pytest.mark.parametrize("gamma_A, match", [("bogus", "gamma_A must be a finite number >= 0 "
                                                      "or one of"),
                                            (-1.0, "gamma_A"), (np.nan, "gamma_A")])
def test_gamma_A_validation(gamma_A, match):
    X, y, ys, graph = _problem(True, True, n=60)
    with pytest.raises(ValueError, match=match):
        LapRLSClassifier(gamma_A=gamma_A, graph=graph).fit(X, ys)


def test_gamma_A_scaled_only_where_documented():
    from linlap import LapS3VMClassifier

    X, y, ys, graph = _problem(True, True, n=60)
    with pytest.raises(ValueError, match="gamma_A must be a finite number >= 0, got"):
        LapS3VMClassifier(gamma_A="scaled", graph=graph).fit(X, ys)


def test_emr_resolves_scaled_gamma_A():
    X, y, ys, graph = _problem(True, True, n=120, d=12, seed=4)
    cands = [graph.with_laplacian(power=p) for p in (1, 2)]
    l = int((ys != -1).sum())
    a = EMRClassifier(candidates=cands, max_iter=3).fit(X, ys)
    b = EMRClassifier(LapRLSClassifier(gamma_A=scaled_gamma_A(l, 2)), candidates=cands,
                      max_iter=3).fit(X, ys)
    np.testing.assert_allclose(a.mu_, b.mu_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-10, atol=1e-12)


def _count_rows(seed=8, n=300):
    """Rows like raw term counts: norms grow with document length; 2 classes, 10 % labeled."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    lengths = rng.integers(5, 200, n)
    rate = lengths[:, None] / 30.0 * (1 + (np.arange(30) % 2 == y[:, None]))
    X = sp.csr_matrix(rng.poisson(rate, (n, 30)).astype(float))
    return X, np.where(rng.random(n) < 0.1, y, -1)


def test_unnormalised_rows_warn_and_normalised_rows_do_not():
    """Rows of unequal norms (raw counts) warn at the caller's line, whatever γ_A; the same
    rows L2-normalised do not; uniformly rescaled rows warn only with gamma_A='scaled'."""
    from sklearn.preprocessing import normalize

    X, ys = _count_rows()
    graph = KNNGraph(n_neighbors=10).fit(X)
    for est in (LapRLSClassifier(graph=graph), LapSVMClassifier(gamma_A=1e-3, graph=graph)):
        with pytest.warns(UserWarning, match="The rows of X are not normalised") as record:
            est.fit(X, ys)
        assert record[0].filename == __file__
        assert "Normalizer" in str(record[0].message)
    Z = normalize(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LapRLSClassifier(graph=graph).fit(Z, ys)
        LapSVMClassifier(graph=graph).fit(1.5 * Z, ys)  # within the unit-norm range
        LapRLSClassifier(gamma_A=1e-3, graph=graph).fit(0.1 * Z, ys)  # γ_A chosen
    for c in (0.1, 10.0):
        with pytest.warns(UserWarning, match="gamma_A='scaled' was measured on rows of norm 1"):
            LapRLSClassifier(graph=graph).fit(c * Z, ys)
    with pytest.warns(UserWarning, match="gamma_A='scaled' was measured"):  # EMR resolves it
        EMRClassifier(candidates=[graph.with_laplacian(power=p) for p in (1, 2)],
                      max_iter=2).fit(0.1 * Z, ys)


def test_rows_of_huge_norm_warn_that_the_intercept_may_be_unsolved():
    """The CG's stopping rules weigh the intercept's equation against w's, whose terms
    grow with the squared row norm: at the default tol LapRLS left the intercept at 0
    from rows of norm 3e7 (a 40-row problem). A numeric γ_A does not silence this."""
    from sklearn.preprocessing import normalize

    X, ys = _count_rows()
    Z = normalize(X)
    graph = KNNGraph(n_neighbors=10).fit(Z)
    for est in (LapRLSClassifier(gamma_A=1e-3, graph=graph),
                LapSVMClassifier(gamma_A=1e-3, graph=graph)):
        with pytest.warns(UserWarning, match="the intercept may be left unsolved"):
            est.fit(1e8 * Z, ys)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LapRLSClassifier(gamma_A=1e-3, graph=graph).fit(1e3 * Z, ys)
        LapRLSClassifier(gamma_A=1e-3, graph=graph, fit_intercept=False).fit(1e8 * Z, ys)


def test_row_norms_of_rows_without_entries_and_duplicates():
    from linlap.estimators._base import check_row_norms, row_squared_norms
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_row_norms(np.zeros(4), True)  # no non-empty row: nothing to say
    # duplicate entries count separately (as scikit-learn's row_norms), X is not copied
    X = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([0, 0, 1]), np.array([0, 2, 3])),
                      shape=(2, 2))
    np.testing.assert_allclose(row_squared_norms(X), [5.0, 9.0])
    assert X.nnz == 3 and not X.has_canonical_format
    # float64 sums whatever the dtype: no integer wrap-around, no float32 overflow
    np.testing.assert_allclose(row_squared_norms(np.array([[100, 100]], dtype=np.int8)), [2e4])
    np.testing.assert_allclose(row_squared_norms(sp.csr_matrix(np.array([[100, 100]],
                                                                        dtype=np.int8))), [2e4])
    np.testing.assert_allclose(row_squared_norms(np.array([[True, True]])), [2.0])
    big = np.array([[3e19, 0.0]], dtype=np.float32)
    np.testing.assert_allclose(row_squared_norms(big), [9e38], rtol=1e-6)
    np.testing.assert_allclose(row_squared_norms(sp.csr_matrix(big)), [9e38], rtol=1e-6)


def test_both_row_warnings_and_once_per_emr_fit():
    """Counts with the 'scaled' γ_A get both warnings; EMR warns once per fit, not once per
    alternation's base fit."""
    X, ys = _count_rows()
    graph = KNNGraph(n_neighbors=10).fit(X)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        LapRLSClassifier(graph=graph).fit(X, ys)
    messages = [str(w.message) for w in caught]
    assert sum(m.startswith("The rows of X are not normalised") for m in messages) == 1
    assert sum("gamma_A='scaled' was measured" in m for m in messages) == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        emr = EMRClassifier(candidates=[graph.with_laplacian(power=p) for p in (1, 2, 3)],
                            max_iter=5).fit(X, ys)
    assert emr.n_iter_ >= 2  # several base fits
    messages = [str(w.message) for w in caught]
    assert sum(m.startswith("The rows of X are not normalised") for m in messages) == 1
    assert sum("gamma_A='scaled' was measured" in m for m in messages) == 1
