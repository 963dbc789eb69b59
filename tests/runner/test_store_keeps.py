"""Seven more ways a run could lose or misstate results (audit of 2026-11-26), each closed:

a config change stopped at any write; a config narrowed over a table without point files;
two config changes in one second; figures of two queued runs; a figure being written while a
run starts; a table stopped between its csv and parquet; a process-pool worker that dies;
``bench --append`` onto another header; ``capture`` and ``ozaki_bench --combine`` outputs;
points timed on another machine, reused without a word. Then three more (a runner audit of
2026-11-28): an unreadable table written over its intact csv; a config edited where it is
stored (or missing) dropping the table's other rows; `precision plot` rebuilding a table that
holds other points, or failing on a read-only copy whose times make the table look stale.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path
from types import SimpleNamespace

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
    files = [*rd.path.glob("results*.parquet"), *rd.points_dir.glob("*.parquet")]
    frames = [pd.read_parquet(p, columns=["point_id", "repeat"]) for p in files]
    rows = pd.concat(frames)
    return set(zip(rows["point_id"], rows["repeat"], strict=True))


def _stopping_at(monkeypatch, stop_at: int | None) -> list[str]:
    """Make the store's ``stop_at``-th file replacement or link (None: none) raise
    KeyboardInterrupt before it happens; returns the list of names written, as they come."""
    calls: list[str] = []
    real_replace, real_link = os.replace, os.link

    def counted(real):
        def call(src, dst):
            calls.append(Path(dst).name)
            if len(calls) == stop_at:
                raise KeyboardInterrupt
            real(src, dst)

        return call

    monkeypatch.setattr(store.os, "replace", counted(real_replace))
    monkeypatch.setattr(store.os, "link", counted(real_link))
    return calls


def _published(root: Path, template: Path | None = None) -> tuple[ResultsDir, set[tuple[str, int]]]:
    """CONFIG run into ``root`` (or ``template``, such a directory, copied there), then its
    points/ removed (as a published directory): the table is the only copy of its rows,
    which are returned."""
    import shutil

    if template is None:
        run(root)
    else:
        shutil.copytree(template, root)
    rd = ResultsDir(root, "s")
    shutil.rmtree(rd.points_dir)
    table = pd.read_parquet(rd.table_path)
    return rd, set(zip(table["point_id"], table["repeat"], strict=True))


def test_a_config_change_stopped_at_any_write_keeps_table_and_config_paired(tmp_path, monkeypatch):
    """The run of a narrowed config is stopped before each of its file replacements and
    links in turn (the kept config and table, the new config, the table's csv and parquet,
    provenance, ...): the table and csv on disk always belong to the config.toml next to
    them, no file is empty, and every row of the earlier config survives somewhere (point
    files removed, as in a published directory, so the table is the only copy of the
    dropped size)."""
    # CONFIG run once; each stop starts from a copy of that directory (read only)
    template = tmp_path / "template"
    run(template)
    _published(tmp_path / "count", template)
    with monkeypatch.context() as m:
        every = _stopping_at(m, None)
        run(tmp_path / "count", NARROWED)
    assert {"config.toml", "results.csv", "results.parquet"} <= set(every)
    for stop_at in range(1, len(every) + 1):
        root = tmp_path / str(stop_at)
        rd, before = _published(root, template)
        with monkeypatch.context() as m:
            calls = _stopping_at(m, stop_at)
            with pytest.raises(KeyboardInterrupt):
                run(root, NARROWED)
        where = f"stopped before writing {calls[-1]} (write {stop_at} of {len(every)})"
        tables_match_their_config(rd)
        assert before <= rows_kept(rd), f"rows lost when {where}"
        assert all(p.stat().st_size for p in rd.path.iterdir() if p.is_file()), where
        run(root, NARROWED)  # finishing the run
        tables_match_their_config(rd)
        assert set(pd.read_parquet(rd.table_path)["point_id"]) == ids_of(NARROWED), where
        assert before <= rows_kept(rd), where


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

    # the store's own view of the datetime module only: patching datetime.datetime itself
    # made any C extension imported meanwhile warn of a changed datetime size
    monkeypatch.setattr(store, "dt", SimpleNamespace(datetime=Frozen, UTC=dt.UTC))
    texts = [CONFIG, NARROWED, CONFIG.replace("seed = 5", "seed = 6")]
    rd = ResultsDir(tmp_path, "s")
    for text in texts:
        run(tmp_path, text)
        if text == CONFIG:  # the first config is kept without a table: the names must not drift
            for path in (rd.table_path, rd.csv_path):
                path.unlink()
    kept = sorted(rd.path.glob("config.2026*.toml"))
    assert [p.name for p in kept] == ["config.20261126T120000Z.toml",
                                      "config.20261126T120000Z_2.toml"]  # fmt: skip
    assert [p.read_text() for p in kept] == texts[:2]
    # the second config's table is kept under its config's name, not the free bare stamp
    assert sorted(p.name for p in rd.path.glob("results.2026*")) == [
        "results.20261126T120000Z_2.csv", "results.20261126T120000Z_2.parquet"]  # fmt: skip
    kept_table = pd.read_parquet(rd.path / "results.20261126T120000Z_2.parquet")
    assert set(kept_table["m"]) == {8, 16}


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
    """Its worker dies in each try: the other points are stored (also those queued when the
    pool broke), the run says how many were not run and why (no traceback), and a rerun
    computes only those."""
    monkeypatch.setenv("PRECISION_TEST_GEMM_DIE", "16")
    summary = run(tmp_path, jobs=2)
    # only the size-16 group (plain, corrected) is lost, not the groups queued beside it
    assert (summary.not_run, summary.computed) == (2, 4)
    (note,) = summary.warnings
    assert "2 point(s) not computed: the worker process computing them died" in note
    assert "--jobs 1" in note
    monkeypatch.delenv("PRECISION_TEST_GEMM_DIE")
    rerun = run(tmp_path)  # (in this process, as the note's --jobs 1: no worker to start)
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


def test_ozaki_bench_combine_of_an_unusable_file_is_one_line_and_leaves_nothing(tmp_path, capsys):
    """Missing, empty, and without the acceptance's columns: one line naming each, and no
    --out directory left behind (before, each was a traceback after --out was made)."""
    from precision.gemm import ozaki_bench

    empty, partial = tmp_path / "empty.csv", tmp_path / "partial.csv"
    empty.write_text("")
    partial.write_text("method,n\ndgemm,8192\n")
    out = tmp_path / "out"
    args = ["--out", str(out), "--combine", str(tmp_path / "no.csv"), str(empty), str(partial)]
    assert ozaki_bench.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: --combine: cannot use ")
    assert f"{tmp_path / 'no.csv'} (no such file)" in err
    assert f"{empty} (not a csv table: EmptyDataError" in err
    assert f"{partial} (no column target, fmt, terms, backend, phi, tflops" in err
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
    for path in files[:2]:  # as if timed on a 16-core node (CPU-timed rows: the CPU decides)
        stored = pd.read_parquet(path).assign(cpu="Big CPU", cpu_count=16, gpu="NVIDIA H200")
        stored.to_parquet(path, index=False)
    for path in files[2:3]:  # written before the CPU was recorded: nothing known
        pd.read_parquet(path).drop(columns=["cpu", "cpu_count"]).to_parquet(path, index=False)
    for path in files[3:4]:  # the same CPU, a GPU visible then: CPU timings still comparable
        pd.read_parquet(path).assign(gpu="NVIDIA H200").to_parquet(path, index=False)
    summary = run(tmp_path, CONFIG.replace("size = [8, 16, 24]", "size = [8, 16, 24, 4]"))
    (warning,) = summary.warnings[1:]  # (after "the config differs")
    expected = f"{here['cpu']} ×{here['cpu_count']}"
    assert warning.startswith(
        f"stored points were timed on other hardware (2 on Big CPU ×16); this run is on {expected}"
    )
    assert "TFLOP/s are not comparable" in warning
    latest = rd.read_provenance()[0][-1]
    assert latest["reused_points_hardware"] == {"Big CPU ×16": 2, expected: 3}


def test_a_changed_config_run_without_plots_keeps_the_earlier_figures_aside(tmp_path):
    """`precision run --no-plots` after a config change left the earlier config's figures
    in figures/, so they no longer showed the directory's table. They now go to
    figures.<UTC>/ with the kept config and table, and provenance names them."""
    # one png figure is enough to tell where the figures went (pdf, tflops: costly, unread)
    png = '[plot]\nmetric = ["err_fro"]\nformat = ["png"]\n'
    run(tmp_path, CONFIG + png, plots=True)
    rd = ResultsDir(tmp_path, "s")
    drawn = sorted(p.name for p in rd.figures_dir.iterdir())
    assert drawn, "the first run drew no figures"
    summary = run(tmp_path, NARROWED + png)  # plots=False
    (old_config,) = rd.path.glob("config.*Z.toml")
    stamp = old_config.name[len("config.") : -len(".toml")]
    kept = rd.path / f"figures.{stamp}"
    assert sorted(p.name for p in kept.iterdir()) == drawn
    assert not rd.figures_dir.exists() or not any(rd.figures_dir.iterdir())
    (warning,) = [w for w in summary.warnings if "the config differs" in w]
    assert kept.name in warning
    latest = rd.read_provenance()[0][-1]
    assert latest["previous_figures"] == [kept.name]
    assert all(name.startswith("results.") for name in latest["previous_table"])
    run(tmp_path, NARROWED + png, plots=True)  # the next drawing starts a fresh figures/
    assert sorted(p.name for p in rd.figures_dir.iterdir()) == drawn


def test_kept_figures_numbered_at_the_end_of_their_name(tmp_path):
    """Where ``figures.<stamp>`` is taken, the figures go to ``figures.<stamp>_2`` (the number
    after the stamp, as for the config and table), not ``figures_2.<stamp>``, which no longer
    starts with ``figures.`` and so was left out of provenance's ``previous_figures``."""
    path = tmp_path / "r"
    (path / "figures").mkdir(parents=True)
    (path / "figures" / "a.png").write_bytes(b"png")
    (path / "figures.S").mkdir()
    name = ResultsDir._keep_folder(path / "figures", path / "figures.S")
    assert name == "figures.S_2"
    assert (path / name / "a.png").read_bytes() == b"png"
    assert not (path / "figures").exists() and not any((path / "figures.S").iterdir())


# ------------------------------------- a runner audit of 2026-11-28: three more ways, closed


def test_an_unreadable_table_without_point_files_is_kept_with_its_csv(tmp_path, capsys):
    """A published directory (no points/) whose results.parquet is unreadable, here a git-LFS
    pointer of a clone without LFS: the rerun wrote a table of "unavailable" rows over the
    intact results.csv, the only readable copy of the results, without a word. Both files
    are now kept aside, said, and the plot of such a directory says how to restore it."""
    from precision.runner.cli import main

    rd, before = _published(tmp_path)
    published_csv = rd.csv_path.read_text()
    rd.table_path.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n")
    assert main(["plot", str(rd.path), "--out", str(tmp_path / "f")]) == 2
    assert "no point files to rebuild it from: restore it (`git lfs pull` where it is a " in (
        capsys.readouterr().err
    )
    summary = run(tmp_path)
    (note,) = [w for w in summary.warnings if "was unreadable" in w]
    (kept,) = rd.path.glob("results.*Z.unreadable.parquet")
    assert kept.read_text().startswith("version https://git-lfs")
    assert kept.with_suffix(".csv").read_text() == published_csv
    assert f"kept as {kept.name} and {kept.with_suffix('.csv').name}" in note
    csv = pd.read_csv(kept.with_suffix(".csv"), dtype={"point_id": str})
    assert before <= set(zip(csv["point_id"], csv["repeat"], strict=True))


@pytest.mark.parametrize("how", ["edited in place", "missing"])
def test_a_config_changed_where_it_is_stored_keeps_the_earlier_table(tmp_path, how):
    """``precision run results/<name>/config.toml`` after editing that very file (or with it
    missing) compared the config with itself, so a narrower one rewrote the table with its
    own points only: rows that only the table held (no points/) were gone, and with points/
    the figures of the wider config stayed. The table holding points the config lacks now
    keeps table and figures aside, as a changed config does."""
    rd, before = _published(tmp_path)
    (rd.figures_dir / "err_fro.png").parent.mkdir(parents=True, exist_ok=True)
    (rd.figures_dir / "err_fro.png").write_bytes(b"the wider config's figure")
    if how == "missing":
        rd.config_path.unlink()
    else:
        rd.config_path.write_text(NARROWED)
    summary = run(tmp_path, NARROWED)
    (warning,) = [w for w in summary.warnings if "holds points that this config does not" in w]
    (kept,) = rd.path.glob("results.*Z.parquet")
    stamp = kept.name[len("results.") : -len(".parquet")]
    assert f"kept as {kept.name}, results.{stamp}.csv and figures.{stamp}" in warning
    earlier = pd.read_parquet(kept)
    assert before <= set(zip(earlier["point_id"], earlier["repeat"], strict=True))
    assert (
        rd.path / f"figures.{stamp}" / "err_fro.png"
    ).read_bytes() == b"the wider config's figure"
    tables_match_their_config(rd)
    latest = rd.read_provenance()[0][-1]
    assert latest["previous_config"] is None
    assert latest["previous_table"] == [kept.name, f"results.{stamp}.csv"]
    assert latest["previous_figures"] == [f"figures.{stamp}"]
    assert not [w for w in run(tmp_path, NARROWED).warnings if "holds points" in w]  # (once)


def test_plot_never_rebuilds_a_table_that_holds_other_points(tmp_path, capsys):
    """With points/ present and the table older than a point file, `precision plot`
    rebuilt the table from config.toml's points: after an edit of that config, the other
    points' rows went. It now leaves the table alone and says why."""
    from precision.runner.cli import main

    run(tmp_path)
    rd = ResultsDir(tmp_path, "s")
    rows = pd.read_parquet(rd.table_path)
    rd.config_path.write_text(NARROWED)
    newer = time.time() + 5
    for point_file in rd.points_dir.glob("*.parquet"):
        os.utime(point_file, (newer, newer))
    assert main(["plot", str(rd.path), "--out", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err
    assert "holds 2 point(s) that" in err and "it is not rebuilt" in err
    pd.testing.assert_frame_equal(pd.read_parquet(rd.table_path), rows)


def test_plot_of_a_read_only_copy_that_looks_stale_draws_from_its_points(
    tmp_path, monkeypatch, capsys
):
    """A read-only copy made by `cp -r` gives the point files newer times than the table:
    `precision plot --out DIR` insisted on rewriting the table inside the copy and failed.
    It now rebuilds the table in memory and says so."""
    import errno
    import pathlib

    from precision.runner.cli import main

    run(tmp_path)
    rd = ResultsDir(tmp_path, "s")
    newer = time.time() + 5
    for point_file in rd.points_dir.glob("*.parquet"):
        os.utime(point_file, (newer, newer))
    table_bytes = rd.table_path.read_bytes()
    real_mkdir = pathlib.Path.mkdir

    def read_only_mkdir(self, *args, **kwargs):  # as on a read-only mount
        if self.is_relative_to(rd.path):
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "mkdir", read_only_mkdir)
    out = tmp_path / "elsewhere"
    # one figure (none is checked here; the tflops one doubled the drawing)
    argv = ["plot", str(rd.path), "--out", str(out), "--format", "png", "--metric", "err_fro"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "note: " in err and "rebuilt from the point files in memory (not saved)" in err
    assert rd.table_path.read_bytes() == table_bytes
    summary = pd.read_csv(out / "summary.csv")
    assert set(summary["m"]) == {8, 16, 24}
