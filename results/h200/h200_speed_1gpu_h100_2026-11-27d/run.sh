#!/bin/bash
# On one GPU node: the error_metrics bench of results/bench/error_metrics_2026-11-27, then
# configs/h200_speed.toml by ../h200_speed_1gpu_2026-11-27c/run.sh (its errors against the
# d99ea70 run); the outputs come back as one tarball.
# bash results/h200/h200_speed_1gpu_h100_2026-11-27d/run.sh COMMIT  (on the device)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python results/bench/error_metrics_2026-11-27/bench.py 2>&1 | tee $OUT/error_metrics.txt
bash results/h200/h200_speed_1gpu_2026-11-27c/run.sh "$1"
cp /tmp/h9/one/h200_speed/results.parquet $OUT/one/
cd $OUT && tar czf h200_speed_1gpu.tar.gz --remove-files one logs logs_step_one.out compare.txt
