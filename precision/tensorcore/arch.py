"""What a tensor-core instruction computes, per GPU generation, as data.

An :class:`Instruction` is the one description of a tensor-core instruction in the library: its
PTX string, family (``"mma"`` = ``mma.sync``, ``"wgmma"`` = ``wgmma.mma_async``, ``"wmma"``),
shape (m, n, k), the formats of ``a``, ``b`` and the accumulator (canonical names of
:mod:`precision.formats`; ``a`` and ``b`` differ only for mixed fp8), and how the hardware
computes each output element:

- ``block``: how many consecutive products are fused into one *block* (a fused dot-product-add
  of ``block`` exact products plus the accumulator ``c``);
- ``frac_bits`` (F): each term of a block is truncated toward zero to a multiple of
  ``2**(E - F)``, where E is the block's anchor exponent (the largest term anchor; a product's
  anchor is the sum of its inputs' leading-bit exponents, a subnormal input counting at its own
  format's emin, a subnormal fp32 ``c`` at -126);
- ``e_zero``: the anchor exponent given to zero terms (a zero ``c`` or a zero product), which
  is a floor on E;
- ``out_rounding``: how the exact block sum becomes the accumulator format
  (``"rz"`` fp32 round-toward-zero, ``"rz_e8m13"`` fp32 with only 13 fraction bits kept,
  ``"rne"`` fp16 round-to-nearest-even, ``"wrap"`` exact int32 modulo 2**32); overflow goes to
  ±Inf in every floating-point case;
- ``schedule``: ``"chain"`` (blocks in increasing k, each block's rounded output is the next
  block's ``c``) or ``"fp8_via_f16"`` (Hopper's lowering of fp8 ``mma.sync`` onto f16 HMMA:
  two interleaved 16-product blocks from ``c = +0``, then ``c`` added with one fp32/fp16
  round-to-nearest add);
- ``evidence``: what backs the numerics (a recorded file under tests/data, or the literature).

An :class:`ArchModel` is the table of instructions of one GPU generation, keyed by
``(family, a_fmt, b_fmt, acc_fmt)`` (``acc_fmt`` is the format of d), with further shapes,
b1 operations and c/d format pairings as ``alternates``. Only ``sm90`` is verified bit for bit
against recorded H200 outputs (tests/data/sm90*): since 2026-11-27 every sm90 instruction's
``evidence`` names its recording (an instruction added without one would say "not
recorded"). The other generations (sm70 Volta, sm75 Turing,
sm80 Ampere incl. sm86, sm89 Ada, sm100 Blackwell) are transcribed from the published models
(Khattak & Mikaitis 2025; Fasi et al. 2021; MMA-Sim v2.1.1; full references in
docs/emulator.md, "Sources"): the default instructions whose
``evidence`` begins "published file" replay the published hardware files in
tests/data/published (normal-range data only; sm75 has none), everything else rests on the
literature, and each ``evidence`` says which. Integer, b1 and f64 instructions of those
generations are exact arithmetic (wrapping int32 sums; IEEE binary64 FMA chains), not recorded.
"""

from __future__ import annotations

import difflib
import numbers
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from precision.formats import get_format

#: Instruction families: ``mma.sync``, ``wgmma.mma_async`` (sm_90a), the WMMA API.
FAMILIES: tuple[str, ...] = ("mma", "wgmma", "wmma")

_LITERATURE = "from the literature (Khattak & Mikaitis 2025; MMA-Sim 2025); not verified here"
_FP8 = ("e4m3", "e5m2")


# PTX type suffix of each canonical format.
def _ptx_type(fmt: str) -> str:
    """The PTX type suffix of a canonical format (fp16 -> f16, int8 -> s8, uint1 -> b1)."""
    ptx = get_format(fmt).ptx
    if ptx is None:
        raise ValueError(f"format {fmt!r} has no PTX type")
    return ptx


@dataclass(frozen=True)
class Instruction:
    """One tensor-core instruction and its numerics. See the module docstring."""

    ptx: str
    family: str
    shape: tuple[int, int, int]
    a_fmt: str
    b_fmt: str
    acc_fmt: str
    block: int
    frac_bits: int
    e_zero: int
    out_rounding: str
    schedule: str = "chain"
    evidence: str = _LITERATURE
    bitop: str = ""  # single-bit (uint1) inputs: "xor.popc" or "and.popc"
    #: Format of the ``c`` operand where it differs from ``d``'s (``acc_fmt``): Volta's
    #: ``mma.sync.m8n8k4`` takes an f16 c with an f32 d. Empty: c has ``acc_fmt``.
    c_fmt: str = ""

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"Instruction {self.ptx!r}: family {self.family!r} not in {FAMILIES}")
        for f in (self.a_fmt, self.b_fmt, self.acc_fmt, *((self.c_fmt,) if self.c_fmt else ())):
            if get_format(f).name != f:
                raise ValueError(f"Instruction {self.ptx!r}: format {f!r} is not a canonical name")

    @property
    def k(self) -> int:
        """The instruction's inner dimension: K must be a multiple of it."""
        return self.shape[2]

    @property
    def c_format(self) -> str:
        """The canonical format of ``c`` (``acc_fmt`` unless :attr:`c_fmt` says otherwise)."""
        return self.c_fmt or self.acc_fmt

    @property
    def key(self) -> tuple[str, str, str, str]:
        """``(family, a_fmt, b_fmt, acc_fmt)``: this instruction's key in an :class:`ArchModel`."""
        return (self.family, self.a_fmt, self.b_fmt, self.acc_fmt)

    @property
    def is_integer(self) -> bool:
        """Integer MMA (exact products and sums; block, frac_bits and e_zero do not apply)."""
        return get_format(self.a_fmt).is_integer

    @property
    def satfinite_ptx(self) -> str:
        """The PTX string with the ``.satfinite`` qualifier (mma.sync integer saturation)."""
        if self.family != "mma":
            raise ValueError(f"{self.ptx}: only mma.sync has a .satfinite variant here")
        return self.ptx.replace(".row.col.", ".row.col.satfinite.", 1)


def _instructions(*ins: Instruction) -> dict[tuple[str, str, str, str], Instruction]:
    return {i.key: i for i in ins}


@dataclass(frozen=True)
class ArchModel:
    """The tensor-core instructions of one GPU generation, keyed by (family, a, b, accumulator).

    ``default_op`` is the family :func:`precision.mma` uses when no ``op`` is given (``"mma"``
    everywhere except sm70, where it is ``"wmma"``: most of Volta's modelled instructions are
    WMMA; its three ``mma`` m8n8k4 instructions are reached with ``op="mma"``).
    """

    name: str
    description: str
    verified: str
    instructions: dict[tuple[str, str, str, str], Instruction] = field(repr=False)
    default_op: str = "mma"
    #: Further instructions of a key in :attr:`instructions` (other shapes, the other b1
    #: operation), reached with ``shape=`` / ``bitop=``.
    alternates: tuple[Instruction, ...] = field(default=(), repr=False)

    def all_instructions(self) -> list[Instruction]:
        """Every instruction of this generation: the defaults, then the alternates."""
        return [*self.instructions.values(), *self.alternates]

    def hardware_backed(self) -> list[Instruction]:
        """The instructions whose ``evidence`` names recorded hardware outputs in tests/data
        (ours or published) that the tests replay bit for bit; the others follow the
        literature or exact arithmetic, and their evidence says so ("not recorded")."""
        return [
            i
            for i in self.all_instructions()
            if "tests/data/" in i.evidence and "not recorded" not in i.evidence
        ]

    def instruction(
        self,
        a_fmt: Any,
        acc_fmt: Any,
        *,
        b_fmt: Any = None,
        op: str | None = None,
        shape: tuple[int, int, int] | None = None,
        bitop: str | None = None,
        c_fmt: Any = None,
    ) -> Instruction:
        """The instruction for these formats (any alias) and family ``op``.

        ``acc_fmt`` is the format of ``d``. ``b_fmt`` defaults to ``a_fmt``; ``op`` to
        :attr:`default_op`; ``c_fmt`` (the format of ``c``) to ``acc_fmt``; ``shape``
        (m, n, k) and ``bitop`` (single-bit inputs) select among the instructions of one format
        key (the default when not given). Raises ``TypeError`` listing what exists when the
        arch has no such instruction.
        """
        op = self.default_op if op is None else op
        if op not in FAMILIES:
            raise ValueError(
                f"op={op!r}: unknown{did_you_mean(op, FAMILIES)} (expected one of "
                f"{', '.join(FAMILIES)})"
            )
        fa = get_format(a_fmt).name
        fb = fa if b_fmt is None else get_format(b_fmt).name
        fc = get_format(acc_fmt).name
        fcin = fc if c_fmt is None else get_format(c_fmt).name
        if shape is not None or bitop is not None or fcin != fc:
            for ins in self.all_instructions():
                if (
                    ins.key == (op, fa, fb, fc)
                    and ins.c_format == fcin
                    and (shape is None or _same_shape(ins, tuple(shape)))
                    and (bitop is None or bitop == ins.bitop)
                ):
                    return ins
            shapes = sorted(
                f"m{i.shape[0]}n{i.shape[1]}k{i.shape[2]}{' ' + i.bitop if i.bitop else ''}"
                f" c={i.c_format}"
                for i in self.all_instructions()
                if i.key == (op, fa, fb, fc)
            )
            wide = " (wgmma: any n of 8 to 256 in steps of 8 runs as n8)" if op == "wgmma" else ""
            raise TypeError(
                f"arch {self.name!r} has no {op} instruction for {fa} x {fb} + {fcin} -> {fc} "
                f"with shape={shape} bitop={bitop}; available: {', '.join(shapes) or 'none'}"
                f"{wide}"
            )
        try:
            return self.instructions[(op, fa, fb, fc)]
        except KeyError:
            have = ", ".join(
                f"{o} {a}x{b}->{c}" if a != b else f"{o} {a}->{c}"
                for o, a, b, c in sorted(self.instructions)
            )
            ab = fa if fa == fb else f"{fa} x {fb}"
            raise TypeError(
                f"arch {self.name!r} has no tensor-core instruction (op={op!r}) for {ab} "
                f"inputs with an {fc} accumulator; available: {have}"
            ) from None


def _mma_ptx(shape: tuple[int, int, int], a: str, b: str, acc: str, c: str = "") -> str:
    """``mma.sync.aligned.mMnNkK.row.col.<d>.<a>.<b>.<c>`` (``c`` defaults to ``acc``)."""
    m, n, k = shape
    d, pa, pb, pc = _ptx_type(acc), _ptx_type(a), _ptx_type(b), _ptx_type(c or acc)
    return f"mma.sync.aligned.m{m}n{n}k{k}.row.col.{d}.{pa}.{pb}.{pc}"


def _wgmma_ptx(shape: tuple[int, int, int], a: str, b: str, acc: str) -> str:
    m, n, k = shape
    return (
        f"wgmma.mma_async.sync.aligned.m{m}n{n}k{k}.{_ptx_type(acc)}.{_ptx_type(a)}.{_ptx_type(b)}"
    )


def _wmma_ptx(shape: tuple[int, int, int], acc: str) -> str:
    m, n, k = shape
    d = _ptx_type(acc)
    return f"wmma.mma.sync.aligned.row.col.m{m}n{n}k{k}.{d}.{d}"


def _fp8_pairs() -> list[tuple[str, str]]:
    return [(a, b) for a in _FP8 for b in _FP8]


def _float_instructions(
    *,
    f16_block: int,
    tf32_block: int,
    frac_bits: int,
    e_zero32: int,
    e_zero16: int,
    fp8: str | None,
    fp8_block: int = 16,
    fp8_frac_bits: int | None = None,
    bf16: bool = True,
    family: str = "mma",
    f16_shape: tuple[int, int, int] = (16, 8, 16),
    evidence: dict[tuple[str, str, str], str] | None = None,
) -> list[Instruction]:
    """The floating-point instructions of one generation (see the parameters' use below)."""
    ev = evidence or {}

    def make(shape, a, b, acc, block, fb, ez, rnd, schedule="chain") -> Instruction:
        ptx = _wmma_ptx(shape, acc) if family == "wmma" else _mma_ptx(shape, a, b, acc)
        e = ev.get((a, b, acc), _LITERATURE)
        return Instruction(ptx, family, shape, a, b, acc, block, fb, ez, rnd, schedule, e)

    ins = [
        make(f16_shape, "fp16", "fp16", "fp32", f16_block, frac_bits, e_zero32, "rz"),
        make(f16_shape, "fp16", "fp16", "fp16", f16_block, frac_bits, e_zero16, "rne"),
    ]
    if bf16:
        ins.append(make((16, 8, 16), "bf16", "bf16", "fp32", f16_block, frac_bits, e_zero32, "rz"))
    if tf32_block:
        ins.append(make((16, 8, 8), "tf32", "tf32", "fp32", tf32_block, frac_bits, e_zero32, "rz"))
    for fa, fb in _fp8_pairs() if fp8 else []:
        for acc, ez in (("fp32", e_zero32), ("fp16", e_zero16)):
            if fp8 == "via_f16":
                rnd = "rz" if acc == "fp32" else "rne"
                ins.append(make((16, 8, 32), fa, fb, acc, 16, frac_bits, ez, rnd, "fp8_via_f16"))
            else:
                f8 = fp8_frac_bits if fp8_frac_bits is not None else frac_bits
                rnd = ("rz_e8m13" if f8 == 13 else "rz") if acc == "fp32" else "rne"
                ins.append(make((16, 8, 32), fa, fb, acc, fp8_block, f8, ez, rnd))
    return ins


def _int8_instruction(evidence: str = _LITERATURE) -> Instruction:
    # Integer MMA is exact; block/frac_bits/e_zero do not apply. The .satfinite variant is
    # Instruction.satfinite_ptx (mma(..., satf=True)).
    shape = (16, 8, 32)
    ptx = _mma_ptx(shape, "int8", "int8", "int32")
    return Instruction(
        ptx, "mma", shape, "int8", "int8", "int32", 32, 0, 0, "wrap", "chain", evidence
    )


_SM90_DATA = "tests/data/sm90"
_SM90_MMA2 = "tests/data/sm90_mma"
_PUB = "tests/data/published"

#: The recordings in tests/data/sm90_mma (one per probe of precision.probe.generic), by file
#: stem: since 2026-11-27 every instruction of the sm_90 ``mma.sync`` families beyond
#: tests/data/sm90. An instruction left out would get evidence saying "not recorded".
_SM90_MMA_RECORDED = frozenset(
    {
        "m16n8k16_f32_f16_f16_f32",
        "m16n8k8_f32_f16_f16_f32",
        "m16n8k8_f16_f16_f16_f16",
        "m16n8k8_f32_bf16_bf16_f32",
        "m16n8k4_f32_tf32_tf32_f32",
        "m16n8k32_f32_e4m3_e5m2_f32",
        "m16n8k32_f32_e5m2_e4m3_f32",
        "m16n8k32_f16_e4m3_e4m3_f16",
        "m16n8k32_f16_e5m2_e5m2_f16",
        "m16n8k32_f16_e4m3_e5m2_f16",
        "m16n8k16_f32_e4m3_e4m3_f32",
        "m8n8k4_f64_f64_f64_f64",
        "m16n8k4_f64_f64_f64_f64",
        "m16n8k8_f64_f64_f64_f64",
        "m16n8k16_f64_f64_f64_f64",
        "m16n8k32_s32_u8_u8_s32",
        "m16n8k32_s32_s8_u8_s32",
        "m16n8k32_s32_u8_s8_s32_satfinite",
        "m16n8k16_s32_s8_s8_s32",
        "m8n8k16_s32_s8_u8_s32",
        "m16n8k64_s32_s4_s4_s32",
        "m16n8k64_s32_u4_s4_s32_satfinite",
        "m8n8k32_s32_u4_u4_s32",
        "m16n8k256_s32_b1_b1_s32_xorpopc",
        "m16n8k256_s32_b1_b1_s32_andpopc",
        "m8n8k128_s32_b1_b1_s32_xorpopc",
        # recorded 2026-11-27 (manifest.json "later_runs"; 25,600 outputs each for fp8,
        # 12,800 for the integer and b1 ones)
        "m16n8k32_f16_e5m2_e4m3_f16",
        "m16n8k16_f32_e4m3_e5m2_f32",
        "m16n8k16_f32_e5m2_e4m3_f32",
        "m16n8k16_f32_e5m2_e5m2_f32",
        "m16n8k64_s32_s4_u4_s32",
        "m16n8k64_s32_u4_u4_s32",
        "m16n8k16_s32_s8_u8_s32",
        "m16n8k16_s32_u8_s8_s32",
        "m16n8k16_s32_u8_u8_s32",
        "m8n8k16_s32_s8_s8_s32",
        "m8n8k16_s32_u8_s8_s32",
        "m8n8k16_s32_u8_u8_s32",
        "m8n8k32_s32_s4_s4_s32",
        "m8n8k32_s32_s4_u4_s32",
        "m8n8k32_s32_u4_s4_s32",
        "m8n8k128_s32_b1_b1_s32_andpopc",
    }
)


def _sm90_mma_recording(shape: tuple[int, int, int], a: str, b: str, acc: str, bitop: str) -> str:
    """The evidence of an sm_90 ``mma.sync`` instruction from :data:`_SM90_MMA_RECORDED`: the
    recording's path, or "" when this instruction is not recorded."""
    m, n, k = shape
    parts = [f"m{m}n{n}k{k}", _ptx_type(acc), _ptx_type(a), _ptx_type(b), _ptx_type(acc)]
    if bitop:
        parts.append(bitop.replace(".", ""))
    name = "_".join(parts)
    if name in _SM90_MMA_RECORDED:
        return f"H200 mma.sync recording {_SM90_MMA2}/{name}.npz"
    if f"{name}_satfinite" in _SM90_MMA_RECORDED:
        return f"H200 mma.sync recording {_SM90_MMA2}/{name}_satfinite.npz (.satfinite only)"
    return ""


def _sm90_published(fmt: str, what: str) -> str:
    """The published H100 and H200 files that ``precision.mma(arch="sm90")`` replays."""
    files = ", ".join(f"{_PUB}/{g}/{fmt}.npz" for g in ("h100", "h200"))
    return f"; published files {files} ({what}): 5000/5000 each"


_SM90_MMA_EVIDENCE: dict[tuple[str, str, str], str] = {
    (a, a, acc): f"H200 mma.sync recording {_SM90_DATA}/{name}.npz"
    + (f" and {name}_x4.npz (chains of 4)" if name != "s8_s32" else " and s8_s32_satfinite.npz")
    for a, acc, name in (
        ("fp16", "fp32", "f16_f32"),
        ("fp16", "fp16", "f16_f16"),
        ("bf16", "fp32", "bf16_f32"),
        ("tf32", "fp32", "tf32_f32"),
        ("e4m3", "fp32", "e4m3_f32"),
        ("e5m2", "fp32", "e5m2_f32"),
        ("int8", "int32", "s8_s32"),
    )
}
_SM90_MMA_EVIDENCE[("fp16", "fp16", "fp32")] += (
    f" and {_SM90_MMA2}/m16n8k16_f32_f16_f16_f32.npz"
    + _sm90_published("fp16", "WMMA m16n16k16, 16 nonzero products, fp32 output")
)
_SM90_MMA_EVIDENCE[("fp16", "fp16", "fp16")] += _sm90_published(
    "fp16", "WMMA m16n16k16, 16 nonzero products, fp16 output"
)
_SM90_MMA_EVIDENCE[("bf16", "bf16", "fp32")] += _sm90_published(
    "bf16", "WMMA m16n16k16, 16 nonzero products, fp32 output"
)
_SM90_MMA_EVIDENCE[("tf32", "tf32", "fp32")] += _sm90_published(
    "tf32", "WMMA m16n16k8, 4 nonzero products: they cannot tell L = 4 from 8"
)
for _a, _b in _fp8_pairs():
    for _acc in ("fp32", "fp16"):
        if (_a, _b, _acc) in _SM90_MMA_EVIDENCE:
            continue
        _rec = _sm90_mma_recording((16, 8, 32), _a, _b, _acc, "")
        if _rec and _a == _b:
            _rec += _sm90_published(_a, "mma.sync m16n8k32, fp16 output")
        _SM90_MMA_EVIDENCE[(_a, _b, _acc)] = _rec or (
            "not recorded; assumed to be the recorded fp8 lowering onto f16 HMMA (e4m3 x e5m2 "
            "and e5m2 x e5m2 -> f16 in tests/data/sm90_mma), each operand decoded in its own "
            "format"
        )


def _sm90_wgmma() -> list[Instruction]:
    """wgmma.mma_async as recorded on the H200 (docs/wgmma.md, tests/data/sm90_wgmma).

    f16/bf16/tf32: the numerics of mma.sync (blocks of 16 / 8 products, F = 25). fp8: one
    fused block of all 32 products of an m64nNk32 instruction, F = 13, output RZ to e8m13, no
    f16 lowering. Recorded with N = 8; the numerics do not depend on N.
    """
    rec = "H200 wgmma recording tests/data/sm90_wgmma/wgmma_{}.npz"

    def make(k, a, b, block, fb, rnd, name=None) -> Instruction:
        shape = (64, 8, k)
        ev = (
            rec.format(name)
            if name
            else (
                "H200 wgmma recording tests/data/sm90_wgmma_extra/wgmma_"
                f"{a}{b}_f32.npz: 100 % bit for bit, each operand decoded in its own format"
            )
        )
        if name and a in _FP8:  # the published Hopper fp8 -> fp32 files came from wgmma, D = 0
            ev += _sm90_published(a, "wgmma with D = 0, fp32 output")
        ptx = _wgmma_ptx(shape, a, b, "fp32")
        return Instruction(ptx, "wgmma", shape, a, b, "fp32", block, fb, -133, rnd, "chain", ev)

    ins = [
        make(16, "fp16", "fp16", 16, 25, "rz", "f16_f32"),
        make(16, "bf16", "bf16", 16, 25, "rz", "bf16_f32"),
        make(8, "tf32", "tf32", 8, 25, "rz", "tf32_f32"),
    ]
    for a, b in _fp8_pairs():
        ins.append(make(32, a, b, 32, 13, "rz_e8m13", f"{a}_f32" if a == b else None))
    return ins


def _sm90_wmma() -> list[Instruction]:
    """The WMMA API (``nvcuda::wmma``) on sm_90, as expected from its SASS lowering.

    f16/bf16 m16n16k16 (also m32n8k16, m8n32k16: same numerics, only k matters) lower to
    HMMA.16816 like ``mma.sync`` m16n8k16: one fused block of 16 products, F = 25, e_zero
    -133 (fp32) / -21 (fp16). tf32 m16n16k8 lowers to HMMA.1684 (two chained blocks of 4
    products, where ``mma.sync`` m16n8k8 fuses 8). s8 m16n16k16: exact, wrapping modulo 2^32.
    Recorded on the H200 (precision/probe/wmma.py, tests/data/sm90_wmma, 51,200 outputs per
    type and shape): every output matches, bit for bit; tf32 WMMA differs from mma.sync m16n8k8
    on 7.6 % of outputs, as its blocks of 4 predict.
    """
    ev = "H200 WMMA recording tests/data/sm90_wmma (SASS {}): 100 % bit for bit"
    f16 = ev.format("HMMA.16816, as mma.sync m16n8k16")

    def make(ptx, k, a, acc, block, ez, rnd, e) -> Instruction:
        shape = (16, 16, k)
        return Instruction(ptx, "wmma", shape, a, a, acc, block, 25, ez, rnd, "chain", e)

    p = "wmma.mma.sync.aligned.row.col.m16n16k"
    return [
        make(f"{p}16.f32.f32", 16, "fp16", "fp32", 16, -133, "rz", f16),
        make(f"{p}16.f16.f16", 16, "fp16", "fp16", 16, -21, "rne", f16),
        make(f"{p}16.f32.bf16.bf16.f32", 16, "bf16", "fp32", 16, -133, "rz", f16),
        make(f"{p}8.f32.tf32.tf32.f32", 8, "tf32", "fp32", 4, -133, "rz", ev.format("HMMA.1684")),
        Instruction(
            f"{p}16.s32.s8.s8.s32",
            "wmma",
            (16, 16, 16),
            "int8",
            "int8",
            "int32",
            16,
            0,
            0,
            "wrap",
            "chain",
            ev.format("IMMA, exact integer"),
        ),
    ]


#: Format names in the file names of tests/data/sm90_wgmma_extra (precision.probe.wgmma.EXTRA).
_WGMMA_EXTRA_NAME = {"fp16": "f16", "int8": "s8", "uint8": "u8", "int32": "s32", "fp32": "f32"}


def _sm90_wgmma_extra() -> list[Instruction]:
    """wgmma.mma_async with an f16 accumulator, and s8 (issue 15), as hypotheses to record.

    f16 inputs, f16 accumulator: as ``mma.sync`` m16n8k16 f16 (block 16, F = 25, e_zero -21,
    RNE to fp16). fp8 inputs, f16 accumulator: the recorded fp32 QGMMA block (32 products,
    F = 13) rounded to nearest-even fp16 with the f16 zero anchor -21. s8 and u8: exact,
    wrapping modulo 2^32. Recorded on the H200 (precision/probe/wgmma.py ``--extra``,
    tests/data/sm90_wgmma_extra, 104,320 outputs each, s8/u8 104,960): f16 -> f16, every fp8
    pairing -> f16 (the mixed ones recorded 2026-11-27, each operand decoded in its own
    format), s8 and u8 match every output bit for bit.
    """
    ev = "H200 wgmma recording tests/data/sm90_wgmma_extra/{}: 100 % bit for bit ({})"

    def make(k, a, b, acc, block, fb, ez, rnd, why) -> Instruction:
        shape = (64, 8, k)
        ptx = _wgmma_ptx(shape, a, b, acc)
        file = f"wgmma_{_WGMMA_EXTRA_NAME.get(a, a)}"
        file += ("" if a == b else _WGMMA_EXTRA_NAME.get(b, b)) + f"_{_WGMMA_EXTRA_NAME[acc]}.npz"
        if a != b:
            why += ", each operand decoded in its own format"
        e = ev.format(file, why)
        return Instruction(ptx, "wgmma", shape, a, b, acc, block, fb, ez, rnd, "chain", e)

    ins = [make(16, "fp16", "fp16", "fp16", 16, 25, -21, "rne", "as mma.sync f16 -> f16")]
    for a, b in _fp8_pairs():
        ins.append(
            make(32, a, b, "fp16", 32, 13, -21, "rne", "the fp32 QGMMA block, then RNE to fp16")
        )
    ins.append(make(32, "int8", "int8", "int32", 32, 0, 0, "wrap", "exact integer, wrap"))
    ins.append(make(32, "uint8", "uint8", "int32", 32, 0, 0, "wrap", "exact integer, wrap"))
    return ins


#: The evidence of one instruction: ``(shape, a_fmt, b_fmt, acc_fmt, bitop) -> str``.
Evidence = Callable[[tuple[int, int, int], str, str, str, str], str]


def _mma(
    shape: tuple[int, int, int],
    a: str,
    b: str,
    acc: str,
    block: int,
    frac_bits: int,
    e_zero: int,
    rounding: str,
    evidence: str,
    *,
    schedule: str = "chain",
    bitop: str = "",
    c_fmt: str = "",
) -> Instruction:
    """One ``mma.sync`` instruction (PTX string derived from shape, formats and ``bitop``)."""
    ptx = _mma_ptx(shape, a, b, acc, c_fmt) + (f".{bitop}" if bitop else "")
    return Instruction(
        ptx, "mma", shape, a, b, acc, block, frac_bits, e_zero, rounding, schedule, evidence,
        bitop, c_fmt,
    )  # fmt: skip


def _exact_families(
    evidence: Evidence,
    *,
    int8_shapes: tuple[tuple[int, int, int], ...],
    int4_shapes: tuple[tuple[int, int, int], ...],
    b1: tuple[tuple[tuple[int, int, int], str], ...],
    f64_shapes: tuple[tuple[int, int, int], ...] = (),
) -> tuple[list[Instruction], list[Instruction]]:
    """The exact ``mma.sync`` families of one generation: (defaults, alternates).

    Integers (s8/u8 and s4/u4 in every signedness pairing): each instruction adds the exact
    sum of its k products to c, wrapping modulo 2^32 (``.satfinite``: clamping). Single bit
    (``b1``, ``(shape, "xor.popc" | "and.popc")``): adds popcount(a_row OP b_col) exactly.
    f64 (DMMA): a chain of IEEE binary64 FMAs in increasing k, each rounded to nearest even
    (``schedule="fma_chain"``). The first shape (or b1 pair) of each tuple is the default of
    its format key; the others are alternates (reached with ``shape=`` / ``bitop=``).
    """

    def exact(shape, a, b, bitop=""):
        ev = evidence(shape, a, b, "int32", bitop)
        return _mma(shape, a, b, "int32", shape[2], 0, 0, "wrap", ev, bitop=bitop)

    def f64(shape):
        ev = evidence(shape, "fp64", "fp64", "fp64", "")
        return _mma(shape, "fp64", "fp64", "fp64", 1, 0, 0, "rn", ev, schedule="fma_chain")

    i8 = [(a, b) for a in ("int8", "uint8") for b in ("int8", "uint8")]
    i4 = [(a, b) for a in ("int4", "uint4") for b in ("int4", "uint4")]
    defaults = [
        *(exact(int8_shapes[0], a, b) for a, b in i8),
        *(exact(int4_shapes[0], a, b) for a, b in i4),
        exact(b1[0][0], "uint1", "uint1", b1[0][1]),
        *(f64(s) for s in f64_shapes[:1]),
    ]
    alternates = [
        *(exact(s, a, b) for s in int8_shapes[1:] for a, b in i8),
        *(exact(s, a, b) for s in int4_shapes[1:] for a, b in i4),
        *(exact(s, "uint1", "uint1", op) for s, op in b1[1:]),
        *(f64(s) for s in f64_shapes[1:]),
    ]
    return defaults, alternates


def _sm90_mma_families() -> tuple[list[Instruction], list[Instruction]]:
    """sm_90 ``mma.sync`` beyond the families of tests/data/sm90: (new defaults, alternates).

    Recorded on the H200 with the fragment-packed probes (precision.probe.generic, recordings
    in tests/data/sm90_mma/<name>.npz, named after the PTX string), every pairing and shape
    since 2026-11-27 (:data:`_SM90_MMA_RECORDED`; an integer instruction in one of its two
    overflow modes); an instruction added without a recording would say so in its evidence:

    - other shapes of f16/bf16/tf32/fp8: m16n8k8 f16/bf16 (HMMA.1688, one block of 8),
      m16n8k4 tf32 (HMMA.1684, a block of 4), m16n8k16 fp8;
    - integers: u8/s8 in every signedness pairing (m16n8k32 default, m16n8k16, m8n8k16), s4/u4
      (m16n8k64 default, m8n8k32), exact, wrapping modulo 2^32 or ``.satfinite``;
    - single bit (b1): ``xor.popc`` (default) and ``and.popc``, m16n8k256 default, m8n8k128:
      each instruction adds popcount(a_row OP b_col) exactly, wrapping;
    - f64 (DMMA): m8n8k4 default, m16n8k4/k8/k16: a chain of IEEE binary64 FMAs in increasing
      k, each rounded to nearest even (``schedule="fma_chain"``).
    """

    def rec(shape, a, b, acc, bitop="") -> str:
        found = _sm90_mma_recording(shape, a, b, acc, bitop)
        if found:
            return found
        if a in _FP8:
            return (
                f"not recorded on the H200; assumed as the recorded {_SM90_MMA2}/"
                "m16n8k16_f32_e4m3_e4m3_f32.npz (fp8 lowered to f16 HMMA), each operand "
                "decoded in its own format"
            )
        return (
            "exact integer arithmetic (PTX ISA semantics); this pairing/shape not recorded on "
            f"the H200 (the recorded integer and b1 mma.sync files in {_SM90_MMA2} all match)"
        )

    def mma_(shape, a, b, acc, block, fb, ez, rnd, schedule="chain"):
        ev = rec(shape, a, b, acc)
        return _mma(shape, a, b, acc, block, fb, ez, rnd, ev, schedule=schedule)

    exact_defaults, exact_alternates = _exact_families(
        rec,
        int8_shapes=((16, 8, 32), (16, 8, 16), (8, 8, 16)),
        int4_shapes=((16, 8, 64), (8, 8, 32)),
        b1=(
            ((16, 8, 256), "xor.popc"),
            ((16, 8, 256), "and.popc"),
            ((8, 8, 128), "xor.popc"),
            ((8, 8, 128), "and.popc"),
        ),
        f64_shapes=((8, 8, 4), (16, 8, 4), (16, 8, 8), (16, 8, 16)),
    )
    # s8 x s8 m16n8k32 is recorded in tests/data/sm90 (its default comes from there)
    defaults = [i for i in exact_defaults if i.key != ("mma", "int8", "int8", "int32")]
    alternates = [
        mma_((16, 8, 8), "fp16", "fp16", "fp32", 8, 25, -133, "rz"),
        mma_((16, 8, 8), "fp16", "fp16", "fp16", 8, 25, -21, "rne"),
        mma_((16, 8, 8), "bf16", "bf16", "fp32", 8, 25, -133, "rz"),
        mma_((16, 8, 4), "tf32", "tf32", "fp32", 4, 25, -133, "rz"),
        *(
            mma_((16, 8, 16), a, b, "fp32", 16, 25, -133, "rz", "fp8_via_f16")
            for a, b in _fp8_pairs()
        ),
        *exact_alternates,
    ]
    return defaults, alternates


#: What backs each pre-Hopper model (:attr:`ArchModel.verified`; sm75 passes its own).
_VERIFIED = {
    "sm70": (
        f"WMMA m16n16k16 f16 -> f32 / f16 replays the published V100 file in {_PUB} (4 nonzero "
        "products, 5,000/5,000 each); mma.sync m8n8k4, WMMA m32n8k16/m8n32k16, L = 4 and "
        "chaining from the literature only"
    ),
    "sm80": (
        "mma.sync m16n8k16 f16/bf16 and m16n8k8 tf32 replay the published A100 and A2 WMMA "
        f"files in {_PUB} (8 / 4 nonzero products, 5,000/5,000 each); other float instructions "
        "from the literature; integer, b1 and f64 exact arithmetic, not recorded"
    ),
    "sm89": (
        "mma.sync m16n8k16 f16/bf16, m16n8k8 tf32 and same-format fp8 m16n8k32 replay the "
        f"published Ada and L40S files in {_PUB} (5,000/5,000 each); other float instructions "
        "(mixed fp8, m16n8k16 fp8, m16n8k8, m16n8k4) from the literature; integer, b1 and f64 "
        "exact arithmetic, not recorded"
    ),
}
_KM = "Khattak & Mikaitis 2025"
_MMASIM = "MMA-Sim v2.1.1"


@dataclass(frozen=True)
class _Gen:
    """The fused-block numerics of one generation before Hopper (tensorcore_arithmetic.md §3.3,
    §8.4.2): ``F`` of the 16-bit/tf32 path, the zero anchors by output format, and the
    products per block of f16/bf16 (``l16``) and tf32 (``l32``)."""

    name: str
    frac_bits: int
    e_zero32: int
    e_zero16: int
    l16: int
    l32: int


_GENS = {
    "sm70": _Gen("sm70", 23, -131, -19, 4, 0),
    "sm75": _Gen("sm75", 24, -132, -20, 8, 0),
    "sm80": _Gen("sm80", 24, -132, -20, 8, 4),
    "sm89": _Gen("sm89", 24, -132, -20, 8, 4),
}


def _published(gpus: tuple[str, ...], fmt: str, what: str) -> str:
    files = ", ".join(f"{_PUB}/{g}/{fmt}.npz" for g in gpus)
    return f"published file {files} ({what}): 5000/5000 each"


def _pre_hopper_float(g: _Gen) -> tuple[list[Instruction], list[Instruction]]:
    """The floating-point instructions of a generation before Hopper: (defaults, alternates).

    f16/bf16 blocks of ``g.l16`` products, tf32 blocks of ``g.l32``, F = ``g.frac_bits``;
    fp8 (sm89 QMMA) blocks of 16 with F = 13 and an e8m13 RZ fp32 output. An instruction
    whose k exceeds its block is a chain of blocks in increasing k. Output: RZ fp32 / RNE
    fp16; the zero anchor follows the format of d.
    """
    lit = f"literature: {_KM}; {_MMASIM} (tensorcore_arithmetic.md §3.3 [C], §8.4.2 [C][S])"
    volta = "literature: Fasi et al. 2021; " + lit.removeprefix("literature: ")
    pub_gpus = {"sm70": ("v100",), "sm80": ("a100", "a2"), "sm89": ("ada", "l40s")}.get(g.name)

    def make(shape, a, acc, block, ev, *, b="", c="", family="mma", fb=None):
        fb = g.frac_bits if fb is None else fb
        ez = g.e_zero16 if acc == "fp16" else g.e_zero32
        rnd = "rne" if acc == "fp16" else "rz_e8m13" if fb == 13 else "rz"
        if family == "wmma":
            ptx = _wmma_ptx(shape, acc)
            return Instruction(ptx, "wmma", shape, a, a, acc, block, fb, ez, rnd, "chain", ev)
        return _mma(shape, a, b or a, acc, block, fb, ez, rnd, ev, c_fmt=c)

    def ev(fmt: str, acc: str, published: bool = False) -> str:
        """Literature, or the published WMMA file this default instruction replays."""
        base = volta if g.name == "sm70" else lit
        if not (published and pub_gpus):
            return base
        wmma = "m16n16k8" if fmt == "tf32" else "m16n16k16"
        nonzero = 4 if g.name == "sm70" or fmt == "tf32" else 8
        block = g.l32 if fmt == "tf32" else g.l16
        what = f"WMMA {wmma}, {nonzero} nonzero products, {acc} output"
        return f"{_published(pub_gpus, fmt, what)}; L = {block} and chaining from {base}"

    defaults: list[Instruction] = []
    alternates: list[Instruction] = []
    accs = ("fp32", "fp16")
    if g.name == "sm70":
        for shape in ((16, 16, 16), (32, 8, 16), (8, 32, 16)):
            out = defaults if shape == (16, 16, 16) else alternates
            out += [
                make(shape, "fp16", d, 4, ev("fp16", d, shape == (16, 16, 16)), family="wmma")
                for d in accs
            ]
    if g.name in ("sm70", "sm75"):
        # mma.sync m8n8k4 (HMMA.884, one block of 4 per quad pair); sm75 runs it with Volta's
        # numerics (MMA-Sim v2.1.1 [C]). c is read in its own format, d rounded as its own.
        # ptxas 13 refuses f32 c with f16 d for every target it knows (sm_75 on): ".dtype
        # must be '.f32' when .ctype is '.f32' for 'mma' instruction with shape '.m8n8k4'", so
        # that pairing is not modelled; f16 c with f32 d is accepted.
        v = _GENS["sm70"]
        why = (
            "the HMMA.884 block of the published V100 WMMA file, not recorded as mma.sync"
            if g.name == "sm70"
            else "Turing runs m8n8k4 with Volta's settings"
        )
        for d in accs:
            for c in accs if d == "fp32" else ("fp16",):
                ez = v.e_zero16 if d == "fp16" else v.e_zero32
                rnd = "rne" if d == "fp16" else "rz"
                why_ = f"{volta}; {why}" + (
                    f"; c = {c}, d = {d}: c decoded in its own format, e_zero and rounding "
                    "of d (MMA-Sim t_fdpa, §3.2 [C])"
                    if c != d
                    else ""
                )
                cf = "" if c == d else c
                ins = _mma((8, 8, 4), "fp16", "fp16", d, 4, v.frac_bits, ez, rnd, why_, c_fmt=cf)
                (defaults if g.name == "sm70" and c == d else alternates).append(ins)
    if g.name == "sm75":
        defaults += [make((16, 8, 8), "fp16", d, g.l16, lit) for d in accs]
    if g.name in ("sm80", "sm89"):
        for shape, alt in (((16, 8, 16), False), ((16, 8, 8), True)):
            out = alternates if alt else defaults
            out += [make(shape, "fp16", d, g.l16, ev("fp16", d, not alt)) for d in accs]
            out.append(make(shape, "bf16", "fp32", g.l16, ev("bf16", "fp32", not alt)))
        defaults.append(make((16, 8, 8), "tf32", "fp32", g.l32, ev("tf32", "fp32", True)))
        alternates.append(make((16, 8, 4), "tf32", "fp32", g.l32, lit))
    if g.name == "sm89":
        for a, b in _fp8_pairs():
            for d in accs:
                if a == b:
                    gpus = ("ada", "l40s") if d == "fp32" else ("ada",)
                    e8 = _published(gpus, a, f"mma.sync m16n8k32, {d} output")
                    e8 += f"; L = 16 decided by the files (K = 32); {lit}"
                else:
                    e8 = f"{lit}; not recorded: as {a} x {a}, each operand in its own format"
                defaults.append(make((16, 8, 32), a, d, 16, e8, b=b, fb=13))
                alternates.append(make((16, 8, 16), a, d, 16, lit, b=b, fb=13))
    return defaults, alternates


def _pre_hopper(name: str) -> tuple[list[Instruction], list[Instruction]]:
    """Every modelled instruction of sm70/sm75/sm80/sm89: (defaults, alternates)."""
    defaults, alternates = _pre_hopper_float(_GENS[name])
    if name == "sm70":
        return defaults, alternates

    def lit(shape, a, b, acc, bitop) -> str:
        if acc == "fp64":
            return (
                "exact arithmetic: IEEE binary64 FMA chain in increasing k (Fasi et al. 2021 "
                "A100 binary64 suite [C]); not recorded on this generation"
            )
        return f"exact integer arithmetic (PTX ISA semantics); not recorded on {name}"

    if name == "sm75":
        ed, ea = _exact_families(
            lit,
            int8_shapes=((8, 8, 16),),
            int4_shapes=((8, 8, 32),),
            b1=(((8, 8, 128), "xor.popc"),),
        )
    else:
        ed, ea = _exact_families(
            lit,
            int8_shapes=((16, 8, 32), (16, 8, 16), (8, 8, 16)),
            int4_shapes=((16, 8, 64), (16, 8, 32), (8, 8, 32)),
            b1=(
                ((16, 8, 256), "xor.popc"),
                ((16, 8, 256), "and.popc"),
                ((16, 8, 128), "xor.popc"),
                ((16, 8, 128), "and.popc"),
                ((8, 8, 128), "xor.popc"),
                ((8, 8, 128), "and.popc"),
            ),
            f64_shapes=((8, 8, 4),),
        )
    return defaults + ed, alternates + ea


def _pre_hopper_model(
    name: str, description: str, *, verified: str = "", default_op: str = "mma"
) -> ArchModel:
    """The :class:`ArchModel` of sm70/sm75/sm80/sm89 from :func:`_pre_hopper`."""
    defaults, alternates = _pre_hopper(name)
    return ArchModel(
        name,
        description,
        verified or _VERIFIED[name],
        _instructions(*defaults),
        default_op=default_op,
        alternates=tuple(alternates),
    )


def _sm100_evidence() -> dict[tuple[str, str, str], str]:
    """The sm100 instructions that the published B200 files back (through ``precision.mma``,
    tests/probe/test_published.py); mixed fp8 is from the literature only."""
    b200 = f"published file {_PUB}/b200/{{}}.npz ({{}}): 5000/5000"
    ev = {
        ("fp16", "fp16", "fp32"): b200.format("fp16", "WMMA m16n16k16, 16 products, fp32 out"),
        ("fp16", "fp16", "fp16"): b200.format("fp16", "WMMA m16n16k16, 16 products, fp16 out"),
        ("bf16", "bf16", "fp32"): b200.format("bf16", "WMMA m16n16k16, 16 products, fp32 out"),
        ("tf32", "tf32", "fp32"): b200.format(
            "tf32", "WMMA m16n16k8, 4 nonzero products: L = 4 and 8 both match"
        ),
    }
    for f in _FP8:
        for acc in ("fp32", "fp16"):
            ev[(f, f, acc)] = b200.format(f, f"mma.sync m16n8k32, {acc} output")
    lit = "Khattak & Mikaitis 2025; MMA-Sim 2025"
    out = {k: f"{v}; normal-range data: specials, zero anchors from the literature ({lit})"
           for k, v in ev.items()}  # fmt: skip
    for a, b in _fp8_pairs():
        for acc in ("fp32", "fp16"):
            out.setdefault(
                (a, b, acc),
                f"literature ({lit}); not recorded: as {a} x {a}, each operand in its own format",
            )
    return out


ARCHS: dict[str, ArchModel] = {
    "sm90": ArchModel(
        "sm90",
        "Hopper (H100/H200) mma.sync: HMMA.16816 fuses 16 f16/bf16 products, HMMA.1688 8 tf32 "
        "products, F = 25, e_zero = -133 (fp32) / -21 (fp16); fp8 lowered to f16 HMMA. "
        "wgmma: f16/bf16/tf32 as mma.sync; fp8 (QGMMA) one block of 32 products, F = 13, "
        "e8m13 RZ output.",
        "bit-exact against recorded H200 outputs (tests/data/sm90, sm90_mma, sm90_wmma, "
        "sm90_wgmma, sm90_wgmma_extra) for every instruction whose evidence names a recording; "
        "the rest (other integer pairings and shapes, mma.sync e5m2 x e4m3 -> f16, mixed and "
        "e5m2 m16n8k16 fp8, wgmma mixed fp8 -> f16) are not recorded: see each evidence",
        _instructions(
            *_float_instructions(
                f16_block=16,
                tf32_block=8,
                frac_bits=25,
                e_zero32=-133,
                e_zero16=-21,
                fp8="via_f16",
                evidence=_SM90_MMA_EVIDENCE,
            ),
            _int8_instruction(_SM90_MMA_EVIDENCE[("int8", "int8", "int32")]),
            *_sm90_wgmma(),
            *_sm90_wmma(),
            *_sm90_wgmma_extra(),
            *_sm90_mma_families()[0],
        ),
        alternates=tuple(_sm90_mma_families()[1]),
    ),
    "sm100": ArchModel(
        "sm100",
        "Blackwell (B200) mma.sync: as Hopper for f16/bf16/tf32 (L = 16/8, F = 25); fp8 "
        "lowered to f16 HMMA with an fp32 RN add of c.",
        "from the literature; the f16/bf16/tf32 and same-format fp8 instructions replay the "
        f"published B200 files in {_PUB} (5,000/5,000 each, normal-range inputs only); mixed "
        "fp8 and s8 not recorded; tcgen05.mma not modelled",
        _instructions(
            *_float_instructions(
                f16_block=16,
                tf32_block=8,
                frac_bits=25,
                e_zero32=-133,
                e_zero16=-21,
                fp8="via_f16",
                evidence=_sm100_evidence(),
            ),
            _int8_instruction(
                "exact integer arithmetic (PTX ISA semantics); not recorded on sm100"
            ),
        ),
    ),
    "sm89": _pre_hopper_model(
        "sm89",
        "Ada (L40S): HMMA fuses 8 f16/bf16 or 4 tf32 products, F = 24; QMMA fp8 fuses 16 "
        "products with F = 13 and an e8m13 (RZ) fp32 output; the sm80 integer, b1 and f64 "
        "families.",
    ),
    "sm80": _pre_hopper_model(
        "sm80",
        "Ampere (A100, and A2/sm_86): HMMA.16816 = two fused blocks of 8 f16/bf16 products, "
        "tf32 blocks of 4, F = 24, e_zero = -132 (fp32) / -20 (fp16); exact integer, b1 and "
        "f64 (DMMA) families.",
    ),
    "sm75": _pre_hopper_model(
        "sm75",
        "Turing (T4): HMMA.1688 fuses 8 f16 products, F = 24, e_zero = -132 / -20 (MMA-Sim's "
        "Turing parameters, as Ampere); m8n8k4 with Volta's numerics; exact integer and b1.",
        verified=(
            "from the literature only (MMA-Sim v2.1.1 Turing parameters); no hardware outputs; "
            "integer and b1 exact arithmetic"
        ),
    ),
    "sm70": _pre_hopper_model(
        "sm70",
        "Volta (V100): HMMA.884 = fused blocks of 4 f16 products, F = 23; WMMA 16x16x16 "
        "chains four of them; mma.sync m8n8k4 is one block (c/d f16/f16, f32/f32, f16 c with "
        "f32 d).",
        default_op="wmma",
    ),
}


def did_you_mean(word: Any, valid: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the valid name closest to ``word``, or ``""`` when none is
    close (difflib, cutoff 0.6; the runner's config suggests names with it too)."""
    hint = difflib.get_close_matches(str(word), list(valid), n=1, cutoff=0.6)
    return f"; did you mean {hint[0]!r}?" if hint else ""


#: GPU generations (compute capabilities) without a model of their own, and the model in
#: :data:`ARCHS` that runs them: sm_86 and sm_87 (Ampere consumer / Orin) take sm80's,
#: sm_72 (Xavier) sm70's, sm_103 and sm_120 sm100's. Every other generation from sm_70 on
#: is its own model or has none.
MODELLED_BY: dict[int, str] = {86: "sm80", 87: "sm80", 72: "sm70", 120: "sm100", 103: "sm100"}


def arch_of_compute_capability(compute_capability: int | str | tuple[int, int]) -> str:
    """The :data:`ARCHS` model of a compute capability (90 -> ``"sm90"``, 86 -> ``"sm80"``:
    :data:`MODELLED_BY`), given as CUDA's integer (86), a ``(major, minor)`` pair such as
    ``torch.cuda.get_device_capability()`` gives, or a string ("8.6", "86"); ``ValueError``
    where none exists (before sm_70, or unmodelled) or the value is no capability."""
    cc = _capability_number(compute_capability)
    name = MODELLED_BY.get(cc, f"sm{cc}")
    if name not in ARCHS:
        raise ValueError(f"compute capability {cc / 10:.1f}: no model (known: {', '.join(ARCHS)})")
    return name


def _same_shape(ins: Instruction, shape: tuple[int, ...]) -> bool:
    """Whether a requested (m, n, k) names ``ins``. A wgmma is modelled as ``m64n8kK``: its
    PTX shapes ``m64nNkK`` for N = 8, 16, ..., 256 compute every output column alike, so any
    such N names it (our GEMM kernels use m64n256k16)."""
    if ins.family == "wgmma" and len(shape) == 3:
        m, n, k = shape
        return (m, k) == (ins.shape[0], ins.shape[2]) and n % 8 == 0 and 8 <= n <= 256
    return shape == ins.shape


def _capability_number(value: Any) -> int:
    """86 from 86, (8, 6), "8.6" or "86"; ``ValueError`` naming the value otherwise."""
    if isinstance(value, tuple | list) and len(value) == 2:
        major, minor = value
        if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
            return 10 * major + minor
    elif isinstance(value, str) and re.fullmatch(r"\d+(\.\d)?", value.strip()):
        major, _, minor = value.strip().partition(".")
        return 10 * int(major) + int(minor) if minor else int(major)
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    raise ValueError(
        f"compute capability {value!r}: expected an integer such as 86, a (major, minor) "
        "pair such as (8, 6), or a string such as '8.6'"
    )


def _generation(word: Any) -> int | None:
    """The compute capability a name such as ``"sm86"``, ``"sm_86"`` or ``"SM86"`` spells."""
    m = re.fullmatch(r"sm_?(\d+)", str(word).strip().lower())
    return int(m.group(1)) if m else None


#: Compute capabilities of NVIDIA products by name (upper case, spaces dropped), so that a
#: product name given as an arch ("H100") is told which model runs it, not a look-alike
#: spelling ("sm100"). From NVIDIA's CUDA GPU compute capability table.
PRODUCT_CAPABILITY: dict[str, int] = {
    "V100": 70, "TITANV": 70, "T4": 75, "RTX2080": 75, "RTX2080TI": 75, "QUADRORTX6000": 75,
    "A100": 80, "A30": 80, "A10": 86, "A40": 86, "A16": 86, "RTX3090": 86, "RTXA6000": 86,
    "L4": 89, "L40": 89, "L40S": 89, "RTX4090": 89, "RTX6000ADA": 89,
    "H100": 90, "H200": 90, "GH200": 90, "H800": 90, "H20": 90,
    "B100": 100, "B200": 100, "GB200": 100, "B300": 103, "GB300": 103,
    "RTX5090": 120, "RTXPRO6000": 120,
}  # fmt: skip


def unknown_arch_message(name: Any, valid: Iterable[str] | None = None) -> str:
    """Why ``name`` is not one of the archs ``valid`` (default :data:`ARCHS`), as one sentence
    that every place taking an arch raises (:func:`get_arch`, ``gemm``, ``mma``, the runner's
    config): a GPU generation that another model runs names that model (``"sm86"``: "'sm80'
    models it, so write 'sm80'", :data:`MODELLED_BY`), as does a product name (``"H100"``:
    :data:`PRODUCT_CAPABILITY`); one before sm_70 has no tensor cores; anything else gets the
    closest valid spelling. The valid names end the message."""
    valid = tuple(ARCHS if valid is None else valid)
    listed = f"(valid: {', '.join(valid)})"
    product = PRODUCT_CAPABILITY.get(
        re.sub(r"[\s_-]", "", str(name)).upper().removeprefix("NVIDIA")
    )
    if product is not None:
        runs = MODELLED_BY.get(product, f"sm{product}")
        if runs in valid:
            return (
                f"unknown arch {name!r}: that GPU has compute capability {product / 10:.1f}, "
                f"which {runs!r} models, so write {runs!r} {listed}"
            )
    cc = _generation(name)
    if cc is not None and cc < 70:
        return (
            f"unknown arch {name!r}: GPUs before sm_70 (Volta) have no tensor cores to "
            f"emulate {listed}"
        )
    model = MODELLED_BY.get(cc) if cc is not None else None
    if model is not None and model in valid:
        return (
            f"unknown arch {name!r}: that GPU generation has no model of its own; {model!r} "
            f"models it, so write {model!r} {listed}"
        )
    return f"unknown arch {name!r}{did_you_mean(name, valid)} {listed}"


def get_arch(name: str | ArchModel) -> ArchModel:
    """The :class:`ArchModel` called ``name`` (e.g. ``"sm90"``; case and ``_`` ignored:
    ``"SM_90"``); ``ValueError`` (:func:`unknown_arch_message`) otherwise, which names the
    model of a generation that has none of its own (``"sm86"``: ``"sm80"``) and lists the
    known ones."""
    if isinstance(name, ArchModel):
        return name
    key = str(name).lower().replace("_", "")
    if key in ARCHS:
        return ARCHS[key]
    raise ValueError(unknown_arch_message(name))


def input_formats(arch: str | ArchModel) -> tuple[str, ...]:
    """Input formats (canonical names, table order) that ``arch``'s model has a default
    tensor-core instruction for: the format x arch table of ``gemm`` and of the runner's
    catalog (:func:`format_problem`)."""
    model = get_arch(arch)
    return tuple(dict.fromkeys(ins.a_fmt for ins in model.instructions.values()))


def format_problem(arch: str | ArchModel, fmt: Any) -> str | None:
    """None if ``arch`` has a tensor-core instruction for ``fmt`` inputs (any alias), else the
    one sentence that ``gemm`` and the runner's config validator
    (``precision.runner.catalog.combination_problem``) both give: "arch 'sm70' has no
    tensor-core instruction for 'int8' inputs (it has: fp16)"."""
    model = get_arch(arch)
    name = get_format(fmt).name
    have = input_formats(model)
    if name in have:
        return None
    return (
        f"arch {model.name!r} has no tensor-core instruction for {name!r} inputs "
        f"(it has: {', '.join(have)})"
    )
