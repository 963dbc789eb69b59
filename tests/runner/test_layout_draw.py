"""The shortcuts of the layout draws of :mod:`precision.runner.plot_draw` lay a figure out
exactly as a full draw does: a draw that leaves out the panels' lines and dots and the
legends (:func:`_layout_draw`), and panel titles placed at the top of their panel by hand
instead of by matplotlib at every draw; and one mathtext parser shared by every figure's
renderers draws the same pixels."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg", force=True)

import matplotlib.pyplot as plt
import numpy as np
import pytest

from precision.runner.plot_draw import _layout_draw, _setup, _share_mathtext


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _figure(auto_title: bool):
    """Two log panels with data, titles and a row label, above a legend's subfigure."""
    _setup()
    fig = plt.figure(figsize=(3.3, 2.6), dpi=100, layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[3, 1])
    axes = top.subplots(1, 2)
    for i, ax in enumerate(axes):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.plot([32, 64, 128, 256], [1e-3, 1e-5, 1e-7, 1e-9], marker="o", label=f"m{i}")
        ax.scatter([32, 64], [1e-4, 1e-6], s=5)
        ax.axhline(1e-8, ls=":")
        ax.set_xlabel("size m = n = k")
        ax.set_title(f"panel {i}", fontsize="small", **({} if auto_title else {"y": 1.0}))
    axes[0].set_ylabel("relative error")
    axes[1].annotate("row", xy=(1.03, 0.5), xycoords="axes fraction", rotation=270)
    bottom.legend(*axes[0].get_legend_handles_labels(), loc="center", frameon=False)
    return fig


def _layout(fig) -> list:
    boxes = [ax.get_position().get_points().tolist() for ax in fig.axes]
    boxes += [sub.bbox_relative.get_points().tolist() for sub in fig.subfigs]
    titles = [ax.title.get_position() for ax in fig.axes]
    return [boxes, titles]


#: The most draws after which :func:`_layout_draw` is compared with a full layout draw.
DRAWS = 3


@pytest.fixture(scope="module")
def drawn_in_step():
    """A figure laid out by full layout draws and one by :func:`_layout_draw`, drawn side by
    side ``DRAWS`` times: after each draw, both layouts and whether every line, dot and legend
    of the short one is visible. Shared (read only): the states after 1, 2 and 3 draws are
    those of figures drawn 1, 2 and 3 times from new, as the layout depends only on the
    figure and the draws before; drawing them once in sequence saves drawing them anew for
    each count."""
    full, short = _figure(auto_title=True), _figure(auto_title=True)
    steps = {}
    for draws in range(1, DRAWS + 1):
        full.draw_without_rendering()
        _layout_draw(short)
        visible = all(a.get_visible() for ax in short.axes for a in (*ax.lines, *ax.collections))
        legends = all(leg.get_visible() for sub in short.subfigs for leg in sub.legends)
        steps[draws] = (_layout(full), _layout(short), visible, legends)
    plt.close(full)
    plt.close(short)
    return steps


@pytest.mark.parametrize("draws", range(1, DRAWS + 1))
def test_a_layout_draw_lays_the_figure_out_as_a_full_draw_does(draws, drawn_in_step):
    full, short, visible, legends = drawn_in_step[draws]
    assert short == full
    assert visible and legends


def test_a_panel_title_placed_by_hand_is_where_matplotlib_places_it(drawn_in_step):
    """(The figure with titles placed by matplotlib, drawn twice, is the full one of
    ``drawn_in_step`` after 2 draws: its layout is taken from there.)"""
    auto, _, _, _ = drawn_in_step[2]
    by_hand = _figure(auto_title=False)
    for _ in range(2):
        by_hand.draw_without_rendering()
    assert _layout(by_hand) == auto
    _, titles = auto
    assert all(y == 1.0 for _, y in titles)


def test_figures_share_one_mathtext_parser_and_draw_the_same_pixels():
    """Every Agg renderer of a figure made by :func:`_share_mathtext` parses mathtext (the log
    axes' tick labels) with one parser, whose cache then serves the next figure; the pixels
    are those of a figure drawn with matplotlib's own per-renderer parser."""
    shared = []
    for _ in range(2):
        fig = _figure(auto_title=True)
        _share_mathtext(fig.canvas)
        fig.canvas.draw()
        shared.append(fig)
    own = _figure(auto_title=True)
    own.canvas.draw()
    parsers = [fig.canvas.get_renderer().mathtext_parser for fig in (*shared, own)]
    assert parsers[0] is parsers[1]
    assert parsers[2] is not parsers[0]
    pixels = [np.asarray(fig.canvas.buffer_rgba()) for fig in (shared[1], own)]
    assert np.array_equal(*pixels)
