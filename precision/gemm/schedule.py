"""What each GEMM kernel computes, step by step, as data.

A :class:`Schedule` is the numerical contract between a CUDA kernel in
``precision/kernels/gemm_mma.cu`` and the emulator backend (:mod:`precision.gemm.emulator`):
the input rounding, the hi/lo split, the order of MMA instructions per k-block, the fp32
round-to-nearest additions and the epilogue. The emulator executes exactly these operations
with :func:`precision.tensorcore.mma` and numpy float32 arithmetic, so a kernel's output can be
reproduced bit for bit on a CPU.

Operand names in steps: ``A``/``B`` (inputs rounded to the format), ``A_hi``/``A_lo``/``B_hi``/
``B_lo`` (split parts), accumulators by name (``zero`` is a fresh all-zero fp32 accumulator).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from precision.kernels import specs
from precision.kernels.specs import kernel_spec

#: Tile sizes of the mma.sync kernels (gemm_mma.cu; :data:`precision.kernels.specs.MMA_TILE`).
#: The host zero-pads M, N and K to multiples of a kernel's tile; padding K adds all-zero
#: products, and the emulator pads identically.
TILE_M, TILE_N, TILE_K = specs.MMA_TILE

METHODS: tuple[str, ...] = ("plain", "corrected", "satf")
CORRECTIONS: tuple[str, ...] = ("ootomo", "markidis")

#: Instruction k per input format (m16n8k16 f16/bf16, m16n8k8 tf32, m16n8k32 fp8/int8).
INSTRUCTION_K: dict[str, int] = {
    "fp16": 16,
    "bf16": 16,
    "tf32": 8,
    "e4m3": 32,
    "e5m2": 32,
    "int8": 32,
}

#: Ootomo-Yokota residual scale exponent s (lo = fmt((x - hi) * 2^s)), per format.
#: fp16: s = 11 (Ootomo & Yokota 2022: keeps lo out of fp16's subnormal range for |x| >~ 2^-3).
#: bf16: s = 8 (= its precision, by analogy; bf16 has fp32's exponent range, so scaling only
#:       matters near fp32's underflow threshold). Two bf16 terms hold only ~16 bits: corrected
#:       bf16 is NOT expected to reach SGEMM accuracy.
#: tf32: s = 0 (Ootomo & Yokota's TF32-TCEC and CUTLASS 3xTF32 use no scaling; fp32 range).
LO_SCALE_LOG2: dict[str, int] = {"fp16": 11, "bf16": 8, "tf32": 0}


def _kernel_suffix(fmt: str) -> str:
    """Operand-format part of a kernel entry point's name (``gemm_plain_f16``, ``wg_satf_tf32``):
    the PTX type name (:attr:`precision.formats.Format.ptx`) of a floating-point format; the
    int8 kernels carry the canonical name (``gemm_plain_int8``), kept so the cubins stay
    byte-identical."""
    from precision.formats import get_format

    f = get_format(fmt)
    name = f.name if f.is_integer else f.ptx
    assert name is not None  # every GEMM input format has a PTX type
    return name


@dataclass(frozen=True)
class Mma:
    """``dst = mma(a, b, c)`` over one k-block (instruction k), chained in increasing k.
    ``k_part = (lo, hi)`` restricts it to k-block positions lo .. hi-1 (whole instructions);
    ``None`` is the whole k-block. ``satfinite`` is the integer hardware clamp (int8 only)."""

    dst: str
    a: str
    b: str
    c: str
    satfinite: bool = False
    k_part: tuple[int, int] | None = None


@dataclass(frozen=True)
class Add:
    """``dst = fp32_rn(x + y)`` on CUDA cores (``__fadd_rn``, subnormals kept)."""

    dst: str
    x: str
    y: str


@dataclass(frozen=True)
class Scale:
    """``dst = fp32_rn(x * 2**log2)`` (``__fmul_rn``; exact unless the result is subnormal)."""

    dst: str
    x: str
    log2: int


@dataclass(frozen=True)
class Satf:
    """Floating-point satf in software: +Inf -> +FLT_MAX, -Inf -> -FLT_MAX, NaN -> +0."""

    dst: str


@dataclass(frozen=True)
class IntToFloat:
    """``dst = fp32_rn(int32 x)`` (``__int2float_rn``) for integer accumulators."""

    dst: str


Op = Mma | Add | Scale | Satf | IntToFloat


@dataclass(frozen=True)
class Split:
    """fp32 input x -> ``hi = fmt_rne(x)``, ``lo = fmt_rne(fp32_rn(fp32_rn(x - hi) * 2**s))``."""

    lo_scale_log2: int


@dataclass(frozen=True)
class Schedule:
    """One kernel's arithmetic. ``step`` runs once per k-block of ``k_block`` (one
    instruction's k, or ``OOTOMO_BLOCK_K`` for the wgmma Ootomo kernels) in increasing k; an
    ``Mma`` over a k-block (or its ``k_part``) of several instructions chains them in
    increasing k; ``epilogue`` runs once; ``output`` names the fp32 result.

    ``k_perm[s]`` is the physical k (within one instruction's k-range) that the kernel places in
    the instruction's k-slot ``s`` of the PTX fragment layout; it matters where an instruction
    is not one fused block over all its k (fp8 on sm_90) and is applied by the emulator always.
    """

    kernel: str
    method: str
    fmt: str
    correction: str | None
    k_block: int
    k_perm: tuple[int, ...]
    input_rounding: str
    split: Split | None
    accumulators: tuple[str, ...]
    step: tuple[Op, ...]
    epilogue: tuple[Op, ...]
    output: str
    integer: bool = False
    tile: tuple[int, int, int] = (TILE_M, TILE_N, TILE_K)
    #: floating-point satf: the kernel runs the plain chain and flags non-finite results;
    #: this second kernel then recomputes with the per-step clamp (a no-op when none were).
    strict_kernel: str | None = None
    ftz: bool = False
    fma_contraction: bool = False
    #: CUDA source of ``kernel`` (``gemm_wgmma.cu``: wgmma, sm_90a; ``gemm_mma.cu``: mma.sync).
    source: str = specs.MMA_SOURCE

    def describe(self) -> str:
        """Human-readable one-screen summary (used in docs and the bench CSV)."""
        lines = [
            f"kernel {self.kernel}: {self.method} {self.fmt}"
            + (f" ({self.correction})" if self.correction else ""),
            f"  input rounding: {self.input_rounding}",
        ]
        if self.split:
            lines.append(
                f"  split: hi = {self.fmt}(x), lo = {self.fmt}((x - hi) * 2^"
                f"{self.split.lo_scale_log2})"
            )
        lines.append(f"  per k-block of {self.k_block}: " + "; ".join(map(_fmt_op, self.step)))
        lines.append("  epilogue: " + ("; ".join(map(_fmt_op, self.epilogue)) or "none"))
        lines.append(
            f"  fp32 CUDA-core ops RN, ftz={self.ftz}, fma_contraction="
            f"{self.fma_contraction}; tile {self.tile}, host zero-pads to it"
        )
        return "\n".join(lines)


def _fmt_op(op: Op) -> str:
    if isinstance(op, Mma):
        sat = ".satfinite" if op.satfinite else ""
        part = f"[k {op.k_part[0]}:{op.k_part[1]}]" if op.k_part else ""
        return f"{op.dst} = mma{sat}({op.a}, {op.b}, {op.c}){part}"
    if isinstance(op, Add):
        return f"{op.dst} = rn({op.x} + {op.y})"
    if isinstance(op, Scale):
        return f"{op.dst} = rn({op.x} * 2^{op.log2})"
    if isinstance(op, Satf):
        return f"{op.dst} = satf({op.dst})"
    return f"{op.dst} = rn(float({op.dst}))"


def k_permutation(fmt: str) -> tuple[int, ...]:
    """Slot -> physical k map inside one m16n8k32 instruction of the mma.sync kernels on an
    8-bit format (gemm_mma.cu, ``make_a``): slot 16h + 4q + i holds k = 16h + q + 4i. The
    f16/bf16/tf32 GEMMs run on wgmma with k in natural order, so only k = 32 occurs."""
    if INSTRUCTION_K[fmt] != 32:
        raise ValueError(
            f"fmt={fmt!r}: k_permutation is defined for the 8-bit mma.sync kernels "
            f"(e4m3, e5m2, int8); the wgmma kernels use k in natural order"
        )
    return tuple(16 * (s // 16) + (s % 16) // 4 + 4 * (s % 4) for s in range(32))


def canonical_format(fmt: object) -> str:
    """Canonical format name via :func:`precision.formats.get_format` (aliases accepted)."""
    from precision.formats import get_format

    name = get_format(fmt).name
    if name not in INSTRUCTION_K:
        raise ValueError(
            f"fmt={fmt!r}: GEMM input format must be one of {sorted(INSTRUCTION_K)}, got {name!r}"
        )
    return name


#: Formats whose kernels run on wgmma (gemm_wgmma.cu); fp8/int8 stay on mma.sync (gemm_mma.cu).
WGMMA_FORMATS: tuple[str, ...] = ("fp16", "bf16", "tf32")
#: Ootomo k-block of the wgmma kernels per format, in k: t = hi*hi is chained inside the tensor
#: core over this many k (8 instructions of f16/bf16, 4 of tf32) before its fp32
#: round-to-nearest add. Four CTA k-stages of the split kernels for f16/bf16, two for tf32
#: (:func:`precision.kernels.specs.ootomo_block_k`, from gemm_wgmma.cu's WG_SPLIT_TBLOCK*).
OOTOMO_BLOCK_K: dict[str, int] = {f: specs.ootomo_block_k(_kernel_suffix(f)) for f in WGMMA_FORMATS}


def split_stage_k(fmt: str) -> int:
    """k of one k-stage of the split (corrected) wgmma kernels on ``fmt``: operand rows of 64
    bytes, 32 k for fp16/bf16 and 16 for tf32 (:func:`precision.kernels.specs.split_stage_k`)."""
    return specs.split_stage_k(_kernel_suffix(canonical_format(fmt)))


def wgmma_tile(method: str, fmt: str) -> tuple[int, int, int]:
    """(BM, BN, BK) of the wgmma kernel for ``method`` on ``fmt``, from its kernel spec: plain
    and satf 128 x 256 with k-stages of 128 bytes per row; split kernels (Ootomo and Markidis)
    128 x 128 with K padded to whole Ootomo k-blocks (``OOTOMO_BLOCK_K``)."""
    mode = method if method in ("plain", "satf") else "ootomo"
    return kernel_spec(f"wg_{mode}_{_kernel_suffix(canonical_format(fmt))}").gemm_tile


def get_schedule(method: str, fmt: object, correction: str | None = "ootomo") -> Schedule:
    """The schedule of the kernel implementing ``method`` on inputs rounded to ``fmt``.

    ``correction`` is used only by ``method="corrected"`` (``"ootomo"`` or ``"markidis"``).
    """
    if method not in METHODS:
        raise ValueError(f"method={method!r}: expected one of {METHODS}")
    f = canonical_format(fmt)
    kfmt = _kernel_suffix(f)
    ki = INSTRUCTION_K[f]
    if f in WGMMA_FORMATS:  # wgmma: operands K-major in shared memory, k in natural order
        common: dict[str, Any] = dict(
            fmt=f,
            k_block=ki,
            k_perm=tuple(range(ki)),
            tile=wgmma_tile(method, f),
            source=specs.WGMMA_SOURCE,
        )
        prefix = "wg"
    else:
        common = dict(fmt=f, k_block=ki, k_perm=k_permutation(f))
        prefix = "gemm"
    if f in ("e4m3", "e5m2"):
        rounding = "rne, satfinite (|x| > MAX_NORM -> +-MAX_NORM)"
    elif f == "int8":
        rounding = "rne to integer, then clamp to [-128, 127] (NaN -> 0)"
    else:
        rounding = "rne (subnormals kept; overflow -> Inf)"
    integer = f == "int8"
    if method == "plain":
        epi = (IntToFloat("acc"),) if integer else ()
        return Schedule(
            kernel=f"{prefix}_plain_{kfmt}",
            method=method,
            correction=None,
            input_rounding=rounding,
            split=None,
            accumulators=("acc",),
            step=(Mma("acc", "A", "B", "acc"),),
            epilogue=epi,
            output="acc",
            integer=integer,
            **common,
        )
    if method == "satf":
        if integer:
            step: tuple[Op, ...] = (Mma("acc", "A", "B", "acc", satfinite=True),)
            epi = (IntToFloat("acc"),)
        else:
            step, epi = (Mma("acc", "A", "B", "acc"), Satf("acc")), ()
        return Schedule(
            kernel=f"{prefix}_satf_{kfmt}",
            method=method,
            correction=None,
            input_rounding=rounding,
            split=None,
            accumulators=("acc",),
            step=step,
            epilogue=epi,
            output="acc",
            integer=integer,
            strict_kernel=None if integer else f"gemm_satfstrict_{kfmt}",
            **common,
        )
    # corrected
    if f not in LO_SCALE_LOG2:
        raise ValueError(
            f"fmt={fmt!r}: method='corrected' supports {sorted(LO_SCALE_LOG2)}, got {f!r}"
        )
    if correction == "ootomo":
        s = LO_SCALE_LOG2[f]
        kb = OOTOMO_BLOCK_K[f]
        common.update(k_block=kb, k_perm=tuple(range(kb)))
        return Schedule(
            kernel=f"{prefix}_ootomo_{kfmt}",
            method=method,
            correction=correction,
            input_rounding=rounding,
            split=Split(s),
            accumulators=("main", "corr"),
            step=_ootomo_step(kb, split_stage_k(f)),
            epilogue=(Scale("corr", "corr", -s), Add("out", "main", "corr")),
            output="out",
            **common,
        )
    if correction == "markidis":
        return Schedule(
            kernel=f"{prefix}_markidis_{kfmt}",
            method=method,
            correction=correction,
            input_rounding=rounding,
            split=Split(0),
            accumulators=("acc",),
            step=(
                Mma("acc", "A_hi", "B_hi", "acc"),
                Mma("acc", "A_lo", "B_hi", "acc"),
                Mma("acc", "A_hi", "B_lo", "acc"),
            ),
            epilogue=(),
            output="acc",
            **common,
        )
    raise ValueError(f"correction={correction!r}: expected one of {CORRECTIONS}")


def _ootomo_step(k_block: int, stage_k: int) -> tuple[Op, ...]:
    """One Ootomo k-block as the split kernels run it, k-stage by k-stage: t = A_hi B_hi
    chained over the whole block (starting from zero), the corrections A_lo B_hi then A_hi B_lo
    per k-stage, main += t at the end of the block."""
    parts = (
        [None] if stage_k == k_block else [(lo, lo + stage_k) for lo in range(0, k_block, stage_k)]
    )
    step: list[Op] = []
    for i, part in enumerate(parts):
        step += [
            Mma("t", "A_hi", "B_hi", "zero" if i == 0 else "t", k_part=part),
            Mma("corr", "A_lo", "B_hi", "corr", k_part=part),
            Mma("corr", "A_hi", "B_lo", "corr", k_part=part),
        ]
    return (*step, Add("main", "main", "t"))


def all_schedules() -> list[Schedule]:
    """Every (method, format, correction) the CUDA backend implements."""
    out = [get_schedule(m, f) for m in ("plain", "satf") for f in INSTRUCTION_K]
    out += [get_schedule("corrected", f, c) for c in CORRECTIONS for f in LO_SCALE_LOG2]
    return out
