"""Summary tables of a results table: the median over repeats of every point, as CSV, and one
pivot table per plotted metric (series × x) as Markdown and LaTeX, next to the figures.

``<prefix>summary.csv``: one row per point (its identity columns, ``repeats``, ``ok`` = the
number of repeats with status ok, ``status``) with the median over repeats of ``err_fro``,
``err_max``, ``err_median``, ``err_comp`` and, when the summarised metrics include ``tflops``,
of ``tflops`` and ``time_s`` (so a summary of errors only is the same on every rerun). A median
is NaN when any repeat has no value (an error row, a NaN error), so a point is never summarised
from part of its repeats, with one exception that its ``repeats`` column shows: the chosen
``terms`` is an identity column here, so a ``terms = "auto"`` point whose repeats chose
different counts has one row per count, each over the repeats that chose it.
``emulator_device`` joins the identity columns when the table has more than one value of it.

``<prefix>summary.md`` / ``<prefix>summary.tex``: per summarised metric, the same medians
with the figure's panels and series as rows and the x values (sizes) as columns, exactly
three significant digits (trailing zeros kept: 0.0260), plain for magnitudes in [0.01, 1000)
and scientific below and above (4.23e-03; :func:`_fmt`); "n/a" where the median is missing.
Rows are labelled as the figure labels its panels and series (a distribution as ``U(−1, 1)``
or ``exp_rand, φ = 1``: :func:`~precision.runner.plotting.readable_distribution`; the
``dist_label`` column of ``summary.csv`` keeps the config's spelling), and the figure's
caveats (the ``err_max`` and TFLOP/s notes) are ``Note:`` lines under the table. The rows
are the figure's (:func:`~precision.runner.plotting.prepare`), so an identity dimension that
varies within a series is a row column of its own, as it is a row of panels in the figure,
with the figure's note ("Note: backend varies within series ...") under the table (a ``%``
comment in LaTeX). A cell computed from fewer repeats than its point has (the other repeats
of a ``terms = "auto"`` point chose another count, shown in another column or row, or have
no count) is marked :data:`PARTIAL_MARK` (LaTeX: a superscript dagger), explained by one
footnote line under the table (:data:`PARTIAL_NOTE`). The LaTeX tables use ``booktabs``.

The summarised metrics are those whose tables the existing ``<prefix>summary.md`` already
holds (:func:`summarised_metrics`, in its order) followed by the other metrics of the figures
being drawn, so drawing one more metric into a folder adds its table and never drops one:
``precision plot DIR --metric err_max`` after ``precision run`` keeps the run's ``err_fro``
and ``tflops`` tables. Every table is recomputed from the current results, with the current
panels and series; delete the summary files to start afresh. A kept metric that the current
results have no finite value (or no column) of keeps its heading with a "No table: ..." line,
so that it is not forgotten, and gets its table again once they have values.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from precision.runner.figures import METRICS, PlotSpec
from precision.runner.plot_labels import (
    FRACTION_METRICS,
    _ordered,
    all_repeats_statistic,
    median_of_all,
    over_repeats,
)
from precision.runner.store import atomic_write

if TYPE_CHECKING:
    from precision.runner.plot_frame import _Frame

ID_COLUMNS = (
    "dist_label",
    "m",
    "n",
    "k",
    "variant",
    "method",
    "correction",
    "format",
    "backend",
    "arch",
    "target",  # the Ozaki axes (absent or empty for other methods)
    "terms_requested",
    "terms",
)
ERROR_COLUMNS = ("err_fro", "err_max", "err_median", "err_comp")
TIMING_COLUMNS = ("tflops", "time_s")
MISSING = "n/a"
#: Marks a table cell computed from fewer repeats than its point has; explained once under
#: the table by :data:`PARTIAL_NOTE`.
PARTIAL_MARK = "†"
LATEX_MARK = r"\textsuperscript{\dag}"
PARTIAL_NOTE = (
    f"{PARTIAL_MARK} median of fewer repeats than the point has: its other repeats chose "
    "another term count (terms = auto), counted where that count is shown, or have no "
    "term count (not computed); the figure's notes name the counts."
)


def point_statuses(table: pd.DataFrame) -> dict[str, int]:
    """How many points of ``table`` have each status (its first row's, per ``point_id``;
    every row a point where the table has no ``point_id``), most frequent first."""
    points = table.drop_duplicates("point_id") if "point_id" in table else table
    return {str(k): int(v) for k, v in points["status"].value_counts().items()}


def summarize(table: pd.DataFrame, timing: bool = True) -> pd.DataFrame:
    """One row per point: identity columns, repeat counts, status and median errors (and,
    with ``timing``, median TFLOP/s and time)."""
    ids = [c for c in ID_COLUMNS if c in table]
    if "emulator_device" in table and table["emulator_device"].nunique() > 1:
        ids.append("emulator_device")  # cpu and gpu engine rows of one point apart
    ok = table["status"] == "ok" if "status" in table else pd.Series(True, index=table.index)
    as_text = ("correction", "target", "terms_requested")
    keys = [table[c].astype(str) if c in as_text else table[c] for c in ids]
    grouped = ok.groupby(keys, sort=True, dropna=False)
    out = pd.DataFrame({"repeats": grouped.size(), "ok": grouped.sum().astype(int)})
    statuses = table["status"] if "status" in table else pd.Series("ok", index=table.index)
    out["status"] = statuses.groupby(keys, sort=True, dropna=False).agg(
        lambda s: "ok" if (s == "ok").all() else ", ".join(
            f"{v} ({n} of {len(s)})" for v, n in s.value_counts().items()
        )
    )  # fmt: skip
    for column in ERROR_COLUMNS + (TIMING_COLUMNS if timing else ()):
        if column in table:
            values = pd.to_numeric(table[column], errors="coerce").where(ok)
            out[column] = values.groupby(keys, sort=True, dropna=False).agg(median_of_all)
    out = out.reset_index()
    for column in as_text:
        if column in out:
            out[column] = out[column].replace({"None": "", "nan": ""})
    return out


def pivot(table: pd.DataFrame, spec: PlotSpec, metric: str) -> pd.DataFrame:
    """Medians of ``metric`` with the figure's panels and series as rows, x values as columns
    (the same series, order and panels as the figure)."""
    return pivot_cells(table, spec, metric)[0]


def pivot_cells(
    table: pd.DataFrame, spec: PlotSpec, metric: str
) -> tuple[pd.DataFrame, pd.DataFrame, _Frame]:
    """:func:`pivot`, the cells computed from fewer repeats than their point has (True; a
    frame of the same shape) and the figure's frame (:func:`~precision.runner.plotting.prepare`:
    the dimensions split into panel rows and their notes)."""
    from precision.runner.plot_frame import prepare
    from precision.runner.plot_labels import SERIES_SEP

    frame = prepare(table, spec, metric)
    d = frame.data
    value = d["_value"].where(d["_ok"])
    parts = d["_series"].str.partition(SERIES_SEP)
    order = {key: i for i, (_, key) in enumerate(frame.series)}
    row_parts = [spec.row] if spec.row != "none" else []
    row_parts += [dim for dim in frame.rest if dim != spec.row]  # as prepare() labels rows
    if metric == "tflops":
        row_parts.append("device")
    row_parts += frame.split  # identity dimensions that vary within a series, as prepare() adds
    # One column per role; a dimension shown in two roles (style and col both "format"; a
    # hue dimension that varies within the baselines' series is split into panel rows too, by
    # prepare) names its second column by the role: "format (style)".
    named: list[tuple[pd.Series, str, str]] = []
    if spec.col != "none":
        named.append((d["_col"], spec.col, "col"))
    if row_parts:
        named.append((d["_row"], " / ".join(row_parts), "panel row"))
    named.append((d["_series"].map(order), "_rank", ""))
    named.append((parts[0], spec.hue if spec.hue != "none" else "series", "hue"))
    if spec.style != "none":
        style = parts[2].where(~d["_baseline"], table["format"].astype(str))
        named.append((style, spec.style, "style"))
    keys: list[pd.Series] = []
    for values, name, role in named:
        taken = {key.name for key in keys}
        if role in ("col", "panel row"):  # in the figure's order: "k = 64" before "k = 256"
            values = pd.Series(
                pd.Categorical(values, categories=_ordered(values), ordered=True),
                index=values.index,
            )
        keys.append(values.rename(name if name not in taken else f"{name} ({role})"))
    cell = [*keys, d["_x"].rename("_x")]
    statistic = all_repeats_statistic(metric)
    medians = value.groupby(cell, sort=True, observed=True).agg(statistic)
    # A cell holds part of a point's repeats when the others chose another term count (x or
    # a panel or series shows it) or have no x value (terms = "auto" not computed).
    point = d["_point"]
    in_cell = point.groupby([*cell, point], sort=False, observed=True).transform("size")
    short = (
        (in_cell < point.map(point.value_counts())).groupby(cell, sort=True, observed=True).any()
    )
    both = pd.DataFrame({"median": medians, "short": short}).unstack("_x").droplevel("_rank")
    columns = pd.Index([f"{x:g}" for x in both["median"].columns])
    out = pd.DataFrame(both["median"].to_numpy(float), index=both.index, columns=columns)
    marks = pd.DataFrame(
        both["short"].fillna(False).to_numpy(bool), index=both.index, columns=columns
    )
    return out, marks, frame


#: Decimal exponents (of the value rounded to three significant digits) written in plain
#: notation: magnitudes in [0.01, 1000), as 0.0260, 0.705, 16.2, 105; smaller and larger ones
#: in scientific notation, 4.23e-03 and 1.23e+03 (LaTeX: $4.23\times10^{-3}$).
PLAIN_EXPONENTS = range(-2, 3)


def _significant(value: float) -> tuple[str, str, int]:
    """``value`` (finite, non-zero) rounded to three significant digits: its plain form with
    exactly three significant digits (trailing zeros kept: 0.0260, 1.00), its mantissa
    ``d.dd`` and its decimal exponent (after the rounding: 9.996 gives 10.0, exponent 1)."""
    mantissa, _, exponent = f"{value:.2e}".partition("e")
    exp = int(exponent)
    return f"{value:.{max(0, 2 - exp)}f}", mantissa, exp


def _fmt(value: float) -> str:
    """Exactly three significant digits, trailing zeros kept: plain notation for magnitudes
    (rounded) in [0.01, 1000) (:data:`PLAIN_EXPONENTS`: 0.0260, 0.705, 16.2), else as 2.06e-07;
    0 as ``0`` and a missing value as :data:`MISSING`."""
    if not np.isfinite(value):
        return MISSING
    if value == 0:
        return "0"
    plain, mantissa, exp = _significant(value)
    return plain if exp in PLAIN_EXPONENTS else f"{mantissa}e{exp:+03d}"


def _fraction_text(value: float, fmt: Callable[[float], str]) -> str:
    """A fraction (:data:`~precision.runner.plot_labels.FRACTION_METRICS`) as ``fmt`` writes
    it, except that exactly 1 is written ``1`` and a value below 1 never as 1: one that
    rounds to ``1.00`` is written ``0.999``."""
    if value == 1:
        return "1"
    text = fmt(value)
    return "0.999" if np.isfinite(value) and text == "1.00" else text


def _latex_number(value: float) -> str:
    """:func:`_fmt` in LaTeX: the same digits, scientific notation as $2.06\\times10^{-7}$."""
    if not np.isfinite(value):
        return MISSING
    if value == 0:
        return "0"
    plain, mantissa, exp = _significant(value)
    return plain if exp in PLAIN_EXPONENTS else f"${mantissa}\\times10^{{{exp}}}$"


def _latex_escape(text: str) -> str:
    out = str(text)
    for char, repl in (
        ("\\", r"\textbackslash{}"),
        ("&", r"\&"),
        ("%", r"\%"),
        ("#", r"\#"),
        ("_", r"\_"),
        ("{", r"\{"),
        ("}", r"\}"),
        ("~", r"\textasciitilde{}"),
        ("^", r"\textasciicircum{}"),
        ("$", r"\$"),
        ("×", r"$\times$"),
        # the display labels of distributions and φ (precision.runner.plotting): pdflatex
        # has no glyph for these characters in text
        ("\u2212", "$-$"),
        ("φ", r"$\varphi$"),
        ("ε", r"$\varepsilon$"),
        ("∈", r"$\in$"),
        ("²", r"\textsuperscript{2}"),
    ):
        out = out.replace(char, repl)
    return out


def _marked(marks: pd.DataFrame | None, i: int, n: int) -> list[bool]:
    return [False] * n if marks is None else [bool(v) for v in marks.iloc[i].to_numpy()]


def to_markdown(
    frame: pd.DataFrame,
    first_header: str = "",
    marks: pd.DataFrame | None = None,
    fraction: bool = False,
) -> str:
    """A GitHub-flavoured Markdown table of a pivot (index columns left, numbers right); a
    cell that is True in ``marks`` (:func:`pivot_cells`) gets :data:`PARTIAL_MARK`. With
    ``fraction``, values are written by :func:`_fraction_text`."""
    index = frame.index.to_frame(index=False).astype(str)
    header = list(index.columns) + [f"{first_header}{c}" if i == 0 else c
                                    for i, c in enumerate(frame.columns)]  # fmt: skip
    align = [":--"] * index.shape[1] + ["--:"] * frame.shape[1]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    number = functools.partial(_fraction_text, fmt=_fmt) if fraction else _fmt
    for i in range(len(frame)):
        values = frame.iloc[i].to_numpy(float)
        marked = _marked(marks, i, len(values))
        cells = list(index.iloc[i])
        cells += [number(v) + (PARTIAL_MARK if m else "")
                  for v, m in zip(values, marked, strict=True)]  # fmt: skip
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def to_latex(
    frame: pd.DataFrame,
    caption: str,
    x_name: str,
    marks: pd.DataFrame | None = None,
    fraction: bool = False,
) -> str:
    """A booktabs LaTeX table of a pivot; cells True in ``marks`` get a dagger, explained
    under the table (:data:`PARTIAL_NOTE`). With ``fraction``, values are written by
    :func:`_fraction_text`."""
    index = frame.index.to_frame(index=False).astype(str)
    ni, nv = index.shape[1], frame.shape[1]
    lines = [
        r"\begin{table}",
        r"  \centering",
        f"  \\caption{{{_latex_escape(caption)}}}",
        f"  \\begin{{tabular}}{{{'l' * ni}{'r' * nv}}}",
        r"    \toprule",
        f"    {' & ' * (ni - 1)} & \\multicolumn{{{nv}}}{{c}}{{{_latex_escape(x_name)}}} \\\\",
        f"    \\cmidrule(l){{{ni + 1}-{ni + nv}}}",
        "    "
        + " & ".join([_latex_escape(c) for c in index.columns] + list(frame.columns))
        + r" \\",
        r"    \midrule",
    ]
    number = functools.partial(_fraction_text, fmt=_latex_number) if fraction else _latex_number
    for i in range(len(frame)):
        cells = [_latex_escape(c) for c in index.iloc[i]]
        values = frame.iloc[i].to_numpy(float)
        marked = _marked(marks, i, len(values))
        cells += [number(v) + (LATEX_MARK if m else "")
                  for v, m in zip(values, marked, strict=True)]  # fmt: skip
        lines.append("    " + " & ".join(cells) + r" \\")
    lines += [r"    \bottomrule", r"  \end{tabular}"]
    if marks is not None and bool(marks.to_numpy().any()):
        note = _latex_escape(PARTIAL_NOTE.removeprefix(PARTIAL_MARK).strip())
        lines.append(f"  \\par\\smallskip{{\\footnotesize {LATEX_MARK}\\,{note}\\par}}")
    lines.append(r"\end{table}")
    return "\n".join(lines)


def summarised_metrics(md_path: Path) -> list[str]:
    """The metrics whose tables the summary at ``md_path`` holds, in its order: the metric
    names that open its ``## <metric>: ...`` headings ([] when it is missing or unreadable)."""
    try:
        # A byte that is not UTF-8 (an editor's re-encoding) must not drop every table: the
        # headings that matter are ASCII.
        text = md_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found = (line[3:].partition(":")[0].strip() for line in text.splitlines()
             if line.startswith("## "))  # fmt: skip
    return list(dict.fromkeys(m for m in found if m in METRICS))


def write_summary(
    table: pd.DataFrame,
    out_dir: Path,
    spec: PlotSpec,
    *,
    prefix: str = "",
    runs: list[dict] | None = None,
    caveats: list[str] | None = None,
) -> list[Path]:
    """Write ``<prefix>summary.csv``, ``.md`` and ``.tex`` into ``out_dir`` (atomically:
    :class:`~precision.runner.store.StoreError` naming a file that cannot be written); return
    the paths.

    The tables cover the metrics the existing ``<prefix>summary.md`` has a table of and then
    the other metrics of ``spec`` (see the module docstring), all computed from ``table``.
    Under each table are the figure's notes: its caveats (the ``tflops`` table's from
    ``runs``, :func:`~precision.runner.plotting.timing_notes`) and the dimensions split into
    rows, after ``caveats`` (lines for every table: points missing from the results)."""
    from precision.runner.plot_frame import choose_x
    from precision.runner.plot_labels import METRIC_LABELS
    from precision.runner.plot_notes import cap_notes, timing_notes

    csv_path = out_dir / f"{prefix}summary.csv"
    md_path = out_dir / f"{prefix}summary.md"
    tex_path = out_dir / f"{prefix}summary.tex"
    kept = summarised_metrics(md_path)
    metrics = list(dict.fromkeys([*kept, *spec.metrics]))
    summary = summarize(table, timing="tflops" in metrics)
    _, _, x_label = choose_x(table, spec.x)
    repeats = int(table.groupby("point_id").size().max()) if "point_id" in table else 1
    least = [m for m in metrics if m in FRACTION_METRICS]
    also = f" (least for {', '.join(least)})" if least else ""
    md = [f"# Summary: median over {repeats} repeat(s) per point{also}\n"]
    least_tex = f"; least for {', '.join(least)}" if least else ""
    tex = [f"% Summary tables (median over repeats{least_tex}); needs \\usepackage{{booktabs}}", ""]
    for metric in metrics:
        label = f"{metric}: {METRIC_LABELS[metric]}, {over_repeats(metric)}, by {x_label}"
        values = pd.to_numeric(table[metric], errors="coerce") if metric in table else None
        if values is None or not np.isfinite(values).any():
            if metric in kept:  # summarised before: keep its place (and so the metric), empty
                why = f"no finite {metric} in the current results" + (
                    "" if values is not None else f" (they have no {metric} column)"
                )
                md += [f"## {label}\n", f"No table: {why}.", ""]
                tex += [f"% {label}: no table, {why}", ""]
            continue
        frame, marks, drawn = pivot_cells(table, spec, metric)
        fraction = metric in FRACTION_METRICS
        md += [f"## {label}\n", to_markdown(frame, marks=marks, fraction=fraction), ""]
        if marks.to_numpy().any():
            md += [PARTIAL_NOTE, ""]
        # The figure's caveats, and the identity dimensions split into rows (they vary within
        # a series), as the figure says.
        said = [*(caveats or []), *drawn.caveats]
        said += timing_notes(table, runs) if metric == "tflops" else []
        said += cap_notes(drawn.split_notes + drawn.terms_notes)
        md += [f"Note: {note}." for note in said]
        md += [""] if said else []
        tex += [f"% Note: {note}." for note in said]
        tex += [to_latex(frame, label, x_label, marks, fraction=fraction), ""]
    # Written only once all three are computed, each atomically (a failed write leaves the
    # earlier file of that name): StoreError naming the file that could not be written.
    atomic_write(csv_path, lambda tmp: summary.to_csv(tmp, index=False))
    atomic_write(md_path, lambda tmp: tmp.write_text("\n".join(md), encoding="utf-8"))
    atomic_write(tex_path, lambda tmp: tmp.write_text("\n".join(tex), encoding="utf-8"))
    return [csv_path, md_path, tex_path]
