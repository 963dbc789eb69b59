"""How the command-line tools end: a reader that goes away (``tool | head``) stops the output
quietly, without a ``BrokenPipeError`` traceback."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import NoReturn

#: Exit status after the reader of standard output went away (as for any other failure).
BROKEN_PIPE_STATUS = 1


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
        status = silence_closed_stdout()
    sys.exit(status)
