"""Burst timing of ozaki2 / ozaki1 (target fp32) with float32 inputs, read as float32 by the
kernels, against the same inputs as float64 and cuBLAS SGEMM, in one process (H200).
Usage: PYTHONPATH=. python results/bench/ozaki_f32_inputs_h200_2026-11-28/bench.py"""

from functools import partial

import cupy as cp

from precision.gemm.ozaki1_cuda import ozaki1_cuda
from precision.gemm.ozaki_cuda import ozaki2_cuda


def ms(fn, reps=20):
    """Fastest and slowest of three means over ``reps`` back-to-back calls (ms)."""
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


def exp_rand(rng, n):
    return ((rng.random((n, n)) - 0.5) * cp.exp(0.5 * rng.standard_normal((n, n)))).astype(
        cp.float32
    )


for n in (4096, 8192):
    rng = cp.random.default_rng(0)
    A32, B32 = exp_rand(rng, n), exp_rand(rng, n)
    A64, B64 = A32.astype(cp.float64), B32.astype(cp.float64)
    flops = 2.0 * n**3
    oz2 = partial(ozaki2_cuda, target="fp32", terms=8)
    oz1 = partial(ozaki1_cuda, fmt="int8", target="fp32", terms=4)
    rows = [
        ("cuBLAS SGEMM", partial(cp.matmul, A32, B32)),
        ("ozaki2 fp32 8 moduli, float32 inputs", partial(oz2, A32, B32)),
        ("ozaki2 fp32 8 moduli, float64 inputs", partial(oz2, A64, B64)),
        ("ozaki1 int8 fp32 4 slices, float32 inputs", partial(oz1, A32, B32)),
        ("ozaki1 int8 fp32 4 slices, float64 inputs", partial(oz1, A64, B64)),
    ]
    same = bool(cp.array_equal(oz2(A32, B32)[0].view(cp.uint32), oz2(A64, B64)[0].view(cp.uint32)))
    print(f"n = {n}: ozaki2 output for float32 inputs bit-identical to float64 inputs': {same}")
    for name, fn in rows:
        lo, hi = ms(fn)
        rate = f"{flops / hi / 1e9:7.1f}-{flops / lo / 1e9:7.1f} TFLOP/s"
        print(f"  {name:<44} {lo:8.3f}-{hi:8.3f} ms  {rate}")
