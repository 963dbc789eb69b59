"""CPU fp32/fp64 baselines: the emulated fp32 FMA-chain SGEMM against exact arithmetic, and
numpy's own float32/float64 matmul as the ``numpy`` backend of :func:`precision.gemm.gemm`."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from precision.gemm import BACKENDS, available_backends, gemm
from precision.gemm.api import CPU_BASELINES
from precision.gemm.sgemm import fma_chain_sgemm

F32_MIN_SUB = Fraction(1, 2**149)
F32_OVERFLOW = Fraction(2**128 - 2**103)  # FLT_MAX + half an ulp: rounds to Inf (tie to even)


def round_fp32(x: Fraction, sign_if_zero: float = 1.0) -> float:
    """``x`` rounded once to fp32 (nearest even, subnormals, overflow to Inf), exactly."""
    if x == 0:
        return math.copysign(0.0, sign_if_zero)
    neg, ax = x < 0, abs(x)
    if ax >= F32_OVERFLOW:
        return -math.inf if neg else math.inf
    e = ax.numerator.bit_length() - ax.denominator.bit_length()
    if Fraction(2) ** e > ax:
        e -= 1  # now 2^e <= ax < 2^(e+1)
    quantum = max(Fraction(2) ** (e - 23), F32_MIN_SUB)
    value = float(round(ax / quantum) * quantum)  # Fraction.__round__: half to even
    return -value if neg else value


def fma_chain_reference(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """The fp32 FMA chain d = fl32(a*b + d), k increasing, d_0 = +0, in exact arithmetic."""
    M, K = A.shape
    N = B.shape[1]
    out = np.empty((M, N), np.float32)
    for i in range(M):
        for j in range(N):
            d = 0.0
            for k in range(K):
                a, b = float(A[i, k]), float(B[k, j])
                exact = Fraction(a) * Fraction(b) + Fraction(d)
                # an exact zero sum is -0 only for (-0) + (-0); a rounded-away value keeps its sign
                zero_sign = (
                    -1.0
                    if (a * b == 0 and math.copysign(1, a * b) < 0 and math.copysign(1, d) < 0)
                    else 1.0
                )
                d = round_fp32(exact, zero_sign)
            out[i, j] = d
    return out


def bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float32).view(np.uint32)


def f32(*values: float) -> np.ndarray:
    out = np.array(values, np.float64)
    assert np.all(out.astype(np.float32).astype(np.float64) == out), "not fp32 values"
    return out.astype(np.float32)


@pytest.mark.parametrize("tile", [1, 7, 1 << 15])
def test_fma_chain_matches_exact_arithmetic_on_wide_exponents(tile):
    # Significands and exponents drawn so that products and sums span fp32's whole range,
    # subnormals included, and many sums lose bits in float64.
    rng = np.random.default_rng(7)
    M, K, N = 5, 24, 6
    A = np.ldexp(rng.uniform(-2, 2, (M, K)), rng.integers(-80, 60, (M, K))).astype(np.float32)
    B = np.ldexp(rng.uniform(-2, 2, (K, N)), rng.integers(-80, 60, (K, N))).astype(np.float32)
    A[0, :4] = f32(2.0**-149, -(2.0**-140), 3 * 2.0**-149, 0.0)  # subnormal inputs
    got = fma_chain_sgemm(A, B, tile_elements=tile)
    np.testing.assert_array_equal(bits(got), bits(fma_chain_reference(A, B)))


def test_fma_chain_matches_exact_arithmetic_on_uniform_inputs():
    rng = np.random.default_rng(3)
    A = rng.uniform(-1, 1, (4, 64)).astype(np.float32)
    B = rng.uniform(-1, 1, (64, 3)).astype(np.float32)
    np.testing.assert_array_equal(bits(fma_chain_sgemm(A, B)), bits(fma_chain_reference(A, B)))


# Each case: A (1 x 2), B (2 x 1), chain d1 = fl(a0*b0), d2 = fl(a1*b1 + d1). The float64 sum
# a1*b1 + d1 is exactly an fp32 tie although the exact sum is not: casting it (double rounding)
# rounds to even, the wrong way.
DOUBLE_ROUNDING_CASES = {
    # 1 + 2^-23 - 2^-24 + 2^-70: just above the tie between 1 and 1 + 2^-23
    "above-tie": (
        f32(1 + 2.0**-23, -(2.0**-24) * (1 + 2.0**-23)),
        f32(1.0, 1 - 2.0**-23),
        1 + 2.0**-23,
    ),
    # 1 + 2^-23 + 2^-24 - 2^-70: just below the tie between 1 + 2^-23 and 1 + 2^-22
    "below-tie": (
        f32(1 + 2.0**-23, 2.0**-24 * (1 + 2.0**-23)),
        f32(1.0, 1 - 2.0**-23),
        1 + 2.0**-23,
    ),
    # subnormal result: (2^23 + 1) 2^-150 + 2^-196, just above a tie of the subnormal grid
    "subnormal-tie": (
        f32((2**22 + 1) * 2.0**-149, -(2.0**-75) * (1 + 2.0**-23)),
        f32(1.0, 2.0**-75 * (1 - 2.0**-23)),
        (2**22 + 1) * 2.0**-149,
    ),
}


@pytest.mark.parametrize("case", DOUBLE_ROUNDING_CASES)
def test_fma_chain_rounds_once_where_float64_lands_on_an_fp32_tie(case):
    a, b, expected = DOUBLE_ROUNDING_CASES[case]
    A, B = a.reshape(1, 2), b.reshape(2, 1)
    ref = fma_chain_reference(A, B)
    assert float(ref[0, 0]) == expected  # the exact arithmetic says so
    naive = np.float32(np.float64(a[1]) * np.float64(b[1]) + np.float64(np.float32(a[0] * b[0])))
    assert float(naive) != expected  # double rounding gets it wrong
    assert float(fma_chain_sgemm(A, B)[0, 0]) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected_bits"),
    [
        ([2.0**127, 2.0**127, -(2.0**127)], [1, 1, 1], 0x7F800000),  # 2^128 overflows: Inf stays
        ([np.inf, 1.0], [1.0, -5.0], 0x7F800000),  # Inf propagates
        ([np.inf, 1.0], [0.0, 1.0], 0x7FFFFFFF),  # Inf * 0 -> NaN
        ([np.inf, -np.inf], [1.0, 1.0], 0x7FFFFFFF),  # Inf - Inf -> NaN
        ([-np.nan, 1.0], [1.0, 1.0], 0x7FFFFFFF),  # a NaN input's payload is not kept
    ],
)
def test_fma_chain_specials_follow_ieee_with_the_gpu_canonical_nan(a, b, expected_bits):
    A = np.array([a], np.float32)
    B = np.array(b, np.float32).reshape(-1, 1)
    assert bits(fma_chain_sgemm(A, B)).tolist() == [[expected_bits]]


def test_fma_chain_keeps_signed_zeros_like_fmaf():
    A = np.array([[-(2.0**-100), 0.0]], np.float32)  # (-2^-100)(2^-100) = -2^-200 -> -0
    B = np.array([[2.0**-100], [-1.0]], np.float32)  # then (-0) + (-0) = -0
    out = fma_chain_sgemm(A, B)
    ref = fma_chain_reference(A, B)
    assert bits(out).tolist() == bits(ref).tolist() == [[0x80000000]]


def test_fma_chain_memory_does_not_grow_with_k(traced_peak):
    """The chain made float64 copies of A and B first: 8 bytes per input element (2 GiB
    for 1 x 65536 x 4096), against its documented working set of a few tiles. Now the
    temporaries are those of one tile (here 256 outputs: a few KiB), whatever K is."""
    rng = np.random.default_rng(7)
    for k in (1024, 8192):
        A = rng.standard_normal((1, k)).astype(np.float32)
        B = rng.standard_normal((k, 256)).astype(np.float32)
        peak = traced_peak(lambda A=A, B=B: fma_chain_sgemm(A, B))
        assert peak < 64 * 1024, (k, peak)  # (B alone is 1 to 8 MiB; a float64 copy twice that)


def test_emulator_backend_fp32_is_the_fma_chain_and_refuses_other_methods():
    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, (9, 33)).astype(np.float32)
    B = rng.uniform(-1, 1, (33, 5)).astype(np.float32)
    got = gemm(A, B, method="plain", fmt="fp32", backend="emulator")
    np.testing.assert_array_equal(bits(got), bits(fma_chain_reference(A, B)))
    assert got.dtype == np.float32
    for method in ("corrected", "satf"):
        with pytest.raises(ValueError, match="fmt='fp32'.*method='plain' only"):
            gemm(A, B, method=method, fmt="fp32", backend="emulator")


def test_every_listed_cpu_baseline_runs():
    A = np.eye(3, 4, dtype=np.float32)
    B = np.arange(8, dtype=np.float32).reshape(4, 2)
    for method, fmt, backend in CPU_BASELINES:
        out = gemm(A, B, method=method, fmt=fmt, backend=backend)
        np.testing.assert_array_equal(out, (A @ B).astype(out.dtype))  # exact: small integers


def test_numpy_backend_is_numpy_matmul_in_float32_and_float64():
    assert "numpy" in BACKENDS and available_backends()["numpy"] is None
    rng = np.random.default_rng(1)
    A = rng.uniform(-1, 1, (17, 40)).astype(np.float32)
    B = rng.uniform(-1, 1, (40, 11)).astype(np.float32)
    d32 = gemm(A, B, method="plain", fmt="single", backend="numpy")
    assert d32.dtype == np.float32
    np.testing.assert_array_equal(d32, A @ B)
    d64 = gemm(A, B, method="plain", fmt="fp64", backend="numpy")
    assert d64.dtype == np.float64
    np.testing.assert_array_equal(d64, A.astype(np.float64) @ B.astype(np.float64))
    with pytest.raises(ValueError, match="backend='numpy'.*fp32, fp64"):
        gemm(A, B, method="plain", fmt="fp16", backend="numpy")
    with pytest.raises(ValueError, match="backend='numpy'.*method='plain' only"):
        gemm(A, B, method="corrected", fmt="fp32", backend="numpy")
    with pytest.raises(ValueError, match=r"fmt='fp64'.*backend='numpy' or 'cublas' \(DGEMM\) only"):
        gemm(A, B, method="plain", fmt="fp64", backend="emulator")


def test_the_numpy_backend_with_the_default_fmt_says_where_f16_came_from():
    """gemm(A, B, backend="numpy") said "got 'f16'" to a user who passed no fmt."""
    with pytest.raises(ValueError, match="gemm's fmt defaults to 'f16'.*pass fmt='fp32' or 'fp64'"):
        gemm(np.ones((2, 2)), np.ones((2, 2)), backend="numpy")
