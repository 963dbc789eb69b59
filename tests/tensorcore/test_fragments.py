"""Fragment layouts: every operand element is held by exactly one (lane, element), pack and
unpack are inverse, and the m16n8k16 / m16n8k8 / m16n8k32 layouts are the ones the recorded
H200 probes (tests/data/sm90) were loaded with (probe/cuda/mma_sync_probe.cu)."""

from __future__ import annotations

import numpy as np
import pytest

from precision.tensorcore.fragments import mma_fragments, pack, quadpair_fragments, unpack

# (shape, input bits, accumulator bits): the mma.sync families with m16n8 / m8n8 layouts.
CASES = [
    ((16, 8, 16), 16, 32),
    ((16, 8, 16), 16, 16),
    ((16, 8, 8), 16, 32),
    ((16, 8, 8), 32, 32),
    ((16, 8, 4), 32, 32),
    ((16, 8, 32), 8, 32),
    ((16, 8, 16), 8, 32),
    ((16, 8, 64), 4, 32),
    ((16, 8, 32), 4, 32),
    ((16, 8, 128), 1, 32),
    ((16, 8, 256), 1, 32),
    ((8, 8, 16), 8, 32),
    ((8, 8, 32), 4, 32),
    ((8, 8, 128), 1, 32),
    ((8, 8, 4), 64, 64),
    ((16, 8, 4), 64, 64),
    ((16, 8, 8), 64, 64),
    ((16, 8, 16), 64, 64),
]


def _fragments(shape, in_bits, acc_bits):
    if shape == "quadpair":
        return quadpair_fragments(acc_bits)
    return mma_fragments(shape, in_bits, acc_bits)


@pytest.mark.parametrize(
    ("shape", "in_bits", "acc_bits"), [*CASES, ("quadpair", 16, 32), ("quadpair", 16, 16)]
)
def test_each_element_held_once_and_roundtrip(shape, in_bits, acc_bits):
    rng = np.random.default_rng(7)
    for frag in _fragments(shape, in_bits, acc_bits):
        flat = frag.row * frag.cols + frag.col
        assert np.array_equal(np.sort(flat.ravel()), np.arange(frag.rows * frag.cols))
        assert frag.words * 32 == frag.rows * frag.cols * frag.elem_bits // 32
        hi = 1 << min(frag.elem_bits, 63)
        tiles = rng.integers(0, hi, size=(3, frag.rows, frag.cols), dtype=np.uint64)
        words = pack(tiles, frag)
        assert words.shape == (3, 32, frag.words) and words.dtype == np.uint32
        # kernels index the words in C order (a Fortran-ordered one-register array once
        # reached the GPU transposed)
        assert words.flags.c_contiguous
        assert np.array_equal(unpack(words, frag, np.uint64), tiles)


def test_recorded_probe_layouts():
    """The closed forms equal the hand-written loaders of the recorded H200 probes."""
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    a, b, c = mma_fragments((16, 8, 16), 16, 32)
    # probe: A reg r holds (g + 8(r&1), 2t + 8(r>>1)) and the next column
    r = np.arange(4)
    assert np.array_equal(a.row[:, ::2], g[:, None] + 8 * (r & 1))
    assert np.array_equal(a.col[:, ::2], 2 * t[:, None] + 8 * (r >> 1))
    assert np.array_equal(b.row[:, ::2], 2 * t[:, None] + 8 * np.arange(2))
    assert np.array_equal(c.row, g[:, None] + 8 * (r >> 1))
    assert np.array_equal(c.col, 2 * t[:, None] + (r & 1))
    a8, b8, _ = mma_fragments((16, 8, 32), 8, 32)
    assert np.array_equal(a8.col[:, ::4], 4 * t[:, None] + 16 * (r >> 1))
    assert np.array_equal(b8.row[:, ::4], 4 * t[:, None] + 16 * np.arange(2))
    atf, btf, _ = mma_fragments((16, 8, 8), 32, 32)
    assert np.array_equal(atf.row, g[:, None] + 8 * (r & 1))
    assert np.array_equal(atf.col, t[:, None] + 4 * (r >> 1))
    assert np.array_equal(btf.row, t[:, None] + 4 * np.arange(2))


def test_unsupported_shape_is_refused():
    with pytest.raises(ValueError, match="m8n8k4"):
        mma_fragments((8, 8, 4), 16, 32)


def _cute(shape: tuple[int, ...], stride: tuple[int, ...], index: int) -> int:
    """CuTe layout (flat shape:stride) applied to a 1-D index (colexicographic coordinates)."""
    out = 0
    for extent, step in zip(shape, stride, strict=True):
        out += (index % extent) * step
        index //= extent
    return out


@pytest.mark.parametrize("acc_bits", [32, 16])
def test_quadpair_layout_equals_cutlass_sm70_traits(acc_bits):
    """Volta m8n8k4 (row.col): the closed forms equal CUTLASS/CuTe's SM70 MMA traits, an
    independent transcription of the PTX ISA figures (ThrID (4,2):(1,16) per quad pair;
    A SM70_8x4_Row, B SM70_8x4_Col (8,4):(1,8); C SM70_8x8_32b ((2,2,2),(2,2,2)):((1,16,4),
    (8,2,32)) or SM70_8x8_16b (8,8):(1,8); offsets m + 8 k, n + 8 k, m + 8 n). Only a V100 run
    can show the hardware agrees."""
    a, b, c = quadpair_fragments(acc_bits)
    c_thr, c_val = (
        (((2, 2, 2), (1, 16, 4)), ((2, 2, 2), (8, 2, 32))) if acc_bits == 32 else
        (((8,), (1,)), ((8,), (8,)))
    )  # fmt: skip
    for q in range(4):
        for t in range(8):
            lane = 4 * q + _cute((4, 2), (1, 16), t)
            for v in range(4):
                off = _cute((8,), (1,), t) + _cute((4,), (8,), v)
                assert (a.row[lane, v], a.col[lane, v]) == (8 * q + off % 8, off // 8)
                assert (b.row[lane, v], b.col[lane, v]) == (off // 8, 8 * q + off % 8)
            for v in range(8):
                off = _cute(*c_thr, t) + _cute(*c_val, v)
                assert (c.row[lane, v], c.col[lane, v]) == (8 * q + off % 8, off // 8)


def test_quadpair_rejects_other_accumulators():
    with pytest.raises(ValueError, match="16 or 32"):
        quadpair_fragments(64)
