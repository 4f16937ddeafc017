"""Statistics and counting functions against NumPy: quantiles (every method, nan forms,
q arrays, axes, keepdims, out=), median, average, ptp, bincount (atomic and sort-based
counting), histogram, digitize, nancumsum/nancumprod, cov and corrcoef, with their errors.

Each distinct kernel compiles once per run (CI's cpu budget): the cases share dtypes and
fold many checks into one test rather than parametrizing widely."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from array_common import check, sample

import ember
from ember.array import stats

METHODS = list(stats.METHODS)


def _with_nans(shape=(4, 9), dtype="float64", seed=1):
    x = sample(dtype, shape, seed)
    x[1, 2] = np.nan
    x[2, :] = np.nan
    return x


def test_quantile_every_method_and_nan_form(backend):
    x = _with_nans()
    x[3, 4] = x[3, 5]  # a tie
    d = ember.asarray(x)
    for method in METHODS:
        for q in (0.0, 0.37, 0.5, 1.0, [0.05, 0.25, 0.5, 0.999]):
            for fn in ("quantile", "nanquantile"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    expected = getattr(np, fn)(x, q, axis=1, method=method)
                check(getattr(ember, fn)(d, q, axis=1, method=method), expected)


def test_quantile_boundaries_where_n_times_q_is_whole(backend):
    # NumPy rounds n * q before subtracting 1; one fused multiply-add did not, so
    # 10 * 0.1 - 1 was 5.6e-17 and inverted_cdf took the next element (1.0, not 0.0)
    q = np.round(np.arange(0, 1.0001, 0.05), 2)
    for n in (3, 5, 10, 20, 30):
        x = np.arange(float(n))
        d = ember.asarray(x)
        for method in METHODS:
            check(ember.quantile(d, ember.asarray(q), method=method),
                  np.quantile(x, q, method=method))  # fmt: skip
    check(ember.percentile(ember.asarray(np.arange(10.0)), 10, method="inverted_cdf"), 0.0)


def test_quantile_dtypes_q_arrays_and_axes(backend):
    f32 = sample("float32", (3, 4, 5), 2)
    i16 = sample("int32", (6, 7), 3, low=-50, high=50)
    d32, di = ember.asarray(f32), ember.asarray(i16)
    # weak Python q keeps float32; a float64 array q promotes; discrete methods keep ints
    check(ember.quantile(d32, 0.3, axis=(0, 2)), np.quantile(f32, 0.3, axis=(0, 2)))
    q = np.array([[0.2, 0.9], [0.5, 0.1]])
    check(ember.quantile(d32, q, axis=-1, keepdims=True),
          np.quantile(f32, q, axis=-1, keepdims=True))  # fmt: skip
    check(ember.quantile(d32, ember.asarray(q[0]), axis=1), np.quantile(f32, q[0], axis=1))
    check(ember.quantile(di, 0.3), np.quantile(i16, 0.3))
    check(ember.quantile(di, [0.3, 0.8], axis=0, method="nearest"),
          np.quantile(i16, [0.3, 0.8], axis=0, method="nearest"))  # fmt: skip
    check(ember.quantile(di, 1, axis=1), np.quantile(i16, 1, axis=1))  # integer q: int32
    check(ember.percentile(di, [10, 50, 95], axis=1), np.percentile(i16, [10, 50, 95], axis=1))
    check(ember.nanpercentile(d32, 40.0, axis=None, keepdims=True),
          np.nanpercentile(f32, 40.0, axis=None, keepdims=True))  # fmt: skip
    check(ember.percentile(di, 25, method="lower"), np.percentile(i16, 25, method="lower"))
    out = ember.empty((5,), ember.float32)
    assert ember.quantile(d32, 0.5, axis=(0, 1), out=out) is out
    check(out, np.quantile(f32, 0.5, axis=(0, 1)))


def test_median_and_nanmedian(backend):
    x = _with_nans((5, 8), seed=4)
    d = ember.asarray(x)
    for axis in (None, 0, 1, (0, 1)):
        check(ember.median(d, axis=axis), np.median(x, axis=axis))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            check(ember.nanmedian(d, axis=axis, keepdims=True),
                  np.nanmedian(x, axis=axis, keepdims=True))  # fmt: skip
    for dt in ("int32", "bool", "float32"):
        h = sample(dt, (3, 6), 5)
        check(ember.median(ember.asarray(h), axis=1), np.median(h, axis=1))
    h = sample("float16", (7,), 6)
    check(ember.median(ember.asarray(h)), np.median(h))
    check(ember.median(ember.asarray(np.float64(2.5))), np.median(np.float64(2.5)))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_weighted_quantiles(backend, dtype):
    # NumPy 2's weights= (method="inverted_cdf"): the first sorted element whose cumulative
    # weight reaches q; weights of a's shape or of a's shape along the axis
    rng = np.random.default_rng(8)
    a = (rng.standard_normal((4, 7)) * 9).astype(dtype)
    if dtype != "int32":
        a[2, 3] = np.nan  # that row's quantiles are NaN, as NumPy's
    d = ember.asarray(a)
    full, along = rng.random((4, 7)), rng.integers(0, 3, 7).astype(np.float64)
    along[0] = 0.0  # a leading zero weight: q = 0 takes the first element of positive weight
    for q in (0.0, 0.3, 0.5, [0.1, 1.0]):
        for axis, w in ((1, full), (1, along), (None, full), (0, full)):
            kw = dict(axis=axis, weights=w, method="inverted_cdf")
            got = ember.quantile(d, q, **kw, keepdims=axis == 0)
            want = np.quantile(a, q, **kw, keepdims=axis == 0)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got.to_numpy(), want)
    got = ember.percentile(d, 40, axis=1, weights=ember.asarray(full), method="inverted_cdf")
    want = np.percentile(a, 40, axis=1, weights=full, method="inverted_cdf")
    np.testing.assert_array_equal(got.to_numpy(), want)
    bad = dict(method="inverted_cdf")
    with pytest.raises(ValueError, match="weights must be non-negative"):
        ember.quantile(d, 0.5, axis=1, weights=-along, **bad)
    with pytest.raises(ValueError, match="were all zero"):
        ember.quantile(d, 0.5, axis=1, weights=np.zeros(7), **bad)
    with pytest.raises(TypeError, match="axis must be given"):
        ember.quantile(d, 0.5, weights=along, **bad)
    with pytest.raises(ValueError, match="shape of weights"):
        ember.quantile(d, 0.5, axis=0, weights=along, **bad)


def test_weighted_quantile_never_takes_a_trailing_zero_weight(backend):
    # q = 1 takes the last element of positive weight: the cumulative weights after it must
    # equal it exactly (a tree-order scan rounded them differently: 17 of these 64 rows took
    # a zero-weight element)
    rng = np.random.default_rng(4)
    a = np.sort(rng.standard_normal((64, 40)), axis=1)
    w = rng.random((64, 40))
    w[:, 29:] = 0.0
    kw = dict(axis=1, weights=w, method="inverted_cdf")
    got = ember.quantile(ember.asarray(a), [0.999, 1.0], **kw)
    np.testing.assert_array_equal(got.to_numpy(), np.quantile(a, [0.999, 1.0], **kw))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_weighted_nan_quantiles(backend, dtype):
    # nanquantile/nanpercentile with weights= drop NaNs with their weights (NumPy 2); rows:
    # a NaN among values, leading zero weights, only NaNs (NaN and NumPy's warning), none
    rng = np.random.default_rng(9)
    a = (rng.standard_normal((5, 8)) * 9).astype(dtype)
    a[0, [1, 5]] = np.nan
    a[1, 0] = np.nan
    a[2] = np.nan
    w = rng.random((5, 8))
    w[1, 1:3] = 0.0  # q = 0 skips the zero weights after the NaN's
    w[0, 1] = 50.0  # a NaN's weight, however large, counts for nothing
    d = ember.asarray(a)
    for q in (0.0, 0.25, 0.5, 1.0, [0.1, 0.9]):
        for keepdims in (False, True):
            kw = dict(axis=1, weights=w, method="inverted_cdf", keepdims=keepdims)
            with pytest.warns(RuntimeWarning, match="All-NaN slice encountered"):
                got = ember.nanquantile(d, q, **kw)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want = np.nanquantile(a, q, **kw)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got.to_numpy(), want)
    kw = dict(axis=1, weights=w[[0, 1, 3]], method="inverted_cdf")
    got = ember.nanpercentile(ember.asarray(a[[0, 1, 3]]), [30, 70], **kw)
    np.testing.assert_array_equal(got.to_numpy(), np.nanpercentile(a[[0, 1, 3]], [30, 70], **kw))
    # weights along the axis only (NumPy 2.4's nanquantile fails there: compared with the
    # rows one by one)
    along = rng.random(8)
    got = ember.nanquantile(d[[0, 1, 3]], 0.4, axis=1, weights=along, method="inverted_cdf")
    want = [np.nanquantile(a[r], 0.4, weights=along, method="inverted_cdf") for r in (0, 1, 3)]
    np.testing.assert_array_equal(got.to_numpy(), np.array(want, dtype))
    zero = w.copy()
    zero[3] = np.where(np.isnan(a[3]), 1.0, 0.0)  # values there, but all of weight zero
    with pytest.raises(ValueError, match="were all zero"):
        ember.nanquantile(d, 0.5, axis=1, weights=zero, method="inverted_cdf")


def test_quantile_errors_and_empty_input(backend):
    d = ember.asarray(np.arange(6.0))
    with pytest.raises(ValueError, match=r"ember.quantile: Quantiles must be in the range"):
        ember.quantile(d, 1.5)
    with pytest.raises(ValueError, match=r"Percentiles must be in the range \[0, 100\]"):
        ember.percentile(d, [50, -1])
    with pytest.raises(ValueError, match="Quantiles must be in the range"):
        ember.quantile(d, ember.asarray(np.array([0.5, 2.0])))
    with pytest.raises(ValueError, match="'foo' is not a valid method; use one of"):
        ember.quantile(d, 0.5, method="foo")
    with pytest.raises(ValueError, match="only method 'inverted_cdf' supports weights"):
        ember.quantile(d, 0.5, weights=d)
    with pytest.raises(TypeError, match=r"ember.quantile needs device memory"):
        ember.quantile(np.arange(3.0), 0.5)
    with pytest.raises(TypeError, match="boolean input cannot be subtracted"):
        ember.quantile(ember.asarray(np.array([True, False])), 0.5)
    with pytest.raises(ValueError, match="q must be a scalar or 1d"):
        ember.quantile(d, np.full((2, 2, 2), 0.5))
    empty = ember.asarray(np.zeros((3, 0)))
    with pytest.raises(IndexError, match="empty slice"):
        ember.quantile(empty, 0.5, axis=1)
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        res = ember.median(empty, axis=1)
    check(res, np.full(3, np.nan))
    check(ember.median(empty, axis=0), np.median(np.zeros((3, 0)), axis=0))


def test_average_and_ptp(backend):
    x = sample("float64", (4, 6), 7)
    i = sample("int32", (4, 6), 8, low=-20, high=20)
    w = sample("float64", (6,), 9, low=0.1, high=5) + 0.2
    dx, di, dw = ember.asarray(x), ember.asarray(i), ember.asarray(w)
    check(ember.average(dx), np.average(x))
    check(ember.average(dx, axis=1, keepdims=True), np.average(x, axis=1, keepdims=True))
    check(ember.average(di, axis=1, weights=dw), np.average(i, axis=1, weights=w))
    avg, scl = ember.average(dx, axis=1, weights=dw, returned=True)
    e_avg, e_scl = np.average(x, axis=1, weights=w, returned=True)
    check(avg, e_avg)
    check(scl, e_scl)
    ww = np.abs(x) + 0.5
    check(ember.average(dx, axis=(0, 1), weights=ember.asarray(ww)),
          np.average(x, axis=(0, 1), weights=ww))  # fmt: skip
    with pytest.raises(ZeroDivisionError, match="weights sum to zero"):
        ember.average(dx, axis=1, weights=ember.zeros(6))
    with pytest.raises(TypeError, match="axis must be specified"):
        ember.average(dx, weights=dw)
    with pytest.raises(ValueError, match="shape of weights"):
        ember.average(dx, axis=0, weights=dw)
    check(ember.ptp(dx, axis=1, keepdims=True), np.ptp(x, axis=1, keepdims=True))
    check(ember.ptp(dx), np.ptp(x))
    with pytest.raises(TypeError, match="ember.ptp: boolean"):
        ember.ptp(ember.asarray(np.array([True, False])))


def test_bincount_of_many_values_counts_in_shared_memory_or_with_global_atomics(backend):
    # few bins: each block counts in shared memory and adds its bins; many bins (past half
    # the block's shared memory): one global atomic per value.  Both over many blocks, with
    # values outside [0, length) skipped (the histogram's -1)
    rng = np.random.default_rng(12)
    few = rng.integers(0, 7, 50_001)
    check(ember.bincount(ember.asarray(few)), np.bincount(few))
    many = rng.integers(0, 40_000, 30_000)
    check(ember.bincount(ember.asarray(many)), np.bincount(many))
    idx = rng.integers(-3, 12, 20_000)
    check(stats.count(ember.asarray(idx), None, 9), np.bincount(idx[(idx >= 0) & (idx < 9)],
                                                                minlength=9))  # fmt: skip
    # histogram: bins and counts in one kernel (uniform bins, and uneven edges searched)
    a = rng.normal(size=60_001)
    for bins in (37, np.array([-3.0, -1.0, -0.5, 0.0, 0.1, 2.0, 2.5])):
        got, edges = ember.histogram(ember.asarray(a), bins=ember.asarray(bins) if
                                     isinstance(bins, np.ndarray) else bins)  # fmt: skip
        want, want_edges = np.histogram(a, bins=bins)
        check(got, want)
        check(edges, want_edges)


def test_bincount(backend):
    x = sample("int32", (300,), 10, low=0, high=40)
    w = sample("float32", (300,), 11)
    dx = ember.asarray(x)
    check(ember.bincount(dx), np.bincount(x))
    check(ember.bincount(dx, minlength=50), np.bincount(x, minlength=50))
    check(ember.bincount(dx, weights=ember.asarray(w)), np.bincount(x, weights=w), rtol=1e-12)
    check(ember.bincount(ember.asarray(np.zeros(0, np.int32)), minlength=3),
          np.bincount(np.zeros(0, np.int32), minlength=3))  # fmt: skip
    strided = x[::3]  # a view: the kernel reads through strides
    check(ember.bincount(dx[::3]), np.bincount(strided))
    # the path without 64-bit atomics, forced: a sort, a search, per-bin sums in order
    idx = np.concatenate([x, [-1, 45, 45]]).astype(np.int64)
    ww = np.concatenate([w, [1.0, 2.0, 3.0]])
    check(stats.count_sorted(ember.asarray(idx), None, 41), np.bincount(x, minlength=41))
    check(stats.count_sorted(ember.asarray(idx), ember.asarray(ww), 41),
          np.bincount(x, weights=w, minlength=41), rtol=1e-12)  # fmt: skip
    with pytest.raises(ValueError, match="must be non-negative, got a minimum of -2"):
        ember.bincount(ember.asarray(np.array([1, -2, 3], np.int32)))
    with pytest.raises(TypeError, match="x must hold integers, got float64"):
        ember.bincount(ember.asarray(np.array([1.0, 2.0])))
    with pytest.raises(ValueError, match="'minlength' must not be negative"):
        ember.bincount(dx, minlength=-1)
    with pytest.raises(ValueError, match="same length"):
        ember.bincount(dx, weights=ember.asarray(w[:5]))
    with pytest.raises(ValueError, match="must be 1-d"):
        ember.bincount(ember.asarray(x.reshape(30, 10)))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int16", "uint8"])
def test_histogram_bin_estimators(backend, dtype):
    # NumPy's estimators: the width from a few statistics read back, computed with NumPy's
    # expressions on scalars of the data's dtype, so the bin counts are NumPy's
    rng = np.random.default_rng(17)
    a = (rng.standard_normal(900) * 40).astype(dtype) if dtype.startswith("float") else (
        rng.integers(0, 90, 900).astype(dtype))  # fmt: skip
    d = ember.asarray(a)
    for est in ("auto", "doane", "fd", "rice", "scott", "sqrt", "stone", "sturges"):
        for rg in (None, (float(np.percentile(a, 20)), float(np.percentile(a, 70)))):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # stone: "may be suboptimal"
                hist, edges = ember.histogram(d, bins=est, range=rg)
                want_hist, want_edges = np.histogram(a, bins=est, range=rg)
            assert edges.shape == want_edges.shape, est
            check(edges, want_edges)
            check(hist, want_hist)
    flat = np.full(7, 2.0, dtype)  # zero spread: one bin, as NumPy
    check(ember.histogram_bin_edges(ember.asarray(flat), "fd"), np.histogram_bin_edges(flat, "fd"))


def test_histogram(backend):
    a = sample("float64", (400,), 12)
    a[:3] = [a.min(), a.max(), a.max()]  # values on the outer edges
    w = sample("float64", (400,), 13, low=0, high=3)
    da, dw = ember.asarray(a), ember.asarray(w)
    for kw in ({}, {"bins": 7, "range": (-2.0, 1.5)}, {"bins": [-3, -1, 0, 0, 0.5, 2.5]},
               {"bins": 5, "weights": w}, {"bins": 6, "density": True}):  # fmt: skip
        args = {k: ember.asarray(v) if k == "weights" else v for k, v in kw.items()}
        hist, edges = ember.histogram(da, **args)
        e_hist, e_edges = np.histogram(a, **kw)
        check(hist, e_hist, rtol=1e-12)
        check(edges, e_edges)
    i32 = sample("int32", (5, 10), 15, low=-10, high=30)
    hist, edges = ember.histogram(ember.asarray(i32), bins=9)
    check(hist, np.histogram(i32, bins=9)[0])
    check(edges, np.histogram(i32, bins=9)[1])
    iw = sample("int32", (400,), 16, low=0, high=5)
    check(ember.histogram(da, bins=[-1.0, 0, 1], weights=ember.asarray(iw))[0],
          np.histogram(a, bins=[-1.0, 0, 1], weights=iw)[0])  # fmt: skip
    check(ember.histogram_bin_edges(da, bins=4, range=(0, 1)),
          np.histogram_bin_edges(a, bins=4, range=(0, 1)))  # fmt: skip
    const = ember.asarray(np.full(5, 3.0))
    check(ember.histogram(const, bins=2)[0], np.histogram(np.full(5, 3.0), bins=2)[0])
    with pytest.raises(ValueError, match="'bogus' is not a valid estimator"):
        ember.histogram(da, bins="bogus")
    with pytest.raises(TypeError, match="not supported for weighted data"):
        ember.histogram(da, bins="auto", weights=ember.asarray(iw))
    with pytest.raises(ValueError, match="must increase monotonically"):
        ember.histogram(da, bins=[0, 2, 1])
    with pytest.raises(ValueError, match="autodetected range of \\[nan, nan\\] is not finite"):
        ember.histogram(ember.asarray(np.array([1.0, np.nan])))
    with pytest.raises(ValueError, match="max must be larger than min"):
        ember.histogram(da, range=(1, 0))
    with pytest.raises(ValueError, match="same shape as a"):
        ember.histogram(da, weights=dw[:10])
    with pytest.raises(ValueError, match="`bins` must be positive"):
        ember.histogram(da, bins=0)


def test_digitize(backend):
    x = sample("float64", (50,), 17)
    x[:4] = [-1.0, 0.0, 1.0, np.nan]
    dx = ember.asarray(x)
    for bins in ([-1.0, 0.0, 0.5, 1.0], [1.0, 0.5, 0.0, -1.0], [0.0, 0.0, 1.0], [2.0]):
        for right in (False, True):
            check(ember.digitize(dx, bins, right=right), np.digitize(x, bins, right=right))
    ix = sample("int32", (20,), 18, low=-5, high=5)
    check(ember.digitize(ember.asarray(ix), ember.asarray(np.array([-2, 0, 3]))),
          np.digitize(ix, [-2, 0, 3]))  # fmt: skip
    with pytest.raises(ValueError, match="monotonically increasing or decreasing"):
        ember.digitize(dx, [0.0, 1.0, 0.5])
    with pytest.raises(TypeError, match="ember.digitize needs device memory"):
        ember.digitize(x, [0.0, 1.0])


def test_nancumsum_and_nancumprod(backend):
    x = _with_nans((3, 5), seed=19)
    d = ember.asarray(x)
    check(ember.nancumsum(d), np.nancumsum(x))
    check(ember.nancumprod(d, axis=1), np.nancumprod(x, axis=1))
    i = sample("int32", (3, 5), 20, low=-3, high=3)
    check(ember.nancumsum(ember.asarray(i), axis=1), np.nancumsum(i, axis=1))


def test_cov_of_one_row_with_rowvar_false(backend):
    # NumPy 2 transposes every 2-d input: a (1, 3) matrix is 3 variables of one
    # observation (a (3, 3) result of NaN), not one variable (a scalar)
    m = np.array([[1.0, 2.0, 4.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for fn in ("cov", "corrcoef"):
            got, want = (
                getattr(ember, fn)(ember.asarray(m), rowvar=False),
                getattr(np, fn)(m, rowvar=False),
            )
            assert got.shape == want.shape
            check(got, want)


def test_nanvar_with_too_few_degrees_of_freedom_is_nan(backend):
    x = np.arange(8.0).reshape(2, 4)
    x[0, 1] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for ddof in (3, 4, 5):  # NumPy: nanvar NaN where var gives inf
            check(
                ember.nanvar(ember.asarray(x), axis=1, ddof=ddof), np.nanvar(x, axis=1, ddof=ddof)
            )
            check(
                ember.nanstd(ember.asarray(x), axis=1, ddof=ddof), np.nanstd(x, axis=1, ddof=ddof)
            )


def test_cov_and_corrcoef(backend):
    m = sample("float64", (3, 8), 21)
    y = sample("float64", (2, 8), 22)
    f = np.array([1, 2, 1, 3, 1, 1, 2, 1])
    aw = sample("float64", (8,), 23, low=0.1, high=2) + 0.2
    dm, dy = ember.asarray(m), ember.asarray(y)
    check(ember.cov(dm), np.cov(m))
    check(ember.cov(dm, dy), np.cov(m, y))
    check(ember.cov(ember.asarray(m.T.copy()), rowvar=False, bias=True),
          np.cov(m.T, rowvar=False, bias=True))  # fmt: skip
    check(ember.cov(dm, ddof=0, fweights=ember.asarray(f)), np.cov(m, ddof=0, fweights=f))
    check(ember.cov(dm, fweights=f, aweights=ember.asarray(aw)),
          np.cov(m, fweights=f, aweights=aw))  # fmt: skip
    check(ember.cov(dm[0]), np.cov(m[0]))  # one variable: 0-d
    check(ember.corrcoef(dm), np.corrcoef(m))
    check(ember.corrcoef(dm, dy, rowvar=True), np.corrcoef(m, y))
    with pytest.raises(ValueError, match="more than 2 dimensions"):
        ember.cov(ember.asarray(np.zeros((2, 2, 2))))
    with pytest.raises(ValueError, match="fweights cannot be negative"):
        ember.cov(dm, fweights=-f)
    with pytest.raises(RuntimeError, match="incompatible numbers of samples and aweights"):
        ember.cov(dm, aweights=aw[:3])
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        ember.cov(ember.asarray(np.ones((2, 1))))


def test_histogram_with_complex_weights(backend):
    # NumPy's histogram takes complex weights: the real and imaginary parts counted apart
    # (here each in float64: NumPy's complex64 sums of explicit bins round more)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(1000)
    w = rng.standard_normal(1000) + 1j * rng.standard_normal(1000)
    for dt, rtol in ((np.complex128, 1e-12), (np.complex64, 1e-5)):
        for bins in (10, np.linspace(-3, 3, 7)):
            for density in (False, True):
                b = bins if np.isscalar(bins) else ember.asarray(bins)
                got, edges = ember.histogram(ember.asarray(x), bins=b, density=density,
                                             weights=ember.asarray(w.astype(dt)))  # fmt: skip
                exact = w.astype(dt).astype(np.complex128)
                want, want_edges = np.histogram(x, bins=bins, density=density, weights=exact)
                assert got.dtype == np.histogram(x, bins=bins, density=density,
                                                 weights=w.astype(dt))[0].dtype  # fmt: skip
                np.testing.assert_allclose(got.to_numpy(), want, rtol=rtol, atol=1e-5)
                np.testing.assert_allclose(edges.to_numpy(), want_edges)
