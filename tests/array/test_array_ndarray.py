"""The ndarray object: attributes, display, Python protocols, conversions."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import check, sample

import ember
from ember.array import core
from ember.array.core import FIELDS


def test_attributes(backend):
    host = sample("float32", (3, 4))
    x = ember.asarray(host)
    assert x.shape == (3, 4) and x.ndim == 2 and x.size == 12
    assert x.dtype is ember.float32 and x.itemsize == 4 and x.nbytes == 48
    assert x.strides == (16, 4) and x.is_c_contiguous
    assert x.device == backend.device
    t = x.T
    assert t.shape == (4, 3) and t.strides == (4, 16) and not t.is_c_contiguous
    assert t.buffer is x.buffer  # a view
    check(x.mT, host.T)


@pytest.mark.parametrize(
    "host",
    [np.arange(6, dtype=np.float32), np.arange(12).reshape(3, 4), np.array(2.5),
     np.zeros((0, 3)), np.array([True, False]), np.arange(3000, dtype=np.int16),
     np.arange(2000.0).reshape(40, 50), np.linspace(0, 1, 7, dtype=np.float16)],
    ids=["f32", "2d", "0d", "empty", "bool", "long", "long2d", "f16"],
)  # fmt: skip
def test_repr_and_str_match_numpy(backend, host):
    x = ember.asarray(host)
    assert str(x) == str(host)
    assert repr(x) == "ember.as" + repr(host).replace("\n", "\n" + " " * 8)


def test_repr_of_a_view(backend):
    host = np.arange(2000.0).reshape(40, 50)
    x = ember.asarray(host)
    assert str(x[::-3, 1::2]) == str(host[::-3, 1::2])
    assert repr(x.T) == "ember.as" + repr(host.T).replace("\n", "\n" + " " * 8)


def test_len_iter_bool_float_int_index(backend):
    x = ember.asarray(np.arange(6, dtype=np.float64).reshape(2, 3))
    assert len(x) == 2
    rows = list(x)
    assert len(rows) == 2 and isinstance(rows[0], ember.ndarray)
    check(rows[1], np.arange(3.0, 6.0))
    one_d = list(ember.asarray(np.array([1, 2, 3], np.int8)))
    assert one_d == [1, 2, 3] and type(one_d[0]) is np.int8
    z = ember.asarray(np.array(3.5))
    assert float(z) == 3.5 and int(z) == 3 and bool(z)
    assert bool(ember.asarray(np.array([0.0]))) is False
    assert [10, 20, 30][ember.asarray(np.array(1))] == 20
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d"):
        len(z)
    with pytest.raises(TypeError, match="iteration over a 0-d"):
        iter(z)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x)
    with pytest.raises(TypeError, match="only 0-d arrays can be converted"):
        float(x[0])
    with pytest.raises(TypeError, match="index"):
        [1, 2][ember.asarray(np.array(1.0))]


def test_format(backend):
    assert f"{ember.asarray(np.array(2.5)):.3f}" == "2.500"
    assert f"{ember.asarray(np.arange(3))}" == "[0 1 2]"
    with pytest.raises(TypeError, match="format string"):
        f"{ember.asarray(np.arange(3)):.2f}"


def test_item_tolist_to_numpy_array(backend):
    host = np.arange(6, dtype=np.int32).reshape(2, 3)
    x = ember.asarray(host)
    assert x.item(4) == 4 and type(x.item(4)) is int
    assert x.item(1, 2) == 5
    assert ember.asarray(np.array([7.5])).item() == 7.5
    with pytest.raises(ValueError, match="size 1"):
        x.item()
    assert x.tolist() == host.tolist()
    check(ember.asnumpy(x), host)
    with pytest.raises(TypeError, match="to_numpy"):  # no implicit copies by default
        np.asarray(x)
    with ember.config.override(implicit_host_copy="allow"):
        np.testing.assert_array_equal(np.asarray(x), host)
        np.testing.assert_array_equal(np.asarray(x, dtype=np.float32), host.astype(np.float32))
        with pytest.raises(ValueError, match="always copies"):
            np.asarray(x, copy=False)


def test_astype_copy_fill(backend):
    host = sample("float32", (3, 4), low=-100, high=100)
    x = ember.asarray(host)
    for dt in ("int8", "uint16", "int64", "float16", "float64", "bool"):
        check(x.astype(dt), host.astype(dt))
    assert x.astype("float32", copy=False) is x
    c = x.copy()
    assert c.buffer is not x.buffer
    check(c, host)
    c.fill(2)
    check(c, np.full((3, 4), 2, np.float32))


def test_numpy_ufuncs_run_on_the_device(backend):
    x = ember.ones(3)
    check(np.sin(x), np.sin(np.ones(3)))  # NEP 13: ember.sin (tests/array/test_array_protocols.py)


def test_numpy_methods_spell_namespace_functions(backend):
    h = sample("float64", (3, 4))
    x = ember.asarray(h)
    check(x.clip(-1, 1), h.clip(-1, 1))
    check(x.round(1), h.round(1))
    check(x.take(ember.asarray([0, 5, -1])), h.take([0, 5, -1]))
    check(x.take(ember.asarray([2, 0]), axis=1), h.take([2, 0], axis=1))
    check(x.repeat(2, axis=1), h.repeat(2, axis=1))
    check(x.dot(x.T), h.dot(h.T))
    out = ember.empty((3, 3))
    assert x.dot(x.T, out=out) is out
    check(out, h.dot(h.T))
    y, g = x.copy(), h.copy()
    y.put(ember.asarray([0, 7]), ember.asarray([9.0, 8.0]))
    g.put([0, 7], [9.0, 8.0])
    check(y, g)
    s = np.sort(h[0])
    check(ember.asarray(s).searchsorted(ember.asarray([0.0, 1.0]), side="right"),
          s.searchsorted([0.0, 1.0], side="right"))  # fmt: skip
    assert x.tobytes() == h.tobytes() and x.T.tobytes() == h.T.tobytes()
    check(x.diagonal(1), h.diagonal(1))
    check(x.trace(), h.trace())
    check(x.compress([True, False, True], axis=0), h.compress([True, False, True], axis=0))
    i = ember.asarray(np.array([0, 1, 1, 0]))
    check(
        i.choose([ember.asarray(h[0]), ember.asarray(h[1])]),
        np.array([0, 1, 1, 0]).choose([h[0], h[1]]),
    )
    p = x.copy()
    p.partition(1, axis=1)
    assert np.array_equal(p.to_numpy()[:, 1], np.partition(h, 1, axis=1)[:, 1])
    k = x.argpartition(2, axis=0).to_numpy()
    assert np.array_equal(np.take_along_axis(h, k, 0)[2], np.sort(h, axis=0)[2])
    idx = np.array([0, -1, 7, -9])
    check(x.take(ember.asarray(idx), axis=1, mode="clip"), h.take(idx, axis=1, mode="clip"))


def test_view_reinterprets_the_bits_and_flags(backend):
    h = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = ember.asarray(h)
    for dt in ("uint32", "uint8", "float64", "int16"):
        check(x.view(dt), h.view(dt))
    check(x[:, 1:3].view("int32"), h[:, 1:3].view("int32"))
    v = x.view("int32")
    v[0, 0] = 0  # the same memory
    assert float(x[0, 0]) == 0.0 and x.view() is not x
    with pytest.raises(ValueError, match="last axis must be contiguous"):
        x.T.view("uint8")
    with pytest.raises(ValueError, match="not a multiple"):
        x[:, :1].view("float64")
    with pytest.raises(ValueError, match="0-d"):
        x[0, 0].view("uint8")
    for a, n in ((x, h), (x.T, h.T), (x[:, ::2], h[:, ::2])):
        f = a.flags
        assert f["C_CONTIGUOUS"] == n.flags["C_CONTIGUOUS"]
        assert f["F_CONTIGUOUS"] == n.flags["F_CONTIGUOUS"] and f["WRITEABLE"]
        assert f.c_contiguous == n.flags.c_contiguous and f["F"] == n.flags["F"]


@ember.kernel
def _first_times_two(x, out):
    if ember.global_id() == 0:
        out[0] = x[0] * 2


def test_fast_construction_paths_set_every_slot(backend):
    # ember.empty, the reductions' and matmul's outputs are made without ndarray.__init__
    # (ember.array.core.make): every field must be set, or a kernel launch reading the
    # array's cached launch view (_lv) fails
    x = ember.asarray(np.arange(16, dtype=np.float32).reshape(4, 4))
    made = {"empty": ember.empty(3, ember.float32), "sum axis": ember.sum(x, axis=0),
            "method": x.max(axis=1), "matmul": x @ x, "init": ember.zeros(2)}  # fmt: skip
    out = ember.zeros(1, ember.float32)
    for name, a in made.items():
        for field in FIELDS:
            getattr(a, field)  # AttributeError: a field left unset
        if a.dtype == ember.float32:
            _first_times_two[1, 32](a.reshape(-1), out)
            # (empty's memory is whatever a freed block held: NaN compares unequal)
            np.testing.assert_equal(float(out[0]), 2 * float(a.reshape(-1)[0]), name)


@pytest.mark.skipif(not core.GUARDED, reason="ember.array._core was not built")
@pytest.mark.parametrize(
    "field, value, hint",
    [("shape", (2, 6), "reshape"), ("strides", (8, 4), "swapaxes"),
     ("dtype", ember.int32, "astype"), ("offset", 4, "copy"), ("buffer", None, "copy"),
     ("backend", None, "to_device")],
)  # fmt: skip
def test_setting_a_field_again_is_refused_and_leaves_the_array_intact(backend, field, value, hint):
    # NumPy lets `a.shape = ...` through (deprecated in 2.5); here it would leave the strides
    # and the cached launch view stale: later ops would read the wrong elements, silently
    host = sample("float32", (3, 4))
    x = ember.asarray(host)
    check(x * 2, host * 2)  # a launch caches x's launch view
    before = {f: getattr(x, f) for f in FIELDS[:6]}
    with pytest.raises(AttributeError, match=f"cannot set the {field} .*{hint}"):
        setattr(x, field, value)
    with pytest.raises(AttributeError, match=f"cannot set the {field}"):
        setattr(x, "".join(field), value)  # a name made at run time, not the interned one
    with pytest.raises(AttributeError, match=f"cannot delete the {field}"):
        delattr(x, field)
    assert {f: getattr(x, f) for f in FIELDS[:6]} == before
    check(x * 2, host * 2)
    check(x.sum(axis=1), host.sum(axis=1), rtol=1e-5)
    check(x.T + 1, host.T + 1)


@pytest.mark.skipif(not core.GUARDED, reason="ember.array._core was not built")
def test_init_again_is_refused_and_the_caches_stay_writable(backend):
    x = ember.arange(6, dtype=ember.float32)
    with pytest.raises(AttributeError, match="already made"):
        x.__init__((2, 3), x.dtype, x.buffer, x.backend)
    assert x.shape == (6,)
    check(x + 1, np.arange(6, dtype=np.float32) + 1)
    x._lv = None  # caches: recomputed on the next launch
    x._c = None
    check(x + 1, np.arange(6, dtype=np.float32) + 1)
    with pytest.raises(AttributeError):
        x.no_such_field = 1  # no __dict__


def test_flags_cannot_be_set_since_nothing_would_enforce_them(backend):
    # NumPy: `a.flags.writeable = False` makes later writes raise.  Ember has no read-only
    # arrays, so accepting it would leave the data unprotected without a word.
    x = ember.arange(4, dtype=ember.float32)
    for spelling in (lambda f: setattr(f, "writeable", False), lambda f: f.__setitem__("W", False)):
        with pytest.raises(AttributeError, match=r"flags\.writeable\).*no read-only mode"):
            spelling(x.flags)
    with pytest.raises(KeyError, match="unknown flag"):
        x.flags["X"] = True
    x[0] = 9
    check(x, np.array([9, 1, 2, 3], np.float32))
    assert x.flags.writeable and x.flags["C_CONTIGUOUS"]


def test_writes_into_a_broadcast_view_are_refused(backend):
    # broadcast_to / broadcast_arrays repeat one element along a stretched axis: writes
    # there would land on one location (a race on a GPU); NumPy's views are read-only
    a = ember.arange(3, dtype=ember.float32)
    b = ember.broadcast_to(a, (4, 3))
    x, _ = ember.broadcast_arrays(ember.zeros((3, 1)), ember.zeros((1, 4)))
    mask = ember.asarray(np.ones((4, 3), bool))
    writes = {
        "in-place operator": lambda: b.__iadd__(1),
        "ufunc out=": lambda: ember.multiply(a, 2, out=b),
        "slice assignment": lambda: b.__setitem__(slice(None), 5),
        "fill": lambda: b.fill(3),
        "advanced index": lambda: b.__setitem__(ember.asarray(np.array([0, 1])), 5),
        "mask": lambda: b.__setitem__(mask, 2),
        "put": lambda: ember.put(b, [0], [1]),
        "sort": lambda: b.sort(),
        "cumsum out=": lambda: ember.cumsum(ember.ones((4, 3)), axis=1, out=b),
        "broadcast_arrays": lambda: x.__setitem__(0, 1),
        # the part indexed need not repeat: the view is read-only as a whole, as NumPy's
        # (b[0] and b[0, 1] are plain views of `a`; they once wrote into it)
        "one element": lambda: b.__setitem__((0, 1), 7),
        "a row": lambda: b.__setitem__(0, 5),
        "meshgrid view": lambda: ember.meshgrid(a, a, copy=False)[0].__setitem__((0, 0), 9),
    }
    for what, write in writes.items():
        with pytest.raises(ValueError, match="read-only: this array is a broadcast view"):
            write()
        assert a.to_numpy().tolist() == [0, 1, 2], what  # nothing was written
    one = ember.zeros((1, 3))
    ember.broadcast_to(one, (1, 3))[0, 1] = 4  # no axis repeats: an ordinary view
    check(one, np.array([[0, 4, 0]], np.float64))
