"""Error-free transformations (precision.eft) are exact: checked with Fractions."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from precision.eft import split, two_prod, two_sum


def _operands() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    a = rng.uniform(1, 2, 2000) * 2.0 ** rng.integers(-300, 300, 2000)
    b = rng.uniform(1, 2, 2000) * 2.0 ** rng.integers(-300, 300, 2000)
    a[:4] = [1 - 2**-53, 2 - 2**-52, 1 + 2**-52, 3.0 - 2**-51]  # all 53 bits set and near it
    b[:4] = a[:4]
    return a, b


def test_split_gives_two_halves_of_at_most_26_bits_summing_exactly() -> None:
    a, _ = _operands()
    hi, lo = split(a)
    for x, h, l in zip(a, hi, lo, strict=True):
        assert Fraction(h) + Fraction(l) == Fraction(x)
        for v in (h, l):
            if v:
                assert (Fraction(v) / Fraction(2) ** (math.frexp(v)[1] - 26)).denominator == 1


def test_two_prod_and_two_sum_are_exact() -> None:
    a, b = _operands()
    p, e = two_prod(a, b)
    for x, y, pp, ee in zip(a, b, p, e, strict=True):
        assert Fraction(pp) + Fraction(ee) == Fraction(x) * Fraction(y)
    c = -b * 0.75
    s, e = two_sum(a, c)
    for x, y, ss, ee in zip(a, c, s, e, strict=True):
        assert Fraction(ss) + Fraction(ee) == Fraction(x) + Fraction(y)
