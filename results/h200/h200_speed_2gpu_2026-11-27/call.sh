#!/bin/bash
# Issue 18's acceptance steps (precision/runner/scripts/multi_gpu_acceptance.py) on a lent
# 2x H200 node, one or more steps per device call: bash call.sh STEPS COMMIT, STEPS like
# "one" or "kill,compare". The results directories stay in /tmp/h9-acceptance while the
# machine is warm; each call brings back one tarball of the logs, JSON summaries and tables
# (points/ and .csv copies left out). dask and distributed come from carried wheels.
set -u
steps=$1
export PYTHONUNBUFFERED=1 PRECISION_GIT_COMMIT=$2
if [ ! -d /tmp/dasklib ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --target /tmp/dasklib .carry_dask/*.whl > /tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
fi
export PYTHONPATH=$PWD:/tmp/dasklib
nvidia-smi --query-gpu=name,uuid,power.limit --format=csv,noheader
python -c "import dask, distributed; from precision.provenance import source_digest; print('dask', dask.__version__, 'source_digest', source_digest())"
mkdir -p /tmp/acc-logs
t0=$(date +%s)
for s in ${steps//,/ }; do
  timeout "${LIMIT:-540}" python precision/runner/scripts/multi_gpu_acceptance.py "$s" \
    configs/h200_speed.toml /tmp/acc-logs > "/tmp/acc-logs/step_$s.out" 2>&1
  echo "$s rc=$? at $(( $(date +%s) - t0 )) s"
  tail -4 "/tmp/acc-logs/step_$s.out"
done
tar czf "$OUT/acc_${steps//,/_}.tar.gz" -C /tmp --exclude=points --exclude='*.csv' \
  --exclude='*.lock' acc-logs h9-acceptance
