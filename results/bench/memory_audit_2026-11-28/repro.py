import sys, time, tracemalloc, numpy as np, ml_dtypes
from precision import mma
from precision.gemm import gemm
r = np.random.default_rng(0)
def peak(label, f):
    tracemalloc.start(); t = time.perf_counter(); out = f(); dt = time.perf_counter() - t
    p = tracemalloc.get_traced_memory()[1]; tracemalloc.stop()
    print(f"{label}: peak beyond output {(p - out.nbytes) / 2**20:.0f} MiB, {dt:.1f}s", flush=True)
which = sys.argv[1]
if which == "int8":
    for K in (4096, 16384, 65536):
        a = r.integers(-128, 128, (1, K), dtype=np.int8); b = r.integers(-128, 128, (K, 4096), dtype=np.int8)
        peak(f"mma int8 1x{K}x4096 (b = {b.nbytes >> 20} MiB)", lambda: mma(a, b, np.zeros((1, 4096), np.int32)))
if which == "fp8batch":
    for R in (100_000, 200_000, 400_000):
        a = r.integers(-4, 4, (R, 16, 32)).astype(ml_dtypes.float8_e4m3fn); b = r.integers(-4, 4, (R, 32, 8)).astype(ml_dtypes.float8_e4m3fn)
        peak(f"mma e4m3 {R} tiles (b = {b.nbytes >> 20} MiB)", lambda: mma(a, b, np.zeros((R, 16, 8), np.float32)))
if which == "sgemm":
    for K in (16384, 65536):
        A = r.uniform(-1, 1, (1, K)).astype(np.float32); B = r.uniform(-1, 1, (K, 4096)).astype(np.float32)
        peak(f"gemm fp32 1x{K}x4096 (B = {B.nbytes >> 20} MiB)", lambda: gemm(A, B, method="plain", fmt="fp32"))
if which == "f64":
    for K in (4096, 16384):
        a = r.uniform(-1, 1, (1, K)); b = r.uniform(-1, 1, (K, 4096))
        peak(f"mma f64 1x{K}x4096 (b = {b.nbytes >> 20} MiB)", lambda: mma(a, b, np.zeros((1, 4096))))
if which == "f64slow":
    for n in (32, 64):
        for s in (1.0, 1e-140):
            a = r.uniform(-1, 1, (n, n)) * s; b = r.uniform(-1, 1, (n, n)) * s
            t = time.perf_counter(); mma(a, b, np.zeros((n, n))); print(f"mma f64 n={n} scale {s:g}: {time.perf_counter() - t:.3f}s", flush=True)
