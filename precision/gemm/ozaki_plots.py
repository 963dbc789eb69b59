"""Figures of an Ozaki GPU bench run (``precision.gemm.ozaki_bench``'s ``ozaki_bench.csv``).

``python -m precision.gemm.ozaki_plots RUN/ozaki_bench.csv --out DIR`` writes

* ``ozaki_speed.png``: sustained TFLOP/s (DGEMM-equivalent: 2·n³ / time) per method at each
  size, DGEMM's level and 1.5x / 1.3x of it drawn as lines;
* ``ozaki_phases.png``: where an ozaki2 call spends its time (line statistics, residues,
  INT8 GEMMs, reconstruction), stacked per configuration and size, with DGEMM's time;
* ``ozaki_energy.png``: board energy per flop (pJ, NVML power x sustained time / flops).

Only rows timed on the phi = 0.5 inputs are drawn; every bar is labelled with its value.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from precision.console import directory_destination_problem, run_main

PHASES = ("stats", "split", "gemm", "reconstruct", "specials")
#: The columns of ``ozaki_bench.csv`` the figures need (its speed stage's rows).
NEEDED = ("method", "target", "terms", "n", "phi", "tflops_sustained", "ms_sustained",
          "pj_per_flop")  # fmt: skip


def _label(r: pd.Series) -> str:
    if r["method"] == "ozaki2":
        terms = str(r["terms"])
        moduli = r.get("moduli")
        if terms == "auto" and isinstance(moduli, float) and not math.isnan(moduli):
            terms = f"auto={int(moduli)}"
        gemm = r.get("gemm")
        path = f", {gemm}" if isinstance(gemm, str) and gemm else ""
        return f"ozaki2 {r['target']} {terms}{path}"
    if r["method"] == "cublas_fp64_emulated_eager":
        # terms: the fixed mantissa bits (a CSV gives "48", 48 or 48.0); empty or NaN for
        # cuBLAS's dynamic control
        bits = str(r.get("terms", "")).removesuffix(".0")
        return "cuBLAS FP64 emu." if bits in ("", "nan") else f"cuBLAS FP64 emu. {bits} bits"
    return {
        "dgemm": "DGEMM",
        "sgemm": "SGEMM",
        "corrected_fp16_ootomo": "corrected fp16",
    }.get(str(r["method"]), str(r["method"]))


def _timed(df: pd.DataFrame) -> pd.DataFrame:
    t = df[df["tflops_sustained"].notna() & (df["phi"].astype(float) == 0.5)].copy()
    t["label"] = t.apply(_label, axis=1)
    return t


def read_bench(csv: Path) -> pd.DataFrame:
    """The timed phi = 0.5 rows of the bench table ``csv``, labelled; ``ValueError`` with one
    line naming ``csv`` and the problem if it is missing, not a csv table, lacks a column of
    :data:`NEEDED` or has no such row."""
    if not csv.is_file():
        why = "no such file" if not csv.exists() else "not a file"
        raise ValueError(f"{csv}: {why} (expected an ozaki_bench.csv of "
                         "precision.gemm.ozaki_bench)")  # fmt: skip
    try:
        df = pd.read_csv(csv)
    except (ValueError, OSError) as exc:  # unreadable, empty or malformed (ParserError...)
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"{csv}: cannot read it as a csv table ({why})") from None
    missing = [c for c in NEEDED if c not in df.columns]
    if missing:
        raise ValueError(
            f"{csv}: no column {', '.join(missing)} (the figures need the columns "
            f"{', '.join(NEEDED)} of an ozaki_bench.csv of precision.gemm.ozaki_bench)"
        )
    df = _timed(df)
    if df.empty:
        raise ValueError(f"{csv}: no timed rows (tflops_sustained) on phi = 0.5 inputs")
    return df


def plot_bench(csv: Path, out: Path) -> list[Path]:
    """Write the three figures for ``csv`` into ``out``; returns their paths."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    df = read_bench(csv)
    out.mkdir(parents=True, exist_ok=True)
    sizes = sorted(df["n"].astype(int).unique())
    written: list[Path] = []

    def panels(name: str, draw: Callable[[Any, int], None], legend: bool) -> None:
        """One figure ``name`` with a panel per size, ``draw(ax, n)`` filling each."""
        fig, axes = plt.subplots(1, len(sizes), figsize=(6.5 * len(sizes), 5), squeeze=False)
        for ax, n in zip(axes[0], sizes, strict=True):
            draw(ax, n)
            ax.tick_params(axis="y", labelsize=8)
        if legend:
            axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.tight_layout()
        written.append(out / name)
        fig.savefig(written[-1], dpi=150)
        plt.close(fig)

    def bars(ax: Any, d: pd.DataFrame, col: str, color: str) -> None:
        d = d.sort_values(col)
        ax.bar_label(ax.barh(d["label"], d[col], color=color), fmt="%.1f", fontsize=8, padding=2)
        top = float(d[col].max()) if len(d) else math.nan
        if math.isfinite(top) and top > 0:
            ax.set_xlim(0, 1.12 * top)  # room for the longest bar's label inside the panel

    def dgemm(n: int, col: str) -> float | None:
        dg = df[(df["n"] == n) & (df["method"] == "dgemm")][col]
        return float(dg.iloc[0]) if len(dg) else None

    def speed(ax: Any, n: int) -> None:
        bars(ax, df[df["n"] == n], "tflops_sustained", "#4c72b0")
        base = dgemm(n, "tflops_sustained")
        if base is not None:
            for mult, style in ((1.0, "-"), (1.3, ":"), (1.5, "--")):
                ax.axvline(mult * base, color="k", ls=style, lw=0.8, label=f"{mult:g}x DGEMM")
        ax.set_title(f"n = {n}: sustained TFLOP/s (2n³/t), H200")
        ax.set_xlabel("TFLOP/s")

    def phases(ax: Any, n: int) -> None:
        d = oz[oz["n"] == n]
        left = pd.Series(0.0, index=d.index)
        for ph in PHASES:
            col = f"ms_{ph}"
            if col not in d:
                continue
            v = d[col].fillna(0.0)
            ax.barh(d["label"], v, left=left, label=ph)
            left = left + v
        base = dgemm(n, "ms_sustained")
        if base is not None:
            for div, style in ((1.0, "-"), (1.3, ":"), (1.5, "--")):
                ax.axvline(base / div, color="k", ls=style, lw=0.8, label=f"DGEMM / {div:g}")
        ax.set_title(f"n = {n}: time per ozaki2 call by phase (ms, CUDA events)")
        ax.set_xlabel("ms")

    def energy(ax: Any, n: int) -> None:
        bars(ax, en[en["n"] == n], "pj_per_flop", "#dd8452")
        ax.set_title(f"n = {n}: board energy per flop (pJ), sustained")
        ax.set_xlabel("pJ / flop")

    panels("ozaki_speed.png", speed, legend=True)
    oz = df[(df["method"] == "ozaki2") & df.get("ms_gemm", pd.Series(dtype=float)).notna()]
    if not oz.empty:
        panels("ozaki_phases.png", phases, legend=True)
    en = df[df["pj_per_flop"].notna()]
    if not en.empty:
        panels("ozaki_energy.png", energy, legend=False)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m precision.gemm.ozaki_plots", description=__doc__.split("\n")[0]
    )
    ap.add_argument("csv", type=Path, help="an ozaki_bench.csv of precision.gemm.ozaki_bench")
    ap.add_argument("--out", type=Path, required=True,
                    help="directory for the figures (required; created if missing)")  # fmt: skip
    args = ap.parse_args(argv)
    try:  # the table first: a bad one leaves no --out directory behind
        read_bench(args.csv)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    problem = directory_destination_problem(args.out, "--out")
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    for p in plot_bench(args.csv, args.out):
        print(p)
    return 0


if __name__ == "__main__":
    run_main(main)
