"""Stacking, splitting and comparison helpers (ember.array.joining) against NumPy: values,
dtypes, shapes, views where NumPy makes views, and errors.

Kept small for CI (each distinct kernel compiles C code once on the CPU backend): float64
carries most cases, and each layout path is taken once; the file runs in about 7 s there."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from array_common import check, sample

import ember


def _same_list(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        check(g, w)


def _views(x, host):
    """``x``/``host`` plain, transposed, with negative strides and strided (3-d)."""
    return [
        (x, host),
        (x.transpose(2, 0, 1), host.transpose(2, 0, 1)),
        (x[::-1, :, ::-2], host[::-1, :, ::-2]),
        (x.T[:, ::-1], host.T[:, ::-1]),
    ]


# --------------------------------------------------------------------- stacking
def test_stacks(backend):
    a, b = sample("float64", (2, 3), 1), sample("float64", (4, 3), 2)
    da, db = ember.asarray(a), ember.asarray(b)
    v, dv = a[0], da[0]
    check(ember.vstack([da, db, dv]), np.vstack([a, b, v]))
    check(ember.vstack(da), np.vstack(a))  # an array is its rows, as NumPy iterates it
    check(ember.hstack([da, da[:, ::-1]]), np.hstack([a, a[:, ::-1]]))
    check(ember.hstack([dv, da[1], 5.0]), np.hstack([v, a[1], 5.0]))
    check(ember.dstack([da, da]), np.dstack([a, a]))
    check(ember.dstack([dv, dv]), np.dstack([v, v]))
    check(ember.column_stack([dv, da[1], da.T]), np.column_stack([v, a[1], a.T]))
    e = np.zeros((0, 3))
    check(ember.vstack([ember.asarray(e), da]), np.vstack([e, a]))
    # dtypes: promotion, dtype= and casting=
    i = sample("int64", (2, 3), 3)  # float64 and int64: float64
    check(ember.vstack([da, ember.asarray(i)]), np.vstack([a, i]))
    with pytest.raises(TypeError, match="ember.vstack: cannot cast float64 to int32"):
        ember.vstack([da, da], dtype="int32")
    de = ember.asarray(e)  # empty: no copy to compile
    check(ember.vstack([de, de], dtype="int32", casting="unsafe"), np.zeros((0, 3), np.int32))
    with pytest.raises(ValueError, match="need at least one array"):
        ember.hstack([])
    with pytest.raises(TypeError, match="sequence"):
        ember.vstack(x for x in (da, db))
    with pytest.raises(TypeError, match=r"ember.hstack .*ember.asarray"):
        ember.hstack([da, a])
    with pytest.raises(ValueError, match="dimensions except for the concatenation axis"):
        ember.vstack([da, ember.zeros((2, 4))])


def test_append(backend):
    a = sample("float64", (2, 3), 4)
    x = ember.asarray(a)
    check(ember.append(x, x), np.append(a, a))
    check(ember.append(x, x[:1], axis=0), np.append(a, a[:1], axis=0))
    check(ember.append(x, x.T[:2].T, axis=1), np.append(a, a.T[:2].T, axis=1))
    check(ember.append(x[0], 7), np.append(a[0], 7))
    i = np.array([], np.int32)
    check(ember.append(ember.asarray(i), 7), np.append(i, 7))  # 7 is int64, as NumPy's
    with pytest.raises(ValueError):
        ember.append(x, x[0], axis=0)
    with pytest.raises(TypeError, match="ember.append .*ember.asarray"):
        ember.append(x, [1, 2])


def test_atleast(backend):
    host = sample("float64", (2, 3, 4))
    x = ember.asarray(host)
    for fn in ("atleast_1d", "atleast_2d", "atleast_3d"):
        for d, h in (
            (x[0, 0, 0, ...], host[0, 0, 0, ...]),
            (x[0, 0], host[0, 0]),
            (x[0], host[0]),
            (x, host),
        ):
            got, want = getattr(ember, fn)(d), getattr(np, fn)(h)
            check(got, want)
            assert got.buffer is x.buffer  # a view
        pair = getattr(ember, fn)(x[0, 0], x)
        assert isinstance(pair, tuple) and len(pair) == 2
        _same_list(pair, getattr(np, fn)(host[0, 0], host))
    check(ember.atleast_2d(3.5), np.atleast_2d(3.5))
    assert ember.atleast_1d() == ()


# --------------------------------------------------------------------- splitting
def test_splits(backend):
    host = sample("float64", (6, 4, 3))
    x = ember.asarray(host)
    for spec in (3, [1, 4], [-2, 10], [4, 2], []):
        _same_list(ember.split(x, spec), np.split(host, spec))
        _same_list(ember.array_split(x, spec, axis=1), np.array_split(host, spec, axis=1))
    _same_list(ember.array_split(x, 4), np.array_split(host, 4))
    _same_list(
        ember.array_split(x[::-1, :, ::2], 5, axis=-1),
        np.array_split(host[::-1, :, ::2], 5, axis=-1),
    )
    _same_list(ember.hsplit(x, 2), np.hsplit(host, 2))
    _same_list(ember.hsplit(x[0, 0], [1]), np.hsplit(host[0, 0], [1]))
    _same_list(ember.vsplit(x, [2]), np.vsplit(host, [2]))
    _same_list(ember.dsplit(x, 3), np.dsplit(host, 3))
    _same_list(ember.split(x, ember.asarray(np.array([2, 3])), axis=0), np.split(host, [2, 3]))
    assert all(p.buffer is x.buffer for p in ember.split(x, 3))  # views, as NumPy's
    empty = ember.zeros((0, 2))
    _same_list(ember.array_split(empty, 3), np.array_split(np.zeros((0, 2)), 3))
    with pytest.raises(ValueError, match="does not result in an equal division"):
        ember.split(x, 4)
    with pytest.raises(ValueError, match="larger than 0"):
        ember.array_split(x, 0)
    with pytest.raises(ValueError, match="ember.vsplit only works on arrays of 2 or more"):
        ember.vsplit(x[0, 0], 2)
    with pytest.raises(ValueError, match="ember.dsplit only works on arrays of 3 or more"):
        ember.dsplit(x[0], 2)
    with pytest.raises(ValueError, match="ember.hsplit only works on arrays of 1 or more"):
        ember.hsplit(x[0, 0, 0, ...], 2)
    with pytest.raises(ValueError, match="out of bounds"):
        ember.split(x, 2, axis=3)
    with pytest.raises(TypeError, match="ember.split .*ember.asarray"):
        ember.split(host, 2)


# --------------------------------------------------------------------- layouts
def test_ravel_and_copy_orders(backend):
    host = sample("float64", (2, 3, 4), 7)
    x = ember.asarray(host)
    views = _views(x, host) + [
        (ember.broadcast_to(x[0, :1], (2, 3, 4)), np.broadcast_to(host[0, :1], (2, 3, 4)))
    ]
    for d, h in views:
        for order in "CFAK":
            got, want = ember.ravel(d, order), np.ravel(h, order)
            check(got, want)
            assert (got.buffer is x.buffer) == np.shares_memory(want, host), (order, h.strides)
            c, n = ember.copy(d, order=order), np.copy(h, order=order)
            check(c, n)
            assert c.strides == n.strides and c.buffer is not x.buffer, (order, h.strides)
    check(ember.ravel(x[0, 0, 0, ...]), np.ravel(host[0, 0, 0]))
    check(ember.copy(x[:0]), np.copy(host[:0]))
    with pytest.raises(ValueError, match="ember.ravel: order must be"):
        ember.ravel(x, "X")


def test_flips_rot90_identity(backend):
    host = sample("float64", (3, 4, 2))
    x = ember.asarray(host)
    check(ember.fliplr(x), np.fliplr(host))
    check(ember.flipud(x[:, 0]), np.flipud(host[:, 0]))
    assert ember.fliplr(x).buffer is x.buffer and ember.flipud(x).buffer is x.buffer
    for k in (-1, 0, 1, 2, 3, 6):
        check(ember.rot90(x, k), np.rot90(host, k))
        check(ember.rot90(x, k, axes=(2, 0)), np.rot90(host, k, axes=(2, 0)))
    check(ember.rot90(x[::-1], 1, (-1, -2)), np.rot90(host[::-1], 1, (-1, -2)))
    assert ember.rot90(x).buffer is x.buffer
    with pytest.raises(ValueError, match="ember.fliplr: input must be >= 2-d"):
        ember.fliplr(x[0, 0])
    with pytest.raises(ValueError, match="ember.flipud: input must be >= 1-d"):
        ember.flipud(x[0, 0, 0, ...])
    with pytest.raises(ValueError, match="axes must be different"):
        ember.rot90(x, 1, (1, -2))
    with pytest.raises(ValueError, match="out of range"):
        ember.rot90(x, 1, (0, 3))
    with pytest.raises(ValueError, match="two axes"):
        ember.rot90(x, 1, (0,))
    check(ember.identity(3), np.identity(3))
    assert ember.identity(0, "int8", like=x).dtype is ember.int8
    check(ember.identity(0), np.identity(0))


# --------------------------------------------------------------------- comparisons
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, 1.0 + 1e-6, 1.0 + 1e-4, 1e-9, -1e-9, 3e38]


def test_isclose(backend):
    v = np.array(SPECIAL)
    a, b = np.repeat(v, v.size).reshape(v.size, -1), np.tile(v, v.size).reshape(v.size, -1)
    da, db = ember.asarray(a), ember.asarray(b)
    for kw in ({}, {"equal_nan": True}):  # every pair of values
        check(ember.isclose(da, db, **kw), np.isclose(a, b, **kw))
    kw = {"rtol": 0, "atol": 1e-3}  # rtol 0: a scalar tolerance; views, broadcasting
    check(ember.isclose(da.T[::-1], db, **kw), np.isclose(a.T[::-1], b, **kw))
    check(ember.isclose(da.T[::-1], db[0], **kw), np.isclose(a.T[::-1], b[0], **kw))
    check(ember.isclose(da, 1.0), np.isclose(a, 1.0))  # a scalar b
    check(ember.isclose(da, np.float32(np.inf)), np.isclose(a, np.float32(np.inf)))
    assert ember.allclose(db[0, 5:8], 1.0, atol=2e-4) and not ember.allclose(db[0, 5:8], 1.0)
    assert ember.allclose(da[:0], db[:0]) and not ember.allclose(da, da)  # NaN
    # an int b is made float (no abs(INT_MIN) overflow); an array rtol
    i = np.array([0, 1, -(2**63), 7, 100, 2**62])
    f = np.array([0.5, 1.0, -(2.0**63), 6.0, 101.0, 2.0**62 * (1 + 1e-5)])
    rtol = np.array([1e-5, 0.5, 0.5, 0.01, 0.0, 1e-5])
    check(
        ember.isclose(ember.asarray(f), ember.asarray(i), rtol=ember.asarray(rtol)),
        np.isclose(f, i, rtol=rtol),
    )
    check(ember.isclose(da[0, 5, ...], db[0, 5, ...]), np.isclose(a[0, 5], b[0, 5]))  # 0-d
    z = np.array([1 + 1j, np.nan + 0j, np.inf + 1j, 1 + 1e-7j, np.inf + 0j], np.complex128)
    w = np.array([1 + 1.000001j, complex(0, np.nan), np.inf + 1j, 1 + 0j, complex(np.inf, -np.inf)])
    check(  # complex: by abs, NaN in either part
        ember.isclose(ember.asarray(z), ember.asarray(w), equal_nan=True),
        np.isclose(z, w, equal_nan=True),
    )
    assert ember.isclose(1.0, 1.0 + 1e-9) == np.isclose(1.0, 1.0 + 1e-9)  # host, as NumPy
    with pytest.warns(RuntimeWarning, match="rtol or atol is not valid"):
        ember.isclose(da, db, atol=np.nan)
    with pytest.raises(TypeError, match="ember.isclose .*ember.asarray"):
        ember.isclose(da, b)
    with pytest.raises(ValueError, match="broadcast"):
        ember.isclose(da, db[:2, :2])


def test_array_equal_equiv(backend):
    a = sample("float64", (3, 4), 2)
    a[1, 2] = np.nan
    d, e = ember.asarray(a), ember.asarray(a.copy())
    assert ember.array_equal(d.T[::-1], e.T[::-1]) is False  # NaN != NaN
    assert ember.array_equal(d, e, equal_nan=True) is True
    assert ember.array_equal(d, d.T) is False  # shapes differ: no device work
    for k, value in (((0, 0), 1.0), ((1, 2), 0.0)):
        b = a.copy()
        b[k] = value
        assert ember.array_equal(d, ember.asarray(b), equal_nan=True) is False
    big = np.array([2**60, 3])  # int64: compared exactly, not as float64
    assert (
        ember.array_equal(ember.asarray(big), ember.asarray(big + [1, 0]), equal_nan=True) is False
    )
    assert ember.array_equal(ember.asarray(big[:0]), ember.asarray(big[:0])) is True
    assert ember.array_equal(3.0, 3.0) is True
    assert ember.array_equiv(d[:1], ember.asarray(np.tile(a[:1], (3, 1))))
    assert not ember.array_equiv(d, ember.asarray(np.tile(a[:1], (3, 1))))
    assert ember.array_equiv(d, d[:, :2]) is False
    with pytest.raises(TypeError, match="ember.array_equal .*ember.asarray"):
        ember.array_equal(d, a)


# --------------------------------------------------------------------- nan_to_num, rounding
@pytest.mark.parametrize("dtype", ["float16", "complex128"])
def test_nan_to_num(backend, dtype):
    host = sample(dtype, (3, 4, 5), 3)
    host.flat[::7] = np.nan
    host.flat[1::7] = np.inf
    host.flat[2::7] = -np.inf
    if np.dtype(dtype).kind == "c":
        host.imag.flat[3::7] = np.nan
        host.imag.flat[4::7] = -np.inf
    x = ember.asarray(host)
    if dtype == "float16":  # a view that flattens only by copying (and copying back)
        views = ((x, host), (x[::-1, :, ::-2], host[::-1, :, ::-2]))
    else:  # a 1-d view with a negative stride, whose parts are views too
        views = ((x, host), (x.reshape(-1)[::-3], host.reshape(-1)[::-3]))
    for d, h in views:
        check(ember.nan_to_num(d), np.nan_to_num(h))
        kw = {"nan": 1.5, "posinf": 1e30, "neginf": -7}  # 1e30 is inf in float16, as NumPy
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = np.nan_to_num(h, **kw)
        check(ember.nan_to_num(d, **kw), want)
        assert ember.nan_to_num(d, copy=False) is d  # in place, views included
        np.nan_to_num(h, copy=False)
        check(x, host)


def test_nan_to_num_integers_and_errors(backend):
    i = sample("int8", (4,))
    x = ember.asarray(i)
    y = ember.nan_to_num(x)
    check(y, np.nan_to_num(i))
    assert y.buffer is not x.buffer and ember.nan_to_num(x, copy=False) is x
    assert ember.nan_to_num(float("nan")) == 0.0
    check(ember.nan_to_num(ember.zeros((0, 2))), np.zeros((0, 2)))
    with pytest.raises(TypeError, match="real numbers"):
        ember.nan_to_num(ember.zeros(3), nan=1j)
    with pytest.raises(TypeError, match="ember.nan_to_num .*ember.asarray"):
        ember.nan_to_num(np.zeros(3))


def test_around_fix(backend):
    f = np.array([-2.5, -1.5, -0.5, 0.5, 1.25, 2.675, np.nan, -np.inf], np.float64)
    x = ember.asarray(f)
    check(ember.around(x), np.around(f))
    out = ember.empty(8)
    assert ember.fix(x[::-1], out=out) is out
    check(out, np.fix(f[::-1]))
    assert np.signbit(out.to_numpy()[5])  # -0.5 -> -0.0
    i = np.array([15, 25, -25, 127, -128], np.int8)
    xi = ember.asarray(i)
    check(ember.around(xi, -1), np.around(i, -1))  # integers stay integers
    check(ember.around(xi, 2), np.around(i, 2))


def test_concatenate_and_stack_take_numpys_casting(backend):
    f, i = np.array([1.5, 2.5]), np.array([3, 4])
    ef, ei = ember.asarray(f), ember.asarray(i)
    for join in (np.concatenate, np.stack):
        with pytest.raises(TypeError, match="same_kind"):
            join([ef, ei], dtype=np.int8)  # NumPy refuses too: floats are not truncated
        with pytest.raises(TypeError, match="casting='no'"):
            join([ef, ei], casting="no")
        for kw in ({"dtype": np.int8, "casting": "unsafe"}, {"dtype": np.float32}, {}):
            got = join([ef, ei], **kw)
            assert got.dtype == join([f, i], **kw).dtype
            np.testing.assert_array_equal(got.to_numpy(), join([f, i], **kw))


def test_roll_broadcasts_shift_and_axis(backend):
    a = np.arange(6).reshape(2, 3)
    x = ember.asarray(a)
    for shift, axis in ((1, (0, 1)), ((1, 1), (1,)), ((1, 2), None), ((1, 2), (1, 1))):
        np.testing.assert_array_equal(
            ember.roll(x, shift, axis=axis).to_numpy(), np.roll(a, shift, axis=axis)
        )
    with pytest.raises(ValueError, match="do not broadcast"):
        ember.roll(x, (1, 2, 3), axis=(0, 1))
