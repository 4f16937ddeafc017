"""Property tests on the device: broadcasting of random shapes and views, and promotion of
random dtype pairs, against NumPy.  Derandomized (the same examples every run) so that the
kernels they compile stay few and cacheable."""

from __future__ import annotations

import warnings

import numpy as np
from array_common import check, sample
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember

SETTINGS = settings(
    max_examples=40, derandomize=True, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)  # fmt: skip


@st.composite
def broadcastable(draw):
    """Two shapes that broadcast, and a view (steps, reversal) for each operand."""
    ndim = draw(st.integers(0, 4))
    out = [draw(st.integers(1, 5)) for _ in range(ndim)]
    shapes = []
    for _ in range(2):
        k = draw(st.integers(0, ndim))
        shape = [n if draw(st.booleans()) else 1 for n in out[ndim - k :]]
        shapes.append(tuple(shape))
    steps = [tuple(draw(st.sampled_from([1, 1, 2, -1])) for _ in s) for s in shapes]
    return shapes, steps


def _viewed(shape, step, dtype, seed):
    """A host array of ``shape`` that is a view with ``step`` of a larger array."""
    big = sample(dtype, tuple(n * abs(k) for n, k in zip(shape, step, strict=True)), seed)
    index = (*(slice(None, None, k) for k in step), Ellipsis)  # ...: 0-d stays an array
    return big, index


@SETTINGS
@given(broadcastable(), st.sampled_from(["add", "multiply", "maximum", "less"]))
def test_broadcasting_views_match_numpy(backend, case, name):
    (sa, sb), (ka, kb) = case
    big_a, ia = _viewed(sa, ka, "float32", 1)
    big_b, ib = _viewed(sb, kb, "float32", 2)
    a, b = big_a[ia], big_b[ib]
    da, db = ember.asarray(big_a)[ia], ember.asarray(big_b)[ib]
    check(getattr(ember, name)(da, db), getattr(np, name)(a, b))


PAIRS = ["bool", "int8", "uint8", "int16", "int32", "uint32", "int64", "float16", "float32",
         "float64"]  # fmt: skip


@SETTINGS
@given(
    st.sampled_from(PAIRS), st.sampled_from(PAIRS),
    st.sampled_from(["add", "multiply", "divide", "greater", "minimum"]),
)  # fmt: skip
def test_promotion_of_dtype_pairs_matches_numpy(backend, left, right, name):
    a = sample(left, (6,), 3, low=-20, high=20)
    b = sample(right, (6,), 4, low=1, high=20, nonzero=True)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = getattr(np, name)(a, b)
        except TypeError:
            return
    check(getattr(ember, name)(ember.asarray(a), ember.asarray(b)), expected)


@SETTINGS
@given(
    st.sampled_from(PAIRS),
    st.one_of(st.integers(-300, 300), st.floats(-1e3, 1e3, width=32), st.booleans()),
    st.sampled_from(["add", "subtract", "less_equal", "maximum"]),
)  # fmt: skip
def test_python_scalar_operands_match_numpy(backend, dtype, value, name):
    a = sample(dtype, (5,), 5, low=-20, high=20)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = getattr(np, name)(a, value)
        except (TypeError, OverflowError) as exc:
            expected = type(exc)
    d = ember.asarray(a)
    if isinstance(expected, type):
        try:
            getattr(ember, name)(d, value)
        except expected:
            return
        raise AssertionError(f"NumPy raises {expected.__name__}, Ember does not")
    check(getattr(ember, name)(d, value), expected)
