"""The drawing of a figure from its frame (:func:`~precision.runner.plot_frame.prepare`):
:func:`draw_figure` lays out one panel per value of ``col`` × ``row``, a legend and the notes
under the panels, and tries as many legend columns as fit the figure's width. The look of each
series (:class:`_Look`: colour by hue, dash and marker by style, black and grey for the
baselines), their horizontal dodge (:class:`_Dodge`), the log y limits at whole decades
(:func:`_decade_limits`) and the x ticks of size and ``terms`` axes (:func:`_x_ticks`,
:func:`_term_ticks`) are decided here; what the figures promise is in the docstring of
:mod:`precision.runner.plotting`.
"""

from __future__ import annotations

import functools
import math
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from precision.runner.figures import PlotSpec
from precision.runner.plot_fit import (
    MIN_PANEL_H,
    MIN_PANEL_W,
    figure_tree,
    layout_problems,
)
from precision.runner.plot_frame import UNIT_ROUNDOFFS, _Frame, _Panels
from precision.runner.plot_labels import (
    ERROR_METRICS,
    FRACTION_METRICS,
    METRIC_LABELS,
    SERIES_SEP,
    _ordered,
    all_repeats_statistic,
    drawable,
    repeats_statistic,
)
from precision.runner.plot_notes import _note_blocks

#: Dashes of the horizontal lines of baselines without an x value (on a ``terms`` axis),
#: one per baseline in legend order (:func:`_level_dash`): their colour is the hue's, so the
#: dash alone tells SGEMM's line from DGEMM's (both were drawn alike until 2026-11-28).
XLESS_DASHES: tuple[Any, ...] = ((0, (6, 2)), (0, (2, 2)), (0, (8, 2, 1, 2)), (0, (4, 1, 1, 1)))
ROUNDOFF_DASHES = {"fp32": (0, (8, 3)), "fp64": (0, (3, 2, 1, 2))}  # unlike DASHES
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "<", ">", "h", "p", "d")
DASHES: tuple[Any, ...] = (
    "-",
    (0, (4, 1.5)),
    (0, (1, 1.2)),
    (0, (5, 1.5, 1, 1.5)),
    (0, (2.5, 1.2)),
    (0, (6, 1.5, 1, 1.5, 1, 1.5)),
)
BASELINE_STYLES = (  # colour, dash, marker
    ("black", "-", "*"),
    ("0.45", (0, (4, 1.5)), "x"),
    ("black", (0, (1, 1.2)), "+"),
    ("0.45", (0, (5, 1.5, 1, 1.5)), "1"),
)
PANEL_W, PANEL_H = 2.5, 2.4  # inches per panel when no size is given
#: Least distance, as a fraction of the axis height, between the frame and the smallest or
#: largest value (or reference line) of a log y axis: a marker there stays inside the axes.
Y_MARGIN = 0.03
#: A ``terms`` axis spanning at most this many integers is ticked at every integer.
MAX_TERM_TICKS = 20
#: Width (inches) a two-digit tick label of a ``terms`` axis needs, gap included; a panel's
#: default width grows with its term count so that every integer gets its label.
TERM_LABEL_W = 0.19
#: Width (inches) of a panel taken by what is not the x range (margins, the half-term pads).
PANEL_FRAME_W = 0.6
#: Least share of a figure's height (``size``) left to the panels when the legend and the
#: notes would take more.
MIN_PANEL_SHARE = 0.4
#: Legend fonts tried, largest first (a figure of a given size tries the smaller too).
LEGEND_FONTS = ("small", "x-small")
#: Height (inches) of a legend row in the font "small", and of a line of the notes.
LEGEND_ROW_H, NOTE_LINE_H = 0.16, 0.1
#: Width (points) of a character of the notes (x-small), on average; they wrap to the width.
NOTE_CHAR_PT = 3.4
#: Share of a given figure height the legend and the notes leave to the panels, if they can.
PANEL_SHARE = 0.5
#: Characters per line of a panel row's label (right of the panels) before it wraps.
ROW_LABEL_CHARS = 30
#: The gid of the row labels (annotations right of the panels), for the layout checks.
ROW_LABEL_GID = "row-label"
NBSP = "\u00a0"
#: Least gap (points) between neighbouring x tick labels; closer, every 2nd (3rd ...) is kept.
X_LABEL_GAP_PT = 2.0
#: Times at most that :func:`_fit_labels` fits a figure's labels to its panels.
LABEL_PASSES = 3
#: Sizes that :func:`_smallest_size` grows a figure to are multiples of this (inches).
SIZE_STEP = 0.1
#: Tick labels, axis labels and their pads (points) of a figure squeezed to fit its size
#: (``compact``, the last of :data:`SQUEEZES`; 7.5, 8.2 and 3.5-4 otherwise), and the pad
#: (inches) the constrained layout leaves around its panels (3 points otherwise).
COMPACT_TICK_PT, COMPACT_LABEL_PT, COMPACT_PAD_PT, COMPACT_LAYOUT_PAD = 6.5, 7.0, 2.0, 1.5 / 72
#: A legend section: its title and its entries, (handle, label) each.
_Section = tuple[str, list[tuple[Any, str]]]


def _setup():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(context="paper", style="whitegrid", font_scale=0.85)
    # Fonts embedded as TrueType (Type 42), not Type 3: IEEE PDF eXpress and the ACM checks
    # reject PDFs with Type 3 fonts (matplotlib's default), and they also print less well.
    # A fixed salt makes SVG's clip-path ids the same in every run (they are random otherwise).
    plt.rcParams.update(
        {
            "pgf.rcfonts": False,
            "svg.fonttype": "none",
            "svg.hashsalt": "precision",
            "pdf.fonttype": 42,
            "ps.fonttype": 42,
        }
    )
    return plt, sns


def _decade_limits(values: np.ndarray, margin: float = 0.0) -> tuple[float, float]:
    """Log-axis limits at whole decades around the positive ``values``, extended by a decade
    on a side whose extreme value would lie within ``margin`` (a fraction of the axis height)
    of the frame, so that markers and reference lines there stay visibly inside the axes."""
    vmin, vmax = math.log10(float(values.min())), math.log10(float(values.max()))
    lo, hi = math.floor(vmin), math.ceil(vmax)
    if hi <= lo:
        hi = lo + 1
    # Extending one side lengthens the axis, which shrinks the other side's margin: repeat
    # until both hold (each extension adds a whole decade, so this ends at once in practice).
    for _ in range(4):
        span = hi - lo
        low_ok, high_ok = vmin - lo >= margin * span, hi - vmax >= margin * span
        if low_ok and high_ok:
            break
        if not low_ok:
            lo -= 1
        if not high_ok:
            hi += 1
    return 10.0**lo, 10.0**hi


def _x_ticks(xs: list[float]) -> tuple[list[float], list[str], list[float]]:
    """Major ticks with labels, and unlabelled minor ticks, for the swept x values: at most
    six labels, at least a seventh of the axis's (log) span apart; powers of two as 2^p when
    some must be left out."""
    logs = np.log2(xs)
    span = float(logs[-1] - logs[0]) or 1.0
    major = [xs[0]]
    for v, lv in zip(xs[1:], logs[1:], strict=True):
        if lv - math.log2(major[-1]) >= span / 7 - 1e-9:
            major.append(v)
    while len(major) > 6:
        major = major[::2]
    ints = [int(v) for v in major]
    pow2 = all(v > 0 and v & (v - 1) == 0 for v in (int(x) for x in xs))
    if pow2 and (len(major) < len(xs) or max(ints) >= 100000):
        labels = [f"$2^{{{int(math.log2(v))}}}$" for v in ints]
    else:
        labels = [_tick_label(v) for v in ints]
    return major, labels, [v for v in xs if v not in major]


def _tick_label(value: int) -> str:
    """An x tick's label: the integer itself, or from 100000 on the shortest exponent form
    that is exactly it (``2e+05``, ``1.5e+05``), else the integer (``131072``: one digit,
    as before 2026-11-28, made it ``1e+05``, and 150000 and 250000 both ``2e+05``)."""
    if value < 100000:
        return f"{value:d}"
    for digits in range(3):
        short = f"{value:.{digits}e}"
        if float(short) == value:
            return short
    return f"{value:d}"


def _term_ticks(xs: list[float], width: float | None = None) -> tuple[list[float], list[str]]:
    """Ticks and labels of a linear ``terms`` axis (slices / moduli) showing the counts ``xs``
    in a panel ``width`` inches wide (None: wide enough for every label).

    Ticks at every integer from the smallest to the largest count when they are at most
    :data:`MAX_TERM_TICKS` (the Ozaki ranges, 1-8 slices and 2-20 moduli, always are), else
    at every count present. Every tick is labelled unless the labels would not fit the
    width (:data:`TERM_LABEL_W` each); then every 2nd, 5th or 10th integer is, or where that
    leaves fewer than two labels, the first and the last tick.
    """
    first, last = int(min(xs)), int(max(xs))
    if last - first + 1 <= MAX_TERM_TICKS:
        ticks = [float(t) for t in range(first, last + 1)]
    else:
        ticks = sorted({float(int(x)) for x in xs})
    per_unit = (width - PANEL_FRAME_W) / (last - first + 1) if width is not None else math.inf
    step = next((s for s in (1, 2, 5) if s * per_unit >= TERM_LABEL_W), 10)
    labels = [f"{int(t)}" if step == 1 or int(t) % step == 0 else "" for t in ticks]
    if sum(1 for label in labels if label) < 2:  # (3-8 slices every 5th or 10th: one or none)
        labels = [f"{int(t)}" if t in (ticks[0], ticks[-1]) else "" for t in ticks]
    return ticks, labels


def _term_panel_width(xs: list[float]) -> float:
    """Default width (inches) of a panel whose ``terms`` axis shows the counts ``xs``: at
    least :data:`PANEL_W`, and enough for a label at every integer they span (at most
    :data:`MAX_TERM_TICKS` of them)."""
    if not xs:
        return PANEL_W
    units = min(int(max(xs)) - int(min(xs)) + 1, MAX_TERM_TICKS)
    return max(PANEL_W, PANEL_FRAME_W + TERM_LABEL_W * units)


@dataclass
class _Look:
    """How each series is drawn: a colour per hue value and a marker and dash pattern per
    style value (methods), a colour, dash and marker per baseline (:data:`BASELINE_STYLES`).

    Where the style shows nothing (``style = "none"``, or one value), each hue value gets its
    own marker as well (``hue_marker``): colours alone do not survive greyscale printing (the
    colorblind palette's orange and pink, or green and vermillion, print as one grey)."""

    hue_vals: list[str]
    style_vals: list[str]
    palette: dict[str, Any]
    marker: dict[str, str]
    dash: dict[str, Any]
    base_names: list[str]
    base_style: dict[str, tuple[Any, Any, str]]
    hue_marker: dict[str, str] | None = None

    @classmethod
    def of(cls, frame: _Frame, d: pd.DataFrame, drawn: set[str], sns: Any, spec: PlotSpec) -> _Look:
        """The look of the series of ``frame`` whose rows ``d`` are drawn as lines; ``drawn``
        holds every series drawn (lines and levels), whose baselines the legend names."""
        hue_vals = _ordered(d.loc[~d["_baseline"], "_hue"])
        style_vals = _ordered(d.loc[~d["_baseline"], "_style"])
        palette = dict(zip(hue_vals, sns.color_palette("colorblind", len(hue_vals)), strict=True))
        marker = {s: MARKERS[i % len(MARKERS)] for i, s in enumerate(style_vals)}
        dash = {s: DASHES[i % len(DASHES)] for i, s in enumerate(style_vals)}
        base_names = [key for kind, key in frame.series if kind == "baseline" and key in drawn]
        base_style = {
            b: BASELINE_STYLES[i % len(BASELINE_STYLES)] for i, b in enumerate(base_names)
        }
        hue_marker = None
        if spec.hue != "none" and len(hue_vals) > 1 and len(style_vals) <= 1:
            hue_marker = {h: MARKERS[i % len(MARKERS)] for i, h in enumerate(hue_vals)}
        return cls(hue_vals, style_vals, palette, marker, dash, base_names, base_style, hue_marker)

    def of_series(self, kind: str, key: str, spec: PlotSpec) -> tuple[Any, ...]:
        """Colour, dash, marker, marker size, line width and zorder of the line of series
        ``key`` (``kind`` "method" or "baseline")."""
        if kind == "baseline":
            color, ls, mk = self.base_style[key]
            ms, lw, z = 6, 1.2, 3
        else:
            h, s = key.split(SERIES_SEP)
            color = self.palette[h] if spec.hue != "none" else "C0"
            ls, mk = self.dash[s], self.marker[s]
            if self.hue_marker is not None:
                mk = self.hue_marker[h]
            ms, lw, z = 4, 1.1, 2
        return color, ls, mk, ms, lw, z


@dataclass
class _Dodge:
    """Horizontal dodge (log10 units; x units on the linear `terms` axis): the series spread
    over at most `dodge` of the smallest x gap, neighbours at most a fifth of that apart.
    Series drawn only as horizontal levels (no x value) take no share of the spread."""

    linear_x: bool
    spread: float
    offset: dict[str, float]

    @classmethod
    def of(cls, frame: _Frame, d: pd.DataFrame, xs: list[float], dodge: float) -> _Dodge:
        """The dodge of the series of ``frame`` whose rows ``d`` are drawn as lines at the
        x values ``xs`` (sorted)."""
        linear_x = frame.x == "terms"  # counts: error falls geometrically, a line on a linear axis
        if linear_x:
            gap = float(np.diff(xs).min()) if len(xs) > 1 else 1.0
        else:
            gap = float(np.diff(np.log10(xs)).min()) if len(xs) > 1 else 0.3
        placed = [key for _, key in frame.series if key in set(d["_series"])]
        n_series = len(placed)
        budget = dodge * gap
        step = min(budget / (n_series - 1), budget / 5) if n_series > 1 else 0.0
        spread = step * (n_series - 1)
        offset = {key: step * i - spread / 2 for i, key in enumerate(placed)}
        return cls(linear_x, spread, offset)

    def __call__(self, x: Any, key: str) -> Any:
        """The x positions of series ``key``: ``x`` moved by its dodge offset."""
        return x + self.offset[key] if self.linear_x else x * 10.0 ** self.offset[key]


@dataclass(frozen=True)
class _Squeeze:
    """How a figure is fitted into a size too small for it as drawn first (each of
    :data:`SQUEEZES` only where the one before does not fit): ``shared_labels`` writes an
    axis label that every panel row (column) repeats once for the whole figure, at its left
    (bottom); ``compact`` draws the tick and axis labels smaller, down to
    :data:`COMPACT_TICK_PT` (a readable floor), with smaller pads around them."""

    shared_labels: bool = False
    compact: bool = False


SQUEEZES = (_Squeeze(), _Squeeze(shared_labels=True), _Squeeze(shared_labels=True, compact=True))


@dataclass
class _Plan:
    """What a figure draws, decided once before its legend's column count is: the panels
    (:class:`_Panels`), the result formats whose unit roundoff is drawn (``targets``), the
    blocks of notes under the figure, the look and dodge of the series, the x values drawn
    (``xs``; ``col_xs`` per panel column) and the relative width of each panel column."""

    frame: _Frame
    metric: str
    spec: PlotSpec
    title: str
    panels: _Panels
    targets: list[str]
    blocks: list[tuple[str, list[str]]]
    look: _Look
    xs: list[float]
    dodge: _Dodge
    col_xs: dict[str, list[float]]
    col_w: list[float]
    #: The width (pixels) of the legend in each number of columns and font tried, kept
    #: across the sizes a figure is tried at (:func:`_legend_width`).
    legend_widths: dict[tuple[int, str], float] = field(default_factory=dict)
    #: The series of each panel (by row and column) as drawn, kept likewise
    #: (:func:`_series_points`).
    points: dict[tuple[str, str], list[_Points]] = field(default_factory=dict)

    @classmethod
    def of(cls, frame: _Frame, metric: str, spec: PlotSpec, title: str, sns: Any) -> _Plan:
        """The plan of the figure of ``metric`` of ``frame``, titled ``title``."""
        # Panels, axes and legend are those of the values drawn: rows with none (an error of
        # exactly 0 on a log axis, an unavailable backend) only add to the notes, so they
        # leave no empty panel, no x range without data and no legend entry without a line.
        # The panels are laid out from all rows first, so that a baseline level keeps the
        # panel it belongs to (_Panels.drawn_only).
        panels = _Panels.of(frame.data, frame.split).drawn_only()  # which rows each panel draws
        d = panels.lines
        valid_lines = d[d["_valid"].astype(bool)]
        drawn = _drawn_rows(frame.data)
        targets = [t for t in UNIT_ROUNDOFFS if t in set(drawn["_target"])]
        blocks = _note_blocks(frame, metric)
        look = _Look.of(frame, valid_lines, set(drawn["_series"]), sns, spec)
        xs = sorted(d["_x"].unique())
        dodge = _Dodge.of(frame, valid_lines, xs, spec.dodge)
        # A terms axis is per panel column (slices of scheme I and moduli of scheme II are not
        # one scale), each column as wide as its labels need; size axes are shared.
        col_xs = {col: sorted(d.loc[d["_col"] == col, "_x"].unique()) for col in panels.cols}
        col_w = [
            _term_panel_width(col_xs[col]) if dodge.linear_x else PANEL_W for col in panels.cols
        ]
        return cls(
            frame, metric, spec, title, panels, targets, blocks, look, xs, dodge, col_xs, col_w
        )

    def at(self, size: tuple[float, float]) -> _Plan:
        """This plan drawn at ``size`` (width, height in inches)."""
        return replace(self, spec=replace(self.spec, size=size))


def _drawn_rows(data: pd.DataFrame) -> pd.DataFrame:
    """The rows of a :func:`prepare` frame's ``data`` that have a value to draw (``_valid``:
    a finite positive value of a row with status ok), or all of them where none has."""
    valid = data["_valid"].astype(bool)
    return data[valid] if valid.any() else data


def draw_figure(frame: _Frame, metric: str, spec: PlotSpec, title: str) -> Any:
    """The matplotlib Figure of ``metric`` (see the docstring of
    :mod:`precision.runner.plotting`); the caller closes it.

    It is drawn at ``spec.size`` (else at the size derived from its panels) where it fits
    there, squeezed no more than it must be (:func:`_draw_fitting`); else at the smallest
    size that holds it (:func:`_smallest_size`), which the caller tells by the figure's size
    (and, where no size holds it, by :func:`~precision.runner.plot_fit.layout_problems`)."""
    plt, sns = _setup()
    plan = _Plan.of(frame, metric, spec, title, sns)
    sections = _legend_sections(plan)
    fig = _draw_fitting(plt, plan, sections)
    if fig is not None:
        return _frozen(fig)
    fitted: dict[tuple[float, float], Any] = {}  # the search's figures that fit, by size
    try:
        size = _smallest_size(plt, plan, sections, fitted)
        if size is None:  # (no size holds it: drawn at its own, as squeezed as it can be)
            return _frozen(_draw(plt, plan, sections, SQUEEZES[-1]))
        # as if that size had been asked for; the search drew it squeezed most already
        fig = _draw_fitting(plt, plan.at(size), sections, fitted.get(size))
        fig = fig if fig is not None else _draw(plt, plan.at(size), sections, SQUEEZES[-1])
    finally:
        for other in fitted.values():
            if other is not fig:
                plt.close(other)
    return _frozen(fig)


#: Decimals (of the figure's or subfigure's width and height) to which a drawn figure's
#: panel and subfigure positions are rounded (:func:`_frozen`): 1e-10 of a figure is far
#: below a printed dot (rounding to 1e-6 already moved pixels of the png files), and far
#: above the layout solver's noise (about 1e-16), so two processes round a position
#: differently only where it lies within that noise of a rounding step: about one position
#: in a million.
FROZEN_DECIMALS = 10


def _frozen(fig: Any) -> Any:
    """``fig`` with its constrained layout fixed where it was last drawn: every subfigure and
    panel position rounded to :data:`FROZEN_DECIMALS` and the layout engine switched off, so
    that saving (png, pdf, svg, pgf) lays nothing out again. Matplotlib's layout solver
    gives positions whose last bits depend on the process (Python's hash seed), which made
    the coordinates written in pdf and svg files differ between runs in their 13th digit:
    now the same table gives the same bytes, except where a position lies within that noise
    of a rounding step (:data:`FROZEN_DECIMALS`)."""
    from matplotlib.transforms import Bbox

    def rounded(points: Any) -> Any:
        return Bbox(np.round(np.asarray(points, dtype=float), FROZEN_DECIMALS))

    # laid out once more first, as a save did before: the constrained layout settles over
    # two draws, and the figures drawn so stay as they were
    _layout_draw(fig)
    for sub in figure_tree(fig)[1:]:
        sub.bbox_relative.set_points(rounded(sub.bbox_relative.get_points()).get_points())
    for ax in fig.get_axes():
        ax.set_position(rounded(ax.get_position().get_points()), which="both")
    fig.set_layout_engine("none")
    return fig


def _draw_fitting(plt: Any, plan: _Plan, sections: list[_Section], squeezed: Any = None) -> Any:
    """The figure of ``plan`` at its size, squeezed no more than it must be to fit there
    (the first of :data:`SQUEEZES` that fits), or None where none fits. Where the first does
    not fit, the last is tried next: where even it does not, none between does either (each
    takes less room than the one before). ``squeezed``: that last one, where it was drawn
    already (by :func:`_smallest_size`; the caller closes it)."""
    if _too_small(plan, sections):
        return None
    first, *between, last = _squeezes(plan)
    for squeeze in (first, last):
        already = squeeze is last and squeezed is not None
        fig = squeezed if already else _draw(plt, plan, sections, squeeze)
        if not layout_problems(fig):
            break
        plt.close(fig)
    else:
        return None
    if squeeze is first:
        return fig
    for squeeze in between:
        tighter = _draw(plt, plan, sections, squeeze)
        if not layout_problems(tighter):
            plt.close(fig)
            return tighter
        plt.close(tighter)
    return fig


def _squeezes(plan: _Plan) -> tuple[_Squeeze, ...]:
    """The :data:`SQUEEZES` that change the figure of ``plan``: labels are shared only
    where several rows or columns of panels repeat them."""
    present = plan.panels.lines
    several = present["_row"].nunique() > 1 or present["_col"].nunique() > 1
    return SQUEEZES if several else tuple(s for s in SQUEEZES if s.compact or not s.shared_labels)


def _too_small(plan: _Plan, sections: list[_Section]) -> bool:
    """Whether the size of ``plan`` is plainly too small for its figure, without drawing it:
    narrower than its legend laid out as narrow as it can be, or than its panel columns at
    their least width; or with less height left to the panels than their rows need at
    their least height (with the title and the x axis below them)."""
    layout, font = _legend_layout(plan, sections)
    size = _figure_size(plan, _legend_rows(layout), font)
    if size.width < _least_width(plan, sections):
        return True
    panels_h = max(size.height - size.legend_h - size.note_h, MIN_PANEL_SHARE * size.height)
    title_h = 0.15 if plan.title else 0.0
    return panels_h < MIN_PANEL_H * len(plan.panels.rows) + title_h + 0.2


def _draw(plt: Any, plan: _Plan, sections: list[_Section], squeeze: _Squeeze) -> Any:
    """The figure of ``plan`` at its size, ``squeeze``d, with the legend layout that suits
    that size (:func:`_legend_layout`), drawn, its labels fitted to its panels
    (:func:`_fit_labels`). Its layout draws leave the minor ticks out
    (:func:`_layout_draw`)."""
    layout, font = _legend_layout(plan, sections)
    fig, legend = _build(plt, plan, layout, font, squeeze)
    if legend is not None and squeeze == SQUEEZES[0]:
        # (drawn as the legend's width was once measured on it: the constrained layout
        # settles over this draw and the next, and the figures drawn so stay as they were)
        _quiet_draw(fig)
    _fit_labels(fig)
    return fig


def _legend_layout(plan: _Plan, sections: list[_Section]) -> tuple[list[list[_Section]], str]:
    """The legend's columns of sections and its font: as many columns as fit the figure's
    width (sections stacked otherwise). A given size (one paper column, say) must also leave
    the panels their share of the height (:func:`_leaves_panels`): there a smaller legend
    font is tried too, and where nothing fits both ways, the shortest legend that fits the
    width is kept (else the narrowest)."""
    fonts = LEGEND_FONTS if plan.spec.size is not None else LEGEND_FONTS[:1]
    room = _figure_size(plan, 0).width * plan.spec.dpi * 0.98
    fallback: tuple[float, int, str] | None = None
    for font in fonts:
        for n_cols in range(len(sections), 0, -1):
            layout = _stack(sections, n_cols)
            wide = _legend_width(plan, sections, n_cols, font) > room
            tall = plan.spec.size is not None and not _leaves_panels(plan, layout, font)
            if not wide and not tall:
                return layout, font
            if not wide:
                rows = _legend_rows(layout) * _font_points(font)
                if fallback is None or rows < fallback[0]:
                    fallback = (rows, n_cols, font)
    if fallback is not None:
        return _stack(sections, fallback[1]), fallback[2]
    return _stack(sections, 1), fonts[-1]


def _legend_width(plan: _Plan, sections: list[_Section], n_cols: int, font: str) -> float:
    """The width (pixels at the figure's dpi) of the legend of ``sections`` stacked into
    ``n_cols`` columns in ``font``, measured on a figure of its own (a legend is as wide as
    its entries wherever it is drawn) and kept in ``plan.legend_widths``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if (n_cols, font) not in plan.legend_widths:
        fig = Figure(dpi=plan.spec.dpi)
        canvas = FigureCanvasAgg(fig)
        layout = _stack(sections, n_cols)
        legend = _draw_legend(fig, layout, _legend_rows(layout), font)
        width = legend.get_window_extent(canvas.get_renderer()).width
        plan.legend_widths[n_cols, font] = float(width)
    return plan.legend_widths[n_cols, font]


def _smallest_size(
    plt: Any, plan: _Plan, sections: list[_Section], fitted: dict[tuple[float, float], Any]
) -> tuple[float, float] | None:
    """The smallest size (inches) that holds the figure of ``plan`` squeezed as far as it may
    be (the last of :data:`SQUEEZES`), no smaller than its own: its own width where some
    height makes the figure fit, else the least width that does; then the least height at
    that width. A grown side is a multiple of :data:`SIZE_STEP`. None where no size up to
    about twice the roomy one (:func:`_roomy_height`) fits. The figures drawn that fit are
    left in ``fitted`` by size (the caller closes them), the others closed."""
    width, height = _figure_size(plan, 0)[:2]
    tried: dict[tuple[float, float], tuple[float, float] | None] = {}

    def room(w: float, h: float) -> tuple[float, float] | None:
        """How much narrower and shorter the figure drawn at ``w`` x ``h`` could be before a
        panel fell below its least size (:func:`_slack`); None where it does not fit."""
        if (w, h) not in tried:
            tried[w, h] = None
            if not _too_small(plan.at((w, h)), sections):
                fig = _draw(plt, plan.at((w, h)), sections, SQUEEZES[-1])
                tried[w, h] = None if layout_problems(fig) else _slack(fig, plan)
                if tried[w, h] is None:
                    plt.close(fig)
                else:
                    fitted[w, h] = fig
        return tried[w, h]

    def roomy(w: float) -> float:
        return _roomy_height(plan, sections, w, height)

    def room_wide(w: float) -> float | None:
        spare = room(w, roomy(w))
        return None if spare is None else spare[0]

    def room_tall(h: float) -> float | None:
        spare = room(width, h)
        return None if spare is None else spare[1]

    if room_wide(width) is None:  # too narrow at any height
        wide = _on_grid(max(width + SIZE_STEP, _least_width(plan, sections)))
        for _ in range(4):
            spare = room_wide(wide)
            if spare is not None:
                break
            wide = _on_grid(wide * 1.2)
        else:
            return None
        guess = max(wide - spare, _least_width(plan, sections))
        width = _least(room_wide, width, wide, guess)
        if room(width, height) is not None:  # wider, it may fit at the height asked for
            return width, height
    tall = roomy(width)
    spare = room_tall(tall)
    return width, _least(room_tall, height, tall, tall - (spare or 0.0))


def _on_grid(value: float) -> float:
    """``value`` rounded up to a multiple of :data:`SIZE_STEP`."""
    return round(math.ceil(value / SIZE_STEP - 1e-6) * SIZE_STEP, 6)


def _least(room: Any, low: float, high: float, guess: float) -> float:
    """The least multiple of :data:`SIZE_STEP` above ``low`` (which does not fit) and at most
    ``high`` (a multiple that fits) at which the figure fits: ``room(value)`` is None where
    it does not, else how much smaller it could be (:func:`_slack`). A search that tries
    ``guess`` first; after a size that fits, the size its room points to (or the step below
    it); after the first that does not, the step above it (a guess is mostly close), after
    later ones the middle of what is left."""
    lo = math.floor(low / SIZE_STEP + 1e-6)
    hi = round(high / SIZE_STEP)
    pivot = math.ceil(guess / SIZE_STEP - 1e-6)
    misses = 0
    while hi - lo > 1:
        mid = pivot if lo < pivot < hi else (lo + hi) // 2
        spare = room(round(mid * SIZE_STEP, 6))
        if spare is None:
            misses += 1
            lo, pivot = mid, mid + 1 if misses == 1 else lo
        else:
            hi, pivot = mid, min(math.ceil((mid * SIZE_STEP - spare) / SIZE_STEP - 1e-6), mid - 1)
    return round(hi * SIZE_STEP, 6)


def _roomy_height(plan: _Plan, sections: list[_Section], width: float, least: float) -> float:
    """A height (a multiple of :data:`SIZE_STEP`, at least ``least``) ample for the figure of
    ``plan`` at ``width``: as tall as a figure without a given size, its legend laid out for
    that width."""
    wide = plan.at((width, 100 * (PANEL_H * len(plan.panels.rows) + 10)))
    layout, font = _legend_layout(wide, sections)
    size = _figure_size(wide, _legend_rows(layout), font)
    title_h = 0.25 if plan.title else 0.0
    panels_h = PANEL_H * len(plan.panels.rows) + 0.35
    return _on_grid(max(least, panels_h + size.legend_h + size.note_h + title_h))


def _least_width(plan: _Plan, sections: list[_Section]) -> float:
    """A width (inches) below which the figure of ``plan`` cannot fit: its narrowest legend
    (one column, the smallest font), and its panel columns at their least width."""
    legend = 0.0
    if sections:
        legend = _legend_width(plan, sections, 1, LEGEND_FONTS[-1]) / (plan.spec.dpi * 0.98)
    return max(legend, 0.45 + MIN_PANEL_W * len(plan.panels.cols))


def _slack(fig: Any, plan: _Plan) -> tuple[float, float]:
    """How much narrower and shorter (inches) ``fig``, the figure of ``plan``, could be before
    one of its panels fell below :data:`~precision.runner.plot_fit.MIN_PANEL_W` x
    :data:`~precision.runner.plot_fit.MIN_PANEL_H`: the panel columns share a width change
    in proportion to their widths, the rows a height change equally."""
    widths: dict[int, float] = {}
    heights: dict[int, float] = {}
    for ax in fig.get_axes():
        if not ax.get_visible():
            continue
        spec = ax.get_subplotspec()
        c, r = spec.colspan.start, spec.rowspan.start
        widths[c] = min(widths.get(c, math.inf), ax.bbox.width / fig.dpi)
        heights[r] = min(heights.get(r, math.inf), ax.bbox.height / fig.dpi)
    total = sum(plan.col_w)
    narrower = min((w - MIN_PANEL_W) * total / plan.col_w[c] for c, w in widths.items())
    shorter = min(h - MIN_PANEL_H for h in heights.values()) * len(plan.panels.rows)
    return max(narrower, 0.0), max(shorter, 0.0)


def _font_points(font: str) -> float:
    from matplotlib.font_manager import FontProperties

    return float(FontProperties(size=font).get_size_in_points())


def _leaves_panels(plan: _Plan, layout: list[list[_Section]], font: str) -> bool:
    """Whether a legend of ``layout`` in ``font`` and the notes leave the panels of a figure
    of the given size at least :data:`PANEL_SHARE` of its height."""
    size = _figure_size(plan, _legend_rows(layout), font)
    return size.legend_h + size.note_h <= (1 - PANEL_SHARE) * size.height


def _fit_labels(fig: Any) -> Any:
    """Fit the labels of ``fig`` to its panels (:func:`_fit_panel_labels`), once more where
    that leaves labels that overlap or are cut (the layout moves as labels change), at most
    :data:`LABEL_PASSES` times in all. Returns ``fig``."""
    # without minor ticks throughout (unlabelled, they take no room, and every draw or read
    # of an axis's ticks makes them anew: :func:`_minor_ticks_left_out`)
    with _minor_ticks_left_out(fig):
        # drawn again even where the caller has just drawn it: the constrained layout settles
        # over a second draw (skipping it moved the panels of the Ozaki docs figures)
        _quiet_draw(fig)
        for i in range(LABEL_PASSES):
            if i and not layout_problems(fig):
                break
            if not _fit_panel_labels(fig):
                break
            _quiet_draw(fig)
    return fig


def _fit_panel_labels(fig: Any) -> bool:
    """Wrap a y-axis label, or a panel row's label, that is taller than its panel (a small
    figure, or many rows of panels) onto more lines, so that it is neither cut at the
    figure's edge nor runs into its neighbours; label fewer decades on a short panel, and
    fewer x ticks where their labels run into each other (:func:`_thin_x_labels`). Returns
    whether anything changed."""
    renderer = fig.canvas.get_renderer()
    changed = False
    from matplotlib.ticker import LogLocator

    for ax in fig.axes:
        if not ax.get_visible():
            continue
        room = ax.bbox.height
        # Decade labels at most as many as fit the panel's height (a short panel stacked
        # 10^-2 ... 10^-17 on top of each other): LogLocator then labels every 2nd, 3rd ...
        shown = [t for t in ax.get_yticklabels() if t.get_text() and t.get_visible()]
        if len(shown) > 2:
            tall = max(t.get_window_extent(renderer).height for t in shown) * 1.3
            fits = max(2, int(room // tall) + 1)
            if fits < len(shown):
                ax.yaxis.set_major_locator(LogLocator(base=10, numticks=fits))
                changed = True
        changed |= _thin_x_labels(ax, renderer)
        label = ax.yaxis.label
        text = label.get_text()
        if text and label.get_window_extent(renderer).height > room and "\n" not in text:
            label.set_text(_halve(text))
            changed = True
        for note in ax.texts:
            if note.get_gid() != ROW_LABEL_GID:
                continue
            raw = note.get_text().replace(",\n", ", ").replace("\n", " ")
            chars = len(raw)
            while chars > 8 and note.get_window_extent(renderer).height > room:
                chars = int(chars * 0.7)
                note.set_text(_wrap_label(raw, chars))
                changed = True
    return changed


def _thin_x_labels(ax: Any, renderer: Any) -> bool:
    """Where the x tick labels of ``ax`` run into each other (less than
    :data:`X_LABEL_GAP_PT` apart: a narrow panel), label only every 2nd (3rd ...) of them; the
    others keep an unlabelled tick. Returns whether any label was dropped."""
    ticks = list(ax.get_xticks())
    texts = ax.get_xticklabels()
    labels = [t.get_text() for t in texts]
    boxes = [t.get_window_extent(renderer) for t in texts]
    named = [i for i, text in enumerate(labels) if text]
    gap = X_LABEL_GAP_PT * ax.get_figure(root=True).dpi / 72

    def apart(kept: list[int]) -> bool:
        spans = sorted((boxes[i].x0, boxes[i].x1) for i in kept)
        return all(a[1] + gap <= b[0] for a, b in zip(spans, spans[1:], strict=False))

    if len(named) < 2 or len(ticks) != len(labels) or apart(named):
        return False
    kept = next((named[::step] for step in range(2, len(named)) if apart(named[::step])), named[:1])
    ax.set_xticks(ticks, [text if i in kept else "" for i, text in enumerate(labels)])
    return True


def _quiet_draw(fig: Any) -> None:
    """Draw ``fig`` (its layout) to measure it. Without matplotlib's warnings: a layout
    tried and dropped is no concern, and saving the figure kept warns again."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        _layout_draw(fig)


def _layout_draw(fig: Any) -> None:
    """Draw ``fig`` without rendering it, to lay it out and measure it, leaving out what
    takes no room in its layout and is not measured as drawn: the lines and dots of the
    panels (clipped to their frames), the legends (outside the layout, and placed anew
    wherever they are measured) and the minor ticks. The layout and every measure are those
    of a full draw, in less time; saving the figure draws it all.

    Minor ticks are unlabelled here (``NullFormatter``): an empty label adds to an axis's
    layout box only the point where its text would start, which lies within the box of the
    major tick labels and the frame, so leaving them out moves nothing. They took about two
    thirds of a log axis's layout time over many decades (the ticks are made anew each
    draw)."""
    hidden = [a for ax in fig.get_axes() for a in (*ax.lines, *ax.collections)]
    hidden += [legend for sub in figure_tree(fig) for legend in sub.legends]
    hidden = [a for a in hidden if a.get_visible()]
    for artist in hidden:
        artist.set_visible(False)
    try:
        with _minor_ticks_left_out(fig):
            fig.draw_without_rendering()
    finally:
        for artist in hidden:
            artist.set_visible(True)


@contextmanager
def _minor_ticks_left_out(fig: Any) -> Iterator[None]:
    """Within the block, the axes of ``fig`` have no minor ticks (``NullLocator``); their
    own locators come back after it. Matplotlib makes an axis's minor ticks anew whenever its
    ticks are drawn or read (``get_ticklabels``, ``get_xticks``): over many decades of a log
    axis, most of the time of a layout draw or a label fit. They are unlabelled, so nothing
    measured there depends on them (:func:`_layout_draw`)."""
    from matplotlib.ticker import NullLocator

    minor = [
        (axis, axis.get_minor_locator())
        for ax in fig.get_axes()
        for axis in (ax.xaxis, ax.yaxis)
        if not isinstance(axis.get_minor_locator(), NullLocator)
    ]
    for axis, _ in minor:
        axis.set_minor_locator(NullLocator())
    try:
        yield
    finally:
        for axis, locator in minor:
            axis.set_minor_locator(locator)


def _legend_sections(plan: _Plan) -> list[_Section]:
    """Legend sections: (title, [(handle, label), ...]): the hue values, the style values,
    then the baselines and the unit-roundoff lines."""
    from matplotlib.lines import Line2D

    frame, spec, metric, look = plan.frame, plan.spec, plan.metric, plan.look
    d, xless = plan.panels.lines, plan.panels.levels
    hue_vals, style_vals, palette = look.hue_vals, look.style_vals, look.palette
    marker, dash = look.marker, look.dash
    sections: list[_Section] = []
    if spec.hue != "none" and hue_vals and any(k == "method" for k, _ in frame.series):
        hue_marker = look.hue_marker or {}
        sections.append(
            (
                spec.hue,
                [
                    (
                        Line2D([], [], color=palette[h], lw=1.6, marker=hue_marker.get(h), ms=4),
                        _entry(h, spec.hue),
                    )
                    for h in hue_vals
                ],
            )
        )
    if spec.style != "none" and style_vals and any(k == "method" for k, _ in frame.series):
        color = "0.3" if spec.hue != "none" else palette.get("", "0.3")
        # (where the hue values carry the markers, the style's one value shows none)
        style_marker = {s: None if look.hue_marker else m for s, m in marker.items()}
        sections.append(
            (
                spec.style,
                [
                    (
                        Line2D([], [], color=color, ls=dash[s], marker=style_marker[s], ms=4, lw=1),
                        _entry(s, spec.style),
                    )
                    for s in style_vals
                ],
            )
        )
    reference: list[tuple[Any, str]] = []
    level_only = set(xless["_series"]) - set(d["_series"])  # drawn as horizontal lines only
    for b in look.base_names:
        if b in level_only:
            handle = Line2D([], [], color="0.3", ls=_level_dash(look, b), lw=1.0)
            reference.append((handle, f"{b} (colour: {spec.hue})"))
            continue
        b_color, b_dash, b_marker = look.base_style[b]
        handle = Line2D([], [], color=b_color, ls=b_dash, marker=b_marker, ms=5, lw=1.2)
        reference.append((handle, b))
    if metric in ERROR_METRICS:
        for t in plan.targets:
            ref_handle = Line2D([], [], color="0.35", ls=ROUNDOFF_DASHES[t], lw=0.9)
            reference.append((ref_handle, f"{t} unit roundoff $u = {UNIT_ROUNDOFFS[t][1]}$"))
    if reference:
        sections.append(("baselines" if look.base_names else "reference", reference))
    return sections


def _entry(value: str, dim: str) -> str:
    """The legend label of value ``value`` of dimension ``dim``: ``(no phi)`` for the rows
    that have none (a U(−1, 1) series coloured by φ), not an entry without a label."""
    return value if value else f"(no {dim})"


def _legend_rows(layout: list[list[_Section]]) -> int:
    """The rows of the tallest legend column of ``layout`` (a title row per section)."""
    return max((sum(len(items) + 1 for _, items in col) for col in layout), default=0)


def _stack(sections: list[_Section], n_cols: int) -> list[list[_Section]]:
    """``sections`` stacked into ``n_cols`` legend columns."""
    layout: list[list[_Section]] = [[] for _ in range(n_cols)]
    for section in sections:  # each section to the shortest column so far
        heights = [sum(len(items) + 1 for _, items in col) for col in layout]
        layout[heights.index(min(heights))].append(section)
    return layout


class _Size(NamedTuple):
    """A figure's width and height, and the heights of its legend and notes (inches)."""

    width: float
    height: float
    legend_h: float
    note_h: float


def _figure_size(plan: _Plan, legend_rows: int, font: str = "small") -> _Size:
    """The size of the figure of ``plan`` with a legend ``legend_rows`` rows tall in
    ``font``: the spec's, else one derived from the panels, the legend, the notes and the
    title."""
    blocks = plan.blocks
    row_h = LEGEND_ROW_H * _font_points(font) / _font_points("small")
    legend_h = row_h * legend_rows + 0.1 if legend_rows else 0.0
    if plan.spec.size is not None:
        width, height = plan.spec.size
    else:
        width = 0.55 + sum(plan.col_w)
    # The notes as drawn (:func:`_note_text`): their lines once wrapped to the width.
    note_lines = _note_text(blocks, width).count("\n") + 1 if blocks else 0
    note_h = NOTE_LINE_H * note_lines + 0.1 if blocks else 0.0
    title_h = 0.25 if plan.title else 0.0
    if plan.spec.size is None:
        height = PANEL_H * len(plan.panels.rows) + 0.35 + legend_h + note_h + title_h
    return _Size(width, height, legend_h, note_h)


def _build(
    plt: Any,
    plan: _Plan,
    layout: list[list[_Section]],
    font: str = "small",
    squeeze: _Squeeze = SQUEEZES[0],
) -> tuple[Any, Any]:
    """The figure with the legend sections stacked into ``layout``'s columns, in ``font``,
    ``squeeze``d (:class:`_Squeeze`)."""
    legend_rows = _legend_rows(layout)
    size = _figure_size(plan, legend_rows, font)
    fig, axes, legend_fig, note_fig = _new_figure(plt, plan, size)
    present, groups = _draw_panels(plan, axes)
    _set_y_limits(plan, groups)
    _set_x_axes(plan, axes, present, size.width)
    if squeeze.compact:
        _compact(fig, axes)
    if squeeze.shared_labels:
        _share_labels(plan, axes, present, COMPACT_LABEL_PT if squeeze.compact else None)
    legend = None
    if legend_fig is not None and layout:
        legend = _draw_legend(legend_fig, layout, legend_rows, font)
    if note_fig is not None:
        _draw_notes(note_fig, plan.blocks, size.width)
    return fig, legend


def _new_figure(plt: Any, plan: _Plan, size: _Size) -> tuple[Any, Any, Any, Any]:
    """A figure of ``size`` split into subfigures from top to bottom: the panels (its grid of
    axes, titled), the legend and the notes (None where they take no height). Returns the
    figure, its axes (rows × columns) and the legend's and the notes' subfigures."""
    width, height, legend_h, note_h = size
    fig = plt.figure(figsize=(width, height), dpi=plan.spec.dpi, layout="constrained")
    _share_mathtext(fig.canvas)
    # The panels keep a share of a given size too small for the legend and notes (they
    # then overlap, as matplotlib warns; without one the panels would be dropped).
    parts = [max(height - legend_h - note_h, MIN_PANEL_SHARE * height), legend_h, note_h]
    keep = [h > 0 for h in parts]
    subfigs = fig.subfigures(sum(keep), 1, height_ratios=[h for h in parts if h > 0], squeeze=False)
    sub_iter = iter(subfigs[:, 0])
    top = next(sub_iter)
    legend_fig = next(sub_iter) if keep[1] else None
    note_fig = next(sub_iter) if keep[2] else None
    nrows, ncols = len(plan.panels.rows), len(plan.panels.cols)
    axes = top.subplots(nrows, ncols, squeeze=False, gridspec_kw={"width_ratios": plan.col_w})
    if plan.title:
        top.suptitle(plan.title, fontsize="medium")
    return fig, axes, legend_fig, note_fig


@functools.cache
def _shared_mathtext_parser() -> Any:
    """One matplotlib mathtext parser (vector output, as the Agg renderer makes its own) for
    every figure drawn here, made on first use."""
    from matplotlib.mathtext import MathTextParser

    return MathTextParser("path")


def _share_mathtext(canvas: Any) -> None:
    """Have every Agg renderer of ``canvas`` parse mathtext with one shared parser.

    Each renderer matplotlib makes (one per figure and size) brings a new ``MathTextParser``,
    and the parser's cache of parsed expressions is keyed by the parser, so the size search
    re-parsed every log-scale tick label (``$\\mathdefault{10^{-4}}$``) of every figure it
    built: about 7 % of the CPU time of drawing the test suite's figures (measured). A parse
    depends only on its key (the expression, dpi, font properties, antialiasing and
    hinting), so sharing the parser changes no pixel or byte."""
    get_renderer = canvas.get_renderer

    def shared_renderer() -> Any:
        renderer = get_renderer()
        renderer.mathtext_parser = _shared_mathtext_parser()
        return renderer

    canvas.get_renderer = shared_renderer


def _draw_panels(plan: _Plan, axes: Any) -> tuple[list[list[bool]], dict[Any, list[Any]]]:
    """Draw the series, levels and unit-roundoff lines of every panel and name its column
    and row; hide the panels with nothing drawn as lines. Returns which panels are present
    (by row, then column) and the panels that share a y range (``sharey``: those of one
    device class; else each alone), as (axes, rows drawn) by group."""
    panels, metric = plan.panels, plan.metric
    rows, cols = panels.rows, panels.cols
    present = [[bool(panels.lines_in(row, col).any()) for col in cols] for row in rows]
    groups: dict[Any, list[Any]] = {}
    for r, row in enumerate(rows):
        for c, col in enumerate(cols):
            ax = axes[r, c]
            panel = panels.lines[panels.lines_in(row, col)]
            if panel.empty:
                ax.set_visible(False)
                continue
            _draw_series(plan, ax, panel, (row, col))
            _draw_levels(plan, ax, row, col)
            if metric in ERROR_METRICS:
                for t in plan.targets:
                    u = UNIT_ROUNDOFFS[t][0]
                    ax.axhline(u, color="0.35", ls=ROUNDOFF_DASHES[t], lw=0.9, zorder=0)
            _name_panel(ax, present, r, c, row, col)
            share = panel["_device"].iloc[0] if plan.spec.sharey else (r, c)
            groups.setdefault(share, []).append((ax, panel))
    return present, groups


class _Points(NamedTuple):
    """A series of a panel as drawn: its kind ("method" or "baseline") and key, its valid
    repeats (dodged x, value) and its statistic over them at each x (dodged x, value)."""

    kind: str
    key: str
    x: Any
    y: Any
    line_x: Any
    line_y: Any


def _series_points(plan: _Plan, panel: pd.DataFrame) -> list[_Points]:
    """The series of ``panel`` (the rows drawn as lines there) with a valid repeat, in the
    order of ``plan.frame.series``: their repeats and their median over repeats (least,
    for a fraction: :func:`~precision.runner.plot_labels.over_repeats`) at each x."""
    dodged = plan.dodge
    points = []
    for kind, key in plan.frame.series:
        sel = panel[(panel["_series"] == key) & panel["_valid"]]
        if sel.empty:
            continue
        # The line's point is the statistic over every repeat of the point, as summary.md
        # gives it: none where a repeat has no value (failed, NaN), and a 0 (exact) repeat
        # counts. Until 2026-11-28 it was taken over the drawable repeats alone, so the
        # figure and the table of one point disagreed. (The panel holds the drawable rows.)
        every = plan.frame.data
        rows = every[every["_point"].isin(set(sel["_point"])) & (every["_series"] == key)]
        rows = rows[rows["_x"].isin(set(sel["_x"]))]
        value = rows["_value"].where(rows["_ok"].astype(bool))
        med = value.groupby(rows["_x"]).agg(all_repeats_statistic(plan.metric))
        med = med[drawable(med, plan.metric)].sort_index()
        points.append(
            _Points(kind, key, dodged(sel["_x"], key), sel["_value"], dodged(med.index, key),
                    med.values)
        )  # fmt: skip
    return points


def _draw_series(plan: _Plan, ax: Any, panel: pd.DataFrame, where: tuple[str, str]) -> None:
    """Draw each series of ``panel``, the panel at row and column ``where``: its valid
    repeats as faint dots and its median over repeats at each x as a line with markers
    (:func:`_series_points`, worked out once for all the figures of ``plan``)."""
    if where not in plan.points:
        plan.points[where] = _series_points(plan, panel)
    for p in plan.points[where]:
        color, ls, mk, ms, lw, z = plan.look.of_series(p.kind, p.key, plan.spec)
        ax.scatter(p.x, p.y, s=5, color=color, alpha=0.3, linewidths=0, zorder=1)
        ax.plot(
            p.line_x, p.line_y, color=color, ls=ls, marker=mk, ms=ms, lw=lw,
            mec="white" if mk not in "x+1" else color, mew=0.5, zorder=z,
        )  # fmt: skip


def _draw_levels(plan: _Plan, ax: Any, row: str, col: str) -> None:
    """Draw the rows without an x value of panel ``row``, ``col`` as horizontal lines at
    their median (least, for a fraction), one per series and hue."""
    xless, look = plan.panels.levels, plan.look
    lines = xless[plan.panels.levels_in(row, col) & xless["_valid"]]
    for (b_key, b_hue), g in lines.groupby(["_series", "_hue"], sort=True):
        b_color = look.base_style.get(str(b_key), ("black", "-", ""))[0]
        ax.axhline(
            float(g["_value"].agg(repeats_statistic(plan.metric))),
            color=look.palette.get(str(b_hue), b_color),
            ls=_level_dash(look, str(b_key)),
            lw=1.0, alpha=0.85, zorder=1,
        )  # fmt: skip


def _level_dash(look: Any, series: str) -> Any:
    """The dash of baseline ``series`` drawn as a level (:data:`XLESS_DASHES`, by its place
    among the figure's baselines)."""
    names = list(look.base_names)
    return XLESS_DASHES[(names.index(series) if series in names else 0) % len(XLESS_DASHES)]


def _name_panel(ax: Any, present: list[list[bool]], r: int, c: int, row: str, col: str) -> None:
    """Title panel ``r``, ``c`` with its column's value where none is drawn above it, and
    write its row's value at its right where none is drawn right of it."""
    ncols = len(present[r])
    if col and (r == 0 or not present[r - 1][c]):
        # At the panel's top (y = 1), where matplotlib would place it too: the panels have
        # nothing above their frame (x ticks below, y axes without an offset text).
        # Placed by hand, it is not placed again at every layout pass, which measured the
        # y axis of the panel each time (a third of the drawing time of a titled figure).
        ax.set_title(col, fontsize="small", y=1.0)
    if row and (c == ncols - 1 or not any(present[r][c + 1 :])):
        ax.annotate(
            _wrap_label(row, ROW_LABEL_CHARS), xy=(1.03, 0.5), xycoords="axes fraction",
            rotation=270, ha="left", va="center", fontsize="small", gid=ROW_LABEL_GID,
        )  # fmt: skip


def _wrap_label(text: str, chars: int) -> str:
    """``text`` (items joined by ", ", such as a panel row's ``target = fp32, terms_requested
    = 2``) on lines of about ``chars`` characters, broken between items where it can and
    never inside a ``dim = value`` item (nor, for a long item alone, at its " = ")."""
    lines: list[str] = []
    for item in text.split(", "):
        item = item.replace(" = ", NBSP + "=" + NBSP)
        if lines and len(lines[-1]) + 2 + len(item) <= chars:
            lines[-1] += ", " + item
        else:
            if lines:
                lines[-1] += ","
            lines += textwrap.wrap(item, chars, break_on_hyphens=False, break_long_words=False) or [
                item
            ]
    return "\n".join(lines).replace(NBSP, " ")


def _halve(text: str) -> str:
    """``text`` on two lines, broken at the space that balances them best, before a
    parenthesis where that keeps both lines within 3/4 of the text ("relative error" /
    "(Frobenius)")."""
    spaces = [i for i, ch in enumerate(text) if ch == " "]
    if not spaces:
        return text
    longest = {i: max(i, len(text) - i - 1) for i in spaces}
    paren = [i for i in spaces if text[i + 1 : i + 2] == "(" and longest[i] <= 0.75 * len(text)]
    cut = min(paren or spaces, key=lambda i: longest[i])
    return f"{text[:cut]}\n{text[cut + 1 :]}"


def _set_y_limits(plan: _Plan, groups: dict[Any, list[Any]]) -> None:
    """Give the panels of each group (:func:`_draw_panels`) one log y axis, at whole decades
    around their values, the levels and the unit roundoffs drawn (:func:`_decade_limits`);
    a fraction (:data:`~precision.runner.plot_labels.FRACTION_METRICS`) gets a linear axis
    from 0 to 1 instead, with :data:`Y_MARGIN` of room beyond both ends."""
    from matplotlib.ticker import LogFormatterSciNotation, LogLocator, NullFormatter

    xless, metric, targets = plan.panels.levels, plan.metric, plan.targets
    if metric in FRACTION_METRICS:
        for members in groups.values():
            for ax, _ in members:
                ax.set_ylim(-Y_MARGIN, 1 + Y_MARGIN)
                ax.set_yticks([0, 0.25, 0.5, 0.75, 1], ["0", "0.25", "0.5", "0.75", "1"])
        return
    for members in groups.values():
        values = pd.concat([p.loc[p["_valid"], "_value"] for _, p in members])
        values = pd.concat([values, xless.loc[xless["_valid"], "_value"]])
        if metric in ERROR_METRICS:
            values = pd.concat([values, pd.Series([UNIT_ROUNDOFFS[t][0] for t in targets])])
        lo, hi = _decade_limits(values.to_numpy(), Y_MARGIN) if len(values) else (1e-8, 1.0)
        for ax, _ in members:
            ax.set_yscale("log")
            ax.set_ylim(lo, hi)
            ax.yaxis.set_major_locator(LogLocator(base=10, numticks=7))
            ax.yaxis.set_major_formatter(LogFormatterSciNotation(base=10))
            subs = [2.0, 3, 4, 5, 6, 7, 8, 9]
            ax.yaxis.set_minor_locator(LogLocator(base=10, subs=subs, numticks=50))
            ax.yaxis.set_minor_formatter(NullFormatter())


def _column_ticks(
    plan: _Plan, width: float
) -> list[tuple[list[float], list[str], list[float], tuple[float, float]]]:
    """Per column of a figure ``width`` inches wide: major ticks, their labels, minor ticks,
    x limits (one shared size axis, or a ``terms`` axis per column)."""
    xs, cols, col_w, spread = plan.xs, plan.panels.cols, plan.col_w, plan.dodge.spread
    linear_x = plan.dodge.linear_x
    ticks: list[tuple[list[float], list[str], list[float], tuple[float, float]]] = []
    if not linear_x:  # one shared size axis
        major, labels, minor = _x_ticks(xs)
        factor = 10.0 ** (spread / 2 + 0.08)
    for c, col in enumerate(cols):
        if linear_x:
            panel_w = (width - 0.55) * col_w[c] / sum(col_w)
            major, labels = _term_ticks(plan.col_xs[col], panel_w)
            pad = spread / 2 + 0.5  # half a term beyond the outermost markers
            lims = (plan.col_xs[col][0] - pad, plan.col_xs[col][-1] + pad)
            ticks.append((major, labels, [], lims))
        else:
            ticks.append((major, labels, minor, (xs[0] / factor, xs[-1] * factor)))
    return ticks


def _set_x_axes(plan: _Plan, axes: Any, present: list[list[bool]], width: float) -> None:
    """Scale, limit and tick the x axis of every panel drawn (:func:`_column_ticks`), label
    the lowest panel of each column and the first panel of each row's y axis."""
    from matplotlib.ticker import FixedLocator, NullFormatter

    ticks = _column_ticks(plan, width)
    nrows, ncols = len(present), len(plan.panels.cols)
    first_col = [next((c for c in range(ncols) if present[r][c]), 0) for r in range(nrows)]
    for r in range(nrows):
        for c in range(ncols):
            ax = axes[r, c]
            if not ax.get_visible():
                continue
            major, labels, minor, lims = ticks[c]
            if not plan.dodge.linear_x:
                ax.set_xscale("log", base=2)
            ax.set_xlim(*lims)
            ax.set_xticks(major, labels)
            ax.xaxis.set_minor_locator(FixedLocator(minor))
            ax.xaxis.set_minor_formatter(NullFormatter())
            below = any(present[r2][c] for r2 in range(r + 1, nrows))
            ax.set_xlabel("" if below else plan.frame.x_label)
            if below:
                ax.tick_params(labelbottom=False)
            ax.set_ylabel(METRIC_LABELS[plan.metric] if c == first_col[r] else "")
            if plan.spec.sharey and c > first_col[r]:
                ax.tick_params(labelleft=False)


def _share_labels(
    plan: _Plan, axes: Any, present: list[list[bool]], size: float | None = None
) -> None:
    """Write the y label once at the left of the panels instead of at each row of them, and
    the x label once below them instead of under each column (where there are several), in
    ``size`` points (None: the axis labels' size)."""
    import matplotlib

    top = axes[0, 0].get_figure(root=False)  # the panels' subfigure
    drawn = [ax for ax in axes.flat if ax.get_visible()]
    size = size or matplotlib.rcParams["axes.labelsize"]
    if sum(any(row) for row in present) > 1:
        for ax in drawn:
            ax.set_ylabel("")
        top.supylabel(METRIC_LABELS[plan.metric], fontsize=size)
    if sum(any(col) for col in zip(*present, strict=True)) > 1:
        for ax in drawn:
            ax.set_xlabel("")
        top.supxlabel(plan.frame.x_label, fontsize=size)


def _compact(fig: Any, axes: Any) -> None:
    """Draw the tick labels of ``fig`` in :data:`COMPACT_TICK_PT`, its axis labels in
    :data:`COMPACT_LABEL_PT`, with pads of :data:`COMPACT_PAD_PT` and
    :data:`COMPACT_LAYOUT_PAD` around them."""
    for ax in axes.flat:
        ax.tick_params(which="both", labelsize=COMPACT_TICK_PT, pad=COMPACT_PAD_PT)
        for axis in (ax.xaxis, ax.yaxis):
            axis.label.set_fontsize(COMPACT_LABEL_PT)
            axis.labelpad = COMPACT_PAD_PT
    fig.get_layout_engine().set(w_pad=COMPACT_LAYOUT_PAD, h_pad=COMPACT_LAYOUT_PAD)


def _draw_legend(
    legend_fig: Any, layout: list[list[_Section]], legend_rows: int, font: str = "small"
) -> Any:
    """The legend of ``layout``'s columns of sections in ``legend_fig``, each column padded
    to ``legend_rows`` rows, section titles in bold, in ``font``."""
    from matplotlib.lines import Line2D

    handles, labels_, bold = [], [], set()
    for column in layout:
        used = 0
        for name, items in column:
            handles.append(Line2D([], [], ls="none"))
            labels_.append(name)
            bold.add(len(labels_) - 1)
            for handle, label in items:
                handles.append(handle)
                labels_.append(label)
            used += len(items) + 1
        for _ in range(legend_rows - used):
            handles.append(Line2D([], [], ls="none"))
            labels_.append("")
    legend = legend_fig.legend(
        handles, labels_, loc="center", ncols=len(layout), frameon=False,
        fontsize=font, handlelength=2.8, columnspacing=1.4, borderaxespad=0.0,
    )  # fmt: skip
    for i, text in enumerate(legend.get_texts()):
        if i in bold:
            text.set_fontweight("bold")
    return legend


def _note_text(blocks: list[tuple[str, list[str]]], width: float) -> str:
    """The notes ``blocks`` (:func:`~precision.runner.plot_notes._note_blocks`) as written
    under a figure ``width`` inches wide: each line wrapped to the width."""
    chars = max(40, int(width * 72 / NOTE_CHAR_PT))
    return "\n".join(
        "\n".join([head] + [textwrap.fill(n, chars, subsequent_indent="    ") for n in lines])
        for head, lines in blocks
    )


def _draw_notes(note_fig: Any, blocks: list[tuple[str, list[str]]], width: float) -> None:
    """Write the notes ``blocks`` into ``note_fig``, wrapped to a figure ``width`` inches
    wide (:func:`_note_text`)."""
    text = _note_text(blocks, width)
    note_fig.text(0.02, 0.5, text, ha="left", va="center", fontsize="x-small", color="0.2")
