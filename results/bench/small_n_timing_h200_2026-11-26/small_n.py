"""Small-n GPU timing: what the runner's per-call CUDA-event time contains.

python .devrun/small_n.py times      -> per-call events (the runner's method), batched events,
                                       host enqueue time per call
python .devrun/small_n.py ncu        -> one call per (case, n) between marker kernels, for
                                       ncu --clock-control none (kernel-only durations)
"""
import json
import sys
import time

import cupy as cp
import numpy as np

from precision.gemm import cuda_gemm, get_schedule
from precision.gpu import time_gpu
from precision.vendor.cublas import cublas_gemm

SIZES = (1024, 2048, 4096, 8192)
CASES = {
    "cuda plain fp16": lambda a, b: cuda_gemm(a, b, get_schedule("plain", "fp16", None)),
    "cuda corrected fp16": lambda a, b: cuda_gemm(a, b, get_schedule("corrected", "fp16", "ootomo")),
    "cublas plain fp16": lambda a, b: cublas_gemm(a, b, mode="f16"),
    "cublas sgemm": lambda a, b: cublas_gemm(a, b, mode="sgemm"),
}


def inputs(n):
    rng = np.random.default_rng(n)
    return (cp.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float32)),
            cp.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float32)))


def times():
    rows = []
    for n in SIZES:
        a, b = inputs(n)
        for name, f in CASES.items():
            call = lambda: f(a, b)  # noqa: E731
            per = time_gpu(call, repeats=10, warmup=3)
            r = 20
            batched = []
            for _ in range(5):
                cp.cuda.Device().synchronize()
                s, e = cp.cuda.Event(), cp.cuda.Event()
                s.record()
                for _ in range(r):
                    call()
                e.record()
                e.synchronize()
                batched.append(cp.cuda.get_elapsed_time(s, e) / 1e3 / r)
            # host time to enqueue one call while the GPU is kept busy by a long kernel
            cp.cuda.Device().synchronize()
            big = cp.empty((8192, 8192), dtype=cp.float32)
            for _ in range(3):
                cublas_gemm(big, big, mode="sgemm")  # ~60 ms of queued GPU work
            t0 = time.perf_counter()
            for _ in range(r):
                call()
            host = (time.perf_counter() - t0) / r
            cp.cuda.Device().synchronize()
            row = dict(case=name, n=n, per_call_median_us=1e6 * float(np.median(per)),
                       per_call_min_us=1e6 * float(np.min(per)),
                       batched20_median_us=1e6 * float(np.median(batched)),
                       host_enqueue_us=1e6 * host)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def marker(tag):
    cp.ElementwiseKernel("", "int32 x", "x = 1", tag)(cp.zeros(1, cp.int32))


def ncu():
    idx = 0
    order = []
    for n in SIZES:
        a, b = inputs(n)
        for name, f in CASES.items():
            f(a, b)  # compile and warm outside the marked region
            cp.cuda.Device().synchronize()
            marker(f"begin_{idx}")
            f(a, b)
            marker(f"end_{idx}")
            cp.cuda.Device().synchronize()
            order.append(dict(marker=idx, case=name, n=n))
            idx += 1
    print(json.dumps(order))


if __name__ == "__main__":
    times() if sys.argv[1] == "times" else ncu()
