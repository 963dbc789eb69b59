"""The ``mma.sync`` instructions probed with fragment-packed kernels (issue 15's families).

Each probe refers to an :class:`~precision.tensorcore.arch.Instruction` of the sm90 model (the
PTX string, shape and formats come from there, typed once) and adds what only the probe needs:
the oldest architecture whose ``ptxas`` accepts the instruction (PTX ISA, "Warp-level matrix
instructions"; checked by :func:`ptxas_verdict`) and whether the ``.satfinite`` variant is
run. :func:`probe_kernels` turns them into :class:`~precision.probe.gen_kernels.ProbeKernel`\\ s
with the layouts of :mod:`precision.tensorcore.fragments`.
"""

from __future__ import annotations

from dataclasses import dataclass

from precision.formats import get_format
from precision.probe.gen_kernels import ProbeKernel
from precision.tensorcore.arch import ARCHS, Instruction, _mma_ptx, _ptx_type
from precision.tensorcore.fragments import mma_fragments


@dataclass(frozen=True)
class GenericProbe:
    """One probed instruction: ``mma.sync.aligned.<shape>.row.col[.satfinite].d.a.b.c[.op]``.

    ``a``, ``b``, ``c``, ``d`` are the operands' PTX type names (from the instruction's
    formats); ``name`` is the recording's file name, built from the PTX string.
    """

    instruction: Instruction
    min_sm: int
    satfinite: bool = False
    c_fmt: str | None = None  # C's format where it differs from D's (only refused candidates)

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.instruction.shape

    @property
    def a(self) -> str:
        return _ptx_type(self.instruction.a_fmt)

    @property
    def b(self) -> str:
        return _ptx_type(self.instruction.b_fmt)

    @property
    def d(self) -> str:
        return _ptx_type(self.instruction.acc_fmt)

    @property
    def c(self) -> str:
        return _ptx_type(self.c_fmt) if self.c_fmt else self.d

    @property
    def bitop(self) -> str:
        return self.instruction.bitop

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
        if self.c_fmt:  # a candidate outside the instruction data: C and D of other types
            i = self.instruction
            ptx = _mma_ptx(i.shape, i.a_fmt, i.b_fmt, i.acc_fmt)
            return ptx.rsplit(".", 1)[0] + f".{self.c}"
        return self.instruction.satfinite_ptx if self.satfinite else self.instruction.ptx


def _pick(shape, a, b, acc, min_sm, *, satfinite=False, bitop=None) -> GenericProbe:  # noqa: ANN001
    ins = ARCHS["sm90"].instruction(a, acc, b_fmt=b, op="mma", shape=shape, bitop=bitop)
    return GenericProbe(ins, min_sm, satfinite)


#: The probes recorded on 2026-11-23 (the top level of tests/data/sm90_mma/manifest.json).
FIRST: tuple[GenericProbe, ...] = (
    # 16-bit floats and tf32, other shapes
    _pick((16, 8, 16), "f16", "f16", "f32", 80),
    _pick((16, 8, 8), "f16", "f16", "f32", 75),
    _pick((16, 8, 8), "f16", "f16", "f16", 75),
    _pick((16, 8, 8), "bf16", "bf16", "f32", 80),
    _pick((16, 8, 4), "tf32", "tf32", "f32", 80),
    # fp8 (mixed too), f32 and f16 accumulate
    _pick((16, 8, 32), "e4m3", "e5m2", "f32", 89),
    _pick((16, 8, 32), "e5m2", "e4m3", "f32", 89),
    _pick((16, 8, 32), "e4m3", "e4m3", "f16", 89),
    _pick((16, 8, 32), "e5m2", "e5m2", "f16", 89),
    _pick((16, 8, 32), "e4m3", "e5m2", "f16", 89),
    _pick((16, 8, 16), "e4m3", "e4m3", "f32", 89),
    # f64 (DMMA)
    _pick((8, 8, 4), "f64", "f64", "f64", 80),
    _pick((16, 8, 4), "f64", "f64", "f64", 90),
    _pick((16, 8, 8), "f64", "f64", "f64", 90),
    _pick((16, 8, 16), "f64", "f64", "f64", 90),
    # 8-bit integers, mixed signedness
    _pick((16, 8, 32), "u8", "u8", "s32", 80),
    _pick((16, 8, 32), "s8", "u8", "s32", 80),
    _pick((16, 8, 32), "u8", "s8", "s32", 80, satfinite=True),
    _pick((16, 8, 16), "s8", "s8", "s32", 80),
    _pick((8, 8, 16), "s8", "u8", "s32", 75),
    # 4-bit integers
    _pick((16, 8, 64), "s4", "s4", "s32", 80),
    _pick((16, 8, 64), "u4", "s4", "s32", 80, satfinite=True),
    _pick((8, 8, 32), "u4", "u4", "s32", 75),
    # single bit
    _pick((16, 8, 256), "b1", "b1", "s32", 80, bitop="xor.popc"),
    _pick((16, 8, 256), "b1", "b1", "s32", 80, bitop="and.popc"),
    _pick((8, 8, 128), "b1", "b1", "s32", 75, bitop="xor.popc"),
)
#: The probes first recorded on 2026-11-27 (``later_runs`` of that manifest): the rest of the
#: sm90 model's ``mma.sync`` set.
LATER: tuple[GenericProbe, ...] = (
    _pick((16, 8, 32), "e5m2", "e4m3", "f16", 89),
    _pick((16, 8, 16), "e4m3", "e5m2", "f32", 89),
    _pick((16, 8, 16), "e5m2", "e4m3", "f32", 89),
    _pick((16, 8, 16), "e5m2", "e5m2", "f32", 89),
    _pick((16, 8, 64), "s4", "u4", "s32", 80),
    _pick((16, 8, 64), "u4", "u4", "s32", 80),
    _pick((16, 8, 16), "s8", "u8", "s32", 80),
    _pick((16, 8, 16), "u8", "s8", "s32", 80),
    _pick((16, 8, 16), "u8", "u8", "s32", 80),
    _pick((8, 8, 16), "s8", "s8", "s32", 75),
    _pick((8, 8, 16), "u8", "s8", "s32", 75),
    _pick((8, 8, 16), "u8", "u8", "s32", 75),
    _pick((8, 8, 32), "s4", "s4", "s32", 75),
    _pick((8, 8, 32), "s4", "u4", "s32", 75),
    _pick((8, 8, 32), "u4", "s4", "s32", 75),
    _pick((8, 8, 128), "b1", "b1", "s32", 80, bitop="and.popc"),
)
#: The probed set: every sm90 ``mma.sync`` instruction beyond the families recorded with the
#: hand-written probes (tests/data/sm90), plus m16n8k16 f16 -> f32 again as a check that this
#: kernel path reproduces the numerics recorded there.
PROBES: tuple[GenericProbe, ...] = FIRST + LATER

#: Candidates every ptxas refuses (kept so that ``precision capture`` records the refusal):
#: m16n8k16 with C and D of different types ("dtype must be '.f16' when .ctype is '.f16'").
REFUSED: tuple[GenericProbe, ...] = (
    GenericProbe(PROBES[0].instruction, 80, c_fmt="fp16"),
    GenericProbe(_pick((16, 8, 16), "f16", "f16", "f16", 80).instruction, 80, c_fmt="fp32"),
)


def probe_kernel(p: GenericProbe) -> ProbeKernel:
    """The :class:`ProbeKernel` of one probed instruction."""
    bits = {t: get_format(t).element_bits for t in (p.a, p.b, p.c, p.d)}
    if bits[p.a] != bits[p.b]:
        raise ValueError(f"{p.name}: A and B of different widths are not supported")
    a, b, c = mma_fragments(p.shape, bits[p.a], bits[p.c])
    _, _, d = mma_fragments(p.shape, bits[p.a], bits[p.d])
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
