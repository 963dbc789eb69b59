"""NaN payloads of DMMA (f64 ``mma.sync`` / WMMA) outputs, as recorded on the H200 (sm_90).

DMMA computes ``d = c``; for k = 0, 1, ..., K-1: ``d = RN(a_k b_k + d)`` (a chain of binary64
FMAs, :func:`precision.tensorcore.dmma.fma_chain`). Values match the hardware bit for bit, but
NumPy gives every NaN its own default payload. The hardware's NaN bits follow, at each step::

    if any of (b_k, d, a_k) is a NaN:  d = (the first NaN in the order b_k, d, a_k) | 1 << 51
    elif the FMA is invalid (Inf*0, or Inf - Inf):  d = 0xFFF8000000000000
    else:  d = RN(a_k b_k + d)

so a NaN operand keeps its sign and payload and is quieted (bit 51, the quiet bit, set; the
other 63 bits unchanged), the B operand beats the running accumulator, which beats the A operand,
and an invalid operation with no NaN operand makes the negative default NaN (sign 1, quiet bit
only). An invalid product with a NaN addend (Inf*0 + NaN) returns the NaN addend.

Evidence: tests/data/sm90_mma/{m8n8k4,m16n8k4,m16n8k8,m16n8k16}_f64_f64_f64_f64.npz and
tests/data/sm90_wmma/f64_f64_m8n8k4.npz: the rule gives every one of their 7325 NaN outputs
(886 + 860 + 1685 + 3014 + 880) exactly, 225 signalling NaN operands among the inputs. The
other five fixed priority orders of (a_k, b_k, d) miss 66 to 162 of them and "the largest
payload wins" misses 104 (precision/probe/scripts/dmma_nan_rule.py). The orders are separated
by 176 steps where the accumulator's NaN met a NaN b_k (103) or a_k (73) with another payload;
b_k against a_k directly rests on one output where all three met (b_k won), plus transitivity.
The rule is not "product first" (a NaN from a_k or b_k through the product, then the addition
choosing between product and accumulator): the accumulator sits between b_k and a_k.
"""

from __future__ import annotations

import math

import numpy as np

from precision.tensorcore.batch import flat_batch
from precision.tensorcore.dmma import fma

__all__ = ["DEFAULT_NAN", "QUIET_BIT", "nan_payloads"]

#: NaN that DMMA makes for an invalid operation (Inf*0, Inf - Inf) with no NaN operand.
DEFAULT_NAN = np.uint64(0xFFF8000000000000)
#: The quiet bit of a binary64 NaN (top significand bit), set on a propagated NaN operand.
QUIET_BIT = np.uint64(1 << 51)
_ABS = np.uint64(0x7FFFFFFFFFFFFFFF)
_INF = np.uint64(0x7FF0000000000000)
_CHUNK_ELEMENTS = 1 << 20  # [outputs, K] gathers per rescanned chunk: 8 MiB per operand


def _is_nan(u: np.ndarray) -> np.ndarray:
    return (u & _ABS) > _INF


def nan_payloads(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray, *, overwrite: bool = False
) -> np.ndarray:
    """``d`` with the bits of its NaN outputs replaced by DMMA's (module docstring).

    a ``[..., M, K]``, b ``[..., K, N]``, c ``[..., M, N]`` are the float64 operands of the FMA
    chain in increasing k and ``d`` its float64 result ``[..., M, N]`` (batch axes broadcast
    to ``d``'s). Only NaN outputs are rewritten: for those the chain is rerun (vectorised over
    the NaN outputs, a loop over K) with the hardware's NaN choice at each step. Non-NaN
    outputs are returned unchanged. Returns a new float64 array, or ``d`` itself, rewritten in
    place, with ``overwrite=True`` (``d`` then has to be a C-contiguous float64 array).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    if overwrite and not (isinstance(d, np.ndarray) and d.dtype == np.float64):
        raise TypeError("nan_payloads: overwrite=True needs d as a float64 array")
    if overwrite and not d.flags.c_contiguous:
        raise ValueError("nan_payloads: overwrite=True needs a C-contiguous d")
    d = d if overwrite else np.array(d, dtype=np.float64)  # (a copy: rewritten in place)
    out = d.view(np.uint64)
    # NaN positions, scanned in chunks (no output-sized temporaries)
    flat_out = out.reshape(-1)
    found = [
        s + np.flatnonzero(_is_nan(flat_out[s : s + _CHUNK_ELEMENTS]))
        for s in range(0, flat_out.size, _CHUNK_ELEMENTS)
    ]
    flat = np.concatenate(found) if found else np.zeros(0, dtype=np.intp)
    if flat.size == 0:
        return d
    batch, (m, n), k = d.shape[:-2], d.shape[-2:], a.shape[-1]
    if a.shape[-2] != m or b.shape[-2:] != (k, n) or c.shape[-2:] != (m, n):
        raise ValueError(
            f"nan_payloads: shapes do not chain: a {a.shape}, b {b.shape}, c {c.shape}, "
            f"d {d.shape} (expected a [..., M, K], b [..., K, N], c and d [..., M, N])"
        )
    nb = math.prod(batch)
    # each operand over its own batch entries (a broadcast is not materialised): output batch
    # entry e reads entry ix[e] of x
    (a3, ia), (b3, ib), (c3, ic) = (flat_batch(x, batch) for x in (a, b, c))
    a3, b3, c3 = a3.view(np.uint64), b3.view(np.uint64), c3.view(np.uint64)
    bi, rest = np.divmod(flat, m * n)
    ri, ci = np.divmod(rest, n)
    res = out.reshape(nb, m, n)
    chunk = max(1, _CHUNK_ELEMENTS // max(1, k))
    for s in range(0, flat.size, chunk):
        t, i, j = bi[s : s + chunk], ri[s : s + chunk], ci[s : s + chunk]
        ak = a3[ia[t], i, :]  # [n, K]
        bk = b3[ib[t], :, j]  # [n, K]
        acc = c3[ic[t], i, j].copy()
        for kk in range(k):
            x, y = ak[:, kk], bk[:, kk]
            with np.errstate(all="ignore"):
                nxt = fma(x.view(np.float64), y.view(np.float64), acc.view(np.float64))
            nxt = nxt.view(np.uint64)
            nxt = np.where(_is_nan(nxt), DEFAULT_NAN, nxt)  # invalid with no NaN operand
            # Priority b_k > acc > a_k: apply the lowest first, so higher ones overwrite.
            for op in (x, acc, y):
                nxt = np.where(_is_nan(op), op | QUIET_BIT, nxt)
            acc = nxt
        res[t, i, j] = acc
    return d
