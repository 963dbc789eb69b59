"""The ``precision`` command line.

Each subcommand lives in its own module under :mod:`precision.runner.commands` and exposes
``register(subparsers) -> None``, which adds an ``argparse`` sub-parser whose ``func`` default
is called with the parsed arguments and returns the process exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from precision.console import silence_closed_stdout

# Modules providing subcommands, in the order they appear in ``precision --help``.
COMMAND_MODULES: list[str] = [
    "precision.runner.commands.run",
    "precision.runner.commands.plot",
    "precision.runner.commands.listing",
    "precision.runner.commands.info",
    "precision.runner.commands.capture",
    "precision.runner.commands.verify",
    "precision.runner.commands.bench_gemm",
    "precision.runner.commands.bench",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="precision",
        description="Bit-exact tensor-core emulation, GPU GEMM kernels and accuracy experiments.",
    )
    from precision import __version__

    parser.add_argument("--version", action="version", version=f"precision {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe (``precision list | head``) shows here
        return status
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of standard output went away: stop quietly
        return silence_closed_stdout()


if __name__ == "__main__":
    sys.exit(main())
