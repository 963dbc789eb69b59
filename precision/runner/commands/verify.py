"""``precision verify``: replay recorded tensor-core vectors through ``precision.mma``."""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import tempfile
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "verify",
        help="compare precision.mma bit for bit with recorded tensor-core outputs",
        description="Replay every recording under PATH (a capture directory, or one family's "
        "directory such as tests/data/sm90) through the emulator and print a match table per "
        "instruction and data kind. Without PATH, capture every family afresh on the attached "
        "GPU (new random seed) and verify that. Exit status 0 only when every output matches.",
    )
    p.add_argument(
        "path",
        nargs="?",
        default=None,
        help="recording directory (e.g. tests/data/sm90, or a precision capture --out directory)",
    )
    p.add_argument(
        "--seed", type=int, default=None, help="seed for a fresh capture (default: random, printed)"
    )
    p.add_argument(
        "--device",
        choices=("cpu", "gpu"),
        default="cpu",
        help="replay through the CPU engine (default) or precision.mma's GPU engine; with gpu, "
        "recordings only a CPU model replays (WMMA's integer and f64 probes) are still verified "
        "on the CPU, and their rows say so",
    )
    p.add_argument("--json", default=None, metavar="FILE", help="also write the table as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from precision.gpu import unavailable_reason
    from precision.probe.suite import capture_all, format_rows, verify_dir

    tmp = None
    path = args.path
    if path is None:
        reason = unavailable_reason()
        if reason is not None:
            print(
                f"precision verify: no PATH given and no GPU to capture from ({reason}); "
                f"pass a recording directory such as tests/data/sm90",
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
            print(f"precision verify: capture failed: {exc}", file=sys.stderr)
            return 2
    try:
        rows = verify_dir(path, device=args.device)
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"precision verify: {exc}", file=sys.stderr)
        return 2
    print(format_rows(rows))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(
            json.dumps(
                {"path": str(path), "device": args.device, "rows": [asdict(r) for r in rows]},
                indent=1,
            )
            + "\n"
        )
    if tmp is not None:
        tmp.cleanup()
    return 0 if all(r.matches == r.outputs for r in rows) else 1
