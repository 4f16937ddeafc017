"""Helpers of the array suite: sample data per dtype and comparison with NumPy."""

from __future__ import annotations

import numpy as np

import ember

DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
]  # fmt: skip
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "float32", "float64"]
COMMON = ["bool", "int32", "int64", "float32", "float64"]
TOLERANCE = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-13, "complex64": 1e-5,
             "complex128": 1e-12}  # fmt: skip
COMPLEX = ["complex64", "complex128"]


def sample(dtype, shape=(5, 7), seed=0, low=None, high=None, nonzero=False) -> np.ndarray:
    """Random values of ``dtype``: integers over the whole range (or ``[low, high]``),
    floats standard normal with a few special values for larger arrays."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "c":  # each part as its float dtype's
        part = np.finfo(dt).dtype
        parts = [sample(part, shape, seed + k, low, high, nonzero) for k in (0, 1)]
        return (parts[0] + 1j * parts[1]).astype(dt)
    if dt.kind == "b":
        out = rng.integers(0, 2, shape).astype(bool)
        return np.ones(shape, bool) if nonzero else out
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo = info.min if low is None else max(low, info.min)
        hi = info.max if high is None else min(high, info.max)
        out = rng.integers(lo, hi, shape, dtype=dt, endpoint=True)
        if nonzero:
            out[out == 0] = 1
        return out
    out = (rng.standard_normal(shape) * 3).astype(dt)
    if low is not None or high is not None:
        out = np.clip(out, low, high).astype(dt)
    if nonzero:
        out[out == 0] = 1
    return out


def check(actual, expected, exact: bool = False, rtol: float | None = None) -> None:
    """``actual`` (an ember array or a scalar) equals NumPy's ``expected``: same dtype and
    shape, values exact for integers and bools, close for floats (NaN where NaN)."""
    expected = np.asarray(expected)
    if isinstance(actual, ember.ndarray):
        assert actual.dtype is ember.dtype(expected.dtype), (actual.dtype, expected.dtype)
        assert actual.shape == expected.shape, (actual.shape, expected.shape)
        actual = actual.to_numpy()
    else:
        actual = np.asarray(actual)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if expected.dtype.kind in "fc" and not exact:
        tol = TOLERANCE[expected.dtype.name] if rtol is None else rtol
        np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)


def device(host: np.ndarray, view=None) -> tuple[ember.ndarray, np.ndarray]:
    """``host`` on the device, and the same view (``view(a)``) of both."""
    d = ember.asarray(host)
    if view is None:
        return d, host
    return view(d), view(host)
