"""error_metrics of a float32 result against a float64 reference, n = 16384, on a GPU node's
16 cores: in one pass (the threads off) and with the threads, alternating; then the median
alone (it stays one numpy call)."""

import time

import numpy as np

from precision import metrics

n = 16384
rng = np.random.default_rng(0)
e = rng.standard_normal((n, n))
a = (e * (1 + 1e-7 * rng.standard_normal((n, n)))).astype(np.float32)
results = {}
for rnd in range(2):
    for label, start in (("one pass", 1 << 62), ("threads", 1 << 22)):
        metrics._THREADED_FROM = start
        t = time.perf_counter()
        got = metrics.error_metrics(a, e)
        print(f"round {rnd + 1}, {label}: {time.perf_counter() - t:.2f} s {got}", flush=True)
        results.setdefault(label, got)
print("same results:", results["one pass"] == results["threads"], flush=True)
rel = np.abs(e)
t = time.perf_counter()
np.median(rel, overwrite_input=True)
print(f"np.median of {n}^2 alone (one thread): {time.perf_counter() - t:.2f} s", flush=True)
