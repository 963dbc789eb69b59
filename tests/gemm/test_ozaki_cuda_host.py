"""The Ozaki-II CUDA kernels' own source (precision/kernels/ozaki2.cu), compiled by g++ with
host shims and run on the CPU through the real ``ozaki2_cuda`` pipeline, against the exact
spec reference (``precision.gemm.ozaki_cuda_check --cpu --host``): both GEMM paths, specials,
``terms="auto"``, fp32, up to 20 moduli. Catches kernel arithmetic errors without a GPU."""

from __future__ import annotations

import shutil

import pytest

from precision.gemm import ozaki_cuda_check


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to compile the kernel source")
def test_kernel_source_replayed_on_the_cpu_matches_the_spec(capsys: pytest.CaptureFixture) -> None:
    rc = ozaki_cuda_check.main(["--cpu", "--host"])
    out = capsys.readouterr().out
    assert rc == 0 and "ALL OK" in out, out[-2000:]
