"""Searching against NumPy: nonzero, one-argument where, argwhere, flatnonzero (stream
compaction across tile boundaries) and searchsorted (left/right, sorter=, NaNs)."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import DTYPES, check, sample

import ember
from ember.array import compact, compact_kernels, scan, sort, sort_match


@pytest.fixture(params=["chosen", "ballots", "one-part"])
def compaction(backend, request, monkeypatch):
    """The compaction kernels the backend chooses, and the ballot kernels on every device
    (warp operations emulated in shared memory where it has none), also with every tile in
    one part (one block walking them all).  Returns the tile size."""
    if request.param != "chosen" and sort.ranking(backend) is None:
        monkeypatch.setattr(sort, "ranking", lambda be: sort_match.EMULATED)
    if request.param == "one-part":
        monkeypatch.setattr(compact, "PARTS_PER_SM", 0)
    warp_ops, block, *_ = compact.layout(backend, 1)
    if warp_ops is None:
        return scan.geometry(backend, ember.int32).tile
    return block * compact_kernels.ITEMS


def _same(actual: tuple, expected: tuple) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        check(a, e.astype(np.int64))


@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_of_every_dtype(backend, dtype):
    x = sample(dtype, (4, 9), low=-1, high=1)
    if x.dtype.kind == "f":
        x[1, 2] = np.nan  # NaN is nonzero
        x[2, 3] = -0.0
    d = ember.asarray(x)
    _same(ember.nonzero(d), np.nonzero(x))
    _same(ember.where(d), np.where(x))


def test_nonzero_across_tiles_and_shapes(compaction):
    tile = compaction
    for shape in [(0,), (1,), (tile - 1,), (tile + 1,), (7 * tile + 3,), (3, 0), (2, 3, 5)]:
        x = sample("int8", shape, seed=sum(shape), low=-1, high=1)
        d = ember.asarray(x)
        _same(ember.nonzero(d), np.nonzero(x))
        check(ember.flatnonzero(d), np.flatnonzero(x).astype(np.int64))
        check(ember.argwhere(d), np.argwhere(x).astype(np.int64))
    all_set = np.ones(3 * tile, bool)
    _same(ember.nonzero(ember.asarray(all_set)), np.nonzero(all_set))


def test_nonzero_of_views(compaction):
    x = sample("float32", (6, 8), low=-1, high=1).round()
    d = ember.asarray(x)
    for index in [(slice(None, None, -1), slice(None, None, 2)), (slice(1, 5), 3)]:
        _same(ember.nonzero(d[index]), np.nonzero(x[index]))
    _same(ember.nonzero(d.T), np.nonzero(x.T))


def test_mask_select_across_tiles(compaction):
    tile = compaction
    rng = np.random.default_rng(5)
    for n, density in [(3 * tile + 17, 0.5), (2 * tile, 0.0), (2 * tile - 1, 1.0), (tile, 0.01)]:
        x = rng.standard_normal(n).astype(np.float32)
        keep = rng.random(n) < density
        d, m = ember.asarray(x), ember.asarray(keep)
        check(d[m], x[keep], exact=True)
        check(d[::-2][m[::2]], x[::-2][keep[::2]], exact=True)  # strided values and flags
        check(ember.flatnonzero(m[1:]), np.flatnonzero(keep[1:]).astype(np.int64))


def test_nonzero_errors(backend):
    with pytest.raises(ValueError, match="0-d"):
        ember.nonzero(ember.asarray(np.float32(1)))
    with pytest.raises(TypeError, match=r"ember\.asarray"):
        ember.nonzero(np.ones(3))
    with pytest.raises(TypeError, match="one argument"):
        ember.where(ember.asarray(np.ones(3)), 1)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "int64", "float32", "float64"])
def test_searchsorted(backend, dtype):
    a = np.sort(sample(dtype, (37,), low=-20, high=20))
    v = sample(dtype, (4, 6), seed=1, low=-25, high=25)
    v[0, :3] = a[:3]  # ties
    da, dv = ember.asarray(a), ember.asarray(v)
    for side in ("left", "right"):
        check(ember.searchsorted(da, dv, side=side), np.searchsorted(a, v, side=side))


def test_searchsorted_with_nans_scalars_and_empty(backend):
    a = np.array([-1.0, 0.0, 2.0, 2.0, np.nan, np.nan], np.float32)
    v = np.array([np.nan, 2.0, -np.inf, np.inf, 0.0], np.float32)
    da = ember.asarray(a)
    for side in ("left", "right"):
        check(ember.searchsorted(da, ember.asarray(v), side=side),
              np.searchsorted(a, v, side=side))  # fmt: skip
    check(ember.searchsorted(da, 2.0), np.int64(np.searchsorted(a, np.float32(2.0))))
    empty = ember.asarray(np.zeros(0, np.float32))
    check(ember.searchsorted(empty, ember.asarray(v)), np.zeros(5, np.int64))
    check(ember.searchsorted(da, empty), np.zeros(0, np.int64))


def test_searchsorted_with_sorter_and_mixed_dtypes(backend):
    a = sample("int32", (50,), low=-100, high=100)
    order = np.argsort(a, kind="stable")
    v = np.array([-3.5, 0.5, 99.0, -200.0])
    da, dv = ember.asarray(a), ember.asarray(v)
    for side in ("left", "right"):
        check(ember.searchsorted(da, dv, side=side, sorter=ember.asarray(order)),
              np.searchsorted(a, v, side=side, sorter=order))  # fmt: skip
    reverse = len(a) - 1 - order  # sorts a[::-1]
    check(ember.searchsorted(da[::-1], dv, sorter=reverse.tolist()),
          np.searchsorted(a[::-1], v, sorter=reverse))  # fmt: skip


def test_searchsorted_errors(backend):
    d = ember.asarray(np.arange(4.0))
    with pytest.raises(ValueError, match="1-d"):
        ember.searchsorted(ember.reshape(d, (2, 2)), d)
    with pytest.raises(ValueError, match="side"):
        ember.searchsorted(d, d, side="middle")
    bad = ember.asarray(np.array([0, 1, 2, 9]))
    with pytest.raises(ValueError, match="sorter index is out of range"):
        ember.searchsorted(d, d, sorter=bad).to_numpy()
