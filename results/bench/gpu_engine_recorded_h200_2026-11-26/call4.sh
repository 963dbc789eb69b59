#!/bin/bash
export PYTHONUNBUFFERED=1 PRECISION_GIT_COMMIT=$1 PYTHONPATH=$PWD
t0=$(date +%s)
timeout 420 python -m pytest -q -p no:cacheprovider -m gpu -rs tests > $OUT/gputests_all.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s" > $OUT/run.log
timeout 120 python - >> $OUT/run.log 2>&1 <<'PY'
import time, numpy as np, ml_dtypes, cupy as cp
from precision import mma
rng = np.random.default_rng(0)
n = 4096
for name, dt, op in (("f16 mma.sync", np.float16, "mma"), ("e4m3 wgmma", ml_dtypes.float8_e4m3fn, "wgmma"), ("e4m3 mma.sync k32", ml_dtypes.float8_e4m3fn, "mma")):
    a = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(dt)); b = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(dt)); c = cp.zeros((n, n), cp.float32)
    mma(a, b, c, op=op, device="gpu"); cp.cuda.Device().synchronize()
    t = time.perf_counter(); mma(a, b, c, op=op, device="gpu"); cp.cuda.Device().synchronize(); dt_s = time.perf_counter() - t
    print(f"GPU engine {name} {n}^3: {dt_s:.3f} s, {n**3/dt_s:.3e} emulated MAC/s")
PY
echo "done $(( $(date +%s) - t0 )) s" >> $OUT/run.log
tail -15 $OUT/gputests_all.log; cat $OUT/run.log
