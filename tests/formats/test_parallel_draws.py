"""precision.parallel_draws: threaded uniform draws give the serial call's bits, and leave the
generator where the serial call leaves it."""

from __future__ import annotations

import numpy as np
import pytest

from precision import parallel_draws
from precision.crexp import exp_rn
from precision.distributions import make_inputs


@pytest.fixture
def threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads on small draws: 3 of them from 64 values on (uneven chunks), each drawing its
    share 10 values per numpy call."""
    monkeypatch.setattr(parallel_draws, "MIN_PARALLEL", 64)
    monkeypatch.setattr(parallel_draws, "thread_count", lambda: 3)
    monkeypatch.setattr(parallel_draws, "_PIECE", 10)  # several numpy calls per thread


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint64)


def _after(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """What the generator draws next: normals (a variable number of outputs each) and 32-bit
    integers (half-outputs)."""
    return rng.standard_normal(50), rng.integers(0, 2**32, 7, dtype=np.uint32)


@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.PCG64DXSM])
@pytest.mark.parametrize("shape", [(65,), (10, 31), (3, 7, 11), (64,)])
def test_threaded_draws_are_the_serial_ones(threaded, bit_generator, shape) -> None:
    for seed in (0, 7):
        serial = np.random.Generator(bit_generator(seed))
        parallel = np.random.Generator(bit_generator(seed))
        want = [serial.random(size=shape), serial.uniform(-3.0, 5.5, size=shape)]
        got = [parallel_draws.random(parallel, shape),
               parallel_draws.uniform(parallel, -3.0, 5.5, shape)]  # fmt: skip
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and np.array_equal(_bits(g), _bits(w))
        for g, w in zip(_after(parallel), _after(serial), strict=True):
            assert np.array_equal(g, w)


def test_a_buffered_half_output_is_kept_by_a_serial_draw(threaded) -> None:
    """After a 32-bit draw, PCG64 holds the other half of an output for the next one;
    ``advance`` would drop it, so such a draw runs serially, and the half is still used."""
    serial, parallel = np.random.default_rng(3), np.random.default_rng(3)
    for rng in (serial, parallel):
        rng.integers(0, 2**32, 1, dtype=np.uint32)
    assert parallel.bit_generator.state["has_uint32"] == 1
    assert np.array_equal(parallel_draws.random(parallel, (200,)), serial.random(200))
    for g, w in zip(_after(parallel), _after(serial), strict=True):
        assert np.array_equal(g, w)


def test_other_bit_generators_draw_serially(threaded) -> None:
    serial = np.random.Generator(np.random.MT19937(5))
    other = np.random.Generator(np.random.MT19937(5))
    assert np.array_equal(
        parallel_draws.uniform(other, 0.0, 2.0, (300,)), serial.uniform(0, 2, 300)
    )
    assert np.array_equal(other.random(5), serial.random(5))


def test_a_full_size_draw_in_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above MIN_PARALLEL, unpatched, in two threads whatever this machine has."""
    monkeypatch.setattr(parallel_draws, "thread_count", lambda: 2)
    shape = (parallel_draws.MIN_PARALLEL + 5,)
    got = parallel_draws.random(np.random.default_rng(11), shape)
    assert np.array_equal(got, np.random.default_rng(11).random(size=shape))


def test_seeded_inputs_keep_their_bits(threaded) -> None:
    """make_inputs draws what one serial numpy call per array drew before: exp_rand is
    (U - 0.5)·exp(phi·G) with U from ``random`` and G from ``standard_normal``; uniform is
    ``uniform``. A (m x k) first, then B (k x n)."""
    m, n, k = 20, 9, 14
    A, B = make_inputs("exp_rand", m, n, k, np.random.default_rng(21), dtype="fp64", phi=1.5)
    rng = np.random.default_rng(21)
    for got, shape in ((A, (m, k)), (B, (k, n))):
        u = rng.random(size=shape)
        want = (u - 0.5) * exp_rn(1.5 * rng.standard_normal(size=shape))
        assert np.array_equal(_bits(got), _bits(want))
    A, B = make_inputs("uniform", m, n, k, np.random.default_rng(22), dtype="fp64")
    rng = np.random.default_rng(22)
    assert np.array_equal(A, rng.uniform(-1.0, 1.0, size=(m, k)))
    assert np.array_equal(B, rng.uniform(-1.0, 1.0, size=(k, n)))
