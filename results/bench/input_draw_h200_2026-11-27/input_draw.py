"""Where the time of drawing an exp_rand input of n = 16384 goes on the H200 node (16 cores):
each step of distributions._exp_rand timed alone, serial and threaded uniform draws compared
(same bits), exp_rn by thread count, then InputCache.get of configs/h200_speed.toml's
n = 16384 group (as results/h200/h200_speed_2gpu_2026-11-27/diag.sh timed it: 58.1 s)."""

import os
import sys
import time

import numpy as np

from precision import crexp, parallel_draws

n = int(sys.argv[1]) if len(sys.argv) > 1 else 16384
shape = (n, n)
print(f"n = {n}, cores {os.cpu_count()}, thread_count() {crexp.thread_count()}", flush=True)


def timed(label, f):
    t = time.perf_counter()
    out = f()
    print(f"{label}: {time.perf_counter() - t:.2f} s", flush=True)
    return out


rng = np.random.default_rng(1)
u_serial = timed("rng.random serial", lambda: rng.random(size=shape))
rng2 = np.random.default_rng(1)
u_par = timed("parallel_draws.random", lambda: parallel_draws.random(rng2, shape))
print(
    "same bits:",
    np.array_equal(u_serial, u_par),
    "same state:",
    rng.bit_generator.state == rng2.bit_generator.state,
    flush=True,
)
del u_serial
g = timed("rng.standard_normal", lambda: rng2.standard_normal(size=shape))
x = timed("0.5 * g", lambda: 0.5 * g)
s = x
for threads in (16, 8, 4, 1):
    crexp.thread_count = lambda t=threads: t  # type: ignore[assignment]
    part = x[: n // 8] if threads == 1 and n > 8192 else x  # one thread: an eighth
    what = " (1/8 of it)" if part is not x else ""
    s = timed(f"exp_rn, {threads} threads{what}", lambda part=part: crexp.exp_rn(part))
timed("(u - 0.5) * s", lambda: (u_par[: s.shape[0]] - 0.5) * s)
