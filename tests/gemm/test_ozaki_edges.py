"""Adversarial inputs for the Ozaki emulators (backend="emulator"): byte order, argument
checks of ``chosen_terms``, the error bound at the ends of the float64 range, K beyond the
int64 norm bound, and special values against IEEE arithmetic."""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest

import precision.gemm.ozaki as oz
from precision.gemm import gemm
from precision.gemm.ozaki import chosen_terms, error_bound, line_stats, norm_terms, plan_for
from precision.reference import exact_matmul

CASES = [("ozaki2", "int8"), ("ozaki1", "int8"), ("ozaki1", "fp16")]


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(f"u{x.itemsize}")


def _exact_error(D: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """|D - A@B| with A@B exact (Fractions), rounded up to float64; Inf where D is ±Inf."""
    out = np.empty(D.shape)
    for i, j in np.ndindex(*D.shape):
        exact = sum(
            Fraction(float(a)) * Fraction(float(b)) for a, b in zip(A[i], B[:, j], strict=True)
        )
        d = float(D[i, j])
        if not np.isfinite(d):
            out[i, j] = np.inf
            continue
        err = abs(Fraction(d) - exact)
        f = float(err)
        out[i, j] = f if Fraction(f) >= err else np.nextafter(f, np.inf)
    return out


# ------------------------------------------------------------------------------ inputs


@pytest.mark.parametrize("dtype", [">f8", ">f4", "<f8"])
@pytest.mark.parametrize(("method", "fmt"), CASES)
def test_any_byte_order_of_float_inputs_is_accepted(dtype: str, method: str, fmt: str) -> None:
    """A big-endian float64 is a float64: it used to be refused as "got >f8" although the
    message asked for float64. Inputs of few significant bits give RN(A@B) bit for bit."""
    rng = np.random.default_rng(21)
    A = rng.integers(-(2**8), 2**8, size=(9, 17)) * 2.0**-5
    B = rng.integers(-(2**8), 2**8, size=(17, 6)) * 2.0**3
    for target in ("fp64", "fp32"):
        want = exact_matmul(A, B, rounding=target)
        D = gemm(A.astype(dtype), B.astype(dtype), method=method, fmt=fmt, target=target,
                 terms=16 if method == "ozaki2" else 8)  # fmt: skip
        assert D.dtype == want.dtype
        np.testing.assert_array_equal(_bits(D), _bits(want))


def test_non_float_inputs_are_still_refused_by_name() -> None:
    """A TypeError, as gemm's docstring says for every refused dtype (it was a ValueError here
    and a TypeError for complex input), naming float16 too, which is accepted."""
    for bad in (np.ones((2, 2), dtype=np.int64), np.ones((2, 2), dtype=np.longdouble),
                np.ones((2, 2), dtype=bool)):  # fmt: skip
        want = f"A has dtype {bad.dtype}; the ozaki methods take float64, float32 or float16"
        with pytest.raises(TypeError, match=want):
            gemm(bad, np.ones((2, 2)), method="ozaki2")
    with pytest.raises(TypeError, match="B has dtype int64"):
        plan_for(np.ones((2, 2)), np.ones((2, 2), dtype=np.int64), method="ozaki2", fmt="int8",
                 target="fp64", terms="auto")  # fmt: skip
    half = np.ones((2, 2), dtype=np.float16)
    assert gemm(half, half, method="ozaki2").tolist() == [[2.0, 2.0], [2.0, 2.0]]


@pytest.mark.parametrize("method", ["ozaki1", "ozaki2"])
def test_cuda_backend_checks_dtype_and_terms_before_the_gpu(method: str) -> None:
    """The CUDA path converted int and bool inputs to float64 silently (the emulator refuses
    them), and without a GPU a count out of range was reported as "needs a GPU". Both are
    now refused as the emulator refuses them, before any GPU is asked for (so on any
    machine; with a GPU too)."""
    ints = np.ones((2, 2), dtype=np.int64)
    with pytest.raises(TypeError, match="A has dtype int64; the ozaki methods take float64"):
        gemm(ints, np.ones((2, 2)), method=method, backend="cuda")
    with pytest.raises(TypeError, match="B has dtype bool"):
        gemm(np.ones((2, 2)), ints > 0, method=method, backend="cuda")
    with pytest.raises(ValueError, match=f"{method}: terms .* must be in .*, got 99"):
        gemm(np.ones((2, 2)), np.ones((2, 2)), method=method, backend="cuda", terms=99)


@pytest.mark.parametrize("terms", [3.0, "5", True, np.float64(6.0)])
def test_make_plan_refuses_terms_that_are_not_ints(terms) -> None:
    """make_plan, documented beside gemm, took 3.0 to a TypeError from slicing, "5" to one from
    a comparison, and True as one slice."""
    for method in ("ozaki1", "ozaki2"):
        want = re.escape(f"{method}: terms must be an int, got {terms!r}")
        with pytest.raises(ValueError, match=want):
            oz.make_plan(method, "int8", "fp64", terms, 10)
    with pytest.raises(ValueError, match="k \\(the inner dimension K\\) must be an int >= 0"):
        oz.make_plan("ozaki2", "int8", "fp64", 15, 10.0)
    assert oz.make_plan("ozaki2", "int8", "fp64", np.int64(15), np.int64(10)).terms == 15


def test_plan_for_and_error_bound_check_their_operands() -> None:
    """plan_for took nested lists to an AttributeError and planned mismatched shapes silently;
    error_bound gave numpy's gufunc message, and took a plan made for another K."""
    kw = dict(method="ozaki2", fmt="int8", target="fp64", terms="auto")
    plan, _, _ = plan_for([[1.0, 2.0]], [[1.0], [2.0]], **kw)
    assert plan.k == 2
    for f in (lambda: plan_for(np.ones((2, 3)), np.ones((2, 2)), **kw),
              lambda: error_bound(np.ones((2, 3)), np.ones((2, 2)), plan)):  # fmt: skip
        with pytest.raises(ValueError, match=r"must agree: got \(2, 3\) and \(2, 2\)"):
            f()
    with pytest.raises(ValueError, match="the plan was made for K = 2, but .* have K = 3"):
        error_bound(np.ones((2, 3)), np.ones((3, 2)), plan)
    bound = error_bound([[1.0, 2.0]], [[1.0], [2.0]], plan)
    assert bound.shape == (1, 1) and 0 < bound[0, 0] < 1e-15


@pytest.mark.parametrize("terms", [5.0, 5.7, "5", True, None, np.float64(6.0)])
def test_chosen_terms_refuses_what_gemm_refuses(terms: object) -> None:
    """chosen_terms used to truncate 5.7 to 5 and read "5" as 5 (gemm refuses both), to raise
    TypeError for None and to report True as "got 1"."""
    A, B = np.ones((3, 4)), np.ones((4, 2))
    with pytest.raises(ValueError, match="terms must be a positive int or 'auto'"):
        gemm(A, B, method="ozaki2", terms=terms)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="terms must be a positive int or 'auto'"):
        chosen_terms(A, B, method="ozaki2", terms=terms)  # type: ignore[arg-type]


@pytest.mark.parametrize("terms", ["auto", 5])
def test_chosen_terms_checks_the_shapes(terms: int | str) -> None:
    """Mismatched inner dimensions returned a count ("auto": 14) and a 1-D A an IndexError."""
    for A, B in ((np.ones((2, 3)), np.ones((4, 2))), (np.ones(3), np.ones((3, 2)))):
        with pytest.raises(ValueError, match=r"A \(M x K\) and B \(K x N\) must agree"):
            chosen_terms(A, B, method="ozaki2", terms=terms)
    n = chosen_terms(np.ones((2, 3)), np.ones((3, 2)), method="ozaki2", terms=terms)
    assert (n == 5) if terms == 5 else (2 <= n <= 20)


# ------------------------------------------------------------------------- error bound


@pytest.mark.parametrize(("method", "terms"), [("ozaki2", 4), ("ozaki2", 10), ("ozaki1", 4)])
def test_error_bound_covers_a_subnormal_result(method: str, terms: int) -> None:
    """5·2^-1074 · (1/2 + 2^-40) is 2.5 subnormal units plus a little, so RN gives 3 units;
    with few terms B's 2^-40 is dropped and the tie rounds to 2. The error, half a unit and a
    bit, is within the documented bound (its half-unit term), but the bound used to evaluate
    to 0: 2^-1075 and every other term underflowed in float64."""
    A = np.array([[5 * 2.0**-1074]])
    B = np.array([[0.5 + 2.0**-40]])
    D = gemm(A, B, method=method, terms=terms)
    plan, _, _ = plan_for(A, B, method=method, fmt="int8", target="fp64", terms=terms)
    err = _exact_error(D, A, B)
    assert err[0, 0] > 2.0**-1075  # not correctly rounded: the bound must allow for it
    assert np.all(err <= error_bound(A, B, plan))


@pytest.mark.parametrize(("method", "fmt"), CASES)
def test_error_bound_is_finite_and_holds_near_the_float64_range(method: str, fmt: str) -> None:
    """Zero lines against columns whose sums overflow, rows at DBL_MAX (scheme I's 2^emax is
    2^1024 there), subnormal lines: the bound used to be NaN (0·Inf) or Inf where the error
    and the bound itself are finite."""
    big = np.finfo(np.float64).max
    A = np.array([[0.0, 0.0, 0.0], [1.0, -0.5, 0.25], [big, big / 3, 1.0], [3e-320, 0.0, 1e-310]])
    B = np.array([[big, 1.0, 0.0], [big, -2.0, 0.0], [big / 2, 0.75, 0.0]])
    B[:, 1] *= 2.0**-900
    for target in ("fp64", "fp32"):
        D = gemm(A, B, method=method, fmt=fmt, target=target, terms=4)
        plan, _, _ = plan_for(A, B, method=method, fmt=fmt, target=target, terms=4)
        bound = error_bound(A, B, plan)
        assert not np.isnan(bound).any()
        assert np.all(np.isfinite(bound[:, 1:]))  # every output of columns 1, 2 is finite
        assert np.all(bound[0] >= 0) and np.all(bound[:, 2] >= 0)
        assert np.all(_exact_error(D, A, B) <= bound)


def test_error_bound_is_inf_where_the_output_may_overflow() -> None:
    """|A|·|B| beyond fp32's range: the fp32 output is Inf, so no finite bound holds (it used
    to be 1e25 here)."""
    A = np.array([[1e20, 1e20], [1.0, 2.0]])
    B = np.array([[1e20, 1.0], [1e20, 1.0]])
    for method, fmt in CASES:
        D = gemm(A, B, method=method, fmt=fmt, target="fp32", terms=5)
        assert D[0, 0] == np.inf
        plan, _, _ = plan_for(A, B, method=method, fmt=fmt, target="fp32", terms=5)
        bound = error_bound(A, B, plan)
        assert bound[0, 0] == np.inf and np.all(np.isfinite(bound[1]))
        assert np.all(_exact_error(D, A, B) <= bound)


@pytest.mark.parametrize(("method", "fmt"), CASES)
def test_products_far_below_row_max_times_column_max_lose_every_bit(method: str, fmt: str) -> None:
    """docs/ozaki.md, "Error bound": [[2^100, 1]]·[[1], [2^100]] is 2^101, but both products
    sit 2^99 below 2^100·2^100, so the scaled integers hold nothing of them: 0, with any
    number of terms, within the documented bound; with DBL_MAX in place of 2^100 the bound is
    Inf and the output 0 where DGEMM overflows."""
    for big, most in ((2.0**100, 20 if method == "ozaki2" else 8), (np.finfo(float).max, 5)):
        A, B = np.array([[big, 1.0]]), np.array([[1.0], [big]])
        for terms in (5, most):
            D = gemm(A, B, method=method, fmt=fmt, terms=terms)
            plan, _, _ = plan_for(A, B, method=method, fmt=fmt, target="fp64", terms=terms)
            bound = error_bound(A, B, plan)
            assert D[0, 0] == 0.0
            if big == 2.0**100:
                assert 2.0**101 <= bound[0, 0] < np.inf
            else:
                assert bound[0, 0] == np.inf


# ---------------------------------------------------------------- K beyond the norm bound


def test_wide_norm_bound_sums_are_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above NFIX_KMAX the norm bounds are summed from 20-bit halves: the same integers as
    Python's exact sum, for rows and columns, where they fit int64."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((37, 300)) * 2.0 ** rng.integers(-30, 30, size=(37, 300))
    X[3, 7] = np.inf
    monkeypatch.setattr(oz, "NFIX_KMAX", 64)
    for axis, Y in ((1, X), (0, X.T.copy())):
        st = line_stats(Y, axis)
        lines = Y if axis == 1 else Y.T
        for i, row in enumerate(lines):
            mag = np.where(np.isfinite(row), np.abs(row), 0.0)
            exact = sum(int(t) for t in norm_terms(mag, st.emax[i]))
            assert st.nfix[i] == exact


def test_ozaki2_refuses_a_norm_bound_beyond_int64(monkeypatch: pytest.MonkeyPatch) -> None:
    """K = 2^23 entries just below 1: the norm bound is 2^63, which used to wrap to -2^63 in
    int64; the scale then overflowed the CRT range and ozaki2 returned 0.687 for
    8371839.17 (no error). It now says why (ozaki1 does not use the bound)."""
    k = 2**23  # the smallest K whose bound K·2^40 can reach 2^63
    A = np.full((1, k), 0.999)
    B = np.full((k, 1), 0.999)
    stats = {}  # the LineStats the refused call computed, by axis (1: A's rows), used again

    def recording(X: np.ndarray, axis: int) -> oz.LineStats:
        stats[axis] = line_stats(X, axis)
        return stats[axis]

    monkeypatch.setattr(oz, "line_stats", recording)
    with pytest.raises(ValueError, match=r"ozaki2: K = 8388608 is too long for row 0 of A"):
        gemm(A, B, method="ozaki2", terms=16)
    assert k == oz.NFIX_KMAX + 1
    assert stats[1].nfix.shape == (1,) and stats[1].nfix[0] == oz.NFIX_OVERFLOW


# ------------------------------------------------------------------------ special values


@pytest.mark.parametrize("target", ["fp64", "fp32"])
@pytest.mark.parametrize(("method", "fmt"), CASES)
def test_special_values_match_ieee_in_adversarial_places(target: str, method: str,
                                                         fmt: str) -> None:  # fmt: skip
    """Inf against an all-zero column (Inf·0 = NaN), +Inf and -Inf in one dot product, Inf
    times a subnormal or -0.0, NaN only in B, a row of Inf only; no finite product overflows,
    so IEEE's value does not depend on the summation order or FMA."""
    tiny = 5e-324
    A = np.array([
        [np.inf, 1.0, 2.0],
        [np.inf, -np.inf, 1.0],
        [1.0, 2.0, 3.0],
        [-np.inf, 0.5, -0.0],
        [np.inf, np.inf, np.inf],
        [tiny, -1.0, 0.0],
    ])  # fmt: skip
    B = np.array([
        [0.0, 1.0, tiny, -0.0, 1.0],
        [0.0, 1.0, -2.0, 1.0, np.nan],
        [0.0, -1.0, 1.0, 2.0, 1.0],
    ])  # fmt: skip
    with np.errstate(invalid="ignore"):
        ieee = (A @ B).astype(np.float32 if target == "fp32" else np.float64)
    D = gemm(A, B, method=method, fmt=fmt, target=target, terms=6)
    np.testing.assert_array_equal(np.isnan(D), np.isnan(ieee))
    nan_bits = 0x7FF8_0000_0000_0000 if target == "fp64" else 0x7FC0_0000
    assert np.all(_bits(D[np.isnan(D)]) == nan_bits)
    inf = np.isinf(ieee)
    np.testing.assert_array_equal(D[inf], ieee[inf])
    fin = np.isfinite(ieee)
    want = exact_matmul(np.where(np.isfinite(A), A, 0), np.where(np.isfinite(B), B, 0),
                        rounding=target)  # fmt: skip
    np.testing.assert_array_equal(D[fin], want[fin])


def _class_of_rounded_products(A: np.ndarray, B: np.ndarray, dtype) -> np.ndarray:
    """The IEEE class of each ``sum_k A[i,k]·B[k,j]`` whose products are rounded to ``dtype``
    first (as native GEMM forms them), from the products themselves: NaN where one is NaN or
    +Inf and -Inf meet, else ±Inf where one is infinite, else 0 (finite)."""
    with np.errstate(over="ignore", invalid="ignore"):
        P = (A[:, :, None].astype(np.float64) * B[None, :, :]).astype(dtype)
    has_nan = np.isnan(P).any(axis=1)
    plus, minus = (P == np.inf).any(axis=1), (P == -np.inf).any(axis=1)
    out = np.where(plus, np.inf, np.where(minus, -np.inf, 0.0))
    return np.where(has_nan | (plus & minus), np.nan, out)


@pytest.mark.parametrize("backend", ["emulator", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize(("target", "big"), [("fp64", 1e308), ("fp32", 1e30)])
@pytest.mark.parametrize(("method", "fmt"), CASES)
def test_an_overflowing_product_next_to_an_inf_counts_as_an_inf(
    target, big, method, fmt, backend
) -> None:
    """``[Inf, 1e308]·[-1, 1e308]``: native DGEMM rounds 1e308·1e308 to +Inf, which meets
    -Inf: NaN (cuBLAS on the H200 in every order tried, k = 2 to 4096:
    ``results/bench/ozaki_overflow_order_2026-11-28/``). The Ozaki schemes gave -Inf, the
    class of the exact sum. Products that overflow only just, or not at all, and the signs
    of both, in random places; the class of every affected output is that of the products
    rounded first."""
    rng = np.random.default_rng(17)
    dtype = oz.TARGETS[target][2]
    A = rng.uniform(-1, 1, (12, 40)).astype(dtype)
    B = rng.uniform(-1, 1, (40, 9)).astype(dtype)
    near = np.array([big, -big, big / 3, np.sqrt(big) * 1.5, np.sqrt(big) * 0.5], dtype)
    A.flat[rng.choice(A.size, 60, replace=False)] = rng.choice(near, 60)
    B.flat[rng.choice(B.size, 30, replace=False)] = rng.choice(near, 30)
    A[0, 0], A[5, 7], B[3, 2], B[9, 8] = np.inf, -np.inf, np.inf, -np.inf
    A[1, :2], B[:2, 0] = [np.inf, big], [-1.0, big]  # the first example
    want = _class_of_rounded_products(A, B, dtype)
    D = gemm(A, B, method=method, fmt=fmt, target=target, terms=4, backend=backend)
    affected = np.zeros(D.shape, bool)
    affected[[0, 1, 5]] = True
    affected[:, [2, 8]] = True
    assert np.array_equal(np.isnan(D[affected]), np.isnan(want[affected]))
    inf = affected & np.isinf(want)
    assert np.array_equal(D[inf], want[inf].astype(dtype))
    assert np.isnan(D[1, 0])  # (that NaN is the overflow's: the other products are finite)
    assert np.isnan(want).sum() > 10 and (~np.isnan(want[affected])).sum() > 10


@pytest.mark.parametrize(("x", "y", "overflows"), [
    (1.1342745225991123e38, 3.0, True),  # x·y just above 2^128 - 2^103: rounds to +Inf in fp32
    (4.861176525424766e37, 7.0, False),  # just below: FLT_MAX
])  # fmt: skip
def test_fp32_overflow_of_a_float64_product_on_the_rounding_boundary(x, y, overflows) -> None:
    """Both float64 products round to exactly 2^128 - 2^103, half an fp32 ulp above FLT_MAX;
    only the exact products tell whether fp32 rounding overflows (Inf meets the product's
    sign: NaN next to -Inf, else -Inf)."""
    A, B = np.array([[-np.inf, x]]), np.array([[1.0], [y]])
    assert x * y == 2.0**128 - 2.0**103
    want = np.nan if overflows else -np.inf
    for method, fmt in CASES:
        D = gemm(A, B, method=method, fmt=fmt, target="fp32", terms=4)
        np.testing.assert_array_equal(D, np.array([[want]], np.float32))


def _with_specials(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Copies of A and B with a few NaN and ±Inf entries in both."""
    A, B = A.copy(), B.copy()
    A[3, 5], A[-1, 7], A[10, -1] = np.inf, np.nan, -np.inf
    B[9, 11], B[4, -1], B[-1, 0] = -np.inf, np.nan, np.inf
    return A, B


@pytest.mark.parametrize("target", ["fp64", "fp32"])
@pytest.mark.parametrize("every_row", [False, True])
def test_special_values_stay_within_the_workspace_budget(
    target: str, every_row: bool, traced_peak
) -> None:
    """The special-value path built about nine float64 copies of the other operand (4.6x the
    float64 size of A and B beyond the output at 600 x 600 with a few NaN/Inf entries, 12.5x
    when every row of A holds an Inf); docs/ozaki.md promises 1.5x (WORKSPACE_FACTOR). It now
    works in blocks within the same budget as the main path."""
    rng = np.random.default_rng(5)
    A, B = _with_specials(rng.standard_normal((600, 600)), rng.standard_normal((600, 600)))
    if every_row:
        A[:, 100] = np.inf
    sa, sb = line_stats(A, 1), line_stats(B, 0)
    D = np.zeros((600, 600), dtype=oz.TARGETS[target][2])
    peak = traced_peak(lambda: oz.apply_specials(D, A, B, sa, sb, target))
    assert peak <= oz.WORKSPACE_FACTOR * 8 * (A.size + B.size)
    assert np.all(~np.isfinite(D[sa.bad])) and np.all(~np.isfinite(D[:, sb.bad]))


@pytest.mark.parametrize(("method", "terms"), [("ozaki2", 8), ("ozaki1", 4)])
def test_special_values_add_no_memory_to_a_gemm_call(method: str, terms: int, traced_peak) -> None:
    """A call with a few NaN/Inf entries peaks no higher than the same call on finite inputs,
    or than the workspace budget beyond the output where the finite call keeps less (it
    peaked 1.8x higher at this shape: 165 MiB against 91 MiB). Since scheme II takes its
    residues in row chunks, its finite call keeps 0.75x the float64 size of A and B here, less
    than the special values' blocks may take (about 1x, within the 1.5x budget)."""
    rng = np.random.default_rng(6)
    A, B = rng.standard_normal((64, 1500)), rng.standard_normal((1500, 1500))
    As, Bs = _with_specials(A, B)
    peaks = [
        traced_peak(lambda a=a, b=b: gemm(a, b, method=method, target="fp64", terms=terms))
        for a, b in ((A, B), (As, Bs))
    ]
    budget = oz.WORKSPACE_FACTOR * (A.nbytes + B.nbytes) + 64 * 1500 * 8  # and the output
    assert peaks[1] <= max(peaks[0] * 1.01, budget)


@pytest.mark.parametrize(("method", "terms"), [("ozaki2", 15), ("ozaki1", 6)])
def test_a_whole_call_stays_within_the_workspace_budget(
    method: str, terms: int, traced_peak
) -> None:
    """docs/ozaki.md "Workspace": beyond its inputs and output, a call keeps at most 1.5x the
    size of A and B (float64 here), small problems included (the line statistics' chunks
    used to take a fixed 2^20 elements: 5.3x at 600 x 600)."""
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((600, 600)), rng.standard_normal((600, 600))
    gemm(A[:4], B, method=method, fmt="int8", target="fp64", terms=terms, backend="emulator")
    out_bytes = 600 * 600 * 8
    peak = traced_peak(
        lambda: gemm(A, B, method=method, fmt="int8", target="fp64", terms=terms,
                     backend="emulator")
    )  # fmt: skip
    assert peak - out_bytes <= 1.5 * (A.nbytes + B.nbytes), (peak - out_bytes) / (
        A.nbytes + B.nbytes
    )


@pytest.mark.parametrize("method", ["ozaki2", "ozaki1"])
@pytest.mark.parametrize("shape", [(1, 1024, 1024), (1024, 1024, 1), (8, 1024, 512)])
def test_a_thin_m_or_n_call_stays_within_the_workspace_budget(
    method: str, shape: tuple[int, int, int], traced_peak
) -> None:
    """docs/ozaki.md "Workspace" with one operand's lines dominating (thin M or N): scheme II
    took the residues of a whole block (four or five float64 temporaries of it) and scaled
    with three float64 copies at once, 3.1x the float64 size of A and B beyond the output;
    scheme I kept a block's float64 scaled integers while cutting its digits, 1.57x."""
    m, k, n = shape
    rng = np.random.default_rng(8)
    A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    gemm(A[:1], B[:, :4], method=method, fmt="int8", target="fp64")
    out_bytes = m * n * 8
    peak = traced_peak(lambda: gemm(A, B, method=method, fmt="int8", target="fp64"))
    assert peak - out_bytes <= 1.5 * (A.nbytes + B.nbytes), (peak - out_bytes) / (
        A.nbytes + B.nbytes
    )


@pytest.mark.parametrize("method", ["ozaki2", "ozaki1"])
@pytest.mark.parametrize("shape", [(128, 128, 128), (1, 384, 384)])
def test_a_call_with_nan_inf_lines_stays_within_the_workspace_budget(
    method: str, shape: tuple[int, int, int], traced_peak
) -> None:
    """docs/ozaki.md "Workspace" with a NaN/Inf row of A and columns of B (float64 inputs):
    the special values' blocks ran while the emulator still held its last block's arrays
    (scaled integers or digits, limbs), and gathered their next rows before freeing the last:
    1.68-1.69x / 1.66x (scheme II) and 1.48x / 1.41x (scheme I) the float64 size of A and B
    beyond the output at these shapes, against 1.32x / 1.15x and 1.20x / 1.15x now."""
    m, k, n = shape
    rng = np.random.default_rng(9)
    A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    A[0, 3], B[5, -1], B[7, 0] = np.inf, np.nan, -np.inf
    gemm(A[:1], B[:, :4], method=method, target="fp64")
    peak = traced_peak(lambda: gemm(A, B, method=method, target="fp64"))
    beyond = peak - m * n * 8  # less the output
    assert beyond <= 1.5 * (A.nbytes + B.nbytes), beyond / (A.nbytes + B.nbytes)


@pytest.mark.parametrize("method", ["ozaki2", "ozaki1"])
@pytest.mark.parametrize(("dtype", "shape"), [(np.float32, (128, 128, 128)),
                                              (np.float16, (1, 384, 384))])  # fmt: skip
def test_float32_and_float16_inputs_take_no_float64_copies(
    method: str, dtype: type, shape: tuple[int, int, int], traced_peak
) -> None:
    """docs/ozaki.md "Workspace": the bound, 1.5x the size of A and B beyond the output
    (:func:`input_bytes`: their own size, float16 counted as float32), holds for float32 and
    float16 inputs, NaN/Inf rows and columns included. They were copied whole to float64
    first: 1.83x (scheme I) and 2.26x (scheme II) the float64 size at n = 1024
    (results/bench/memory_audit_2026-11-28). Until 2026-11-28 the budget was 1.5x the
    float64 size (3x a float32 input's own)."""
    m, k, n = shape
    rng = np.random.default_rng(9)
    A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    A[0, 3], B[5, -1], B[7, 0] = np.inf, np.nan, -np.inf
    A, B = A.astype(dtype), B.astype(dtype)
    gemm(A[:1], B[:, :4], method=method, target="fp64")
    peak = traced_peak(lambda: gemm(A, B, method=method, target="fp64"))
    beyond = peak - m * n * 8  # less the output
    assert beyond <= 1.5 * oz.input_bytes(A, B), beyond / oz.input_bytes(A, B)


@pytest.mark.parametrize("method", ["ozaki2", "ozaki1"])
@pytest.mark.parametrize("target", ["fp64", "fp32"])
def test_a_float32_call_stays_within_its_own_size(method: str, target: str, traced_peak) -> None:
    """The issue's limit in the inputs' own size: float32 inputs at n = 512 keep at most 1.5x
    their size beyond the output (2.5x for scheme II at the float64-size budget)."""
    rng = np.random.default_rng(12)
    A = rng.standard_normal((512, 512)).astype(np.float32)
    B = rng.standard_normal((512, 512)).astype(np.float32)
    gemm(A[:1], B[:, :4], method=method, target=target)
    out_bytes = 512 * 512 * oz.TARGETS[target][2]().itemsize
    peak = traced_peak(lambda: gemm(A, B, method=method, target=target))
    assert peak - out_bytes <= 1.5 * (A.nbytes + B.nbytes), (peak - out_bytes) / (
        A.nbytes + B.nbytes
    )


@pytest.mark.parametrize(("method", "fmt"), CASES)
def test_float32_and_float16_inputs_give_the_bits_of_their_float64_values(
    method: str, fmt: str
) -> None:
    """The emulator reads float32 / float16 operands in their own dtype and converts per block
    (exact), so the output must be that of the same values as float64, bit for bit: NaN/Inf
    rows and columns, an Inf·0 pair, subnormal and near-overflow entries, odd shapes, K = 0,
    strided and byte-swapped operands, both targets."""
    rng = np.random.default_rng(17)
    cases = []
    for dtype, (m, k, n) in ((np.float32, (37, 53, 29)), (np.float16, (19, 40, 23)),
                             (np.float32, (1, 300, 7)), (np.float16, (3, 1, 5)),
                             (np.float32, (5, 0, 3))):  # fmt: skip
        A = rng.standard_normal((m, k)) * np.exp2(rng.integers(-6, 6, (m, 1)))
        B = rng.standard_normal((k, n)) * np.exp2(rng.integers(-6, 6, (1, n)))
        if min(m, k, n) > 8:
            A[1, 2], A[2, 0], A[3, 1], A[4, :] = np.nan, np.inf, -np.inf, 0.0
            B[0, 1], B[2, 2], B[1, 3], B[0, 0] = np.inf, np.nan, -np.inf, 0.0
            A[5] *= 2.0**-130 if dtype == np.float32 else 2.0**-20  # subnormal in the dtype
            A[6] *= 2.0**118 if dtype == np.float32 else 2.0**4  # (float32: products overflow)
        cases.append((A.astype(dtype), B.astype(dtype)))
    A, B = cases[0]
    cases += [(A[:, ::2], B[::2].astype(">f4")), (np.asfortranarray(A), B[:, ::-1])]
    for A, B in cases:
        for target in ("fp64", "fp32"):
            want = gemm(A.astype(np.float64), B.astype(np.float64), method=method, fmt=fmt,
                        target=target)  # fmt: skip
            D = gemm(A, B, method=method, fmt=fmt, target=target)
            assert D.dtype == want.dtype
            np.testing.assert_array_equal(_bits(D), _bits(want))
    assert np.isnan(D).any() and np.isinf(D).any()  # (the special values were reached)


# ------------------------------------------------------------------ thin K (outer products)


def _count_blocks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the emulators' blocks: each block of outputs is rounded by one round_limbs call."""
    calls: list[int] = []
    real = oz.round_limbs

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(oz, "round_limbs", counting)
    return calls


def _thin_specials(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Copies of thin-K A and B with NaN, ±Inf and an Inf·0 pair."""
    A, B = A.copy(), B.copy()
    A[3, 0], A[-1, -1], A[10, 0] = np.inf, np.nan, -np.inf
    B[0, 11], B[-1, 4], B[0, 0] = -np.inf, np.nan, 0.0
    return A, B


def _assert_within_bound(D: np.ndarray, A: np.ndarray, B: np.ndarray, method: str, fmt: str,
                         target: str) -> None:  # fmt: skip
    """docs/ozaki.md's error bound against the exact product, on the outputs whose row of A
    and column of B are finite (the others are special values)."""
    fin = np.isfinite(A).all(axis=1)[:, None] & np.isfinite(B).all(axis=0)[None, :]
    Af, Bf = np.where(np.isfinite(A), A, 0), np.where(np.isfinite(B), B, 0)
    plan, _, _ = plan_for(Af, Bf, method=method, fmt=fmt, target=target, terms="auto")
    exact = exact_matmul(Af, Bf)
    err = np.abs(D.astype(np.float64) - exact)
    assert np.all((err <= error_bound(Af, Bf, plan) + 2.0**-53 * np.abs(exact))[fin])


@pytest.mark.parametrize("method", ["ozaki2", "ozaki1"])
def test_thin_k_runs_in_few_blocks(monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    """An outer product (K = 1) ran in blocks of about 16 x 16 outputs: the workspace budget
    was 1.5x the float64 size of A and B only, 48 KB here, so 2000 x 1 x 2000 took 15625
    blocks (scheme I 31250) times the moduli in a Python loop, 12-17 s against numpy's 0.01 s.
    The budget now also grows with the output (docs/ozaki.md, "Workspace")."""

    def count(n: int, budget_out: int) -> int:
        A, B = np.ones((n, 1)), np.ones((1, n))
        plan, _, _ = plan_for(A, B, method=method, fmt="int8", target="fp64", terms="auto")
        mb, nb = oz.emulator_blocks(plan, n, n, oz._input_budget(A, B), budget_out)
        return -(-n // mb) * -(-n // nb)

    assert count(2000, 0) >= 15625  # the input share alone: the old blocking
    assert count(2000, oz._output_budget(np.ones((2000, 1)), np.ones((1, 2000)))) <= 128
    # a call runs the blocks counted, and stays accurate (K = 1: one product per output)
    rng = np.random.default_rng(21)
    A, B = rng.standard_normal((700, 1)), rng.standard_normal((1, 700))
    calls = _count_blocks(monkeypatch)
    D = gemm(A, B, method=method)
    assert len(calls) == count(700, oz._output_budget(A, B)) <= 128
    assert np.median(np.abs(D - A * B) / np.abs(A * B)) <= 2.0**-53
    _assert_within_bound(D, A, B, method, "int8", "fp64")


@pytest.mark.parametrize("target", ["fp64", "fp32"])
@pytest.mark.parametrize(("method", "fmt"), CASES)
def test_thin_k_call_stays_within_half_the_output(
    target: str, method: str, fmt: str, traced_peak
) -> None:
    """docs/ozaki.md "Workspace": beyond its inputs and output, a call keeps at most 1.5x the
    size of A and B (float64 here), or half the float64 size of the output where that is
    larger (thin K). The blocks of the output share are sized from the measured peak of
    round_limbs, 2.6x (scheme II) what a block holds; sized from the held arrays alone, this
    call kept 1.0-1.9x half the output."""
    rng = np.random.default_rng(22)
    A, B = _thin_specials(rng.standard_normal((1000, 2)), rng.standard_normal((2, 1000)))
    A[:, 0] *= np.exp2(rng.integers(-40, 40, 1000))  # a wide range: auto picks many terms
    gemm(A[:4], B, method=method, fmt=fmt, target=target)
    out_bytes = 1000 * 1000 * np.dtype(oz.TARGETS[target][2]).itemsize
    peak = traced_peak(lambda: gemm(A, B, method=method, fmt=fmt, target=target))
    allowed = max(1.5 * (A.nbytes + B.nbytes), 0.5 * 8 * 1000 * 1000)
    assert peak - out_bytes <= allowed, (peak - out_bytes) / allowed


@pytest.mark.parametrize("target", ["fp64", "fp32"])
@pytest.mark.parametrize(("method", "fmt"), CASES)
def test_thin_k_blocking_changes_no_bit(monkeypatch: pytest.MonkeyPatch, target: str,
                                        method: str, fmt: str) -> None:  # fmt: skip
    """The larger blocks give the bits of the old ones (sized by 1.5x the inputs alone, here
    7 x 5 outputs: 450 blocks against 13 x 10 and 120), special values included, and the
    error bound holds."""
    rng = np.random.default_rng(23)
    A = rng.standard_normal((100, 3)) * np.exp2(rng.integers(-30, 30, (100, 3)))
    A, B = _thin_specials(A, rng.standard_normal((3, 150)))
    D = gemm(A, B, method=method, fmt=fmt, target=target)
    calls = _count_blocks(monkeypatch)
    monkeypatch.setattr(oz, "_output_budget", lambda A, B: 0)  # the input share alone
    old = gemm(A, B, method=method, fmt=fmt, target=target)
    assert len(calls) > 16  # the old blocking really was finer
    assert D.dtype == old.dtype and np.array_equal(_bits(D), _bits(old))
    assert np.isnan(D[-1]).all() and np.isnan(D[:, 4]).all() and np.isinf(D[3, 1:4]).all()
    _assert_within_bound(D, A, B, method, fmt, target)


def test_square_blocks_are_those_of_the_input_budget() -> None:
    """Square problems keep their blocks (the input share of the budget is the larger one)."""
    for n, method, terms in ((600, "ozaki2", 16), (600, "ozaki1", 8), (1200, "ozaki2", 15)):
        A, B = np.ones((n, n)), np.ones((n, n))
        plan = oz.make_plan(method, "int8", "fp64", terms, n)
        budget_in = oz._input_budget(A, B)
        assert oz.emulator_blocks(plan, n, n, budget_in, oz._output_budget(A, B)) == (
            oz.emulator_blocks(plan, n, n, budget_in)
        )
        assert oz.workspace_budget(A, B) == budget_in


# ----------------------------------------------- gaps found by a mutation audit (2026-11-27)

OZAKI_CASES = [("ozaki2", "int8"), ("ozaki1", "int8"), ("ozaki1", "fp16")]


@pytest.mark.parametrize("backend", ["emulator", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("target", ["fp64", "fp32"])
@pytest.mark.parametrize(("method", "fmt"), OZAKI_CASES)
def test_zero_in_a_times_inf_in_b_is_nan(target: str, method: str, fmt: str, backend: str) -> None:
    """0·Inf with the zero in A and the Inf in B (the other tests put the Inf in A): NaN by
    IEEE rules, the canonical quiet NaN; the expected values are Python's own IEEE float sums
    of small integers and ±Inf, exact here."""
    A = np.array([[0.0, 1.0], [-0.0, 2.0], [1.0, 1.0], [0.0, 0.0]])
    B = np.array([[np.inf, -np.inf, 1.0], [1.0, 3.0, 1.0]])
    want = np.array(
        [[sum(float(A[i, k]) * float(B[k, j]) for k in range(2)) for j in range(3)]
         for i in range(4)]
    )  # fmt: skip
    assert np.isnan(want[0, 0]) and np.isnan(want[3, 1]) and want[2, 0] == np.inf
    D = np.asarray(gemm(A, B, method=method, fmt=fmt, target=target, terms=6, backend=backend))
    np.testing.assert_array_equal(np.isnan(D), np.isnan(want))
    nan_bits = 0x7FF8_0000_0000_0000 if target == "fp64" else 0x7FC0_0000
    assert np.all(D.view(f"u{D.itemsize}")[np.isnan(D)] == nan_bits)
    finite = ~np.isnan(want)
    np.testing.assert_array_equal(D[finite], want[finite].astype(D.dtype))


def test_norm_bound_counts_entries_far_below_the_line_max() -> None:
    """Entries 20 or more binades below their line's largest still count in the norm bound
    (each adds at least 1 to nfix): with the largest entries exact powers of two, the bound has
    no round-up slack to hide a dropped term. Checked against the exact sum of squares."""
    X = np.full((3, 300), 2.0**-25)
    X[0, 0] = 1.0
    X[1, :4] = [0.5, -0.5, 0.5, 0.5]
    X[1, 4:] = -(2.0**-40)
    X[2, 0] = 2.0**-1000
    X[2, 1:] = 2.0**-1030
    for axis, Y in ((1, X), (0, X.T.copy())):
        st = line_stats(Y, axis)
        for i in range(3):
            exact = sum(Fraction(float(v)) ** 2 for v in X[i])
            bound = Fraction(int(st.nfix[i])) * Fraction(2) ** (2 * int(st.emax[i]) - oz.NORM_FRAC)
            assert exact <= bound, (axis, i, float(exact - bound))


def test_fp16_slice_runs_are_exact_in_fp32_by_the_bound_itself() -> None:
    """Scheme I on fp16 tensor cores: every run of slice products summed in fp32 holds at most
    2^24 / 127^2 nonzero products (so every fp32 sum is exact), derived here from 2^24 and
    127^2, not from FP16_KBLOCK (which the piece cover check takes as its bound)."""
    from precision.gemm.ozaki1_cuda import PAD, slice_pieces

    assert 127 * 127 * oz.FP16_KBLOCK <= 2**24
    for T in range(1, 9):
        for K in (1, 7, 100, 520, 1024, 1025, 1040, 1041, 1500, 2048, 5000, 40000):
            kp = -(-K // PAD) * PAD
            for pc in slice_pieces(T, K, kp, "fp16"):
                x = np.arange(pc.length)
                for q in range(pc.batch):
                    live = int(np.count_nonzero((pc.a_off + q * pc.stride + x) % kp < K))
                    assert 127 * 127 * live <= 2**24, (T, K, pc)


def test_float32_bits_convert_to_float64_exactly() -> None:
    """The bit-level float32 -> float64 conversion that apply_specials uses on CuPy float32
    arrays (CuPy's own astype flushes float32 subnormals): against numpy's exact conversion on every
    exponent field, all subnormal boundaries, ±0, ±Inf, and random bit patterns."""
    rng = np.random.default_rng(5)
    fields = np.arange(256, dtype=np.uint32) << 23
    fracs = np.array([0, 1, 2, 0x3FFFFF, 0x400000, 0x7FFFFE, 0x7FFFFF], dtype=np.uint32)
    grid = (fields[:, None] | fracs[None, :]).ravel()
    bits = np.concatenate(
        [grid, grid | np.uint32(1 << 31), rng.integers(0, 2**32, 200_000, dtype=np.uint32)]
    )
    x = bits.view(np.float32)
    got = oz.float32_bits_to_float64(x, np)
    with np.errstate(invalid="ignore"):  # (signalling NaN patterns among the random bits)
        want = x.astype(np.float64)
        same = oz.as_float64(x, np)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint64), want[~nan].view(np.uint64))
    assert same.dtype == np.float64 and oz.as_float64(want, np) is want


def test_helpers_name_a_wrong_argument_instead_of_failing_inside():
    """plan_for(stats=(1, 2)), error_bound(A, B, None) and auto_terms(..., None) raised
    AttributeError / int() errors from inside; they name the argument and what it takes."""
    from precision.gemm import ozaki as oz

    A, B = np.ones((2, 3)), np.ones((3, 2))
    with pytest.raises(TypeError, match=r"stats: expected \(LineStats of A's rows"):
        oz.plan_for(A, B, method="ozaki2", fmt="int8", target="fp64", terms=15, stats=(1, 2))
    with pytest.raises(TypeError, match="plan: expected an OzakiPlan"):
        oz.error_bound(A, B, None)
    with pytest.raises(TypeError, match="sa: expected LineStats or an int spread"):
        oz.auto_terms("ozaki2", "fp64", 3, None)
    plan, sa, sb = oz.plan_for(A, B, method="ozaki2", fmt="int8", target="fp64", terms="auto")
    with pytest.raises(TypeError, match="sb: expected B's LineStats"):
        oz.auto_terms("ozaki2", "fp64", 3, sa, None)
    assert oz.auto_terms("ozaki2", "fp64", 3, sa, sb) == plan.terms
