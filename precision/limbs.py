"""Exact integers held in 32-bit limbs: ``X = sum_t acc[t]·2^(32t)`` with one int64 array per
limb, numpy or CuPy, every element an independent integer. Carry propagation, bit lengths and
one correctly rounded conversion to a binary floating-point format.

The Ozaki emulators (:mod:`precision.gemm.ozaki`) form their CRT and slice sums in such limbs,
and the f64 tensor-core emulator (:mod:`precision.tensorcore.dmma`) its exact dot products;
both round them once with :func:`round_limbs`.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from precision.formats import get_format

#: Bits per limb, and the mask of a normalized (non-top) limb.
LIMB_BITS = 32
LIMB_MASK = (1 << LIMB_BITS) - 1


def array_module(x: Any) -> Any:
    """numpy, or cupy for a CuPy array (the integer steps below run unchanged on either)."""
    if type(x).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    return np


def normalize_limbs(acc: list[np.ndarray]) -> None:
    """Carry-propagate limbs in place: limbs 0..n-2 into [0, 2^32), the top limb signed."""
    for t in range(len(acc) - 1):
        carry = acc[t] >> LIMB_BITS  # arithmetic shift: floor division
        acc[t] &= LIMB_MASK
        acc[t + 1] += carry


def bitlen_u32(x: np.ndarray) -> np.ndarray:
    """Bit length of integers in [0, 2^32) (exact: they convert to float64 exactly)."""
    return array_module(x).frexp(x.astype(np.float64))[1].astype(np.int64)


def round_limbs(acc: list[np.ndarray], e: np.ndarray, target: str) -> np.ndarray:
    """``RN(X·2^e)`` in ``target`` (a binary format of :mod:`precision.formats`: "fp64",
    "fp32") for the signed integer ``X = sum_t acc[t]·2^(32t)``
    (normalized limbs) and int64 exponents ``e``; round to nearest even, gradual underflow,
    overflow to ±Inf. Integer steps only: the top 64 bits of |X| with every lower bit ORed into
    the last (round to odd, exact enough for any later rounding to <= 62 bits), then the
    rounding at precision ``min(p, bits above the subnormal grid)`` and an exact ``ldexp``."""
    p, emin_sub, dtype = format_params(target)
    xp = array_module(acc[0])
    nl = len(acc)
    neg = acc[-1] < 0
    mag = [xp.where(neg, -a, a) for a in acc]
    normalize_limbs(mag)
    bl = xp.zeros(mag[0].shape, dtype=np.int64)
    for t in range(nl):
        bl = xp.where(mag[t] != 0, LIMB_BITS * t + bitlen_u32(mag[t]), bl)
    r0 = xp.maximum(bl - 64, 0)
    window = xp.zeros(bl.shape, dtype=np.uint64)
    sticky = xp.zeros(bl.shape, dtype=bool)
    for t in range(nl):
        limb = mag[t].astype(np.uint64)
        sh = LIMB_BITS * t - r0
        left = xp.clip(sh, 0, 63).astype(np.uint64)
        right = xp.clip(-sh, 0, 63).astype(np.uint64)
        window |= xp.where(sh >= 0, xp.left_shift(limb, left), 0).astype(np.uint64)
        part = xp.where((sh < 0) & (sh > -LIMB_BITS), xp.right_shift(limb, right), 0)
        window |= part.astype(np.uint64)
        lost = xp.where(sh <= -LIMB_BITS, limb, limb & ((np.uint64(1) << right) - np.uint64(1)))
        sticky |= (sh < 0) & (lost != 0)
    window |= sticky.astype(np.uint64)
    base = r0 + e  # |X|·2^e ~ window·2^base
    blw = bl - r0
    r = xp.maximum(blw - p, emin_sub - base)
    rr = xp.clip(r, 1, 64).astype(np.uint64)
    rr1 = xp.clip(r - 1, 0, 63).astype(np.uint64)
    mant = xp.where(r >= 64, np.uint64(0), xp.right_shift(window, xp.minimum(rr, 63)))
    rem = xp.where(r >= 64, window, window & ((np.uint64(1) << xp.minimum(rr, 63)) - np.uint64(1)))
    half = xp.left_shift(np.uint64(1), rr1)
    up = (rem > half) | ((rem == half) & ((mant & np.uint64(1)) == 1))
    mant = xp.where(r > 0, mant + up.astype(np.uint64), window)
    mant = xp.where(r > 64, np.uint64(0), mant)
    with np.errstate(over="ignore"):
        out = xp.ldexp(mant.astype(np.float64), xp.where(r > 0, r + base, base))
        out = xp.where(neg, -out, out).astype(dtype)
    return out


@functools.cache
def format_params(target: str) -> tuple[int, int, Any]:
    """(precision p, exponent of the smallest subnormal, numpy scalar type) of ``target``."""
    f = get_format(target)
    return f.precision, f.emin - f.precision + 1, f.storage.type
