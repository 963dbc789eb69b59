"""Test doubles for the runner tests (this module holds no tests).

``fake_gemm`` follows the contract of :func:`precision.gemm.gemm` (docs/CONTRACTS.md) with
textbook arithmetic rather than the emulator: ``plain`` rounds the inputs to ``fmt`` and
multiplies in float64; ``corrected`` adds the split correction terms (three for ootomo, four
for markidis). It is deterministic, fast, and its errors have the right orders of magnitude,
which is all the runner mechanics need. It also raises for ``satf`` with ``tf32`` so that
failed points can be tested, and sleeps ``PRECISION_TEST_GEMM_SLEEP`` seconds per call so a
subprocess can be killed mid-sweep. With ``PRECISION_TEST_GEMM_HOLD=DIR`` each call first
creates ``DIR/inside.PID`` and then blocks until ``DIR/release`` exists: a test waits for the
state it needs (a run holding its lock, workers inside a point) instead of sleeping. With
``PRECISION_TEST_GEMM_DIE=N`` a call on an N×N input SIGKILLs its own process (a worker
killed by the system), the first time only when ``PRECISION_TEST_GEMM_DIE_ONCE=FILE`` is set
too (the file records that it died).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np

from precision.runner.catalog import Catalog

METHODS = ("plain", "corrected", "satf")
BACKENDS = ("emulator", "cuda", "cublas")
CORRECTIONS = ("markidis", "ootomo")
UNAVAILABLE = {"cuda": "no GPU (test double)", "cublas": "no GPU (test double)"}


def fake_gemm(
    A, B, *, method="plain", fmt="f16", backend="emulator", arch="sm90", correction="ootomo"
):
    from precision.formats import round as fround

    if method == "satf" and fmt == "tf32":
        raise NotImplementedError("satf is not defined for tf32 (test double)")
    delay = float(os.environ.get("PRECISION_TEST_GEMM_SLEEP", "0"))
    if delay:
        time.sleep(delay)
    _hold(os.environ.get("PRECISION_TEST_GEMM_HOLD"))
    _die(len(A))
    a = np.asarray(A, dtype=np.float64)
    b = np.asarray(B, dtype=np.float64)
    ah, bh = fround(a, fmt), fround(b, fmt)
    out = ah @ bh
    if method == "corrected":
        al, bl = fround(a - ah, fmt), fround(b - bh, fmt)
        out = out + ah @ bl + al @ bh
        if correction == "markidis":
            out = out + al @ bl
    return out.astype(np.float32)


def _hold(folder: str | None, timeout: float = 300.0) -> None:
    """See the module's docstring; raises after ``timeout`` seconds so that a test that never
    releases the hold fails instead of hanging."""
    if not folder:
        return
    path = Path(folder)
    (path / f"inside.{os.getpid()}").touch()
    deadline = time.monotonic() + timeout
    while not (path / "release").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path / 'release'} did not appear within {timeout} s")
        time.sleep(0.01)


def _die(n: int) -> None:
    """See the module's docstring."""
    if os.environ.get("PRECISION_TEST_GEMM_DIE") != str(n):
        return
    once = os.environ.get("PRECISION_TEST_GEMM_DIE_ONCE")
    if once:
        try:
            Path(once).open("x").close()
        except FileExistsError:
            return
    os.kill(os.getpid(), signal.SIGKILL)


def fake_catalog() -> Catalog:
    from precision import distributions, formats, tensorcore

    return Catalog(
        methods=METHODS,
        formats=tuple(formats.FORMATS),
        format_aliases={a: formats.get_format(a).name for a in formats.ALIASES},
        backends=BACKENDS,
        archs=tuple(tensorcore.ARCHS),
        corrections=CORRECTIONS,
        distributions=tuple(distributions.DISTRIBUTIONS),
    )


def dask_without_nvml(monkeypatch) -> None:
    """Dask's NVML diagnostics off for one test, in this process and in the worker processes
    it starts. Stand-in GPUs ("g0", "7", ...) are no devices: on a machine with NVML, a worker
    pinned to one asked NVML about it at start-up and failed (NVMLError_InvalidArgument, seen
    on H200 hosts). The environment variable alone was not enough: a nanny hands its own
    process's Dask config to the worker, which overrides the worker's environment."""
    import dask

    monkeypatch.setenv("DASK_DISTRIBUTED__DIAGNOSTICS__NVML", "False")
    monkeypatch.setitem(dask.config.config["distributed"]["diagnostics"], "nvml", False)


def install(set_attr) -> None:
    """Route the runner to the doubles; ``set_attr`` is ``monkeypatch.setattr`` or ``setattr``."""
    import precision.runner.catalog
    import precision.runner.config
    import precision.runner.execute

    set_attr(precision.runner.config, "load_catalog", fake_catalog)
    set_attr(precision.runner.catalog, "load_catalog", fake_catalog)
    set_attr(
        precision.runner.catalog,
        "backend_availability",
        lambda: {b: UNAVAILABLE.get(b) for b in BACKENDS},
    )
    set_attr(
        precision.runner.execute, "_availability", lambda: {b: UNAVAILABLE.get(b) for b in BACKENDS}
    )
    set_attr(precision.runner.execute, "_default_gemm", lambda: fake_gemm)


def fake_gpu_uuid() -> str:
    """The double of :func:`precision.gpu.device_uuid`: names the worker's pinned device."""
    return f"fake-{os.environ.get('CUDA_VISIBLE_DEVICES', 'none')}"


def started_with(name: str) -> str | None:
    """The value of environment variable ``name`` when this process started (Linux's
    /proc/self/environ: what glibc read at the start), or None. Run in Dask workers."""
    for entry in Path("/proc/self/environ").read_bytes().split(b"\0"):
        key, _, value = entry.partition(b"=")
        if key == name.encode():
            return value.decode()
    return None


try:
    from distributed import WorkerPlugin
except ImportError:  # dask is optional; the dask tests skip
    WorkerPlugin = object  # type: ignore[misc,assignment]


class DoublesPlugin(WorkerPlugin):
    """A Dask worker plugin that installs the doubles in each worker process (and again in a
    worker that replaces a killed one), with the ``cuda`` backend available (computed by
    :func:`fake_gemm`, its GPU named by :func:`fake_gpu_uuid`). Each finished point's id is
    appended to the file ``log`` (one line per compute, so recomputations can be counted);
    ``sleep`` seconds per GEMM call keep points in flight long enough to kill a worker.
    """

    name = "precision-test-doubles"

    def __init__(self, log: str, sleep: float = 0.0):
        self.log = log
        self.sleep = sleep

    def setup(self, worker=None) -> None:
        import precision.runner.execute as execute

        install(setattr)
        available = {b: None for b in BACKENDS}
        execute._availability = lambda: available
        execute._gpu_uuid = fake_gpu_uuid
        os.environ["PRECISION_TEST_GEMM_SLEEP"] = str(self.sleep)
        compute, log = execute.compute_point, self.log

        def logged(point, cache=None, gemm=None):
            rows = compute(point, cache, gemm)
            with open(log, "a") as f:
                f.write(point.id + "\n")
            return rows

        if not getattr(compute, "_logged", False):
            logged._logged = True  # type: ignore[attr-defined]
            execute.compute_point = logged

    def teardown(self, worker=None) -> None:
        pass


def threads_alone_then_together(folder: str, timeout: float = 120.0) -> tuple[int | None, int]:
    """In a worker of the runner's process pool, run by two workers at once: the first to
    start (the leader) reads ``thread_count()`` while it is the only busy worker, then both
    read it while both are busy. Files in ``folder`` order the steps (``leader``, ``alone``,
    ``busy.PID``, ``read.PID``); raises after ``timeout`` seconds instead of hanging.
    Returns (the leader's count alone or None, the count with both busy)."""
    from precision.threads import busy_worker, thread_count

    path = Path(folder)

    def wait_for(pattern: str, count: int) -> None:
        deadline = time.monotonic() + timeout
        while len(list(path.glob(pattern))) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"fewer than {count} {pattern} in {path} after {timeout} s")
            time.sleep(0.01)

    try:
        (path / "leader").open("x").close()
        leader = True
    except FileExistsError:
        leader = False
        wait_for("alone", 1)  # the leader has read its count alone
    with busy_worker():
        alone = thread_count() if leader else None
        if leader:
            (path / "alone").touch()
        (path / f"busy.{os.getpid()}").touch()
        wait_for("busy.*", 2)
        together = thread_count()
        (path / f"read.{os.getpid()}").touch()
        wait_for("read.*", 2)
    return alone, together
