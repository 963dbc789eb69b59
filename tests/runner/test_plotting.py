"""Figures, summary tables and the [plot] table / `precision plot` options (synthetic tables:
no GEMM is computed except in the last test, which runs the CPU baselines end to end)."""

from __future__ import annotations

import shutil

import matplotlib

matplotlib.use("Agg", force=True)

import matplotlib.image
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from precision.runner.cli import main
from precision.runner.config import ConfigError, parse_config
from precision.runner.figures import PlotSpec
from precision.runner.plotting import (
    FP32_UNIT_ROUNDOFF,
    draw_figure,
    plot_results,
    prepare,
)
from precision.runner.summary import pivot, summarize, to_latex, to_markdown

SWEEP = """
name = "p"
[sweep]
size = [16]
distribution = ["uniform"]
method = ["plain"]
format = ["f16"]
"""


def rows(
    sizes=(32, 64, 128),
    series=(("plain", "fp16", "emulator"), ("corrected-ootomo", "fp16", "emulator")),
    repeats=3,
    dists=("uniform",),
    value=lambda variant, fmt, backend, size, rep: 1e-4 / (1 + rep),
    shape=lambda s: (s, s, s),
) -> pd.DataFrame:
    out = []
    for dist in dists:
        for variant, fmt, backend in series:
            for size in sizes:
                m, n, k = shape(size)
                for rep in range(repeats):
                    v = value(variant, fmt, backend, size, rep)
                    out.append(
                        {
                            "name": "synthetic",
                            "point_id": f"{dist}{variant}{fmt}{backend}{m}{n}{k}",
                            "m": m,
                            "n": n,
                            "k": k,
                            "distribution": dist,
                            "dist_label": dist,
                            "method": variant.split("-")[0],
                            "correction": (variant.split("-") + [None])[1],
                            "variant": variant,
                            "format": fmt,
                            "backend": backend,
                            "arch": "sm90",
                            "repeat": rep,
                            "status": "ok",
                            "error": None,
                            "err_fro": v,
                            "err_max": 10 * v,
                            "err_median": v / 2,
                            "tflops": 1e-5 * size if backend == "emulator" else 50.0 * size,
                            "time_s": 1.0,
                        }
                    )
    return pd.DataFrame(out)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# ----------------------------------------------------------------------------- [plot] table


def test_plot_table_in_config_is_parsed_and_validated():
    text = SWEEP + '[plot]\nmetric = ["err_max", "tflops"]\nhue = "format"\nstyle = "method"\n'
    text += 'col = "none"\nsharey = false\nsize = [4, 3.5]\nformat = "svg"\ndodge = 0\n'
    spec = parse_config(text, "cfg.toml").plot
    assert spec == PlotSpec(
        metrics=("err_max", "tflops"),
        hue="format",
        style="method",
        col="none",
        sharey=False,
        size=(4.0, 3.5),
        formats=("svg",),
        dodge=0.0,
        explicit_metrics=True,
    )
    assert parse_config(SWEEP, "cfg.toml").plot == PlotSpec()


@pytest.mark.parametrize(
    ("plot", "message"),
    [
        ('hue = "colour"', r"\[plot\] hue: unknown dimension 'colour'.*valid: method, format"),
        ('metric = "err"', r"\[plot\] metric: unknown metric 'err'; did you mean 'err_max'"),
        ("size = [4]", r"\[plot\] size: expected \[width, height\] in inches, got list \[4\]"),
        ('format = ["png", "jpg"]', r"\[plot\] format: unknown format 'jpg'.*png, pdf, svg, pgf"),
        ('sharey = "yes"', r"\[plot\] sharey: expected true or false, got str 'yes'"),
        ("dodge = 2", r"\[plot\] dodge: expected a number in \[0, 1\], got 2"),
        ('colour = "x"', r"\[plot\]: unknown key 'colour'; did you mean 'col'"),
        ('col = "format"\nrow = "format"', r"\[plot\] row: col and row both show 'format'"),
        ("dpi = 10", r"\[plot\] dpi: expected an integer in \[50, 1200\], got int 10"),
    ],
)
def test_plot_table_errors_name_file_key_expected_and_got(plot, message):
    with pytest.raises(ConfigError, match=r"config error in cfg.toml: " + message):
        parse_config(SWEEP + "[plot]\n" + plot + "\n", "cfg.toml")


# ----------------------------------------------------------------------------- figures


def test_coinciding_lines_stay_distinguishable():
    # plain fp16 and plain tf32 have identical errors: different marker and dash, dodged x.
    table = rows(
        series=(("plain", "fp16", "emulator"), ("plain", "tf32", "emulator")),
        value=lambda *a: 2.6e-4,
    )
    fig = draw_figure(prepare(table, PlotSpec(), "err_fro"), "err_fro", PlotSpec(), "")
    lines = [ln for ln in fig.axes[0].get_lines() if len(ln.get_xdata()) == 3]
    assert len(lines) == 2
    a, b = lines
    assert (a.get_marker(), a.get_linestyle()) != (b.get_marker(), b.get_linestyle())
    np.testing.assert_array_equal(a.get_ydata(), b.get_ydata())
    xa, xb = np.asarray(a.get_xdata()), np.asarray(b.get_xdata())
    assert np.all(xa != xb) and np.allclose(xa, xb, rtol=0.1)  # dodged, by less than 10 %
    no_dodge = PlotSpec(dodge=0)
    fig = draw_figure(prepare(table, no_dodge, "err_fro"), "err_fro", no_dodge, "")
    xs = [ln.get_xdata() for ln in fig.axes[0].get_lines() if len(ln.get_xdata()) == 3]
    np.testing.assert_array_equal(xs[0], [32, 64, 128])


def test_error_figure_has_unit_roundoff_line_baselines_and_decade_ticks():
    table = rows(
        series=(
            ("plain", "fp16", "emulator"),
            ("plain", "fp32", "emulator"),
            ("plain", "fp32", "numpy"),
        ),
        value=lambda v, fmt, *a: 2.6e-4 if fmt == "fp16" else 3e-7,
    )
    fig = draw_figure(prepare(table, PlotSpec(), "err_fro"), "err_fro", PlotSpec(), "t")
    ax = fig.axes[0]
    hlines = [ln for ln in ax.get_lines() if list(ln.get_ydata()) == [FP32_UNIT_ROUNDOFF] * 2]
    assert len(hlines) == 1
    labels = [t.get_text() for sub in fig.subfigs for leg in sub.legends for t in leg.get_texts()]
    assert "fp32 unit roundoff $u = 2^{-24}$" in labels
    assert "fp32 FMA chain (emulated SGEMM)" in labels
    assert "fp32 numpy matmul (BLAS SGEMM)" in labels
    lo, hi = ax.get_ylim()
    assert (lo, hi) == pytest.approx((1e-8, 1e-3))  # whole decades around data and u
    fig.canvas.draw()
    (legend,) = [leg for sub in fig.subfigs for leg in sub.legends]
    assert legend.get_window_extent().width <= fig.bbox.width  # one panel: sections stacked
    ticks = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert len(ticks) >= 3 and all("10^" in t for t in ticks)


def test_emulator_speed_is_panelled_apart_from_gpu_speed():
    table = rows(series=(("plain", "fp16", "emulator"), ("plain", "fp16", "cuda")))
    frame = prepare(table, PlotSpec(), "tflops")
    fig = draw_figure(frame, "tflops", PlotSpec(), "")
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 2
    margin = sorted(t.get_text() for ax in visible for t in ax.texts)
    assert margin == ["CPU emulator (not a GPU speed)", "GPU"]
    lims = [ax.get_ylim() for ax in visible]
    assert lims[0] != lims[1]  # never one axis for emulator and GPU speeds


def test_missing_points_are_stated_on_the_figure():
    table = rows()
    bad = (table["variant"] == "plain") & (table["k"] == 64)
    table.loc[bad, ["status", "err_fro"]] = ["error", np.nan]
    nan = (table["variant"] == "corrected-ootomo") & (table["k"] == 128) & (table["repeat"] == 0)
    table.loc[nan, "err_fro"] = np.nan
    zero = (table["variant"] == "corrected-ootomo") & (table["k"] == 32)
    table.loc[zero, "err_fro"] = 0.0
    fig = draw_figure(prepare(table, PlotSpec(), "err_fro"), "err_fro", PlotSpec(), "")
    text = " ".join(" ".join(t.get_text().split()) for sub in fig.subfigs for t in sub.texts)
    assert "Not shown" in text  # (lines are wrapped to the figure width)
    assert "plain fp16 [uniform]: error at size = 64" in text
    assert (
        "corrected-ootomo fp16 [uniform]: 1 of 3 repeats NaN (no median drawn: summary.md has "
        "none either) at size = 128"
    ) in text
    assert "corrected-ootomo fp16 [uniform]: 0 (exact) at size = 32" in text


def test_a_point_is_drawn_at_the_median_the_summary_gives_it():
    """A point with one repeat failed (or NaN) was drawn at the median of the others, which
    summary.md gives as n/a; one with an exact repeat (error 0, which a log axis cannot
    show) at the median of the two others, while the table's median counts the 0. The line
    now takes every repeat, as the table does: no point for the first, the median of all
    three for the second."""
    from precision.runner.summary import pivot

    table = rows()
    plain = table["variant"] == "plain"
    failed = plain & (table["k"] == 64) & (table["repeat"] == 0)
    table.loc[failed, ["status", "err_fro"]] = ["error", np.nan]
    exact = plain & (table["k"] == 128) & (table["repeat"] == 0)
    table.loc[exact, "err_fro"] = 0.0
    spec = PlotSpec()
    fig = draw_figure(prepare(table, spec, "err_fro"), "err_fro", spec, "")
    medians = pivot(table, spec, "err_fro")
    want = medians.xs("plain", level="method").iloc[0]
    assert np.isnan(want["64"]) and want["128"] == np.median(
        table.loc[plain & (table["k"] == 128), "err_fro"]
    )
    lines = [list(ln.get_ydata()) for ln in fig.axes[0].get_lines() if len(ln.get_xdata()) > 1]
    assert [want["32"], want["128"]] in lines  # (no point at 64; 128: the median of all 3)


def test_k_sweep_gets_its_own_axis_and_readable_ticks():
    ks = [2**p for p in range(4, 17)]  # 13 values, 16 .. 65536
    table = rows(sizes=ks, repeats=1, shape=lambda s: (64, 64, s))
    frame = prepare(table, PlotSpec(), "err_fro")
    assert frame.x == "k"
    fig = draw_figure(frame, "err_fro", PlotSpec(), "")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "k (inner dimension)"
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert 3 <= len(labels) <= 7 and labels[0] == "$2^{4}$"
    with pytest.raises(ValueError, match="x = 'size' needs square shapes"):
        prepare(table, PlotSpec(x="size"), "err_fro")


def test_other_varying_dimensions_become_panels():
    table = pd.concat(
        [rows(repeats=1, shape=lambda s: (s, 32, s)), rows(repeats=1, shape=lambda s: (s, 64, s))]
    )
    frame = prepare(table, PlotSpec(x="k"), "err_fro")
    assert sorted(frame.data["_row"].unique()) == ["n = 32", "n = 64"]
    assert frame.x_label == "m = k"  # m moves with k: one axis, said so


def test_panel_grid_with_gaps_labels_every_row_in_numeric_order():
    table = pd.concat(
        [
            rows(repeats=1, dists=("a",), shape=lambda s: (s, 128, s)),
            rows(repeats=1, dists=("a", "b"), shape=lambda s: (s, 64, s)),
        ]
    )
    fig = draw_figure(prepare(table, PlotSpec(x="k"), "err_fro"), "err_fro", PlotSpec(x="k"), "")
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 3  # (n = 128, b) is absent
    margin = [t.get_text() for ax in axes for t in ax.texts]
    assert margin == ["n = 64", "n = 128"]  # 64 before 128; the gap row labelled too
    assert [ax.get_ylabel() != "" for ax in axes] == [True, False, True]


def test_plot_results_writes_formats_at_the_given_size_and_summary(tmp_path):
    spec = PlotSpec(metrics=("err_fro",), formats=("png", "svg", "pdf"), size=(4.0, 3.0), dpi=100)
    paths = plot_results(rows(), tmp_path, "t", spec, prefix="q_")
    names = sorted(p.name for p in paths)
    assert names == sorted(
        ["q_err_fro.png", "q_err_fro.svg", "q_err_fro.pdf"]
        + ["q_summary.csv", "q_summary.md", "q_summary.tex"]
    )
    image = matplotlib.image.imread(tmp_path / "q_err_fro.png")
    assert image.shape[:2] == (300, 400)


def test_a_requested_metric_without_values_is_reported(tmp_path):
    table = rows()
    table["tflops"] = np.nan
    notes: list[str] = []
    spec = PlotSpec(metrics=("err_fro", "tflops"), explicit_metrics=True, formats=("png",))
    paths = plot_results(table, tmp_path, "t", spec, notes=notes)
    assert (tmp_path / "err_fro.png") in paths and not (tmp_path / "tflops.png").exists()
    assert notes == ["no tflops figure: no row has a finite positive tflops"]


# ----------------------------------------------------------------------------- summary


def test_summary_is_the_median_over_repeats_and_missing_is_nan():
    table = rows(series=(("plain", "fp16", "emulator"),), sizes=(32, 64))
    table.loc[table["k"] == 32, "err_fro"] = [1.0, 2.0, 10.0]
    table.loc[(table["k"] == 64) & (table["repeat"] == 2), ["status", "err_fro"]] = ["error", 0.5]
    s = summarize(table).set_index("k")
    assert s.loc[32, "err_fro"] == 2.0 and s.loc[32, "status"] == "ok" and s.loc[32, "ok"] == 3
    assert np.isnan(s.loc[64, "err_fro"])  # never a median of part of the repeats
    assert s.loc[64, "status"] == "ok (2 of 3), error (1 of 3)" and s.loc[64, "ok"] == 2
    assert "tflops" in s and "tflops" not in summarize(table, timing=False)
    piv = pivot(table, PlotSpec(), "err_fro")
    assert list(piv.columns) == ["32", "64"]
    assert piv.index.names == ["distribution", "method", "format"]
    md = to_markdown(piv)
    assert md.splitlines()[0] == "| distribution | method | format | 32 | 64 |"
    assert md.splitlines()[2] == "| uniform | plain | fp16 | 2.00 | n/a |"  # 3 digits
    tex = to_latex(piv, "err_fro: rel_error", "size")
    assert r"\toprule" in tex and r"err\_fro: rel\_error" in tex and "& 2.00 & n/a" in tex


# ----------------------------------------------------------------------------- CLI


def _results_dir(tmp_path, plot_table: str = ""):
    root = tmp_path / "res"
    root.mkdir()
    rows(series=(("plain", "fp16", "emulator"), ("plain", "fp32", "numpy"))).to_parquet(
        root / "results.parquet"
    )
    (root / "config.toml").write_text(SWEEP + plot_table)
    return root


def test_plot_command_options_override_the_config_plot_table(tmp_path, capsys):
    root = _results_dir(tmp_path, '[plot]\nmetric = "err_max"\nformat = "svg"\n')
    assert main(["plot", str(root)]) == 0
    assert (root / "figures" / "err_max.svg").exists()
    assert not (root / "figures" / "err_fro.png").exists()
    out = tmp_path / "out"
    argv = ["plot", str(root), "--metric", "err_fro,tflops", "--format", "png", "--out", str(out)]
    argv += ["--prefix", "x_", "--hue", "format", "--style", "method", "--no-sharey"]
    # (4 inches high: two rows of panels, the legend and the note on numpy's BLAS timings)
    argv += ["--size", "5", "4", "--col", "none", "--title", ""]
    assert main(argv) == 0
    assert {p.name for p in out.iterdir()} == {
        "x_err_fro.png",
        "x_tflops.png",
        "x_summary.csv",
        "x_summary.md",
        "x_summary.tex",
    }
    printed = capsys.readouterr().out
    assert f"figure: {out / 'x_err_fro.png'}" in printed
    assert f"table: {out / 'x_summary.md'}" in printed


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--hue", "colour"], "error: --hue: unknown dimension 'colour'"),
        (["--metric", "err_fro,speed"], "error: --metric: unknown metric 'speed'"),
        (["--size", "0.1", "3"], "error: --size: expected a size >= 0.5 inches, got 0.1"),
        # a mistyped size ran matplotlib out of memory (a MemoryError traceback)
        (["--size", "400", "400"], "error: --size: expected at most 50 inches a side, got 400"),
        (["--size", "20", "3", "--dpi", "1200"], "error: --size: 20 x 3 inches at 1200 dpi is "),
        (["--x", "size", "--dodge", "3"], "error: --dodge: expected a number in [0, 1], got 3"),
    ],
)
def test_plot_command_rejects_bad_options_with_one_line(tmp_path, capsys, argv, message):
    root = _results_dir(tmp_path)
    assert main(["plot", str(root), *argv]) == 2
    assert capsys.readouterr().err.strip().splitlines()[0].startswith(message)


def test_plot_command_reports_an_invalid_config_plot_table(tmp_path, capsys):
    root = _results_dir(tmp_path, '[plot]\nhue = "nope"\n')
    assert main(["plot", str(root)]) == 2
    err = capsys.readouterr().err
    assert f"config error in {root / 'config.toml'}: [plot] hue: unknown dimension" in err


def test_pgf_without_tex_fails_clearly(tmp_path, capsys, monkeypatch):
    # xelatex made unfindable, so that this runs (and can fail) where it is installed too
    monkeypatch.setitem(matplotlib.rcParams, "pgf.texsystem", "xelatex")
    which = shutil.which
    monkeypatch.setattr(
        shutil, "which", lambda cmd, *a, **k: None if cmd == "xelatex" else which(cmd, *a, **k)
    )
    root = _results_dir(tmp_path)
    assert main(["plot", str(root), "--format", "pgf"]) == 2
    assert "format 'pgf' needs xelatex on the PATH" in capsys.readouterr().err


# ----------------------------------------------------------------------------- end to end


def test_cpu_baselines_run_from_a_config_and_appear_in_the_figure(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg.toml").write_text(
        """
name = "base"
repeats = 2
[[sweep]]
size = [8, 16]
distribution = ["uniform"]
method = ["plain"]
format = ["fp16"]
[[sweep]]
size = [8, 16]
distribution = ["uniform"]
method = ["plain"]
format = ["fp32"]
backend = ["emulator", "numpy"]
[plot]
metric = "err_fro"
format = "png"
"""
    )
    assert main(["run", "cfg.toml", "--quiet"]) == 0
    table = pd.read_parquet(tmp_path / "results" / "base" / "results.parquet")
    assert set(table["status"]) == {"ok"}
    fp32 = table[table["format"] == "fp32"]
    assert len(fp32) == 8 and (fp32["err_fro"] < 1e-6).all()  # fp32 accuracy, not fp16's
    assert (table[table["format"] == "fp16"]["err_fro"] > 1e-5).all()
    figures = tmp_path / "results" / "base" / "figures"
    assert (figures / "err_fro.png").exists() and not (figures / "err_fro.pdf").exists()
    md = (figures / "summary.md").read_text()
    assert "fp32 FMA chain (emulated SGEMM)" in md and "fp32 numpy matmul (BLAS SGEMM)" in md


def test_summary_tables_order_numeric_panels_as_the_figure_does():
    """Panel columns and rows named by a number ("n = 8", "k = 64") come in numeric order,
    as the figure's panels do, not as text ("k = 1024" before "k = 256")."""
    ks, ns = (64, 256, 1024), (8, 16, 128)
    table = pd.concat(
        [rows(sizes=(32,), repeats=1, shape=lambda s, k=k, n=n: (s, n, k)) for k in ks for n in ns],
        ignore_index=True,
    )
    table["point_id"] = table["point_id"] + "-" + table.index.astype(str)
    piv = pivot(table, PlotSpec(x="m", row="k", col="n"), "err_fro")
    cols, panel_rows = (list(dict.fromkeys(piv.index.get_level_values(i))) for i in (0, 1))
    assert cols == [f"n = {n}" for n in ns]
    assert panel_rows[:3] == [f"k = {k}, n = 8" for k in ks]
    md = to_markdown(piv)
    assert (
        md.index("| k = 64, n = 8 |")
        < md.index("| k = 256, n = 8 |")
        < md.index("| k = 1024, n = 8 |")
    )


def test_shape_dimensions_with_one_value_are_named_under_the_figure():
    """A shape dimension that no axis, panel, colour or style shows is named in a note
    (the figure's and summary.md's), so that the shape of every point can be read back."""
    odd = rows(sizes=(5, 100), repeats=1, shape=lambda s: (33, 17, s))
    frame = prepare(odd, PlotSpec(x="k"), "err_fro")
    assert frame.caveats[0] == "m = 33, n = 17 in every point"
    square = rows(sizes=(16, 64), repeats=1, shape=lambda s: (64, 64, s))
    assert prepare(square, PlotSpec(x="k"), "err_fro").caveats[0] == "m = n = 64 in every point"
    by_m = prepare(square, PlotSpec(x="k", col="m"), "err_fro")
    assert by_m.caveats[0] == "n = 64 in every point"  # a panel shows m
    assert prepare(rows(), PlotSpec(), "err_fro").caveats == []  # m = n = k on the axis
