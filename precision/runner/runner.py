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
it in ``provenance.json`` (``previous_config``, ``previous_table``, ``previous_figures``,
``reused_points_code``; a local rerun on another machine warns too:
``reused_points_hardware``). Each run's record
there also says how many points it computed at once (``concurrent_jobs``) and what set the
BLAS threads (``blas_threads_env``, ``cpu_count``): the TFLOP/s figure and table note timings
that shared the machine (:func:`~precision.runner.plotting.timing_notes`). Process-pool
workers exit when the run's process dies, even by SIGKILL; a worker that dies breaks its pool,
and the groups it took with it are run again one at a time (:func:`_run_pool`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import os
import pickle
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from precision.runner.cluster import (
    GPU_BACKENDS,
    GPU_RESOURCE,
    SCHEDULER_OPTIONS,
    ClusterError,
    concurrent_points,
    gpu_workers,
    local_cluster,
    needs_gpu,
    parse_gpus,
    worker_nanny,
    worker_preload,
)
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
from precision.runner.plot_labels import _and
from precision.runner.plot_notes import (
    BLAS_THREAD_VARS,
    gpu_timed,
    machine_label,
    read_runs,
    timing_machines,
)
from precision.runner.plotting import plot_results
from precision.runner.store import WAIT_REPORT_S, ResultsDir, StoreError, finished, named_table
from precision.runner.summary import point_statuses
from precision.runner.sweep import Point, expand, group_by_inputs
from precision.threads import busy_worker, share_cores, thread_count

EXECUTORS = ("local", "dask")


class RunnerError(RuntimeError):
    """A run cannot start (for example, the dask executor without dask installed)."""


__all__ = [
    "RunInterrupted",
    "RunProgress",
    "RunSummary",
    "RunnerError",
    "StoreError",
    "combine_results",
    "run_experiment",
]


@dataclass
class RunProgress:
    """How far a run got: what :class:`RunInterrupted` reports.

    ``phase``: "start" (before the lock), "wait" (waiting for another run's lock), "setup"
    (holding it, pending points not yet known), "compute", "finish" (every pending point
    attempted; writing the table), then "plots" (drawing the figures). ``stored``: the
    points whose finished result (status ok or nan) is stored, which a rerun does not
    recompute, from the phase "compute" on; with ``force``, those that this run recomputed
    (the others keep their earlier files, which the run did not read). ``writing``: the
    point whose file is being written (counted once its file is there).
    """

    results_dir: Path
    total: int
    force: bool = False
    plots: bool = True
    phase: str = "start"
    stored: int = 0
    writing: Point | None = None


class RunInterrupted(KeyboardInterrupt):
    """A Ctrl-C (``KeyboardInterrupt``) during :func:`run_experiment`, with the run's
    :class:`RunProgress`; ``except KeyboardInterrupt`` still catches it."""

    def __init__(self, progress: RunProgress):
        super().__init__(f"interrupted in phase {progress.phase}")
        self.progress = progress


@dataclass
class RunSummary:
    """What a run did. ``problems`` maps "status: reason" to its number of points.

    ``computed`` counts the points this run computed (status "ok" or "nan"); ``unavailable``
    and ``errors`` the points it attempted whose backend cannot run here or that raised;
    ``skipped`` the points already stored; ``kept`` the points ``--force`` could not
    recompute here (unavailable, or failed: ``kept_after_error`` says why) whose earlier
    finished result was kept; ``not_run`` the pending points a Dask run or a process pool left
    (no GPU worker, or a worker lost too often: see ``warnings``). ``warnings`` are for the
    user (config or code changed since the stored points, files moved aside, leftovers
    removed, points not run).
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
    not_run: int = 0
    kept: int = 0
    kept_after_error: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """True if some point raised an error (unavailable backends do not count), including a
        ``--force`` recomputation that failed where the earlier result was kept."""
        return self.status_counts.get("error", 0) > 0 or bool(self.kept_after_error)


def _dist_labels(config: ExperimentConfig, points: list[Point]) -> dict[str, str]:
    return {p.id: p.dist_label(tuple(config.dist_params.get(p.distribution, {}))) for p in points}


def table_of(
    config: ExperimentConfig, rd: ResultsDir, points: list[Point] | None = None
) -> pd.DataFrame:
    """The stored points of ``config`` (missing ones skipped) as ``results.parquet`` holds
    them (the ``name`` column first), without writing anything; possibly empty. ``points``:
    ``expand(config)`` where the caller already has it."""
    points = expand(config) if points is None else points
    table = rd.combine(points, _dist_labels(config, points))
    return table if table.empty else named_table(table, config.name)


def combine_results(
    config: ExperimentConfig, rd: ResultsDir, points: list[Point] | None = None
) -> pd.DataFrame:
    """Combine the stored points of ``config`` (missing ones skipped) into ``results.parquet``.

    Works on a directory left by an interrupted run too; returns the (possibly empty) table.
    ``points``: as in :func:`table_of`.
    """
    table = table_of(config, rd, points)
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
def _dask_client(
    jobs: int | None, scheduler: str | None, processes: bool, gpus: list[str] | None
) -> Iterator:
    """A Dask client: on ``scheduler``, or on a local cluster made for this run.

    With ``gpus`` the local cluster has one single-threaded worker per GPU, pinned to it and
    advertising GPU=1, plus ``jobs`` (default 0) CPU workers (:mod:`precision.runner.cluster`);
    without, ``jobs`` single-threaded CPU workers (Dask's default count when None). The local
    cluster's worker processes ignore SIGINT (:func:`~precision.runner.cluster.dask_setup`):
    a Ctrl-C stops this process, which closes them, instead of printing each one's traceback;
    they start with glibc's own allocator settings, not Dask's
    (:func:`~precision.runner.cluster.worker_nanny`).
    A scheduler that does not answer within :data:`SCHEDULER_TIMEOUT_S` raises
    :class:`RunnerError` (Dask itself would wait 30 s, then raise with a traceback).

    This process's environment is put back as it was when the client closes
    (:func:`_environment_kept`): Dask's nannies set the worker variables (``OMP_NUM_THREADS=1``
    and the other BLAS counts, ``PYTHONHASHSEED``, ...) in the process that starts them.
    """
    with _environment_kept(), _dask_client_in(jobs, scheduler, processes, gpus) as client:
        yield client


@contextlib.contextmanager
def _environment_kept() -> Iterator[None]:
    """Put ``os.environ`` back as it was on entry when the block ends: variables added are
    removed, changed ones restored. A local Dask cluster's nannies write their workers'
    variables into this process's environment before starting each worker (Dask's
    ``distributed.nanny.pre-spawn-environ``); left there, they made the rest of a Python
    session run the emulator on one thread (``OMP_NUM_THREADS=1``) and record BLAS settings
    in a later local run's provenance that its BLAS did not have."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        for key in [k for k in os.environ if k not in saved]:
            del os.environ[key]
        for key, value in saved.items():
            if os.environ.get(key) != value:
                os.environ[key] = value


@contextlib.contextmanager
def _dask_client_in(
    jobs: int | None, scheduler: str | None, processes: bool, gpus: list[str] | None
) -> Iterator:
    """:func:`_dask_client`'s body (the caller keeps the environment)."""
    dd = _import_dask()
    cluster = None
    if scheduler:
        client = _connect(dd, scheduler)
    else:
        if gpus:
            cluster = local_cluster(gpus, jobs or 0, processes)
        else:
            cluster = dd.LocalCluster(
                n_workers=jobs,
                threads_per_worker=1,
                processes=processes,
                scheduler_kwargs=dict(SCHEDULER_OPTIONS),  # overrides LocalCluster's :8787 default
                **(
                    {"preload": worker_preload(), "worker_class": worker_nanny()}
                    if processes
                    else {}
                ),
            )
        client = dd.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


#: Seconds to wait for the scheduler of ``--scheduler`` to answer.
SCHEDULER_TIMEOUT_S = 10.0


def _no_scheduler(scheduler: str, exc: BaseException) -> str:
    return (
        f"cannot reach the Dask scheduler at {scheduler} ({type(exc).__name__}: {exc}); "
        "check the address (e.g. tcp://node0:8786) and that `dask scheduler` runs there"
    )


def _connect(dd, scheduler: str):
    """A client of ``scheduler``, or :class:`RunnerError` when it does not answer as a Dask
    scheduler within :data:`SCHEDULER_TIMEOUT_S` (Dask's own timeout does not cover a server
    that accepts the connection and says nothing: the run hung as long as it held it)."""
    answer: dict = {}

    def connect() -> None:
        try:
            answer["client"] = dd.Client(scheduler, timeout=SCHEDULER_TIMEOUT_S)
        except Exception as exc:  # OSError, TimeoutError, garbage from a non-Dask server
            answer["error"] = exc

    thread = threading.Thread(target=connect, name="dask-connect", daemon=True)
    thread.start()
    thread.join(SCHEDULER_TIMEOUT_S + 2)
    if "client" in answer:
        return answer["client"]
    error = answer.get("error") or TimeoutError(f"no answer in {SCHEDULER_TIMEOUT_S:.0f} s")
    raise RunnerError(_no_scheduler(scheduler, error))


def _check_scheduler(scheduler: str) -> None:
    """Raise :class:`RunnerError` at once when ``scheduler`` (a Dask address) names a TCP
    host that does not resolve or refuses the connection (a typo, a stopped scheduler): Dask
    would retry for 30 s. Other transports, and a scheduler that accepts but does not answer,
    are left to :func:`_dask_client`."""
    import socket

    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    try:
        transport, location = parse_address(scheduler)
        get_backend(transport)  # an unknown scheme: ValueError
        if transport not in ("tcp", "tls"):
            return
        host, port = parse_host_port(location, 8786)
        socket.create_connection((host, port), timeout=SCHEDULER_TIMEOUT_S).close()
    except (OSError, ValueError, OverflowError) as exc:
        raise RunnerError(_no_scheduler(scheduler, exc)) from None


#: Dask ``retries=`` of each task (a task that raises; a task whose worker dies is
#: rescheduled by the scheduler, up to ``distributed.scheduler.allowed-failures`` times).
DASK_RETRIES = 1
#: Seconds to wait for a first worker on ``--scheduler``.
WORKER_WAIT_S = 60.0


def _run_dask(
    client, groups: list[list[Point]], on_done: Callable[[Point, pd.DataFrame], None]
) -> tuple[int, list[str]]:
    """Compute ``groups`` on ``client``'s workers; returns the number of points left not
    computed and notes saying why.

    Every connected worker must run this run's code (:func:`_check_workers`, else
    :class:`RunnerError`); rows that a worker joining later computed with other code are not
    written. Points that need a GPU go in groups of their own,
    submitted with resources GPU=1 (only GPU workers take them, one at a time each). With no
    GPU worker connected they are not submitted (a rerun with GPU workers computes them). A
    group whose task fails, or whose worker died more often than the scheduler allows, is
    left for the next run, and so is every group left when no worker has been connected for
    :data:`WORKER_WAIT_S`; every other group's rows are written as they arrive.
    """
    import dask.distributed as dd

    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT_S)
    except (TimeoutError, dd.TimeoutError) as exc:
        raise RunnerError(
            f"no Dask worker connected to {client.scheduler.address} within {WORKER_WAIT_S:.0f} s"
            f" ({type(exc).__name__})"
        ) from None
    ours = _check_workers(client)
    notes: list[str] = []
    not_run = 0
    split: list[tuple[list[Point], bool]] = []
    for group in groups:
        gpu = [p for p in group if needs_gpu(p)]
        cpu = [p for p in group if not needs_gpu(p)]
        split += [(part, flag) for part, flag in ((gpu, True), (cpu, False)) if part]
    if any(flag for _, flag in split) and not gpu_workers(client):
        refused = sum(len(part) for part, flag in split if flag)
        notes.append(
            f"{refused} point(s) need a GPU (backend {' or '.join(GPU_BACKENDS)}) but no worker "
            f"of the cluster advertises the resource {GPU_RESOURCE}=1; they were not run. Use "
            "--gpus all|N|LIST, or start workers with `dask worker ADDR --nthreads 1 "
            f"--resources {GPU_RESOURCE}=1` (one per GPU, CUDA_VISIBLE_DEVICES set), and rerun"
        )
        split = [(part, flag) for part, flag in split if not flag]
        not_run += refused
    futures = {
        client.submit(
            compute_group,
            part,
            pure=False,
            retries=DASK_RETRIES,
            resources={GPU_RESOURCE: 1} if flag else None,
        ): part
        for part, flag in split
    }
    lost: dict[str, int] = {}
    foreign: dict[str, int] = {}
    done = dd.as_completed(list(futures), loop=client.loop)
    alone_since: float | None = None  # since when no worker is connected
    checked = time.monotonic()
    while not done.is_empty():
        batch = done.next_batch(block=False)
        if not batch:
            time.sleep(0.05)
            if time.monotonic() - checked >= 1.0:  # (one scheduler round trip a second)
                checked = time.monotonic()
                alone_since = None if client.nthreads() else (alone_since or checked)
                if alone_since is not None and checked - alone_since >= WORKER_WAIT_S:
                    left = sum(len(part) for part in futures.values())
                    client.cancel(list(futures))
                    not_run += left
                    notes.append(
                        f"{left} point(s) not computed: no Dask worker was connected to "
                        f"{client.scheduler.address} for {WORKER_WAIT_S:.0f} s (their "
                        "workers died or left; the workers' log lines say why); a rerun "
                        "retries them"
                    )
                    break
            continue
        for future in batch:
            # Drop every reference to a finished task: a result still wanted by the client is
            # recomputed when the worker holding it dies, and these rows are written already.
            part = futures.pop(future)
            if future.status != "finished":
                failure = future.exception()
                reason = f"{type(failure).__name__}: {failure}"
                lost[reason] = lost.get(reason, 0) + len(part)
                not_run += len(part)
                continue
            results = future.result()
            future.release()
            for point, rows in zip(part, results, strict=True):
                theirs = _worker_code(rows.iloc[0].to_dict())
                if theirs != ours:
                    foreign[theirs] = foreign.get(theirs, 0) + 1
                    not_run += 1
                    continue
                on_done(point, rows)
    notes += [lost_points_note(reason, n) for reason, n in lost.items()]
    if foreign:
        listed = "; ".join(f"{n} by {code}" for code, n in foreign.items())
        notes.append(
            f"{sum(foreign.values())} point(s) not written: a worker that joined during the "
            f"run computed them with other code ({listed}; this run is {ours}). Start every "
            "worker from this run's checkout or version; a rerun computes them"
        )
    return not_run, notes


#: What a worker answers to :func:`_check_workers`: its code's provenance fields (the same
#: as its rows', :func:`precision.runner.execute._provenance`). An expression for the builtin
#: ``eval``, so that a worker which cannot import the project can still run it (and says so).
_WORKER_CODE_EXPR = "__import__('precision.runner.execute', fromlist=['_provenance'])._provenance()"


def _worker_code(info: dict) -> str:
    """The code of provenance fields ``info`` (a worker's, or a row's): "version V source D",
    or "version V commit C" without a source digest. Workers run this run's code when theirs
    is the same (the git commit may differ where the source does not: an installed package
    has none)."""
    version, digest = info.get("version"), info.get("source_digest")
    if digest is None or (isinstance(digest, float) and digest != digest):
        return f"version {version} commit {info.get('git_commit')}"
    return f"version {version} source {digest}"


def _check_workers(client) -> str:
    """This run's code (:func:`_worker_code`); raises :class:`RunnerError` naming every
    connected worker that cannot import ``precision`` or runs other code (another version,
    commit or edited source): their rows would be written as this run's."""
    from precision.runner.execute import _provenance

    ours = _worker_code(_provenance())
    answers = client.run(eval, _WORKER_CODE_EXPR, on_error="return")
    bad: dict[str, list[str]] = {}
    for address, info in sorted(answers.items()):
        if isinstance(info, BaseException):
            theirs = f"cannot import precision ({type(info).__name__}: {info})"
        elif not isinstance(info, dict):
            theirs = f"answered {info!r}"
        else:
            theirs = _worker_code(info)
            if theirs == ours:
                continue
        bad.setdefault(theirs, []).append(address)
    if bad:
        listed = "; ".join(f"{_and(addresses)}: {code}" for code, addresses in bad.items())
        raise RunnerError(
            f"{sum(map(len, bad.values()))} Dask worker(s) do not run this run's code ({ours}): "
            f"{listed}. Start every worker in an environment with this checkout or version "
            "installed (docs/runner.md, 'A cluster: --scheduler')"
        )
    return ours


def lost_points_note(reason: str, n: int) -> str:
    """The warning for ``n`` points whose Dask task failed with ``reason`` ("Type: message").
    A task whose workers all died (``KilledWorker``) most often ran out of memory: the note
    says so, since a rerun with the same memory would lose them again."""
    note = f"{n} point(s) not computed ({reason}); a rerun retries them"
    if reason.startswith("KilledWorker"):
        note += (
            ". Every worker that ran them died; the usual cause is memory: Dask's nanny "
            "restarts a worker above 95 % of its memory limit (with --gpus each worker may use "
            "an equal share of the machine's memory; on a cluster, start workers with "
            "--memory-limit: docs/runner.md, 'Memory'). The workers' log lines say which"
        )
    return note


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _start_worker(parent_pid: int, cores: int, busy: Any) -> None:
    """Worker initializer: end with the run's process (:func:`_exit_with_parent`), and share
    ``cores`` with the pool's other workers (:func:`precision.threads.share_cores`; ``busy``
    counts those computing)."""
    share_cores(cores, busy)
    _exit_with_parent(parent_pid)


def _compute_group_in_pool(group: list[Point], gemm: GemmFn | None) -> list[pd.DataFrame]:
    """:func:`compute_group` in a pool worker, counted among its busy workers."""
    with busy_worker():
        return compute_group(group, gemm)


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
    # "spawn": each worker is a fresh interpreter. A forked worker inherits the run's state,
    # and CUDA cannot be used in a child forked after the parent initialised it (a GPU point,
    # or anything that asked CuPy for the device, in the same process): every point then
    # failed with cudaErrorInitializationError.
    #
    # Each worker runs the emulator on its share of the cores, among the workers busy at the
    # time: N busy workers of a thread per core each fought over the cores
    # (precision.threads.share_cores).
    context = multiprocessing.get_context("spawn")
    pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=_start_worker,
        initargs=(os.getpid(), thread_count(), context.Value("i", 0)),
    )
    try:
        yield pool.submit, concurrent.futures.as_completed
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _check_importable(gemm: GemmFn) -> None:
    """Raise :class:`RunnerError` unless ``gemm`` can be sent to a worker process (which
    imports it by its module and name)."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    try:
        pickle.dumps(gemm)
        if getattr(gemm, "__module__", None) == "__main__" and main_file is None:
            raise TypeError("defined in an interactive session, which workers cannot import")
    except Exception as exc:
        raise RunnerError(
            f"--jobs > 1 sends the substitute gemm to worker processes, which import it by "
            f"name: it must be a module-level function, not {gemm!r} ({exc})"
        ) from None


def _run_pool(
    jobs: int,
    groups: list[list[Point]],
    on_done: Callable[[Point, pd.DataFrame], None],
    gemm: GemmFn | None = None,
) -> tuple[int, list[str]]:
    """Compute ``groups`` in a pool of ``jobs`` processes; returns the number of points left
    not computed and a note saying why. ``gemm``: as for :func:`run_experiment`.

    A worker that dies (killed, out of memory) breaks the whole pool: every group it had not
    yet returned fails, queued ones included. Those groups are then run one at a time, each
    in a fresh process of its own, so a group that kills its worker again loses only its own
    points; they are left for the next run, as on Dask. Rows already returned are written as
    they arrive.
    """
    lost: list[list[Point]] = []
    with _process_pool(jobs) as (submit, as_completed):
        futures = {submit(_compute_group_in_pool, group, gemm): group for group in groups}
        for future in as_completed(list(futures)):
            try:
                results = future.result()
            except concurrent.futures.process.BrokenProcessPool:
                lost.append(futures[future])
                continue
            for point, rows in zip(futures[future], results, strict=True):
                on_done(point, rows)
    failed: list[list[Point]] = []
    for group in lost:  # one at a time, each in a fresh process
        with _process_pool(1) as (submit, _):
            try:
                results = submit(_compute_group_in_pool, group, gemm).result()
            except concurrent.futures.process.BrokenProcessPool:
                failed.append(group)
                continue
        for point, rows in zip(group, results, strict=True):
            on_done(point, rows)
    if not failed:
        return 0, []
    n = sum(len(group) for group in failed)
    note = (
        f"{n} point(s) not computed: the worker process computing them died, in the pool and "
        "again alone in a fresh process (killed, or out of memory: the system log says "
        "which); a rerun retries them, and --jobs 1 runs them in this process"
    )
    if len(failed) == len(groups):  # not one worker lived to return: a start-up failure?
        note += (
            "; no worker returned any point, so look at their messages above (a script that "
            'calls run_experiment puts the call under `if __name__ == "__main__":`)'
        )
    return n, [note]


def run_experiment(
    config: ExperimentConfig,
    results_root: Path | str = "results",
    *,
    force: bool = False,
    executor: str = "local",
    jobs: int | None = None,
    scheduler: str | None = None,
    dask_processes: bool = True,
    gpus: str | list[str] | None = None,
    progress: bool = True,
    plots: bool = True,
    gemm: GemmFn | None = None,
    lock_wait: float = 0.0,
) -> RunSummary:
    """Compute every point of ``config`` not yet stored under ``results_root/<name>/``.

    Raises :class:`StoreError` (message for the user) when the directory is locked by
    another run for longer than ``lock_wait`` seconds, or cannot be written. While it waits
    for that run it says so on stderr, once, and (with ``progress``) every 30 s. A Ctrl-C
    raises :class:`RunInterrupted`, a ``KeyboardInterrupt`` that says how many points are
    stored (:class:`RunProgress`).
    ``gemm`` replaces :func:`precision.gemm.gemm` (a GEMM of your own, or a test double). With
    ``jobs > 1`` each worker process imports it by name, so it must be a module-level function.
    ``dask_processes``: the local Dask cluster of ``executor="dask"`` (no ``scheduler``)
    runs its workers as processes (the default) or, when False, as threads of this process.
    Returns a :class:`RunSummary`; the combined table and figures are written at the end.
    """
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        # a --jobs worker (a fresh process) is importing the user's script, which calls us at
        # its top level: without this, the worker would meet the run's own lock and die
        raise RunnerError(
            "run_experiment was called while a --jobs worker process was importing your "
            "script (workers are fresh processes that import __main__): put the call under "
            '`if __name__ == "__main__":`'
        )
    if not isinstance(config, ExperimentConfig):  # a path or a dict ended in AttributeError
        raise TypeError(
            f"run_experiment takes an ExperimentConfig (from load_config(path) or "
            f"parse_config(text)), got {type(config).__name__} {config!r:.60}"
        )
    if gemm is not None and not callable(gemm):  # else every point failed with its TypeError
        raise TypeError(f"gemm must be a callable like precision.gemm.gemm, got {gemm!r:.60}")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int)):
        raise TypeError(f"jobs must be an int >= 1 or None, got {jobs!r:.60}")
    if executor not in EXECUTORS:
        raise RunnerError(f"unknown executor {executor!r} (valid: {', '.join(EXECUTORS)})")
    if jobs is not None and jobs < 1:
        raise RunnerError(f"--jobs must be >= 1, got {jobs}")
    if executor == "dask":
        _import_dask()
    if gemm is not None and executor == "dask":
        raise RunnerError("a substitute gemm works only with the local executor")
    if gemm is not None and (jobs or 1) > 1:
        _check_importable(gemm)
    gpu_list = _resolve_gpus(gpus, executor, scheduler)

    points = expand(config)
    rd = ResultsDir(results_root, config.name)
    tally = RunProgress(rd.path, len(points), force=force, plots=plots)

    def waiting(line: str) -> None:  # (the lock's lines; --quiet keeps the first)
        tally.phase = "wait"
        print(line, file=sys.stderr, flush=True)

    try:
        return _run_experiment(
            config, rd, points, tally, waiting, force, executor, jobs, scheduler,
            dask_processes, gpu_list, progress, plots, gemm, lock_wait,
        )  # fmt: skip
    except KeyboardInterrupt as exc:
        writing = tally.writing
        if writing is not None and not force:  # its file may be complete already
            with contextlib.suppress(Exception):
                tally.stored += rd.is_done(writing)
        raise RunInterrupted(tally) from exc


def _run_experiment(
    config: ExperimentConfig,
    rd: ResultsDir,
    points: list[Point],
    tally: RunProgress,
    waiting: Callable[[str], None],
    force: bool,
    executor: str,
    jobs: int | None,
    scheduler: str | None,
    dask_processes: bool,
    gpu_list: list[str] | None,
    progress: bool,
    plots: bool,
    gemm: GemmFn | None,
    lock_wait: float,
) -> RunSummary:
    """:func:`run_experiment` once its arguments are checked; keeps ``tally`` up to date."""
    with contextlib.ExitStack() as stack:
        # A --scheduler is connected to here, before the lock is taken and anything written:
        # one that accepts the connection and never answers is refused with config.toml and
        # the stored table untouched (a changed config would otherwise have been kept aside).
        client = None
        if executor == "dask" and scheduler:
            client = stack.enter_context(_dask_client(jobs, scheduler, dask_processes, None))
        every = WAIT_REPORT_S if progress else None
        notes = stack.enter_context(rd.lock(wait=lock_wait, report=waiting, every=every))
        tally.phase = "setup"
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
            gpu_list,
            progress,
            gemm,
            client,
            tally,
        )
        tally.phase = "finish"
        table = combine_results(config, rd)
        if not table.empty:
            summary.status_counts = point_statuses(table)
            bad = table[table["status"] != STATUS_OK].drop_duplicates("point_id")
            reasons = (bad["status"] + ": " + bad["error"].astype(str)).value_counts()
            summary.problems = {str(k): int(v) for k, v in reasons.items()}
            if plots:  # (still under the lock: a queued run's figures never mix with these)
                tally.phase = "plots"
                summary.figures = plot_results(
                    table,
                    rd.figures_dir,
                    title=config.name,
                    spec=config.plot,
                    runs=read_runs(rd.path),
                )
    return summary


def _code_of(rows: pd.DataFrame | dict) -> str:
    """The code of stored rows (or provenance fields), as "version V commit C source D"; rows
    written before the source digest was recorded give "version V commit C"."""
    first = rows.iloc[0] if isinstance(rows, pd.DataFrame) else pd.Series(rows)
    version, commit = first.get("version"), first.get("git_commit")
    digest = first.get("source_digest")
    code = f"version {version} commit {commit}"
    return code if digest is None or pd.isna(digest) else f"{code} source {digest}"


def _same_code(stored: str, current: str) -> bool:
    """Stored rows without a source digest match on version and commit alone."""
    return stored == current or (" source " not in stored and current.startswith(stored + " "))


def _resolve_gpus(
    gpus: str | list[str] | None, executor: str, scheduler: str | None
) -> list[str] | None:
    """The GPUs of ``--gpus`` (:func:`~precision.runner.cluster.parse_gpus`), or None. Called
    before anything is written, it also refuses a ``--scheduler`` that does not resolve or
    refuses connections (:func:`_check_scheduler`)."""
    if gpus is not None and executor != "dask":
        raise RunnerError("--gpus needs --executor dask")
    if gpus is not None and scheduler:
        raise RunnerError(
            "--gpus starts a local cluster; with --scheduler the cluster's workers are started "
            "by you (dask worker --resources GPU=1 --nthreads 1, one per GPU)"
        )
    if executor == "dask" and scheduler:
        _check_scheduler(scheduler)
    if gpus is None:
        return None
    try:
        return parse_gpus(gpus) if isinstance(gpus, str) else parse_gpus(",".join(gpus))
    except ClusterError as exc:
        raise RunnerError(str(exc)) from None


def _run_locked(
    config,
    rd,
    points,
    notes,
    force,
    executor,
    jobs,
    scheduler,
    dask_processes,
    gpus,
    progress,
    gemm,
    client=None,
    tally: RunProgress | None = None,
) -> RunSummary:
    """The part of :func:`run_experiment` that writes (called with the lock held). ``client``:
    the Dask client of ``--scheduler``, connected before the lock; None otherwise (a local
    Dask cluster is started here, only when points are pending). ``tally``: kept up to date
    (:class:`RunProgress`)."""
    tally = RunProgress(rd.path, len(points), force=force) if tally is None else tally
    from precision.provenance import collect, library_versions

    warnings = list(notes)
    warnings += rd.keep_unreadable_table()
    warnings += rd.reject_foreign_points()
    warnings += rd.adopt_table_points(points)
    # (the earlier config's table is kept with it, first)
    kept = rd.save_config(config, {p.id for p in points})
    previous_config = next((name for name in kept if name.startswith("config.")), None)
    if previous_config:
        warnings.append(
            f"the config differs from the one stored in {rd.path}; the earlier one is kept "
            f"as {_and(kept)}. Points whose parameters did not change are reused; the "
            "table holds the points of this config only"
        )
    elif kept:
        warnings.append(
            f"the table in {rd.path} holds points that this config does not have (its "
            "config.toml was edited in place, or was missing), so it belongs to another "
            f"config: kept as {_and(kept)}. Points whose parameters did not change are "
            "reused; the table holds the points of this config only"
        )
    if kept:
        # the table is written now, not only at the end, so that a run stopped before then
        # leaves the reused points' table (the figures are redrawn at the end, or by
        # `precision plot`)
        combine_results(config, rd)
    info = collect(seed=config.seed)
    current = _code_of(info)
    pending: list[Point] = []
    reused_code: dict[str, int] = {}
    reused_on: dict[str, int] = {}  # the machines that timed the reused points
    elsewhere: dict[str, int] = {}  # ... where they are not this run's machine
    # this machine, as a CPU-timed and as a GPU-timed row would name it
    here_cpu = machine_label(info["cpu"], info["cpu_count"], None, on_gpu=False)
    here_gpu = machine_label(None, None, info["gpu"], on_gpu=True)
    for p in points:
        rows = None if force else rd.read_point(p)
        if finished(rows, p):
            code = _code_of(rows)
            reused_code[code] = reused_code.get(code, 0) + 1
            where = timing_machines(rows).iloc[0]
            here = here_gpu if gpu_timed(rows).iloc[0] else here_cpu
            if where is not None:
                reused_on[where] = reused_on.get(where, 0) + 1
                if here is not None and where != here:
                    elsewhere[where] = elsewhere.get(where, 0) + 1
        else:
            pending.append(p)
    if executor == "local" and elsewhere:  # (Dask workers may be other machines)
        listed = "; ".join(f"{n} on {where}" for where, n in elsewhere.items())
        this_run = _and([m for m in (here_cpu, here_gpu) if m])
        warnings.append(
            f"stored points were timed on other hardware ({listed}); this run is on {this_run}. "
            "Their errors are reused as they are, but their time_s and TFLOP/s are not "
            "comparable with this run's (the TFLOP/s figures say so); --force recomputes "
            "every point here"
        )
    other = {code: n for code, n in reused_code.items() if not _same_code(code, current)}
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
            "libraries": library_versions(),  # (they read, write and draw; no number)
            "config_file": str(config.path),
            "argv": sys.argv,
            "executor": executor,
            "jobs": jobs,
            "scheduler": scheduler,
            "gpus": gpus,
            # How many points this run computes at once (None: unknown, the workers of a
            # --scheduler cluster), and what sets the BLAS threads of this process: the
            # TFLOP/s figures say when timings shared the machine (plotting.timing_notes).
            "concurrent_jobs": concurrent_points(
                executor, jobs, scheduler, gpus, processes=dask_processes, cores=os.cpu_count() or 1
            ),
            "blas_threads_env": {var: os.environ.get(var) for var in BLAS_THREAD_VARS},
            "points": len(points),
            "points_pending": len(pending),
            "previous_config": previous_config,
            "previous_table": [name for name in kept if name.startswith("results.")],
            "previous_figures": [name for name in kept if name.startswith("figures.")],
            "reused_points_code": reused_code,
            "reused_points_hardware": reused_on,
        }
    )
    summary = RunSummary(rd.path, total=len(points), skipped=len(points) - len(pending), computed=0)
    summary.warnings = warnings
    tally.stored = 0 if force else summary.skipped
    tally.phase = "compute"

    from tqdm.auto import tqdm

    # No bar where stderr is no terminal (disable=None: a log would get every \r frame), nor
    # with nothing to compute (an empty "0point" bar)
    with tqdm(
        total=len(pending),
        desc=config.name,
        unit="point",
        disable=None if progress and pending else True,
        dynamic_ncols=True,
    ) as bar:
        for note in warnings:
            bar.write(f"warning: {note}", file=sys.stderr)

        def on_done(point: Point, rows: pd.DataFrame) -> None:
            statuses = set(rows["status"])
            if force and not statuses <= set(DONE_STATUSES) and rd.is_done(point):
                # --force could not recompute this point here (its backend is unavailable,
                # or it failed): the finished result stored earlier is kept, never replaced
                summary.kept += 1  # (counted here only, not as unavailable or failed too)
                if STATUS_ERROR in statuses:
                    errors = rows["error"].dropna() if "error" in rows else pd.Series([])
                    reason = str(errors.iloc[0]) if len(errors) else "(no message)"
                    summary.kept_after_error.append(f"{point.slug}: {reason}")
                bar.set_postfix_str(point.slug, refresh=False)
                bar.update(1)
                return
            done = statuses <= set(DONE_STATUSES)
            tally.writing = point  # (a Ctrl-C inside the write: run_experiment looks)
            rd.write_point(point, rows)
            tally.writing = None  # (no call in between: a Ctrl-C lands before or after both)
            tally.stored += done
            if done:
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
        else:
            if executor == "local":
                summary.not_run, left = _run_pool(
                    jobs or 1, group_by_inputs(pending), on_done, gemm
                )
            else:
                with (
                    contextlib.nullcontext(client)
                    if client is not None
                    else _dask_client(jobs, scheduler, dask_processes, gpus)
                ) as dask:
                    summary.not_run, left = _run_dask(dask, group_by_inputs(pending), on_done)
            summary.warnings += left
            for note in left:
                bar.write(f"warning: {note}", file=sys.stderr)
    return summary
