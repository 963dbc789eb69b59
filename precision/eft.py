"""Error-free transformations of float64 arrays (Dekker 1971, Knuth): the exact rounding error
of a sum or product, as a second float64, using only IEEE-754 round-to-nearest operations (no
FMA, so numpy's separate ufunc calls give the same bits on every machine).

Valid while nothing overflows: the split multiplies by 2^27 + 1.
"""

from __future__ import annotations

import numpy as np

__all__ = ["split", "two_prod", "two_prod_split", "two_sum"]

_SPLITTER = float(2**27 + 1)  # Veltkamp split of a 53-bit significand into 26 + 26 bits


def split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp: x = hi + lo exactly, hi and lo of at most 26 significant bits each."""
    t = _SPLITTER * x
    hi = t - (t - x)
    return hi, x - hi


def two_prod_split(
    a: np.ndarray, b: np.ndarray, ah: np.ndarray, al: np.ndarray, bh: np.ndarray, bl: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Dekker: p = RN(ab), e = ab - p exactly (given pre-split a = ah + al, b = bh + bl)."""
    p = a * b
    e = al * bl - (((p - ah * bh) - al * bh) - ah * bl)
    return p, e


def two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker: p = RN(ab), e = ab - p exactly."""
    return two_prod_split(a, b, *split(a), *split(b))


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth/Møller: s = RN(a + b), e = a + b - s exactly (no branch on magnitudes)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e
