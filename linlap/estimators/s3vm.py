"""Laplacian S³VM estimator: manifold regularisation plus low-density separation."""

import numpy as np

from .._validation import check_nonnegative
from ..solvers.s3vm import s3vm_annealing, s3vm_switching
from ._base import LinearLapClassifier, store_params

__all__ = ["LapS3VMClassifier"]


class LapS3VMClassifier(LinearLapClassifier):
    """Linear Laplacian semi-supervised SVM (graph term plus low-density separation).

    Fits ``f(x) = w·x + b`` on labeled and unlabeled rows by minimising, per class
    (one-vs-rest, ±1 targets; a single column for binary problems),

        J(w, b) = (1/l) Σ_{i labeled} V(y_i f_i) + γ_A ‖w‖² + γ_I s fᵀ L^p f
                  + (γ_U/u) Σ_{j unlabeled} V(ŷ_j f_j)

    over ``w, b`` and the unknown labels ``ŷ_j = ±1`` of the u unlabeled rows, with
    ``V(t) = max(0, 1 − t)²`` the squared hinge, ``L^p`` and ``s = 1/trace(L)`` as in
    :class:`~linlap.LapSVMClassifier`, and the class balance: a proportion π of the
    unlabeled rows labelled positive (``class_prior``). The graph keeps f smooth
    along the data; the unlabeled term pushes the boundary out of dense regions.
    ``gamma_I=0`` is the linear transductive / semi-supervised SVM of SVMlin;
    ``gamma_U=0`` is LapSVM.

    Parameters
    ----------
    gamma_A : float, default=1e-3
        Weight γ_A of ``‖w‖²``.
    gamma_I : float, default=1.0
        Weight γ_I of the graph smoothness penalty (0: no graph term; the graph is
        still built unless one is given).
    gamma_U : float, default=1.0
        Weight γ_U of the unlabeled loss. The defaults (γ_A, γ_I, γ_U) = (1e-3, 1, 1)
        are within 0.1 point of the smallest validation error of a 3 × 4 × 4 grid on
        PCMAC's training split (70/30 cut, 50 labels, 10 draws,
        ``class_prior='predicted'``; ``bench/s3vm.py --select --class-prior predicted``;
        15.6 % against 15.5 % for (1e-2, 10, 10)).
    solver : {'annealing', 'switching'}, default='annealing'
        'annealing': deterministic annealing (Sindhwani & Keerthi 2006) — soft labels
        ``p_j`` with an entropy term at temperature T, from T = γ_U divided by 1.5
        per step until the labels are nearly hard; each step alternates closed-form
        labels with a row-weighted finite Newton LapSVM solve, warm-started
        (:func:`linlap.solvers.s3vm.s3vm_annealing`). 'switching': multi-switch
        label swapping with γ_U raised from γ_U/100 by 1.5 per stage
        (:func:`linlap.solvers.s3vm.s3vm_switching`), usually cheaper.
    graph : KNNGraph or None, default=None
        As in :class:`~linlap.LapRLSClassifier`.
    class_prior : 'predicted', 'labeled', array-like or dict, default='predicted'
        Proportions π of the classes among the unlabeled rows (per one-vs-rest column).
        'predicted', two classes: estimated from the decision values ``g_j`` on the u
        unlabeled rows of one extra LapSVM fit on the labeled rows with the same
        γ_I and graph and γ_A / 10 (none if γ_A = 0),

            π = ½ [(1 + (1/u) Σ_j clip(g_j, −1, 1)) / 2 + (1/u) #{j : g_j > t}],

        t the two-means threshold of the g_j (1-D k-means with two clusters,
        Lloyd's iteration from the mean), clipped to ``[1/u, 1 − 1/u]``
        (:func:`linlap.solvers.s3vm.blend_fraction`): the mean of the clipped-mean
        estimate (the squared hinge's pointwise minimiser is
        ``f = 2 P(y = 1 | x) − 1``) and the share of the upper of two clusters of g.
        With ``gamma_I=0`` (two classes), and for three or more classes: from the
        start's decision values ``f_j`` (the initial LapSVM of the annealing or
        switching, no extra fit), ``π = (1 + (1/u) Σ_j clip(f_j, −1, 1)) / 2`` per
        one-vs-rest column (with three or more classes divided by the sum over the
        classes), clipped to ``[1/u, 1 − 1/u]``
        (:func:`linlap.solvers.s3vm.start_fraction`) — without the graph the decision
        values have a single peak, the two-means split is unreliable, and the blend's
        error in π was measured larger than this clipped mean's (bench/RESULTS.md,
        S³VM section).
        'labeled': the labeled rows' class proportions. Otherwise
        proportions in the order of ``classes_`` (or a dict class → proportion); every
        proportion must lie strictly between 0 and 1.
    unlabeled : object, default=-1
        Marker of unlabeled rows in ``y``.
    fit_intercept : bool, default=True
    tol : float, default=1e-4
        Tolerance of every finite Newton solve (as in LapSVMClassifier).
    max_iter : int, default=50
        Newton steps per solve.
    warm_start : bool, default=False
        Start the initial LapSVM solve from the previous fit's solution. That solve stops
        at ``tol``, a little away from the cold start's point, and the S³VM objective is
        not convex: the annealing may then end at another local minimum (a refit of the
        same data can differ from a cold fit).
    verbose : int, default=0

    Attributes
    ----------
    classes_, coef_, intercept_, transduction_, graph_, n_features_in_
        As in :class:`~linlap.LapRLSClassifier`.
    n_iter_ : int
        Temperatures (annealing) or γ_U stages (switching) visited.
    unlabeled_labels_ : ndarray of shape (u, 1) or (u, n_classes)
        Final probability that each unlabeled row (in row order) is in the positive
        class of each one-vs-rest column (0/1 for 'switching').
    positive_fraction_ : ndarray of shape (1,) or (n_classes,)
        The proportion π of positive unlabeled rows the fit kept, per one-vs-rest
        column (the estimate with ``class_prior='predicted'``).
    n_solves_ : int
        Finite Newton solves of the last fit (the initial LapSVM and, with
        ``class_prior='predicted'`` on two classes and ``gamma_I > 0``, the estimate's
        fit included).
    """

    def __init__(self, gamma_A=1e-3, gamma_I=1.0, gamma_U=1.0, *, solver="annealing",
                 graph=None, class_prior="predicted", unlabeled=-1, fit_intercept=True,
                 tol=1e-4, max_iter=50, warm_start=False, verbose=0):
        store_params(self, locals())

    def _check_params(self):
        super()._check_params()
        check_nonnegative(self, "gamma_U")
        if self.solver not in ("annealing", "switching"):
            raise ValueError(f"solver must be 'annealing' or 'switching', got {self.solver!r}.")
        if self.class_prior is None:
            raise ValueError("LapS3VMClassifier needs a class balance: class_prior must be "
                             "'predicted', 'labeled' or class proportions, not None.")

    def _balance_targets(self, classes, y_idx, n_unlabeled):
        if n_unlabeled == 0:
            raise ValueError(f"LapS3VMClassifier needs unlabeled rows (y == "
                             f"{self.unlabeled!r}) for its unlabeled loss and class balance, "
                             f"but every row of y is labeled; LapSVMClassifier fits labeled "
                             f"rows alone.")
        if isinstance(self.class_prior, str) and self.class_prior == "predicted":
            if n_unlabeled < 2:
                raise ValueError("class_prior='predicted' estimates the class balance of the "
                                 "unlabeled rows and needs at least 2 of them, got 1; pass "
                                 "the class proportions instead.")
            return "predicted"
        if isinstance(self.class_prior, str) and self.class_prior != "labeled":
            raise ValueError(f"class_prior must be 'predicted', 'labeled' or class "
                             f"proportions, got {self.class_prior!r}.")
        return super()._balance_targets(classes, y_idx, n_unlabeled)

    def _solve(self, X, targets, labeled_rows, unlabeled_rows, graph, balance, init):
        if isinstance(balance, str):
            if targets.shape[1] > 1:
                pi = "start-classes"
            else:  # graph-free decision values have one peak: no two-means split
                pi = "blend" if self.gamma_I > 0 else "start"
        else:
            pi = (np.asarray(balance, dtype=np.float64) + 1.0) / 2.0
            if not np.all((pi > 0) & (pi < 1)):
                raise ValueError(f"class_prior must give every class a proportion strictly "
                                 f"between 0 and 1, got {self.class_prior!r}.")
        solve = s3vm_annealing if self.solver == "annealing" else s3vm_switching
        report = self._progress_callback("LapS3VM", "temperature" if self.solver == "annealing"
                                         else "gamma_U", every=1)
        sol = solve(
            X, targets, labeled_rows, unlabeled_rows,
            graph.laplacian_matvec if self.gamma_I > 0 else None,
            gamma_A=self.gamma_A_, gamma_I=self.gamma_I, gamma_U=self.gamma_U,
            scale=graph.scale_, positive_fraction=pi, fit_intercept=self.fit_intercept,
            tol=self.tol, max_iter=self.max_iter, init=init, callback=report,
        )
        self.unlabeled_labels_ = sol.state["P"]
        self.positive_fraction_ = sol.state["positive_fraction"]
        self.n_solves_ = sol.state["n_solves"]
        return sol
