#!/bin/bash
# Session 7: the whole suite under xdist on a GPU machine (no dask here: see call_s7d.sh).
export PYTHONUNBUFFERED=1 PRECISION_GIT_COMMIT=$1
export PYTHONPATH=$PWD
t0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/device.txt 2>&1
timeout 420 python -m pytest -q -p no:cacheprovider -n auto --dist worksteal -rs tests > $OUT/xdist_all.log 2>&1
echo "xdist all (no dask there) rc=$? $(( $(date +%s) - t0 )) s" >> $OUT/run.log
grep -E "^(FAILED|ERROR)" $OUT/xdist_all.log | head -30; tail -3 $OUT/xdist_all.log; cat $OUT/run.log $OUT/device.txt
exit 0
