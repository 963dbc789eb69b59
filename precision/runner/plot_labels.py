"""The text of figures and their notes: how metrics, x axes, distributions and the values of
each plot dimension (:data:`~precision.runner.figures.DIMENSIONS`) are labelled, how numbers
are written (a real minus sign), in which order labels are listed (embedded integers
numerically), and how a note names a series in a panel. Display only: nothing here changes a
table; :mod:`~precision.runner.plot_frame` builds the figure's columns from these labels, and
:mod:`~precision.runner.summary` shows the same ones in its tables.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd

from precision.runner.sweep import number_label

METRIC_LABELS = {
    "err_fro": "relative error (Frobenius)",
    "err_max": "max. relative elementwise error",
    "err_median": "median relative elementwise error",
    "err_comp": "max. componentwise error |C − C_exact| / (|A|·|B|)",
    "tflops": "TFLOP/s (2mnk / median time)",
    "identical_bits": "fraction of outputs bit-identical to compare_backend",
}
ERROR_METRICS = ("err_fro", "err_max", "err_median", "err_comp")
#: Metrics drawn on a linear axis from 0 to 1, where 0 is a value like any other (the others
#: are drawn on log axes, which cannot show 0).
FRACTION_METRICS = ("identical_bits",)


def drawable(values: pd.Series, metric: str) -> pd.Series:
    """Which ``values`` of ``metric`` a figure can draw: finite, and positive on a log axis
    (at least 0 for :data:`FRACTION_METRICS`)."""
    finite = np.isfinite(values)
    return finite & (values >= 0) if metric in FRACTION_METRICS else finite & (values > 0)


def over_repeats(metric: str) -> str:
    """How the repeats of a point are summed up in figures and summary tables: their median;
    for :data:`FRACTION_METRICS` their least value (a point is bit-identical only if every
    repeat is)."""
    return "least over repeats" if metric in FRACTION_METRICS else "median over repeats"


def repeats_statistic(metric: str) -> str:
    """The pandas aggregation of :func:`over_repeats`: ``"min"`` or ``"median"``."""
    return "min" if metric in FRACTION_METRICS else "median"


def median_of_all(values: pd.Series) -> float:
    """Median of every value (NaN if any is NaN or there are none)."""
    arr = values.to_numpy(dtype=float)
    return float(np.median(arr)) if arr.size and not np.isnan(arr).any() else float("nan")


def least_of_all(values: pd.Series) -> float:
    """Least of every value (NaN if any is NaN or there are none)."""
    arr = values.to_numpy(dtype=float)
    return float(arr.min()) if arr.size and not np.isnan(arr).any() else float("nan")


def all_repeats_statistic(metric: str) -> Callable[[pd.Series], float]:
    """:func:`over_repeats` of every repeat of a point, NaN where one has no value: the
    statistic summary tables give, and figures draw (:func:`least_of_all` or
    :func:`median_of_all`)."""
    return least_of_all if metric in FRACTION_METRICS else median_of_all


def drawable_words(metric: str) -> str:
    """What a value of ``metric`` must be to be drawn (:func:`drawable`), in words."""
    return "finite" if metric in FRACTION_METRICS else "finite positive"


#: Joins the hue and style values of a method's series key (and the identity columns of a
#: point's key). Not NUL: pandas 3.0's factorize (under groupby) cuts object strings at a NUL,
#: which merged every series of one hue, whatever its style; numpy's and pandas' vectorised
#: string operations drop a trailing NUL too.
SERIES_SEP = "\x1f"

X_LABELS = {
    "size": "size m = n = k",
    "k": "k (inner dimension)",
    "m": "m (rows of A and C)",
    "n": "n (columns of B and C)",
    "terms": "terms (slices I / moduli II)",
}


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
            return "" if value is None else f"φ = {number_label(value)}"

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
    """``value`` as figures show it (:func:`~precision.runner.sweep.number_label`: ``:g``
    unless that loses the value) with a real minus sign (−1, not -1)."""
    return number_label(value).replace("-", MINUS)


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
