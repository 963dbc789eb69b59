#!/bin/bash
# before/after launch profile, GPU tests, GEMM record compare
export PYTHONUNBUFFERED=1 PRECISION_GIT_COMMIT=$1
ROOT=$PWD
mkdir -p /tmp/old && cp -r precision /tmp/old/ && cp .devrun/old/launch.py .devrun/old/specs.py .devrun/old/gemm_wgmma.cu /tmp/old/precision/kernels/
t0=$(date +%s)
(cd /tmp/old && PYTHONPATH=/tmp/old timeout 150 python $ROOT/.devrun/launch_profile.py before 2>&1 | grep -v "^{$\|^ \"\|^}" ) > $OUT/run.log
echo "before done $(( $(date +%s) - t0 )) s" >> $OUT/run.log
export PYTHONPATH=$ROOT
timeout 150 python .devrun/launch_profile.py after 2>&1 | grep -v "^ \"" >> $OUT/run.log
echo "after done $(( $(date +%s) - t0 )) s" >> $OUT/run.log
timeout 150 sh -c "python -m precision.gemm.record record /tmp/new.npz && python -m precision.gemm.record compare /tmp/new.npz tests/data/gemm/cuda_cases_sm90.npz" > $OUT/record_compare.log 2>&1
echo "record done $(( $(date +%s) - t0 )) s rc=$?" >> $OUT/run.log
timeout 200 python -m pytest -q -p no:cacheprovider -m gpu tests/gemm tests/probe tests/kernels tests/tensorcore > $OUT/gputests.log 2>&1
echo "tests done $(( $(date +%s) - t0 )) s" >> $OUT/run.log
tail -3 $OUT/gputests.log; tail -5 $OUT/record_compare.log; cat $OUT/run.log | tail -40
