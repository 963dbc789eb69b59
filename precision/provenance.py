"""Provenance recorded next to every result: what code, on what machine, when.

A number in a paper should be traceable to the package version and git commit that produced it,
the GPU and driver, and the library versions that did the arithmetic.

The git commit alone can mislead: a tree copied to a GPU node with a stale ``.git`` reports the
old commit (plus ``-dirty``). So every record also carries ``source_digest``, a hash of the
package's source files themselves; ``python -m precision.provenance --at COMMIT`` prints the
digest of any commit's tree, read from git without a checkout, and ``--find DIGEST`` lists the
commits whose source has a row's digest.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import functools
import hashlib
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from precision.console import run_main
from precision.gpu import cupy_or_none, device_name

#: The repository root (the folder holding the ``precision`` package).
REPO_ROOT = Path(__file__).resolve().parent.parent
#: Files that make up the package's code, by suffix (what ``source_digest`` hashes).
SOURCE_SUFFIXES = (".py", ".cu", ".cuh", ".h", ".cpp", ".sh")
#: Hex digits kept of the SHA-256 (64 bits: collisions among a project's trees are negligible).
DIGEST_HEX = 16


@functools.cache
def git_commit() -> str | None:
    """The source tree's HEAD commit (with ``-dirty`` when modified), or ``None`` if unknown.

    ``PRECISION_GIT_COMMIT``, when set, is taken instead: for a copy of the tree on another
    machine whose ``.git`` is missing or stale (set it to ``git rev-parse HEAD`` of the tree
    that was copied)."""
    override = os.environ.get("PRECISION_GIT_COMMIT", "").strip()
    if override:
        return override
    root = REPO_ROOT
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


def _digest(files: Iterable[tuple[str, bytes]]) -> str:
    """SHA-256 over (path, content) pairs in path order: path, NUL, length, NUL, content."""
    h = hashlib.sha256()
    for path, data in sorted(files):
        h.update(path.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()[:DIGEST_HEX]


def _is_source(relpath: str) -> bool:
    return relpath.endswith(SOURCE_SUFFIXES) and "__pycache__" not in relpath


def source_digest(root: Path | None = None) -> str:
    """Digest of the package source under ``root`` (default: this installation's repository):
    every ``precision/**`` file with a suffix in :data:`SOURCE_SUFFIXES`, by its path relative
    to ``root`` and its bytes. Independent of git, file times and caches, so two trees with the
    same code give the same digest wherever they were copied. Untracked source files count
    too (they are code that runs), so such a tree matches no commit."""
    base = (root or REPO_ROOT).resolve()
    files = []
    for f in (base / "precision").rglob("*"):
        rel = f.relative_to(base).as_posix()
        if f.is_file() and _is_source(rel):
            files.append((rel, f.read_bytes()))
    return _digest(files)


@functools.cache
def _source_digest_here() -> str:
    return source_digest()


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    """stdout of ``git ARGS`` in ``repo``; ``ValueError`` with git's message if it fails."""
    res = subprocess.run(["git", *args], cwd=repo, input=stdin, capture_output=True)
    if res.returncode != 0:
        msg = res.stderr.decode(errors="replace").strip()
        raise ValueError(f"git {' '.join(args)} in {repo}: {msg}")
    return res.stdout


def source_digest_at(commit: str, repo: Path | None = None) -> str:
    """:func:`source_digest` of the tree of git ``commit`` in ``repo`` (default: this
    repository), read from git's objects (no checkout). Raises ``ValueError`` naming the
    commit when git cannot resolve it."""
    repo = (repo or REPO_ROOT).resolve()
    listing = _git(repo, "ls-tree", "-r", "-z", commit, "--", "precision").split(b"\0")
    entries = []  # (path, blob id) of regular files
    for line in listing:
        if not line:
            continue
        meta, raw_path = line.split(b"\t", 1)
        mode, kind, blob = meta.split()
        if kind == b"blob" and mode != b"120000" and _is_source(raw_path.decode()):
            entries.append((raw_path.decode(), blob.decode()))
    stdin = "".join(f"{b}\n" for _, b in entries).encode()
    batch = _git(repo, "cat-file", "--batch", stdin=stdin)
    files: list[tuple[str, bytes]] = []
    pos = 0
    for path, _ in entries:  # "<id> blob <size>\n<content>\n" per entry, in order
        end = batch.index(b"\n", pos)
        size = int(batch[pos:end].split()[2])
        files.append((path, batch[end + 1 : end + 1 + size]))
        pos = end + 1 + size + 1
    return _digest(files)


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


@functools.cache
def cpu_model() -> str | None:
    """The CPU's model name ("Intel(R) Xeon(R) Platinum 8480+", from ``/proc/cpuinfo`` on
    Linux, else :func:`platform.processor`); None when the system does not say."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                return value.strip()
    return platform.processor() or None


@functools.cache
def blas_library() -> str | None:
    """The BLAS numpy calls at run time, as "openblas 0.3.31 SkylakeX pthreads": library,
    version, the CPU kernel set it chose for this machine and its threading layer (from
    threadpoolctl). numpy's float32/float64 matmul baselines and ``reference = "fp64"``
    depend on it; the exact reference and the emulators do not. Falls back to the library
    numpy was built against (``numpy.show_config``, "... (build)") when threadpoolctl is
    missing or finds none; None if unknown."""
    try:
        import threadpoolctl  # (a dependency; a bare source tree on a GPU node may lack it)
    except ImportError:
        threadpoolctl = None
    for lib in threadpoolctl.threadpool_info() if threadpoolctl else []:
        if lib.get("user_api") == "blas":
            parts = (
                lib.get(key)
                for key in ("internal_api", "version", "architecture", "threading_layer")
            )
            return " ".join(str(p) for p in parts if p)
    with contextlib.suppress(Exception):  # the build's record: no kernel set, no threads
        built = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{built['name']} {built.get('version', '')} (build)".replace("  ", " ")
    return None


def library_versions() -> dict[str, str | None]:
    """Versions of the libraries that read, write and draw results (pandas, pyarrow,
    matplotlib, seaborn, mpmath, tqdm): ``precision info`` and each run's record in
    provenance.json (not every row: they do not change a number)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in ("pandas", "pyarrow", "matplotlib", "seaborn", "mpmath", "tqdm", "threadpoolctl"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def collect(seed: int | None = None) -> dict:
    """A flat dict of provenance fields, ready to become columns of a results table.

    Keys: version, git_commit, source_digest (:func:`source_digest`), host, cpu
    (:func:`cpu_model`), cpu_count (logical CPUs), python, numpy, ml_dtypes, blas
    (:func:`blas_library`), gpu, driver
    (release from nvidia-smi), driver_api (CUDA driver API version), cuda (runtime version),
    cupy, seed, created_utc (ISO 8601). Host names are not unique (many VMs are "vm"), so
    timings are told apart by cpu, cpu_count and gpu.
    """
    import ml_dtypes

    from precision import __version__

    return {
        "version": __version__,
        "git_commit": git_commit(),
        "source_digest": _source_digest_here(),
        "host": socket.gethostname(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "ml_dtypes": ml_dtypes.__version__,
        "blas": blas_library(),
        **_gpu_fields(),
        "seed": seed,
        "created_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def commits_with_digest(digest: str, repo: Path | None = None) -> list[str]:
    """Every commit reachable from any ref of ``repo`` whose package source has ``digest``
    (a prefix of at least 8 hex digits is enough), newest first. Several commits match when
    only files outside the package changed between them."""
    digest = digest.strip().lower()
    if len(digest) < 8 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"digest {digest!r}: expected at least 8 hex digits")
    repo = (repo or REPO_ROOT).resolve()
    revs = _git(repo, "rev-list", "--all").decode().split()
    return [rev for rev in revs if source_digest_at(rev, repo).startswith(digest)]


def main(argv: list[str] | None = None) -> int:
    """``python -m precision.provenance [--at COMMIT ... | --find DIGEST]``: print the source
    digest of this tree or of each named commit, or the commits whose source has a digest (to
    match a result's ``source_digest`` to a commit)."""
    ap = argparse.ArgumentParser(
        prog="python -m precision.provenance",
        description="Print the package's source digest (the source_digest column of results): "
        "of this tree, or with --at of git commits, read without a checkout; --find lists "
        "the commits whose source has a given digest.",
    )
    which = ap.add_mutually_exclusive_group()  # --find used to drop --at silently
    which.add_argument("--at", nargs="+", metavar="COMMIT", help="commits (or refs) to digest")
    which.add_argument("--find", metavar="DIGEST", help="commits (all refs) with this digest")
    args = ap.parse_args(argv)
    if args.find:
        try:
            found = commits_with_digest(args.find)
        except (ValueError, OSError) as exc:  # a malformed digest: a usage error
            print(f"error: {exc}", file=sys.stderr)
            return 2
        here = _source_digest_here().startswith(args.find.strip().lower())
        for rev in found:
            print(rev)
        if here:
            print(f"(and the working tree {REPO_ROOT})")
        if not found and not here:
            print(f"no commit of {REPO_ROOT} has source digest {args.find}")
            return 1
        return 0
    if not args.at:
        print(f"{source_digest()}  {REPO_ROOT} (working tree, git_commit {git_commit()})")
        return 0
    status = 0
    for commit in args.at:
        try:
            print(f"{source_digest_at(commit)}  {commit}")
        except ValueError as exc:  # e.g. no such commit: the others are still printed
            print(f"error: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    run_main(main)
