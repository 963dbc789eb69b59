"""GPU engine for :func:`precision.tensorcore.mma`: the fused-block arithmetic as CUDA kernels.

``mma_gpu`` computes exactly what the CPU engine (:mod:`precision.tensorcore.fdpa` driven by
:mod:`precision.tensorcore.mma`) computes, for every output element, on CUDA cores with integer
arithmetic only (gpu_engine.cu). Per fused block of ``L`` products: exact products of the
inputs' integer significands, block anchor ``E`` = max(``e_zero``, anchor of ``c``, anchors of
nonzero products), every term truncated toward zero to a multiple of ``2**(E - F)`` and summed
exactly (int32 products, int64 with ``c``), one rounding into the accumulator format (fp32 RZ,
fp32 RZ with 13 fraction bits, or fp16 RNE; overflow to ±Inf; exact zero +0), IEEE specials
resolved per block (NaN canonical 0x7FFFFFFF / 0x7FFF). The fp8 schedule of sm_90 (two
interleaved blocks of k/2 products from ``c = +0`` then an RN add of ``c``), the integers
(8- and 4-bit, exact, each instruction's sum wrapped or ``.satfinite``-clamped once) and b1
(and/xor popc) are included; FP ``satf`` clamps after every instruction. f64 (DMMA) is its
own kernel, ``mma_f64``: a chain of binary64 ``fma`` in increasing k with the H200's NaN payload
rule at each step (:mod:`precision.tensorcore.dmma_nan`).

Because no fp32/fp16 floating-point instruction touches the data (the fp8 RN add goes through an
exact or innocuously double-rounded float64 sum, Boldo–Melquiond: 53 ≥ 2·24 + 2; ``-ftz``
applies to fp32 only, not to the f64 chain), CuPy's forced ``-ftz`` under NVRTC cannot change a
result; the source is compiled with NVRTC at first use.
"""

from __future__ import annotations

import functools
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from precision.formats import Format, get_format
from precision.gpu import require_gpu
from precision.tensorcore.arch import Instruction

_SOURCE = Path(__file__).with_name("gpu_engine.cu")
_SPECIAL_CODE = 30000  # decoded exponent of Inf (NaN is 30001), see gpu_engine.cu
_TILE = 64
_THREADS = 256

#: ``decode_operand``'s format code per operand format (the ``switch (fmt)`` of
#: gpu_engine.cu; field widths there equal the registry's, see tests/formats/test_registry.py).
#: Raw bits travel in the format's container dtype, ``Format.bits_dtype``.
_DECODE_CODE: dict[str, int] = {
    "fp16": 0,
    "bf16": 1,
    "tf32": 2,
    "e4m3": 3,
    "e5m2": 4,
    "int8": 5,
    "uint8": 7,
    "int4": 5,  # 4-bit integers travel in int8 / uint8 containers (the registry's storage)
    "uint4": 7,
    "uint1": 7,  # one bit per uint8 element; the b1 kernels use bit 0 only
}
#: decode_operand's code for e4m3 under the fp8 -> f16 lowering (subnormals anchor as f16s).
_E4M3_AS_F16 = 6
#: Accumulator formats of the kernels (``c`` and ``d`` travel as ``Format.bits_dtype``).
_ACC_FORMATS: tuple[str, ...] = ("fp32", "fp16", "int32")
#: ``round_exact``'s output mode per (accumulator format, ``Instruction.out_rounding``), as in
#: gpu_engine.cu ``out_fmt``: 0 fp32 RZ, 1 fp32 RZ to 13 fraction bits, 2 fp16 RNE (int32 wraps;
#: the mode is unused there).
_OUT_MODE: dict[tuple[str, str], int] = {
    ("fp32", "rz"): 0,
    ("fp32", "rz_e8m13"): 1,
    ("fp16", "rne"): 2,
    ("int32", "wrap"): 0,
}


def unsupported(ins: Instruction) -> str | None:
    """Why the GPU engine cannot run instruction ``ins``, or None if it can. It decodes fp16,
    bf16, tf32, e4m3, e5m2, int8, uint8, int4, uint4 and uint1 (b1, and/xor popc) operands into
    fp32, fp16 or int32 accumulators, with floating-point blocks of 4, 8, 16 or 32 products
    (32: Hopper's fp8 ``wgmma``) and integer instructions of k = 16 to 256; and fp64 DMMA as
    its binary64 FMA chain with the hardware's NaN payloads."""
    if ins.schedule == "fma_chain":  # f64 DMMA: the binary64 FMA chain of mma_f64
        if (ins.a_fmt, ins.b_fmt, ins.acc_fmt) == ("fp64", "fp64", "fp64"):
            return None
        return f"an FMA chain of {ins.a_fmt} x {ins.b_fmt} -> {ins.acc_fmt}"
    for f in (ins.a_fmt, ins.b_fmt):
        if f not in _DECODE_CODE:
            return f"operands in {f} (the GPU engine decodes {', '.join(_DECODE_CODE)})"
    if ins.acc_fmt not in _ACC_FORMATS:
        return f"a {ins.acc_fmt} accumulator (the GPU engine has {', '.join(_ACC_FORMATS)})"
    if ins.is_integer and ins.k not in (16, 32, 64, 128, 256):
        return f"integer instructions of k = {ins.k} (the GPU engine has k = 16 … 256)"
    if ins.bitop not in ("", "and.popc", "xor.popc"):
        return f"the bit operation {ins.bitop!r}"
    if not ins.is_integer and ins.block not in (4, 8, 16, 32):
        return f"blocks of {ins.block} products (the GPU engine has 4, 8, 16 or 32)"
    if not ins.is_integer and ins.frac_bits + 2 + (ins.block - 1).bit_length() > 31:
        return f"{ins.frac_bits} fraction bits (too wide for the engine's int32 block sums)"
    return None


def _operand_format(dtype: np.dtype) -> Format | None:
    """The operand format that an array of ``dtype`` carries (float32 carries tf32: the tensor
    cores read the top 19 bits of the fp32 container), or None if the engine has none."""
    try:
        f = get_format(dtype)
    except ValueError:
        return None
    if f.name == "fp32":
        f = get_format("tf32")
    return f if f.name in _DECODE_CODE else None


@functools.cache
def _module() -> Any:
    cp = require_gpu("the GPU emulation engine")
    return cp.RawModule(code=_SOURCE.read_text(), options=("-std=c++17",))


def _bits(cp: ModuleType, x: Any, name: str) -> tuple[Any, int]:
    """Raw bit patterns of ``x`` on the device and its decode format code."""
    dtype = np.dtype(x.dtype)
    f = _operand_format(dtype)
    if f is None:
        valid = sorted({get_format(n).storage.name for n in _DECODE_CODE})
        raise TypeError(f"{name} has dtype {dtype}; expected one of {valid}")
    code, raw = _DECODE_CODE[f.name], f.bits_dtype
    if isinstance(x, cp.ndarray):
        return cp.ascontiguousarray(x).view(raw), code
    return cp.asarray(np.ascontiguousarray(x).view(raw)), code


def _decode(cp: ModuleType, bits: Any, code: int, pre: int) -> tuple[Any, Any]:
    """int32 significand (normalised to 11 bits, times 2^pre) and anchor exponent arrays."""
    sig = cp.empty(bits.shape, dtype=cp.int32)
    ex = cp.empty(bits.shape, dtype=cp.int32)
    n = bits.size
    if n:
        _module().get_function("decode_operand")(
            ((n + 255) // 256,),
            (256,),
            (bits, np.int32(code), np.int64(n), np.int32(pre), sig, ex),
        )
    return sig, ex


def _batched(cp: ModuleType, x: Any, batch: tuple[int, ...], r: int) -> tuple[Any, int]:
    """``x`` as [R or 1, rows, cols] (broadcast batch kept at stride 0 when x has none)."""
    rows, cols = x.shape[-2:]
    if int(np.prod(x.shape[:-2], dtype=np.int64)) == 1:
        return x.reshape(1, rows, cols), 0
    x = cp.ascontiguousarray(cp.broadcast_to(x, batch + (rows, cols)))
    return x.reshape(r, rows, cols), rows * cols


def _fp8_permutation(k: int, ins_k: int) -> np.ndarray:
    """Column order putting each instruction's k mod 4 ∈ {0,1} block before its {2,3} block."""
    idx = np.arange(ins_k)
    one = np.concatenate([idx[idx % 4 < 2], idx[idx % 4 >= 2]])
    return (np.arange(0, k, ins_k)[:, None] + one[None, :]).ravel()


def _mma_f64(cp: ModuleType, a: Any, b: Any, c: Any, batch: tuple[int, ...], r: int) -> Any:
    """f64 DMMA chain on the GPU (``mma_f64``): binary64 FMAs in increasing k with the H200's
    NaN payloads, bit-identical to the CPU engine's ``fma_chain`` + ``nan_payloads``. ``batch``
    is the broadcast batch shape, ``r`` its size; the result is in ``c``'s array module."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    a_dev, s_a = _batched(cp, cp.ascontiguousarray(cp.asarray(a, dtype=cp.float64)), batch, r)
    b_dev, s_b = _batched(cp, cp.ascontiguousarray(cp.asarray(b, dtype=cp.float64)), batch, r)
    c_dev = cp.asarray(c, dtype=cp.float64)
    c_dev = cp.ascontiguousarray(cp.broadcast_to(c_dev, batch + (m, n))).reshape(r, m, n)
    d_dev = cp.empty_like(c_dev)
    tile = 16  # F64_TILE of gpu_engine.cu
    if r and m and n:
        _module().get_function("mma_f64")(
            ((n + tile - 1) // tile, (m + tile - 1) // tile, r),
            (tile, tile),
            (a_dev, b_dev, c_dev, d_dev, np.int32(m), np.int32(n), np.int32(k), np.int64(s_a),
             np.int64(s_b), np.int64(m * n)),
        )  # fmt: skip
    out = d_dev.reshape(batch + (m, n))
    return out if isinstance(c, cp.ndarray) else cp.asnumpy(out)


def mma_gpu(a: Any, b: Any, c: Any, *, instruction: Instruction, satf: bool = False) -> Any:
    """Bit-exact chain of MMA ``instruction`` s, ``a·b + c``, computed on the GPU.

    ``a [..., M, K]``, ``b [..., K, N]``, ``c [..., M, N]`` as for :func:`precision.mma`
    (numpy arrays, or CuPy arrays in the formats' storage dtypes, fp8 excepted: CuPy has no
    float8 dtype, so fp8 operands come as numpy arrays);
    validation of formats and shapes is the caller's (``mma`` does it). Returns ``c``'s dtype,
    as numpy when ``c`` is numpy, else as CuPy. Results are bit-identical to the CPU engine.
    """
    cp = require_gpu("mma(device='gpu')")
    ins = instruction
    reason = unsupported(ins)
    if reason:
        raise NotImplementedError(f"{ins.ptx}: the GPU engine cannot run {reason}")
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2], c.shape[:-2]))
    r = int(np.prod(batch, dtype=np.int64))
    if ins.schedule == "fma_chain":
        return _mma_f64(cp, a, b, c, batch, r)
    c_dtype = np.dtype(c.dtype)
    acc = {get_format(n).storage: get_format(n) for n in _ACC_FORMATS}.get(c_dtype)
    if acc is None:
        raise TypeError(f"c has dtype {c_dtype}; expected float32, float16 or int32")
    return_numpy = not isinstance(c, cp.ndarray)
    m, k = a.shape[-2:]
    n = b.shape[-1]

    a_bits, a_code = _bits(cp, a, "a")
    b_bits, b_code = _bits(cp, b, "b")
    is_int = ins.is_integer
    pre = max(ins.frac_bits - 20, 0) if not is_int else 0
    if ins.schedule == "fp8_via_f16":  # e4m3 read as f16: its subnormals are normal f16s
        a_code, b_code = (
            _E4M3_AS_F16 if c == _DECODE_CODE["e4m3"] else c for c in (a_code, b_code)
        )
    a_sig, a_exp = _decode(cp, a_bits, a_code, pre)
    b_sig, b_exp = _decode(cp, b_bits, b_code, 0)
    special = not is_int and bool((a_exp >= _SPECIAL_CODE).any() or (b_exp >= _SPECIAL_CODE).any())
    sched = 1 if ins.schedule == "fp8_via_f16" else 0
    if sched:
        perm = cp.asarray(_fp8_permutation(k, ins.k))
        a_sig, a_exp = a_sig[..., perm], a_exp[..., perm]
        b_sig, b_exp = b_sig[..., perm, :], b_exp[..., perm, :]
    # A transposed to [.., K, M] so both operand tiles load along contiguous rows.
    a_sig, s_a = _batched(cp, cp.ascontiguousarray(a_sig.swapaxes(-1, -2)), batch, r)
    a_exp, _ = _batched(cp, cp.ascontiguousarray(a_exp.swapaxes(-1, -2)), batch, r)
    b_sig, s_b = _batched(cp, cp.ascontiguousarray(b_sig), batch, r)
    b_exp, _ = _batched(cp, cp.ascontiguousarray(b_exp), batch, r)

    raw = acc.bits_dtype
    c_dev = c if isinstance(c, cp.ndarray) else cp.asarray(np.ascontiguousarray(c))
    c_bits = cp.ascontiguousarray(cp.broadcast_to(c_dev, batch + (m, n))).view(raw)
    c_bits = c_bits.reshape(r, m, n)
    d_bits = cp.empty_like(c_bits)

    int_block = 16 if ins.k == 16 else 32  # partial sums of the integer kernels
    if ins.bitop:  # b1: popc(a AND b) / popc(a XOR b), wrapping (no .satfinite)
        name = {"and.popc": "mma_b1_and", "xor.popc": "mma_b1_xor"}[ins.bitop]
    elif is_int:  # .satfinite clamps once per instruction, after k / int_block partial sums
        name = "mma_int8" if int_block == 32 else "mma_int8_k16"
    else:
        # fp8 via f16: each instruction is two f16 blocks of k/2 products (k mod 4 in {0, 1},
        # then {2, 3}), 16 for m16n8k32 but 8 for m16n8k16, whatever ins.block says.
        products = ins.k // 2 if sched else ins.block
        name = f"mma_l{products}" + ("_special" if special else "")
    kernel = _module().get_function(name)
    grid = ((n + _TILE - 1) // _TILE, (m + _TILE - 1) // _TILE, r)
    if r and m and n:
        kernel(
            grid,
            (_THREADS,),
            (
                a_sig,
                a_exp,
                b_sig,
                b_exp,
                c_bits,
                d_bits,
                np.int32(m),
                np.int32(n),
                np.int32(k),
                np.int64(s_a),
                np.int64(s_b),
                np.int64(m * n),
                np.int32(ins.frac_bits),
                np.int32(ins.e_zero),
                np.int32(_OUT_MODE[(get_format(ins.acc_fmt).name, ins.out_rounding)]),
                np.int32(bool(satf)),
                np.int32(ins.k // int_block if is_int else max(ins.k // ins.block, 1)),
                np.int32(sched),
            ),
        )
    out = d_bits.view(c_dtype).reshape(batch + (m, n))
    if return_numpy:
        return cp.asnumpy(out).view(c_dtype)
    return out
