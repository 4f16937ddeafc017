"""The matmul, random and Array API kernels compile for CUDA (NVRTC, sm_90) without a GPU,
so the GPU batch finds no CUDA-only codegen problem; the GEMM kernel's resources are
checked too (no local-memory spills: its 8x8 accumulators must stay in registers)."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_standin import nvrtc_available, to_ptx

from ember.array import extras, gemm, random, random_more

nvrtc = pytest.importorskip("ember.backends.cuda.nvrtc")


pytestmark = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC is not available")


@pytest.mark.parametrize("ct, arrays, a_kfast, b_nfast", [
    ("float32", "float32", True, True), ("float32", "float32", False, True),
    ("float32", "float32", True, False), ("float32", "float32", False, False),
    ("float32", "float16", True, True), ("float64", "float64", False, False),
    ("int64", "int8", True, True),
])  # fmt: skip
def test_gemm_kernels_compile_without_spills(ct, arrays, a_kfast, b_nfast):
    import ember

    k = gemm.gemm_kernel(ember.dtype(ct), True, a_kfast, b_nfast)
    x = np.zeros(8, arrays)
    args = (x, x, x, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0)
    ptx = to_ptx(k, args)
    assert ".entry" in ptx
    if arrays == "float32":  # the inner loop's shared loads are 128-bit (__align__(16) tiles)
        assert "ld.shared.v4.f32" in ptx
    res = k.inspect(*args, stage="resources", dialect="cuda")
    assert res["spill_stores"] == 0 and res["local_bytes"] == 0, res


@pytest.mark.parametrize("dist, size, out", [
    ("uniform", 4, "float32"), ("uniform", 8, "float64"), ("normal", 4, "float32"),
    ("normal", 8, "float64"), ("std_normal", 4, "float32"), ("std_normal", 8, "float64"),
    ("exponential", 4, "float32"), ("exponential", 8, "float64"),
    ("int_narrow", 0, "int64"), ("int_narrow", 0, "uint8"), ("int_wide", 0, "int64"),
])  # fmt: skip
def test_random_kernels_compile(dist, size, out):
    k, _ = random.fill_kernel(dist, size)
    p = np.dtype(out).type(0) if size else np.uint64(0)
    args = (np.zeros(4, out), 4, 1, 2, 3, 4, p, p)
    assert ".entry" in to_ptx(k, args)


@pytest.mark.parametrize("name", sorted(random_more.SAMPLERS))
@pytest.mark.parametrize("arrays", [False, True])
def test_random_more_kernels_compile(name, arrays):
    from ember.array import random_dists

    sample = random_more.SAMPLERS[name]
    p = np.float64(1.0)
    if arrays:
        k = random_dists.each_arrays_kernel(name, sample)
        params = (np.ones(4), 1) * 4
    else:
        k, params = random_dists.each_kernel(name, sample), (p,) * 4
    out = np.zeros(4, "int64" if name in ("hypergeometric", "logseries", "zipf") else "float64")
    assert ".entry" in to_ptx(k, (out, 4, 1, 2, 3, 4, *params))


def test_random_row_kernels_compile():
    i64, f64 = np.zeros(8, np.int64), np.zeros(8, np.float64)
    k = random_more.row_kernel("multinomial")
    assert ".entry" in to_ptx(k, (i64, 2, 4, i64, 1, f64, 4, 1, 2, 3, 4))
    k = random_more.row_kernel("multivariate_hypergeometric")
    assert ".entry" in to_ptx(k, (i64, 2, 4, i64, np.float64(9), np.float64(4), 1, 2, 3, 4))


def test_nextafter_compiles():
    for dt, bits in (("float16", "uint16"), ("float32", "uint32"), ("float64", "uint64")):
        f, b = np.zeros(4, dt), np.zeros(4, bits)
        assert ".entry" in to_ptx(extras._nextafter_kernel(8 * f.itemsize), (b, f, b, f, f))
