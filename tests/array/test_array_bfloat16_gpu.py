"""CUDA only (marker ``gpu``): bfloat16 matrix products go through cuBLAS (``cublasGemmEx`` /
``cublasGemmStridedBatchedEx`` with CUDA_R_16BF matrices and float32 compute) and agree
with a float64 product of the same bfloat16 inputs.

Tolerance: cuBLAS accumulates in float32 and rounds the result once to bfloat16, so each
element is within one bfloat16 ulp (2**-7 relative) of the exact product, plus float32
accumulation error (K float32 ulps of the sum of the terms' magnitudes, ``|A| @ |B|``: the
worst case of a sum of K terms).  Ember's own kernel computes the same way and meets the
same bound."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.runtime import backend as registry

pytestmark = pytest.mark.gpu
ULP = 2.0**-7


@pytest.fixture
def cuda():
    with registry.use("cuda") as be:
        yield be


def _bf16_values(shape, seed):
    """float32 values that are exact bfloat16 values (float32's top 16 bits)."""
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return (x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)


def _check(got: ember.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    assert got.dtype is ember.bfloat16
    values = got.astype(ember.float32).to_numpy().astype(np.float64)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    terms = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    err = np.abs(values - exact)
    k = a.shape[-1]
    assert np.all(err <= ULP * np.abs(exact) + k * 2.0**-23 * terms), float(err.max())
    return values


@pytest.mark.parametrize("sa, sb", [((70, 130), (130, 50)), ((3, 70, 130), (130, 50)),
                                    ((64, 64), (64, 64)), ((1000, 520), (520, 777))])  # fmt: skip
def test_bfloat16_products_use_cublas(cuda, monkeypatch, sa, sb):
    lib = cuda.blas()
    if lib is None:
        pytest.skip(f"cuBLAS is not installed here: {cuda.vendor_missing.get('blas')}")
    calls = []
    real = lib.gemm
    monkeypatch.setattr(lib, "gemm", lambda *a, **k: (calls.append(a[0]), real(*a, **k))[1])
    from ember.array import matmul

    monkeypatch.setattr(matmul, "_FAST", {})
    a, b = _bf16_values(sa, 0), _bf16_values(sb, 1)
    x, y = ember.asarray(a, dtype=ember.bfloat16), ember.asarray(b, dtype=ember.bfloat16)
    _check(x @ y, a, b)
    small = len(sa) == 2 and sa[0] * sa[1] * sb[1] <= matmul.SMALL_PRODUCT
    if small:  # a small 2-d product is Ember's kernel (less host time than a cuBLAS call)
        assert not calls
    else:
        assert calls and set(calls) == {"bfloat16"}
    calls.clear()
    with ember.config.override(blas="ember"):  # Ember's tiled kernel on the same data
        _check(x @ y, a, b)
    assert not calls  # the kernel made no cuBLAS call
