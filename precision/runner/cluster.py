"""Dask clusters for ``precision run --executor dask``: one worker per GPU, plus CPU workers.

A GPU worker is a single-threaded Dask worker process started with ``CUDA_VISIBLE_DEVICES``
set to its one GPU (so CuPy's device 0 is that GPU) and advertising the worker *resource*
``GPU=1``. Points that need a GPU (:func:`needs_gpu`) are submitted with
``resources={"GPU": 1}``: Dask's scheduler places them only on workers that advertise the
resource, and never runs two of them at once on one worker, so no two timed GEMMs share a
GPU. CPU workers (no resource) take emulator points only; GPU workers take both.

The cluster itself is Dask's :class:`distributed.SpecCluster` with one nanny per worker
(:func:`worker_nanny`, a :class:`distributed.Nanny` that restarts a worker process that
dies); this module only writes its specification. Nothing here imports dask or CuPy at
import time.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence

GPU_RESOURCE = "GPU"
GPU_BACKENDS = ("cuda", "cublas")
#: Environment variable: BLAS threads of each GPU worker (default: the cores left by the CPU
#: workers, shared among the GPU workers).
BLAS_THREADS_ENV = "PRECISION_BLAS_THREADS"
_BLAS_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: OpenBLAS's idle threads spin for 2^N cycles after each call before they sleep (measured on
#: this project's 2-core machine: about 0.12 CPU-s per thread and call by default, 0 with 4,
#: the smallest value). GPU workers set 4: on a node whose cores the GPU workers' BLAS threads
#: fill, a worker's spinning threads would otherwise compete with another worker's timed,
#: launch-bound GEMMs (suspected, not measured, in the small-n spread of the 2-GPU run).
OPENBLAS_TIMEOUT_VAR, OPENBLAS_TIMEOUT = "OPENBLAS_THREAD_TIMEOUT", "4"
#: Scheduler options of the local clusters: no dashboard, and the HTTP server (health and
#: metrics routes) that a Dask scheduler starts even so on a free port of the loopback interface.
#: ``dashboard_address=None``, which Dask documents as "disable the dashboard", still bound that
#: server to Dask's default port 8787: where something else held it (another run's or test
#: session's cluster on the same host), the scheduler warned "Port 8787 is already in use", and
#: under warnings-as-errors (this project's tests) the cluster failed to start.
SCHEDULER_OPTIONS = {"dashboard": False, "dashboard_address": "127.0.0.1:0"}


class ClusterError(RuntimeError):
    """A GPU list cannot be resolved or a cluster cannot serve the sweep (message for the user)."""


def concurrent_points(
    executor: str,
    jobs: int | None,
    scheduler: str | None,
    gpus: Sequence[str] | None,
    *,
    processes: bool = True,
    cores: int | None = None,
) -> int | None:
    """How many points a run computes at once: ``--jobs`` locally; the workers of the local
    Dask cluster (one per GPU plus ``--jobs`` CPU workers with ``--gpus``, else ``--jobs``
    or, as Dask's default, one per core (``cores``; None when unknown); one with
    ``processes=False``); None on a ``--scheduler`` cluster, whose workers the run does not
    know."""
    if executor == "local":
        return jobs or 1
    if scheduler:
        return None
    if gpus:
        return len(gpus) + (jobs or 0)
    return jobs or (cores if processes else 1)


def needs_gpu(point) -> bool:
    """True when ``point`` (a :class:`precision.runner.sweep.Point`) runs a GPU backend, as its
    backend or as its comparison backend, or runs the emulator on the GPU engine."""
    return (
        point.backend in GPU_BACKENDS
        or point.compare_backend in GPU_BACKENDS
        or point.emulator_device == "gpu"
    )


def _nvidia_smi_uuids() -> list[str]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        raise ClusterError("nvidia-smi is not on PATH")
    try:
        out = subprocess.run(
            [exe, "--query-gpu=uuid", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise ClusterError(f"nvidia-smi failed ({type(exc).__name__}: {exc})") from None
    return [line.strip() for line in out.splitlines() if line.strip()]


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as ``CUDA_VISIBLE_DEVICES`` entries (index or UUID).

    ``CUDA_VISIBLE_DEVICES`` itself when it is set; otherwise the UUIDs that ``nvidia-smi``
    lists; otherwise the indices of the devices CuPy sees. Raises :class:`ClusterError`
    naming what was tried when there is no GPU.
    """
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        gpus = [g.strip() for g in env.split(",") if g.strip()]
        if not gpus or gpus[0].startswith("-"):
            raise ClusterError(f"CUDA_VISIBLE_DEVICES={env!r} hides every GPU")
        return gpus
    try:
        gpus = _nvidia_smi_uuids()
        smi_reason = "nvidia-smi lists no GPU"
    except ClusterError as exc:
        gpus, smi_reason = [], str(exc)
    if gpus:
        return gpus
    from precision.gpu import cupy_or_none, unavailable_reason

    cp = cupy_or_none()
    if cp is not None:
        return [str(i) for i in range(cp.cuda.runtime.getDeviceCount())]
    raise ClusterError(
        f"--gpus: no NVIDIA GPU found on this machine ({smi_reason}; {unavailable_reason()}). "
        "Run emulator sweeps with --jobs N instead, or point --scheduler at a cluster with GPU "
        "workers"
    )


def parse_gpus(spec: str, available: Callable[[], list[str]] | None = None) -> list[str]:
    """The GPUs named by ``--gpus SPEC``, as ``CUDA_VISIBLE_DEVICES`` values, one per worker.

    ``all``: every visible GPU (``available``, default :func:`visible_gpus`); an integer
    ``N``: the first N of them; otherwise a comma-separated list of distinct device indices
    (``0,2``; under ``CUDA_VISIBLE_DEVICES=4,5``, of those: index 0 is its entry 4) or
    UUIDs (``GPU-…``, ``MIG-…``, or an entry of ``CUDA_VISIBLE_DEVICES``). An index out of
    range, a negative one (``-1`` would hide every GPU from the worker, which still
    advertised one) or any other word is refused, as is a list on a machine without a GPU.
    """
    available = available or visible_gpus
    spec = spec.strip()
    if spec == "all":
        return available()
    if spec.isdigit():
        count = int(spec)
        if count < 1:
            raise ClusterError(f"--gpus must be all, N >= 1 or a list, got {spec!r}")
        gpus = available()
        if count > len(gpus):
            raise ClusterError(f"--gpus {count}: only {len(gpus)} GPU(s) here ({', '.join(gpus)})")
        return gpus[:count]
    entries = [g.strip() for g in spec.split(",")]
    if not all(entries) or len(set(entries)) != len(entries):
        raise ClusterError(
            f"--gpus {spec!r}: expected all, N, or distinct comma-separated device indices or "
            "UUIDs (e.g. 0,1 or GPU-8f3c...)"
        )
    visible = available()
    gpus = []
    for entry in entries:
        if entry.isdigit() and entry not in visible:
            if int(entry) >= len(visible):
                raise ClusterError(
                    f"--gpus {spec!r}: no GPU {entry}; {len(visible)} visible here "
                    f"(indices 0 to {len(visible) - 1}: {', '.join(visible)})"
                )
            if os.environ.get("CUDA_VISIBLE_DEVICES"):  # index i of this process: its entry i
                entry = visible[int(entry)]
        elif not (entry in visible or entry.startswith(("GPU-", "MIG-"))):
            raise ClusterError(
                f"--gpus {spec!r}: {entry!r} is neither a device index (0 to "
                f"{len(visible) - 1}) nor a GPU UUID (GPU-...; visible: {', '.join(visible)})"
            )
        gpus.append(entry)
    if len(set(gpus)) != len(gpus):
        raise ClusterError(f"--gpus {spec!r} names one GPU twice ({', '.join(gpus)})")
    return gpus


def blas_threads(n_gpus: int, cpu_workers: int) -> int:
    """BLAS threads of each GPU worker: ``$PRECISION_BLAS_THREADS`` when set, else the
    machine's cores minus one per CPU worker, divided among the GPU workers (at least 1)."""
    env = os.environ.get(BLAS_THREADS_ENV)
    if env is not None:
        if not env.isdigit() or int(env) < 1:
            raise ClusterError(f"{BLAS_THREADS_ENV}={env!r}: expected an integer >= 1")
        return int(env)
    return max(1, ((os.cpu_count() or 1) - cpu_workers) // max(1, n_gpus))


#: Dask's nannies start every worker process with this glibc variable set
#: (``distributed.nanny.pre-spawn-environ``, 65536 by default); this module's do not.
MALLOC_TRIM_VAR = "MALLOC_TRIM_THRESHOLD_"


@functools.cache
def worker_nanny() -> type:
    """The nanny class of every worker process of this project's local clusters.

    It starts its worker with ``blas_threads`` BLAS threads: Dask starts every worker process
    with ``OMP_NUM_THREADS=1`` (and the OpenBLAS and MKL equivalents) through
    ``distributed.nanny.pre-spawn-environ``, which must be set before the process imports
    numpy; this nanny replaces those values for its worker only. It also sets
    :data:`OPENBLAS_TIMEOUT_VAR`, so that the worker's BLAS threads sleep as soon as its fp64
    reference is done instead of spinning beside the timed GEMMs.

    And it starts its worker without :data:`MALLOC_TRIM_VAR`, that is with glibc's own
    allocator settings, as a local run has. Setting glibc's trim threshold at all also fixes
    its mmap threshold at 128 KiB, so every numpy temporary above that size is mapped,
    zero-filled by the kernel and unmapped again, call after call. Under Dask's 65536,
    drawing an ``exp_rand`` input of n = 4096 took 25-30 s instead of 2.7-4.4 s and a corrected
    fp16 emulator GEMM of n = 256 took 0.67-1.04 s instead of 0.20-0.26 s (2 cores); on two
    H200s, the n = 16384 input group of ``configs/h200_speed.toml`` took 300 s on a GPU
    worker against 104 s locally (``results/h200/h200_speed_2gpu_2026-11-27/NOTES.md``).
    """
    from distributed import Nanny

    class WorkerNanny(Nanny):
        def __init__(self, *args, blas_threads: int = 1, **kwargs):
            super().__init__(*args, **kwargs)
            blas = dict.fromkeys(_BLAS_VARS, str(blas_threads))
            blas[OPENBLAS_TIMEOUT_VAR] = OPENBLAS_TIMEOUT
            self.pre_spawn_env.update(blas)  # set before the process starts (and numpy loads)
            self.env.update(blas)  # set again in the process; would otherwise restore Dask's
            # glibc reads the variable once, when the process starts: only pre_spawn_env
            # reaches it. It goes from env too, so the worker's own child processes lack it.
            self.pre_spawn_env.pop(MALLOC_TRIM_VAR, None)
            self.env.pop(MALLOC_TRIM_VAR, None)

    return WorkerNanny


def worker_preload() -> list[str]:
    """The ``preload`` of this module's local worker processes: Dask's configured preloads,
    then this module (:func:`dask_setup`)."""
    import dask

    configured = dask.config.get("distributed.worker.preload") or []
    return [*([configured] if isinstance(configured, str) else configured), __name__]


def dask_setup(worker) -> None:
    """Dask preload hook (:func:`worker_preload`): the worker process ignores SIGINT.

    A Ctrl-C in a terminal signals every process of the run, the local cluster's worker
    processes too; each then printed a KeyboardInterrupt traceback while the run, which is
    interrupted anyway, closed them. The run's process alone handles it now and closes its
    workers (their nannies end them).
    """
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():  # (a thread worker: no)
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def cluster_spec(
    gpus: Sequence[str], cpu_workers: int, processes: bool = True
) -> tuple[dict, dict]:
    """(scheduler, workers) specifications for :class:`distributed.SpecCluster`.

    Worker ``gpu-<g>`` is pinned to GPU ``g`` (``CUDA_VISIBLE_DEVICES=g``, resource GPU=1)
    and computes its fp64 references with :func:`blas_threads` BLAS threads; workers
    ``cpu-<j>`` have no GPU resource and one BLAS thread (Dask's default). Every worker runs
    one task at a time. Every worker process is started by :func:`worker_nanny` (glibc's own
    allocator settings, not Dask's). With ``processes=False`` the workers are threads of
    this process (tests only: no per-worker environment, so no pinning).

    Each worker process may use an equal share of the machine's memory
    (:func:`worker_memory_limit`). Dask's default for a one-thread worker is the share of one
    *core* (8 GiB on a 32-core, 256 GiB node), and its nanny restarts a worker above 95 % of
    it: a sweep point at n = 16384 needs more than that on the host (fp32 inputs, their
    float64 copies, the reference and the result), so such points were killed on every
    worker and left uncomputed.

    The ``"fp64"`` reference (a BLAS matmul) can differ in its last bits with the number of
    BLAS threads, and so can error columns near the rounding level: set
    ``PRECISION_BLAS_THREADS`` and ``OPENBLAS_NUM_THREADS`` alike to compare runs bit for bit.
    """
    from distributed import Scheduler, Worker

    worker_class = worker_nanny() if processes else Worker

    threads = blas_threads(len(gpus), cpu_workers) if gpus else 1
    memory = worker_memory_limit(len(gpus) + cpu_workers)

    def process_options() -> dict:
        """The options of every worker process: its memory share, the preload, quiet logs."""
        if not processes:
            return {}
        quiet = logging.WARNING
        return {"memory_limit": memory, "preload": worker_preload(), "silence_logs": quiet}

    workers: dict[str, dict] = {}
    for gpu in gpus:
        options: dict = {"nthreads": 1, "resources": {GPU_RESOURCE: 1}, "name": f"gpu-{gpu}"}
        if processes:
            options["env"] = {"CUDA_VISIBLE_DEVICES": gpu}
            options["blas_threads"] = threads
        workers[f"gpu-{gpu}"] = {"cls": worker_class, "options": options | process_options()}
    for j in range(cpu_workers):
        options = {"nthreads": 1, "name": f"cpu-{j}"} | process_options()
        workers[f"cpu-{j}"] = {"cls": worker_class, "options": options}
    scheduler = {"cls": Scheduler, "options": dict(SCHEDULER_OPTIONS)}
    return scheduler, workers


def worker_memory_limit(n_workers: int) -> int:
    """Bytes each of ``n_workers`` worker processes may use: an equal share of the memory Dask
    sees for this machine (``distributed.system.MEMORY_LIMIT``: physical memory, or the cgroup
    / rlimit cap when lower)."""
    from distributed.system import MEMORY_LIMIT

    return int(MEMORY_LIMIT // max(1, n_workers))


def local_cluster(gpus: Sequence[str], cpu_workers: int, processes: bool = True):
    """A started :class:`distributed.SpecCluster` of :func:`cluster_spec`'s workers."""
    from distributed import SpecCluster

    if not gpus and cpu_workers < 1:
        raise ClusterError("a cluster needs at least one GPU or CPU worker")
    scheduler, workers = cluster_spec(gpus, cpu_workers, processes)
    # (as LocalCluster does: without it, every start and stop printed ~100 INFO lines)
    return SpecCluster(
        workers=workers, scheduler=scheduler, name="precision", silence_logs=logging.WARNING
    )


def gpu_workers(client) -> list[str]:
    """Addresses of the workers connected to ``client``'s scheduler that advertise GPU >= 1."""
    info = client.scheduler_info(n_workers=-1) if _takes_n_workers(client) else None
    info = info or client.scheduler_info()
    return [
        addr
        for addr, worker in info.get("workers", {}).items()
        if (worker.get("resources") or {}).get(GPU_RESOURCE, 0) >= 1
    ]


def _takes_n_workers(client) -> bool:
    import inspect

    return "n_workers" in inspect.signature(client.scheduler_info).parameters
