"""Laplacian S³VM: the row-weighted finite Newton solve, deterministic annealing and
multi-switch label swapping, against dense references of the documented objectives.

J(w, b, p) = (1/l) Σ_labeled V(y f) + γ_A ‖w‖² + γ_I s fᵀ L^p f
             + (γ_U/u) Σ_unlabeled [p V(f) + (1 − p) V(−f)],   (1/u) Σ p = π,
V(t) = max(0, 1 − t)², f = Xw + b.
"""

import importlib
import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.sparse import csgraph
from sklearn.base import clone
from sklearn.datasets import make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import kneighbors_graph

from linlap import KNNGraph, LapS3VMClassifier, LapSVMClassifier
from linlap.solvers.lapsvm_newton import lapsvm_newton, squared_hinge_line_search
from linlap.solvers.normal_operator import NormalOperator
from linlap.solvers.s3vm import (balanced_soft_labels, s3vm_annealing, s3vm_objective,
                                 s3vm_problem, s3vm_switching)

from reference import random_design, random_laplacian

SOLVERS = [s3vm_annealing, s3vm_switching]


def dense(X):
    return X.toarray() if sp.issparse(X) else X


def augment(Xd, fit_intercept):
    return np.hstack([Xd, np.ones((Xd.shape[0], 1))]) if fit_intercept else Xd


def weighted_reference(Xd, Lp, rows, t, omega, gA, gI, s, fit_intercept=True):
    """Minimiser of Σ_r ω_r max(0, 1 − t_r f_{rows_r})² + γ_A‖w‖² + γ_I s fᵀLf, densely:
    L-BFGS-B, then the exact solution of the piecewise-quadratic J on the active set
    found (kept only when consistent with it)."""
    n, d = Xd.shape
    Xt = augment(Xd, fit_intercept)
    A = Xt[rows]

    def fun(z):
        f = Xt @ z
        xi = np.maximum(0, 1 - t * (A @ z))
        Lf = Lp @ f
        J = omega @ xi ** 2 + gA * z[:d] @ z[:d] + gI * s * f @ Lf
        g = A.T @ (-2 * omega * t * xi) + 2 * gI * s * Xt.T @ Lf
        g[:d] += 2 * gA * z[:d]
        return J, g

    z = minimize(fun, np.zeros(Xt.shape[1]), jac=True, method="L-BFGS-B",
                 options=dict(maxiter=50000, maxfun=100000, ftol=1e-15, gtol=1e-12)).x
    act = (t * (A @ z) < 1) & (omega > 0)
    H = (A[act].T * omega[act]) @ A[act] + gI * s * Xt.T @ Lp @ Xt
    H[np.arange(d), np.arange(d)] += gA
    zp = np.linalg.solve(H, (A[act].T * omega[act]) @ t[act])
    to = t * (A @ zp)
    assert np.all(to[act] <= 1 + 1e-9) and np.all(to[~act & (omega > 0)] >= 1 - 1e-9)
    return zp, fun(zp)[0]


def problem(n=40, d=8, l=8, k=1, seed=0, sparse=True):
    rng = np.random.default_rng(seed)
    X = random_design(n, d, rng, sparse=sparse, density=0.5)
    L = random_laplacian(n, rng)
    labeled = rng.choice(n, l, replace=False)
    unlabeled = np.setdiff1d(np.arange(n), labeled)
    T = np.sign(dense(X)[labeled] @ rng.normal(size=(d, k)) + 0.3 * rng.normal(size=(l, k)))
    T[T == 0] = 1
    T[0], T[1] = 1.0, -1.0
    return X, L, labeled, unlabeled, T, rng


# -- the row-weighted finite Newton solve ---------------------------------------------
@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_inner_weighted_solve_matches_dense_reference(sparse, k, fit_intercept):
    X, L, labeled, unlabeled, T, rng = problem(k=k, sparse=sparse, seed=k + 2 * fit_intercept)
    u = unlabeled.size
    P = rng.uniform(size=(u, k))
    P[:5] = 1.0  # some hard labels: their other copy has weight 0 in every column
    P[5:8] = 0.0
    P[8, 0] = 1.0  # hard in one column only
    gA, gI, gU, s = 1e-3, 0.5, 0.7, 1 / np.trace(L)
    rows, targets, W = s3vm_problem(labeled, T, unlabeled, P, gU)
    assert rows.size == labeled.size + 2 * u - 8 - (k == 1) and np.unique(rows).size < rows.size
    sol = lapsvm_newton(X, targets, rows, lambda F: L @ F, gamma_A=gA, gamma_I=gI, scale=s,
                        fit_intercept=fit_intercept, tol=1e-10, row_weights=W)
    assert sol.converged and sol.residual < 1e-7
    Xd = dense(X)
    for j in range(k):
        z, J_ref = weighted_reference(Xd, L, rows, targets[:, j], W[:, j], gA, gI, s,
                                      fit_intercept)
        np.testing.assert_allclose(sol.coef[j], z[:X.shape[1]], rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(sol.intercept[j], z[-1] if fit_intercept else 0.0,
                                   atol=1e-7)
        # the weighted objective is the S³VM objective at the labels P
        J = s3vm_objective(X, T[:, j], labeled, unlabeled, lambda F: L @ F, sol.coef[j],
                           sol.intercept[j], gamma_A=gA, gamma_I=gI, gamma_U=gU, scale=s,
                           P=P[:, j])[0]
        assert abs(J - J_ref) <= 1e-8 * J_ref
        assert abs(sol.state["objective"][j] - J_ref) <= 1e-8 * J_ref


def test_row_weights_default_is_one_over_l():
    X, L, labeled, _, T, _ = problem(k=2, seed=5)
    kw = dict(gamma_A=1e-3, gamma_I=0.5, scale=1 / np.trace(L), tol=1e-10)
    a = lapsvm_newton(X, T, labeled, lambda F: L @ F, **kw)
    b = lapsvm_newton(X, T, labeled, lambda F: L @ F,
                      row_weights=np.full(labeled.size, 1 / labeled.size), **kw)
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-9, atol=1e-12)
    # a doubled row with half weights each is the same problem
    rows = np.r_[labeled, labeled[:3]]
    w = np.r_[np.full(labeled.size, 1.0), 0.5, 0.5, 0.5] / labeled.size
    w[:3] = 0.5 / labeled.size
    c = lapsvm_newton(X, np.vstack([T, T[:3]]), rows, lambda F: L @ F, row_weights=w, **kw)
    np.testing.assert_allclose(a.coef, c.coef, rtol=1e-7, atol=1e-10)
    with pytest.raises(ValueError, match="distinct"):
        lapsvm_newton(X, np.vstack([T, T[:3]]), rows, lambda F: L @ F, **kw)
    with pytest.raises(ValueError, match="row_weights"):
        lapsvm_newton(X, T, labeled, lambda F: L @ F, row_weights=-np.ones(labeled.size),
                      **kw)


def test_weighted_line_search_is_exact():
    rng = np.random.default_rng(3)
    y = rng.choice([-1.0, 1.0], 30)
    o, ob = rng.normal(size=30), rng.normal(size=30)
    w = rng.uniform(size=30)
    w[:4] = 0
    a, b = -1.0 - abs(rng.normal()), rng.uniform(0.1, 1)  # a descent direction

    def phi(delta):
        xi = np.maximum(0, 1 - y * (o + delta * (ob - o)))
        return w @ xi ** 2 / 30 + a * delta + b * delta ** 2

    delta = squared_hinge_line_search(y, o, ob, a, b, 30, weights=w)
    grid = np.linspace(0, 3 * max(delta, 1), 20001)
    assert phi(delta) <= min(phi(g) for g in grid) + 1e-12
    assert delta > 0 and phi(delta) <= min(phi(delta - 1e-6), phi(delta + 1e-6))


# -- the class balance -----------------------------------------------------------------
@pytest.mark.parametrize("T", [10.0, 1.0, 0.01, 0.0])
def test_balanced_soft_labels(T):
    rng = np.random.default_rng(0)
    G = rng.normal(size=(57, 3)) * 3
    r = np.array([0.2, 0.5, 0.73])
    P = balanced_soft_labels(G, T, r)
    np.testing.assert_allclose(P.mean(axis=0), r, atol=1e-9)
    assert np.all((P >= 0) & (P <= 1))
    for j in range(3):  # p decreases with the cost g
        order = np.argsort(G[:, j])
        assert np.all(np.diff(P[order, j]) <= 1e-15)
    if T > 0:  # stationarity of Σ p g + T Σ H(p) on the balance slice: g + T logit(p) = ν
        for j in range(3):
            inner = (P[:, j] > 1e-9) & (P[:, j] < 1 - 1e-9)
            assert inner.sum() >= (2 if T >= 1 else 0)
            stat = G[inner, j] + T * np.log(P[inner, j] / (1 - P[inner, j]))
            np.testing.assert_allclose(stat, stat.mean(), atol=1e-6)


@pytest.mark.parametrize("T", [1e-6, 1e3])
def test_balanced_soft_labels_extreme_temperatures_and_ties(T):
    """Near-hard labels on tied costs (the Newton steps leave the bracket: bisection) and
    near-uniform ones: the balance still holds, p still decreases with g."""
    rng = np.random.default_rng(1)
    G = np.round(rng.normal(size=(400, 2)), 1)  # many ties
    r = np.array([0.37, 0.81])
    P = balanced_soft_labels(G, T, r)
    np.testing.assert_allclose(P.mean(axis=0), r, atol=1e-9)
    for j in range(2):
        order = np.argsort(G[:, j], kind="stable")
        assert np.all(np.diff(P[order, j]) <= 1e-12)
        assert np.ptp(P[G[:, j] == G[order[200], j], j]) <= 1e-12  # ties get equal p


@pytest.mark.parametrize("solver", SOLVERS)
def test_balance_holds(solver):
    X, L, labeled, unlabeled, T, _ = problem(n=60, k=2, seed=7)
    r = np.array([0.3, 0.6])
    sol = solver(X, T, labeled, unlabeled, lambda F: L @ F, gamma_A=1e-3, gamma_I=0.5,
                 gamma_U=1.0, scale=1 / np.trace(L), positive_fraction=r)
    P = sol.state["P"]
    assert P.shape == (unlabeled.size, 2)
    if solver is s3vm_switching:
        np.testing.assert_array_equal(P.sum(axis=0), np.round(r * unlabeled.size))
        assert set(np.unique(P)) <= {0.0, 1.0}
    else:
        np.testing.assert_allclose(P.mean(axis=0), r, atol=1e-9)
        assert np.all(np.minimum(P, 1 - P).mean(axis=0) < 0.01)  # annealed to hard labels


def test_annealing_starts_at_gamma_U():
    X, L, labeled, unlabeled, T, _ = problem(n=60, k=2, seed=7)
    kw = dict(gamma_A=1e-3, gamma_I=0.5, scale=1 / np.trace(L), positive_fraction=0.5)
    for gamma_U in (0.5, 4.0):
        temps = s3vm_annealing(X, T, labeled, unlabeled, lambda F: L @ F, gamma_U=gamma_U,
                               **kw).state["temperatures"]
        assert temps[0] == gamma_U
        np.testing.assert_allclose(np.diff(np.log(temps)), -np.log(1.5))
    sol = s3vm_annealing(X, T, labeled, unlabeled, lambda F: L @ F, gamma_U=1.0,
                         temperature=10.0, **kw)
    assert sol.state["temperatures"][0] == 10.0
    with pytest.raises(ValueError, match="temperature"):
        s3vm_annealing(X, T, labeled, unlabeled, lambda F: L @ F, gamma_U=1.0,
                       temperature=0.0, **kw)


def test_mean_balance_and_limited_switches():
    X, L, labeled, unlabeled, T, _ = problem(n=60, k=2, seed=8)
    r = np.array([0.3, 0.6])
    kw = dict(gamma_A=1e-3, gamma_I=0.5, gamma_U=1.0, scale=1 / np.trace(L),
              positive_fraction=r, tol=1e-8)
    sol = s3vm_annealing(X, T, labeled, unlabeled, lambda F: L @ F, balance="mean", **kw)
    # the mean decision value over the unlabeled rows is pinned instead of the labels
    np.testing.assert_allclose(sol.decision[unlabeled].mean(axis=0), 2 * r - 1, atol=1e-8)
    np.testing.assert_array_equal(sol.state["P"], sol.decision[unlabeled] > 0)
    with pytest.raises(ValueError, match="balance"):
        s3vm_annealing(X, T, labeled, unlabeled, lambda F: L @ F, balance="x", **kw)
    one = s3vm_switching(X, T, labeled, unlabeled, lambda F: L @ F, max_switches=1, **kw)
    np.testing.assert_array_equal(one.state["P"].sum(axis=0), np.round(r * unlabeled.size))
    assert one.state["switches"] > 0


# -- γ_U = 0 is LapSVM; annealing never ends above its start ---------------------------
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("sparse", [True, False])
def test_gamma_U_zero_is_lapsvm(solver, sparse):
    X, L, labeled, unlabeled, T, _ = problem(k=2, sparse=sparse, seed=1)
    kw = dict(gamma_A=1e-3, gamma_I=0.5, scale=1 / np.trace(L), tol=1e-8)
    ref = lapsvm_newton(X, T, labeled, lambda F: L @ F, **kw)
    sol = solver(X, T, labeled, unlabeled, lambda F: L @ F, gamma_U=0.0,
                 positive_fraction=0.5, **kw)
    np.testing.assert_allclose(sol.coef, ref.coef, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sol.intercept, ref.intercept, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("gamma_I", [0.0, 0.5])
@pytest.mark.parametrize("seed", range(4))
def test_objective_not_above_the_lapsvm_start(solver, gamma_I, seed):
    X, L, labeled, unlabeled, T, _ = problem(n=50, k=1, seed=10 + seed)
    kw = dict(gamma_A=1e-3, gamma_I=gamma_I, gamma_U=2.0, scale=1 / np.trace(L),
              positive_fraction=0.5)
    lap = lambda F: L @ F  # noqa: E731
    sol = solver(X, T, labeled, unlabeled, lap, **kw)
    coef0, b0 = sol.state["start"]
    J0 = s3vm_objective(X, T, labeled, unlabeled, lap, coef0, b0, **kw)
    J = s3vm_objective(X, T, labeled, unlabeled, lap, sol.coef, sol.intercept, **kw)
    assert J[0] <= J0[0] * (1 + 1e-9)
    assert J[0] < 0.99 * J0[0]  # and the unlabeled term actually moved it
    # the reported labels are the best balanced labels of the final f (T → 0)
    JP = s3vm_objective(X, T, labeled, unlabeled, lap, sol.coef, sol.intercept,
                        P=sol.state["P"], **kw)
    assert JP[0] <= J[0] * (1 + 1e-3)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("sparse", [True, False])
def test_history_is_the_objective_at_the_returned_point(solver, sparse):
    """The solvers record J from their own decision values; it must be s3vm_objective's."""
    X, L, labeled, unlabeled, T, _ = problem(n=50, k=2, seed=3, sparse=sparse)
    kw = dict(gamma_A=1e-3, gamma_I=0.5, gamma_U=2.0, scale=1 / np.trace(L))
    lap = lambda F: L @ F  # noqa: E731
    sol = solver(X, T, labeled, unlabeled, lap, positive_fraction=0.5, **kw)
    J = s3vm_objective(X, T, labeled, unlabeled, lap, sol.coef, sol.intercept,
                       P=sol.state["P"], **kw)
    assert len(sol.history) >= 2
    np.testing.assert_allclose(sol.history[-1], J.sum(), rtol=1e-10)


# -- γ_I = 0 against a brute-force S³VM ------------------------------------------------
def brute_force_s3vm(Xd, labeled, unlabeled, t, gA, gU, r):
    """Best (w, b, labels) over every balanced labelling of the unlabeled rows, each a
    supervised weighted squared-hinge SVM solved densely."""
    u, l = unlabeled.size, labeled.size
    m = int(round(r * u))
    best = (np.inf, None)
    rows = np.r_[labeled, unlabeled]
    omega = np.r_[np.full(l, 1 / l), np.full(u, gU / u)]
    for pos in itertools.combinations(range(u), m):
        yu = -np.ones(u)
        yu[list(pos)] = 1
        z, J = weighted_reference(Xd, np.zeros((Xd.shape[0],) * 2), rows, np.r_[t, yu], omega,
                                  gA, 0.0, 1.0)
        if J < best[0]:
            best = (J, z)
    return best


@pytest.fixture(scope="module")
def tiny_s3vm():
    """Two noisy clusters in 3-D, 2 labels, 10 unlabeled rows (252 balanced labellings),
    and the brute-force optimum (γ_I = 0)."""
    rng = np.random.default_rng(4)
    centers = np.array([[1.5, 0.5, 0.0], [-1.5, -0.5, 0.0]])
    yy = np.r_[np.ones(6), -np.ones(6)]
    Xd = centers[(yy < 0).astype(int)] + rng.normal(scale=0.8, size=(12, 3))
    labeled = np.array([0, 6])
    unlabeled = np.setdiff1d(np.arange(12), labeled)
    t = np.array([1.0, -1.0])
    gA, gU = 0.05, 1.0
    return Xd, labeled, unlabeled, t, gA, gU, brute_force_s3vm(Xd, labeled, unlabeled, t, gA,
                                                                gU, 0.5)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("sparse", [True, False])
def test_plain_s3vm_matches_brute_force(solver, sparse, tiny_s3vm):
    Xd, labeled, unlabeled, t, gA, gU, (J_bf, z) = tiny_s3vm
    X = sp.csr_matrix(Xd) if sparse else Xd
    sol = solver(X, t, labeled, unlabeled, None, gamma_A=gA, gamma_I=0.0, gamma_U=gU,
                 scale=1.0, positive_fraction=0.5, tol=1e-10)
    J = s3vm_objective(X, t, labeled, unlabeled, None, sol.coef, sol.intercept, gamma_A=gA,
                       gamma_I=0.0, gamma_U=gU, scale=1.0, positive_fraction=0.5)[0]
    assert J == pytest.approx(J_bf, rel=1e-7)
    np.testing.assert_allclose(sol.coef[0], z[:3], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(sol.intercept[0], z[3], atol=1e-7)


# -- two moons -------------------------------------------------------------------------
def moons(n=300, seed=0):
    Z, y = make_moons(n, noise=0.07, random_state=seed)
    rng = np.random.default_rng(seed)
    C = Z[rng.choice(n, 40, replace=False)]
    X = np.exp(-((Z[:, None, :] - C[None]) ** 2).sum(-1) / (2 * 0.3 ** 2))  # RBF features
    W = kneighbors_graph(Z, 8, mode="connectivity")
    L = csgraph.laplacian(W.maximum(W.T).astype(float))
    labeled = np.r_[rng.choice(np.flatnonzero(y == 0), 2, replace=False),
                    rng.choice(np.flatnonzero(y == 1), 2, replace=False)]
    return X, y, L, labeled


@pytest.mark.parametrize("solver", SOLVERS)
def test_two_moons_recovered(solver):
    X, y, L, labeled = moons()
    unlabeled = np.setdiff1d(np.arange(y.size), labeled)
    t = np.where(y[labeled] == 1, 1.0, -1.0)
    kw = dict(gamma_A=1e-4, scale=1 / L.diagonal().sum(), positive_fraction=0.5)
    lap = lambda F: L @ F  # noqa: E731
    errors = {}
    for gI, gU in [(10.0, 0.0), (10.0, 0.1)]:
        sol = solver(X, t, labeled, unlabeled, lap, gamma_I=gI, gamma_U=gU, **kw)
        errors[gU] = np.mean((sol.decision[:, 0] > 0) != (y == 1))
    assert errors[0.0] > 0.1  # LapSVM alone (4 labels) does not find the moons
    assert errors[0.1] <= 0.01  # with the low-density term it does


# -- the estimator ---------------------------------------------------------------------
def text_like(n=120, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    y = rng.integers(classes, size=n)
    X = sp.random(n, 60, density=0.08, random_state=rng, format="csr")
    X = X + sp.csr_matrix((np.full(n, 2.0), (np.arange(n), 3 * y + rng.integers(3, size=n))),
                          shape=(n, 60))
    ys = np.full(n, -1)
    for c in range(classes):
        ys[np.flatnonzero(y == c)[:3]] = c
    return sp.csr_matrix(X), y, ys


def test_estimator_binary_and_lapsvm_equivalence():
    X, y, ys = text_like()
    graph = KNNGraph(n_neighbors=8).fit(X)
    svm = LapSVMClassifier(gamma_A=1e-3, gamma_I=1.0, graph=graph, tol=1e-8).fit(X, ys)
    for solver in ("annealing", "switching"):
        m = LapS3VMClassifier(gamma_A=1e-3, gamma_I=1.0, gamma_U=0.0, graph=graph,
                              solver=solver, tol=1e-8).fit(X, ys)
        np.testing.assert_allclose(m.coef_, svm.coef_, rtol=1e-9, atol=1e-12)
        m = clone(m).set_params(gamma_U=1.0, class_prior="labeled").fit(X, ys)
        assert m.coef_.shape == (1, X.shape[1]) and list(m.classes_) == [0, 1]
        assert np.mean(m.predict(X) != y) <= np.mean(svm.predict(X) != y) + 0.05
        assert m.transduction_.shape == y.shape
        unl = ys == -1
        # the labels' class proportions (3 / 3)
        assert abs(np.mean(m.unlabeled_labels_[:, 0]) - 0.5) < 0.01
        assert m.unlabeled_labels_.shape == (unl.sum(), 1)


def test_estimator_multiclass_and_strings():
    X, y, ys = text_like(n=150, classes=3, seed=2)
    names = np.array(["a", "b", "c"])
    ys_s = np.where(ys == -1, "", names[np.maximum(ys, 0)])
    m = LapS3VMClassifier(unlabeled="", class_prior=[0.2, 0.3, 0.5]).fit(X, ys_s)
    assert list(m.classes_) == ["a", "b", "c"]
    assert m.coef_.shape == (3, X.shape[1])
    np.testing.assert_allclose(m.unlabeled_labels_.mean(axis=0), [0.2, 0.3, 0.5], atol=1e-6)
    assert set(m.predict(X)) <= set(names)


def test_estimator_bad_params():
    X, _, ys = text_like()
    for bad in [dict(gamma_U=-1), dict(solver="x"), dict(class_prior=None),
                dict(gamma_A=0, gamma_I=0), dict(tol=1.0), dict(tol=np.nan)]:
        with pytest.raises(ValueError):
            LapS3VMClassifier(**bad).fit(X, ys)
    with pytest.raises(ValueError, match="unlabeled"):
        LapS3VMClassifier().fit(X, np.where(ys == -1, 0, ys))
    for name in ("gamma_A", "gamma_I"):  # no named values here (LapSVM's 'scaled', 'auto')
        with pytest.raises(ValueError, match=f"{name} must be a finite number >= 0, got 'scaled'"):
            LapS3VMClassifier(**{name: "scaled"}).fit(X, ys)


def test_estimator_needs_unlabeled_rows():
    X, _, ys = text_like()
    full = np.where(ys == -1, 0, ys)
    for prior in ("predicted", "labeled", [0.5, 0.5]):
        # not the base class's advice (class_prior=None, which the S³VM refuses)
        with pytest.raises(ValueError, match="every row of y is labeled; LapSVMClassifier"):
            LapS3VMClassifier(class_prior=prior).fit(X, full)
    one = full.copy()
    one[np.flatnonzero(ys == -1)[0]] = -1
    with pytest.raises(ValueError, match="at least 2 of them, got 1"):
        LapS3VMClassifier().fit(X, one)
    m = LapS3VMClassifier(class_prior=[0.5, 0.5]).fit(X, one)  # given π: a fit
    assert np.all(np.isfinite(m.coef_)) and m.unlabeled_labels_.shape == (1, 1)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("estimate", ["start", "blend", "start-classes"])
def test_estimated_fraction_needs_two_unlabeled_rows(solver, estimate):
    X, L, labeled, unlabeled, T, _ = problem()
    with pytest.raises(ValueError, match="at least 2 of them, got 1; pass π"):
        solver(X, T, labeled, unlabeled[:1], lambda F: L @ F, gamma_A=1e-3, gamma_I=0.5,
               gamma_U=1.0, scale=1 / np.trace(L), positive_fraction=estimate)


def test_no_convergence_warning_by_default():
    X, _, ys = text_like(seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        LapS3VMClassifier().fit(X, ys)


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [True, False])
def test_tight_redo_reuses_the_true_residual(sparse, fit_intercept, weighted, monkeypatch):
    """A loose Newton step accepted and redone tightly from the same point reuses its
    right-hand side and first residual instead of another Xᵀ pass: every R0 handed to the
    CG equals B − A z recomputed with the step's operator, B the operator's right-hand
    side, and fewer passes than steps are made."""
    newton = importlib.import_module("linlap.solvers.lapsvm_newton")
    X, L, labeled, unlabeled, T, rng = problem(n=80, d=12, l=10, seed=5 + sparse, sparse=sparse)
    if weighted:  # the S³VM inner problem: unlabeled rows twice, soft weights
        rows, targets, W = s3vm_problem(labeled, T, unlabeled, rng.uniform(size=(70, 1)), 1.0)
    else:
        rows, targets, W = labeled, T, None
    checked, passes = [], []
    solve = newton._solve_columns
    rhs_and_residual = NormalOperator.rhs_and_residual

    def checking_solve(op, B, X0, tol, max_iter, R0=None, on_update=None):
        if R0 is not None:
            B_true = op.rhs(targets, np.arange(1))
            R_true = B_true - op.matvec(X0, np.arange(1))
            scale = np.linalg.norm(B_true)
            np.testing.assert_allclose(B, B_true, atol=1e-12 * scale)
            np.testing.assert_allclose(R0, R_true, atol=1e-10 * scale)
            checked.append(1)
        return solve(op, B, X0, tol, max_iter, R0=R0, on_update=on_update)

    def counting(self, *args, **kwargs):
        passes.append(1)
        return rhs_and_residual(self, *args, **kwargs)

    monkeypatch.setattr(newton, "_solve_columns", checking_solve)
    monkeypatch.setattr(NormalOperator, "rhs_and_residual", counting)
    sol = lapsvm_newton(X, targets, rows, lambda F: L @ F, gamma_A=1e-3, gamma_I=0.5,
                        scale=1 / np.trace(L), fit_intercept=fit_intercept, tol=1e-8,
                        row_weights=W)
    assert sol.converged and sol.residual < 1e-6
    # (the last pass is the final gradient check's, from the recomputed f and L^p f)
    assert len(checked) == sol.n_iter and len(passes) - 1 < sol.n_iter


@pytest.mark.parametrize("solver,fraction", [(s3vm_annealing, 0.4), (s3vm_annealing, "blend"),
                                             (s3vm_switching, "start")])
def test_solves_start_from_the_previous_solves_passes(solver, fraction, monkeypatch):
    """Every finite Newton solve after the first starts from the previous one's f and L^p f
    (updated by a loose solve, recomputed by a tight one's final check and kept), the
    first from w = 0 without a pass, and the objectives use the kept L^p f: the graph
    products — and the passes over X — are the CG iterations plus one per tight solve
    (its check)."""
    s3 = importlib.import_module("linlap.solvers.s3vm")
    csr = importlib.import_module("linlap._numba.csr")
    X, L, labeled, unlabeled, T, rng = problem(n=80, d=12, l=10, seed=3)
    calls, checks, passes = [], [], []

    def lap(F):
        calls.append(1)
        return L @ F

    newton, matmat = s3.lapsvm_newton, csr.csr_matmat

    def counting_newton(*args, **kwargs):
        checks.append(kwargs["gradient_check"])
        return newton(*args, **kwargs)

    def counting_matmat(indptr, *args, **kwargs):
        passes.append(indptr is X.indptr)
        return matmat(indptr, *args, **kwargs)

    monkeypatch.setattr(s3, "lapsvm_newton", counting_newton)
    monkeypatch.setattr(csr, "csr_matmat", counting_matmat)
    sol = solver(X, T, labeled, unlabeled, lap, gamma_A=1e-3, gamma_I=0.5, gamma_U=1.0,
                 scale=1 / np.trace(L), positive_fraction=fraction)
    tight = sum(checks)
    assert len(checks) == sol.state["n_solves"] and 2 <= tight < len(checks)
    assert len(calls) == sum(passes) == sol.state["cg_iter"] + tight
    # the returned f is X̃ z of the returned coefficients
    np.testing.assert_allclose(sol.decision, dense(X) @ sol.coef.T + sol.intercept,
                               rtol=1e-9, atol=1e-11)


def test_annealing_stops_once_labels_are_hard_on_few_rows():
    # u = 114 rows, π u not whole: the balance keeps one p_j fractional at every T, whose
    # entropy alone (up to 1/u > entropy_tol) must not hold the annealing to max_outer
    X, _, ys = text_like()
    graph = KNNGraph(n_neighbors=8).fit(X)
    u = int(np.sum(ys == -1))
    r = (np.floor(0.5 * u) + 0.5) / u
    labeled = np.flatnonzero(ys != -1)
    sol = s3vm_annealing(X, np.where(ys[labeled] == 1, 1.0, -1.0)[:, None], labeled,
                         np.flatnonzero(ys == -1), graph.laplacian_matvec, gamma_A=1e-3,
                         gamma_I=1.0, gamma_U=1.0, scale=graph.scale_, positive_fraction=r,
                         max_outer=30)
    assert sol.n_iter < 30
    T = sol.state["temperatures"]
    assert len(T) == sol.n_iter and T[-1] > 1.0 / 1.5 ** 29
    P = sol.state["P"][:, 0]
    assert np.sum((P > 0) & (P < 1)) <= 1 and abs(P.mean() - r) < 1e-12


def _labelled_objective_gradient(Xd, Lp, s, lab, Y, unl, P, w, b, gA, gI, gU):
    """Gradient in (w, b) of the module docstring's J at fixed labels p (one column)."""
    f = Xd @ w + b
    l, u = lab.size, unl.size
    r = np.zeros(Xd.shape[0])
    np.add.at(r, lab, -2.0 * np.maximum(0.0, 1.0 - Y * f[lab]) * Y / l)
    fu = f[unl]
    r[unl] += gU / u * (-2.0 * P * np.maximum(0.0, 1.0 - fu)
                        + 2.0 * (1.0 - P) * np.maximum(0.0, 1.0 + fu))
    r += 2.0 * gI * s * (Lp @ f)
    return np.r_[Xd.T @ r + 2.0 * gA * w, r.sum()]


@pytest.mark.parametrize("solver", ["annealing", "switching"])
@pytest.mark.parametrize("classes", [2, 3])
def test_estimator_minimises_the_objective_at_its_unlabeled_labels(solver, classes):
    # Both solvers end with f solved (at tol) for the labels they return: (coef_,
    # intercept_) is a stationary point of J at p = unlabeled_labels_, with the documented
    # weights 1/l, γ_A, γ_I s and γ_U p/u, γ_U (1 − p)/u (one-vs-rest columns)
    X, y, ys = text_like(classes=classes, seed=4)
    g = KNNGraph(n_neighbors=8).fit(X)
    Xd, Lp, s = X.toarray(), g.laplacian_matrix().toarray(), g.scale_
    lab, unl = np.flatnonzero(ys != -1), np.flatnonzero(ys == -1)
    gA, gI, gU = 1e-3, 1.0, 3.0
    m = LapS3VMClassifier(gamma_A=gA, gamma_I=gI, gamma_U=gU, solver=solver, graph=g,
                          tol=1e-10).fit(X, ys)
    assert m.unlabeled_labels_.shape == (unl.size, 1 if classes == 2 else classes)
    for c in range(m.coef_.shape[0]):
        positive = m.classes_[1] if classes == 2 else m.classes_[c]
        Y = np.where(ys[lab] == positive, 1.0, -1.0)
        P = m.unlabeled_labels_[:, c]
        grad = _labelled_objective_gradient(Xd, Lp, s, lab, Y, unl, P, m.coef_[c],
                                            m.intercept_[c], gA, gI, gU)
        grad0 = _labelled_objective_gradient(Xd, Lp, s, lab, Y, unl, P, 0 * m.coef_[c], 0.0,
                                             gA, gI, gU)
        ratio = np.linalg.norm(grad) / np.linalg.norm(grad0)
        assert ratio <= 1e-7, (c, ratio)


# -- the final T = 0 stage of the annealing ---------------------------------------------
def _trace_labelled_solves(monkeypatch):
    """Record what the S³VM solvers do, in order: every finite Newton solve (the labels P it
    is solved for — None for the LapSVM start —, its tol, the decision values it returns)
    and every label update (its temperature)."""
    s3vm = importlib.import_module("linlap.solvers.s3vm")
    problem_for, newton, labels = s3vm.s3vm_problem, s3vm.lapsvm_newton, s3vm._Solver.labels
    events, pending = [], []

    def recorded_problem(labeled_rows, targets, unlabeled_rows, P, gamma_U):
        pending.append(np.array(P, dtype=np.float64))
        return problem_for(labeled_rows, targets, unlabeled_rows, P, gamma_U)

    def recorded_newton(*args, **kwargs):
        sol = newton(*args, **kwargs)
        P = pending.pop() if "row_weights" in kwargs else None
        assert not pending
        events.append(dict(P=P, tol=kwargs["tol"], decision=sol.decision.copy()))
        return sol

    def recorded_labels(self, FU, T):
        events.append(dict(temperature=T))
        return labels(self, FU, T)

    monkeypatch.setattr(s3vm, "s3vm_problem", recorded_problem)
    monkeypatch.setattr(s3vm, "lapsvm_newton", recorded_newton)
    monkeypatch.setattr(s3vm._Solver, "labels", recorded_labels)
    return events


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("case,balance,temperature,max_outer,max_inner", [
    ("repeat after several solves", "labels", None, 1, 10),
    ("repeat at once", "labels", None, 30, 10),
    ("max_inner reached", "labels", None, 1, 3),
    ("hard before T = 0", "mean", 1e-6, 1, 10)])
def test_annealing_final_stage_solves_until_the_labels_repeat(case, balance, temperature,
                                                              max_outer, max_inner, sparse,
                                                              monkeypatch):
    """The final T = 0 stage of s3vm_annealing (docstring): the hard balanced labels of f
    and f solved at ``tol`` for them, alternately, until the labels repeat — at least one,
    at most ``max_inner`` solves — and the returned labels are those the returned f was
    solved for. Stopping the annealing after one temperature (max_outer=1) leaves f far
    from its hard labels: they then change over several T = 0 solves; after the full
    annealing they repeat after the first solve; max_inner=3 ends the stage while they
    still change; at a tiny temperature (balance='mean': p = σ(−g/T) exactly 0 or 1) the
    annealed f was solved for its hard labels already — and still gets its solve at tol."""
    X, L, labeled, unlabeled, T, _ = problem(n=60, k=1, seed=8, sparse=sparse)
    gU, tol = 2.0, 1e-6
    kw = dict(gamma_A=1e-3, gamma_I=0.5, gamma_U=gU, scale=1 / np.trace(L))
    lap = lambda F: L @ F  # noqa: E731
    events = _trace_labelled_solves(monkeypatch)
    ends = []  # len(events) when each temperature ends
    sol = s3vm_annealing(X, T, labeled, unlabeled, lap, positive_fraction=0.5, tol=tol,
                         balance=balance, temperature=temperature, max_outer=max_outer,
                         max_inner=max_inner,
                         callback=lambda outer, T_outer: ends.append(len(events)), **kw)
    pi = sol.state["positive_fraction"]

    def hard(F):  # the labels at T = 0 of the decision values F
        FU = F[unlabeled]
        G = gU * (np.maximum(0, 1 - FU) ** 2 - np.maximum(0, 1 + FU) ** 2)
        return balanced_soft_labels(G, 0.0, pi) if balance == "labels" else (
            (G < 0) + 0.5 * (G == 0))

    annealed = [e for e in events[:ends[-1]] if "tol" in e][-1]  # where annealing left f
    stage = events[ends[-1]:]
    final = [e for e in stage if "tol" in e]
    assert 1 <= len(final) <= max_inner, f"{len(final)} solves at T = 0"
    f = annealed["decision"]
    for i, st in enumerate(final):
        assert st["tol"] == tol, f"T = 0 solve {i + 1} at tol={st['tol']}, not tol={tol}"
        np.testing.assert_array_equal(st["P"], hard(f), err_msg=f"T = 0 solve {i + 1} is not "
                                      f"for the hard labels of the previous f")
        if i:
            assert not np.array_equal(st["P"], final[i - 1]["P"]), (
                f"T = 0 solve {i + 1} repeats the labels of solve {i}: the stage should have "
                f"stopped")
        f = st["decision"]
    repeated = np.array_equal(hard(f), final[-1]["P"])
    assert repeated or len(final) == max_inner, (
        f"the T = 0 stage stopped after {len(final)} of max_inner={max_inner} solves with the "
        f"labels of f still changing")
    # it stops there: one label update per solve, and the one that found the repeat
    updates = [e["temperature"] for e in stage if "temperature" in e]
    assert updates == [0.0] * (len(final) + repeated), (
        f"{len(updates)} label updates at T = 0 for {len(final)} solves (labels repeated: "
        f"{repeated})")
    observed = ("max_inner reached" if not repeated else "repeat at once" if len(final) == 1
                else "repeat after several solves")
    if case == "hard before T = 0":
        np.testing.assert_array_equal(annealed["P"], hard(annealed["decision"]))
        case = "repeat at once"
    assert observed == case, f"{case}: {len(final)} T = 0 solves, labels repeated: {repeated}"
    # returned: the last solve's f and the labels it was solved for
    np.testing.assert_array_equal(sol.state["P"], final[-1]["P"])
    np.testing.assert_array_equal(sol.decision, final[-1]["decision"])
    # each T = 0 solve (warm-started) and each label update lowers J: the stage ends no
    # higher than the last temperature's J at the hard labels
    J = s3vm_objective(X, T, labeled, unlabeled, lap, sol.coef, sol.intercept,
                       P=sol.state["P"], **kw)[0]
    np.testing.assert_allclose(sol.history[-1], J, rtol=1e-10)
    assert len(sol.history) == len(ends) + 1 and sol.history[-1] <= sol.history[-2]
