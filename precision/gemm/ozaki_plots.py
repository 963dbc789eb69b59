"""Figures of an Ozaki GPU bench run (``precision.gemm.ozaki_bench``'s ``ozaki_bench.csv``).

``python -m precision.gemm.ozaki_plots RUN/ozaki_bench.csv --out DIR [--format png,pdf,svg]``
writes these figures (png by default; pdf and svg on request):

* ``ozaki_speed.png``: sustained TFLOP/s (DGEMM-equivalent: 2·n³ / time) per method at each
  size, each bar labelled with its ratio to DGEMM and coloured by what it is (our FP64
  emulation, our FP32-level GEMMs, cuBLAS); DGEMM's level and 1.3x / 1.5x of it drawn as
  lines; FP64 bars hatched where the table's error rows miss DGEMM's accuracy (median <=
  DGEMM's, maximum <= 2x DGEMM's at phi = 0, 0.5 and 1: the issue's lines);
* ``ozaki_phases.png``: where an ozaki2 call spends its time (line statistics, residues,
  INT8 GEMMs, reconstruction), stacked per configuration and size, with DGEMM's time;
* ``ozaki_energy.png``: board energy per flop (pJ, NVML power x sustained time / flops).

Only rows timed on the phi = 0.5 inputs are drawn, in the same order in every panel.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from precision.console import run_main
from precision.gemm.bench_figures import (
    figure_cli,
    finish_bar_figure,
    read_csv_table,
    save_figure,
)

#: The table the figures are drawn from, as messages name it.
TABLE = "an ozaki_bench.csv of precision.gemm.ozaki_bench"
#: The columns of ``ozaki_bench.csv`` the figures need (its speed stage's rows).
NEEDED = ("method", "target", "terms", "n", "phi", "tflops_sustained", "ms_sustained",
          "pj_per_flop")  # fmt: skip


def _label(r: pd.Series) -> str:
    """A bar's name: the method, its target and moduli (scheme II: ``auto`` with the count it
    chose; the INT8 GEMMs are ours, fused with the residue step, unless marked cuBLAS), or
    the cuBLAS baseline."""
    if r["method"] == "ozaki2":
        terms = str(r["terms"]).removesuffix(".0")
        moduli = r.get("moduli")
        if terms == "auto" and isinstance(moduli, float) and not math.isnan(moduli):
            terms = f"auto: {int(moduli)}"
        path = ", cuBLAS INT8" if r.get("gemm") == "cublas" else ""
        return f"ozaki2 {r['target']}, {terms} moduli{path}"
    if r["method"] == "cublas_fp64_emulated_eager":
        # terms: the fixed mantissa bits (a CSV gives "48", 48 or 48.0); empty or NaN for
        # cuBLAS's dynamic control
        bits = str(r.get("terms", "")).removesuffix(".0")
        return "cuBLAS FP64 emu." if bits in ("", "nan") else f"cuBLAS FP64 emu. {bits} bits"
    return {
        "dgemm": "DGEMM",
        "sgemm": "SGEMM",
        "corrected_fp16_ootomo": "corrected fp16 (Ootomo)",
    }.get(str(r["method"]), str(r["method"]))


def read_bench(csv: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The bench table ``csv`` whole, and its timed phi = 0.5 rows, labelled; ``ValueError``
    with one line naming ``csv`` and the problem if it is missing, not a csv table, lacks a
    column of :data:`NEEDED` or has no such row."""
    table = read_csv_table(csv, NEEDED, TABLE)
    timed = table[table["tflops_sustained"].notna() & (table["phi"].astype(float) == 0.5)].copy()
    if timed.empty:
        raise ValueError(f"{csv}: no timed rows (tflops_sustained) on phi = 0.5 inputs")
    timed["label"] = timed.apply(_label, axis=1)
    return table, timed


#: Bar colours (seaborn's colorblind palette) by what a bar measures: our FP64 emulation, our
#: FP32-level GEMMs (Ozaki-II fp32, corrected fp16) and cuBLAS's own GEMMs and emulation.
GROUP_COLOURS = {
    "ours: FP64 emulation": "#0173b2",
    "ours: FP32 level": "#de8f05",
    "cuBLAS": "#949494",
}
#: Colours of the phases of an ozaki2 call (stacked in this order), with their legend names.
PHASE_LOOK = {
    "stats": ("line statistics", "#56b4e9"),
    "split": ("residues (split)", "#0173b2"),
    "gemm": ("INT8 GEMMs", "#029e73"),
    "reconstruct": ("reconstruction", "#d55e00"),
    "specials": ("special values", "#cc78bc"),
}
#: Multiples of DGEMM's speed drawn as reference lines: the issue's 1.3x and 1.5x targets.
DGEMM_MULTIPLES = ((1.0, "-"), (1.3, ":"), (1.5, "--"))


def bar_group(r: pd.Series) -> str:
    """The :data:`GROUP_COLOURS` key of a bench row: ours (Ozaki schemes, corrected fp16) at
    FP64 or FP32 level, or cuBLAS (DGEMM, SGEMM, its FP64 emulation)."""
    method = str(r["method"])
    if method.startswith("ozaki"):
        return "ours: FP64 emulation" if str(r["target"]) == "fp64" else "ours: FP32 level"
    if method.startswith("corrected"):
        return "ours: FP32 level"
    return "cuBLAS"


#: The issue's accuracy lines for FP64: at each of these phi (and every error size), the
#: median elementwise relative error at most DGEMM's and the maximum at most twice DGEMM's.
ACCURACY_PHIS = (0.0, 0.5, 1.0)


def _config(r: pd.Series) -> tuple[str, str, str]:
    """(method, target, terms) of a row, terms as written by a CSV round trip ('' if none)."""
    terms = r.get("terms")
    text = "" if terms is None or (isinstance(terms, float) and math.isnan(terms)) else str(terms)
    return str(r["method"]), str(r["target"]), text.removesuffix(".0")


def dgemm_accuracy_verdicts(table: pd.DataFrame) -> dict[tuple[str, str, str], bool]:
    """For every FP64 configuration (:func:`_config`) with error rows in the bench ``table``:
    whether it meets DGEMM's accuracy on every error row at :data:`ACCURACY_PHIS` (median
    <= DGEMM's, maximum <= 2 x DGEMM's, against DGEMM's row of the same n and phi). The
    GEMM path is not part of the key: both paths give the same bits."""
    if not {"err_median", "err_max"} <= set(table.columns):
        return {}
    err = table[table["err_median"].notna() & table["phi"].astype(float).isin(ACCURACY_PHIS)]
    dg = err[err["method"] == "dgemm"].set_index(["n", "phi"])[["err_median", "err_max"]]
    dg = dg[~dg.index.duplicated()]
    verdicts: dict[tuple[str, str, str], bool] = {}
    for _, r in err[(err["target"] == "fp64") & (err["method"] != "dgemm")].iterrows():
        key = (r["n"], r["phi"])
        if key not in dg.index:
            continue
        ok = bool(r["err_median"] <= dg.loc[key, "err_median"]
                  and r["err_max"] <= 2 * dg.loc[key, "err_max"])  # fmt: skip
        verdicts[_config(r)] = verdicts.get(_config(r), True) and ok
    return verdicts


def bar_order(d: pd.DataFrame, col: str) -> list[str]:
    """The labels of ``d`` from top to bottom, the same in every panel: by ``col`` at the
    smallest size, fastest (largest) first; labels missing there follow, by their value at
    the next size."""
    order: list[str] = []
    for n in sorted(d["n"].astype(int).unique()):
        at = d[d["n"] == n].sort_values(col, ascending=False, kind="stable")
        order += [label for label in at["label"] if label not in order]
    return order


def plot_bench(csv: Path, out: Path, formats: Sequence[str] = ("png",)) -> list[Path]:
    """Write the three figures for ``csv`` into ``out``, one file per entry of ``formats``
    (png, pdf, svg) each; returns their paths.

    Every panel lists the same bars in the same order (top: fastest at the smallest size), so
    a configuration sits at the same height at every n; speed bars are labelled with their
    TFLOP/s and their ratio to DGEMM at that n."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    table, df = read_bench(csv)
    df["group"] = df.apply(bar_group, axis=1)
    verdicts = dgemm_accuracy_verdicts(table)
    df["misses_accuracy"] = [verdicts.get(_config(r)) is False for _, r in df.iterrows()]
    out.mkdir(parents=True, exist_ok=True)
    sizes = sorted(df["n"].astype(int).unique())
    written: list[Path] = []

    def panels(name: str, title: str, draw: Callable[[Any, int], None], handles: list[Any]) -> None:
        """One figure ``name`` with a panel per size, ``draw(ax, n)`` filling each, and one
        legend of ``handles`` below the panels."""
        fig, axes = plt.subplots(1, len(sizes), figsize=(1.6 + 5.0 * len(sizes), 4.8),
                                 squeeze=False, sharey=True, layout="constrained")  # fmt: skip
        for ax, n in zip(axes[0], sizes, strict=True):
            draw(ax, n)
        finish_bar_figure(fig, axes[0], title, handles)  # (sharey: y labels on the first only)
        written.extend(save_figure(fig, out, name, formats))
        plt.close(fig)

    def dgemm(n: int, col: str) -> float | None:
        dg = df[(df["n"] == n) & (df["method"] == "dgemm")][col]
        return float(dg.iloc[0]) if len(dg) else None

    def reference_lines() -> list[Any]:
        from matplotlib.lines import Line2D

        return [Line2D([], [], color="k", ls=style, lw=0.9, label=f"{mult:g}× DGEMM")
                for mult, style in DGEMM_MULTIPLES]  # fmt: skip

    group_handles = [Patch(color=c, label=g) for g, c in GROUP_COLOURS.items()
                     if g in set(df["group"])]  # fmt: skip

    def bars(ax: Any, d: pd.DataFrame, col: str, order: list[str], labels: list[str]) -> None:
        """Horizontal bars of ``d[col]`` in ``order`` (top first), coloured by group and
        labelled with ``labels`` (by row of ``d``); rows absent from ``d`` leave a gap."""
        d = d.set_index("label").reindex(order)
        y = range(len(order))[::-1]  # the first label at the top
        colours = [GROUP_COLOURS.get(g, "#949494") if isinstance(g, str) else "none"
                   for g in d["group"]]  # fmt: skip
        container = ax.barh(list(y), d[col].fillna(0.0), color=colours, height=0.72, zorder=2)
        ax.bar_label(container, labels=labels, fontsize=8, padding=3,
                     bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.6})  # fmt: skip
        for patch, miss in zip(container.patches, d["misses_accuracy"], strict=True):
            if miss is True:
                patch.set_hatch("////")
                patch.set_edgecolor("white")
        ax.set_yticks(list(y), order)
        top = float(d[col].max()) if d[col].notna().any() else math.nan
        if math.isfinite(top) and top > 0:
            ax.set_xlim(0, 1.28 * top)  # room for the longest bar's label inside the panel

    speed_order = bar_order(df, "tflops_sustained")

    def speed(ax: Any, n: int) -> None:
        d = df[df["n"] == n].set_index("label").reindex(speed_order).reset_index()
        base = dgemm(n, "tflops_sustained")
        labels = [
            "" if math.isnan(v) else f"{v:.1f}" if not base or m == "dgemm"
            else f"{v:.1f}  ({v / base:.2f}×)"
            for v, m in zip(d["tflops_sustained"], d["method"], strict=True)
        ]  # fmt: skip
        if base is not None:
            for mult, style in DGEMM_MULTIPLES:
                ax.axvline(mult * base, color="k", ls=style, lw=0.9, zorder=1)
        bars(ax, d, "tflops_sustained", speed_order, labels)
        ax.set_title(f"n = {n}", fontsize=10)
        ax.set_xlabel("sustained TFLOP/s (2n³ / time)")

    if df["misses_accuracy"].any():
        group_handles.append(Patch(facecolor="#949494", edgecolor="white", hatch="////",
                                   label="misses DGEMM's accuracy (φ ≤ 1)"))  # fmt: skip
    panels(
        "ozaki_speed",
        "Sustained speed on the H200 at its 700 W cap (φ = 0.5 inputs), × DGEMM at each n",
        speed,
        group_handles + reference_lines(),
    )

    oz = df[(df["method"] == "ozaki2") & df.get("ms_gemm", pd.Series(dtype=float)).notna()]
    phase_order = [label for label in speed_order if label in set(oz["label"])]

    def phases(ax: Any, n: int) -> None:
        d = oz[oz["n"] == n].set_index("label").reindex(phase_order)
        y = list(range(len(phase_order)))[::-1]
        left = pd.Series(0.0, index=d.index)
        for ph, (_, colour) in PHASE_LOOK.items():
            col = f"ms_{ph}"
            if col not in d:
                continue
            v = d[col].fillna(0.0)
            ax.barh(y, v, left=left, color=colour, height=0.72, zorder=2)
            left = left + v
        base = dgemm(n, "ms_sustained")
        if base is not None:
            for div, style in DGEMM_MULTIPLES:
                ax.axvline(base / div, color="k", ls=style, lw=0.9, zorder=1)
        ax.set_yticks(y, phase_order)
        ax.set_title(f"n = {n}", fontsize=10)
        ax.set_xlabel("ms per call (CUDA events)")

    if not oz.empty:
        from matplotlib.lines import Line2D

        phase_handles = [Patch(color=c, label=name) for name, c in PHASE_LOOK.values()]
        dgemm_handles = [Line2D([], [], color="k", ls=style, lw=0.9,
                                label="DGEMM's time" if div == 1 else f"its / {div:g}")
                         for div, style in DGEMM_MULTIPLES]  # fmt: skip
        panels("ozaki_phases", "Time per ozaki2 call by phase, H200",
               phases, phase_handles + dgemm_handles)  # fmt: skip

    en = df[df["pj_per_flop"].notna()]
    energy_order = [label for label in speed_order if label in set(en["label"])]

    def energy(ax: Any, n: int) -> None:
        d = en[en["n"] == n].set_index("label").reindex(energy_order).reset_index()
        labels = ["" if math.isnan(v) else f"{v:.1f}" for v in d["pj_per_flop"]]
        bars(ax, d, "pj_per_flop", energy_order, labels)
        ax.set_title(f"n = {n}", fontsize=10)
        ax.set_xlabel("pJ per flop (board power x sustained time / 2n³)")

    if not en.empty:
        panels("ozaki_energy", "Board energy per flop, sustained, H200", energy,
               group_handles)  # fmt: skip
    return written


def main(argv: list[str] | None = None) -> int:
    return figure_cli(
        argv,
        prog="python -m precision.gemm.ozaki_plots",
        doc=__doc__ or "",
        what=TABLE,
        check=lambda a: read_bench(a.csv),
        draw=lambda a: plot_bench(a.csv, a.out, a.formats),
    )


if __name__ == "__main__":
    run_main(main)
