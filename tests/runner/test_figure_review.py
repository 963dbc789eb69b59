"""A reviewer's checks of the figures as a paper prints them: a one-column figure (--size 3.3
2.6) keeps its panel, legend and notes apart and inside the figure; a y label taller than its
panel is wrapped rather than cut; panel-row labels break between their items; series told
apart by colour alone get markers too (greyscale print); every legend entry has a label."""

from __future__ import annotations

import json
import warnings

import matplotlib

matplotlib.use("Agg", force=True)

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from precision.runner.figures import PlotSpec
from precision.runner.plot_draw import ROW_LABEL_GID, _wrap_label
from precision.runner.plotting import draw_figure, prepare

SIZES = (32, 64, 128, 256)
U = ("uniform", "uniform(low=-1, high=1)", json.dumps({"high": 1.0, "low": -1.0}, sort_keys=True))
EXP = ("exp_rand", "exp_rand(phi=1)", json.dumps({"phi": 1.0}))
#: The quickstart's series: (variant, method, correction, format, backend).
QUICKSTART = tuple(
    (variant, method, correction, fmt, "emulator")
    for variant, method, correction in (
        ("plain", "plain", None),
        ("corrected-ootomo", "corrected", "ootomo"),
        ("corrected-markidis", "corrected", "markidis"),
    )
    for fmt in ("fp16", "bf16", "tf32")
) + (
    ("plain", "plain", None, "fp32", "emulator"),
    ("plain", "plain", None, "fp32", "numpy"),
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def rows(series=QUICKSTART, dists=(U,)) -> pd.DataFrame:
    out = []
    for name, label, params in dists:
        for i, (variant, method, correction, fmt, backend) in enumerate(series):
            for size in SIZES:
                out.append(
                    {
                        "name": "review", "point_id": f"{label}{variant}{fmt}{backend}{size}",
                        "m": size, "n": size, "k": size, "distribution": name,
                        "dist_label": label, "dist_params": params, "method": method,
                        "correction": correction, "variant": variant, "format": fmt,
                        "backend": backend, "arch": "sm90", "repeat": 0, "status": "ok",
                        "error": None, "err_fro": 10.0 ** -(2 + 3 * (i % 6)), "err_max": 1e-3,
                        "err_median": 1e-4, "tflops": 1e-5 * size, "time_s": 1e-3,
                        "timing": "wall", "created_utc": "2026-01-01T00:00:10+00:00",
                    }
                )  # fmt: skip
    return pd.DataFrame(out)


def draw(table: pd.DataFrame, spec: PlotSpec, metric: str = "err_fro"):
    """The figure as saved (drawn once more, as savefig does), and its legend."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a collapsed layout is what the checks below catch
        fig = draw_figure(prepare(table, spec, metric), metric, spec, "review")
        fig.canvas.draw()
    legends = [leg for sub in fig.subfigs for leg in sub.legends]
    return fig, (legends[0] if legends else None)


def panels(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def inside(box, fig, slack=1.0) -> bool:
    f = fig.bbox
    return (
        box.x0 >= f.x0 - slack
        and box.y0 >= f.y0 - slack
        and box.x1 <= f.x1 + slack
        and box.y1 <= f.y1 + slack
    )


def notes_text(fig):
    return [t for sub in fig.subfigs for t in sub.texts if t.get_text().startswith("Notes:")]


ONE_COLUMN = PlotSpec(
    metrics=("err_fro",), hue="format", style="method", col="none", size=(3.3, 2.6)
)


@pytest.fixture(scope="module")
def one_column():
    """The quickstart's series drawn at ONE_COLUMN, and its legend; shared: drawn once, read
    only. Taken out of pyplot onto an Agg canvas of its own, as drawn (``_close_figures``
    would reset its canvas after the first test that reads it)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig, legend = draw(rows(), ONE_COLUMN)
    plt.close(fig)
    FigureCanvasAgg(fig)
    return fig, legend


def test_one_column_figure_keeps_its_panel_legend_and_notes_apart(one_column):
    """docs/runner.md's one-column example (hue format, style method, col none, 3.3 x 2.6
    inches) on the quickstart's series: the legend, stacked into one column 16 rows tall,
    took most of the height, the panel collapsed to a sliver (matplotlib: "axes sizes
    collapsed to zero") and the legend ran over it."""
    fig, legend = one_column
    (ax,) = panels(fig)
    renderer = fig.canvas.get_renderer()
    assert ax.bbox.height >= 0.25 * fig.bbox.height
    box = legend.get_window_extent(renderer)
    assert inside(box, fig)
    assert not box.overlaps(ax.get_tightbbox(renderer))


def test_one_column_notes_stay_below_the_legend_and_inside_the_figure():
    """Two distributions under col none become panel rows, with a note on it: the note,
    wrapped to the narrow width, took more lines than its space and ran into the legend."""
    fig, legend = draw(rows(dists=(U, EXP)), ONE_COLUMN)
    renderer = fig.canvas.get_renderer()
    (note,) = notes_text(fig)
    note_box = note.get_window_extent(renderer)
    assert inside(note_box, fig)
    assert not note_box.overlaps(legend.get_window_extent(renderer))
    for ax in panels(fig):
        assert not note_box.overlaps(ax.get_tightbbox(renderer))


def test_notes_sit_right_under_the_legend():
    """The notes' height was estimated at 70 characters a line while they wrap at the
    figure's width (over 150 characters in a four-panel figure): blank paper around them."""
    spec = PlotSpec(metrics=("err_max",), hue="method", style="none", col="format")
    table = rows(dists=(U, EXP))
    table["err_max"] = 2.0  # with its caveat
    fig, legend = draw(table, spec, "err_max")
    renderer = fig.canvas.get_renderer()
    (note,) = notes_text(fig)
    gap = legend.get_window_extent(renderer).y0 - note.get_window_extent(renderer).y1
    assert 0 <= gap <= 0.2 * fig.dpi
    assert note.get_window_extent(renderer).y0 <= 0.2 * fig.dpi  # no blank band below


def test_a_y_label_taller_than_its_panel_is_wrapped_not_cut():
    """A short figure: "relative error (Frobenius)" is taller than the panel, and was cut
    at the figure's top edge."""
    series = (
        ("plain", "plain", None, "fp16", "emulator"),
        ("plain", "plain", None, "bf16", "emulator"),
    )
    spec = PlotSpec(metrics=("err_fro",), col="none", size=(3.3, 2.0))
    fig, _ = draw(rows(series=series), spec)
    renderer = fig.canvas.get_renderer()
    (ax,) = panels(fig)
    label = ax.yaxis.label
    assert inside(label.get_window_extent(renderer), fig)
    assert " ".join(label.get_text().split()) == "relative error (Frobenius)"


def test_decade_labels_of_a_short_panel_do_not_overlap(one_column):
    """A one-column figure spanning 15 decades: 10^-2 ... 10^-17 were printed on top of
    each other; fewer decades are labelled instead."""
    fig, _ = one_column
    renderer = fig.canvas.get_renderer()
    for ax in panels(fig):
        boxes = [t.get_window_extent(renderer) for t in ax.get_yticklabels() if t.get_text()]
        assert len(boxes) >= 2
        for a, b in zip(boxes, boxes[1:], strict=False):
            assert not a.overlaps(b)


@pytest.mark.parametrize(
    ("label", "wrapped"),
    [
        ("target = fp32, terms_requested = 2", "target = fp32,\nterms_requested = 2"),
        (
            "ozaki1, GPU, target = fp64, terms_requested = auto",
            "ozaki1, GPU, target = fp64,\nterms_requested = auto",
        ),
        ("CPU emulator (not a GPU speed)", "CPU emulator (not a GPU speed)"),
        ("m = 100, n = 72, GPU", "m = 100, n = 72, GPU"),
    ],
)
def test_panel_row_labels_break_between_items(label, wrapped):
    """A row label of the Ozaki sweep read "target = fp32, terms_requested" / "= 2": broken
    inside an item, at its " = "."""
    assert _wrap_label(label, 30) == wrapped


def test_row_labels_taller_than_their_panel_are_rewrapped():
    """Many panel rows in a short figure: a row label longer than its panel is tall ran
    into the next row's."""
    series = (("plain", "plain", None, "fp16", "emulator"),)
    dists = (U, EXP, ("normal", "normal(mean=0, std=1)", json.dumps({"mean": 0.0, "std": 1.0})))
    spec = PlotSpec(metrics=("err_fro",), col="none", row="distribution", size=(3.3, 4.5))
    table = rows(series=series, dists=dists)
    table["dist_label"] = table["dist_label"] + ", a long description of the inputs"
    table["dist_params"] = None  # keep the long labels as they are
    fig, _ = draw(table, spec)
    renderer = fig.canvas.get_renderer()
    for ax in panels(fig):
        for note in ax.texts:
            if note.get_gid() == ROW_LABEL_GID:
                assert note.get_window_extent(renderer).height <= ax.bbox.height + 1


def test_series_told_apart_by_colour_alone_get_a_marker_each():
    """hue with style "none" (the Ozaki figure: colour = φ): every line had the same marker,
    and the colorblind palette's orange and pink (φ = 0.5 and 4) print as one grey."""
    series = tuple(("plain", "plain", None, f, "emulator") for f in ("fp16", "bf16", "tf32"))
    spec = PlotSpec(metrics=("err_fro",), hue="format", style="none", col="none")
    fig, legend = draw(rows(series=series), spec)
    (ax,) = panels(fig)
    markers = {line.get_marker() for line in ax.get_lines()} - {"None"}
    assert len(markers) == 3
    legend_markers = {
        h.get_marker() for h, t in zip(legend.legend_handles, legend.get_texts(), strict=True)
        if t.get_text() in ("fp16", "bf16", "tf32")
    }  # fmt: skip
    assert legend_markers == markers


def test_rows_without_a_value_of_the_hue_get_a_named_legend_entry():
    """hue = phi over U(−1, 1) and exp_rand inputs: the uniform series has no φ, and its
    legend entry was a coloured line without a label."""
    series = (("plain", "plain", None, "fp16", "emulator"),)
    spec = PlotSpec(metrics=("err_fro",), hue="phi", col="distribution")
    fig, legend = draw(rows(series=series, dists=(U, EXP)), spec)
    entries = [
        t.get_text()
        for h, t in zip(legend.legend_handles, legend.get_texts(), strict=True)
        if h.get_linestyle() not in ("None", "none")
        or h.get_marker() not in (None, "None", "none", "")
    ]
    assert "" not in entries
    assert "(no phi)" in entries and "φ = 1" in entries
