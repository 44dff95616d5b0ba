"""Linear Laplacian RLS by conjugate gradients through Xw (seed 004 §4.1)."""

import numpy as np

from ._problem import (LinearSolution, balance_constraint, check_problem,
                       check_rows_and_targets, check_weights)
from .cg import batched_cg
from .normal_operator import NormalOperator

__all__ = ["laprls_linear"]

#: The objective rule's slack in units of ``tol``: J within ``ENERGY_RTOL · tol · J`` of
#: its minimum (the gap estimated over the CG's last iterations), as finite Newton's rule.
ENERGY_RTOL = 100.0


def laprls_linear(
    X,
    targets,
    labeled_rows,
    laplacian_matvec,
    *,
    gamma_A,
    gamma_I,
    scale,
    balance=None,
    unlabeled_rows=None,
    fit_intercept=True,
    tol=1e-6,
    max_iter=1000,
    init=None,
    callback=None,
    base_operator=None,
):
    """Minimise the linear LapRLS objective for one or more target columns.

    For each column ``y`` of ``targets`` this minimises

        J(w, b) = (1/l) Σ_{i∈labeled} (y_i − f_i)² + γ_A ‖w‖² + γ_I s fᵀ L^p f,
        f = X w + b,

    with ``s = scale`` (linlap uses ``s = 1/trace(L)``), by CG on the (d+1)-square
    normal equations ``A z = X̃_lᵀ y`` (:class:`~linlap.solvers.normal_operator.NormalOperator`),
    all columns in one batched solve.

    With ``balance`` (the class-balance constraint, docs/design.md) the minimiser is
    taken subject to ``(1/u) Σ_{i∈U} f_i = r`` per column: solve ``A z₁ = c`` as one
    more column of the same solve and set ``z = z₀ + ν z₁`` with
    ``ν = (r − cᵀz₀)/(cᵀz₁)``.

    Parameters
    ----------
    X : sparse matrix (CSR) or ndarray of shape (n, d)
    targets : ndarray of shape (l, k)
        Targets of the labeled rows (±1 for classification).
    labeled_rows : ndarray of int, shape (l,)
    laplacian_matvec : callable
        ``F ↦ L^p F`` for F of shape (n, k).
    gamma_A, gamma_I : float
        Ambient and intrinsic regularisation weights (≥ 0).
    scale : float
        ``s``, the normalisation of the graph term.
    balance : ndarray of shape (k,), optional
        Wanted mean decision value ``r`` over the unlabeled rows, per column.
    unlabeled_rows : ndarray of int, optional
        Required with ``balance``.
    fit_intercept : bool, default=True
        Fit an unpenalised bias.
    tol, max_iter : float, int
        CG stopping rule and iteration cap: the relative residual below ``tol``, and the
        decrease of J over the last 10 CG iterations (an estimate of J − J*, see
        :func:`~linlap.solvers.cg.batched_cg`'s ``energy_rtol``) below
        ``ENERGY_RTOL · tol · J`` (``ENERGY_RTOL`` = 100).
    init : LinearSolution, optional
        Previous solution to start from (warm start).
    callback : callable, optional
        ``callback(iteration, residual)`` after each CG iteration.
    base_operator : operator, optional
        X behind an operator with NormalOperator's products (``n_samples``,
        ``n_features``, ``with_loss(rows, mask, alpha=, beta=)``, ``row_mean(rows)``,
        e.g. :class:`linlap.distributed.DistributedNormalOperator`); X is then unused.

    Returns
    -------
    LinearSolution
    """
    if base_operator is None:
        targets, labeled_rows = check_problem(X, targets, labeled_rows, gamma_A=gamma_A,
                                              gamma_I=gamma_I, scale=scale, pm1=False)
    else:  # X lives behind the operator (linlap.distributed): check the rest alike
        targets, labeled_rows = check_rows_and_targets(base_operator.n_samples, targets,
                                                       labeled_rows)
        if not np.all(np.isfinite(targets)):
            raise ValueError("targets must be finite.")
        check_weights(gamma_A, gamma_I, scale)
    if gamma_A == 0 and gamma_I == 0:
        raise ValueError("gamma_A and gamma_I cannot both be 0.")
    if not tol > 0 or max_iter < 1:
        raise ValueError("tol must be > 0 and max_iter >= 1.")
    if gamma_I > 0 and not callable(laplacian_matvec):
        raise ValueError("laplacian_matvec must be a callable F -> L^p F when gamma_I > 0.")
    l, k = targets.shape
    if base_operator is None:
        op = NormalOperator(X, labeled_rows, laplacian_matvec, alpha=gamma_A * l,
                            beta=gamma_I * scale * l, fit_intercept=fit_intercept)
    else:
        op = base_operator.with_loss(labeled_rows, alpha=gamma_A * l,
                                     beta=gamma_I * scale * l)
    B = op.rhs(targets)
    if balance is not None:
        r, c = balance_constraint(X, balance, unlabeled_rows, k, fit_intercept,
                                  base_operator)
        B = np.hstack([B, c[:, None]])

    Z0 = None
    if init is not None:
        Z0 = init.state.get("Z")
        if Z0 is not None and Z0.shape != B.shape:
            Z0 = None
    # l J = ‖y‖² + 2φ(z) per target column (φ the CG's quadratic): stop on the objective
    # too, not on the residual alone (see tol)
    offset = np.sum(targets * targets, axis=0)
    if balance is not None:
        offset = np.append(offset, 0.0)
    Z, info = batched_cg(op.matvec, B, Z0, tol=tol, max_iter=max_iter, callback=callback,
                         name="LapRLS conjugate gradients", energy_rtol=ENERGY_RTOL * tol,
                         energy_offset=offset)
    state = {"Z": Z.copy()}
    if balance is not None:
        Z0_, z1 = Z[:, :k], Z[:, k]
        nu = (r - c @ Z0_) / (c @ z1)
        Z = Z0_ + np.outer(z1, nu)
    F = op.decision(Z)
    d = Z.shape[0] - bool(fit_intercept)
    coef = Z[:d].T.copy()
    intercept = Z[d].copy() if fit_intercept else np.zeros(k)
    return LinearSolution(coef, intercept, F, info.n_iter, float(info.residual.max()),
                          bool(info.converged.all()), state, info.history)
