"""Expand a validated config into sweep points, each with a stable id and derived input seeds.

A :class:`Point` is everything that determines one result file. Its ``id`` is a hash of its
canonical JSON, so it does not depend on the order of the config's lists or of execution.
Input matrices depend only on the config seed, the shape, the distribution (with its
parameters) and the repeat index — never on the method, format or backend — so every method
is measured on exactly the same matrices.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from precision.runner.catalog import TERMS_METHODS as _TERMS_METHODS
from precision.runner.config import ExperimentConfig

# Methods whose result depends on the ``correction`` axis; for the others it is None.
CORRECTED_METHODS = ("corrected",)
# Methods whose result depends on the ``terms`` and ``target`` axes (the Ozaki schemes).
TERMS_METHODS = _TERMS_METHODS


def _stable_hash(obj: Any) -> bytes:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).digest()


@dataclass(frozen=True, order=True)
class Point:
    """One sweep point: a GEMM configuration, run ``repeats`` times on fresh inputs."""

    m: int
    n: int
    k: int
    distribution: str
    dist_params: tuple[tuple[str, float], ...]
    method: str
    format: str
    backend: str
    arch: str
    correction: str | None
    reference: str
    seed: int
    repeats: int
    warmup: int
    calls: int
    compare_backend: str | None
    #: Ozaki methods only (None for the others): slices / moduli (an int or "auto") and the
    #: format the result is rounded to.
    terms: int | str | None = None
    target: str | None = None
    #: dtype of the inputs (config ``input_dtype``); float32 unless the config says float64.
    input_dtype: str = "float32"
    #: Where the emulator runs this point's tensor-core instructions (config
    #: ``emulator_device``): "gpu" only for plain/corrected/satf on a tensor-core format with
    #: the emulator as backend or comparison backend; "cpu" everywhere else.
    emulator_device: str = "cpu"

    def params(self) -> dict[str, Any]:
        """The point's parameters as a JSON-ready dict (``terms``/``target`` only where set,
        so the ids of points of other methods are those they had before these axes)."""
        d = asdict(self)
        d["dist_params"] = dict(self.dist_params)
        for key in ("terms", "target"):
            if d[key] is None:
                del d[key]
        if d["input_dtype"] == "float32":
            del d["input_dtype"]
        if d["emulator_device"] == "cpu":
            del d["emulator_device"]
        return d

    @property
    def id(self) -> str:
        """Stable 16-hex-digit identifier of the point."""
        return _stable_hash(self.params()).hex()[:16]

    @property
    def slug(self) -> str:
        """Readable file-name prefix (the id keeps it unique)."""
        corr = f"-{self.correction}" if self.correction else ""
        if self.terms is not None:
            corr += f"-{self.target}-t{self.terms}"
        return (
            f"{self.m}x{self.n}x{self.k}-{self.distribution}-{self.method}{corr}-"
            f"{self.format}-{self.backend}{'-gpu' if self.emulator_device == 'gpu' else ''}-"
            f"{self.arch}"
        )

    @property
    def variant(self) -> str:
        """Method label for tables and legends, e.g. ``corrected-markidis``."""
        return f"{self.method}-{self.correction}" if self.correction else self.method

    def input_key(self) -> tuple:
        """Everything the input matrices depend on, apart from the repeat index."""
        return (
            self.seed,
            self.m,
            self.n,
            self.k,
            self.distribution,
            self.dist_params,
            self.input_dtype,
        )

    def input_seed(self, repeat: int) -> int:
        """The 63-bit seed of repeat ``repeat``'s inputs (``np.random.default_rng(seed)``);
        independent of ``input_dtype``, so float32 inputs are the rounding of float64 ones."""
        key = {
            "seed": self.seed,
            "m": self.m,
            "n": self.n,
            "k": self.k,
            "distribution": self.distribution,
            "dist_params": dict(self.dist_params),
            "repeat": repeat,
        }
        return int.from_bytes(_stable_hash(key)[:8], "little") >> 1

    def dist_label(self, explicit: tuple[str, ...] = ()) -> str:
        """``distribution`` plus the parameters named in ``explicit``, e.g. ``exp_rand(phi=1)``."""
        from precision.distributions import get_distribution

        params = dict(self.dist_params)
        order = get_distribution(self.distribution).defaults  # the generator's own order
        shown = [f"{key}={number_label(params[key])}" for key in order if key in explicit]
        return f"{self.distribution}({', '.join(shown)})" if shown else self.distribution


def number_label(value: float) -> str:
    """``value`` as labels write it: ``:g`` (six significant digits, ``1``, ``0.5``,
    ``1e+06``) where that reads back as the same float, else its shortest round-trip repr
    (``1000001.0``, ``1.0000001``), so that two distinct parameter values never share a
    label (labels name the series of figures and the rows of summary tables)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


def _dist_variants(config: ExperimentConfig, name: str) -> list[tuple[tuple[str, float], ...]]:
    """Resolved parameter tuples of distribution ``name`` (list values are swept)."""
    from precision.distributions import get_distribution, param_combinations

    dist = get_distribution(name)
    variants = []
    for params in param_combinations(config.dist_params.get(name, {})):
        full = dist.check_params(params)
        variants.append(tuple(sorted((key, float(value)) for key, value in full.items())))
    return variants


def expand(config: ExperimentConfig) -> list[Point]:
    """All points of ``config`` (union of its sweep blocks), deduplicated and sorted."""
    points: set[Point] = set()
    for sw in config.sweeps:
        for (m, n, k), dist, method, fmt, backend, arch, corr in itertools.product(
            sw.shapes,
            sw.distributions,
            sw.methods,
            sw.formats,
            sw.backends,
            sw.archs,
            sw.corrections,
        ):
            ozaki = method in TERMS_METHODS
            terms_targets: list[tuple[int | str | None, str | None]] = (
                list(itertools.product(sw.terms, sw.targets)) if ozaki else [(None, None)]
            )
            for params, (terms, target) in itertools.product(
                _dist_variants(config, dist), terms_targets
            ):
                points.add(
                    Point(
                        m=m,
                        n=n,
                        k=k,
                        distribution=dist,
                        dist_params=params,
                        method=method,
                        format=fmt,
                        backend=backend,
                        arch=arch,
                        correction=corr if method in CORRECTED_METHODS else None,
                        reference=config.reference,
                        seed=config.seed,
                        repeats=config.repeats,
                        warmup=config.timing.warmup,
                        calls=config.timing.calls,
                        compare_backend=config.compare_backend,
                        terms=terms,
                        target=target,
                        input_dtype=config.input_dtype,
                        emulator_device=_emulator_device(config, method, fmt, backend),
                    )
                )
    return sorted(points, key=_sort_key)


def _emulator_device(config: ExperimentConfig, method: str, fmt: str, backend: str) -> str:
    """The config's ``emulator_device`` where the GPU engine can run the point's emulator
    (plain/corrected/satf on a tensor-core format, the emulator as backend or comparison
    backend), else "cpu" (the fp32 FMA chain and the Ozaki emulators run on the CPU only)."""
    from precision.gemm.schedule import METHODS as SCHEDULE_METHODS

    runs_emulator = "emulator" in (backend, config.compare_backend)
    engine = method in SCHEDULE_METHODS and fmt not in ("fp32", "fp64")  # fp32: FMA chain
    return config.emulator_device if runs_emulator and engine else "cpu"


def _sort_key(p: Point) -> tuple:
    # Points sharing inputs are adjacent, so an input cache of a few entries suffices.
    return (
        p.k * p.m * p.n,
        p.input_key(),
        p.method,
        p.correction or "",
        p.format,
        p.backend,
        p.arch,
        p.target or "",
        (0, p.terms) if isinstance(p.terms, int) else (1, 0),
        p.id,
    )


def group_by_inputs(points: list[Point]) -> list[list[Point]]:
    """Consecutive groups of ``points`` that share their input matrices (order kept)."""
    return [list(g) for _, g in itertools.groupby(points, key=Point.input_key)]


def rng_for(point: Point, repeat: int) -> np.random.Generator:
    """The generator that draws repeat ``repeat``'s inputs of ``point``."""
    return np.random.default_rng(point.input_seed(repeat))
