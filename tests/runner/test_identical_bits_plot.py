"""``identical_bits`` (the fraction of outputs bit-identical to ``compare_backend``) is a
metric of figures and summary tables: `precision plot DIR --metric identical_bits` used to be
refused, so the emulator-vs-GPU experiment could not show its own result. It is drawn on a
linear axis from 0 to 1 (0 is a value, not a point left out), a point's repeats are summed up
by their least value (a point is bit-identical only if every repeat is), and a fraction below
1 is never written as 1. Synthetic tables: no GEMM is computed."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg", force=True)

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from precision.runner.cli import main
from precision.runner.config import parse_config
from precision.runner.figures import PlotSpec
from precision.runner.plotting import draw_figure, prepare
from precision.runner.summary import write_summary

#: identical_bits of the repeats of one point per size: all identical; one repeat at half;
#: none identical; one output of 2601 differing in one repeat.
REPEATS = {32: (1.0, 1.0, 1.0), 64: (1.0, 0.5, 1.0), 128: (0.0, 0.0, 0.0), 256: (1.0, 2600 / 2601)}


def table() -> pd.DataFrame:
    rows = []
    for size, values in REPEATS.items():
        for rep, value in enumerate(values):
            rows.append(
                {
                    "name": "ib", "point_id": f"p{size}", "m": size, "n": size, "k": size,
                    "distribution": "uniform", "dist_label": "uniform", "dist_params": "{}",
                    "method": "plain", "correction": None, "variant": "plain", "format": "fp16",
                    "backend": "cuda", "arch": "sm90", "repeat": rep, "status": "ok",
                    "error": None, "err_fro": 1e-4, "identical_bits": value,
                }
            )  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_the_figure_draws_the_least_repeat_on_a_linear_axis_from_0_to_1():
    spec = PlotSpec(metrics=("identical_bits",))
    fig = draw_figure(prepare(table(), spec, "identical_bits"), "identical_bits", spec, "")
    (ax,) = [ax for ax in fig.axes if ax.get_visible()]
    assert ax.get_yscale() == "linear"
    lo, hi = ax.get_ylim()
    assert -0.1 < lo < 0 and 1 < hi < 1.1
    (line,) = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == len(REPEATS)]
    assert list(line.get_ydata()) == [1.0, 0.5, 0.0, 2600 / 2601]
    text = " ".join(t.get_text() for sub in fig.subfigs for t in sub.texts)
    assert "Not shown" not in text  # (0 is drawn: a log axis would have left it out)


def test_the_summary_writes_the_least_repeat_and_never_rounds_up_to_one(tmp_path):
    write_summary(table(), tmp_path, PlotSpec(metrics=("identical_bits",)))
    md = (tmp_path / "summary.md").read_text()
    assert md.startswith("# Summary: median over 3 repeat(s) per point (least for identical_bits)")
    assert "## identical_bits: fraction of outputs bit-identical to compare_backend, least" in md
    assert "| uniform | plain | fp16 | 1 | 0.500 | 0 | 0.999 |" in md
    tex = (tmp_path / "summary.tex").read_text()
    assert "1 & 0.500 & 0 & 0.999" in tex


def test_plot_and_configs_accept_the_metric(tmp_path, capsys):
    root = tmp_path / "ib"
    root.mkdir()
    table().to_parquet(root / "results.parquet")
    assert main(["plot", str(root), "--metric", "identical_bits", "--format", "png"]) == 0
    assert (root / "figures" / "identical_bits.png").stat().st_size > 10_000
    text = 'name = "ib"\n[sweep]\nsize = [16]\ndistribution = ["uniform"]\nmethod = ["plain"]\n'
    text += 'format = ["f16"]\n[plot]\nmetric = ["identical_bits"]\n'
    assert parse_config(text, "cfg.toml").plot.metrics == ("identical_bits",)
