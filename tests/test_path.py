"""The LapSVM solution path (linlap.solvers.path) against dense direct solves.

A point λ of the path minimises J = (1/l) Σ max(0, 1 − y f) + γ_A‖w‖² + γ_I s fᵀL^pf with
γ_I = λ/(2l), γ_A = ρλ/(2l): the references below solve that objective's dual at single λ
with dense matrices and generic solvers (SVC for the free bias, L-BFGS-B on the box QP
otherwise) and check zero duality gap against the primal J computed directly.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from linlap import KNNGraph, LapSVMClassifier
from linlap.estimators import lapsvm_path
from linlap.solvers.path import follow_path, path_reduction

from reference import random_design, random_laplacian


class DenseGraph:
    """Duck-typed graph: a dense Laplacian L, its power p and s = 1/trace(L)."""

    def __init__(self, L, power):
        self.L = L
        self.power = power
        self.Lp = np.linalg.matrix_power(L, power)
        self.scale_ = 1.0 / np.trace(L)

    def laplacian_matvec(self, F):
        return self.Lp @ F


def problem(n=36, d=7, l=14, seed=0, sparse=True, normalized=False, balanced=False, power=2):
    rng = np.random.default_rng(seed)
    X = random_design(n, d, rng, sparse=sparse)
    Xd = X.toarray() if sp.issparse(X) else X
    w = rng.normal(size=d)
    labels = np.where(Xd @ w + 0.4 * rng.normal(size=n) > 0, 1, 0)
    lab = rng.choice(n, l, replace=False)
    if balanced:
        pos = rng.permutation(np.flatnonzero(labels == 1))[: l // 2]
        neg = rng.permutation(np.flatnonzero(labels == 0))[: l // 2]
        lab = np.r_[pos, neg]
    y = np.full(n, -1)
    y[lab] = labels[lab]
    if not balanced:
        y[lab[0]], y[lab[1]] = 1, 0   # both classes present
    graph = DenseGraph(random_laplacian(n, rng, normalized=normalized), power)
    return X, y, graph


def dense_reference(X, y, graph, rho, lam, fit_intercept=True):
    """(w, b, primal l·J, dual matrix Q) at λ by a dense direct dual solve."""
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X)
    n, d = Xd.shape
    lab = np.flatnonzero(y != -1)
    t = np.where(y[lab] == 1, 1.0, -1.0)
    s, M = graph.scale_, graph.Lp
    Xt = np.hstack([Xd, np.ones((n, 1))]) if fit_intercept else Xd
    H = s * Xt.T @ M @ Xt
    H[np.arange(d), np.arange(d)] += rho
    free = fit_intercept and np.allclose(M @ np.ones(n), 0, atol=1e-10)
    if free:
        A = H[:d, :d]
        G = Xd[lab] @ np.linalg.solve(A, Xd[lab].T)
        svc = SVC(kernel="precomputed", C=1.0 / lam, tol=1e-12).fit(G, t)
        coef = np.zeros(lab.size)
        coef[svc.support_] = svc.dual_coef_[0]
        w = np.linalg.solve(A, Xd[lab].T @ coef)
        b = float(svc.intercept_[0])
        alpha = np.abs(coef) * lam
        Q = np.outer(t, t) * G
    else:
        Q = np.outer(t, t) * (Xt[lab] @ np.linalg.solve(H, Xt[lab].T))

        def negdual(a):
            return -(a.sum() - a @ Q @ a / (2 * lam)), -(1 - Q @ a / lam)

        res = minimize(negdual, np.full(lab.size, 0.5), jac=True, method="L-BFGS-B",
                       bounds=[(0, 1)] * lab.size,
                       options={"ftol": 0, "gtol": 1e-13, "maxiter": 20000, "maxcor": 30})
        alpha = res.x
        z = np.linalg.solve(H, Xt[lab].T @ (t * alpha)) / lam
        w, b = z[:d], (z[d] if fit_intercept else 0.0)
    # polish: α strictly inside (0, 1) is on the margin; solve those equations exactly
    # (the generic solvers stop ~1e-7 short at small λ)
    F = np.flatnonzero((alpha > 1e-6) & (alpha < 1 - 1e-6))
    if F.size:
        a = np.where(alpha >= 1 - 1e-6, 1.0, 0.0)
        R = np.setdiff1d(np.arange(lab.size), F)
        m = F.size + free
        K = np.zeros((m, m))
        K[:F.size, :F.size] = Q[np.ix_(F, F)]
        rhs = np.r_[lam - Q[np.ix_(F, R)] @ a[R], [-(t[R] @ a[R])] if free else []]
        if free:
            K[:F.size, -1] = K[-1, :F.size] = t[F]
        sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
        if sol[:F.size].min() >= -1e-9 and sol[:F.size].max() <= 1 + 1e-9:
            a[F] = sol[:F.size]
            alpha = a
            if free:
                b = sol[-1] / lam
                w = np.linalg.solve(A, Xd[lab].T @ (t * alpha)) / lam
            else:
                z = np.linalg.solve(H, Xt[lab].T @ (t * alpha)) / lam
                w, b = z[:d], (z[d] if fit_intercept else 0.0)
    f = Xd @ w + b
    primal = np.maximum(0, 1 - t * f[lab]).sum() + lam / 2 * (rho * w @ w + s * f @ M @ f)
    return w, b, primal, Q, alpha


def primal_lJ(X, y, graph, rho, lam, w, b):
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X)
    lab = np.flatnonzero(y != -1)
    t = np.where(y[lab] == 1, 1.0, -1.0)
    f = Xd @ w + b
    return (np.maximum(0, 1 - t * f[lab]).sum()
            + lam / 2 * (rho * w @ w + graph.scale_ * f @ graph.Lp @ f))


def sample_lambdas(path):
    L = path.lambdas
    mids = np.sqrt(L[:-1] * L[1:])
    mids = mids[mids >= 1e-2 * L[0]]   # the direct references get slow as C = 1/λ grows
    return np.r_[2.0 * L[0], L[: min(4, L.size)], mids[:: max(1, mids.size // 6)]]


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("method", ["gram", "cg"])
def test_path_matches_direct_dual_solve(sparse, normalized, method):
    X, y, graph = problem(sparse=sparse, normalized=normalized, seed=1)
    rho = 0.05
    path = lapsvm_path(X, y, graph, rho=rho, method=method, tol=1e-13)
    assert path.reduction.bias == ("penalized" if normalized else "free")
    assert path.status == "ok"
    for lam in sample_lambdas(path):
        w, b = path.coef_at(lam)
        w_ref, b_ref, primal_ref, Q, _ = dense_reference(X, y, graph, rho, lam)
        scale = 1 + np.abs(w_ref).max()
        np.testing.assert_allclose(w, w_ref, atol=1e-6 * scale)
        assert abs(b - b_ref) <= 1e-6 * (1 + abs(b_ref))
        # certificate: the path's α is dual feasible and closes the duality gap
        alpha, _ = path.dual_at(lam)
        assert alpha.min() >= -1e-12 and alpha.max() <= 1 + 1e-12
        dual = alpha.sum() - alpha @ Q @ alpha / (2 * lam)
        primal = primal_lJ(X, y, graph, rho, lam, w, b)
        assert abs(primal - dual) <= 1e-8 * (1 + abs(primal))
        assert primal <= primal_ref + 1e-8 * (1 + abs(primal_ref))


def test_no_intercept_path():
    X, y, graph = problem(seed=3)
    path = lapsvm_path(X, y, graph, rho=0.1, fit_intercept=False)
    assert path.reduction.bias == "none" and path.init == "all-ones"
    for lam in sample_lambdas(path):
        w, b = path.coef_at(lam)
        w_ref, _, _, _, _ = dense_reference(X, y, graph, 0.1, lam, fit_intercept=False)
        assert b == 0.0
        np.testing.assert_allclose(w, w_ref, atol=1e-6 * (1 + np.abs(w_ref).max()))


@pytest.mark.parametrize("normalized", [False, True])
def test_equals_tinv_hinge_estimator(normalized):
    """λ on the path ≡ LapSVMClassifier(solver='tinv', loss='hinge', γ_A=ρλ/2l, γ_I=λ/2l).

    With the unnormalised Laplacian (free bias) tinv runs libsvm to 1e-12 and the match
    is tight; with the normalised one (bias penalised through L^p1) tinv uses liblinear,
    whose dual coordinate descent stops short, so the check there is looser."""
    rng = np.random.default_rng(5)
    X = sp.csr_matrix(np.abs(rng.normal(size=(45, 6))))
    labels = (X.toarray()[:, 0] > X.toarray()[:, 1]).astype(int)
    y = np.full(45, -1)
    lab = rng.choice(45, 13, replace=False)
    y[lab] = labels[lab]
    g = KNNGraph(n_neighbors=5, normalized=normalized, power=2).fit(X)
    rho = 0.1
    path = lapsvm_path(X, y, g, rho=rho)
    l = path.n_labeled
    tol = 1e-6 if not normalized else 2e-2
    for lam in sample_lambdas(path)[:8]:
        w, b = path.coef_at(lam)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = LapSVMClassifier(gamma_A=rho * lam / (2 * l), gamma_I=lam / (2 * l),
                                   solver="tinv", loss="hinge", graph=g, tol=1e-12,
                                   max_iter=100000).fit(X, y)
        scale = 1 + np.abs(w).max()
        np.testing.assert_allclose(clf.coef_[0], w, atol=tol * scale)
        assert abs(clf.intercept_[0] - b) <= tol * scale



@pytest.mark.parametrize("n_labeled", [14, 9])
def test_breakpoint_weights_follow_the_documented_relation(n_labeled):
    # LapSVMPath: γ_I = λ/(2l), γ_A = ρλ/(2l) at the breakpoints, l the path's own labeled
    # rows (a fold's path: its training rows)
    X, y, graph = problem(seed=21)
    lab = np.flatnonzero(y != -1)
    y = y.copy()
    y[lab[n_labeled:]] = -1
    l = n_labeled
    assert len(set(y[y != -1])) == 2
    rho = 0.3
    path = lapsvm_path(X, y, graph, rho=rho)
    assert path.n_labeled == l and path.lambdas.size >= 3
    np.testing.assert_allclose(path.gamma_I, path.lambdas / (2 * l), rtol=1e-13)
    np.testing.assert_allclose(path.gamma_A, rho * path.lambdas / (2 * l), rtol=1e-13)

def kkt_violation(path, Q, lam, free):
    alpha, alpha0 = path.dual_at(lam)
    h = (Q @ alpha + (path.y * alpha0 if free else 0.0)) / lam   # = y f (free bias)
    if not free:
        h = Q @ alpha / lam
    viol = 0.0
    viol = max(viol, np.max(np.where(alpha < 1 - 1e-9, 1 - h, -np.inf), initial=0))  # α<1 ⇒ yf ≥ 1
    viol = max(viol, np.max(np.where(alpha > 1e-9, h - 1, -np.inf), initial=0))      # α>0 ⇒ yf ≤ 1
    if free:
        viol = max(viol, abs(path.y @ alpha))
    # round-off of Qα/λ grows like ‖Q‖ l / λ
    return viol / (1 + 1e-3 * np.abs(Q).max() * Q.shape[0] / lam)


@pytest.mark.parametrize("normalized", [False, True])
def test_breakpoints_monotone_and_events_consistent(normalized):
    X, y, graph = problem(n=50, l=24, seed=7, normalized=normalized)
    path = lapsvm_path(X, y, graph, rho=0.02)
    red = path.reduction
    free = red.bias == "free"
    Q = red.G * np.outer(path.y, path.y)
    L = path.lambdas
    assert np.all(np.diff(L) < 0) and L[-1] > 0
    assert path.alphas.shape == (L.size, path.n_labeled)
    assert len(path.elbows) == len(path.events) == L.size
    for k, lam in enumerate(L):
        a = path.alphas[k]
        assert a.min() >= 0 and a.max() <= 1
        assert kkt_violation(path, Q, lam, free) <= 1e-8
        # the elbow rows sit on the margin: y f = 1
        E = path.elbows[k]
        if E.size:
            f = path.decision_labeled([lam])[0]
            roundoff = 1 + 1e-3 * np.abs(Q).max() * Q.shape[0] / lam
            np.testing.assert_allclose(path.y[E] * f[E], 1.0, atol=1e-8 * roundoff)
        # every non-elbow α is at a bound
        rest = np.setdiff1d(np.arange(a.size), E)
        assert np.all((a[rest] == 0) | (a[rest] == 1))
    # between breakpoints α is linear in λ and KKT holds everywhere
    for k in range(L.size - 1):
        for t in (0.25, 0.5, 0.75):
            lam = L[k + 1] + t * (L[k] - L[k + 1])
            assert kkt_violation(path, Q, lam, free) <= 1e-8
    # decision values of labeled rows: from G alone = from the coefficients
    lam = np.sqrt(L[0] * L[min(3, L.size - 1)])
    w, b = path.coef_at(lam)
    Xd = X.toarray()
    np.testing.assert_allclose(path.decision_labeled([lam])[0], Xd[path.labeled_rows] @ w + b,
                               atol=1e-9 * (1 + np.abs(w).max()))


def test_lemma1_initialisation():
    X, y, graph = problem(n=40, l=12, seed=2, balanced=True)
    assert (y == 1).sum() == (y == 0).sum()
    rho = 0.1
    path = lapsvm_path(X, y, graph, rho=rho)
    assert path.init == "lemma1"
    np.testing.assert_array_equal(path.alphas[0], 1.0)
    _, _, _, Q, _ = dense_reference(X, y, graph, rho, 1.0)
    q = Q @ np.ones(Q.shape[0])
    t = path.y
    lam0 = 0.5 * (q[t > 0].max() + q[t < 0].max())           # eq. (16)
    b0 = (q[t < 0].max() - q[t > 0].max()) / (2 * lam0)      # eq. (17), b = α₀/λ
    assert abs(path.lambdas[0] - lam0) <= 1e-9 * lam0
    assert abs(path.intercepts[0] - b0) <= 1e-9
    # above λ⁰ every α stays 1 (a direct solve agrees) and the loss is l
    w, b = path.coef_at(3 * lam0)
    w_ref, b_ref, _, _, alpha_ref = dense_reference(X, y, graph, rho, 3 * lam0)
    np.testing.assert_allclose(alpha_ref, 1.0, atol=1e-8)
    np.testing.assert_allclose(w, w_ref, atol=1e-7)
    assert abs(b) <= 1  # Lemma 1: β₀ ∈ [−1, 1]


def test_lemma2_initialisation():
    X, y, graph = problem(n=40, l=15, seed=4)
    lp, lm = (y == 1).sum(), (y == 0).sum()
    assert lp != lm
    rho = 0.1
    path = lapsvm_path(X, y, graph, rho=rho)
    assert path.init == "lemma2"
    _, _, _, Q, _ = dense_reference(X, y, graph, rho, 1.0)
    t = path.y
    maj = t > 0 if lp > lm else t < 0
    a0 = path.alphas[0]
    np.testing.assert_array_equal(a0[~maj], 1.0)
    assert abs(a0[maj].sum() - (~maj).sum()) <= 1e-9
    # α⁰ minimises αᵀQα over that set (Lemma 2): compare with SLSQP from another start
    fixed = np.where(~maj, 1.0, 0.0)

    def obj(x):
        a = fixed.copy()
        a[maj] = x
        return a @ Q @ a, 2 * (Q @ a)[maj]

    cons = {"type": "eq", "fun": lambda x: x.sum() - (~maj).sum(),
            "jac": lambda x: np.ones_like(x)}
    ref = minimize(obj, np.full(maj.sum(), (~maj).sum() / maj.sum()), jac=True,
                   method="SLSQP", bounds=[(0, 1)] * maj.sum(), constraints=[cons],
                   options={"ftol": 1e-15, "maxiter": 1000})
    assert a0 @ Q @ a0 <= ref.fun + 1e-9 * abs(ref.fun)
    # the loss is l_minority far above λ⁰ and b → y_majority as λ → ∞
    _, b_far = path.coef_at(1e8 * path.lambdas[0])
    assert abs(b_far - (1.0 if lp > lm else -1.0)) <= 1e-6
    for lam in (1.5 * path.lambdas[0], path.lambdas[0]):
        w, b = path.coef_at(lam)
        w_ref, b_ref, _, _, _ = dense_reference(X, y, graph, rho, lam)
        np.testing.assert_allclose(w, w_ref, atol=1e-6 * (1 + np.abs(w_ref).max()))
        assert abs(b - b_ref) <= 1e-6


def test_degenerate_duplicates_and_ties():
    """Duplicated labeled rows (a singular elbow system) and opposite labels on identical
    rows (no margin can hold both) give a valid path, not a crash."""
    X, y, graph = problem(n=36, l=12, seed=9)
    Xd = X.toarray()
    lab = np.flatnonzero(y != -1)
    unl = np.flatnonzero(y == -1)
    # two unlabeled rows become copies of labeled ones: same label, and opposite label
    Xd[unl[0]] = Xd[lab[2]]
    Xd[unl[1]] = Xd[lab[3]]
    y = y.copy()
    y[unl[0]] = y[lab[2]]
    y[unl[1]] = 1 - y[lab[3]]
    rho = 0.05
    path = lapsvm_path(sp.csr_matrix(Xd), y, graph, rho=rho)
    assert path.status in ("ok", "degenerate")
    for lam in sample_lambdas(path):
        if lam < path.lambdas[-1]:
            continue
        w, b = path.coef_at(lam)
        primal = primal_lJ(Xd, y, graph, rho, lam, w, b)
        _, _, primal_ref, _, _ = dense_reference(Xd, y, graph, rho, lam)
        assert primal <= primal_ref + 1e-7 * (1 + primal_ref)


def test_ties_in_the_elbow_system():
    """Q with exact ties (identical rows) straight into follow_path."""
    Q = np.array([[2.0, 2.0, 0.5, 0.1], [2.0, 2.0, 0.5, 0.1], [0.5, 0.5, 1.0, 0.2],
                  [0.1, 0.1, 0.2, 1.5]])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    raw = follow_path(Q, y, free_bias=True)
    assert raw["status"] == "ok" and np.all(np.diff(raw["lambdas"]) < 0)
    assert np.all(np.abs(raw["alphas"] @ y) <= 1e-9)


def test_kernel_mode_matches_linear():
    """kernel='precomputed' with K = ΦΦᵀ is the linear path on Φ (β ↦ w = Φᵀβ)."""
    rng = np.random.default_rng(11)
    n, l = 30, 10
    X, y, graph = problem(n=n, d=5, l=l, seed=11, normalized=True)
    Phi = np.abs(rng.normal(size=(n, 40)))
    K = Phi @ Phi.T
    pk = lapsvm_path(K, y, graph, rho=0.3, kernel="precomputed")
    pl = lapsvm_path(Phi, y, graph, rho=0.3, method="cg", tol=1e-13)
    np.testing.assert_allclose(pk.lambdas, pl.lambdas, rtol=1e-7)
    for lam in sample_lambdas(pl):
        beta, bk = pk.coef_at(lam)
        w, bl = pl.coef_at(lam)
        np.testing.assert_allclose(Phi.T @ beta, w, atol=1e-6 * (1 + np.abs(w).max()))
        assert abs(bk - bl) <= 1e-6 * (1 + abs(bl))


def test_knngraph_and_labels():
    _, y, _ = problem(n=40, seed=12)
    X = sp.csr_matrix(np.abs(np.random.default_rng(12).normal(size=(40, 6))))
    names = np.array(["neg", "pos"], dtype=object)[np.maximum(y, 0)]
    names[y == -1] = ""
    g = KNNGraph(n_neighbors=5).fit(X)
    path = lapsvm_path(X, names, g, rho=0.1, unlabeled="")
    assert list(path.classes) == ["neg", "pos"]
    assert path.n_labeled == (y != -1).sum()


def test_bad_input():
    X, y, graph = problem(n=30, seed=13)
    with pytest.raises(ValueError, match="rho"):
        lapsvm_path(X, y, graph, rho=0.0)
    with pytest.raises(ValueError, match="rho"):
        lapsvm_path(X, y, graph, rho=np.nan)
    y1 = np.where(y == 0, -1, y)
    with pytest.raises(ValueError, match="two classes"):  # the estimators' label check
        lapsvm_path(X, y1, graph, rho=0.1)
    y3 = np.where(np.arange(y.size) % 7 == 0, 2, y)
    with pytest.raises(ValueError, match="2 classes"):
        lapsvm_path(X, y3, graph, rho=0.1)
    with pytest.raises(ValueError, match="square"):
        lapsvm_path(X, y, graph, rho=0.1, kernel="precomputed")
    with pytest.raises(ValueError, match="method"):
        lapsvm_path(X, y, graph, rho=0.1, method="dense")
    with pytest.raises(ValueError, match="memory_budget"):
        lapsvm_path(X, y, graph, rho=0.1, method="gram", memory_budget=100)
    path = lapsvm_path(X, y, graph, rho=0.1, lambda_min=1.0)
    if not path.complete:
        with pytest.raises(ValueError, match="below the end"):
            path.coef_at(0.5 * path.lambdas[-1])
    with pytest.raises(ValueError, match="lambda"):
        path.coef_at(0.0)


@pytest.mark.parametrize("shape", [dict(n=40, seed=14), dict(n=30, d=45, seed=16)])
def test_reduction_cg_equals_gram(shape):
    # d ≤ n: 'gram' is the d × d Cholesky of A; d > n: the n × n push-through LU
    X, y, graph = problem(normalized=True, **shape)
    lab = np.flatnonzero(y != -1)
    r1 = path_reduction(X, lab, graph.laplacian_matvec, graph.scale_, rho=0.01,
                        method="gram")
    r2 = path_reduction(X, lab, graph.laplacian_matvec, graph.scale_, rho=0.01,
                        method="cg", tol=1e-13)
    np.testing.assert_allclose(r1.G, r2.G, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(r1.V, r2.V, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(r1.u, r2.u, rtol=1e-7, atol=1e-9)
    assert r1.q == pytest.approx(r2.q, rel=1e-8)
    assert r2.n_iter > 0


def test_public_path_validates_X_labels_and_graph():
    X, y, graph = problem(n=30, seed=15)
    Xn = X.toarray() if hasattr(X, "toarray") else X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        lapsvm_path(Xn, y, graph, rho=0.1)
    with pytest.raises(ValueError, match="extreme"):
        lapsvm_path(X * 1e40, y, graph, rho=0.1)
    names = np.where(y == -1, "", np.where(y == 1, "b", "a"))
    with pytest.raises(ValueError, match="string labels"):  # '' would become a class
        lapsvm_path(X, names, graph, rho=0.1)
    with pytest.raises(ValueError, match="fitted KNNGraph"):
        lapsvm_path(X, y, KNNGraph(n_neighbors=5), rho=0.1)
    with pytest.raises(ValueError, match="built on 30 rows"):
        lapsvm_path(X[:20], y[:20], KNNGraph(n_neighbors=5).fit(X), rho=0.1)
    with pytest.raises(ValueError):
        lapsvm_path(X, y[:20], graph, rho=0.1)


def test_free_bias_paths_run_to_the_end():
    # balanced labels, unnormalised Laplacian (free bias): an elbow holding one row of each
    # class empties at once; the zero-width α₀ interval that leaves used to "close" at the
    # same λ again and again until the cycle guard stopped the path ('degenerate')
    for seed in range(10):
        rng = np.random.default_rng(seed)
        cls = rng.integers(0, 2, 150)
        X = rng.normal(size=(2, 12))[cls] * 1.5 + rng.normal(size=(150, 12))
        X[rng.random(X.shape) < 0.3] = 0.0
        y = np.full(150, -1)
        lab = np.r_[np.flatnonzero(cls == 0)[:12], np.flatnonzero(cls == 1)[:12]]
        y[lab] = cls[lab]
        g = KNNGraph(n_neighbors=6, normalized=False, power=1).fit(X)
        p = lapsvm_path(X, y, g, rho=1e-2, lambda_min_ratio=1e-3)
        assert p.status == "ok", (seed, p.status, p.lambdas[-1])
        assert p.complete or p.lambdas[-1] <= 1.001e-3 * p.lambdas[0]


# -- accuracy of the reduction on badly scaled X, and the constant path ------------------
def hinge_J(Xd, Lp, s, lab, t, w, b, gA, gI):
    f = Xd @ w + b
    return np.maximum(0, 1 - t * f[lab]).mean() + gA * w @ w + gI * s * f @ Lp @ f


def scaled_problem(seed, n=40, d=6):
    """The reviewer's problem: nonnegative X with an offset column, 8 labeled rows."""
    rng = np.random.default_rng(seed)
    X = np.abs(rng.standard_normal((n, d))) * (rng.random((n, d)) < 0.6)
    X[:, 0] += 0.1
    y = np.full(n, -1)
    lab = rng.choice(n, 8, replace=False)
    y[lab] = rng.integers(0, 2, 8)
    y[lab[:2]] = [0, 1]
    return X, y


@pytest.mark.parametrize("c", [1e4, 1e5])
@pytest.mark.parametrize("sparse", [False, True])
def test_gram_path_exact_on_scaled_X(c, sparse):
    # |X| ~ c with d < n: K = XXᵀ has rank d, so the n × n C = ρI + s L^pK of the push-through
    # had condition ~c²/ρ that A does not have, and its LU lost the path (objective 72 %
    # above the minimum at c = 1e4, 74× at c = 1e5, status 'ok'); the d × d Cholesky of A
    # keeps every point the minimiser
    rho = 1e-5
    for seed in (3, 8):
        X0, y = scaled_problem(seed)
        X = X0 * c
        Xin = sp.csr_matrix(X) if sparse else X
        g = KNNGraph(n_neighbors=7).fit(X)
        Lp, s = g.laplacian_matrix().toarray(), g.scale_
        lab = np.flatnonzero(y != -1)
        t = np.where(y[lab] == 1, 1.0, -1.0)
        path = lapsvm_path(Xin, y, g, rho=rho)    # 'auto' takes 'gram' here
        assert path.reduction.method == "gram" and path.status == "ok"
        for lam in np.geomspace(path.lambdas[0], 1e-3 * path.lambdas[0], 4):
            gI, gA = lam / (2 * lab.size), rho * lam / (2 * lab.size)
            w, b = path.coef_at(lam)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                ref = LapSVMClassifier(gA, gI, graph=g, solver="tinv", loss="hinge",
                                       tol=1e-10).fit(Xin, y)
            J_path = hinge_J(X, Lp, s, lab, t, w, b, gA, gI)
            J_ref = hinge_J(X, Lp, s, lab, t, ref.coef_[0], ref.intercept_[0], gA, gI)
            # no lower than the minimum J: at most the reference's (liblinear stops ~1e-5
            # above it at these scales)
            assert J_path <= J_ref * (1 + 1e-7), (seed, lam, J_path, J_ref)


def test_gram_reduction_of_wide_X_with_unequal_column_scales():
    # d > n, columns of scales 1e-6…1e6: the LU of the n × n C lost V = A^{-1}X_lᵀ (backward
    # error 1e-9, G asymmetric to 1e-2); the asymmetry sends the reduction to the d × d
    # Cholesky, backward stable
    rng = np.random.default_rng(0)
    n, d, rho = 30, 60, 1e-5
    X = np.abs(rng.standard_normal((n, d))) * (rng.random((n, d)) < 0.6)
    X[:, 0] += 0.1
    X *= 10.0 ** rng.uniform(-6, 6, d)
    g = KNNGraph(n_neighbors=7).fit(X)
    lab = rng.choice(n, 8, replace=False)
    red = path_reduction(X, lab, g.laplacian_matvec, g.scale_, rho=rho, method="gram")
    A = g.scale_ * X.T @ g.laplacian_matrix().toarray() @ X + rho * np.eye(d)
    R = A @ red.V - X[lab].T
    backward = np.linalg.norm(R) / (np.linalg.norm(A) * np.linalg.norm(red.V)
                                    + np.linalg.norm(X[lab]))
    assert backward < 1e-13
    # with A over the budget the n × n result stays, with a warning
    with pytest.warns(RuntimeWarning, match="lost accuracy"):
        path_reduction(X, lab, g.laplacian_matvec, g.scale_, rho=rho, method="gram",
                       memory_budget=3 * 8 * n * n)


def test_round_off_start_is_no_breakpoint():
    # Q1 = YGy vanishes when one document is labeled with both classes: α = 1 and w = 0,
    # b = 0 at every λ. A round-off max of Q1 (1e-14) was taken for the first breakpoint and
    # followed into the round-off of G
    rng = np.random.default_rng(0)
    Xl = rng.random((2, 5))
    Xl[1] = Xl[0]
    G = Xl @ np.linalg.inv(0.1 * np.eye(5) + np.diag(rng.random(5))) @ Xl.T
    G += 1e-15 * np.abs(G).max() * np.array([[1.0, -0.3], [-0.3, -0.7]])   # round-off
    t = np.array([-1.0, 1.0])
    raw = follow_path(np.outer(t, t) * G, t, free_bias=False)
    assert raw["lambdas"].tolist() == [1.0] and raw["complete"] and raw["status"] == "ok"
    assert raw["zero_model"]
    # a near-duplicate (1e-6 apart) is a real breakpoint, however small
    Xl[1] = Xl[0] * (1 + 1e-6 * rng.standard_normal(5))
    G = Xl @ np.linalg.inv(0.1 * np.eye(5) + np.diag(rng.random(5))) @ Xl.T
    raw = follow_path(np.outer(t, t) * G, t, free_bias=False)
    assert not raw["zero_model"]
    assert raw["lambdas"][0] == pytest.approx((np.outer(t, t) * G).sum(axis=1).max())


@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("method", ["gram", "cg"])
def test_conflicting_labels_give_the_zero_model(normalized, method):
    # a document labeled with both classes (d > n: the n × n reduction leaves Q1 ~ 1e-8):
    # J = 1 at w = 0 is the minimum at every λ; the old path broke at λ⁰ = 5e-9 and gave
    # |w| = 3e5 at its end
    rng = np.random.default_rng(0)
    X = np.abs(rng.standard_normal((30, 44))) + 0.1
    X[1] = X[0]
    y = np.full(30, -1)
    y[0], y[1] = 0, 1
    g = KNNGraph(n_neighbors=5, normalized=normalized).fit(X)
    path = lapsvm_path(X, y, g, rho=1e-2, fit_intercept=False, method=method)
    for lam in (1e-12, 1e-6, 1.0, 1e3):
        w, b = path.coef_at(lam)
        assert not np.any(w) and b == 0.0
    assert not np.any(path.decision_labeled([1e-9, 1.0]))
    assert path.zero_model and path.status == "ok" and path.lambdas.tolist() == [1.0]


def test_gram_reduction_warns_when_A_is_numerically_indefinite():
    # a constant feature of 1e8 with D − W (L1 = 0) and ρ = 1e-10: A_00 = ρ drowns in the
    # round-off of s c² 1ᵀL1, Cholesky fails; its eigenvalues are clipped at ρ, with a warning
    rng = np.random.default_rng(0)
    X = np.abs(rng.standard_normal((40, 5))) + 0.1
    X[:, 0] = 1e8
    g = KNNGraph(n_neighbors=5, normalized=False).fit(X)
    with pytest.warns(RuntimeWarning, match="not numerically positive definite"):
        red = path_reduction(X, np.arange(4), g.laplacian_matvec, g.scale_, rho=1e-10,
                             method="gram", fit_intercept=False)
    ev = np.linalg.eigvalsh(red.G)
    assert np.all(np.isfinite(red.G)) and ev.min() >= -1e-12 * ev.max()   # PSD


def test_path_classifier_reports_its_reduction_and_checks_memory(monkeypatch, capsys):
    import linlap._memory as memory
    from linlap import KNNGraph
    from linlap.estimators import LapSVMPathClassifier

    rng = np.random.RandomState(4)
    X = rng.rand(80, 6)
    y = np.where(X[:, 0] > 0.5, 1, 0)
    y[30:] = -1
    g = KNNGraph(n_neighbors=6).fit(X)
    LapSVMPathClassifier(graph=g, cv=2, verbose=1).fit(X, y)
    err = capsys.readouterr().err
    assert "reducing the path to the 30 labeled rows" in err and "done in" in err
    monkeypatch.setattr(memory, "available_bytes", lambda: 1000)
    with pytest.raises(MemoryError, match="path reduction on 80 rows x 6 features with 30"):
        LapSVMPathClassifier(graph=g, cv=2).fit(X, y)


# -- review fixes: lambda_min at or above λ⁰, parameter checks, precomputed K ---------------

def test_lambda_min_above_the_first_breakpoint_gives_no_complete_path():
    """A path stopped at or above its first breakpoint λ⁰ knows nothing below it: it is not
    complete, and coef_at below its end raises instead of returning the λ = ∞ solution."""
    X, y, graph = problem(n=30, seed=13, normalized=True)
    full = lapsvm_path(X, y, graph, rho=0.1)
    assert full.lambdas.size > 3
    lam0, lam = full.lambdas[0], full.lambdas[2]
    for lam_min in (lam0, 2 * lam0, 1e300):
        p = lapsvm_path(X, y, graph, rho=0.1, lambda_min=lam_min)
        assert p.lambdas.size == 1 and not p.complete
        with pytest.raises(ValueError, match="below the end"):
            p.coef_at(lam)
        above = min(2 * lam_min, 1e301)   # above the end: exact, as before
        w, b = p.coef_at(above)
        w0, b0 = full.coef_at(above)
        np.testing.assert_allclose(w, w0, rtol=1e-12, atol=1e-300)
        assert b == pytest.approx(b0, rel=1e-12, abs=1e-300)
    # follow_path itself, without a free bias (the all-ones start)
    lab = np.flatnonzero(y != -1)
    red = path_reduction(X, lab, graph.laplacian_matvec, graph.scale_, rho=0.1,
                         fit_intercept=False)
    t = np.where(y[lab] == 1, 1.0, -1.0)
    Q = red.G * np.outer(t, t)
    lam0 = (Q @ np.ones(t.size)).max()
    assert not follow_path(Q, t, free_bias=False, lambda_min=2 * lam0)["complete"]
    assert follow_path(Q, t, free_bias=False, lambda_min=0.5 * lam0)["lambdas"].size > 1


@pytest.mark.parametrize("kw, name", [
    (dict(lambda_min=np.nan), "lambda_min"), (dict(lambda_min=np.inf), "lambda_min"),
    (dict(lambda_min="abc"), "lambda_min"), (dict(lambda_min=0.0), "lambda_min"),
    (dict(lambda_min_ratio=3.0), "lambda_min_ratio"),
    (dict(lambda_min_ratio=np.nan), "lambda_min_ratio"),
    (dict(lambda_min_ratio=None), "lambda_min_ratio"),
    (dict(max_steps=0), "max_steps"), (dict(max_steps=-1), "max_steps"),
    (dict(max_steps=2.5), "max_steps"),
    (dict(method="cg", max_iter=0), "max_iter"), (dict(method="cg", max_iter=-5), "max_iter"),
    (dict(method="cg", tol=-1.0, max_iter=0), "tol"), (dict(method="cg", tol="abc"), "tol"),
    (dict(memory_budget=np.nan), "memory_budget"), (dict(memory_budget=None), "memory_budget"),
    (dict(fit_intercept="no"), "fit_intercept"),
    (dict(rho=True), "rho"), (dict(rho="abc"), "rho"), (dict(rho=10**400), "rho"),
    (dict(kernel="rbf"), "kernel"), (dict(method="dense"), "method"),
])
def test_path_function_validates_its_parameters(kw, name):
    X, y, graph = problem(n=30, seed=13)
    kw = {"rho": 0.1, **kw}
    with pytest.raises(ValueError, match=rf"^{name} must"):
        lapsvm_path(X, y, graph, **kw)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # huge rho
def test_path_function_takes_integers_beyond_int64():
    X, y, graph = problem(n=30, seed=13)
    p = lapsvm_path(X, y, graph, rho=10**19)  # beyond int64
    q = lapsvm_path(X, y, graph, rho=1e19)
    np.testing.assert_array_equal(p.lambdas, q.lambdas)


@pytest.mark.parametrize("kw, name", [
    (dict(rho=True), "rho"), (dict(rho="abc"), "rho"), (dict(n_gammas=10**30), "n_gammas"),
    (dict(n_gammas=True), "n_gammas"), (dict(n_gammas=1), "n_gammas"),
    (dict(lambda_min_ratio=np.nan), "lambda_min_ratio"), (dict(memory_budget=None),
                                                          "memory_budget"),
])
def test_path_classifier_validates_its_parameters(kw, name):
    from linlap import LapSVMPathClassifier

    X, y, _ = problem(n=30, seed=13)
    with pytest.raises(ValueError, match=rf"^{name} must"):
        LapSVMPathClassifier(cv=2, **kw).fit(X, y)


def test_precomputed_kernel_must_be_symmetric_with_a_nonnegative_diagonal():
    rng = np.random.default_rng(11)
    n = 30
    _, y, graph = problem(n=n, d=5, l=10, seed=11, normalized=True)
    Phi = np.abs(rng.normal(size=(n, 40)))
    K = Phi @ Phi.T
    with pytest.raises(ValueError, match="nonnegative diagonal"):
        lapsvm_path(-K, y, graph, rho=0.3, kernel="precomputed")
    Ka = K.copy()
    Ka[0, 1] += 1.0
    with pytest.raises(ValueError, match="symmetric"):
        lapsvm_path(Ka, y, graph, rho=0.3, kernel="precomputed")
    with pytest.raises(ValueError, match="symmetric"):
        lapsvm_path(sp.csr_matrix(Ka), y, graph, rho=0.3, kernel="precomputed")
    # round-off asymmetry (a K computed in float32) is accepted, and changes nothing
    Kr = K * (1 + 1e-9 * rng.standard_normal(K.shape))
    assert lapsvm_path(Kr, y, graph, rho=0.3, kernel="precomputed").lambdas.size > 1


def test_path_refuses_labeled_rows_that_are_all_empty():
    X, y, graph = problem(n=30, seed=13)
    X = sp.lil_matrix(X)
    X[np.flatnonzero(y != -1), :] = 0
    with pytest.raises(ValueError, match="every labeled row is empty"):
        lapsvm_path(sp.csr_matrix(X), y, graph, rho=0.1)


def test_all_elbow_last_segment_reaching_zero_is_complete():
    # every labeled row stays in the elbow with α ∝ λ: the last event lands at λ = 0 only
    # up to round-off; the path is still complete, and coef_at below its last λ works
    rng = np.random.default_rng(1)
    n, d, l = 30, 50, 10
    X = rng.random((n, d)) * (rng.random((n, d)) < 0.6)
    X[X.sum(1) == 0, 0] = 1.0
    lab = rng.integers(0, 2, n)
    X[:, :2] += 0.8 * np.eye(2)[lab]
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.full(n, -1)
    y[rng.permutation(n)[:l]] = lab[rng.permutation(n)[:l]]
    y[np.flatnonzero(y == -1)[:2]] = [0, 1]
    g = KNNGraph(n_neighbors=5, power=1, weight="cosine").fit(X)
    P = lapsvm_path(X, y, g, rho=1e-2, fit_intercept=False, method="gram")
    assert P.elbows[-1].size == P.y.size  # the case this draw was chosen for
    assert P.complete
    w, b = P.coef_at(P.lambdas[-1] / 2)
    assert np.all(np.isfinite(w)) and b == 0
