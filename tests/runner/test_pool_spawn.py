"""``--jobs N`` workers are fresh processes: they never inherit the run's process state.

A forked worker inherited everything, including a CUDA context: after anything in the run's
process had used the GPU (a GPU point computed in-process, a notebook that called ``gemm``
on the GPU first), every point of a ``jobs > 1`` run failed in its worker with
``cudaErrorInitializationError``. Found by running the test suite under pytest-xdist on a
GPU machine (2026-11-26).
"""

from __future__ import annotations

import pandas as pd
import pytest

import precision.runner.execute as execute
from precision.runner.config import parse_config
from precision.runner.runner import RunnerError, run_experiment

CONFIG = """\
name = "pool"
[[sweep]]
size = [8, 16]
distribution = ["uniform"]
method = ["plain"]
format = ["fp32"]
backend = ["numpy"{extra}]
"""


def run(root, jobs: int, extra: str = "", **kwargs):
    text = CONFIG.format(extra=extra)
    summary = run_experiment(
        parse_config(text, "cfg.toml"), root, jobs=jobs, progress=False, plots=False, **kwargs
    )
    return summary, pd.read_parquet(summary.results_dir / "results.parquet")


def test_workers_do_not_inherit_the_state_of_the_runs_process(tmp_path, monkeypatch):
    """State set in the run's process after start-up (here: every backend unavailable) stays
    there: the workers compute with their own, fresh state."""
    monkeypatch.setattr(execute, "_availability", lambda: {"numpy": "state of the parent"})
    summary, table = run(tmp_path, jobs=2)
    assert summary.computed == 2 and summary.unavailable == 0
    assert (table["status"] == "ok").all(), table[["status", "error"]]


def test_a_gemm_the_workers_cannot_import_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(RunnerError, match=r"must be a module-level function, not <function"):
        run(tmp_path, jobs=2, gemm=lambda A, B, **kw: A @ B)
    assert not (tmp_path / "pool").exists()


@pytest.mark.gpu
def test_jobs_after_the_gpu_was_used_in_the_runs_process(tmp_path):
    import cupy as cp

    assert int(cp.arange(3).sum()) == 3  # a CUDA context in this process
    summary, table = run(tmp_path, jobs=2, extra=', "cublas"')
    assert summary.computed == 4
    assert (table["status"] == "ok").all(), table[["backend", "status", "error"]]


def test_a_script_without_a_main_guard_is_told_to_add_one(tmp_path):
    """Each worker imports the script that started the run; one that calls run_experiment at
    its top level used to meet the run's own lock in every worker, and the run reported its
    points as lost to dying workers, with no word of the cause."""
    import subprocess
    import sys

    # one point: a pool of one worker, then one retry in a fresh process (two points started
    # four interpreters besides the script's, each importing the script and failing alike)
    (tmp_path / "cfg.toml").write_text(CONFIG.format(extra="").replace("[8, 16]", "[8]"))
    (tmp_path / "script.py").write_text(
        "from precision.runner.config import load_config\n"
        "from precision.runner.runner import run_experiment\n"
        'run_experiment(load_config("cfg.toml"), "results", jobs=2, progress=False, '
        "plots=False)\n"
    )
    done = subprocess.run(
        [sys.executable, "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert 'put the call under `if __name__ == "__main__":`' in done.stderr, done.stderr[-2000:]
    assert "is in use by another run" not in done.stderr
    assert "no worker returned any point, so look at their messages above" in done.stderr
