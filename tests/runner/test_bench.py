"""``precision bench`` / ``bench-gemm`` outputs: new dated files, never a tracked one, one-line
errors without a GPU (issue 16, first hour item 2)."""

from __future__ import annotations

import datetime as dt
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from precision.gpu import cupy_or_none
from precision.runner.bench_output import default_path
from precision.runner.cli import main

REPO = Path(__file__).resolve().parents[2]
SMALL = ["--cpu-n", "16", "--exact-n", "16", "--formats", "f16", "--repeats", "1"]


def test_default_names_are_dated_host_named_and_ignored_by_git():
    now = dt.datetime(2026, 1, 2, 3, 4, 5)
    path = default_path("gemm", "NVIDIA H100 80GB HBM3", now=now)
    assert re.fullmatch(
        r"results/bench/gemm_nvidia-h100-80gb-hbm3_[a-z0-9.-]+_20260102-030405\.csv",
        path.as_posix(),
    )
    assert default_path("emulator", now=now).name.startswith("emulator_")
    if shutil.which("git") and (REPO / ".git").exists():
        res = subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=REPO)
        assert res.returncode == 0, f"{path} is not ignored by git"
        res = subprocess.run(["git", "check-ignore", "-q", "results/bench/emulator.csv"], cwd=REPO)
        assert res.returncode == 1  # the bench of record stays tracked


def test_bench_writes_a_new_file_each_time(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["bench", *SMALL]) == 0
    files = list((tmp_path / "results" / "bench").glob("emulator_*.csv"))
    assert len(files) == 1
    rows = pd.read_csv(files[0])
    assert set(rows["kind"]) == {"emulator", "exact_reference"}
    assert f"wrote 2 rows to {files[0].relative_to(tmp_path)}" in capsys.readouterr().out


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_bench_refuses_a_tracked_out_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    subprocess.run(["git", "init", "-q"], check=True)
    cited = tmp_path / "cited.csv"
    cited.write_text("numbers the docs cite\n")
    subprocess.run(["git", "add", "cited.csv"], check=True)
    assert main(["bench", *SMALL, "--out", str(cited)]) == 2
    err = capsys.readouterr().err
    assert "tracked by git" in err and err.count("\n") == 1
    assert cited.read_text() == "numbers the docs cite\n"
    assert main(["bench", *SMALL, "--append"]) == 2
    assert "--append needs --out" in capsys.readouterr().err


@pytest.mark.skipif(cupy_or_none() is not None, reason="checks the no-GPU message")
def test_bench_gemm_without_gpu_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["bench-gemm"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: precision bench-gemm needs an NVIDIA GPU")
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert not (tmp_path / "results").exists()
    assert main(["bench", "--device", "gpu", *SMALL]) == 2
    assert capsys.readouterr().err.count("\n") == 1
