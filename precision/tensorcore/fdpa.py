"""The vectorised fused dot-product-add block: the arithmetic inside a tensor core.

One block computes, for every output element (i, j) at once,

    d = round_out( Σ_k trunc_E(a[i,k]·b[k,j]) + trunc_E(c[i,j]) )

where each product is exact, ``trunc_E`` truncates a term toward zero to a multiple of
``2**(E - F)``, E is the block's anchor exponent (the largest *anchor* over the nonzero
products, the nonzero ``c`` and the floor ``e_zero``), and the truncated terms are summed
exactly. A product's anchor is ``ea + eb``, the sum of its inputs' leading-bit exponents (a
subnormal input counts at its format's emin); ``c``'s anchor is its own exponent.

Why float64 is exact here: every supported input has at most 11 significant bits, so products
have at most 22 and are exact in float64; scaling by powers of two is exact; truncated terms
are integers below 2**(F+2) ≤ 2**27 and a block has at most 33 of them, so their sum is an
integer below 2**33, exact in float64. The result ``S·2**(E-F)`` is again exact, and only
``round_out`` rounds.

Operands arrive pre-decoded (see :func:`decode`): float64 values and int16 anchor exponents,
with zero operands given a very negative anchor so that a zero product never raises E above the
``e_zero`` floor.
"""

from __future__ import annotations

import functools

import numpy as np

from precision.formats import get_format

# Anchor exponent of a zero operand: far below any real anchor, so that the sum of two of them
# (or of one and a real exponent) stays below every e_zero floor, and within int16.
ZERO_ANCHOR = np.int16(-16000)


def decode(values: np.ndarray, emin: int) -> tuple[np.ndarray, np.ndarray]:
    """Float64 values and int16 leading-bit exponents of an array of finite-or-not numbers.

    The exponent of a normal x is floor(log2|x|); subnormals count at ``emin``; zeros get
    :data:`ZERO_ANCHOR`. Non-finite values get 1024 (their blocks are resolved by the
    special-value path).

    floor(log2|x|) is read from the float64 exponent field (biased by 1023): every value of
    the narrower formats is a normal float64 there, and a float64 subnormal (field 0, -1023)
    is below every ``emin`` as well, so the clamp gives ``emin`` as floor(log2|x|) would.

    One-byte formats (fp8) are looked up in a table of all 256 codes, decoded as above
    (:func:`_byte_tables`): the same values, at a fraction of the cost of ml_dtypes' cast.
    """
    values = np.asarray(values)
    if _is_byte_float(values.dtype):
        v_table, e_table = _byte_tables(values.dtype, emin)
        codes = values.view(np.uint8)
        return v_table[codes], e_table[codes]
    return _decode_direct(values, emin)


def _is_byte_float(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is a one-byte floating-point format (ml_dtypes' fp8 and smaller)."""
    return dtype.itemsize == 1 and dtype.kind not in "iub"


@functools.cache
def _byte_tables(dtype: np.dtype, emin: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_decode_direct` of every code 0..255 of the one-byte format ``dtype``: the
    float64 values and int16 exponents that :func:`decode` reads by code."""
    return _decode_direct(np.arange(256, dtype=np.uint8).view(dtype), emin)


def _decode_direct(values: np.ndarray, emin: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decode`, element by element through a float64 cast."""
    # NaN payloads of narrow formats cast with a warning
    with np.errstate(invalid="ignore"):
        v = np.asarray(values, dtype=np.float64)
    e = (v.view(np.uint64) >> np.uint64(52)).astype(np.int16)  # sign and biased exponent
    e &= np.int16(0x7FF)
    e -= np.int16(1023)
    np.maximum(e, np.int16(emin), out=e)
    e[v == 0] = ZERO_ANCHOR
    return v, e


def pow2(e: np.ndarray) -> np.ndarray:
    """``2.0**e`` (float64) of an integer array ``e`` within the normal range [-1022, 1023],
    built from its exponent bits (exact, as ``np.ldexp(1.0, e)``, at a fraction of its cost).
    Outside that range the result is meaningless (never an error)."""
    bits = e.astype(np.int64, copy=False) + np.int64(1023)
    bits <<= np.int64(52)
    return bits.view(np.float64)


def round_rz_to_grid(v: np.ndarray, frac_bits: int, emin: int) -> np.ndarray:
    """Round float64 ``v`` toward zero to ``frac_bits`` fraction bits with exponent floor emin.

    ``frac_bits = 23, emin = -126`` is fp32 RZ (subnormals kept); ``frac_bits = 13`` is the
    e8m13 output of fp8 QMMA/QGMMA. Values with |v| ≥ 2**(emin) are truncated on the bit level
    (clearing the low ``52 - frac_bits`` bits of the float64); smaller ones to multiples of
    ``2**(emin - frac_bits)``. No overflow handling: the caller decides.
    """
    bits = v.view(np.uint64)
    mask = np.uint64((0xFFFFFFFFFFFFFFFF << (52 - frac_bits)) & 0xFFFFFFFFFFFFFFFF)
    out = (bits & mask).view(np.float64)
    small = np.abs(v) < 2.0**emin
    if small.any():
        q = 2.0 ** (emin - frac_bits)
        out[small] = np.trunc(v[small] / q) * q
    return out


def round_out(v: np.ndarray, rounding: str) -> np.ndarray:
    """Round exact float64 block sums ``v`` into the accumulator format.

    - ``"rz"``: fp32, toward zero, subnormals kept, |v| ≥ 2**128 → ±Inf (the hardware overflows
      to Inf even under RZ).
    - ``"rz_e8m13"``: as ``"rz"`` but only 13 fraction bits kept (grid 2**-139 below 2**-126).
    - ``"rne"``: fp16, round to nearest even, subnormals kept, overflow → ±Inf.
    Exact zeros (and results that round to zero) come out as +0.
    """
    if rounding == "rne":
        # NumPy converts float64 -> float16 directly with one correct RNE rounding; overflow
        # gives ±Inf, as on the hardware.
        with np.errstate(over="ignore"):
            out16 = v.astype(np.float16)
        out16 += np.float16(0.0)  # -0 -> +0
        return out16
    frac = 23 if rounding == "rz" else 13
    t = round_rz_to_grid(v, frac, -126)
    with np.errstate(over="ignore"):
        out = t.astype(np.float32)  # exact below 2**128; ±Inf at or above
    out += np.float32(0.0)  # -0 -> +0
    return out


#: A block call sums its L products one at a time where it has at least this many outputs
#: (R·M·N) in rows of fewer than :data:`_LOOP_OVER_L_BELOW_N` (stacks of small tiles): there
#: the [R, M, L, N] products of the other path loop over rows of N = 8 or 16 elements, which
#: made it 2.2-2.5x slower (400 tiles of 16x16x8, one thread). Wide rows (a chain of
#: mma() over whole matrices, N = 256 to 2048) keep the other path: numpy's loops are long
#: there, and per column the 6·L small operations per call took the chain's two threads
#: 1.5-2.3x longer, each waiting on the other's hold of the GIL (mma of 512^3 f16 in
#: 0.70 s instead of 0.48, of 2048^3 in 43.6 s instead of 19.2, on 2 cores).
_LOOP_OVER_L_FROM = 4096
_LOOP_OVER_L_BELOW_N = 32


def _exact_sum_at_once(
    a: np.ndarray,
    ea: np.ndarray,
    b: np.ndarray,
    eb: np.ndarray,
    c: np.ndarray,
    ec: np.ndarray,
    frac_bits: int,
    e_zero: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(E, S) of :func:`block` through [R, M, L, N] products: E = max(product anchors, c's,
    e_zero) per output, S = sum of trunc(term·2^(F-E)) (Inf·0 -> NaN is resolved by specials).
    For finite inputs E lies between e_zero and 2·emax (or c's exponent): 2^(F-E) is a normal
    float64."""
    anchor = ea[:, :, :, None] + eb[:, None, :, :]
    e_max = anchor.max(axis=2)
    np.maximum(e_max, ec, out=e_max)
    np.maximum(e_max, np.int16(e_zero), out=e_max)
    scale = pow2(np.int64(frac_bits) - e_max)  # 2^(F-E)
    with np.errstate(invalid="ignore", over="ignore"):
        p = a[:, :, :, None] * b[:, None, :, :]
        p *= scale[:, :, None, :]
        np.trunc(p, out=p)
        s = p.sum(axis=2)
        s += np.trunc(c * scale)
    return e_max, s


def _exact_sum_by_column(
    a: np.ndarray,
    ea: np.ndarray,
    b: np.ndarray,
    eb: np.ndarray,
    c: np.ndarray,
    ec: np.ndarray,
    frac_bits: int,
    e_zero: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(E, S) as :func:`_exact_sum_at_once`, one product column l at a time ([R, M, N]
    temporaries): the same E, and the same exact S (integer terms, any order)."""
    e_max = np.maximum(ec, np.int16(e_zero))
    for l in range(a.shape[2]):
        np.maximum(e_max, ea[:, :, l, None] + eb[:, None, l, :], out=e_max)
    scale = pow2(np.int64(frac_bits) - e_max)  # 2^(F-E)
    with np.errstate(invalid="ignore", over="ignore"):
        s = np.trunc(c * scale)
        term = np.empty_like(s)
        for l in range(a.shape[2]):
            np.multiply(a[:, :, l, None], b[:, None, l, :], out=term)
            term *= scale
            np.trunc(term, out=term)
            s += term
    return e_max, s


def block(
    a: np.ndarray,
    ea: np.ndarray,
    b: np.ndarray,
    eb: np.ndarray,
    c: np.ndarray,
    ec: np.ndarray,
    *,
    frac_bits: int,
    e_zero: int,
    rounding: str,
    check_special: bool,
) -> np.ndarray:
    """One fused block for a stack of output tiles.

    Shapes: ``a, ea [R, M, L]``, ``b, eb [R, L, N]``, ``c, ec [R, M, N]`` (values float64,
    anchors int16, from :func:`decode`; ``c`` is the accumulator's current value). Returns the
    rounded result in the accumulator dtype (float32 or float16) with shape ``[R, M, N]``.
    NaN results are canonical (0x7FFFFFFF / 0x7FFF); Inf results keep their sign.

    Every truncated term is an integer below 2^(F + 3) in magnitude and a block has at most
    64 terms plus c, so the float64 sum S is exact in any order: large stacks of tiles are
    summed one product column at a time where their tiles are narrow (no [R, M, L, N]
    temporaries with short rows, about twice as fast), all others at once; the two give the
    same bits.
    """
    n = b.shape[2]
    if n < _LOOP_OVER_L_BELOW_N and a.shape[0] * a.shape[1] * n >= _LOOP_OVER_L_FROM:
        e_max, s = _exact_sum_by_column(a, ea, b, eb, c, ec, frac_bits, e_zero)
    else:
        e_max, s = _exact_sum_at_once(a, ea, b, eb, c, ec, frac_bits, e_zero)
    # the exact block sum S·2^(E-F) (outputs with a non-finite term have an arbitrary E: the
    # special-value path overwrites them)
    with np.errstate(invalid="ignore", over="ignore"):
        s *= pow2(e_max - np.int64(frac_bits))
    out = round_out(s, rounding)
    if check_special:
        _apply_specials(out, a, b, c)
    return out


# The NaN NVIDIA GPUs produce (tensor cores, FADD/FMUL on CUDA cores), per storage dtype.
#: The NaN the tensor cores write, per accumulator storage dtype (the format registry's
#: ``gpu_canonical_nan_bits``, recorded on the H200: fp32 0x7FFFFFFF, fp16 0x7FFF).
CANONICAL_NAN_BITS: dict[np.dtype, int] = {
    get_format(name).storage: int(get_format(name).gpu_canonical_nan_bits or 0)
    for name in ("fp32", "fp16")
}


def canonicalize_nan(x: np.ndarray) -> np.ndarray:
    """Give every NaN of the float32/float16 array ``x`` the GPU's canonical bits, in place.

    Recorded H200 outputs show a NaN result is always the positive quiet NaN 0x7FFFFFFF
    (fp32) / 0x7FFF (fp16), whatever the input payloads; numpy on x86 gives 0xFFC00000.
    Returns ``x``.
    """
    nan = np.isnan(x)
    if nan.any():
        x.view(np.uint32 if x.dtype == np.float32 else np.uint16)[nan] = CANONICAL_NAN_BITS[x.dtype]
    return x


def _apply_specials(out: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """Overwrite results of blocks with non-finite terms by the IEEE value of the exact sum.

    A float64 sum of the exact products and ``c`` cannot overflow (products of these formats are
    below 2**256), so it is non-finite exactly when a term is: NaN for a NaN input, Inf·0 or
    +Inf together with −Inf, else the signed Inf. NaN becomes the canonical NaN of ``out``.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        p = a[:, :, :, None] * b[:, None, :, :]
        total = p.sum(axis=2) + c
    bad = ~np.isfinite(total)
    if not bad.any():
        return
    out[bad] = total[bad].astype(out.dtype)
    canonicalize_nan(out)
