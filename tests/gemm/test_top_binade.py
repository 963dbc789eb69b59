"""Corrected bf16/tf32 GEMM with finite inputs near FLT_MAX (issue 16, BAD finding 5).

``hi = fmt(x)`` rounds a finite x above the format's largest finite value up to Inf; the split
then gave Inf - Inf = NaN rows. The split clamps hi (and lo) to ±max_normal instead: the result
is finite and as accurate as elsewhere. The kernels do the same (GPU test: bit for bit against
the emulator)."""

from __future__ import annotations

import numpy as np
import pytest

from precision.gemm import gemm
from precision.gemm.operands import split_operand
from precision.metrics import error_metrics
from precision.reference import exact_matmul

FLT_MAX = np.finfo(np.float32).max


def _operands(n: int = 48) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20261123)
    A = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    B = (rng.uniform(-1, 1, (n, n)) * 1e-3).astype(np.float32)
    A[3, 5] = FLT_MAX
    A[7, 1] = -FLT_MAX
    A[9, 9] = np.nextafter(FLT_MAX, np.float32(0))
    return A, B


@pytest.mark.parametrize(("fmt", "bound"), [("tf32", 1e-6), ("bf16", 1e-4)])
def test_corrected_near_flt_max_is_finite_and_accurate(fmt, bound):
    A, B = _operands()
    D = gemm(A, B, method="corrected", fmt=fmt, backend="emulator")
    assert np.isfinite(D).all()
    err = error_metrics(D[[3, 7, 9]], exact_matmul(A, B)[[3, 7, 9]])
    assert err["err_max"] < bound, err


@pytest.mark.parametrize(("fmt", "s"), [("tf32", 0), ("bf16", 8)])
def test_split_clamps_only_the_overflowing_top(fmt, s):
    x = np.array([FLT_MAX, -FLT_MAX, np.inf, -np.inf, 1.5, np.nan], dtype=np.float32)
    hi, lo = split_operand(x, fmt, s)
    hi64, lo64 = hi.astype(np.float64), lo.astype(np.float64)
    assert np.isfinite(hi64[:2]).all() and np.isfinite(lo64[:2]).all()
    # hi + lo * 2^-s recovers FLT_MAX to the format's two-term precision
    rel = np.abs(hi64[:2] + lo64[:2] * 2.0**-s - x[:2].astype(np.float64)) / float(FLT_MAX)
    assert (rel < 2.0**-14).all()
    assert np.isposinf(hi64[2]) and np.isneginf(hi64[3])  # real infinities stay infinite
    assert hi64[4] == 1.5 and lo64[4] == 0.0
    assert np.isnan(hi64[5])


def test_fp16_split_is_unchanged_beyond_its_range():
    """fp16 cannot hold 3e38 at all: hi overflows to Inf as before (no fp32 range claimed)."""
    hi, _ = split_operand(np.array([FLT_MAX], np.float32), "fp16", 11)
    assert np.isinf(hi.astype(np.float64)).all()


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", ["tf32", "bf16"])
def test_cuda_near_flt_max_matches_emulator(fmt):
    A, B = _operands(200)
    want = gemm(A, B, method="corrected", fmt=fmt, backend="emulator")
    got = gemm(A, B, method="corrected", fmt=fmt, backend="cuda")
    assert np.array_equal(want.view(np.uint32), np.asarray(got).view(np.uint32))


#: The documented range of corrected GEMM near fp32's top (docs/gemm.md): every output whose
#: sum of product magnitudes sum_k |a_ik|·|b_kj| is at most this is finite. hi = fmt(x)
#: rounds |x| up by at most 2^-11 (tf32) or 2^-8 (bf16) of itself, so hi·hi stays below
#: 2^128 up to (1 - 2^-10)·2^128 (tf32), (1 - 2^-7)·2^128 (bf16); Ootomo's bf16 scale 2^8
#: makes each lo as large as its x, and two correction products in one accumulator halve it.
RANGES = {
    ("tf32", "ootomo"): (1 - 2.0**-10) * 2.0**128,
    ("tf32", "markidis"): (1 - 2.0**-10) * 2.0**128,
    ("bf16", "markidis"): (1 - 2.0**-7) * 2.0**128,
    ("bf16", "ootomo"): (1 - 2.0**-7) * 2.0**127,
}


def _range_operands(limit: float, k: int, ea: int, n: int = 160) -> tuple[np.ndarray, np.ndarray]:
    """A (n x k) with entries of exponent ``ea`` (FLT_MAX and its neighbour among them at ea =
    127) and B (k x n), random signs, with sums of product magnitudes from about 0.3 to 1.4
    times ``limit``."""
    rng = np.random.default_rng(1000 * k + ea)
    eb = int(np.log2(limit / k)) - ea - 1
    rows = rng.uniform(0.5, 2.5, (n, 1)) if ea < 127 else 1.0
    A = np.ldexp(rng.uniform(1, 2, (n, k)), ea) * rng.choice([-1, 1], (n, k)) * rows
    B = np.ldexp(rng.uniform(1, 2, (k, n)), eb) * rng.choice([-1, 1], (k, n))
    A, B = A.astype(np.float32), B.astype(np.float32)
    if ea == 127:
        A[:2, 0] = [FLT_MAX, -np.nextafter(FLT_MAX, np.float32(0))]
    return A, B


@pytest.mark.parametrize(("fmt", "correction"), list(RANGES))
@pytest.mark.parametrize("k", [1, 16])
def test_corrected_is_finite_and_accurate_up_to_its_documented_range(fmt, correction, k):
    """Products and sums of products around the top of fp32's range, inputs up to FLT_MAX
    (the clamped split included): finite and accurate wherever sum_k |a|·|b| is within the
    range, and single products above it do overflow (the limit is real: FLT_MAX·1 in
    corrected tf32 is +Inf, hi + lo rounding up to 2^128)."""
    limit = RANGES[fmt, correction]
    found_above = False
    for ea in (0, 64, 127):
        A, B = _range_operands(limit, k, ea)
        D = gemm(A, B, method="corrected", fmt=fmt, correction=correction).astype(np.float64)
        magnitude = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
        within = magnitude <= limit
        assert within.sum() > within.size // 8
        assert np.isfinite(D[within]).all()
        err = np.abs(D - exact_matmul(A, B))[within] / magnitude[within]
        assert err.max() < (2.0**-20 if fmt == "tf32" else 2.0**-14)
        found_above |= bool((~np.isfinite(D[~within])).any())
    assert found_above or k > 1  # (signed sums of 16 cancel: they seldom reach the top)
    if fmt == "tf32":
        one = np.ones((1, 1), np.float32)
        assert np.isposinf(gemm(one * FLT_MAX, one, method="corrected", fmt=fmt,
                                correction=correction))  # fmt: skip


@pytest.mark.gpu
@pytest.mark.parametrize(("fmt", "correction"), list(RANGES))
def test_cuda_at_the_documented_range_matches_emulator(fmt, correction):
    for k, ea in ((1, 127), (16, 0)):
        A, B = _range_operands(RANGES[fmt, correction], k, ea, n=300)
        kwargs = {"method": "corrected", "fmt": fmt, "correction": correction}
        want = gemm(A, B, backend="emulator", **kwargs)
        got = np.asarray(gemm(A, B, backend="cuda", **kwargs))
        assert np.array_equal(want.view(np.uint32), got.view(np.uint32)), (k, ea)
