"""``precision capture``: record every tensor-core probe family on the attached GPU."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from precision.console import directory_destination_problem


def register(subparsers) -> None:
    from precision.runner.cli import nonnegative_int

    p = subparsers.add_parser(
        "capture",
        help="record tensor-core input/output bit patterns on the attached GPU (sm_75 on)",
        description="Build the probe kernels for the attached GPU's architecture with nvcc and "
        "record every instruction family it runs, each in its own sub-directory with a "
        "manifest: mma/ (fragment-packed mma.sync, every family), wmma/ (the WMMA API), and on "
        "sm_90 also mma_sync/ (the hand-written probes, chains of 4), wgmma/ and wgmma_extra/. "
        "Instructions the assembler refuses are listed with its message.",
    )
    p.add_argument(
        "--out",
        default=None,
        help="output directory, new or empty (default results/capture-seed<N>); a directory "
        "that holds files, such as an earlier capture, is refused, never overwritten",
    )
    p.add_argument(
        "--seed", type=nonnegative_int, default=1, help="generator seed (default: %(default)s)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from precision.gpu import exit_without_gpu

    if exit_without_gpu("precision capture"):
        return 2
    from precision.probe.suite import capture_all

    out = args.out or f"results/capture-seed{args.seed}"
    problem = _holds_files(Path(out)) or directory_destination_problem(out, "--out")
    if problem:  # before the GPU runs: their recordings would have nowhere to go
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        done = capture_all(out, seed=args.seed, log=print)
    except (RuntimeError, ValueError) as exc:
        print(f"error: capture failed: {exc}", file=sys.stderr)
        return 2
    counts = {f: len(v) for f, v in done["families"].items()}
    print(f"wrote {sum(counts.values())} recordings to {out} on sm_{done['compute_capability']}")
    print("  " + ", ".join(f"{f}: {n}" for f, n in counts.items()))
    return 0


def _holds_files(out: Path) -> str | None:
    """The reason ``out`` may not receive a capture: it holds files already (an earlier
    capture, perhaps one the docs cite); None for a new or empty directory."""
    try:
        holds_files = out.is_dir() and any(out.iterdir())
    except OSError as exc:  # unreadable: directory_destination_problem names it next
        return f"--out {out}: cannot read {out} ({exc.strerror or type(exc).__name__})"
    if holds_files:
        return (
            f"--out {out} already holds files (an earlier capture?); a capture is never "
            "written over another: give a new or empty directory with --out"
        )
    return None
