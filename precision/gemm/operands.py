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


#: Elements of an operand rounded or split at once by :func:`prepare_operands`: the rounding's
#: float64 temporaries (about 50 bytes per element) stay at this size, so the operands cost
#: their rounded formats plus one chunk (whole, they peaked at 15x the fp32 inputs).
_CHUNK_ELEMENTS = 1 << 18


def prepare_operands(A: np.ndarray, B: np.ndarray, schedule: Schedule) -> dict[str, np.ndarray]:
    """Named operands for ``schedule``'s steps: ``A``/``B`` or ``A_hi``/``A_lo``/``B_hi``/
    ``B_lo`` of the 2-D fp32 ``A`` (M x K) and ``B`` (K x N), K zero-padded as the host pads
    it (:func:`pad_k`) and the k-slot permutation applied. Rounded in chunks of at most
    :data:`_CHUNK_ELEMENTS` (an elementwise rounding: the same values as rounding whole)."""
    A, B = np.asarray(A, np.float32), np.asarray(B, np.float32)
    K = A.shape[-1]
    Kp = -(-K // schedule.tile[2]) * schedule.tile[2]
    perm = full_k_permutation(Kp, schedule)
    split = schedule.split

    def convert(x: np.ndarray) -> tuple[np.ndarray, ...]:
        if split is None:
            return (round_operand(x, schedule.fmt),)
        return split_operand(x, schedule.fmt, split.lo_scale_log2)

    names: tuple[tuple[str, ...], ...] = (
        (("A",), ("B",)) if split is None else (("A_hi", "A_lo"), ("B_hi", "B_lo"))
    )
    ops = dict(zip(names[0], _convert_blocked(A, perm, 1, convert), strict=True))
    ops.update(zip(names[1], _convert_blocked(B, perm, 0, convert), strict=True))
    return ops


def _convert_blocked(x: np.ndarray, perm: np.ndarray, axis: int, convert: Any) -> list[np.ndarray]:
    """``convert`` of ``x`` with its K axis (``axis``) taken as ``perm`` (indices beyond K
    read as +0, the host's zero padding), chunk by chunk into whole-size results."""
    K = x.shape[axis]
    shape = (x.shape[0], perm.size) if axis == 1 else (perm.size, x.shape[1])
    rows, cols = shape
    cc = max(1, min(cols, _CHUNK_ELEMENTS))
    rc = max(1, _CHUNK_ELEMENTS // cc)
    outs: list[np.ndarray] | None = None
    for r0 in range(0, max(rows, 1), rc):
        for c0 in range(0, max(cols, 1), cc):
            rs, cs = slice(r0, min(rows, r0 + rc)), slice(c0, min(cols, c0 + cc))
            idx = perm[cs] if axis == 1 else perm[rs]
            part = np.zeros((rs.stop - rs.start, cs.stop - cs.start), np.float32)
            ok = idx < K
            if axis == 1:
                part[:, ok] = x[rs, idx[ok]]
            else:
                part[ok] = x[idx[ok], cs]
            res = convert(part)
            if outs is None:
                outs = [np.empty(shape, r.dtype) for r in res]
            for o, r in zip(outs, res, strict=True):
                o[rs, cs] = r
    assert outs is not None  # the loops run at least once
    return outs


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
