"""``ufunc.at`` (unbuffered in-place updates: repeated indices all count) against NumPy's:
every atomic operator, the dtypes with device atomics and the narrow ones updated through
a 32-bit copy, views, index tuples, slices and masks, broadcasting, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import check

import ember
from ember.array import scatter

E = ember.asarray


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "float32", "float64", "float16"])
def test_add_at_counts_every_repeat(backend, dtype):
    rng = np.random.default_rng(1)
    idx = rng.integers(-10, 10, 3000)  # many repeats, negative indices too
    v = rng.integers(1, 4, 3000).astype(dtype)
    h = np.zeros(10, dtype)
    x = E(h)
    ember.add.at(x, E(idx), E(v))
    np.add.at(h, idx, v)
    check(x, h, rtol=1e-3 if dtype == "float16" else None)


def test_every_operator_views_and_index_forms(backend):
    rng = np.random.default_rng(2)
    h = rng.integers(-50, 50, (6, 8)).astype(np.int64)
    x = E(h)
    cases = [
        ("subtract", (E(np.array([0, 5, 0])), E(np.array([1, 7, 1]))), ([0, 5, 0], [1, 7, 1]), 3),
        ("minimum", E(np.array([2, 2, 4])), [2, 2, 4], -60),
        ("maximum", (slice(None), E(np.array([3, 3]))), (slice(None), [3, 3]), 40),
        ("bitwise_and", E(np.array([1, 1])), [1, 1], 6),
        ("bitwise_or", slice(2, 4), slice(2, 4), 1),
        ("bitwise_xor", E(np.array([0, 0, 0])), [0, 0, 0], 5),
    ]  # fmt: skip
    for name, ei, ni, b in cases:
        getattr(ember, name).at(x, ei, b)
        getattr(np, name).at(h, ni, b)
        check(x, h)
    f = np.random.default_rng(3).standard_normal((5, 6))
    y = E(f)
    view, hv = y[::-1, 1::2], f[::-1, 1::2]  # a strided, reversed view: written through
    b = np.random.default_rng(4).standard_normal((4, 3))
    np.add.at(view, E(np.array([0, 1, 0, 4])), E(b))  # NumPy's own function, on the device
    np.add.at(hv, [0, 1, 0, 4], b)
    check(y, f)
    mask = f > 0
    ember.maximum.at(y, E(mask), 0.25)
    np.maximum.at(f, mask, 0.25)
    check(y, f)


def test_errors(backend):
    x = E(np.zeros(4, np.int32))
    with pytest.raises(TypeError, match="cannot cast the add of int32 and float64"):
        ember.add.at(x, E(np.array([0])), 1.5)
    with pytest.raises(TypeError, match="complex64 arrays have no atomic updates"):
        ember.multiply.at(E(np.zeros(3, np.complex64)), E(np.array([0])), 2)
    with pytest.raises(TypeError, match="float64 arrays have no bitwise_or"):
        ember.bitwise_or.at(E(np.zeros(3)), E(np.array([0])), 1)
    y = E(np.zeros(3))
    ember.add.at(y, E(np.array([5])), 1.0)
    with pytest.raises(IndexError):
        ember.synchronize()
    assert set(scatter.OPS) == {"add", "subtract", "minimum", "maximum", "bitwise_and",
                                "bitwise_or", "bitwise_xor"}  # fmt: skip
