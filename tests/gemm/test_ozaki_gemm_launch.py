"""oz2_gemm_mod (INT8 GEMM + fused symmetric reduction mod m): builds through ptxas without
spills or serialised wgmma (needs nvcc); on a GPU, exact against an int64 numpy product on
small shapes, including ragged tiles and the largest |C|."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_kernel_builds_without_spills() -> None:
    """The real source through the real ptxas (run_nvcc raises on serialised wgmma)."""
    from precision.gemm.ozaki_gemm_check import ptxas_report

    report = ptxas_report()
    assert "oz2_gemm_mod" in report
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", report), report


MODULI = (256, 255, 173)


def _sym_mod(c: np.ndarray, m: int) -> np.ndarray:
    h = m // 2
    return (c + h) % m - h


@pytest.mark.gpu
@pytest.mark.parametrize(("M", "nbp", "kp"), [(256, 384, 384), (200, 272, 400), (128, 256, 1040)])
def test_gemm_mod_matches_int64_product(M: int, nbp: int, kp: int) -> None:
    import cupy as cp

    from precision.gemm.ozaki_gemm_launch import gemm_mod

    rng = np.random.default_rng(M + nbp + kp)
    L = len(MODULI)
    a = rng.integers(-128, 128, size=(L, M, kp), dtype=np.int8)
    b = rng.integers(-128, 128, size=(L, nbp, kp), dtype=np.int8)
    a[0, 0, :] = -128  # one row and column at the extreme: |C| = 2^14 kp
    b[0, 0, :] = -128
    R = cp.full((L, M, nbp), 99, dtype=cp.int8)
    gemm_mod(cp, cp.asarray(a), cp.asarray(b), R, M, nbp, kp, L, MODULI)
    got = cp.asnumpy(R).astype(np.int64)
    for l, m in enumerate(MODULI):
        c = a[l].astype(np.int64) @ b[l].astype(np.int64).T
        np.testing.assert_array_equal(got[l], _sym_mod(c, m), err_msg=f"modulus {m}")


@pytest.mark.gpu
def test_gemm_mod_rejects_bad_shapes() -> None:
    import cupy as cp

    from precision.gemm.ozaki_gemm_launch import gemm_mod

    a = cp.zeros((1, 128, 100), dtype=cp.int8)  # kp not a multiple of 16
    b = cp.zeros((1, 256, 100), dtype=cp.int8)
    R = cp.zeros((1, 128, 256), dtype=cp.int8)
    with pytest.raises(ValueError, match="multiples of 16"):
        gemm_mod(cp, a, b, R, 128, 256, 100, 1, [256])
