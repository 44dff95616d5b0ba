r"""The graph Laplacian of a symmetric weight matrix W, applied by fused numba passes.

Unnormalised ``L = D − W`` or normalised ``L = I − D^{-1/2} W D^{-1/2}`` (with
``D^{-1/2}`` of a zero degree taken as 0, so that an isolated node has an all-zero row
and column, as in D − W). ``L^p`` is applied as p passes over W, never formed.

For the normalised Laplacian the passes carry :math:`v_t = D^{-1/2} L^t z`: one light
pass forms :math:`v_0 = D^{-1/2} z`, each graph pass computes
:math:`v_{t+1} = \mathbb 1_{\deg>0} v_t - D^{-1} W v_t` and the last one returns
:math:`L^p z = D^{1/2} v_{p-1} - D^{-1/2} W v_{p-1}`; so no scaled copy of W is kept
and no pass is spent on the scalings in between. On a renumbered graph the passes run
on P W Pᵀ: the first gathers Z into the new order (fused with the first scaling) and
the last writes its rows back to the original order.
"""

import numpy as np
import scipy.sparse as sp

from .reorder import renumber_csr

__all__ = ["LaplacianPasses", "laplacian_trace", "laplacian_product", "laplacian_power_sum",
           "laplacian_matrix", "pass_blocks"]

# "no row permutation" for the pass kernels
_NO_ROWS = np.empty(0, dtype=np.int64)


def inverse_sqrt_degree(degree):
    """D^{-1/2} as a vector, with 0 for a zero degree (an isolated node)."""
    s = np.zeros_like(degree)
    nz = degree > 0
    s[nz] = 1.0 / np.sqrt(degree[nz])
    return s


class LaplacianPasses:
    """What the fused passes read: W's CSR arrays (renumbered or not) and the diagonal
    scalings, in pass order.

    Parameters
    ----------
    W : csr_matrix of shape (n, n)
        Symmetric weights, sorted indices.
    degree : ndarray of shape (n,)
        Row sums of W.
    order : ndarray of shape (n,) or None
        Node order of the passes (position q holds node ``order[q]``), or None.
    reuse : LaplacianPasses, optional
        Passes built earlier for the same W and order: their renumbered CSR copy is
        shared instead of rebuilt.
    """

    def __init__(self, W, degree, order=None, reuse=None):
        nz = degree > 0
        inv_sqrt = inverse_sqrt_degree(degree)
        inv = np.zeros_like(degree)
        inv[nz] = 1.0 / degree[nz]
        vectors = {"inv_sqrt_degree": inv_sqrt, "nonisolated": nz.astype(np.float64),
                   "sqrt_degree": np.sqrt(degree), "inv_degree": inv,
                   "unit": np.ones_like(degree), "degree": degree}
        self.W, self.order = W, order
        if order is None:
            self.csr = (W.indptr, W.indices, W.data)
            self.vectors = vectors
        else:
            if reuse is not None and reuse.W is W and reuse.order is order:
                self.csr = reuse.csr
            else:
                self.csr = renumber_csr(W, order)
            self.vectors = {name: v[order] for name, v in vectors.items()}

    def matches(self, W, order):
        """Built for these very objects (not replaced since)."""
        return self.W is W and self.order is order


def laplacian_trace(degree, normalized):
    """trace(L): the number of non-isolated nodes (normalised) or the sum of degrees."""
    return float(np.count_nonzero(degree > 0)) if normalized else float(degree.sum())


def laplacian_product(W, degree, normalized, Z):
    """One product L Z by plain scipy/numpy operations (the reference implementation;
    also used for complex input)."""
    col = (lambda v: v) if Z.ndim == 1 else (lambda v: v[:, None])  # noqa: E731
    if normalized:
        s = col(inverse_sqrt_degree(degree))
        return col((degree > 0).astype(np.float64)) * Z - s * (W @ (s * Z))
    return col(degree) * Z - W @ Z


def laplacian_power_sum(passes, normalized, coefs, Z2, out2, tmp):
    """``out2 = Σ_t coefs[t] L^t Z2`` (t ≥ 1) by ``T = max t`` fused passes, in Horner form
    (``{p: 1.0}``: ``L^p Z2``).

    With S the passes' scaling (``D^{-1/2}`` for the normalised Laplacian, else I; rows
    in the passes' order on a renumbered graph), M = S L S⁻¹ = ``1_{deg>0} − D^{-1} W``
    the map of one intermediate pass and ``v = S z``, ``Σ_t c_t L^t z = L S⁻¹ h_1`` with
    ``h_T = c_T v`` and ``h_j = M h_{j+1} + c_j v``: T − 1 intermediate passes, the first
    scaled by ``c_T`` and reading v itself, one in-place ``+= c_j v`` per lower power with
    a weight, and a last pass ``L S⁻¹ h = D^{1/2} h − D^{-1/2} W h`` that writes its rows
    back to the original order on a renumbered graph. No scaled copy of W is kept and no
    pass is spent on the scalings in between.

    Z2, out2, tmp: C-contiguous (n, c) blocks; Z2 float32 or float64, out2 and tmp
    float64. ``tmp`` is scratch, needed for T ≥ 2 or on a normalised or renumbered graph
    (None otherwise). With weights on lower powers v must outlive the passes, and on a
    normalised or renumbered graph that is one more block, allocated here.
    """
    from .._numba.graph import add_scaled, laplacian_pass, scale_rows

    n, c = Z2.shape
    top = max(coefs)
    lower = [j for j in range(1, top) if coefs.get(j, 0.0) != 0.0]
    (indptr, indices, data), vec, order = passes.csr, passes.vectors, passes.order
    v = Z2
    if normalized or order is not None:
        # v = S z, gathered into the new order on a renumbered graph: in the buffer the
        # first pass does not write, unless the lower powers read it later
        v = np.empty((n, c)) if lower else (tmp if (top - 1) % 2 == 0 else out2)
        scale_rows(vec["inv_sqrt_degree"] if normalized else vec["unit"], Z2,
                   _NO_ROWS if order is None else order, v, work=n * c)
    mid = (vec["nonisolated"], vec["inv_degree"]) if normalized else (vec["degree"], vec["unit"])
    last = ((vec["sqrt_degree"], vec["inv_sqrt_degree"]) if normalized
            else (vec["degree"], vec["unit"]))
    work = (data.shape[0] + n) * c
    x, scale = v, float(coefs[top])  # h_T = scale · x
    for j in range(top - 1, 0, -1):
        dest = tmp if j % 2 == 1 else out2  # h_1 in tmp: the last pass reads it
        laplacian_pass(indptr, indices, data, x, mid[0], mid[1], scale, dest, _NO_ROWS,
                       work=work)
        if j in lower:
            add_scaled(float(coefs[j]), v, dest, work=n * c)
        x, scale = dest, 1.0
    laplacian_pass(indptr, indices, data, x, last[0], last[1], scale, out2,
                   _NO_ROWS if order is None else order, work=work)
    return out2


def laplacian_matrix(W, degree, normalized, power):
    """L^power as an explicit CSR matrix (for tests and small problems: L^p fills in)."""
    if normalized:
        S = sp.diags(inverse_sqrt_degree(degree))
        L = sp.diags((degree > 0).astype(np.float64)) - S @ W @ S
    else:
        L = sp.diags(degree) - W
    L = sp.csr_matrix(L)
    out = L
    for _ in range(int(power) - 1):
        out = out @ L
    out = sp.csr_matrix(out)
    out.eliminate_zeros()
    out.sort_indices()
    return out


def pass_blocks(Z, out, work, need_tmp):
    """Check and shape the blocks of one ``L^p Z``: ``(Z2, out, out2, tmp)`` with Z2 the
    (n, c) view of Z (float32 or float64, C-contiguous), ``out`` float64 of Z's shape
    (allocated when None), ``out2`` its (n, c) view and ``tmp`` the scratch block (from
    ``work`` when given, None when ``need_tmp`` is false)."""
    if Z.dtype not in (np.float32, np.float64):
        Z = Z.astype(np.float64)
    n = Z.shape[0]
    Z2 = np.ascontiguousarray(Z.reshape(n, -1))
    c = Z2.shape[1]
    if out is None:
        out = np.empty(Z.shape)
    elif (not isinstance(out, np.ndarray) or out.dtype != np.float64
          or out.shape != Z.shape or not out.flags.c_contiguous):
        raise ValueError(f"out must be a C-contiguous float64 array of shape {Z.shape}.")
    elif np.may_share_memory(out, Z2):
        raise ValueError("out must not overlap Z.")
    out2 = out.reshape(n, c)
    tmp = None
    if need_tmp:
        if work is None:
            tmp = np.empty((n, c))
        else:
            if (not isinstance(work, np.ndarray) or work.dtype != np.float64
                    or not work.flags.c_contiguous or work.size < n * c):
                raise ValueError(f"work must be a C-contiguous float64 array with at "
                                 f"least {n * c} elements.")
            tmp = work.reshape(-1)[: n * c].reshape(n, c)
            if np.may_share_memory(tmp, out2) or np.may_share_memory(tmp, Z2):
                raise ValueError("work must not overlap Z or out.")
    return Z2, out, out2, tmp
