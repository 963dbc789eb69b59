"""Tests of precision.formats against an exact rational oracle and ml_dtypes decoding.

The oracle below is written independently of the implementation: it rounds a
``fractions.Fraction`` with plain integer arithmetic, using format parameters typed in from
the standards (IEEE 754-2019 binary64/32/16, bfloat16, NVIDIA tf32, OCP OFP8 E4M3/E5M2).
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precision import formats as F

# ------------------------------------------------------------------------- independent spec
# name: (precision p incl. hidden bit, emin, emax, largest finite value, has Inf)
FLOAT_SPEC = {
    "fp64": (53, -1022, 1023, (2 - Fraction(1, 2**52)) * 2**1023, True),
    "fp32": (24, -126, 127, (2 - Fraction(1, 2**23)) * 2**127, True),
    "tf32": (11, -126, 127, (2 - Fraction(1, 2**10)) * 2**127, True),
    "fp16": (11, -14, 15, Fraction(65504), True),
    "bf16": (8, -126, 127, (2 - Fraction(1, 2**7)) * 2**127, True),
    "e4m3": (4, -6, 8, Fraction(448), False),
    "e5m2": (3, -14, 15, Fraction(57344), True),
}
INT_SPEC = {
    "int8": (-(2**7), 2**7 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint8": (0, 2**8 - 1),
    "int4": (-(2**3), 2**3 - 1),
    "uint4": (0, 2**4 - 1),
    "uint1": (0, 1),
}
# The positive quiet NaN of IEEE 754-2019 6.2.1 (exponent all ones, first trailing significand
# bit 1); e4m3 (OCP OFP8 "fn") has a single NaN per sign, S.1111.111.
IEEE_QUIET_NAN = {
    "fp64": 0x7FF8_0000_0000_0000,
    "fp32": 0x7FC0_0000,
    "tf32": 0x7FC0_0000,
    "fp16": 0x7E00,
    "bf16": 0x7FC0,
    "e4m3": 0x7F,
    "e5m2": 0x7E,
}
ALL_FORMATS = [*FLOAT_SPEC, *INT_SPEC]
DET_MODES = ["rne", "rz", "ru", "rd", "rna"]

# 20 examples per (format, mode) and test: with the 612-value spread test below, every pair
# still meets about 1,300 random and boundary values per run (up to 24 per example), and
# hypothesis draws new ones each run. At 40 the three property tests took 28 s of the
# suite's CPU time (of 465-565 s on 2 cores), mostly hypothesis drawing data, not the oracle.
FAST = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _floor_log2(a: Fraction) -> int:
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    return e


def _candidates(x: float, name: str) -> tuple[Fraction, Fraction, bool]:
    """Signed neighbours lo <= x <= hi on the format's grid with an unbounded exponent,
    and whether lo is the 'even' one (its significand integer is even)."""
    a = Fraction(x)
    if name in INT_SPEC:
        lo = Fraction(math.floor(a))
        return lo, Fraction(math.ceil(a)), lo.numerator % 2 == 0
    p, emin, _, _, _ = FLOAT_SPEC[name]
    if a == 0:
        return a, a, True
    e = max(_floor_log2(abs(a)), emin)
    q = Fraction(2) ** (e - p + 1)
    n = math.floor(a / q)
    lo = n * q
    hi = lo if lo == a else (n + 1) * q
    return lo, hi, n % 2 == 0


def _finish(r: Fraction, x: float, name: str, toward_inf: bool | None) -> float:
    """Apply overflow / saturation rules to the signed rounded value ``r`` of ``x``.

    ``toward_inf``: whether the mode would overflow to Inf for this sign (None: nearest)."""
    negative = math.copysign(1.0, x) < 0
    if name in INT_SPEC:
        lo, hi = INT_SPEC[name]
        return float(min(max(r, lo), hi)) + 0.0
    _, _, _, maxf, has_inf = FLOAT_SPEC[name]
    if abs(r) > maxf:
        if not has_inf:
            r = maxf
        elif toward_inf is None or toward_inf:
            return -math.inf if negative else math.inf
        else:
            r = maxf
        r = -r if negative else r
    v = float(r)
    return math.copysign(abs(v), x) if v == 0 else v


def oracle(x: float, name: str, mode: str) -> float:
    """Exact rounding of the float ``x`` into format ``name`` (deterministic modes)."""
    if math.isnan(x):
        return 0.0 if name in INT_SPEC else math.nan
    if math.isinf(x):
        if name in INT_SPEC:
            return float(INT_SPEC[name][0] if x < 0 else INT_SPEC[name][1])
        return x if FLOAT_SPEC[name][4] else math.nan
    a = Fraction(x)
    lo, hi, lo_even = _candidates(x, name)
    negative = math.copysign(1.0, x) < 0
    # Where an overflowing result goes: Inf (True), max finite (False), nearest rule (None).
    toward_inf = {"ru": not negative, "rd": negative, "rz": False}.get(mode)
    if lo == hi:
        r = lo
    elif mode == "ru":
        r = hi
    elif mode == "rd":
        r = lo
    elif mode == "rz":
        r = hi if negative else lo
    else:
        d_lo, d_hi = a - lo, hi - a
        if d_lo != d_hi:
            r = lo if d_lo < d_hi else hi
        elif mode == "rna":
            r = lo if negative else hi
        else:
            r = lo if lo_even else hi
    return _finish(r, x, name, toward_inf)


def oracle_stochastic(x: float, name: str) -> tuple[float, float]:
    """The two possible results of stochastic rounding (equal when x is on the grid)."""
    if math.isnan(x) or math.isinf(x):
        v = oracle(x, name, "rne")
        return v, v
    lo, hi, _ = _candidates(x, name)
    return _finish(lo, x, name, None), _finish(hi, x, name, None)


def same(got: float, want: float) -> bool:
    """Bitwise-equal as values: NaN matches NaN, and zeros must agree in sign."""
    if math.isnan(want):
        return math.isnan(got)
    return got == want and math.copysign(1.0, got) == math.copysign(1.0, want)


def check_against_oracle(xs, name: str, mode: str) -> None:
    xs = np.asarray(xs)
    got = F.round(xs, name, mode)
    assert got.dtype == np.float64 and got.shape == xs.shape
    bad = [
        (float(x), float(g), oracle(float(x), name, mode))
        for x, g in zip(xs.ravel(), got.ravel(), strict=True)
        if not same(float(g), oracle(float(x), name, mode))
    ]
    assert not bad, f"{name}/{mode}: (input, got, exact) for {len(bad)} mismatches: {bad[:5]}"


# ------------------------------------------------------------------------------ strategies


def _boundary_parts(name: str) -> tuple[st.SearchStrategy, ...]:
    """The strategies :func:`boundary_values` draws from for format ``name``, built once per
    format (:data:`_BOUNDARY_PARTS`): built anew inside every draw, as they were, their
    construction and validation took about a third of this module's time, for the same
    draws."""
    if name in INT_SPEC:
        lo, hi = INT_SPEC[name]
        integer = st.one_of(
            st.integers(-4, 4), st.integers(hi - 3, hi + 3), st.integers(lo - 3, lo + 3)
        )
        return integer, st.sampled_from([0.0, 0.5, 0.25])
    p, emin, emax, maxf, _ = FLOAT_SPEC[name]
    special = st.sampled_from(
        [
            Fraction(0),
            Fraction(2) ** (emin - p + 1),
            Fraction(2) ** (emin - p),
            Fraction(2) ** emin,
            maxf,
            maxf + Fraction(2) ** (emax - p),
            Fraction(2) ** (emax + 1),
            Fraction(2) ** (emin - p + 1) * 3 / 2,
        ]
    )
    exponent = st.integers(emin - p - 1, min(emax + 1, 1022))
    significand = st.one_of(
        st.integers(2 ** (p - 1), 2**p), st.integers(0, 3), st.integers(2**p - 3, 2**p)
    )
    return st.sampled_from(["grid", "half", "special"]), special, exponent, significand


_BOUNDARY_PARTS = {name: _boundary_parts(name) for name in ALL_FORMATS}
_DIRECTIONS = st.sampled_from([-math.inf, math.inf])
_NUDGES = st.integers(0, 2)


@st.composite
def boundary_values(draw, name: str) -> float:
    """Values near a format's grid: on it, at midpoints, at powers of two, at min subnormal,
    min normal and max; each optionally moved by 1-2 float64 ulps, with either sign."""
    if name in INT_SPEC:
        integer, fraction = _BOUNDARY_PARTS[name]
        v = float(draw(integer)) + draw(fraction)
    else:
        p, emin, _, _, _ = FLOAT_SPEC[name]
        kinds, special, exponent, significand = _BOUNDARY_PARTS[name]
        kind = draw(kinds)
        if kind == "special":
            v = float(min(draw(special), FLOAT_SPEC["fp64"][3]))
        else:
            e = draw(exponent)
            m = draw(significand)
            val = Fraction(m) * Fraction(2) ** (max(e, emin) - p + 1)
            if kind == "half":
                val += Fraction(2) ** (max(e, emin) - p)
            v = float(min(val, FLOAT_SPEC["fp64"][3]))
    direction = draw(_DIRECTIONS)
    for _ in range(draw(_NUDGES)):
        with np.errstate(over="ignore"):  # max float64 moved up is Inf: a fine input too
            v = float(np.nextafter(v, direction))
    return -v if draw(st.booleans()) else v


finite64 = st.floats(allow_nan=False, allow_infinity=False)
finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


# ------------------------------------------------------------------ rounding vs the oracle


@pytest.mark.parametrize("mode", DET_MODES)
@pytest.mark.parametrize("name", ALL_FORMATS)
class TestRoundOracle:
    @FAST
    @given(xs=st.lists(finite64, min_size=1, max_size=24))
    def test_random_float64(self, name, mode, xs):
        check_against_oracle(np.array(xs, dtype=np.float64), name, mode)

    @FAST
    @given(xs=st.lists(finite32, min_size=1, max_size=24))
    def test_random_float32(self, name, mode, xs):
        check_against_oracle(np.array(xs, dtype=np.float32), name, mode)

    @FAST
    @given(data=st.data())
    def test_boundaries(self, name, mode, data):
        xs = data.draw(st.lists(boundary_values(name), min_size=1, max_size=24))
        check_against_oracle(np.array(xs, dtype=np.float64), name, mode)

    def test_spread_over_range_and_specials(self, name, mode):
        rng = np.random.default_rng(20240917)
        if name in INT_SPEC:
            lo, hi = INT_SPEC[name]
            xs = rng.uniform(1.1 * lo, 1.1 * hi, 600)
            xs[:300] = rng.integers(-8, 8, 300) / 4 + rng.choice([0, 2.0**-30, -(2.0**-30)], 300)
        else:
            p, emin, emax, _, _ = FLOAT_SPEC[name]
            exps = rng.integers(max(emin - p - 2, -1070), min(emax + 2, 1023), 600)
            xs = rng.uniform(1, 2, 600) * np.exp2(exps.astype(float)) * rng.choice([-1, 1], 600)
        specials = [
            0.0,
            -0.0,
            math.inf,
            -math.inf,
            math.nan,
            5e-324,
            -5e-324,
            float(np.finfo(np.float64).max),
            1.5,
            -2.5,
            0.5,
            -0.5,
        ]
        check_against_oracle(np.concatenate([xs, specials]).reshape(-1, 4), name, mode)


# ------------------------------------------------------------------ cross-checks and cases


def test_matches_hardware_float32_and_numpy_float16_casts():
    # fp32: the CPU's float64->float32 conversion rounds to nearest even in one step;
    # numpy's float64->float16 conversion works directly on the float64 bits.
    rng = np.random.default_rng(7)
    x = rng.standard_normal(50_000) * np.exp2(rng.integers(-160, 140, 50_000).astype(float))
    with np.errstate(over="ignore"):
        assert np.array_equal(F.round(x, "fp32"), x.astype(np.float32).astype(np.float64))
        assert np.array_equal(F.round(x, "fp16"), x.astype(np.float16).astype(np.float64))


@pytest.mark.parametrize(
    "x, name, exact",
    [
        (1 + 2.0**-8 + 2.0**-40, "bf16", 1.0078125),  # ml_dtypes 0.6 gives 1.0
        (-431.99999999999994, "e4m3", -416.0),  # ml_dtypes 0.6 array cast gives -448
        (1 + 2.0**-11 + 2.0**-40, "fp16", 1 + 2.0**-10),
        (1 + 2.0**-3 + 2.0**-40, "e5m2", 1.25),
    ],
)
def test_no_double_rounding(x, name, exact):
    # The float32 intermediate of x lies exactly on a midpoint of the target format, where a
    # second rounding ties to even in the wrong direction; one exact rounding must not.
    assert float(np.float32(x)) != x
    assert Fraction(x) != Fraction(exact)
    assert oracle(x, name, "rne") == exact
    assert F.round(np.array([x]), name)[0] == exact
    assert F.cast(np.array([x]), name).astype(np.float64)[0] == exact


def test_e4m3_saturates_and_inf_is_nan():
    x = np.array([448.0, 464.0, 465.0, 1e30, -1e30, math.inf, -math.inf])
    for mode in DET_MODES:
        r = F.round(x, "e4m3", mode)
        assert np.array_equal(r[:5], [448, 448, 448, 448, -448]), mode
        assert np.isnan(r[5:]).all()


def test_overflow_per_mode_fp16():
    x = np.array([65520.0, -65520.0])  # midpoint between max 65504 and 2**16
    assert np.array_equal(F.round(x, "fp16", "rne"), [math.inf, -math.inf])
    assert np.array_equal(F.round(x, "fp16", "rna"), [math.inf, -math.inf])
    assert np.array_equal(F.round(x, "fp16", "rz"), [65504, -65504])
    assert np.array_equal(F.round(x, "fp16", "ru"), [math.inf, -65504])
    assert np.array_equal(F.round(x, "fp16", "rd"), [65504, -math.inf])


def test_shapes_dtypes_and_noncontiguous_input():
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7
    assert F.round(x, "bf16").shape == (2, 3, 4)
    assert F.round(np.float32(1 / 3), "fp16").shape == ()
    assert F.round(1 / 3, "fp16") == oracle(1 / 3, "fp16", "rne")
    strided = x[:, ::2, 1::2]
    assert np.array_equal(F.round(strided, "e5m2"), F.round(strided.copy(), "e5m2"))
    assert np.array_equal(F.round(np.array([3, -7], dtype=np.int64), "e4m3"), [3.0, -7.0])
    src = np.array([1.0 + 2.0**-30])
    F.round(src, "fp16")
    assert src[0] == 1.0 + 2.0**-30  # input untouched


# -------------------------------------------------------------------------- stochastic


@pytest.mark.parametrize("name", ALL_FORMATS)
@FAST
@given(data=st.data())
def test_stochastic_gives_a_neighbour(name, data):
    xs = data.draw(st.lists(st.one_of(boundary_values(name), finite64), min_size=1, max_size=24))
    seed = data.draw(st.integers(0, 2**32 - 1))
    got = F.round(np.array(xs), name, "stochastic", rng=np.random.default_rng(seed))
    for x, g in zip(xs, got, strict=True):
        a, b = oracle_stochastic(x, name)
        assert same(float(g), a) or same(float(g), b), (x, g, a, b)


def test_stochastic_is_reproducible():
    x = np.random.default_rng(3).standard_normal(1000)
    r1 = F.round(x, "bf16", "stochastic", rng=np.random.default_rng(11))
    r2 = F.round(x, "bf16", "stochastic", rng=np.random.default_rng(11))
    r3 = F.round(x, "bf16", "stochastic", rng=np.random.default_rng(12))
    assert np.array_equal(r1, r2)
    assert not np.array_equal(r1, r3)


@pytest.mark.parametrize(
    "x, name",
    [
        (1 + 0.3 * 2.0**-7, "bf16"),  # normal range
        (-(2.0**-24) * 0.7, "fp16"),  # below the smallest fp16 subnormal
        (2.0**-9 * 5.25, "e4m3"),  # e4m3 subnormal range
        (3.1, "int8"),
        (-1e4 / 3, "e5m2"),
    ],
)
def test_stochastic_is_unbiased(x, name):
    n = 200_000
    got = F.round(np.full(n, x), name, "stochastic", rng=np.random.default_rng(5))
    lo, hi = sorted(oracle_stochastic(x, name))
    assert set(np.unique(got)) <= {lo, hi}
    f = (x - lo) / (hi - lo)  # exact probability of rounding to hi
    sigma = (hi - lo) * math.sqrt(f * (1 - f) / n)
    assert abs(got.mean() - x) < 6 * sigma
    assert abs(np.mean(got == hi) - f) < 6 * math.sqrt(f * (1 - f) / n)


def test_stochastic_leaves_representable_values_alone():
    vals = F.from_bits(np.arange(256, dtype=np.uint8), "e4m3")
    got = F.round(vals, "e4m3", "stochastic", rng=np.random.default_rng(0))
    finite = ~np.isnan(vals)
    assert np.array_equal(got[finite], vals[finite])


# ------------------------------------------------------------------------------- encodings

NARROW = {
    "fp16": (np.float16, np.uint16),
    "bf16": (ml_dtypes.bfloat16, np.uint16),
    "e4m3": (ml_dtypes.float8_e4m3fn, np.uint8),
    "e5m2": (ml_dtypes.float8_e5m2, np.uint8),
}


def _decode(bits: np.ndarray, dtype) -> np.ndarray:
    """Reference decoding: reinterpret the bits in numpy/ml_dtypes, widen exactly."""
    with np.errstate(invalid="ignore"):  # NaN payloads warn on widening; values are exact
        return bits.view(dtype).astype(np.float64)


def _same_arrays(a: np.ndarray, b: np.ndarray) -> bool:
    nan = np.isnan(a)
    return bool(
        np.array_equal(nan, np.isnan(b))
        and np.array_equal(a[~nan], b[~nan])
        and np.array_equal(np.signbit(a[~nan]), np.signbit(b[~nan]))
    )


@pytest.mark.parametrize("name", list(NARROW))
def test_all_encodings_round_trip(name):
    dtype, udt = NARROW[name]
    bits = np.arange(2 ** (8 * np.dtype(udt).itemsize), dtype=np.uint64).astype(udt)
    decoded = F.from_bits(bits, name)
    assert decoded.dtype == np.float64
    assert _same_arrays(decoded, _decode(bits, dtype))
    enc = F.to_bits(decoded, name)
    assert enc.dtype == udt
    nan = np.isnan(decoded)
    assert np.array_equal(enc[~nan], bits[~nan])
    assert (enc[nan] == IEEE_QUIET_NAN[name]).all()
    assert np.isnan(_decode(enc[nan][:1], dtype)).all()
    for mode in DET_MODES:  # every value of the format is a fixed point of every mode
        assert _same_arrays(F.round(decoded, name, mode), decoded)
    assert np.array_equal(F.cast(decoded, name).view(udt)[~nan], bits[~nan])


def test_tf32_all_encodings_and_fp32_sample():
    bits = np.arange(2**19, dtype=np.uint32) << np.uint32(13)
    dec = F.from_bits(bits, "tf32")
    assert _same_arrays(dec, _decode(bits, np.float32))
    nan = np.isnan(dec)
    assert np.array_equal(F.to_bits(dec, "tf32")[~nan], bits[~nan])
    assert _same_arrays(F.round(dec, "tf32", "rz"), dec)
    c = F.cast(np.random.default_rng(1).standard_normal(1000), "tf32")
    assert c.dtype == np.float32 and not (c.view(np.uint32) & 0x1FFF).any()
    rb = np.random.default_rng(2).integers(0, 2**32, 2**16, dtype=np.uint64).astype(np.uint32)
    rb = np.concatenate(
        [rb, np.array([0, 1, 0x7F7FFFFF, 0x7F800000, 0x80000000, 0xFF800000], dtype=np.uint32)]
    )
    dec = F.from_bits(rb, "fp32")
    assert _same_arrays(dec, _decode(rb, np.float32))
    nan = np.isnan(dec)
    assert np.array_equal(F.to_bits(dec, "fp32")[~nan], rb[~nan])


def test_fp64_and_int_encodings():
    rb = np.random.default_rng(3).integers(0, 2**63, 4096, dtype=np.uint64)
    rb[::2] |= np.uint64(2**63)
    dec = F.from_bits(rb, "fp64")
    assert _same_arrays(dec, rb.view(np.float64))
    nan = np.isnan(dec)
    assert np.array_equal(F.to_bits(dec, "fp64")[~nan], rb[~nan])
    b8 = np.arange(256, dtype=np.uint8)
    assert np.array_equal(F.from_bits(b8, "int8"), b8.view(np.int8).astype(np.float64))
    assert np.array_equal(F.to_bits(F.from_bits(b8, "int8"), "int8"), b8)
    v = np.array([-(2.0**31), -1, 0, 2**31 - 1])
    assert np.array_equal(F.to_bits(v, "int32"), v.astype(np.int32).view(np.uint32))
    assert F.cast(np.array([300.0, -1e9, math.nan, -0.4]), "int8").tolist() == [127, -128, 0, 0]


def test_to_bits_rejects_unrepresentable_and_from_bits_checks_range():
    with pytest.raises(ValueError, match="not values of fp16"):
        F.to_bits(np.array([1.0, 1 + 2.0**-20]), "fp16")
    with pytest.raises(ValueError, match=r"\[0, 2\*\*8\)"):
        F.from_bits(np.array([256]), "e4m3")
    with pytest.raises(ValueError, match="13 low bits"):
        F.from_bits(np.array([1], dtype=np.uint32), "tf32")


# -------------------------------------------------------------------- format registry


@pytest.mark.parametrize("name", list(FLOAT_SPEC))
def test_float_format_parameters(name):
    p, emin, emax, maxf, has_inf = FLOAT_SPEC[name]
    f = F.FORMATS[name]
    assert (f.precision, f.emin, f.emax, f.has_inf, f.is_integer) == (p, emin, emax, has_inf, False)
    assert Fraction(f.max_normal) == maxf
    assert Fraction(f.min_normal) == Fraction(2) ** emin
    assert Fraction(f.min_subnormal) == Fraction(2) ** (emin - p + 1)
    assert f.mantissa_bits == p - 1 and f.bias == 1 - emin
    if name != "tf32":
        fi = ml_dtypes.finfo(f.storage)
        assert f.storage.itemsize * 8 == f.bits
        assert (f.mantissa_bits, f.exponent_bits) == (fi.nmant, fi.nexp)
        if name != "fp32":  # fp32 storage is the float itself
            assert f.max_normal == float(fi.max)
            assert f.min_subnormal == float(fi.smallest_subnormal)
    else:
        assert f.storage == np.float32 and f.exponent_bits == 8 and f.bits == 19


def test_integer_formats():
    info = {
        "int4": ml_dtypes.iinfo(ml_dtypes.int4),
        "uint4": ml_dtypes.iinfo(ml_dtypes.uint4),
        "uint1": ml_dtypes.iinfo(ml_dtypes.uint1),
    }
    for name, (lo, hi) in INT_SPEC.items():
        f = F.FORMATS[name]
        assert f.is_integer and (f.min_value, f.max_normal) == (lo, hi)
        ii = info.get(name, np.iinfo(f.storage))
        assert (ii.min, ii.max) == (lo, hi)
        assert f.signed == (lo < 0) and f.bits == ii.bits


@pytest.mark.parametrize("name", list(INT_SPEC))
def test_integer_encodings_round_trip(name):
    lo, hi = INT_SPEC[name]
    f = F.FORMATS[name]
    if f.bits <= 8:  # every encoding
        bits = np.arange(2**f.bits, dtype=np.uint8)
        vals = F.from_bits(bits, name)
        # two's complement / plain binary, typed in: word w means w - 2**bits where w >= 2**(bits-1)
        want = [w - 2**f.bits if lo < 0 and w >= 2 ** (f.bits - 1) else w for w in range(2**f.bits)]
        assert vals.tolist() == want
        assert np.array_equal(F.to_bits(vals, name), bits)
        assert F.to_bits(vals, name).dtype == np.uint8
    v = np.array([lo, lo + 1, -1 if lo < 0 else 1, 0, hi - 1, hi], dtype=np.float64)
    assert np.array_equal(F.from_bits(F.to_bits(v, name), name), v)
    c = F.cast(np.array([hi + 10.0, lo - 10.0, math.nan, -0.4, 2.5]), name)
    assert c.dtype == f.storage
    assert c.tolist() == [hi, lo, 0, 0, min(2, hi)]
    with pytest.raises(ValueError, match=rf"\[0, 2\*\*{f.bits}\)"):
        F.from_bits(np.array([2**f.bits]), name)


def test_get_format_names_aliases_and_dtypes():
    assert set(F.FORMATS) == set(ALL_FORMATS)
    for alias, name in [
        ("f64", "fp64"),
        ("f32", "fp32"),
        ("f16", "fp16"),
        ("half", "fp16"),
        ("bfloat16", "bf16"),
        ("float8_e4m3fn", "e4m3"),
        ("float8_e5m2", "e5m2"),
        ("s8", "int8"),
        ("s32", "int32"),
        ("FP16", "fp16"),
    ]:
        assert F.get_format(alias) is F.FORMATS[name]
    for dt, name in [
        (np.float32, "fp32"),
        (np.dtype("float64"), "fp64"),
        (ml_dtypes.bfloat16, "bf16"),
        (ml_dtypes.float8_e4m3fn, "e4m3"),
        (np.int8, "int8"),
    ]:
        assert F.get_format(dt) is F.FORMATS[name]
    f = F.FORMATS["tf32"]
    assert F.get_format(f) is f


def test_module_docstring_example_runs():
    """The examples in precision.formats' docstrings run and give what they show (and there
    are some: a docstring without examples would pass with 0 attempted)."""
    import doctest

    result = doctest.testmod(F, raise_on_error=False)
    assert result.failed == 0 and result.attempted >= 6, result


# ---------------------------------------------------------------------------------- errors


def test_clear_errors():
    with pytest.raises(ValueError, match=r"'fp12'.*bf16"):
        F.get_format("fp12")
    with pytest.raises(ValueError, match="unknown format"):
        F.round(np.ones(2), np.complex64)
    with pytest.raises(ValueError, match="unknown format None"):
        F.get_format(None)
    wide = dataclasses.replace(F.FORMATS["fp16"], name="wide", emin=-1015)
    with pytest.raises(ValueError, match="emin=-1015"):
        F.round(np.ones(2), wide)
    with pytest.raises(ValueError, match=r"'nearest'.*rne"):
        F.round(np.ones(2), "fp16", "nearest")
    with pytest.raises(ValueError, match="stochastic.*rng"):
        F.round(np.ones(2), "fp16", "stochastic")
    with pytest.raises(TypeError, match="Generator"):
        F.round(np.ones(2), "fp16", "stochastic", rng=3)
    with pytest.raises(TypeError, match="complex"):
        F.round(np.ones(2, dtype=complex), "fp16")


@pytest.mark.parametrize("name", ["int4", "uint4", "int2", "float8_e3m4", "float4_e2m1fn"])
def test_round_takes_ml_dtypes_narrow_integers_and_floats(name):
    """ml_dtypes' int4/uint4/int2 and narrow floats (numpy kind "V") were refused with a
    TypeError whose own text said integers and ml_dtypes floats are accepted."""
    dt = np.dtype(getattr(ml_dtypes, name))
    x = np.array([1.0, 2.0, 3.0, 0.0], dtype=np.float32).astype(dt)
    want = x.astype(np.float64)  # every value of these formats is exact in float64
    got = F.round(x, "fp16")
    assert got.dtype == np.float64 and np.array_equal(got, want)
