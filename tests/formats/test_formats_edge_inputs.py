"""Edge inputs of precision.formats: wide integers, 0-d arrays and scalars.

The expected values are exact (Python integers and fractions.Fraction), never earlier output.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from precision import formats as F

FLOATS = [n for n, f in F.FORMATS.items() if not f.is_integer]


@pytest.mark.parametrize("value", [2**53 + 1, -(2**53) - 1, 2**53 + 3, 2**62 + 1])
def test_int64_beyond_2_53_is_refused_not_rounded(value):
    # float64 holds 2**53 + 1 only as 2**53: converting first and comparing the float with
    # 2**53 let it through, so round() gave the rounding of a different number.
    x = np.array([value], dtype=np.int64)
    cannot = rf"holds the integer {value}, which float64 cannot represent exactly"
    with pytest.raises(ValueError, match=cannot):
        F.round(x, "fp32", "ru")
    with pytest.raises(ValueError, match=cannot):
        F.round(x, "fp64")
    with pytest.raises(ValueError, match=cannot):
        F.to_bits(x, "fp64")
    if value > 0:
        with pytest.raises(ValueError, match=cannot):
            F.round(x.astype(np.uint64), "fp16", "rz")


def test_large_integers_that_float64_holds_are_accepted_as_by_exact_matmul():
    """2**60 and -(2**63) are exact in float64: round() takes them, as exact_matmul does
    (the two once disagreed); 2**64 - 1 as uint64 is not, and both refuse it."""
    from precision.reference import exact_matmul

    x = np.array([2**60, -(2**63), 3 * 2**55], dtype=np.int64)
    assert F.round(x, "fp64").tolist() == [2.0**60, -(2.0**63), 3 * 2.0**55]
    assert exact_matmul(x[:, None], np.ones((1, 1), np.int64))[:, 0].tolist() == [
        2.0**60, -(2.0**63), 3 * 2.0**55,
    ]  # fmt: skip
    top = np.array([2**64 - 1], dtype=np.uint64)
    with pytest.raises(ValueError, match="cannot represent exactly"):
        F.round(top, "fp64")
    with pytest.raises(ValueError, match="cannot represent exactly"):
        exact_matmul(top[:, None], np.ones((1, 1)))


def test_int64_up_to_2_53_is_exact():
    x = np.array([2**53, -(2**53), 2**53 - 1, 2**31 + 1], dtype=np.int64)
    # ru into fp32 (24 bits), from the exact integers
    want = []
    for v in x.tolist():
        q = 2 ** max(0, abs(v).bit_length() - 24)
        want.append(float(-((-v) // q) * q))  # ceil to a multiple of q
    assert F.round(x, "fp32", "ru").tolist() == want
    assert F.round(x, "fp64").tolist() == [float(v) for v in x.tolist()]
    assert F.round(x.astype(np.uint64)[:1], "fp64").tolist() == [2.0**53]


def _exact_decode(bits: int, name: str) -> float:
    """Value of a float encoding from the format's parameters (Fraction arithmetic)."""
    f = F.FORMATS[name]
    bits >>= f.pad_bits
    m = f.precision - 1
    e_bits = f.bits - 1 - m
    sign = -1 if bits >> (f.bits - 1) else 1
    efield = (bits >> m) & ((1 << e_bits) - 1)
    mfield = bits & ((1 << m) - 1)
    if efield == (1 << e_bits) - 1 and f.nan_encoding == "ieee":
        return sign * math.inf if mfield == 0 else math.nan
    if f.nan_encoding == "fn" and efield == (1 << e_bits) - 1 and mfield == (1 << m) - 1:
        return math.nan
    bias = 1 - f.emin
    if efield == 0:
        v = Fraction(mfield, 2**m) * Fraction(2) ** f.emin
    else:
        v = (1 + Fraction(mfield, 2**m)) * Fraction(2) ** (efield - bias)
    return sign * float(v)


@pytest.mark.parametrize("name", FLOATS)
def test_from_bits_of_a_scalar_or_0d_array(name):
    f = F.FORMATS[name]
    one = F.to_bits(np.array([1.0]), name)[0]
    encodings = [int(one), 1 << f.pad_bits, int(f.ieee_quiet_nan_bits or 0)]
    encodings.append(1 << (f.bits - 1 + f.pad_bits))  # -0
    if f.inf_bits is not None:
        encodings.append(f.inf_bits)
    for bits in encodings:
        for arg in (bits, np.array(bits, dtype=f.bits_dtype)):
            got = F.from_bits(arg, name)
            assert isinstance(got, np.ndarray) and got.shape == ()
            want = _exact_decode(bits, name)
            if math.isnan(want):
                assert math.isnan(float(got))
            else:
                assert float(got) == want
                assert math.copysign(1.0, float(got)) == math.copysign(1.0, want)


@pytest.mark.parametrize("name", FLOATS)
def test_to_bits_of_a_0d_array_round_trips_and_refuses(name):
    f = F.FORMATS[name]
    for v in (1.0, -0.0, f.max_normal, -f.min_subnormal):
        bits = F.to_bits(np.array(v), name)
        assert bits.shape == () and bits.dtype == f.bits_dtype
        assert float(F.from_bits(bits, name)) == v
    bad = math.inf if not f.has_inf else 1.0 + 2.0**-40
    if name == "fp64":
        return  # every float64 is a value of fp64
    with pytest.raises(ValueError, match=f"not values of {name}"):
        F.to_bits(np.float64(bad), name)


def test_cast_to_tf32_keeps_the_pad_zero_for_nans_too():
    """cast(x, "tf32") promises float32 words whose 13 low bits are zero; a NaN whose payload
    sat there (0x7F800001, 0xFFFFFFFF) kept it. NaNs come back as to_bits writes them."""
    words = np.array([0x7F800001, 0xFFFFFFFF, 0x7FC00000, 0x3F801001, 0xFF800000], np.uint32)
    with np.errstate(invalid="ignore"):
        out = F.cast(words.view(np.float32), "tf32").view(np.uint32)
    assert (out & 0x1FFF == 0).all()
    assert out[:3].tolist() == [F.get_format("tf32").ieee_quiet_nan_bits] * 3
    assert out[3:].tolist() == [0x3F802000, 0xFF800000]  # past the half: up; -Inf kept


def test_masked_arrays_are_refused_not_read_without_their_mask():
    """gemm, exact_matmul, error_metrics and formats used the values under a mask as data
    (gemm([[1, masked 2]], ones) gave 3); each now says so and names the argument."""
    from precision.gemm import gemm
    from precision.metrics import error_metrics
    from precision.reference import exact_matmul

    a = np.ma.array([[1.0, 2.0]], mask=[[0, 1]])
    b = np.ones((2, 1))
    with pytest.raises(TypeError, match="A is a masked array; gemm would read the values"):
        gemm(a, b)
    with pytest.raises(TypeError, match="A is a masked array; exact_matmul"):
        exact_matmul(a, b)
    with pytest.raises(TypeError, match="approx is a masked array; error_metrics"):
        error_metrics(a[0], np.ones(2))
    with pytest.raises(TypeError, match=r"x is a masked array; .*x.filled\(value\)"):
        F.round(a, "fp16")


def test_format_and_mode_errors_name_their_argument_and_modes_take_any_case():
    with pytest.raises(ValueError, match=r"^fmt='fp17': unknown format 'fp17'; did you mean"):
        F.round(1.0, "fp17")
    with pytest.raises(ValueError, match=r"^fmt='fp17': unknown format"):
        F.cast(1.0, "fp17")
    with pytest.raises(ValueError, match=r"^mode='rnx': unknown rounding mode"):
        F.round(1.0, "fp16", "rnx")
    x = np.array([1 + 2.0**-11, -(1 + 3 * 2.0**-11)])  # ties in fp16: to even
    assert (
        F.round(x, "fp16", "RNE").tolist()
        == F.round(x, "fp16", "rne").tolist()
        == [1.0, -(1 + 2.0**-9)]
    )
