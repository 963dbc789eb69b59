"""``precision run CONFIG.toml``: run (or resume) a config-driven sweep."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from precision.runner.config import ConfigError, load_config
from precision.runner.runner import (
    EXECUTORS,
    RunInterrupted,
    RunnerError,
    RunProgress,
    run_experiment,
)
from precision.runner.store import StoreError, file_in_the_way


def _seconds(text: str) -> float:
    """``argparse`` type of ``--wait``: a number of seconds >= 0 (``inf``: wait for as long as
    it takes)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= 0:  # (NaN too)
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``run`` sub-command."""
    p = subparsers.add_parser(
        "run",
        help="run or resume the sweep described by a TOML config",
        description="Run every sweep point of CONFIG that is not yet stored under "
        "RESULTS_DIR/<name>/ (one parquet file per point), then write results.parquet, "
        "results.csv and the figures. Rerunning skips finished points.",
    )
    p.add_argument("config", metavar="CONFIG.toml", help="experiment config (TOML)")
    p.add_argument("--force", action="store_true", help="recompute points that are already stored")
    p.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="where points run: this process (local, default) or a Dask cluster",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="parallel workers (local: default 1, every point computed in this process; a "
        "process pool when N > 1. dask: LocalCluster workers, default one per core; with "
        "--gpus: CPU workers beside the GPU workers, default 0). Timings are only meaningful "
        "with one job (TFLOP/s figures note a count above one).",
    )
    p.add_argument(
        "--gpus",
        default=None,
        metavar="all|N|LIST",
        help="with --executor dask: one single-threaded worker per GPU (all visible GPUs, the "
        "first N, or a comma-separated list of indices/UUIDs), each with CUDA_VISIBLE_DEVICES "
        "set to its GPU; GPU points run only there, one at a time per GPU",
    )
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="address of a running Dask scheduler (with --executor dask)",
    )
    p.add_argument(
        "--results-dir",
        default="results",
        metavar="ROOT",
        help="root of the results directories (default: ./results)",
    )
    p.add_argument(
        "--wait",
        type=_seconds,
        default=0.0,
        metavar="SECONDS",
        help="if another run holds the results directory, wait up to SECONDS for it (inf: "
        "no limit), saying so on stderr (default 0: refuse at once)",
    )
    p.add_argument(
        "--no-plots",
        action="store_true",
        help="skip writing the figures and the summary tables (figures/summary.csv, .md, "
        ".tex); `precision plot` writes them later",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar, and no 'still waiting' lines while --wait waits (the bar is "
        "shown only where stderr is a terminal anyway)",
    )
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Validate the config, run the sweep, print a summary; return the exit code."""
    for flag in ("scheduler", "gpus"):
        if getattr(args, flag) and args.executor != "dask":
            print(f"error: --{flag} needs --executor dask", file=sys.stderr)
            return 2
    problem = _not_a_directory(Path(args.results_dir))
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        config = load_config(args.config)
        summary = run_experiment(
            config,
            args.results_dir,
            force=args.force,
            executor=args.executor,
            jobs=args.jobs,
            scheduler=args.scheduler,
            gpus=args.gpus,
            progress=not args.quiet,
            plots=not args.no_plots,
            lock_wait=args.wait,
        )
    except (ConfigError, RunnerError, StoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except RunInterrupted as exc:
        print(interrupted_message(exc.progress), file=sys.stderr)
        return 130
    attempted = [f"{summary.computed} computed"]
    if summary.unavailable:
        attempted.append(f"{summary.unavailable} unavailable here (not computed)")
    if summary.errors:
        attempted.append(f"{summary.errors} failed")
    if summary.not_run:
        attempted.append(f"{summary.not_run} not run (see the warnings; rerun to compute them)")
    if summary.kept:
        failed = len(summary.kept_after_error)
        attempted.append(
            f"{summary.kept} could not be recomputed here (--force; {failed} of them failed), "
            "so their stored results were kept"
        )
    print(
        f"{summary.total} points: {', '.join(attempted)}, {summary.skipped} already "
        f"done; status {summary.status_counts}"
    )
    for line in summary.kept_after_error[:10]:
        print(f"  failed, earlier result kept: {line}")
    for reason, count in list(summary.problems.items())[:10]:
        print(f"  {count} point(s) {reason}")
    if len(summary.problems) > 10:
        print(f"  ... and {len(summary.problems) - 10} more reasons (see the 'error' column)")
    print(f"results: {summary.results_dir / 'results.parquet'} (+ .csv)")
    for fig in summary.figures:
        print(f"{'table' if fig.stem.endswith('summary') else 'figure'}:  {fig}")
    figures_dir = summary.results_dir / "figures"
    if args.no_plots and summary.computed and figures_dir.is_dir() and any(figures_dir.iterdir()):
        # (a resumed run's table grew: the figures there were drawn from an earlier one)
        print(
            f"note: {figures_dir} was drawn from the table before this run's "
            f"{summary.computed} point(s) (--no-plots); `precision plot {summary.results_dir}` "
            "redraws it"
        )
    if not args.no_plots and not summary.figures and summary.status_counts:
        print(
            f"figures: none: no point has a value to draw (status {summary.status_counts}); "
            f"a run that computes them draws them, or `precision plot {summary.results_dir}`"
        )
    return 1 if summary.failed or summary.not_run else 0


def _not_a_directory(root: Path) -> str | None:
    """``--results-dir ROOT is a file, not a directory`` where ``ROOT`` (or a folder above
    it) is a file, else None. (The run would fail at its first write, naming a path below.)"""
    blocker = file_in_the_way(root)
    if blocker is None:
        return None
    if blocker == root:
        return f"--results-dir {root} is a file, not a directory"
    return f"--results-dir {root}: {blocker} is a file, not a directory"


def interrupted_message(progress: RunProgress) -> str:
    """What a Ctrl-C of ``precision run`` prints: what is stored and how to resume."""
    where = progress.results_dir / "points"
    total = progress.total
    if progress.phase == "wait":
        return (
            f"interrupted while waiting for the run holding {progress.results_dir}; this run "
            "wrote nothing"
        )
    if progress.phase in ("start", "setup"):
        return (
            "interrupted before computing any point; run the same command again to start "
            "(points already stored are not recomputed)"
        )
    if progress.force:
        return (
            f"interrupted: this run recomputed {progress.stored} of {total} points (stored in "
            f"{where}); the other {total - progress.stored} keep what was stored for them "
            "before, if anything. Run the same command again to recompute all of them, or "
            "drop --force to compute only the points not yet stored"
        )
    if progress.stored >= total:
        if progress.phase == "plots":
            todo = f"draw the figures (or `precision plot {progress.results_dir}`)"
        else:
            todo = "write the table and figures" if progress.plots else "write the table"
        return (
            f"interrupted: all {total} points are stored in {where}; run the same command "
            f"again to {todo} (no point is recomputed)"
        )
    return (
        f"interrupted: {progress.stored} of {total} points are stored in {where}; run the same "
        f"command again to compute the other {total - progress.stored} (stored points are not "
        "recomputed)"
    )
