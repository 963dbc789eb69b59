"""The ``mma.sync`` instructions probed with fragment-packed kernels (issue 15's families).

Every entry names its PTX instruction, shape, the bit widths of A/B and C/D elements and the
oldest architecture whose ``ptxas`` accepts it (PTX ISA, "Warp-level matrix instructions").
:func:`probe_kernels` turns them into :class:`~precision.probe.gen_kernels.ProbeKernel`\\ s with
the layouts of :mod:`precision.tensorcore.fragments`.
"""

from __future__ import annotations

from dataclasses import dataclass

from precision.formats import get_format
from precision.probe.gen_kernels import ProbeKernel
from precision.tensorcore.fragments import mma_fragments

#: PTX type name -> element bits (``Format.element_bits``: tf32 32, s4 4, b1 1).
_BITS = {
    t: get_format(t).element_bits
    for t in (
        "f64",
        "f32",
        "tf32",
        "f16",
        "bf16",
        "e4m3",
        "e5m2",
        "s8",
        "u8",
        "s4",
        "u4",
        "b1",
        "s32",
    )
}


@dataclass(frozen=True)
class GenericProbe:
    """One probed instruction: ``mma.sync.aligned.<shape>.row.col[.satfinite].d.a.b.c``."""

    shape: tuple[int, int, int]
    d: str
    a: str
    b: str
    c: str
    min_sm: int
    satfinite: bool = False
    bitop: str = ""  # b1 only: "xor.popc" or "and.popc"

    @property
    def name(self) -> str:
        m, n, k = self.shape
        parts = [f"m{m}n{n}k{k}", self.d, self.a, self.b, self.c]
        if self.bitop:
            parts.append(self.bitop.replace(".", ""))
        if self.satfinite:
            parts.append("satfinite")
        return "_".join(parts)

    @property
    def ptx(self) -> str:
        m, n, k = self.shape
        sat = ".satfinite" if self.satfinite else ""
        op = f".{self.bitop}" if self.bitop else ""
        return f"mma.sync.aligned.m{m}n{n}k{k}.row.col{sat}.{self.d}.{self.a}.{self.b}.{self.c}{op}"


def _f(shape, d, a, b, c, sm, **kw) -> GenericProbe:  # noqa: ANN001 (table helper)
    return GenericProbe(shape, d, a, b, c, sm, **kw)


#: The probed set. Families already recorded with the hand-written probes (tests/data/sm90:
#: m16n8k16 f16/bf16, m16n8k8 tf32, m16n8k32 e4m3/e5m2/s8) are repeated only where this
#: kernel path must first reproduce an old recording (m16n8k16 f16 -> f32).
PROBES: tuple[GenericProbe, ...] = (
    # 16-bit floats
    _f((16, 8, 16), "f32", "f16", "f16", "f32", 80),
    _f((16, 8, 8), "f32", "f16", "f16", "f32", 75),
    _f((16, 8, 8), "f16", "f16", "f16", "f16", 75),
    _f((16, 8, 8), "f32", "bf16", "bf16", "f32", 80),
    _f((16, 8, 4), "f32", "tf32", "tf32", "f32", 80),
    # fp8 (mixed too), f32 and f16 accumulate
    _f((16, 8, 32), "f32", "e4m3", "e5m2", "f32", 89),
    _f((16, 8, 32), "f32", "e5m2", "e4m3", "f32", 89),
    _f((16, 8, 32), "f16", "e4m3", "e4m3", "f16", 89),
    _f((16, 8, 32), "f16", "e5m2", "e5m2", "f16", 89),
    _f((16, 8, 32), "f16", "e4m3", "e5m2", "f16", 89),
    _f((16, 8, 16), "f32", "e4m3", "e4m3", "f32", 89),
    # f64 (DMMA)
    _f((8, 8, 4), "f64", "f64", "f64", "f64", 80),
    _f((16, 8, 4), "f64", "f64", "f64", "f64", 90),
    _f((16, 8, 8), "f64", "f64", "f64", "f64", 90),
    _f((16, 8, 16), "f64", "f64", "f64", "f64", 90),
    # 8-bit integers, mixed signedness
    _f((16, 8, 32), "s32", "u8", "u8", "s32", 80),
    _f((16, 8, 32), "s32", "s8", "u8", "s32", 80),
    _f((16, 8, 32), "s32", "u8", "s8", "s32", 80, satfinite=True),
    _f((16, 8, 16), "s32", "s8", "s8", "s32", 80),
    _f((8, 8, 16), "s32", "s8", "u8", "s32", 75),
    # 4-bit integers
    _f((16, 8, 64), "s32", "s4", "s4", "s32", 80),
    _f((16, 8, 64), "s32", "u4", "s4", "s32", 80, satfinite=True),
    _f((8, 8, 32), "s32", "u4", "u4", "s32", 75),
    # single bit
    _f((16, 8, 256), "s32", "b1", "b1", "s32", 80, bitop="xor.popc"),
    _f((16, 8, 256), "s32", "b1", "b1", "s32", 80, bitop="and.popc"),
    _f((8, 8, 128), "s32", "b1", "b1", "s32", 75, bitop="xor.popc"),
)


#: Candidates every ptxas refuses (kept so that ``precision capture`` records the refusal):
#: m16n8k16 with C and D of different types ("dtype must be '.f16' when .ctype is '.f16'").
REFUSED: tuple[GenericProbe, ...] = (
    _f((16, 8, 16), "f32", "f16", "f16", "f16", 80),
    _f((16, 8, 16), "f16", "f16", "f16", "f32", 80),
)


def probe_kernel(p: GenericProbe) -> ProbeKernel:
    """The :class:`ProbeKernel` of one probed instruction."""
    if _BITS[p.a] != _BITS[p.b]:
        raise ValueError(f"{p.name}: A and B of different widths are not supported")
    a, b, c = mma_fragments(p.shape, _BITS[p.a], _BITS[p.c])
    _, _, d = mma_fragments(p.shape, _BITS[p.a], _BITS[p.d])
    return ProbeKernel(f"probe_{p.name}", p.ptx, a, b, c, d, p.min_sm)


def probe_kernels() -> list[ProbeKernel]:
    """A :class:`ProbeKernel` per entry of :data:`PROBES` (what the generated file holds)."""
    return [probe_kernel(p) for p in PROBES]


def ptxas_verdict(kernel: ProbeKernel, sm: int, workdir: str) -> str | None:
    """Compile ``kernel`` alone for ``sm_<sm>``: None if ptxas accepts it, else its first error.

    ``precision capture`` records these verdicts, so a refusal is evidence too (an
    instruction the architecture's assembler does not take) rather than a silent gap.
    """
    import subprocess
    from pathlib import Path

    from precision.probe.gen_kernels import HEADER, kernel_source

    src = Path(workdir) / f"{kernel.entry}_sm{sm}.cu"
    # Drop the architecture guard so that the instruction is really assembled for this target.
    body = kernel_source(kernel).replace(
        f"#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= {kernel.min_sm}0", "#if 1"
    )
    src.write_text(HEADER + body)
    proc = subprocess.run(
        ["nvcc", f"-arch=sm_{sm}", "-cubin", "-o", str(src.with_suffix(".cubin")), str(src)],
        capture_output=True,
        text=True,
    )
    if proc.returncode == 0:
        return None
    errors = [ln for ln in proc.stderr.splitlines() if "error" in ln]
    first = errors[0] if errors else proc.stderr.strip()
    return first.split("error", 1)[-1].lstrip(" :") if "error" in first else first
