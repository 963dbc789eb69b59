"""An independent CPU reference of Ozaki scheme II's specification, for the checks of its
kernels (:mod:`precision.gemm.ozaki_cuda_check` on a GPU, :mod:`precision.gemm.ozaki_host` on
the CPU).

Written from the specification in docs/ozaki.md with exact integer numpy and Python integers,
not from the kernels: line statistics (:func:`ref_stats`), the scaled integers
(:func:`ref_scaled`), and the output (:func:`reference`): ``RN(T·2^-(s_i+t_j))`` with
``T = y_A @ y_B`` computed exactly (signed base-2^21 digits, float64 BLAS products below 2^53,
32-bit limbs; :func:`exact_product_limbs`) and rounded by
:func:`precision.gemm.ozaki.round_limbs`, special values by
:func:`precision.gemm.ozaki.apply_specials`. :func:`make_operands` draws the checks' inputs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from precision.distributions import get_distribution
from precision.gemm.ozaki import (
    MODULI,
    LineStats,
    apply_specials,
    crt_constants,
    crt_q2,
    normalize_limbs,
    round_limbs,
)
from precision.gemm.ozaki import shifts_from_bounds as line_shifts

#: The low 32 bits of an integer: one limb of the exact products.
MASK32 = (1 << 32) - 1

#: a_ij = (U(0,1) - 0.5)·exp(phi·N(0,1)) with a correctly rounded exp (float64), as the runner
#: draws it: the same bits on any host.
exp_rand = get_distribution("exp_rand").func


def sym_mod(x: np.ndarray, m: int) -> np.ndarray:
    """Symmetric residue in [-floor(m/2), ceil(m/2) - 1] of int64 ``x``."""
    r = np.mod(x, m)
    return np.where(r > (m - 1) // 2, r - m, r)


def sym_int(v: int, m: int) -> int:
    """Symmetric residue in [-floor(m/2), ceil(m/2) - 1] of the Python integer ``v``."""
    r = v % m
    return r - m if r > (m - 1) // 2 else r


def ref_stats(X: np.ndarray, axis: int) -> dict[str, np.ndarray]:
    """The spec's line statistics of rows (``axis=1``) or columns (``axis=0``): exact numpy
    integers (frexp exponents and mantissas are exact; mu = ceil(256 f) exactly)."""
    Xl = X if axis == 1 else X.T
    fin = np.isfinite(Xl)
    mag = np.where(fin, np.abs(Xl), 0.0)
    f, e = np.frexp(mag)
    e = e.astype(np.int64)
    nz = mag > 0
    count = nz.sum(axis=1)
    emax = np.where(count > 0, np.where(nz, e, -(10**6)).max(axis=1), 0)
    mu = np.ceil(f * 256.0).astype(np.int64)
    mu2 = mu * mu
    d = 2 * (e - emax[:, None]) + 24
    k = np.clip(-d, 0, 17)
    down = np.where(k >= 17, 1, (mu2 + (np.int64(1) << k) - 1) >> k)
    term = np.where(d >= 0, mu2 << np.clip(d, 0, 24), down)
    nfix = np.where(nz, term, 0).sum(axis=1)
    return {
        "emax": emax,
        "esum": np.where(nz, e, 0).sum(axis=1),
        "count": count,
        "nfix": nfix,
        "bad": ~fin.all(axis=1),
        "zero": count == 0,
    }


def ref_scaled(X: np.ndarray, s: np.ndarray, axis: int) -> np.ndarray:
    """``rint(X·2^s)`` per line as int64 (0 for NaN/Inf): the float64 scaling is exact or
    underflows below 1/2, and the integer-valued result (<= 2^62) converts exactly."""
    sx = s[:, None] if axis == 1 else s[None, :]
    with np.errstate(invalid="ignore", over="ignore"):
        y = np.rint(np.ldexp(np.where(np.isfinite(X), X, 0.0), sx))
    assert np.all(np.abs(y) <= 2.0**62), "scaled integer above 2^62"
    return y.astype(np.int64)


def line_stats(st: dict[str, np.ndarray]) -> LineStats:
    """:class:`LineStats` from :func:`ref_stats` (with ``nfix`` when the class has it)."""
    names = [f for f in LineStats.__dataclass_fields__ if f in st]
    return LineStats(**{f: st[f] for f in names})


def _digits21(y: np.ndarray) -> list[np.ndarray]:
    """Signed base-2^21 digits (float64) of int64 ``y``: d0, d1 in [-2^20, 2^20), d2 the rest."""
    out = []
    v = y.copy()
    for _ in range(2):
        d = ((v & ((1 << 21) - 1)) ^ (1 << 20)) - (1 << 20)
        out.append(d.astype(np.float64))
        v = (v - d) >> 21
    out.append(v.astype(np.float64))
    return out


def exact_product_limbs(ya: np.ndarray, yb: np.ndarray, nl: int = 6) -> list[np.ndarray]:
    """``T = ya @ yb`` exactly, as ``nl`` normalized 32-bit limbs (int64, top signed).
    Digit products are below 2^41 and K <= 2^11, so every float64 BLAS sum is exact."""
    assert ya.shape[1] <= 2048
    da, db = _digits21(ya), _digits21(yb)
    shape = (ya.shape[0], yb.shape[1])
    limbs = [np.zeros(shape, dtype=np.int64) for _ in range(nl)]
    for g in range(5):
        G = np.zeros(shape, dtype=np.int64)
        for p in range(3):
            q = g - p
            if 0 <= q < 3:
                G += (da[p] @ db[q]).astype(np.int64)
        t, sh = divmod(21 * g, 32)
        limbs[t] += (G & MASK32) << sh
        limbs[t + 1] += (G >> 32) << sh
        normalize_limbs(limbs)
    return limbs


def limbs_to_float(limbs: list[np.ndarray]) -> np.ndarray:
    out = np.zeros(limbs[0].shape)
    for t in range(len(limbs) - 1, -1, -1):
        out = out + limbs[t].astype(np.float64) * 2.0 ** (32 * t)
    return out


def reference(
    A: np.ndarray, B: np.ndarray, L: int, target: str, crt_samples: int = 64
) -> dict[str, Any]:
    """The spec's result for ``L`` moduli (D, stats, shifts, scaled integers, CRT checks)."""
    K = A.shape[1]
    q2 = crt_q2(MODULI[:L], K)
    sa, sb = ref_stats(A, 1), ref_stats(B, 0)
    s_a = line_shifts(sa["emax"], sa["nfix"], sa["zero"], q2)
    s_b = line_shifts(sb["emax"], sb["nfix"], sb["zero"], q2)
    ya, yb = ref_scaled(A, s_a, 1), ref_scaled(B, s_b, 0)
    limbs = exact_product_limbs(ya, yb)
    e = -(s_a[:, None] + s_b[None, :])
    D = round_limbs(limbs, e, target)
    hs = [line_stats(s) for s in (sa, sb)]
    apply_specials(D, A, B, hs[0], hs[1], target)
    moduli = MODULI[:L]
    Mprod = math.prod(moduli)
    Mb = (Mprod * ((1 << 19) - 1)) >> 20
    ratio = float(np.max(np.abs(limbs_to_float(limbs)))) / float(Mb)
    # CRT with Python ints on sampled outputs: residues -> products -> c_l -> S -> q -> T.
    rng = np.random.default_rng(1)
    W, u, _ = crt_constants(moduli)
    w = [sum(int(W[li, t]) << (32 * t) for t in range(W.shape[1])) for li in range(L)]
    crt_bad = 0
    for _ in range(crt_samples):
        i, j = int(rng.integers(A.shape[0])), int(rng.integers(B.shape[1]))
        a = [int(v) for v in ya[i]]
        b = [int(v) for v in yb[:, j]]
        T = sum(x * y for x, y in zip(a, b, strict=True))
        S = 0
        for li, m in enumerate(moduli):
            C = sum(sym_int(x, m) * sym_int(y, m) for x, y in zip(a, b, strict=True))
            S += sym_int(C, m) * w[li]
        q = (2 * S + Mprod) // (2 * Mprod)  # nearest integer (no ties: |T| < M/2)
        if S - q * Mprod != T:
            crt_bad += 1
    return {"D": D, "sa": sa, "sb": sb, "s_a": s_a, "s_b": s_b, "ya": ya, "yb": yb,
            "q2": q2, "t_over_mb": ratio, "crt_bad": crt_bad}  # fmt: skip


def make_operands(n: int, phi: float, seed: int, specials: bool) -> tuple[np.ndarray, np.ndarray]:
    """exp_rand operands a = (U(0,1) - 0.5)·exp(phi·N(0,1)), n x n; ``specials`` adds NaN,
    ±Inf, an all-Inf row, zero rows/columns and subnormals."""
    rng = np.random.default_rng(seed)
    A = exp_rand(rng, (n, n), phi=phi)
    B = exp_rand(rng, (n, n), phi=phi)
    if specials:  # indices taken modulo n (n >= 16)
        A[3, 5] = np.nan
        A[10, 0] = np.inf
        A[70 % n, :] = -np.inf
        A[50 % n, :] = 0.0
        A[60 % n, 1:4] = [5e-310, -3e-320, 2.2e-308]
        A[61 % n, :] = 1e-310 * (rng.random(n) - 0.5)  # a subnormal row
        B[7, 20 % n] = -np.inf
        B[:, 30 % n] = 0.0
        B[2, 40 % n] = -4e-320
    return A, B


def float_bits(x: np.ndarray) -> np.ndarray:
    """The bits of a float64 (uint64) or float32 (uint32) array, for bit-for-bit comparisons."""
    return x.view(np.uint64 if x.dtype == np.float64 else np.uint32)
