#!/bin/bash
# Session 7: the Dask tests on a GPU host, dask from carried wheels (the NVML fix of d260ef9).
export PYTHONUNBUFFERED=1 PRECISION_GIT_COMMIT=$1
mkdir -p /tmp/dasklib
[ -e /tmp/dasklib/dask ] || pip install -q --no-index --no-deps --target /tmp/dasklib .carry_dask/*.whl 2>&1 | tail -3
export PYTHONPATH=$PWD:/tmp/dasklib
python -c "import dask, distributed; print('dask', dask.__version__)" > $OUT/dask_version.txt 2>&1
t0=$(date +%s)
timeout 400 python -m pytest -q -p no:cacheprovider -n 8 --dist worksteal -rs tests/runner -k "dask or cluster or gpus or scheduler" > $OUT/dask_tests.log 2>&1
echo "dask tests rc=$? $(( $(date +%s) - t0 )) s" >> $OUT/run.log
grep -E "^(FAILED|ERROR)" $OUT/dask_tests.log | head -30; tail -3 $OUT/dask_tests.log; cat $OUT/run.log $OUT/dask_version.txt
exit 0
