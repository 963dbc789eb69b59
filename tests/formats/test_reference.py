"""exact_matmul against exact rational arithmetic (fractions) and mpmath at high precision."""

from __future__ import annotations

import math
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
    """``A @ B (+ C)`` in Fractions (terms with a zero factor skipped: they add exactly 0)."""
    m = A.shape[0]
    n = B.shape[1]
    out = []
    for i in range(m):
        row = []
        for j in range(n):
            ts = np.nonzero((A[i] != 0) & (B[:, j] != 0))[0]
            s = sum((Fraction(float(A[i, t])) * Fraction(float(B[t, j])) for t in ts), Fraction(0))
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


def _check_bits(A, B, C=None, device="cpu"):
    exact = _exact(A, B, C)
    for name, (p, emin, emax, dt, ut) in FORMATS.items():
        got = exact_matmul(A, B, C, rounding=name, device=device)
        got = got if device == "cpu" else got.get()
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


def test_memory_is_bounded_for_c_across_the_whole_range(monkeypatch):
    """As above with C spanning 2**-1074..2**1023 over small integer products (K = 600, β = 21):
    C's far digits are moved next to the products' limbs, so the limbs per element stay
    bounded (0.46x the budget; before, every tile held a limb for every 2**β binades between
    C's extremes: 3.4x)."""
    import tracemalloc

    import precision.reference as ref

    budget = 1 << 20
    monkeypatch.setattr(ref, "_MEMORY_BUDGET", budget)
    rng = np.random.default_rng(3)
    n = 64
    A = rng.integers(-8, 9, (n, 600)).astype(np.float64)
    B = rng.integers(-8, 9, (600, n)).astype(np.float64)
    C = _wide(rng, (n, n), -1074, 1023)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = exact_matmul(A, B, C)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    beyond = peak - A.nbytes - B.nbytes - C.nbytes - out.nbytes
    assert beyond <= 3 * budget, f"{beyond / 2**20:.1f} MiB for a {budget / 2**20} MiB budget"
    exact = _exact(A[:2], B[:, :3], C[:2, :3])
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


# Tie plus one sticky bit at every depth: the sticky bit of each limb below the 63-bit window
# must reach the rounding (an audit dropped one limb's sticky bit and no other test noticed).
# K sets the digit width β = ⌊(53 − ⌈log2 K⌉)/2⌋: 25, 24, 23, 21 here (513: the smallest K with
# the β of K = 1000, at half its cost); k-chunking sets in at K = 513.
TIE_KS = (3, 17, 65, 513)


def _tie_sticky_rows(p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``(lead, tie, sticky)`` for x = p+1 .. 1074 (2**-x down to the smallest subnormal):

    * ``1 + 2**-p + 2**-x``: a tie towards the even 1, broken up by the sticky bit;
    * ``(1 + 2**(1-p)) + 2**-p − 2**-x``: a tie towards the even 1 + 2**(2-p), broken down.

    Both round to ``1 + 2**(1-p)`` at precision p (rounding to the tie's even side shows up
    as 1 or 1 + 2**(2-p)). Returns the leads, the ties and the sticky entries (2·n rows)."""
    sticky = np.ldexp(1.0, -np.arange(p + 1, 1075))
    n = sticky.size
    lead = np.concatenate([np.ones(n), np.full(n, 1 + 2.0 ** (1 - p))])
    return lead, np.full(2 * n, 2.0**-p), np.concatenate([sticky, -sticky])


def _tie_sticky_case(
    k: int, p: int, via_c: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """``A`` (entries in columns 0, k//2, k−1, or the sticky entry in ``C`` when ``via_c``),
    ``B`` with columns ``+1`` and ``−1`` (the negated sums) and, for K ≥ 4, an entry ``2**c``
    (c = 0..24) in a row where A is zero: it moves the column's scale and with it the grid of
    limbs under the sum (every offset mod β), leaving the sum unchanged. Returns A, B, C and
    the column signs."""
    lead, tie, sticky = _tie_sticky_rows(p)
    m = lead.size
    n_align = 1 if k == 3 else 25
    signs = np.repeat([1.0, -1.0], n_align)
    A = np.zeros((m, k))
    cols = [0, k // 2, k - 1]
    A[:, cols[0]], A[:, cols[1]] = lead, tie
    B = np.zeros((k, signs.size))
    B[cols] = signs
    if k > 3:
        B[1] = np.tile(2.0 ** np.arange(n_align), 2)
    C = None
    if via_c:
        C = sticky[:, None] * signs[None, :]
    else:
        A[:, cols[2]] = sticky
    return A, B, C, signs


@pytest.mark.parametrize("via_c", [False, True], ids=["sticky_in_A", "sticky_in_C"])
@pytest.mark.parametrize("k", TIE_KS)
@pytest.mark.parametrize("name", list(FORMATS))
def test_tie_plus_one_sticky_bit_at_every_depth(name: str, k: int, via_c: bool) -> None:
    """Against Fractions (B restricted to A's nonzero columns is ±1, so the exact value of
    element (i, c) is ±(lead + tie + sticky)); and each case really is a tie plus a sticky bit:
    the oracle gives ±(1 + 2**(1-p)) everywhere, never the even side of the tie."""
    p, emin, emax, dt, ut = FORMATS[name]
    A, B, C, signs = _tie_sticky_case(k, p, via_c)
    got = exact_matmul(A, B, C, rounding=name)
    bad = got.view(ut) != _tie_sticky_want(name, signs).view(ut)
    depths = np.unique(np.nonzero(bad)[0] % (A.shape[0] // 2)) + p + 1
    assert not bad.any(), f"wrong at depths x = {depths}"


def _tie_sticky_want(name: str, signs: np.ndarray) -> np.ndarray:
    """The Fraction oracle's rounding of :func:`_tie_sticky_case`: ``±(lead + tie + sticky)``,
    checked to be ``±(1 + 2**(1-p))`` (each case is a tie plus a sticky bit, as designed)."""
    p, emin, emax, dt, _ = FORMATS[name]
    lead, tie, sticky = _tie_sticky_rows(p)
    exact = [
        Fraction(a) + Fraction(t) + Fraction(s) for a, t, s in zip(lead, tie, sticky, strict=True)
    ]
    rounded = np.array([_round_fraction(v, p, emin, emax) for v in exact])
    assert (rounded == 1 + 2.0 ** (1 - p)).all()
    return (rounded[:, None] * signs[None, :]).astype(dt)


@pytest.mark.parametrize("k", [3, 17])
@pytest.mark.parametrize("name", list(FORMATS))
def test_subnormal_tie_plus_one_sticky_bit_at_every_depth(name: str, k: int) -> None:
    """Half the smallest subnormal h, alone a tie to 0 (and ``3h`` one to ``4h``), plus (minus)
    ``2**-y`` at every depth down to the bottom of the exact products: both round to ``2h``.
    fp64: ``h = 2**-1075`` comes from products with ``B = ±2**-1074`` (y = 1076..2148); fp32:
    ``h = 2**-150`` from the entries themselves (y = 151..1074). Against Fractions."""
    p, emin, emax, dt, ut = FORMATS[name]
    h = Fraction(2) ** (emin - p)  # half the smallest subnormal
    scale = 2.0**-1074 if name == "fp64" else 1.0
    top = (h / Fraction(scale)).denominator.bit_length() - 1  # the tie entry is 2**-top
    sticky = np.ldexp(1.0, -np.arange(top + 1, 1075))
    n = sticky.size
    lead = np.concatenate([np.zeros(n), np.full(n, 2.0 ** (1 - top))])
    tie = np.full(2 * n, 2.0**-top)
    sticky = np.concatenate([sticky, -sticky])
    A = np.zeros((2 * n, k))
    A[:, 0], A[:, k // 2], A[:, k - 1] = lead, tie, sticky
    B = np.zeros((k, 2))
    B[[0, k // 2, k - 1]] = [scale, -scale]
    exact = [
        (Fraction(a) + Fraction(t) + Fraction(s)) * Fraction(scale)
        for a, t, s in zip(lead, tie, sticky, strict=True)
    ]
    rounded = np.array([_round_fraction(v, p, emin, emax) for v in exact])
    assert (rounded == float(2 * h)).all()
    want = np.stack([rounded, -rounded], axis=1).astype(dt)
    got = exact_matmul(A, B, rounding=name)
    bad = got.view(ut) != want.view(ut)
    depths = np.unique(np.nonzero(bad)[0] % n) + top + 1 - round(math.log2(scale))
    assert not bad.any(), f"wrong at depths y = {depths}"


@pytest.mark.parametrize("seed", range(6))
def test_c_across_the_whole_fp64_range(seed: int) -> None:
    """C with exponents across 2**-1074..2**1023 (subnormals, the largest finite value, zeros)
    far above, far below and inside the products' binades; one row of A sums to exactly 0
    (``x + x − 2x`` with x all ones: its limb sums cancel only through carries), so C alone
    is the value there. Against Fractions, fp64 and fp32."""
    rng = np.random.default_rng(100 + seed)
    m, n = 5, 4
    k = [3, 17, 70][seed % 3]
    spread = 30 if seed < 3 else 400  # products within 2**±60, or 2**±800
    A, B = _wide(rng, (m, k), -spread, spread), _wide(rng, (k, n), -spread, spread)
    x = (2.0**53 - 1) * 2.0 ** float(rng.integers(-spread - 53, spread))
    A[-1] = 0
    A[-1, :3] = [x, x, -2 * x]
    B[1] = B[2] = B[0]
    C = _wide(rng, (m, n), -1074, 1023)
    C.flat[rng.integers(0, m * n, 3)] = [np.finfo(np.float64).max, -(2.0**-1074), 0.0]
    _check_bits(A, B, C)


@pytest.mark.parametrize("far", [0, 60, 1074])
def test_c_far_above_tiny_products_sticky_with_sign(far: int) -> None:
    """fp32 ties (and a power of two, and the overflow midpoint) in C, with products of either
    sign from ``2**-far`` down to ``2**-(far+1074)`` below them (and from 2**-1074 down to
    2**-2148): only the products' sign acts, up for +, down for −. Against Fractions, and
    against the known neighbours."""
    flt_max = float(np.finfo(np.float32).max)
    cases = [  # C, fp32 result with a positive hair, with a negative hair
        (2.0**100 * (1 + 2.0**-24), 2.0**100 * (1 + 2.0**-23), 2.0**100),
        (2.0**100 * (1 + 3 * 2.0**-24), 2.0**100 * (1 + 2.0**-22), 2.0**100 * (1 + 2.0**-23)),
        (2.0**100 - 2.0**75, 2.0**100, 2.0**100 - 2.0**76),
        (2.0**100, 2.0**100, 2.0**100),
        (2.0**128 - 2.0**103, np.inf, flt_max),  # the overflow midpoint
    ]
    hair = np.ldexp(1.0, -np.arange(0, 1075, 7))
    A = np.concatenate([hair, -hair])[:, None]
    B = np.array([[2.0**-far, 2.0**-1074]])
    for c, up, down in cases:
        C = np.full((A.shape[0], 2), c)
        _check_bits(A, B, C)
        got = exact_matmul(A, B, C, rounding="fp32")
        assert (got[: hair.size] == np.float32(up)).all()
        assert (got[hair.size :] == np.float32(down)).all()


@pytest.mark.parametrize("k", [3, 1000])
def test_products_one_grid_unit_and_c_far_below(k: int) -> None:
    """Products summing to the lowest bit of the limb grid (``1·1`` with both factors at the
    bottom of their digit: ``2**(β−1)`` beside them sets the scale, β as the module picks it
    for K) plus C = ±2**-y, y = 1..1074: far below, where C's digits are moved up, 1 − 2**-y
    has its top bit one limb below the products' limb and must keep its exponent (round to
    1), and 1 + 2**-y must round to 1. Against Fractions."""
    beta = (53 - (k - 1).bit_length()) // 2
    A = np.zeros((1, k))
    A[0, :2] = [2.0 ** (beta - 1), 1.0]
    B = np.zeros((k, 1))
    B[1:3, 0] = [1.0, 2.0 ** (beta - 1)]
    y = np.arange(1, 1075)
    C = np.concatenate([np.ldexp(1.0, -y), -np.ldexp(1.0, -y)])[:, None]
    A = np.repeat(A, C.shape[0], axis=0)
    _check_bits(A, B, C)


@pytest.mark.gpu
def test_gpu_c_across_the_whole_range_and_sticky_ties_against_fractions() -> None:
    """The GPU path of C's digits (one scatter per digit, moved next to the products when far
    away) and of the sticky bit, against Fractions: C across 2**-1074..2**1023 with a row of
    products summing to 0, ties plus a sticky bit in C at every depth, products one grid unit
    above C."""
    rng = np.random.default_rng(7)
    A, B = _wide(rng, (5, 17), -400, 400), _wide(rng, (17, 4), -400, 400)
    A[-1] = 0
    A[-1, :3] = [1 - 2.0**-53, 1 - 2.0**-53, -2 + 2.0**-52]
    B[1] = B[2] = B[0]
    C = _wide(rng, (5, 4), -1074, 1023)
    _check_bits(A, B, C, device="gpu")
    for name, (p, _, _, _, ut) in FORMATS.items():
        for via_c in (False, True):
            A, B, C, signs = _tie_sticky_case(17, p, via_c)
            got = exact_matmul(A, B, C, rounding=name, device="gpu").get()
            assert (got.view(ut) == _tie_sticky_want(name, signs).view(ut)).all()
    A = np.zeros((64, 3))
    A[:, :2] = [2.0**24, 1.0]  # β = 25 at K = 3: 1 is the bottom bit of its digit
    B = np.array([[0.0], [1.0], [2.0**24]])
    C = -np.ldexp(1.0, -np.arange(1, 1075, 17))[:, None]
    _check_bits(A, B, C, device="gpu")
