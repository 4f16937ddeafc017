"""CUDA only (marker ``gpu``): complex products through cuBLAS (cgemm/zgemm) and complex
factorizations through cuSOLVER (C/Z routines), against NumPy and Ember's own kernel.
Tolerances relative to the result's scale: complex64 1e-5, complex128 1e-12."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.runtime import backend as registry

pytestmark = pytest.mark.gpu
TOL = {"complex64": 1e-5, "complex128": 1e-12}


@pytest.fixture
def cuda():
    with registry.use("cuda") as be:
        yield be


def _data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _close(got, want, tol):
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_products_use_cublas(cuda, monkeypatch, dtype):
    lib = cuda.blas()
    if lib is None:
        pytest.skip(f"cuBLAS is not installed here: {cuda.vendor_missing.get('blas')}")
    calls = []
    real = lib.gemm
    monkeypatch.setattr(lib, "gemm", lambda *a, **k: (calls.append(a[0]), real(*a, **k))[1])
    from ember.array import matmul

    monkeypatch.setattr(matmul, "_FAST", {})
    a, b = _data((3, 70, 130), dtype, 0), _data((130, 50), dtype, 1)
    got = (ember.asarray(a) @ ember.asarray(b)).to_numpy()
    assert calls == [dtype]
    _close(got, a @ b, TOL[dtype])
    small = _data((64, 64), dtype, 2)  # the small-product fast path
    _close((ember.asarray(small) @ ember.asarray(small)).to_numpy(), small @ small, TOL[dtype])
    t = ember.asarray(np.ascontiguousarray(a[0].T)).T  # op T on a transposed view
    _close((t @ ember.asarray(b)).to_numpy(), a[0] @ b, TOL[dtype])
    with ember.config.override(blas="ember"):  # Ember's kernel (GPU geometry) on the same data
        mine = (ember.asarray(a) @ ember.asarray(b)).to_numpy()
    _close(mine, got, TOL[dtype])


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_factorizations_use_cusolver(cuda, dtype):
    if cuda.solver() is None:
        pytest.skip(f"cuSOLVER is not installed here: {cuda.vendor_missing.get('solver')}")
    tol = 1e-4 if dtype == "complex64" else 1e-11
    n = 40
    a = _data((2, n, n), dtype, 3)
    h = (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)
    x, hx = ember.asarray(a), ember.asarray(h)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ember.EmberPerformanceWarning)  # no host fallback
        lo = ember.linalg.cholesky(hx).to_numpy()
        up = ember.linalg.cholesky(hx, upper=True).to_numpy()
        q, r = (t.to_numpy() for t in ember.linalg.qr(x))
        w, v = (t.to_numpy() for t in ember.linalg.eigh(hx))
        u, s, vh = (t.to_numpy() for t in ember.linalg.svd(x[:, :, :30], full_matrices=False))
        uw, sw, vhw = (t.to_numpy() for t in ember.linalg.svd(x[:, :30, :]))  # a wide matrix
        solved = ember.linalg.solve(x, ember.asarray(h)).to_numpy()
        sign, logabs = (t.to_numpy() for t in ember.linalg.slogdet(x))
    scale = float(np.abs(h).max())
    herm = lambda m: np.conj(np.swapaxes(m, -1, -2))  # noqa: E731
    _close(lo @ herm(lo), h, tol)
    _close(herm(up) @ up, h, tol)
    _close(q @ r, a, tol)
    _close(h @ v, v * w[..., None, :], tol * scale)
    _close((u * s[..., None, :]) @ vh, a[:, :, :30], tol)
    _close((uw[..., :, :30] * sw[..., None, :]) @ vhw[..., :30, :], a[:, :30, :], tol)
    _close(a @ solved, h, tol * scale)
    ref_sign, ref_log = np.linalg.slogdet(a)
    _close(sign, ref_sign, tol)
    _close(logabs, ref_log, tol)
