"""What every command-line tool shares: an output destination checked before the work, and an
end without a ``BrokenPipeError`` traceback when the reader goes away (``tool | head``)."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

#: Exit status after the reader of standard output went away (as for any other failure).
BROKEN_PIPE_STATUS = 1


def file_destination_problem(path: str | os.PathLike[str], option: str) -> str | None:
    """None if a file can be written at ``path`` (its directory is created if missing), else
    the one-line reason why not, naming ``option`` (``--out``): asked before the work whose
    results the file would hold, so that a mistyped destination costs nothing."""
    path = Path(path)
    if path.is_dir():
        return f"{option} {path}: is a directory; expected a file name"
    return directory_destination_problem(path.parent, option, shown=path)


def directory_destination_problem(
    path: str | os.PathLike[str], option: str, *, shown: str | os.PathLike[str] | None = None
) -> str | None:
    """None if files can be created in directory ``path``, else the one-line reason why not,
    naming ``option`` and ``shown`` (default: ``path``). Tried by creating and removing a
    temporary file there, so permissions, read-only file systems and a file in the way all
    count. Directories it had to create for the trial are removed again (the writer creates
    them when it writes), so a run refused later leaves nothing behind. A ``path`` that is a
    file is named as such (for a file's folder, ``shown`` given, the OS's reason is kept)."""
    path = Path(path)
    if shown is None and path.exists() and not path.is_dir():
        return f"{option} {path}: not a directory (expected a directory name)"
    created = [p for p in (path, *path.parents) if not p.exists()]
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".precision-write-test.", delete=True):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        return f"{option} {shown or path}: cannot write in {path} ({why})"
    finally:
        for made in created:  # deepest first
            with contextlib.suppress(OSError):
                made.rmdir()
    return None


def stdout_reader_gone() -> bool:
    """True when standard output is a pipe whose reader has closed it (``poll`` reports an
    error on the write end); False for a live pipe, a terminal or a file, and where ``poll``
    is missing. Tells a closed ``| head`` apart from a ``BrokenPipeError`` of some other pipe
    (a subprocess, a Dask connection), which must not be silenced."""
    import select

    if not hasattr(select, "poll"):
        return False
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))
    except (OSError, ValueError):  # no file descriptor behind sys.stdout
        return False


def silence_closed_stdout() -> int:
    """Point standard output at the null device (so that Python's final flush does not report
    the closed pipe again) and return :data:`BROKEN_PIPE_STATUS`."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return BROKEN_PIPE_STATUS


def run_main(main: Callable[[], int | None]) -> NoReturn:
    """Exit with ``main()``'s status (``None`` meaning 0); if standard output is a pipe whose
    reader has gone, stop without a traceback and exit with :data:`BROKEN_PIPE_STATUS`."""
    try:
        status = main()
        sys.stdout.flush()  # a closed pipe shows here, not during interpreter shutdown
    except BrokenPipeError:
        if not stdout_reader_gone():
            raise
        status = silence_closed_stdout()
    sys.exit(status)
