"""``precision info``: versions, git commit, GPU and CUDA of this machine."""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``info`` sub-command."""
    p = subparsers.add_parser(
        "info",
        help="show package/library versions, git commit, GPU and CUDA",
        description="Print the provenance recorded with every result: package version, git "
        "commit, source digest, host, Python/numpy/ml_dtypes versions, numpy's BLAS, GPU, "
        "driver, CUDA and CuPy; then the versions of the libraries that read, write and draw "
        "results (recorded per run in provenance.json).",
    )
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Print provenance; return 0."""
    from precision.provenance import collect, library_versions

    info = collect()
    info.pop("seed", None)
    info.update(library_versions())
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    width = max(map(len, info))
    for key, value in info.items():
        print(f"{key:<{width}} {value if value is not None else '-'}")
    return 0
