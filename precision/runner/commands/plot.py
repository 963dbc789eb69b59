"""``precision plot RESULTS_DIR``: redraw the figures of a results directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from precision.runner.plotting import plot_results


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``plot`` sub-command."""
    p = subparsers.add_parser(
        "plot",
        help="draw the figures of a results directory",
        description="Read RESULTS_DIR/results.parquet (combining the stored points first if "
        "a run was interrupted) and write error-vs-size (and TFLOP/s-vs-size) figures as PNG "
        "and PDF under RESULTS_DIR/figures/.",
    )
    p.add_argument("results_dir", metavar="RESULTS_DIR", help="e.g. results/quickstart")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Plot; return the exit code."""
    root = Path(args.results_dir)
    table_path = root / "results.parquet"
    if not table_path.exists() and (root / "config.toml").exists() and (root / "points").is_dir():
        # An interrupted run: combine the points it stored first.
        from precision.runner.config import load_config
        from precision.runner.runner import combine_results
        from precision.runner.store import ResultsDir

        combine_results(load_config(root / "config.toml"), ResultsDir(root.parent, root.name))
    if not table_path.exists():
        print(f"error: {table_path} does not exist (run the config first)", file=sys.stderr)
        return 2
    table = pd.read_parquet(table_path)
    title = str(table["name"].iloc[0]) if "name" in table and len(table) else root.name
    paths = plot_results(table, root / "figures", title=title)
    if not paths:
        print(f"error: {table_path} has no successful rows to plot", file=sys.stderr)
        return 1
    for path in paths:
        print(f"figure: {path}")
    return 0
