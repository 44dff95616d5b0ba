"""Grid searches in scikit-learn's ``*CV`` style over one shared graph:
:class:`LapRLSClassifierCV` and :class:`LapSVMClassifierCV`.

γ_A × γ_I (× Laplacian power, × class prior) grids over one shared graph (built once; a
power is a :meth:`KNNGraph.with_laplacian` view, L^p never formed). By default every
γ_A of a γ_I comes from one shifted CG run, each candidate stopping once its scoring
rows' labels are stable; ``method='warm'`` fits candidate by candidate, each
warm-started from its neighbour on the grid.

Every model here minimises the project objective

    J(w, b) = (1/l) Σ_{i labeled} V(y_i, f(x_i)) + γ_A ‖w‖² + γ_I s fᵀL^p f,  s = graph.scale_,

bias outside ‖w‖², one-vs-rest for more than two classes.

Validation data. ``fit(X, y, validation=None)``: ``validation`` is either an array of
length n_samples holding labels for some rows of X that are *unlabeled* in ``y`` (the
``unlabeled`` marker elsewhere) — they stay in the graph as unlabeled rows and only score
the models — or a pair ``(X_val, y_val)`` of out-of-sample rows. Without it, the labeled
rows are split into stratified folds (``cv``); a fold's held-out rows are unlabeled
while the others train, and score the fit.
"""

import itertools
import numbers
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.validation import check_is_fitted, validate_data

from .._labels import marker_mask
from .._memory import check_memory, grid_bytes, solve_bytes
from .._progress import progress
from .._validation import (check_flags, check_graph_param, check_positive_int, check_real,
                           check_tol, check_verbose, is_int)
from ..graph import KNNGraph
from ..graph.params import check_power
from ..solvers._problem import pm1_targets, predict_index
from ..solvers.grid import laprls_grid, lapsvm_grid
from ..solvers.laprls import laprls_linear
from ._base import (SemiSupervisedMixin, capped_n_neighbors, check_predict_X, default_graph,
                    resolve_graph, store_params)
from .linear import LapRLSClassifier, LapSVMClassifier

__all__ = ["LapRLSClassifierCV", "LapSVMClassifierCV", "select_gamma_I",
           "AUTO_GAMMA_I_FACTORS"]


def _validation_set(est, validation, X, y, labeled_rows, classes):
    """(rows of X or None, X_val, index of y_val in classes) from the ``validation`` arg."""
    # a pair given as a list too, when its first item is a matrix (not a row's label)
    pair = isinstance(validation, list) and len(validation) == 2 and (
        sp.issparse(validation[0]) or np.ndim(validation[0]) == 2)
    if isinstance(validation, tuple) or pair:
        if len(validation) != 2:
            raise ValueError("validation must be labels for rows of X or a pair (X_val, y_val).")
        Xv = validate_data(est, validation[0], accept_sparse="csr", dtype=np.float64,
                           reset=False)
        yv = np.asarray(validation[1])
        if yv.shape != (Xv.shape[0],):
            raise ValueError(f"y_val must have shape ({Xv.shape[0]},), got {yv.shape}.")
        rows = None
    else:
        yfull = np.asarray(validation)
        if yfull.shape != (X.shape[0],):
            raise ValueError(f"validation labels must have shape ({X.shape[0]},) (one per row "
                             f"of X, the unlabeled marker elsewhere), got {yfull.shape}.")
        rows = np.flatnonzero(~marker_mask(yfull, est.unlabeled))
        both = np.intersect1d(rows, labeled_rows).size
        if both:
            raise ValueError(
                f"validation rows must be unlabeled in y (they score the models; labeled "
                f"rows train them), but {both} of the {rows.size} rows validation labels "
                f"are labeled in y. Its other rows must hold the estimator's unlabeled "
                f"marker, unlabeled={est.unlabeled!r}: any other value counts as a label.")
        Xv, yv = X[rows], yfull[rows]
    if yv.size == 0:
        raise ValueError("validation holds no labeled row.")
    unknown = ~np.isin(yv, classes)
    if unknown.any():
        raise ValueError(f"validation labels {np.unique(yv[unknown])[:5].tolist()} are not "
                         f"classes of the labeled rows {classes.tolist()}.")
    return rows, Xv, np.searchsorted(classes, yv)


def accuracy_and_hinge(F, y_idx, n_classes):
    """Accuracy and mean hinge loss ``Σ_classes max(0, 1 − y f)`` of decision values F
    (shape (..., rows, columns)) against the class indices ``y_idx`` of the rows."""
    acc = (predict_index(F) == y_idx).mean(axis=-1)
    hinge = np.maximum(0.0, 1.0 - pm1_targets(y_idx, n_classes) * F).sum(axis=-1).mean(axis=-1)
    return acc, hinge


def _folds(cv, y_idx, random_state=0):
    counts = np.bincount(y_idx)
    k = min(int(cv), int(counts.min()))
    if k < 2:
        raise ValueError(f"cross-validation needs at least 2 labeled rows of every class "
                         f"(smallest class has {counts.min()}); pass validation= instead.")
    if k < cv:
        warnings.warn(f"The least populated class has only {counts.min()} labeled rows, "
                      f"fewer than cv={cv}: using {k} folds.", UserWarning, stacklevel=3)
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=random_state)
    return list(skf.split(np.zeros(y_idx.size), y_idx))


def _dtype_with(y, value):
    """The dtype of y promoted to hold ``value`` as well (object when nothing else does)."""
    try:
        return np.result_type(y, np.array([value]))
    except TypeError:
        return np.dtype(object)


def _check_cv(cv):
    if not isinstance(cv, numbers.Integral) or isinstance(cv, bool) or cv < 2:
        raise ValueError(f"cv must be an integer >= 2, got {cv!r}.")


def _object_array(values):
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out



#: the candidates of ``gamma_I='auto'`` (:func:`select_gamma_I`), as multiples of the
#: 'scaled' value (:func:`linlap.estimators.scaled_gamma_I`): 'auto' keeps the default
#: weight unless cross-validation shows that a smaller one is better
AUTO_GAMMA_I_FACTORS = (0.0, 0.01, 0.1, 1.0)


class GammaISelection:
    """What :func:`select_gamma_I` measured.

    Attributes
    ----------
    gamma_I : float
        The chosen γ_I.
    grid : ndarray of shape (m,)
        The candidates, increasing.
    errors : ndarray of shape (m, l)
        ``errors[c, i]`` = 1 when labeled row i, held out, was misclassified by
        candidate c fitted on the other folds, else 0 (rows in the order of
        ``labeled_rows``); all zeros when no cross-validation was possible.
    mean_error : ndarray of shape (m,)
    threshold : ndarray of shape (m,)
        ``n_se`` standard errors of each candidate's paired difference with the best.
    best : int
        Index of the candidate with the smallest mean error.
    n_splits : int
        Folds used (0: too few labels per class to cross-validate).
    """

    def __init__(self, gamma_I, grid, errors, mean_error, threshold, best, n_splits):
        self.gamma_I = gamma_I
        self.grid = grid
        self.errors = errors
        self.mean_error = mean_error
        self.threshold = threshold
        self.best = best
        self.n_splits = n_splits

    def __repr__(self):
        return (f"GammaISelection(gamma_I={self.gamma_I:g}, grid={self.grid.tolist()}, "
                f"mean_error={np.round(self.mean_error, 4).tolist()}, n_splits={self.n_splits})")


def select_gamma_I(X, y_idx, labeled_rows, graph, *, gamma_A, grid, cv=3,
                   n_se=2.0, fit_intercept=True, tol=1e-4, max_iter=1000, patience=4,
                   random_state=0):
    """Choose γ_I by cross-validation of the labeled rows, preferring the largest within
    ``n_se`` standard errors of the best.

    Guards against a graph that does not carry the labels: how much smoothness along
    the graph helps is estimated from the labeled rows alone. The labeled rows are split
    into ``k = min(cv, smallest class count)`` stratified folds (shuffled with
    ``random_state``). For each fold and each candidate γ_I of ``grid``, the LapRLS
    objective

        J(w, b) = (1/l') Σ_{i in the other folds} (y_i − f(x_i))² + γ_A ‖w‖²
                  + γ_I s fᵀL^p f,          s = graph.scale_,

    is minimised on the same graph (the fold's rows become unlabeled rows, still in the
    graph; one-vs-rest ±1 targets) and every held-out row gets the error
    ``e_c(i) = 1[predicted class ≠ y_i]``. The γ_I > 0 candidates of a fold come from
    :func:`linlap.solvers.grid.laprls_grid` (one CG run each; a run stops once the
    held-out labels have not changed for ``patience`` iterations, else at ``tol``);
    γ_I = 0 is the ridge fit on the labeled rows (no graph pass).

    With ``E_c = mean_i e_c(i)`` and ``best = argmin_c E_c``, the chosen γ_I is the
    *largest* candidate c with

        E_c − E_best ≤ n_se · sd_i(e_c(i) − e_best(i)) / √l

    (``sd`` the sample standard deviation, ``ddof=1``, of the paired per-row
    differences, so ``sd/√l`` is the standard error of ``E_c − E_best``; it is 0 when
    the two candidates err on the same rows). So the graph keeps its weight unless a
    smaller γ_I is better by more than the noise of l labels: with ``n_se=2``, a
    candidate that errs on 2 more held-out rows and on none fewer is still a tie. With fewer than 2 labeled rows in some class (no
    cross-validation possible) the largest candidate is returned.

    Parameters
    ----------
    X : sparse matrix (CSR) or ndarray of shape (n, d)
        All rows the graph was built on.
    y_idx : ndarray of int, shape (l,)
        Class indices (0…C−1) of the labeled rows.
    labeled_rows : ndarray of int, shape (l,)
    graph : fitted KNNGraph
    gamma_A : float
        γ_A (> 0) of every candidate.
    grid : sequence of float
        Candidate γ_I values (≥ 0). ``gamma_I='auto'`` passes the 'scaled' value times
        ``AUTO_GAMMA_I_FACTORS`` = (0, 0.01, 0.1, 1).
    cv : int, default=3
    n_se : float, default=2.0
        Tolerance of the rule, in standard errors (≥ 0; 0: the smallest mean error,
        ties to the larger γ_I).
    fit_intercept : bool, default=True
    tol, max_iter, patience : float, int, int
        CG tolerance and iteration cap of the fold fits; early stopping of the γ_I > 0
        runs (None: run to ``tol``).
    random_state : int, default=0
        Shuffling of the folds.

    Returns
    -------
    GammaISelection
    """
    grid = np.unique(np.asarray(grid, dtype=np.float64))
    if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid < 0):
        raise ValueError(f"the gamma_I grid must hold finite values >= 0, got {grid!r}.")
    if not gamma_A > 0:
        raise ValueError(f"select_gamma_I needs gamma_A > 0, got {gamma_A!r}.")
    if not (np.isfinite(n_se) and n_se >= 0):
        raise ValueError(f"n_se must be a finite number >= 0, got {n_se!r}.")
    y_idx = np.asarray(y_idx)
    labeled_rows = np.asarray(labeled_rows)
    l = labeled_rows.size
    n_classes = int(y_idx.max()) + 1
    counts = np.bincount(y_idx, minlength=n_classes)
    k = min(int(cv), int(counts.min()))
    m = grid.size
    errors = np.zeros((m, l))
    if k < 2 or graph.scale_ == 0:
        return GammaISelection(float(grid[-1]), grid, errors, np.zeros(m), np.zeros(m),
                               m - 1, 0)
    pos = grid > 0
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=random_state)
    for train, test in skf.split(np.zeros(l), y_idx):
        rows, T = labeled_rows[train], pm1_targets(y_idx[train], n_classes)
        Xte = X[labeled_rows[test]]
        F = np.empty((m, test.size, T.shape[1]))
        if pos.any():
            coef, intercept, _ = laprls_grid(
                X, T, rows, graph.laplacian_matvec, gamma_A=[gamma_A], gamma_I=grid[pos],
                scale=graph.scale_, fit_intercept=fit_intercept, tol=tol,
                max_iter=max_iter, monitor_rows=Xte if patience else None,
                patience=patience, warn=False)
            for j, c in enumerate(np.flatnonzero(pos)):
                F[c] = np.asarray(Xte @ coef[j, 0].T) + intercept[j, 0]
        if not pos.all():
            sol = laprls_linear(X, T, rows, None, gamma_A=gamma_A, gamma_I=0.0, scale=1.0,
                                fit_intercept=fit_intercept, tol=tol, max_iter=max_iter)
            F[0] = np.asarray(Xte @ sol.coef.T) + sol.intercept
        errors[:, test] = predict_index(F) != y_idx[test]
    mean = errors.mean(axis=1)
    best = int(np.argmin(mean))
    diff = errors - errors[best]
    threshold = n_se * diff.std(axis=1, ddof=1) / np.sqrt(l)
    chosen = int(np.flatnonzero(mean - mean[best] <= threshold + 1e-12).max())
    return GammaISelection(float(grid[chosen]), grid, errors, mean, threshold, best, k)


def _as_list(values):
    """A grid parameter as a list: a scalar (or 0-d array) is a one-value grid."""
    if np.ndim(values) == 0:
        return [values.item() if isinstance(values, np.ndarray) else values]
    return list(values)


_DEFAULT_GAMMA_A = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 3e-2, 1e-1)
_DEFAULT_GAMMA_I = (1e-2, 1e-1, 1.0, 10.0, 100.0, 300.0, 1000.0)


class _GridCV(SemiSupervisedMixin, LinearClassifierMixin, BaseEstimator):
    """γ_A × γ_I [× power × class_prior] search over one graph with warm starts."""

    _base = None

    # -- params -----------------------------------------------------------------------
    def _grid_values(self, name):
        vals = _as_list(getattr(self, name))
        if not vals:
            raise ValueError(f"{name} must hold at least one value.")
        for v in vals:
            check_real(f"every {name}", v, 0, low_open=True)
        return vals

    def _check_grid(self):
        if self.method not in ("shifted", "warm"):
            raise ValueError(f"method must be 'shifted' or 'warm', got {self.method!r}.")
        p = self.patience
        if p is not None and (not isinstance(p, numbers.Integral) or isinstance(p, bool)
                              or p < 1):
            raise ValueError(f"patience must be None or an integer >= 1, got {p!r}.")
        check_tol(self)  # before the grid runs, not at the refit
        check_positive_int(self, "max_iter")
        check_flags(self, "fit_intercept", "warm_start")
        check_verbose(self)
        gA = self._grid_values("gamma_A")
        gI = self._grid_values("gamma_I")
        powers = [None] if self.power is None else _as_list(self.power)
        for p in powers:
            if p is not None:
                check_power(p)
        if not powers:
            raise ValueError("power must hold at least one value (None: the graph's).")
        cp = self.class_prior
        if isinstance(cp, (list, tuple)) and not (
                len(cp) and all(isinstance(v, numbers.Real) for v in cp)):
            priors = list(cp)           # a list of settings
        else:
            priors = [cp]               # one setting (None, 'labeled', a dict or proportions)
        if not priors:
            raise ValueError("class_prior must hold at least one setting (None for off).")
        ks = [None] if self.n_neighbors is None else _as_list(self.n_neighbors)
        for k in ks:
            if k is not None and not (is_int(k) and k >= 1):
                raise ValueError(f"n_neighbors must be None or integers >= 1, got {k!r}.")
        if not ks:
            raise ValueError("n_neighbors must hold at least one value (None: the graph's).")
        _check_cv(self.cv)
        check_graph_param(self)
        return gA, gI, ks, powers, priors

    def _graphs(self, X, ks, powers):
        """One kNN graph per k, one Laplacian view per power (never formed). k None:
        ``graph`` itself (a fitted one is shared) or the default graph; the listed ks
        (already capped, :func:`capped_n_neighbors`) are subgraphs of one neighbour
        search at the largest of them — or of a graph that already has that many
        neighbours — as :meth:`KNNGraph.subgraph` keeps each row's nearest k."""
        graphs = {None: self._fit_graph(X)} if None in ks else {}
        listed = [k for k in ks if k is not None]
        if listed:
            kmax = max(listed)
            parent = next((g for g in graphs.values() if g.n_neighbors >= kmax), None)
            if parent is None and getattr(self.graph, "adjacency_", None) is not None \
                    and self.graph.n_neighbors >= kmax:
                parent = resolve_graph(self.graph, X, self.verbose)
            if parent is None:
                params = (default_graph(X, self.verbose) if self.graph is None else
                          self.graph).get_params(deep=False)
                parent = KNNGraph(**dict(params, n_neighbors=kmax)).fit(X)
            for k in listed:
                graphs[k] = parent if k == parent.n_neighbors else parent.subgraph(k)
        out = {}
        for k in ks:
            g = graphs[k]
            for p in powers:
                out[(k, p)] = g if p is None or p == g.power else g.with_laplacian(power=p)
        return out

    def _make_base(self, graph):
        return self._base(graph=graph, unlabeled=self.unlabeled,
                          fit_intercept=self.fit_intercept, tol=self.tol,
                          max_iter=self.max_iter, warm_start=self.warm_start,
                          verbose=self.verbose, **self._base_extra())

    def _base_extra(self):
        return {}

    def _shifted(self, prior):
        """Whether this class-prior setting's grid is solved by shifted CG runs."""
        return False

    # -- fit --------------------------------------------------------------------------
    def fit(self, X, y, validation=None):
        """Search the grid and refit the best setting on all labeled rows.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            ``unlabeled`` marks unlabeled rows.
        validation : array-like of shape (n_samples,) or (X_val, y_val), optional
            Labels of validation rows of X that are unlabeled in y (the ``unlabeled``
            marker on the other rows), or out-of-sample rows (a tuple or a list of the
            two; X_val is used as given — in a Pipeline it does not pass through the
            earlier steps, so transform it first, or pass validation labels for rows of
            X); the score is their accuracy. None: ``cv``-fold cross-validation over
            the labeled rows (held-out rows are unlabeled while the others train).

        Returns
        -------
        self
        """
        gA, gI, ks, powers, priors = self._check_grid()
        X, y, labeled_rows, unlabeled_rows, classes, y_idx = self._check_X_y(X, y)
        # the k the graphs are built with (capped by the non-empty rows, as the
        # estimators' default k is), each once: best_params_ reports the k used
        if any(k is not None for k in ks):  # (one count of the non-empty rows)
            top = capped_n_neighbors(X, max(k for k in ks if k is not None))
            ks = [None if k is None else min(k, top) for k in ks]
        ks = list(dict.fromkeys(ks))
        t0 = time.perf_counter()
        graphs = self._graphs(X, ks, powers)
        graph_time = time.perf_counter() - t0

        if validation is not None:
            rows, Xv, yv = _validation_set(self, validation, X, y, labeled_rows, classes)
            splits = [(y, Xv, yv, labeled_rows, y_idx)]
        else:
            splits = []
            for train, test in _folds(self.cv, y_idx):
                # the fold's labels with its held-out rows unlabeled, on a copy whose dtype
                # holds the marker too (a '<U3' y would truncate 'unknown', a uint8 one
                # could not hold -1)
                ytr = y.astype(_dtype_with(y, self.unlabeled))
                ytr[labeled_rows[test]] = self.unlabeled
                splits.append((ytr, X[labeled_rows[test]], y_idx[test], labeled_rows[train],
                               y_idx[train]))

        # snake order over (γ_A, γ_I): consecutive fits are grid neighbours
        cells = []
        for i, a in enumerate(gA):
            order = range(len(gI)) if i % 2 == 0 else range(len(gI) - 1, -1, -1)
            cells.extend((i, j) for j in order)
        combos = list(itertools.product(range(len(ks)), range(len(powers)), range(len(priors))))
        n_cand = len(combos) * len(cells)
        scores = np.full((len(splits), n_cand), np.nan)
        fit_times = np.zeros((len(splits), n_cand))
        n_iters = np.zeros((len(splits), n_cand), dtype=int)
        hinges = np.zeros((len(splits), n_cand))
        params = [None] * n_cand
        index = {}
        k = 0
        for ik, ip, iq in combos:
            for i, j in sorted(cells):
                index[(ik, ip, iq, i, j)] = k
                params[k] = {"gamma_A": gA[i], "gamma_I": gI[j], "n_neighbors": ks[ik],
                             "power": powers[ip], "class_prior": priors[iq]}
                k += 1
        def score(s, c, F, yte):
            scores[s, c], hinges[s, c] = accuracy_and_hinge(
                F[:, None] if F.ndim == 1 else F, yte, classes.size)

        n, d = X.shape
        n_shifted = sum(self._shifted(priors[iq]) for _, _, iq in combos)
        check_memory(solve_bytes(n, d, X.nnz if sp.issparse(X) else n * d, classes.size + 1)
                     + (grid_bytes(d, len(gI), len(gA), classes.size) if n_shifted else 0),
                     f"{type(self).__name__}: a grid of {len(gA)} x {len(gI)} on {n} rows x "
                     f"{d} features, {classes.size} classes",
                     hint="List fewer gamma_A / gamma_I values, or use method='warm'.")
        bar = progress(bool(self.verbose), total=len(splits) * n_cand,
                       desc=f"{type(self).__name__} grid", unit="candidates")
        unfinished = 0  # shifted-run points stopped by max_iter (warned once, below)
        for s, (ytr, Xte, yte, lab_rows, lab_idx) in enumerate(splits):
            for ik, ip, iq in combos:
                graph = graphs[(ks[ik], powers[ip])]
                # (the shifted runs need a graph term; without an edge: one fit each)
                if self._shifted(priors[iq]) and graph.scale_ > 0:
                    # every (γ_A, γ_I) from one shifted CG run per γ_I
                    t = time.perf_counter()
                    coef, intercept, steps, info = self._grid_solve(
                        X, pm1_targets(lab_idx, classes.size), lab_rows, graph, gA, gI, Xte)
                    # (q, g·c) systems: a point is unfinished if any of its columns is
                    running = ~(info.converged | info.stopped)
                    unfinished += int(running.reshape(len(gA), len(gI), -1).any(axis=2).sum())
                    run = [index[(ik, ip, iq, i, j)] for i, j in cells]
                    for c, (i, j) in zip(run, cells):
                        n_iters[s, c] = steps[j, i]
                        score(s, c, np.asarray(Xte @ coef[j, i].T) + intercept[j, i], yte)
                    # the run's time (solves and scoring), spread evenly over its candidates
                    fit_times[s, run] = (time.perf_counter() - t) / len(cells)
                    bar.update(len(cells), split_best_accuracy=f"{np.nanmax(scores[s]):.3f}")
                    continue
                est = self._make_base(graph)
                est.set_params(class_prior=priors[iq])
                for i, j in cells:
                    c = index[(ik, ip, iq, i, j)]
                    est.set_params(gamma_A=gA[i], gamma_I=gI[j])
                    t = time.perf_counter()
                    est.fit(X, ytr)
                    n_iters[s, c] = est.n_iter_
                    score(s, c, est.decision_function(Xte), yte)
                    fit_times[s, c] = time.perf_counter() - t
                    bar.update(1, split_best_accuracy=f"{np.nanmax(scores[s]):.3f}")
        bar.close()
        if unfinished:
            warnings.warn(f"{type(self).__name__}: {unfinished} of the "
                          f"{len(splits) * n_cand} grid fits reached their iteration limit "
                          f"before tol={self.tol:g} and were scored as they stood. Increase "
                          f"max_iter, or leave out the smallest gamma_A, whose solves are "
                          f"slowest.", ConvergenceWarning, stacklevel=2)
        mean = scores.mean(axis=0)
        mean_hinge = hinges.mean(axis=0)
        # rank by accuracy, ties (frequent on a few validation rows) by the mean hinge loss
        rank = np.empty(n_cand, dtype=int)
        rank[np.lexsort((np.arange(n_cand), np.round(mean_hinge, 12), -mean))] = \
            np.arange(1, n_cand + 1)
        res = {"params": params,
               "param_gamma_A": np.array([p["gamma_A"] for p in params]),
               "param_gamma_I": np.array([p["gamma_I"] for p in params]),
               "param_n_neighbors": _object_array([p["n_neighbors"] for p in params]),
               "param_power": _object_array([p["power"] for p in params]),
               "mean_test_hinge": mean_hinge,
               "param_class_prior": _object_array([p["class_prior"] for p in params]),
               "mean_test_score": mean, "std_test_score": scores.std(axis=0),
               "rank_test_score": rank,
               "mean_fit_time": fit_times.mean(axis=0),
               "mean_n_iter": n_iters.mean(axis=0)}
        for s in range(len(splits)):
            res[f"split{s}_test_score"] = scores[s]
        self.cv_results_ = res
        self.best_index_ = int(np.argmin(rank))
        self.best_params_ = dict(params[self.best_index_])
        self.best_score_ = float(mean[self.best_index_])
        self.n_splits_ = len(splits)
        self.grid_time_ = float(fit_times.sum())
        self.graph_time_ = graph_time
        # refit on every labeled row at the best setting
        bp = self.best_params_
        best = self._make_base(graphs[(bp["n_neighbors"], bp["power"])])
        best.set_params(gamma_A=bp["gamma_A"], gamma_I=bp["gamma_I"],
                        class_prior=bp["class_prior"], warm_start=False)
        t = time.perf_counter()
        best.fit(X, y)
        self.refit_time_ = time.perf_counter() - t
        self.best_estimator_ = best
        self.classes_ = best.classes_
        self.coef_ = best.coef_
        self.intercept_ = best.intercept_
        self.transduction_ = best.transduction_
        self.graph_ = best.graph_
        self.n_iter_ = best.n_iter_
        return self

    def decision_function(self, X):
        """Decision values of ``best_estimator_`` (X checked as it checks it)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.decision_function(check_predict_X(self, X))


class LapRLSClassifierCV(_GridCV):
    """:class:`~linlap.LapRLSClassifier` with γ_A × γ_I chosen on one shared graph.

    Each candidate minimises the LapRLS objective

        J(w, b) = (1/l) Σ_{i labeled} (y_i − f(x_i))² + γ_A ‖w‖² + γ_I s fᵀL^p f

    (see :class:`~linlap.LapRLSClassifier`) — with ``patience`` (the default, 4) the
    ``'shifted'`` grid scores a candidate as its CG stands once the predicted labels of
    the scoring rows have settled, which can be well before ``tol``: the scores, and so
    the ranking, are those of these early-stopped models, not of the minimisers (model
    selection needs the labels, not the last digits; ``patience=None`` runs every
    candidate to ``tol``). The chosen setting is refitted to ``tol``. The graph is built once (or the fitted
    ``graph`` reused); a ``power`` list is searched through
    :meth:`KNNGraph.with_laplacian` views of it (L^p is never formed). Scores are the
    accuracy on ``validation`` rows or the mean accuracy over ``cv`` stratified folds of
    the labeled rows. The best setting is refitted on all labeled rows (cold start).

    How the grid is solved (``method``):

    * ``'shifted'`` (default): for each graph, power, split and γ_I, the whole column of
      γ_A comes from one CG recurrence — every γ_A is a shift of the same operator, so
      each iteration costs one pass over X, p graph passes and one over Xᵀ for all of
      them (:func:`linlap.solvers.grid.laprls_grid`). With ``patience``, a candidate stops
      once the predicted labels of the scoring rows have stayed the same for
      ``patience`` iterations (otherwise at ``tol``). Used for ``class_prior=None``;
      the other class-prior settings of a list take the ``'warm'`` route.
    * ``'warm'``: one :class:`~linlap.LapRLSClassifier` fit per candidate, walked in
      snake order over (γ_A, γ_I) so that with ``warm_start=True`` every fit starts CG
      from its neighbour's solution.

    Parameters
    ----------
    gamma_A, gamma_I : float or sequence of float
        The grid (default 7 × 7: γ_A 1e-6…1e-1, γ_I 1e-2…1e3).
    n_neighbors : None, int or sequence of int, default=None
        k of the kNN graph to search (each capped by the non-empty rows − 1): one
        neighbour search at the largest k (with the other settings of ``graph``, or the
        defaults; none when a fitted ``graph`` already has that many neighbours), the
        smaller k its subgraphs (:meth:`KNNGraph.subgraph`); None keeps the graph's.
    power : None, int or sequence of int, default=None
        Laplacian powers to search (views of each graph, L^p never formed); None keeps
        the graph's.
    class_prior : setting or list of settings, default=None
        ``class_prior`` of the base estimator; a list of settings searches its entries,
        e.g. ``[None, 'labeled', [0.5, 0.5]]``; a flat list of numbers is one setting
        (class proportions).
    graph : KNNGraph or None, default=None
    cv : int, default=3
    method : {'shifted', 'warm'}, default='shifted'
        How the grid is solved (see above).
    patience : int or None, default=4
        Early stopping of the ``'shifted'`` grid: a candidate stops once the labels of its
        scoring rows have not changed for ``patience`` iterations (None: every candidate
        runs to ``tol``).
    warm_start : bool, default=True
        ``method='warm'``: start each fit from its grid neighbour's solution.
    unlabeled, fit_intercept, tol, max_iter, verbose
        As in :class:`~linlap.LapRLSClassifier`.

    Attributes
    ----------
    best_params_ : dict
        ``gamma_A``, ``gamma_I``, ``n_neighbors``, ``power``, ``class_prior`` of the chosen
        candidate (None: the graph's own).
    best_score_ : float
        Its mean validation accuracy (early-stopped, see ``patience``). Candidates are ranked by mean accuracy, ties by the
        mean hinge loss ``max(0, 1 − y f)`` of their decision values on the scoring rows
        (``mean_test_hinge``), then by grid order.
    best_index_ : int
    cv_results_ : dict of arrays
        ``params``, ``param_*``, ``split{k}_test_score``, ``mean_test_score``,
        ``std_test_score``, ``mean_test_hinge``, ``rank_test_score``, ``mean_fit_time``,
        ``mean_n_iter``.
    best_estimator_ : LapRLSClassifier
        Refitted on all labeled rows.
    classes_, coef_, intercept_, transduction_, graph_, n_iter_, n_features_in_
        Those of ``best_estimator_``.
    grid_time_ : float
        Seconds spent in the grid fits (all splits); ``refit_time_`` for the final fit,
        ``graph_time_`` for building the graph. With ``method='shifted'``,
        ``mean_fit_time`` spreads a run's time evenly over its candidates and
        ``mean_n_iter`` counts the iterations each candidate took part in.
    """

    _base = LapRLSClassifier

    def __init__(self, gamma_A=_DEFAULT_GAMMA_A, gamma_I=_DEFAULT_GAMMA_I, *,
                 n_neighbors=None, power=None, class_prior=None, graph=None, cv=3,
                 method="shifted", patience=4, warm_start=True, unlabeled=-1,
                 fit_intercept=True, tol=1e-4, max_iter=1000, verbose=0):
        store_params(self, locals())

    def _shifted(self, prior):
        return self.method == "shifted" and prior is None

    def _grid_solve(self, X, T, rows, graph, gA, gI, Xscore):
        coef, intercept, info = laprls_grid(
            X, T, rows, graph.laplacian_matvec, gamma_A=gA, gamma_I=gI, scale=graph.scale_,
            fit_intercept=self.fit_intercept, tol=self.tol, max_iter=self.max_iter,
            monitor_rows=Xscore, patience=self.patience, warn=False)
        c = T.shape[1]
        steps = info.n_iter_shift.reshape(len(gA), len(gI), c).max(axis=2).T
        return coef, intercept, steps, info


class LapSVMClassifierCV(_GridCV):
    """:class:`~linlap.LapSVMClassifier` with γ_A × γ_I chosen on one shared graph.

    Each candidate minimises ``J = (1/l) Σ V(y_i, f(x_i)) + γ_A ‖w‖² + γ_I s fᵀL^p f`` with
    the base estimator's loss (squared hinge by finite Newton by default). Scoring and
    refit as in :class:`LapRLSClassifierCV`.

    How the grid is solved (``method``):

    * ``'shifted'`` (default; squared hinge by ``solver='newton'``, ``class_prior=None``):
      the LapRLS solutions of the whole grid come from one shifted CG run per γ_I (as in
      :class:`LapRLSClassifierCV`, with the same ``patience``); a point where every
      labeled row has ``y f ≤ 1`` is also the LapSVM minimiser (the squared hinge equals
      the squared loss there), the others are finished by finite Newton from their
      LapRLS point (:func:`linlap.solvers.grid.lapsvm_grid`); with ``patience`` a point
      whose CG stopped early and has every ``y f ≤ 1`` is scored as it stands.
    * ``'warm'`` (and the other losses, solvers and class-prior settings): one
      :class:`~linlap.LapSVMClassifier` fit per candidate in snake order, Newton starting
      from the neighbour's w when ``warm_start=True``.

    Parameters
    ----------
    gamma_A, gamma_I, n_neighbors, power, class_prior, graph, cv, method, patience, warm_start
        As in :class:`LapRLSClassifierCV`.
    solver, loss, memory_budget
        Passed to :class:`~linlap.LapSVMClassifier`.
    unlabeled, fit_intercept, tol, max_iter, verbose
        As in :class:`~linlap.LapSVMClassifier`.

    Attributes
    ----------
    As in :class:`LapRLSClassifierCV` (``best_estimator_`` is a LapSVMClassifier). With
    ``method='shifted'``, ``mean_n_iter`` counts the Newton steps of a candidate's
    refinement (0 when its LapRLS point was kept).
    """

    _base = LapSVMClassifier

    def __init__(self, gamma_A=_DEFAULT_GAMMA_A, gamma_I=_DEFAULT_GAMMA_I, *,
                 n_neighbors=None, power=None, class_prior=None, graph=None, cv=3,
                 method="shifted", patience=4, warm_start=True, solver="newton",
                 loss="squared_hinge", unlabeled=-1, fit_intercept=True, tol=1e-4,
                 max_iter=50, memory_budget=2**30, verbose=0):
        store_params(self, locals())

    def _check_grid(self):
        check_positive_int(self, "memory_budget")
        return super()._check_grid()

    def _base_extra(self):
        return {"solver": self.solver, "loss": self.loss, "memory_budget": self.memory_budget}

    def _shifted(self, prior):
        return (self.method == "shifted" and prior is None and self.solver == "newton"
                and self.loss == "squared_hinge")

    def _grid_solve(self, X, T, rows, graph, gA, gI, Xscore):
        with warnings.catch_warnings():  # counted in info: the grid warns once
            warnings.simplefilter("ignore", ConvergenceWarning)
            coef, intercept, steps, info = lapsvm_grid(
                X, T, rows, graph.laplacian_matvec, gamma_A=gA, gamma_I=gI,
                scale=graph.scale_, fit_intercept=self.fit_intercept, tol=self.tol,
                max_iter=self.max_iter, monitor_rows=Xscore, patience=self.patience)
        return coef, intercept, steps, info
