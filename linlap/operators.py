"""The linear operators of manifold-regularised least squares (DESIGN.md §2).

The linear models here minimise, over ``z = [w; b]``,

    J(w, b) = (1/l) Σ_{i ∈ labeled} V(y_i, f_i) + γ_A ‖w‖² + γ_I s fᵀ L^p f,
    f = X w + b,    s = 1 / trace(L).

For the squared loss on a set of rows ``R`` (all labeled rows for LapRLS, the
active set for the finite Newton LapSVM), ``l · J`` is a quadratic whose Hessian / 2
is

    A z = X̃_Rᵀ X̃_R z + γ_A l [w; 0] + γ_I s l X̃ᵀ L^p X̃ z,     X̃ = [X, 1].

:class:`NormalOperator` applies ``A`` to a block of vectors without ever forming
``XᵀLX``: one pass over X to get ``f = X W + b``, ``p`` graph matvecs, one pass
over Xᵀ — O(n (d̄ + p k)) per product, for all columns at once. With a per-column
``mask`` the loss rows may differ by column (one finite Newton active set per class)
while the columns still share every pass.
"""

import numpy as np

__all__ = ["NormalOperator", "augmented_rows_T"]


def augmented_rows_T(X, U, fit_intercept):
    """Return ``X̃ᵀ U`` with ``X̃ = [X, 1]`` (or ``X`` alone), without densifying X."""
    XtU = X.T @ U
    XtU = np.asarray(XtU)
    if not fit_intercept:
        return XtU
    return np.vstack([XtU, U.sum(axis=0, keepdims=True)])


class NormalOperator:
    """``A`` of the l-scaled normal equations of manifold-regularised least squares.

    Parameters
    ----------
    X : sparse matrix (CSR) or ndarray of shape (n, d)
        All training rows (labeled and unlabeled).
    rows : ndarray of int
        Rows that carry the squared loss (labeled rows, or the active set).
    laplacian_matvec : callable
        ``laplacian_matvec(F)`` returns ``L^p F`` for F of shape (n, k).
    alpha : float
        ``γ_A · l``, the weight of ``‖w‖²`` (the bias is not penalised).
    beta : float
        ``γ_I · s · l``, the weight of ``fᵀ L^p f``.
    fit_intercept : bool
        Whether ``z`` carries a bias as its last entry.
    row_weights : ndarray of shape (len(rows),), optional
        Per-row weights of the loss (all ones when omitted).
    mask : ndarray of shape (len(rows), k), optional
        Per-column 0/1 (or any non-negative) weights of the loss rows, multiplying
        ``row_weights``: column ``j`` of a block is the system whose loss rows are
        ``rows[mask[:, j mod k] != 0]``. This lets systems whose loss rows differ
        (one finite Newton active set per class) share every pass over X and the
        graph; a block must then have a multiple of k columns (e.g. k classes, or
        2k: classes plus their class-balance columns).
    """

    def __init__(self, X, rows, laplacian_matvec, *, alpha, beta, fit_intercept=True,
                 row_weights=None, mask=None):
        self.X = X
        self.rows = np.asarray(rows, dtype=np.intp)
        self.laplacian_matvec = laplacian_matvec
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.fit_intercept = bool(fit_intercept)
        self.row_weights = None if row_weights is None else np.asarray(row_weights, float)
        self.mask = None
        if mask is not None:
            self.mask = np.asarray(mask, dtype=np.float64)
            if self.mask.ndim != 2 or self.mask.shape[0] != self.rows.size:
                raise ValueError(f"mask must have shape (len(rows), k) = ({self.rows.size}, k), "
                                 f"got {self.mask.shape}.")
        self.n_features = X.shape[1]
        self.shape = (self.n_features + self.fit_intercept,) * 2
        self.n_matvec = 0

    def decision(self, Z):
        """``f = X w + b`` for every training row, for each column of Z."""
        d = self.n_features
        F = np.asarray(self.X @ Z[:d])
        if self.fit_intercept:
            F = F + Z[d]
        return F

    def loss_weights(self, n_columns):
        """Weights of the loss rows for a block of ``n_columns`` columns.

        Returns None (all ones), or an array of shape (len(rows), 1) or
        (len(rows), n_columns) that broadcasts against the block's loss rows.
        """
        w = None if self.row_weights is None else self.row_weights[:, None]
        if self.mask is None:
            return w
        k = self.mask.shape[1]
        if n_columns % k:
            raise ValueError(f"A block of {n_columns} columns does not match a mask of {k} "
                             f"columns (column j uses mask column j mod {k}).")
        m = np.tile(self.mask, (1, n_columns // k))
        return m if w is None else m * w

    def apply_to_decision(self, F, Z):
        """``A z`` given ``F = X̃ z`` already computed (saves the forward pass)."""
        U = self.laplacian_matvec(F) * self.beta if self.beta != 0 else np.zeros_like(F)
        w = self.loss_weights(F.shape[1])
        U[self.rows] += F[self.rows] if w is None else F[self.rows] * w
        out = augmented_rows_T(self.X, U, self.fit_intercept)
        out[: self.n_features] += self.alpha * Z[: self.n_features]
        return out

    def matvec(self, Z):
        """``A Z`` for a block Z of shape (d [+1], k) or a vector."""
        vector = Z.ndim == 1
        if vector:
            Z = Z[:, None]
        self.n_matvec += 1
        out = self.apply_to_decision(self.decision(Z), Z)
        return out[:, 0] if vector else out

    __call__ = matvec

    def rhs(self, T):
        """``X̃_Rᵀ T`` for targets T of shape (len(rows), k) (weighted if row weights / mask)."""
        T = np.asarray(T, dtype=np.float64)
        w = self.loss_weights(T.shape[1])
        if w is not None:
            T = T * w
        return augmented_rows_T(self.X[self.rows], T, self.fit_intercept)

    def jacobi(self):
        """Diagonal of the loss and ``γ_A`` parts of ``A`` (a cheap preconditioner).

        Shape (d [+1],), or (d [+1], k) with a per-column ``mask``. The graph part is
        left out: its diagonal would need ``L X`` explicitly.
        """
        Xr = self.X[self.rows]
        Xsq = Xr.multiply(Xr) if hasattr(Xr, "multiply") else Xr * Xr
        w = self.loss_weights(self.mask.shape[1] if self.mask is not None else 1)
        if w is None:
            w = np.ones((self.rows.size, 1))
        diag = np.asarray(Xsq.T @ w) + self.alpha
        if self.fit_intercept:
            diag = np.vstack([diag, np.maximum(w.sum(axis=0, keepdims=True), 1.0)])
        return diag[:, 0] if self.mask is None else diag
