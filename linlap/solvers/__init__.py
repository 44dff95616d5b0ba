"""Solvers: plain functions over arrays and operators.

They take labeled row indices and ±1 target columns, never raw labels, and import no
estimator. One module per method: :mod:`.laprls` (CG through Xw), :mod:`.lapsvm_newton`
(finite Newton), :mod:`.lapsvm_tinv` (T⁻¹ preprocessing), :mod:`.grid` (whole γ grids by
shifted CG), :mod:`.kernel_pcg` and :mod:`.kernel_newton` (kernel mode), :mod:`.path`
(solution path); shared pieces in :mod:`._problem`, :mod:`.normal_operator`, :mod:`.cg`
and :mod:`.shifted_cg`.
"""

from ._problem import LinearSolution
from .cg import CGInfo, batched_cg
from .laprls import laprls_linear
from .lapsvm_newton import lapsvm_newton, lapsvm_objective, squared_hinge_line_search
from .lapsvm_tinv import TinvFactor, lapsvm_tinv, tinv_factor
from .path import follow_path, path_for_targets, path_reduction

__all__ = ["CGInfo", "batched_cg", "LinearSolution", "laprls_linear", "lapsvm_newton",
           "lapsvm_objective", "squared_hinge_line_search", "lapsvm_tinv", "tinv_factor",
           "TinvFactor", "follow_path", "path_reduction", "path_for_targets"]
