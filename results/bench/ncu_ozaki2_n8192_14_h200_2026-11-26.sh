#!/bin/bash
# Session 7: ncu of the Ozaki-II non-GEMM kernels (n = 8192, 14 moduli), clocks untouched.
export PYTHONUNBUFFERED=1 PRECISION_GIT_COMMIT=$1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv > $OUT/device.txt 2>&1
timeout 500 ncu --clock-control none --profile-from-start off \
  --kernel-name regex:"oz2_(rows|stats|shifts|residues|recon)" \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats \
  python .devrun/ncu_oz.py > $OUT/ncu_ozaki2_n8192_14.txt 2>&1
echo "ncu rc=$?" >> $OUT/device.txt
grep -E "^  oz2_|Duration|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Achieved Occupancy" $OUT/ncu_ozaki2_n8192_14.txt | head -80; tail -3 $OUT/ncu_ozaki2_n8192_14.txt; cat $OUT/device.txt
exit 0
