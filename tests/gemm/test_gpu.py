"""CUDA backend on a GPU: bit-identical to the emulator; cuBLAS baselines run."""

from __future__ import annotations

import numpy as np
import pytest

from precision.gemm import all_schedules, cuda_gemm, gemm
from precision.gemm.emulator import run_schedule

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("s", all_schedules(), ids=lambda s: s.kernel)
@pytest.mark.parametrize("shape", [(16, 16, 16), (130, 70, 257)])
def test_cuda_equals_emulator(s, shape):
    m, k, n = shape
    rng = np.random.default_rng(m + k + n)
    scale = 64.0 if s.fmt == "int8" else 1.0
    A = (rng.uniform(-1, 1, (m, k)) * scale).astype(np.float32)
    B = (rng.standard_normal((k, n)) * scale).astype(np.float32)
    got = cuda_gemm(A, B, s).get()
    want = run_schedule(A, B, s)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


_WGMMA_FALLBACKS = [
    s
    for s in all_schedules()
    if s.kernel.startswith("wg_")
    and (s.method == "satf" or (s.method == "corrected" and s.fmt in ("bf16", "tf32")))
]


@pytest.mark.parametrize("s", _WGMMA_FALLBACKS, ids=lambda s: s.kernel)
def test_device_gated_fallback_on_whole_tiles(s):
    """Shapes of whole tiles (no padding): satf queues its per-step-clamp kernel and corrected
    bf16/tf32 their top-binade scan and clamping build on the device, each returning at once
    unless its flag is set. Three cases against the emulator: finite inputs (no fallback
    acts); inputs times 2^120 (non-finite outputs: satf's strict kernel recomputes, the
    corrected scan runs but finds nothing beyond the range); and, for corrected bf16/tf32,
    an input at FLT_MAX, which only the clamping build keeps finite."""
    m, k, n = 128, 128, 256
    rng = np.random.default_rng(17)
    A = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32) * np.float32(1e-3)
    flt_max = np.finfo(np.float32).max
    at_max = A.copy()
    at_max[3, 5] = flt_max  # rounds up to Inf in bf16/tf32 without the clamp: a NaN row
    cases = [("finite", A, B), ("scaled", A * np.float32(2.0**120), B * np.float32(2.0**120))]
    if s.method == "corrected":
        cases.append(("at FLT_MAX", at_max, B))
    for label, As, Bs in cases:
        got = cuda_gemm(As, Bs, s).get()
        want = run_schedule(As, Bs, s)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=label)
        overflowed = (~np.isfinite(want) | (np.abs(want) == flt_max)).any()
        assert overflowed == (label == "scaled"), (label, s.kernel)


def test_cublas_baselines_run():
    """Each cuBLAS baseline of ``gemm`` is the cuBLAS mode it names (bit for bit), and its error
    on uniform inputs is at the level of what that mode rounds to."""
    from precision.vendor.cublas import cublas_gemm

    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, (256, 256)).astype(np.float32)
    B = rng.uniform(-1, 1, (256, 256)).astype(np.float32)
    exact = A.astype(np.float64) @ B

    def err(D: np.ndarray) -> float:
        return float(np.linalg.norm(D - exact) / np.linalg.norm(exact))

    # (method, fmt) -> (cuBLAS mode, largest error allowed, smallest error expected)
    levels = {
        ("plain", "fp32"): ("sgemm", 1e-6, 0.0),  # fp32 products and sums
        ("plain", "tf32"): ("tf32", 2e-3, 1e-5),  # inputs rounded to 11 bits
        ("plain", "fp16"): ("f16", 2e-3, 1e-5),
        ("plain", "bf16"): ("bf16", 1e-2, 1e-4),  # 8 bits
        ("corrected", "fp16"): ("f16_corrected3", 1e-5, 0.0),
    }
    for (method, fmt), (mode, most, least) in levels.items():
        D = np.asarray(gemm(A, B, method=method, fmt=fmt, backend="cublas"))
        same = cublas_gemm(A, B, mode=mode).get()
        np.testing.assert_array_equal(D.view(np.uint32), same.view(np.uint32))
        assert least < err(D) < most, (method, fmt, err(D))
