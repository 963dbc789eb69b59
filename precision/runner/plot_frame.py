"""The figure's data: a results table turned into the rows each figure draws.
:func:`check_table` says which options a table cannot show and :func:`choose_x` picks the x
axis; :func:`prepare` then gives every row its x value, hue, style, panel column and row,
series, device class (TFLOP/s panels) and value, as a :class:`_Frame`. No drawn cell pools
distinct points: an identity dimension (:data:`SPLIT_DIMENSIONS`) that varies within one
becomes rows of panels, with a note (:func:`_split_rows`); repeats of one point that chose
different term counts stay one point, with a note too (:func:`_terms_notes`). :class:`_Panels`
says which rows each panel of the figure draws, including the fp32/fp64 baselines that join
the panel rows of the methods they fit (:func:`_fits`). Drawing is
:mod:`~precision.runner.plot_draw`'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from precision.runner.figures import PlotSpec
from precision.runner.plot_labels import (
    SERIES_SEP,
    X_LABELS,
    _and,
    _dim_title,
    _dimension,
    _of,
    _ordered,
    _who,
    drawable,
)
from precision.runner.plot_notes import ERR_MAX_NOTE

#: fp32's unit roundoff: the relative error bound of one round-to-nearest into fp32.
FP32_UNIT_ROUNDOFF = 2.0**-24
#: Unit roundoff 2^-p of each result format: error figures draw one grey line per result
#: format present (``target`` of the Ozaki methods, fp64 for the fp64 baselines, else fp32).
UNIT_ROUNDOFFS = {"fp32": (FP32_UNIT_ROUNDOFF, "2^{-24}"), "fp64": (2.0**-53, "2^{-53}")}
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
    dims_ok: list[str] | None = None  # (listed only where a key needs them)
    for key in ("hue", "style", "col", "row"):
        why = _empty_dimension(table, getattr(spec, key))
        if why:
            if dims_ok is None:
                dims_ok = [d for d in DIMENSIONS if not _empty_dimension(table, d)]
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


def constant_shape_note(table: pd.DataFrame, x: str, x_label: str, shown: tuple[str, ...]) -> str:
    """The shape dimensions (m, n, k) that have one value in every row and that neither the
    x axis (its label: "m = n = k") nor a panel, colour or style shows, as one note:
    "m = n = 64 in every point" (dimensions of equal value joined); "" when there are none."""
    if x == "size" or table.empty:
        return ""
    on_axis = set(x_label.split(" = ")) if " = " in x_label else {x}
    constant = {
        d: int(table[d].iloc[0])
        for d in ("m", "n", "k")
        if d in table and d not in on_axis and d not in shown and table[d].nunique() == 1
    }
    by_value: dict[int, list[str]] = {}
    for d, value in constant.items():
        by_value.setdefault(value, []).append(d)
    parts = [" = ".join(dims) + f" = {value}" for value, dims in by_value.items()]
    return f"{', '.join(parts)} in every point" if parts else ""


@dataclass
class _Frame:
    """A results table with the plot's columns: _x, _hue, _style, _col, _row, _series...

    ``split`` names the identity dimensions added to the panel rows because they vary within
    a drawn cell (:func:`prepare`) and ``split_notes`` says why, one line each;
    ``terms_notes`` names the points whose repeats chose different term counts. Both are
    shown (together at most :data:`~precision.runner.plot_notes.MAX_NOTE_LINES` lines,
    :func:`~precision.runner.plot_notes.cap_notes`) under the figure and in summary.md,
    before the points not shown, after ``caveats``: what the metric or its measurement needs
    said (:data:`~precision.runner.plot_notes.ERR_MAX_NOTE`,
    :func:`~precision.runner.plot_notes.timing_notes`), never capped."""

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


def _x_keys(d: pd.DataFrame) -> pd.Series:
    """The x value of each row as text for a key ("" without one)."""
    return d["_x"].map(lambda v: "" if np.isnan(v) else repr(v))


def _cells(d: pd.DataFrame) -> pd.Series:
    """The drawn cell of each row: a series at one x in one panel, as one key; rows without
    an x value (drawn as one level per series and hue) by series, hue and panel."""
    x = _x_keys(d)
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
    d["_valid"] = d["_ok"] & drawable(d["_value"], metric)
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
    panels = tuple(dim for dim in (spec.col, spec.row) if dim != "none")
    split, split_notes = _split_rows(
        table, d, x, rest, terms_shown, by_colour_or_style, by_colour_or_style + panels
    )
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
    caveats = [note] if (note := constant_shape_note(table, x, x_label, shown)) else []
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
    shown: tuple[str, ...] = (),
) -> tuple[list[str], list[str]]:
    """Append to ``d["_row"]``, in :data:`SPLIT_DIMENSIONS` order, each identity dimension
    that varies within a drawn cell (:func:`_cells`, refined by those added before), or
    that no channel of the figure shows (``shown``: hue, style, col, row) and that tells
    apart series drawn together which the legend cannot (:func:`_untold_between_series`),
    and its value ("" where a row has none) to the tuple ``d["_split"]``; return their
    names and one note each: an example cell and its values. A dimension shown by colour or
    line style (``by_colour_or_style``) varies only within the baselines' series, which take
    neither; its note says so."""
    from precision.runner.figures import DIMENSIONS

    split: list[str] = []
    notes: list[str] = []
    for dim in SPLIT_DIMENSIONS:
        if dim in rest or (dim in ("m", "n", "k") and x == dim):
            continue
        values, labels = _split_values(table, dim, d["_baseline"], terms_shown)
        cells = _cells(d)
        counts = values.groupby(cells, sort=True).nunique()
        within = (counts > 1).any()
        if within:
            varying = cells.isin(counts.index[counts > 1])
            what = "varies within series"
        else:
            if dim in shown:
                continue
            varying = _untold_between_series(values, d)
            if not varying.any():
                continue
            cells = _drawn_together(d)
            what = "is shown by neither colour, line style nor panels, and tells series apart"
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
        who = _who(first["_series"] if within else "", first["_row"], first["_col"])
        where = f"{who} {at}" if who else at  # who: "" with hue and style "none", one panel
        drawn = values[d["_valid"].astype(bool)]
        if drawn[drawn != ""].nunique() > 1:  # (else the drawn rows show one value at most)
            notes.append(f"{dim} {what} ({where}: {found}): shown as panel rows{advice}")
        d["_row"] = _join_parts(d["_row"], labels)
        d["_split"] = pd.Series(
            [key + (v,) for key, v in zip(d["_split"], values, strict=True)],
            index=d.index,
            dtype=object,
        )
        split.append(dim)
    return split, notes


def _drawn_together(d: pd.DataFrame) -> pd.Series:
    """The methods' rows drawn at one x in one panel, as one key per row ("" for baselines,
    which the legend names by their own series)."""
    parts = zip(d["_row"], d["_col"], _x_keys(d), d["_baseline"], strict=True)
    keys = ["" if base else "\x01".join((r, c, v)) for r, c, v, base in parts]
    return pd.Series(keys, index=d.index, dtype=object)


def _untold_between_series(values: pd.Series, d: pd.DataFrame) -> pd.Series:
    """Mask of the methods' rows drawn at one x in one panel (:func:`_drawn_together`) where
    ``values`` (an identity dimension) differ, in panels where the legend cannot say which
    series has which value: neither the colour (``_hue``) nor the line style (``_style``)
    alone determines it. Ozaki scheme I and II drawn side by side, told apart only by the
    pairs of term count and target, say; a dimension that follows the colour (the
    distribution, where the colour is its φ) is told by the legend."""
    together = _drawn_together(d)
    methods = together != ""
    if not methods.any():
        return pd.Series(False, index=d.index)
    v, key = values[methods], together[methods]
    counts = v.groupby(key, sort=False).nunique()
    if not (counts > 1).any():
        return pd.Series(False, index=d.index)
    panel = d.loc[methods, "_row"] + "\x01" + d.loc[methods, "_col"]
    told = pd.Series(False, index=panel.unique())
    for channel in ("_hue", "_style"):
        per_value = v.groupby([panel, d.loc[methods, channel]], sort=False).nunique()
        told |= (per_value <= 1).groupby(level=0).all().reindex(told.index, fill_value=False)
    untold_panels = set(told.index[~told])
    varying = key.isin(counts.index[counts > 1]) & panel.isin(untold_panels)
    return varying.reindex(d.index, fill_value=False)


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


def _fits(baseline: tuple[str, tuple], row: tuple[str, tuple]) -> bool:
    """Whether a baseline with panel-row key ``baseline`` belongs in panel row ``row``: the
    same label before prepare()'s split, and each split value either the row's or none ("":
    a dimension its series names, or one it lacks)."""
    (base_b, split_b), (base_r, split_r) = baseline, row
    return base_b == base_r and all(b in ("", r) for b, r in zip(split_b, split_r, strict=True))


def _level_fits(baseline: tuple[str, tuple], row: tuple[str, tuple], split: Sequence[str]) -> bool:
    """Whether a baseline drawn as a level (no x value) with panel-row key ``baseline``
    belongs in panel row ``row`` where :func:`_fits` finds no row: each part of its label
    (``k = 128``) is one of the row's (which may have parts for dimensions the baseline has
    no value of, such as an Ozaki target), and each split value is the row's, none, or its
    method (which its series names). Without this, such a baseline was drawn in every panel
    at the median over all its rows, pooling sizes that the panel rows tell apart."""
    (base_b, split_b), (base_r, split_r) = baseline, row
    parts_b = {p for p in base_b.split(", ") if p}
    if not parts_b <= set(base_r.split(", ")):
        return False
    dims = list(split) if len(split) == len(split_b) else [""] * len(split_b)
    return all(
        b in ("", r) or dim == "method" for dim, b, r in zip(dims, split_b, split_r, strict=True)
    )


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
    def of(cls, data: pd.DataFrame, split: Sequence[str] = ()) -> _Panels:
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
            if not targets[label]:  # (its label lacks a dimension it has no value of)
                targets[label] = {r for r in rows if _level_fits(keys[label], keys[r], split)}
        placed = [label in rows or bool(targets.get(label)) for label in xless["_row"]]
        xless["_row"] = xless["_row"].where(pd.Series(placed, index=xless.index, dtype=bool), "*")
        xless["_col"] = xless["_col"].where(xless["_col"].isin(set(d["_col"])), "*")
        return cls(d, xless, rows, _ordered(d["_col"]), targets)

    def drawn_only(self) -> _Panels:
        """These panels less the panel rows and columns in which nothing has a value to draw
        (``_valid``: no line and no level), and ``lines`` less the rows without one, so that
        x values and series come from what is drawn. A panel kept for its baselines' levels
        alone (on a ``terms`` axis, methods all exact there) keeps its lines, for its x
        axis; where nothing at all has a value, the panels are returned as they are."""
        line_ok = self.lines["_valid"].astype(bool)
        level_ok = self.levels["_valid"].astype(bool)
        drawn = [
            (row, col)
            for row in self.rows
            for col in self.cols
            if (self.lines_in(row, col) & line_ok).any()
            or (self.levels_in(row, col) & level_ok).any()
        ]
        if not drawn:
            return self
        rows = [r for r in self.rows if any(r == row for row, _ in drawn)]
        cols = [c for c in self.cols if any(c == col for _, col in drawn)]
        kept = line_ok.copy()
        for row, col in drawn:
            here = self.lines_in(row, col)
            if not (here & line_ok).any():
                kept |= here
        return _Panels(self.lines[kept], self.levels, rows, cols, self.targets)

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
