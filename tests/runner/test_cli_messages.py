"""What ``precision run`` and ``precision bench`` tell the user (first-hour audit): a run
waiting for another run's lock says so; a Ctrl-C says what is stored and how to resume; no
progress bar in a redirected log, nor an empty one; help texts; ``--results-dir FILE``."""

from __future__ import annotations

import argparse
import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import doubles
import pytest
from test_cli import CONFIG  # the CLI tests' 16-point sweep, named "cli"

import precision.runner.execute
import precision.runner.runner as runner
import precision.runner.store as store
from precision.runner.cli import build_parser, main
from precision.runner.store import ResultsDir

TESTS_DIR = Path(__file__).resolve().parent


SHOWN = Path("results") / "cli"  # the results directory as the run names it
POINTS = SHOWN / "points"


@pytest.fixture
def cfg(tmp_path, monkeypatch):
    doubles.install(monkeypatch.setattr)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "cfg.toml"
    path.write_text(CONFIG)
    return path


class TTY(io.StringIO):
    """A standard error that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def _err_lines(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


# -- 1. --wait says whom it waits for ------------------------------------------------------


def test_wait_says_once_whom_it_waits_for_then_every_interval(cfg, capsys, monkeypatch):
    monkeypatch.setattr(runner, "WAIT_REPORT_S", 0.2)
    who = f"host {socket.gethostname()}, pid {os.getpid()}"
    with ResultsDir("results", "cli").lock():
        assert main(["run", str(cfg), "--no-plots", "--wait", "0.9"]) == 2
        lines = _err_lines(capsys)
        assert lines[0] == f"waiting up to 0.9 s for the run holding {SHOWN} ({who}) ..."
        assert lines[1] == "still waiting, 0.2 s so far"
        assert all(line.startswith("still waiting, ") for line in lines[1:-1])
        assert lines[-1].startswith(f"error: {SHOWN} is in use by another run")
        # --quiet: the first line only (the "still waiting" ones are progress chatter)
        assert main(["run", str(cfg), "--no-plots", "--wait", "0.5", "--quiet"]) == 2
        lines = _err_lines(capsys)
        assert lines[0].startswith("waiting up to 0.5 s for the run holding")
        assert len(lines) == 2 and lines[1].startswith("error: ")
        # no --wait: refused at once, no waiting line
        assert main(["run", str(cfg), "--no-plots"]) == 2
        assert len(_err_lines(capsys)) == 1


def test_wait_without_limit_then_runs_when_the_other_run_ends(cfg, capsys):
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with ResultsDir("results", "cli").lock():
            held.set()
            release.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(10)
    timer = threading.Timer(0.5, release.set)
    timer.start()
    try:
        assert main(["run", str(cfg), "--no-plots", "--quiet", "--wait", "inf"]) == 0
    finally:
        release.set()
        thread.join()
    who = f"host {socket.gethostname()}, pid {os.getpid()}"
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"waiting for the run holding {SHOWN} ({who}), with no time limit ..."
    ]
    assert "16 points: 16 computed" in out


# -- 2. Ctrl-C says what is stored and how to resume ---------------------------------------


def _gemm_interrupted_after(calls: int):
    """The gemm double, raising KeyboardInterrupt (a Ctrl-C) at call ``calls + 1``."""
    count = 0

    def gemm(*args, **kwargs):
        nonlocal count
        count += 1
        if count > calls:
            raise KeyboardInterrupt
        return doubles.fake_gemm(*args, **kwargs)

    return gemm


def test_ctrl_c_names_the_stored_points_and_a_rerun_computes_the_rest(cfg, capsys, monkeypatch):
    gemm = _gemm_interrupted_after(3 * 2)  # 3 points of 2 repeats
    monkeypatch.setattr(precision.runner.execute, "_default_gemm", lambda: gemm)
    assert main(["run", str(cfg), "--no-plots"]) == 130
    assert _err_lines(capsys)[-1] == (
        f"interrupted: 3 of 16 points are stored in {POINTS}; run the same command again to "
        "compute the other 13 (stored points are not recomputed)"
    )
    monkeypatch.setattr(precision.runner.execute, "_default_gemm", lambda: doubles.fake_gemm)
    assert main(["run", str(cfg), "--no-plots"]) == 0
    assert "16 points: 13 computed, 3 already done" in capsys.readouterr().out
    # with --force, the points stored before are not counted as this run's
    gemm = _gemm_interrupted_after(5 * 2)
    monkeypatch.setattr(precision.runner.execute, "_default_gemm", lambda: gemm)
    assert main(["run", str(cfg), "--no-plots", "--force"]) == 130
    assert _err_lines(capsys)[-1] == (
        f"interrupted: this run recomputed 5 of 16 points (stored in {POINTS}); the other 11 "
        "keep what was stored for them before, if anything. Run the same command again to "
        "recompute all of them, or drop --force to compute only the points not yet stored"
    )


def test_ctrl_c_with_two_jobs_counts_the_points_the_pool_returned(cfg, capsys, monkeypatch):
    def pool(jobs, groups, on_done, gemm=None):  # returns 4 points, then a Ctrl-C
        points = [p for group in groups for p in group][:4]
        for point in points:
            on_done(point, precision.runner.execute.compute_point(point))
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "_run_pool", pool)
    assert main(["run", str(cfg), "--no-plots", "--jobs", "2"]) == 130
    assert _err_lines(capsys)[-1] == (
        f"interrupted: 4 of 16 points are stored in {POINTS}; run the same command again to "
        "compute the other 12 (stored points are not recomputed)"
    )


def test_ctrl_c_while_waiting_or_drawing(cfg, capsys, monkeypatch):
    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    with ResultsDir("results", "cli").lock(), monkeypatch.context() as patch:
        patch.setattr(store, "time", SimpleNamespace(monotonic=time.monotonic, sleep=ctrl_c))
        assert main(["run", str(cfg), "--wait", "30"]) == 130
    assert _err_lines(capsys)[-1] == (
        f"interrupted while waiting for the run holding {SHOWN}; this run wrote nothing"
    )
    assert not Path("results/cli/config.toml").exists()
    monkeypatch.setattr(runner, "plot_results", ctrl_c)
    assert main(["run", str(cfg)]) == 130
    assert _err_lines(capsys)[-1] == (
        f"interrupted: all 16 points are stored in {POINTS}; run the same command again to "
        f"draw the figures (or `precision plot {SHOWN}`) (no point is recomputed)"
    )


def test_interrupted_message_before_any_point_and_before_the_table():
    from precision.runner.commands.run import interrupted_message
    from precision.runner.runner import RunProgress

    before = RunProgress(SHOWN, 16, phase="setup")
    assert interrupted_message(before) == (
        "interrupted before computing any point; run the same command again to start "
        "(points already stored are not recomputed)"
    )
    table = RunProgress(SHOWN, 16, plots=False, phase="finish", stored=16)
    assert interrupted_message(table) == (
        f"interrupted: all 16 points are stored in {POINTS}; run the same command again to "
        "write the table (no point is recomputed)"
    )


# A `precision run` in a fresh interpreter: gemm double by name (--jobs workers are spawned)
LAUNCHER = f"""\
import functools, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {str(TESTS_DIR)!r})
import doubles
doubles.install(setattr)
import precision.runner.commands.run as command
command.run_experiment = functools.partial(command.run_experiment, gemm=doubles.fake_gemm)
from precision.runner.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals a process group")
def test_ctrl_c_of_a_real_run_with_two_jobs(cfg, tmp_path, capsys):
    """Ctrl-C in a terminal signals the run and its --jobs workers (one process group): 8
    points were stored by an earlier run, both workers are inside a point."""
    cfg.write_text(CONFIG.replace("size = [8, 16]", "size = [8]"))
    assert main(["run", str(cfg), "--no-plots", "--quiet"]) == 0
    cfg.write_text(CONFIG)
    hold = tmp_path / "hold"
    hold.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TEST_")}
    env["PRECISION_TEST_GEMM_HOLD"] = str(hold)  # each gemm call blocks (doubles._hold)
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, "run", str(cfg), "--no-plots", "--jobs", "2"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while len(list(hold.glob("inside.*"))) < 2 and proc.poll() is None:
            assert time.monotonic() < deadline, "the workers never entered a point"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        (hold / "release").touch()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err.decode()
    assert err.decode().strip().splitlines()[-1] == (
        f"interrupted: 8 of 16 points are stored in {POINTS}; run the same command again to "
        "compute the other 8 (stored points are not recomputed)"
    )


# -- 3. progress bars: none in a redirected log, none when nothing is pending ---------------


def test_no_bar_where_stderr_is_no_terminal_nor_when_nothing_is_pending(cfg, capsys, monkeypatch):
    assert main(["run", str(cfg), "--no-plots"]) == 0
    out, err = capsys.readouterr()
    assert "\r" not in err and "point/s" not in err and err == ""
    assert out.startswith("16 points: 16 computed, 0 already done")
    # on a terminal: the bar while points are pending, and none with nothing to compute
    terminal = TTY()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["run", str(cfg), "--no-plots", "--force"]) == 0
    assert "16/16" in terminal.getvalue()
    terminal.seek(0)
    terminal.truncate()
    assert main(["run", str(cfg), "--no-plots"]) == 0
    assert terminal.getvalue() == ""
    assert "16 points: 0 computed, 16 already done" in capsys.readouterr().out


BENCH = ["bench", "--cpu-n", "16", "--exact-n", "0", "--formats", "f16", "--repeats", "1"]


def test_bench_bar_only_on_a_terminal_and_not_with_quiet(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*BENCH, "--out", "a.csv"]) == 0
    out, err = capsys.readouterr()
    assert "\r" not in err and "format" not in err
    assert "cpu emulator f16     n=16:" in out and "wrote 1 rows to a.csv" in out
    terminal = TTY()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main([*BENCH, "--out", "b.csv"]) == 0
    assert "cpu emulator n=16" in terminal.getvalue()  # the bar's label
    terminal.seek(0)
    terminal.truncate()
    assert main([*BENCH, "--out", "c.csv", "--quiet"]) == 0
    assert terminal.getvalue() == ""
    assert "wrote 1 rows to c.csv" in capsys.readouterr().out


# -- 4. help -------------------------------------------------------------------------------


def test_help_lists_the_commands_in_the_readmes_order_and_says_what_they_do(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    listed = [line.split()[0] for line in text.split("COMMAND\n", 1)[1].splitlines()
              if line.startswith("    ") and not line.startswith("     ")]  # fmt: skip
    order = ["run", "plot", "list", "info", "bench", "bench-gemm", "capture", "verify"]
    assert listed[: len(order)] == order
    assert "valid method x format x backend x arch combinations" in " ".join(text.split())


def _option_help(command: str, option: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    action = next(a for a in sub.choices[command]._actions if option in a.option_strings)
    return action.help or ""


def test_run_help_states_the_jobs_default_and_what_no_plots_skips():
    assert "default 1" in _option_help("run", "--jobs")
    assert "summary tables" in _option_help("run", "--no-plots")
    assert "no progress bar" in _option_help("bench", "--quiet")


# -- 5. --results-dir FILE -----------------------------------------------------------------


def test_results_dir_that_is_a_file_is_named_as_such(cfg, capsys):
    Path("some_file").write_text("keep me")
    assert main(["run", str(cfg), "--results-dir", "some_file"]) == 2
    assert capsys.readouterr().err == "error: --results-dir some_file is a file, not a directory\n"
    assert main(["run", str(cfg), "--results-dir", "some_file/sub"]) == 2
    assert capsys.readouterr().err == (
        "error: --results-dir some_file/sub: some_file is a file, not a directory\n"
    )
    assert Path("some_file").read_text() == "keep me"
    # the run's own directory <results-dir>/<name> a file: the store says so
    Path("results").mkdir()
    Path("results/cli").write_text("keep me too")
    assert main(["run", str(cfg)]) == 2
    assert capsys.readouterr().err == (
        f"error: cannot write {SHOWN}: it is a file, not a directory (a run's results go into "
        "the directory <results-dir>/<name>): move the file, or use another name or "
        "--results-dir\n"
    )
    assert Path("results/cli").read_text() == "keep me too"
