"""ember.array.signal against NumPy on every backend: convolve/correlate (modes, odd and
even lengths, v longer than a, complex, strided views, the FFT path), interp, gradient,
trapezoid, unwrap, cross and the polynomial functions, with their errors.

Few dtypes on purpose (float64, one float32, complex128, one integer case): each kernel
specialization compiles once per run, and the suite must stay fast on a 2-core CPU."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from array_common import check, sample

import ember
from ember.array import signal

pytestmark = pytest.mark.filterwarnings("ignore::ember.EmberPerformanceWarning")
E = ember.asarray
PAIRS = [(5, 3), (3, 5), (4, 4), (6, 2), (2, 7), (1, 1)]


def crandn(n, seed=0):
    return sample("complex128", (n,), seed=seed)


# --------------------------------------------------------------------- convolve
def test_convolve_and_correlate_modes(backend):
    for k, (n, m) in enumerate(PAIRS):
        a, v = sample("float64", (n,), seed=k), sample("float64", (m,), seed=k + 9)
        ac, vc = crandn(n, k), crandn(m, k + 9)
        for mode in ("full", "same", "valid"):
            check(ember.convolve(E(a), E(v), mode), np.convolve(a, v, mode))
            check(ember.correlate(E(ac), E(vc), mode), np.correlate(ac, vc, mode))
    check(ember.convolve(E(a), E(v)), np.convolve(a, v))  # default full
    check(ember.correlate(E(ac), E(vc)), np.correlate(ac, vc))  # default valid
    check(ember.correlate(E(a), E(vc), "same"), np.correlate(a, vc, "same"))  # mixed


def test_convolve_strided_and_dtypes(backend):
    a, v = sample("float64", (17,)), sample("float64", (9,), seed=1)
    da, dv = E(a), E(v)
    check(ember.convolve(da[::2], dv[::-1], "same"), np.convolve(a[::2], v[::-1], "same"))
    check(ember.correlate(dv[1::3], da[::-3], "full"), np.correlate(v[1::3], a[::-3], "full"))
    i, j = sample("int32", (6,), low=-50, high=50), sample("int8", (3,), low=-5, high=5)
    check(ember.convolve(E(i), E(j)), np.convolve(i, j), exact=True)
    f = sample("float32", (8,))
    check(ember.convolve(E(f), E(f[:3]), "valid"), np.convolve(f, f[:3], "valid"), rtol=1e-5)
    b = np.array([True, False, False, True])
    check(ember.convolve(E(b), E(b[:2])), np.convolve(b, b[:2]))
    check(ember.convolve(E(np.float64(2.5)), dv), np.convolve(2.5, v))  # 0-d as length 1


@pytest.mark.slow  # ember.fft's kernels: compiled by test_fft.py in CI, ~2.5 s alone
@pytest.mark.parametrize("n, m", [(9, 5), (4, 7)])
def test_convolve_fft_path(backend, monkeypatch, n, m):
    a, v = sample("float64", (n,)), sample("float64", (m,), seed=1)
    ac, vc = crandn(n), crandn(m, 1)
    monkeypatch.setattr(signal, "FFT_RATIO", 0)  # every float convolution through ember.fft
    for mode in ("full", "same", "valid"):
        check(ember.convolve(E(a), E(v), mode), np.convolve(a, v, mode), rtol=1e-12)
    check(ember.correlate(E(ac), E(vc), "same"), np.correlate(ac, vc, "same"), rtol=1e-12)
    i = np.arange(5)  # integers stay exact, on the direct path
    check(ember.convolve(E(i), E(i)), np.convolve(i, i), exact=True)


def test_convolve_errors(backend):
    a = E(np.ones(3))
    with pytest.raises(ValueError, match="ember.convolve: mode must be"):
        ember.convolve(a, a, "middle")
    with pytest.raises(ValueError, match="ember.correlate: v cannot be empty"):
        ember.correlate(a, E(np.ones(0)))
    with pytest.raises(ValueError, match="ember.convolve: a must be 1-d"):
        ember.convolve(E(np.ones((2, 2))), a)
    with pytest.raises(TypeError, match=r"ember.convolve needs device memory.*ember.asarray"):
        ember.convolve(np.ones(3), a)


# --------------------------------------------------------------------- interp
def test_interp(backend):
    xp = np.array([0.0, 1.0, 2.5, 4.0, 4.5])
    fp = sample("float64", (5,))
    x = np.array([[-1, 0, 0.3, 1], [2.5, 4.4, 4.5, 9], [np.nan, 3, 1.7, -0.0]])
    check(ember.interp(E(x), E(xp), E(fp)), np.interp(x, xp, fp))
    check(ember.interp(E(x).T, E(xp), E(fp)), np.interp(x.T, xp, fp))  # strided x
    check(ember.interp(E(x), E(xp), E(fp), left=-7.0, right=8), np.interp(x, xp, fp, -7.0, 8))
    fc = crandn(5)
    check(ember.interp(E(x), E(xp), E(fc), right=2j), np.interp(x, xp, fc, right=2j))
    x32 = x.astype(np.float32)
    check(ember.interp(E(x32), E(xp), E(fp)), np.interp(x32, xp, fp))  # float64 result
    check(ember.interp(2.0, E(xp), E(fp)), np.interp(2.0, xp, fp))
    xi = np.array([0.0, 1.0]), np.array([0.0, np.inf])
    check(ember.interp(E(np.array([0.5, 1.0])), E(xi[0]), E(xi[1])),
          np.interp([0.5, 1.0], *xi))  # fmt: skip


@pytest.mark.slow  # argsort's and take's kernels, ~1.2 s alone
def test_interp_period(backend):
    xp, fp = np.array([4.0, 0.5, 2.5, 1.0]), sample("float64", (4,))
    x = np.array([-1, 0, 0.3, 1, 2.9, 3.0, 7.5, np.nan])
    check(ember.interp(E(x), E(xp), E(fp), period=3.0), np.interp(x, xp, fp, period=3.0))
    check(ember.interp(E(x), E(xp), E(fp), period=-3), np.interp(x, xp, fp, period=-3))


def test_interp_errors(backend):
    xp = E(np.arange(3.0))
    with pytest.raises(ValueError, match="ember.interp: fp and xp are not of the same length"):
        ember.interp(xp, xp, E(np.ones(2)))
    with pytest.raises(ValueError, match="ember.interp: the array of sample points xp is empty"):
        ember.interp(xp, xp[:0], xp[:0])
    with pytest.raises(ValueError, match="ember.interp: period must be a non-zero"):
        ember.interp(xp, xp, xp, period=0)
    with pytest.raises(ValueError, match="must be 1-d"):
        ember.interp(xp, E(np.ones((3, 1))), xp)


# --------------------------------------------------------------------- gradient
def _same(actual, expected, rtol=None):
    if isinstance(expected, tuple | list):
        assert isinstance(actual, tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            check(a, e, rtol=rtol)
    else:
        check(actual, expected, rtol=rtol)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient(backend, edge_order):
    f = sample("float64", (5, 6))
    co0, co1 = np.cumsum(np.arange(1.0, 6.0) ** 1.5), np.array([0, 1, 3, 4, 8, 9])
    g = {"edge_order": edge_order}
    _same(ember.gradient(E(f), **g), np.gradient(f, **g))
    _same(ember.gradient(E(f), 0.5, **g), np.gradient(f, 0.5, **g))
    _same(ember.gradient(E(f), 2.0, E(co1), **g), np.gradient(f, 2.0, co1, **g), rtol=1e-12)
    _same(ember.gradient(E(f), E(co0), 3.0, **g), np.gradient(f, co0, 3.0, **g), rtol=1e-12)
    _same(ember.gradient(E(f).T, axis=-1, **g), np.gradient(f.T, axis=-1, **g))
    _same(ember.gradient(E(f), E(co1), axis=(1,), **g), np.gradient(f, co1, axis=(1,), **g),
          rtol=1e-12)  # fmt: skip
    i = sample("int32", (7,), low=-9, high=9)
    _same(ember.gradient(E(i), **g), np.gradient(i, **g))  # float64
    f32 = f[:, 0].astype(np.float32)
    _same(ember.gradient(E(f32), 2.0, **g), np.gradient(f32, 2.0, **g), rtol=1e-6)


def test_gradient_errors(backend):
    f = E(np.ones((4, 2)))
    with pytest.raises(ValueError, match="at least edge_order"):
        ember.gradient(f, edge_order=2)
    with pytest.raises(TypeError, match="3 spacings for 2 axes"):
        ember.gradient(f, 1.0, 2.0, 3.0)
    with pytest.raises(ValueError, match=r"coordinates of shape \(3,\) for axis 0 of length 4"):
        ember.gradient(f, E(np.arange(3.0)), axis=0)
    with pytest.raises(ValueError, match="edge_order must be 1 or 2"):
        ember.gradient(f, edge_order=3)
    with pytest.raises(ValueError, match="ember.gradient: axis 2 is out of bounds"):
        ember.gradient(f, axis=2)


# --------------------------------------------------------------------- trapezoid, unwrap
def test_trapezoid(backend):
    y = sample("float64", (4, 6))
    x1 = np.cumsum(np.arange(1.0, 7.0))
    x2 = np.cumsum(sample("float64", (4, 6), seed=2) ** 2, axis=0)
    check(ember.trapezoid(E(y)), np.trapezoid(y))
    check(ember.trapezoid(E(y), dx=0.5, axis=0), np.trapezoid(y, dx=0.5, axis=0))
    check(ember.trapezoid(E(y), E(x1)), np.trapezoid(y, x1))
    check(ember.trapezoid(E(y), E(x2), axis=0), np.trapezoid(y, x2, axis=0))
    check(ember.trapezoid(E(y)[:, ::-2]), np.trapezoid(y[:, ::-2]))
    i = np.arange(10, dtype=np.int64) ** 2
    check(ember.trapezoid(E(i)), np.trapezoid(i))
    with pytest.raises(ValueError, match="ember.trapezoid: x has 5 points"):
        ember.trapezoid(E(y), E(np.arange(5.0)))


def test_unwrap(backend):
    rng = np.random.default_rng(3)
    p = np.cumsum(rng.standard_normal((3, 25)) * 2, axis=1)
    w = (p + np.pi) % (2 * np.pi) - np.pi
    check(ember.unwrap(E(w)), np.unwrap(w), rtol=1e-12)
    check(ember.unwrap(E(w.T), axis=0), np.unwrap(w.T, axis=0), rtol=1e-12)
    check(ember.unwrap(E(w), discont=4.0), np.unwrap(w, discont=4.0), rtol=1e-12)
    deg = np.rad2deg(w[0])
    check(ember.unwrap(E(deg), period=360), np.unwrap(deg, period=360), rtol=1e-12)
    i = np.array([1, 2, 3, 4, 5, 6, 1, 2, 3], dtype=np.int64)
    check(ember.unwrap(E(i), period=6), np.unwrap(i, period=6), exact=True)
    half = np.array([0.0, np.pi, 0.0, -np.pi, 3 * np.pi])  # jumps of exactly period / 2
    check(ember.unwrap(E(half)), np.unwrap(half))
    check(ember.unwrap(E(i[:4] * 3), period=6), np.unwrap(i[:4] * 3, period=6), exact=True)


# --------------------------------------------------------------------- cross
def test_cross(backend):
    a, b = sample("float64", (4, 3)), sample("float64", (4, 3), seed=1)
    check(ember.cross(E(a), E(b)), np.cross(a, b))
    check(ember.cross(E(a[:1]), E(b)), np.cross(a[:1], b))  # broadcast
    check(ember.cross(E(a.T), E(b), axisa=0), np.cross(a.T, b, axisa=0))
    check(ember.cross(E(a.T), E(b.T), axis=0), np.cross(a.T, b.T, axis=0))
    check(ember.cross(E(a), E(b), axisc=0), np.cross(a, b, axisc=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        # NumPy 2.5 dropped 2-vectors (2.0-2.4 deprecate them): the expected values by hand
        x, y = a[:, :2], b[:, :2]
        check(ember.cross(E(x), E(y)), x[:, 0] * y[:, 1] - x[:, 1] * y[:, 0])
        pad = np.zeros((4, 1))
        for x, y in [(a[:, :2], b), (a, b[:, :2])]:
            x3 = np.hstack([x, pad]) if x.shape[1] == 2 else x
            y3 = np.hstack([y, pad]) if y.shape[1] == 2 else y
            check(ember.cross(E(x), E(y)), np.cross(x3, y3))
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors"):
        ember.cross(E(a[:, :2]), E(b[:, :2]))
    with pytest.raises(ValueError, match="ember.cross: incompatible vector lengths 4 and 3"):
        ember.cross(E(np.ones((2, 4))), E(b))


# --------------------------------------------------------------------- polynomials
def test_polyval(backend):
    p = np.array([2.0, -3.0, 0.5, 1.0])
    x = sample("float64", (3, 4))
    check(ember.polyval(E(p), E(x)), np.polyval(p, x))
    check(ember.polyval(E(p)[::-1], E(x).T), np.polyval(p[::-1], x.T))
    check(ember.polyval(E(p), 1.5), np.polyval(p, 1.5))
    check(ember.polyval([1, 2, 3], E(np.arange(5))), np.polyval([1, 2, 3], np.arange(5)))
    pc = crandn(3)
    check(ember.polyval(E(pc), E(x[0])), np.polyval(pc, x[0]))


def test_polyfit(backend):
    rng = np.random.default_rng(1)
    x = np.linspace(-1, 2, 15)
    y = np.polyval([0.5, -1, 2, 3], x) + 0.1 * rng.standard_normal(15)
    check(ember.polyfit(E(x), E(y), 3), np.polyfit(x, y, 3), rtol=1e-10)
    with pytest.warns(np.exceptions.RankWarning):
        ember.polyfit(E(x[:3]), E(y[:3]), 5)
    with pytest.raises(TypeError, match="ember.polyfit: y must be 1-d or 2-d with x's length"):
        ember.polyfit(E(x), E(y[:4]), 1)
    with pytest.raises(ValueError, match="ember.polyfit: deg must be >= 0"):
        ember.polyfit(E(x), E(y), -1)


@pytest.mark.slow  # inv, outer and more of lstsq's kernels, ~1.5 s alone
def test_polyfit_full_weights_cov(backend):
    rng = np.random.default_rng(1)
    x = np.linspace(-1, 2, 15)
    y = np.polyval([0.5, -1, 2, 3], x) + 0.1 * rng.standard_normal(15)
    y2 = np.stack([y, y[::-1]], axis=1)
    w = rng.random(15) + 0.5
    check(ember.polyfit(E(x), E(y), 2, w=E(w)), np.polyfit(x, y, 2, w=w), rtol=1e-10)
    p, res, rank, s, rcond = ember.polyfit(E(x), E(y), 2, full=True)
    ep, eres, erank, es, ercond = np.polyfit(x, y, 2, full=True)
    check(p, ep, rtol=1e-10), check(res, eres, rtol=1e-10), check(s, es, rtol=1e-10)
    assert rank == erank and rcond == ercond
    p, v = ember.polyfit(E(x), E(y2), 2, cov=True)
    ep, ev = np.polyfit(x, y2, 2, cov=True)
    check(p, ep, rtol=1e-10), check(v, ev, rtol=1e-9)
    check(ember.polyfit(E(x), E(y), 1, cov="unscaled")[1], np.polyfit(x, y, 1, cov="unscaled")[1],
          rtol=1e-9)  # fmt: skip


def test_polyder_polyint(backend):
    p = np.array([3.0, -2.0, 0.5, 4.0])
    for m in (0, 1, 2, 5):
        check(ember.polyder(E(p), m), np.polyder(p, m))
    check(ember.polyder(E(np.array([1, 2, 3]))), np.polyder(np.array([1, 2, 3])))
    for m, k in [(1, None), (2, None), (1, 3.0), (2, [1.0, -2.0]), (3, 2.0), (0, None)]:
        check(ember.polyint(E(p), m, k), np.polyint(p, m, k))
    with pytest.raises(ValueError, match="ember.polyder: order m must be >= 0"):
        ember.polyder(E(p), -1)
    with pytest.raises(ValueError, match="ember.polyint: k must be a scalar or hold at least"):
        ember.polyint(E(p), 3, [1.0, 2.0])


def test_polyadd_polysub_polymul(backend):
    a, b = sample("float64", (4,)), sample("float64", (2,), seed=1)
    for x, y in [(a, b), (b, a), (a, a)]:
        check(ember.polyadd(E(x), E(y)), np.polyadd(x, y))
        check(ember.polysub(E(x), E(y)), np.polysub(x, y))
        check(ember.polymul(E(x), E(y)), np.polymul(x, y))
    check(ember.polyadd([1, 2], E(a)), np.polyadd([1, 2], a))


def test_roots(backend):
    for p in ([1.0, -6.0, 11.0, -6.0], [0.0, 2.0, 0.0, 2.0, 0.0, 0.0], [1, 0, 1], [5.0],
              [0.0, 0.0], [3.0, 0.0]):  # fmt: skip
        expected = np.roots(p)
        r = ember.roots(E(np.asarray(p)))
        assert r.dtype is ember.dtype(expected.dtype) and r.shape == expected.shape, p
        np.testing.assert_allclose(np.sort_complex(r.to_numpy()), np.sort_complex(expected),
                                   rtol=1e-10, atol=1e-12)  # fmt: skip
    with pytest.raises(ValueError, match="ember.roots: p must be 1-d"):
        ember.roots(E(np.ones((2, 2))))
