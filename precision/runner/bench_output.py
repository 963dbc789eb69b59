"""Where benchmark results go: a new, dated, host-named file, never a tracked one.

``precision bench`` and ``precision bench-gemm`` write ``results/bench/<kind>_<tag>_<host>_
<YYYYmmdd-HHMMSS>.csv`` unless ``--out`` is given (``tag``: the GPU model for GPU benches,
e.g. ``nvidia-h200``; absent for CPU ones). The file is created exclusively when the results
are written (:func:`precision.runner.store.claim_new`): a bench started in the same second
as another (the stamp is taken at its start) gets ``..._2.csv`` and so on when it finishes,
never the other's file. Such dated files are ignored by git (``.gitignore``), so a bench
leaves ``git status`` clean; the benches of record that the docs cite are committed by hand.
An ``--out`` that names a file tracked by git is refused, so a bench can never overwrite the
numbers the docs cite.
"""

from __future__ import annotations

import datetime as dt
import re
import socket
import subprocess
from pathlib import Path

BENCH_DIR = Path("results/bench")


def slug(text: str) -> str:
    """``text`` as a file-name part: lower case, runs of other characters -> ``-``."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.") or "unknown"


def default_path(kind: str, tag: str | None = None, now: dt.datetime | None = None) -> Path:
    """``results/bench/<kind>[_<tag>]_<host>_<YYYYmmdd-HHMMSS>.csv`` (local time)."""
    stamp = (now or dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    parts = [kind, *([slug(tag)] if tag else []), slug(socket.gethostname().split(".")[0])]
    return BENCH_DIR / f"{'_'.join(parts)}_{stamp}.csv"


def _work_tree_of(path: Path) -> Path | None:
    """The git work tree holding ``path`` (the nearest folder above it with a ``.git``), or
    None outside any."""
    for folder in path.parents:
        if (folder / ".git").exists():
            return folder
    return None


def _git_tracks(path: Path) -> bool | str:
    """Whether git tracks the file ``path`` (resolved), or why git cannot tell: git missing,
    a repository it refuses (another user's checkout, "dubious ownership", is read all the
    same: ``safe.directory``), a timeout."""
    if not path.parent.is_dir():  # (git tracks no file in a folder that does not exist)
        return False
    try:
        res = subprocess.run(
            ["git", "-c", "safe.directory=*", "ls-files", "--error-unmatch", "--", path.name],
            cwd=path.parent,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if res.returncode in (0, 1):  # (1: "did not match any file(s) known to git")
        return res.returncode == 0
    first = (res.stderr or res.stdout).strip().splitlines()
    return f"git exited {res.returncode}: {first[0] if first else 'no message'}"


def check_out(path: Path) -> str | None:
    """None if a bench may write ``path``, else the one-line reason it may not: a directory,
    a file git tracks (numbers the docs cite), or a path inside a git work tree where git
    cannot say whether it tracks it (until 2026-11-28 such a failure let the write through,
    e.g. for a checkout owned by another user)."""
    path = Path(path)
    if path.is_dir():
        return (
            f"--out {path} is a directory; give a file name (or leave out --out for a new, "
            "dated file)"
        )
    resolved = path.resolve()
    tree = _work_tree_of(resolved)
    if tree is None:
        return None
    tracked = _git_tracks(resolved)
    if tracked is True:
        return (
            f"--out {path} is a file tracked by git (numbers the docs cite); write a new "
            "file (leave out --out for a dated one) and commit it deliberately"
        )
    if isinstance(tracked, str):
        return (
            f"--out {path} is inside the git work tree {tree}, but git cannot tell whether "
            f"it tracks that file ({tracked}), so it is not written: write outside the work "
            "tree, or fix git"
        )
    return None
