"""Seven more ways a run could lose or misstate results (audit of 2026-11-26), each closed:

a config change stopped at any write; a config narrowed over a table without point files;
two config changes in one second; figures of two queued runs; a figure being written while a
run starts; a table stopped between its csv and parquet; a process-pool worker that dies;
``bench --append`` onto another header; ``capture`` and ``ozaki_bench --combine`` outputs;
points timed on another machine, reused without a word.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

import pandas as pd
import pytest
from test_store import _doubles  # noqa: F401 (the autouse fixture: runs use the doubles)
from test_store import run as run_in_process

import precision.runner.store as store
from precision.runner.config import parse_config
from precision.runner.store import ResultsDir, StoreError, recombine
from precision.runner.sweep import expand

CONFIG = """\
name = "s"
seed = 5
[sweep]
size = [8, 16, 24]
distribution = ["uniform"]
method = ["plain", "corrected"]
format = ["fp16"]
"""
NARROWED = CONFIG.replace("size = [8, 16, 24]", "size = [8, 16]")


def run(root: Path, text: str = CONFIG, **kwargs):
    return run_in_process(root, text, **kwargs)


def ids_of(text: str) -> set[str]:
    return {p.id for p in expand(parse_config(text, "cfg.toml"))}


def tables_match_their_config(rd: ResultsDir) -> None:
    """The invariant: results.parquet and results.csv hold only points of config.toml."""
    assert rd.config_path.exists(), "config.toml is missing"
    ids = ids_of(rd.config_path.read_text())
    if rd.table_path.exists():
        assert set(pd.read_parquet(rd.table_path)["point_id"]) <= ids
    if rd.csv_path.exists():
        assert set(pd.read_csv(rd.csv_path)["point_id"].astype(str)) <= ids


def rows_kept(rd: ResultsDir) -> set[tuple[str, int]]:
    """(point_id, repeat) of every row in the table or a kept earlier table, and in points/."""
    frames = [pd.read_parquet(p) for p in rd.path.glob("results*.parquet")]
    frames += [pd.read_parquet(p) for p in rd.points_dir.glob("*.parquet")]
    rows = pd.concat(frames)
    return set(zip(rows["point_id"], rows["repeat"], strict=True))


@pytest.mark.parametrize("stop_at", range(1, 9))
def test_a_config_change_stopped_at_any_write_keeps_table_and_config_paired(
    tmp_path, monkeypatch, stop_at
):
    """The run of a narrowed config is stopped at its 1st, 2nd, ... file replacement: the
    table and csv on disk always belong to the config.toml next to them, and every row of
    the earlier config survives somewhere (point files removed, as in a published directory,
    so the table is the only copy of the dropped size)."""
    import shutil

    run(tmp_path)
    rd = ResultsDir(tmp_path, "s")
    shutil.rmtree(rd.points_dir)
    published = pd.read_parquet(rd.table_path)
    before = set(zip(published["point_id"], published["repeat"], strict=True))
    real_replace, calls = os.replace, []

    def replace(src, dst):
        calls.append(Path(dst).name)
        if len(calls) == stop_at:
            raise KeyboardInterrupt
        real_replace(src, dst)

    monkeypatch.setattr(store.os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, NARROWED)
    monkeypatch.setattr(store.os, "replace", real_replace)
    tables_match_their_config(rd)
    assert before <= rows_kept(rd), f"rows lost when stopped before writing {calls[-1]}"
    assert all(p.stat().st_size for p in rd.path.iterdir() if p.is_file()), "an empty file"
    if rd.csv_path.exists() and rd.table_path.exists():  # a stop between the two is stale
        if rd.csv_path.stat().st_mtime > rd.table_path.stat().st_mtime:
            assert rd.table_is_stale()
    run(tmp_path, NARROWED)  # finishing the run
    tables_match_their_config(rd)
    assert set(pd.read_parquet(rd.table_path)["point_id"]) == ids_of(NARROWED)
    assert before <= rows_kept(rd)


def test_a_narrowed_config_keeps_the_earlier_table_with_its_config(tmp_path):
    """A directory published without points/, rerun with a narrower config: the dropped
    size's rows live on in results.<UTC>.parquet/.csv next to config.<UTC>.toml."""
    import shutil

    run(tmp_path)
    rd = ResultsDir(tmp_path, "s")
    published = pd.read_parquet(rd.table_path)
    shutil.rmtree(rd.points_dir)
    summary = run(tmp_path, NARROWED)
    (old_config,) = rd.path.glob("config.*Z.toml")
    stamp = old_config.name[len("config.") : -len(".toml")]
    kept = rd.path / f"results.{stamp}.parquet"
    pd.testing.assert_frame_equal(pd.read_parquet(kept), published)
    assert set(pd.read_csv(kept.with_suffix(".csv"))["m"]) == {8, 16, 24}
    assert old_config.read_text() == CONFIG
    (warning,) = [w for w in summary.warnings if "the config differs" in w]
    assert f"{old_config.name}, results.{stamp}.parquet and results.{stamp}.csv" in warning
    assert set(pd.read_parquet(rd.table_path)["m"]) == {8, 16}
    latest = rd.read_provenance()[0][-1]
    assert latest["previous_config"] == old_config.name
    assert latest["previous_table"] == [kept.name, kept.with_suffix(".csv").name]


def test_config_changes_within_one_second_keep_every_earlier_config(tmp_path, monkeypatch):
    class Frozen(dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return dt.datetime(2026, 11, 26, 12, 0, 0, tzinfo=tz)

    monkeypatch.setattr(store.dt, "datetime", Frozen)
    texts = [CONFIG, NARROWED, CONFIG.replace("seed = 5", "seed = 6")]
    for text in texts:
        run(tmp_path, text)
    rd = ResultsDir(tmp_path, "s")
    kept = sorted(rd.path.glob("config.2026*.toml"))
    assert [p.name for p in kept] == ["config.20261126T120000Z.toml",
                                      "config.20261126T120000Z_2.toml"]  # fmt: skip
    assert [p.read_text() for p in kept] == texts[:2]
    tables = sorted(rd.path.glob("results.2026*.parquet"))
    assert [set(pd.read_parquet(p)["m"]) for p in tables] == [{8, 16, 24}, {8, 16}]


def test_figures_are_drawn_while_the_run_holds_the_lock(tmp_path, monkeypatch):
    """A run queued with --wait must not switch the directory to its config while the first
    run is still drawing the figures of its own."""
    import precision.runner.runner as runner

    held = []

    def plot_results(table, out, **kwargs):
        with pytest.raises(StoreError, match="in use by another run"):
            with ResultsDir(tmp_path, "s").lock(wait=0):
                pass
        held.append(len(table))
        return []

    monkeypatch.setattr(runner, "plot_results", plot_results)
    run(tmp_path, plots=True)
    assert held == [6]


def test_a_run_leaves_a_figure_being_written_alone(tmp_path):
    run(tmp_path)
    rd = ResultsDir(tmp_path, "s")
    rd.figures_dir.mkdir(exist_ok=True)
    young, old = rd.figures_dir / ".err_fro.png.a.tmp", rd.figures_dir / ".err_fro.png.b.tmp"
    for path in (young, old):
        path.write_bytes(b"half a figure")
    ages_ago = time.time() - store.STALE_FIGURE_TMP_S - 60
    os.utime(old, (ages_ago, ages_ago))
    summary = run(tmp_path)
    assert young.exists() and not old.exists()  # `precision plot` may be writing the young one
    assert [w for w in summary.warnings if "temporary" in w] == [
        f"removed leftover temporary file {old}"
    ]


def test_a_table_stopped_between_csv_and_parquet_is_rebuilt(tmp_path):
    run(tmp_path)
    rd = ResultsDir(tmp_path, "s")
    assert not rd.table_is_stale()
    newer = rd.table_path.stat().st_mtime + 5
    os.utime(rd.csv_path, (newer, newer))  # the csv of a later table, its parquet not yet
    assert rd.table_is_stale()
    recombine(rd.path)
    assert not rd.table_is_stale()


def test_a_pool_worker_killed_once_is_retried_in_a_fresh_pool(tmp_path, monkeypatch):
    monkeypatch.setenv("PRECISION_TEST_GEMM_DIE", "16")
    monkeypatch.setenv("PRECISION_TEST_GEMM_DIE_ONCE", str(tmp_path / "died"))
    summary = run(tmp_path, jobs=2)
    assert (tmp_path / "died").exists(), "no worker was killed"
    assert (summary.computed, summary.not_run, summary.warnings) == (6, 0, [])
    table = pd.read_parquet(ResultsDir(tmp_path, "s").table_path)
    assert set(table["point_id"]) == ids_of(CONFIG)


def test_a_point_that_kills_every_worker_is_left_for_a_rerun(tmp_path, monkeypatch):
    """Its worker dies in each try: the other points are stored, the run says how many were
    not run and why (no traceback), and a rerun computes only those."""
    monkeypatch.setenv("PRECISION_TEST_GEMM_DIE", "16")
    summary = run(tmp_path, jobs=2)
    assert summary.not_run >= 2 and summary.computed == 6 - summary.not_run
    (note,) = summary.warnings
    assert f"{summary.not_run} point(s) not computed: a worker process died" in note
    assert "--jobs 1" in note
    monkeypatch.delenv("PRECISION_TEST_GEMM_DIE")
    rerun = run(tmp_path, jobs=2)
    assert (rerun.computed, rerun.skipped) == (summary.not_run, summary.computed)


SMALL = ["--cpu-n", "16", "--exact-n", "0", "--formats", "f16", "--repeats", "1"]


def test_bench_append_onto_another_header_never_shifts_columns(tmp_path, monkeypatch, capsys):
    from precision.runner.cli import main

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "b.csv"
    assert main(["bench", *SMALL, "--out", str(out)]) == 0
    first = pd.read_csv(out)
    # an older file: its header lacks a column this bench writes, and has one it does not
    first.drop(columns="source_digest").assign(note="x").to_csv(out, index=False)
    older = out.read_bytes()
    assert main(["bench", *SMALL, "--out", str(out), "--append"]) == 2
    err = capsys.readouterr().err
    assert f"cannot append to {out}: it has no column source_digest" in err
    assert out.read_bytes() == older  # untouched
    moved = pd.read_csv(out.with_name("b_2.csv"))
    assert moved["host"].tolist() == first["host"].tolist()  # nothing computed is lost
    # a file whose header has every column (in another order): rows follow its order
    first[list(reversed(first.columns))].assign(note="x").to_csv(out, index=False)
    assert main(["bench", *SMALL, "--out", str(out), "--append"]) == 0
    both = pd.read_csv(out)
    assert len(both) == 2 and both["host"].nunique() == 1 and both["python"].nunique() == 1
    assert pd.isna(both["note"].iloc[1])


def test_capture_never_writes_into_a_directory_with_files(tmp_path, monkeypatch, capsys):
    import precision.gpu
    from precision.runner.cli import main

    monkeypatch.setattr(precision.gpu, "exit_without_gpu", lambda prog: False)
    earlier = tmp_path / "capture-seed2"
    earlier.mkdir()
    (earlier / "manifest.json").write_text("{}")
    assert main(["capture", "--seed", "2", "--out", str(earlier)]) == 2
    err = capsys.readouterr().err
    assert f"--out {earlier} already holds files" in err and err.count("\n") == 1
    assert [p.name for p in earlier.iterdir()] == ["manifest.json"]


def test_ozaki_bench_combine_of_a_missing_file_is_one_line_and_leaves_nothing(tmp_path, capsys):
    from precision.gemm import ozaki_bench

    out = tmp_path / "out"
    assert ozaki_bench.main(["--out", str(out), "--combine", str(tmp_path / "no.csv")]) == 2
    err = capsys.readouterr().err
    assert err == f"error: --combine: cannot read {tmp_path / 'no.csv'} (no such file)\n"
    assert not out.exists()


def test_points_timed_on_another_machine_are_named_when_reused(tmp_path):
    from precision.provenance import collect

    run(tmp_path)
    rd = ResultsDir(tmp_path, "s")
    rows = pd.read_parquet(next(rd.points_dir.glob("*.parquet")))
    here = collect()
    assert rows["cpu"].iloc[0] == here["cpu"] and rows["cpu_count"].iloc[0] == here["cpu_count"]
    assert run(tmp_path).warnings == []  # the same machine: nothing to say
    files = sorted(rd.points_dir.glob("*.parquet"))
    for path in files[:2]:  # as if timed on a 16-core node with a GPU
        pd.read_parquet(path).assign(cpu="Big CPU", cpu_count=16, gpu="NVIDIA H200").to_parquet(
            path, index=False
        )
    for path in files[2:3]:  # written before the CPU was recorded: nothing known
        pd.read_parquet(path).drop(columns=["cpu", "cpu_count"]).to_parquet(path, index=False)
    (warning,) = run(
        tmp_path, CONFIG.replace("size = [8, 16, 24]", "size = [8, 16, 24, 4]")
    ).warnings[1:]
    assert warning.startswith("stored points were timed on other hardware (2 on Big CPU ×16, "
                              "NVIDIA H200); this run is on")  # fmt: skip
    assert "TFLOP/s are not comparable" in warning
    latest = rd.read_provenance()[0][-1]
    assert latest["reused_points_hardware"]["Big CPU ×16, NVIDIA H200"] == 2
