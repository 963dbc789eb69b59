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
#: cuBLAS's fp64 baseline (native DGEMM, float64 output): :func:`cublas_dgemm`, no mode.
CUBLAS_DGEMM = ("plain", "fp64", None)


def _unknown(arg: str, value: Any, valid: tuple[str, ...] | list[str]) -> ValueError:
    """``ValueError`` for an unknown ``arg=value``: a close match, then every valid value."""
    hint = difflib.get_close_matches(str(value), list(valid), n=1, cutoff=0.5)
    did = f"; did you mean {hint[0]!r}?" if hint else ""
    return ValueError(f"{arg}={value!r}: unknown{did} (expected one of {', '.join(valid)})")


def _check_args(
    method: str, backend: str, arch: Any, correction: str, target: Any, terms: int | str
) -> None:
    """Names that gemm does not know, and arguments that do not apply to ``method``."""
    from precision.tensorcore.arch import get_arch

    methods = METHODS + OZAKI_METHODS
    if method not in methods:
        raise _unknown("method", method, methods)
    if backend not in BACKENDS:
        raise _unknown("backend", backend, BACKENDS)
    if correction not in CORRECTIONS:
        raise _unknown("correction", correction, CORRECTIONS)
    get_arch(arch)  # ValueError: tensorcore.arch.unknown_arch_message (sm86: "'sm80' models it")
    if method != "corrected" and correction != "ootomo":
        raise ValueError(
            f"correction={correction!r}: applies to method='corrected' only, got method={method!r}"
        )
    if method not in OZAKI_METHODS:
        if not (isinstance(terms, str) and terms == "auto"):
            raise _not_ozaki("terms", terms, method)
        if not _is_fp64(target):
            raise _not_ozaki("target", target, method)


def _not_ozaki(name: str, value: Any, method: str) -> ValueError:
    return ValueError(
        f"{name}={value!r}: terms and target apply to method='ozaki1' / 'ozaki2' only, got "
        f"method={method!r}"
    )


def _is_fp64(target: Any) -> bool:
    """Whether ``target`` names fp64 (the default ``target``), in any spelling."""
    from precision.formats import get_format

    try:
        return get_format(target).name == "fp64"
    except (TypeError, ValueError):
        return False


def _as_matrix(X: Any, name: str) -> Any:
    """``X`` as an array: numpy and CuPy arrays as they are, anything else (nested lists)
    through ``np.asarray``; a real numeric dtype (bool, integer, float) or ``TypeError``."""
    from precision.formats import refuse_masked, require_real_dtype

    refuse_masked(X, name, "gemm")
    if not isinstance(X, np.ndarray) and not hasattr(X, "__cuda_array_interface__"):
        try:
            X = np.asarray(X)
        except ValueError as exc:  # ragged nested lists
            raise ValueError(f"{name} is not a rectangular array: {exc}") from None

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


def cuda_gemm(A: Any, B: Any, schedule: Schedule, *, arch: str = "sm90") -> Any:
    """Run ``schedule``'s CUDA kernel on device (CuPy) or host arrays; returns a CuPy array."""
    from precision.gpu import require_gpu

    nv_arch = _cuda_arch(arch)  # an arch the kernels are not built for, before the GPU
    cp = require_gpu(f"backend='cuda' (kernel {schedule.kernel})")
    s = schedule.split.lo_scale_log2 if schedule.split else 0
    return launch_gemm(
        schedule.kernel,
        _to_device_f32(cp, A),
        _to_device_f32(cp, B),
        lo_scale=2.0**s,
        out_scale=2.0**-s,
        arch=nv_arch,
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
            f"correction={correction!r}; available: {sorted([*CUBLAS_MODES, CUBLAS_DGEMM])}"
        )
    return CUBLAS_MODES[key]


def gemm(
    A: Any,
    B: Any,
    *,
    method: str = "plain",
    fmt: Any = None,
    backend: str = "emulator",
    arch: Any = "sm90",
    correction: str = "ootomo",
    target: Any = "fp64",
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
    ``"numpy"`` numpy's float32 matmul. fp64 (``method="plain"`` only): ``backend="numpy"``
    (numpy's float64 matmul) or ``"cublas"`` (DGEMM).
    Returns a float32 numpy array (M x N); float64 for fp64.

    Inputs are rounded to fp32 first (plain, corrected, satf and the fp32 baselines) by
    round-to-nearest-even, as CUDA's ``cvt.rn.f32.f64`` does: a float64 entry whose magnitude
    rounds beyond FLT_MAX (``|x| >= 2^128 - 2^103``) becomes ±Inf, silently (no numpy
    warning), and the method then computes with that Inf.

    ``method="ozaki1"`` / ``"ozaki2"`` (Ozaki schemes I and II, :mod:`precision.gemm.ozaki`):
    float64, float32 or float16 inputs (other dtypes raise ``TypeError``), ``fmt="int8"``
    (scheme I also ``"fp16"``), the result rounded once to ``target`` (``"fp64"`` or
    ``"fp32"``, any alias: ``"double"``, ``"FP32"``, ``np.float32``; returned in that
    dtype), ``terms`` slices/moduli or ``"auto"``; backends
    ``"emulator"`` and ``"cuda"`` (bit-identical). ``arch`` must have tensor-core
    instructions for ``fmt`` (int8 from sm75 on; sm70 runs ``ozaki1`` with ``fmt="fp16"``
    only), as for the other emulated methods. See docs/ozaki.md.

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
    baselines and the Ozaki methods; a GPU generation that another model runs, such as
    ``"sm86"``, is told which one) raises ``ValueError`` with the closest valid name and
    the full list; ``terms`` or ``target`` other than their defaults with a method other
    than ``ozaki1`` / ``ozaki2``, and ``correction`` other than its default with a method
    other than ``corrected``, raise ``ValueError``. Combinations are checked before any
    GPU is asked for, so a combination that exists nowhere (``method="satf",
    backend="cublas"``) is named as such on every machine. The emulator refuses a format
    that ``arch`` has no tensor-core instruction for (the runner's check:
    :func:`precision.tensorcore.arch.format_problem`); ``backend="cuda"`` runs ``arch="sm90"``
    only.

    Empty shapes: M = 0 or N = 0 gives an empty (M, N) array of the method's output dtype;
    K = 0 gives +0.0 everywhere (the empty sum that every method's arithmetic starts from).
    Both are checked like any other call (a GPU backend still needs a GPU).
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
    empty = min(A.shape + B.shape) == 0
    if method in OZAKI_METHODS:
        from precision.gemm.ozaki import TARGETS, canonical_args, ozaki_gemm

        fmt, target = canonical_args(method, "int8" if fmt is None else fmt, target)
        _check_arch_runs(arch, fmt, backend)  # (ozaki_gemm refuses the other backends)
        if empty and backend == "cuda":  # (the emulator handles empty shapes itself)
            _require_gpu(f"{method} backend='cuda'")
            return _empty_product(A, B, TARGETS[target][2])
        return ozaki_gemm(A, B, method=method, fmt=fmt, target=target, terms=terms, backend=backend)
    fmt = "f16" if fmt is None else fmt
    try:
        _format_name(fmt)
    except (TypeError, ValueError) as e:  # (the registry's message, naming the argument)
        raise type(e)(f"fmt={fmt!r}: {e}") from None
    cpu_fp = _cpu_float_baseline(method, fmt, backend)
    if cpu_fp is not None:
        out_dtype = np.float64 if _format_name(fmt) == "fp64" else np.float32
        if empty:
            return _empty_product(A, B, out_dtype)
        if cpu_fp == "numpy":
            from precision.vendor.numpy_blas import numpy_gemm

            # Inf·0 and overflowing products give NaN and ±Inf by IEEE rules, as on any BLAS:
            # the intended values, so numpy's "invalid value" / "overflow" warnings are off
            with np.errstate(invalid="ignore", over="ignore"):
                if out_dtype == np.float32:
                    return numpy_gemm(_to_host_f32(A), _to_host_f32(B), fmt)
                return numpy_gemm(_to_host(A), _to_host(B), fmt)
        from precision.gemm.sgemm import fma_chain_sgemm

        return fma_chain_sgemm(_to_host_f32(A), _to_host_f32(B))
    if backend == "cublas" and method == "plain" and _format_name(fmt) == "fp64":
        cp = _require_gpu("backend='cublas'")
        if empty:
            return _empty_product(A, B, np.float64)
        return cp.asnumpy(cublas_dgemm(A, B))
    if backend == "cublas":
        from precision.vendor.cublas import cublas_gemm

        mode = cublas_mode(method, fmt, correction)  # an unknown combination before the GPU
        cp = _require_gpu("backend='cublas'")
        if empty:
            return _empty_product(A, B, np.float32)
        out = cublas_gemm(_to_device_f32(cp, A), _to_device_f32(cp, B), mode=mode)
        return cp.asnumpy(out).astype(np.float32, copy=False)
    schedule = get_schedule(method, fmt, correction)
    _check_arch_runs(arch, schedule.fmt, backend)
    if backend == "cuda":
        cp = _require_gpu("backend='cuda'")
        if empty:
            return _empty_product(A, B, np.float32)
        return cp.asnumpy(cuda_gemm(A, B, schedule, arch=arch))
    if empty:
        if device == "gpu":
            _require_gpu("device='gpu'")
        return _empty_product(A, B, np.float32)
    from precision.gemm.emulator import run_schedule

    A = _to_host_f32(A)
    B = _to_host_f32(B)
    return run_schedule(A, B, schedule, arch=arch, device=device)


def _require_gpu(what: str) -> Any:
    from precision.gpu import require_gpu

    return require_gpu(what)


def _check_arch_runs(arch: Any, fmt: str, backend: str) -> None:
    """ValueError where ``arch`` cannot run ``fmt`` on ``backend``: our CUDA kernels are built
    for sm90 only; the emulator needs a tensor-core instruction for ``fmt`` inputs on
    ``arch`` (the runner's check, with its wording: :func:`precision.tensorcore.arch.
    format_problem`)."""
    if backend == "cuda":
        _cuda_arch(arch)
    elif backend == "emulator":
        from precision.tensorcore.arch import format_problem

        problem = format_problem(arch, fmt)
        if problem is not None:
            raise ValueError(problem)


def _empty_product(A: Any, B: Any, dtype: Any) -> np.ndarray:
    """The (M, N) result of a product with M, N or K zero: +0.0 everywhere (an empty sum;
    nothing at all where M or N is 0), in the method's output ``dtype``."""
    return np.zeros((A.shape[0], B.shape[1]), dtype=dtype)


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
    """``X`` as a C-contiguous float32 host array, rounded to nearest even (numpy's cast, the
    same as CUDA's ``cvt.rn.f32.f64``): magnitudes that round beyond FLT_MAX become ±Inf, the
    intended value, so numpy's "overflow encountered in cast" warning is not raised."""
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(_to_host(X), dtype=np.float32)


def _to_device_f32(cp: Any, X: Any) -> Any:
    """``X`` as a float32 CuPy array, rounded as by :func:`_to_host_f32` (beyond FLT_MAX:
    ±Inf, without numpy's overflow warning)."""
    with np.errstate(over="ignore"):
        return cp.asarray(X, dtype=cp.float32)


def _cpu_float_baseline(method: str, fmt: Any, backend: str) -> str | None:
    """``"numpy"`` or ``"fma_chain"`` for the CPU fp32/fp64 baselines, None otherwise; a
    ValueError for combinations that have none."""
    if backend not in ("numpy", "emulator"):
        return None
    from precision.formats import get_format

    name = get_format(fmt).name
    if backend == "numpy":
        if name not in ("fp32", "fp64"):
            raise ValueError(
                f"backend='numpy' has baselines for fmt fp32, fp64, got {fmt!r} (gemm's fmt "
                "defaults to 'f16', the tensor-core methods' format: pass fmt='fp32' or 'fp64')"
            )
    elif name == "fp64":
        raise ValueError(
            f"fmt={fmt!r}: the fp64 baseline runs on backend='numpy' or 'cublas' (DGEMM) only"
        )
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
