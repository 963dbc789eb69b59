"""The Ozaki-I CUDA path (precision/kernels/ozaki1.cu through ``ozaki1_cuda``) replayed on the
CPU: the kernel source compiled by g++ with host shims, cuBLAS's slice products in exact
float64, compared bit for bit with the emulator (``python -m precision.gemm.ozaki1_cuda_check``);
and the slice-product plan checked to cover every pair and k exactly once within the
exactness bounds."""

from __future__ import annotations

import shutil

import pytest

from precision.gemm import ozaki1_cuda_check
from precision.gemm.ozaki1_cuda import GROUP_PLANES


def test_slice_pieces_cover_every_pair_once_within_the_bounds() -> None:
    r = ozaki1_cuda_check.pieces_cover_every_pair()
    assert r["plans"] > 200 and r["bad"] == 0, r


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to compile the kernel source")
def test_kernel_source_replayed_on_the_cpu_matches_the_emulator() -> None:
    results = ozaki1_cuda_check.host_pipeline()
    assert len(results) == len(ozaki1_cuda_check.CASES) + len(ozaki1_cuda_check.F32_CASES)
    bad = [r for r in results if not r["ok"]]
    assert not bad, bad
    # the cases reach what they are there for: carried accumulators, several blocks, T = 1
    assert any(r["planes"] > GROUP_PLANES for r in results)
    assert any(r["blocks"][0] < r["m"] and r["blocks"][1] < r["n"] for r in results)
    assert any(r["T"] == 1 for r in results)
    # float32 operands reach the kernels as float32 (no float64 copy), both digit formats
    f32 = [r for r in results if r["dtype"] == "float32"]
    assert {r["fmt"] for r in f32} == {"int8", "fp16"} and all(
        r["read_as"] == ["float32"] for r in f32
    )
