"""Figures of a results table: error (or TFLOP/s) against size, ready for a paper.

One figure per metric (``err_fro``, ``err_max``, ``err_median``, ``err_comp``, ``tflops``), one
panel per value of ``col`` × ``row`` (:class:`~precision.runner.figures.PlotSpec`), colour =
``hue``, line style and marker = ``style``. Each line is the median over repeats (errors span
decades and the repeat count is small, so no bootstrap band); every repeat is also drawn as a
faint dot.

What keeps the figures honest and readable:

- No marker is the median of distinct points. A dimension of a point's identity that the spec
  does not show (:data:`SPLIT_DIMENSIONS`: method, format, backend, arch, distribution, the
  Ozaki ``target`` and requested term count, ``emulator_device``, m/n/k) and that varies
  within a series at one x in one panel becomes rows of panels, labelled ``dim = value`` (the
  method or distribution label itself), and a note under the figure says which dimension and
  where ("backend varies within series (...): shown as panel rows; set hue/style/col/row to
  choose"). A dimension constant within every such cell adds nothing. The count that
  ``terms = "auto"`` chose is an outcome, not an identity: repeats that chose different counts
  stay one point (pooled where the count is not shown), and a note names them ("ozaki2 [..]:
  repeats chose 16 and 17 terms at size = 4096"; where x, a panel or a series shows the count,
  each count's value is the median of part of the point's repeats, which the note says).
  A baseline without a value of a split dimension (its series names its backend and format;
  it has no Ozaki target) joins every panel row of the methods that agree with it on the
  other split dimensions, instead of a panel row of its own.
- Lines that coincide stay distinguishable: every style value has its own marker and dash
  pattern, and the series are spread horizontally by a small dodge (at most ``dodge`` of the
  smallest gap between neighbouring x values, on the log axis, or on the linear ``terms``
  axis); the x ticks mark the true sizes.
- CPU fp32/fp64 baselines (format fp32 or fp64: the emulated fp32 FMA chain, numpy's matmul,
  cuBLAS SGEMM) are drawn in black and grey with their own legend entries, and error figures
  carry the fp32 unit roundoff u = 2^-24 as a long-dashed horizontal line (fp64's 2^-53
  dash-dot).
- TFLOP/s panels are split by device: GPU backends, numpy's BLAS on the CPU, and the emulator
  (a CPU replay of the tensor core, whose TFLOP/s is labelled as not a GPU speed; on the GPU
  engine, ``emulator_device = "gpu"``, labelled as not a GEMM speed).
- Log axes are labelled at whole decades (limits rounded out to decades, with every value and
  reference line at least :data:`Y_MARGIN` of the axis height inside the frame); the x axis is
  labelled at the swept sizes (thinned, or as powers of two, when there are many). A
  ``terms`` axis (Ozaki slices / moduli) is linear, per panel column, and labelled at every
  integer it spans (its panels are widened to fit the labels).
- Points with no finite positive value (error rows, unavailable backends, NaN or Inf, error 0
  on a log axis) are listed under the figure, after the notes above (each list at most
  :data:`MAX_NOTE_LINES` lines), and are left out of its layout: no panel, legend entry,
  x range or unit-roundoff line exists for them alone.
- Distributions are named as a reader writes them, from every parameter value of the row
  (``dist_params``): ``U(−1, 1)``, ``N(0, 1)``, ``exp_rand, φ = 1`` (:data:`DIST_LABELS`;
  a real minus sign), whether or not the config spelled the defaults out; others by their
  ``dist_label``. Display only: the tables' ``dist_label`` column is unchanged.
- Caveats head the notes, never capped: an ``err_max`` figure reaching 1 says that entries
  with an exact value near 0 set it (:data:`ERR_MAX_NOTE`); a TFLOP/s figure says when its
  points were timed while a run computed several at once (``--jobs N``, Dask workers) or on
  more than one machine (a run resumed elsewhere), and that numpy's multithreaded BLAS stalls
  on a loaded machine unless the run recorded one BLAS thread (:func:`timing_notes`, from the
  records of provenance.json).
- A figure is never written broken: at a given ``size`` (one paper column, say) nothing is
  cut at its edges or overlaps (tick, axis, panel and row labels, legend, notes, title,
  panels), and no panel is smaller than :data:`~precision.runner.plot_fit.MIN_PANEL_W` x
  :data:`~precision.runner.plot_fit.MIN_PANEL_H` inches
  (:func:`~precision.runner.plot_fit.layout_problems`). Where the figure as drawn does not
  fit, fewer x tick labels are written, an axis label repeated by every panel row (column)
  is written once, and tick and axis labels are made smaller (to 6.5 and 7 points); where
  even that does not fit, the figure is drawn at the least size that holds it (its width
  kept where a taller figure fits) and a warning names the figure, the size asked for and
  the size drawn (:func:`size_warning`), in ``precision plot`` and ``precision run`` alike.
- PDF (and PostScript) files embed TrueType fonts (Type 42), not Type 3, which IEEE's and
  ACM's PDF checks reject. PDF and SVG carry no creation date and SVG's ids are salted, so
  the same table gives the same bytes in every format (:data:`UNDATED`).

This module is the entry point (:func:`plot_results`, and the checks the ``plot`` command makes
first: :func:`check_formats`, :func:`check_writable`, :func:`missing_tex`); the work is done in:

- :mod:`~precision.runner.plot_labels`: the text of figures (metric, axis, distribution and
  dimension labels, number formatting, label order);
- :mod:`~precision.runner.plot_frame`: the table turned into the figure's rows (x, hue, style,
  panels, series; the dimensions split into panel rows), and which rows each panel draws;
- :mod:`~precision.runner.plot_notes`: the notes under figures (caveats, TFLOP/s timing notes
  from the run records, the points not shown);
- :mod:`~precision.runner.plot_draw`: the matplotlib figure (panels, legend, ticks, limits),
  fitted to its size;
- :mod:`~precision.runner.plot_fit`: whether a drawn figure fits (nothing cut or overlapping).

The names other modules and the tests use are re-exported here (``__all__``).
"""

from __future__ import annotations

import functools
import io
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from precision.runner.figures import PlotSpec
from precision.runner.plot_draw import Y_MARGIN, _setup, draw_figure
from precision.runner.plot_frame import (
    FP32_UNIT_ROUNDOFF,
    GPU_EMULATOR,
    SPLIT_DIMENSIONS,
    UNIT_ROUNDOFFS,
    _devices,
    _point_keys,
    prepare,
)
from precision.runner.plot_labels import (
    DIST_LABELS,
    SERIES_SEP,
    drawable,
    drawable_words,
    readable_distribution,
)
from precision.runner.plot_notes import (
    BLAS_NOTE,
    ERR_MAX_NOTE,
    MAX_NOTE_LINES,
    cap_notes,
    read_runs,
    run_concurrency,
    timing_notes,
)
from precision.runner.store import StoreError, atomic_write

#: What other modules, the tests and this module's docstring take from here: the entry point
#: and the names of the modules above that they import (or refer to) as ``plotting.NAME``.
__all__ = [
    # plot_labels
    "DIST_LABELS",
    "SERIES_SEP",
    "readable_distribution",
    # plot_frame
    "FP32_UNIT_ROUNDOFF",
    "GPU_EMULATOR",
    "SPLIT_DIMENSIONS",
    "UNIT_ROUNDOFFS",
    "_devices",
    "_point_keys",
    "prepare",
    # plot_notes
    "BLAS_NOTE",
    "ERR_MAX_NOTE",
    "MAX_NOTE_LINES",
    "cap_notes",
    "read_runs",
    "run_concurrency",
    "timing_notes",
    # plot_draw
    "Y_MARGIN",
    "draw_figure",
    # this module
    "check_formats",
    "check_writable",
    "missing_tex",
    "plot_results",
    "size_warning",
]


#: savefig metadata that leaves out the creation date, so that the same table gives the same
#: bytes in every format (PNG carries no date; SVG ids are salted in ``_setup``).
UNDATED: dict[str, dict[str, None]] = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}


def missing_tex(formats: Iterable[str]) -> str | None:
    """Why ``formats`` cannot be written here (pgf needs matplotlib's TeX system), else None."""
    if "pgf" not in formats:
        return None
    import shutil

    import matplotlib

    tex = matplotlib.rcParams["pgf.texsystem"]
    if shutil.which(tex) is None:
        return f"format 'pgf' needs {tex} on the PATH (matplotlib's pgf.texsystem)"
    return None


def check_formats(formats: Iterable[str]) -> None:
    """Raise ValueError when one of ``formats`` cannot be written on this machine."""
    reason = missing_tex(formats)
    if reason:
        raise ValueError(reason)


def _write_bytes(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def check_writable(out_dir: Path) -> None:
    """Create ``out_dir``; raise :class:`~precision.runner.store.StoreError` naming it when it
    cannot be created or written (read-only file system, permissions, a file of that name)."""
    import errno
    import os

    from precision.runner.store import NOT_WRITABLE, os_error_reason

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        writable = os.access(out_dir, os.W_OK | os.X_OK)
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOTDIR):
            why = "a file of that name (or of a folder above it) is in the way"
        else:
            why = os_error_reason(exc)
        raise StoreError(f"cannot write to {out_dir}: {why}") from None
    if not writable:
        raise StoreError(f"cannot write to {out_dir}: {NOT_WRITABLE}")


def _inches(size: Iterable[float]) -> str:
    return " x ".join(f"{float(v):g}" for v in size)


def size_warning(fig: Any, size: tuple[float, float] | None, name: str) -> str:
    """What to tell about figure ``name`` drawn (and saved) as ``fig`` for a requested
    ``size`` (None: the size derived from its panels): "" where it was drawn at that size
    and fits it; else that the size was too small and the size it was drawn at instead
    (:func:`~precision.runner.plot_draw.draw_figure`), or what still does not fit
    (:func:`~precision.runner.plot_fit.layout_problems`)."""
    from precision.runner.plot_fit import MIN_PANEL_H, MIN_PANEL_W, layout_problems

    drawn = tuple(float(v) for v in fig.get_size_inches())
    problems = layout_problems(fig)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return (
            f"figure {name} does not fit its size, {_inches(drawn)} in, nor any size tried: "
            f"{problems[0]}{more}"
        )
    if size is None or drawn == tuple(size):
        return ""
    panels = sum(1 for ax in fig.get_axes() if ax.get_visible())
    least = "height at that width" if drawn[0] == size[0] else "size"
    return (
        f"figure {name}: {_inches(size)} in is too small for its {panels} "
        f"panel{'s' if panels > 1 else ''}, legend and labels (text would overlap or be cut, "
        f"or panels shrink below {MIN_PANEL_W:g} x {MIN_PANEL_H:g} in); drawn at "
        f"{_inches(drawn)} in instead, the least {least} that holds them"
    )


def plot_results(
    table: pd.DataFrame,
    out_dir: Path | str,
    title: str = "",
    spec: PlotSpec | None = None,
    *,
    prefix: str = "",
    notes: list[str] | None = None,
    runs: list[dict] | None = None,
    caveats: list[str] | None = None,
) -> list[Path]:
    """Write the figures of ``spec`` (default: error and, when timed, TFLOP/s) and the summary
    tables into ``out_dir`` as ``<prefix><metric>.<format>`` and ``<prefix>summary.*`` (which
    keep the tables of the metrics summarised there before:
    :func:`~precision.runner.summary.write_summary`). ``runs`` are the records of the runs
    that computed ``table`` (:func:`read_runs`): the TFLOP/s figure and table say when their
    timings shared the machine (:func:`timing_notes`). ``caveats``: note lines put first under
    every figure and summary table (``precision plot`` says there that points are missing).

    A figure that ``spec.size`` cannot hold is drawn at the least size that does, and a
    warning line on stderr says so (:func:`size_warning`).

    Returns the files written. A metric without a single drawable value is skipped; when it
    was asked for explicitly, ``notes`` (if given) receives a line saying so. Every file is
    written atomically (:func:`~precision.runner.store.atomic_write`); a directory or file
    that cannot be written raises :class:`~precision.runner.store.StoreError` naming it,
    leaving the files already there as they were.
    """
    from precision.runner.summary import write_summary

    out_dir = Path(out_dir)  # a str (as run_experiment and load_config take) failed at mkdir
    spec = spec or PlotSpec()
    heading = spec.title if spec.title is not None else title
    if table.empty:
        return []
    formats = spec.formats
    reason = missing_tex(formats)
    if reason:  # after a run: write the other formats rather than fail
        formats = tuple(f for f in formats if f != "pgf")
        if notes is not None:
            notes.append(f"pgf skipped: {reason}")
    paths: list[Path] = []
    check_writable(out_dir)  # before drawing anything
    for metric in spec.metrics:
        if metric not in table:  # a table written without it (another tool, a hand-made one)
            if spec.explicit_metrics and notes is not None:
                notes.append(f"no {metric} figure: the results have no {metric} column")
            continue
        values = pd.to_numeric(table[metric], errors="coerce")
        ok = table["status"] == "ok" if "status" in table else True
        if not (drawable(values, metric) & ok).any():
            if spec.explicit_metrics and notes is not None:
                notes.append(f"no {metric} figure: no row has a {drawable_words(metric)} {metric}")
            continue
        frame = prepare(table, spec, metric)
        frame.caveats[:0] = caveats or []
        if metric == "tflops":
            frame.caveats += timing_notes(table, runs)
        files = [out_dir / f"{prefix}{metric}.{ext}" for ext in formats]
        plt, _ = _setup()
        fig = draw_figure(frame, metric, spec, heading)
        try:
            # Measured as laid out on the figure's own canvas, as it was fitted (and as the
            # png is), so before any save: a pdf, svg or pgf save leaves the axis labels where
            # its own renderer (72 dpi) put them, which measured at the figure's dpi looked
            # cut or overlapping.
            warning = size_warning(fig, spec.size, f"{prefix}{metric} ({', '.join(formats)})")
            # Drawn into memory, then written atomically: a full disk or a killed process
            # leaves the earlier file of that name, never a truncated one.
            images: dict[Path, bytes] = {}
            for path, ext in zip(files, formats, strict=True):
                buffer = io.BytesIO()
                fig.savefig(buffer, format=ext, dpi=spec.dpi, metadata=UNDATED.get(ext))
                images[path] = buffer.getvalue()
        finally:
            plt.close(fig)
        if warning:  # (printed here, so that `precision run` and `precision plot` both say it)
            print(f"warning: {warning}", file=sys.stderr)
        for path, data in images.items():
            atomic_write(path, functools.partial(_write_bytes, data=data))
        paths += files
    if table["status"].eq("ok").any() if "status" in table else True:
        paths += write_summary(table, out_dir, spec, prefix=prefix, runs=runs, caveats=caveats)
    return paths
