"""How much of the fused INT8 GEMM's time is per tile rather than per k-stage?

oz2_gemm_mod at M = Nbp = 8192, 15 moduli, for K = 2048, 4096, 8192, 16384: the same number of
CTA tiles (64 x 32 per modulus) with 16, 32, 64 and 128 k-stages each. Sustained at the power
cap (>= SECS s back to back, rounds alternating). A least-squares line time = a + b * stages
splits each call into a per-tile part (a: epilogue, CTA start, pipeline fill, wave tails) and a
per-stage part (b); at K = 8192 the per-tile share is a / (a + 64 b).

Run: PYTHONPATH=. python results/bench/ozaki_gemm_kscan_h200_2026-11-27.py [SECS]
"""

from __future__ import annotations

import functools
import sys

import numpy as np

from precision.gemm import ozaki_gemm_check as chk
from precision.gemm.ozaki import MODULI
from precision.gemm.ozaki_gemm_launch import gemm_mod
from precision.gpu import require_gpu
from precision.telemetry import summarize, time_gpu_sampled

cp = require_gpu("the K scan")
secs = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
L, n = 15, 8192
mods = cp.asarray(np.array(MODULI[:L], dtype=np.int32))
R = cp.empty((L, n, n), dtype=cp.int8)
ks = (2048, 4096, 8192, 16384)
data = {k: (chk.random_i8(cp, (L, n, k), 1), chk.random_i8(cp, (L, n, k), 2)) for k in ks}
print("device", cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), flush=True)
rows = []
for rnd in range(2):
    for k in ks:
        a, b = data[k]
        fn = functools.partial(gemm_mod, cp, a, b, R, n, n, k, L, mods)
        t, smp = time_gpu_sampled(fn, repeats=10, warmup=2, min_seconds=secs)
        med = float(np.median(t))
        s = summarize(smp, med, 2.0 * n * n * k * L)
        rows.append((k // 128, med))
        tops = 2.0 * n * n * k * L / med / 1e12
        print(f"round {rnd} K={k:6d} stages {k // 128:4d} {med * 1e3:8.3f} ms {tops:7.1f} TOPS "
              f"{s['power_w']:5.0f} W {s['sm_clock_mhz']:5.0f} MHz "
              f"capped {s['power_capped_frac']:.2f}", flush=True)  # fmt: skip
x = np.array([r[0] for r in rows], dtype=float)
y = np.array([r[1] for r in rows]) * 1e3
b, a = np.polyfit(x, y, 1)
print(f"fit: time = {a:.3f} ms + {b:.4f} ms x stages; per-tile share at K = 8192: "
      f"{a / (a + 64 * b):.1%}, at K = 16384: {a / (a + 128 * b):.1%}", flush=True)  # fmt: skip
