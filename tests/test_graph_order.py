"""Node renumbering of KNNGraph (``reorder``): same results, in the original order.

The Laplacian passes run on P W Pᵀ (nodes renumbered by reverse Cuthill–McKee);
everything public — ``laplacian_matvec``, ``laplacian_matrix``, ``adjacency_``,
fitted estimators — must be what the unrenumbered graph gives.
"""

import pickle
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

import linlap.graph.reorder as reorder_mod
from linlap import KNNGraph, LapRLSClassifier
from linlap._numba.graph import laplacian_pass, permute_csr, scale_rows

from reference import blobs, dense_laplacian


def shuffled_chain_docs(n=300, seed=0, sparse=True):
    """Documents along a 1-D chain of overlapping word windows, rows shuffled.

    Neighbours are close along the chain, so a good renumbering has a small
    bandwidth while the shuffled input order has none.
    """
    rng = np.random.default_rng(seed)
    d = n // 2 + 10
    X = np.zeros((n, d))
    pos = np.sort(rng.uniform(0, d - 6, n))
    for i, p in enumerate(pos):
        j = int(p)
        X[i, j:j + 6] = rng.uniform(0.5, 1.5, 6)
    X = X[rng.permutation(n)]
    return sp.csr_matrix(X) if sparse else X


def edge_spans(W, order=None):
    """|position(i) − position(j)| over the edges (i, j) of W in the given node order."""
    coo = W.tocoo()
    if order is None:
        return np.abs(coo.row - coo.col)
    pos = np.empty_like(order)
    pos[order] = np.arange(order.size)
    return np.abs(pos[coo.row] - pos[coo.col])


@pytest.fixture(scope="module")
def X_chain():
    return shuffled_chain_docs()


# ----------------------------------------------------------------------------
# laplacian_matvec: renumbered == original == dense reference
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("p", [1, 3])
@pytest.mark.parametrize("c", [1, 3])
def test_matvec_matches_unreordered_and_dense(X_chain, sparse, normalized, p, c):
    X = X_chain if sparse else X_chain.toarray()
    kw = dict(n_neighbors=6, normalized=normalized, power=p)
    g0 = KNNGraph(reorder=False, **kw).fit(X)
    g1 = KNNGraph(reorder=True, **kw).fit(X)
    assert g0.node_order_ is None
    order = g1.node_order_
    assert order.dtype == np.int64 and np.array_equal(np.sort(order), np.arange(X.shape[0]))
    assert not np.array_equal(order, np.arange(X.shape[0]))  # a real renumbering
    # public arrays are those of the unrenumbered graph, in the original order
    assert (g1.adjacency_ != g0.adjacency_).nnz == 0
    np.testing.assert_array_equal(g1.degree_, g0.degree_)
    assert g1.scale_ == g0.scale_
    rng = np.random.default_rng(p + 10 * c)
    Z = rng.standard_normal((X.shape[0], c))
    if c == 1:
        Z = Z[:, 0]
    ref = np.linalg.matrix_power(dense_laplacian(g0.adjacency_, normalized), p) @ Z
    r0 = g0.laplacian_matvec(Z)
    r1 = g1.laplacian_matvec(Z)
    assert r1.shape == Z.shape
    scale = np.abs(ref).max()
    np.testing.assert_allclose(r1, ref, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(r1, r0, rtol=0, atol=1e-12 * scale)
    # float32 input and the out=/work= path give the same
    out = np.empty(Z.shape)
    work = np.empty(Z.size)
    assert g1.laplacian_matvec(Z, out=out, work=work) is out
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12 * scale)
    Z32 = Z.astype(np.float32)
    np.testing.assert_allclose(g1.laplacian_matvec(Z32), g0.laplacian_matvec(Z32),
                               rtol=0, atol=1e-12 * scale)
    # laplacian_matrix is in the original order too
    np.testing.assert_allclose(g1.laplacian_matrix().toarray(),
                               g0.laplacian_matrix().toarray(), atol=1e-14)


@pytest.mark.parametrize("reorder", [True, False])
@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("c", [1, 3])
def test_laplacian_power_sum_matches_dense(X_chain, reorder, normalized, c):
    # Σ_t c_t L^t Z by one chain of passes (EMR's powers of one graph), on a graph with
    # an isolated node (an empty document), renumbered or not
    X = sp.vstack([X_chain, sp.csr_matrix((1, X_chain.shape[1]))]).tocsr()
    g = KNNGraph(n_neighbors=6, normalized=normalized, power=5, reorder=reorder).fit(X)
    assert (g.node_order_ is not None) == reorder and g.degree_[-1] == 0
    L = dense_laplacian(g.adjacency_, normalized)
    rng = np.random.default_rng(c)
    Z = rng.standard_normal((X.shape[0], c))
    if c == 1:
        Z = Z[:, 0]
    for coefs in ({1: 1.0}, {8: 0.5, 5: 0.5}, {1: 0.1, 2: 0.2, 5: 0.3, 8: 0.4}, {3: -2.0},
                  {2: 0.0, 4: 1.5}):
        ref = sum(w * np.linalg.matrix_power(L, t) @ Z for t, w in coefs.items())
        atol = 1e-12 * np.abs(ref).max()
        np.testing.assert_allclose(g.laplacian_power_sum(Z, coefs), ref, rtol=0, atol=atol)
        out, work = np.full(Z.shape, np.nan), np.empty(Z.size)
        assert g.laplacian_power_sum(Z, coefs, out=out, work=work) is out
        np.testing.assert_allclose(out, ref, rtol=0, atol=atol)
        got32 = g.laplacian_power_sum(Z.astype(np.float32), coefs)
        ref32 = sum(w * np.linalg.matrix_power(L, t) @ Z.astype(np.float32).astype(float)
                    for t, w in coefs.items())
        np.testing.assert_allclose(got32, ref32, rtol=0, atol=atol)
        np.testing.assert_allclose(g.laplacian_power_sum(Z + 0j, coefs), ref, rtol=0,
                                   atol=atol)
    # the power-p matvec is the sum with one term
    np.testing.assert_allclose(g.laplacian_power_sum(Z, {5: 1.0}), g.laplacian_matvec(Z),
                               rtol=0, atol=1e-12 * np.abs(g.laplacian_matvec(Z)).max())
    for bad in ({0: 1.0}, {1.5: 1.0}, {True: 1.0}, {101: 1.0}, {"2": 1.0}, {None: 1.0},
                {2: np.nan}, {2: np.inf}, {2: "2.5"}, {2: True}, {2: None}):
        with pytest.raises(ValueError, match="coefs must map powers"):
            g.laplacian_power_sum(Z, bad)
    for bad in ({}, [(2, 1.0)], None):
        with pytest.raises(ValueError, match="coefs must be a non-empty dict"):
            g.laplacian_power_sum(Z, bad)
    # weight 0 costs nothing and adds nothing; numpy integer powers are powers
    np.testing.assert_allclose(g.laplacian_power_sum(Z, {np.int64(3): 1.0, 8: 0.0}),
                               np.linalg.matrix_power(L, 3) @ Z, rtol=0,
                               atol=1e-12 * np.abs(Z).max() * 8)
    np.testing.assert_array_equal(g.laplacian_power_sum(Z, {4: 0.0}), np.zeros(Z.shape))


@pytest.mark.parametrize("normalized", [True, False])
def test_laplacian_power_sum_buffers(X_chain, normalized):
    # out / work that are unaligned views, no columns, complex64: each as the dense sum
    g = KNNGraph(n_neighbors=6, normalized=normalized, reorder=True).fit(X_chain)
    n = X_chain.shape[0]
    L = dense_laplacian(g.adjacency_, normalized)
    coefs = {1: 1.0, 2: -0.5, 3: 2.0}
    Z = np.random.default_rng(0).standard_normal((n, 3))
    ref = sum(w * np.linalg.matrix_power(L, t) @ Z for t, w in coefs.items())

    def unaligned(size):  # a float64 view one byte into a buffer: C-contiguous, unaligned
        return np.frombuffer(np.zeros(size * 8 + 1, np.uint8).data, np.float64, size, 1)

    out, work = unaligned(Z.size).reshape(Z.shape), unaligned(Z.size)
    assert not out.flags.aligned and not work.flags.aligned
    got = g.laplacian_power_sum(Z, coefs, out=out, work=work)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    assert g.laplacian_power_sum(np.empty((n, 0)), coefs).shape == (n, 0)
    Zc = (Z + 1j * Z[:, ::-1]).astype(np.complex64)
    refc = sum(w * np.linalg.matrix_power(L, t) @ Zc.astype(np.complex128)
               for t, w in coefs.items())
    gotc = g.laplacian_power_sum(Zc, coefs)
    assert gotc.dtype == np.complex128
    np.testing.assert_allclose(gotc, refc, rtol=0, atol=1e-12 * np.abs(refc).max())
    with pytest.raises(ValueError, match="out must be a complex array"):
        g.laplacian_power_sum(Zc, coefs, out=np.empty(Z.shape))


def test_renumbering_improves_locality(X_chain):
    g = KNNGraph(n_neighbors=6, reorder=True).fit(X_chain)
    n = X_chain.shape[0]
    W = g.adjacency_
    assert np.mean(edge_spans(W) <= 10) < 0.2  # the input order has no locality
    assert np.mean(edge_spans(W, g.node_order_) <= 10) > 0.95
    # reverse Cuthill–McKee alone (no clustering sweep) bounds the bandwidth
    assert edge_spans(W, reorder_mod.locality_order(W, max_sweeps=0)).max() < n // 10
    # the kernel graph is P W Pᵀ with sorted rows
    indptr, indices, data = g._passes.csr
    Wr = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    order = g.node_order_
    np.testing.assert_array_equal(Wr.toarray(), g.adjacency_.toarray()[np.ix_(order, order)])
    assert Wr.has_sorted_indices


def test_auto_threshold(X_chain, monkeypatch):
    assert KNNGraph(n_neighbors=6).fit(X_chain).node_order_ is None  # small n
    monkeypatch.setattr(reorder_mod, "REORDER_MIN_SAMPLES", X_chain.shape[0])
    g = KNNGraph(n_neighbors=6).fit(X_chain)
    assert g.node_order_ is not None and g.build_time_["reorder"] >= 0


@pytest.mark.parametrize("bad", ["yes", 1, 0, None, "Auto"])
def test_reorder_validated_in_fit(X_chain, bad):
    g = KNNGraph(n_neighbors=6, reorder=bad)  # the constructor accepts anything
    with pytest.raises(ValueError, match="reorder must be"):
        g.fit(X_chain)


# ----------------------------------------------------------------------------
# persistence, with_laplacian, pickling
# ----------------------------------------------------------------------------

def test_save_load_round_trip(X_chain, tmp_path):
    g = KNNGraph(n_neighbors=6, power=2, reorder=True).fit(X_chain)
    path = tmp_path / "g.npz"
    g.save(path)
    h = KNNGraph.load(path)
    assert h.reorder is True
    np.testing.assert_array_equal(h.node_order_, g.node_order_)
    Z = np.random.default_rng(1).standard_normal((X_chain.shape[0], 3))
    np.testing.assert_array_equal(h.laplacian_matvec(Z), g.laplacian_matvec(Z))
    assert (h.adjacency_ != g.adjacency_).nnz == 0
    # a graph fitted without renumbering stays so
    g0 = KNNGraph(n_neighbors=6, reorder=False).fit(X_chain)
    g0.save(path)
    assert KNNGraph.load(path).node_order_ is None


def test_load_refuses_file_without_order_metadata(X_chain, tmp_path):
    """A file whose metadata lacks 'reordered' is not a graph this linlap wrote."""
    g = KNNGraph(n_neighbors=6, power=2, reorder=True).fit(X_chain)
    g.save(tmp_path / "g.npz")
    with np.load(tmp_path / "g.npz") as npz:
        arrays = {key: npz[key] for key in npz.files if key != "node_order"}
    import json
    meta = json.loads(str(arrays["meta"][()]))
    del meta["reordered"]
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "old.npz", **arrays)
    with pytest.raises(ValueError, match="reordered"):
        KNNGraph.load(tmp_path / "old.npz")


@pytest.mark.parametrize("corrupt", ["missing", "repeat", "range", "shape"])
def test_load_rejects_bad_order(X_chain, tmp_path, corrupt):
    g = KNNGraph(n_neighbors=6, reorder=True).fit(X_chain)
    g.save(tmp_path / "g.npz")
    with np.load(tmp_path / "g.npz") as npz:
        arrays = {key: npz[key] for key in npz.files}
    order = arrays.pop("node_order")
    if corrupt == "repeat":
        order = order.copy()
        order[0] = order[1]
    elif corrupt == "range":
        order = order.copy()
        order[0] = order.size
    elif corrupt == "shape":
        order = order[:-1]
    if corrupt != "missing":
        arrays["node_order"] = order
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match="node_order"):
        KNNGraph.load(tmp_path / "bad.npz")


def test_with_laplacian_keeps_order_and_shares_it(X_chain):
    g = KNNGraph(n_neighbors=6, power=1, reorder=True).fit(X_chain)
    for normalized in (True, False):
        h = g.with_laplacian(normalized=normalized, power=3)
        assert h.node_order_ is g.node_order_
        assert h._passes.csr is g._passes.csr  # not copied
        ref = np.linalg.matrix_power(dense_laplacian(g.adjacency_, normalized), 3)
        Z = np.random.default_rng(3).standard_normal((X_chain.shape[0], 2))
        np.testing.assert_allclose(h.laplacian_matvec(Z), ref @ Z, rtol=0,
                                   atol=1e-12 * np.abs(ref @ Z).max())


def test_pickle_drops_and_rebuilds_the_copy(X_chain):
    g = KNNGraph(n_neighbors=6, power=2, reorder=True).fit(X_chain)
    state = g.__getstate__()
    assert "_passes" not in state
    assert g._passes.order is not None  # the graph itself keeps the renumbered copy
    h = pickle.loads(pickle.dumps(g))
    Z = np.random.default_rng(4).standard_normal(X_chain.shape[0])
    np.testing.assert_array_equal(h.laplacian_matvec(Z), g.laplacian_matvec(Z))


def test_replaced_adjacency_is_picked_up(X_chain):
    """Code that swaps adjacency_ (as benchmarks do) gets its own W's Laplacian."""
    g = KNNGraph(n_neighbors=6, power=1, reorder=True).fit(X_chain)
    W2 = g.adjacency_.copy()
    W2.data = W2.data * 2.0 + 0.5
    g.adjacency_ = W2
    g.degree_ = np.asarray(W2.sum(axis=1)).ravel()
    g._set_laplacian()
    Z = np.random.default_rng(5).standard_normal(X_chain.shape[0])
    np.testing.assert_allclose(g.laplacian_matvec(Z), dense_laplacian(W2, True) @ Z,
                               atol=1e-12)


# ----------------------------------------------------------------------------
# no allocation per call, estimators
# ----------------------------------------------------------------------------

def test_renumbered_matvec_allocates_nothing(X_chain):
    g = KNNGraph(n_neighbors=6, power=3, reorder=True).fit(X_chain)
    n, c = X_chain.shape[0], 20
    Z = np.random.default_rng(6).standard_normal((n, c))
    out, work = np.empty((n, c)), np.empty(n * c)
    g.laplacian_matvec(Z, out=out, work=work)  # compile
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(3):
            g.laplacian_matvec(Z, out=out, work=work)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak < 4_000, peak  # one (n, c) block would be 48 kB


@pytest.mark.parametrize("sparse", [True, False])
def test_estimator_fit_identical(sparse):
    X, y = blobs(n=240, d=10, n_classes=3, seed=3, sparse=sparse)
    rng = np.random.default_rng(0)
    y_semi = np.full(y.shape, -1)
    lab = rng.choice(y.size, 30, replace=False)
    y_semi[lab] = y[lab]
    coefs = []
    for reorder in (False, True):
        graph = KNNGraph(n_neighbors=8, power=3, reorder=reorder).fit(X)
        assert (graph.node_order_ is not None) == reorder
        clf = LapRLSClassifier(gamma_A=1e-3, gamma_I=1.0, graph=graph, tol=1e-12).fit(X, y_semi)
        coefs.append((clf.coef_, clf.intercept_))
    np.testing.assert_allclose(coefs[1][0], coefs[0][0], rtol=0, atol=1e-8)
    np.testing.assert_allclose(coefs[1][1], coefs[0][1], rtol=0, atol=1e-8)


# ----------------------------------------------------------------------------
# the kernels themselves
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("c", [1, 3, 4, 6, 13])
def test_kernels_against_formula(c):
    rng = np.random.default_rng(7 + c)
    n = 50
    W = sp.random(n, n, density=0.1, random_state=rng, format="csr")
    W = sp.csr_matrix(W + W.T)
    W.data = rng.uniform(0.1, 1.0, W.nnz)
    order = rng.permutation(n)
    inverse = np.empty(n, np.int32)
    inverse[order] = np.arange(n, dtype=np.int32)
    Wr = W[order][:, order].tocsr()
    Wr.sort_indices()
    # permute_csr builds P W Pᵀ with sorted rows
    indptr = np.zeros(n + 1, W.indptr.dtype)
    np.cumsum(np.diff(W.indptr)[order], out=indptr[1:])
    ind, dat = np.empty(W.nnz, np.int32), np.empty(W.nnz)
    permute_csr(W.indptr, W.indices, W.data, order, inverse, indptr, ind, dat)
    np.testing.assert_array_equal(indptr, Wr.indptr)
    np.testing.assert_array_equal(ind, Wr.indices)
    np.testing.assert_array_equal(dat, Wr.data)
    # gather + pass + scatter
    z = rng.standard_normal((n, c))
    gsc = rng.uniform(0.5, 2.0, n)
    x = np.empty((n, c))
    scale_rows(gsc, z, order, x)
    np.testing.assert_array_equal(x, gsc[:, None] * z[order])
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    out = np.empty((n, c))
    args = (Wr.indptr, Wr.indices, Wr.data)
    laplacian_pass(*args, x, a, b, 1.5, out, order)
    ref = np.empty((n, c))
    ref[order] = 1.5 * (a[:, None] * x - b[:, None] * (Wr @ x))
    np.testing.assert_allclose(out, ref, rtol=1e-13, atol=1e-13)
    laplacian_pass(*args, x, a, b, 1.5, out, order[:0])
    np.testing.assert_allclose(out, 1.5 * (a[:, None] * x - b[:, None] * (Wr @ x)),
                               rtol=1e-13, atol=1e-13)


def test_permute_csr_sorts_hub_rows():
    """Rows longer than the insertion-sort limit are sorted too."""
    rng = np.random.default_rng(8)
    n = 300
    W = sp.random(n, n, density=0.02, random_state=rng, format="lil")
    W[0, 1:200] = 1.0  # a hub
    W = sp.csr_matrix(W + W.T)
    W.setdiag(0)
    W.eliminate_zeros()
    order = rng.permutation(n)
    inverse = np.empty(n, np.int64)
    inverse[order] = np.arange(n)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.diff(W.indptr)[order], out=indptr[1:])
    ind, dat = np.empty(W.nnz, np.int64), np.empty(W.nnz)
    permute_csr(W.indptr, W.indices, W.data, order, inverse, indptr, ind, dat)
    Wr = W[order][:, order].tocsr()
    Wr.sort_indices()
    np.testing.assert_array_equal(ind, Wr.indices)
    np.testing.assert_array_equal(dat, Wr.data)
