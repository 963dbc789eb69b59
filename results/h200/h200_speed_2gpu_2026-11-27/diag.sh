#!/bin/bash
# The diagnosis run (diag_16384.toml): local executor, then --executor dask --gpus all, each
# with the acceptance script's BLAS setting (16 threads). ONLY=dask: the Dask run alone,
# under DASK_LIMIT seconds (the check of the worker_nanny fix).
set -u
export PYTHONUNBUFFERED=1 PRECISION_GIT_COMMIT=$1
[ -d /tmp/dasklib ] || python3 -m pip install -q --no-index --no-deps --no-compile \
  --no-cache-dir --target /tmp/dasklib .carry_dask/*.whl > /tmp/pip.log 2>&1
export PYTHONPATH=$PWD:/tmp/dasklib
export PRECISION_BLAS_THREADS=16 OMP_NUM_THREADS=16 OPENBLAS_NUM_THREADS=16 MKL_NUM_THREADS=16
cfg=results/h200/h200_speed_2gpu_2026-11-27/diag_16384.toml
first=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
mkdir -p $OUT/diag
if [ "${ONLY:-}" = dask ]; then
  t1=$(date +%s)
  timeout "${DASK_LIMIT:-400}" python -m precision.runner.cli run $cfg --results-dir /tmp/diag/dask \
    --no-plots --executor dask --gpus all > $OUT/diag/dask_fixed.log 2>&1
  echo "rc=$? dask $(( $(date +%s) - t1 )) s" | tee $OUT/diag/walls_fixed.txt
  tail -c 600 $OUT/diag/dask_fixed.log
  exit 0
fi
python - <<'PY' > $OUT/diag/inputs_time.txt 2>&1
import time
from precision.runner.config import load_config
from precision.runner.execute import InputCache
from precision.runner.sweep import expand
p = expand(load_config("results/h200/h200_speed_2gpu_2026-11-27/diag_16384.toml"))[0]
c = InputCache()
t0 = time.perf_counter(); c.get(p, 0); t1 = time.perf_counter(); c.reference(p, 0)
print(f"in one process: inputs {t1 - t0:.1f} s, fp64 reference {time.perf_counter() - t1:.1f} s")
PY
cat $OUT/diag/inputs_time.txt
t0=$(date +%s)
CUDA_VISIBLE_DEVICES=$first python -m precision.runner.cli run $cfg --results-dir /tmp/diag/local --no-plots > $OUT/diag/local.log 2>&1
t1=$(date +%s)
python -m precision.runner.cli run $cfg --results-dir /tmp/diag/dask --no-plots --executor dask --gpus all > $OUT/diag/dask.log 2>&1
t2=$(date +%s)
echo "local $((t1 - t0)) s; dask $((t2 - t1)) s" | tee $OUT/diag/walls.txt
tail -5 $OUT/diag/local.log $OUT/diag/dask.log
