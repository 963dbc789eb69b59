"""Record gemm satf/plain int8 (CUDA) on inputs whose int32 partial sums pass 2^31."""
import json, os, sys, time
import numpy as np
from precision.gemm import gemm
from precision.gemm.emulator import run_schedule
from precision.gemm.schedule import all_schedules

M = N = 16
K = 163840
k = np.arange(K)
A = np.where(k[None, :] < (131072 + 2048 * np.arange(M))[:, None], 127.0, -127.0).astype(np.float32)
B = np.where(k[:, None] < (K - 8192 * np.arange(N))[None, :], 127.0, -127.0).astype(np.float32)
out = {}
for method in ("satf", "plain"):
    D = np.asarray(gemm(A, B, method=method, fmt="int8", backend="cuda"))
    out[f"D_{method}"] = D
    sched = next(s for s in all_schedules() if s.kernel == f"gemm_{method}_int8")
    t0 = time.time()
    E = run_schedule(A, B, sched)
    same = int(np.count_nonzero(E.view(np.uint32) == D.view(np.uint32)))
    print(method, D.dtype, D.shape, "emulator identical:", same, "/", D.size, f"({time.time()-t0:.1f} s)")
exact = (A.astype(np.int64) @ B.astype(np.int64))
print("cells where satf != plain:", int(np.count_nonzero(out["D_satf"] != out["D_plain"])))
print("cells where satf != exact:", int(np.count_nonzero(out["D_satf"] != exact.astype(np.float32))))
print("satf row 0:", out["D_satf"][0, :6], "plain row 0:", out["D_plain"][0, :6], "exact:", exact[0, :6])
np.savez_compressed(os.path.join(os.environ["OUT"], "satf_int8_overflow_h200.npz"), **out)
