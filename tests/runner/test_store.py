"""The results store never lies: lock, point identity, killed workers, damaged files, resume
warnings, permissions, NaN statuses (issue 16, "A results store that never lies")."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import doubles
import numpy as np
import pandas as pd
import pytest

from precision.runner.config import parse_config
from precision.runner.runner import run_experiment
from precision.runner.store import ResultsDir, StoreError, recombine
from precision.runner.sweep import expand

TESTS_DIR = Path(__file__).resolve().parent

CONFIG = """\
name = "s"
seed = 5
repeats = 2
reference = "fp64"
[sweep]
size = [8, 16]
distribution = ["uniform"]
method = ["plain", "corrected"]
format = ["fp16"]
"""


@pytest.fixture(autouse=True)
def _doubles(monkeypatch):
    doubles.install(monkeypatch.setattr)


def run(root: Path, text: str = CONFIG, **kwargs):
    kwargs.setdefault("progress", False)
    kwargs.setdefault("plots", False)
    if kwargs.get("jobs", 1) > 1 and kwargs.get("executor", "local") == "local":
        # named, not only patched in: --jobs workers are fresh processes (spawned)
        kwargs.setdefault("gemm", doubles.fake_gemm)
    return run_experiment(parse_config(text, "cfg.toml"), root, **kwargs)


def test_second_run_into_a_locked_directory_is_refused_and_writes_nothing(tmp_path):
    rd = ResultsDir(tmp_path, "s")
    with rd.lock():
        with pytest.raises(StoreError, match=r"in use by another run \(host .* pid \d+\)"):
            run(tmp_path, CONFIG.replace("size = [8, 16]", "size = [4]"))
        assert not rd.config_path.exists() and not rd.points_dir.exists()
    run(tmp_path)  # released: the next run proceeds
    assert "size = [8, 16]" in rd.config_path.read_text()


def test_deleting_the_lock_file_does_not_let_a_second_run_in(tmp_path):
    """The lock is on the directory; ``.lock`` only names the holder, so removing it by hand
    (a habit from other tools) cannot let two runs interleave."""
    rd = ResultsDir(tmp_path, "s")
    with rd.lock():
        assert "pid" in rd.lock_path.read_text()
        rd.lock_path.unlink()
        with pytest.raises(StoreError, match=r"in use by another run \(unknown\)"):
            run(tmp_path)
        assert not rd.config_path.exists() and not rd.points_dir.exists()
    run(tmp_path)
    assert rd.config_path.exists()


def test_second_run_waits_for_the_lock_when_asked(tmp_path):
    rd = ResultsDir(tmp_path, "s")
    held = threading.Event()

    def hold():
        with rd.lock():
            held.set()
            time.sleep(0.5)

    t = threading.Thread(target=hold)
    t.start()
    assert held.wait(timeout=10)
    summary = run(tmp_path, lock_wait=30)
    t.join()
    assert summary.computed == 4


def test_concurrent_runs_of_different_configs_never_mix(tmp_path):
    """Two CLI processes, same name, different configs, started together: one refuses, the
    directory holds one consistent config, table and provenance."""
    cfg_a = tmp_path / "a.toml"
    cfg_b = tmp_path / "b.toml"
    cfg_a.write_text(CONFIG)
    cfg_b.write_text(CONFIG.replace("size = [8, 16]", "size = [12]"))
    # The run that takes the lock blocks at its first gemm (doubles: PRECISION_TEST_GEMM_HOLD)
    # and so holds the lock until the other one has exited: however late a loaded machine
    # starts the second process, it finds the directory locked.
    hold = tmp_path / "hold"
    hold.mkdir()
    env = {**_test_env(), "PRECISION_TEST_GEMM_HOLD": str(hold)}
    procs = [_launch(c, tmp_path, env) for c in (cfg_a, cfg_b)]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and all(p.poll() is None for p in procs):
        time.sleep(0.02)
    (hold / "release").touch()
    outs = [p.communicate(timeout=120) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], outs
    loser = outs[[p.returncode for p in procs].index(2)][1].decode()
    assert "in use by another run" in loser
    winner = (cfg_a, cfg_b)[[p.returncode for p in procs].index(0)]
    rd = ResultsDir(tmp_path / "results", "s")
    assert rd.config_path.read_text() == winner.read_text()
    table = pd.read_parquet(rd.table_path)
    assert set(table["point_id"]) == {p.id for p in expand(parse_config(winner.read_text()))}
    prov = json.loads(rd.provenance_path.read_text())
    assert len(prov["runs"]) == 1 and prov["latest"]["config_file"].endswith(winner.name)


LAUNCHER = f"""\
import sys
sys.path.insert(0, {str(TESTS_DIR)!r})
import doubles
doubles.install(setattr)
import functools
import precision.runner.commands.run as command
# --jobs workers are spawned, fresh processes: they get the double by name, not by patching
command.run_experiment = functools.partial(command.run_experiment, gemm=doubles.fake_gemm)
from precision.runner.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _test_env() -> dict:
    """The environment without any ``PRECISION_TEST_*`` setting of the caller's."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TEST_")}


def _launch(cfg: Path, cwd: Path, env: dict, *extra: str, pipes: bool = True) -> subprocess.Popen:
    out = subprocess.PIPE if pipes else subprocess.DEVNULL
    return subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, "run", str(cfg), "--quiet", "--no-plots", *extra],
        cwd=cwd,
        env=env,
        stdout=out,
        stderr=out,
    )


def test_point_file_copied_under_another_name_is_rejected_and_recomputed(tmp_path):
    run(tmp_path)
    rd = ResultsDir(tmp_path, "s")
    points = expand(parse_config(CONFIG))
    a, b = rd.point_path(points[0]), rd.point_path(points[1])
    original_b = pd.read_parquet(b)
    b.write_bytes(a.read_bytes())  # b's file now holds a's rows
    rd.table_path.unlink()  # (else b's own rows would be restored from the table: see below)
    summary = run(tmp_path)
    assert summary.computed == 1 and summary.skipped == 3
    assert any("moved to" in w and b.name in w for w in summary.warnings)
    assert len(list(rd.rejected_dir.glob("*.parquet"))) == 1  # kept, not deleted
    table = pd.read_parquet(rd.table_path)
    assert sorted(table["point_id"].unique()) == sorted(p.id for p in points)
    assert table.groupby("point_id").size().eq(2).all()
    cols = ["point_id", "repeat", "err_fro"]
    pd.testing.assert_frame_equal(pd.read_parquet(b)[cols], original_b[cols])
    # read_point and combine never return another point's rows
    b.write_bytes(a.read_bytes())
    assert rd.read_point(points[1]) is None
    assert len(rd.combine(points, {})) == 6
    # with the table present, the rejected point's own rows come back from it, not recomputed
    summary = run(tmp_path)
    assert summary.computed == 0 and summary.skipped == 4
    assert any("are in" in w and "results.parquet" in w for w in summary.warnings)
    pd.testing.assert_frame_equal(pd.read_parquet(b)[cols], original_b[cols])


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigkill_of_a_parallel_run_leaves_no_worker_running(tmp_path):
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(CONFIG.replace("size = [8, 16]", "size = [8, 16, 24, 32]"))
    # each worker blocks inside its first point (doubles: PRECISION_TEST_GEMM_HOLD, never
    # released here) after naming itself in `hold`, so the kill always lands mid-point
    hold = tmp_path / "hold"
    hold.mkdir()
    env = {**_test_env(), "PRECISION_TEST_GEMM_HOLD": str(hold)}
    # no pipes: orphaned workers would hold them open and block communicate()
    proc = _launch(cfg, tmp_path, env, "--jobs", "2", pipes=False)
    deadline = time.monotonic() + 60
    inside: set[int] = set()
    while time.monotonic() < deadline and proc.poll() is None and len(inside) < 2:
        inside = {int(p.suffix[1:]) for p in hold.glob("inside.*")}
        time.sleep(0.02)
    workers = {p for p in _descendants(proc.pid) if _running(p)}
    if len(inside) < 2 or not inside <= workers:
        for p in workers:
            os.kill(p, signal.SIGKILL)
        proc.kill()
        proc.wait()
        raise AssertionError(f"workers inside a point: {inside}, running: {workers}")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(_running(p) for p in workers):
        time.sleep(0.1)
    alive = [p for p in workers if _running(p)]
    for p in alive:  # do not leak them into the rest of the session
        os.kill(p, signal.SIGKILL)
    assert not alive, f"workers {alive} outlived the killed run"


def test_garbage_provenance_is_kept_aside_and_rewritten(tmp_path):
    run(tmp_path)
    rd = ResultsDir(tmp_path, "s")
    rd.provenance_path.write_text('{"runs": [ {"version": "0.1"')  # truncated
    summary = run(tmp_path)
    assert any("provenance.json was unreadable" in w for w in summary.warnings)
    kept = list(rd.path.glob("provenance.*.corrupt.json"))
    assert len(kept) == 1 and kept[0].read_text().startswith('{"runs": [')
    assert len(json.loads(rd.provenance_path.read_text())["runs"]) == 1


def test_garbage_or_stale_table_is_recombined_from_point_files(tmp_path):
    run(tmp_path)
    rd = ResultsDir(tmp_path, "s")
    good = pd.read_parquet(rd.table_path)
    rd.table_path.write_bytes(b"PAR1 garbage")
    with pytest.raises(StoreError, match="unreadable"):
        rd.read_table()
    assert rd.table_is_stale()
    table = recombine(rd.path)
    cols = ["point_id", "repeat", "err_fro"]
    pd.testing.assert_frame_equal(table[cols], good[cols])
    assert not rd.table_is_stale()
    # a point file newer than the table makes it stale
    earlier = next(rd.points_dir.glob("*.parquet")).stat().st_mtime - 10
    os.utime(rd.table_path, (earlier, earlier))
    assert rd.table_is_stale()
    recombine(rd.path)
    assert not rd.table_is_stale()
    with pytest.raises(StoreError, match="no results table"):
        recombine(tmp_path / "absent")


@pytest.mark.parametrize(
    ("code", "message"),
    [(errno.ENOSPC, "the disk is full"), (errno.EROFS, "not writable")],
)
def test_full_or_read_only_disk_gives_one_message_and_loses_nothing(
    tmp_path, monkeypatch, code, message
):
    run(tmp_path, CONFIG.replace("size = [8, 16]", "size = [8]"))
    rd = ResultsDir(tmp_path, "s")
    before = {p: p.read_bytes() for p in rd.path.rglob("*") if p.is_file()}
    real_replace = os.replace

    def failing_replace(src, dst):
        if str(dst).endswith(".parquet"):
            raise OSError(code, os.strerror(code))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(StoreError, match=message) as info:
        run(tmp_path)
    assert "kept unchanged" in str(info.value)
    monkeypatch.setattr(os, "replace", real_replace)
    for path, data in before.items():  # stored points and the table are untouched
        if path.suffix in (".parquet", ".csv"):
            # (the config changed, so the earlier table may be kept as results.<UTC>.*)
            kept = [k.read_bytes() for k in rd.path.glob(f"results.*{path.suffix}")]
            assert (path.read_bytes() if path.exists() else None) == data or data in kept, path
    assert not list(rd.path.rglob("*.tmp"))


def test_leftover_temporary_files_are_removed(tmp_path):
    run(tmp_path)
    rd = ResultsDir(tmp_path, "s")
    left = [rd.points_dir / ".x.parquet.abc.tmp", rd.path / ".results.parquet.def.tmp"]
    for path in left:
        path.write_bytes(b"half")
    summary = run(tmp_path)
    assert not any(p.exists() for p in left)
    assert sum("leftover temporary" in w for w in summary.warnings) == 2


def test_result_files_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        run(tmp_path)
    finally:
        os.umask(old)
    rd = ResultsDir(tmp_path, "s")
    files = [rd.config_path, rd.provenance_path, rd.table_path, *rd.points_dir.glob("*")]
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in files}
    assert set(modes.values()) == {"0o644"}, modes


def test_changed_config_and_code_warn_and_are_recorded(tmp_path):
    run(tmp_path)
    rd = ResultsDir(tmp_path, "s")
    for path in rd.points_dir.glob("*.parquet"):  # as if computed by an older commit
        pd.read_parquet(path).assign(git_commit="0123abc").to_parquet(path, index=False)
    summary = run(tmp_path, CONFIG.replace("size = [8, 16]", "size = [8, 16, 4]"))
    assert summary.computed == 2 and summary.skipped == 4
    text = "\n".join(summary.warnings)
    assert "the config differs" in text and "kept as config." in text
    assert "4 by version" in text and "commit 0123abc" in text and "--force" in text
    latest = json.loads(rd.provenance_path.read_text())["latest"]
    assert latest["previous_config"].startswith("config.")
    assert (rd.path / latest["previous_config"]).read_text() == CONFIG
    old = [code for code in latest["reused_points_code"] if "0123abc" in code]
    assert len(old) == 1 and latest["reused_points_code"][old[0]] == 4
    # an unchanged rerun on the same code says nothing
    assert run(tmp_path, CONFIG.replace("size = [8, 16]", "size = [8, 16, 4]"), force=True)
    quiet = run(tmp_path, CONFIG.replace("size = [8, 16]", "size = [8, 16, 4]"))
    assert quiet.warnings == [] and quiet.computed == 0


def test_edited_code_under_the_same_commit_is_told_apart_by_its_source_digest(tmp_path):
    run(tmp_path)
    rd = ResultsDir(tmp_path, "s")
    files = sorted(rd.points_dir.glob("*.parquet"))
    # rows written before the digest was recorded: same version and commit, no warning
    for path in files:
        pd.read_parquet(path).drop(columns="source_digest").to_parquet(path, index=False)
    assert run(tmp_path).warnings == []
    # the same commit, but the stored points came from edited (uncommitted) code
    for path in files[:2]:
        pd.read_parquet(path).assign(source_digest="feedfacefeedface").to_parquet(path, index=False)
    text = "\n".join(run(tmp_path).warnings)
    assert "2 by version" in text and "source feedfacefeedface" in text, text


def test_nan_errors_are_reported_as_nan_not_ok(tmp_path, monkeypatch):
    def nan_gemm(A, B, **kwargs):
        out = doubles.fake_gemm(A, B, **kwargs)
        if kwargs.get("method") == "corrected":
            out[0, 0] = np.nan
        return out

    monkeypatch.setattr("precision.runner.execute._default_gemm", lambda: nan_gemm)
    summary = run(tmp_path)
    table = pd.read_parquet(summary.results_dir / "results.parquet")
    corrected = table[table["method"] == "corrected"]
    assert (corrected["status"] == "nan").all()
    assert corrected["error"].str.contains("err_fro = nan").all()
    assert (table[table["method"] == "plain"]["status"] == "ok").all()
    assert summary.status_counts == {"ok": 2, "nan": 2}
    assert summary.computed == 4 and not summary.failed
    assert run(tmp_path).skipped == 4  # computed points are not recomputed


def _available(monkeypatch, *backends: str) -> None:
    """The doubles with ``backends`` available too (as on a machine with a GPU)."""
    import precision.runner.catalog
    import precision.runner.execute

    table = {b: None if b in backends else doubles.UNAVAILABLE.get(b) for b in doubles.BACKENDS}
    monkeypatch.setattr(precision.runner.catalog, "backend_availability", lambda: dict(table))
    monkeypatch.setattr(precision.runner.execute, "_availability", lambda: dict(table))


GPU_CONFIG = CONFIG.replace(
    'format = ["fp16"]', 'format = ["fp16"]\nbackend = ["emulator", "cuda"]'
)


def test_a_published_table_without_point_files_is_resumed_not_replaced(tmp_path, monkeypatch):
    """A results directory shared without its points/ (the table is what gets published), run
    again on a machine without the GPU: nothing is recomputed or replaced by "unavailable"
    rows, and --force recomputes what it can here and keeps the rest."""
    import shutil

    cols = ["point_id", "repeat", "status", "backend", "err_fro"]
    _available(monkeypatch, "cuda")
    run(tmp_path, GPU_CONFIG)
    rd = ResultsDir(tmp_path, "s")
    published = pd.read_parquet(rd.table_path).sort_values(["point_id", "repeat"])
    assert (published["status"] == "ok").all() and (published["backend"] == "cuda").any()
    shutil.rmtree(rd.points_dir)

    doubles.install(monkeypatch.setattr)  # cuda unavailable again
    summary = run(tmp_path, GPU_CONFIG)
    assert (summary.computed, summary.unavailable, summary.skipped) == (0, 0, summary.total)
    assert any("are in" in w and "kept (not recomputed)" in w for w in summary.warnings)
    table = pd.read_parquet(rd.table_path).sort_values(["point_id", "repeat"])
    pd.testing.assert_frame_equal(table[cols].reset_index(drop=True),
                                  published[cols].reset_index(drop=True))  # fmt: skip

    summary = run(tmp_path, GPU_CONFIG, force=True)
    n_cuda = published.loc[published["backend"] == "cuda", "point_id"].nunique()
    assert summary.kept == n_cuda and summary.computed == summary.total - n_cuda
    assert summary.unavailable == 0 and not summary.failed
    table = pd.read_parquet(rd.table_path).sort_values(["point_id", "repeat"])
    pd.testing.assert_frame_equal(table[cols].reset_index(drop=True),
                                  published[cols].reset_index(drop=True))  # fmt: skip


def test_force_keeps_a_finished_point_whose_recomputation_fails(tmp_path, monkeypatch):
    import precision.runner.execute

    run(tmp_path)
    rd = ResultsDir(tmp_path, "s")
    before = pd.read_parquet(rd.table_path)

    def broken(*args, **kwargs):
        raise RuntimeError("a regression in the code under test")

    monkeypatch.setattr(precision.runner.execute, "_default_gemm", lambda: broken)
    summary = run(tmp_path, force=True)
    assert summary.kept == summary.total and summary.failed
    assert summary.errors == 0 and summary.computed == 0  # each point counted once, as kept
    assert len(summary.kept_after_error) == summary.total
    assert all("a regression" in line for line in summary.kept_after_error)
    after = pd.read_parquet(rd.table_path)
    pd.testing.assert_frame_equal(after, before)


def test_a_changed_config_never_leaves_the_earlier_configs_table(tmp_path, monkeypatch):
    """The table is rewritten for the new config when the run starts, so a run stopped before
    its end (here: interrupted at its first point) leaves no rows of the earlier config."""
    import precision.runner.execute

    run(tmp_path)
    rd = ResultsDir(tmp_path, "s")
    assert set(pd.read_parquet(rd.table_path)["method"]) == {"plain", "corrected"}

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(precision.runner.execute, "_default_gemm", lambda: interrupted)
    changed = CONFIG.replace('method = ["plain", "corrected"]', 'method = ["plain"]').replace(
        "size = [8, 16]", "size = [8, 16, 32]"
    )
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, changed)
    table = pd.read_parquet(rd.table_path)
    assert set(table["method"]) == {"plain"} and set(table["m"]) == {8, 16}  # stored ones only

    only_new = CONFIG.replace("size = [8, 16]", "size = [64]")
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, only_new)
    assert not rd.table_path.exists()  # no stored point of this config: no table at all
    assert not rd.table_path.with_suffix(".csv").exists()


def test_the_lock_message_suggests_wait_only_where_it_was_not_given(tmp_path):
    """After a --wait that ran out, the message still suggested --wait."""
    rd = ResultsDir(tmp_path, "s")
    with rd.lock():
        with pytest.raises(StoreError, match=r"\(--wait SECONDS waits for it\)"):
            with ResultsDir(tmp_path, "s").lock():
                pass
        with pytest.raises(StoreError, match=r"\(still, after waiting 0\.2 s\)"):
            with ResultsDir(tmp_path, "s").lock(wait=0.2):
                pass


def test_a_results_dir_that_cannot_be_made_does_not_mention_stored_files(tmp_path):
    """Under a path that does not exist (and cannot be made), nothing was stored to keep."""
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(StoreError) as info:
        with ResultsDir(blocker / "nonexist", "s").lock():
            pass
    assert "cannot write" in str(info.value) and "kept unchanged" not in str(info.value)
