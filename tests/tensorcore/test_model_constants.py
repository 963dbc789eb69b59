"""The published model constants of the generations without recorded data (block L, fraction
bits F, zero anchors, m8n8k4's Volta settings) and the per-instruction clamps, each pinned by a
small case whose expected value comes from exact arithmetic (Fraction, Python ints) and the
constants as published (/work/shared/reference/tensorcore_arithmetic.md, sections cited).

A mutation audit (2026-11-27) found these untested: the published files of those GPUs hold
only 4 nonzero products or normal-range data, so they cannot tell L = 4 from 8 or a zero
anchor from its neighbour.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from precision import mma

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


@pytest.mark.parametrize(
    ("arch", "op", "shape", "fmt", "dtype"),
    [
        ("sm70", "wmma", (16, 16, 16), None, np.float16),  # §8.4.2 V100: L = 4, F = 23
        ("sm80", "mma", (16, 8, 8), "tf32", np.float32),  # §8.4.2 A100 tf32: L = 4, F = 24
        ("sm89", "mma", (16, 8, 8), "tf32", np.float32),  # §3.3: Ada L = 16 bytes / 4 = 4
    ],
)
def test_block_of_four_keeps_an_earlier_blocks_low_bits(arch, op, shape, fmt, dtype):
    """Four products 2^-25 (k = 0..3) then 1 (k = 4), c = +0, fp32 d.

    L = 4 (chained blocks, §8.4.1): block 1 sums the four products exactly to 2^-23 (its anchor
    is -25), RZ-FP32 keeps it; block 2 has E = 0 and 2^-23 is a multiple of 2^(0 - F) for
    F = 23 and 24, so d = 1 + 2^-23 (fp32-exact). One block of 8 would truncate each 2^-25 to 0
    on the grid 2^(0 - F) and give 1.
    """
    m, n, k = shape
    a = np.zeros((m, k), dtype)
    b = np.zeros((k, n), dtype)
    a[0, :4], b[:4, 0] = 2.0**-12, 2.0**-13
    a[0, 4], b[4, 0] = 1.0, 1.0
    kw = {"fmt": fmt} if fmt else {}
    d = mma(a, b, np.zeros((m, n), np.float32), arch=arch, op=op, shape=shape, **kw)
    assert Fraction(float(d[0, 0])) == 1 + Fraction(1, 2**23)


@pytest.mark.parametrize("arch", ["sm70", "sm75"])
def test_m8n8k4_f16_c_f32_d_takes_the_zero_anchor_of_d(arch):
    """mma.sync m8n8k4 with f16 c = +0 and f32 d (MMA-Sim t_fdpa, §3.2/§3.3: e_zero follows the
    output format; Volta f32 -131, Turing runs m8n8k4 with Volta settings). One product
    p = (2^-12 (1 + 2^-10))^2 = 2^-24 (1 + 2^-9 + 2^-20), anchor -24 > -131, so E = -24 and the
    grid 2^(-24 - 23) keeps p exactly; fp32 holds it (20 fraction bits). With f16's e_zero
    (-19) the grid 2^-42 would drop its 2^-44 bit."""
    a = np.zeros((8, 4), np.float16)
    b = np.zeros((4, 8), np.float16)
    x = Fraction(1, 2**12) * (1 + Fraction(1, 2**10))
    a[0, 0] = b[0, 0] = float(x)
    d = mma(a, b, np.zeros((8, 8), np.float16), arch=arch, op="mma", shape=(8, 8, 4), d_fmt="fp32")
    assert d.dtype == np.float32
    assert Fraction(float(d[0, 0])) == x * x


def test_sm100_f16_zero_anchor_is_minus_21():
    """sm100 f16 -> f16, c = +0 (§3.3 and §8.4.2 B200 mma.sync: F = 25, e_zero -21).
    Products 2^-11 * 2^-14 = 2^-25 (anchor -25) and 2^-k * 2^-24 = 2^-(k+24) (anchor <= -28):
    E = -21, grid 2^-46, so the small term survives for k <= 22 and the sum, just above half of
    the smallest fp16 subnormal, rounds (RNE) to 2^-24 (bits 0x0001); for k = 23 the exact tie
    2^-25 rounds to even, +0. With e_zero -20 the flip moves to k = 21 / 22."""

    def run(k):
        a = np.zeros((16, 16), np.float16)
        b = np.zeros((16, 8), np.float16)
        a[0, :2] = [2.0**-11, 2.0**-k]
        b[:2, 0] = [2.0**-14, 2.0**-24]
        d = mma(a, b, np.zeros((16, 8), np.float16), arch="sm100")
        return int(d[0, 0].view(np.uint16))

    assert [run(k) for k in (21, 22, 23)] == [1, 1, 0]


def test_satfinite_clamps_a_chain_that_only_overflows_after_several_instructions():
    """s8 m16n8k32 .satfinite, K = 64 (two instructions), c = 2^31 - 2^19 - 1, every product
    (-128)(-128) = 2^14: each instruction adds 32 * 2^14 = 2^19 (no single one overflows from
    c), but the chain does: PTX .satfinite clamps after each instruction (§6), so d =
    clamp(clamp(c + 2^19) + 2^19) = 2^31 - 1, where wrapping gives c + 2^20 - 2^32."""
    c0 = 2**31 - 2**19 - 1
    for arch in ("sm80", "sm89", "sm90"):
        a = np.full((16, 64), -128, np.int8)
        b = np.full((64, 8), -128, np.int8)
        c = np.full((16, 8), c0, np.int32)
        exp = c0
        for _ in range(2):
            exp = min(max(exp + 32 * 128 * 128, INT32_MIN), INT32_MAX)
        d = mma(a, b, c, arch=arch, satf=True)
        assert (d.astype(np.int64) == exp).all(), arch
        wrap = mma(a, b, c, arch=arch)
        assert int(wrap[0, 0]) == c0 + 2**20 - 2**32, arch


@pytest.mark.parametrize(
    ("arch", "op", "shape"), [("sm80", "mma", (16, 8, 16)), ("sm70", "wmma", (16, 16, 16))]
)
def test_fp_satf_acts_per_instruction_not_per_block(arch, op, shape):
    """f16 -> f16 with satf=True. Block 1 (k = 0..7 on sm80's L = 8; k = 0..3 twice on sm70's
    L = 4) sums 256 * 256 products to >= 2^18, which RNE-FP16 sends to +Inf (§8.3); the next
    block adds c = +Inf to finite products: +Inf (§8.2 specials). The instruction ends at +Inf,
    and satf (+Inf -> +MAX_NORM, §6) gives 65504. Saturating after block 1 would instead carry
    65504 on and subtract 8 * 1024."""
    m, n, k = shape
    a = np.zeros((m, k), np.float16)
    b = np.zeros((k, n), np.float16)
    a[0, :8], b[:8, 0] = 256.0, 256.0
    a[0, 8:16], b[8:16, 0] = 1.0, -1024.0
    d = mma(a, b, np.zeros((m, n), np.float16), arch=arch, op=op, shape=shape, satf=True)
    assert float(d[0, 0]) == 65504.0


def test_sm100_f32_zero_anchor_is_minus_133():
    """sm100 bf16 -> f32, c = +0 (§3.3, §8.4.2 B200: F = 25, e_zero -133). Products
    2^-23 * 2^-126 = 2^-149 and -2^-k * 2^-126 = -2^-(k+126): E = -133, grid 2^-158. For
    k = 32 the small term is kept and RZ-FP32 of 2^-149 - 2^-158 is +0; for k = 33 it is
    truncated to 0 and d = 2^-149 (bits 0x00000001). With e_zero -132 the flip moves to
    k = 31 / 32."""
    import ml_dtypes

    def run(arch, k):
        a = np.zeros((16, 16), ml_dtypes.bfloat16)
        a[0, :2] = [2.0**-23, -(2.0**-k)]
        b = np.zeros((16, 8), ml_dtypes.bfloat16)
        b[:2, 0] = 2.0**-126
        return int(mma(a, b, np.zeros((16, 8), np.float32), arch=arch)[0, 0].view(np.uint32))

    for arch in ("sm90", "sm100"):
        assert [run(arch, k) for k in (32, 33)] == [0, 1], arch


@pytest.mark.parametrize("arch", ["sm90", "sm100"])
def test_tf32_m16n8k8_is_one_block_of_eight(arch):
    """mma.sync m16n8k8 tf32 (§8.4.2: H100/H200 and B200 mma.sync tf32 L = 8, F = 25).
    Products 1 (k = 0), 2^-24 (k = 1) and 2^-24 (k = 4), c = +0: one block, E = 0, grid 2^-25
    keeps both small products, d = 1 + 2^-23 (fp32-exact). Two blocks of 4 would each round
    1 + 2^-24 toward zero to 1 and give 1."""
    a = np.zeros((16, 8), np.float32)
    b = np.zeros((8, 8), np.float32)
    a[0, 0] = b[0, 0] = 1.0
    a[0, [1, 4]] = 2.0**-12
    b[[1, 4], 0] = 2.0**-12
    d = mma(a, b, np.zeros((16, 8), np.float32), arch=arch, fmt="tf32", shape=(16, 8, 8))
    assert Fraction(float(d[0, 0])) == 1 + Fraction(1, 2**23)


@pytest.mark.parametrize("shape", [(16, 8, 32), (16, 8, 16)])
def test_sm89_fp8_blocks_have_13_fraction_bits(shape):
    """Ada QMMA (§3.3 "Ada fp8: F = 13 and RZ-E8M13"; §8.4.2 Ada row), both m16n8k32 and
    m16n8k16: e5m2 products 1 and 2^-7 * 2^-7 = 2^-14, c = +0. E = 0, grid 2^-13: the 2^-14
    term is truncated to 0 and d = 1. Products 1 and 2^-13 give 1 + 2^-13 (kept on the grid
    and representable in e8m13). F = 24 with an fp32 output would give 1 + 2^-14."""
    import ml_dtypes

    m, n, k = shape

    def run(small):
        a = np.zeros((m, k), ml_dtypes.float8_e5m2)
        b = np.zeros((k, n), ml_dtypes.float8_e5m2)
        a[0, :2] = [1.0, small[0]]
        b[:2, 0] = [1.0, small[1]]
        d = mma(a, b, np.zeros((m, n), np.float32), arch="sm89", shape=shape)
        return Fraction(float(d[0, 0]))

    assert run((2.0**-7, 2.0**-7)) == 1
    assert run((2.0**-6, 2.0**-7)) == 1 + Fraction(1, 2**13)


@pytest.mark.parametrize("arch", ["sm70", "sm75"])
def test_m8n8k4_uses_voltas_f_23(arch):
    """mma.sync m8n8k4 f16 -> f32 (§8.4.2 V100 row: F = 23; §3.3 "Turing executing m8n8k4
    falls back to Volta settings"). Products 1, 2^-24, 2^-24, c = +0: E = 0, grid 2^-23, both
    small terms truncate to 0, d = 1. With F = 24 they would be kept: 1 + 2^-23."""
    a = np.zeros((8, 4), np.float16)
    b = np.zeros((4, 8), np.float16)
    a[0, :3] = [1.0, 2.0**-12, 2.0**-12]
    b[:3, 0] = [1.0, 2.0**-12, 2.0**-12]
    d = mma(a, b, np.zeros((8, 8), np.float32), arch=arch, op="mma", shape=(8, 8, 4))
    assert float(d[0, 0]) == 1.0
