"""Record what the GPU's tensor cores compute, and check an emulator against the recordings.

A *recording* of one instruction is a compressed ``<name>.npz`` with raw bit patterns
``a [T,16,K]``, ``b [T,K,8]``, ``c [T,16,8]``, ``d [T,16,8]`` (unsigned ints of the format's
width; tf32/f32 and s32 as uint32), ``kind [T]`` (uint8 index into ``kinds``) and ``kinds``
(strings); ``manifest.json`` beside the files says where and how they were made.

:func:`capture` runs the probe kernels of ``probe/cuda/mma_sync_probe.cu`` (one ``mma.sync`` per
warp per instruction step, built with ``nvcc -arch=sm_90 -cubin``) on an attached GPU.
:func:`verify_recording` replays a recording through ``precision.mma`` and compares bit
patterns exactly (NaNs included, by their bits).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from precision.probe.catalog import PROBES, Probe, get_probe
from precision.probe.inputs import exact_dot, generate, tile_counts, values

KERNEL_SOURCE = Path(__file__).resolve().parent / "cuda" / "mma_sync_probe.cu"
#: Directory of ``mma_sync.cuh``, the mma.sync wrappers that the probe shares with the GEMMs.
INCLUDE_DIR = Path(__file__).resolve().parents[1] / "kernels"
#: The header the probe includes (part of the probe's source identity).
KERNEL_HEADERS = (INCLUDE_DIR / "mma_sync.cuh",)
MANIFEST = "manifest.json"
ARCH = "sm_90"
#: Default tiles per single instruction (x128 outputs = 101,888 dot products).
DEFAULT_TILES = 796


def kernel_sha256() -> str:
    """sha256 (hex) of the probe kernel source file (its header: :func:`header_sha256`)."""
    return hashlib.sha256(KERNEL_SOURCE.read_bytes()).hexdigest()


def header_sha256() -> str:
    """sha256 (hex) of the headers the probe kernel includes (``mma_sync.cuh``), in order."""
    h = hashlib.sha256()
    for header in KERNEL_HEADERS:
        h.update(header.read_bytes())
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# recordings


@dataclass
class Recording:
    """One instruction's recorded vectors (raw bits) and the kind of each tile."""

    instr: Probe
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    d: np.ndarray
    kind: np.ndarray
    kinds: tuple[str, ...]

    @property
    def tiles(self) -> int:
        return int(self.a.shape[0])

    def select(self, kind: str) -> Recording:
        """The tiles of one kind (ValueError naming the kinds present)."""
        if kind not in self.kinds:
            raise ValueError(f"kind {kind!r} not in recording {self.instr.name}: {self.kinds}")
        m = self.kind == self.kinds.index(kind)
        return Recording(
            self.instr, self.a[m], self.b[m], self.c[m], self.d[m], self.kind[m], self.kinds
        )


def save_recording(path: Path, rec: Recording) -> None:
    np.savez_compressed(
        path, a=rec.a, b=rec.b, c=rec.c, d=rec.d, kind=rec.kind, kinds=np.array(rec.kinds)
    )


#: The arrays of every recording.
RECORDING_ARRAYS = ("a", "b", "c", "d", "kind", "kinds")
#: The arrays with one entry per tile.
TILED = ("a", "b", "c", "d", "d_mma", "kind")


def read_npz(path: str | Path, required: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` at ``path``, read whole (no pickles). ``ValueError`` naming
    the file when it is no readable archive (truncated, corrupt, empty, an object array) or
    lacks one of the ``required`` arrays: a damaged recording is an error, never a traceback."""
    path = Path(path)
    try:
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as z:  # fh: closed always
            if not hasattr(z, "files"):  # an .npy file loads as one array
                raise ValueError("an .npy array, not an .npz archive")
            arrays = {k: z[k] for k in z.files}
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        what = "zlib.error" if isinstance(exc, zlib.error) else type(exc).__name__
        raise ValueError(f"{path}: unreadable recording ({what}: {exc})") from None
    missing = [k for k in required if k not in arrays]
    if missing:
        raise ValueError(f"{path}: missing arrays {missing} (it holds {sorted(arrays)})")
    return arrays


def tile_count(path: str | Path, arrays: dict, names: tuple[str, ...] = TILED) -> int:
    """The number of tiles of a recording: the common first dimension of ``arrays[name]``
    for ``name`` in ``names`` (``ValueError`` naming ``path`` and every array's count where
    they differ, e.g. a ``d`` cut short)."""
    counts = {n: (arrays[n].shape[0] if arrays[n].ndim else 0) for n in names if n in arrays}
    if len(set(counts.values())) > 1:
        told = ", ".join(f"{n} {t}" for n, t in counts.items())
        raise ValueError(f"{path}: the arrays hold different numbers of tiles ({told})")
    return next(iter(counts.values()), 0)


def read_manifest(directory: str | Path) -> dict | None:
    """The ``manifest.json`` of a recording directory as a dict; None where there is none.
    ``ValueError`` naming the file when it is no JSON object (damaged, truncated)."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: unreadable manifest ({type(exc).__name__}: {exc})") from None
    if not isinstance(manifest, dict):
        raise ValueError(
            f"{path}: unreadable manifest (a JSON {type(manifest).__name__}, not an object)"
        )
    return manifest


def manifest_arch(directory: str | Path) -> str:
    """The :data:`precision.tensorcore.ARCHS` model of the GPU that made the recordings in
    ``directory``: its manifest's ``compute_capability`` (sm90 without a manifest or that
    field). ``ValueError`` naming the manifest for a value that is no compute capability or
    one no model covers."""
    from precision.tensorcore.arch import arch_of_compute_capability

    where = Path(directory) / MANIFEST
    cc = manifest_compute_capability(where, read_manifest(directory) or {})
    try:
        return arch_of_compute_capability(cc)
    except ValueError as exc:
        raise ValueError(f"{where}: compute_capability {cc!r}: {exc}") from None


def manifest_compute_capability(path: str | Path, manifest: dict[str, Any]) -> int:
    """The compute capability of the GPU that made the recordings of ``manifest`` (read from
    ``path``): its ``compute_capability``, an integer written as a number or a string (90 or
    "90" for sm_90), 90 where absent. ``ValueError`` naming the file for anything else: a
    float such as 9.0 or 90.0 would otherwise be read as another GPU or as this one by
    chance."""
    cc = manifest.get("compute_capability", 90)
    try:
        return int(str(cc))
    except ValueError:
        raise ValueError(
            f"{path}: compute_capability {cc!r} is no compute capability (expected an integer "
            "such as 90 for sm_90)"
        ) from None


def check_kinds(path: str | Path, kind: np.ndarray, kinds: tuple[str, ...], tiles: int) -> None:
    """``ValueError`` naming ``path`` unless ``kind`` gives every one of ``tiles`` tiles a valid
    index into ``kinds``: a tile of no kind would drop out of every per-kind count."""
    if kind.ndim != 1 or kind.shape[0] != tiles or kind.dtype.kind not in "iu":
        raise ValueError(
            f"{path}: array 'kind' should be {tiles} integer tile kinds, got "
            f"{kind.dtype.name}{kind.shape}"
        )
    bad = (kind < 0) | (kind >= len(kinds))
    if bad.any():
        t = int(np.argmax(bad))
        raise ValueError(
            f"{path}: array 'kind' of {int(bad.sum())} tile(s) (first: tile {t}, kind "
            f"{int(kind[t])}) is no index into 'kinds' ({len(kinds)} kinds: {', '.join(kinds)})"
        )


def check_arrays(path: str | Path, arrays: dict, want: dict[str, tuple[tuple, Any]]) -> None:
    """``ValueError`` naming ``path`` and the array unless each ``arrays[name]`` has the shape
    and dtype of ``want[name]`` (a shape of ints, the tile count first)."""
    for name, (shape, dtype) in want.items():
        arr = arrays[name]
        if arr.shape != tuple(shape) or arr.dtype != np.dtype(dtype):
            raise ValueError(
                f"{path}: array {name!r} should be {np.dtype(dtype).name}{tuple(shape)}, "
                f"got {arr.dtype.name}{arr.shape}"
            )


def load_recording(path: str | Path) -> Recording:
    """Read ``<name>.npz``; the instruction is named by the file stem. Checks shapes/dtypes
    and that every tile's ``kind`` indexes ``kinds`` (``ValueError`` naming the file)."""
    path = Path(path)
    instr = get_probe(path.stem)
    z = read_npz(path, RECORDING_ARRAYS)
    rec = Recording(
        instr, z["a"], z["b"], z["c"], z["d"], z["kind"], tuple(str(k) for k in z["kinds"])
    )
    T, K = tile_count(path, z), instr.K
    want = {
        "a": ((T, 16, K), instr.a_fmt.bits_dtype),
        "b": ((T, K, 8), instr.a_fmt.bits_dtype),
        "c": ((T, 16, 8), instr.c_fmt.bits_dtype),
        "d": ((T, 16, 8), instr.c_fmt.bits_dtype),
    }
    check_arrays(path, z, want)
    check_kinds(path, rec.kind, rec.kinds, T)
    return rec


def load_arrays(path: str | Path) -> dict:
    """A recording ``.npz`` as a dict of its arrays, ``kinds`` as a tuple of str (the wgmma and
    WMMA recordings, which carry no instruction record of their own). ``ValueError`` naming
    the file when it is unreadable, lacks an array of :data:`RECORDING_ARRAYS`, ``c`` and ``d``
    differ in shape or dtype, or a tile's ``kind`` is no index into ``kinds``."""
    rec: dict[str, Any] = read_npz(path, RECORDING_ARRAYS)
    rec["kinds"] = tuple(str(k) for k in rec["kinds"])
    tiles, c = tile_count(path, rec), rec["c"]
    if c.ndim != 3:
        raise ValueError(f"{path}: array 'c' should be [tiles, rows, cols], got shape {c.shape}")
    check_arrays(path, rec, {"d": (c.shape, c.dtype)})
    check_kinds(path, rec["kind"], rec["kinds"], tiles)
    return rec


def match_counts(
    x: np.ndarray, y: np.ndarray, kind: np.ndarray, kinds: tuple[str, ...]
) -> dict[str, tuple[int, int]]:
    """Bitwise equality of two output arrays of one recording (tiles first): ``{'all':
    (equal, total), <data kind>: (equal, total), ...}``, with ``kind[t]`` the index into
    ``kinds`` of tile ``t``'s input data (the WMMA and wgmma recordings' ``kind``/``kinds``)."""
    if x.shape != y.shape:
        raise ValueError(f"outputs of shape {x.shape} compared with outputs of shape {y.shape}")
    eq = np.asarray(x == y).reshape(x.shape[0], -1)
    out = {"all": (int(eq.sum()), int(eq.size))}
    for i, name in enumerate(kinds):
        tiles = kind == i
        out[str(name)] = (int(eq[tiles].sum()), int(eq[tiles].size))
    if sum(n for k, (_, n) in out.items() if k != "all") != eq.size:  # a tile of no kind
        raise ValueError(f"tile kinds {sorted(set(kind.tolist()))} do not all index {kinds}")
    return out


def match_percent(counts: tuple[int, int]) -> str:
    """``equal/total (pp.ppp%)`` of a :func:`match_counts` entry."""
    return f"{counts[0]}/{counts[1]} ({100.0 * counts[0] / max(counts[1], 1):.3f}%)"


def compare_dir_or_error(
    where: Path, compare: Callable[[Path], dict], recordings: str, expected: str
) -> dict | None:
    """``compare(where)``, the tables of a ``compare`` command; ``None`` after one ``error:``
    line on stderr when ``where`` is no directory, a recording is unreadable or none was
    found (a checking tool never reads "nothing compared" as success). ``recordings`` names
    the files looked for (``wgmma_*.npz``), ``expected`` says what a recording looks like."""
    if not where.is_dir():
        what = "a file, not a directory" if where.exists() else "no such directory"
        print(f"error: no {recordings} recordings under {where} ({what})", file=sys.stderr)
        return None
    try:
        rows = compare(where)
    except (OSError, ValueError, KeyError) as exc:
        why = f"{type(exc).__name__}: {exc}"
        print(f"error: {where}: unreadable recording ({why})", file=sys.stderr)
        return None
    if not rows:
        print(f"error: no {recordings} recordings under {where} ({expected})", file=sys.stderr)
        return None
    return rows


def recording_paths(path: str | Path) -> list[Path]:
    """The ``.npz`` recordings at ``path`` (a directory or one file), in instruction order."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"no recording directory or file at {path}")
    files = {p.stem: p for p in path.glob("*.npz") if p.stem in PROBES}
    if not files:
        raise FileNotFoundError(
            f"{path} holds no recordings (expected files like {next(iter(PROBES))}.npz)"
        )
    return [files[n] for n in PROBES if n in files]


# ---------------------------------------------------------------------------------------------
# exact checks and emulator replay


def small_int_mismatches(rec: Recording) -> tuple[int, int]:
    """(mismatches, outputs) of the ``small_int`` tiles against exact integer arithmetic.

    small_int data are integers whose products, partial sums and c are exact in every format
    involved, so D must equal A·B + C exactly; a wrong fragment layout breaks this.
    """
    r = rec.select("small_int")
    exact = exact_dot(r.instr, r.a, r.b) + values(r.instr.c_fmt, r.c)
    got = values(r.instr.c_fmt, r.d)
    return int(np.count_nonzero(got != exact)), int(got.size)


def emulate(rec: Recording, mma: Callable | None = None) -> np.ndarray:
    """D bits that ``precision.mma`` (or ``mma``) gives for the recording's inputs."""
    instr = rec.instr
    if mma is None:
        from precision.tensorcore import mma as emulator

        mma = emulator
    a = rec.a.view(instr.a_fmt.storage)
    b = rec.b.view(instr.a_fmt.storage)
    c = rec.c.view(instr.c_fmt.storage)
    out = np.asarray(mma(a, b, c, arch="sm90", fmt=instr.emulator_fmt, satf=instr.satf))
    if out.dtype != c.dtype or out.shape != c.shape:
        raise TypeError(
            f"mma returned {out.dtype}{out.shape} for {instr.name}, expected "
            f"{c.dtype}{c.shape} (c's dtype and shape)"
        )
    return out.view(instr.c_fmt.bits_dtype)


@dataclass
class Mismatch:
    """One differing output: where, the inputs that produced it and both results (raw bits)."""

    kind: str
    tile: int
    row: int
    col: int
    a_row: np.ndarray
    b_col: np.ndarray
    c: int
    expected: int
    got: int

    def describe(self, width: int, cwidth: int) -> str:
        def h(x, w):
            return f"{int(x):0{w // 4}x}"

        return (
            f"  {self.kind} tile {self.tile} [{self.row},{self.col}]: "
            f"c={h(self.c, cwidth)} expected={h(self.expected, cwidth)} "
            f"got={h(self.got, cwidth)}\n"
            f"    a[row]={' '.join(h(x, width) for x in self.a_row)}\n"
            f"    b[:,col]={' '.join(h(x, width) for x in self.b_col)}"
        )


@dataclass
class VerifyResult:
    """Match counts per kind for one instruction, and the first mismatches."""

    instr: Probe
    counts: dict[str, tuple[int, int]]  # kind -> (outputs, matching outputs)
    mismatches: list[Mismatch] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and all(n == m for n, m in self.counts.values())


def compare(rec: Recording, got: np.ndarray, max_mismatches: int = 5) -> VerifyResult:
    """Compare emulated D bits ``got`` with the recorded D bits, per kind, exactly."""
    eq = got == rec.d
    counts = {}
    for idx, kind in enumerate(rec.kinds):
        m = rec.kind == idx
        counts[kind] = (int(eq[m].size), int(eq[m].sum()))
    bad = np.argwhere(~eq)[:max_mismatches]
    mism = [
        Mismatch(
            rec.kinds[rec.kind[t]],
            int(t),
            int(i),
            int(j),
            rec.a[t, i, :],
            rec.b[t, :, j],
            int(rec.c[t, i, j]),
            int(rec.d[t, i, j]),
            int(got[t, i, j]),
        )
        for t, i, j in bad
    ]
    return VerifyResult(rec.instr, counts, mism)


def verify_recording(
    rec: Recording, mma: Callable | None = None, max_mismatches: int = 5
) -> VerifyResult:
    """Replay ``rec`` through the emulator; an emulator exception becomes ``error``."""
    try:
        got = emulate(rec, mma)
    except Exception as exc:  # report, do not hide: the table shows the error per instruction
        counts = {k: (int((rec.kind == i).sum() * 128), 0) for i, k in enumerate(rec.kinds)}
        return VerifyResult(rec.instr, counts, error=f"{type(exc).__name__}: {exc}")
    return compare(rec, got, max_mismatches)


def format_table(results: list[VerifyResult]) -> str:
    """Plain-text match table: instruction x kind, outputs, matches, percent."""
    lines = [f"{'instruction':<22} {'kind':<14} {'outputs':>9} {'match':>9} {'%':>8}"]
    for r in results:
        for kind, (n, m) in r.counts.items():
            pct = 100.0 * m / n if n else float("nan")
            lines.append(f"{r.instr.name:<22} {kind:<14} {n:>9} {m:>9} {pct:>8.3f}")
        if r.error:
            lines.append(f"{r.instr.name:<22} ERROR {r.error}")
    n_all = sum(n for r in results for n, _ in r.counts.values())
    m_all = sum(m for r in results for _, m in r.counts.values())
    lines.append(f"{'total':<37} {n_all:>9} {m_all:>9} {100.0 * m_all / max(n_all, 1):>8.3f}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# capture on a GPU


def build_probe(workdir: str | Path) -> Path:
    """Compile mma_sync_probe.cu with ``nvcc -arch=sm_90 -cubin -I precision/kernels`` (for
    ``mma_sync.cuh``) into ``workdir``; the cubin's path.

    nvcc rather than NVRTC: CuPy's NVRTC path forces ``-ftz=true``.
    """
    from precision.kernels.build import run_nvcc

    out = Path(workdir) / "probe.cubin"
    run_nvcc(
        [f"-arch={ARCH}", "-cubin", f"-I{INCLUDE_DIR}", "-o", str(out), str(KERNEL_SOURCE)],
        what="precision capture building probe/cuda/mma_sync_probe.cu",
    )
    return out


def _tool_version(tool: str) -> str | None:
    exe = shutil.which(tool)
    if exe is None:
        return None
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True)
    return proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else None


def sass_mma_opcodes(cubin: Path) -> dict[str, dict[str, int]] | None:
    """Per kernel, counts of tensor-core opcodes (HMMA/IMMA/DMMA/BMMA, HGMMA/QGMMA/IGMMA...)
    and conversion opcodes in the SASS (``cuobjdump -sass``); None without cuobjdump."""
    exe = shutil.which("cuobjdump")
    if exe is None:
        return None
    proc = subprocess.run([exe, "-sass", str(cubin)], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    out: dict[str, dict[str, int]] = {}
    current = None
    pat = re.compile(r"\b((?:[HIDBQ]G?MMA|F2FP|HADD2|FADD|F2F|I2F|HFMA2|PRMT)[\w.]*)")
    for line in proc.stdout.splitlines():
        fn = re.search(r"Function : (\w+)", line)
        if fn:
            current = out.setdefault(fn.group(1), {})
            continue
        if current is not None and "/*" in line:
            m = pat.search(line)
            if m:
                current[m.group(1)] = current.get(m.group(1), 0) + 1
    return out


def run_probe(module, instr: Probe, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Run ``instr``'s probe kernel on raw bits; returns D bits ``[T,16,8]``."""
    import cupy as cp

    T = a.shape[0]
    da, db, dc = (cp.asarray(np.ascontiguousarray(x)) for x in (a, b, c))
    dd = cp.empty_like(dc)
    kern = module.get_function(instr.kernel)
    warps_per_block = 4
    grid = min((T + warps_per_block - 1) // warps_per_block, 4096)
    kern((grid,), (32 * warps_per_block,), (da, db, dc, dd, np.int64(T), np.int32(instr.nchain)))
    cp.cuda.Device().synchronize()
    return cp.asnumpy(dd)


def capture(
    out_dir: str | Path,
    *,
    seed: int = 1,
    tiles: int = DEFAULT_TILES,
    names: list[str] | None = None,
    log: Callable[[str], None] = lambda s: None,
) -> dict:
    """Record every probe instruction on the attached GPU into ``out_dir``; the manifest.

    Raises RuntimeError naming the problem when CuPy, a GPU, an sm_90 device or nvcc is
    missing, and before saving anything if the ``small_int`` layout self-check fails.
    """
    from precision.gpu import require_gpu

    cp = require_gpu("precision capture")
    dev = cp.cuda.Device()
    cc = dev.compute_capability
    if cc != "90":
        raise RuntimeError(
            f"the probes are built for sm_90 (Hopper); this GPU has compute "
            f"capability {cc[:-1]}.{cc[-1]}"
        )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cubin = build_probe(tmp)
        sass = sass_mma_opcodes(cubin)
        module = cp.RawModule(path=str(cubin))
        recs = {}
        for name in names or list(PROBES):
            instr = get_probe(name)
            counts = tile_counts(instr, tiles)
            a, b, c, kind, kinds = generate(instr, counts, seed)
            d = run_probe(module, instr, a, b, c)
            rec = Recording(instr, a, b, c, d, kind, kinds)
            bad, n = small_int_mismatches(rec)
            if bad:
                raise RuntimeError(
                    f"layout self-check failed for {name}: {bad}/{n} small_int "
                    f"outputs differ from exact A·B+C; nothing saved"
                )
            log(f"{name}: {rec.tiles} tiles, {rec.tiles * 128} outputs, layout check {n}/{n}")
            recs[name] = (rec, counts, n)
    from precision.provenance import collect

    prov = collect(seed)
    manifest = {
        "description": "raw-bit mma.sync probe vectors; see precision/probe/capture.py",
        "gpu": prov.get("gpu"),
        "driver": prov.get("driver"),
        "cuda": prov.get("cuda"),
        "cupy": prov.get("cupy"),
        "compute_capability": cc,
        "created_utc": prov["created_utc"],
        "provenance": prov,
        "nvcc": _tool_version("nvcc"),
        "nvcc_flags": f"-arch={ARCH} -cubin -I precision/kernels",
        "kernel_source": "precision/probe/cuda/mma_sync_probe.cu",
        "kernel_source_sha256": kernel_sha256(),
        "kernel_header_sha256": header_sha256(),
        "seed": seed,
        "tiles_per_instruction": tiles,
        "instructions": {},
    }
    for name, (rec, counts, n_small) in recs.items():
        instr = rec.instr
        save_recording(out_dir / f"{name}.npz", rec)
        manifest["instructions"][name] = {
            "file": f"{name}.npz",
            "ptx": instr.ptx,
            "kernel": instr.kernel,
            "chained_instructions": instr.nchain,
            "k": instr.k,
            "K": instr.K,
            "a_format": instr.a_fmt.ptx,
            "c_format": instr.c_fmt.ptx,
            "satfinite": instr.satf,
            "tiles": rec.tiles,
            "outputs": rec.tiles * 128,
            "tiles_per_kind": counts,
            "layout_check": f"passed {n_small}/{n_small}",
            "sass_opcodes": (sass or {}).get(instr.kernel),
        }
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest
