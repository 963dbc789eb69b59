#!/bin/bash
# Session 8, final: the int8 overflow recording again (compare with the H100 file), then the
# whole suite under xdist.
export PYTHONUNBUFFERED=1 PRECISION_GIT_COMMIT=$1
export PYTHONPATH=$PWD
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $OUT/device.txt 2>&1
python .devrun/satf_int8_overflow.py > $OUT/satf.log 2>&1
python - >> $OUT/satf.log 2>&1 <<'PY'
import numpy as np, os
a = np.load(os.path.join(os.environ["OUT"], "satf_int8_overflow_h200.npz"))
b = np.load("tests/data/gemm/int8_overflow_h100.npz")
for k in ("D_satf", "D_plain"):
    print(k, "identical to the H100 file:", bool(np.array_equal(a[k].view(np.uint32), b[k].view(np.uint32))))
PY
echo "satf rc=$? $(( $(date +%s) - t0 )) s" >> $OUT/run.log
timeout 330 python -m pytest -q -p no:cacheprovider -n auto --dist worksteal -rs tests > $OUT/xdist_all.log 2>&1
echo "xdist all rc=$? $(( $(date +%s) - t0 )) s" >> $OUT/run.log
grep -E "^(FAILED|ERROR)" $OUT/xdist_all.log | head -30; tail -2 $OUT/xdist_all.log; cat $OUT/run.log $OUT/device.txt $OUT/satf.log
exit 0
