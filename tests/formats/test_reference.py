"""exact_matmul against exact rational arithmetic (fractions) and mpmath at high precision."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import mpmath
import numpy as np
import pytest

from precision.reference import exact_matmul

FORMATS = {
    "fp64": (53, -1022, 1023, np.float64, np.uint64),
    "fp32": (24, -126, 127, np.float32, np.uint32),
}


def _exact(A, B, C=None) -> list[list[Fraction]]:
    m, k = A.shape
    n = B.shape[1]
    out = []
    for i in range(m):
        row = []
        for j in range(n):
            s = sum(
                (Fraction(float(A[i, t])) * Fraction(float(B[t, j])) for t in range(k)), Fraction(0)
            )
            if C is not None:
                s += Fraction(float(C[i, j]))
            row.append(s)
        out.append(row)
    return out


def _round_fraction(x: Fraction, p: int, emin: int, emax: int) -> float:
    """Round-to-nearest-even of an exact rational into (p, emin, emax), written independently."""
    if x == 0:
        return 0.0
    neg, x = x < 0, abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    while Fraction(2) ** e > x:
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    ulp = Fraction(2) ** (max(e, emin) - p + 1)
    q = x / ulp
    r = q.numerator // q.denominator
    rem = q - r
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and r % 2 == 1):
        r += 1
    v = r * ulp
    if v > (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax:
        return -np.inf if neg else np.inf
    return -float(v) if neg else float(v)


def _check_bits(A, B, C=None):
    exact = _exact(A, B, C)
    for name, (p, emin, emax, dt, ut) in FORMATS.items():
        got = exact_matmul(A, B, C, rounding=name)
        want = np.array([[_round_fraction(v, p, emin, emax) for v in row] for row in exact], dt)
        assert got.dtype == dt
        bad = got.view(ut) != want.view(ut)
        where = np.argwhere(bad)[:3]
        assert not bad.any(), f"{name}: at {where} got {got[bad][:3]} want {want[bad][:3]}"


@pytest.mark.parametrize("seed", range(8))
def test_wide_exponent_range_fp32_inputs(seed):
    """Inputs spanning 2^-120..2^120 inside one row, with C; fp64 and fp32 (subnormal) out."""
    rng = np.random.default_rng(seed)
    m, k, n = rng.integers(1, 5), rng.integers(1, 33), rng.integers(1, 5)
    A = (rng.standard_normal((m, k)) * 2.0 ** rng.integers(-120, 121, (m, k))).astype(np.float32)
    B = (rng.standard_normal((k, n)) * 2.0 ** rng.integers(-120, 121, (k, n))).astype(np.float32)
    C = (rng.standard_normal((m, n)) * 2.0 ** rng.integers(-149, 120, (m, n))).astype(np.float32)
    A[0, : k // 2] = 0  # zeros and a zero row/column
    _check_bits(A, B, C if seed % 2 else None)


def test_catastrophic_cancellation_rows():
    """Huge terms cancel exactly and leave a tiny remainder; RN(float64 sum) would give 0."""
    big = np.float32(2.0**100)
    A = np.array(
        [[big, 1.0, -big, 2.0**-60], [big, big, -big, -big], [1.0, 2.0**-24, -1.0, 3 * 2.0**-149]],
        dtype=np.float32,
    )
    B = np.array([[1.0, 3.0], [1.0, 2.0**-30], [1.0, 3.0], [1.0, 1.0]], dtype=np.float32)
    _check_bits(A, B)
    got = exact_matmul(A, B)
    assert got[0, 0] == 1.0 + 2.0**-60 and got[1, 0] == 0.0
    assert got[2, 0] == 2.0**-24 + 3 * 2.0**-149


def test_random_cancellation_against_mpmath():
    """Rows built to cancel to ~1e-30 of their terms; mpmath fdot at 2000 bits is exact here."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(24).astype(np.float32)
    A = np.concatenate([x, -x, rng.standard_normal(4).astype(np.float32) * 2.0**-90])[None, :]
    B = np.concatenate([np.ones(48, np.float32), rng.standard_normal(4).astype(np.float32)])
    B = B[:, None] * np.float32(2.0**50)
    got = exact_matmul(A, B)[0, 0]
    with mpmath.workprec(2000):
        s = mpmath.fdot(
            [mpmath.mpf(float(v)) for v in A[0]], [mpmath.mpf(float(v)) for v in B[:, 0]]
        )
    with mpmath.workprec(53):
        want = float(+s)
    assert got == want and got != 0


def test_against_mpmath_fdot_random_fp32():
    rng = np.random.default_rng(4)
    A = (rng.uniform(-1, 1, (6, 64)) * 2.0 ** rng.integers(-60, 60, (6, 64))).astype(np.float32)
    B = (rng.uniform(-1, 1, (64, 5)) * 2.0 ** rng.integers(-60, 60, (64, 5))).astype(np.float32)
    got = exact_matmul(A, B)
    for i in range(6):
        for j in range(5):
            with mpmath.workprec(1000):
                s = mpmath.fdot(
                    [mpmath.mpf(float(v)) for v in A[i]], [mpmath.mpf(float(v)) for v in B[:, j]]
                )
            with mpmath.workprec(53):
                assert got[i, j] == float(+s)


@pytest.mark.parametrize("seed", range(3))
def test_fp64_inputs(seed):
    rng = np.random.default_rng(10 + seed)
    A = rng.standard_normal((3, 9)) * 2.0 ** rng.integers(-500, 500, (3, 9))
    B = rng.standard_normal((9, 2)) * 2.0 ** rng.integers(-500, 500, (9, 2))
    C = rng.standard_normal((3, 2)) * 2.0 ** rng.integers(-1074, 900, (3, 2))
    _check_bits(A, B, C)


def test_fp64_subnormal_results_round_once():
    # 2^-1075 is half the smallest subnormal: alone a tie (to 0); with 2^-1127 added, up.
    A = np.array([[2.0**-1000, 0.0], [2.0**-1000, 2.0**-1000]])
    B = np.array([[2.0**-75], [2.0**-127]])
    _check_bits(A, B)
    got = exact_matmul(A, B)
    assert got[0, 0] == 0.0 and got[1, 0] == 2.0**-1074


def test_fp32_ties_underflow_and_overflow():
    # 2^-150 is half the smallest fp32 subnormal: a tie, to even (0); plus a hair: up.
    A = np.array([[2.0**-100, 0.0], [2.0**-100, 2.0**-100], [2.0**100, 2.0**27]], np.float32)
    B = np.array([[2.0**-50], [2.0**-120]], np.float32)
    B2 = np.array([[2.0**28], [2.0**-100]], np.float32)
    _check_bits(A, B)
    _check_bits(A, B2)
    assert exact_matmul(A, B, rounding="fp32")[0, 0] == 0.0
    assert exact_matmul(A, B, rounding="fp32")[1, 0] == np.float32(2.0**-149)
    assert np.isinf(exact_matmul(A, B2, rounding="fp32")[2, 0])


def test_low_precision_and_integer_inputs():
    rng = np.random.default_rng(5)
    A = rng.standard_normal((4, 48)).astype(ml_dtypes.bfloat16)
    B = rng.integers(-1000, 1000, (48, 3))
    _check_bits(A, B)
    C16 = rng.standard_normal((4, 3)).astype(np.float16)
    _check_bits(A.astype(ml_dtypes.float8_e4m3fn), B.astype(np.int8), C16)


def test_large_k_uses_smaller_digits_and_stays_exact():
    rng = np.random.default_rng(6)
    A = rng.standard_normal((2, 5000)).astype(np.float32)
    B = rng.standard_normal((5000, 2)).astype(np.float32)
    _check_bits(A, B)


def test_contract_errors():
    a = np.ones((2, 3))
    with pytest.raises(ValueError, match="rounding"):
        exact_matmul(a, a.T, rounding="fp16")
    with pytest.raises(ValueError, match="device"):
        exact_matmul(a, a.T, device="tpu")
    with pytest.raises(ValueError, match="B has 2 rows"):
        exact_matmul(a, a[:2])
    with pytest.raises(ValueError, match="Inf or NaN"):
        exact_matmul(np.array([[np.nan]]), np.ones((1, 1)))
    with pytest.raises(ValueError, match="broadcastable"):
        exact_matmul(a, a.T, np.ones((3, 3)))
    with pytest.raises(TypeError, match="complex"):
        exact_matmul(a.astype(complex), a.T)


@pytest.mark.gpu
def test_gpu_matches_cpu_bits():
    rng = np.random.default_rng(9)
    A = rng.standard_normal((70, 300)) * 2.0 ** rng.integers(-100, 100, (70, 300))
    B = rng.standard_normal((300, 50)) * 2.0 ** rng.integers(-100, 100, (300, 50))
    A, B = A.astype(np.float32), B.astype(np.float32)
    C = rng.standard_normal((70, 50)).astype(np.float32)
    for rounding in ("fp64", "fp32"):
        cpu = exact_matmul(A, B, C, rounding=rounding)
        gpu = exact_matmul(A, B, C, rounding=rounding, device="gpu").get()
        np.testing.assert_array_equal(cpu.view(np.uint8), gpu.view(np.uint8))


def _wide(rng, shape, lo=-1000, hi=1000):
    """Entries ±U[1,2)·2**e, e uniform in [lo, hi]: every row spans ~2000 binades."""
    e = rng.integers(lo, hi + 1, shape)
    return np.ldexp(rng.uniform(1, 2, shape) * rng.choice([-1.0, 1.0], shape), e)


def test_tiled_over_rows_columns_and_k_stays_exact(monkeypatch):
    """A budget so small that every tile is a few elements and k is cut into chunks: the
    bits still equal exact rational arithmetic (wide range, C included, fp64 and fp32)."""
    import precision.reference as ref

    monkeypatch.setattr(ref, "_MEMORY_BUDGET", 1 << 16)
    rng = np.random.default_rng(11)
    A, B = _wide(rng, (5, 24), -200, 200), _wide(rng, (24, 6), -200, 200)
    C = _wide(rng, (5, 6), -300, 200)
    assert ref._tile_shape(5, 6, 24, 20, 20, 4)[2] < 24  # k really is chunked
    _check_bits(A, B, C)
    _check_bits(A, B)


def test_memory_is_bounded_for_wide_range_inputs(monkeypatch):
    """Peak traced memory beyond inputs and output stays within 3x the tile budget, which is
    what keeps the default (256 MiB) under 1 GB at any size. Before tiling, this case (rows
    spanning 2**±150, ~15 digits per operand) allocated every digit matrix of B at once."""
    import tracemalloc

    import precision.reference as ref

    budget = 1 << 20
    monkeypatch.setattr(ref, "_MEMORY_BUDGET", budget)
    rng = np.random.default_rng(3)
    n = 96
    A, B = _wide(rng, (n, n), -150, 150), _wide(rng, (n, n), -150, 150)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = exact_matmul(A, B)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    beyond = peak - A.nbytes - B.nbytes - out.nbytes  # float64 copies of A, B + output
    assert beyond <= 3 * budget, f"{beyond / 2**20:.1f} MiB for a {budget / 2**20} MiB budget"
    exact = _exact(A[:2], B[:, :3])
    want = [[_round_fraction(v, 53, -1022, 1023) for v in row] for row in exact]
    assert out[:2, :3].tolist() == want


def test_integers_above_2_53_exact_or_refused():
    with pytest.raises(ValueError, match=r"holds the integer 9007199254740993"):
        exact_matmul([[2**53 + 1]], [[3]])
    with pytest.raises(ValueError, match="cannot represent exactly"):
        exact_matmul(np.array([[1]], np.uint64), np.array([[2**64 - 1]], np.uint64))
    # exactly representable large integers are accepted and exact
    got = exact_matmul([[2**60, 2**53 + 2]], [[3], [-1]])
    assert got[0, 0] == float(3 * 2**60 - 2**53 - 2)
    assert exact_matmul([[-(2**63)]], [[1]])[0, 0] == -(2.0**63)


def test_empty_inner_dimension_gives_c_rounded_once():
    C = np.array([[1.5, -2.0, 3e300], [0.0, 2.0**-1074, -(2.0**-149) * 0.75]])
    got = exact_matmul(np.zeros((2, 0)), np.zeros((0, 3)), C)
    assert got.tobytes() == C.tobytes()
    got32 = exact_matmul(np.zeros((2, 0)), np.zeros((0, 3)), C, rounding="fp32")
    want = [[_round_fraction(Fraction(float(v)), 24, -126, 127) for v in row] for row in C]
    assert got32.tolist() == np.array(want, np.float32).tolist()


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 8, 9, 16, 17])
def test_full_significand_fp64_at_small_k_is_exact(k: int) -> None:
    """fp64 inputs with (nearly) all 53 significand bits set, at small K, where the digit
    GEMMs' partial sums come closest to 2^53; one same-sign row and column (no cancellation).
    Against Fractions, rounded once by Python's int / int division."""
    rng = np.random.default_rng(k)

    def full(shape: tuple[int, int]) -> np.ndarray:
        mant = 1 + (rng.integers(2**52 - 2**40, 2**52, shape) | 1) / 2.0**52
        return mant * np.where(rng.random(shape) < 0.5, -1.0, 1.0)

    A, B = full((6, k)), full((k, 5))
    B[:, 0] = np.abs(B[:, 0])
    A[0] = np.abs(A[0])
    got = exact_matmul(A, B)
    for i in range(6):
        for j in range(5):
            ex = sum(Fraction(A[i, t]) * Fraction(B[t, j]) for t in range(k))
            assert got[i, j] == ex.numerator / ex.denominator, (i, j)
