"""Run an experiment: expand the sweep, compute missing points, combine, plot.

Points are computed in-process (``executor="local"``, ``jobs=1``), in a local process pool
(``jobs > 1``) or on a Dask cluster (``executor="dask"``). In every case the parent process
writes each finished point's file atomically as soon as it arrives, so an interrupted run
loses only points in flight, and a rerun skips every point already stored (``force``
recomputes them).

A run holds the results directory's lock (:meth:`ResultsDir.lock`) from before its first
write to its last, so two runs never mix in one directory. Point files that fail their
identity check are moved aside and recomputed. A rerun after the config changed, or with
stored points computed by another package version or git commit, reuses those points (a
point's id fixes all its parameters) but says so in :attr:`RunSummary.warnings` and records
it in ``provenance.json`` (``previous_config``, ``reused_points_code``). Process-pool workers
exit when the run's process dies, even by SIGKILL.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from precision.runner.config import ExperimentConfig
from precision.runner.execute import (
    DONE_STATUSES,
    STATUS_ERROR,
    STATUS_OK,
    STATUS_UNAVAILABLE,
    GemmFn,
    InputCache,
    compute_group,
    compute_point,
)
from precision.runner.plotting import plot_results
from precision.runner.store import ResultsDir, StoreError
from precision.runner.sweep import Point, expand, group_by_inputs

EXECUTORS = ("local", "dask")
GPU_BACKENDS = ("cuda", "cublas")


class RunnerError(RuntimeError):
    """A run cannot start (for example, the dask executor without dask installed)."""


__all__ = ["RunSummary", "RunnerError", "StoreError", "combine_results", "run_experiment"]


@dataclass
class RunSummary:
    """What a run did. ``problems`` maps "status: reason" to its number of points.

    ``computed`` counts the points this run computed (status "ok" or "nan"); ``unavailable``
    and ``errors`` the points it attempted whose backend cannot run here or that raised;
    ``skipped`` the points already stored. ``warnings`` are for the user (config or code
    changed since the stored points, files moved aside, leftovers removed).
    """

    results_dir: Path
    total: int
    skipped: int
    computed: int
    unavailable: int = 0
    errors: int = 0
    status_counts: dict[str, int] = field(default_factory=dict)
    problems: dict[str, int] = field(default_factory=dict)
    figures: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """True if some point raised an error (unavailable backends do not count)."""
        return self.status_counts.get("error", 0) > 0


def _dist_labels(config: ExperimentConfig, points: list[Point]) -> dict[str, str]:
    return {p.id: p.dist_label(tuple(config.dist_params.get(p.distribution, {}))) for p in points}


def combine_results(config: ExperimentConfig, rd: ResultsDir) -> pd.DataFrame:
    """Combine the stored points of ``config`` (missing ones skipped) into ``results.parquet``.

    Works on a directory left by an interrupted run too; returns the (possibly empty) table.
    """
    points = expand(config)
    table = rd.combine(points, _dist_labels(config, points))
    if not table.empty:
        rd.write_table(table, config.name)
    return table


def _import_dask():
    try:
        import dask.distributed as dd
    except ImportError as exc:
        raise RunnerError(
            f"--executor dask needs dask.distributed, which is not importable here ({exc}); "
            'install it with: pip install -e ".[dask]" (from a checkout) or pip install '
            "'precision[dask]'"
        ) from None
    return dd


@contextlib.contextmanager
def _dask_pool(
    points: list[Point], jobs: int | None, scheduler: str | None, processes: bool
) -> Iterator[tuple[Callable, Callable]]:
    dd = _import_dask()
    if scheduler:
        client = dd.Client(scheduler)
        cluster = None
    else:
        cluster = None
        if any(p.backend in GPU_BACKENDS for p in points):
            with contextlib.suppress(ImportError):
                from dask_cuda import LocalCUDACluster  # one worker per visible GPU

                cluster = LocalCUDACluster(dashboard_address=None)
        if cluster is None:
            cluster = dd.LocalCluster(
                n_workers=jobs, threads_per_worker=1, processes=processes, dashboard_address=None
            )
        client = dd.Client(cluster)
    try:
        yield (lambda fn, *args: client.submit(fn, *args, pure=False)), dd.as_completed
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _exit_with_parent(parent_pid: int, poll_s: float = 0.5) -> None:
    """Worker initializer: end this process when the run's process ``parent_pid`` dies.

    On Linux the kernel sends SIGKILL at the parent's death (``prctl(PR_SET_PDEATHSIG)``;
    it fires when the thread that forked us exits, hence also the watchdog). A daemon
    thread polls ``parent_pid`` every ``poll_s`` seconds as the portable fallback (and for
    start methods where our direct parent is a fork server, not the run).
    """
    import signal

    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if not _alive(parent_pid):  # died before prctl took effect
        os._exit(1)

    def watch() -> None:
        while _alive(parent_pid):
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def _alive(pid: int) -> bool:
    if os.getppid() == 1 and pid != 1:  # re-parented to init: our parent is gone
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else (pid reused): treat as gone
        return False
    return True


@contextlib.contextmanager
def _process_pool(jobs: int) -> Iterator[tuple[Callable, Callable]]:
    pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=jobs, initializer=_exit_with_parent, initargs=(os.getpid(),)
    )
    try:
        yield pool.submit, concurrent.futures.as_completed
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _run_pool(pool, groups: list[list[Point]], on_done: Callable[[Point, pd.DataFrame], None]):
    submit, as_completed = pool
    futures = {submit(compute_group, group): group for group in groups}
    for future in as_completed(list(futures)):
        for point, rows in zip(futures[future], future.result(), strict=True):
            on_done(point, rows)


def run_experiment(
    config: ExperimentConfig,
    results_root: Path | str = "results",
    *,
    force: bool = False,
    executor: str = "local",
    jobs: int | None = None,
    scheduler: str | None = None,
    dask_processes: bool = True,
    progress: bool = True,
    plots: bool = True,
    gemm: GemmFn | None = None,
    lock_wait: float = 0.0,
) -> RunSummary:
    """Compute every point of ``config`` not yet stored under ``results_root/<name>/``.

    Raises :class:`StoreError` (message for the user) when the directory is locked by
    another run for longer than ``lock_wait`` seconds, or cannot be written.
    ``gemm`` replaces :func:`precision.gemm.gemm` (in-process execution only; for tests).
    Returns a :class:`RunSummary`; the combined table and figures are written at the end.
    """
    if executor not in EXECUTORS:
        raise RunnerError(f"unknown executor {executor!r} (valid: {', '.join(EXECUTORS)})")
    if jobs is not None and jobs < 1:
        raise RunnerError(f"--jobs must be >= 1, got {jobs}")
    if executor == "dask":
        _import_dask()
    if gemm is not None and (executor == "dask" or (jobs or 1) > 1):
        raise RunnerError("a substitute gemm works only with the in-process local executor")

    points = expand(config)
    rd = ResultsDir(results_root, config.name)
    with rd.lock(wait=lock_wait) as notes:
        summary = _run_locked(
            config,
            rd,
            points,
            notes,
            force,
            executor,
            jobs,
            scheduler,
            dask_processes,
            progress,
            gemm,
        )
        table = combine_results(config, rd)
    if not table.empty:
        counts = table.drop_duplicates("point_id")["status"].value_counts()
        summary.status_counts = {str(k): int(v) for k, v in counts.items()}
        bad = table[table["status"] != STATUS_OK].drop_duplicates("point_id")
        reasons = (bad["status"] + ": " + bad["error"].astype(str)).value_counts()
        summary.problems = {str(k): int(v) for k, v in reasons.items()}
        if plots:
            summary.figures = plot_results(
                table, rd.figures_dir, title=config.name, spec=config.plot
            )
    return summary


def _code_of(rows: pd.DataFrame) -> str:
    version = rows["version"].iloc[0] if "version" in rows else None
    commit = rows["git_commit"].iloc[0] if "git_commit" in rows else None
    return f"version {version} commit {commit}"


def _run_locked(
    config, rd, points, notes, force, executor, jobs, scheduler, dask_processes, progress, gemm
) -> RunSummary:
    """The part of :func:`run_experiment` that writes (called with the lock held)."""
    from precision.provenance import collect

    warnings = list(notes)
    warnings += rd.reject_foreign_points()
    previous_config = rd.save_config(config)
    if previous_config:
        warnings.append(
            f"the config differs from the one stored in {rd.path}; the earlier one is kept "
            f"as {previous_config}. Points whose parameters did not change are reused; the "
            "table holds the points of this config only"
        )
    info = collect(seed=config.seed)
    current = f"version {info['version']} commit {info['git_commit']}"
    pending: list[Point] = []
    reused_code: dict[str, int] = {}
    for p in points:
        rows = None if force else rd.read_point(p)
        if (
            rows is not None
            and len(rows) == p.repeats
            and bool(rows["status"].isin(DONE_STATUSES).all())
        ):
            code = _code_of(rows)
            reused_code[code] = reused_code.get(code, 0) + 1
        else:
            pending.append(p)
    other = {code: n for code, n in reused_code.items() if code != current}
    if other:
        listed = "; ".join(f"{n} by {code}" for code, n in other.items())
        warnings.append(
            f"stored points were computed by other code ({listed}); this run is {current}. "
            "They are reused, so the table mixes code versions (see its version and "
            "git_commit columns); --force recomputes every point"
        )
    warnings += rd.save_provenance(
        {
            **info,
            "config_file": str(config.path),
            "argv": sys.argv,
            "executor": executor,
            "jobs": jobs,
            "scheduler": scheduler,
            "points": len(points),
            "points_pending": len(pending),
            "previous_config": previous_config,
            "reused_points_code": reused_code,
        }
    )
    summary = RunSummary(rd.path, total=len(points), skipped=len(points) - len(pending), computed=0)
    summary.warnings = warnings

    from tqdm.auto import tqdm

    with tqdm(
        total=len(pending), desc=config.name, unit="point", disable=not progress, dynamic_ncols=True
    ) as bar:
        for note in warnings:
            bar.write(f"warning: {note}", file=sys.stderr)

        def on_done(point: Point, rows: pd.DataFrame) -> None:
            rd.write_point(point, rows)
            statuses = set(rows["status"])
            if statuses <= set(DONE_STATUSES):
                summary.computed += 1
            elif STATUS_ERROR in statuses:
                summary.errors += 1
            elif STATUS_UNAVAILABLE in statuses:
                summary.unavailable += 1
            bar.set_postfix_str(point.slug, refresh=False)
            bar.update(1)

        if executor == "local" and (jobs or 1) == 1:
            cache = InputCache()
            for point in pending:
                on_done(point, compute_point(point, cache, gemm))
        elif executor == "local":
            with _process_pool(jobs) as pool:
                _run_pool(pool, group_by_inputs(pending), on_done)
        else:
            with _dask_pool(pending, jobs, scheduler, dask_processes) as pool:
                _run_pool(pool, group_by_inputs(pending), on_done)
    return summary
