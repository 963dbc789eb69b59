"""Lazy access to CuPy and the GPU.

Nothing here imports CuPy at module import time: every CPU path of the package works on a
machine without CuPy or a GPU, and GPU paths fail with a message that names what needed it.
"""

from __future__ import annotations

import functools
import math
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any


@functools.cache
def cupy_or_none() -> ModuleType | None:
    """The ``cupy`` module if it imports and sees at least one CUDA device, else ``None``."""
    try:
        import cupy
    except Exception:
        return None
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:
        return None
    return cupy


def gpu_available() -> bool:
    """True when CuPy is importable and a CUDA device is visible."""
    return cupy_or_none() is not None


def unavailable_reason() -> str | None:
    """Why the GPU cannot be used here (``None`` when it can)."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA installation
        return f"CuPy is not importable ({type(exc).__name__}: {exc}); install precision[gpu]"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"CuPy sees no CUDA driver/device ({type(exc).__name__}: {exc})"
    if count < 1:
        return "CuPy sees no CUDA device"
    return None


def require_gpu(what: str) -> ModuleType:
    """Return ``cupy`` or raise ``RuntimeError`` saying that ``what`` needs a GPU and why."""
    reason = unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"{what} needs an NVIDIA GPU with CuPy, but {reason}.")
    import cupy

    return cupy


def allow_dynamic_smem(kernel: Any, nbytes: int, what: str) -> None:
    """Let ``kernel`` (a CuPy ``RawKernel``, or a bare ``Function`` of a ``RawModule``) launch
    with up to ``nbytes`` of dynamic shared memory, beyond the default 48 KiB: the
    ``RawKernel`` attribute, else the driver's function attribute. ``what`` names the kernel
    in the error when no GPU is there."""
    try:  # a RawKernel (CuPy >= 8) exposes the attribute; a bare Function needs the driver
        kernel.max_dynamic_shared_size_bytes = nbytes
    except AttributeError:
        cp = require_gpu(what)
        cp.cuda.driver.funcSetAttribute(kernel.ptr, 8, nbytes)  # MAX_DYNAMIC_SHARED_SIZE


def exit_without_gpu(what: str, hint: str = "") -> bool:
    """For command-line tools: where ``what`` cannot get a GPU here, print one line
    ``error: <why>`` to stderr (the :func:`require_gpu` message; with a ``hint``,
    ``error: <why>; <hint>``) and return True, so that the caller returns exit status 2; else
    return False."""
    try:
        require_gpu(what)
    except RuntimeError as exc:
        why = " ".join(str(exc).split())
        print(f"error: {why.rstrip('.')}; {hint}" if hint else f"error: {why}", file=sys.stderr)
        return True
    return False


def device_name() -> str | None:
    """Name of the current CUDA device (e.g. ``'NVIDIA H200'``), or ``None`` without a GPU."""
    cp = cupy_or_none()
    if cp is None:
        return None
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def time_gpu(
    fn: Callable[[], object],
    *,
    repeats: int = 10,
    warmup: int = 3,
    min_seconds: float = 0.0,
    batch: int = 1,
) -> list[float]:
    """Device time in seconds of one call of ``fn`` on the GPU, per timed sample (``repeats``
    of them), by CUDA events.

    ``warmup`` untimed calls come first (compilation, caches, clocks). Each sample runs
    ``batch`` calls back to back between one pair of events on the current stream, then
    synchronises; its time divided by ``batch`` is the sample's entry. With ``batch = 1``
    the entry is one call's time including any wait for the host to launch it: on the H200
    8-10 % of a 0.3 ms call, most of a call under 0.1 ms (see :func:`calls_per_sample`). With
    ``min_seconds`` > 0 the samples go on, back to back, until at least that much host time
    has passed (and at least ``repeats`` samples): long enough, a run reaches the card's
    steady state under its power limit.
    """
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    cp = require_gpu("time_gpu")
    for _ in range(warmup):
        fn()
    cp.cuda.Device().synchronize()
    times: list[float] = []
    deadline = time.perf_counter() + min_seconds
    while len(times) < repeats or time.perf_counter() < deadline:
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3 / batch)
    return times


#: Device time one timed sample of the runner aims at (:func:`calls_per_sample`).
SAMPLE_SECONDS = 2e-3


def calls_per_sample(
    fn: Callable[[], object],
    *,
    warmup: int = 0,
    target_s: float = SAMPLE_SECONDS,
    max_calls: int = 1000,
) -> int:
    """How many back-to-back calls of ``fn`` make one timed sample last about ``target_s``:
    ``ceil(target_s / t)`` in ``[1, max_calls]``, with ``t`` the event time of one call made
    after ``warmup`` untimed ones (:func:`time_gpu`).

    Why: a sample of one call also times the gap while the host launches it (Python, CuPy,
    cuBLAS: 20-110 µs per call measured on an H200 host), and the card idles between
    samples. Back to back, the launches overlap the previous call's GPU work, so the sample
    measures the GPU as long as a call's GPU work outlasts its launch (on the H200 from
    n = 4096 for our fp16 kernels), and the host's launch rate below that."""
    (t,) = time_gpu(fn, repeats=1, warmup=warmup)
    if not t > 0:
        return max_calls
    return max(1, min(max_calls, math.ceil(target_s / t)))


@functools.cache
def device_uuid() -> str | None:
    """UUID of the current CUDA device as nvidia-smi writes it (``'GPU-8f3c…'``), or ``None``
    without a GPU.

    From CuPy's device properties when they carry it, else from ``nvidia-smi -i`` on the first
    ``CUDA_VISIBLE_DEVICES`` entry (nvidia-smi itself ignores that variable). Cached per
    process: a Dask GPU worker is pinned to one device for its life.
    """
    import os
    import shutil
    import subprocess

    cp = cupy_or_none()
    if cp is None:
        return None
    try:
        raw = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id).get("uuid")
    except Exception:
        raw = None
    if isinstance(raw, bytes | bytearray) and len(raw) == 16:
        h = bytes(raw).hex()
        return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    index = visible or str(cp.cuda.Device().id)
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "-i", index, "--query-gpu=uuid", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0].strip() if out else None
