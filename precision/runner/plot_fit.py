"""Whether a drawn figure holds what it shows: :func:`layout_problems` lists the text cut at
the figure's edges, the things that run into each other (tick labels, axis labels, panel
titles and row labels, the legend, the notes, the title, the panels themselves) and the
panels squeezed below :data:`MIN_PANEL_W` x :data:`MIN_PANEL_H` inches. The figure is
measured as drawn last (:func:`~precision.runner.plot_draw.draw_figure` draws it first);
:mod:`~precision.runner.plot_draw` uses the list to decide how to fit a figure into a given
size, or how much larger it must be.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, NamedTuple

#: The smallest panel (inches, the frame of the axes) that still shows its data: a figure
#: whose panels are squeezed below it does not fit its size.
MIN_PANEL_W, MIN_PANEL_H = 0.6, 0.6
#: Overlap (points) below which two boxes count as touching, not overlapping: the extents
#: of text include the font's ascent and descent, which neighbours may share.
TOUCH_PT = 0.5


class _Box(NamedTuple):
    """Something drawn: its owner (``panel 3``, ``legend``, ``figure``), what it is
    (``frame``, ``x tick label`` ...), its text and its extent in display units."""

    owner: str
    kind: str
    text: str
    bbox: Any


def _axis_labels(axis: Any, kind: str, owner: str, renderer: Any) -> list[_Box]:
    """The major tick labels of ``axis`` that are drawn: those of ticks within its view
    interval (on its scale), as last drawn."""
    scale = axis.get_transform()
    low, high = sorted(float(v) for v in scale.transform(list(axis.get_view_interval())))
    close = 1e-9 * max(high - low, 1e-300)
    locs = axis.get_majorticklocs()
    boxes = []
    for tick, at in zip(axis.get_major_ticks(len(locs)), scale.transform(list(locs)), strict=True):
        if not low - close <= float(at) <= high + close:
            continue
        for label in (tick.label1, tick.label2):
            if label.get_visible() and label.get_text().strip():
                boxes.append(_Box(owner, kind, label.get_text(), label.get_window_extent(renderer)))
    return boxes


def _drawn(fig: Any, renderer: Any) -> list[_Box]:
    """Every visible panel, text and legend of ``fig`` (and of its subfigures)."""
    boxes: list[_Box] = []
    for i, ax in enumerate(a for a in fig.get_axes() if a.get_visible()):
        owner = f"panel {i + 1}"
        boxes.append(_Box(owner, "frame", ax.get_title() or "", ax.bbox))
        boxes += _axis_labels(ax.xaxis, "x tick label", owner, renderer)
        boxes += _axis_labels(ax.yaxis, "y tick label", owner, renderer)
        texts = [("x label", ax.xaxis.label), ("y label", ax.yaxis.label), ("title", ax.title)]
        texts += [("label", text) for text in ax.texts]
        for kind, text in texts:
            if text.get_visible() and text.get_text().strip():
                boxes.append(_Box(owner, kind, text.get_text(), text.get_window_extent(renderer)))
    for sub in figure_tree(fig):
        for legend in sub.legends:
            if legend.get_visible():
                boxes.append(_Box("legend", "legend", "", legend.get_window_extent(renderer)))
        for text in sub.texts:  # notes, and the title and shared axis labels (sup*)
            if text.get_visible() and text.get_text().strip():
                boxes.append(
                    _Box("figure", "text", text.get_text(), text.get_window_extent(renderer))
                )
    return boxes


def _short(box: _Box) -> str:
    text = " ".join(box.text.split())
    text = text if len(text) <= 40 else text[:37] + "..."
    return f"{box.owner} {box.kind}" + (f" {text!r}" if text else "")


def layout_problems(fig: Any) -> list[str]:
    """What does not fit in ``fig`` as last drawn: text or a legend cut at its edges, boxes
    that overlap (a panel's own tick and axis labels against its frame excepted), and panels
    smaller than :data:`MIN_PANEL_W` x :data:`MIN_PANEL_H`. Empty when it all fits."""
    renderer = fig.canvas.get_renderer()
    boxes = _drawn(fig, renderer)
    touch = TOUCH_PT * fig.dpi / 72
    edge = fig.bbox
    problems = []
    for box in boxes:
        b = box.bbox
        if box.kind == "frame":
            if b.width < MIN_PANEL_W * fig.dpi or b.height < MIN_PANEL_H * fig.dpi:
                w, h = b.width / fig.dpi, b.height / fig.dpi
                problems.append(f"{_short(box)}: {w:.2f} x {h:.2f} in")
            continue
        if (
            b.x0 < edge.x0 - touch
            or b.y0 < edge.y0 - touch
            or b.x1 > edge.x1 + touch
            or b.y1 > edge.y1 + touch
        ):
            problems.append(f"{_short(box)} is cut at the figure's edge")
    for one, two in combinations(boxes, 2):
        if one.owner == two.owner and "frame" in (one.kind, two.kind):
            continue  # a panel's tick and axis labels sit at its frame
        a, b = one.bbox, two.bbox
        across = min(a.x1, b.x1) - max(a.x0, b.x0)
        along = min(a.y1, b.y1) - max(a.y0, b.y0)
        if across > touch and along > touch:
            problems.append(f"{_short(one)} overlaps {_short(two)}")
    return problems


def figure_tree(fig: Any) -> list[Any]:
    """``fig`` and every subfigure nested in it, at any depth (each subfigure's own legends
    and texts are not the figure's)."""
    tree, todo = [], [fig]
    while todo:
        sub = todo.pop()
        tree.append(sub)
        todo += list(sub.subfigs)
    return tree
