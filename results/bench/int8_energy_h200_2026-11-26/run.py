"""Experiment: sustained energy per int8 op at n = 8192, 15 products: our fused oz2_gemm_mod
against cuBLAS (strided batched, batch-1 loop, torch._int_mm), alternating rounds, >= 4 s each."""
import functools
import sys

import numpy as np

from precision.gpu import require_gpu

cp = require_gpu("int8 energy")
import torch  # noqa: E402

from precision.gemm import ozaki_gemm_check as chk  # noqa: E402
from precision.gemm.ozaki_gemm_launch import gemm_mod  # noqa: E402
from precision.telemetry import summarize, time_gpu_sampled  # noqa: E402
from precision.vendor.cublas import exact_gemm_batched, int8_gemm_strided_batched  # noqa: E402

n, L = 8192, 15
a = chk.random_i8(cp, (L, n, n), 101)
b = chk.random_i8(cp, (L, n, n), 102)
R = cp.empty((L, n, n), dtype=cp.int8)
C = cp.empty((L, n, n), dtype=cp.int32)
dm = cp.asarray(np.array(chk.MODULI15, dtype=np.int32))
ta = torch.as_tensor(a, device="cuda")
tb = torch.as_tensor(b, device="cuda")
tc = torch.empty((L, n, n), dtype=torch.int32, device="cuda")


def ours():
    gemm_mod(cp, a, b, R, n, n, n, L, dm)


def strided():
    int8_gemm_strided_batched(cp, b, a, C, n, n, n, L)


def loop1():
    for l in range(L):
        exact_gemm_batched(cp, "int8", b[l].data.ptr, a[l].data.ptr, C[l].data.ptr, m=n, n=n,
                           k=n, ld=n, stride_b=n * n, stride_a=n * n, batch=1)


def intmm():
    s = torch.cuda.ExternalStream(cp.cuda.get_current_stream().ptr)
    with torch.cuda.stream(s):
        for l in range(L):
            torch._int_mm(ta[l], tb[l].t(), out=tc[l])


# same products? (int32 reduced by the moduli vs the fused residues, first and last l)
strided()
for l in (0, L - 1):
    m = int(chk.MODULI15[l])
    ours()
    r = C[l].astype(cp.int64) % m
    r = cp.where(r >= (m + 1) // 2, r - m, r)
    print("ours==cublas mod m", l, bool(cp.array_equal(r.astype(cp.int8), R[l])), flush=True)
intmm(); cp.cuda.Device().synchronize()
print("int_mm==strided", bool(torch.equal(tc, torch.as_tensor(C, device="cuda"))), flush=True)
loop1(); cp.cuda.Device().synchronize()

from torch.profiler import ProfilerActivity, profile  # noqa: E402

for name, fn in (("strided", strided), ("loop1", loop1), ("intmm", intmm)):
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(); cp.cuda.Device().synchronize()
    names = sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})
    print("kernels", name, names, flush=True)

ops = 2.0 * n**3 * L
secs = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
for rnd in range(3):
    for name, fn in (("ours", ours), ("strided", strided), ("loop1", loop1), ("intmm", intmm)):
        t, smp = time_gpu_sampled(fn, repeats=10, warmup=2, min_seconds=secs)
        med = float(np.median(t))
        s = summarize(smp, med, ops)
        print(f"round {rnd} {name:8s} {med*1e3:8.3f} ms {ops/med/1e12:7.0f} TOPS "
              f"{s['power_w']:5.0f} W {s['sm_clock_mhz']:5.0f} MHz {s['pj_per_flop']:.3f} pJ/op "
              f"capped {s['power_capped_frac']:.2f}", flush=True)
