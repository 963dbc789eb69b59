"""Seeded input generators for GEMM accuracy experiments.

Every generator draws from a :class:`numpy.random.Generator` and returns float32 arrays, so
the CPU emulator and a GPU kernel can be fed bit-identical inputs (generate on the CPU, copy
to the device).

Two kinds of distribution are registered in :data:`DISTRIBUTIONS`:

* *elementwise* ones (``uniform``, ``normal``, ``exp_rand``, ``wide_range``) draw every entry
  independently; A is drawn first, then B, from the same generator;
* *paired* ones (``cancellation``) build A and B together, because the property they
  exercise (catastrophic cancellation in A·B) is a property of the pair.

Use :func:`make_inputs` to obtain ``(A, B)`` for an ``m × k`` by ``k × n`` product, and
:func:`sample` for a single elementwise matrix.

``make_inputs(dtype=...)`` takes a floating-point numpy / ml_dtypes dtype or a format name of
:mod:`precision.formats` (any alias): fp64, fp32, fp16 (numpy casts, correctly rounded) and
bf16, e4m3, e5m2, tf32 (one correct rounding by :func:`precision.formats.cast`; tf32 in
float32 containers). Parameters are checked against that format's largest finite value.
"""

from __future__ import annotations

import difflib
import inspect
import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from precision import parallel_draws
from precision.crexp import exp_rn

__all__ = [
    "DISTRIBUTIONS",
    "NORMAL_BOUND",
    "Distribution",
    "exp_rand_phi_max",
    "INPUT_FORMATS",
    "get_distribution",
    "make_inputs",
    "param_combinations",
    "sample",
]

Shape = tuple[int, ...]

#: |N(0,1)| draws are taken to stay within this bound when deciding from the parameters
#: whether entries stay finite: P(|g| > 8) is about 1.2e-15 per draw.
NORMAL_BOUND = 8.0


def _uniform(rng: np.random.Generator, shape: Shape, *, low: float = -1.0, high: float = 1.0):
    if not low < high:
        raise ValueError(f"uniform: need low < high, got low={low}, high={high}")
    return parallel_draws.uniform(rng, low, high, shape)  # rng.uniform's bits, on every core


def _uniform_bounds(dtype: str, fmax: float, *, low: float, high: float) -> None:
    # numpy draws low + (high - low) * U in float64, so high - low must be finite there.
    if not math.isfinite(high - low):
        raise ValueError(
            f"uniform: need high - low <= {float(np.finfo(np.float64).max):.4g} (finite in "
            f"float64), got low={low}, high={high}"
        )
    if max(abs(low), abs(high)) > fmax:
        raise ValueError(
            f"uniform: need |low|, |high| <= {fmax:.4g} for finite {dtype} entries, "
            f"got low={low}, high={high}"
        )


def _normal(rng: np.random.Generator, shape: Shape, *, mean: float = 0.0, std: float = 1.0):
    if not std > 0:
        raise ValueError(f"normal: need std > 0, got std={std}")
    return rng.normal(mean, std, size=shape)


def _normal_bounds(dtype: str, fmax: float, *, mean: float, std: float) -> None:
    if abs(mean) + NORMAL_BOUND * std > fmax:
        raise ValueError(
            f"normal: need |mean| + {NORMAL_BOUND:g}*std <= {fmax:.4g} for finite {dtype} "
            f"entries (draws within {NORMAL_BOUND:g} std), got mean={mean}, std={std}"
        )


#: The floating-point formats make_inputs draws in (format names; dtypes and aliases too).
INPUT_FORMATS: tuple[str, ...] = ("fp64", "fp32", "fp16", "bf16", "e4m3", "e5m2", "tf32")
#: Those whose numpy cast from float64 is a correct rounding; the others go through
#: precision.formats.cast (ml_dtypes casts from float64 round twice, through float32).
_NUMPY_CAST = ("fp64", "fp32", "fp16")


@dataclass(frozen=True)
class _InputFormat:
    name: str  # canonical format name
    label: str  # the name messages use: the dtype's (float32), or the format's (tf32)
    dtype: np.dtype  # storage dtype of the arrays returned
    fmax: float  # largest finite value


def _input_format(dtype: Any) -> _InputFormat:
    """The floating-point format ``dtype`` names, or ``ValueError`` listing those accepted."""
    from precision.formats import get_format

    try:
        fmt = get_format(dtype)
    except ValueError:
        fmt = None
    if fmt is None or fmt.name not in INPUT_FORMATS:
        what = "an unknown dtype or format" if fmt is None else f"the integer format {fmt.name}"
        raise ValueError(
            f"dtype={dtype!r} is {what}; inputs are drawn in a floating-point format: one of "
            f"{', '.join(INPUT_FORMATS)}, an alias of one or its numpy / ml_dtypes dtype"
        )
    storage = np.dtype(fmt.storage)
    same = get_format(storage).name == fmt.name  # tf32 lives in float32 containers
    # A format without Inf (e4m3) saturates every overflow in formats.cast, so its entries are
    # finite whenever the float64 draws are: the bound is float64's.
    fmax = fmt.max_normal if fmt.has_inf else float(np.finfo(np.float64).max)
    return _InputFormat(fmt.name, storage.name if same else fmt.name, storage, fmax)


def exp_rand_phi_max(dtype: Any = np.float64) -> float:
    """Largest ``phi`` of ``exp_rand`` whose entries stay finite in ``dtype`` (a dtype or a
    format name, as ``make_inputs`` takes).

    exp(phi * g) <= max finite for every normal draw |g| <= :data:`NORMAL_BOUND`, so
    phi <= ln(max) / 8, rounded down to 2 decimals: 88.72 for float64, 11.09 for float32.
    """
    return _phi_max(_input_format(dtype).fmax)


def _phi_max(fmax: float) -> float:
    return math.floor(math.log(fmax) / NORMAL_BOUND * 100) / 100


def _exp_rand_bounds(dtype: str, fmax: float, *, phi: float) -> None:
    limit = _phi_max(fmax)
    if phi > limit:
        raise ValueError(
            f"exp_rand: need phi <= {limit:g} for finite {dtype} entries (exp(phi*g) <= "
            f"{fmax:.4g} for normal draws |g| <= {NORMAL_BOUND:g}), got phi={phi}"
        )


#: Entries of ``exp_rand`` whose exponential is taken at once (bounds its temporaries).
_EXP_CHUNK = 1 << 16


def _exp_rand(rng: np.random.Generator, shape: Shape, *, phi: float = 1.0):
    # (U(0,1) - 0.5) * exp(phi * N(0,1)): the ozIMMU / GEMMul8 "exp_rand-phi" family.
    # phi = 0 gives |a| <= 0.5; larger phi widens the exponent range log-normally.
    # exp is correctly rounded (precision.crexp), not np.exp, whose last bit depends on the
    # CPU (NumPy's AVX-512 kernel or the libm): the same seed gives the same bits everywhere.
    if phi < 0:
        raise ValueError(f"exp_rand: need phi >= 0, got phi={phi}")
    u = parallel_draws.random(rng, shape)  # rng.random's bits, on every core
    g = rng.standard_normal(size=shape)
    u -= 0.5
    if phi != 0:  # (exp(±0) = 1 exactly: u - 0.5 is the value)
        # (u - 0.5)·exp(phi·g) in place, exp in chunks: the two draws are the only full-size
        # arrays (four were, 1.8 GiB beyond a float32 result at n = 8192); the same bits
        g *= phi
        flat_u, flat_g = u.reshape(-1), g.reshape(-1)
        for start in range(0, flat_u.size, _EXP_CHUNK):
            part = slice(start, start + _EXP_CHUNK)
            flat_u[part] *= exp_rn(flat_g[part])
    return u


def _wide_range(rng: np.random.Generator, shape: Shape, *, exp_min: int = -12, exp_max: int = 12):
    # sign * m * 2**e with m ~ U[1, 2) and e uniform on the integers [exp_min, exp_max]:
    # every binade in the range is equally likely (a "wide exponent range" adversary).
    if not exp_min <= exp_max:
        raise ValueError(
            f"wide_range: need exp_min <= exp_max, got exp_min={exp_min}, exp_max={exp_max}"
        )
    if exp_min < -1022 or exp_max > 1023:
        raise ValueError(
            f"wide_range: exponents must lie in float64's normal range [-1022, 1023] (the "
            f"entries are drawn in float64), got [{exp_min}, {exp_max}]"
        )
    sign = rng.choice(np.array([-1.0, 1.0]), size=shape)
    mant = rng.uniform(1.0, 2.0, size=shape)
    expo = rng.integers(exp_min, exp_max, size=shape, endpoint=True)
    return sign * np.ldexp(mant, expo)


def _wide_range_bounds(dtype: str, fmax: float, *, exp_min: int, exp_max: int) -> None:
    # m * 2**exp_max with m in [1, 2) is a float64 draw: finite up to exp_max = 1023 as it is,
    # but cast to a narrower format it can round up to 2**(exp_max + 1), past fmax's binade.
    top = 1023 if dtype == "float64" else math.frexp(fmax)[1] - 2  # float32: 126
    if exp_max > top:
        why = (
            "U[1,2)*2^1024 is beyond float64"
            if dtype == "float64"
            else f"U[1,2)*2^{exp_max} can round up to 2^{exp_max + 1}"
        )
        raise ValueError(
            f"wide_range: need exp_max <= {top} for finite {dtype} entries ({why}), "
            f"got exp_max={exp_max}"
        )
    # Below, float64 inputs keep every entry normal down to 2^-1022; the other inputs stop at
    # float32's smallest normal exponent, as they always have (narrower formats then hold
    # their own subnormals and zeros there).
    low = -1022 if dtype == "float64" else -126
    if exp_min < low:
        only = "" if dtype == "float64" else "; float64 inputs go down to -1022"
        raise ValueError(
            f"wide_range: need exp_min >= {low} for {dtype} inputs{only}, got exp_min={exp_min}"
        )


def _cancellation_pair(
    rng: np.random.Generator, m: int, n: int, k: int, *, eps: float = 2.0**-8
) -> tuple[np.ndarray, np.ndarray]:
    # Terms come in pairs (a, -a) x (b, b + eps*w) along k, so each pair contributes
    # -eps*a*w: every product is O(1) while their sum is O(eps * sqrt(k)). The exact result
    # is therefore ~1/eps times smaller than the terms (ill-conditioned dot products).
    if not 0 < eps < 1:
        raise ValueError(f"cancellation: need 0 < eps < 1, got eps={eps}")
    half = (k + 1) // 2
    a = rng.uniform(-1.0, 1.0, size=(m, half)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, size=(half, n)).astype(np.float32)
    w = rng.uniform(-1.0, 1.0, size=(half, n))
    A = np.empty((m, 2 * half), dtype=np.float32)
    A[:, 0::2] = a
    A[:, 1::2] = -a
    B = np.empty((2 * half, n), dtype=np.float32)
    B[0::2, :] = b
    B[1::2, :] = (b + eps * w).astype(np.float32)
    return np.ascontiguousarray(A[:, :k]), np.ascontiguousarray(B[:k, :])


@dataclass(frozen=True)
class Distribution:
    """A named input generator.

    ``func`` is either elementwise, ``func(rng, shape, **params) -> ndarray``, or (when
    ``paired``) ``func(rng, m, n, k, **params) -> (A, B)``. ``defaults`` holds every accepted
    parameter with its default value. ``bounds(dtype, fmax, **params)``, where given, raises
    ``ValueError`` for parameters whose entries would not all be finite (``|x| <= fmax``) in
    ``dtype``, decided from the parameters alone (normal draws within :data:`NORMAL_BOUND`).
    """

    name: str
    func: Callable[..., Any]
    paired: bool
    description: str
    bounds: Callable[..., None] | None = None

    @property
    def defaults(self) -> dict[str, Any]:
        """Accepted keyword parameters and their defaults."""
        sig = inspect.signature(self.func)
        return {p.name: p.default for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY}

    def check_value(self, key: str, value: Any) -> None:
        """``ValueError`` unless ``key`` is a parameter and ``value`` a finite number (the
        checks that do not depend on the other parameters)."""
        defaults = self.defaults
        if key not in defaults:
            hint = difflib.get_close_matches(key, list(defaults), n=1)
            did = f"; did you mean {hint[0]!r}?" if hint else ""
            raise ValueError(
                f"distribution {self.name!r} has no parameter {key!r}{did} "
                f"(valid: {', '.join(defaults) or 'none'})"
            )
        numbers = (int, float, np.integer, np.floating)  # numpy scalars from a script too
        if isinstance(value, bool | np.bool_) or not isinstance(value, numbers):
            raise ValueError(
                f"distribution {self.name!r} parameter {key!r} must be a number, "
                f"got {type(value).__name__} {value!r}"
            )
        try:
            finite = math.isfinite(value)
        except OverflowError:  # an int beyond the float64 range
            finite = False
        if not finite:
            got = value if isinstance(value, float) else "an integer beyond the float64 range"
            raise ValueError(
                f"distribution {self.name!r} parameter {key!r} must be a finite number, got {got}"
            )

    def check_params(self, params: Mapping[str, Any], dtype: Any = np.float64) -> dict[str, Any]:
        """Return ``params`` merged over the defaults.

        Unknown names, non-numeric or non-finite values, out-of-range values and values
        whose entries would not be finite in ``dtype`` (a dtype or format name, as
        :func:`make_inputs` takes; see ``bounds``) raise ``ValueError``.
        """
        fmt = _input_format(dtype)
        for key, value in params.items():
            self.check_value(key, value)
        full = {**self.defaults, **params}
        if self.bounds is not None:
            self.bounds(fmt.label, fmt.fmax, **full)
        # A 1x1 draw checks the values (ranges, orderings) with the generator's own messages.
        rng = np.random.default_rng(0)
        if self.paired:
            self.func(rng, 1, 1, 1, **full)
        else:
            self.func(rng, (1, 1), **full)
        return full


DISTRIBUTIONS: dict[str, Distribution] = {
    d.name: d
    for d in [
        Distribution("uniform", _uniform, False, "U(low, high), default U(-1, 1)", _uniform_bounds),
        Distribution("normal", _normal, False, "N(mean, std^2), default N(0, 1)", _normal_bounds),
        Distribution(
            "exp_rand",
            _exp_rand,
            False,
            "(U(0,1) - 0.5) * exp(phi * N(0,1)) (ozIMMU/GEMMul8)",
            _exp_rand_bounds,
        ),
        Distribution(
            "wide_range",
            _wide_range,
            False,
            "±U[1,2) * 2^e, e uniform in [exp_min, exp_max]",
            _wide_range_bounds,
        ),
        Distribution(
            "cancellation",
            _cancellation_pair,
            True,
            "paired (a, -a)·(b, b + eps*w) terms: A·B is ~1/eps smaller than its terms",
        ),
    ]
}


def get_distribution(name: str) -> Distribution:
    """Look up a distribution by name; ``ValueError`` names the bad value and the valid ones."""
    try:
        return DISTRIBUTIONS[name]
    except KeyError:
        hint = difflib.get_close_matches(str(name), list(DISTRIBUTIONS), n=1)
        did = f"; did you mean {hint[0]!r}?" if hint else ""
        raise ValueError(
            f"unknown distribution {name!r}{did} (valid: {', '.join(DISTRIBUTIONS)})"
        ) from None


def param_combinations(params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The parameter sets a config's ``[distribution.NAME]`` table sweeps: a list value is an
    axis, a single value one point of it; the cartesian product, keys in ``params``' order
    (``{}`` alone when nothing is given)."""
    axes = {key: (value if isinstance(value, list) else [value]) for key, value in params.items()}
    return [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*axes.values())]


def _check_rng(rng: Any, where: str) -> None:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{where}: rng must be a numpy.random.Generator (numpy.random.default_rng(seed)), "
            f"got {type(rng).__name__} {rng!r}"
        )


def sample(name: str, shape: Shape, rng: np.random.Generator, **params: float) -> np.ndarray:
    """Draw one float32 matrix of ``shape`` from an elementwise distribution."""
    _check_rng(rng, "sample")
    dist = get_distribution(name)
    if dist.paired:
        raise ValueError(f"distribution {name!r} builds A and B together; use make_inputs")
    values = dist.func(rng, tuple(shape), **dist.check_params(params, np.float32))
    return np.asarray(values).astype(np.float32)


def make_inputs(
    name: str,
    m: int,
    n: int,
    k: int,
    rng: np.random.Generator,
    *,
    dtype: Any = np.float32,
    **params: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Return ``A`` (m × k) and ``B`` (k × n) drawn from distribution ``name``, rounded to
    ``dtype`` (float32 by default; float64 keeps the generator's float64 values, whose
    float32 rounding is the default's matrices).

    ``m``, ``n``, ``k``: positive integers (not bool); ``rng``: a
    :class:`numpy.random.Generator`; ``dtype``: a floating-point dtype or format name (see
    the module docstring). Parameters whose entries would not all be finite in ``dtype``
    raise ``ValueError``.
    """
    dims = []
    for label, dim in (("m", m), ("n", n), ("k", k)):
        if isinstance(dim, bool | np.bool_) or not isinstance(dim, int | np.integer) or dim < 1:
            raise ValueError(
                f"make_inputs: {label} must be a positive integer (not bool), "
                f"got {type(dim).__name__} {dim!r}"
            )
        dims.append(int(dim))
    m, n, k = dims
    _check_rng(rng, "make_inputs")
    fmt = _input_format(dtype)
    dist = get_distribution(name)
    full = dist.check_params(params, fmt.name)
    if dist.paired:
        A, B = dist.func(rng, m, n, k, **full)
    else:
        A = dist.func(rng, (m, k), **full)
        B = dist.func(rng, (k, n), **full)
    return _round(A, fmt), _round(B, fmt)


def _round(values: Any, fmt: _InputFormat) -> np.ndarray:
    if fmt.name in _NUMPY_CAST:
        return np.asarray(values).astype(fmt.dtype)
    from precision.formats import cast

    return cast(np.asarray(values, dtype=np.float64), fmt.name)
