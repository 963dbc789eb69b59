#!/bin/bash
# Session 7, 2 GPUs: the Dask tests on a GPU host (NVML fix of 575d82f), then the issue-18
# steps on the small h200_speed subset: one GPU (local), --gpus all, a killed GPU worker and
# a rerun, and the comparison (equal error columns, rows on >= 2 GPUs).
export PYTHONUNBUFFERED=1 PRECISION_GIT_COMMIT=$1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/dasklib .carry_dask/*.whl > $OUT/pip.log 2>&1
export PYTHONPATH=$PWD:/tmp/dasklib
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid --format=csv,noheader > $OUT/device.txt 2>&1
timeout 200 python -m pytest -q -p no:cacheprovider -n 8 --dist worksteal -rs tests/runner -k "dask or cluster or gpus or scheduler" > $OUT/dask_tests.log 2>&1
echo "dask tests rc=$? $(( $(date +%s) - t0 )) s" >> $OUT/run.log
for s in one multi kill compare; do
  t1=$(date +%s)
  timeout 150 python precision/runner/scripts/multi_gpu_acceptance.py $s .devrun/h200_speed_small.toml $OUT/acc > $OUT/acc_$s.log 2>&1
  echo "$s rc=$? $(( $(date +%s) - t1 )) s" >> $OUT/run.log
done
grep -E "^(FAILED|ERROR)" $OUT/dask_tests.log | head; tail -2 $OUT/dask_tests.log; tail -30 $OUT/acc_compare.log; cat $OUT/run.log $OUT/device.txt
exit 0
