"""numba kernels, the normal-equations operator and the fused Laplacian passes (issue 7).

Every kernel is checked against scipy's product on random CSR matrices (float32 and
float64 values, int32 and int64 indices, empty rows, unsorted and duplicate
entries, one and several columns); the operator against its dense formula; the
Laplacian passes against the explicit sparse power; and the CG loop and the
operator for allocations per iteration.
"""

import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from linlap import KNNGraph
from linlap._numba import cg as numba_cg
from linlap._numba import csr as so
from linlap._numba import graph as numba_graph
from linlap._numba import gram as numba_gram
from linlap._numba.cg import cg_direction, cg_update, column_dots
from linlap._numba.csr import csr_matmat, csr_rmatmat_blocks, reduce_blocks, row_blocks
from linlap._numba.graph import laplacian_pass, scale_rows
from linlap.solvers.normal_operator import NormalOperator
from linlap.solvers import batched_cg, laprls_linear, lapsvm_newton

from reference import dense_solution, random_design, random_laplacian


def messy_csr(n=60, d=25, density=0.15, seed=0, dtype=np.float64, index_dtype=np.int32):
    """CSR with empty rows, unsorted indices and duplicate entries, in the given dtypes."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=rng, format="csr")
    X = X.tolil()
    X[rng.choice(n, n // 5, replace=False)] = 0  # empty rows
    X = X.tocsr()
    X.eliminate_zeros()
    X.data = rng.standard_normal(X.nnz)
    indptr, indices, data = X.indptr.copy(), X.indices.copy(), X.data.copy()
    rows_with = np.flatnonzero(np.diff(indptr) >= 2)
    for i in rows_with[::2]:  # shuffle the column order within some rows
        a, b = indptr[i], indptr[i + 1]
        perm = rng.permutation(b - a)
        indices[a:b], data[a:b] = indices[a:b][perm], data[a:b][perm]
    # a duplicate entry (i, j) stored twice: products must sum both
    i = rows_with[1]
    a = indptr[i]
    indices = np.insert(indices, a, indices[a])
    data = np.insert(data, a, 0.5)
    indptr[i + 1:] += 1
    Y = sp.csr_matrix((data.astype(dtype), indices, indptr), shape=(n, d))
    Y.indices = Y.indices.astype(index_dtype)
    Y.indptr = Y.indptr.astype(index_dtype)
    assert not Y.has_sorted_indices
    assert Y.indices.dtype == index_dtype and Y.dtype == dtype
    assert np.any(np.diff(Y.indptr) == 0)
    return Y


def exact(X):
    """float64 copy of X's values with canonical structure (the reference)."""
    Y = sp.csr_matrix((X.data.astype(np.float64), X.indices.astype(np.int64),
                       X.indptr.astype(np.int64)), shape=X.shape)
    Y.sum_duplicates()
    return Y


# float32 / float64 values, int32 / int64 indices (three of the four pairs: each pair is one
# more numba compilation of every kernel)
CASES = [(np.float64, np.int32), (np.float32, np.int32), (np.float32, np.int64)]


# column counts: the single-column path, the 4-column scalar blocks with every remainder
# width (2, 3, 4 + 1, 4 + 4) and the wide path (> CHUNKED_MAX_COLUMNS)
WIDTHS = [1, 2, 3, 5, 8, 13]


@pytest.mark.parametrize("dtype,index_dtype", CASES)
@pytest.mark.parametrize("c", WIDTHS)
def test_csr_matmat_matches_scipy(dtype, index_dtype, c):
    X = messy_csr(dtype=dtype, index_dtype=index_dtype, seed=c)
    rng = np.random.default_rng(1)
    W = rng.standard_normal((X.shape[1], c))
    bias = rng.standard_normal(c)
    ref = exact(X) @ W
    out = np.full((X.shape[0], c), np.nan)
    csr_matmat(X.indptr, X.indices, X.data, W, np.empty(0), False, out)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    csr_matmat(X.indptr, X.indices, X.data, W, bias, True, out)
    np.testing.assert_allclose(out, ref + bias, rtol=1e-12, atol=1e-12)
    # empty rows give exactly the bias
    empty = np.diff(X.indptr) == 0
    np.testing.assert_array_equal(out[empty], np.broadcast_to(bias, (empty.sum(), c)))


@pytest.mark.parametrize("dtype,index_dtype", CASES)
@pytest.mark.parametrize("c", WIDTHS)
@pytest.mark.parametrize("n_blocks", [1, 3, 1000])
def test_csr_rmatmat_matches_scipy(dtype, index_dtype, c, n_blocks):
    X = messy_csr(dtype=dtype, index_dtype=index_dtype, seed=10 + c)
    n, d = X.shape
    rng = np.random.default_rng(2)
    U = rng.standard_normal((n, c))
    Z = rng.standard_normal((d + 1, c))
    bounds = row_blocks(X.indptr, n_blocks)
    nb = bounds.size - 1
    assert bounds[0] == 0 and bounds[-1] == n and np.all(np.diff(bounds) >= 0)
    assert nb == min(n_blocks, n)
    buf = np.full((nb, d, c), np.nan)  # the kernel must clear its buffers itself
    colsum = np.full((nb, c), np.nan)
    csr_rmatmat_blocks(X.indptr, X.indices, X.data, U, bounds, buf, colsum)
    out = np.full((d + 1, c), np.nan)
    reduce_blocks(buf, nb, colsum, 2.5, 0.75, Z, True, out)
    np.testing.assert_allclose(out[:d], 2.5 * (exact(X).T @ U) + 0.75 * Z[:d],
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out[d], 2.5 * U.sum(axis=0), rtol=1e-12)
    out2 = np.full((d, c), np.nan)
    reduce_blocks(buf, nb, colsum, 1.0, 0.0, Z, False, out2)
    np.testing.assert_allclose(out2, exact(X).T @ U, rtol=1e-12, atol=1e-12)


def test_row_blocks_balance_nnz():
    X = messy_csr(n=400, d=50, density=0.1, seed=3)
    bounds = row_blocks(X.indptr, 4)
    nnz = np.diff(X.indptr[bounds])
    assert bounds.size == 5 and nnz.sum() == X.nnz
    assert nnz.max() - nnz.min() <= 2 * np.diff(X.indptr).max()
    empty = sp.csr_matrix((0, 5))
    assert list(row_blocks(empty.indptr, 3)) == [0, 0]


@pytest.mark.parametrize("xdtype", [np.float32, np.float64])
@pytest.mark.parametrize("c", WIDTHS)
def test_laplacian_pass_formula(xdtype, c):
    W = messy_csr(n=50, d=50, density=0.2, seed=4, index_dtype=np.int64)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((50, c)).astype(xdtype)
    a, b, g = rng.random(50), rng.random(50), rng.random(50)
    Wd = exact(W)
    out = np.full((50, c), np.nan)
    laplacian_pass(W.indptr, W.indices, W.data, x, a, b, 1.5, out, np.empty(0, np.int64))
    xd = x.astype(np.float64)
    np.testing.assert_allclose(out, 1.5 * (a[:, None] * xd - b[:, None] * (Wd @ xd)),
                               rtol=1e-12, atol=1e-12)
    gx = np.full((50, c), np.nan)
    scale_rows(g, x, np.empty(0, np.int64), gx)
    np.testing.assert_allclose(gx, g[:, None] * xd, rtol=1e-15)


def test_cg_helpers():
    rng = np.random.default_rng(6)
    X, R, P, AP, Zr = (rng.standard_normal((30, 3)) for _ in range(5))
    alpha, beta = rng.random(3), rng.random(3)
    X0, R0, P0 = X.copy(), R.copy(), P.copy()
    dots, rr = np.empty(3), np.empty(3)
    column_dots(P, AP, dots)
    np.testing.assert_allclose(dots, np.einsum("ij,ij->j", P, AP))
    cg_update(X, R, P, AP, alpha, rr)
    np.testing.assert_allclose(X, X0 + alpha * P)
    np.testing.assert_allclose(R, R0 - alpha * AP)
    np.testing.assert_allclose(rr, (R * R).sum(axis=0))
    cg_direction(P, Zr, beta)
    np.testing.assert_allclose(P, Zr + beta * P0)


# ----------------------------------------------------------------------------
# the graph's fused L^p
# ----------------------------------------------------------------------------

def graph_with_isolated(normalized, power, seed=0):
    """A fitted KNNGraph whose adjacency is replaced by a random symmetric W with
    isolated nodes and int64 indices (exercising the degree-0 conventions)."""
    rng = np.random.default_rng(seed)
    n = 40
    X = random_design(n, 8, rng, density=0.6).toarray() + 0.01
    g = KNNGraph(n_neighbors=3, weight="binary", normalized=normalized, power=power).fit(X)
    A = sp.random(n, n, density=0.12, random_state=rng)
    A.data = rng.random(A.nnz) + 0.1
    A = sp.triu(A, k=1)
    Wm = sp.csr_matrix(A + A.T)
    iso = [3, 17, 29]
    keep = np.ones(n)
    keep[iso] = 0
    Wm = sp.csr_matrix(sp.diags(keep) @ Wm @ sp.diags(keep))
    Wm.eliminate_zeros()
    Wm.sort_indices()
    Wm.indices = Wm.indices.astype(np.int64)
    Wm.indptr = Wm.indptr.astype(np.int64)
    g.adjacency_ = Wm
    g.degree_ = np.asarray(Wm.sum(axis=1)).ravel()
    g._set_laplacian()
    assert g.n_isolated_ >= len(iso)
    return g


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("power", [1, 2, 3, 5])
def test_laplacian_matvec_equals_sparse_power(normalized, power):
    g = graph_with_isolated(normalized, power, seed=power)
    n = g.n_samples_fit_
    Lp = g.laplacian_matrix()  # explicit sparse power, formed by scipy products
    rng = np.random.default_rng(7)
    z, Z = rng.standard_normal(n), rng.standard_normal((n, 5))
    scale = abs(Lp).sum(axis=1).max()
    np.testing.assert_allclose(g.laplacian_matvec(z), Lp @ z, rtol=1e-11,
                               atol=1e-12 * scale)
    np.testing.assert_allclose(g.laplacian_matvec(Z), Lp @ Z, rtol=1e-11,
                               atol=1e-12 * scale)
    # same as p products by the plain scipy implementation
    ref = Z
    for _ in range(power):
        ref = g._apply_laplacian(ref)
    np.testing.assert_allclose(g.laplacian_matvec(Z), ref, rtol=1e-11, atol=1e-12 * scale)
    # float32 input is read as is; the result is float64
    Z32 = Z.astype(np.float32)
    out32 = g.laplacian_matvec(Z32)
    assert out32.dtype == np.float64
    np.testing.assert_allclose(out32, Lp @ Z32.astype(np.float64), rtol=1e-11,
                               atol=1e-12 * scale)
    # isolated nodes: zero rows of L^p
    iso = g.degree_ == 0
    assert np.all(g.laplacian_matvec(Z)[iso] == 0)


def test_laplacian_matvec_out_and_work():
    g = graph_with_isolated(True, 3)
    n = g.n_samples_fit_
    rng = np.random.default_rng(8)
    Z = rng.standard_normal((n, 2))
    expected = g.laplacian_matvec(Z)
    out = np.empty((n, 2))
    work = np.empty(3 * n * 2)  # larger than needed is fine
    res = g.laplacian_matvec(Z, out=out, work=work)
    assert res is out
    np.testing.assert_array_equal(out, expected)
    vec_out = np.empty(n)
    assert g.laplacian_matvec(Z[:, 0], out=vec_out) is vec_out
    np.testing.assert_array_equal(vec_out, g.laplacian_matvec(Z[:, 0]))
    np.testing.assert_allclose(vec_out, expected[:, 0], rtol=1e-13, atol=1e-13)
    with pytest.raises(ValueError, match="out"):
        g.laplacian_matvec(Z, out=np.empty((n, 3)))
    with pytest.raises(ValueError, match="out"):
        g.laplacian_matvec(Z, out=np.empty((n, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="overlap"):
        g.laplacian_matvec(out, out=out)
    with pytest.raises(ValueError, match="work"):
        g.laplacian_matvec(Z, out=out, work=np.empty(n))
    with pytest.raises(ValueError, match="overlap"):
        g.laplacian_matvec(Z, out=out, work=out)


def test_laplacian_matvec_complex_and_integer_input():
    g = graph_with_isolated(False, 2)
    n = g.n_samples_fit_
    Lp = g.laplacian_matrix()
    z = np.arange(n) % 5
    np.testing.assert_allclose(g.laplacian_matvec(z), Lp @ z, atol=1e-10)
    zc = np.arange(n) + 1j * np.ones(n)
    np.testing.assert_allclose(g.laplacian_matvec(zc), Lp @ zc, atol=1e-10)


# ----------------------------------------------------------------------------
# NormalOperator
# ----------------------------------------------------------------------------

def dense_operator(Xd, rows, Lp, alpha, beta, fit_intercept, mask_col=None):
    n, d = Xd.shape
    Xt = np.hstack([Xd, np.ones((n, 1))]) if fit_intercept else Xd
    weights = np.ones(len(rows)) if mask_col is None else mask_col
    A = Xt[rows].T @ (weights[:, None] * Xt[rows]) + beta * Xt.T @ Lp @ Xt
    A[np.arange(d), np.arange(d)] += alpha
    return A


def operator_input(kind, n, d, seed):
    """X of the given kind (CSR float64 / float32 / int64 indices, dense, CSC) and its
    exact dense copy."""
    X = messy_csr(n, d, density=0.3, seed=seed,
                  dtype=np.float32 if "32" in kind else np.float64,
                  index_dtype=np.int64 if "int64" in kind else np.int32)
    Xd = exact(X).toarray()
    if kind == "dense":
        X = Xd
    elif kind == "csc":
        X = sp.csc_matrix(X)
    return X, Xd


@pytest.mark.parametrize("kind", ["csr64", "csr32", "csr32-int64", "dense", "csc"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_normal_operator_matches_dense_formula(kind, fit_intercept):
    rng = np.random.default_rng(9)
    n, d = 50, 15
    X, Xd = operator_input(kind, n, d, seed=11)
    L = random_laplacian(n, rng, normalized=True)
    Lp = L @ L
    rows = rng.choice(n, 12, replace=False)
    m = d + fit_intercept
    Z = rng.standard_normal((m, 3))
    op = NormalOperator(X, rows, lambda F: Lp @ F, alpha=0.3, beta=2.0,
                        fit_intercept=fit_intercept)
    A = dense_operator(Xd, rows, Lp, 0.3, 2.0, fit_intercept)
    np.testing.assert_allclose(op.matvec(Z), A @ Z, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(op.matvec(Z[:, 1]), A @ Z[:, 1], rtol=1e-10, atol=1e-10)
    out = np.empty((m, 3))
    assert op.matvec(Z, out=out) is out
    np.testing.assert_allclose(out, A @ Z, rtol=1e-10, atol=1e-10)
    # a block of a different width reuses (or regrows) the buffers
    np.testing.assert_allclose(op.matvec(Z[:, :2]), A @ Z[:, :2], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(op.matvec(np.hstack([Z, Z])), A @ np.hstack([Z, Z]),
                               rtol=1e-10, atol=1e-10)
    Xt = np.hstack([Xd, np.ones((n, 1))]) if fit_intercept else Xd
    np.testing.assert_allclose(op.decision(Z), Xt @ Z, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(op.apply_to_decision(Xt @ Z, Z), A @ Z, rtol=1e-10, atol=1e-10)
    assert op.n_matvec == 5
    # no graph term
    op0 = NormalOperator(X, rows, None, alpha=0.3, beta=0.0, fit_intercept=fit_intercept)
    A0 = dense_operator(Xd, rows, np.zeros((n, n)), 0.3, 0.0, fit_intercept)
    np.testing.assert_allclose(op0.matvec(Z), A0 @ Z, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kind", ["csr64", "csr32", "csr32-int64", "dense", "csc"])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("many_rows", [False, True])
def test_normal_operator_rhs_matches_dense_formula(kind, fit_intercept, many_rows):
    """rhs = X̃_Rᵀ (mask ⊙ T): few rows (X sliced) and many or repeated rows (targets
    summed per row, one pass over all of X)."""
    rng = np.random.default_rng(10)
    n, d = 50, 15
    X, Xd = operator_input(kind, n, d, seed=12)
    rows = (np.r_[rng.permutation(n), rng.choice(n, 20)] if many_rows
            else rng.choice(n, 12, replace=False))
    mask = rng.random((rows.size, 2)) * (rng.random((rows.size, 2)) < 0.8)
    T = rng.standard_normal((rows.size, 2))
    op = NormalOperator(X, rows, None, alpha=0.3, beta=0.0, fit_intercept=fit_intercept,
                        mask=mask)
    Xt = np.hstack([Xd, np.ones((n, 1))]) if fit_intercept else Xd
    np.testing.assert_allclose(op.rhs(T), Xt[rows].T @ (mask * T), rtol=1e-10, atol=1e-10)
    # a column subset picks its mask columns
    np.testing.assert_allclose(op.rhs(T[:, [1]], [1]), Xt[rows].T @ (mask[:, [1]] * T[:, [1]]),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kind", ["csr64", "csr32", "dense", "csc"])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("many_rows", [False, True])
@pytest.mark.parametrize("beta", [0.0, 2.0])
def test_normal_operator_rhs_and_residual_match_dense_formula(kind, fit_intercept, many_rows,
                                                              beta):
    """rhs_and_residual = (X̃_Rᵀ(mask ⊙ T), that − A Z) from F = X̃ Z and L^p F alone."""
    rng = np.random.default_rng(14)
    n, d = 50, 15
    X, Xd = operator_input(kind, n, d, seed=15)
    Lp = random_laplacian(n, rng, normalized=True)
    Lp = Lp @ Lp
    rows = (np.r_[rng.permutation(n), rng.choice(n, 20)] if many_rows
            else rng.choice(n, 12, replace=False))
    mask = rng.random((rows.size, 3)) * (rng.random((rows.size, 3)) < 0.8)
    T = rng.standard_normal((rows.size, 3))
    m = d + fit_intercept
    Z = rng.standard_normal((m, 3))
    op = NormalOperator(X, rows, lambda F: Lp @ F, alpha=0.3, beta=beta,
                        fit_intercept=fit_intercept, mask=mask)
    Xt = np.hstack([Xd, np.ones((n, 1))]) if fit_intercept else Xd
    F = Xt @ Z
    for cols in ([0, 1, 2], [2, 0]):
        B, R = op.rhs_and_residual(T[:, cols], F[:, cols], (Lp @ F)[:, cols], Z[:, cols],
                                   cols)
        for jj, j in enumerate(cols):
            A = dense_operator(Xd, rows, Lp, 0.3, beta, fit_intercept, mask_col=mask[:, j])
            b = Xt[rows].T @ (mask[:, j] * T[:, j])
            np.testing.assert_allclose(B[:, jj], b, rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(R[:, jj], b - A @ Z[:, j], rtol=1e-10, atol=1e-10)
    assert op.n_matvec == 0  # no product with A was needed
    if beta == 0:  # L^p F is not read without a graph term
        B0, R0 = op.rhs_and_residual(T, F, None, Z)
        B1, R1 = op.rhs_and_residual(T, F, Lp @ F, Z)
        np.testing.assert_array_equal(B0, B1)
        np.testing.assert_array_equal(R0, R1)


@pytest.mark.parametrize("kind", ["csr64", "dense"])
@pytest.mark.parametrize("beta", [0.0, 2.0])
def test_normal_operator_keeps_its_last_products(kind, beta):
    rng = np.random.default_rng(16)
    n, d = 40, 12
    X, Xd = operator_input(kind, n, d, seed=17)
    Lp = random_laplacian(n, rng, normalized=True)
    rows = rng.choice(n, 10, replace=False)
    op = NormalOperator(X, rows, lambda F: Lp @ F, alpha=0.3, beta=beta, keep_products=True)
    with pytest.raises(ValueError, match="matvec first"):
        op.last_products()
    Xt = np.hstack([Xd, np.ones((n, 1))])
    for width in (3, 1, 4):  # narrower and wider blocks than the buffers
        Z = rng.standard_normal((d + 1, width))
        A = dense_operator(Xd, rows, Lp, 0.3, beta, True)
        np.testing.assert_allclose(op.matvec(Z), A @ Z, rtol=1e-10, atol=1e-10)
        F, LF = op.last_products()
        np.testing.assert_allclose(F, Xt @ Z, rtol=1e-10, atol=1e-10)
        if beta:
            np.testing.assert_allclose(LF, Lp @ Xt @ Z, rtol=1e-10, atol=1e-10)
        else:
            assert LF is None
    with pytest.raises(ValueError, match="keep_products"):
        NormalOperator(X, rows, None, alpha=0.3, beta=0.0).last_products()


@pytest.mark.parametrize("with_graph", [True, False])
def test_normal_operator_mask_columns_and_graph_laplacian(with_graph):
    rng = np.random.default_rng(12)
    X = messy_csr(60, 20, density=0.3, seed=13)
    Xd = exact(X).toarray()
    n, d = X.shape
    g = graph_with_isolated(True, 2, seed=3) if with_graph else None
    # the test graph has 40 nodes: use a 40-row X
    X, Xd = X[:40], Xd[:40]
    n = 40
    Lp = g.laplacian_matrix().toarray() if with_graph else np.zeros((n, n))
    rows = rng.choice(n, 15, replace=False)
    mask = (rng.random((15, 4)) < 0.6).astype(float)
    beta = 3.0 if with_graph else 0.0
    op = NormalOperator(X, rows, g.laplacian_matvec if with_graph else None, alpha=0.1,
                        beta=beta, mask=mask)
    Z = rng.standard_normal((d + 1, 2))
    columns = np.array([3, 1])
    got = op.matvec(Z, columns)
    for jj, j in enumerate(columns):
        A = dense_operator(Xd, rows, Lp, 0.1, beta, True, mask[:, j])
        np.testing.assert_allclose(got[:, jj], A @ Z[:, jj], rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="columns"):
        op.matvec(Z)
    with pytest.raises(ValueError, match="shape"):
        op.matvec(np.ones((d + 5, 2)))
    with pytest.raises(ValueError, match="out"):
        op.matvec(Z, columns, out=np.empty((d + 1, 3)))


def test_tiny_beta_does_not_overflow():
    rng = np.random.default_rng(14)
    X = messy_csr(30, 10, seed=15)
    Xd = exact(X).toarray()
    L = random_laplacian(30, rng)
    rows = np.arange(8)
    Z = rng.standard_normal((11, 2))
    for beta in (1e-200, 1e-5):
        op = NormalOperator(X, rows, lambda F: L @ F, alpha=0.2, beta=beta)
        A = dense_operator(Xd, rows, L, 0.2, beta, True)
        got = op.matvec(Z)
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, A @ Z, rtol=1e-10, atol=1e-12)


def test_matvec_allocates_nothing():
    rng = np.random.default_rng(16)
    n, d, c = 20000, 3000, 3
    X = sp.random(n, d, density=0.003, random_state=rng, format="csr")
    g = graph_with_isolated(True, 3)
    # a 20000-node graph: a random symmetric W, set like graph_with_isolated does
    A = sp.random(n, n, density=5 / n, random_state=rng)
    A = sp.csr_matrix(sp.triu(A, k=1) + sp.triu(A, k=1).T)
    A.sort_indices()
    g.adjacency_, g.degree_ = A, np.asarray(A.sum(axis=1)).ravel()
    g.n_samples_fit_ = n
    g._set_laplacian()
    op = NormalOperator(X, np.arange(500), g.laplacian_matvec, alpha=0.1, beta=1.0)
    Z = rng.standard_normal((d + 1, c))
    out = np.empty((d + 1, c))
    op.matvec(Z, out=out)  # sizes the buffers (and compiles)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(3):
            op.matvec(Z, out=out)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    # one (n, c) float64 block is 480 kB, one (d, c) block 72 kB
    assert peak < 16_000, peak
    # and the result is right
    F = X @ Z[:d] + Z[d]
    U = g.laplacian_matrix() @ F
    U[:500] += F[:500]
    ref = np.vstack([X.T @ U + 0.1 * Z[:d], U.sum(axis=0)])
    np.testing.assert_allclose(out, ref, rtol=1e-9, atol=1e-9)


def test_cg_iterations_allocate_nothing():
    rng = np.random.default_rng(17)
    n, d, k = 20000, 4000, 4
    X = sp.random(n, d, density=0.002, random_state=rng, format="csr")
    op = NormalOperator(X, np.arange(300), None, alpha=1.0, beta=0.0)
    B = rng.standard_normal((d + 1, k))
    growth = []

    def callback(it, res):
        cur, peak = tracemalloc.get_traced_memory()
        growth.append(peak - cur)
        tracemalloc.reset_peak()

    batched_cg(op.matvec, B, tol=1e-30, max_iter=2, warn=False)  # compile, size
    tracemalloc.start()
    try:
        batched_cg(op.matvec, B, tol=1e-30, max_iter=6, callback=callback, warn=False)
    finally:
        tracemalloc.stop()
    # from the second iteration on (the first one follows the setup), the transient
    # peak of an iteration stays far below one (m, k) block (128 kB)
    assert len(growth) == 6 and max(growth[1:]) < 8_000, growth


# ----------------------------------------------------------------------------
# batched CG with an out= operator, and float32 X end to end
# ----------------------------------------------------------------------------

def test_batched_cg_out_operator_matches_plain_callable():
    rng = np.random.default_rng(18)
    X = messy_csr(80, 30, density=0.3, seed=19)
    L = random_laplacian(80, rng)
    op = NormalOperator(X, np.arange(25), lambda F: L @ F, alpha=0.05, beta=1.0)
    B = rng.standard_normal((31, 4))
    B[:, 2] = 0.0  # a zero right-hand side
    X1, info1 = batched_cg(op.matvec, B, tol=1e-10, max_iter=500)
    X2, info2 = batched_cg(lambda P: op.matvec(P), B, tol=1e-10, max_iter=500)
    assert info1.n_iter == info2.n_iter and np.all(info1.converged)
    np.testing.assert_allclose(X1, X2, rtol=1e-8, atol=1e-12)
    A = dense_operator(exact(X).toarray(), np.arange(25), L, 0.05, 1.0, True)
    np.testing.assert_allclose(X1, np.linalg.solve(A, B), rtol=1e-7, atol=1e-9)
    assert np.all(X1[:, 2] == 0)
    # columns converge at different iterations (frozen one by one): the different
    # scales of the right-hand sides do not change each column's iterates
    B2 = B * np.array([1.0, 1e3, 1.0, 1e-3])
    X3, _ = batched_cg(op.matvec, B2, tol=1e-10, max_iter=500)
    np.testing.assert_allclose(X3, X1 * np.array([1.0, 1e3, 1.0, 1e-3]), rtol=1e-7,
                               atol=1e-9)


def test_float32_csr_solvers_match_float64():
    rng = np.random.default_rng(20)
    n, d = 60, 14
    X64 = random_design(n, d, rng, density=0.4)
    X32 = X64.astype(np.float32)
    Xe = X32.astype(np.float64)  # the same values, stored in float64
    L = random_laplacian(n, rng, normalized=True)
    labeled = rng.choice(n, 15, replace=False)
    T = rng.choice([-1.0, 1.0], size=(15, 2))
    s = 1 / np.trace(L)
    kw = dict(gamma_A=1e-2, gamma_I=3.0, scale=s, tol=1e-12, max_iter=500)
    sol32 = laprls_linear(X32, T, labeled, lambda F: L @ F, **kw)
    sole = laprls_linear(Xe, T, labeled, lambda F: L @ F, **kw)
    assert X32.dtype == np.float32  # not upcast in place
    np.testing.assert_allclose(sol32.coef, sole.coef, rtol=1e-8, atol=1e-10)
    Zref = dense_solution(Xe.toarray(), L, labeled, T, 1e-2, 3.0, s)
    np.testing.assert_allclose(sol32.coef, Zref[:-1].T, rtol=1e-6, atol=1e-9)
    assert sol32.decision.dtype == np.float64
    kw = dict(gamma_A=1e-2, gamma_I=3.0, scale=s, tol=1e-10)
    svm32 = lapsvm_newton(X32, T, labeled, lambda F: L @ F, **kw)
    svme = lapsvm_newton(Xe, T, labeled, lambda F: L @ F, **kw)
    assert svm32.converged and svme.converged
    np.testing.assert_allclose(svm32.coef, svme.coef, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(svm32.intercept, svme.intercept, rtol=1e-7, atol=1e-9)


def test_batched_cg_preconditioned_and_indefinite_columns():
    rng = np.random.default_rng(21)
    M = rng.standard_normal((30, 30))
    A = M @ M.T + 30 * np.diag(rng.random(30) + 0.1)
    B = rng.standard_normal((30, 3))
    diag = np.diag(A).copy()
    Xp, info = batched_cg(lambda P: A @ P, B, tol=1e-12, max_iter=200,
                          precond=lambda R: R / diag[:, None])
    assert info.converged.all()
    np.testing.assert_allclose(Xp, np.linalg.solve(A, B), rtol=1e-9, atol=1e-12)
    # warm start from a point: same solution
    Xw, info_w = batched_cg(lambda P: A @ P, B, Xp + 1e-3, tol=1e-12, max_iter=200)
    np.testing.assert_allclose(Xw, Xp, rtol=1e-9, atol=1e-12)
    # ... and with its residual given, the same iterates without the product at X0
    X0 = Xp + 1e-3
    calls = []
    Xr, info_r = batched_cg(lambda P: calls.append(1) or A @ P, B, X0, tol=1e-12,
                            max_iter=200, R0=B - A @ X0)
    assert len(calls) == info_r.n_iter == info_w.n_iter
    np.testing.assert_allclose(Xr, Xw, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="pass X0"):
        batched_cg(lambda P: A @ P, B, R0=B)
    # on_update sees every move of the iterate: the directions it names sum to X − X0
    last, moved = {}, np.zeros_like(B)

    def track(cols, alpha, positions):
        moved[:, cols] += last["P"][:, positions] * alpha

    def matvec(P):
        last["P"] = P.copy()
        return A @ P

    Xt, _ = batched_cg(matvec, B, X0, tol=1e-12, max_iter=200, on_update=track)
    np.testing.assert_allclose(moved, Xt - X0, rtol=1e-12, atol=1e-12)
    # an indefinite direction (pᵀAp <= 0) stops that column unconverged, the others
    # go on to the solution
    D = np.diag([1.0, 2.0, -1.0])
    E = np.eye(3)
    with pytest.warns(Warning, match="did not converge"):
        Xd, info_d = batched_cg(lambda P: D @ P, E, tol=1e-12, max_iter=10)
    assert list(info_d.converged) == [True, True, False]
    np.testing.assert_allclose(Xd[:, :2], np.linalg.solve(D, E)[:, :2])
    assert np.all(Xd[:, 2] == 0)
    # ... and on_update is told which columns of the product still move
    moved = np.zeros((3, 3))

    def matvec_d(P):
        last["P"] = P.copy()
        return D @ P

    with pytest.warns(Warning, match="did not converge"):
        Xd2, _ = batched_cg(matvec_d, E, tol=1e-12, max_iter=10, on_update=lambda c, a, p:
                            moved.__setitem__((slice(None), c),
                                              moved[:, c] + last["P"][:, p] * a))
    np.testing.assert_allclose(moved, Xd2, atol=1e-14)


def test_serial_build_of_each_kernel_equals_the_parallel_one():
    # small problems run the serial compilation of the same kernel source (work= below
    # SERIAL_WORK); both builds must give identical results
    X = messy_csr(seed=21)
    n, d = X.shape
    rng = np.random.default_rng(22)
    W, U = rng.standard_normal((d, 3)), rng.standard_normal((n, 3))
    Z, bias = rng.standard_normal((d + 1, 3)), rng.standard_normal(3)
    a, b = rng.random(n), rng.random(n)
    G = messy_csr(n=n, d=n, density=0.1, seed=23)
    bounds = row_blocks(X.indptr, 2)
    results = []
    for work in (None, 0):
        F = np.empty((n, 3))
        csr_matmat(X.indptr, X.indices, X.data, W, bias, True, F, work=work)
        buf, colsum = np.empty((2, d, 3)), np.empty((2, 3))
        csr_rmatmat_blocks(X.indptr, X.indices, X.data, U, bounds, buf, colsum, work=work)
        R = np.empty((d + 1, 3))
        reduce_blocks(buf, 2, colsum, 1.5, 0.5, Z, True, R, work=work)
        Lx, S = np.empty((n, 3)), np.empty((n, 3))
        laplacian_pass(G.indptr, G.indices, G.data, U, a, b, 2.0, Lx, np.empty(0, np.int64),
                       work=work)
        scale_rows(a, U, np.empty(0, np.int64), S, work=work)
        results.append((F, R, Lx, S))
    for par, ser in zip(*results):
        np.testing.assert_allclose(ser, par, rtol=1e-13, atol=1e-13)


def test_serial_and_parallel_builds_are_cached_apart(tmp_path):
    # numba's cache index is keyed by the function's name and signature, not by
    # parallel=True (numba #6845): had the two builds of a kernel shared a name,
    # whichever was compiled first would be loaded for both — the parallel build
    # silently running on one thread.  In a fresh cache, compile the serial build
    # first; the parallel build must then miss the cache and compile itself.
    script = (
        "import numpy as np, scipy.sparse as sp\n"
        "from linlap._numba import csr as so\n"
        "X = sp.random(50, 20, density=0.2, format='csr', random_state=0)\n"
        "W, out, b = np.ones((20, 1)), np.empty((50, 1)), np.zeros(1)\n"
        "so.csr_matmat(X.indptr, X.indices, X.data, W, b, False, out, work=0)\n"
        "so.csr_matmat(X.indptr, X.indices, X.data, W, b, False, out, work=None)\n"
        "print(sum(so.csr_matmat.parallel.stats.cache_hits.values()),"
        " sum(so.csr_matmat.parallel.stats.cache_misses.values()))\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, check=True)
    hits, misses = map(int, res.stdout.split())
    assert (hits, misses) == (0, 1)
    for module in (so, numba_graph, numba_cg, numba_gram):
        for name in module.__all__:
            kernel = getattr(module, name)
            if not hasattr(kernel, "parallel"):
                continue
            assert (kernel.parallel.py_func.__qualname__
                    != kernel.serial.py_func.__qualname__), name
