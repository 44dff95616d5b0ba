"""Solvers: plain functions over arrays and operators (no estimator imports)."""

from .cg import CGInfo, batched_cg
from .laprls import LinearSolution, laprls_linear
from .newton import lapsvm_newton, lapsvm_objective, squared_hinge_line_search
from .path import follow_path, lapsvm_path
from .tinv import TinvFactor, lapsvm_tinv, tinv_factor

__all__ = ["CGInfo", "batched_cg", "LinearSolution", "laprls_linear", "lapsvm_newton",
           "lapsvm_objective", "squared_hinge_line_search", "lapsvm_tinv", "tinv_factor",
           "TinvFactor", "lapsvm_path", "follow_path"]
