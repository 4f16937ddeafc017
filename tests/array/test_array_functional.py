"""piecewise, apply_along_axis and apply_over_axes (ember.array.functional) against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import check

import ember


def test_piecewise(backend):
    x = np.linspace(-2.5, 2.5, 11)
    d = ember.asarray(x)
    check(ember.piecewise(d, [d < 0, d >= 0], [lambda v: -v, lambda v: v * 2.0]),
          np.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v * 2.0]))  # fmt: skip
    check(ember.piecewise(d, [d < -1, d > 1], [0.5, lambda v, k: v * k, -1.0], 2.0),
          np.piecewise(x, [x < -1, x > 1], [0.5, lambda v, k: v * k, -1.0], 2.0))  # fmt: skip
    check(ember.piecewise(d, d > 0, [1, 3]), np.piecewise(x, x > 0, [1, 3]))
    check(ember.piecewise(d, [d > 9], [lambda v: v]), np.piecewise(x, [x > 9], [lambda v: v]))
    i = np.arange(6.0).reshape(2, 3)
    check(ember.piecewise(ember.asarray(i), [ember.asarray(i) > 2], [7.9]),
          np.piecewise(i, [i > 2], [7.9]))  # fmt: skip
    check(ember.piecewise(ember.asarray(3.0), [True], [lambda v: v + 1.0]),
          np.piecewise(np.array(3.0), [True], [lambda v: v + 1.0]))  # fmt: skip
    with pytest.raises(ValueError, match=r"ember.piecewise: with 2 condition\(s\), either 2"):
        ember.piecewise(d, [d > 0, d < 0], [1])
    with pytest.raises(TypeError, match="ember.piecewise: the function returned a NumPy"):
        ember.piecewise(d, [d > 0], [lambda v: np.ones(6)])


def test_apply_along_axis(backend):
    a = np.arange(24.0).reshape(2, 3, 4)
    d = ember.asarray(a)
    for axis in (0, 2, -2):
        check(ember.apply_along_axis(lambda v: ember.sum(v), axis, d),
              np.apply_along_axis(np.sum, axis, a))  # fmt: skip
        check(ember.apply_along_axis(lambda v: ember.stack([v[:2], v[-2:]]), axis, d),
              np.apply_along_axis(lambda v: np.stack([v[:2], v[-2:]]), axis, a))  # fmt: skip
    check(
        ember.apply_along_axis(lambda v, k: k, 0, d, 3),
        np.apply_along_axis(lambda v, k: k, 0, a, 3),
    )
    with pytest.raises(ValueError, match="ember.apply_along_axis: cannot apply_along_axis"):
        ember.apply_along_axis(ember.sum, 1, ember.zeros((0, 3)))
    calls: list = []  # each call returns one more element than the one before
    with pytest.raises(ValueError, match="every call must return the same shape"):
        ember.apply_along_axis(lambda v: v[: int(v.shape[0] > 0) + len(calls.append(0) or calls)],
                               1, d)  # fmt: skip


def test_apply_over_axes(backend):
    a = np.arange(24.0).reshape(2, 3, 4)
    d = ember.asarray(a)
    check(ember.apply_over_axes(ember.sum, d, [0, 2]), np.apply_over_axes(np.sum, a, [0, 2]))
    check(ember.apply_over_axes(ember.sum, d, -1), np.apply_over_axes(np.sum, a, -1))
    with pytest.raises(ValueError, match="ember.apply_over_axes: function is not returning"):
        ember.apply_over_axes(lambda x, axis: ember.sum(x), d, 0)
