"""The Ozaki-II CUDA kernels' own source (precision/kernels/ozaki2.cu), compiled by g++ with
host shims and run on the CPU through the real ``ozaki2_cuda`` pipeline, against the exact
spec reference (``precision.gemm.ozaki_cuda_check --cpu --host``): both GEMM paths, specials,
``terms="auto"``, fp32, up to 20 moduli. Catches kernel arithmetic errors without a GPU.
Without a GPU, the GPU checks stop at once with one line."""

from __future__ import annotations

import shutil

import pytest

import precision.gpu
from precision.gemm import ozaki_cuda_check, ozaki_gemm_check


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to compile the kernel source")
def test_kernel_source_replayed_on_the_cpu_matches_the_spec(capsys: pytest.CaptureFixture) -> None:
    rc = ozaki_cuda_check.main(["--cpu", "--host"])
    out = capsys.readouterr().out
    assert rc == 0 and "ALL OK" in out, out[-2000:]


@pytest.mark.parametrize(
    ("module", "hint"),
    [(ozaki_cuda_check, "; --cpu [--host] runs the CPU checks alone"), (ozaki_gemm_check, "")],
    ids=["ozaki_cuda_check", "ozaki_gemm_check"],
)
def test_gpu_checks_without_a_gpu_are_one_line_before_any_work(
    module, hint, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    # they used to run their CPU part (ptxas, the arithmetic checks) and then end in a
    # RuntimeError traceback from require_gpu
    reason = "CuPy is not importable (test double); install precision[gpu]"
    monkeypatch.setattr(precision.gpu, "unavailable_reason", lambda: reason)
    monkeypatch.setattr(precision.gpu, "cupy_or_none", lambda: None)
    assert module.main([]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    what = f"python -m {module.__name__}"
    assert err.splitlines() == [
        f"error: {what} needs an NVIDIA GPU with CuPy, but {reason}{hint or '.'}"
    ]


def test_the_row_kernel_is_the_one_of_the_module_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host replay puts host-compiled kernels in the CUDA module's place for a while. The
    fused row kernel was cached once per process, so on a GPU machine a GPU test run after a
    host replay in the same process launched the host kernel on CuPy arrays (and failed)."""
    from precision.gemm import ozaki_cuda

    class Kernel:  # (takes the shared-memory attribute as a CuPy RawKernel does)
        pass

    class Module:
        def __init__(self) -> None:
            self.kernel = Kernel()

        def get_function(self, name: str) -> Kernel:
            assert name == "oz2_rows_fused"
            return self.kernel

    first, second = Module(), Module()
    monkeypatch.setattr(ozaki_cuda, "_module", lambda inp="f64": first)
    assert ozaki_cuda._kernel("oz2_rows_fused") is first.kernel
    monkeypatch.setattr(ozaki_cuda, "_module", lambda inp="f64": second)
    assert ozaki_cuda._kernel("oz2_rows_fused") is second.kernel
    want = 8 * ozaki_cuda.ROWS_FUSED_MAX_KP
    assert first.kernel.max_dynamic_shared_size_bytes == want  # type: ignore[attr-defined]
    assert second.kernel.max_dynamic_shared_size_bytes == want  # type: ignore[attr-defined]
