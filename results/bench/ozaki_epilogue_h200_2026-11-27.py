"""A/B on the H200: the fused INT8 GEMM's epilogue without conversion instructions
(residue_low_byte of precision/kernels/ozaki_residue.cuh) against the previous one (sym_mod:
four I2F/F2I per value, kept as the general path and forced with -DOZ_EPILOGUE_SYM_MOD).

1. exactness of the new kernel against cuBLAS's int32 product reduced with integer ops
   (precision.gemm.ozaki_gemm_check.exactness: random, all -128, mixed extremes, ragged),
   plus moduli outside Ozaki-II's (even, small) that take the general path;
2. the 15 products of n = 8192 alone, both kernels, sustained (>= SECS s back to back,
   rounds alternating), outputs compared;
3. whole ozaki2_cuda calls (14 and 15 moduli, n = 8192) with each kernel, and DGEMM, in the
   same process, rounds alternating, outputs compared.

Run: PYTHONPATH=. python results/bench/ozaki_epilogue_h200_2026-11-27.py [SECS]
"""

from __future__ import annotations

import functools
import sys

import numpy as np

from precision.gemm import ozaki_cuda as oc
from precision.gemm import ozaki_gemm_check as chk
from precision.gemm import ozaki_gemm_launch as launch
from precision.gpu import require_gpu
from precision.telemetry import summarize, time_gpu_sampled

cp = require_gpu("the epilogue A/B")
OLD = ("-DOZ_EPILOGUE_SYM_MOD",)
secs = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
print("device", cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), flush=True)
print(chk.ptxas_report(), flush=True)

ok = chk.exactness(cp)
for mods in ((100, 2, 254), (129, 131, 7)):  # the general path (and 129/131: odd > 128)
    for i, (M, nbp, kp) in enumerate(((256, 384, 384), (200, 272, 400))):
        a = chk.random_i8(cp, (3, M, kp), 50 + i)
        b = chk.random_i8(cp, (3, nbp, kp), 60 + i)
        ref, _ = chk.reference(cp, a, b, M, nbp, kp, mods)
        R = cp.full((3, M, nbp), 99, dtype=cp.int8)
        launch.gemm_mod(cp, a, b, R, M, nbp, kp, 3, mods)
        bad = int(cp.count_nonzero(R != ref))
        ok &= bad == 0
        print(f"exact moduli {mods} M={M} nbp={nbp} kp={kp}: {'identical' if bad == 0 else bad}",
              flush=True)  # fmt: skip

n, L = 8192, 15
mods15 = cp.asarray(np.array(oc.make_plan("ozaki2", "int8", "fp64", 15, n).moduli, np.int32))
a = chk.random_i8(cp, (L, n, n), 101)
b = chk.random_i8(cp, (L, n, n), 102)
R_new = cp.empty((L, n, n), dtype=cp.int8)
R_old = cp.empty((L, n, n), dtype=cp.int8)
launch.gemm_mod(cp, a, b, R_new, n, n, n, L, mods15)
launch.gemm_mod(cp, a, b, R_old, n, n, n, L, mods15, flags=OLD)
same = bool(cp.array_equal(R_new, R_old))
ok &= same
print(f"gemm n={n} 15 moduli: new == old epilogue: {same}", flush=True)
ops = 2.0 * n**3 * L


def line(tag: str, name: str, med: float, smp, work: float, unit: str) -> None:
    s = summarize(smp, med, work)
    print(f"{tag} {name:16s} {med * 1e3:8.3f} ms {work / med / 1e12:8.1f} {unit} "
          f"{s['power_w']:5.0f} W {s['sm_clock_mhz']:5.0f} MHz capped "
          f"{s['power_capped_frac']:.2f} {med * s['power_w']:6.2f} J/call", flush=True)  # fmt: skip


for rnd in range(2):
    for name, flags in (("gemm new", ()), ("gemm old", OLD)):
        fn = functools.partial(launch.gemm_mod, cp, a, b, R_new, n, n, n, L, mods15, flags=flags)
        t, smp = time_gpu_sampled(fn, repeats=10, warmup=2, min_seconds=secs)
        line(f"round {rnd}", name, float(np.median(t)), smp, ops, "TOPS")
del a, b, R_new, R_old
cp.get_default_memory_pool().free_all_blocks()

original = launch.gemm_mod
rng = np.random.default_rng(5)
A = cp.asarray(rng.random((n, n)) - 0.5)
B = cp.asarray(rng.random((n, n)) - 0.5)


def call(terms: int, flags: tuple[str, ...]):
    launch.gemm_mod = functools.partial(original, flags=flags)
    try:
        return oc.ozaki2_cuda(A, B, terms=terms, gemm="fused")[0]
    finally:
        launch.gemm_mod = original


for terms in (15, 14):
    same = bool(cp.array_equal(call(terms, ()).view(cp.int64), call(terms, OLD).view(cp.int64)))
    ok &= same
    print(f"ozaki2 n={n} {terms} moduli: new == old epilogue: {same}", flush=True)
flops = 2.0 * n**3
for rnd in range(2):
    variants = [("dgemm", lambda: A @ B)]
    for terms in (15, 14):
        for tag, flags in (("new", ()), ("old", OLD)):
            variants.append((f"oz{terms} {tag}", functools.partial(call, terms, flags)))
    for name, fn in variants:
        t, smp = time_gpu_sampled(fn, repeats=5, warmup=2, min_seconds=secs)
        line(f"round {rnd}", name, float(np.median(t)), smp, flops, "TFLOP/s")
print("ALL OK" if ok else "FAILURES", flush=True)
