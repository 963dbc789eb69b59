"""cuBLAS GEMM baselines with fp32 output, called through CuPy's ``gemmEx`` binding.

Every mode computes the row-major product ``A @ B`` of an ``M×K`` and a ``K×N`` matrix and
returns an ``M×N`` ``cupy.float32`` array. Inputs (numpy or cupy, any real dtype) are first
converted to float32 (exact for fp16/bf16/fp8/fp32 data; float64 data is rounded to nearest
once here), then, per mode:

``sgemm``
    FP32 inputs, ``CUBLAS_COMPUTE_32F`` with the handle in ``CUBLAS_DEFAULT_MATH`` (no TF32):
    the classic SGEMM on CUDA cores.
``tf32``
    FP32 inputs, ``CUBLAS_COMPUTE_32F_FAST_TF32``: cuBLAS itself converts to TF32 for the
    tensor cores.
``f16``
    Inputs rounded to fp16 (round to nearest even, overflow to ±Inf), ``gemmEx`` with fp32
    output and ``CUBLAS_COMPUTE_32F`` (tensor cores, fp32 accumulation inside them).
``bf16``
    As ``f16`` with inputs rounded to bf16 (round to nearest even by integer bit arithmetic,
    so no flush-to-zero and no double rounding).
``f16_corrected3``
    Ootomo-style split ``X = hi + lo·2^-11`` with ``hi = fp16(X)`` and
    ``lo = fp16((X - hi)·2^11)`` (the fp32 residual is exact), three fp16 GEMMs and
    ``hi_A·hi_B + (lo_A·hi_B + hi_A·lo_B)·2^-11``: the two correction products are
    accumulated into one fp32 buffer by cuBLAS (``beta = 1``), then scaled and added in fp32
    (CuPy elementwise arithmetic, which is compiled flush-to-zero: fp32 subnormal results
    become zero).

For the Ozaki methods (docs/ozaki.md) the module also offers :func:`int8_gemm_strided_batched`
(exact INT8 x INT8 -> INT32 products), :func:`exact_gemm_batched` (the same, or exact fp16
products, on raw pointers with any leading dimension) and :func:`fp64_emulated_gemm`
(cuBLAS 13's fixed-point FP64 emulation, eager strategy); native DGEMM is CuPy's float64
``matmul``.

cuBLAS's accumulation order and split-K choice are its own and change with shape, library
version and GPU; treat these as "as deployed" comparators, never as a model of the hardware.
cuBLAS is column-major: the row-major product is computed as ``(B^T A^T)^T`` without copies.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from precision.gpu import require_gpu

MODES: tuple[str, ...] = ("sgemm", "tf32", "f16", "bf16", "f16_corrected3")

# cudaDataType_t values (library_types.h) and cuBLAS enums (cublas_api.h), used when the
# binding does not export the name.
_CUDA_R_32F, _CUDA_R_16F, _CUDA_R_16BF = 0, 2, 14
_FALLBACK = {
    "CUBLAS_COMPUTE_32F": 68,
    "CUBLAS_COMPUTE_32F_FAST_TF32": 77,
    "CUBLAS_DEFAULT_MATH": 0,
    "CUBLAS_GEMM_DEFAULT": -1,
    "CUBLAS_OP_N": 0,
}


def _cublas_module() -> ModuleType:
    try:
        from cupy_backends.cuda.libs import cublas
    except ImportError:  # older CuPy layouts
        from cupy.cuda import cublas
    return cublas


def _const(cublas: ModuleType, name: str) -> int:
    return int(getattr(cublas, name, _FALLBACK[name]))


def _to_device_f32(cp: ModuleType, x: Any, name: str) -> Any:
    """``x`` as a C-contiguous 2-D ``cupy.float32`` array (ValueError naming ``name``)."""
    if getattr(x, "ndim", None) != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {getattr(x, 'shape', None)}")
    if not isinstance(x, cp.ndarray):
        x = np.asarray(x)
        if x.dtype != np.float32:
            x = x.astype(np.float64).astype(np.float32)  # ml_dtypes inputs go through f64 exactly
        x = cp.asarray(x)
    elif x.dtype != cp.float32:
        x = x.astype(cp.float32)
    return cp.ascontiguousarray(x)


def _bf16_bits(cp: ModuleType, x32: Any) -> Any:
    """bf16 bit patterns (uint16) of fp32 values, round to nearest even, NaN kept quiet."""
    bits = x32.view(cp.uint32)
    lsb = (bits >> 16) & 1
    rounded = ((bits + 0x7FFF + lsb) >> 16).astype(cp.uint16)
    is_nan = (bits & 0x7FFFFFFF) > 0x7F800000
    return cp.where(is_nan, ((bits >> 16) | 0x40).astype(cp.uint16), rounded)


def _gemm_ex(
    cp: ModuleType,
    a: Any,
    b: Any,
    dtype_code: int,
    compute: int,
    out: Any = None,
    beta: float = 0.0,
) -> Any:
    """Row-major ``out = A @ B + beta·out`` (fp32 out) through cuBLAS ``gemmEx``."""
    cublas = _cublas_module()
    m, k = a.shape
    n = b.shape[1]
    if out is None:
        out = cp.empty((m, n), dtype=cp.float32)
    alpha_h = np.array(1.0, dtype=np.float32)
    beta_h = np.array(beta, dtype=np.float32)
    handle = cp.cuda.device.get_cublas_handle()
    old_mode = cublas.getMathMode(handle)
    cublas.setMathMode(handle, _const(cublas, "CUBLAS_DEFAULT_MATH"))
    try:
        op_n = _const(cublas, "CUBLAS_OP_N")
        # Column-major view: out^T (n×m) = B^T (n×k) · A^T (k×m).
        cublas.gemmEx(
            handle,
            op_n,
            op_n,
            n,
            m,
            k,
            alpha_h.ctypes.data,
            b.data.ptr,
            dtype_code,
            n,
            a.data.ptr,
            dtype_code,
            k,
            beta_h.ctypes.data,
            out.data.ptr,
            _CUDA_R_32F,
            n,
            compute,
            _const(cublas, "CUBLAS_GEMM_DEFAULT"),
        )
    finally:
        cublas.setMathMode(handle, old_mode)
    return out


def cublas_version() -> int:
    """The cuBLAS library version number (e.g. 130100), for provenance."""
    cp = require_gpu("cublas_version")
    return int(_cublas_module().getVersion(cp.cuda.device.get_cublas_handle()))


def cublas_gemm(A: Any, B: Any, *, mode: str = "sgemm") -> Any:
    """Row-major ``A @ B`` by cuBLAS in one of :data:`MODES`; returns an ``M×N`` cupy float32.

    See the module docstring for what each mode rounds, where and how. Raises ``ValueError``
    for an unknown mode or mismatched shapes and ``RuntimeError`` without a GPU.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    cp = require_gpu(f"cublas_gemm(mode={mode!r})")
    cublas = _cublas_module()
    a = _to_device_f32(cp, A, "A")
    b = _to_device_f32(cp, B, "B")
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"A's columns must equal B's rows: A is {a.shape[0]}×{a.shape[1]}, "
            f"B is {b.shape[0]}×{b.shape[1]}"
        )
    c32 = _const(cublas, "CUBLAS_COMPUTE_32F")
    if mode == "sgemm":
        return _gemm_ex(cp, a, b, _CUDA_R_32F, c32)
    if mode == "tf32":
        return _gemm_ex(cp, a, b, _CUDA_R_32F, _const(cublas, "CUBLAS_COMPUTE_32F_FAST_TF32"))
    if mode == "bf16":
        return _gemm_ex(cp, _bf16_bits(cp, a), _bf16_bits(cp, b), _CUDA_R_16BF, c32)
    a_hi, b_hi = a.astype(cp.float16), b.astype(cp.float16)
    if mode == "f16":
        return _gemm_ex(cp, a_hi, b_hi, _CUDA_R_16F, c32)
    # f16_corrected3: residuals are exact in fp32; scaling by 2^11 is exact.
    a_lo = ((a - a_hi.astype(cp.float32)) * np.float32(2048.0)).astype(cp.float16)
    b_lo = ((b - b_hi.astype(cp.float32)) * np.float32(2048.0)).astype(cp.float16)
    main = _gemm_ex(cp, a_hi, b_hi, _CUDA_R_16F, c32)
    corr = _gemm_ex(cp, a_lo, b_hi, _CUDA_R_16F, c32)
    corr = _gemm_ex(cp, a_hi, b_lo, _CUDA_R_16F, c32, out=corr, beta=1.0)
    return main + corr * np.float32(1.0 / 2048.0)


# ------------------------------------------------------------ INT8 and FP64 (Ozaki methods)
#: cudaDataType_t / cublasComputeType_t / cublasOperation_t values (library_types.h,
#: cublas_api.h) used below.
CUDA_R_64F, CUDA_R_8I, CUDA_R_32I = 1, 3, 10
CUBLAS_COMPUTE_32I = 72
#: cuBLAS 13's fixed-point FP64 emulation compute type (shared/reference/corrected_gemm.md
#: §4.2) and the eager value of cublasEmulationStrategy_t (0 default, 1 performant, 2 eager).
CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT = 79
CUBLAS_EMULATION_STRATEGY_EAGER = 2
#: cudaEmulationMantissaControl_t (library_types.h, CUDA 13): cuBLAS picks the mantissa bits
#: per call (dynamic, its default) or uses a fixed maximum (cublasSetFixedPointEmulation-
#: MaxMantissaBitCount; 0 restores the default).
CUDA_EMULATION_MANTISSA_CONTROL_DYNAMIC = 0
CUDA_EMULATION_MANTISSA_CONTROL_FIXED = 1


def int8_gemm_strided_batched(
    cp: ModuleType, bres: Any, ares: Any, C: Any, M: int, nbp: int, kp: int, L: int
) -> None:
    """``C[l] = Ares[l] @ Bres[l]^T`` for ``l < L`` in exact INT32 (CUDA_R_8I inputs,
    CUDA_R_32I output, CUBLAS_COMPUTE_32I), one ``cublasGemmStridedBatchedEx``
    (:func:`exact_gemm_batched` on the arrays' pointers).

    Row-major layouts: ``Ares[l]`` is ``M x kp``, ``Bres[l]`` is ``nbp x kp`` (B transposed, K
    contiguous) and ``C[l]`` is ``M x nbp``, all contiguous per ``l``. In cuBLAS's
    column-major terms this is the IMMA-friendly "TN" product ``C^T = Bres · Ares^T``.
    Exact while ``max|a|·max|b|·kp <= 2^31 - 1``."""
    exact_gemm_batched(
        cp, "int8", bres.data.ptr, ares.data.ptr, C.data.ptr, m=nbp, n=M, k=kp,
        ld=kp, stride_b=nbp * kp, stride_a=M * kp, batch=L,
    )  # fmt: skip


def exact_gemm_batched(
    cp: ModuleType, fmt: str, b_ptr: int, a_ptr: int, c_ptr: int, *, m: int, n: int, k: int,
    ld: int, stride_b: int, stride_a: int, batch: int,
) -> None:  # fmt: skip
    """Column-major ``C_b = B_b^T · A_b`` (``m x n``, ``ldc = m``, ``strideC = m·n``) for
    ``b < batch``, on raw device pointers: ``B_b`` is ``k x m`` at ``b_ptr + b·stride_b``
    elements, ``A_b`` is ``k x n`` at ``a_ptr + b·stride_a``, both with leading dimension
    ``ld``. In row-major terms: rows of ``k`` digits, ``C_b[i][j] = sum_k A[i][k]·B[j][k]``.
    ``fmt="int8"``: CUDA_R_8I inputs, CUDA_R_32I output, CUBLAS_COMPUTE_32I (exact integer
    sums); ``fmt="fp16"``: CUDA_R_16F inputs, fp32 output, CUBLAS_COMPUTE_32F in
    ``CUBLAS_DEFAULT_MATH`` (exact while every partial sum is an integer below 2^24). The
    callers (the Ozaki schemes' residue and slice products) keep those bounds."""
    cublas = _cublas_module()
    handle = cp.cuda.device.get_cublas_handle()
    if fmt == "int8":
        one: Any = np.array(1, dtype=np.int32)
        zero: Any = np.array(0, dtype=np.int32)
        in_t, out_t, compute = CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I
    elif fmt == "fp16":
        one = np.array(1.0, dtype=np.float32)
        zero = np.array(0.0, dtype=np.float32)
        in_t, out_t = _CUDA_R_16F, _CUDA_R_32F
        compute = _const(cublas, "CUBLAS_COMPUTE_32F")
    else:
        raise ValueError(f"exact_gemm_batched: fmt must be 'int8' or 'fp16', got {fmt!r}")
    old_mode = cublas.getMathMode(handle)
    cublas.setMathMode(handle, _const(cublas, "CUBLAS_DEFAULT_MATH"))
    try:
        cublas.gemmStridedBatchedEx(
            handle, 1, 0, m, n, k, one.ctypes.data,
            b_ptr, in_t, ld, stride_b,
            a_ptr, in_t, ld, stride_a,
            zero.ctypes.data, c_ptr, out_t, m, m * n,
            batch, compute, _const(cublas, "CUBLAS_GEMM_DEFAULT"),
        )  # fmt: skip
    finally:
        cublas.setMathMode(handle, old_mode)


def fp64_emulated_gemm(mantissa_bits: int | None = None) -> tuple[Any, str]:
    """``(f, "")`` with ``f(A, B) -> D`` the row-major float64 product by cuBLAS's fixed-point
    FP64 emulation (compute type 79, eager strategy set around each call), or ``(None,
    reason)`` when this cuBLAS does not offer it. A 64 x 64 all-ones product is checked
    first. cuBLAS decides itself when to emulate: results equal to native DGEMM's mean it ran
    native.

    ``mantissa_bits``: None keeps cuBLAS's dynamic mantissa control (it chooses the bits per
    call); an int sets the fixed control with at most that many mantissa bits, around each
    call. After a call, ``f.bits_used()`` is the mantissa bit count cuBLAS reports for it
    (cublasSetFixedPointEmulationMantissaBitCountPointer, into managed memory), or -1 where
    this cuBLAS cannot report it."""
    import ctypes

    cp = require_gpu("fp64_emulated_gemm")
    cublas = _cublas_module()
    lib = None
    for name in ("libcublas.so.13", "libcublas.so.12", "libcublas.so"):
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if lib is None or not hasattr(lib, "cublasSetEmulationStrategy"):
        return None, "cublasSetEmulationStrategy not found in libcublas"
    controls = (
        "cublasSetFixedPointEmulationMantissaControl",
        "cublasSetFixedPointEmulationMaxMantissaBitCount",
    )
    if mantissa_bits is not None:
        if not isinstance(mantissa_bits, int) or mantissa_bits < 1:
            raise ValueError(f"mantissa_bits must be a positive int or None, got {mantissa_bits!r}")
        missing = [c for c in controls if not hasattr(lib, c)]
        if missing:
            return None, f"{', '.join(missing)} not found in libcublas (cuBLAS < 13.0 U2?)"
    report = hasattr(lib, "cublasSetFixedPointEmulationMantissaBitCountPointer")
    # where cuBLAS writes the bits it used: managed memory, readable whichever side writes
    used = cp.cuda.malloc_managed(4) if report else None
    handle = cp.cuda.device.get_cublas_handle()
    h = ctypes.c_void_p(handle)

    def check(st: int, what: str) -> None:
        if st != 0:
            raise RuntimeError(f"{what} returned cuBLAS status {st}")

    def f(A: Any, B: Any) -> Any:
        m, k = A.shape
        n = B.shape[1]
        D = cp.empty((m, n), dtype=cp.float64)
        one = np.array(1.0)
        zero = np.array(0.0)
        eager = ctypes.c_int(CUBLAS_EMULATION_STRATEGY_EAGER)
        check(lib.cublasSetEmulationStrategy(h, eager), "cublasSetEmulationStrategy")
        try:
            if mantissa_bits is not None:
                fixed = ctypes.c_int(CUDA_EMULATION_MANTISSA_CONTROL_FIXED)
                check(lib.cublasSetFixedPointEmulationMantissaControl(h, fixed), controls[0])
                check(lib.cublasSetFixedPointEmulationMaxMantissaBitCount(
                    h, ctypes.c_int(mantissa_bits)), controls[1])  # fmt: skip
            if used is not None:
                ptr = ctypes.c_void_p(used.ptr)
                check(lib.cublasSetFixedPointEmulationMantissaBitCountPointer(h, ptr),
                      "cublasSetFixedPointEmulationMantissaBitCountPointer")  # fmt: skip
            cublas.gemmEx(
                handle, 0, 0, n, m, k, one.ctypes.data, B.data.ptr, CUDA_R_64F, n,
                A.data.ptr, CUDA_R_64F, k, zero.ctypes.data, D.data.ptr, CUDA_R_64F, n,
                CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT, _const(cublas, "CUBLAS_GEMM_DEFAULT"),
            )  # fmt: skip
        finally:  # the shared handle goes back to cuBLAS's defaults
            lib.cublasSetEmulationStrategy(h, ctypes.c_int(0))
            if mantissa_bits is not None:
                dynamic = ctypes.c_int(CUDA_EMULATION_MANTISSA_CONTROL_DYNAMIC)
                lib.cublasSetFixedPointEmulationMantissaControl(h, dynamic)
                lib.cublasSetFixedPointEmulationMaxMantissaBitCount(h, ctypes.c_int(0))
            if used is not None:
                lib.cublasSetFixedPointEmulationMantissaBitCountPointer(h, ctypes.c_void_p(0))
        return D

    def bits_used() -> int:
        """The mantissa bits cuBLAS reported for the last call (-1: not reported)."""
        if used is None:
            return -1
        cp.cuda.get_current_stream().synchronize()
        return int(np.frombuffer(ctypes.string_at(used.ptr, 4), dtype=np.int32)[0])

    f.bits_used = bits_used  # type: ignore[attr-defined]
    try:
        a = cp.ones((64, 64))
        if float(f(a, a)[0, 0]) != 64.0:
            return None, "cuBLAS FP64 emulation returned a wrong value"
    except Exception as exc:  # report, never fall back silently
        return None, f"cuBLAS FP64 emulation unavailable: {exc}"
    return f, ""
