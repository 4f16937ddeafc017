"""Helpers of the FFT tests: inputs and the comparison with ``numpy.fft``.

Tolerance, per dtype: ``||y - y_ref||_2 <= rtol * log2(n) * ||y_ref||_2`` where ``y_ref`` is
NumPy's result computed in float64 and ``n`` the longest transformed length; by Parseval
``||y_ref||_2`` is the input's norm times the normalization's factor, so this is the usual
``rtol * ||x|| * log2(n)`` bound of a floating-point FFT.  ``rtol`` is about 7x the worst
error measured over lengths 2..65536 (smooth and Bluestein): complex64 2e-7, complex128
1e-15.
"""

from __future__ import annotations

import math

import numpy as np

import ember

RTOL = {"complex64": 2e-7, "float32": 2e-7, "complex128": 1e-15, "float64": 1e-15}


def complex_sample(shape, dtype="complex64", seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def real_sample(shape, dtype="float32", seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def wide(a: np.ndarray) -> np.ndarray:
    """``a`` in float64 / complex128, where NumPy's reference is computed."""
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def check(got, ref: np.ndarray, dtype: str, n: int) -> None:
    """``got`` (an ember array) matches the float64 reference ``ref`` cast to ``dtype``."""
    assert isinstance(got, ember.ndarray), type(got)
    host = got.to_numpy()
    assert host.dtype == np.dtype(dtype), (host.dtype, dtype)
    assert host.shape == ref.shape, (host.shape, ref.shape)
    scale = np.linalg.norm(ref)
    err = np.linalg.norm(host.astype(ref.dtype) - ref)
    bound = RTOL[dtype] * max(1.0, math.log2(max(n, 2))) * scale
    assert err <= bound or (scale == 0 and err == 0), f"error {err:.3e} > {bound:.3e}"
