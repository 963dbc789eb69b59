"""GPU engine: bit-identical to the CPU engine (the executable definition of the arithmetic)."""

from __future__ import annotations

import zlib
from importlib import import_module

import ml_dtypes
import numpy as np
import pytest

from precision import mma
from precision.runner.commands.bench import FORMATS
from precision.tensorcore.gpu_engine import _fp8_permutation

# name -> (input dtype, accumulator dtype, fmt): the benchmark's GPU-engine formats plus fp8
# with f16 acc
_mma_module = import_module("precision.tensorcore.chain")
CASES = {
    **FORMATS,
    "e4m3_f16acc": (ml_dtypes.float8_e4m3fn, np.float16, None),
}


def test_fp8_permutation_matches_the_cpu_engine_order():
    g1, g2 = _mma_module._fp8_order(32)
    perm = _fp8_permutation(96, 32)
    np.testing.assert_array_equal(perm[:32], np.concatenate([g1, g2]))
    np.testing.assert_array_equal(perm[64:], np.concatenate([g1, g2]) + 64)


def _operands(name: str, m: int, k: int, n: int, rng, *, specials: bool, wide: bool):
    in_dt, acc_dt, _ = CASES[name]
    if in_dt in (np.int8, np.uint8):
        bits = {"int4": 4, "uint1": 1}.get(CASES[name][2] or "", 8)
        lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1)) if in_dt is np.int8 else (0, 2**bits)
        a = rng.integers(lo, hi, (m, k)).astype(in_dt)
        b = rng.integers(lo, hi, (k, n)).astype(in_dt)
        c = rng.integers(-(2**31), 2**31, (m, n)).astype(np.int32)
        return a, b, c
    spread = 2.0 ** rng.integers(-12, 12, (m, k)) if wide else 1.0
    a = rng.standard_normal((m, k)) * spread
    b = rng.standard_normal((k, n)) * (2.0 ** rng.integers(-12, 12, (k, n)) if wide else 1.0)
    if in_dt is np.float32:  # tf32: arbitrary low 13 bits must be ignored
        a, b = a.astype(np.float32), b.astype(np.float32)
    else:
        a, b = a.astype(in_dt), b.astype(in_dt)
    a[rng.random((m, k)) < 0.1] = 0
    c = (rng.standard_normal((m, n)) * 4).astype(acc_dt)
    c[rng.random((m, n)) < 0.1] = 0
    if specials:
        for x, vals in (
            (a, (np.inf, -np.inf, np.nan)),
            (b, (np.inf, np.nan, 0.0)),
            (c, (np.inf, -np.inf, np.nan)),
        ):
            idx = rng.integers(0, x.size, 3)
            for i, v in zip(idx, vals, strict=True):
                x.flat[i] = v
    return a, b, c


def _same_bits(x: np.ndarray, y: np.ndarray) -> None:
    assert x.dtype == y.dtype and x.shape == y.shape
    u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize]
    bad = x.view(u) != y.view(u)
    assert not bad.any(), f"{bad.sum()} differ, first at {np.argwhere(bad)[:3].tolist()}"


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("specials", [False, True])
@pytest.mark.parametrize("satf", [False, True])
def test_gpu_equals_cpu(name, specials, satf):
    if name in ("int8", "u8", "s4", "b1") and specials:
        pytest.skip("integers have no special values")
    if name in ("b1", "f64") and satf:
        pytest.skip("b1 and f64 mma have no satf (refused on both engines)")
    rng = np.random.default_rng(zlib.crc32(f"{name}/{specials}/{satf}".encode()))  # fixed per case
    k = 512 if name == "b1" else 128  # whole instructions: b1's k is 256
    a, b, c = _operands(name, 67, k, 45, rng, specials=specials, wide=True)
    fmt = CASES[name][2]
    cpu = mma(a, b, c, fmt=fmt, satf=satf)
    gpu = mma(a, b, c, fmt=fmt, satf=satf, device="gpu")
    _same_bits(cpu, gpu)


def test_an_instruction_the_engine_lacks_is_refused_by_name():
    """Refused before any GPU is needed, naming what the engine lacks and the way out (every
    instruction of every shipped model runs on the engine: a variant with 64-product blocks
    stands in)."""
    import dataclasses

    from precision.tensorcore import ArchModel, get_arch

    ins = get_arch("sm90").instruction("fp16", "fp32")
    wide = dataclasses.replace(ins, block=64, shape=(16, 8, 64))
    model = ArchModel("sm90-variant", "64-product blocks", "none", {wide.key: wide})
    a, b = np.ones((16, 64), np.float16), np.ones((64, 8), np.float16)
    c = np.zeros((16, 8), np.float32)
    with pytest.raises(ValueError, match=r"device='gpu' cannot run blocks of 64 products"):
        mma(a, b, c, arch=model, device="gpu")
    assert mma(a, b, c, arch=model).shape == (16, 8)  # the CPU engine runs it


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["f16", "bf16", "f16acc", "e5m2"])
def test_gpu_equals_cpu_overflow_and_underflow(name):
    """Values near both ends of the accumulator range: overflow to Inf, subnormal results."""
    rng = np.random.default_rng(1)
    in_dt, acc_dt, _ = CASES[name]
    scale = 2.0 ** rng.integers(-40, 40, (32, 64))
    with np.errstate(over="ignore"):  # fp16 inputs beyond 65504 are meant to become Inf
        a = (rng.standard_normal((32, 64)) * scale).astype(in_dt)
        b = (rng.standard_normal((64, 16)) * 2.0 ** rng.integers(-40, 40, (64, 16))).astype(in_dt)
        c = rng.standard_normal((32, 16)) * 2.0 ** rng.integers(-140, 120, (32, 16))
        c = np.clip(c, -1e38, 1e38).astype(acc_dt)
    for satf in (False, True):
        _same_bits(mma(a, b, c, satf=satf), mma(a, b, c, satf=satf, device="gpu"))


@pytest.mark.gpu
def test_gpu_batched_and_broadcast():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 20, 32)).astype(np.float16)
    b = rng.standard_normal((32, 24)).astype(np.float16)
    c = np.zeros((20, 24), np.float32)
    _same_bits(mma(a, b, c), mma(a, b, c, device="gpu"))


@pytest.mark.gpu
def test_gpu_large_random_chain_f16():
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (256, 1024)).astype(np.float16)
    b = rng.uniform(-1, 1, (1024, 192)).astype(np.float16)
    c = np.zeros((256, 192), np.float32)
    _same_bits(mma(a, b, c), mma(a, b, c, device="gpu"))


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("da", "db"),
    [
        (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2),
        (ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn),
    ],
)
@pytest.mark.parametrize("acc", [np.float32, np.float16])
def test_gpu_equals_cpu_mixed_fp8(da, db, acc):
    """Each operand decoded in its own format on both engines (subnormals of both formats)."""
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((40, 96)) * 2.0 ** rng.integers(-14, 4, (40, 96))).astype(da)
    b = (rng.standard_normal((96, 24)) * 2.0 ** rng.integers(-20, 4, (96, 24))).astype(db)
    c = (rng.standard_normal((40, 24)) * 2.0**-10).astype(acc)
    _same_bits(mma(a, b, c), mma(a, b, c, device="gpu"))
    # subnormal e4m3 factors of the block maximum (they anchor as the f16 values they become)
    if da is ml_dtypes.float8_e4m3fn:
        sub = rng.choice([2.0**-7, 2.0**-8, 2.0**-9, -(2.0**-8)], (40, 96)).astype(da)
        big = (rng.standard_normal((96, 24)) * 2.0 ** rng.integers(-12, 15, (96, 24))).astype(db)
        _same_bits(mma(sub, big, c), mma(sub, big, c, device="gpu"))
    # the hand-computed case of tests/tensorcore/test_mma_api.py: 2^-8 + 2^-25
    if da is ml_dtypes.float8_e4m3fn and acc is np.float32:
        a1, b1 = np.zeros((1, 32), da), np.zeros((32, 1), db)
        a1[0, 0], b1[0, 0], a1[0, 1], b1[1, 0] = 256.0, 2.0**-16, 2.0**-9, 2.0**-16
        d = mma(a1, b1, np.zeros((1, 1), acc), device="gpu")
        assert d[0, 0] == np.float32(2.0**-8 + 2.0**-25)


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["wgmma", "mma"])
@pytest.mark.parametrize("specials", [False, True])
def test_gpu_equals_cpu_fp8_wgmma_and_k16(op, specials):
    """fp8 as Hopper's wgmma computes it (one 32-product block, F = 13, e8m13 output) and as
    mma.sync m16n8k16 (two f16 blocks of 8 products each, then an fp32 add)."""
    rng = np.random.default_rng(5 + specials)
    a = (rng.standard_normal((40, 96)) * 2.0 ** rng.integers(-14, 6, (40, 96))).astype(
        ml_dtypes.float8_e4m3fn
    )
    b = (rng.standard_normal((96, 24)) * 2.0 ** rng.integers(-14, 6, (96, 24))).astype(
        ml_dtypes.float8_e5m2
    )
    c = (rng.standard_normal((40, 24)) * 8).astype(np.float32)
    if specials:
        b[3, 5], b[7, 6], c[2, 2] = np.inf, np.nan, -np.inf
    shape = None if op == "wgmma" else (16, 8, 16)
    for satf in (False, True):
        cpu = mma(a, b, c, op=op, shape=shape, satf=satf)
        _same_bits(cpu, mma(a, b, c, op=op, shape=shape, satf=satf, device="gpu"))


@pytest.mark.gpu
@pytest.mark.parametrize("satf", [False, True])
def test_gpu_equals_cpu_mixed_signedness_int8(satf):
    """s8 x u8 and u8 x s8 (each operand decoded in its own signedness), wrap and .satfinite."""
    rng = np.random.default_rng(6)
    s8 = rng.integers(-128, 128, (33, 96)).astype(np.int8)
    u8 = rng.integers(0, 256, (96, 20)).astype(np.uint8)
    c = rng.integers(-(2**31), 2**31, (33, 20)).astype(np.int32)
    _same_bits(mma(s8, u8, c, satf=satf), mma(s8, u8, c, satf=satf, device="gpu"))
    u8a, s8b = u8.T.copy(), s8.T.copy()
    c2 = c.T.copy()
    _same_bits(mma(u8a, s8b, c2, satf=satf), mma(u8a, s8b, c2, satf=satf, device="gpu"))


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("fmt", "shape"), [(None, (16, 8, 16)), (None, (16, 8, 32)), ("int4", (16, 8, 64))]
)
def test_gpu_integer_satfinite_clamps_once_per_instruction(fmt, shape):
    """.satfinite clamps after each instruction (16, 32 or 64 products), not after each of the
    engine's partial sums (16 or 32 products). c is near INT32_MAX and the products' sign
    flips every min(k, 32) of them, so clamping at any other step changes the result."""
    k = shape[2]
    period = min(k, 32)
    sign = np.where((np.arange(64) // period) % 2 == 0, 7, -7).astype(np.int8)
    a = np.tile(sign, (16, 1))
    b = np.full((64, 8), 7, np.int8)
    c = np.full((16, 8), 2**31 - 100, np.int32)
    want = 2**31 - 100  # exact per-instruction sums, clamped after each instruction
    for k0 in range(0, 64, k):
        want = min(
            max(want + 49 * int(sign[k0 : k0 + k].astype(int).sum() // 7), -(2**31)), 2**31 - 1
        )
    cpu = mma(a, b, c, fmt=fmt, shape=shape, satf=True)
    assert int(cpu[0, 0]) == want
    _same_bits(cpu, mma(a, b, c, fmt=fmt, shape=shape, satf=True, device="gpu"))


@pytest.mark.gpu
@pytest.mark.parametrize("bitop", ["xor.popc", "and.popc"])
@pytest.mark.parametrize("shape", [(16, 8, 256), (8, 8, 128)])
def test_gpu_equals_cpu_single_bit(bitop, shape):
    """b1 and/xor popc on both engines; only bit 0 of each uint8 container counts, so the
    upper bits are filled with noise. c near the int32 limits checks the wrap."""
    rng = np.random.default_rng(7)
    a = rng.integers(0, 256, (24, 512)).astype(np.uint8)
    b = rng.integers(0, 256, (512, 16)).astype(np.uint8)
    c = rng.integers(-(2**31), 2**31, (24, 16)).astype(np.int32)
    cpu = mma(a, b, c, fmt="b1", shape=shape, bitop=bitop)
    _same_bits(cpu, mma(a, b, c, fmt="b1", shape=shape, bitop=bitop, device="gpu"))


def test_single_bit_satfinite_is_refused_on_both_engines():
    a, b = np.zeros((16, 256), np.uint8), np.zeros((256, 8), np.uint8)
    c = np.zeros((16, 8), np.int32)
    for device in ("cpu", "gpu"):
        with pytest.raises(ValueError, match="single-bit mma has no .satfinite"):
            mma(a, b, c, fmt="b1", bitop="xor.popc", satf=True, device=device)


def _f64_with_specials(rng, shape):
    """float64 values over a wide range with zeros, ±Inf, quiet and signalling NaNs (random
    payloads and signs)."""
    x = rng.standard_normal(shape) * 2.0 ** rng.integers(-540, 500, shape)
    u = x.view(np.uint64)
    pick = rng.random(shape)
    u[pick < 0.004] = 0x7FF0000000000000  # +Inf
    u[(pick >= 0.004) & (pick < 0.008)] = 0xFFF0000000000000  # -Inf
    nan = (pick >= 0.008) & (pick < 0.015)
    payload = rng.integers(1, 1 << 51, shape).astype(np.uint64)
    sign = rng.integers(0, 2, shape).astype(np.uint64) << np.uint64(63)
    quiet = rng.integers(0, 2, shape).astype(np.uint64) << np.uint64(51)
    u[nan] = (sign | np.uint64(0x7FF0000000000000) | quiet | payload)[nan]
    x[(pick >= 0.015) & (pick < 0.065)] = 0.0
    return x


@pytest.mark.gpu
def test_gpu_equals_cpu_f64_with_nan_payloads():
    """f64 DMMA on both engines: binary64 FMA chain, and every NaN output's payload (NaN
    operands in b, d, a priority; Inf*0 and Inf - Inf give the negative default NaN)."""
    rng = np.random.default_rng(8)
    a, b = _f64_with_specials(rng, (2, 33, 40)), _f64_with_specials(rng, (40, 17))
    c = _f64_with_specials(rng, (33, 17))
    cpu = mma(a, b, c, shape=(16, 8, 4))
    assert np.isnan(cpu).sum() > 100 and np.isfinite(cpu).sum() > 100  # both kinds, plenty
    _same_bits(cpu, mma(a, b, c, shape=(16, 8, 4), device="gpu"))


def test_f64_satf_is_refused_on_both_engines():
    a, b, c = np.zeros((8, 4)), np.zeros((4, 8)), np.zeros((8, 8))
    for device in ("cpu", "gpu"):
        with pytest.raises(ValueError, match="satf is not defined for f64"):
            mma(a, b, c, shape=(8, 8, 4), satf=True, device=device)


def _model_instructions():
    from precision.tensorcore import ARCHS, get_arch

    out = []
    for arch in ARCHS:
        model = get_arch(arch)
        for ins in list(model.instructions.values()) + list(model.alternates):
            if not ins.c_fmt:  # c and d in different formats: one instruction, CPU only
                out.append(pytest.param(arch, ins, id=f"{arch}-{ins.ptx}"))
    return out


def _random_operand(fmt: str, shape: tuple[int, int], rng) -> np.ndarray:
    from precision.formats import get_format

    f = get_format(fmt)
    if f.is_integer:
        return rng.integers(int(f.min_value), int(f.max_normal) + 1, shape).astype(f.storage)
    x = rng.standard_normal(shape) * 2.0 ** rng.integers(-8, 8, shape)
    x[rng.random(shape) < 0.1] = 0.0
    if fmt == "fp64":
        return x
    if fmt == "tf32":  # random low bits, which the tensor cores ignore
        bits = x.astype(np.float32).view(np.uint32) ^ rng.integers(0, 1 << 13, shape, np.uint32)
        return bits.view(np.float32)
    return x.astype(np.float32).astype(f.storage)


def test_every_model_instruction_is_on_the_gpu_engine():
    """Runs on the CPU: every instruction of every shipped model (but the two whose c and d
    differ in format) has a GPU kernel, so the GPU test below covers them all."""
    from precision.tensorcore.gpu_engine import unsupported

    params = _model_instructions()
    assert len(params) == 195
    assert all(unsupported(p.values[1]) is None for p in params)


@pytest.mark.gpu
@pytest.mark.parametrize(("arch", "ins"), _model_instructions())
def test_every_model_instruction_gpu_equals_cpu(arch, ins):
    """Each instruction of each model, on random operands over its format's range (fp64 with
    NaN payloads and Infs, tf32 with noise in the ignored bits), K = 2 instructions, odd M and
    N, with and without satf where it exists: both engines, bit for bit."""
    rng = np.random.default_rng(zlib.crc32(f"{arch}/{ins.ptx}/{ins.shape}".encode()))
    m, k, n = 19, 2 * ins.k, 13
    a = _random_operand(ins.a_fmt, (m, k), rng)
    b = _random_operand(ins.b_fmt, (k, n), rng)
    if ins.acc_fmt == "fp64":
        a, b = _f64_with_specials(rng, (m, k)), _f64_with_specials(rng, (k, n))
    c = _random_operand(ins.acc_fmt, (m, n), rng)
    kw = dict(arch=arch, fmt=ins.a_fmt, b_fmt=ins.b_fmt, op=ins.family, shape=ins.shape)
    kw["bitop"] = ins.bitop or None
    for satf in (False, True) if not (ins.bitop or ins.acc_fmt == "fp64") else (False,):
        cpu = mma(a, b, c, satf=satf, **kw)
        _same_bits(cpu, mma(a, b, c, satf=satf, device="gpu", **kw))


def test_out_of_range_4bit_operands_are_refused_on_both_engines():
    """int4 travels in int8 containers: a container value outside [-8, 7] is refused before
    either engine runs (the GPU engine would otherwise multiply the container's value)."""
    a, b = np.zeros((16, 64), np.int8), np.zeros((64, 8), np.int8)
    a[3, 5] = 9
    c = np.zeros((16, 8), np.int32)
    for device in ("cpu", "gpu"):
        with pytest.raises(ValueError, match=r"a holds values outside int4's range \[-8, 7\]"):
            mma(a, b, c, fmt="int4", device=device)
