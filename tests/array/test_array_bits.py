"""packbits/unpackbits (ember.array.bits) against NumPy: axes, bit orders, padding,
``count``, layouts and errors."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import check, sample

import ember


@pytest.mark.parametrize("dtype", ["bool", "int64"])
def test_packbits(backend, dtype):
    a = sample("int64", (3, 13, 2), 5, low=0, high=1).astype(dtype)
    if dtype == "int64":
        a[0, 0, 0] = -7  # any nonzero is a 1
    d = ember.asarray(a)
    for axis in (None, 0, 1, -1):
        for order in ("big", "little"):
            check(ember.packbits(d, axis=axis, bitorder=order),
                  np.packbits(a, axis=axis, bitorder=order))  # fmt: skip
    check(ember.packbits(d.transpose(1, 0, 2), axis=0), np.packbits(a.transpose(1, 0, 2), 0))
    check(ember.packbits(ember.asarray(np.array(True))), np.packbits(np.array(True)))
    check(ember.packbits(ember.asarray(np.zeros((2, 0), bool)), axis=1),
          np.packbits(np.zeros((2, 0), bool), axis=1))  # fmt: skip


def test_unpackbits(backend):
    p = sample("uint8", (3, 5, 2), 6)
    d = ember.asarray(p)
    for axis in (None, 0, 1, 2):
        for count in (None, 3, 100, -5):
            for order in ("big", "little"):
                got = ember.unpackbits(d[:, ::-1], axis=axis, count=count, bitorder=order)
                check(got, np.unpackbits(p[:, ::-1], axis=axis, count=count, bitorder=order))
    round_trip = ember.unpackbits(ember.packbits(ember.asarray(p > 100), axis=1), axis=1, count=5)
    check(round_trip, (p > 100).astype(np.uint8))


def test_bits_errors(backend):
    with pytest.raises(TypeError, match="ember.packbits: expected an input array of integer"):
        ember.packbits(ember.empty(3))
    with pytest.raises(TypeError, match="ember.unpackbits: expected an input array of unsigned"):
        ember.unpackbits(ember.empty(3, ember.int8))
    with pytest.raises(ValueError, match="'order' must be either 'little' or 'big'"):
        ember.packbits(ember.empty(3, ember.bool_), bitorder="x")
    with pytest.raises(ValueError, match="-count larger than number of elements"):
        ember.unpackbits(ember.empty(3, ember.uint8), count=-30)
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        ember.packbits(ember.empty((2, 2), ember.bool_), axis=2)
    with pytest.raises(TypeError, match=r"ember.packbits.*ember.asarray"):
        ember.packbits(np.ones(3, bool))
