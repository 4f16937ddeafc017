"""Set, partition and selection helpers against NumPy: isin and the 1-d set operations,
partition/argpartition, lexsort, compress/extract, place/putmask/copyto/put_along_axis
(in place), select/choose, diagonal/diag/trace.  Few dtypes on purpose: every dtype through a
sort or a gather is a kernel compiled (the file runs in a few seconds on the cpu backend)."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import check, sample

import ember

E = ember.asarray


def _nan_data():
    """float64 values with repeats, NaNs and both zeros, and a test set to look them up in."""
    x = np.array([3.0, 1.0, np.nan, 2.0, -0.0, 5.0, 1.0, np.inf, 2.0, np.nan])
    t = np.array([2.0, np.nan, 0.0, 7.0, np.inf, 2.0])
    return x, t


# --------------------------------------------------------------------- isin
def test_isin(backend):
    x, t = _nan_data()
    check(ember.isin(E(x), E(t)), np.isin(x, t))
    check(ember.isin(E(x), E(t), invert=True), np.isin(x, t, invert=True))
    check(ember.isin(E(x), E(t), assume_unique=True, kind="sort"), np.isin(x, t))
    grid = sample("int64", (4, 6), low=-5, high=5)
    test = sample("int64", (2, 3), seed=1, low=-5, high=5)
    check(ember.isin(E(grid), E(test)), np.isin(grid, test))  # shape of element; 2-d test
    check(ember.isin(E(grid), E(test), kind="table"), np.isin(grid, test))
    check(ember.isin(E(x)[::-3], E(t)), np.isin(x[::-3], t))  # a strided view
    check(ember.isin(E(grid), [0, 3], invert=True), np.isin(grid, [0, 3], invert=True))
    check(ember.isin(E(grid[0]), E(t)), np.isin(grid[0], t))  # int64 vs float64: as NumPy
    check(ember.isin(3, E(test)), np.isin(3, test))  # a scalar: 0-d
    check(ember.isin(E(x), E(t[:0])), np.isin(x, t[:0]))  # empty test set
    check(ember.isin(E(grid[:, :0]), E(test)), np.isin(grid[:, :0], test))
    d = E(np.arange(3))
    with pytest.raises(ValueError, match="ember.isin: invalid kind"):
        ember.isin(d, d, kind="hash")
    with pytest.raises(ValueError, match="kind='table' is only supported"):
        ember.isin(d, E(t), kind="table")
    with pytest.raises(TypeError, match=r"ember.asarray\(x\)"):
        ember.isin(d, np.arange(3))


# --------------------------------------------------------------------- set operations
def test_set_operations(backend):
    x, t = _nan_data()
    a = sample("int64", (3, 5), low=-4, high=6)
    b = sample("int64", (7,), seed=2, low=0, high=9)
    cases = [(x, t), (a, b), (a, t), (b[:0], a), (t[:0], t[:0])]
    for p, q in cases:
        dp, dq = E(p), E(q)
        check(ember.intersect1d(dp, dq), np.intersect1d(p, q))
        check(ember.union1d(dp, dq), np.union1d(p, q))
        check(ember.setdiff1d(dp, dq), np.setdiff1d(p, q))
        check(ember.setxor1d(dp, dq), np.setxor1d(p, q))
        if p.dtype.kind == q.dtype.kind == "i":  # (argsorts of floats: more kernels)
            got = ember.intersect1d(dp, dq, return_indices=True)
            for g, w in zip(got, np.intersect1d(p, q, return_indices=True), strict=True):
                check(g, w)
    u, v = np.array([9, 1, 4, 7]), np.array([4, 2, 9, 0, 5])  # unique inputs
    du, dv = E(u), E(v)
    check(ember.intersect1d(du, dv, assume_unique=True), np.intersect1d(u, v, True))
    got = ember.intersect1d(du, dv, assume_unique=True, return_indices=True)
    for g, w in zip(got, np.intersect1d(u, v, True, True), strict=True):
        check(g, w)
    check(ember.setdiff1d(du, dv, assume_unique=True), np.setdiff1d(u, v, True))  # unsorted
    check(ember.setxor1d(du, dv, assume_unique=True), np.setxor1d(u, v, True))
    check(ember.intersect1d(du, [4, 7]), np.intersect1d(u, [4, 7]))


# --------------------------------------------------------------------- partition, lexsort
def test_partition(backend):
    x = sample("float64", (4, 9))
    x[1, 3] = x[2, 0] = np.nan
    x[0, :4] = 1.0  # ties
    d = E(x)
    for kth, axis in [(3, -1), ([0, -1], 1), (-2, 0), (5, None)]:
        got = ember.partition(d, kth, axis=axis)
        want = np.partition(x, kth, axis=axis)
        ks = np.atleast_1d(kth)  # NumPy's contract: the kth elements in their sorted places
        check(np.take(got.to_numpy(), ks, axis=axis), np.take(want, ks, axis=axis))
        check(got, np.sort(x, axis=axis))  # ember's partition is the full (stable) sort
        idx = ember.argpartition(d, kth, axis=axis)
        check(idx, np.argsort(x, axis=axis, kind="stable"))
    i = sample("int64", (10,), low=-3, high=3)
    check(ember.argpartition(E(i), 4), np.argsort(i, kind="stable"))
    check(ember.partition(E(i), -10), np.sort(i))
    d = E(i)
    for kth in (10, -11, [1, 17]):
        with pytest.raises(ValueError, match=r"ember.partition: kth=-?\d+ is out of bounds"):
            ember.partition(d, kth)
    with pytest.raises(ValueError, match="argpartition: kth=4 is out of bounds"):
        ember.argpartition(E(x), 4, axis=0)
    with pytest.raises(TypeError, match="kth must be an integer"):
        ember.partition(d, 1.5)
    with pytest.raises(ValueError, match="kind must be 'introselect'"):
        ember.partition(d, 1, kind="quicksort")
    with pytest.raises(ValueError, match="0-d"):
        ember.argpartition(d[:1].reshape(()), 0)


def test_lexsort(backend):
    k0 = sample("int64", (3, 8), low=0, high=2)
    k1 = sample("float64", (3, 8), seed=1).round()
    k1[0, 2] = k1[1, 5] = np.nan
    k2 = sample("int64", (3, 8), seed=2, low=0, high=1)
    for axis in (-1, 0):
        got = ember.lexsort([E(k0), E(k1), E(k2)], axis=axis)
        check(got, np.lexsort([k0, k1, k2], axis=axis))
    stacked = np.stack([k0[0], k2[0]])
    check(ember.lexsort(E(stacked)), np.lexsort(stacked))
    check(ember.lexsort([E(k1[0])]), np.lexsort([k1[0]]))
    with pytest.raises(ValueError, match="all keys need to be the same shape"):
        ember.lexsort([E(k0), E(k0[0])])
    with pytest.raises(TypeError, match="at least one key"):
        ember.lexsort([])


# --------------------------------------------------------------------- selections
def test_compress_extract(backend):
    x = sample("float64", (4, 5))
    d = E(x)
    for cond, axis in [([1, 0, 1, 1], 0), ([0, 1, 0, 0, 1], 1), ([True, False], 1),
                       ([0, 0, 1, 0, 0, 0], 0), ([1, 0, 1], None), ([0, 0, 0, 0], -2)]:  # fmt: skip
        c = np.array(cond, bool)
        check(ember.compress(E(c), d, axis=axis), np.compress(c, x, axis=axis))
    c = [True, False, True]  # a list, and a strided view
    check(ember.compress(c, d[:, ::-2], axis=1), np.compress(c, x[:, ::-2], axis=1))
    with pytest.raises(IndexError, match="ember.compress: the condition selects index 4"):
        ember.compress(E(np.array([0, 0, 0, 0, 1], bool)), d, axis=0)
    with pytest.raises(ValueError, match="condition must be 1-d"):
        ember.compress(E(np.ones((2, 2), bool)), d)
    cond = np.arange(20).reshape(4, 5) % 3 > 0
    check(ember.extract(E(cond), d), np.extract(cond, x))
    check(ember.extract(E(cond[:2]), d), np.extract(cond[:2], x))  # shorter condition
    check(ember.extract(E(cond == 9), d), np.extract(cond == 9, x))


def test_select(backend):
    x = sample("float64", (3, 4)).round()
    d = E(x)
    y = sample("float64", (4,))
    conds = [x < -2, x > 2, x == 0]  # (made on the host: fewer kernels to compile)
    dconds = [E(c) for c in conds]
    got = ember.select(dconds, [d, 7, E(y)], default=-1.5)  # a scalar; a broadcast choice
    check(got, np.select(conds, [x, 7, y], default=-1.5))
    check(ember.select(dconds[:2], [d, E(y)]), np.select(conds[:2], [x, y]))
    none, small = np.zeros((0, 4), bool), np.zeros((0, 4), np.int8)  # (empty: dtypes only)
    check(ember.select([E(none)], [E(small)], 100), np.select([none], [small], 100))  # weak
    with pytest.raises(ValueError, match="2 conditions and 1 choices"):
        ember.select(dconds[:2], [d])
    with pytest.raises(ValueError, match="at least one condition"):
        ember.select([], [])
    with pytest.raises(TypeError, match="condition 0 must be a bool ember array"):
        ember.select([d], [d])


def test_choose(backend):
    a = np.array([[0, 2, 1, 3], [1, 0, 2, 2], [3, 3, 0, 1]])
    cols = sample("float64", (4,))
    rows = sample("int64", (3, 1), seed=1, low=-9, high=9)
    choices = [np.arange(12).reshape(3, 4), cols, rows, 5]
    dchoices = [E(choices[0]), E(cols), E(rows), 5]
    check(ember.choose(E(a), dchoices), np.choose(a, choices))
    stacked = np.stack([choices[0], choices[0] * 10])
    check(ember.choose(E(a % 2), E(stacked)), np.choose(a % 2, stacked))
    bad = a - 1
    for mode in ("wrap", "clip"):
        check(ember.choose(E(bad), dchoices, mode=mode), np.choose(bad, choices, mode=mode))
    out = ember.zeros((3, 4), ember.float64)
    assert ember.choose(E(a), dchoices, out=out) is out
    check(out, np.choose(a, choices))
    with pytest.raises(ValueError, match="not a valid choice"):
        ember.choose(E(bad), dchoices).to_numpy()  # checked on the device
    with pytest.raises(ValueError, match="not a valid choice"):
        ember.choose(E(a + 1), dchoices).to_numpy()
    check(ember.choose(E(a), dchoices), np.choose(a, choices))  # the device stays usable
    with pytest.raises(ValueError, match="mode must be"):
        ember.choose(E(a), dchoices, mode="bogus")
    with pytest.raises(TypeError, match="must hold integers"):
        ember.choose(E(cols), dchoices)


# --------------------------------------------------------------------- in-place writes
def test_copyto(backend):
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    row = np.linspace(-1, 1, 6)
    for view in (lambda z: z, lambda z: z.T[::2]):  # a strided view: written through
        for src in (row[:4] if view(base).shape[1] == 4 else row, 2.5):
            for where in (True, "mask"):
                host, dev = base.copy(), E(base)
                mask = view(host) % 5 > 1 if where == "mask" else True
                on = src if isinstance(src, float) else E(src)
                np.copyto(view(host), src, where=mask)
                assert np.copyto(view(dev), on, where=mask if mask is True else E(mask)) is None
                check(dev, host)
    ints, host = E(np.arange(6)), np.arange(6)
    ember.copyto(ints, 3)  # a Python int into int64: NumPy's rule lets it
    np.copyto(host, 3)
    check(ints, host)
    ember.copyto(ints, E(np.full(6, 2.7)), casting="unsafe")  # truncated, as NumPy
    np.copyto(host, np.full(6, 2.7), casting="unsafe")
    check(ints, host)
    with pytest.raises(TypeError, match="from float64 to int64 according to the rule 'same_kind'"):
        ember.copyto(ints, E(np.ones(6)))
    with pytest.raises(TypeError, match="according to the rule 'same_kind'"):
        ember.copyto(ints, 1.5)  # NumPy's message, for a scalar
    with pytest.raises(ValueError):
        ember.copyto(ints, E(np.ones(4, np.int64)))  # does not broadcast to (6,)
    with pytest.raises(TypeError, match="where must be an array of bool"):
        ember.copyto(ints, 1, where=E(np.ones(6, np.int32)))
    check(ints, host)  # nothing written by the failures


def test_place_putmask(backend):
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    for values in ([-1.0, -2.0, -3.0], [7.5], np.arange(24.0) * -1):
        for view in (lambda z: z, lambda z: z.T[::2]):  # a strided view: written through
            for fn, npfn in ((ember.place, np.place), (ember.putmask, np.putmask)):
                host, dev = base.copy(), E(base)
                mask = view(host) % 5 > 1
                npfn(view(host), mask, values)
                assert fn(view(dev), E(mask), E(np.asarray(values))) is None
                check(dev, host)
    ints, host = E(np.arange(6)), np.arange(6)
    ember.place(ints, E(host > 2), [1.7, 2.2, -3.9])  # cast unsafely, as NumPy
    np.place(host, host > 2, [1.7, 2.2, -3.9])
    check(ints, host)
    ember.putmask(ints, E(np.arange(6) % 2 > 0), [10, 20, 30, 40])  # cycled by flat index
    np.putmask(host, np.arange(6) % 2 > 0, [10, 20, 30, 40])
    check(ints, host)
    ember.place(ints, E(host > 100), [])  # no true position: nothing to insert
    ember.putmask(ints, E(host > 0), [])
    check(ints, host)
    with pytest.raises(ValueError, match="ember.place: cannot insert from an empty array"):
        ember.place(ints, E(host > 1), [])
    with pytest.raises(ValueError, match="ember.putmask: mask and data must be the same size"):
        ember.putmask(ints, E(np.ones(5, bool)), 1)
    with pytest.raises(TypeError, match=r"ember.asarray\(x\)"):
        ember.place(np.arange(3), [True, False, True], [1])


def test_put_along_axis(backend):
    x = np.arange(20).reshape(4, 5)
    idx = np.array([[0, 4], [2, 3], [-1, 1], [3, 0]])  # (no repeats: which lands is unspecified)
    cases = [(idx, x[:, :2] * -1, 1), (idx[:, :1], np.array([[70], [80], [90], [99]]), 1),
             (np.array([[1, -4, 0, 2, 3]]), -5, 0)]  # fmt: skip
    for i, v, axis in cases:
        host, dev = x.copy(), E(x)
        np.put_along_axis(host, i, v, axis)
        ember.put_along_axis(dev, E(i), E(np.asarray(v)) if np.ndim(v) else v, axis)
        check(dev, host)
    host, dev = x.copy(), E(x)
    np.put_along_axis(host.T, np.array([[0, 1, 3]]), 1000, 1)
    ember.put_along_axis(dev.T, E(np.array([[0, 1, 3]])), 1000, 1)  # through a view
    check(dev, host)
    dev = E(x)  # axis=None: into the flattened (transposed) view, in C order
    want = x.T.copy()
    want.flat[[2, 7, -1]] = [-1, -2, -3]
    ember.put_along_axis(dev.T, E(np.array([2, 7, -1])), E(np.array([-1, -2, -3])), None)
    check(dev.T, want)
    with pytest.raises(ValueError, match="same number of dimensions"):
        ember.put_along_axis(dev, E(np.array([0])), 1, 1)
    with pytest.raises(IndexError):
        ember.put_along_axis(dev, E(np.array([[9]])), 1, 1)
        dev.to_numpy()


# --------------------------------------------------------------------- diagonals
def test_diagonal_diag_trace(backend):
    x = sample("int32", (3, 4, 5), low=-9, high=9)  # (its trace sums in int64, as NumPy's)
    d = E(x)
    for offset, a1, a2 in [(0, 0, 1), (1, 2, 0), (-1, 1, 2), (-2, -1, -3), (7, 0, 1)]:
        check(ember.diagonal(d, offset, a1, a2), np.diagonal(x, offset, a1, a2))
    for offset, a1, a2 in [(0, 0, 1), (1, 2, 0)]:  # (each layout: a sum kernel to compile)
        check(ember.trace(d, offset, a1, a2), np.trace(x, offset, a1, a2))
    m = sample("float64", (4, 6))
    dm = E(m)
    for k in (0, 2, -3, 9):
        check(ember.diag(dm, k), np.diag(m, k))
        check(ember.diag(dm[0], k), np.diag(m[0], k))
    check(ember.diag(dm[:, 1][::-1]), np.diag(m[:, 1][::-1]))
    out = ember.zeros((5,), ember.int64)
    assert ember.trace(d, out=out) is out
    check(out, np.trace(x))
    view = ember.diagonal(dm)  # a view: writes reach the matrix
    view[...] = E(-m[0, :4])
    np.fill_diagonal(m, -m[0, :4])
    check(dm, m)
    with pytest.raises(ValueError, match="axis1 and axis2 cannot be the same"):
        ember.diagonal(d, 0, 1, -2)
    with pytest.raises(ValueError, match="ember.diagonal: needs at least 2 dimensions"):
        ember.diagonal(dm[0])
    with pytest.raises(ValueError, match="ember.diag: input must be 1- or 2-d"):
        ember.diag(d)
