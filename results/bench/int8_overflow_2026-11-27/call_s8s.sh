#!/bin/bash
export PYTHONUNBUFFERED=1 PRECISION_GIT_COMMIT=$1
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt 2>&1
python .devrun/satf_int8_overflow.py > $OUT/satf.log 2>&1; echo "rc=$?" >> $OUT/satf.log
cat $OUT/satf.log $OUT/device.txt
