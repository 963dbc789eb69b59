"""error_metrics: the relative errors every results row carries, against a direct formula
(np.where over full-size temporaries), bit for bit, with zeros, signed zeros, NaN and Inf; its
memory stays near two float64 arrays of the output's size."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from precision.metrics import error_metrics


def _direct(approx, exact, exact_lo=None) -> dict[str, float]:
    """The definition, written plainly: one new array per step."""
    a = np.asarray(approx, dtype=np.float64)
    e = np.asarray(exact, dtype=np.float64)
    diff = a - e
    if exact_lo is not None:
        diff = diff - exact_lo
    norm, dnorm = np.linalg.norm(e), np.linalg.norm(diff)
    fro = dnorm / norm if norm > 0 else (0.0 if dnorm == 0 else np.inf)
    if diff.size == 0:
        return {"err_fro": float(fro), "err_max": 0.0, "err_median": 0.0}
    ad, ae = np.abs(diff), np.abs(e)
    rel = np.where(ae > 0, ad / np.where(ae > 0, ae, 1.0), np.where(ad == 0, 0.0, np.inf))
    return {"err_fro": float(fro), "err_max": float(rel.max()), "err_median": float(np.median(rel))}


def _bits(d: dict[str, float]) -> dict[str, bytes]:
    return {k: np.float64(v).tobytes() for k, v in d.items()}


@pytest.mark.parametrize("seed", range(6))
def test_equals_the_direct_formula_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for trial in range(40):
        shape = tuple(int(s) for s in rng.integers(0, 9, size=rng.integers(1, 3)))
        e = rng.standard_normal(shape) * 2.0 ** rng.integers(-30, 30, shape)
        a = e * (1 + 1e-7 * rng.standard_normal(shape))
        for x in (e, a):
            u = rng.random(shape)
            x[u < 0.1] = 0.0
            x[(u >= 0.1) & (u < 0.13)] = -0.0
            if trial % 3 == 0:
                x[(u >= 0.13) & (u < 0.15)] = np.nan
            if trial % 5 == 0:
                x[(u >= 0.15) & (u < 0.17)] = -np.inf
        approx = [a, a.astype(np.float32)][trial % 2]
        lo = rng.standard_normal(shape) * 1e-20 if trial % 4 == 0 else None
        kept = (e.copy(), approx.copy())
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            want, got = _direct(approx, e, lo), error_metrics(approx, e, lo)
        assert _bits(got) == _bits(want), (shape, got, want)
        # the inputs are never written
        assert np.array_equal(e, kept[0], equal_nan=True)
        assert np.array_equal(approx, kept[1], equal_nan=True)


def test_memory_stays_near_two_output_sized_arrays() -> None:
    rng = np.random.default_rng(0)
    e = rng.standard_normal((1024, 1024))
    a = (e * (1 + 1e-7 * rng.standard_normal(e.shape))).astype(np.float32)
    tracemalloc.start()
    try:
        error_metrics(a, e)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 2.6 * e.nbytes, peak / e.nbytes  # the direct formula: about 7x
