"""Record and compare ``wgmma.mma_async`` (HGMMA/QGMMA) against ``mma.sync`` on an H200.

Device side (``record``): builds ``probe/cuda/wgmma_probe.cu`` with
``nvcc -arch=sm_90a -cubin`` and ``probe/cuda/mma_sync_probe.cu`` (mma.sync) with ``-arch=sm_90``,
validates the shared-memory descriptor layout with exact small-integer data on full 64x8
tiles, then runs both instructions on the same seeded inputs (the data kinds of
:mod:`precision.probe.inputs`). Each recorded 16x8 tile is the top quarter of one 64x8 wgmma
tile whose four 16-row quarters are copies of it, so the four warps' outputs can be compared.

CPU side (``compare``): match rates of the recorded wgmma outputs against ``precision.mma``
with ``op="mma"`` (the sm90 mma.sync model), against the recorded mma.sync outputs, and against
``precision.mma`` with ``op="wgmma"`` (the sm90 wgmma instruction data: f16/bf16/tf32 as
mma.sync; fp8 one block of 32 products, F = 13, e_zero = -133, output RZ to e8m13).

    python3 -m precision.probe.wgmma record OUT_DIR     # on an sm_90 GPU
    python3 -m precision.probe.wgmma record OUT_DIR --extra   # extras (see EXTRA) on sm_90
    python -m precision.probe.wgmma compare tests/data/sm90_wgmma

Extras (``--extra``, :data:`EXTRA`; ``--only NAME ...`` for some): f16 accumulators
(.f16.f16.f16, .f16.e4m3.e4m3, .f16.e5m2.e5m2, mixed .f16.e4m3.e5m2, .f16.e5m2.e4m3), mixed fp8
with f32 accumulate (.f32.e4m3.e5m2, .f32.e5m2.e4m3) and 8-bit
integers (.s32.s8.s8, .s32.u8.u8), >= 100,000 outputs each, compared by ``compare`` against
``precision.mma(op="wgmma")``, ``op="mma"`` and (f16 -> f16, s8) the hardware mma.sync run on
the same inputs; integers against exact arithmetic.

``compare DIR`` refuses (exit 2, one line) a directory whose manifest describes another family
or lists a recording that is missing (or whose ``.npz`` files it does not list), as
``precision verify`` does.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from precision.console import run_main
from precision.formats import get_format
from precision.gpu import exit_without_gpu
from precision.probe.capture import (
    check_arrays,
    compare_dir_or_error,
    load_arrays,
    match_counts,
    match_percent,
)
from precision.probe.catalog import Probe, get_probe
from precision.probe.inputs import generate
from precision.tensorcore.arch import ArchModel, Instruction, get_arch

SOURCE = Path(__file__).resolve().parent / "cuda" / "wgmma_probe.cu"

#: recording name -> wgmma kernel in probe/cuda/wgmma_probe.cu; each records the sm90
#: ``op="wgmma"`` instruction of the same formats (see :func:`wgmma_instruction`) next to the
#: ``mma.sync`` probe of that name in :mod:`precision.probe.catalog`.
WGMMA = {
    "f16_f32": "wgmma_f16_f32",
    "bf16_f32": "wgmma_bf16_f32",
    "tf32_f32": "wgmma_tf32_f32",
    "e4m3_f32": "wgmma_e4m3_f32",
    "e5m2_f32": "wgmma_e5m2_f32",
}


def wgmma_instruction(name: str) -> Instruction:
    """The sm90 wgmma :class:`~precision.tensorcore.arch.Instruction` recorded as ``name``."""
    mma_sync = get_probe(name).instruction
    return get_arch("sm90").instruction(
        mma_sync.a_fmt, mma_sync.acc_fmt, b_fmt=mma_sync.b_fmt, op="wgmma"
    )


#: 16x8 tiles per data kind (about 21k outputs per instruction)
COUNTS = {
    "small_int": 8,
    "normal": 36,
    "wide_exp": 32,
    "random_bits": 16,
    "cancellation": 24,
    "subnormal": 20,
    "special": 27,
}
SEED = 11


def inputs(name: str, seed: int = SEED):
    """Seeded 16x8-tile inputs (a, b, c bits, kind index, kinds) for recording ``name``."""
    instr = get_probe(name)
    counts = dict(COUNTS)
    if name == "tf32_f32":
        counts["tf32_lowbits"] = 12
    return generate(instr, counts, seed)


def pack(a: np.ndarray, b: np.ndarray, c: np.ndarray):
    """16x8 tiles -> wgmma operands: A [T,64,32 B], Bt [T,8,32 B], C [T,64,8] (4 row copies)."""
    T = a.shape[0]
    a64 = np.ascontiguousarray(np.tile(a, (1, 4, 1))).view(np.uint8).reshape(T, 64, 32)
    bt = np.ascontiguousarray(b.transpose(0, 2, 1)).view(np.uint8).reshape(T, 8, 32)
    c64 = np.ascontiguousarray(np.tile(c, (1, 4, 1)))
    return a64, bt, c64


# ------------------------------------------------------------------------------ device side


def _nvcc(src: Path, arch: str, out: Path) -> Path:
    from precision.kernels.build import run_nvcc

    run_nvcc(
        [f"-arch={arch}", "-cubin", "-o", str(out), str(src)],
        what=f"building the wgmma probe {src.name}",
    )
    return out


def _run_wgmma(module, kernel: str, a64, bt, c64, lbo: int, sbo: int) -> np.ndarray:
    import cupy as cp

    T = a64.shape[0]
    da, db, dc = (cp.asarray(np.ascontiguousarray(x)) for x in (a64, bt, c64))
    fill = 0xDEADBEEF if dc.dtype == cp.uint32 else 0xDEAD  # f16 accumulators: uint16
    dd = cp.full(dc.shape, fill, dtype=dc.dtype)
    fn = module.get_function(kernel)
    fn((min(T, 1024),), (128,), (da, db, dc, dd, np.int64(T), np.int32(lbo), np.int32(sbo)))
    cp.cuda.Device().synchronize()
    return cp.asnumpy(dd)


def _small_int_check(module, name: str, kernel: str, lbo: int, sbo: int, rng) -> tuple[int, int]:
    """Mismatches of exact small-integer A·B+C on full 64x8 tiles (all 64 rows distinct)."""
    instr = get_probe(name)
    view = instr.a_fmt.storage
    T, K = 16, instr.k
    av = rng.integers(-3, 4, size=(T, 64, K)).astype(np.float64)
    bv = rng.integers(-3, 4, size=(T, K, 8)).astype(np.float64)
    cv = rng.integers(-64, 65, size=(T, 64, 8)).astype(np.float64)
    a = av.astype(view).view(instr.a_fmt.bits_dtype)
    b = bv.astype(view).view(instr.a_fmt.bits_dtype)
    c = cv.astype(np.float32).view(np.uint32)
    a64 = np.ascontiguousarray(a).view(np.uint8).reshape(T, 64, 32)
    bt = np.ascontiguousarray(b.transpose(0, 2, 1)).view(np.uint8).reshape(T, 8, 32)
    d = _run_wgmma(module, kernel, a64, bt, c, lbo, sbo).view(np.float32).astype(np.float64)
    exact = av @ bv + cv
    return int(np.count_nonzero(d != exact)), int(d.size)


def record(out_dir: str | Path, names: list[str] | None = None, log=print) -> dict:
    import cupy as cp

    from precision.probe.capture import build_probe, run_probe
    from precision.provenance import collect

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest: dict = {
        "description": "wgmma.mma_async vs mma.sync on the same raw-bit inputs; see "
        "precision/probe/wgmma.py",
        "kernel_source": "precision/probe/cuda/wgmma_probe.cu",
        "nvcc_flags": "-arch=sm_90a -cubin",
        "seed": SEED,
        "tiles_per_kind": COUNTS,
        "instructions": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        wcubin = _nvcc(SOURCE, "sm_90a", Path(tmp) / "wgmma.cubin")
        wmod = cp.RawModule(path=str(wcubin))
        pmod = cp.RawModule(path=str(build_probe(tmp)))
        sass = None
        if shutil.which("cuobjdump"):
            proc = subprocess.run(
                ["cuobjdump", "-sass", str(wcubin)], capture_output=True, text=True
            )
            sass = sorted(
                {
                    ln.split("*/")[1].strip().split(" ")[0]
                    for ln in proc.stdout.splitlines()
                    if "GMMA" in ln and "*/" in ln
                }
            )
        manifest["sass_gmma_opcodes"] = sass
        rng = np.random.default_rng(5)
        for name in names or list(WGMMA):
            kernel, ptx = WGMMA[name], wgmma_instruction(name).ptx
            chosen, tried = None, {}
            for lbo, sbo in ((128, 256), (256, 128)):
                bad, n = _small_int_check(wmod, name, kernel, lbo, sbo, rng)
                tried[f"lbo={lbo},sbo={sbo}"] = f"{bad}/{n} mismatches"
                if bad == 0:
                    chosen = (lbo, sbo)
                    break
            log(f"{name}: layout check {tried}")
            if chosen is None:
                manifest["instructions"][name] = {"layout_check": tried, "recorded": False}
                continue
            a, b, c, kind, kinds = inputs(name)
            a64, bt, c64 = pack(a, b, c)
            lbo, sbo = chosen
            d64 = _run_wgmma(wmod, kernel, a64, bt, c64, lbo, sbo)
            d4 = d64.reshape(-1, 4, 16, 8)
            warp_disagree = int(np.count_nonzero(d4 != d4[:, :1]))
            d = np.ascontiguousarray(d4[:, 0])
            d_mma = run_probe(pmod, get_probe(name), a, b, c)
            np.savez_compressed(
                out_dir / f"wgmma_{name}.npz",
                a=a,
                b=b,
                c=c,
                d=d,
                d_mma=d_mma,
                kind=kind,
                kinds=np.array(kinds),
            )
            same = int(np.count_nonzero(d == d_mma))
            log(
                f"{name}: {d.size} outputs, wgmma == mma.sync (hardware) {same}/{d.size}, "
                f"warp copies disagree {warp_disagree}"
            )
            manifest["instructions"][name] = {
                "file": f"wgmma_{name}.npz",
                "wgmma_ptx": ptx,
                "kernel": kernel,
                "mma_sync_ptx": get_probe(name).ptx,
                "layout_check": tried,
                "descriptor_lbo_sbo_bytes": list(chosen),
                "outputs": int(d.size),
                "warp_copies_disagree": warp_disagree,
                "wgmma_equals_mma_sync_hw": f"{same}/{d.size}",
                "recorded": True,
            }
    prov = collect(SEED)
    manifest.update(
        {
            "gpu": prov.get("gpu"),
            "driver": prov.get("driver"),
            "cuda": prov.get("cuda"),
            "cupy": prov.get("cupy"),
            "created_utc": prov.get("created_utc"),
        }
    )
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


# ------------------------------------------------------------------------------ CPU side


def mma_sync_model(name: str, a, b, c, device: str = "cpu") -> np.ndarray:
    """precision.mma (sm90 = mma.sync model) on raw bits, on ``device``'s engine; f32 bits
    out."""
    from precision.tensorcore import mma

    instr = get_probe(name)
    out = mma(
        a.view(instr.a_fmt.storage),
        b.view(instr.a_fmt.storage),
        c.view(np.float32),
        arch="sm90",
        fmt=instr.emulator_fmt,
        device=device,
    )
    return np.asarray(out).view(np.uint32)


def wgmma_model(name: str, a, b, c, device: str = "cpu") -> np.ndarray:
    """precision.mma(op="wgmma") (the sm90 wgmma instruction data) on raw bits; f32 bits out.
    ``device="gpu"``: the GPU engine."""
    from precision.tensorcore import mma

    instr = get_probe(name)
    out = mma(
        a.view(instr.a_fmt.storage),
        b.view(instr.a_fmt.storage),
        c.view(np.float32),
        arch="sm90",
        op="wgmma",
        fmt=instr.emulator_fmt,
        device=device,
    )
    return np.asarray(out).view(np.uint32)


def fp8_block_model(
    name: str,
    a,
    b,
    c,
    *,
    block: int = 32,
    frac_bits: int = 13,
    e_zero: int = -133,
    rounding: str = "rz_e8m13",
) -> np.ndarray:
    """The sm90 fp8 wgmma instruction with its numerics replaced (to show neighbours misfit).

    With the defaults this is exactly :func:`wgmma_model`: one fused block of 32 products plus
    c, F = 13, e_zero = -133, e8m13 RZ output.
    """
    from precision.tensorcore import mma

    fmt = get_probe(name).a_fmt.storage
    ins = wgmma_instruction(name)
    variant = dataclasses.replace(
        ins, block=block, frac_bits=frac_bits, e_zero=e_zero, out_rounding=rounding
    )
    model = ArchModel("sm90-variant", "wgmma numerics variant", "none", {variant.key: variant})
    out = mma(a.view(fmt), b.view(fmt), c.view(np.float32), arch=model, op="wgmma")
    return np.asarray(out).view(np.uint32)


def compare(path: str | Path, device: str = "cpu", only: Collection[str] | None = None) -> dict:
    """Match rates for every recording under ``path`` (of the file names in ``only``, if
    given; models on ``device``'s engine). Whether the files are those the manifest lists is
    for the caller to check (:func:`precision.probe.suite.check_listed`)."""
    res = {}
    for name in WGMMA:
        f = Path(path) / f"wgmma_{name}.npz"
        if (only is not None and f.name not in only) or not f.exists():
            continue
        r = load_arrays(f)
        instr = get_probe(name)
        t, k, bits = r["d"].shape[0], instr.k, instr.a_fmt.bits_dtype
        out = ((t, 16, 8), np.uint32)
        want = {"a": ((t, 16, k), bits), "b": ((t, k, 8), bits), "c": out, "d": out}
        if "d_mma" not in r:
            raise ValueError(f"{f}: missing arrays ['d_mma'] (the hardware mma.sync outputs)")
        check_arrays(f, r, {**want, "d_mma": out})
        a, b, c, d = r["a"], r["b"], r["c"], r["d"]
        row = {
            "wgmma_vs_mma_sync_hw": match_counts(d, r["d_mma"], r["kind"], r["kinds"]),
            "wgmma_vs_precision_mma": match_counts(
                d, mma_sync_model(name, a, b, c, device), r["kind"], r["kinds"]
            ),
        }
        row["wgmma_vs_precision_mma_wgmma"] = match_counts(
            d, wgmma_model(name, a, b, c, device), r["kind"], r["kinds"]
        )
        res[name] = row
    return res


# ------------------------------------------------------------------------------ extras
# f16 accumulators, mixed fp8 and 8-bit integers (issue 15), recorded with ``record --extra``.


@dataclass(frozen=True)
class Extra:
    """One extra wgmma kernel of wgmma_probe.cu (``PROBE_REGS``), m64n8k<k>.

    ``a``/``b``/``acc``: canonical formats (A and B are 32-byte rows: 16 fp16 or 32 one-byte
    elements). ``mma_sync``: the :mod:`precision.probe.catalog` probe run on the same inputs
    (hardware mma.sync next to wgmma), if one exists. ``unsigned``: u8 (the int8 bits are read
    as unsigned; inputs are the s8 generator's bit patterns).
    """

    kernel: str
    a: str
    b: str
    acc: str
    k: int
    mma_sync: str | None = None
    unsigned: bool = False

    @property
    def integer(self) -> bool:
        return self.acc == "int32"


EXTRA: dict[str, Extra] = {
    "f16_f16": Extra("wgmma_f16_f16", "fp16", "fp16", "fp16", 16, "f16_f16"),
    "e4m3_f16": Extra("wgmma_e4m3_f16", "e4m3", "e4m3", "fp16", 32),
    "e5m2_f16": Extra("wgmma_e5m2_f16", "e5m2", "e5m2", "fp16", 32),
    "e4m3e5m2_f16": Extra("wgmma_e4m3e5m2_f16", "e4m3", "e5m2", "fp16", 32),
    "e5m2e4m3_f16": Extra("wgmma_e5m2e4m3_f16", "e5m2", "e4m3", "fp16", 32),
    "e4m3e5m2_f32": Extra("wgmma_e4m3e5m2_f32", "e4m3", "e5m2", "fp32", 32),
    "e5m2e4m3_f32": Extra("wgmma_e5m2e4m3_f32", "e5m2", "e4m3", "fp32", 32),
    "s8_s32": Extra("wgmma_s8_s32", "int8", "int8", "int32", 32, "s8_s32"),
    "u8_s32": Extra("wgmma_u8_s32", "int8", "int8", "int32", 32, unsigned=True),
}
#: Extras: 5x the tiles of COUNTS (815 16x8 tiles, 104,320 outputs); integers: 820 tiles.
EXTRA_SCALE = 5
INT_COUNTS = {"small_int": 40, "random_bits": 300, "cancellation": 160, "extreme": 320}


def _extra_probe(name: str, fmt: str, acc: str) -> Probe:
    ins = get_arch("sm90").instruction(fmt, acc, op="mma")
    return Probe(f"wgmma_{name}", f"wgmma_{name}", ins)


def extra_inputs(name: str, seed: int = SEED):
    """Seeded 16x8-tile inputs (a, b, c bits, kind index, kinds) for extra recording ``name``.

    Mixed fp8: a and c from the generator of a's format, b from that of b's format (so the
    ``cancellation`` kind does not cancel there; every other kind keeps its meaning).
    """
    ex = EXTRA[name]
    counts = dict(INT_COUNTS) if ex.integer else {k: v * EXTRA_SCALE for k, v in COUNTS.items()}
    a, b, c, kind, kinds = generate(_extra_probe(name, ex.a, ex.acc), counts, seed)
    if ex.b != ex.a:
        _, b, _, _, _ = generate(_extra_probe(name, ex.b, ex.acc), counts, seed + 1)
    return a, b, c, kind, kinds


def _encode(fmt: str, v: np.ndarray) -> np.ndarray:
    st = np.dtype(get_format(fmt).storage)
    return v.astype(st).view(f"u{st.itemsize}")


def _decode(fmt: str, bits: np.ndarray, unsigned: bool = False) -> np.ndarray:
    st = np.dtype(get_format(fmt).storage)
    if unsigned:
        return bits.view(f"u{st.itemsize}").astype(np.int64)
    v = bits.view(st)
    return v.astype(np.int64) if st.kind == "i" else v.astype(np.float64)


def _small_int_check_extra(module, ex: Extra, lbo: int, sbo: int, rng) -> tuple[int, int]:
    """Mismatches of exact small-integer A·B+C on full 64x8 tiles (all 64 rows distinct)."""
    T, K = 16, ex.k
    lo = 0 if ex.unsigned else -3
    av = rng.integers(lo, 4, size=(T, 64, K)).astype(np.float64)
    bv = rng.integers(lo, 4, size=(T, K, 8)).astype(np.float64)
    cv = rng.integers(-64, 65, size=(T, 64, 8)).astype(np.float64)
    a, b, c = _encode(ex.a, av), _encode(ex.b, bv), _encode(ex.acc, cv)
    a64 = np.ascontiguousarray(a).view(np.uint8).reshape(T, 64, 32)
    bt = np.ascontiguousarray(b.transpose(0, 2, 1)).view(np.uint8).reshape(T, 8, 32)
    d = _decode(ex.acc, _run_wgmma(module, ex.kernel, a64, bt, c, lbo, sbo))
    return int(np.count_nonzero(d != av @ bv + cv)), int(d.size)


def record_extra(out_dir: str | Path, names: list[str] | None = None, log=print) -> dict:
    """Record the :data:`EXTRA` kernels (``wgmma_<name>.npz`` + ``manifest.json``) on sm_90."""
    from precision.probe.manifests import check_new_run

    check_new_run(out_dir, names, list(EXTRA))

    import cupy as cp

    from precision.probe.capture import build_probe, run_probe, sass_mma_opcodes
    from precision.provenance import collect

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest: dict = {
        "description": "wgmma.mma_async extras (f16 accumulate, mixed fp8, s8/u8) on raw-bit "
        "inputs; see precision/probe/wgmma.py (EXTRA)",
        "kernel_source": "precision/probe/cuda/wgmma_probe.cu",
        "kernel_source_sha256": hashlib.sha256(SOURCE.read_bytes()).hexdigest(),
        "nvcc_flags": "-arch=sm_90a -cubin",
        "seed": SEED,
        "tiles_per_kind": {
            "float": {k: v * EXTRA_SCALE for k, v in COUNTS.items()},
            "int": INT_COUNTS,
        },
        "instructions": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        wcubin = _nvcc(SOURCE, "sm_90a", Path(tmp) / "wgmma.cubin")
        wmod = cp.RawModule(path=str(wcubin))
        pmod = cp.RawModule(path=str(build_probe(tmp)))
        sass = sass_mma_opcodes(wcubin)
        manifest["sass_opcodes"] = {k: v for k, v in (sass or {}).items() if "wgmma" in k}
        rng = np.random.default_rng(5)
        for name in list(EXTRA) if names is None else names:
            ex = EXTRA[name]
            chosen, tried = None, {}
            for lbo, sbo in ((128, 256), (256, 128)):
                bad, n = _small_int_check_extra(wmod, ex, lbo, sbo, rng)
                tried[f"lbo={lbo},sbo={sbo}"] = f"{bad}/{n} mismatches"
                if bad == 0:
                    chosen = (lbo, sbo)
                    break
            log(f"{name}: layout check {tried}")
            if chosen is None:
                manifest["instructions"][name] = {"layout_check": tried, "recorded": False}
                continue
            a, b, c, kind, kinds = extra_inputs(name)
            a64, bt, c64 = pack(a, b, c)
            d64 = _run_wgmma(wmod, ex.kernel, a64, bt, c64, *chosen)
            d4 = d64.reshape(-1, 4, 16, 8)
            warp_disagree = int(np.count_nonzero(d4 != d4[:, :1]))
            d = np.ascontiguousarray(d4[:, 0])
            arrays = {"a": a, "b": b, "c": c, "d": d, "kind": kind, "kinds": np.array(kinds)}
            entry = {
                "file": f"wgmma_{name}.npz",
                "kernel": ex.kernel,
                "wgmma_ptx": _wgmma_ptx_of(ex),
                "layout_check": tried,
                "descriptor_lbo_sbo_bytes": list(chosen),
                "outputs": int(d.size),
                "warp_copies_disagree": warp_disagree,
                "recorded": True,
            }
            if ex.mma_sync:
                d_mma = run_probe(pmod, get_probe(ex.mma_sync), a, b, c)
                arrays["d_mma"] = d_mma
                entry["mma_sync_ptx"] = get_probe(ex.mma_sync).ptx
                entry["wgmma_equals_mma_sync_hw"] = f"{int(np.count_nonzero(d == d_mma))}/{d.size}"
            np.savez_compressed(out_dir / f"wgmma_{name}.npz", **arrays)
            log(f"{name}: {d.size} outputs, warp copies disagree {warp_disagree}")
            manifest["instructions"][name] = entry
    prov = collect(SEED)
    for key in ("gpu", "driver", "cuda", "cupy", "created_utc", "git_commit"):
        manifest[key] = prov.get(key)
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _wgmma_ptx_of(ex: Extra) -> str:
    p = f"wgmma.mma_async.sync.aligned.m64n8k{ex.k}"

    def t(name: str) -> str:  # PTX type of a canonical format (int8 data of u8 probes: u8)
        ptx = get_format("uint8" if name == "int8" and ex.unsigned else name).ptx
        assert ptx is not None
        return ptx

    return f"{p}.{t(ex.acc)}.{t(ex.a)}.{t(ex.b)}"


def extra_models(name: str, a, b, c, device: str = "cpu") -> dict[str, np.ndarray]:
    """Model outputs (raw bits of c's container) for extra recording ``name``.

    Floats: ``precision.mma`` with ``op="wgmma"`` (the sm90 wgmma data) and ``op="mma"`` (the
    mma.sync numerics), on ``device``'s engine; integers: exact ``c + a·b`` wrapped modulo 2^32,
    and ``precision.mma(op="wgmma")`` on ``device``'s engine.
    """
    from precision.tensorcore import integer, mma

    ex = EXTRA[name]
    if ex.integer:
        av, bv = _decode(ex.a, a, ex.unsigned), _decode(ex.b, b, ex.unsigned)
        cv = _decode("int32", c)
        d = integer.int_mma_chain(av, bv, cv, k_step=ex.k, satfinite=False)
        ints = np.uint8 if ex.unsigned else np.int8
        w = mma(
            a.view(ints), b.view(ints), c.view(np.int32), arch="sm90", op="wgmma", device=device
        )
        return {
            "exact": (d & 0xFFFFFFFF).astype(np.uint32),
            "precision.mma(op='wgmma')": np.asarray(w).view(np.uint32),
        }
    st = {f: np.dtype(get_format(f).storage) for f in (ex.a, ex.b, ex.acc)}
    av, bv, cv = a.view(st[ex.a]), b.view(st[ex.b]), c.view(st[ex.acc])
    return {
        f"precision.mma(op={op!r})": np.asarray(
            mma(av, bv, cv, arch="sm90", op=op, device=device)
        ).view(c.dtype)
        for op in ("wgmma", "mma")
    }


def compare_extra(
    path: str | Path, device: str = "cpu", only: Collection[str] | None = None
) -> dict:
    """{name: {model: match}} for every extra recording under ``path`` (of the file names in
    ``only``, if given; hardware mma.sync too; models on ``device``'s engine)."""
    res = {}
    for name in EXTRA:
        f = Path(path) / f"wgmma_{name}.npz"
        if (only is not None and f.name not in only) or not f.exists():
            continue
        r = load_arrays(f)
        ex = EXTRA[name]
        t, box = r["d"].shape[0], {x: get_format(x).bits_dtype for x in (ex.a, ex.b, ex.acc)}
        out = ((t, 16, 8), box[ex.acc])
        want = {"a": ((t, 16, ex.k), box[ex.a]), "b": ((t, ex.k, 8), box[ex.b]), "c": out}
        check_arrays(f, r, {**want, "d": out, **({"d_mma": out} if "d_mma" in r else {})})
        row = {
            what: match_counts(r["d"], d, r["kind"], r["kinds"])
            for what, d in extra_models(name, r["a"], r["b"], r["c"], device).items()
        }
        if "d_mma" in r:
            row["mma.sync (hardware)"] = match_counts(r["d"], r["d_mma"], r["kind"], r["kinds"])
        res[name] = row
    return res


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m precision.probe.wgmma",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    r = sub.add_parser("record", help="record wgmma and mma.sync on the attached sm_90 GPU")
    r.add_argument("out_dir")
    r.add_argument("--extra", action="store_true", help="record the extras (EXTRA) instead")
    r.add_argument("--only", nargs="+", metavar="NAME", help="with --extra: only these extras")
    c = sub.add_parser("compare", help="match rates of the recordings under DIR (CPU)")
    c.add_argument("dir")
    args = p.parse_args(argv)
    if args.cmd == "record":
        from precision.probe.manifests import check_new_run

        try:
            if args.only is not None and not args.extra:
                raise ValueError("--only selects extras: give --extra too")
            check_new_run(args.out_dir, args.only, list(EXTRA) if args.extra else list(WGMMA))
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if exit_without_gpu("python -m precision.probe.wgmma record"):
            return 2
        record_extra(args.out_dir, args.only) if args.extra else record(args.out_dir)
        return 0
    from precision.probe.suite import check_family_dir

    try:  # as precision verify: every recording the manifest lists, and no other file
        if Path(args.dir).is_dir():
            check_family_dir(Path(args.dir), ("wgmma", "wgmma_extra"))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rows = compare_dir_or_error(
        Path(args.dir),
        lambda where: {**compare(where), **compare_extra(where)},
        "wgmma_*.npz",
        "expected the files python -m precision.probe.wgmma record writes, e.g. wgmma_f16_f32.npz",
    )
    if rows is None:
        return 2
    for name, row in rows.items():
        print(f"## {name}")
        for what, m in row.items():
            print(f"  {what}: {match_percent(m['all'])}")
            for k, v in m.items():
                if k != "all" and v[0] != v[1]:
                    print(f"      {k}: {match_percent(v)}")
    from precision.probe.suite import print_verdict, wgmma_rows

    return print_verdict(wgmma_rows(rows))


if __name__ == "__main__":
    run_main(main)
