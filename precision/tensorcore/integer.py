"""Exact CPU cores for the integer (s8/u8/s4/u4) and single-bit (b1) ``mma.sync`` families.

Semantics (PTX ISA, ``mma`` with ``.s32`` accumulate): one instruction of depth ``k_step``
computes ``d = f(c + sum_{k<k_step} a_k b_k)`` where the sum of products is exact and ``f``

- wraps the exact integer modulo 2^32 into int32 (two's complement) without ``.satfinite``;
- clamps it to ``[-2^31, 2^31 - 1]`` with ``.satfinite`` (applied to each instruction's result).

A chain of ``K / k_step`` instructions passes ``d`` on as the next ``c``, in increasing ``k``.
Wrapping modulo 2^32 commutes with addition, so without ``.satfinite`` the chain equals one wrap
of ``c + a @ b``; with ``.satfinite`` the clamps matter only where a partial sum can leave the
int32 range, which a per-element bound ``|c| + (|a| @ |b|)`` decides before any per-instruction
work is done.

Exactness: products are computed by float64 BLAS ``matmul`` on integer-valued operands. Every
product and every partial sum of a dot product of length ``L`` is an integer of magnitude at most
``L * max|a| * max|b|``; while that bound is below 2^53 every float64 operation on them is exact,
whatever order or FMA use the BLAS chooses. For the formats here ``max|a| * max|b| <= 255^2 <
2^16`` (u8), so any ``L < 2^37`` is exact; the code splits ``K`` into pieces that respect the
bound computed from the actual operands and checks it (:data:`EXACT_LIMIT`).

Single-bit ``b1`` (``.and.popc`` / ``.xor.popc``) has no ``.satfinite``: each instruction adds
``popc(a_row & b_col)`` = ``a.b`` or ``popc(a_row ^ b_col)`` = ``sum a + sum b - 2 a.b`` over its
``k_step`` bits and wraps modulo 2^32.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from precision.formats import get_format

__all__ = [
    "EXACT_LIMIT",
    "FORMAT_MAX_ABS",
    "INT32_MAX",
    "INT32_MIN",
    "b1_mma_chain",
    "int_mma_chain",
]

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
#: float64 represents every integer of magnitude <= 2^53 exactly; all BLAS partial sums stay below.
EXACT_LIMIT = 2**53
#: Largest |value| of each integer input format (s8 -128..127, u8 0..255, s4 -8..7, u4 0..15).
FORMAT_MAX_ABS = {
    t: int(max(-get_format(t).min_value, get_format(t).max_normal))
    for t in ("s8", "u8", "s4", "u4")
}
# The bound for the formats: the widest product (u8 x u8 < 2^16) over a K of 2^36 stays below
# 2^53, and the satfinite path's |d| + k_step * bound (k_step <= 64) is far below it.
assert 2**36 * max(FORMAT_MAX_ABS.values()) ** 2 < EXACT_LIMIT
assert 2**32 + 64 * max(FORMAT_MAX_ABS.values()) ** 2 < EXACT_LIMIT
# float64 elements per temporary block (~64 MiB): bounds memory of the per-instruction path.
_BLOCK_ELEMENTS = 1 << 23


def _wrap32(x: np.ndarray) -> np.ndarray:
    """Two's-complement wrap of int64 values modulo 2^32 into [-2^31, 2^31 - 1] (in place)."""
    x -= INT32_MIN
    np.remainder(x, 2**32, out=x)
    x += INT32_MIN
    return x


def _check_operands(a: np.ndarray, b: np.ndarray, c: np.ndarray, k_step: int, name: str):
    """Validate shapes/dtypes; return broadcast 3-D views a [B,M,K], b [B,K,N], c [B,M,N]."""
    for arr, label in ((a, "a"), (b, "b"), (c, "c")):
        if arr.ndim < 2:
            raise ValueError(f"{name}: {label} must have at least 2 dims, got shape {arr.shape}")
        if not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
            raise TypeError(f"{name}: {label} must be an integer array, got dtype {arr.dtype}")
    m, k = a.shape[-2:]
    k2, n = b.shape[-2:]
    if k != k2 or c.shape[-2:] != (m, n):
        raise ValueError(
            f"{name}: shapes do not chain: a {a.shape}, b {b.shape}, c {c.shape} "
            f"(expected a [..., M, K], b [..., K, N], c [..., M, N])"
        )
    if k_step <= 0 or k % k_step:
        raise ValueError(f"{name}: K={k} must be a positive multiple of k_step={k_step}")
    if c.size and (int(c.min()) < INT32_MIN or int(c.max()) > INT32_MAX):
        raise ValueError(f"{name}: c holds values outside int32 [{INT32_MIN}, {INT32_MAX}]")
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2], c.shape[:-2])
    except ValueError:
        raise ValueError(
            f"{name}: batch axes do not broadcast: a {a.shape[:-2]}, b {b.shape[:-2]}, "
            f"c {c.shape[:-2]}"
        ) from None
    # a and b keep their own batch entries (np.matmul broadcasts them; materialising a
    # broadcast b would hold one float64 copy of it per output batch entry); c, like the
    # output, has one entry per batch entry
    nd = len(batch)
    a_ = a.reshape((1,) * (nd - (a.ndim - 2)) + a.shape)
    b_ = b.reshape((1,) * (nd - (b.ndim - 2)) + b.shape)
    c3 = np.broadcast_to(c, batch + (m, n)).reshape(math.prod(batch), m, n)
    return batch, (m, k, n), a_, b_, c3


def _entry_index(x: np.ndarray, batch: tuple[int, ...]) -> np.ndarray:
    """For each of the output batch entries (C order over ``batch``), the index of the entry of
    ``x`` (``[..., rows, cols]``, its batch axes as many as ``batch``'s) that it reads."""
    own = x.shape[:-2]
    return np.broadcast_to(np.arange(math.prod(own)).reshape(own), batch).ravel()


def _max_abs(x: np.ndarray) -> int:
    return int(np.abs(x.astype(np.int64)).max()) if x.size else 0


def _exact_matmul_int64(af: np.ndarray, bf: np.ndarray, bound: int) -> np.ndarray:
    """Exact ``af @ bf`` (float64 integer values) as int64 wrapped modulo 2^32.

    ``bound`` = max|a| * max|b|; K is split so that each piece's dot products stay below 2^53.
    """
    k = af.shape[-1]
    piece = max(k, 1) if bound == 0 else min(max(k, 1), (EXACT_LIMIT - 1) // bound)
    if piece < 1:
        raise ValueError(f"max|a| * max|b| = {bound} >= 2^53: float64 products would not be exact")
    out = np.zeros(_product_shape(af, bf), dtype=np.int64)
    for k0 in range(0, k, piece):
        out += np.matmul(af[..., k0 : k0 + piece], bf[..., k0 : k0 + piece, :]).astype(np.int64)
        _wrap32(out)
    return out


def _product_shape(af: np.ndarray, bf: np.ndarray) -> tuple[int, ...]:
    """Shape of ``af @ bf`` (batch axes broadcast)."""
    return np.broadcast_shapes(af.shape[:-2], bf.shape[:-2]) + (af.shape[-2], bf.shape[-1])


def int_mma_chain(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, *, k_step: int, satfinite: bool
) -> np.ndarray:
    """Chain of integer ``mma`` instructions (s8/u8/s4/u4 inputs, s32 accumulate), exactly.

    Parameters
    ----------
    a, b : integer arrays ``[..., M, K]`` and ``[..., K, N]`` holding the *decoded* input values
        (e.g. -128..127 for s8, 0..15 for u4; mixed signedness is just mixed value ranges).
    c : integer array ``[..., M, N]`` of int32 values (the first instruction's accumulator).
    k_step : the instruction's K (32 for m16n8k32 s8, 64 for m16n8k64 s4, ...). ``K % k_step == 0``.
    satfinite : clamp each instruction's exact ``c + sum a b`` to [-2^31, 2^31 - 1]; otherwise wrap
        modulo 2^32 (two's complement).

    Returns
    -------
    int64 array ``[..., M, N]`` of int32 values ``d`` after ``K / k_step`` instructions in
    increasing ``k``. Batch axes broadcast.
    """
    batch, (m, k, n), a3, b3, c3 = _check_operands(a, b, c, k_step, "int_mma_chain")
    bound = _max_abs(a3) * _max_abs(b3)
    # Exact in float64 while the longest dot product computed in one BLAS call stays < 2^53.
    af = a3.astype(np.float64)
    bf = b3.astype(np.float64)
    acc = c3.astype(np.int64, order="C").reshape(batch + (m, n))
    if not satfinite:
        acc += _exact_matmul_int64(af, bf, bound)
        return _wrap32(acc)
    if 2**32 + k_step * bound >= EXACT_LIMIT:
        raise ValueError(
            f"int_mma_chain: 2^32 + k_step * max|a| * max|b| = {2**32 + k_step * bound} >= 2^53"
        )
    # A clamp can only act where some partial sum c + sum_{k<k1} a b leaves int32; all of them are
    # within |c| + (|a| @ |b|) of zero. Elsewhere the chain equals the plain exact sum.
    cmax = max(-int(c3.min()), int(c3.max())) if c3.size else 0
    if cmax + k * bound > INT32_MAX:
        absbound = _exact_matmul_abs(af, bf, bound) + np.abs(acc)
        risky_rows = (absbound > INT32_MAX).any(axis=-1)  # [*batch, M]
    else:
        risky_rows = np.zeros(acc.shape[:-1], dtype=bool)
    if not risky_rows.all():
        # On safe rows no partial sum leaves int32, so no clamp acts: one exact (wrapped) sum,
        # whose wrap is the identity there.
        plain = acc + _exact_matmul_int64(af, bf, bound)
        acc = np.where(risky_rows[..., None], acc, plain)
    nb = math.prod(batch)
    acc = acc.reshape(nb, m, n)
    risky_rows = risky_rows.reshape(nb, m)
    if risky_rows.any():
        # Per instruction: one BLAS product per k-block (small-k stacked matmul is slow in NumPy),
        # accumulated and clamped in float64, exact since |d| + k_step * bound < 2^53.
        rows_per = max(1, _BLOCK_ELEMENTS // max(k, n))
        ia, ib = _entry_index(af, batch), _entry_index(bf, batch)
        af = af.reshape(math.prod(af.shape[:-2]), m, k)
        bf = bf.reshape(math.prod(bf.shape[:-2]), k, n)
        for bi in range(acc.shape[0]):
            rows = np.flatnonzero(risky_rows[bi])
            for r0 in range(0, rows.size, rows_per):
                sel = rows[r0 : r0 + rows_per]
                # [nblk, rows, k_step], contiguous per block (strided slices miss the BLAS path).
                ablk = np.ascontiguousarray(
                    af[ia[bi], sel].reshape(sel.size, k // k_step, k_step).transpose(1, 0, 2)
                )
                bblk = np.ascontiguousarray(bf[ib[bi]]).reshape(k // k_step, k_step, n)
                d = acc[bi, sel].astype(np.float64)
                for s in range(k // k_step):
                    d += ablk[s] @ bblk[s]
                    np.clip(d, INT32_MIN, INT32_MAX, out=d)
                acc[bi, sel] = d.astype(np.int64)
    return acc.reshape(batch + (m, n))


def _exact_matmul_abs(af: np.ndarray, bf: np.ndarray, bound: int) -> np.ndarray:
    """``|a| @ |b|`` exactly as int64, saturated at 2^62 (only compared against 2^31)."""
    k = af.shape[-1]
    piece = max(k, 1) if bound == 0 else max(1, min(k, (EXACT_LIMIT - 1) // bound))
    out = np.zeros(_product_shape(af, bf), dtype=np.int64)
    for k0 in range(0, k, piece):
        part = np.matmul(np.abs(af[..., k0 : k0 + piece]), np.abs(bf[..., k0 : k0 + piece, :]))
        out += part.astype(np.int64)
        np.minimum(out, 2**62, out=out)
    return out


def b1_mma_chain(
    a_bits: np.ndarray,
    b_bits: np.ndarray,
    c: np.ndarray,
    *,
    k_step: int,
    op: Literal["xor.popc", "and.popc"],
) -> np.ndarray:
    """Chain of single-bit ``mma`` instructions (``.b1`` inputs, s32 accumulate), exactly.

    Parameters
    ----------
    a_bits, b_bits : 0/1 arrays (uint8 or bool) ``[..., M, K]`` and ``[..., K, N]``, one bit per
        element (unpacked; bit k of row i of A is ``a_bits[..., i, k]``).
    c : integer array ``[..., M, N]`` of int32 values.
    k_step : the instruction's K (256 for m16n8k256, 128 for m8n8k128). ``K % k_step == 0``.
    op : ``"and.popc"`` adds ``popc(a & b)`` = ``a.b`` per instruction; ``"xor.popc"`` adds
        ``popc(a ^ b)`` = ``sum a + sum b - 2 a.b``.

    Returns
    -------
    int64 array ``[..., M, N]`` of int32 values: ``c`` plus the popcounts of all ``K / k_step``
    instructions, wrapped modulo 2^32 (b1 ``mma`` has no ``.satfinite``; wrapping commutes with
    the chain, so one exact sum is wrapped once).
    """
    if op not in ("xor.popc", "and.popc"):
        raise ValueError(f"b1_mma_chain: op must be 'xor.popc' or 'and.popc', got {op!r}")
    batch, (m, k, n), a3, b3, c3 = _check_operands(a_bits, b_bits, c, k_step, "b1_mma_chain")
    for arr, label in ((a3, "a_bits"), (b3, "b_bits")):
        if arr.size and (int(arr.min()) < 0 or int(arr.max()) > 1):
            raise ValueError(f"b1_mma_chain: {label} must hold only 0/1 values")
    af = a3.astype(np.float64)
    bf = b3.astype(np.float64)
    acc = c3.astype(np.int64, order="C").reshape(batch + (m, n))
    dot = _exact_matmul_int64(af, bf, 1)  # a.b <= K < 2^53
    if op == "and.popc":
        acc += dot
    else:
        acc += a3.sum(axis=-1, dtype=np.int64)[..., :, None]
        acc += b3.sum(axis=-2, dtype=np.int64)[..., None, :]
        acc -= 2 * dot
    return _wrap32(acc)
