"""Peak-memory estimates of graph building and fitting, checked before the work starts.

The estimates are linear in n, nnz and k (nothing on the linear path is quadratic in n):

graph, exact search on the input (``space='tfidf'``)
    ``24 nnz + 120 n k + 2^28`` bytes — a normalised float64 copy of X and its transpose
    (12 bytes per nonzero each), neighbours and distances (16 n k), the symmetrised
    weight matrix and its temporaries (≈ 104 n k), one block of similarities (256 MB).
graph, SVD embedding + pynndescent (``space='svd'``)
    ``12 nnz + 12 n c + 48 n m + 120 n k`` bytes — the normalised copy, the embedding in
    float64 and float32 (c = n_components), pynndescent's candidate heaps and trees
    (≈ 48 bytes per candidate, m = n_search_neighbors), and the weight matrix as above.
graph, renumbered for the Laplacian passes (``reorder``, n ≥ 100,000 by default)
    ``+ 36 n k`` bytes — the renumbered copy of W kept with the graph and one transient
    copy while it is made.
solve (LapRLS CG or LapSVM finite Newton)
    ``12 nnz [+ 12 nnz if X is converted] + 56 n q + 80 d q`` bytes — X, the n × q
    decision values and graph work vectors of the q = C (+1) right-hand sides (≈ 7 per
    column), the d × q CG vectors and the per-thread Xᵀ buffers (≈ 10 per column with
    2 threads).

grid (the shifted CG of the CV classifiers, ``linlap.solvers.grid``), on top of a solve
    ``8 d c (g q + 4 q)`` bytes — every candidate's coefficients (g γ_I × q γ_A × c
    columns × d) and about four CG vectors per shift.

``bench/scale.py`` records the measured peak RSS next to these formulas.
"""

import os

__all__ = ["graph_bytes", "solve_bytes", "grid_bytes", "available_bytes", "check_memory"]


def graph_bytes(n, nnz, k, *, space="tfidf", n_components=50, n_search=None, reorder=False):
    """Estimated peak bytes of building a k-NN graph over n rows with nnz nonzeros.

    ``reorder``: the renumbered copy of W kept for the Laplacian passes and one
    transient copy while it is made (2 × 12 bytes × ≈ 1.5 n k stored entries).
    """
    extra = 36 * n * k if reorder else 0
    if space == "svd":
        m = n_search if n_search is not None else k + 10
        return 12 * nnz + 12 * n * n_components + 48 * n * m + 120 * n * k + extra
    return 24 * nnz + 120 * n * k + 2**28 + extra


def solve_bytes(n, d, nnz, n_columns, *, converts_X=False):
    """Estimated peak bytes of a linear fit (excluding the graph, which is already built)."""
    return 12 * nnz * (2 if converts_X else 1) + 56 * n * n_columns + 80 * d * n_columns


def grid_bytes(d, n_gamma_I, n_gamma_A, n_columns):
    """Estimated bytes of a shifted-CG grid beyond its solve: the g × q × c × d
    coefficients it returns and about four d-vectors per shift and column."""
    return 8 * d * n_columns * (n_gamma_I * n_gamma_A + 4 * n_gamma_A)


def available_bytes():
    """Memory the OS can give this process now (MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def format_gib(n):
    """Bytes in GiB with three significant digits."""
    return f"{n / 2**30:.3g} GiB"


def check_memory(needed, what, hint=""):
    """Raise MemoryError before starting ``what`` when ``needed`` bytes are not available."""
    avail = available_bytes()
    if avail is not None and needed > avail:
        raise MemoryError(
            f"{what} needs about {format_gib(needed)} but only {format_gib(avail)} of memory "
            f"is available ({int(needed):,} and {int(avail):,} bytes)."
            f"{(' ' + hint) if hint else ''}")
