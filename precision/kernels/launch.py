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
SMEM_BYTES = STAGES * (BM * _LDA + BK * _LDB) * 4


@functools.cache
def _module(arch: str) -> Any:
    from precision.gpu import require_gpu

    cp = require_gpu("the CUDA GEMM kernels")
    return cp.RawModule(path=str(build_cubin(GEMM_SOURCE, arch=arch)))


@functools.cache
def get_kernel(name: str, arch: str = "sm_90") -> Any:
    """The ``cupy.RawKernel`` entry point ``name`` of the GEMM cubin for ``arch``."""
    kern = _module(arch).get_function(name)
    try:  # a RawKernel (CuPy >= 8) exposes the attribute; a bare Function needs the driver
        kern.max_dynamic_shared_size_bytes = SMEM_BYTES
    except AttributeError:
        from precision.gpu import require_gpu

        cp = require_gpu("the CUDA GEMM kernels")
        cp.cuda.driver.funcSetAttribute(kern.ptr, 8, SMEM_BYTES)  # MAX_DYNAMIC_SHARED_SIZE
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
        get_kernel(kname, arch)((Np // BN, Mp // BM, 1), (NTHREADS, 1, 1), args,
                                shared_mem=SMEM_BYTES)
    if (Mp, Np) != (M, N):
        D = cp.ascontiguousarray(D[:M, :N])
    return D
