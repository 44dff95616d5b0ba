r"""The graph Laplacian partitioned by row blocks, applied with halo exchange.

Row block b (rows ``bounds[b]:bounds[b+1]`` of X) keeps the same rows of L,

    L = D − W    or    L = I' − D^{-1/2} W D^{-1/2}

(``I'`` the identity on non-isolated nodes, as in :mod:`linlap.graph.laplacian`), as
a CSR matrix whose columns are its own rows followed by its *halo*: the rows of
other blocks that its rows have an edge to. One product ``(L v)_b`` needs ``v_b``
and the halo values only, which the blocks that own them send; ``L^p v`` is p such
products, so p halo exchanges. What moves per product is the halo, not v: a graph
whose edges stay mostly within blocks (rows in a locality order, e.g. the
``node_order_`` of ``KNNGraph(reorder=True)``) has a small halo; a random row order
makes most of a block's neighbours halo rows.

:func:`partition_laplacian` builds the blocks (pure NumPy/SciPy, no Dask);
:func:`export_values` and :func:`apply_block` are what the workers run.
"""

import numpy as np
import scipy.sparse as sp

from ..graph.laplacian import inverse_sqrt_degree

__all__ = ["LaplacianBlock", "partition_laplacian", "export_values", "apply_block",
           "halo_sizes"]


class LaplacianBlock:
    """Rows ``start:stop`` of L, with columns renumbered to [own rows, halo rows].

    Attributes
    ----------
    matrix : csr_matrix of shape (stop − start, stop − start + h)
        The rows of L; column j < stop − start is own row ``start + j``, column
        ``stop − start + q`` the q-th halo row.
    imports : list of (int, int)
        ``(block, count)`` in the order the halo columns take them: the first
        ``count`` halo columns come from that block's :attr:`exports` for this block.
    exports : dict of int to ndarray of int
        For each block that needs some of this block's rows: their local indices
        (sorted), sent to it each product.
    """

    def __init__(self, matrix, imports, exports):
        self.matrix = matrix
        self.imports = imports
        self.exports = exports

    @property
    def halo_size(self):
        return self.matrix.shape[1] - self.matrix.shape[0]


def _laplacian_rows(W, degree, normalized, start, stop):
    """Rows ``start:stop`` of L as CSR with global column indices."""
    Wb = W[start:stop].tocoo()
    rows = Wb.row + start
    if normalized:
        s = inverse_sqrt_degree(degree)
        off = -Wb.data * s[rows] * s[Wb.col]
        diag = (degree[start:stop] > 0).astype(np.float64)
    else:
        off = -Wb.data
        diag = degree[start:stop].astype(np.float64)
    local = np.arange(stop - start)
    data = np.concatenate([diag, off])
    r = np.concatenate([local, Wb.row])
    c = np.concatenate([local + start, Wb.col])
    M = sp.csr_matrix((data, (r, c)), shape=(stop - start, W.shape[0]))
    M.sum_duplicates()  # a self-loop in W lands on the diagonal
    return M


def partition_laplacian(W, degree, normalized, bounds):
    """Split L into the row blocks given by ``bounds`` (see :class:`LaplacianBlock`).

    Parameters
    ----------
    W : sparse matrix of shape (n, n)
        Symmetric non-negative weights (a fitted KNNGraph's ``adjacency_``).
    degree : ndarray of shape (n,)
        Row sums of W.
    normalized : bool
    bounds : ndarray of int, shape (B + 1,)
        Row offsets of the blocks, ``bounds[0] = 0``, ``bounds[-1] = n``.

    Returns
    -------
    list of LaplacianBlock
    """
    W = sp.csr_matrix(W)
    degree = np.asarray(degree, dtype=np.float64)
    bounds = np.asarray(bounds, dtype=np.intp)
    n = W.shape[0]
    if W.shape != (n, n) or degree.shape != (n,) or bounds[0] != 0 or bounds[-1] != n:
        raise ValueError(f"W must be n × n with n = bounds[-1] = {bounds[-1]} and degree of "
                         f"length n; got W {W.shape}, degree {degree.shape}.")
    blocks = []
    needs = []  # needs[b][o]: global rows of block o in block b's halo
    for b in range(len(bounds) - 1):
        start, stop = int(bounds[b]), int(bounds[b + 1])
        M = _laplacian_rows(W, degree, normalized, start, stop)
        cols = M.indices
        outside = (cols < start) | (cols >= stop)
        halo = np.unique(cols[outside])  # sorted, so grouped by owner block
        new = np.empty_like(cols)
        new[~outside] = cols[~outside] - start
        new[outside] = (stop - start) + np.searchsorted(halo, cols[outside])
        M = sp.csr_matrix((M.data, new, M.indptr), shape=(stop - start, stop - start + halo.size))
        M.sort_indices()
        owner = np.searchsorted(bounds, halo, side="right") - 1
        imports = []
        need = {}
        for o in np.unique(owner):
            rows_o = halo[owner == o]
            imports.append((int(o), int(rows_o.size)))
            need[int(o)] = rows_o - bounds[o]
        blocks.append(LaplacianBlock(M, imports, {}))
        needs.append(need)
    for b, need in enumerate(needs):
        for o, local in need.items():
            blocks[o].exports[b] = local
    return blocks


def halo_sizes(blocks):
    """Halo rows per block (what each block receives per product, in rows)."""
    return np.array([blk.halo_size for blk in blocks], dtype=np.intp)


def export_values(block, V, to):
    """The rows of this block's ``V`` that block ``to`` needs (run on the worker)."""
    return V[block.exports[to]]


def apply_block(block, V, *halo):
    """``(L V)_b`` from the block's own ``V`` and its halo values, in import order."""
    if halo:
        V = np.concatenate((V,) + halo, axis=0)
    return np.asarray(block.matrix @ V)
