"""median_nonnegative: the median of nonnegative float64 values from counts of their leading
bits, in threads, against numpy's own ``np.median``, bit for bit. The counting is forced on
small arrays (every size counted, pieces of 50 elements) so that odd sizes, ties, bins that
split the middle ranks and pieces that end inside a thread's part are all met."""

from __future__ import annotations

import math

import numpy as np
import pytest

from precision import median
from precision.median import median_nonnegative
from precision.threads import blocks

#: numpy's own median, kept before any test replaces ``np.median`` by a spy.
NP_MEDIAN = np.median


def _same(got: float, want: float) -> bool:
    return (
        math.isnan(got)
        and math.isnan(want)
        or (np.float64(got).view(np.uint64) == np.float64(want).view(np.uint64))
    )


def _values(rng: np.random.Generator, kind: int, n: int) -> np.ndarray:
    """Nonnegative values of one of nine kinds (the last three take np.median's path)."""
    if kind == 0:  # many binades
        return np.exp2(rng.uniform(-60, 10, n))
    if kind == 1:  # a few distinct values: ties at the middle
        return rng.choice([0.0, 1e-7, 2e-7, 3e-7, 4e-7], n)
    if kind == 2:  # a gap at the middle: the middle ranks in two bins far apart
        half = n // 2
        return np.concatenate(
            [np.exp2(rng.uniform(-40, -35, half)), np.exp2(rng.uniform(5, 9, n - half))]
        )
    if kind == 3:  # zeros (+0.0), a third of them
        x = np.abs(rng.standard_normal(n)) * 1e-7
        x[rng.random(n) < 0.3] = 0.0
        return x
    if kind == 4:  # subnormal values (2^-1026 to 2^-1022) and a few normal ones above
        return np.exp2(rng.uniform(-1026, -1021.5, n))
    if kind == 5:  # near the top of the range: the sum of the middle two overflows
        return rng.uniform(0.9e308, 1.79e308, n)
    x = np.abs(rng.standard_normal(n)) * 1e-7
    special = {6: np.nan, 7: np.inf, 8: -0.0}[kind]
    x[rng.random(n) < 0.05] = special
    x[rng.integers(n)] = special  # at least one
    return x


@pytest.fixture
def count_small(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every array counted, in pieces of 50; the list records the calls that fell back to
    np.median."""
    fallbacks: list[int] = []

    def spy(x, *args, **kwargs):
        fallbacks.append(x.size)
        return NP_MEDIAN(x, *args, **kwargs)

    monkeypatch.setattr(median, "COUNTED_FROM", 1)
    monkeypatch.setattr(median, "PIECE", 50)
    monkeypatch.setattr(median.np, "median", spy)
    return fallbacks


def test_equals_np_median_bit_for_bit(count_small: list[int]) -> None:
    """On 450 arrays of 1 to 400 values, split over 1 to 4 threads, the result is
    np.median's, bits included; the counted path gives it for the first six kinds and
    np.median itself for NaN, +Inf and -0.0. The array is left as it was."""
    rng = np.random.default_rng(41)
    counted = [0] * 9
    for trial in range(450):
        kind, n = trial % 9, int(rng.integers(1, 400))
        x = _values(rng, kind, n)
        before = x.copy()
        parts = blocks(n, int(rng.integers(1, 5)))
        calls = len(count_small)
        with np.errstate(over="ignore"):  # (kind 5: both sum the middle two to inf)
            want = float(NP_MEDIAN(x.copy()))
            got = median_nonnegative(x, parts)
        assert _same(got, want), (trial, kind, n, got, want)
        assert np.array_equal(x.view(np.uint64), before.view(np.uint64))
        counted[kind] += len(count_small) == calls
    # NaN, +Inf and -0.0 always go to np.median; the others are counted but where the middle
    # bins hold more than a quarter of the values (a few values alike, small arrays)
    assert counted[6:] == [0, 0, 0]
    assert min(counted[:6]) >= 35 and sum(counted[:6]) >= 270, counted


def test_nearly_equal_values_take_np_median(count_small: list[int]) -> None:
    """Values that all fall in the middle bins (more than MOST_GATHERED of them) are left to
    np.median, which then partitions the array in place where overwrite is given."""
    x = np.full(1000, 3.5e-8)
    x[::3] = 3.6e-8
    assert median_nonnegative(x, blocks(1000, 3), overwrite=True) == 3.5e-8
    assert count_small == [1000]


def test_below_the_counting_size_np_median_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fewer than COUNTED_FROM values: np.median, whose call costs less than the counts."""
    calls: list[int] = []
    monkeypatch.setattr(median.np, "median", lambda x, **kw: calls.append(x.size) or NP_MEDIAN(x))
    x = np.arange(median.COUNTED_FROM - 1, dtype=np.float64)
    assert median_nonnegative(x) == float(NP_MEDIAN(x)) and calls == [x.size]
    y = np.arange(median.COUNTED_FROM, dtype=np.float64)[::-1].copy()
    assert median_nonnegative(y) == float(NP_MEDIAN(y)) and calls == [x.size]


def test_large_array_in_threads() -> None:
    """2^20 errors over ten binades at the shipped settings, on four threads and on one."""
    rng = np.random.default_rng(42)
    x = np.abs(rng.standard_normal(1 << 20)) * np.exp2(rng.integers(-40, -30, 1 << 20))
    want = float(np.median(x))
    assert _same(median_nonnegative(x, blocks(x.size, 4)), want)
    assert _same(median_nonnegative(x[:-1]), float(np.median(x[:-1])))  # odd size, one part
