#!/bin/bash
# Session 8: fresh-seed capture + verify of every family (the 18 new included), then the whole
# suite under xdist on the GPU machine.
export PYTHONUNBUFFERED=1 PRECISION_GIT_COMMIT=$1
export PYTHONPATH=$PWD
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $OUT/device.txt 2>&1
timeout 200 python -m precision.runner.cli verify --json $OUT/verify_all_families.json > $OUT/verify_all_families.txt 2>&1
echo "verify rc=$? $(( $(date +%s) - t0 )) s" >> $OUT/run.log
timeout 300 python -m pytest -q -p no:cacheprovider -n auto --dist worksteal -rs tests > $OUT/xdist_all.log 2>&1
echo "xdist all rc=$? $(( $(date +%s) - t0 )) s" >> $OUT/run.log
grep -E "^(FAILED|ERROR)" $OUT/xdist_all.log | head -30; tail -2 $OUT/xdist_all.log; cat $OUT/run.log $OUT/device.txt
grep -E "^(m16n8k16_f32_e|m16n8k32_f16_e5m2_e4m3|m8n8k16|m16n8k16_s32|m8n8k32|m16n8k64_s32_(s4_u4|u4_u4)|m8n8k128_s32_b1_b1_s32_andpopc|.*e4m3e5m2_f16|.*e5m2e4m3_f16)" $OUT/verify_all_families.txt | head -60
tail -5 $OUT/verify_all_families.txt
exit 0
