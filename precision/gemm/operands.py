"""Rounding fp32 inputs to a GEMM's operand format, exactly as the CUDA kernels do.

Every function here reproduces the kernel's register-level conversion bit for bit, using the
exact rounding of :func:`precision.formats.round` (never ml_dtypes' float64 casts, which round
twice) and numpy float32 arithmetic (IEEE round-to-nearest-even, subnormals kept) where the
kernel does fp32 arithmetic on CUDA cores.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from precision.gemm.schedule import Schedule


def round_operand(x: np.ndarray, fmt: str) -> np.ndarray:
    """fp32 array ``x`` rounded to ``fmt`` the way the kernel converts it, returned in the
    dtype :func:`precision.tensorcore.mma` takes for that format.

    fp16/bf16/tf32: round to nearest even (overflow to Inf). e4m3/e5m2: round to nearest even
    with satfinite (values beyond MAX_NORM become +-MAX_NORM, like ``cvt.rn.satfinite``).
    int8: round to nearest even integer, NaN -> 0, clamp to [-128, 127].
    """
    from precision.formats import get_format
    from precision.formats import round as fround

    x = np.asarray(x, dtype=np.float32)
    f = get_format(fmt)
    if f.name == "int8":
        r = np.rint(np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=127.0, neginf=-128.0))
        return np.clip(r, -128, 127).astype(np.int8)
    src = x.astype(np.float64)
    if f.name in ("e4m3", "e5m2"):
        src = np.clip(src, -f.max_normal, f.max_normal)  # NaN stays NaN
    exact = fround(src, f, "rne")
    storage = np.float32 if f.name == "tf32" else f.storage
    return np.asarray(exact).astype(storage)


def split_operand(x: np.ndarray, fmt: str, lo_scale_log2: int) -> tuple[np.ndarray, np.ndarray]:
    """Ootomo-Yokota / Markidis split: ``hi = fmt(x)``, ``lo = fmt(fp32(fp32(x - hi) * 2^s))``.

    The subtraction and the power-of-two scaling are done in float32 exactly as the kernel's
    ``__fsub_rn``/``__fmul_rn`` (both are exact for finite x whose hi is finite).

    Top binade (formats with fp32's exponent range, bf16 and tf32): a finite x above the
    format's largest finite value rounds up to Inf, which would turn every product with it into
    Inf or NaN. There ``hi`` and ``lo`` are clamped to ``±max_normal`` of the format instead
    (``hi = ±max_normal`` makes ``x - hi`` exact and small; ``lo`` can then still round up to
    Inf for bf16 with s = 8, and is clamped the same way), exactly as the kernels'
    ``clamp_top`` does. Every other input splits as before (the clamp is the identity there).
    """
    from precision.formats import get_format

    x = np.asarray(x, dtype=np.float32)
    f = get_format(fmt)
    hi = _clamp_top(round_operand(x, fmt), x, f)
    hi32 = hi.astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        resid = (x - hi32) * np.float32(2.0**lo_scale_log2)
    return hi, _clamp_top(round_operand(resid, fmt), resid, f)


def _clamp_top(r: np.ndarray, x: np.ndarray, f: Any) -> np.ndarray:
    """``r`` (x rounded to ``f``) with ±Inf from finite ``x`` replaced by ±max_normal, for
    formats whose exponent range is fp32's (bf16, tf32); other formats unchanged."""
    if f.emax != 127 or f.name == "fp32":
        return r
    over = np.isinf(r) & np.isfinite(x)
    if not over.any():
        return r
    out = r.copy()
    out[over] = np.copysign(f.max_normal, x[over]).astype(out.dtype)
    return out


def prepare_operands(A: np.ndarray, B: np.ndarray, schedule: Schedule) -> dict[str, np.ndarray]:
    """Named operands for ``schedule``'s steps: ``A``/``B`` or ``A_hi``/``A_lo``/``B_hi``/
    ``B_lo``, K already zero-padded and the k-slot permutation applied."""
    A, B = pad_k(A, B, schedule.tile[2])
    perm = full_k_permutation(A.shape[-1], schedule)
    A, B = A[..., perm], B[..., perm, :]
    if schedule.split is None:
        return {"A": round_operand(A, schedule.fmt), "B": round_operand(B, schedule.fmt)}
    s = schedule.split.lo_scale_log2
    a_hi, a_lo = split_operand(A, schedule.fmt, s)
    b_hi, b_lo = split_operand(B, schedule.fmt, s)
    return {"A_hi": a_hi, "A_lo": a_lo, "B_hi": b_hi, "B_lo": b_lo}


def pad_k(A: np.ndarray, B: np.ndarray, multiple: int) -> tuple[np.ndarray, np.ndarray]:
    """Zero-pad K (A's last axis, B's first) to a multiple of ``multiple`` as the host does
    before a kernel launch."""
    K = A.shape[-1]
    Kp = -(-K // multiple) * multiple
    if Kp == K:
        return np.asarray(A, np.float32), np.asarray(B, np.float32)
    Ap = np.zeros(A.shape[:-1] + (Kp,), np.float32)
    Ap[..., :K] = A
    Bp = np.zeros((Kp,) + B.shape[1:], np.float32)
    Bp[:K] = B
    return Ap, Bp


def full_k_permutation(K: int, schedule: Schedule) -> np.ndarray:
    """Index array of length K: position j of the permuted operand is physical k ``perm[j]``."""
    kb = schedule.k_block
    if K % kb:
        raise ValueError(f"K={K} is not a multiple of the instruction k {kb}")
    perm = np.asarray(schedule.k_perm, dtype=np.intp)
    return (np.arange(0, K, kb, dtype=np.intp)[:, None] + perm[None, :]).ravel()
