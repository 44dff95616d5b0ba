"""What every solver shares: input checks, ±1 targets, the solution record, the
class-balance constraint's gradient and the bias probe of the graph term.

Solvers take labeled row indices and ±1 target columns (one per one-vs-rest class);
parsing labels and markers is the estimators' job.
"""

import numpy as np
import scipy.sparse as sp

from .._validation import is_finite_number

__all__ = ["LinearSolution", "check_rows_and_targets", "check_weights", "check_problem",
           "unlabeled_mean", "unlabeled_weights", "balance_constraint", "rows_transpose_product", "pm1_targets", "predict_index",
           "laplacian_of_ones"]

#: L^p 1 counts as zero (bias free of the graph term) below this fraction of
#: ‖L^p r‖ for a random ±1 vector r of the same norm: only round-off is left then.
BIAS_FREE_RTOL = 1e-9


def check_rows_and_targets(n, targets, labeled_rows, allow_repeats=False):
    """Validate labeled row indices into n rows and their (l,) or (l, k) targets.

    ``allow_repeats``: a row may carry several losses (row-weighted problems).
    """
    T = np.asarray(targets, dtype=np.float64)
    if T.ndim == 1:
        T = T[:, None]
    rows = np.asarray(labeled_rows)
    if rows.ndim != 1 or rows.size == 0 or not np.issubdtype(rows.dtype, np.integer):
        raise ValueError("labeled_rows must be a non-empty 1-D array of row indices.")
    rows = rows.astype(np.intp)
    if rows.min() < 0 or rows.max() >= n or (not allow_repeats
                                              and np.unique(rows).size != rows.size):
        raise ValueError(f"labeled_rows must be distinct indices in [0, {n}).")
    if T.ndim != 2 or T.shape[0] != rows.size:
        raise ValueError(f"targets must have shape (len(labeled_rows), k) = ({rows.size}, k), "
                         f"got {np.shape(targets)}.")
    return T, rows


def check_weights(gamma_A, gamma_I, scale):
    """γ_A, γ_I finite and >= 0; the graph scale s finite and >= 0 when γ_I > 0 (s = 0:
    a graph without edges, whose term vanishes)."""
    for name, v in (("gamma_A", gamma_A), ("gamma_I", gamma_I)):
        if not is_finite_number(v) or v < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {v!r}.")
    if gamma_I > 0 and not (is_finite_number(scale) and scale >= 0):
        raise ValueError(f"scale must be a finite number >= 0 (0: a graph without edges), "
                         f"got {scale!r}.")


def check_problem(X, targets, labeled_rows, *, gamma_A, gamma_I, scale, pm1=True,
                  allow_repeats=False):
    """Validate the common inputs; return targets as (l, k) float and the row indices.

    ``pm1``: the targets must be ±1 (the SVM losses); otherwise any finite values.
    """
    if not (sp.issparse(X) or isinstance(X, np.ndarray)) or X.ndim != 2:
        raise ValueError("X must be a 2-D ndarray or scipy sparse matrix.")
    T, rows = check_rows_and_targets(X.shape[0], targets, labeled_rows, allow_repeats)
    if pm1 and not np.all(np.abs(T) == 1):
        raise ValueError("targets of the SVM losses must be +1 or -1.")
    if not np.all(np.isfinite(T)):
        raise ValueError("targets must be finite.")
    check_weights(gamma_A, gamma_I, scale)
    return T, rows


class LinearSolution:
    """Result of a linear solver.

    Attributes
    ----------
    coef : ndarray of shape (n_columns, d)
    intercept : ndarray of shape (n_columns,)
    decision : ndarray of shape (n, n_columns)
        ``f = X w + b`` on every training row.
    n_iter : int
        Iterations of the solver (CG iterations for LapRLS).
    residual : float
        Final relative residual (largest over columns).
    converged : bool
    state : dict
        What a warm start needs (e.g. the constraint column's solution).
    history : list of float
        Per-iteration residuals (or objective values).
    """

    def __init__(self, coef, intercept, decision, n_iter, residual, converged, state=None,
                 history=None):
        self.coef = coef
        self.intercept = intercept
        self.decision = decision
        self.n_iter = n_iter
        self.residual = residual
        self.converged = converged
        self.state = state or {}
        self.history = history or []


def unlabeled_weights(n, unlabeled_rows):
    """The n-vector v with ``vᵀf = (1/u) Σ_{i∈U} f_i``: each of the u indices of U adds
    1/u to its row (a repeated index counts each time)."""
    rows = np.asarray(unlabeled_rows)
    if rows.ndim != 1 or not np.issubdtype(rows.dtype, np.integer):
        raise ValueError("unlabeled_rows must be a 1-D array of row indices.")
    u = rows.size
    if u and (rows.min() < 0 or rows.max() >= n):
        raise ValueError(f"unlabeled_rows must be indices in [0, {n}).")
    return np.bincount(rows.astype(np.intp), minlength=n) * (1.0 / u)


def unlabeled_mean(X, unlabeled_rows, fit_intercept=True):
    """Gradient ``c`` of the class-balance constraint ``(1/u) Σ_{i∈U} f_i = r``.

    ``c = [mean of the unlabeled rows; 1]`` so that ``cᵀ z`` is the mean decision
    value over U. Computed as ``Xᵀ v``, v of :func:`unlabeled_weights`: one pass over
    X (:func:`rows_transpose_product`), never densifying X or copying its rows.
    """
    c = rows_transpose_product(X, unlabeled_weights(X.shape[0], unlabeled_rows))
    return np.append(c, 1.0) if fit_intercept else c


def balance_constraint(X, balance, unlabeled_rows, n_columns, fit_intercept=True,
                       base_operator=None):
    """``(r, c)`` of the class-balance constraint ``cᵀz = r`` per target column: r the
    checked ``balance`` (finite, one value per column), c :func:`unlabeled_mean` (or the
    operator's ``row_mean`` when X lives behind ``base_operator``)."""
    if unlabeled_rows is None or len(unlabeled_rows) == 0:
        raise ValueError("balance needs a non-empty unlabeled_rows.")
    r = np.asarray(balance, dtype=np.float64).ravel()
    if r.shape != (n_columns,):
        raise ValueError(f"balance must have one value per target column ({n_columns}).")
    if not np.all(np.isfinite(r)):
        raise ValueError(f"balance must be finite, got {r!r}.")
    c = (unlabeled_mean(X, unlabeled_rows, fit_intercept) if base_operator is None
         else base_operator.row_mean(unlabeled_rows))
    return r, c


def rows_transpose_product(X, v):
    """``Xᵀ v`` of shape (d,) for a float64 vector v over the n rows of X.

    For a CSR X with float32 or float64 values: one threaded numba pass over its
    arrays, read in their own dtype (no transposed or float64 copy; the rows where
    ``v`` is 0 are skipped), sums in float64 — the kernel of the solvers' ``Xᵀ U``
    passes. Other inputs: numpy / scipy.
    """
    from .normal_operator import _is_fast_csr, row_block_bounds

    v = np.ascontiguousarray(v, dtype=np.float64)
    if not _is_fast_csr(X):
        return np.asarray(X.T @ v, dtype=np.float64).ravel()
    from .._numba.csr import csr_rmatmat_blocks

    d = X.shape[1]
    bounds = row_block_bounds(X, 1)
    nb = bounds.size - 1
    buf, colsum = np.empty((nb, d, 1)), np.empty((nb, 1))
    csr_rmatmat_blocks(X.indptr, X.indices, X.data, v.reshape(-1, 1), bounds, buf, colsum,
                       work=X.nnz)
    return buf[:, :, 0].sum(axis=0)


def pm1_targets(y_idx, n_classes):
    """±1 target columns from class indices: one column (class 1 positive) for two
    classes, else one one-vs-rest column per class."""
    y_idx = np.asarray(y_idx)
    if n_classes == 2:
        return np.where(y_idx == 1, 1.0, -1.0)[:, None]
    T = np.full((y_idx.size, n_classes), -1.0)
    T[np.arange(y_idx.size), y_idx] = 1.0
    return T


def predict_index(F):
    """Class indices from decision values ``F[..., columns]``: the sign of one column
    (1 if > 0), else the argmax over the one-vs-rest columns."""
    F = np.asarray(F)
    if F.shape[-1] == 1:
        return (F[..., 0] > 0).astype(np.intp)
    return F.argmax(axis=-1)


def laplacian_of_ones(laplacian_matvec, n):
    """``(L^p 1, bias_free)``: whether the graph term leaves the bias free.

    ``L^p 1`` is compared with ``L^p r`` for a random ±1 vector r of the same norm, which
    tells a structural zero (the unnormalised Laplacian has ``L 1 = 0``) from round-off.
    """
    probe = np.column_stack([np.ones(n), np.random.default_rng(0).choice([-1.0, 1.0], n)])
    L = np.asarray(laplacian_matvec(probe))
    return L[:, 0].copy(), bool(np.linalg.norm(L[:, 0]) <= BIAS_FREE_RTOL
                                * np.linalg.norm(L[:, 1]))
