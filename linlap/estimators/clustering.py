"""Regularised spectral clustering with an out-of-sample extension (seed 001 §5.4):
a thin scikit-learn wrapper over :mod:`linlap.solvers.spectral`."""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.cluster import KMeans
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import (check_extreme_values, check_graph_param, check_positive_int,
                           check_real, check_tol, check_verbose)
from ..gram import check_kernel_choice, GramOperator, kernel_product
from ..solvers.spectral import kernel_spectral_embedding, linear_spectral_embedding
from ._base import check_in_memory, resolve_graph, store_params
from .kernel import _resolve_gamma

__all__ = ["LaplacianSpectralClustering"]


class LaplacianSpectralClustering(ClusterMixin, TransformerMixin, BaseEstimator):
    """Regularised spectral clustering (seed 001 §5.4, eqs. 12–13).

    With no labels, manifold regularisation finds the functions f of the RKHS of k
    that minimise, on the n training rows,

        R(f) = reg ‖f‖²_K + s fᵀ L^p f     subject to   1ᵀf = 0,  fᵀf = 1,

    ``L^p`` the Laplacian power of the :class:`~linlap.KNNGraph` and ``s = 1/trace(L)``
    (``graph.scale_``, the scaling of the classifiers; seed 001's γ of eq. 12 is
    ``reg / s``). By the representer theorem ``f = Kα`` and this is the generalised
    eigenproblem of eq. 13, ``P(reg K + s KLK)Pv = λ PK²Pv`` (P: projection orthogonal
    to K1); the eigenfunctions of the smallest λ are used:

    * two clusters (``n_components=None``): the first eigenfunction, cluster = its
      sign (seed 001 Figure 7);
    * more: ``n_components`` (default ``n_clusters``) eigenfunctions as an
      embedding, each row scaled to unit length (``normalize_embedding``, as in Ng,
      Jordan & Weiss's spectral clustering), then k-means on it.

    Unlike plain spectral clustering, f is a function of x, so :meth:`predict`
    clusters new rows: ``f(x) = Σ_j α_j k(x_j, x)`` (``xᵀw`` for the linear kernel),
    then the sign or the nearest k-means centre.

    ``kernel='linear'`` (K = XXᵀ) never forms K: the eigenproblem is solved in feature
    space through products with X (dense d × d pencil when d <= ``dense_max_features``,
    else LOBPCG on operators), so it runs on sparse text at the scale of the linear
    classifiers. The other kernels form K (n × n, within ``memory_budget``) and
    eigendecompose it (O(n³)): moderate n.

    Parameters
    ----------
    n_clusters : int, default=2
    reg : float, default=1e-4
        Weight of ‖f‖²_K relative to the scaled graph term (> 0). Small: close to
        Laplacian eigenmaps on the graph; large: smoother f in the ambient space. The
        default was the best of {1e-4, 1e-3, 1e-2} for the linear variant on 20
        Newsgroups by top-level group (bench/spectral.py); smaller values need more
        LOBPCG iterations.
    kernel : {'linear', 'rbf', 'poly', 'polynomial'}, default='linear'
    gamma : 'scale', 'auto' or float, default='scale'
        Kernel width, as in :class:`~linlap.KernelLapSVMClassifier` (unused by
        'linear').
    degree : int, default=3
    coef0 : float, default=1.0
    n_components : int or None, default=None
        Eigenfunctions used: None means 1 for two clusters (sign), ``n_clusters``
        otherwise (k-means). An explicit value always uses k-means.
    normalize_embedding : bool, default=True
        Scale each embedded row (training and new rows alike) to unit length before
        k-means. On 20 Newsgroups by top-level group (7 clusters) it raised the adjusted
        Rand index of the linear variant from 0.12–0.26 to 0.22–0.41 over
        reg ∈ {1e-4, 1e-3, 1e-2} (bench/spectral.py, bench/RESULTS.md).
    graph : KNNGraph or None, default=None
        None builds the estimators' default graph on X (see :class:`~linlap.LapRLSClassifier`;
        seeded by ``random_state``); a fitted graph built on the same rows is reused as is.
    dense_max_features : int, default=2000
        Linear kernel: largest d solved by a dense d × d pencil.
    tol : float, default=1e-6
        LOBPCG residual tolerance.
    max_iter : int, default=500
        LOBPCG iterations.
    memory_budget : int, default=2**31
        Bytes for the dense n × n work of the non-linear kernels (about ``3 · 8n²``);
        fit refuses beyond it and names the linear kernel.
    n_init : int, default=10
        k-means restarts.
    random_state : int, RandomState or None, default=None
        LOBPCG start and k-means.
    verbose : int, default=0

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Cluster of every training row (0 … n_clusters − 1).
    embedding_ : ndarray of shape (n_samples, n_components)
        The eigenfunctions on the training rows (mean zero, unit norm).
    eigenvalues_ : ndarray of shape (n_components,)
        λ = R(f) of each, increasing.
    coef_ : ndarray of shape (n_features, n_components)
        Linear kernel: w with ``f(x) = xᵀw``.
    dual_coef_ : ndarray of shape (n_components, n_samples)
        Other kernels: α of ``f(x) = Σ_j α_j k(x_j, x)``.
    cluster_centers_ : ndarray of shape (n_clusters, n_components) or None
        The k-means centres in the (row-normalised) embedding (None with the sign
        rule).
    graph_ : KNNGraph
    X_fit_ : ndarray or CSR matrix
        Training rows (non-linear kernels only; None for 'linear').
    gamma_ : float or None
        Kernel width used.
    n_iter_ : int
        LOBPCG iterations (0: dense solve).
    n_features_in_ : int
    """

    def __init__(self, n_clusters=2, *, reg=1e-4, kernel="linear", gamma="scale", degree=3,
                 coef0=1.0, n_components=None, normalize_embedding=True, graph=None,
                 dense_max_features=2000,
                 tol=1e-6, max_iter=500, memory_budget=2**31, n_init=10,
                 random_state=None, verbose=0):
        store_params(self, locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _check_params(self):
        if (not isinstance(self.n_clusters, numbers.Integral) or isinstance(self.n_clusters, bool)
                or self.n_clusters < 2):
            raise ValueError(f"n_clusters must be an integer >= 2, got {self.n_clusters!r}.")
        check_real("reg", self.reg, 0, low_open=True)
        check_kernel_choice(self.kernel, self.gamma, self.degree, self.coef0)
        if self.n_components is not None and (
                not isinstance(self.n_components, numbers.Integral)
                or isinstance(self.n_components, bool) or self.n_components < 1):
            raise ValueError(f"n_components must be None or an integer >= 1, got "
                             f"{self.n_components!r}.")
        if not isinstance(self.normalize_embedding, (bool, np.bool_)):
            raise ValueError(f"normalize_embedding must be True or False, got "
                             f"{self.normalize_embedding!r}.")
        check_tol(self)
        check_positive_int(self, "max_iter", "memory_budget", "n_init", "dense_max_features")
        check_verbose(self)
        check_graph_param(self)

    def _fit_graph(self, X):
        return resolve_graph(self.graph, X, self.verbose, self.random_state)

    def fit(self, X, y=None):
        """Cluster the rows of X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        self._check_params()
        check_in_memory(self, X)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64,
                          ensure_min_samples=3)
        check_extreme_values(X, refuse_tiny=self.kernel == "linear")
        n = X.shape[0]
        sign_rule = self.n_components is None and self.n_clusters == 2
        k = 1 if sign_rule else (self.n_components or self.n_clusters)
        # the dimension asked for, named as the user set it
        what = (f"n_components={k}" if self.n_components is not None else
                f"n_clusters={self.n_clusters} (an embedding of dimension {k})")
        if k >= n:
            raise ValueError(f"{what} must be smaller than n_samples={n}.")
        linear = self.kernel == "linear"
        if linear and k >= X.shape[1]:
            raise ValueError(
                f"{what} must be smaller than n_features={X.shape[1]} with kernel='linear' "
                f"(its eigenfunctions x·w span at most n_features - 1 dimensions besides "
                f"the constant); use a non-linear kernel (kernel='rbf' or 'poly') or "
                f"fewer {'components' if self.n_components is not None else 'clusters'}.")
        if not linear and 3 * 8 * n * n > self.memory_budget:
            raise ValueError(
                f"n = {n} rows is too large for kernel={self.kernel!r} within memory_budget="
                f"{self.memory_budget / 2**30:.2f} GiB: the dense eigendecomposition of K "
                f"needs about {3 * 8 * n * n / 2**30:.2f} GiB. Use kernel='linear' (never "
                f"forms K; scales to sparse text) or raise memory_budget.")
        graph = self._fit_graph(X)
        common = dict(reg=float(self.reg), scale=graph.scale_, n_components=k, tol=self.tol,
                      max_iter=self.max_iter, random_state=self.random_state)
        if linear:
            sol = linear_spectral_embedding(X, graph.laplacian_matvec,
                                            dense_max_features=self.dense_max_features,
                                            **common)
            self.coef_, self.dual_coef_, self.X_fit_, self.gamma_ = sol.coef, None, None, None
        else:
            gamma = _resolve_gamma(self.gamma, X)
            gram = GramOperator(X, kernel=self.kernel, gamma=gamma, degree=self.degree,
                                coef0=self.coef0, memory_budget=8 * n * n)
            sol = kernel_spectral_embedding(gram.dense(), graph.laplacian_matvec, **common)
            self.coef_, self.dual_coef_ = None, sol.coef.T.copy()
            self.X_fit_, self.gamma_ = gram.X, gamma
        self.embedding_ = sol.embedding
        self.eigenvalues_ = sol.eigenvalues
        self.n_iter_ = sol.n_iter
        self.graph_ = graph
        if sign_rule:
            self.cluster_centers_ = None
            self.labels_ = (sol.embedding[:, 0] > 0).astype(np.intp)
        else:
            km = KMeans(self.n_clusters, n_init=self.n_init, random_state=self.random_state)
            self.labels_ = km.fit_predict(self._rows(sol.embedding)).astype(np.intp)
            self.cluster_centers_ = km.cluster_centers_
            self._kmeans = km
        return self

    def transform(self, X):
        """The eigenfunctions at new rows: ``f(x)`` of shape (n_samples, n_components)."""
        check_is_fitted(self, "embedding_")
        check_in_memory(self, X, "transform")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        if self.coef_ is not None:
            return np.asarray(X @ self.coef_, dtype=np.float64)
        if sp.issparse(X) != sp.issparse(self.X_fit_):
            X = sp.csr_matrix(X) if sp.issparse(self.X_fit_) else X.toarray()
        return kernel_product(X, self.X_fit_, self.dual_coef_.T, kernel=self.kernel,
                              gamma=self.gamma_, degree=self.degree, coef0=self.coef0)

    def predict(self, X):
        """Cluster of new rows (the out-of-sample extension of seed 001 §5.4)."""
        F = self.transform(X)
        if self.cluster_centers_ is None:
            return (F[:, 0] > 0).astype(np.intp)
        return self._kmeans.predict(self._rows(F)).astype(np.intp)

    def _rows(self, F):
        if not self.normalize_embedding:
            return F
        norms = np.linalg.norm(F, axis=1, keepdims=True)
        return F / np.where(norms > 0, norms, 1.0)

    def fit_predict(self, X, y=None):
        """Fit and return ``labels_``."""
        return self.fit(X).labels_
