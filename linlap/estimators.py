"""scikit-learn estimators: thin wrappers over the solvers in :mod:`linlap.solvers`."""


import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from ._labels import marker_mask
from ._memory import check_memory, solve_bytes
from ._progress import progress
from ._validation import check_graph_param, check_nonnegative, check_positive_int, check_tol
from .graph import KNNGraph
from .solvers.laprls import laprls_linear
from .solvers.newton import lapsvm_newton
from .solvers.tinv import lapsvm_tinv

__all__ = ["LapRLSClassifier", "LapSVMClassifier"]

#: k of the graph an estimator builds when none is given (capped at n - 1).
DEFAULT_N_NEIGHBORS = KNNGraph().n_neighbors


class _LinearLapClassifier(LinearClassifierMixin, BaseEstimator):
    """Shared fit logic of the linear manifold-regularised classifiers.

    Subclasses implement ``_solve(X, targets, labeled, unlabeled, graph, balance,
    init)`` returning a :class:`~linlap.solvers.laprls.LinearSolution`.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # -- validation -----------------------------------------------------------------
    def _check_params(self):
        check_nonnegative(self, "gamma_A", "gamma_I")
        if self.gamma_A == 0 and self.gamma_I == 0:
            raise ValueError("gamma_A and gamma_I cannot both be 0: the problem would be "
                             "unregularised and, with few labels, singular.")
        check_tol(self)
        check_positive_int(self, "max_iter")
        check_graph_param(self)

    def _check_labels(self, y):
        unlabeled = marker_mask(y, self.unlabeled)
        labeled_rows = np.flatnonzero(~unlabeled)
        if labeled_rows.size == 0:
            raise ValueError(
                f"y has no labeled rows: every entry equals the unlabeled marker "
                f"{self.unlabeled!r}. Label at least one row of each of two classes."
            )
        y_lab = y[labeled_rows]
        if y_lab.dtype == object:
            kinds = {type(v) for v in y_lab}
            if len(kinds) > 1:
                raise ValueError(f"y mixes label types {sorted(k.__name__ for k in kinds)}; "
                                 f"use one type (the unlabeled marker is {self.unlabeled!r}).")
        check_classification_targets(y_lab)
        classes, y_idx = np.unique(y_lab, return_inverse=True)
        if classes.size < 2:
            raise ValueError(
                f"The labeled rows contain a single class ({classes[0]!r}); a classifier "
                f"needs at least two classes among the labeled rows (1 class found)."
            )
        return labeled_rows, np.flatnonzero(unlabeled), classes, y_idx

    def _balance_targets(self, classes, y_idx, n_unlabeled):
        """Wanted mean decision value r per target column, or None."""
        prior = self.class_prior
        if prior is None:
            return None
        if n_unlabeled == 0:
            raise ValueError("class_prior needs unlabeled rows to constrain, but every row "
                             "of y is labeled; use class_prior=None.")
        if isinstance(prior, str):
            if prior != "labeled":
                raise ValueError(f"class_prior must be None, 'labeled' or class proportions, "
                                 f"got {prior!r}.")
            pi = np.bincount(y_idx, minlength=classes.size) / y_idx.size
        else:
            if isinstance(prior, dict):
                missing = [c for c in classes if c not in prior]
                if missing:
                    raise ValueError(f"class_prior has no proportion for classes {missing}.")
                pi = np.array([prior[c] for c in classes], dtype=float)
            else:
                pi = np.asarray(prior, dtype=float).ravel()
            if pi.shape != (classes.size,) or not np.all(np.isfinite(pi)) or np.any(pi < 0) \
                    or np.any(pi > 1) or not np.isclose(pi.sum(), 1.0, atol=1e-6):
                raise ValueError(
                    f"class_prior must give one proportion in [0, 1] per class "
                    f"({classes.size} classes, in the order of classes_), summing to 1; "
                    f"got {prior!r}."
                )
        r = 2.0 * pi - 1.0
        return r[1:] if classes.size == 2 else r

    def _fit_graph(self, X):
        n = X.shape[0]
        if self.graph is None:
            if n < 2:
                raise ValueError(f"Found n_samples = {n}: the graph needs at least 2 rows.")
            return KNNGraph(n_neighbors=min(DEFAULT_N_NEIGHBORS, n - 1),
                            verbose=bool(self.verbose)).fit(X)
        graph = clone(self.graph)  # a fitted graph clones to itself: shared, not rebuilt
        if getattr(graph, "adjacency_", None) is not None and hasattr(graph, "n_samples_fit_"):
            if graph.n_samples_fit_ != n:
                raise ValueError(
                    f"The prebuilt graph was built on {graph.n_samples_fit_} rows but X has "
                    f"{n}; pass the X the graph was built on (labeled and unlabeled rows)."
                )
            return graph
        return graph.fit(X)

    # -- fit --------------------------------------------------------------------------
    def fit(self, X, y):
        """Fit on labeled and unlabeled rows.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            All training documents, labeled and unlabeled (CSR is used as is).
        y : array-like of shape (n_samples,)
            Labels; rows equal to ``unlabeled`` (default -1) are unlabeled.

        Returns
        -------
        self
        """
        self._check_params()
        # float32 CSR is used as is (the solvers accumulate in float64): half the memory
        X, y = validate_data(self, X, y, accept_sparse="csr",
                             dtype=[np.float64, np.float32], ensure_min_samples=2)
        labeled_rows, unlabeled_rows, classes, y_idx = self._check_labels(y)
        balance = self._balance_targets(classes, y_idx, unlabeled_rows.size)

        graph = self._fit_graph(X)
        if classes.size == 2:
            targets = np.where(y_idx == 1, 1.0, -1.0)[:, None]
        else:
            targets = np.full((y_idx.size, classes.size), -1.0)
            targets[np.arange(y_idx.size), y_idx] = 1.0

        n, d = X.shape
        check_memory(solve_bytes(n, d, X.nnz if sp.issparse(X) else n * d,
                                 targets.shape[1] + (balance is not None)),
                     f"Fitting {type(self).__name__} on {n} rows x {d} features")
        init = None
        if self.warm_start and getattr(self, "_solution", None) is not None:
            prev = self._solution
            if prev.coef.shape == (targets.shape[1], X.shape[1]):
                init = prev
        sol = self._solve(X, targets, labeled_rows, unlabeled_rows, graph, balance, init)
        if not (np.all(np.isfinite(sol.coef)) and np.all(np.isfinite(sol.intercept))):
            raise ValueError("The solver produced non-finite coefficients; check that X has "
                             "no extreme values and that gamma_A, gamma_I are not tiny.")

        self.classes_ = classes
        self.coef_ = sol.coef
        self.intercept_ = sol.intercept
        self.n_iter_ = sol.n_iter
        self.graph_ = graph
        F = sol.decision
        pred = (F[:, 0] > 0).astype(int) if classes.size == 2 else F.argmax(axis=1)
        pred[labeled_rows] = y_idx
        self.transduction_ = classes[pred]
        sol.decision = None  # n × C: not needed for a warm start, too big to keep or pickle
        self._solution = sol
        return self

    def _progress_callback(self, name, quantity="relative residual", every=10):
        if not self.verbose:
            return None
        bar = progress(True, desc=name, unit="iteration", every=every)
        key = quantity.replace(" ", "_")

        def report(iteration, value):
            bar.update(1, **{key: float(value)})
        return report


class LapRLSClassifier(_LinearLapClassifier):
    """Linear Laplacian regularised least squares (seed 004 §4.1).

    Fits ``f(x) = w·x + b`` on labeled and unlabeled rows by minimising, per class
    (one-vs-rest, ±1 targets; a single column for binary problems),

        J(w, b) = (1/l) Σ_{i labeled} (y_i − f(x_i))² + γ_A ‖w‖² + γ_I s fᵀ L^p f

    where ``f`` stacks the decision values of all n training rows, ``L^p`` is the
    graph Laplacian of :class:`~linlap.KNNGraph` raised to its ``power`` and
    ``s = 1/trace(L)`` keeps a good ``γ_I`` from drifting with n and k. The bias is
    not penalised. The normal equations are solved by conjugate gradients through
    products with X — ``XᵀLX`` is never formed — with all classes in one batched solve.

    Parameters
    ----------
    gamma_A : float, default=1e-4
        Weight γ_A of the ambient (ridge) penalty ``‖w‖²``.
    gamma_I : float, default=10.0
        Weight γ_I of the intrinsic (graph smoothness) penalty.
    graph : KNNGraph or None, default=None
        The document graph. None builds ``KNNGraph()`` on X (with k capped at n − 1).
        An unfitted KNNGraph is fitted on X (a copy; the parameter is not changed);
        a fitted one is reused as is — build it once on all training rows and pass it
        to as many estimators as you like.
    class_prior : None, 'labeled', array-like or dict, default=None
        Class-balance constraint: pin the mean decision value over the unlabeled
        rows to ``2π_c − 1`` for each class c (one-vs-rest targets). None: off;
        'labeled': π from the labeled rows' class proportions; otherwise the
        proportions in the order of ``classes_`` (or a dict class → proportion).
    unlabeled : object, default=-1
        The value of ``y`` that marks an unlabeled row (e.g. ``''`` or None for
        string labels, or any value that is not a class).
    fit_intercept : bool, default=True
        Fit the unpenalised bias b.
    tol : float, default=1e-4
        CG stops when the relative residual of the normal equations is below tol
        (on one PCMAC draw, 1e-4 and 1e-6 gave the same test error at 42 vs 78
        iterations).
    max_iter : int, default=1000
        Maximum CG iterations.
    warm_start : bool, default=False
        Start CG from the previous fit's solution (same shapes).
    verbose : int, default=0
        Print CG progress to stderr (and, when the estimator builds the graph itself,
        the graph's steps).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    n_iter_ : int
        CG iterations of the last fit.
    transduction_ : ndarray of shape (n_samples,)
        Labels of the training rows: the given label for labeled rows, the
        prediction for unlabeled ones.
    graph_ : KNNGraph
        The fitted graph used.
    n_features_in_ : int
    """

    def __init__(self, gamma_A=1e-4, gamma_I=10.0, *, graph=None, class_prior=None,
                 unlabeled=-1, fit_intercept=True, tol=1e-4, max_iter=1000,
                 warm_start=False, verbose=0):
        self.gamma_A = gamma_A
        self.gamma_I = gamma_I
        self.graph = graph
        self.class_prior = class_prior
        self.unlabeled = unlabeled
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.verbose = verbose

    def _solve(self, X, targets, labeled_rows, unlabeled_rows, graph, balance, init):
        return laprls_linear(
            X, targets, labeled_rows, graph.laplacian_matvec,
            gamma_A=self.gamma_A, gamma_I=self.gamma_I, scale=graph.scale_,
            balance=balance, unlabeled_rows=unlabeled_rows,
            fit_intercept=self.fit_intercept, tol=self.tol, max_iter=self.max_iter,
            init=init, callback=self._progress_callback("LapRLS"),
        )


class LapSVMClassifier(_LinearLapClassifier):
    """Linear Laplacian SVM (seed 004 §4.2).

    Fits ``f(x) = w·x + b`` on labeled and unlabeled rows by minimising, per class
    (one-vs-rest, ±1 targets; a single column for binary problems),

        J(w, b) = (1/l) Σ_{i labeled} V(y_i, f(x_i)) + γ_A ‖w‖² + γ_I s fᵀ L^p f

    with the squared hinge ``V = max(0, 1 − y f)²`` (or the hinge, ``solver='tinv'``
    only), ``f`` the decision values of all n training rows, ``L^p`` the Laplacian
    of :class:`~linlap.KNNGraph` raised to its ``power`` and ``s = 1/trace(L)`` —
    the same scaling as :class:`LapRLSClassifier`. The bias is not penalised.

    Parameters
    ----------
    gamma_A : float, default=1e-4
        Weight γ_A of ``‖w‖²``.
    gamma_I : float, default=10.0
        Weight γ_I of the graph smoothness penalty.
    solver : {'newton', 'tinv'}, default='newton'
        'newton': L2-SVM modified finite Newton (Keerthi & DeCoste 2005) with the
        graph term; each step solves a LapRLS-like system on the active labeled
        rows by CG through X (all classes share each product), then an exact line
        search. Scales to millions of documents. 'tinv': T⁻¹ preprocessing — the
        dense d × d Cholesky factor of ``γ_A I + γ_I s XᵀL^pX`` maps the l labeled
        rows to a standard SVM; for small d only (refused over ``memory_budget``),
        and the factor is reused by later fits with the same graph and γ_I/γ_A.
    loss : {'squared_hinge', 'hinge'}, default='squared_hinge'
        'hinge' needs ``solver='tinv'``.
    graph : KNNGraph or None, default=None
        As in :class:`LapRLSClassifier`.
    class_prior : None, 'labeled', array-like or dict, default=None
        Class-balance constraint on the mean decision value over the unlabeled
        rows (``solver='newton'`` only), as in :class:`LapRLSClassifier`.
    unlabeled : object, default=-1
        Marker of unlabeled rows in ``y``.
    fit_intercept : bool, default=True
    tol : float, default=1e-4
        Newton: CG tolerance of the final steps, slack of the optimality check, and
        the relative decrease of J below which a class stops (on 20 Newsgroups 1e-4
        gives the test error of 1e-6 at half the time). T⁻¹: tolerance of the l-row
        SVM solver.
    max_iter : int, default=50
        Newton steps (or the l-row solver's iterations for 'tinv').
    memory_budget : int, default=2**30
        Bytes allowed for the dense d × d factor of ``solver='tinv'``.
    warm_start : bool, default=False
        Start Newton from the previous fit's solution.
    verbose : int, default=0

    Attributes
    ----------
    classes_, coef_, intercept_, transduction_, graph_, n_features_in_
        As in :class:`LapRLSClassifier`.
    n_iter_ : int
        Newton steps (or l-row solver iterations for 'tinv').
    """

    def __init__(self, gamma_A=1e-4, gamma_I=10.0, *, solver="newton", loss="squared_hinge",
                 graph=None, class_prior=None, unlabeled=-1, fit_intercept=True, tol=1e-4,
                 max_iter=50, memory_budget=2**30, warm_start=False, verbose=0):
        self.gamma_A = gamma_A
        self.gamma_I = gamma_I
        self.solver = solver
        self.loss = loss
        self.graph = graph
        self.class_prior = class_prior
        self.unlabeled = unlabeled
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.memory_budget = memory_budget
        self.warm_start = warm_start
        self.verbose = verbose

    def _check_params(self):
        super()._check_params()
        if self.solver not in ("newton", "tinv"):
            raise ValueError(f"solver must be 'newton' or 'tinv', got {self.solver!r}.")
        if self.loss not in ("squared_hinge", "hinge"):
            raise ValueError(f"loss must be 'squared_hinge' or 'hinge', got {self.loss!r}.")
        if self.solver == "newton" and self.loss != "squared_hinge":
            raise ValueError("solver='newton' minimises the squared hinge; use "
                             "solver='tinv' for loss='hinge'.")
        if self.solver == "tinv":
            if self.class_prior is not None:
                raise ValueError("class_prior is available with solver='newton' only.")
            if not self.gamma_A > 0:
                raise ValueError("solver='tinv' needs gamma_A > 0 (T² must be positive "
                                 "definite).")

    def __getstate__(self):
        # the cached d × d factor is a speed-up, not part of the model
        state = super().__getstate__()
        state.pop("_tinv_cache", None)
        return state

    def _solve(self, X, targets, labeled_rows, unlabeled_rows, graph, balance, init):
        if self.solver == "newton":
            return lapsvm_newton(
                X, targets, labeled_rows, graph.laplacian_matvec,
                gamma_A=self.gamma_A, gamma_I=self.gamma_I, scale=graph.scale_,
                balance=balance, unlabeled_rows=unlabeled_rows,
                fit_intercept=self.fit_intercept, tol=self.tol, max_iter=self.max_iter,
                init=init, callback=self._progress_callback(
                    "LapSVM Newton", "relative decrease of J", every=1),
            )
        # The factor depends only on the graph (hence X), γ_I s/γ_A and the intercept:
        # reuse it across classes and across refits that keep those fixed.
        key = (graph, self.gamma_I / self.gamma_A, self.fit_intercept, X.shape)
        cached = getattr(self, "_tinv_cache", None)
        factor = cached[1] if cached is not None and cached[0] == key else None
        sol = lapsvm_tinv(
            X, targets, labeled_rows, graph.laplacian_matvec,
            gamma_A=self.gamma_A, gamma_I=self.gamma_I, scale=graph.scale_, loss=self.loss,
            fit_intercept=self.fit_intercept, memory_budget=self.memory_budget,
            tol=self.tol, max_iter=self.max_iter, factor=factor,
        )
        self._tinv_cache = (key, sol.state["factor"])
        return sol
