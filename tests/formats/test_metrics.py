"""error_metrics: the relative errors every results row carries, against a direct formula
(np.where over full-size temporaries), bit for bit, with zeros, signed zeros, NaN and Inf; its
memory stays near two float64 arrays of the output's size. identical_bits_fraction: the
fraction of elements (not bits) with identical bit patterns, against known bit flips."""

from __future__ import annotations

import math
import tracemalloc
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from precision import median, metrics
from precision.metrics import error_metrics, identical_bits_fraction


def _direct(approx, exact, exact_lo=None) -> dict[str, float]:
    """The definition, written plainly: one new array per step."""
    a = np.asarray(approx, dtype=np.float64)
    e = np.asarray(exact, dtype=np.float64)
    diff = a - e
    if exact_lo is not None:
        diff = diff - exact_lo
    # the square root of the sum of squares in C order (numpy's pairwise sum; these arrays are
    # below error_metrics' chunk of 65536 elements, so one chunk)
    with np.errstate(over="ignore"):
        norm, dnorm = np.sqrt(np.sum(np.square(e))), np.sqrt(np.sum(np.square(diff)))
    if np.isnan(norm) or np.isnan(dnorm):
        fro = np.nan
    else:
        fro = dnorm / norm if norm > 0 else (0.0 if dnorm == 0 else np.inf)
    if diff.size == 0:
        return {"err_fro": float(fro), "err_max": 0.0, "err_median": 0.0}
    ad, ae = np.abs(diff), np.abs(e)
    at_zero = np.where(np.isnan(ad), np.nan, np.where(ad == 0, 0.0, np.inf))  # exact 0 or NaN
    rel = np.where(ae > 0, ad / np.where(ae > 0, ae, 1.0), at_zero)
    return {"err_fro": float(fro), "err_max": float(rel.max()), "err_median": float(np.median(rel))}


def _bits(d: dict[str, float]) -> dict[str, bytes]:
    return {k: np.float64(v).tobytes() for k, v in d.items()}


@pytest.mark.parametrize("seed", range(6))
def test_equals_the_direct_formula_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for trial in range(40):
        shape = tuple(int(s) for s in rng.integers(0, 9, size=rng.integers(1, 3)))
        e = rng.standard_normal(shape) * 2.0 ** rng.integers(-30, 30, shape)
        a = e * (1 + 1e-7 * rng.standard_normal(shape))
        for x in (e, a):
            u = rng.random(shape)
            x[u < 0.1] = 0.0
            x[(u >= 0.1) & (u < 0.13)] = -0.0
            if trial % 3 == 0:
                x[(u >= 0.13) & (u < 0.15)] = np.nan
            if trial % 5 == 0:
                x[(u >= 0.15) & (u < 0.17)] = -np.inf
        approx = [a, a.astype(np.float32)][trial % 2]
        lo = rng.standard_normal(shape) * 1e-20 if trial % 4 == 0 else None
        kept = (e.copy(), approx.copy())
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            want, got = _direct(approx, e, lo), error_metrics(approx, e, lo)
        assert _bits(got) == _bits(want), (shape, got, want)
        # the inputs are never written
        assert np.array_equal(e, kept[0], equal_nan=True)
        assert np.array_equal(approx, kept[1], equal_nan=True)


def test_memory_stays_near_two_output_sized_arrays() -> None:
    rng = np.random.default_rng(0)
    e = rng.standard_normal((1024, 1024))
    a = (e * (1 + 1e-7 * rng.standard_normal(e.shape))).astype(np.float32)
    tracemalloc.start()
    try:
        error_metrics(a, e)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 2.6 * e.nbytes, peak / e.nbytes  # the direct formula: about 7x


@pytest.mark.parametrize("k", [-1000, -950, -600, -565, -170, 170, 560, 600, 1000])
def test_err_fro_is_the_same_at_any_power_of_two_scale(k: int) -> None:
    """Scaling approx and exact by 2^k is exact and scales every error term alike, so all
    three metrics keep their bits where the plain sum of squares overflowed (k >= 500) or
    underflowed (k <= -500) and read inf/nan or 0."""
    rng = np.random.default_rng(3)
    e = rng.standard_normal((4, 4))
    a = e * (1 + 1e-7 * rng.standard_normal((4, 4)))
    if k == -1000:  # differences of 2^-1023 are subnormal: compare values, not bits
        got = error_metrics(a * 2.0**k, e * 2.0**k)["err_fro"]
        assert got == pytest.approx(error_metrics(a, e)["err_fro"], rel=1e-5)
        return
    assert _bits(error_metrics(a * 2.0**k, e * 2.0**k)) == _bits(error_metrics(a, e))


@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e-170, 1e200, 1e300, 1e307])
def test_err_fro_at_extreme_magnitudes(scale: float) -> None:
    x = np.random.default_rng(0).standard_normal((4, 4))
    m = error_metrics(x * scale * (1 + 1e-7), x * scale)  # and no warning
    assert m["err_fro"] == pytest.approx(1e-7, rel=1e-6)
    assert m["err_max"] == pytest.approx(1e-7, rel=1e-6)


def test_err_fro_of_a_difference_far_from_the_reference_scale() -> None:
    x = np.random.default_rng(1).standard_normal((5, 3))
    assert error_metrics(x * 1e300, x)["err_fro"] == pytest.approx(1e300, rel=1e-12)
    assert error_metrics(x * (1 + 2.0**-40), x * 1e-300)["err_fro"] == pytest.approx(
        1e300, rel=1e-12
    )
    tiny = x.copy()
    tiny[0, 0] = np.nextafter(tiny[0, 0], np.inf)  # one ulp of one element at scale 2^-530
    got = error_metrics(tiny * 2.0**-530, x * 2.0**-530)["err_fro"]
    assert got == error_metrics(tiny, x)["err_fro"] > 0
    inf = x * 1e200
    inf[1, 1] = np.inf
    assert error_metrics(inf, x * 1e200)["err_fro"] == np.inf  # not inf/inf = nan


@pytest.mark.parametrize("which", ["approx", "exact", "exact_lo"])
def test_complex_and_non_numeric_inputs_are_refused_by_name(which: str) -> None:
    e = np.ones((3, 4))
    args = {"approx": e.astype(np.float32), "exact": e, "exact_lo": np.zeros((3, 4))}
    args[which] = e.astype(np.complex128) * 1j
    with pytest.raises(TypeError, match=f"{which} has complex dtype complex128; error_metrics"):
        error_metrics(**args)
    args[which] = np.full((3, 4), "a")
    with pytest.raises(TypeError, match=f"{which} has dtype <U1; error_metrics takes real"):
        error_metrics(**args)


@pytest.mark.parametrize(
    ("approx", "exact", "lo", "match"),
    [
        ((30,), (1, 30), None, r"approx has shape \(30,\) but exact has shape \(1, 30\)"),
        ((3, 4), (4, 3), None, r"approx has shape \(3, 4\) but exact has shape \(4, 3\)"),
        ((3, 4), (3, 4), (3, 3), r"exact_lo has shape \(3, 3\) but exact has shape \(3, 4\)"),
        ((3, 4), (3, 4), (2, 3, 4), r"exact_lo has shape \(2, 3, 4\) but exact has shape"),
        ((3, 4), (3, 4), (1, 4), r"exact_lo has shape \(1, 4\)"),  # would broadcast
    ],
)
def test_shapes_must_match(approx, exact, lo, match) -> None:
    with pytest.raises(ValueError, match=match):
        error_metrics(np.ones(approx), np.ones(exact), None if lo is None else np.zeros(lo))


def test_integer_bool_and_list_inputs_still_work() -> None:
    want = error_metrics(np.array([[1.0, 2.0]]), np.array([[1.0, 4.0]]))
    assert error_metrics([[1, 2]], [[1, 4]]) == want
    assert error_metrics(np.array([[True, False]]), [[1.0, 0.0]])["err_fro"] == 0.0


# ------------------------------------------------------------------ identical_bits_fraction

BIT_DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int32]


def _flip_bits(x: np.ndarray, flat_index: int, bits: list[int]) -> None:
    """Flip the given bit positions of element ``flat_index`` of ``x`` in place."""
    u = x.reshape(-1).view(f"u{x.dtype.itemsize}")
    for b in bits:
        u[flat_index] ^= u.dtype.type(1 << b)


@pytest.mark.parametrize("dtype", BIT_DTYPES)
def test_identical_bits_counts_elements_with_any_flipped_bit(dtype) -> None:
    """k elements of an m×n array with one or several of their bits flipped give exactly
    1 − k/(m·n): elements are counted, not bits, whichever bits (sign, exponent, last)."""
    m, n = 7, 13
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((m, n)) * 100).astype(dtype)
    nbits = 8 * x.dtype.itemsize
    for k in (0, 1, 2, 5, 40, m * n):
        y = x.copy()
        for i in rng.choice(m * n, size=k, replace=False):
            width = int(rng.integers(1, 4))  # 1 to 3 distinct bits of the same element
            _flip_bits(y, int(i), [int(b) for b in rng.choice(nbits, size=width, replace=False)])
        want = (m * n - k) / (m * n)  # 1 − k/(m·n), rounded once
        assert identical_bits_fraction(x, y) == want, (k, identical_bits_fraction(x, y))
        assert identical_bits_fraction(y, x) == want
        uint = f"u{x.dtype.itemsize}"
        assert np.count_nonzero(x.view(uint) != y.view(uint)) == k  # the setup flipped k


def test_identical_bits_of_strided_views_compare_elements_in_order() -> None:
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    assert identical_bits_fraction(x.T, np.ascontiguousarray(x.T)) == 1.0
    y = x.copy()
    _flip_bits(y, 1 * 6 + 2, [0])  # element (1, 2): one of 12 in x[:, ::2]
    assert identical_bits_fraction(x[:, ::2], y[:, ::2]) == 11 / 12
    assert identical_bits_fraction(x[:, 1::2], y[:, 1::2]) == 1.0  # the flip is not in there


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_identical_bits_compares_bits_not_values(dtype) -> None:
    """+0 and −0 are equal values with different bits; a NaN equals no value but has the same
    bits as itself; two NaNs with different payloads (or signs) differ."""
    itemsize = np.dtype(dtype).itemsize
    uint = np.dtype(f"u{itemsize}")
    qnan = np.array([np.nan], dtype=dtype).view(uint)[0]
    other_payload = np.array([qnan | uint.type(1)], dtype=uint).view(dtype)[0]
    neg_nan = np.array([qnan | uint.type(1 << (8 * itemsize - 1))], dtype=uint).view(dtype)[0]
    nan = np.array([qnan], dtype=uint).view(dtype)[0]
    assert np.isnan(other_payload) and np.isnan(neg_nan)
    x = np.array([[0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]], dtype=dtype)
    x[0, 2], x[0, 3] = nan, nan
    y = x.copy()
    assert identical_bits_fraction(x, y) == 1.0  # same NaN bits: identical, though nan != nan
    y[0, 0] = -0.0  # == +0.0 as a value
    assert y[0, 0] == x[0, 0]
    assert identical_bits_fraction(x, y) == 7 / 8
    y[0, 2] = other_payload
    assert identical_bits_fraction(x, y) == 6 / 8
    y[0, 3] = neg_nan
    assert identical_bits_fraction(x, y) == 5 / 8


@pytest.mark.parametrize(
    ("x", "y"),
    [
        (np.zeros((3, 4), np.float32), np.zeros((3, 4), np.float64)),  # same values
        (np.zeros((3, 4), np.float32), np.zeros((3, 4), np.int32)),  # same bits, same size
        (np.zeros((3, 4), np.float16), np.zeros((3, 4), ml_dtypes.bfloat16)),
        (np.zeros((3, 4), np.float32), np.zeros((4, 3), np.float32)),
        (np.zeros((3, 4), np.float32), np.zeros(12, np.float32)),
        (np.zeros((3, 4), np.float32), np.zeros((1, 4), np.float32)),  # would broadcast
    ],
)
def test_identical_bits_refuses_other_dtypes_and_shapes(x, y) -> None:
    with pytest.raises(ValueError, match="cannot compare bits"):
        identical_bits_fraction(x, y)
    with pytest.raises(ValueError, match="cannot compare bits"):
        identical_bits_fraction(y, x)


def test_err_fro_against_an_all_zero_reference_is_inf_even_when_squares_underflow():
    """exact = 0 and approx = 1e-200 (whose square underflows to 0): err_fro is Inf, as
    err_max is, not 0 (the norm of the difference must not read as zero)."""
    got = error_metrics(np.array([[1e-200]]), np.zeros((1, 1)))
    assert got["err_fro"] == np.inf and got["err_max"] == np.inf
    assert error_metrics(np.zeros((2, 2)), np.zeros((2, 2)))["err_fro"] == 0.0


def test_err_fro_is_independent_of_memory_layout_and_blas() -> None:
    """err_fro sums squares in C order in a fixed way (numpy's pairwise sum per chunk, chunk
    sums added exactly), so the same matrices in C or Fortran order, or as a strided view, give
    the same bits; a BLAS dot product (np.linalg.norm) sums in an order set by the layout, the
    BLAS and its threads."""
    rng = np.random.default_rng(7)
    exact = rng.standard_normal((300, 700))
    approx = exact + rng.standard_normal((300, 700)) * 1e-7
    base = error_metrics(approx, exact)["err_fro"]
    fortran = error_metrics(np.asfortranarray(approx), np.asfortranarray(exact))["err_fro"]
    big = np.zeros((600, 700))
    big[::2] = approx
    strided = error_metrics(big[::2], exact)["err_fro"]
    assert base == fortran == strided


def test_err_fro_is_the_rounded_sum_of_squares_to_a_few_ulps() -> None:
    """Against the correctly rounded sum of the squares (math.fsum), across several chunks."""
    rng = np.random.default_rng(8)
    exact = rng.standard_normal((517, 400))  # 206,800 elements: four chunks
    approx = exact * (1 + rng.standard_normal(exact.shape) * 1e-9)
    d = np.abs(approx - exact)
    want = math.sqrt(math.fsum((d * d).ravel().tolist())) / math.sqrt(
        math.fsum((exact * exact).ravel().tolist())
    )
    got = error_metrics(approx, exact)["err_fro"]
    assert abs(got - want) <= 4 * math.ulp(want)


def test_a_nan_in_the_reference_gives_a_nan_err_fro() -> None:
    """A NaN anywhere in the reference makes its norm NaN: err_fro is NaN (it read Inf)."""
    exact = np.array([[1.0, np.nan], [2.0, 3.0]])
    approx = np.array([[1.0, 5.0], [2.0, 3.0]])
    assert math.isnan(error_metrics(approx, exact)["err_fro"])
    assert math.isnan(error_metrics(exact, exact)["err_fro"])


@pytest.mark.parametrize("lo", [None, 2.0**-60])
def test_zero_dimensional_inputs_give_the_errors_of_one_element(lo) -> None:
    # A scalar product (a 1×1×k GEMM reduced to 0-d) used to raise TypeError inside np.abs.
    exact, approx = 1.5, np.float32(1.25)
    got = error_metrics(approx, np.float64(exact), None if lo is None else np.float64(lo))
    want = error_metrics(np.array([approx]), np.array([exact]), None if lo is None else [lo])
    assert got == want
    assert got["err_max"] == pytest.approx(abs((1.25 - 1.5) - (lo or 0.0)) / 1.5, rel=1e-15)


def test_differences_beyond_the_float64_range_give_their_finite_errors() -> None:
    """approx = −exact near 2^1024: |approx − exact| passes the float64 range, but the
    relative errors are finite (2 here), not inf, and no warning is raised."""
    big = np.finfo(np.float64).max
    e = np.array([big, 1.0, 2.0**1000, -(2.0**1023)])
    a = np.array([-big, 1.0, 2.0**1000, 2.0**1023])
    got = error_metrics(a, e)
    # exact values: |diffs| = 2·big, 0, 0, 2^1024; norms from Fractions
    num = (2 * Fraction(big)) ** 2 + Fraction(2**1024) ** 2
    den = Fraction(big) ** 2 + 1 + Fraction(2**1000) ** 2 + Fraction(2**1023) ** 2
    want = math.sqrt(float(num / den))  # the ratio is near 4: no range problem
    assert got["err_fro"] == pytest.approx(want, rel=4e-16)
    assert got["err_max"] == 2.0
    assert got["err_median"] == 1.0  # median of [2, 0, 0, 2]
    # a double-double reference: the low part is subtracted too
    lo = np.array([2.0**960, 0.0, 0.0, 0.0])
    got_dd = error_metrics(a, e, lo)
    assert got_dd["err_max"] == pytest.approx(2.0 + 2.0**960 / big, rel=1e-15)
    assert math.isfinite(got_dd["err_fro"])
    # an Inf in approx still reads inf, a NaN still nan
    assert error_metrics(np.append(a, np.inf), np.append(e, 1.0))["err_fro"] == math.inf
    assert math.isnan(error_metrics(np.append(a, np.nan), np.append(e, 1.0))["err_max"])


@pytest.mark.parametrize("lo", [None, np.zeros((1, 2))])
def test_an_infinite_result_against_an_infinite_reference_is_nan_without_a_warning(lo) -> None:
    """Inf - Inf (a result that overflowed where the exact product lies beyond the float64
    range, so its reference is Inf too) printed numpy's "invalid value encountered in
    subtract" in the middle of a run; the NaN it gives is the documented answer."""
    inf = np.array([[np.inf, 1.0]])
    m = error_metrics(inf, inf, lo)  # warnings are errors in this suite
    assert all(math.isnan(m[k]) for k in ("err_fro", "err_max")), m


def test_a_nan_on_either_side_gives_nan_errors_not_inf() -> None:
    """A NaN in approx against an all-zero reference read err_fro = inf, and a NaN in the
    reference read err_max = err_median = inf (the 'exact = 0, approx != 0' rule caught it)."""
    m = error_metrics(np.array([np.nan, 0.0]), np.zeros(2))
    assert all(math.isnan(m[k]) for k in m), m
    m = error_metrics(np.ones(2), np.array([np.nan, 1.0]))
    assert all(math.isnan(m[k]) for k in m), m
    m = error_metrics(np.array([1.0, 0.0]), np.zeros(2))  # a nonzero result of a zero product
    assert m == {"err_fro": math.inf, "err_max": math.inf, "err_median": math.inf}


def test_identical_bits_of_complex128_is_a_clear_type_error() -> None:
    """It failed with numpy's "data type 'u16' not understood"."""
    z = np.ones(2, dtype=np.complex128)
    with pytest.raises(TypeError, match="elements of 1, 2, 4 or 8 bytes; got complex128"):
        identical_bits_fraction(z, z)


def test_threaded_passes_give_the_one_pass_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """Large arrays run the elementwise passes, maxima and norm chunks in threads, one block
    of the flat arrays each: forced here on small ones (three threads, norm chunks of 16
    elements, the median counted), every metric is the one-pass result, bit for bit, with
    zeros, NaN, Inf,
    float32 results, low parts, differences beyond the float64 range, subnormal magnitudes
    and a Fortran-order pair (which takes the one-pass path)."""
    rng = np.random.default_rng(31)
    cases = []
    for trial in range(60):
        shape = (int(rng.integers(5, 40)), int(rng.integers(5, 40)))
        e = rng.standard_normal(shape) * np.exp2(rng.integers(-5, 5, shape))
        a = e * (1 + 1e-6 * rng.standard_normal(shape))
        m = rng.random(shape)
        e[m < 0.05], a[m < 0.02] = 0.0, 0.0
        if trial % 3 == 0:
            e[m > 0.98] = np.nan
        if trial % 5 == 0:
            a[m > 0.97] = np.inf
        if trial % 11 == 0:
            e, a = e * 2.0**1000, -a * 2.0**1000  # differences beyond the float64 range
        if trial % 13 == 0:
            e, a = e * 2.0**-1060, a * 2.0**-1060  # subnormal: the scaled norms
        if trial % 7 == 0 and trial % 11:
            a = a.astype(np.float32)
        if trial % 17 == 0:
            a, e = np.asfortranarray(a), np.asfortranarray(e)
        lo = None if trial % 2 else rng.standard_normal(shape) * 1e-20
        cases.append((a, e, lo))
    monkeypatch.setattr(metrics, "_NORM_CHUNK", 16)
    with np.errstate(all="ignore"):
        want = [error_metrics(*case) for case in cases]
        monkeypatch.setattr(metrics, "_THREADED_FROM", 8)
        monkeypatch.setattr(metrics, "thread_count", lambda: 3)
        monkeypatch.setattr(median, "COUNTED_FROM", 1)  # the median from counts, in pieces
        monkeypatch.setattr(median, "PIECE", 64)
        calls = []
        blocks = metrics._blocks
        monkeypatch.setattr(metrics, "_blocks", lambda *x: calls.append(blocks(*x)) or calls[-1])
        got = [error_metrics(*case) for case in cases]
    assert sum(c is not None for c in calls) > 100  # the threads really ran
    for g, w in zip(got, want, strict=True):
        for key in w:
            assert g[key] == w[key] or (math.isnan(g[key]) and math.isnan(w[key])), (key, g, w)


def test_componentwise_error_against_fractions():
    """err_comp = max |approx − exact| / (|A|·|B|) with |A|·|B| exact, checked in Fractions;
    a cancelling entry (A·B = 0, |A|·|B| > 0) counts by its size, not as an infinite ratio."""
    from fractions import Fraction

    from precision.metrics import componentwise_error
    from precision.reference import exact_matmul

    rng = np.random.default_rng(4)
    A = rng.uniform(-1, 1, (5, 7))
    B = rng.uniform(-1, 1, (7, 3))
    A[0] = B[:, 0]  # row 0 · column 0 ...
    A[0, :4] *= -1  # ... cancels in part
    approx = (A.astype(np.float16).astype(np.float64) @ B.astype(np.float16)).astype(np.float32)
    exact = exact_matmul(A, B)
    absprod = exact_matmul(np.abs(A), np.abs(B))
    want = max(
        abs(Fraction(float(approx[i, j])) - Fraction(float(exact[i, j]))) / Fraction(absprod[i, j])
        for i in range(5)
        for j in range(3)
    )
    got = Fraction(componentwise_error(approx, exact, absprod))
    assert abs(got - want) <= want * Fraction(1, 2**51)  # the difference and the ratio rounded
    # |A|·|B| = 0: 0 where the difference is 0 too, Inf where it is not; NaN propagates
    z = np.zeros(3)
    assert componentwise_error(z, z, z) == 0.0
    assert componentwise_error(np.array([0.0, 1e-300, 0.0]), z, z) == np.inf
    assert np.isnan(componentwise_error(np.array([np.nan, 0.0, 0.0]), z, np.ones(3)))
    # a double-double reference: the low part is subtracted from the difference first
    assert componentwise_error(np.array([1.0]), np.array([1.0]), np.array([2.0]),
                               np.array([2.0**-60])) == 2.0**-61  # fmt: skip
    with pytest.raises(ValueError, match="abs_product has shape"):
        componentwise_error(z, z, np.ones(2))
    assert componentwise_error(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3))) == 0.0
