"""Record every CUDA GEMM kernel (all_schedules) on fp32 inputs holding +-Inf, NaN, values
beyond fp16's range and an fp32 subnormal, and compare each with the emulator, bit for bit."""
import json, os, subprocess, time
import numpy as np
from precision.gemm.api import cuda_gemm
from precision.gemm.emulator import run_schedule
from precision.gemm.record import kernel_inputs
from precision.gemm.schedule import all_schedules

n = 32
rng = np.random.default_rng(20261127)
A = rng.uniform(-1, 1, (n, n)).astype(np.float32)
B = rng.uniform(-1, 1, (n, n)).astype(np.float32)
inf, nan = np.float32(np.inf), np.float32(np.nan)
A[0, 3] = inf            # row 0: one +Inf
A[1, 5] = -inf           # row 1: one -Inf
A[2, 7] = nan            # row 2: a NaN
A[3, 0] = inf; B[0, 4] = 0.0          # Inf * 0 at output (3, 4)
A[4, 12] = inf; A[4, 13] = -inf       # row 4: Inf - Inf
A[5, 1] = 70000.0        # beyond fp16's range (hi = fp16(x) = Inf)
A[6, 2] = 1e-40          # an fp32 subnormal
B[9, 1] = inf            # column 1: +Inf
B[10, 2] = -inf          # column 2: -Inf
B[11, 6] = nan           # column 6: NaN
B[20, 7] = 3.0e38; A[7, 20] = 4.0     # a finite product beyond FLT_MAX at (7, 7)
out = {"A": A.view(np.uint32), "B": B.view(np.uint32)}
summary = {}
for s in all_schedules():
    Ak, Bk = kernel_inputs(A, B, s)
    D = np.asarray(cuda_gemm(Ak, Bk, s).get(), dtype=np.float32)
    t0 = time.time()
    E = run_schedule(Ak, Bk, s)
    same = int(np.count_nonzero(E.view(np.uint32) == D.view(np.uint32)))
    out[f"{s.kernel}/D"] = D.view(np.uint32)
    summary[s.kernel] = {"identical": same, "of": D.size, "nan": int(np.isnan(D).sum()),
                         "inf": int(np.isinf(D).sum())}
    print(f"{s.kernel:22s} emulator identical {same}/{D.size}  nan {int(np.isnan(D).sum())}  "
          f"inf {int(np.isinf(D).sum())}  ({time.time() - t0:.1f} s)")
dev = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip()
meta = {"git_commit": os.environ.get("PRECISION_GIT_COMMIT", ""), "device": dev,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "n": n}
out["meta"] = np.array(json.dumps(meta))
np.savez_compressed(os.path.join(os.environ["OUT"], "special_inputs_h200.npz"), **out)
json.dump({"meta": meta, "kernels": summary}, open(os.path.join(os.environ["OUT"], "special_inputs_summary.json"), "w"), indent=1)
print(json.dumps(meta))
