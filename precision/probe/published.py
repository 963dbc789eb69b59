"""Published tensor-core outputs of other GPUs, converted, described and replayed.

Khattak & Mikaitis (*Accurate models of NVIDIA tensor cores*, ACM TACO 2025; repository
``north-numerical-computing/MATLAB-tensor-core``, BSD-2-Clause) publish, under
``model_validation/<GPU>/<format>/``, 5,000 single dot products ``d = Σ_k a_k·b_k + c`` per
(GPU, input format), recorded on V100, A100, A2, Ada (RTX), L40S, H100, H200 and B200:

- ``a_<GPU>_<fmt>.txt``, ``b_<GPU>_<fmt>.txt``: one dot product per line, K fp32 words in hex
  (8 hex digits each; every value is exactly representable in the input format, tf32 values
  have the 13 low container bits zero);
- ``c_<GPU>_fp32.txt``: c as a 32-character binary string of its fp32 bits;
- ``d_<GPU>_fp32.txt`` / ``d_<GPU>_fp16.txt``: the GPU's d as 32-character binary fp32 strings
  (fp16 results widened to fp32, which is exact).

:func:`convert` turns those text files into one compressed ``<gpu>/<fmt>.npz`` per (GPU, input
format) with the raw bit patterns ``c [T]`` (uint32 fp32 bits, as published), ``d_fp32 [T]``
(uint32) and, where recorded, ``d_fp16 [T]`` (uint16), plus ``meta`` (JSON: source files, their
git blob ids, and the inputs file). The inputs ``a, b [T, K]`` (uint8 fp8, uint16 fp16/bf16,
uint32 tf32 in its fp32 container) are shared by several GPUs and stored once, in
``inputs/<fmt>_k<K>.npz``; :func:`load` joins them.

:data:`RECIPES` says, for every published output file, which instruction the authors' harness
ran, how c entered it, and the block parameters (products per block L, fraction bits F, zero
anchor ``e_zero``, output rounding, schedule) that reproduce it bit for bit;
:func:`replay` recomputes ``d`` either through the vectorised block core with exactly those
parameters (``via="block"``) or through :func:`precision.mma` with the GPU's
:class:`~precision.tensorcore.ArchModel` (``via="mma"``; ``via="gpu"``: its GPU engine).

    python -m precision.probe.published convert SRC_DIR OUT_DIR  # SRC_DIR: the repo checkout
    python -m precision.probe.published table [DIR]              # match table of every recipe
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from precision.console import run_main
from precision.formats import from_bits, get_format, to_bits
from precision.tensorcore import fdpa

#: Where the converted files live in this repository.
DATA_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "published"
#: Upstream repository and the commit the files in DATA_DIR were converted from.
SOURCE_REPO = "https://github.com/north-numerical-computing/MATLAB-tensor-core"
SOURCE_COMMIT = "b12b5a700957655375a1b0c1d0c26e76065da015"

#: Upstream folder name -> (our directory name, compute capability of the GPU).
GPUS: dict[str, tuple[str, str]] = {
    "V100": ("v100", "sm_70"),
    "A100": ("a100", "sm_80"),
    "A2": ("a2", "sm_86"),
    "Ada": ("ada", "sm_89"),
    "L40S": ("l40s", "sm_89"),
    "H100": ("h100", "sm_90"),
    "H200": ("h200", "sm_90"),
    "B200": ("b200", "sm_100"),
}
#: Upstream format folder -> our format name (the registry resolves the folder names).
FORMATS: dict[str, str] = {d: get_format(d).name for d in ("fp16", "bf16", "tf32", "E4M3", "E5M2")}
OUTPUTS = ("fp32", "fp16")


# ----------------------------------------------------------------------------- reading text


def read_hex_words(path: Path) -> np.ndarray:
    """``[T, K]`` uint32 from a text file of whitespace-separated 8-digit hex words per line.

    Raises ``ValueError`` naming the file and line when a line has a different word count or a
    word is not hex.
    """
    rows: list[list[int]] = []
    with open(path, encoding="utf-8-sig") as fh:
        for no, line in enumerate(fh, 1):
            words = line.split()
            if not words:
                continue
            try:
                rows.append([int(w, 16) for w in words])
            except ValueError:
                raise ValueError(f"{path}:{no}: expected hex fp32 words, got {line!r}") from None
            if len(rows[-1]) != len(rows[0]):
                raise ValueError(
                    f"{path}:{no}: expected {len(rows[0])} words as on the first line, "
                    f"got {len(rows[-1])}"
                )
    if not rows:
        raise ValueError(f"{path}: no data lines")
    out = np.array(rows, dtype=np.uint64)
    if int(out.max()) >= 2**32:
        raise ValueError(f"{path}: a word exceeds 32 bits")
    return out.astype(np.uint32)


def read_bit_strings(path: Path) -> np.ndarray:
    """``[T]`` uint32 from a text file with one 32-character binary string per line."""
    vals: list[int] = []
    with open(path, encoding="utf-8-sig") as fh:
        for no, line in enumerate(fh, 1):
            s = line.strip()
            if not s:
                continue
            if len(s) != 32 or set(s) - {"0", "1"}:
                raise ValueError(f"{path}:{no}: expected 32 binary digits, got {s!r}")
            vals.append(int(s, 2))
    if not vals:
        raise ValueError(f"{path}: no data lines")
    return np.array(vals, dtype=np.uint32)


def git_blob_sha1(data: bytes) -> str:
    """The git object id of a file with these bytes (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


# ----------------------------------------------------------------------------- convert


def _input_bits(words: np.ndarray, fmt: str, path: Path) -> np.ndarray:
    """fp32 container words -> bit patterns of ``fmt`` (exact; ``ValueError`` otherwise)."""
    if fmt == "tf32":
        if np.any(words & np.uint32(0x1FFF)):
            raise ValueError(f"{path}: tf32 values with nonzero low 13 container bits")
        return words
    values = words.view(np.float32).astype(np.float64)
    try:
        return to_bits(values, fmt)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def _model_validation_dir(src: Path) -> Path:
    for cand in (src, src / "model_validation"):
        if (cand / "H200").is_dir() or (cand / "V100").is_dir():
            return cand
    raise FileNotFoundError(
        f"{src}: expected the MATLAB-tensor-core repository or its model_validation/ folder "
        f"(with <GPU>/<format>/ subfolders such as H200/fp16/)"
    )


def convert(src: Path, out: Path, *, commit: str = SOURCE_COMMIT) -> list[Path]:
    """Convert every ``model_validation/<GPU>/<format>/`` set under ``src`` into ``out``.

    Writes ``out/<gpu>/<fmt>.npz`` (c, d and metadata) and, once per distinct pair of input
    files, ``out/inputs/<fmt>_k<K>.npz`` (a, b): the GPUs share their inputs, so storing them
    once keeps the data small. Copies the upstream ``LICENCE`` to ``out/LICENSE`` when ``src``
    is the repository root. Returns the paths written.

    ``out`` must be empty or absent: converting over earlier files (``tests/data/published``
    itself) replaced shared input files and left the other GPUs' sets naming inputs of
    another shape. A conversion that fails part way removes what it wrote. Convert into a
    new folder, compare (``table``), then replace deliberately.
    """
    src, out = Path(src), Path(out)
    mv = _model_validation_dir(src)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        what = "is not a directory" if not out.is_dir() else "already holds files"
        raise FileExistsError(
            f"{out} {what}: convert into a new, empty directory, compare it (`python -m "
            "precision.probe.published table DIR`), then replace the old files deliberately"
        )
    written: list[Path] = []
    try:
        return _convert_into(mv, out, commit, written)
    except BaseException:
        for path in written:  # (the folders too, deepest first, where they are left empty)
            path.unlink(missing_ok=True)
        for folder in sorted({p.parent for p in written} | {out}, key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def _convert_into(mv: Path, out: Path, commit: str, written: list[Path]) -> list[Path]:
    """The body of :func:`convert`: appends each file to ``written`` as it writes it."""
    inputs: dict[tuple[str, str, str], str] = {}  # (fmt, blob of a, of b) -> file stem
    for gpu, (gdir, cc) in GPUS.items():
        for up_fmt, fmt in FORMATS.items():
            folder = mv / gpu / up_fmt
            if not folder.is_dir():
                continue
            files = {
                "a": folder / f"a_{gpu}_{up_fmt}.txt",
                "b": folder / f"b_{gpu}_{up_fmt}.txt",
                "c": folder / f"c_{gpu}_fp32.txt",
            }
            for o in OUTPUTS:
                if (folder / f"d_{gpu}_{o}.txt").exists():
                    files[f"d_{o}"] = folder / f"d_{gpu}_{o}.txt"
            missing = [str(p) for p in files.values() if not p.exists()]
            if missing or len(files) == 3:
                raise FileNotFoundError(f"{folder}: missing {missing or 'd_*_fp32/fp16.txt'}")
            blobs = {k: git_blob_sha1(p.read_bytes()) for k, p in files.items()}
            a = _input_bits(read_hex_words(files["a"]), fmt, files["a"])
            b = _input_bits(read_hex_words(files["b"]), fmt, files["b"])
            if b.shape != a.shape:
                raise ValueError(f"{files['b']}: shape {b.shape}, but a has {a.shape}")
            t, k = a.shape
            key = (fmt, blobs["a"], blobs["b"])
            if key not in inputs:
                stem = f"{fmt}_k{k}"
                if stem in inputs.values():  # same format and K, different inputs
                    stem += f"_{blobs['a'][:8]}"
                inputs[key] = stem
                dest = out / "inputs" / f"{stem}.npz"
                dest.parent.mkdir(parents=True, exist_ok=True)
                np.savez_compressed(dest, a=a, b=b)
                written.append(dest)
            arrays: dict[str, np.ndarray] = {"c": read_bit_strings(files["c"])}
            if "d_fp32" in files:
                arrays["d_fp32"] = read_bit_strings(files["d_fp32"])
            if "d_fp16" in files:
                wide = read_bit_strings(files["d_fp16"]).view(np.float32).astype(np.float64)
                try:
                    arrays["d_fp16"] = to_bits(wide, "fp16")
                except ValueError as err:
                    raise ValueError(f"{files['d_fp16']}: {err}") from None
            for name, arr in arrays.items():
                if arr.shape != (t,):
                    raise ValueError(f"{files[name]}: {arr.shape[0]} rows, a has {t}")
            meta = {
                "gpu": gpu,
                "compute_capability": cc,
                "format": fmt,
                "K": int(k),
                "T": int(t),
                "inputs": f"inputs/{inputs[key]}.npz",
                "outputs": [o for o in OUTPUTS if f"d_{o}" in arrays],
                "source": SOURCE_REPO,
                "commit": commit,
                "files": {
                    name: {"path": str(p.relative_to(mv.parent)), "git_blob": blobs[name]}
                    for name, p in files.items()
                },
            }
            dest = out / gdir / f"{fmt}.npz"
            dest.parent.mkdir(parents=True, exist_ok=True)
            payload: dict[str, Any] = {**arrays, "meta": np.array(json.dumps(meta, sort_keys=True))}
            np.savez_compressed(dest, **payload)
            written.append(dest)
    if not written:
        raise FileNotFoundError(f"{mv}: no <GPU>/<format>/ folders found")
    licence = mv.parent / "LICENCE"
    if licence.exists():
        shutil.copyfile(licence, out / "LICENSE")
    return written


# ----------------------------------------------------------------------------- load


@dataclass(frozen=True)
class Published:
    """One converted (GPU, input format) set: raw bits and the metadata of its source."""

    a: np.ndarray  # [T, K] input-format bits
    b: np.ndarray  # [T, K]
    c: np.ndarray  # [T] uint32 fp32 bits, as published
    d: dict[str, np.ndarray]  # output format -> [T] bits (uint32 fp32 / uint16 fp16)
    meta: dict

    @property
    def fmt(self) -> str:
        """Input format name (fp16, bf16, tf32, e4m3, e5m2)."""
        return str(self.meta["format"])


def path_of(gpu: str, fmt: str, root: Path = DATA_DIR) -> Path:
    """``root/<gpu>/<fmt>.npz`` for an upstream GPU name (e.g. ``"H100"``)."""
    return Path(root) / GPUS[gpu][0] / f"{fmt}.npz"


def load(path: Path) -> Published:
    """Load one converted ``<gpu>/<fmt>.npz`` and the inputs file it names (see :func:`convert`)."""
    path = Path(path)
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        d = {o: z[f"d_{o}"] for o in OUTPUTS if f"d_{o}" in z.files}
        c = z["c"]
    with np.load(path.parent.parent / meta["inputs"], allow_pickle=False) as z:
        a, b = z["a"], z["b"]
    if a.shape != (meta["T"], meta["K"]) or b.shape != a.shape or c.shape != (meta["T"],):
        raise ValueError(
            f"{path}: a {a.shape}, b {b.shape}, c {c.shape}; meta says T = {meta['T']}, "
            f"K = {meta['K']}"
        )
    return Published(a, b, c, d, meta)


# ----------------------------------------------------------------------------- recipes


@dataclass(frozen=True)
class Recipe:
    """How one published output file was produced and which arithmetic reproduces it.

    - ``instruction``: what the authors' harness executed (from their CUDA sources and
      ``Validate_TC_models.m``); ``pad_k``: that instruction's k. The published K products
      occupy k = 0..K-1 and the rest of the instruction's k is zero.
    - ``c_input``: how the published fp32 c entered: ``"c"`` as is (fp32 accumulator),
      ``"c_to_fp16"`` rounded to nearest fp16 by the harness (``__float2half``), ``"zero"``
      not at all (the Hopper fp8 fp32 data came from ``wgmma`` with D = 0).
    - ``block``, ``frac_bits``, ``e_zero``, ``rounding``, ``schedule``: the block arithmetic
      (see :mod:`precision.tensorcore.fdpa` and :mod:`precision.tensorcore.arch`):
      ``schedule="chain"`` runs blocks of ``block`` products in increasing k, each block's
      rounded output being the next block's c; ``"fp8_via_f16"`` is the f16 HMMA lowering of
      fp8 ``mma.sync`` (two interleaved 16-product blocks, k mod 4 in {0,1} then {2,3}, from
      c = +0, then c added with one round-to-nearest add in the accumulator format).
    - ``arch``: the :data:`precision.tensorcore.ARCHS` model of this GPU; ``mma``: whether
      ``precision.mma(arch=arch, op=op)`` computes this instruction (``op`` None for the
      architecture's default family, "wgmma" for the Hopper fp8 files), so the file checks
      that model too.
    - ``xfail``: why the file is not reproduced yet (``None`` when it is).
    """

    gpu: str
    fmt: str
    out: str
    arch: str
    instruction: str
    pad_k: int
    c_input: str
    block: int
    frac_bits: int
    e_zero: int
    rounding: str
    schedule: str = "chain"
    mma: bool = True
    op: str | None = None
    note: str = ""
    xfail: str | None = None

    @property
    def name(self) -> str:
        """``<gpu>-<fmt>-<out>``, e.g. ``H100-e4m3-fp16``."""
        return f"{self.gpu}-{self.fmt}-{self.out}"


_WMMA_F16 = "wmma.mma.sync m16n16k16 {a}.{a} -> {o} (CUDA nvcuda::wmma)"
_WMMA_TF32 = "wmma.mma.sync m16n16k8 tf32.tf32 -> f32 (CUDA nvcuda::wmma)"
_MMA_FP8 = "mma.sync.aligned.m16n8k32.row.col.{o}.{a}.{a}.{o}"
_WGMMA_FP8 = "wgmma.mma_async m64nNk32 .f32.{a}.{a} with D = 0 (harness not published)"
_TF32_NOTE = (
    "WMMA m16n16k8 lowers to HMMA.1684 (L = 4) per Khattak & Mikaitis; with only 4 nonzero "
    "products the data cannot distinguish L = 4 from the L = 8 of mma.sync m16n8k8."
)


@dataclass(frozen=True)
class _Numerics:
    """Block parameters of one instruction family, for both accumulator formats."""

    block: int
    frac_bits: int
    e_zero32: int
    e_zero16: int
    rounding32: str
    schedule: str = "chain"


_VOLTA = _Numerics(4, 23, -131, -19, "rz")  # HMMA.884
_AMPERE_16BIT = _Numerics(8, 24, -132, -20, "rz")  # HMMA.1688 (sm_80, sm_86, sm_89)
_AMPERE_TF32 = _Numerics(4, 24, -132, -20, "rz")  # HMMA.1684
_ADA_FP8 = _Numerics(16, 13, -132, -20, "rz_e8m13")  # QMMA.16816: 2 chained blocks of 16
_HOPPER_16BIT = _Numerics(16, 25, -133, -21, "rz")  # HMMA.16816 (sm_90, sm_100)
_HOPPER_TF32 = _Numerics(4, 25, -133, -21, "rz")  # WMMA m16n16k8 -> HMMA.1684
_FP8_VIA_F16 = _Numerics(16, 25, -133, -21, "rz", "fp8_via_f16")  # fp8 mma.sync on sm_90/100
_QGMMA = _Numerics(32, 13, -133, -21, "rz_e8m13")  # wgmma fp8: one 32-product block


def _recipes() -> list[Recipe]:
    out: list[Recipe] = []

    def add(gpu, fmt, outs, arch, instr, pad_k, num: _Numerics, c_input=None, **kw):
        for o in outs:
            a = {"fp16": "f16"}.get(fmt, fmt)
            ez, rnd = (num.e_zero32, num.rounding32) if o == "fp32" else (num.e_zero16, "rne")
            out.append(
                Recipe(
                    gpu=gpu,
                    fmt=fmt,
                    out=o,
                    arch=arch,
                    instruction=instr.format(a=a, o=o.replace("fp", "f")),
                    pad_k=pad_k,
                    c_input=c_input or ("c" if o == "fp32" else "c_to_fp16"),
                    block=num.block,
                    frac_bits=num.frac_bits,
                    e_zero=ez,
                    rounding=rnd,
                    schedule=num.schedule,
                    **kw,
                )
            )

    both, f32 = OUTPUTS, ("fp32",)
    add("V100", "fp16", both, "sm70", _WMMA_F16, 16, _VOLTA)
    for gpu in ("A100", "A2", "Ada", "L40S"):
        arch = "sm89" if gpu in ("Ada", "L40S") else "sm80"  # A2 (sm_86): the sm80 model
        add(gpu, "fp16", both, arch, _WMMA_F16, 16, _AMPERE_16BIT)
        add(gpu, "bf16", f32, arch, _WMMA_F16, 16, _AMPERE_16BIT)
        add(gpu, "tf32", f32, arch, _WMMA_TF32, 8, _AMPERE_TF32)
    for fmt in ("e4m3", "e5m2"):
        add("Ada", fmt, both, "sm89", _MMA_FP8, 32, _ADA_FP8)
        add("L40S", fmt, f32, "sm89", _MMA_FP8, 32, _ADA_FP8)
    for gpu in ("H100", "H200", "B200"):
        arch = "sm100" if gpu == "B200" else "sm90"
        add(gpu, "fp16", both, arch, _WMMA_F16, 16, _HOPPER_16BIT)
        add(gpu, "bf16", f32, arch, _WMMA_F16, 16, _HOPPER_16BIT)
        add(gpu, "tf32", f32, arch, _WMMA_TF32, 8, _HOPPER_TF32, note=_TF32_NOTE)
        for fmt in ("e4m3", "e5m2"):
            if gpu == "B200":
                add(gpu, fmt, both, arch, _MMA_FP8, 32, _FP8_VIA_F16)
            else:  # fp16 output from mma.sync, fp32 output from wgmma with D = 0
                add(gpu, fmt, ("fp16",), arch, _MMA_FP8, 32, _FP8_VIA_F16)
                add(gpu, fmt, f32, arch, _WGMMA_FP8, 32, _QGMMA, c_input="zero", op="wgmma")
    return out


#: Every published output file and the arithmetic that reproduces it, by :attr:`Recipe.name`.
RECIPES: dict[str, Recipe] = {r.name: r for r in _recipes()}


# ----------------------------------------------------------------------------- replay


def operands(pub: Published, recipe: Recipe) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Float64 ``a [T, pad_k]``, ``b [T, pad_k]``, ``c [T]`` as the harness fed them.

    ``a`` and ``b`` are zero beyond the published K; ``c`` is the published fp32 c, rounded to
    nearest fp16 (``c_to_fp16``) or replaced by +0 (``zero``) as :attr:`Recipe.c_input` says.
    """
    t, k = pub.a.shape
    if recipe.pad_k < k:
        raise ValueError(f"{recipe.name}: pad_k = {recipe.pad_k} < published K = {k}")
    a = np.zeros((t, recipe.pad_k))
    b = np.zeros((t, recipe.pad_k))
    a[:, :k] = from_bits(pub.a, pub.fmt)
    b[:, :k] = from_bits(pub.b, pub.fmt)
    c = pub.c.view(np.float32).astype(np.float64)
    if recipe.c_input == "c_to_fp16":
        c = c.astype(np.float16).astype(np.float64)  # one RNE rounding, as __float2half
    elif recipe.c_input == "zero":
        c = np.zeros_like(c)
    elif recipe.c_input != "c":
        raise ValueError(f"{recipe.name}: unknown c_input {recipe.c_input!r}")
    return a, b, c


def _acc_dtype(out: str) -> type:
    return np.float32 if out == "fp32" else np.float16


def _block(a, b, acc, recipe: Recipe, fmt: str) -> np.ndarray:
    """One fused block over ``a, b [T, L]`` with accumulator ``acc [T]`` (float32/16)."""
    emin = get_format(fmt).emin
    av, ae = fdpa.decode(a, emin)
    bv, be = fdpa.decode(b, emin)
    cv, ce = fdpa.decode(acc, get_format(recipe.out).emin)
    d = fdpa.block(
        av[:, None, :],
        ae[:, None, :],
        bv[:, :, None],
        be[:, :, None],
        cv[:, None, None],
        ce[:, None, None],
        frac_bits=recipe.frac_bits,
        e_zero=recipe.e_zero,
        rounding=recipe.rounding,
        check_special=True,
    )
    return d[:, 0, 0]


def replay_block(a: np.ndarray, b: np.ndarray, c: np.ndarray, recipe: Recipe) -> np.ndarray:
    """``d [T]`` in the accumulator dtype from float64 operands, by the recipe's parameters."""
    acc: np.ndarray = c.astype(_acc_dtype(recipe.out))
    k = a.shape[1]
    if recipe.schedule == "chain":
        for k0 in range(0, k, recipe.block):
            ks = slice(k0, k0 + recipe.block)
            acc = _block(a[:, ks], b[:, ks], acc, recipe, recipe.fmt)
        return acc
    if recipe.schedule.startswith("fp8_via_f16"):
        # Variants other than "fp8_via_f16" exist only for :func:`alternatives`.
        idx = np.arange(k)
        if recipe.schedule == "fp8_via_f16_contiguous":  # k < 16, then k >= 16
            groups = (idx[: k // 2], idx[k // 2 :])
        else:
            groups = (idx[idx % 4 < 2], idx[idx % 4 >= 2])
        partial = recipe
        if recipe.schedule == "fp8_via_f16_fp32_partials":  # partial sums kept in fp32 (RZ)
            partial = dataclasses.replace(recipe, out="fp32", e_zero=-133, rounding="rz")
        elif recipe.schedule != "fp8_via_f16" and recipe.schedule != "fp8_via_f16_contiguous":
            raise ValueError(f"{recipe.name}: unknown schedule {recipe.schedule!r}")
        s: np.ndarray = np.zeros(acc.shape, _acc_dtype(partial.out))
        for g in groups:
            s = _block(a[:, g], b[:, g], s, partial, recipe.fmt)
        with np.errstate(over="ignore", invalid="ignore"):
            d = (acc.astype(np.float64) + s.astype(np.float64)).astype(acc.dtype)
        return fdpa.canonicalize_nan(d)
    raise ValueError(f"{recipe.name}: unknown schedule {recipe.schedule!r}")


#: Operand storage dtypes (tf32: fp32 containers; mma(fmt="tf32")).
_STORAGE: dict[str, np.dtype] = {n: get_format(n).storage for n in FORMATS.values()}


def replay_mma(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, recipe: Recipe, device: str = "cpu"
) -> np.ndarray:
    """``d [T]`` from :func:`precision.mma` with ``arch=recipe.arch`` (batched 1x1 outputs);
    ``device="gpu"``: its GPU engine."""
    from precision.tensorcore import mma

    dtype = _STORAGE[recipe.fmt]
    t, k = a.shape
    a3 = a.astype(dtype).reshape(t, 1, k)
    b3 = b.astype(dtype).reshape(t, k, 1)
    c3: np.ndarray = c.astype(_acc_dtype(recipe.out)).reshape(t, 1, 1)
    fmt = "tf32" if recipe.fmt == "tf32" else None
    return mma(a3, b3, c3, arch=recipe.arch, fmt=fmt, op=recipe.op, device=device)[:, 0, 0]


def replay(pub: Published, recipe: Recipe, *, via: str = "block") -> np.ndarray:
    """The recipe's ``d`` bits ``[T]`` (uint32 fp32 / uint16 fp16) for a loaded file. ``via``:
    ``"block"`` (:func:`replay_block`), ``"mma"`` (:func:`precision.mma` on the CPU) or
    ``"gpu"`` (its GPU engine)."""
    a, b, c = operands(pub, recipe)
    if via == "block":
        d = replay_block(a, b, c, recipe)
    elif via in ("mma", "gpu"):
        d = replay_mma(a, b, c, recipe, device="gpu" if via == "gpu" else "cpu")
    else:
        raise ValueError(f"via must be 'block', 'mma' or 'gpu', got {via!r}")
    return d.view(np.uint32 if recipe.out == "fp32" else np.uint16)


def matches(recipe: Recipe, *, via: str = "block", root: Path = DATA_DIR) -> tuple[int, int]:
    """(bitwise matches, dot products) of one recipe against its published file."""
    pub = load(path_of(recipe.gpu, recipe.fmt, root))
    got = replay(pub, recipe, via=via)
    want = pub.d[recipe.out]
    return int(np.count_nonzero(got == want)), int(want.size)


def alternatives(recipe: Recipe) -> list[tuple[str, Recipe]]:
    """Variants of a recipe that differ in one parameter, to show what the data pins down.

    A variant that still matches every dot product means the file cannot tell that parameter
    apart (e.g. ``e_zero`` when no block sum is tiny, ``L`` when all products fit one block).
    """
    rep = dataclasses.replace
    out: list[tuple[str, Recipe]] = [
        (f"F = {recipe.frac_bits - 1}", rep(recipe, frac_bits=recipe.frac_bits - 1)),
        (f"F = {recipe.frac_bits + 1}", rep(recipe, frac_bits=recipe.frac_bits + 1)),
        ("e_zero = -1000", rep(recipe, e_zero=-1000)),
    ]
    if recipe.schedule == "chain":
        if recipe.block > 1:
            out.append((f"L = {recipe.block // 2}", rep(recipe, block=recipe.block // 2)))
        if recipe.block * 2 <= recipe.pad_k:
            out.append((f"L = {recipe.block * 2}", rep(recipe, block=recipe.block * 2)))
    if recipe.out == "fp32":
        other = "rz" if recipe.rounding == "rz_e8m13" else "rz_e8m13"
        out.append((f"rounding {other}", rep(recipe, rounding=other)))
    if recipe.c_input == "zero":
        out.append(("c as published", rep(recipe, c_input="c")))
    if recipe.fmt in ("e4m3", "e5m2"):
        if recipe.schedule == "fp8_via_f16":
            out.append(("contiguous halves", rep(recipe, schedule="fp8_via_f16_contiguous")))
            if recipe.out == "fp16":
                out.append(
                    (
                        "partial sums in fp32, one RN to fp16 with c",
                        rep(recipe, schedule="fp8_via_f16_fp32_partials"),
                    )
                )
            out.append(("one chain of 16-blocks from c", rep(recipe, schedule="chain")))
        qgmma = rep(
            recipe,
            schedule="chain",
            block=32,
            frac_bits=13,
            rounding="rz_e8m13" if recipe.out == "fp32" else "rne",
        )
        if qgmma != recipe:
            out.append(("QGMMA: one 32-block, F = 13", qgmma))
            out.append(("QGMMA with c = 0", rep(qgmma, c_input="zero")))
        if recipe.out == "fp32" and (recipe.block, recipe.frac_bits) != (32, 25):
            # MATLAB-tensor-core's B200TC.m: one 32-product block, F = 25, RZ
            out.append(
                (
                    "one 32-block, F = 25, RZ",
                    rep(recipe, schedule="chain", block=32, frac_bits=25, rounding="rz"),
                )
            )
    return out


# ----------------------------------------------------------------------------- CLI


def _table(root: Path) -> str:
    lines = [
        "| file | arch | instruction | L | F | e_zero | rounding | schedule | c | block core "
        "| precision.mma |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in RECIPES.values():
        ok, n = matches(r, root=root)
        via_mma = "n/a"
        if r.mma:
            ok2, n2 = matches(r, via="mma", root=root)
            via_mma = f"{ok2}/{n2}"
        lines.append(
            f"| {r.name} | {r.arch} | `{r.instruction}` | {r.block} | {r.frac_bits} | "
            f"{r.e_zero} | {r.rounding} | {r.schedule} | {r.c_input} | {ok}/{n} | {via_mma} |"
        )
    return "\n".join(lines)


def _sensitivity(root: Path) -> str:
    lines = ["| file | variant | matches |", "|---|---|---|"]
    for r in RECIPES.values():
        pub = load(path_of(r.gpu, r.fmt, root))
        want = pub.d[r.out]
        for label, alt in alternatives(r):
            ok = int(np.count_nonzero(replay(pub, alt) == want))
            lines.append(f"| {r.name} | {label} | {ok}/{want.size} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``convert SRC OUT`` or ``table [DIR]`` (see the module docstring)."""
    ap = argparse.ArgumentParser(
        prog="python -m precision.probe.published",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    cv = sub.add_parser("convert", help="convert model_validation text files to npz")
    cv.add_argument("src", type=Path)
    cv.add_argument("out", type=Path)
    cv.add_argument("--commit", default=SOURCE_COMMIT, help="upstream commit of SRC")
    tb = sub.add_parser("table", help="replay every recipe and print the match table")
    tb.add_argument("root", type=Path, nargs="?", default=DATA_DIR)
    se = sub.add_parser("sensitivity", help="match counts of one-parameter variants")
    se.add_argument("root", type=Path, nargs="?", default=DATA_DIR)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "convert":
            for p in convert(args.src, args.out, commit=args.commit):
                print(p)
        elif not args.root.is_dir():
            raise FileNotFoundError(
                f"{args.root}: no such directory of published recordings (the default is "
                f"{DATA_DIR})"
            )
        elif args.cmd == "table":
            print(_table(args.root))
        else:
            print(_sensitivity(args.root))
    except (OSError, ValueError) as exc:  # a missing or damaged file: one line, not a traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    run_main(main)
