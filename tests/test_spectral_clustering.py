"""Regularised spectral clustering (seed 001 §5.4): the eigenfunctions of eq. 13 against a
dense reference, the linear variant against the kernel one, two moons and two circles,
the out-of-sample extension."""

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp
from reference import blobs, random_laplacian
from sklearn.base import clone
from sklearn.datasets import make_circles, make_moons
from sklearn.metrics import adjusted_rand_score
from sklearn.metrics.pairwise import pairwise_kernels

from linlap import KNNGraph, LaplacianSpectralClustering
from linlap.solvers.spectral import kernel_spectral_embedding, linear_spectral_embedding


def reference(K, M, reg, s, k):
    """min reg fᵀK⁺f + s fᵀMf over f ∈ range(K), 1ᵀf = 0, fᵀf = 1 (and orthogonal to
    the previous ones): an orthonormal basis Q of that subspace, then the smallest
    eigenpairs of Qᵀ(reg K⁺ + s M)Q."""
    lam, U = np.linalg.eigh(K)
    keep = lam > 1e-10 * lam[-1]
    U, lam = U[:, keep], lam[keep]
    N = sla.null_space((U.T @ np.ones(K.shape[0]))[None, :])
    Q = U @ N
    Kp = (U / lam) @ U.T
    mu, V = np.linalg.eigh(Q.T @ (reg * Kp + s * M) @ Q)
    return mu[:k], Q @ V[:, :k]


def same_up_to_sign(F, G, atol):
    for j in range(F.shape[1]):
        sgn = np.sign(F[:, j] @ G[:, j])
        np.testing.assert_allclose(F[:, j], sgn * G[:, j], atol=atol)


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("lobpcg", [False, True])
def test_linear_and_kernel_variants_match_the_dense_reference(sparse, lobpcg):
    rng = np.random.default_rng(0)
    X, _ = blobs(n=50, d=60, n_classes=3, seed=0, sparse=sparse, noise=0.5)
    Lm = random_laplacian(50, rng, normalized=True)
    M = Lm @ Lm
    s, reg, k = 1 / np.trace(Lm), 1e-3, 3
    Xd = X.toarray() if sparse else X
    K = Xd @ Xd.T
    mu, Fref = reference(K, M, reg, s, k)
    lin = linear_spectral_embedding(X, lambda V: M @ V, reg=reg, scale=s, n_components=k,
                                    dense_max_features=0 if lobpcg else 2000, tol=1e-9,
                                    max_iter=2000, random_state=0)
    assert lin.method == ("lobpcg" if lobpcg else "dense")
    assert (lin.n_iter > 0) == lobpcg  # d = 60 ≥ 5 · 8: lobpcg iterates
    ker = kernel_spectral_embedding(K, lambda V: M @ V, reg=reg, scale=s, n_components=k)
    for sol in (lin, ker):
        np.testing.assert_allclose(sol.eigenvalues, mu, rtol=1e-6)
        same_up_to_sign(sol.embedding, Fref, atol=1e-5)
        # the constraints of eq. 13: mean zero, orthonormal
        np.testing.assert_allclose(sol.embedding.sum(axis=0), 0, atol=1e-8)
        np.testing.assert_allclose(sol.embedding.T @ sol.embedding, np.eye(k), atol=1e-6)
    # the same functions: f = Xw = Kα on the training rows and at new points
    np.testing.assert_allclose(Xd @ lin.coef, lin.embedding, atol=1e-10)
    np.testing.assert_allclose(K @ ker.coef, ker.embedding, atol=1e-8)
    Xnew = rng.standard_normal((7, 60))
    same_up_to_sign(Xnew @ lin.coef, (Xnew @ Xd.T) @ ker.coef, atol=1e-5)


def test_rbf_kernel_variant_matches_the_dense_reference():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 3))
    K = pairwise_kernels(X, metric="rbf", gamma=0.5)
    Lm = random_laplacian(40, rng, normalized=False)
    s, reg = 1 / np.trace(Lm), 1e-2
    mu, Fref = reference(K, Lm, reg, s, 2)
    sol = kernel_spectral_embedding(K, lambda V: Lm @ V, reg=reg, scale=s, n_components=2)
    np.testing.assert_allclose(sol.eigenvalues, mu, rtol=1e-6)
    same_up_to_sign(sol.embedding, Fref, atol=1e-5)


def euclidean_graph(X, k):
    """kNN graph by Euclidean distance through KNNGraph's cosine search on (x, c), c ≫ ‖x‖
    (see tests/test_kernel_estimators.py)."""
    Z = np.hstack([X, np.full((X.shape[0], 1), 1e3 * np.abs(X).max())])
    return KNNGraph(n_neighbors=k, weight="binary", power=1, algorithm="exact").fit(Z)


@pytest.mark.parametrize("data", ["moons", "circles"])
def test_two_moons_and_two_circles_with_out_of_sample_extension(data):
    if data == "moons":
        X, truth = make_moons(400, noise=0.05, random_state=0)
    else:
        X, truth = make_circles(400, noise=0.03, factor=0.5, random_state=0)
    train, held = np.arange(300), np.arange(300, 400)
    kw = dict(reg=1e-4, kernel="rbf", gamma=5.0, random_state=0)
    clu = LaplacianSpectralClustering(2, graph=euclidean_graph(X[train], 8), **kw)
    labels = clu.fit_predict(X[train])
    assert adjusted_rand_score(truth[train], labels) >= 0.95
    assert np.array_equal(clu.predict(X[train]), clu.labels_)
    # held-out points: the extension agrees with clustering them in the sample
    assert adjusted_rand_score(truth[held], clu.predict(X[held])) >= 0.95
    full = LaplacianSpectralClustering(2, graph=euclidean_graph(X, 8), **kw).fit(X)
    assert adjusted_rand_score(full.labels_[held], clu.predict(X[held])) >= 0.95
    # the k-means route over 2 eigenfunctions finds the same clusters
    km = LaplacianSpectralClustering(2, n_components=2, graph=clu.graph_, **kw).fit(X[train])
    assert km.cluster_centers_.shape == (2, 2)
    assert adjusted_rand_score(truth[held], km.predict(X[held])) >= 0.95


def topics(n, seed, k=3, vocab=60, words=8):
    """Unit-norm bag-of-words rows: each document draws words from its topic's block and
    from a block shared by all topics."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = np.zeros((n, vocab))
    blk = vocab // (k + 1)
    for i in range(n):
        np.add.at(X[i], rng.integers(y[i] * blk, (y[i] + 1) * blk, words), 1.0)
        np.add.at(X[i], rng.integers(k * blk, vocab, words // 2), 1.0)
    return X / np.linalg.norm(X, axis=1, keepdims=True), y


@pytest.mark.parametrize("sparse", [True, False])
def test_linear_clustering_of_documents_multiclass(sparse):
    X, y = topics(150, seed=3)
    X = sp.csr_matrix(X) if sparse else X
    g = KNNGraph(n_neighbors=10, algorithm="exact").fit(X)
    clu = LaplacianSpectralClustering(3, reg=1e-3, graph=g, random_state=0)
    labels = clu.fit_predict(X)
    assert clu.labels_.shape == (150,) and set(labels) == {0, 1, 2}
    assert clu.coef_.shape == (60, 3) and clu.dual_coef_ is None
    assert adjusted_rand_score(y, labels) >= 0.95
    np.testing.assert_array_equal(clu.predict(X), labels)
    raw = LaplacianSpectralClustering(3, reg=1e-3, graph=g, random_state=0,
                                      normalize_embedding=False).fit(X)
    assert adjusted_rand_score(y, raw.labels_) >= 0.95
    np.testing.assert_array_equal(raw.predict(X), raw.labels_)
    other = X.toarray() if sparse else sp.csr_matrix(X)
    np.testing.assert_allclose(np.abs(clu.transform(other)), np.abs(clu.embedding_),
                               atol=1e-10)
    c2 = clone(clu)
    assert c2.get_params()["graph"] is g


@pytest.mark.parametrize("params, match", [
    (dict(n_clusters=1), "n_clusters"), (dict(reg=0.0), "reg"), (dict(kernel="x"), "kernel"),
    (dict(n_components=0), "n_components"), (dict(graph="g"), "graph"),
    (dict(normalize_embedding="yes"), "normalize_embedding"),
    (dict(tol=1.0), "tol must be a number strictly between 0 and 1"),
    (dict(verbose=-3), "verbose"), (dict(verbose="loud"), "verbose"),
    (dict(kernel="rbf", memory_budget=1000), "too large for kernel='rbf'"),
])
def test_bad_parameters(params, match):
    X, _ = blobs(n=30, d=6, seed=0)
    with pytest.raises(ValueError, match=match):
        LaplacianSpectralClustering(**params).fit(X)


def test_low_rank_extreme_and_transformer():
    from sklearn.base import TransformerMixin

    from linlap.datasets import make_text_corpus

    X, _ = make_text_corpus(2, n_features=300, random_state=0)
    twice = sp.csr_matrix(np.repeat(X.toarray(), 6, axis=0))  # 2 documents, 6 copies each
    with pytest.raises(ValueError, match="rank 1"):
        LaplacianSpectralClustering(n_clusters=3, random_state=0).fit(twice)
    same = sp.csr_matrix(np.repeat(X[:1].toarray(), 10, axis=0))
    with pytest.raises(ValueError, match="every row the same"):
        LaplacianSpectralClustering(random_state=0).fit(same)
    Y, _ = make_text_corpus(60, n_features=300, random_state=1)
    with pytest.raises(ValueError, match="extreme"):
        LaplacianSpectralClustering(random_state=0).fit(Y * 1e40)
    with pytest.raises(ValueError, match="singular|rescale"):
        LaplacianSpectralClustering(random_state=0).fit(Y * 1e10)
    est = LaplacianSpectralClustering(random_state=0)
    assert isinstance(est, TransformerMixin)
    np.testing.assert_allclose(est.fit_transform(Y), est.transform(Y), atol=1e-8)


def test_linear_kernel_dimension_error_names_n_clusters_and_a_remedy():
    """With the linear kernel the embedding dimension is bounded by n_features: the error
    names the parameter the user set (n_clusters, not the n_components never set) and
    suggests a non-linear kernel."""
    X, _ = blobs(n=60, d=8, seed=3)
    X1 = X[:, :1].toarray() + 0.1
    with pytest.raises(ValueError, match=r"^n_clusters=2 .*n_features=1.*non-linear kernel"):
        LaplacianSpectralClustering(random_state=0).fit(X1)
    with pytest.raises(ValueError, match=r"^n_clusters=8 .*n_features=8.*non-linear kernel"):
        LaplacianSpectralClustering(n_clusters=8, random_state=0).fit(X)
    with pytest.raises(ValueError, match=r"^n_components=8 must .*n_features=8"):
        LaplacianSpectralClustering(n_components=8, random_state=0).fit(X)
    with pytest.raises(ValueError, match=r"^n_clusters=61 .*n_samples=60"):
        LaplacianSpectralClustering(n_clusters=61, random_state=0).fit(X)
    # a non-linear kernel takes them
    labels = LaplacianSpectralClustering(kernel="rbf", random_state=0).fit(X1).labels_
    assert set(labels) <= {0, 1}


def test_lobpcg_cut_short_warns_and_counts_its_iterations():
    # LOBPCG returns its best iterate when max_iter ends it before tol: a wrong embedding
    # must not pass silently, and n_iter counts the iterations run (not a history length)
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    rng = np.random.default_rng(0)
    X, _ = blobs(n=50, d=60, n_classes=3, seed=0, sparse=True, noise=0.5)
    M = random_laplacian(50, rng, normalized=True)
    kw = dict(reg=1e-3, scale=1 / np.trace(M), n_components=3, dense_max_features=0,
              tol=1e-9, random_state=0)
    with pytest.warns(ConvergenceWarning, match="LOBPCG stopped after 3 iterations"):
        short = linear_spectral_embedding(X, lambda V: M @ V, max_iter=3, **kw)
    assert short.n_iter == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        full = linear_spectral_embedding(X, lambda V: M @ V, max_iter=2000, **kw)
    assert 3 < full.n_iter < 2000
    assert np.all(short.eigenvalues > full.eigenvalues * (1 + 1e-6))
