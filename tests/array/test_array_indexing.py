"""Basic indexing as views, assignment with broadcasting, and the scalar-indexing policy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from array_common import check, sample

import ember
from ember.array import indexing

KEYS = [
    (1,), (-1,), (slice(1, 3),), (slice(None, None, -1),), (slice(5, 0, -2),),
    (Ellipsis, 1), (None, 2), (1, None, slice(None)), (slice(None), None, -2),
    (Ellipsis,), (slice(2, 1),), (1, Ellipsis, None), (slice(-3, None), slice(None, None, 3)),
    (slice(None, None, -3), 0, slice(1, None)),
]  # fmt: skip


@pytest.mark.parametrize("key", KEYS, ids=[str(k) for k in KEYS])
def test_views_match_numpy(backend, key):
    host = sample("int16", (5, 6, 4))
    x = ember.asarray(host)
    v = x[key]
    assert isinstance(v, ember.ndarray) and v.buffer is x.buffer
    check(v, host[key])


def test_element_reads_return_0d_arrays(backend):
    host = sample("float32", (3, 4))
    x = ember.asarray(host)
    with ember.allowscalar():
        one = x[1, 2]  # the Array API: a 0-d array of x's dtype, a view
        assert isinstance(one, ember.ndarray) and one.shape == () and one.dtype is ember.float32
        assert one.buffer is x.buffer and float(one) == host[1, 2]
        assert x[-1][-1] == host[-1][-1]
        z = ember.asarray(np.array(5, np.int8))
        assert z[()].shape == () and z[()].item() == 5 and z[()].dtype is ember.int8
    assert isinstance(x[1, 2, ...], ember.ndarray)  # ... makes a 0-d view, as in NumPy
    check(x[1, 2, ...], host[1, 2, ...])


def test_setitem_broadcasts_and_casts(backend):
    host = np.zeros((4, 5), np.float32)
    x = ember.asarray(host)
    x[1] = 3
    host[1] = 3
    x[:, ::2] = ember.asarray(np.arange(4, dtype=np.int64)[:, None])
    host[:, ::2] = np.arange(4)[:, None]
    x[::-1, 4] = ember.asarray(np.array([1.5, 2.5, 3.5, 4.5]))
    host[::-1, 4] = [1.5, 2.5, 3.5, 4.5]
    x[...] = x[::-1]
    host[...] = host[::-1].copy()
    check(x, host)
    with pytest.raises(ValueError, match="could not broadcast input array from shape"):
        x[0] = ember.zeros(3)
    with pytest.raises(TypeError, match="ember.asarray"):
        x[0] = np.ones(5, np.float32)
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        ember.zeros(3, "int8")[0:1] = 300


def test_index_errors(backend):
    x = ember.zeros((3, 4))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        x[3]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]
    assert x[ember.zeros(2, "int64")].shape == (2, 4)  # advanced indexing (part 2)
    with pytest.raises(IndexError, match="integer \\(or boolean\\) type"):
        x[ember.zeros(2, "float32")]
    with pytest.raises(IndexError, match="invalid index"):
        x[1.5]


def test_scalar_indexing_warns_once_then_errors_when_disallowed(backend, monkeypatch):
    x = ember.asarray(np.arange(4.0))
    monkeypatch.setattr(indexing, "_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert x[1] == 1.0
        assert x[2] == 2.0
        x[3] = 7
    found = [w for w in caught if issubclass(w.category, ember.ScalarIndexingWarning)]
    assert len(found) == 1 and "slow path" in str(found[0].message)
    assert found[0].filename == __file__  # points at the user's line
    with ember.allowscalar(False):
        with pytest.raises(ember.ScalarIndexingError, match="allowscalar"):
            x[0]
        with pytest.raises(ember.ScalarIndexingError):
            x[0] = 1
        check(x[1:2], np.array([1.0]))  # views are not scalar indexing
        assert x.item(3) == 7.0  # explicit conversions are not scalar indexing
    with ember.config.override(allow_scalar="error"):
        with pytest.raises(ember.ScalarIndexingError):
            x[0]
        with ember.allowscalar():
            assert x[0] == 0.0
    with pytest.raises(ValueError, match="allowscalar takes"):
        with ember.allowscalar("sometimes"):
            pass
