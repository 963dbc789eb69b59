#!/bin/bash
# Session 8: record the 16 unrecorded sm90 mma.sync probes and the 2 mixed-fp8 wgmma extras.
export PYTHONUNBUFFERED=1 PRECISION_GIT_COMMIT=$1
export PYTHONPATH=$PWD
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $OUT/device.txt 2>&1
FP8="m16n8k32_f16_e5m2_e4m3_f16 m16n8k16_f32_e4m3_e5m2_f32 m16n8k16_f32_e5m2_e4m3_f32 m16n8k16_f32_e5m2_e5m2_f32"
INT=$(python -c "from precision.probe.generic import LATER; print(' '.join(p.name for p in LATER[4:]))")
mkdir -p /tmp/rec/mma_fp8 /tmp/rec/mma_int /tmp/rec/wgmma
python -m precision.probe.packed record /tmp/rec/mma_fp8 --tiles 200 --only $FP8 > $OUT/record.log 2>&1; echo "fp8 rc=$?" >> $OUT/run.log
python -m precision.probe.packed record /tmp/rec/mma_int --tiles 100 --only $INT >> $OUT/record.log 2>&1; echo "int rc=$?" >> $OUT/run.log
python -m precision.probe.wgmma record /tmp/rec/wgmma --extra --only e4m3e5m2_f16 e5m2e4m3_f16 >> $OUT/record.log 2>&1; echo "wgmma rc=$?" >> $OUT/run.log
for d in mma_fp8 mma_int; do python -m precision.probe.packed verify /tmp/rec/$d >> $OUT/verify.log 2>&1; echo "verify $d rc=$?" >> $OUT/run.log; done
python -m precision.probe.wgmma compare /tmp/rec/wgmma >> $OUT/verify.log 2>&1; echo "compare wgmma rc=$?" >> $OUT/run.log
tar -C /tmp/rec -czf $OUT/rec.tgz .
echo "total $(( $(date +%s) - t0 )) s" >> $OUT/run.log
cat $OUT/run.log $OUT/device.txt; tail -40 $OUT/verify.log
exit 0
