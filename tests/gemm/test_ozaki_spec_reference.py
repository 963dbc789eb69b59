"""The independent reference of scheme II's specification
(:mod:`precision.gemm.ozaki_spec_reference`) checked piece by piece against exact arithmetic
(Python ints, Fractions, 120-digit decimals, CPython's correctly rounded int division), and
then the implementation (:mod:`precision.gemm.ozaki`: its budget ``crt_q2``, its shift rule,
its CRT constants and the CPU emulator's output) checked against the reference. The kernels
are checked against the same reference by ``tests/gemm/test_ozaki_cuda_host.py``."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

import precision.gemm.ozaki as oz
import precision.gemm.ozaki_spec_reference as ref
from precision.reference import exact_matmul

TARGETS = ("fp64", "fp32")


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(f"u{x.itemsize}")


# ------------------------------------------------------------------- the one rounding


def _nearest_by_definition(v: Fraction, target: str) -> float:
    """The element of ``target`` nearest ``v`` (ties: even last significand bit), ±Inf from
    ``max + ulp(max)/2`` on, -0.0 for a negative ``v`` that rounds to zero: by comparing ``v``
    with the candidates around a first guess, all in Fractions (no rounding rule is reused)."""
    p, _, emax, dtype = ref.IEEE_TARGETS[target]
    big = Fraction(2) ** (emax + 1) - Fraction(2) ** (emax - p)  # max + ulp(max)/2
    sign = -1.0 if v < 0 else 1.0
    if abs(v) >= big:
        return sign * math.inf
    with np.errstate(over="ignore"):  # (Inf candidates near the largest value are dropped)
        x0 = dtype(float(v))  # near v (float() of a Fraction is within an fp64 half ulp)
        x0 = x0 if np.isfinite(x0) else dtype(sign) * np.finfo(dtype).max
        cands = {x0, np.nextafter(x0, dtype(np.inf)), np.nextafter(x0, dtype(-np.inf))}
    cands = {c for c in cands if np.isfinite(c)}

    def key(c: np.floating) -> tuple[Fraction, int]:
        return abs(Fraction(float(c)) - v), int(_bits(np.array([c], dtype=dtype))[0]) & 1

    best = float(min(cands, key=key))
    return sign * 0.0 if best == 0 else best


def _rounding_cases() -> list[tuple[int, int, str]]:
    """(T, e, target): exact ties of both parities and their neighbours in the normal range,
    at the subnormal grid, half the smallest subnormal, the overflow threshold, long T, and
    random T of up to 300 bits over the whole exponent range."""
    cases: list[tuple[int, int, str]] = []
    rng = np.random.default_rng(3)
    for target in TARGETS:
        p, emin, emax, _ = ref.IEEE_TARGETS[target]
        sub = emin - p + 1
        for base in (1 << p, (1 << p) + 1, (1 << p) - 1, (1 << (p - 1)) + 1):
            for extra in range(1, 4):  # base·2^extra + {tie, tie ± 1}
                t = base << extra
                half = 1 << (extra - 1)
                for d in (-1, 0, 1):
                    for e in (-extra, sub - extra, emax - p + 1 - extra, -extra - 40):
                        cases += [(t + half + d, e, target), (-(t + half + d), e, target)]
        for t in (1, 2, 3, 5, 7, (1 << 70) + 1):  # around half the smallest subnormal
            for shift in range(0, 4):
                e = sub - t.bit_length() - shift
                cases += [(t, e, target), (-t, e, target)]
        top = (1 << p) - 1  # the largest finite value, and up to its overflow threshold
        for d in (0, 1, (1 << 60) - 1, 1 << 60, (1 << 60) + 1):
            cases.append(((top << 61) + d, emax - p + 1 - 61, target))
        cases += [(1, emax + 1, target), (-1, emax, target), (0, -5, target), (0, 9999, target)]
        for _ in range(400):
            nbits = int(rng.integers(1, 300))
            t = int.from_bytes(rng.bytes(40), "little") >> (320 - nbits)
            t = t if rng.random() < 0.5 else -t
            lo, hi = sub - nbits - 2, emax - nbits + 3
            cases.append((t, int(rng.integers(lo, hi)), target))
    return cases


def test_round_int_is_round_to_nearest_even_by_definition() -> None:
    """Every case against the nearest element by definition (Fractions); for fp64 also
    against CPython's int division, which is correctly rounded (OverflowError: Inf)."""
    for t, e, target in _rounding_cases():
        v = Fraction(t) * Fraction(2) ** e
        got = ref.round_int(t, e, target)
        want = _nearest_by_definition(v, target)
        assert math.copysign(1, got) == math.copysign(1, want) and (got == want), (
            f"RN({t}·2^{e}) in {target}: {got!r}, want {want!r}"
        )
        if target == "fp64" and t:
            try:
                py = t / 2**-e if e < 0 else float(t * 2**e)
            except OverflowError:
                py = math.copysign(math.inf, t)
            assert got == py and math.copysign(1, got) == math.copysign(1, py), (t, e)


def test_round_exact_returns_the_targets_dtype_bit_for_bit() -> None:
    T = np.array([[3, -(1 << 80) - 1], [0, 7]], dtype=object)
    e = np.array([[-1], [-1200]])
    for target in TARGETS:
        D = ref.round_exact(T, e, target)
        assert D.dtype == ref.IEEE_TARGETS[target][3]
        want = [[ref.round_int(int(T[i, j]), int(e[i, 0]), target) for j in range(2)]
                for i in range(2)]  # fmt: skip
        np.testing.assert_array_equal(D.astype(np.float64), np.array(want))


# ---------------------------------------------------------------------------- the budget


def _fits_decimal(q2: int, moduli: tuple[int, ...], k: int) -> bool:
    """The spec's condition ``(2^(q2/2) + (isqrt(K-1) + 2)/2)^2 <= M·(1/2 - 2^-20)`` in
    120-digit decimals; asserts that the two sides are further apart than the arithmetic's
    error, so that the answer is exact."""
    with localcontext() as ctx:
        ctx.prec = 120
        c = Decimal(math.isqrt(max(k, 1) - 1) + 2) / 2
        lhs = (Decimal(2).sqrt() ** q2 + c) ** 2
        rhs = Decimal(math.prod(moduli)) * (Decimal(1) / 2 - Decimal(2) ** -20)
        assert abs(lhs - rhs) > rhs * Decimal(10) ** -100
        return lhs <= rhs


K_GRID = (1, 2, 3, 4, 5, 16, 17, 100, 1000, 4096, 8191, 8192, 31684, 31685, 65536, 131071)


@pytest.mark.parametrize("L", range(2, len(oz.MODULI) + 1))
def test_spec_q2_is_the_largest_budget_of_the_documented_condition(L: int) -> None:
    moduli = oz.MODULI[:L]
    for k in K_GRID:
        q2 = ref.spec_q2(moduli, k)
        if q2 < 0:
            assert not _fits_decimal(0, moduli, k)
            continue
        assert _fits_decimal(q2, moduli, k) and not _fits_decimal(q2 + 1, moduli, k), (L, k)


#: (L, K) where the implementation's budget is one below the documented largest: crt_q2
#: rounds the line budget X down to an integer before X^2 is rounded down to a power of two.
#: All 3606 such K (checked for every K <= INT8_KMAX and every L) have L = 2 and K >= 31685.
Q2_BELOW_THE_SPEC = ((2, 31685), (2, 121225))


@pytest.mark.parametrize("L", range(3, len(oz.MODULI) + 1))
def test_crt_q2_and_the_plans_budget_are_the_specs(L: int) -> None:
    """The implementation's budget (crt_q2, and the q2 its plans carry) is the spec's. A q2
    one too small (or too large) shifts every line and changes the outputs' bits."""
    moduli = oz.MODULI[:L]
    for k in (*K_GRID, *range(2, 3000, 37)):
        want = ref.spec_q2(moduli, k)
        assert oz.crt_q2(moduli, k) == want, (L, k)
        if want >= 2:
            assert oz.make_plan("ozaki2", "int8", "fp64", L, k).q2 == want, (L, k)


@pytest.mark.parametrize(("L", "k"), Q2_BELOW_THE_SPEC)
def test_crt_q2_for_two_moduli_and_long_k_is_one_below(L: int, k: int) -> None:
    """The documented departure (docs/ozaki.md, CRT): rounding the line budget X down to an
    integer first costs one step of q2 here. Safe: a smaller budget keeps |T| in the CRT
    range, at one bit less precision."""
    assert oz.crt_q2(oz.MODULI[:L], k) == ref.spec_q2(oz.MODULI[:L], k) - 1


# ---------------------------------------------------------------------------- the shifts


def test_spec_shifts_are_the_largest_within_the_budget() -> None:
    """Per line, ``4^s·nfix·2^(2·emax - 40) <= 2^q2`` at ``s`` and not at ``s + 1`` (unless
    ``s + emax`` is at the cap 62), in Fractions; 0 for all-zero lines."""
    rng = np.random.default_rng(8)
    n = 400
    emax = rng.integers(-1074, 1025, n)
    nfix = np.maximum(rng.integers(1, 2**57, n) >> rng.integers(0, 57, n), 1)
    nfix[:3] = [1, 2**40, 2**57]
    zero = rng.random(n) < 0.05
    for q2 in (2, 13, 40, 89, 104, 150):
        s = ref.spec_shifts(emax, nfix, zero, q2)
        for si, em, nf, z in zip(s.tolist(), emax.tolist(), nfix.tolist(), zero.tolist(),
                                 strict=True):  # fmt: skip

            def ok(x: int, em: int = em, nf: int = nf, q2: int = q2) -> bool:
                return Fraction(4) ** x * nf * Fraction(2) ** (2 * em - 40) <= 2**q2

            if z:
                assert si == 0
                continue
            assert ok(si) and si + em <= 62
            assert si + em == 62 or not ok(si + 1)
        # the implementation's rule gives the same shifts
        np.testing.assert_array_equal(oz.shifts_from_bounds(emax, nfix, zero, q2), s)


def test_ref_stats_norm_bound_holds_and_matches_the_implementations() -> None:
    """``sum x^2 <= nfix·2^(2·emax - 40)`` in Fractions, and the implementation's line
    statistics are the same integers."""
    rng = np.random.default_rng(4)
    X = ref.exp_rand(rng, (30, 50), phi=4.0)
    X[3] = 0.0
    X[4, :5] = [5e-324, -2.5e-310, 1e-300, 0.0, 3.0]
    st = ref.ref_stats(X, 1)
    for i in range(X.shape[0]):
        sq = sum(Fraction(float(x)) ** 2 for x in X[i])
        assert sq <= int(st["nfix"][i]) * Fraction(2) ** (2 * int(st["emax"][i]) - 40)
    for axis in (0, 1):
        st, impl = ref.ref_stats(X, axis), oz.line_stats(X, axis)
        for f in ("emax", "esum", "count", "nfix", "zero", "bad"):
            np.testing.assert_array_equal(np.asarray(getattr(impl, f)), st[f], err_msg=f)


# ------------------------------------------------------------------------------ the CRT


@pytest.mark.parametrize("L", [2, 8, 15, 20])
def test_crt_weights_and_the_implementations_constants(L: int) -> None:
    """``w_l = 1 (mod m_l)``, ``0`` modulo the others; the implementation's limbs of ``w_l``
    and of ``M`` are those of these ints, and its ``u_l`` is ``w_l / M`` correctly rounded."""
    moduli = oz.MODULI[:L]
    M = math.prod(moduli)
    w = ref.crt_weights(moduli)
    for li, wl in enumerate(w):
        assert 0 <= wl < M
        assert [wl % m for m in moduli] == [int(j == li) for j in range(L)]
    W, u, Ml = oz.crt_constants(moduli)
    for li, wl in enumerate(w):
        assert sum(int(W[li, t]) << (32 * t) for t in range(W.shape[1])) == wl
        assert u[li] == float(Fraction(wl, M))
    assert sum(int(Ml[t]) << (32 * t) for t in range(Ml.size)) == M


@pytest.mark.parametrize("L", [2, 8, 15, 20])
def test_crt_replay_recovers_every_integer_of_the_range(L: int) -> None:
    """:func:`crt_replay` on one-term lines ``a = [T], b = [1]`` gives ``T`` for ``|T|`` up to
    ``M·(1/2 - 2^-20)`` (int64-sized T for the scaled integers' own range)."""
    moduli = oz.MODULI[:L]
    w = ref.crt_weights(moduli)
    Mb = math.floor(ref.spec_crt_bound(moduli))
    rng = np.random.default_rng(L)
    vals = [0, 1, -1, Mb, -Mb, Mb - 1, 2**62 % (Mb + 1)]
    vals += [int(x) % (2 * Mb + 1) - Mb for x in rng.integers(0, 2**62, 200)]
    for t in vals:
        assert ref.crt_replay([t], [1], moduli, w) == t


def test_exact_product_is_the_integer_product() -> None:
    """Across a K chunk boundary, entries up to ±2^62, against Python ints."""
    rng = np.random.default_rng(6)
    k = 2 * 2048 + 5
    ya = rng.integers(-(2**62), 2**62, size=(3, k), dtype=np.int64, endpoint=True)
    yb = rng.integers(-(2**62), 2**62, size=(k, 2), dtype=np.int64, endpoint=True)
    ya[0] = 2**62
    yb[:, 0] = -(2**62)
    yb[: k // 2, 1] = 2**62
    T = ref.exact_product(ya, yb)
    for i in range(3):
        for j in range(2):
            want = sum(int(a) * int(b) for a, b in zip(ya[i], yb[:, j], strict=True))
            assert T[i, j] == want


# ---------------------------------------------------------------------------- the output


@pytest.mark.parametrize("target", TARGETS)
def test_reference_is_rn_of_the_exact_product_for_few_bit_inputs(target: str) -> None:
    """Integer-valued inputs of few bits are scaled without error, so the spec's output is
    ``RN(A·B)``: against :func:`precision.reference.exact_matmul`, bit for bit, in the normal
    range and far below it (subnormal and zero results)."""
    rng = np.random.default_rng(12)
    A = rng.integers(-(2**7), 2**7, size=(9, 23)).astype(np.float64)
    B = rng.integers(-(2**7), 2**7, size=(23, 7)).astype(np.float64)
    for scale in (1.0, 2.0**-1000 if target == "fp64" else 2.0**-140):
        As = A * scale
        for L in (6, 15):
            r = ref.reference(As, B, L, target, crt_samples=8)
            want = exact_matmul(As, B, rounding=target)
            np.testing.assert_array_equal(_bits(r["D"]), _bits(want))
            assert r["crt_bad"] == 0 and r["t_over_mb"] <= 1


#: (m, k, n, phi, target, L, specials)
EMULATOR_CASES = [
    (7, 33, 5, 0.0, "fp64", 15, False),
    (20, 64, 11, 1.0, "fp64", 16, False),
    (20, 64, 11, 4.0, "fp64", 20, False),
    (13, 100, 9, 2.0, "fp32", 8, False),
    (13, 100, 9, 0.5, "fp32", 5, False),
    (5, 300, 6, 1.0, "fp64", 3, False),
    (16, 16, 16, 1.0, "fp64", 15, True),
    (16, 16, 16, 4.0, "fp32", 8, True),
]


@pytest.mark.parametrize(("m", "k", "n", "phi", "target", "L", "specials"), EMULATOR_CASES)
def test_the_emulator_gives_the_specs_bits(
    m: int, k: int, n: int, phi: float, target: str, L: int, specials: bool
) -> None:
    """The CPU emulator (:func:`precision.gemm.ozaki.ozaki_gemm`) against the reference, bit
    for bit (NaN/Inf outputs included), and its plan's budget against the spec's."""
    if specials:
        A, B = ref.make_operands(m, phi, seed=m + int(phi), specials=True)
    else:
        rng = np.random.default_rng(m * k + n)
        A = ref.exp_rand(rng, (m, k), phi=phi)
        B = ref.exp_rand(rng, (k, n), phi=phi)
    r = ref.reference(A, B, L, target, crt_samples=16)
    D = oz.ozaki_gemm(A, B, method="ozaki2", fmt="int8", target=target, terms=L)
    plan, _, _ = oz.plan_for(A, B, method="ozaki2", fmt="int8", target=target, terms=L)
    assert plan.q2 == r["q2"]
    np.testing.assert_array_equal(_bits(D), _bits(r["D"]))
    assert r["crt_bad"] == 0 and r["t_over_mb"] <= 1
