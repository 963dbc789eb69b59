"""A command-line tool whose reader goes away (``tool | head``) stops without a traceback."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from precision.console import BROKEN_PIPE_STATUS

# Far more output than a pipe buffer holds, so that writing blocks until the reader has gone.
LONG_OUTPUT = "for i in range(200_000): print('line', i)"

SCRIPTS = {
    "run_main": f"""
        from precision.console import run_main
        def main():
            {LONG_OUTPUT}
            return 0
        run_main(main)
    """,
    "precision CLI": f"""
        import sys
        from precision.runner import cli
        def func(args):
            {LONG_OUTPUT}
            return 0
        parser = cli.build_parser()
        parser.set_defaults(func=func)
        cli.build_parser = lambda: parser
        sys.exit(cli.main([]))
    """,
}


@pytest.mark.parametrize("entry", sorted(SCRIPTS))
def test_a_closed_pipe_ends_the_tool_quietly(entry: str) -> None:
    code = textwrap.dedent(SCRIPTS[entry])
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == b"line 0\n"
    proc.stdout.close()  # the reader goes away, as `head -1` does
    stderr = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=60) == BROKEN_PIPE_STATUS
    assert stderr == ""  # no BrokenPipeError traceback, no "Exception ignored" at exit


def test_a_broken_pipe_other_than_stdout_is_not_hidden() -> None:
    # A BrokenPipeError from a subprocess or a Dask connection is an error, not a reader
    # that went away: it keeps its traceback and a failing status.
    code = textwrap.dedent(
        """
        from precision.console import run_main
        def main():
            print("line 0")
            raise BrokenPipeError(32, "Broken pipe (a worker's connection)")
        run_main(main)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout == "line 0\n"
    assert "Traceback" in proc.stderr and "a worker's connection" in proc.stderr
    assert proc.returncode != 0
