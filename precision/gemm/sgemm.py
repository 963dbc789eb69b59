"""What an fp32 FMA-chain SGEMM computes, emulated exactly on the CPU (a CPU fp32 baseline).

The order is fixed and documented, so the result is a well-defined function of the inputs:
for every output element, with ``d_0 = +0``,

    d_{k+1} = fl32(a[i, k] * b[k, j] + d_k)        for k = 0, 1, ..., K-1 (increasing k)

where ``fl32`` is one IEEE-754 fused multiply-add: the exact value ``a*b + d`` rounded once to
fp32, round to nearest even, subnormals kept (no flush to zero), overflow to ±Inf. This is a
naive CUDA-core SGEMM's inner loop (``acc = fmaf(a, b, acc)``, ``nvcc`` default ``-ftz=false``)
and the classic ``ijk`` loop of a C SGEMM compiled with FMA contraction. Production SGEMMs
(cuBLAS, OpenBLAS) use other orders (split accumulators, split-K), usually with slightly
smaller errors; this is the reference order, not a model of them.

How one FMA is computed exactly with float64 numpy arithmetic, vectorised over a tile of the
output (a loop over k only, never over elements):

1. ``p = a * b`` in float64 is exact: a product of two 24-bit significands has at most 48 bits,
   and its exponent (>= -298, <= 256) is inside float64's normal range.
2. ``s = fl64(p + d)``. Rounding ``s`` to fp32 (IEEE float64 -> float32 cast: round to nearest
   even, subnormals and overflow as IEEE) equals rounding ``p + d`` once, except where ``s`` is
   exactly an fp32 tie (a midpoint between two fp32 numbers) and ``p + d`` is not: rounding is
   monotone and every midpoint is a float64 number, so ``s`` and ``p + d`` lie on the same
   side of every other midpoint.
3. Those ties are found from ``s``'s bits (float64 significand bits below fp32's last bit equal
   to exactly one half), together, conservatively, with every ``|s| < 2^-126`` (fp32's
   subnormal range, where the ties sit at other bits) and every non-finite ``s``. Only for
   them the rounding error ``e = (p + d) - s`` is computed exactly by TwoSum (Knuth) and ``s``
   replaced by ``p + d`` rounded to *odd* in float64 (an inexact ``s`` with an even last bit
   moves one ulp toward ``e``). A value rounded to odd with 53 >= 24 + 2 bits rounds to fp32
   exactly as the exact value does (Boldo & Melquiond 2008).

NaN and Inf follow IEEE (``inf * 0`` and ``inf - inf`` give NaN, Inf propagates); every NaN
output carries the NVIDIA canonical bits 0x7FFFFFFF, as the GPU's FFMA produces.

Memory: the output is computed in tiles of at most ``tile_elements`` elements (a few float64
temporaries of that size), so the working set is bounded whatever the shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from precision.tensorcore.fdpa import canonicalize_nan

#: Output elements per tile (256 KiB per float64 temporary: stays in a core's L2 cache).
TILE_ELEMENTS = 1 << 15


_MID_MASK = np.int64((1 << 29) - 1)  # float64 significand bits below fp32's last bit
_MID_BITS = np.int64(1 << 28)  # ... holding exactly half an fp32 ulp: an fp32 tie
_FP32_TINY = 2.0**-126  # below it fp32 is subnormal and its ties sit elsewhere


def _fma_step(p: np.ndarray, d: np.ndarray, s: np.ndarray, scratch: np.ndarray) -> None:
    """``d <- fl32(p + d)`` in place; ``p`` (float64) is the exact product, ``d`` (float32)
    the accumulator; ``s`` (float64) and ``scratch`` (int64) are scratch arrays.

    Double rounding (float64, then fp32) differs from one rounding only where the float64 sum
    ``s`` is exactly an fp32 tie while ``p + d`` is not. Those elements (plus, conservatively,
    every ``|s| < 2^-126`` and every non-finite ``s``) get TwoSum and round-to-odd; the rest
    are cast directly.
    """
    np.add(p, d, out=s)  # s = fl64(p + d)
    bits = s.view(np.int64)
    np.bitwise_and(bits, _MID_MASK, out=scratch)
    suspect = scratch == _MID_BITS
    suspect |= ~(np.abs(s) >= _FP32_TINY)  # subnormal fp32 range, zero and NaN
    if suspect.any():
        idx = np.flatnonzero(suspect)
        _round_to_odd(p.reshape(-1)[idx], d.reshape(-1)[idx], bits.reshape(-1), idx)
    d[...] = s  # one IEEE float64 -> float32 rounding (RNE, subnormals, overflow to Inf)


def _round_to_odd(pv: np.ndarray, dv: np.ndarray, bits: np.ndarray, idx: np.ndarray) -> None:
    """Replace ``s = fl64(pv + dv)`` (``bits[idx]``, the int64 view) by ``pv + dv`` rounded to
    odd: an inexact ``s`` with an even last bit moves one ulp toward the exact sum."""
    dv = dv.astype(np.float64)
    s = bits[idx].view(np.float64)
    t = s - pv  # TwoSum (Knuth): e = (pv + dv) - s exactly, NaN when s is not finite
    e = (pv - (s - t)) + (dv - t)
    fix = ((bits[idx] & 1) == 0) & (e != 0) & np.isfinite(e)
    if fix.any():
        up = (e * s > 0)[fix]  # e and s of one sign: the exact sum is larger in magnitude
        bits[idx[fix]] += np.where(up, 1, -1)


def fma_chain_sgemm(A: Any, B: Any, *, tile_elements: int = TILE_ELEMENTS) -> np.ndarray:
    """``D = A·B`` as an fp32 FMA chain in increasing k (see the module docstring), bit exact.

    Args:
        A: M x K matrix; converted to float32 first (exact for float32/fp16/bf16 data; float64
            data is rounded to nearest once).
        B: K x N matrix, converted likewise.
        tile_elements: output elements computed at once (bounds the memory: about
            ``6 * 8 * tile_elements`` bytes of temporaries besides A, B and D).

    Returns:
        float32 array (M x N): for each element, the sequential fp32 FMA chain's result.
    """
    A = np.ascontiguousarray(A, dtype=np.float32)
    B = np.ascontiguousarray(B, dtype=np.float32)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"expected M x K and K x N matrices, got A {A.shape} and B {B.shape}")
    if tile_elements < 1:
        raise ValueError(f"tile_elements must be >= 1, got {tile_elements}")
    M, K = A.shape
    N = B.shape[1]
    out = np.empty((M, N), np.float32)
    cols = min(N, tile_elements)
    rows = max(1, min(M, tile_elements // cols))
    with np.errstate(over="ignore", invalid="ignore"):
        for i0 in range(0, M, rows):
            a = A[i0 : i0 + rows]
            for j0 in range(0, N, cols):
                b = B[:, j0 : j0 + cols]
                shape = (a.shape[0], b.shape[1])
                d = np.zeros(shape, np.float32)
                p, s = np.empty(shape), np.empty(shape)
                scratch = np.empty(shape, np.int64)
                for k in range(K):
                    # exact: the fp32 factors are widened to float64 before they multiply
                    # (no float64 copy of A or B: it made the working set grow with K)
                    np.multiply(a[:, k, None], b[None, k, :], out=p, dtype=np.float64)
                    _fma_step(p, d, s, scratch)
                out[i0 : i0 + rows, j0 : j0 + cols] = d
    return canonicalize_nan(out)
