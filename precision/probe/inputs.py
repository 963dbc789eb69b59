"""Seeded input generators for the tensor-core probes, one per data kind.

Every generator returns raw bit patterns ``a [T,16,K]``, ``b [T,K,8]``, ``c [T,16,8]`` in the
unsigned container type of the instruction's formats (see :mod:`precision.probe.catalog`). The
kinds:

- ``small_int``: small integers whose exact sum every path represents (layout self-check).
- ``normal``: random sign and significand, magnitude in [0.5, 2) (exponent 0 or -1).
- ``wide_exp``: random exponents over the whole range (subnormals included), or in a narrow
  random window, with c scaled relative to the largest product.
- ``random_bits``: uniform bit patterns (NaN/Inf encodings included; tf32 low 13 bits zero).
- ``cancellation``: c = -(sum of products) rounded to c's format; exact opposite product pairs;
  near-opposite pairs (one last-bit flip); zero, -0 or tiny c.
- ``subnormal``: subnormal inputs, products near the zero-exponent floor (2^-133 for an f32,
  2^-21 for an f16 accumulator), zero/-0/subnormal c.
- ``special``: NaN (various payloads) in a/b/c, +-Inf, Inf*0, +Inf and -Inf in one block,
  overflow of the exact sum, +-0 operands, -0 c, all-zero rows.
- ``tf32_lowbits``: tiles in triples (low 13 bits random and nonzero; the same with those bits
  cleared; the same rounded to nearest-even at bit 13), so the recording settles how the
  hardware reads them.
- ``extreme`` (int8): operands near +-127/-128 and c near +-2^31, so the sum overflows int32.
- ``exp_floor``: near-tie sums at the bottom of the output range (bf16/tf32 -> f32, f16 -> f16)
  that reveal which exponent a zero c / zero product anchors the alignment at.
"""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np

from precision.formats import Format
from precision.probe.catalog import (
    F16,
    Probe,
    kinds_for,
)

M, N = 16, 8
Bits = tuple[np.ndarray, np.ndarray, np.ndarray]

# ---------------------------------------------------------------------------------------------
# bit-level helpers


def _pack(fmt: Format, sign, field, mant) -> np.ndarray:
    """Bits ``sign | field | mant`` at ``fmt.bit_layout``'s positions, no validity check."""
    lay = fmt.bit_layout
    sign = np.asarray(sign, np.uint64)
    field = np.asarray(field, np.uint64)
    mant = np.asarray(mant, np.uint64)
    bits = (
        (sign << np.uint64(lay.sign_shift))
        | (field << np.uint64(lay.exponent_shift))
        | (mant << np.uint64(lay.mantissa_shift))
    )
    return bits.astype(lay.uint)


def compose(fmt: Format, sign, field, mant) -> np.ndarray:
    """Bits of ``(-1)^sign * field/mantissa`` in ``fmt``'s container (mant = trailing bits).

    For e4m3 an encoding S.1111.111 (NaN) requested as finite is moved to S.1111.110 (448).
    """
    field = np.asarray(field, np.uint64)
    mant = np.asarray(mant, np.uint64)
    if not fmt.has_inf:
        top = (field == fmt.max_exponent_field) & (mant == (1 << fmt.mantissa_bits) - 1)
        mant = np.where(top, mant - 1, mant)
    return _pack(fmt, sign, field, mant)


def _value_mask(fmt: Format) -> np.unsignedinteger:
    """Container mask of the bits that belong to the value (all but tf32's 13 pad bits)."""
    lay = fmt.bit_layout
    return lay.uint.type(((1 << lay.container_bits) - 1) & ~lay.pad_mask)


def random_mant(fmt: Format, shape, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, 1 << fmt.mantissa_bits, size=shape, dtype=np.uint64)


def with_fields(fmt: Format, field, rng: np.random.Generator) -> np.ndarray:
    """Random sign and trailing significand, given exponent fields."""
    field = np.asarray(field)
    sign = rng.integers(0, 2, size=field.shape)
    return compose(fmt, sign, field, random_mant(fmt, field.shape, rng))


def with_exponent(fmt: Format, sign, e, rng: np.random.Generator) -> np.ndarray:
    """Values whose leading bit has weight 2^e (random lower bits), sign given.

    ``e`` below ``emin`` gives subnormals; below the smallest subnormal it gives zero; above
    the largest finite exponent it is clipped to it.
    """
    e = np.asarray(e, np.int64)
    sign = np.broadcast_to(np.asarray(sign), e.shape)
    emax = fmt.max_exponent_field - fmt.bias
    e = np.minimum(e, emax)
    mant = random_mant(fmt, e.shape, rng)
    normal = e >= fmt.emin
    field = np.where(normal, e + fmt.bias, 0)
    # a subnormal's leading trailing-field bit sits at position mantissa_bits - (emin - e)
    pos = e - fmt.emin + fmt.mantissa_bits
    lead = np.where((pos >= 0) & ~normal, np.left_shift(1, np.clip(pos, 0, 62)), 0)
    lead = lead.astype(np.uint64)
    sub_mant = lead | (mant & np.maximum(lead, np.uint64(1)) - np.uint64(1))
    mant = np.where(normal, mant, np.where(lead > 0, sub_mant, 0))
    return compose(fmt, sign, field, mant)


def from_values(fmt: Format, x: np.ndarray) -> np.ndarray:
    """Bits of float64 ``x`` in ``fmt`` (finite values clipped to the largest finite one).

    Rounding is whatever the numpy/ml_dtypes cast does (tf32: cast to f32 then the low 13 bits
    cleared): this only makes inputs, whose exact bits are what gets recorded.
    """
    if fmt.is_integer:
        info = np.iinfo(fmt.storage)
        return np.clip(np.rint(x), info.min, info.max).astype(fmt.storage).view(fmt.bits_dtype)
    big = float(ml_dtypes.finfo(fmt.storage).max)
    v = np.clip(x, -big, big).astype(fmt.storage).view(fmt.bits_dtype)
    if fmt.pad_bits:
        v = v & _value_mask(fmt)
    return v


def values(fmt: Format, bits: np.ndarray) -> np.ndarray:
    """float64 (or int64 for integer formats) values of bit patterns (tf32 pad bits ignored)."""
    if fmt.pad_bits:
        bits = bits & _value_mask(fmt)
    v = bits.view(fmt.storage)
    if fmt.is_integer:
        return v.astype(np.int64)
    with np.errstate(invalid="ignore"):
        return v.astype(np.float64)


def nan_bits(fmt: Format, shape, rng: np.random.Generator) -> np.ndarray:
    """NaN encodings with random sign and random nonzero payload (quiet and signalling)."""
    sign = rng.integers(0, 2, size=shape)
    if not fmt.has_inf:  # e4m3: the only NaNs are S.1111.111
        return _pack(
            fmt,
            sign,
            np.full(shape, (1 << fmt.exponent_bits) - 1),
            (1 << fmt.mantissa_bits) - 1,
        )
    mant = rng.integers(1, 1 << fmt.mantissa_bits, size=shape, dtype=np.uint64)
    return compose(fmt, sign, np.full(shape, (1 << fmt.exponent_bits) - 1), mant)


def inf_bits(fmt: Format, sign) -> np.ndarray:
    """+-Inf encodings (e4m3 has none: its largest finite value, 448, is returned instead)."""
    sign = np.asarray(sign)
    if not fmt.has_inf:
        return compose(
            fmt, sign, np.full(sign.shape, fmt.max_exponent_field), (1 << fmt.mantissa_bits) - 2
        )
    return compose(fmt, sign, np.full(sign.shape, (1 << fmt.exponent_bits) - 1), 0)


def exact_dot(instr: Probe, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum_k a[t,i,k] b[t,k,j] in float64 (int64 for integers); exact for the kinds' ranges."""
    return np.matmul(values(instr.a_fmt, a), values(instr.a_fmt, b))


def _normal_fields(fmt: Format, shape, rng, spread: int = 0) -> np.ndarray:
    lo = max(fmt.bias - 1 - spread, 1)
    hi = min(fmt.bias + spread, fmt.max_exponent_field)
    return rng.integers(lo, hi + 1, size=shape)


def _shapes(instr: Probe, T: int):
    return (T, M, instr.K), (T, instr.K, N), (T, M, N)


# ---------------------------------------------------------------------------------------------
# kinds


def gen_small_int(instr: Probe, T: int, rng: np.random.Generator) -> Bits:
    sa, sb, sc = _shapes(instr, T)
    a = rng.integers(-4, 5, size=sa).astype(np.float64)
    b = rng.integers(-4, 5, size=sb).astype(np.float64)
    c = rng.integers(-16, 17, size=sc).astype(np.float64)
    return from_values(instr.a_fmt, a), from_values(instr.a_fmt, b), from_values(instr.c_fmt, c)


def gen_normal(instr: Probe, T: int, rng: np.random.Generator) -> Bits:
    sa, sb, sc = _shapes(instr, T)
    fa, fc = instr.a_fmt, instr.c_fmt
    return (
        with_fields(fa, _normal_fields(fa, sa, rng), rng),
        with_fields(fa, _normal_fields(fa, sb, rng), rng),
        with_fields(fc, _normal_fields(fc, sc, rng), rng),
    )


def _wide_fields(fmt: Format, shape, rng) -> np.ndarray:
    """Per tile: exponent fields over the whole finite range, or in a random narrow window."""
    T = shape[0]
    full = rng.integers(0, fmt.max_exponent_field + 1, size=shape)
    center = rng.integers(0, fmt.max_exponent_field + 1, size=(T, 1, 1))
    width = rng.integers(1, 7, size=(T, 1, 1))
    win = np.clip(center + rng.integers(-width, width + 1, size=shape), 0, fmt.max_exponent_field)
    return np.where(rng.random((T, 1, 1)) < 0.4, full, win)


def _c_near_products(instr: Probe, a, b, rng, lo: int, hi: int, p_zero: float):
    """c with exponent floor(log2 max_k |a b|) + U[lo, hi], random sign; p_zero of it +-0."""
    fc = instr.c_fmt
    va, vb = values(instr.a_fmt, a), values(instr.a_fmt, b)
    with np.errstate(invalid="ignore", over="ignore"):
        pmax = np.nanmax(np.abs(va[..., :, :, None] * vb[..., None, :, :]), axis=-2)
    pmax = np.where(np.isfinite(pmax) & (pmax > 0), pmax, 1.0)
    e = np.floor(np.log2(pmax)).astype(np.int64) + rng.integers(lo, hi + 1, size=pmax.shape)
    e = np.maximum(e, fc.emin - fc.mantissa_bits - 2)
    sign = rng.integers(0, 2, size=pmax.shape)
    c = with_exponent(fc, sign, e, rng)
    zero = rng.random(pmax.shape) < p_zero
    return np.where(
        zero, (sign.astype(np.uint64) << (fc.container_bits - 1)).astype(fc.bits_dtype), c
    )


def gen_wide_exp(instr: Probe, T: int, rng: np.random.Generator) -> Bits:
    sa, sb, _ = _shapes(instr, T)
    fa = instr.a_fmt
    a = with_fields(fa, _wide_fields(fa, sa, rng), rng)
    b = with_fields(fa, _wide_fields(fa, sb, rng), rng)
    return a, b, _c_near_products(instr, a, b, rng, -30, 6, p_zero=0.1)


def gen_random_bits(instr: Probe, T: int, rng: np.random.Generator) -> Bits:
    out = []
    for fmt, shape in zip((instr.a_fmt, instr.a_fmt, instr.c_fmt), _shapes(instr, T), strict=True):
        bits = rng.integers(0, 1 << fmt.container_bits, size=shape, dtype=np.uint64).astype(
            fmt.bits_dtype
        )
        if fmt.pad_bits:
            bits &= _value_mask(fmt)
        out.append(bits)
    return tuple(out)


def _neg_sum_c(instr: Probe, a, b, jitter: np.ndarray | None = None) -> np.ndarray:
    s = -exact_dot(instr, a, b)
    if jitter is not None:
        s = s + jitter
    return from_values(instr.c_fmt, s)


def _pair_up(instr: Probe, a, b, rng, perturb: bool):
    """Make products (k odd) the exact negatives of products (k even); optionally perturbed."""
    fa = instr.a_fmt
    a, b = a.copy(), b.copy()
    neg = (
        a[:, :, 0::2] ^ fa.bits_dtype.type(fa.bit_layout.sign_mask)
        if not fa.is_integer
        else from_values(fa, -values(fa, a[:, :, 0::2]))
    )
    if perturb:
        if fa.is_integer:
            neg = from_values(fa, values(fa, neg) + rng.choice([-1, 1], size=neg.shape))
        else:
            neg = neg ^ fa.bits_dtype.type(1 << fa.pad_bits)
    a[:, :, 1::2] = neg
    b[:, 1::2, :] = b[:, 0::2, :]
    return a, b


def _zero_or_tiny_c(instr: Probe, shape, rng) -> np.ndarray:
    fc = instr.c_fmt
    sign = rng.integers(0, 2, size=shape)
    zero = (sign.astype(np.uint64) << (fc.container_bits - 1)).astype(fc.bits_dtype)
    if fc.is_integer:
        return np.where(
            rng.random(shape) < 0.5, fc.bits_dtype.type(0), from_values(fc, sign * 2 - 1.0)
        )
    tiny = with_exponent(
        fc, sign, rng.integers(fc.emin - fc.mantissa_bits, fc.emin + 4, size=shape), rng
    )
    return np.where(rng.random(shape) < 0.7, zero, tiny)


def gen_cancellation(instr: Probe, T: int, rng: np.random.Generator) -> Bits:
    sa, sb, sc = _shapes(instr, T)
    fa = instr.a_fmt
    if fa.is_integer:
        a = rng.integers(0, 256, size=sa, dtype=np.uint64).astype(np.uint8)
        b = rng.integers(0, 256, size=sb, dtype=np.uint64).astype(np.uint8)
    else:
        a = with_fields(fa, _normal_fields(fa, sa, rng, spread=3), rng)
        b = with_fields(fa, _normal_fields(fa, sb, rng, spread=3), rng)
    mode = np.arange(T) % 3
    # mode 0: c = -fl(sum); mode 1: exact opposite pairs; mode 2: near-opposite pairs
    pa, pb = _pair_up(instr, a, b, rng, perturb=False)
    na, nb = _pair_up(instr, a, b, rng, perturb=True)
    sel = mode[:, None, None]
    a = np.where(sel == 1, pa, np.where(sel == 2, na, a))
    b = np.where(sel == 1, pb, np.where(sel == 2, nb, b))
    c_neg = _neg_sum_c(instr, a, b)
    c_small = _zero_or_tiny_c(instr, sc, rng)
    use_neg = (sel == 0) | ((sel == 2) & (rng.random(sc) < 0.5))
    return a, b, np.where(use_neg, c_neg, c_small)


def gen_subnormal(instr: Probe, T: int, rng: np.random.Generator) -> Bits:
    """Subnormal operands; products aimed at the zero-exponent floor; zero or tiny c."""
    sa, sb, sc = _shapes(instr, T)
    fa, fc = instr.a_fmt, instr.c_fmt
    floor = -21 if fc is F16 else -133
    emin_in = fa.emin - fa.mantissa_bits  # leading-bit exponent of the smallest subnormal
    emax_in = fa.max_exponent_field - fa.bias
    # tile target for ea + eb, clipped to what the input format can reach
    lo = max(floor - 10, 2 * emin_in)  # the floor is out of reach of f16/fp8 products
    ep0 = np.minimum(rng.integers(lo, max(floor + 25, lo + 25) + 1, size=(T, 1, 1)), 2 * emax_in)
    ea0 = np.clip(ep0 // 2 + rng.integers(-6, 7, size=(T, 1, 1)), emin_in, emax_in)
    eb0 = np.clip(ep0 - ea0, emin_in, emax_in)
    ea = ea0 + rng.integers(-3, 4, size=sa)
    eb = eb0 + rng.integers(-3, 4, size=sb)
    a = with_exponent(fa, rng.integers(0, 2, size=sa), np.maximum(ea, emin_in), rng)
    b = with_exponent(fa, rng.integers(0, 2, size=sb), np.maximum(eb, emin_in), rng)
    # every third tile: plain subnormal operands (exponent field 0)
    plain = (np.arange(T) % 3 == 2)[:, None, None]
    a = np.where(
        plain, compose(fa, rng.integers(0, 2, sa), np.zeros(sa, int), random_mant(fa, sa, rng)), a
    )
    b = np.where(plain, with_fields(fa, rng.integers(0, 3, size=sb), rng), b)
    sign = rng.integers(0, 2, size=sc)
    zero = (sign.astype(np.uint64) << (fc.container_bits - 1)).astype(fc.bits_dtype)
    tiny_e = np.clip(ep0 + rng.integers(-4, 4, size=sc), fc.emin - fc.mantissa_bits - 1, None)
    tiny = with_exponent(fc, sign, tiny_e, rng)
    sub = with_exponent(fc, sign, rng.integers(fc.emin - fc.mantissa_bits, fc.emin, size=sc), rng)
    r = rng.random(sc)
    c = np.where(
        r < 0.45, fc.bits_dtype.type(0), np.where(r < 0.6, zero, np.where(r < 0.8, tiny, sub))
    )
    return a, b, c


SPECIAL_SCENARIOS = (
    "nan_a",
    "nan_b",
    "nan_c",
    "inf_times_zero",
    "inf_pm_block",
    "inf_c",
    "overflow",
    "zeros",
    "nan_payloads",
)


def gen_special(instr: Probe, T: int, rng: np.random.Generator) -> Bits:
    """Tile t gets scenario SPECIAL_SCENARIOS[t % 9] on top of ``normal`` data."""
    a, b, c = gen_normal(instr, T, rng)
    fa, fc = instr.a_fmt, instr.c_fmt
    K = instr.K
    for t in range(T):  # per tile (not per element): a handful of scenario edits
        s = SPECIAL_SCENARIOS[t % len(SPECIAL_SCENARIOS)]
        at, bt, ct = a[t], b[t], c[t]
        rows = rng.choice(M, size=4, replace=False)
        ks = rng.choice(K, size=4, replace=False)
        if s == "nan_a":
            at[rows[:2], ks[:2]] = nan_bits(fa, 2, rng)
        elif s == "nan_b":
            bt[ks[:2], rng.choice(N, 2, replace=False)] = nan_bits(fa, 2, rng)
        elif s == "nan_c":
            ct[rng.random((M, N)) < 0.25] = nan_bits(fc, 1, rng)[0]
        elif s == "inf_times_zero":
            at[rows, ks] = inf_bits(fa, rng.integers(0, 2, 4))
            bt[ks[:, None], np.arange(N)[None, :]] = np.where(
                rng.random((4, N)) < 0.4,
                compose(fa, rng.integers(0, 2, (4, N)), 0, 0),
                bt[ks[:, None], np.arange(N)[None, :]],
            )
            bt[ks[0], rng.integers(N)] = inf_bits(fa, rng.integers(0, 2, 1))[0]
        elif s == "inf_pm_block":
            at[:, ks[0]] = inf_bits(fa, np.zeros(M, int))
            at[:, ks[1]] = inf_bits(fa, (np.arange(M) % 2))  # even rows +Inf, odd rows -Inf
        elif s == "inf_c":
            ct[rng.random((M, N)) < 0.3] = inf_bits(fc, rng.integers(0, 2, 1))[0]
            at[rows[:2], ks[0]] = inf_bits(fa, rng.integers(0, 2, 2))
        elif s == "overflow":
            _overflow_tile(instr, at, bt, ct, rng, negative=bool(t % 2))
        elif s == "zeros":
            zmask_a = rng.random(at.shape) < 0.6
            at[zmask_a] = compose(fa, rng.integers(0, 2, zmask_a.sum()), 0, 0)
            at[rows[:2], :] = compose(fa, rng.integers(0, 2, (2, K)), 0, 0)
            zmask_b = rng.random(bt.shape) < 0.6
            bt[zmask_b] = compose(fa, rng.integers(0, 2, zmask_b.sum()), 0, 0)
            ct[:] = compose(fc, rng.integers(0, 2, (M, N)), 0, 0)
            ct[rng.random((M, N)) < 0.15] = fc.bits_dtype.type(fc.bit_layout.sign_mask)  # extra -0
        elif s == "nan_payloads":
            at[rows[:2], ks[0]] = nan_bits(fa, 2, rng)
            bt[ks[1], :] = nan_bits(fa, N, rng)
            ct[rows[:2], :] = nan_bits(fc, (2, N), rng)
            ct[rows[2], :] = nan_bits(fc, N, rng)
    return a, b, c


def _overflow_tile(instr, at, bt, ct, rng, negative: bool) -> None:
    """Large same-signed products (and c) whose exact sum exceeds c's format."""
    fa, fc = instr.a_fmt, instr.c_fmt
    emax_in = fa.max_exponent_field - fa.bias
    emax_c = fc.max_exponent_field - fc.bias
    target = emax_c - 4  # per-product exponent; K of them overflow
    ea = np.minimum(emax_in, (target + 1) // 2 + 1)
    eb = np.minimum(emax_in, target - ea + 2)
    at[:] = with_exponent(
        fa, np.full(at.shape, int(negative)), ea - rng.integers(0, 2, at.shape), rng
    )
    bt[:] = with_exponent(fa, np.zeros(bt.shape, int), eb - rng.integers(0, 2, bt.shape), rng)
    ct[:] = with_exponent(
        fc, np.full(ct.shape, int(negative)), emax_c - rng.integers(0, 3, ct.shape), rng
    )


def gen_tf32_lowbits(instr: Probe, T: int, rng: np.random.Generator) -> Bits:
    """Triples of tiles: (random low 13 bits != 0, low bits cleared, RNE at bit 13)."""
    if T % 3:
        raise ValueError(f"tf32_lowbits needs a tile count divisible by 3, got {T}")
    sa, sb, sc = _shapes(instr, T // 3)
    fa = instr.a_fmt
    a, b = (with_fields(fa, _normal_fields(fa, s, rng, spread=4), rng) for s in (sa, sb))
    c = with_fields(instr.c_fmt, _normal_fields(instr.c_fmt, sc, rng, spread=4), rng)
    low = np.uint32((1 << fa.pad_bits) - 1)

    def low_bits(shape):
        return rng.integers(1, 1 << fa.pad_bits, size=shape, dtype=np.uint64).astype(np.uint32)

    a_low, b_low = a | low_bits(sa), b | low_bits(sb)

    def rne(x):
        lsb = (x >> np.uint32(fa.pad_bits)) & np.uint32(1)
        return (x + np.uint32(1 << (fa.pad_bits - 1)) - np.uint32(1) + lsb) & ~low

    def triple(x_low, x):
        return np.stack([x_low, x, rne(x_low)], axis=1).reshape(-1, *x.shape[1:])

    return triple(a_low, a), triple(b_low, b), np.repeat(c, 3, axis=0)


def gen_exp_floor(instr: Probe, T: int, rng: np.random.Generator) -> Bits:
    """Near-tie sums at the bottom of the output range, probing which terms survive alignment.

    Row i, column j: p1 = a[i,0] b[0,j] (or c) sits exactly at a rounding decision point of
    the output, and a tiny p2 = a[i,1] b[1,j], with exponent varying over the tile, pushes the
    exact sum off it; all other operands are +0. Whether the output moves tells whether p2
    survived the alignment to E - F, i.e. where the anchor E sits when c is zero (the floor).

    f32 output (RZ), p2 < 0 — mode 0: p1 = 2^-149; mode 1: p1 = 3*2^-149; mode 2: p1 = 0 and
    c = 2^-149. f16 output (RNE, unit u = 2^-24) — mode 0: p1 = u/2, p2 > 0; mode 1:
    p1 = 3u/2, p2 < 0; mode 2: c = u, p1 = u/2, p2 < 0. In modes 0 and 1, c is +0 or -0.
    """
    del rng  # fully determined
    fa, fc = instr.a_fmt, instr.c_fmt
    sa, sb, sc = _shapes(instr, T)
    a, b, c = np.zeros(sa), np.zeros(sb), np.zeros(sc)
    mode = (np.arange(T) % 3)[:, None]
    i = np.arange(M)[None, :]
    j = np.arange(N)[None, :]
    if fc is F16:
        p1_a, p1_b, unit = 2.0**-11, 2.0**-14, 2.0**-24  # p1 = 2^-25 = u/2
        p2_a, p2_b = 2.0 ** -(9 + i), 2.0 ** -(24 - 2 * j)  # p2 = 2^-19 .. 2^-48
        p1_scale = np.where(mode == 1, 1.5, 1.0)
        p2_sign: np.ndarray | float = np.where(mode == 0, 1.0, -1.0)
    else:
        p1_a, p1_b, unit = 2.0**-75, 2.0**-74, 2.0**-149  # p1 = 2^-149
        p2_a, p2_b = 2.0 ** -(60 + i), 2.0 ** -(88 + 2 * j)  # p2 = 2^-148 .. 2^-177
        p1_scale = np.where(mode == 1, 1.5, np.where(mode == 2, 0.0, 1.0))
        p2_sign = -1.0
    a[:, :, 0] = p1_a * p1_scale
    b[:, 0, :] = p1_b
    a[:, :, 1] = p2_sign * p2_a
    b[:, 1, :] = p2_b
    zero_sign = np.where((np.arange(T) // 3) % 2 == 1, -1.0, 1.0)[:, None, None]
    c[:] = np.where(mode[:, :, None] == 2, unit, np.copysign(0.0, zero_sign))
    return from_values(fa, a), from_values(fa, b), from_values(fc, c)


def gen_extreme(instr: Probe, T: int, rng: np.random.Generator) -> Bits:
    """int8 operands near +-127/-128, c near +-2^31; same-signed products push past int32."""
    sa, sb, sc = _shapes(instr, T)
    big = np.array([-128, -127, -126, 125, 126, 127])
    a = rng.choice(big, size=sa).astype(np.int64)
    b = rng.choice(big, size=sb).astype(np.int64)
    pos = (np.arange(T) % 3 == 0)[:, None, None]
    neg = (np.arange(T) % 3 == 1)[:, None, None]
    a = np.where(pos | neg, np.abs(np.clip(a, -127, 127)) * np.where(neg, -1, 1), a)
    b = np.where(pos | neg, np.abs(np.clip(b, -127, 127)), b)
    c = np.where(
        pos,
        2**31 - 1 - rng.integers(0, 2**19, sc),
        np.where(
            neg, -(2**31) + rng.integers(0, 2**19, sc), rng.choice([-(2**31), 2**31 - 1], size=sc)
        ),
    )

    def to8(x):
        return x.astype(np.int8).view(np.uint8)

    return to8(a), to8(b), c.astype(np.int64).astype(np.int32).view(np.uint32)


GENERATORS: dict[str, Callable[[Probe, int, np.random.Generator], Bits]] = {
    "small_int": gen_small_int,
    "normal": gen_normal,
    "wide_exp": gen_wide_exp,
    "random_bits": gen_random_bits,
    "cancellation": gen_cancellation,
    "subnormal": gen_subnormal,
    "special": gen_special,
    "tf32_lowbits": gen_tf32_lowbits,
    "extreme": gen_extreme,
    "exp_floor": gen_exp_floor,
}

# Share of an instruction's tiles per kind (floating point / integer).
_SHARE_FLOAT = {
    "small_int": 0.02,
    "normal": 0.28,
    "wide_exp": 0.25,
    "random_bits": 0.18,
    "cancellation": 0.12,
    "subnormal": 0.075,
    "special": 0.075,
    "tf32_lowbits": 0.06,
    "exp_floor": 0.015,
}
_SHARE_INT = {"small_int": 0.02, "random_bits": 0.58, "cancellation": 0.15, "extreme": 0.25}
#: A chained recording gets 1/CHAINED_SHARE of the tiles of a single-instruction one.
CHAINED_SHARE = 5
_MIN_TILES = {
    "small_int": 4,
    "exp_floor": 12,
    "special": 2 * len(SPECIAL_SCENARIOS),
    "tf32_lowbits": 6,
}


def tile_counts(instr: Probe, tiles: int) -> dict[str, int]:
    """Tiles per kind: ``tiles`` in all for one instruction, ``tiles // CHAINED_SHARE`` chained."""
    if tiles < 1:
        raise ValueError(f"tiles must be positive, got {tiles}")
    total = tiles // CHAINED_SHARE if instr.nchain > 1 else tiles
    share = _SHARE_FLOAT if instr.floating else _SHARE_INT
    counts = {}
    for kind in kinds_for(instr):
        n = max(int(round(share[kind] * total)), _MIN_TILES.get(kind, 3))
        if kind in ("tf32_lowbits", "exp_floor"):
            n += (-n) % 3
        counts[kind] = n
    return counts


def generate(instr: Probe, counts: dict[str, int], seed: int):
    """All inputs for ``instr``: ``(a, b, c, kind_index, kinds)`` with bits per the spec.

    The generator for each (instruction, kind) is seeded from ``(seed, instruction, kind)``,
    so one kind's data does not depend on the other kinds' counts.
    """
    kinds = tuple(counts)
    parts = []
    for idx, kind in enumerate(kinds):
        key = [seed, *instr.name.encode(), 0, *kind.encode()]
        rng = np.random.default_rng(key)
        a, b, c = GENERATORS[kind](instr, counts[kind], rng)
        parts.append((a, b, c, np.full(counts[kind], idx, np.uint8)))
    a, b, c, kind_index = (np.concatenate(x) for x in zip(*parts, strict=True))
    return a, b, c, kind_index, kinds
