"""cuBLAS baselines: argument checking on CPU, arithmetic on the GPU."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from precision.gpu import gpu_available
from precision.vendor import cublas
from precision.vendor.cublas import MODES, cublas_gemm


def test_unknown_mode_is_rejected_naming_the_modes():
    with pytest.raises(ValueError, match="mode must be one of .*sgemm"):
        cublas_gemm(np.eye(2), np.eye(2), mode="fp8")


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU message")
def test_without_gpu_raises_runtime_error_naming_the_call():
    with pytest.raises(RuntimeError, match="cublas_gemm"):
        cublas_gemm(np.eye(2), np.eye(2), mode="sgemm")


def test_bf16_rounding_matches_a_single_rounding_from_fp32():
    """The integer RNE used for the bf16 mode equals ml_dtypes' fp32→bf16 (one rounding)."""
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    # Add ties and carries into the exponent explicitly.
    ties = (rng.integers(0, 2**16, size=1000).astype(np.uint32) << 16) | np.uint32(0x8000)
    x = np.concatenate([bits, ties, np.array([0x7F7FFFFF, 0x3F7FFFFF], np.uint32)]).view(np.float32)
    finite = np.isfinite(x)
    got = cublas._bf16_bits(np, x[finite])
    want = x[finite].astype(ml_dtypes.bfloat16).view(np.uint16)
    np.testing.assert_array_equal(got, want)
    nan_bits = cublas._bf16_bits(np, np.array([np.nan], np.float32))
    assert np.isnan(nan_bits.view(ml_dtypes.bfloat16).astype(np.float32))[0]


@pytest.mark.gpu
@pytest.mark.parametrize("mode", MODES)
def test_small_integer_products_are_exact_and_correctly_oriented(mode):
    """Small integers are exact in every format and every partial sum: result == A@B."""
    import cupy as cp

    rng = np.random.default_rng(1)
    a = rng.integers(-8, 9, size=(37, 50)).astype(np.float32)
    b = rng.integers(-8, 9, size=(50, 23)).astype(np.float32)
    got = cp.asnumpy(cublas_gemm(a, b, mode=mode))
    assert got.dtype == np.float32 and got.shape == (37, 23)
    np.testing.assert_array_equal(got, a.astype(np.float64) @ b.astype(np.float64))


@pytest.mark.gpu
def test_error_levels_against_float64():
    """Relative Frobenius errors on uniform(-1,1), n=512, land where each format says."""
    import cupy as cp

    rng = np.random.default_rng(2)
    a = rng.uniform(-1, 1, (512, 512)).astype(np.float32)
    b = rng.uniform(-1, 1, (512, 512)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)

    def err(mode: str) -> float:
        got = cp.asnumpy(cublas_gemm(a, b, mode=mode)).astype(np.float64)
        return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))

    assert err("sgemm") < 1e-6
    assert 1e-5 < err("f16") < 2e-3
    assert 1e-5 < err("bf16") < 1e-2
    assert 1e-5 < err("tf32") < 2e-3
    assert err("f16_corrected3") < err("f16") / 20
