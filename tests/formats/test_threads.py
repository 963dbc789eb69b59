"""precision.threads: how many threads a call may use, and the per-process cap."""

from __future__ import annotations

import os

import pytest

from precision import threads
from precision.threads import limit_threads, thread_count


@pytest.fixture
def cores(monkeypatch: pytest.MonkeyPatch) -> int:
    """A machine of 8 cores, no OMP_NUM_THREADS and no cap; the cap is put back after."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "_process_limit", None)
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
