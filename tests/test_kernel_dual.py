"""The hinge-loss kernel LapSVM through its dual (seed 001 eqs. 9–11) against dense
references of

    J(α, b) = (1/l) Σ_labeled max(0, 1 − y_i f_i) + γ_A αᵀKα + γ_I s fᵀ M f,   f = Kα + b,

written out independently here (M = L^p dense): the primal QP in (α, b, ξ) solved by
SLSQP, the KKT conditions, libsvm with γ_I = 0, and the primal Newton LapSVM."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from reference import blobs, random_design, random_laplacian, unit_rows_problem
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.svm import SVC

from linlap import KNNGraph
from linlap.estimators import KernelLapSVMClassifier
from linlap.gram import GramOperator
from linlap.solvers.kernel_dual import dual_system_cg, kernel_lapsvm_dual


def problem(sparse, normalized, seed=0, n=60, l=30, width=0.05):
    rng = np.random.default_rng(seed)
    X = random_design(n, 6, rng, sparse=sparse, density=0.6)
    Lm = random_laplacian(n, rng, normalized=normalized)
    M = Lm @ Lm  # p = 2
    rows = np.sort(rng.choice(n, l, replace=False))
    Xd = X.toarray() if sparse else X
    Y = np.where(Xd[rows] @ rng.standard_normal((6, 2)) > 0, 1.0, -1.0)
    K = pairwise_kernels(Xd, metric="rbf", gamma=width)
    return dict(op=GramOperator(X, kernel="rbf", gamma=width), K=K, M=M, rows=rows, Y=Y,
                s=1 / np.trace(Lm))


def hinge_J(K, M, rows, y, a, b, gA, c):
    f = K @ a + b
    return np.mean(np.maximum(0.0, 1 - y * f[rows])) + gA * a @ K @ a + c * f @ M @ f


def primal_reference(K, M, rows, y, gA, c):
    """min over (w, b, ξ) of (1/l)Σξ + γ_A‖w‖² + c fᵀMf, y_i f_i ≥ 1 − ξ_i, ξ ≥ 0, with
    f = Φw + b, K = ΦΦᵀ (Φ = VΛ^½ from eigh): the primal QP by SLSQP. Returns f, J."""
    n, l = K.shape[0], rows.size
    lam, V = np.linalg.eigh(K)
    Phi = V * np.sqrt(np.maximum(lam, 0.0))
    Pl = Phi[rows]

    def fun(z):
        w, b, xi = z[:n], z[n], z[n + 1:]
        f = Phi @ w + b
        Mf = M @ f
        g = np.zeros_like(z)
        g[:n] = 2 * gA * w + 2 * c * Phi.T @ Mf
        g[n] = 2 * c * Mf.sum()
        g[n + 1:] = 1.0 / l
        return xi.mean() + gA * w @ w + c * f @ Mf, g

    A = np.zeros((2 * l, n + 1 + l))
    A[:l, :n] = y[:, None] * Pl
    A[:l, n] = y
    A[:l, n + 1:] = np.eye(l)
    A[l:, n + 1:] = np.eye(l)
    lb = np.r_[np.ones(l), np.zeros(l)]
    cons = [dict(type="ineq", fun=lambda z: A @ z - lb, jac=lambda z: A)]
    z0 = np.r_[np.zeros(n + 1), np.ones(l)]
    res = minimize(fun, z0, jac=True, constraints=cons, method="SLSQP",
                   options=dict(maxiter=5000, ftol=1e-15))
    assert res.success, res.message
    return Phi @ res.x[:n] + res.x[n], res.fun


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("normalized", [True, False])
def test_dual_matches_primal_qp_and_satisfies_kkt(sparse, normalized):
    P = problem(sparse, normalized)
    K, M, rows, Y = P["K"], P["M"], P["rows"], P["Y"]
    n, l = K.shape[0], rows.size
    gA, gI = 1e-3, 0.1
    c = gI * P["s"]
    sol = kernel_lapsvm_dual(P["op"].matvec, Y, rows, lambda F: M @ F, n_samples=n,
                             gamma_A=gA, gamma_I=gI, scale=P["s"], tol=1e-12, qp_tol=1e-10)
    assert sol.converged and sol.stop_reason == "dual"
    assert sol.bias_free == (not normalized)
    for col in range(2):
        y, a, b, beta = Y[:, col], sol.dual_coef[col], sol.intercept[col], sol.beta[col]
        f = K @ a + b
        np.testing.assert_allclose(sol.decision[:, col], f, atol=1e-10)
        # the same minimum as the primal QP solved directly
        f_ref, J_ref = primal_reference(K, M, rows, y, gA, c)
        J = hinge_J(K, M, rows, y, a, b, gA, c)
        np.testing.assert_allclose(sol.history[0, col], J, rtol=1e-10)
        np.testing.assert_allclose(J, J_ref, rtol=1e-6)
        np.testing.assert_allclose(f, f_ref, atol=1e-4)
        # KKT: box, complementary slackness (the problem has all three kinds of rows)
        margin = y * f[rows]
        low, up = beta <= 1e-12, beta >= 1 / l - 1e-12
        mid = ~low & ~up
        assert low.any() and mid.any() and up.any()
        assert np.all(beta >= 0) and np.all(beta <= 1 / l + 1e-15)
        # (libsvm, used with a free bias, caches the kernel in float32: 1e-6 margins)
        slack = 1e-5 if not normalized else 1e-7
        assert np.all(margin[low] >= 1 - slack)
        assert np.all(margin[up] <= 1 + slack)
        np.testing.assert_allclose(margin[mid], 1.0, atol=slack)
        # stationarity in α (times K) and in b
        r = np.zeros(n)
        r[rows] = y * beta
        np.testing.assert_allclose(K @ (2 * gA * a + 2 * c * M @ f - r), 0, atol=1e-10)
        np.testing.assert_allclose(2 * c * M.sum(axis=0) @ f, y @ beta, atol=1e-10)
        if not normalized:  # seed 001's equality constraint
            assert abs(y @ beta) < 1e-9


def test_cg_of_eq11_solves_the_nonsymmetric_system():
    P = problem(False, True, seed=3, width=0.3)
    K, M = P["K"], P["M"]
    n = K.shape[0]
    rng = np.random.default_rng(1)
    R = rng.standard_normal((n, 3))
    gA, c = 1e-2, 0.7
    X, KX, it, ok = dual_system_cg(P["op"].matvec, lambda F: M @ F, R, gamma_A=gA, c=c,
                                   tol=1e-12, max_iter=500)
    ref = np.linalg.solve(2 * gA * np.eye(n) + 2 * c * M @ K, R)
    assert ok and it > 0
    np.testing.assert_allclose(X, ref, atol=1e-8 * np.abs(ref).max())
    np.testing.assert_allclose(KX, K @ X, atol=1e-9 * np.abs(K @ X).max())
    # γ_I = 0: exact at the start, no iteration
    X0, _, it0, ok0 = dual_system_cg(P["op"].matvec, None, R, gamma_A=gA, c=0.0)
    assert ok0 and it0 == 0
    np.testing.assert_allclose(X0, R / (2 * gA))


@pytest.mark.parametrize("sparse", [True, False])
def test_no_graph_term_equals_libsvm_on_the_precomputed_kernel(sparse):
    X, y = blobs(n=80, d=8, seed=2, sparse=sparse, noise=0.8)
    Xt, _ = blobs(n=30, d=8, seed=5, sparse=sparse, noise=0.8)
    rng = np.random.default_rng(0)
    lab = np.sort(rng.choice(80, 25, replace=False))
    ys = np.full(80, -1)
    ys[lab] = y[lab]
    gA = 1e-2
    clf = KernelLapSVMClassifier(gA, 0.0, solver="dual", gamma=0.5, tol=1e-12).fit(X, ys)
    Kl = pairwise_kernels(X[lab], metric="rbf", gamma=0.5)
    svc = SVC(kernel="precomputed", C=1 / (2 * lab.size * gA), tol=1e-10).fit(Kl, y[lab])
    ref = svc.decision_function(pairwise_kernels(Xt, X[lab], metric="rbf", gamma=0.5))
    np.testing.assert_allclose(clf.decision_function(Xt), ref, atol=1e-5)
    unl = np.setdiff1d(np.arange(80), lab)
    assert np.all(clf.dual_coef_[0, unl] == 0)
    assert clf.dual_coef_.shape == (1, 80) and clf.stop_reason_ == "dual"
    dc = np.zeros(lab.size)
    dc[svc.support_] = svc.dual_coef_[0]
    np.testing.assert_allclose(clf.dual_coef_[0, lab], dc, atol=1e-5 * np.abs(dc).max())


def euclidean_graph(X, k, normalized=True):
    Z = np.hstack([X, np.full((X.shape[0], 1), 1e3 * np.abs(X).max())])
    return KNNGraph(n_neighbors=k, weight="binary", normalized=normalized, power=1,
                    algorithm="exact").fit(Z)


def test_agrees_with_primal_newton_on_well_separated_data():
    rng = np.random.default_rng(0)
    truth = np.r_[np.zeros(100, int), np.ones(100, int)]
    X = rng.standard_normal((200, 2)) * 0.4 + np.where(truth[:, None] == 1, 2.0, -2.0)
    y = np.full(200, -1)
    lab = np.r_[rng.choice(100, 4, replace=False), 100 + rng.choice(100, 4, replace=False)]
    y[lab] = truth[lab]
    g = euclidean_graph(X, 8)
    kw = dict(gamma_A=1e-3, gamma_I=1.0, gamma=0.2, graph=g)
    dual = KernelLapSVMClassifier(solver="dual", **kw).fit(X, y)
    newton = KernelLapSVMClassifier(solver="newton", **kw).fit(X, y)
    Xt = rng.standard_normal((100, 2)) * 0.4 + np.where(np.arange(100)[:, None] < 50, 2, -2)
    fd, fn = dual.decision_function(Xt), newton.decision_function(Xt)
    # hinge vs squared hinge: the same classifier, decision values close in shape
    assert np.array_equal(dual.predict(Xt), newton.predict(Xt))
    assert np.array_equal(dual.transduction_, truth)
    assert np.corrcoef(fd, fn)[0, 1] > 0.95
    assert np.all(np.abs(fd) > 0.5) and np.all(np.abs(fn) > 0.5)


@pytest.mark.parametrize("sparse", [True, False])
def test_estimator_multiclass_unlabeled_graph_reuse_and_memory(sparse):
    X, y = blobs(n=90, d=8, n_classes=3, seed=1, sparse=sparse, noise=0.4)
    labels = np.array(["a", "b", "c"])[y]
    ys = np.full(90, "?", dtype=object)
    lab = np.r_[[np.flatnonzero(y == k)[:5] for k in range(3)]].ravel()
    ys[lab] = labels[lab]
    g = KNNGraph(n_neighbors=8, algorithm="exact").fit(X)
    clf = KernelLapSVMClassifier(1e-3, 1.0, solver="dual", gamma=0.5, graph=g,
                                 unlabeled="?").fit(X, ys)
    assert clf.graph_ is g and clf.solver_ == "dual"
    assert clf.dual_coef_.shape == (3, 90) and clf.intercept_.shape == (3,)
    assert list(clf.classes_) == ["a", "b", "c"]
    assert np.mean(clf.predict(X) == labels) >= 0.85
    np.testing.assert_array_equal(clf.transduction_[lab], labels[lab])
    # one-vs-rest: each column is the binary problem of its class
    one = KernelLapSVMClassifier(1e-3, 1.0, solver="dual", gamma=0.5, graph=g,
                                 unlabeled="?")
    yb = np.where(ys == "?", "?", np.where(ys == "b", "b", "a0")).astype(object)
    one.fit(X, yb)
    np.testing.assert_allclose(one.decision_function(X), clf.decision_function(X)[:, 1],
                               atol=1e-6)
    # dense and CSR give the same fit
    other = sp.csr_matrix(X) if not sparse else X.toarray()
    g2 = KNNGraph(n_neighbors=8, algorithm="exact").fit(other)
    clf2 = KernelLapSVMClassifier(1e-3, 1.0, solver="dual", gamma=0.5, graph=g2,
                                  unlabeled="?").fit(other, ys)
    np.testing.assert_allclose(clf2.decision_function(other), clf.decision_function(X),
                               atol=1e-5)
    with pytest.raises(ValueError, match="solver='dual' with n = 90 rows and l = 15"):
        KernelLapSVMClassifier(solver="dual", graph=g, unlabeled="?",
                               memory_budget=8 * 90 * 90).fit(X, ys)


@pytest.mark.parametrize("gI", [1e-5, 1e-9, 1e-300])
def test_small_bias_penalty_reaches_the_primal_minimum(gI):
    # γ_I s ≪ γ_A on the normalised Laplacian: a tiny bias penalty q. Folding it into the
    # QP as s sᵀ/(2κ) made coordinate descent stall (J 2.8× the minimum at γ_I = 1e-5) or
    # refuse (q not positive); the bias is now found by a 1-D search around box QPs.
    P = problem(False, True)
    K, M, rows, Y = P["K"], P["M"], P["rows"], P["Y"]
    gA = 1e-2
    c = gI * P["s"]
    sol = kernel_lapsvm_dual(P["op"].matvec, Y, rows, lambda F: M @ F, n_samples=K.shape[0],
                             gamma_A=gA, gamma_I=gI, scale=P["s"], tol=1e-12, qp_tol=1e-10)
    assert sol.converged
    for col in range(Y.shape[1]):
        y, a, b = Y[:, col], sol.dual_coef[col], sol.intercept[col]
        _, J_ref = primal_reference(K, M, rows, y, gA, c)
        np.testing.assert_allclose(hinge_J(K, M, rows, y, a, b, gA, c), J_ref, rtol=1e-6)


@pytest.mark.parametrize("sparse", [True, False])
def test_duplicated_labeled_rows_reach_the_primal_minimum(sparse):
    # Copies of labeled documents make the free block of Q singular; the polish of the
    # bias solved it with np.linalg.solve and raised LinAlgError.
    rng = np.random.default_rng(5)
    A = random_design(44, 6, rng, sparse=sparse, density=0.6)
    X = sp.vstack([A, A[:6]]).tocsr() if sparse else np.vstack([A, A[:6]])
    n = X.shape[0]
    Lm = random_laplacian(n, rng, normalized=True)
    M = Lm @ Lm
    rows = np.r_[np.arange(6), np.arange(44, 50), np.arange(10, 24)]  # the copies labeled
    Xd = X.toarray() if sparse else X
    Y = np.where(Xd[rows] @ rng.standard_normal((6, 2)) > 0, 1.0, -1.0)
    K = pairwise_kernels(Xd, metric="rbf", gamma=0.05)
    s = 1 / np.trace(Lm)
    gA, gI = 1e-3, 0.1
    sol = kernel_lapsvm_dual(GramOperator(X, kernel="rbf", gamma=0.05).matvec, Y, rows,
                             lambda F: M @ F, n_samples=n, gamma_A=gA, gamma_I=gI, scale=s,
                             tol=1e-12, qp_tol=1e-10)
    assert sol.converged
    for col in range(2):
        y, a, b = Y[:, col], sol.dual_coef[col], sol.intercept[col]
        _, J_ref = primal_reference(K, M, rows, y, gA, gI * s)
        np.testing.assert_allclose(hinge_J(K, M, rows, y, a, b, gA, gI * s), J_ref, rtol=1e-6)


# -- the duality gap: the certificate of the returned model ------------------------------
def ill_conditioned(case, seed=1, n=80):
    """Problems the dual cannot solve in floating point: rows of norm 1e6 under the
    linear kernel (K ~ 1e12 against γ_A = 1e-4), a Laplacian power of 100 (‖L^p‖ ~ 2^100),
    a polynomial kernel of degree 40."""
    X, Lm, rows, Y, s = unit_rows_problem(n, seed)
    M = np.linalg.matrix_power(Lm, 100 if case == "power" else 2)
    op = {"linear": lambda: GramOperator(X * 1e6, kernel="linear"),
          "power": lambda: GramOperator(X, kernel="rbf", gamma=0.5),
          "poly": lambda: GramOperator(X, kernel="poly", gamma=1.0, degree=40)}[case]()
    return op, M, rows, Y, s


@pytest.mark.parametrize("case", ["linear", "power", "poly"])
def test_a_model_worse_than_the_zero_model_is_refused(case):
    # These returned models with J from 4 to 1e14 (the zero model's J is 1): silently
    # for the linear kernel, with only "increase max_iter" warnings for the others.
    op, M, rows, Y, s = ill_conditioned(case)
    with pytest.raises(ValueError, match="worse than the zero model.*normalise the rows"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # CG / QP iteration limits
            kernel_lapsvm_dual(op.matvec, Y, rows, lambda F: M @ F, n_samples=80,
                               gamma_A=1e-4, gamma_I=100.0, scale=s)


@pytest.mark.parametrize("normalized", [True, False])
def test_duality_gap_bounds_the_distance_to_the_minimum(normalized):
    # J − D(β) ≥ J − min J: tiny on a well-posed problem (also through the penalised bias
    # of the normalised Laplacian), and above gap_tol it is reported
    P = problem(False, normalized)
    K, M, rows, Y = P["K"], P["M"], P["rows"], P["Y"]
    gA, gI = 1e-3, 0.1
    kw = dict(n_samples=K.shape[0], gamma_A=gA, gamma_I=gI, scale=P["s"])
    sol = kernel_lapsvm_dual(P["op"].matvec, Y, rows, lambda F: M @ F, **kw)
    np.testing.assert_allclose(sol.history[0], sol.dual_value + sol.gap, rtol=1e-12)
    assert np.all(sol.gap > -1e-7) and np.all(sol.gap < 1e-6)
    y = Y[:, 0]
    _, J_ref = primal_reference(K, M, rows, y, gA, gI * P["s"])
    assert sol.dual_value[0] <= J_ref + 1e-7 <= sol.history[0, 0] + 2e-7
    with pytest.warns(ConvergenceWarning, match="did not reach the minimiser within gap_tol"):
        kernel_lapsvm_dual(P["op"].matvec, Y, rows, lambda F: M @ F, gap_tol=1e-14, **kw)


def test_a_dual_value_above_J_is_no_certificate():
    # On an ill-conditioned problem D(β) comes from the CG's inexact solve and can exceed
    # J: a gap below −gap_tol passed the one-sided check silently
    Xu, _, rows, y, _ = unit_rows_problem(80, 3)
    Lm = random_laplacian(80, np.random.default_rng(13), normalized=False)
    M, s = Lm @ Lm, 1 / np.trace(Lm)
    K = (Xu * 3e5) @ (Xu * 3e5).T
    with pytest.warns(ConvergenceWarning, match="dual value exceeds"):
        sol = kernel_lapsvm_dual(lambda V: K @ V, y, rows, lambda F: M @ F, n_samples=80,
                                 gamma_A=1e-4, gamma_I=1.0, scale=s)
    assert sol.gap[0] < -1e-3
