"""Threads for large elementwise numpy work: how many, how to split the work, how to run it.

numpy releases the GIL inside its loops, so large arrays split into one block per thread run
in parallel. The callers (:mod:`precision.crexp`, :mod:`precision.parallel_draws`,
:mod:`precision.metrics`, and the emulator's work items in :mod:`precision.tensorcore.chain`
and :mod:`precision.tensorcore.dmma`) compute every element alone, or combine the blocks'
results in their order, so their results do not depend on the number of threads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

__all__ = ["blocks", "busy_worker", "in_threads", "limit_threads", "share_cores", "thread_count"]

#: This process's cap on :func:`thread_count` (:func:`limit_threads`); None: no cap.
_process_limit: int | None = None
#: (cores, busy) where this process is a worker of a pool that shares ``cores``
#: (:func:`share_cores`); ``busy.value`` counts the pool's workers computing now.
_pool_share: tuple[int, Any] | None = None


def thread_count() -> int:
    """Threads for one call: the cores this process may run on (its CPU affinity), at most
    ``OMP_NUM_THREADS`` when that is set (the runner's Dask workers set it to their share),
    at most this process's cap (:func:`limit_threads`) when one is set, and in a worker of a
    pool sharing the cores, at most its share among the busy workers (:func:`share_cores`)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    limit = os.environ.get("OMP_NUM_THREADS", "")
    if limit.isdigit() and int(limit) > 0:
        cores = min(cores, int(limit))
    if _process_limit is not None:
        cores = min(cores, _process_limit)
    if _pool_share is not None:
        pool_cores, busy = _pool_share
        cores = min(cores, pool_cores // max(1, busy.value))
    return max(1, cores)


def limit_threads(threads: int | None) -> None:
    """Cap :func:`thread_count` in this process at ``threads`` (at least 1; None lifts the
    cap), without touching the environment that subprocesses inherit. For a process that
    shares the cores with others of its kind all the time: the test suite gives each
    pytest-xdist worker its share (the runner's ``--jobs`` workers share theirs among those
    busy, :func:`share_cores`). No result depends on it (each thread computes its own part,
    see above); timings do: on 2 cores, two processes each chaining ten f16 ``mma`` of
    512^3 took 3.0-3.8 s on one thread each against 3.9-5.4 s on two each."""
    global _process_limit
    _process_limit = None if threads is None else max(1, int(threads))


def share_cores(cores: int, busy: Any) -> None:
    """Make this process a worker of a pool that shares ``cores``: while ``k`` of its workers
    compute (inside :func:`busy_worker`), :func:`thread_count` gives each ``cores // k``
    threads (at least 1). ``busy`` is the pool's shared counter, a
    ``multiprocessing.Value("i")`` handed to each worker as it starts. So a pool whose
    workers are all busy does not run a thread per core in each, and the last worker of a
    run still uses every core."""
    global _pool_share
    _pool_share = (max(1, int(cores)), busy)


@contextmanager
def busy_worker() -> Iterator[None]:
    """Count this process among its pool's busy workers (:func:`share_cores`) while the
    block runs; nothing outside a pool."""
    if _pool_share is None:
        yield
        return
    busy = _pool_share[1]
    with busy.get_lock():
        busy.value += 1
    try:
        yield
    finally:
        with busy.get_lock():
            busy.value -= 1


def blocks(size: int, parts: int, multiple: int = 1) -> list[slice]:
    """At most ``parts`` consecutive slices that cover ``range(size)``, equal but the last,
    each a whole number of ``multiple`` elements (but the last)."""
    per = -(-size // (parts * multiple)) * multiple
    return [slice(start, min(start + per, size)) for start in range(0, size, per)]


def in_threads(work: Callable[[Any], Any], parts: list[Any], threads: int = 0) -> list[Any]:
    """``work(part)`` for every part, on ``threads`` threads (one per part where 0); the
    results in the parts' order."""
    with ThreadPoolExecutor(threads or len(parts)) as pool:
        return list(pool.map(work, parts))
