"""Experiment: one level of Strassen-Winograd on Ozaki-II's residue products (7 INT8 GEMMs of
half size per modulus instead of 8), on the fused modular GEMM oz2_gemm_mod, n = 8192.

Why it is exact: scheme II only needs C_l = A_l·B_l mod m_l, and Winograd's identities hold in
any commutative ring, Z/m_l included (as in FFLAS-FFPACK's modular fastmul, Dumas, Giorgi and
Pernet, ACM TOMS 2008). Every operand sum below is reduced back to a symmetric residue (int8),
and oz2_gemm_mod reduces every product's exact int32 sum modulo m_l, so the combined residues
equal those of the direct product bit for bit (checked below against the direct product).

What it measures (the question is whether the 1/8 fewer tensor-core operations shorten the
GEMM phase at the power cap, and what the unfused sums cost):
  full   : oz2_gemm_mod, 15 moduli, 8192 x 8192 x 8192 (one launch)
  prods  : the 7 Winograd products, 15 moduli each, 4096 x 4096 x 4096 (7 launches)
  sums_in: the 8 operand sums (S1..S4 of A, T1..T4 of B), elementwise CuPy kernels
  sums_out: the 7 output sums (U1..U7 / C quadrants), elementwise CuPy kernels
  dgemm  : cuBLAS DGEMM 8192^3 in the same process (the issue's baseline)
Each sustained: back to back for >= SECS seconds (argv[1], default 4), NVML power and clock.
Not product code; a dated experiment (results/bench).

Run: PYTHONPATH=. python results/bench/ozaki_winograd_h200_2026-11-27.py [SECS]
"""

from __future__ import annotations

import functools
import sys

import numpy as np

# ---------------------------------------------------------------- the algebra, on the CPU
# Winograd's variant (7 products, 15 sums), in the order used on the GPU below.


def sym(v: np.ndarray, m: int) -> np.ndarray:
    r = np.mod(v, m)
    return np.where(r > (m + 1) // 2 - 1, r - m, r)


def winograd_np(A: np.ndarray, B: np.ndarray, m: int) -> np.ndarray:
    h = A.shape[0] // 2
    A11, A12, A21, A22 = A[:h, :h], A[:h, h:], A[h:, :h], A[h:, h:]
    B11, B12, B21, B22 = B[:h, :h], B[:h, h:], B[h:, :h], B[h:, h:]
    S1 = sym(A21 + A22, m)
    S2 = sym(S1 - A11, m)
    S3 = sym(A11 - A21, m)
    S4 = sym(A12 - S2, m)
    T1 = sym(B12 - B11, m)
    T2 = sym(B22 - T1, m)
    T3 = sym(B22 - B12, m)
    T4 = sym(T2 - B21, m)
    P = [sym(x @ y, m) for x, y in ((A11, B11), (A12, B21), (S4, B22), (A22, T4), (S1, T1),
                                     (S2, T2), (S3, T3))]  # fmt: skip
    U2 = sym(P[0] + P[5], m)
    U3 = sym(U2 + P[6], m)
    U4 = sym(U2 + P[4], m)
    C = np.empty_like(A)
    C[:h, :h] = sym(P[0] + P[1], m)
    C[:h, h:] = sym(U4 + P[2], m)
    C[h:, :h] = sym(U3 - P[3], m)
    C[h:, h:] = sym(U3 + P[4], m)
    return C


rng = np.random.default_rng(7)
cpu_ok = True
for m in (256, 255, 193):
    A = sym(rng.integers(-(2**20), 2**20, (64, 64)), m).astype(np.int64)
    B = sym(rng.integers(-(2**20), 2**20, (64, 64)), m).astype(np.int64)
    same = bool(np.array_equal(winograd_np(A, B, m), sym(A @ B, m)))
    cpu_ok &= same
    print(f"cpu algebra m={m}: winograd == direct: {same}", flush=True)

# ---------------------------------------------------------------------------- the GPU
from precision.gemm import ozaki_gemm_check as chk  # noqa: E402
from precision.gemm.ozaki import MODULI  # noqa: E402
from precision.gemm.ozaki_gemm_launch import gemm_mod  # noqa: E402
from precision.gpu import require_gpu  # noqa: E402
from precision.telemetry import summarize, time_gpu_sampled  # noqa: E402

cp = require_gpu("the Winograd experiment")
L = 15
mods = MODULI[:L]
dmods = cp.asarray(np.array(mods, dtype=np.int32))
print("device", cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "moduli", mods,
      flush=True)  # fmt: skip

# out[l] = sym(x[l] + sign * y[l], m_l); x, y may be strided views of (L, h, h)
_sum = cp.ElementwiseKernel(
    "int8 x, int8 y, int32 sign, raw int32 mods, int64 plane",
    "int8 z",
    """
    const int m = mods[i / plane];
    int r = ((int)x + sign * (int)y) % m;
    if (r < 0) r += m;
    if (r > (m + 1) / 2 - 1) r -= m;
    z = (signed char)r;
    """,
    "oz_winograd_sum",
)


def add(x, y, sign, out):
    _sum(x, y, np.int32(sign), dmods, np.int64(out[0].size), out)
    return out


class Winograd:
    """Buffers and steps for A (L, n, n) and Bt (L, n, n) (B transposed, as oz2_gemm_mod)."""

    def __init__(self, A, Bt, n):
        h = self.h = n // 2
        q = lambda X, r, c: X[:, r * h : (r + 1) * h, c * h : (c + 1) * h]  # noqa: E731
        self.A11, self.A12, self.A21, self.A22 = q(A, 0, 0), q(A, 0, 1), q(A, 1, 0), q(A, 1, 1)
        # Bt's quadrant (r, c) is the transpose of B's quadrant (c, r)
        self.B11, self.B21, self.B12, self.B22 = q(Bt, 0, 0), q(Bt, 0, 1), q(Bt, 1, 0), q(Bt, 1, 1)
        new = lambda: cp.empty((L, h, h), dtype=cp.int8)  # noqa: E731
        self.S = [new() for _ in range(4)]
        self.T = [new() for _ in range(4)]
        self.P = [new() for _ in range(7)]
        self.U = [new() for _ in range(3)]
        c = cp.ascontiguousarray  # (the quadrants the products read directly, copied once)
        self.a11, self.a12, self.a22 = c(self.A11), c(self.A12), c(self.A22)
        self.b11, self.b21, self.b22 = c(self.B11), c(self.B21), c(self.B22)

    def sums_in(self):
        S1, S2, S3, S4 = self.S
        T1, T2, T3, T4 = self.T
        add(self.A21, self.A22, 1, S1)
        add(S1, self.A11, -1, S2)
        add(self.A11, self.A21, -1, S3)
        add(self.A12, S2, -1, S4)
        add(self.B12, self.B11, -1, T1)
        add(self.B22, T1, -1, T2)
        add(self.B22, self.B12, -1, T3)
        add(T2, self.B21, -1, T4)

    def prods(self):
        S1, S2, S3, S4 = self.S
        T1, T2, T3, T4 = self.T
        pairs = ((self.a11, self.b11), (self.a12, self.b21), (S4, self.b22), (self.a22, T4),
                 (S1, T1), (S2, T2), (S3, T3))  # fmt: skip
        h = self.h
        for (x, y), p in zip(pairs, self.P, strict=True):
            gemm_mod(cp, x, y, p, h, h, h, L, dmods)

    def sums_out(self, R):
        P, (U2, U3, U4), h = self.P, self.U, self.h
        add(P[0], P[5], 1, U2)
        add(U2, P[6], 1, U3)
        add(U2, P[4], 1, U4)
        add(P[0], P[1], 1, R[:, :h, :h])
        add(U4, P[2], 1, R[:, :h, h:])
        add(U3, P[3], -1, R[:, h:, :h])
        add(U3, P[4], 1, R[:, h:, h:])

    def __call__(self, R):
        self.sums_in()
        self.prods()
        self.sums_out(R)


ok = cpu_ok
for n, seed in ((256, 1), (1024, 3), (2048, 5)):
    A = chk.random_i8(cp, (L, n, n), seed)
    Bt = chk.random_i8(cp, (L, n, n), seed + 1)
    direct = cp.empty((L, n, n), dtype=cp.int8)
    gemm_mod(cp, A, Bt, direct, n, n, n, L, dmods)
    R = cp.full((L, n, n), 99, dtype=cp.int8)
    Winograd(A, Bt, n)(R)
    same = bool(cp.array_equal(R, direct))
    ok &= same
    print(f"gpu n={n}: winograd residues == direct oz2_gemm_mod residues: {same}", flush=True)

n = 8192
A = chk.random_i8(cp, (L, n, n), 101)
Bt = chk.random_i8(cp, (L, n, n), 102)
R0 = cp.empty((L, n, n), dtype=cp.int8)
R1 = cp.empty((L, n, n), dtype=cp.int8)
W = Winograd(A, Bt, n)
gemm_mod(cp, A, Bt, R0, n, n, n, L, dmods)
W(R1)
same = bool(cp.array_equal(R0, R1))
ok &= same
print(f"gpu n={n}: winograd residues == direct: {same}", flush=True)

secs = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
ops = 2.0 * n**3 * L
rngf = np.random.default_rng(5)
Af = cp.asarray(rngf.random((n, n)) - 0.5)
Bf = cp.asarray(rngf.random((n, n)) - 0.5)
variants = {
    "dgemm": (lambda: Af @ Bf, 2.0 * n**3),
    "full": (functools.partial(gemm_mod, cp, A, Bt, R0, n, n, n, L, dmods), ops),
    "prods": (W.prods, ops * 7 / 8),
    "sums_in": (W.sums_in, None),
    "sums_out": (functools.partial(W.sums_out, R1), None),
    "winograd": (functools.partial(W, R1), ops * 7 / 8),
}
for rnd in range(2):
    for name, (fn, work) in variants.items():
        if rnd and name in ("sums_in", "sums_out"):
            continue
        t, smp = time_gpu_sampled(fn, repeats=5, warmup=2, min_seconds=secs)
        med = float(np.median(t))
        s = summarize(smp, med, work)
        rate = f"{work / med / 1e12:7.1f} T/s" if work else " " * 11
        print(f"round {rnd} {name:9s} {med * 1e3:8.3f} ms {rate} {s['power_w']:5.0f} W "
              f"{s['sm_clock_mhz']:5.0f} MHz capped {s['power_capped_frac']:.2f} "
              f"{med * s['power_w']:6.2f} J/call", flush=True)  # fmt: skip
print("ALL OK" if ok else "FAILURES", flush=True)
