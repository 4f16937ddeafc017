"""Helpers for the kernel suites: device views of host arrays, sample data, launch sizes."""

from __future__ import annotations

import numpy as np

import ember


def device_view(base: np.ndarray, view) -> tuple[np.ndarray, ember.ndarray]:
    """``view(base)`` on the host and the same view of a device copy of ``base``.

    The device array shares its buffer with the copy of ``base`` and has the view's shape,
    byte strides (possibly negative) and byte offset, like a NumPy view.
    """
    base = np.ascontiguousarray(base)
    dbase = ember.asarray(base)
    host = view(base)
    offset = host.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    dev = ember.ndarray(host.shape, dbase.dtype, dbase.buffer, dbase.backend, host.strides, offset)
    return host, dev


def sample(dtype, shape, seed: int = 0, low=None, high=None) -> np.ndarray:
    """Random values of ``dtype``: small integers, or floats in [-2, 2)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        lo = (0 if dt.kind == "u" else -50) if low is None else low
        hi = 50 if high is None else high
        return rng.integers(lo, hi, shape).astype(dt)
    lo = -2.0 if low is None else low
    hi = 2.0 if high is None else high
    return rng.uniform(lo, hi, shape).astype(dt)


def tolerance(dtype) -> dict:
    """assert_allclose tolerances per dtype (FMA contraction and math libraries differ)."""
    name = np.dtype(dtype).name
    return {
        "float16": {"rtol": 2e-3, "atol": 2e-3},
        "float32": {"rtol": 2e-6, "atol": 1e-6},
        "float64": {"rtol": 1e-13, "atol": 1e-14},
    }.get(name, {"rtol": 0, "atol": 0})


def blocks(n: int, threads: int = 64) -> tuple[int, int]:
    """(grid, block) covering ``n`` threads."""
    return (max(1, -(-n // threads)), threads)
