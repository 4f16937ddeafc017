"""ember.random's newer pieces: NumPy's legacy module functions (``seed``, ``rand``,
``randint``..., ``RandomState``; random_legacy.py), the Generator's hypergeometric,
logseries, zipf, vonmises, wald, noncentral chi-square and F, multinomial and multivariate
hypergeometric draws (random_more.py), ``bytes`` and ``bit_generator``.

Distributions are compared with the exact pmf (chi-square of the counts) or with NumPy's
own Generator (two-sample Kolmogorov-Smirnov).  Seeds are fixed, so every statistic is one
deterministic number: the thresholds sit far above what these seeds give (|z| < 1.5, KS
below 1.3) and below what a wrong distribution gives at these sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_array_random_dists import chi2_z, ks_statistic

import ember

N = 1 << 15


# --------------------------------------------------------------------- legacy functions
def test_legacy_functions_shapes_dtypes_and_seed(backend):
    r = ember.random
    r.seed(0)
    a = r.rand(3, 4)
    assert a.shape == (3, 4) and a.dtype == ember.float64
    r.seed(0)
    np.testing.assert_array_equal(r.rand(3, 4).to_numpy(), a.to_numpy())  # seed: the same
    assert r.randn(5).shape == (5,) and r.randn().shape == ()
    i = r.randint(0, 10, size=8).to_numpy()
    assert i.dtype == np.int64 and i.shape == (8,) and ((0 <= i) & (i < 10)).all()
    j = r.randint(3, size=(2, 50)).to_numpy()  # high=None: [0, low)
    assert j.shape == (2, 50) and set(np.unique(j)) == {0, 1, 2}
    assert r.randint(0, 5, 4, dtype=np.int32).dtype == ember.int32
    for name in ("random_sample", "random", "ranf", "sample", "standard_normal",
                 "standard_exponential"):  # fmt: skip
        x = getattr(r, name)((2, 3))
        assert x.shape == (2, 3) and x.dtype == ember.float64, name
    u = r.uniform(2.0, 5.0, 1000).to_numpy()
    assert ((2 <= u) & (u < 5)).all()
    v = r.uniform(1.0, 0.0, 1000).to_numpy()  # legacy: high < low allowed, (0, 1]
    assert ((0 < v) & (v <= 1)).all()
    w = r.uniform([0.0, 10.0], [1.0, 9.0], (500, 2)).to_numpy()
    assert ((w[:, 0] >= 0) & (w[:, 0] < 1)).all() and ((w[:, 1] > 9) & (w[:, 1] <= 10)).all()
    assert r.normal(1.0, 2.0, (4, 5)).shape == (4, 5)
    assert r.poisson(3.0, 7).dtype == ember.int64 and r.binomial(10, 0.5, 7).dtype == ember.int64
    assert r.gamma(2.0, 1.0, 3).shape == (3,) and r.beta(1.0, 2.0).shape == ()
    assert r.exponential(2.0, (2, 2)).shape == (2, 2) and r.standard_gamma(2.0, 3).shape == (3,)
    assert r.multinomial(10, [0.5, 0.5], 3).shape == (3, 2)


def test_legacy_permutations_choice_and_bytes(backend):
    r = ember.random
    r.seed(5)
    assert sorted(r.permutation(10).to_numpy()) == list(range(10))
    x = ember.arange(12).reshape(6, 2)
    r.shuffle(x)
    rows = x.to_numpy()
    assert sorted(rows[:, 0]) == list(range(0, 12, 2)) and (rows[:, 1] == rows[:, 0] + 1).all()
    c = r.choice(5, 20).to_numpy()
    assert c.shape == (20,) and ((0 <= c) & (c < 5)).all()
    assert sorted(r.choice(5, 5, replace=False).to_numpy()) == list(range(5))
    b = r.bytes(10)
    assert isinstance(b, bytes) and len(b) == 10


def test_legacy_state_and_randomstate(backend):
    r = ember.random
    r.seed(123)
    state = r.get_state()
    assert state["bit_generator"] == "Philox4x32-10"
    a = r.random_sample(5).to_numpy()
    r.set_state(state)
    np.testing.assert_array_equal(r.random_sample(5).to_numpy(), a)
    rand = r.rand  # a function taken before seed() follows the reseeded generator
    r.seed(7)
    first = rand(4).to_numpy()
    r.seed(7)
    np.testing.assert_array_equal(r.rand(4).to_numpy(), first)
    rs = r.RandomState(7)  # the same seed, the same stream as the module's
    np.testing.assert_array_equal(rs.rand(4).to_numpy(), first)
    np.testing.assert_array_equal(rs.generator.key, ember.random.default_rng(7).key)
    rs.seed(8)
    assert not np.array_equal(rs.rand(4).to_numpy(), first)
    assert "RandomState" in dir(r) and "randint" in dir(r)


def test_legacy_errors():
    r = ember.random
    with pytest.raises(TypeError, match="dimensions must be integers"):
        r.rand((3, 4))
    with pytest.raises(TypeError, match="dimensions must be integers"):
        r.randn(2.5)
    with pytest.raises(ValueError, match="MT19937"):
        r.set_state(np.random.RandomState(0).get_state())
    with pytest.raises(ValueError, match="Philox4x32-10"):
        r.set_state({"bit_generator": "PCG64", "state": {}})
    with pytest.raises(ValueError, match="low >= high"):
        r.randint(5, 5)
    with pytest.raises(ValueError, match="non-negative"):
        r.seed(-1)
    with pytest.raises(AttributeError, match="random_integers"):
        r.random_integers  # noqa: B018 - deprecated in NumPy, not provided


# --------------------------------------------------------------------- discrete draws
def hypergeom_logpmf(good, bad, n):
    lc = lambda a, b: math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)  # noqa: E731
    return lambda k: lc(good, k) + lc(bad, n - k) - lc(good + bad, n)


def logseries_logpmf(p):
    return lambda k: k * math.log(p) - math.log(k) - math.log(-math.log1p(-p))


def zeta(a):
    head = sum(k**-a for k in range(1, 1000))
    return head + 1000 ** (1 - a) / (a - 1) + 0.5 * 1000**-a  # Euler-Maclaurin's tail


def zipf_logpmf(a):
    z = math.log(zeta(a))
    return lambda k: -a * math.log(k) - z


@pytest.mark.parametrize(
    "name, args, logpmf",
    [("hypergeometric", (10, 5, 7), hypergeom_logpmf(10, 5, 7)),  # the urn, more good
     ("hypergeometric", (5, 10, 9), hypergeom_logpmf(5, 10, 9)),  # the urn
     ("hypergeometric", (100, 50, 70), hypergeom_logpmf(100, 50, 70)),  # HRUA
     ("hypergeometric", (1000, 3000, 3995), hypergeom_logpmf(1000, 3000, 3995)),  # complement
     ("hypergeometric", (10**8, 2 * 10**8, 10**5), hypergeom_logpmf(10**8, 2 * 10**8, 10**5)),
     ("logseries", (0.5,), logseries_logpmf(0.5)), ("logseries", (0.99,), logseries_logpmf(0.99)),
     ("zipf", (2.0,), zipf_logpmf(2.0)), ("zipf", (3.5,), zipf_logpmf(3.5))],
)  # fmt: skip
def test_discrete_draws_follow_the_exact_pmf(backend, name, args, logpmf):
    x = getattr(ember.random.default_rng(31), name)(*args, size=N).to_numpy()
    assert x.dtype == np.int64 and x.shape == (N,)
    assert abs(chi2_z(x, logpmf)) < 4, (name, args)


def test_discrete_extremes_stay_in_the_support(backend):
    rng = ember.random.default_rng(32)
    assert (rng.logseries(0.0, 100).to_numpy() == 1).all()
    x = rng.logseries(1 - 1e-9, N).to_numpy()
    assert x.min() >= 1 and x.max() < 2**63  # median exp(-log(1 - p) / 2 - euler_gamma)
    assert 1.4e4 < np.median(x) < 2.2e4
    z = rng.zipf(1.01, N).to_numpy()  # truncated below 2**63, as NumPy's
    # P(1) = 1 / (zeta(1.01) P(X < 2**63)) = 0.0278: 64% of the mass lies beyond 2**63
    assert z.min() >= 1 and 0.025 < (z == 1).mean() < 0.031
    assert (rng.zipf(1500.0, 100).to_numpy() == 1).all()
    h = rng.hypergeometric(999_999_999, 999_999_999, 10**9, N).to_numpy()
    assert abs(h.mean() - 5e8) < 5 * math.sqrt(1.25e8 / N) and h.std() / math.sqrt(1.25e8) < 1.05
    assert (rng.hypergeometric(0, 10, 5, 10).to_numpy() == 0).all()
    assert (rng.hypergeometric(10, 0, 5, 10).to_numpy() == 5).all()
    assert (rng.hypergeometric(10, 5, 15, 10).to_numpy() == 10).all()
    assert (rng.hypergeometric(10, 5, 0, 10).to_numpy() == 0).all()
    few = rng.hypergeometric(3, 10**8, 10**7, N).to_numpy()
    assert set(np.unique(few)) <= {0, 1, 2, 3}


# --------------------------------------------------------------------- continuous draws
CONTINUOUS = [
    ("vonmises", (0.5, 2.0)), ("vonmises", (3.0, 1e-6)), ("vonmises", (-2.0, 50.0)),
    ("vonmises", (1.0, 1e5)), ("wald", (1.0, 2.0)), ("wald", (3.0, 0.01)),
    ("noncentral_chisquare", (3.0, 2.0)), ("noncentral_chisquare", (0.5, 2.0)),
    ("noncentral_chisquare", (5.0, 0.0)), ("noncentral_f", (3.0, 10.0, 2.0)),
    ("noncentral_f", (0.7, 1.5, 20.0)),
]  # fmt: skip


def test_continuous_draws_match_numpy(backend):
    rng, ref = ember.random.default_rng(33), np.random.default_rng(33)
    for name, args in CONTINUOUS:
        x = getattr(rng, name)(*args, size=N).to_numpy()
        assert x.dtype == np.float64 and x.shape == (N,) and not np.isnan(x).any(), name
        if name == "vonmises":
            assert (np.abs(x) <= math.pi).all()
        else:
            assert (x >= 0).all(), name
        stat = ks_statistic(x, getattr(ref, name)(*args, size=N))
        assert stat < 2.2, (name, args, stat)


def test_continuous_extremes(backend):
    rng = ember.random.default_rng(34)
    u = rng.vonmises(0.0, 1e-9, N).to_numpy()  # uniform on [-pi, pi)
    assert (np.abs(u) <= math.pi).all() and abs(u.mean()) < 0.05 and abs(u.std() - 1.8138) < 0.03
    w = rng.vonmises(math.pi - 1e-4, 1e7, N).to_numpy()  # the wrapped normal, near the seam
    assert (np.abs(w) <= math.pi).all() and (np.abs(w) > math.pi - 0.01).all()
    assert (w < 0).any() and (w > 0).any()  # both sides of the seam
    folded = rng.vonmises(7.0, 4.0, N).to_numpy()  # mu beyond pi: folded into [-pi, pi]
    assert (np.abs(folded) <= math.pi).all()
    assert abs(np.angle(np.exp(1j * folded).mean()) - (7.0 - 2 * math.pi)) < 0.02
    tiny = rng.wald(1e-3, 1e3, N).to_numpy()
    assert (tiny > 0).all() and abs(tiny.mean() / 1e-3 - 1) < 0.01
    wide = rng.wald(1e3, 1e-3, N).to_numpy()  # y huge: no cancellation to 0 or below
    assert (wide > 0).all() and np.isfinite(wide).all()
    assert np.isnan(rng.noncentral_chisquare(3.0, np.nan, 4).to_numpy()).all()
    assert np.isnan(rng.vonmises(0.0, np.nan, 4).to_numpy()).all()
    small = rng.noncentral_chisquare(0.05, 0.01, N).to_numpy()
    assert (small >= 0).all() and abs(small.mean() - 0.06) < 0.01


# --------------------------------------------------------------------- rows
def binomial_logpmf(n, p):
    c = math.lgamma(n + 1)
    return lambda k: (c - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p)
                      + (n - k) * math.log1p(-p))  # fmt: skip


def test_multinomial(backend):
    rng = ember.random.default_rng(35)
    p = [0.1, 0.2, 0.3, 0.4]
    x = rng.multinomial(50, p, N).to_numpy()
    assert x.dtype == np.int64 and x.shape == (N, 4) and (x.sum(1) == 50).all()
    for j in range(4):
        assert abs(chi2_z(x[:, j], binomial_logpmf(50, p[j]))) < 4, j
    assert abs(np.cov(x.T)[0, 1] / -(50 * 0.1 * 0.2) - 1) < 0.06
    big = rng.multinomial(10**12, [0.3, 0.7], 4000).to_numpy()  # BTRD inside
    assert (big.sum(1) == 10**12).all() and abs(big[:, 0].std() / math.sqrt(2.1e11) - 1) < 0.06
    shaped = rng.multinomial([5, 6], [[0.2, 0.8]], size=(3, 2)).to_numpy()
    assert shaped.shape == (3, 2, 2) and (shaped.sum(-1) == [5, 6]).all()
    assert rng.multinomial(5, [0.2, 0.8]).shape == (2,)
    assert (rng.multinomial(7, [0.0, 1.0, 0.0], 5).to_numpy() == [0, 7, 0]).all()
    assert (rng.multinomial(7, [0.5, 0.5, 0.0], 50).to_numpy()[:, 2] == 0).all()
    assert (rng.multinomial(0, [0.5, 0.5], 3).to_numpy() == 0).all()


def test_multivariate_hypergeometric(backend):
    rng = ember.random.default_rng(36)
    x = rng.multivariate_hypergeometric([2, 3, 4], 4, N).to_numpy()
    assert x.dtype == np.int64 and x.shape == (N, 3) and (x.sum(1) == 4).all()
    assert (x >= 0).all() and (x <= [2, 3, 4]).all()
    keys, counts = np.unique(x, axis=0, return_counts=True)
    comb = math.comb
    expected = N * np.array([comb(2, a) * comb(3, b) * comb(4, c) for a, b, c in keys]) / comb(9, 4)
    assert keys.shape[0] == 11 and ((counts - expected) ** 2 / expected).sum() < 45  # 10 dof
    y = rng.multivariate_hypergeometric([5, 10, 20, 65], 30, (N // 4, 2), method="count")
    y = y.to_numpy()
    assert y.shape == (N // 4, 2, 4) and (y.sum(-1) == 30).all()
    assert abs(y[..., 3].mean() - 30 * 0.65) < 0.1
    assert rng.multivariate_hypergeometric([], 0).shape == (0,)


# --------------------------------------------------------------------- parameters
def test_array_parameters_broadcast_and_share_the_stream(backend):
    rng = ember.random.default_rng(37)
    assert rng.vonmises([0.0, 1.0], 2.0, size=(3, 2)).shape == (3, 2)
    assert rng.hypergeometric([10, 20], 5, 7).shape == (2,)
    assert rng.zipf(np.array([[2.0], [3.0]]), size=(2, 4)).shape == (2, 4)
    assert rng.noncentral_f(ember.asarray([1.0, 2.0, 3.0]), 4.0, 1.0).shape == (3,)
    for name, args in (("wald", (2.0, 1.0)), ("hypergeometric", (30, 20, 15)),
                       ("logseries", (0.7,)), ("noncentral_chisquare", (0.5, 3.0))):  # fmt: skip
        one = getattr(ember.random.default_rng(38), name)(*args, size=64).to_numpy()
        arrays = [np.full(64, a) for a in args]
        many = getattr(ember.random.default_rng(38), name)(*arrays).to_numpy()
        np.testing.assert_array_equal(one, many)  # equal parameters, equal numbers


@pytest.mark.parametrize("call, error, match", [
    (lambda r: r.hypergeometric(-1, 5, 2), ValueError, "ngood < 0"),
    (lambda r: r.hypergeometric(5, -1, 0), ValueError, "nbad < 0"),
    (lambda r: r.hypergeometric(5, 1, -1), ValueError, "nsample < 0"),
    (lambda r: r.hypergeometric(1, 5, 7), ValueError, r"ngood \+ nbad < nsample"),
    (lambda r: r.hypergeometric(10**9, 5, 7), ValueError, "less than 1000000000"),
    (lambda r: r.hypergeometric([1, -1], 5, 2), ValueError, "ngood < 0"),
    (lambda r: r.logseries(1.0), ValueError, r"p < 0, p >= 1 or p is NaN"),
    (lambda r: r.logseries([0.5, np.nan]), ValueError, r"p < 0, p >= 1 or p is NaN"),
    (lambda r: r.zipf(1.0), ValueError, "a <= 1 or a is NaN"),
    (lambda r: r.zipf(np.nan), ValueError, "a <= 1 or a is NaN"),
    (lambda r: r.vonmises(0.0, -1.0), ValueError, "kappa < 0"),
    (lambda r: r.wald(0.0, 1.0), ValueError, "mean <= 0"),
    (lambda r: r.wald(1.0, [1.0, 0.0]), ValueError, "scale <= 0"),
    (lambda r: r.noncentral_chisquare(0.0, 1.0), ValueError, "df <= 0"),
    (lambda r: r.noncentral_chisquare(1.0, -1.0), ValueError, "nonc < 0"),
    (lambda r: r.noncentral_f(0.0, 1.0, 1.0), ValueError, "dfnum <= 0"),
    (lambda r: r.noncentral_f(1.0, 0.0, 1.0), ValueError, "dfden <= 0"),
    (lambda r: r.noncentral_f(1.0, 1.0, -1.0), ValueError, "nonc < 0"),
    (lambda r: r.multinomial(-1, [0.5, 0.5]), ValueError, "n < 0"),
    (lambda r: r.multinomial(3, [-0.5, 1.5]), ValueError, "pvals < 0, pvals > 1"),
    (lambda r: r.multinomial(3, [0.7, 0.7, 0.0]), ValueError, r"sum\(pvals\[:-1\]\) > 1.0"),
    (lambda r: r.multinomial(3, 0.5), ValueError, "at least 1 dimension"),
    (lambda r: r.multinomial([3, 4], [0.5, 0.5], size=3), ValueError, "does not broadcast"),
    (lambda r: r.multivariate_hypergeometric([1, -1], 0), ValueError, "nonnegative integers"),
    (lambda r: r.multivariate_hypergeometric([1.5, 1], 1), ValueError, "nonnegative integers"),
    (lambda r: r.multivariate_hypergeometric([1, 1], -1), ValueError, "nonnegative"),
    (lambda r: r.multivariate_hypergeometric([1, 1], 3), ValueError, r"nsample > sum\(colors\)"),
    (lambda r: r.multivariate_hypergeometric([1, 1], 1.5), ValueError, "must be an integer"),
    (lambda r: r.multivariate_hypergeometric([1], 1, method="x"), ValueError, "method must"),
    (lambda r: r.multivariate_hypergeometric([10**8, 1], 1, method="count"), ValueError,
     "must not exceed 100000000"),
])  # fmt: skip
def test_numpy_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(ember.random.default_rng(0))


# --------------------------------------------------------------------- bytes, bit_generator
def test_bytes_and_bit_generator(backend):
    rng = ember.random.default_rng(39)
    b = rng.bytes(17)
    assert isinstance(b, bytes) and len(b) == 17 and rng.bytes(0) == b""
    bits = rng.bit_generator
    assert bits is rng.bit_generator and hasattr(bits.lock, "acquire")
    state = bits.state
    assert state == {"bit_generator": "Philox4x32-10",
                     "state": {"key": rng.key, "counter": rng.counter}}  # fmt: skip
    a = rng.random(6).to_numpy()
    bits.state = state
    np.testing.assert_array_equal(rng.random(6).to_numpy(), a)
    before = rng.counter
    assert bits.advance(10) is bits and rng.counter == before + 10
    raw = bits.random_raw(5)
    assert raw.dtype == ember.uint64 and raw.shape == (5,)
    assert bits.random_raw(3, output=False) is None
    assert len(bits.spawn(2)) == 2
    with pytest.raises(AttributeError, match="no NumPy C interface"):
        bits.ctypes  # noqa: B018
    with pytest.raises(ValueError, match="cannot be set"):
        bits.state = np.random.default_rng(0).bit_generator.state


def test_legacy_uniform_refuses_ranges_that_are_not_finite():
    for low, high in ((0.0, math.inf), (0.0, math.nan), (math.inf, 0.0)):
        with pytest.raises(OverflowError, match="range exceeds valid bounds"):
            ember.random.uniform(low, high, 2)
    with pytest.raises(OverflowError, match="range exceeds valid bounds"):
        ember.random.uniform([0.0, 0.0], [1.0, math.inf])
