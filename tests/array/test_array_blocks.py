"""rollaxis, fill_diagonal, diagflat and block (ember.array.blocks) against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import check

import ember


def test_rollaxis(backend):
    a = np.arange(24.0).reshape(2, 3, 4)
    d = ember.asarray(a)
    for axis, start in ((0, 0), (0, 3), (2, 0), (-1, 1), (1, -1), (1, 2), (2, -3)):
        check(ember.rollaxis(d, axis, start), np.rollaxis(a, axis, start))
    with pytest.raises(np.exceptions.AxisError, match="ember.rollaxis: 'start' arg requires"):
        ember.rollaxis(d, 0, 4)
    with pytest.raises(ValueError, match="ember.rollaxis: axis 3 is out of bounds"):
        ember.rollaxis(d, 3)


def test_fill_diagonal(backend):
    cases = [((5, 5), False, 7.0), ((7, 3), False, [1.0, 2.0]), ((7, 3), True, [1.0, 2.0]),
             ((3, 7), True, 5.0), ((4, 4, 4), False, [1.0, 2, 3, 4, 5]),
             ((12, 2), True, "dev")]  # fmt: skip
    for shape, wrap, val in cases:
        for transposed in (False, True):
            h = np.zeros(shape[::-1]).T if transposed else np.zeros(shape)
            d = ember.zeros(shape[::-1]).T if transposed else ember.zeros(shape)
            if val == "dev":
                hv, dv = np.array([9.0, 8.0, 7.0]), ember.asarray(np.array([9.0, 8.0, 7.0]))
            else:
                hv = dv = val
            assert ember.fill_diagonal(d, dv, wrap=wrap) is None
            np.fill_diagonal(h, hv, wrap=wrap)
            check(d, h)
    with pytest.raises(ValueError, match="ember.fill_diagonal: array must be at least 2-d"):
        ember.fill_diagonal(ember.zeros(3), 1)
    with pytest.raises(ValueError, match="all dimensions of input must be of equal length"):
        ember.fill_diagonal(ember.zeros((2, 3, 3)), 1)
    with pytest.raises(TypeError, match=r"ember.fill_diagonal.*ember.asarray"):
        ember.fill_diagonal(np.zeros((2, 2)), 1)


def test_diagflat(backend):
    v = np.array([[1.0, 2.0], [3.0, 4.0]])
    for k in (0, 2, -1):
        check(ember.diagflat(ember.asarray(v), k), np.diagflat(v, k))
    check(ember.diagflat([1.0, 2.0]), np.diagflat([1.0, 2.0]))


def test_block(backend):
    a, b, c = np.ones((2, 2)), np.zeros((2, 3)), np.full((1, 5), 3.0)
    da, db, dc = ember.asarray(a), ember.asarray(b), ember.asarray(c)
    check(ember.block([[da, db], [dc]]), np.block([[a, b], [c]]))
    check(ember.block([1.0, 2.0, ember.arange(3.0)]), np.block([1.0, 2.0, np.arange(3.0)]))
    check(ember.block([[1.0], [2.0]]), np.block([[1.0], [2.0]]))
    check(ember.block([[[da]], [[da]]]), np.block([[[a]], [[a]]]))
    out = ember.block(da)
    check(out, np.block(a))
    assert out.buffer is not da.buffer
    with pytest.raises(ValueError, match=r"List depths are mismatched.*arrays\[1\]"):
        ember.block([[da], da])
    with pytest.raises(ValueError, match=r"List at arrays\[1\] cannot be empty"):
        ember.block([[da], []])
    with pytest.raises(TypeError, match="arrays is a tuple. Only lists"):
        ember.block((da,))
    with pytest.raises(ValueError, match="ember.block"):
        ember.block([[da, dc]])
    with pytest.raises(TypeError, match=r"ember.block.*ember.asarray"):
        ember.block([da, a])
