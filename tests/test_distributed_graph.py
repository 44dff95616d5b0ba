"""linlap.distributed.fit_graph: the kNN graph of dask row blocks on a 2-process LocalCluster."""

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp

from linlap import KNNGraph
from linlap.datasets import make_text_corpus
from linlap.distributed import csr_row_blocks, fit_graph, laprls_fit
from linlap.distributed.graph import _sort_candidates
from linlap.solvers import laprls_linear
from dask_cluster import as_dask


def uneven_blocks(X, cuts):
    bounds = [0, *cuts, X.shape[0]]
    return [X[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


@pytest.fixture(scope="module")
def corpus():
    X, y = make_text_corpus(3000, n_features=5000, random_state=0)
    return X.tocsr(), y


# With the exact search, the SVD fitted on all non-empty rows and the same seed, the
# distributed graph is KNNGraph(space='svd', algorithm='exact').fit(X): same SVD (same
# draws of the generator, same sample), the same per-row projection, the same exact
# search (dot products in other blocks, which may only reorder exact ties; there are none
# here). Everything after the search is KNNGraph's own code.
@pytest.mark.parametrize("sparse", [True, False])
def test_exact_equals_single_machine(client, corpus, sparse, tmp_path):
    X = corpus[0][:400]
    Xin = X if sparse else X.toarray()
    params = dict(n_neighbors=7, weight="heat", n_components=20, power=2, random_state=0,
                  algorithm="exact", reorder=True)
    ref = KNNGraph(space="svd", **params).fit(Xin)
    g = fit_graph(KNNGraph(space="svd", **params),
                  as_dask(uneven_blocks(Xin, [90, 100, 260])), sample_size=10**6)
    assert (g.space_, g.algorithm_, g.recall_, g.n_repaired_) == ("svd", "exact", None, 0)
    np.testing.assert_array_equal(g.neighbors_, ref.neighbors_)
    np.testing.assert_allclose(g.distances_, ref.distances_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(g.adjacency_.toarray(), ref.adjacency_.toarray(), atol=1e-12)
    np.testing.assert_array_equal(g.node_order_, ref.node_order_)
    assert g.scale_ == pytest.approx(ref.scale_, rel=1e-12)
    assert g.heat_sigma_ == pytest.approx(ref.heat_sigma_, rel=1e-12)
    z = np.random.default_rng(0).standard_normal((400, 2))
    np.testing.assert_allclose(g.laplacian_matvec(z), ref.laplacian_matvec(z), atol=1e-10)
    # a fitted graph like any other: save/load, subgraph, with_laplacian
    g.save(tmp_path / "g.npz")
    h = KNNGraph.load(tmp_path / "g.npz")
    np.testing.assert_allclose(h.laplacian_matvec(z), g.laplacian_matvec(z), atol=1e-12)
    np.testing.assert_array_equal(g.subgraph(3).neighbors_, ref.neighbors_[:, :3])
    np.testing.assert_allclose(g.with_laplacian(power=1).laplacian_matvec(z),
                               ref.with_laplacian(power=1).laplacian_matvec(z), atol=1e-10)


@pytest.fixture(scope="module")
def thread_client():
    """Two in-process workers: pynndescent is compiled once, in this process, instead of
    once per worker process (minutes on a fresh machine). The process transport is
    tested with the exact search and by the other modules' tests. Not the default
    client: fit_graph(client=...) must use the client it is given."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, processes=False, threads_per_worker=1,
                           dashboard_address=None)
    with Client(cluster, set_as_default=False) as c:
        yield c
    cluster.close()


def test_nndescent_recall_against_exact_neighbours(thread_client, corpus):
    X = corpus[0]
    k = 10
    g = fit_graph(KNNGraph(n_neighbors=k, space="svd", algorithm="nndescent", random_state=0),
                  as_dask(csr_row_blocks(X, 3)), recall_sample=500, client=thread_client)
    # exact neighbours in the same SVD space (same SVD: the generator's first draws are
    # the same, and the SVD is fitted on all 3,000 rows)
    ex = KNNGraph(n_neighbors=k, space="svd", algorithm="exact", random_state=0).fit(X)
    overall = np.mean(g.distances_ <= ex.distances_[:, -1:] + 1e-9)
    assert g.algorithm_ == "nndescent" and g.space_ == "svd"
    assert g.recall_ >= 0.9 and overall >= 0.9
    assert abs(g.recall_ - overall) < 0.05
    assert "recall" in g.build_time_ and "search" in g.build_time_
    assert g.neighbors_.min() >= 0
    assert not np.any(g.neighbors_ == np.arange(X.shape[0])[:, None])
    assert np.all(np.diff(g.distances_, axis=1) >= 0)
    # the distances kept are exact: never below the exact k nearest ones
    assert np.all(g.distances_ >= ex.distances_ - 1e-9)
    # same neighbour found -> same distance as the exact search's
    same = g.neighbors_[:, :1] == ex.neighbors_[:, :1]
    np.testing.assert_allclose(g.distances_[:, :1][same], ex.distances_[:, :1][same],
                               atol=1e-12)
    assert (g.adjacency_ != g.adjacency_.T).nnz == 0


def test_empty_rows(client, corpus):
    X = corpus[0][:300].tolil()
    empty = [0, 5, 150, 151, 299]
    X[empty] = 0
    X = X.tocsr()
    X.eliminate_zeros()
    params = dict(n_neighbors=5, n_components=10, random_state=1, algorithm="exact")
    with pytest.warns(UserWarning, match="5 of 300 rows of X are empty") as rec:
        g = fit_graph(KNNGraph(space="svd", **params), as_dask(uneven_blocks(X, [1, 150])),
                      sample_size=10**6)
    assert sum("are empty" in str(w.message) for w in rec) == 1
    with pytest.warns(UserWarning, match="are empty"):
        ref = KNNGraph(space="svd", **params).fit(X)
    assert g.n_empty_ == 5
    np.testing.assert_array_equal(g.neighbors_, ref.neighbors_)
    assert np.all(g.neighbors_[empty] == -1) and np.all(np.isinf(g.distances_[empty]))
    assert np.all(g.degree_[empty] == 0)
    assert not np.isin(g.neighbors_, empty).any()


def test_bad_input(client, corpus):
    X = corpus[0][:100]
    Xd = X.toarray()
    with pytest.raises(ValueError, match="chunked by rows only"):
        fit_graph(KNNGraph(n_neighbors=5), da.from_array(Xd, chunks=(50, 1000)))
    unknown = da.from_array(Xd, chunks=(50, -1))
    unknown = unknown[da.from_array(np.ones(100, dtype=bool), chunks=50)]
    with pytest.raises(ValueError, match="unknown row chunk sizes"):
        fit_graph(KNNGraph(n_neighbors=5), unknown)
    with pytest.raises(ValueError, match="n_neighbors=100 must be smaller than n_samples=100"):
        fit_graph(KNNGraph(n_neighbors=100), as_dask(csr_row_blocks(X, 2)))
    with pytest.raises(ValueError, match="exactly only, but algorithm='nndescent'"):
        fit_graph(KNNGraph(n_neighbors=5, space="tfidf", algorithm="nndescent"),
                  as_dask(csr_row_blocks(X, 2)))
    # nndescent with space='auto' searches the SVD space, at any size
    g = fit_graph(KNNGraph(n_neighbors=5, algorithm="nndescent", n_components=10,
                           random_state=0, recall_sample=0), as_dask(csr_row_blocks(X, 2)))
    assert (g.space_, g.algorithm_) == ("svd", "nndescent")
    with pytest.raises(ValueError, match="n_neighbors must be an integer"):
        fit_graph(KNNGraph(n_neighbors=0), as_dask(csr_row_blocks(X, 2)))
    with pytest.raises(ValueError, match="sample_size must be an integer >= 1"):
        fit_graph(KNNGraph(n_neighbors=5), as_dask(csr_row_blocks(X, 2)), sample_size=0)
    with pytest.raises(TypeError, match="dask array"):
        fit_graph(KNNGraph(n_neighbors=5), X)
    with pytest.raises(TypeError, match="must be a KNNGraph"):
        fit_graph(None, as_dask(csr_row_blocks(X, 2)))
    bad = X.copy()
    bad.data[3] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        fit_graph(KNNGraph(n_neighbors=5), as_dask(csr_row_blocks(bad, 2)))


def test_laprls_on_the_distributed_graph(client, corpus):
    X, y = corpus
    X = X[:400]
    blocks = csr_row_blocks(X, 2)
    g = fit_graph(KNNGraph(n_neighbors=6, n_components=20, random_state=0, algorithm="exact"),
                  as_dask(blocks))
    rng = np.random.default_rng(0)
    labeled = np.sort(rng.choice(400, 40, replace=False))
    T = np.where(y[:400][labeled] == 1, 1.0, -1.0)
    kw = dict(gamma_A=1e-3, gamma_I=2.0, tol=1e-12, max_iter=500)
    sol = laprls_fit(as_dask(blocks), T, labeled, g, **kw)
    ref = laprls_linear(X, T, labeled, g.laplacian_matvec, scale=g.scale_, **kw)
    assert sol.converged and ref.converged
    np.testing.assert_allclose(sol.coef, ref.coef, rtol=0, atol=1e-8)
    np.testing.assert_allclose(sol.intercept, ref.intercept, rtol=0, atol=1e-8)


def test_merge_keeps_best_distinct_candidates():
    ids = np.array([[4, 2, 4, -1, 7], [1, 1, 1, 1, 1]])
    dist = np.array([[0.3, 0.5, 0.3, 0.1, 0.5], [0.2, 0.2, 0.2, 0.2, 0.2]])
    nb, d = _sort_candidates(ids, dist, 3)
    np.testing.assert_array_equal(nb, [[4, 2, 7], [1, -1, -1]])  # ties by index
    np.testing.assert_array_equal(d, [[0.3, 0.5, 0.5], [0.2, np.inf, np.inf]])


# -- space='auto' as in memory, and the tie rule of the exact search --------------------
@pytest.mark.parametrize("sparse", [True, False])
def test_auto_space_is_the_in_memory_graph(client, corpus, sparse):
    """KNNGraph(space='auto') up to exact_max_samples rows: the exact search in the input
    (TF-IDF) space, as KNNGraph.fit; the same neighbour lists for any row blocks."""
    X = corpus[0][:400]
    Xin = X if sparse else X.toarray()
    params = dict(n_neighbors=7, weight="heat", power=2)
    ref = KNNGraph(**params).fit(Xin)
    assert (ref.space_, ref.algorithm_) == ("tfidf", "exact")
    g = fit_graph(KNNGraph(**params), as_dask(uneven_blocks(Xin, [90, 100, 260])))
    assert (g.space_, g.algorithm_, g.recall_, g.n_repaired_) == ("tfidf", "exact", None, 0)
    assert "svd" not in g.build_time_
    np.testing.assert_array_equal(g.neighbors_, ref.neighbors_)
    np.testing.assert_allclose(g.distances_, ref.distances_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(g.adjacency_.toarray(), ref.adjacency_.toarray(), atol=1e-12)
    assert g.scale_ == pytest.approx(ref.scale_, rel=1e-12)
    if sparse:  # row blocks of both kinds (the layout check accepts them): the same lists
        blocks = uneven_blocks(X, [90, 100, 260])
        mixed = [b if i % 2 else b.toarray() for i, b in enumerate(blocks)]
        g = fit_graph(KNNGraph(**params), as_dask(mixed))
        np.testing.assert_array_equal(g.neighbors_, ref.neighbors_)
    # above exact_max_samples: the SVD space, as in memory
    small = dict(n_neighbors=5, n_components=10, algorithm="exact", exact_max_samples=300,
                 random_state=0)
    ref = KNNGraph(**small).fit(Xin)
    g = fit_graph(KNNGraph(**small), as_dask(uneven_blocks(Xin, [200])))
    assert g.space_ == ref.space_ == "svd" and "svd" in g.build_time_
    np.testing.assert_array_equal(g.neighbors_, ref.neighbors_)


def test_auto_space_with_empty_rows(client, corpus):
    X = corpus[0][:300].tolil()
    X[[0, 5, 150, 151, 299]] = 0
    X = X.tocsr()
    X.eliminate_zeros()
    with pytest.warns(UserWarning, match="are empty"):
        ref = KNNGraph(n_neighbors=5).fit(X)
    with pytest.warns(UserWarning, match="5 of 300 rows of X are empty"):
        g = fit_graph(KNNGraph(n_neighbors=5), as_dask(uneven_blocks(X, [1, 150])))
    assert g.space_ == "tfidf" and g.n_empty_ == 5
    np.testing.assert_array_equal(g.neighbors_, ref.neighbors_)


def duplicated(X, seed=0, groups=5, copies=8):
    """X (dense) with ``groups`` documents copied to ``copies`` scattered rows each."""
    X = X.copy()
    rng = np.random.default_rng(seed)
    for _ in range(groups):
        idx = rng.choice(X.shape[0], copies, replace=False)
        X[idx] = X[idx[0]]
    return X


@pytest.mark.parametrize("space", ["tfidf", "svd"])
def test_exact_ties_keep_the_lowest_indices_for_any_blocks(client, corpus, space):
    """Duplicate documents: more rows at the k-th distance than fit. The in-memory search
    keeps the lowest indices (similarities within TIE_TOL tie); so must every block
    layout."""
    Xd = duplicated(corpus[0][:200].toarray())
    params = dict(n_neighbors=5, space=space, algorithm="exact", n_components=10,
                  random_state=0)
    for Xin in (sp.csr_matrix(Xd), Xd):
        ref = KNNGraph(**params).fit(Xin)
        for cuts in ([], [100], [37], [13, 90, 150]):
            g = fit_graph(KNNGraph(**params), as_dask(uneven_blocks(Xin, cuts)))
            np.testing.assert_array_equal(g.neighbors_, ref.neighbors_)
            np.testing.assert_allclose(g.distances_, ref.distances_, rtol=0, atol=1e-12)


def test_exact_merge_tie_rule_without_a_cluster():
    """_exact_sims + _merge_exact: 6 copies of one row over two blocks, k=3: the lowest
    global indices other than the query, whatever the block split."""
    from linlap.distributed.graph import _exact_sims, _merge_exact
    from linlap.graph.search import exact_knn

    rng = np.random.default_rng(0)
    E = rng.random((12, 4))
    E[[1, 3, 4, 7, 9, 10]] = E[1]
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    ref_i, ref_d = exact_knn(E, 3)
    ids = np.arange(12)
    for cut in (2, 5, 8, 10):
        parts = [_exact_sims(E, ids, E[a:b], ids[a:b], 3)
                 for a, b in ((0, cut), (cut, 12))]
        nb, dist = _merge_exact(3, *parts[::-1])  # the blocks' order does not matter
        np.testing.assert_array_equal(nb, ref_i)
        np.testing.assert_allclose(dist, ref_d, atol=1e-12)
    np.testing.assert_array_equal(ref_i[9], [1, 3, 4])


def test_unknown_columns_and_closed_client(corpus):
    import dask
    from distributed import Client, LocalCluster

    X = corpus[0][:60].toarray()
    cols = da.from_delayed(dask.delayed(X), shape=(60, np.nan), dtype=float,
                           meta=np.empty((0, 0)))
    with pytest.raises(ValueError, match="unknown number of columns"):
        fit_graph(KNNGraph(n_neighbors=5), cols)
    cluster = LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                           dashboard_address=None)
    c = Client(cluster, set_as_default=False)
    c.close()
    cluster.close()
    with pytest.raises(ValueError, match="the Dask client is closed"):
        fit_graph(KNNGraph(n_neighbors=5), as_dask(csr_row_blocks(corpus[0][:60], 2)), client=c)
