import os
import sys

# tests import their dense reference helpers from tests/reference.py
sys.path.insert(0, os.path.dirname(__file__))

import pytest  # noqa: E402


@pytest.fixture(scope="module")
def client():
    """A Dask LocalCluster of 2 worker processes × 1 thread (1 numba thread each), per module."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                           dashboard_address=None, env={"NUMBA_NUM_THREADS": "1"})
    with Client(cluster) as c:
        yield c
    cluster.close()
