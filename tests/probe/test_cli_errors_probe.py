"""The CPU checking tools on bad input: one ``error:`` line naming the problem, exit status 2,
no traceback, and never a silent success on a mistyped path (the probe compare tools,
``precision.probe.facts`` and ``precision.gemm.record verify/compare``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from precision.gemm import record as gemm_record
from precision.probe import facts, wgmma, wmma

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def _one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    assert "Traceback" not in err
    return lines[0]


def _run_module(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


# -- wgmma / wmma compare --------------------------------------------------------------------


@pytest.mark.parametrize("tool", [wgmma, wmma], ids=["wgmma", "wmma"])
def test_compare_of_a_missing_directory_is_an_error(tool, tmp_path, capsys):
    missing = tmp_path / "nothere"
    assert tool.main(["compare", str(missing)]) == 2
    out, err = capsys.readouterr()
    line = _one_error_line(err)
    assert str(missing) in line and "no such directory" in line and "recordings" in line
    assert out == ""


@pytest.mark.parametrize("tool", [wgmma, wmma], ids=["wgmma", "wmma"])
def test_compare_of_a_directory_without_recordings_is_not_success(tool, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("no recordings here\n")
    assert tool.main(["compare", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    line = _one_error_line(err)
    assert f"recordings under {tmp_path}" in line and ".npz" in line
    assert out == ""


def test_wgmma_compare_names_the_glob_it_looked_for(capsys):
    assert wgmma.main(["compare", "nothere"]) == 2
    assert _one_error_line(capsys.readouterr().err).startswith(
        "error: no wgmma_*.npz recordings under nothere"
    )


def test_wgmma_compare_of_a_file_says_it_is_not_a_directory(capsys):
    path = DATA / "sm90_wgmma" / "wgmma_f16_f32.npz"
    assert wgmma.main(["compare", str(path)]) == 2
    assert "a file, not a directory" in _one_error_line(capsys.readouterr().err)


def test_wgmma_compare_of_recordings_still_prints_the_rates(capsys):
    assert wgmma.main(["compare", str(DATA / "sm90_wgmma")]) == 0
    out, err = capsys.readouterr()
    assert "## f16_f32" in out and err == ""


def test_compare_from_the_command_line_exits_2_without_traceback(tmp_path):
    proc = _run_module(["precision.probe.wgmma", "compare", "nothere"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    _one_error_line(proc.stderr)


# -- precision.probe.facts -------------------------------------------------------------------


def test_facts_of_a_missing_directory_is_one_line(tmp_path, capsys):
    assert facts.main([str(tmp_path / "nothere")]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "nothere" in line and "no such directory" in line and "tests/data/sm90" in line


def test_facts_of_a_directory_of_another_family_is_one_line(capsys):
    assert facts.main([str(DATA / "sm90_mma")]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "sm90_mma" in line and "no recordings" in line


def test_facts_of_a_file_that_is_no_recording_is_one_line(capsys):
    assert facts.main([str(ROOT / "README.md")]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "README.md" in line and "not an mma.sync recording" in line


def test_facts_from_the_command_line_exits_2_without_traceback(tmp_path):
    proc = _run_module(["precision.probe.facts", "nothere"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    _one_error_line(proc.stderr)


# -- precision.gemm.record verify / compare --------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["verify", "{missing}"],
        ["compare", "{missing}", "{real}"],
        ["compare", "{real}", "{missing}"],
    ],
    ids=["verify", "compare-new", "compare-old"],
)
def test_record_tools_name_a_missing_file(args, tmp_path, capsys):
    missing = str(tmp_path / "nothere.npz")
    real = str(DATA / "gemm" / "cuda_cases_sm90.npz")
    argv = [a.format(missing=missing, real=real) for a in args]
    assert gemm_record.main(argv) == 2
    out, err = capsys.readouterr()
    line = _one_error_line(err)
    assert missing in line and "no such recording" in line and ".npz" in line
    assert out == ""


def test_record_verify_of_a_file_that_is_not_an_npz(tmp_path, capsys):
    text = tmp_path / "notes.npz"
    text.write_text("not a zip archive\n")
    assert gemm_record.main(["verify", str(text)]) == 2
    assert "not an .npz recording" in _one_error_line(capsys.readouterr().err)
    assert gemm_record.main(["compare", str(tmp_path), str(text)]) == 2
    assert "not a file" in _one_error_line(capsys.readouterr().err)


def test_record_compare_of_real_recordings_still_works(tmp_path, capsys):
    real = DATA / "gemm" / "cuda_cases_sm90.npz"
    copy = tmp_path / "copy.npz"
    shutil.copy(real, copy)
    assert gemm_record.main(["compare", str(copy), str(real)]) == 0
    assert "0 different" in capsys.readouterr().out


def test_record_verify_from_the_command_line_exits_2_without_traceback(tmp_path):
    proc = _run_module(["precision.gemm.record", "verify", "nothere.npz"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    _one_error_line(proc.stderr)
