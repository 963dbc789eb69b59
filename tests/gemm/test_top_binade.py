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
