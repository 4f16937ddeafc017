"""Shapes and C strides (``ember.array.ndarray``): the fast paths for the usual spellings
give what the general ones give, and what NumPy gives."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ember.array.ndarray import c_strides, normalize_shape

dims = st.lists(st.integers(0, 9), min_size=1, max_size=5).map(tuple)


@given(dims, st.sampled_from([1, 2, 4, 8, 16]))
def test_c_strides_are_numpys_computed_or_kept(shape, itemsize):
    want = np.empty(shape, np.dtype(f"V{itemsize}")).strides if 0 not in shape else None
    first, again = c_strides(shape, itemsize), c_strides(tuple(shape), itemsize)
    assert first == again
    if want is not None:
        assert first == want


@given(dims)
def test_a_tuple_of_ints_is_its_own_shape(shape):
    assert normalize_shape(shape) == shape
    assert normalize_shape(list(shape)) == shape  # the general path agrees
    assert normalize_shape(tuple(np.int64(n) for n in shape)) == shape
    assert all(type(n) is int for n in normalize_shape(tuple(np.int32(n) for n in shape)))


@pytest.mark.parametrize(
    ("shape", "error"),
    [((2, -1), ValueError), ((2.0, 3), TypeError), ("ab", TypeError), (-3, ValueError)],
)
def test_bad_shapes_say_what_is_wrong(shape, error):
    with pytest.raises(error):
        normalize_shape(shape)


def test_an_int_is_a_one_d_shape():
    assert normalize_shape(5) == (5,) and normalize_shape(np.int16(5)) == (5,)
    assert c_strides((5,), 4) == (4,)
