"""linlap.distributed: LapRLS and LapSVM, X in row blocks on a 2-process Dask LocalCluster."""

import os
import signal

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp

from linlap import KNNGraph, LapRLSClassifier, LapSVMClassifier
from linlap.distributed import (DistributedNormalOperator, csr_row_blocks, lapsvm_fit,
                                laprls_fit)
from linlap.distributed import operator as operator_module
from linlap.distributed.halo import apply_block, export_values, partition_laplacian
from linlap.solvers import laprls_linear, lapsvm_newton
from linlap.solvers._problem import pm1_targets
from linlap.solvers.normal_operator import NormalOperator
from reference import blobs, dense_solution, random_design
from dask_cluster import as_dask


def problem(n=120, d=15, k=2, seed=0, sparse=True):
    rng = np.random.default_rng(seed)
    X = random_design(n, d, rng, sparse=sparse)
    graph = KNNGraph(n_neighbors=6).fit(X)
    labeled = rng.choice(n, 20, replace=False)
    T = rng.choice([-1.0, 1.0], size=(20, k))
    return X, graph, labeled, T


KW = dict(gamma_A=1e-2, gamma_I=3.0, tol=1e-12, max_iter=500)


@pytest.mark.parametrize("sparse, on_workers", [(True, True), (False, False)])
def test_equals_single_machine_and_dense_reference(client, sparse, on_workers):
    X, graph, labeled, T = problem(k=3, sparse=sparse)
    blocks = csr_row_blocks(X, 3) if sparse else np.array_split(X, 3)
    sol = laprls_fit(as_dask(blocks), T, labeled, graph, graph_on_workers=on_workers, **KW)
    ref = laprls_linear(X, T, labeled, graph.laplacian_matvec, scale=graph.scale_, **KW)
    assert sol.converged and ref.converged
    np.testing.assert_allclose(sol.coef, ref.coef, rtol=0, atol=1e-8)
    np.testing.assert_allclose(sol.intercept, ref.intercept, rtol=0, atol=1e-8)
    np.testing.assert_allclose(sol.decision, ref.decision, rtol=0, atol=1e-8)
    Xd = X.toarray() if sparse else X
    Lp = graph.laplacian_matvec(np.eye(X.shape[0]))  # L^p of the graph, densely
    Z = dense_solution(Xd, Lp, labeled, T, KW["gamma_A"], KW["gamma_I"], graph.scale_)
    np.testing.assert_allclose(sol.coef, Z[:-1].T, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sol.intercept, Z[-1], rtol=1e-6, atol=1e-8)


def test_balance_no_intercept_and_block_lists(client):
    X, graph, labeled, T = problem(seed=1)
    unlabeled = np.setdiff1d(np.arange(X.shape[0]), labeled)
    # a list of in-memory blocks (scattered to the workers) with the class-balance
    # constraint; a dask array without intercept
    # (repeated unlabeled rows count each time, as in the single-machine constraint)
    repeated = np.r_[unlabeled, unlabeled[:30]]
    cases = [(csr_row_blocks(X, 4), dict(balance=[0.2, -0.1], unlabeled_rows=unlabeled)),
             (csr_row_blocks(X, 4), dict(balance=[0.2, -0.1], unlabeled_rows=repeated)),
             (as_dask(csr_row_blocks(X, 5)), dict(fit_intercept=False))]
    for Xin, kw in cases:
        ref = laprls_linear(X, T, labeled, graph.laplacian_matvec, scale=graph.scale_,
                            **kw, **KW)
        sol = laprls_fit(Xin, T, labeled, graph, **kw, **KW)
        np.testing.assert_allclose(sol.coef, ref.coef, rtol=0, atol=1e-8)
        np.testing.assert_allclose(sol.intercept, ref.intercept, rtol=0, atol=1e-8)
        if "balance" in kw:
            rows = kw["unlabeled_rows"]
            np.testing.assert_allclose(sol.decision[rows].mean(axis=0), [0.2, -0.1],
                                       atol=1e-9)
        else:
            assert np.all(sol.intercept == 0)


def test_balance_rows_checked_as_in_memory(client):
    X, graph, labeled, T = problem(seed=1)
    for rows, match in [(np.array([-1, 5]), "indices in"), (np.array([0.7, 5.0]), "row indices"),
                        (np.array([500]), "indices in")]:
        with pytest.raises(ValueError, match=match):
            laprls_fit(csr_row_blocks(X, 2), T, labeled, graph, balance=[0.2, -0.1],
                       unlabeled_rows=rows, **KW)


def test_equals_the_estimator(client):
    X, y = blobs(n=150, d=10, n_classes=3, seed=2)
    y = y.copy()
    y[np.random.default_rng(0).random(y.size) < 0.8] = -1
    graph = KNNGraph(n_neighbors=5).fit(X)
    est = LapRLSClassifier(gamma_A=1e-3, gamma_I=5.0, graph=graph, tol=1e-12).fit(X, y)
    labeled = np.flatnonzero(y != -1)
    T = pm1_targets(np.searchsorted(est.classes_, y[labeled]), est.classes_.size)
    sol = laprls_fit(as_dask(csr_row_blocks(X, 3)), T, labeled, graph, gamma_A=1e-3,
                     gamma_I=5.0, tol=1e-12)
    np.testing.assert_allclose(sol.coef, est.coef_, rtol=0, atol=1e-8)
    np.testing.assert_allclose(sol.intercept, est.intercept_, rtol=0, atol=1e-8)


def test_operator_equals_normal_operator_with_mask_and_repeats(client, monkeypatch):
    X, graph, labeled, T = problem(seed=3)
    rows = np.r_[labeled, labeled[:4]]  # repeated rows add their loss twice
    mask = np.random.default_rng(0).random((rows.size, 2))
    kw = dict(alpha=0.3, beta=2.0, mask=mask)
    op = DistributedNormalOperator(as_dask(csr_row_blocks(X, 3)), rows,
                                   graph.laplacian_matvec, **kw)
    ref = NormalOperator(X, rows, graph.laplacian_matvec, **kw)
    Z = np.random.default_rng(1).standard_normal((X.shape[1] + 1, 2))
    np.testing.assert_allclose(op.matvec(Z), ref.matvec(Z), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(op.matvec(Z[:, 1], columns=[1]).ravel(),
                               ref.matvec(Z[:, 1], columns=[1]), rtol=1e-12, atol=1e-12)
    T2 = np.random.default_rng(2).standard_normal((rows.size, 2))
    np.testing.assert_allclose(op.rhs(T2), ref.rhs(T2), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(op.decision(Z), ref.decision(Z), rtol=1e-12, atol=1e-12)
    # a large iterate is broadcast to the workers instead of riding in every task
    monkeypatch.setattr(operator_module, "SCATTER_BYTES", 0)
    np.testing.assert_allclose(op.matvec(Z), ref.matvec(Z), rtol=1e-12, atol=1e-12)
    op.release()


@pytest.mark.parametrize("normalized", [True, False])
def test_partitioned_laplacian_equals_the_graph(normalized):
    # blocks of uneven sizes, an isolated node, p = 3 halo exchanges (no Dask)
    rng = np.random.default_rng(6)
    X = random_design(90, 12, rng, sparse=True)
    X = sp.diags((np.arange(90) != 17).astype(float)) @ X  # row 17 empty: isolated
    with pytest.warns(UserWarning, match="empty"):
        graph = KNNGraph(n_neighbors=4, normalized=normalized, power=3).fit(X)
    bounds = np.array([0, 10, 47, 48, 90])
    blocks = partition_laplacian(graph.adjacency_, graph.degree_, normalized, bounds)
    V = rng.standard_normal((90, 2))
    parts = [V[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    for _ in range(3):
        parts = [apply_block(blk, parts[b], *[export_values(blocks[o], parts[o], b)
                                              for o, _ in blk.imports])
                 for b, blk in enumerate(blocks)]
    np.testing.assert_allclose(np.vstack(parts), graph.laplacian_matvec(V), rtol=0, atol=1e-12)
    # a block's halo is exactly the other blocks' rows its rows have an edge to
    W = graph.adjacency_
    for b, blk in enumerate(blocks):
        a, e = bounds[b], bounds[b + 1]
        cols = np.unique(W[a:e].indices)
        assert blk.halo_size == np.count_nonzero((cols < a) | (cols >= e))


def test_graph_on_workers_equals_normal_operator(client):
    X, graph, labeled, T = problem(seed=7)
    rows = np.r_[labeled, labeled[:3]]
    mask = np.random.default_rng(0).random((rows.size, 2))
    kw = dict(alpha=0.3, beta=2.0, mask=mask)
    ref = NormalOperator(X, rows, graph.laplacian_matvec, **kw)
    Z = np.random.default_rng(1).standard_normal((X.shape[1] + 1, 2))
    # 5 chunks rechunked to 3 blocks, with the Laplacian on the workers
    op = DistributedNormalOperator(as_dask(csr_row_blocks(X, 5)), rows, None, graph=graph,
                                   n_blocks=3, **kw)
    assert op.bounds.size == 4 and op.halo_sizes.shape == (3,)
    np.testing.assert_allclose(op.matvec(Z), ref.matvec(Z), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(op.matvec(Z[:, 1], columns=[1]).ravel(),
                               ref.matvec(Z[:, 1], columns=[1]), rtol=1e-12, atol=1e-12)
    F = op.decision(Z)
    np.testing.assert_allclose(op.apply_to_decision(F, Z), ref.matvec(Z), rtol=1e-12,
                               atol=1e-12)
    op.release()
    with pytest.raises(ValueError, match="n_blocks"):
        DistributedNormalOperator(as_dask(csr_row_blocks(X, 2)), rows, None, graph=graph,
                                  n_blocks=0, **kw)


def test_bad_input(client):
    X, graph, labeled, T = problem()
    with pytest.raises(ValueError, match="chunked by rows only"):
        laprls_fit(da.from_array(X.toarray(), chunks=(40, 5)), T, labeled, graph, **KW)
    with pytest.raises(ValueError, match="nodes but X has"):
        laprls_fit(csr_row_blocks(X[:100], 2), T, labeled, graph, **KW)
    with pytest.raises(ValueError, match="same number of columns"):
        laprls_fit([X[:60], X[60:, :10]], T, labeled, graph, **KW)
    with pytest.raises(TypeError, match="dask array of row blocks or a list"):
        laprls_fit(X, T, labeled, graph, **KW)
    with pytest.raises(TypeError, match="fitted KNNGraph"):
        laprls_fit(csr_row_blocks(X, 2), T, labeled, None, **KW)


def kill_a_worker_at(client, iteration):
    def callback(it, residual):
        if it == iteration:
            addr = sorted(client.scheduler_info()["workers"])[0]
            pid = client.run(os.getpid, workers=[addr])[addr]
            os.kill(pid, signal.SIGKILL)
    return callback


def test_lost_worker_recovers_or_fails_clearly(client):
    X, graph, labeled, T = problem(seed=4)
    ref = laprls_linear(X, T, labeled, graph.laplacian_matvec, scale=graph.scale_, **KW)
    blocks = csr_row_blocks(X, 4)
    # blocks with a task graph: Dask recomputes the killed worker's blocks, same model
    sol = laprls_fit(as_dask(blocks), T, labeled, graph, callback=kill_a_worker_at(client, 3),
                     **KW)
    np.testing.assert_allclose(sol.coef, ref.coef, rtol=0, atol=1e-8)
    np.testing.assert_allclose(sol.intercept, ref.intercept, rtol=0, atol=1e-8)
    client.wait_for_workers(2, timeout=60)
    # scattered in-memory blocks cannot be recomputed: a clear error, or (when Dask
    # happened to copy the lost blocks to the other worker for a halo task) the model
    try:
        sol = laprls_fit(blocks, T, labeled, graph, callback=kill_a_worker_at(client, 3), **KW)
    except RuntimeError as exc:
        assert "cannot be recomputed" in str(exc)
    else:
        np.testing.assert_allclose(sol.coef, ref.coef, rtol=0, atol=1e-8)
    client.wait_for_workers(2, timeout=60)
    # the same with one task per block (the graph on the client): no copies, the error
    op = DistributedNormalOperator(blocks, labeled, graph.laplacian_matvec, alpha=1.0, beta=1.0)
    Z = np.ones(X.shape[1] + 1)
    op.matvec(Z)
    kill_a_worker_at(client, 0)(0, None)
    with pytest.raises(RuntimeError, match="cannot be recomputed"):
        op.matvec(Z)
    client.wait_for_workers(2, timeout=60)


@pytest.mark.parametrize("balance, on_workers", [(False, False), (True, True)])
def test_lapsvm_equals_single_machine(client, balance, on_workers):
    X, graph, labeled, T = problem(k=2, seed=5)
    unlabeled = np.setdiff1d(np.arange(X.shape[0]), labeled)
    kw = dict(gamma_A=1e-2, gamma_I=3.0, tol=1e-10)
    if balance:
        kw.update(balance=[0.1, -0.3], unlabeled_rows=unlabeled)
    ref = lapsvm_newton(X, T, labeled, graph.laplacian_matvec, scale=graph.scale_, **kw)
    sol = lapsvm_fit(as_dask(csr_row_blocks(X, 3)), T, labeled, graph,
                     graph_on_workers=on_workers, **kw)
    assert ref.converged and sol.converged
    np.testing.assert_allclose(sol.coef, ref.coef, rtol=0, atol=1e-8)
    np.testing.assert_allclose(sol.intercept, ref.intercept, rtol=0, atol=1e-8)
    # the minimiser of the documented objective: its gradient vanishes (dense check)
    if not balance:
        Xt = np.hstack([X.toarray(), np.ones((X.shape[0], 1))])
        Lp = graph.laplacian_matvec(np.eye(X.shape[0]))
        l = labeled.size
        for j in range(2):
            z = np.r_[sol.coef[j], sol.intercept[j]]
            f = Xt @ z
            y = T[:, j]
            act = y * f[labeled] < 1
            grad = (-2 / l * Xt[labeled][act].T @ (y[act] - f[labeled][act])
                    + 2 * 1e-2 * np.r_[z[:-1], 0] + 2 * 3.0 * graph.scale_ * Xt.T @ Lp @ f)
            assert np.linalg.norm(grad) < 1e-7 * max(1, np.linalg.norm(Xt[labeled].T @ y))


@pytest.mark.parametrize("Est", [LapRLSClassifier, LapSVMClassifier])
def test_estimator_fits_a_dask_array(client, Est):
    X, y = blobs(n=160, d=10, n_classes=3, seed=8)
    X = sp.csr_matrix(X)
    y = y.copy()
    y[np.random.default_rng(1).random(y.size) < 0.75] = -1
    graph = KNNGraph(n_neighbors=5).fit(X)
    kw = dict(gamma_A=1e-3, gamma_I=5.0, graph=graph, tol=1e-10)
    ref = Est(**kw).fit(X, y)
    Xd = as_dask(csr_row_blocks(X, 4))
    est = Est(**kw).fit(Xd, y)
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=0, atol=1e-8)
    np.testing.assert_allclose(est.intercept_, ref.intercept_, rtol=0, atol=1e-8)
    np.testing.assert_array_equal(est.transduction_, ref.transduction_)
    assert est.n_features_in_ == 10
    # predictions of a dask array are a dask array, equal to those in memory
    scores = est.decision_function(Xd)
    assert isinstance(scores, da.Array)
    np.testing.assert_allclose(scores.compute(), ref.decision_function(X), atol=1e-8)
    np.testing.assert_array_equal(est.predict(Xd).compute(), ref.predict(X))


def test_estimator_dask_bad_input(client):
    X, y = blobs(n=60, d=4, n_classes=2, seed=9)
    y = y.copy()
    y[10:] = -1
    graph = KNNGraph(n_neighbors=4).fit(X)
    X = sp.csr_matrix(X)
    Xbad = X.copy()
    Xbad.data[7] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        LapRLSClassifier(graph=graph).fit(as_dask(csr_row_blocks(Xbad, 3)), y)
    with pytest.raises(ValueError, match="extreme values"):
        LapRLSClassifier(graph=graph).fit(as_dask(csr_row_blocks(X * 1e31, 3)), y)
    with pytest.raises(ValueError, match="rows but y has"):
        LapRLSClassifier(graph=graph).fit(as_dask(csr_row_blocks(X, 3)), y[:-1])
    with pytest.raises(ValueError, match="solver='tinv' needs X in memory"):
        LapSVMClassifier(solver="tinv", graph=graph).fit(as_dask(csr_row_blocks(X, 3)), y)
    with pytest.raises(ValueError, match="prebuilt graph was built on"):
        LapRLSClassifier(graph=graph).fit(as_dask(csr_row_blocks(X[:50], 3)), y[:50])
    with pytest.raises(ValueError, match="features"):
        LapRLSClassifier(graph=graph).fit(X, y).predict(as_dask(csr_row_blocks(X[:, :3], 2)))
    # in-memory estimators name the method a dask X reached (was numpy's "setting an
    # array element with a sequence" from spectral clustering's transform and predict)
    from linlap import LaplacianSpectralClustering
    sc = LaplacianSpectralClustering(n_clusters=2, graph=graph).fit(X)
    for method in ("transform", "predict"):
        with pytest.raises(ValueError, match="Cannot transform a dask array X: "
                                             "LaplacianSpectralClustering works on X in memory"):
            getattr(sc, method)(as_dask(csr_row_blocks(X, 3)))
    with pytest.raises(ValueError, match="Cannot fit a dask array X: .*which fit dask arrays"):
        LaplacianSpectralClustering(n_clusters=2).fit(as_dask(csr_row_blocks(X, 3)))


def test_estimator_builds_the_graph_on_the_workers(client):
    X, y = blobs(n=150, d=60, n_classes=2, seed=10)
    X = sp.csr_matrix(X)
    y = y.copy()
    y[np.random.default_rng(2).random(y.size) < 0.8] = -1
    est = LapRLSClassifier(graph=KNNGraph(n_neighbors=6, algorithm="exact"), tol=1e-10)
    est.fit(as_dask(csr_row_blocks(X, 3)), y)
    # 150 rows: space='auto' is the input space, as in memory (the same neighbours)
    assert est.graph_.n_samples_fit_ == 150 and est.graph_.space_ == "tfidf"
    mem = KNNGraph(n_neighbors=6, algorithm="exact").fit(X)
    np.testing.assert_array_equal(est.graph_.neighbors_, mem.neighbors_)
    ref = LapRLSClassifier(graph=est.graph_, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=0, atol=1e-8)
    np.testing.assert_array_equal(est.transduction_, ref.transduction_)
    # binary: one decision column
    Xd = as_dask(csr_row_blocks(X, 2))
    np.testing.assert_allclose(est.decision_function(Xd).compute(), ref.decision_function(X),
                               atol=1e-8)
    np.testing.assert_array_equal(est.predict(Xd).compute(), ref.predict(X))


def test_dask_predict_refuses_bad_X_and_default_graph_caps_by_nonempty_rows(client):
    from linlap.distributed import fit_graph

    X, y = blobs(n=7, d=60, n_classes=2, seed=11)
    X = sp.csr_matrix(X)
    X = sp.vstack([X[:5], sp.csr_matrix((2, 60))], format="csr")  # 2 empty rows
    y = y.copy()
    y[4:] = -1
    with pytest.warns(UserWarning, match="empty"):
        est = LapRLSClassifier().fit(as_dask(csr_row_blocks(X, 2)), y)
    assert est.graph_.n_neighbors == 4  # 5 non-empty rows, as in memory
    Xbad = X.copy()
    Xbad.data[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.predict(as_dask(csr_row_blocks(Xbad, 2))).compute()
    with pytest.raises(ValueError, match="extreme"):
        est.decision_function(as_dask(csr_row_blocks(X * 1e200, 2))).compute()
    with pytest.raises(ValueError, match="sample_size"):
        fit_graph(KNNGraph(n_neighbors=3, n_components=4, svd_sample=3, space="svd"),
                  as_dask(csr_row_blocks(X, 2)))


def test_in_memory_estimators_name_the_dask_limitation(client):
    from linlap import (EMRClassifier, KernelLapRLSClassifier, LapRLSClassifierCV,
                        LaplacianSpectralClustering)

    X, y = blobs(n=40, d=6, n_classes=2, seed=12)
    y = y.copy()
    y[10:] = -1
    Xd = as_dask(csr_row_blocks(sp.csr_matrix(X), 2))
    for est in (LapRLSClassifierCV(gamma_A=[1e-2], gamma_I=[1.0], cv=2),
                KernelLapRLSClassifier(), EMRClassifier(), LaplacianSpectralClustering(2)):
        with pytest.raises(ValueError, match="memory only"):
            est.fit(Xd, y)


def test_retries_validated(client):
    X, y = blobs(n=30, d=4, n_classes=2, seed=13)
    graph = KNNGraph(n_neighbors=4).fit(X)
    y = y.copy()
    y[10:] = -1
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="retries"):
            laprls_fit(as_dask(csr_row_blocks(sp.csr_matrix(X), 2)), pm1_targets(y[:10], 2),
                       np.arange(10), graph, gamma_A=1e-2, gamma_I=1.0, retries=bad)


# -- the same input handling as in memory, and clear errors for bad dask input -------------
def semi_supervised(n=120, d=20, seed=5):
    X, y = blobs(n=n, d=d, n_classes=2, seed=seed)
    y = y.copy()
    y[np.random.default_rng(seed).random(n) < 0.8] = -1
    return sp.csr_matrix(X), y


def test_default_graph_is_the_in_memory_graph(client):
    """graph=None on a dask X: KNNGraph's 'auto' space, the TF-IDF space up to 50,000 rows,
    as in memory: the same graph, the same model."""
    from linlap.datasets import make_text_corpus

    X, y = make_text_corpus(400, n_features=2000, random_state=0)
    y = y.copy()
    y[np.random.default_rng(0).random(y.size) < 0.8] = -1
    mem = LapRLSClassifier(tol=1e-10).fit(X, y)
    est = LapRLSClassifier(tol=1e-10).fit(as_dask(csr_row_blocks(X, 3)), y)
    assert est.graph_.space_ == mem.graph_.space_ == "tfidf"
    assert est.graph_.get_params() == mem.graph_.get_params()
    np.testing.assert_array_equal(est.graph_.neighbors_, mem.graph_.neighbors_)
    assert (abs(est.graph_.adjacency_ - mem.graph_.adjacency_) > 1e-12).nnz == 0
    np.testing.assert_allclose(est.coef_, mem.coef_, rtol=0, atol=1e-8)
    np.testing.assert_array_equal(est.transduction_, mem.transduction_)
    # a user's unfitted graph (random_state=None): the same graph as in memory too
    svm = LapSVMClassifier(graph=KNNGraph(n_neighbors=8), tol=1e-10)
    svm_mem = clone_fit(svm, X, y)
    svm.fit(as_dask(csr_row_blocks(X, 2)), y)
    np.testing.assert_array_equal(svm.graph_.neighbors_, svm_mem.graph_.neighbors_)
    np.testing.assert_allclose(svm.coef_, svm_mem.coef_, rtol=0, atol=1e-6)


def clone_fit(est, X, y):
    from sklearn.base import clone

    return clone(est).fit(X, y)


def test_non_real_X_refused_as_in_memory(client):
    X, y = semi_supervised()
    graph = KNNGraph(n_neighbors=5).fit(X)
    Xc = X.toarray() + 1j * X.toarray()
    with pytest.raises(ValueError, match="Complex data not supported"):
        LapRLSClassifier(graph=graph).fit(Xc, y)  # in memory
    with pytest.raises(ValueError, match="Complex data not supported"):
        LapRLSClassifier(graph=graph).fit(as_dask(np.array_split(Xc, 2)), y)
    Xs = X.toarray().astype(str)
    with pytest.raises(ValueError, match="numeric dtype"):
        LapRLSClassifier(graph=graph).fit(as_dask(np.array_split(Xs, 2)), y)
    est = LapRLSClassifier(graph=graph).fit(X, y)
    with pytest.raises(ValueError, match="Complex data not supported"):
        est.decision_function(as_dask(np.array_split(Xc, 2))).compute()
    with pytest.raises(ValueError, match="numeric dtype"):
        est.predict(as_dask(np.array_split(Xs, 2))).compute()
    # blocks that are complex although the dask array says float
    import dask

    lying = da.concatenate([da.from_delayed(dask.delayed(b), b.shape, dtype=np.float64,
                                            meta=np.empty((0, b.shape[1])))
                            for b in np.array_split(Xc, 2)])
    with pytest.raises(ValueError, match="Complex data not supported"):
        LapRLSClassifier(graph=graph).fit(lying, y)
    with pytest.raises(ValueError, match="Complex data not supported"):
        est.decision_function(lying).compute()


@pytest.mark.parametrize("fit", [laprls_fit, lapsvm_fit])
def test_low_level_fits_refuse_nonfinite_and_extreme_X(client, fit):
    X, graph, labeled, T = problem()
    bad = X.copy()
    bad.data[3] = np.nan
    kw = dict(gamma_A=1e-2, gamma_I=1.0)
    for Xin in (as_dask(csr_row_blocks(bad, 2)), csr_row_blocks(bad, 2)):
        with pytest.raises(ValueError, match="NaN or infinity"):
            fit(Xin, T, labeled, graph, **kw)
    with pytest.raises(ValueError, match="extreme values"):
        fit(as_dask(csr_row_blocks(X * 1e31, 3)), T, labeled, graph, **kw)


def test_declared_chunk_shapes_are_checked(client):
    import dask

    X, y = semi_supervised()
    graph = KNNGraph(n_neighbors=5).fit(X)

    def declared(blocks, shape):
        return da.concatenate([da.from_delayed(dask.delayed(b), shape, dtype=float,
                                               meta=b[:0]) for b in blocks])

    rows = declared([X[:61], X[60:]], (60, 20))      # 61 rows declared 60
    cols = declared([X[:60, :19], X[60:, :19]], (60, 20))  # 19 columns declared 20
    shift = declared([X[:59], X[59:]], (60, 20))     # 59 + 61 rows declared 60 + 60
    msg = r"row block 0 has shape \(61, 20\), X.chunks declares \(60, 20\)"
    with pytest.raises(ValueError, match=msg):
        LapRLSClassifier(graph=graph).fit(rows, y)
    with pytest.raises(ValueError, match=r"has shape \(60, 19\), X.chunks declares \(60, 20\)"):
        LapRLSClassifier(graph=graph).fit(cols, y)
    with pytest.raises(ValueError, match=r"row block [01] has shape \((59|61), 20\)"):
        LapRLSClassifier(graph=graph).fit(shift, y)
    labeled = np.flatnonzero(y >= 0)
    T = np.where(y[labeled] == 1, 1.0, -1.0)
    for n_blocks in (None, 1):  # also when the blocks are rechunked
        with pytest.raises(ValueError, match=msg):
            laprls_fit(rows, T, labeled, graph, gamma_A=1e-2, gamma_I=1.0, n_blocks=n_blocks)
    with pytest.raises(ValueError, match=msg):
        from linlap.distributed import fit_graph

        fit_graph(KNNGraph(n_neighbors=5), rows)


def test_unknown_chunk_sizes_named(client):
    import dask

    X, y = semi_supervised()
    graph = KNNGraph(n_neighbors=5).fit(X)
    Xd = as_dask(np.array_split(X.toarray(), 2))
    unknown_rows = Xd[Xd[:, 0] >= 0]
    with pytest.raises(ValueError, match="unknown row chunk sizes"):
        LapRLSClassifier(graph=graph).fit(unknown_rows, y)
    unknown_cols = da.from_delayed(dask.delayed(X.toarray()), shape=(120, np.nan),
                                   dtype=float, meta=np.empty((0, 0)))
    with pytest.raises(ValueError, match="unknown number of columns"):
        LapRLSClassifier(graph=graph).fit(unknown_cols, y)
    with pytest.raises(ValueError, match="unknown number of columns"):
        laprls_fit(unknown_cols, np.ones(3), [0, 1, 2], graph, gamma_A=1e-2, gamma_I=1.0)


def test_closed_client_refused(client):
    from distributed import Client, LocalCluster

    X, graph, labeled, T = problem()
    cluster = LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                           dashboard_address=None)
    closed = Client(cluster, set_as_default=False)
    closed.close()
    cluster.close()
    for fit in (laprls_fit, lapsvm_fit):
        with pytest.raises(ValueError, match="the Dask client is closed"):
            fit(as_dask(csr_row_blocks(X, 2)), T, labeled, graph, gamma_A=1e-2, gamma_I=1.0,
                client=closed)


def test_graph_without_edge_warns_as_in_memory(client):
    X, y = semi_supervised()
    params = dict(n_neighbors=5, weight="heat", heat_sigma=1e-4)
    prebuilt = KNNGraph(**params).fit(X)
    assert prebuilt.scale_ == 0
    with pytest.warns(UserWarning, match="The graph has no edge"):
        LapRLSClassifier(graph=prebuilt).fit(X, y)  # in memory
    for graph in (prebuilt, KNNGraph(**params)):  # prebuilt, and built by fit_graph
        with pytest.warns(UserWarning, match="The graph has no edge"):
            LapRLSClassifier(graph=graph).fit(as_dask(csr_row_blocks(X, 2)), y)


def test_column_y_accepted_as_in_memory(client):
    from sklearn.exceptions import DataConversionWarning

    X, y = semi_supervised()
    graph = KNNGraph(n_neighbors=5).fit(X)
    ref = LapRLSClassifier(graph=graph, tol=1e-10).fit(as_dask(csr_row_blocks(X, 2)), y)
    with pytest.warns(DataConversionWarning):
        est = LapRLSClassifier(graph=graph, tol=1e-10).fit(as_dask(csr_row_blocks(X, 2)),
                                                           y.reshape(-1, 1))
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=0, atol=1e-12)


def test_every_labeled_row_empty_refused_as_in_memory(client):
    X, y = semi_supervised()
    X = X.tolil()
    X[np.flatnonzero(y != -1)] = 0  # every labeled document empty
    X = X.tocsr()
    X.eliminate_zeros()
    graph = KNNGraph(n_neighbors=5).fit(X)
    with pytest.raises(ValueError, match="every labeled row is empty"):
        LapRLSClassifier(graph=graph).fit(X, y)
    with pytest.raises(ValueError, match="every labeled row is empty"):
        LapRLSClassifier(graph=graph).fit(as_dask(csr_row_blocks(X, 2)), y)


@pytest.mark.parametrize("sparse", [True, False])
def test_row_norm_warning_as_in_memory(client, sparse):
    """Rows of unequal norms warn (the norms from the workers), as in memory."""
    X, y = blobs(n=160, d=10, n_classes=2, seed=9)
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    X = np.abs(X) * np.random.default_rng(2).uniform(0.2, 5.0, (X.shape[0], 1))  # lengths
    Xd = as_dask(csr_row_blocks(X, 4) if sparse else np.array_split(X, 4))
    X = sp.csr_matrix(X) if sparse else X
    y = y.copy()
    y[np.random.default_rng(1).random(y.size) < 0.75] = -1
    graph = KNNGraph(n_neighbors=5).fit(X)
    with pytest.warns(UserWarning, match="The rows of X are not normalised"):
        ref = LapRLSClassifier(graph=graph, tol=1e-10).fit(X, y)
    with pytest.warns(UserWarning, match="The rows of X are not normalised"):
        est = LapRLSClassifier(graph=graph, tol=1e-10).fit(Xd, y)
    assert est.gamma_A_ == ref.gamma_A_
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=0, atol=1e-8)
