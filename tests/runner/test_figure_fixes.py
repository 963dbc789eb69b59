"""What the shipped figures and summaries promise: plotting one more metric keeps the summary
tables already written, the quickstart times warm calls, a `terms` axis labels every term
count and keeps its extreme values inside the frame, and the Ozaki config's `row` says what
its rows show. Synthetic tables (no GEMM is computed)."""

from __future__ import annotations

import json
import math
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg", force=True)

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from precision.runner.cli import main
from precision.runner.config import load_config
from precision.runner.execute import compute_point
from precision.runner.figures import PlotSpec, parse_plot, plot_table_of
from precision.runner.plotting import UNIT_ROUNDOFFS, draw_figure, prepare
from precision.runner.summary import pivot
from precision.runner.sweep import expand

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
FP64_U = UNIT_ROUNDOFFS["fp64"][0]
OZAKI2_TERMS = (6, 8, 10, 12, 13, 14, 15, 16, 18, 20)
OZAKI1_TERMS = (3, 4, 5, 6, 7, 8)
#: A value or reference line this far (a fraction of the axis height) from the frame is
#: visibly inside: more than a marker's radius on a panel about 2 inches high.
VISIBLE = 0.03


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# ----------------------------------------------------------------------------- summary kept


def _square_rows() -> pd.DataFrame:
    """Two series at three sizes, three repeats, with errors and TFLOP/s."""
    out = []
    for variant, fmt in (("plain", "fp16"), ("corrected-ootomo", "fp16")):
        for size in (32, 64, 128):
            for rep in range(3):
                v = (1e-3 if variant == "plain" else 1e-6) / (1 + rep)
                out.append(
                    {
                        "name": "s",
                        "point_id": f"{variant}{size}",
                        "m": size, "n": size, "k": size,
                        "distribution": "uniform", "dist_label": "uniform",
                        "method": variant.split("-")[0],
                        "correction": (variant.split("-") + [None])[1],
                        "variant": variant, "format": fmt, "backend": "emulator",
                        "arch": "sm90", "repeat": rep, "status": "ok", "error": None,
                        "err_fro": v, "err_max": 10 * v, "err_median": v / 2,
                        "tflops": 1e-6 * size, "time_s": 1.0,
                    }
                )  # fmt: skip
    return pd.DataFrame(out)


def _sections(md: str) -> dict[str, str]:
    """The tables of a summary.md by metric: heading line to the next heading."""
    out: dict[str, str] = {}
    for part in md.split("\n## ")[1:]:
        out[part.partition(":")[0]] = part
    return out


def test_plotting_another_metric_keeps_the_summary_tables_already_written(tmp_path, capsys):
    root = tmp_path / "res"
    root.mkdir()
    _square_rows().to_parquet(root / "results.parquet")
    (root / "config.toml").write_text('name = "s"\n[plot]\nformat = "png"\n')
    figures = root / "figures"

    assert main(["plot", str(root)]) == 0  # what `precision run` draws: err_fro, tflops
    first = _sections((figures / "summary.md").read_text())
    assert list(first) == ["err_fro", "tflops"]  # a fresh folder: the figures' metrics only
    assert "tflops" in pd.read_csv(figures / "summary.csv")

    assert main(["plot", str(root), "--metric", "err_max"]) == 0
    md = (figures / "summary.md").read_text()
    after = _sections(md)
    assert list(after) == ["err_fro", "tflops", "err_max"]  # added, none dropped
    assert after["err_fro"] == first["err_fro"] and after["tflops"] == first["tflops"]
    tex = (figures / "summary.tex").read_text()
    assert tex.count(r"\begin{table}") == 3
    for metric in ("err\\_fro", "tflops", "err\\_max"):
        assert f"\\caption{{{metric}: " in tex
    summary = pd.read_csv(figures / "summary.csv")
    assert {"err_fro", "err_max", "tflops", "time_s"} <= set(summary.columns)
    # The err_max table holds the medians over repeats of err_max (10 * 1e-3 / 2 for plain).
    plain = next(line for line in after["err_max"].splitlines() if "| plain |" in line)
    assert plain.split("|")[-4:-1] == [" 5.00e-03 "] * 3

    # A later run (the config's metrics again) keeps the err_max table too, in its place.
    assert main(["plot", str(root)]) == 0
    assert list(_sections((figures / "summary.md").read_text())) == list(after)
    capsys.readouterr()


@pytest.fixture(scope="module")
def square_plotted(tmp_path_factory) -> Path:
    """The figures folder of _square_rows() plotted with err_fro and tflops (png), as a run
    draws them; shared: each test copies it."""
    from precision.runner.plotting import plot_results

    out = tmp_path_factory.mktemp("square") / "figures"
    plot_results(_square_rows(), out, "s", PlotSpec(formats=("png",)))
    plt.close("all")
    return out


def test_a_kept_metric_without_values_or_column_keeps_its_place_and_returns(
    tmp_path, square_plotted
):
    """Summarising results that lack a metric summarised before (another experiment plotted
    into the same folder, a table without that column) neither fails nor forgets it: its
    section stays, saying why it is empty, and a later plot with values fills it again."""
    from precision.runner.plotting import plot_results

    out = tmp_path / "figures"
    full = _square_rows()
    shutil.copytree(square_plotted, out)  # plot_results(full, out, "s", png: both metrics)
    first = _sections((out / "summary.md").read_text())
    assert list(first) == ["err_fro", "tflops"]

    errors_only = PlotSpec(metrics=("err_fro",), formats=("png",))
    for table, why in (
        (full.drop(columns=["tflops", "time_s"]), "(they have no tflops column)"),
        (full.assign(tflops=np.nan), "no finite tflops in the current results."),
    ):
        paths = plot_results(table, out, "s", errors_only)
        assert out / "summary.md" in paths
        after = _sections((out / "summary.md").read_text())
        assert list(after) == ["err_fro", "tflops"]
        assert "No table: no finite tflops" in after["tflops"] and why in after["tflops"]
        assert "| plain |" not in after["tflops"]  # no numbers of the earlier results
        assert after["err_fro"] == first["err_fro"]
        assert "% tflops: " in (out / "summary.tex").read_text()

    plot_results(full, out, "s", errors_only)  # values again: the table comes back
    assert _sections((out / "summary.md").read_text()) == first


def test_a_summary_with_a_byte_that_is_not_utf8_keeps_its_tables(tmp_path, square_plotted):
    from precision.runner.plotting import plot_results

    out = tmp_path / "figures"
    shutil.copytree(square_plotted, out)  # plot_results(_square_rows(), out, "s", png)
    md = out / "summary.md"
    md.write_bytes(md.read_bytes() + b"\nnotes: caf\xe9 (saved as Latin-1 by an editor)\n")
    plot_results(_square_rows(), out, "s", PlotSpec(metrics=("err_max",), formats=("png",)))
    assert list(_sections(md.read_text())) == ["err_fro", "tflops", "err_max"]


def test_plot_skips_a_metric_whose_column_the_table_lacks(tmp_path, capsys):
    root = tmp_path / "res"
    root.mkdir()
    _square_rows().drop(columns=["tflops", "time_s"]).to_parquet(root / "results.parquet")
    (root / "config.toml").write_text('name = "s"\n[plot]\nformat = "png"\n')
    assert main(["plot", str(root), "--metric", "err_fro,tflops"]) == 0
    err = capsys.readouterr().err
    assert "no tflops figure: the results have no tflops column" in err
    assert (root / "figures" / "err_fro.png").exists()
    assert list(_sections((root / "figures" / "summary.md").read_text())) == ["err_fro"]


# ----------------------------------------------------------------------------- warm timing


def test_quickstart_times_warm_calls(monkeypatch):
    """Every timed call of the quickstart follows an untimed one on the same inputs: a GEMM
    whose first call on new inputs is slow (as numpy's and the emulator's are) is timed at
    its warm speed."""
    cold_s = 0.2  # (a warm 32x32 call takes microseconds; room for a loaded machine)
    seen: set[tuple] = set()

    def first_call_slow(A, B, **kwargs):
        key = (np.asarray(A).tobytes(), np.asarray(B).tobytes(), tuple(sorted(kwargs.items())))
        if key not in seen:
            seen.add(key)
            time.sleep(cold_s)
        return (np.asarray(A, np.float64) @ np.asarray(B, np.float64)).astype(np.float32)

    points = [p for p in expand(load_config(CONFIGS / "quickstart.toml")) if p.k == 32]
    picked = {(p.backend, p.format): p for p in points}  # one point per backend and format
    assert ("numpy", "fp32") in picked and ("emulator", "fp16") in picked
    for point in picked.values():
        rows = compute_point(point, gemm=first_call_slow)
        assert (rows["status"] == "ok").all(), rows["error"]
        assert len(rows) == point.repeats
        assert (rows["time_s"] < cold_s / 2).all(), (point.slug, list(rows["time_s"]))


# ----------------------------------------------------------------------------- terms axis


def _ozaki_rows(ks=(64, 256), phis=(0.0, 4.0)) -> pd.DataFrame:
    """Ozaki I and II rows at their term counts (error falling 10x per term down to a floor:
    exactly fp64's unit roundoff 2^-53 at phi = 0) and float64 baselines without terms."""
    out = []

    def row(k, phi, method, fmt, backend, terms, value):
        return {
            "name": "oz", "point_id": f"{k}{phi}{method}{terms}", "m": 64, "n": 64, "k": k,
            "distribution": "exp_rand", "dist_label": f"exp_rand(phi={phi:g})",
            "dist_params": json.dumps({"phi": phi}), "method": method, "correction": None,
            "variant": method, "format": fmt, "backend": backend, "arch": "sm90",
            "target": "fp64" if terms is not None else None,
            "terms": float(terms) if terms is not None else np.nan,
            "terms_requested": str(terms) if terms is not None else None,
            "repeat": 0, "status": "ok", "error": None,
            "err_fro": value, "err_max": value, "err_median": value / 3,
            "tflops": np.nan, "time_s": 1.0,
        }  # fmt: skip

    for k in ks:
        for phi in phis:
            for method, counts in (("ozaki1", OZAKI1_TERMS), ("ozaki2", OZAKI2_TERMS)):
                for t in counts:
                    floor = FP64_U if phi == 0 else 1e-13  # saturates, as wide phi does
                    value = max(floor, 10.0 ** (2 - t - phi / 4))
                    out.append(row(k, phi, method, "int8", "emulator", t, value))
            out.append(row(k, phi, "plain", "fp64", "numpy", None, 3e-16))
    return pd.DataFrame(out)


OZAKI_SPEC = PlotSpec(
    metrics=("err_max",), x="terms", hue="phi", style="none", col="method", formats=("png",)
)


def _tick_labels(ax) -> dict[float, str]:
    return {float(t.get_position()[0]): t.get_text() for t in ax.get_xticklabels()}


def _bottom_axes(fig) -> dict[str, Any]:
    """The lowest visible axes of each panel column (the one with tick labels), by the
    column's title (shown on its top panel)."""
    visible = [ax for ax in fig.axes if ax.get_visible()]
    title = {ax.get_subplotspec().colspan.start: ax.get_title() for ax in visible if ax.get_title()}
    lowest: dict[int, Any] = {}
    for ax in visible:
        spec = ax.get_subplotspec()
        col = spec.colspan.start
        if col not in lowest or spec.rowspan.start > lowest[col].get_subplotspec().rowspan.start:
            lowest[col] = ax
    return {title[c]: ax for c, ax in lowest.items()}


def _overlapping_labels(fig, ax, draw: bool = True) -> list[tuple[str, str]]:
    """The x tick labels of ``ax`` that overlap, as ``fig`` is saved: drawn first, unless
    ``draw`` is False (the caller drew it, and changed nothing since)."""
    if draw:
        fig.canvas.draw()
    boxes = [(t.get_text(), t.get_window_extent()) for t in ax.get_xticklabels() if t.get_text()]
    boxes.sort(key=lambda tb: tb[1].x0)
    pairs = zip(boxes, boxes[1:], strict=False)
    return [(a, b) for (a, ba), (b, bb) in pairs if ba.x1 > bb.x0]


@pytest.fixture(scope="module")
def ozaki_figure():
    """The err_max figure of _ozaki_rows() on a terms axis; shared: drawn once, read only.
    Taken out of pyplot onto an Agg canvas of its own (``_close_figures`` would reset its
    canvas after the first test that reads it)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = draw_figure(prepare(_ozaki_rows(), OZAKI_SPEC, "err_max"), "err_max", OZAKI_SPEC, "")
    plt.close(fig)
    FigureCanvasAgg(fig)
    return fig


def test_terms_axis_labels_every_term_count_at_its_integer(ozaki_figure):
    fig = ozaki_figure
    axes = _bottom_axes(fig)
    assert set(axes) == {"ozaki1", "ozaki2"}
    fig.canvas.draw()  # as saved, once for both columns (the loop only reads the figure)
    for col, counts in (("ozaki1", OZAKI1_TERMS), ("ozaki2", OZAKI2_TERMS)):
        ax = axes[col]
        labels = _tick_labels(ax)
        for t in counts:  # 13, 14 and 15 moduli included
            assert labels.get(float(t)) == str(t), (col, t, labels)
        labelled = {x: s for x, s in labels.items() if s}
        assert all(float(s) == x for x, s in labelled.items())  # a label sits at its count
        assert _overlapping_labels(fig, ax, draw=False) == []
        lo, hi = ax.get_xlim()
        assert lo < min(counts) and hi > max(counts)  # every marker inside the panel


def test_terms_labels_are_thinned_rather_than_overlapping_in_a_small_figure():
    spec = replace(OZAKI_SPEC, size=(3.2, 3.0))
    table = _ozaki_rows(ks=(64,))
    fig = draw_figure(prepare(table, spec, "err_max"), "err_max", spec, "")
    ax = _bottom_axes(fig)["ozaki2"]
    labels = _tick_labels(ax)
    assert set(labels) >= {float(t) for t in OZAKI2_TERMS}  # still a tick at every count
    assert _overlapping_labels(fig, ax) == []
    assert sum(1 for s in labels.values() if s) >= 3


def test_smallest_values_and_the_unit_roundoff_line_are_inside_the_log_axis(ozaki_figure):
    # err_max reaches 2^-53 exactly (phi = 0), as the Ozaki schemes do when correctly rounded.
    table = _ozaki_rows()
    assert math.isclose(float(table["err_max"].min()), FP64_U)
    fig = ozaki_figure
    for ax in (a for a in fig.axes if a.get_visible()):
        lo, hi = (math.log10(v) for v in ax.get_ylim())
        low = min(math.log10(y) for line in ax.get_lines() for y in line.get_ydata())
        high = max(math.log10(y) for line in ax.get_lines() for y in line.get_ydata())
        assert low - lo >= VISIBLE * (hi - lo), (ax.get_title(), low, lo)
        assert hi - high >= VISIBLE * (hi - lo), (ax.get_title(), high, hi)
        assert lo == round(lo) and hi == round(hi)  # still whole decades


def test_terms_axis_states_points_without_a_term_count():
    """On a terms axis, rows with no count (Ozaki points with terms = "auto" that were not
    computed, and baselines drawn as levels) that have no value are listed under the figure
    like any other point, not dropped."""
    table = _ozaki_rows(ks=(64,), phis=(0.0,))
    auto = (table["method"] == "ozaki2") & (table["terms"] == 20)
    not_computed = [np.nan, "auto", "unavailable", np.nan]
    table.loc[auto, ["terms", "terms_requested", "status", "err_max"]] = not_computed
    table.loc[table["method"] == "ozaki1", "terms_requested"] = "auto"
    fails = (table["method"] == "ozaki1") & (table["terms"] == 8)
    table.loc[fails, ["terms", "status", "err_max"]] = [np.nan, "error", np.nan]
    table.loc[table["method"] == "plain", ["status", "err_max"]] = ["error", np.nan]
    fig = draw_figure(prepare(table, OZAKI_SPEC, "err_max"), "err_max", OZAKI_SPEC, "")
    text = " ".join(" ".join(t.get_text().split()) for sub in fig.subfigs for t in sub.texts)
    assert "Not shown" in text
    assert "φ = 0 [ozaki2]: unavailable without a terms value" in text
    assert "φ = 0 [ozaki1]: error without a terms value" in text
    assert "fp64 numpy matmul (BLAS DGEMM): error without a terms value" in text


# ----------------------------------------------------------------------------- ozaki rows


def test_ozaki_config_row_names_what_the_rows_show():
    raw = plot_table_of(CONFIGS / "ozaki.toml")

    def fail(where, message):
        raise AssertionError(f"{where}: {message}")

    spec = parse_plot(raw, fail)
    table = _ozaki_rows(ks=(64, 256, 1024))
    rows = set(prepare(table, spec, "err_max").data["_row"])
    assert rows == {"k = 64", "k = 256", "k = 1024"}  # one row of panels per k ...
    assert all(r.startswith(f"{spec.row} = ") for r in rows)  # ... which `row` says
    # The summary names that row dimension once, as it does with row = "none".
    names = pivot(table, spec, "err_max").index.names
    assert names == pivot(table, replace(spec, row="none"), "err_max").index.names
    assert names == ["method", "k", "phi"]
