"""Diagnostic plots (needs matplotlib: ``pip install 'linlap[plot]'``).

Each function writes a PNG and returns the path. matplotlib is imported lazily with
the non-interactive Agg backend, so the functions work without a display.
"""

import numpy as np

__all__ = ["plot_convergence", "plot_label_curve", "plot_path"]


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ValueError("plots need matplotlib, which is not installed; install it with "
                         "pip install 'linlap[plot]'") from None
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    return plt


def _history_kind(name, est):
    """(history, y label, x label, log scale, first x) of a fitted estimator's record."""
    from .estimators import LapRLSClassifier, LapS3VMClassifier, LapSVMClassifier

    if isinstance(est, LapRLSClassifier):
        kind = ("relative residual", "CG iteration", True, 1)
    elif isinstance(est, LapSVMClassifier) and est.solver == "newton":
        kind = ("objective J", "Newton step", False, 0)
    elif isinstance(est, LapS3VMClassifier):
        kind = ("S³VM objective (hard labels)",
                "temperature step" if est.solver == "annealing" else "γ_U stage", False, 1)
    else:
        what = (f"LapSVMClassifier(solver={est.solver!r})" if isinstance(est, LapSVMClassifier)
                else type(est).__name__)
        raise ValueError(f"{name}: {what} records no per-iteration history to plot (plotted: "
                         f"LapRLSClassifier, LapSVMClassifier(solver='newton'), "
                         f"LapS3VMClassifier)")
    hist = list(getattr(getattr(est, "_solution", None), "history", []) or [])
    if not hist:
        raise ValueError(f"{name}: no convergence history (fit the estimator first; a model "
                         f"loaded from a file has none)")
    return (np.asarray(hist, dtype=float),) + kind


def plot_convergence(estimators, path, *, title=None):
    """Per-iteration convergence of fitted linlap estimators.

    Parameters
    ----------
    estimators : dict name -> fitted LapRLSClassifier / LapSVMClassifier / LapS3VMClassifier
        LapRLS (CG) records the relative residual per iteration; LapSVM (finite
        Newton) the objective J per Newton step; the S³VM its objective at the hard
        labels per temperature (annealing) or γ_U stage (switching) — each gets its
        own panel. Other estimators (and LapSVM's 'tinv' solver) record no history.
    path : str or path-like
        PNG file to write.
    title : str or None, default=None
        Title over the panels.
    """
    plt = _pyplot()
    items = [(name,) + _history_kind(name, est) for name, est in estimators.items()]
    fig, axes = plt.subplots(1, len(items), figsize=(5 * len(items), 3.8), squeeze=False)
    for ax, (name, hist, ylabel, xlabel, log, first) in zip(axes[0], items):
        its = np.arange(len(hist)) + first
        if log:
            ax.semilogy(its, hist)
        else:
            ax.plot(its, hist, marker="o")
        ax.set_ylabel(ylabel)
        ax.set_xlabel(xlabel)
        ax.set_title(name)
        ax.grid(True, alpha=0.3)
    if title:
        fig.suptitle(title)
    return _save(plt, fig, path)


def plot_label_curve(n_labels, errors, path, *, title=None):
    """Test error (%) against the number of labeled documents.

    Parameters
    ----------
    n_labels : sequence of int
    errors : dict name -> sequence of errors in % (one per entry of n_labels), or of
        sequences (several draws: mean ± standard deviation is drawn)
    path : str or path-like
        PNG file to write.
    title : str or None, default=None
        Title of the plot.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for name, errs in errors.items():
        errs = np.asarray(errs, dtype=float)
        if errs.ndim == 2:
            mean, std = errs.mean(axis=1), errs.std(axis=1)
            ax.errorbar(n_labels, mean, yerr=std, marker="o", capsize=3, label=name)
        else:
            ax.plot(n_labels, errs, marker="o", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("labeled documents")
    ax.set_ylabel("test error (%)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title)
    return _save(plt, fig, path)


def _save(plt, fig, path):
    """Write the PNG through a temporary file (a failed write leaves an existing file as
    it was) at exactly ``path`` (matplotlib would add '.png' to a name without it)."""
    from ._atomic import atomic_write

    fig.tight_layout()
    try:
        with atomic_write(path) as fh:
            fig.savefig(fh, dpi=120, format="png")
    finally:
        plt.close(fig)
    return path


def plot_path(estimator, path, *, kind="error", title=None):
    """The solution path of a fitted :class:`~linlap.LapSVMPathClassifier` against log λ.

    Parameters
    ----------
    estimator : fitted LapSVMPathClassifier
    path : str or path-like
        PNG file to write.
    kind : {'error', 'decision'}, default='error'
        'error': validation (or cross-validated) error in % along the scored grid, the
        chosen λ marked and the breakpoints drawn as ticks; 'decision': the decision
        values of the labeled rows (first one-vs-rest column) along the path, evaluated
        at every breakpoint and grid point.
    title : str, optional
    """
    if kind not in ("error", "decision"):
        raise ValueError(f"kind must be 'error' or 'decision', got {kind!r}.")
    info = getattr(estimator, "path_", None)
    if info is None:
        raise ValueError("plot_path needs a fitted LapSVMPathClassifier (no path_ found).")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    best = info["lambda"][info["best_index"]]
    if kind == "error":
        ax.plot(info["lambda"], 100 * np.asarray(info["error"]), marker=".",
                label=f"{info['validation']} error")
        ymin = 0.0
        ax.plot(info["lambdas"], np.full(len(info["lambdas"]), ymin), "|", color="gray",
                markersize=8, label="breakpoints")
        ax.set_ylabel("error (%)")
    else:
        if info.get("paths") is None:
            raise ValueError("kind='decision' needs the path objects, which linlap.save "
                             "leaves out (they hold a d × l reduction): refit the model, "
                             "save it with keep_graph=True, or plot kind='error'.")
        p = info["paths"][0]
        lams = np.unique(np.r_[p.lambdas, info["lambda"][info["lambda"] >= p.lambdas[-1]]])
        F = p.decision_labeled(lams)
        colors = np.where(p.y > 0, "tab:blue", "tab:red")
        for i in range(F.shape[1]):
            ax.plot(lams, F[:, i], color=colors[i], lw=0.8, alpha=0.7)
        for v in (-1.0, 0.0, 1.0):
            ax.axhline(v, color="gray", lw=0.6, ls="--" if v else "-")
        ax.set_ylabel("decision value f (labeled rows; blue +1, red −1)")
    ax.axvline(best, color="k", lw=1, ls=":", label=f"chosen λ = {best:.3g}")
    ax.set_xscale("log")
    ax.set_xlabel("λ  (γ_I = λ / 2l,  γ_A = ρ γ_I)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return _save(plt, fig, path)
