"""exp_rn on 16384^2 arguments (exp_rand's phi*g, phi = 0.5) by chunk size and thread count on
the H200 node: the 16K-element chunks chosen on 2 cores (L2-resident temporaries) leave 16
threads contending for the GIL (17.8 s with 16 threads against about 24.6 s on one)."""

import sys
import time

import numpy as np

from precision import crexp

n = int(sys.argv[1]) if len(sys.argv) > 1 else 16384
x = 0.5 * np.random.default_rng(1).standard_normal(n * n)
want = None
for chunk in (1 << 14, 1 << 16, 1 << 18, 1 << 20):
    crexp.CHUNK = chunk
    for threads in (16, 8):
        crexp.thread_count = lambda t=threads: t  # type: ignore[assignment]
        t0 = time.perf_counter()
        y = crexp.exp_rn(x)
        dt = time.perf_counter() - t0
        same = True if want is None else bool(np.array_equal(y.view(np.uint64), want))
        want = y.view(np.uint64) if want is None else want
        print(
            f"chunk 2^{chunk.bit_length() - 1}, {threads} threads: {dt:.2f} s, same bits {same}",
            flush=True,
        )
