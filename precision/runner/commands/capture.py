"""``precision capture``: record every tensor-core probe family on the attached GPU."""

from __future__ import annotations

import argparse
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "capture",
        help="record tensor-core input/output bit patterns on the attached GPU (sm_75 on)",
        description="Build the probe kernels for the attached GPU's architecture with nvcc and "
        "record every instruction family it runs, each in its own sub-directory with a "
        "manifest: mma/ (fragment-packed mma.sync, every family), wmma/ (the WMMA API), and on "
        "sm_90 also mma_sync/ (the hand-written probes, chains of 4), wgmma/ and wgmma_extra/. "
        "Instructions the assembler refuses are listed with its message.",
    )
    p.add_argument("--out", default=None, help="output directory (default results/capture-seed<N>)")
    p.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from precision.gpu import unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        print(f"precision capture: needs an NVIDIA GPU ({reason})", file=sys.stderr)
        return 2
    from precision.probe.suite import capture_all

    out = args.out or f"results/capture-seed{args.seed}"
    try:
        done = capture_all(out, seed=args.seed, log=print)
    except (RuntimeError, ValueError) as exc:
        print(f"precision capture: {exc}", file=sys.stderr)
        return 2
    counts = {f: len(v) for f, v in done["families"].items()}
    print(f"wrote {sum(counts.values())} recordings to {out} on sm_{done['compute_capability']}")
    print("  " + ", ".join(f"{f}: {n}" for f, n in counts.items()))
    return 0
