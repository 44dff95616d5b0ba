"""The S³VM class balance estimated from LapSVM decision values: ``positive_fraction=
'start'`` / ``'blend'`` of the solvers and ``class_prior='predicted'`` of LapS3VMClassifier.

'start': π = (1 + mean_{j unlabeled} clip(f_j, −1, 1)) / 2 per column, clipped to
[1/u, 1 − 1/u], f the decision values of the start (the LapSVM on the labeled rows).
'blend': π = ½ [(1 + mean clip(g_j, −1, 1)) / 2 + #{g_j > t} / u], g the decision values of
the LapSVM with γ_A / 10, t their two-means threshold (the binary 'predicted' rule).
"""

import numpy as np
import pytest
from sklearn.base import clone

from linlap import KNNGraph, LapS3VMClassifier, LapSVMClassifier
from linlap.solvers.lapsvm_newton import lapsvm_newton
from linlap.solvers.s3vm import (blend_fraction, s3vm_annealing, s3vm_switching,
                                 split_fraction, start_fraction)

from test_s3vm import problem, text_like

SOLVERS = [s3vm_annealing, s3vm_switching]


def test_start_fraction_formula():
    F = np.array([[2.0, 0.1], [0.5, 0.1], [-0.2, 0.1], [-3.0, 5.0]])
    # column 0: clipped (1, 0.5, -0.2, -1), mean 0.075; column 1: (0.1, 0.1, 0.1, 1)
    np.testing.assert_allclose(start_fraction(F), [(1 + 0.075) / 2, (1 + 0.325) / 2])
    np.testing.assert_allclose(start_fraction(F[:, 0]), [(1 + 0.075) / 2])
    # every f ≥ 1: π would be 1; clipped to 1 − 1/u (and 1/u at the other end)
    np.testing.assert_allclose(start_fraction(np.full((5, 2), [3.0, -2.0])), [0.8, 0.2])
    # one-vs-rest classes: divided by the sum (0.5375 + 0.6625 = 1.2)
    np.testing.assert_allclose(start_fraction(F, classes=True), [0.5375 / 1.2, 0.6625 / 1.2])


def test_split_and_blend_formula():
    # column 0: mean 0.1 → upper {0.9, 1.0} (mean 0.95), lower (mean −0.3) → t = 0.325;
    # again the same split: t repeats → 2 of 6 above
    f = np.array([-0.5, -0.4, -0.3, 0.0, 0.9, 1.0])
    np.testing.assert_allclose(split_fraction(f), [2 / 6])
    cm = (1 + np.clip(f, -1, 1).mean()) / 2
    np.testing.assert_allclose(blend_fraction(f), [(cm + 2 / 6) / 2])
    # two columns; constant column: ½ for the split
    F = np.column_stack([f, np.full(6, 0.2)])
    np.testing.assert_allclose(split_fraction(F), [2 / 6, 0.5])
    both = np.array([(cm + 2 / 6) / 2, (0.6 + 0.5) / 2])
    np.testing.assert_allclose(blend_fraction(F), both)
    np.testing.assert_allclose(blend_fraction(F, classes=True), both / both.sum())
    np.testing.assert_allclose(blend_fraction(F, classes=True).sum(), 1.0)
    # clipped to [1/u, 1 − 1/u]
    np.testing.assert_allclose(blend_fraction(np.full(4, 5.0)), [0.75])
    # the split follows the shape, not the level: shifting f moves the clipped mean only
    np.testing.assert_allclose(split_fraction(f + 0.3), split_fraction(f))


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("solver", SOLVERS)
def test_solver_estimates_pi_from_its_start_and_keeps_the_balance(solver, sparse):
    X, L, labeled, unlabeled, T, _ = problem(n=60, k=2, seed=11, sparse=sparse)
    kw = dict(gamma_A=1e-3, gamma_I=0.5, scale=1 / np.trace(L), tol=1e-8)
    lap = lambda F: L @ F  # noqa: E731
    start = lapsvm_newton(X, T, labeled, lap, **kw)
    r = start_fraction(start.decision[unlabeled])
    assert np.all((r > 0) & (r < 1)) and not np.allclose(r, 0.5)
    sol = solver(X, T, labeled, unlabeled, lap, gamma_U=1.0, positive_fraction="start", **kw)
    np.testing.assert_allclose(sol.state["positive_fraction"], r, rtol=1e-7)
    np.testing.assert_allclose(sol.state["start"][0], start.coef, rtol=1e-9, atol=1e-12)
    P = sol.state["P"]
    if solver is s3vm_switching:
        np.testing.assert_array_equal(P.sum(axis=0), np.round(r * unlabeled.size))
    else:
        np.testing.assert_allclose(P.mean(axis=0), r, atol=1e-7)
    # the same fit as with π given explicitly
    given = solver(X, T, labeled, unlabeled, lap, gamma_U=1.0,
                   positive_fraction=sol.state["positive_fraction"], **kw)
    np.testing.assert_allclose(sol.coef, given.coef, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("solver", SOLVERS)
def test_solver_blend_estimates_pi_from_a_less_regularised_fit(solver, sparse):
    X, L, labeled, unlabeled, T, _ = problem(n=60, k=2, seed=11, sparse=sparse)
    kw = dict(gamma_I=0.5, scale=1 / np.trace(L), tol=1e-8)
    lap = lambda F: L @ F  # noqa: E731
    ref = lapsvm_newton(X, T, labeled, lap, gamma_A=1e-4, **kw)  # γ_A / 10
    r = blend_fraction(ref.decision[unlabeled])
    sol = solver(X, T, labeled, unlabeled, lap, gamma_A=1e-3, gamma_U=1.0,
                 positive_fraction="blend", **kw)
    np.testing.assert_allclose(sol.state["positive_fraction"], r, rtol=1e-7)
    start = lapsvm_newton(X, T, labeled, lap, gamma_A=1e-3, **kw)
    assert not np.allclose(r, start_fraction(start.decision[unlabeled]))
    classes = solver(X, T, labeled, unlabeled, lap, gamma_A=1e-3, gamma_U=1.0,
                     positive_fraction="blend-classes", **kw)
    np.testing.assert_allclose(classes.state["positive_fraction"], r / r.sum(), rtol=1e-7)
    np.testing.assert_allclose(classes.state["positive_fraction"].sum(), 1.0)
    # one solve more than 'start' (γ_U = 0: the start alone); none more at γ_A = 0 (the
    # start is that fit)
    for gA, extra in ((1e-3, 1), (0.0, 0)):
        n = [solver(X, T, labeled, unlabeled, lap, gamma_A=gA, gamma_U=0.0,
                    positive_fraction=pf, **kw).state["n_solves"] for pf in ("start", "blend")]
        assert n[1] == n[0] + extra
    zero = solver(X, T, labeled, unlabeled, lap, gamma_A=0.0, gamma_U=1.0,
                  positive_fraction="blend", **kw)
    start0 = lapsvm_newton(X, T, labeled, lap, gamma_A=0.0, **kw)
    np.testing.assert_allclose(zero.state["positive_fraction"],
                               blend_fraction(start0.decision[unlabeled]), rtol=1e-7)


def test_blend_recovers_a_skewed_mixture_the_labels_misstate():
    # two well-separated clusters, 70 % positive; the 20 labels are balanced (10 + 10),
    # so the labeled proportion is off by 0.2
    rng = np.random.default_rng(0)
    n1, n0 = 280, 120
    X = np.vstack([rng.normal([2.0, 0.0], 0.6, size=(n1, 2)),
                   rng.normal([-2.0, 0.0], 0.6, size=(n0, 2))])
    y = np.r_[np.ones(n1, int), np.zeros(n0, int)]
    ys = np.full(y.size, -1)
    ys[:10], ys[n1:n1 + 10] = 1, 0
    unl = ys == -1
    true = y[unl].mean()
    graph = KNNGraph(n_neighbors=8).fit(X)
    fits = [LapS3VMClassifier(graph=graph, gamma_I=gI).fit(X, ys) for gI in (0.0, 1.0)]
    for m in fits:
        assert abs(m.positive_fraction_[0] - true) < 0.05
        assert abs(m.positive_fraction_[0] - true) < abs(0.5 - true) / 3
    # deterministic: the same fit twice gives the same estimate
    again = clone(fits[1]).fit(X, ys)
    assert again.positive_fraction_[0] == fits[1].positive_fraction_[0]


def test_solver_start_needs_label_balance():
    X, L, labeled, unlabeled, T, _ = problem(n=40, seed=3)
    kw = dict(gamma_A=1e-3, gamma_I=0.5, gamma_U=1.0, scale=1 / np.trace(L))
    with pytest.raises(ValueError, match="balance"):
        s3vm_annealing(X, T, labeled, unlabeled, lambda F: L @ F, positive_fraction="start",
                       balance="mean", **kw)
    with pytest.raises(ValueError, match="balance"):
        s3vm_annealing(X, T, labeled, unlabeled, lambda F: L @ F, positive_fraction="blend",
                       balance="mean", **kw)
    with pytest.raises(ValueError, match="positive_fraction"):
        s3vm_annealing(X, T, labeled, unlabeled, lambda F: L @ F, positive_fraction="x", **kw)


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("solver", ["annealing", "switching"])
def test_estimator_predicted_prior(solver, dense):
    X, y, ys = text_like(n=150, seed=5)
    ys[np.flatnonzero(y == 1)[3:9]] = 1  # 3 negative, 9 positive labels: 'labeled' π = 0.75
    Xf = X.toarray() if dense else X
    graph = KNNGraph(n_neighbors=8).fit(X)
    unl = ys == -1
    kw = dict(gamma_A=1e-3, gamma_I=1.0, graph=graph, tol=1e-8)
    # the binary 'predicted' rule: the LapSVM with γ_A / 10
    svm = LapSVMClassifier(class_prior=None, **dict(kw, gamma_A=1e-4)).fit(Xf, ys)
    pi = blend_fraction(svm.decision_function(Xf[unl]))
    m = LapS3VMClassifier(class_prior="predicted", solver=solver, **kw).fit(Xf, ys)
    np.testing.assert_allclose(m.positive_fraction_, pi, rtol=1e-7)
    assert abs(pi[0] - 0.75) > 0.02  # not the labeled proportion
    P = m.unlabeled_labels_
    assert P.shape == (unl.sum(), 1)
    np.testing.assert_allclose(P.mean(axis=0), pi, atol=1.0 / unl.sum())
    lab = clone(m).set_params(class_prior="labeled").fit(Xf, ys)
    np.testing.assert_allclose(lab.positive_fraction_, [0.75])
    if dense:  # dense and CSR give the same fit (up to round-off carried through the
        # annealing's sequence of inner solves: ~1e-7 seen)
        sparse_fit = clone(m).fit(X, ys)
        np.testing.assert_allclose(m.coef_, sparse_fit.coef_, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dense", [False, True])
def test_estimator_predicted_prior_without_graph_is_the_start_mean(dense):
    """gamma_I=0: the clipped mean of the plain SVM start (no extra fit, no split)."""
    X, y, ys = text_like(n=150, seed=5)
    ys[np.flatnonzero(y == 1)[3:9]] = 1
    Xf = X.toarray() if dense else X
    unl = ys == -1
    kw = dict(gamma_A=1e-3, gamma_I=0.0, tol=1e-8)
    svm = LapSVMClassifier(**kw).fit(Xf, ys)  # γ_I = 0: the graph is not used
    pi = start_fraction(svm.decision_function(Xf[unl]))
    m = LapS3VMClassifier(class_prior="predicted", **kw).fit(Xf, ys)
    np.testing.assert_allclose(m.positive_fraction_, pi, rtol=1e-6)
    assert not np.allclose(pi, blend_fraction(svm.decision_function(Xf[unl])))


def test_estimator_predicted_multiclass_and_bad_values():
    X, y, ys = text_like(n=150, classes=3, seed=2)
    m = LapS3VMClassifier(class_prior="predicted", tol=1e-8).fit(X, ys)
    svm = LapSVMClassifier(gamma_A=1e-3, gamma_I=1.0, class_prior=None, tol=1e-8).fit(X, ys)
    F = svm.decision_function(X[ys == -1])
    pi = (1 + np.clip(F, -1, 1).mean(axis=0)) / 2
    np.testing.assert_allclose(m.positive_fraction_, pi / pi.sum(), rtol=1e-7)
    np.testing.assert_allclose(m.positive_fraction_.sum(), 1.0)
    np.testing.assert_allclose(m.unlabeled_labels_.mean(axis=0), m.positive_fraction_,
                               atol=1e-7)
    for bad in ("estimated", "Predicted"):
        with pytest.raises(ValueError, match="class_prior"):
            LapS3VMClassifier(class_prior=bad).fit(X, ys)
    with pytest.raises(ValueError, match="unlabeled"):
        LapS3VMClassifier(class_prior="predicted").fit(X, np.where(ys == -1, 0, ys))
