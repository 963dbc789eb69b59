"""The CUDA Ozaki backends with the workspace limit in the inputs' own size (2026-11-28):
float32 and float64 inputs of the same values at n = 4096, 8192 and 16384 (exp_rand, phi =
0.5), in one process on the H200. Per call: the row and column blocks, the workspace and the
memory pool's peak beyond the output as multiples of the inputs' own size, burst time, and
whether the float32 call gives the float64 call's bits. cuBLAS DGEMM / SGEMM for scale.
Usage: PYTHONPATH=. python results/bench/ozaki_workspace_own_size_h200_2026-11-28/bench.py
(writes bench.csv under $OUT when set, else beside this file)."""

import csv
import os
from functools import partial
from pathlib import Path

import cupy as cp

from precision.gemm.ozaki1_cuda import ozaki1_cuda
from precision.gemm.ozaki_cuda import ozaki2_cuda


def ms(fn, reps):
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


def peak(fn):
    """``fn()`` and the memory pool's largest extra bytes in use during it."""
    pool = cp.get_default_memory_pool()
    cp.cuda.Device().synchronize()
    base = pool.used_bytes()
    top = [base]

    def alloc(size):
        mem = pool.malloc(size)
        top[0] = max(top[0], pool.used_bytes())
        return mem

    with cp.cuda.using_allocator(alloc):
        out = fn()
    cp.cuda.Device().synchronize()
    return out, top[0] - base


def exp_rand(rng, n):
    return ((rng.random((n, n)) - 0.5) * cp.exp(0.5 * rng.standard_normal((n, n)))).astype(
        cp.float32
    )


CASES = [  # (name, function, sizes)
    ("ozaki2 fp64 15 moduli", partial(ozaki2_cuda, target="fp64", terms=15), (4096, 8192, 16384)),
    ("ozaki2 fp32 8 moduli", partial(ozaki2_cuda, target="fp32", terms=8), (4096, 8192, 16384)),
    (
        "ozaki1 int8 fp64 8 slices",
        partial(ozaki1_cuda, fmt="int8", target="fp64", terms=8),
        (4096, 8192),
    ),
    (
        "ozaki1 int8 fp32 4 slices",
        partial(ozaki1_cuda, fmt="int8", target="fp32", terms=4),
        (4096, 8192),
    ),
]
rows = []
for n in (4096, 8192, 16384):
    rng = cp.random.default_rng(0)
    A32, B32 = exp_rand(rng, n), exp_rand(rng, n)
    A64, B64 = A32.astype(cp.float64), B32.astype(cp.float64)
    flops = 2.0 * n**3
    reps = 10 if n <= 8192 else 3
    for name, fn in (
        ("cuBLAS DGEMM", partial(cp.matmul, A64, B64)),
        ("cuBLAS SGEMM", partial(cp.matmul, A32, B32)),
    ):
        lo, hi = ms(fn, reps)
        print(
            f"n = {n:5d} {name:<28} {lo:9.3f}-{hi:9.3f} ms {flops / hi / 1e9:6.1f}-"
            f"{flops / lo / 1e9:6.1f} TFLOP/s",
            flush=True,
        )
        rows.append({"n": n, "case": name, "inputs": "", "ms_lo": lo, "ms_hi": hi})
    outs = {}
    for name, fn, sizes in CASES:
        if n not in sizes:
            continue
        for kind, (A, B) in (("float32", (A32, B32)), ("float64", (A64, B64))):
            fn(A, B)  # warm-up
            (D, run), top = peak(partial(fn, A, B))
            own = A.nbytes + B.nbytes
            lo, hi = ms(partial(fn, A, B), reps)
            outs[(name, kind)] = D
            r = {
                "n": n,
                "case": name,
                "inputs": kind,
                "ms_lo": lo,
                "ms_hi": hi,
                "mb": getattr(run, "mb", ""),
                "nb": run.nb,
                "workspace_x_input": run.workspace_bytes / own,
                "pool_peak_beyond_output_x_input": (top - D.nbytes) / own,
            }
            rows.append(r)
            print(
                f"n = {n:5d} {name:<28} {kind} {lo:9.3f}-{hi:9.3f} ms "
                f"{flops / hi / 1e9:6.1f}-{flops / lo / 1e9:6.1f} TFLOP/s  mb {r['mb']} "
                f"nb {r['nb']} workspace {r['workspace_x_input']:.3f}x  pool peak "
                f"{r['pool_peak_beyond_output_x_input']:.3f}x",
                flush=True,
            )
            del D
        D32, D64 = outs.pop((name, "float32")), outs.pop((name, "float64"))
        u = cp.uint64 if D64.dtype == cp.float64 else cp.uint32
        same = bool(cp.array_equal(D32.view(u), D64.view(u)))
        rows[-1]["same_bits_as_float32_call"] = rows[-2]["same_bits_as_float32_call"] = same
        print(f"n = {n:5d} {name:<28} float32 and float64 inputs bit-identical: {same}", flush=True)
        del D32, D64
    del A32, B32, A64, B64
    cp.get_default_memory_pool().free_all_blocks()

out = Path(os.environ.get("OUT") or Path(__file__).parent) / "bench.csv"
FIELDS = [
    "n",
    "case",
    "inputs",
    "ms_lo",
    "ms_hi",
    "mb",
    "nb",
    "workspace_x_input",
    "pool_peak_beyond_output_x_input",
    "same_bits_as_float32_call",
]
with open(out, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=FIELDS, restval="")
    w.writeheader()
    w.writerows(rows)
print("wrote", out)
