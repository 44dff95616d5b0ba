"""The S³VM class balance estimated from the start: ``positive_fraction='start'`` of the
solvers and ``class_prior='predicted'`` of LapS3VMClassifier.

π = (1 + mean_{j unlabeled} clip(f_j, −1, 1)) / 2 per column, clipped to [1/u, 1 − 1/u],
f the decision values of the start (the LapSVM on the labeled rows).
"""

import numpy as np
import pytest
from sklearn.base import clone

from linlap import KNNGraph, LapS3VMClassifier, LapSVMClassifier
from linlap.solvers.lapsvm_newton import lapsvm_newton
from linlap.solvers.s3vm import s3vm_annealing, s3vm_switching, start_fraction

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


def test_solver_start_needs_label_balance():
    X, L, labeled, unlabeled, T, _ = problem(n=40, seed=3)
    kw = dict(gamma_A=1e-3, gamma_I=0.5, gamma_U=1.0, scale=1 / np.trace(L))
    with pytest.raises(ValueError, match="balance"):
        s3vm_annealing(X, T, labeled, unlabeled, lambda F: L @ F, positive_fraction="start",
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
    svm = LapSVMClassifier(class_prior=None, **kw).fit(Xf, ys)  # = the S³VM's start
    pi = start_fraction(svm.decision_function(Xf[unl]))
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
