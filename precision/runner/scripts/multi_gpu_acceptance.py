"""Issue 18 acceptance on a machine with >= 2 GPUs (e.g. nvidia-h200-x2), in steps:

    python precision/runner/scripts/multi_gpu_acceptance.py STEP CONFIG OUT [WORK]

STEP is one of
  one      CUDA_VISIBLE_DEVICES=<first GPU> precision run CONFIG (local executor): the baseline
  multi    precision run CONFIG --executor dask --gpus all
  kill     the same dask run, one GPU worker process SIGKILLed once 2 points are written;
           then a rerun. Checks: the files written before the kill are unchanged afterwards
           (not lost, not recomputed) and the rerun completes the sweep.
  compare  the error columns of multi (and kill) equal one's exactly; every GPU row of multi
           names a GPU, >= 2 distinct; prints the wall times side by side
  all      one, multi, kill, compare (needs time: one device call is at most 600 s)

All runs use the same BLAS thread count (PRECISION_BLAS_THREADS, default cores / GPUs), so
the fp64 references, and the error columns, are bit-equal between them.
Results directories live under WORK (default /tmp/h9-acceptance, kept between steps while
the machine stays warm); every step writes its log and JSON summary to OUT. Exit status 0
when the step's checks pass.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from precision.console import run_main

ERROR_COLUMNS = ["err_fro", "err_max", "err_median"]
#: The "fp64" reference's last bits depend on the BLAS thread count: every run of this script
#: uses the same count (PRECISION_BLAS_THREADS, default cores / GPUs), in the run's process
#: (local executor) and in each GPU worker.
BLAS_ENV: dict[str, str] = {}


def _set_blas_threads(n_gpus: int) -> None:
    threads = os.environ.get("PRECISION_BLAS_THREADS") or str(
        max(1, (os.cpu_count() or 1) // max(1, n_gpus))
    )
    for var in ("PRECISION_BLAS_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        BLAS_ENV[var] = threads
    BLAS_ENV["MKL_NUM_THREADS"] = threads


def _precision(args: list[str], env: dict | None = None, log: Path | None = None):
    cmd = [sys.executable, "-m", "precision.runner.cli", *args, "--quiet", "--no-plots"]
    return subprocess.Popen(
        cmd,
        env={**os.environ, **BLAS_ENV, **(env or {})},
        stdout=open(log, "w") if log else None,  # noqa: SIM115
        stderr=subprocess.STDOUT,
    )


def _timed_run(name: str, args: list[str], out: Path, env: dict | None = None) -> dict:
    start = time.perf_counter()
    proc = _precision(args, env, out / f"{name}.log")
    rc = proc.wait()
    result = {"step": name, "argv": args, "rc": rc, "wall_s": time.perf_counter() - start}
    (out / f"{name}.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result), flush=True)
    return result


def _gpus() -> list[str]:
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [g.strip() for g in out.splitlines() if g.strip()]


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _worker_pid(run_pid: int) -> tuple[int, str] | tuple[None, None]:
    """A Dask worker process under ``run_pid`` (a multiprocessing spawn child; the nannies
    live in the run's process) and the GPU device file it holds open, preferring one that
    holds a ``/dev/nvidiaN`` (a GPU worker that has run a point). (None, None) if none."""
    import re

    workers = []
    for pid in _descendants(run_pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" not in cmdline or b"resource_tracker" in cmdline:
            continue
        devices = set()
        for fd in Path(f"/proc/{pid}/fd").glob("*"):
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if re.fullmatch(r"/dev/nvidia\d+", target):
                devices.add(target)
        workers.append((pid, ",".join(sorted(devices))))
    gpu = [w for w in workers if w[1]]
    if gpu or workers:
        return (gpu or workers)[0]
    return None, None


def _digests(points_dir: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in points_dir.glob("*.parquet")
    }


def step_kill(config: str, out: Path, work: Path) -> bool:
    name = _config_name(config)
    root = work / "kill"
    shutil.rmtree(root, ignore_errors=True)
    points_dir = root / name / "points"
    args = ["run", config, "--executor", "dask", "--gpus", "all", "--results-dir", str(root)]
    start = time.perf_counter()
    proc = _precision(args, None, out / "kill.log")
    before: dict[str, str] = {}
    killed = victim_gpu = None
    while proc.poll() is None:
        if points_dir.is_dir() and len(list(points_dir.glob("*.parquet"))) >= 2:
            pid, device = _worker_pid(proc.pid)
            if pid is not None:
                victim_gpu = device
                before = _digests(points_dir)
                os.kill(pid, signal.SIGKILL)
                killed = pid
                break
        time.sleep(0.05)
    rc = proc.wait()
    wall = time.perf_counter() - start
    after = _digests(points_dir)
    kept = {f: d for f, d in before.items() if after.get(f) == d}
    rerun = _timed_run("kill_rerun", args, out)
    rerun_log = (out / "kill_rerun.log").read_text()
    result = {
        "killed_worker_pid": killed,
        "killed_worker_gpu_device": victim_gpu,
        "run_rc": rc,
        "run_wall_s": wall,
        "points_written_before_kill": len(before),
        "unchanged_after_run": len(kept),
        "points_after_run": len(after),
        "rerun_rc": rerun["rc"],
        "rerun_says": [line for line in rerun_log.splitlines() if "points:" in line],
    }
    ok = killed is not None and len(kept) == len(before) and rerun["rc"] == 0
    result["ok"] = ok
    (out / "kill.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2), flush=True)
    return ok


def _config_name(config: str) -> str:
    import tomllib

    with open(config, "rb") as f:
        return tomllib.load(f)["name"]


def step_compare(config: str, out: Path, work: Path) -> bool:
    import pandas as pd

    name = _config_name(config)

    def table(run: str) -> pd.DataFrame:
        t = pd.read_parquet(work / run / name / "results.parquet")
        return t.sort_values(["point_id", "repeat"]).reset_index(drop=True)

    one, multi = table("one"), table("multi")
    result: dict = {"points_one": int(one["point_id"].nunique())}
    result["points_multi"] = int(multi["point_id"].nunique())
    same = list(one["point_id"]) == list(multi["point_id"])
    result["errors_equal"] = bool(
        same and one[ERROR_COLUMNS].equals(multi[ERROR_COLUMNS]) and (multi["status"] == "ok").all()
    )
    gpu_rows = multi[multi["backend"].isin(["cuda", "cublas"])]
    result["gpu_rows_without_uuid"] = int(gpu_rows["gpu_uuid"].isna().sum())
    result["rows_per_gpu"] = {
        str(k): int(v) for k, v in gpu_rows["gpu_uuid"].value_counts().items()
    }
    if (work / "kill" / name / "results.parquet").exists():
        kill = table("kill")
        result["kill_errors_equal"] = bool(
            list(kill["point_id"]) == list(one["point_id"])
            and one[ERROR_COLUMNS].equals(kill[ERROR_COLUMNS])
        )
    walls_path = work / "walls.json"
    walls = json.loads(walls_path.read_text()) if walls_path.exists() else {}
    result["wall_s"] = walls
    ok = (
        result["errors_equal"]
        and result["gpu_rows_without_uuid"] == 0
        and len(result["rows_per_gpu"]) >= 2
    )
    result["ok"] = ok
    (out / "compare.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2), flush=True)
    return ok


def main() -> int:
    if len(sys.argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        return 2
    step, config, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    work = Path(sys.argv[4]) if len(sys.argv) == 5 else Path("/tmp/h9-acceptance")
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    (out / "gpus.txt").write_text("\n".join(_gpus()) + "\n")
    _set_blas_threads(len(_gpus()))
    (out / "blas_env.json").write_text(json.dumps(BLAS_ENV))
    walls_path = work / "walls.json"
    walls = json.loads(walls_path.read_text()) if walls_path.exists() else {}
    ok = True
    steps = ["one", "multi", "kill", "compare"] if step == "all" else [step]
    for s in steps:
        if s in ("one", "multi"):
            root = work / s
            shutil.rmtree(root, ignore_errors=True)
            args = ["run", config, "--results-dir", str(root)]
            env = None
            if s == "one":
                env = {"CUDA_VISIBLE_DEVICES": _gpus()[0]}
            else:
                args += ["--executor", "dask", "--gpus", "all"]
            result = _timed_run(s, args, out, env)
            walls[s] = result["wall_s"]
            walls_path.write_text(json.dumps(walls))
            ok &= result["rc"] == 0
        elif s == "kill":
            ok &= step_kill(config, out, work)
        elif s == "compare":
            ok &= step_compare(config, out, work)
        else:
            print(f"unknown step {s!r}", file=sys.stderr)
            return 2
    return 0 if ok else 1


if __name__ == "__main__":
    run_main(main)
