"""Provenance recorded next to every result: what code, on what machine, when.

A number in a paper should be traceable to the package version and git commit that produced it,
the GPU and driver, and the library versions that did the arithmetic.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform
import socket
import subprocess
from pathlib import Path

import numpy as np

from precision.gpu import cupy_or_none, device_name


@functools.cache
def git_commit() -> str | None:
    """The source tree's HEAD commit (with ``-dirty`` when modified), or ``None`` if unknown.

    ``PRECISION_GIT_COMMIT``, when set, is taken instead: for a copy of the tree on another
    machine whose ``.git`` is missing or stale (set it to ``git rev-parse HEAD`` of the tree
    that was copied)."""
    override = os.environ.get("PRECISION_GIT_COMMIT", "").strip()
    if override:
        return override
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


@functools.cache
def driver_release() -> str | None:
    """The NVIDIA driver release (e.g. ``'580.159.04'``) from ``nvidia-smi``, if it runs."""
    try:
        res = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = res.stdout.strip().splitlines()
    return lines[0].strip() if res.returncode == 0 and lines else None


def _gpu_fields() -> dict:
    cp = cupy_or_none()
    if cp is None:
        return {"gpu": None, "driver": None, "driver_api": None, "cuda": None, "cupy": None}
    driver = cp.cuda.runtime.driverGetVersion()
    runtime = cp.cuda.runtime.runtimeGetVersion()

    def fmt(v: int) -> str:
        return f"{v // 1000}.{(v % 1000) // 10}"

    return {
        "gpu": device_name(),
        "driver": driver_release(),
        "driver_api": fmt(driver),
        "cuda": fmt(runtime),
        "cupy": cp.__version__,
    }


def collect(seed: int | None = None) -> dict:
    """A flat dict of provenance fields, ready to become columns of a results table.

    Keys: version, git_commit, host, python, numpy, ml_dtypes, gpu, driver (release from
    nvidia-smi), driver_api (CUDA driver API version), cuda (runtime version), cupy, seed,
    created_utc (ISO 8601).
    """
    import ml_dtypes

    from precision import __version__

    return {
        "version": __version__,
        "git_commit": git_commit(),
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "ml_dtypes": ml_dtypes.__version__,
        **_gpu_fields(),
        "seed": seed,
        "created_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
