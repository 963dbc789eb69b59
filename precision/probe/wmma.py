"""Record and compare the CUDA WMMA API (``nvcuda::wmma``) on sm_90, every type and shape.

Device side (:func:`record`): builds ``probe/cuda/wmma_probe.cu`` with ``nvcc -arch=sm_<cc>
-cubin`` (each kernel alone as well when the whole file is refused, so a refusal is recorded as
ptxas's error text), runs every accepted kernel on seeded inputs (the data kinds of
:mod:`precision.probe.packed`: small_int, normal, wide_exp, random_bits, cancellation, special
for floats; small_int, random_bits, extreme for integers) with >= 100,000 outputs per kernel,
and writes ``<name>.npz`` + ``manifest.json`` (GPU, driver, CUDA, nvcc, kernel sha256, seed,
ptxas verdicts, SASS opcode counts per kernel: which of HMMA.16816 / HMMA.1684 / IMMA / DMMA /
BMMA each WMMA lowers to).

A recording ``<name>.npz`` holds raw bits in logical layout, whatever the memory layout the
kernel used: ``a [T,M,K]``, ``b [T,K,N]``, ``c, d [T,M,N]`` (unsigned containers; tf32 in a
uint32 f32 container; s4/u4/b1 one element per uint8), ``kind [T]`` (uint8 index into
``kinds``), ``kinds`` and ``ptx``.

CPU side (:func:`compare`): per recording and per data kind, the bitwise match rate of ``d``
against every model that applies:

- f16/bf16/tf32: ``precision.mma(..., arch="sm90", op="wmma")`` (the sm90 WMMA instruction
  data) and ``op="mma"`` (the recorded ``mma.sync`` numerics: shows whether the WMMA lowers to
  them; tf32 differs: WMMA m16n16k8 -> HMMA.1684, blocks of 4, mma.sync m16n8k8 blocks of 8);
- s8: ``precision.mma(op="wmma")``; s8/u8/s4/u4 and b1 (xor/and popc): exact integer
  arithmetic (:mod:`precision.tensorcore.integer`, wrap modulo 2^32);
- f64: the three DMMA candidates of :mod:`precision.tensorcore.dmma` (FMA chain, one rounding,
  pairwise); the FMA chain with DMMA's NaN payloads (:mod:`precision.tensorcore.dmma_nan`).

    python -m precision.probe.wmma record OUT_DIR      # on an sm_90 GPU (about 30 s)
    python -m precision.probe.wmma compare DIR         # CPU

``compare DIR`` refuses (exit 2, one line) a directory whose manifest describes another family
or lists a recording that is missing (or whose ``.npz`` files it does not list), as
``precision verify`` does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import subprocess
import sys
import tempfile
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from precision import formats
from precision.console import run_main
from precision.gpu import exit_without_gpu
from precision.probe import packed
from precision.probe.capture import (
    check_arrays,
    compare_dir_or_error,
    load_arrays,
    manifest_arch,
    match_counts,
    match_percent,
    sass_mma_opcodes,
)

SOURCE = Path(__file__).resolve().parent / "cuda" / "wmma_probe.cu"
#: The line of wmma_probe.cu after which every line is one ``WMMA_KERNEL(...)``.
KERNEL_MARKER = "// ---- kernels"
SEED = 23
#: Outputs wanted per recorded kernel (tiles are rounded up to reach it).
MIN_OUTPUTS = 100_000

#: PTX type -> canonical :mod:`precision.formats` name of the floating-point types.
_FLOAT_FMT = {t: formats.get_format(t).name for t in ("f16", "bf16", "tf32", "f32", "f64")}


@dataclass(frozen=True)
class WmmaProbe:
    """One WMMA kernel of wmma_probe.cu: ``wmma_<a>_<acc>_m<M>n<N>k<K>[_brow|_xor|_and]``.

    ``a`` is the PTX type of A and B, ``acc`` of C and D; ``b_row``: B loaded row-major (else
    column-major); ``bitop``: ``"xor.popc"`` / ``"and.popc"`` for b1 (``bmma_sync``).
    """

    a: str
    acc: str
    shape: tuple[int, int, int]
    b_row: bool = False
    bitop: str = ""

    @property
    def kernel(self) -> str:
        m, n, k = self.shape
        tail = "_brow" if self.b_row else (f"_{self.bitop.split('.')[0]}" if self.bitop else "")
        return f"wmma_{self.a}_{self.acc}_m{m}n{n}k{k}{tail}"

    @property
    def name(self) -> str:
        return self.kernel[len("wmma_") :]

    # the attributes precision.probe.packed.generate reads
    @property
    def b(self) -> str:
        return self.a

    @property
    def c(self) -> str:
        return self.acc

    @property
    def d(self) -> str:
        return self.acc

    @property
    def ptx(self) -> str:
        """The ``wmma.mma`` PTX the kernel compiles to (as nvcc 13 emits it)."""
        m, n, k = self.shape
        lay = "row.row" if self.b_row else "row.col"
        if self.a == "f16":
            tail = f"{self.acc}.{self.acc}"
        elif self.a == "f64":
            tail = "f64.f64.f64.f64.rn"
        else:
            tail = f"{self.acc}.{self.a}.{self.a}.{self.acc}"
        op = f".{self.bitop}" if self.bitop else ""
        return f"wmma.mma{op}.sync.aligned.{lay}.m{m}n{n}k{k}.{tail}"

    @property
    def tiles(self) -> int:
        m, n, _ = self.shape
        return math.ceil(MIN_OUTPUTS / (m * n) / 100) * 100

    @property
    def elems_per_byte(self) -> int:
        return {"s4": 2, "u4": 2, "b1": 8}.get(self.a, 1)


_F16_SHAPES = ((16, 16, 16), (32, 8, 16), (8, 32, 16))

#: Every WMMA element type and shape of the CUDA C++ Programming Guide's WMMA table that
#: sm_90 compiles (sub-byte types are the "experimental" ones), in wmma_probe.cu's order.
PROBES: tuple[WmmaProbe, ...] = (
    *(WmmaProbe("f16", "f32", s) for s in _F16_SHAPES),
    WmmaProbe("f16", "f32", (16, 16, 16), b_row=True),
    *(WmmaProbe("f16", "f16", s) for s in _F16_SHAPES),
    *(WmmaProbe("bf16", "f32", s) for s in _F16_SHAPES),
    WmmaProbe("tf32", "f32", (16, 16, 8)),
    WmmaProbe("f64", "f64", (8, 8, 4)),
    *(WmmaProbe("s8", "s32", s) for s in _F16_SHAPES),
    *(WmmaProbe("u8", "s32", s) for s in _F16_SHAPES),
    WmmaProbe("s4", "s32", (8, 8, 32)),
    WmmaProbe("u4", "s32", (8, 8, 32)),
    WmmaProbe("b1", "s32", (8, 8, 128), bitop="xor.popc"),
    WmmaProbe("b1", "s32", (8, 8, 128), bitop="and.popc"),
)


def get_probe(name: str) -> WmmaProbe:
    """The probe whose :attr:`WmmaProbe.name` (or kernel name) is ``name``."""
    for p in PROBES:
        if name in (p.name, p.kernel):
            return p
    raise KeyError(f"no WMMA probe {name!r}; known: {', '.join(p.name for p in PROBES)}")


def kernel_lines(source: Path = SOURCE) -> tuple[str, dict[str, str]]:
    """(the source up to and including the marker line, {kernel name: its WMMA_KERNEL line})."""
    text = source.read_text()
    head, sep, tail = text.partition(KERNEL_MARKER)
    if not sep:
        raise ValueError(f"{source}: marker line {KERNEL_MARKER!r} not found")
    first, _, rest = tail.partition("\n")
    lines = {}
    for ln in rest.splitlines():
        if ln.startswith("WMMA_KERNEL("):
            lines[ln[len("WMMA_KERNEL(") :].split(",")[0].strip()] = ln
    return head + sep + first + "\n", lines


def inputs(p: WmmaProbe, seed: int = SEED) -> packed.Inputs:
    """Seeded inputs (logical layout, raw bits) for ``p``: :attr:`WmmaProbe.tiles` tiles."""
    return packed.generate(cast(Any, p), p.tiles, seed)


def _pack_k(x: np.ndarray, per_byte: int) -> np.ndarray:
    """Pack sub-byte elements (one per uint8) along the last axis: element i*per_byte + j in
    bits [j*w, (j+1)*w) of byte i, w = 8 / per_byte."""
    if per_byte == 1:
        return np.ascontiguousarray(x)
    if per_byte == 8:
        return np.packbits(x.astype(np.uint8) & 1, axis=-1, bitorder="little")
    lo = x[..., 0::2].astype(np.uint8) & 0xF
    hi = x[..., 1::2].astype(np.uint8) & 0xF
    return np.ascontiguousarray(lo | (hi << 4))


def device_operands(p: WmmaProbe, inp: packed.Inputs) -> tuple[np.ndarray, np.ndarray]:
    """A ``[T,M,K]`` and B in the kernel's memory layout (``[T,N,K]`` col-major or ``[T,K,N]``
    row-major), sub-byte types packed along K."""
    a = _pack_k(inp.a, p.elems_per_byte)
    bt = inp.b if p.b_row else np.ascontiguousarray(inp.b.transpose(0, 2, 1))
    b = _pack_k(bt, p.elems_per_byte) if not p.b_row else np.ascontiguousarray(bt)
    return a, b


# ------------------------------------------------------------------------------ device side


def _nvcc_version() -> str | None:
    try:
        out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    except OSError:
        return None
    return out.strip().splitlines()[-1] if out.strip() else None


def _compile(src_text: str, path: Path, sm: int) -> str | None:
    """Compile ``src_text`` to ``path`` (.cubin); None if accepted, else the first error line."""
    src = path.with_suffix(".cu")
    src.write_text(src_text)
    proc = subprocess.run(
        ["nvcc", f"-arch=sm_{sm}", "-cubin", "-o", str(path), str(src)],
        capture_output=True,
        text=True,
    )
    if proc.returncode == 0:
        return None
    errors = [ln for ln in proc.stderr.splitlines() if "error" in ln]
    first = (errors[0] if errors else proc.stderr.strip()).replace(str(src.parent) + "/", "")
    return first[:500]


def build(workdir: str | Path, sm: int = 90) -> tuple[Path | None, dict[str, str]]:
    """Build wmma_probe.cu for ``sm_<sm>``: (cubin of the accepted kernels, verdict per kernel).

    The whole file is tried first; if ptxas refuses it, every kernel is built alone (in
    parallel) and only the accepted ones go into the cubin. A verdict is ``"accepted"`` or the
    compiler's first error line.
    """
    work = Path(workdir)
    head, lines = kernel_lines()
    cubin = work / "wmma_probe.cubin"
    err = _compile(head + "\n".join(lines.values()) + "\n", cubin, sm)
    if err is None:
        return cubin, dict.fromkeys(lines, "accepted")

    def one(name: str) -> tuple[str, str]:
        e = _compile(head + lines[name] + "\n", work / f"{name}.cubin", sm)
        return name, "accepted" if e is None else e

    with ThreadPoolExecutor(max_workers=8) as pool:
        verdicts = dict(pool.map(one, lines))
    ok = [lines[n] for n, v in verdicts.items() if v == "accepted"]
    if not ok:
        return None, verdicts
    err = _compile(head + "\n".join(ok) + "\n", cubin, sm)
    if err is not None:
        raise RuntimeError(f"wmma_probe.cu: the accepted kernels fail together: {err}")
    return cubin, verdicts


def run(module: Any, p: WmmaProbe, inp: packed.Inputs) -> np.ndarray:
    """Run ``p``'s kernel (4 warps per block, one tile per warp) and return D's bits."""
    import cupy as cp

    a, b = device_operands(p, inp)
    t = inp.a.shape[0]
    da, db, dc = (cp.asarray(np.ascontiguousarray(x)) for x in (a, b, inp.c))
    dd = cp.asarray(np.full(inp.c.shape, np.iinfo(inp.c.dtype).max, dtype=inp.c.dtype))  # ~0
    fn = module.get_function(p.kernel)
    fn((min((t + 3) // 4, 4096),), (128,), (da, db, dc, dd, np.int64(t)))
    cp.cuda.runtime.deviceSynchronize()
    return cp.asnumpy(dd)


def record(out_dir: str | Path, *, seed: int = SEED, log: Callable[[str], Any] = print) -> dict:
    """Record every WMMA kernel the attached GPU's ptxas accepts into ``out_dir``."""
    import cupy as cp

    from precision.provenance import collect

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sm = int(cp.cuda.Device().compute_capability)
    recorded = {}
    with tempfile.TemporaryDirectory() as tmp:
        cubin, verdicts = build(tmp, sm)
        sass = sass_mma_opcodes(cubin) if cubin else None
        module = cp.RawModule(path=str(cubin)) if cubin else None
        for p in PROBES:
            if verdicts.get(p.kernel) != "accepted" or module is None:
                log(f"  {p.name}: not run ({verdicts.get(p.kernel, 'no kernel line')})")
                continue
            inp = inputs(p, seed)
            d = run(module, p, inp)
            np.savez_compressed(
                out / f"{p.name}.npz",
                a=inp.a,
                b=inp.b,
                c=inp.c,
                d=d,
                kind=inp.kind,
                kinds=np.array(inp.kinds),
                ptx=np.array(p.ptx),
            )
            ops = (sass or {}).get(p.kernel)
            recorded[p.name] = {
                "kernel": p.kernel,
                "ptx": p.ptx,
                "b_layout": "row" if p.b_row else "col",
                "tiles": int(d.shape[0]),
                "outputs": int(d.size),
                "sass_mma": ops,
            }
            log(f"  {p.name}: {d.size} outputs, SASS {ops}")
    prov = collect(seed=seed)
    manifest = {
        "description": "WMMA API probe recordings (one mma_sync per tile, raw bits); see "
        "precision/probe/wmma.py",
        "gpu": prov.get("gpu"),
        "driver": prov.get("driver"),
        "cuda": prov.get("cuda"),
        "compute_capability": sm,
        "created_utc": prov.get("created_utc"),
        "provenance": prov,
        "nvcc": _nvcc_version(),
        "nvcc_flags": f"-arch=sm_{sm} -cubin",
        "kernel_source": "precision/probe/cuda/wmma_probe.cu",
        "kernel_source_sha256": hashlib.sha256(SOURCE.read_bytes()).hexdigest(),
        "seed": seed,
        "ptxas_verdicts": verdicts,
        "sass_opcodes": sass,
        "instructions": recorded,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, default=str) + "\n")
    return manifest


# ------------------------------------------------------------------------------ CPU side


def _float_view(ptx_type: str, bits: np.ndarray) -> np.ndarray:
    return bits.view(formats.get_format(_FLOAT_FMT[ptx_type]).storage)


def _s32_bits(x: np.ndarray) -> np.ndarray:
    return (np.asarray(x, dtype=np.int64) & 0xFFFFFFFF).astype(np.uint32)


def models(
    p: WmmaProbe,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    device: str = "cpu",
    arch: str = "sm90",
) -> dict[str, np.ndarray]:
    """Every model's D bits for raw-bit inputs ``a, b, c`` of probe ``p`` (see the module doc);
    the ``precision.mma`` ones on ``device``'s engine with ``arch``'s instructions (a model
    ``arch`` has no instruction for is left out), the exact and f64 ones on the CPU."""
    from precision.tensorcore import integer, mma

    k = p.shape[2]
    if p.a in ("f16", "bf16", "tf32"):
        fmt = _FLOAT_FMT[p.a]
        av, bv, cv = _float_view(p.a, a), _float_view(p.a, b), _float_view(p.acc, c)
        out: dict[str, np.ndarray] = {}
        for op in ("wmma", "mma"):
            try:
                d = mma(av, bv, cv, arch=arch, op=op, fmt=fmt, device=device)
            except TypeError:  # arch has no such instruction: that model is left out
                continue
            out[f"mma(op={op!r})"] = np.asarray(d).view(c.dtype)
        return out
    if p.a == "f64":
        from precision.tensorcore import dmma
        from precision.tensorcore.dmma_nan import nan_payloads

        av, bv, cv = (x.view(np.float64) for x in (a, b, c))
        with np.errstate(all="ignore"):
            chain = nan_payloads(av, bv, cv, dmma.fma_chain(av, bv, cv))
            return {
                "dmma.fma_chain": chain.view(np.uint64),
                "dmma.dot_rn": dmma.dot_rn(av, bv, cv).view(np.uint64),
                "dmma.dot_pairwise": dmma.dot_pairwise(av, bv, cv).view(np.uint64),
            }
    cv = packed.int_values("s32", c)
    if p.a == "b1":
        op = cast(Any, p.bitop)
        return {"exact b1": _s32_bits(integer.b1_mma_chain(a, b, cv, k_step=k, op=op))}
    av, bv = packed.int_values(p.a, a), packed.int_values(p.a, b)
    out = {"exact": _s32_bits(integer.int_mma_chain(av, bv, cv, k_step=k, satfinite=False))}
    if p.a == "s8":
        try:
            d = mma(
                av.astype(np.int8),
                bv.astype(np.int8),
                cv.astype(np.int32),
                arch=arch,
                op="wmma",
                device=device,
            )
        except TypeError:  # arch has no int8 WMMA instruction: the exact model only
            return out
        out["mma(op='wmma')"] = np.asarray(d).view(np.uint32)
    return out


def load(p: WmmaProbe, path: str | Path) -> dict:
    """The arrays of ``p``'s recording at ``path`` (:func:`~precision.probe.capture.load_arrays`),
    checked: ``a [T,M,K]``, ``b [T,K,N]``, ``c, d [T,M,N]`` in their containers and ``ptx``
    the probe's (``ValueError`` naming the file and the array otherwise)."""
    r = load_arrays(path)
    m, n, k = p.shape
    t = r["d"].shape[0]
    box = {x: packed.container(x) for x in (p.a, p.acc)}
    want = {
        "a": ((t, m, k), box[p.a]),
        "b": ((t, k, n), box[p.a]),
        "c": ((t, m, n), box[p.acc]),
        "d": ((t, m, n), box[p.acc]),
    }
    check_arrays(path, r, want)
    ptx = str(r["ptx"]) if "ptx" in r else None
    if ptx != p.ptx:
        raise ValueError(f"{path}: records {ptx!r}, expected {p.ptx!r}")
    return r


def compare(
    path: str | Path,
    device: str = "cpu",
    arch: str | None = None,
    only: Collection[str] | None = None,
) -> dict[str, dict[str, dict[str, tuple[int, int]]]]:
    """{recording: {model: match}} for every ``<probe>.npz`` under ``path`` (of the file names
    in ``only``, if given; the ``precision.mma`` models on ``device``'s engine, with
    ``arch``'s instructions; by default those of the GPU that made the recording: the
    manifest's compute capability, else sm90).
    A float probe whose WMMA instruction ``arch`` does not model gets ``"mma(op='wmma')"``
    all the same, every output unmatched under the one kind ``"no model (<arch>)"``: never
    compared with another GPU's model, never skipped. Whether the files are those the
    manifest lists is for the caller to check (:func:`precision.probe.suite.check_listed`:
    ``precision verify`` and ``compare`` on the command line do)."""
    if arch is None:
        arch = manifest_arch(path)
    res = {}
    for p in PROBES:
        f = Path(path) / f"{p.name}.npz"
        if (only is not None and f.name not in only) or not f.exists():
            continue
        r = load(p, f)
        outs = models(p, r["a"], r["b"], r["c"], device, arch=arch)
        res[p.name] = {
            what: match_counts(r["d"], d, r["kind"], r["kinds"]) for what, d in outs.items()
        }
        if p.a in ("f16", "bf16", "tf32") and "mma(op='wmma')" not in outs:
            n = int(r["d"].size)
            res[p.name]["mma(op='wmma')"] = {"all": (0, n), f"no model ({arch})": (0, n)}
    return res


def main(argv: list[str] | None = None) -> int:
    """``record OUT_DIR [--min-outputs N]`` (GPU) or ``compare DIR`` (CPU)."""
    global MIN_OUTPUTS
    p = argparse.ArgumentParser(
        prog="python -m precision.probe.wmma",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    r = sub.add_parser("record", help="record every WMMA kernel on the attached GPU")
    r.add_argument("out_dir")
    r.add_argument("--min-outputs", type=int, default=None, help="outputs per kernel, at least")
    c = sub.add_parser("compare", help="match rates of the recordings under DIR (CPU)")
    c.add_argument("dir")
    args = p.parse_args(argv)
    if args.cmd == "record":
        if exit_without_gpu("python -m precision.probe.wmma record"):
            return 2
        if args.min_outputs is not None:
            MIN_OUTPUTS = args.min_outputs
        record(args.out_dir)
        return 0
    from precision.probe.suite import check_family_dir

    try:  # as precision verify: every recording the manifest lists, and no other file
        if Path(args.dir).is_dir():
            check_family_dir(Path(args.dir), ("wmma",))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    table = compare_dir_or_error(
        Path(args.dir),
        compare,
        "WMMA .npz",
        f"expected files named after the probes, e.g. {PROBES[0].name}.npz",
    )
    if table is None:
        return 2
    for name, row in table.items():
        print(f"## {name}")
        for what, m in row.items():
            bad = [f"{k} {match_percent(v)}" for k, v in m.items() if k != "all" and v[0] != v[1]]
            print(
                f"  {what}: {match_percent(m['all'])}" + (f"   ({'; '.join(bad)})" if bad else "")
            )
    from precision.probe.suite import print_verdict, wmma_rows

    return print_verdict(wmma_rows(table))


if __name__ == "__main__":
    run_main(main)
