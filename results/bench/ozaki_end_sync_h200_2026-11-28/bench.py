"""What does the one host synchronisation at the end of an ozaki2 CUDA call cost?
(`specials_if_bad` copies max(bad flags) to the host to decide whether NaN/Inf outputs need
writing.) Float64 exp_rand inputs (phi = 0.5), 15 moduli, fused GEMM, one process on the H200:
the shipped call against the same call with that check left on the device (a reduction whose
result is not read: what a device-side special-value step would cost when nothing is bad).
Burst: 3 rounds of back-to-back calls; at n = 8192 also sustained (time_gpu_sampled, 4 s,
rounds alternating). Also the host time of one call up to its return without the sync.
Usage: PYTHONPATH=. python results/bench/ozaki_end_sync_h200_2026-11-28/bench.py"""

import time
from functools import partial

import cupy as cp

from precision.gemm import ozaki_cuda as oc
from precision.telemetry import summarize, time_gpu_sampled

shipped = oc.specials_if_bad


def device_only(cp_, D, A, B, bad_all, dsa, dsb, target):
    """The check's reduction, its result left on the device (no host copy, no sync)."""
    if bad_all.size and D.size:
        bad_all.max()


VARIANTS = {"shipped (sync)": shipped, "no end sync": device_only}


def ms(fn, reps):
    fn()
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    means = []
    for _ in range(3):
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        means.append(cp.cuda.get_elapsed_time(start, end) / reps)
    return min(means), max(means)


for n in (256, 1024, 2048, 4096, 8192):
    rng = cp.random.default_rng(1)
    A = (rng.random((n, n)) - 0.5) * cp.exp(0.5 * rng.standard_normal((n, n)))
    B = (rng.random((n, n)) - 0.5) * cp.exp(0.5 * rng.standard_normal((n, n)))
    reps = max(5, min(200, int(2e9 / n**3)))
    lo, hi = ms(partial(cp.matmul, A, B), reps)
    print(f"n = {n:5d} cuBLAS DGEMM {lo:8.4f}-{hi:8.4f} ms", flush=True)
    call = partial(oc.ozaki2_cuda, A, B, target="fp64", terms=15, gemm="fused")
    for name, fn in VARIANTS.items():
        oc.specials_if_bad = fn
        lo, hi = ms(call, reps)
        D, run = oc.ozaki2_cuda(A, B, terms=15, gemm="fused", timed=True)
        phases = sum(run.phase_ms.values())
        print(
            f"n = {n:5d} {name:<15} {lo:8.4f}-{hi:8.4f} ms  timed call's phases {phases:8.4f} ms",
            flush=True,
        )
    oc.specials_if_bad = device_only
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(5):
        call()
    host = (time.perf_counter() - t0) / 5 * 1e3
    cp.cuda.Device().synchronize()
    print(
        f"n = {n:5d} host time per call without the sync (queue not full): {host:.4f} ms",
        flush=True,
    )
    oc.specials_if_bad = shipped

n = 8192
rng = cp.random.default_rng(1)
A = (rng.random((n, n)) - 0.5) * cp.exp(0.5 * rng.standard_normal((n, n)))
B = (rng.random((n, n)) - 0.5) * cp.exp(0.5 * rng.standard_normal((n, n)))
flops = 2 * n**3
for rnd in range(2):
    for name, fn in [("DGEMM", None), *VARIANTS.items()]:
        if fn is None:
            f = partial(cp.matmul, A, B)
        else:
            oc.specials_if_bad = fn
            f = partial(oc.ozaki2_cuda, A, B, target="fp64", terms=15, gemm="fused")
        times, samples = time_gpu_sampled(f, repeats=3, warmup=2, min_seconds=4.0)
        t = sorted(times)[len(times) // 2]
        s = summarize(samples, t, flops)
        print(
            f"round {rnd} sustained n = 8192 {name:<15} {t * 1e3:8.3f} ms "
            f"{flops / t / 1e12:6.1f} TFLOP/s {s['power_w']:5.0f} W "
            f"{s['sm_clock_mhz']:5.0f} MHz",
            flush=True,
        )
    oc.specials_if_bad = shipped
