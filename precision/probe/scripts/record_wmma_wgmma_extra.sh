#!/usr/bin/env bash
# Issue 15, H200 recordings of the WMMA API and the wgmma extras, in one device call:
#   bash precision/probe/scripts/record_wmma_wgmma_extra.sh "$OUT"
# Writes $OUT/sm90_wmma/{<probe>.npz, manifest.json} (22 WMMA kernels, >= 102,400 outputs
# each) and $OUT/sm90_wgmma_extra/{wgmma_<name>.npz, manifest.json} (7 wgmma kernels,
# >= 104,320 outputs each), then the CPU compare tables of both into $OUT/*.txt.
# Needs: an sm_90 GPU, nvcc (12.x or 13) and cuobjdump on PATH, cupy.
set -euo pipefail
OUT=${1:?usage: $0 OUT_DIR}
PY=${PYTHON:-python3}
# Check the GPU, CuPy and the CUDA tools before creating anything: one line and exit 2 if not.
"$PY" -c 'import sys
from precision.gpu import exit_without_gpu
sys.exit(2 if exit_without_gpu(sys.argv[1]) else 0)' "$0" || exit 2
for tool in nvidia-smi nvcc cuobjdump; do
    if ! command -v "$tool" > /dev/null; then
        echo "error: $0 needs $tool on PATH (install the CUDA toolkit and driver)" >&2
        exit 2
    fi
done
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv | tee "$OUT/gpu.txt"
nvcc --version | tail -2 | tee -a "$OUT/gpu.txt"
time "$PY" -m precision.probe.wmma record "$OUT/sm90_wmma" 2>&1 | tee "$OUT/wmma_record.log"
time "$PY" -m precision.probe.wgmma record "$OUT/sm90_wgmma_extra" --extra 2>&1 \
    | tee "$OUT/wgmma_extra_record.log"
"$PY" -m precision.probe.wmma compare "$OUT/sm90_wmma" > "$OUT/wmma_compare.txt" 2>&1 || true
"$PY" -m precision.probe.wgmma compare "$OUT/sm90_wgmma_extra" > "$OUT/wgmma_extra_compare.txt" \
    2>&1 || true
du -sh "$OUT"/sm90_wmma "$OUT"/sm90_wgmma_extra
