"""Host cost of one cuda_gemm call: enqueue time with the GPU busy, a cProfile, micro-ops."""
import cProfile
import io
import json
import os
import pstats
import sys
import time

import cupy as cp
import numpy as np

from precision.gemm import cuda_gemm, get_schedule
from precision.gpu import require_gpu, time_gpu
from precision.vendor.cublas import cublas_gemm

OUT = os.environ.get("OUT", ".")
CASES = {
    "plain fp16": lambda a, b: cuda_gemm(a, b, get_schedule("plain", "fp16", None)),
    "corrected fp16": lambda a, b: cuda_gemm(a, b, get_schedule("corrected", "fp16", "ootomo")),
    "corrected tf32": lambda a, b: cuda_gemm(a, b, get_schedule("corrected", "tf32", "ootomo")),
    "satf fp16": lambda a, b: cuda_gemm(a, b, get_schedule("satf", "fp16", None)),
    "cublas fp16": lambda a, b: cublas_gemm(a, b, mode="f16"),
    "cublas sgemm": lambda a, b: cublas_gemm(a, b, mode="sgemm"),
}
tag = sys.argv[1] if len(sys.argv) > 1 else "run"


def busy(ms=150):
    big = cp.empty((8192, 8192), dtype=cp.float32)
    for _ in range(max(1, ms // 25)):
        cublas_gemm(big, big, mode="sgemm")


rows = []
SIZES = [int(x) for x in os.environ.get("PROFILE_SIZES", "256 1024 4096 8192").split()]
ONLY = os.environ.get("PROFILE_CASES", "").split(",") if os.environ.get("PROFILE_CASES") else None
for n in SIZES:
    rng = np.random.default_rng(n)
    a = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float32))
    b = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float32))
    for name, f in CASES.items():
        if ONLY and name not in ONLY:
            continue
        if n == 8192 and name not in ("plain fp16", "satf fp16", "cublas fp16"):
            continue
        call = lambda: f(a, b)  # noqa: E731
        for _ in range(5):
            call()
        cp.cuda.Device().synchronize()
        hosts = []
        for _ in range(5):
            busy()
            t0 = time.perf_counter()
            for _ in range(60):
                call()
            hosts.append((time.perf_counter() - t0) / 60)
            cp.cuda.Device().synchronize()
        per = time_gpu(call, repeats=10, warmup=3, batch=1)
        bat = time_gpu(call, repeats=10, warmup=3, batch=20)
        row = dict(tag=tag, case=name, n=n, host_enqueue_us=1e6 * float(np.median(hosts)),
                   host_min_us=1e6 * float(np.min(hosts)),
                   one_call_us=1e6 * float(np.median(per)),
                   batched20_us=1e6 * float(np.median(bat)))
        rows.append(row)
        print(json.dumps(row), flush=True)

# cProfile of plain and corrected fp16 at n = 256 (host-bound)
prof_txt = []
n = 256
a = cp.asarray(np.ones((n, n), np.float32))
for name in ("plain fp16", "corrected fp16", "satf fp16"):
    f = CASES[name]
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(300):
        f(a, a)
    pr.disable()
    cp.cuda.Device().synchronize()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25)
    prof_txt.append(f"==== {name}\n" + s.getvalue())

# micro-ops, µs each
def per_us(fn, k=2000):
    fn()
    t0 = time.perf_counter()
    for _ in range(k):
        fn()
    cp.cuda.Device().synchronize()
    return 1e6 * (time.perf_counter() - t0) / k

x = cp.zeros((256, 256), cp.float32)
triv = cp.RawKernel(r'extern "C" __global__ void triv(int* p){ if (threadIdx.x == 1234) *p = 1; }', "triv")
flag = cp.zeros(1, cp.int32)
micro = {
    "cp.empty(256x256 f32)": per_us(lambda: cp.empty((256, 256), cp.float32)),
    "cp.zeros(1 int32)": per_us(lambda: cp.zeros(1, cp.int32)),
    "flag.fill(0)": per_us(lambda: flag.fill(0)),
    "memsetAsync": per_us(lambda: cp.cuda.runtime.memsetAsync(flag.data.ptr, 0, 4, cp.cuda.get_current_stream().ptr)),
    "cp.asarray(f32, dtype=f32)": per_us(lambda: cp.asarray(x, dtype=cp.float32)),
    "cp.ascontiguousarray(f32)": per_us(lambda: cp.ascontiguousarray(x, dtype=cp.float32)),
    "require_gpu": per_us(lambda: require_gpu("x")),
    "RawKernel launch (1 arg)": per_us(lambda: triv((1,), (32,), (flag,))),
    "RawKernel launch (7 args)": per_us(lambda: triv((1,), (32,), (flag, x, x, cp.int32(1), cp.int32(2), cp.int32(3), flag))),
    "cp.int32(5)": per_us(lambda: cp.int32(5)),
}
print(json.dumps(micro, indent=1))
with open(f"{OUT}/launch_profile_{tag}.json", "a") as fh:
    fh.write(json.dumps(dict(rows=rows, micro=micro)) + "\n")
if os.environ.get("PROFILE_CPROFILE", "1") == "1":
  with open(f"{OUT}/launch_profile_{tag}.txt", "w") as fh:
    fh.write("\n".join(prof_txt))
