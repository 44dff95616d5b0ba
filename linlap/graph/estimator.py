"""The :class:`KNNGraph` estimator: parameters, fit orchestration and the Laplacian
operator it hands to the solvers.

Its length is mostly the class docstring, the user's reference for the graph; the work
is done in :mod:`.search`, :mod:`.weights`, :mod:`.laplacian`, :mod:`.reorder` and
:mod:`.storage`.
"""

import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._memory import check_memory, graph_bytes
from .._validation import is_finite_real, is_int, user_stacklevel
from . import reorder as _reorder
from . import search
from .laplacian import (LaplacianPasses, laplacian_matrix, laplacian_power_sum,
                        laplacian_product, laplacian_trace, pass_blocks)
from .storage import load_graph, save_graph
from .params import MAX_POWER, check_graph_params, check_power
from .weights import weights_matrix

__all__ = ["KNNGraph"]

# attributes of a fitted graph that with_laplacian and subgraph views share
_SHARED = ("neighbors_", "distances_", "adjacency_", "degree_", "heat_sigma_", "algorithm_",
           "space_", "recall_", "n_repaired_", "n_empty_", "n_samples_fit_", "n_features_in_",
           "build_time_", "node_order_", "rows_fingerprint_")

#: rows of X read by :func:`rows_fingerprint`
FINGERPRINT_ROWS = 64


def rows_fingerprint(X, n_rows=FINGERPRINT_ROWS):
    """What tells the matrix a graph was built on from the same rows reordered, or from
    other documents of the same number: for ``n_rows`` rows spread evenly over X, the
    projection of each row, scaled to unit length, on a fixed pseudo-random direction
    (CSR or dense, any real dtype; the direction's entry j is a hash of j, so no
    n_features-long vector is made for sparse X). Compare with
    :func:`same_rows_fingerprint` (a tolerance: float32 and float64 copies agree)."""
    n, d = X.shape
    rows = np.unique(np.linspace(0, n - 1, min(n, n_rows)).astype(np.int64))

    def direction(j):
        return ((np.asarray(j, dtype=np.uint64) * np.uint64(0x9E3779B1))
                % np.uint64(2 ** 32)).astype(np.float64) / 2.0 ** 32 - 0.5

    if sp.issparse(X):
        R = sp.csr_matrix(X[rows], dtype=np.float64)
        R.sum_duplicates()  # a row's norm, not the sum of its duplicate entries' squares
        entry_row = np.repeat(np.arange(R.shape[0]), np.diff(R.indptr))
        proj = np.bincount(entry_row, R.data * direction(R.indices), minlength=R.shape[0])
        norms = np.sqrt(np.bincount(entry_row, R.data ** 2, minlength=R.shape[0]))
    else:
        R = np.asarray(X[rows], dtype=np.float64)
        proj = R @ direction(np.arange(d))
        norms = np.linalg.norm(R, axis=1)
    return [float(v) for v in np.where(norms > 0, proj / np.where(norms > 0, norms, 1), 0)]


def same_rows_fingerprint(a, b, atol=1e-4):
    """Whether two :func:`rows_fingerprint` values agree (to ``atol``: float32 rounding)."""
    return len(a) == len(b) and bool(np.allclose(a, b, rtol=0, atol=atol))


def _same_value(a, b):
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # arrays, objects without a truth value
        return False


def _check_power_coefs(coefs):
    """``coefs`` of :meth:`KNNGraph.laplacian_power_sum` as ``{int t: float}``; ValueError
    naming what is wrong."""
    if not isinstance(coefs, dict) or not coefs:
        raise ValueError(f"coefs must be a non-empty dict mapping powers to weights, got "
                         f"{coefs!r}.")
    checked = {}
    for t, c in coefs.items():
        if not is_int(t) or not 1 <= t <= MAX_POWER:
            raise ValueError(f"coefs must map powers t >= 1 to weights: each power an "
                             f"integer in [1, {MAX_POWER}], got {t!r}.")
        if not is_finite_real(c):
            raise ValueError(f"coefs must map powers t >= 1 to weights: each weight a "
                             f"finite real number, got {c!r} for power {t}.")
        checked[int(t)] = float(c)
    return checked


class KNNGraph(BaseEstimator):
    r"""k-nearest-neighbour graph over documents and its Laplacian operator.

    Built once over all rows (labeled and unlabeled) and passed to many
    estimators; model selection over the regularisation weights reuses it.
    ``sklearn.base.clone`` of a *fitted* graph returns the graph itself
    (it is immutable and meant to be shared); use :meth:`with_laplacian` to
    get the same graph with another Laplacian without rebuilding it.

    **Geometry.**  Rows are L2-normalised internally (on a copy) and compared
    by cosine.  The distance convention used everywhere (``distances_``, the
    heat kernel, the data-driven σ) is the Euclidean distance between unit
    vectors,

    .. math:: d(x_i, x_j) = \sqrt{\max(0,\ 2 - 2\cos(x_i, x_j))} \in [0, 2],

    computed in float64; d² below 1e-12 (the rounding level of 2 − 2 cos) is
    reported as exactly 0, so duplicate documents have distance 0.

    With ``space='svd'`` the rows are first projected by a
    ``TruncatedSVD(n_components)`` and re-normalised; neighbours, distances
    and weights are then all computed in that space.

    **Weights** on a kNN edge (i, j), j among the k nearest of i:

    * ``'binary'``: :math:`w_{ij} = 1`;
    * ``'heat'``: :math:`w_{ij} = \exp(-d_{ij}^2 / (2\sigma^2))`, σ =
      ``heat_sigma`` or, if None, the mean of all n·k kNN distances
      (1.0 if that mean is 0, i.e. every neighbour is a duplicate);
    * ``'cosine'``: :math:`w_{ij} = \max(0, \cos(x_i, x_j)) = \max(0, 1 - d_{ij}^2/2)`
      (an orthogonal neighbour gives no edge).

    Duplicate rows (d = 0) get weight 1 under every scheme.  The directed
    kNN matrix A is symmetrised as W = max(A, Aᵀ) (``'union'``) or
    W = min(A, Aᵀ) (``'mutual'``, which may leave nodes isolated).

    **Empty rows and duplicates.**  An empty row (no nonzero entry: an empty
    document, or one of stop words only) has no direction to compare: it is left
    out of the search and becomes an isolated node, with no edge and an all-zero
    row and column of L, so a classifier gives it the intercept's prediction
    (``n_empty_``; fit warns with their number).  Copies of one document have one
    decision value f but, in general, unequal degrees, and the null space of the
    normalised Laplacian is spanned by D^{1/2}1, not by the constants: the graph
    term then penalises any f ≠ 0 on the copies, and many copies (more than k) pull
    their decision value towards 0 (bench/RESULTS.md, "Duplicate documents").  D − W
    (``normalized=False``) has no such bias; otherwise remove duplicates first.

    **Laplacian.**  Degree :math:`D = \mathrm{diag}(W\mathbf 1)`.

    * unnormalised (``normalized=False``): :math:`L = D - W`;
    * normalised (``normalized=True``):
      :math:`L = D^{-1/2}(D - W)D^{-1/2} = I - D^{-1/2} W D^{-1/2}`, with
      :math:`D^{-1/2}` of a zero degree taken as 0.  An isolated node
      therefore has an all-zero row and column (:math:`L_{ii} = 0`), exactly
      as in D − W: the graph says nothing about it.

    ``power=p`` means :math:`L^p`, applied by :meth:`laplacian_matvec` as p
    sparse products and never formed.

    **Node order.**  Each power of L is one pass over W that gathers, for
    every row, the rows of the current n × c block at its neighbours; when the
    neighbours of a node are scattered over all n positions (a kNN graph in
    document order), those gathers are cache misses and dominate the pass.
    With ``reorder`` (by default for n_samples >= 100,000) fit computes a node
    order ``node_order_`` once — reverse Cuthill–McKee, then clusters by label
    propagation sorted in that order — and keeps the renumbered copy
    P W Pᵀ (same nnz) for the passes: :meth:`laplacian_matvec` permutes its
    input once (fused with the first diagonal scaling), runs the p passes on
    the renumbered graph and writes the last pass's rows straight back to the
    original order.  Results, ``adjacency_``, :meth:`laplacian_matrix` and
    every other attribute stay in the original row order.  Cost: O(nnz(W)) more
    time in fit and a second copy of W in memory (12 bytes per stored entry plus
    the n-vectors); bench/RESULTS.md has the measured gain of the passes.

    **Scale of the graph term.**  linlap's objective multiplies the graph
    term by :math:`s = 1/\mathrm{trace}(L)` so that a good γ_I does not drift
    with n or k.  ``trace_`` is trace(L) — the number of non-isolated nodes
    for the normalised Laplacian, the sum of the degrees (= sum of W) for
    D − W — and ``scale_ = 1 / trace_`` (0.0 if the graph has no edge).
    The trace is that of L, also when ``power > 1``.

    **Defaults** (k = 50, cosine weights, union, normalised Laplacian, p = 5)
    were chosen by test error on real text (bench/RESULTS.md).

    **Search.**  Up to ``exact_max_samples`` rows, exact (blocked dot products,
    bounded memory); above, pynndescent on a 50-dimensional TruncatedSVD embedding
    (``space='auto'``), the rows it fails on repaired by exact search and
    ``recall_`` measured against exact search on ``recall_sample`` rows
    (docs/design.md, "The graph").  The first pynndescent call of a process pays a
    numba JIT compilation of tens of seconds.

    Parameters
    ----------
    n_neighbors : int, default=50
        k, the number of neighbours per row (1 <= k < n_samples).
    weight : {'binary', 'heat', 'cosine'}, default='cosine'
        Edge weights, see above.
    heat_sigma : float or None, default=None
        Width σ > 0 of the heat kernel; None chooses the mean kNN distance.
    symmetrize : {'union', 'mutual'}, default='union'
        W = max(A, Aᵀ) or W = min(A, Aᵀ).
    normalized : bool, default=True
        Normalised Laplacian I − D^{-1/2} W D^{-1/2} (True) or D − W (False).
        The estimators scale the graph term by s = 1/trace(L); the eigenvalues of
        D − W reach about twice the largest degree, so with ``normalized=False`` and
        p > 1 the term s fᵀL^p f is orders of magnitude larger than with the
        normalised Laplacian at the same γ_I (γ_I must shrink accordingly, or every
        prediction collapses to one class).
    power : int, default=5
        The operator applies L^p (1 <= p <= 100) by p sparse matrix products. The
        normalised Laplacian's eigenvalues reach 2, so those of L^p reach 2^p: powers
        above 100 are refused (2^100 ≈ 1e30 already dwarfs every other term; beyond
        about 1000 they overflow float64).
    space : {'auto', 'tfidf', 'svd'}, default='auto'
        Search neighbours on the (row-normalised) input itself, or on its
        row-normalised TruncatedSVD embedding. 'auto': the input itself when the
        non-empty rows number at most ``exact_max_samples``, else the SVD embedding
        (see "Search" above). The space changes the graph more than exact or
        approximate search does: in bench/RESULTS.md ("The graph's space")
        the TF-IDF graph was the more accurate on topic corpora, the SVD graph
        on IMDB sentiment.
    n_components : int, default=50
        Dimension of the SVD embedding (``space='svd'`` only).
    svd_sample : int, default=100000
        The SVD is fitted on at most this many random rows, then applied to
        all rows (``space='svd'`` only).
    algorithm : {'auto', 'exact', 'nndescent'}, default='auto'
        'auto' is exact when the non-empty rows number at most ``exact_max_samples``,
        else nndescent.
    exact_max_samples : int, default=50000
        Threshold of ``algorithm='auto'``.
    n_search_neighbors : int or None, default=None
        Number of neighbours pynndescent is asked for (it lists the row
        itself among them); the best k others are kept.  Must exceed k.
        None means ``max(n_neighbors + 10, 30)`` on sparse input and
        ``n_neighbors + 10`` on dense input or the SVD embedding.
    nndescent_kwds : dict or None, default=None
        Extra keyword arguments for ``pynndescent.NNDescent`` (e.g.
        ``n_trees``, ``n_iters``, ``max_candidates``, ``delta``); by default
        pynndescent's own.  ``metric``, ``n_neighbors``, ``random_state``,
        ``n_jobs`` and ``verbose`` are set by KNNGraph and may not be given.
        ``diversify_prob`` and ``pruning_degree_multiplier`` only shape
        pynndescent's *query* graph, which KNNGraph never builds; they have
        no effect here.
    recall_sample : int, default=200
        Rows on which the approximate search is checked against exact
        search (recall@k); 0 disables the check.
    reorder : {'auto', True, False}, default='auto'
        Renumber the nodes for memory locality of :meth:`laplacian_matvec`
        (computed once in fit from W; see "Node order" above).  'auto'
        renumbers when n_samples >= 100,000.  Only the internal layout
        changes: every result and attribute stays in the original row order.
        Costs a second copy of W in memory.
    random_state : int, RandomState instance or None, default=None
        Seeds the SVD, pynndescent and the recall sample.
    n_jobs : int or None, default=None
        Threads for the search (scikit-learn convention: None means 1
        unless inside a ``joblib.parallel_backend`` context, -1 all cores).
        Passed to pynndescent and used by the exact search.
    verbose : bool, default=False
        Print each step and its time (and progress of the exact search).

    Attributes
    ----------
    neighbors_ : ndarray of shape (n_samples, n_neighbors), int64
        Indices of the k nearest neighbours of every row, nearest first; -1 for
        the rows of empty documents (which have no neighbour).
    distances_ : ndarray of shape (n_samples, n_neighbors), float64
        Their distances d = sqrt(max(0, 2 − 2 cos)); inf where the neighbour is -1.
    adjacency_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        The symmetric weight matrix W (float64, zero diagonal, no explicit
        zeros, sorted indices).
    degree_ : ndarray of shape (n_samples,)
        Row sums of W.
    n_isolated_ : int
        Number of nodes with degree 0.
    trace_ : float
        trace(L).
    scale_ : float
        s = 1 / trace(L), the normalisation of the graph term.
    heat_sigma_ : float or None
        σ actually used (``weight='heat'`` only).
    algorithm_ : str
        'exact' or 'nndescent', as resolved.
    space_ : str
        'tfidf' or 'svd', as resolved.
    recall_ : float or None
        recall@k of the approximate search on ``recall_sample`` rows
        (tie-aware: a returned neighbour counts as correct when its distance
        does not exceed the exact k-th distance); None for the exact search
        or when ``recall_sample=0``.
    n_repaired_ : int
        Rows of the approximate search re-done by exact search.
    n_empty_ : int
        Empty rows of X (no nonzero entry). They are left out of the search and
        become isolated nodes: no edge, an all-zero row and column of L (a
        classifier gives them the intercept's prediction). ``fit`` warns with
        their number.
    node_order_ : ndarray of shape (n_samples,), int64, or None
        The node numbering of the Laplacian passes (position q holds row
        ``node_order_[q]``), or None when the nodes were not renumbered.
    rows_fingerprint_ : list of float or None
        64 rows of X, each as one number (:func:`rows_fingerprint`): an estimator
        given this graph warns when its X differs there (rows reordered, other
        documents). None for a graph built by :func:`linlap.distributed.fit_graph`.
    build_time_ : dict
        Seconds spent per step: 'svd' (if used), 'search', 'recall'
        (if measured), 'weights', 'reorder' (if renumbered) and 'total'.
    n_samples_fit_ : int
    n_features_in_ : int

    Examples
    --------
    >>> g = KNNGraph(n_neighbors=10, weight="heat").fit(X_tfidf)   # doctest: +SKIP
    >>> Lz = g.laplacian_matvec(z)                                   # doctest: +SKIP
    >>> g2 = g.with_laplacian(power=2)         # same graph, L^2       # doctest: +SKIP
    """


    def __init__(self, n_neighbors=50, *, weight="cosine", heat_sigma=None,
                 symmetrize="union", normalized=True, power=5, space="auto",
                 n_components=50, svd_sample=100_000, algorithm="auto",
                 exact_max_samples=50000,
                 n_search_neighbors=None, nndescent_kwds=None, recall_sample=200,
                 reorder="auto", random_state=None, n_jobs=None, verbose=False):
        self.n_neighbors = n_neighbors
        self.weight = weight
        self.heat_sigma = heat_sigma
        self.symmetrize = symmetrize
        self.normalized = normalized
        self.power = power
        self.space = space
        self.n_components = n_components
        self.svd_sample = svd_sample
        self.algorithm = algorithm
        self.exact_max_samples = exact_max_samples
        self.n_search_neighbors = n_search_neighbors
        self.nndescent_kwds = nndescent_kwds
        self.recall_sample = recall_sample
        self.reorder = reorder
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    # ------------------------------------------------------------------
    # parameter checks
    # ------------------------------------------------------------------
    def _check_params(self):
        check_graph_params(self)

    # ------------------------------------------------------------------
    # fit
    # ------------------------------------------------------------------
    def fit(self, X, y=None):
        """Build the kNN graph of the rows of X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Documents as rows (typically TF-IDF).  Must be finite.  Empty rows
            (no nonzero entry) become isolated nodes (see ``n_empty_``).  Not
            modified.
        y : ignored
            Present for Pipeline compatibility.

        Returns
        -------
        self : KNNGraph
        """
        t_total = time.perf_counter()
        self._check_params()
        verbose = bool(self.verbose)
        Xn, empty = search.prepare_input(X)
        n, d = Xn.shape
        fingerprint = rows_fingerprint(Xn)  # Xn's rows are X's, scaled to unit length
        k = self.n_neighbors
        rows = None  # the rows searched: all, or the non-empty ones
        if empty.size:
            warnings.warn(
                f"{empty.size} of {n} rows of X are empty (no nonzero entry): they become "
                f"isolated nodes of the graph (no edge; n_empty_ counts them).",
                UserWarning, stacklevel=user_stacklevel())
            rows = np.setdiff1d(np.arange(n), empty, assume_unique=True)
            Xn = Xn[rows]
        n_search = n - empty.size
        if k >= n_search:
            what = (f"the {n_search} non-empty rows ({empty.size} rows of X are empty)"
                    if empty.size else f"n_samples={n}")
            raise ValueError(f"n_neighbors={k} must be smaller than {what} (every row needs k "
                             f"other rows as neighbours).")
        rng = check_random_state(self.random_state)
        n_jobs = search.effective_n_jobs(self.n_jobs)
        times = {}

        algorithm = self.algorithm
        if algorithm == "auto":
            algorithm = "exact" if n_search <= self.exact_max_samples else "nndescent"
        space = self.space
        if space == "auto":
            space = "tfidf" if n_search <= self.exact_max_samples else "svd"

        nnz = Xn.nnz if sp.issparse(Xn) else n * d
        reorder = self._reorders(n)
        check_memory(
            graph_bytes(n, nnz, k, space=space, n_components=self.n_components,
                        n_search=self.n_search_neighbors, reorder=reorder),
            f"Building the {k}-NN graph of {n} rows ({nnz} nonzeros)",
            "Use a smaller n_neighbors, or fewer rows.")

        if space == "svd":
            if self.n_components > min(n_search, d):
                raise ValueError(
                    f"n_components={self.n_components} must be <= min(n_samples, n_features)"
                    f" = {min(n_search, d)} for space='svd'.")
            if self.svd_sample < self.n_components:
                raise ValueError(
                    f"svd_sample={self.svd_sample} must be >= n_components="
                    f"{self.n_components}: the SVD is fitted on svd_sample rows.")
            t0 = time.perf_counter()
            Xs = search.svd_embedding(Xn, self.n_components, self.svd_sample, rng, verbose)
            times["svd"] = time.perf_counter() - t0
        else:
            Xs = Xn
        del Xn

        t0 = time.perf_counter()
        n_repaired = 0
        if algorithm == "exact":
            if verbose:
                search.log(f"exact {k}-NN search over {n_search} rows")
            neighbors, distances = search.exact_knn(Xs, k, n_jobs=n_jobs, verbose=verbose)
            XT = None
        else:
            neighbors, distances, n_repaired, XT = search.approximate_search(
                Xs, k, n_search=self.n_search_neighbors,
                random_state=rng.randint(np.iinfo(np.int32).max), n_jobs=n_jobs,
                verbose=verbose, kwds=self.nndescent_kwds)
        times["search"] = time.perf_counter() - t0
        if verbose:
            search.log(f"search done in {times['search']:.1f} s"
                       + (f" ({n_repaired} rows repaired by exact search)" if n_repaired else ""))

        recall = None
        if algorithm == "nndescent" and self.recall_sample > 0:
            t0 = time.perf_counter()
            recall = search.sampled_recall(Xs, distances, k, self.recall_sample, rng, XT=XT,
                                           n_jobs=n_jobs)
            times["recall"] = time.perf_counter() - t0
            if verbose:
                search.log(f"recall@{k} on {min(self.recall_sample, n_search)} sampled rows: "
                           f"{recall:.3f} ({times['recall']:.1f} s)")
        del XT, Xs
        if rows is not None:  # back to the rows of X; empty rows have no neighbour (-1)
            full_nb, full_dist = np.full((n, k), -1, dtype=np.int64), np.full((n, k), np.inf)
            full_nb[rows], full_dist[rows] = rows[neighbors], distances
            neighbors, distances = full_nb, full_dist

        self._fit_from_neighbors(
            neighbors, distances, n_features=d, n_empty=empty.size, algorithm=algorithm,
            space=space, recall=recall, n_repaired=n_repaired, times=times, t_start=t_total)
        self.rows_fingerprint_ = fingerprint
        return self

    def _fit_from_neighbors(self, neighbors, distances, *, n_features, n_empty, algorithm,
                            space, recall, n_repaired, times, t_start):
        """The fit after the search: weights, node order, degrees, Laplacian, attributes.

        ``neighbors`` and ``distances`` (n × k, sorted by distance, -1 / inf on empty
        rows) are over all rows of X in X's order; ``times`` holds the seconds of the
        steps done so far and ``t_start`` the ``perf_counter`` of the start of the fit.
        Shared by :meth:`fit` and :func:`linlap.distributed.fit_graph`.
        """
        verbose = bool(self.verbose)
        n = neighbors.shape[0]
        reorder = self._reorders(n)
        t0 = time.perf_counter()
        W, sigma = weights_matrix(neighbors, distances, self.weight, self.heat_sigma,
                                  self.symmetrize)
        times["weights"] = time.perf_counter() - t0

        order = None
        if reorder:
            t0 = time.perf_counter()
            order = _reorder.locality_order(W)
            times["reorder"] = time.perf_counter() - t0
            if verbose:
                search.log(f"nodes renumbered for locality in {times['reorder']:.1f} s")

        self.neighbors_ = neighbors
        self.distances_ = distances
        self.adjacency_ = W
        self.degree_ = np.asarray(W.sum(axis=1)).ravel()
        self.heat_sigma_ = sigma
        self.algorithm_ = algorithm
        self.space_ = space
        self.recall_ = recall
        self.n_repaired_ = int(n_repaired)
        self.n_empty_ = int(n_empty)
        self.n_samples_fit_ = n
        self.n_features_in_ = int(n_features)
        self.node_order_ = order
        self.rows_fingerprint_ = None  # set by fit (not by the distributed search)
        t0 = time.perf_counter()
        self._set_laplacian()  # builds the renumbered copy of W when order is set
        if order is not None:
            times["reorder"] += time.perf_counter() - t0
        times["total"] = time.perf_counter() - t_start
        self.build_time_ = times
        if verbose:
            search.log(f"graph: {W.nnz // 2} edges, {self.n_isolated_} isolated nodes, "
                       f"trace(L) = {self.trace_:g}; total {times['total']:.1f} s")
        return self

    # ------------------------------------------------------------------
    # Laplacian
    # ------------------------------------------------------------------
    def _set_laplacian(self):
        """Derive what the Laplacian passes read (and trace_, scale_) from W, degree_
        and node_order_; the renumbered copy of W is reused when it was built for the
        same W and order (``with_laplacian`` shares it)."""
        deg = self.degree_
        self.n_isolated_ = int(np.count_nonzero(deg == 0))
        self._passes = LaplacianPasses(self.adjacency_, deg, getattr(self, "node_order_", None),
                                       reuse=getattr(self, "_passes", None))
        self.trace_ = laplacian_trace(deg, self.normalized)
        self.scale_ = 1.0 / self.trace_ if self.trace_ > 0 else 0.0

    def __getstate__(self):
        # the passes (with the renumbered copy of W) are rebuilt on first use, not pickled
        state = dict(super().__getstate__())  # object.__getstate__ returns __dict__ itself
        state.pop("_passes", None)
        return state

    def _apply_laplacian(self, Z):
        """One product L Z by plain scipy/numpy operations (reference implementation;
        also used for complex input). :meth:`laplacian_matvec` uses fused numba passes."""
        return laplacian_product(self.adjacency_, self.degree_, self.normalized, Z)

    def laplacian_matvec(self, Z, out=None, work=None):
        r"""Apply L^p to Z by p fused sparse passes (L^p is never formed).

        Each power is one parallel numba pass over the CSR arrays of W with every
        diagonal scaling folded in (:mod:`linlap.graph.laplacian`); W, the degree
        vectors and the sums are float64. On a renumbered graph (``node_order_`` set)
        the passes run on P W Pᵀ and the result comes back in the original order.

        Parameters
        ----------
        Z : ndarray of shape (n_samples,) or (n_samples, m)
            float32 or float64 (read as is, never copied when C-contiguous); other
            real types are converted to float64.
        out : ndarray of the shape of Z, float64, C-contiguous, optional
            Where to write the result (must not overlap Z or ``work``).
        work : float64 ndarray, C-contiguous, with at least ``Z.size`` elements, optional
            Scratch (needed for ``power >= 2``, the normalised Laplacian or a
            renumbered graph, see ``reorder``; allocated when missing).  With
            ``out`` and ``work`` given, the call allocates nothing (an iterative
            solver calling it every iteration).

        Returns
        -------
        LZ : ndarray of the shape of Z, float64
            :math:`L^p Z` (``out`` if given), float64 for float32 as well as
            float64 input.
        """
        return self._power_sum(self._check_pass_input(Z), {int(self.power): 1.0}, out, work)

    def laplacian_power_sum(self, Z, coefs, out=None, work=None):
        r"""Return ``Σ_t coefs[t] L^t Z`` (L the Laplacian of power 1, whatever ``power``)
        by ``max t`` fused passes shared by all the powers.

        What an ensemble of powers of one graph needs (``EMRClassifier``): evaluated in
        Horner form, it costs the passes of :meth:`laplacian_matvec` at ``power = max
        t`` plus one in-place addition over Z's block per lower power, instead of one
        chain of passes per power. Powers of weight 0 cost nothing.

        Parameters
        ----------
        Z : ndarray of shape (n_samples,) or (n_samples, m)
            As in :meth:`laplacian_matvec`.
        coefs : dict {int t: float}
            Weight of each power t, an integer in [1, 100] (``MAX_POWER``, as for
            ``power``); weights finite real numbers.
        out, work : optional
            As in :meth:`laplacian_matvec`; with weights on more than one power the call
            still allocates one block of Z's size on a normalised or renumbered graph
            (the start vector of the Horner recursion, read again by each lower power).

        Returns
        -------
        ndarray of the shape of Z
            float64 (``out`` if given); complex128 for complex Z (plain scipy
            products; ``out`` must then be complex).
        """
        Z = self._check_pass_input(Z)
        coefs = {t: c for t, c in _check_power_coefs(coefs).items() if c != 0.0}
        return self._power_sum(Z, coefs, out, work)

    def _power_sum(self, Z, coefs, out, work):
        """Σ_t coefs[t] L^t Z for checked Z and coefs (nonzero weights)."""
        if Z.dtype.kind == "c":
            return self._complex_power_sum(Z, coefs, out)
        passes = self._current_passes()
        top = max(coefs, default=0)
        need_tmp = top >= 2 or self.normalized or passes.order is not None
        Z2, out, out2, tmp = pass_blocks(Z, out, work, need_tmp)
        if top == 0 or Z2.shape[1] == 0:  # no weight, or no columns
            out2[...] = 0.0
            return out
        laplacian_power_sum(passes, self.normalized, coefs, Z2, out2, tmp)
        return out

    def _check_pass_input(self, Z):
        check_is_fitted(self, "adjacency_")
        if sp.issparse(Z):
            raise TypeError("laplacian_matvec expects a dense array, got a sparse matrix.")
        Z = np.asarray(Z)
        if Z.dtype.kind not in "fc":
            Z = Z.astype(np.float64)
        n = self.n_samples_fit_
        if Z.ndim not in (1, 2) or Z.shape[0] != n:
            raise ValueError(f"Z must have shape ({n},) or ({n}, m), got {Z.shape}.")
        return Z

    def _current_passes(self):
        passes = getattr(self, "_passes", None)
        if passes is None or not passes.matches(self.adjacency_,
                                                getattr(self, "node_order_", None)):
            # unpickled, or adjacency_ / node_order_ replaced since
            self._set_laplacian()
            passes = self._passes
        return passes

    def _complex_power_sum(self, Z, coefs, out):
        """Complex Z: plain scipy products (no kernel for it), in complex128."""
        if out is not None and not np.iscomplexobj(out):
            raise ValueError(f"out must be a complex array for complex Z, got {out.dtype}.")
        res, total = Z, np.zeros(Z.shape, dtype=np.complex128)
        for t in range(1, max(coefs, default=0) + 1):
            res = self._apply_laplacian(res)
            if t in coefs:
                total += coefs[t] * res
        if out is not None:
            out[...] = total
            return out
        return total

    def laplacian_matrix(self, power=None):
        """Return L (or L^power) as an explicit sparse CSR matrix.

        For tests and small problems only: L^p fills in quickly with p.
        Solvers should use :meth:`laplacian_matvec`.

        Parameters
        ----------
        power : int or None, default=None
            Power of L; None uses ``self.power``.
        """
        check_is_fitted(self, "adjacency_")
        p = self.power if power is None else power
        check_power(p)
        return laplacian_matrix(self.adjacency_, self.degree_, self.normalized, p)

    def with_laplacian(self, normalized=None, power=None):
        """Same graph, other Laplacian: a new fitted KNNGraph, no rebuild.

        The neighbour arrays, the adjacency matrix and the degrees are
        *shared* (not copied) with ``self``; only the normalisation and/or
        the power differ.  Use it for model selection over p.

        Parameters
        ----------
        normalized : bool or None
            None keeps ``self.normalized``.
        power : int or None
            None keeps ``self.power``.

        Returns
        -------
        graph : KNNGraph
        """
        check_is_fitted(self, "adjacency_")
        params = self.get_params(deep=False)
        if normalized is not None:
            params["normalized"] = normalized
        if power is not None:
            params["power"] = power
        new = type(self)(**params)
        if not isinstance(new.normalized, (bool, np.bool_)):
            raise ValueError(f"normalized must be True or False, got {new.normalized!r}.")
        check_power(new.power)
        for name in _SHARED:
            setattr(new, name, getattr(self, name, None))
        new._passes = getattr(self, "_passes", None)  # its renumbered CSR is reused
        new._set_laplacian()
        return new

    def subgraph(self, n_neighbors=None, *, weight=None, heat_sigma=None, symmetrize=None,
                 normalized=None, power=None):
        """The graph of the k' <= k nearest neighbours of each row, no new search.

        The neighbour lists are sorted by distance, so the k'-NN lists are their
        first k' columns; only the weights, W and the degrees are recomputed (one
        O(n k') pass).  The result equals ``KNNGraph(n_neighbors=k', ...).fit(X)``
        up to the order of neighbours at tied distances.  The weights, the
        symmetrisation and the Laplacian may change too.  A renumbered graph keeps
        its ``node_order_`` (the subgraph's edges are a subset of its own).

        Parameters
        ----------
        n_neighbors : int or None
            k' (<= ``n_neighbors``); None keeps k.
        weight, heat_sigma, symmetrize, normalized, power
            As in the constructor; None keeps this graph's (``heat_sigma=None``
            keeps the given σ, or recomputes the data-driven one on the k' lists).

        Returns
        -------
        graph : KNNGraph
        """
        check_is_fitted(self, "adjacency_")
        params = self.get_params(deep=False)
        for name, value in (("n_neighbors", n_neighbors), ("weight", weight),
                            ("heat_sigma", heat_sigma), ("symmetrize", symmetrize),
                            ("normalized", normalized), ("power", power)):
            if value is not None:
                params[name] = value
        new = type(self)(**params)
        new._check_params()
        k = new.n_neighbors
        if k > self.n_neighbors:
            raise ValueError(f"n_neighbors={k} exceeds the {self.n_neighbors} neighbours "
                             f"this graph was built with.")
        t0 = time.perf_counter()
        neighbors = self.neighbors_[:, :k]
        distances = self.distances_[:, :k]
        W, sigma = weights_matrix(neighbors, distances, new.weight, new.heat_sigma,
                                   new.symmetrize)
        new.neighbors_, new.distances_, new.adjacency_ = neighbors, distances, W
        new.degree_ = np.asarray(W.sum(axis=1)).ravel()
        new.heat_sigma_ = sigma
        for name in _SHARED:
            if name not in ("neighbors_", "distances_", "adjacency_", "degree_",
                            "heat_sigma_", "build_time_"):
                setattr(new, name, getattr(self, name, None))
        new._set_laplacian()
        new.build_time_ = dict(self.build_time_, weights=time.perf_counter() - t0)
        return new

    # ------------------------------------------------------------------
    # sharing, persistence
    # ------------------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR TF-IDF is the expected input
        return tags

    def __sklearn_clone__(self):
        # A fitted graph is immutable and shared by many estimators: cloning
        # an estimator that holds it must not throw the graph away.
        if hasattr(self, "adjacency_"):
            return self
        return super().__sklearn_clone__()

    def set_params(self, **params):
        """Set parameters of an unfitted graph. A fitted graph is shared (``clone``
        keeps it) and its Laplacian passes read ``normalized`` and ``power``: changing
        a parameter would change it under every estimator that uses it, out of step
        with ``trace_`` and the neighbour arrays, so that is refused; use
        :meth:`with_laplacian` or :meth:`subgraph` for a variant of it, or a new
        ``KNNGraph(**params)``."""
        if hasattr(self, "adjacency_"):
            current = self.get_params(deep=False)
            changed = sorted(k for k, v in params.items()
                             if k in current and not _same_value(current[k], v))
            if changed:
                raise ValueError(
                    f"set_params({', '.join(changed)}) on a fitted KNNGraph: it may be shared "
                    f"by estimators (clone keeps a fitted graph), so it is not changed in "
                    f"place; use with_laplacian(normalized=..., power=...) or "
                    f"subgraph(n_neighbors=..., weight=...) for a variant of it, or "
                    f"KNNGraph(**params) (unfitted) for a new graph.")
        return super().set_params(**params)

    def _reorders(self, n):
        """Whether a fit of n rows renumbers the nodes (``reorder``)."""
        if isinstance(self.reorder, str):  # 'auto'
            return n >= _reorder.REORDER_MIN_SAMPLES
        return bool(self.reorder)

    def save(self, path):
        """Save the fitted graph to ``path`` (NumPy ``.npz``, no pickle).

        The file is written exactly at ``path`` (no suffix is added),
        atomically: to a temporary file in the same directory, then renamed.
        A ``random_state`` that is not an int or None is saved as None.
        """
        check_is_fitted(self, "adjacency_")
        save_graph(self, path)

    @classmethod
    def load(cls, path):
        """Load a graph written by :meth:`save`.

        Raises
        ------
        ValueError
            If the file is not a linlap KNNGraph file, is of an unsupported
            version, or is corrupt/truncated/inconsistent.
        """
        return load_graph(cls, path)
