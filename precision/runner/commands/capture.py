"""``precision capture``: record raw-bit mma.sync vectors on the attached GPU."""

from __future__ import annotations

import argparse
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "capture",
        help="record tensor-core (mma.sync) input/output bit patterns on the attached sm_90 GPU",
        description="Build probe/cuda/mma_sync_probe.cu with nvcc -arch=sm_90 -cubin, run every "
        "probe instruction on seeded inputs of every data kind, check the fragment layout "
        "against exact small-integer arithmetic, and write one .npz per instruction plus "
        "manifest.json.",
    )
    p.add_argument("--out", default=None, help="output directory (default results/capture-seed<N>)")
    p.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    p.add_argument(
        "--tiles",
        type=int,
        default=None,
        help="16x8 tiles per single instruction (default 796 = 101,888 outputs; "
        "chained recordings get a fifth)",
    )
    p.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        default=None,
        help="record only these instructions (e.g. f16_f32 tf32_f32_x4)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from precision.probe.capture import DEFAULT_TILES, capture

    out = args.out or f"results/capture-seed{args.seed}"
    try:
        manifest = capture(
            out, seed=args.seed, tiles=args.tiles or DEFAULT_TILES, names=args.only, log=print
        )
    except (RuntimeError, ValueError) as exc:
        print(f"precision capture: {exc}", file=sys.stderr)
        return 2
    n = sum(v["outputs"] for v in manifest["instructions"].values())
    print(
        f"wrote {len(manifest['instructions'])} recordings ({n} outputs) to {out} "
        f"on {manifest['gpu']} (driver {manifest['driver']}, CUDA {manifest['cuda']})"
    )
    return 0
