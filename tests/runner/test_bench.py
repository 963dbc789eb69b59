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
from precision.runner.store import claim_new

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
        second = path.with_name(path.stem + "_2.csv")  # claim_new's name for a taken one
        for p in (path, second):
            res = subprocess.run(["git", "check-ignore", "-q", str(p)], cwd=REPO)
            assert res.returncode == 0, f"{p} is not ignored by git"
        res = subprocess.run(["git", "check-ignore", "-q", "results/bench/emulator.csv"], cwd=REPO)
        assert res.returncode == 1  # the bench of record stays tracked


def test_bench_writes_a_new_file_each_time(tmp_path, monkeypatch, capsys):
    """Two benches stamped with the same second (the clock pinned) write two files, and the
    second leaves the first's bytes as they were."""
    import precision.runner.bench_output as bench_output

    monkeypatch.chdir(tmp_path)
    now = dt.datetime(2026, 1, 2, 3, 4, 5)
    pinned = bench_output.default_path
    monkeypatch.setattr(bench_output, "default_path", lambda *a, **k: pinned(*a, **k, now=now))
    assert main(["bench", *SMALL]) == 0
    files = list((tmp_path / "results" / "bench").glob("emulator_*.csv"))
    assert len(files) == 1
    first = files[0].read_bytes()
    rows = pd.read_csv(files[0])
    assert set(rows["kind"]) == {"emulator", "exact_reference"}
    assert f"wrote 2 rows to {files[0].relative_to(tmp_path)}" in capsys.readouterr().out
    assert main(["bench", *SMALL, "--seed", "1"]) == 0
    second = files[0].with_name(files[0].stem + "_2.csv")
    assert sorted((tmp_path / "results" / "bench").glob("emulator_*.csv")) == [files[0], second]
    assert files[0].read_bytes() == first
    assert len(pd.read_csv(second)) == 2
    assert f"wrote 2 rows to {second.relative_to(tmp_path)}" in capsys.readouterr().out


def test_claim_new_never_returns_a_taken_name(tmp_path):
    path = tmp_path / "sub" / "gemm_x.csv"
    got = [claim_new(path) for _ in range(3)]
    assert [p.name for p in got] == ["gemm_x.csv", "gemm_x_2.csv", "gemm_x_3.csv"]
    assert all(p.exists() and p.stat().st_size == 0 for p in got)


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


@pytest.mark.gpu
def test_bench_gemm_reference_is_the_exact_product_on_the_gpu():
    """bench-gemm's errors are against the exact product rounded once (the CPU's bits); only
    inputs the exact reference refuses fall back to a float64 GEMM, and the name says so."""
    import numpy as np

    from precision.gpu import require_gpu
    from precision.reference import exact_matmul
    from precision.runner.commands.bench_gemm import _reference

    cp = require_gpu("test")
    rng = np.random.default_rng(5)
    A = rng.uniform(-1, 1, (96, 64)).astype(np.float32)
    B = rng.uniform(-1, 1, (64, 80)).astype(np.float32)
    ref, name = _reference(cp, A, B)
    assert name == "exact_fp64" and isinstance(ref, np.ndarray)
    np.testing.assert_array_equal(ref.view(np.uint64), exact_matmul(A, B).view(np.uint64))
    A[3, 7] = np.inf
    _, name = _reference(cp, A, B)
    assert name == "dgemm_fp64"


def test_timed_calls_run_without_memory_tracing(tmp_path, monkeypatch):
    # tracemalloc hooks every allocation: timing under it doubled the CPU emulator's seconds
    # (f16, n = 1024: 4.7 s against 2.3 s). Only the untimed first call is traced.
    import tracemalloc

    import precision
    from precision.runner.cli import main

    traced: list[bool] = []
    real_mma = precision.mma

    def spy(*args, **kwargs):
        traced.append(tracemalloc.is_tracing())
        return real_mma(*args, **kwargs)

    monkeypatch.setattr(precision, "mma", spy)
    out = tmp_path / "bench.csv"
    argv = ["bench", "--formats", "f16", "--device", "cpu", "--cpu-n", "16", "--exact-n", "0"]
    assert main([*argv, "--repeats", "3", "--out", str(out)]) == 0
    assert traced == [True, False, False, False]
    assert pd.read_csv(out)["peak_host_bytes"].iloc[0] > 0


def test_bench_out_is_refused_where_git_cannot_tell_or_for_a_directory(
    tmp_path, monkeypatch, capsys
):
    """The tracked-file guard took any git failure for "not tracked": with git missing, or a
    checkout git refuses ("dubious ownership": another user's, common in containers), a bench
    wrote over the cited file. Inside a work tree that git cannot read it now refuses; a
    directory given as --out is named as one (it was called "a file tracked by git")."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()  # a work tree, as far as the guard can see
    cited = tmp_path / "cited.csv"
    cited.write_text("numbers the docs cite\n")
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    assert main(["bench", *SMALL, "--out", str(cited)]) == 2
    err = capsys.readouterr().err
    assert f"is inside the git work tree {tmp_path}, but git cannot tell whether it tracks" in err
    assert err.count("\n") == 1 and cited.read_text() == "numbers the docs cite\n"
    assert main(["bench", *SMALL, "--out", str(tmp_path)]) == 2
    assert f"--out {tmp_path} is a directory; give a file name" in capsys.readouterr().err
    outside = tmp_path / "elsewhere"  # (no .git above it: written whatever git does)
    monkeypatch.chdir(tmp_path.parent)
    (tmp_path / ".git").rmdir()
    assert main(["bench", *SMALL, "--out", str(outside / "b.csv")]) == 0


def test_bench_append_keeps_rows_apart_and_checks_the_file_first(tmp_path, monkeypatch, capsys):
    """Appending to a csv without a final line break ran the first new row on from the last
    line (one line of 55 fields); appending to a file that is not UTF-8 text crashed after
    the measurements, losing them. The first gets its line break, the second is refused
    before any measurement, the file untouched."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "a.csv"
    assert main(["bench", *SMALL, "--out", str(out)]) == 0
    out.write_bytes(out.read_bytes().rstrip(b"\r\n"))
    assert main(["bench", *SMALL, "--out", str(out), "--append"]) == 0
    rows = pd.read_csv(out)
    assert len(rows) == 4 and set(rows["kind"]) == {"emulator", "exact_reference"}
    binary = tmp_path / "x.npz"
    binary.write_bytes(b"PK\x03\x04\xff\xfe\x00binary")
    capsys.readouterr()
    assert main(["bench", *SMALL, "--out", str(binary), "--append"]) == 2
    captured = capsys.readouterr()
    assert "error: cannot append to" in captured.err and "not a CSV text file" in captured.err
    assert "wrote" not in captured.out and binary.read_bytes() == b"PK\x03\x04\xff\xfe\x00binary"
