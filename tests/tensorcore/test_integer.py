"""Integer (s8/u8/s4/u4) and b1 mma chains against exact Python-integer arithmetic.

The oracle below is a plain transcription of the PTX semantics with Python ints (one
instruction at a time: exact sum of k_step products, then wrap modulo 2^32 or clamp), written
independently of the BLAS-based fast path.
"""

from __future__ import annotations

import numpy as np
import pytest

from precision.tensorcore.integer import INT32_MAX, INT32_MIN, b1_mma_chain, int_mma_chain

RANGES = {"s8": (-128, 127), "u8": (0, 255), "s4": (-8, 7), "u4": (0, 15)}


def _wrap(v: int) -> int:
    return (v - INT32_MIN) % 2**32 + INT32_MIN


def _oracle(a, b, c, k_step: int, satfinite: bool) -> np.ndarray:
    """Python-int model: for each output element, instruction by instruction."""
    m, k = a.shape
    n = b.shape[1]
    al, bl, cl = a.tolist(), b.tolist(), c.tolist()
    out = np.empty((m, n), dtype=np.int64)
    for i in range(m):
        for j in range(n):
            d = cl[i][j]
            for k0 in range(0, k, k_step):
                d += sum(al[i][kk] * bl[kk][j] for kk in range(k0, k0 + k_step))
                d = min(max(d, INT32_MIN), INT32_MAX) if satfinite else _wrap(d)
            out[i, j] = d
    return out


def _rand(rng, fmt, shape):
    lo, hi = RANGES[fmt]
    return rng.integers(lo, hi + 1, size=shape, dtype=np.int64)


@pytest.mark.parametrize("satfinite", [False, True])
@pytest.mark.parametrize(
    ("fa", "fb", "k_step"),
    [
        ("s8", "s8", 32),
        ("u8", "s8", 32),
        ("s8", "u8", 16),
        ("u8", "u8", 16),
        ("s4", "u4", 64),
        ("u4", "s4", 32),
        ("s4", "s4", 64),
    ],
)
def test_random_chains_match_python_ints(fa, fb, k_step, satfinite):
    rng = np.random.default_rng([k_step, satfinite, *map(ord, fa + fb)])
    m, n, k = 6, 5, 4 * k_step
    a, b = _rand(rng, fa, (m, k)), _rand(rng, fb, (k, n))
    # c: half of the elements near the int32 limits so wraps and clamps happen mid-chain.
    c = rng.integers(INT32_MIN, INT32_MAX + 1, size=(m, n), dtype=np.int64)
    edge = rng.integers(0, 2**17, size=(m, n))
    c[::2] = np.where(rng.random((m, n)) < 0.5, INT32_MAX - edge, INT32_MIN + edge)[::2]
    got = int_mma_chain(a, b, c, k_step=k_step, satfinite=satfinite)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, _oracle(a, b, c, k_step, satfinite))


def test_satfinite_clamps_after_each_instruction_not_at_the_end():
    # Instruction 1 adds +2^14 * 32, instruction 2 subtracts the same: a final-only clamp would
    # give c back; per-instruction clamping loses what went over INT32_MAX.
    k_step = 32
    a = np.full((1, 2 * k_step), -128, dtype=np.int64)
    b = np.concatenate([np.full((k_step, 1), -128), np.full((k_step, 1), 127)]).astype(np.int64)
    c = np.array([[INT32_MAX - 1000]], dtype=np.int64)
    got = int_mma_chain(a, b, c, k_step=k_step, satfinite=True)
    expect = INT32_MAX + (-128 * 127 * k_step)
    assert got[0, 0] == expect
    assert got[0, 0] != c[0, 0] + 128 * 128 * k_step - 128 * 127 * k_step
    wrapped = int_mma_chain(a, b, c, k_step=k_step, satfinite=False)
    assert wrapped[0, 0] == _wrap(int(c[0, 0]) + 128 * k_step)


def test_satfinite_mixed_safe_and_risky_rows():
    rng = np.random.default_rng(7)
    m, n, k, k_step = 40, 9, 256, 32
    a, b = _rand(rng, "s8", (m, k)), _rand(rng, "u8", (k, n))
    c = rng.integers(-1000, 1000, size=(m, n), dtype=np.int64)
    c[3, 4] = INT32_MAX - 5  # one risky element: its row takes the per-instruction path
    c[17, 0] = INT32_MIN + 5
    got = int_mma_chain(a, b, c, k_step=k_step, satfinite=True)
    np.testing.assert_array_equal(got, _oracle(a, b, c, k_step, True))


def test_batched_broadcast():
    rng = np.random.default_rng(3)
    a = _rand(rng, "s8", (3, 1, 4, 64))
    b = _rand(rng, "s8", (2, 64, 5))
    c = rng.integers(INT32_MAX - 10**6, INT32_MAX, size=(4, 5), dtype=np.int64)
    for satf in (False, True):
        got = int_mma_chain(a, b, c, k_step=32, satfinite=satf)
        assert got.shape == (3, 2, 4, 5)
        for i in range(3):
            for j in range(2):
                np.testing.assert_array_equal(got[i, j], _oracle(a[i, 0], b[j], c, 32, satf))


def test_wide_values_split_k_to_stay_exact():
    # Not a hardware format: 2^25-magnitude values force K to be split so sums stay < 2^53.
    rng = np.random.default_rng(11)
    a = rng.integers(-(2**25), 2**25, size=(3, 64), dtype=np.int64)
    b = rng.integers(-(2**25), 2**25, size=(64, 4), dtype=np.int64)
    c = rng.integers(INT32_MIN, INT32_MAX, size=(3, 4), dtype=np.int64)
    got = int_mma_chain(a, b, c, k_step=1, satfinite=False)
    np.testing.assert_array_equal(got, _oracle(a, b, c, 1, False))


def test_rejects_bad_input():
    a = np.zeros((2, 48), dtype=np.int64)
    b = np.zeros((48, 2), dtype=np.int64)
    c = np.zeros((2, 2), dtype=np.int64)
    with pytest.raises(ValueError, match="multiple of k_step"):
        int_mma_chain(a, b, c, k_step=32, satfinite=False)
    with pytest.raises(ValueError, match="outside int32"):
        int_mma_chain(a, b, c + 2**31, k_step=16, satfinite=False)
    with pytest.raises(TypeError, match="integer array"):
        int_mma_chain(a.astype(float), b, c, k_step=16, satfinite=False)
    with pytest.raises(ValueError, match="do not chain"):
        int_mma_chain(a, b[:-1], c, k_step=16, satfinite=False)
    with pytest.raises(ValueError, match="0/1"):
        b1_mma_chain(a + 2, b, c, k_step=16, op="xor.popc")
    with pytest.raises(ValueError, match="op must be"):
        b1_mma_chain(a, b, c, k_step=16, op="or.popc")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- b1


def _b1_oracle(a, b, c, k_step, op):
    """Per instruction: popcount of the packed row/column words (Python int bit operations)."""
    m, k = a.shape
    n = b.shape[1]
    out = np.empty((m, n), dtype=np.int64)
    for i in range(m):
        for j in range(n):
            d = int(c[i, j])
            for k0 in range(0, k, k_step):
                ra = int("".join(map(str, a[i, k0 : k0 + k_step].tolist())), 2)
                cb = int("".join(map(str, b[k0 : k0 + k_step, j].tolist())), 2)
                d = _wrap(d + bin(ra ^ cb if op == "xor.popc" else ra & cb).count("1"))
            out[i, j] = d
    return out


@pytest.mark.parametrize("op", ["xor.popc", "and.popc"])
@pytest.mark.parametrize("k_step", [128, 256])
def test_b1_matches_popcount(op, k_step):
    rng = np.random.default_rng([k_step, len(op)])
    m, n, k = 7, 6, 3 * k_step
    a = (rng.random((m, k)) < rng.random((m, 1))).astype(np.uint8)
    b = (rng.random((k, n)) < rng.random((1, n))).astype(np.uint8)
    c = rng.integers(INT32_MIN, INT32_MAX + 1, size=(m, n), dtype=np.int64)
    c[0] = INT32_MAX - rng.integers(0, 200, size=n)  # wraps past INT32_MAX
    got = b1_mma_chain(a, b, c, k_step=k_step, op=op)
    np.testing.assert_array_equal(got, _b1_oracle(a, b, c, k_step, op))
    assert (got[0] < 0).any()  # some wrapped


def test_b1_bool_and_batch():
    rng = np.random.default_rng(5)
    a = rng.random((2, 4, 256)) < 0.5
    b = rng.random((256, 3)) < 0.5
    c = np.zeros((4, 3), dtype=np.int32)
    got = b1_mma_chain(a, b, c, k_step=128, op="xor.popc")
    for i in range(2):
        ref = _b1_oracle(a[i].astype(np.uint8), b.astype(np.uint8), c, 128, "xor.popc")
        np.testing.assert_array_equal(got[i], ref)


def test_empty_k_returns_c():
    c = np.array([[5, -7]], dtype=np.int64)
    a = np.zeros((1, 0), dtype=np.int64)
    b = np.zeros((0, 2), dtype=np.int64)
    for satf in (False, True):
        np.testing.assert_array_equal(int_mma_chain(a, b, c, k_step=32, satfinite=satf), c)
    np.testing.assert_array_equal(b1_mma_chain(a, b, c, k_step=128, op="xor.popc"), c)


@pytest.mark.parametrize("b_shape", [(0, 2), (3, 0, 2)])
def test_empty_k_returns_c_where_satfinite_could_clamp(b_shape):
    # |c| = 2^31 > INT32_MAX makes the rows "risky", so the clamped chain runs with no
    # instruction at all: it must return c (it raised reshaping a size-0 a with -1).
    c = np.array([[[INT32_MIN, 5]]] * 3, dtype=np.int32)  # [3, 1, 2]
    a = np.zeros((1, 0), dtype=np.int8)
    b = np.zeros(b_shape, dtype=np.int8)
    got = int_mma_chain(a, b, c, k_step=32, satfinite=True)
    np.testing.assert_array_equal(got, c)


# ------------------------------------------------------------------ bounded memory, blocked loops


def test_int_chain_temporaries_are_bounded(traced_peak, monkeypatch):
    # The output is computed in blocks of (batch entries x rows): besides the int32 result and
    # one float64 copy of b only block-sized int64/float64 temporaries live (whole-array ones
    # were ~32-40 bytes per output element, 8-10x the int32 result).
    from precision.tensorcore import integer, mma

    monkeypatch.setattr(integer, "_BLOCK_ELEMENTS", 1 << 14)
    rng = np.random.default_rng(11)
    m, k, n = 512, 64, 512
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    c_safe = np.zeros((m, n), np.int32)
    c_risky = rng.choice([INT32_MIN, INT32_MAX, 0], size=(m, n)).astype(np.int32)
    out_bytes = m * n * 4
    for c, satf in ((c_safe, False), (c_safe, True), (c_risky, True)):
        peak = traced_peak(lambda c=c, satf=satf: mma(a, b, c, fmt="int8", satf=satf))
        assert peak < 2 * out_bytes + 8 * b.size, (satf, peak / out_bytes)
    b1a = rng.integers(0, 2, (m, 256)).astype(np.uint8)
    b1b = rng.integers(0, 2, (256, n)).astype(np.uint8)
    peak = traced_peak(lambda: mma(b1a, b1b, c_safe, fmt="uint1", bitop="xor.popc"))
    assert peak < 2 * out_bytes + 8 * b1b.size, peak / out_bytes


class _ClipCounter:
    """Stands in for ``numpy`` in :mod:`precision.tensorcore.integer`, counting ``np.clip``
    calls (one per instruction per block of the satfinite chain)."""

    def __init__(self) -> None:
        self.clips = 0

    def __getattr__(self, name):
        return getattr(np, name)

    def clip(self, *args, **kwargs):
        self.clips += 1
        return np.clip(*args, **kwargs)


@pytest.mark.parametrize("b_batched", [False, True])
def test_satfinite_chain_runs_per_block_not_per_batch_entry(monkeypatch, b_batched):
    # Many small batch entries, all with rows where a clamp acts: the per-instruction clamped
    # chain runs once per block of entries (here one block), not once per batch entry (which
    # made 64 * 2 clip calls), and matches the one-instruction-at-a-time oracle.
    from precision.tensorcore import integer

    rng = np.random.default_rng(12)
    nb, m, k, n, k_step = 64, 4, 64, 3, 32
    a = _rand(rng, "s8", (nb, m, k))
    b = _rand(rng, "u8", (nb, k, n) if b_batched else (k, n))
    c = rng.choice([INT32_MIN, INT32_MAX, -5, 7], size=(nb, m, n))
    counter = _ClipCounter()
    monkeypatch.setattr(integer, "np", counter)
    got = int_mma_chain(a, b, c, k_step=k_step, satfinite=True)
    monkeypatch.undo()
    assert counter.clips == k // k_step
    for i in range(nb):
        ref = _oracle(a[i], b[i] if b_batched else b, c[i], k_step, True)
        np.testing.assert_array_equal(got[i], ref)


@pytest.mark.parametrize("satfinite", [False, True])
def test_small_blocks_match_oracle_with_broadcast_batches(monkeypatch, satfinite):
    # Tiny blocks: splits over batch entries and over rows, broadcast a/b entries, ragged sizes.
    from precision.tensorcore import integer

    monkeypatch.setattr(integer, "_BLOCK_ELEMENTS", 50)
    rng = np.random.default_rng(13)
    a = _rand(rng, "u8", (2, 1, 7, 64))
    b = _rand(rng, "s8", (1, 3, 64, 5))
    c = rng.choice([INT32_MIN, INT32_MAX, 0, 12345], size=(3, 7, 5))
    got = int_mma_chain(a, b, c, k_step=32, satfinite=satfinite, dtype=np.int32)
    assert got.dtype == np.int32 and got.shape == (2, 3, 7, 5)
    for i in range(2):
        for j in range(3):
            np.testing.assert_array_equal(got[i, j], _oracle(a[i, 0], b[0, j], c[j], 32, satfinite))


def test_a_long_b_is_widened_in_column_panels(traced_peak):
    """The exact cores made a float64 copy of all of b first (8 bytes per element: 128 MiB
    for this 16 MiB int8 b, 2 GiB for a 65536 x 4096 one). b is now widened in column panels
    of about 2^20 elements; the sum stays exact (checked against integer arithmetic)."""
    rng = np.random.default_rng(11)
    a = rng.integers(-128, 128, (1, 16384), dtype=np.int8)
    b = rng.integers(-128, 128, (16384, 1024), dtype=np.int8)
    c = rng.integers(-(2**31), 2**31, (1, 1024), dtype=np.int64).astype(np.int32)
    got: list[np.ndarray] = []
    peak = traced_peak(lambda: got.append(int_mma_chain(a, b, c, k_step=32, satfinite=False)))
    assert peak < 48 * 2**20, peak / 2**20
    exact = c.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(got[0], (exact + 2**31) % 2**32 - 2**31)
