"""What each probed tensor-core instruction is: PTX string, shape, operand bit formats.

This module only describes; generating inputs lives in :mod:`precision.probe.inputs`, running
the probes and checking recordings in :mod:`precision.probe.capture`.

Operands are handled as raw bit patterns in unsigned integers of the storage width
(``uint8/16/32``). ``BitFormat`` says how to read those bits: sign, exponent field and trailing
significand, with ``pad`` low bits of the container that the format does not use (tf32 is kept
in a 32-bit fp32 container whose low 13 bits are not part of the tf32 value).
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class BitFormat:
    """Bit layout of one operand format.

    ``width`` is the container width in bits, ``exp_bits``/``man_bits`` the exponent field and
    trailing significand widths of the *format* (tf32: 8/10), ``pad`` the unused low bits of
    the container (tf32: 13). ``has_inf`` is False for e4m3 (OCP "fn": no infinities, NaN is
    S.1111.111). Integer formats have ``exp_bits == 0`` and ``is_integer``.
    """

    name: str
    width: int
    exp_bits: int
    man_bits: int
    pad: int = 0
    has_inf: bool = True
    is_integer: bool = False

    @property
    def uint(self) -> type[np.unsignedinteger]:
        """Unsigned storage dtype of the container."""
        return {8: np.uint8, 16: np.uint16, 32: np.uint32}[self.width]

    @property
    def view(self) -> np.dtype:
        """numpy dtype the raw bits are reinterpreted as (tf32 reads as float32)."""
        return np.dtype(_VIEW[self.name])

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal (also the scale of subnormals' leading bit + man)."""
        return 1 - self.bias

    @property
    def max_field(self) -> int:
        """Largest exponent field that encodes finite numbers."""
        top = (1 << self.exp_bits) - 1
        return top - 1 if self.has_inf else top

    @property
    def sign_mask(self) -> int:
        return 1 << (self.width - 1)


_VIEW = {
    "f16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "tf32": np.float32,
    "f32": np.float32,
    "e4m3": ml_dtypes.float8_e4m3fn,
    "e5m2": ml_dtypes.float8_e5m2,
    "s8": np.int8,
    "s32": np.int32,
}

F16 = BitFormat("f16", 16, 5, 10)
BF16 = BitFormat("bf16", 16, 8, 7)
TF32 = BitFormat("tf32", 32, 8, 10, pad=13)
F32 = BitFormat("f32", 32, 8, 23)
E4M3 = BitFormat("e4m3", 8, 4, 3, has_inf=False)
E5M2 = BitFormat("e5m2", 8, 5, 2)
S8 = BitFormat("s8", 8, 0, 0, is_integer=True)
S32 = BitFormat("s32", 32, 0, 0, is_integer=True)


@dataclass(frozen=True)
class Instruction:
    """One probed ``mma.sync`` instruction, possibly chained ``nchain`` times along k.

    A recording of it holds ``a [T,16,K]``, ``b [T,K,8]``, ``c, d [T,16,8]`` with
    ``K = k * nchain``; instruction ``s`` consumes columns ``s*k .. (s+1)*k - 1`` and takes the
    previous instruction's D as its C.
    """

    name: str
    kernel: str
    ptx: str
    k: int
    a_fmt: BitFormat
    c_fmt: BitFormat
    satf: bool = False
    nchain: int = 1

    @property
    def K(self) -> int:  # noqa: N802  (matrix dimension name)
        return self.k * self.nchain

    @property
    def emulator_fmt(self) -> str | None:
        """The ``fmt`` argument ``precision.mma`` needs (float32 carriers need "tf32")."""
        return "tf32" if self.a_fmt is TF32 else None

    @property
    def floating(self) -> bool:
        return not self.a_fmt.is_integer


def _ptx(shape: str, dtype: str, atype: str, ctype: str, satf: bool = False) -> str:
    sat = ".satfinite" if satf else ""
    return f"mma.sync.aligned.{shape}.row.col{sat}.{dtype}.{atype}.{atype}.{ctype}"


_BASE = [
    Instruction("f16_f32", "probe_f16_f32", _ptx("m16n8k16", "f32", "f16", "f32"), 16, F16, F32),
    Instruction(
        "bf16_f32", "probe_bf16_f32", _ptx("m16n8k16", "f32", "bf16", "f32"), 16, BF16, F32
    ),
    Instruction("f16_f16", "probe_f16_f16", _ptx("m16n8k16", "f16", "f16", "f16"), 16, F16, F16),
    Instruction("tf32_f32", "probe_tf32_f32", _ptx("m16n8k8", "f32", "tf32", "f32"), 8, TF32, F32),
    Instruction(
        "e4m3_f32", "probe_e4m3_f32", _ptx("m16n8k32", "f32", "e4m3", "f32"), 32, E4M3, F32
    ),
    Instruction(
        "e5m2_f32", "probe_e5m2_f32", _ptx("m16n8k32", "f32", "e5m2", "f32"), 32, E5M2, F32
    ),
    Instruction("s8_s32", "probe_s8_s32", _ptx("m16n8k32", "s32", "s8", "s32"), 32, S8, S32),
    Instruction(
        "s8_s32_satfinite",
        "probe_s8_s32_satfinite",
        _ptx("m16n8k32", "s32", "s8", "s32", satf=True),
        32,
        S8,
        S32,
        satf=True,
    ),
]

#: Number of instructions in a chained probe.
CHAIN = 4

INSTRUCTIONS: dict[str, Instruction] = {i.name: i for i in _BASE}
for _i in _BASE:
    if _i.floating:
        _c = Instruction(
            f"{_i.name}_x{CHAIN}",
            _i.kernel,
            _i.ptx,
            _i.k,
            _i.a_fmt,
            _i.c_fmt,
            _i.satf,
            nchain=CHAIN,
        )
        INSTRUCTIONS[_c.name] = _c


def kinds_for(instr: Instruction) -> tuple[str, ...]:
    """The data kinds that make sense for ``instr``."""
    if not instr.floating:
        return ("small_int", "random_bits", "cancellation", "extreme")
    kinds = (
        "small_int",
        "normal",
        "wide_exp",
        "random_bits",
        "cancellation",
        "subnormal",
        "special",
    )
    if instr.a_fmt is TF32:
        kinds += ("tf32_lowbits",)
    if instr.nchain == 1 and (instr.c_fmt is F16 or instr.a_fmt in (BF16, TF32)):
        kinds += ("exp_floor",)  # only where products or c reach the output's floor
    return kinds


def get_instruction(name: str) -> Instruction:
    """Look up an instruction by recording name (ValueError listing the valid names)."""
    try:
        return INSTRUCTIONS[name]
    except KeyError:
        raise ValueError(
            f"unknown instruction {name!r}; expected one of {sorted(INSTRUCTIONS)}"
        ) from None
