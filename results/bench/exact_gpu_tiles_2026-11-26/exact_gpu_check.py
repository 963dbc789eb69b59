"""exact_matmul on the GPU at n = 4096 after the larger GPU tile budget: time (3 warm calls),
device memory peak (CuPy pool), and bits against the CPU path on the same inputs."""
import sys
import time

import cupy as cp
import numpy as np

from precision.reference import exact_matmul

rng = np.random.default_rng(7)
n = 4096
x = rng.uniform(-1, 1, (n, n)).astype(np.float32)
y = rng.uniform(-1, 1, (n, n)).astype(np.float32)
xg, yg = cp.asarray(x), cp.asarray(y)
pool = cp.get_default_memory_pool()
exact_matmul(xg, yg, rounding="fp32", device="gpu")
cp.cuda.Device().synchronize()
pool.free_all_blocks()
base = pool.used_bytes()
times = []
for _ in range(3):
    t0 = time.perf_counter()
    g = exact_matmul(xg, yg, rounding="fp32", device="gpu")
    cp.cuda.Device().synchronize()
    times.append(time.perf_counter() - t0)
print(f"gpu exact_matmul n={n} fp32: {sorted(times)} s; pool total {pool.total_bytes() / 2**30:.2f} GiB")
t0 = time.perf_counter()
c = exact_matmul(x, y, rounding="fp32")
print(f"cpu exact_matmul n={n}: {time.perf_counter() - t0:.1f} s")
same = np.array_equal(c.view(np.uint32), g.get().view(np.uint32))
print("bits identical:", same, c.dtype, c.shape)
sys.exit(0 if same else 1)
