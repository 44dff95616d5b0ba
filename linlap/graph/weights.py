"""Edge weights of the kNN graph and its symmetrisation."""

import numpy as np
import scipy.sparse as sp

__all__ = ["WEIGHTS", "SYMMETRIZE", "weights_matrix"]

WEIGHTS = ("binary", "heat", "cosine")
SYMMETRIZE = ("union", "mutual")


def weights_matrix(neighbors, distances, weight, heat_sigma, symmetrize):
    """Symmetric weight matrix W (CSR float64) and the heat σ used (or None).

    A neighbour index of -1 (the rows of empty documents) is no edge.
    """
    n, k = neighbors.shape
    cols = neighbors.ravel()
    edge = cols >= 0
    rows = np.repeat(np.arange(n), k)[edge]
    cols, dist = cols[edge], distances.ravel()[edge]
    sigma = None
    if weight == "binary":
        w = np.ones(cols.size)
    elif weight == "heat":
        if heat_sigma is None:
            sigma = float(np.mean(dist)) if dist.size else 1.0
            if not sigma > 0:  # every neighbour a duplicate: any scale works
                sigma = 1.0
        else:
            sigma = float(heat_sigma)
        w = np.exp(-(dist ** 2) / (2.0 * sigma * sigma))
    else:  # cosine similarity of unit vectors, clipped so that W >= 0
        w = np.maximum(0.0, 1.0 - 0.5 * dist ** 2)
    # neighbours are distinct and never the row itself, so no (i, j) repeats
    A = sp.csr_matrix((w, (rows, cols)), shape=(n, n))
    AT = sp.csr_matrix(A.T)
    W = A.maximum(AT) if symmetrize == "union" else A.minimum(AT)
    W = sp.csr_matrix(W, dtype=np.float64)
    W.eliminate_zeros()  # underflowed heat / orthogonal cosine weights: no edge
    W.sort_indices()
    return W, sigma

