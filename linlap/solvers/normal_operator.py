"""The linear operators of manifold-regularised least squares (docs/design.md).

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

Implementation: for a CSR ``X`` (float32 or float64 values, int32 or int64
indices) every pass is a parallel numba kernel of :mod:`linlap._numba.csr` writing
into buffers the operator allocates once — ``X W + b`` parallel over rows, ``Xᵀ U``
by per-thread accumulation over row blocks (no transpose copy of X), the graph
passes through ``laplacian_matvec(F, out=, work=)`` when the callable accepts them
(:meth:`linlap.KNNGraph.laplacian_matvec` does) — so ``matvec(Z, out=...)``
allocates no array. Precision: X is read in its own dtype (float32 X is never
upcast); every sum, the decision values, the graph vectors and the result are
float64 (the CG iterates stay accurate; only the storage of X is halved).
Dense or non-CSR sparse X use plain numpy/scipy products (small problems).
"""

import inspect

import numpy as np
import scipy.sparse as sp

__all__ = ["NormalOperator", "augmented_rows_T", "check_block", "select_loss_weights"]

#: Bytes the per-thread (d, c) buffers of ``Xᵀ U`` may take together before fewer
#: row blocks than threads are used.
BLOCK_MEMORY = 2**28
_EMPTY = np.empty(0)


def row_block_bounds(X, n_columns, n_blocks=None):
    """Row-block boundaries of a CSR X for the threaded ``Xᵀ U`` kernel (one block per
    thread, fewer when the per-block d × n_columns sums would exceed ``BLOCK_MEMORY``)."""
    from numba import get_num_threads

    from .._numba.csr import row_blocks

    nb = n_blocks if n_blocks is not None else get_num_threads()
    nb = max(1, min(int(nb), BLOCK_MEMORY // max(1, X.shape[1] * n_columns * 8)))
    return row_blocks(X.indptr, nb)


def augmented_rows_T(X, U, fit_intercept):
    """Return ``X̃ᵀ U`` with ``X̃ = [X, 1]`` (or ``X`` alone), without densifying X."""
    XtU = X.T @ U
    XtU = np.asarray(XtU)
    if not fit_intercept:
        return XtU
    return np.vstack([XtU, U.sum(axis=0, keepdims=True)])


def accepts_keyword(func, name):
    """Whether ``func`` takes a keyword argument called ``name`` (explicitly)."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    p = params.get(name)
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


def check_block(Z, m):
    """Z as an array of shape (m,) or (m, k) (a block of iterates of an m × m operator)."""
    Z = np.asarray(Z)
    if Z.ndim not in (1, 2) or Z.shape[0] != m:
        raise ValueError(f"Z must have shape ({m},) or ({m}, k), got {Z.shape}.")
    return Z


def select_loss_weights(mask, n_columns, columns=None):
    """The loss-row weights of a block of ``n_columns`` columns: None (every row counts
    once), the whole ``mask``, or its ``columns``."""
    if mask is None:
        return None
    if columns is not None:
        return mask[:, np.asarray(columns, dtype=np.intp)]
    if n_columns != mask.shape[1]:
        raise ValueError(f"A block of {n_columns} columns needs `columns` to pick from a "
                         f"mask of {mask.shape[1]} columns.")
    return mask


def _is_fast_csr(X):
    return (sp.issparse(X) and X.format == "csr" and X.dtype in (np.float32, np.float64)
            and X.indices.dtype == X.indptr.dtype)


class NormalOperator:
    """``A`` of the l-scaled normal equations of manifold-regularised least squares.

    Parameters
    ----------
    X : sparse matrix (CSR) or ndarray of shape (n, d)
        All training rows (labeled and unlabeled). A float32 CSR matrix is used
        as is (see the module docstring for what is kept in which precision).
    rows : ndarray of int
        Rows that carry the squared loss (labeled rows, or the active set). A row
        may repeat (each occurrence adds its own, mask-weighted, loss term).
    laplacian_matvec : callable or None
        ``laplacian_matvec(F)`` returns ``L^p F`` for F of shape (n, k); if it
        accepts ``out=`` (and ``work=``, a float64 scratch of ``F.size``
        elements) it is called with the operator's preallocated buffers. May be
        None when ``beta == 0``.
    alpha : float
        ``γ_A · l``, the weight of ``‖w‖²`` (the bias is not penalised).
    beta : float
        ``γ_I · s · l``, the weight of ``fᵀ L^p f``.
    fit_intercept : bool
        Whether ``z`` carries a bias as its last entry.
    mask : ndarray of shape (len(rows), q), optional
        Per-column weights ≥ 0 of the loss rows (0/1 for an active set, real for
        row-weighted losses): the system of mask column ``j`` puts its loss, times
        ``mask[r, j]``, on ``rows[mask[:, j] != 0]``. Systems whose loss rows differ
        (one finite Newton active set per class) thus share every pass over X and
        the graph; ``matvec(Z, columns)`` says which mask column each column of Z
        uses.
    n_blocks : int, optional
        Row blocks of the ``Xᵀ U`` kernel (each has its own (d, c) buffer); default
        the number of numba threads, reduced so the buffers stay within
        ``BLOCK_MEMORY`` bytes.
    keep_products : bool, default=False
        Keep ``X̃ Z`` and ``L^p X̃ Z`` of the last :meth:`matvec` for
        :meth:`last_products` (one more (n, k) buffer and a copy per product).

    Attributes
    ----------
    n_matvec : int
        Products computed so far.
    """

    def __init__(self, X, rows, laplacian_matvec, *, alpha, beta, fit_intercept=True,
                 mask=None, n_blocks=None, keep_products=False):
        if not (sp.issparse(X) or isinstance(X, np.ndarray)) or X.ndim != 2:
            raise ValueError("X must be a 2-D ndarray or scipy sparse matrix.")
        self.X = X
        self.rows = np.asarray(rows, dtype=np.intp)
        self.laplacian_matvec = laplacian_matvec
        self.alpha = float(alpha)
        self.beta = float(beta)
        if self.beta != 0 and not callable(laplacian_matvec):
            raise ValueError("laplacian_matvec must be a callable F -> L^p F when beta != 0.")
        self.fit_intercept = bool(fit_intercept)
        self.mask = None
        if mask is not None:
            self.mask = np.ascontiguousarray(mask, dtype=np.float64)
            if self.mask.ndim != 2 or self.mask.shape[0] != self.rows.size:
                raise ValueError(f"mask must have shape (len(rows), k) = ({self.rows.size}, k), "
                                 f"got {self.mask.shape}.")
        self.n_features = X.shape[1]
        self.shape = (self.n_features + self.fit_intercept,) * 2
        self.n_matvec = 0
        self.n_blocks = n_blocks
        self.keep_products = bool(keep_products)
        self._last_cols = 0
        self._fast = _is_fast_csr(X)
        self._lap_out = callable(laplacian_matvec) and accepts_keyword(laplacian_matvec, "out")
        self._lap_work = self._lap_out and accepts_keyword(laplacian_matvec, "work")
        self._ws = None
        self._cols = 0

    # -- buffers ----------------------------------------------------------------------
    def _workspace(self, c):
        """Views of shape (n, c) etc. into flat buffers allocated for the widest block."""
        if self._ws is None or c > self._cols:
            n, d = self.X.shape
            ws = {"F": np.empty(n * c), "U": np.empty(n * c), "work": np.empty(n * c),
                  "arange": np.arange(c, dtype=np.intp)}
            if self.keep_products and self.beta != 0:
                ws["LF"] = np.empty(n * c)
            if self._fast:
                ws["bounds"] = row_block_bounds(self.X, c, self.n_blocks)
                nb = ws["bounds"].size - 1
                ws["buf"] = np.empty(nb * d * c)
                ws["colsum"] = np.empty(nb * c)
            self._ws, self._cols = ws, c
        return self._ws

    def _view(self, name, *shape):
        return self._ws[name][: int(np.prod(shape))].reshape(shape)

    # -- the passes -------------------------------------------------------------------
    def _forward(self, Z, F):
        """``F = X Z[:d] (+ Z[d])`` into F (n, c)."""
        d = self.n_features
        X = self.X
        if self._fast:
            from .._numba.csr import csr_matmat
            bias = Z[d] if self.fit_intercept else _EMPTY
            csr_matmat(X.indptr, X.indices, X.data, Z[:d], bias, self.fit_intercept, F,
                       work=X.nnz * F.shape[1])
            return F
        if isinstance(X, np.ndarray) and X.dtype == np.float64:
            np.matmul(X, Z[:d], out=F)
        else:
            F[...] = X @ Z[:d]
        if self.fit_intercept:
            F += Z[d]
        return F

    def _apply(self, F, Z, columns, out):
        """``out = A Z`` given ``F = X̃ Z``; F is only read."""
        n, c = F.shape
        ws = self._workspace(c)
        U = self._view("U", n, c)
        coef = self.beta
        if coef != 0:
            if self._lap_work:
                self.laplacian_matvec(F, out=U, work=self._ws["work"])
            elif self._lap_out:
                self.laplacian_matvec(F, out=U)
            else:
                U[...] = self.laplacian_matvec(F)
            if self.keep_products:
                self._view("LF", n, c)[...] = U
            if abs(coef) < 1e-150:  # 1/β below would overflow: scale U instead
                U *= coef
                coef = 1.0
        else:
            U.fill(0.0)
            coef = 1.0
        # U + F_R/β, then β Xᵀ(·): the β of the graph term rides on the Xᵀ reduction
        from .._numba.csr import add_loss_rows
        if self.mask is None:
            add_loss_rows(U, F, self.rows, 1.0 / coef, _EMPTY.reshape(0, 0),
                          ws["arange"][:0], False)
        else:
            if columns is None:
                if c != self.mask.shape[1]:
                    raise ValueError(f"A block of {c} columns needs `columns` to pick from a "
                                     f"mask of {self.mask.shape[1]} columns.")
                columns = ws["arange"][:c]
            columns = np.asarray(columns, dtype=np.intp)
            if columns.shape != (c,):
                raise ValueError(f"columns must name one mask column per column ({c}).")
            add_loss_rows(U, F, self.rows, 1.0 / coef, self.mask, columns, True)
        return self._backward(U, coef, self.alpha, Z, out)

    def _backward(self, U, coef, alpha, Z, out):
        """``out = coef X̃ᵀ U + alpha [Z[:d]; 0]`` for U of shape (n, c)."""
        d = self.n_features
        c = U.shape[1]
        X = self.X
        if self._fast:
            from .._numba.csr import csr_rmatmat_blocks, reduce_blocks
            ws = self._workspace(c)
            nb = ws["bounds"].size - 1
            buf = self._view("buf", nb, d, c)
            colsum = self._view("colsum", nb, c)
            csr_rmatmat_blocks(X.indptr, X.indices, X.data, U, ws["bounds"], buf, colsum,
                               work=X.nnz * c)
            reduce_blocks(buf, nb, colsum, coef, alpha, Z, self.fit_intercept, out,
                          work=nb * d * c)
            return out
        if isinstance(X, np.ndarray) and X.dtype == np.float64:
            np.matmul(X.T, U, out=out[:d])
        else:
            out[:d] = X.T @ U
        out[:d] *= coef
        out[:d] += alpha * Z[:d]
        if self.fit_intercept:
            out[d] = coef * U.sum(axis=0)
        return out

    def _check_block(self, Z):
        return check_block(Z, self.shape[0])

    # -- public -----------------------------------------------------------------------
    def decision(self, Z):
        """``f = X w + b`` for every training row, for each column of Z (a new array)."""
        Z = self._check_block(Z)
        vector = Z.ndim == 1
        Z2 = np.ascontiguousarray(Z.reshape(Z.shape[0], -1), dtype=np.float64)
        F = self._forward(Z2, np.empty((self.X.shape[0], Z2.shape[1])))
        return F[:, 0] if vector else F

    def loss_weights(self, n_columns, columns=None):
        """0/1 weights of the loss rows for a block of columns (None: all rows count).

        ``columns`` names the mask columns the block's columns use; without it the
        block must have one column per mask column.
        """
        return select_loss_weights(self.mask, n_columns, columns)

    def apply_to_decision(self, F, Z, columns=None):
        """``A z`` given ``F = X̃ z`` already computed (saves the forward pass)."""
        Z = self._check_block(Z)
        vector = Z.ndim == 1
        Z2 = np.ascontiguousarray(Z.reshape(Z.shape[0], -1), dtype=np.float64)
        F2 = np.ascontiguousarray(np.asarray(F).reshape(self.X.shape[0], -1), dtype=np.float64)
        out = self._apply(F2, Z2, columns, np.empty(Z2.shape))
        return out[:, 0] if vector else out

    def matvec(self, Z, columns=None, out=None):
        """``A Z`` for a block Z of shape (d [+1], k) or a vector (``columns``: mask columns).

        With ``out`` (float64, C-contiguous, the shape of Z) the result is written
        there and, for a CSR X and a ``laplacian_matvec`` taking ``out``/``work``,
        nothing is allocated once the first call has sized the buffers.
        """
        Z = self._check_block(Z)
        vector = Z.ndim == 1
        Z2 = np.ascontiguousarray(Z.reshape(Z.shape[0], -1), dtype=np.float64)
        c = Z2.shape[1]
        if out is None:
            res = np.empty(Z2.shape)
        else:
            if (not isinstance(out, np.ndarray) or out.dtype != np.float64
                    or out.shape != Z.shape or not out.flags.c_contiguous):
                raise ValueError(f"out must be a C-contiguous float64 array of shape {Z.shape}.")
            res = out.reshape(Z2.shape)
            if np.may_share_memory(res, Z2):
                raise ValueError("out must not overlap Z.")
        self.n_matvec += 1
        self._workspace(c)
        F = self._forward(Z2, self._view("F", self.X.shape[0], c))
        self._apply(F, Z2, columns, res)
        self._last_cols = c
        if out is not None:
            return out
        return res[:, 0] if vector else res

    __call__ = matvec

    def rhs(self, T, columns=None):
        """``X̃_Rᵀ T`` for targets T of shape (len(rows), k), rows weighted by the mask."""
        T = np.asarray(T, dtype=np.float64)
        w = self.loss_weights(T.shape[1], columns)
        if w is not None:
            T = T * w
        if self._many_rows():
            # many (or repeated) rows: sum the targets per row, do not copy most of X
            U = self._per_row(T)
            zero = np.zeros((self.shape[0], U.shape[1]))
            return self._backward(U, 1.0, 0.0, zero, np.empty_like(zero))
        return augmented_rows_T(self.X[self.rows], T, self.fit_intercept)

    def last_products(self):
        """``(X̃ Z, L^p X̃ Z)`` of the last :meth:`matvec` (views of its buffers, valid
        until the next product; the second is None without a graph term). Needs
        ``keep_products=True``."""
        if not self.keep_products or not self._last_cols:
            raise ValueError("last_products needs keep_products=True and a matvec first.")
        n, c = self.X.shape[0], self._last_cols
        return (self._view("F", n, c),
                self._view("LF", n, c) if self.beta != 0 else None)

    def rhs_and_residual(self, T, F, LF, Z, columns=None):
        """``B = rhs(T)`` and the residual ``B − A Z``, given ``F = X̃ Z`` and ``LF = L^p F``.

        ``A Z = X̃_Rᵀ (mask ⊙ F_R) + β X̃ᵀ LF + α [Z[:d]; 0]``, so the residual is
        ``X̃ᵀ (Σ_R mask ⊙ (T − F_R) − β LF) − α [Z[:d]; 0]``: one Xᵀ pass, without the
        pass forward and the graph pass of a product (a warm-started CG's first
        residual when the caller keeps F and L^p F up to date, as finite Newton does).
        With many loss rows B rides on the same pass (its columns next to the
        residual's); LF is not read when β = 0.
        """
        T = np.asarray(T, dtype=np.float64)
        Z = self._check_block(Z)
        c = T.shape[1]
        w = self.loss_weights(c, columns)
        D = T - np.asarray(F, dtype=np.float64)[self.rows]
        if w is not None:
            D = D * w
        many = self._many_rows()
        U = self._per_row(np.hstack([T if w is None else T * w, D]) if many else D)
        if self.beta != 0:
            U[:, -c:] -= self.beta * np.asarray(LF, dtype=np.float64)
        Z2 = np.hstack([np.zeros_like(Z), Z]) if many else np.ascontiguousarray(Z)
        out = self._backward(U, 1.0, -self.alpha, Z2, np.empty(Z2.shape))
        if many:
            return out[:, :c], out[:, c:]
        return self.rhs(T, columns), out  # few rows: B from their slice of X

    def _many_rows(self):
        return 2 * self.rows.size > self.X.shape[0]

    def _per_row(self, T):
        """(n, k): the values T of the loss rows summed per training row."""
        U = np.empty((self.X.shape[0], T.shape[1]))
        for j in range(T.shape[1]):
            U[:, j] = np.bincount(self.rows, weights=T[:, j], minlength=U.shape[0])
        return U
