"""fma_chain's shortcuts (exact-product addition, RN(th + RN(tl + ul)) with a midpoint test)
against exact rational arithmetic, on inputs built to hit their hard cases.

``Fraction -> float`` is CPython's correctly rounded (RN-even) conversion; the values here are
far from overflow and underflow.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from precision.tensorcore import dmma


def _oracle_chain(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """d = c; d = RN(a_k b_k + d) for k = 0, 1, ... by exact rationals."""
    m, k = a.shape
    n = b.shape[1]
    out = np.empty((m, n))
    for i in range(m):
        for j in range(n):
            d = float(c[i, j])
            for kk in range(k):
                d = float(Fraction(float(a[i, kk])) * Fraction(float(b[kk, j])) + Fraction(d))
            out[i, j] = d
    return out


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.int64)


def test_midpoint_with_sticky_error() -> None:
    """th + RN(tl + ul) exactly halfway between two doubles while tl + ul is inexact: the plain
    sum ties to even, the FMA must round towards the discarded error (round-to-odd path)."""
    rng = np.random.default_rng(3)
    m, n = 24, 9
    # c = ±2^E (1 + u 2^-52) (u odd, even, 0: power of two), a b = ±2^(E-53) (1 - k^2 2^-104):
    # uh = ±2^(E-53) (a tie against c), ul = ∓k^2 2^(E-157) != 0.
    u = rng.integers(0, 2**52, (m, 1))
    u[::3] = 0
    u[1::3] |= 1
    e = rng.integers(-200, 200, (m, 1)).astype(np.float64)
    sc = rng.choice([-1.0, 1.0], (m, 1))
    c = np.broadcast_to(sc * (1 + u * 2.0**-52) * np.exp2(e), (m, n)).copy()
    k = float(rng.integers(1, 2**20))
    a = sc * 2.0**-53 * (1 + k * 2.0**-52) * np.exp2(e)
    b = rng.choice([-1.0, 1.0], (1, n)) * (1 - k * 2.0**-52)
    got = dmma.fma_chain(a, b, c)
    want = _oracle_chain(a, b, c)
    np.testing.assert_array_equal(_bits(got), _bits(want))
    # The plain sum RN(c + RN(ab)) differs on these inputs, so the test does test something.
    assert (_bits(np.asarray(c + a * b)) != _bits(want)).any()


def test_random_chains_full_and_short_significands() -> None:
    """Chains over K on 53-bit and on <= 24-bit (fp32-converted) operands, mixed magnitudes."""
    rng = np.random.default_rng(4)
    m, k, n = 7, 12, 5
    for short in (False, True):
        a = rng.standard_normal((m, k)) * np.exp2(rng.integers(-40, 40, (m, k)))
        b = rng.standard_normal((k, n)) * np.exp2(rng.integers(-40, 40, (k, n)))
        c = rng.standard_normal((m, n)) * np.exp2(rng.integers(-60, 60, (m, n)))
        if short:
            a, b = a.astype(np.float32).astype(np.float64), b.astype(np.float32).astype(np.float64)
        got = dmma.fma_chain(a, b, c)
        np.testing.assert_array_equal(_bits(got), _bits(_oracle_chain(a, b, c)))


def test_tiny_results_by_cancellation() -> None:
    """c close to -RN(ab) with |ab| near 2^-900: results far below 2^-900 (the low part of the
    product plus a few ulps of c), which the RN(th + s) shortcut returns without repair."""
    rng = np.random.default_rng(9)
    m, n = 17, 11
    a = rng.standard_normal((m, 1)) * 2.0**-440
    b = rng.standard_normal((1, n)) * 2.0**-440
    c = -(a * b) * (1 + rng.integers(-4, 5, (m, n)) * 2.0**-52)
    got = dmma.fma_chain(a, b, c)
    want = _oracle_chain(a, b, c)
    np.testing.assert_array_equal(_bits(got), _bits(want))
    assert np.abs(want).min() < 2.0**-900
