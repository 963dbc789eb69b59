"""The median of error_metrics at n = 16384 on a GPU node's cores: counted in threads
(precision.median, from 2026-11-27) against one np.median call (the code before), alternating,
inside error_metrics and alone; the results must be the same bits.

PYTHONPATH=. python results/bench/median_2026-11-27/bench.py"""

import os
import time

import numpy as np

from precision import median, metrics
from precision.threads import thread_count

n = 16384
print(f"cores {os.cpu_count()}, threads {thread_count()}, numpy {np.__version__}", flush=True)
rng = np.random.default_rng(0)
e = rng.standard_normal((n, n))
a = (e * (1 + 1e-7 * rng.standard_normal((n, n)))).astype(np.float32)
COUNTED, NP_MEDIAN = median.COUNTED_FROM, 1 << 62
results = {}
for rnd in range(2):
    for label, start in (("np.median", NP_MEDIAN), ("counted", COUNTED)):
        median.COUNTED_FROM = start
        t = time.perf_counter()
        got = metrics.error_metrics(a, e)
        print(f"round {rnd + 1}, error_metrics, {label}: {time.perf_counter() - t:.2f} s {got}")
        results.setdefault(label, []).append(got)
print("same results:", all(r == results["np.median"][0] for v in results.values() for r in v))
# the median alone, of relative errors over a few binades and of ones over many
del a
for name, rel in (
    ("|N(0,1)| * 1e-7", np.abs(e) * 1e-7),
    ("exp2(U(-60, 0))", np.exp2(rng.uniform(-60, 0, (n, n)))),
):
    times = {}
    for rnd in range(2):
        median.COUNTED_FROM = COUNTED
        t = time.perf_counter()
        got = median.median_nonnegative(rel, metrics._blocks(rel))
        times.setdefault("counted", []).append(time.perf_counter() - t)
        copy = rel.copy()
        t = time.perf_counter()
        want = float(np.median(copy, overwrite_input=True))
        times.setdefault("np.median", []).append(time.perf_counter() - t)
        del copy
        same = np.float64(got).view(np.uint64) == np.float64(want).view(np.uint64)
        print(f"{name}, round {rnd + 1}: same bits {bool(same)} ({got!r})")
    for label, ts in times.items():
        print(f"{name}: {label} " + ", ".join(f"{t:.3f}" for t in ts) + " s", flush=True)
