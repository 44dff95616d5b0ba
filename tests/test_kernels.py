"""numba Gram matrices and kernel products against scikit-learn's pairwise_kernels."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import pairwise_kernels

from linlap.gram import GramOperator, kernel_matrix, kernel_product

KERNELS = [("rbf", dict(gamma=0.7)), ("rbf", dict()),
           ("poly", dict(gamma=0.5, degree=3, coef0=1.0)),
           ("polynomial", dict(gamma=0.2, degree=2, coef0=-0.5)), ("poly", dict()),
           ("linear", dict())]


def _data(sparse, rng):
    A = sp.random(37, 25, density=0.3, random_state=rng, format="csr")
    B = sp.random(29, 25, density=0.3, random_state=rng, format="csr")
    A.data = rng.standard_normal(A.data.size)
    B.data = rng.standard_normal(B.data.size)
    return (A, B) if sparse else (A.toarray(), B.toarray())


def _sk(metric):
    return "poly" if metric == "polynomial" else metric


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("kernel,kw", KERNELS)
def test_kernel_matrix_matches_sklearn(sparse, kernel, kw):
    rng = np.random.default_rng(0)
    A, B = _data(sparse, rng)
    ref = pairwise_kernels(A, B, metric=_sk(kernel), **kw)
    K = kernel_matrix(A, B, kernel=kernel, **kw)
    np.testing.assert_allclose(K, ref, rtol=1e-12, atol=1e-12)
    # square training Gram matrix, and float32 storage
    ref_sq = pairwise_kernels(A, metric=_sk(kernel), **kw)
    np.testing.assert_allclose(kernel_matrix(A, kernel=kernel, **kw), ref_sq, rtol=1e-12,
                               atol=1e-12)
    K32 = kernel_matrix(A, kernel=kernel, dtype=np.float32, **kw)
    assert K32.dtype == np.float32
    np.testing.assert_allclose(K32, ref_sq, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("kernel,kw", KERNELS)
def test_kernel_product_matches_sklearn(sparse, kernel, kw):
    rng = np.random.default_rng(1)
    A, B = _data(sparse, rng)
    ref = pairwise_kernels(A, B, metric=_sk(kernel), **kw)
    V = rng.standard_normal((B.shape[0], 3))
    np.testing.assert_allclose(kernel_product(A, B, V, kernel=kernel, **kw), ref @ V,
                               rtol=1e-10, atol=1e-10)
    v = V[:, 0]
    out = kernel_product(A, B, v, kernel=kernel, **kw)
    assert out.shape == (A.shape[0],)
    np.testing.assert_allclose(out, ref @ v, rtol=1e-10, atol=1e-10)


def test_dense_blocks_cover_all_rows(monkeypatch):
    # force many small blocks: results must not depend on the block size
    import linlap.gram as kmod

    rng = np.random.default_rng(2)
    A, B = rng.standard_normal((50, 4)), rng.standard_normal((23, 4))
    V = rng.standard_normal((23, 2))
    full = kernel_product(A, B, V, gamma=0.3)
    monkeypatch.setattr(kmod, "_DENSE_BLOCK_BYTES", 8 * 23 * 7)
    np.testing.assert_allclose(kernel_product(A, B, V, gamma=0.3), full, rtol=1e-13)
    np.testing.assert_allclose(kernel_matrix(A, B, gamma=0.3),
                               pairwise_kernels(A, B, metric="rbf", gamma=0.3), rtol=1e-12)


@pytest.mark.parametrize("kernel,kw", [("rbf", {"gamma": 0.4}), ("linear", {}),
                                       ("poly", {"gamma": 0.7, "degree": 3, "coef0": 0.5}),
                                       ("poly", {"degree": 2, "coef0": -2.0})])
@pytest.mark.parametrize("sparse", [True, False])
def test_gram_operator_diagonal_is_the_diagonal_of_K(sparse, kernel, kw):
    X, _ = _data(sparse, np.random.default_rng(5))
    op = GramOperator(X, kernel=kernel, **kw)
    np.testing.assert_allclose(op.diagonal(), np.diagonal(op.dense()), rtol=1e-12)


@pytest.mark.parametrize("parallel", [True, False])
@pytest.mark.parametrize("sparse", [True, False])
def test_gram_operator_cache_modes_agree(sparse, parallel, monkeypatch):
    import linlap.gram as kmod

    if parallel:  # the threaded product (used for large n) on this small problem
        monkeypatch.setattr(kmod.gram_matvec, "serial_work", 0)
    rng = np.random.default_rng(3)
    X, Xnew = _data(sparse, rng)
    n = X.shape[0]
    ref = pairwise_kernels(X, metric="rbf", gamma=0.4)
    V = rng.standard_normal((n, 2))
    ops = {
        "float64": GramOperator(X, gamma=0.4, memory_budget=8 * n * n),
        "float32": GramOperator(X, gamma=0.4, memory_budget=8 * n * n - 1),
        "none": GramOperator(X, gamma=0.4, memory_budget=4 * n * n - 1),
    }
    assert ops["float64"].cache_dtype == np.float64
    assert ops["float32"].cache_dtype == np.float32 and ops["float32"].K.dtype == np.float32
    assert ops["none"].cache_dtype is None and ops["none"].K is None
    for name, op in ops.items():
        tol = 1e-6 if name == "float32" else 1e-11
        np.testing.assert_allclose(op.matvec(V), ref @ V, rtol=tol, atol=tol)
        np.testing.assert_allclose(op.matvec(V[:, 0]), ref @ V[:, 0], rtol=tol, atol=tol)
        np.testing.assert_allclose(op.dense(), ref, rtol=tol, atol=tol)
        # out-of-sample: kernel between new rows and the training rows
        cross = pairwise_kernels(Xnew, X, metric="rbf", gamma=0.4)
        np.testing.assert_allclose(op.cross(Xnew, V), cross @ V, rtol=1e-10, atol=1e-10)
    # dense new rows against sparse training rows (and vice versa) give the same
    other = Xnew.toarray() if sparse else sp.csr_matrix(Xnew)
    np.testing.assert_allclose(ops["none"].cross(other, V), cross @ V, rtol=1e-10, atol=1e-10)
    # one coefficient row per training row: the kernels index V by them
    for op in ops.values():
        for bad in (V[:-1], np.vstack([V, V[:1]]), V[:3]):
            with pytest.raises(ValueError, match="V must have shape"):
                op.matvec(bad)
            with pytest.raises(ValueError, match="V must have shape"):
                op.cross(Xnew, bad)


def test_default_gamma_is_one_over_n_features():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((12, 6))
    np.testing.assert_allclose(kernel_matrix(X), pairwise_kernels(X, metric="rbf"),
                               rtol=1e-12)
    assert GramOperator(X).gamma == pytest.approx(1 / 6)


def test_unsorted_sparse_input_is_not_modified():
    rng = np.random.default_rng(5)
    A = sp.random(10, 8, density=0.5, random_state=rng, format="csr")
    B = A.copy()
    # reverse the column order inside each row
    for i in range(B.shape[0]):
        s, e = B.indptr[i], B.indptr[i + 1]
        B.indices[s:e] = B.indices[s:e][::-1].copy()
        B.data[s:e] = B.data[s:e][::-1].copy()
    B.has_sorted_indices = False
    before = B.indices.copy()
    np.testing.assert_allclose(kernel_matrix(B, gamma=0.5),
                               pairwise_kernels(A, metric="rbf", gamma=0.5), rtol=1e-12)
    np.testing.assert_array_equal(B.indices, before)


@pytest.mark.parametrize("kwargs,match", [
    (dict(kernel="sigmoid"), "kernel must be"),
    (dict(gamma=0.0), "gamma"),
    (dict(gamma=-1.0), "gamma"),
    (dict(gamma=np.nan), "gamma"),
    (dict(kernel="poly", degree=0), "degree"),
    (dict(kernel="poly", degree=2.5), "degree"),
])
def test_bad_parameters(kwargs, match):
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match=match):
        kernel_matrix(X, **kwargs)


def test_bad_input():
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="NaN"):
        kernel_matrix(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="features"):
        kernel_matrix(X, np.ones((2, 3)))
    with pytest.raises(ValueError, match="rows"):
        kernel_product(X, X, np.ones(4))
    with pytest.raises(ValueError, match="features"):
        GramOperator(X).cross(np.ones((2, 5)), np.ones(3))


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("cache", [2**31, 4 * 30 * 30, 0])  # float64, float32, no cache
def test_kernel_overflow_raises_naming_the_parameters(sparse, cache):
    rng = np.random.default_rng(5)
    X = np.abs(rng.standard_normal((30, 6)))
    X = sp.csr_matrix(X) if sparse else X
    kw = dict(kernel="poly", gamma=1.0, degree=400, coef0=1.0)
    with pytest.raises(ValueError, match=r"poly kernel .*gamma=1, coef0=1, degree=400"):
        op = GramOperator(X, memory_budget=cache, **kw)
        op.matvec(np.ones(30))
    with pytest.raises(ValueError, match="non-finite"):
        kernel_matrix(X, **kw)
    with pytest.raises(ValueError, match="non-finite"):
        kernel_product(X, X, np.ones(30), **kw)
    # float32 cache: values beyond 3.4e38 are inf there, though finite in float64
    if cache == 4 * 30 * 30:
        with pytest.raises(ValueError, match="non-finite"):
            GramOperator(X, memory_budget=cache, kernel="poly", gamma=1.0, degree=60)
    # a product with a non-finite V is the caller's divergence, not the kernel's
    op = GramOperator(X, memory_budget=cache, kernel="poly", degree=3)
    V = np.ones(30)
    V[0] = np.nan
    assert np.isnan(op.matvec(V)).any()
