"""Generate the fragment-packed ``mma.sync`` probe kernels from the instruction data.

Each generated kernel runs one ``mma.sync`` instruction per warp per tile, ``nchain`` times
along k, on operands that the host has already packed into per-lane register words with the
instruction's fragment layouts (:mod:`precision.tensorcore.fragments`). The kernel therefore
knows nothing about layouts: it loads ``WA`` / ``WB`` / ``WC`` 32-bit words per lane, issues the
instruction and stores ``WD`` words per lane. A wrong layout in the data shows up as wrong
small-integer results on hardware, not as a silently matching kernel.

Global arrays (uint32 words):
  A [T][nchain][32][WA]   B [T][nchain][32][WB]   C [T][32][WC]   D [T][32][WD]

64-bit (f64) registers travel as two words, low word first.

    python -m precision.kernels.generated            # rewrite cuda/mma_probes.cu (and the rest)
    python -m precision.kernels.generated --check    # exit 1 if a committed file differs
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from precision.tensorcore.fragments import Fragment

GENERATED = Path(__file__).resolve().parent / "cuda" / "mma_probes.cu"


@dataclass(frozen=True)
class ProbeKernel:
    """One generated kernel: its entry point, the PTX instruction and the four fragments."""

    entry: str
    ptx: str
    a: Fragment
    b: Fragment
    c: Fragment
    d: Fragment
    min_sm: int  # the oldest sm_XX whose ptxas accepts the instruction


def _regs(frag: Fragment, name: str, first: int, mode: str) -> tuple[list[str], list[str]]:
    """(asm operand placeholders, constraints) of a fragment; mode "=", "+" or "" (input)."""
    letter = "d" if frag.reg_bits == 64 else "r"
    places = [f"%{first + i}" for i in range(frag.regs)]
    cons = [f'"{mode}{letter}"({name}[{i}])' for i in range(frag.regs)]
    return places, cons


def _declare(frag: Fragment, name: str) -> str:
    ctype = "double" if frag.reg_bits == 64 else "uint32_t"
    return f"{ctype} {name}[{frag.regs}];\n"


def _load(frag: Fragment, name: str, src: str, index: str) -> str:
    """Load a declared fragment's registers from global words ``src[index * words ..]``."""
    w = frag.words
    if frag.reg_bits == 64:
        value = (
            f"__hiloint2double((int){src}[({index}) * {w} + 2 * i + 1], "
            f"(int){src}[({index}) * {w} + 2 * i])"
        )
    else:
        value = f"{src}[({index}) * {w} + i]"
    return f"for (int i = 0; i < {frag.regs}; ++i) {name}[i] = {value};\n"


def _store(frag: Fragment, name: str, dst: str, index: str) -> str:
    w = frag.words
    if frag.reg_bits == 64:
        return (
            f"for (int i = 0; i < {frag.regs}; ++i) {{\n"
            f"    {dst}[({index}) * {w} + 2 * i] = (uint32_t)__double2loint({name}[i]);\n"
            f"    {dst}[({index}) * {w} + 2 * i + 1] = (uint32_t)__double2hiint({name}[i]);\n"
            f"}}\n"
        )
    return f"for (int i = 0; i < {frag.regs}; ++i) {dst}[({index}) * {w} + i] = {name}[i];\n"


def chains(k: ProbeKernel) -> bool:
    """Whether D can feed the next instruction's C (same register type), i.e. nchain > 1."""
    return k.c.reg_bits == k.d.reg_bits and k.c.regs == k.d.regs and k.c.elem_bits == k.d.elem_bits


def kernel_source(k: ProbeKernel) -> str:
    """CUDA source of one probe kernel (see the module docstring for the array layouts).

    Where C and D have the same register type the accumulator is one "+" operand and chained
    steps pass D on as C; otherwise (e.g. f16 C, f32 D) C is a separate input and the host
    runs the kernel with nchain = 1 only.
    """
    same = chains(k)
    d_places, d_cons = _regs(k.d, "d", 0, "+" if same else "=")
    a_places, a_cons = _regs(k.a, "a", k.d.regs, "")
    b_places, b_cons = _regs(k.b, "b", k.d.regs + k.a.regs, "")
    if same:
        c_places, c_cons = d_places, list[str]()
    else:
        c_places, c_cons = _regs(k.c, "c", k.d.regs + k.a.regs + k.b.regs, "")
    operands = ", ".join("{" + ",".join(p) + "}" for p in (d_places, a_places, b_places, c_places))
    setup = _declare(k.d, "d")
    if same:
        setup += _load(k.d, "d", "C", "tile * 32 + lane")
    else:
        setup += _declare(k.c, "c") + _load(k.c, "c", "C", "tile * 32 + lane")
    step = (
        "const long long at = (tile * nchain + s) * 32 + lane;\n"
        + _declare(k.a, "a")
        + _declare(k.b, "b")
        + _load(k.a, "a", "A", "at")
        + _load(k.b, "b", "B", "at")
        + f'asm volatile("{k.ptx} {operands};\\n"\n'
        + f"             : {', '.join(d_cons)}\n"
        + f"             : {', '.join(a_cons + b_cons + c_cons)});\n"
    )
    return (
        f"// {k.ptx}  (sm_{k.min_sm}+)\n"
        f"#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= {k.min_sm}0\n"
        f'extern "C" __global__ void {k.entry}(const uint32_t* __restrict__ A,\n'
        "        const uint32_t* __restrict__ B, const uint32_t* __restrict__ C,\n"
        "        uint32_t* __restrict__ D, long long T, int nchain) {\n"
        "    const int lane = threadIdx.x & 31;\n"
        "    const long long warps = (long long)gridDim.x * (blockDim.x >> 5);\n"
        "    const long long first = (long long)blockIdx.x * (blockDim.x >> 5) + "
        "(threadIdx.x >> 5);"
        "\n"
        "    for (long long tile = first; tile < T; tile += warps) {\n"
        + _indent(_indent(setup))
        + "        for (int s = 0; s < nchain; ++s) {\n"
        + _indent(_indent(_indent(step)))
        + "        }\n"
        + _indent(_indent(_store(k.d, "d", "D", "tile * 32 + lane")))
        + "    }\n}\n#endif\n"
    )


def _indent(text: str) -> str:
    return "".join(("    " + line if line.strip() else line) for line in text.splitlines(True))


HEADER = """\
// GENERATED by precision/probe/gen_kernels.py from the instruction data; do not edit.
// Fragment-packed mma.sync probe kernels: one instruction per warp per tile, operands
// pre-packed by the host into per-lane register words (precision.tensorcore.fragments).
// Each kernel is guarded by the oldest architecture that accepts its instruction, so the
// file builds for any target from sm_75 on and holds the kernels that target can run.
#include <stdint.h>

"""


def file_source(kernels: Iterable[ProbeKernel]) -> str:
    """The whole generated .cu file."""
    return HEADER + "\n".join(kernel_source(k) for k in kernels)


def generate() -> str:
    """The text of cuda/mma_probes.cu for the probes of :mod:`precision.probe.generic`
    (``python -m precision.kernels.generated`` writes or checks it)."""
    from precision.probe.generic import probe_kernels

    return file_source(probe_kernels())
