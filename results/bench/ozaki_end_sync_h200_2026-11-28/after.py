"""The same measurements as bench.py (run before the change, at cfb45f8: bench.txt), at the
code that writes the NaN/Inf outputs on the device (`write_specials`, no host synchronisation)
and copies the GEMM's moduli to the device once: float64 exp_rand inputs (phi = 0.5), 15
moduli, fused GEMM, burst and host time per call for n = 256 ... 8192, sustained at 8192 next
to DGEMM. Then the special-value step alone at n = 4096: the device kernel against the host
path it replaces (flags to the host, then precision.gemm.ozaki.apply_specials on CuPy
arrays), same bits required, for inputs with no bad line, one bad row, one bad column, 16 of
each, and an Inf in every row.
Usage: PYTHONPATH=. python results/bench/ozaki_end_sync_h200_2026-11-28/after.py"""

import time
from functools import partial
from types import SimpleNamespace

import cupy as cp
import numpy as np

from precision.gemm import ozaki_cuda as oc
from precision.gemm import ozaki_gemm_launch as gl
from precision.gemm.ozaki import apply_specials
from precision.telemetry import summarize, time_gpu_sampled


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


def exp_rand(n, seed=1):
    rng = cp.random.default_rng(seed)
    A = (rng.random((n, n)) - 0.5) * cp.exp(0.5 * rng.standard_normal((n, n)))
    B = (rng.random((n, n)) - 0.5) * cp.exp(0.5 * rng.standard_normal((n, n)))
    return A, B


shipped_specials, shipped_moduli = oc.write_specials, gl._device_moduli


def old_specials(cp_, D, A, B, bad_all, emax_a, emax_b, target):
    """Before: copy max(bad flags) to the host (a synchronisation); only when some line is
    bad, the flags too, and apply_specials on CuPy arrays."""
    if bad_all.size and D.size and int(bad_all.max().get()):
        M = A.shape[0]
        flags = bad_all.get() != 0
        apply_specials(D, A, B, SimpleNamespace(bad=flags[:M]), SimpleNamespace(bad=flags[M:]),
                       target, xp=cp)  # fmt: skip


def old_moduli(device, moduli):
    """Before: the moduli copied to the device at every GEMM launch."""
    return cp.asarray(np.array(moduli, dtype=np.int32))


def use(before):
    oc.write_specials = old_specials if before else shipped_specials
    gl._device_moduli = old_moduli if before else shipped_moduli


for n in (256, 1024, 2048, 4096, 8192):
    A, B = exp_rand(n)
    reps = max(5, min(200, int(2e9 / n**3)))
    lo, hi = ms(partial(cp.matmul, A, B), reps)
    print(f"n = {n:5d} cuBLAS DGEMM {lo:8.4f}-{hi:8.4f} ms", flush=True)
    call = partial(oc.ozaki2_cuda, A, B, target="fp64", terms=15, gemm="fused")
    ref = None
    for before in (True, False, True, False):
        use(before)
        name = "before (sync)" if before else "after (no sync)"
        lo, hi = ms(call, reps)
        D, run = oc.ozaki2_cuda(A, B, terms=15, gemm="fused", timed=True)
        ref = D if ref is None else ref
        same = bool(cp.array_equal(D.view(cp.uint64), ref.view(cp.uint64)))
        phases = " ".join(f"{k} {v:.4f}" for k, v in run.phase_ms.items())
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(5):
            call()
        host = (time.perf_counter() - t0) / 5 * 1e3
        cp.cuda.Device().synchronize()
        print(
            f"n = {n:5d} ozaki2 15 {name:<16} {lo:8.4f}-{hi:8.4f} ms  host time per call "
            f"{host:.4f} ms  same bits: {same}  timed call: {phases}",
            flush=True,
        )
    use(False)

n = 8192
A, B = exp_rand(n)
flops = 2 * n**3
for rnd in range(2):
    for name, f in (("DGEMM", partial(cp.matmul, A, B)),
                    ("ozaki2 15", partial(oc.ozaki2_cuda, A, B, target="fp64", terms=15,
                                          gemm="fused"))):  # fmt: skip
        times, samples = time_gpu_sampled(f, repeats=3, warmup=2, min_seconds=4.0)
        t = sorted(times)[len(times) // 2]
        s = summarize(samples, t, flops)
        print(
            f"round {rnd} sustained n = 8192 {name:<10} {t * 1e3:8.3f} ms "
            f"{flops / t / 1e12:6.1f} TFLOP/s {s['power_w']:5.0f} W "
            f"{s['sm_clock_mhz']:5.0f} MHz",
            flush=True,
        )


def device_step(D, A, B, bad, dsa, dsb):
    oc.write_specials(cp, D, A, B, bad, dsa.emax, dsb.emax, "fp64")


def host_path(D, A, B, bad, dsa, dsb):
    if int(bad.max().get()):
        apply_specials(D, A, B, dsa.to_host(), dsb.to_host(), "fp64", xp=cp)


# the special-value step alone, n = 4096
n = 4096
base_a, base_b = exp_rand(n, seed=2)
rng = np.random.default_rng(3)
cases = {}
cases["no bad line"] = (base_a, base_b)
a1 = base_a.copy()
a1[100, 5] = cp.inf
cases["1 bad row"] = (a1, base_b)
b1 = base_b.copy()
b1[7, 200] = -cp.inf
cases["1 bad column"] = (base_a, b1)
a16, b16 = base_a.copy(), base_b.copy()
for r in rng.choice(n, 16, replace=False):
    a16[int(r), int(rng.integers(n))] = cp.nan if r % 2 else cp.inf
for c in rng.choice(n, 16, replace=False):
    b16[int(rng.integers(n)), int(c)] = -cp.inf
cases["16 bad rows, 16 bad columns"] = (a16, b16)
aall = base_a.copy()
aall[cp.arange(n), cp.asarray(rng.integers(0, n, n))] = cp.inf
cases["an Inf in every row"] = (aall, base_b)
ball = base_b.copy()
ball[cp.asarray(rng.integers(0, n, n)), cp.arange(n)] = -cp.inf
cases["an Inf in every row and column"] = (aall, ball)
for name, (A, B) in cases.items():
    D0, _ = oc.ozaki2_cuda(A, B, terms=15, gemm="fused")
    bad = cp.concatenate([(~cp.isfinite(A)).any(axis=1), (~cp.isfinite(B)).any(axis=0)])
    bad = bad.astype(cp.int32)
    dsa = oc.device_line_stats(cp, A, 1, bad=bad[:n])
    dsb = oc.device_line_stats(cp, B, 0, bad=bad[n:])
    new = D0.copy()
    old = D0.copy()
    reps = 3 if name.startswith("an Inf") else 20

    t_new = ms(partial(device_step, new, A, B, bad, dsa, dsb), reps)
    t_old = ms(partial(host_path, old, A, B, bad, dsa, dsb), reps)
    same = bool(cp.array_equal(new.view(cp.uint64), old.view(cp.uint64)))
    nonfinite = int((~cp.isfinite(new)).sum())
    print(
        f"specials n = 4096 {name:<28} device kernel {t_new[0]:9.4f}-{t_new[1]:9.4f} ms  "
        f"host path {t_old[0]:9.4f}-{t_old[1]:9.4f} ms  same bits: {same}  "
        f"non-finite outputs: {nonfinite}",
        flush=True,
    )
