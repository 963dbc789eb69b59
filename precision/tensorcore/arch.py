"""What a tensor-core instruction computes, per GPU generation, as data.

An :class:`Instruction` describes one MMA instruction shape (m, n, k) for one pair of input
format and accumulator format, and how the hardware computes each output element:

- ``block``: how many consecutive products are fused into one *block* (a fused dot-product-add
  of ``block`` exact products plus the accumulator ``c``);
- ``frac_bits`` (F): each term of a block is truncated toward zero to a multiple of
  ``2**(E - F)``, where E is the block's anchor exponent (the largest term exponent);
- ``e_zero``: the anchor exponent given to zero terms (a zero ``c`` or a zero product), which
  is a floor on E;
- ``out_rounding``: how the exact block sum becomes the accumulator format
  (``"rz"`` fp32 round-toward-zero, ``"rz_e8m13"`` fp32 with only 13 fraction bits kept,
  ``"rne"`` fp16 round-to-nearest-even); overflow goes to ±Inf in every case;
- ``schedule``: ``"chain"`` (blocks in increasing k, each block's rounded output is the next
  block's ``c``) or ``"fp8_via_f16"`` (Hopper's lowering of fp8 ``mma.sync`` onto f16 HMMA:
  two interleaved 16-product blocks from ``c = +0``, then ``c`` added with one fp32/fp16
  round-to-nearest add).

An :class:`ArchModel` is the table of instructions of one GPU generation. Only ``sm90`` is
verified bit for bit against recorded H200 outputs (tests/data/sm90); the other generations
are transcribed from the published models (Khattak & Mikaitis 2025; Xie et al., MMA-Sim 2025;
see docs/emulator.md) and say so in ``verified``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Input format name -> (exponent of the leading bit given to subnormals = emin).
INPUT_EMIN: dict[str, int] = {"fp16": -14, "bf16": -126, "tf32": -126, "e4m3": -6, "e5m2": -14}
# Accumulator format -> emin (subnormal c counts at this exponent).
ACC_EMIN: dict[str, int] = {"fp32": -126, "fp16": -14}


@dataclass(frozen=True)
class Instruction:
    """One MMA instruction for (input format, accumulator format). See the module docstring."""

    ptx: str
    shape: tuple[int, int, int]
    in_fmt: str
    acc_fmt: str
    block: int
    frac_bits: int
    e_zero: int
    out_rounding: str
    schedule: str = "chain"

    @property
    def k(self) -> int:
        """The instruction's inner dimension: K must be a multiple of it."""
        return self.shape[2]


@dataclass(frozen=True)
class ArchModel:
    """The tensor-core instructions of one GPU generation, keyed by (input, accumulator)."""

    name: str
    description: str
    verified: str
    instructions: dict[tuple[str, str], Instruction] = field(repr=False)

    def instruction(self, in_fmt: str, acc_fmt: str) -> Instruction:
        """The instruction for this pair of formats, or ``TypeError`` listing what exists."""
        try:
            return self.instructions[(in_fmt, acc_fmt)]
        except KeyError:
            have = ", ".join(f"{i}->{a}" for i, a in sorted(self.instructions))
            raise TypeError(
                f"arch {self.name!r} has no tensor-core instruction for {in_fmt} inputs with an "
                f"{acc_fmt} accumulator; available: {have}"
            ) from None


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
    f16_shape: tuple[int, int, int] = (16, 8, 16),
) -> dict[tuple[str, str], Instruction]:
    m, n, k = f16_shape
    shape_txt = f"m{m}n{n}k{k}"
    ins = {
        ("fp16", "fp32"): Instruction(
            f"mma.sync.aligned.{shape_txt}.row.col.f32.f16.f16.f32",
            f16_shape,
            "fp16",
            "fp32",
            f16_block,
            frac_bits,
            e_zero32,
            "rz",
        ),
        ("fp16", "fp16"): Instruction(
            f"mma.sync.aligned.{shape_txt}.row.col.f16.f16.f16.f16",
            f16_shape,
            "fp16",
            "fp16",
            f16_block,
            frac_bits,
            e_zero16,
            "rne",
        ),
    }
    if bf16:
        ins[("bf16", "fp32")] = Instruction(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
            (16, 8, 16),
            "bf16",
            "fp32",
            f16_block,
            frac_bits,
            e_zero32,
            "rz",
        )
    if tf32_block:
        ins[("tf32", "fp32")] = Instruction(
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
            (16, 8, 8),
            "tf32",
            "fp32",
            tf32_block,
            frac_bits,
            e_zero32,
            "rz",
        )
    for f8 in ("e4m3", "e5m2"):
        if fp8 == "via_f16":
            for acc, ez in (("fp32", e_zero32), ("fp16", e_zero16)):
                ins[(f8, acc)] = Instruction(
                    f"mma.sync.aligned.m16n8k32.row.col.{acc[:1]}{acc[2:]}.{f8}.{f8}.{acc[:1]}"
                    f"{acc[2:]}",
                    (16, 8, 32),
                    f8,
                    acc,
                    16,
                    frac_bits,
                    ez,
                    "rz" if acc == "fp32" else "rne",
                    schedule="fp8_via_f16",
                )
        elif fp8 == "native":
            fb = fp8_frac_bits if fp8_frac_bits is not None else frac_bits
            ins[(f8, "fp32")] = Instruction(
                f"mma.sync.aligned.m16n8k32.row.col.f32.{f8}.{f8}.f32",
                (16, 8, 32),
                f8,
                "fp32",
                fp8_block,
                fb,
                e_zero32,
                "rz_e8m13" if fb == 13 else "rz",
            )
            ins[(f8, "fp16")] = Instruction(
                f"mma.sync.aligned.m16n8k32.row.col.f16.{f8}.{f8}.f16",
                (16, 8, 32),
                f8,
                "fp16",
                fp8_block,
                fb,
                e_zero16,
                "rne",
            )
    return ins


def _int8_instruction() -> dict[tuple[str, str], Instruction]:
    # Integer MMA is exact; block/frac_bits/e_zero do not apply.
    return {
        ("int8", "int32"): Instruction(
            "mma.sync.aligned.m16n8k32.row.col{.satfinite}.s32.s8.s8.s32",
            (16, 8, 32),
            "int8",
            "int32",
            32,
            0,
            0,
            "wrap",
        )
    }


ARCHS: dict[str, ArchModel] = {
    "sm90": ArchModel(
        "sm90",
        "Hopper (H100/H200) mma.sync: HMMA.16816 fuses 16 f16/bf16 products, HMMA.1688 8 tf32 "
        "products, F = 25, e_zero = -133 (fp32) / -21 (fp16); fp8 lowered to f16 HMMA.",
        "bit-exact against recorded H200 outputs (tests/data/sm90)",
        {
            **_float_instructions(
                f16_block=16, tf32_block=8, frac_bits=25, e_zero32=-133, e_zero16=-21, fp8="via_f16"
            ),
            **_int8_instruction(),
        },
    ),
    "sm100": ArchModel(
        "sm100",
        "Blackwell (B200) mma.sync: as Hopper for f16/bf16/tf32 (L = 16/8, F = 25); fp8 "
        "lowered to f16 HMMA with an fp32 RN add of c.",
        "from the literature (Khattak & Mikaitis 2025; MMA-Sim 2025); not verified here",
        {
            **_float_instructions(
                f16_block=16, tf32_block=8, frac_bits=25, e_zero32=-133, e_zero16=-21, fp8="via_f16"
            ),
            **_int8_instruction(),
        },
    ),
    "sm89": ArchModel(
        "sm89",
        "Ada (L40S): HMMA fuses 8 f16/bf16 or 4 tf32 products, F = 24; QMMA fp8 fuses 16 "
        "products with F = 13 and an e8m13 (RZ) fp32 output.",
        "from the literature (Khattak & Mikaitis 2025; MMA-Sim 2025); not verified here",
        {
            **_float_instructions(
                f16_block=8,
                tf32_block=4,
                frac_bits=24,
                e_zero32=-132,
                e_zero16=-20,
                fp8="native",
                fp8_block=16,
                fp8_frac_bits=13,
            ),
            **_int8_instruction(),
        },
    ),
    "sm80": ArchModel(
        "sm80",
        "Ampere (A100): HMMA.16816 = two fused blocks of 8 f16/bf16 products, tf32 blocks of 4, "
        "F = 24, e_zero = -132 (fp32) / -20 (fp16).",
        "from the literature (Khattak & Mikaitis 2025; MMA-Sim 2025); not verified here",
        {
            **_float_instructions(
                f16_block=8, tf32_block=4, frac_bits=24, e_zero32=-132, e_zero16=-20, fp8=None
            ),
            **_int8_instruction(),
        },
    ),
    "sm70": ArchModel(
        "sm70",
        "Volta (V100): WMMA 16x16x16 = chained fused blocks of 4 f16 products, F = 23.",
        "from the literature (Fasi et al. 2021; Khattak & Mikaitis 2025); not verified here",
        _float_instructions(
            f16_block=4,
            tf32_block=0,
            frac_bits=23,
            e_zero32=-131,
            e_zero16=-19,
            fp8=None,
            bf16=False,
            f16_shape=(16, 16, 16),
        ),
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
