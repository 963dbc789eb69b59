"""``oz2_specials_*`` (precision/kernels/ozaki2.cu), the device step that writes the outputs
NaN/±Inf inputs reach, compiled by g++ and run on the CPU (``kernels_on_the_cpu``) against
:func:`precision.gemm.ozaki.special_block`, bit for bit, on crafted edge cases: Inf·0, Infs of
both signs meeting, subnormal factors of an Inf, finite products that overflow the target,
and fp32's overflow threshold approached from below by a float64 product that rounds onto it."""

from __future__ import annotations

import shutil
from fractions import Fraction

import numpy as np
import pytest

from precision.gemm.ozaki import special_block

pytestmark = pytest.mark.skipif(
    shutil.which("g++") is None, reason="needs g++ to compile the kernel source"
)

#: fp32's overflow threshold: half an ulp above FLT_MAX; the exact product overflows from there.
F32_LIMIT = Fraction(2**128 - 2**103)


def _tie_below(limit: Fraction) -> tuple[float, float]:
    """Factors ``(a, b)`` (``a`` a small odd integer) whose exact product is just below
    ``limit`` but whose float64 product rounds onto it: only an exact check tells that fp32
    rounding stays finite."""
    for a in range(3, 101, 2):
        b = float(limit / a)
        for cand in (np.nextafter(b, 0.0), b, np.nextafter(b, np.inf)):
            if a * Fraction(cand) < limit and Fraction(a * float(cand)) == limit:
                return float(a), float(cand)
    raise AssertionError("no factor pair rounds onto the limit from below")


def _operands() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    M, K, N = 11, 6, 9
    A = rng.standard_normal((M, K))
    B = rng.standard_normal((K, N))
    A[0, 2] = np.nan  # a NaN row
    A[1, 0] = np.inf  # +Inf against B's signs, and against the zero below: NaN in column 0
    B[0, 0] = 0.0
    A[2, 0], A[2, 3] = np.inf, -np.inf  # Infs of both signs: NaN where both products are Infs
    A[3, :] = [1e300, 1e300, 1.0, 2.0, 5e-324, -3.0]  # overflowing finite products ...
    B[1, :] = 1e10  # ... 1e310 in every column
    A[3, 4] = np.inf
    B[4, 1] = 5e-324  # Inf times a subnormal: an Inf, not a NaN
    B[4, 2] = -0.0  # Inf times -0: NaN
    B[2, 5] = -np.inf  # a bad column: every row meets it through A[:, 2]
    A[4, 2] = 0.0  # -> NaN there
    A[5, 2] = -2e-320  # a subnormal times -Inf: +Inf
    # fp32's threshold: row 6 has -Inf (k = 0) and a * b just below the limit (k = 1), whose
    # float64 product rounds onto it; row 7 the same with a product exactly at the limit
    # (which overflows to +Inf in fp32 and meets the -Inf: NaN)
    a_t, b_t = _tie_below(F32_LIMIT)
    A[6, :2], A[7, :2] = [-np.inf, a_t], [-np.inf, 2.0**64]
    B[0, 6], B[1, 6] = 1.0, b_t
    B[0, 7], B[1, 7] = 1.0, float(F32_LIMIT / 2**64)
    B[1, 8] = -1e30  # a finite product beyond fp32's range only (1e300 * -1e30 in row 3)
    return A, B


def _emax(X: np.ndarray, axis: int) -> np.ndarray:
    """frexp exponent of each line's largest finite magnitude (0 for a line without one):
    rows for ``axis=1``, columns for ``axis=0``."""
    mag = np.where(np.isfinite(X), np.abs(X.astype(np.float64)), 0.0).max(axis=axis)
    return np.frexp(mag)[1].astype(np.int32)


def _write(oc, D, A, B, target: str) -> None:
    oc.write_specials(np, D, A, B, _bad_flags(A, B), _emax(A, 1), _emax(B, 0), target)


def _bad_flags(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return np.concatenate([~np.isfinite(A).all(axis=1), ~np.isfinite(B).all(axis=0)]).astype(
        np.int32
    )


@pytest.mark.parametrize(
    ("target", "inputs"),
    [("fp64", "float64"), ("fp32", "float64"), ("fp32", "float32"), ("fp64", "float32")],
)
def test_specials_kernel_matches_special_block(target: str, inputs: str) -> None:
    from precision.gemm.ozaki import TARGETS
    from precision.gemm.ozaki_host import kernels_on_the_cpu

    A, B = _operands()
    if inputs == "float32":
        with np.errstate(over="ignore"):
            A, B = A.astype(np.float32), B.astype(np.float32)
        A[8, 1] = np.float32(1e-45)  # a float32 subnormal times +Inf below: +Inf
        B[1, 3] = np.inf
    M, N = A.shape[0], B.shape[1]
    dtype = TARGETS[target][2]
    bad = _bad_flags(A, B)
    poison = np.full((M, N), 7.0, dtype=dtype)  # what the reconstruction left
    with kernels_on_the_cpu() as oc:
        D = poison.copy()
        _write(oc, D, A, B, target)
    want = poison.copy()
    affected = bad[:M, None].astype(bool) | bad[None, M:].astype(bool)
    with np.errstate(over="ignore", invalid="ignore"):
        block = special_block(A.astype(np.float64), B.astype(np.float64), target)
    want[affected] = block[affected]
    bits = np.uint64 if dtype == np.float64 else np.uint32
    assert np.array_equal(D.view(bits), want.view(bits)), (D, want)
    # the cases that make the test meaningful are there: NaN, both Infs, and untouched outputs
    assert np.isnan(D[affected]).any() and (D == np.inf).any() and (D == -np.inf).any()
    assert (D[~affected] == 7.0).all() and (~affected).any()
    if target == "fp32" and inputs == "float64":  # the rounded-onto-the-limit pair stays finite
        assert D[6, 6] == -np.inf and np.isnan(D[7, 7])


def test_no_bad_line_leaves_every_output() -> None:
    from precision.gemm.ozaki_host import kernels_on_the_cpu

    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((300, 40)), rng.standard_normal((40, 270))
    D = np.full((300, 270), 7.0)
    with kernels_on_the_cpu() as oc:
        _write(oc, D, A, B, "fp64")
    assert (D == 7.0).all()


@pytest.mark.parametrize("target", ["fp64", "fp32"])
def test_specials_kernel_long_k_and_several_blocks(target: str) -> None:
    """K longer than a block (the bad columns' k split across threads), several blocks of rows
    and columns; the decisive products sit at k >= 256."""
    from precision.gemm.ozaki import TARGETS
    from precision.gemm.ozaki_host import kernels_on_the_cpu

    rng = np.random.default_rng(5)
    M, K, N = 300, 600, 270
    A, B = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    B[517, 5] = -np.inf  # a bad column in the first column block
    A[::7, 517] = 0.0  # -> NaN in those rows
    A[10, 300], B[300, 5], A[10, 517] = 1e30, 1e30, 1.0  # +Inf beyond fp32 only, and a -Inf:
    # NaN there in fp32, -Inf in fp64
    B[3, 263] = np.inf  # a bad column in the second column block, met by A's signs
    A[280, 590] = -np.inf  # a bad row in the second row block
    B[590, 100:110] = 0.0  # -> NaN in those columns of that row
    dtype = TARGETS[target][2]
    bad = _bad_flags(A, B)
    with kernels_on_the_cpu() as oc:
        D = np.full((M, N), 7.0, dtype=dtype)
        _write(oc, D, A, B, target)
    want = np.full((M, N), 7.0, dtype=dtype)
    affected = bad[:M, None].astype(bool) | bad[None, M:].astype(bool)
    with np.errstate(over="ignore", invalid="ignore"):
        want[affected] = special_block(A, B, target)[affected]
    bits = np.uint64 if dtype == np.float64 else np.uint32
    assert np.array_equal(D.view(bits), want.view(bits))
    assert np.isnan(D[0, 5]) and np.isnan(D[280, 100]) and D[1, 5] in (np.inf, -np.inf)
    assert np.isnan(D[10, 5]) == (target == "fp32") and (target == "fp32" or D[10, 5] == -np.inf)


def test_specials_kernel_more_nonfinite_entries_than_its_list() -> None:
    """Lines with more NaN/Inf entries than the kernel lists (1024 for a row, 4 for a column
    that a bad row meets): every k is visited instead."""
    from precision.gemm.ozaki_host import kernels_on_the_cpu

    rng = np.random.default_rng(9)
    M, K, N = 20, 1100, 30
    A, B = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    A[4, :] = np.inf
    B[:, 1] = np.abs(B[:, 1])  # row 4 against it: +Inf
    B[:, 2] = np.abs(B[:, 2])  # ... and against this one NaN, from one zero; at k = 250 the
    B[250, 2] = 0.0  # host replay lists it late, past the first 1024 entries
    A[4, 1099] = 0.0  # the decisive entry comes after the list's end: NaN wherever B[1099, j]
    B[1099, ::3] = np.inf  # is an Inf
    B[:, 17] = -np.inf
    A[9, 1098] = 0.0  # -> NaN in (9, 17)
    # a bad row with one Inf meets a bad column with more NaN/Inf entries than a thread lists
    # (4): the one that decides, a -Inf product, is the column's sixth
    A[12, 0] = np.inf
    A[12, :1001] = np.abs(A[12, :1001])
    B[:5, 20], B[1000, 20] = np.inf, -np.inf
    with kernels_on_the_cpu() as oc:
        D = np.full((M, N), 7.0)
        _write(oc, D, A, B, "fp64")
    bad = _bad_flags(A, B)
    affected = bad[:M, None].astype(bool) | bad[None, M:].astype(bool)
    want = np.full((M, N), 7.0)
    with np.errstate(over="ignore", invalid="ignore"):
        want[affected] = special_block(A, B, "fp64")[affected]
    assert np.array_equal(D.view(np.uint64), want.view(np.uint64))
    assert np.isnan(D[4, 0]) and D[4, 1] == np.inf and np.isnan(D[4, 2]) and np.isnan(D[9, 17])
    assert np.isnan(D[12, 20]) and D[12, 21] in (np.inf, -np.inf)
