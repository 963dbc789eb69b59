"""The GPU tools run as ``python -m ...`` (and their shell script) on a machine without CuPy:
one ``error:`` line on stderr, exit 2, nothing written; ``--help`` prints usage and does
nothing else."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "precision" / "probe" / "scripts" / "record_wmma_wgmma_extra.sh"
WGMMA_OPS = ROOT / "precision" / "kernels" / "wgmma_ops.cuh"

no_cupy = pytest.mark.skipif(
    importlib.util.find_spec("cupy") is not None,
    reason="CuPy is importable: on a GPU machine these commands would run",
)


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHON": sys.executable}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _assert_one_error_line(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    assert "GPU" in lines[0] and "CuPy" in lines[0]


@no_cupy
@pytest.mark.parametrize(
    "args",
    [
        ["precision.gemm.record", "record", "mine.npz"],
        ["precision.probe.wmma", "record", "out"],
        ["precision.probe.wgmma", "record", "out"],
        ["precision.probe.wgmma", "record", "out", "--extra"],
        ["precision.probe.tf32_cvt"],
        ["precision.gemm.ozaki_bench", "--out", "out"],
    ],
    ids=lambda a: " ".join(a),
)
def test_gpu_tool_without_cupy_prints_one_error_line(tmp_path, args):
    _assert_one_error_line(_run([sys.executable, "-m", *args], tmp_path))
    assert list(tmp_path.iterdir()) == []


@no_cupy
def test_record_script_without_gpu_stops_before_creating_anything(tmp_path):
    out = tmp_path / "out"
    _assert_one_error_line(_run(["bash", str(SCRIPT), str(out)], tmp_path))
    assert not out.exists()


@pytest.mark.parametrize(
    "args",
    [
        ["precision.probe.wmma", "record", "--help"],
        ["precision.probe.wgmma", "record", "--help"],
        ["precision.probe.wmma", "--help"],
    ],
    ids=lambda a: " ".join(a),
)
def test_help_prints_usage_and_records_nothing(tmp_path, args):
    proc = _run([sys.executable, "-m", *args], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage:") and proc.stderr == ""
    assert list(tmp_path.iterdir()) == []


def test_gen_wgmma_ops_help_does_not_regenerate(tmp_path):
    before = WGMMA_OPS.stat().st_mtime_ns, WGMMA_OPS.read_bytes()
    proc = _run([sys.executable, "-m", "precision.kernels.gen_wgmma_ops", "--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage:") and "wrote" not in proc.stdout
    assert (WGMMA_OPS.stat().st_mtime_ns, WGMMA_OPS.read_bytes()) == before
