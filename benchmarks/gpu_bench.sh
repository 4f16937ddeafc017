#!/usr/bin/env bash
# The GPU machine's benchmark batch: `bash benchmarks/gpu_bench.sh AREA...` runs each area
# in turn (one failing or slow area does not stop the others) and packs the JSON/markdown
# results into $OUT/results.tgz (the device tool brings back at most 8 files).
set -u
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; RES=$(mktemp -d); mkdir -p "$OUT"
for area in "$@"; do
    echo "=== $area"
    timeout "${AREA_TIMEOUT:-240}" python3 -m benchmarks --only "$area" --out "$RES" 2>&1 \
        | tee -a "$OUT/bench.log"
done
tar czf "$OUT/results.tgz" -C "$RES" .
