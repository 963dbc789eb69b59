"""Speed and accuracy of the GEMM kernels in one figure, from a ``precision bench-gemm`` table.

``python -m precision.gemm.gemm_plots results/bench/gemm_h200.csv --out DIR [--n N]
[--format png,pdf,svg]`` writes ``gemm_speed_accuracy.png`` (and the other formats asked
for): at size ``n`` (default: the largest in the table) on the uniform inputs, one row per
kernel (ours and cuBLAS's), its TFLOP/s on the left (sustained where the table has it, else
burst; 2·n³ / time) and its relative Frobenius error against the table's reference product
on the right (log scale). The rows run from the most accurate down; cuBLAS SGEMM's speed
and error are drawn as lines across both panels, so the kernels that are both faster and
more accurate than SGEMM stand out.

A table that cannot be drawn is refused with one line naming the file and the problem
(:mod:`precision.gemm.bench_figures`, shared with :mod:`precision.gemm.ozaki_plots`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from precision.console import run_main
from precision.gemm.bench_figures import (
    figure_cli,
    finish_bar_figure,
    read_csv_table,
    save_figure,
)

#: The table the figure is drawn from, as messages name it.
TABLE = "a precision bench-gemm table"
#: The columns of a ``bench-gemm`` table the figure needs.
NEEDED = ("method", "correction", "format", "backend", "n", "distribution", "tflops", "err_fro")
#: Point colours (seaborn's colorblind palette) by method; cuBLAS's kernels are grey.
METHOD_COLOURS = {
    "corrected (Ootomo)": "#de8f05",
    "corrected (Markidis)": "#cc78bc",
    "plain": "#0173b2",
    "satf": "#56b4e9",
    "cuBLAS": "#949494",
}


#: How the x label names the ``reference`` column's products (bench-gemm's ``_reference``).
REFERENCE_NAMES = {
    "exact_fp64": "the exact product",
    "dgemm_fp64": "a float64 GEMM",
}


def _family(r: pd.Series) -> str:
    """The :data:`METHOD_COLOURS` key of a row."""
    if r["backend"] == "cublas":
        return "cuBLAS"
    if r["method"] == "corrected":
        return f"corrected ({str(r['correction']).capitalize()})"
    return str(r["method"])


def kernel_label(r: pd.Series) -> str:
    """A row's name: cuBLAS's kernels by what they compute (SGEMM for fp32; its fp16 Ootomo
    correction takes three GEMMs), ours by method, format and correction."""
    fmt = str(r["format"])
    if r["backend"] == "cublas":
        if r["method"] == "corrected":
            return f"cuBLAS {fmt}, corrected (3 GEMMs)"
        return "cuBLAS SGEMM" if fmt == "fp32" else f"cuBLAS {fmt}"
    if r["method"] == "corrected":
        return f"corrected {fmt} ({str(r['correction']).capitalize()})"
    return f"{r['method']} {fmt}"


def speed_accuracy_rows(table: pd.DataFrame, n: int | None = None) -> tuple[pd.DataFrame, int]:
    """The uniform-input rows of ``table`` at size ``n`` (default: the largest), labelled,
    with the speed drawn (``speed``: ``tflops_sustained`` where present, else ``tflops``),
    most accurate first (ties: faster first); and that ``n``. ``ValueError`` naming the
    sizes there are if none is at ``n``."""
    uniform = table[table["distribution"] == "uniform"]
    sizes = sorted(int(v) for v in uniform["n"].unique())
    if not sizes:
        raise ValueError("no rows on uniform inputs")
    n = sizes[-1] if n is None else n
    if n not in sizes:
        raise ValueError(f"no rows at n = {n} (the table has n = {', '.join(map(str, sizes))})")
    d = uniform[uniform["n"] == n].copy()
    sustained = d["tflops_sustained"] if "tflops_sustained" in d else pd.Series(math.nan, d.index)
    d["speed"] = sustained.fillna(d["tflops"])
    d["label"] = d.apply(kernel_label, axis=1)
    d["family"] = d.apply(_family, axis=1)
    return d.sort_values(["err_fro", "speed"], ascending=[True, False], kind="stable"), n


def plot_speed_accuracy(
    csv: Path, out: Path, n: int | None = None, formats: Sequence[str] = ("png",)
) -> list[Path]:
    """Write ``gemm_speed_accuracy.<format>`` for the bench table ``csv`` into ``out``, one
    file per entry of ``formats`` (:data:`~precision.gemm.bench_figures.FORMATS`); returns
    their paths."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    table = read_csv_table(csv, NEEDED, TABLE)
    d, n = speed_accuracy_rows(table, n)
    if "tflops_sustained" in d and d["tflops_sustained"].notna().all():
        speed_label = "sustained TFLOP/s (2n³ / time)"
    elif "tflops_sustained" in d and d["tflops_sustained"].notna().any():
        speed_label = "TFLOP/s (2n³ / time): sustained where measured, else burst"
    else:
        speed_label = "TFLOP/s (2n³ / time), burst"
    y = list(range(len(d)))[::-1]  # the most accurate at the top
    colours = [METHOD_COLOURS.get(f, "#949494") for f in d["family"]]
    sgemm = d[d["label"] == "cuBLAS SGEMM"]

    fig, (speed_ax, error_ax) = plt.subplots(
        1, 2, figsize=(10.5, 0.3 * len(d) + 1.6), sharey=True, layout="constrained"
    )
    bars = speed_ax.barh(y, d["speed"], color=colours, height=0.7, zorder=2)
    speed_ax.bar_label(bars, fmt="%.0f", fontsize=8, padding=2)
    speed_ax.set_xlim(0, 1.15 * float(d["speed"].max()))
    speed_ax.set_xlabel(speed_label)
    error_ax.scatter(d["err_fro"], y, c=colours, s=36, zorder=3, edgecolors="white", lw=0.5)
    for yi, err in zip(y, d["err_fro"], strict=True):
        error_ax.annotate(f"{err:.1e}", (err, yi), xytext=(6, 0), textcoords="offset points",
                          va="center", fontsize=8)  # fmt: skip
    error_ax.set_xscale("log")
    low, high = float(d["err_fro"].min()), float(d["err_fro"].max())
    error_ax.set_xlim(low / 3, high * 12)  # room for the largest error's label
    reference = REFERENCE_NAMES.get(str(table.get("reference", pd.Series([""])).iloc[0]))
    error_ax.set_xlabel("relative Frobenius error" + (f" vs {reference}" if reference else ""))
    if len(sgemm):
        speed_ax.axvline(float(sgemm["speed"].iloc[0]), color="k", ls="--", lw=0.9, zorder=1)
        error_ax.axvline(float(sgemm["err_fro"].iloc[0]), color="k", ls="--", lw=0.9, zorder=1)
    speed_ax.set_yticks(y, d["label"])
    gpu = str(table["prov_gpu"].iloc[0]) if "prov_gpu" in table else "the GPU"
    families = [f for f in METHOD_COLOURS if f in set(d["family"])]
    handles: list[Patch | Line2D] = [Patch(color=METHOD_COLOURS[f], label=f) for f in families]
    if len(sgemm):
        handles.append(Line2D([], [], color="k", ls="--", lw=0.9, label="cuBLAS SGEMM"))
    finish_bar_figure(
        fig,
        (speed_ax, error_ax),
        f"GEMMs on {gpu}, n = {n}, uniform(−1, 1) inputs: speed and accuracy",
        handles,
    )
    paths = save_figure(fig, out, "gemm_speed_accuracy", formats)
    plt.close(fig)
    return paths


def main(argv: list[str] | None = None) -> int:
    return figure_cli(
        argv,
        prog="python -m precision.gemm.gemm_plots",
        doc=__doc__ or "",
        what=TABLE,
        check=lambda a: speed_accuracy_rows(read_csv_table(a.csv, NEEDED, TABLE), a.n),
        draw=lambda a: plot_speed_accuracy(a.csv, a.out, a.n, a.formats),
        extra=[(("--n",), {"type": int, "default": None,
                           "help": "size drawn (default: the largest)"})],
    )  # fmt: skip


if __name__ == "__main__":
    run_main(main)
