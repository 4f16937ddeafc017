"""sort_complex, poly and polydiv (ember.array.polyroots) against NumPy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from array_common import check, sample

import ember


def test_sort_complex(backend):
    c = sample("int64", (3, 6), 7, low=0, high=2) + 1j * sample("int64", (3, 6), 8, 0, 2)
    check(ember.sort_complex(ember.asarray(c)), np.sort_complex(c))
    check(ember.sort_complex(ember.asarray(c[0])), np.sort_complex(c[0]))
    r = sample("float64", (7,), 9)
    check(ember.sort_complex(ember.asarray(r)), np.sort_complex(r))
    with pytest.raises(ValueError, match="ember.sort_complex: a 0-d array"):
        ember.sort_complex(ember.asarray(1.0))


def test_poly(backend):
    for z in ([1, 2], [1.5, -2.0, 3.0], [1 + 2j, 1 - 2j, 3.0]):
        check(ember.poly(ember.asarray(np.array(z))), np.poly(z), rtol=1e-12)
    check(ember.poly(ember.asarray(2.0)), np.poly([2.0]))
    assert ember.poly(ember.asarray(np.zeros(0))) == 1.0
    m = np.array([[1.0, 2.0], [3.0, 4.0]])
    with warnings.catch_warnings():  # eigvals runs on the host
        warnings.simplefilter("ignore", ember.EmberPerformanceWarning)
        check(ember.poly(ember.asarray(m)), np.poly(m), rtol=1e-12)
    with pytest.raises(ValueError, match="ember.poly: input must be 1d or non-empty square"):
        ember.poly(ember.zeros((2, 3)))


def test_polydiv(backend):
    cases = [([1.0, 2, 3], [0.5, 1]), ([1.0, -3, 0, 2], [1.0, -1]), ([1.0, 2.0], [1.0, 2, 3]),
             ([3.0, 1e-10, 2.0], [1.0, 0.0, 1.0]), ([0.0, 0.0, 4.0], [2.0]),
             ([5], [2])]  # fmt: skip
    for u, v in cases:
        q, r = ember.polydiv(ember.asarray(np.array(u)), ember.asarray(np.array(v)))
        q0, r0 = np.polydiv(u, v)
        check(q, q0)
        check(r, r0)
    with pytest.raises(ValueError, match="ember.polydiv: u and v must have at least one"):
        ember.polydiv(ember.zeros(0), ember.ones(2))
    with pytest.raises(ValueError, match="ember.polydiv: u must be 1-d"):
        ember.polydiv(ember.zeros((2, 2)), ember.ones(2))
