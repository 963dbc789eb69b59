#!/bin/bash
# 1. GPU tests; 2. recorded GEMM cases; 3. timing base vs new (alternating processes)
export PYTHONUNBUFFERED=1 PRECISION_GIT_COMMIT=$1
t0=$(date +%s)
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv > $OUT/device.txt
PYTHONPATH=$PWD timeout 330 python -m pytest -q -p no:cacheprovider -m gpu -rs tests > $OUT/gputests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s" >> $OUT/run.log
(PYTHONPATH=$PWD timeout 150 python -m precision.gemm.record record /tmp/new_cases.npz && PYTHONPATH=$PWD python -m precision.gemm.record compare /tmp/new_cases.npz tests/data/gemm/cuda_cases_sm90.npz) > $OUT/record_compare.log 2>&1
echo "compare rc=$? $(( $(date +%s) - t0 )) s" >> $OUT/run.log
for r in 1 2; do
  for t in base new; do
    if [ $t = base ]; then P=$PWD/.devrun/base; else P=$PWD; fi
    PYTHONPATH=$P PRECISION_GIT_COMMIT=$t timeout 150 python .devrun/sync_bench.py $t$r >> $OUT/sync_bench.jsonl 2>> $OUT/sync_bench.err
    echo "bench $t$r rc=$? $(( $(date +%s) - t0 )) s" >> $OUT/run.log
  done
done
tail -5 $OUT/gputests.log; tail -5 $OUT/record_compare.log; cat $OUT/run.log
exit 0
