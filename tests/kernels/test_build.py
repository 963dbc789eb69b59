"""``precision.kernels.build`` refuses builds in which ptxas serialised wgmma (no GPU needed;
the nvcc test runs where nvcc is installed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from precision.kernels import build

# ptxas's wording (nvcc 13), as printed for a kernel of ours during development
SERIALIZED = (
    "ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async instructions are "
    "serialized due to non wgmma instructions defining input registers of a wgmma between "
    "start and end of the pipeline stage in the function 'wg_ootomo_tf32'\n"
)
HARMLESS = "ptxas info    : 0 bytes gmem\nptxas info    : Compiling entry function 'k'\n"


def test_serialisation_notes_are_found_and_nothing_else() -> None:
    notes = build.serialized_wgmma_notes(HARMLESS + SERIALIZED + HARMLESS)
    assert len(notes) == 1
    assert "'wg_ootomo_tf32'" in notes[0] and "C7513" in notes[0]
    assert build.serialized_wgmma_notes(HARMLESS) == []


def test_run_nvcc_refuses_a_serialised_build(monkeypatch: pytest.MonkeyPatch) -> None:
    class Done:
        returncode, stdout, stderr = 0, "", HARMLESS + SERIALIZED

    monkeypatch.setattr(build.subprocess, "run", lambda *a, **k: Done())
    with pytest.raises(RuntimeError, match=r"serialised wgmma.*\n.*\n.*C7513"):
        build.run_nvcc(["-cubin", "x.cu"], what="building x.cu", nvcc="nvcc")


def test_run_nvcc_returns_the_notes_of_a_clean_build(monkeypatch: pytest.MonkeyPatch) -> None:
    class Done:
        returncode, stdout, stderr = 0, "", HARMLESS

    monkeypatch.setattr(build.subprocess, "run", lambda *a, **k: Done())
    assert build.run_nvcc(["-cubin", "x.cu"], what="building x.cu", nvcc="nvcc") == HARMLESS


def _has_nvcc() -> bool:
    try:
        build.find_nvcc()
    except RuntimeError:
        return False
    return True


@pytest.mark.skipif(not _has_nvcc(), reason="nvcc not installed")
def test_the_wgmma_kernels_build_without_serialisation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real source through the real ptxas: a build that serialised would raise."""
    monkeypatch.setenv("PRECISION_CACHE_DIR", str(tmp_path))
    cubin = build.build_cubin("gemm_wgmma.cu", arch="sm_90a")
    assert cubin.stat().st_size > 0
