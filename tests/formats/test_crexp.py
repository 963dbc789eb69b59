"""precision.crexp.exp_rn: exp correctly rounded to nearest, checked element by element against
mpmath at 300 bits rounded once here (Python's int / int division rounds correctly), and the
exp_rand distribution drawn through it (so its bits do not depend on the CPU's exp)."""

from __future__ import annotations

import math
import sys
import threading

import mpmath
import numpy as np
import pytest

from precision import crexp
from precision.distributions import get_distribution, make_inputs, sample


def _rn_exp(x: float) -> float:
    """RN(exp(x)) computed independently: mpmath at 300 bits, one correct rounding."""
    if math.isnan(x):
        return math.nan
    if x == math.inf:
        return math.inf
    if x == -math.inf or x < -800:
        return 0.0
    if x > 800:
        return math.inf
    with mpmath.workprec(300):
        sign, man, exp, _ = mpmath.exp(mpmath.mpf(x))._mpf_  # value = (-1)^sign·man·2^exp
    num, den = (man << exp, 1) if exp >= 0 else (man, 1 << -exp)
    try:
        return (-num if sign else num) / den
    except OverflowError:
        return math.inf


def _same_bits(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return got.view(np.uint64) == want.view(np.uint64)


def test_correctly_rounded_across_the_range() -> None:
    rng = np.random.default_rng(11)
    x = np.concatenate(
        [
            rng.standard_normal(6000) * rng.choice([1e-6, 0.01, 1.0, 8.0, 88.0], 6000),
            rng.uniform(-746.0, 710.0, 3000),  # subnormal results, underflow, overflow
            np.log(2.0) / 4096 * rng.integers(-3_000_000, 3_000_000, 200),  # table points
            [0.0, -0.0, 5e-324, -5e-324, 1e-300, math.log(2), -708.0, 709.7, 709.78, 709.79],
            [-745.13, -745.14, -744.44, -708.4, -708.39, math.inf, -math.inf, math.nan],
        ]
    )
    got = crexp.exp_rn(x)
    want = np.array([_rn_exp(float(v)) for v in x])
    bad = ~_same_bits(got, want) & ~(np.isnan(got) & np.isnan(want))
    assert not bad.any(), list(zip(x[bad][:5], got[bad][:5], want[bad][:5], strict=True))


def test_the_mpmath_path_gives_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Arguments near a rounding midpoint go to mpmath; forcing every argument there must not
    change a bit (and the fast path alone must agree with the independent reference)."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal(3000) * 20
    fast = crexp.exp_rn(x)
    monkeypatch.setattr(crexp, "_AMBIGUOUS", 1.0)  # every remainder counts as ambiguous
    slow = crexp.exp_rn(x)
    assert _same_bits(fast, slow).all()
    want = np.array([_rn_exp(float(v)) for v in x])
    assert _same_bits(fast, want).all()


def test_shape_and_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crexp, "CHUNK", 1000)  # several chunks and a ragged last one
    rng = np.random.default_rng(13)
    x = np.asfortranarray(rng.standard_normal((37, 101)) * 5)[:, ::2]
    got = crexp.exp_rn(x)
    assert got.shape == x.shape and got.dtype == np.float64
    want = np.array([_rn_exp(float(v)) for v in x.ravel()]).reshape(x.shape)
    assert _same_bits(got, want).all()
    assert crexp.exp_rn(np.array(1.0)).shape == ()
    assert crexp.exp_rn(np.empty((0, 3))).shape == (0, 3)


@pytest.mark.parametrize("phi", [0.0, 0.5, 4.0])
def test_exp_rand_is_uniform_times_the_rounded_exp(phi: float, monkeypatch: pytest.MonkeyPatch):
    """exp_rand = (U - 0.5)·RN(exp(phi·g)), the draws in the generator's order (U, then g), and
    np.exp is never called (its last bit depends on the CPU)."""

    def no_exp(*args, **kwargs):
        raise AssertionError("exp_rand called np.exp")

    rng = np.random.default_rng(14)
    u, g = rng.random((9, 7)), rng.standard_normal((9, 7))
    want = (u - 0.5) * np.array([_rn_exp(phi * float(v)) for v in g.ravel()]).reshape(9, 7)
    monkeypatch.setattr(np, "exp", no_exp)
    got = get_distribution("exp_rand").func(np.random.default_rng(14), (9, 7), phi=phi)
    assert _same_bits(np.asarray(got, dtype=np.float64), want).all()
    f32 = sample("exp_rand", (9, 7), np.random.default_rng(14), phi=phi)
    assert np.array_equal(f32, want.astype(np.float32))
    A, _ = make_inputs("exp_rand", 9, 3, 7, np.random.default_rng(14), dtype="fp64", phi=phi)
    assert _same_bits(A, want).all()


def test_threaded_chunks_give_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spread over threads (forced here on a small array, with out-of-range arguments that
    take the mpmath path in every worker's share), the result is the reference's, bit for bit.
    Four threads take chunks of 8 x 64 elements, 3 in each worker's share but the last."""
    monkeypatch.setattr(crexp, "CHUNK", 64)
    monkeypatch.setattr(crexp, "_MIN_THREADED", 1)
    monkeypatch.setattr(crexp, "thread_count", lambda: 4)
    rng = np.random.default_rng(15)
    x = rng.standard_normal(5000) * 30
    x[::700] = rng.uniform(-760, -709, x[::700].size)  # subnormal results: mpmath
    got = crexp.exp_rn(x)
    want = np.array([_rn_exp(float(v)) for v in x])
    assert _same_bits(got, want).all()


def test_threads_follow_omp_num_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner's Dask workers set OMP_NUM_THREADS to their share of the cores; exp_rn must
    not start more threads than that (one: none at all)."""

    def no_pool(*args, **kwargs):
        raise AssertionError("exp_rn started threads with OMP_NUM_THREADS=1")

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setattr(crexp, "in_threads", no_pool)
    monkeypatch.setattr(crexp, "_MIN_THREADED", 1)
    monkeypatch.setattr(crexp, "CHUNK", 64)
    x = np.linspace(-5, 5, 1000)
    assert _same_bits(crexp.exp_rn(x), np.array([_rn_exp(float(v)) for v in x])).all()


def test_mpmath_precision_of_other_threads_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """exp_rn's mpmath work uses a context of its own: another thread lowering mpmath's global
    precision meanwhile changes none of its bits, and the global precision is not touched."""
    rng = np.random.default_rng(16)
    x = rng.standard_normal(1500) * 10
    want = np.array([_rn_exp(float(v)) for v in x])  # before the race starts
    monkeypatch.setattr(crexp, "_AMBIGUOUS", 1.0)  # every argument through mpmath
    stop = threading.Event()

    def lower_the_precision() -> None:
        while not stop.is_set():
            mpmath.mp.prec = 20

    racer = threading.Thread(target=lower_the_precision)
    old, interval = mpmath.mp.prec, sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so that the racer runs in between
    racer.start()
    try:
        got = crexp.exp_rn(x)
    finally:
        stop.set()
        racer.join()
        sys.setswitchinterval(interval)
        mpmath.mp.prec = old
    assert _same_bits(got, want).all()


#: Arguments whose exact exp lies within a hair of a rounding midpoint of the subnormal grid
#: (the doubles nearest ln((2j+1)·2^-1075) for some j): a result computed at 53 bits and then
#: scaled into the subnormal range (two roundings) misses the correct one here.
HARD_SUBNORMAL = [
    float.fromhex(h)
    for h in ("-0x1.724ce11a748a5p+9", "-0x1.706769b20f87dp+9", "-0x1.626c79b5d4e73p+9")
]


def test_subnormal_results_are_rounded_once() -> None:
    got = crexp.exp_rn(np.array(HARD_SUBNORMAL))
    assert [g.hex() for g in got] == [_rn_exp(v).hex() for v in HARD_SUBNORMAL]
    assert all(0 < g < 2.0**-1022 for g in got)  # subnormal results indeed


def test_the_fast_path_flags_the_midpoint_just_below_a_power_of_two() -> None:
    """exp(-2^-54) = (1 - 2^-54) + 2^-109 - ...: within 2^-80 of the midpoint between 1 - 2^-53
    and 1 (mpmath says so here); the fast path must hand it to mpmath rather than decide."""
    x = -(2.0**-54)
    with mpmath.workprec(300):
        assert abs(mpmath.exp(mpmath.mpf(x)) - (1 - mpmath.mpf(2) ** -54)) < mpmath.mpf(2) ** -80
    _, near = crexp._exp_chunk(np.array([x]))
    assert near[0]
    assert crexp.exp_rn(np.array([x]))[0] == _rn_exp(x) == 1.0
