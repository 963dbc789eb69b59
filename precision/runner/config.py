"""Experiment configs: read a TOML file, validate every key and value, build a typed config.

Validation happens before any work. The first problem found raises :class:`ConfigError`, whose
message names the file, the key (as a TOML path such as ``[sweep] size``) and what was
expected, and suggests the nearest valid key or value. See ``docs/runner.md`` for the format.
"""

from __future__ import annotations

import itertools
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from precision.runner.catalog import (
    TERMS_METHODS,
    Catalog,
    combination_problem,
    load_catalog,
)
from precision.runner.figures import PlotSpec, parse_plot

#: ``exact``: A·B exact, rounded once to fp64; ``exact_dd``: the exact A·B as a double-double
#: (that rounding plus the rounded remainder), so errors of float64 results resolve below
#: 2^-53; ``fp64``: numpy's float64 matmul.
REFERENCES = ("exact", "exact_dd", "fp64")
#: dtype of the input matrices (float64 for the Ozaki methods' fp64 emulation).
INPUT_DTYPES = ("float32", "float64")
#: Where the emulator backend runs plain/corrected/satf (``precision.gemm.gemm``'s ``device``).
EMULATOR_DEVICES = ("cpu", "gpu")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: The largest ``seed``: every row stores it in an int64 column.
SEED_MAX = 2**63 - 1

#: Top-level keys with a value of their own (not a table): written after a [table] header by
#: mistake, TOML reads them into that table.
TOP_VALUE_KEYS = (
    "name",
    "description",
    "seed",
    "repeats",
    "reference",
    "compare_backend",
    "input_dtype",
    "emulator_device",
)
TOP_KEYS = (*TOP_VALUE_KEYS, "sweep", "distribution", "timing", "plot")
SWEEP_KEYS = (
    "size",
    "m",
    "n",
    "k",
    "distribution",
    "method",
    "format",
    "backend",
    "arch",
    "correction",
    "terms",
    "target",
)
TIMING_KEYS = ("warmup", "calls")
DEFAULT_ARCH = "sm90"
DEFAULT_CORRECTION = "ootomo"
#: Defaults of the Ozaki axes (methods in catalog.TERMS_METHODS only).
DEFAULT_TERMS = "auto"
DEFAULT_TARGET = "fp64"


class ConfigError(ValueError):
    """An invalid experiment config; the message is meant for the user as is."""


@dataclass(frozen=True)
class Sweep:
    """One cartesian block of sweep axes (canonical names)."""

    shapes: tuple[tuple[int, int, int], ...]
    distributions: tuple[str, ...]
    methods: tuple[str, ...]
    formats: tuple[str, ...]
    backends: tuple[str, ...]
    archs: tuple[str, ...]
    corrections: tuple[str, ...]
    #: Slices / moduli of the Ozaki methods (ints or "auto") and the format their result is
    #: rounded to; only methods in catalog.TERMS_METHODS use them.
    terms: tuple[int | str, ...] = (DEFAULT_TERMS,)
    targets: tuple[str, ...] = (DEFAULT_TARGET,)


@dataclass(frozen=True)
class Timing:
    """How the GEMM call is timed: ``warmup`` untimed calls, then ``calls`` timed ones."""

    warmup: int = 0
    calls: int = 1


@dataclass(frozen=True)
class ExperimentConfig:
    """A validated experiment config.

    ``text`` is the file's exact content (copied verbatim into the results directory).
    ``dist_params`` maps a distribution name to its parameters; a list value is a sweep axis
    of that distribution.
    """

    path: Path
    text: str
    name: str
    seed: int
    repeats: int
    reference: str
    sweeps: tuple[Sweep, ...]
    dist_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    timing: Timing = Timing()
    compare_backend: str | None = None
    description: str = ""
    plot: PlotSpec = PlotSpec()
    input_dtype: str = "float32"
    emulator_device: str = "cpu"


class _Checker:
    """Raises ConfigError messages that all name the same file."""

    def __init__(self, path: Path, catalog: Catalog):
        self.path = path
        self.catalog = catalog

    def fail(self, where: str, message: str) -> NoReturn:
        raise ConfigError(f"config error in {self.path}: {where}: {message}")

    def keys(self, table: dict, allowed: tuple[str, ...], where: str) -> None:
        for key in table:
            if key not in allowed:
                if key in TOP_VALUE_KEYS:  # (allowed at the top level itself)
                    self.fail(
                        where,
                        f"unknown key {key!r}; {key!r} is a top-level key, but TOML puts every "
                        f"key after a {where.split(' #')[0]} header into that table: move it "
                        "above the first [table] header",
                    )
                self.fail(
                    where,
                    f"unknown key {key!r}{_suggest(key, allowed)} "
                    f"(valid keys: {', '.join(allowed)})",
                )

    def integer(self, value: Any, where: str, minimum: int, maximum: int | None = None) -> int:
        span = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(where, f"expected an integer {span}, got {_describe(value)}")
        if value < minimum or (maximum is not None and value > maximum):
            self.fail(where, f"expected an integer {span}, got {value}")
        return value

    def string(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            self.fail(where, f"expected a string, got {_describe(value)}")
        return value

    def table(self, value: Any, where: str) -> dict:
        if not isinstance(value, dict):
            self.fail(where, f"expected a table, got {_describe(value)}")
        return value

    def choice(self, value: Any, valid: tuple[str, ...], where: str, what: str) -> str:
        value = self.string(value, where)
        if value not in valid:
            self.fail(
                where,
                f"unknown {what} {value!r}{_suggest(value, valid)} (valid: {', '.join(valid)})",
            )
        return value

    def string_list(self, value: Any, where: str) -> list[str]:
        items = value if isinstance(value, list) else [value]
        if not items:
            self.fail(where, "expected a non-empty list, got []")
        return [self.string(v, where) for v in items]

    def int_list(self, value: Any, where: str) -> list[int]:
        items = value if isinstance(value, list) else [value]
        if not items:
            self.fail(where, "expected a non-empty list of positive integers, got []")
        return [self.integer(v, where, 1) for v in items]


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def _suggest(word: str, valid: tuple[str, ...] | list[str]) -> str:
    from precision.tensorcore.arch import did_you_mean

    return did_you_mean(word, valid)


def _unique(items: list) -> tuple:
    return tuple(dict.fromkeys(items))


def _parse_sweep(ck: _Checker, raw: Any, where: str) -> Sweep:
    table = ck.table(raw, where)
    ck.keys(table, SWEEP_KEYS, where)
    cat = ck.catalog
    if "size" in table:
        for key in ("m", "n", "k"):
            if key in table:
                ck.fail(
                    f"{where} {key}",
                    "give either 'size' (m = n = k) or all of 'm', 'n', 'k', not both",
                )
        shapes = [(s, s, s) for s in ck.int_list(table["size"], f"{where} size")]
    elif any(key in table for key in ("m", "n", "k")):
        missing = [key for key in ("m", "n", "k") if key not in table]
        if missing:
            ck.fail(
                f"{where} {missing[0]}",
                "missing; 'm', 'n' and 'k' must all be given (or 'size' alone)",
            )
        ms, ns, ks = (ck.int_list(table[key], f"{where} {key}") for key in ("m", "n", "k"))
        shapes = [(m, n, k) for m in ms for n in ns for k in ks]
    else:
        ck.fail(f"{where} size", "missing; give 'size' = [..] (square) or 'm', 'n', 'k' lists")

    def names(key: str, valid: tuple[str, ...], what: str, default: str | None = None):
        if key not in table:
            if default is None:
                ck.fail(
                    f"{where} {key}",
                    f"missing; expected a list of {what}s (valid: {', '.join(valid)})",
                )
            return (default,)
        values = ck.string_list(table[key], f"{where} {key}")
        if key == "arch":
            from precision.tensorcore.arch import unknown_arch_message

            for v in values:
                if v not in valid:  # the library's one wording (sm86: "'sm80' models it")
                    ck.fail(f"{where} {key}", unknown_arch_message(v, valid))
        return _unique([ck.choice(v, valid, f"{where} {key}", what) for v in values])

    if "format" not in table:
        ck.fail(
            f"{where} format",
            f"missing; expected a list of formats (valid: {', '.join(cat.formats)})",
        )
    formats = []
    for value in ck.string_list(table["format"], f"{where} format"):
        canon = cat.canonical_format(value)
        if canon is None:
            valid = cat.formats + tuple(cat.format_aliases)
            ck.fail(
                f"{where} format",
                f"unknown format {value!r}{_suggest(value, valid)} "
                f"(valid: {', '.join(cat.formats)})",
            )
        formats.append(canon)
    sweep = Sweep(
        shapes=_unique(shapes),
        distributions=names("distribution", cat.distributions, "distribution"),
        methods=names("method", cat.methods, "method"),
        formats=_unique(formats),
        backends=names("backend", cat.backends, "backend", default="emulator"),
        archs=names("arch", cat.archs, "arch", default=DEFAULT_ARCH),
        corrections=names("correction", cat.corrections, "correction", default=DEFAULT_CORRECTION),
        terms=_parse_terms(ck, table, where),
        targets=_parse_targets(ck, table, where),
    )
    _check_terms_methods(ck, table, sweep, where)
    for method, fmt, backend, arch, corr in itertools.product(
        sweep.methods, sweep.formats, sweep.backends, sweep.archs, sweep.corrections
    ):
        problem = combination_problem(
            method, fmt, backend, arch, corr if method == "corrected" else None
        )
        if problem:
            ck.fail(
                where,
                f"{problem}; this block sweeps the product of its lists, so split it into "
                "[[sweep]] tables that hold valid combinations only (`precision list` shows "
                "them)",
            )
    return sweep


def _parse_terms(ck: _Checker, table: dict, where: str) -> tuple[int | str, ...]:
    """``terms``: a list of positive integers and/or "auto" (default ["auto"])."""
    if "terms" not in table:
        return (DEFAULT_TERMS,)
    key = f"{where} terms"
    items = table["terms"] if isinstance(table["terms"], list) else [table["terms"]]
    if not items:
        ck.fail(key, 'expected a non-empty list of positive integers or "auto", got []')
    out: list[int | str] = []
    for v in items:
        if v == "auto":
            out.append(v)
        elif isinstance(v, bool) or not isinstance(v, int) or v < 1:
            ck.fail(key, f'expected a positive integer or "auto", got {_describe(v)}')
        else:
            out.append(v)
    return _unique(out)


def _parse_targets(ck: _Checker, table: dict, where: str) -> tuple[str, ...]:
    """``target``: formats the Ozaki result is rounded to (default ["fp64"])."""
    from precision.gemm.ozaki import TARGETS

    if "target" not in table:
        return (DEFAULT_TARGET,)
    key = f"{where} target"
    out = []
    for v in ck.string_list(table["target"], key):
        canon = ck.catalog.canonical_format(v)
        if canon not in TARGETS:
            ck.fail(
                key,
                f"unknown target {v!r}{_suggest(v, tuple(TARGETS))} (valid: {', '.join(TARGETS)})",
            )
        out.append(canon)
    return _unique(out)


def _check_terms_methods(ck: _Checker, table: dict, sweep: Sweep, where: str) -> None:
    """``terms`` / ``target`` only for the Ozaki methods, and explicit terms in range."""
    from precision.gemm.ozaki import TERMS_RANGE

    others = [m for m in sweep.methods if m not in TERMS_METHODS]
    for key in ("terms", "target"):
        if key in table and others:
            ck.fail(
                f"{where} {key}",
                f"'{key}' applies to methods {', '.join(TERMS_METHODS)} only, but this block "
                f"also sweeps {', '.join(repr(m) for m in others)}; put those methods in a "
                "[[sweep]] table of their own",
            )
    for method in sweep.methods:
        if method not in TERMS_RANGE:
            continue
        lo, hi = TERMS_RANGE[method]
        for t in sweep.terms:
            if t != "auto" and not lo <= int(t) <= hi:
                ck.fail(
                    f"{where} terms",
                    f"method {method!r} takes terms in [{lo}, {hi}] "
                    f'({"slices" if method == "ozaki1" else "moduli"}) or "auto", got {t}',
                )


def _parse_dist_params(
    ck: _Checker, raw: Any, input_dtype: str = "float32"
) -> dict[str, dict[str, Any]]:
    """``[distribution.NAME]`` tables. Each value is checked on its own (a finite number),
    then every combination the sweep expands (the product of the lists, merged over the
    defaults) against the generator's rules, with entries that must be finite in
    ``input_dtype``."""
    from precision.distributions import get_distribution, param_combinations

    table = ck.table(raw, "[distribution]")
    out: dict[str, dict[str, Any]] = {}
    for name, params in table.items():
        where = f"[distribution.{name}]"
        ck.choice(name, ck.catalog.distributions, "[distribution]", "distribution")
        params = ck.table(params, where)
        dist = get_distribution(name)
        ck.keys(params, tuple(dist.defaults), where)
        for key, value in params.items():
            values = value if isinstance(value, list) else [value]
            if not values:
                ck.fail(f"{where} {key}", "expected a number or a non-empty list, got []")
            for v in values:
                try:
                    dist.check_value(key, v)
                except ValueError as exc:
                    ck.fail(f"{where} {key}", str(exc))
        # the parameter sets the sweep expands into points (precision.runner.sweep)
        for combo in param_combinations(params):
            try:
                dist.check_params(combo, dtype=input_dtype)
            except ValueError as exc:
                message = str(exc).removeprefix(f"{name}: ")
                unset = [  # defaults the message names: they are not in the file
                    f"{k} = {v}"
                    for k, v in dist.defaults.items()
                    if k not in params and re.search(rf"\b{k}\b", message)
                ]
                note = f" ({', '.join(unset)}: the default)" if unset else ""
                ck.fail(f"{where} {', '.join(params) or '(defaults)'}", f"{message}{note}")
        out[name] = dict(params)
    return out


def parse_config(
    text: str,
    path: Path | str = "<config>",
    catalog: Catalog | None = None,
    check_plot: bool = True,
) -> ExperimentConfig:
    """Validate TOML ``text`` (read from ``path``) and return an :class:`ExperimentConfig`.
    ``check_plot=False`` skips checking ``[plot]`` against the sweep's points (for readers of
    a stored config that draw nothing: it is checked when the config is run)."""
    if not isinstance(text, str):  # a Path here read as TOML text ended in a TypeError
        hint = "; for a file use load_config(path)" if isinstance(text, Path) else ""
        raise TypeError(f"parse_config takes the TOML text as a str, got {type(text).__name__}"
                        f"{hint}")  # fmt: skip
    path = Path(path)
    ck = _Checker(path, catalog or load_catalog())
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config error in {path}: not valid TOML: {exc}") from None
    ck.keys(raw, TOP_KEYS, "top level")

    if "name" not in raw:
        ck.fail("name", 'missing; expected a string such as name = "my-sweep"')
    name = ck.string(raw["name"], "name")
    if not NAME_RE.match(name) or name in (".", ".."):
        ck.fail(
            "name",
            f"expected letters, digits, '.', '_' or '-' (it names the results "
            f"directory), got {name!r}",
        )
    seed = ck.integer(raw.get("seed", 0), "seed", 0, SEED_MAX)
    repeats = ck.integer(raw.get("repeats", 1), "repeats", 1)
    reference = ck.choice(raw.get("reference", "exact"), REFERENCES, "reference", "reference")
    description = ck.string(raw.get("description", ""), "description")
    input_dtype = ck.choice(
        raw.get("input_dtype", "float32"), INPUT_DTYPES, "input_dtype", "input dtype"
    )

    if "sweep" not in raw:
        ck.fail("[sweep]", "missing; expected a [sweep] table (or [[sweep]] tables)")
    blocks = raw["sweep"]
    if isinstance(blocks, list):
        if not blocks:
            ck.fail("[[sweep]]", "expected at least one [[sweep]] table")
        sweeps = tuple(_parse_sweep(ck, b, f"[[sweep]] #{i + 1}") for i, b in enumerate(blocks))
    else:
        sweeps = (_parse_sweep(ck, blocks, "[sweep]"),)

    dist_params = _parse_dist_params(ck, raw.get("distribution", {}), input_dtype)

    timing_raw = ck.table(raw.get("timing", {}), "[timing]")
    ck.keys(timing_raw, TIMING_KEYS, "[timing]")
    timing = Timing(
        warmup=ck.integer(timing_raw.get("warmup", 0), "[timing] warmup", 0),
        calls=ck.integer(timing_raw.get("calls", 1), "[timing] calls", 1),
    )

    compare = raw.get("compare_backend")
    if compare is not None:
        compare = ck.choice(compare, ck.catalog.backends, "compare_backend", "backend")
        for sw in sweeps:
            for method, fmt, arch, corr in itertools.product(
                sw.methods, sw.formats, sw.archs, sw.corrections
            ):
                problem = combination_problem(
                    method, fmt, compare, arch, corr if method == "corrected" else None
                )
                if problem:
                    ck.fail("compare_backend", f"{problem} (every point also runs there)")

    config = ExperimentConfig(
        path=path,
        text=text,
        name=name,
        seed=seed,
        repeats=repeats,
        reference=reference,
        sweeps=sweeps,
        dist_params=dist_params,
        timing=timing,
        compare_backend=compare,
        description=description,
        input_dtype=input_dtype,
        emulator_device=ck.choice(
            raw.get("emulator_device", "cpu"), EMULATOR_DEVICES, "emulator_device", "device"
        ),
        plot=parse_plot(raw.get("plot", {}), ck.fail),
    )
    if check_plot:
        _check_plot_against_sweep(ck, config)
    return config


def _check_plot_against_sweep(ck: _Checker, config: ExperimentConfig) -> None:
    """Refuse a ``[plot]`` table that the sweep's own results could not be drawn with
    (``x = "size"`` on non-square shapes, ``x = "terms"`` or a dimension without a single
    value in the sweep), as ``precision plot`` would: before anything is computed, rather than
    after the whole sweep. The check runs on the identity columns of the points (terms
    chosen by ``"auto"`` stand as 1: some integer will be there)."""
    import pandas as pd

    from precision.runner.execute import _base_row
    from precision.runner.plot_frame import check_table
    from precision.runner.sweep import expand

    rows = pd.DataFrame([_base_row(p, 0) for p in expand(config)])
    if rows.empty:
        return
    rows.loc[rows["terms_requested"].notna() & rows["terms"].isna(), "terms"] = 1.0
    problems = check_table(rows, config.plot)
    if problems:
        key, message = problems[0]
        ck.fail(
            f"[plot] {key} = {getattr(config.plot, key)!r}",
            message.replace("the table has", "the sweep has"),
        )


def _utf8_problem(path: Path) -> str:
    """Where ``path`` stops being UTF-8 (the text reader decodes in chunks, so its exception's
    offset is not the file's)."""
    data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return (
            f"config error in {path}: not valid UTF-8 (TOML files must be): byte "
            f"0x{data[exc.start]:02x} at byte offset {exc.start} (line {line}): {exc.reason}"
        )
    return f"config error in {path}: not valid UTF-8 (TOML files must be)"


def load_config(
    path: Path | str, catalog: Catalog | None = None, check_plot: bool = True
) -> ExperimentConfig:
    """Read and validate the TOML config at ``path`` (``check_plot``: as for
    :func:`parse_config`)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")  # text mode: newlines as store.py reads them
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(_utf8_problem(path)) from None
    return parse_config(text, path, catalog, check_plot)
