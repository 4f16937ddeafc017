"""Advanced indexing against NumPy: integer arrays and lists, boolean masks, mixed with
slices, integers, ``...`` and ``None`` (NumPy's result-shape rules), assignment, take,
take_along_axis, put, and out-of-range indices reported as IndexError at the next sync."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import DTYPES, check, sample
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.array import scan

X = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)


def _dev(key):
    """The key with NumPy arrays as ember arrays (lists stay lists)."""
    if isinstance(key, tuple):
        return tuple(_dev(k) for k in key)
    return ember.asarray(key) if isinstance(key, np.ndarray) else key


KEYS = [
    np.array([1, 0]),
    ([0, 1], slice(None), [1, 2]),
    (slice(None), [0, 2], [1, 3]),
    (0, slice(None), [1, 2]),  # an integer and an array, separated: B first
    (slice(None), 1, [0, 3]),  # adjacent: B in place
    (Ellipsis, [4, -2]),  # a negative index (no repeats: setitem uses these keys too)
    (None, [1], Ellipsis, None),
    (np.array([[0, 1], [1, 0]]), slice(1, None), np.array([[2], [3]])),
    ([], slice(None)),
    (slice(None), np.array([], np.int64)),
    (slice(None, None, -1), [2, 0], slice(None, None, 2)),
    (np.array([-1, -2], np.int8), np.array([2], np.uint8)),
    (X[:, :, 0, 0] > 5,),
    (0, X[0, :, :, 0] > 20),
    (slice(None), X[0, :, 0, 0] != 13),
    X > 50,
    (X[:, 0, 0, 0] > 0, slice(1, 3), [0, 3]),
]


@pytest.mark.parametrize("key", KEYS, ids=range(len(KEYS)))
def test_getitem_matches_numpy(backend, key):
    d = ember.asarray(X)
    check(d[_dev(key)], X[key])


@pytest.mark.parametrize("key", KEYS, ids=range(len(KEYS)))
def test_setitem_matches_numpy(backend, key):
    expected = X.copy()
    shape = X[key].shape
    values = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 1000
    expected[key] = values
    d = ember.asarray(X)
    d[_dev(key)] = ember.asarray(values)
    check(d, expected)  # (no key repeats an index: repeated ones pick an unspecified value)
    e2 = X.copy()
    e2[key] = -7
    d2 = ember.asarray(X)
    d2[_dev(key)] = -7.0
    check(d2, e2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mask_selection_of_every_dtype(backend, dtype):
    x = sample(dtype, (5, 7))
    m = sample("bool", (5, 7), seed=3)
    d, dm = ember.asarray(x), ember.asarray(m)
    check(d[dm], x[m])
    check(d[ember.asarray(m[:, 0])], x[m[:, 0]])
    y = x.copy()
    y[m] = x[0, 0]
    dd = ember.asarray(x)
    dd[dm] = x[0, 0]
    check(dd, y)
    idx = np.array([4, -1, 0, 2])
    check(d[ember.asarray(idx)], x[idx])
    check(d[:, [6, 0]], x[:, [6, 0]])


def test_mask_selection_across_tiles_and_views(backend):
    tile = scan.geometry(backend, ember.int32).tile
    x = sample("float32", (3 * tile + 11,))
    d = ember.asarray(x)
    check(d[d > 0.5], x[x > 0.5])
    check(d[::-3][d[::-3] < 0], x[::-3][x[::-3] < 0])
    m = sample("float32", (40, 30))
    dm = ember.asarray(m)
    check(dm.T[dm.T > 0], m.T[m.T > 0])
    none = ember.asarray(np.zeros(5, bool))
    check(ember.asarray(np.arange(5.0))[none], np.zeros(0))


def test_assignment_casts_and_broadcasts(backend):
    x = np.zeros((4, 6), np.int32)
    d = ember.asarray(x)
    d[[0, 2]] = ember.asarray(np.array([1.7, 2.2, 3.9, 4.0, 5.0, 6.0]))  # row broadcast, cast
    x[[0, 2]] = np.array([1.7, 2.2, 3.9, 4.0, 5.0, 6.0])
    check(d, x)
    d[d > 3] = 2.5
    x[x > 3] = 2.5
    check(d, x)
    d[:, ember.asarray(np.array([True, False] * 3))] = [7, 8, 9]
    x[:, np.array([True, False] * 3)] = [7, 8, 9]
    check(d, x)


def test_out_of_range_indices_are_never_followed(backend):
    """A scatter (and a gather) with an index out of range raises at the next sync and
    touches no element through it: the offsets array comes from recycled memory
    (poisoned here with the offset 5, through the pool's free list), and an offset the
    checking kernel left unwritten sent the write there (and crashed the cpu backend)."""
    keep = ember.asarray(np.arange(12, dtype=np.float32))  # (the layout that crashed)
    d = ember.asarray(np.arange(10.0))
    with pytest.raises(IndexError, match="out of bounds"):
        d[ember.asarray(np.array([3, 10]))].to_numpy()
    del keep
    n = 300_000
    positions = np.arange(n, dtype=np.int64) % 1000 + 10  # all valid, none is 5
    positions[0] = 5000  # out of range for 2000 elements
    idx = ember.asarray(positions)
    poison = ember.full(n, 5, dtype=ember.int64)
    ember.synchronize()
    del poison  # its block is the next one of this size the pool hands out
    x = ember.zeros(2000, dtype=ember.float32)
    with pytest.raises(IndexError, match="out of bounds"):
        x[idx] = 9.0
        ember.synchronize()
    got = x.to_numpy()
    # nothing outside the valid positions; those hold 9 where the scatter ran (the cpu
    # backend stops at the failed launch, a GPU runs the scatter queued behind it)
    np.testing.assert_array_equal(got[:10], 0)
    np.testing.assert_array_equal(got[1010:], 0)
    assert set(np.unique(got[10:1010]).tolist()) <= {0.0, 9.0}
    x[10:1010] = 9.0
    poison = ember.full(n, 5, dtype=ember.int64)
    ember.synchronize()
    del poison
    with pytest.raises(IndexError, match="out of bounds"):
        x[idx].to_numpy()
    check(x[:1010], np.r_[np.zeros(10, np.float32), np.full(1000, 9.0, np.float32)])


def test_out_of_range_indices_raise_at_the_next_sync(backend):
    d = ember.asarray(np.arange(10.0))
    with pytest.raises(IndexError, match="out of bounds"):
        d[ember.asarray(np.array([3, 10]))].to_numpy()
    with pytest.raises(IndexError, match="out of bounds"):
        d[[-11]].to_numpy()
    with pytest.raises(ember.KernelError):
        ember.take(d, ember.asarray(np.array([2**40], np.uint64))).to_numpy()
    check(d[[-10, 9]], np.array([0.0, 9.0]))  # the device stays usable
    with pytest.raises(IndexError, match="out of bounds"):
        d[[1, 12]] = 0.0
        ember.synchronize()


def test_index_errors_on_the_host(backend):
    d = ember.asarray(X)
    with pytest.raises(IndexError, match="integer"):
        d[ember.asarray(np.array([0.5]))]
    with pytest.raises(IndexError, match="boolean index did not match"):
        d[ember.asarray(np.ones(3, bool))]
    with pytest.raises(IndexError, match="shape mismatch"):
        d[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="too many indices"):
        d[0, 0, 0, [0], 0]
    # NumPy integer/bool arrays index like lists (uploaded: Dask's chunk slicing makes them);
    # NumPy *values* still need ember.asarray
    check(d[np.array([0, 1])], X[np.array([0, 1])])
    with pytest.raises(TypeError, match=r"ember\.asarray"):
        d[np.array([0, 1])] = np.zeros((2,) + X.shape[1:], X.dtype)
    with pytest.raises(ValueError, match="shape mismatch"):
        d[[0, 1]] = ember.asarray(np.ones(7, np.float32))


def test_take(backend):
    x = sample("int16", (4, 5, 6))
    d = ember.asarray(x)
    idx = np.array([[0, -1], [2, 3]])
    check(ember.take(d, ember.asarray(idx)), np.take(x, idx))
    for axis in (0, 1, 2, -1):
        check(ember.take(d, ember.asarray(idx), axis=axis), np.take(x, idx, axis=axis))
    check(ember.take(d, [1, 3], axis=1), np.take(x, [1, 3], axis=1))
    check(ember.take(d, -2, axis=2), np.take(x, -2, axis=2))
    # NumPy's modes: wrap takes indices modulo the length, clip clamps (negatives to 0)
    far = np.array([[-13, -1], [5, 17]])
    for mode in ("wrap", "clip"):
        check(ember.take(d, ember.asarray(far), axis=1, mode=mode), np.take(x, far, 1, mode=mode))
        check(ember.take(d, far.ravel().tolist(), mode=mode), np.take(x, far.ravel(), mode=mode))
    out = ember.zeros((4, 2, 2, 6), dtype=ember.float64)
    assert ember.take(d, ember.asarray(far), axis=1, mode="wrap", out=out) is out
    check(out, np.take(x, far, axis=1, mode="wrap").astype(np.float64))
    with pytest.raises(ValueError, match="clipmode must be one of"):
        ember.take(d, [0], mode="nearest")
    with pytest.raises(IndexError, match="empty"):
        ember.take(ember.asarray(np.zeros((2, 0))), [0], axis=1, mode="wrap")


def test_take_along_axis(backend):
    x = sample("float32", (4, 5, 6))
    d = ember.asarray(x)
    for axis in (0, 1, 2):
        idx = np.argsort(x, axis=axis)
        check(ember.take_along_axis(d, ember.asarray(idx), axis=axis),
              np.take_along_axis(x, idx, axis=axis))  # fmt: skip
    small = np.array([[[0]], [[-1]], [[2]], [[1]]])  # broadcasts along the other axes
    check(ember.take_along_axis(d, ember.asarray(small), axis=1),
          np.take_along_axis(x, small, axis=1))  # fmt: skip
    with pytest.raises(ValueError, match="same number of dimensions"):
        ember.take_along_axis(d, ember.asarray(np.zeros(3, np.int64)), axis=0)


def test_put(backend):
    a = np.arange(12.0).reshape(3, 4)
    d = ember.asarray(a)
    ember.put(d, ember.asarray(np.array([0, -1, 5])), ember.asarray(np.array([7.0, 8.0])))
    np.put(a, [0, -1, 5], [7.0, 8.0])
    check(d, a)
    t = ember.asarray(np.arange(12.0).reshape(3, 4))
    view = t.T
    ember.put(view, [1, 2], [-1.0, -2.0])
    b = np.arange(12.0).reshape(3, 4)
    np.put(b.T, [1, 2], [-1.0, -2.0])
    check(t, b)


SETTINGS = settings(
    max_examples=30, derandomize=True, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)  # fmt: skip


@st.composite
def mixed_keys(draw):
    """A key over a (3, 4, 5) array: per axis a slice, an integer or an index array (at
    least one), plus maybe None and a trailing ellipsis."""
    shape = (3, 4, 5)
    items: list = []
    arrays = 0
    for n in shape:
        kind = draw(st.sampled_from(["slice", "int", "array", "array"]))
        if kind == "slice":
            items.append(slice(draw(st.integers(0, 1)), None, draw(st.sampled_from([1, -1, 2]))))
        elif kind == "int":
            items.append(draw(st.integers(-n, n - 1)))
        else:
            arrays += 1
            dims = draw(st.sampled_from([(2,), (1, 2), (2, 1)]))
            items.append(np.array(draw(st.lists(st.integers(-n, n - 1), min_size=2,
                                                max_size=2))).reshape(dims))  # fmt: skip
    if arrays == 0:
        items[0] = np.array([0, 2])
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), None)
    return tuple(items)


@SETTINGS
@given(mixed_keys())
def test_result_shapes_follow_numpy(backend, key):
    x = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    check(ember.asarray(x)[_dev(key)], x[key])


def _same_as_numpy(write, shape=(6,)):
    host = np.arange(int(np.prod(shape))).reshape(shape)
    x = ember.asarray(host)
    write(np, host)
    write(ember, x)
    check(x, host)


def test_writes_whose_values_overlap_the_target(backend):
    # NumPy copies values that share the target's memory first; the scatter kernel read
    # elements other threads had already overwritten (x[perm] = x gave [0 1 2 2 1 0])
    _same_as_numpy(lambda m, x: x.__setitem__(m.asarray([5, 4, 3, 2, 1, 0]), x))
    _same_as_numpy(lambda m, x: x.__setitem__(m.asarray([0, 1, 2, 3, 4, 5]), x[::-1]))
    _same_as_numpy(lambda m, x: x.__setitem__(m.asarray([1, 2, 3, 4, 5]), x[:-1]))
    _same_as_numpy(lambda m, x: x.__setitem__(x[:3], -1))  # positions read from x itself
    _same_as_numpy(lambda m, x: m.put(x, m.asarray([0, 1, 2, 3, 4, 5]), x[::-1]))
    _same_as_numpy(lambda m, x: m.put_along_axis(x, m.asarray([0, 1, 2, 3, 4, 5]), x[::-1], axis=0))
    _same_as_numpy(lambda m, x: x.__setitem__((slice(None), m.asarray([0, 1, 2])), x[:, ::-1]),
                   shape=(2, 3))  # fmt: skip
    big = np.arange(100_000)
    x = ember.asarray(big)
    x[ember.asarray(big[::-1].copy())] = x
    check(x, big[::-1])


@pytest.mark.parametrize("dtype", ["int64", "int8", "complex64"])
def test_slice_copies_between_overlapping_ranges(backend, dtype):
    # one contiguous device copy between overlapping ranges is undefined (OpenCL refused
    # it with an error): it goes through a temporary
    for write in (
        lambda m, x: x.__setitem__(slice(1, None), x[:-1]),
        lambda m, x: x.__setitem__(slice(None, -1), x[1:]),
        lambda m, x: np.copyto(x[2:], x[:-2]),
        lambda m, x: x.reshape(4, 3).__setitem__(slice(1, None), x.reshape(4, 3)[:-1]),
    ):
        host = np.arange(12).astype(dtype)
        x = ember.asarray(host)
        write(np, host)
        write(ember, x)
        check(x, host)


def test_assigned_scalars_convert_as_numpys_do(backend):
    # Python ints beyond the dtype raise and NaN into integers raises on every path (an
    # index array or a mask wrapped x[idx] = 300 into int8 as 44, silently); NumPy scalars
    # cast unsafely (a slice refused numpy.int64(-1) on uint16 as an out-of-range int)
    keys = [0, slice(None), Ellipsis, [0], np.array([True, False, False])]
    cases = [("int8", 300), ("uint16", -1), ("int16", float("nan")), ("int8", 300.0),
             ("uint16", np.int64(-1)), ("uint8", np.float32(300.0)), ("bool", 5),
             ("float32", 1e300), ("int8", 2.7)]  # fmt: skip
    for dtype, value in cases:
        for key in keys:
            host, x = np.zeros(3, dtype), ember.zeros(3, dtype)
            k = ember.asarray(key) if isinstance(key, list | np.ndarray) else key
            try:
                with np.errstate(all="ignore"):
                    host[key] = value
            except (OverflowError, ValueError) as exc:
                with pytest.raises(type(exc)), ember.allowscalar():
                    x[k] = value
                continue
            with ember.allowscalar():
                x[k] = value
            check(x, host)


def test_assigned_arrays_may_have_leading_length_one_axes(backend):
    # NumPy's assignment drops them: x[:] = v of shape (1, n) into (n,)
    for shape, key, ekey, value in (
        ((2,), slice(None), slice(None), np.array([[1.0, 2.0]])),
        ((2, 2), 0, 0, np.array([[1.0, 2.0]])),
        ((2,), [0, 1], ember.asarray([0, 1]), np.array([[[1.0, 2.0]]])),
        ((2, 3), (slice(None), [0, 1]), (slice(None), ember.asarray([0, 1])),
         np.array([[[1.0], [2.0]]])),
    ):  # fmt: skip
        host, x = np.zeros(shape), ember.zeros(shape)
        host[key] = value
        with ember.allowscalar():
            x[ekey] = ember.asarray(value)
        check(x, host)
    with pytest.raises(ValueError, match="broadcast"):
        ember.zeros(2)[:] = ember.asarray(np.ones((2, 2)))  # a leading axis of 2: refused


def test_boolean_scalar_indices_are_numpys(backend):
    """A 0-d boolean index is a new axis at its place with a one-element mask: a result
    axis of length 1 (True) or 0 (False), an advanced index (NumPy's rule)."""
    host = np.arange(24.0).reshape(2, 3, 4)
    x = ember.asarray(host)
    keys = [True, False, np.True_, np.array(False), (0, True), (True, 0), (..., True),
            (..., False, 1), (True, True), ([0, 1], True), (slice(None), True, [1, 2]),
            (0, 1, 2, True), (True, ..., 0), (None, True)]  # fmt: skip
    for key in keys:
        check(x[key], host[key])
    check(x[ember.asarray(True)], host[np.array(True)])
    y, want = ember.asarray(np.arange(6.0)), np.arange(6.0)
    for key, value in ((True, 5.0), (np.False_, 7.0), ((2, True), -1.0)):
        y[key] = value
        want[key] = value
    y[ember.asarray(True)] = ember.asarray(np.arange(6.0) * 10)
    want[np.array(True)] = np.arange(6.0) * 10
    check(y, want)


def test_transpose_names_a_repeated_axis(backend):
    with pytest.raises(ValueError, match="repeated axis"):
        ember.transpose(ember.zeros((2, 3)), (0, 0))
