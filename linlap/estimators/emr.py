"""Ensemble manifold regularization (seed 002): learn the graph as a convex combination
of candidate Laplacians jointly with the classifier."""

import itertools
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import (check_consistent_length, check_is_fitted, column_or_1d,
                                      validate_data)

from .._validation import (check_graph_param, check_positive_int, check_tol, check_verbose,
                           is_finite_real)
from ..graph.params import check_graph_params
from ..graph import KNNGraph
from ..solvers._problem import pm1_targets
from ..solvers.emr import (combined_laplacian_matvec, emr_alternate,
                           laplacian_quadratic_forms)
from ._base import (ROW_NORM_WARNING, LinearLapClassifier, check_in_memory,
                    check_labeled_nonempty, check_prebuilt_graph, check_predict_X,
                    default_graph, labeled_score, nonempty_rows, row_squared_norms,
                    scaled_gamma_A, scaled_gamma_I, store_params)

__all__ = ["EMRClassifier", "candidate_graphs"]

#: Candidate grid used when ``candidates=None``.
DEFAULT_CANDIDATES = {"power": [1, 2, 5, 8]}
#: the f steps before the last are solved to this multiple of the base estimator's tol,
#: but never more loosely than ``LOOSE_TOL_MAX``
LOOSE_TOL_FACTOR = 10
#: Looser f steps let μ stall: a warm-started step that already meets its tol after μ
#: moved returns f unchanged, J's decrease looks like convergence and μ stops near
#: uniform (bench/RESULTS.md, 'A base with a loose tol'). A base with a looser tol has its f steps
#: solved to this while μ moves.
LOOSE_TOL_MAX = 1e-3
#: A LapRLS base's f steps while μ moves also stop after this many CG iterations (CG
#: lowers J from its warm start however few they are): on the corpora of bench/emr.py μ
#: settles within 0.013 of where steps solved to 10× the base's tol put it, test errors
#: within 0.05 point on average, in 18–34 % less time (bench/RESULTS.md, 'EMR's cost').
MOVING_STEP_CG_ITER = 10
#: With a LapRLS base the first f step, cold at uniform μ, is solved to this multiple of
#: the loose tol, at most FIRST_STEP_TOL_MAX: a cold start cannot stall, and γ_R 'auto'
#: and the first μ step need its S_k to a few per cent only (μ as in bench/RESULTS.md,
#: 'EMR's cost').
FIRST_STEP_TOL_FACTOR = 10
FIRST_STEP_TOL_MAX = 1e-2
#: A kernel base's ``stop_reason_`` when its PCG early stopping ended the fit: that f is
#: no minimiser of J over f (see EMRClassifier)
EARLY_STOP_REASONS = frozenset(("stability", "validation", "mixed"))

_GRID_KEYS = ("n_neighbors", "weight", "heat_sigma", "symmetrize", "normalized", "power")
# the parameters a subgraph / Laplacian view can change without a new neighbour search
_VIEW_KEYS = frozenset(_GRID_KEYS)


def candidate_graphs(X, candidates, graph=None):
    """Fitted candidate graphs from a grid spec or a list, with one search per setting.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
    candidates : dict or list of KNNGraph
        A dict maps some of ``n_neighbors``, ``weight``, ``heat_sigma``,
        ``symmetrize``, ``normalized``, ``power`` to lists of values: the candidates
        are their Cartesian product (other settings from ``graph``). A list gives the
        graphs themselves; fitted ones are used as they are, unfitted ones that differ
        only in the settings above share one neighbour search at their largest k.
    graph : KNNGraph or None
        Search settings for a grid (None: the estimators' default graph's, see
        :class:`~linlap.LapRLSClassifier`). A fitted graph is reused without a new
        search and must have at least the largest k of the grid (else ValueError); an
        unfitted one is fitted once, at the largest k.

    Returns
    -------
    graphs : list of fitted KNNGraph
    search_time : float
        Seconds spent in neighbour searches (0 when every graph came fitted).
    """
    n = X.shape[0]
    if isinstance(candidates, dict):
        unknown = sorted(set(candidates) - set(_GRID_KEYS))
        if unknown:
            raise ValueError(f"candidates grid keys must be among {list(_GRID_KEYS)}, "
                             f"got {unknown}.")
        # the default search: k capped by the non-empty rows, as the estimators' own
        base = default_graph(X) if graph is None else graph
        if not isinstance(base, KNNGraph):
            raise ValueError(f"graph must be None or a linlap.KNNGraph, got "
                             f"{type(base).__name__}.")
        keys = list(candidates)
        values = []
        for key in keys:
            v = candidates[key]
            v = list(v) if isinstance(v, (list, tuple, np.ndarray)) else [v]
            if not v:
                raise ValueError(f"candidates[{key!r}] is empty.")
            values.append(v)
        settings = [dict(zip(keys, combo)) for combo in itertools.product(*values)]
        params = base.get_params(deep=False)
        specs = [KNNGraph(**dict(params, **s)) for s in settings]
        for spec in specs:  # every setting (a power of 10**30 ...) before any search
            check_graph_params(spec)
        if getattr(base, "adjacency_", None) is not None:
            check_prebuilt_graph(base, X, "The search graph (graph=)",
                                 "build it on the X passed to fit, or pass it unfitted.")
            return _views_of(base, specs), 0.0
        return _from_unfitted(X, specs, n)
    if isinstance(candidates, KNNGraph):
        candidates = [candidates]
    if not isinstance(candidates, (list, tuple)) or not candidates:
        raise ValueError("candidates must be a non-empty list of KNNGraph or a dict grid, "
                         f"got {candidates!r}.")
    for g in candidates:
        if not isinstance(g, KNNGraph):
            raise ValueError(f"candidates must be KNNGraph objects, got {type(g).__name__}.")
    fitted = [getattr(g, "adjacency_", None) is not None for g in candidates]
    checked = []  # the rows' fingerprints already checked: views of one graph share it
    for g in (g for g, f in zip(candidates, fitted) if f):
        fingerprint = getattr(g, "rows_fingerprint_", None)
        if g.n_samples_fit_ != n or fingerprint not in checked:
            check_prebuilt_graph(g, X, "A candidate graph",
                                 "build the graphs on the X passed to fit.")
            checked.append(fingerprint)
    unfitted = [g for g, f in zip(candidates, fitted) if not f]
    for g in unfitted:
        check_graph_params(g)
    built, t = _from_unfitted(X, unfitted, n) if unfitted else ([], 0.0)
    it = iter(built)
    return [g if f else next(it) for g, f in zip(candidates, fitted)], t


def _search_key(g):
    return tuple(sorted((k, repr(v)) for k, v in g.get_params(deep=False).items()
                        if k not in _VIEW_KEYS))


def _from_unfitted(X, specs, n):
    """Fit the unfitted ``specs``: one search per group of equal search settings."""
    out = [None] * len(specs)
    t = 0.0
    groups = {}
    for i, g in enumerate(specs):
        groups.setdefault(_search_key(g), []).append(i)
    for idx in groups.values():
        kmax = max(specs[i].n_neighbors for i in idx)
        if kmax >= n:
            raise ValueError(f"n_neighbors={kmax} must be smaller than n_samples={n}.")
        t0 = time.perf_counter()
        parent = clone(specs[idx[0]]).set_params(n_neighbors=kmax).fit(X)
        t += time.perf_counter() - t0
        views = _views_of(parent, [specs[i] for i in idx])
        for i, v in zip(idx, views):
            out[i] = v
    return out, t


def _views_of(parent, specs):
    """``specs`` as subgraphs / Laplacian views of the fitted ``parent``; specs with the
    same (k, weight, heat_sigma, symmetrize) share one W (they differ only in L)."""
    shared = {}
    out = []
    for s in specs:
        if s.n_neighbors > parent.n_neighbors:
            raise ValueError(f"A candidate has n_neighbors={s.n_neighbors} but the fitted "
                             f"search graph has only {parent.n_neighbors}: pass graph= "
                             f"fitted with n_neighbors >= {s.n_neighbors}, or unfitted "
                             f"(one search at the grid's largest k).")
        key = (s.n_neighbors, s.weight, repr(s.heat_sigma), s.symmetrize)
        same_w = (s.n_neighbors == parent.n_neighbors and s.weight == parent.weight
                  and repr(s.heat_sigma) == repr(parent.heat_sigma)
                  and s.symmetrize == parent.symmetrize)
        if key not in shared:
            shared[key] = parent if same_w else parent.subgraph(
                s.n_neighbors, weight=s.weight, heat_sigma=s.heat_sigma,
                symmetrize=s.symmetrize)
        w = shared[key]
        out.append(w.with_laplacian(normalized=s.normalized, power=s.power))
    return out


class _EnsembleGraph(KNNGraph):
    """A fitted stand-in for a KNNGraph whose operator is ``Σ_k c_k L_k^{p_k}``.

    ``scale_ = 1``: the weights ``c_k = μ_k s_k`` carry each candidate's own scale.
    The base estimators use only ``laplacian_matvec`` and ``scale_``.
    """

    @classmethod
    def build(cls, graphs, weights, parts):
        new = cls()
        first = graphs[0]
        new.graphs_ = graphs
        new.weights_ = np.asarray(weights, dtype=np.float64)
        new._parts = parts
        new.adjacency_ = first.adjacency_
        new.n_samples_fit_ = first.n_samples_fit_
        new.n_features_in_ = first.n_features_in_
        new.trace_ = 1.0
        new.scale_ = 1.0
        return new

    def laplacian_matvec(self, Z, out=None, work=None):
        """``Σ_k weights_k L_k^{p_k} Z``."""
        groups = [(g.laplacian_power_sum, pairs) for g, pairs in self._parts]
        return combined_laplacian_matvec(groups, self.weights_)(Z, out=out, work=work)

    def laplacian_matrix(self, power=None):
        """``Σ_k weights_k L_k^{p_k}`` as a sparse matrix (tests and small problems)."""
        out = None
        for g, w in zip(self.graphs_, self.weights_):
            term = w * g.laplacian_matrix()
            out = term if out is None else out + term
        return sp.csr_matrix(out)

    def with_laplacian(self, normalized=None, power=None):
        raise NotImplementedError("an ensemble graph has no single Laplacian to change")

    def subgraph(self, *args, **kwargs):
        raise NotImplementedError("an ensemble graph has no single neighbour list")


def _group_parts(graphs):
    """[(power-1 view, [(k, p_k), ...]), ...]: candidates sharing W and the
    normalisation share their Laplacian passes."""
    parts = {}
    for k, g in enumerate(graphs):
        key = (id(g.adjacency_), bool(g.normalized))
        if key not in parts:
            parts[key] = (g if g.power == 1 else g.with_laplacian(power=1), [])
        parts[key][1].append((k, int(g.power)))
    return list(parts.values())


class EMRClassifier(ClassifierMixin, BaseEstimator):
    """Ensemble manifold regularization (seed 002) over a base Laplacian classifier.

    Instead of one graph, the graph term is a convex combination of m candidate
    Laplacians learned jointly with the classifier. With the base estimator's loss V
    and linlap's scaling of each graph term, the joint objective (seed 002 eq. 3) is

        J(f, μ) = Σ_c [ (1/l) Σ_{i labeled} V(y_ic, f_ic) + γ_A ‖f_c‖² ]
                  + γ_I Σ_k μ_k s_k Σ_c f_cᵀ L_k^{p_k} f_c + γ_R ‖μ‖²,

    over the target columns c (±1, one per one-vs-rest class — all classes share one
    μ) and μ on the simplex (μ ≥ 0, Σ μ_k = 1); ``s_k = 1/trace(L_k)`` is candidate k's
    ``scale_``, ``‖f_c‖²`` the base's ambient norm (``‖w‖²``, or ``αᵀKα`` in kernel
    mode). Starting from μ = 1/m it alternates

    (a) the base estimator's fit with the graph term ``γ_I fᵀ (Σ_k μ_k s_k L_k^{p_k}) f``
        (applied as ``Σ_k μ_k s_k (L_k^{p_k} v)``, never formed; candidates that are
        powers of one Laplacian share its passes, a candidate with μ_k = 0 costs
        nothing), warm-started from the previous f;
    (b) μ by the pairwise closed-form updates of seed 002 eq. 10 on
        ``S_k = γ_I s_k Σ_c f_cᵀ L_k^{p_k} f_c`` (exact minimisation of eq. 4);

    until μ has settled. The f steps until μ first settles are partial (μ needs S_k to a
    few digits only): solved to 10× the base's ``tol`` (``LOOSE_TOL_FACTOR``) but never
    more loosely than 1e-3 (``LOOSE_TOL_MAX``: a looser step can meet its tolerance
    without moving f after μ moved, and μ stalls near uniform). With a LapRLS base (and
    no ``class_prior``) the first step, cold at uniform μ, is solved to 10× that, at
    most 1e-2 (``FIRST_STEP_TOL_FACTOR``), and the later ones stop after at most 10 CG
    iterations (``MOVING_STEP_CG_ITER``): on the corpora of ``bench/emr.py`` μ comes out
    within 0.015 of where steps solved to 1e-3 put it, in 18–34 % less time. μ counts as
    settled when a μ step lowers J by at most ``tol`` times J's terms in μ
    (Σ_k μ_k S_k + γ_R‖μ‖²; J's loss can dwarf them). The f step after the first settled
    μ step, at that μ, is solved to the base's ``tol`` and ``max_iter``, and so is every
    later f step (back at the loose tolerance a step would often meet it without moving
    f: a wasted fit) — but with a base ``tol`` above 1e-3, looser than the partial steps',
    the steps after one that μ does not settle on are partial again until μ settles. The
    μ step after each f step solved to the base's ``tol`` checks it: EMR stops there
    (``converged_``), at that μ and that f, when μ is settled and that f step was a
    minimisation of J over f — or, for a step that the kernel PCG solver's early
    stopping ended (``stop_reason_`` 'stability', 'validation' or 'mixed': no minimiser,
    and while μ barely moves each further step still lowers J and shifts μ), when that
    step also lowered J by at most ``tol`` times J's terms in f (its loss, ambient and
    graph terms: J less γ_R‖μ‖²). Otherwise μ takes its step and the alternation goes
    on, until ``max_iter`` f steps (the last solved to the base's ``tol``;
    ``converged_`` False). (With one candidate EMR is one base fit.) Each μ step is
    exact and each warm-started f step lowers J over f (CG, early-stopped or not, and
    the Newton line searches only decrease their objective from their start), so J does
    not increase.

    Parameters
    ----------
    estimator : estimator or None, default=None
        The base classifier: :class:`~linlap.LapRLSClassifier` (None: its defaults),
        :class:`~linlap.LapSVMClassifier`, :class:`~linlap.KernelLapRLSClassifier` or
        :class:`~linlap.KernelLapSVMClassifier`. Its ``gamma_A``, ``gamma_I`` (a number
        > 0 or 'scaled'), loss, ``unlabeled`` and solver settings are used; its ``graph``
        is replaced.
    candidates : dict, list of KNNGraph or None, default=None
        The candidate graphs. A dict is a grid over ``n_neighbors``, ``weight``,
        ``heat_sigma``, ``symmetrize``, ``normalized`` and ``power`` (lists of values;
        their Cartesian product), built with one neighbour search at the largest k
        (:meth:`KNNGraph.subgraph` gives the smaller k, :meth:`KNNGraph.with_laplacian`
        the other Laplacians). A list gives the graphs (fitted ones are reused;
        unfitted ones differing only in those settings share one search). None:
        ``{'power': [1, 2, 5, 8]}`` on ``graph`` (default: the estimators' default graph,
        k = 50 cosine-weighted neighbours — fewer on small corpora — normalised) — one W
        whose four powers share their passes. (On the six corpora of ``bench/emr.py`` it
        came within 1 point of the single power chosen on as many validation labels on
        five, and 3.3 points behind it on 20 Newsgroups subject lines, where p = 2 is
        best: μ goes to p = 5 and 8, the smoothest candidates, not where the labels are
        best served. A grid mixing k = 10 and 50 did worse, μ going to the smoother
        k = 10 graphs.)
    graph : KNNGraph or None, default=None
        Search settings of a grid (algorithm, space, random_state, …); a fitted graph
        is reused without a new search and must have at least the grid's largest k
        (else ValueError).
    gamma_R : float or 'auto', default='auto'
        Weight of ``‖μ‖²``. Large values keep μ near uniform, 0 puts all weight on the
        smoothest candidate. 'auto' (seed 002 §4): the mean of ``S_k`` at the first
        f (uniform μ), then fixed. (Over powers of one graph, near-uniform μ acts like
        the lowest power, whose λ^p rules the smooth end of the spectrum: at 10 × 'auto'
        and above, 11–29 points worse on four of the bench corpora; bench/RESULTS.md.)
    tol : float, default=1e-3
        Decrease of J by a μ step, relative to J's terms in μ, below which μ counts as
        settled; and by an early-stopped f step, relative to J's terms in f, below which
        f does (see above).
    max_iter : int, default=10
        Maximum number of f steps (base fits).
    verbose : int, default=0
        Print μ and J after each alternation to stderr.

    Attributes
    ----------
    mu_ : ndarray of shape (m,)
        Learned weights of the candidates.
    smoothness_ : ndarray of shape (m,)
        ``S_k`` of the final f on each candidate.
    objective_ : list of float
        J after the first f step, then after each μ step and the f step that follows
        it (the last one at the final μ, solved to the base's ``tol``).
    gamma_R_ : float
        γ_R used.
    graphs_ : list of KNNGraph
        The fitted candidates.
    estimator_ : estimator
        The base estimator fitted with the final combination (its ``graph_`` is the
        combined operator).
    n_iter_ : int
        f steps (base fits).
    converged_ : bool
        Whether EMR stopped by its rule (see above) before ``max_iter`` f steps (if
        not, the fit warns: ConvergenceWarning).
    classes_, transduction_, n_features_in_
        Those of ``estimator_`` (and ``coef_``, ``intercept_`` for a linear base).
    fit_time_ : dict
        Seconds: 'search' (neighbour searches), 'graphs' (weights of the candidates),
        'fits' (the alternation), 'total'.
    """

    def __init__(self, estimator=None, *, candidates=None, graph=None, gamma_R="auto",
                 tol=1e-3, max_iter=10, verbose=0):
        store_params(self, locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _base(self):
        from .linear import LapRLSClassifier, LapSVMClassifier
        from .kernel import KernelLapRLSClassifier, KernelLapSVMClassifier

        est = LapRLSClassifier() if self.estimator is None else self.estimator
        kinds = (LapRLSClassifier, LapSVMClassifier, KernelLapRLSClassifier,
                 KernelLapSVMClassifier)
        if not isinstance(est, kinds):
            raise ValueError(f"estimator must be one of {[k.__name__ for k in kinds]} or None, "
                             f"got {type(est).__name__}.")
        if isinstance(est, (LapRLSClassifier, KernelLapRLSClassifier)):
            loss = "squared"
        elif isinstance(est, LapSVMClassifier):
            loss = est.loss
        else:  # the dual solver fits seed 001's hinge, the primal ones its square
            loss = "hinge" if est.solver == "dual" else "squared_hinge"
        return est, loss, isinstance(est, (KernelLapRLSClassifier, KernelLapSVMClassifier))

    def _check_params(self):
        if not (isinstance(self.gamma_R, str) and self.gamma_R == "auto"):
            v = self.gamma_R
            if not is_finite_real(v) or v < 0:
                raise ValueError(f"gamma_R must be 'auto' or a finite number >= 0, got {v!r}.")
        check_tol(self)
        check_positive_int(self, "max_iter")
        check_verbose(self)
        check_graph_param(self)

    def fit(self, X, y):
        """Fit on labeled and unlabeled rows (``y == estimator.unlabeled`` marks unlabeled).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        t_start = time.perf_counter()
        self._check_params()
        base, loss, kernel = self._base()
        check_tol(base)  # before the search (and before it is loosened)
        if isinstance(base.gamma_I, str) and base.gamma_I != "scaled":
            raise ValueError(f"EMRClassifier needs its estimator's gamma_I to be a "
                             f"number or 'scaled', not {base.gamma_I!r}.")
        if not isinstance(base.gamma_I, str) and base.gamma_I == 0:
            raise ValueError("EMRClassifier needs its estimator's gamma_I > 0: with no "
                             "graph term the candidates' weights mu have nothing to weigh.")
        check_in_memory(self, X)
        X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                          ensure_min_samples=2)
        y = column_or_1d(y, warn=True)
        check_consistent_length(X, y)
        labeled, _, _, y_idx = base._check_labels(y)  # the base's own label rules
        check_labeled_nonempty(nonempty_rows(X), labeled)
        n_classes = int(y_idx.max()) + 1
        T = pm1_targets(y_idx, n_classes)
        n = X.shape[0]
        t0 = time.perf_counter()
        spec = DEFAULT_CANDIDATES if self.candidates is None else self.candidates
        graphs, t_search = candidate_graphs(X, spec, self.graph)
        t_graphs = time.perf_counter() - t0 - t_search
        m = len(graphs)
        parts = _group_parts(graphs)
        steps = [(g.laplacian_matvec, pairs) for g, pairs in parts]
        scales = np.array([g.scale_ for g in graphs])

        est = clone(base).set_params(warm_start=True)
        if isinstance(est, LinearLapClassifier):  # before 'scaled' γ_A, γ_I become numbers
            est._check_row_norms(row_squared_norms(X))
            est._warn_few_unlabeled(n, labeled.size)
        if isinstance(est.gamma_I, str):  # one γ_I for every alternation
            est.set_params(gamma_I=scaled_gamma_I(labeled.size, n_classes))
        if isinstance(est.gamma_A, str):  # the only name a base's gamma_A takes
            est.set_params(gamma_A=scaled_gamma_A(labeled.size, n_classes))
        gamma_A, gamma_I = float(est.gamma_A), float(est.gamma_I)
        base_tol, base_max_iter = est.tol, est.max_iter
        # loosened while μ moves, but not so far that μ stalls (LOOSE_TOL_MAX) — tighter
        # than the base's own tol when that is looser
        loose_tol = min(LOOSE_TOL_FACTOR * base_tol, LOOSE_TOL_MAX)
        # a LapRLS base's steps after the first while μ moves are partial CG runs by
        # design (not counted as unconverged); not with a class balance, whose two CG
        # columns combine into a descent step only once solved
        from .linear import LapRLSClassifier  # as in _base
        capped = isinstance(est, LapRLSClassifier) and est.class_prior is None
        first_tol = min(FIRST_STEP_TOL_FACTOR * loose_tol, FIRST_STEP_TOL_MAX)
        fit_state = {}

        def decision_train(e):
            F = e.decision_function(X)
            return np.asarray(F, dtype=np.float64).reshape(n, -1)

        def solve_f(mu, previous, final):
            e = est
            # loose while μ moves (S_k to a few digits suffices), the base's own at the end
            partial = capped and previous is not None and not final
            if final:
                tol, max_iter = base_tol, base_max_iter
            elif partial:
                tol, max_iter = loose_tol, min(MOVING_STEP_CG_ITER, base_max_iter)
            elif capped:  # the first step: γ_R 'auto' and the first μ step read it
                tol, max_iter = first_tol, base_max_iter
            else:
                tol, max_iter = loose_tol, base_max_iter
            e.set_params(graph=_EnsembleGraph.build(graphs, mu * scales, parts), tol=tol,
                         max_iter=max_iter)
            with warnings.catch_warnings(record=not final) as caught:
                warnings.filterwarnings("ignore", message=ROW_NORM_WARNING)  # checked above
                if not final:  # recorded even under an "error" filter: EMR reports them
                    warnings.simplefilter("always", ConvergenceWarning)
                e.fit(X, y)
            if not final:  # unconverged steps said once, after the loop, at EMR's tol
                unconverged = [issubclass(w.category, ConvergenceWarning) for w in caught]
                if not partial and any(unconverged):
                    fit_state.setdefault("unconverged", []).append(tol)
                for w, skip in zip(caught, unconverged):
                    if not skip:
                        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            F = decision_train(e)
            O = F[labeled]
            if loss == "squared":
                V = (T - O) ** 2
            elif loss == "squared_hinge":
                V = np.maximum(0.0, 1.0 - T * O) ** 2
            else:
                V = np.maximum(0.0, 1.0 - T * O)
            if kernel:
                ambient = np.sum(e.dual_coef_.T * (F - e.intercept_))
            else:
                ambient = np.sum(e.coef_ * e.coef_)
            fit_state["F"] = F
            return e, float(V.sum() / labeled.size + gamma_A * ambient)

        def smoothness(e):
            return gamma_I * scales * laplacian_quadratic_forms(steps, m, fit_state["F"])

        def is_minimiser(e):  # early stopping ends a PCG fit short of the minimiser
            return getattr(e, "stop_reason_", None) not in EARLY_STOP_REASONS

        def report(it, mu, J):
            print(f"[EMR] iteration {it}: J = {J:.6g}, mu = {np.round(mu, 3)}",
                  file=sys.stderr)

        t0 = time.perf_counter()
        gamma_R = self.gamma_R if isinstance(self.gamma_R, str) else float(self.gamma_R)
        res = emr_alternate(solve_f, smoothness, m, gamma_R=gamma_R, tol=self.tol,
                            max_iter=self.max_iter,
                            callback=report if self.verbose else None,
                            is_minimiser=is_minimiser if kernel else None,
                            # a base tol looser than loose_tol: loose steps again
                            stay_final=base_tol <= loose_tol)
        t_fits = time.perf_counter() - t0
        problems = []  # one warning for both
        if fit_state.get("unconverged"):
            tols = ", ".join(f"{t:g}" for t in sorted(set(fit_state["unconverged"])))
            problems.append(
                f"{len(fit_state['unconverged'])} of its f steps while mu moved did not "
                f"converge to their tol={tols} (min({LOOSE_TOL_FACTOR} x the estimator's "
                f"tol, {LOOSE_TOL_MAX:g}){f'; the first {first_tol:g}' if capped else ''}) "
                f"within the estimator's max_iter={est.max_iter}: increase the estimator's "
                f"max_iter")
        if not res.converged:
            problems.append(f"it stopped at max_iter={self.max_iter} f steps before its "
                            f"rule (tol={self.tol:g}) was met: increase EMRClassifier's "
                            f"max_iter")
        if problems:
            warnings.warn(f"EMR: {'; '.join(problems)}. mu (now "
                          f"{np.array2string(res.mu, precision=3)}) may be inaccurate.",
                          ConvergenceWarning, stacklevel=2)
        est = res.solution
        est.set_params(warm_start=base.warm_start)  # its last f step was at base_tol
        self.estimator_ = est
        self.graphs_ = graphs
        self.mu_ = res.mu
        self.smoothness_ = res.smoothness
        self.objective_ = res.objective
        self.gamma_R_ = res.gamma_R
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.classes_ = est.classes_
        self.transduction_ = est.transduction_
        self.graph_ = est.graph_
        if not kernel:
            self.coef_ = est.coef_
            self.intercept_ = est.intercept_
        else:  # a refit with a kernel base forgets an earlier linear fit's weights
            self.__dict__.pop("coef_", None)
            self.__dict__.pop("intercept_", None)
        self.fit_time_ = {"search": t_search, "graphs": t_graphs, "fits": t_fits,
                          "total": time.perf_counter() - t_start}
        return self

    def decision_function(self, X):
        """Decision values of the base estimator fitted with the learned graph."""
        check_is_fitted(self, "estimator_")
        return self.estimator_.decision_function(check_predict_X(self, X))

    def predict(self, X):
        """Class labels of X."""
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict(check_predict_X(self, X))

    def score(self, X, y, sample_weight=None):
        """Mean accuracy on the labeled rows of ``y`` (rows equal to the estimator's
        ``unlabeled`` marker are left out; see :func:`linlap.estimators.labeled_score`)."""
        check_is_fitted(self, "estimator_")
        return labeled_score(self, X, y, self.estimator_.unlabeled, sample_weight)
