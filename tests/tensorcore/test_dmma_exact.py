"""The exact paths of the f64 (DMMA) cores, outside the Boldo-Melquiond range, against exact
arithmetic: subnormal operands and results, ties in the subnormal range, huge operands and
overflow, a dominating or cancelling c, signed zeros and specials.

The oracle is Python integers: every finite binary64 is an integer times a power of two
(``float.as_integer_ratio``), so ``a b + c`` and ``c + sum a_k b_k`` are exact fractions with
power-of-two denominators, and CPython's int / int true division rounds them correctly (to
nearest even, subnormals included); |x| >= 2^1024 - 2^970 is ±Inf (tested explicitly). Large
sets are checked more cheaply against identities that hold exactly: IEEE products and sums
(``a·b``, ``a + c``: one correctly rounded NumPy operation), scaling by powers of two and
symmetry.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from precision.tensorcore import dmma
from precision.tensorcore.dmma import dot_rn, fma, fma_chain

TINY = 5e-324
MAX = np.finfo(np.float64).max
_OVERFLOW = 2**1024 - 2**970


def _round(num: int, den: int) -> float:
    if abs(num) >= _OVERFLOW * den:
        return math.inf if num > 0 else -math.inf
    return num / den


def _ref_fma(a: float, b: float, c: float) -> float:
    """IEEE 754 RN(a b + c) by Python integers (specials by IEEE rules)."""
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return math.fma(a, b, c) if hasattr(math, "fma") else _special(a, b, c)
    if a == 0 or b == 0:
        return c + a * b  # an exact signed zero plus c: IEEE addition
    (na, da), (nb, db), (nc, dc) = (x.as_integer_ratio() for x in (a, b, c))
    num = na * nb * dc + nc * da * db
    return 0.0 if num == 0 else _round(num, da * db * dc)


def _special(a: float, b: float, c: float) -> float:
    if math.isfinite(a) and math.isfinite(b):
        return c  # Inf or NaN c: the exact product is finite
    return a * b + c  # a·b is then the exact IEEE product (Inf, or NaN for Inf·0)


def _ref_dot(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """RN(c + sum_k a_k b_k) per element by Python integers, for finite a [n, K], b [n, K]."""
    out = []
    for ar, br, cv in zip(a.tolist(), b.tolist(), c.tolist(), strict=True):
        terms = [x.as_integer_ratio() for x in ar]
        tb = [y.as_integer_ratio() for y in br]
        nc, den = cv.as_integer_ratio()
        den = max([den] + [da * db for (_, da), (_, db) in zip(terms, tb, strict=True)])
        num = nc * (den // cv.as_integer_ratio()[1])
        for (na, da), (nb, db) in zip(terms, tb, strict=True):
            num += na * nb * (den // (da * db))
        if num == 0:
            neg = cv == 0 and math.copysign(1, cv) < 0
            neg &= all(
                x * y == 0 and math.copysign(1, x) != math.copysign(1, y)
                for x, y in zip(ar, br, strict=True)
            )
            out.append(-0.0 if neg else 0.0)
        else:
            out.append(_round(num, den))
    return np.array(out, dtype=np.float64)


def _same(got: np.ndarray, want: np.ndarray) -> None:
    """Bitwise equality, all NaNs equal."""
    g = np.ascontiguousarray(got, dtype=np.float64)
    w = np.ascontiguousarray(want, dtype=np.float64)
    bad = ~(np.isnan(g) & np.isnan(w)) & (g.view(np.int64) != w.view(np.int64))
    i = np.flatnonzero(bad.ravel())[:4]
    assert not bad.any(), (
        f"{bad.sum()} of {bad.size} differ: got {g.ravel()[i]}, want {w.ravel()[i]}"
    )


def _check_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    a, b, c = (np.ravel(x).astype(np.float64) for x in np.broadcast_arrays(a, b, c))
    want = [_ref_fma(x, y, z) for x, y, z in zip(a.tolist(), b.tolist(), c.tolist(), strict=True)]
    _same(fma(a, b, c), np.array(want))


def _wide(rng, n, emin, emax):
    """Signed doubles with 53 random significand bits and exponents uniform in [emin, emax]
    (below -1022: subnormals of the same exponent, fewer bits)."""
    x = np.ldexp(rng.random(n) + 1.0, rng.integers(emin, emax + 1, size=n))
    return np.where(rng.random(n) < 0.5, -x, x)


def _signs(rng, n):
    return rng.choice([-1.0, 1.0], n)


# ----------------------------------------------------------------------------- fma


def test_subnormal_operands_and_results():
    rng = np.random.default_rng(20)
    n = 1500
    # a subnormal, b anywhere a product can land near c, c from 0 to large
    _check_fma(_wide(rng, n, -1074, -1023), _wide(rng, n, -60, 1023), _wide(rng, n, -1074, 40))
    # products straddling 2^-1022 (and underflowing to 0), c subnormal, zero or tiny
    a, b = _wide(rng, n, -560, -490), _wide(rng, n, -560, -490)
    c = np.where(rng.random(n) < 0.3, _signs(rng, n) * 0.0, _wide(rng, n, -1074, -1020))
    _check_fma(a, b, c)
    # results on both sides of 2^-1022 by cancellation: c = -RN(ab) + j 2^-1074
    c = -(a * b) + rng.integers(-(2**20), 2**20, n) * TINY
    _check_fma(a, b, c)


def test_subnormal_ties_round_to_even():
    """Exact products (A odd) 2^-1075: halfway between two subnormals (or 2^-1022 and its
    neighbour), with c a multiple of 2^-1074 (up to 2^-1021, normal, for cancellation); then
    the same with a sticky bit (b = 2^-475 (1 + 2^-52)) on either side."""
    rng = np.random.default_rng(21)
    n = 2000
    big = rng.integers(2**52, 2**53, n) | 1
    small = rng.integers(1, 2**20, n) | 1
    odd = np.where(rng.random(n) < 0.5, big, small).astype(np.float64)
    a = _signs(rng, n) * odd * 2.0**-600
    j = rng.integers(-8, 9, n).astype(np.float64)
    cancel = rng.random(n) < 0.5  # else results near 2^-1022 (c small)
    c = np.where(cancel, -np.sign(a) * np.floor(odd / 2) + j, j + np.sign(a) * 2.0**51) * TINY
    b = np.full(n, 2.0**-475)
    _check_fma(a, b, c)
    assert (np.abs(fma(a, b, c)) >= 2.0**-1022).any() and (fma(a, b, c) == 0).any()
    _check_fma(a, b * (1 + 2.0**-52), c)
    _check_fma(a, b * (1 - 2.0**-53), c)
    _check_fma(a, -b, -c)


def test_huge_operands_overflow_and_dominating_c():
    rng = np.random.default_rng(22)
    n = 1500
    # operands >= 2^995 (the split would overflow), products near and past overflow
    _check_fma(_wide(rng, n, 990, 1023), _wide(rng, n, -40, 40), _wide(rng, n, 900, 1023))
    a = _wide(rng, n, 995, 1023)
    _check_fma(a, _wide(rng, n, -1074, -1000), _wide(rng, n, -1074, 1023))
    # the overflow threshold 2^1024 - 2^970 exactly (ties to even: Inf) and around it
    m = np.full(9, MAX)
    cc = np.array([2.0**970, 2.0**970 * (1 - 2.0**-53), 2.0**971, -MAX, 2.0**969, 0, -0.0, 1, -1])
    _check_fma(m, np.ones(9), cc)
    assert np.isinf(fma(MAX, 1.0, 2.0**970)) and fma(MAX, 1.0, 2.0**969) == MAX
    # c far above the product (the product only decides the rounding direction), c far below
    c = _wide(rng, n, -1000, 1023)
    _check_fma(_wide(rng, n, -1074, 100), _wide(rng, n, -1074, -900), c)
    _check_fma(_wide(rng, n, 400, 600), _wide(rng, n, 400, 420), _wide(rng, n, -1074, 0))
    # c a power of two with a tiny opposite product: the neighbour below is half as far
    p2 = _signs(rng, n) * np.ldexp(1.0, rng.integers(-1021, 1023, n))
    _check_fma(-np.sign(p2) * _wide(rng, n, -1074, -1000), np.abs(_wide(rng, n, -200, 0)), p2)


def test_cancellation_to_exact_zero_and_signed_zeros():
    rng = np.random.default_rng(23)
    n = 1000
    a = rng.integers(1, 2**26, n) * np.ldexp(1.0, rng.integers(-1074, -1049, n))  # subnormal
    b = _signs(rng, n) * np.ldexp(1.0, rng.integers(0, 40, n))  # a b exact
    got = fma(a, b, -(a * b))
    assert (got == 0).all() and not np.signbit(got).any()  # +0 under RN
    _check_fma(a, b, -(a * b))
    z = np.array([0.0, -0.0])
    grid = np.array(np.meshgrid(z, z, [TINY, -TINY, 2.0**1000, 0.0, -0.0], indexing="ij"))
    _check_fma(*grid.reshape(3, -1))  # zero products: IEEE signed-zero sums
    # underflow to zero keeps the exact result's sign
    got = fma(np.array([TINY, -TINY, TINY]), np.array([0.25, 0.25, -0.5]), np.zeros(3))
    assert (got == 0).all() and np.signbit(got).tolist() == [False, True, True]


def test_specials_mixed_into_slow_elements():
    rng = np.random.default_rng(24)
    n = 2000
    a, b, c = _wide(rng, n, -1074, 1023), _wide(rng, n, -1074, 1023), _wide(rng, n, -1074, 1023)
    for x in (a, b, c):
        for v in (np.nan, np.inf, -np.inf, 0.0, -0.0):
            x[rng.integers(0, n, 40)] = v
    _check_fma(a, b, c)


def test_products_match_ieee_multiplication_at_scale():
    """fma(a, b, ±0) = a·b (one IEEE rounding, subnormal and overflow included) and
    fma(a, 1, c) = a + c, on 300,000 elements each, all outside the proved range; ties come
    from short significands."""
    rng = np.random.default_rng(25)
    n = 300_000
    short = rng.integers(1, 2**12, n) * 2.0**-12 + 1.0
    a = np.where(rng.random(n) < 0.5, _wide(rng, n, -560, -500), _signs(rng, n) * short * 2.0**-530)
    b = np.where(rng.random(n) < 0.3, _wide(rng, n, -560, -500), _signs(rng, n) * short * 2.0**-533)
    b[: n // 10] = _wide(rng, n // 10, -40, 1023)  # with huge a below: overflow
    a[: n // 10] = _wide(rng, n // 10, 990, 1023)
    with np.errstate(all="ignore"):
        _same(fma(a, b, np.zeros(n)), a * b)
        _same(fma(a, b, -np.zeros(n)), a * b)
        c = _wide(rng, n, -1074, -1000)
        _same(fma(c, np.ones(n), a * 2.0**-520), c + a * 2.0**-520)


def test_power_of_two_scaling_at_scale():
    """RN commutes with exact scaling while the result stays normal: out-of-range operands
    (products below 2^-900 or above 2^1000) against in-range ones scaled back, 400,000
    elements (the in-range results are checked against the oracle elsewhere)."""
    rng = np.random.default_rng(26)
    n = 200_000
    a, b = _wide(rng, n, 40, 60), _wide(rng, n, 40, 60)
    c = np.where(rng.random(n) < 0.5, -(a * b) * (1 + rng.integers(-4, 5, n) * 2.0**-52),
                 _wide(rng, n, -20, 140))  # fmt: skip
    z = fma(a, b, c)
    normal = np.abs(z) >= 2.0**28  # results of at least 2^-1022 once scaled by 2^-1050
    assert normal.mean() > 0.9
    got = fma(a * 2.0**-520, b * 2.0**-530, c * 2.0**-1050)  # products below 2^-900
    _same(got[normal], z[normal] * 2.0**-1050)
    a, b, c = a * 2.0**-50, b * 2.0**-50, c * 2.0**-100
    z = fma(a, b, c)
    with np.errstate(over="ignore"):  # (z 2^990 >= 2^1024 exactly where RN overflows)
        _same(fma(a * 2.0**500, b * 2.0**490, c * 2.0**990), z * 2.0**990)
    # symmetry on subnormal data: RN(-x) = -RN(x), and a b = b a
    a, b, c = _wide(rng, n, -1074, -500), _wide(rng, n, -600, 60), _wide(rng, n, -1074, -1000)
    z = fma(a, b, c)
    _same(fma(-a, b, -c), -z)
    _same(fma(b, a, c), z)


# ----------------------------------------------------------------------------- chains


def test_chain_on_tiny_and_huge_data():
    """The whole chain on the exact path: inputs scaled by 1e-140 (every product below
    2^-900), by 2^-540 (products and sums subnormal) and near 2^1000."""
    rng = np.random.default_rng(27)
    m, k, n = 6, 8, 5
    for scale in (1e-140, 2.0**-540, 2.0**500):
        a = rng.uniform(-1, 1, (m, k)) * scale
        b = rng.uniform(-1, 1, (k, n)) * scale
        c = rng.uniform(-1, 1, (m, n)) * scale * scale
        want = c.copy()
        for kk in range(k):
            want = np.array(
                [[_ref_fma(float(a[i, kk]), float(b[kk, j]), float(want[i, j])) for j in range(n)]
                 for i in range(m)]
            )  # fmt: skip
        _same(fma_chain(a, b, c), want)


# ----------------------------------------------------------------------------- dot_rn


def _check_dot(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """dot_rn over outputs [n]: a [n, K], b [n, K] per output (as a diagonal of M = N = 1
    batches), c [n]."""
    got = dot_rn(a[:, None, :], b[:, :, None], c[:, None, None])[:, 0, 0]
    _same(got, _ref_dot(a, b, c))


@pytest.mark.parametrize("k", [1, 4, 16])
def test_dot_rn_exact_over_the_whole_range(k):
    rng = np.random.default_rng(30 + k)
    n = 600
    _check_dot(
        _wide(rng, n * k, -1074, 1023).reshape(n, k),
        _wide(rng, n * k, -1074, 1023).reshape(n, k),
        _wide(rng, n, -1074, 1023),
    )
    # tiny products summing across 2^-1022, cancellation with c, zeros
    a = _wide(rng, n * k, -560, -500).reshape(n, k)
    b = _wide(rng, n * k, -560, -500).reshape(n, k)
    c = -(a * b).sum(axis=1) * (1 + rng.integers(-3, 4, n) * 2.0**-50)
    a[rng.random(a.shape) < 0.1] = 0.0
    _check_dot(a, b, c)
    # huge: sums near and past overflow, with cancellation
    a = _wide(rng, n * k, 1000, 1023).reshape(n, k)
    b = _wide(rng, n * k, -2, 1).reshape(n, k)
    _check_dot(a, b, _wide(rng, n, 1000, 1023))


def test_dot_rn_subnormal_ties_and_signed_zeros():
    rng = np.random.default_rng(33)
    n = 800
    odd = (rng.integers(1, 2**40, (n, 4)) | 1).astype(np.float64)
    a = _signs(rng, n * 4).reshape(n, 4) * odd * 2.0**-600
    b = np.full((n, 4), 2.0**-475)  # each product an odd multiple of 2^-1075
    b[:, 3] = 0.0
    c = rng.integers(-(2**30), 2**30, n) * TINY
    _check_dot(a, b, c)  # halfway cases where the odd counts are odd
    b[:, 2] *= 1 + 2.0**-52  # a sticky bit
    _check_dot(a, b, c)
    # exact zeros: -0 only if c and every product are -0
    z = np.array([[0.0, -0.0], [-0.0, 0.0], [TINY, -TINY], [0.0, 0.0]])
    one = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [-1.0, 1.0]])
    for cv in (0.0, -0.0):
        _check_dot(z, one, np.full(4, cv))


def test_dot_rn_k1_equals_fma_at_scale():
    """Two independent exact paths (integer limbs, scaled Boldo-Melquiond): dot_rn with K = 1
    is fma, bit for bit, on 200,000 elements (400 x 500 outer products) over the whole range."""
    rng = np.random.default_rng(34)
    a, b = _wide(rng, 400, -1074, 1023)[:, None], _wide(rng, 500, -1074, 1023)[None, :]
    with np.errstate(all="ignore"):
        c = np.where(
            rng.random((400, 500)) < 0.5,
            -(a * b),
            _wide(rng, 200_000, -1074, 1023).reshape(400, 500),
        )
        c[::7] = _wide(rng, c[::7].size, -1074, -1000).reshape(c[::7].shape)
        got = dot_rn(a, b, c)
    _same(got, fma(a, b, c))


# ----------------------------------------------------------------------------- tiles, memory


@pytest.mark.parametrize("order", ["increasing", "decreasing", [3, 0, 5, 5, 1, 2, 4]])
def test_chain_in_column_tiles_and_k_blocks(monkeypatch, order):
    """Tiles of 2 x 4 outputs (a 7 x 10 output in 4 x 3 tiles, the last ones partial) and
    blocks of a few k: the same bits as the oracle."""
    monkeypatch.setattr(dmma, "_FMA_TILE_ELEMENTS", 8)
    monkeypatch.setattr(dmma, "_FMA_BLOCK_ELEMENTS", 20)
    rng = np.random.default_rng(35)
    m, k, n = 7, 6, 10
    a = rng.standard_normal((m, k)) * np.ldexp(1.0, rng.integers(-600, 600, (m, k)))
    b = rng.standard_normal((k, n)) * np.ldexp(1.0, rng.integers(-600, 600, (k, n)))
    c = rng.standard_normal((m, n))
    a[1, 2], b[3, 4], c[5, 9] = np.inf, TINY, np.nan
    ks = (
        range(k)
        if order == "increasing"
        else range(k - 1, -1, -1)
        if order == "decreasing"
        else order
    )
    want = c.copy()
    for kk in ks:
        want = np.array(
            [[_ref_fma(float(a[i, kk]), float(b[kk, j]), float(want[i, j])) for j in range(n)]
             for i in range(m)]
        )  # fmt: skip
    _same(fma_chain(a, b, c, order=order), want)


def test_chain_memory_does_not_grow_with_the_operands(traced_peak):
    """fma_chain kept full-size copies, splits and flags of both operands (about 3.25 times
    their float64 size: 104 MiB beyond the output for this 32 MiB b); each tile now copies
    and splits one block of k at a time, so the peak is a few MiB whatever K."""
    rng = np.random.default_rng(36)
    for k in (256, 2048):
        a = rng.standard_normal((1, k))
        b = rng.standard_normal((k, 2048))
        c = np.zeros((1, 2048))
        peak = traced_peak(lambda a=a, b=b, c=c: fma_chain(a, b, c))
        assert peak < 24 * 2**20, (k, peak / 2**20)
