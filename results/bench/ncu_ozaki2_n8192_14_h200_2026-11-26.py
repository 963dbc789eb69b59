"""One ozaki2 fp64 call (n = 8192, 14 moduli, fused GEMM) inside cudaProfilerStart/Stop, for
ncu (--profile-from-start off); a warm-up call first compiles and loads every kernel."""

import cupy as cp

from precision.gemm.ozaki_cuda import ozaki2_cuda

n = 8192
rs = cp.random.RandomState(0)
A = rs.random_sample((n, n)) - 0.5
B = rs.random_sample((n, n)) - 0.5
ozaki2_cuda(A, B, target="fp64", terms=14)
cp.cuda.runtime.deviceSynchronize()
cp.cuda.profiler.start()
D, run = ozaki2_cuda(A, B, target="fp64", terms=14)
cp.cuda.runtime.deviceSynchronize()
cp.cuda.profiler.stop()
print("gemm path", run.gemm, "column block", run.nb, "moduli", run.plan.moduli)
