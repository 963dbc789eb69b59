"""fdpa.block sums a block's exact terms one product column at a time for large stacks of
narrow tiles and all at once otherwise (precision.tensorcore.fdpa._LOOP_OVER_L_FROM and
_LOOP_OVER_L_BELOW_N). Both must give
the same bits: the terms are integers on the block's grid, so the float64 sum is exact in any
order. Hardware fidelity of each path is checked by the recorded replays (tests/probe: tiles
of 400 x 16 x 8 take the column path, single small tiles the other)."""

from __future__ import annotations

import numpy as np
import pytest

from precision.tensorcore import fdpa


@pytest.mark.parametrize(("fmt", "emin", "acc", "rounding"), [
    (np.float16, -14, np.float32, "rz"),
    (np.float16, -14, np.float16, "rne"),
])  # fmt: skip
@pytest.mark.parametrize("special", [False, True])
def test_the_two_summation_paths_give_the_same_bits(fmt, emin, acc, rounding, special):
    rng = np.random.default_rng(5)
    R, M, L, N = 3, 16, 16, 8
    a = (rng.standard_normal((R, M, L)) * 2.0 ** rng.integers(-20, 12, (R, M, L))).astype(fmt)
    b = (rng.standard_normal((R, L, N)) * 2.0 ** rng.integers(-20, 12, (R, L, N))).astype(fmt)
    c = (rng.standard_normal((R, M, N)) * 2.0 ** rng.integers(-30, 10, (R, M, N))).astype(acc)
    a[0, 0, :3] = 0.0  # zeros anchor at e_zero
    if special:
        a[1, 2, 3], b[2, 4, 5], c[0, 1, 1] = np.inf, np.nan, -np.inf
    args = (
        *fdpa.decode(a, emin),
        *fdpa.decode(b, emin),
        *fdpa.decode(c, -126 if acc == np.float32 else -14),
    )
    e_zero = -133 if acc == np.float32 else -21
    got = {}
    for name, path in (
        ("at once", fdpa._exact_sum_at_once),
        ("by column", fdpa._exact_sum_by_column),
    ):
        e_max, s = path(*args, 25, e_zero)
        out = fdpa.round_out(np.ldexp(s, e_max - 25), rounding)
        if special:
            fdpa._apply_specials(out, args[0], args[2], args[4])
        got[name] = out.view(np.uint32 if acc == np.float32 else np.uint16)
    assert np.array_equal(got["at once"], got["by column"])
    assert np.count_nonzero(got["at once"]) > R * M * N // 2  # mostly nonzero results


@pytest.mark.parametrize("emin", [-14, -6, -9, -126])
@pytest.mark.parametrize(
    "name", ["float8_e4m3fn", "float8_e5m2", "float8_e4m3", "float8_e3m4", "float6_e2m3fn",
             "float6_e3m2fn", "float4_e2m1fn"],
)  # fmt: skip
def test_one_byte_formats_decode_by_table_as_by_cast(name, emin):
    """decode() reads one-byte formats from a table of their 256 codes: every code, in every
    position of a strided array, gives the values (bit for bit, NaN included) and exponents
    of the float64 cast it replaces. The table is filled by that cast, so this checks the
    lookup (codes, dtypes, views), exhaustively."""
    import ml_dtypes

    dtype = np.dtype(getattr(ml_dtypes, name))
    codes = np.arange(256, dtype=np.uint8)
    if dtype.itemsize != 1:
        pytest.skip(f"{name} is not stored in one byte here")
    x = np.stack([codes, codes[::-1]]).view(dtype)[:, ::-1]  # a strided 2-D view
    got_v, got_e = fdpa.decode(x, emin)
    want_v, want_e = fdpa._decode_direct(x, emin)
    assert got_v.dtype == np.float64 and got_e.dtype == np.int16 and got_v.shape == x.shape
    np.testing.assert_array_equal(got_v.view(np.uint64), want_v.view(np.uint64))
    np.testing.assert_array_equal(got_e, want_e)
