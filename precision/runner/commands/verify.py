"""``precision verify``: replay recorded tensor-core vectors through ``precision.mma``.

Without PATH it captures every family afresh on the attached GPU (a new random seed unless
``--seed``) into a new temporary directory and verifies that: the capture is removed when
every output matches, and kept (its path printed) when one differs or the replay fails, so
the outputs that disagreed can be looked at and replayed again. ``--json FILE`` writes the
table to a new file: an existing path, a file git tracks and a recording being verified are
refused before the replay. For a fresh capture the JSON records its seed (what reproduces
it) and the kept capture's path (null where it was removed).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import sys
import tempfile
from pathlib import Path


def register(subparsers) -> None:
    from precision.runner.cli import nonnegative_int

    p = subparsers.add_parser(
        "verify",
        help="compare precision.mma bit for bit with recorded tensor-core outputs",
        description="Replay every recording under PATH (a directory made by precision capture, "
        "one family's directory such as tests/data/sm90, or one .npz recording inside such a "
        "directory) through the emulator and print a match table per instruction and data "
        "kind. Without PATH, capture every family afresh on the attached GPU (new random "
        "seed) into a temporary directory and verify that; the capture is kept (and its "
        "path printed) when an output differs, removed otherwise. Exit status 0 only when "
        "every output matches.",
    )
    p.add_argument(
        "path",
        nargs="?",
        default=None,
        help="recording directory (a precision capture --out directory, or one family's, e.g. "
        "tests/data/sm90), or one .npz recording inside one",
    )
    p.add_argument(
        "--seed",
        type=nonnegative_int,
        default=None,
        help="seed for a fresh capture (default: random, printed)",
    )
    p.add_argument(
        "--device",
        choices=("cpu", "gpu"),
        default="cpu",
        help="replay through the CPU engine (default) or precision.mma's GPU engine; with gpu, "
        "recordings only a CPU model replays (WMMA's integer and f64 probes) are still verified "
        "on the CPU, and their rows say so",
    )
    p.add_argument(
        "--json",
        default=None,
        metavar="FILE",
        help="also write the table as JSON to FILE, a new file (an existing one, a file git "
        "tracks or a recording being verified is refused before the replay); for a fresh "
        "capture it records the seed",
    )
    p.set_defaults(func=run)


def json_destination_problem(dest: Path, inputs: str | None) -> str | None:
    """None if ``--json`` may write the new file ``dest``, else the one-line reason it may
    not: a directory, no writable folder (:func:`precision.console.file_destination_problem`),
    one of the ``inputs`` being verified (PATH, or a file under it), a file git tracks (or a
    path in a work tree where git cannot tell: :func:`precision.runner.bench_output.check_out`),
    or any existing path (verify writes new files and replaces none)."""
    from precision.console import file_destination_problem
    from precision.runner.bench_output import check_out

    problem = file_destination_problem(dest, "--json")
    if problem:
        return problem
    exists = os.path.lexists(dest)
    if inputs is not None and exists:
        root, here = Path(inputs).resolve(), dest.resolve()
        if here == root or root in here.parents:
            return (
                f"--json {dest}: is one of the files being verified ({inputs}); "
                "choose a new file name"
            )
    if check_out(dest) is not None:
        return (
            f"--json {dest}: a file git tracks (or git cannot tell whether it does), not "
            "replaced: choose a new file name"
        )
    if exists:
        return f"--json {dest}: exists (verify replaces no file): choose a new file name"
    return None


def write_new(dest: Path, text: str) -> None:
    """Write ``text`` to ``dest``, a new file: whole or not at all (a temporary file beside
    it, then hard-linked to ``dest``), never replacing a file that appeared meanwhile
    (``FileExistsError``). Where the file system has no hard links, ``dest`` is created
    exclusively and written."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # (mode: umask applies)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        try:
            os.link(tmp, dest)
        except FileExistsError:
            raise
        except OSError:  # no hard links here: an exclusive create
            with open(dest, "x", encoding="utf-8") as fh:
                fh.write(text)
    finally:
        tmp.unlink(missing_ok=True)


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from precision.gpu import exit_without_gpu, require_gpu
    from precision.probe.suite import capture_all, format_rows, verify_dir
    from precision.runner.store import os_error_reason

    if args.path is not None and args.seed is not None:  # it would be ignored, silently
        print("error: --seed applies to a fresh capture (no PATH); a recording keeps the "
              "seed it was made with", file=sys.stderr)  # fmt: skip
        return 2
    if args.json:  # before the replay: a destination that cannot be written costs nothing
        problem = json_destination_problem(Path(args.json), args.path)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    if args.device == "gpu" and exit_without_gpu("precision verify --device gpu"):
        return 2
    path = args.path
    seed = None
    capture: dict = {}
    if path is None:
        try:
            require_gpu("precision verify without PATH (a fresh capture)")
        except RuntimeError as exc:
            why = " ".join(str(exc).split())
            print(
                f"error: {why} Or pass a recording directory such as tests/data/sm90.",
                file=sys.stderr,
            )
            return 2
        seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
        path = tempfile.mkdtemp(prefix="precision-capture-")
        print(f"capturing every family with seed {seed} into {path}")
    keep = False  # a complete fresh capture that disagrees, or cannot be replayed, is kept
    try:
        if seed is not None:
            try:
                capture = capture_all(path, seed=seed, log=print)
            except (RuntimeError, ValueError) as exc:  # an incomplete capture: removed
                print(f"error: capture failed: {exc}", file=sys.stderr)
                return 2
        try:
            rows = verify_dir(path, device=args.device)
        except (OSError, ValueError, RuntimeError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            keep = seed is not None
            return 2
        print(format_rows(rows))
        status = 0 if all(r.matches == r.outputs for r in rows) else 1
        keep = seed is not None and status != 0
        if args.json:
            table: dict = {"path": str(path), "device": args.device}
            if seed is not None:  # what reproduces a fresh capture: the seed, on that GPU
                table = {
                    "path": str(path) if keep else None,  # removed unless kept
                    "seed": seed,
                    "compute_capability": capture.get("compute_capability"),
                    "device": args.device,
                }
            table["rows"] = [asdict(r) for r in rows]
            text = json.dumps(table, indent=1) + "\n"
            try:
                write_new(Path(args.json), text)
            except OSError as exc:  # the table is printed above: nothing computed is lost
                why = (
                    "a file of that name appeared during the replay; not replaced"
                    if isinstance(exc, FileExistsError)
                    else f"cannot write ({os_error_reason(exc)})"
                )
                print(f"error: --json {args.json}: {why}", file=sys.stderr)
                status = 2
        return status
    finally:
        if keep:
            print(
                f"the capture is kept in {path} (seed {seed}): precision verify {path} replays it"
            )
        elif seed is not None:
            shutil.rmtree(path, ignore_errors=True)
