"""The ``precision`` command line.

Each subcommand lives in its own module under :mod:`precision.runner.commands` and exposes
``register(subparsers) -> None``, which adds an ``argparse`` sub-parser whose ``func`` default
is called with the parsed arguments and returns the process exit code.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys

from precision.console import silence_closed_stdout, stdout_reader_gone

# Modules providing subcommands, in the order they appear in ``precision --help`` (the
# README's order).
COMMAND_MODULES: list[str] = [
    "precision.runner.commands.run",
    "precision.runner.commands.plot",
    "precision.runner.commands.listing",
    "precision.runner.commands.info",
    "precision.runner.commands.bench",
    "precision.runner.commands.bench_gemm",
    "precision.runner.commands.capture",
    "precision.runner.commands.verify",
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


def _subparser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    """The sub-parser of ``command`` (``parser`` itself when there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]
    return parser


def unrecognized_message(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    """``unrecognized arguments: ...``, with a ``did you mean`` for a mistyped option of
    ``parser``."""
    message = f"unrecognized arguments: {' '.join(extras)}"
    options = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    hints = []
    for extra in extras:
        if extra.startswith("-"):
            close = difflib.get_close_matches(extra.split("=", 1)[0], options, n=1)
            hints += [f"{close[0]}?"] if close else []
    return message + (f" (did you mean {', '.join(hints)})" if hints else "")


def _int_at_least(lowest: int, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < lowest:
        raise argparse.ArgumentTypeError(f"expected an integer >= {lowest}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """``argparse`` type: an integer >= 1 (sizes, repeats, strides)."""
    return _int_at_least(1, text)


def nonnegative_int(text: str) -> int:
    """``argparse`` type: an integer >= 0 (seeds, warm-up calls, sizes where 0 means skip)."""
    return _int_at_least(0, text)


def _command_typo(parser: argparse.ArgumentParser, words: list[str]) -> str | None:
    """``unknown command 'runn'; did you mean 'run'? ...`` when the first word that is not an
    option is no command but close to one (argparse itself lists the commands, no hint)."""
    commands = [c for a in parser._actions if isinstance(a, argparse._SubParsersAction)
                for c in a.choices]  # fmt: skip
    first = next((w for w in words if not w.startswith("-")), None)
    if first is None or first in commands:
        return None
    close = difflib.get_close_matches(first, commands, n=1)
    if not close:
        return None
    return (
        f"unknown command {first!r}; did you mean {close[0]!r}? (commands: {', '.join(commands)})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    typo = _command_typo(parser, sys.argv[1:] if argv is None else list(argv))
    if typo:
        parser.error(typo)
    args, extras = parser.parse_known_args(argv)
    if extras:  # reported by the parser they were given to: its usage, a close option name
        words = sys.argv[1:] if argv is None else list(argv)
        command = getattr(args, "command", None)
        first = extras[0]
        before = command in words and first in words and words.index(first) < words.index(command)
        owner = parser if before else _subparser(parser, command)
        owner.error(unrecognized_message(owner, extras))
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
    except BrokenPipeError:
        if not stdout_reader_gone():  # another pipe broke: not ours to hide
            raise
        return silence_closed_stdout()  # the reader of standard output went away: stop quietly


if __name__ == "__main__":
    sys.exit(main())
