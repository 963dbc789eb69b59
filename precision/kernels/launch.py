"""CuPy launchers for the nvcc-built GEMM kernels (``gemm_mma.cu``).

CuPy is imported lazily (through :mod:`precision.gpu`); nothing here touches the GPU at import.
"""

from __future__ import annotations

import functools
from typing import Any

from precision.kernels.build import build_cubin

GEMM_SOURCE = "gemm_mma.cu"
#: Tile sizes and pipeline depth compiled into gemm_mma.cu (BM, BN, BK, STAGES, threads).
BM, BN, BK, STAGES, NTHREADS = 128, 128, 32, 3, 256
_LDA, _LDB = BK + 4, BN + 8
#: Dynamic shared memory of the fp8/int8 kernels (register conversion path, STAGES fp32 stages).
SMEM_BYTES = STAGES * (BM * _LDA + BK * _LDB) * 4
#: f16/bf16/tf32 kernels (converted-tile path, see gemm_mma.cu ``gemm_body_cvt``): fp32
#: staging stages of A [BM][BK+4] and B [BK][BN+4], plus two buffers of operand tiles (hi, and
#: lo for the split kernels): 16-bit A [BM][BK+8] + B [BK][BN+8], or tf32 A [BM][BK+4] + B^T
#: [BN][BK+4]. Must match CvtCfg / CSTAGE / H_* / T_* there.
#: fp32 staging stages per (format, split): 16-bit plain/satf 2 (two CTAs per SM), split 4.
CVT_STAGES = {("f16", False): 2, ("bf16", False): 2, ("tf32", False): 2,
              ("f16", True): 4, ("bf16", True): 4, ("tf32", True): 2}
_CSTAGE_BYTES = (BM * (BK + 4) + BK * (BN + 4)) * 4
_PART_BYTES = {"f16": (BM * (BK + 8) + BK * (BN + 8)) * 2,
               "bf16": (BM * (BK + 8) + BK * (BN + 8)) * 2,
               "tf32": (BM * (BK + 4) + BN * (BK + 4)) * 4}


def threads(name: str) -> int:
    """Threads per CTA of kernel ``name``: 512 (16 warps of 32x32) for the f16/bf16/tf32 split
    kernels, else NTHREADS (8 warps of 64x32); must match ``cvt_threads`` in gemm_mma.cu."""
    split = name.startswith(("gemm_ootomo_", "gemm_markidis_"))
    return 512 if split and name.rsplit("_", 1)[1] in _PART_BYTES else NTHREADS


def smem_bytes(name: str) -> int:
    """Dynamic shared memory (bytes) that kernel ``name`` is launched with."""
    fmt = name.rsplit("_", 1)[1]
    if fmt not in _PART_BYTES:
        return SMEM_BYTES
    split = name.startswith(("gemm_ootomo_", "gemm_markidis_"))
    return CVT_STAGES[fmt, split] * _CSTAGE_BYTES + 2 * (2 if split else 1) * _PART_BYTES[fmt]


@functools.cache
def _module(arch: str) -> Any:
    from precision.gpu import require_gpu

    cp = require_gpu("the CUDA GEMM kernels")
    return cp.RawModule(path=str(build_cubin(GEMM_SOURCE, arch=arch)))


@functools.cache
def get_kernel(name: str, arch: str = "sm_90") -> Any:
    """The ``cupy.RawKernel`` entry point ``name`` of the GEMM cubin for ``arch``."""
    kern = _module(arch).get_function(name)
    smem = smem_bytes(name)
    try:  # a RawKernel (CuPy >= 8) exposes the attribute; a bare Function needs the driver
        kern.max_dynamic_shared_size_bytes = smem
    except AttributeError:
        from precision.gpu import require_gpu

        cp = require_gpu("the CUDA GEMM kernels")
        cp.cuda.driver.funcSetAttribute(kern.ptr, 8, smem)  # MAX_DYNAMIC_SHARED_SIZE
    return kern


def _padded(cp: Any, X: Any, rows: int, cols: int) -> Any:
    """``X`` as a C-contiguous float32 array zero-padded to ``rows`` x ``cols`` (no copy when
    it already is one)."""
    X = cp.ascontiguousarray(X, dtype=cp.float32)
    if X.shape == (rows, cols):
        return X
    out = cp.zeros((rows, cols), dtype=cp.float32)
    out[: X.shape[0], : X.shape[1]] = X
    return out


def launch_gemm(
    name: str, A: Any, B: Any, *, lo_scale: float = 1.0, out_scale: float = 1.0,
    arch: str = "sm_90", strict_name: str | None = None,
) -> Any:
    """Run kernel ``name`` on device arrays A (M x K) and B (K x N); returns D (M x N) float32.

    M, N, K are zero-padded to the tile sizes on the device (a copy only for ragged shapes).
    ``lo_scale``/``out_scale`` are the split's 2^s and the epilogue's 2^-s (corrected kernels).
    ``strict_name`` (floating-point satf) is launched after ``name`` on the same stream; it
    recomputes D with the per-step clamp only when ``name`` flagged a non-finite result.
    """
    from precision.gpu import require_gpu

    cp = require_gpu("the CUDA GEMM kernels")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"A (M x K) and B (K x N) must agree: got {A.shape} and {B.shape}")
    M, K = A.shape
    N = B.shape[1]
    Mp, Np, Kp = (-(-M // BM) * BM, -(-N // BN) * BN, -(-K // BK) * BK)
    Ap, Bp = _padded(cp, A, Mp, Kp), _padded(cp, B, Kp, Np)
    D = cp.empty((Mp, Np), dtype=cp.float32)
    flag = cp.zeros(1, dtype=cp.int32)
    args = (Ap, Bp, D, cp.int32(Mp), cp.int32(Np), cp.int32(Kp), cp.float32(lo_scale),
            cp.float32(out_scale), flag)
    for kname in (name,) if strict_name is None else (name, strict_name):
        get_kernel(kname, arch)((Np // BN, Mp // BM, 1), (threads(kname), 1, 1), args,
                                shared_mem=smem_bytes(kname))
    if (Mp, Np) != (M, N):
        D = cp.ascontiguousarray(D[:M, :N])
    return D
