"""Inputs, GPU runs and recordings for the fragment-packed probes (:mod:`precision.probe.generic`).

A recording ``<name>.npz`` holds raw bit patterns ``a [T,M,K]``, ``b [T,K,N]``, ``c, d [T,M,N]``
(unsigned integers of the container width; sub-byte elements one per uint8; f64 as uint64),
``kind [T]`` (uint8 index into ``kinds``), ``kinds`` and ``ptx``. Inputs are drawn per data
kind from a seeded generator:

- ``small_int``: small integers whose exact dot products every format represents; any
  fragment-layout error shows up as a wrong integer.
- ``normal``: random signs and significands, magnitudes in [0.5, 2).
- ``wide_exp``: random exponents over the whole range of the format (subnormals included).
- ``random_bits``: uniform bit patterns (NaN/Inf encodings included).
- ``cancellation``: c = -(the exactly rounded sum of the products), so the result is a tiny
  remainder.
- ``special``: ``normal`` tiles with NaN, +-Inf, +-0 sprinkled into A, B and C.
- ``extreme`` (integers): operands at the ends of the range and c near +-2^31 (overflow).
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from precision import formats
from precision.console import run_main
from precision.gpu import exit_without_gpu
from precision.probe.generic import GenericProbe
from precision.tensorcore.fragments import mma_fragments, pack, unpack


def _ptx_type(ptx_type: str) -> tuple[str | None, bool, int]:
    """(float format name or None for integers, signed integer?, element bits) from the registry."""
    f = formats.get_format(ptx_type)
    return (None if f.is_integer else f.name, f.is_integer and f.signed, f.element_bits)


#: PTX type -> (precision.formats name or None, signed integer?, element bits).
_PTX_TYPES: dict[str, tuple[str | None, bool, int]] = {
    t: _ptx_type(t)
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

FLOAT_KINDS = ("small_int", "normal", "wide_exp", "random_bits", "cancellation", "special")
INT_KINDS = ("small_int", "random_bits", "extreme")
#: Share of tiles per kind (the rest of the rounding goes to the first kind).
_SHARE = {
    "small_int": 0.05,
    "normal": 0.3,
    "wide_exp": 0.25,
    "random_bits": 0.2,
    "cancellation": 0.1,
    "special": 0.1,
    "extreme": 0.3,
}


def container(ptx_type: str) -> np.dtype:
    """Unsigned dtype holding one element's bits."""
    bits = _PTX_TYPES[ptx_type][2]
    return np.dtype(f"uint{max(8, bits)}")


def is_float(ptx_type: str) -> bool:
    return _PTX_TYPES[ptx_type][0] is not None


def _int_range(ptx_type: str) -> tuple[int, int]:
    _, signed, bits = _PTX_TYPES[ptx_type]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def _int_bits(ptx_type: str, v: np.ndarray) -> np.ndarray:
    bits = _PTX_TYPES[ptx_type][2]
    return (v.astype(np.int64) & ((1 << bits) - 1)).astype(container(ptx_type))


def int_values(ptx_type: str, bits: np.ndarray) -> np.ndarray:
    """Decode integer element bits (two's complement where signed) to int64."""
    _, signed, nbits = _PTX_TYPES[ptx_type]
    v = bits.astype(np.int64)
    if signed:
        v = np.where(v >= (1 << (nbits - 1)), v - (1 << nbits), v)
    return v


def float_bits(ptx_type: str, values: np.ndarray) -> np.ndarray:
    """Round float64 ``values`` into the format (RNE) and encode them."""
    name = _PTX_TYPES[ptx_type][0]
    assert name is not None
    return formats.to_bits(formats.round(values, name), name).astype(container(ptx_type))


def _float_values(fmt: str, kind: str, shape: tuple[int, ...], rng: np.random.Generator):
    f = formats.get_format(fmt)
    if kind == "small_int":
        return rng.integers(-3, 4, size=shape).astype(np.float64)
    # fp64 significands are drawn with 24 random bits (products then have <= 48 bits, and the
    # FMA chain still rounds wherever exponents differ): recordings stay compressible, and
    # random_bits still covers full 53-bit significands.
    sig_bits = min(f.precision, 24)
    if kind in ("normal", "special", "cancellation"):
        sig = 1.0 + rng.integers(0, 1 << (sig_bits - 1), size=shape) / 2.0 ** (sig_bits - 1)
        return rng.choice([-1.0, 1.0], size=shape) * sig * rng.choice([0.5, 1.0], size=shape)
    if kind == "wide_exp":
        lo = f.emin - f.precision + 1
        e = rng.integers(lo, f.emax + 1, size=shape)
        sig = 1.0 + rng.integers(0, 1 << (sig_bits - 1), size=shape) / 2.0 ** (sig_bits - 1)
        return rng.choice([-1.0, 1.0], size=shape) * np.ldexp(sig, e)
    raise ValueError(kind)


def _operand_bits(ptx_type: str, kind: str, shape: tuple[int, ...], rng) -> np.ndarray:
    name, _, nbits = _PTX_TYPES[ptx_type]
    if kind == "random_bits":
        bits = rng.integers(0, 1 << min(nbits, 63), size=shape, dtype=np.uint64)
        if nbits == 64:
            bits |= rng.integers(0, 2, size=shape, dtype=np.uint64) << np.uint64(63)
        if ptx_type == "tf32":
            bits &= np.uint64(0xFFFFE000)
        return bits.astype(container(ptx_type))
    if name is None:
        lo, hi = _int_range(ptx_type)
        if kind == "small_int":
            v = rng.integers(max(lo, -2), min(hi, 3) + 1, size=shape)
        elif kind == "extreme":
            v = rng.choice([lo, lo + 1, hi - 1, hi], size=shape)
        else:
            raise ValueError(kind)
        return _int_bits(ptx_type, v)
    return float_bits(ptx_type, _float_values(name, kind, shape, rng))


@dataclass
class Inputs:
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    kind: np.ndarray
    kinds: tuple[str, ...]


def _sprinkle_specials(ptx_type: str, bits: np.ndarray, rng) -> None:
    name = _PTX_TYPES[ptx_type][0]
    assert name is not None
    f = formats.get_format(name)
    specials = [np.nan, 0.0, -0.0] + ([np.inf, -np.inf] if f.has_inf else [])
    enc = float_bits(ptx_type, np.array(specials))
    hit = rng.random(bits.shape) < 0.08
    bits[hit] = rng.choice(enc, size=int(hit.sum()))


def generate(probe: GenericProbe, tiles: int, seed: int) -> Inputs:
    """Seeded inputs for ``tiles`` tiles of ``probe``, kinds in contiguous runs."""
    rng = np.random.default_rng([seed, sum(map(ord, probe.name))])
    m, n, k = probe.shape
    floating = is_float(probe.a)
    kinds = FLOAT_KINDS if floating else INT_KINDS
    counts = {kd: int(tiles * _SHARE[kd]) for kd in kinds}
    counts[kinds[0]] += tiles - sum(counts.values())
    a_parts, b_parts, c_parts, kind_idx = [], [], [], []
    for i, kd in enumerate(kinds):
        t = counts[kd]
        a = _operand_bits(probe.a, kd, (t, m, k), rng)
        b = _operand_bits(probe.b, kd, (t, k, n), rng)
        if floating:
            c_kind = "normal" if kd in ("cancellation", "special") else kd
            c = _operand_bits(probe.c, c_kind, (t, m, n), rng)
            if kd == "small_int":
                c = float_bits(probe.c, rng.integers(-8, 9, size=(t, m, n)).astype(np.float64))
            if kd == "cancellation":
                c = float_bits(probe.c, -exact_dot(probe, a, b))
            if kd == "special":
                for x, typ in ((a, probe.a), (b, probe.b), (c, probe.c)):
                    _sprinkle_specials(typ, x, rng)
        else:
            lo, hi = -(1 << 31), (1 << 31) - 1
            if kd == "extreme":
                cv = rng.choice([lo, lo + 1, hi - 1, hi, 0], size=(t, m, n))
            elif kd == "small_int":
                cv = rng.integers(-8, 9, size=(t, m, n))
            else:
                cv = rng.integers(lo, hi + 1, size=(t, m, n))
            c = _int_bits(probe.c, cv)
        a_parts.append(a)
        b_parts.append(b)
        c_parts.append(c)
        kind_idx.append(np.full(t, i, dtype=np.uint8))
    return Inputs(
        np.concatenate(a_parts),
        np.concatenate(b_parts),
        np.concatenate(c_parts),
        np.concatenate(kind_idx),
        kinds,
    )


def exact_dot(probe: GenericProbe, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum_k a[t,i,k] b[t,k,j] rounded once to float64 (finite inputs; used for c only)."""
    av = _decode_float(probe.a, a)
    bv = _decode_float(probe.b, b)
    with np.errstate(all="ignore"):
        return np.nan_to_num(np.einsum("tik,tkj->tij", av, bv), nan=0.0, posinf=0.0, neginf=0.0)


def _decode_float(ptx_type: str, bits: np.ndarray) -> np.ndarray:
    name = _PTX_TYPES[ptx_type][0]
    assert name is not None
    return formats.from_bits(bits, name)


# ------------------------------------------------------------------------------ GPU side


def fragments(probe: GenericProbe):  # noqa: ANN201 (tuple of four Fragments)
    """The (A, B, C, D) fragments of the probe's instruction."""
    bits = {t: v[2] for t, v in _PTX_TYPES.items()}
    a, b, c = mma_fragments(probe.shape, bits[probe.a], bits[probe.c])
    d = mma_fragments(probe.shape, bits[probe.a], bits[probe.d])[2]
    return a, b, c, d


def run(module: Any, probe: GenericProbe, inp: Inputs, nchain: int = 1) -> np.ndarray:
    """Run the probe kernel on ``inp`` (one instruction per tile) and return D's bits."""
    import cupy as cp

    if nchain != 1:
        raise ValueError("generic probes record single instructions (nchain = 1)")
    fa, fb, fc, fd = fragments(probe)
    t = inp.a.shape[0]
    a = cp.asarray(pack(inp.a, fa))
    b = cp.asarray(pack(inp.b, fb))
    c = cp.asarray(pack(inp.c, fc))
    d = cp.zeros((t, 32, fd.words), dtype=cp.uint32)
    fn = module.get_function(f"probe_{probe.name}")
    warps_per_block = 4
    blocks = min((t + warps_per_block - 1) // warps_per_block, 4096)
    fn((blocks,), (32 * warps_per_block,), (a, b, c, d, np.int64(t), np.int32(nchain)))
    cp.cuda.runtime.deviceSynchronize()
    return unpack(cp.asnumpy(d), fd, container(probe.d))


def save(path: Path, probe: GenericProbe, inp: Inputs, d: np.ndarray) -> None:
    """Write a recording; sub-byte operands (s4/u4/b1) are bit-packed along their last axis
    (``a_bits``/``b_bits`` give the element width, :func:`load` unpacks)."""
    np.savez_compressed(
        path,
        a=_pack_sub_byte(inp.a, probe.a),
        b=_pack_sub_byte(inp.b, probe.b),
        a_bits=np.int64(_PTX_TYPES[probe.a][2]),
        b_bits=np.int64(_PTX_TYPES[probe.b][2]),
        c=inp.c,
        d=d,
        kind=inp.kind,
        kinds=np.array(inp.kinds),
        ptx=np.array(probe.ptx),
    )


def _pack_sub_byte(x: np.ndarray, ptx_type: str) -> np.ndarray:
    bits = _PTX_TYPES[ptx_type][2]
    if bits >= 8:
        return x
    per = 8 // bits
    y = x.reshape(*x.shape[:-1], x.shape[-1] // per, per).astype(np.uint8)
    shifts = (np.arange(per) * bits).astype(np.uint8)
    return np.bitwise_or.reduce(y << shifts, axis=-1).astype(np.uint8)


def _unpack_sub_byte(x: np.ndarray, bits: int) -> np.ndarray:
    if bits >= 8:
        return x
    per = 8 // bits
    shifts = (np.arange(per) * bits).astype(np.uint8)
    y = (x[..., None] >> shifts) & np.uint8((1 << bits) - 1)
    return y.reshape(*x.shape[:-1], x.shape[-1] * per)


@dataclass
class Recording:
    """A loaded fragment-packed probe recording (bits unpacked to one element per entry)."""

    ptx: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    d: np.ndarray
    kind: np.ndarray
    kinds: tuple[str, ...]


def load(path: str | Path) -> Recording:
    """Read a recording written by :func:`save` (``ValueError`` naming the file when it is
    unreadable, lacks an array, or a tile's ``kind`` is no index into ``kinds``)."""
    from precision.probe.capture import RECORDING_ARRAYS, check_kinds, read_npz, tile_count

    z = read_npz(path, (*RECORDING_ARRAYS, "a_bits", "b_bits", "ptx"))
    try:
        a_bits, b_bits = int(z["a_bits"]), int(z["b_bits"])
    except (TypeError, ValueError):
        a_bits = b_bits = 0
    if not {a_bits, b_bits} <= {1, 4, 8, 16, 32, 64}:
        raise ValueError(
            f"{path}: 'a_bits' and 'b_bits' should be element widths (1, 4, 8, 16, 32 or 64), "
            f"got {z['a_bits']!r} and {z['b_bits']!r}"
        )
    a = _unpack_sub_byte(z["a"], a_bits)
    # B is [T, K, N]: sub-byte elements were packed along N; unpack there too.
    b = _unpack_sub_byte(z["b"], b_bits)
    kinds = tuple(str(k) for k in z["kinds"])
    check_kinds(path, z["kind"], kinds, tile_count(path, z))
    return Recording(str(z["ptx"]), a, b, z["c"], z["d"], z["kind"], kinds)


def check_shapes(path: str | Path, probe: GenericProbe, rec: Recording) -> None:
    """``ValueError`` naming ``path`` and the array unless ``rec`` holds ``a [T,M,K]``, ``b
    [T,K,N]``, ``c, d [T,M,N]`` of ``probe``'s shape in their containers."""
    from precision.probe.capture import check_arrays

    m, n, k = probe.shape
    t = rec.d.shape[0] if rec.d.ndim else 0
    want = {
        "a": ((t, m, k), container(probe.a)),
        "b": ((t, k, n), container(probe.b)),
        "c": ((t, m, n), container(probe.c)),
        "d": ((t, m, n), container(probe.d)),
    }
    check_arrays(path, {x: getattr(rec, x) for x in want}, want)


# ------------------------------------------------------------------------------ recording


def record(  # noqa: ANN001 (log)
    out_dir: str | Path,
    *,
    seed: int = 1,
    tiles: int = 800,
    only: list[str] | None = None,
    log=print,
) -> dict:
    """Record every generic probe the attached GPU's assembler accepts into ``out_dir`` (only
    those named in ``only``, if given: recording names such as ``m8n8k16_s32_s8_s8_s32``), a
    directory without a ``manifest.json`` (a later run joins earlier recordings through
    :func:`precision.probe.manifests.append_run`).

    Builds probe/cuda/mma_probes.cu for the attached architecture with nvcc, records the
    ptxas verdict of every candidate (accepted, or its error: refusals are evidence too),
    runs each accepted instruction on ``tiles`` tiles (8x8 shapes: twice as many, so every
    instruction has the same number of outputs) and writes ``<name>.npz`` plus
    ``manifest.json`` (GPU, driver, CUDA, nvcc, kernel sha256, seed, SASS opcodes).
    """
    import hashlib
    import json
    import tempfile

    from precision.probe.generic import PROBES, REFUSED, probe_kernels, ptxas_verdict
    from precision.probe.manifests import check_new_run

    check_new_run(out_dir, only, [p.name for p in PROBES])

    import cupy as cp

    from precision.kernels.build import run_nvcc
    from precision.probe.capture import sass_mma_opcodes
    from precision.probe.gen_kernels import GENERATED
    from precision.provenance import collect

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    dev = cp.cuda.Device()
    sm = int(dev.compute_capability)
    kernels = {k.entry: k for k in probe_kernels()}
    verdicts: dict[str, str | None] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "mma_probes.cubin"
        run_nvcc([f"-arch=sm_{sm}", "-cubin", "-o", str(cubin), str(GENERATED)], what="probes")
        sass = sass_mma_opcodes(cubin)
        from precision.probe.gen_kernels import ProbeKernel
        from precision.probe.generic import probe_kernel

        for p in PROBES + REFUSED:
            k: ProbeKernel = kernels.get(f"probe_{p.name}") or probe_kernel(p)
            verdicts[p.name] = ptxas_verdict(k, sm, tmp)
        module = cp.RawModule(path=str(cubin))
        recorded = {}
        for p in PROBES:
            if only is not None and p.name not in only:
                continue
            if p.min_sm > sm or verdicts[p.name] is not None:
                log(f"  {p.name}: not run on sm_{sm} ({verdicts[p.name] or 'guarded out'})")
                continue
            t = tiles * (2 if p.shape[0] == 8 else 1)
            inp = generate(p, t, seed)
            d = run(module, p, inp)
            save(out / f"{p.name}.npz", p, inp, d)
            recorded[p.name] = {"ptx": p.ptx, "tiles": t, "outputs": int(d.size)}
            log(f"  {p.name}: {d.size} outputs")
    prov = collect(seed=seed)
    manifest = {
        "description": "fragment-packed mma.sync probe recordings; see precision/probe/packed.py",
        "gpu": prov.get("gpu"),
        "driver": prov.get("driver"),
        "compute_capability": sm,
        "created_utc": prov.get("created_utc"),
        "provenance": prov,
        "nvcc_flags": f"-arch=sm_{sm} -cubin",
        "kernel_source": "precision/probe/cuda/mma_probes.cu",
        "kernel_source_sha256": hashlib.sha256(GENERATED.read_bytes()).hexdigest(),
        "seed": seed,
        "ptxas_verdicts": {k: ("accepted" if v is None else v) for k, v in verdicts.items()},
        "sass_opcodes": sass,
        "instructions": recorded,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, default=str))
    return manifest


# ------------------------------------------------------------------------------ replay


def _operand(ptx_type: str, bits: np.ndarray) -> np.ndarray:
    """Bits of one operand as the array :func:`precision.mma` takes (storage dtype)."""
    f = formats.get_format(ptx_type)
    if f.is_integer:
        return int_values(ptx_type, bits).astype(f.storage)
    if f.name == "tf32":
        return bits.astype(np.uint32).view(np.float32)
    return bits.astype(f.bits_dtype).view(f.storage)


def emulate(
    probe: GenericProbe, rec: Recording, arch: str = "sm90", device: str = "cpu"
) -> np.ndarray:
    """D's bits for a recording's inputs, from :func:`precision.mma` (``arch``'s model of the
    probe's instruction: same formats, shape and bit operation), in the recording's container
    dtype. ``TypeError`` when ``arch`` has no such instruction. ``device="gpu"``: the GPU
    engine (``ValueError`` for an instruction it cannot run)."""
    from precision.tensorcore import mma

    ins = probe.instruction
    a, b, c = _operand(probe.a, rec.a), _operand(probe.b, rec.b), _operand(probe.c, rec.c)
    d = mma(
        a,
        b,
        c,
        arch=arch,
        fmt=ins.a_fmt,
        b_fmt=ins.b_fmt,
        op="mma",
        shape=ins.shape,
        bitop=ins.bitop or None,
        satf=probe.satfinite,
        device=device,
    )
    return np.ascontiguousarray(d).view(container(probe.d))


def matches(probe: GenericProbe, rec: Recording, got: np.ndarray) -> np.ndarray:
    """Per output: the emulator's bits equal the recorded ones (every bit, NaN payloads of f64
    included: :mod:`precision.tensorcore.dmma_nan`)."""
    return got == rec.d


def verify(
    directory: str | Path, device: str = "cpu", only: Collection[str] | None = None
) -> dict[str, dict[str, tuple[int, int]]]:
    """{recording: {kind: (outputs, matches)}} for every probe recording in ``directory``
    (those of the file names in ``only``, if given), replayed through the model of the GPU
    that recorded it (the manifest's compute capability), on ``device``'s engine. An
    instruction that model lacks counts as unmatched, under the kind ``"no model (smXX)"``.
    (The GPU engine runs every instruction of every model that a packed probe records.)

    ``ValueError`` naming the manifest when it describes another probe family, or lists a
    file (of ``only``, if given) that is no packed probe's recording: it would be skipped
    while the table read 100 %."""
    from precision.probe.capture import manifest_arch, read_manifest
    from precision.probe.generic import PROBES
    from precision.probe.suite import check_unknown, family_of

    family = family_of(read_manifest(directory) or {})
    if family not in (None, "mma"):
        raise ValueError(
            f"{Path(directory) / 'manifest.json'}: describes {family} recordings, not the "
            f"fragment-packed probes' (precision verify {directory} replays every family)"
        )
    check_unknown(Path(directory), "mma", None if only is None else set(only))
    arch = manifest_arch(directory)
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for p in PROBES:
        path = Path(directory) / f"{p.name}.npz"
        if (only is not None and path.name not in only) or not path.exists():
            continue
        rec = load(path)
        if rec.ptx != p.ptx:
            raise ValueError(f"{path}: records {rec.ptx!r}, expected {p.ptx!r}")
        check_shapes(path, p, rec)
        try:
            got = emulate(p, rec, arch, device=device)
        except TypeError:
            out[p.name] = {f"no model ({arch})": (int(rec.d.size), 0)}
            continue
        ok = matches(p, rec, got)
        per = ok.reshape(ok.shape[0], -1)
        out[p.name] = {
            kind: (int(per[rec.kind == i].size), int(per[rec.kind == i].sum()))
            for i, kind in enumerate(rec.kinds)
        }
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m precision.probe.packed")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    r = sub.add_parser("record", help="record the generic probes on the attached GPU")
    r.add_argument("out")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--tiles", type=int, default=800)
    r.add_argument("--only", nargs="+", metavar="NAME", help="record only these probes")
    v = sub.add_parser("verify", help="replay recordings through the emulator (CPU)")
    v.add_argument("dir")
    args = ap.parse_args(argv)
    if args.cmd == "record":
        from precision.probe.generic import PROBES
        from precision.probe.manifests import check_new_run

        try:
            check_new_run(args.out, args.only, [p.name for p in PROBES])
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if exit_without_gpu("python -m precision.probe.packed record"):
            return 2
        record(args.out, seed=args.seed, tiles=args.tiles, only=args.only)
        return 0
    try:
        from precision.probe.generic import PROBES
        from precision.probe.suite import check_family_dir

        if not Path(args.dir).is_dir():
            raise ValueError(f"{args.dir}: no such recording directory")
        check_family_dir(Path(args.dir), ("mma",))  # every file the manifest lists, no other
        table = verify(args.dir)
        if not table:  # it used to print an empty table and exit 0
            raise ValueError(
                f"{args.dir}: holds no recording of the packed probes (files such as "
                f"{PROBES[0].name}.npz; `precision verify DIR` replays every family)"
            )
    except (OSError, ValueError) as exc:  # a damaged or incomplete recording: one line
        print(f"error: {exc}", file=sys.stderr)
        return 2
    bad = 0
    print(f"{'instruction':<40} {'kind':<14} {'outputs':>8} {'match':>8} {'%':>8}")
    for name, kinds in table.items():
        for kind, (n, m) in kinds.items():
            bad += n - m
            print(f"{name:<40} {kind:<14} {n:>8} {m:>8} {100.0 * m / max(n, 1):>8.3f}")
    return 1 if bad else 0


if __name__ == "__main__":
    run_main(main)
