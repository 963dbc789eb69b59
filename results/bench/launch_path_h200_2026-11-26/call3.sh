#!/bin/bash
# GPU-engine tests after the fp8 k16 fix; interleaved launch profile old/new; ozaki identity+speed
export PYTHONUNBUFFERED=1 PRECISION_GIT_COMMIT=$1
ROOT=$PWD
mkdir -p /tmp/old && cp -r precision /tmp/old/ && cp .devrun/old/launch.py .devrun/old/specs.py .devrun/old/gemm_wgmma.cu /tmp/old/precision/kernels/
export PYTHONPATH=$ROOT
t0=$(date +%s)
timeout 150 python -m pytest -q -p no:cacheprovider -m gpu tests/probe tests/tensorcore tests/gemm/test_gpu.py > $OUT/gputests.log 2>&1
echo "tests done $(( $(date +%s) - t0 )) s" > $OUT/run.log
export PROFILE_SIZES="1024 4096" PROFILE_CASES="plain fp16,satf fp16,cublas fp16" PROFILE_CPROFILE=0
for round in 1 2; do
  (cd /tmp/old && PYTHONPATH=/tmp/old timeout 100 python $ROOT/.devrun/launch_profile.py before > /dev/null 2>&1)
  timeout 100 python .devrun/launch_profile.py after > /dev/null 2>&1
done
echo "profiles done $(( $(date +%s) - t0 )) s" >> $OUT/run.log
unset PROFILE_SIZES PROFILE_CASES PROFILE_CPROFILE
timeout 420 python -m precision.gemm.ozaki_bench --out $OUT/oz --skip errors --commit $1 > $OUT/oz.log 2>&1
echo "ozaki done $(( $(date +%s) - t0 )) s rc=$?" >> $OUT/run.log
rm -f $OUT/launch_profile_*.txt
tail -3 $OUT/gputests.log; cat $OUT/run.log; tail -45 $OUT/oz.log
