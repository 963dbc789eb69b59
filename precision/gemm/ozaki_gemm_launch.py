"""Launcher of ``oz2_gemm_mod`` (precision/kernels/ozaki2_gemm.cu): the L INT8 GEMMs of Ozaki
scheme II with the reduction modulo m_l fused into the epilogue.

For each modulus ``l < L``: ``R[l] = (Ares[l] @ Bres[l]^T) mod moduli[l]``, the symmetric
residue in ``[-floor(m/2), ceil(m/2) - 1]`` as int8, the product exact in int32. CuPy is
imported by the caller (``cp``); nothing here touches the GPU at import.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

#: CUDA source of the kernel (in precision/kernels)
SOURCE = "ozaki2_gemm.cu"
KERNEL = "oz2_gemm_mod"
#: CTA tile (rows of A, rows of Bt) and k-stage; ozaki2_gemm.cu BM, BN, BK
TILE_M, TILE_N, TILE_K = 128, 256, 128
#: ring slots (ozaki2_gemm.cu OZ_STAGES) and the kernel's dynamic shared memory (SMEM_BYTES)
STAGES = 4
SMEM_BYTES = 1024 + STAGES * (TILE_M + TILE_N) * TILE_K + 16 * STAGES
THREADS = 384
#: largest k for which every int32 sum of products of int8 residues (|x| <= 128) is exact
MAX_KP = 131071


@functools.cache
def _kernel(flags: tuple[str, ...] = ()) -> Any:
    """The kernel from the cubin built for sm_90a with nvcc ``flags`` (tuning -D only; the
    shared-memory size assumes the default OZ_STAGES)."""
    from precision.gpu import allow_dynamic_smem, require_gpu
    from precision.kernels.build import build_cubin

    what = "the Ozaki-II INT8 GEMM kernel"
    cp = require_gpu(what)
    cubin = build_cubin(SOURCE, arch="sm_90a", extra_flags=flags)
    kern = cp.RawModule(path=str(cubin)).get_function(KERNEL)
    allow_dynamic_smem(kern, SMEM_BYTES, what)
    return kern


@functools.lru_cache(maxsize=64)
def _maps(a_ptr: int, b_ptr: int, L: int, M: int, nbp: int, kp: int) -> Any:
    """Device array of the tensor maps of A (boxes of 128 rows x 128 bytes) and Bt (256 x 128),
    128-byte swizzle. Cached by pointer and shape (a map holds nothing else)."""
    from precision.gpu import require_gpu
    from precision.kernels.tma import int8_batched_map

    cp = require_gpu("the Ozaki-II INT8 GEMM kernel")
    maps = int8_batched_map(a_ptr, L, M, kp, M * kp, TILE_M, TILE_K, 128) + int8_batched_map(
        b_ptr, L, nbp, kp, nbp * kp, TILE_N, TILE_K, 128
    )
    return cp.asarray(np.frombuffer(maps, dtype=np.uint8))


@functools.lru_cache(maxsize=32)
def _device_moduli(device: int, moduli: tuple[int, ...]) -> Any:
    """The moduli as an int32 array on GPU ``device``, copied once per list instead of once
    per launch (host time on every call). The copy is waited for, so that a kernel on any
    stream may read it."""
    from precision.gpu import require_gpu

    cp = require_gpu("the Ozaki-II INT8 GEMM kernel")
    with cp.cuda.Device(device) as dev:
        out = cp.asarray(np.array(moduli, dtype=np.int32))
        dev.synchronize()
    return out


def _check(name: str, X: Any, shape: tuple[int, int, int]) -> None:
    if X.dtype != np.int8 or tuple(X.shape) != shape or not X.flags.c_contiguous:
        raise ValueError(
            f"gemm_mod: {name} must be a C-contiguous int8 array of shape {shape}; got "
            f"{X.dtype} {tuple(X.shape)} (c_contiguous={X.flags.c_contiguous})"
        )
    if X.data.ptr % 16:
        raise ValueError(f"gemm_mod: {name} must be 16-byte aligned (got 0x{X.data.ptr:x})")


def gemm_mod(
    cp: Any,
    ares: Any,
    bres: Any,
    R: Any,
    M: int,
    nbp: int,
    kp: int,
    L: int,
    moduli: Any,
    *,
    flags: tuple[str, ...] = (),
) -> None:
    """``R[l] = sym_mod(ares[l] @ bres[l]^T, moduli[l])`` for ``l < L``, one launch, on the
    current CuPy stream.

    ``ares``: (L, M, kp) int8, ``bres``: (L, nbp, kp) int8 (B transposed: k contiguous),
    ``R``: (L, M, nbp) int8 output, all C-contiguous device arrays; entries in [-128, 127]
    (the product is exact in int32 for kp <= 131071). ``moduli``: L ints in [2, 256] (Ozaki-II
    uses 173..256), a device int32 array or a host sequence. R[l][i][j] is the residue of the
    exact int32 sum in [-floor(m/2), ceil(m/2) - 1]. ``flags``: nvcc -D tuning knobs of
    ozaki2_gemm.cu (OZ_RASTER_GROUP; not OZ_STAGES), for experiments only.
    Padding: ``kp`` and ``nbp`` multiples of 16 (TMA row pitch, 16-byte stores), any M >= 1;
    partial 128 x 256 tiles and a partial last k-stage are zero-filled by the TMA unit
    (exact). Full-speed shapes have M % 128 == 0, nbp % 256 == 0, kp % 128 == 0.
    """
    if kp % 16 or nbp % 16 or not (0 < kp <= MAX_KP) or M < 1 or nbp < 16 or L < 1:
        raise ValueError(
            f"gemm_mod: need kp, nbp multiples of 16, 0 < kp <= {MAX_KP}, M >= 1, L >= 1; "
            f"got M={M}, nbp={nbp}, kp={kp}, L={L}"
        )
    _check("ares", ares, (L, M, kp))
    _check("bres", bres, (L, nbp, kp))
    _check("R", R, (L, M, nbp))
    if L > 65535:
        raise ValueError(f"gemm_mod: at most 65535 moduli per launch (grid z); got L={L}")
    if isinstance(moduli, Sequence) or isinstance(moduli, np.ndarray):
        mods = np.asarray(moduli, dtype=np.int64)
        if mods.shape != (L,) or mods.min() < 2 or mods.max() > 256:
            raise ValueError(f"gemm_mod: moduli must be L={L} ints in [2, 256]; got {mods}")
        moduli = _device_moduli(cp.cuda.Device().id, tuple(int(m) for m in mods))
    elif moduli.dtype != np.int32 or moduli.size < L:
        raise ValueError(f"gemm_mod: device moduli must be >= {L} int32; got {moduli.dtype}")
    tiles = -(-M // TILE_M) * -(-nbp // TILE_N)
    maps = _maps(ares.data.ptr, bres.data.ptr, L, M, nbp, kp)
    _kernel(flags)(
        (tiles, 1, L),
        (THREADS, 1, 1),
        (
            ares,
            bres,
            R,
            np.int32(M),
            np.int32(nbp),
            np.int32(kp),
            np.int64(M * kp),
            np.int64(nbp * kp),
            np.int64(M * nbp),
            moduli,
            maps,
        ),
        shared_mem=SMEM_BYTES,
    )
