"""Sorting against NumPy: sort/argsort of every dtype (ties: stable; NaNs last; -0.0 equal to
0.0), descending, every axis, views; the bitonic row sort, the radix sort across tiles
through each of its pass designs (per-thread counters, warp matching, onesweep); the
unique family."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import DTYPES, check, sample
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.array import sets, sort, sort_match


def _data(dtype, shape, seed=0):
    """Values with many ties; floats with NaNs and both zeros."""
    x = sample(dtype, shape, seed=seed, low=-3, high=3)
    if x.dtype.kind == "f":
        flat = x.reshape(-1)
        flat[::5] = np.nan
        flat[1::7] = -0.0
        flat[2::7] = 0.0
        flat[3::11] = np.inf
    return x


def _descending_argsort(x, axis=-1):
    """NumPy has no descending sort: stable descending, NaNs first (the largest)."""
    r = np.flip(x, axis=axis)
    idx = np.flip(np.argsort(r, axis=axis, kind="stable"), axis=axis)
    return x.shape[axis] - 1 - idx


def _check_sorts(d, x, axis=-1):
    # (kind="stable": NumPy 2.4's default quicksort of float16 can misorder long inputs)
    check(ember.sort(d, axis=axis), np.sort(x, axis=axis, kind="stable"), exact=True)
    check(ember.argsort(d, axis=axis), np.argsort(x, axis=axis, kind="stable"))
    expected = _descending_argsort(x, axis)
    check(ember.argsort(d, axis=axis, descending=True), expected)
    check(ember.sort(d, axis=axis, descending=True),
          np.take_along_axis(x, expected, axis=axis), exact=True)  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_and_argsort_of_every_dtype(backend, dtype):
    x = _data(dtype, (3, 37))
    _check_sorts(ember.asarray(x), x)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_every_axis_and_views(backend, axis):
    x = _data("int16", (4, 6, 9), seed=1)
    d = ember.asarray(x)
    check(ember.argsort(d, axis=axis), np.argsort(x, axis=axis, kind="stable"))
    v = x[::-1, 1:, ::2]
    check(ember.sort(d[::-1, 1:, ::2], axis=axis), np.sort(v, axis=axis))
    check(ember.sort(d, axis=None), np.sort(x, axis=None))


def _long(backend, dtype, seed=0):
    n = sort.SEGMENT + 3 * 1024 + 5  # radix passes, several tiles
    return _data(dtype, (n,), seed)


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "float16"])
def test_radix_sort_across_tiles(backend, dtype):
    x = _long(backend, dtype)
    _check_sorts(ember.asarray(x), x)


def test_long_rows_of_a_matrix(backend):
    x = _data("float32", (2, sort.SEGMENT + 7), seed=2)
    d = ember.asarray(x)
    check(ember.argsort(d, axis=1), np.argsort(x, axis=1, kind="stable"))
    check(ember.sort(d.T, axis=0), np.sort(x.T, axis=0), exact=True)


@pytest.fixture(params=["warp-match", "onesweep"])
def pass_design(backend, request, monkeypatch):
    """The GPU pass designs on any device: warp operations emulated in shared memory,
    and for onesweep the single-pass look-back also where the backend does not choose it."""
    monkeypatch.setattr(sort, "ranking", lambda be: sort_match.EMULATED)
    if request.param == "onesweep":
        monkeypatch.setattr(type(backend), "forward_progress", True)
    return request.param


def test_gpu_pass_designs(pass_design):
    x = _long(None, "float32", seed=3)
    d = ember.asarray(x)
    check(ember.sort(d), np.sort(x), exact=True)
    check(ember.argsort(d, descending=True), _descending_argsort(x))


@pytest.mark.parametrize(
    "make",
    [lambda r, n: r.integers(0, 1000, n).astype(np.int32),  # high bytes constant
     lambda r, n: (r.integers(-50, 50, n) * 256).astype(np.int32),  # low byte constant
     lambda r, n: r.integers(0, 300, n).astype(np.float32),  # low mantissa bytes zero
     lambda r, n: np.full(n, 7, np.uint16)],  # every pass keeps the order
    ids=["high", "low", "float", "constant"],
)  # fmt: skip
def test_passes_whose_keys_share_a_digit(backend, monkeypatch, make):
    # onesweep copies those passes (first pass: keys from values; last: back to values;
    # indices along); the GPU design on any device, as in pass_design
    monkeypatch.setattr(sort, "ranking", lambda be: sort_match.EMULATED)
    monkeypatch.setattr(type(backend), "forward_progress", True)
    x = make(np.random.default_rng(5), sort.SEGMENT + 3 * 1024 + 5)
    d = ember.asarray(x)
    check(ember.sort(d), np.sort(x), exact=True)
    check(ember.argsort(d), np.argsort(x, kind="stable"))
    check(ember.argsort(d, descending=True), _descending_argsort(x))
    check(ember.unique_values(d), np.unique(x))


def test_methods_and_errors(backend):
    x = _data("int32", (5, 4))
    d = ember.asarray(x)
    check(d.argsort(axis=0), np.argsort(x, axis=0, kind="stable"))
    d.sort()
    x.sort()
    check(d, x)
    with pytest.raises(ValueError, match="0-d"):
        ember.sort(ember.asarray(np.float32(1)))
    with pytest.raises(ValueError, match="order="):
        ember.sort(d, order="f")
    with pytest.raises(ValueError, match="kind"):
        ember.argsort(d, kind="bogo")
    with pytest.raises(TypeError, match=r"ember\.asarray"):
        ember.sort(np.ones(3))
    check(ember.sort(ember.asarray(np.zeros((0, 3), np.int8))), np.zeros((0, 3), np.int8))


# --------------------------------------------------------------------- unique
def _reference(x, index=False, inverse=False, counts=False, equal_nan=False):
    """NumPy's unique, sorted (NumPy's Array API functions may return any order); the Array
    API functions count NaNs as distinct."""
    out = np.unique(x, return_index=index, return_inverse=inverse, return_counts=counts,
                    equal_nan=equal_nan)  # fmt: skip
    return out if isinstance(out, tuple) else (out,)


def _same(got, want, x=None):
    """Equal results; with ``x``, the second item is an inverse: NumPy may number distinct
    NaNs in any order, so those only have to be distinct NaN slots."""
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if k == 1 and x is not None and x.dtype.kind == "f" and np.isnan(x).any():
            inv, nan = g.to_numpy(), np.isnan(x)
            np.testing.assert_array_equal(inv[~nan], w[~nan])
            assert np.isnan(got[0].to_numpy()[inv[nan]]).all()
            assert len(set(inv[nan].tolist())) == nan.sum()
            continue
        check(g, w.astype(g.dtype.numpy))


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "float64", "bool"])
def test_unique_family(backend, dtype):
    x = _data(dtype, (6, 7), seed=4)
    d = ember.asarray(x)
    _same((ember.unique_values(d),), _reference(x))
    _same(ember.unique_counts(d), _reference(x, counts=True))
    _same(ember.unique_inverse(d), _reference(x, inverse=True), x)
    _same(ember.unique_all(d), _reference(x, True, True, True))
    got = ember.unique(d, return_index=True, return_inverse=True, return_counts=True)
    _same(got, np.unique(x, return_index=True, return_inverse=True, return_counts=True))
    check(ember.unique(d), np.unique(x))


def test_unique_across_tiles_and_empty(backend):
    x = sample("int32", (sort.SEGMENT * 3 + 11,), low=-500, high=500)
    d = ember.asarray(x)
    _same(ember.unique_all(d), _reference(x, True, True, True))
    empty = ember.asarray(np.zeros(0, np.float32))
    check(ember.unique_values(empty), np.zeros(0, np.float32))
    check(ember.unique_counts(empty).counts, np.zeros(0, np.int64))


@pytest.mark.parametrize("dtype", ["int32", "float32", "uint8", "bool"])
def test_unique_along_an_axis(backend, dtype):
    # unique sub-arrays: lexicographic order, first indices, a 1-d inverse, counts (NumPy 2.1+)
    x = (np.random.default_rng(3).integers(0, 3, (7, 3, 2)) > 0 if dtype == "bool" else
         np.random.default_rng(3).integers(0, 3, (7, 3, 2)).astype(dtype))  # fmt: skip
    if dtype == "float32":
        x[0, 0, 0], x[2, 0, 0] = 0.0, -0.0  # equal: one sub-array, the first one's bits
    for axis, view in [(0, x), (1, x), (-1, x), (0, x[::-1].swapaxes(0, 2))]:
        got = ember.unique(ember.asarray(np.ascontiguousarray(view)) if view is not x else
                           ember.asarray(x), axis=axis, return_index=True, return_inverse=True,
                           return_counts=True)  # fmt: skip
        want = np.unique(view, axis=axis, return_index=True, return_inverse=True,
                         return_counts=True)  # fmt: skip
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(g.to_numpy(), w)
    if dtype == "float32":  # NaN != NaN: rows holding NaNs are never merged (as NumPy)
        rows = ember.asarray(np.array([[1.0, np.nan], [1.0, np.nan], [0.0, 1.0]], dtype))
        assert ember.unique(rows, axis=0).shape == (3, 2)
    line = ember.asarray(np.array([2, 0, 2, 1], dtype))  # 1-d with an axis: the flat case
    check(ember.unique(line, axis=0), np.unique(np.array([2, 0, 2, 1], dtype), axis=0))
    check(ember.unique(ember.zeros((0, 3), dtype=dtype), axis=0), np.zeros((0, 3), dtype))
    with pytest.raises(ValueError, match="out of bounds"):
        ember.unique(ember.asarray(x), axis=3)


def _sorts(monkeypatch) -> list:
    """Spy on the sorts the unique family runs: the list gets one entry per sort."""
    calls, real = [], sort.sort_rows
    monkeypatch.setattr(sort, "sort_rows", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "uint64"])
def test_unique_of_a_narrow_integer_range_takes_the_table(backend, dtype, monkeypatch):
    """Every unique function without a sort where the range is at most TALLY values, equal
    to NumPy's, negative values and views included."""
    calls = _sorts(monkeypatch)
    n = sets.DENSE_MIN + 5
    lo = 0 if dtype[0] in "bu" else -300
    x = np.random.default_rng(3).integers(lo, 2 if dtype == "bool" else 700, (2, n))
    x = x.astype(dtype)
    d = ember.asarray(x)[:, ::-1]  # a view: negative step, row gap
    v = x[:, ::-1]
    _same((ember.unique_values(d),), _reference(v))
    _same(ember.unique_inverse(d), _reference(v, inverse=True))
    assert ember.unique_inverse(d).inverse_indices.shape == v.shape
    _same(ember.unique(d, return_inverse=True), np.unique(v, return_inverse=True))
    _same(ember.unique_counts(d), _reference(v, counts=True))
    _same(ember.unique_all(d), _reference(v, True, True, True))
    _same(ember.unique(d, return_index=True), np.unique(v, return_index=True))
    assert not calls


@pytest.mark.parametrize("dtype", ["uint8", "int16", "int64"])
def test_unique_counts_of_repeated_values_and_past_the_tally(backend, dtype, monkeypatch):
    """Counts and first indices: one value everywhere (every atomic on one slot), the
    first occurrence late in the array; past TALLY values, values and inverse still take
    the table but counts and indices sort."""
    calls = _sorts(monkeypatch)
    n = sets.DENSE_MIN + 3
    x = np.full(n, 7, dtype)
    x[n - 2] = 9  # first (and only) occurrence near the end
    d = ember.asarray(x)
    _same(ember.unique_all(d), _reference(x, True, True, True))
    assert not calls
    if np.iinfo(dtype).max > sets.TALLY:
        x[: sets.TALLY + 1] = np.arange(sets.TALLY + 1)  # TALLY + 1 values
        d = ember.asarray(x)
        _same(ember.unique_inverse(d), _reference(x, inverse=True))
        assert not calls
        _same(ember.unique_all(d), _reference(x, True, True, True))
        assert len(calls) == 1


@pytest.mark.parametrize("dtype", ["int32", "uint64"])
def test_unique_of_wide_or_short_integer_ranges_sorts(backend, dtype, monkeypatch):
    """A range past the table's limit, values at the dtype's ends (uint64 past 2**63) and
    arrays shorter than DENSE_MIN sort, with the same results."""
    calls = _sorts(monkeypatch)
    info = np.iinfo(dtype)
    n = sets.DENSE_MIN
    limit = sets.DENSE_SPAN * n + sets.DENSE_FLOOR  # the widest range the table takes
    x = np.random.default_rng(4).integers(0, 50, n).astype(dtype)
    x[7] = limit - 1  # a range of exactly ``limit`` values: the table
    _same(ember.unique_inverse(ember.asarray(x)), _reference(x, inverse=True))
    assert not calls
    x[7] = limit  # one more: the sort
    _same(ember.unique_inverse(ember.asarray(x)), _reference(x, inverse=True))
    assert len(calls) == 1
    x[[1, 2]] = info.min, info.max
    _same(ember.unique_inverse(ember.asarray(x)), _reference(x, inverse=True))
    short = x[: sets.DENSE_MIN - 1] % 50
    _same((ember.unique_values(ember.asarray(short)),), _reference(short))
    assert len(calls) == 3


SETTINGS = settings(
    max_examples=25, derandomize=True, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)  # fmt: skip


@SETTINGS
@given(st.lists(st.integers(0, 7), min_size=1, max_size=3), st.data())
def test_argsort_shapes_axes_and_stability(backend, shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = sample("int8", tuple(shape), low=0, high=2)  # many ties
    check(ember.argsort(ember.asarray(x), axis=axis), np.argsort(x, axis=axis, kind="stable"))
