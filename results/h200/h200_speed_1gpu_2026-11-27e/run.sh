#!/bin/bash
# configs/h200_speed.toml on one H200 at the commit named in COMMIT.txt (the counted median,
# 2fb3304), by ../h200_speed_1gpu_2026-11-27c/run.sh: its error columns and inputs_sha256
# against the d99ea70 one-GPU run, and the wall times. The outputs come back as one tarball.
# bash results/h200/h200_speed_1gpu_2026-11-27e/run.sh  (on the device, COMMIT.txt written by hand)
set -u
commit=$(awk '/^commit/ {print substr($2, 1, 7)}' COMMIT.txt)
echo "commit $commit"
bash results/h200/h200_speed_1gpu_2026-11-27c/run.sh "$commit"
cd $OUT && tar czf h200_speed_1gpu.tar.gz --remove-files one logs logs_step_one.out compare.txt
