#!/bin/bash
# bash results/bench/input_draw_h200_2026-11-27/run.sh  (on the device; PYTHONPATH=$PWD)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
here=results/bench/input_draw_h200_2026-11-27
python $here/input_draw.py 16384 2>&1 | tee $OUT/steps.txt
for par in 1 0; do
  python - "$par" <<'PY' 2>&1 | tee -a $OUT/inputcache.txt
import sys, time
from precision import parallel_draws
if sys.argv[1] == "0":
    parallel_draws.MIN_PARALLEL = 1 << 62  # serial uniform draws, as before
from precision.runner.config import load_config
from precision.runner.execute import InputCache
from precision.runner.sweep import expand
p = expand(load_config("results/h200/h200_speed_2gpu_2026-11-27/diag_16384.toml"))[0]
t0 = time.perf_counter(); InputCache().get(p, 0)
print(f"InputCache.get n=16384, threaded uniform draws={sys.argv[1]}: {time.perf_counter() - t0:.1f} s")
PY
done
