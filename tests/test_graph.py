"""Tests of linlap.graph.KNNGraph against dense reference computations."""

import os

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import normalize

import linlap
import linlap.graph.search as search_mod
from linlap import LapRLSClassifier
from linlap.graph import KNNGraph
from reference import dense_laplacian


# ----------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------

def random_sparse(n=120, d=40, density=0.15, seed=0):
    """Nonnegative random sparse rows, none empty, not normalised."""
    rng = np.random.RandomState(seed)
    X = sp.random(n, d, density=density, random_state=rng, format="lil",
                  data_rvs=lambda m: rng.uniform(0.1, 3.0, m))
    for i in range(n):  # no empty row
        if X.rows[i] == []:
            X[i, rng.randint(d)] = 1.0
    return X.tocsr()


def dense_cos(X):
    Xn = normalize(X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float))
    return Xn @ Xn.T


@pytest.fixture(scope="module")
def X_small():
    return random_sparse()


# ----------------------------------------------------------------------------
# exact search
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["csr", "csc", "dense", "float32"])
def test_exact_neighbors_match_sklearn(X_small, fmt):
    X = {"csr": X_small, "csc": X_small.tocsc(), "dense": X_small.toarray(),
         "float32": X_small.astype(np.float32)}[fmt]
    k = 7
    g = KNNGraph(weight="binary", power=1, n_neighbors=k, algorithm="exact").fit(X)
    nn = NearestNeighbors(n_neighbors=k + 1, metric="cosine", algorithm="brute")
    dist, ind = nn.fit(X_small).kneighbors(X_small)
    assert np.array_equal(ind[:, 0], np.arange(X_small.shape[0]))  # no duplicates here
    np.testing.assert_array_equal(g.neighbors_, ind[:, 1:])
    # d = sqrt(2 - 2 cos) = sqrt(2 * cosine_distance)
    tol = 1e-5 if fmt == "float32" else 1e-10
    np.testing.assert_allclose(g.distances_, np.sqrt(2 * np.maximum(dist[:, 1:], 0)),
                               atol=tol)
    assert g.neighbors_.shape == (X_small.shape[0], k)
    assert g.algorithm_ == "exact" and g.recall_ is None and g.n_repaired_ == 0
    assert set(g.build_time_) >= {"search", "weights", "total"}
    assert g.n_samples_fit_ == X_small.shape[0] and g.n_features_in_ == X_small.shape[1]


def test_exact_blocked_search_matches_unblocked(X_small, monkeypatch):
    g_ref = KNNGraph(weight="binary", power=1, n_neighbors=5, algorithm="exact").fit(X_small)
    # a tiny memory budget forces many small blocks; two threads too
    monkeypatch.setattr(search_mod, "EXACT_MEMORY_BUDGET", 24 * 120 * 7)
    g = KNNGraph(weight="binary", power=1, n_neighbors=5, algorithm="exact", n_jobs=2).fit(X_small)
    np.testing.assert_array_equal(g.neighbors_, g_ref.neighbors_)
    np.testing.assert_array_equal(g.distances_, g_ref.distances_)


def reference_knn(X, k):
    """Plain dense reference of the exact search: for every non-empty row, all the other
    non-empty rows by decreasing cosine similarity, ties (similarities within 1e-12) by
    index; the first k of them (-1 for empty rows). Also the similarities."""
    D = (X.toarray() if sp.issparse(X) else np.asarray(X)).astype(np.float64)
    C = normalize(D) @ normalize(D).T
    nonempty = np.flatnonzero(np.any(D != 0, axis=1))
    ind = np.full((D.shape[0], k), -1)
    for i in nonempty:
        cand = nonempty[nonempty != i]
        s = C[i, cand]
        by_sim = np.argsort(-s, kind="stable")
        # runs of similarities within 1e-12 of the previous one are one tie group
        group = np.r_[0, np.cumsum(np.diff(-s[by_sim]) > search_mod.TIE_TOL)]
        order = by_sim[np.lexsort((cand[by_sim], group))]
        ind[i] = cand[order[:k]]
    return ind, C


def check_against_reference(neighbors, distances, X, k):
    ref, C = reference_knn(X, k)
    np.testing.assert_array_equal(neighbors < 0, ref < 0)  # the empty rows
    tol = search_mod.TIE_TOL
    for i in np.flatnonzero(ref[:, 0] >= 0):
        sims = C[i, neighbors[i]]
        np.testing.assert_allclose(distances[i], search_mod.cos_to_dist(sims), atol=1e-7)
        if C[i, ref[i, -1]] > tol:
            np.testing.assert_array_equal(neighbors[i], ref[i])
        else:  # rows sharing no term fill the last places, in an unspecified choice
            head = C[i, ref[i]] > tol
            np.testing.assert_array_equal(neighbors[i][head], ref[i][head])
            tail = neighbors[i][~head]
            assert np.all(C[i, tail] <= tol) and np.unique(neighbors[i]).size == k
            assert i not in tail and np.all(ref[tail, 0] >= 0)  # not empty either


def reference_problems():
    """Random nonnegative problems: integer counts (tied similarities) and real values,
    some rows duplicated, some empty, some sharing no term with many others."""
    for seed in range(12):
        rng = np.random.default_rng(seed)
        sparse = seed % 3 == 2  # few terms a row: many rows share none with a row
        n, d = int(rng.integers(20, 90)), int(rng.integers(30, 90) if sparse else
                                               rng.integers(3, 30))
        density = float(rng.uniform(0.02, 0.06) if sparse else rng.uniform(0.08, 0.5))
        X = sp.random(n, d, density=density, random_state=seed, format="csr")
        if seed % 2 == 0:
            X.data = np.ceil(X.data * 3)  # counts 1..3
        X = X.tolil()
        X[rng.choice(n, 3, replace=False), :] = 0  # empty rows
        X = X.tocsr()
        X = sp.vstack([X, X[rng.integers(0, n, n // 4)]]).tocsr()  # duplicates
        n_ok = np.count_nonzero(np.diff(X.indptr))
        yield seed, X, int(rng.integers(1, min(12, n_ok - 1)))


@pytest.mark.filterwarnings("ignore:.*rows of X are empty")
@pytest.mark.parametrize("fmt", ["csr", "dense", "csr float32"])
@pytest.mark.parametrize("blocks", ["one", "many"])
def test_exact_search_matches_dense_reference(fmt, blocks, monkeypatch):
    if blocks == "many":  # small blocks (not dividing n) on two threads
        monkeypatch.setattr(search_mod, "EXACT_MEMORY_BUDGET", 24 * 100 * 7)
    for seed, X, k in reference_problems():
        data = {"csr": X, "dense": X.toarray(), "csr float32": X.astype(np.float32)}[fmt]
        g = KNNGraph(n_neighbors=k, algorithm="exact", n_jobs=2 if blocks == "many" else None
                     ).fit(data)
        check_against_reference(g.neighbors_, g.distances_, data, k)


def test_similarity_blocks_are_those_of_the_products():
    # the sparse blocks are summed in the order of scipy's product: the same bits (so
    # the graph is that of the former search by scipy's product)
    for seed, X, _ in reference_problems():
        Xn, _ = search_mod.prepare_input(X)
        XT = search_mod.transpose(Xn)
        rows = np.random.default_rng(seed).integers(0, X.shape[0], 9)
        np.testing.assert_array_equal(search_mod.similarity_block(Xn, rows, XT),
                                      (Xn[rows] @ XT).toarray())
        # query rows against other rows (a block pair of the distributed search)
        Q, ET = Xn[:20], search_mod.transpose(Xn[20:])
        np.testing.assert_array_equal(search_mod.similarity_block(Q, np.arange(20), ET),
                                      (Q @ ET).toarray())
        D = Xn.toarray()
        out = np.full((rows.size, X.shape[0]), np.nan)
        assert search_mod.similarity_block(D, rows, D.T, out=out) is out
        np.testing.assert_array_equal(out, D[rows] @ D.T)


def test_user_X_not_modified(X_small):
    X = X_small.copy()
    X.data *= 3.0  # unnormalised rows
    X = X.tocsr()
    X.indices = X.indices.copy()
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    KNNGraph(weight="binary", power=1, n_neighbors=4).fit(X)
    assert np.array_equal(X.data, before[0])
    assert np.array_equal(X.indices, before[1])
    assert np.array_equal(X.indptr, before[2])
    D = X.toarray()
    D0 = D.copy()
    KNNGraph(power=1, n_neighbors=4, weight="cosine").fit(D)
    assert np.array_equal(D, D0)


# ----------------------------------------------------------------------------
# weights and symmetrisation
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("weight", ["binary", "heat", "cosine"])
@pytest.mark.parametrize("symmetrize", ["union", "mutual"])
def test_adjacency_structure(X_small, weight, symmetrize):
    g = KNNGraph(power=1, n_neighbors=6, weight=weight, symmetrize=symmetrize).fit(X_small)
    W = g.adjacency_
    assert sp.isspmatrix_csr(W) and W.dtype == np.float64
    assert W.has_sorted_indices
    assert (W != W.T).nnz == 0
    assert not W.diagonal().any()
    assert np.all(W.data > 0)
    np.testing.assert_allclose(g.degree_, W.toarray().sum(axis=1))


def test_union_and_mutual_edge_sets(X_small):
    k = 5
    gu = KNNGraph(weight="binary", power=1, n_neighbors=k, symmetrize="union").fit(X_small)
    gm = KNNGraph(weight="binary", power=1, n_neighbors=k, symmetrize="mutual").fit(X_small)
    n = X_small.shape[0]
    A = np.zeros((n, n), dtype=bool)
    A[np.repeat(np.arange(n), k), gu.neighbors_.ravel()] = True
    np.testing.assert_array_equal(gu.adjacency_.toarray() > 0, A | A.T)
    np.testing.assert_array_equal(gm.adjacency_.toarray() > 0, A & A.T)
    # union contains mutual
    assert ((gm.adjacency_ > 0).astype(int) - (gu.adjacency_ > 0).astype(int)).max() <= 0
    assert gm.adjacency_.nnz < gu.adjacency_.nnz


def test_weight_formulas_by_hand(X_small):
    k = 4
    C = dense_cos(X_small)
    edges = [(i, None) for i in (0, 17, 55, 119)]
    g_bin = KNNGraph(power=1, n_neighbors=k, weight="binary").fit(X_small)
    g_heat = KNNGraph(power=1, n_neighbors=k, weight="heat", heat_sigma=0.7).fit(X_small)
    g_auto = KNNGraph(power=1, n_neighbors=k, weight="heat").fit(X_small)
    g_cos = KNNGraph(power=1, n_neighbors=k, weight="cosine").fit(X_small)
    assert g_heat.heat_sigma_ == 0.7
    sigma = g_auto.distances_.mean()
    assert g_auto.heat_sigma_ == pytest.approx(sigma)
    assert g_bin.heat_sigma_ is None
    for i, _ in edges:
        for j in g_bin.neighbors_[i][[0, -1]]:
            d2 = 2 - 2 * C[i, j]
            assert g_bin.adjacency_[i, j] == 1.0
            assert g_heat.adjacency_[i, j] == pytest.approx(np.exp(-d2 / (2 * 0.7 ** 2)))
            assert g_auto.adjacency_[i, j] == pytest.approx(np.exp(-d2 / (2 * sigma ** 2)))
            assert g_cos.adjacency_[i, j] == pytest.approx(C[i, j])


def weights_by_coo(neighbors, distances, weight, heat_sigma, symmetrize):
    """The former construction of W (COO, a transposed copy): the reference of the
    direct CSR one."""
    n, k = neighbors.shape
    cols = neighbors.ravel()
    edge = cols >= 0
    rows = np.repeat(np.arange(n), k)[edge]
    cols, dist = cols[edge], distances.ravel()[edge]
    sigma = None
    if weight == "binary":
        w = np.ones(cols.size)
    elif weight == "heat":
        sigma = heat_sigma
        if heat_sigma is None:
            sigma = float(np.mean(dist)) if dist.size else 1.0
            sigma = sigma if sigma > 0 else 1.0
        w = np.exp(-(dist ** 2) / (2.0 * sigma * sigma))
    else:
        w = np.maximum(0.0, 1.0 - 0.5 * dist ** 2)
    A = sp.csr_matrix((w, (rows, cols)), shape=(n, n))
    AT = sp.csr_matrix(A.T)
    W = sp.csr_matrix(A.maximum(AT) if symmetrize == "union" else A.minimum(AT))
    W.eliminate_zeros()
    W.sort_indices()
    return W, sigma


@pytest.mark.parametrize("weight, heat_sigma", [("binary", None), ("heat", None),
                                                ("heat", 0.3), ("cosine", None)])
@pytest.mark.parametrize("symmetrize", ["union", "mutual"])
def test_weights_matrix_same_bits_as_coo_construction(X_small, weight, heat_sigma,
                                                      symmetrize):
    from linlap.graph.weights import weights_matrix

    g = KNNGraph(n_neighbors=8, power=1).fit(X_small)
    nb, dist = g.neighbors_.copy(), g.distances_.copy()
    nb[[4, 50]], dist[[4, 50]] = -1, np.inf  # as the rows of empty documents
    dist[7, 0] = dist[7, 1] = 0.0  # duplicates
    # full lists, column slices (as subgraph passes them), all rows or some empty
    for a, b in [(g.neighbors_, g.distances_), (nb, dist), (nb[:, :3], dist[:, :3]),
                 (g.neighbors_[:, :5], g.distances_[:, :5])]:
        W, sigma = weights_matrix(a, b, weight, heat_sigma, symmetrize)
        R, sigma_ref = weights_by_coo(a, b, weight, heat_sigma, symmetrize)
        assert sigma == sigma_ref
        for name in ("indptr", "indices", "data"):
            x, y = getattr(W, name), getattr(R, name)
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)


def test_cosine_weight_clipped_at_zero():
    # Orthogonal neighbours (cos = 0) give no edge; negative cosines are clipped.
    X = np.array([[1.0, 0, 0], [0.9, 0.1, 0], [0, 0, 1.0], [-1.0, 0, 0.05]])
    g = KNNGraph(power=1, n_neighbors=1, weight="cosine").fit(X)
    assert np.all(g.adjacency_.data > 0)
    assert np.all(np.isfinite(g.laplacian_matvec(np.ones(4))))


def test_subnormal_heat_weights_are_no_edge():
    # a far node whose heat weights underflow to subnormals (≈ 1e-311) would have a
    # subnormal degree, and the normalised passes' 1/degree would be inf: such weights
    # count as no edge, and L^p z of the passes equals scipy's
    rng = np.random.default_rng(0)
    n, d = 60, 10
    X = np.zeros((n, d))
    X[:, 0] = 1.0
    X[1:, 1:] = 0.05 * rng.standard_normal((n - 1, d - 1))
    X[0] = 0.0
    X[0, 1] = 1.0
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    sigma = np.sqrt((2 - 2 * X[1:] @ X[0]).min() / (2 * 715.0))
    z = rng.standard_normal(n)
    for p in (1, 2, 3):
        g = KNNGraph(n_neighbors=5, weight="heat", heat_sigma=sigma, power=p).fit(X)
        assert g.adjacency_.data.min() >= np.finfo(np.float64).tiny
        assert g.degree_[0] == 0  # node 0 lost its edges
        np.testing.assert_allclose(g.laplacian_matvec(z), g.laplacian_matrix() @ z,
                                   rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------
# Laplacian
# ----------------------------------------------------------------------------

def test_unnormalized_laplacian(X_small):
    g = KNNGraph(power=1, n_neighbors=5, weight="heat", normalized=False).fit(X_small)
    n = X_small.shape[0]
    np.testing.assert_allclose(g.laplacian_matvec(np.ones(n)), 0, atol=1e-12)
    L = g.laplacian_matrix().toarray()
    np.testing.assert_allclose(L, dense_laplacian(g.adjacency_, False), atol=1e-13)
    assert g.trace_ == pytest.approx(g.adjacency_.sum())
    assert g.scale_ == pytest.approx(1 / g.adjacency_.sum())
    assert np.linalg.eigvalsh(L).min() > -1e-10


def test_normalized_laplacian(X_small):
    g = KNNGraph(power=1, n_neighbors=5, weight="cosine", normalized=True).fit(X_small)
    n = X_small.shape[0]
    W = g.adjacency_.toarray()
    Dm = np.diag(1 / np.sqrt(W.sum(axis=1)))
    L_ref = np.eye(n) - Dm @ W @ Dm
    L = g.laplacian_matrix().toarray()
    np.testing.assert_allclose(L, L_ref, atol=1e-13)
    ev = np.linalg.eigvalsh(L)
    assert ev.min() > -1e-10 and ev.max() < 2 + 1e-10
    # D^{1/2} 1 is in the null space
    np.testing.assert_allclose(g.laplacian_matvec(np.sqrt(W.sum(axis=1))), 0, atol=1e-12)
    assert g.trace_ == n and g.scale_ == pytest.approx(1 / n)


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("p", [1, 2, 3])
def test_matvec_power_matches_dense(X_small, normalized, p):
    g = KNNGraph(n_neighbors=6, weight="heat", normalized=normalized, power=p).fit(X_small)
    n = X_small.shape[0]
    Lp = np.linalg.matrix_power(dense_laplacian(g.adjacency_, normalized), p)
    rng = np.random.RandomState(p)
    z, Z = rng.randn(n), rng.randn(n, 3)
    np.testing.assert_allclose(g.laplacian_matvec(z), Lp @ z, atol=1e-10)
    np.testing.assert_allclose(g.laplacian_matvec(Z), Lp @ Z, atol=1e-10)
    out32 = g.laplacian_matvec(Z.astype(np.float32))
    assert out32.shape == Z.shape and out32.dtype == np.float64
    np.testing.assert_allclose(out32, Lp @ Z.astype(np.float32), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g.laplacian_matrix().toarray(), Lp, atol=1e-10)
    np.testing.assert_allclose(g.laplacian_matrix(power=1).toarray(),
                               dense_laplacian(g.adjacency_, normalized), atol=1e-12)
    # the trace is that of L, whatever the power
    assert g.trace_ == pytest.approx(np.trace(dense_laplacian(g.adjacency_, normalized)))


def test_matvec_input_checks(X_small):
    g = KNNGraph(weight="binary", power=1, n_neighbors=3).fit(X_small)
    with pytest.raises(ValueError, match="shape"):
        g.laplacian_matvec(np.ones(5))
    with pytest.raises(TypeError):
        g.laplacian_matvec(sp.eye(X_small.shape[0]))
    assert g.laplacian_matvec(np.ones(X_small.shape[0], dtype=int)).dtype == np.float64


# ----------------------------------------------------------------------------
# degenerate inputs
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("weight", ["binary", "heat", "cosine"])
@pytest.mark.parametrize("normalized", [True, False])
def test_duplicates_give_finite_values(weight, normalized):
    X = random_sparse(n=30, d=12, seed=3).toarray()
    X = np.vstack([X, X[:10], 2 * X[:5]])  # exact and scaled duplicates
    g = KNNGraph(n_neighbors=3, weight=weight, normalized=normalized, power=2).fit(X)
    assert np.all(np.isfinite(g.distances_)) and np.all(np.isfinite(g.adjacency_.data))
    # row 30 duplicates row 0: its nearest neighbour is at distance 0, weight 1
    assert g.distances_[30, 0] == pytest.approx(0, abs=1e-7)
    j = g.neighbors_[30, 0]
    assert j != 30 and g.adjacency_[30, j] == pytest.approx(1.0)
    assert np.all(np.isfinite(g.laplacian_matvec(np.random.RandomState(0).randn(len(X), 2))))
    assert np.all(np.isfinite(g.laplacian_matrix().data))


def test_all_duplicates_heat_sigma_falls_back():
    X = np.repeat(np.eye(3) + 0.1, 4, axis=0)  # 3 groups of 4 identical rows
    g = KNNGraph(power=1, n_neighbors=3, weight="heat").fit(X)
    np.testing.assert_allclose(g.distances_, 0, atol=1e-7)
    assert g.heat_sigma_ == 1.0
    np.testing.assert_allclose(g.adjacency_.data, 1.0)
    # neighbours never include the row itself, even though all hits tie
    assert not np.any(g.neighbors_ == np.arange(12)[:, None])


def test_isolated_nodes_with_mutual():
    # Points on an arc: the outlier's nearest neighbour (row 2) prefers row 1,
    # so with k=1 and the mutual rule the outlier is isolated.
    ang = np.array([0.0, 0.1, 0.2, 1.2])
    X = np.c_[np.cos(ang), np.sin(ang)] + 1e-3
    for normalized in (True, False):
        g = KNNGraph(power=1, n_neighbors=1, symmetrize="mutual", normalized=normalized,
                     weight="heat").fit(X)
        assert g.degree_[3] == 0 and g.n_isolated_ >= 1
        L = g.laplacian_matrix().toarray()
        assert np.all(np.isfinite(L))
        assert not L[3].any() and not L[:, 3].any()
        np.testing.assert_allclose(L, dense_laplacian(g.adjacency_, normalized), atol=1e-13)
        z = np.arange(4.0)
        np.testing.assert_allclose(g.laplacian_matvec(z), L @ z, atol=1e-13)
        if normalized:
            assert g.trace_ == 4 - g.n_isolated_
        else:
            assert g.trace_ == pytest.approx(g.degree_.sum())


@pytest.mark.parametrize("weight", ["binary", "heat", "cosine"])
@pytest.mark.parametrize("algorithm, space", [("exact", "tfidf"), ("nndescent", "tfidf"),
                                              ("nndescent", "svd")])
def test_empty_rows_become_isolated_nodes(weight, algorithm, space, monkeypatch):
    monkeypatch.setattr(search_mod, "nndescent_search", _fake_nndescent(lambda i, d: None)[0])
    X = random_sparse(n=40, d=10).tolil()
    X[3, :] = 0
    X[11, :] = 0
    X = X.tocsr()
    Xz = X.copy()  # an explicitly stored zero does not make a row non-empty
    Xz.data[Xz.indptr[5]:Xz.indptr[6]] = 0.0
    for data, empty in [(X, [3, 11]), (X.toarray(), [3, 11]), (Xz, [3, 5, 11])]:
        kw = dict(weight=weight, power=2, n_neighbors=4, algorithm=algorithm, space=space,
                  n_components=5, random_state=0)
        with pytest.warns(UserWarning, match=f"{len(empty)} of 40 rows of X are empty"):
            g = KNNGraph(**kw).fit(data)
        assert g.n_empty_ == len(empty)
        assert np.all(g.neighbors_[empty] == -1) and np.all(np.isinf(g.distances_[empty]))
        assert not np.isin(g.neighbors_, empty).any()  # nobody's neighbour either
        W = g.adjacency_.toarray()
        assert not W[empty].any() and not W[:, empty].any()
        assert np.all(g.degree_[empty] == 0) and g.n_isolated_ >= len(empty)
        L = g.laplacian_matrix().toarray()
        assert not L[empty].any() and not L[:, empty].any()
        Z = np.random.default_rng(0).standard_normal((40, 2))
        np.testing.assert_allclose(g.laplacian_matvec(Z), L @ Z, atol=1e-12)
        # the other rows get the graph of the non-empty rows alone
        keep = np.setdiff1d(np.arange(40), empty)
        h = KNNGraph(**kw).fit(data[keep])
        np.testing.assert_array_equal(W[np.ix_(keep, keep)], h.adjacency_.toarray())


def test_empty_rows_save_load_and_errors(tmp_path):
    X = random_sparse(n=30, d=10).tolil()
    X[[0, 7], :] = 0
    X = X.tocsr()
    with pytest.warns(UserWarning):
        g = KNNGraph(n_neighbors=3, reorder=True).fit(X)
    g.save(tmp_path / "g.npz")
    h = KNNGraph.load(tmp_path / "g.npz")
    assert h.n_empty_ == 2
    np.testing.assert_array_equal(h.neighbors_, g.neighbors_)
    Z = np.random.default_rng(1).standard_normal(30)
    np.testing.assert_allclose(h.laplacian_matvec(Z), g.laplacian_matvec(Z), atol=1e-13)
    assert g.with_laplacian(power=2).n_empty_ == 2
    # k must be below the number of non-empty rows, and the message says why
    with pytest.raises(ValueError, match=r"smaller than the 28 non-empty rows \(2 rows"):
        with pytest.warns(UserWarning):
            KNNGraph(n_neighbors=28).fit(X)
    Xall = sp.csr_matrix((5, 4))
    with pytest.raises(ValueError, match="non-empty"):
        with pytest.warns(UserWarning):
            KNNGraph(n_neighbors=1).fit(Xall)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_raise(bad):
    X = random_sparse(n=20, d=10)
    Xs = X.copy()
    Xs.data[4] = bad
    Xd = X.toarray()
    Xd[2, 3] = bad
    name = "NaN" if np.isnan(bad) else "inf"
    for Xb in (Xs, Xd):
        with pytest.raises(ValueError, match="non-finite") as exc:
            KNNGraph(weight="binary", power=1, n_neighbors=2).fit(Xb)
        assert f"1 {name}" in str(exc.value)


def test_bad_shapes_and_params_raise(X_small):
    n = X_small.shape[0]
    with pytest.raises(ValueError, match=rf"n_neighbors={n}.*n_samples={n}"):
        KNNGraph(weight="binary", power=1, n_neighbors=n).fit(X_small)
    with pytest.raises(ValueError, match=rf"n_neighbors={n + 5}.*n_samples={n}"):
        KNNGraph(weight="binary", power=1, n_neighbors=n + 5).fit(X_small)
    with pytest.raises(ValueError, match="2-D"):
        KNNGraph().fit(np.ones(5))
    with pytest.raises(ValueError, match="at least 2 samples"):
        KNNGraph(weight="binary", power=1, n_neighbors=1).fit(np.ones((1, 3)))
    bad_params = [dict(n_neighbors=0), dict(n_neighbors=2.5), dict(weight="gauss"),
                  dict(heat_sigma=0.0), dict(heat_sigma=-1.0), dict(symmetrize="both"),
                  dict(power=0), dict(power=1.5), dict(space="lsa"), dict(algorithm="hnsw"),
                  dict(n_search_neighbors=3), dict(recall_sample=-1), dict(normalized="yes"),
                  dict(nndescent_kwds={"metric": "euclidean"}), dict(n_components=0)]
    for params in bad_params:
        kw = dict(n_neighbors=3, weight="binary", power=1)
        kw.update(params)
        with pytest.raises(ValueError):
            KNNGraph(**kw).fit(X_small)
    with pytest.raises(ValueError, match="n_components"):
        KNNGraph(weight="binary", power=1, n_neighbors=3, space="svd", n_components=500).fit(X_small)


def test_not_fitted_errors():
    g = KNNGraph()
    for call in (lambda: g.laplacian_matvec(np.ones(3)), g.laplacian_matrix,
                 g.with_laplacian, lambda: g.save("x.npz")):
        with pytest.raises(NotFittedError):
            call()


# ----------------------------------------------------------------------------
# SVD space
# ----------------------------------------------------------------------------

def test_svd_space_full_rank_matches_tfidf(X_small):
    # A full-rank SVD is a rotation: the neighbours cannot change.
    d = X_small.shape[1]
    g = KNNGraph(weight="binary", power=1, n_neighbors=5, space="svd", n_components=d, random_state=0).fit(X_small)
    g0 = KNNGraph(weight="binary", power=1, n_neighbors=5).fit(X_small)
    np.testing.assert_array_equal(g.neighbors_, g0.neighbors_)
    np.testing.assert_allclose(g.distances_, g0.distances_, atol=1e-8)
    assert "svd" in g.build_time_
    g_low = KNNGraph(weight="binary", power=1, n_neighbors=5, space="svd", n_components=5, random_state=0).fit(X_small)
    assert (g_low.neighbors_ != g0.neighbors_).any()


def test_svd_space_cuts_columns_no_row_uses(X_small, monkeypatch):
    """Rows padded with many empty columns (hashed features) are cut to the columns they
    use before the SVD: the same subspace, so a full-rank SVD still gives the input's graph."""
    from sklearn.decomposition import TruncatedSVD

    n, d = X_small.shape
    padded = sp.hstack([sp.csr_matrix((n, 50 * d)), X_small, sp.csr_matrix((n, 7))],
                       format="csr")
    seen = []
    real_fit_transform = TruncatedSVD.fit_transform

    def fit_transform(self, X, y=None):
        seen.append(X.shape[1])
        return real_fit_transform(self, X, y)

    monkeypatch.setattr(TruncatedSVD, "fit_transform", fit_transform)
    g = KNNGraph(weight="binary", power=1, n_neighbors=5, space="svd", n_components=d,
                 random_state=0).fit(padded)
    assert seen == [d]  # the SVD saw the d used columns, not 51 d + 7
    g0 = KNNGraph(weight="binary", power=1, n_neighbors=5).fit(X_small)
    np.testing.assert_array_equal(g.neighbors_, g0.neighbors_)
    np.testing.assert_allclose(g.distances_, g0.distances_, atol=1e-8)


def svd_by_fit_then_transform(Y, n_components, svd_sample, rng, chunk):
    """The former SVD embedding: fit (on the sample), then transform of every row."""
    from sklearn.decomposition import TruncatedSVD

    n = Y.shape[0]
    fit_rows = np.arange(n) if n <= svd_sample else np.sort(
        rng.choice(n, size=svd_sample, replace=False))
    svd = TruncatedSVD(n_components, algorithm="randomized",
                       random_state=rng.randint(np.iinfo(np.int32).max))
    svd.fit(Y[fit_rows] if fit_rows.size < n else Y)
    E = np.vstack([svd.transform(Y[s:s + chunk]) for s in range(0, n, chunk)])
    search_mod.normalize_embedding(E)
    return E


@pytest.mark.parametrize("chunk", [100_000, 37])
@pytest.mark.parametrize("svd_sample", [1000, 50])
def test_svd_embedding_projects_once(X_small, chunk, svd_sample, monkeypatch):
    from sklearn.decomposition import TruncatedSVD

    Xn, _ = search_mod.prepare_input(X_small)
    n = Xn.shape[0]
    calls = []
    transform = TruncatedSVD.transform
    monkeypatch.setattr(TruncatedSVD, "transform",
                        lambda self, X: calls.append(X.shape[0]) or transform(self, X))
    monkeypatch.setattr(search_mod, "SVD_CHUNK", chunk)
    for Y in (Xn, Xn.toarray()):
        calls.clear()
        E = search_mod.svd_embedding(Y, 6, svd_sample, np.random.RandomState(0), False)
        # with every row in the sample, the fit's own projection is the embedding
        # (except dense rows in several chunks: the chunks are projected as before)
        once = svd_sample >= n and (sp.issparse(Y) or chunk >= n)
        assert calls == ([] if once else [min(chunk, n - s) for s in range(0, n, chunk)])
        calls.clear()
        ref = svd_by_fit_then_transform(Y, 6, svd_sample, np.random.RandomState(0), chunk)
        np.testing.assert_array_equal(E, ref)  # the same bits as before
        assert E.flags.c_contiguous and E.dtype == np.float64


# ----------------------------------------------------------------------------
# approximate search
# ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def docs():
    """Real text: the TF-IDF of the 1,945 bundled PCMAC posts."""
    from linlap.datasets import load_pcmac
    from linlap.text import make_vectorizer

    return make_vectorizer().fit_transform(load_pcmac().data).tocsr()


def test_nndescent_recall(docs, capsys):
    k = 10
    g = KNNGraph(weight="binary", power=1, n_neighbors=k, algorithm="nndescent", recall_sample=300,
                 random_state=0, verbose=True).fit(docs)
    out, err = capsys.readouterr()
    assert out == "" and "NN descent" in err  # pynndescent's own progress on stderr
    g_ex = KNNGraph(weight="binary", power=1, n_neighbors=k, algorithm="exact").fit(docs)
    assert g.algorithm_ == "nndescent"
    assert 0.0 <= g.recall_ <= 1.0
    assert g.recall_ >= 0.8
    assert "recall" in g.build_time_
    assert g.neighbors_.min() >= 0
    assert not np.any(g.neighbors_ == np.arange(docs.shape[0])[:, None])
    # recall over all rows, tie-aware, against the exact graph
    overall = np.mean(g.distances_ <= g_ex.distances_[:, -1:] + 1e-9)
    assert overall >= 0.8
    assert abs(overall - g.recall_) < 0.1
    # distances are exact for the edges found: nearest first, and never
    # better than the exact ones
    assert np.all(np.diff(g.distances_, axis=1) >= 0)
    assert np.all(g.distances_ >= g_ex.distances_ - 1e-9)
    C = docs[:50].multiply(docs[g.neighbors_[:50, 0]]).sum(axis=1).A.ravel()
    np.testing.assert_allclose(g.distances_[:50, 0], np.sqrt(np.maximum(0, 2 - 2 * C)))
    W = g.adjacency_
    assert (W != W.T).nnz == 0


def _fake_nndescent(corrupt):
    """A stand-in for pynndescent: exact neighbours (self first), then corrupted."""
    calls = {}

    def fake(X, n_neighbors, *, metric, random_state, n_jobs, verbose, kwds):
        calls["args"] = dict(n_neighbors=n_neighbors, metric=metric, kwds=kwds,
                             dtype=X.dtype, sparse=sp.issparse(X))
        Xn = X.astype(np.float64)
        ind, dist = search_mod.exact_knn(Xn, n_neighbors - 1)
        n = X.shape[0]
        ind = np.c_[np.arange(n), ind].astype(np.int32)
        dist = np.c_[np.zeros(n), dist].astype(np.float32)
        corrupt(ind, dist)
        return ind, dist

    return fake, calls


def test_nndescent_minus_one_rows_are_repaired(X_small, monkeypatch):
    n, k = X_small.shape[0], 5

    def corrupt(ind, dist):
        ind[3, 2:] = -1              # too few neighbours
        dist[3, 2:] = np.inf
        ind[7, :] = -1               # nothing found
        ind[10, 4] = -1              # a hole in the kept range
        dist[20, 1] = np.inf         # infinite distance among the kept
        ind[25, 2] = ind[25, 1]      # a repeated neighbour
        ind[40, 0] = ind[40, 1]      # self missing: still fine (no repair)
        ind[40, 1] = 40              # self not first
    fake, calls = _fake_nndescent(corrupt)
    monkeypatch.setattr(search_mod, "nndescent_search", fake)
    g = KNNGraph(weight="binary", power=1, n_neighbors=k, algorithm="nndescent", n_search_neighbors=8,
                 recall_sample=50, random_state=0).fit(X_small)
    g_ex = KNNGraph(weight="binary", power=1, n_neighbors=k, algorithm="exact").fit(X_small)
    assert calls["args"]["n_neighbors"] == 8 and calls["args"]["metric"] == "cosine"
    assert g.n_repaired_ == 5
    assert g.neighbors_.min() >= 0
    assert np.all(np.isfinite(g.distances_))
    np.testing.assert_array_equal(g.neighbors_, g_ex.neighbors_)
    np.testing.assert_allclose(g.distances_, g_ex.distances_, atol=1e-12)
    assert g.recall_ == 1.0
    np.testing.assert_array_equal(g.adjacency_.toarray(), g_ex.adjacency_.toarray())
    # -1 never became an edge (it would show up as column n - 1)
    A = g.adjacency_.toarray()
    assert A[n - 1].sum() == g_ex.adjacency_.toarray()[n - 1].sum()


def test_nndescent_auto_and_svd_paths(X_small, monkeypatch):
    def corrupt(ind, dist):
        ind[0, :] = -1
    fake, calls = _fake_nndescent(corrupt)
    monkeypatch.setattr(search_mod, "nndescent_search", fake)
    g = KNNGraph(weight="binary", power=1, n_neighbors=4, exact_max_samples=50, space="svd", n_components=10,
                 random_state=0, recall_sample=0).fit(X_small)
    assert g.algorithm_ == "nndescent" and g.recall_ is None and g.n_repaired_ == 1
    assert calls["args"]["dtype"] == np.float32 and not calls["args"]["sparse"]
    assert calls["args"]["n_neighbors"] == 14  # k + 10 on a dense embedding
    assert g.space_ == "svd"
    g_ex = KNNGraph(weight="binary", power=1, n_neighbors=4, algorithm="exact", space="svd", n_components=10,
                    random_state=0).fit(X_small)
    np.testing.assert_array_equal(g.neighbors_, g_ex.neighbors_)


def test_space_auto_follows_size_and_svd_sample(X_small, monkeypatch):
    fake, calls = _fake_nndescent(lambda ind, dist: None)
    monkeypatch.setattr(search_mod, "nndescent_search", fake)
    n = X_small.shape[0]
    small = KNNGraph(n_neighbors=4, power=1, exact_max_samples=n).fit(X_small)
    assert (small.space_, small.algorithm_) == ("tfidf", "exact")
    large = KNNGraph(n_neighbors=4, power=1, exact_max_samples=n - 1, n_components=10,
                     random_state=0, recall_sample=0).fit(X_small)
    assert (large.space_, large.algorithm_) == ("svd", "nndescent")
    assert not calls["args"]["sparse"] and calls["args"]["n_neighbors"] == 14
    # an SVD fitted on a row sample still gives a valid embedding of every row
    sampled = KNNGraph(n_neighbors=4, power=1, space="svd", n_components=10, svd_sample=20,
                       algorithm="exact", random_state=0).fit(X_small)
    assert sampled.space_ == "svd" and np.all(np.isfinite(sampled.distances_))
    assert np.all(sampled.distances_ <= 2.0 + 1e-12)
    with pytest.raises(ValueError, match="svd_sample"):
        KNNGraph(svd_sample=0).fit(X_small)


# ----------------------------------------------------------------------------
# sharing, clone, persistence
# ----------------------------------------------------------------------------

def test_with_laplacian_shares_and_is_correct(X_small):
    g = KNNGraph(n_neighbors=5, weight="heat", normalized=True, power=1).fit(X_small)
    g2 = g.with_laplacian(normalized=False, power=2)
    for name in ("neighbors_", "distances_", "degree_"):
        assert np.shares_memory(getattr(g, name), getattr(g2, name))
    assert g2.adjacency_ is g.adjacency_
    assert g2.normalized is False and g2.power == 2
    assert g.normalized is True and g.power == 1
    ref = KNNGraph(n_neighbors=5, weight="heat", normalized=False, power=2).fit(X_small)
    z = np.random.RandomState(0).randn(X_small.shape[0], 2)
    np.testing.assert_allclose(g2.laplacian_matvec(z), ref.laplacian_matvec(z), atol=1e-12)
    assert g2.trace_ == pytest.approx(ref.trace_)
    np.testing.assert_allclose(g.with_laplacian(power=3).laplacian_matvec(z),
                               g.laplacian_matvec(g.laplacian_matvec(g.laplacian_matvec(z))))
    with pytest.raises(ValueError):
        g.with_laplacian(power=0)


def test_clone_semantics(X_small):
    g = KNNGraph(power=1, n_neighbors=4, weight="cosine")
    c = clone(g)
    assert c is not g and c.get_params() == g.get_params()
    g.fit(X_small)
    assert clone(g) is g
    assert not hasattr(clone(KNNGraph(weight="binary", power=1, n_neighbors=4)), "adjacency_")


def test_save_load_round_trip(X_small, tmp_path):
    g = KNNGraph(n_neighbors=5, weight="heat", symmetrize="mutual", normalized=False,
                 power=2, random_state=3).fit(X_small)
    path = tmp_path / "graph.knn"
    g.save(path)
    assert os.listdir(tmp_path) == ["graph.knn"]  # no suffix added, no temp file left
    h = KNNGraph.load(path)
    assert h.get_params() == g.get_params()
    for name in ("neighbors_", "distances_", "degree_"):
        np.testing.assert_array_equal(getattr(h, name), getattr(g, name))
    assert (h.adjacency_ != g.adjacency_).nnz == 0
    for name in ("trace_", "scale_", "heat_sigma_", "recall_", "n_repaired_",
                 "n_samples_fit_", "n_features_in_", "algorithm_", "n_isolated_"):
        assert getattr(h, name) == getattr(g, name)
    z = np.random.RandomState(0).randn(X_small.shape[0])
    np.testing.assert_array_equal(h.laplacian_matvec(z), g.laplacian_matvec(z))
    # overwrite in place
    g.with_laplacian(power=1).save(path)
    assert KNNGraph.load(path).power == 1


def test_load_rejects_bad_files(X_small, tmp_path):
    g = KNNGraph(weight="binary", power=1, n_neighbors=4).fit(X_small)
    good = tmp_path / "good.npz"
    g.save(good)
    raw = good.read_bytes()

    cases = {}
    cases["truncated"] = raw[: len(raw) // 2]
    cases["garbage"] = b"this is not a graph" * 10
    cases["empty"] = b""
    for name, content in cases.items():
        p = tmp_path / f"{name}.npz"
        p.write_bytes(content)
        with pytest.raises(ValueError, match="not a valid linlap KNNGraph file"):
            KNNGraph.load(p)

    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, a=np.arange(3))
    with pytest.raises(ValueError, match="format tag"):
        KNNGraph.load(foreign)
    npy = tmp_path / "array.npy"
    np.save(npy, np.arange(3))
    with pytest.raises(ValueError, match="not an .npz archive"):
        KNNGraph.load(npy)
    # numpy's own message for these advised unpickling them (allow_pickle)
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    with pytest.raises(ValueError, match="not an .npz archive") as info:
        KNNGraph.load(text)
    assert "pickle" not in str(info.value)
    import gzip  # a compressed file is no model file either (it may start one of the first
    gz = tmp_path / "g.npz.gz"  # format): not an .npz archive
    gz.write_bytes(gzip.compress(raw))
    with pytest.raises(ValueError, match="not an .npz archive"):
        KNNGraph.load(gz)
    model = tmp_path / "model.joblib"
    linlap.save(LapRLSClassifier(graph=KNNGraph(n_neighbors=4)).fit(
        X_small, np.r_[0, 1, np.full(X_small.shape[0] - 2, -1)]), model)
    with pytest.raises(ValueError, match="a linlap model file: read it with linlap.load"):
        KNNGraph.load(model)

    with np.load(good) as f:
        arrays = {key: f[key] for key in f.files}

    def tampered(**changes):
        p = tmp_path / "tampered.npz"
        np.savez(p, **{**arrays, **changes})
        return p

    data = arrays["adj_data"].copy()
    data[0] = 5.0
    with pytest.raises(ValueError, match="symmetric|degree"):
        KNNGraph.load(tampered(adj_data=data))
    with pytest.raises(ValueError, match="neighbors"):
        KNNGraph.load(tampered(neighbors=arrays["neighbors"][:-1]))
    with pytest.raises(ValueError, match="inconsistent"):
        KNNGraph.load(tampered(adj_indices=arrays["adj_indices"][:-3],
                               adj_data=arrays["adj_data"][:-3]))
    with pytest.raises(ValueError, match="version"):
        KNNGraph.load(tampered(version=np.array(99)))
    missing = {k: v for k, v in arrays.items() if k != "degree"}
    p = tmp_path / "missing.npz"
    np.savez(p, **missing)
    with pytest.raises(ValueError, match="not a valid"):
        KNNGraph.load(p)


def test_verbose_reports_steps(X_small, capsys):
    KNNGraph(weight="binary", power=1, n_neighbors=3, verbose=True).fit(X_small)
    out = capsys.readouterr().err
    assert "exact 3-NN search" in out and "trace(L)" in out


def test_refuses_before_building_when_memory_is_short(X_small, monkeypatch):
    import linlap._memory as memory

    monkeypatch.setattr(memory, "available_bytes", lambda: 1000)
    with pytest.raises(MemoryError, match="needs about .* GiB but only"):
        KNNGraph(n_neighbors=4).fit(X_small)
    monkeypatch.setattr(memory, "available_bytes", lambda: None)  # unknown: no check
    KNNGraph(n_neighbors=4, power=1).fit(X_small)


def test_review_fixes_scale_params_and_shared_graph(tmp_path):
    from sklearn.base import clone

    from linlap import LapRLSClassifier

    X = np.abs(np.random.RandomState(0).randn(12, 5))
    ref = KNNGraph(n_neighbors=3).fit(X)
    for s in (1e160, 1e-170):  # cosine ignores the scale: no overflow, no underflow
        for Xs in (X * s, sp.csr_matrix(X * s)):
            g = KNNGraph(n_neighbors=3).fit(Xs)
            np.testing.assert_array_equal(g.neighbors_, ref.neighbors_)
            np.testing.assert_allclose(g.adjacency_.toarray(), ref.adjacency_.toarray(),
                                       rtol=1e-12)
    assert KNNGraph(n_neighbors=3, reorder=np.True_).fit(X).node_order_ is not None
    g = KNNGraph(n_neighbors=3, normalized=np.True_, heat_sigma=np.float32(0.5),
                 weight="heat", nndescent_kwds={"n_iters": np.int64(5)}).fit(X)
    g.save(tmp_path / "g.npz")  # NumPy scalars saved as plain numbers
    assert KNNGraph.load(tmp_path / "g.npz").heat_sigma == pytest.approx(0.5)
    est = clone(LapRLSClassifier(graph=ref))
    assert est.graph is ref
    with pytest.raises(ValueError, match="fitted KNNGraph"):  # would change ref in place
        est.set_params(graph__normalized=False)
    assert ref.normalized is True
    ref.set_params(n_neighbors=3)  # no change: allowed
    with pytest.raises(ValueError, match="complex"):
        KNNGraph(n_neighbors=3).fit(X + 1j)
    with pytest.raises(ValueError, match="svd_sample"):
        KNNGraph(n_neighbors=3, space="svd", n_components=3, svd_sample=2).fit(X)


def test_exact_search_breaks_ties_at_the_kth_neighbour_by_index():
    X = np.vstack([np.ones((6, 3)), [[1.0, 1.0, 0.5]], [[0.0, 0.0, 1.0]]])
    g = KNNGraph(n_neighbors=2, algorithm="exact").fit(X)
    assert g.neighbors_[6].tolist() == [0, 1]  # six equidistant rows: the first two
    for k in (1, 2, 3):  # a subgraph keeps the same neighbours as a fit at that k
        sub = KNNGraph(n_neighbors=4, algorithm="exact").fit(X).subgraph(k)
        np.testing.assert_array_equal(
            sub.neighbors_, KNNGraph(n_neighbors=k, algorithm="exact").fit(X).neighbors_)


@pytest.mark.parametrize("mutual", [False, True])
def test_dense_and_csr_count_matrices_give_the_same_graph(mutual):
    # integer counts tie and repeat: equal cosines from the dense and the sparse product
    # differ in the last bits, and exact equality picked different neighbours (13 of 60
    # such problems had another W; 4 gave other predictions)
    differ = 0
    for seed in range(30):
        rng = np.random.default_rng(seed)
        X = rng.integers(0, 3, (40, 3)).astype(float)
        X[:, 0] += 1
        kw = dict(n_neighbors=int(rng.integers(2, 10)), algorithm="exact",
                  symmetrize="mutual" if mutual else "union")
        gd = KNNGraph(**kw).fit(X)
        gs = KNNGraph(**kw).fit(sp.csr_matrix(X))
        np.testing.assert_array_equal(gd.neighbors_, gs.neighbors_)
        differ += abs(gd.adjacency_ - gs.adjacency_).max() > 1e-12
    assert differ == 0


def test_declares_sparse_input():
    assert KNNGraph().__sklearn_tags__().input_tags.sparse
