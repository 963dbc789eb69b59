"""The ``precision`` run/plot/list/info commands, and kill-then-resume of a real subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import doubles
import pandas as pd
import pytest

from precision.runner.cli import main

TESTS_DIR = Path(__file__).resolve().parent

CONFIG = """\
name = "cli"
seed = 1
repeats = 2
reference = "fp64"
[sweep]
size = [8, 16]
distribution = ["uniform", "normal"]
method = ["plain", "corrected"]
format = ["fp16", "bf16"]
"""

# Runs the CLI in a fresh interpreter with the gemm double installed.
# SIGINT gets Python's own handler, as in a terminal: a shell that starts pytest in the
# background (as CI runners and `cmd &` in scripts do) leaves SIGINT ignored, and a child
# inherits that, so it would finish its sweep and exit 0 whatever the test sends.
# With PRECISION_TEST_HOLD="COUNT:DIR", the gemm blocks (until a signal ends the run) once
# DIR holds COUNT point files: a signal the test sends after seeing COUNT files then always
# lands while points remain, however slowly a loaded machine runs the test.
LAUNCHER = f"""\
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {str(TESTS_DIR)!r})
import doubles
doubles.install(setattr)
hold = os.environ.get("PRECISION_TEST_HOLD")
if hold:
    import pathlib
    import precision.runner.execute
    count, folder = hold.split(":", 1)
    def held_gemm(*args, **kwargs):
        if len(list(pathlib.Path(folder).glob("*.parquet"))) >= int(count):
            time.sleep(300)
        return doubles.fake_gemm(*args, **kwargs)
    precision.runner.execute._default_gemm = lambda: held_gemm
from precision.runner.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture
def cfg(tmp_path, monkeypatch):
    doubles.install(monkeypatch.setattr)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "cfg.toml"
    path.write_text(CONFIG)
    return path


def test_typo_exits_nonzero_with_one_message_and_writes_nothing(cfg, capsys):
    cfg.write_text(CONFIG.replace("size = [8, 16]", "sise = [64]"))
    assert main(["run", str(cfg)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert "'sise'" in lines[0] and "'size'" in lines[0] and str(cfg) in lines[0]
    assert not (cfg.parent / "results").exists()


def test_run_then_plot_then_reproduce_from_results_dir(cfg, capsys):
    assert main(["run", str(cfg), "--quiet", "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "16 points: 16 computed, 0 already done" in out
    root = cfg.parent / "results" / "cli"
    table = pd.read_parquet(root / "results.parquet")
    # the err_fro figures only: those are checked (the tflops ones doubled the drawing)
    assert main(["plot", str(root), "--metric", "err_fro"]) == 0
    assert (root / "figures" / "err_fro.png").exists()
    assert (root / "figures" / "err_fro.pdf").exists()
    capsys.readouterr()
    # the copied config reproduces the table into the same directory; figures/ is now older
    # than the table, and the run says so (an audit found nothing marked it)
    assert main(["run", str(root / "config.toml"), "--quiet", "--force", "--no-plots"]) == 0
    shown = Path("results") / "cli"  # (as the run names it: relative to the working directory)
    assert (
        f"note: {shown / 'figures'} was drawn from the table before this run's 16 point(s) "
        f"(--no-plots); `precision plot {shown}` redraws it"
    ) in capsys.readouterr().out
    again = pd.read_parquet(root / "results.parquet")
    pd.testing.assert_series_equal(table["err_fro"], again["err_fro"])
    assert (root / "config.toml").read_text() == CONFIG


def test_results_dir_option_and_plot_errors(cfg, capsys, tmp_path):
    assert main(["run", str(cfg), "--quiet", "--no-plots", "--results-dir", "elsewhere"]) == 0
    assert (tmp_path / "elsewhere" / "cli" / "results.parquet").exists()
    assert main(["plot", str(tmp_path / "nothing")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_scheduler_needs_dask(cfg, capsys):
    assert main(["run", str(cfg), "--scheduler", "tcp://x:1"]) == 2
    assert "--executor dask" in capsys.readouterr().err


def test_gpus_needs_dask_and_no_scheduler(cfg, capsys):
    assert main(["run", str(cfg), "--gpus", "all"]) == 2
    assert "--gpus needs --executor dask" in capsys.readouterr().err
    pytest.importorskip("dask.distributed")
    argv = ["run", str(cfg), "--executor", "dask", "--gpus", "0", "--scheduler", "tcp://x:1"]
    assert main(argv) == 2
    assert "--gpus starts a local cluster" in capsys.readouterr().err
    assert not (cfg.parent / "results").exists()


def test_failed_points_give_exit_code_one(cfg, capsys):
    cfg.write_text(CONFIG.replace('"bf16"]', '"tf32"]').replace('"corrected"]', '"satf"]'))
    assert main(["run", str(cfg), "--quiet", "--no-plots"]) == 1
    assert "NotImplementedError" in capsys.readouterr().out


@pytest.mark.parametrize("command", [[], ["run"], ["plot"], ["list"], ["info"]])
def test_help_everywhere(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([*command, "--help"])
    assert info.value.code == 0
    assert "usage: precision" in capsys.readouterr().out


def test_list_and_info(cfg, capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for word in ("plain", "corrected", "fp16", "exp_rand", "cancellation", "emulator"):
        assert word in out
    assert "unavailable: no GPU (test double)" in out
    combos = out.split("valid combinations")[1]
    rows = [" ".join(line.split()) for line in combos.splitlines()]
    assert "corrected emulator tf32, bf16 sm90, sm100, sm89, sm80" in rows
    assert "corrected emulator fp16 all" in rows
    assert "plain cublas fp64, fp32, tf32, fp16, bf16 all (not on this machine)" in rows
    assert not any(r.startswith("corrected emulator") and "e4m3" in r for r in rows)
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "version" in out and "numpy" in out and "git_commit" in out


def _launch(cfg: Path, *extra: str, hold: tuple[int, Path] | None = None) -> subprocess.Popen:
    """Start ``precision run``; with ``hold=(count, points_dir)`` it stops (see LAUNCHER)
    before computing any point past the first ``count``, until it gets a signal."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TEST_")}
    if hold:
        env["PRECISION_TEST_HOLD"] = f"{hold[0]}:{hold[1]}"
    return subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, "run", str(cfg), "--quiet", "--no-plots", *extra],
        cwd=cfg.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait_for_points(proc: subprocess.Popen, points_dir: Path, count: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if points_dir.exists() and len(list(points_dir.glob("*.parquet"))) >= count:
            return
        time.sleep(0.02)
    proc.kill()  # (a held run would otherwise keep communicate() waiting)
    raise AssertionError(f"no {count} points written: {proc.communicate()}")


def test_ctrl_c_stops_cleanly_and_keeps_finished_points(cfg, tmp_path, capsys):
    points_dir = tmp_path / "results" / "cli" / "points"
    proc = _launch(cfg, hold=(2, points_dir))
    _wait_for_points(proc, points_dir, 2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err.decode(), (proc.returncode, err)
    done = {p: p.stat().st_mtime_ns for p in points_dir.glob("*.parquet")}
    assert len(done) == 2  # 14 points remained when the signal came
    for path in done:
        assert len(pd.read_parquet(path)) == 2
    assert not list(points_dir.parent.rglob("*.tmp"))

    # the resumed run, in this process (doubles installed by cfg): no interpreter to start
    capsys.readouterr()
    assert main(["run", str(cfg), "--quiet", "--no-plots"]) == 0
    assert "16 points: 14 computed, 2 already done" in capsys.readouterr().out
    assert done == {p: p.stat().st_mtime_ns for p in done}


def test_killed_run_resumes_without_recomputing_and_matches_clean_run(cfg, tmp_path, capsys):
    points_dir = tmp_path / "results" / "cli" / "points"
    proc = _launch(cfg, hold=(4, points_dir))
    _wait_for_points(proc, points_dir, 4)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()  # waits and closes the pipes
    done = {p: p.stat().st_mtime_ns for p in points_dir.glob("*.parquet")}
    assert len(done) == 4  # 12 points remained when the signal came
    assert not (tmp_path / "results" / "cli" / "results.parquet").exists()

    # the resumed run, in this process (doubles installed by cfg): no interpreter to start
    capsys.readouterr()
    assert main(["run", str(cfg), "--quiet", "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert f"{16 - len(done)} computed, {len(done)} already done" in out
    assert done == {p: p.stat().st_mtime_ns for p in done}
    assert not list(points_dir.parent.rglob("*.tmp"))

    # the clean reference run, in this process (doubles installed by cfg): no interpreter to start
    assert main(["run", str(cfg), "--quiet", "--no-plots", "--results-dir", "clean"]) == 0
    a = pd.read_parquet(tmp_path / "results" / "cli" / "results.parquet")
    b = pd.read_parquet(tmp_path / "clean" / "cli" / "results.parquet")
    cols = ["point_id", "repeat", "input_seed", "err_fro", "err_max", "err_median"]
    pd.testing.assert_frame_equal(a[cols], b[cols])


def test_help_precision_names_every_entry_point():
    import pydoc

    import precision
    from precision.runner.cli import COMMAND_MODULES

    text = pydoc.render_doc(precision, renderer=pydoc.plaintext)
    for name in ("precision.mma", "precision.gemm.gemm", "precision.reference.exact_matmul"):
        assert name in text
    for module in COMMAND_MODULES:
        command = module.rsplit(".", 1)[1].replace("_", "-").replace("listing", "list")
        assert f"precision {command}" in text, command


def test_a_run_with_nothing_to_draw_says_so_and_plot_says_why(cfg, capsys):
    """A GPU config run on a machine without one stores every point as unavailable. The run
    used to end without a word about figures (and leave an empty figures/), and `precision
    plot` said only that there were no successful rows."""
    cfg.write_text(
        CONFIG.replace('format = ["fp16", "bf16"]', 'format = ["fp16"]\nbackend = ["cuda"]')
    )
    assert main(["run", str(cfg), "--quiet"]) == 0
    out = capsys.readouterr().out
    root = Path("results") / "cli"
    assert "figures: none: no point has a value to draw (status {'unavailable': 8})" in out
    assert f"`precision plot {root}`" in out
    assert main(["plot", str(root)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (
        f"error: {root / 'results.parquet'} has no successful rows to plot "
        "(8 points: unavailable 8; the 'error' column says why)"
    )


def test_python_dash_m_precision_is_the_precision_command(tmp_path):
    """``python -m precision`` failed with "No module named precision.__main__"."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-m", "precision", "--version"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("precision ")
    bad = subprocess.run([sys.executable, "-m", "precision", "run", "missing.toml"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert bad.returncode == 2 and "cannot read config missing.toml" in bad.stderr
