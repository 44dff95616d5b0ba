"""What every linlap classifier shares: labels and the unlabeled marker, the class-prior
targets, the graph (built, or a prebuilt one reused), ±1 targets and predictions, and
the linear classifiers' fit."""

import sys
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_consistent_length, column_or_1d, validate_data

from .._labels import check_marker_fits, marker_mask
from .._memory import check_memory, solve_bytes
from .._progress import progress
from .._validation import (MAX_ABS_VALUE, check_extreme_values, check_flags,
                           check_graph_param, check_nonnegative, check_positive_int, check_tol,
                           check_verbose, user_stacklevel)
from ..graph import KNNGraph
from ..graph.estimator import rows_fingerprint, same_rows_fingerprint
from ..solvers._problem import pm1_targets, predict_index
from ._dask import dask_decision_function, dask_predict, fit_on_dask, is_dask_array

__all__ = ["SemiSupervisedMixin", "LinearLapClassifier", "store_params", "resolve_graph",
           "DEFAULT_N_NEIGHBORS", "SCALED_GAMMA_I", "scaled_gamma_I", "SCALED_GAMMA_A",
           "SCALED_GAMMA_A_ROWS", "scaled_gamma_A"]

#: k of the graph an estimator builds when none is given (see default_n_neighbors).
DEFAULT_N_NEIGHBORS = KNNGraph().n_neighbors
#: the smallest k default_n_neighbors caps the default at (rows permitting).
MIN_DEFAULT_N_NEIGHBORS = 5
#: random_state of the graph an estimator builds when none is given.
DEFAULT_GRAPH_SEED = 0

#: γ_I times the labeled rows per class, for ``gamma_I='scaled'`` (see scaled_gamma_I).
SCALED_GAMMA_I = 500.0


def scaled_gamma_I(n_labeled, n_classes):
    """γ_I of ``gamma_I='scaled'``: ``SCALED_GAMMA_I · C / l`` = 500 / (labeled rows per class).

    The loss is averaged over the l labeled rows, so with a fixed γ_I the graph weighs
    as much against 1,000 labels as against 50; a posterior with its loss summed over
    the labels would trust the graph less as labels accumulate. Dividing by the labels
    per class (one-vs-rest: each class column's positives) gives 20 at 25 labels per
    class, 100 at 5, 1 at 500. The constant 500 is the one measured to hold across the
    benchmark corpora (``bench/emr.py``; bench/RESULTS.md, "Why gamma_I='scaled'").
    """
    return SCALED_GAMMA_I * n_classes / n_labeled


#: γ_A per labeled row per class, for ``gamma_A='scaled'`` (see scaled_gamma_A).
SCALED_GAMMA_A = 1e-6
#: the labeled rows per class outside which 'scaled' γ_A stops changing.
SCALED_GAMMA_A_ROWS = (25, 1000)


def scaled_gamma_A(n_labeled, n_classes):
    """γ_A of ``gamma_A='scaled'``: ``SCALED_GAMMA_A · l / C`` = 1e-6 × (labeled rows per
    class), the rows per class clipped to ``SCALED_GAMMA_A_ROWS`` (so 2.5e-5 … 1e-3).

    The counterpart of :func:`scaled_gamma_I`: with few labels per class a small ridge
    leaves the direction of w to the graph (2.5e-5 at 25 per class or fewer); with
    hundreds the graph weighs little and the ridge is what keeps w from fitting the
    labels' noise (5e-4 at 500 per class). Below 25 rows per class the value stays at
    2.5e-5: smaller ones cost many more CG iterations (the ridge bounds the smallest
    eigenvalue of the system) for about a point at most on the corpora measured; above
    1,000 nothing was measured. Read off the benchmark corpora (``bench/emr.py
    --gamma-A-sweep``; bench/RESULTS.md, "Why gamma_A='scaled'").
    Measured on rows of unit norm (TF-IDF's): ``fit`` warns when X's rows are far from
    it (:func:`check_row_norms`).
    """
    lo, hi = SCALED_GAMMA_A_ROWS
    return SCALED_GAMMA_A * min(max(n_labeled / n_classes, lo), hi)


#: Ratio of the 95th to the 5th percentile of the non-empty rows' norms above which
#: ``fit`` warns that the rows of X are not normalised (see :func:`check_row_norms`).
ROW_NORM_SPREAD = 2.0
#: The start of both warnings of :func:`check_row_norms` (a ``warnings`` filter pattern).
ROW_NORM_WARNING = "The rows of X"
#: Median norm m of the non-empty rows outside which ``fit`` warns that
#: ``gamma_A='scaled'`` was measured on rows of unit norm: rows of norm m act as a ridge
#: weight γ_A / m², here more than 2× or less than ¼× the measured one (bench/RESULTS.md,
#: "Why gamma_A='scaled'" and "Preprocessing" show the cost).
UNIT_NORM_RANGE = (0.7, 2.0)
#: Median norm of the non-empty rows above which a fit with an intercept warns: the
#: CG's stopping rules weigh the intercept's equation against w's, whose terms grow with
#: the squared row norm, so the intercept can be left unsolved (at the default tol,
#: LapRLS's from rows of norm 3·10⁷, the Newton LapSVM's from 10¹¹, on a 40-row problem).
INTERCEPT_ROW_NORM = 1e4


def row_squared_norms(X):
    """Squared Euclidean norm of each row of X, in float64 (for :func:`check_row_norms`).

    Sparse X: the sum of its stored entries' squares, one pass without a copy
    (duplicate entries count separately, as in scikit-learn's ``row_norms``: the check
    needs no more). Dense X: accumulated in float64 whatever its dtype.
    """
    if sp.issparse(X):
        from .._numba.csr import csr_row_squared_norms  # lazy: numba is slow to import

        X = X.tocsr()
        out = np.empty(X.shape[0])
        csr_row_squared_norms(X.indptr, X.data, out)
        return out
    X = np.asarray(X)
    return np.einsum("ij,ij->i", X, X, dtype=np.float64, casting="unsafe")


def check_row_norms(squared_norms, scaled_gamma_A, median_message=None):
    """Warn when the non-empty rows' norms (``squared_norms``: their squares, zeros for
    empty rows) spread by more than ``ROW_NORM_SPREAD`` from the 5th to the 95th
    percentile, or, with ``scaled_gamma_A`` (``gamma_A='scaled'``) or a
    ``median_message`` (``median -> str``, the warning of another caller), when their
    median is outside ``UNIT_NORM_RANGE``. Returns that median (0 if every row is empty).

    The graph term compares the decision values ``x·w`` of neighbouring rows, and those
    grow with a row's norm: with rows of unequal length (raw counts, TF-IDF with
    ``norm=None``) it smooths document length as much as class, and adds less. The
    'scaled' ridge weight was measured on rows of unit norm; scaling X by c acts as a
    ridge weight divided by c² (bench/RESULTS.md, "Preprocessing").
    """
    sq = squared_norms[squared_norms > 0]
    if sq.size == 0:
        return 0.0
    lo, mid, hi = np.sqrt(np.percentile(sq, [5, 50, 95]))
    if hi > ROW_NORM_SPREAD * lo:
        warnings.warn(
            f"The rows of X are not normalised: their norms run from {lo:.3g} to {hi:.3g} "
            f"(5th to 95th percentile of the non-empty rows). The graph term compares the "
            f"decision values x·w of neighbouring documents, which grow with a row's norm, "
            f"so it adds less on unnormalised rows (TF-IDF with norm=None: 21.3 % test "
            f"error on PCMAC and 44.5 % on 20 Newsgroups by group, against 18.6 % and "
            f"36.7 % with norm='l2'; bench/RESULTS.md, 'Preprocessing'). Normalise the "
            f"rows: TfidfVectorizer's default norm='l2', or "
            f"sklearn.preprocessing.Normalizer().", UserWarning,
            stacklevel=user_stacklevel())
    if UNIT_NORM_RANGE[0] <= mid <= UNIT_NORM_RANGE[1]:
        return mid
    if scaled_gamma_A:
        warnings.warn(
            f"The rows of X have norms around {mid:.3g}, and gamma_A='scaled' was measured "
            f"on rows of norm 1 (TF-IDF's): scaling X by c acts as a ridge weight divided "
            f"by c² (TF-IDF rows scaled by 0.1: 49.3 % test error on 20 Newsgroups by "
            f"group, against 36.7 %; bench/RESULTS.md, 'Preprocessing'). Normalise the rows "
            f"(sklearn.preprocessing.Normalizer()) or give gamma_A a number.", UserWarning,
            stacklevel=user_stacklevel())
    elif median_message is not None:
        warnings.warn(median_message(mid), UserWarning, stacklevel=user_stacklevel())
    return mid


def nonempty_rows(X):
    """Boolean mask of the rows of X with at least one nonzero entry (CSR: duplicate
    entries summed, without copying or sorting X — see ``csr_nonempty_rows``)."""
    if sp.issparse(X):
        from .._numba.csr import csr_nonempty_rows  # lazy: numba is slow to import

        X = X.tocsr()
        mask = np.empty(X.shape[0], dtype=bool)
        csr_nonempty_rows(X.indptr, X.indices, X.data, mask)
        return mask
    return np.any(X != 0, axis=1)


def count_nonempty_rows(X):
    """Rows of X with at least one nonzero entry."""
    return int(np.count_nonzero(nonempty_rows(X)))


def check_labeled_nonempty(nonempty, labeled_rows):
    """Some labeled row is non-empty (``nonempty``: :func:`nonempty_rows` of X): when every
    one is empty, f = Xw + b is the same on all of them and every fit is the zero (or
    constant) model."""
    if not nonempty[labeled_rows].any():
        raise ValueError(f"every labeled row is empty: nothing to learn from (the "
                         f"{labeled_rows.size} labeled rows of X are all-zero; X has "
                         f"{int(nonempty.sum())} non-empty rows, none labeled). Label "
                         f"rows that have nonzero features.")


def check_finite_solution(coef, intercept):
    """No NaN or inf escapes a fit."""
    if not (np.all(np.isfinite(coef)) and np.all(np.isfinite(intercept))):
        raise ValueError("The solver produced non-finite coefficients; check that X has no "
                         "extreme values and that gamma_A, gamma_I are neither tiny nor "
                         "huge.")


def store_params(est, params):
    """Keep every ``__init__`` argument as the attribute of the same name (the
    scikit-learn convention; ``params`` is the ``locals()`` of ``__init__``)."""
    for name, value in params.items():
        if name not in ("self", "__class__"):
            setattr(est, name, value)


def label_array(y):
    """Labels that are numbers or bools held as objects (a y with None or NaN markers) as
    an array of their own type, which scikit-learn's checks and metrics take; any other
    y as it is."""
    if y.dtype == object and y.size and not any(isinstance(v, (str, bytes)) for v in y):
        return np.asarray(y.tolist())
    return y


def check_labels(y, marker):
    """``labeled_rows, unlabeled_rows, classes, y_idx`` of a 1-D label array, the rows
    equal to ``marker`` being unlabeled (the same rules for every dtype)."""
    nan_marker = isinstance(marker, float) and marker != marker
    if nan_marker and y.dtype.kind not in "fO":
        raise ValueError(f"unlabeled=nan marks unlabeled rows of a float or object y; y "
                         f"has dtype {y.dtype}: pass the value that marks them instead.")
    check_marker_fits(y, marker)
    unlabeled = marker_mask(y, marker)
    labeled_rows = np.flatnonzero(~unlabeled)
    if labeled_rows.size == 0:
        raise ValueError(
            f"y has no labeled rows: every entry equals the unlabeled marker "
            f"{marker!r}. Label at least one row of each of two classes."
        )
    y_lab = y[labeled_rows]
    text = y_lab.dtype.kind in "US" or (
        y_lab.dtype == object and any(isinstance(v, (str, bytes)) for v in y_lab))
    # a numeric marker among string labels: fine where it marks rows (an object y from
    # mask_labels holds -1 in them), a mistake where it matches none
    if text and not (marker is None or isinstance(marker, (str, bytes)) or nan_marker) \
            and not unlabeled.any():
        raise ValueError(
            f"y holds string labels, so the unlabeled marker {marker!r} matches no row "
            f"and an empty or missing label would become a class: name the value that "
            f"marks the unlabeled rows, e.g. unlabeled='' or unlabeled=None (any value "
            f"that is not a class; the same marker for a fully labeled y).")
    if y_lab.dtype == object:
        kinds = {type(v) for v in y_lab}
        if len(kinds) > 1:
            raise ValueError(f"y mixes label types {sorted(k.__name__ for k in kinds)}; "
                             f"use one type (the unlabeled marker is {marker!r}).")
        y_lab = label_array(y_lab)
    if y_lab.dtype.kind == "f" or (y_lab.dtype == object and isinstance(y_lab[0], float)):
        bad = ~np.isfinite(y_lab.astype(float))
        if bad.any():
            raise ValueError(f"y contains {int(bad.sum())} NaN or infinite labels that are "
                             f"not the unlabeled marker {marker!r} (unlabeled=np.nan marks "
                             f"NaN rows as unlabeled).")
    check_classification_targets(y_lab)
    classes, y_idx = np.unique(y_lab, return_inverse=True)
    if classes.size < 2:
        hint = ""
        if unlabeled.any() and not nan_marker:
            hint = (f" The {int(unlabeled.sum())} rows equal to {marker!r} are unlabeled "
                    f"rows (the unlabeled marker); if {marker!r} is a class, mark the "
                    f"unlabeled rows with another value, e.g. unlabeled=None.")
        raise ValueError(
            f"The labeled rows contain a single class ({classes[0]!r}); a classifier "
            f"needs at least two classes among the labeled rows (1 class found).{hint}"
        )
    return labeled_rows, np.flatnonzero(unlabeled), classes, y_idx


def check_in_memory(est, X, action="fit"):
    """Refuse a dask array X with a message saying what to do (else scikit-learn's
    validation fails on it with an unrelated message); ``action`` names the method."""
    if is_dask_array(X):
        other = (", or fit LapRLSClassifier / LapSVMClassifier, which fit dask arrays"
                 if action == "fit" else "")
        raise ValueError(f"Cannot {action} a dask array X: {type(est).__name__} works on "
                         f"X in memory only; compute it first (X.compute()){other}.")


def check_finite_scores(scores):
    """``scores``, refused when not all finite (predict would map NaN to ``classes_[0]``)."""
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"X gives non-finite decision values: it has values too large "
                         f"for float64 sums (fit refuses |x| > {MAX_ABS_VALUE:g}); "
                         f"rescale X as the training data was.")
    return scores


def default_n_neighbors(n_docs):
    """k of the default graph on ``n_docs`` non-empty rows: a twentieth of them, at least
    5 and at most 50, and fewer than the rows (``bench/small.py``: on a few hundred
    documents a 50-NN graph is nearly complete, and L^5 of it flattens every decision
    value toward one class)."""
    return min(DEFAULT_N_NEIGHBORS, max(MIN_DEFAULT_N_NEIGHBORS, n_docs // 20), n_docs - 1)


def check_predict_X(est, X):
    """X for the ``predict`` of a wrapper over a fitted inner estimator: checked against
    the wrapper's own fit (feature names and count, scikit-learn's ``reset=False``) and
    handed on as an array, so that the inner estimator — fitted on the checked array —
    sees what it was fitted on. A dask X is handed on as it is."""
    if is_dask_array(X):
        return X
    return validate_data(est, X, accept_sparse="csr", dtype=None, ensure_all_finite=False,
                         reset=False)


def _labeled_part(X, y, marker):
    """The labeled rows of (X, y) (the rows whose label is not ``marker``) and their
    indices."""
    from sklearn.utils import _safe_indexing

    y = column_or_1d(y, warn=True)
    check_consistent_length(X, y)
    keep = np.flatnonzero(~marker_mask(y, marker))
    if keep.size == 0:
        raise ValueError(f"scoring needs labeled rows: every entry of y equals the "
                         f"unlabeled marker {marker!r}.")
    return _safe_indexing(X, keep), label_array(y[keep]), keep


def labeled_score(est, X, y, marker, sample_weight=None):
    """Mean accuracy of ``est.predict`` on the rows of (X, y) whose label is not the
    unlabeled ``marker``: a semi-supervised y scored on its labels (scikit-learn's
    ``cross_val_score`` and ``GridSearchCV`` pass the y the model is fitted with)."""
    from sklearn.metrics import accuracy_score
    from sklearn.utils import _safe_indexing

    X_lab, y_lab, keep = _labeled_part(X, y, marker)
    weights = None if sample_weight is None else _safe_indexing(
        column_or_1d(sample_weight), keep)
    return accuracy_score(y_lab, est.predict(X_lab), sample_weight=weights)


def labeled_scorer(scoring, unlabeled=-1):
    """A scorer for ``cross_val_score(..., scoring=)`` and ``GridSearchCV(scoring=)``
    that scores the labeled rows of y only.

    scikit-learn's scorers (``scoring='f1_macro'``, …) score every row of the y they are
    given, the unlabeled ones counted as a class ``unlabeled`` that the model never
    predicts; the default ``scoring=None`` uses the estimators' own ``score``, which
    leaves them out already. This wraps a scorer the same way.

    Parameters
    ----------
    scoring : str or callable
        A scikit-learn scorer name or a scorer ``scorer(estimator, X, y)``.
    unlabeled : object, default=-1
        The value of y marking unlabeled rows (the estimator's ``unlabeled``).

    Returns
    -------
    callable ``scorer(estimator, X, y)``
    """
    from sklearn.metrics import get_scorer

    base = get_scorer(scoring)

    def scorer(estimator, X, y):
        X_lab, y_lab, _ = _labeled_part(X, y, unlabeled)
        return base(estimator, X_lab, y_lab)

    return scorer


def _capped_k(docs, n_neighbors):
    if docs < 2:
        raise ValueError(f"X has {docs} non-empty rows: the graph needs at least 2 "
                         f"rows with a nonzero entry.")
    if n_neighbors is None:
        return default_n_neighbors(docs)
    return min(n_neighbors, docs - 1)


def capped_n_neighbors(X, n_neighbors=None):
    """``n_neighbors`` capped at the non-empty rows of X minus one (empty rows are isolated
    nodes: they count as no one's neighbour); None: :func:`default_n_neighbors`."""
    return _capped_k(count_nonempty_rows(X), n_neighbors)


def capped_n_components(docs, n_features):
    """The SVD embedding's dimension of a graph the package builds: ``KNNGraph``'s default
    capped by the ``docs`` non-empty rows and the features (no more directions exist)."""
    return min(KNNGraph().n_components, docs, n_features)


def default_graph(X, verbose=0, random_state=DEFAULT_GRAPH_SEED, n_neighbors=None,
                  **params):
    """The unfitted graph an estimator (or ``linlap fit``) builds on X when given none:
    ``KNNGraph(**params)`` with k from :func:`capped_n_neighbors` (``n_neighbors`` None:
    the default), the SVD's dimension from :func:`capped_n_components` (the SVD space is
    searched above 50,000 rows, or with ``space='svd'``) and a fixed seed (above 50,000
    rows the search is randomised: the same X gives the same model)."""
    docs = count_nonempty_rows(X)
    return KNNGraph(n_neighbors=_capped_k(docs, n_neighbors),
                    n_components=capped_n_components(docs, X.shape[1]),
                    random_state=random_state, verbose=bool(verbose), **params)


def check_prebuilt_graph(graph, X, what="The prebuilt graph",
                         fix="pass the X the graph was built on (labeled and unlabeled "
                             "rows). (In a grid search or cross-validation, pass an "
                             "unfitted KNNGraph(...), or use LapRLSClassifierCV / "
                             "LapSVMClassifierCV.)"):
    """A fitted ``graph`` against the rows of X: ValueError when their numbers differ,
    a warning when X's rows look reordered or like other documents (checked when X has
    the graph's columns: a graph of other features, e.g. embeddings, is a choice, not a
    mistake). ``what`` names the graph, ``fix`` is the advice for another row count."""
    n = X.shape[0]
    if graph.n_samples_fit_ != n:
        raise ValueError(f"{what} was built on {graph.n_samples_fit_} rows but X has {n}; "
                         f"{fix}")
    fingerprint = getattr(graph, "rows_fingerprint_", None)
    if fingerprint is not None and X.shape[1] == getattr(graph, "n_features_in_", None) \
            and (sp.issparse(X) or isinstance(X, np.ndarray)) \
            and not same_rows_fingerprint(rows_fingerprint(X), fingerprint):
        warnings.warn(
            f"X does not look like the matrix {what[0].lower() + what[1:]} was built on: "
            f"some of its rows differ (each scaled to unit length). If X's rows were "
            f"reordered or are other documents, the graph joins the wrong rows; pass the "
            f"X the graph was built on, in the same row order.", UserWarning,
            stacklevel=user_stacklevel())


def resolve_graph(graph, X, verbose=0, random_state=DEFAULT_GRAPH_SEED):
    """The fitted graph of the rows of X: ``graph`` itself when fitted on them (shared, not
    rebuilt; :func:`check_prebuilt_graph`), else a fit of a copy of it, or of
    :func:`default_graph` when ``graph`` is None."""
    if graph is None:  # KNNGraph itself warns about the empty rows
        return default_graph(X, verbose, random_state).fit(X)
    graph = clone(graph)  # a fitted graph clones to itself: shared, not rebuilt
    if getattr(graph, "adjacency_", None) is not None and hasattr(graph, "n_samples_fit_"):
        check_prebuilt_graph(graph, X)
        return graph
    return graph.fit(X)


class SemiSupervisedMixin:
    #: f = Xw + b: X of only tiny values is refused (check_extreme_values); the kernel
    #: classifiers scale K instead
    _refuses_tiny_X = True
    """Labels with an unlabeled marker (``self.unlabeled``), the class-balance targets
    (``self.class_prior``), the graph (``self.graph``) and the progress report
    (``self.verbose``) of every linlap classifier."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR is the expected input
        return tags

    def _progress_callback(self, name, quantity="relative residual", every=10):
        if not self.verbose:
            return None
        bar = progress(True, desc=name, unit="iteration", every=every)
        key = quantity.replace(" ", "_")

        def report(iteration, value):
            bar.update(1, **{key: float(value)})
        return report

    def _check_X_y(self, X, y, dtype=np.float64):
        """Validate X (scikit-learn's checks, CSR kept) and the labels: return
        ``X, y, labeled_rows, unlabeled_rows, classes, y_idx``."""
        check_in_memory(self, X)  # (LinearLapClassifier.fit sends dask X to fit_on_dask)
        X = validate_data(self, X, accept_sparse="csr", dtype=dtype, ensure_min_samples=2)
        check_extreme_values(X, refuse_tiny=self._refuses_tiny_X)
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target "
                             f"y is None.")
        y = column_or_1d(y, warn=True)
        check_consistent_length(X, y)
        labels = self._check_labels(y)
        check_labeled_nonempty(nonempty_rows(X), labels[0])
        return (X, y) + labels

    def _check_labels(self, y):
        """:func:`check_labels` with this estimator's ``unlabeled`` marker."""
        return check_labels(y, self.unlabeled)

    def score(self, X, y, sample_weight=None):
        """Mean accuracy on the labeled rows of (X, y).

        Rows of ``y`` equal to ``unlabeled`` are left out, so that a semi-supervised
        ``y`` — what ``cross_val_score`` and ``GridSearchCV`` pass back for scoring — is
        scored on its labels only (scikit-learn's ``ClassifierMixin.score`` would count
        each such row as an error).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            True labels; rows equal to ``unlabeled`` are not scored.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
        """
        return labeled_score(self, X, y, self.unlabeled, sample_weight)

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
                    raise ValueError(f"class_prior has no proportion for classes "
                                     f"{np.asarray(missing).tolist()}.")
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
        graph = resolve_graph(self.graph, X, self.verbose)
        if graph.scale_ == 0:
            warnings.warn("The graph has no edge (every neighbour weight is 0): the graph "
                          "term vanishes and the fit uses the labeled rows alone.",
                          UserWarning, stacklevel=3)
        return graph


class LinearLapClassifier(SemiSupervisedMixin, LinearClassifierMixin, BaseEstimator):
    """Shared fit logic of the linear manifold-regularised classifiers.

    Subclasses implement ``_solve(X, targets, labeled, unlabeled, graph, balance,
    init)`` returning a :class:`~linlap.solvers.laprls.LinearSolution`.
    """

    # -- validation -----------------------------------------------------------------
    def _check_params(self):
        auto = self._gamma_I_is_auto()
        named = isinstance(self.gamma_I, str)
        named_A = isinstance(self.gamma_A, str)
        for name, names in (("gamma_I", self._gamma_I_names),
                            ("gamma_A", self._gamma_A_names)):
            value = getattr(self, name)
            if isinstance(value, str) and value not in names:
                raise ValueError(f"{name} must be a finite number >= 0"
                                 + (f" or one of {list(names)}" if names else "")
                                 + f", got {value!r}.")
        check_nonnegative(self, *(() if named_A else ("gamma_A",)),
                          *(() if named else ("gamma_I",)))
        if auto and not named_A and not self.gamma_A > 0:
            raise ValueError("gamma_I='auto' needs gamma_A > 0 (its gamma_I = 0 candidate "
                             "is a ridge fit).")
        if not (named or named_A) and self.gamma_A == 0 and self.gamma_I == 0:
            raise ValueError("gamma_A and gamma_I cannot both be 0: the problem would be "
                             "unregularised and, with few labels, singular.")
        check_tol(self)
        check_positive_int(self, "max_iter")
        check_flags(self, "fit_intercept", "warm_start")
        check_verbose(self)
        check_graph_param(self)

    # -- fit --------------------------------------------------------------------------
    def fit(self, X, y):
        """Fit on labeled and unlabeled rows.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            All training documents, labeled and unlabeled (CSR is used as is). A
            dask array of row blocks (CSR or ndarray chunks) is fitted on the
            running ``dask.distributed`` cluster: graph and solver products on the
            workers, the same model as in memory (:mod:`linlap.distributed`).
        y : array-like of shape (n_samples,)
            Labels; rows equal to ``unlabeled`` (default -1) are unlabeled.

        Returns
        -------
        self
        """
        if is_dask_array(X) and self._gamma_I_is_auto():
            raise ValueError("gamma_I='auto' needs X in memory; give a number for a dask X.")
        if is_dask_array(X):  # the fit on the Dask cluster (linlap.distributed)
            return fit_on_dask(self, X, y)
        self._check_params()
        # float32 CSR is used as is (the solvers accumulate in float64): half the memory
        X, y, labeled_rows, unlabeled_rows, classes, y_idx = self._check_X_y(
            X, y, dtype=[np.float64, np.float32])
        balance = self._balance_targets(classes, y_idx, unlabeled_rows.size)

        graph = self._fit_graph(X)
        targets = pm1_targets(y_idx, classes.size)

        n, d = X.shape
        check_memory(solve_bytes(n, d, X.nnz if sp.issparse(X) else n * d,
                                 targets.shape[1] + (balance is not None)),
                     f"Fitting {type(self).__name__} on {n} rows x {d} features")
        self._check_row_norms(row_squared_norms(X))
        self._set_gammas(X, y_idx, labeled_rows, graph)
        sol = self._solve(X, targets, labeled_rows, unlabeled_rows, graph, balance,
                          self._warm_start_init(targets.shape[1], d))
        return self._set_fitted(sol, classes, y_idx, labeled_rows, graph)

    def _warm_start_init(self, n_columns, n_features):
        """The previous solution when ``warm_start`` and it has the same shape, else None."""
        prev = getattr(self, "_solution", None)
        if self.warm_start and prev is not None and prev.coef.shape == (n_columns, n_features):
            return prev
        return None

    def _set_fitted(self, sol, classes, y_idx, labeled_rows, graph):
        """The fitted attributes from a checked-finite solution; returns self."""
        check_finite_solution(sol.coef, sol.intercept)
        self.classes_ = classes
        self.coef_ = sol.coef
        self.intercept_ = sol.intercept
        self.n_iter_ = sol.n_iter
        self.graph_ = graph
        pred = predict_index(sol.decision)
        pred[labeled_rows] = y_idx
        self.transduction_ = classes[pred]
        sol.decision = None  # n × C: not needed for a warm start, too big to keep or pickle
        self._solution = sol
        return self

    # -- gamma_A, gamma_I given by name ('scaled', 'auto') --------------------------------
    #: the strings ``gamma_A`` accepts besides numbers ('scaled': scaled_gamma_A)
    _gamma_A_names = ()
    #: the strings ``gamma_I`` accepts besides numbers ('scaled': scaled_gamma_I;
    #: 'auto': select_gamma_I by cross-validation)
    _gamma_I_names = ()
    #: CG iteration cap of the selection's fold fits (None: ``max_iter``)
    _auto_gamma_I_max_iter = None

    def _gamma_I_is_auto(self):
        return "auto" in self._gamma_I_names and isinstance(self.gamma_I, str) \
            and self.gamma_I == "auto"

    def _fixed_gamma_I(self, n_labeled, n_classes):
        """The γ_I of a number or of 'scaled' (:func:`scaled_gamma_I`)."""
        if isinstance(self.gamma_I, str) and self.gamma_I == "scaled":
            return scaled_gamma_I(n_labeled, n_classes)
        return float(self.gamma_I)

    def _warn_few_unlabeled(self, n_rows, n_labeled):
        """Warn when a data-driven γ_I ('scaled', 'auto') meets fewer unlabeled rows than
        labeled ones (also EMRClassifier's, which resolves 'scaled' before the base fits)."""
        n_unlabeled = n_rows - n_labeled
        if isinstance(self.gamma_I, str) and n_unlabeled < n_labeled:
            warnings.warn(
                f"only {n_unlabeled} of the {n_rows} rows are unlabeled: "
                f"gamma_I={self.gamma_I!r} assumes many unlabeled documents (it was measured "
                f"with 20 or more per labeled one), and with few the graph term can override "
                f"the labels (predictions of one class). Fit on the unlabeled documents too "
                f"(labeled -1, or your unlabeled marker), or pass a smaller gamma_I "
                f"(gamma_I=0: the labels alone).", UserWarning, stacklevel=user_stacklevel())

    def _set_gammas(self, X, y_idx, labeled_rows, graph):
        """Set ``gamma_A_``, ``gamma_I_`` (the weights the solver uses) and
        ``gamma_I_selection_``."""
        self.gamma_I_selection_ = None
        n_classes = int(y_idx.max()) + 1
        n_unlabeled = X.shape[0] - labeled_rows.size
        self._warn_few_unlabeled(X.shape[0], labeled_rows.size)
        if isinstance(self.gamma_A, str) and self.gamma_A == "scaled":
            self.gamma_A_ = scaled_gamma_A(labeled_rows.size, n_classes)
        else:
            self.gamma_A_ = float(self.gamma_A)
        if not self._gamma_I_is_auto():
            self.gamma_I_ = self._fixed_gamma_I(labeled_rows.size, n_classes)
            self._report_gammas(labeled_rows.size, n_unlabeled, n_classes)
            return
        from .cv import AUTO_GAMMA_I_FACTORS, select_gamma_I  # cv.py imports the estimators

        scaled = scaled_gamma_I(labeled_rows.size, n_classes)
        sel = select_gamma_I(X, y_idx, labeled_rows, graph, gamma_A=self.gamma_A_,
                             grid=[scaled * c for c in AUTO_GAMMA_I_FACTORS],
                             fit_intercept=self.fit_intercept, tol=self.tol,
                             max_iter=self._auto_gamma_I_max_iter or self.max_iter)
        self.gamma_I_selection_ = sel
        self.gamma_I_ = sel.gamma_I
        self._report_gammas(labeled_rows.size, n_unlabeled, n_classes)

    def _check_row_norms(self, squared_norms):
        """:func:`check_row_norms` of X's rows (the unit-norm check for 'scaled' γ_A)."""
        mid = check_row_norms(squared_norms, isinstance(self.gamma_A, str)
                              and self.gamma_A == "scaled")
        if self.fit_intercept and mid > INTERCEPT_ROW_NORM:
            warnings.warn(
                f"The rows of X have norms around {mid:.3g}: the solver's stopping rules "
                f"weigh the intercept's equation against those of w, which grow with the "
                f"squared row norm, so the intercept may be left unsolved (measured from "
                f"norms of 3e7 at the default tol). Scale the rows down, or normalise "
                f"them (sklearn.preprocessing.Normalizer()).", UserWarning,
                stacklevel=user_stacklevel())

    def _report_gammas(self, n_labeled, n_unlabeled, n_classes):
        """With ``verbose``: the weights the solver uses (what 'scaled'/'auto' became)."""
        if not self.verbose:
            return
        def named(value, given):
            return f"{value:.3g}" + (f" ({given!r})" if isinstance(given, str) else "")
        print(f"[{type(self).__name__}] gamma_A = {named(self.gamma_A_, self.gamma_A)}, "
              f"gamma_I = {named(self.gamma_I_, self.gamma_I)}; {n_labeled} labeled rows, "
              f"{n_unlabeled} unlabeled, {n_classes} classes", file=sys.stderr, flush=True)

    def _dask_unsupported(self):
        """Why this estimator cannot fit a dask array X (None: it can, by
        ``_solve_distributed(X, targets, labeled, unlabeled, graph, balance, init, client)``)."""
        return f"{type(self).__name__} fits X in memory only"

    # -- predict ------------------------------------------------------------------------
    def decision_function(self, X):
        """Decision values ``X w + b`` (a dask array for a dask array X). X with values of
        magnitude above 1e30 is refused, as in ``fit``.

        A CSR X of float32 or float64 values goes through the solvers' numba kernel
        (:func:`linlap._numba.csr.csr_matmat`, on the calling thread, X read in its own
        dtype with float64 sums — scipy would copy float32 values to float64 first;
        the sums may differ from scipy's in the last bit);
        other inputs through scikit-learn's ``X @ coef_.T + intercept_``.
        """
        if is_dask_array(X):
            return dask_decision_function(self, X)
        if sp.issparse(X):
            X = X.tocsr()  # what the prediction converts to anyway (DOK, LIL have no .data)
        if (sp.issparse(X) or isinstance(X, np.ndarray)) and np.issubdtype(X.dtype, np.number):
            check_extreme_values(X)  # as fit does: such values give absurd or NaN scores
        if not (sp.issparse(X) and X.dtype in (np.float32, np.float64)
                and X.indices.dtype == X.indptr.dtype):
            return check_finite_scores(super().decision_function(X))
        from sklearn.utils.validation import check_is_fitted

        from .._numba.csr import csr_matmat

        # scikit-learn's checks (fitted, feature count and names; a CSR float matrix
        # comes back as it is) but for the finite values, which the scores check instead:
        # a NaN in X makes its row's score NaN (the kernel keeps IEEE NaN semantics), and
        # non-finite scores go through the scikit-learn path, which raises its own error
        # (NaN in X) or check_finite_scores' (overflow) — one pass over X less
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", reset=False, ensure_all_finite=False)
        W = np.ascontiguousarray(np.atleast_2d(self.coef_).T, dtype=np.float64)
        k = W.shape[1]
        b = np.ascontiguousarray(np.broadcast_to(np.asarray(self.intercept_, dtype=np.float64),
                                                 (k,)))
        scores = np.empty((X.shape[0], k))
        # the serial build (work=0): a product bound by memory bandwidth gains little from
        # threads, and numba's workqueue threading layer (without OpenMP or TBB) aborts the
        # process when several Python threads call parallel kernels at once (servers do)
        csr_matmat(X.indptr, X.indices, X.data, W, b, True, scores, work=0)
        if not np.all(np.isfinite(scores)):
            return check_finite_scores(super().decision_function(X))
        return scores.reshape(-1) if k == 1 else scores

    def predict(self, X):
        """Predicted class labels (a dask array for a dask array X)."""
        if is_dask_array(X):
            return dask_predict(self, X)
        return super().predict(X)
