"""Error-free transformations of float64 arrays (Dekker 1971, Knuth): the exact rounding error
of a sum or product, as a second float64, using only IEEE-754 round-to-nearest operations (no
FMA, so numpy's separate ufunc calls give the same bits on every machine).

Validity in binary64:

- :func:`two_sum` is exact while none of its six operations overflows (underflow never
  makes it inexact);
- :func:`split` needs ``(2^27 + 1)·x`` to stay finite (``|x| < 2^1024 / (2^27 + 1)``, just
  under ``2^997``);
- :func:`two_prod` needs, besides the splits, no underflow in its partial products:
  ``floor(log2|a|) + floor(log2|b|) >= -970`` suffices (Boldo: ``e_a + e_b >= emin + p - 1``);
  below that ``e`` loses bits (``a = b = 2^-600`` gives ``p = e = 0``). It also needs ``ab``
  far enough from overflow that no partial product overflows (the f64 cores keep
  ``|ab| <= 2^1000``).
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
