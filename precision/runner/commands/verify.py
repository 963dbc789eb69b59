"""``precision verify``: replay recorded tensor-core vectors through ``precision.mma``."""

from __future__ import annotations

import argparse
import json
import secrets
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
        "seed) and verify that. Exit status 0 only when every output matches.",
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
        help="also write the table as JSON (checked to be writable before the replay)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from precision.console import file_destination_problem
    from precision.gpu import exit_without_gpu, require_gpu
    from precision.probe.suite import capture_all, format_rows, verify_dir
    from precision.runner.store import StoreError, atomic_write

    if args.path is not None and args.seed is not None:  # it would be ignored, silently
        print("error: --seed applies to a fresh capture (no PATH); a recording keeps the "
              "seed it was made with", file=sys.stderr)  # fmt: skip
        return 2
    if args.json:  # before the replay: a destination that cannot be written costs nothing
        problem = file_destination_problem(args.json, "--json")
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    if args.device == "gpu" and exit_without_gpu("precision verify --device gpu"):
        return 2
    tmp = None
    path = args.path
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
        tmp = tempfile.TemporaryDirectory(prefix="precision-capture-")
        path = tmp.name
        print(f"capturing every family with seed {seed} into {path}")
        try:
            capture_all(path, seed=seed, log=print)
        except (RuntimeError, ValueError) as exc:
            print(f"error: capture failed: {exc}", file=sys.stderr)
            return 2
    try:
        rows = verify_dir(path, device=args.device)
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_rows(rows))
    status = 0 if all(r.matches == r.outputs for r in rows) else 1
    if args.json:
        table = {"path": str(path), "device": args.device, "rows": [asdict(r) for r in rows]}
        text = json.dumps(table, indent=1) + "\n"
        try:
            atomic_write(Path(args.json), lambda tmp: tmp.write_text(text, encoding="utf-8"))
        except StoreError as exc:  # the table is printed above: nothing computed is lost
            print(f"error: --json: {exc}", file=sys.stderr)
            status = 2
    if tmp is not None:
        tmp.cleanup()
    return status
