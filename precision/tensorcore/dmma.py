"""Exact CPU cores for the f64 tensor-core family (DMMA: ``mma.sync`` m8n8k4, m16n8k4/k8/k16).

Three candidate numerics, all in IEEE 754 binary64 with round-to-nearest-even (RN); the hardware
recordings decide which one DMMA follows:

- :func:`fma_chain` — a chain of fused multiply-adds, ``d <- RN(a_k b_k + d)`` one ``k`` at a time
  (PTX ISA, ``mma`` "Precision and rounding": ``.f64`` is identical to an ``.f64`` FMA. Only
  ``.rn`` is modelled here, not the ``.rz/.rm/.rp`` modifiers);
- :func:`dot_rn` — the exact sum of all products and ``c``, rounded once;
- :func:`dot_pairwise` — products rounded, summed by a pairwise tree, each addition rounded, then
  ``c`` added (the cheapest non-fused hypothesis).

:func:`fma` is the vectorised, correctly rounded binary64 FMA they rest on. Its fast path is the
algorithm of Boldo & Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms
using rounding to odd", IEEE Trans. Computers 57(4), 2008 (their emulated FMA)::

    (uh, ul) = ExactMult(a, b)      # Dekker product with Veltkamp splitting: uh + ul = a b exactly
    (th, tl) = TwoSum(c, uh)        # Knuth/Møller: th + tl = c + uh exactly
    v = RO(tl + ul)                 # addition rounded to odd
    z = RN(th + v)                  # = RN(a b + c)

It is proved for precision p >= 5 without underflow or overflow. Elements where a precondition
can fail (|a| or |b| >= 2^995 so the split overflows, subnormal a or b, |RN(ab)| outside
[2^-900, 2^1000] so the Dekker low part could underflow, |c| > 2^1000, |z| < 2^-900) take an exact
slow path, vectorised like the fast one (``_fma_scaled``): with a = fa 2^ea, b = fb 2^eb (frexp,
exact for subnormals too), the same algorithm runs on fa, fb and c scaled by 2^-(ea + eb), where
its preconditions hold (a c too far above or below the product is replaced by one of the same
sign at 60 or 110 bits' distance, which rounds the same in every grid). One rounding there,
RN(X'), then one into binary64's range: scaled back exactly by ldexp where the result is normal
(±Inf from |X| >= 2^1024 - 2^970 on), and for subnormal results rounded to the 2^-1074 grid
from RN(X') and the sign of X' - RN(X') (an exact by-product of the algorithm), which decides
exactly the ties that a second rounding would get wrong. Specials follow IEEE 754: any NaN
operand or Inf·0 or Inf - Inf gives NaN (NumPy's default quiet NaN), an exact zero sum is +0
unless both addends are -0 (the sign of a zero product is sign(a) xor sign(b)); a result that
underflows to zero keeps the exact result's sign. Inputs scaled by 1e-140 (every element on
this path): a 256^3 ``mma`` in about 1.5 s against 224 s for the Python-int loop it replaced
(2026-11-28, 2-core machine; 0.21-0.26 s for U(-1, 1) inputs).

:func:`fma_chain` adds two shortcuts, both bit-identical to the algorithm above: where every a_k
and b_k of a tile has at most 26 significant bits (fp32-converted data) the product is exact and
the FMA is one binary64 addition; otherwise ``z' = RN(th + RN(tl + ul))`` is used unless
``th + RN(tl + ul)`` is exactly a midpoint (tested through its Fast2Sum error, see
``_fma_inplace``), the only case in which round-to-odd changes the result. Its memory is a few
tiles of the output (2^17 elements each) and, per tile, a block of a and b of at most 2^18
elements copied, split and flagged at a time: about 10 MiB beyond the output for 1 x 16384 x
4096 (1664 MiB before 2026-11-28, when it kept full-size copies of both operands).

:func:`dot_rn` forms each exact sum in 32-bit integer limbs (int64), vectorised over output
elements, and rounds it once (``_exact_dot``, :mod:`precision.limbs`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from precision.eft import split as _split
from precision.eft import two_prod_split as _two_prod
from precision.eft import two_sum as _two_sum
from precision.limbs import normalize_limbs, round_limbs
from precision.tensorcore.batch import BatchEntries, flat_batch
from precision.threads import in_threads, thread_count

__all__ = ["dot_pairwise", "dot_rn", "fma", "fma_chain"]

_MAX_SPLIT = 2.0**995  # C·x must not overflow
_MIN_NORMAL = 2.0**-1022
_PROD_LO = 2.0**-900  # |RN(ab)| >= this: Dekker partial products and the low part are exact
_BIG = 2.0**1000  # |c|, |RN(ab)| <= this: no intermediate overflows
_CHUNK_ELEMENTS = 1 << 22
_MANT_MASK = np.int64((1 << 52) - 1)  # binary64 significand field
_BOUND_UP = 1.0 + 2.0**-50  # covers the roundings of an upper bound's sum and product
# fma_chain: output elements per tile (its ~20 float64 temporaries, about 20 MiB per thread)
# and the work below which threads do not pay. Smaller tiles left two threads waiting on each
# other's hold of the GIL: a 1024^3 chain took 9.7-10.5 s on 2 cores with tiles of 2^15, 6.5-7.3
# s with 2^17 and 7.8-8.5 s with 2^18 (one thread: 11-12 s either way), with the same bits.
_FMA_TILE_ELEMENTS = 1 << 17
_MIN_THREADED_FMAS = 1 << 20  # [rows, K, N] temporaries of dot_rn / dot_pairwise per chunk
# fma_chain: elements of a and b a tile copies, splits and flags at a time (a block of
# consecutive k; five float64-sized arrays of it, about 10 MiB per thread).
_FMA_BLOCK_ELEMENTS = 1 << 18


# ----------------------------------------------------------------------------- error-free parts


def _add_round_odd(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """RO(x + y): x + y rounded to the neighbour with an odd significand when inexact.

    From s = RN(x + y) and the exact error e: round toward zero is s, or its neighbour towards
    zero when e and s have opposite signs (one less in the int64 encoding, whose magnitude field
    is monotone across binades); round to odd then sets the last bit when e != 0.
    """
    s, e = _two_sum(x, y)
    inexact = e != 0
    bits = s.view(np.int64) - ((np.signbit(s) != np.signbit(e)) & inexact)
    bits |= inexact
    return bits.view(np.float64)


# ----------------------------------------------------------------------------- exact slow path


def _fma_scaled(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """RN(ab + c) for finite a, b, c with ab != 0 (broadcast together), vectorised, any exponents.

    Exact power-of-two rescaling into the range where the Boldo-Melquiond FMA is proved, one
    rounding there, then one rounding into binary64's range (docs/integer_f64.md, "Exact slow
    path"). With a = fa 2^ea, b = fb 2^eb, c = fc 2^ec (frexp: |f| in [1/2, 1), subnormals
    included) and E = ea + eb, the scaled problem is X' = fa fb + c' with X = X' 2^T:

    - c' = fc 2^(ec - E), T = E, while -110 <= ec - E <= 60 (exact: a normal double);
    - ec - E < -110: c' = fc 2^-110 (T = E). fa fb is a multiple of V = 2^-106, so are the
      rounding boundaries near X' (|X'| > 1/8) and RN(X'), and both the true c' and this one
      lie in (0, V) with c's sign: X' stays in the same open interval between multiples of V,
      with the same rounding in every grid and the same sign of X' - RN(X');
    - ec - E > 60: c' = fc 2^60, T = ec - 60, and the product keeps fa fb (not fa fb 2^(E-T)):
      c' is a multiple of 2^7, the boundaries near X' (|X'| > 2^58) of 2^5, and both products
      lie in (0, 2^5) with their sign: the same argument.

    In the scaled domain fa, fb are normal, |fa fb| >= 1/4, |c'| < 2^60 and a non-zero X' is a
    multiple of 2^-163, so z = RN(th + RO(tl + ul)) = RN(X') (Boldo-Melquiond) holds. Its
    residual sign, sign(X' - z), is that of f = th + v - z (TwoSum) where f != 0, else that
    of g = tl + ul - v (v = RO(tl + ul); f is then a non-zero multiple of ulp(v) > |g|).

    The result: z 2^T where |z| 2^T >= 2^-1022 (RN commutes with the scaling; ldexp gives
    ±Inf exactly when RN without exponent bound reaches 2^1024, i.e. |X| >= 2^1024 - 2^970).
    Below that, the result is X rounded to a multiple of 2^-1074: k = |z| 2^(T + 1074) < 2^52,
    where the 53-bit grid is at least as fine as half that spacing, so RN(X) = RN-int(k)
    unless k is exactly a half-integer, where the residual sign decides (ties to even where
    it is 0). No intermediate step rounds twice.
    """
    with np.errstate(all="ignore"):
        fa, ea = np.frexp(a)
        fb, eb = np.frexp(b)
        fc, ec = np.frexp(c)  # c = 0: fc = ±0, and c' = ±0 whatever the shift
        e = ea.astype(np.int64) + eb
        dc = ec - e
        big_c = (dc > 60) & (c != 0)
        t = np.where(big_c, ec - 60, e)
        cs = np.ldexp(fc, np.clip(dc, -110, 60))
        uh, ul = _two_prod(fa, fb, *_split(fa), *_split(fb))
        th, tl = _two_sum(cs, uh)
        s, err = _two_sum(tl, ul)
        inexact = err != 0  # v = RO(tl + ul), as in _add_round_odd
        vb = s.view(np.int64) - ((np.signbit(s) != np.signbit(err)) & inexact)
        v = (vb | inexact).view(np.float64)
        z, f = _two_sum(th, v)
        # sign(X' - z): f's, else g's = (s - v)'s where v != s, else err's (v = s + err
        # rounded to odd: s itself when s is odd, else the neighbour on err's side).
        gap = s - v
        res = np.sign(np.where(f != 0, f, np.where(gap != 0, gap, err)))
        _, ez = np.frexp(z)
        normal = (ez + t >= -1021) | (z == 0)
        out = np.ldexp(z, t)
        sub = np.flatnonzero(~normal)
        if sub.size:
            zs, rs = z.ravel()[sub], res.ravel()[sub]
            ts = np.broadcast_to(t, z.shape).ravel()[sub]
            k = np.ldexp(np.abs(zs), np.maximum(ts + 1074, -1100))  # (< 1/2 if inexact)
            whole = np.floor(k)
            frac = k - whole
            odd = np.fmod(whole, 2.0) == 1
            away = rs * np.sign(zs)  # > 0: the exact |X'| is above |z|
            up = (frac > 0.5) | ((frac == 0.5) & ((away > 0) | ((away == 0) & odd)))
            out.ravel()[sub] = np.copysign(np.ldexp(whole + up, -1074), zs)
    return out


def _fix_elements(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Exact RN(ab + c) on 1-D arrays of elements the fast path may get wrong (all vectorised)."""
    fin = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    zp = (a == 0) | (b == 0)
    if fin.all() and not zp.any():
        return _fma_scaled(a, b, c)
    out = np.empty(a.shape, dtype=np.float64)
    with np.errstate(all="ignore"):
        # Specials: with a, b finite the exact product is finite, so the result is c (Inf/NaN);
        # otherwise a·b is already the exact IEEE product (Inf, NaN for Inf·0) and +c is exact.
        sp = ~fin
        ab_fin = np.isfinite(a[sp]) & np.isfinite(b[sp])
        out[sp] = np.where(ab_fin, c[sp], a[sp] * b[sp] + c[sp])
        # Zero product: a·b is the correctly signed zero; c + (±0) follows IEEE zero-sum rules.
        zp &= fin
        out[zp] = c[zp] + a[zp] * b[zp]
    rest = np.flatnonzero(fin & ~zp)
    if rest.size:
        out[rest] = _fma_scaled(a[rest], b[rest], c[rest])
    return out


# ----------------------------------------------------------------------------- public API


def _fast_fma(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    asplit: tuple[np.ndarray, np.ndarray],
    bsplit: tuple[np.ndarray, np.ndarray],
    aok: np.ndarray,
    bok: np.ndarray,
) -> np.ndarray:
    """Boldo-Melquiond FMA on broadcast operands, then exact repair of flagged elements (all
    of them by the exact path, without the fast one, where no operand pair is in its range)."""
    with np.errstate(all="ignore"):
        # the preconditions on the operands (NaN fails every comparison): where no element
        # meets them, the fast attempt is skipped; elsewhere they are half of `good` below
        au = np.abs(a * b)
        pre = (au >= _PROD_LO) & (au <= _BIG) & (np.abs(c) <= _BIG)
        pre &= aok
        pre &= bok
        del au
    if not pre.any():
        shape = pre.shape
        if all(np.isfinite(x).all() and x.all() for x in (a, b)) and np.isfinite(c).all():
            return _fma_scaled(a, b, c)  # (frexp and splits at a's and b's own shapes)
        return _fix_elements(*(np.broadcast_to(x, shape).ravel() for x in (a, b, c))).reshape(shape)
    with np.errstate(all="ignore"):
        uh, ul = _two_prod(a, b, asplit[0], asplit[1], bsplit[0], bsplit[1])
        th, tl = _two_sum(c, uh)
        z = th + _add_round_odd(tl, ul)
        az = np.abs(z)
        if z.size and pre.all() and az.min() >= _PROD_LO:
            return z  # whole array inside the proved range
        good = pre & (az >= _PROD_LO)
    bad = ~good  # NaN comparisons are False, so every special lands here
    if bad.any():
        shape = bad.shape
        z = np.broadcast_to(z, shape).copy()
        z[bad] = _fix_elements(
            np.broadcast_to(a, shape)[bad],
            np.broadcast_to(b, shape)[bad],
            np.broadcast_to(c, shape)[bad],
        )
    return z


class _Workspace:
    """Preallocated float64 / bool temporaries of one fma_chain tile (no per-step allocation)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.f = [np.empty(shape, dtype=np.float64) for _ in range(7)]
        self.b = [np.empty(shape, dtype=bool) for _ in range(2)]

    def swap(self, old: np.ndarray, new: np.ndarray) -> None:
        """Buffer ``new`` becomes the accumulator; ``old`` returns to the pool in its place."""
        for i, buf in enumerate(self.f):
            if buf is new:
                self.f[i] = old
                return
        raise AssertionError("swap: result buffer not in the workspace")


def _fma_inplace(
    a: np.ndarray,
    b: np.ndarray,
    ah: np.ndarray,
    al: np.ndarray,
    bh: np.ndarray,
    bl: np.ndarray,
    c: np.ndarray,
    ws: _Workspace,
) -> np.ndarray | None:
    """Boldo-Melquiond FMA of a column a [r,1] and row b [1,N] into c [r,N], in workspace buffers.

    The caller has checked the operands (normal, below the split bound), the product range
    (2^-900 <= |RN(ab)| <= 2^1000, from the column/row extremes) and |c| <= 2^1000. Returns
    the result buffer (one of ``ws.f``), or None when the round-to-odd path was needed and some
    |result| < 2^-900 (its remaining precondition; nothing of ``c`` is modified, the caller
    repairs with the masked path).
    """
    p, t1, t2, t3, t4, t5, t6 = ws.f
    inexact, opp = ws.b
    with np.errstate(all="ignore"):
        np.multiply(a, b, out=p)  # uh = RN(ab)
        np.multiply(ah, bh, out=t1)
        np.subtract(p, t1, out=t1)
        np.multiply(al, bh, out=t2)
        np.subtract(t1, t2, out=t1)
        np.multiply(ah, bl, out=t2)
        np.subtract(t1, t2, out=t1)
        np.multiply(al, bl, out=t2)
        np.subtract(t2, t1, out=t1)  # ul = ab - uh exactly
        np.add(c, p, out=t2)  # th = RN(c + uh)
        np.subtract(t2, c, out=t3)  # bb
        np.subtract(t2, t3, out=t4)
        np.subtract(c, t4, out=t4)
        np.subtract(p, t3, out=t3)
        np.add(t4, t3, out=t3)  # tl = c + uh - th exactly
        # Common case: z' = RN(th + RN(tl + ul)) already equals RN(ab + c). Let s = RN(tl + ul),
        # e = tl + ul - s, y = th + s (exact). If e != 0 then tl != 0, so c + uh was not exact
        # (no Sterbenz cancellation), |th| >= |uh|/2 and |s| <= 1.5 ulp(th) <= |th|: Fast2Sum
        # gives r = y - z' exactly. y and every rounding boundary (midpoint) near th are
        # multiples of ulp(s) while |e| <= ulp(s)/2, so no boundary lies strictly between y and
        # y + e: z' can differ from RN(y + e) only when y itself is a midpoint, i.e. r = ±ulp(z')/2
        # (±ulp(z')/4 below a power of two), a power of two (normal: see below). If no
        # element has r = ±2^j (zero significand field, r != 0), z' is exact; else (or when the
        # preconditions fail) the round-to-odd path below decides.
        np.add(t3, t1, out=t4)  # s = RN(tl + ul)
        np.add(t2, t4, out=t5)  # z' = RN(th + s)
        np.subtract(t5, t2, out=t6)
        np.subtract(t4, t6, out=t6)  # r = th + s - z' (exact where it matters)
        rm = p.view(np.int64)
        np.bitwise_and(t6.view(np.int64), _MANT_MASK, out=rm)
        # (This needs no bound on |z'|: e != 0 gives |th| >= |uh|/2 >= 2^-901, so the midpoints
        # near th and hence r are normal; e = 0 makes z' exact outright.)
        if rm.min() != 0 or not (np.equal(rm, 0, out=inexact) & np.not_equal(t6, 0, out=opp)).any():
            return t5
        # Round to odd (Boldo-Melquiond): z = RN(th + RO(tl + ul)).
        np.subtract(t4, t3, out=t5)
        np.subtract(t4, t5, out=t6)
        np.subtract(t3, t6, out=t6)
        np.subtract(t1, t5, out=t5)
        np.add(t6, t5, out=t5)  # e = tl + ul - s exactly
        sb = t4.view(np.int64)
        np.not_equal(t5, 0, out=inexact)
        np.bitwise_xor(sb, t5.view(np.int64), out=t3.view(np.int64))
        np.less(t3.view(np.int64), 0, out=opp)
        np.logical_and(opp, inexact, out=opp)
        np.subtract(sb, opp, out=sb, casting="unsafe")
        np.bitwise_or(sb, inexact, out=sb, casting="unsafe")  # v = RO(tl + ul)
        np.add(t2, t4, out=t1)  # z = RN(th + v)
        np.abs(t1, out=t6)
        if t6.min() >= _PROD_LO:  # NaN fails
            return t1
    return None


def _operand_ok(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    return (ax >= _MIN_NORMAL) & (ax < _MAX_SPLIT)


def fma(a: np.ndarray | float, b: np.ndarray | float, c: np.ndarray | float) -> np.ndarray:
    """IEEE 754 binary64 fused multiply-add ``RN(a·b + c)`` with a single rounding, elementwise.

    Correct for every input: normal and subnormal operands and results, signed zeros, overflow to
    ±Inf, Inf and NaN (IEEE 754-2019 §6: Inf·0 = NaN, Inf - Inf = NaN, NaN operands give NaN).
    Inputs broadcast and are converted to float64; returns a float64 array of the broadcast shape.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    shape = np.broadcast_shapes(a.shape, b.shape, c.shape)
    a, b, c = (np.broadcast_to(x, shape).ravel() for x in (a, b, c))
    with np.errstate(all="ignore"):
        asplit, bsplit = _split(a), _split(b)
        aok, bok = _operand_ok(a), _operand_ok(b)
    return _fast_fma(a, b, c, asplit, bsplit, aok, bok).reshape(shape)


def _chain_operands(a, b, c, name: str):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    if a.ndim < 2 or b.ndim < 2 or c.ndim < 2:
        raise ValueError(f"{name}: a, b, c need >= 2 dims, got {a.shape}, {b.shape}, {c.shape}")
    m, k = a.shape[-2:]
    k2, n = b.shape[-2:]
    if k != k2 or c.shape[-2:] != (m, n):
        raise ValueError(
            f"{name}: shapes do not chain: a {a.shape}, b {b.shape}, c {c.shape} "
            f"(expected a [..., M, K], b [..., K, N], c [..., M, N])"
        )
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2], c.shape[:-2])
    return a, b, c, batch, (m, k, n)


def fma_chain(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    *,
    order: Literal["increasing", "decreasing"] | Sequence[int] = "increasing",
) -> np.ndarray:
    """Chain of binary64 FMAs: ``d = c``; for each ``k`` in ``order``, ``d = RN(a_k b_k + d)``.

    a ``[..., M, K]``, b ``[..., K, N]``, c ``[..., M, N]`` (converted to float64; batch axes
    broadcast). ``order`` is ``"increasing"`` (k = 0, 1, ..., K-1), ``"decreasing"`` or an explicit
    sequence of k indices (each used once per listed occurrence). Returns float64 ``[..., M, N]``.
    Vectorised over tiles of the output (batch entries x rows x columns, at most 2^17
    elements); a loop over K per tile, which copies, splits (Veltkamp) and flags its part of a
    and b one block of k at a time, so that memory does not grow with the operands.
    Per tile and k, the preconditions of the fast path are tested on the column/row extremes;
    where every a_k and b_k of the tile has at most 26 significant bits (values converted from
    fp32 and narrower) and RN(ab) lies in [2^-900, 2^1000], the product is exact and the FMA is
    one IEEE binary64 addition ``RN(c + ab)``, bit-identical to the general path.
    """
    a, b, c, batch, (m, k, n) = _chain_operands(a, b, c, "fma_chain")
    if isinstance(order, str):
        if order not in ("increasing", "decreasing"):
            raise ValueError(
                f"fma_chain: order must be 'increasing', 'decreasing' or indices, got {order!r}"
            )
        ks: Sequence[int] = range(k) if order == "increasing" else range(k - 1, -1, -1)
    else:
        ks = [int(x) for x in order]
        if any(x < 0 or x >= k for x in ks):
            raise ValueError(f"fma_chain: order indices must lie in [0, {k}), got {list(ks)}")
    # a as [Ra, M, K] and b as [Rb, K, N] over their own batch entries (broadcast batch axes
    # are not materialised: output entry e reads a entry ia[e] and b entry ib[e]). Each tile
    # (entries x rows x columns of the output) copies, splits and flags the part of a and b it
    # reads, a block of consecutive k at a time: memory is a few tiles, whatever the operands.
    a3, ia = flat_batch(a, batch)
    b3, ib = flat_batch(b, batch)
    d = np.broadcast_to(c, batch + (m, n)).reshape(math.prod(batch), m, n).copy()
    if d.size == 0:
        return d.reshape(batch + (m, n))
    cols = min(n, _FMA_TILE_ELEMENTS)
    rows = max(1, _FMA_TILE_ELEMENTS // cols)
    # Small outputs: a tile takes several batch entries (all their rows), so that a large batch
    # of small products is not one tile, and one Python loop over K, per entry.
    group = max(1, rows // m) if rows >= m else 1

    def tile(e0: int, r0: int, c0: int) -> None:
        e1, r1, c1 = min(d.shape[0], e0 + group), min(m, r0 + rows), min(n, c0 + cols)
        ea, eb = _entries(ia, e0, e1), _entries(ib, e0, e1)
        dd = d[e0:e1, r0:r1, c0:c1].copy()
        ws = _Workspace(dd.shape)
        per_k = _count(ea) * (r1 - r0) + _count(eb) * (c1 - c0)
        step = max(1, _FMA_BLOCK_ELEMENTS // per_k)
        # cmax >= max |c| (NaN when c holds a NaN: every test below then fails).
        with np.errstate(all="ignore"):
            cmax = float(np.abs(dd).max(initial=0.0))
        for p0 in range(0, len(ks), step):
            kb = ks[p0 : p0 + step]
            # this block of a as [Ea, k, rows] (column k contiguous) and b as [Eb, k, cols]
            at = np.ascontiguousarray(_block(a3, ea, slice(r0, r1), kb, 2).transpose(0, 2, 1))
            bt = np.ascontiguousarray(_block(b3, eb, slice(c0, c1), kb, 1))
            with np.errstate(all="ignore"):
                ah, al = _split(at)
                bh, bl = _split(bt)
                aok, bok = _operand_ok(at), _operand_ok(bt)
            fast, exact, pmax = _block_flags(at, bt, al, bl, aok, bok)
            for j in range(len(kb)):
                col = (slice(None), j, slice(None), None)  # [entries, rows, 1]
                row = (slice(None), slice(j, j + 1))  # [entries, 1, cols]
                if fast[j] and cmax > _BIG:
                    with np.errstate(all="ignore"):
                        cmax = float(np.abs(dd).max(initial=0.0))  # the bound may be loose
                if exact[j] and cmax <= _BIG:
                    # Exact product and finite c: RN(ab + c) is one binary64 addition (IEEE
                    # RN, subnormal sums included); |RN(c + ab)| <= RN(cmax + pmax) by
                    # monotonicity.
                    z = ws.f[0]
                    np.multiply(at[col], bt[row], out=z)
                    np.add(dd, z, out=z)
                    ws.swap(dd, z)
                    dd = z
                    cmax += pmax[j]
                    continue
                res = None
                if fast[j] and cmax <= _BIG:
                    res = _fma_inplace(at[col], bt[row], ah[col], al[col], bh[row], bl[row], dd, ws)
                if res is None:  # specials or out-of-range elements in this tile: masked repair
                    dd[...] = _fast_fma(
                        at[col], bt[row], dd, (ah[col], al[col]), (bh[row], bl[row]), aok[col],
                        bok[row],
                    )  # fmt: skip
                    with np.errstate(all="ignore"):
                        cmax = float(np.abs(dd).max(initial=0.0))
                else:
                    z = res
                    # |RN(c + ab)| <= RN(max|c| + max|a| max|b|); pmax is that product rounded.
                    cmax = (cmax + pmax[j]) * _BOUND_UP
                    ws.swap(dd, z)
                    dd = z
        d[e0:e1, r0:r1, c0:c1] = dd

    jobs = [
        (e0, r0, c0)
        for e0 in range(0, d.shape[0], group)
        for r0 in range(0, m, rows)
        for c0 in range(0, n, cols)
    ]
    workers = min(len(jobs), thread_count())  # (OMP_NUM_THREADS: a Dask worker's share)
    if workers > 1 and d.size * len(ks) >= _MIN_THREADED_FMAS:
        # NumPy releases the GIL inside its loops: cache-sized tiles run in parallel.
        in_threads(lambda j: tile(*j), jobs, workers)
    else:
        for j in jobs:
            tile(*j)
    return d.reshape(batch + (m, n))


def _block_flags(
    at: np.ndarray,
    bt: np.ndarray,
    al: np.ndarray,
    bl: np.ndarray,
    aok: np.ndarray,
    bok: np.ndarray,
) -> tuple[list[bool], list[bool], list[float]]:
    """Per k of a tile's block, a ``[Ea, k, rows]`` and b ``[Eb, k, cols]`` (entries paired,
    or one of them a single broadcast entry), given their Veltkamp low parts ``al``, ``bl``
    and operand flags ``aok``, ``bok`` (:func:`_operand_ok`): (Boldo-Melquiond preconditions
    on a, b and RN(ab) hold, the product ab is exact in binary64, an upper bound of |RN(ab)|).
    Per entry, min |RN(a_i b_j)| = RN(min|a| min|b|) and likewise for the max (an outer
    product; RN is monotone), so the range test on the extremes equals the elementwise one."""
    with np.errstate(all="ignore"):
        aabs, babs = np.abs(at), np.abs(bt)
        amin, amax = aabs.min(axis=2, initial=np.inf), aabs.max(axis=2, initial=0.0)
        bmin, bmax = babs.min(axis=2, initial=np.inf), babs.max(axis=2, initial=0.0)
        del aabs, babs
        pmin, pmax = (amin * bmin).min(axis=0), (amax * bmax).max(axis=0)
        fast = aok.all(axis=(0, 2)) & bok.all(axis=(0, 2))
        fast &= (pmin >= _PROD_LO) & (pmax <= _BIG)
        # a_k, b_k of <= 26 bits each: ab has <= 52 bits and |ab| >= 2^-900, so RN(ab) = ab.
        short = (al == 0).all(axis=(0, 2)) & (bl == 0).all(axis=(0, 2))
    return fast.tolist(), (fast & short).tolist(), pmax.tolist()


def _count(e: Any) -> int:
    """How many entries :func:`_entries` selected (a slice or an index array)."""
    return e.stop - e.start if isinstance(e, slice) else len(e)


def _block(x3: np.ndarray, e: Any, part: slice, kb: Sequence[int], k_axis: int) -> np.ndarray:
    """``x3[e]`` restricted to ``part`` on its non-k axis and to the k indices ``kb`` on axis
    ``k_axis`` (1 or 2), gathering only that block (views where ``e`` and ``kb`` are runs)."""
    ks = _as_run(kb)
    if isinstance(e, slice) and ks is not None:
        return x3[e, part, ks] if k_axis == 2 else x3[e, ks, part]
    ei = np.arange(e.start, e.stop) if isinstance(e, slice) else np.asarray(e)
    pi = np.arange(part.start, part.stop)
    ki = np.asarray(kb, dtype=np.intp)
    return x3[np.ix_(ei, pi, ki)] if k_axis == 2 else x3[np.ix_(ei, ki, pi)]


def _as_run(kb: Sequence[int]) -> slice | None:
    """``kb`` as a slice where it is a range of step 1 or -1, else None."""
    if isinstance(kb, range) and kb.step in (1, -1) and len(kb):
        stop = kb.stop if kb.stop >= 0 else None
        return slice(kb.start, stop, kb.step)
    return None


def _entries(idx: BatchEntries, e0: int, e1: int) -> Any:
    """The entries ``idx[e0:e1]`` of an operand as an index along its axis 0: a slice of one
    entry when they are all one (a broadcast operand: broadcasting does the rest) or a slice
    of a run, else the index array."""
    sel = idx[e0:e1]
    i0 = int(sel[0])
    if (sel == i0).all():
        return slice(i0, i0 + 1)
    if (np.diff(sel) == 1).all():
        return slice(i0, i0 + sel.size)
    return sel


def dot_rn(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Exact ``c + sum_k a_k b_k`` rounded once to binary64 (RN-even), for every output element.

    a ``[..., M, K]``, b ``[..., K, N]``, c ``[..., M, N]`` (batch axes broadcast). The sum is
    formed exactly in integer limbs and rounded once, subnormal results and overflow to ±Inf
    included (:func:`_exact_dot`); vectorised over chunks of output elements (each gathers
    its row of a and column of b, at most about 2^20 elements of each). Elements with a
    non-finite input follow IEEE 754 (NaN for a NaN input, Inf·0 or Inf - Inf, else the
    Inf). An exact zero is -0 only if c and all products are -0.
    """
    a, b, c, batch, (m, k, n) = _chain_operands(a, b, c, "dot_rn")
    (a3, ia), (b3, ib), (c3, ic) = (flat_batch(x, batch) for x in (a, b, c))
    out = np.empty(math.prod(batch) * m * n, dtype=np.float64)
    per = max(1, _DOT_GATHER_ELEMENTS // max(1, k))
    for s0 in range(0, out.size, per):
        e, rest = np.divmod(np.arange(s0, min(out.size, s0 + per)), m * n)
        i, j = np.divmod(rest, n)
        # this chunk's rows of a and columns of b, [elements, K]
        out[s0 : s0 + per] = _dot_rn_elements(a3[ia[e], i, :], b3[ib[e], :, j], c3[ic[e], i, j])
    return out.reshape(batch + (m, n))


def _dot_rn_elements(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """dot_rn of elements: a, b ``[n, K]``, c ``[n]``."""
    with np.errstate(all="ignore"):
        fin_ab = np.isfinite(a) & np.isfinite(b)
        finite = fin_ab.all(axis=1) & np.isfinite(c)
        # IEEE specials: a NaN, Inf·0 or Inf - Inf gives NaN, otherwise the Inf
        out = np.where(finite, 0.0, np.where(fin_ab, 0.0, a * b).sum(axis=1))
        out += np.where(np.isfinite(c), 0.0, c)
    rows = np.flatnonzero(finite)
    if rows.size:
        val, zero = _exact_dot(a[rows], b[rows], c[rows])
        pz = (a[rows] == 0) | (b[rows] == 0)
        negz = (pz & (np.signbit(a[rows]) ^ np.signbit(b[rows]))).all(axis=1)
        negz &= (c[rows] == 0) & np.signbit(c[rows])
        out[rows] = np.where(zero, np.where(negz, -0.0, 0.0), val)
    return out


_M32 = np.int64(0xFFFFFFFF)
# _exact_dot: k per bincount (its float64 bin sums, of at most 3k + 1 pieces below 2^33, stay
# exact integers) and the elements x (9 K + limbs) of one chunk (about 16 MiB of pieces).
_DOT_TERMS = 1 << 12
_DOT_ELEMENTS = 1 << 20
_DOT_GATHER_ELEMENTS = 1 << 20  # dot_rn: elements of a and of b gathered per chunk (8 MiB)


def _int_parts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Finite binary64 ``x`` as |x| = m 2^q: int64 significand m < 2^53 and exponent q."""
    bits = np.ascontiguousarray(x).view(np.int64) & np.int64(0x7FFFFFFFFFFFFFFF)
    e = bits >> 52
    m = bits & _MANT_MASK
    return np.where(e > 0, m | np.int64(1 << 52), m), np.maximum(e, 1) - 1075


def _pieces(
    v: np.ndarray, pos: np.ndarray, col: np.ndarray, n: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """v 2^pos (0 <= v < 2^54, pos >= 0) as (flat index limb * n + col, value < 2^33) of the
    three 32-bit limbs it touches."""
    li, sh = pos >> 5, pos & 31
    x = (v & _M32) << sh  # < 2^63
    y = (v >> 32) << sh  # < 2^54
    return [
        (li * n + col, x & _M32),
        ((li + 1) * n + col, (x >> 32) + (y & _M32)),
        ((li + 2) * n + col, y >> 32),
    ]


def _exact_dot(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(RN(c + sum_k a_k b_k), whether that exact sum is 0) for finite a, b ``[n, K]``, c ``[n]``.

    Exact integer arithmetic, vectorised over the elements (a loop over chunks of them and over
    blocks of 4096 k): each element's sum is a signed integer times 2^base (base 64 bits below
    its lowest non-zero term) in 32-bit limbs held in int64. A product m_a m_b 2^(q_a + q_b)
    (|x| = m 2^q, m < 2^53) enters as three exact partial products below 2^54 (significands
    split 27 + 26 bits), each added to three limbs. After carry propagation the integer is
    rounded once by :func:`precision.limbs.round_limbs` (the Ozaki emulators' rounding), RN-even:
    subnormal results round once to the 2^-1074 grid, and a result that rounds to 2^1024 or
    more is ±Inf.
    Exact for K < 2^28 (the int64 limbs take 2^16 blocks of sums below 2^47).
    """
    n, k = a.shape
    val = np.zeros(n)
    zero = np.ones(n, dtype=bool)
    per = max(1, _DOT_ELEMENTS // (9 * min(k, _DOT_TERMS) + 160))
    for s0 in range(0, n, per):
        sl = slice(s0, s0 + per)
        val[sl], zero[sl] = _exact_dot_chunk(a[sl], b[sl], c[sl])
    return val, zero


def _exact_dot_chunk(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, k = a.shape
    ma, qa = _int_parts(a)
    mb, qb = _int_parts(b)
    mc, qc = _int_parts(c)
    qp = qa + qb
    live = (ma != 0) & (mb != 0)
    far = np.int64(1 << 20)
    lo = np.minimum(np.where(live, qp, far).min(axis=1, initial=far), np.where(mc != 0, qc, far))
    hi = np.maximum(
        np.where(live, qp + 106, -far).max(axis=1, initial=-far), np.where(mc != 0, qc + 53, -far)
    )
    base = np.where(lo < far, lo - 64, 0)
    span = int(np.where(lo < far, hi - base, 0).max(initial=0))
    # limbs: the span of the terms and the carries of 3K + 1 partials, then one sign limb
    limbs = -(-(span + (3 * k + 1).bit_length()) // 32) + 1
    acc = np.zeros((limbs, n), dtype=np.int64)
    col = np.arange(n)
    half = np.int64((1 << 26) - 1)
    ah, al, bh, bl = ma >> 26, ma & half, mb >> 26, mb & half
    sign_c = np.where(np.signbit(c), -1.0, 1.0) * (mc != 0)
    _accumulate(acc, [(mc, np.where(mc != 0, qc - base, 0), sign_c)], col)
    for k0 in range(0, k, _DOT_TERMS):
        ks = slice(k0, k0 + _DOT_TERMS)
        sign = np.where(np.signbit(a[:, ks]) ^ np.signbit(b[:, ks]), -1.0, 1.0) * live[:, ks]
        pos = np.where(live[:, ks], qp[:, ks] - base[:, None], 0)
        parts = [
            (ah[:, ks] * bh[:, ks], pos + 52, sign),
            (ah[:, ks] * bl[:, ks] + al[:, ks] * bh[:, ks], pos + 26, sign),
            (al[:, ks] * bl[:, ks], pos, sign),
        ]
        _accumulate(acc, parts, col[:, None])
    rows = list(acc)  # (views: the carries land in acc)
    normalize_limbs(rows)
    return round_limbs(rows, base, "fp64"), ~(acc != 0).any(axis=0)


def _accumulate(
    acc: np.ndarray, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], col: np.ndarray
) -> None:
    """acc[limbs, n] += sum of sign v 2^pos over ``parts`` (v < 2^54, pos >= 0). One bincount:
    a bin (limb, column) sums at most one piece below 2^33 per part and k, so its float64 sum
    of at most 3 x 4096 pieces is an exact integer below 2^47."""
    idx, w = [], []
    for v, pos, sign in parts:
        for fi, piece in _pieces(v, pos, col, acc.shape[1]):
            idx.append(fi.ravel())
            w.append((piece * sign).ravel())
    sums = np.bincount(np.concatenate(idx), np.concatenate(w), acc.size)
    acc += sums.reshape(acc.shape).astype(np.int64)


def dot_pairwise(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Products rounded to binary64, summed by a pairwise tree, then ``c`` added; RN everywhere.

    ``p_k = RN(a_k b_k)``; the K products are reduced pairwise (level by level: (p0+p1),
    (p2+p3), ...; an odd last element passes up unchanged), each addition RN; then
    ``d = RN(tree + c)``. IEEE special values follow NumPy's binary64 arithmetic (which is IEEE).
    """
    a, b, c, batch, (m, k, n) = _chain_operands(a, b, c, "dot_pairwise")
    a3 = np.broadcast_to(a, batch + (m, k)).reshape(math.prod(batch), m, k)
    b3 = np.broadcast_to(b, batch + (k, n)).reshape(math.prod(batch), k, n)
    c3 = np.broadcast_to(c, batch + (m, n)).reshape(math.prod(batch), m, n)
    if k == 0:
        return np.broadcast_to(c, batch + (m, n)).copy()
    out = np.empty(c3.shape, dtype=np.float64)
    # [entries, rows, K, N] products per step, at most about _CHUNK_ELEMENTS of them: several
    # batch entries at once where their tiles are small (probe tiles), else rows of one entry
    per_row = max(1, k * n)
    rows = min(m, max(1, _CHUNK_ELEMENTS // per_row))
    entries = max(1, _CHUNK_ELEMENTS // (per_row * m)) if rows == m else 1
    with np.errstate(all="ignore"):
        for e0 in range(0, a3.shape[0], entries):
            es = slice(e0, e0 + entries)
            for r0 in range(0, m, rows):
                rs = slice(r0, r0 + rows)
                p = a3[es, rs, :, None] * b3[es, None, :, :]  # [e, r, K, N]
                while p.shape[2] > 1:
                    h = p.shape[2] // 2
                    s = p[:, :, 0 : 2 * h : 2] + p[:, :, 1 : 2 * h : 2]
                    p = np.concatenate([s, p[:, :, 2 * h :]], axis=2) if p.shape[2] % 2 else s
                out[es, rs] = p[:, :, 0] + c3[es, rs]
    return out.reshape(batch + (m, n))
