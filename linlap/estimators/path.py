"""The hinge-loss linear LapSVM along its exact solution path (seed 000):
:func:`lapsvm_path` and :class:`LapSVMPathClassifier`.

For a fixed ``ρ = γ_A/γ_I`` the path gives every breakpoint of α(λ)
(:mod:`linlap.solvers.path`); the classifier picks ``γ_I`` (hence λ) on it by the error
on validation rows or by k-fold cross-validation over the labeled rows, all folds sharing
one l × l matrix.
"""

import sys
import time
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_array, check_consistent_length, column_or_1d
from sklearn.utils.validation import check_is_fitted

from .._memory import check_memory, solve_bytes
from .._validation import (check_extreme_values, check_flags, check_graph_param, check_int,
                           check_positive_int, check_real, check_tol, check_verbose)
from ..solvers._problem import pm1_targets, predict_index
from ..solvers.path import path_for_targets, path_reduction
from ._base import (LinearLapClassifier, check_labeled_nonempty, check_labels,
                    nonempty_rows, store_params)
from .cv import _check_cv, _folds, _validation_set, accuracy_and_hinge

__all__ = ["LapSVMPathClassifier", "lapsvm_path"]

#: Largest ``n_gammas`` (a grid point costs one interpolation per path: a million is
#: far beyond any use, and keeps the grid arrays small).
MAX_N_GAMMAS = 10**6


def check_path_params(p):
    """The parameters :func:`lapsvm_path` and :class:`LapSVMPathClassifier` share, read
    from the attributes of ``p`` (the estimator, or the function's keywords): ValueError
    naming the first bad one."""
    check_real("rho", p.rho, 0, low_open=True)
    if not (isinstance(p.method, str) and p.method in ("auto", "gram", "cg")):
        raise ValueError(f"method must be 'auto', 'gram' or 'cg', got {p.method!r}.")
    check_real("lambda_min_ratio", p.lambda_min_ratio, 0, 1, low_open=True, high_open=True)
    check_tol(p)
    check_positive_int(p, "max_iter", "memory_budget")
    check_flags(p, "fit_intercept")


def lapsvm_path(X, y, graph, *, rho, unlabeled=-1, kernel=None, fit_intercept=True,
                method="auto", lambda_min=None, lambda_min_ratio=1e-6, max_steps=None,
                tol=1e-10, max_iter=5000, memory_budget=2**30):
    """The whole hinge-loss LapSVM solution path in λ for ``ρ = γ_A/γ_I`` (seed 000).

    Each λ > 0 on the path is the exact minimiser of

        J(w, b) = (1/l) Σ_{i labeled} max(0, 1 − y_i f_i) + γ_A ‖w‖² + γ_I s fᵀL^p f,
        f = X w + b,    γ_I = λ / (2 l),    γ_A = ρ λ / (2 l),

    ``s = graph.scale_``, the bias outside ``‖w‖²`` — i.e. ``LapSVMClassifier(solver='tinv',
    loss='hinge', gamma_A=ρλ/(2l), gamma_I=λ/(2l), graph=graph)``. The labeled part
    reduces to an l-variable dual (seed 000 eq. 11) with
    ``Q = Y X_l (ρI + s XᵀL^pX)^{-1} X_lᵀ Y`` (plus the bias column when ``L^p1 ≠ 0``);
    α(λ) is piecewise linear and followed from λ = ∞ through its events (Theorem 1,
    initialised by Lemma 1 or 2). See :mod:`linlap.solvers.path` for the derivation.

    Parameters
    ----------
    X : sparse matrix (CSR) or ndarray (n, d), or the n × n Gram matrix K with
        ``kernel='precomputed'`` (then ``f = Kβ + b`` and ``‖w‖²`` is ``βᵀKβ``)
    y : array-like (n,)
        Two classes among the labeled rows; ``unlabeled`` marks the other rows.
        The larger class (in sorted order) is +1.
    graph : fitted KNNGraph (or any object with ``laplacian_matvec`` and ``scale_``)
    rho : float
        ``γ_A/γ_I > 0``.
    unlabeled : object, default=-1
    kernel : None or 'precomputed'
    fit_intercept : bool, default=True
    method : {'auto', 'gram', 'cg'}, default='auto'
        How ``A^{-1}X_lᵀ`` is computed in the linear mode: 'gram' directly — by the
        Cholesky of the d × d ``A`` when d ≤ n, else by an n × n LU (push-through) —
        fast for n or d up to a few thousand; 'cg' by one batched CG with l + 1 columns
        (large n and d); 'auto' picks 'gram' when its dense arrays fit ``memory_budget``.
    lambda_min : float, optional
        End of the path, a finite number > 0 (default ``lambda_min_ratio · λ⁰``). At or
        above λ⁰ the path is its single point at ``lambda_min`` and is not complete:
        ``coef_at`` below it raises.
    lambda_min_ratio : float, default=1e-6
        The path ends at this fraction (in (0, 1)) of its first breakpoint λ⁰ when
        ``lambda_min`` is None. Deeper than :class:`LapSVMPathClassifier`'s 1e-4, which scores a grid
        of γ_I on the path: the function returns the path itself, for inspection.
    max_steps : int >= 1, optional
        Cap on breakpoints (``50 l + 100``).
    tol, max_iter : CG settings (method 'cg'): ``0 < tol < 1``, ``max_iter >= 1``.
    memory_budget : int, default=2**30

    The parameters are checked as :class:`LapSVMPathClassifier` checks its own
    (:func:`check_path_params`), before any work.

    Returns
    -------
    LapSVMPath
    """
    check_path_params(SimpleNamespace(
        rho=rho, method=method, lambda_min_ratio=lambda_min_ratio, tol=tol,
        max_iter=max_iter, memory_budget=memory_budget, fit_intercept=fit_intercept))
    if lambda_min is not None:
        check_real("lambda_min", lambda_min, 0, low_open=True)
    if max_steps is not None:
        check_int("max_steps", max_steps, 1)
    if kernel not in (None, "precomputed"):
        raise ValueError(f"kernel must be None or 'precomputed', got {kernel!r}.")
    X = check_array(X, accept_sparse="csr", dtype=np.float64, ensure_min_samples=2)
    check_extreme_values(X, refuse_tiny=kernel is None)
    y = column_or_1d(y)
    check_consistent_length(X, y)
    if not (hasattr(graph, "laplacian_matvec") and hasattr(graph, "scale_")):
        raise ValueError("graph must be a fitted KNNGraph (with laplacian_matvec and scale_); "
                         "fit it on X first.")
    n_fit = getattr(graph, "n_samples_fit_", X.shape[0])
    if n_fit != X.shape[0]:
        raise ValueError(f"The graph was built on {n_fit} rows but X has {X.shape[0]}.")
    lab, _, classes, y_idx = check_labels(y, unlabeled)
    if classes.size != 2:
        raise ValueError(f"lapsvm_path is binary: the labeled rows must hold exactly 2 "
                         f"classes, found {classes.size}.")
    if kernel is None:  # (a row of a precomputed K is no document)
        check_labeled_nonempty(nonempty_rows(X), lab)
    targets = np.where(y_idx == 1, 1.0, -1.0)
    red = path_reduction(X, lab, graph.laplacian_matvec, graph.scale_, rho=rho,
                         fit_intercept=fit_intercept, kernel=kernel, method=method, tol=tol,
                         max_iter=max_iter, memory_budget=memory_budget)
    return path_for_targets(red, targets, lambda_min=lambda_min,
                            lambda_min_ratio=lambda_min_ratio, max_steps=max_steps,
                            classes=classes)



class LapSVMPathClassifier(LinearLapClassifier):
    """Hinge-loss linear LapSVM with γ chosen along the exact solution path.

    For the fixed ratio ``ρ = γ_A/γ_I`` every point λ of the path minimises

        J(w, b) = (1/l) Σ_{i labeled} max(0, 1 − y_i f(x_i)) + γ_A ‖w‖² + γ_I s fᵀL^p f,
        γ_I = λ / (2 l),   γ_A = ρ λ / (2 l),

    exactly as ``LapSVMClassifier(solver='tinv', loss='hinge', gamma_A=γ_A, gamma_I=γ_I)``
    (see :mod:`linlap.solvers.path`). ``fit`` computes the whole path (one l × l matrix
    ``X_l (ρI + s XᵀL^pX)^{-1} X_lᵀ`` shared by all classes and folds, then the events),
    scores a log grid of ``n_gammas`` values of γ_I spanning the path — by the error on
    ``validation`` rows, or by stratified ``cv``-fold cross-validation over the labeled
    rows (each fold's path is followed on its training rows; γ_I, not λ, is carried
    across the folds since λ scales with l) — and keeps the γ_I of least error (ties:
    least mean hinge loss, then the larger γ_I). The model at that point is refitted
    from the path on all labeled rows.

    Parameters
    ----------
    rho : float, default=1e-5
        ``γ_A/γ_I`` (the 'scaled' defaults of :class:`LapSVMClassifier` give
        1.25·10⁻⁶ at 25 labels per class, 2.5·10⁻⁷ at 5 per class).
    graph : KNNGraph or None, default=None
        As in :class:`LapRLSClassifier`: built once on X when None; a fitted graph is reused.
    cv : int, default=5
        Folds when no validation data is passed to fit (capped by the smallest class).
    n_gammas : int, default=60
        Size of the log grid of γ_I scored.
    method : {'auto', 'gram', 'cg'}, default='auto'
        How ``A^{-1}X_lᵀ`` is computed (see :func:`linlap.lapsvm_path`).
    lambda_min_ratio : float, default=1e-4
        The path ends at this fraction of its first breakpoint.
    unlabeled : object, default=-1
    fit_intercept : bool, default=True
    tol : float, default=1e-10
        CG tolerance (method 'cg').
    max_iter : int, default=5000
        CG iterations (method 'cg').
    memory_budget : int, default=2**30
        Bytes for the dense arrays of method 'gram' (X, L^pX and two d × d arrays when
        d ≤ n, else three n × n arrays).
    verbose : int, default=0

    Attributes
    ----------
    classes_, coef_, intercept_, transduction_, graph_, n_features_in_
        As in :class:`LapRLSClassifier`.
    best_gamma_I_, best_gamma_A_, best_lambda_ : float
        The chosen point (``best_lambda_ = 2 l best_gamma_I_``).
    best_score_ : float
        Validation (or mean cross-validated) accuracy there.
    path_ : dict
        ``'paths'``: the :class:`~linlap.solvers.path.LapSVMPath` of each target column on
        all labeled rows (None in a model saved by :func:`linlap.save` without
        ``keep_graph``: each holds a d × l array); ``'lambdas'``: breakpoints of the first one; ``'gamma_I'``,
        ``'lambda'``: the scored grid; ``'error'``, ``'hinge'``: validation (or mean CV)
        error and mean hinge loss along it; ``'best_index'``.
    n_iter_ : int
        Breakpoints of the path(s) on all labeled rows.
    """

    def __init__(self, rho=1e-5, *, graph=None, cv=5, n_gammas=60, method="auto",
                 lambda_min_ratio=1e-4, unlabeled=-1, fit_intercept=True, tol=1e-10,
                 max_iter=5000, memory_budget=2**30, verbose=0):
        store_params(self, locals())

    def _check_params(self):
        check_path_params(self)
        _check_cv(self.cv)
        check_int("n_gammas", self.n_gammas, 2, MAX_N_GAMMAS)
        check_verbose(self)
        check_graph_param(self)

    def fit(self, X, y, validation=None):
        """Compute the path and pick γ_I.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            All training rows (labeled, unlabeled and validation rows).
        y : array-like of shape (n_samples,)
            Labels; ``unlabeled`` marks unlabeled rows.
        validation : array-like of shape (n_samples,) or (X_val, y_val), optional
            Labels of validation rows of X that are unlabeled in y (the marker
            elsewhere), or out-of-sample validation rows (a tuple or a list of the
            two; X_val is used as given — in a Pipeline it does not pass through the
            earlier steps, so transform it first, or pass validation labels for rows of
            X). None: ``cv``-fold cross-validation over the labeled rows.

        Returns
        -------
        self
        """
        self._check_params()
        X, y, labeled_rows, unlabeled_rows, classes, y_idx = self._check_X_y(X, y)
        graph = self._fit_graph(X)
        T = pm1_targets(y_idx, classes.size)
        n, d = X.shape
        l = labeled_rows.size
        # the reduction solves for l + 1 right-hand sides at once: its memory grows with l
        check_memory(solve_bytes(n, d, X.nnz if sp.issparse(X) else n * d, l + 1),
                     f"LapSVMPathClassifier: the path reduction on {n} rows x {d} features "
                     f"with {l} labeled rows",
                     hint="Its cost grows with the labeled rows; LapSVMClassifierCV scales "
                          "with the classes instead.")
        t0 = time.perf_counter()
        if self.verbose:
            print(f"[LapSVMPathClassifier] reducing the path to the {l} labeled rows "
                  f"({l + 1} solves on A = rho I + s X'L^pX)", file=sys.stderr, flush=True)
        red = path_reduction(X, labeled_rows, graph.laplacian_matvec, graph.scale_,
                             rho=self.rho, fit_intercept=self.fit_intercept,
                             method=self.method, tol=self.tol, max_iter=self.max_iter,
                             memory_budget=self.memory_budget)
        if self.verbose:
            print(f"[LapSVMPathClassifier] reduction ({red.method}) done in "
                  f"{time.perf_counter() - t0:.1f} s; following the paths",
                  file=sys.stderr, flush=True)

        def paths_on(pos):
            return [path_for_targets(red, T[pos, c], positions=pos,
                                     lambda_min_ratio=self.lambda_min_ratio)
                    for c in range(T.shape[1])]

        full = paths_on(np.arange(l))
        # the γ_I grid spans the full path: from its first breakpoint to its end
        top = max(p.lambdas[0] for p in full) / (2 * l)
        bottom = max(p.lambdas[-1] for p in full) / (2 * l)
        grid = np.geomspace(2 * top, bottom * (1 + 1e-9), self.n_gammas)

        if validation is not None:
            rows, Xv, yv = _validation_set(self, validation, X, y, labeled_rows, classes)
            XvV = np.asarray(Xv @ red.V)
            Xvu = np.asarray(Xv @ red.u).ravel()
            F = np.empty((grid.size, yv.size, T.shape[1]))
            for c, p in enumerate(full):
                for j, g in enumerate(grid):
                    lam = 2 * l * g
                    alpha, alpha0 = p.dual_at(lam)
                    b = p._bias(alpha, alpha0, lam)
                    F[j, :, c] = XvV @ (p.y * alpha) / lam + b * (1.0 - Xvu)
            err, hinge = self._scores(F, yv, classes.size)
        else:
            folds = _folds(self.cv, y_idx)
            err = np.zeros(grid.size)
            hinge = np.zeros(grid.size)
            for train, test in folds:
                sub = paths_on(train)
                ltr = train.size
                F = np.empty((grid.size, test.size, T.shape[1]))
                for c, p in enumerate(sub):
                    lams = 2 * ltr * grid
                    ok = lams >= p.lambdas[-1] * (1 - 1e-12) if not p.complete else \
                        np.ones(grid.size, bool)
                    F[:, :, c] = 0.0
                    if ok.any():
                        F[ok, :, c] = p.decision_labeled(lams[ok], positions=test)
                    # below the fold path's end: keep its last point
                    if (~ok).any():
                        F[~ok, :, c] = p.decision_labeled([p.lambdas[-1]], positions=test)
                e, h = self._scores(F, y_idx[test], classes.size)
                err += e * test.size / l
                hinge += h * test.size / l
        # least error, then least hinge loss, then the larger γ_I (grid is decreasing)
        order = np.lexsort((np.arange(grid.size), np.round(hinge, 12), np.round(err, 12)))
        best = int(order[0])
        g = grid[best]
        lam = 2 * l * g
        coef, intercept = [], []
        for p in full:
            w, b = p.coef_at(max(lam, p.lambdas[-1]) if not p.complete else lam)
            coef.append(w)
            intercept.append(b)
        self.classes_ = classes
        self.coef_ = np.array(coef)
        self.intercept_ = np.array(intercept)
        if not (np.all(np.isfinite(self.coef_)) and np.all(np.isfinite(self.intercept_))):
            raise ValueError("The path produced non-finite coefficients; check X.")
        self.best_gamma_I_ = float(g)
        self.best_gamma_A_ = float(self.rho * g)
        self.best_lambda_ = float(lam)
        self.best_score_ = float(1.0 - err[best])
        self.path_ = {"paths": full, "lambdas": full[0].lambdas, "gamma_I": grid,
                      "lambda": 2 * l * grid, "error": err, "hinge": hinge,
                      "best_index": best, "validation": "holdout" if validation is not None
                      else f"{len(folds)}-fold", "time": time.perf_counter() - t0}
        self.n_iter_ = int(sum(p.lambdas.size for p in full))
        self.graph_ = graph
        pred = predict_index(np.asarray(X @ self.coef_.T) + self.intercept_)
        pred[labeled_rows] = y_idx
        self.transduction_ = classes[pred]
        return self

    @staticmethod
    def _scores(F, y_idx, n_classes):
        """Error rate and mean hinge loss per grid point (F: grid × rows × columns)."""
        acc, hinge = accuracy_and_hinge(F, y_idx, n_classes)
        return 1.0 - acc, hinge

    def plot_path(self, path, *, kind="error", title=None):
        """Draw validation error (``kind='error'``) or the labeled rows' decision values
        (``kind='decision'``) against log λ; writes a PNG (needs matplotlib)."""
        check_is_fitted(self, "path_")
        from ..plots import plot_path
        return plot_path(self, path, kind=kind, title=title)
