"""Threads for large elementwise numpy work: how many, how to split the work, how to run it.

numpy releases the GIL inside its loops, so large arrays split into one block per thread run
in parallel. The callers (:mod:`precision.crexp`, :mod:`precision.parallel_draws`,
:mod:`precision.metrics`, and the emulator's work items in :mod:`precision.tensorcore.chain`
and :mod:`precision.tensorcore.dmma`) compute every element alone, or combine the blocks'
results in their order, so their results do not depend on the number of threads.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["blocks", "in_threads", "limit_threads", "thread_count"]

#: This process's cap on :func:`thread_count` (:func:`limit_threads`); None: no cap.
_process_limit: int | None = None


def thread_count() -> int:
    """Threads for one call: the cores this process may run on (its CPU affinity), at most
    ``OMP_NUM_THREADS`` when that is set (the runner's Dask workers set it to their share),
    and at most this process's cap (:func:`limit_threads`) when one is set."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    limit = os.environ.get("OMP_NUM_THREADS", "")
    if limit.isdigit() and int(limit) > 0:
        cores = min(cores, int(limit))
    if _process_limit is not None:
        cores = min(cores, _process_limit)
    return max(1, cores)


def limit_threads(threads: int | None) -> None:
    """Cap :func:`thread_count` in this process at ``threads`` (at least 1; None lifts the
    cap), without touching the environment that subprocesses inherit. For a process that
    shares the cores with others of its kind: each worker of the runner's ``--jobs N`` pool
    takes ``cores // N``, and the test suite gives each pytest-xdist worker its share. No
    result depends on it (each thread computes its own part, see above); timings do: on 2
    cores, two processes each chaining ten f16 ``mma`` of 512^3 took 3.0-3.8 s on one
    thread each against 3.9-5.4 s on two each (three alternating rounds)."""
    global _process_limit
    _process_limit = None if threads is None else max(1, int(threads))


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
