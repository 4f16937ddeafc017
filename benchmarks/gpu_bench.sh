#!/usr/bin/env bash
# The GPU machine's benchmark batch: `bash benchmarks/gpu_bench.sh AREA...` runs each area
# in turn (one failing or slow area does not stop the others) and packs the JSON/markdown
# results into $OUT/results.tgz (the device tool brings back at most 8 files).  It ends with
# what got faster or slower: $OUT/compare.md compares the batch with the newest committed
# results of the same device kind (the rows beyond the noise are printed last), and
# $OUT/report.html holds the batch's plots.  Run it as `BENCH_COMMIT=<sha> bash ...` with the
# commit whose tree was sent: the machine's copy of .git may be older than the tree.
set -u
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; RES=$(mktemp -d); mkdir -p "$OUT"
# The optional C launch stub (setup.py): built in place, as `pip install` would build it.
python3 setup.py -q build_ext --inplace >"$OUT/build.log" 2>&1 \
    || echo "the C launch stub did not build (launches go through ctypes): see build.log"
for area in "$@"; do
    echo "=== $area"
    timeout "${AREA_TIMEOUT:-240}" python3 -m benchmarks --only "$area" --out "$RES" 2>&1 \
        | tee -a "$OUT/bench.log"
done
tar czf "$OUT/results.tgz" -C "$RES" .
python3 -m benchmarks report "$RES" --out "$(mktemp -d)" --html "$OUT/report.html" >/dev/null \
    || echo "no plots (python3 -m benchmarks report failed)"
python3 -m benchmarks compare benchmarks/results "$RES" --out "$OUT/compare.md" >/dev/null
echo "=== against the newest committed results of this device kind (all rows: compare.md)"
python3 -m benchmarks compare benchmarks/results "$RES" --changes-only 2>&1 | tee -a "$OUT/bench.log"
