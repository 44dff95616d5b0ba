"""EMRClassifier and its solver pieces: the μ step against a brute-force simplex
minimiser, the combined operator and the alternation against dense references."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from linlap import (EMRClassifier, KernelLapSVMClassifier, KNNGraph, LapRLSClassifier,
                    LapSVMClassifier)
from linlap.datasets import mask_labels
from linlap.estimators.emr import candidate_graphs
from linlap.solvers.emr import (combined_laplacian_matvec, laplacian_quadratic_forms,
                                mu_objective, pair_update, update_mu)

from reference import blobs, brute_force_mu, dense_solution


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_pairwise_update_equals_brute_force(m):
    rng = np.random.default_rng(m)
    for trial in range(30):
        s = rng.exponential(size=m) * rng.choice([0.01, 1, 100])
        gamma_R = float(rng.choice([0.0, 1e-3, 0.1, 1.0, 10.0])) * s.mean()
        start = rng.dirichlet(np.ones(m))
        mu = update_mu(s, gamma_R, start)
        ref = brute_force_mu(s, gamma_R)
        assert mu.sum() == pytest.approx(1.0) and np.all(mu >= 0)
        np.testing.assert_allclose(mu, ref, atol=1e-9)
        # never worse than where it started
        assert mu_objective(mu, s, gamma_R) <= mu_objective(start, s, gamma_R) + 1e-12


def test_pair_update_is_eq10():
    # interior case: μ_i = (2γ_R(μ_i+μ_j) + s_j − s_i)/(4γ_R)
    a, b = pair_update(0.3, 0.2, 1.0, 1.2, 1.0)
    assert a == pytest.approx((2 * 0.5 + 0.2) / 4) and a + b == pytest.approx(0.5)
    # boundary cases of eq. 10
    assert pair_update(0.3, 0.2, 5.0, 0.0, 1.0) == (0.0, 0.5)
    assert pair_update(0.3, 0.2, 0.0, 5.0, 1.0) == (0.5, 0.0)
    assert pair_update(0.3, 0.2, 1.0, 1.0, 0.0) == (0.3, 0.2)
    # a subnormal γ_R: the γ_R → 0 answer without an overflow (was numpy's warning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for gamma_R in (1e-310, 5e-324):
            assert pair_update(np.float64(0.3), np.float64(0.2), np.float64(1.0),
                               np.float64(1.2), gamma_R) == (0.5, 0.0)
            assert pair_update(np.float64(0.3), np.float64(0.2), np.float64(1.0),
                               np.float64(1.0), gamma_R) == (0.25, 0.25)
        np.testing.assert_allclose(update_mu(np.array([1.0, 1.2, 3.0]), 1e-310), [1, 0, 0])


def test_update_mu_limits():
    s = np.array([3.0, 1.0, 2.0, 5.0])
    np.testing.assert_allclose(update_mu(s, 1e12), np.full(4, 0.25), atol=1e-9)
    np.testing.assert_array_equal(update_mu(s, 0.0), [0, 1, 0, 0])
    with pytest.raises(ValueError):
        update_mu(s, -1.0)


@pytest.fixture(scope="module")
def data():
    X, y = blobs(n=70, d=10, n_classes=2, seed=3, sparse=True)
    return X, y


def _grid_graphs(X):
    graphs, _ = candidate_graphs(X, {"n_neighbors": [4, 8], "power": [1, 2],
                                     "normalized": [True, False]})
    return graphs


def _recording_laprls(log, *attributes):
    """A LapRLSClassifier class whose fits append ``attributes`` to ``log`` (one value, or
    a tuple of several): what EMR's f steps were run with."""
    class Recording(LapRLSClassifier):
        def fit(self, X, y):
            super().fit(X, y)
            values = tuple(getattr(self, a) for a in attributes)
            log.append(values[0] if len(values) == 1 else values)
            return self

    return Recording


def _check_schedule(tols, base_tol):
    """A LapRLS base's f-step tolerances: the first (cold) at 10× the loose tol, at most
    1e-2; then the loose tol while μ moves, the base's tol from the step μ first settled
    on (each checked by one more μ step) — every later step at it too, unless the base's
    tol is the looser (above 1e-3) — and the last at the base's tol."""
    loose = min(10 * base_tol, 1e-3)
    assert tols[0] == min(10 * loose, 1e-2), tols
    assert tols[-1] == base_tol and set(tols[1:]) <= {loose, base_tol}, tols
    if base_tol <= loose:  # never back to the looser tol after a step at the base's
        assert set(tols[tols.index(base_tol):]) == {base_tol}, tols


def test_subgraph_equals_fit_at_smaller_k(data):
    X, _ = data
    g = KNNGraph(n_neighbors=10, weight="heat", power=2).fit(X)
    for k, weight, sym in [(4, "heat", "union"), (7, "cosine", "mutual"), (10, "binary", "union")]:
        sub = g.subgraph(k, weight=weight, symmetrize=sym)
        ref = KNNGraph(n_neighbors=k, weight=weight, symmetrize=sym, power=2).fit(X)
        np.testing.assert_array_equal(sub.neighbors_, ref.neighbors_)
        np.testing.assert_allclose(sub.adjacency_.toarray(), ref.adjacency_.toarray(),
                                   atol=1e-12)
        assert sub.scale_ == pytest.approx(ref.scale_)
        z = np.random.default_rng(0).standard_normal((X.shape[0], 2))
        np.testing.assert_allclose(sub.laplacian_matvec(z), ref.laplacian_matvec(z),
                                   atol=1e-10)
    assert g.n_neighbors == 10 and g.subgraph(4).n_neighbors == 4
    with pytest.raises(ValueError):
        g.subgraph(11)


def test_grid_is_one_search_and_matches_separate_fits(data):
    X, _ = data
    graphs = _grid_graphs(X)
    assert len(graphs) == 8
    # one W per k, shared by its Laplacian views
    assert len({id(g.adjacency_) for g in graphs}) == 2
    for g in graphs:
        ref = KNNGraph(n_neighbors=g.n_neighbors, power=g.power,
                       normalized=g.normalized).fit(X)
        np.testing.assert_allclose(g.laplacian_matrix().toarray(),
                                   ref.laplacian_matrix().toarray(), atol=1e-12)


def test_combined_matvec_and_terms(data):
    from linlap.estimators.emr import _group_parts

    X, _ = data
    graphs = _grid_graphs(X)
    parts = _group_parts(graphs)
    groups = [(g.laplacian_matvec, pairs) for g, pairs in parts]
    assert len(groups) == 4  # (k, normalised) pairs; the powers share passes
    rng = np.random.default_rng(1)
    w = rng.random(len(graphs))
    w[2] = 0.0
    F = rng.standard_normal((X.shape[0], 3))
    ref = sum(wk * (g.laplacian_matrix() @ F) for wk, g in zip(w, graphs))
    sums = [(g.laplacian_power_sum, pairs) for g, pairs in parts]
    np.testing.assert_allclose(combined_laplacian_matvec(sums, w)(F), ref, atol=1e-10)
    out, work = np.empty_like(F), np.empty(F.size)
    combined_laplacian_matvec(sums, w)(F, out=out, work=work)
    np.testing.assert_allclose(out, ref, atol=1e-10)
    np.testing.assert_array_equal(combined_laplacian_matvec(sums, np.zeros(len(graphs)))(F),
                                  np.zeros_like(F))
    Fc = F + 1j * F[::-1]  # complex: complex128 out, the imaginary part kept
    refc = sum(wk * (g.laplacian_matrix() @ Fc) for wk, g in zip(w, graphs))
    gotc = combined_laplacian_matvec(sums, w)(Fc)
    assert gotc.dtype == np.complex128
    np.testing.assert_allclose(gotc, refc, atol=1e-10)
    calls = []  # one call per group with weight: its powers share one chain of passes
    counted = [(lambda V, coefs, step=step, **kw: calls.append(sorted(coefs)) or step(
        V, coefs, **kw), pairs) for step, pairs in sums]
    combined_laplacian_matvec(counted, w)(F)
    assert len(calls) == len(sums)
    forms = laplacian_quadratic_forms(groups, len(graphs), F)
    ref = [np.sum(F * (g.laplacian_matrix() @ F)) for g in graphs]
    np.testing.assert_allclose(forms, ref, rtol=1e-10)
    calls = []  # half the passes: ⌈max p / 2⌉ per group
    counted = [(lambda V, step=step: calls.append(1) or step(V), pairs)
               for step, pairs in groups]
    laplacian_quadratic_forms(counted, len(graphs), F)
    assert len(calls) == sum((max(p for _, p in pairs) + 1) // 2 for _, pairs in groups)
    g8 = [(groups[0][0], [(0, 8), (1, 5), (2, 1)])]  # odd, even and 1: 4 passes
    calls.clear()
    forms = laplacian_quadratic_forms([(lambda V: calls.append(1) or g8[0][0](V),
                                        g8[0][1])], 3, F)
    L = graphs[0].with_laplacian(power=1).laplacian_matrix().toarray()
    np.testing.assert_allclose(
        forms, [np.sum(F * (np.linalg.matrix_power(L, p) @ F)) for p in (8, 5, 1)],
        rtol=1e-10)
    assert len(calls) == 4


def _dense_check(emr, X, ys, gamma_A, gamma_I):
    """The final f is the dense LapRLS minimiser for the combined Laplacian at mu_."""
    Xd = X.toarray() if sp.issparse(X) else X
    lab = np.flatnonzero(ys != -1)
    T = np.where(ys[lab] == emr.classes_[1], 1.0, -1.0)[:, None]
    Lc = sum(mu * g.scale_ * g.laplacian_matrix().toarray()
             for mu, g in zip(emr.mu_, emr.graphs_))
    Z = dense_solution(Xd, Lc, lab, T, gamma_A, gamma_I, 1.0)
    np.testing.assert_allclose(emr.coef_[0], Z[:-1, 0], rtol=1e-5, atol=1e-7)
    # the recorded J is the documented joint objective at (f, mu_)
    f = Xd @ Z[:-1, 0] + Z[-1, 0]
    S = np.array([gamma_I * g.scale_ * f @ g.laplacian_matrix().toarray() @ f
                  for g in emr.graphs_])
    J = (np.mean((T[:, 0] - f[lab]) ** 2) + gamma_A * Z[:-1, 0] @ Z[:-1, 0]
         + emr.mu_ @ S + emr.gamma_R_ * emr.mu_ @ emr.mu_)
    np.testing.assert_allclose(emr.smoothness_, S, rtol=1e-5)
    assert emr.objective_[-1] == pytest.approx(J, rel=1e-6)


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("gamma_R", ["auto", 0.05])
def test_objective_never_increases_and_matches_dense(data, sparse, gamma_R):
    X, y = data
    X = X if sparse else X.toarray()
    ys = mask_labels(y, 10, random_state=0)
    gamma_A, gamma_I = 1e-2, 5.0
    base = LapRLSClassifier(gamma_A=gamma_A, gamma_I=gamma_I, tol=1e-12, max_iter=5000)
    emr = EMRClassifier(base, candidates=_grid_graphs(X), gamma_R=gamma_R, tol=1e-10,
                        max_iter=15).fit(X, ys)
    J = np.asarray(emr.objective_)
    assert J.size >= 3 and emr.n_iter_ >= 2
    assert np.all(np.diff(J) <= 1e-10 * np.abs(J[:-1])), J
    assert J[-1] < J[0]
    assert emr.mu_.shape == (8,) and emr.mu_.sum() == pytest.approx(1.0)
    assert not np.allclose(emr.mu_, 1 / 8)
    _dense_check(emr, X, ys, gamma_A, gamma_I)



def test_verbose_reports_every_f_step_from_the_first(data, capsys):
    """One line per f step, the first (uniform μ) included (it started at iteration 2),
    with the objective after that step: J's trace at the f steps."""
    X, y = data
    ys = mask_labels(y, 10, random_state=0)
    emr = EMRClassifier(candidates=_grid_graphs(X), verbose=1, max_iter=6).fit(X, ys)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("[EMR]")]
    assert [int(ln.split()[2].rstrip(":")) for ln in lines] == \
        list(range(1, emr.n_iter_ + 1))
    assert "mu = [0.125" in lines[0]
    J = [float(ln.split("J = ")[1].split(",")[0]) for ln in lines]
    np.testing.assert_allclose(J, emr.objective_[::2], rtol=1e-5)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_auto_gamma_R_is_the_mean_smoothness_of_the_uniform_fit(n_classes):
    # gamma_R='auto' (seed 002 §4): γ_R = (1/m) Σ_k S_k(f₀), f₀ the first f (uniform μ),
    # S_k(f) = γ_I s_k Σ_c f_cᵀ L_k^{p_k} f_c; f₀ here by the dense normal equations
    X, y = blobs(n=70, d=10, n_classes=n_classes, seed=5, sparse=True)
    ys = mask_labels(y, 12, random_state=5)
    graphs = _grid_graphs(X)
    m = len(graphs)
    gamma_A, gamma_I = 1e-2, 5.0
    base = LapRLSClassifier(gamma_A=gamma_A, gamma_I=gamma_I, tol=1e-12, max_iter=5000)
    emr = EMRClassifier(base, candidates=graphs, gamma_R="auto", tol=1e-10,
                        max_iter=3).fit(X, ys)
    Xd = X.toarray()
    lab = np.flatnonzero(ys != -1)
    classes = np.unique(ys[lab])
    T = np.where(ys[lab][:, None] == classes, 1.0, -1.0)
    T = T[:, 1:] if n_classes == 2 else T
    Ls = [g.laplacian_matrix().toarray() for g in graphs]
    uniform = sum(g.scale_ * L for g, L in zip(graphs, Ls)) / m
    Z = dense_solution(Xd, uniform, lab, T, gamma_A, gamma_I, 1.0)
    F = Xd @ Z[:-1] + Z[-1]
    S0 = np.array([gamma_I * g.scale_ * np.sum(F * (L @ F)) for g, L in zip(graphs, Ls)])
    assert emr.gamma_R_ == pytest.approx(S0.mean(), rel=1e-6)
    # and the first recorded J is the joint objective at (f₀, uniform μ)
    J0 = (np.sum((T - F[lab]) ** 2) / lab.size + gamma_A * np.sum(Z[:-1] ** 2)
          + S0.mean() + S0.mean() / m)
    assert emr.objective_[0] == pytest.approx(J0, rel=1e-6)

@pytest.mark.parametrize("sparse", [True, False])
def test_lapsvm_objective_never_increases(data, sparse):
    X, y = data
    X = X if sparse else X.toarray()
    ys = mask_labels(y, 12, random_state=1)
    base = LapSVMClassifier(gamma_A=1e-2, gamma_I=5.0, tol=1e-10)
    emr = EMRClassifier(base, candidates=_grid_graphs(X), tol=1e-10, max_iter=8).fit(X, ys)
    J = np.asarray(emr.objective_)
    assert np.all(np.diff(J) <= 1e-8 * np.abs(J[:-1])), J
    assert J[-1] < J[0]


@pytest.mark.parametrize("sparse", [True, False])
def test_gamma_R_limits(data, sparse):
    X, y = data
    X = X if sparse else X.toarray()
    ys = mask_labels(y, 10, random_state=2)
    graphs = _grid_graphs(X)
    base = LapRLSClassifier(gamma_A=1e-2, gamma_I=5.0, tol=1e-10)
    big = EMRClassifier(base, candidates=graphs, gamma_R=1e9).fit(X, ys)
    np.testing.assert_allclose(big.mu_, np.full(8, 1 / 8), atol=1e-6)
    zero = EMRClassifier(base, candidates=graphs, gamma_R=0.0, max_iter=20).fit(X, ys)
    k = int(np.argmin(zero.smoothness_))
    np.testing.assert_array_equal(zero.mu_, np.eye(8)[k])
    # every candidate's smoothness is positive: the weight really is on the smoothest
    assert np.all(zero.smoothness_ > 0) and np.sum(zero.smoothness_ == zero.smoothness_[k]) == 1


@pytest.mark.parametrize("sparse", [True, False])
def test_informative_graph_gets_the_weight(sparse):
    # three classes; one graph built on the class structure, three on noise features
    X, y = blobs(n=90, d=12, n_classes=3, seed=5, sparse=sparse, noise=0.2)
    rng = np.random.default_rng(0)
    good = KNNGraph(n_neighbors=6, power=1).fit(X)
    noise = [KNNGraph(n_neighbors=6, power=1).fit(np.abs(rng.standard_normal((90, 5))))
             for _ in range(3)]
    ys = mask_labels(y, 3, per_class=True, random_state=0)
    base = LapRLSClassifier(gamma_A=1e-3, gamma_I=10.0, tol=1e-8)
    for order in ([good] + noise, noise + [good]):
        emr = EMRClassifier(base, candidates=order).fit(X, ys)
        i = order.index(good)
        assert emr.mu_.shape == (4,)  # one μ shared by the three classes
        assert emr.mu_[i] > 0.6, emr.mu_
        assert emr.mu_[i] == emr.mu_.max()
        # EMR beats the uniform mixture on the unlabeled rows
        unif = EMRClassifier(base, candidates=order, gamma_R=1e9).fit(X, ys)
        unl = ys == -1
        assert np.mean(emr.transduction_[unl] == y[unl]) >= \
            np.mean(unif.transduction_[unl] == y[unl])


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("make", [
    lambda g: LapRLSClassifier(gamma_A=1e-3, gamma_I=3.0, graph=g, tol=1e-10),
    lambda g: LapSVMClassifier(gamma_A=1e-3, gamma_I=3.0, graph=g, tol=1e-10),
    lambda g: LapSVMClassifier(gamma_A=1e-3, gamma_I=3.0, graph=g, solver="tinv",
                               loss="hinge", tol=1e-8, max_iter=100000),
])
def test_one_candidate_equals_base(sparse, make):
    X, y = blobs(n=60, d=8, n_classes=3, seed=1, sparse=sparse)
    ys = mask_labels(y, 12, random_state=0)
    g = KNNGraph(n_neighbors=5, power=2).fit(X)
    base = make(g).fit(X, ys)
    emr = EMRClassifier(make(None), candidates=[g]).fit(X, ys)
    np.testing.assert_array_equal(emr.mu_, [1.0])
    assert emr.n_iter_ == 1
    np.testing.assert_allclose(emr.coef_, base.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(emr.intercept_, base.intercept_, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(emr.predict(X), base.predict(X))
    np.testing.assert_array_equal(emr.transduction_, base.transduction_)


def test_kernel_base_one_candidate():
    from linlap import KernelLapRLSClassifier

    X, y = blobs(n=50, d=6, seed=2)
    ys = mask_labels(y, 8, random_state=0)
    g = KNNGraph(n_neighbors=5, power=1).fit(X)
    base = KernelLapRLSClassifier(gamma_I=1.0, graph=g, solver="direct").fit(X, ys)
    emr = EMRClassifier(KernelLapRLSClassifier(gamma_I=1.0, solver="direct"),
                        candidates=[g]).fit(X, ys)
    np.testing.assert_allclose(emr.decision_function(X), base.decision_function(X),
                               rtol=1e-6, atol=1e-8)
    emr2 = EMRClassifier(KernelLapRLSClassifier(gamma_I=1.0, solver="direct"),
                         candidates={"n_neighbors": [3, 6]}).fit(X, ys)
    assert emr2.mu_.shape == (2,) and np.all(np.diff(emr2.objective_) <= 1e-8)


def test_kernel_dual_base_objective_is_the_hinge():
    # KernelLapSVMClassifier(solver='dual') fits the hinge, not its square: EMR's J too
    X, y = blobs(n=50, d=6, seed=2)
    ys = mask_labels(y, 8, random_state=0)
    g = KNNGraph(n_neighbors=5, power=1).fit(X)
    emr = EMRClassifier(KernelLapSVMClassifier(gamma_I=1.0, solver="dual"),
                        candidates=[g]).fit(X, ys)
    est = emr.estimator_
    lab = ys != -1
    T = np.where(ys[lab] == est.classes_[1], 1.0, -1.0)
    F = est.decision_function(X)
    alpha_K_alpha = float(est.dual_coef_.ravel() @ (F - est.intercept_[0]))
    S = est.gamma_I * g.scale_ * float(F @ (g.laplacian_matrix() @ F))
    J = np.mean(np.maximum(0.0, 1.0 - T * F[lab])) + est.gamma_A * alpha_K_alpha + 2 * S
    # (one candidate: μ = 1, and γ_R 'auto' = S)
    assert emr.objective_[0] == pytest.approx(J, rel=1e-9)
    assert np.mean(np.maximum(0.0, 1.0 - T * F[lab])) != pytest.approx(
        np.mean(np.maximum(0.0, 1.0 - T * F[lab]) ** 2), rel=1e-3)


def test_conventions_and_validation(data):
    X, y = data
    ys = mask_labels(y, 10, random_state=0).astype(object)
    ys[ys == -1] = None
    ys[ys == 0], ys[ys == 1] = "a", "b"
    emr = EMRClassifier(LapRLSClassifier(unlabeled=None),
                        candidates={"n_neighbors": [3, 5]}).fit(X, ys)
    assert set(emr.classes_) == {"a", "b"} and emr.predict(X).dtype == object
    assert clone(emr).get_params()["candidates"] == {"n_neighbors": [3, 5]}
    again = pickle.loads(pickle.dumps(emr))
    np.testing.assert_allclose(again.decision_function(X), emr.decision_function(X))
    ys = mask_labels(y, 10, random_state=0)
    for bad in [dict(gamma_R=-1.0), dict(gamma_R="big"), dict(tol=0), dict(tol=1.0),
                dict(max_iter=0),
                dict(estimator=KNNGraph()), dict(candidates={"alpha": [1]}),
                dict(candidates=[]), dict(candidates={"n_neighbors": [200]}),
                dict(candidates=[KNNGraph(n_neighbors=3).fit(X[:30])])]:
        with pytest.raises(ValueError):
            EMRClassifier(**bad).fit(X, ys)
    # the base's gamma_I: refused before the search, with no warning first (a few-unlabeled
    # warning about 'auto' preceded the refusal of 'auto'); 0 leaves mu nothing to weigh
    y_most = mask_labels(y, 60, random_state=0)  # 10 unlabeled rows of 70
    for gamma_I, match in (("auto", "a number or 'scaled', not 'auto'"),
                           (0, "gamma_I > 0: with no graph term")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match=match):
                EMRClassifier(LapRLSClassifier(gamma_I=gamma_I),
                              candidates={"power": [1, 2]}).fit(X, y_most)
    # a fitted search graph with enough neighbours is reused, not rebuilt
    g = KNNGraph(n_neighbors=6).fit(X)
    emr = EMRClassifier(graph=g, candidates={"n_neighbors": [3, 6]}).fit(X, ys)
    assert emr.fit_time_["search"] == 0.0 and emr.graphs_[1].adjacency_ is g.adjacency_


def test_unfitted_list_shares_one_search(data):
    X, _ = data
    specs = [KNNGraph(n_neighbors=3, power=1), KNNGraph(n_neighbors=6, power=2),
             KNNGraph(n_neighbors=4, weight="binary", normalized=False)]
    graphs, t = candidate_graphs(X, specs)
    assert t > 0 and all(s.n_neighbors == g.n_neighbors for s, g in zip(specs, graphs))
    assert not hasattr(specs[0], "adjacency_")  # the given graphs are not modified
    for g in graphs:  # every neighbour list is a view of the one k = 6 search
        assert np.shares_memory(g.neighbors_, graphs[1].neighbors_)
        ref = clone(specs[graphs.index(g)]).fit(X)
        np.testing.assert_allclose(g.laplacian_matrix().toarray(),
                                   ref.laplacian_matrix().toarray(), atol=1e-12)


def test_default_candidates_on_few_rows_and_graph_checked():
    from linlap.datasets import make_text_corpus

    X, y = make_text_corpus(5, n_features=300, random_state=0)
    ys = mask_labels(y, 4, random_state=0)
    emr = EMRClassifier(max_iter=2).fit(X, ys)  # k capped at 4, as LapRLSClassifier()'s
    assert all(g.n_neighbors == 4 for g in emr.graphs_)
    with pytest.raises(ValueError, match="graph"):
        EMRClassifier(candidates=[KNNGraph(n_neighbors=5)], graph="not a graph").fit(X, ys)


@pytest.mark.parametrize("m, max_iter, flags", [
    # the 1st μ step reaches eq. 4's minimiser, the 2nd lowers J by nothing: μ has
    # settled, and the f step after it is the final one
    (3, 10, [False, False, True]),
    (3, 2, [False, True]),          # the budget's last step is the final one
    (3, 1, [True]),
    (1, 10, [True]),                # one candidate: the base fit itself
])
def test_alternation_is_loose_until_its_final_step(m, max_iter, flags):
    # S fixed: the first μ step reaches the minimiser of eq. 4, the next changes nothing
    from linlap.solvers.emr import emr_alternate

    calls = []

    def solve_f(mu, previous, final):
        calls.append((mu.copy(), final))
        return len(calls), 0.0

    S = np.arange(1.0, m + 1.0)
    res = emr_alternate(solve_f, lambda result: S, m, gamma_R=0.5, tol=1e-12,
                        max_iter=max_iter)
    assert [final for _, final in calls] == flags
    assert res.n_iter == len(flags) <= max_iter and res.solution == len(flags)
    assert res.converged == (m == 1 or flags == [False, False, True])  # not on the budget
    if len(calls) > 1:  # the final step is at the final μ
        np.testing.assert_array_equal(calls[-1][0], res.mu)
    assert np.all(np.diff(res.objective) <= 0)
    with pytest.raises(ValueError, match="gamma_R"):  # before any f step
        emr_alternate(solve_f, lambda result: S, m, gamma_R="big")
    assert len(calls) == len(flags)


def test_f_steps_loose_while_mu_moves_and_the_base_tol_at_the_end(data):
    # the steps before the last at LOOSE_TOL_FACTOR × the base's tol, the last at its tol;
    # the final f is the base's minimiser at mu_ to that tol (the dense check)
    from linlap.estimators.emr import LOOSE_TOL_FACTOR

    tols = []
    Recording = _recording_laprls(tols, "tol")

    X, y = data
    ys = mask_labels(y, 10, random_state=0)
    gamma_A, gamma_I = 1e-2, 5.0
    emr = EMRClassifier(Recording(gamma_A=gamma_A, gamma_I=gamma_I, tol=1e-9,
                                  max_iter=5000),
                        candidates=_grid_graphs(X), tol=1e-8, max_iter=15).fit(X, ys)
    assert len(tols) == emr.n_iter_ >= 3
    _check_schedule(tols, 1e-9)
    assert LOOSE_TOL_FACTOR * 1e-9 in tols
    assert emr.estimator_.tol == 1e-9 and emr.estimator.tol == 1e-9
    _dense_check(emr, X, ys, gamma_A, gamma_I)


def test_fitted_graph_with_fewer_neighbours_than_the_grid_is_refused():
    X, _ = blobs(n=40, seed=1)
    g = KNNGraph(n_neighbors=5).fit(X)
    with pytest.raises(ValueError, match=r"n_neighbors=8 but the fitted search graph has "
                                         r"only 5: pass graph= fitted with n_neighbors >= 8"):
        candidate_graphs(X, {"n_neighbors": [4, 8]}, graph=g)


def test_f_steps_at_most_1e3_while_mu_moves_and_base_tol_checked_first(data):
    X, y = data
    ys = mask_labels(y, 10, random_state=0)
    tols = []
    Recording = _recording_laprls(tols, "tol")

    for tol in (1e-5, 1e-4, 0.05, 0.1, 0.5):  # min(10 tol, 1e-3) while μ moves, then tol
        tols.clear()
        emr = EMRClassifier(Recording(tol=tol), candidates={"power": [1, 2]}).fit(X, ys)
        assert emr.estimator_.tol == tol and emr.n_iter_ >= 2
        _check_schedule(tols, tol)
    for bad in (-1, 1.0, "x", True):  # its own value, before any search
        with pytest.raises(ValueError, match=f"tol must be a number strictly between 0 "
                                             f"and 1, got {bad!r}"):
            EMRClassifier(LapRLSClassifier(tol=bad), graph=KNNGraph(n_neighbors=3)).fit(X, ys)


def test_a_loose_base_tol_does_not_stall_mu():
    # a base tol of 1e-2 once solved the f steps to 0.1: a step meeting that tol without
    # moving f after μ moved ended the alternation early, μ off by 0.08 here
    from linlap.datasets import make_text_corpus
    from linlap.estimators.emr import LOOSE_TOL_MAX

    X, y = make_text_corpus(1200, random_state=0)[:2]
    ys = mask_labels(y, 20, random_state=0)
    g = KNNGraph(n_neighbors=20, algorithm="exact").fit(X)
    tols = []
    Recording = _recording_laprls(tols, "tol")

    tight = EMRClassifier(LapRLSClassifier(tol=1e-6), graph=g).fit(X, ys)
    loose = EMRClassifier(Recording(tol=1e-2), graph=g).fit(X, ys)
    assert tight.mu_[3] > 0.5
    np.testing.assert_allclose(loose.mu_, tight.mu_, atol=0.01)
    _check_schedule(tols, 1e-2)
    assert LOOSE_TOL_MAX in tols


def test_unconverged_f_steps_while_mu_moves_are_one_warning_in_emr_terms(data):
    # a base whose max_iter cannot reach EMR's 1e-3 while μ moves (its own tol is looser):
    # one warning naming the tol EMR asked for, not one per step advising to loosen tol —
    # and no exception under an "error" filter before the last step, the base's own fit
    # (a LapRLS base's moving steps are partial by design, see the next test)
    from sklearn.exceptions import ConvergenceWarning

    X, y = data
    ys = mask_labels(y, 10, random_state=0)
    base = KernelLapSVMClassifier(tol=0.5, max_iter=2)  # its own fit converges, EMR's not
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        emr = EMRClassifier(base, candidates={"power": [1, 2, 5]}).fit(X, ys)
    convergence = [str(w.message) for w in caught
                   if issubclass(w.category, ConvergenceWarning)]
    assert len(convergence) == 1, convergence
    assert convergence[0].startswith(f"EMR: {emr.n_iter_ - 1} of its f steps while mu moved "
                                     f"did not converge to their tol=0.001"), convergence
    assert "increase the estimator's max_iter" in convergence[0]
    # EMR's own max_iter, too, in the same warning
    assert emr.converged_ == ("increase EMRClassifier's max_iter" not in convergence[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        with pytest.raises(ConvergenceWarning, match="^EMR: "):
            EMRClassifier(base, candidates={"power": [1, 2, 5]}).fit(X, ys)


def test_prebuilt_graphs_are_checked_against_X(data):
    # as the base estimators check theirs: another row count is an error, other rows of
    # the same count (other documents, reordered rows) a warning — once for views of one
    from sklearn.preprocessing import normalize

    X, y = data
    X = normalize(X)  # no row-norm warning
    ys = mask_labels(y, 10, random_state=0)
    g = KNNGraph(n_neighbors=5).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        EMRClassifier(graph=g, candidates={"power": [1, 2]}).fit(X, ys)
        EMRClassifier(candidates=[g, g.with_laplacian(power=2)]).fit(X, ys)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    for emr, what in ((EMRClassifier(graph=g, candidates={"power": [1, 2]}),
                       "the search graph \\(graph=\\)"),
                      (EMRClassifier(candidates=[g, g.with_laplacian(power=2)]),
                       "a candidate graph")):
        with pytest.warns(UserWarning, match=f"X does not look like the matrix {what} was "
                                             f"built on") as caught:
            emr.fit(X[perm], ys[perm])
        assert sum("does not look like" in str(w.message) for w in caught) == 1
    with pytest.raises(ValueError, match=r"The search graph \(graph=\) was built on 70 "
                                         r"rows but X has 69"):
        EMRClassifier(graph=g, candidates={"power": [1, 2]}).fit(X[:69], ys[:69])


def test_stopping_at_max_iter_warns(data):
    from sklearn.exceptions import ConvergenceWarning

    X, y = data
    ys = mask_labels(y, 10, random_state=0)
    graphs = _grid_graphs(X)
    with pytest.warns(ConvergenceWarning, match=r"^EMR: it stopped at max_iter=2 f steps "
                      r"before its rule \(tol=1e-08\) was met: increase EMRClassifier's "
                      r"max_iter\. mu \(now \[.*\]\) may be inaccurate\.$"):
        emr = EMRClassifier(candidates=graphs, tol=1e-8, max_iter=2).fit(X, ys)
    assert not emr.converged_ and emr.n_iter_ == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert EMRClassifier(candidates=graphs, max_iter=20).fit(X, ys).converged_


def test_laprls_moving_steps_are_partial_cg_runs_without_warnings(data):
    # a LapRLS base's f steps while μ moves stop after MOVING_STEP_CG_ITER CG iterations
    # (or at the loose tol), the last runs to the base's own max_iter and tol; the partial
    # steps are by design, no ConvergenceWarning; μ as with steps solved to tol
    from sklearn.exceptions import ConvergenceWarning

    from linlap.estimators.emr import MOVING_STEP_CG_ITER

    X, y = data
    ys = mask_labels(y, 10, random_state=0)
    settings = []
    Recording = _recording_laprls(settings, "tol", "max_iter", "n_iter_")

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        emr = EMRClassifier(Recording(tol=1e-8, max_iter=5000),
                            candidates={"power": [1, 2, 5]}).fit(X, ys)
    assert len(settings) == emr.n_iter_ >= 3
    first, last = settings[0], settings[-1]
    partial = [s for s in settings[1:] if s[0] == 1e-7]
    assert first[:2] == (1e-6, 5000) and first[2] > MOVING_STEP_CG_ITER  # cold: solved
    assert partial and all(s[1:] == (MOVING_STEP_CG_ITER,) * 2 for s in partial)
    assert all(s[:2] == (1e-8, 5000) for s in settings[1:] if s[0] != 1e-7)
    assert last[:2] == (1e-8, 5000) and last[2] > MOVING_STEP_CG_ITER
    assert emr.estimator_.max_iter == 5000 and emr.estimator.max_iter == 5000
    settings.clear()
    # a base max_iter below the cap bounds the moving steps too
    EMRClassifier(Recording(max_iter=3), candidates={"power": [1, 2, 5]}).fit(X, ys)
    assert all(s[1] == 3 for s in settings)
    # μ from partial steps: as from steps solved to the loose tol (LapSVM's L2 loss with
    # the same objective has uncapped steps; here: the base's own μ at a tight tol)
    tight = EMRClassifier(LapRLSClassifier(tol=1e-10, max_iter=5000),
                          candidates={"power": [1, 2, 5]}, tol=1e-10, max_iter=50).fit(X, ys)
    np.testing.assert_allclose(emr.mu_, tight.mu_, atol=0.02)


@pytest.mark.parametrize("stay_final, flags", [
    # the tight step after μ settled changes S, the next μ step moves again: the
    # alternation goes on with tight steps (a loose one could meet its tol without moving
    # f) and stops once a μ step after one leaves μ in place
    (True, [False, False, True, True]),
    # final steps looser than the others (EMRClassifier: a base tol above 1e-3): loose
    # steps again until μ settles, then another final one
    (False, [False, False, True, False, True]),
])
def test_mu_settled_on_a_loose_f_is_checked_after_a_tight_step(stay_final, flags):
    from linlap.solvers.emr import emr_alternate

    S_loose, S_tight = np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])
    calls = []

    def solve_f(mu, previous, final):  # S as loose steps see it until the first tight
        calls.append(final)
        return any(calls), 0.0

    res = emr_alternate(solve_f, lambda tight_seen: S_tight if tight_seen else S_loose, 3,
                        gamma_R=0.5, tol=1e-12, max_iter=10, stay_final=stay_final)
    assert calls == flags and res.converged
    assert res.n_iter == len(flags)  # (J is not monotone here: these f steps change S)
    np.testing.assert_allclose(res.mu, update_mu(S_tight, 0.5))


@pytest.mark.parametrize("tol", [1e-6, 1e-8])
def test_tight_tol_runs_no_no_op_f_steps(data, tol):
    # a tight EMR tol with a LapRLS base: μ rarely settles on the first tight step; the
    # steps after it went back to the loose tol, which f (solved to the base's tol) often
    # already met — fits of 0 CG iterations, each followed by a μ step that changed
    # nothing (at tol=1e-8: 27 steps, 6 such after the first tight one; now 21 steps).
    # Now every step after a tight one is tight. (A loose step before the first tight
    # one can still do 0 iterations — the μ step after it then settles: at most one.)
    X, y = data
    ys = mask_labels(y, 10, random_state=0)
    graphs = _grid_graphs(X)
    steps = []
    Recording = _recording_laprls(steps, "tol", "n_iter_")
    emr = EMRClassifier(Recording(), candidates=graphs, tol=tol, max_iter=40).fit(X, ys)
    assert emr.converged_ and len(steps) == emr.n_iter_
    tols = [t for t, _ in steps]
    _check_schedule(tols, 1e-4)
    first_tight = tols.index(1e-4)
    assert first_tight < len(steps) - 1  # μ moved after the first tight step
    zero = [i for i, (_, n) in enumerate(steps) if n == 0]
    assert set(zero) <= {first_tight - 1}, steps
    if tol == 1e-6:
        assert zero == [], steps
    # μ and J as the tightly solved alternation's (the old no-op steps changed nothing)
    ref = EMRClassifier(LapRLSClassifier(tol=1e-10, max_iter=5000), candidates=graphs,
                        tol=1e-10, max_iter=60).fit(X, ys)
    np.testing.assert_allclose(emr.mu_, ref.mu_, atol=5e-3)
    assert emr.objective_[-1] == pytest.approx(ref.objective_[-1], rel=1e-5)


def test_non_minimising_f_steps_must_also_stop_lowering_J():
    # f steps that are not minimisations (early-stopped PCG) keep lowering J with S
    # fixed: μ is settled from the second μ step on, but f is not — convergence waits
    # for an f step's own decrease to fall below tol × J's terms in f (base + μ·S)
    from linlap.solvers.emr import emr_alternate

    S = np.array([1.0, 2.0, 3.0])
    gamma_R, tol = 0.5, 1e-3

    def run(is_minimiser, max_iter=40):
        calls = []

        def solve_f(mu, previous, final):  # f step k: base 1 + 2^-k, still falling
            calls.append(final)
            return len(calls) - 1, 1.0 + 0.5 ** (len(calls) - 1)

        res = emr_alternate(solve_f, lambda k: S, 3, gamma_R=gamma_R, tol=tol,
                            max_iter=max_iter, is_minimiser=is_minimiser)
        return res, calls

    res, calls = run(None)  # minimisers: μ settled after a final step is convergence
    assert calls == [False, False, True] and res.converged
    res, calls = run(lambda k: False)
    J = np.asarray(res.objective)
    f_terms = J[-1] - gamma_R * res.mu @ res.mu
    # the first final step whose decrease 2^-k is below tol × (base + μ·S)
    mu_S = float(update_mu(S, gamma_R) @ S)
    k = next(k for k in range(2, 40) if 0.5 ** k <= tol * (1.0 + 0.5 ** k + mu_S))
    assert res.converged and res.n_iter == k + 1 and calls == [False, False] + [True] * (k - 1)
    assert J[-2] - J[-1] <= tol * f_terms < J[-4] - J[-3]
    res, calls = run(lambda k: k >= 5)  # the 6th step is a minimiser: it converges there
    assert res.converged and res.n_iter == 6
    res, calls = run(lambda k: False, max_iter=6)  # the budget: not converged
    assert not res.converged and res.n_iter == 6


def test_early_stopped_kernel_base_converges_only_once_f_settles_too():
    # KernelLapSVMClassifier's default early stopping ends each warm-started f step after
    # two stability checks (20 PCG iterations here), far from the minimiser over f: μ
    # looked settled after 8 steps (J = 0.415, μ = 0.39 / 0.61 on two candidates) while
    # each further step lowered J by 0.1–0.3 % and moved μ (100 steps: J = 0.388, μ =
    # 0.27 / 0.73). Such a base's f steps must also stop lowering J.
    from linlap.datasets import make_text_corpus

    X, y = make_text_corpus(400, n_features=2000, n_subtopics=2, topic_concentration=0.4,
                            random_state=0)[:2]
    ys = mask_labels(y, 10, random_state=0)
    grid = {"power": [1, 3, 6], "normalized": [True, False], "n_neighbors": [5, 10]}
    reasons = []

    class Recording(KernelLapSVMClassifier):
        def fit(self, X, y, X_val=None, y_val=None):
            super().fit(X, y)
            reasons.append(self.stop_reason_)
            return self

    short = EMRClassifier(Recording(), candidates=grid).fit(X, ys)  # max_iter=10
    assert not short.converged_ and short.n_iter_ == 10
    assert reasons[-1] == "stability"
    emr = EMRClassifier(KernelLapSVMClassifier(), candidates=grid, max_iter=40).fit(X, ys)
    assert emr.converged_ and emr.n_iter_ < 40
    J = np.asarray(emr.objective_)
    assert np.all(np.diff(J) <= 0)
    f_terms = J[-1] - emr.gamma_R_ * emr.mu_ @ emr.mu_
    assert J[-2] - J[-1] <= emr.tol * f_terms  # the last f step's decrease: small
    assert J[-1] < short.objective_[-1] < 0.415


def test_stiff_candidates_do_not_stop_mu_near_uniform():
    # unnormalised and high-power candidates: partial f steps from a cold start left f
    # near 0, the first μ step barely lowered J, and μ stopped near uniform (0.1 on ten of
    # twelve candidates); it must end where tightly solved steps put it
    from sklearn.preprocessing import normalize

    X, y = blobs(n=150, d=20, n_classes=2, seed=0, sparse=True)
    X = normalize(X)
    ys = mask_labels(y, 10, random_state=0)
    grid = {"power": [1, 3, 6], "normalized": [True, False], "n_neighbors": [5, 10]}
    emr = EMRClassifier(candidates=grid).fit(X, ys)
    tight = EMRClassifier(LapRLSClassifier(tol=1e-10, max_iter=5000), candidates=grid,
                          tol=1e-8, max_iter=50).fit(X, ys)
    assert tight.mu_.max() > 0.9
    np.testing.assert_allclose(emr.mu_, tight.mu_, atol=0.02)


@pytest.mark.parametrize("seed", range(4))
def test_objective_monotone_with_a_class_prior_base(seed):
    # the class balance combines two CG columns: cut off early, the combination is not a
    # descent step, so such a base's f steps are not capped
    from sklearn.preprocessing import normalize

    X, y = blobs(n=150, d=20, n_classes=2, seed=seed, sparse=True)
    X = normalize(X)
    ys = mask_labels(y, 10, random_state=0)
    emr = EMRClassifier(LapRLSClassifier(class_prior="labeled"),
                        candidates={"power": [1, 3, 6], "n_neighbors": [5, 10],
                                    "normalized": [True, False]}).fit(X, ys)
    o = np.asarray(emr.objective_)
    assert np.all(np.diff(o) <= 1e-9 * o[:-1])


def test_mu_settled_relative_to_its_own_terms_not_to_a_large_loss():
    # a loss of 1e6 dwarfs μ's terms: relative to J the first μ step looked settled
    # (flags [False, True]); relative to μ·S + γ_R‖μ‖² it moved μ, one more loose step
    from linlap.solvers.emr import emr_alternate

    calls = []

    def solve_f(mu, previous, final):
        calls.append(final)
        return len(calls), 1e6

    res = emr_alternate(solve_f, lambda r: np.array([1.0, 2.0, 3.0]), 3, gamma_R=0.5,
                        tol=1e-3, max_iter=10)
    assert calls == [False, False, True] and res.converged
