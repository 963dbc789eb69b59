"""Compute the result rows of sweep points: inputs, reference, timed GEMM call, error metrics.

This module does the arithmetic of one point and nothing else (no files, no progress bars),
so the same functions run in-process or on a Dask worker. A backend that cannot run here, or
a GEMM call that raises, yields rows with ``status`` "unavailable" or "error" and the reason in
``error``, never an exception (``KeyboardInterrupt`` still propagates). A GEMM whose error
metrics are NaN or Inf (its result holds NaN or Inf where the reference is finite) is
computed but not "ok": its status is "nan", with the reason in ``error``. The ``gpu_uuid``
column names the GPU that computed a point with a GPU backend (nvidia-smi's ``GPU-…`` UUID;
None for CPU points and for GPU points not attempted because the backend is unavailable).
The ``inputs_sha256`` column fingerprints the input matrices of the row's repeat
(:func:`inputs_sha256`, computed once per input pair by :class:`InputCache`); None where no
inputs were made (status "unavailable", or an error while drawing them).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from precision.runner.cluster import needs_gpu
from precision.runner.sweep import Point, rng_for

STATUS_OK = "ok"
STATUS_UNAVAILABLE = "unavailable"
STATUS_ERROR = "error"
STATUS_NAN = "nan"
#: Statuses of a computed point (a rerun does not recompute them).
DONE_STATUSES = (STATUS_OK, STATUS_NAN)


GemmFn = Callable[..., np.ndarray]


@functools.cache
def _provenance() -> dict:
    from precision.provenance import collect

    # Every field of precision.provenance.collect except the two that vary per row.
    info = collect()
    return {key: value for key, value in info.items() if key not in ("seed", "created_utc")}


@functools.cache
def _availability() -> dict[str, str | None]:
    from precision.runner.catalog import backend_availability

    return backend_availability()


def _gpu_uuid() -> str | None:
    """UUID of the GPU this process computes on (None without one)."""
    from precision.gpu import device_uuid

    return device_uuid()


def _default_gemm() -> GemmFn:
    from precision.gemm import gemm

    return gemm


def reference_product(A: np.ndarray, B: np.ndarray, kind: str, device: str = "cpu") -> np.ndarray:
    """The float64 reference: ``"exact"`` (exact, rounded once to fp64), ``"exact_dd"`` (the
    exact product as a double-double, stacked ``[hi, lo]`` with ``hi = RN64(A·B)`` and ``lo =
    RN64(A·B - hi)``, so ``hi + lo`` is within 2^-106·|A·B| of the exact value) or ``"fp64"``
    (numpy's float64 matmul). ``device="gpu"`` computes the exact kinds with cuBLAS DGEMM
    (:func:`precision.reference.exact_matmul`, identical bits); the result is a numpy array."""
    if kind in ("exact", "exact_dd"):
        from precision.reference import exact_matmul

        def exact(C: np.ndarray | None = None) -> np.ndarray:
            if device == "gpu":
                import cupy as cp

                dC = None if C is None else cp.asarray(C)
                out = exact_matmul(cp.asarray(A), cp.asarray(B), dC, rounding="fp64", device="gpu")
                return np.asarray(cp.asnumpy(out), dtype=np.float64)
            return np.asarray(exact_matmul(A, B, C, rounding="fp64"), dtype=np.float64)

        hi = exact()
        if kind == "exact":
            return hi
        # where A·B overflowed (hi = ±Inf) there is no low part: lo = 0 there, as for "exact"
        finite = np.isfinite(hi)
        lo = exact(np.where(finite, -hi, 0.0))
        lo[~finite] = 0.0
        return np.stack([hi, lo])
    if kind == "fp64":
        return A.astype(np.float64) @ B.astype(np.float64)
    raise ValueError(f"unknown reference {kind!r} (valid: exact, exact_dd, fp64)")


#: Hex digits of the SHA-256 kept in the ``inputs_sha256`` column (64 bits).
INPUTS_SHA256_DIGITS = 16


def _little_endian_bytes(array: np.ndarray) -> memoryview:
    """``array``'s bytes in C order and little-endian byte order, as a flat byte view.

    No copy for the C-contiguous, native little-endian arrays the runner makes; anything else
    (a strided view, big-endian data) is copied once into that layout.
    """
    order = array.dtype.byteorder
    if order == ">" or (order == "=" and sys.byteorder == "big"):
        array = array.astype(array.dtype.newbyteorder("<"))
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8).data


def inputs_sha256(A: np.ndarray, B: np.ndarray) -> str:
    """Fingerprint of an input pair: the first 16 hex digits of the SHA-256 of a header line
    followed by A's and then B's bytes (C order, little-endian).

    The header is one ASCII line: A's dtype (numpy's name) and shape (``RxC``), then B's,
    separated by spaces and ended by a newline, e.g. ``b"float32 16x32 float32 32x8\\n"``, so
    inputs with the same bytes but another dtype or shape get another fingerprint. The arrays
    are hashed through a byte view, without copies (see :func:`_little_endian_bytes`).
    """
    header = " ".join(f"{a.dtype.name} {'x'.join(str(d) for d in a.shape)}" for a in (A, B))
    digest = hashlib.sha256(f"{header}\n".encode("ascii"))
    for array in (A, B):
        digest.update(_little_endian_bytes(array))
    return digest.hexdigest()[:INPUTS_SHA256_DIGITS]


def _read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (same data, no copy)."""
    view = array.view()
    view.flags.writeable = False
    return view


@dataclass
class CachedInputs:
    """One repeat's input pair, its fingerprint, and the reference products computed on it
    (by reference kind)."""

    A: np.ndarray
    B: np.ndarray
    sha256: str
    references: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        """Bytes held (inputs and references)."""
        return self.A.nbytes + self.B.nbytes + sum(r.nbytes for r in self.references.values())


class InputCache:
    """LRU cache of the inputs of each (inputs, repeat), with their fingerprint and reference
    products, bounded in bytes.

    Points that share inputs (same shape, distribution, seed and repeat) reuse the matrices,
    their fingerprint (hashed once, when the pair is drawn) and, more importantly, the
    reference product, which may cost more than the GEMM itself.
    """

    def __init__(self, max_bytes: int = 2 << 30):
        self.max_bytes = max_bytes
        self._items: OrderedDict[tuple, CachedInputs] = OrderedDict()

    def get(self, point: Point, repeat: int) -> CachedInputs:
        """The inputs of ``point``'s repeat ``repeat`` (drawn and hashed on first use)."""
        from precision.distributions import make_inputs

        key = (point.input_key(), repeat)
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        A, B = make_inputs(
            point.distribution,
            point.m,
            point.n,
            point.k,
            rng_for(point, repeat),
            dtype=np.dtype(point.input_dtype),
            **dict(point.dist_params),
        )
        # Read-only from here on: every point of this repeat gets these very arrays, and the
        # fingerprint is taken once, so a GEMM that wrote into its inputs would hand the later
        # points other inputs under the same inputs_sha256. It fails instead (status error).
        A, B = _read_only(A), _read_only(B)
        item = CachedInputs(A, B, inputs_sha256(A, B))
        self._items[key] = item
        self._evict()
        return item

    def reference(self, point: Point, repeat: int) -> np.ndarray:
        """The reference product (``point.reference``) of ``point``'s repeat ``repeat``."""
        return self._product(point, repeat, point.reference, absolute=False)

    def abs_product(self, point: Point, repeat: int) -> np.ndarray:
        """|A|·|B| of ``point``'s repeat ``repeat``, the denominator of ``err_comp``: rounded
        once from the exact product for the exact reference kinds (the same bits on every
        machine), numpy's float64 matmul for ``reference = "fp64"``."""
        kind = "fp64" if point.reference == "fp64" else "exact"
        return self._product(point, repeat, kind, absolute=True)

    def _product(self, point: Point, repeat: int, kind: str, *, absolute: bool) -> np.ndarray:
        """``reference_product`` of the inputs (of |A| and |B| with ``absolute``), computed
        once per input pair and kept with it."""
        item = self.get(point, repeat)
        key = f"abs_product:{kind}" if absolute else kind
        if key not in item.references:
            A, B = (np.abs(item.A), np.abs(item.B)) if absolute else (item.A, item.B)
            # Points on a GPU backend (a GPU is at hand) compute the exact products there.
            device = "gpu" if point.backend in ("cuda", "cublas") else "cpu"
            item.references[key] = _read_only(reference_product(A, B, kind, device))
            self._evict()
        return item.references[key]

    def _evict(self) -> None:
        """Drop the least recently used entries above ``max_bytes`` (never the newest)."""
        while len(self._items) > 1 and self._nbytes() > self.max_bytes:
            self._items.popitem(last=False)

    def _nbytes(self) -> int:
        return sum(item.nbytes for item in self._items.values())


def _base_row(point: Point, repeat: int) -> dict:
    return {
        "point_id": point.id,
        "m": point.m,
        "n": point.n,
        "k": point.k,
        "distribution": point.distribution,
        "dist_params": json.dumps(dict(point.dist_params), sort_keys=True),
        "method": point.method,
        "correction": point.correction,
        # terms actually used (filled in for "auto" once the inputs are known), as a float
        # column (NaN for methods without terms); terms_requested is the config's value.
        "terms": float(point.terms) if isinstance(point.terms, int) else np.nan,
        "terms_requested": None if point.terms is None else str(point.terms),
        "target": point.target,
        "variant": point.variant,
        "format": point.format,
        "backend": point.backend,
        "arch": point.arch,
        "reference": point.reference,
        "repeat": repeat,
        "seed": point.seed,
        "input_dtype": point.input_dtype,
        "emulator_device": point.emulator_device,
        "input_seed": point.input_seed(repeat),
        # fingerprint of this repeat's inputs (inputs_sha256), once they are drawn
        "inputs_sha256": None,
        "compare_backend": point.compare_backend,
        "status": STATUS_OK,
        "error": None,
        "err_fro": np.nan,
        "err_max": np.nan,
        "err_median": np.nan,
        "err_comp": np.nan,
        "identical_bits": np.nan,
        "time_s": np.nan,
        "time_min_s": np.nan,
        "timed_calls": point.calls,
        "calls_per_sample": 1,
        "tflops": np.nan,
        "timing": None,
        "gpu_uuid": None,
    }


def _call(gemm: GemmFn, A: np.ndarray, B: np.ndarray, point: Point, backend: str):
    kwargs: dict[str, Any] = {
        "method": point.method,
        "fmt": point.format,
        "backend": backend,
        "arch": point.arch,
    }
    if point.correction is not None:
        kwargs["correction"] = point.correction
    if point.terms is not None:
        kwargs["terms"] = point.terms
        kwargs["target"] = point.target
    if backend == "emulator" and point.emulator_device == "gpu":
        kwargs["device"] = "gpu"
    return gemm(A, B, **kwargs)


def _is_library_gemm(fn: GemmFn) -> bool:
    from precision.gemm import gemm

    return fn is gemm


def _device_call(point: Point) -> Callable | None:
    """For a GPU backend, a call on device-resident inputs (so that only the GEMM is timed,
    not host-device copies); None for CPU backends."""
    if point.backend == "cuda" and point.terms is not None:
        from precision.gemm.ozaki_cuda import ozaki_gemm_cuda

        method, fmt, target, terms = point.method, point.format, str(point.target), point.terms
        return lambda dA, dB: ozaki_gemm_cuda(
            dA, dB, method=method, fmt=fmt, target=target, terms=terms
        )
    if point.backend == "cuda":
        from precision.gemm import cuda_gemm, get_schedule

        schedule = get_schedule(point.method, point.format, point.correction)
        return lambda dA, dB: cuda_gemm(dA, dB, schedule, arch=point.arch)
    if point.backend == "cublas" and point.format == "fp64":
        from precision.gemm.api import cublas_dgemm

        return cublas_dgemm
    if point.backend == "cublas":
        from precision.gemm.api import cublas_mode
        from precision.vendor.cublas import cublas_gemm

        mode = cublas_mode(point.method, point.format, point.correction)
        return lambda dA, dB: cublas_gemm(dA, dB, mode=mode)
    return None


def _run_timed(gemm: GemmFn | None, A, B, point: Point, row: dict) -> np.ndarray:
    """The GEMM result of one repeat; fills the timing columns of ``row``.

    GPU backends (with the library's gemm) run on device-resident inputs and are timed with
    CUDA events; everything else is timed by the wall clock around the ``gemm`` call.
    """
    gemm = gemm or _default_gemm()
    device = _device_call(point) if _is_library_gemm(gemm) else None
    if device is not None:
        from precision.gpu import calls_per_sample, require_gpu, time_gpu

        cp = require_gpu(f"backend {point.backend!r}")
        # fp32-input GEMMs get float32 device copies (float64 inputs are converted here,
        # untimed); the Ozaki methods and DGEMM keep float64.
        wide = point.terms is not None or point.format == "fp64"
        dtype = None if wide else cp.float32
        dA, dB = cp.asarray(A, dtype=dtype), cp.asarray(B, dtype=dtype)
        out = cp.asnumpy(device(dA, dB))
        call = lambda: device(dA, dB)  # noqa: E731
        batch = calls_per_sample(call, warmup=point.warmup)
        times = time_gpu(call, repeats=point.calls, warmup=0, batch=batch)
        row["timing"] = "cuda_events"
        row["calls_per_sample"] = batch
    else:
        for _ in range(point.warmup):
            _call(gemm, A, B, point, point.backend)
        times, out = [], None
        for _ in range(point.calls):
            start = time.perf_counter()
            result = _call(gemm, A, B, point, point.backend)
            times.append(time.perf_counter() - start)
            out = result if out is None else out
        row["timing"] = "wall"
    median = float(np.median(times))
    row["time_s"] = median
    row["time_min_s"] = float(np.min(times))
    row["tflops"] = 2.0 * point.m * point.n * point.k / median / 1e12 if median > 0 else np.nan
    return np.asarray(out)


def _measure(gemm: GemmFn | None, A, B, ref, abs_product, point: Point, row: dict) -> None:
    """Run one repeat of ``point`` and fill ``row`` in place (errors, timing, agreement);
    ``abs_product`` is |A|·|B| (:meth:`InputCache.abs_product`, for ``err_comp``)."""
    from precision.metrics import componentwise_error, error_metrics, identical_bits_fraction

    out = _run_timed(gemm, A, B, point, row)
    ref_lo = None
    if point.reference == "exact_dd":  # stacked [hi, lo] (reference_product)
        ref, ref_lo = ref[0], ref[1]
    if out.shape != ref.shape:
        raise ValueError(f"gemm returned shape {out.shape}, expected {ref.shape}")
    row.update(error_metrics(out, ref, ref_lo))
    row["err_comp"] = componentwise_error(out, ref, abs_product, ref_lo)
    if point.terms == "auto":
        from precision.gemm.ozaki import chosen_terms

        row["terms"] = float(
            chosen_terms(
                A, B, method=point.method, fmt=point.format, target=str(point.target), terms="auto"
            )
        )
    if point.compare_backend is not None and point.compare_backend != point.backend:
        other = np.asarray(_call(gemm or _default_gemm(), A, B, point, point.compare_backend))
        if out.dtype != other.dtype or out.dtype != np.float64:  # fp32 results as before
            out, other = out.astype(np.float32), other.astype(np.float32)
        row["identical_bits"] = identical_bits_fraction(out, other)


def compute_point(
    point: Point, cache: InputCache | None = None, gemm: GemmFn | None = None
) -> pd.DataFrame:
    """The ``repeats`` result rows of ``point`` (one per repeat), with provenance columns."""
    cache = cache or InputCache()
    availability = _availability()
    unavailable = [
        f"backend {b!r} is unavailable here: {availability[b]}"
        for b in (point.backend, point.compare_backend)
        if b is not None and availability.get(b)
    ]
    if point.emulator_device == "gpu":
        from precision.gpu import unavailable_reason

        reason = unavailable_reason()
        if reason is not None:
            unavailable.append(f"emulator_device 'gpu' is unavailable here: {reason}")
    rows = []
    for repeat in range(point.repeats):
        row = _base_row(point, repeat)
        if unavailable:
            row.update(status=STATUS_UNAVAILABLE, error="; ".join(unavailable))
        else:
            try:
                inputs = cache.get(point, repeat)
                row["inputs_sha256"] = inputs.sha256
                ref = cache.reference(point, repeat)
                absprod = cache.abs_product(point, repeat)
                _measure(gemm, inputs.A, inputs.B, ref, absprod, point, row)
                bad = [
                    f"{key} = {row[key]}"
                    for key in ("err_fro", "err_max", "err_median")
                    if not np.isfinite(row[key])
                ]
                if bad:
                    row.update(
                        status=STATUS_NAN,
                        error=f"{', '.join(bad)}: the result holds NaN or Inf "
                        "(overflow or an invalid operation)",
                    )
            except Exception as exc:  # recorded per point; the sweep goes on
                row.update(status=STATUS_ERROR, error=f"{type(exc).__name__}: {exc}")
            if needs_gpu(point):
                row["gpu_uuid"] = _gpu_uuid()
        row.update(_provenance())
        row["created_utc"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        rows.append(row)
    return pd.DataFrame(rows)


def compute_group(points: list[Point], gemm: GemmFn | None = None) -> list[pd.DataFrame]:
    """Rows of each point in ``points`` (which should share inputs), as one task."""
    cache = InputCache()
    return [compute_point(p, cache, gemm) for p in points]
