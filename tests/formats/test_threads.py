"""precision.threads: how many threads a call may use, and the per-process cap."""

from __future__ import annotations

import os

import pytest

from precision import threads
from precision.threads import busy_worker, limit_threads, share_cores, thread_count


@pytest.fixture
def cores(monkeypatch: pytest.MonkeyPatch) -> int:
    """A machine of 8 cores, no OMP_NUM_THREADS, no cap and no pool; all put back after."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "_process_limit", None)
    monkeypatch.setattr(threads, "_pool_share", None)
    return 8


def test_every_core_without_a_limit(cores: int) -> None:
    assert thread_count() == cores


def test_omp_num_threads_and_the_process_cap_both_bound_it(
    cores: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit_threads(3)
    assert thread_count() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert thread_count() == 2  # the lower of the two
    monkeypatch.setenv("OMP_NUM_THREADS", "16")
    assert thread_count() == 3
    limit_threads(None)
    assert thread_count() == cores  # lifted: the cores, OMP_NUM_THREADS above them


def test_the_cap_is_at_least_one_thread_and_leaves_the_environment_alone(cores: int) -> None:
    limit_threads(0)
    assert thread_count() == 1
    assert "OMP_NUM_THREADS" not in os.environ


class _Counter:
    """A stand-in for the pool's ``multiprocessing.Value("i")``: a value and its lock."""

    def __init__(self) -> None:
        import threading

        self.value = 0
        self._lock = threading.Lock()

    def get_lock(self):
        return self._lock


def test_a_pool_worker_gets_the_cores_shared_among_the_busy_workers(cores: int) -> None:
    busy = _Counter()
    share_cores(cores, busy)
    with busy_worker():
        assert busy.value == 1 and thread_count() == 8  # alone: every core
        busy.value += 2  # two more workers compute
        assert thread_count() == 2  # 8 // 3
        busy.value += 6  # nine in all
        assert thread_count() == 1  # at least one
        busy.value -= 8
    assert busy.value == 0
    limit_threads(1)  # a cap of this process still bounds it
    assert thread_count() == 1


def test_outside_a_pool_busy_worker_changes_nothing(cores: int) -> None:
    with busy_worker():
        assert thread_count() == cores
