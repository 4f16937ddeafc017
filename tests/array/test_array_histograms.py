"""Multidimensional histograms (ember.array.histograms) against NumPy: counts, edges,
dtypes, density, weights, out-of-range points and NaNs, errors."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import check, sample

import ember


def _same(got, want):
    hist, edges = got
    check(hist, want[0])
    assert len(edges) == len(want[1])
    for g, w in zip(edges, want[1], strict=True):
        check(g, w)


def test_histogramdd(backend):
    s = sample("float64", (60, 3), 1)
    s[4, 1] = np.nan  # dropped (outside every bin)
    s[5, 0] = 2.0  # on the last edge: in the last bin
    w = sample("float64", (60,), 2)
    ds, dw = ember.asarray(s), ember.asarray(w)
    rng = [(-2, 2), (-1, 1), (0, 3)]
    _same(ember.histogramdd(ds, bins=4, range=rng), np.histogramdd(s, bins=4, range=rng))
    bins = [3, [-1.0, 0.0, 0.5, 2.0], np.int64(2)]
    rng2 = [(-2, 2), None, (0, 3)]
    _same(ember.histogramdd(ds, bins=bins, range=rng2), np.histogramdd(s, bins=bins, range=rng2))
    _same(ember.histogramdd(ds, bins=(2, 3, 4), range=rng, weights=dw, density=True),
          np.histogramdd(s, bins=(2, 3, 4), range=rng, weights=w, density=True))  # fmt: skip
    x = s[:, 2]
    _same(ember.histogramdd(ember.asarray(x), bins=3), np.histogramdd(x, bins=3))  # 1-d
    e = np.zeros((0, 2))  # empty: range (0, 1)
    _same(ember.histogramdd(ember.asarray(e), bins=2), np.histogramdd(e, bins=2))


def test_histogram2d(backend):
    s = sample("float64", (40, 2), 4)
    x, y = s[:, 0], s[:, 1]
    dx, dy = ember.asarray(x), ember.asarray(y)
    for bins in (5, [2, 3], [3, [0.0, 1.0, 2.0]], [-3.0, -1.0, 0.0, 4.0]):
        got = ember.histogram2d(dx, dy, bins=bins)
        want = np.histogram2d(x, y, bins=bins)
        for g, w in zip(got, want, strict=True):
            check(g, w)
    got = ember.histogram2d(dx, dy, bins=4, range=[[-1, 1], [-2, 2]], density=True)
    want = np.histogram2d(x, y, bins=4, range=[[-1, 1], [-2, 2]], density=True)
    check(got[0], want[0])


def test_histogram_errors(backend):
    d = ember.asarray(np.ones((3, 2)))
    with pytest.raises(ValueError, match="ember.histogramdd: the dimension of bins"):
        ember.histogramdd(d, bins=[3])
    with pytest.raises(ValueError, match="range argument must have one entry per dimension"):
        ember.histogramdd(d, range=[(0, 1)])
    with pytest.raises(ValueError, match=r"`bins\[0\]` must be positive"):
        ember.histogramdd(d, bins=0)
    with pytest.raises(ValueError, match=r"`bins\[1\]` must be monotonically increasing"):
        ember.histogramdd(d, bins=[2, [1.0, 0.0]])
    with pytest.raises(ValueError, match="x and y must have the same length"):
        ember.histogram2d(ember.ones(3), ember.ones(4))
    with pytest.raises(ValueError, match="weights must be 1-d"):
        ember.histogramdd(d, weights=ember.ones(2))
    with pytest.raises(TypeError, match=r"ember.histogramdd.*ember.asarray"):
        ember.histogramdd([np.ones(3), np.ones(3)])
    with pytest.raises(ValueError, match="autodetected range of"):
        ember.histogramdd(ember.asarray(np.array([[np.inf, 1.0]])))
