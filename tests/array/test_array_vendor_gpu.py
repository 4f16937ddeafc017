"""CUDA only (marker ``gpu``): matrix products and factorizations really go through
cuBLAS / cuSOLVER when their wheels are installed, on Ember's stream, and agree with NumPy
(and with Ember's own kernel).  Tolerances: float64 1e-12, float32 1e-5 (IEEE), TF32 and
float16 1e-2 relative to the result's scale."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.runtime import backend as registry

pytestmark = pytest.mark.gpu


@pytest.fixture
def cuda():
    with registry.use("cuda") as be:
        yield be


def _blas(be):
    lib = be.blas()
    if lib is None:
        pytest.skip(f"cuBLAS is not installed here: {be.vendor_missing.get('blas')}")
    return lib


def _scale_close(got, want, tol):
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("dtype, tol", [("float64", 1e-12), ("float32", 1e-5), ("float16", 1e-2)])
def test_products_use_cublas(cuda, monkeypatch, dtype, tol):
    lib = _blas(cuda)
    calls = []
    real = lib.gemm
    monkeypatch.setattr(lib, "gemm", lambda *a, **k: (calls.append(a[:3]), real(*a, **k))[1])
    from ember.array import matmul

    monkeypatch.setattr(matmul, "_FAST", {})
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 70, 130)).astype(dtype)
    b = rng.standard_normal((130, 50)).astype(dtype)
    before = cuda.default_stream.submitted
    got = (ember.asarray(a) @ ember.asarray(b)).to_numpy()
    assert calls and cuda.default_stream.submitted > before
    _scale_close(got.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), tol)
    small = rng.standard_normal((64, 64)).astype(dtype)  # the small-product fast path
    _scale_close((ember.asarray(small) @ ember.asarray(small)).to_numpy().astype(np.float64),
                 small.astype(np.float64) @ small.astype(np.float64), tol)  # fmt: skip
    with ember.config.override(blas="ember"):  # Ember's kernel on the same data
        mine = (ember.asarray(a) @ ember.asarray(b)).to_numpy()
    _scale_close(mine.astype(np.float64), got.astype(np.float64), max(tol, 1e-5))


def test_tf32_switch(cuda):
    _blas(cuda)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((512, 512)).astype(np.float32)
    exact = a.astype(np.float64) @ a.astype(np.float64)
    ieee = (ember.asarray(a) @ ember.asarray(a)).to_numpy()
    with ember.config.override(matmul_tf32=True):
        tf32 = (ember.asarray(a) @ ember.asarray(a)).to_numpy()
    _scale_close(ieee, exact, 1e-5)
    _scale_close(tf32, exact, 1e-2)


def test_factorizations_use_cusolver(cuda):
    if cuda.solver() is None:
        pytest.skip(f"cuSOLVER is not installed here: {cuda.vendor_missing.get('solver')}")
    import warnings

    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 6, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ember.EmberPerformanceWarning)  # no host fallback
        q, r = ember.linalg.qr(ember.asarray(a))
        u, s, vh = ember.linalg.svd(ember.asarray(a[:, :, :4]), full_matrices=False)
        d = ember.linalg.det(ember.asarray(a))
    _scale_close(q.to_numpy() @ r.to_numpy(), a, 1e-10)
    _scale_close((u.to_numpy() * s.to_numpy()[..., None, :]) @ vh.to_numpy(), a[:, :, :4], 1e-10)
    np.testing.assert_allclose(d.to_numpy(), np.linalg.det(a), rtol=1e-10)
