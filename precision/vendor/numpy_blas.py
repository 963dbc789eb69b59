"""numpy's own matmul as CPU baselines: float32 (the BLAS SGEMM numpy links, usually OpenBLAS)
and float64 (DGEMM).

``numpy_gemm(A, B, fmt="fp32")`` converts both inputs to float32 (exact for float32/fp16/bf16
data; float64 data is rounded to nearest once) and returns ``np.matmul`` of them, a float32
array. ``fmt="fp64"`` converts them to float64 (exact for every float32 input) and returns the
float64 product, which is not rounded to fp32 afterwards: it is the fp64 baseline.

The BLAS library picks its own blocking, vector width, FMA use and thread split, which change
with the library, its version, the CPU and the thread count; treat these, like cuBLAS, as
"as deployed" comparators, never as a model of a fixed summation order (for that, see the
fp32 FMA chain of :mod:`precision.gemm.sgemm`). ``numpy.show_config()`` names the BLAS.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from precision.formats import get_format

#: Formats with a numpy baseline, mapped to the dtype numpy multiplies in (their storage).
NUMPY_DTYPES: dict[str, type[np.floating]] = {
    n: get_format(n).storage.type for n in ("fp32", "fp64")
}


def numpy_gemm(A: Any, B: Any, fmt: str = "fp32") -> np.ndarray:
    """``np.matmul`` of ``A`` (M x K) and ``B`` (K x N) in ``fmt`` ("fp32" or "fp64", aliases
    accepted): a float32 result for fp32, a float64 result for fp64."""
    from precision.formats import get_format

    name = get_format(fmt).name
    if name not in NUMPY_DTYPES:
        raise ValueError(
            f"backend='numpy' has baselines for fmt {', '.join(NUMPY_DTYPES)}, got {fmt!r}"
        )
    dtype = NUMPY_DTYPES[name]
    return np.matmul(np.asarray(A, dtype=dtype), np.asarray(B, dtype=dtype))
