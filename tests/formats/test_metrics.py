"""error_metrics: the relative errors every results row carries, against a direct formula
(np.where over full-size temporaries), bit for bit, with zeros, signed zeros, NaN and Inf; its
memory stays near two float64 arrays of the output's size. identical_bits_fraction: the
fraction of elements (not bits) with identical bit patterns, against known bit flips."""

from __future__ import annotations

import tracemalloc

import ml_dtypes
import numpy as np
import pytest

from precision.metrics import error_metrics, identical_bits_fraction


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


# ------------------------------------------------------------------ identical_bits_fraction

BIT_DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int32]


def _flip_bits(x: np.ndarray, flat_index: int, bits: list[int]) -> None:
    """Flip the given bit positions of element ``flat_index`` of ``x`` in place."""
    u = x.reshape(-1).view(f"u{x.dtype.itemsize}")
    for b in bits:
        u[flat_index] ^= u.dtype.type(1 << b)


@pytest.mark.parametrize("dtype", BIT_DTYPES)
def test_identical_bits_counts_elements_with_any_flipped_bit(dtype) -> None:
    """k elements of an m×n array with one or several of their bits flipped give exactly
    1 − k/(m·n): elements are counted, not bits, whichever bits (sign, exponent, last)."""
    m, n = 7, 13
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((m, n)) * 100).astype(dtype)
    nbits = 8 * x.dtype.itemsize
    for k in (0, 1, 2, 5, 40, m * n):
        y = x.copy()
        for i in rng.choice(m * n, size=k, replace=False):
            width = int(rng.integers(1, 4))  # 1 to 3 distinct bits of the same element
            _flip_bits(y, int(i), [int(b) for b in rng.choice(nbits, size=width, replace=False)])
        want = (m * n - k) / (m * n)  # 1 − k/(m·n), rounded once
        assert identical_bits_fraction(x, y) == want, (k, identical_bits_fraction(x, y))
        assert identical_bits_fraction(y, x) == want
        uint = f"u{x.dtype.itemsize}"
        assert np.count_nonzero(x.view(uint) != y.view(uint)) == k  # the setup flipped k


def test_identical_bits_of_strided_views_compare_elements_in_order() -> None:
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    assert identical_bits_fraction(x.T, np.ascontiguousarray(x.T)) == 1.0
    y = x.copy()
    _flip_bits(y, 1 * 6 + 2, [0])  # element (1, 2): one of 12 in x[:, ::2]
    assert identical_bits_fraction(x[:, ::2], y[:, ::2]) == 11 / 12
    assert identical_bits_fraction(x[:, 1::2], y[:, 1::2]) == 1.0  # the flip is not in there


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_identical_bits_compares_bits_not_values(dtype) -> None:
    """+0 and −0 are equal values with different bits; a NaN equals no value but has the same
    bits as itself; two NaNs with different payloads (or signs) differ."""
    itemsize = np.dtype(dtype).itemsize
    uint = np.dtype(f"u{itemsize}")
    qnan = np.array([np.nan], dtype=dtype).view(uint)[0]
    other_payload = np.array([qnan | uint.type(1)], dtype=uint).view(dtype)[0]
    neg_nan = np.array([qnan | uint.type(1 << (8 * itemsize - 1))], dtype=uint).view(dtype)[0]
    nan = np.array([qnan], dtype=uint).view(dtype)[0]
    assert np.isnan(other_payload) and np.isnan(neg_nan)
    x = np.array([[0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]], dtype=dtype)
    x[0, 2], x[0, 3] = nan, nan
    y = x.copy()
    assert identical_bits_fraction(x, y) == 1.0  # same NaN bits: identical, though nan != nan
    y[0, 0] = -0.0  # == +0.0 as a value
    assert y[0, 0] == x[0, 0]
    assert identical_bits_fraction(x, y) == 7 / 8
    y[0, 2] = other_payload
    assert identical_bits_fraction(x, y) == 6 / 8
    y[0, 3] = neg_nan
    assert identical_bits_fraction(x, y) == 5 / 8


@pytest.mark.parametrize(
    ("x", "y"),
    [
        (np.zeros((3, 4), np.float32), np.zeros((3, 4), np.float64)),  # same values
        (np.zeros((3, 4), np.float32), np.zeros((3, 4), np.int32)),  # same bits, same size
        (np.zeros((3, 4), np.float16), np.zeros((3, 4), ml_dtypes.bfloat16)),
        (np.zeros((3, 4), np.float32), np.zeros((4, 3), np.float32)),
        (np.zeros((3, 4), np.float32), np.zeros(12, np.float32)),
        (np.zeros((3, 4), np.float32), np.zeros((1, 4), np.float32)),  # would broadcast
    ],
)
def test_identical_bits_refuses_other_dtypes_and_shapes(x, y) -> None:
    with pytest.raises(ValueError, match="cannot compare bits"):
        identical_bits_fraction(x, y)
    with pytest.raises(ValueError, match="cannot compare bits"):
        identical_bits_fraction(y, x)
