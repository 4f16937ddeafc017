"""Property tests of the reductions' axis, keepdims and shape rules: random shapes (empty
axes included), random views (steps, reversals, transposes) and random axis sets, against
NumPy.  Derandomized, and limited to float32 ``sum``/``max``/``argmax`` so that the kernels
compiled stay few."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import check, sample
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember

SETTINGS = settings(
    max_examples=30, derandomize=True, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)  # fmt: skip


@st.composite
def reductions(draw):
    """A shape, a view of an array of it (steps, reversal, axis order), an axis argument
    and keepdims."""
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.integers(0, 5)) for _ in range(ndim))
    steps = tuple(draw(st.sampled_from([1, 1, 2, -1])) for _ in range(ndim))
    order = draw(st.permutations(range(ndim)))
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none" or ndim == 0:
        axis = None
    elif kind == "int":
        axis = draw(st.integers(-ndim, ndim - 1))
    else:
        axis = tuple(draw(st.sets(st.integers(0, ndim - 1), max_size=ndim)))
    return shape, steps, tuple(order), axis, draw(st.booleans())


def _view(shape, steps, order, seed):
    big = sample("float32", tuple(n * abs(k) for n, k in zip(shape, steps, strict=True)), seed)
    index = tuple(slice(None, None, k) for k in steps)
    return lambda a: a[index].transpose(order) if order else a, big


@SETTINGS
@given(case=reductions())
def test_sum_max_shapes_and_axes(backend, case):
    shape, steps, order, axis, keepdims = case
    view, big = _view(shape, steps, order, seed=len(shape))
    x, d = view(big), view(ember.asarray(big))
    expected = np.sum(x.astype(np.float64), axis=axis, keepdims=keepdims).astype(np.float32)
    check(ember.sum(d, axis=axis, keepdims=keepdims), expected, rtol=1e-5)
    try:
        expected = np.max(x, axis=axis, keepdims=keepdims)
    except ValueError as exc:  # an empty reduction without identity: the same error
        with pytest.raises(ValueError, match="zero-size array"):
            ember.max(d, axis=axis, keepdims=keepdims)
        assert "zero-size" in str(exc)
        return
    check(ember.max(d, axis=axis, keepdims=keepdims), expected)


@SETTINGS
@given(case=reductions())
def test_argmax_shapes_and_axes(backend, case):
    shape, steps, order, axis, keepdims = case
    if isinstance(axis, tuple):
        return
    view, big = _view(shape, steps, order, seed=len(shape) + 7)
    big = np.round(big)  # ties: the first occurrence
    x, d = view(big), view(ember.asarray(big))
    try:
        expected = np.argmax(x, axis=axis, keepdims=keepdims)
    except ValueError:
        with pytest.raises(ValueError, match="empty sequence"):
            ember.argmax(d, axis=axis, keepdims=keepdims)
        return
    check(ember.argmax(d, axis=axis, keepdims=keepdims), expected)
