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
        description="Replay every recording (.npz) under PATH through precision.mma and print "
        "a match table per instruction and data kind, with the first mismatches in hex. "
        "Without PATH, capture a fresh set on the attached GPU (new random seed) and verify "
        "that. Exit status 0 only when every output matches.",
    )
    p.add_argument(
        "path",
        nargs="?",
        default=None,
        help="recording directory or .npz file (e.g. tests/data/sm90)",
    )
    p.add_argument(
        "--seed", type=int, default=None, help="seed for a fresh capture (default: random, printed)"
    )
    p.add_argument("--tiles", type=int, default=None, help="tiles for a fresh capture")
    p.add_argument("--show", type=int, default=5, help="mismatches listed per instruction")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the table as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from precision.gpu import unavailable_reason
    from precision.probe.capture import (
        DEFAULT_TILES,
        capture,
        format_table,
        load_recording,
        recording_paths,
        results_json,
        verify_recording,
    )

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
        print(f"capturing a fresh set with seed {seed} into {path}")
        try:
            capture(path, seed=seed, tiles=args.tiles or DEFAULT_TILES, log=print)
        except (RuntimeError, ValueError) as exc:
            print(f"precision verify: capture failed: {exc}", file=sys.stderr)
            return 2
    try:
        paths = recording_paths(path)
        results = []
        for p in paths:
            rec = load_recording(p)
            results.append(verify_recording(rec, max_mismatches=args.show))
    except (OSError, ValueError) as exc:
        print(f"precision verify: {exc}", file=sys.stderr)
        return 2
    print(format_table(results))
    for r in results:
        if r.mismatches:
            print(f"\nfirst mismatches of {r.instr.name} ({r.instr.ptx}):")
            for m in r.mismatches:
                print(m.describe(r.instr.a_fmt.container_bits, r.instr.c_fmt.container_bits))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(
            json.dumps({"path": str(path), "results": results_json(results)}, indent=1) + "\n"
        )
    if tmp is not None:
        tmp.cleanup()
    return 0 if all(r.ok for r in results) else 1
