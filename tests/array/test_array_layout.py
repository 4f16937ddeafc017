"""Host-side layout arithmetic (no device): broadcasting, axis coalescing, magic-number
division, and kernels that still compile ``ember.sqrt(x)`` on numbers."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ember
from ember.array import broadcast


@given(st.integers(1, (1 << 31) - 1), st.lists(st.integers(0, (1 << 31) - 1), max_size=20))
def test_magic_division_is_exact_below_2_31(d, values):
    m, k = broadcast.magic(d)
    assert m < (1 << 33)
    for r in values + [0, d - 1, d, d + 1, (1 << 31) - 1]:
        if r < (1 << 31):
            assert (r * m) >> k == r // d
            assert r * m < (1 << 64)  # fits the kernel's uint64 product


def test_magic_division_edges():
    rng = random.Random(0)
    for d in [1, 2, 3, 5, 7, 641, 4096, 65535, 65536, (1 << 31) - 1, 1 << 30]:
        m, k = broadcast.magic(d)
        for r in [rng.randrange(1 << 31) for _ in range(200)] + [(1 << 31) - 1]:
            assert (r * m) >> k == r // d


@given(
    st.lists(st.lists(st.integers(1, 4), max_size=4), min_size=1, max_size=3),
)
def test_broadcast_shapes_match_numpy(shapes):
    shapes = [tuple(s) for s in shapes]
    try:
        expected = np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(ValueError, match="could not be broadcast together"):
            broadcast.broadcast_shapes(*shapes)
        return
    assert broadcast.broadcast_shapes(*shapes) == expected


def _offsets(shape, strides):
    return sorted(
        sum(i * s for i, s in zip(idx, strides, strict=True)) for idx in np.ndindex(*shape)
    )


@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_coalescing_keeps_every_operands_element_order(shape, data):
    shape = tuple(shape)
    base = [math.prod(shape[k + 1 :]) for k in range(len(shape))]
    layouts = [
        tuple(base),
        tuple(data.draw(st.sampled_from([0, s, -s, 2 * s])) for s in base),
    ]
    dims, strides = broadcast.coalesce(shape, layouts)
    assert math.prod(dims) == math.prod(shape)
    for before, after in zip(layouts, strides, strict=True):
        flat_before = [
            sum(i * s for i, s in zip(idx, before, strict=True)) for idx in np.ndindex(*shape)
        ]
        flat_after = [
            sum(i * s for i, s in zip(idx, after, strict=True)) for idx in np.ndindex(*dims)
        ]
        assert flat_before == flat_after  # same offsets in the same (C) order


def test_contiguous_shapes_coalesce_to_one_axis():
    assert broadcast.coalesce((3, 4, 5), [(20, 5, 1), (20, 5, 1)])[0] == (60,)
    assert broadcast.coalesce((3, 1, 5), [(5, 5, 1), (0, 0, 1)])[0] == (3, 5)
    assert broadcast.coalesce((), [()])[0] == (1,)
    assert broadcast.coalesce((2, 0), [(0, 1)])[0] == (0,)


@ember.kernel
def uses_math(x, out):
    i = ember.global_id()
    if i < x.shape[0]:
        out[i] = ember.sqrt(x[i]) + ember.floor(x[i]) + ember.abs(x[i]) + ember.exp(0.0)


def test_kernels_still_compile_ember_math_on_numbers(backend):
    """``ember.sqrt`` is the array function now; inside a kernel it is still the intrinsic."""
    assert ember.sqrt.__ember_intrinsic__ == "sqrt"
    host = np.array([0.25, 4.0, 9.5], np.float32)
    x, out = ember.asarray(host), ember.empty(3, ember.float32)
    uses_math[1, 32](x, out)
    expected = np.sqrt(host) + np.floor(host) + np.abs(host) + 1
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-6)
    source = uses_math.inspect(host, host, dialect="cuda")
    assert "sqrtf(" in source or "sqrt(" in source
    assert ember.sqrt(4.0) == 2.0  # and outside kernels on numbers: NumPy


def test_launch_read_copies_one_element_of_any_view(backend):
    """``launch.read`` (the sizes and ranges Ember's operations read back) takes the
    element's bytes at its offset: views with offsets, negative steps and negative
    indices, every dtype width."""
    from ember.array import launch

    for dt in ("bool", "int8", "float16", "int32", "float64", "complex64"):
        host = (np.arange(60) % 7).astype(dt).reshape(5, 12)
        d = ember.asarray(host)
        for v, hv in ((d, host), (d[1:, ::-3], host[1:, ::-3]), (d[::-2, 2:9], host[::-2, 2:9])):
            for index in ((0, 0), (1, 2), (-1, -1), (v.shape[0] - 1, 0)):
                got = launch.read(v, index)
                assert got == hv[index] and got.dtype == hv.dtype, (dt, index)
        assert launch.read(ember.asarray(host[2, 3]), ()) == host[2, 3]
        with pytest.raises(IndexError):
            launch.read(d, (5, 0))
