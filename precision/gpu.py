"""Lazy access to CuPy and the GPU.

Nothing here imports CuPy at module import time: every CPU path of the package works on a
machine without CuPy or a GPU, and GPU paths fail with a message that names what needed it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from types import ModuleType


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


def device_name() -> str | None:
    """Name of the current CUDA device (e.g. ``'NVIDIA H200'``), or ``None`` without a GPU."""
    cp = cupy_or_none()
    if cp is None:
        return None
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def time_gpu(
    fn: Callable[[], object], *, repeats: int = 10, warmup: int = 3, min_seconds: float = 0.0
) -> list[float]:
    """Wall time in seconds of each timed call of ``fn`` on the GPU (``repeats`` of them), by
    CUDA events.

    ``warmup`` untimed calls come first (compilation, caches, clocks). Each timed call is
    bracketed by events on the current stream and synchronised, so the times are device times
    of everything ``fn`` enqueued on that stream. With ``min_seconds`` > 0 the calls go on,
    back to back, until at least that much host time has passed (and at least ``repeats``
    calls): long enough, a run reaches the card's steady state under its power limit.
    """
    cp = require_gpu("time_gpu")
    for _ in range(warmup):
        fn()
    cp.cuda.Device().synchronize()
    times: list[float] = []
    deadline = time.perf_counter() + min_seconds
    while len(times) < repeats or time.perf_counter() < deadline:
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return times


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
