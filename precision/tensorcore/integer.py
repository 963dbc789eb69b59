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
from collections.abc import Iterator
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
# Output elements (and float64 operand elements) per block of int_mma_chain / b1_mma_chain
# (~4 MiB per temporary): bounds their int64/float64 temporaries at any size.
_BLOCK_ELEMENTS = 1 << 20


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
    """max |x| of an integer (or bool) array, 0 when empty (no int64 copy of ``x``)."""
    return max(-int(x.min()), int(x.max())) if x.size else 0


def _add_exact_matmul(
    acc: np.ndarray, af: np.ndarray, bf: np.ndarray, bound: int, scale: float = 1.0
) -> None:
    """``acc += scale * (af @ bf)`` exactly, wrapped modulo 2^32 (in place; ``acc`` int64 holding
    int32 values, ``af``/``bf`` float64 integer values; batch axes broadcast into ``acc``).

    ``bound`` = max|scale * a * b|; K is split so that each piece's dot products stay below 2^53.
    Each piece's float64 product is added straight into ``acc`` (one float64 temporary, no int64
    copy of it) where ``|acc| + |piece| < 2^53`` keeps that addition exact too.
    """
    k = af.shape[-1]
    piece = max(k, 1) if bound == 0 else min(max(k, 1), (EXACT_LIMIT - 1) // bound)
    if piece < 1:
        raise ValueError(f"max|a| * max|b| = {bound} >= 2^53: float64 products would not be exact")
    float_add = 2**32 + piece * bound < EXACT_LIMIT
    for k0 in range(0, k, piece):
        part = np.matmul(af[..., k0 : k0 + piece], bf[..., k0 : k0 + piece, :])
        if scale != 1.0:
            part *= scale  # (a power of two: exact)
        if float_add:
            np.add(acc, part, out=acc, casting="unsafe")
        else:
            acc += part.astype(np.int64)
        del part
        _wrap32(acc)


def int_mma_chain(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    *,
    k_step: int,
    satfinite: bool,
    dtype: type[np.signedinteger] = np.int64,
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
    dtype : the result's dtype (``np.int64`` or ``np.int32``; the values fit either).

    Returns
    -------
    array ``[..., M, N]`` (of ``dtype``) of int32 values ``d`` after ``K / k_step`` instructions
    in increasing ``k``. Batch axes broadcast. The output is computed in blocks of
    (batch entries x rows) of about :data:`_BLOCK_ELEMENTS` elements, so the int64/float64
    temporaries stay bounded whatever the size.
    """
    batch, (m, k, n), a3, b3, c3 = _check_operands(a, b, c, k_step, "int_mma_chain")
    bound = _max_abs(a3) * _max_abs(b3)
    if satfinite and 2**32 + k_step * bound >= EXACT_LIMIT:
        raise ValueError(
            f"int_mma_chain: 2^32 + k_step * max|a| * max|b| = {2**32 + k_step * bound} >= 2^53"
        )
    # A clamp can only act where some partial sum c + sum_{k<k1} a b leaves int32; all of them are
    # within |c| + (|a| @ |b|) of zero. Elsewhere the chain equals the plain exact sum.
    cmax = max(-int(c3.min()), int(c3.max())) if c3.size else 0
    may_clamp = satfinite and cmax + k * bound > INT32_MAX
    out = np.empty(c3.shape, dtype=dtype)
    b_abs: tuple[np.ndarray, np.ndarray] | None = None  # (bc, |bc|) of the last block
    for ents, rows, cols, ac, bc in _blocks(a3, b3, batch, (m, k, n)):
        cc = c3[ents, rows, cols].astype(np.int64)  # [E, rows, columns]
        if not may_clamp:
            # without .satfinite (or where no clamp can act) one exact sum, wrapped modulo 2^32
            _add_exact_matmul(cc, ac, bc, bound)
            out[ents, rows, cols] = cc
            continue
        if b_abs is None or b_abs[0] is not bc:
            b_abs = (bc, np.abs(bc))
        risky = _risky_rows(ac, b_abs[1], cc)
        res = cc.copy()
        if not risky.all():
            _add_exact_matmul(res, ac, bc, bound)  # the wrap is the identity on safe rows
        if risky.any():
            _clamped_chain(ac, bc, cc, risky, res, k_step)
        out[ents, rows, cols] = res
    return out.reshape(batch + (m, n))


def _risky_rows(ac: np.ndarray, b_abs: np.ndarray, cc: np.ndarray) -> np.ndarray:
    """Rows [E, rows] where some partial sum may leave int32: ``|c| + |a| @ |b| > 2^31 - 1``
    for some column. Computed in float64: every partial sum is a nonnegative integer, exact
    below 2^53 and rounded monotonically above it, so the comparison with 2^31 - 1 is exact."""
    bnd = np.matmul(np.abs(ac), b_abs)
    bnd = np.add(bnd, np.abs(cc), out=bnd if bnd.shape == cc.shape else None)
    return (bnd > INT32_MAX).any(axis=-1)


def _blocks(
    a3: np.ndarray, b3: np.ndarray, batch: tuple[int, ...], mkn: tuple[int, int, int]
) -> Iterator[tuple[slice, slice, slice, np.ndarray, np.ndarray]]:
    """Cover the output ``[R, M, N]`` (R output batch entries) in blocks of about
    :data:`_BLOCK_ELEMENTS` float64 elements of temporaries. Yields ``(ents, rows, cols, ac,
    bc)``: the block's slices of output batch entries, rows and columns, and its operands as
    float64 ``[E or 1, rows, K]`` and ``[E or 1, K, cols]`` (a single entry where the block
    reads one entry of that operand; np.matmul broadcasts it). Where K·N exceeds the budget,
    b is taken in column panels: its float64 copy was made whole before 2026-11-28 (2 GiB
    for one 65536 x 4096 int8 b). Integer sums are exact, so the blocks change no bit."""
    m, k, n = mkn
    nb = math.prod(batch)
    ia, ib = _entry_index(a3, batch), _entry_index(b3, batch)
    af = a3.reshape((math.prod(a3.shape[:-2]), m, k))
    bf_all = b3.reshape((math.prod(b3.shape[:-2]), k, n))
    single_b = bf_all.shape[0] == 1
    step_c = n if k * n <= _BLOCK_ELEMENTS else max(1, _BLOCK_ELEMENTS // max(k, 1))
    per_entry = m * (k + step_c) + (0 if single_b else k * step_c)
    if per_entry <= _BLOCK_ELEMENTS:
        step_e, step_r = max(1, _BLOCK_ELEMENTS // max(per_entry, 1)), max(m, 1)
    else:
        step_e, step_r = 1, max(1, _BLOCK_ELEMENTS // max(k + step_c, 1))
    for c0 in range(0, max(n, 1), max(step_c, 1)):
        cols = slice(c0, min(n, c0 + step_c))
        # (one shared b: its panel converted once, reused by every row block)
        bf1 = bf_all[:, :, cols].astype(np.float64) if single_b else None
        for e0 in range(0, nb, step_e):
            e1 = min(nb, e0 + step_e)
            ents = slice(e0, e1)
            ja, jb = ia[ents], ib[ents]
            if bf1 is not None:
                bc = bf1
            elif (jb == jb[0]).all():
                bc = bf_all[jb[0]][None, :, cols].astype(np.float64)
            else:
                bc = bf_all[jb][:, :, cols].astype(np.float64)
            a_one = bool((ja == ja[0]).all())
            for r0 in range(0, max(m, 1), step_r):
                rows = slice(r0, min(m, r0 + step_r))
                ac = af[ja[0], rows][None] if a_one else af[ja, rows]
                yield ents, rows, cols, ac.astype(np.float64), bc


def _clamped_chain(
    ac: np.ndarray,
    bc: np.ndarray,
    cc: np.ndarray,
    risky: np.ndarray,
    res: np.ndarray,
    k_step: int,
) -> None:
    """``.satfinite`` chain, instruction by instruction, for the ``risky`` rows of a block
    (``risky`` [E, rows]); writes them into ``res`` [E, rows, N]. One BLAS product per
    instruction for the whole block (small-k stacked matmul is slow in NumPy), accumulated and
    clamped in float64, exact since |d| + k_step * bound < 2^53."""
    e, r, k = cc.shape[0], cc.shape[1], ac.shape[-1]
    n = cc.shape[-1]
    nblk = k // k_step
    if bc.shape[0] == 1:
        # one B for the block: stack the risky rows of all its entries
        sel = np.nonzero(risky)
        arows = np.broadcast_to(ac, (e, r, k))[sel]  # [R, K]
        ablk = np.ascontiguousarray(arows.reshape(arows.shape[0], nblk, k_step).transpose(1, 0, 2))
        bblk = np.ascontiguousarray(bc[0]).reshape(nblk, k_step, n)
        d = cc[sel].astype(np.float64)  # [R, N]
        for s in range(nblk):
            d += ablk[s] @ bblk[s]
            np.clip(d, INT32_MIN, INT32_MAX, out=d)
        res[sel] = d.astype(np.int64)
        return
    # B differs between entries: every row of the entries holding a risky row (on a safe row no
    # partial sum leaves int32, so the clamps are the identity and it equals the plain sum)
    ents = np.flatnonzero(risky.any(axis=-1))
    a_e = np.broadcast_to(ac, (e, r, k))[ents]
    # (explicit sizes, not -1: K = 0 leaves nblk = 0, and -1 cannot be inferred then)
    ablk = np.ascontiguousarray(a_e.reshape(ents.size, r, nblk, k_step).transpose(2, 0, 1, 3))
    bblk = np.ascontiguousarray(bc[ents].reshape(ents.size, nblk, k_step, n).transpose(1, 0, 2, 3))
    d = cc[ents].astype(np.float64)  # [E', rows, N]
    for s in range(nblk):
        d += ablk[s] @ bblk[s]
        np.clip(d, INT32_MIN, INT32_MAX, out=d)
    res[ents] = d.astype(np.int64)


def b1_mma_chain(
    a_bits: np.ndarray,
    b_bits: np.ndarray,
    c: np.ndarray,
    *,
    k_step: int,
    op: Literal["xor.popc", "and.popc"],
    dtype: type[np.signedinteger] = np.int64,
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
    dtype : the result's dtype (``np.int64`` or ``np.int32``).

    Returns
    -------
    array ``[..., M, N]`` (of ``dtype``) of int32 values, computed in bounded blocks: ``c`` plus
    the popcounts of all ``K / k_step`` instructions, wrapped modulo 2^32 (b1 ``mma`` has no
    ``.satfinite``; wrapping commutes with the chain, so one exact sum is wrapped once).
    """
    if op not in ("xor.popc", "and.popc"):
        raise ValueError(f"b1_mma_chain: op must be 'xor.popc' or 'and.popc', got {op!r}")
    batch, (m, k, n), a3, b3, c3 = _check_operands(a_bits, b_bits, c, k_step, "b1_mma_chain")
    for arr, label in ((a3, "a_bits"), (b3, "b_bits")):
        if arr.size and (int(arr.min()) < 0 or int(arr.max()) > 1):
            raise ValueError(f"b1_mma_chain: {label} must hold only 0/1 values")
    out = np.empty(c3.shape, dtype=dtype)
    b_sum: tuple[np.ndarray, np.ndarray] | None = None  # (bc, column sums of bc) of the last block
    for ents, rows, cols, ac, bc in _blocks(a3, b3, batch, (m, k, n)):  # bounded temporaries
        acc = c3[ents, rows, cols].astype(np.int64)
        if op == "and.popc":
            _add_exact_matmul(acc, ac, bc, 1)  # a.b <= K < 2^53
        else:  # sum a + sum b - 2 a.b, exact: all terms <= 2K < 2^53
            if b_sum is None or b_sum[0] is not bc:
                b_sum = (bc, bc.sum(axis=-2).astype(np.int64)[..., None, :])
            acc += ac.sum(axis=-1).astype(np.int64)[..., :, None]
            acc += b_sum[1]
            _wrap32(acc)
            _add_exact_matmul(acc, ac, bc, 2, scale=-2.0)
        out[ents, rows, cols] = acc
    return out.reshape(batch + (m, n))
