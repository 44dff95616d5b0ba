"""The linear classifiers: :class:`LapRLSClassifier` and :class:`LapSVMClassifier`."""

import numpy as np
import scipy.sparse as sp

from .._validation import check_positive_int
from ..solvers.laprls import laprls_linear
from ..solvers.lapsvm_newton import lapsvm_newton
from ..solvers.lapsvm_tinv import lapsvm_tinv
from ._base import LinearLapClassifier, store_params

__all__ = ["LapRLSClassifier", "LapSVMClassifier"]


class LapRLSClassifier(LinearLapClassifier):
    """Linear Laplacian regularised least squares (seed 004 §4.1).

    Fits ``f(x) = w·x + b`` on labeled and unlabeled rows by minimising, per class
    (one-vs-rest, ±1 targets; a single column for binary problems),

        J(w, b) = (1/l) Σ_{i labeled} (y_i − f(x_i))² + γ_A ‖w‖² + γ_I s fᵀ L^p f

    where ``f`` stacks the decision values of all n training rows, ``L^p`` is the
    graph Laplacian of :class:`~linlap.KNNGraph` raised to its ``power`` and
    ``s = 1/trace(L)`` keeps a good ``γ_I`` from drifting with n and k. The bias b is
    not in ``‖w‖²`` (the normalised Laplacian's term still involves it, as ``L^p 1 ≠ 0``).
    The normal equations are solved by conjugate gradients through
    products with X — ``XᵀLX`` is never formed — with all classes in one batched solve.

    Parameters
    ----------
    gamma_A : float or 'scaled', default='scaled'
        Weight γ_A of the ambient (ridge) penalty ``‖w‖²``. 'scaled': ``1e-6 l / C``
        — 1e-6 times the labeled rows per class, those clipped to 25 … 1,000 (2.5e-5 at
        25 or fewer per class, 1e-4 at 100, 5e-4 at 500;
        :func:`linlap.estimators.scaled_gamma_A`): few labels leave the direction of
        w to the graph, many need the ridge against their noise. The fitted value
        is ``gamma_A_``. Measured on rows of norm 1 (TF-IDF's): ``fit`` warns when the
        rows' median norm is outside 0.7 … 2 (rows of norm m act as γ_A / m²), and,
        whatever γ_A, when the rows' norms differ widely (raw counts, TF-IDF with
        ``norm=None``: the graph term then smooths document length as much as class).
    gamma_I : float, 'scaled' or 'auto', default='scaled'
        Weight γ_I of the intrinsic (graph smoothness) penalty. 'scaled':
        ``γ_I = 500 C / l`` for C classes and l labeled rows — 500 over the labeled rows
        per class (20 at 25 per class, 100 at 5 per class, 1 at 500 per class;
        :func:`linlap.estimators.scaled_gamma_I`): because the loss is averaged over the
        labeled rows, a fixed γ_I would let the graph override many labels as strongly as
        a few. 'auto': the 'scaled' value unless the labels say the graph should weigh
        less — chosen from 'scaled' × (0, 0.01, 0.1, 1) by 3-fold cross-validation of
        the labeled rows on the same graph, the largest candidate whose held-out error is
        within two standard errors (of the paired per-row differences) of the smallest
        (:func:`linlap.estimators.cv.select_gamma_I`, which states the exact rule). A
        guard for graphs that do not follow the classes (sentiment, short texts); costs
        about ``3 × 3`` early-stopped solves more than a fit, needs ``gamma_A > 0``, and
        the class-balance constraint is not used by the selection. The fitted value is
        ``gamma_I_``.
    graph : KNNGraph or None, default=None
        The document graph. None builds ``KNNGraph(random_state=0)`` on X with k = 50,
        at most a twentieth of the non-empty rows but at least 5, and below their number
        (on a few hundred documents a 50-NN graph is nearly complete and flattens f).
        An unfitted KNNGraph is fitted on X (a copy; the parameter is not changed);
        a fitted one is reused as is — build it once on all training rows and pass it
        to as many estimators as you like (on X of the same rows, in the same order: the
        fit warns when sampled rows differ). For ``GridSearchCV`` over graph parameters
        (``graph__n_neighbors``) or cross-validation pass an unfitted ``KNNGraph(...)``.
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
        CG stops when the relative residual of the normal equations is below tol and
        the objective's decrease over its last 10 iterations — an estimate of J − J* —
        is below 100·tol·J (the residual alone leaves J several percent above its
        minimum when ``gamma_A`` is small, below ~1e-5). At the 'scaled' defaults J
        comes within ~1e-7.
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
        The fitted graph used (None in a model read by :func:`linlap.load` without
        ``keep_graph``: prediction does not need it).
    gamma_A_ : float
        The γ_A of the fit (``gamma_A`` or its 'scaled' value).
    gamma_I_ : float
        The γ_I of the fit (``gamma_I``, its 'scaled' value, or the one chosen by
        ``gamma_I='auto'``).
    gamma_I_selection_ : GammaISelection or None
        With ``gamma_I='auto'``: the candidates, their held-out errors per labeled
        row, mean errors and thresholds; None otherwise.
    n_features_in_ : int
    """

    _gamma_A_names = ("scaled",)
    _gamma_I_names = ("scaled", "auto")

    def __init__(self, gamma_A="scaled", gamma_I="scaled", *, graph=None, class_prior=None,
                 unlabeled=-1, fit_intercept=True, tol=1e-4, max_iter=1000,
                 warm_start=False, verbose=0):
        store_params(self, locals())

    def _solve(self, X, targets, labeled_rows, unlabeled_rows, graph, balance, init):
        return laprls_linear(
            X, targets, labeled_rows, graph.laplacian_matvec,
            gamma_A=self.gamma_A_, gamma_I=self.gamma_I_, scale=graph.scale_,
            balance=balance, unlabeled_rows=unlabeled_rows,
            fit_intercept=self.fit_intercept, tol=self.tol, max_iter=self.max_iter,
            init=init, callback=self._progress_callback("LapRLS"),
        )

    def _dask_unsupported(self):
        return None

    def _solve_distributed(self, X, targets, labeled_rows, unlabeled_rows, graph, balance,
                           init, client):
        from ..distributed import laprls_fit

        return laprls_fit(
            X, targets, labeled_rows, graph, gamma_A=self.gamma_A_, gamma_I=self.gamma_I_,
            balance=balance, unlabeled_rows=unlabeled_rows, fit_intercept=self.fit_intercept,
            tol=self.tol, max_iter=self.max_iter, init=init,
            callback=self._progress_callback("LapRLS"), client=client)


def _fingerprint(X, graph):
    """A digest of X and of the graph's Laplacian arrays (one pass over them); a graph
    object without them (e.g. EMR's combined operator) stands for itself."""
    import hashlib

    def digest(arrays, extra):
        h = hashlib.blake2b(digest_size=16)
        for a in arrays:
            h.update(memoryview(np.ascontiguousarray(a)).cast("B"))
        h.update(repr(extra).encode())
        return h.hexdigest()

    x = digest([X.data, X.indices, X.indptr] if sp.issparse(X) else [X], X.shape)
    W = getattr(graph, "adjacency_", None)
    if W is None or not hasattr(graph, "degree_"):
        return x, graph
    return x, digest([W.data, W.indices, W.indptr, graph.degree_],
                     (graph.normalized, graph.power, graph.scale_,
                      getattr(graph, "node_order_", None) is not None))


#: fewest liblinear passes of ``LapSVMClassifier(solver='tinv', loss='hinge')``
LIBLINEAR_MIN_PASSES = 1000


class LapSVMClassifier(LinearLapClassifier):
    """Linear Laplacian SVM (seed 004 §4.2).

    Fits ``f(x) = w·x + b`` on labeled and unlabeled rows by minimising, per class
    (one-vs-rest, ±1 targets; a single column for binary problems),

        J(w, b) = (1/l) Σ_{i labeled} V(y_i, f(x_i)) + γ_A ‖w‖² + γ_I s fᵀ L^p f

    with the squared hinge ``V = max(0, 1 − y f)²`` (or the hinge, ``solver='tinv'``
    only), ``f`` the decision values of all n training rows, ``L^p`` the Laplacian
    of :class:`~linlap.KNNGraph` raised to its ``power`` and ``s = 1/trace(L)`` —
    the same scaling as :class:`LapRLSClassifier`. The bias is not in ``‖w‖²`` (the
    normalised Laplacian's term still involves it).

    Parameters
    ----------
    gamma_A : float or 'scaled', default='scaled'
        Weight γ_A of ``‖w‖²``. 'scaled': ``1e-6 l / C`` as in :class:`LapRLSClassifier`.
    gamma_I : float, 'scaled' or 'auto', default='scaled'
        Weight γ_I of the graph smoothness penalty. 'scaled': ``500 C / l`` as in
        :class:`LapRLSClassifier`. 'auto': chosen as in :class:`LapRLSClassifier` (the
        cross-validation fits LapRLS on the folds — squared loss, CG capped at 1000
        iterations — then this estimator is fitted with the chosen γ_I).
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
        Newton: CG tolerance of the final steps (a relative residual), slack of the
        optimality check (in margin units), and the relative decrease of J below
        which a class stops; a stop whose CG residual cannot bound the objective gap
        within 100·tol·J (worst case, small ``gamma_A``) is refused and solved more
        tightly. T⁻¹: tolerance of the l-row SVM solver (the squared hinge's
        optimality slack, in margin units). None of these is the objective gap
        itself: when J is tiny (nearly separable labeled rows) or ``gamma_A`` small
        (below ~1e-5), J can stop a few percent above its minimum at 1e-4; use a
        smaller tol (e.g. 1e-8) there. At the 'scaled' defaults J comes within ~1e-7.
    max_iter : int, default=50
        Newton steps (also for 'tinv' with the squared hinge); for 'tinv' with the
        hinge, liblinear's passes over the l rows, at least ``LIBLINEAR_MIN_PASSES``
        (1000: a pass is one coordinate sweep, and 50 stopped short of the minimum).
    memory_budget : int, default=2**30
        Bytes allowed for the dense d × d factor of ``solver='tinv'``.
    warm_start : bool, default=False
        Start Newton from the previous fit's solution.
    verbose : int, default=0

    Attributes
    ----------
    classes_, coef_, intercept_, transduction_, graph_, gamma_A_, gamma_I_, gamma_I_selection_
        As in :class:`LapRLSClassifier`.
    n_iter_ : int
        Newton steps (or l-row solver iterations for 'tinv').
    """

    _gamma_A_names = ("scaled",)
    _gamma_I_names = ("scaled", "auto")
    _auto_gamma_I_max_iter = 1000

    def __init__(self, gamma_A="scaled", gamma_I="scaled", *, solver="newton", loss="squared_hinge",
                 graph=None, class_prior=None, unlabeled=-1, fit_intercept=True, tol=1e-4,
                 max_iter=50, memory_budget=2**30, warm_start=False, verbose=0):
        store_params(self, locals())

    def _check_params(self):
        super()._check_params()
        if self.solver not in ("newton", "tinv"):
            raise ValueError(f"solver must be 'newton' or 'tinv', got {self.solver!r}.")
        if self.loss not in ("squared_hinge", "hinge"):
            raise ValueError(f"loss must be 'squared_hinge' or 'hinge', got {self.loss!r}.")
        check_positive_int(self, "memory_budget")
        if self.solver == "newton" and self.loss != "squared_hinge":
            raise ValueError("solver='newton' minimises the squared hinge; use "
                             "solver='tinv' for loss='hinge'.")
        if self.solver == "tinv":
            if self.class_prior is not None:
                raise ValueError("class_prior is available with solver='newton' only.")
            if not (isinstance(self.gamma_A, str) or self.gamma_A > 0):
                raise ValueError("solver='tinv' needs gamma_A > 0 (T² must be positive "
                                 "definite).")

    def __getstate__(self):
        # the cached d × d factor is a speed-up, not part of the model
        state = dict(super().__getstate__())  # object.__getstate__ returns __dict__ itself
        state.pop("_tinv_cache", None)
        return state

    def _solve(self, X, targets, labeled_rows, unlabeled_rows, graph, balance, init):
        if self.solver == "newton":
            return lapsvm_newton(
                X, targets, labeled_rows, graph.laplacian_matvec,
                gamma_A=self.gamma_A_, gamma_I=self.gamma_I_, scale=graph.scale_,
                balance=balance, unlabeled_rows=unlabeled_rows,
                fit_intercept=self.fit_intercept, tol=self.tol, max_iter=self.max_iter,
                init=init, callback=self._progress_callback(
                    "LapSVM Newton", "relative decrease of J", every=1),
            )
        # The factor depends only on X, the graph, γ_I s/γ_A and the intercept: reuse it
        # across classes and across refits that keep those fixed (X and the graph by
        # content: either may be refitted or changed in place between fits).
        key = (_fingerprint(X, graph), self.gamma_I_ / self.gamma_A_, self.fit_intercept)
        cached = getattr(self, "_tinv_cache", None)
        factor = cached[1] if cached is not None and cached[0] == key else None
        sol = lapsvm_tinv(
            X, targets, labeled_rows, graph.laplacian_matvec,
            gamma_A=self.gamma_A_, gamma_I=self.gamma_I_, scale=graph.scale_, loss=self.loss,
            fit_intercept=self.fit_intercept, memory_budget=self.memory_budget,
            tol=self.tol, factor=factor,
            max_iter=(self.max_iter if self.loss == "squared_hinge"
                      else max(self.max_iter, LIBLINEAR_MIN_PASSES)),
        )
        self._tinv_cache = (key, sol.state["factor"])
        return sol

    def _dask_unsupported(self):
        if self.solver != "newton":
            return f"solver={self.solver!r} needs X in memory (a dask array: solver='newton')"
        return None

    def _solve_distributed(self, X, targets, labeled_rows, unlabeled_rows, graph, balance,
                           init, client):
        from ..distributed import lapsvm_fit

        return lapsvm_fit(
            X, targets, labeled_rows, graph, gamma_A=self.gamma_A_, gamma_I=self.gamma_I_,
            balance=balance, unlabeled_rows=unlabeled_rows, fit_intercept=self.fit_intercept,
            tol=self.tol, max_iter=self.max_iter, init=init,
            callback=self._progress_callback("LapSVM Newton", "relative decrease of J",
                                             every=1),
            client=client)
