"""``gemm(A, B, method=..., fmt=..., backend=...)``: one GEMM method, several executors.

Backends:

- ``"emulator"``: the kernel's :class:`~precision.gemm.schedule.Schedule` replayed on the CPU
  with the bit-exact MMA emulator; equals ``"cuda"`` bit for bit.
- ``"cuda"``: our nvcc-built kernels via CuPy: wgmma for fp16/bf16/tf32
  (``precision/kernels/gemm_wgmma.cu``), mma.sync for fp8/int8 (``gemm_mma.cu``).
- ``"cublas"``: vendor baselines through :func:`precision.vendor.cublas.cublas_gemm`:
  plain fp32 (SGEMM), plain tf32, plain fp16 / bf16 (fp32 output), corrected fp16 (three
  cuBLAS GEMMs, Ootomo scaling).
- ``"numpy"``: CPU baselines, numpy's own matmul (:mod:`precision.vendor.numpy_blas`): plain
  fp32 (the BLAS SGEMM) and plain fp64 (DGEMM, float64 output).

CPU fp32 reference: ``method="plain", fmt="fp32", backend="emulator"`` is the fp32 FMA-chain
SGEMM in increasing k, computed exactly (:mod:`precision.gemm.sgemm`).
"""

from __future__ import annotations

import difflib
from typing import Any

import numpy as np

from precision.gemm.schedule import CORRECTIONS, METHODS, Schedule, get_schedule
from precision.kernels.launch import launch_gemm

BACKENDS: tuple[str, ...] = ("emulator", "cuda", "cublas", "numpy")
#: Ozaki schemes I and II (precision.gemm.ozaki): not schedules of MMA steps, dispatched first.
OZAKI_METHODS: tuple[str, ...] = ("ozaki1", "ozaki2")

#: The CPU fp32/fp64 baselines as (method, format, backend): the exact fp32 FMA chain on the
#: emulator (:mod:`precision.gemm.sgemm`) and numpy's float32/float64 matmul. No other method
#: runs on fp32/fp64, and the numpy backend runs nothing else (all three check that arch is a
#: known one, and otherwise ignore it).
CPU_BASELINES: tuple[tuple[str, str, str], ...] = (
    ("plain", "fp32", "emulator"),
    ("plain", "fp32", "numpy"),
    ("plain", "fp64", "numpy"),
)

#: (method, format, correction) -> cublas_gemm mode.
CUBLAS_MODES: dict[tuple[str, str, str | None], str] = {
    ("plain", "fp32", None): "sgemm",
    ("plain", "tf32", None): "tf32",
    ("plain", "fp16", None): "f16",
    ("plain", "bf16", None): "bf16",
    ("corrected", "fp16", "ootomo"): "f16_corrected3",
}


def _unknown(arg: str, value: Any, valid: tuple[str, ...] | list[str]) -> ValueError:
    """``ValueError`` for an unknown ``arg=value``: a close match, then every valid value."""
    hint = difflib.get_close_matches(str(value), list(valid), n=1, cutoff=0.5)
    did = f"; did you mean {hint[0]!r}?" if hint else ""
    return ValueError(f"{arg}={value!r}: unknown{did} (expected one of {', '.join(valid)})")


def _check_args(
    method: str, backend: str, arch: str, correction: str, target: str, terms: int | str
) -> None:
    """Names that gemm does not know, and arguments that do not apply to ``method``."""
    from precision.tensorcore import ARCHS, ArchModel

    methods = METHODS + OZAKI_METHODS
    if method not in methods:
        raise _unknown("method", method, methods)
    if backend not in BACKENDS:
        raise _unknown("backend", backend, BACKENDS)
    if correction not in CORRECTIONS:
        raise _unknown("correction", correction, CORRECTIONS)
    if not isinstance(arch, ArchModel) and str(arch).lower().replace("_", "") not in ARCHS:
        raise _unknown("arch", arch, list(ARCHS))
    if method not in OZAKI_METHODS:
        for name, value, default in (("terms", terms, "auto"), ("target", target, "fp64")):
            if not (isinstance(value, str) and value == default):
                raise ValueError(
                    f"{name}={value!r}: terms and target apply to method='ozaki1' / 'ozaki2' "
                    f"only, got method={method!r}"
                )


def _as_matrix(X: Any, name: str) -> Any:
    """``X`` as an array: numpy and CuPy arrays as they are, anything else (nested lists)
    through ``np.asarray``; a real numeric dtype (bool, integer, float) or ``TypeError``."""
    if not isinstance(X, np.ndarray) and not hasattr(X, "__cuda_array_interface__"):
        try:
            X = np.asarray(X)
        except ValueError as exc:  # ragged nested lists
            raise ValueError(f"{name} is not a rectangular array: {exc}") from None
    from precision.formats import require_real_dtype

    hint = "takes real inputs only (run the real and imaginary parts as separate GEMMs)"
    require_real_dtype(X.dtype, name, "gemm", hint)
    return X


def _check_matrices(A: Any, B: Any) -> None:
    if getattr(A, "ndim", None) != 2 or getattr(B, "ndim", None) != 2:
        raise ValueError(
            f"A and B must be 2-D arrays, got A.ndim={getattr(A, 'ndim', None)}, "
            f"B.ndim={getattr(B, 'ndim', None)}"
        )
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"inner dimensions differ: A is {A.shape}, B is {B.shape}")
    if min(A.shape + B.shape) < 1:
        raise ValueError(f"empty matrices are not supported: A {A.shape}, B {B.shape}")


def cuda_gemm(A: Any, B: Any, schedule: Schedule, *, arch: str = "sm90") -> Any:
    """Run ``schedule``'s CUDA kernel on device (CuPy) or host arrays; returns a CuPy array."""
    from precision.gpu import require_gpu

    cp = require_gpu(f"backend='cuda' (kernel {schedule.kernel})")
    s = schedule.split.lo_scale_log2 if schedule.split else 0
    return launch_gemm(
        schedule.kernel,
        cp.asarray(A, dtype=cp.float32),
        cp.asarray(B, dtype=cp.float32),
        lo_scale=2.0**s,
        out_scale=2.0**-s,
        arch=_cuda_arch(arch),
        strict_name=schedule.strict_kernel,
    )


def _cuda_arch(arch: Any) -> str:
    """The nvcc target of ``arch`` (any spelling get_arch takes, or an ArchModel): sm_90 only."""
    from precision.tensorcore.arch import get_arch

    if get_arch(arch).name != "sm90":
        raise ValueError(f"arch={arch!r}: the CUDA GEMM kernels are built for 'sm90' only")
    return "sm_90"


def cublas_mode(method: str, fmt: str, correction: str | None) -> str:
    """The :func:`precision.vendor.cublas.cublas_gemm` mode for a (method, fmt, correction)."""
    from precision.formats import get_format

    key = (method, get_format(fmt).name, correction if method == "corrected" else None)
    if key not in CUBLAS_MODES:
        raise ValueError(
            f"backend='cublas' has no baseline for method={method!r}, fmt={fmt!r}, "
            f"correction={correction!r}; available: {sorted(CUBLAS_MODES)}"
        )
    return CUBLAS_MODES[key]


def gemm(
    A: Any,
    B: Any,
    *,
    method: str = "plain",
    fmt: Any = None,
    backend: str = "emulator",
    arch: str = "sm90",
    correction: str = "ootomo",
    target: str = "fp64",
    terms: int | str = "auto",
    device: str = "cpu",
) -> np.ndarray:
    """D = A·B in fp32 for row-major A (M x K) and B (K x N), computed by ``method``.

    ``method``: ``"plain"`` (inputs rounded to ``fmt``, tensor-core products, fp32 chain),
    ``"corrected"`` (fp32 inputs split into hi/lo parts of ``fmt``; ``correction="ootomo"``:
    hi·hi accumulated outside the tensor core per k-block (128 k for fp16/bf16, 32 k for
    tf32: ``schedule.OOTOMO_BLOCK_K``) in fp32 RN, corrections inside, scaled by 2^s;
    ``"markidis"``: unscaled, all inside the tensor core), or
    ``"satf"`` (plain with the floating-point satf clamp after every MMA; int8 uses the s32
    ``.satfinite``). ``fmt``: fp16, bf16, tf32, e4m3, e5m2, int8 (aliases accepted; default
    fp16, and int8 for the Ozaki methods). fp32
    (``method="plain"`` only): ``backend="emulator"`` is the fp32 FMA chain in increasing k,
    bit exact (:func:`precision.gemm.sgemm.fma_chain_sgemm`), ``"cublas"`` cuBLAS SGEMM,
    ``"numpy"`` numpy's float32 matmul. fp64 only with ``backend="numpy"`` (plain).
    Returns a float32 numpy array (M x N); float64 for fp64.

    ``method="ozaki1"`` / ``"ozaki2"`` (Ozaki schemes I and II, :mod:`precision.gemm.ozaki`):
    float64/float32 inputs, ``fmt="int8"`` (scheme I also ``"fp16"``), the result rounded once
    to ``target`` (``"fp64"`` or ``"fp32"``, returned in that dtype), ``terms`` slices/moduli
    or ``"auto"``; backends ``"emulator"`` and ``"cuda"`` (bit-identical). See docs/ozaki.md.

    ``device``: where ``backend="emulator"`` runs the tensor-core instructions of ``plain``,
    ``corrected`` and ``satf``: ``"cpu"`` (NumPy) or ``"gpu"`` (the GPU engine of
    :func:`precision.tensorcore.mma`; the same bits, faster for large matrices). The fp32
    FMA chain, the Ozaki emulators and the other backends take no ``device``:
    ``device="gpu"`` with them is refused.

    ``A`` and ``B``: numpy arrays, CuPy arrays or anything ``np.asarray`` makes a 2-D array
    of (nested lists), of a real numeric dtype (float, integer, bool); complex, string and
    object inputs raise ``TypeError`` naming the argument and its dtype. Every argument is
    checked whether or not the method uses it: an unknown ``method``, ``backend``,
    ``correction`` or ``arch`` (one of :data:`precision.tensorcore.ARCHS`, also for the CPU
    baselines and the Ozaki methods) raises ``ValueError`` with the closest valid name and
    the full list; ``terms`` or ``target`` other than their defaults with a method other
    than ``ozaki1`` / ``ozaki2`` raise ``ValueError``.
    """
    _check_args(method, backend, arch, correction, target, terms)
    if device not in ("cpu", "gpu"):
        raise ValueError(f"device={device!r}: expected 'cpu' or 'gpu'")
    if device == "gpu" and (
        backend != "emulator"
        or method in OZAKI_METHODS
        or _cpu_float_baseline(method, "f16" if fmt is None else fmt, backend) is not None
    ):
        raise ValueError(
            f"device='gpu' applies to backend='emulator' with methods {METHODS} on tensor-core "
            f"formats (the GPU engine); method={method!r}, fmt={fmt!r}, backend={backend!r} "
            f"runs with device='cpu'"
        )
    A = _as_matrix(A, "A")
    B = _as_matrix(B, "B")
    _check_matrices(A, B)
    if method in OZAKI_METHODS:
        from precision.gemm.ozaki import ozaki_gemm

        fmt = "int8" if fmt is None else fmt
        return ozaki_gemm(A, B, method=method, fmt=fmt, target=target, terms=terms, backend=backend)
    fmt = "f16" if fmt is None else fmt
    cpu_fp = _cpu_float_baseline(method, fmt, backend)
    if cpu_fp == "numpy":
        from precision.vendor.numpy_blas import numpy_gemm

        return numpy_gemm(_to_host(A), _to_host(B), fmt)
    if cpu_fp == "fma_chain":
        from precision.gemm.sgemm import fma_chain_sgemm

        return fma_chain_sgemm(_to_host_f32(A), _to_host_f32(B))
    if backend == "cublas" and method == "plain" and _format_name(fmt) == "fp64":
        from precision.gpu import require_gpu

        cp = require_gpu("backend='cublas'")
        return cp.asnumpy(cublas_dgemm(A, B))
    if backend == "cublas":
        from precision.gpu import require_gpu
        from precision.vendor.cublas import cublas_gemm

        cp = require_gpu("backend='cublas'")
        mode = cublas_mode(method, fmt, correction)
        out = cublas_gemm(
            cp.asarray(A, dtype=cp.float32), cp.asarray(B, dtype=cp.float32), mode=mode
        )
        return cp.asnumpy(out).astype(np.float32, copy=False)
    schedule = get_schedule(method, fmt, correction)
    if backend == "cuda":
        from precision.gpu import require_gpu

        cp = require_gpu("backend='cuda'")
        return cp.asnumpy(cuda_gemm(A, B, schedule, arch=arch))
    from precision.gemm.emulator import run_schedule

    A = _to_host_f32(A)
    B = _to_host_f32(B)
    return run_schedule(A, B, schedule, arch=arch, device=device)


def _format_name(fmt: Any) -> str:
    from precision.formats import get_format

    return get_format(fmt).name


def cublas_dgemm(A: Any, B: Any) -> Any:
    """Native cuBLAS DGEMM (CuPy's float64 matmul) of device or host arrays; a CuPy float64
    array. The fp64 baseline of the Ozaki methods (``method="plain", fmt="fp64",
    backend="cublas"``)."""
    from precision.gpu import require_gpu

    cp = require_gpu("cuBLAS DGEMM")
    return cp.matmul(cp.asarray(A, dtype=cp.float64), cp.asarray(B, dtype=cp.float64))


def _to_host(X: Any) -> np.ndarray:
    if hasattr(X, "get") and not isinstance(X, np.ndarray):  # a CuPy array
        X = X.get()
    return np.asarray(X)


def _to_host_f32(X: Any) -> np.ndarray:
    return np.ascontiguousarray(_to_host(X), dtype=np.float32)


def _cpu_float_baseline(method: str, fmt: Any, backend: str) -> str | None:
    """``"numpy"`` or ``"fma_chain"`` for the CPU fp32/fp64 baselines, None otherwise; a
    ValueError for combinations that have none."""
    if backend not in ("numpy", "emulator"):
        return None
    from precision.formats import get_format

    name = get_format(fmt).name
    if backend == "numpy":
        if name not in ("fp32", "fp64"):
            raise ValueError(f"backend='numpy' has baselines for fmt fp32, fp64, got {fmt!r}")
    elif name == "fp64":
        raise ValueError(f"fmt={fmt!r}: the fp64 baseline runs on backend='numpy' only")
    elif name != "fp32":
        return None
    if method != "plain":
        raise ValueError(
            f"fmt={fmt!r} on backend={backend!r}: method='plain' only (an fp32/fp64 GEMM has "
            f"no tensor-core split or satf), got method={method!r}"
        )
    return backend if backend == "numpy" else "fma_chain"


def available_backends() -> dict[str, str | None]:
    """Each backend mapped to ``None`` when usable here, else the reason it is not."""
    from precision.gpu import unavailable_reason

    out: dict[str, str | None] = {}
    try:
        import precision.tensorcore as tc

        out["emulator"] = None if hasattr(tc, "mma") else "precision.tensorcore.mma is missing"
    except Exception as exc:  # pragma: no cover - depends on the installation
        out["emulator"] = f"precision.tensorcore does not import: {exc}"
    gpu = unavailable_reason()
    if gpu is None:
        try:
            from precision.kernels.build import find_nvcc

            find_nvcc()
            out["cuda"] = None
        except RuntimeError as exc:
            out["cuda"] = str(exc)
    else:
        out["cuda"] = gpu
    if gpu is None:
        try:
            import precision.vendor.cublas  # noqa: F401

            out["cublas"] = None
        except Exception as exc:
            out["cublas"] = f"precision.vendor.cublas does not import: {exc}"
    else:
        out["cublas"] = gpu
    out["numpy"] = None
    return out
