"""Kernel-mode solvers (seed 003) against dense reference solutions of

    J(α, b) = (1/l) Σ_labeled V(y_i, f_i) + γ_A αᵀKα + γ_I s fᵀ M f,   f = Kα + b,

written out independently here (M = L^p as a dense matrix)."""

import warnings

import numpy as np
import pytest
from reference import random_design, random_laplacian, unit_rows_problem
from scipy.optimize import minimize, minimize_scalar
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import pairwise_kernels

from linlap.gram import GramOperator
from linlap.solvers.kernel_newton import kernel_newton
from linlap.solvers.kernel_pcg import kernel_line_search, kernel_objective, kernel_pcg


def dense_J(K, M, rows, y, a, b, gA, gI, s, loss):
    f = K @ a + b
    o = f[rows]
    r = np.maximum(0.0, 1.0 - y * o) if loss == "squared_hinge" else y - o
    return np.mean(r * r) + gA * a @ K @ a + gI * s * f @ M @ f


def dense_grad(K, M, rows, y, a, b, gA, gI, s, loss):
    """∂J/∂α and ∂J/∂b, unreduced (no division by K)."""
    f = K @ a + b
    o = f[rows]
    e = np.where(y * o < 1, o - y, 0.0) if loss == "squared_hinge" else o - y
    gf = np.zeros(len(f))
    gf[rows] = 2 * e / len(rows)
    gf += 2 * gI * s * M @ f
    return K @ gf + 2 * gA * K @ a, gf.sum()


def reference_minimum(K, M, rows, y, gA, gI, s, loss):
    """min J by L-BFGS on (α, b) with the analytic gradient above."""
    n = K.shape[0]

    def fun(z):
        ga, gb = dense_grad(K, M, rows, y, z[:n], z[n], gA, gI, s, loss)
        return dense_J(K, M, rows, y, z[:n], z[n], gA, gI, s, loss), np.r_[ga, gb]

    res = minimize(fun, np.zeros(n + 1), jac=True, method="L-BFGS-B",
                   options=dict(maxiter=50000, maxfun=100000, ftol=1e-16, gtol=1e-13))
    return res.fun


def problem(sparse, normalized, seed=0, n=70, l=20, kernel="rbf"):
    rng = np.random.default_rng(seed)
    X = random_design(n, 6, rng, sparse=sparse, density=0.6)
    Lm = random_laplacian(n, rng, normalized=normalized)
    M = Lm @ Lm  # p = 2
    rows = np.sort(rng.choice(n, l, replace=False))
    Xd = X.toarray() if sparse else X
    # learnable targets (a linear rule): some labeled rows end beyond the margin
    Y = np.where(Xd[rows] @ rng.standard_normal((6, 2)) > 0, 1.0, -1.0)
    op = GramOperator(X, kernel=kernel, gamma=0.3)
    K = pairwise_kernels(X, metric=kernel, gamma=0.3)
    return dict(op=op, K=K, M=M, Lmv=lambda F: M @ F, rows=rows, Y=Y, s=1 / np.trace(Lm))


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("normalized", [True, False])
def test_pcg_newton_and_dense_reference_agree_squared_hinge(sparse, normalized):
    P = problem(sparse, normalized)
    gA, gI = 1e-2, 0.01
    kw = dict(gamma_A=gA, gamma_I=gI, scale=P["s"])
    sol_p = kernel_pcg(P["op"].matvec, P["Y"], P["rows"], P["Lmv"], n_samples=P["K"].shape[0],
                       tol=1e-10, max_iter=3000, **kw)
    sol_n = kernel_newton(P["K"], P["Y"], P["rows"], P["Lmv"], **kw)
    assert sol_p.converged and sol_p.stop_reason == "tol" and sol_n.converged
    np.testing.assert_allclose(sol_p.decision, sol_n.decision, atol=1e-6)
    Jp = kernel_objective(P["op"].matvec, P["Y"], P["rows"], P["Lmv"], sol_p.dual_coef,
                          sol_p.intercept, **kw)
    Jn = kernel_objective(P["op"].matvec, P["Y"], P["rows"], P["Lmv"], sol_n.dual_coef,
                          sol_n.intercept, **kw)
    np.testing.assert_allclose(Jp, Jn, rtol=1e-9)
    for c in range(2):
        y = P["Y"][:, c]
        a, b = sol_n.dual_coef[c], sol_n.intercept[c]
        # the problem exercises the hinge: rows on both sides of the margin
        margins = y * sol_n.decision[P["rows"], c]
        assert np.any(margins < 1 - 1e-6) and np.any(margins > 1 + 1e-6)
        # Newton's point is stationary for the documented objective ...
        ga, gb = dense_grad(P["K"], P["M"], P["rows"], y, a, b, gA, gI, P["s"],
                            "squared_hinge")
        assert np.abs(ga).max() < 1e-9 and abs(gb) < 1e-9
        # ... and no better point is found by a generic dense minimiser
        Jref = reference_minimum(P["K"], P["M"], P["rows"], y, gA, gI, P["s"],
                                 "squared_hinge")
        Jd = dense_J(P["K"], P["M"], P["rows"], y, a, b, gA, gI, P["s"], "squared_hinge")
        assert Jd <= Jref + 1e-12
        assert Jref - Jd < 1e-7
        np.testing.assert_allclose(Jd, Jn[c], rtol=1e-12)
    assert sol_n.n_iter >= 2  # the error vectors did change


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("normalized", [True, False])
def test_laprls_closed_form_and_pcg_match_dense_solve(sparse, normalized):
    P = problem(sparse, normalized, seed=1, kernel="poly")
    gA, gI = 1e-2, 1.0
    K, M, rows, Y, s = P["K"], P["M"], P["rows"], P["Y"], P["s"]
    n, l = K.shape[0], len(rows)
    kw = dict(gamma_A=gA, gamma_I=gI, scale=s, loss="squared")
    sol_d = kernel_newton(K, Y, rows, P["Lmv"], **kw)
    sol_p = kernel_pcg(P["op"].matvec, Y, rows, P["Lmv"], n_samples=n, tol=1e-11,
                       max_iter=3000, **kw)
    assert sol_d.stop_reason == "direct" and sol_p.stop_reason == "tol"
    # dense solve of the unreduced normal equations ∂J/∂(α, b) = 0 (Hessian / 2)
    Kt = np.hstack([K, np.ones((n, 1))])
    Jl = np.zeros((n, n))
    Jl[rows, rows] = 1.0
    H = Kt.T @ Jl @ Kt / l + gI * s * Kt.T @ M @ Kt
    H[:n, :n] += gA * K
    for c in range(2):
        yfull = np.zeros(n)
        yfull[rows] = Y[:, c]
        z = np.linalg.lstsq(H, Kt.T @ yfull / l, rcond=None)[0]
        f_ref = Kt @ z
        np.testing.assert_allclose(sol_d.decision[:, c], f_ref, atol=1e-8)
        np.testing.assert_allclose(sol_p.decision[:, c], f_ref, atol=1e-6)


def test_no_intercept_and_no_graph():
    P = problem(False, True, seed=2)
    kw = dict(gamma_A=1e-2, gamma_I=0.0, scale=P["s"], fit_intercept=False)
    sol_p = kernel_pcg(P["op"].matvec, P["Y"], P["rows"], None, n_samples=70, tol=1e-10,
                       max_iter=3000, **kw)
    sol_n = kernel_newton(P["K"], P["Y"], P["rows"], None, **kw)
    assert np.all(sol_p.intercept == 0) and np.all(sol_n.intercept == 0)
    np.testing.assert_allclose(sol_p.decision, sol_n.decision, atol=1e-6)
    y = P["Y"][:, 0]
    ga, _ = dense_grad(P["K"], P["M"], P["rows"], y, sol_n.dual_coef[0], 0.0, 1e-2, 0.0,
                       P["s"], "squared_hinge")
    assert np.abs(ga).max() < 1e-9


def test_pcg_objective_decreases_and_columns_are_independent():
    P = problem(True, True, seed=3)
    kw = dict(gamma_A=1e-3, gamma_I=0.3, scale=P["s"], tol=1e-9, max_iter=2000)
    both = kernel_pcg(P["op"].matvec, P["Y"], P["rows"], P["Lmv"], n_samples=70, **kw)
    assert np.all(np.diff(both.history, axis=0) <= 1e-13)
    for c in range(2):
        one = kernel_pcg(P["op"].matvec, P["Y"][:, c], P["rows"], P["Lmv"], n_samples=70, **kw)
        np.testing.assert_allclose(one.decision[:, 0], both.decision[:, c], atol=1e-7)


def test_warm_start_from_the_solution_stops_at_once():
    P = problem(False, False, seed=4)
    kw = dict(gamma_A=1e-3, gamma_I=0.3, scale=P["s"], tol=1e-8, max_iter=2000)
    sol = kernel_pcg(P["op"].matvec, P["Y"], P["rows"], P["Lmv"], n_samples=70, **kw)
    again = kernel_pcg(P["op"].matvec, P["Y"], P["rows"], P["Lmv"], n_samples=70,
                       init=(sol.dual_coef, sol.intercept), **kw)
    assert again.n_iter <= 2 < sol.n_iter
    np.testing.assert_allclose(again.decision, sol.decision, atol=1e-7)


def test_max_iter_warns():
    P = problem(False, False, seed=5)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        sol = kernel_pcg(P["op"].matvec, P["Y"], P["rows"], P["Lmv"], n_samples=70,
                         gamma_A=1e-3, gamma_I=0.3, scale=P["s"], tol=1e-12, max_iter=3)
    assert sol.n_iter == 3 and not sol.converged and sol.stop_reason == "max_iter"


# -- line search ------------------------------------------------------------------------
def phi(s, y, o, od, slope, curv, l, loss):
    v = o + s * od
    r = np.maximum(0.0, 1.0 - y * v) if loss == "squared_hinge" else y - v
    return np.sum(r * r) / l + slope * s + curv * s * s


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("loss", ["squared_hinge", "squared"])
def test_line_search_is_the_exact_minimiser(seed, loss):
    rng = np.random.default_rng(seed)
    l = 15
    y = np.where(rng.random(l) < 0.5, -1.0, 1.0)
    o = rng.standard_normal(l) * 1.5
    od = rng.standard_normal(l)
    curv = rng.uniform(0.01, 0.2)
    # a descent direction: φ′(0) < 0
    g0 = (phi(1e-7, y, o, od, 0, curv, l, loss) - phi(0, y, o, od, 0, curv, l, loss)) / 1e-7
    slope = -abs(g0) - rng.uniform(0.1, 1.0)
    s, pieces = kernel_line_search(y, o, od, slope, curv, l, loss)
    assert s > 0
    ref = minimize_scalar(lambda t: phi(t, y, o, od, slope, curv, l, loss),
                          bounds=(0, 100), method="bounded", options=dict(xatol=1e-12))
    assert abs(s - ref.x) < 1e-6
    # φ′(s) = 0 exactly (φ is C¹ and piecewise quadratic)
    v = o + s * od
    e = np.where(y * v < 1, v - y, 0.0) if loss == "squared_hinge" else v - y
    dphi = 2 * np.dot(e, od) / l + slope + 2 * curv * s
    assert abs(dphi) < 1e-12 * max(1.0, abs(slope))
    # pieces = 1 + breakpoints passed
    if loss == "squared_hinge":
        with np.errstate(divide="ignore", invalid="ignore"):
            bp = (1 - y * o) / (y * od)
        passed = np.count_nonzero((bp > 0) & (bp < s)
                                  & np.where(y * o < 1, y * od > 0, y * od < 0))
        assert pieces == 1 + passed
    else:
        assert pieces == 1


def test_line_search_crosses_breakpoints_and_refuses_ascent():
    y = np.array([1.0, 1.0, -1.0, -1.0])
    o = np.array([-1.0, 0.5, 2.0, -3.0])
    od = np.array([1.0, 1.0, -1.0, -1.0])  # every row moves towards (or past) its margin
    s, pieces = kernel_line_search(y, o, od, 0.0, 1e-3, 4)
    assert pieces >= 2
    ref = minimize_scalar(lambda t: phi(t, y, o, od, 0.0, 1e-3, 4, "squared_hinge"),
                          bounds=(0, 100), method="bounded", options=dict(xatol=1e-12))
    assert abs(s - ref.x) < 1e-6
    assert kernel_line_search(y, o, -od, 1.0, 1e-3, 4) == (0.0, 1)


# -- early stopping -----------------------------------------------------------------------
def _early_problem():
    rng = np.random.default_rng(6)
    n = 120
    X = np.vstack([rng.normal(-1.5, 1, (n // 2, 2)), rng.normal(1.5, 1, (n // 2, 2))])
    truth = np.r_[np.zeros(n // 2, int), np.ones(n // 2, int)]
    Lm = random_laplacian(n, rng)
    rows = np.r_[0, 1, n - 2, n - 1]
    Y = np.where(truth[rows] == 1, 1.0, -1.0)
    op = GramOperator(X, gamma=0.5)
    Xv = np.vstack([rng.normal(-1.5, 1, (15, 2)), rng.normal(1.5, 1, (15, 2))])
    yv = np.r_[np.zeros(15, int), np.ones(15, int)]
    val = (lambda A, b: op.cross(Xv, A.T) + b, yv)
    unl = np.setdiff1d(np.arange(n), rows)
    kw = dict(n_samples=n, gamma_A=1e-4, gamma_I=1.0, scale=1 / np.trace(Lm), tol=1e-12,
              max_iter=2000, unlabeled_rows=unl)
    return op, Y, rows, (lambda F: Lm @ F), val, kw


def test_early_stopping_checks():
    op, Y, rows, Lmv, val, kw = _early_problem()
    theta = int(round(np.sqrt(120) / 2))
    full = kernel_pcg(op.matvec, Y, rows, Lmv, **kw)
    runs = {es: kernel_pcg(op.matvec, Y, rows, Lmv, early_stopping=es, validation=val, **kw)
            for es in ("stability", "validation", "mixed")}
    for es, sol in runs.items():
        assert sol.stop_reason == es and sol.converged
        assert sol.n_iter % theta == 0 and sol.n_iter < full.n_iter
        assert sol.checks and sol.checks[-1]["iteration"] == sol.n_iter
    st = runs["stability"].checks
    assert "changed" not in st[0]  # the first check only records the labels
    assert st[-1]["changed"] < 0.015 and all(c["changed"] >= 0.015 for c in st[1:-1])
    va = [c["val_errors"] for c in runs["validation"].checks]
    assert all(b <= a - 1 for a, b in zip([30] + va[:-2], va[:-1]))  # improved until ...
    assert va[-1] > (([30] + va)[-2]) - 1  # ... the last check did not improve
    assert runs["mixed"].n_iter >= max(runs["stability"].n_iter, runs["validation"].n_iter)
    # decisions at the early stop agree with the optimum's on almost every row
    agree = np.mean((runs["stability"].decision[:, 0] > 0) == (full.decision[:, 0] > 0))
    assert agree > 0.95
    # θ is configurable
    sol = kernel_pcg(op.matvec, Y, rows, Lmv, early_stopping="stability", check_every=3, **kw)
    assert sol.n_iter % 3 == 0


def test_bad_arguments():
    op, Y, rows, Lmv, val, kw = _early_problem()
    with pytest.raises(ValueError, match="validation data"):
        kernel_pcg(op.matvec, Y, rows, Lmv, early_stopping="validation", **kw)
    with pytest.raises(ValueError, match="early_stopping"):
        kernel_pcg(op.matvec, Y, rows, Lmv, early_stopping="never", **kw)
    with pytest.raises(ValueError, match="gamma_A"):
        kernel_pcg(op.matvec, Y, rows, Lmv, **{**kw, "gamma_A": 0.0})
    with pytest.raises(ValueError, match="loss"):
        kernel_pcg(op.matvec, Y, rows, Lmv, loss="hinge", **kw)
    with pytest.raises(ValueError, match="\\+1 or -1"):
        kernel_pcg(op.matvec, Y * 2, rows, Lmv, **kw)
    with pytest.raises(ValueError, match="labeled_rows"):
        kernel_pcg(op.matvec, Y, np.r_[rows[:-1], 500], Lmv, **kw)
    with pytest.raises(ValueError, match="square"):
        kernel_newton(np.ones((3, 4)), Y, rows, Lmv, gamma_A=1.0, gamma_I=0.0, scale=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernel_pcg(op.matvec, Y, rows, Lmv, **{**kw, "tol": 1e-4})


# -- the iterations themselves, against a dense replay of the documented algorithms --------
def exact_step(K, M, rows, y, a, b, da, db, gA, gI, s):
    """argmin_{t ≥ 0} J(α + t dα, b + t db) (squared hinge) by bisection on φ′, which is
    continuous, nondecreasing and piecewise linear."""
    l = len(rows)
    f, fd = K @ a + b, K @ da + db
    o, od = f[rows], fd[rows]
    Kda = K @ da
    c0 = 2 * gA * (a @ Kda) + 2 * gI * s * (fd @ (M @ f))
    c1 = 2 * gA * (da @ Kda) + 2 * gI * s * (fd @ (M @ fd))

    def dphi(t):
        v = o + t * od
        return 2 * np.dot(np.where(y * v < 1, v - y, 0.0), od) / l + c0 + c1 * t

    if dphi(0.0) >= 0:
        return 0.0
    lo, hi = 0.0, 1.0
    while dphi(hi) < 0:
        hi *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if dphi(mid) < 0 else (lo, mid)
    return 0.5 * (lo + hi)


def preconditioned_gradient(K, M, rows, y, a, b, gA, gI, s):
    """(∇_b, g) of the module docstring, g = (2/l) I_E (f − y) + 2γ_A α + 2γ_I s M f."""
    f = K @ a + b
    o = f[rows]
    g = 2 * gI * s * (M @ f)
    g[rows] += 2 * np.where(y * o < 1, o - y, 0.0) / len(rows)
    return g.sum(), g + 2 * gA * a


def replay_pcg(K, M, rows, y, gA, gI, s, n_iter, init=None):
    """Seed 003 Algorithm 1 densely: d = −∇̂, exact line search, Polak–Ribière
    ρ = max(∇̂ᵀP(∇̂ − ∇̂_old) / ∇̂_oldᵀP∇̂_old, 0), P = blockdiag(1, K); the residual
    √(∇̂ᵀP∇̂ / ∇̂₀ᵀP∇̂₀) with ∇̂₀ at z = 0. Returns residuals, J and the raw ρ per iteration."""
    n = K.shape[0]
    a, b = (np.zeros(n), 0.0) if init is None else (np.array(init[0], float), float(init[1]))
    gb0, g0 = preconditioned_gradient(K, M, rows, y, np.zeros(n), 0.0, gA, gI, s)
    norm0 = gb0 * gb0 + g0 @ K @ g0
    gb, g = preconditioned_gradient(K, M, rows, y, a, b, gA, gI, s)
    gPg = gb * gb + g @ K @ g
    db, da = -gb, -g
    res, J, rhos = [], [dense_J(K, M, rows, y, a, b, gA, gI, s, "squared_hinge")], []
    for _ in range(n_iter):
        t = exact_step(K, M, rows, y, a, b, da, db, gA, gI, s)
        a, b = a + t * da, b + t * db
        gbn, gn = preconditioned_gradient(K, M, rows, y, a, b, gA, gI, s)
        gPgn = gbn * gbn + gn @ K @ gn
        rho = (gPgn - (gbn * gb + gn @ K @ g)) / gPg
        rhos.append(rho)
        da, db = -gn + max(rho, 0.0) * da, -gbn + max(rho, 0.0) * db
        g, gb, gPg = gn, gbn, gPgn
        res.append(np.sqrt(gPg / norm0))
        J.append(dense_J(K, M, rows, y, a, b, gA, gI, s, "squared_hinge"))
    return np.array(res), np.array(J), np.array(rhos)


# (the normalised Laplacian: with the free bias of the unnormalised one the iterations
# amplify round-off by ~10³ per step after ten or so, and no replay can follow them)
@pytest.mark.parametrize("seed,gA,gI,kernel", [(17, 1e-3, 0.01, "rbf"), (2, 1e-1, 0.1, "poly"),
                                               (12, 1e-3, 0.01, "rbf")])
def test_pcg_iterations_are_polak_ribiere_with_exact_line_searches(seed, gA, gI, kernel):
    P = problem(False, True, seed=seed, n=40, l=14, kernel=kernel)
    K, M, rows, s = P["K"], P["M"], P["rows"], P["s"]
    y = P["Y"][:, 0]
    res, J, rhos = replay_pcg(K, M, rows, y, gA, gI, s, 15)
    assert np.any(rhos < 0)            # the restart clip (ρ = 0) is exercised
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sol = kernel_pcg(P["op"].matvec, y, rows, P["Lmv"], n_samples=40, gamma_A=gA,
                         gamma_I=gI, scale=s, tol=1e-14, max_iter=15,
                         callback=lambda it, r: seen.append(r))
    assert sol.n_iter == 15
    np.testing.assert_allclose(seen, res, rtol=1e-6)
    np.testing.assert_allclose(sol.history[:, 0], J, rtol=1e-9)


@pytest.mark.parametrize("normalized,seed,gA,gI", [(True, 1, 1e-3, 0.01), (False, 0, 1e-2, 0.01),
                                                   (False, 1, 1e-2, 0.01)])
def test_newton_steps_are_exact_line_searches_towards_newton_points(normalized, seed, gA, gI):
    # seed 003 §3.1: the Newton point of the current error vectors E (the squared-loss
    # minimiser on E, here by the unreduced dense normal equations), an exact line search
    # towards it, until the Newton point's error vectors are E (within tol)
    P = problem(False, normalized, seed=seed, n=40, l=14)
    K, M, rows, s = P["K"], P["M"], P["rows"], P["s"]
    y = P["Y"][:, 0]
    n, l, tol = K.shape[0], len(rows), 1e-9
    Kt = np.hstack([K, np.ones((n, 1))])
    base = gI * s * Kt.T @ M @ Kt
    base[:n, :n] += gA * K
    a, b = np.zeros(n), 0.0
    J = [dense_J(K, M, rows, y, a, b, gA, gI, s, "squared_hinge")]
    for _ in range(50):
        act = y * (K @ a + b)[rows] < 1
        A = Kt[rows[act]]
        z = np.linalg.lstsq(base + A.T @ A / l, A.T @ y[act] / l, rcond=None)[0]
        yo = y * (Kt @ z)[rows]
        if np.all(yo[act] <= 1 + tol) and np.all(yo[~act] >= 1 - tol):
            a, b = z[:n], z[n]
            J.append(dense_J(K, M, rows, y, a, b, gA, gI, s, "squared_hinge"))
            break
        t = exact_step(K, M, rows, y, a, b, z[:n] - a, z[n] - b, gA, gI, s)
        a, b = a + t * (z[:n] - a), b + t * (z[n] - b)
        J.append(dense_J(K, M, rows, y, a, b, gA, gI, s, "squared_hinge"))
    assert len(J) >= 3                 # at least one line-searched step before the last
    sol = kernel_newton(K, y, rows, P["Lmv"], gamma_A=gA, gamma_I=gI, scale=s, tol=tol)
    assert sol.converged and sol.history.shape == (len(J), 1)
    np.testing.assert_allclose(sol.history[:, 0], J, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_pcg_warm_start_residual_is_relative_to_the_gradient_at_zero(fit_intercept):
    # tol and the reported residual are √(∇̂ᵀ∇ / ∇̂₀ᵀ∇₀) with ∇₀ the gradient at z = 0,
    # "also with init": a warm start near the solution stops on the same scale
    P = problem(False, True, seed=17, n=40, l=14)
    K, M, rows, s = P["K"], P["M"], P["rows"], P["s"]
    y = P["Y"][:, 0]
    assert y.sum() != 0                # the bias part of ∇₀ is not zero
    gA, gI = 1e-3, 0.01
    kw = dict(n_samples=40, gamma_A=gA, gamma_I=gI, scale=s, fit_intercept=fit_intercept)
    cold = kernel_pcg(P["op"].matvec, y, rows, P["Lmv"], tol=1e-3, max_iter=500, **kw)
    init = (cold.dual_coef, cold.intercept)
    seen = []
    warm = kernel_pcg(P["op"].matvec, y, rows, P["Lmv"], tol=1e-5, max_iter=500, init=init,
                      callback=lambda it, r: seen.append(r), **kw)

    def gradient(a, b):
        gb, g = preconditioned_gradient(K, M, rows, y, a, b, gA, gI, s)
        return (gb if fit_intercept else 0.0), g

    gb0, g0 = gradient(np.zeros(40), 0.0)
    norm0 = gb0 ** 2 + g0 @ K @ g0
    gb, g = gradient(warm.dual_coef[0], warm.intercept[0])
    rel = np.sqrt((gb ** 2 + g @ K @ g) / norm0)
    assert warm.converged and warm.stop_reason == "tol" and warm.n_iter >= 2
    assert warm.residual == pytest.approx(rel, rel=1e-6)
    assert seen[-1] == pytest.approx(rel, rel=1e-6) and rel <= 1e-5
    assert all(r > 1e-5 for r in seen[:-1])   # it stopped at the first iterate below tol
    # the start's residual on the same scale: the cold run's last, above 1e-5
    gbi, gi = gradient(cold.dual_coef[0], cold.intercept[0])
    assert cold.residual == pytest.approx(np.sqrt((gbi ** 2 + gi @ K @ gi) / norm0), rel=1e-6)


# -- ill-conditioned dense systems: checked, finished by PCG, never returned silently --------
def linear_kernel_problem(n=80, seed=1, scale=1e6):
    """The linear kernel on Gaussian rows scaled to norm ``scale``: well-posed in feature
    space (the (d+1)-variable problem has condition ~7), but K ~ scale² against γ_A l
    makes the (n+1)² system of the dense solvers hopeless in float64."""
    Xu, Lm, rows, y, s = unit_rows_problem(n, seed)
    K = (Xu * scale) @ (Xu * scale).T
    return Xu, K, Lm @ Lm, rows, y, s


def feature_space_minimum(Xu, M, rows, y, gA, c, loss):
    """min J of the linear kernel on the unit rows Xu, written in feature space:
    (1/l)ΣV + γ_A‖w‖² + c fᵀMf with f = Xu w + b (αᵀKα = ‖w‖² for w = Xuᵀα), by L-BFGS
    on the d + 1 variables — well conditioned whatever γ_A."""
    d, l = Xu.shape[1], len(rows)

    def fun(z):
        f = Xu @ z[:d] + z[d]
        o = f[rows]
        e = np.where(y * o < 1, o - y, 0.0) if loss == "squared_hinge" else o - y
        Mf = M @ f
        gf = 2 * c * Mf
        gf[rows] += 2 * e / l
        return (np.mean(e * e) + gA * z[:d] @ z[:d] + c * f @ Mf,
                np.r_[Xu.T @ gf + 2 * gA * z[:d], gf.sum()])

    return minimize(fun, np.zeros(d + 1), jac=True, method="L-BFGS-B",
                    options=dict(maxiter=10000, ftol=1e-16, gtol=1e-14)).fun


@pytest.mark.parametrize("scale,gA", [(1e6, 1e-4), (1.0, 1e-16)])
@pytest.mark.parametrize("loss", ["squared", "squared_hinge"])
def test_ill_conditioned_dense_solve_is_finished_by_pcg_at_the_minimum(scale, gA, loss):
    # rows of norm 1e6 under the linear kernel, or unit rows with γ_A = 1e-16: the same
    # problem (K ~ scale² acts as γ_A / scale²). The unchecked LU solve returned J up to
    # 0.2 above the minimum (half the labeled rows misclassified) with no warning
    # ('direct') or only "increase max_iter" ('newton').
    from scipy.linalg import LinAlgWarning

    Xu, K, M, rows, y, s = linear_kernel_problem(scale=scale)
    gI = 1.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sol = kernel_newton(K, y, rows, lambda F: M @ F, gamma_A=gA, gamma_I=gI, scale=s,
                            loss=loss)
    a, b = sol.dual_coef[0], sol.intercept[0]
    J = dense_J(K, M, rows, y, a, b, gA, gI, s, loss)
    J_min = feature_space_minimum(Xu, M, rows, y, gA * scale ** -2, gI * s, loss)
    assert abs(J - J_min) < 1e-8
    np.testing.assert_allclose(sol.decision[:, 0], K @ a + b, atol=1e-9)
    assert [w.category for w in caught] == [LinAlgWarning]
    assert "not accurate on this problem" in str(caught[0].message)
    assert "Solved by PCG" in str(caught[0].message)
    assert sol.converged and sol.stop_reason == "tol"
    from linlap.solvers.kernel_newton import relative_gradient

    kw = dict(gamma_A=gA, gamma_I=gI, scale=s, loss=loss)
    assert relative_gradient(K, y, rows, lambda F: M @ F, a, b, **kw)[0] <= 1e-6


@pytest.mark.parametrize("loss", ["squared", "squared_hinge"])
def test_pcg_kernel_scale_puts_the_bias_in_the_stopping_rule(loss):
    # K ~ 1e12: with P = blockdiag(1, K) the bias's gradient is nothing against the α
    # block's, and PCG stops at its tol with J 2e-5 above the minimum; on K/σ, σ the
    # mean of diag(K), it reaches the minimum, and returns α for K itself
    from linlap.solvers.kernel_pcg import kernel_scale

    Xu, K, M, rows, y, s = linear_kernel_problem(scale=1e6)
    gA, gI = 1e-4, 1.0
    J_min = feature_space_minimum(Xu, M, rows, y, gA * 1e-12, gI * s, loss)
    gaps = {}
    for sigma in (1.0, kernel_scale(np.diagonal(K))):
        sol = kernel_pcg(lambda V: K @ V, y, rows, lambda F: M @ F, n_samples=K.shape[0],
                         gamma_A=gA, gamma_I=gI, scale=s, loss=loss, kernel_scale=sigma)
        a, b = sol.dual_coef[0], sol.intercept[0]
        assert sol.stop_reason == "tol"
        np.testing.assert_allclose(sol.decision[:, 0], K @ a + b, rtol=1e-9, atol=1e-9)
        gaps[sigma] = dense_J(K, M, rows, y, a, b, gA, gI, s, loss) - J_min
        assert sol.history[-1, 0] == pytest.approx(gaps[sigma] + J_min, abs=1e-12)
    assert gaps[1.0] > 1e-6 and abs(gaps[1e12]) < 1e-10
    # a warm start is K's α: the scaled run starts at its own solution and stays there
    again = kernel_pcg(lambda V: K @ V, y, rows, lambda F: M @ F, n_samples=K.shape[0],
                       gamma_A=gA, gamma_I=gI, scale=s, loss=loss, kernel_scale=1e12,
                       init=(sol.dual_coef, sol.intercept))
    assert again.n_iter <= 1
    np.testing.assert_allclose(again.decision, sol.decision, rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="kernel_scale must be a finite number > 0"):
        kernel_pcg(lambda V: K @ V, y, rows, lambda F: M @ F, n_samples=K.shape[0],
                   gamma_A=gA, gamma_I=gI, scale=s, loss=loss, kernel_scale=0.0)


def test_dense_solve_that_pcg_cannot_finish_either_says_it_is_not_the_minimiser():
    # a Laplacian power of 100 (accepted by KNNGraph): ‖M‖ ~ 2^100. The unchecked closed
    # form returned a model worse than the zero model, silently.
    P = problem(False, True, seed=3, n=50, l=14)
    Lm = np.linalg.matrix_power(P["M"], 50)  # P["M"] = L², so this is L^100
    y = P["Y"][:, 0]
    kw = dict(gamma_A=1e-4, gamma_I=100.0, scale=P["s"], loss="squared")
    with pytest.warns(ConvergenceWarning, match="not the minimiser of J"):
        sol = kernel_newton(P["K"], y, P["rows"], lambda F: Lm @ F, **kw)
    assert not sol.converged and sol.stop_reason == "max_iter" and sol.n_iter == 1000
    # PCG from zero only descends: never worse than the zero model (J = mean y² = 1)
    J = dense_J(P["K"], Lm, P["rows"], y, sol.dual_coef[0], sol.intercept[0], kw["gamma_A"],
                kw["gamma_I"], P["s"], "squared")
    assert J <= 1.0


@pytest.mark.parametrize("loss", ["squared", "squared_hinge"])
def test_well_conditioned_dense_solves_pass_the_check_unchanged(loss):
    # relative_gradient is PCG's residual (σ = mean diag K = 1 for the RBF kernel); the
    # dense solves of ordinary problems are far below the threshold and warn nothing
    from linlap.solvers.kernel_newton import relative_gradient

    P = problem(False, True, seed=4)
    kw = dict(gamma_A=1e-3, gamma_I=0.3, scale=P["s"], loss=loss)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sol = kernel_newton(P["K"], P["Y"], P["rows"], P["Lmv"], **kw)
    assert sol.stop_reason == ("direct" if loss == "squared" else "newton")
    rel = relative_gradient(P["K"], P["Y"], P["rows"], P["Lmv"], sol.dual_coef,
                            sol.intercept, **kw)
    assert np.all(rel < 1e-10)
    pcg = kernel_pcg(P["op"].matvec, P["Y"], P["rows"], P["Lmv"], n_samples=70, tol=1e-4,
                     max_iter=500, **kw)
    rel = relative_gradient(P["K"], P["Y"], P["rows"], P["Lmv"], pcg.dual_coef,
                            pcg.intercept, **kw)
    # (PCG carries f and L^p f along its iterations: the last digits drift)
    assert rel.max() == pytest.approx(pcg.residual, rel=1e-2)
    if loss == "squared":
        # the bias is checked too: α with g = 0 (its n equations) at a bias off by 0.5 is
        # no minimiser, though the sum of g vanishes with g
        K, y, rows = P["K"], P["Y"][:, 0], P["rows"]
        n, l, c = K.shape[0], rows.size, 0.3 * P["s"]
        M = P["Lmv"](np.eye(n))
        E = np.zeros(n)
        E[rows] = 1.0
        b = sol.intercept[0] + 0.5
        target = np.zeros(n)
        target[rows] = y
        a = np.linalg.solve((2.0 / l) * E[:, None] * K + 2e-3 * np.eye(n) + 2 * c * M @ K,
                            -(2.0 / l) * E * (b - target) - 2 * c * M @ np.full(n, b))
        rel = relative_gradient(K, y, rows, P["Lmv"], a[None], np.array([b]), **kw)
        assert rel[0] > 1e-3


def test_pcg_checks_its_convergence_on_the_recomputed_gradient():
    # An ill-conditioned K (polynomial kernel on rows of norm 1e3, K ~ 1e12): the f, L^p f
    # and gradient PCG updates drift from K α + b, and the run used to end as 'tol' with
    # a recomputed relative gradient of 0.56 and a history J below the minimum. Now it
    # restarts from the recomputed gradient and, unable to meet tol=1e-9 in float64,
    # says so ('stalled', or 'max_iter' when the restarts keep finding descent); the
    # returned decision is K α + b whatever the stop.
    from linlap import KNNGraph
    from linlap.solvers.kernel_newton import relative_gradient
    from linlap.solvers.kernel_pcg import kernel_scale

    rng = np.random.default_rng(1)
    n = 80
    X = rng.standard_normal((n, 6))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    truth = (X @ rng.standard_normal(6) > 0).astype(int)
    rows = np.sort(np.concatenate([np.flatnonzero(truth == c)[:10] for c in (0, 1)]))
    t = np.where(truth[rows] == 1, 1.0, -1.0)
    g = KNNGraph(n_neighbors=6, power=2, algorithm="exact").fit(X)
    op = GramOperator(X * 1e3, kernel="poly", gamma=1.0, degree=2, coef0=1.0)
    K = op.dense()
    kw = dict(n_samples=n, gamma_A=1e-4, gamma_I=1.0, scale=g.scale_, loss="squared",
              kernel_scale=kernel_scale(op.diagonal()))
    with pytest.warns(ConvergenceWarning, match="stalled|max_iter"):
        sol = kernel_pcg(lambda V: K @ V, t, rows, g.laplacian_matvec, tol=1e-9,
                         max_iter=3000, **kw)
    assert sol.stop_reason in ("stalled", "max_iter") and not sol.converged
    # at a tol the recomputed gradient can meet, the same problem converges, verified,
    # and returns f = K α + b and its J
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sol = kernel_pcg(lambda V: K @ V, t, rows, g.laplacian_matvec, tol=1e-6,
                         max_iter=5000, **kw)
    assert sol.stop_reason == "tol"
    a, b = sol.dual_coef[0], sol.intercept[0]
    np.testing.assert_allclose(sol.decision[:, 0], K @ a + b, rtol=0,
                               atol=1e-12 * (np.abs(K) @ np.abs(a)).max())
    J = kernel_objective(lambda V: K @ V, t, rows, g.laplacian_matvec, sol.dual_coef,
                         sol.intercept, gamma_A=1e-4, gamma_I=1.0, scale=g.scale_,
                         loss="squared")
    np.testing.assert_allclose(sol.history[-1], J, rtol=1e-8)
    rel = relative_gradient(K, t, rows, g.laplacian_matvec, sol.dual_coef, sol.intercept,
                            gamma_A=1e-4, gamma_I=1.0, scale=g.scale_, loss="squared")
    assert np.max(rel) <= 1e-6
