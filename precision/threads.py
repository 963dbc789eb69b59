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

__all__ = ["blocks", "in_threads", "thread_count"]


def thread_count() -> int:
    """Threads for one call: the cores this process may run on (its CPU affinity), at most
    ``OMP_NUM_THREADS`` when that is set (the runner's Dask workers set it to their share)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    limit = os.environ.get("OMP_NUM_THREADS", "")
    return max(1, min(cores, int(limit))) if limit.isdigit() and int(limit) > 0 else cores


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
