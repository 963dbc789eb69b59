"""Shared pytest configuration: the ``gpu`` marker skips cleanly without CuPy or a GPU."""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import Callable

import pytest

from precision.gpu import unavailable_reason


def pytest_configure(config):
    """Under pytest-xdist (one worker per core with ``-n auto``), each worker runs the
    emulator on its share of the cores (:func:`precision.threads.limit_threads`): a thread
    per core in each worker oversubscribes them. Tests of the threaded paths set their
    thread count themselves.

    numpy's BLAS gets one thread in each worker, unless a BLAS thread variable is set: two
    workers of two BLAS threads each on 2 cores spent their time spinning
    (tests/gemm/test_ozaki.py took 38 s of CPU against 16 s). The environment is left alone
    (subprocesses and the runner's BLAS checks see it as it was), and no result depends on
    it (the emulators' BLAS sums are exact in any order). Without threadpoolctl (a source
    tree run without the test extra) BLAS is left as it is."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    from precision.runner.plot_notes import BLAS_THREAD_VARS  # those provenance records
    from precision.threads import limit_threads, thread_count

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    limit_threads(thread_count() // max(1, workers))

    if any(v in os.environ for v in BLAS_THREAD_VARS):
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(1, user_api="blas")  # for the whole worker process


def pytest_collection_modifyitems(config, items):
    reason = unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"needs CuPy and an NVIDIA GPU ({reason})")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def one_dask_cluster_at_a_time(tmp_path_factory):
    """Hold a lock shared by every pytest-xdist worker of this session while the test runs:
    Dask clusters started side by side by two workers fought over ports (the dashboard's
    8787) and failed to start. Tests that start Dask clusters or workers use it. The lock does
    not hold back another test session on the host; that its clusters and this session's no
    longer fight over 8787 is precision.runner.cluster.SCHEDULER_OPTIONS's doing."""
    import fcntl

    lock = tmp_path_factory.getbasetemp().parent / "dask-cluster.lock"
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _traced_peak(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture
def traced_peak() -> Callable[[Callable[[], object]], int]:
    """``traced_peak(fn)``: the peak bytes ``fn()`` allocates, by tracemalloc (numpy's data
    buffers included)."""
    return _traced_peak
