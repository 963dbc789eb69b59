"""exact_matmul(A, B, C) at 512^3 on the CPU, C over several exponent ranges: the reference
before 7759580 (its precision/reference.py, loaded from OLD_REFERENCE) against the current one,
alternating in one process, 3 rounds; the outputs compared bit for bit.

    PYTHONPATH=. OLD_REFERENCE=/tmp/reference_old.py python results/bench/exact_c_digits_cpu_2026-11-28/bench.py
"""

import importlib.util
import os
import time

import numpy as np

from precision import reference as new

spec = importlib.util.spec_from_file_location("reference_old", os.environ["OLD_REFERENCE"])
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)

rng = np.random.default_rng(1)
n = 512
A = rng.uniform(-1, 1, (n, n)).astype(np.float32)
B = rng.uniform(-1, 1, (n, n)).astype(np.float32)
cases = {"none": None}
for span in (2, 200, 1000):
    cases[f"2^+-{span}"] = np.ldexp(rng.uniform(-1, 1, (n, n)), rng.integers(-span, span + 1, (n, n)))
for name, C in cases.items():
    times = {"old": [], "new": []}
    outs = {}
    for _ in range(3):
        for label, mod in (("old", old), ("new", new)):
            t = time.perf_counter()
            outs[label] = mod.exact_matmul(A, B, C)
            times[label].append(time.perf_counter() - t)
    same = np.array_equal(outs["old"].view(np.uint64), outs["new"].view(np.uint64))
    print(f"C {name:>8}: old {min(times['old']):.3f}-{max(times['old']):.3f} s, "
          f"new {min(times['new']):.3f}-{max(times['new']):.3f} s, same bits: {same}", flush=True)
