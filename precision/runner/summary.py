"""Summary tables of a results table: the median over repeats of every point, as CSV, and one
pivot table per plotted metric (series × x) as Markdown and LaTeX, next to the figures.

``<prefix>summary.csv``: one row per point (its identity columns, ``repeats``, ``ok`` = the
number of repeats with status ok, ``status``) with the median over repeats of ``err_fro``,
``err_max``, ``err_median`` and, when the summarised metrics include ``tflops``, of ``tflops``
and ``time_s`` (so a summary of errors only is the same on every rerun). A median is NaN when
any repeat has no value (an error row, a NaN error), so a point is never summarised from part
of its repeats.

``<prefix>summary.md`` / ``<prefix>summary.tex``: per summarised metric, the same medians with
the figure's panels and series as rows and the x values (sizes) as columns, three significant
digits; "n/a" where the median is missing. The LaTeX tables use ``booktabs``.

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

from pathlib import Path

import numpy as np
import pandas as pd

from precision.runner.figures import METRICS, PlotSpec
from precision.runner.store import atomic_write

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
ERROR_COLUMNS = ("err_fro", "err_max", "err_median")
TIMING_COLUMNS = ("tflops", "time_s")
MISSING = "n/a"


def _median_all(values: pd.Series) -> float:
    """Median of every value (NaN if any is NaN or there are none)."""
    arr = values.to_numpy(dtype=float)
    return float(np.median(arr)) if arr.size and not np.isnan(arr).any() else float("nan")


def summarize(table: pd.DataFrame, timing: bool = True) -> pd.DataFrame:
    """One row per point: identity columns, repeat counts, status and median errors (and,
    with ``timing``, median TFLOP/s and time)."""
    ids = [c for c in ID_COLUMNS if c in table]
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
            out[column] = values.groupby(keys, sort=True, dropna=False).agg(_median_all)
    out = out.reset_index()
    for column in as_text:
        if column in out:
            out[column] = out[column].replace({"None": "", "nan": ""})
    return out


def pivot(table: pd.DataFrame, spec: PlotSpec, metric: str) -> pd.DataFrame:
    """Medians of ``metric`` with the figure's panels and series as rows, x values as columns
    (the same series, order and panels as the figure)."""
    from precision.runner.plotting import prepare

    frame = prepare(table, spec, metric)
    d = frame.data
    value = d["_value"].where(d["_ok"])
    parts = d["_series"].str.partition("\x00")
    order = {key: i for i, (_, key) in enumerate(frame.series)}
    row_parts = [spec.row] if spec.row != "none" else []
    row_parts += [dim for dim in frame.rest if dim != spec.row]  # as prepare() labels rows
    if metric == "tflops":
        row_parts.append("device")
    keys: list[pd.Series] = []
    if spec.col != "none":
        keys.append(d["_col"].rename(spec.col))
    if row_parts:
        keys.append(d["_row"].rename(" / ".join(row_parts)))
    keys.append(d["_series"].map(order).rename("_rank"))
    hue_name = spec.hue if spec.hue != "none" else "series"
    keys.append(parts[0].rename(hue_name))
    if spec.style != "none":
        style = parts[2].where(~d["_baseline"], table["format"].astype(str))
        keys.append(style.rename(spec.style if spec.style != hue_name else "style"))
    medians = value.groupby([*keys, d["_x"].rename("_x")], sort=True).agg(_median_all)
    out = medians.unstack("_x").droplevel("_rank")
    out.columns = pd.Index([f"{x:g}" for x in out.columns])
    return out


def _fmt(value: float) -> str:
    """Three significant digits: plain in [0.01, 10000), else as 2.06e-07."""
    if not np.isfinite(value):
        return MISSING
    return f"{value:.3g}" if value == 0 or 1e-2 <= abs(value) < 1e4 else f"{value:.2e}"


def _latex_number(value: float) -> str:
    if not np.isfinite(value):
        return MISSING
    mantissa, _, exponent = f"{value:.2e}".partition("e")
    exp = int(exponent)
    if -2 <= exp <= 3:
        return f"{value:.3g}"
    return f"${mantissa}\\times10^{{{exp}}}$"


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
    ):
        out = out.replace(char, repl)
    return out


def to_markdown(frame: pd.DataFrame, first_header: str = "") -> str:
    """A GitHub-flavoured Markdown table of a pivot (index columns left, numbers right)."""
    index = frame.index.to_frame(index=False).astype(str)
    header = list(index.columns) + [f"{first_header}{c}" if i == 0 else c
                                    for i, c in enumerate(frame.columns)]  # fmt: skip
    align = [":--"] * index.shape[1] + ["--:"] * frame.shape[1]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    for i in range(len(frame)):
        cells = list(index.iloc[i]) + [_fmt(v) for v in frame.iloc[i].to_numpy(float)]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def to_latex(frame: pd.DataFrame, caption: str, x_name: str) -> str:
    """A booktabs LaTeX table of a pivot."""
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
    for i in range(len(frame)):
        cells = [_latex_escape(c) for c in index.iloc[i]]
        cells += [_latex_number(v) for v in frame.iloc[i].to_numpy(float)]
        lines.append("    " + " & ".join(cells) + r" \\")
    lines += [r"    \bottomrule", r"  \end{tabular}", r"\end{table}"]
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
    table: pd.DataFrame, out_dir: Path, spec: PlotSpec, *, prefix: str = ""
) -> list[Path]:
    """Write ``<prefix>summary.csv``, ``.md`` and ``.tex`` into ``out_dir`` (atomically:
    :class:`~precision.runner.store.StoreError` naming a file that cannot be written); return
    the paths.

    The tables cover the metrics the existing ``<prefix>summary.md`` has a table of and then
    the other metrics of ``spec`` (see the module docstring), all computed from ``table``."""
    from precision.runner.plotting import METRIC_LABELS, choose_x

    csv_path = out_dir / f"{prefix}summary.csv"
    md_path = out_dir / f"{prefix}summary.md"
    tex_path = out_dir / f"{prefix}summary.tex"
    kept = summarised_metrics(md_path)
    metrics = list(dict.fromkeys([*kept, *spec.metrics]))
    summary = summarize(table, timing="tflops" in metrics)
    _, _, x_label = choose_x(table, spec.x)
    repeats = int(table.groupby("point_id").size().max()) if "point_id" in table else 1
    md = [f"# Summary: median over {repeats} repeat(s) per point\n"]
    tex = [r"% Summary tables (median over repeats); needs \usepackage{booktabs}", ""]
    for metric in metrics:
        label = f"{metric}: {METRIC_LABELS[metric]}, median over repeats, by {x_label}"
        values = pd.to_numeric(table[metric], errors="coerce") if metric in table else None
        if values is None or not np.isfinite(values).any():
            if metric in kept:  # summarised before: keep its place (and so the metric), empty
                why = f"no finite {metric} in the current results" + (
                    "" if values is not None else f" (they have no {metric} column)"
                )
                md += [f"## {label}\n", f"No table: {why}.", ""]
                tex += [f"% {label}: no table, {why}", ""]
            continue
        frame = pivot(table, spec, metric)
        md += [f"## {label}\n", to_markdown(frame), ""]
        tex += [to_latex(frame, label, x_label), ""]
    # Written only once all three are computed, each atomically (a failed write leaves the
    # earlier file of that name): StoreError naming the file that could not be written.
    atomic_write(csv_path, lambda tmp: summary.to_csv(tmp, index=False))
    atomic_write(md_path, lambda tmp: tmp.write_text("\n".join(md), encoding="utf-8"))
    atomic_write(tex_path, lambda tmp: tmp.write_text("\n".join(tex), encoding="utf-8"))
    return [csv_path, md_path, tex_path]
