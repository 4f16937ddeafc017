#!/usr/bin/env bash
# The GPU machine's test batch: versions, `ember info`, the whole test suite (CUDA and the
# driver's OpenCL), and `ember demo` on CUDA.  Logs go to $OUT (the device tool brings them back).
set -u
export PYTHONPATH=src PYTHONUNBUFFERED=1 EMBER_CACHE_DIR=/tmp/ember-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
# The optional C launch stub (setup.py): built in place, as `pip install` would build it.
python3 setup.py -q build_ext --inplace >"$OUT/build.log" 2>&1 \
    || echo "the C launch stub did not build (launches go through ctypes): see build.log"
# Four files (build, info, pytest, demo): with gpu_bench.sh's four in the same call, the eight
# the device tool brings back.
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 --version;
  python3 -c "import cuda.bindings, numpy; print('cuda-bindings', cuda.bindings.__version__, 'numpy', numpy.__version__)"
  python3 -m ember info; } 2>&1 | tee "$OUT/info.log"
timeout "${TEST_TIMEOUT:-330}" python3 -m pytest tests -q -p no:cacheprovider --timeout=120 \
    -o addopts="-rfE" "$@" 2>&1 | tee "$OUT/pytest.log" | tail -40
python3 -m ember demo 2>&1 | tee "$OUT/demo.log" | tail -30
