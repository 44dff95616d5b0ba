"""Validation of the KNNGraph parameters."""

import numpy as np

from .._validation import is_finite_real, is_int
from .search import RESERVED_NNDESCENT_KEYS
from .weights import SYMMETRIZE, WEIGHTS

__all__ = ["check_graph_params", "check_power", "MAX_POWER", "SPACES", "ALGORITHMS"]

SPACES = ("auto", "tfidf", "svd")
ALGORITHMS = ("auto", "exact", "nndescent")


#: Largest Laplacian power accepted: the normalised Laplacian's eigenvalues reach 2, so
#: those of L^p reach 2^p (2^100 ~ 1e30 already swamps any other term of the objective;
#: beyond ~1000 they overflow float64 and the solvers return zero or NaN models).
MAX_POWER = 100


def check_power(p):
    """``p`` is an integer in [1, MAX_POWER] (not a bool); else ValueError naming power."""
    if not is_int(p) or not 1 <= p <= MAX_POWER:
        raise ValueError(
            f"power must be an integer in [1, {MAX_POWER}], got {p!r} (the normalised "
            f"Laplacian's eigenvalues reach 2, so those of L^p reach 2^p: a larger power "
            f"overflows float64 or leaves only the graph term; the default is 5).")


def check_graph_params(self):
    """Every KNNGraph parameter, with a message naming it."""
    def choice(name, options):
        val = getattr(self, name)
        if not isinstance(val, str) or val not in options:
            raise ValueError(f"{name} must be one of {options}, got {val!r}.")

    if not is_int(self.n_neighbors) or self.n_neighbors < 1:
        raise ValueError(f"n_neighbors must be an integer >= 1, got {self.n_neighbors!r}.")
    choice("weight", WEIGHTS)
    if self.heat_sigma is not None:
        if not is_finite_real(self.heat_sigma) or self.heat_sigma <= 0:
            raise ValueError(
                f"heat_sigma must be a finite number > 0 or None, got {self.heat_sigma!r}.")
    choice("symmetrize", SYMMETRIZE)
    if not isinstance(self.normalized, (bool, np.bool_)):
        raise ValueError(f"normalized must be True or False, got {self.normalized!r}.")
    check_power(self.power)
    choice("space", SPACES)
    if not is_int(self.n_components) or self.n_components < 1:
        raise ValueError(f"n_components must be an integer >= 1, got {self.n_components!r}.")
    if not is_int(self.svd_sample) or self.svd_sample < 1:
        raise ValueError(f"svd_sample must be an integer >= 1, got {self.svd_sample!r}.")
    choice("algorithm", ALGORITHMS)
    if not is_int(self.exact_max_samples) or self.exact_max_samples < 0:
        raise ValueError(
            f"exact_max_samples must be an integer >= 0, got {self.exact_max_samples!r}.")
    if self.n_search_neighbors is not None and (
            not is_int(self.n_search_neighbors)
            or self.n_search_neighbors <= self.n_neighbors):
        raise ValueError(
            "n_search_neighbors must be None or an integer > n_neighbors "
            f"(pynndescent lists each row as its own first neighbour), got "
            f"{self.n_search_neighbors!r} with n_neighbors={self.n_neighbors}.")
    if self.nndescent_kwds is not None:
        if not isinstance(self.nndescent_kwds, dict):
            raise ValueError(
                f"nndescent_kwds must be a dict or None, got {type(self.nndescent_kwds)}.")
        reserved = sorted(set(self.nndescent_kwds) & set(RESERVED_NNDESCENT_KEYS))
        if reserved:
            raise ValueError(
                f"nndescent_kwds may not set {reserved}: KNNGraph sets them itself.")
    if not is_int(self.recall_sample) or self.recall_sample < 0:
        raise ValueError(f"recall_sample must be an integer >= 0, got {self.recall_sample!r}.")
    if not (isinstance(self.reorder, (bool, np.bool_))
            or (isinstance(self.reorder, str) and self.reorder == "auto")):
        raise ValueError(f"reorder must be 'auto', True or False, got {self.reorder!r}.")
    if self.n_jobs is not None and (not is_int(self.n_jobs) or self.n_jobs == 0):
        raise ValueError(f"n_jobs must be None or a nonzero integer, got {self.n_jobs!r}.")
