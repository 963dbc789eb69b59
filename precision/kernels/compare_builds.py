"""Build every cubin the project builds, from two source trees, and compare their code.

Evidence that a refactoring of the CUDA sources (headers moved, dead code removed, formatting)
changed no computed bit: each cubin that the launcher (:mod:`precision.kernels.launch`) and the
probes (:mod:`precision.probe.capture`, :mod:`precision.probe.wgmma`) build is compiled with
``nvcc`` from a base tree and from a new tree, with the flags those modules use, and compared:

- ``identical``: the cubin files are byte-identical;
- ``same code``: the files differ, but every code-bearing ELF section (``.text.*`` machine
  code, ``.nv.constant*``, ``.nv.shared*``, ``.nv.info*``, ``.nv.global*``) is byte-identical,
  so only metadata (string tables, symbol order, debug names) differs;
- ``DIFFERENT``: some code section differs (the sections are named), or one tree lacks the
  source.

    python -m precision.kernels.compare_builds BASE_ROOT NEW_ROOT [--out DIR]

The cubins are kept in ``--out DIR``; without it they go to a temporary directory that is
deleted at the end. Exit status 1 when any build is ``DIFFERENT``. Needs nvcc only (no GPU,
no cuobjdump).
"""

from __future__ import annotations

import argparse
import shutil
import struct
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from precision.console import directory_destination_problem, run_main

#: Flags of :func:`precision.kernels.build.build_cubin` (``-O3 -std=c++17`` + NUMERIC_FLAGS).
KERNEL_FLAGS: tuple[str, ...] = (
    "-O3",
    "-std=c++17",
    "-ftz=false",
    "-fmad=false",
    "-prec-div=true",
    "-prec-sqrt=true",
)


@dataclass(frozen=True)
class Build:
    """One cubin: ``source`` relative to a tree's root, its target and flags."""

    name: str
    source: str
    gencode: tuple[str, ...]
    flags: tuple[str, ...]


#: Every cubin the launcher and the probes build (launch.get_kernel: gemm_mma.cu for sm_90,
#: gemm_wgmma.cu for sm_90a; capture.build_probe: -arch=sm_90 -cubin; wgmma.record: sm_90a;
#: probe.packed and probe.wmma: -arch=sm_<cc> -cubin, here sm_90; the Ozaki kernels:
#: gemm.ozaki_cuda ozaki2.cu and ozaki1.cu for sm_90, gemm.ozaki_gemm_launch ozaki2_gemm.cu
#: for sm_90a): one per ``.cu`` file of the package.
BUILDS: tuple[Build, ...] = (
    Build("gemm_mma sm_90", "precision/kernels/gemm_mma.cu", ("-arch=sm_90",), KERNEL_FLAGS),
    Build(
        "gemm_wgmma sm_90a",
        "precision/kernels/gemm_wgmma.cu",
        ("-gencode", "arch=compute_90a,code=sm_90a"),
        KERNEL_FLAGS,
    ),
    Build("ozaki2 sm_90", "precision/kernels/ozaki2.cu", ("-arch=sm_90",), KERNEL_FLAGS),
    Build("ozaki1 sm_90", "precision/kernels/ozaki1.cu", ("-arch=sm_90",), KERNEL_FLAGS),
    Build(
        "ozaki2_gemm sm_90a",
        "precision/kernels/ozaki2_gemm.cu",
        ("-gencode", "arch=compute_90a,code=sm_90a"),
        KERNEL_FLAGS,
    ),
    Build("mma_sync_probe sm_90", "precision/probe/cuda/mma_sync_probe.cu", ("-arch=sm_90",), ()),
    Build("wgmma_probe sm_90a", "precision/probe/cuda/wgmma_probe.cu", ("-arch=sm_90a",), ()),
    Build("mma_probes sm_90", "precision/probe/cuda/mma_probes.cu", ("-arch=sm_90",), ()),
    Build("wmma_probe sm_90", "precision/probe/cuda/wmma_probe.cu", ("-arch=sm_90",), ()),
    # CuPy compiles gpu_engine.cu with NVRTC at run time (-std=c++17); nvcc with the same
    # standard stands in for it here (the same front end and ptxas, so an edit that changes
    # no code leaves both unchanged).
    Build(
        "gpu_engine sm_90", "precision/tensorcore/gpu_engine.cu", ("-arch=sm_90",), ("-std=c++17",)
    ),
)

_CODE_PREFIXES = (".text.", ".nv.constant", ".nv.shared", ".nv.info", ".nv.global")


def elf_sections(data: bytes) -> dict[str, bytes]:
    """Section name -> contents of a 64-bit little-endian ELF file (a cubin)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx]
    names = data[strtab[4] : strtab[4] + strtab[5]]
    out: dict[str, bytes] = {}
    for h in headers:
        name = names[h[0] : names.index(b"\0", h[0])].decode()
        sh_type, offset, size = h[1], h[4], h[5]
        out[name] = b"" if sh_type == 8 else data[offset : offset + size]  # 8: SHT_NOBITS
    return out


def compare_cubins(a: bytes, b: bytes) -> tuple[str, list[str]]:
    """(verdict, differing code sections) of two cubins; verdict as in the module docstring."""
    if a == b:
        return "identical", []
    sa, sb = elf_sections(a), elf_sections(b)
    code = sorted(n for n in set(sa) | set(sb) if n.startswith(_CODE_PREFIXES))
    diff = [n for n in code if sa.get(n) != sb.get(n)]
    return ("DIFFERENT" if diff else "same code"), diff


def build(root: Path, b: Build, out: Path) -> Path:
    """Compile ``b`` from tree ``root`` into ``out`` (RuntimeError with nvcc's stderr)."""
    from precision.kernels.build import run_nvcc

    includes = (f"-I{root / 'precision' / 'kernels'}",)
    run_nvcc(
        [*b.gencode, "-cubin", *b.flags, *includes, "-o", str(out), str(root / b.source)],
        what=f"building {b.source} from {root}",
    )
    return out


def main(argv: list[str] | None = None) -> int:
    """Build every :data:`BUILDS` entry from both trees and print the comparison table."""
    p = argparse.ArgumentParser(
        prog="python -m precision.kernels.compare_builds", description=__doc__.splitlines()[0]
    )
    p.add_argument("base", type=Path, metavar="BASE_ROOT",
                   help="root of the base tree (e.g. a git worktree)")  # fmt: skip
    p.add_argument("new", type=Path, metavar="NEW_ROOT", help="root of the new tree")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="keep the cubins in this directory (default: build them in a temporary "
                   "directory, deleted at the end)")  # fmt: skip
    args = p.parse_args(argv)
    for option, root in (("BASE_ROOT", args.base), ("NEW_ROOT", args.new)):
        if not (root / "precision" / "kernels").is_dir():  # a mistyped tree: before any build
            print(
                f"error: {option} {root}: no precision/kernels there (expected the root of a "
                "checkout of this project)",
                file=sys.stderr,
            )
            return 2
    if args.out is not None:
        problem = directory_destination_problem(args.out, "--out")
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
        args.out.mkdir(parents=True, exist_ok=True)
        return _compare(args.base, args.new, args.out)
    out_dir = Path(tempfile.mkdtemp(prefix="compare_builds-"))
    try:
        return _compare(args.base, args.new, out_dir)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def _compare(base: Path, new: Path, out_dir: Path) -> int:
    """Build and compare every :data:`BUILDS` entry into ``out_dir``; the exit status."""
    bad = 0
    print(f"{'cubin':<24} {'base bytes':>10} {'new bytes':>10}  verdict", flush=True)
    for b in BUILDS:
        stem = b.name.replace(" ", "-")
        trees = ((base, "base"), (new, "new"))
        absent = [tag for root, tag in trees if not (root / b.source).is_file()]
        if absent:  # a source added or removed between the two trees
            bad += 1
            print(f"{b.name:<24} {'':>10} {'':>10}  DIFFERENT (no source in {absent[0]})")
            continue
        try:
            cubins = [
                build(root.resolve(), b, out_dir / f"{stem}.{tag}.cubin") for root, tag in trees
            ]
        except RuntimeError as exc:  # nvcc missing or failing: its message, no traceback
            print(f"error: {exc}", file=sys.stderr)
            return 2
        da, db = (c.read_bytes() for c in cubins)
        verdict, diff = compare_cubins(da, db)
        bad += verdict == "DIFFERENT"
        extra = f" ({', '.join(diff)})" if diff else ""
        print(f"{b.name:<24} {len(da):>10} {len(db):>10}  {verdict}{extra}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    run_main(main)
