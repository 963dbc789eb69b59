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
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "DISTRIBUTIONS",
    "Distribution",
    "get_distribution",
    "make_inputs",
    "sample",
]

Shape = tuple[int, ...]


def _uniform(rng: np.random.Generator, shape: Shape, *, low: float = -1.0, high: float = 1.0):
    if not low < high:
        raise ValueError(f"uniform: need low < high, got low={low}, high={high}")
    return rng.uniform(low, high, size=shape)


def _normal(rng: np.random.Generator, shape: Shape, *, mean: float = 0.0, std: float = 1.0):
    if not std > 0:
        raise ValueError(f"normal: need std > 0, got std={std}")
    return rng.normal(mean, std, size=shape)


def _exp_rand(rng: np.random.Generator, shape: Shape, *, phi: float = 1.0):
    # (U(0,1) - 0.5) * exp(phi * N(0,1)): the ozIMMU / GEMMul8 "exp_rand-phi" family.
    # phi = 0 gives |a| <= 0.5; larger phi widens the exponent range log-normally.
    if phi < 0:
        raise ValueError(f"exp_rand: need phi >= 0, got phi={phi}")
    u = rng.random(size=shape)
    g = rng.standard_normal(size=shape)
    return (u - 0.5) * np.exp(phi * g)


def _wide_range(rng: np.random.Generator, shape: Shape, *, exp_min: int = -12, exp_max: int = 12):
    # sign * m * 2**e with m ~ U[1, 2) and e uniform on the integers [exp_min, exp_max]:
    # every binade in the range is equally likely (a "wide exponent range" adversary).
    if not exp_min <= exp_max:
        raise ValueError(f"wide_range: need exp_min <= exp_max, got {exp_min} > {exp_max}")
    if exp_min < -126 or exp_max > 127:
        raise ValueError(
            f"wide_range: exponents must lie in the float32 normal range [-126, 127], "
            f"got [{exp_min}, {exp_max}]"
        )
    sign = rng.choice(np.array([-1.0, 1.0]), size=shape)
    mant = rng.uniform(1.0, 2.0, size=shape)
    expo = rng.integers(exp_min, exp_max, size=shape, endpoint=True)
    return sign * np.ldexp(mant, expo)


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
    parameter with its default value.
    """

    name: str
    func: Callable[..., Any]
    paired: bool
    description: str

    @property
    def defaults(self) -> dict[str, Any]:
        """Accepted keyword parameters and their defaults."""
        sig = inspect.signature(self.func)
        return {p.name: p.default for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY}

    def check_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Return ``params`` merged over the defaults.

        Unknown names, non-numeric values and out-of-range values raise ``ValueError``.
        """
        defaults = self.defaults
        for key, value in params.items():
            if key not in defaults:
                hint = difflib.get_close_matches(key, list(defaults), n=1)
                did = f"; did you mean {hint[0]!r}?" if hint else ""
                raise ValueError(
                    f"distribution {self.name!r} has no parameter {key!r}{did} "
                    f"(valid: {', '.join(defaults) or 'none'})"
                )
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(
                    f"distribution {self.name!r} parameter {key!r} must be a number, "
                    f"got {type(value).__name__} {value!r}"
                )
        full = {**defaults, **params}
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
        Distribution("uniform", _uniform, False, "U(low, high), default U(-1, 1)"),
        Distribution("normal", _normal, False, "N(mean, std^2), default N(0, 1)"),
        Distribution(
            "exp_rand", _exp_rand, False, "(U(0,1) - 0.5) * exp(phi * N(0,1)) (ozIMMU/GEMMul8)"
        ),
        Distribution(
            "wide_range", _wide_range, False, "±U[1,2) * 2^e, e uniform in [exp_min, exp_max]"
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


def sample(name: str, shape: Shape, rng: np.random.Generator, **params: float) -> np.ndarray:
    """Draw one float32 matrix of ``shape`` from an elementwise distribution."""
    dist = get_distribution(name)
    if dist.paired:
        raise ValueError(f"distribution {name!r} builds A and B together; use make_inputs")
    values = dist.func(rng, tuple(shape), **dist.check_params(params))
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
    float32 rounding is the default's matrices)."""
    for label, dim in (("m", m), ("n", n), ("k", k)):
        if int(dim) != dim or dim < 1:
            raise ValueError(f"make_inputs: {label} must be a positive integer, got {dim!r}")
    dist = get_distribution(name)
    full = dist.check_params(params)
    if dist.paired:
        A, B = dist.func(rng, m, n, k, **full)
    else:
        A = dist.func(rng, (m, k), **full)
        B = dist.func(rng, (k, n), **full)
    return np.asarray(A).astype(dtype), np.asarray(B).astype(dtype)
