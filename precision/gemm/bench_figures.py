"""What the bench figure modules (:mod:`precision.gemm.gemm_plots`,
:mod:`precision.gemm.ozaki_plots`) share: reading a bench table with one line naming the file
and the problem where it cannot be drawn, the ``CSV --out DIR [--format png,pdf,svg]``
command line, the look of their bar panels, and saving in each format asked for.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from precision.console import directory_destination_problem

#: The file formats the figure modules write (``--format``): png at 150 dpi, or vector.
FORMATS = ("png", "pdf", "svg")


def save_figure(fig: Any, out: Path, stem: str, formats: Sequence[str]) -> list[Path]:
    """Save ``fig`` as ``out/stem.<format>`` for each of ``formats``; returns the paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.{fmt}" for fmt in formats]
    for path in paths:
        fig.savefig(path, dpi=150)
    return paths


def finish_bar_figure(fig: Any, axes: Sequence[Any], title: str, handles: Sequence[Any]) -> None:
    """The look the figure modules share: panels of horizontal bars with an x grid behind
    the data, no top or right frame and unticked y labels; ``title`` above and one legend of
    ``handles`` below them (a row of up to 8 entries)."""
    for ax in axes:
        ax.grid(axis="x", color="0.9", lw=0.6, zorder=0)
        ax.set_axisbelow(True)
        ax.tick_params(axis="y", length=0, labelsize=8.5)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    fig.suptitle(title, fontsize=11)
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 8),
               fontsize=8.5, frameon=False)  # fmt: skip


def formats_arg(text: str) -> list[str]:
    """``--format``'s value: a comma-separated list of :data:`FORMATS` (argparse error else)."""
    formats = [f.strip().lower() for f in text.split(",") if f.strip()]
    unknown = [f for f in formats if f not in FORMATS]
    if not formats or unknown:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected one or more of {', '.join(FORMATS)}, comma-separated"
        )
    return list(dict.fromkeys(formats))


def read_csv_table(csv: Path, needed: Sequence[str], what: str) -> pd.DataFrame:
    """The table ``csv``; ``ValueError`` with one line naming ``csv`` and the problem if it is
    missing, not a csv table or lacks a column of ``needed`` (``what``: the kind of table
    expected, for the message)."""
    if not csv.is_file():
        why = "no such file" if not csv.exists() else "not a file"
        raise ValueError(f"{csv}: {why} (expected {what})")
    try:
        df = pd.read_csv(csv)
    except (ValueError, OSError) as exc:  # unreadable, empty or malformed (ParserError...)
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"{csv}: cannot read it as a csv table ({why})") from None
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(
            f"{csv}: no column {', '.join(missing)} (the figures need the columns "
            f"{', '.join(needed)} of {what})"
        )
    return df


def figure_cli(
    argv: list[str] | None,
    *,
    prog: str,
    doc: str,
    what: str,
    check: Callable[[argparse.Namespace], object],
    draw: Callable[[argparse.Namespace], list[Path]],
    extra: Sequence[tuple[tuple[str, ...], dict[str, Any]]] = (),
) -> int:
    """The command line of a figure module: ``CSV --out DIR [--format png,pdf,svg]`` (and
    ``extra`` options).
    ``check(args)`` reads the table first and raises ``ValueError`` for one it cannot draw:
    then one line names the file and the problem (exit 2), and no ``--out`` directory is
    left behind; so does an ``--out`` where no file can be written. Else ``draw(args)``
    writes the figures and their paths are printed."""
    ap = argparse.ArgumentParser(prog=prog, description=doc.split("\n")[0])
    ap.add_argument("csv", type=Path, help=what)
    ap.add_argument("--out", type=Path, required=True,
                    help="directory for the figures (required; created if missing)")  # fmt: skip
    ap.add_argument("--format", type=formats_arg, default=["png"], dest="formats",
                    help="file formats, comma-separated: png (default), pdf, svg")  # fmt: skip
    for flags, options in extra:
        ap.add_argument(*flags, **options)
    args = ap.parse_args(argv)
    try:
        check(args)
    except ValueError as exc:
        text = str(exc)
        named = text if text.startswith(str(args.csv)) else f"{args.csv}: {text}"
        print(f"error: {named}", file=sys.stderr)
        return 2
    problem = directory_destination_problem(args.out, "--out")
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    for path in draw(args):
        print(path)
    return 0
