"""The linear LapSVM solvers (finite Newton, T⁻¹) against generic scipy solves of J.

J(w, b) = (1/l) Σ_labeled max(0, 1 − y f)² + γ_A ‖w‖² + γ_I s fᵀ L^p f, f = Xw + b.
"""

import importlib
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

from linlap.solvers import (lapsvm_newton, lapsvm_objective, lapsvm_tinv,
                            squared_hinge_line_search, tinv_factor)
from linlap.solvers.lapsvm_newton import regulariser_line

from reference import random_design, random_laplacian

GA, GI = 1e-3, 0.1  # small enough that many labeled rows end past the margin


def random_problem(n=40, d=10, l=14, k=1, seed=0, sparse=True, normalized=False):
    rng = np.random.default_rng(seed)
    X = random_design(n, d, rng, sparse=sparse)
    L = random_laplacian(n, rng, normalized=normalized)
    labeled = rng.choice(n, l, replace=False)
    # labels from a planted linear model plus noise: at the optimum some labeled rows
    # are past the margin and some are not (random labels would leave all active)
    Xl = dense(X)[labeled]
    T = np.sign(Xl @ rng.normal(scale=3.0, size=(d, k)) + rng.normal(scale=0.5, size=(l, k)))
    T[T == 0] = 1.0
    T[0], T[1] = 1.0, -1.0  # both classes in every column
    return X, L, labeled, T


def dense(X):
    return X.toarray() if sp.issparse(X) else X


# -- references: generic scipy solves of J, then an exact active-set polish ------------
def _augment(Xd, fit_intercept):
    return np.hstack([Xd, np.ones((Xd.shape[0], 1))]) if fit_intercept else Xd


def ref_J_grad(z, Xt, Lp, labeled, y, gA, gI, s, d):
    f = Xt @ z
    xi = np.maximum(0, 1 - y * f[labeled])
    w = z[:d]
    Lf = Lp @ f
    J = np.mean(xi ** 2) + gA * w @ w + gI * s * f @ Lf
    g = Xt[labeled].T @ (-2 / len(labeled) * y * xi) + 2 * gI * s * Xt.T @ Lf
    g[:d] += 2 * gA * w
    return J, g


def reference(Xd, Lp, labeled, y, gA, gI, s, fit_intercept=True, c=None, r=None):
    """Minimiser of J (optionally with cᵀz = r) by L-BFGS-B / SLSQP, then polished.

    J is piecewise quadratic: with the active set the generic solver found, the
    minimiser solves a dense (KKT) linear system; keep it when it is consistent.
    """
    n, d = Xd.shape
    Xt = _augment(Xd, fit_intercept)
    fun = lambda z: ref_J_grad(z, Xt, Lp, labeled, y, gA, gI, s, d)  # noqa: E731
    z0 = np.zeros(Xt.shape[1])
    if c is None:
        z = minimize(fun, z0, jac=True, method="L-BFGS-B",
                     options=dict(maxiter=20000, maxfun=40000, ftol=1e-15, gtol=1e-12)).x
    else:
        cons = {"type": "eq", "fun": lambda z: c @ z - r, "jac": lambda z: c}
        z = minimize(fun, z0, jac=True, method="SLSQP", constraints=[cons],
                     options=dict(maxiter=2000, ftol=1e-14)).x
    l = len(labeled)
    I = y * (Xt[labeled] @ z) < 1
    H = Xt[labeled][I].T @ Xt[labeled][I] / l + gI * s * Xt.T @ Lp @ Xt
    H[np.arange(d), np.arange(d)] += gA
    g = Xt[labeled][I].T @ y[I] / l
    if c is None:
        zp = np.linalg.solve(H, g)
    else:
        K = np.block([[2 * H, c[:, None]], [c[None, :], np.zeros((1, 1))]])
        zp = np.linalg.solve(K, np.r_[2 * g, r])[:-1]
    yo = y * (Xt[labeled] @ zp)
    assert np.all(yo[I] <= 1 + 1e-9) and np.all(yo[~I] >= 1 - 1e-9), "polish inconsistent"
    return zp


def check_against(sol, Xd, Lp, labeled, T, s, fit_intercept, gA=GA, gI=GI, c=None, r=None):
    d = Xd.shape[1]
    for j in range(T.shape[1]):
        z = reference(Xd, Lp, labeled, T[:, j], gA, gI, s, fit_intercept, c,
                      None if r is None else r[j])
        J_ref = ref_J_grad(z, _augment(Xd, fit_intercept), Lp, labeled, T[:, j], gA, gI, s,
                           d)[0]
        J_sol = lapsvm_objective(Xd, T[:, j], labeled, lambda F: Lp @ F, sol.coef[j],
                                 sol.intercept[j], gamma_A=gA, gamma_I=gI, scale=s)[0]
        assert abs(J_sol - J_ref) <= 1e-6 * J_ref
        np.testing.assert_allclose(sol.coef[j], z[:d], rtol=1e-4, atol=1e-6)
        b_ref = z[d] if fit_intercept else 0.0
        np.testing.assert_allclose(sol.intercept[j], b_ref, rtol=1e-4, atol=1e-6)


# -- finite Newton and T⁻¹ against the reference and each other -----------------------
@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("normalized", [False, True])
def test_newton_and_tinv_match_reference(sparse, k, fit_intercept, normalized):
    X, L, labeled, T = random_problem(k=k, sparse=sparse, normalized=normalized, seed=k)
    Xd = dense(X)
    s = 1.0 / np.trace(L)
    lap = lambda F: L @ F  # noqa: E731
    kw = dict(gamma_A=GA, gamma_I=GI, scale=s, fit_intercept=fit_intercept)
    newton = lapsvm_newton(X, T, labeled, lap, tol=1e-10, **kw)
    tinv = lapsvm_tinv(X, T, labeled, lap, **kw)
    assert newton.converged and tinv.converged
    assert newton.coef.shape == tinv.coef.shape == (k, X.shape[1])
    check_against(newton, Xd, L, labeled, T, s, fit_intercept)
    check_against(tinv, Xd, L, labeled, T, s, fit_intercept)
    # the two solvers reach the same minimiser (far tighter than the reference's bound)
    np.testing.assert_allclose(newton.coef, tinv.coef, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(newton.intercept, tinv.intercept, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(newton.decision, Xd @ newton.coef.T + newton.intercept,
                               atol=1e-10)
    np.testing.assert_allclose(tinv.decision, Xd @ tinv.coef.T + tinv.intercept, atol=1e-10)
    if not fit_intercept:
        assert np.all(newton.intercept == 0) and np.all(tinv.intercept == 0)
    # the normalised Laplacian (L 1 ≠ 0) penalises the bias through the graph term
    assert tinv.state["factor"].bias_free == (not (normalized and fit_intercept))


@pytest.mark.parametrize("power", [2])
def test_laplacian_power(power):
    X, L, labeled, T = random_problem(k=2, seed=4, normalized=True)
    Lp = np.linalg.matrix_power(L, power)
    s = 1.0 / np.trace(L)
    newton = lapsvm_newton(X, T, labeled, lambda F: Lp @ F, gamma_A=GA, gamma_I=GI, scale=s,
                           tol=1e-10)
    tinv = lapsvm_tinv(X, T, labeled, lambda F: Lp @ F, gamma_A=GA, gamma_I=GI, scale=s)
    check_against(newton, dense(X), Lp, labeled, T, s, True)
    np.testing.assert_allclose(newton.coef, tinv.coef, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("normalized", [False, True])
def test_gradient_vanishes(normalized):
    """J is C¹: its gradient is zero at the minimiser, for both solvers."""
    X, L, labeled, T = random_problem(n=60, d=15, l=20, k=2, seed=7, normalized=normalized)
    Xd = dense(X)
    s = 1.0 / np.trace(L)
    Xt = _augment(Xd, True)
    kw = dict(gamma_A=GA, gamma_I=GI, scale=s)
    for sol in (lapsvm_newton(X, T, labeled, lambda F: L @ F, tol=1e-10, **kw),
                lapsvm_tinv(X, T, labeled, lambda F: L @ F, **kw)):
        for j in range(2):
            z = np.r_[sol.coef[j], sol.intercept[j]]
            _, g = ref_J_grad(z, Xt, L, labeled, T[:, j], GA, GI, s, Xd.shape[1])
            _, g0 = ref_J_grad(0 * z, Xt, L, labeled, T[:, j], GA, GI, s, Xd.shape[1])
            assert np.linalg.norm(g) < 1e-8 * np.linalg.norm(g0)
        assert sol.residual < 1e-8


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("balance", [False, True])
def test_without_gradient_check_the_same_solution(sparse, balance):
    """gradient_check=False skips only the final check: same coef, intercept and (updated,
    not recomputed) decision values; no residual."""
    X, L, labeled, T = random_problem(n=60, d=15, l=20, k=2, seed=8, sparse=sparse)
    unl = np.setdiff1d(np.arange(X.shape[0]), labeled)
    kw = dict(gamma_A=GA, gamma_I=GI, scale=1.0 / np.trace(L), tol=1e-8,
              row_weights=np.linspace(0.5, 1.5, labeled.size) / labeled.size)
    if balance:
        kw.update(balance=np.array([-0.2, 0.1]), unlabeled_rows=unl)
    a = lapsvm_newton(X, T, labeled, lambda F: L @ F, **kw)
    b = lapsvm_newton(X, T, labeled, lambda F: L @ F, gradient_check=False, **kw)
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.intercept, b.intercept)
    np.testing.assert_allclose(b.decision, dense(X) @ b.coef.T + b.intercept, rtol=1e-9,
                               atol=1e-11)
    assert a.residual < 1e-6 and np.isnan(b.residual)
    assert a.n_iter == b.n_iter and a.history == b.history


@pytest.mark.parametrize("sparse", [True, False])
def test_kept_decision_and_graph_values_match_recomputed_objective(sparse):
    """f and L^p f, kept through the Newton steps from the CG's own products, give the
    objective of the returned coefficients computed from scratch."""
    X, L, labeled, T = random_problem(n=60, d=15, l=20, k=2, seed=9, sparse=sparse)
    kw = dict(gamma_A=GA, gamma_I=GI, scale=1.0 / np.trace(L))
    sol = lapsvm_newton(X, T, labeled, lambda F: L @ F, tol=1e-8, gradient_check=False, **kw)
    assert sol.n_iter > 1
    J = lapsvm_objective(X, T, labeled, lambda F: L @ F, sol.coef, sol.intercept, **kw)
    np.testing.assert_allclose(sol.state["objective"], J, rtol=1e-10)
    np.testing.assert_allclose(sol.decision, dense(X) @ sol.coef.T + sol.intercept,
                               rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("gamma_I", [GI, 0.0])
def test_init_decision_starts_without_passes_and_changes_nothing(gamma_I):
    """A loose solve's f and L^p f (state['laplacian_decision']) start the next solve:
    the same solution, without the first pass forward and graph pass."""
    X, L, labeled, T = random_problem(n=60, d=15, l=20, k=2, seed=10, sparse=True)
    calls = []

    def lap(F):
        calls.append(1)
        return L @ F

    kw = dict(gamma_A=GA, gamma_I=gamma_I, scale=1.0 / np.trace(L))
    first = lapsvm_newton(X, T, labeled, lap, tol=1e-2, gradient_check=False, **kw)
    assert "laplacian_decision" in first.state
    weights = np.linspace(0.5, 1.5, labeled.size) / labeled.size  # another problem
    n0 = len(calls)
    a = lapsvm_newton(X, T, labeled, lap, tol=1e-8, init=first, row_weights=weights, **kw)
    n1 = len(calls)
    b = lapsvm_newton(X, T, labeled, lap, tol=1e-8, init=first, row_weights=weights,
                      init_decision=(first.decision, first.state["laplacian_decision"]), **kw)
    if gamma_I:
        assert len(calls) - n1 == (n1 - n0) - 1  # no L^p f at the start
    else:
        assert len(calls) == n0 == 0
    # (equal to the solves' tolerance: the kept f differs from X̃ z by round-off)
    np.testing.assert_allclose(b.coef, a.coef, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(b.intercept, a.intercept, rtol=1e-7, atol=1e-9)


def count_passes(monkeypatch, X):
    """Count the numba passes over the CSR X: forward (``X̃ z``) and backward (``X̃ᵀ U``)."""
    csr = importlib.import_module("linlap._numba.csr")
    counts = {"X": 0, "XT": 0}

    def wrap(name, key):
        kernel = getattr(csr, name)

        def counted(indptr, *args, **kwargs):
            counts[key] += indptr is X.indptr
            return kernel(indptr, *args, **kwargs)

        monkeypatch.setattr(csr, name, counted)

    wrap("csr_matmat", "X")
    wrap("csr_rmatmat_blocks", "XT")
    return counts


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("check,keep", [(True, False), (True, True), (False, False)])
def test_passes_per_solve(k, normalized, check, keep, monkeypatch):
    """Graph products and passes over X of a cold solve: one per CG iteration (the CG's
    own products, whose images update f and L^p f) plus one of each for the final
    gradient check — none for the start at w = b = 0 (f = 0, L^p f = 0). The check
    recomputes f and L^p f (independent of the updated ones) and keeps L^p f when asked."""
    X, L, labeled, T = random_problem(n=60, d=15, l=20, k=k, seed=3, normalized=normalized)
    calls = []

    def lap(F):
        calls.append(1)
        return L @ F

    counts = count_passes(monkeypatch, X)
    sol = lapsvm_newton(X, T, labeled, lap, gamma_A=GA, gamma_I=GI, scale=1.0 / np.trace(L),
                        tol=1e-8, gradient_check=check, keep_laplacian_decision=keep)
    cg = sol.state["cg_iter"]
    assert sol.converged and cg > sol.n_iter > 1
    assert len(calls) == counts["X"] == cg + check  # before: cg + 1 + check
    # Xᵀ: the CG's products, at most one first residual per Newton step, the check's one
    assert cg <= counts["XT"] <= cg + sol.n_iter + check
    np.testing.assert_allclose(sol.decision, dense(X) @ sol.coef.T + sol.intercept,
                               rtol=1e-9, atol=1e-11)
    assert ("laplacian_decision" in sol.state) == (keep or not check)
    if keep:  # L^p of the recomputed decision values
        np.testing.assert_allclose(sol.state["laplacian_decision"], L @ sol.decision,
                                   rtol=1e-12, atol=1e-14)
    if check:
        assert sol.residual < 1e-6


@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_start_on_the_balance_constraint(normalized, fit_intercept, monkeypatch):
    """With ``balance`` the start w = 0 moves to b = r along the bias: f = b 1 needs no pass
    over X, but L^p f does need its graph pass (L^p 1 ≠ 0 for the normalised Laplacian);
    without an intercept the start moves along c (w ≠ 0): one pass of each. The kept f and
    L^p f give the objective of the returned point recomputed from scratch."""
    newton = importlib.import_module("linlap.solvers.lapsvm_newton")
    X, L, labeled, T = random_problem(n=60, d=15, l=20, k=2, seed=4, normalized=normalized)
    unl = np.setdiff1d(np.arange(X.shape[0]), labeled)
    calls, at_first_cg = [], []

    def lap(F):
        calls.append(1)
        return L @ F

    counts = count_passes(monkeypatch, X)
    solve = newton._solve_columns

    def first_cg(*args, **kwargs):
        if not at_first_cg:
            at_first_cg.append((len(calls), counts["X"]))
        return solve(*args, **kwargs)

    monkeypatch.setattr(newton, "_solve_columns", first_cg)
    kw = dict(gamma_A=GA, gamma_I=GI, scale=1.0 / np.trace(L), fit_intercept=fit_intercept,
              balance=np.array([-0.3, 0.2]), unlabeled_rows=unl)
    sol = lapsvm_newton(X, T, labeled, lap, tol=1e-8, gradient_check=False, **kw)
    assert at_first_cg[0] == ((1, 0) if fit_intercept else (1, 1))
    J = lapsvm_objective(X, T, labeled, lambda F: L @ F, sol.coef, sol.intercept,
                         **{key: kw[key] for key in ("gamma_A", "gamma_I", "scale")})
    np.testing.assert_allclose(sol.state["objective"], J, rtol=1e-10)
    np.testing.assert_allclose(sol.decision[unl].mean(axis=0), [-0.3, 0.2], atol=1e-10)


@pytest.mark.parametrize("kind", ["csr64", "csr32", "csr64-int64", "dense", "coo"])
def test_unlabeled_mean_without_copying_rows(kind):
    """The balance constraint's gradient c = [mean of the unlabeled rows; 1], computed as
    Xᵀ v (v the indicator of U over u), equals the mean of the rows picked out."""
    from linlap.solvers._problem import unlabeled_mean

    rng = np.random.default_rng(5)
    X = random_design(300, 40, rng, sparse=True, density=0.2)
    rows = rng.permutation(300)[:170]  # unsorted, more than half the rows
    expected = X[rows].toarray().mean(axis=0)
    if kind == "csr32":
        X = X.astype(np.float32)
        expected = X[rows].toarray().astype(np.float64).mean(axis=0)
    elif kind == "csr64-int64":
        X.indices, X.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    elif kind == "dense":
        X = X.toarray()
    elif kind == "coo":
        X = X.tocoo()
    for few in (rows, rows[:20]):
        want = expected if few is rows else dense(X.tocsr() if kind == "coo" else X)[few]\
            .astype(np.float64).mean(axis=0)
        c = unlabeled_mean(X, few)
        assert c.shape == (41,) and c.dtype == np.float64 and c[-1] == 1.0
        np.testing.assert_allclose(c[:-1], want, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(unlabeled_mean(X, few, fit_intercept=False), c[:-1],
                                   rtol=1e-15, atol=0)
    for bad in ([0, 300], [-1, 2]):
        with pytest.raises(ValueError, match="unlabeled_rows"):
            unlabeled_mean(X, np.array(bad))


def test_gamma_I_zero_is_supervised_l2svm():
    """Without the graph term: the supervised (1/l) Σ max(0, 1−yf)² + γ_A‖w‖² on l rows."""
    X, L, labeled, T = random_problem(k=2, seed=9)
    Xl = dense(X)[labeled]
    newton = lapsvm_newton(X, T, labeled, None, gamma_A=0.05, gamma_I=0.0, scale=1.0,
                           tol=1e-10)
    tinv = lapsvm_tinv(X, T, labeled, None, gamma_A=0.05, gamma_I=0.0, scale=1.0)
    for j in range(2):
        z = reference(Xl, np.zeros((len(labeled),) * 2), np.arange(len(labeled)), T[:, j],
                      0.05, 0.0, 1.0)
        for sol in (newton, tinv):
            np.testing.assert_allclose(sol.coef[j], z[:-1], rtol=1e-6, atol=1e-8)
            np.testing.assert_allclose(sol.intercept[j], z[-1], rtol=1e-6, atol=1e-8)



# -- T⁻¹ with large feature values and a tiny γ_A ----------------------------------------
def large_feature_problem(seed, scale, crash=False):
    """l = 20 labeled rows of d = 3 features of magnitude ``scale`` (the reviewer's cases)."""
    rng = np.random.default_rng(seed)
    X = (np.abs(rng.standard_normal((40, 3))) + 0.1) * scale
    if crash:   # labels drawn as in the reviewer's crash search
        y = np.full(40, -1)
        lab = rng.choice(40, 20, replace=False)
        y[lab] = rng.integers(0, 2, 20)
        y[lab[:2]] = [0, 1]
        lab = np.flatnonzero(y != -1)
        return X, lab, np.where(y[lab] == 1, 1.0, -1.0)
    lab = rng.choice(40, 20, replace=False)
    t = np.sign(rng.standard_normal(20))
    t[0], t[1] = 1, -1
    return X, lab, t


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("case", [(3, 1e4, 1e-8, False, True), (22, 1e4, 1e-8, False, False),
                                  (24, 1e6, 1e-4, True, False), (30, 1e4, 1e-8, True, False)])
def test_tinv_squared_hinge_exact_on_large_features(case, sparse):
    # l > d and ‖x‖² ≫ l γ_A: the l × l Newton system X̂_I X̂_Iᵀ + l γ_A I (rank 3, condition
    # ~1e20) was singular in float64 — a LinAlgError (seed 3), or a model worse than w = 0
    # (J 2.38 against 0.974, seed 22) or w = 0 itself (seed 24) with a ConvergenceWarning.
    # QR of the stacked ridge least squares in the row space keeps the condition unsquared.
    seed, scale, gA, fit_intercept, crash = case
    X, lab, t = large_feature_problem(seed, scale, crash)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sol = lapsvm_tinv(sp.csr_matrix(X) if sparse else X, t, lab, None, gamma_A=gA,
                          gamma_I=0.0, scale=1.0, fit_intercept=fit_intercept)
    assert sol.converged and sol.residual < 1e-8
    check_against(sol, X, np.zeros((40, 40)), lab, t[:, None], 1.0, fit_intercept,
                  gA=gA, gI=0.0)
    newton = lapsvm_newton(X, t, lab, None, gamma_A=gA, gamma_I=0.0, scale=1.0,
                           fit_intercept=fit_intercept, tol=1e-10)
    J = [lapsvm_objective(X, t, lab, None, m.coef[0], m.intercept[0], gamma_A=gA,
                          gamma_I=0.0, scale=1.0)[0] for m in (sol, newton)]
    assert J[0] <= J[1] * (1 + 1e-12)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("normalized", [False, True])
def test_tinv_with_fewer_labeled_rows_than_features(fit_intercept, normalized):
    # l < d: the l-row problem is solved in the span of the rows (QR of X̂ᵀ)
    X, L, labeled, T = random_problem(n=40, d=30, l=8, k=2, seed=5, normalized=normalized)
    s = 1.0 / np.trace(L)
    sol = lapsvm_tinv(X, T, labeled, lambda F: L @ F, gamma_A=GA, gamma_I=GI, scale=s,
                      fit_intercept=fit_intercept, tol=1e-10)
    assert sol.converged
    check_against(sol, dense(X), L, labeled, T, s, fit_intercept)

# -- class-balance constraint -----------------------------------------------------------
@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_balance_constraint(sparse, k, fit_intercept):
    X, L, labeled, T = random_problem(k=k, sparse=sparse, seed=11 + k)
    Xd = dense(X)
    n = X.shape[0]
    unl = np.setdiff1d(np.arange(n), labeled)
    s = 1.0 / np.trace(L)
    r = np.linspace(-0.4, 0.3, k)
    sol = lapsvm_newton(X, T, labeled, lambda F: L @ F, gamma_A=GA, gamma_I=GI, scale=s,
                        balance=r, unlabeled_rows=unl, fit_intercept=fit_intercept, tol=1e-10)
    assert sol.converged and sol.residual < 1e-8
    # holds exactly: the mean decision value over the unlabeled rows is r
    np.testing.assert_allclose(sol.decision[unl].mean(axis=0), r, atol=1e-12)
    c = Xd[unl].mean(axis=0)
    if fit_intercept:
        c = np.r_[c, 1.0]
    check_against(sol, Xd, L, labeled, T, s, fit_intercept, c=c, r=r)


def test_balance_warm_start_and_init_feasibility():
    X, L, labeled, T = random_problem(k=2, seed=21)
    unl = np.setdiff1d(np.arange(X.shape[0]), labeled)
    s = 1.0 / np.trace(L)
    kw = dict(gamma_A=GA, scale=s, unlabeled_rows=unl, tol=1e-10)
    first = lapsvm_newton(X, T, labeled, lambda F: L @ F, gamma_I=GI, balance=[0.1, -0.2],
                          **kw)
    # a warm start from a solution with another r is made feasible first
    again = lapsvm_newton(X, T, labeled, lambda F: L @ F, gamma_I=1.1 * GI,
                          balance=[0.0, 0.1], init=first, **kw)
    cold = lapsvm_newton(X, T, labeled, lambda F: L @ F, gamma_I=1.1 * GI, balance=[0.0, 0.1],
                         **kw)
    np.testing.assert_allclose(again.decision[unl].mean(axis=0), [0.0, 0.1], atol=1e-12)
    np.testing.assert_allclose(again.coef, cold.coef, rtol=1e-7, atol=1e-9)


# -- the exact line search --------------------------------------------------------------
@pytest.mark.parametrize("seed", range(8))
def test_line_search_is_exact(seed):
    rng = np.random.default_rng(seed)
    l = 30
    y = rng.choice([-1.0, 1.0], l)
    o = rng.normal(scale=1.5, size=l)
    # a descent-like direction (towards the margins, noisy) crossing many breakpoints
    o_bar = y * rng.uniform(0.0, 2.0, l) + rng.normal(scale=0.7, size=l)
    slope = rng.normal() * 0.3
    curv = abs(rng.normal()) * (0 if seed % 4 == 0 else 0.2)

    def phi(delta):
        oo = o[:, None] + np.outer(o_bar - o, delta)
        return (np.mean(np.maximum(0, 1 - y[:, None] * oo) ** 2, axis=0) + slope * delta
                + curv * delta ** 2)

    delta = squared_hinge_line_search(y, o, o_bar, slope, curv, l)
    t = (1 - y * o) / (y * (o_bar - o))
    assert delta > 0 and np.sum((t > 0) & (t < delta)) >= 1  # non-trivial search
    grid = np.linspace(0, max(4.0, 2 * delta), 200001)
    vals = phi(grid)
    best = grid[vals.argmin()]
    assert phi(np.array([delta]))[0] <= vals.min() + 1e-12
    assert abs(delta - best) <= 2 * (grid[1] - grid[0]) + 1e-6
    h = 1e-6  # φ′(δ) = 0 (φ is C¹)
    dphi = (phi(np.array([delta + h])) - phi(np.array([delta - h])))[0] / (2 * h)
    assert abs(dphi) < 1e-6


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sorted_below", [None, 3])
def test_line_search_by_selection_is_exact(seed, sorted_below, monkeypatch):
    """Many rows (the breakpoints halved by selection before the sort), or few with the
    selection forced down to 3 breakpoints (ties included): the step is the root of φ′
    found by bisection on the dense formula."""
    newton = importlib.import_module("linlap.solvers.lapsvm_newton")
    if sorted_below is not None:
        monkeypatch.setattr(newton, "_LINE_SEARCH_SORTED", sorted_below)
    rng = np.random.default_rng(seed)
    l = 4000 if sorted_below is None else 40
    y = rng.choice([-1.0, 1.0], l)
    o = rng.normal(scale=1.5, size=l)
    o_bar = y * rng.uniform(0.0, 2.0, l) + rng.normal(scale=0.7, size=l)
    if sorted_below is not None:  # tied breakpoints
        o, o_bar = np.round(o, 1), np.round(o_bar, 1)
    w = rng.uniform(0.2, 2.0, l) if seed % 2 else None
    slope = rng.normal() * 0.3
    curv = abs(rng.normal()) * (0 if seed % 3 == 0 else 0.2)

    def dphi(delta):
        oo = o + delta * (o_bar - o)
        on = y * oo < 1
        ww = np.ones(l) if w is None else w
        return slope + 2 * curv * delta + 2 / l * np.sum((ww * (o_bar - o) * (oo - y))[on])

    delta = squared_hinge_line_search(y, o, o_bar, slope, curv, l, weights=w)
    if dphi(0.0) >= 0:
        assert delta == 0.0
        return
    lo, hi = 0.0, 1.0
    while dphi(hi) < 0:
        lo, hi = hi, 2 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if dphi(mid) < 0 else (lo, mid)
    assert delta == pytest.approx(0.5 * (lo + hi), rel=1e-9, abs=1e-12)


def test_regulariser_line_is_exact():
    """The regulariser terms the Newton line search adds are its exact quadratic."""
    X, L, labeled, T = random_problem(k=3, seed=2, normalized=True)
    Xd = dense(X)
    rng = np.random.default_rng(0)
    s = 1.0 / np.trace(L)
    W, dW = rng.normal(size=(Xd.shape[1], 3)), rng.normal(size=(Xd.shape[1], 3))
    b, db = rng.normal(size=3), rng.normal(size=3)
    F, dF = Xd @ W + b, Xd @ dW + db
    slope, curv = regulariser_line(W, dW, L @ F, dF, L @ dF, 0.3, 2.0, s)
    for delta in (0.0, 0.7, 2.5):
        Fd, Wd = F + delta * dF, W + delta * dW
        reg = 0.3 * np.sum(Wd * Wd, axis=0) + 2.0 * s * np.sum(Fd * (L @ Fd), axis=0)
        reg0 = 0.3 * np.sum(W * W, axis=0) + 2.0 * s * np.sum(F * (L @ F), axis=0)
        np.testing.assert_allclose(reg, reg0 + slope * delta + curv * delta ** 2, rtol=1e-12)


def test_line_search_step_beyond_one_and_no_descent():
    # one inactive row entering late, quadratic minimum at δ = 2.5 before it enters
    y = np.array([1.0, 1.0])
    o = np.array([0.0, 5.0])
    o_bar = np.array([0.4, 4.5])
    delta = squared_hinge_line_search(y, o, o_bar, 0.0, 0.0, 2)
    assert delta == pytest.approx(2.5)
    # moving away from the targets: no descent, step 0
    assert squared_hinge_line_search(y, o, o - 1.0, 0.0, 0.0, 2) == 0.0



@pytest.mark.parametrize("seed", [14, 40, 50])
def test_newton_small_gamma_A_stops_near_the_minimum(seed):
    # a user's small γ_A (≤ 1e-5): CG's relative residual 1e-4 left the objective 0.3–5.6 %
    # above its minimum with converged=True (CG barely moved from its warm start and the
    # step was accepted); a stop is now refused until the residual bounds the gap
    from sklearn.preprocessing import normalize
    from linlap import KNNGraph
    from reference import blobs

    rng = np.random.default_rng(seed)   # the reviewer's generator (fuzz_gammas.py)
    n, d = int(rng.integers(80, 200)), int(rng.integers(6, 40))
    X, yt = blobs(n=n, d=d, n_classes=2, seed=seed, sparse=True,
                  noise=float(rng.uniform(0.2, 1.5)))
    X = normalize(X)
    perm = rng.permutation(n)
    per = int(rng.integers(5, 40))
    labeled = np.concatenate([perm[yt[perm] == c][:per] for c in (0, 1)])
    gA = float(10 ** rng.uniform(-6, -1))
    gI = float(10 ** rng.uniform(-3, 2)) if rng.random() < 0.8 else 0.0
    g = KNNGraph(n_neighbors=min(10, n - 1), power=int(rng.integers(1, 6))).fit(X)
    assert gA < 1e-5
    t = np.where(yt[labeled] == 1, 1.0, -1.0)
    Lp, s = g.laplacian_matrix().toarray(), g.scale_
    sol = lapsvm_newton(X, t, labeled, g.laplacian_matvec, gamma_A=gA, gamma_I=gI, scale=s,
                        tol=1e-4, max_iter=50)
    assert sol.converged
    z = reference(dense(X), Lp, labeled, t, gA, gI, s)
    J_ref = ref_J_grad(z, _augment(dense(X), True), Lp, labeled, t, gA, gI, s, d)[0]
    J_sol = lapsvm_objective(dense(X), t, labeled, lambda F: Lp @ F, sol.coef[0],
                             sol.intercept[0], gamma_A=gA, gamma_I=gI, scale=s)[0]
    assert J_sol <= J_ref * (1 + 1e-3)

# -- iterations, warm start, matvec sharing, warnings ----------------------------------
def test_warm_start_takes_fewer_newton_steps():
    X, L, labeled, T = random_problem(n=120, d=40, l=40, k=3, seed=13)
    s = 1.0 / np.trace(L)
    kw = dict(gamma_A=GA, scale=s, tol=1e-10)
    first = lapsvm_newton(X, T, labeled, lambda F: L @ F, gamma_I=GI, **kw)
    cold = lapsvm_newton(X, T, labeled, lambda F: L @ F, gamma_I=1.05 * GI, **kw)
    warm = lapsvm_newton(X, T, labeled, lambda F: L @ F, gamma_I=1.05 * GI, init=first, **kw)
    assert warm.n_iter < cold.n_iter
    assert warm.state["cg_iter"] < cold.state["cg_iter"]
    np.testing.assert_allclose(warm.coef, cold.coef, rtol=1e-6, atol=1e-8)


def test_objective_decreases_and_classes_share_matvecs():
    X, L, labeled, T = random_problem(n=120, d=40, l=40, k=4, seed=17)
    s = 1.0 / np.trace(L)
    widths = []

    def lap(F):
        widths.append(F.shape[1])
        return L @ F

    sol = lapsvm_newton(X, T, labeled, lap, gamma_A=GA, gamma_I=GI, scale=s, tol=1e-10)
    assert np.all(np.diff(sol.history) <= 1e-12)
    # one graph pass per CG iteration for all classes together, plus one per Newton
    # step (line search) and two outside the loop — never one pass per class
    assert len(widths) <= sol.state["cg_iter"] + 2 * sol.n_iter + 2
    assert max(widths) == 4


def test_max_iter_warns():
    X, L, labeled, T = random_problem(k=2, seed=19)
    s = 1.0 / np.trace(L)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        sol = lapsvm_newton(X, T, labeled, lambda F: L @ F, gamma_A=GA, gamma_I=GI, scale=s,
                            max_iter=1)
    assert sol.n_iter == 1 and not sol.converged
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lapsvm_newton(X, T, labeled, lambda F: L @ F, gamma_A=GA, gamma_I=GI, scale=s)


def test_never_reports_convergence_from_inexact_steps():
    """CG too short to solve the Newton systems: no silent stop at a non-optimal point.

    Inexact (loose) Newton directions need not descend; a stall on them must lead
    to tight steps, and a stall with CG still unconverged must be reported.
    """
    X, L, labeled, T = random_problem(n=120, d=40, l=40, k=3, seed=2)
    unl = np.setdiff1d(np.arange(X.shape[0]), labeled)
    kw = dict(gamma_A=GA, gamma_I=GI, scale=1.0 / np.trace(L), balance=[0.2, -0.1, 0.0],
              unlabeled_rows=unl, tol=1e-8, max_iter=200)
    with pytest.warns(ConvergenceWarning, match="cg_max_iter"):
        sol = lapsvm_newton(X, T, labeled, lambda F: L @ F, cg_max_iter=3, **kw)
    assert not sol.converged and sol.residual > 1e-6
    sol = lapsvm_newton(X, T, labeled, lambda F: L @ F, **kw)
    assert sol.converged and sol.residual < 1e-8


# -- T⁻¹ specifics -----------------------------------------------------------------------
def test_tinv_factor_reuse_and_budget():
    X, L, labeled, T = random_problem(k=2, seed=23, normalized=True)
    s = 1.0 / np.trace(L)
    lap = lambda F: L @ F  # noqa: E731
    d = X.shape[1]
    with pytest.raises(ValueError, match=rf"d = {d}.*{8 * d * d} bytes.*memory_budget = 500"):
        lapsvm_tinv(X, T, labeled, lap, gamma_A=GA, gamma_I=GI, scale=s, memory_budget=500)
    # a budget that fits the factor but few workspace columns gives the same factor
    small = tinv_factor(X, lap, gamma_A=GA, gamma_I=GI, scale=s,
                        memory_budget=8 * d * d + 3 * 8 * (3 * X.shape[0] + d))
    first = lapsvm_tinv(X, T, labeled, lap, gamma_A=GA, gamma_I=GI, scale=s)
    np.testing.assert_allclose(small.R, first.state["factor"].R, rtol=1e-12, atol=1e-14)
    # same ratio γ_I s / γ_A, other loss weight: the factor is reused, no graph access
    again = lapsvm_tinv(X, T, labeled, None, gamma_A=2 * GA, gamma_I=2 * GI, scale=s,
                        factor=first.state["factor"])
    fresh = lapsvm_newton(X, T, labeled, lap, gamma_A=2 * GA, gamma_I=2 * GI, scale=s,
                          tol=1e-10)
    np.testing.assert_allclose(again.coef, fresh.coef, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(again.intercept, fresh.intercept, rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError, match="factor was built for"):
        lapsvm_tinv(X, T, labeled, None, gamma_A=GA, gamma_I=2 * GI, scale=s,
                    factor=first.state["factor"])


def hinge_reference(Xd, Lp, labeled, y, gA, gI, s, fit_intercept):
    """The hinge objective as a QP in (w, b, ξ) by SLSQP (slacks ξ ≥ 0, ξ ≥ 1 − y f)."""
    n, d = Xd.shape
    Xt = _augment(Xd, fit_intercept)
    m, l = Xt.shape[1], len(labeled)
    Q = gI * s * Xt.T @ Lp @ Xt
    Q[np.arange(d), np.arange(d)] += gA
    A = y[:, None] * Xt[labeled]

    def fun(v):
        z, xi = v[:m], v[m:]
        return z @ Q @ z + xi.sum() / l, np.r_[2 * Q @ z, np.full(l, 1.0 / l)]

    cons = [{"type": "ineq", "fun": lambda v: A @ v[:m] + v[m:] - 1,
             "jac": lambda v: np.hstack([A, np.eye(l)])},
            {"type": "ineq", "fun": lambda v: v[m:], "jac": lambda v: np.hstack(
                [np.zeros((l, m)), np.eye(l)])}]
    v = minimize(fun, np.r_[np.zeros(m), np.ones(l)], jac=True, method="SLSQP",
                 constraints=cons, options=dict(maxiter=1000, ftol=1e-15)).x
    return v[:m], fun(v)[0]


@pytest.mark.parametrize("normalized,fit_intercept", [(False, True), (True, True),
                                                      (False, False)])
def test_tinv_hinge_matches_generic_qp(normalized, fit_intercept):
    X, L, labeled, T = random_problem(n=30, d=6, l=12, k=2, seed=29, normalized=normalized)
    Xd = dense(X)
    s = 1.0 / np.trace(L)
    sol = lapsvm_tinv(X, T, labeled, lambda F: L @ F, gamma_A=GA, gamma_I=GI, scale=s,
                      loss="hinge", fit_intercept=fit_intercept, tol=1e-10)
    J = lapsvm_objective(X, T, labeled, lambda F: L @ F, sol.coef, sol.intercept, gamma_A=GA,
                         gamma_I=GI, scale=s, loss="hinge")
    for j in range(2):
        z, J_ref = hinge_reference(Xd, L, labeled, T[:, j], GA, GI, s, fit_intercept)
        assert J[j] <= J_ref * (1 + 1e-6)
        assert J[j] >= J_ref * (1 - 1e-6)
        np.testing.assert_allclose(sol.coef[j], z[: Xd.shape[1]], rtol=1e-4, atol=1e-5)


# -- bad inputs ------------------------------------------------------------------------
def test_bad_inputs():
    X, L, labeled, T = random_problem(k=2, seed=31)
    s = 1.0 / np.trace(L)
    lap = lambda F: L @ F  # noqa: E731
    kw = dict(gamma_A=GA, gamma_I=GI, scale=s)
    for solver in (lapsvm_newton, lapsvm_tinv):
        with pytest.raises(ValueError, match=r"\+1 or -1"):
            solver(X, T * 2, labeled, lap, **kw)
        with pytest.raises(ValueError, match="targets must have shape"):
            solver(X, T[:-1], labeled, lap, **kw)
        with pytest.raises(ValueError, match="labeled_rows"):
            solver(X, T, labeled + 1000, lap, **kw)
        with pytest.raises(ValueError, match="gamma_I"):
            solver(X, T, labeled, lap, gamma_A=GA, gamma_I=-1.0, scale=s)
    with pytest.raises(ValueError, match="unlabeled_rows"):
        lapsvm_newton(X, T, labeled, lap, balance=[0.0, 0.0], **kw)
    with pytest.raises(ValueError, match="one value per target column"):
        lapsvm_newton(X, T, labeled, lap, balance=[0.0], unlabeled_rows=[0, 1], **kw)
    with pytest.raises(ValueError, match="init.coef"):
        sol = lapsvm_newton(X, T[:, :1], labeled, lap, **kw)
        lapsvm_newton(X, T, labeled, lap, init=sol, **kw)
    with pytest.raises(ValueError, match="both be 0"):
        lapsvm_newton(X, T, labeled, lap, gamma_A=0.0, gamma_I=0.0, scale=s)
    with pytest.raises(ValueError, match="gamma_A > 0"):
        lapsvm_tinv(X, T, labeled, lap, gamma_A=0.0, gamma_I=GI, scale=s)
    with pytest.raises(ValueError, match="loss"):
        lapsvm_tinv(X, T, labeled, lap, loss="log", **kw)


# -- the stall rule of the finite Newton steps (docstring steps 3–5) ----------------------
def _trace_newton_steps(monkeypatch):
    """Record every Newton step's CG call: the active set it solves for (the operator's
    mask), its CG tolerance and iteration cap (the phase), the CG solution and whether
    CG converged. With ``balance`` the solution holds z₀ and the constraint column z₁."""
    newton = importlib.import_module("linlap.solvers.lapsvm_newton")
    solve = newton._solve_columns
    steps = []

    def traced(op, B, X0, **kwargs):
        Zbar, info = solve(op, B, X0, **kwargs)
        steps.append(dict(active=op.mask[:, 0] > 0, cg_tol=kwargs["tol"],
                          cg_max_iter=kwargs["max_iter"], solution=Zbar.copy(),
                          cg_ok=bool(info.converged.all())))
        return Zbar, info

    monkeypatch.setattr(newton, "_solve_columns", traced)
    return steps


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("seed,normalized", [(4, False), (1, True)])
def test_newton_stall_rule_switches_phase_and_stops(sparse, seed, normalized, monkeypatch):
    """Every Newton step of a run follows docstring steps 3–5 exactly.

    The loose steps (at most LOOSE_CG_ITER = 10 CG iterations for 21 unknowns plus the
    balance column) are inexact, so the loose phase ends by the stall rule — relative
    decrease below ``tol`` with the active set unchanged — not by a consistent Newton
    point. Replaying the rule on the recorded steps (the active sets, the Newton points
    z₀ + ν z₁, the decreases the callback reports) must predict the phase of every step
    and the step the solver stops at: a stall threshold other than ``tol`` switches to
    the tight phase (or stops) at another step. With ``balance`` no tight stop is
    refused (step 6), so the rule alone decides.
    """
    newton = importlib.import_module("linlap.solvers.lapsvm_newton")
    tol, cg_max_iter, r = 1e-4, 1000, 0.1
    X, L, labeled, T = random_problem(n=30, d=20, l=12, seed=seed, sparse=sparse,
                                      normalized=normalized)
    Xd, t = dense(X), T[:, 0]
    unl = np.setdiff1d(np.arange(X.shape[0]), labeled)
    steps = _trace_newton_steps(monkeypatch)
    decrease = []
    sol = lapsvm_newton(X, T, labeled, lambda F: L @ F, gamma_A=GA, gamma_I=GI,
                        scale=1.0 / np.trace(L), balance=[r], unlabeled_rows=unl, tol=tol,
                        cg_max_iter=cg_max_iter, max_iter=50,
                        callback=lambda step, dec: decrease.append(dec))
    assert sol.converged and len(steps) == len(decrease) == sol.n_iter
    Xt = _augment(Xd, True)[labeled]
    c = np.r_[Xd[unl].mean(axis=0), 1.0]
    final_active = t * sol.decision[labeled, 0] < 1
    tight, why, stalls = False, "the first step is loose", 0
    for i, st in enumerate(steps):
        step, phase = i + 1, "tight" if tight else "loose"
        expected_cg = (tol, cg_max_iter) if tight else (max(newton.LOOSE_TOL, tol),
                                                        newton.LOOSE_CG_ITER)
        assert (st["cg_tol"], st["cg_max_iter"]) == expected_cg, (
            f"Newton step {step} ran CG with (tol, max_iter)={(st['cg_tol'], st['cg_max_iter'])}"
            f", expected a {phase} step {expected_cg}: {why}")
        z0, z1 = st["solution"][:, 0], st["solution"][:, 1]
        yo = t * (Xt @ (z0 + (r - c @ z0) / (c @ z1) * z1))  # the Newton point's y f
        a = st["active"]
        slack = tol if tight else max(newton.LOOSE_TOL, tol)
        consistent = st["cg_ok"] and np.all(yo[a] <= 1 + slack) and np.all(yo[~a] >= 1 - slack)
        last = step == len(steps)
        if consistent and not tight:  # step 3: redo it tightly (no line search)
            assert not last, f"step {step}: a loose consistent step cannot end the run"
            tight, why = True, f"step {step} was loose and consistent (redone tightly)"
            continue
        after = final_active if last else steps[i + 1]["active"]
        unchanged = np.array_equal(after, a)
        stalled = decrease[i] < tol and unchanged
        stalls += stalled
        stop = consistent or (stalled and tight)
        why = (f"step {step} ({phase}) had relative decrease {decrease[i]:.3g} (tol={tol:g}), "
               f"active set {'unchanged' if unchanged else 'changed'}, Newton point "
               f"{'' if consistent else 'not '}consistent")
        assert stop == last, f"the solver {'went on after' if stop else 'stopped at'} {why}"
        if stalled and not tight:  # step 5: a stalled loose step switches to tight
            tight = True
    assert stalls, "no step stalled: the problem no longer exercises the stall rule"


def test_newton_loose_step_without_descent_switches_to_tight_phase():
    """A loose Newton step that does not descend at all (10 CG iterations with the balance
    column leave a direction along which the line search stays at δ = 0) stalls, and a
    stalled loose step switches to the tight phase (docstring step 5): the solver then
    converges to the constrained minimiser in three steps instead of repeating the same
    loose step, without progress, until max_iter. Dense and CSR X alike."""
    z_ref = J_ref = None
    for sparse in (True, False):
        X, L, labeled, T = random_problem(n=30, d=20, l=12, seed=11, sparse=sparse,
                                          normalized=True)
        Xd, t = dense(X), T[:, 0]
        unl = np.setdiff1d(np.arange(X.shape[0]), labeled)
        s, r = 1.0 / np.trace(L), np.array([-0.2])
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            sol = lapsvm_newton(X, T, labeled, lambda F: L @ F, gamma_A=GA, gamma_I=GI,
                                scale=s, balance=r, unlabeled_rows=unl, tol=1e-10,
                                max_iter=50)
        # the second (loose) step made no progress at all — the stall
        assert sol.history[2] == sol.history[1] < sol.history[0]
        assert sol.converged and sol.n_iter <= 5 and sol.residual < 1e-8
        np.testing.assert_allclose(sol.decision[unl].mean(axis=0), r, atol=1e-12)
        if z_ref is None:  # the same dense problem for both: one reference solve
            c = np.r_[Xd[unl].mean(axis=0), 1.0]
            z_ref = reference(Xd, L, labeled, t, GA, GI, s, True, c, r[0])
            J_ref = ref_J_grad(z_ref, _augment(Xd, True), L, labeled, t, GA, GI, s,
                               Xd.shape[1])[0]
        J = lapsvm_objective(Xd, t, labeled, lambda F: L @ F, sol.coef[0], sol.intercept[0],
                             gamma_A=GA, gamma_I=GI, scale=s)[0]
        assert abs(J - J_ref) <= 1e-6 * J_ref, (J, J_ref)
        np.testing.assert_allclose(sol.coef[0], z_ref[:-1], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(sol.intercept[0], z_ref[-1], rtol=1e-4, atol=1e-6)
