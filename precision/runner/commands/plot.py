"""``precision plot RESULTS_DIR``: redraw the figures and summary tables of a results directory.

What the figures show comes from, in increasing priority: the defaults of
:class:`~precision.runner.figures.PlotSpec`, the ``[plot]`` table of ``RESULTS_DIR/config.toml``
and the command-line options; all three are validated by the same code.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from precision.runner.figures import DIMENSIONS, FILE_FORMATS, METRICS, X_AXES, parse_plot


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``plot`` sub-command."""
    p = subparsers.add_parser(
        "plot",
        help="draw the figures and summary tables of a results directory",
        description="Read RESULTS_DIR/results.parquet (combining the stored points first if "
        "a run was interrupted) and write one figure per metric (error or TFLOP/s against "
        "size) and the summary tables (median over repeats: summary.csv, .md, .tex, which "
        "keep the tables of metrics summarised there before) under RESULTS_DIR/figures/ (or "
        "--out). Options override the [plot] table of RESULTS_DIR/config.toml.",
    )
    p.add_argument("results_dir", metavar="RESULTS_DIR", help="e.g. results/quickstart")
    dims = ", ".join(DIMENSIONS)
    p.add_argument(
        "--metric",
        action="append",
        type=_csv,
        help=f"y axis; repeat or comma-separate for several figures ({', '.join(METRICS)}; "
        "default err_fro and, when timed, tflops)",
    )
    p.add_argument("--x", help=f"x axis ({', '.join(X_AXES)}; default auto)")
    p.add_argument("--hue", help=f"what the colour shows ({dims}; default method)")
    p.add_argument("--style", help="what line style and marker show (default format)")
    p.add_argument("--col", help="what the panel columns show (default distribution)")
    p.add_argument("--row", help="what the panel rows show (default none)")
    p.add_argument(
        "--sharey",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="one y range for all panels (TFLOP/s: per device); default --sharey",
    )
    p.add_argument(
        "--size",
        nargs=2,
        type=float,
        metavar=("W", "H"),
        help="figure width and height in inches, legend included; a size too small for "
        "the figure is enlarged to the least that holds it, with a warning",
    )
    p.add_argument(
        "--format",
        action="append",
        type=_csv,
        help=f"file formats; repeat or comma-separate ({', '.join(FILE_FORMATS)}; "
        "default png,pdf; pgf needs a TeX installation)",
    )
    p.add_argument("--dodge", type=float, help="horizontal spread of the series, 0..1 (0.5)")
    p.add_argument("--dpi", type=int, help="PNG resolution (default 200)")
    p.add_argument("--title", help='figure title (default: the experiment name; "" for none)')
    p.add_argument("--out", metavar="DIR", help="write here instead of RESULTS_DIR/figures")
    p.add_argument(
        "--prefix", default="", help="file name prefix, e.g. quickstart_ -> quickstart_err_fro.png"
    )
    p.set_defaults(func=main)


def _options(args: argparse.Namespace) -> dict:
    """The plot keys given on the command line, as a ``[plot]`` table."""
    table: dict = {}
    if args.metric:
        table["metric"] = [m for group in args.metric for m in group]
    if args.format:
        table["format"] = [f for group in args.format for f in group]
    if args.size:
        table["size"] = list(args.size)
    for key in ("x", "hue", "style", "col", "row", "sharey", "dodge", "dpi", "title"):
        value = getattr(args, key)
        if value is not None:
            table[key] = value
    return table


class _OptionError(ValueError):
    pass


def _fail_option(where: str, message: str):
    raise _OptionError(f"{where}: {message}")


def _load_table(root: Path) -> pd.DataFrame | None:
    """The results table of ``root``, rebuilt from the stored points when it is missing,
    unreadable or older than one of them (an interrupted or resumed run); None (with a
    message) when there is none."""
    from precision.runner.store import DirectoryInUse, StoreError, recombine

    problem = _not_a_results_dir(root)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return None
    notes: list[str] = []
    try:
        table = recombine(root, notes=notes)
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        return table
    except DirectoryInUse as exc:  # its table is being rewritten: the run draws the figures
        print(
            f"error: {root} is being written by another run ({exc.holder}), which draws the "
            "figures when it ends; run precision plot again after that",
            file=sys.stderr,
        )
        return None
    except StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def _not_a_results_dir(root: Path) -> str | None:
    """Why ``root`` is not a results directory, saying which one to give instead (a config
    file names its own; a folder of results directories lists them; a misspelt name gets
    the closest one; any other folder is named as none); None when it may be one (it holds
    a table, points, a config or the lock of a run that has just started)."""
    import difflib

    if root.is_file():
        if root.suffix == ".toml":
            import tomllib

            try:
                name = tomllib.loads(root.read_text(encoding="utf-8")).get("name", "<name>")
            except (OSError, ValueError):
                name = "<name>"
            return (
                f"{root} is a config file; plot takes the results directory its run writes: "
                f"precision plot results/{name} (or <--results-dir>/{name})"
            )
        return f"{root} is a file, not a results directory (one holding results.parquet)"
    if not root.is_dir():
        siblings = (
            [d.name for d in root.parent.iterdir() if d.is_dir()] if root.parent.is_dir() else []
        )
        close = difflib.get_close_matches(root.name, siblings, n=1, cutoff=0.6)
        hint = f"; did you mean {str(root.parent / close[0])!r}?" if close else ""
        return f"{root} does not exist{hint} (run the config first)"
    if any((root / name).exists() for name in ("results.parquet", "points", "config.toml")):
        return None
    inner = sorted(d.name for d in root.iterdir() if (d / "results.parquet").exists())
    if inner:
        shown = ", ".join(inner[:8]) + (f" and {len(inner) - 8} more" if len(inner) > 8 else "")
        return f"{root} holds results directories ({shown}); plot one of them: {root / inner[0]}"
    if (root / ".lock").exists():
        return None  # a run that has just started: recombine says it is in use
    return (
        f"{root} is not a results directory: it holds no results.parquet, points/ or "
        "config.toml (precision run CONFIG writes them to results/<name>/)"
    )


def main(args: argparse.Namespace) -> int:
    """Plot; return the exit code."""
    from precision.runner.config import ConfigError
    from precision.runner.figures import plot_table_of
    from precision.runner.plot_frame import check_table
    from precision.runner.plot_notes import read_runs
    from precision.runner.plotting import check_formats, plot_results
    from precision.runner.store import StoreError

    root = Path(args.results_dir)
    try:
        config_path = root / "config.toml"
        table = plot_table_of(config_path) if config_path.exists() else {}
        parse_plot(table, _fail_config(config_path))  # the config's own table must be valid
        table.update(_options(args))
        spec = parse_plot(table, _fail_option, where=lambda key: f"--{key}")
        check_formats(spec.formats)
    except (ConfigError, _OptionError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    results = _load_table(root)
    if results is None:
        return 2
    problems = check_table(results, spec)
    if problems:
        given = _options(args)
        key, message = problems[0]
        value = getattr(spec, key)
        where = f"--{key} {value}" if key in given else f"[plot] {key} = {value!r} in {config_path}"
        print(f"error: {where}: {message}", file=sys.stderr)
        return 2
    counts = _missing_points(config_path, results)
    incomplete = None
    if counts:
        stored, total = counts
        print(
            f"note: {stored} of {total} points of {config_path} are stored; {total - stored} "
            "missing (run the config to compute them; the stored points are kept); the figures "
            "and tables say that they are incomplete",
            file=sys.stderr,
        )
        incomplete = [f"incomplete: {stored} of the config's {total} points are stored"]
    title = str(results["name"].iloc[0]) if "name" in results and len(results) else root.name
    out = Path(args.out) if args.out else root / "figures"
    notes: list[str] = []
    try:
        paths = plot_results(
            results,
            out,
            title=title,
            spec=spec,
            prefix=args.prefix,
            notes=notes,
            runs=read_runs(root),  # TFLOP/s figures say when timings shared the machine
            caveats=incomplete,
        )
    except ValueError as exc:  # e.g. --x size on non-square shapes
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:  # read-only directory, full disk: earlier files are kept
        elsewhere = "another --out DIR" if args.out else "--out DIR"
        print(f"error: {exc}; use {elsewhere} to write the figures elsewhere", file=sys.stderr)
        return 2
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if not paths:
        print(f"error: {root / 'results.parquet'} has no successful rows to plot"
              f"{_statuses(results)}", file=sys.stderr)  # fmt: skip
        return 1
    for path in paths:
        print(f"{'table' if path.stem.endswith('summary') else 'figure'}: {path}")
    return 0


def _statuses(results: pd.DataFrame) -> str:
    """ " (N points: status count, ...; ...)" for a table whose points have none to draw:
    how many points have which status, and where the reason is ("" without a status)."""
    from precision.runner.summary import point_statuses

    if "status" not in results or results.empty:
        return ""
    counts = point_statuses(results)
    listed = ", ".join(f"{status} {count}" for status, count in counts.items())
    return f" ({sum(counts.values())} points: {listed}; the 'error' column says why)"


def _missing_points(config_path: Path, results: pd.DataFrame) -> tuple[int, int] | None:
    """(stored, total): how many of the points of ``config_path`` ``results`` holds, when
    some are missing (a run that was interrupted or is still going); None when none is (or
    there is no readable config to tell)."""
    from precision.runner.config import ConfigError, load_config
    from precision.runner.sweep import expand

    if not config_path.exists():
        return None
    try:
        ids = {point.id for point in expand(load_config(config_path, check_plot=False))}
    except (ConfigError, ValueError):
        return None
    stored = ids & set(results["point_id"].astype(str)) if "point_id" in results else set()
    if not ids or len(stored) == len(ids):
        return None
    return len(stored), len(ids)


def _fail_config(path: Path):
    from precision.runner.config import ConfigError

    def fail(where: str, message: str):
        raise ConfigError(f"config error in {path}: {where}: {message}")

    return fail
