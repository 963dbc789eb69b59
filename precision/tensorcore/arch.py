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
``(family, a_fmt, b_fmt, acc_fmt)``. Only ``sm90`` is verified bit for bit against recorded
H200 outputs (tests/data/sm90 for ``mma.sync``, tests/data/sm90_wgmma for ``wgmma``); the other
generations are transcribed from the published models (Khattak & Mikaitis 2025; Xie et al.,
MMA-Sim 2025; see docs/emulator.md) and say so in ``verified`` and in each ``evidence``.
"""

from __future__ import annotations

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

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"Instruction {self.ptx!r}: family {self.family!r} not in {FAMILIES}")
        for f in (self.a_fmt, self.b_fmt, self.acc_fmt):
            if get_format(f).name != f:
                raise ValueError(f"Instruction {self.ptx!r}: format {f!r} is not a canonical name")

    @property
    def k(self) -> int:
        """The instruction's inner dimension: K must be a multiple of it."""
        return self.shape[2]

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
    everywhere except sm70, whose modelled instructions are WMMA).
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

    def instruction(
        self,
        a_fmt: Any,
        acc_fmt: Any,
        *,
        b_fmt: Any = None,
        op: str | None = None,
        shape: tuple[int, int, int] | None = None,
        bitop: str | None = None,
    ) -> Instruction:
        """The instruction for these formats (any alias) and family ``op``.

        ``b_fmt`` defaults to ``a_fmt``; ``op`` to :attr:`default_op`; ``shape`` (m, n, k) and
        ``bitop`` (single-bit inputs) select among the instructions of one format key (the
        default when not given). Raises ``TypeError`` listing what exists when the arch has no
        such instruction.
        """
        op = self.default_op if op is None else op
        if op not in FAMILIES:
            raise ValueError(f"op={op!r}: expected one of {FAMILIES}")
        fa = get_format(a_fmt).name
        fb = fa if b_fmt is None else get_format(b_fmt).name
        fc = get_format(acc_fmt).name
        if shape is not None or bitop is not None:
            for ins in self.all_instructions():
                if (
                    ins.key == (op, fa, fb, fc)
                    and (shape is None or tuple(shape) == ins.shape)
                    and (bitop is None or bitop == ins.bitop)
                ):
                    return ins
            shapes = sorted(
                f"m{i.shape[0]}n{i.shape[1]}k{i.shape[2]}{' ' + i.bitop if i.bitop else ''}"
                for i in self.all_instructions()
                if i.key == (op, fa, fb, fc)
            )
            raise TypeError(
                f"arch {self.name!r} has no {op} instruction for {fa} x {fb} -> {fc} with "
                f"shape={shape} bitop={bitop}; available: {', '.join(shapes) or 'none'}"
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


def _mma_ptx(shape: tuple[int, int, int], a: str, b: str, acc: str) -> str:
    m, n, k = shape
    d, pa, pb = _ptx_type(acc), _ptx_type(a), _ptx_type(b)
    return f"mma.sync.aligned.m{m}n{n}k{k}.row.col.{d}.{pa}.{pb}.{d}"


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
for _a, _b in _fp8_pairs():
    for _acc in ("fp32", "fp16"):
        _SM90_MMA_EVIDENCE.setdefault(
            (_a, _b, _acc),
            "not recorded; assumed to be the recorded fp8 lowering onto f16 HMMA (e4m3_f32 / "
            "e5m2_f32), each operand decoded in its own format",
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


def _sm90_wgmma_extra() -> list[Instruction]:
    """wgmma.mma_async with an f16 accumulator, and s8 (issue 15), as hypotheses to record.

    f16 inputs, f16 accumulator: as ``mma.sync`` m16n8k16 f16 (block 16, F = 25, e_zero -21,
    RNE to fp16). fp8 inputs, f16 accumulator: the recorded fp32 QGMMA block (32 products,
    F = 13) rounded to nearest-even fp16 with the f16 zero anchor -21. s8: exact, wrapping
    modulo 2^32. Recorded on the H200 (precision/probe/wgmma.py ``--extra``,
    tests/data/sm90_wgmma_extra, 104,320 outputs each): f16 -> f16, e4m3/e5m2 -> f16 and s8
    match every output bit for bit; mixed fp8 pairs into f16 are not recorded.
    """
    ev = "H200 wgmma recording tests/data/sm90_wgmma_extra ({}): 100 % bit for bit"

    def make(k, a, b, acc, block, fb, ez, rnd, why) -> Instruction:
        shape = (64, 8, k)
        ptx = _wgmma_ptx(shape, a, b, acc)
        e = ev.format(why) if a == b else f"not recorded; assumed as {a} x {a} ({why})"
        return Instruction(ptx, "wgmma", shape, a, b, acc, block, fb, ez, rnd, "chain", e)

    ins = [make(16, "fp16", "fp16", "fp16", 16, 25, -21, "rne", "as mma.sync f16 -> f16")]
    for a, b in _fp8_pairs():
        ins.append(
            make(32, a, b, "fp16", 32, 13, -21, "rne", "the fp32 QGMMA block, then RNE to fp16")
        )
    ins.append(make(32, "int8", "int8", "int32", 32, 0, 0, "wrap", "exact integer, wrap"))
    return ins


_SM90_MMA2 = "tests/data/sm90_mma"


def _sm90_mma_families() -> tuple[list[Instruction], list[Instruction]]:
    """sm_90 ``mma.sync`` beyond the families of tests/data/sm90: (new defaults, alternates).

    Recorded on the H200 with the fragment-packed probes (precision.probe.generic, recordings
    in tests/data/sm90_mma/<name>.npz, named after the PTX string):

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
        m, n, k = shape
        parts = [f"m{m}n{n}k{k}", _ptx_type(acc), _ptx_type(a), _ptx_type(b), _ptx_type(acc)]
        if bitop:
            parts.append(bitop.replace(".", ""))
        return f"H200 mma.sync recording {_SM90_MMA2}/{'_'.join(parts)}.npz"

    def mma_(shape, a, b, acc, block, fb, ez, rnd, schedule="chain", bitop=""):
        ptx = _mma_ptx(shape, a, b, acc) + (f".{bitop}" if bitop else "")
        return Instruction(
            ptx,
            "mma",
            shape,
            a,
            b,
            acc,
            block,
            fb,
            ez,
            rnd,
            schedule,
            rec(shape, a, b, acc, bitop),
            bitop,
        )

    ints = ("int8", "uint8")
    nibbles = ("int4", "uint4")
    defaults = [
        *(
            mma_((16, 8, 32), a, b, "int32", 32, 0, 0, "wrap")
            for a in ints
            for b in ints
            if (a, b) != ("int8", "int8")
        ),
        *(mma_((16, 8, 64), a, b, "int32", 64, 0, 0, "wrap") for a in nibbles for b in nibbles),
        mma_((16, 8, 256), "uint1", "uint1", "int32", 256, 0, 0, "wrap", bitop="xor.popc"),
        mma_((8, 8, 4), "fp64", "fp64", "fp64", 1, 0, 0, "rn", "fma_chain"),
    ]
    alternates = [
        mma_((16, 8, 8), "fp16", "fp16", "fp32", 8, 25, -133, "rz"),
        mma_((16, 8, 8), "fp16", "fp16", "fp16", 8, 25, -21, "rne"),
        mma_((16, 8, 8), "bf16", "bf16", "fp32", 8, 25, -133, "rz"),
        mma_((16, 8, 4), "tf32", "tf32", "fp32", 4, 25, -133, "rz"),
        *(
            mma_((16, 8, 16), a, b, "fp32", 16, 25, -133, "rz", "fp8_via_f16")
            for a, b in _fp8_pairs()
        ),
        *(mma_((16, 8, 16), a, b, "int32", 16, 0, 0, "wrap") for a in ints for b in ints),
        *(mma_((8, 8, 16), a, b, "int32", 16, 0, 0, "wrap") for a in ints for b in ints),
        *(mma_((8, 8, 32), a, b, "int32", 32, 0, 0, "wrap") for a in nibbles for b in nibbles),
        mma_((16, 8, 256), "uint1", "uint1", "int32", 256, 0, 0, "wrap", bitop="and.popc"),
        *(
            mma_((8, 8, 128), "uint1", "uint1", "int32", 128, 0, 0, "wrap", bitop=op)
            for op in ("xor.popc", "and.popc")
        ),
        *(
            mma_(shape, "fp64", "fp64", "fp64", 1, 0, 0, "rn", "fma_chain")
            for shape in ((16, 8, 4), (16, 8, 8), (16, 8, 16))
        ),
    ]
    return defaults, alternates


ARCHS: dict[str, ArchModel] = {
    "sm90": ArchModel(
        "sm90",
        "Hopper (H100/H200) mma.sync: HMMA.16816 fuses 16 f16/bf16 products, HMMA.1688 8 tf32 "
        "products, F = 25, e_zero = -133 (fp32) / -21 (fp16); fp8 lowered to f16 HMMA. "
        "wgmma: f16/bf16/tf32 as mma.sync; fp8 (QGMMA) one block of 32 products, F = 13, "
        "e8m13 RZ output.",
        "bit-exact against recorded H200 outputs (tests/data/sm90, tests/data/sm90_wgmma)",
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
        _LITERATURE,
        _instructions(
            *_float_instructions(
                f16_block=16, tf32_block=8, frac_bits=25, e_zero32=-133, e_zero16=-21, fp8="via_f16"
            ),
            _int8_instruction(),
        ),
    ),
    "sm89": ArchModel(
        "sm89",
        "Ada (L40S): HMMA fuses 8 f16/bf16 or 4 tf32 products, F = 24; QMMA fp8 fuses 16 "
        "products with F = 13 and an e8m13 (RZ) fp32 output.",
        _LITERATURE,
        _instructions(
            *_float_instructions(
                f16_block=8,
                tf32_block=4,
                frac_bits=24,
                e_zero32=-132,
                e_zero16=-20,
                fp8="native",
                fp8_block=16,
                fp8_frac_bits=13,
            ),
            _int8_instruction(),
        ),
    ),
    "sm80": ArchModel(
        "sm80",
        "Ampere (A100): HMMA.16816 = two fused blocks of 8 f16/bf16 products, tf32 blocks of 4, "
        "F = 24, e_zero = -132 (fp32) / -20 (fp16).",
        _LITERATURE,
        _instructions(
            *_float_instructions(
                f16_block=8, tf32_block=4, frac_bits=24, e_zero32=-132, e_zero16=-20, fp8=None
            ),
            _int8_instruction(),
        ),
    ),
    "sm70": ArchModel(
        "sm70",
        "Volta (V100): WMMA 16x16x16 = chained fused blocks of 4 f16 products, F = 23.",
        "from the literature (Fasi et al. 2021; Khattak & Mikaitis 2025); not verified here",
        _instructions(
            *_float_instructions(
                f16_block=4,
                tf32_block=0,
                frac_bits=23,
                e_zero32=-131,
                e_zero16=-19,
                fp8=None,
                bf16=False,
                family="wmma",
                f16_shape=(16, 16, 16),
            )
        ),
        default_op="wmma",
    ),
}


def get_arch(name: str | ArchModel) -> ArchModel:
    """The :class:`ArchModel` called ``name`` (e.g. ``"sm90"``); ``ValueError`` lists the known."""
    if isinstance(name, ArchModel):
        return name
    key = str(name).lower().replace("_", "")
    if key in ARCHS:
        return ARCHS[key]
    raise ValueError(f"unknown arch {name!r}; known: {', '.join(ARCHS)}")
