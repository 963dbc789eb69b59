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


def is_tracked(path: Path) -> bool:
    """True if git tracks ``path`` (False outside a git work tree or without git)."""
    path = Path(path).resolve()
    try:
        res = subprocess.run(
            ["git", "ls-files", "--error-unmatch", path.name],
            cwd=path.parent if path.parent.is_dir() else None,
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return path.parent.is_dir() and res.returncode == 0


def check_out(path: Path) -> str | None:
    """None if a bench may write ``path``, else the one-line reason it may not."""
    if is_tracked(path):
        return (
            f"--out {path} is a file tracked by git (numbers the docs cite); write a new "
            "file (leave out --out for a dated one) and commit it deliberately"
        )
    return None
