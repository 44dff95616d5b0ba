"""The linear classifiers on a dask array X: fit on the Dask cluster, predict block-wise.

``LapRLSClassifier().fit(X, y)`` with X a dask array of row blocks (scipy CSR or
ndarray chunks, one chunk along the columns) runs through :mod:`linlap.distributed`:
X is placed on the workers of the current ``distributed.Client`` in one block per
worker thread, checked there, the graph is built on the workers
(:func:`linlap.distributed.fit_graph`) unless a graph fitted on the same rows is
given, and the solve is the single-machine one with its products on the workers. y
is small (one label per row) and is used on the client. ``decision_function`` and
``predict`` of a dask array return dask arrays computed block by block.
"""

import numpy as np

from .._validation import MAX_ABS_VALUE

__all__ = ["is_dask_array", "fit_on_dask", "dask_decision_function", "dask_predict"]


def is_dask_array(X):
    """Whether X is a dask array (without importing dask when it is not loaded)."""
    return type(X).__module__.startswith("dask.") and hasattr(X, "chunks")


def _client():
    try:
        from distributed import get_client
    except ImportError as exc:  # pragma: no cover - dask without distributed
        raise ImportError("Fitting on a dask array needs dask.distributed: pip install "
                          "'linlap[dask]'.") from exc
    try:
        return get_client()
    except ValueError as exc:
        raise ValueError("X is a dask array but no dask.distributed Client is running: start "
                         "one first, e.g. Client(LocalCluster()) or "
                         "Client('tcp://scheduler:8786').") from exc


def _block_row_stats(Xb):
    """Per row of one block: 1.0 if it has a nonzero (else 0.0), and its squared norm
    (for ``check_row_norms``)."""
    from ._base import nonempty_rows, row_squared_norms

    return np.column_stack([nonempty_rows(Xb).astype(np.float64), row_squared_norms(Xb)])


def _check_dask_X(X, client):
    """X as row blocks on the workers, one per worker thread, of the shapes X.chunks
    declares, of a numeric dtype, finite and not extreme; which of its rows are
    non-empty (n booleans, on the client) and their squared norms (n floats)."""
    import dask.array as da

    from ..distributed.operator import blocks_for_workers, check_dask_layout, check_numeric_dtype

    check_dask_layout(X)
    check_numeric_dtype(X.dtype)  # as check_array in memory ("Complex data not supported")
    if X.shape[0] < 2:
        raise ValueError(f"X has {X.shape[0]} rows; at least 2 are needed.")
    X = client.persist(blocks_for_workers(X, max(sum(client.nthreads().values()), 1)))
    # NaN, inf and extreme values were refused block by block (verified_blocks)
    stats = da.map_blocks(_block_row_stats, X, chunks=(X.chunks[0], (2,)),
                          dtype=np.float64, meta=np.empty((0, 2))).compute()  # n × 2
    return X, stats[:, 0] > 0, stats[:, 1]


def fit_on_dask(est, X, y):
    """The body of ``LinearLapClassifier.fit`` for a dask array X (see the module doc)."""
    import copy

    from sklearn.utils.validation import column_or_1d

    from ..distributed.operator import check_dask_layout
    from ..graph import KNNGraph
    from ..solvers._problem import pm1_targets
    from ._base import (DEFAULT_GRAPH_SEED, capped_n_components, check_labeled_nonempty,
                        default_n_neighbors)

    est._check_params()
    reason = est._dask_unsupported()
    if reason is not None:
        raise ValueError(f"Cannot fit a dask array X: {reason}.")
    check_dask_layout(X)  # unknown rows or columns, before X.shape is compared with y
    client = _client()
    if y is None:
        raise ValueError(f"{type(est).__name__} requires y to be passed, but the target y is "
                         f"None.")
    if is_dask_array(y):
        y = y.compute()
    y = column_or_1d(y, warn=True)  # as in memory: (n, 1) with a DataConversionWarning
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels.")
    labeled_rows, unlabeled_rows, classes, y_idx = est._check_labels(y)
    balance = est._balance_targets(classes, y_idx, unlabeled_rows.size)
    X, nonempty, squared_norms = _check_dask_X(X, client)
    check_labeled_nonempty(nonempty, labeled_rows)  # as in memory
    n_nonempty = int(nonempty.sum())
    n, d = X.shape

    graph = est.graph
    if getattr(graph, "adjacency_", None) is not None:
        graph = est._fit_graph(X)  # in memory's checks (rows) and warning (no edge)
    else:
        from ..distributed import fit_graph

        if graph is None:
            if n_nonempty < 2:
                raise ValueError(f"X has {n_nonempty} non-empty rows: the graph needs at "
                                 f"least 2 rows with a nonzero entry.")
            # k and the SVD's components capped by the non-empty rows, as in memory
            graph = KNNGraph(n_neighbors=default_n_neighbors(n_nonempty),
                             n_components=capped_n_components(n_nonempty, d),
                             random_state=DEFAULT_GRAPH_SEED)
        graph = fit_graph(graph, X, client=client, verbose=bool(est.verbose))
        # the fitted graph through in memory's _fit_graph (it warns when it has no edge)
        view = copy.copy(est)
        view.graph = graph
        graph = view._fit_graph(X)
    targets = pm1_targets(y_idx, classes.size)
    est._check_row_norms(squared_norms)
    est._set_gammas(X, y_idx, labeled_rows, graph)  # 'auto' was refused: X unread
    sol = est._solve_distributed(X, targets, labeled_rows, unlabeled_rows, graph, balance,
                                 est._warm_start_init(targets.shape[1], d), client)
    est.n_features_in_ = d
    return est._set_fitted(sol, classes, y_idx, labeled_rows, graph)


def _block_scores(Xb, coef, intercept):
    return np.asarray(Xb @ coef.T) + intercept  # (rows, columns)


def _checked_scores(Xb, coef, intercept):
    """The block's scores, refused for extreme X or non-finite scores as in memory."""
    from .._validation import check_extreme_values
    from ..distributed.operator import block_top
    from ._base import check_finite_scores

    top = block_top(Xb)  # not finite with a NaN or inf; refuses a non-numeric block
    if not np.isfinite(top):
        raise ValueError("Input X contains NaN or infinity.")
    if top > MAX_ABS_VALUE:
        check_extreme_values(Xb)  # its message
    return check_finite_scores(_block_scores(Xb, coef, intercept))


def _block_decision(Xb, coef, intercept):
    scores = _checked_scores(Xb, coef, intercept)
    return scores[:, 0] if scores.shape[1] == 1 else scores


def _block_predict(Xb, coef, intercept, classes):
    from ..solvers._problem import predict_index

    return classes[predict_index(_checked_scores(Xb, coef, intercept))]


def _check_fitted_dask(est, X):
    from sklearn.utils.validation import check_is_fitted

    from ..distributed.operator import check_dask_layout, check_numeric_dtype

    check_is_fitted(est, "coef_")
    check_dask_layout(X, rows=False)  # predicting needs the columns, not the row counts
    check_numeric_dtype(X.dtype)  # complex or strings (each block is checked too)
    if X.shape[1] != est.coef_.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is "
                         f"expecting {est.coef_.shape[1]} features as input.")


def dask_decision_function(est, X):
    """``X w + b`` of a dask array X, as a dask array (block by block on the workers)."""
    _check_fitted_dask(est, X)
    c = est.coef_.shape[0]
    if c == 1:
        return X.map_blocks(_block_decision, est.coef_, est.intercept_, drop_axis=1,
                            dtype=np.float64, meta=np.empty(0))
    return X.map_blocks(_block_decision, est.coef_, est.intercept_,
                        chunks=(X.chunks[0], (c,)), dtype=np.float64, meta=np.empty((0, c)))


def dask_predict(est, X):
    """Predicted labels of a dask array X, as a dask array."""
    _check_fitted_dask(est, X)
    return X.map_blocks(_block_predict, est.coef_, est.intercept_, est.classes_, drop_axis=1,
                        dtype=est.classes_.dtype, meta=np.empty(0, dtype=est.classes_.dtype))
