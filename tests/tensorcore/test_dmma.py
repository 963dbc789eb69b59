"""binary64 FMA / DMMA cores against exact rational arithmetic.

The oracle rounds an exact ``Fraction`` to binary64 and then *proves* the rounding with
``Fraction`` comparisons against both neighbours (nearest, ties to even, overflow threshold), so
it does not rest on any float arithmetic of the code under test.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest

from precision.tensorcore.dmma import dot_pairwise, dot_rn, fma, fma_chain
from precision.threads import in_threads

MAX = np.finfo(np.float64).max
TINY = 5e-324
OVERFLOW = Fraction(2**1024 - 2**970)


def _odd(x: float) -> bool:
    return struct.unpack("<q", struct.pack("<d", abs(x)))[0] & 1 == 1


def _rn(fr: Fraction) -> float:
    """RN-even of an exact rational in binary64, verified by exact neighbour comparisons."""
    if abs(fr) >= OVERFLOW:
        return math.inf if fr > 0 else -math.inf
    z = fr.numerator / fr.denominator
    if z == 0 and fr != 0:
        z = 0.0 if fr > 0 else -0.0
    err = abs(fr - Fraction(z))
    for nb in (math.nextafter(z, math.inf), math.nextafter(z, -math.inf)):
        if math.isinf(nb):  # the virtual neighbour beyond MAX, 2^1024, counts as even
            nbf = Fraction(2**1024 if nb > 0 else -(2**1024))
        else:
            nbf = Fraction(nb)
        d = abs(fr - nbf)
        assert err < d or (err == d and not _odd(z)), (fr, z)
    return z


def _exact_fma(a: float, b: float, c: float) -> float:
    """IEEE 754 fma by cases: specials, then exact rationals."""
    if math.isnan(a) or math.isnan(b) or math.isnan(c):
        return math.nan
    if (math.isinf(a) and b == 0) or (math.isinf(b) and a == 0):
        return math.nan
    if math.isinf(a) or math.isinf(b):
        p_sign = math.copysign(1.0, a) * math.copysign(1.0, b)
        if math.isinf(c) and math.copysign(1.0, c) != p_sign:
            return math.nan
        return p_sign * math.inf
    if math.isinf(c):
        return c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        p_neg = (math.copysign(1.0, a) * math.copysign(1.0, b)) < 0
        if a * b == 0 and c == 0 and p_neg and math.copysign(1.0, c) < 0:
            return -0.0
        return 0.0
    return _rn(exact)


def _same(got: np.ndarray, want: np.ndarray) -> None:
    """Bitwise equality, all NaNs equal."""
    g, w = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    bad = ~both_nan & (g.view(np.int64) != w.view(np.int64))
    assert not bad.any(), f"{bad.sum()} mismatches, first: got {g[bad][:5]}, want {w[bad][:5]}"


def _check_fma(a, b, c) -> None:
    a, b, c = (np.asarray(x, dtype=np.float64).ravel() for x in (a, b, c))
    want = np.array(
        [_exact_fma(x, y, z) for x, y, z in zip(a.tolist(), b.tolist(), c.tolist(), strict=True)]
    )
    _same(fma(a, b, c), want)


def _wide(rng, n, emin=-1074, emax=1023):
    """Random signed doubles with exponents uniform in [emin, emax] (subnormals included)."""
    m = rng.random(n) + 1.0
    e = rng.integers(emin, emax + 1, size=n)
    x = np.ldexp(m, e)
    return np.where(rng.random(n) < 0.5, -x, x)


def test_fma_wide_exponents():
    rng = np.random.default_rng(1)
    n = 3000
    _check_fma(_wide(rng, n), _wide(rng, n), _wide(rng, n))
    # Products and c of comparable magnitude (fast path plus heavy cancellation).
    a, b = _wide(rng, n, -200, 200), _wide(rng, n, -200, 200)
    c = -(a * b) * (1 + rng.integers(-8, 9, size=n) * 2.0**-52)
    _check_fma(a, b, c)


def test_fma_fast_path_cancellation_and_ties():
    rng = np.random.default_rng(2)
    n = 4000
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    _check_fma(a, b, -(a * b))  # result = -(rounding error of a*b), exact
    _check_fma(a, b, rng.standard_normal(n))
    # Exact halfway cases: c in [1, 2), a b = odd * 2^-53 (ties between neighbours of c).
    c = 1.0 + rng.integers(0, 2**52, size=n) * 2.0**-52
    t = (2 * rng.integers(0, 4, size=n) + 1).astype(np.float64)
    s = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    _check_fma(t * s, np.full(n, 2.0**-53), c)
    _check_fma(t, np.full(n, 2.0**-53), -c)


def test_fma_subnormal_and_overflow_regions():
    rng = np.random.default_rng(3)
    n = 2000
    # Products around the subnormal threshold, c subnormal or tiny.
    a, b = _wide(rng, n, -600, -450), _wide(rng, n, -600, -450)
    _check_fma(a, b, _wide(rng, n, -1074, -1000))
    _check_fma(_wide(rng, n, -1074, -1022), _wide(rng, n, -10, 60), _wide(rng, n, -1074, -1022))
    # Products and sums near overflow.
    a, b = _wide(rng, n, 500, 520), _wide(rng, n, 500, 520)
    _check_fma(a, b, _wide(rng, n, 1015, 1023))
    _check_fma(np.full(n, MAX), rng.random(n) + 0.5, -np.full(n, MAX) * rng.random(n))
    _check_fma(np.full(4, MAX), np.ones(4), np.array([MAX, -MAX, 2.0**970, 2.0**969]))


def test_fma_special_values_all_combinations():
    vals = [0.0, -0.0, 1.0, -1.0, 1.5, TINY, -TINY, 2.0**-1022, MAX, -MAX]
    vals += [math.inf, -math.inf, math.nan, 3.0, -(2.0**-600), 2.0**600]
    grid = np.array(np.meshgrid(vals, vals, vals, indexing="ij")).reshape(3, -1)
    _check_fma(*grid)


def test_fma_signed_zeros():
    z = fma(
        np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0]),
        np.array([1.0, 1.0, -1.0, 0.0, 1.0, 0.0]),
        np.array([-0.0, -0.0, -0.0, -0.0, -1.0, -0.0]),
    )
    assert np.signbit(z).tolist() == [False, True, True, True, False, True]
    assert (z == 0).all()


def test_fma_broadcast_and_scalar():
    assert fma(2.0, 3.0, 1.0).shape == ()
    assert float(fma(2.0, 3.0, 1.0)) == 7.0
    rng = np.random.default_rng(4)
    a, b, c = rng.standard_normal((3, 1)), rng.standard_normal((1, 4)), rng.standard_normal(4)
    got = fma(a, b, c)
    assert got.shape == (3, 4)
    _check_fma(*np.broadcast_arrays(a, b, c))


def _chain_oracle(a, b, c, ks):
    m, n = c.shape
    out = np.empty((m, n))
    for i in range(m):
        for j in range(n):
            d = float(c[i, j])
            for k in ks:
                d = _exact_fma(float(a[i, k]), float(b[k, j]), d)
            out[i, j] = d
    return out


@pytest.mark.parametrize("order", ["increasing", "decreasing", [2, 0, 3, 1, 3]])
def test_fma_chain(order):
    rng = np.random.default_rng(5)
    m, n, k = 7, 6, 4
    a = rng.standard_normal((m, k)) * np.ldexp(1.0, rng.integers(-40, 40, (m, k)))
    b = rng.standard_normal((k, n)) * np.ldexp(1.0, rng.integers(-40, 40, (k, n)))
    c = rng.standard_normal((m, n)) * 2.0**30
    a[0, 1], b[2, 3], a[1, 0], c[2, 2] = math.inf, 0.0, 2.0**-1070, -0.0
    b[:, 5] = 2.0**-1000  # products near the subnormal range take the exact path
    if order == "increasing":
        ks = range(k)
    elif order == "decreasing":
        ks = range(k - 1, -1, -1)
    else:
        ks = order
    _same(fma_chain(a, b, c, order=order), _chain_oracle(a, b, c, ks))


def test_fma_chain_batched():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((2, 1, 3, 8))
    b = rng.standard_normal((4, 8, 5))
    c = rng.standard_normal((3, 5))
    got = fma_chain(a, b, c)
    assert got.shape == (2, 4, 3, 5)
    for i in range(2):
        for j in range(4):
            _same(got[i, j], _chain_oracle(a[i, 0], b[j], c, range(8)))


def _dot_oracle(a, b, c):
    m, n = c.shape
    out = np.empty((m, n))
    for i in range(m):
        for j in range(n):
            terms = [(float(a[i, k]), float(b[k, j])) for k in range(a.shape[1])]
            cv = float(c[i, j])
            vals = [x for p in terms for x in p] + [cv]
            if any(math.isnan(v) for v in vals) or any(
                math.isinf(x) and y == 0 or math.isinf(y) and x == 0 for x, y in terms
            ):
                out[i, j] = math.nan
                continue
            infs = {
                math.copysign(1.0, x) * math.copysign(1.0, y)
                for x, y in terms
                if math.isinf(x) or math.isinf(y)
            }
            if math.isinf(cv):
                infs.add(math.copysign(1.0, cv))
            if infs:
                out[i, j] = math.nan if len(infs) > 1 else infs.pop() * math.inf
                continue
            exact = sum((Fraction(x) * Fraction(y) for x, y in terms), Fraction(cv))
            if exact == 0:
                allneg = (
                    all(
                        x * y == 0 and math.copysign(1.0, x) * math.copysign(1.0, y) < 0
                        for x, y in terms
                    )
                    and cv == 0
                    and math.copysign(1.0, cv) < 0
                )
                out[i, j] = -0.0 if allneg else 0.0
            else:
                out[i, j] = _rn(exact)
    return out


@pytest.mark.parametrize("k", [4, 8, 16])
def test_dot_rn_random(k):
    rng = np.random.default_rng(k)
    m, n = 12, 10
    a = rng.standard_normal((m, k)) * np.ldexp(1.0, rng.integers(-30, 30, (m, k)))
    b = rng.standard_normal((k, n)) * np.ldexp(1.0, rng.integers(-30, 30, (k, n)))
    c = rng.standard_normal((m, n))
    c[0] = -(a[0] @ b)  # heavy cancellation
    _same(dot_rn(a, b, c), _dot_oracle(a, b, c))
    aw = _wide(rng, m * k, -700, 700).reshape(m, k)
    bw = _wide(rng, k * n, -700, 700).reshape(k, n)
    cw = _wide(rng, m * n, -1074, 1023).reshape(m, n)
    _same(dot_rn(aw, bw, cw), _dot_oracle(aw, bw, cw))


def test_dot_rn_specials_zeros_overflow():
    a = np.array([[math.inf, 1.0], [-0.0, 0.0], [MAX, MAX], [1.0, math.nan], [TINY, TINY]])
    b = np.array([[1.0, 0.5], [1.0, -1.0]])
    c = np.array([[1.0, -math.inf], [-0.0, -0.0], [-MAX, MAX], [0.0, 0.0], [0.0, -0.0]])
    _same(dot_rn(a, b, c), _dot_oracle(a, b, c))


def _pairwise_oracle(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """dot_pairwise's tree in Python floats (IEEE binary64, RN), one [M, K] x [K, N] tile."""
    m, k = a.shape
    n = b.shape[1]
    want = np.empty((m, n))
    for i in range(m):
        for j in range(n):
            p = [float(a[i, kk]) * float(b[kk, j]) for kk in range(k)]
            while len(p) > 1:
                odd = p[-1:] if len(p) % 2 else []
                p = [p[t] + p[t + 1] for t in range(0, len(p) - 1, 2)] + odd
            want[i, j] = p[0] + float(c[i, j])
    return want


def test_dot_pairwise_matches_python_floats():
    rng = np.random.default_rng(9)
    m, n, k = 5, 4, 7
    a, b, c = rng.standard_normal((m, k)), rng.standard_normal((k, n)), rng.standard_normal((m, n))
    _same(dot_pairwise(a, b, c), _pairwise_oracle(a, b, c))


@pytest.mark.parametrize("chunk", [1 << 22, 200, 20])
def test_dot_pairwise_stacks_match_python_floats(monkeypatch, chunk):
    """A stack of tiles (with a broadcast c), in steps of several entries, of one entry, or of
    rows of one entry (``_CHUNK_ELEMENTS`` made small): each tile as the Python-float tree."""
    from precision.tensorcore import dmma

    monkeypatch.setattr(dmma, "_CHUNK_ELEMENTS", chunk)
    rng = np.random.default_rng(10)
    a = rng.standard_normal((6, 3, 5)) * 10.0 ** rng.integers(-200, 200, (6, 3, 5))
    b = rng.standard_normal((6, 5, 4))
    c = rng.standard_normal((3, 4))
    got = dot_pairwise(a, b, c)
    assert got.shape == (6, 3, 4)
    for e in range(6):
        _same(got[e], _pairwise_oracle(a[e], b[e], c))


def test_empty_k_returns_c():
    c = np.array([[1.5, -0.0]])
    a, b = np.zeros((1, 0)), np.zeros((0, 2))
    for f in (fma_chain, dot_rn, dot_pairwise):
        _same(f(a, b, c), c)


def test_fma_chain_tiles_and_threads(monkeypatch):
    # Small tiles and a zero threshold force several tiles on a pool of three threads (set
    # here: a pytest-xdist worker runs on its share of the cores); one tile holds an
    # out-of-range element (masked repair), the others take the in-place fast path.
    from precision.tensorcore import dmma

    pools = []

    def counted(work, parts, threads=0):
        pools.append(threads)
        return in_threads(work, parts, threads)

    monkeypatch.setattr(dmma, "_FMA_TILE_ELEMENTS", 64)
    monkeypatch.setattr(dmma, "_MIN_THREADED_FMAS", 0)
    monkeypatch.setattr(dmma, "thread_count", lambda: 3)
    monkeypatch.setattr(dmma, "in_threads", counted)
    rng = np.random.default_rng(8)
    m, n, k = 40, 16, 8
    a = rng.standard_normal((m, k)) * np.ldexp(1.0, rng.integers(-20, 20, (m, k)))
    b = rng.standard_normal((k, n))
    c = rng.standard_normal((m, n))
    a[33, 2] = 2.0**-1060
    c[5, 7] = math.nan
    _same(fma_chain(a, b, c), _chain_oracle(a, b, c, range(k)))
    assert pools == [3]


def test_fma_chain_threads_follow_omp_num_threads(monkeypatch):
    """One thread (OMP_NUM_THREADS=1, as in a Dask worker with one core) starts no pool."""
    from precision.tensorcore import dmma

    def no_pool(*args, **kwargs):
        raise AssertionError("fma_chain started threads with OMP_NUM_THREADS=1")

    monkeypatch.setattr(dmma, "_FMA_TILE_ELEMENTS", 64)
    monkeypatch.setattr(dmma, "_MIN_THREADED_FMAS", 0)
    monkeypatch.setattr(dmma, "in_threads", no_pool)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    rng = np.random.default_rng(9)
    a, b, c = (
        rng.standard_normal((40, 8)),
        rng.standard_normal((8, 16)),
        rng.standard_normal((40, 16)),
    )
    _same(fma_chain(a, b, c), _chain_oracle(a, b, c, range(8)))


def _extreme(rng, shape):
    """float64 values over the whole exponent range, with zeros, subnormals, huge values,
    Inf and NaN: every path of fma_chain (exact, Boldo-Melquiond, masked repair)."""
    x = rng.uniform(-1, 1, shape) * np.exp2(rng.integers(-1074, 1023, shape).astype(float))
    flat = x.reshape(-1)
    for v in (np.nan, np.inf, -np.inf, 0.0, -0.0, TINY, MAX, 2.0**995, 2.0**-900):
        flat[rng.integers(0, flat.size, max(1, flat.size // 30))] = v
    flat[::3] = rng.uniform(-1, 1, flat[::3].shape).astype(np.float32)  # exact products
    return x


def test_fma_chain_tiles_take_several_batch_entries(monkeypatch):
    # a large batch of small products runs in tiles of several entries (one Python loop over K
    # per tile), not one tile per entry (4000 tiles here; 2 with the grouping), same bits
    import precision.tensorcore.dmma as dmma_module

    tiles = []

    class Counting(dmma_module._Workspace):
        def __init__(self, shape):
            tiles.append(shape)
            super().__init__(shape)

    monkeypatch.setattr(dmma_module, "_Workspace", Counting)
    rng = np.random.default_rng(12)
    a = rng.standard_normal((4000, 4, 4))
    b, c = rng.standard_normal((4000, 4, 4)), rng.standard_normal((4, 4))
    a[::50], b[::70] = _extreme(rng, (80, 4, 4)), _extreme(rng, (58, 4, 4))
    got = fma_chain(a, b, c)
    assert len(tiles) <= -(-got.size // dmma_module._FMA_TILE_ELEMENTS)
    for i in range(0, 4000, 35):  # each entry alone is one tile of its own
        _same(got[i], fma_chain(a[i], b[i], c))


@pytest.mark.parametrize(
    ("a_batch", "b_batch", "c_batch"),
    [((40,), (40,), ()), ((40,), (1,), (40,)), ((1,), (40,), (1,)), ((5, 1), (1, 8), (5, 8))],
)
def test_fma_chain_grouped_tiles_equal_entries_alone(a_batch, b_batch, c_batch):
    rng = np.random.default_rng(13)
    a, b = _extreme(rng, a_batch + (3, 4)), _extreme(rng, b_batch + (4, 5))
    c = _extreme(rng, c_batch + (3, 5))
    got = fma_chain(a, b, c)
    batch = np.broadcast_shapes(a_batch, b_batch, c_batch)
    ab, bb = np.broadcast_to(a, batch + (3, 4)), np.broadcast_to(b, batch + (4, 5))
    cb = np.broadcast_to(c, batch + (3, 5))
    for idx in np.ndindex(*batch):
        _same(got[idx], fma_chain(ab[idx], bb[idx], cb[idx]))
