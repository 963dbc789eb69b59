"""Figures at a given size (`--size W H`, `[plot] size`) are never written broken: at small
sizes and with several rows of panels, either everything fits the size asked for (nothing cut
at the figure's edges or overlapping, no panel squeezed to a sliver) and nothing is said, or
the figure is drawn at the least size that holds it and one warning line names the figure,
the size asked for and the size drawn, in `precision plot` and `precision run` alike.

The checks here measure the figure as saved with their own code (every drawn text and panel
against the figure's edges and each other), not with the drawing's own test of fit."""

from __future__ import annotations

import re
from itertools import combinations

import doubles
import matplotlib

matplotlib.use("Agg", force=True)

import matplotlib.image
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from precision.runner.cli import main
from precision.runner.config import parse_config
from precision.runner.figures import PlotSpec
from precision.runner.plotting import draw_figure, prepare, size_warning
from precision.runner.runner import run_experiment

#: The least panel (inches) that the checks accept as showing its data.
LEAST_PANEL = 0.5
SIZES = (32, 64, 128, 256)
DISTS = {
    "uniform": ("uniform(low=-1, high=1)", '{"high": 1.0, "low": -1.0}'),
    "exp_rand": ("exp_rand(phi=1)", '{"phi": 1.0}'),
    "normal": ("normal(mean=0, std=1)", '{"mean": 0.0, "std": 1.0}'),
}
#: Plain and corrected methods per input format, and the errors they span.
METHODS = (("plain", "plain", None, 1e-3), ("corrected-ootomo", "corrected", "ootomo", 1e-6))
FORMATS = {"fp16": 1.0, "bf16": 10.0, "tf32": 0.1}


def table(dists=("uniform",), formats=("fp16", "bf16", "tf32"), baseline=True) -> pd.DataFrame:
    """Results of the methods on ``formats`` (and numpy's fp32 baseline) for ``dists``."""
    series = [
        (variant, method, correction, fmt, "emulator", err * FORMATS[fmt])
        for fmt in formats
        for variant, method, correction, err in METHODS
    ]
    if baseline:
        series.append(("plain", "plain", None, "fp32", "numpy", 1e-7))
    out = []
    for dist in dists:
        label, params = DISTS[dist]
        for variant, method, correction, fmt, backend, err in series:
            for size in SIZES:
                out.append(
                    {
                        "name": "fit", "point_id": f"{dist}{variant}{fmt}{backend}{size}",
                        "m": size, "n": size, "k": size, "distribution": dist,
                        "dist_label": label, "dist_params": params, "method": method,
                        "correction": correction, "variant": variant, "format": fmt,
                        "backend": backend, "arch": "sm90", "repeat": 0, "status": "ok",
                        "error": None, "err_fro": err * (1 + size / 256), "err_max": 10 * err,
                        "err_median": err / 2, "tflops": 1e-5 * size, "time_s": 1e-3,
                    }
                )  # fmt: skip
    return pd.DataFrame(out)


#: Panel layouts (rows x columns of panels): what the panels show and the table drawn.
LAYOUTS = {
    "1x1": ({"col": "none", "hue": "format", "style": "method"}, {}),
    "1x3": ({"col": "format", "hue": "method", "style": "none"}, {"baseline": False}),
    "2x1": (
        {"col": "none", "row": "distribution", "hue": "format", "style": "method"},
        {"dists": ("uniform", "exp_rand")},
    ),
    "3x1": (
        {"col": "none", "row": "distribution", "hue": "method", "style": "format"},
        {"dists": ("uniform", "exp_rand", "normal"), "formats": ("fp16",)},
    ),
    "2x2": (
        {"col": "format", "row": "distribution", "hue": "method", "style": "none"},
        {"dists": ("uniform", "exp_rand"), "formats": ("fp16", "bf16"), "baseline": False},
    ),
}


def spec_of(layout: str, size, **kwargs) -> PlotSpec:
    kwargs.setdefault("dpi", 100)  # (measured in points: the layout is the same at 200)
    return PlotSpec(metrics=("err_fro",), size=size, **LAYOUTS[layout][0], **kwargs)


def data_of(layout: str) -> pd.DataFrame:
    return table(**LAYOUTS[layout][1])


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _drawn_tick_labels(ax, axis: str):
    """The tick labels of ``axis`` ("x" or "y") that are drawn: ticks inside the limits."""
    lo, hi = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    ticks = (ax.xaxis if axis == "x" else ax.yaxis).get_major_ticks()
    return [
        tick.label1 for tick in ticks
        if lo * (1 - 1e-9) <= tick.get_loc() <= hi * (1 + 1e-9)
        and tick.label1.get_visible() and tick.label1.get_text().strip()
    ]  # fmt: skip


def broken(fig) -> list[str]:
    """What is wrong with ``fig`` as last drawn: a text, legend or panel outside the figure,
    two of them overlapping (a panel's own labels against its own frame excepted), a panel
    smaller than LEAST_PANEL."""
    renderer = fig.canvas.get_renderer()
    things = []  # (owner, what, box)
    for i, ax in enumerate(a for a in fig.axes if a.get_visible()):
        things.append((i, "panel", ax.bbox))
        texts = _drawn_tick_labels(ax, "x") + _drawn_tick_labels(ax, "y")
        texts += [ax.xaxis.label, ax.yaxis.label, ax.title, *ax.texts]
        for text in texts:
            if text.get_visible() and text.get_text().strip():
                things.append((i, repr(text.get_text()), text.get_window_extent(renderer)))
    for sub in [fig, *fig.subfigs]:
        things += [("legend", "legend", leg.get_window_extent(renderer)) for leg in sub.legends]
        for text in sub.texts:
            if text.get_text().strip():
                things.append(("fig", repr(text.get_text()[:40]), text.get_window_extent(renderer)))
    edge, slack = fig.bbox, 1.0
    found = []
    for owner, what, box in things:
        if what == "panel" and min(box.width, box.height) < LEAST_PANEL * fig.dpi:
            found.append(f"panel {owner}: {box.width / fig.dpi:.2f} x {box.height / fig.dpi:.2f}")
        if (
            box.x0 < edge.x0 - slack or box.y0 < edge.y0 - slack
            or box.x1 > edge.x1 + slack or box.y1 > edge.y1 + slack
        ):  # fmt: skip
            found.append(f"{owner} {what} is cut")
    for (o1, w1, b1), (o2, w2, b2) in combinations(things, 2):
        if o1 == o2 and "panel" in (w1, w2):
            continue
        if min(b1.x1, b2.x1) - max(b1.x0, b2.x0) > slack and (
            min(b1.y1, b2.y1) - max(b1.y0, b2.y0) > slack
        ):
            found.append(f"{o1} {w1} overlaps {o2} {w2}")
    return found


def draw(layout: str, size, **kwargs):
    """The figure of ``layout`` at ``size`` as saved (drawn once more, as savefig does), its
    size and its warning."""
    spec = spec_of(layout, size, **kwargs)
    fig = draw_figure(prepare(data_of(layout), spec, "err_fro"), "err_fro", spec, "fit")
    fig.canvas.draw()
    drawn = tuple(float(v) for v in fig.get_size_inches())
    return fig, drawn, size_warning(fig, spec.size, "err_fro (png)")


@pytest.fixture(scope="module")
def least_1x1():
    """``draw("1x1", (2.0, 1.5))`` and its pixels, for the matrix below and the least size's
    test; shared: drawn once, read only. Taken out of pyplot onto an Agg canvas of its own,
    as drawn (``_close_figures`` would reset its canvas after the first test)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig, drawn, warning = draw("1x1", (2.0, 1.5))
    pixels = fig.canvas.buffer_rgba().tobytes()
    plt.close(fig)
    FigureCanvasAgg(fig)
    return fig, drawn, warning, pixels


def inches(size) -> str:
    return " x ".join(f"{float(v):g}" for v in size)


@pytest.mark.parametrize("size", [(3.3, 2.6), (2.5, 2.0), (2.0, 1.5)], ids=inches)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_small_figure_fits_its_size_or_says_the_size_it_needs(layout, size, request):
    """The old drawing kept the size asked for, silently, and broke the figure in 13 of these
    15: at 3.3 x 2.6 the y labels of two and three panel rows ran into each other over panels
    0.2 inch (2x1) and 0.02 inch (3x1) tall; at 2.5 x 2 the x labels 64 128 256 of three
    columns overlapped, decade labels stacked on each other and the y label and legend fell
    off the figure; at 2 x 1.5 tick labels, panel titles and row labels were cut."""
    if (layout, size) == ("1x1", (2.0, 1.5)):  # (drawn once for this and the least size's test)
        fig, drawn, warning, _ = request.getfixturevalue("least_1x1")
    else:
        fig, drawn, warning = draw(layout, size)
    assert broken(fig) == []
    if drawn == size:
        assert warning == ""
    else:
        assert drawn[0] >= size[0] and drawn[1] >= size[1]
        assert warning.startswith(f"figure err_fro (png): {inches(size)} in is too small")
        assert f"drawn at {inches(drawn)} in instead" in warning
        assert "\n" not in warning


def test_the_one_column_width_is_kept_where_a_taller_figure_fits():
    """Two rows of two panels in one paper column (3.3 inches) fit when taller: the width
    that the paper sets is kept and only the height grows."""
    fig, (width, height), warning = draw("2x2", (3.3, 2.0))
    assert width == 3.3 and height > 2.0
    assert warning.endswith("drawn at 3.3 x " + f"{height:g} in instead, the least height at "
                            "that width that holds them")  # fmt: skip
    assert broken(fig) == []


def test_the_size_said_is_the_least_and_asking_for_it_draws_the_same_figure_silently(
    least_1x1,
):
    """The size the warning names holds the figure with no warning, and the same figure; a
    tenth of an inch less height does not (it warns again, with the same size)."""
    _, drawn, warning, first = least_1x1  # draw("1x1", (2.0, 1.5)) and its pixels
    assert warning and drawn[0] == 2.0
    again, same, quiet = draw("1x1", drawn)
    assert quiet == "" and same == drawn
    assert again.canvas.buffer_rgba().tobytes() == first
    _, _, said = draw("1x1", (drawn[0], round(drawn[1] - 0.1, 6)))
    assert f"drawn at {inches(drawn)} in instead" in said


@pytest.mark.parametrize(("layout", "size"), [("1x1", (6.0, 4.0)), ("2x2", (6.5, 4.5))])
def test_a_size_that_holds_the_figure_is_kept_without_a_word(layout, size):
    fig, drawn, warning = draw(layout, size)
    assert drawn == size and warning == "" and broken(fig) == []


def test_narrow_panels_thin_their_x_labels_and_share_one_x_label():
    """Three panels side by side in 2.8 x 3 inches: each is wide enough for its data, but
    its labels 128 and 256 ran into each other, and so did the three x labels "size m = n =
    k" (the last cut at the figure's edge). The size holds the figure once every 2nd size
    is labelled (each keeps its tick) and the x label is written once for the row."""
    fig, drawn, warning = draw("1x3", (2.8, 3.0))
    assert drawn == (2.8, 3.0) and warning == "" and broken(fig) == []
    panels = [a for a in fig.axes if a.get_visible()]
    for ax in panels:
        labels = [t.get_text() for t in ax.get_xticklabels()]
        assert len(ax.get_xticks()) == len(SIZES)  # every size keeps its tick
        assert 2 <= sum(1 for t in labels if t) < len(SIZES)
        assert ax.get_xlabel() == ""
    shared = [t.get_text() for sub in fig.subfigs for t in sub.texts]
    assert shared.count("size m = n = k") == 1


def _results_dir(tmp_path, plot: str):
    root = tmp_path / "res"
    root.mkdir()
    data_of("1x1").to_parquet(root / "results.parquet")
    (root / "config.toml").write_text(
        'name = "fit"\n[sweep]\nsize = [16]\ndistribution = ["uniform"]\nmethod = ["plain"]\n'
        'format = ["f16"]\n' + plot
    )
    return root


WARNING = re.compile(
    r"warning: figure err_fro \(png\): 2 x 1\.5 in is too small for its 1 panel, legend "
    r"and labels \(.*\); drawn at ([\d.]+) x ([\d.]+) in instead, the least (size|height at "
    r"that width) that holds them"
)


def test_precision_plot_says_the_size_in_one_line_and_writes_that_size(tmp_path, capsys):
    root = _results_dir(tmp_path, '[plot]\ncol = "none"\nhue = "format"\nstyle = "method"\n')
    out = tmp_path / "figs"
    argv = ["plot", str(root), "--format", "png", "--out", str(out), "--metric", "err_fro"]
    assert main([*argv, "--size", "2", "1.5", "--dpi", "100"]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(lines) == 1, err
    match = WARNING.fullmatch(lines[0])
    assert match, lines[0]
    width, height = float(match[1]), float(match[2])
    pixels = matplotlib.image.imread(out / "err_fro.png").shape[:2]
    assert pixels == (round(height * 100), round(width * 100))
    # asked for, that size is drawn as it is, without a warning
    assert main([*argv, "--size", match[1], match[2], "--dpi", "100"]) == 0
    assert "warning:" not in capsys.readouterr().err


def test_precision_run_warns_as_precision_plot_does(tmp_path, monkeypatch, capsys):
    """A config's [plot] size too small for its figure: the run's figures say it on stderr
    with the same line as `precision plot` of the directory."""
    doubles.install(monkeypatch.setattr)
    text = (
        'name = "fit"\nrepeats = 1\nreference = "fp64"\n[sweep]\nsize = [16, 32]\n'
        'distribution = ["uniform"]\nmethod = ["plain", "corrected"]\nformat = ["f16", "bf16"]\n'
        '[plot]\nmetric = ["err_fro"]\nformat = ["png"]\ndpi = 100\nhue = "format"\n'
        'style = "method"\nsize = [2, 1.5]\n'
    )
    summary = run_experiment(parse_config(text, "cfg.toml"), tmp_path / "results", progress=False)
    ran = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(ran) == 1 and "figure err_fro (png): 2 x 1.5 in is too small" in ran[0], ran
    assert main(["plot", str(summary.results_dir), "--out", str(tmp_path / "again")]) == 0
    plotted = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert plotted == ran


@pytest.mark.parametrize("formats", [("png", "pdf"), ("png", "svg")])
def test_a_figure_that_fits_is_not_called_broken_after_a_pdf_or_svg_save(formats, tmp_path, capsys):
    """The quickstart's own figures, at their own size, were said not to fit ("y label ... is
    cut at the figure's edge"): the fit was measured after the pdf save, which had left the
    axis labels where the pdf renderer (72 dpi) put them. Measured as drawn, they fit."""
    from precision.runner.plotting import plot_results

    frame = table(dists=("uniform", "exp_rand"))
    spec = PlotSpec(metrics=("err_fro",), formats=formats)
    paths = plot_results(frame, tmp_path, "quickstart", spec)
    assert {p.suffix for p in paths} >= {f".{f}" for f in formats}
    assert "warning:" not in capsys.readouterr().err
