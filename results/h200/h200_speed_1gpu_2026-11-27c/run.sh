#!/bin/bash
# configs/h200_speed.toml on one H200 (the `one` step of multi_gpu_acceptance.py: local
# executor, 16 BLAS threads), then its error columns against the one-GPU run of d99ea70
# (results/h200/h200_speed_2gpu_2026-11-27/one), point by point, and the wall times.
# bash results/h200/h200_speed_1gpu_2026-11-27c/run.sh COMMIT  (on the device)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 PRECISION_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,uuid,power.limit --format=csv,noheader
python -c "from precision.provenance import source_digest; print('source_digest', source_digest())"
timeout 520 python precision/runner/scripts/multi_gpu_acceptance.py one configs/h200_speed.toml \
  $OUT/logs /tmp/h9 > $OUT/logs_step_one.out 2>&1
echo "one rc=$?"; tail -2 $OUT/logs_step_one.out
python - <<'PY' | tee $OUT/compare.txt
import pandas as pd
cols = ["err_fro", "err_max", "err_median"]
def table(path):
    t = pd.read_parquet(path)
    return t.sort_values(["point_id", "repeat"]).reset_index(drop=True)
new = table("/tmp/h9/one/h200_speed/results.parquet")
old = table("results/h200/h200_speed_2gpu_2026-11-27/one/h200_speed/results.parquet")
same_ids = list(new["point_id"]) == list(old["point_id"])
print("points", new["point_id"].nunique(), "same point ids", same_ids)
print("error columns equal:", bool(same_ids and new[cols].equals(old[cols])))
print("inputs_sha256 equal:", bool(same_ids and (new["inputs_sha256"] == old["inputs_sha256"]).all()))
for c in cols:
    print(c, "differing rows:", int((new[c] != old[c]).sum()) if same_ids else "n/a")
new["t"] = pd.to_datetime(new["created_utc"])
g = new.groupby("n")["t"].agg(["min", "max", "count"])
t0 = new["t"].min()
g["min"] = (g["min"] - t0).dt.total_seconds(); g["max"] = (g["max"] - t0).dt.total_seconds()
print(g)
PY
mkdir -p $OUT/one && cp /tmp/h9/one/h200_speed/{config.toml,provenance.json,results.parquet} $OUT/one/
