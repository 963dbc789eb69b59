"""Per-call host enqueue time and back-to-back GPU time of the wgmma satf / corrected bf16/tf32
calls (whose fallback decision used to read a flag on the host) and unchanged controls.
Run once per tree: PYTHONPATH selects the tree; argv[1] is its tag. One JSON line per case."""
import json
import os
import sys
import time

import cupy as cp
import numpy as np

from precision.gemm import cuda_gemm, get_schedule
from precision.gpu import time_gpu
from precision.vendor.cublas import cublas_gemm

tag = sys.argv[1]
CASES = {
    "satf fp16": ("satf", "fp16", None),
    "satf bf16": ("satf", "bf16", None),
    "satf tf32": ("satf", "tf32", None),
    "corrected bf16": ("corrected", "bf16", "ootomo"),
    "corrected tf32": ("corrected", "tf32", "ootomo"),
    "plain fp16 (control)": ("plain", "fp16", None),
    "corrected fp16 (control)": ("corrected", "fp16", "ootomo"),
}


def busy():
    big = cp.empty((8192, 8192), dtype=cp.float32)
    for _ in range(6):
        cublas_gemm(big, big, mode="sgemm")


for n in (1024, 4096, 8192):
    rng = np.random.default_rng(n)
    a = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float32))
    b = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float32))
    fns = {k: get_schedule(*v) for k, v in CASES.items()}
    fns["cublas sgemm (control)"] = None
    for name, s in fns.items():
        call = (lambda: cublas_gemm(a, b, mode="sgemm")) if s is None else (lambda s=s: cuda_gemm(a, b, s))
        for _ in range(3):
            call()
        cp.cuda.Device().synchronize()
        hosts = []
        for _ in range(3):
            busy()  # the GPU has queued work: a call that waits for it shows here
            t0 = time.perf_counter()
            for _ in range(20):
                call()
            hosts.append((time.perf_counter() - t0) / 20)
            cp.cuda.Device().synchronize()
        one = time_gpu(call, repeats=10, warmup=2, batch=1)
        b20 = time_gpu(call, repeats=5, warmup=2, batch=20)
        print(json.dumps({"tree": tag, "n": n, "case": name,
                          "host_enqueue_us": round(float(np.median(hosts)) * 1e6, 1),
                          "gpu_one_call_us": round(float(np.median(one)) * 1e6, 1),
                          "gpu_batch20_us": round(float(np.median(b20)) * 1e6, 1)}), flush=True)
