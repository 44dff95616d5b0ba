"""Dask arrays of given row blocks, for the Dask tests (the ``client`` fixture, a 2-process
LocalCluster per module, is in conftest.py)."""

import dask
import dask.array as da


def as_dask(blocks):
    """A dask array whose chunks are the given row blocks (recomputable: built from tasks)."""
    return da.concatenate([da.from_delayed(dask.delayed(b), b.shape, dtype=b.dtype, meta=b[:0])
                           for b in blocks])
