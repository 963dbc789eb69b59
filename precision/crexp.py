"""Correctly rounded ``exp`` for float64 arrays: the same bits on every machine.

``numpy.exp`` is not reproducible across machines: NumPy runs its own SIMD kernel where the CPU
has AVX-512F and the platform's libm elsewhere, and the two differ in the last bit for a few
percent of arguments (NumPy documents up to 2.52 ulp for some of its kernels). Seeded inputs
drawn through it (the ``exp_rand`` distribution) would then differ between two researchers'
machines. :func:`exp_rn` returns ``RN(exp(x))``, the float64 nearest to the exact value (ties
cannot occur: ``exp(x)`` of a nonzero double is transcendental), so its result is defined by
mathematics alone, not by an implementation.

Method (table-driven, after P. T. P. Tang, "Table-driven implementation of the exponential
function in IEEE floating-point arithmetic", ACM TOMS 15(2), 1989), using only IEEE-754
operations that are correctly rounded everywhere (+, −, ×, ``rint``, ``ldexp``):

1. ``k = rint(x·4096/ln 2)``, ``x = k·ln2/4096 + r`` with ``|r| <= ln2/8192 < 2^-13.5``.
   ``ln2/4096`` is split into three parts, the first two of 30 bits, so ``k·C1`` and ``k·C2``
   are exact (``|k| < 2^23``); ``x − k·C1`` is exact (Sterbenz), and ``r`` is kept as a
   double-double ``r_hi + r_lo`` with an error below ``2^-100``.
2. ``exp(r) − 1 = r + r²/2 + r³/6 + r⁴/24 + r⁵/120`` (truncation below ``2^-90``), the ``r²``
   term as an exact product (Dekker's two-product; no FMA is needed).
3. ``exp(x) = 2^(k >> 12) · T_j · exp(r)`` with ``j = k mod 4096`` and ``T_j = 2^(j/4096)``
   as a double-double from mpmath, correctly rounded to 106 bits.
4. The double-double result ``y_hi + y_lo`` is within ``2^-88`` (relative) of ``exp(x)``.
   Where ``y_lo`` lies within ``2^-80`` (relative) of half an ulp of ``y_hi``, i.e. where that
   error could change the rounding (about one argument in 10^7), and where the result is not a
   normal number or overflows (``x`` outside ``[-708, 709.7]``), the value is recomputed with
   mpmath at 200 bits and rounded once.

Work is done in chunks of :data:`CHUNK` elements, so memory stays bounded at any size. About 70
array operations per element make it 30-50 times slower than ``numpy.exp`` on one core: 75-125
ns per element on the 2-core development machine (against 55-60 ns for the ``standard_normal``
draw that ``exp_rand`` makes for each entry anyway). Large arrays are spread over the cores,
in larger chunks (:func:`threaded_chunk`; 16384^2 arguments on the H200 node: 3.4 s on its 16
cores, about 25 s on one, where an eighth of them took 3.1 s).
"""

from __future__ import annotations

import functools
import math
import threading
from fractions import Fraction
from typing import Any

import numpy as np

from precision.eft import split, two_prod, two_prod_split, two_sum
from precision.threads import blocks, in_threads, thread_count

__all__ = ["CHUNK", "exp_rn", "threaded_chunk"]

#: Elements per chunk in one thread: its ~20 float64 temporaries stay in the L2 cache
#: (measured fastest on one core).
CHUNK = 1 << 14
#: Arguments from which :func:`exp_rn` uses threads.
_MIN_THREADED = 1 << 20

_TABLE_BITS = 12
_TABLE = 1 << _TABLE_BITS
#: The arguments of the fast path: exp(x) is a normal float64 and far from overflow.
_X_MIN, _X_MAX = -708.0, 709.7
#: Relative distance from a rounding midpoint below which the fast path defers to mpmath.
_AMBIGUOUS = 2.0**-80


def _exact(v: Any) -> Fraction:
    """The mpmath number ``v`` as an exact fraction (its signed mantissa times 2^exponent;
    ``mpf.as_integer_ratio`` is missing from older mpmath releases)."""
    man, exp = int(v.man), int(v.exp)
    return Fraction(man * 2**exp) if exp >= 0 else Fraction(man, 2**-exp)


_CONTEXTS = threading.local()


def _mp200() -> Any:
    """This thread's private mpmath context at 200 bits. mpmath's default context
    ``mpmath.mp`` holds one precision for the whole process, which ``workprec`` changes under
    every thread; contexts of our own leave it, and other threads' work, alone."""
    mp = getattr(_CONTEXTS, "mp", None)
    if mp is None:
        import mpmath

        mp = mpmath.MPContext()
        mp.prec = 200
        _CONTEXTS.mp = mp
    return mp


@functools.cache
def _constants() -> tuple[float, float, float, float, np.ndarray, np.ndarray]:
    """``4096/ln2`` (float64), ``ln2/4096`` in three parts (30 + 30 + 53 bits), and the table
    ``2^(j/4096)`` as float64 pairs (hi, lo), all from mpmath at 200 bits."""
    mp = _mp200()
    rest = _exact(mp.log(2) / _TABLE)
    parts = []
    for bits in (30, 30):
        e = math.frexp(float(rest))[1]
        scale = Fraction(2) ** (bits - e)
        part = Fraction(math.floor(rest * scale)) / scale  # truncated to `bits` bits
        parts.append(float(part))
        rest -= part
    parts.append(float(rest))
    inv = float(_exact(_TABLE / mp.log(2)))
    hi = np.empty(_TABLE)
    lo = np.empty(_TABLE)
    for j in range(_TABLE):
        t = _exact(mp.power(2, mp.mpf(j) / _TABLE))
        hi[j] = float(t)
        lo[j] = float(t - Fraction(hi[j]))
    return inv, parts[0], parts[1], parts[2], hi, lo


@functools.cache
def _table_split() -> tuple[np.ndarray, np.ndarray]:
    """The high parts of the table, Veltkamp-split once (for the exact products by them)."""
    return split(_constants()[4])


def _exp_mpmath(x: float) -> float:
    """``RN(exp(x))`` through mpmath at 200 bits and one exact rounding (Python's int / int
    division is correctly rounded, subnormals and overflow included)."""
    if math.isnan(x):
        return math.nan
    if x > 710.0:
        return math.inf
    if x < -746.0:
        return 0.0
    mp = _mp200()
    y = _exact(mp.exp(mp.mpf(x)))
    try:
        return y.numerator / y.denominator
    except OverflowError:
        return math.inf


def _exp_chunk(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fast path on arguments in ``[_X_MIN, _X_MAX]``: ``(y, ambiguous)`` with ``y = RN(exp(x))``
    wherever ``ambiguous`` is False."""
    inv, c1, c2, c3, t_hi, t_lo = _constants()
    t_split = _table_split()
    k = np.rint(x * inv)
    # r = x - k·ln2/4096 as r_hi + r_lo: x - k·c1 and k·c2 are exact, the two-sum is exact.
    r_hi, r_lo = two_sum(x - k * c1, -(k * c2))
    r_lo -= k * c3
    # exp(r) - 1 = e_hi + e_lo
    sq, sq_err = two_prod(r_hi, r_hi)
    tail = r_hi * r_hi * r_hi * (1.0 / 6 + r_hi * (1.0 / 24 + r_hi * (1.0 / 120)))
    e_hi, e_lo = two_sum(r_hi, 0.5 * sq)
    e_lo += r_lo + (0.5 * sq_err + r_hi * r_lo + tail)
    # T_j·(1 + e) = T_hi + T_hi·e_hi + (T_lo + T_hi·e_lo + T_lo·e_hi)
    ki = k.astype(np.int64)
    j = ki & (_TABLE - 1)
    th, tl = t_hi[j], t_lo[j]
    th_h, th_l = t_split[0][j], t_split[1][j]
    p, p_err = two_prod_split(th, e_hi, th_h, th_l, *split(e_hi))
    y_hi, y_lo = two_sum(th, p)
    y_lo += tl + (p_err + th * e_lo + tl * e_hi)
    y, y_lo = two_sum(y_hi, y_lo)  # y = RN(y_hi + y_lo), y_lo the exact remainder
    # The rounding may be wrong only if the remainder is near half an ulp of y (a quarter ulp
    # below a power of two, where the spacing halves).
    ulp = np.spacing(y)
    near = np.abs(np.abs(y_lo) - 0.5 * ulp) <= _AMBIGUOUS * y
    near |= np.abs(np.abs(y_lo) - 0.25 * ulp) <= _AMBIGUOUS * y
    return np.ldexp(y, ki >> _TABLE_BITS), near


def threaded_chunk(threads: int) -> int:
    """Elements per chunk when ``threads`` threads share a call: 4, 8 or 16 times
    :data:`CHUNK` (up to 2, up to 8, more threads). Each of the ~70 array operations per chunk
    takes the GIL to start; with L2-sized chunks, 16 threads on the H200 node's 16 cores
    spent most of their time waiting for it: 16384^2 arguments took 25.8 s with chunks of
    2^14, 7.0 s with 2^16, 3.4 s with 2^18 and 5.1 s with 2^20; 8 threads 17.2, 5.7, 5.3 and
    6.7 s; on 2 cores, 2 threads 0.83-0.86, 0.54-0.61 and 0.89-0.93 s for 4096^2 (2^14, 2^16,
    2^18; ``results/bench/input_draw_h200_2026-11-27/``)."""
    return CHUNK << (2 + (threads > 2) + (threads > 8))


def _exp_range(
    flat_x: np.ndarray, flat_out: np.ndarray, start: int, stop: int, chunk: int = CHUNK
) -> np.ndarray:
    """The fast path on ``flat_x[start:stop]``, ``chunk`` elements at a time, into
    ``flat_out``; returns the flat indices left for :func:`_exp_mpmath` (ambiguous or outside
    the fast path's range)."""
    slow = []
    with np.errstate(all="ignore"):  # per thread: numpy's error state is thread-local
        for c0 in range(start, stop, chunk):
            xc = flat_x[c0 : min(c0 + chunk, stop)]
            fast = (xc >= _X_MIN) & (xc <= _X_MAX)
            y, near = _exp_chunk(np.where(fast, xc, 0.0))
            flat_out[c0 : c0 + xc.size] = y
            slow.append(c0 + np.flatnonzero(~fast | near))
    return np.concatenate(slow) if slow else np.empty(0, dtype=np.intp)


def exp_rn(x: np.ndarray) -> np.ndarray:
    """``exp(x)`` correctly rounded to nearest, elementwise, for a float64 array (any shape):
    the same bits on every IEEE-754 machine. NaN gives NaN, +Inf gives +Inf, −Inf and
    arguments below about −745.13 give +0, arguments above about 709.78 give +Inf; no floating-
    point warnings are raised.

    From :data:`_MIN_THREADED` elements on, the chunks are spread over the CPU's cores
    (:func:`precision.threads.thread_count`; numpy releases the GIL; the result does not
    depend on it). The few arguments that need mpmath are done afterwards, in the calling
    thread."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty(x.shape, dtype=np.float64)
    flat_x, flat_out = x.reshape(-1), out.reshape(-1)
    size = flat_x.size
    _constants(), _table_split()  # built once, before any thread needs them
    threads = thread_count() if size >= _MIN_THREADED else 1
    chunk = threaded_chunk(threads) if threads > 1 else CHUNK
    workers = min(threads, -(-size // chunk))
    if workers > 1:
        shares = blocks(size, workers, chunk)  # whole chunks per worker
        parts = in_threads(lambda b: _exp_range(flat_x, flat_out, b.start, b.stop, chunk), shares)
        slow = np.concatenate(parts)
    else:
        slow = _exp_range(flat_x, flat_out, 0, size)
    for i in slow.tolist():  # about one argument in 10^7, plus those outside [-708, 709.7]
        flat_out[i] = _exp_mpmath(float(flat_x[i]))
    return out
