"""Solvers: plain functions over arrays and operators (no estimator imports)."""

from .cg import CGInfo, batched_cg
from .laprls import LinearSolution, laprls_linear

__all__ = ["CGInfo", "batched_cg", "LinearSolution", "laprls_linear"]
