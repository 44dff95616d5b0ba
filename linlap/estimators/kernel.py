"""scikit-learn estimators of the kernel mode (seed 003): thin wrappers over
:mod:`linlap.solvers.kernel_pcg`, :mod:`linlap.solvers.kernel_newton` and
:mod:`linlap.gram`.

For n up to some tens of thousands of rows: the decision function is a kernel
expansion over all n training rows, ``f(x) = Σ_j α_j k(x_j, x) + b``. Past what the
memory budget allows for the n × n Gram matrix, fit refuses and points at the linear
classifiers (:class:`~linlap.LapSVMClassifier`, :class:`~linlap.LapRLSClassifier`),
which scale to millions of documents.
"""

import numbers
import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import (check_extreme_values, check_flags, check_graph_param,
                           check_nonnegative, check_positive_int, check_tol, check_verbose,
                           is_int)
from ..gram import check_kernel_choice, GramOperator, kernel_product
from ..solvers._problem import pm1_targets, predict_index
from ..solvers.kernel_newton import kernel_newton
from ..solvers.kernel_pcg import EARLY_STOPPING, kernel_pcg, kernel_scale
from ._base import (SemiSupervisedMixin, check_finite_scores, check_finite_solution,
                    check_row_norms, row_squared_norms, store_params)
from ..solvers.kernel_dual import dual_workspace_bytes, kernel_lapsvm_dual

__all__ = ["KernelLapSVMClassifier", "KernelLapRLSClassifier"]


def _resolve_gamma(gamma, X):
    d = X.shape[1]
    if gamma == "auto":
        return 1.0 / d
    if gamma == "scale":
        if sp.issparse(X):
            mean = np.asarray(X.mean())
            var = float(X.multiply(X).mean() - mean ** 2)
        else:
            var = float(X.var())
        if not var > 0:
            return 1.0
        gamma = 1.0 / (d * var)
        if not np.isfinite(gamma):
            raise ValueError(f"gamma='scale' is 1 / (n_features x X.var()) = {gamma}: the "
                             f"values of X are too small for float64 (variance {var:.3g}). "
                             f"Normalise the rows of X (sklearn.preprocessing.Normalizer()).")
        return gamma
    return gamma


def check_kernel_row_norms(X, kernel, gamma_A, gamma="scale"):
    """The row-norm warnings of the linear classifiers
    (:func:`~linlap.estimators._base.check_row_norms`), where they mean something here.

    * Linear and polynomial kernels: rows whose norms spread (5th to 95th percentile by
      more than 2×). The decision values grow with a row's norm under these kernels, as
      ``x·w`` does for the linear classifiers, so the graph term smooths document length.
      (The RBF kernel compares distances; it is left alone.)
    * Linear kernel, and the polynomial kernel with a ``gamma`` other than 'scale': the
      rows' median norm m outside ``UNIT_NORM_RANGE`` (0.7 to 2). Linear K scales with
      m², which acts as ``gamma_A / m²`` — the defaults were chosen on rows of norm 1 —
      and rows of large norm make the systems ill-conditioned (rows of norm 1e6 with the
      default gamma_A: a ridge of 1e-16 on unit rows); polynomial K grows up to m^(2
      degree), and PCG may stall on it. (With ``gamma='scale'``, 1 / (d Var(X)), the
      polynomial kernel does not depend on the rows' scale.)

    Unit rows (TF-IDF's default ``norm='l2'``) never warn; empty rows are ignored.
    """
    if kernel not in ("linear", "poly", "polynomial"):
        return
    def median_message(mid):
        if kernel == "linear":
            how = (f"with kernel='linear' K grows with the square of the rows' norm, so "
                   f"gamma_A={gamma_A:g} acts as {gamma_A / mid ** 2:.3g} would on unit rows,")
        else:
            how = (f"with kernel='poly' and gamma={gamma!r} (not 'scale') K grows with the "
                   f"rows' norm up to the power 2 x degree,")
        return (f"The rows of X have norms around {mid:.3g}, and the kernel classifiers' "
                f"defaults were chosen on rows of norm 1 (TF-IDF's): {how} and rows of "
                f"large norm make the solvers' systems ill-conditioned. Normalise the rows "
                f"(sklearn.preprocessing.Normalizer()), or choose gamma_A (and gamma) for "
                f"this scale.")

    scale_free = kernel != "linear" and isinstance(gamma, str) and gamma == "scale"
    check_row_norms(row_squared_norms(X), False, None if scale_free else median_message)


class _KernelLapClassifier(SemiSupervisedMixin, ClassifierMixin, BaseEstimator):
    """Shared fit / predict of the kernel-mode classifiers.

    Label handling (``unlabeled`` marker, class checks) and the graph (build, or reuse
    of a prebuilt :class:`~linlap.KNNGraph`) are those of every linlap classifier
    (:class:`~linlap.estimators._base.SemiSupervisedMixin`).
    """

    _refuses_tiny_X = False  # (PCG and the dense solves scale by K's mean diagonal)

    _solvers = ()
    _loss = None

    # -- validation ------------------------------------------------------------------
    def _check_params(self):
        check_nonnegative(self, "gamma_A", "gamma_I")
        if not self.gamma_A > 0:
            raise ValueError("gamma_A must be > 0 in kernel mode: with gamma_A = 0 the "
                             "coefficients α of the kernel expansion are not determined.")
        check_kernel_choice(self.kernel, self.gamma, self.degree, self.coef0)
        if self.solver not in self._solvers:
            raise ValueError(f"solver must be one of {self._solvers}, got {self.solver!r}.")
        if self.early_stopping not in EARLY_STOPPING:
            raise ValueError(f"early_stopping must be one of {EARLY_STOPPING}, got "
                             f"{self.early_stopping!r}.")
        check_tol(self)
        check_positive_int(self, "max_iter", "memory_budget")
        if self.check_every is not None and (not is_int(self.check_every)
                                             or self.check_every < 1):
            raise ValueError(f"check_every must be None or an integer >= 1, got "
                             f"{self.check_every!r}.")
        if not isinstance(self.stability_tol, numbers.Real) or not 0 < self.stability_tol < 1:
            raise ValueError(f"stability_tol must be in (0, 1), got {self.stability_tol!r}.")
        check_flags(self, "fit_intercept", "warm_start", "recompute_kernel")
        check_verbose(self)
        check_graph_param(self)

    def _check_size(self, n, solver):
        budget = self.memory_budget
        gb = lambda b: f"{b / 2**30:.2f} GiB"  # noqa: E731
        linear = ("use the linear classifiers linlap.LapSVMClassifier / "
                  "linlap.LapRLSClassifier, which scale to millions of rows")
        if solver in ("newton", "direct"):
            need = _dense_solve_bytes(n)
            if need > budget:
                raise ValueError(
                    f"n = {n} rows is too large for solver={solver!r} within memory_budget="
                    f"{gb(budget)}: it needs about {gb(need)} (three dense (n+1)² float64 "
                    f"matrices). Use solver='pcg', raise memory_budget, or {linear}.")
        elif 4 * n * n > budget and not self.recompute_kernel:
            raise ValueError(
                f"n = {n} rows is too large for the kernel mode within memory_budget="
                f"{gb(budget)}: the Gram matrix needs {gb(4 * n * n)} even in float32. "
                f"Raise memory_budget, pass recompute_kernel=True (K recomputed block by "
                f"block at every PCG iteration: bounded memory, O(n² nnz) time per "
                f"iteration), or {linear}.")

    # -- fit ---------------------------------------------------------------------------
    def fit(self, X, y, X_val=None, y_val=None):
        """Fit on labeled and unlabeled rows.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            All training rows, labeled and unlabeled (CSR is used as is).
        y : array-like of shape (n_samples,)
            Labels; rows equal to ``unlabeled`` (default -1) are unlabeled.
        X_val : {array-like, sparse matrix} of shape (n_val, n_features), default=None
            Labeled validation rows for ``early_stopping='validation'`` or ``'mixed'``
            (seed 003 Algorithm 3). They are not training rows: they are not in the
            graph nor in the expansion, only classified at each check. In a Pipeline
            (``pipe.fit(X, y, clf__X_val=..., clf__y_val=...)``) the earlier steps do not
            transform fit parameters: pass X_val as the classifier sees its input, e.g.
            ``pipe[:-1].transform(texts_val)`` after a first fit of those steps.
        y_val : array-like of shape (n_val,), default=None
            Their labels (classes seen among the labeled rows of y).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Besides bad input: ``solver='dual'`` on a problem too ill-conditioned for it
            (its model would be worse than the zero model; the message names the
            remedies).

        Warns
        -----
        UserWarning
            With the linear or polynomial kernel, rows of X that are not normalised
            (:func:`check_kernel_row_norms`).
        scipy.linalg.LinAlgWarning, sklearn.exceptions.ConvergenceWarning
            A dense solve ('direct', 'newton') too inaccurate to keep, finished by PCG
            (see ``solver``); ConvergenceWarning also when a solver stops at its
            iteration limit.
        """
        t0 = time.perf_counter()
        self._check_params()
        X, y, labeled_rows, unlabeled_rows, classes, y_idx = self._check_X_y(X, y)
        check_kernel_row_norms(X, self.kernel, self.gamma_A, self.gamma)
        n = X.shape[0]
        solver = self._resolve_solver(n)
        self._check_size(n, solver)
        val = None
        if self.early_stopping in ("validation", "mixed") and solver == "pcg":
            if X_val is None or y_val is None:
                raise ValueError(f"early_stopping={self.early_stopping!r} needs labeled "
                                 "validation rows: fit(X, y, X_val=..., y_val=...).")
        if X_val is not None or y_val is not None:
            if X_val is None or y_val is None:
                raise ValueError("Pass both X_val and y_val, or neither.")
            X_val = validate_data(self, X_val, accept_sparse="csr", dtype=np.float64,
                                  reset=False)
            y_val = np.asarray(y_val)
            if y_val.shape != (X_val.shape[0],):
                raise ValueError(f"y_val must have shape ({X_val.shape[0]},), got "
                                 f"{y_val.shape}.")
            known = {c: i for i, c in enumerate(classes.tolist())}
            bad = [v for v in y_val.tolist() if v not in known]
            if bad:  # (also values that do not compare with the classes, e.g. None)
                raise ValueError(f"y_val has labels not among the labeled classes of y: "
                                 f"{list(dict.fromkeys(map(repr, bad)))[:10]}.")
            pos = np.array([known[v] for v in y_val.tolist()], dtype=np.intp)
            val = (X_val, pos)

        t1 = time.perf_counter()
        graph = self._fit_graph(X)
        t_graph = time.perf_counter() - t1
        targets = pm1_targets(y_idx, classes.size)

        gamma = _resolve_gamma(self.gamma, X)
        if solver == "dual":
            budget = self.memory_budget
            kbytes = 8 * n * n if 8 * n * n <= budget else (4 * n * n if 4 * n * n <= budget
                                                            else 0)
            need = dual_workspace_bytes(n, labeled_rows.size) + kbytes
            if need > budget:
                raise ValueError(
                    f"solver='dual' with n = {n} rows and l = {labeled_rows.size} labeled "
                    f"rows needs about {need / 2**30:.2f} GiB (the Gram matrix and the CG "
                    f"block of {labeled_rows.size + 1} n-vectors of eq. 11), more than "
                    f"memory_budget={budget / 2**30:.2f} GiB. Use solver='pcg', raise "
                    f"memory_budget, or the linear classifiers.")
        t1 = time.perf_counter()
        gram = GramOperator(X, kernel=self.kernel, gamma=gamma, degree=self.degree,
                            coef0=self.coef0,
                            memory_budget=(self.memory_budget if solver in ("pcg", "dual")
                                           else 2**62))
        t_kernel = time.perf_counter() - t1
        common = dict(gamma_A=self.gamma_A, gamma_I=self.gamma_I, scale=graph.scale_,
                      loss=self._loss, fit_intercept=self.fit_intercept)
        t1 = time.perf_counter()
        if solver == "pcg":
            validation = None
            if val is not None and self.early_stopping in ("validation", "mixed"):
                Xv, yv = val
                validation = (lambda A, b: gram.cross(Xv, A.T) + b, yv)
            init = None
            if self.warm_start and getattr(self, "dual_coef_", None) is not None:
                if self.dual_coef_.shape == (targets.shape[1], n):
                    init = (self.dual_coef_, self.intercept_)
            sol = kernel_pcg(gram.matvec, targets, labeled_rows, graph.laplacian_matvec,
                             n_samples=n, tol=self.tol, max_iter=self.max_iter,
                             early_stopping=self.early_stopping,
                             unlabeled_rows=unlabeled_rows, check_every=self.check_every,
                             stability_tol=self.stability_tol, validation=validation,
                             init=init, callback=self._progress_callback(type(self).__name__,
                                                             "relative gradient"),
                             kernel_scale=kernel_scale(gram.diagonal()), **common)
        elif solver == "dual":
            common.pop("loss")
            sol = kernel_lapsvm_dual(gram.matvec, targets, labeled_rows,
                                     graph.laplacian_matvec, n_samples=n, tol=self.tol,
                                     max_iter=self.max_iter, **common)
        else:
            # a dense solve found inaccurate is finished by PCG, with a warning
            sol = kernel_newton(gram.dense(), targets, labeled_rows, graph.laplacian_matvec,
                                tol=1e-9, max_iter=self.max_iter,
                                fallback_max_iter=self.max_iter, **common)
            if sol.stop_reason not in ("newton", "direct"):
                solver = "pcg"
        t_solve = time.perf_counter() - t1
        check_finite_solution(sol.dual_coef, sol.intercept)

        self.classes_ = classes
        self.dual_coef_ = sol.dual_coef
        self.intercept_ = sol.intercept
        self.n_iter_ = sol.n_iter
        self.stop_reason_ = sol.stop_reason
        self.solver_ = solver
        self.gamma_ = gamma
        self.graph_ = graph
        self.X_fit_ = gram.X
        self.kernel_dtype_ = gram.cache_dtype
        F = sol.decision
        pred = predict_index(F)
        pred[labeled_rows] = y_idx
        self.transduction_ = classes[pred]
        self.fit_time_ = {"graph": t_graph, "kernel": t_kernel, "solve": t_solve,
                          "total": time.perf_counter() - t0}
        self.ls_pieces_ = float(sol.ls_pieces.mean()) if sol.ls_pieces.size else None
        return self

    def _resolve_solver(self, n):
        return self.solver

    # -- predict -------------------------------------------------------------------------
    def decision_function(self, X):
        """Decision values ``K(X, X_fit) α + b``.

        Returns
        -------
        ndarray of shape (n_samples,) for two classes (positive means ``classes_[1]``),
        else (n_samples, n_classes).
        """
        check_is_fitted(self, "dual_coef_")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        check_extreme_values(X)  # as fit does
        if sp.issparse(X) != sp.issparse(self.X_fit_):
            X = sp.csr_matrix(X) if sp.issparse(self.X_fit_) else X.toarray()
        F = kernel_product(X, self.X_fit_, self.dual_coef_.T, kernel=self.kernel,
                           gamma=self.gamma_, degree=self.degree, coef0=self.coef0)
        F = check_finite_scores(F + self.intercept_)
        return F[:, 0] if F.shape[1] == 1 else F

    def predict(self, X):
        """Class labels of X."""
        F = self.decision_function(X)
        return self.classes_[predict_index(F.reshape(F.shape[0], -1))]


def _dense_solve_bytes(n):
    """Memory of the dense solvers ('newton', 'direct'): K, L^p K and the (n+1)² system,
    float64."""
    return 3 * 8 * (n + 1) ** 2


_COMMON_DOC = """
    Parameters
    ----------
    gamma_A : float, default={gamma_A}
        Weight γ_A (> 0) of the ambient (RKHS) norm ``αᵀKα``.
    gamma_I : float, default={gamma_I}
        Weight γ_I of the intrinsic (graph smoothness) penalty. The defaults were
        chosen on real text (bench/RESULTS.md, "Kernel mode").
    kernel : {{'rbf', 'poly', 'polynomial', 'linear'}}, default='rbf'
        As in :func:`sklearn.metrics.pairwise.pairwise_kernels`:
        ``exp(−γ‖x − z‖²)``, ``(γ x·z + coef0)^degree``, ``x·z``.
    gamma : 'scale', 'auto' or float, default='scale'
        Kernel width γ. 'scale': ``1 / (n_features · X.var())`` (as in
        :class:`sklearn.svm.SVC`; ≈ 1 for L2-normalised TF-IDF rows); 'auto':
        ``1 / n_features``.
    degree : int, default=3
        Degree of the polynomial kernel.
    coef0 : float, default=1.0
        Constant of the polynomial kernel (scikit-learn's pairwise default).
    solver : {solvers}, default={solver!r}
        {solver_doc}
    early_stopping : {{'stability', 'validation', 'mixed', None}}, default={es!r}
        Goal condition of the PCG solver (seed 003 §4.1; ignored by the others):
        'stability' (Algorithm 2) stops when, between two checks θ iterations apart,
        fewer than ``stability_tol`` of the unlabeled rows changed predicted label;
        'validation' (Algorithm 3) stops when the error on the validation rows passed
        to fit did not fall by at least one row since the previous check; 'mixed'
        stops when both would; None runs to ``tol``. See
        :func:`linlap.solvers.kernel_pcg.kernel_pcg`.
    check_every : int or None, default=None
        θ, iterations between checks; None means round(√n / 2) as in seed 003.
    stability_tol : float, default=0.015
        η of the stability check (fraction of unlabeled rows).
    graph : KNNGraph or None, default=None
        As in :class:`~linlap.LapRLSClassifier`: None builds the default graph on X
        (k = 50, fewer on small corpora); a fitted graph (built on the same rows) is
        reused as is.
    unlabeled : object, default=-1
        The value of ``y`` that marks an unlabeled row.
    fit_intercept : bool, default=True
    tol : float, default=1e-6
        PCG: relative preconditioned gradient norm ``√(∇ᵀP⁻¹∇ / ∇₀ᵀP⁻¹∇₀)`` at which a
        class stops in any mode.
    max_iter : int, default={max_iter}
        PCG iterations (or Newton steps; also the PCG iterations allowed when PCG
        finishes an inaccurate dense solve).
    memory_budget : int, default=2**31
        Bytes for the n × n Gram matrix: cached in float64 when ``8n²`` fits, else in
        float32 when ``4n²`` fits (products accumulate in float64) — 2 GiB holds
        n = 16,384 in float64 and n = 23,170 in float32. Beyond that fit refuses
        (unless ``recompute_kernel=True``) and names the linear classifiers. The dense
        solvers need about ``24 (n+1)²`` bytes and refuse past the budget.
    recompute_kernel : bool, default=False
        When K does not fit the budget, recompute it block by block at every PCG
        product instead of refusing (bounded memory, O(n² · nnz per row) per
        iteration).
    warm_start : bool, default=False
        PCG starts from the previous fit's α, b (same n and classes).
    verbose : int, default=0
        Print PCG progress to stderr.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    dual_coef_ : ndarray of shape (1, n_samples) or (n_classes, n_samples)
        α of the expansion over the training rows (one row per one-vs-rest column).
    intercept_ : ndarray of shape (1,) or (n_classes,)
    n_iter_ : int
        PCG iterations (or Newton steps; for 'dual' the CG iterations of eq. 11's
        system) of the last fit.
    stop_reason_ : str
        'tol' (PCG met tol, or found no descent left at machine precision),
        'stability', 'validation', 'mixed', 'max_iter', 'stalled' (PCG could not bring
        its gradient, recomputed from α and b, below tol in float64: a
        ConvergenceWarning says so), 'newton', 'direct' or 'dual'.
    solver_ : str
        The solver used: 'pcg' also when a dense solve ('direct', 'newton') was found
        inaccurate and PCG finished the fit (with a warning; see ``solver``).
    transduction_ : ndarray of shape (n_samples,)
        The given label for labeled rows, the prediction for unlabeled ones.
    graph_ : KNNGraph
    X_fit_ : ndarray or CSR matrix
        The training rows (needed by predict).
    gamma_ : float
        The kernel width used.
    kernel_dtype_ : numpy dtype or None
        dtype of the cached K during fit (None: recomputed).
    fit_time_ : dict
        Seconds: 'graph', 'kernel' (computing K), 'solve', 'total'.
    ls_pieces_ : float or None
        Mean line-search pieces per PCG iteration (seed 003's LS iterations).
    n_features_in_ : int
"""


class KernelLapSVMClassifier(_KernelLapClassifier):
    __doc__ = """Kernel Laplacian SVM trained in the primal (seed 003, Melacci & Belkin).

    Fits ``f(x) = Σ_j α_j k(x_j, x) + b`` over all n training rows (labeled and
    unlabeled) by minimising, per class (one-vs-rest, ±1 targets; one column for two
    classes),

        J(α, b) = (1/l) Σ_{i labeled} max(0, 1 − y_i f_i)² + γ_A αᵀKα + γ_I s fᵀ L^p f,

    ``f = Kα + b`` on the training rows, ``L^p`` the Laplacian power of the
    :class:`~linlap.KNNGraph`, ``s = 1/trace(L)`` (``graph.scale_``) — the scaling of
    the linear classifiers; the bias is not in ``αᵀKα`` (the normalised Laplacian's term
    still involves it). Seed 003's eq. 7 is
    ``½(Σ V + γ_A'αᵀKα + γ_I'fᵀLf)``: ``γ_A = γ_A'/l``, ``γ_I = γ_I' trace(L)/l``.
    With ``solver='dual'`` the loss is the hinge ``max(0, 1 − y_i f_i)`` instead
    (seed 001's LapSVM, eqs. 9–11, whose ``γ_I/(u+l)²`` is ``γ_I s`` here).
""" + _COMMON_DOC.format(
        gamma_A=1e-4, gamma_I=100.0, solvers="{'pcg', 'newton', 'dual'}", solver="pcg",
        solver_doc="'pcg': Algorithm 1 — preconditioned CG with P = blockdiag(1, K/σ), "
                   "σ the mean of diag(K), "
                   "Polak–Ribière with restart, exact breakpoint line search, one K product "
                   "per iteration, all classes together. 'newton': §3.1, dense (n+1)² "
                   "solves (O(n³)), the exact reference for moderate n; each Newton point "
                   "is checked (its relative gradient, PCG's residual, at most 1e-6) and "
                   "when the system is too ill-conditioned for that (rows of large norm "
                   "under the linear or polynomial kernel, a tiny gamma_A, a high "
                   "Laplacian power) PCG finishes the fit without early stopping, with a "
                   "LinAlgWarning (a ConvergenceWarning if PCG does not converge either), "
                   "and ``solver_`` is 'pcg'; see "
                   ":func:`linlap.solvers.kernel_newton.kernel_newton`. 'dual': the original "
                   "hinge-loss LapSVM of seed 001 (eqs. 9–11) — note the loss is then "
                   "max(0, 1 − y f), not squared — by CG on eq. 11's system (one K "
                   "product per iteration) and the l-variable QP (libsvm); see "
                   ":func:`linlap.solvers.kernel_dual.kernel_lapsvm_dual`. ``tol`` and "
                   "``max_iter`` are then those of the CG. Its duality gap is checked: "
                   "above 1e-3 (the zero model's J being 1) fit warns "
                   "(ConvergenceWarning, with the gap), and when the model is worse than "
                   "the zero model (J > 1 + 1e-3: a problem too ill-conditioned for the "
                   "dual) it raises a ValueError that names the remedies — no other "
                   "solver minimises the hinge loss.",
        es="stability", max_iter=1000)

    _solvers = ("pcg", "newton", "dual")
    _loss = "squared_hinge"

    def __init__(self, gamma_A=1e-4, gamma_I=100.0, *, kernel="rbf", gamma="scale", degree=3,
                 coef0=1.0, solver="pcg", early_stopping="stability", check_every=None,
                 stability_tol=0.015, graph=None, unlabeled=-1, fit_intercept=True, tol=1e-6,
                 max_iter=1000, memory_budget=2**31, recompute_kernel=False, warm_start=False,
                 verbose=0):
        store_params(self, locals())


class KernelLapRLSClassifier(_KernelLapClassifier):
    __doc__ = """Kernel Laplacian RLS (seed 001 eq. 8; seed 003 §5).

    Fits ``f(x) = Σ_j α_j k(x_j, x) + b`` over all n training rows by minimising, per
    class (one-vs-rest, ±1 targets),

        J(α, b) = (1/l) Σ_{i labeled} (y_i − f_i)² + γ_A αᵀKα + γ_I s fᵀ L^p f,

    with the scaling of :class:`KernelLapSVMClassifier`. Seed 001 eq. 8 has
    ``γ_I/(u+l)²`` in place of ``γ_I s``.
""" + _COMMON_DOC.format(
        gamma_A=1e-4, gamma_I=100.0, solvers="{'auto', 'direct', 'pcg'}", solver="auto",
        solver_doc="'direct': the closed form — one dense (n+1)² LU solve (O(n³)) "
                   "with one right-hand side per class, checked: when its relative gradient "
                   "(PCG's residual) is above 1e-6 — the system too ill-conditioned for "
                   "float64: rows of large norm under the linear or polynomial kernel, a "
                   "tiny gamma_A, a high Laplacian power — PCG finishes the fit from it "
                   "without early stopping, with a LinAlgWarning (a ConvergenceWarning if "
                   "PCG does not converge either), and ``solver_`` is 'pcg'. 'pcg': "
                   "Algorithm 1 with the squared loss (line search in closed form). "
                   "'auto': 'direct' for n <= 2000 when its three dense (n+1)² matrices "
                   "fit memory_budget, else 'pcg'.",
        es="stability", max_iter=1000)

    _solvers = ("auto", "direct", "pcg")
    _loss = "squared"
    #: largest n for which solver='auto' uses the closed form
    DIRECT_MAX_SAMPLES = 2000

    def __init__(self, gamma_A=1e-4, gamma_I=100.0, *, kernel="rbf", gamma="scale", degree=3,
                 coef0=1.0, solver="auto", early_stopping="stability", check_every=None,
                 stability_tol=0.015, graph=None, unlabeled=-1, fit_intercept=True, tol=1e-6,
                 max_iter=1000, memory_budget=2**31, recompute_kernel=False, warm_start=False,
                 verbose=0):
        store_params(self, locals())

    def _resolve_solver(self, n):
        if self.solver == "auto":  # the closed form when small enough and within the budget
            direct = (n <= self.DIRECT_MAX_SAMPLES
                      and _dense_solve_bytes(n) <= self.memory_budget)
            return "direct" if direct else "pcg"
        return self.solver
