"""ember.random's NumPy Generator distributions (random_dists.py): each compared with NumPy's
own Generator (two-sample Kolmogorov-Smirnov) or with the exact pmf (chi-square), the
documented stream layout, reproducibility, parameter errors, dtypes and edge parameters.

Seeds are fixed, so every statistic is one deterministic number: the thresholds sit far
above what these seeds give and below what a wrong distribution (a 5% scale error, a
missing tail) gives at these sample sizes."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
from ember.array import random_dists as rd

N = 1 << 15


def ks_statistic(a, b) -> float:
    """sqrt(n m / (n + m)) times the two-sample KS distance (about 1.95 at p = 0.001)."""
    a, b = np.sort(np.asarray(a, float)), np.sort(np.asarray(b, float))
    both = np.concatenate([a, b])
    fa = np.searchsorted(a, both, side="right") / a.size
    fb = np.searchsorted(b, both, side="right") / b.size
    return float(np.abs(fa - fb).max()) * math.sqrt(a.size * b.size / (a.size + b.size))


def chi2_z(x, logpmf) -> float:
    """(chi2 - dof) / sqrt(2 dof) of the counts of ``x`` against the pmf, sparse bins and
    the tails merged."""
    ks = np.arange(x.min(), x.max() + 1)
    expected = x.size * np.exp([logpmf(int(k)) for k in ks])
    observed = np.bincount(x - x.min(), minlength=ks.size).astype(float)
    keep = expected >= 20
    e = np.append(expected[keep], x.size - expected[keep].sum())
    o = np.append(observed[keep], observed[~keep].sum())
    dof = e.size - 1
    return (float(((o - e) ** 2 / e).sum()) - dof) / math.sqrt(2 * dof)


def poisson_logpmf(lam):
    return lambda k: -lam + k * math.log(lam) - math.lgamma(k + 1)


def binomial_logpmf(n, p):
    c = math.lgamma(n + 1)
    return lambda k: (c - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p)
                      + (n - k) * math.log1p(-p))  # fmt: skip


CONTINUOUS = [
    ("lognormal", (0.3, 0.7)), ("laplace", (1.0, 2.0)), ("logistic", (-1.0, 0.5)),
    ("gumbel", (2.0, 3.0)), ("weibull", (0.7,)), ("pareto", (2.5,)), ("power", (0.6,)),
    ("rayleigh", (2.0,)), ("standard_cauchy", ()), ("triangular", (-1.0, 0.2, 3.0)),
    ("standard_gamma", (0.3,)), ("standard_gamma", (4.5,)), ("gamma", (2.0, 3.0)),
    ("beta", (0.4, 2.5)), ("chisquare", (3.0,)), ("f", (4.0, 9.0)), ("standard_t", (2.5,)),
]  # fmt: skip


def test_continuous_distributions_match_numpy(backend):
    rng, ref = ember.random.default_rng(2024), np.random.default_rng(7)
    for name, args in CONTINUOUS:
        x = getattr(rng, name)(*args, size=N).to_numpy()
        assert x.dtype == np.float64 and x.shape == (N,), name
        stat = ks_statistic(x, getattr(ref, name)(*args, size=N))
        assert stat < 2.2, (name, args, stat)
    g = rng.standard_gamma(2.5, N, dtype=ember.float32).to_numpy()
    assert g.dtype == np.float32
    assert ks_statistic(g, ref.standard_gamma(2.5, N, dtype=np.float32)) < 2.2
    assert abs(g.mean() - 2.5) < 4 * math.sqrt(2.5 / N)  # mean 2.5, variance 2.5
    big = rng.gamma(1e6, 2.0, N).to_numpy()  # large shapes: the log1p form of the test
    assert abs(big.mean() - 2e6) < 4 * 2e3 / math.sqrt(N)
    assert abs(big.std() / 2e3 - 1) < 0.04


@pytest.mark.parametrize(
    "name, args, logpmf",
    [("poisson", (0.5,), poisson_logpmf(0.5)), ("poisson", (9.9,), poisson_logpmf(9.9)),
     ("poisson", (10.0,), poisson_logpmf(10.0)), ("poisson", (300.0,), poisson_logpmf(300.0)),
     ("binomial", (40, 0.25), binomial_logpmf(40, 0.25)),  # n min(p, 1-p) = 10: inversion
     ("binomial", (250, 0.2), binomial_logpmf(250, 0.2)),  # 50: BTRD
     ("binomial", (120, 0.8), binomial_logpmf(120, 0.8)),  # 24, p > 1/2: n - inversion
     ("binomial", (2000, 0.7), binomial_logpmf(2000, 0.7)),  # 600: n - BTRD
     ("geometric", (0.15,), lambda k: math.log(0.15) + (k - 1) * math.log(0.85))],
)  # fmt: skip
def test_discrete_distributions_follow_the_exact_pmf(backend, name, args, logpmf):
    x = getattr(ember.random.default_rng(99), name)(*args, size=N).to_numpy()
    assert x.dtype == np.int64
    assert abs(chi2_z(x, logpmf)) < 4, (name, args)


def test_compositions_match_numpy(backend):
    rng, ref = ember.random.default_rng(5), np.random.default_rng(5)
    x = rng.negative_binomial(3.5, 0.3, N).to_numpy()
    assert x.dtype == np.int64 and ks_statistic(x, ref.negative_binomial(3.5, 0.3, N)) < 2.2
    alpha = [0.5, 1.0, 3.0]
    d = rng.dirichlet(alpha, (N // 4, 2)).to_numpy()
    assert d.shape == (N // 4, 2, 3)
    np.testing.assert_allclose(d.sum(-1), 1.0, rtol=1e-12)
    e = ref.dirichlet(alpha, N // 2)
    for j in range(3):
        assert ks_statistic(d[..., j].ravel(), e[:, j]) < 2.2
    tiny = rng.dirichlet([1e-3, 2e-3, 0.0], 1000).to_numpy()  # no 0/0: logs throughout
    assert not np.isnan(tiny).any() and (tiny[:, 2] == 0).all()
    np.testing.assert_allclose(tiny.sum(-1), 1.0, rtol=1e-12)


def test_multivariate_normal(backend):
    rng = ember.random.default_rng(8)
    mean, cov = np.array([1.0, -2.0, 0.5]), np.array([[2.0, 0.6, 0.0], [0.6, 1.0, -0.3],
                                                      [0.0, -0.3, 0.5]])  # fmt: skip
    with warnings.catch_warnings():  # host solvers warn on a device without one
        warnings.simplefilter("ignore", ember.linalg.EmberPerformanceWarning)
        for method in ("svd", "eigh", "cholesky"):
            x = rng.multivariate_normal(mean, cov, (N // 8, 2), method=method).to_numpy()
            assert x.shape == (N // 8, 2, 3) and x.dtype == np.float64
            flat = x.reshape(-1, 3)
            assert np.abs(flat.mean(0) - mean).max() < 0.05, method
            assert np.abs(np.cov(flat.T) - cov).max() < 0.06, method
        bad = [[1.0, 2.0], [2.0, 1.0]]
        with pytest.raises(ValueError, match="positive-semidefinite"):
            rng.multivariate_normal([0, 0], bad, check_valid="raise")
        with pytest.warns(RuntimeWarning, match="positive-semidefinite"):
            rng.multivariate_normal([0, 0], bad, method="eigh")
    with pytest.raises(ValueError, match="same length"):
        rng.multivariate_normal([0, 0, 0], cov[:2, :2])
    with pytest.raises(ValueError, match="method"):
        rng.multivariate_normal(mean, cov, method="qr")


# --------------------------------------------------------------------- the stream
def test_inverse_cdfs_are_the_documented_stream(backend):
    """Value ``i`` of a float64 inverse-CDF draw uses the uniform ``random()[i]`` of the
    same stream, opened to ``u + 2**-54``."""
    u = ember.random.default_rng(31).random(1001).to_numpy() + 2.0**-54
    rng = ember.random.default_rng(31)
    x = rng.laplace(1.0, 2.0, 1001).to_numpy()
    assert rng.counter == 501
    ref = np.where(u < 0.5, 1.0 + 2.0 * np.log(2 * u), 1.0 - 2.0 * np.log(2 * (1 - u)))
    np.testing.assert_allclose(x, ref, rtol=1e-13, atol=1e-13)
    g = ember.random.default_rng(31).geometric(0.3, 1001).to_numpy()
    np.testing.assert_array_equal(g, np.maximum(np.ceil(np.log(u) / np.log1p(-0.3)), 1))


def test_poisson_inversion_is_the_documented_stream(backend):
    """Small means: value ``i`` inverts the uniform of block ``c + i`` (words 0-1), which
    is value ``2 i`` of a float64 ``random`` draw."""
    rng = ember.random.default_rng(77)
    rng.random(6)  # counter 3
    u = ember.random.Generator(rng.key, rng.counter).random(2 * 500).to_numpy()[::2]
    x = rng.poisson(2.5, 500).to_numpy()
    assert rng.counter == 3 + 500  # one block per value
    cdf = np.cumsum(np.exp([poisson_logpmf(2.5)(k) for k in range(60)]))
    np.testing.assert_array_equal(x, np.searchsorted(cdf, u, side="right"))


@pytest.mark.parametrize("name", ["gamma64", "poisson", "binomial"])
def test_values_do_not_depend_on_the_launch_shape(backend, name):
    kernel = rd.each_kernel(name)
    params = {"gamma64": (0.7, 1.0), "poisson": (50.0, 0.0), "binomial": (np.int64(500), 0.3)}
    p0, p1 = params[name]
    dt = ember.float64 if name == "gamma64" else ember.int64
    outs = []
    for grid, block in [(1, 1), (3, 7), (64, 256)]:
        out = ember.empty(777, dt)
        p0v = p0 if isinstance(p0, np.int64) else np.float64(p0)
        kernel[grid, block](out, 777, 5, 6, 0, 0, p0v, np.float64(p1), np.float64(0), np.float64(0))
        outs.append(out.to_numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])


def test_same_seed_same_values_and_size_splits(backend):
    draws = [("poisson", (40.0,)), ("binomial", (300, 0.4)), ("standard_gamma", (0.5,)),
             ("beta", (2.0, 3.0)), ("gumbel", ())]  # fmt: skip
    for name, args in draws:
        a = getattr(ember.random.default_rng(3), name)(*args, size=(10, 12)).to_numpy()
        rng = ember.random.default_rng(3)
        b = getattr(rng, name)(*args, size=40).to_numpy()
        c = getattr(rng, name)(*args, size=80).to_numpy()  # even sizes: whole blocks
        np.testing.assert_array_equal(a.ravel(), np.concatenate([b, c]), err_msg=name)
    rng = ember.random.default_rng(3)
    assert not np.array_equal(rng.poisson(40.0, 50).to_numpy(), rng.poisson(40.0, 50).to_numpy())


# --------------------------------------------------------------------- edges and errors
def test_edge_parameters(backend):
    rng = ember.random.default_rng(1)
    assert (rng.poisson(0.0, 100).to_numpy() == 0).all()
    assert (rng.binomial(0, 0.5, 100).to_numpy() == 0).all()
    assert (rng.binomial(17, 0.0, 100).to_numpy() == 0).all()
    assert (rng.binomial(17, 1.0, 100).to_numpy() == 17).all()
    assert (rng.binomial(2**40, 1.0, 10).to_numpy() == 2**40).all()
    assert (rng.negative_binomial(2.0, 1.0, 10).to_numpy() == 0).all()
    assert (rng.geometric(1.0, 10).to_numpy() == 1).all()
    assert (rng.weibull(0.0, 10).to_numpy() == 0).all()
    assert (rng.standard_gamma(0.0, 10).to_numpy() == 0).all()
    p = rng.power(3.0, 1000).to_numpy()
    assert p.min() >= 0 and p.max() <= 1
    t = rng.triangular(2.0, 2.0, 5.0, 1000).to_numpy()
    assert t.min() >= 2 and t.max() <= 5
    huge = rng.poisson(1e12, 1000).to_numpy()  # PTRS far out: lgamma of 1e12
    assert abs(huge.mean() - 1e12) < 4 * 1e6 / math.sqrt(1000)
    assert rng.poisson(3.0).shape == () and rng.binomial(5, 0.5, (2, 0)).shape == (2, 0)
    out = ember.empty((3, 4), ember.float32)
    assert rng.standard_gamma(1.5, out=out) is out and (out.to_numpy() > 0).all()


@pytest.mark.parametrize(
    "call, message",
    [(lambda r: r.lognormal(0, -1), "sigma < 0"), (lambda r: r.laplace(0, -1), "scale < 0"),
     (lambda r: r.weibull(-1), "a < 0"), (lambda r: r.pareto(0), "a <= 0"),
     (lambda r: r.power(-2), "a <= 0"), (lambda r: r.rayleigh(-1), "scale < 0"),
     (lambda r: r.triangular(2, 1, 3), "left > mode"),
     (lambda r: r.triangular(1, 4, 3), "mode > right"),
     (lambda r: r.triangular(1, 1, 1), "left == right"),
     (lambda r: r.geometric(0), "p <= 0"), (lambda r: r.geometric(1.5), "p <= 0"),
     (lambda r: r.standard_gamma(-1), "shape < 0"), (lambda r: r.gamma(1, -1), "scale < 0"),
     (lambda r: r.beta(0, 1), "a <= 0"), (lambda r: r.beta(1, -1), "b <= 0"),
     (lambda r: r.chisquare(0), "df <= 0"), (lambda r: r.f(1, 0), "dfden <= 0"),
     (lambda r: r.standard_t(-1), "df <= 0"), (lambda r: r.poisson(-1), "lam < 0"),
     (lambda r: r.poisson(float("nan")), "lam < 0"), (lambda r: r.poisson(1e19), "too large"),
     (lambda r: r.binomial(-1, 0.5), "n < 0"), (lambda r: r.binomial(3, 1.5), "p < 0"),
     (lambda r: r.negative_binomial(0, 0.5), "n <= 0"),
     (lambda r: r.negative_binomial(1, 0), "p <= 0"),
     (lambda r: r.dirichlet([-1, 1]), "alpha < 0"),
     (lambda r: r.dirichlet([[1, 2]]), "one-dimensional"),
     (lambda r: r.multivariate_normal([[0]], [[1]]), "mean must be 1 dimensional"),
     (lambda r: r.multivariate_normal([0], [1]), "2 dimensional and square")],
)  # fmt: skip
def test_parameter_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call(ember.random.default_rng(0))


def test_dtypes_are_refused():
    rng = ember.random.default_rng(0)
    with pytest.raises(TypeError, match="float32 or float64"):
        rng.standard_gamma(1.0, 3, dtype=ember.int32)


# (method, array parameters, the means of each column) for array-parameter draws
ARRAY_CASES = [
    ("gamma", ([0.5, 2.0, 9.0], [1.0, 3.0, 0.5]), [0.5, 6.0, 4.5]),
    ("standard_gamma", ([0.3, 4.0],), [0.3, 4.0]),
    ("beta", ([0.5, 2.0], [1.0, 3.0]), [1 / 3, 0.4]),
    ("chisquare", ([1.0, 7.0],), [1.0, 7.0]),
    ("f", ([5.0, 10.0], [8.0, 20.0]), [8 / 6, 20 / 18]),
    ("standard_t", ([5.0, 30.0],), [0.0, 0.0]),
    ("poisson", ([0.5, 20.0, 1000.0],), [0.5, 20.0, 1000.0]),
    ("binomial", ([10, 100, 1000], [0.3, 0.5, 0.9]), [3.0, 50.0, 900.0]),
    ("negative_binomial", ([3.0, 10.0], [0.5, 0.2]), [3.0, 40.0]),
    ("weibull", ([0.5, 2.0, 0.0],), [2.0, math.sqrt(math.pi) / 2, 0.0]),
    ("pareto", ([3.0, 5.0],), [0.5, 0.25]),
    ("power", ([0.5, 3.0],), [1 / 3, 0.75]),
    ("geometric", ([0.1, 0.5, 1.0],), [10.0, 2.0, 1.0]),
    ("triangular", ([0.0, -1.0], [0.5, 0.0], [1.0, 2.0]), [0.5, 1 / 3]),
]


@pytest.mark.parametrize("method, params, means", ARRAY_CASES, ids=[c[0] for c in ARRAY_CASES])
def test_shape_parameters_as_arrays(backend, method, params, means):
    # NumPy's array parameters: broadcast with each other and size; each column's mean
    # against the closed form (within 5 standard errors of 40000 draws, or 2 %)
    rng = ember.random.default_rng(11)
    n = 40000
    x = getattr(rng, method)(*params, size=(n, len(means))).to_numpy()
    want = getattr(np.random.default_rng(0), method)(*params, size=(2, len(means)))
    assert x.dtype == want.dtype and x.shape == (n, len(means))
    err = 5 * x.std(axis=0) / math.sqrt(n) + 0.02 * np.abs(means)
    assert np.all(np.abs(x.mean(axis=0) - means) <= err + 1e-12), (x.mean(axis=0), means)
    # without size: the parameters' broadcast shape; an ember array takes the same path
    first = [ember.asarray(np.asarray(params[0]))] + list(params[1:])
    assert getattr(rng, method)(*first).shape == np.broadcast_shapes(*(np.shape(p) for p in params))


def test_array_parameters_give_the_scalar_draws_numbers(backend):
    # value i has the same sub-stream either way: equal parameters, equal numbers
    for method, scalar_args in (("gamma", (2.5, 1.5)), ("beta", (0.5, 3.0)),
                                ("poisson", (40.0,)), ("binomial", (50, 0.3))):  # fmt: skip
        a = getattr(ember.random.default_rng(3), method)(*scalar_args, size=64).to_numpy()
        arrays = [np.full(64, v) for v in scalar_args]
        b = getattr(ember.random.default_rng(3), method)(*arrays).to_numpy()
        np.testing.assert_array_equal(a, b)


def test_array_parameter_checks(backend):
    rng = ember.random.default_rng(0)
    for call, message in (
        (lambda: rng.gamma([1.0, -1.0]), "shape < 0"),
        (lambda: rng.beta([1.0], [0.0, 2.0]), "b <= 0"),
        (lambda: rng.poisson([1.0, -1.0]), "lam < 0 or lam contains NaNs"),
        (lambda: rng.poisson([1e19]), "lam value too large"),
        (lambda: rng.binomial([5, -1], 0.5), "n < 0"),
        (lambda: rng.binomial(5, [0.5, np.nan]), "p < 0, p > 1 or p contains NaNs"),
        (lambda: rng.negative_binomial([np.nan], 0.5), "n must not be NaN"),
        (lambda: rng.geometric([0.5, 0.0]), "p <= 0, p > 1"),
        (lambda: rng.triangular([0.0, 1.0], 0.5, 2.0), "left > mode"),
        (lambda: rng.triangular(0.0, [0.5], [0.0]), "mode > right"),
        (lambda: rng.weibull([-1.0]), "a < 0"),
        (lambda: rng.power([0.0]), "a <= 0"),
        (lambda: rng.gamma([1.0, 2.0], size=3), "does not broadcast to size"),
    ):
        with pytest.raises(ValueError, match=message):
            call()
    # a NaN passes NumPy's checks where NumPy's does, and gives NaN
    for draw in (rng.beta([np.nan, 1.0], 1.0), rng.pareto([np.nan]), rng.beta(np.nan, 1.0, 2),
                 rng.pareto(np.nan, 2), rng.gamma([np.nan])):  # fmt: skip
        assert np.isnan(draw.to_numpy()).any()
    # binomial: a list of floats is truncated, an array of floats refused, as by NumPy
    assert rng.binomial([5.7], 1.0).to_numpy().tolist() == [5]
    with pytest.raises(TypeError, match="cannot cast array data from float64 to int64"):
        rng.binomial(np.array([5.0, 3.0]), 0.5)
