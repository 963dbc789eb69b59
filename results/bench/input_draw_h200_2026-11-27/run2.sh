#!/bin/bash
# bash results/bench/input_draw_h200_2026-11-27/run2.sh  (on the device): InputCache.get of
# the n = 16384 group, as today's code draws it and as the code before it did (serial
# uniform draws, exp_rn in chunks of 2^14 in every thread), alternating, twice each.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for round in 1 2; do
  for variant in new old; do
    python - "$variant" <<'PY' 2>&1 | tee -a $OUT/inputcache2.txt
import sys, time

from precision import crexp, parallel_draws
if sys.argv[1] == "old":
    parallel_draws.MIN_PARALLEL = 1 << 62
    crexp.threaded_chunk = lambda threads: crexp.CHUNK
from precision.runner.config import load_config
from precision.runner.execute import InputCache
from precision.runner.sweep import expand
p = expand(load_config("results/h200/h200_speed_2gpu_2026-11-27/diag_16384.toml"))[0]
t0 = time.perf_counter(); item = InputCache().get(p, 0)
print(f"{sys.argv[1]}: InputCache.get n=16384 {time.perf_counter() - t0:.1f} s, "
      f"inputs_sha256 {item.sha256[:16]}")
PY
  done
done
