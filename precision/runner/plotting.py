"""Figures of a results table: error (or TFLOP/s) against size, ready for a paper.

One figure per metric (``err_fro``, ``err_max``, ``err_median``, ``tflops``), one panel per
value of ``col`` × ``row`` (:class:`~precision.runner.figures.PlotSpec`), colour = ``hue``, line
style and marker = ``style``. Each line is the median over repeats (errors span decades and
the repeat count is small, so no bootstrap band); every repeat is also drawn as a faint dot.

What keeps the figures honest and readable:

- No marker is the median of distinct points. A dimension of a point's identity that the spec
  does not show (:data:`SPLIT_DIMENSIONS`: method, format, backend, arch, distribution, the
  Ozaki ``target`` and requested term count, ``emulator_device``, m/n/k) and that varies
  within a series at one x in one panel becomes rows of panels, labelled ``dim = value`` (the
  method or distribution label itself), and a note under the figure says which dimension and
  where ("backend varies within series (...): shown as panel rows; set hue/style/col/row to
  choose"). A dimension constant within every such cell adds nothing. The count that
  ``terms = "auto"`` chose is an outcome, not an identity: repeats that chose different counts
  stay one point (pooled where the count is not shown), and a note names them ("ozaki2 [..]:
  repeats chose 16 and 17 terms at size = 4096"; where x, a panel or a series shows the count,
  each count's value is the median of part of the point's repeats, which the note says).
  A baseline without a value of a split dimension (its series names its backend and format;
  it has no Ozaki target) joins every panel row of the methods that agree with it on the
  other split dimensions, instead of a panel row of its own.
- Lines that coincide stay distinguishable: every style value has its own marker and dash
  pattern, and the series are spread horizontally by a small dodge (at most ``dodge`` of the
  smallest gap between neighbouring x values, on the log axis, or on the linear ``terms``
  axis); the x ticks mark the true sizes.
- CPU fp32/fp64 baselines (format fp32 or fp64: the emulated fp32 FMA chain, numpy's matmul,
  cuBLAS SGEMM) are drawn in black and grey with their own legend entries, and error figures
  carry the fp32 unit roundoff u = 2^-24 as a dotted horizontal line.
- TFLOP/s panels are split by device: GPU backends, numpy's BLAS on the CPU, and the emulator
  (a CPU replay of the tensor core, whose TFLOP/s is labelled as not a GPU speed; on the GPU
  engine, ``emulator_device = "gpu"``, labelled as not a GEMM speed).
- Log axes are labelled at whole decades (limits rounded out to decades, with every value and
  reference line at least :data:`Y_MARGIN` of the axis height inside the frame); the x axis is
  labelled at the swept sizes (thinned, or as powers of two, when there are many). A
  ``terms`` axis (Ozaki slices / moduli) is linear, per panel column, and labelled at every
  integer it spans (its panels are widened to fit the labels).
- Points with no finite positive value (error rows, unavailable backends, NaN or Inf, error 0
  on a log axis) are listed under the figure, after the notes above (each list at most
  :data:`MAX_NOTE_LINES` lines).
- Distributions are named as a reader writes them, from every parameter value of the row
  (``dist_params``): ``U(−1, 1)``, ``N(0, 1)``, ``exp_rand, φ = 1`` (:data:`DIST_LABELS`;
  a real minus sign), whether or not the config spelled the defaults out; others by their
  ``dist_label``. Display only: the tables' ``dist_label`` column is unchanged.
- Caveats head the notes, never capped: an ``err_max`` figure reaching 1 says that entries
  with an exact value near 0 set it (:data:`ERR_MAX_NOTE`); a TFLOP/s figure says when its
  points were timed while a run computed several at once (``--jobs N``, Dask workers), and
  that numpy's multithreaded BLAS stalls on a loaded machine unless the run recorded one
  BLAS thread (:func:`timing_notes`, from the records of provenance.json).
- PDF (and PostScript) files embed TrueType fonts (Type 42), not Type 3, which IEEE's and
  ACM's PDF checks reject.
"""

from __future__ import annotations

import functools
import io
import math
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from precision.runner.figures import PlotSpec
from precision.runner.store import ResultsDir, StoreError, atomic_write

METRIC_LABELS = {
    "err_fro": "relative error (Frobenius)",
    "err_max": "max. relative elementwise error",
    "err_median": "median relative elementwise error",
    "tflops": "TFLOP/s (2mnk / median time)",
}
ERROR_METRICS = ("err_fro", "err_max", "err_median")
#: Joins the hue and style values of a method's series key (and the identity columns of a
#: point's key). Not NUL: pandas 3.0's factorize (under groupby) cuts object strings at a NUL,
#: which merged every series of one hue, whatever its style; numpy's and pandas' vectorised
#: string operations drop a trailing NUL too.
SERIES_SEP = "\x1f"
#: fp32's unit roundoff: the relative error bound of one round-to-nearest into fp32.
FP32_UNIT_ROUNDOFF = 2.0**-24
#: Unit roundoff 2^-p of each result format: error figures draw one dotted line per result
#: format present (``target`` of the Ozaki methods, fp64 for the fp64 baselines, else fp32).
UNIT_ROUNDOFFS = {"fp32": (FP32_UNIT_ROUNDOFF, "2^{-24}"), "fp64": (2.0**-53, "2^{-53}")}
#: Dash of the horizontal lines of baselines without an x value (on a ``terms`` axis).
XLESS_DASH: Any = (0, (6, 2))
ROUNDOFF_DASHES = {"fp32": (0, (1, 2)), "fp64": (0, (3, 2, 1, 2))}
#: Formats whose rows are baselines (not tensor-core methods): drawn in black and grey.
BASELINE_FORMATS = ("fp32", "fp64")
BASELINE_NAMES = {
    ("emulator", "fp32"): "fp32 FMA chain (emulated SGEMM)",
    ("numpy", "fp32"): "fp32 numpy matmul (BLAS SGEMM)",
    ("cublas", "fp32"): "fp32 cuBLAS SGEMM",
    ("numpy", "fp64"): "fp64 numpy matmul (BLAS DGEMM)",
    ("cublas", "fp64"): "fp64 cuBLAS DGEMM",
}
#: Device class of each backend in TFLOP/s figures (panels never mix classes).
DEVICES = {
    "cuda": "GPU",
    "cublas": "GPU",
    "numpy": "CPU: numpy BLAS",
    "emulator": "CPU emulator (not a GPU speed)",
}
#: Device class of emulator rows run on the GPU engine (config ``emulator_device = "gpu"``).
GPU_EMULATOR = "GPU emulator engine (not a GEMM speed)"


def _devices(table: pd.DataFrame) -> pd.Series:
    """The device class of each row (:data:`DEVICES`; the emulator on the GPU engine apart)."""
    device = table["backend"].map(lambda b: DEVICES.get(b, b))
    if "emulator_device" in table:
        on_gpu = (table["backend"] == "emulator") & (table["emulator_device"] == "gpu")
        device = device.where(~on_gpu, GPU_EMULATOR)
    return device


X_LABELS = {
    "size": "size m = n = k",
    "k": "k (inner dimension)",
    "m": "m (rows of A and C)",
    "n": "n (columns of B and C)",
    "terms": "terms (slices I / moduli II)",
}
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
MAX_NOTE_LINES = 6
#: Least share of a figure's height (``size``) left to the panels when the legend and the
#: notes would take more.
MIN_PANEL_SHARE = 0.4
#: The note under an ``err_max`` figure (and table) with a value of 1 or more: an elementwise
#: relative error is largest where the exact entry is smallest, whatever the method.
ERR_MAX_NOTE = (
    "err_max = max over entries of |C − C_exact| / |C_exact|: entries with C_exact near 0 "
    "set it, hence values ≥ 1"
)


def _setup():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(context="paper", style="whitegrid", font_scale=0.85)
    # Fonts embedded as TrueType (Type 42), not Type 3: IEEE PDF eXpress and the ACM checks
    # reject PDFs with Type 3 fonts (matplotlib's default), and they also print less well.
    plt.rcParams.update(
        {"pgf.rcfonts": False, "svg.fonttype": "none", "pdf.fonttype": 42, "ps.fonttype": 42}
    )
    return plt, sns


def _column(table: pd.DataFrame, name: str, fallback: str) -> pd.Series:
    return table[name] if name in table else table[fallback]


def _dimension(table: pd.DataFrame, dim: str) -> pd.Series:
    """The values of plot dimension ``dim`` (see figures.DIMENSIONS) as strings."""
    if dim == "none":
        return pd.Series("", index=table.index)
    if dim == "method":
        return _column(table, "variant", "method").astype(str)
    if dim == "distribution":
        return _distribution_labels(table)
    if dim == "shape":
        return table["m"].astype(str) + "×" + table["n"].astype(str) + "×" + table["k"].astype(str)
    if dim == "phi":
        import json

        def phi(params: Any) -> str:
            value = json.loads(params).get("phi") if isinstance(params, str) else None
            return "" if value is None else f"φ = {value:g}"

        if "dist_params" not in table:
            return pd.Series("", index=table.index)
        return table["dist_params"].map(phi)
    if dim not in table:
        return pd.Series("", index=table.index)
    if dim == "terms":
        terms = pd.to_numeric(table["terms"], errors="coerce")
        return terms.map(lambda t: "" if np.isnan(t) else f"{int(t)} terms")
    # Missing values (None, NaN, pandas' NA in a string column) are shown as "".
    return table[dim].map(lambda v: "" if v is None or pd.isna(v) else str(v)).astype(object)


MINUS = "\u2212"  # the minus sign (−), not the hyphen of Python's number formatting


def _number(value: float) -> str:
    """``value`` as figures show it: ``:g`` with a real minus sign (−1, not -1)."""
    return f"{value:g}".replace("-", MINUS)


def _normal_label(mean: str, std: str) -> str:
    return f"N({mean}, {std if std == '1' else std + '²'})"  # N(μ, σ²)


#: How figures and the summary's pivot tables name the distributions they know, from the
#: values of all their parameters (formatted by :func:`_number`), in the names of
#: :mod:`precision.distributions`: U(−1, 1), N(0, 1), "exp_rand, φ = 1". Any other
#: distribution is shown by its ``dist_label`` (``name(param=value, ...)``).
DIST_LABELS: dict[str, Any] = {
    "uniform": lambda low, high: f"U({low}, {high})",
    "normal": _normal_label,
    "exp_rand": lambda phi: f"exp_rand, φ = {phi}",
    "wide_range": lambda exp_min, exp_max: f"wide_range, e ∈ [{exp_min}, {exp_max}]",
    "cancellation": lambda eps: f"cancellation, ε = {eps}",
}


def readable_distribution(name: str, params: Any) -> str | None:
    """The display label of distribution ``name`` with ``params`` (a dict, or the JSON of
    the ``dist_params`` column), per :data:`DIST_LABELS`; None when ``name`` is not there or
    ``params`` does not hold exactly its parameters, as numbers."""
    import json

    from precision.distributions import DISTRIBUTIONS

    if name not in DIST_LABELS or name not in DISTRIBUTIONS:
        return None
    if isinstance(params, str):
        try:
            params = json.loads(params)
        except ValueError:
            return None
    if not isinstance(params, dict) or set(params) != set(DISTRIBUTIONS[name].defaults):
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in params.values()):
        return None
    return str(DIST_LABELS[name](**{key: _number(v) for key, v in params.items()}))


def _distribution_labels(table: pd.DataFrame) -> pd.Series:
    """The ``distribution`` dimension as figures show it: each ``dist_label`` (the generator
    and its swept or configured parameters, ``uniform(low=-1, high=1)`` or ``uniform``)
    rendered from the row's full ``dist_params`` (:func:`readable_distribution`), so the
    same distribution reads the same whichever of its parameters a config spelled out.

    Display only: a label is kept as it is where its rows lack complete ``dist_params``
    (hand-made tables), disagree on them, or would read the same as another label's (two
    labels never merge into one panel or series)."""
    raw = _column(table, "dist_label", "distribution").astype(str)
    if "dist_params" not in table or "distribution" not in table:
        return raw
    shown: dict[str, str] = {}
    pairs = zip(raw, table["distribution"].astype(str), table["dist_params"], strict=True)
    variants: dict[str, set[tuple[str, str]]] = {}
    for label, name, params in pairs:
        variants.setdefault(label, set()).add((name, str(params)))
    for label, found in variants.items():
        readable = readable_distribution(*next(iter(found))) if len(found) == 1 else None
        shown[label] = readable or label
    uses: dict[str, int] = {}
    for text in shown.values():
        uses[text] = uses.get(text, 0) + 1
    shown = {label: text if uses[text] == 1 else label for label, text in shown.items()}
    return raw.map(shown).astype(object)


def _dim_title(dim: str, value: str) -> str:
    return f"{dim} = {value}" if dim in ("m", "n", "k") else value


def _natural_key(value: str) -> tuple:
    """Sort key that orders embedded integers numerically ("m = 64" before "m = 128")."""
    parts = re.split(r"(\d+)", value)
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


def _ordered(values: Iterable[str]) -> list[str]:
    return sorted(set(values), key=_natural_key)


#: Why a dimension can have no value in a table (appended to the message).
_ONLY_SOME = {
    "terms": "only Ozaki methods have it",
    "target": "only Ozaki methods have it",
    "phi": "only the exp_rand distribution has it",
}


def _is_square(table: pd.DataFrame) -> bool:
    return bool(((table["m"] == table["k"]) & (table["n"] == table["k"])).all())


def _empty_dimension(table: pd.DataFrame, dim: str) -> str:
    """Why ``dim`` has no value in ``table`` (e.g. ``terms`` without Ozaki rows), or ""."""
    if dim == "none" or (_dimension(table, dim) != "").any():
        return ""
    column = "dist_params" if dim == "phi" else dim
    why = f" ({_ONLY_SOME[dim]})" if dim in _ONLY_SOME else ""
    return f"the table has no values in column {column!r}{why}"


def check_table(table: pd.DataFrame, spec: PlotSpec) -> list[tuple[str, str]]:
    """The keys of ``spec`` (``x``, ``hue``, ``style``, ``col``, ``row``) that ``table`` cannot
    show, as ``(key, message)``: an x axis or dimension without a single value in the table
    (``terms`` without Ozaki rows, ...) or ``x = "size"`` on non-square shapes. The message
    says what the table lacks and lists the values it can show."""
    from precision.runner.figures import DIMENSIONS, X_AXES

    if table.empty:
        return []
    problems: list[tuple[str, str]] = []
    square = _is_square(table)
    has_terms = not _empty_dimension(table, "terms")
    x_ok = [a for a in X_AXES if (a != "size" or square) and (a != "terms" or has_terms)]
    if spec.x not in x_ok:
        if spec.x == "size":
            why = "the table has non-square shapes (m = n = k does not hold in every row)"
        else:
            why = _empty_dimension(table, "terms")
        problems.append(("x", f"{why}; choose one of: {', '.join(x_ok)}"))
    dims_ok = [d for d in DIMENSIONS if not _empty_dimension(table, d)]
    for key in ("hue", "style", "col", "row"):
        why = _empty_dimension(table, getattr(spec, key))
        if why:
            problems.append((key, f"{why}; choose one of: {', '.join(dims_ok)}"))
    return problems


def choose_x(table: pd.DataFrame, x: str) -> tuple[str, list[str], str]:
    """The x column (``size``, ``m``, ``n`` or ``k``), the other shape dimensions that vary at
    a fixed x (they become part of the panels) and the axis label."""
    square = _is_square(table)
    if x == "terms":
        if "terms" not in table:
            raise ValueError("x = 'terms' needs a 'terms' column (Ozaki methods)")
        has = pd.to_numeric(table["terms"], errors="coerce").notna()
        rest = [d for d in ("m", "n", "k") if table.loc[has, d].nunique() > 1]
        return "terms", rest, X_LABELS["terms"]
    if x == "auto":
        if square:
            return "size", [], X_LABELS["size"]
        varying = [d for d in ("k", "n", "m") if table[d].nunique() > 1]
        x = varying[0] if varying else "k"
    if x == "size":
        if not square:
            raise ValueError(
                "x = 'size' needs square shapes (m = n = k in every row); use x = 'm', 'n' or 'k'"
            )
        return "size", [], X_LABELS["size"]
    others = [d for d in ("m", "n", "k") if d != x]
    rest = [d for d in others if table.groupby(x)[d].nunique().max() > 1]
    linked = [d for d in others if (table[d] == table[x]).all()]
    label = " = ".join(d for d in "mnk" if d in linked or d == x) if linked else X_LABELS[x]
    return x, rest, label


@dataclass
class _Frame:
    """A results table with the plot's columns: _x, _hue, _style, _col, _row, _series...

    ``split`` names the identity dimensions added to the panel rows because they vary within
    a drawn cell (:func:`prepare`) and ``split_notes`` says why, one line each;
    ``terms_notes`` names the points whose repeats chose different term counts. Both are
    shown (together at most :data:`MAX_NOTE_LINES` lines, :func:`cap_notes`) under the
    figure and in summary.md, before the points not shown, after ``caveats``: what the
    metric or its measurement needs said (:data:`ERR_MAX_NOTE`, :func:`timing_notes`), never
    capped."""

    data: pd.DataFrame
    x: str
    x_label: str
    rest: list[str]
    series: list[tuple[str, str]]  # (kind, key) in drawing order; kind "method" or "baseline"
    split: list[str] = field(default_factory=list)
    split_notes: list[str] = field(default_factory=list)
    terms_notes: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)


#: Identity dimensions of a point that a figure may leave unshown, in the order in which
#: :func:`prepare` adds them to the panel rows when one varies within a drawn cell (a series
#: at one x in one panel): ``method`` (variant: method and correction), ``distribution``
#: (dist_label: generator and swept parameters), the Ozaki ``target`` and requested term
#: count (``terms_requested``; the count chosen by ``terms = "auto"`` is an outcome that may
#: differ between repeats of one point, never a reason to split), ``emulator_device`` (of
#: emulator rows) and the shape dimensions that :func:`choose_x` did not already place.
SPLIT_DIMENSIONS: tuple[str, ...] = (
    "method",
    "format",
    "backend",
    "arch",
    "distribution",
    "target",
    "terms_requested",
    "emulator_device",
    "m",
    "n",
    "k",
)


def _split_values(
    table: pd.DataFrame, dim: str, baseline: pd.Series, terms_shown: bool
) -> tuple[pd.Series, pd.Series]:
    """The values of identity dimension ``dim`` (:data:`SPLIT_DIMENSIONS`) as text, "" where
    a row has none (the Ozaki axes of other methods; the backend and format of ``baseline``
    rows, which their series names), and their panel-row labels: the text itself for
    ``method`` and ``distribution``, else ``dim = value``. ``terms_requested`` is ``auto`` or
    ``fixed`` where the chosen count is shown anyway (``terms_shown``), as a fixed request
    then equals it."""
    if dim in ("method", "distribution"):
        values = _dimension(table, dim)
        return values, values
    values = _dimension(table, dim)
    if dim in ("backend", "format"):
        values = values.where(~baseline, "")
    if dim == "terms_requested" and terms_shown:
        values = values.where(values.isin(["", "auto"]), "fixed")
    if dim == "emulator_device" and "backend" in table:
        values = values.where(table["backend"] == "emulator", "")
    return values, values.map(lambda v: f"{dim} = {v}" if v else "")


def _join_parts(row: pd.Series, part: pd.Series) -> pd.Series:
    """Panel-row labels ``row`` with ``part`` appended (", " between; nothing where "")."""
    joined = [r if not p else (f"{r}, {p}" if r else p) for r, p in zip(row, part, strict=True)]
    return pd.Series(joined, index=row.index, dtype=object)


def _cells(d: pd.DataFrame) -> pd.Series:
    """The drawn cell of each row: a series at one x in one panel, as one key; rows without
    an x value (drawn as one level per series and hue) by series, hue and panel."""
    x = d["_x"].map(lambda v: "" if np.isnan(v) else repr(v))
    hue = d["_hue"].where(d["_x"].isna(), "")
    parts = zip(d["_series"], d["_row"], d["_col"], x, hue, strict=True)
    return pd.Series(["\x01".join(p) for p in parts], index=d.index, dtype=object)


def _series_keys(hue: pd.Series, style: pd.Series, baseline: pd.Series, names: Any) -> pd.Series:
    """The series of each row: hue and style joined by :data:`SERIES_SEP` for methods,
    ``names`` for baselines (built in Python, element by element)."""
    keys = [f"{h}{SERIES_SEP}{s}" for h, s in zip(hue, style, strict=True)]
    out = [n if b else k for b, n, k in zip(baseline, names, keys, strict=True)]
    return pd.Series(out, index=hue.index, dtype=object)


def _point_keys(table: pd.DataFrame) -> pd.Series:
    """The point of each row: ``point_id``, else its identity columns (the chosen term count
    left out: repeats of one ``terms = "auto"`` point may choose different counts)."""
    from precision.runner.summary import ID_COLUMNS

    if "point_id" in table:
        return table["point_id"].astype(str)
    ids = [c for c in (*ID_COLUMNS, "emulator_device") if c in table and c != "terms"]
    if not ids:
        return pd.Series(table.index.astype(str), index=table.index)
    keys = [SERIES_SEP.join(map(str, v)) for v in table[ids].itertuples(index=False)]
    return pd.Series(keys, index=table.index, dtype=object)


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _who(series: Any, row: Any, col: Any) -> str:
    """How notes name a series in a panel: ``label [row, col]``."""
    label = str(series).replace(SERIES_SEP, " ").strip()  # "" with hue and style "none"
    panel = ", ".join(str(p) for p in (row, col) if p)
    return " ".join(part for part in (label, f"[{panel}]" if panel else "") if part)


def _of(who: str, what: str) -> str:
    """A note line ``who: what`` (just ``what`` where :func:`_who` is "")."""
    return f"{who}: {what}" if who else what


def cap_notes(lines: list[str], more: str = "") -> list[str]:
    """At most :data:`MAX_NOTE_LINES` lines, the last saying how many were left out."""
    if len(lines) <= MAX_NOTE_LINES:
        return lines
    left = len(lines) - (MAX_NOTE_LINES - 1)
    return lines[: MAX_NOTE_LINES - 1] + [f"... and {left} more{more}"]


def prepare(table: pd.DataFrame, spec: PlotSpec, metric: str) -> _Frame:
    """The rows of ``table`` with the figure's columns for ``metric`` (panels, series, x).

    No drawn cell (a series at one x in one panel) pools distinct points: the shape
    dimensions that vary at a fixed x (:func:`choose_x`) and then, one at a time, every
    identity dimension of :data:`SPLIT_DIMENSIONS` that still varies within a cell are
    appended to the panel-row labels (``_row``; ``_rowbase`` keeps the label before the
    latter). A dimension shown by ``hue``/``style``/``col``/``row`` only varies within the
    cells of baselines (whose series is their backend and format), and one constant within
    every cell adds nothing."""
    x, rest, x_label = choose_x(table, spec.x)
    d = pd.DataFrame(index=table.index)
    d["_x"] = pd.to_numeric(table["k" if x == "size" else x], errors="coerce").astype(float)
    d["_hue"] = _dimension(table, spec.hue)
    d["_style"] = _dimension(table, spec.style)
    d["_col"] = _dimension(table, spec.col).map(lambda v: _dim_title(spec.col, v))
    row = _dimension(table, spec.row).map(lambda v: _dim_title(spec.row, v))
    for dim in (r for r in rest if r != spec.row):
        row = row.str.cat(table[dim].astype(str).map(lambda v, dim=dim: f"{dim} = {v}"), sep=", ")
    device = _devices(table)
    if metric == "tflops":
        row = row.str.cat(device, sep=", ")
    d["_row"] = row.str.strip(", ")
    d["_rowbase"] = d["_row"]
    d["_split"] = pd.Series([()] * len(d), index=d.index, dtype=object)  # see _split_rows
    d["_device"] = device if metric == "tflops" else ""
    fmt = table["format"].astype(str)
    backend = table["backend"].astype(str)
    d["_baseline"] = fmt.isin(BASELINE_FORMATS)
    names = [BASELINE_NAMES.get((b, f), f"{f} {b}") for b, f in zip(backend, fmt, strict=True)]
    d["_series"] = _series_keys(d["_hue"], d["_style"], d["_baseline"], names)
    d["_ok"] = (table["status"] == "ok") if "status" in table else True
    d["_status"] = table["status"].astype(str) if "status" in table else "ok"
    d["_value"] = pd.to_numeric(table[metric], errors="coerce").astype(float)
    d["_valid"] = d["_ok"] & np.isfinite(d["_value"]) & (d["_value"] > 0)
    # The format each result is rounded to, for the unit-roundoff lines of error figures.
    target = table["target"] if "target" in table else pd.Series(None, index=table.index)
    d["_target"] = np.where(
        target.notna() & target.astype(str).isin(list(UNIT_ROUNDOFFS)),
        target.astype(str),
        np.where(fmt == "fp64", "fp64", "fp32"),
    )
    d["_point"] = _point_keys(table)
    chosen = table["terms"] if "terms" in table else pd.Series(np.nan, index=table.index)
    d["_terms"] = pd.to_numeric(chosen, errors="coerce").astype(float)
    shown = (spec.hue, spec.style, spec.col, spec.row)
    terms_shown = x == "terms" or "terms" in shown
    by_colour_or_style = tuple(dim for dim in (spec.hue, spec.style) if dim != "none")
    split, split_notes = _split_rows(table, d, x, rest, terms_shown, by_colour_or_style)
    terms_notes = _terms_notes(table, d, spec, x, terms_shown)
    hue_order = _ordered(d.loc[~d["_baseline"], "_hue"])
    style_order = _ordered(d.loc[~d["_baseline"], "_style"])
    methods = [
        ("method", f"{h}{SERIES_SEP}{s}")
        for s in style_order
        for h in hue_order
        if ((d["_hue"] == h) & (d["_style"] == s) & ~d["_baseline"]).any()
    ]
    baselines = [("baseline", b) for b in _ordered(d.loc[d["_baseline"], "_series"])]
    caveats = []
    if metric == "err_max" and (d.loc[d["_valid"], "_value"] >= 1).any():
        caveats.append(ERR_MAX_NOTE)
    return _Frame(
        d, x, x_label, rest, methods + baselines, split, split_notes, terms_notes, caveats
    )


def _split_rows(
    table: pd.DataFrame,
    d: pd.DataFrame,
    x: str,
    rest: list[str],
    terms_shown: bool,
    by_colour_or_style: tuple[str, ...] = (),
) -> tuple[list[str], list[str]]:
    """Append to ``d["_row"]``, in :data:`SPLIT_DIMENSIONS` order, each identity dimension
    that varies within a drawn cell (:func:`_cells`, refined by those added before), and its
    value ("" where a row has none) to the tuple ``d["_split"]``; return their names and one
    note each: an example cell and its values. A dimension shown by colour or line style
    (``by_colour_or_style``) varies only within the baselines' series, which take neither;
    its note says so."""
    from precision.runner.figures import DIMENSIONS

    split: list[str] = []
    notes: list[str] = []
    for dim in SPLIT_DIMENSIONS:
        if dim in rest or (dim in ("m", "n", "k") and x == dim):
            continue
        values, labels = _split_values(table, dim, d["_baseline"], terms_shown)
        cells = _cells(d)
        counts = values.groupby(cells, sort=True).nunique()
        if not (counts > 1).any():
            continue
        varying = cells.isin(counts.index[counts > 1])
        first = d[varying].iloc[0]  # an example: the first such cell in table order
        example = d[cells == cells[varying].iloc[0]]
        at = f"at {x} = {first['_x']:g}" if np.isfinite(first["_x"]) else f"without a {x} value"
        found = _and([v or "(none)" for v in _ordered(values[example.index])])
        advice = "; set hue/style/col/row to choose" if dim in DIMENSIONS else ""
        if dim in by_colour_or_style:
            advice = (
                f" (baselines are drawn in black and grey, not by {dim}); "
                f'set col or row = "{dim}" to choose'
            )
        who = _who(first["_series"], first["_row"], first["_col"])
        where = f"{who} {at}" if who else at  # who: "" with hue and style "none", one panel
        notes.append(f"{dim} varies within series ({where}: {found}): shown as panel rows{advice}")
        d["_row"] = _join_parts(d["_row"], labels)
        d["_split"] = pd.Series(
            [key + (v,) for key, v in zip(d["_split"], values, strict=True)],
            index=d.index,
            dtype=object,
        )
        split.append(dim)
    return split, notes


def _terms_notes(
    table: pd.DataFrame, d: pd.DataFrame, spec: PlotSpec, x: str, terms_shown: bool
) -> list[str]:
    """One line per series and panel whose points' repeats chose different term counts
    (``terms = "auto"``): ``who: repeats chose 16 and 17 terms at size = 4096``. Where the
    count is shown (x, hue, style, col or row), each count's value is a median of part of
    the point's repeats, and the line says so."""
    chosen: dict[str, set[int]] = {}
    first: dict[str, tuple[Any, float]] = {}  # the first row of each point, and its x
    for i, point, terms, x_value in zip(d.index, d["_point"], d["_terms"], d["_x"], strict=True):
        first.setdefault(point, (i, float(x_value)))
        if not math.isnan(terms):
            chosen.setdefault(point, set()).add(int(terms))
    mixed = {point: sorted(counts) for point, counts in chosen.items() if len(counts) > 1}
    if not mixed:
        return []
    # Name a point by what is drawn of it, its requested count where the chosen one is shown.
    requested = _dimension(table, "terms_requested").map(lambda r: f"{r} terms" if r else "")
    hue = requested if spec.hue == "terms" else d["_hue"]
    style = requested if spec.style == "terms" else d["_style"]
    series = _series_keys(hue, style, d["_baseline"], d["_series"])
    col = requested if spec.col == "terms" else d["_col"]
    row = d["_row"]
    if spec.row == "terms":
        drawn = _dimension(table, "terms")
        row = pd.Series(
            [
                q + r[len(t) :] if t and r.startswith(t) else r
                for q, r, t in zip(requested, row, drawn, strict=True)
            ],
            index=d.index,
        )
    lines: dict[tuple[str, str], list[str]] = {}
    for point, counts in mixed.items():
        i, x_value = first[point]
        who = _who(series[i], row[i], col[i])
        at = f"{x_value:g}" if x != "terms" and math.isfinite(x_value) else ""
        lines.setdefault((who, _and([str(c) for c in counts])), []).append(at)
    out = []
    for (who, chose), xs in lines.items():
        shown_at = [v for v in dict.fromkeys(xs) if v]
        where = f" at {x} = {', '.join(shown_at)}" if shown_at else ""
        part = "; each count's value is a median of part of the repeats" if terms_shown else ""
        out.append(_of(who, f"repeats chose {chose} terms{where}{part}"))
    return out


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
    if pow2 and len(major) < len(xs):
        labels = [f"$2^{{{int(math.log2(v))}}}$" for v in ints]
    else:
        labels = [f"{v:d}" if v < 100000 else f"{v:.0e}" for v in ints]
    return major, labels, [v for v in xs if v not in major]


def _term_ticks(xs: list[float], width: float | None = None) -> tuple[list[float], list[str]]:
    """Ticks and labels of a linear ``terms`` axis (slices / moduli) showing the counts ``xs``
    in a panel ``width`` inches wide (None: wide enough for every label).

    Ticks at every integer from the smallest to the largest count when they are at most
    :data:`MAX_TERM_TICKS` (the Ozaki ranges, 1-8 slices and 2-20 moduli, always are), else
    at every count present. Every tick is labelled unless the labels would not fit the
    width (:data:`TERM_LABEL_W` each); then every 2nd, 5th or 10th integer is.
    """
    first, last = int(min(xs)), int(max(xs))
    if last - first + 1 <= MAX_TERM_TICKS:
        ticks = [float(t) for t in range(first, last + 1)]
    else:
        ticks = sorted({float(int(x)) for x in xs})
    per_unit = (width - PANEL_FRAME_W) / (last - first + 1) if width is not None else math.inf
    step = next((s for s in (1, 2, 5) if s * per_unit >= TERM_LABEL_W), 10)
    labels = [f"{int(t)}" if step == 1 or int(t) % step == 0 else "" for t in ticks]
    return ticks, labels


def _term_panel_width(xs: list[float]) -> float:
    """Default width (inches) of a panel whose ``terms`` axis shows the counts ``xs``: at
    least :data:`PANEL_W`, and enough for a label at every integer they span (at most
    :data:`MAX_TERM_TICKS` of them)."""
    if not xs:
        return PANEL_W
    units = min(int(max(xs)) - int(min(xs)) + 1, MAX_TERM_TICKS)
    return max(PANEL_W, PANEL_FRAME_W + TERM_LABEL_W * units)


def _missing_notes(frame: _Frame, metric: str) -> list[str]:
    d = frame.data
    if d.empty:
        return []
    xname = "size" if frame.x == "size" else frame.x
    # dropna=False: rows without an x value (on a terms axis: baselines, and Ozaki points
    # with terms = "auto" that were not computed, so no count is known) are listed too.
    grouped = d.groupby(["_series", "_row", "_col", "_x", "_rowbase"], sort=True, dropna=False)
    # (as drawn: a panel value of such rows that no row with an x value has means every panel;
    # a row label missing only through the rows prepare() split, the panels split from it)
    placed = d[d["_x"].notna()]
    panel_rows, panel_cols = set(placed["_row"]), set(placed["_col"])
    panel_bases = set(placed["_rowbase"])
    lines: dict[tuple[str, str], list[str]] = {}
    for (series, row, col, x, base), g in grouped:
        valid = int(g["_valid"].sum())
        if valid == len(g):
            continue
        bad = g[~g["_valid"]]
        reasons = []
        for status, value in zip(bad["_status"], bad["_value"], strict=True):
            if status != "ok":
                reasons.append(status)
            elif np.isnan(value):
                reasons.append("NaN" if metric != "tflops" else "not timed")
            elif np.isinf(value):
                reasons.append("Inf")
            elif value == 0:
                reasons.append("0 (exact)" if metric in ERROR_METRICS else "0")
            else:
                reasons.append("negative")
        why = "/".join(dict.fromkeys(reasons))
        if valid:
            why = f"{len(bad)} of {len(g)} repeats {why}"
        x = float(str(x))
        if math.isnan(x) and len(placed):  # drawn in every panel of a value not placed
            row = row if row in panel_rows else (base if base in panel_bases else "")
            col = col if col in panel_cols else ""
        key = (_who(series, row, col), why)
        lines.setdefault(key, []).append("" if math.isnan(x) else str(int(x)))
    out = []
    for (who, why), xs in lines.items():
        at = [x for x in xs if x]
        where = [f"at {xname} = {', '.join(at)}"] if at else []
        if len(at) < len(xs):
            where.append(f"without a {xname} value")
        out.append(_of(who, f"{why} {' and '.join(where)}"))
    return cap_notes(out, " (see the summary table)")


#: Environment variables that set the thread count of numpy's BLAS (OpenBLAS, in its order
#: of precedence); ``precision run`` records them in provenance.json (``blas_threads_env``).
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


#: The note under TFLOP/s figures of numpy BLAS timings not recorded as single-threaded
#: (:func:`timing_notes`).
BLAS_NOTE = (
    "numpy's multithreaded BLAS stalls on a loaded machine: time it with OPENBLAS_NUM_THREADS=1"
)


def read_runs(results_dir: Path) -> list[dict]:
    """The run records of ``results_dir/provenance.json``, one per ``precision run``, oldest
    first ([] when the file is missing or unreadable:
    :meth:`~precision.runner.store.ResultsDir.read_provenance`)."""
    results_dir = Path(results_dir)
    runs, _ = ResultsDir(results_dir.parent, results_dir.name).read_provenance()
    return [run for run in runs if isinstance(run, dict)]


def run_concurrency(run: dict) -> tuple[int | None, int, str]:
    """How many points the run of provenance record ``run`` computed at once (None: unknown,
    workers of a ``--scheduler`` cluster), how many of them were CPU workers beside the GPU
    workers of ``--gpus``, and the options that asked for it. Taken from the record's
    ``concurrent_jobs`` where recorded, else from its ``executor``, ``jobs`` and ``gpus``
    (Dask's local cluster defaults to one worker per core)."""
    from precision.runner.cluster import concurrent_points

    executor, scheduler = run.get("executor", "local"), run.get("scheduler")
    jobs = run.get("jobs") if isinstance(run.get("jobs"), int) else None
    gpus = run.get("gpus") if isinstance(run.get("gpus"), list) else None
    if scheduler and executor != "local":
        return None, 0, f"--scheduler {scheduler}"
    recorded = run.get("concurrent_jobs")
    cores = run.get("cpu_count") if isinstance(run.get("cpu_count"), int) else None
    n = (
        recorded
        if isinstance(recorded, int)
        else concurrent_points(executor, jobs, scheduler, gpus, cores=cores)
    )
    if executor == "local":
        return n, 0, f"--jobs {jobs or 1}"
    if gpus:
        cpu = jobs or 0
        return n, cpu, f"--gpus: {len(gpus)} GPU and {cpu} CPU workers"
    return n, 0, f"--executor dask, {n or 'one per core'} workers"


def _single_blas_thread(run: dict | None) -> bool:
    """True when the run of ``run`` is recorded to have given numpy's BLAS one thread."""
    if run is None:
        return False
    if run.get("cpu_count") == 1:
        return True
    env = run.get("blas_threads_env")
    if run.get("executor", "local") != "local" or not isinstance(env, dict):
        return False  # Dask workers set their own (see precision.runner.cluster)
    value = next((env[v] for v in BLAS_THREAD_VARS if env.get(v) not in (None, "")), None)
    return str(value).strip() == "1"


def _runs_of(table: pd.DataFrame, runs: list[dict]) -> list[dict | None]:
    """The run record that computed each row: the latest run that started (``created_utc``)
    no later than the row was made (None where a time is missing or unreadable)."""
    starts = pd.to_datetime(
        pd.Series([r.get("created_utc") for r in runs], dtype=object), utc=True, errors="coerce"
    )
    known = [(t, r) for t, r in zip(starts, runs, strict=True) if not pd.isna(t)]
    if not known or "created_utc" not in table:
        return [None] * len(table)
    known.sort(key=lambda tr: tr[0])
    times = np.array([t.value for t, _ in known])
    made = pd.to_datetime(table["created_utc"], utc=True, errors="coerce")
    out: list[dict | None] = []
    for t in made:
        if pd.isna(t):
            out.append(None)
            continue
        i = int(np.searchsorted(times, t.value, side="right")) - 1
        out.append(known[max(i, 0)][1])  # made before every recorded start: the first run
    return out


def timing_notes(table: pd.DataFrame, runs: list[dict] | None = None) -> list[str]:
    """Notes for TFLOP/s figures and tables, from the rows with a TFLOP/s value and the
    ``precision run`` records ``runs`` (:func:`read_runs`; None: unknown) that computed them:

    - rows timed while the run computed several points at once (``--jobs N``, several Dask
      workers; the GPU rows of ``--gpus`` only when CPU workers ran beside them, as each GPU
      times one GEMM at a time): their speeds are not one job's;
    - rows of numpy's BLAS (its matmul, the Ozaki emulation's integer GEMMs), timed by the
      wall clock, unless their runs recorded one BLAS thread: a multithreaded OpenBLAS
      stalls for milliseconds per call while another process holds a core (measured: 24 ms
      for a 0.05 ms SGEMM at n = 128 on 2 cores), far below its speed on an idle machine.
    """
    if "tflops" not in table:
        return []
    values = pd.to_numeric(table["tflops"], errors="coerce")
    ok = table["status"] == "ok" if "status" in table else pd.Series(True, index=table.index)
    timed = table[ok & np.isfinite(values) & (values > 0)]
    if timed.empty:
        return []
    gpu = timed["backend"].isin(["cuda", "cublas"])
    if "timing" in timed:
        gpu = timed["timing"].eq("cuda_events") | (timed["timing"].isna() & gpu)
    made_by = _runs_of(timed, runs) if runs else [None] * len(timed)
    notes = []
    shared: list[tuple[int, str]] = []
    for run, on_gpu in zip(made_by, gpu, strict=True):
        if run is None:
            continue
        n, cpu_workers, how = run_concurrency(run)
        if on_gpu and run.get("gpus"):
            if cpu_workers:
                shared.append((n or 0, how))
        elif n is not None and n > 1:
            shared.append((n, how))
    if shared:
        n, how = max(shared)
        share = "" if len(shared) == len(timed) else f" ({len(shared)} of {len(timed)} rows)"
        notes.append(
            f"timed with up to {n} points computed at once ({how}){share}: not one job's speed; "
            "time with one job (--force)"
        )
    blas = timed["backend"].eq("numpy") & ~gpu
    if "terms_requested" in timed:
        blas |= timed["backend"].eq("emulator") & timed["terms_requested"].notna() & ~gpu
    if any(b and not _single_blas_thread(r) for b, r in zip(blas, made_by, strict=True)):
        notes.append(BLAS_NOTE)
    return notes


def _fits(baseline: tuple[str, tuple], row: tuple[str, tuple]) -> bool:
    """Whether a baseline with panel-row key ``baseline`` belongs in panel row ``row``: the
    same label before prepare()'s split, and each split value either the row's or none ("":
    a dimension its series names, or one it lacks)."""
    (base_b, split_b), (base_r, split_r) = baseline, row
    return base_b == base_r and all(b in ("", r) for b, r in zip(split_b, split_r, strict=True))


@dataclass
class _Panels:
    """Which rows of a :func:`prepare` frame each panel of the figure draws.

    ``lines``: the rows with an x value, drawn as lines in the panel of their ``_row`` and
    ``_col``. A baseline whose panel row holds no method (prepare() split the methods by a
    dimension that the baseline's series names, say its backend, or that it lacks, say an
    Ozaki target) is drawn instead in every panel row it fits (:func:`_fits`), next to the
    methods it is the reference of; ``targets`` maps its row label to those panel rows.

    ``levels``: the rows without an x value (baselines on an Ozaki ``terms`` axis), drawn as
    horizontal lines at their median, likewise in every panel row they fit, and in every
    panel (``"*"``) where no panel row or column has their value (the baseline's own method,
    say)."""

    lines: pd.DataFrame
    levels: pd.DataFrame
    rows: list[str]
    cols: list[str]
    targets: dict[str, set[str]]  # row label of a moved baseline -> the panel rows it joins

    @classmethod
    def of(cls, data: pd.DataFrame) -> _Panels:
        xless_mask = data["_x"].isna()
        if xless_mask.all():  # no x at all: every row is a line
            xless_mask = pd.Series(False, index=data.index)
        d, xless = data[~xless_mask], data[xless_mask].copy()
        labels = zip(data["_row"], data["_rowbase"], data["_split"], strict=True)
        keys = {row: (base, split) for row, base, split in labels}
        method_rows = set(d.loc[~d["_baseline"], "_row"])
        targets = {
            label: {r for r in method_rows if _fits(keys[label], keys[r])}
            for label in set(d.loc[d["_baseline"], "_row"]) - method_rows
        }
        targets = {label: rows for label, rows in targets.items() if rows}
        rows = _ordered(r for r in d["_row"] if r not in targets)
        for label in set(xless["_row"]) - set(rows):
            targets[label] = {r for r in rows if _fits(keys[label], keys[r])}
        placed = [label in rows or bool(targets.get(label)) for label in xless["_row"]]
        xless["_row"] = xless["_row"].where(pd.Series(placed, index=xless.index, dtype=bool), "*")
        xless["_col"] = xless["_col"].where(xless["_col"].isin(set(d["_col"])), "*")
        return cls(d, xless, rows, _ordered(d["_col"]), targets)

    def _in_row(self, labels: pd.Series, row: str) -> pd.Series:
        """Mask of ``labels`` (row labels) drawn in panel row ``row``."""
        joined = [label == row or row in self.targets.get(label, ()) for label in labels]
        return pd.Series(joined, index=labels.index, dtype=bool)

    def lines_in(self, row: str, col: str) -> pd.Series:
        """Mask of the ``lines`` drawn in panel ``row``, ``col``."""
        return self._in_row(self.lines["_row"], row) & (self.lines["_col"] == col)

    def levels_in(self, row: str, col: str) -> pd.Series:
        """Mask of the ``levels`` drawn in panel ``row``, ``col``."""
        x = self.levels
        here = self._in_row(x["_row"], row) | (x["_row"] == "*")
        return here & x["_col"].isin([col, "*"])


def draw_figure(frame: _Frame, metric: str, spec: PlotSpec, title: str) -> Any:
    """The matplotlib Figure of ``metric`` (see the module docstring); the caller closes it."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator, LogFormatterSciNotation, LogLocator, NullFormatter

    plt, sns = _setup()
    panels = _Panels.of(frame.data)  # which rows each panel draws, as lines or levels
    d, xless, rows, cols = panels.lines, panels.levels, panels.rows, panels.cols
    targets = [t for t in UNIT_ROUNDOFFS if t in set(frame.data["_target"])]
    nrows, ncols = len(rows), len(cols)
    # Under the figure: the rows split and repeats that chose different term counts, then
    # the points not shown.
    blocks = [
        (head, lines)
        for head, lines in (
            ("Notes:", frame.caveats + cap_notes(frame.split_notes + frame.terms_notes)),
            ("Not shown (no finite positive value):", _missing_notes(frame, metric)),
        )
        if lines
    ]
    hue_vals = _ordered(d.loc[~d["_baseline"], "_hue"])
    style_vals = _ordered(d.loc[~d["_baseline"], "_style"])
    palette = dict(zip(hue_vals, sns.color_palette("colorblind", len(hue_vals)), strict=True))
    marker = {s: MARKERS[i % len(MARKERS)] for i, s in enumerate(style_vals)}
    dash = {s: DASHES[i % len(DASHES)] for i, s in enumerate(style_vals)}
    base_names = [key for kind, key in frame.series if kind == "baseline"]
    base_style = {b: BASELINE_STYLES[i % len(BASELINE_STYLES)] for i, b in enumerate(base_names)}

    # Horizontal dodge (log10 units; x units on the linear `terms` axis): the series spread
    # over at most `dodge` of the smallest x gap, neighbours at most a fifth of that apart.
    # Series drawn only as horizontal levels (no x value) take no share of the spread.
    xs = sorted(d["_x"].unique())
    linear_x = frame.x == "terms"  # counts: error falls geometrically, a line on a linear axis
    if linear_x:
        gap = float(np.diff(xs).min()) if len(xs) > 1 else 1.0
    else:
        gap = float(np.diff(np.log10(xs)).min()) if len(xs) > 1 else 0.3
    placed = [key for _, key in frame.series if key in set(d["_series"])]
    n_series = len(placed)
    budget = spec.dodge * gap
    step = min(budget / (n_series - 1), budget / 5) if n_series > 1 else 0.0
    spread = step * (n_series - 1)
    offset = {key: step * i - spread / 2 for i, key in enumerate(placed)}

    def dodged(x: Any, key: str) -> Any:
        """The x positions of series ``key``: ``x`` moved by its dodge offset."""
        return x + offset[key] if linear_x else x * 10.0 ** offset[key]

    # A terms axis is per panel column (slices of scheme I and moduli of scheme II are not
    # one scale), each column as wide as its labels need; size axes are shared.
    col_xs = {col: sorted(d.loc[d["_col"] == col, "_x"].unique()) for col in cols}
    col_w = [_term_panel_width(col_xs[col]) if linear_x else PANEL_W for col in cols]

    # Legend sections: (title, [(handle, label), ...]).
    sections: list[tuple[str, list[tuple[Any, str]]]] = []
    if spec.hue != "none" and hue_vals and any(k == "method" for k, _ in frame.series):
        sections.append(
            (spec.hue, [(Line2D([], [], color=palette[h], lw=1.6), h) for h in hue_vals])
        )
    if spec.style != "none" and style_vals and any(k == "method" for k, _ in frame.series):
        color = "0.3" if spec.hue != "none" else palette.get("", "0.3")
        sections.append(
            (
                spec.style,
                [
                    (Line2D([], [], color=color, ls=dash[s], marker=marker[s], ms=4, lw=1), s)
                    for s in style_vals
                ],
            )
        )
    reference: list[tuple[Any, str]] = []
    level_only = set(xless["_series"]) - set(d["_series"])  # drawn as horizontal lines only
    for b in base_names:
        if b in level_only:
            handle = Line2D([], [], color="0.3", ls=XLESS_DASH, lw=1.0)
            reference.append((handle, f"{b} (colour: {spec.hue})"))
            continue
        b_color, b_dash, b_marker = base_style[b]
        handle = Line2D([], [], color=b_color, ls=b_dash, marker=b_marker, ms=5, lw=1.2)
        reference.append((handle, b))
    if metric in ERROR_METRICS:
        for t in targets:
            ref_handle = Line2D([], [], color="0.35", ls=ROUNDOFF_DASHES[t], lw=0.9)
            reference.append((ref_handle, f"{t} unit roundoff $u = {UNIT_ROUNDOFFS[t][1]}$"))
    if reference:
        sections.append(("baselines" if base_names else "reference", reference))

    def build(layout: list[list[tuple[str, list[tuple[Any, str]]]]]) -> tuple[Any, Any]:
        """The figure with the legend sections stacked into ``layout``'s columns."""
        legend_rows = max((sum(len(items) + 1 for _, items in col) for col in layout), default=0)
        legend_h = 0.16 * legend_rows + 0.1 if legend_rows else 0.0
        note_lines = sum(1 + len(n) // 70 for _, lines in blocks for n in lines)
        note_h = 0.13 * (note_lines + len(blocks)) + 0.05 if blocks else 0.0
        title_h = 0.25 if title else 0.0
        if spec.size is not None:
            width, height = spec.size
        else:
            width = 0.55 + sum(col_w)
            height = PANEL_H * nrows + 0.35 + legend_h + note_h + title_h
        fig = plt.figure(figsize=(width, height), dpi=spec.dpi, layout="constrained")
        # The panels keep a share of a given size too small for the legend and notes (they
        # then overlap, as matplotlib warns; without one the panels would be dropped).
        parts = [max(height - legend_h - note_h, MIN_PANEL_SHARE * height), legend_h, note_h]
        keep = [h > 0 for h in parts]
        subfigs = fig.subfigures(
            sum(keep), 1, height_ratios=[h for h in parts if h > 0], squeeze=False
        )
        sub_iter = iter(subfigs[:, 0])
        top = next(sub_iter)
        legend_fig = next(sub_iter) if keep[1] else None
        note_fig = next(sub_iter) if keep[2] else None
        axes = top.subplots(nrows, ncols, squeeze=False, gridspec_kw={"width_ratios": col_w})
        if title:
            top.suptitle(title, fontsize="medium")

        present = [[bool(panels.lines_in(row, col).any()) for col in cols] for row in rows]
        first_col = [next((c for c in range(ncols) if present[r][c]), 0) for r in range(nrows)]
        groups: dict[Any, list[Any]] = {}
        for r, row in enumerate(rows):
            for c, col in enumerate(cols):
                ax = axes[r, c]
                panel = d[panels.lines_in(row, col)]
                if panel.empty:
                    ax.set_visible(False)
                    continue
                for kind, key in frame.series:
                    sel = panel[(panel["_series"] == key) & panel["_valid"]]
                    if sel.empty:
                        continue
                    if kind == "baseline":
                        color, ls, mk = base_style[key]
                        ms, lw, z = 6, 1.2, 3
                    else:
                        h, s = key.split(SERIES_SEP)
                        color = palette[h] if spec.hue != "none" else "C0"
                        ls, mk = dash[s], marker[s]
                        ms, lw, z = 4, 1.1, 2
                    med = sel.groupby("_x")["_value"].median().sort_index()
                    ax.scatter(
                        dodged(sel["_x"], key), sel["_value"], s=5, color=color, alpha=0.3,
                        linewidths=0, zorder=1,
                    )  # fmt: skip
                    ax.plot(
                        dodged(med.index, key), med.values, color=color, ls=ls, marker=mk, ms=ms,
                        lw=lw, mec="white" if mk not in "x+1" else color, mew=0.5, zorder=z,
                    )  # fmt: skip
                lines = xless[panels.levels_in(row, col) & xless["_valid"]]
                for (b_key, b_hue), g in lines.groupby(["_series", "_hue"], sort=True):
                    b_color = base_style.get(str(b_key), ("black", "-", ""))[0]
                    ax.axhline(
                        float(g["_value"].median()), color=palette.get(str(b_hue), b_color),
                        ls=XLESS_DASH,
                        lw=1.0, alpha=0.85, zorder=1,
                    )  # fmt: skip
                if metric in ERROR_METRICS:
                    for t in targets:
                        u = UNIT_ROUNDOFFS[t][0]
                        ax.axhline(u, color="0.35", ls=ROUNDOFF_DASHES[t], lw=0.9, zorder=0)
                if col and (r == 0 or not present[r - 1][c]):
                    ax.set_title(col, fontsize="small")
                if row and (c == ncols - 1 or not any(present[r][c + 1 :])):
                    ax.annotate(
                        textwrap.fill(row, 30), xy=(1.03, 0.5), xycoords="axes fraction",
                        rotation=270, ha="left", va="center", fontsize="small",
                    )  # fmt: skip
                share = panel["_device"].iloc[0] if spec.sharey else (r, c)
                groups.setdefault(share, []).append((ax, panel))

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

        # Per column: major ticks, their labels, minor ticks, x limits.
        ticks: list[tuple[list[float], list[str], list[float], tuple[float, float]]] = []
        if not linear_x:  # one shared size axis
            major, labels, minor = _x_ticks(xs)
            factor = 10.0 ** (spread / 2 + 0.08)
        for c, col in enumerate(cols):
            if linear_x:
                panel_w = (width - 0.55) * col_w[c] / sum(col_w)
                major, labels = _term_ticks(col_xs[col], panel_w)
                pad = spread / 2 + 0.5  # half a term beyond the outermost markers
                lims = (col_xs[col][0] - pad, col_xs[col][-1] + pad)
                ticks.append((major, labels, [], lims))
            else:
                ticks.append((major, labels, minor, (xs[0] / factor, xs[-1] * factor)))
        for r in range(nrows):
            for c in range(ncols):
                ax = axes[r, c]
                if not ax.get_visible():
                    continue
                major, labels, minor, lims = ticks[c]
                if not linear_x:
                    ax.set_xscale("log", base=2)
                ax.set_xlim(*lims)
                ax.set_xticks(major, labels)
                ax.xaxis.set_minor_locator(FixedLocator(minor))
                ax.xaxis.set_minor_formatter(NullFormatter())
                below = any(present[r2][c] for r2 in range(r + 1, nrows))
                ax.set_xlabel("" if below else frame.x_label)
                if below:
                    ax.tick_params(labelbottom=False)
                ax.set_ylabel(METRIC_LABELS[metric] if c == first_col[r] else "")
                if spec.sharey and c > first_col[r]:
                    ax.tick_params(labelleft=False)

        legend = None
        if legend_fig is not None and layout:
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
                fontsize="small", handlelength=2.8, columnspacing=1.4, borderaxespad=0.0,
            )  # fmt: skip
            for i, text in enumerate(legend.get_texts()):
                if i in bold:
                    text.set_fontweight("bold")
        if note_fig is not None:
            chars = max(40, int(width * 72 / 3.4))  # x-small text: about 3.4 pt per character
            text = "\n".join(
                "\n".join(
                    [head] + [textwrap.fill(n, chars, subsequent_indent="    ") for n in lines]
                )
                for head, lines in blocks
            )
            note_fig.text(0.02, 0.5, text, ha="left", va="center", fontsize="x-small", color="0.2")

        return fig, legend

    # As many legend columns as fit the figure's width (sections stacked otherwise).
    for n_cols in range(len(sections), 0, -1):
        layout: list[list[tuple[str, list[tuple[Any, str]]]]] = [[] for _ in range(n_cols)]
        for section in sections:  # each section to the shortest column so far
            heights = [sum(len(items) + 1 for _, items in col) for col in layout]
            layout[heights.index(min(heights))].append(section)
        fig, legend = build(layout)
        if legend is None or n_cols == 1:
            return fig
        fig.canvas.draw()
        if legend.get_window_extent().width <= fig.bbox.width * 0.98:
            return fig
        plt.close(fig)
    return build([])[0]


def missing_tex(formats: Iterable[str]) -> str | None:
    """Why ``formats`` cannot be written here (pgf needs matplotlib's TeX system), else None."""
    if "pgf" not in formats:
        return None
    import shutil

    import matplotlib

    tex = matplotlib.rcParams["pgf.texsystem"]
    if shutil.which(tex) is None:
        return f"format 'pgf' needs {tex} on the PATH (matplotlib's pgf.texsystem)"
    return None


def check_formats(formats: Iterable[str]) -> None:
    """Raise ValueError when one of ``formats`` cannot be written on this machine."""
    reason = missing_tex(formats)
    if reason:
        raise ValueError(reason)


def _write_bytes(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def check_writable(out_dir: Path) -> None:
    """Create ``out_dir``; raise :class:`~precision.runner.store.StoreError` naming it when it
    cannot be created or written (read-only file system, permissions, a file of that name)."""
    import errno
    import os

    from precision.runner.store import NOT_WRITABLE, os_error_reason

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        writable = os.access(out_dir, os.W_OK | os.X_OK)
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOTDIR):
            why = "a file of that name (or of a folder above it) is in the way"
        else:
            why = os_error_reason(exc)
        raise StoreError(f"cannot write to {out_dir}: {why}") from None
    if not writable:
        raise StoreError(f"cannot write to {out_dir}: {NOT_WRITABLE}")


def plot_results(
    table: pd.DataFrame,
    out_dir: Path,
    title: str = "",
    spec: PlotSpec | None = None,
    *,
    prefix: str = "",
    notes: list[str] | None = None,
    runs: list[dict] | None = None,
) -> list[Path]:
    """Write the figures of ``spec`` (default: error and, when timed, TFLOP/s) and the summary
    tables into ``out_dir`` as ``<prefix><metric>.<format>`` and ``<prefix>summary.*`` (which
    keep the tables of the metrics summarised there before:
    :func:`~precision.runner.summary.write_summary`). ``runs`` are the records of the runs
    that computed ``table`` (:func:`read_runs`): the TFLOP/s figure and table say when their
    timings shared the machine (:func:`timing_notes`).

    Returns the files written. A metric without a single drawable value is skipped; when it
    was asked for explicitly, ``notes`` (if given) receives a line saying so. Every file is
    written atomically (:func:`~precision.runner.store.atomic_write`); a directory or file
    that cannot be written raises :class:`~precision.runner.store.StoreError` naming it,
    leaving the files already there as they were.
    """
    from precision.runner.summary import write_summary

    spec = spec or PlotSpec()
    heading = spec.title if spec.title is not None else title
    if table.empty:
        return []
    formats = spec.formats
    reason = missing_tex(formats)
    if reason:  # after a run: write the other formats rather than fail
        formats = tuple(f for f in formats if f != "pgf")
        if notes is not None:
            notes.append(f"pgf skipped: {reason}")
    paths: list[Path] = []
    check_writable(out_dir)  # before drawing anything
    for metric in spec.metrics:
        if metric not in table:  # a table written without it (another tool, a hand-made one)
            if spec.explicit_metrics and notes is not None:
                notes.append(f"no {metric} figure: the results have no {metric} column")
            continue
        values = pd.to_numeric(table[metric], errors="coerce")
        ok = table["status"] == "ok" if "status" in table else True
        if not ((values > 0) & np.isfinite(values) & ok).any():
            if spec.explicit_metrics and notes is not None:
                notes.append(f"no {metric} figure: no row has a finite positive {metric}")
            continue
        frame = prepare(table, spec, metric)
        if metric == "tflops":
            frame.caveats += timing_notes(table, runs)
        files = [out_dir / f"{prefix}{metric}.{ext}" for ext in formats]
        plt, _ = _setup()
        fig = draw_figure(frame, metric, spec, heading)
        try:
            # Drawn into memory, then written atomically: a full disk or a killed process
            # leaves the earlier file of that name, never a truncated one.
            images: dict[Path, bytes] = {}
            for path, ext in zip(files, formats, strict=True):
                buffer = io.BytesIO()
                fig.savefig(buffer, format=ext, dpi=spec.dpi)
                images[path] = buffer.getvalue()
        finally:
            plt.close(fig)
        for path, data in images.items():
            atomic_write(path, functools.partial(_write_bytes, data=data))
        paths += files
    if table["status"].eq("ok").any() if "status" in table else True:
        paths += write_summary(table, out_dir, spec, prefix=prefix, runs=runs)
    return paths
