"""Diagnostic plots (needs matplotlib: ``pip install 'linlap[plot]'``).

Each function writes a PNG and returns the path. matplotlib is imported lazily with
the non-interactive Agg backend, so the functions work without a display.
"""

import numpy as np

__all__ = ["plot_convergence", "plot_label_curve"]


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ValueError("plots need matplotlib, which is not installed; install it with "
                         "pip install 'linlap[plot]'") from None
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    return plt


def plot_convergence(estimators, path, *, title=None):
    """Per-iteration convergence of fitted linlap estimators.

    Parameters
    ----------
    estimators : dict name -> fitted LapRLSClassifier / LapSVMClassifier
        LapRLS (CG) records the relative residual per iteration; LapSVM (finite
        Newton) the objective J per Newton step — each gets its own panel.
    path : str or path-like
        PNG file to write.
    """
    plt = _pyplot()
    items = []
    for name, est in estimators.items():
        sol = getattr(est, "_solution", None)
        hist = list(getattr(sol, "history", []) or [])
        if not hist:
            raise ValueError(f"{name}: no convergence history (fit the estimator first; "
                             f"a model loaded from a file has none)")
        items.append((name, np.asarray(hist, dtype=float), type(est).__name__))
    fig, axes = plt.subplots(1, len(items), figsize=(5 * len(items), 3.8), squeeze=False)
    for ax, (name, hist, kind) in zip(axes[0], items):
        its = np.arange(len(hist)) + (0 if kind == "LapSVMClassifier" else 1)
        if kind == "LapSVMClassifier":
            ax.plot(its, hist, marker="o")
            ax.set_ylabel("objective J")
            ax.set_xlabel("Newton step")
        else:
            ax.semilogy(its, hist)
            ax.set_ylabel("relative residual")
            ax.set_xlabel("CG iteration")
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
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
