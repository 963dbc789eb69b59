"""Error metrics of an approximate matrix product against a reference, computed in float64.

Large arrays run their elementwise passes, maxima and norm chunks in threads
(:data:`_THREADED_FROM`), with the bits of one pass; the median is selected from counts of
the values' leading bits (:mod:`precision.median`), with ``np.median``'s bits."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from precision.median import median_nonnegative
from precision.threads import blocks, in_threads, thread_count

#: Arrays whose largest magnitude lies in [2^-SAFE_EXP, 2^SAFE_EXP] have Frobenius norms
#: that a plain sum of squares gives without overflow or harmful underflow; outside that
#: range the norms are computed on power-of-two scaled copies.
_SAFE_EXP = 400
#: Elements per partial sum of squares in :func:`_fro_norm`.
_NORM_CHUNK = 1 << 16
#: Elements from which the elementwise passes, maxima and norms run in threads, one block of
#: the flat arrays each (:func:`_blocks`). Every element is computed alone and maxima are
#: exact, so the results are those of one pass. (At n = 16384 the metrics were most of a GPU
#: point's time; ``results/bench/error_metrics_2026-11-27/``.)
_THREADED_FROM = 1 << 22


def _blocks(*arrays: np.ndarray) -> list[slice] | None:
    """Slices of the flat arrays, one per thread (:func:`precision.threads.thread_count`),
    where the arrays hold :data:`_THREADED_FROM` elements or more, share a shape and are
    C-contiguous; else None (one pass)."""
    size = arrays[0].size
    threads = min(thread_count(), size // (_THREADED_FROM // 4)) if size >= _THREADED_FROM else 1
    same = all(x.shape == arrays[0].shape and x.flags.c_contiguous for x in arrays)
    if threads < 2 or not same:
        return None
    return blocks(size, threads)


def _extreme(x: np.ndarray, reduce: Callable[[np.ndarray], Any]) -> float:
    """``reduce(x)`` for ``np.max`` or ``np.min`` (NaN if ``x`` holds one), in threads for
    large arrays: the extreme of the blocks' extremes."""
    parts = _blocks(x)
    if parts is None:
        return float(reduce(x))
    flat = x.reshape(-1)
    return float(reduce(np.array(in_threads(lambda b: reduce(flat[b]), parts))))


def _fro_norm(x: np.ndarray) -> float:
    """``sqrt(sum x^2)`` over all elements, the same bits on every machine, BLAS, thread count
    and memory layout: the elements in C order, in chunks of :data:`_NORM_CHUNK`; each chunk's
    squares summed by numpy's pairwise sum (plain additions in a fixed order), the chunk sums
    added exactly (``math.fsum``, one rounding) and the square root correctly rounded.
    (``np.linalg.norm`` goes through a BLAS dot product, whose order of additions depends on
    the BLAS, its threads and the layout.)"""
    # a C-contiguous array is sliced as a flat view; any other is read through its flat
    # iterator (a copy of each chunk, in C order, without a copy of the whole array)
    flat = x.reshape(-1) if x.flags.c_contiguous else x.flat

    def sums(starts: range) -> list[float]:
        out = []
        with np.errstate(over="ignore", under="ignore"):  # (per thread)
            for start in starts:
                chunk = np.asarray(flat[start : start + _NORM_CHUNK], dtype=np.float64)
                out.append(float(np.add.reduce(np.square(chunk))))
        return out

    starts = range(0, x.size, _NORM_CHUNK)
    parts = _blocks(x)
    if parts is None:
        partials = sums(starts)
    else:  # the same chunks, shared out in order (block bounds on chunk bounds)
        shares = [starts[b] for b in blocks(len(starts), len(parts))]
        partials = [p for share in in_threads(sums, shares) for p in share]
    try:
        return math.sqrt(math.fsum(partials))
    except OverflowError:  # finite partial sums whose total passes the float64 range
        return math.inf


def _shaped_as_exact(exact: np.ndarray, **arrays: np.ndarray | None) -> None:
    """``ValueError`` naming the first of ``arrays`` (None: absent) whose shape is not
    ``exact``'s (no broadcasting)."""
    for name, x in arrays.items():
        if x is not None and x.shape != exact.shape:
            raise ValueError(f"{name} has shape {x.shape} but exact has shape {exact.shape}")


def _real_array(x: Any, name: str, dtype: Any = None) -> np.ndarray:
    """``x`` as an array of a real numeric dtype (bool, integer, float, ml_dtypes float)."""
    from precision.formats import refuse_masked, require_real_dtype

    refuse_masked(x, name, "error_metrics")
    arr = np.asarray(x)
    hint = "takes real arrays only (measure the real and imaginary parts separately)"
    require_real_dtype(arr.dtype, name, "error_metrics", hint)
    return arr if dtype is None else np.asarray(arr, dtype=dtype)


def _abs_diff(a: np.ndarray, e: np.ndarray, lo: np.ndarray | None, out: Any = None) -> np.ndarray:
    """|(a - e) - lo| in float64, in a new array (or ``out``). A difference of finite values
    beyond the float64 range reads +Inf here, and Inf - Inf reads NaN (an overflowed result
    against a reference beyond the range), both without a warning; see :func:`_overflowed`."""
    # approx widened to float64 inside the ufunc (exact for float16/32), no float64 copy of it
    with np.errstate(over="ignore", invalid="ignore"):
        diff = np.subtract(a, e, dtype=np.float64, out=out)
        if lo is not None:
            np.subtract(diff, lo, out=diff)
    return np.abs(diff, out=diff)


def _abs_diff_all(a: np.ndarray, e: np.ndarray, lo: np.ndarray | None) -> np.ndarray:
    """:func:`_abs_diff` of the whole arrays, in threads for large ones (:func:`_blocks`)."""
    parts = _blocks(a, e) if lo is None else _blocks(a, e, lo)
    if parts is None:
        return _abs_diff(a, e, lo)
    out = np.empty(e.shape, dtype=np.float64)
    fa, fe, fo = a.reshape(-1), e.reshape(-1), out.reshape(-1)
    fl = None if lo is None else lo.reshape(-1)
    in_threads(lambda b: _abs_diff(fa[b], fe[b], None if fl is None else fl[b], out=fo[b]), parts)
    return out


def _relative(absdiff: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(rel, exact_nonzero)``: ``rel = absdiff / |e|`` where ``e != 0``, ``|e|`` (+0.0 or
    NaN) elsewhere; in threads for large arrays (:func:`_blocks`)."""
    rel = np.empty(e.shape, dtype=np.float64)
    nonzero = np.empty(e.shape, dtype=bool)
    parts = _blocks(absdiff, e)
    arrays = (absdiff, e, rel, nonzero)
    d, ee, r, nz = arrays if parts is None else tuple(x.reshape(-1) for x in arrays)

    def fill(b: Any) -> None:
        np.abs(ee[b], out=r[b])
        np.greater(r[b], 0, out=nz[b])
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # (per thread)
            np.divide(d[b], r[b], out=r[b], where=nz[b])

    if parts is None:
        fill(Ellipsis)  # the whole arrays
    else:
        in_threads(fill, parts)
    return rel, nonzero


def _overflowed(a: np.ndarray, e: np.ndarray, absdiff: np.ndarray) -> np.ndarray | None:
    """Mask of the elements whose |difference| overflowed to Inf although ``approx`` and
    ``exact`` are finite there (opposite signs near the top of the float64 range, e.g.
    approx = −exact ≈ 2^1023); None where there is none (the usual case)."""
    over = np.isinf(absdiff)
    if not over.any():
        return None
    over &= np.isfinite(a)
    over &= np.isfinite(e)
    return over if over.any() else None


def _halved(x: Any) -> Any:
    """``x / 2`` in float64 (exact except for the last bit of subnormal values), or None."""
    return None if x is None else np.ldexp(np.asarray(x, dtype=np.float64), -1)


def error_metrics(
    approx: np.ndarray, exact: np.ndarray, exact_lo: np.ndarray | None = None
) -> dict[str, float]:
    """Relative errors of ``approx`` against ``exact``, computed in float64 whatever the dtype
    of ``approx`` (float32 results are widened exactly).

    ``approx``, ``exact`` and ``exact_lo`` must have the same shape (0-d scalars included) and
    a real numeric dtype; other shapes raise ``ValueError`` naming them, complex or
    non-numeric dtypes ``TypeError``.

    ``exact_lo``: optional low part of a double-double reference ``exact + exact_lo`` (for
    example ``RN64(A·B - exact)``); the difference is then ``(approx - exact) - exact_lo``,
    whose first subtraction is exact (Sterbenz) wherever ``approx`` is within a factor 2 of
    ``exact``, so errors of float64 results below 2^-53 are resolved instead of reading 0.

    - ``err_fro``: ‖approx − exact‖_F / ‖exact‖_F (``inf`` if the reference is all zero and
      approx is not; 0 if both are zero; NaN if either holds a NaN). Right at any finite
      scale: outside magnitudes 2^±400 both norms are taken of power-of-two scaled values (no
      overflow or underflow of the squares), which leaves the bits of every result whose
      squares did not over- or underflow unchanged.
    - ``err_max`` / ``err_median``: max / median over elements of |approx − exact| / |exact|,
      over elements with exact ≠ 0; an element with exact = 0 contributes 0 if approx is 0 too
      and ``inf`` otherwise, and an element where approx or exact is NaN contributes NaN.
    Non-finite values in ``approx`` give ``nan``/``inf`` errors rather than being hidden.
    Finite values whose difference passes the float64 range (opposite signs near 2^1024)
    give their finite relative errors (e.g. 2 for approx = −exact), not ``inf``.
    """
    a = _real_array(approx, "approx")
    e = _real_array(exact, "exact", np.float64)
    lo = None if exact_lo is None else _real_array(exact_lo, "exact_lo", np.float64)
    _shaped_as_exact(e, approx=a, exact_lo=lo)
    if e.ndim == 0:  # a scalar product: the same metrics on a one-element array
        a, e = a.reshape(1), e.reshape(1)
        lo = None if lo is None else lo.reshape(1)
    # absdiff is a new array that the steps below may overwrite (never approx or exact);
    # its norm equals that of the signed difference (the same squares).
    absdiff = _abs_diff_all(a, e, lo)
    if absdiff.size == 0:
        return {"err_fro": 0.0, "err_max": 0.0, "err_median": 0.0}
    over = _overflowed(a, e, absdiff)
    if over is None:
        err_fro = _relative_fro(a, e, lo, absdiff)
    else:
        # Differences beyond the float64 range (finite values of opposite signs near 2^1024):
        # the errors are ratios, so they are taken of the halved values, whose differences
        # stay finite. Halving changes only subnormal elements' last bit, which is negligible
        # next to elements of 2^970 or more (an overflow needs one of them).
        a_h, e_h, lo_h = _halved(a), _halved(e), _halved(lo)
        err_fro = _relative_fro(a_h, e_h, lo_h, _abs_diff(a_h, e_h, lo_h))
        del a_h, e_h, lo_h
    # In place: two full-size float64 arrays (absdiff, rel) and boolean masks in all (the
    # median then holds rel and at most a quarter of its size, absdiff let go).
    # rel = |diff| / |e| where e != 0; 0 where both are 0; inf where only approx is nonzero;
    # NaN where either is NaN. The same IEEE operations on the same values as a plain np.where:
    # the same bits.
    rel, exact_nonzero = _relative(absdiff, e)
    # where exact is 0 (or NaN): inf if approx is nonzero, NaN if either is NaN; elsewhere rel
    # keeps |e| = +0.0
    if not exact_nonzero.all():  # (mostly it is: then there is nothing to mark)
        zero_ref = ~exact_nonzero
        rel[zero_ref & (absdiff > 0)] = np.inf
        rel[zero_ref & np.isnan(absdiff)] = np.nan
    if over is not None:  # |a − e| / |e| as |a/2 − e/2| / |e/2| (exact is ≥ 2^970 there)
        e_h = _halved(e[over])
        with np.errstate(over="ignore"):
            rel[over] = _abs_diff(_halved(a[over]), e_h, _halved(None if lo is None else lo[over]))
            rel[over] /= np.abs(e_h)
    err_max = _extreme(rel, np.max)
    # absdiff and the mask are let go first: the median's gathering may hold up to a quarter
    # of rel's size. np.median's bits; where np.median is called, it reorders rel (last use).
    del absdiff, exact_nonzero
    err_median = median_nonnegative(rel, _blocks(rel), overwrite=True)
    return {"err_fro": float(err_fro), "err_max": err_max, "err_median": err_median}


def _relative_fro(
    a: np.ndarray, e: np.ndarray, lo: np.ndarray | None, absdiff: np.ndarray
) -> float:
    """‖absdiff‖_F / ‖e‖_F without overflow or underflow of the squares; ``absdiff`` holds
    the same values on return."""
    emax = max(_extreme(e, np.max), -_extreme(e, np.min))  # NaN if e has a NaN
    dmax = _extreme(absdiff, np.max)
    if math.isfinite(emax) and emax > 0 and dmax == math.inf:
        return math.inf  # approx has an Inf (and no NaN): the norm of the difference is Inf
    if emax == 0:  # the reference is all zero: 0 if approx is too, NaN if it holds a NaN, else
        # Inf (decided on the largest |difference|, whose square may underflow)
        return math.nan if math.isnan(dmax) else (0.0 if dmax == 0 else math.inf)
    if not (math.isfinite(emax) and emax > 0 and math.isfinite(dmax) and dmax > 0) or (
        abs(math.frexp(emax)[1]) <= _SAFE_EXP and abs(math.frexp(dmax)[1]) <= _SAFE_EXP
    ):
        # Ordinary magnitudes, a zero, NaN or Inf: the plain norms (what the scaled ones give
        # bit for bit where the squares neither overflow nor underflow).
        norm = _fro_norm(e)
        dnorm = _fro_norm(absdiff)
        if math.isnan(norm) or math.isnan(dnorm):
            return math.nan  # a NaN in the reference or in the difference
        return float(dnorm / norm) if norm > 0 else (0.0 if dnorm == 0 else math.inf)
    # Scale each array by a power of two (exact) that brings its largest element to [0.5, 1),
    # so that no square overflows and none that matters underflows; undo the scales on the
    # quotient. absdiff is scaled in place and then recomputed (an unscaling could lose
    # elements that the scaling made subnormal).
    ke, kd = math.frexp(emax)[1], math.frexp(dmax)[1]
    dnorm_s = _fro_norm(np.ldexp(absdiff, -kd, out=absdiff))
    _abs_diff(a, e, lo, out=absdiff)
    scaled = np.ldexp(e, -ke)
    norm_s = _fro_norm(scaled)
    del scaled
    with np.errstate(over="ignore", under="ignore"):
        return float(np.ldexp(dnorm_s / norm_s, kd - ke))


def componentwise_error(
    approx: np.ndarray,
    exact: np.ndarray,
    abs_product: np.ndarray,
    exact_lo: np.ndarray | None = None,
) -> float:
    """``err_comp``: max over elements of |approx − exact| / (|A|·|B|), the componentwise
    error measure in which GEMM error bounds are stated (|C − Ĉ| <= γ_K·|A|·|B|, Higham,
    *Accuracy and Stability of Numerical Algorithms*, §3.5), so that entries of A·B near 0
    through cancellation do not dominate it as they dominate ``err_max``.

    ``abs_product``: |A|·|B| (nonnegative; the runner rounds it once from the exact product
    for exact references). The difference is taken as in :func:`error_metrics` (``exact_lo``
    the low part of a double-double reference). An element with |A|·|B| = 0 contributes 0
    if its difference is 0 and ``inf`` otherwise; a NaN on either side gives NaN. Arrays of
    one shape and a real dtype (``ValueError`` / ``TypeError`` otherwise); 0 for no
    elements."""
    a = _real_array(approx, "approx")
    e = _real_array(exact, "exact", np.float64)
    d = _real_array(abs_product, "abs_product", np.float64)
    lo = None if exact_lo is None else _real_array(exact_lo, "exact_lo", np.float64)
    _shaped_as_exact(e, approx=a, abs_product=d, exact_lo=lo)
    if a.size == 0:
        return 0.0
    absdiff = _abs_diff_all(a.reshape(-1), e.reshape(-1), None if lo is None else lo.reshape(-1))
    flat = d.reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(absdiff, flat, out=absdiff, where=flat > 0)  # (absdiff is a new array)
    zero = ~(flat > 0) & ~np.isnan(flat)
    absdiff[zero & (absdiff > 0)] = np.inf  # |A|·|B| = 0: 0 stays 0, anything else is Inf
    absdiff[np.isnan(flat)] = np.nan
    return _extreme(absdiff, np.max)


def identical_bits_fraction(x: np.ndarray, y: np.ndarray) -> float:
    """Fraction of elements whose bit patterns are identical (same dtype and shape required).

    NaNs compare by their bits, so two NaNs with different payloads count as different.
    """
    x = np.ascontiguousarray(x)
    y = np.ascontiguousarray(y)
    if x.dtype != y.dtype or x.shape != y.shape:
        raise ValueError(f"cannot compare bits of {x.dtype}{x.shape} with {y.dtype}{y.shape}")
    if x.dtype.itemsize not in (1, 2, 4, 8):  # complex128, longdouble: no unsigned view
        raise TypeError(
            f"identical_bits_fraction compares elements of 1, 2, 4 or 8 bytes; got {x.dtype} "
            f"({x.dtype.itemsize} bytes): compare its parts separately"
        )
    if x.size == 0:
        return 1.0
    uint = np.dtype(f"u{x.dtype.itemsize}")
    return float(np.mean(x.view(uint) == y.view(uint)))
