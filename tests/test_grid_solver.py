"""Shifted CG and the LapRLS grid solver against dense direct solves; the shifted grid of
LapRLSClassifierCV against cold fits of LapRLSClassifier."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from linlap import KNNGraph, LapRLSClassifier
from linlap.model_selection import LapRLSClassifierCV
from linlap.solvers.grid import laprls_grid
from linlap.solvers.shifted_cg import shifted_cg

from reference import (blobs, dense_solution, random_design, random_laplacian,
                       semi_with_validation)


def spd(m, seed=0, cond=1e3):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((m, m)))
    return (Q * np.geomspace(1.0 / cond, 1.0, m)) @ Q.T


# -- shifted_cg ------------------------------------------------------------------------

@pytest.mark.parametrize("per_column", [False, True])
def test_shifted_cg_solves_every_shift(per_column):
    A = spd(50, seed=1)
    rng = np.random.default_rng(2)
    B = rng.standard_normal((50, 3))
    shifts = np.array([0.0, 1e-3, 0.1, 10.0])
    if per_column:   # one set of shifts per column, in any order
        shifts = np.column_stack([shifts, shifts[::-1] * 2, shifts + 0.5])
    X, info = shifted_cg(lambda P: A @ P, B, shifts, tol=1e-12, max_iter=500)
    S = np.broadcast_to(shifts[:, None] if shifts.ndim == 1 else shifts, (4, 3))
    for i in range(4):
        for j in range(3):
            ref = np.linalg.solve(A + S[i, j] * np.eye(50), B[:, j])
            np.testing.assert_allclose(X[i, :, j], ref, rtol=1e-8, atol=1e-10)
    assert info.converged.all() and not info.stopped.any()
    # larger shifts are better conditioned: they stop no later than the base
    if not per_column:
        assert np.all(np.diff(info.n_iter_shift, axis=0) <= 0)
    assert info.n_iter == info.n_iter_shift.max()


def test_shifted_cg_zero_rhs_monitor_and_max_iter():
    A = spd(30, seed=5, cond=1e6)
    B = np.zeros((30, 2))
    B[:, 1] = 1.0
    seen = []

    def monitor(t, X, active):
        seen.append(active.copy())
        stop = np.zeros_like(active)
        stop[0, 1] = t >= 3           # stop the base system of column 1 after 3 iterations
        return stop

    X, info = shifted_cg(lambda P: A @ P, B, [0.0, 1.0], tol=1e-12, max_iter=500,
                         monitor=monitor)
    np.testing.assert_array_equal(X[:, :, 0], 0.0)           # zero rhs: exact 0
    assert info.converged[:, 0].all() and not seen[0][:, 0].any()
    assert info.stopped[0, 1] and info.n_iter_shift[0, 1] == 3
    assert info.converged[1, 1]
    np.testing.assert_allclose(X[1, :, 1], np.linalg.solve(A + np.eye(30), B[:, 1]),
                               rtol=1e-8)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        shifted_cg(lambda P: A @ P, B, [0.0], tol=1e-14, max_iter=3)


def test_shifted_cg_bad_input():
    A = np.eye(3)
    with pytest.raises(ValueError, match="shape"):
        shifted_cg(lambda P: A @ P, np.ones(3), [0.0])
    with pytest.raises(ValueError, match="shifts"):
        shifted_cg(lambda P: A @ P, np.ones((3, 2)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="finite"):
        shifted_cg(lambda P: A @ P, np.ones((3, 1)), [np.nan])


# -- laprls_grid ------------------------------------------------------------------------

GA = [1e-3, 1e-2, 0.3]
GI = [0.1, 2.0, 50.0]


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("k", [1, 3])
def test_grid_matches_dense_solves(sparse, normalized, k):
    rng = np.random.default_rng(10 + k)
    n, d, l = 40, 12, 10
    X = random_design(n, d, rng, sparse=sparse)
    Lp = np.linalg.matrix_power(random_laplacian(n, rng, normalized=normalized), 2)
    labeled = rng.choice(n, l, replace=False)
    T = rng.choice([-1.0, 1.0], size=(l, k))
    s = 0.05
    coef, b, info = laprls_grid(X, T, labeled, lambda F: Lp @ F, gamma_A=GA, gamma_I=GI,
                                scale=s, tol=1e-12, max_iter=2000)
    assert coef.shape == (3, 3, k, d) and b.shape == (3, 3, k)
    assert info.converged.all()
    Xd = X.toarray() if sp.issparse(X) else X
    for j, gI in enumerate(GI):
        for i, gA in enumerate(GA):
            Z = dense_solution(Xd, Lp, labeled, T, gA, gI, s)
            np.testing.assert_allclose(coef[j, i], Z[:-1].T, rtol=1e-6, atol=1e-8)
            np.testing.assert_allclose(b[j, i], Z[-1], rtol=1e-6, atol=1e-8)


def test_grid_without_intercept():
    rng = np.random.default_rng(3)
    n, d, l = 30, 9, 8
    X = random_design(n, d, rng)
    Lp = random_laplacian(n, rng, normalized=True)
    labeled = rng.choice(n, l, replace=False)
    T = rng.choice([-1.0, 1.0], size=l)
    coef, b, _ = laprls_grid(X, T, labeled, lambda F: Lp @ F, gamma_A=GA, gamma_I=GI,
                             scale=0.1, fit_intercept=False, tol=1e-12, max_iter=2000)
    np.testing.assert_array_equal(b, 0.0)
    Xd = X.toarray()
    for j, gI in enumerate(GI):
        for i, gA in enumerate(GA):
            H = (Xd[labeled].T @ Xd[labeled] / l + gA * np.eye(d)
                 + gI * 0.1 * Xd.T @ Lp @ Xd)
            w = np.linalg.solve(H, Xd[labeled].T @ T / l)
            np.testing.assert_allclose(coef[j, i, 0], w, rtol=1e-6, atol=1e-8)


def test_grid_patience_stops_on_stable_labels():
    X, y = blobs(n=80, d=10, seed=4, noise=0.6)
    g = KNNGraph(n_neighbors=6).fit(X)
    rng = np.random.default_rng(4)
    perm = rng.permutation(80)
    lab, val = perm[:12], perm[12:40]
    T = np.where(y[lab] == 1, 1.0, -1.0)
    kw = dict(gamma_A=[1e-5, 1e-3], gamma_I=[1.0, 100.0], scale=g.scale_, tol=1e-12,
              max_iter=3000)
    full, bf, info_full = laprls_grid(X, T, lab, g.laplacian_matvec, **kw)
    early, be, info = laprls_grid(X, T, lab, g.laplacian_matvec, monitor_rows=X[val],
                                  patience=3, **kw)
    assert info.stopped.any() and info.n_iter < info_full.n_iter
    stopped = info.stopped
    # a stopped system's iterate is an exact CG iterate, so it is not the solution yet,
    # but every label of the monitored rows already agrees with it after `patience`
    # unchanged iterations in this easy problem
    for j in range(2):
        for i in range(2):
            if stopped[i, j]:
                assert info.n_iter_shift[i, j] < info_full.n_iter_shift[i, j]
            fe = X[val] @ early[j, i, 0] + be[j, i, 0]
            ff = X[val] @ full[j, i, 0] + bf[j, i, 0]
            assert np.mean(np.sign(fe) == np.sign(ff)) >= 0.95
    with pytest.raises(ValueError, match="monitor_rows"):
        laprls_grid(X, T, lab, g.laplacian_matvec, patience=3, **kw)
    for bad in (0, True, 2.0):  # (a bool or a float is no iteration count)
        with pytest.raises(ValueError, match="patience"):
            laprls_grid(X, T, lab, g.laplacian_matvec, monitor_rows=X[val], patience=bad,
                        **kw)
    for name, bad in [("tol", np.nan), ("tol", -1.0), ("max_iter", 0), ("max_iter", -5)]:
        with pytest.raises(ValueError, match=name):
            laprls_grid(X, T, lab, g.laplacian_matvec, **{**kw, name: bad})
    with pytest.raises(ValueError, match="gamma"):
        laprls_grid(X, T, lab, g.laplacian_matvec, gamma_A=[0.0], gamma_I=[1.0],
                    scale=g.scale_)
    with pytest.raises(ValueError, match="scale"):
        laprls_grid(X, T, lab, g.laplacian_matvec, gamma_A=[1.0], gamma_I=[1.0],
                    scale=np.nan)


# -- LapRLSClassifierCV(method='shifted') ------------------------------------------------

@pytest.mark.parametrize("n_classes,sparse", [(2, True), (3, True), (2, False)])
@pytest.mark.parametrize("validation", ["rows", "cv"])
def test_shifted_grid_equals_cold_fits(n_classes, sparse, validation):
    X, y = blobs(n=90, n_classes=n_classes, seed=6 + n_classes, noise=0.6, sparse=sparse)
    ys, yv = semi_with_validation(y, 18, 30, seed=n_classes)
    g = KNNGraph(n_neighbors=6).fit(X)
    grid = dict(gamma_A=[1e-4, 1e-2, 1e-1], gamma_I=[0.1, 10.0], graph=g, tol=1e-10,
                max_iter=5000)
    fit_kw = dict(validation=yv) if validation == "rows" else {}
    shifted = LapRLSClassifierCV(**grid, method="shifted", patience=None).fit(X, ys, **fit_kw)
    warm = LapRLSClassifierCV(**grid, method="warm").fit(X, ys, **fit_kw)
    np.testing.assert_allclose(shifted.cv_results_["mean_test_score"],
                               warm.cv_results_["mean_test_score"])
    np.testing.assert_allclose(shifted.cv_results_["mean_test_hinge"],
                               warm.cv_results_["mean_test_hinge"], rtol=1e-6, atol=1e-9)
    assert shifted.best_params_ == warm.best_params_
    np.testing.assert_allclose(shifted.coef_, warm.coef_, rtol=1e-6, atol=1e-9)
    if validation == "rows":
        val = yv != -1
        for k, p in enumerate(shifted.cv_results_["params"]):
            ref = LapRLSClassifier(gamma_A=p["gamma_A"], gamma_I=p["gamma_I"], graph=g,
                                   tol=1e-10, max_iter=5000).fit(X, ys)
            assert shifted.cv_results_["split0_test_score"][k] == pytest.approx(
                np.mean(ref.predict(X[val]) == yv[val]))


@pytest.mark.parametrize("sparse", [True, False])
def test_shifted_grid_with_patience_and_prior_list(sparse):
    X, y = blobs(n=90, seed=12, noise=0.6, sparse=sparse)
    ys, yv = semi_with_validation(y, 16, 30, seed=12)
    g = KNNGraph(n_neighbors=6).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = LapRLSClassifierCV(gamma_A=[1e-5, 1e-3], gamma_I=[1.0, 100.0], graph=g,
                                 class_prior=[None, [0.5, 0.5]], patience=3).fit(
            X, ys, validation=yv)
    res = clf.cv_results_
    assert len(res["params"]) == 8
    none = np.array([p["class_prior"] is None for p in res["params"]])
    # patience stops candidates early: fewer iterations than the same grid without it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        full = LapRLSClassifierCV(gamma_A=[1e-5, 1e-3], gamma_I=[1.0, 100.0], graph=g,
                                  class_prior=[None], patience=None).fit(
            X, ys, validation=yv).cv_results_["mean_n_iter"]
    assert np.all(res["mean_n_iter"][none] <= full)
    assert np.any(res["mean_n_iter"][none] < full)
    assert np.all(np.isfinite(res["mean_test_score"]))
    # the refit is a cold fit of the base estimator at the chosen setting
    bp = clf.best_params_
    ref = LapRLSClassifier(gamma_A=bp["gamma_A"], gamma_I=bp["gamma_I"], graph=g,
                           class_prior=bp["class_prior"]).fit(X, ys)
    np.testing.assert_allclose(clf.coef_, ref.coef_, rtol=1e-6, atol=1e-9)


# -- lapsvm_grid and LapSVMClassifierCV(method='shifted') --------------------------------

def test_lapsvm_grid_equals_newton_fits():
    from linlap.solvers.lapsvm_newton import lapsvm_newton
    from linlap.solvers.grid import lapsvm_grid

    X, y = blobs(n=80, d=10, n_classes=3, seed=21, noise=0.6)
    g = KNNGraph(n_neighbors=6).fit(X)
    lab = np.random.default_rng(21).choice(80, 18, replace=False)
    T = np.where(y[lab][:, None] == np.arange(3), 1.0, -1.0)
    gA, gI = [1e-4, 1e-2, 100.0], [1e-3, 1.0]
    coef, b, steps, info = lapsvm_grid(X, T, lab, g.laplacian_matvec, gamma_A=gA, gamma_I=gI,
                                       scale=g.scale_, tol=1e-10, max_iter=100,
                                       cg_max_iter=5000)
    # weak regularisation puts labeled rows beyond the margin (Newton refines those
    # points); strong regularisation keeps every y f < 1 (the LapRLS point is kept)
    assert steps[:, 0].max() > 0 and steps[:, 2].max() == 0
    Xl = X[lab]
    for j in range(2):
        for i in range(3):
            ref = lapsvm_newton(X, T, lab, g.laplacian_matvec, gamma_A=gA[i], gamma_I=gI[j],
                                scale=g.scale_, tol=1e-10, max_iter=100, cg_max_iter=5000)
            np.testing.assert_allclose(coef[j, i], ref.coef, rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(b[j, i], ref.intercept, rtol=1e-5, atol=1e-7)
            if steps[j, i] == 0:
                assert np.all(T * (Xl @ coef[j, i].T + b[j, i]) <= 1.0)
    with pytest.raises(ValueError, match="\\+1 or -1"):
        lapsvm_grid(X, 2 * T, lab, g.laplacian_matvec, gamma_A=gA, gamma_I=gI, scale=g.scale_)
    # refinements cut short are reported once for the grid (they were silent)
    with pytest.warns(ConvergenceWarning, match="lapsvm_grid: [0-9]+ of the 6"):
        lapsvm_grid(X, T, lab, g.laplacian_matvec, gamma_A=gA, gamma_I=gI, scale=g.scale_,
                    tol=1e-10, max_iter=100, cg_max_iter=3)


def test_lapsvm_cv_shifted_equals_warm():
    from linlap import LapSVMClassifier
    from linlap.model_selection import LapSVMClassifierCV

    X, y = blobs(n=90, seed=22, noise=0.6)
    ys, yv = semi_with_validation(y, 16, 30, seed=22)
    g = KNNGraph(n_neighbors=6).fit(X)
    grid = dict(gamma_A=[1e-4, 1e-1], gamma_I=[1e-3, 10.0], graph=g, tol=1e-10,
                max_iter=100)
    shifted = LapSVMClassifierCV(**grid, patience=None).fit(X, ys, validation=yv)
    warm = LapSVMClassifierCV(**grid, method="warm").fit(X, ys, validation=yv)
    np.testing.assert_allclose(shifted.cv_results_["mean_test_score"],
                               warm.cv_results_["mean_test_score"])
    np.testing.assert_allclose(shifted.cv_results_["mean_test_hinge"],
                               warm.cv_results_["mean_test_hinge"], rtol=1e-5, atol=1e-8)
    assert shifted.best_params_ == warm.best_params_
    assert isinstance(shifted.best_estimator_, LapSVMClassifier)
    np.testing.assert_allclose(shifted.coef_, warm.coef_, rtol=1e-6, atol=1e-9)
    # solver='tinv' / the hinge loss take the per-candidate route
    tinv = LapSVMClassifierCV(**grid, solver="tinv").fit(X, ys, validation=yv)
    assert tinv.cv_results_["mean_n_iter"].min() > 0


@pytest.mark.parametrize("cls", ["LapRLSClassifierCV", "LapSVMClassifierCV"])
def test_shifted_grid_warns_once_for_unconverged_candidates(cls):
    # the 'shifted' route scores every candidate from shared runs: those cut short by
    # the iteration limit are reported in one warning for the grid, not silently
    import linlap.model_selection as ms

    X, y = blobs(n=90, seed=22, noise=0.6)
    ys, yv = semi_with_validation(y, 16, 30, seed=22)
    g = KNNGraph(n_neighbors=6).fit(X)
    # (LapSVMClassifierCV's max_iter counts the Newton steps of the refined points)
    est = getattr(ms, cls)(gamma_A=[1e-6, 1e-3], gamma_I=[1e-3, 100.0], graph=g,
                           patience=None, max_iter=2 if cls == "LapRLSClassifierCV" else 1,
                           tol=1e-12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, ys, validation=yv)
    grid = [w for w in caught if issubclass(w.category, ConvergenceWarning)
            and "grid fits" in str(w.message)]
    assert len(grid) == 1 and "of the 4 grid fits" in str(grid[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        getattr(ms, cls)(gamma_A=[1e-3], gamma_I=[1.0], graph=g, patience=None,
                         tol=1e-6).fit(X, ys, validation=yv)


def test_shifted_cg_refuses_nonfinite_data_and_names_a_breakdown():
    from linlap.solvers.cg import NonFiniteOperatorError

    A = spd(20, seed=6, cond=1e3)
    B = np.ones((20, 1))
    with pytest.raises(ValueError, match="NaN or infinite"):
        shifted_cg(lambda P: A @ P, np.full((20, 1), np.nan), [0.0])
    # an operator that overflows: no silent zero solution, no 'increase max_iter'
    with pytest.raises(NonFiniteOperatorError, match="non-finite values at iteration 1"):
        shifted_cg(lambda P: np.full_like(P, np.inf), B, [0.0, 1.0])
    # an indefinite base (shift -2 on eigenvalues from 1): the systems stop before tol
    # with pᵀAp <= 0, and the warning says so
    D = np.diag(np.r_[np.ones(10), 3.0 * np.ones(10)])
    with pytest.warns(ConvergenceWarning, match=r"pᵀAp <= 0 before tol"):
        shifted_cg(lambda P: D @ P, np.ones((20, 1)), [-2.0, 1.0], tol=1e-12)


def test_batched_cg_refuses_nonfinite_data_and_misshapen_starts():
    from linlap.solvers import batched_cg

    A = spd(20, seed=7, cond=1e3)
    B = np.ones((20, 3))
    with pytest.raises(ValueError, match="NaN or infinite"):
        batched_cg(lambda P: A @ P, np.where(np.eye(20, 3) > 0, np.nan, 1.0))
    with pytest.raises(ValueError, match="X0 must have the shape of B"):
        batched_cg(lambda P: A @ P, B, np.ones((3, 20)))  # (a transposed start)
    with pytest.raises(ValueError, match="X0 has NaN"):
        batched_cg(lambda P: A @ P, B, np.full((20, 3), np.nan))
    with pytest.raises(ValueError, match="R0 must have the shape of B"):
        batched_cg(lambda P: A @ P, B, np.zeros((20, 3)), R0=np.ones(60))
    D = np.diag(np.r_[np.ones(10), -np.ones(10)])  # indefinite
    with pytest.warns(ConvergenceWarning, match=r"pᵀAp <= 0 before tol: A is not positive"):
        batched_cg(lambda P: D @ P, np.ones(20), tol=1e-12)
