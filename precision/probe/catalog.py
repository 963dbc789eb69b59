"""What each probed tensor-core instruction is: PTX string, shape, operand bit formats.

This module only describes; generating inputs lives in :mod:`precision.probe.inputs`, running
the probes and checking recordings in :mod:`precision.probe.capture`.

Operands are handled as raw bit patterns in unsigned integers of the container width
(``uint8/16/32``). Their formats are the registry's :class:`precision.formats.Format` records:
``Format.bit_layout`` says where sign, exponent field and trailing significand sit, with
``pad_bits`` low bits of the container that the format does not use (tf32 is kept in a 32-bit
fp32 container whose low 13 bits are not part of the tf32 value); ``Format.storage`` is the
dtype the raw bits are reinterpreted as (tf32 reads as float32).
"""

from __future__ import annotations

from dataclasses import dataclass

from precision.formats import Format, get_format

F16 = get_format("fp16")
BF16 = get_format("bf16")
TF32 = get_format("tf32")
F32 = get_format("fp32")
E4M3 = get_format("e4m3")
E5M2 = get_format("e5m2")
S8 = get_format("int8")
S32 = get_format("int32")


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
    a_fmt: Format
    c_fmt: Format
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

#: Data kinds, in the order of their uint8 index in a recording.
KINDS: tuple[str, ...] = (
    "small_int",
    "normal",
    "wide_exp",
    "random_bits",
    "cancellation",
    "subnormal",
    "special",
    "tf32_lowbits",
    "extreme",
    "exp_floor",
)


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
