"""Error metrics of an approximate matrix product against a reference, computed in float64."""

from __future__ import annotations

import numpy as np


def error_metrics(
    approx: np.ndarray, exact: np.ndarray, exact_lo: np.ndarray | None = None
) -> dict[str, float]:
    """Relative errors of ``approx`` against ``exact`` (any shapes that broadcast equal),
    computed in float64 whatever the dtype of ``approx`` (float32 results are widened exactly).

    ``exact_lo``: optional low part of a double-double reference ``exact + exact_lo`` (for
    example ``RN64(A·B - exact)``); the difference is then ``(approx - exact) - exact_lo``,
    whose first subtraction is exact (Sterbenz) wherever ``approx`` is within a factor 2 of
    ``exact``, so errors of float64 results below 2^-53 are resolved instead of reading 0.

    - ``err_fro``: ‖approx − exact‖_F / ‖exact‖_F (``inf`` if the reference is all zero and
      approx is not; 0 if both are zero).
    - ``err_max`` / ``err_median``: max / median over elements of |approx − exact| / |exact|,
      over elements with exact ≠ 0; an element with exact = 0 contributes 0 if approx is 0 too
      and ``inf`` otherwise.
    Non-finite values in ``approx`` give ``nan``/``inf`` errors rather than being hidden.
    """
    a = np.asarray(approx)
    e = np.asarray(exact, dtype=np.float64)
    if a.shape != e.shape:
        raise ValueError(f"approx has shape {a.shape} but exact has shape {e.shape}")
    # approx widened to float64 inside the ufunc (exact for float16/32), no float64 copy of it;
    # diff is a new array that the steps below may overwrite (never approx or exact)
    diff = np.subtract(a, e, dtype=np.float64)
    if exact_lo is not None:
        np.subtract(diff, np.asarray(exact_lo, dtype=np.float64), out=diff)
    norm = np.linalg.norm(e)
    dnorm = np.linalg.norm(diff)
    err_fro = dnorm / norm if norm > 0 else (0.0 if dnorm == 0 else np.inf)
    if diff.size == 0:
        return {"err_fro": float(err_fro), "err_max": 0.0, "err_median": 0.0}
    # In place: two full-size float64 arrays (diff, rel) and boolean masks in all.
    # rel = |diff| / |e| where e != 0; 0 where both are 0; inf where only approx is nonzero
    # (or NaN). The same IEEE operations on the same values as a plain np.where: the same bits.
    absdiff = np.abs(diff, out=diff)
    rel = np.abs(e)
    exact_nonzero = rel > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(absdiff, rel, out=rel, where=exact_nonzero)
    rel[~exact_nonzero & (absdiff != 0)] = np.inf  # elsewhere rel keeps |e| = +0.0
    return {
        "err_fro": float(err_fro),
        "err_max": float(np.max(rel)),
        "err_median": float(np.median(rel, overwrite_input=True)),  # reorders rel, last
    }


def identical_bits_fraction(x: np.ndarray, y: np.ndarray) -> float:
    """Fraction of elements whose bit patterns are identical (same dtype and shape required).

    NaNs compare by their bits, so two NaNs with different payloads count as different.
    """
    x = np.ascontiguousarray(x)
    y = np.ascontiguousarray(y)
    if x.dtype != y.dtype or x.shape != y.shape:
        raise ValueError(f"cannot compare bits of {x.dtype}{x.shape} with {y.dtype}{y.shape}")
    if x.size == 0:
        return 1.0
    uint = np.dtype(f"u{x.dtype.itemsize}")
    return float(np.mean(x.view(uint) == y.view(uint)))
