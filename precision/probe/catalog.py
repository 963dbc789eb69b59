"""The probed tensor-core instructions: which sm90 instruction each recording holds, and the
raw-bit layouts of the operand formats.

The instructions themselves (PTX string, shape, formats, numerics) are typed once, in
:mod:`precision.tensorcore.arch`; a :class:`Probe` refers to one of them.

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

from dataclasses import dataclass, replace

from precision.formats import Format, get_format
from precision.tensorcore.arch import Instruction, get_arch

F16 = get_format("fp16")
BF16 = get_format("bf16")
TF32 = get_format("tf32")
F32 = get_format("fp32")
E4M3 = get_format("e4m3")
E5M2 = get_format("e5m2")
S8 = get_format("int8")


@dataclass(frozen=True)
class Probe:
    """One recorded probe of a tensor-core instruction, possibly chained ``nchain`` times along k.

    The instruction itself (PTX string, shape, operand and accumulator formats, numerics) is
    ``instruction``, an entry of the sm90 :class:`~precision.tensorcore.arch.ArchModel`; a probe
    adds only how it is recorded: the recording ``name`` (file stem), the CUDA ``kernel`` entry
    point of probe/cuda/mma_sync_probe.cu, ``satf`` (the ``.satfinite`` variant) and ``nchain``.

    A recording of it holds ``a [T,16,K]``, ``b [T,K,8]``, ``c, d [T,16,8]`` with
    ``K = k * nchain``; instruction ``s`` consumes columns ``s*k .. (s+1)*k - 1`` and takes the
    previous instruction's D as its C.
    """

    name: str
    kernel: str
    instruction: Instruction
    satf: bool = False
    nchain: int = 1

    @property
    def ptx(self) -> str:
        """The probed PTX string (with ``.satfinite`` when ``satf``)."""
        return self.instruction.satfinite_ptx if self.satf else self.instruction.ptx

    @property
    def k(self) -> int:
        """The instruction's k (columns of ``a`` one instruction consumes)."""
        return self.instruction.k

    @property
    def a_fmt(self) -> Format:
        """Format of ``a`` and ``b`` (the probed instructions have one input format); its
        ``bit_layout`` says how to read the raw operand bits."""
        return get_format(self.instruction.a_fmt)

    @property
    def c_fmt(self) -> Format:
        """Format of ``c`` and ``d`` (the accumulator format)."""
        return get_format(self.instruction.acc_fmt)

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


def _sm90(a_fmt: str, acc_fmt: str) -> Instruction:
    return get_arch("sm90").instruction(a_fmt, acc_fmt, op="mma")


_BASE = [
    Probe(f"{name}", f"probe_{name}", _sm90(*fmts), satf=name.endswith("satfinite"))
    for name, fmts in (
        ("f16_f32", ("fp16", "fp32")),
        ("bf16_f32", ("bf16", "fp32")),
        ("f16_f16", ("fp16", "fp16")),
        ("tf32_f32", ("tf32", "fp32")),
        ("e4m3_f32", ("e4m3", "fp32")),
        ("e5m2_f32", ("e5m2", "fp32")),
        ("s8_s32", ("int8", "int32")),
        ("s8_s32_satfinite", ("int8", "int32")),
    )
]

#: Number of instructions in a chained probe.
CHAIN = 4

#: Every probe by recording name: the single instructions, then their chains of CHAIN.
PROBES: dict[str, Probe] = {p.name: p for p in _BASE}
for _p in _BASE:
    if _p.floating:
        _c = replace(_p, name=f"{_p.name}_x{CHAIN}", nchain=CHAIN)
        PROBES[_c.name] = _c


def kinds_for(instr: Probe) -> tuple[str, ...]:
    """The data kinds that make sense for ``instr``."""
    if not instr.floating:
        return ("small_int", "random_bits", "cancellation", "extreme")
    kinds: tuple[str, ...] = (
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


def get_probe(name: str) -> Probe:
    """Look up a probe by recording name (ValueError listing the valid names)."""
    try:
        return PROBES[name]
    except KeyError:
        raise ValueError(f"unknown probe {name!r}; expected one of {sorted(PROBES)}") from None
