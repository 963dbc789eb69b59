"""Dask execution: a wrong --scheduler, workers with other code or none left, Ctrl-C, --gpus.

Each run that could hang on a defect runs in a thread joined with a deadline, so that a
regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import threading
import time
from pathlib import Path

import doubles
import pytest

import precision
from precision.runner import cluster, runner
from precision.runner.config import parse_config
from precision.runner.runner import RunnerError, run_experiment
from precision.runner.sweep import expand

dd = pytest.importorskip("dask.distributed")

CONFIG = """\
name = "a"
seed = 3
[sweep]
size = [16, 24]
distribution = ["uniform"]
method = ["plain", "corrected"]
format = ["f16"]
backend = ["emulator"]
"""

N_POINTS = len(expand(parse_config(CONFIG, "a.toml")))


@pytest.fixture(autouse=True)
def _doubles(monkeypatch, one_dask_cluster_at_a_time):
    doubles.install(monkeypatch.setattr)
    doubles.dask_without_nvml(monkeypatch)


def run_within(seconds: float, **kwargs):
    """run_experiment of CONFIG in a thread: (summary or the exception raised, seconds taken);
    fails the test when it has not returned after ``seconds``."""
    kwargs.setdefault("progress", False)
    kwargs.setdefault("plots", False)
    kwargs.setdefault("executor", "dask")
    out: dict = {}

    def target() -> None:
        try:
            out["value"] = run_experiment(parse_config(CONFIG, "a.toml"), **kwargs)
        except BaseException as exc:  # (returned to the test)
            out["value"] = exc

    start = time.monotonic()
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"the run did not return within {seconds} s"
    return out["value"], time.monotonic() - start


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_wrong_scheduler_address_is_one_line_at_once(tmp_path):
    """Dask retried a refused connection for 30 s, then raised OSError with a traceback
    (exit status 1), after writing the results directory."""
    for address in (f"tcp://127.0.0.1:{free_port()}", "tcp://no-such-host.invalid:8786"):
        error, took = run_within(8, results_root=tmp_path, scheduler=address)
        assert isinstance(error, RunnerError), error
        assert str(error).startswith(f"cannot reach the Dask scheduler at {address} (")
        assert "\n" not in str(error) and took < 5
    assert not (tmp_path / "a").exists()


def test_silent_scheduler_times_out(tmp_path, monkeypatch):
    """A server that accepts the connection and never answers held the run as long as it
    kept the connection open (Dask's timeout= does not cover it). It is refused before the
    results directory is written (it was caught under the lock, after config.toml)."""
    monkeypatch.setattr(runner, "SCHEDULER_TIMEOUT_S", 0.5, raising=False)
    server = socket.create_server(("127.0.0.1", 0))
    held: list = []
    threading.Thread(target=lambda: held.append(server.accept()), daemon=True).start()
    try:
        error, took = run_within(
            6,
            results_root=tmp_path,
            scheduler=f"tcp://{server.getsockname()[0]}:{server.getsockname()[1]}",
        )
    finally:
        server.close()
        for conn, _ in held:
            conn.close()
    assert isinstance(error, RunnerError) and "cannot reach the Dask scheduler" in str(error)
    assert took < 5
    assert not (tmp_path / "a").exists()


def _package_copy(root: Path, edit: str) -> Path:
    """A directory whose ``precision`` package is this one's, with ``edit`` appended to
    ``precision/runner/sweep.py``; or, with ``edit="unimportable"``, one that cannot be
    imported."""
    pkg = root / "precision"
    if edit == "unimportable":
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("raise ImportError('precision is not installed here')\n")
        return root
    shutil.copytree(
        Path(precision.__file__).parent, pkg, ignore=shutil.ignore_patterns("__pycache__")
    )
    with (pkg / "runner" / "sweep.py").open("a") as f:
        f.write(edit)
    return root


def start_worker(address: str, **env: str):
    """A `dask worker ADDRESS --no-nanny --nthreads 1` process with ``env`` added to its
    environment, a ``PYTHONPATH`` in front of the inherited one (which may be where Dask
    itself is installed); the caller kills it."""
    import subprocess
    import sys

    if "PYTHONPATH" in env and os.environ.get("PYTHONPATH"):
        env = {**env, "PYTHONPATH": env["PYTHONPATH"] + os.pathsep + os.environ["PYTHONPATH"]}
    return subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_worker", address, "--no-nanny",
         "--nthreads", "1"],
        env={**os.environ, **env},
        cwd=Path(env.get("PYTHONPATH", ".").split(os.pathsep)[0]),  # (not this checkout)
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip


def test_workers_with_other_code_or_without_the_project_are_refused(tmp_path):
    """Workers started from another copy of the code (here: one edited line) computed points
    whose rows were written as this run's; a worker that cannot import precision crashed on
    its first task, and the run waited for ever. Both are named now, before any task is
    sent."""
    other = _package_copy(tmp_path / "other", "\n# edited\n")
    missing = _package_copy(tmp_path / "missing", "unimportable")
    with dd.LocalCluster(
        n_workers=0, processes=False, protocol="tcp", scheduler_kwargs=cluster.SCHEDULER_OPTIONS
    ) as local:
        workers = [start_worker(local.scheduler_address, PYTHONPATH=str(path))
                   for path in (other, missing)]  # fmt: skip
        try:
            with dd.Client(local.scheduler_address) as client:
                client.wait_for_workers(2, timeout=20)
            error, _ = run_within(
                20, results_root=tmp_path / "results", scheduler=local.scheduler_address
            )
        finally:
            for worker in workers:
                worker.kill()
                worker.wait()
    assert isinstance(error, RunnerError), error
    message = str(error)
    assert message.startswith("2 Dask worker(s) do not run this run's code (version ")
    assert "cannot import precision (ImportError: precision is not installed here)" in message
    ours, other_code = re.findall(r"version \S+ source ([0-9a-f]{16})", message)
    assert ours != other_code  # (the edited copy's digest)
    assert not list((tmp_path / "results" / "a" / "points").glob("*.parquet"))


def test_rows_of_a_worker_with_other_code_are_not_written(tmp_path, monkeypatch):
    """A worker that joined after the check (so was not refused): its rows are left unwritten
    and reported, not stored as this run's."""
    import precision.runner.execute as execute

    real = execute._provenance()
    monkeypatch.setattr(
        runner, "_check_workers", lambda client: runner._worker_code(real), raising=False
    )
    monkeypatch.setattr(execute, "_provenance", lambda: {**real, "source_digest": "0" * 16})
    summary, _ = run_within(10, results_root=tmp_path, jobs=1, dask_processes=False)
    assert not isinstance(summary, BaseException), summary
    assert (summary.computed, summary.not_run) == (0, N_POINTS)
    (note,) = [w for w in summary.warnings if "other code" in w]
    assert f"{N_POINTS} by version {real['version']} source {'0' * 16}" in note
    assert not list((tmp_path / "a" / "points").glob("*.parquet"))


def test_run_gives_up_when_no_worker_is_left(tmp_path, monkeypatch):
    """The only worker (started without a nanny, as `dask worker --no-nanny`) is SIGKILLed
    mid-run: the run waited for ever. Now it stops after WORKER_WAIT_S without a worker and
    reports the points left as not run."""
    monkeypatch.setattr(runner, "WORKER_WAIT_S", 1.0)
    hold = tmp_path / "hold"
    hold.mkdir()
    pythonpath = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    with dd.LocalCluster(
        n_workers=0, processes=False, protocol="tcp", scheduler_kwargs=cluster.SCHEDULER_OPTIONS
    ) as local:
        worker = start_worker(
            local.scheduler_address,
            PRECISION_TEST_GEMM_HOLD=str(hold),
            PYTHONPATH=os.pathsep.join([str(Path(doubles.__file__).parent), *pythonpath]),
        )
        try:
            with dd.Client(local.scheduler_address) as client:
                client.wait_for_workers(1, timeout=20)
                client.register_plugin(doubles.DoublesPlugin(str(tmp_path / "log")))

            def kill_when_inside() -> None:
                deadline = time.monotonic() + 10
                while not list(hold.glob("inside.*")) and time.monotonic() < deadline:
                    time.sleep(0.02)
                worker.kill()

            threading.Thread(target=kill_when_inside, daemon=True).start()
            summary, _ = run_within(15, results_root=tmp_path, scheduler=local.scheduler_address)
        finally:
            worker.kill()
            worker.wait()
    assert not isinstance(summary, BaseException), summary
    assert (summary.computed, summary.not_run) == (0, N_POINTS)
    (note,) = [w for w in summary.warnings if "no Dask worker was connected" in w]
    assert note.startswith(f"{N_POINTS} point(s) not computed")


def test_local_cluster_workers_ignore_sigint_and_keep_glibc_defaults(monkeypatch):
    """A Ctrl-C signals the whole process group: each local worker process printed its own
    KeyboardInterrupt traceback. They ignore SIGINT now; the run closes them. And they start
    without Dask's MALLOC_TRIM_THRESHOLD_, under which numpy's temporaries made emulator
    GEMMs 2.5-4.5x slower (cluster.worker_nanny).

    The run's own process keeps its environment: the nannies wrote their workers' variables
    into it (OMP_NUM_THREADS=1, the BLAS counts, PYTHONHASHSEED=6640 ...), so that after a
    Dask run a Python session ran the emulator on one thread."""
    monkeypatch.delenv(cluster.MALLOC_TRIM_VAR, raising=False)  # (as in a run's own process)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = dict(os.environ)
    with runner._dask_client(1, None, True, None) as client:
        (ignored,) = client.run(lambda: signal.getsignal(signal.SIGINT) == signal.SIG_IGN).values()
        (trim,) = client.run(doubles.started_with, cluster.MALLOC_TRIM_VAR).values()
        (omp,) = client.run(doubles.started_with, "OMP_NUM_THREADS").values()
    assert ignored
    assert trim is None
    assert omp == "1"  # (what the workers were given; the run's process had none)
    assert dict(os.environ) == before


def test_gpus_list_indices_are_of_the_visible_gpus(monkeypatch):
    """Under CUDA_VISIBLE_DEVICES=4,6 (a batch system's allocation) index 0 is GPU 4: a
    worker given CUDA_VISIBLE_DEVICES=0 used a GPU outside the allocation. -1 (which hides
    every GPU) and words were accepted as GPUs."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    assert cluster.parse_gpus("1,0") == ["6", "4"]
    for bad in ("-1", "foo", "2,0", "0,4"):
        with pytest.raises(cluster.ClusterError, match="--gpus"):
            cluster.parse_gpus(bad)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    with pytest.raises(RunnerError, match="hides every GPU"):
        run_experiment(parse_config(CONFIG, "a.toml"), "unused", executor="dask", gpus="0,1")


def test_substitute_gemm_is_refused_for_dask(tmp_path):
    with pytest.raises(RunnerError, match="substitute gemm works only with the local"):
        run_experiment(
            parse_config(CONFIG, "a.toml"), tmp_path, executor="dask", gemm=doubles.fake_gemm
        )
    assert not (tmp_path / "a").exists()
    assert os.environ.get("PRECISION_TEST_GEMM_HOLD") is None
