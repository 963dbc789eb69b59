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


def test_cublas_baselines_run():
    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, (64, 64)).astype(np.float32)
    B = rng.uniform(-1, 1, (64, 64)).astype(np.float32)
    exact = A.astype(np.float64) @ B
    for method, fmt in [
        ("plain", "fp32"),
        ("plain", "tf32"),
        ("plain", "fp16"),
        ("corrected", "fp16"),
    ]:
        D = gemm(A, B, method=method, fmt=fmt, backend="cublas")
        assert np.linalg.norm(D - exact) / np.linalg.norm(exact) < 1e-3
