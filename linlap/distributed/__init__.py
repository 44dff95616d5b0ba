"""Linear LapRLS and finite Newton LapSVM with X in row blocks on a Dask cluster.

Needs the ``dask`` extra: ``pip install linlap[dask]``.

X is a dask array of scipy CSR row blocks (or a list of row blocks), each held by
one worker; the graph is the fitted :class:`~linlap.KNNGraph` of the same rows, in
the same order, built on one machine or by :func:`fit_graph` with the neighbour search
on the workers. Each operator product runs X·w and Xᵀ(·) per block on the workers and
the graph term on the client, or (``graph_on_workers=True``) on the workers with L
split by the same row blocks and a halo exchange between them (see
:mod:`linlap.distributed.operator` for what moves per iteration); CG runs on the
client. The same code runs on a laptop's
``LocalCluster`` and on a real cluster (``Client("tcp://scheduler:8786")``).

:mod:`linlap.distributed.text` builds such an X out of core: the workers read a
directory of text files or a JSON-lines file chunk by chunk and hash it into TF-IDF
row blocks (:func:`hashing_tfidf_blocks`).
"""

from .graph import fit_graph
from .lapsvm import lapsvm_fit
from .laprls import laprls_fit
from .operator import DistributedNormalOperator, csr_row_blocks
from .text import (TextChunk, hashing_tfidf_blocks, jsonl_chunks, read_chunk, text_chunks,
                   text_dir_chunks)

__all__ = ["fit_graph", "laprls_fit", "lapsvm_fit", "DistributedNormalOperator",
           "csr_row_blocks", "TextChunk", "hashing_tfidf_blocks", "jsonl_chunks", "read_chunk",
           "text_chunks", "text_dir_chunks"]
