"""Dask execution over GPU workers, on CPU: --gpus parsing, resource routing, worker death.

GPU workers are faked: a CPU worker that advertises the resource GPU=1 (and, for process
workers, the CUDA_VISIBLE_DEVICES of its pinned "GPU"), with the ``cuda`` backend replaced by
the gemm double (doubles.DoublesPlugin).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

import doubles
import pandas as pd
import pytest

from precision.runner import cluster, runner
from precision.runner.cluster import (
    MALLOC_TRIM_VAR,
    ClusterError,
    cluster_spec,
    needs_gpu,
    parse_gpus,
)
from precision.runner.config import parse_config
from precision.runner.runner import RunnerError, lost_points_note, run_experiment
from precision.runner.sweep import expand

dd = pytest.importorskip("dask.distributed")

CONFIG = """\
name = "g"
seed = 5
reference = "fp64"
[sweep]
size = [16, 24, 32]
distribution = ["uniform"]
method = ["plain", "corrected"]
format = ["f16"]
backend = ["emulator", "cuda"]
"""


@pytest.fixture(autouse=True)
def _doubles(monkeypatch, one_dask_cluster_at_a_time):
    doubles.install(monkeypatch.setattr)
    doubles.dask_without_nvml(monkeypatch)
    import precision.runner.execute as execute

    monkeypatch.setattr(execute, "_availability", lambda: dict.fromkeys(doubles.BACKENDS))
    monkeypatch.setattr(
        execute, "_gpu_uuid", lambda: f"fake-{dd.get_worker().name}"
    )  # thread workers share this process: name the worker instead of its environment


def run(root, text=CONFIG, **kwargs):
    kwargs.setdefault("progress", False)
    kwargs.setdefault("plots", False)
    summary = run_experiment(parse_config(text, "g.toml"), root, executor="dask", **kwargs)
    table = pd.read_parquet(summary.results_dir / "results.parquet")
    return summary, table


def test_parse_gpus():
    four = lambda: ["GPU-a", "GPU-b", "GPU-c", "GPU-d"]  # noqa: E731
    assert parse_gpus("all", four) == four()
    assert parse_gpus("2", four) == ["GPU-a", "GPU-b"]
    assert parse_gpus("1, 3", four) == ["1", "3"]
    assert parse_gpus("GPU-x", four) == ["GPU-x"]
    with pytest.raises(ClusterError, match="only 4 GPU"):
        parse_gpus("5", four)
    for bad in ("0", "1,1", "1,,2", "-1", "foo", "1,4"):
        with pytest.raises(ClusterError, match="--gpus"):
            parse_gpus(bad, four)


def test_gpus_all_without_a_gpu_is_a_clear_error(tmp_path, monkeypatch):
    import shutil

    import precision.gpu

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(precision.gpu, "cupy_or_none", lambda: None)
    with pytest.raises(RunnerError, match="no NVIDIA GPU found.*nvidia-smi is not on PATH"):
        run(tmp_path, gpus="all")
    with pytest.raises(RunnerError, match="--gpus needs --executor dask"):
        run_experiment(parse_config(CONFIG, "g.toml"), tmp_path, gpus="0", executor="local")
    assert not (tmp_path / "g").exists()


def test_cluster_spec_pins_one_single_threaded_worker_per_gpu(monkeypatch):
    from distributed.system import MEMORY_LIMIT

    monkeypatch.setenv("PRECISION_BLAS_THREADS", "3")
    _, workers = cluster_spec(["0", "GPU-b"], cpu_workers=2)
    # every worker gets a quarter of the machine's memory, not Dask's one-core share
    share = MEMORY_LIMIT // 4
    assert [w["options"].pop("memory_limit") for w in workers.values()] == [share] * 4
    # every worker process ignores SIGINT (a Ctrl-C is the run's to handle)
    assert all(
        w["options"].pop("preload")[-1] == "precision.runner.cluster" for w in workers.values()
    )
    assert {w["options"].pop("silence_logs") for w in workers.values()} == {logging.WARNING}
    gpu = {name: w["options"] for name, w in workers.items() if name.startswith("gpu-")}
    assert gpu == {
        "gpu-0": {
            "nthreads": 1,
            "resources": {"GPU": 1},
            "name": "gpu-0",
            "env": {"CUDA_VISIBLE_DEVICES": "0"},
            "blas_threads": 3,
        },
        "gpu-GPU-b": {
            "nthreads": 1,
            "resources": {"GPU": 1},
            "name": "gpu-GPU-b",
            "env": {"CUDA_VISIBLE_DEVICES": "GPU-b"},
            "blas_threads": 3,
        },
    }
    cpu = [w["options"] for name, w in workers.items() if name.startswith("cpu-")]
    assert cpu == [{"nthreads": 1, "name": "cpu-0"}, {"nthreads": 1, "name": "cpu-1"}]


def test_gpu_points_run_only_on_gpu_workers(tmp_path, monkeypatch):
    monkeypatch.setattr(cluster, "visible_gpus", lambda: ["g0"])
    summary, table = run(tmp_path, gpus="g0", jobs=2, dask_processes=False)
    assert summary.computed == summary.total == 12 and summary.not_run == 0
    gpu_rows = table["backend"] == "cuda"
    assert gpu_rows.sum() == 6
    assert (table.loc[gpu_rows, "gpu_uuid"] == "fake-gpu-g0").all()
    assert table.loc[~gpu_rows, "gpu_uuid"].isna().all()
    assert (table["status"] == "ok").all()


def test_gpu_points_are_refused_without_a_gpu_worker(tmp_path, monkeypatch):
    monkeypatch.setattr(cluster, "visible_gpus", lambda: ["g0"])
    summary, table = run(tmp_path, jobs=1, dask_processes=False)
    assert summary.computed == 6 and summary.not_run == 6
    assert set(table["backend"]) == {"emulator"}
    (note,) = [w for w in summary.warnings if "need a GPU" in w]
    assert "6 point(s)" in note and "--resources GPU=1" in note and "--gpus" in note
    summary, table = run(tmp_path, gpus="g0", dask_processes=False)  # the rerun: GPU points only
    assert (summary.skipped, summary.computed, summary.not_run) == (6, 6, 0)
    assert len(table) == 12


def test_killed_worker_loses_no_finished_point(tmp_path, monkeypatch):
    """Two worker processes (one pinned to fake GPU "7", with 2 BLAS threads); the other is
    SIGKILLed mid-run. The run
    completes (the nanny restarts the worker, the scheduler reschedules its task), every point
    written before the kill was computed exactly once, and a rerun computes nothing."""
    log = tmp_path / "computed.log"
    config = parse_config(CONFIG, "g.toml")
    points = {p.id for p in expand(config)}
    monkeypatch.setenv("PRECISION_BLAS_THREADS", "2")
    monkeypatch.delenv(MALLOC_TRIM_VAR, raising=False)  # (as in a run's own process)
    scheduler, spec = cluster_spec(["7"], cpu_workers=1)
    cluster = dd.SpecCluster(workers=spec, scheduler=scheduler, name="precision-test")
    written_at_kill: set[str] = set()
    with cluster, dd.Client(cluster) as client:
        client.register_plugin(doubles.DoublesPlugin(str(log), sleep=0.15))
        env = client.run(
            lambda: (
                os.environ.get("CUDA_VISIBLE_DEVICES"),
                os.environ["OPENBLAS_NUM_THREADS"],
                os.environ.get("OPENBLAS_THREAD_TIMEOUT"),
            )
        )
        pids = client.run(os.getpid)
        by_name = {w["name"]: a for a, w in client.scheduler_info()["workers"].items()}
        assert env[by_name["gpu-7"]] == ("7", "2", "4")
        assert env[by_name["cpu-0"]][:2] == (None, "1")
        # both processes started without Dask's glibc trim setting (cluster.worker_nanny)
        assert set(client.run(doubles.started_with, MALLOC_TRIM_VAR).values()) == {None}
        points_dir = tmp_path / "g" / "points"

        def kill_when_two_points_are_written() -> None:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                files = list(points_dir.glob("*.parquet")) if points_dir.is_dir() else []
                if len(files) >= 2:
                    written_at_kill.update(f.stem.rsplit("-", 1)[-1] for f in files)
                    os.kill(pids[by_name["cpu-0"]], signal.SIGKILL)
                    return
                time.sleep(0.02)

        killer = threading.Thread(target=kill_when_two_points_are_written)
        killer.start()
        summary, table = run(tmp_path, scheduler=cluster.scheduler_address)
        killer.join()
    assert 2 <= len(written_at_kill) < 12, "the worker was not killed mid-run"
    assert summary.not_run == 0 and summary.computed == len(points) == 12
    computed = log.read_text().split()
    assert {pid for pid in computed} == points
    assert all(computed.count(pid) == 1 for pid in written_at_kill)
    assert (table.loc[table["backend"] == "cuda", "gpu_uuid"] == "fake-7").all()
    rerun = run_experiment(config, tmp_path, executor="local", progress=False, plots=False)
    assert (rerun.skipped, rerun.computed) == (12, 0)


def test_local_clusters_leave_port_8787_to_others():
    """A local cluster's scheduler bound its HTTP server to Dask's dashboard port 8787 even with
    ``dashboard_address=None``; where another cluster on the host held that port (another test
    session's, as seen with this suite), it warned, and under this suite's warnings-as-errors
    the cluster failed to start ("Cluster failed to start: Port 8787 is already in use").
    Both kinds of local cluster (with and without --gpus) serve it on a free port now. (Fails
    without the fix either way: the scheduler takes 8787 where it is free, and warns where it
    is not; the test holds no port itself, so it cannot disturb other clusters.)"""
    for gpus in (None, ["g0"]):
        with runner._dask_client(1, None, False, gpus) as client:
            assert client.scheduler_info()["services"]["dashboard"] != 8787


def test_needs_gpu():
    kinds = {(p.backend, needs_gpu(p)) for p in expand(parse_config(CONFIG, "g.toml"))}
    assert kinds == {("emulator", False), ("cuda", True)}


def test_points_lost_with_their_workers_point_at_memory():
    killed = lost_points_note("KilledWorker: Attempted to run task 'compute_group-1' on 4 ...", 11)
    assert killed.startswith("11 point(s) not computed (KilledWorker: ")
    assert "memory limit" in killed and "--memory-limit" in killed
    other = lost_points_note("ValueError: bad", 2)
    assert other == "2 point(s) not computed (ValueError: bad); a rerun retries them"
