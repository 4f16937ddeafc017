"""Array API 2024.12 rows of issue 12 (data-apis/array-api, spec/2024.12 and
src/array_api_stubs/_2024_12), each checked against the standard's text and NumPy 2:
the inspection namespace, finfo/iinfo, device= and to_device, 0-d indexing, special
values of sign/nextafter/hypot/copysign/signbit/logaddexp/maximum/minimum, clip's bound
rules, isdtype/result_type/can_cast, broadcast_arrays, moveaxis, tile, repeat, diff.
Complex rows (``__complex__``, complex kinds) wait for complex dtypes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from array_common import check

import ember

SPECIAL = np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 1e-310, 3.0], np.float64)


def test_namespace_info(backend):
    info = ember.__array_namespace_info__()
    caps = info.capabilities()
    assert set(caps) == {"boolean indexing", "data-dependent shapes", "max dimensions"}
    assert caps["max dimensions"] is None
    assert info.default_device() == backend.device
    assert backend.device in info.devices()
    d = info.default_dtypes()
    assert set(d) == {"real floating", "complex floating", "integral", "indexing"}
    assert d["integral"] is ember.int64 and d["indexing"] is ember.int64
    assert list(info.dtypes(kind="bool")) == ["bool"]
    assert set(info.dtypes(kind="integral")) == {f"{p}int{b}" for p in ("", "u")
                                                 for b in (8, 16, 32, 64)}  # fmt: skip
    assert set(info.dtypes(kind=("bool", "real floating"))) >= {"bool", "float32"}
    assert info.dtypes(device=backend.device)["int32"] is ember.int32
    assert ember.__array_api_version__ == "2024.12"
    x = ember.zeros(2)
    assert x.__array_namespace__(api_version="2024.12") is ember


def test_finfo_iinfo_return_python_numbers_and_ember_dtypes(backend):
    for dt in ("float16", "float32", "float64"):
        f = ember.finfo(dt)
        ref = np.finfo(dt)
        assert type(f.eps) is float and f.eps == float(ref.eps) and f.bits == ref.bits
        assert f.max == float(ref.max) and f.min == float(ref.min)
        assert f.smallest_normal == float(ref.smallest_normal) and f.dtype is ember.dtype(dt)
    x = ember.zeros(3, ember.float32)
    assert ember.finfo(x).dtype is ember.float32  # an array works too
    i = ember.iinfo(ember.zeros(2, ember.uint16))
    assert (i.bits, i.min, i.max, i.dtype) == (16, 0, 65535, ember.uint16)
    assert type(ember.iinfo(ember.int64).max) is int
    with pytest.raises(ValueError, match="not a floating-point"):
        ember.finfo(ember.int32)


def test_device_keyword_and_to_device(backend):
    dev = backend.device
    for make in (lambda: ember.empty(3, device=dev), lambda: ember.zeros((2, 2), device=dev),
                 lambda: ember.ones(2, device=dev), lambda: ember.full(2, 7, device=dev),
                 lambda: ember.arange(4, device=dev), lambda: ember.linspace(0, 1, 3, device=dev),
                 lambda: ember.eye(2, device=dev), lambda: ember.asarray([1, 2], device=dev),
                 lambda: ember.zeros_like(ember.zeros(2), device=dev)):  # fmt: skip
        assert make().device == dev
    x = ember.arange(5)
    assert x.to_device(dev) is x and x.to_device(backend.name) is x
    y = ember.astype(x, ember.float32, device=dev)
    check(y, np.arange(5, dtype=np.float32))
    with pytest.raises(ValueError, match="unknown device"):
        ember.zeros(2, device="tpu")
    with pytest.raises(ValueError, match="has no device 99"):
        ember.zeros(2, device=f"{backend.name}:99")


def test_integer_indexing_gives_0d_arrays(backend):
    x = ember.asarray(np.arange(12, dtype=np.int16).reshape(3, 4))
    with ember.allowscalar():
        v = x[2, 1]
        assert isinstance(v, ember.ndarray) and v.shape == () and v.dtype is ember.int16
        assert int(v) == 9 and v.item() == 9
        assert isinstance(x[1][2], ember.ndarray) and int(x[1][2]) == 6


def test_sign_of_zero_is_zero(backend):
    x = ember.asarray(SPECIAL)
    got = ember.sign(x).to_numpy()
    np.testing.assert_array_equal(got, np.sign(SPECIAL))
    assert not np.signbit(got[1])  # sign(-0.0) is +0 (NumPy 2)


def test_special_values_of_binary_math(backend):
    a = np.repeat(SPECIAL, SPECIAL.size)
    b = np.tile(SPECIAL, SPECIAL.size)
    da, db = ember.asarray(a), ember.asarray(b)
    for name in ("hypot", "copysign", "logaddexp", "maximum", "minimum", "nextafter"):
        got = getattr(ember, name)(da, db).to_numpy()
        with np.errstate(all="ignore"):
            ref = getattr(np, name)(a, b)
        if name in ("hypot", "logaddexp"):  # finite results: the math library's rounding
            special = ~np.isfinite(ref) | (ref == 0)  # (CUDA's hypot is within 2 ulp)
            np.testing.assert_array_equal(got[special], ref[special], err_msg=name)
            np.testing.assert_allclose(got, ref, rtol=4e-16, atol=0, err_msg=name)
        else:
            np.testing.assert_array_equal(got, ref, err_msg=name)
        if name in ("copysign", "maximum", "minimum", "nextafter"):  # the sign of zero too
            np.testing.assert_array_equal(np.signbit(got), np.signbit(ref), err_msg=name)
    np.testing.assert_array_equal(ember.signbit(da).to_numpy(), np.signbit(a))


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_nextafter_narrow_floats(backend, dtype):
    a = np.array([1, 0, -0.0, 65504, 3, -1e-7, np.inf], dtype)
    b = np.array([2, -1, 1, np.inf, 3, 0, 0], dtype)
    with np.errstate(all="ignore"):
        check(ember.nextafter(ember.asarray(a), ember.asarray(b)), np.nextafter(a, b), exact=True)
    check(ember.nextafter(ember.asarray(a), 5.0), np.nextafter(a, np.array(5.0, dtype)),
          exact=True)  # fmt: skip


def test_clip_bounds(backend):
    u = np.array([0, 1, 200, 255], np.uint8)
    check(ember.clip(ember.asarray(u), -1, 300), np.clip(u, -1, 300))  # clamped bounds
    check(ember.clip(ember.asarray(u), 2, 100), np.clip(u, 2, 100))
    f = np.array([1.0, np.nan, -3.0, 7.0])
    df = ember.asarray(f)
    check(ember.clip(df, -2.0, 2.0), np.clip(f, -2.0, 2.0))
    check(ember.clip(df, min=0.0), np.clip(f, 0.0, None))
    check(ember.clip(df, max=0.0), np.clip(f, None, 0.0))
    check(ember.clip(df), f)  # both None: a copy
    check(ember.clip(df, np.nan, 1.0), np.clip(f, np.nan, 1.0))  # a NaN bound gives NaN
    lo = np.array([0.0, 0.0, -1.0, 8.0])
    check(ember.clip(df, ember.asarray(lo), 5.0), np.clip(f, lo, 5.0))  # min > max: max
    # array bounds of the same kind: the result keeps x's dtype (the Array API; NumPy would
    # promote to int16 / float64)
    i8 = np.array([-100, 0, 100, 5], np.int8)
    b16 = np.array([-300, 1, 50, 300], np.int16)
    check(ember.clip(ember.asarray(i8), ember.asarray(b16), 120),
          np.clip(i8, np.clip(b16, -128, 127).astype(np.int8), 120))  # fmt: skip
    f32 = f.astype(np.float32)
    got = ember.clip(ember.asarray(f32), ember.asarray(lo), 5.0)
    check(got, np.clip(f32, lo.astype(np.float32), np.float32(5.0)))


def test_dtype_functions():
    assert ember.isdtype(ember.int8, "signed integer")
    assert ember.isdtype(ember.uint8, ("bool", "integral"))
    assert not ember.isdtype(ember.float32, "complex floating")
    assert ember.isdtype(ember.float32, ("complex floating", ember.float32))
    assert ember.isdtype(ember.float16, "real floating")  # Ember's extension of the kind
    with pytest.raises(ValueError, match="unknown dtype kind"):
        ember.isdtype(ember.int8, "integer")
    assert ember.result_type(ember.int8, 1) is ember.int8
    assert ember.result_type(ember.float32, 1.0, ember.int8) is ember.float32
    assert ember.result_type(ember.int8, ember.uint8, ember.float16) is ember.float16
    with pytest.raises(ValueError, match="array or a dtype"):
        ember.result_type(1, 2.0)
    assert ember.can_cast(ember.int8, ember.int16) and not ember.can_cast(ember.int16, ember.int8)
    assert ember.can_cast(ember.zeros(2, ember.uint8), ember.int16)


def test_manipulation_rows(backend):
    a = np.arange(6.0).reshape(2, 3)
    x = ember.asarray(a)
    out = ember.broadcast_arrays(x, ember.asarray(np.arange(3.0)))
    assert [o.shape for o in out] == [(2, 3), (2, 3)]
    b = np.arange(24).reshape(2, 3, 4)
    y = ember.asarray(b)
    check(ember.moveaxis(y, 0, -1), np.moveaxis(b, 0, -1))
    check(ember.moveaxis(y, (0, 1), (2, 0)), np.moveaxis(b, (0, 1), (2, 0)))
    check(ember.tile(x, (2, 1, 2)), np.tile(a, (2, 1, 2)))
    check(ember.repeat(x, 2, axis=1), np.repeat(a, 2, axis=1))
    check(ember.repeat(x, ember.asarray(np.array([2, 0, 1])), axis=1),
          np.repeat(a, [2, 0, 1], axis=1))  # fmt: skip
    check(ember.repeat(x, ember.asarray(np.array([3]))), np.repeat(a, 3))
    check(ember.concat([x, x], axis=1), np.concatenate([a, a], axis=1))
    with pytest.raises(ValueError, match="one count per element"):
        ember.repeat(x, ember.asarray(np.array([1, 2])), axis=1)


@pytest.mark.parametrize("n, axis", [(1, -1), (2, 0), (0, 1)])
def test_diff(backend, n, axis):
    a = np.arange(20.0).reshape(4, 5) ** 2
    check(ember.diff(ember.asarray(a), n=n, axis=axis), np.diff(a, n=n, axis=axis))
    i = np.arange(10, dtype=np.uint8)[::-1].reshape(2, 5)
    check(ember.diff(ember.asarray(i), axis=-1), np.diff(i, axis=-1))  # wraps, as NumPy
    check(ember.diff(ember.asarray(a), prepend=ember.asarray(a[:, :2]), append=math.pi),
          np.diff(a, prepend=a[:, :2], append=math.pi))  # fmt: skip
    bools = np.array([True, True, False, True])
    check(ember.diff(ember.asarray(bools)), np.diff(bools))
    # n = 0: the input as it is, prepend and append ignored (a probe found them joined)
    check(ember.diff(ember.asarray(a), n=0, prepend=1.0, append=ember.asarray(a[:, :1])),
          np.diff(a, n=0, prepend=1.0, append=a[:, :1]))  # fmt: skip
