"""Ozaki schemes I and II: FP64 / FP32 GEMM from exact INT8 (or fp16) tensor-core products.

Both schemes turn every row of ``A`` and every column of ``B`` into integers by a power-of-two
scaling, multiply integer pieces exactly, and recombine the pieces *exactly* into one integer
per output element. That integer is rounded **once** (round to nearest even, gradual underflow,
overflow to ±Inf) to the target format. Every step before the rounding is exact integer
arithmetic (the CRT quotient below is a floating-point estimate that is provably exact), so the
result is a mathematical function of the inputs, the method and the number of terms: the CPU
emulator here and the CUDA kernels (``precision/kernels/ozaki2.cu``) give the same bits by
construction, whatever order either sums in. See ``docs/ozaki.md`` for the derivations.

Notation: row ``i`` of ``A`` has the largest finite magnitude ``mu_i = f·2^ea_i`` with
``f`` in [0.5, 1) (``numpy.frexp``), so ``|A[i, :]| < 2^ea_i``; columns of ``B`` likewise
with ``eb_j``.

**Scheme II** (Ozaki, Uchino, Imamura, arXiv:2504.08009; GEMMul8), ``terms`` = number of
moduli ``L`` taken from :data:`MODULI` (pairwise coprime, <= 256):

1. ``A'[i,k] = rint(A[i,k]·2^s_i)`` and ``B'[k,j] = rint(B[k,j]·2^t_j)``: integer-valued
   float64 values (the scaling is exact), ``|A'| <= 2^62``. The scale is the largest power of
   two that keeps the line's 2-norm within the budget ``2^(q2/2)`` (:func:`norm_shifts`, from
   an exact integer bound on the norm, :func:`norm_terms`).
2. For each modulus ``m_l``: symmetric residues ``A'_l = A' mod m_l`` in
   ``[-floor(m/2), ceil(m/2)-1]`` (int8), ``C_l = A'_l @ B'_l`` exactly (int32 needs
   ``128·128·K <= 2^31-1``, ``K <= 131071``: :data:`INT8_KMAX`), ``c_l = C_l mod m_l``.
3. CRT: ``T = A' @ B'`` satisfies ``|T| <= ||A'[i,:]||·||B'[:,j]|| <= (2^(q2/2) +
   sqrt(K)/2)^2 <= M·(1/2 - 2^-20)`` (Cauchy-Schwarz; ``M = prod m_l``; that is how ``q2`` is
   chosen, :func:`crt_q2`), so ``T = S - q·M`` with
   ``S = sum_l c_l·w_l`` (``w_l = (M/m_l)·((M/m_l)^-1 mod m_l)``) and ``q = rint(sum_l
   c_l·u_l)``, ``u_l = fl(w_l/M)``: the float64 estimate is within 2^-37 of ``S/M`` and
   ``|T/M| <= 1/2 - 2^-20``, so the rounding picks the exact ``q``. ``S`` and ``T`` are held
   in signed 32-bit limbs (int64 containers, no overflow).
4. ``D[i,j] = RN(T·2^-(s_i + t_j))`` in the target format.

**Scheme I** (Ootomo, Ozaki, Yokota 2024, ozIMMU), ``terms`` = number of slices ``T`` (<= 8):

1. ``A'[i,k] = trunc(A[i,k]·2^(7T-ea_i))``, ``|A'| < 2^(7T)``, cut into ``T`` signed base-2^7
   digits ``a_s`` (``|a_s| <= 127``, all with the sign of ``A'``), ``A' = sum_s a_s·2^(7(T-s))``.
2. Slice products ``a_s @ b_t`` for ``s + t <= T + 1`` (``T(T+1)/2`` GEMMs, exact in int32 for
   ``127·127·K <= 2^31-1``; on fp16 tensor cores with fp32 accumulation exact for
   ``127·127·K <= 2^24``, K blocks of :data:`FP16_KBLOCK`), summed per ``g = s + t`` in int64.
3. ``T = sum_g G_g·2^(7(T+1-g))`` exactly (Horner in limbs); ``D = RN(T·2^(7(T-1)-sa-sb))``.
   The dropped pairs (``s + t > T + 1``) are the scheme's truncation, part of its error bound.

Special values: a row of ``A`` (column of ``B``) holding a NaN or ±Inf makes its whole output
row (column) non-finite; those outputs get what IEEE arithmetic gives for the sum of products
(NaN if any product is NaN — NaN operand or Inf·0 — or if +Inf and -Inf products meet, else
±Inf), written as the canonical quiet NaN ``0x7FF8...`` / ``0x7FC00000``. Non-finite entries
are zero for the scaling and the products, so all other outputs keep full accuracy. Subnormal
inputs are scaled exactly (no flush). Nothing falls back to native GEMM.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from precision.formats import get_format
from precision.limbs import LIMB_BITS as _LIMB
from precision.limbs import LIMB_MASK as _MASK
from precision.limbs import (
    array_module,
    bitlen_u32,
    format_params,
    normalize_limbs,
    round_limbs,
)

#: Pairwise coprime moduli, greedily from 256 down (256 = 2^8, 255 = 3·5·17, 253 = 11·23, ...).
MODULI: tuple[int, ...] = (
    256, 255, 253, 251, 247, 241, 239, 233, 229, 227,
    223, 217, 211, 199, 197, 193, 191, 181, 179, 173,
)  # fmt: skip
#: Largest K for which an int8 x int8 GEMM of symmetric residues (|r| <= 128) is exact in int32.
INT8_KMAX = (2**31 - 1) // (128 * 128)
#: Largest K for which a product of scheme-I int8 slices (|a| <= 127) is exact in int32.
OZAKI1_INT8_KMAX = (2**31 - 1) // (127 * 127)
#: K block of scheme I on fp16 tensor cores: 127·127·1024 <= 2^24, so fp32 sums are exact.
FP16_KBLOCK = 1024
#: Largest scheme-I slice count (7·8 = 56 bits >= 53; int64 digit extraction needs 7T <= 62).
OZAKI1_MAX_SLICES = 8
#: Scheme II's scaled integers stay <= 2^62: integer-valued float64 values (the row's largest
#: entries keep all 53 bits, entries up to 9 binades below it too), exact in int64, where
#: :func:`sym_mod` reduces them.
QMAX = 62
#: Output formats: (precision p, exponent of the smallest subnormal, numpy dtype).
TARGETS: dict[str, tuple[int, int, Any]] = {n: format_params(n) for n in ("fp64", "fp32")}
METHODS: tuple[str, ...] = ("ozaki1", "ozaki2")
FORMATS: dict[str, tuple[str, ...]] = {"ozaki1": ("int8", "fp16"), "ozaki2": ("int8",)}
#: Valid explicit ``terms`` per method (inclusive): slices (scheme I), moduli (scheme II).
TERMS_RANGE: dict[str, tuple[int, int]] = {
    "ozaki1": (1, OZAKI1_MAX_SLICES),
    "ozaki2": (2, len(MODULI)),
}
#: Margin of the CRT range: |T| <= M·(1/2 - 2^-MARGIN_LOG2) keeps the quotient estimate exact.
MARGIN_LOG2 = 20
_CANON_NAN: dict[str, Any] = {  # the IEEE quiet NaN of each target
    n: get_format(n).bits_dtype.type(get_format(n).ieee_quiet_nan_bits) for n in TARGETS
}
_CHUNK = 1 << 20  # elements per chunk of the line statistics (at most)
#: Full-size 8-byte temporaries per element that a chunk of line_stats / norm_terms holds at
#: once (measured with tracemalloc: about 10), which sizes the chunk on small inputs.
_STATS_TEMPS = 12


# ------------------------------------------------------------------------------ line stats


@dataclass(frozen=True)
class LineStats:
    """Per row (of A) or column (of B) integer statistics; exact, so every backend agrees.

    ``emax``: frexp exponent of the largest finite magnitude (0 for an all-zero line, with
    ``zero`` set); ``esum``/``count``: sum and number of frexp exponents of the nonzero finite
    entries; ``bad``: the line holds a NaN or ±Inf; ``nfix``: the fixed-point bound on the
    line's squared 2-norm, ``sum x^2 <= nfix·2^(2·emax - NORM_FRAC)`` (:func:`norm_terms`), or
    :data:`NFIX_OVERFLOW` where that integer does not fit int64 (K > :data:`NFIX_KMAX` only).
    """

    emax: np.ndarray
    esum: np.ndarray
    count: np.ndarray
    zero: np.ndarray
    bad: np.ndarray
    nfix: np.ndarray

    @property
    def counted(self) -> np.ndarray:
        """The lines that ``terms="auto"`` counts: a nonzero entry and no NaN or ±Inf (a line
        holding one gives non-finite outputs whatever the count)."""
        return (self.count > 0) & ~self.bad

    def spread(self) -> int:
        """max over lines of ``emax - floor(esum / count)``: how many binades a line's typical
        (mean-exponent) entry sits below its largest; 0 for no :attr:`counted` line."""
        ok = self.counted
        if not np.any(ok):
            return 0
        mean = np.floor_divide(self.esum[ok], self.count[ok])
        return int(max(0, np.max(self.emax[ok] - mean)))


#: Fraction bits of :attr:`LineStats.nfix` (the norm bound's fixed point, relative to 4^emax).
NORM_FRAC = 40
#: Significant bits kept (rounded up) of each magnitude in the norm bound.
NORM_BITS = 8
#: Largest K for which :attr:`LineStats.nfix` (a sum of K terms of at most 2^40 each,
#: :func:`norm_terms`) cannot overflow int64. Beyond it the sum is formed exactly from 20-bit
#: halves, and a line whose bound does not fit int64 gets ``nfix = -1`` (:data:`NFIX_OVERFLOW`).
NFIX_KMAX = (2**63 - 1) >> NORM_FRAC
#: :attr:`LineStats.nfix` of a line whose norm bound is 2^63 or more (only possible for
#: K > :data:`NFIX_KMAX`); scheme II refuses such operands (:func:`check_norm_bounds`).
NFIX_OVERFLOW = -1
_NFIX_SPLIT = 20  # the exact wide sum: every term = hi·2^20 + lo


def norm_terms(mag: np.ndarray, emax: np.ndarray) -> np.ndarray:
    """Per entry, an integer upper bound on ``mag^2·2^(NORM_FRAC - 2·emax)`` (int64; 0 for 0).

    With ``e`` the frexp exponent of ``mag`` (``mag < 2^e``), ``mu = ceil(mag·2^(8-e))`` (an
    integer in [128, 256]: the magnitude rounded up to 8 significant bits, an exact scaling)
    and ``d = 2·(e - emax) + NORM_FRAC - 16``, the term is ``mu^2·2^d`` for ``d >= 0`` and
    ``ceil(mu^2 / 2^-d)`` otherwise (1 once ``-d >= 16``). Each term is at most 2^40, so a
    line of K < 2^17 entries sums below 2^57 in int64, in any order. ``emax`` broadcasts
    against ``mag`` (the line's largest exponent). numpy or CuPy arrays."""
    xp = array_module(mag)
    frac, e = xp.frexp(mag)  # mag = frac·2^e: frac·2^8 is mag·2^(8-e), exactly
    mu = xp.ceil(frac * (1 << NORM_BITS)).astype(np.int64)
    mu2 = mu * mu
    d = e.astype(np.int64) - emax
    d *= 2
    d += NORM_FRAC - 2 * NORM_BITS
    up = d.clip(0, 62)
    down = (-d).clip(0, 32)
    # for mag > 0 (mu in [128, 256]) and -d >= 16, the rounded-up quotient is 1 by itself
    term = xp.where(d >= 0, mu2 << up, (mu2 + (1 << down) - 1) >> down)
    return xp.where(mag > 0, term, 0)


def line_stats(X: np.ndarray, axis: int) -> LineStats:
    """:class:`LineStats` of the rows (``axis=1``) or columns (``axis=0``) of ``X`` (float64,
    float32 or float16; each chunk is converted to float64, which is exact), computed in row
    chunks (at most 2^20 elements, fewer for small X so that the temporaries stay within the
    workspace budget; 2^24 for a CuPy array, whose statistics are CuPy arrays too): one pass
    for the largest magnitudes, one for the norm bounds relative to them. The statistics are
    exact (maxima, integer sums), so the chunking never changes them."""
    xp = array_module(X)
    rows, cols = X.shape
    if xp is np:  # temporaries within a quarter of 1.5x X's size (the workspace budget)
        itemsize = max(X.dtype.itemsize, MIN_INPUT_ITEMSIZE)  # (input_bytes)
        chunk = min(_CHUNK, 3 * X.size * itemsize // (64 * _STATS_TEMPS))
    else:
        chunk = _CHUNK << 4
    step = max(1, chunk // max(cols, 1))
    nlines = rows if axis == 1 else cols
    mx = xp.zeros(nlines)
    esum = xp.zeros(nlines, dtype=np.int64)
    count = xp.zeros(nlines, dtype=np.int64)
    bad = xp.zeros(nlines, dtype=bool)
    rows_with_entries = rows if cols else 0  # K = 0: every line is all-zero
    for r0 in range(0, rows_with_entries, step):
        blk = X[r0 : r0 + step].astype(np.float64, copy=False)
        fin = xp.isfinite(blk)
        mag = xp.where(fin, xp.abs(blk), 0.0)
        e = xp.frexp(mag)[1]  # (0 for a zero: it adds nothing to esum)
        nz = mag > 0
        if axis == 1:
            sl = slice(r0, r0 + blk.shape[0])
            mx[sl] = mag.max(axis=1)
            esum[sl] = e.sum(axis=1, dtype=np.int64)
            count[sl] = nz.sum(axis=1)
            bad[sl] = ~fin.all(axis=1)
        else:
            xp.maximum(mx, mag.max(axis=0), out=mx)
            esum += e.sum(axis=0, dtype=np.int64)
            count += nz.sum(axis=0)
            bad |= ~fin.all(axis=0)
    emax = xp.frexp(mx)[1].astype(np.int64)
    # K <= NFIX_KMAX: one int64 sum per line, which cannot overflow. Beyond it, the high and
    # low 20 bits of every term are summed apart (neither sum can overflow), so the exact sum
    # is known, and lines whose sum does not fit int64 are marked NFIX_OVERFLOW.
    wide = (cols if axis == 1 else rows) > NFIX_KMAX
    nfix = xp.zeros(nlines, dtype=np.int64)
    nlow = xp.zeros(nlines, dtype=np.int64)
    low_mask = (1 << _NFIX_SPLIT) - 1
    for r0 in range(0, rows_with_entries, step):
        blk = X[r0 : r0 + step].astype(np.float64, copy=False)
        mag = xp.where(xp.isfinite(blk), xp.abs(blk), 0.0)
        terms = norm_terms(mag, emax[r0 : r0 + blk.shape[0], None] if axis == 1 else emax)
        del mag
        if axis == 1:
            sl = slice(r0, r0 + blk.shape[0])
            if wide:
                nfix[sl] = (terms >> _NFIX_SPLIT).sum(axis=1)
                nlow[sl] = (terms & low_mask).sum(axis=1)
            else:
                nfix[sl] = terms.sum(axis=1)
        elif wide:
            nfix += (terms >> _NFIX_SPLIT).sum(axis=0)
            nlow += (terms & low_mask).sum(axis=0)
        else:
            nfix += terms.sum(axis=0)
    if wide:  # nfix holds the high parts: the sum is nfix·2^20 + nlow
        nfix += nlow >> _NFIX_SPLIT
        nlow &= low_mask
        fits = nfix < (1 << (63 - _NFIX_SPLIT))
        nfix = xp.where(fits, (nfix << _NFIX_SPLIT) | nlow, NFIX_OVERFLOW)
    return LineStats(emax=emax, esum=esum, count=count, zero=mx == 0, bad=bad, nfix=nfix)


# ------------------------------------------------------------------------------- the plans


@dataclass(frozen=True)
class OzakiPlan:
    """Everything a backend needs to run one Ozaki GEMM; identical on CPU and GPU.

    ``terms``: moduli (scheme II) or slices (scheme I). ``qa``/``qb``: bits of the scaled
    integers of scheme I (``7·terms``; 0 for scheme II). ``q2`` (scheme II): the budget of the
    scaled lines' squared 2-norms, ``||A'[i,:]||^2 <= 2^q2`` and ``||B'[:,j]||^2 <= 2^q2``
    before rounding (:func:`crt_q2`). ``gemms``: number of low-precision GEMMs.
    """

    method: str
    fmt: str
    target: str
    terms: int
    k: int
    qa: int
    qb: int
    gemms: int
    moduli: tuple[int, ...] = ()
    q2: int = 0

    @property
    def modulus(self) -> int:
        """M = product of the moduli (scheme II)."""
        return math.prod(self.moduli)

    @property
    def limbs(self) -> int:
        """32-bit limbs holding the exact integer T (signed top limb)."""
        if self.method == "ozaki2":
            return crt_limbs(self.moduli)
        g = (self.terms * 127 * 127 * self.k).bit_length() + 7 * (self.terms - 1)
        return g // _LIMB + 1


def crt_limbs(moduli: tuple[int, ...]) -> int:
    """32-bit limbs holding scheme II's integers for ``moduli`` (``M = prod``): bit length of
    M // 32 + 1, at least 2; so ``M >= 2^(32·(limbs - 1) - 1)`` whenever limbs >= 3."""
    return max(2, math.prod(moduli).bit_length() // _LIMB + 1)


def crt_bound(moduli: tuple[int, ...]) -> int:
    """``floor(M·(1/2 - 2^-20))`` for ``M`` = the product of ``moduli``: the largest ``|T|``
    the reconstruction accepts (the margin keeps the quotient estimate exact)."""
    return (math.prod(moduli) * ((1 << (MARGIN_LOG2 - 1)) - 1)) >> MARGIN_LOG2


def crt_line_budget(moduli: tuple[int, ...], k: int) -> int:
    """The largest 2-norm a scaled line may have before rounding, as an integer ``X`` with
    ``(X + sqrt(K)/2)^2 <=`` :func:`crt_bound`: ``isqrt(bound) - (isqrt(K - 1) + 2) // 2``
    (``sqrt(K)/2`` rounded up: ``isqrt(K - 1) + 1 >= sqrt(K)``). Exact integer arithmetic;
    below 1 when no budget is left."""
    return math.isqrt(crt_bound(moduli)) - (math.isqrt(max(k, 1) - 1) + 2) // 2


def crt_q2(moduli: tuple[int, ...], k: int) -> int:
    """Scheme II's norm budget: the largest ``q2`` with ``(2^(q2/2) + sqrt(K)/2)^2 <=``
    :func:`crt_bound`. A scaled line ``A'[i,:] = rint(A[i,:]·2^s)`` whose unrounded 2-norm is
    at most ``2^(q2/2)`` has ``||A'[i,:]|| <= 2^(q2/2) + sqrt(K)/2`` (each rounding adds at
    most 1/2 to a magnitude); by Cauchy-Schwarz every ``|A'[i,:]·B'[:,j]|`` then lies in the
    CRT range. ``X^2`` of :func:`crt_line_budget` rounded down to a power of two: with
    ``sqrt(K)/2`` replaced by ``(isqrt(K - 1) + 2) / 2``, that largest ``q2`` or, from rounding
    ``X`` down to an integer first, one below it (for every ``K <= 131071``: only with 2
    moduli, at 3606 values of ``K >= 31685``); -1 when no budget is left."""
    x = crt_line_budget(moduli, k)
    if x < 1:
        return -1
    return (x * x).bit_length() - 1


def crt_q_bits(moduli: tuple[int, ...], k: int) -> int:
    """Largest Q with ``K·2^Q <=`` :func:`crt_bound`: the worst-case (entrywise) budget,
    ``|A'| <= 2^qa``, ``|B'| <= 2^qb``, ``qa + qb = Q``; kept for comparison with
    :func:`crt_q2` in docs/ozaki.md."""
    bound = crt_bound(moduli)
    if bound < k:
        return -1
    return (bound // k).bit_length() - 1


def norm_top_bits(nfix: Any, q2: int) -> np.ndarray:
    """Scheme II: per line with norm bound ``nfix`` (:attr:`LineStats.nfix`), the exponent
    ``s + emax`` its largest entry is scaled to, the largest with
    ``4^s·nfix·2^(2·emax - NORM_FRAC) <= 2^q2`` (so the line's 2-norm is within the budget),
    capped at :data:`QMAX`: ``min(floor((q2 + NORM_FRAC - clog2(nfix)) / 2), QMAX)``,
    ``clog2(n) = ceil(log2 n)`` (int64; meaningless for all-zero lines)."""
    return np.minimum((q2 + NORM_FRAC - _clog2_i64(nfix)) // 2, QMAX)


def _clog2_i64(nfix: Any) -> np.ndarray:
    """``ceil(log2 n)`` of positive int64 values (0 for n <= 1), exact."""
    return _bit_length_i64(np.maximum(np.asarray(nfix, dtype=np.int64), 1) - 1)


def shifts_from_bounds(emax: Any, nfix: Any, zero: Any, q2: int) -> np.ndarray:
    """Scheme II's scale exponents ``s`` per line from the host arrays ``emax``, ``nfix`` and
    ``zero`` of :class:`LineStats` (0 for all-zero lines), int64: the scaled line is
    ``rint(x·2^s)``, its largest entry below ``2^(s + emax) <= 2^QMAX``."""
    top = norm_top_bits(nfix, q2)
    return np.where(zero, 0, top - np.asarray(emax, dtype=np.int64)).astype(np.int64)


def norm_shifts(stats: LineStats, q2: int) -> np.ndarray:
    """:func:`shifts_from_bounds` of a line's statistics."""
    return shifts_from_bounds(stats.emax, stats.nfix, stats.zero, q2)


def _bit_length_i64(x: np.ndarray) -> np.ndarray:
    """Bit length of non-negative int64 values (exact: split into 32-bit halves)."""
    x = np.asarray(x, dtype=np.int64)
    hi, lo = x >> 32, x & _MASK
    return np.where(hi > 0, 32 + bitlen_u32(hi), np.where(lo > 0, bitlen_u32(lo), 0))


def _line_spread(stats: LineStats) -> np.ndarray:
    """Per line ``emax - floor(esum / count)`` (0 where no entry is nonzero, and for a line
    holding a NaN or ±Inf: its outputs are non-finite whatever the count)."""
    cnt = np.maximum(stats.count, 1)
    return np.where(stats.counted, stats.emax - np.floor_divide(stats.esum, cnt), 0)


def auto_terms(
    method: str, target: str, k: int, sa: LineStats | int, sb: LineStats | None = None
) -> int:
    """``terms="auto"``: the fewest terms with which an entry of typical magnitude in its line
    (its frexp exponent the line's mean one) keeps ``p`` bits, ``p`` = 53 (fp64) or 24
    (fp32), in every row of A and column of B (capped at 62 bits, scheme II; 56, scheme I).

    Scheme I: ``7·T >= p + spread`` with ``spread`` the largest ``emax - mean exponent``.
    Scheme II: per line, :func:`norm_top_bits` ``>= p + spread`` of that line; lines whose
    2-norm is dominated by few large entries get more bits than the worst-case bound gives.
    Lines holding a NaN or ±Inf do not count (their outputs are non-finite, and every other
    output keeps the bits it has without them).
    ``sa`` may be an int spread (then ``sb`` is None): every line is taken to have that
    spread and K entries at their line's largest magnitude (the worst case)."""
    p = TARGETS[target][0]
    if isinstance(sa, LineStats):
        if not isinstance(sb, LineStats):
            raise TypeError(f"sb: expected B's LineStats with A's; got {type(sb).__name__}")
        spread_a, spread_b = _line_spread(sa), _line_spread(sb)
        spread = int(max(spread_a.max(initial=0), spread_b.max(initial=0)))
    elif isinstance(sa, numbers.Integral) and not isinstance(sa, bool):
        spread = max(0, int(sa))
    else:
        raise TypeError(f"sa: expected LineStats or an int spread; got {type(sa).__name__}")
    if method == "ozaki1":
        return max(2, min(OZAKI1_MAX_SLICES, -(-(p + spread) // 7)))
    # (norm bound, spread) of every line with a nonzero entry
    if isinstance(sa, LineStats):
        assert sb is not None
        pairs = ((sa, spread_a), (sb, spread_b))
        lines = [(st.nfix[st.counted], sp[st.counted]) for st, sp in pairs]
    else:  # K entries of magnitude just below 2^emax: nfix = K·2^NORM_FRAC
        lines = [(np.array([k << NORM_FRAC]), np.array([spread]))]
    # A line needs norm_top_bits(nfix, q2) = min(floor((q2 + NORM_FRAC - cl) / 2), QMAX) >= t,
    # t = min(QMAX, p + spread), cl = clog2(nfix); as t <= QMAX that is q2 >= 2t + cl -
    # NORM_FRAC (integers), so the smallest budget every line accepts is one maximum.
    need = max(
        (int(np.max(2 * np.minimum(QMAX, p + sp) + _clog2_i64(nf) - NORM_FRAC)) for nf, sp in lines
         if nf.size),
        default=None,
    )  # fmt: skip
    return fewest_moduli(need, k)


def fewest_moduli(need: int | None, k: int) -> int:
    """Scheme II: the fewest moduli (a prefix of :data:`MODULI`, at least 2) whose budget
    :func:`crt_q2` for inner dimension ``k`` is at least ``need``, the largest per-line
    ``2·min(QMAX, p + spread) + clog2(nfix) - NORM_FRAC`` (:func:`auto_terms`); ``need=None``
    (no line has a nonzero entry) takes any budget >= 0. All of them when none suffices."""
    for n in range(2, len(MODULI) + 1):
        q2 = crt_q2(MODULI[:n], k)
        if q2 >= 0 and (need is None or q2 >= need):
            return n
    return len(MODULI)


def canonical_target(target: Any) -> str:
    """``target`` as ``"fp64"`` or ``"fp32"``: any name :func:`precision.formats.get_format`
    takes (``"FP64"``, ``"f64"``, ``"double"``, ``"float64"``, ``"single"``, a ``Format``, a
    numpy dtype such as ``np.float32``). ValueError naming the argument, the valid targets and,
    for a misspelling, the closest one."""
    try:
        name: str | None = get_format(target).name
    except (TypeError, ValueError):
        name = None
    if name in TARGETS:
        return str(name)
    from precision.tensorcore.arch import did_you_mean

    spellings = [n for t in TARGETS for n in get_format(t).names]
    if name is None:
        what = "unknown" + did_you_mean(str(target).strip().lower(), spellings)
    else:
        what = f"format {name} is not a target"
    raise ValueError(
        f"target={target!r}: {what} (expected one of {', '.join(TARGETS)}, or an alias of "
        f"them such as 'double', 'single')"
    )


def canonical_args(method: str, fmt: Any, target: Any) -> tuple[str, str]:
    """``(fmt, target)`` as canonical names (any alias of either is taken: ``"s8"`` is
    ``"int8"``, ``"double"`` is ``"fp64"``), after checking that ``method`` is an Ozaki
    scheme and runs on ``fmt``; ValueError naming the bad argument otherwise. The public
    entry points (``gemm``, :func:`ozaki_gemm`, :func:`plan_for`, :func:`make_plan`,
    :func:`chosen_terms`) normalise through this once."""
    if method not in METHODS:
        raise ValueError(f"method={method!r}: expected one of {METHODS}")
    try:
        fmt_name = get_format(fmt).name
    except (TypeError, ValueError) as exc:
        raise ValueError(f"fmt={fmt!r}: {exc}") from None
    if fmt_name not in FORMATS[method]:
        raise ValueError(f"method={method!r} runs on fmt in {FORMATS[method]}, got fmt={fmt!r}")
    return fmt_name, canonical_target(target)


def check_args(method: str, fmt: str, target: str) -> None:
    """ValueError naming the bad one of ``method``, ``fmt`` and ``target``, which must be
    canonical names here: the check of the CUDA drivers, which compare the names as strings.
    The public entry points take aliases (:func:`canonical_args`)."""
    canon = canonical_args(method, fmt, target)
    for arg, given, name in (("fmt", fmt, canon[0]), ("target", target, canon[1])):
        if given != name:
            raise ValueError(
                f"{arg}={given!r}: give the canonical name {name!r} here (gemm, ozaki_gemm, "
                f"plan_for and chosen_terms take any alias)"
            )


def make_plan(method: str, fmt: Any, target: Any, terms: int, k: int) -> OzakiPlan:
    """The :class:`OzakiPlan` for explicit ``terms`` (``fmt`` and ``target``: any alias; the
    plan holds the canonical names); ValueError naming the bad argument."""
    fmt, target = canonical_args(method, fmt, target)
    if isinstance(terms, bool) or not isinstance(terms, int | np.integer):
        raise ValueError(f"{method}: terms must be an int, got {terms!r}")
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 0:
        raise ValueError(f"{method}: k (the inner dimension K) must be an int >= 0, got {k!r}")
    terms, k = int(terms), int(k)
    if method == "ozaki2":
        if not 2 <= terms <= len(MODULI):
            raise ValueError(f"ozaki2: terms (moduli) must be in [2, {len(MODULI)}], got {terms}")
        q2 = crt_q2(MODULI[:terms], k)
        if q2 < 2:
            raise ValueError(
                f"ozaki2: {terms} moduli leave no bits for K = {k} (q2 = {q2}); use more terms"
            )
        return OzakiPlan(method, fmt, target, terms, k, 0, 0, terms, MODULI[:terms], q2)
    if not 1 <= terms <= OZAKI1_MAX_SLICES:
        raise ValueError(f"ozaki1: terms (slices) must be in [1, {OZAKI1_MAX_SLICES}], got {terms}")
    return OzakiPlan(method, fmt, target, terms, k, 7 * terms, 7 * terms, terms * (terms + 1) // 2)


def explicit_terms(terms: Any) -> int | None:
    """``terms`` as an int, or None for ``"auto"``; ValueError for anything else (floats,
    bools, numeric strings: a count must not be truncated or guessed silently)."""
    if isinstance(terms, str) and terms == "auto":
        return None
    if isinstance(terms, int | np.integer) and not isinstance(terms, bool):
        return int(terms)
    raise ValueError(f"terms must be a positive int or 'auto', got {terms!r}")


def check_norm_bounds(sa: LineStats, sb: LineStats, k: int) -> None:
    """ValueError if a row of A or a column of B has a norm bound beyond int64
    (:data:`NFIX_OVERFLOW`, possible only for K > :data:`NFIX_KMAX`): scheme II cannot scale
    that line within its CRT range, and would otherwise return wrong values silently."""
    for name, what, st in (("A", "row", sa), ("B", "column", sb)):
        over = np.flatnonzero(np.asarray(st.nfix) == NFIX_OVERFLOW)
        if over.size:
            more = f" (and {over.size - 1} more)" if over.size > 1 else ""
            raise ValueError(
                f"ozaki2: K = {k} is too long for {what} {int(over[0])} of {name}{more}: its "
                f"2-norm bound (LineStats.nfix) does not fit int64; K <= {NFIX_KMAX} always "
                f"works, ozaki1 has no such limit"
            )


def plan_for(
    A: np.ndarray,
    B: np.ndarray,
    *,
    method: str,
    fmt: Any,
    target: Any,
    terms: int | str,
    stats: tuple[LineStats, LineStats] | None = None,
) -> tuple[OzakiPlan, LineStats, LineStats]:
    """Plan (resolving ``terms="auto"``) plus the line statistics of A's rows and B's columns.
    ``fmt`` and ``target`` take any alias (``"s8"``, ``"double"``; the plan holds canonical
    names). ``A`` and ``B`` are checked as :func:`ozaki_gemm` checks them (shapes; dtypes
    when the statistics are computed here, ``TypeError``). ValueError for invalid ``terms``,
    and for scheme II with a norm bound beyond int64 (:func:`check_norm_bounds`)."""
    fmt, target = canonical_args(method, fmt, target)
    n = explicit_terms(terms)
    if stats is None:
        A, B = _host_operands(A, B)
        sa, sb = line_stats(A, 1), line_stats(B, 0)
    else:
        _check_shapes(np.shape(A), np.shape(B))
        if not (
            isinstance(stats, tuple | list)
            and len(stats) == 2
            and all(isinstance(s, LineStats) for s in stats)
        ):
            raise TypeError(
                f"stats: expected (LineStats of A's rows, LineStats of B's columns), as "
                f"plan_for returns them; got {type(stats).__name__} {stats!r:.80}"
            )
        sa, sb = stats
    k = int(np.shape(A)[1])
    if method == "ozaki2":
        check_norm_bounds(sa, sb, k)
    if n is None:
        n = auto_terms(method, target, k, sa, sb)
    return make_plan(method, fmt, target, n, k), sa, sb


def shifts(stats: LineStats, q: int) -> np.ndarray:
    """Scale exponents ``q - emax`` per line (0 for all-zero lines), int64."""
    return np.where(stats.zero, 0, q - stats.emax).astype(np.int64)


# ------------------------------------------------------------------------- exact integers


def scaled_integers(X: np.ndarray, s: np.ndarray, axis: int, mode: str) -> np.ndarray:
    """``rint`` (``mode="rint"``) or ``trunc`` of ``X·2^s`` per line (``X`` float64, float32 or
    float16), as integer-valued float64; non-finite entries give 0. ``s`` scales rows
    (``axis=1``) or columns (``axis=0``). Exact: the conversion to float64 is exact, the scaled
    value is a float64 (a power-of-two scaling; values that underflow are below 1/2 and round
    to 0 either way) and the rounding to an integer is the only step."""
    xp = array_module(X)
    sx = s[:, None] if axis == 1 else s[None, :]
    # in place: one block-size float64 array (three of them at once doubled a thin call's peak),
    # a copy of the block (exact for float32 / float16) with its non-finite entries zeroed
    y = X.astype(np.float64)
    bad = xp.isfinite(y)
    xp.logical_not(bad, out=bad)
    xp.copyto(y, 0.0, where=bad)
    del bad
    with np.errstate(invalid="ignore"):
        xp.ldexp(y, sx, out=y)
    return xp.rint(y, out=y) if mode == "rint" else xp.trunc(y, out=y)


def sym_mod(x: np.ndarray, m: int) -> np.ndarray:
    """The residue of integer-valued ``x`` (int64, or float64 with ``|x| <= 2^62``) modulo
    ``m`` in ``[-floor(m/2), ceil(m/2) - 1]``, as int64, in exact integer arithmetic:
    ``((x + h) mod m) - h`` with ``h = floor(m/2)`` (the remainder of a positive divisor lies
    in ``[0, m)``). One int64 temporary (a copy of ``x``), the steps in place. (The CUDA
    kernels reach the same residues by other steps, checked by
    :mod:`precision.gemm.ozaki_cuda_check`.)"""
    r = np.asarray(x).astype(np.int64)
    r += m // 2
    np.remainder(r, m, out=r)
    r -= m // 2
    return r


def crt_weights(moduli: tuple[int, ...]) -> list[int]:
    """The CRT weights ``w_l = (M/m_l)·((M/m_l)^-1 mod m_l) mod M`` (``M`` = the product):
    ``w_l == 1 (mod m_l)`` and ``== 0`` modulo every other modulus, so ``sum_l r_l·w_l`` is
    the integer with residues ``r_l``, modulo ``M``. Exact Python ints, each below ``M``."""
    M = math.prod(moduli)
    return [(M // m) * pow(M // m, -1, m) % M for m in moduli]


def crt_constants(moduli: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(W, u, Mlimbs): ``W[l, t]`` the 32-bit limbs of ``w_l`` (:func:`crt_weights`, int64),
    ``u[l] = fl(w_l / M)`` (float64, correctly rounded) and the limbs of ``M``."""
    M = math.prod(moduli)
    nl = crt_limbs(moduli)
    W = np.zeros((len(moduli), nl), dtype=np.int64)
    u = np.zeros(len(moduli))
    for i, w in enumerate(crt_weights(moduli)):
        u[i] = w / M
        for t in range(nl):
            W[i, t] = (w >> (_LIMB * t)) & _MASK
    Ml = np.array([(M >> (_LIMB * t)) & _MASK for t in range(nl)], dtype=np.int64)
    return W, u, Ml


# --------------------------------------------------------------------------- special values

#: The classes of an operand entry that the special-value counts need, as boolean masks (NaN
#: is in none of them): ``inf`` ±Inf, ``zero`` ±0, ``pinf`` / ``ninf`` +Inf / -Inf, ``pos`` /
#: ``neg`` above / below 0 (Inf included), ``posf`` / ``negf`` the finite ones among those.
#: Plain comparisons, so numpy and CuPy arrays alike.
_CLASSES: dict[str, Callable[[Any], Any]] = {
    "inf": lambda x: (x == np.inf) | (x == -np.inf),
    "zero": lambda x: x == 0,
    "pinf": lambda x: x == np.inf,
    "ninf": lambda x: x == -np.inf,
    "pos": lambda x: x > 0,
    "neg": lambda x: x < 0,
    "posf": lambda x: (x > 0) & (x < np.inf),
    "negf": lambda x: (x < 0) & (x > -np.inf),
}
#: (class of ``a[i,k]``, class of ``b[k,j]``) pairs whose product is NaN (Inf·0), +Inf, -Inf.
_NAN_PAIRS = (("inf", "zero"), ("zero", "inf"))
_PINF_PAIRS = (("pinf", "pos"), ("ninf", "neg"), ("posf", "pinf"), ("negf", "ninf"))
_NINF_PAIRS = (("pinf", "neg"), ("ninf", "pos"), ("posf", "ninf"), ("negf", "pinf"))
#: Block workspace of the special values per output: while counting, one count (at most 8
#: bytes) and five booleans; at the end three booleans, two more and three results of at most
#: 8 bytes (the ±Inf array, the NaN ``where`` and its dtype copy).
_SPECIAL_OUT_BYTES = 32


def _count_dtype(k: int) -> type[np.float32] | type[np.float64]:
    """dtype of the 0/1 count products for inner dimension ``k``: float32 while every partial
    sum (an integer <= K) is exact in it (K <= 2^24), else float64 (exact up to 2^53)."""
    return np.float32 if k <= 2**24 else np.float64


def _special_line_bytes(k: int) -> int:
    """Block workspace of the special values per row of A / column of B in a block: its
    float64 copy (gathered by index), the boolean masks of one class pair and their copies on
    the shared ``k`` (1 byte each), those in the count dtype, and two boolean temporaries of a
    class test, per entry."""
    return (8 + 1 + 1 + np.dtype(_count_dtype(k)).itemsize + 2) * k


def _any_product(a: Any, b: Any, pairs: tuple[tuple[str, str], ...], xp: Any = np) -> Any:
    """Boolean ``(i, j)``: some ``k`` has ``a[i,k]`` in class ``p`` and ``b[k,j]`` in class
    ``q`` for a pair ``(p, q)`` of ``pairs`` (:data:`_CLASSES`). Per pair, the 0/1 matrix
    product ``[a in p] @ [b in q]`` counts such ``k`` exactly (:func:`_count_dtype`), taken
    over only the ``k`` where both masks have an entry (the others add 0), so a pair that no
    entry of the block meets costs no product. One pair's masks at a time."""
    ct = _count_dtype(a.shape[1])
    hit = xp.zeros((a.shape[0], b.shape[1]), dtype=bool)
    for p, q in pairs:
        in_p, in_q = _CLASSES[p](a), _CLASSES[q](b)
        ks = xp.flatnonzero(in_p.any(axis=0) & in_q.any(axis=1))
        if ks.size:
            hit |= (in_p[:, ks].astype(ct) @ in_q[ks].astype(ct)) > 0
        del in_p, in_q
    return hit


#: Per target, the least magnitude that rounds to infinity there (round to nearest: half an
#: ulp above the largest finite value), and the least sum of the frexp exponents of two
#: factors whose product can reach it (``|x| < 2^e``, so ``|a·b| < 2^(ea + eb)``).
_OVERFLOW_AT: dict[str, tuple[float, int]] = {
    "fp64": (math.inf, 1024),  # (2^1024 - 2^970: not a float64; a·b rounds to Inf exactly there)
    "fp32": (2.0**128 - 2.0**103, 128),
}


def _biased_exponents(x: Any, xp: Any) -> Any:
    """The 11-bit biased exponent field of every float64 of ``x``, uint16,
    with NaN/Inf (field 2047) given 0 as zeros and subnormals have: ``|x| < 2^(field - 1022)``
    for the others. Read from the top 16 bits of each number, so the temporaries are 2 bytes
    per entry."""
    top = 3 if np.little_endian else 0
    field = (xp.ascontiguousarray(x).view(np.uint16)[..., top::4] >> 4) & np.uint16(0x7FF)
    return xp.where(field == 2047, np.uint16(0), field).astype(np.uint16)


def _overflowing_products(a: Any, b: Any, target: str, xp: Any = np) -> tuple[Any, Any]:
    """Boolean ``(i, j)`` pair: some ``k`` has finite ``a[i,k]``, ``b[k,j]`` whose product,
    rounded to ``target``, overflows, and it is positive / negative. Native GEMM rounds each
    product before adding (cuBLAS DGEMM and SGEMM gave NaN for an overflowing product next
    to an Inf of the other sign in every order tried on the H200:
    ``results/bench/ozaki_overflow_order_2026-11-28/``), so such a product counts as an Inf.
    Only the ``k`` whose largest exponents on both sides could reach the threshold are
    examined, each on the rows and columns that could (none in ordinary data)."""
    limit, least = _OVERFLOW_AT[target]
    pos = xp.zeros((a.shape[0], b.shape[1]), dtype=bool)
    neg = xp.zeros_like(pos)
    ea, eb = _biased_exponents(a, xp), _biased_exponents(b, xp)
    # field sums: frexp exponent = field - 1022 for normal numbers
    need = least + 2 * 1022
    top_a, top_b = ea.max(axis=0).astype(np.int32), eb.max(axis=1).astype(np.int32)
    for k in xp.flatnonzero(top_a + top_b >= need).tolist():
        ri = xp.flatnonzero(ea[:, k].astype(np.int32) + int(top_b[k]) >= need)
        cj = xp.flatnonzero(eb[k].astype(np.int32) + int(top_a[k]) >= need)
        with np.errstate(over="ignore"):
            p = a[ri, k][:, None] * b[k, cj][None, :]
        if math.isinf(limit):
            over = xp.isinf(p)
        else:
            mag = xp.abs(p)
            over = mag > limit
            ties = xp.argwhere(mag == limit).tolist()  # (the float64 product may have rounded)
            for i, j in ties:
                exact = Fraction(float(a[ri[i], k])) * Fraction(float(b[k, cj[j]]))
                over[i, j] = abs(exact) >= Fraction(limit)
        block = (ri[:, None], cj[None, :])
        pos[block] |= over & (p > 0)
        neg[block] |= over & (p < 0)
    return pos, neg


def special_block(a: Any, b: Any, target: str, xp: Any = np) -> Any:
    """IEEE value, in ``target``, of ``sum_k a[i,k]·b[k,j]`` (``a``, ``b``: float64, whose
    exponent fields :func:`_biased_exponents` reads) for every ``(i, j)`` whose row
    ``a[i,:]`` or column ``b[:,j]`` holds a NaN or ±Inf (elsewhere the value is meaningless),
    each product rounded to ``target`` first, as native GEMM does: the canonical quiet NaN if
    some product is NaN (a NaN operand, Inf·0) or if a +Inf and a -Inf product meet (a
    finite product beyond the target's range counts as an Inf of its sign), else the sign of
    the Inf products. Which products occur comes from exact 0/1 matrix products
    (:func:`_any_product`) and the products that can overflow
    (:func:`_overflowing_products`), so the summation order does not matter. ``xp``: numpy,
    or cupy for device arrays (same values)."""
    dtype = TARGETS[target][2]
    nan_val = _CANON_NAN[target].view(dtype)
    nan = xp.isnan(a).any(axis=1)[:, None] | xp.isnan(b).any(axis=0)[None, :]
    nan |= _any_product(a, b, _NAN_PAIRS, xp)
    pinf = _any_product(a, b, _PINF_PAIRS, xp)
    ninf = _any_product(a, b, _NINF_PAIRS, xp)
    over_pos, over_neg = _overflowing_products(a, b, target, xp)
    pinf |= over_pos
    ninf |= over_neg
    del over_pos, over_neg
    out = xp.where(pinf, dtype(np.inf), dtype(-np.inf)).astype(dtype)
    return xp.where(nan | (pinf & ninf), dtype(nan_val), out).astype(dtype)


def as_float64(x: Any, xp: Any = np) -> Any:
    """``x`` (float64, float32 or float16) as float64, exactly, subnormals included.

    CuPy compiles its own elementwise kernels (``astype`` among them) with ``-ftz=true``,
    which flushes float32 subnormals to a signed zero on conversion: an entry of 1e-40 met by
    an Inf would then make NaN (Inf·0) instead of an Inf. A CuPy float32 array is therefore
    converted from its bits: sign, 8-bit exponent field ``e`` and 23-bit fraction ``f`` give
    ``±(f + 2^23·[e > 0])·2^(max(e, 1) - 150)``, formed in float64 (integers below 2^24, one
    exact scaling by a power of two), and ``e = 255`` gives ±Inf or NaN. float16 converts
    through normal float32 values, which are not flushed; numpy flushes nothing."""
    if x.dtype == np.float64:
        return x
    if xp is np or x.dtype != np.float32:
        return x.astype(np.float64)
    return float32_bits_to_float64(x, xp)


def float32_bits_to_float64(x: Any, xp: Any = np) -> Any:
    """The float32 array ``x`` as float64, exactly, computed from its bits with integer and
    float64 operations only (no float32 arithmetic, which CuPy may flush): see
    :func:`as_float64`. NaN payloads are not kept (NumPy's default NaN)."""
    bits = xp.ascontiguousarray(x).view(np.uint32)
    e = ((bits >> 23) & np.uint32(0xFF)).astype(np.int32)
    f = (bits & np.uint32(0x7FFFFF)).astype(np.int32)
    mag = xp.ldexp((f + (e > 0) * np.int32(1 << 23)).astype(np.float64), xp.maximum(e, 1) - 150)
    mag = xp.where(e == 255, xp.where(f == 0, np.inf, np.nan), mag)
    return xp.where((bits >> 31) == 1, -mag, mag)


def _write_specials(D: Any, A: Any, B: Any, rows: np.ndarray, cols: np.ndarray, target: str,
                    xp: Any, budget: int) -> None:  # fmt: skip
    """``D[rows x cols] = special_block(A[rows], B[:, cols])`` (index arrays, host), in blocks
    of rows and columns whose workspace stays within ``budget`` bytes (:func:`_blocks`). The
    gathered lines are converted to float64 (exact for float32 / float16 operands), after the
    gather, so that no whole operand is ever copied."""
    k = A.shape[1]
    mb, nb = _blocks(rows.size, cols.size, _special_line_bytes(k), _SPECIAL_OUT_BYTES, budget)
    for r0 in range(0, rows.size, mb):
        ri = xp.asarray(rows[r0 : r0 + mb])
        a = as_float64(A[ri], xp)
        for c0 in range(0, cols.size, nb):
            cj = xp.asarray(cols[c0 : c0 + nb])
            b = as_float64(B[:, cj], xp)
            D[ri[:, None], cj[None, :]] = special_block(a, b, target, xp)
            del b
        del a  # (before the next gather, so that two blocks of lines are never held at once)


def apply_specials(D: Any, A: Any, B: Any, sa: LineStats, sb: LineStats, target: str,
                   xp: Any = np, budget: int | None = None) -> None:  # fmt: skip
    """Overwrite, in place, the outputs in rows of A / columns of B that hold NaN or ±Inf with
    their IEEE value (:func:`special_block`): the bad rows against all columns, then the other
    rows against the bad columns. Only those rows and columns of the one operand meet the
    other; the blocks keep the workspace within ``budget`` bytes (default
    :func:`workspace_budget`)."""
    bad_rows, bad_cols = np.flatnonzero(sa.bad), np.flatnonzero(sb.bad)
    if bad_rows.size == 0 and bad_cols.size == 0:
        return
    budget = workspace_budget(A, B) if budget is None else budget
    n = D.shape[1]
    if bad_rows.size:
        _write_specials(D, A, B, bad_rows, np.arange(n), target, xp, budget)
    if bad_cols.size:
        good_rows = np.flatnonzero(~np.asarray(sa.bad, dtype=bool))
        _write_specials(D, A, B, good_rows, bad_cols, target, xp, budget)


# ------------------------------------------------------------------------------- emulators


def _blocks(m: int, n: int, line_bytes: int, out_bytes: int, budget: int) -> tuple[int, int]:
    """Row and column block sizes whose per-block workspace ``line_bytes·(mb + nb) +
    out_bytes·mb·nb`` stays within ``budget`` bytes: ``line_bytes`` per row of A or column of
    B in the block (its scaled integers and their pieces), ``out_bytes`` per output of the
    block (limbs, products and temporaries). Halves the larger side until it fits."""
    mb, nb = m, n
    while line_bytes * (mb + nb) + out_bytes * mb * nb > budget and (mb > 8 or nb > 8):
        if mb >= nb:
            mb = (mb + 1) // 2
        else:
            nb = (nb + 1) // 2
    return max(mb, 1), max(nb, 1)  # >= 1: a range step also for empty operands


#: Workspace allowed beyond inputs and output, as a multiple of the size of A and B
#: (:func:`input_bytes`).
WORKSPACE_FACTOR = 1.5
#: ... or as a share of the output's float64 size (M·N·8 bytes), where that is larger: thin K
#: (outer products), whose inputs are tiny next to the output. With the input share alone, a
#: 2000 x 1 x 2000 product ran in 15625 blocks of 16 x 16 outputs (12 s; numpy: 0.01 s).
OUTPUT_SHARE = 0.5
#: Bytes per element that :func:`input_bytes` counts at least: float16 inputs count as
#: float32. Every element of a block is held as a float64 scaled integer (four times a
#: float16), so a budget of 1.5x their own size cut float16 blocks so fine that n = 1024
#: took 3-4x longer (5.4-7.3 s against 1.7-1.8 s); float32 blocks cost 10-50 %.
MIN_INPUT_ITEMSIZE = 4


def input_bytes(A: Any, B: Any) -> int:
    """The size of A and B in bytes that the workspace limit is a multiple of: their own
    dtype's size (8 for float64, 4 for float32), float16 counted as float32
    (:data:`MIN_INPUT_ITEMSIZE`)."""
    return sum(X.size * max(X.dtype.itemsize, MIN_INPUT_ITEMSIZE) for X in (A, B))


def _input_budget(A: Any, B: Any) -> int:
    """:data:`WORKSPACE_FACTOR` times :func:`input_bytes` of A and B, less a quarter."""
    return int(0.75 * WORKSPACE_FACTOR * input_bytes(A, B))


def _output_budget(A: Any, B: Any) -> int:
    """:data:`OUTPUT_SHARE` times the float64 size of the M x N output, less a quarter."""
    return int(0.75 * OUTPUT_SHARE * 8 * A.shape[0] * B.shape[1])


def workspace_budget(A: Any, B: Any) -> int:
    """Bytes of block workspace aimed at: the larger of :data:`WORKSPACE_FACTOR` times the
    size of A and B (:func:`input_bytes`) and :data:`OUTPUT_SHARE` times the float64 size of
    the M x N output, less a quarter of it for numpy temporaries and the line statistics.
    Square problems take the input term (1.5·8·2n² against 0.5·8·n² for float64 inputs,
    1.5·4·2n² for float32); thin K (outer products) the output term."""
    return max(_input_budget(A, B), _output_budget(A, B))


def emulator_blocks(
    plan: OzakiPlan, m: int, n: int, budget_in: int, budget_out: int = 0
) -> tuple[int, int]:
    """Row and column block sizes (:func:`_blocks`) of :func:`ozaki2_emulate` /
    :func:`ozaki1_emulate` for an M x N output of ``plan``: the larger of two sizings, both
    with the measured peak per output, which :func:`round_limbs` reaches with its
    temporaries: ``16·nl + 188`` bytes for scheme II and ``16·nl + 180`` for scheme I with
    ``nl`` limbs (tracemalloc, either target), sized at ``16·nl + 192``.

    - Within ``budget_in`` (the input share of :func:`workspace_budget`), with the bytes of
      the arrays a block holds per line; the quarter of the workspace left aside covers the
      temporaries where the lines dominate (scheme II's residues are taken in row chunks,
      :func:`_residues`). Measured beyond the output, as a multiple of :func:`input_bytes`
      (float64, float32 and float16 inputs, fp64 target, 2026-11-28): 0.60-0.91x on square
      problems from n = 128 to 1024, 0.50-1.09x with thin M, N or K. Until then the held
      arrays' own size per output (2.6x and 1.4x less than the peak) sized these blocks, and
      float32 inputs at 128³ kept 1.54x their size.
    - Within ``budget_out`` (the output share), with the peak per line too: 32 (II) and
      ``15 + 2T`` (I) bytes per k.

    The blocking never changes a bit: every output is an exact integer rounded once."""
    k, nl, T = plan.k, plan.limbs, plan.terms
    peak_out = 8 * (2 * nl + 24)
    if plan.method == "ozaki2":
        # held per line: float64 scaled integers and one residue copy
        held = _blocks(m, n, 16 * k, peak_out, budget_in)
        peak_line = 32 * k
    else:
        # held per line: the int64 scaled integers, their T int8 digits and the T - 1 padded
        # digit copies of a slice product
        held = _blocks(m, n, (8 + 2 * T) * k, peak_out, budget_in)
        peak_line = (15 + 2 * T) * k
    if budget_out <= 0:
        return held
    peak = _blocks(m, n, peak_line, peak_out, budget_out)
    return peak if peak[0] * peak[1] > held[0] * held[1] else held


#: Row chunks of :func:`_residues`: at most this share of the block (and :data:`_CHUNK`
#: elements). A chunk's residues take two float64 temporaries, so the chunks hold at most a
#: quarter of the block's size at once.
_RESIDUE_CHUNKS = 8


def _residues(y: np.ndarray, m: int, dtype: Any) -> np.ndarray:
    """:func:`sym_mod` of a block's scaled integers ``y`` (float64, integer-valued, ``|y| <=
    2^62``) as ``dtype``, in float64 arithmetic that is exact at every step:
    ``y = hi·2^31 + lo`` with ``hi = floor(y·2^-31)`` and ``lo`` in ``[0, 2^31)`` (the
    difference of two floats whose exact value is representable), then ``hi·(2^31 mod m) +
    lo`` (an integer below 2^40) reduced by :func:`_sym_mod_small`. Int64 division, as
    :func:`sym_mod` takes, was 80 % of a call's time. Computed in row chunks of at most
    1/:data:`_RESIDUE_CHUNKS` of ``y`` (and :data:`_CHUNK` elements): the temporaries of the
    whole block peaked at about 3x the float64 size of A and B where one operand's lines
    dominate (thin M or N). Elementwise: the same values as :func:`sym_mod`."""
    rows, cols = y.shape
    step = max(1, min(-(-rows // _RESIDUE_CHUNKS), _CHUNK // max(1, cols)))
    c31 = float(pow(2, 31, m))
    out = np.empty(y.shape, dtype=dtype)
    for r0 in range(0, rows, step):
        blk = y[r0 : r0 + step]
        hi = np.floor(blk * 2.0**-31)
        lo = hi * -(2.0**31)
        lo += blk
        hi *= c31
        hi += lo
        del lo
        out[r0 : r0 + step] = _sym_mod_small(hi, m)
    return out


#: Largest K for which a float32 BLAS product of residues is exact: every partial sum is an
#: integer of magnitude <= 128·128·K <= 2^24.
RESIDUE_F32_KMAX = 2**24 // (128 * 128)  # 1024


def exact_f32_matmul(a: np.ndarray, b: np.ndarray, kmax: int) -> np.ndarray:
    """``a @ b`` exactly, as float64, for integer-valued ``a`` and ``b`` (any real dtype, such
    as float32 residues or int8 digits) whose partial sums over any ``kmax`` consecutive k stay
    integers below 2^24: float32 BLAS over K chunks of at most ``kmax`` (exact in any
    summation order), the chunks summed in float64 (exact while every sum is below 2^53).
    float32 BLAS ran about 5x faster than float64 here (64 x 1024 x 128: 0.2 against 1.1
    ms); until 2026-11-28 both schemes' products took float64 beyond K = 1024."""
    k = a.shape[1]
    if k <= kmax:  # one chunk
        return np.matmul(a.astype(np.float32, copy=False), b.astype(np.float32, copy=False)).astype(
            np.float64
        )
    c = np.zeros((a.shape[0], b.shape[1]))
    for k0 in range(0, k, kmax):
        c += a[:, k0 : k0 + kmax].astype(np.float32, copy=False) @ b[k0 : k0 + kmax].astype(
            np.float32, copy=False
        )
    return c


def _sym_mod_small(c: np.ndarray, m: int) -> np.ndarray:
    """Symmetric residue of integer-valued float64 ``c`` with ``|c| < 2^52``: ``c -
    m·rint(c/m)`` (exact: ``m·rint(c/m)`` and the difference are integers below 2^53) moved
    into ``[-floor(m/2), ceil(m/2) - 1]``; in place."""
    q = np.rint(c * (1.0 / m))
    q *= m
    c -= q
    c[c > (m - 1) // 2] -= m
    c[c < -(m // 2)] += m
    return c


def ozaki2_emulate(A: np.ndarray, B: np.ndarray, plan: OzakiPlan, sa: LineStats,
                   sb: LineStats) -> np.ndarray:  # fmt: skip
    """Scheme II on the CPU, blocked over rows and columns (see the module docstring). The
    limb sums run in float64: every term ``c_l·W[l, t]`` is below 2^40 and every sum below
    2^46, so they are exact integers. ``plan``, ``sa`` and ``sb`` come from :func:`plan_for`,
    which has refused norm bounds beyond int64 (:func:`check_norm_bounds`)."""
    m, k = A.shape
    n = B.shape[1]
    dtype = TARGETS[plan.target][2]
    D = np.empty((m, n), dtype=dtype)
    s_a, s_b = norm_shifts(sa, plan.q2), norm_shifts(sb, plan.q2)
    W, u, Ml = crt_constants(plan.moduli)
    Wf, Mf = W.astype(np.float64), Ml.astype(np.float64)
    nl = W.shape[1]
    mb, nb = emulator_blocks(plan, m, n, _input_budget(A, B), _output_budget(A, B))
    for r0 in range(0, m, mb):
        ya = scaled_integers(A[r0 : r0 + mb], s_a[r0 : r0 + mb], 1, "rint")
        for c0 in range(0, n, nb):
            yb = scaled_integers(B[:, c0 : c0 + nb], s_b[c0 : c0 + nb], 0, "rint")
            shape = (ya.shape[0], yb.shape[1])
            acc = [np.zeros(shape) for _ in range(nl)]
            qest = np.zeros(shape)
            tmp = np.empty(shape)
            for li, mod in enumerate(plan.moduli):
                # |C| <= 128·128·K < 2^53 (2^24 with float32): exact in any summation order.
                ra = _residues(ya, mod, np.float32)
                rb = _residues(yb, mod, np.float32)
                c = _sym_mod_small(exact_f32_matmul(ra, rb, RESIDUE_F32_KMAX), mod)
                del ra, rb
                for t in range(nl):
                    np.multiply(c, Wf[li, t], out=tmp)
                    acc[t] += tmp
                np.multiply(c, u[li], out=tmp)
                qest += tmp
            q = np.rint(qest)
            limbs = [(acc[t] - q * Mf[t]).astype(np.int64) for t in range(nl)]
            del acc, qest, q
            normalize_limbs(limbs)
            e = -(s_a[r0 : r0 + mb, None] + s_b[None, c0 : c0 + nb])
            D[r0 : r0 + mb, c0 : c0 + nb] = round_limbs(limbs, e, plan.target)
            del yb, c, tmp, limbs, e
        del ya  # (the last block's arrays are gone before the special values' blocks)
    apply_specials(D, A, B, sa, sb, plan.target)
    return D


def slices(Xi: np.ndarray, t: int) -> list[np.ndarray]:
    """Signed base-2^7 digits of int64 ``Xi`` (|Xi| < 2^(7t)) as int8 arrays, most significant
    first, each with the sign of ``Xi`` and magnitude <= 127. One int64 temporary at a time
    besides ``|Xi|``."""
    xp = array_module(Xi)
    neg = Xi < 0
    mag = xp.abs(Xi)
    out = []
    for s in range(t):
        digit = mag >> (7 * (t - 1 - s))
        digit &= 127
        d8 = digit.astype(np.int8)
        del digit
        out.append(xp.where(neg, -d8, d8))
    return out


#: ``slice_products(da, db, g)``: ``sum_s da[s-1] @ db[g-s-1]`` over ``s = 1 .. g-1`` as an
#: int64 array (the digits of A's block rows and B's block columns, most significant first).
SliceProducts = Callable[[list[Any], list[Any], int], Any]


#: Largest K for which a float32 BLAS product of int8 digits is exact: every partial sum is
#: an integer of magnitude <= 127²·K < 2^24.
DIGIT_F32_KMAX = 2**24 // 127**2  # 1040


def blas_slice_products(da: list[Any], db: list[Any], g: int) -> Any:
    """:data:`SliceProducts` by BLAS: on the CPU :func:`exact_f32_matmul` over K chunks of at
    most :data:`DIGIT_F32_KMAX`; on CuPy float64, where every ``|sum| <= 127·127·K < 2^53``.
    Either way the same integers."""
    xp = array_module(da[0])
    G = xp.zeros((da[0].shape[0], db[0].shape[1]), dtype=np.int64)
    for s in range(1, g):
        a, b = da[s - 1], db[g - s - 1]
        if xp is np:
            G += exact_f32_matmul(a, b, DIGIT_F32_KMAX).astype(np.int64)
        else:
            G += (a.astype(np.float64) @ b.astype(np.float64)).astype(np.int64)
    return G


def ozaki1_emulate(A: np.ndarray, B: np.ndarray, plan: OzakiPlan, sa: LineStats,
                   sb: LineStats, slice_products: SliceProducts = blas_slice_products,
                   budget: int | None = None) -> np.ndarray:  # fmt: skip
    """Scheme I, blocked over rows and columns (see the module docstring), on the CPU (the
    steps also run on CuPy arrays; the GPU backend is :mod:`precision.gemm.ozaki1_cuda`'s
    kernels, same bits). ``budget``: block workspace bytes for the arrays a block holds
    (:func:`emulator_blocks`' first sizing; default: the input and the output share of
    :func:`workspace_budget`, both sizings). Digits are int8 values; every step after the
    products is exact int64 arithmetic, so the result does not depend on how the products
    are summed."""
    xp = array_module(A)
    m, k = A.shape
    n = B.shape[1]
    T = plan.terms
    dtype = TARGETS[plan.target][2]
    D = xp.empty((m, n), dtype=dtype)
    s_a, s_b = shifts(sa, 7 * T), shifts(sb, 7 * T)
    s_a, s_b = xp.asarray(s_a), xp.asarray(s_b)
    nl = plan.limbs
    if budget is None:
        mb, nb = emulator_blocks(plan, m, n, _input_budget(A, B), _output_budget(A, B))
    else:
        mb, nb = emulator_blocks(plan, m, n, budget)  # (a given budget: the held arrays)
    for r0 in range(0, m, mb):
        ia = scaled_integers(A[r0 : r0 + mb], s_a[r0 : r0 + mb], 1, "trunc").astype(np.int64)
        da = slices(ia, T)
        del ia
        for c0 in range(0, n, nb):
            ib = scaled_integers(B[:, c0 : c0 + nb], s_b[c0 : c0 + nb], 0, "trunc")
            ib = ib.astype(np.int64)  # (the float64 block is freed before the digits are cut)
            db = slices(ib, T)
            del ib
            acc = [xp.zeros((da[0].shape[0], db[0].shape[1]), dtype=np.int64) for _ in range(nl)]
            for g in range(2, T + 2):  # Horner over g = s + t (1-based slices)
                G = slice_products(da, db, g)
                if g > 2:
                    for t in range(nl):
                        acc[t] <<= 7
                acc[0] += G
                normalize_limbs(acc)
            e = 7 * (T - 1) - (s_a[r0 : r0 + mb, None] + s_b[None, c0 : c0 + nb])
            D[r0 : r0 + mb, c0 : c0 + nb] = round_limbs(acc, e, plan.target)
            del db, acc, G, e
        del da  # (the last block's arrays are gone before the special values' blocks)
    apply_specials(D, A, B, sa, sb, plan.target, xp=xp)
    return D


# ----------------------------------------------------------------------------- error bound


def error_bound(A: np.ndarray, B: np.ndarray, plan: OzakiPlan) -> np.ndarray:
    """Elementwise bound on ``|D - A@B|`` (float64 array, finite inputs) for ``plan``:

    ``u·(|A|·|B|) + (1 + u)·E`` with ``u = 2^-p`` (the final rounding, bounded through
    ``|A@B| <= |A|·|B|``; plus half the smallest
    subnormal) and, with ``da_i`` / ``db_j`` the largest representation error of an entry of
    row ``i`` / column ``j`` (``2^(-s_i-1)`` for rint with scale ``2^s_i``, scheme II;
    ``2^(ea_i-7T)`` for trunc, scheme I),
    ``E = da_i·sum_k|B_kj| + db_j·sum_k|A_ik| + K·da_i·db_j``, plus for scheme I the dropped
    slice pairs: ``K·(T-1)T/2·127^2·2^(ea_i+eb_j-7(T+2))``.

    Evaluation: every term is formed relative to the line scales ``2^ea_i`` and ``2^eb_j``
    (entries then lie in [0, 1)) and scaled by ``2^(ea_i + eb_j)`` once at the end, so it
    overflows only where the bound exceeds the float64 range, and an all-zero line contributes
    0 (never ``0·Inf``). The float64 value is rounded up by a factor ``1 + 2^-40`` and then by
    ``2^-1071`` (16 times 2^-1075) absolute, which covers its roundings below the normal range
    and the half subnormal 2^-1075 of fp64, which float64 cannot hold. Where ``|A|·|B|``
    exceeds the target's largest finite value the output may overflow, and the bound is Inf.
    ``A`` and ``B`` are checked as :func:`ozaki_gemm` checks them, and ``plan`` must have been
    made for their K (ValueError)."""
    if not isinstance(plan, OzakiPlan):
        raise TypeError(
            f"plan: expected an OzakiPlan (plan_for, make_plan); got {type(plan).__name__}"
        )
    p, emin_sub, _ = TARGETS[plan.target]
    A, B = (x.astype(np.float64, copy=False) for x in _host_operands(A, B))  # (full-size work)
    k = A.shape[1]
    if plan.k != k:
        raise ValueError(
            f"error_bound: the plan was made for K = {plan.k}, but A (M x K) and B (K x N) "
            f"have K = {k}; make it with plan_for(A, B, ...)"
        )
    sa, sb = line_stats(A, 1), line_stats(B, 0)
    ea = np.where(sa.zero, 0, sa.emax)
    eb = np.where(sb.zero, 0, sb.emax)
    # da_i·2^-ea_i and db_j·2^-eb_j: at least 2^-63 (scheme II) / exactly 2^-7T (scheme I)
    if plan.method == "ozaki2":
        check_norm_bounds(sa, sb, k)
        ra = np.ldexp(1.0, -(norm_shifts(sa, plan.q2) + ea) - 1)
        rb = np.ldexp(1.0, -(norm_shifts(sb, plan.q2) + eb) - 1)
    else:
        ra = np.full(ea.shape, 2.0 ** (-7 * plan.terms))
        rb = np.full(eb.shape, 2.0 ** (-7 * plan.terms))
    ra = np.where(sa.zero, 0.0, ra)
    rb = np.where(sb.zero, 0.0, rb)
    a = np.ldexp(np.abs(A), -ea[:, None])
    b = np.ldexp(np.abs(B), -eb[None, :])
    E = ra[:, None] * b.sum(axis=0)[None, :] + a.sum(axis=1)[:, None] * rb[None, :]
    E += k * ra[:, None] * rb[None, :]
    if plan.method == "ozaki1":
        T = plan.terms
        pairs = T * (T - 1) // 2 * 127 * 127
        nonzero = ~sa.zero[:, None] & ~sb.zero[None, :]
        E += np.where(nonzero, k * pairs * 2.0 ** (-7 * (T + 2)), 0.0)
    u = 2.0**-p
    e = ea[:, None] + eb[None, :]
    ab = a @ b
    # Rounded up past the float64 errors of these sums of K nonnegative terms (each within
    # K·2^-53 relative; a BLAS product too), whatever K is.
    slack = 1 + 2.0**-40 + (k + 4) * 2.0**-52
    with np.errstate(over="ignore"):  # Inf where the bound exceeds the float64 range
        bound = np.ldexp(u * ab + (1 + u) * E, e)
        bound = (bound + 2.0 ** (emin_sub - 1)) * slack + 2.0**-1071
        # the result may overflow to ±Inf where |A|·|B| passes the target's largest value
        overflow = np.ldexp(ab * slack, e) > get_format(plan.target).max_normal
    return np.where(overflow, np.inf, bound)


# ------------------------------------------------------------------------------ entry point


def _host_float(X: Any, name: str) -> np.ndarray:
    """``X`` (numpy or CuPy array, or nested lists) as a host array of float64, float32 or
    float16 in either byte order and any layout, as it is (no copy of a numpy array); other
    dtypes raise. The emulator converts to float64 (exact) per block or row chunk where it
    reads the operands, so no dtype, byte order or layout costs a whole copy."""
    if hasattr(X, "get") and not isinstance(X, np.ndarray):  # a CuPy array
        X = X.get()
    X = np.asarray(X)
    _check_float_dtype(X, name)
    return X


def _check_float_dtype(X: Any, name: str) -> None:
    """TypeError unless ``X`` (numpy or CuPy array, or nested lists) is float64, float32 or
    float16 in either byte order: the dtypes that convert to float64 exactly."""
    dtype = np.dtype(X.dtype if hasattr(X, "dtype") else np.asarray(X).dtype)
    if dtype.newbyteorder("=") not in (np.float64, np.float32, np.float16):
        raise TypeError(
            f"{name} has dtype {dtype}; the ozaki methods take float64, float32 or float16 "
            f"arrays (convert first, e.g. {name}.astype(np.float64), where that is exact)"
        )


def _host_operands(A: Any, B: Any) -> tuple[np.ndarray, np.ndarray]:
    """``A`` and ``B`` as host matrices of their float dtypes (:func:`_host_float`) whose
    shapes agree."""
    a, b = _host_float(A, "A"), _host_float(B, "B")
    _check_shapes(a.shape, b.shape)
    return a, b


def _check_shapes(sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    if len(sa) != 2 or len(sb) != 2 or sa[1] != sb[0]:
        raise ValueError(f"A (M x K) and B (K x N) must agree: got {sa} and {sb}")


def ozaki_gemm(
    A: Any,
    B: Any,
    *,
    method: str = "ozaki2",
    fmt: Any = "int8",
    target: Any = "fp64",
    terms: int | str = "auto",
    backend: str = "emulator",
) -> np.ndarray:
    """``A @ B`` by Ozaki scheme I or II, rounded once to ``target`` (see module docstring).

    ``A`` (M x K) and ``B`` (K x N): float64, float32 or float16 arrays (numpy, or CuPy with
    ``backend="cuda"``); the emulator reads float32 / float16 operands block by block,
    converted to float64 exactly, so they take no whole float64 copy (docs/ozaki.md
    "Workspace"). ``method``: ``"ozaki1"`` (``fmt`` ``"int8"`` or ``"fp16"``) or
    ``"ozaki2"`` (``"int8"``); ``fmt`` and ``target`` (``"fp64"`` or ``"fp32"``) take any
    alias (``"s8"``, ``"double"``, ``"single"``, ``np.float32``). ``terms``: slices / moduli, or
    ``"auto"`` (:func:`auto_terms`). ``backend``: ``"emulator"`` (CPU) or ``"cuda"``
    (:mod:`precision.gemm.ozaki_cuda`, same bits). Returns a numpy array of ``target``'s
    dtype.
    """
    fmt, target = canonical_args(method, fmt, target)
    if backend == "cuda":  # (the emulator checks these as it reads the operands)
        _check_float_dtype(A, "A")
        _check_float_dtype(B, "B")
        _check_shapes(np.shape(A), np.shape(B))
        count = explicit_terms(terms)
        if count is not None:
            make_plan(method, fmt, target, count, np.shape(A)[1])  # (ValueError out of range)
    if backend == "cuda" and method == "ozaki1":
        from precision.gemm.ozaki1_cuda import ozaki1_cuda

        return np.asarray(ozaki1_cuda(A, B, fmt=fmt, target=target, terms=terms)[0].get())
    if backend == "cuda":
        from precision.gemm.ozaki_cuda import ozaki_gemm_cuda

        out = ozaki_gemm_cuda(A, B, method=method, fmt=fmt, target=target, terms=terms)
        return np.asarray(out.get())
    if backend != "emulator":
        raise ValueError(f"ozaki methods run on backend 'emulator' or 'cuda', got {backend!r}")
    a, b = _host_operands(A, B)
    plan, sa, sb = plan_for(a, b, method=method, fmt=fmt, target=target, terms=terms)
    if method == "ozaki2":
        return ozaki2_emulate(a, b, plan, sa, sb)
    return ozaki1_emulate(a, b, plan, sa, sb)


def chosen_terms(
    A: Any, B: Any, *, method: str, fmt: Any = "int8", target: Any = "fp64", terms: int | str
) -> int:
    """The number of slices (scheme I) / moduli (scheme II) that :func:`ozaki_gemm` uses for
    these operands: ``terms`` itself when it is an int, else what ``"auto"`` picks from the
    operands' exponent spread (:func:`auto_terms`; the line statistics are exact, so every
    backend picks the same). Costs one pass over A and B. The arguments are checked as
    :func:`ozaki_gemm` checks them (``fmt`` / ``target`` aliases, shapes, ``terms``; the
    dtypes for ``"auto"``)."""
    fmt, target = canonical_args(method, fmt, target)
    n = explicit_terms(terms)
    if n is not None:
        _check_shapes(np.shape(A), np.shape(B))
        return make_plan(method, fmt, target, n, np.shape(A)[1]).terms
    a, b = _host_operands(A, B)
    plan, _, _ = plan_for(a, b, method=method, fmt=fmt, target=target, terms=terms)
    return plan.terms
