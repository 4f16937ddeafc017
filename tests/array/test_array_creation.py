"""Array creation against NumPy: dtypes, shapes, defaults, copies and errors."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import DTYPES, check, sample

import ember


@pytest.mark.parametrize("dtype", DTYPES)
def test_full_ones_zeros_every_dtype(backend, dtype):
    check(ember.ones((3, 4), dtype), np.ones((3, 4), dtype))
    check(ember.zeros(5, dtype), np.zeros(5, dtype))
    value = True if dtype == "bool" else 7
    check(ember.full((2, 3), value, dtype), np.full((2, 3), value, dtype))


def test_default_dtypes_follow_numpy(backend):
    check(ember.ones(3), np.ones(3))
    check(ember.empty((2, 2)).astype("float64") * 0, np.zeros((2, 2)))
    check(ember.full(3, 7), np.full(3, 7))
    check(ember.full(3, 2.5), np.full(3, 2.5))
    check(ember.full(3, True), np.full(3, True))
    check(ember.full((), 4.0), np.full((), 4.0))
    check(ember.full(3, 2.7, "int32"), np.full(3, 2.7, "int32"))
    check(ember.full(4, np.float32(1.5)), np.full(4, np.float32(1.5)))


def test_like_functions(backend):
    x = ember.asarray(sample("float32", (3, 5)))
    for fn, ref in [(ember.zeros_like, np.zeros_like), (ember.ones_like, np.ones_like)]:
        check(fn(x), ref(np.empty((3, 5), np.float32)))
        check(fn(x, dtype="int8"), ref(np.empty((3, 5), np.float32), dtype="int8"))
    check(ember.full_like(x, 3), np.full((3, 5), 3, np.float32))
    e = ember.empty_like(x)
    assert e.shape == (3, 5) and e.dtype is ember.float32 and e.is_c_contiguous


@pytest.mark.parametrize(
    "args",
    [
        (10,),
        (2, 11),
        (2, 11, 3),
        (10, 0, -2),
        (0,),
        (5, 2),
        (-3, 3),
        (0.5, 3.0, 0.25),
        (1, 2, 0.1),
        (3.0,),
    ],  # fmt: skip
)
def test_arange(backend, args):
    check(ember.arange(*args), np.arange(*args), rtol=1e-12)


def test_arange_dtypes(backend):
    check(ember.arange(5, dtype="float32"), np.arange(5, dtype="float32"))
    check(ember.arange(2, 9, 3, dtype="uint8"), np.arange(2, 9, 3, dtype="uint8"))
    check(ember.arange(0, 1, 0.25, dtype="float16"), np.arange(0, 1, 0.25, dtype="float16"))
    with pytest.raises(ValueError, match="step must not be zero"):
        ember.arange(0, 5, 0)
    # NumPy fills first + i * (second - first) in the dtype: with an integer dtype the
    # step is int(start + step) - int(start) ([0, 1, 2, 3], not [0, 1, 3, 4])
    for args, dt in (((0, 5, 1.5), "int64"), ((0.5, 10, 0.7), "int32"), ((-7, 7, 0.9), "int8"),
                     ((5, 0, -1), "uint8"), ((2**62, 2**62 + 40, 3), "uint64")):  # fmt: skip
        check(ember.arange(*args, dtype=dt), np.arange(*args, dtype=dt), exact=True)
    for args, dt in (((0, 1, 0.1), "float32"), ((-3, 3, 0.3), "float32"),
                     ((0, 1000, 0.01), "float16"), ((0.1, 1, 0.3), "float64")):  # fmt: skip
        # in float32 arithmetic as NumPy (a device that fuses the multiply-add: 1 ulp)
        check(ember.arange(*args, dtype=dt), np.arange(*args, dtype=dt), rtol=2e-7)
    check(ember.arange(2, dtype=bool), np.arange(2, dtype=bool))
    check(ember.arange(1, 3, dtype=bool), np.arange(1, 3, dtype=bool))
    for args in ((3,), (0, 3), (0, 1, 0.25)):  # NumPy refuses more than two bools
        with pytest.raises(TypeError, match="at most length 2"):
            ember.arange(*args, dtype=bool)


@pytest.mark.parametrize(
    "args, kwargs",
    [((0, 1), {}), ((0, 1, 7), {}), ((-2.5, 3, 10), {"endpoint": False}), ((2, 2, 1), {}),
     ((0, 10, 0), {}), ((1, -1, 5), {"dtype": "float32"}), ((0, 100, 7), {"dtype": "int32"}),
     # into integers NumPy 2 rounds down (not toward zero); into bools it does not round
     ((-5, 5, 4), {"dtype": "int64"}), ((-1, 0, 3), {"dtype": "int32"}),
     ((-3.5, 7.25, 9), {"dtype": "int16"}), ((0, 1, 3), {"dtype": "bool"}),
     ((10, -10, 6), {"dtype": "int8"}), ((0, 255, 4), {"dtype": "uint8"})],
)  # fmt: skip
def test_linspace(backend, args, kwargs):
    check(ember.linspace(*args, **kwargs), np.linspace(*args, **kwargs), rtol=1e-12)


@pytest.mark.parametrize("shape", [(3,), (3, 5), (5, 3), (1,), (0,)])
@pytest.mark.parametrize("k", [0, 1, -2])
def test_eye(backend, shape, k):
    check(ember.eye(*shape, k=k), np.eye(*shape, k=k))
    check(ember.eye(*shape, k=k, dtype="int8"), np.eye(*shape, k=k, dtype="int8"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_asarray_round_trips_every_dtype(backend, dtype):
    host = sample(dtype, (4, 3))
    check(ember.asarray(host), host)
    check(ember.asarray(host[::-1, ::2]), host[::-1, ::2])


def test_asarray_from_python_objects(backend):
    check(ember.asarray([1, 2, 3]), np.asarray([1, 2, 3]))
    check(ember.asarray([[1.5, 2], [3, 4]]), np.asarray([[1.5, 2], [3, 4]]))
    check(ember.asarray(3), np.asarray(3))
    check(ember.asarray(2.5, dtype="float32"), np.asarray(2.5, "float32"))
    check(ember.asarray(True), np.asarray(True))
    check(ember.asarray([1, 2], dtype=ember.uint8), np.asarray([1, 2], np.uint8))


def test_asarray_of_device_arrays_dtype_and_copy(backend):
    host = sample("float32", (4, 5))
    d = ember.asarray(host)
    assert ember.asarray(d) is d
    assert ember.asarray(d, copy=False) is d
    assert ember.asarray(d, dtype="float32") is d
    c = ember.asarray(d, copy=True)
    assert c.buffer is not d.buffer
    check(c, host)
    check(ember.asarray(d, dtype="float64"), host.astype(np.float64))
    check(ember.asarray(d.T, copy=True), host.T.copy())
    with pytest.raises(ValueError, match="copy=False"):
        ember.asarray(d, dtype="int32", copy=False)
    with pytest.raises(ValueError, match="always copies"):
        ember.asarray(host, copy=False)


def test_creation_errors(backend):
    with pytest.raises(TypeError, match="does not support dtype 'complex256'"):
        ember.asarray(np.ones(3, np.clongdouble))  # (complex64/128 are supported)
    with pytest.raises(TypeError, match="does not support dtype"):
        ember.ones(3, "U4")
    with pytest.raises(ValueError, match="negative dimensions"):
        ember.zeros((2, -1))
    with pytest.raises(TypeError, match="shape must be an int or a tuple"):
        ember.ones("abc")


def test_linspace_keeps_numpy_float32_bounds_and_tril_of_vectors(backend):
    # NumPy's result_type(start, stop, float(num)): float32 bounds give float32
    for a, b in ((np.float32(0), np.float32(1)), (np.float16(0), 1), (np.complex64(0), 1j)):
        got, want = ember.linspace(a, b, 5), np.linspace(a, b, 5)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-3)
    v = np.array([1, 2, 3])  # tril/triu of a vector: each row of a square matrix (NumPy)
    np.testing.assert_array_equal(ember.tril(ember.asarray(v)).to_numpy(), np.tril(v))
    np.testing.assert_array_equal(ember.triu(ember.asarray(v), 1).to_numpy(), np.triu(v, 1))
