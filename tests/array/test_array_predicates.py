"""Type predicates, dtype helpers and array information (ember.array.predicates) against
NumPy: values, Ember dtypes for NumPy's dtypes, memory overlap, requirements, errors."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import check

import ember


def test_complex_predicates(backend):
    c = np.array([1 + 0j, 2 + 1e-18j, 3 + 1j, -2j])
    dc = ember.asarray(c)
    check(ember.iscomplex(dc), np.iscomplex(c))
    check(ember.isreal(dc), np.isreal(c))
    r = np.arange(6.0).reshape(2, 3)
    check(ember.iscomplex(ember.asarray(r)), np.iscomplex(r))
    check(ember.isreal(ember.asarray(r)), np.isreal(r))
    assert ember.iscomplexobj(dc) and not ember.isrealobj(dc)
    assert ember.isrealobj(ember.asarray(r)) and not ember.iscomplexobj(ember.asarray(r))
    assert ember.iscomplexobj(1j) and ember.iscomplexobj([1, 2j]) and ember.isrealobj(1.5)
    assert ember.iscomplexobj(ember.complex64) and not ember.iscomplexobj("float32")
    check(ember.real_if_close(dc[:2]), np.real_if_close(c[:2]))
    check(ember.real_if_close(dc), np.real_if_close(c))
    assert ember.real_if_close(ember.asarray(r)).dtype is ember.float64


def test_dtype_helpers():
    for t1, t2 in (("int8", "uint8"), ("int64", "uint64"), ("float16", "int16"),
                   ("float32", "complex64"), ("bool", "int8"), (int, float)):  # fmt: skip
        assert ember.promote_types(t1, t2) is ember.dtype(np.promote_types(t1, t2))
    assert ember.promote_types(ember.int32, ember.float32) is ember.float64
    cases = [("int8",), ("float16",), ("float16", "float32"), ("float32", "complex64"),
             ("int32", "complex64"), ("float16", "int8")]  # fmt: skip
    for names in cases:
        want = np.common_type(*(np.ones(2, n) for n in names))
        got = ember.common_type(*(np.ones(2, n) for n in names))  # (only dtypes are read)
        assert got is ember.dtype(want), (names, got, want)
    for v in (0, 255, 256, -1, -129, 2**63, 3.1, 1e10, 1e300, True, 1 + 1j, np.float32(2)):
        assert ember.min_scalar_type(v) is ember.dtype(np.min_scalar_type(v)), v
    with pytest.raises(TypeError, match="ember.common_type: can't get common type"):
        ember.common_type(ember.bool_)
    with pytest.raises(TypeError, match="ember.min_scalar_type: no Ember dtype holds"):
        ember.min_scalar_type(2**64)
    with pytest.raises(TypeError, match="ember.promote_types"):
        ember.promote_types("U5", "int8")


def test_info_and_memory(backend):
    x = ember.zeros((4, 6))
    assert ember.min_scalar_type(ember.asarray(300)) is ember.uint16
    assert ember.min_scalar_type(x) is ember.float64
    assert (ember.ndim(x), ember.shape(x), ember.size(x), ember.size(x, 1)) == (2, (4, 6), 24, 6)
    assert ember.size(x, (0, -1)) == 24 and ember.ndim(3) == 0 and ember.shape([[1, 2]]) == (1, 2)
    h = np.zeros((4, 6))
    pairs = [(x[:, ::2], x[:, 1::2], h[:, ::2], h[:, 1::2]), (x[1], x[:, 2], h[1], h[:, 2]),
             (x[:2], x[2:], h[:2], h[2:]), (x.T, x[3, 5:], h.T, h[3, 5:]),
             (x[:, :3], x[1:, 2:], h[:, :3], h[1:, 2:]),
             (x[0], x[0, ::-1], h[0], h[0, ::-1])]  # fmt: skip
    for a, b, ha, hb in pairs:
        assert ember.shares_memory(a, b) == np.shares_memory(ha, hb)
        assert ember.may_share_memory(a, b) == np.may_share_memory(ha, hb)
        assert ember.may_share_memory(a, b, max_work=-1) == np.shares_memory(ha, hb)
    assert not ember.shares_memory(x, ember.zeros((4, 6)))
    assert not ember.shares_memory(x[:0], x)
    assert ember.shares_memory(x[:, ::2], x[:, 1::2], max_work=0)  # the bounds check
    with pytest.raises(np.exceptions.TooHardError, match="ember.shares_memory: exceeded"):
        ember.shares_memory(x[:, ::2], x[:, 1::2], max_work=5)
    with pytest.raises(TypeError, match="ember.shares_memory compares the memory"):
        ember.shares_memory(x, h)


def test_conversions(backend):
    r = np.arange(6.0).reshape(2, 3)
    d = ember.asarray(r)
    assert ember.asanyarray(d) is d
    check(ember.asanyarray([1, 2], dtype="float64"), np.asanyarray([1, 2], dtype="float64"))
    f = ember.asanyarray(d, order="F")
    assert f.strides == (8, 16)
    check(f, r)
    check(ember.asarray_chkfinite([1.0, 2.0]), np.asarray_chkfinite([1.0, 2.0]))
    check(ember.asarray_chkfinite(ember.arange(3)), np.arange(3))
    with pytest.raises(ValueError, match="ember.asarray_chkfinite: array must not contain"):
        ember.asarray_chkfinite(ember.asarray([1.0, np.nan]))
    with pytest.raises(ValueError, match="must not contain infs"):
        ember.asarray_chkfinite([np.inf])
    assert ember.require(d) is d
    c = ember.require(d.T, requirements="C")
    assert c.is_c_contiguous and c.strides == (16, 8)
    check(c, r.T)
    assert ember.require(d, requirements=["C", "A", "W", "E"]) is d
    o = ember.require(d[1:], requirements="O")
    assert o.offset == 0 and o.nbytes == o.buffer.nbytes
    check(o, r[1:])
    fo = ember.require(d, "float64", requirements=["F_CONTIGUOUS", "OWNDATA"])
    assert fo.dtype is ember.float64 and fo.strides == (8, 16)
    with pytest.raises(ValueError, match='cannot specify both "C" and "F"'):
        ember.require(d, requirements="CF")
    with pytest.raises(KeyError, match="ember.require: unknown requirement"):
        ember.require(d, requirements="Z")
    with pytest.raises(TypeError, match=r"ember.iscomplex.*ember.asarray"):
        ember.iscomplex(r)
