"""bfloat16 kernels compile for CUDA (NVRTC, sm_90) without a GPU: element-wise operations and
casts, the transpose and GEMM kernels (no local-memory spills), and a user kernel with
bfloat16 math, casts and atomics, so the GPU batch finds no CUDA-only codegen problem.
Example arguments are ml_dtypes bfloat16 arrays (NumPy has none)."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_standin import nvrtc_available, to_ptx

import ember
from ember.array import gemm, kernels, ops

nvrtc = pytest.importorskip("ember.backends.cuda.nvrtc")
ml = pytest.importorskip("ml_dtypes")

BF = ember.bfloat16


pytestmark = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC is not available")


def _zeros(n, dtype=ml.bfloat16):
    return np.zeros(n, dtype)


def test_elementwise_and_cast_kernels_compile():
    x = _zeros(8)
    for op, kinds in ((ops.add, (True, True)), (ops.multiply, (True, False)),
                      (ops.sqrt, (True,)), (ops.maximum, (True, True))):  # fmt: skip
        args = (8, x, *(x if is_array else 1.5 for is_array in kinds))
        ptx = to_ptx(kernels.contiguous(op, BF, kinds), args)
        assert ".entry" in ptx and "ld.global.u16" in ptx  # 16-bit loads: bfloat16's bits
    to_f32 = kernels.contiguous(ops.copy, BF, (True,))
    assert ".entry" in to_ptx(to_f32, (8, np.zeros(8, np.float32), x))
    from_f64 = kernels.contiguous(ops.copy, ember.float64, (True,))
    assert ".entry" in to_ptx(from_f64, (8, x, np.zeros(8, np.float64)))


def test_transpose_kernel_compiles():
    a = np.zeros((8, 8), ml.bfloat16)
    assert ".entry" in to_ptx(kernels.transpose2(BF), (a, a.T))


@pytest.mark.parametrize("a_kfast, b_nfast", [(True, True), (False, False)])
def test_gemm_kernel_compiles_without_spills(a_kfast, b_nfast):
    k = gemm.gemm_kernel(ember.float32, True, a_kfast, b_nfast)  # bfloat16 computes in float32
    x = _zeros(8)
    args = (x, x, x, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0)
    assert ".entry" in to_ptx(k, args)
    res = k.inspect(*args, stage="resources", dialect="cuda")
    assert res["spill_stores"] == 0 and res["local_bytes"] == 0, res


@ember.kernel
def _mixed(out, x, y, flags, s):
    i = ember.global_id()
    if i < out.shape[0]:
        v = ember.exp(x[i]) * s + ember.bfloat16(y[i]) - ember.bfloat16(0.1)
        out[i] = v if not ember.isnan(v) else ember.bfloat16(0)
        flags[i] = ember.int32(x[i])
        ember.atomic_exchange(out, 0, x[i])
        ember.atomic_cas(out, 1, x[i], v)


def test_user_kernel_with_bfloat16_math_casts_and_atomics_compiles():
    args = (_zeros(8), _zeros(8), np.zeros(8, np.float64), np.zeros(8, np.int32), ml.bfloat16(2))
    src = _mixed.inspect(*args, stage="source", dialect="cuda")
    assert "em_bf16_round_d" in src and "em_bf16_store" in src  # float64 -> bf16, rounding
    assert "float s" in src  # a bfloat16 scalar travels as float32
    assert ".entry" in to_ptx(_mixed, args)
