"""Build CUDA sources with ``nvcc`` into cubins, cached by source hash.

Kernels that do fp32 arithmetic on CUDA cores are compiled with nvcc (never NVRTC, which CuPy
runs with ``-ftz=true``), with ``-ftz=false -fmad=false -prec-div=true -prec-sqrt=true``:
subnormals are kept and no multiply-add pair is contracted into an FMA, so every fp32 operation
in a kernel is one IEEE round-to-nearest-even operation that numpy float32 reproduces.

The cache lives under ``$PRECISION_CACHE_DIR`` or ``$XDG_CACHE_HOME/precision/kernels`` (default
``~/.cache/precision/kernels``); a cubin's file name carries the SHA-256 of the source text, the
target architecture, the flags and the nvcc version, so an edit of any of them rebuilds.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parent

#: Flags that fix the numerical behaviour of CUDA-core fp32 arithmetic (see module docstring).
NUMERIC_FLAGS: tuple[str, ...] = (
    "-ftz=false",
    "-fmad=false",
    "-prec-div=true",
    "-prec-sqrt=true",
)


def cache_dir() -> Path:
    """Directory holding built cubins (created on demand)."""
    env = os.environ.get("PRECISION_CACHE_DIR")
    if env:
        root = Path(env)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "precision" / "kernels"
    root.mkdir(parents=True, exist_ok=True)
    return root


def find_nvcc(what: str = "building the CUDA GEMM kernels") -> str:
    """Path of ``nvcc`` (``$CUDA_HOME/bin`` or ``PATH``); RuntimeError naming ``what`` if absent."""
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and (Path(home) / "bin" / "nvcc").exists():
            return str(Path(home) / "bin" / "nvcc")
    found = shutil.which("nvcc")
    if found is None:
        raise RuntimeError(
            f"{what} needs nvcc (CUDA toolkit >= 12.4); none found on PATH, $CUDA_HOME or "
            "/usr/local/cuda"
        )
    return found


def _nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


#: ptxas's notes that it made every wgmma of a function wait for the previous one (C7513:
#: a register that a wgmma reads is written while wgmmas are in flight; C7514, C7515 and
#: others: the same for other reasons). The kernels stay correct but lose their overlap of
#: tensor-core work, so a build that reports one is refused.
WGMMA_SERIALIZED = re.compile(
    r"\(C75\d\d\) Potential Performance Loss: wgmma\S* instructions "
    r"are serialized[^\n]*"
)


def serialized_wgmma_notes(ptxas_output: str) -> list[str]:
    """ptxas's wgmma-serialisation notes in ``ptxas_output`` (empty list if none)."""
    return WGMMA_SERIALIZED.findall(ptxas_output)


def run_nvcc(args: list[str], *, what: str, nvcc: str | None = None) -> str:
    """Run ``nvcc *args`` and return its stderr; a RuntimeError naming ``what``, the command
    and stderr on failure, or when ptxas reports serialised wgmma instructions."""
    nvcc = nvcc or find_nvcc(what)
    cmd = [nvcc, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(
            f"nvcc failed while {what} (exit {proc.returncode}):\n{' '.join(cmd)}\n{proc.stderr}"
        )
    notes = serialized_wgmma_notes(proc.stderr)
    if notes:
        raise RuntimeError(
            f"nvcc while {what}: ptxas serialised wgmma instructions (the kernel would run, "
            f"but without overlapping its tensor-core work):\n{' '.join(cmd)}\n" + "\n".join(notes)
        )
    return proc.stderr


def build_cubin(
    source: str | Path,
    *,
    arch: str = "sm_90",
    extra_flags: tuple[str, ...] = (),
) -> Path:
    """Compile ``source`` (a ``.cu`` file; relative names are taken from this package) for
    ``arch`` and return the cached cubin's path, building it only when absent."""
    src = Path(source)
    if not src.is_absolute():
        src = KERNEL_DIR / src
    if not src.is_file():
        raise FileNotFoundError(f"CUDA source {src} does not exist")
    nvcc = find_nvcc()
    flags = ("-O3", "-std=c++17", *NUMERIC_FLAGS, *extra_flags)
    key = hashlib.sha256()
    key.update(src.read_bytes())
    for include in sorted(src.parent.glob("*.cuh")):
        key.update(include.read_bytes())
    key.update(repr((arch, flags, _nvcc_version(nvcc))).encode())
    out = cache_dir() / f"{src.stem}-{arch}-{key.hexdigest()[:20]}.cubin"
    if out.exists():
        return out
    gencode = (
        ["-gencode", f"arch=compute_{arch[3:]},code={arch}"]
        if arch.endswith("a")
        else [f"-arch={arch}"]
    )
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        tmp_out = Path(tmp) / out.name
        run_nvcc(
            [*gencode, "-cubin", *flags, "-o", str(tmp_out), str(src)],
            what=f"building {src.name}",
            nvcc=nvcc,
        )
        os.replace(tmp_out, out)  # atomic: concurrent builders never see a partial cubin
    return out
