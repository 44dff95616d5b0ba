"""The LapRLS CG solver against dense direct solves of the documented objective."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from linlap.solvers import batched_cg, laprls_linear

from reference import dense_objective, dense_solution, random_design, random_laplacian


def random_problem(n=40, d=12, l=10, k=1, density=0.4, seed=0, sparse=True):
    rng = np.random.default_rng(seed)
    X = random_design(n, d, rng, sparse=sparse, density=density)
    L = random_laplacian(n, rng)
    labeled = rng.choice(n, l, replace=False)
    T = rng.choice([-1.0, 1.0], size=(l, k))
    return X, L, labeled, T


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("power", [1, 3])
def test_matches_dense_solve(sparse, k, power):
    X, L, labeled, T = random_problem(k=k, sparse=sparse)
    Xd = X.toarray() if sp.issparse(X) else X
    s = 1.0 / np.trace(L)
    Lp = np.linalg.matrix_power(L, power)
    gA, gI = 1e-2, 5.0
    sol = laprls_linear(X, T, labeled, lambda F: Lp @ F, gamma_A=gA, gamma_I=gI, scale=s,
                        tol=1e-12, max_iter=500)
    Z = dense_solution(Xd, Lp, labeled, T, gA, gI, s)
    assert sol.converged
    np.testing.assert_allclose(sol.coef, Z[:-1].T, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sol.intercept, Z[-1], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sol.decision, Xd @ Z[:-1] + Z[-1], rtol=1e-6, atol=1e-9)
    # the solution is the minimiser: J is larger at random perturbations of it
    for j in range(k):
        w, b = sol.coef[j], sol.intercept[j]
        J0 = dense_objective(Xd, Lp, labeled, T[:, j], w, b, gA, gI, s)
        rng = np.random.default_rng(j)
        for _ in range(5):
            dw = rng.standard_normal(w.size) * 1e-3
            assert dense_objective(Xd, Lp, labeled, T[:, j], w + dw, b + 1e-3, gA, gI, s) > J0


@pytest.mark.parametrize("sparse", [True, False])
def test_gradient_vanishes(sparse):
    X, L, labeled, T = random_problem(k=2, sparse=sparse, seed=3)
    Xd = X.toarray() if sp.issparse(X) else X
    s = 1.0 / np.trace(L)
    gA, gI = 1e-3, 2.0
    sol = laprls_linear(X, T, labeled, lambda F: L @ F, gamma_A=gA, gamma_I=gI, scale=s,
                        tol=1e-12)
    l = len(labeled)
    for j in range(2):
        w, b = sol.coef[j], sol.intercept[j]
        f = Xd @ w + b
        resid = np.zeros_like(f)
        resid[labeled] = f[labeled] - T[:, j]
        Lf = L @ f
        grad_w = 2 / l * Xd.T @ resid + 2 * gA * w + 2 * gI * s * Xd.T @ Lf
        grad_b = 2 / l * resid.sum() + 2 * gI * s * Lf.sum()
        assert np.linalg.norm(grad_w) < 1e-8
        assert abs(grad_b) < 1e-8


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("k", [1, 3])
def test_class_balance_constraint_matches_kkt(sparse, k):
    X, L, labeled, T = random_problem(k=k, sparse=sparse, seed=5)
    Xd = X.toarray() if sp.issparse(X) else X
    n = X.shape[0]
    unl = np.setdiff1d(np.arange(n), labeled)
    s = 1.0 / np.trace(L)
    r = np.linspace(-0.5, 0.3, k)
    gA, gI = 1e-2, 1.0
    sol = laprls_linear(X, T, labeled, lambda F: L @ F, gamma_A=gA, gamma_I=gI, scale=s,
                        balance=r, unlabeled_rows=unl, tol=1e-12)
    c = np.r_[Xd[unl].mean(axis=0), 1.0]
    Z = dense_solution(Xd, L, labeled, T, gA, gI, s, c=c, r=r)
    np.testing.assert_allclose(sol.coef, Z[:-1].T, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sol.intercept, Z[-1], rtol=1e-6, atol=1e-9)
    # the constraint holds: mean decision over the unlabeled rows equals r
    np.testing.assert_allclose(sol.decision[unl].mean(axis=0), r, atol=1e-9)


def test_no_intercept_matches_dense():
    X, L, labeled, T = random_problem(seed=7)
    Xd = X.toarray()
    s = 1.0 / np.trace(L)
    sol = laprls_linear(X, T, labeled, lambda F: L @ F, gamma_A=0.1, gamma_I=1.0, scale=s,
                        fit_intercept=False, tol=1e-12)
    l = len(labeled)
    H = Xd[labeled].T @ Xd[labeled] / l + 0.1 * np.eye(Xd.shape[1]) + s * Xd.T @ L @ Xd
    w = np.linalg.solve(H, Xd[labeled].T @ T[:, 0] / l)
    np.testing.assert_allclose(sol.coef[0], w, rtol=1e-6, atol=1e-10)
    assert sol.intercept[0] == 0


def test_warm_start_takes_fewer_iterations():
    X, L, labeled, T = random_problem(n=80, d=30, l=20, k=2, seed=11)
    s = 1.0 / np.trace(L)
    kw = dict(gamma_A=1e-3, gamma_I=3.0, scale=s, tol=1e-10)
    cold = laprls_linear(X, T, labeled, lambda F: L @ F, **kw)
    kw2 = dict(kw, gamma_I=3.3)
    cold2 = laprls_linear(X, T, labeled, lambda F: L @ F, **kw2)
    warm2 = laprls_linear(X, T, labeled, lambda F: L @ F, init=cold, **kw2)
    assert warm2.n_iter < cold2.n_iter
    np.testing.assert_allclose(warm2.coef, cold2.coef, rtol=1e-6, atol=1e-9)


def test_batched_cg_matches_independent_solves_and_warns():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((30, 30))
    A = M @ M.T + 0.5 * np.eye(30)
    B = rng.standard_normal((30, 4))
    B[:, 2] = 0.0  # a zero right-hand side is solved by zero
    X, info = batched_cg(lambda P: A @ P, B, tol=1e-12, max_iter=500)
    np.testing.assert_allclose(X, np.linalg.solve(A, B), rtol=1e-8, atol=1e-10)
    assert info.converged.all() and np.all(X[:, 2] == 0)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        _, info = batched_cg(lambda P: A @ P, B, tol=1e-12, max_iter=2)
    assert not info.converged.all() and info.n_iter == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x, _ = batched_cg(lambda P: A @ P, B[:, 0], tol=1e-10, max_iter=500)
    assert x.shape == (30,)


@pytest.mark.parametrize("seed", range(3))
def test_small_weights_stop_near_the_minimum_not_at_the_residual(seed):
    """Wide X, tiny γ_A and γ_I: the labels are fitted almost exactly and A is ill
    conditioned. A relative residual of 1e-4 alone left J 17–83 % above J*; the
    objective rule stops within 100·tol·J (1 %)."""
    rng = np.random.default_rng(seed)
    n, d, l = 200, 2000, 20
    X = random_design(n, d, rng, sparse=True, density=0.02)
    X.data = np.abs(X.data)
    L = random_laplacian(n, rng, normalized=True)
    Lp, s = np.linalg.matrix_power(L, 5), 1.0 / np.trace(L)
    labeled = rng.choice(n, l, replace=False)
    T = rng.choice([-1.0, 1.0], size=(l, 1))
    gA, gI = 1e-6, 1e-3
    sol = laprls_linear(X, T, labeled, lambda F: Lp @ F, gamma_A=gA, gamma_I=gI, scale=s,
                        tol=1e-4, max_iter=5000)
    Xd = X.toarray()
    Z = dense_solution(Xd, Lp, labeled, T, gA, gI, s)
    J_star = dense_objective(Xd, Lp, labeled, T[:, 0], Z[:-1, 0], Z[-1, 0], gA, gI, s)
    J = dense_objective(Xd, Lp, labeled, T[:, 0], sol.coef[0], sol.intercept[0], gA, gI, s)
    assert sol.converged
    assert J_star < 1e-3  # the regime of the rule: labels fitted, J small
    assert J - J_star <= 1e-2 * J_star


def test_batched_cg_energy_rule_bounds_the_a_norm_error():
    """b mostly along A's large eigenvalues, a little along its small ones (as X̃_lᵀy
    when γ_A is small), and an offset c making c + 2φ(x*) = c − ‖x*‖²_A small (as l J*
    is when the labels are nearly fitted): the residual rule stops with the small
    directions unresolved, several times energy_rtol · (c + 2φ) from x* in the A-norm;
    the energy rule gets within it."""
    rng = np.random.default_rng(0)
    m = 300
    Q, _ = np.linalg.qr(rng.standard_normal((m, m)))
    A = (Q * np.logspace(-4, 0, m)) @ Q.T
    A = 0.5 * (A + A.T)
    B = (Q[:, -50:] @ rng.standard_normal((50, 2))
         + 3e-3 * Q[:, :50] @ rng.standard_normal((50, 2)))
    X_star = np.linalg.solve(A, B)

    def a_norm2(E):
        return np.einsum("ij,ij->j", E, A @ E)

    J_star = 1e-2 * a_norm2(X_star)  # c + 2φ(x*), with c = 1.01 ‖x*‖²_A
    offset = a_norm2(X_star) + J_star
    loose, _ = batched_cg(lambda P: A @ P, B, tol=1e-3, max_iter=5000)
    tight, info = batched_cg(lambda P: A @ P, B, tol=1e-3, max_iter=5000, energy_rtol=1e-2,
                             energy_offset=offset)
    assert np.all(a_norm2(loose - X_star) > 2e-2 * J_star)  # the residual rule alone
    assert info.converged.all()
    assert np.all(a_norm2(tight - X_star) <= 1e-2 * J_star)


def test_energy_rule_costs_nothing_when_cg_converges_in_a_few_steps():
    """A well-conditioned system: the residual rule is met within a few iterations, and
    the energy rule (whose window then covers only the last steps, not the way from x₀)
    stops at the same iteration."""
    rng = np.random.default_rng(1)
    m = 200
    Q, _ = np.linalg.qr(rng.standard_normal((m, m)))
    A = (Q * np.r_[np.full(m - 3, 1.0), 2.0, 3.0, 5.0]) @ Q.T
    A = 0.5 * (A + A.T)
    B = rng.standard_normal((m, 2))
    _, plain = batched_cg(lambda P: A @ P, B, tol=1e-8)
    x_star = np.linalg.solve(A, B)
    offset = 1.5 * np.einsum("ij,ij->j", B, x_star)  # c + 2φ(x*) = ½ bᵀA⁻¹b
    _, ruled = batched_cg(lambda P: A @ P, B, tol=1e-8, energy_rtol=1e-2, energy_offset=offset)
    assert plain.n_iter < 10
    assert ruled.n_iter == plain.n_iter
    # an objective that vanishes at x* (c = bᵀA⁻¹b) is met to round-off, not run to max_iter
    _, vanishing = batched_cg(lambda P: A @ P, B, tol=1e-8, energy_rtol=1e-2,
                              energy_offset=offset / 1.5, max_iter=200)
    assert vanishing.converged.all() and vanishing.n_iter < 200


def test_refuses_bad_stopping_parameters_and_balance():
    X, L, labeled, T = random_problem(k=2, seed=5)
    unl = np.setdiff1d(np.arange(X.shape[0]), labeled)
    kw = dict(gamma_A=1e-2, gamma_I=1.0, scale=0.1)
    for bad in (dict(tol=0.0), dict(tol=-1.0), dict(max_iter=0)):
        with pytest.raises(ValueError, match="tol must be > 0 and max_iter >= 1"):
            laprls_linear(X, T, labeled, lambda F: L @ F, **kw, **bad)
    for balance, match in [([np.nan, 0.2], "balance must be finite"),
                           ([0.1, 0.2, 0.3], "one value per target column")]:
        with pytest.raises(ValueError, match=match):
            laprls_linear(X, T, labeled, lambda F: L @ F, **kw, balance=balance,
                          unlabeled_rows=unl)
