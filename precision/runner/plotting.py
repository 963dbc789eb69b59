"""Figures of a results table: error vs size and TFLOP/s vs size (seaborn, headless Agg).

Lines show the median over repeats (no bootstrap band: errors span decades and the repeat
count is small); every repeat is also drawn as a faint point so the spread stays visible.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

# A paper column is about 3.3 in wide: two panels side by side, legend below, at fonts that
# stay >= ~6 pt when the figure is scaled to the column.
PANEL_IN = 1.9
ERROR_LABELS = {
    "err_fro": "rel. error (Frobenius)",
    "err_median": "median relative elementwise error",
    "err_max": "max relative elementwise error",
}


def _setup():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(context="paper", style="whitegrid", font_scale=0.85)
    return plt, sns


def _legend_label(table: pd.DataFrame) -> pd.Series:
    label = table["variant"].astype(str)
    if table["backend"].nunique() > 1:
        label = label + " [" + table["backend"].astype(str) + "]"
    if table["arch"].nunique() > 1:
        label = label + " " + table["arch"].astype(str)
    return label


def _size_axis(table: pd.DataFrame) -> tuple[str, str]:
    square = (table["m"] == table["k"]).all() and (table["n"] == table["k"]).all()
    return "k", ("size m = n = k" if square else "k (inner dimension)")


def _plot(table: pd.DataFrame, y: str, ylabel: str, out: Path, title: str) -> list[Path]:
    plt, sns = _setup()
    x, xlabel = _size_axis(table)
    data = table.assign(method=_legend_label(table))
    panels = sorted(data["dist_label"].unique())
    col_wrap = min(2, len(panels))
    g = sns.relplot(
        data=data,
        x=x,
        y=y,
        hue="method",
        style="format",
        col="dist_label",
        col_order=panels,
        col_wrap=col_wrap,
        kind="line",
        estimator="median",
        errorbar=None,
        markers=True,
        dashes=True,
        height=PANEL_IN,
        aspect=1.0,
        facet_kws={"sharey": False},
    )
    for ax in g.axes.flat:
        dist = ax.get_title().split(" = ", 1)[-1]
        sub = data[data["dist_label"] == dist]
        ax.scatter(sub[x], sub[y], s=4, color="0.5", alpha=0.4, zorder=0, linewidths=0)
    g.set(xscale="log", yscale="log")
    g.set_axis_labels(xlabel, ylabel)
    g.set_titles("{col_name}")
    xs = sorted(data[x].unique())
    for ax in g.axes.flat:
        ax.set_xticks(xs, [str(v) for v in xs], minor=False)
        ax.minorticks_off()
        if len(xs) > 4:  # keep crowded size labels legible at paper-column width
            ax.tick_params(axis="x", labelrotation=45, labelsize="small")
    sns.move_legend(
        g,
        "upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=2,
        frameon=False,
        fontsize="small",
        title_fontsize="small",
    )
    g.figure.suptitle(title, y=1.03, fontsize="medium")
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("png", "pdf"):
        path = out / f"{y}.{ext}"
        g.figure.savefig(path, dpi=200, bbox_inches="tight")
        paths.append(path)
    plt.close(g.figure)
    return paths


def plot_results(table: pd.DataFrame, out_dir: Path, title: str = "") -> list[Path]:
    """Write the accuracy and (when timings exist) speed figures; return the files written."""
    ok = table[table["status"] == "ok"] if "status" in table else table
    if ok.empty:
        return []
    paths = []
    errors = ok[ok["err_fro"].notna() & (ok["err_fro"] > 0)]
    if not errors.empty:
        paths += _plot(errors, "err_fro", ERROR_LABELS["err_fro"], out_dir, title)
    timed = ok[ok["tflops"].notna() & (ok["tflops"] > 0)]
    if not timed.empty:
        label = "TFLOP/s (2mnk / median time)"
        if set(timed["backend"]) == {"emulator"}:
            label = "emulator TFLOP/s (CPU)"  # not a GPU speed; say so on the figure
        paths += _plot(timed, "tflops", label, out_dir, title)
    return paths
