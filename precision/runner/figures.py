"""What the figures of a results directory show: the ``[plot]`` table of a config and the
options of ``precision plot``, validated into one :class:`PlotSpec`.

The same keys are accepted in both places (a command-line option overrides the config)::

    [plot]
    metric = ["err_fro", "tflops"]   # err_fro, err_max, err_median, err_comp, tflops,
                                     # identical_bits
    x = "auto"                       # auto, size, m, n, k, terms (Ozaki slices/moduli)
    hue = "method"                   # colour:      one of DIMENSIONS, or "none"
    style = "format"                 # line style and marker
    col = "distribution"             # panel columns
    row = "none"                     # panel rows
    sharey = true                    # one y range for all panels (per device for tflops)
    size = [6.0, 3.2]                # width, height of the whole figure in inches
    format = ["png", "pdf"]          # png, pdf, svg, pgf
    dodge = 0.5                      # horizontal spread of the series (0 = none)
    dpi = 200                        # PNG resolution
    title = ""                       # default: the experiment name; "" for none

Validation problems are reported through the caller's ``fail(where, message)``, so the
messages name the file and key (``[plot] hue``) or the option (``--hue``) like the rest of
the config (:mod:`precision.runner.config`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

#: What a figure can show on its y axis.
#: ``identical_bits`` (a config with ``compare_backend``) is the fraction of bit-identical
#: outputs, drawn on a linear axis from 0 to 1.
METRICS: tuple[str, ...] = (
    "err_fro",
    "err_max",
    "err_median",
    "err_comp",
    "tflops",
    "identical_bits",
)
#: What the x axis can show: ``auto`` picks ``size`` for square shapes, else the varying one.
X_AXES: tuple[str, ...] = ("auto", "size", "m", "n", "k", "terms")
#: Columns that colour, line style and panels can show (``distribution`` is the label with
#: its parameters, ``method`` the method with its correction, ``shape`` is ``m×n×k``,
#: ``phi`` the exp_rand parameter, ``target``/``terms`` the Ozaki axes).
DIMENSIONS: tuple[str, ...] = (
    "method",
    "format",
    "backend",
    "arch",
    "distribution",
    "m",
    "n",
    "k",
    "shape",
    "phi",
    "target",
    "terms",
    "none",
)
FILE_FORMATS: tuple[str, ...] = ("png", "pdf", "svg", "pgf")
PLOT_KEYS: tuple[str, ...] = (
    "metric",
    "x",
    "hue",
    "style",
    "col",
    "row",
    "sharey",
    "size",
    "format",
    "dodge",
    "dpi",
    "title",
)

Fail = Callable[[str, str], NoReturn]


@dataclass(frozen=True)
class PlotSpec:
    """The figures to draw. ``size`` is the whole figure (legend included) in inches, None
    for a size derived from the number of panels; ``title`` None means the experiment name;
    ``dodge`` is the total horizontal spread of the series as a fraction of the smallest gap
    between neighbouring x values (log scale)."""

    metrics: tuple[str, ...] = ("err_fro", "tflops")
    x: str = "auto"
    hue: str = "method"
    style: str = "format"
    col: str = "distribution"
    row: str = "none"
    sharey: bool = True
    size: tuple[float, float] | None = None
    formats: tuple[str, ...] = ("png", "pdf")
    dodge: float = 0.5
    dpi: int = 200
    title: str | None = None

    #: True when ``metric`` was given explicitly (a requested metric with no data is reported).
    explicit_metrics: bool = False


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def _choice(value: Any, valid: tuple[str, ...], where: str, what: str, fail: Fail) -> str:
    if not isinstance(value, str):
        fail(where, f"expected a string ({what}: {', '.join(valid)}), got {_describe(value)}")
    if value not in valid:
        hint = difflib.get_close_matches(value, list(valid), n=1, cutoff=0.6)
        suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
        fail(where, f"unknown {what} {value!r}{suggestion} (valid: {', '.join(valid)})")
    return value


def _choices(value: Any, valid: tuple[str, ...], where: str, what: str, fail: Fail) -> tuple:
    items = value if isinstance(value, list | tuple) else [value]
    if not items:
        fail(where, f"expected a non-empty list of {what}s (valid: {', '.join(valid)}), got []")
    return tuple(dict.fromkeys(_choice(v, valid, where, what, fail) for v in items))


#: Largest figure side, in inches (posters stay well below), and in pixels at the chosen dpi
#: (16384^2 RGBA pixels are 1 GiB for the raster drawn to fit and save the figure).
MAX_SIZE_INCHES = 50.0
MAX_SIDE_PIXELS = 16384


def _number(value: Any, where: str, fail: Fail, minimum: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        fail(where, f"expected {what}, got {_describe(value)}")
    if not value >= minimum:  # also refuses NaN
        fail(where, f"expected {what}, got {value!r}")
    return float(value)


def parse_plot(raw: Any, fail: Fail, where: Callable[[str], str] | None = None) -> PlotSpec:
    """Validate a ``[plot]`` table (or the equivalent dict of command-line values).

    ``where(key)`` names a key in messages (default ``[plot] key``); ``fail(where, message)``
    raises the caller's error.
    """
    name = where or (lambda key: f"[plot] {key}")
    if not isinstance(raw, dict):
        fail("[plot]", f"expected a table, got {_describe(raw)}")
    for key in raw:
        if key not in PLOT_KEYS:
            hint = difflib.get_close_matches(str(key), list(PLOT_KEYS), n=1, cutoff=0.6)
            suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
            fail("[plot]", f"unknown key {key!r}{suggestion} (valid keys: {', '.join(PLOT_KEYS)})")
    spec: dict[str, Any] = {}
    if "metric" in raw:
        spec["metrics"] = _choices(raw["metric"], METRICS, name("metric"), "metric", fail)
        spec["explicit_metrics"] = True
    if "x" in raw:
        spec["x"] = _choice(raw["x"], X_AXES, name("x"), "x axis", fail)
    for key in ("hue", "style", "col", "row"):
        if key in raw:
            spec[key] = _choice(raw[key], DIMENSIONS, name(key), "dimension", fail)
    col, row = spec.get("col", PlotSpec.col), spec.get("row", PlotSpec.row)
    if col == row != "none":
        fail(name("row" if "row" in raw else "col"), f"col and row both show {col!r}")
    if "sharey" in raw:
        if not isinstance(raw["sharey"], bool):
            fail(name("sharey"), f"expected true or false, got {_describe(raw['sharey'])}")
        spec["sharey"] = raw["sharey"]
    if "size" in raw:
        size = raw["size"]
        if not isinstance(size, list | tuple) or len(size) != 2:
            fail(name("size"), f"expected [width, height] in inches, got {_describe(size)}")
        w, h = (_number(v, name("size"), fail, 0.5, "a size >= 0.5 inches") for v in size)
        if max(w, h) > MAX_SIZE_INCHES:  # a mistyped size ran matplotlib out of memory
            fail(
                name("size"),
                f"expected at most {MAX_SIZE_INCHES:g} inches a side, got {w:g} x {h:g}",
            )
        spec["size"] = (w, h)
    if "format" in raw:
        spec["formats"] = _choices(raw["format"], FILE_FORMATS, name("format"), "format", fail)
    if "dodge" in raw:
        dodge = _number(raw["dodge"], name("dodge"), fail, 0.0, "a number in [0, 1]")
        if dodge > 1:
            fail(name("dodge"), f"expected a number in [0, 1], got {raw['dodge']!r}")
        spec["dodge"] = dodge
    if "dpi" in raw:
        dpi = raw["dpi"]
        if isinstance(dpi, bool) or not isinstance(dpi, int) or not 50 <= dpi <= 1200:
            fail(name("dpi"), f"expected an integer in [50, 1200], got {_describe(dpi)}")
        spec["dpi"] = dpi
    if "size" in spec:
        dpi, (w, h) = spec.get("dpi", PlotSpec.dpi), spec["size"]
        if max(w, h) * dpi > MAX_SIDE_PIXELS:
            fail(
                name("size"),
                f"{w:g} x {h:g} inches at {dpi} dpi is {round(w * dpi)} x {round(h * dpi)} "
                f"pixels; at most {MAX_SIDE_PIXELS} a side (a smaller size or dpi)",
            )
    if "title" in raw:
        if not isinstance(raw["title"], str):
            fail(name("title"), f"expected a string, got {_describe(raw['title'])}")
        spec["title"] = raw["title"]
    return PlotSpec(**spec)


def plot_table_of(path: Path) -> dict:
    """The raw ``[plot]`` table of the config file at ``path`` ({} when it has none).

    Raises :class:`precision.runner.config.ConfigError` for an unreadable or invalid file.
    """
    import tomllib

    from precision.runner.config import ConfigError

    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config error in {path}: not valid TOML: {exc}") from None
    table = raw.get("plot", {})
    if not isinstance(table, dict):
        raise ConfigError(f"config error in {path}: [plot]: expected a table, got {table!r}")
    return table
