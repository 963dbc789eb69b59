"""Ozaki scheme I on the GPU: the emulator's steps (:func:`precision.gemm.ozaki.ozaki1_emulate`,
run on CuPy arrays) with the slice products on tensor cores through cuBLAS.

* ``fmt="int8"``: the digit pairs of one ``g = s + t`` are one ``cublasGemmStridedBatchedEx``
  (CUDA_R_8I -> CUDA_R_32I, exact while ``127·127·K <= 2^31 - 1``), summed in int64.
* ``fmt="fp16"``: ``cublasGemmEx`` with fp16 digits (exact: ``|d| <= 127``) and fp32
  accumulation and output, per K block of :data:`~precision.gemm.ozaki.FP16_KBLOCK` columns
  (every partial sum an integer below ``127·127·1024 < 2^24``, so exact in any order), the
  blocks summed in int64.

Every other step is exact integer arithmetic on the GPU, so the outputs equal the CPU
emulator's bit for bit. The line statistics run on the GPU (:func:`ozaki.line_stats` on CuPy
arrays) and come to the host (a few KB) to fix the plan. Workspace: the emulator's blocking,
within :data:`~precision.gemm.ozaki.WORKSPACE_FACTOR` times the float64 size of A and B.
"""

from __future__ import annotations

from typing import Any

from precision.gemm.ozaki import (
    FP16_KBLOCK,
    OZAKI1_INT8_KMAX,
    LineStats,
    OzakiPlan,
    check_args,
    line_stats,
    ozaki1_emulate,
    plan_for,
)


def _host_stats(cp: Any, st: LineStats) -> LineStats:
    """The device statistics' arrays copied to the host (a few KB)."""
    return LineStats(**{name: cp.asnumpy(v) for name, v in vars(st).items()})


def int8_slice_products(cp: Any) -> Any:
    """:data:`~precision.gemm.ozaki.SliceProducts` on INT8 tensor cores (cuBLAS)."""
    from precision.vendor.cublas import int8_gemm_strided_batched

    def products(da: list[Any], db: list[Any], g: int) -> Any:
        m, k = da[0].shape
        n = db[0].shape[1]
        kp = -(-k // 16) * 16
        pairs = g - 1
        ares = cp.zeros((pairs, m, kp), dtype=cp.int8)
        bres = cp.zeros((pairs, n, kp), dtype=cp.int8)  # B digits transposed, K contiguous
        for i, s in enumerate(range(1, g)):
            ares[i, :, :k] = da[s - 1]
            bres[i, :, :k] = db[g - s - 1].T
        C = cp.empty((pairs, m, n), dtype=cp.int32)
        int8_gemm_strided_batched(cp, bres, ares, C, m, n, kp, pairs)
        del ares, bres
        G = C[0].astype(cp.int64)
        for i in range(1, pairs):
            G += C[i]
        return G

    return products


def fp16_slice_products(cp: Any) -> Any:
    """:data:`~precision.gemm.ozaki.SliceProducts` on fp16 tensor cores with fp32
    accumulation (cuBLAS), K blocked so that every sum is exact."""
    from precision.vendor.cublas import _CUDA_R_16F, _const, _cublas_module, _gemm_ex

    c32 = _const(_cublas_module(), "CUBLAS_COMPUTE_32F")

    def products(da: list[Any], db: list[Any], g: int) -> Any:
        m, k = da[0].shape
        n = db[0].shape[1]
        G = cp.zeros((m, n), dtype=cp.int64)
        for s in range(1, g):
            a, b = da[s - 1], db[g - s - 1]
            for k0 in range(0, k, FP16_KBLOCK):
                ab = cp.ascontiguousarray(a[:, k0 : k0 + FP16_KBLOCK]).astype(cp.float16)
                bb = cp.ascontiguousarray(b[k0 : k0 + FP16_KBLOCK]).astype(cp.float16)
                G += _gemm_ex(cp, ab, bb, _CUDA_R_16F, c32).astype(cp.int64)
        return G

    return products


def ozaki1_cuda(
    A: Any, B: Any, *, fmt: str = "int8", target: str = "fp64", terms: int | str = "auto"
) -> tuple[Any, OzakiPlan]:
    """Scheme I on the GPU for device or host float64/float32 arrays; returns (D as a CuPy
    array of ``target``'s dtype, the plan)."""
    from precision.gpu import require_gpu

    cp = require_gpu("ozaki1 backend='cuda'")
    check_args("ozaki1", fmt, target)
    A = cp.ascontiguousarray(cp.asarray(A, dtype=cp.float64))
    B = cp.ascontiguousarray(cp.asarray(B, dtype=cp.float64))
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"A (M x K) and B (K x N) must agree: got {A.shape} and {B.shape}")
    if fmt == "int8" and A.shape[1] > OZAKI1_INT8_KMAX:
        raise ValueError(
            f"ozaki1 fmt='int8' backend='cuda': K = {A.shape[1]} > {OZAKI1_INT8_KMAX}, the "
            "largest K whose int8 digit products are exact in int32; use fmt='fp16'"
        )
    sa = _host_stats(cp, line_stats(A, 1))
    sb = _host_stats(cp, line_stats(B, 0))
    plan, _, _ = plan_for(A, B, method="ozaki1", fmt=fmt, target=target, terms=terms,
                          stats=(sa, sb))  # fmt: skip
    products = int8_slice_products(cp) if fmt == "int8" else fp16_slice_products(cp)
    return ozaki1_emulate(A, B, plan, sa, sb, slice_products=products), plan
