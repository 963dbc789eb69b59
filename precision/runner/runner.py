"""Run an experiment: expand the sweep, compute missing points, combine, plot.

Points are computed in-process (``executor="local"``, ``jobs=1``), in a local process pool
(``jobs > 1``) or on a Dask cluster (``executor="dask"``). In every case the parent process
writes each finished point's file atomically as soon as it arrives, so an interrupted run
loses only points in flight, and a rerun skips every point already stored (``force``
recomputes them).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from precision.runner.config import ExperimentConfig
from precision.runner.execute import STATUS_OK, GemmFn, InputCache, compute_group, compute_point
from precision.runner.plotting import plot_results
from precision.runner.store import ResultsDir
from precision.runner.sweep import Point, expand, group_by_inputs

EXECUTORS = ("local", "dask")
GPU_BACKENDS = ("cuda", "cublas")


class RunnerError(RuntimeError):
    """A run cannot start (for example, the dask executor without dask installed)."""


@dataclass
class RunSummary:
    """What a run did. ``problems`` maps "status: reason" to its number of points."""

    results_dir: Path
    total: int
    skipped: int
    computed: int
    status_counts: dict[str, int] = field(default_factory=dict)
    problems: dict[str, int] = field(default_factory=dict)
    figures: list[Path] = field(default_factory=list)

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
            "install it with: pip install 'precision[dask]'"
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


@contextlib.contextmanager
def _process_pool(jobs: int) -> Iterator[tuple[Callable, Callable]]:
    pool = concurrent.futures.ProcessPoolExecutor(max_workers=jobs)
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
) -> RunSummary:
    """Compute every point of ``config`` not yet stored under ``results_root/<name>/``.

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

    from precision.provenance import collect

    points = expand(config)
    rd = ResultsDir(results_root, config.name)
    rd.path.mkdir(parents=True, exist_ok=True)
    rd.save_config(config)
    rd.save_provenance(
        {
            **collect(seed=config.seed),
            "config_file": str(config.path),
            "argv": sys.argv,
            "executor": executor,
            "jobs": jobs,
            "scheduler": scheduler,
            "points": len(points),
        }
    )

    pending = points if force else [p for p in points if not rd.is_done(p)]
    summary = RunSummary(rd.path, total=len(points), skipped=len(points) - len(pending), computed=0)

    from tqdm.auto import tqdm

    with tqdm(
        total=len(pending), desc=config.name, unit="point", disable=not progress, dynamic_ncols=True
    ) as bar:

        def on_done(point: Point, rows: pd.DataFrame) -> None:
            rd.write_point(point, rows)
            summary.computed += 1
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
