"""Check of the Ozaki-II GPU kernels (``precision/kernels/ozaki2.cu`` through
:func:`precision.gemm.ozaki_cuda.ozaki2_cuda`) against an independent CPU reference of the
spec, and their phase timings.

``python -m precision.gemm.ozaki_cuda_check`` (GPU) runs, for n in {16, 100, 257, 1024} and
phi in {0, 1, 4}, fp64 with 15 moduli and fp32 with 8 moduli (plus NaN/Inf/zero/subnormal
cases and one ``terms="auto"`` case):

* line statistics (emax, esum, count, nfix, bad) and shifts against :func:`ref_stats` /
  :func:`precision.gemm.ozaki.shifts_from_bounds` (exact integer numpy);
* the int8 residue planes of A and of B's first column block against ``y mod m``;
* the output, bit for bit, against ``RN(T·2^-(s_i+t_j))`` with ``T = y_A @ y_B`` computed
  exactly (signed base-2^21 digits, float64 BLAS products below 2^53, 32-bit limbs) and
  rounded by :func:`precision.gemm.ozaki.round_limbs`; special values by
  :func:`precision.gemm.ozaki.apply_specials`. The CRT itself (residue products, ``c_l``,
  ``S``, ``q``) is replayed with Python ints on sampled outputs, and ``max |T| / Mb`` is
  reported (the Cauchy-Schwarz bound says <= 1).

Then it times the phases at n = 8192 and 16384 (15 moduli, fp64) next to cuBLAS DGEMM.
``--cpu`` runs only the CPU proofs-by-exhaustion of the kernels' arithmetic (no GPU): the fp32
residue step for every t in [-2^22, 2^22) and every modulus, the digit and int32-reader
bounds, and the quotient estimate from the limbs. Results go to stdout and, with ``$OUT`` set,
``$OUT/ozaki_cuda_check.json``. Exit status 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import sys
import time
import types
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np

from precision.console import run_main
from precision.distributions import get_distribution
from precision.gemm.ozaki import (
    MODULI,
    TARGETS,
    LineStats,
    apply_specials,
    auto_terms,
    crt_constants,
    crt_q2,
    normalize_limbs,
    round_limbs,
)
from precision.gemm.ozaki import shifts_from_bounds as line_shifts

_MASK = (1 << 32) - 1

#: a_ij = (U(0,1) - 0.5)·exp(phi·N(0,1)) with a correctly rounded exp (float64), as the runner
#: draws it: the same bits on any host.
_exp_rand = get_distribution("exp_rand").func


def sym_mod(x: np.ndarray, m: int) -> np.ndarray:
    """Symmetric residue in [-floor(m/2), ceil(m/2) - 1] of int64 ``x``."""
    r = np.mod(x, m)
    return np.where(r > (m - 1) // 2, r - m, r)


# ------------------------------------------------------------------------- CPU reference


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


def _line_stats(st: dict[str, np.ndarray]) -> LineStats:
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
        limbs[t] += (G & _MASK) << sh
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
    hs = [_line_stats(s) for s in (sa, sb)]
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
            C = sum(_sym(x, m) * _sym(y, m) for x, y in zip(a, b, strict=True))
            S += _sym(C, m) * w[li]
        q = (2 * S + Mprod) // (2 * Mprod)  # nearest integer (no ties: |T| < M/2)
        if S - q * Mprod != T:
            crt_bad += 1
    return {"D": D, "sa": sa, "sb": sb, "s_a": s_a, "s_b": s_b, "ya": ya, "yb": yb,
            "q2": q2, "t_over_mb": ratio, "crt_bad": crt_bad}  # fmt: skip


def _sym(v: int, m: int) -> int:
    r = v % m
    return r - m if r > (m - 1) // 2 else r


def make_operands(n: int, phi: float, seed: int, specials: bool) -> tuple[np.ndarray, np.ndarray]:
    """exp_rand operands a = (U(0,1) - 0.5)·exp(phi·N(0,1)), n x n; ``specials`` adds NaN,
    ±Inf, an all-Inf row, zero rows/columns and subnormals."""
    rng = np.random.default_rng(seed)
    A = _exp_rand(rng, (n, n), phi=phi)
    B = _exp_rand(rng, (n, n), phi=phi)
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


# --------------------------------------------------------------------------- GPU checks


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint64 if x.dtype == np.float64 else np.uint32)


def check_case(
    cp: Any, n: int, phi: float, target: str, terms: int | str, specials: bool, gemm: str
) -> dict[str, Any]:
    from precision.gemm import ozaki_cuda as oc

    A, B = make_operands(n, phi, seed=1000 * n + int(10 * phi), specials=specials)
    Ad, Bd = cp.asarray(A), cp.asarray(B)
    D, run = oc.ozaki2_cuda(Ad, Bd, target=target, terms=terms, gemm=gemm)
    L = run.plan.terms
    ref = reference(A, B, L, target)
    out: dict[str, Any] = {"n": n, "phi": phi, "target": target, "terms": str(terms), "L": L,
                           "gemm": gemm, "specials": specials, "q2": ref["q2"],
                           "t_over_mb": ref["t_over_mb"], "crt_bad": ref["crt_bad"]}  # fmt: skip
    out["q2_match"] = run.q2 == ref["q2"]
    Dh = D.get()
    out["d_diff"] = int(np.count_nonzero(_bits(Dh) != _bits(ref["D"])))
    # stats and shifts, straight from the kernels
    dsa = oc.device_line_stats(cp, Ad, 1, ref["q2"])
    dsb = oc.device_line_stats(cp, Bd, 0, ref["q2"])
    stat_diff = 0
    for ds, rs, sh in ((dsa, ref["sa"], ref["s_a"]), (dsb, ref["sb"], ref["s_b"])):
        hs = ds.to_host()
        stat_diff += int(np.count_nonzero(hs.emax != rs["emax"]))
        stat_diff += int(np.count_nonzero(hs.esum != rs["esum"]))
        stat_diff += int(np.count_nonzero(hs.count != rs["count"]))
        stat_diff += int(np.count_nonzero(hs.bad != rs["bad"]))
        stat_diff += int(np.count_nonzero(hs.nfix != rs["nfix"]))
        stat_diff += int(np.count_nonzero(ds.shift.get() != sh))
    out["stat_diff"] = stat_diff
    # residue planes (cuBLAS padding: K to 16; B's columns 0..n-1 as one block)
    oc._set_constants(MODULI[:L])
    kp = -(-n // 16) * 16
    nbp = kp
    ares = cp.zeros((L, n, kp), dtype=cp.int8)
    oc.residues_rows(cp, Ad, dsa.shift, L, n, kp, ares)
    bres = cp.zeros((L, nbp, kp), dtype=cp.int8)
    oc.residues_cols(cp, Bd, dsb.shift, L, 0, n, nbp, kp, bres)
    # the fused kernel for A's rows (statistics, shifts and residues in one read; 128-padded)
    mpf, kpf = -(-n // 128) * 128, -(-n // 128) * 128
    afused = cp.full((L, mpf, kpf), 99, dtype=cp.int8)  # every byte must be overwritten
    dsf = oc.rows_fused(cp, Ad, ref["q2"], L, mpf, kpf, afused)
    hs = dsf.to_host()
    rs = ref["sa"]
    for got, want in (
        (hs.emax, rs["emax"]),
        (hs.esum, rs["esum"]),
        (hs.count, rs["count"]),
        (hs.bad, rs["bad"]),
        (hs.nfix, rs["nfix"]),
        (dsf.shift.get(), ref["s_a"]),
    ):
        stat_diff += int(np.count_nonzero(got != want))  # fmt: skip
    out["stat_diff"] = stat_diff
    ah, bh, fh = ares.get(), bres.get(), afused.get()
    res_diff = 0
    for li, m in enumerate(MODULI[:L]):
        ra = np.zeros((n, kp), dtype=np.int64)
        ra[:, :n] = sym_mod(ref["ya"], m)
        rb = np.zeros((nbp, kp), dtype=np.int64)
        rb[:n, :n] = sym_mod(ref["yb"].T, m)
        rf = np.zeros((mpf, kpf), dtype=np.int64)
        rf[:n, :n] = sym_mod(ref["ya"], m)
        res_diff += int(np.count_nonzero(ah[li] != ra)) + int(np.count_nonzero(bh[li] != rb))
        res_diff += int(np.count_nonzero(fh[li] != rf))
    out["res_diff"] = res_diff
    out["ok"] = bool(
        out["d_diff"] == 0 and stat_diff == 0 and res_diff == 0 and out["crt_bad"] == 0
        and out["q2_match"] and ref["t_over_mb"] <= 1.0
    )  # fmt: skip
    return out


def time_case(cp: Any, n: int, L: int, gemm: str, reps: int = 3) -> dict[str, Any]:
    from precision.gemm import ozaki_cuda as oc

    rs = cp.random.RandomState(n)  # exp_rand, phi = 0.5, generated on the device
    A = (rs.random_sample((n, n)) - 0.5) * cp.exp(0.5 * rs.standard_normal((n, n)))
    B = (rs.random_sample((n, n)) - 0.5) * cp.exp(0.5 * rs.standard_normal((n, n)))
    oc.ozaki2_cuda(A, B, target="fp64", terms=L, gemm=gemm)  # warm-up (build, cuBLAS)
    phases: list[dict[str, float]] = []
    for _ in range(reps):
        _, run = oc.ozaki2_cuda(A, B, target="fp64", terms=L, gemm=gemm, timed=True)
        phases.append(run.phase_ms)
    totals = []
    for _ in range(reps):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        oc.ozaki2_cuda(A, B, target="fp64", terms=L, gemm=gemm)
        e1.record()
        e1.synchronize()
        totals.append(cp.cuda.get_elapsed_time(e0, e1))
    cp.matmul(A, B)
    dg = []
    for _ in range(reps):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        cp.matmul(A, B)
        e1.record()
        e1.synchronize()
        dg.append(cp.cuda.get_elapsed_time(e0, e1))
    med = {k: float(np.median([p.get(k, 0.0) for p in phases])) for k in phases[0]}
    total = float(np.median(totals))
    dgemm = float(np.median(dg))
    return {"n": n, "L": L, "gemm": gemm, "phase_ms": med, "total_ms": total,
            "dgemm_ms": dgemm, "speedup_vs_dgemm": dgemm / total, "nb": run.nb,
            "workspace_gb": run.workspace_bytes / 1e9,
            "tflops": 2.0 * n**3 / total / 1e9}  # fmt: skip


# ------------------------------------------------------------------ CPU arithmetic proofs


def _inv_m32(m: int) -> tuple[int, int]:
    """fl32(1/m) = a·2^-b exactly (a integer)."""
    f = float(np.float32(1.0) / np.float32(m))
    mant, ex = math.frexp(f)
    return int(mant * 2**24), 24 - ex


def cpu_checks() -> dict[str, Any]:
    """Exhaustive / randomized CPU checks of the kernels' integer and fp32 arithmetic."""
    res: dict[str, Any] = {}
    # 1. fp32 residue step: q = rint_even(t·fl(1/m)) (the FMA's single rounding of the exact
    # product), r = t - q·m, equals the symmetric residue for every |t| <= 2^22, odd m. As
    # r = t - q·m is congruent to t by construction, it is the symmetric residue exactly when
    # it lies in [-(m-1)/2, (m-1)/2]: that range is checked, in chunks that stay in cache.
    bad = 0
    for m in MODULI:
        if m == 256:
            continue
        a, b = _inv_m32(m)
        half = np.int64(1) << (b - 1)
        for start in range(-(1 << 22), 1 << 22, 1 << 19):
            ts = np.arange(start, start + (1 << 19), dtype=np.int64)
            prod = ts * a  # exact: < 2^46
            q = prod >> b  # floor
            rem = prod - (q << b)
            q += (rem > half) | ((rem == half) & (q & 1 == 1))
            r = ts - q * m
            bad += int(np.count_nonzero(np.abs(r) > (m - 1) // 2))
    res["residue_step_mismatches"] = bad
    # 2. digits: y = sum d_p 2^(14p), |t| < 2^22 for every modulus (random and extreme y).
    rng = np.random.default_rng(7)
    y = rng.integers(-(2**62), 2**62, size=200000, dtype=np.int64, endpoint=True)
    y = np.concatenate([y, np.array([2**62, -(2**62), 0, 1, -1, 2**61 + 12345, -(2**56)])])
    v = y.copy()
    d = []
    for _ in range(4):
        dp = ((v & 0x3FFF) ^ 0x2000) - 0x2000
        d.append(dp)
        v = (v - dp) >> 14
    d.append(v)
    recon = sum(dp << (14 * p) for p, dp in enumerate(d[:4])) + (d[4] << 56)
    dig_bad = int(np.count_nonzero(recon != y)) + int(np.max(np.abs(d[4])) > 65)
    tmax = 0
    for m in MODULI:
        if m == 256:
            continue
        c = [_sym(1 << (14 * p), m) for p in range(5)]
        tt = d[0] + sum(d[p] * c[p] for p in range(1, 5))
        dig_bad += int(np.count_nonzero(sym_mod(tt, m) != sym_mod(y, m)))
        tmax = max(tmax, int(np.max(np.abs(tt))))
    res["digit_mismatches"] = dig_bad
    res["digit_t_max_log2"] = math.log2(tmax)
    # 3. int32 reader: hi = ((C >> 15) + 1) >> 1, t = C + hi·(c16 - 65536) (mod 2^32).
    C = rng.integers(-(2**31), 2**31, size=200000, dtype=np.int64)
    C = np.concatenate([C, np.array([-(2**31), 2**31 - 1, 2**31 - 2**14, -(2**15), 2**15 - 1])])
    hi = ((C >> 15) + 1) >> 1
    rd_bad = 0
    for m in MODULI:
        if m == 256:
            continue
        c16 = _sym(1 << 16, m)
        tt = (C + hi * (c16 - 65536) + 2**31) % 2**32 - 2**31  # int32 wrap
        rd_bad += int(np.count_nonzero((tt < -(2**22)) | (tt >= 2**22)))
        rd_bad += int(np.count_nonzero(sym_mod(tt, m) != sym_mod(C, m)))
    res["int32_reader_mismatches"] = rd_bad
    # 4. quotient from the limbs of S' = sum (r_l + 128) w_l (kernel order, float64).
    q_bad = 0
    for L in (2, 8, 15, 20):
        moduli = MODULI[:L]
        W, _, _ = crt_constants(moduli)
        Mprod = math.prod(moduli)
        inv_m = float(Fraction(1, Mprod))
        nl = W.shape[1]
        rp = rng.integers(0, 256, size=(20000, L), dtype=np.int64)
        rp[:5] = 0
        rp[5:10] = 255
        acc = [(rp * W[:, t][None, :]).sum(axis=1) for t in range(nl)]
        for t in range(nl - 1):
            acc[t + 1] += acc[t] >> 32
            acc[t] &= _MASK
        s = np.zeros(len(rp))
        for t in range(nl - 1, -1, -1):
            s = s + acc[t].astype(np.float64) * 2.0 ** (32 * t)
        q = np.rint((s - 128.0) * inv_m).astype(np.int64)
        w = [sum(int(W[li, t]) << (32 * t) for t in range(nl)) for li in range(L)]
        Mb = (Mprod * ((1 << 19) - 1)) >> 20
        for row, qq in zip(rp.tolist(), q.tolist(), strict=True):
            X = sum(r * wl for r, wl in zip(row, w, strict=True)) - 128  # S' - 128
            qe = (2 * X + Mprod) // (2 * Mprod)
            if abs(X - qe * Mprod) <= Mb and qe != qq:
                q_bad += 1
    res["quotient_mismatches"] = q_bad
    res["ok"] = bad == 0 and dig_bad == 0 and rd_bad == 0 and q_bad == 0
    return res


# ------------------------------------------------------- host replay of the kernel source

#: Shims that let g++ compile ozaki2.cu as host code (intrinsics by their IEEE definitions:
#: fmaf, RN add/mul through volatile, llrint; blockIdx/threadIdx as globals) so the kernels
#: run on the CPU (serially; the block-cooperative ones with one fiber per CUDA thread).
_HOST_SHIM = r"""
// Host shims to compile precision/kernels/ozaki2.cu with g++ and run kernels serially.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
using std::isfinite;
using std::ldexp;
using std::max;
using std::min;
using std::scalbn;
#include <algorithm>
#define OZ_HOST_SHIM 1
#define __device__
#define __launch_bounds__(...)
#define __forceinline__ inline
#define __global__
#define __constant__
#define __restrict__
#define __shared__ static
struct dim3s {
  unsigned x, y, z;
};
extern dim3s blockIdx, blockDim, gridDim;
extern thread_local dim3s threadIdx;
struct int4 {
  int x, y, z, w;
};
struct double2 {
  double x, y;
};
struct float4 {
  float x, y, z, w;
};
inline double2 make_double2(double a, double b) { return {a, b}; }
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline float __int_as_float(int i) {
  float f;
  memcpy(&f, &i, 4);
  return f;
}
inline int __float_as_int(float f) {
  int i;
  memcpy(&i, &f, 4);
  return i;
}
inline long long __double_as_longlong(double d) {
  long long i;
  memcpy(&i, &d, 8);
  return i;
}
inline double __longlong_as_double(long long i) {
  double d;
  memcpy(&d, &i, 8);
  return d;
}
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline int __double2loint(double d) {
  unsigned long long b;
  memcpy(&b, &d, 8);
  return (int)(unsigned)(b & 0xFFFFFFFFull);
}
inline unsigned long long __double2ull_ru(double x) { return (unsigned long long)ceil(x); }
inline double __hiloint2double(int hi, int lo) {
  unsigned long long b = ((unsigned long long)(unsigned)hi << 32) | (unsigned)lo;
  double d;
  memcpy(&d, &b, 8);
  return d;
}
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __fsub_rn(float a, float b) {
  volatile float r = a - b;
  return r;
}
inline double __dadd_rn(double a, double b) {
  volatile double r = a + b;
  return r;
}
inline double __dsub_rn(double a, double b) {
  volatile double r = a - b;
  return r;
}
inline double __dmul_rn(double a, double b) {
  volatile double r = a * b;
  return r;
}
inline long long __double2ll_rn(double x) { return llrint(x); }
inline double __ull2double_rn(unsigned long long x) { return (double)x; }
inline float __ull2float_rn(unsigned long long x) { return (float)x; }
inline float __fmul_rn(float a, float b) {
  volatile float r = a * b;
  return r;
}
inline float __int2float_rn(int i) { return (float)i; }
inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned long long v = ((unsigned long long)y << 32) | x;
  unsigned r = 0;
  for (int n = 0; n < 4; ++n) {
    unsigned sel = (s >> (4 * n)) & 7;
    r |= (unsigned)((v >> (8 * sel)) & 0xFF) << (8 * n);
  }
  return r;
}
template <typename T>
inline T __ldg(const T* p) {
  return *p;
}
// Block-cooperative emulation for oz2_stats_rows / oz2_rows_fused: when g_threaded, every
// thread of the block is a fiber (ucontext) of one OS thread. __syncthreads yields to the
// scheduler, which runs the block's fibers in turn up to their next barrier, so one round of the
// scheduler is one barrier interval. Warp shuffles / votes go through shared slots between two
// barriers (all threads of a block call them uniformly in those kernels). Serial launches: no-ops.
extern bool g_threaded;
extern unsigned long long g_slot[1024];
#if defined(__x86_64__) && !defined(OZ_HOST_UCONTEXT)
// A fiber switch without ucontext: swapcontext saves and restores the signal mask with a
// system call, which made the block-cooperative kernels spend most of their time in the
// kernel. This one pushes the callee-saved registers (System V x86-64) on the current
// stack, stores its pointer in *save_sp, loads load_sp and pops the other fiber's registers.
#define OZ_FAST_FIBERS 1
extern "C" void oz_fiber_switch(void** save_sp, void* load_sp);
struct BlockBarrier {
  void* scheduler = nullptr;
  void** current = nullptr;
  void wait() { oz_fiber_switch(current, scheduler); }
};
#else
#define OZ_FAST_FIBERS 0
#include <ucontext.h>
struct BlockBarrier {
  ucontext_t scheduler;
  ucontext_t* current = nullptr;
  void wait() { swapcontext(current, &scheduler); }
};
#endif
extern BlockBarrier g_bar;
inline void __syncthreads() {
  if (g_threaded) g_bar.wait();
}
template <typename T>
inline T __shfl_xor_sync(unsigned, T v, int o) {
  if (!g_threaded) return v;
  unsigned long long b = 0;
  memcpy(&b, &v, sizeof(T));
  g_slot[threadIdx.x] = b;
  g_bar.wait();
  b = g_slot[threadIdx.x ^ (unsigned)o];
  g_bar.wait();
  T r;
  memcpy(&r, &b, sizeof(T));
  return r;
}
inline int __any_sync(unsigned, int v) {
  if (!g_threaded) return v;
  g_slot[threadIdx.x] = v != 0;
  g_bar.wait();
  int r = 0;
  for (unsigned t = threadIdx.x & ~31u; t < (threadIdx.x & ~31u) + 32; ++t) r |= (int)g_slot[t];
  g_bar.wait();
  return r;
}
inline int atomicMax(int* a, int v) {
  int o = *a;
  if (v > o) *a = v;
  return o;
}
inline int atomicAdd(int* a, int v) {
  int o = *a;
  *a += v;
  return o;
}
inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
  auto o = *a;
  *a += v;
  return o;
}
inline int atomicOr(int* a, int v) {
  int o = *a;
  *a |= v;
  return o;
}
"""

#: Serial drivers: one call per (block, thread); oz2_residues_cols runs every block twice
#: (the first pass fills the shared tile, the second computes from it).
_HOST_HARNESS = r"""
#include "shim.h"
#include <functional>
#include <memory>
#include <vector>
dim3s blockIdx, blockDim, gridDim;
thread_local dim3s threadIdx;
bool g_threaded = false;
unsigned long long g_slot[1024];
BlockBarrier g_bar;
#include "ozaki2.cu"
#include "ozaki1.cu"
// A block-cooperative kernel body run as `blocks` blocks of nt CUDA threads, one fiber per CUDA
// thread, one block at a time (nt: any multiple of 32). Deterministic: fibers run in thread
// order within each barrier interval. Returns 1 if the threads of a block diverge at a barrier
// (some end while others wait: a deadlock on the GPU), else 0.
static std::function<void()> g_body;
static bool g_fiber_ended;
#if OZ_FAST_FIBERS
asm(".text\n.globl oz_fiber_switch\n.type oz_fiber_switch,@function\noz_fiber_switch:\n"
    " pushq %rbp\n pushq %rbx\n pushq %r12\n pushq %r13\n pushq %r14\n pushq %r15\n"
    " movq %rsp, (%rdi)\n movq %rsi, %rsp\n"
    " popq %r15\n popq %r14\n popq %r13\n popq %r12\n popq %rbx\n popq %rbp\n ret\n"
    ".size oz_fiber_switch, .-oz_fiber_switch\n");
// A fiber's first switch "returns" here; an ended fiber hands control back for good (the
// scheduler never resumes it).
static void fiber_entry() {
  g_body();
  g_fiber_ended = true;
  for (;;) g_bar.wait();
}
using Fiber = void*;  // the fiber's saved stack pointer
static void fiber_start(Fiber& fiber, char* stack, size_t size) {
  // registers popped by the first switch (zeros), then its return address; the slot above
  // is where a call would have left fiber_entry's own return address (16-byte alignment)
  void** sp = reinterpret_cast<void**>(reinterpret_cast<uintptr_t>(stack + size) & ~uintptr_t{15});
  *--sp = nullptr;
  *--sp = reinterpret_cast<void*>(&fiber_entry);
  for (int i = 0; i < 6; ++i) *--sp = nullptr;
  fiber = sp;
}
static void fiber_resume(Fiber& fiber) {
  g_bar.current = &fiber;
  oz_fiber_switch(&g_bar.scheduler, fiber);
}
#else
static void fiber_entry() {
  g_body();
  g_fiber_ended = true;
}
using Fiber = ucontext_t;
static void fiber_start(Fiber& fiber, char* stack, size_t size) {
  getcontext(&fiber);
  fiber.uc_stack.ss_sp = stack;
  fiber.uc_stack.ss_size = size;
  fiber.uc_link = &g_bar.scheduler;  // where it goes when it ends
  makecontext(&fiber, fiber_entry, 0);
}
static void fiber_resume(Fiber& fiber) {
  g_bar.current = &fiber;
  swapcontext(&g_bar.scheduler, &fiber);
}
#endif
template <class Body>
static int blocks_threaded(unsigned blocks, unsigned nt, Body body) {
  constexpr size_t kStack = 256 * 1024;
  blockDim = {nt, 1, 1};
  gridDim = {blocks, 1, 1};
  g_threaded = true;
  g_body = body;
  std::vector<Fiber> fib(nt);
  // Not value-initialised: a stack's pages are touched (and committed) only as deep as
  // the kernel goes.
  std::unique_ptr<char[]> stacks(new char[kStack * nt]);
  for (unsigned r = 0; r < blocks; ++r) {
    blockIdx = {r, 0, 0};
    for (unsigned t = 0; t < nt; ++t) fiber_start(fib[t], stacks.get() + kStack * t, kStack);
    // One round runs every fiber to its next barrier. All of them wait there (next round), or
    // all end (the block is done); anything else is a divergent barrier.
    for (unsigned ended = 0; ended < nt;) {
      ended = 0;
      for (unsigned t = 0; t < nt; ++t) {
        threadIdx = {t, 0, 0};
        // Returns when the fiber waits at a barrier, or when it ends (after fiber_entry has
        // set g_fiber_ended).
        g_fiber_ended = false;
        fiber_resume(fib[t]);
        ended += g_fiber_ended;
      }
      if (ended != 0 && ended != nt) {  // the rest wait at a barrier the ended ones never reach
        g_threaded = false;
        return 1;
      }
    }
  }
  g_threaded = false;
  return 0;
}
// Self-test of the fiber scheduler: a block whose threads exchange values through shared
// memory across a barrier (must see every other thread's write: returns 0 when all did), and
// one whose thread 0 skips the barrier (must be reported as divergent: returns 1).
extern "C" int barrier_selftest(int divergent) {
  static int slot[64], wrong;
  wrong = 0;
  int rc = blocks_threaded(2, 64, [=] {
    const unsigned t = threadIdx.x;
    slot[t] = (int)(t + 100 * blockIdx.x);
    if (divergent && t == 0) return;
    __syncthreads();
    if (slot[63 - t] != (int)(63 - t + 100 * blockIdx.x)) wrong = 1;
    __syncthreads();
  });
  return divergent ? rc : rc + 2 * wrong;
}
// oz2_stats_rows, one block per row (the GPU uses 256 threads).
extern "C" int stats_rows_threaded(const double* X, int rows, int cols, int q2, int has_q2,
                                    int* emax, long long* esum, int* count,
                                    unsigned long long* nfix, int* bad, long long* shift,
                                    unsigned nt) {
  return blocks_threaded((unsigned)rows, nt, [=] {
    oz2_stats_rows(X, rows, cols, q2, has_q2, emax, esum, count, nfix, bad, shift);
  });
}
// oz2_rows_fused, one block per padded row.
extern "C" int rows_fused_threaded(const double* A, int M, int K, int Mp, int Kp, int q2,
                                    int* emax, long long* esum, int* count,
                                    unsigned long long* nfix, int* bad, long long* shift, int L,
                                    int8_t* res, unsigned nt) {
  return blocks_threaded((unsigned)Mp, nt, [=] {
    oz2_rows_fused(A, M, K, Mp, Kp, q2, emax, esum, count, nfix, bad, shift, L, res);
  });
}
static void grid1(long long threads, void (*f)()) {
  blockDim = {256, 1, 1};
  long long nb = (threads + 255) / 256;
  for (long long b = 0; b < nb; ++b)
    for (unsigned t = 0; t < 256; ++t) {
      blockIdx = {(unsigned)b, 0, 0};
      threadIdx = {t, 0, 0};
      f();
    }
}
static const double* gA;
static int gM, gK, gMp, gKp, gL;
static const long long* gS;
static int8_t* gR;
static void res_rows_k() { oz2_residues_rows(gA, gM, gK, gMp, gKp, gS, gL, gR); }
extern "C" void residues_rows(const double* A, int M, int K, int Mp, int Kp, const long long* s,
                              int L, int8_t* r) {
  gA = A;
  gM = M;
  gK = K;
  gMp = Mp;
  gKp = Kp;
  gS = s;
  gL = L;
  gR = r;
  grid1((long long)Mp * (Kp / 4), res_rows_k);
}
static const void* gC;
static int gnb, gnbp, gc0, gN, gp, gemin, gNL, gi8, gf64;
static const long long *gsa, *gsb;
static void* gD;
template <int NL>
static void rk() {
  if (gi8) {
    if (gf64)
      reconstruct<NL, int8_t, double>((const int8_t*)gC, gM, gMp, gnb, gnbp, gL, gsa, gsb, gc0, gN,
                                      gp, gemin, (double*)gD);
    else
      reconstruct<NL, int8_t, float>((const int8_t*)gC, gM, gMp, gnb, gnbp, gL, gsa, gsb, gc0, gN,
                                     gp, gemin, (float*)gD);
  } else {
    if (gf64)
      reconstruct<NL, int, double>((const int*)gC, gM, gMp, gnb, gnbp, gL, gsa, gsb, gc0, gN, gp,
                                   gemin, (double*)gD);
    else
      reconstruct<NL, int, float>((const int*)gC, gM, gMp, gnb, gnbp, gL, gsa, gsb, gc0, gN, gp,
                                  gemin, (float*)gD);
  }
}
extern "C" void recon(const void* C, int i8, int M, int Mp, int nb, int nbp, int L,
                      const long long* sa, const long long* sb, int c0, int N, int p, int emin,
                      int nl, int f64, void* D) {
  gC = C;
  gi8 = i8;
  gM = M;
  gMp = Mp;
  gnb = nb;
  gnbp = nbp;
  gL = L;
  gsa = sa;
  gsb = sb;
  gc0 = c0;
  gN = N;
  gp = p;
  gemin = emin;
  gf64 = f64;
  gD = D;
  void (*f)() = nl == 2 ? rk<2> : nl == 3 ? rk<3> : nl == 4 ? rk<4> : rk<5>;
  grid1((long long)M * (nbp / 4), f);
}
extern "C" void stats_cols(const double* X, int rows, int cols, int q2, int* emax,
                           unsigned long long* esum, int* count, unsigned long long* nfix, int* bad,
                           long long* shift) {
  int chunk = 128;
  blockDim = {256, 1, 1};
  for (int pass = 0; pass < 2; ++pass)
    for (unsigned by = 0; by < (unsigned)((rows + chunk - 1) / chunk); ++by)
      for (unsigned bx = 0; bx < (unsigned)((cols + 255) / 256); ++bx)
        for (unsigned t = 0; t < 256; ++t) {
          blockIdx = {bx, by, 0};
          threadIdx = {t, 0, 0};
          if (pass == 0)
            oz2_stats_cols_max(X, rows, cols, chunk, emax, esum, count, bad);
          else
            oz2_stats_cols_nfix(X, rows, cols, chunk, emax, nfix);
        }
  for (unsigned bx = 0; bx < (unsigned)((cols + 255) / 256); ++bx)
    for (unsigned t = 0; t < 256; ++t) {
      blockIdx = {bx, 0, 0};
      threadIdx = {t, 0, 0};
      oz2_shifts(cols, emax, count, nfix, q2, 1, shift);
    }
}
extern "C" void residues_cols(const double* B, int K, int N, int c0, int nb, int Kp, int nbp,
                              const long long* s, int L, int8_t* r) {
  blockDim = {256, 1, 1};
  for (unsigned by = 0; by < (unsigned)((Kp + 127) / 128); ++by)
    for (unsigned bx = 0; bx < (unsigned)((nbp + 31) / 32); ++bx)
      for (int pass = 0; pass < 2; ++pass)  // pass 0 fills the shared tile, pass 1 computes
        for (unsigned t = 0; t < 256; ++t) {
          blockIdx = {bx, by, 0};
          threadIdx = {t, 0, 0};
          oz2_residues_cols(B, K, N, c0, nb, Kp, nbp, s, L, r);
        }
}
template <int NL>
static void round_n(const long long* a, const long long* e, int n, int f64, int p, int emin,
                    void* out) {
  for (int i = 0; i < n; ++i) {
    long long l[NL];
    for (int t = 0; t < NL; ++t) l[t] = a[(size_t)i * NL + t];
    if (f64)
      ((double*)out)[i] = round_out<NL, double>(l, e[i], p, emin);
    else
      ((float*)out)[i] = round_out<NL, float>(l, e[i], p, emin);
  }
}
// residue_low_byte (ozaki_residue.cuh: the fused GEMM's epilogue and the int32 reader) on n
// int32 values for one odd modulus m in (128, 255]: the low bytes, as signed bytes.
extern "C" void residue_bytes(const int* c, int n, int m, signed char* out) {
  const float inv = 1.0f / (float)m;  // fl32(1/m), as __frcp_rn on the GPU
  const int c16m = residue_c16m(m);
  for (int i = 0; i < n; ++i) out[i] = (signed char)residue_low_byte(c[i], inv, c16m, -m);
}
// sym_mod (ozaki_residue.cuh: the fused GEMM's epilogue for any other modulus) on n int32 values
// for one modulus m in [2, 256], with the kernel's inv, lo and hi: the residues.
extern "C" void sym_mod_values(const int* c, int n, int m, int* out) {
  const float inv = 1.0f / (float)m;  // fl32(1/m), as __frcp_rn on the GPU
  const int lo = -(m / 2), hi = (m + 1) / 2 - 1;
  for (int i = 0; i < n; ++i) out[i] = sym_mod(c[i], m, inv, lo, hi);
}
extern "C" void round_test(const long long* a, const long long* e, int n, int nl, int f64, int p,
                           int emin, void* out) {
  if (nl == 2) round_n<2>(a, e, n, f64, p, emin, out);
  if (nl == 3) round_n<3>(a, e, n, f64, p, emin, out);
  if (nl == 4) round_n<4>(a, e, n, f64, p, emin, out);
  if (nl == 5) round_n<5>(a, e, n, f64, p, emin, out);
}
// Generic launcher: `a` holds pointers to the argument values (as cuLaunchKernel's
// kernelParams); every block runs `passes` times (2 for kernels with a shared-memory tile).
#define OZ_ARG(i, T) (*(T*)a[i])
#define OZ_GRID(passes, ...)                                    \
  for (unsigned y = 0; y < gy; ++y)                             \
    for (unsigned x = 0; x < gx; ++x)                           \
      for (int ps = 0; ps < passes; ++ps)                       \
        for (unsigned t = 0; t < bx; ++t) {                     \
          blockIdx = {x, y, 0};                                 \
          threadIdx = {t, 0, 0};                                \
          __VA_ARGS__;                                          \
        }
#define OZ_RECON_CASE(NM, NL, PL, OT)                                                          \
  if (!strcmp(name, #NM)) {                                                                    \
    OZ_GRID(1, reconstruct<NL, PL, OT>(OZ_ARG(0, const PL*), OZ_ARG(1, int), OZ_ARG(2, int),    \
                                       OZ_ARG(3, int), OZ_ARG(4, int), OZ_ARG(5, int),          \
                                       OZ_ARG(6, const long long*), OZ_ARG(7, const long long*), \
                                       OZ_ARG(8, int), OZ_ARG(9, int), OZ_ARG(10, int),         \
                                       OZ_ARG(11, int), OZ_ARG(12, OT*)));                      \
    return 0;                                                                                  \
  }
// Scheme I (ozaki1.cu): oz1_digits_cols fills a shared tile first (two passes per block).
#define OZ1_DIGITS_CASES(SUF, D)                                                           \
  if (!strcmp(name, "oz1_digits_rows_" #SUF)) {                                            \
    OZ_GRID(1, digits_rows<D>(OZ_ARG(0, const double*), OZ_ARG(1, int), OZ_ARG(2, int),     \
                              OZ_ARG(3, int), OZ_ARG(4, int), OZ_ARG(5, const int*),        \
                              OZ_ARG(6, int), OZ_ARG(7, D*)));                              \
    return 0;                                                                              \
  }                                                                                        \
  if (!strcmp(name, "oz1_digits_cols_" #SUF)) {                                            \
    OZ_GRID(2, digits_cols<D>(OZ_ARG(0, const double*), OZ_ARG(1, int), OZ_ARG(2, int),     \
                              OZ_ARG(3, int), OZ_ARG(4, int), OZ_ARG(5, int), OZ_ARG(6, int), \
                              OZ_ARG(7, const int*), OZ_ARG(8, int), OZ_ARG(9, D*)));       \
    return 0;                                                                              \
  }
#define OZ1_COMBINE_CASE(NM, PL, OT)                                                        \
  if (!strcmp(name, #NM)) {                                                                \
    OZ_GRID(1, combine<PL, OT>(OZ_ARG(0, const PL*), OZ_ARG(1, int), OZ_ARG(2, const int*),  \
                               OZ_ARG(3, int), OZ_ARG(4, int), OZ_ARG(5, int),              \
                               OZ_ARG(6, __int128*), OZ_ARG(7, int), OZ_ARG(8, int),        \
                               OZ_ARG(9, const int*), OZ_ARG(10, const int*), OZ_ARG(11, int), \
                               OZ_ARG(12, int), OZ_ARG(13, int), OZ_ARG(14, int),           \
                               OZ_ARG(15, int), OZ_ARG(16, int), OZ_ARG(17, OT*)));         \
    return 0;                                                                              \
  }
extern "C" int launch(const char* name, unsigned gx, unsigned gy, unsigned bx, void** a) {
  blockDim = {bx, 1, 1};
  gridDim = {gx, gy, 1};
  if (!strcmp(name, "oz2_stats_cols_max")) {
    OZ_GRID(1, oz2_stats_cols_max(OZ_ARG(0, const double*), OZ_ARG(1, int), OZ_ARG(2, int),
                                  OZ_ARG(3, int), OZ_ARG(4, int*),
                                  OZ_ARG(5, unsigned long long*), OZ_ARG(6, int*),
                                  OZ_ARG(7, int*)));
    return 0;
  }
  if (!strcmp(name, "oz2_stats_cols_nfix")) {
    OZ_GRID(1, oz2_stats_cols_nfix(OZ_ARG(0, const double*), OZ_ARG(1, int), OZ_ARG(2, int),
                                   OZ_ARG(3, int), OZ_ARG(4, const int*),
                                   OZ_ARG(5, unsigned long long*)));
    return 0;
  }
  if (!strcmp(name, "oz2_shifts")) {
    OZ_GRID(1, oz2_shifts(OZ_ARG(0, int), OZ_ARG(1, int*), OZ_ARG(2, const int*),
                          OZ_ARG(3, const unsigned long long*), OZ_ARG(4, int), OZ_ARG(5, int),
                          OZ_ARG(6, long long*)));
    return 0;
  }
  if (!strcmp(name, "oz2_stats_cols_init")) {
    OZ_GRID(1, oz2_stats_cols_init(OZ_ARG(0, int), OZ_ARG(1, int*),
                                   OZ_ARG(2, unsigned long long*), OZ_ARG(3, int*),
                                   OZ_ARG(4, unsigned long long*), OZ_ARG(5, int*),
                                   OZ_ARG(6, long long*)));
    return 0;
  }
  if (!strcmp(name, "oz2_auto_need")) {
    OZ_GRID(1, oz2_auto_need(OZ_ARG(0, int), OZ_ARG(1, const int*), OZ_ARG(2, const long long*),
                             OZ_ARG(3, const int*), OZ_ARG(4, const unsigned long long*),
                             OZ_ARG(5, int), OZ_ARG(6, int*)));
    return 0;
  }
  if (!strcmp(name, "oz2_residues_rows")) {
    OZ_GRID(1, oz2_residues_rows(OZ_ARG(0, const double*), OZ_ARG(1, int), OZ_ARG(2, int),
                                 OZ_ARG(3, int), OZ_ARG(4, int), OZ_ARG(5, const long long*),
                                 OZ_ARG(6, int), OZ_ARG(7, int8_t*)));
    return 0;
  }
  if (!strcmp(name, "oz2_residues_cols")) {
    OZ_GRID(2, oz2_residues_cols(OZ_ARG(0, const double*), OZ_ARG(1, int), OZ_ARG(2, int),
                                 OZ_ARG(3, int), OZ_ARG(4, int), OZ_ARG(5, int), OZ_ARG(6, int),
                                 OZ_ARG(7, const long long*), OZ_ARG(8, int),
                                 OZ_ARG(9, int8_t*)));
    return 0;
  }
  OZ_RECON_CASE(oz2_recon_i32_nl2_f64, 2, int, double)
  OZ_RECON_CASE(oz2_recon_i32_nl3_f64, 3, int, double)
  OZ_RECON_CASE(oz2_recon_i32_nl4_f64, 4, int, double)
  OZ_RECON_CASE(oz2_recon_i32_nl5_f64, 5, int, double)
  OZ_RECON_CASE(oz2_recon_i32_nl2_f32, 2, int, float)
  OZ_RECON_CASE(oz2_recon_i32_nl3_f32, 3, int, float)
  OZ_RECON_CASE(oz2_recon_i32_nl4_f32, 4, int, float)
  OZ_RECON_CASE(oz2_recon_i32_nl5_f32, 5, int, float)
  OZ_RECON_CASE(oz2_recon_i8_nl2_f64, 2, int8_t, double)
  OZ_RECON_CASE(oz2_recon_i8_nl3_f64, 3, int8_t, double)
  OZ_RECON_CASE(oz2_recon_i8_nl4_f64, 4, int8_t, double)
  OZ_RECON_CASE(oz2_recon_i8_nl5_f64, 5, int8_t, double)
  OZ_RECON_CASE(oz2_recon_i8_nl2_f32, 2, int8_t, float)
  OZ_RECON_CASE(oz2_recon_i8_nl3_f32, 3, int8_t, float)
  OZ_RECON_CASE(oz2_recon_i8_nl4_f32, 4, int8_t, float)
  OZ_RECON_CASE(oz2_recon_i8_nl5_f32, 5, int8_t, float)
  OZ1_DIGITS_CASES(i8, int8_t)
  OZ1_DIGITS_CASES(f16, uint16_t)
  OZ1_COMBINE_CASE(oz1_combine_i32_f64, int, double)
  OZ1_COMBINE_CASE(oz1_combine_i32_f32, int, float)
  OZ1_COMBINE_CASE(oz1_combine_f32_f64, float, double)
  OZ1_COMBINE_CASE(oz1_combine_f32_f32, float, float)
  return 1;  // unknown kernel
}
extern "C" int set_global(const char* name, const void* src, size_t n) {
  void* dst = !strcmp(name, "c_rc")       ? (void*)c_rc
              : !strcmp(name, "c_W")      ? (void*)c_W
              : !strcmp(name, "c_Ml")     ? (void*)c_Ml
              : !strcmp(name, "c_invM")   ? (void*)&c_invM
              : !strcmp(name, "c_Wd")     ? (void*)c_Wd
              : !strcmp(name, "c_nparts") ? (void*)&c_nparts
                                          : nullptr;
  if (dst == nullptr) return 1;
  memcpy(dst, src, n);
  return 0;
}
"""


@functools.cache
def _host_lib() -> Any:
    import ctypes
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    from precision.kernels.build import KERNEL_DIR

    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        raise RuntimeError("--host needs a C++ compiler (g++) on PATH")
    # (the folder goes once the library is loaded: a loaded library needs no file)
    with tempfile.TemporaryDirectory(prefix="oz2host") as folder:
        tmp = Path(folder)
        (tmp / "shim.h").write_text(_HOST_SHIM)
        (tmp / "harness.cpp").write_text(_HOST_HARNESS)
        for name in ("ozaki2.cu", "ozaki1.cu", "ozaki_round.cuh", "ozaki_residue.cuh"):
            shutil.copy(KERNEL_DIR / name, tmp / name)
        cmd = [cxx, "-O2", "-std=c++17", "-ffp-contract=off", "-fPIC", "-shared",
               "-o", str(tmp / "liboz2host.so"), str(tmp / "harness.cpp")]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"host build of ozaki2.cu failed:\n{' '.join(cmd)}\n{proc.stderr}")
        return ctypes.CDLL(str(tmp / "liboz2host.so"))


def _ptr(a: np.ndarray) -> Any:
    import ctypes

    return a.ctypes.data_as(ctypes.c_void_p)


def _residue_inputs(rng: np.random.Generator, m: int, count: int) -> np.ndarray:
    """``count`` random int32 values and the edges for a residue modulo ``m``: the int32
    extremes, the values where the 2^16 split's high part changes, multiples of m and the
    symmetric range's ends around them."""
    edges = [-(2**31), -(2**31) + 1, 2**31 - 1, 2**31 - 2, 0, 1, -1]
    edges += [s * (2**15 + d) for s in (1, -1) for d in (-1, 0, 1)]
    edges += [2**31 - 2**15 + d for d in (-1, 0, 1)]
    near = [k * m + d for k in (0, 1, -1, 12345, -12345, (2**31 - 1) // m, -(2**31 // m))
            for d in (-(m // 2) - 1, -(m // 2), -1, 0, 1, m // 2, m // 2 + 1)]  # fmt: skip
    return np.concatenate([
        rng.integers(-(2**31), 2**31, count, dtype=np.int64),
        np.array([x for x in edges + near if -(2**31) <= x < 2**31], dtype=np.int64),
    ]).astype(np.int32)  # fmt: skip


def host_residues(
    seed: int = 5, count: int = 200_000, general_count: int = 20_000
) -> dict[str, Any]:
    """The fused GEMM epilogue's residue functions (precision/kernels/ozaki_residue.cuh,
    compiled from the source by g++) against Python's symmetric residue: ``residue_low_byte``
    for every odd modulus of :data:`MODULI` on ``count`` random int32 values and the edges
    (:func:`_residue_inputs`), and ``sym_mod``, the general path, for every modulus in
    [2, 256] on ``general_count`` random values and the edges."""
    lib = _host_lib()
    rng = np.random.default_rng(seed)

    def check(function: Any, out_dtype: Any, moduli: Any, n: int) -> tuple[int, int]:
        """(values checked, mismatches) of the harness's ``function`` over ``moduli``."""
        checked = bad = 0
        for m in moduli:
            c = _residue_inputs(rng, m, n)
            got = np.empty(c.size, dtype=out_dtype)
            function(_ptr(c), c.size, m, _ptr(got))
            bad += int(np.count_nonzero(got.astype(np.int64) != sym_mod(c.astype(np.int64), m)))
            checked += c.size
        return checked, bad

    # (m = 256: the residue is the low byte itself)
    checked, bad = check(lib.residue_bytes, np.int8, [m for m in MODULI if m != 256], count)
    general_checked, general_bad = check(lib.sym_mod_values, np.int32, range(2, 257), general_count)
    return {
        "residue_bytes_checked": checked, "residue_bytes_mismatches": bad,
        "sym_mod_checked": general_checked, "sym_mod_mismatches": general_bad,
        "ok": bad == 0 and general_bad == 0,
    }  # fmt: skip


def host_rounding(seed: int = 3, count: int = 4000) -> dict[str, Any]:
    """The kernels' final rounding (``round_out``: fast path plus ``round_limbs``) against
    :func:`precision.gemm.ozaki.round_limbs` on crafted integers: exact ties and near-ties at
    the target's precision, powers of two, all bit lengths, exponents across the subnormal,
    normal and overflow ranges, both signs, 2..5 limbs."""
    lib = _host_lib()
    rng = np.random.default_rng(seed)
    diff = 0
    for target in ("fp64", "fp32"):
        p, emin_sub, dtype = TARGETS[target]
        bits = np.uint64 if target == "fp64" else np.uint32
        emax_t = 1024 if target == "fp64" else 128
        for nl in (2, 3, 4, 5):
            vals, exps = [], []
            for _ in range(count):
                bl = int(rng.integers(1, 32 * nl - 2))
                kind = int(rng.integers(4))
                x = int.from_bytes(rng.bytes(20), "little") % (1 << bl) | (1 << (bl - 1))
                if kind in (1, 3) and bl > p:  # an exact tie at precision p (kind 3: +-1)
                    x = ((x >> (bl - p)) << (bl - p)) | (1 << (bl - p - 1))
                    x += int(rng.choice([-1, 1])) if kind == 3 else 0
                elif kind == 2:
                    x = 1 << (bl - 1)
                if rng.random() < 0.5:
                    x = -x
                lo, hi = emin_sub - bl - 3, emax_t - bl + 3
                ex = int(rng.integers(lo, hi)) if rng.random() < 0.6 else int(
                    rng.choice([lo + 1, lo + 3, emin_sub + p - bl, emin_sub + p - bl + 1,
                                hi - 4, hi - 3, hi - 2])
                )  # fmt: skip
                vals.append(x)
                exps.append(ex)
            limbs = np.zeros((count, nl), dtype=np.int64)
            for i, x in enumerate(vals):
                for t in range(nl - 1):
                    limbs[i, t] = (x >> (32 * t)) & _MASK
                limbs[i, nl - 1] = x >> (32 * (nl - 1))
            e = np.array(exps, dtype=np.int64)
            ref = round_limbs([limbs[:, t].copy() for t in range(nl)], e, target)
            out = np.zeros(count, dtype=dtype)
            lib.round_test(_ptr(np.ascontiguousarray(limbs)), _ptr(e), count, nl,
                           int(target == "fp64"), p, emin_sub, _ptr(out))  # fmt: skip
            diff += int(np.count_nonzero(out.view(bits) != ref.view(bits)))
    return {"rounding_mismatches": diff, "ok": diff == 0}


class _HostArray(np.ndarray):
    """A numpy array standing in for a CuPy array (``.get()`` returns a host copy)."""

    def get(self) -> np.ndarray:
        return np.array(self)


def _h(x: Any) -> _HostArray:
    return np.asarray(x).view(_HostArray)


class _MockCuPy:
    """numpy standing in for CuPy in :func:`host_pipeline`; fresh buffers are filled with a
    poison byte (0x5A) so that reads of never-written workspace show up as mismatches."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    cuda = type("cuda", (), {"get_current_stream": staticmethod(lambda: None)})

    def asarray(self, x: Any, dtype: Any = None) -> _HostArray:
        return _h(np.asarray(x, dtype=dtype))

    def ascontiguousarray(self, x: Any, dtype: Any = None) -> _HostArray:
        return _h(np.ascontiguousarray(x, dtype=dtype))

    def empty(self, shape: Any, dtype: Any = np.float64) -> _HostArray:
        out = np.empty(shape, dtype=dtype)
        out.view(np.uint8)[...] = 0x5A
        return _h(out)

    def zeros(self, shape: Any, dtype: Any = np.float64) -> _HostArray:
        return _h(np.zeros(shape, dtype=dtype))

    def full(self, shape: Any, value: Any, dtype: Any = np.float64) -> _HostArray:
        return _h(np.full(shape, value, dtype=dtype))


#: Block-cooperative kernels -> their harness entry (one fiber per CUDA thread).
_COOPERATIVE = {"oz2_stats_rows": "stats_rows_threaded", "oz2_rows_fused": "rows_fused_threaded"}


class _MockKernel:
    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(
        self,
        grid: tuple[int, ...],
        block: tuple[int, ...],
        args: tuple[Any, ...],
        shared_mem: int = 0,
    ) -> None:
        import ctypes

        assert block[0] == (384 if self.name == "oz2_rows_fused" else 256), block
        assert len(block) == 1, block
        holders: list[Any] = []
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous
                holders.append(ctypes.c_void_p(a.ctypes.data))
            else:
                assert isinstance(a, np.int32), (self.name, type(a))
                holders.append(ctypes.c_int(int(a)))
        params = (ctypes.c_void_p * len(holders))(
            *[ctypes.cast(ctypes.pointer(h), ctypes.c_void_p) for h in holders]
        )
        gy = grid[1] if len(grid) > 1 else 1
        if self.name in _COOPERATIVE:
            if self.name == "oz2_rows_fused":
                assert shared_mem >= 8 * int(args[4]), (shared_mem, args[4])  # the staged row
            run = getattr(_host_lib(), _COOPERATIVE[self.name])
            if run(*holders, ctypes.c_uint(block[0])) != 0:
                raise RuntimeError(f"{self.name}: threads of a block diverge at a barrier")
            return
        rc = _host_lib().launch(self.name.encode(), grid[0], gy, block[0], params)
        if rc != 0:
            raise RuntimeError(f"host launcher does not know kernel {self.name}")


class _MockGlobal:
    def __init__(self, name: str) -> None:
        self.name = name

    def copy_from_host_async(self, ptr: int, nbytes: int, stream: Any) -> None:
        import ctypes

        if _host_lib().set_global(self.name.encode(), ctypes.c_void_p(ptr), nbytes) != 0:
            raise RuntimeError(f"unknown __constant__ {self.name}")


class _MockModule:
    def get_function(self, name: str) -> _MockKernel:
        return _MockKernel(name)

    def get_global(self, name: str) -> _MockGlobal:
        return _MockGlobal(name)


def _mock_cublas(cp: Any, bres: Any, ares: Any, C: Any, M: int, nbp: int, kp: int, L: int) -> None:
    b = np.asarray(bres).reshape(L, nbp, kp).astype(np.float64)
    a = np.asarray(ares).reshape(L, M, kp).astype(np.float64)
    C.reshape(L, M, nbp)[...] = np.matmul(a, b.transpose(0, 2, 1)).astype(np.int32)


def _mock_fused(cp: Any, ares: Any, bres: Any, R: Any, M: int, nbp: int, kp: int, L: int,
                moduli: tuple[int, ...]) -> None:  # fmt: skip
    b = np.asarray(bres).reshape(L, nbp, kp).astype(np.float64)
    a = np.asarray(ares).reshape(L, M, kp).astype(np.float64)
    c = np.matmul(a, b.transpose(0, 2, 1)).astype(np.int64)
    R.reshape(L, M, nbp)[...] = np.stack([sym_mod(c[li], m) for li, m in enumerate(moduli)])


@contextlib.contextmanager
def _kernels_on_the_cpu() -> Iterator[Any]:
    """Patches :mod:`precision.gemm.ozaki_cuda` so that its GPU code runs on the CPU: numpy
    for CuPy, the host-compiled kernels, numpy INT8 products for cuBLAS and for the fused
    GEMM. Yields the module; everything is restored on exit."""
    import precision.gpu
    import precision.vendor.cublas as vc
    from precision.gemm import ozaki_cuda as oc

    mock = _MockCuPy()
    patches: list[tuple[Any, str, Any]] = [
        (precision.gpu, "require_gpu", lambda what: mock),
        (oc, "_module", _MockModule),
        (vc, "int8_gemm_strided_batched", _mock_cublas),
    ]
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
    saved_fused = sys.modules.get("precision.gemm.ozaki_gemm_launch")
    fake = types.ModuleType("precision.gemm.ozaki_gemm_launch")
    fake.gemm_mod = _mock_fused  # type: ignore[attr-defined]
    for obj, name, value in patches:
        setattr(obj, name, value)
    sys.modules["precision.gemm.ozaki_gemm_launch"] = fake
    oc._CONSTANTS_SET.clear()
    try:
        yield oc
    finally:
        for obj, name, value in saved:
            setattr(obj, name, value)
        if saved_fused is None:
            sys.modules.pop("precision.gemm.ozaki_gemm_launch", None)
        else:
            sys.modules["precision.gemm.ozaki_gemm_launch"] = saved_fused
        oc._CONSTANTS_SET.clear()


def host_pipeline() -> list[dict[str, Any]]:
    """Run :func:`precision.gemm.ozaki_cuda.ozaki2_cuda` itself on the CPU
    (:func:`_kernels_on_the_cpu`: all the kernels); small workspace factors force several
    column blocks. Rectangular operands catch transposition mistakes. Compared bit for bit
    with :func:`reference`; ``terms="auto"`` must pick :func:`auto_terms`'s count."""
    results = []
    with _kernels_on_the_cpu() as oc:
        rng = np.random.default_rng(11)
        for m, k, n, phi, target, terms, gemm, wf, specials in (
            (70, 130, 90, 4.0, "fp64", 15, "cublas", 1.5, False),
            (70, 130, 90, 1.0, "fp32", 8, "fused", 1.5, False),
            (257, 257, 257, 1.0, "fp64", 15, "cublas", 0.25, True),
            (257, 257, 257, 1.0, "fp32", 8, "fused", 0.25, True),
            (100, 33, 300, 4.0, "fp64", "auto", "cublas", 0.3, False),
            (60, 200, 50, 2.0, "fp32", "auto", "fused", 1.5, False),
            (40, 500, 20, 0.0, "fp64", 16, "fused", 1.5, False),
            (1, 1, 1, 1.0, "fp64", 15, "cublas", 1.5, False),
            (3, 1, 5, 2.0, "fp32", 8, "fused", 1.5, False),
            (1, 7, 2, 4.0, "fp64", 20, "cublas", 1.5, False),
        ):  # fmt: skip
            if specials:
                A, B = make_operands(m, phi, seed=m, specials=True)
            else:
                A = _exp_rand(rng, (m, k), phi=phi)
                B = _exp_rand(rng, (k, n), phi=phi)
            D, run = oc.ozaki2_cuda(A, B, target=target, terms=terms, gemm=gemm,
                                    workspace_factor=wf)  # fmt: skip
            ref = reference(A, B, run.plan.terms, target, crt_samples=4)
            diff = int(np.count_nonzero(_bits(np.asarray(D)) != _bits(ref["D"])))
            want_terms = terms
            if terms == "auto":  # the host rule on the reference's statistics
                want_terms = auto_terms("ozaki2", target, k, _line_stats(ref["sa"]),
                                        _line_stats(ref["sb"]))  # fmt: skip
            r = {"m": m, "k": k, "n": n, "phi": phi, "target": target, "terms": str(terms),
                 "L": run.plan.terms, "gemm": gemm, "nb": run.nb, "blocks": -(-n // run.nb),
                 "workspace_bytes": run.workspace_bytes, "q2_match": run.q2 == ref["q2"],
                 "d_diff": diff}  # fmt: skip
            r["terms_match"] = run.plan.terms == want_terms
            r["ok"] = diff == 0 and r["q2_match"] and r["terms_match"]
            results.append(r)
    return results


def host_barriers() -> dict[str, Any]:
    """The host replay's fiber scheduler: shared-memory exchange across ``__syncthreads``
    sees every thread's write (``uniform`` 0), and a thread that skips a barrier is reported
    (``divergent`` 1) instead of passing silently (on a GPU it would hang)."""
    lib = _host_lib()
    res = {"uniform": int(lib.barrier_selftest(0)), "divergent": int(lib.barrier_selftest(1))}
    res["ok"] = res == {"uniform": 0, "divergent": 1}
    return res


def host_auto_terms(seed: int = 5) -> dict[str, Any]:
    """``oz2_auto_need`` (host-compiled) through :func:`precision.gemm.ozaki_cuda.
    device_auto_terms` against :func:`auto_terms` on the same statistics: random lines with
    negative, non-divisible exponent sums, norm bounds from 0 (not produced by the statistics
    kernels; clog2 takes it as 1) to 2^57, spreads up to 2000
    binades, all-zero lines and empty operands, both targets, K from 1 to INT8_KMAX."""
    from precision.gemm.ozaki import INT8_KMAX

    rng = np.random.default_rng(seed)

    def stats(n: int) -> LineStats:
        count = rng.integers(0, 3, n) * rng.integers(1, 5000, n)
        emax = rng.integers(-1074, 1024, n)
        spread = np.where(rng.random(n) < 0.2, rng.integers(0, 2001, n), rng.integers(0, 12, n))
        esum = (emax - spread) * count + rng.integers(0, np.maximum(count, 1))
        nfix = np.where(count > 0, rng.integers(1, 2**57, n) >> rng.integers(0, 57, n), 0)
        nfix[:2] = np.where(count[:2] > 0, 1, 0)  # the smallest bound of a nonzero line
        return LineStats(emax=emax, esum=esum, count=count, zero=count == 0,
                         bad=np.zeros(n, bool), nfix=nfix)  # fmt: skip

    def on_device(oc: Any, st: LineStats) -> Any:
        return oc.DeviceStats(
            emax=_h(st.emax.astype(np.int32)), esum=_h(st.esum.astype(np.int64)),
            count=_h(st.count.astype(np.int32)), nfix=_h(st.nfix.astype(np.uint64)),
            bad=_h(st.bad.astype(np.int32)), shift=_h(np.zeros(st.emax.size, np.int64)),
        )  # fmt: skip

    mismatches, cases, counts = 0, 0, set()
    with _kernels_on_the_cpu() as oc:
        for target in ("fp64", "fp32"):
            for k in (1, 100, 4096, 65536, INT8_KMAX):
                for na, nb in ((0, 0), (0, 7), (1, 1), (40, 300), (700, 30)):
                    sa, sb = stats(na), stats(nb)
                    got = oc.device_auto_terms(
                        _MockCuPy(), on_device(oc, sa), on_device(oc, sb), target, k
                    )
                    want = auto_terms("ozaki2", target, k, sa, sb)
                    mismatches += int(got != want)
                    cases += 1
                    counts.add(want)
    return {
        "cases": cases,
        "mismatches": mismatches,
        "distinct_counts": sorted(counts),
        "ok": mismatches == 0,
    }


def host_case(n: int, phi: float, target: str, L: int, specials: bool) -> dict[str, Any]:
    """Replay the kernels (residues of A's rows and of B's columns, B's column statistics and
    shifts, both reconstruction readers in column blocks) serially on the CPU and compare
    them with :func:`reference`; the int32 products come from numpy."""
    import ctypes

    lib = _host_lib()
    A, B = make_operands(n, phi, seed=1000 * n + int(10 * phi) + 1, specials=specials)
    r = reference(A, B, L, target, crt_samples=8)
    moduli = MODULI[:L]
    with _kernels_on_the_cpu() as oc:  # the constants exactly as the GPU path packs them
        nl = oc._set_constants(moduli)
    kp = -(-n // 16) * 16
    sa = np.ascontiguousarray(r["s_a"], dtype=np.int64)
    sb = np.ascontiguousarray(r["s_b"], dtype=np.int64)
    ares = np.zeros((L, n, kp), dtype=np.int8)
    lib.residues_rows(_ptr(A), n, n, n, kp, _ptr(sa), L, _ptr(ares))
    bres = np.full((L, kp, kp), 99, dtype=np.int8)
    lib.residues_cols(_ptr(B), n, n, 0, n, kp, kp, _ptr(sb), L, _ptr(bres))
    res_diff = 0
    for li, m in enumerate(moduli):
        ra = np.zeros((n, kp), dtype=np.int64)
        ra[:, :n] = sym_mod(r["ya"], m)
        rb = np.zeros((kp, kp), dtype=np.int64)
        rb[:n, :n] = sym_mod(r["yb"].T, m)
        res_diff += int(np.count_nonzero(ares[li] != ra) + np.count_nonzero(bres[li] != rb))
    st: dict[str, np.ndarray] = {
        "emax": np.full(n, -100000, np.int32), "esum": np.zeros(n, np.uint64),
        "count": np.zeros(n, np.int32), "nfix": np.zeros(n, np.uint64),
        "bad": np.zeros(n, np.int32), "shift": np.zeros(n, np.int64),
    }  # fmt: skip
    lib.stats_cols(_ptr(B), n, n, r["q2"], *(_ptr(st[k]) for k in st))
    stat_diff = int(np.count_nonzero(st["shift"] != r["s_b"]))
    for k in ("emax", "esum", "count", "nfix", "bad"):
        stat_diff += int(np.count_nonzero(st[k].astype(np.int64) != r["sb"][k].astype(np.int64)))
    # oz2_rows_fused (A's statistics, shifts and residues in one kernel), 64 threads per block
    mpf = n + 3  # three padding rows: zero residues, no statistics
    fres = np.full((L, mpf, kp), 99, dtype=np.int8)
    fst: dict[str, np.ndarray] = {
        "emax": np.zeros(n, np.int32), "esum": np.zeros(n, np.int64),
        "count": np.zeros(n, np.int32), "nfix": np.zeros(n, np.uint64),
        "bad": np.zeros(n, np.int32), "shift": np.zeros(n, np.int64),
    }  # fmt: skip
    lib.rows_fused_threaded(_ptr(A), n, n, mpf, kp, r["q2"], *(_ptr(fst[k]) for k in fst), L,
                            _ptr(fres), ctypes.c_uint(64))  # fmt: skip
    stat_diff += int(np.count_nonzero(fst["shift"] != r["s_a"]))
    for k in ("emax", "esum", "count", "nfix", "bad"):
        stat_diff += int(np.count_nonzero(fst[k].astype(np.int64) != r["sa"][k].astype(np.int64)))
    for li, m in enumerate(moduli):
        rf = np.zeros((mpf, kp), dtype=np.int64)
        rf[:n, :n] = sym_mod(r["ya"], m)
        res_diff += int(np.count_nonzero(fres[li] != rf))
    C = np.stack([ares[li].astype(np.float64) @ bres[li].astype(np.float64).T for li in range(L)])
    C32 = np.ascontiguousarray(C.astype(np.int32))
    C8 = np.ascontiguousarray(
        np.stack([sym_mod(C32[li].astype(np.int64), m) for li, m in enumerate(moduli)])
    ).astype(np.int8)
    p, emin_sub, dtype = TARGETS[target]
    hs = [_line_stats(x) for x in (r["sa"], r["sb"])]
    bits = np.uint64 if target == "fp64" else np.uint32
    d_diff = []
    nb = max(16, (n // 2) // 16 * 16)  # two or more column blocks
    for i8, planes in ((0, C32), (1, C8)):
        D = np.full((n, n), 7.0, dtype=dtype)
        for c0 in range(0, n, nb):
            nbc = min(nb, n - c0)
            nbp = -(-nbc // 16) * 16
            blk = np.zeros((L, n, nbp), dtype=planes.dtype)
            w = min(nbp, planes.shape[2] - c0)
            blk[:, :, :w] = planes[:, :, c0 : c0 + w]
            lib.recon(_ptr(blk), i8, n, n, nbc, nbp, L, _ptr(sa), _ptr(sb), c0, n, p, emin_sub,
                      nl, int(target == "fp64"), _ptr(D))  # fmt: skip
        apply_specials(D, A, B, hs[0], hs[1], target)
        d_diff.append(int(np.count_nonzero(D.view(bits) != r["D"].view(bits))))
    ok = res_diff == 0 and stat_diff == 0 and d_diff == [0, 0] and r["crt_bad"] == 0
    return {"n": n, "phi": phi, "target": target, "L": L, "specials": specials,
            "res_diff": res_diff, "stat_diff": stat_diff, "d_diff_i32_i8": d_diff,
            "t_over_mb": r["t_over_mb"], "ok": ok}  # fmt: skip


# ---------------------------------------------------------------------------------- main


def _sizes(text: str) -> list[int]:
    """``--sizes`` / ``--time-sizes``: comma-separated positive integers."""
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated positive integers, got {text!r}"
        )
    return sizes


def _gemms(text: str) -> list[str]:
    """``--gemm``: comma-separated INT8 GEMM paths of ``ozaki2_cuda``."""
    gemms = [g for g in text.split(",") if g]
    if not gemms or any(g not in ("cublas", "fused") for g in gemms):
        raise argparse.ArgumentTypeError(f"expected cublas, fused or cublas,fused, got {text!r}")
    return gemms


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m precision.gemm.ozaki_cuda_check", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--cpu", action="store_true", help="only the CPU checks (no GPU)")
    ap.add_argument("--host", action="store_true", help="with --cpu: replay the kernels on the CPU")
    ap.add_argument(
        "--sizes",
        type=_sizes,
        default="16,100,257,1024",
        help="sizes n of the GPU checks, comma-separated (default 16,100,257,1024)",
    )
    ap.add_argument(
        "--time-sizes",
        type=_sizes,
        default="8192,16384",
        help="sizes n of the GPU timings, comma-separated (default 8192,16384)",
    )
    ap.add_argument(
        "--gemm",
        type=_gemms,
        default="cublas",
        help="INT8 GEMM paths: cublas, fused or cublas,fused (default cublas)",
    )
    args = ap.parse_args(argv)
    if not args.cpu:  # before the CPU checks, which the GPU part would otherwise follow
        from precision.gpu import exit_without_gpu

        if exit_without_gpu(
            "python -m precision.gemm.ozaki_cuda_check", "--cpu [--host] runs the CPU checks alone"
        ):
            return 2
    report: dict[str, Any] = {}
    t0 = time.time()
    report["cpu"] = cpu_checks()
    print("cpu arithmetic checks:", json.dumps(report["cpu"]), f"({time.time() - t0:.1f} s)")
    ok = bool(report["cpu"]["ok"])
    if args.host:
        report["host_residues"] = host_residues()
        ok &= report["host_residues"]["ok"]
        print("host residues:", json.dumps(report["host_residues"]), flush=True)
        report["host_rounding"] = host_rounding()
        ok &= report["host_rounding"]["ok"]
        print("host rounding:", json.dumps(report["host_rounding"]), flush=True)
        report["host"] = []
        for n, phi, target, L, specials in (
            (16, 4.0, "fp32", 8, False), (100, 4.0, "fp64", 15, False),
            (257, 1.0, "fp64", 15, True), (257, 1.0, "fp32", 8, True),
            (100, 0.0, "fp64", 20, False), (64, 1.0, "fp64", 2, False),
            (100, 1.0, "fp32", 5, False), (257, 4.0, "fp64", 15, False),
            (100, 1.0, "fp64", 16, False), (64, 2.0, "fp64", 11, False),
            (64, 0.5, "fp64", 10, False),
        ):  # fmt: skip
            r = host_case(n, phi, target, L, specials)
            report["host"].append(r)
            ok &= r["ok"]
            print("host replay:", json.dumps(r), flush=True)
        report["host_barriers"] = host_barriers()
        ok &= report["host_barriers"]["ok"]
        print("host fiber barriers:", json.dumps(report["host_barriers"]), flush=True)
        report["host_auto_terms"] = host_auto_terms()
        ok &= report["host_auto_terms"]["ok"]
        print("host auto terms (oz2_auto_need):", json.dumps(report["host_auto_terms"]), flush=True)
        report["host_pipeline"] = host_pipeline()
        for r in report["host_pipeline"]:
            ok &= r["ok"]
            print("host pipeline (ozaki2_cuda on the CPU):", json.dumps(r), flush=True)
    if not args.cpu:
        from precision.gpu import require_gpu

        cp = require_gpu("ozaki_cuda_check")
        gemms = args.gemm
        cases: list[tuple[int, float, str, int | str, bool, str]] = []
        for gemm in gemms:
            for n in args.sizes:
                for phi in (0.0, 1.0, 4.0):
                    for target, nmod in (("fp64", 15), ("fp32", 8)):
                        cases.append((n, phi, target, nmod, False, gemm))
            cases += [(257, 1.0, "fp64", 15, True, gemm), (257, 1.0, "fp32", 8, True, gemm),
                      (100, 4.0, "fp64", "auto", False, gemm)]  # fmt: skip
        report["cases"] = []
        for n, phi, target, terms, specials, gemm in cases:
            t1 = time.time()
            r = check_case(cp, n, phi, target, terms, specials, gemm)
            report["cases"].append(r)
            ok &= r["ok"]
            print(
                f"{gemm:6s} n={n:5d} phi={phi:3.1f} {target} L={r['L']:2d} specials={specials!s:5s}"
                f" q2={r['q2']} |T|/Mb={r['t_over_mb']:.3g} D-diff={r['d_diff']} "
                f"stats-diff={r['stat_diff']} res-diff={r['res_diff']} crt-bad={r['crt_bad']} "
                f"{'OK' if r['ok'] else 'FAIL'} ({time.time() - t1:.1f} s)",
                flush=True,
            )
        report["timing"] = []
        for gemm in gemms:
            for n in args.time_sizes:
                r = time_case(cp, n, 15, gemm)
                report["timing"].append(r)
                ph = " ".join(f"{k}={v:.3f}" for k, v in r["phase_ms"].items())
                print(
                    f"timing {gemm} n={n} L=15 fp64: {ph} | total {r['total_ms']:.3f} ms, "
                    f"DGEMM {r['dgemm_ms']:.3f} ms, x{r['speedup_vs_dgemm']:.2f}, "
                    f"{r['tflops']:.1f} TFLOP/s, nb={r['nb']}, ws={r['workspace_gb']:.2f} GB",
                    flush=True,
                )
    report["ok"] = ok
    print("ALL OK" if ok else "FAILURES")
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "ozaki_cuda_check.json"), "w") as fh:
            json.dump(report, fh, indent=1, default=str)
    return 0 if ok else 1


if __name__ == "__main__":
    run_main(main)
