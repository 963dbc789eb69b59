"""CuPy launchers for the nvcc-built GEMM kernels (``gemm_wgmma.cu`` for f16/bf16/tf32,
``gemm_mma.cu`` for fp8/int8 and the per-step satf clamp).

CuPy is imported lazily (through :mod:`precision.gpu`); nothing here touches the GPU at import.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from precision.formats import get_format
from precision.kernels.build import build_cubin
from precision.kernels.specs import (
    WG_A_BOX,
    WG_SPLIT_SLOTS,
    WG_SPLIT_THREADS,
    WGMMA_SOURCE,
    kernel_spec,
    split_smem_bytes,
    split_stage_k,
)

__all__ = [
    "WG_SPLIT_SLOTS",
    "WG_SPLIT_THREADS",
    "get_kernel",
    "launch_gemm",
    "smem_bytes",
    "split_smem_bytes",
    "split_tensor_maps",
]


def smem_bytes(name: str) -> int:
    """Dynamic shared memory (bytes) that kernel ``name`` is launched with (its spec's)."""
    return kernel_spec(name).smem_bytes


#: nvcc flag of the corrected kernels' top-binade clamp (gemm_wgmma.cu WG_SPLIT_CLAMP_TOP).
CLAMP_TOP_FLAG = "-DWG_SPLIT_CLAMP_TOP=1"


@functools.cache
def _module(source: str, arch: str, flags: tuple[str, ...] = ()) -> Any:
    from precision.gpu import require_gpu

    cp = require_gpu("the CUDA GEMM kernels")
    return cp.RawModule(path=str(build_cubin(source, arch=arch, extra_flags=flags)))


@functools.cache
def get_kernel(name: str, arch: str = "sm_90", clamp_top: bool = False) -> Any:
    """The ``cupy.RawKernel`` entry point ``name``: ``wg_*`` from the wgmma cubin (built for
    ``sm_90a``), others from the mma.sync cubin for ``arch``. ``clamp_top``: the wgmma cubin
    built with the split's top-binade clamp (queued after every corrected bf16/tf32 run; it
    returns at once unless the inputs need the clamp, see :func:`_launch_wgmma`)."""
    spec = kernel_spec(name)
    flags = (CLAMP_TOP_FLAG,) if clamp_top else ()
    kern = _module(spec.source, spec.arch if spec.source == WGMMA_SOURCE else arch, flags)
    kern = kern.get_function(name)
    smem = spec.smem_bytes
    if smem == 0:
        return kern
    from precision.gpu import allow_dynamic_smem

    allow_dynamic_smem(kern, smem, "the CUDA GEMM kernels")
    return kern


def _padded(cp: Any, X: Any, rows: int, cols: int) -> Any:
    """``X`` as a C-contiguous float32 array zero-padded to ``rows`` x ``cols`` (no copy when
    it already is one)."""
    X = cp.ascontiguousarray(X, dtype=cp.float32)
    if _fits_tiles(X, rows, cols):
        return X
    out = cp.zeros((rows, cols), dtype=cp.float32)
    out[: X.shape[0], : X.shape[1]] = X
    return out


def launch_gemm(
    name: str,
    A: Any,
    B: Any,
    *,
    lo_scale: float = 1.0,
    out_scale: float = 1.0,
    arch: str = "sm_90",
    strict_name: str | None = None,
) -> Any:
    """Run kernel ``name`` on device arrays A (M x K) and B (K x N); returns D (M x N) float32.

    M, N, K are zero-padded to the tile sizes on the device (a copy only for ragged shapes).
    ``lo_scale``/``out_scale`` are the split's 2^s and the epilogue's 2^-s (the wgmma
    corrected kernels; the mma.sync kernels take none).
    ``strict_name`` (floating-point satf) is launched after ``name`` on the same stream; it
    recomputes D with the per-step clamp only when ``name`` flagged a non-finite result.
    """
    from precision.gpu import require_gpu

    cp = require_gpu("the CUDA GEMM kernels")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"A (M x K) and B (K x N) must agree: got {A.shape} and {B.shape}")
    spec = kernel_spec(name)
    if spec.source == WGMMA_SOURCE:
        return _launch_wgmma(
            cp,
            name,
            A,
            B,
            lo_scale=lo_scale,
            out_scale=out_scale,
            arch=arch,
            strict_name=strict_name,
        )
    M, K = A.shape
    N = B.shape[1]
    BM, BN, BK = spec.gemm_tile
    Mp, Np, Kp = (-(-M // BM) * BM, -(-N // BN) * BN, -(-K // BK) * BK)
    Ap, Bp = _padded(cp, A, Mp, Kp), _padded(cp, B, Kp, Np)
    D = cp.empty((Mp, Np), dtype=cp.float32)
    flag = cp.zeros(1, dtype=cp.int32)
    args = (Ap, Bp, D, cp.int32(Mp), cp.int32(Np), cp.int32(Kp), flag)
    for kname in (name,) if strict_name is None else (name, strict_name):
        get_kernel(kname, arch)(
            (Np // BN, Mp // BM, 1),
            (kernel_spec(kname).threads, 1, 1),
            args,
            shared_mem=smem_bytes(kname),
        )
    if (Mp, Np) != (M, N):
        D = cp.ascontiguousarray(D[:M, :N])
    return D


# ---- wgmma kernels (gemm_wgmma.cu) ----------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _split_tensor_maps(fmt: str, a_ptr: int, b_ptr: int, mp: int, np_: int, kp: int) -> Any:
    from precision.gpu import require_gpu
    from precision.kernels.tma import fp32_matrix_map

    cp = require_gpu("the CUDA GEMM kernels")
    bm, bn, _ = kernel_spec(f"wg_ootomo_{fmt}").gemm_tile
    box_k, swizzle = WG_A_BOX[fmt]
    maps = fp32_matrix_map(a_ptr, mp, kp, bm, box_k, swizzle) + fp32_matrix_map(
        b_ptr, kp, np_, split_stage_k(fmt), bn
    )
    return cp.asarray(np.frombuffer(maps, dtype=np.uint8))


def split_tensor_maps(fmt: str, Ap: Any, Bp: Any) -> Any:
    """Device array of the two TMA tensor maps a split kernel on ``fmt`` reads its k-stages
    with: A (``Ap``, Mp x Kp, tiles of 128 rows) and B (``Bp``, Kp x Np, tiles of k-stage rows
    by 128 columns), both padded C-contiguous fp32 device arrays. Cached by pointer and shape
    (a map holds nothing else), so the arrays must stay alive while their kernel runs."""
    (mp, kp), (kp2, np_) = Ap.shape, Bp.shape
    if kp != kp2:
        raise ValueError(f"A ({mp} x {kp}) and B ({kp2} x {np_}) must agree")
    return _split_tensor_maps(fmt, Ap.data.ptr, Bp.data.ptr, mp, np_, kp)


def _round_operands(
    cp: Any, fmt: str, A: Any, B: Any, Mp: int, Np: int, Kp: int
) -> tuple[Any, Any]:
    """A and B (C-contiguous float32 device arrays) rounded to ``fmt`` (storage bits) into
    zero-padded K-major arrays, A as Mp x Kp and B transposed as Np x Kp, by one launch of
    ``wg_round_operands_<fmt>``."""
    (M, K), N = A.shape, B.shape[1]
    dtype = cp.uint32 if fmt == "tf32" else cp.uint16
    Ar = cp.empty((Mp, Kp), dtype=dtype)
    Bt = cp.empty((Np, Kp), dtype=dtype)
    tiles = (Mp // 32) * (Kp // 32) + (Np // 32) * (Kp // 32)
    if tiles == 0:  # an empty operand: nothing to round (a launch of 0 blocks is an error)
        return Ar, Bt
    get_kernel(f"wg_round_operands_{fmt}")(
        (tiles, 1, 1),
        (32, 8, 1),
        (A, cp.int32(M), cp.int32(K), Ar, cp.int32(Mp), cp.int32(Kp), B, cp.int32(N), Bt,
         cp.int32(Np)),
    )  # fmt: skip
    return Ar, Bt


@functools.cache
def _unused_flag(device_id: int) -> Any:
    """A zeroed int32 on device ``device_id`` for the plain kernels' flag argument, which only
    the satf build writes (one buffer per device, never written)."""
    from precision.gpu import require_gpu

    cp = require_gpu("the CUDA GEMM kernels")
    with cp.cuda.Device(device_id):
        return cp.zeros(1, dtype=cp.int32)


def _launch_wgmma(
    cp: Any,
    name: str,
    A: Any,
    B: Any,
    *,
    lo_scale: float,
    out_scale: float,
    arch: str,
    strict_name: str | None,
) -> Any:
    spec = kernel_spec(name)
    mode, fmt = spec.mode, spec.fmt
    M, K = A.shape
    N = B.shape[1]
    bm, bn, bk = spec.gemm_tile
    Mp, Np, Kp = (-(-M // bm) * bm, -(-N // bn) * bn, -(-K // bk) * bk)
    D = cp.empty((Mp, Np), dtype=cp.float32)
    grid = ((Mp // bm) * (Np // bn), 1, 1)
    kern = get_kernel(name)
    smem = spec.smem_bytes
    if mode in ("plain", "satf"):
        A = cp.ascontiguousarray(A, dtype=cp.float32)
        B = cp.ascontiguousarray(B, dtype=cp.float32)
        Ar, Bt = _round_operands(cp, fmt, A, B, Mp, Np, Kp)
        flag = cp.zeros(1, dtype=cp.int32) if mode == "satf" else _unused_flag(cp.cuda.Device().id)
        kern(
            grid,
            (spec.threads, 1, 1),
            (Ar, Bt, D, cp.int32(Mp), cp.int32(Np), cp.int32(Kp), flag),
            shared_mem=smem,
        )
        if mode == "satf" and strict_name is not None:
            # A non-finite result: recompute with the clamp after every MMA (gemm_mma.cu).
            if _fits_tiles(A, Mp, Kp) and _fits_tiles(B, Kp, Np):
                # queued at once: the strict kernel reads A and B in place and returns at once
                # unless ``flag`` is set, so the host never waits for the GPU here
                _launch_strict(cp, strict_name, A, B, D, flag, arch=arch)
            elif int(flag.get()[0]):
                # ragged shapes: only now is it worth making the zero-padded fp32 copies
                return launch_gemm(f"gemm_satf_{fmt}", A, B, arch=arch, strict_name=strict_name)
    else:
        Ap, Bp = _padded(cp, A, Mp, Kp), _padded(cp, B, Kp, Np)
        # [0]: the first run left a non-finite output; [1]: some |input| is beyond fmt's range
        flags = cp.zeros(2, dtype=cp.int32)
        args = (
            split_tensor_maps(fmt, Ap, Bp),
            D,
            cp.int32(Mp),
            cp.int32(Np),
            cp.int32(Kp),
            cp.float32(lo_scale),
            cp.float32(out_scale),
            flags[:1],
        )
        kern(grid, (spec.threads, 1, 1), args, shared_mem=smem)
        if fmt in ("bf16", "tf32"):
            # Top binade: a finite input that rounds up to Inf leaves non-finite outputs. Then
            # (and only then: both steps are gated by a flag on the device) the inputs are
            # scanned and, if one is beyond the format's range, D is recomputed by the clamping
            # build, which gives the same bits wherever nothing overflowed.
            _queue_any_above(cp, fmt, Ap, Bp, gate=flags[:1], hit=flags[1:])
            clamp = get_kernel(name, clamp_top=True)
            clamp(grid, (spec.threads, 1, 1), args[:-1] + (flags[1:],), shared_mem=smem)
    if (Mp, Np) != (M, N):
        D = cp.ascontiguousarray(D[:M, :N])
    return D


def _fits_tiles(X: Any, rows: int, cols: int) -> bool:
    """Whether the C-contiguous float32 array ``X`` is already ``rows`` x ``cols`` and 16-byte
    aligned (cp.async / TMA / float4 loads), so that a kernel of padded shapes reads it in
    place."""
    return bool(X.shape == (rows, cols) and X.data.ptr % 16 == 0)


def _launch_strict(cp: Any, name: str, A: Any, B: Any, D: Any, flag: Any, *, arch: str) -> None:
    """Queue the per-step-clamp satf kernel ``name`` (gemm_mma.cu) over unpadded fp32 ``A``
    (Mp x Kp) and ``B`` (Kp x Np) into ``D`` (Mp x Np). It recomputes all of D if ``*flag`` is
    set when it starts, and otherwise returns at once (gemm_body_cvt's SATF_STRICT gate)."""
    (Mp, Kp), Np = A.shape, B.shape[1]
    bm, bn, _ = kernel_spec(name).gemm_tile
    get_kernel(name, arch)(
        (Np // bn, Mp // bm, 1),
        (kernel_spec(name).threads, 1, 1),
        (A, B, D, cp.int32(Mp), cp.int32(Np), cp.int32(Kp), flag),
        shared_mem=smem_bytes(name),
    )


_ANY_ABOVE_SOURCE = r"""
extern "C" __global__ void any_above(const int* __restrict__ gate, const float4* __restrict__ a,
                                     long long na4, const float4* __restrict__ b, long long nb4,
                                     float limit, int* __restrict__ hit) {
  if (*gate == 0) return;  // every output of the first run was finite: nothing to clamp
  const long long stride = (long long)gridDim.x * blockDim.x;
  bool above = false;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < na4 + nb4;
       i += stride) {
    const float4 v = i < na4 ? a[i] : b[i - na4];
    above |= fabsf(v.x) > limit || fabsf(v.y) > limit || fabsf(v.z) > limit || fabsf(v.w) > limit;
  }
  if (above) *hit = 1;  // every writer writes 1: no race on the value
}
"""


@functools.cache
def _any_above() -> Any:
    from precision.gpu import require_gpu

    cp = require_gpu("the CUDA GEMM kernels")
    return cp.RawKernel(_ANY_ABOVE_SOURCE, "any_above")


def _queue_any_above(cp: Any, fmt: str, Ap: Any, Bp: Any, *, gate: Any, hit: Any) -> None:
    """Queue the scan that sets ``hit[0]`` if some |x| of the padded fp32 operands ``Ap``, ``Bp``
    is above ``fmt``'s largest finite value (Inf counts too, which only costs the slower kernel),
    i.e. whether a corrected bf16/tf32 split needs the top-binade clamp. It scans only if
    ``gate[0]`` (a non-finite output) is set, and returns at once otherwise. The operands come
    from :func:`_padded`: 16-byte aligned, and their sizes (whole tiles) multiples of 4."""
    limit = cp.float32(get_format(fmt).max_normal)
    na4, nb4 = Ap.size // 4, Bp.size // 4
    if Ap.size % 4 or Bp.size % 4 or Ap.data.ptr % 16 or Bp.data.ptr % 16:
        raise ValueError("any_above reads float4: padded operands must be aligned whole tiles")
    _any_above()((1024,), (256,), (gate, Ap, cp.int64(na4), Bp, cp.int64(nb4), limit, hit))
