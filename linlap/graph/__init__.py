"""The k-nearest-neighbour document graph (:class:`KNNGraph`) and its Laplacian operator.

:mod:`.search` finds the neighbours (exact, pynndescent, SVD space), :mod:`.weights`
weighs and symmetrises the edges, :mod:`.laplacian` applies ``L^p`` by fused passes,
:mod:`.reorder` renumbers the nodes for locality and :mod:`.storage` saves and loads.
"""

from .estimator import KNNGraph

__all__ = ["KNNGraph"]
