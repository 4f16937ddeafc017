"""NumPy's legacy ``numpy.random`` functions (``seed``, ``rand``, ``randn``, ``randint``,
``random_sample``, ``normal``, ``choice``, ``shuffle``...) as ``ember.random.<name>``:
bound methods of one module-level :class:`RandomState`, as NumPy's ``mtrand`` has.

::

    ember.random.seed(0)
    x = ember.random.rand(3, 4)            # float64 in [0, 1), shape (3, 4)
    i = ember.random.randint(0, 10, size=8)  # int64

A :class:`RandomState` wraps an :class:`ember.random.Generator` (``.generator``) and every
function draws from it, so the numbers are the Philox stream of
:mod:`ember.array.random`: not NumPy's MT19937 stream (the same seed gives other numbers
than NumPy), but NumPy's signatures, shapes and dtypes (integers int64, NumPy's ``int`` on
Linux).  ``seed(s)`` reseeds the module's generator in place as ``default_rng(s)`` would
seed a new one (an int in ``[0, 2**64)`` is the key; ``None`` takes OS entropy); without
a seed the module's generator takes OS entropy on first use, as NumPy's.  ``get_state``
returns the key and counter as a dict (NumPy gives a dict too for a bit generator other
than MT19937) and ``set_state`` takes it back; an MT19937 state is refused.  Arguments are
checked as the ``Generator``'s methods check them (NumPy's messages); ``uniform`` keeps the
legacy rule that ``high < low`` is allowed.  Where NumPy returns a Python scalar for
``size=None``, Ember returns a 0-d array.  ``random_integers`` (deprecated in NumPy) is
not provided: use ``randint(low, high + 1)``.
"""

from __future__ import annotations

import ember
from ember import dtypes
from ember.array.ndarray import ndarray
from ember.array.random import Generator, default_rng
from ember.array.random_more_draws import parse_state


def _dims(args: tuple, what: str) -> tuple[int, ...]:
    for d in args:
        if isinstance(d, bool) or not hasattr(d, "__index__"):
            raise TypeError(f"{what}: the dimensions must be integers (as {what}(3, 4)), got "
                            f"{d!r}; use a size= function for a shape tuple")  # fmt: skip
    return tuple(int(d) for d in args)


class RandomState:
    """NumPy's legacy ``RandomState`` surface over an :class:`ember.random.Generator`.

    Parameters
    ----------
    seed : None, int, sequence of ints, SeedSequence or Generator
        As :func:`ember.random.default_rng`'s (a Generator is wrapped, not copied).
    """

    def __init__(self, seed=None):
        self.generator: Generator = default_rng(seed)

    def __repr__(self) -> str:
        return f"RandomState({self.generator!r})"

    # ----------------------------------------------------------------- state
    def seed(self, seed=None) -> None:
        """Reseed in place: the key and counter of ``default_rng(seed)``."""
        fresh = default_rng(seed)
        self.generator.key, self.generator.counter = fresh.key, fresh.counter

    def get_state(self, legacy: bool = True) -> dict:
        """The generator's key and counter, ``{"bit_generator": "Philox4x32-10", "state":
        {"key": (k0, k1), "counter": c}}`` (a dict for ``legacy=True`` too: NumPy returns
        its tuple only for MT19937)."""
        return self.generator.bit_generator.state

    def set_state(self, state) -> None:
        """Restore a state of :meth:`get_state` (NumPy's MT19937 states are refused)."""
        self.generator.key, self.generator.counter = parse_state(state)

    @property
    def bit_generator(self):
        """The wrapped generator's ``bit_generator``."""
        return self.generator.bit_generator

    # ----------------------------------------------------------------- the legacy forms
    def rand(self, *args) -> ndarray:
        """Uniform float64 in [0, 1) of shape ``args`` (``rand(3, 4)``)."""
        return self.generator.random(_dims(args, "rand"))

    def randn(self, *args) -> ndarray:
        """Standard normal float64 of shape ``args`` (``randn(3, 4)``)."""
        return self.generator.standard_normal(_dims(args, "randn"))

    def randint(self, low, high=None, size=None, dtype=int) -> ndarray:
        """Integers in ``[low, high)`` (``[0, low)`` when ``high`` is None), int64 by
        default (NumPy's ``int``)."""
        return self.generator.integers(low, high, size, dtype=dtypes.dtype(dtype))

    def random_sample(self, size=None) -> ndarray:
        """Uniform float64 in [0, 1)."""
        return self.generator.random(size)

    random = ranf = sample = random_sample

    def uniform(self, low=0.0, high=1.0, size=None) -> ndarray:
        """``low + (high - low) * random_sample()``; ``high < low`` allowed (legacy)."""
        from ember.array import random_draws as rd

        if not rd.is_array(low, high):
            if float(high) < float(low):  # (a NaN or infinite range: Generator's error)
                return -self.generator.uniform(-float(low), -float(high), size)
            return self.generator.uniform(low, high, size)
        shape, (lo, hi) = rd.array_params("uniform", size, dtypes.float64, low, high)
        span = hi - lo
        if span.size and not bool(ember.all(ember.isfinite(span))):
            raise OverflowError("uniform: high - low range exceeds valid bounds")
        return lo + span * self.generator.random(shape)

    def standard_normal(self, size=None) -> ndarray:
        """Standard normal float64."""
        return self.generator.standard_normal(size)

    def standard_exponential(self, size=None) -> ndarray:
        """Exponential float64 of mean 1."""
        return self.generator.standard_exponential(size)

    def standard_gamma(self, shape, size=None) -> ndarray:
        """Gamma float64 of scale 1."""
        return self.generator.standard_gamma(shape, size)

    def choice(self, a, size=None, replace: bool = True, p=None) -> ndarray:
        """Samples of ``range(a)`` or of the array ``a`` (Generator.choice along axis 0)."""
        return self.generator.choice(a, size, replace, p)

    def shuffle(self, x: ndarray) -> None:
        """Shuffle the ember array ``x`` in place along its first axis."""
        self.generator.shuffle(x)

    def permutation(self, x) -> ndarray:
        """A permutation of ``range(x)``, or a shuffled copy of ``x`` along axis 0."""
        return self.generator.permutation(x)

    def bytes(self, length: int) -> bytes:
        """``length`` random bytes."""
        return self.generator.bytes(length)

    def multivariate_normal(self, mean, cov, size=None, check_valid="warn", tol=1e-8):
        """``mean + z @ A`` with ``A.T @ A = cov`` (by the SVD, NumPy's legacy method)."""
        return self.generator.multivariate_normal(mean, cov, size, check_valid, tol)

    # the same positional signature in NumPy's legacy and new APIs
    def normal(self, loc=0.0, scale=1.0, size=None) -> ndarray:
        """:meth:`ember.random.Generator.normal`."""
        return self.generator.normal(loc, scale, size)

    def exponential(self, scale=1.0, size=None) -> ndarray:
        """:meth:`ember.random.Generator.exponential`."""
        return self.generator.exponential(scale, size)

    def gamma(self, shape, scale=1.0, size=None) -> ndarray:
        """:meth:`ember.random.Generator.gamma`."""
        return self.generator.gamma(shape, scale, size)

    def beta(self, a, b, size=None) -> ndarray:
        """:meth:`ember.random.Generator.beta`."""
        return self.generator.beta(a, b, size)

    def binomial(self, n, p, size=None) -> ndarray:
        """:meth:`ember.random.Generator.binomial`."""
        return self.generator.binomial(n, p, size)

    def poisson(self, lam=1.0, size=None) -> ndarray:
        """:meth:`ember.random.Generator.poisson`."""
        return self.generator.poisson(lam, size)

    def chisquare(self, df, size=None) -> ndarray:
        """:meth:`ember.random.Generator.chisquare`."""
        return self.generator.chisquare(df, size)

    def f(self, dfnum, dfden, size=None) -> ndarray:
        """:meth:`ember.random.Generator.f`."""
        return self.generator.f(dfnum, dfden, size)

    def standard_t(self, df, size=None) -> ndarray:
        """:meth:`ember.random.Generator.standard_t`."""
        return self.generator.standard_t(df, size)

    def standard_cauchy(self, size=None) -> ndarray:
        """:meth:`ember.random.Generator.standard_cauchy`."""
        return self.generator.standard_cauchy(size)

    def negative_binomial(self, n, p, size=None) -> ndarray:
        """:meth:`ember.random.Generator.negative_binomial`."""
        return self.generator.negative_binomial(n, p, size)

    def geometric(self, p, size=None) -> ndarray:
        """:meth:`ember.random.Generator.geometric`."""
        return self.generator.geometric(p, size)

    def laplace(self, loc=0.0, scale=1.0, size=None) -> ndarray:
        """:meth:`ember.random.Generator.laplace`."""
        return self.generator.laplace(loc, scale, size)

    def logistic(self, loc=0.0, scale=1.0, size=None) -> ndarray:
        """:meth:`ember.random.Generator.logistic`."""
        return self.generator.logistic(loc, scale, size)

    def gumbel(self, loc=0.0, scale=1.0, size=None) -> ndarray:
        """:meth:`ember.random.Generator.gumbel`."""
        return self.generator.gumbel(loc, scale, size)

    def lognormal(self, mean=0.0, sigma=1.0, size=None) -> ndarray:
        """:meth:`ember.random.Generator.lognormal`."""
        return self.generator.lognormal(mean, sigma, size)

    def weibull(self, a, size=None) -> ndarray:
        """:meth:`ember.random.Generator.weibull`."""
        return self.generator.weibull(a, size)

    def pareto(self, a, size=None) -> ndarray:
        """:meth:`ember.random.Generator.pareto`."""
        return self.generator.pareto(a, size)

    def power(self, a, size=None) -> ndarray:
        """:meth:`ember.random.Generator.power`."""
        return self.generator.power(a, size)

    def rayleigh(self, scale=1.0, size=None) -> ndarray:
        """:meth:`ember.random.Generator.rayleigh`."""
        return self.generator.rayleigh(scale, size)

    def triangular(self, left, mode, right, size=None) -> ndarray:
        """:meth:`ember.random.Generator.triangular`."""
        return self.generator.triangular(left, mode, right, size)

    def dirichlet(self, alpha, size=None) -> ndarray:
        """:meth:`ember.random.Generator.dirichlet`."""
        return self.generator.dirichlet(alpha, size)

    def multinomial(self, n, pvals, size=None) -> ndarray:
        """:meth:`ember.random.Generator.multinomial`."""
        return self.generator.multinomial(n, pvals, size)

    def hypergeometric(self, ngood, nbad, nsample, size=None) -> ndarray:
        """:meth:`ember.random.Generator.hypergeometric`."""
        return self.generator.hypergeometric(ngood, nbad, nsample, size)

    def logseries(self, p, size=None) -> ndarray:
        """:meth:`ember.random.Generator.logseries`."""
        return self.generator.logseries(p, size)

    def vonmises(self, mu, kappa, size=None) -> ndarray:
        """:meth:`ember.random.Generator.vonmises`."""
        return self.generator.vonmises(mu, kappa, size)

    def wald(self, mean, scale, size=None) -> ndarray:
        """:meth:`ember.random.Generator.wald`."""
        return self.generator.wald(mean, scale, size)

    def zipf(self, a, size=None) -> ndarray:
        """:meth:`ember.random.Generator.zipf`."""
        return self.generator.zipf(a, size)

    def noncentral_chisquare(self, df, nonc, size=None) -> ndarray:
        """:meth:`ember.random.Generator.noncentral_chisquare`."""
        return self.generator.noncentral_chisquare(df, nonc, size)

    def noncentral_f(self, dfnum, dfden, nonc, size=None) -> ndarray:
        """:meth:`ember.random.Generator.noncentral_f`."""
        return self.generator.noncentral_f(dfnum, dfden, nonc, size)


FUNCTIONS = (
    "seed", "get_state", "set_state", "rand", "randn", "randint", "random_sample", "random",
    "ranf", "sample", "uniform", "standard_normal", "standard_exponential", "standard_gamma",
    "choice", "shuffle", "permutation", "bytes", "multivariate_normal", "normal", "exponential",
    "gamma", "beta", "binomial", "poisson", "chisquare", "f", "standard_t", "standard_cauchy",
    "negative_binomial", "geometric", "laplace", "logistic", "gumbel", "lognormal", "weibull",
    "pareto", "power", "rayleigh", "triangular", "dirichlet", "multinomial", "hypergeometric",
    "logseries", "vonmises", "wald", "zipf", "noncentral_chisquare", "noncentral_f",
)  # fmt: skip

_rand = RandomState()  # OS entropy, as NumPy's global RandomState (no device work)


def function(name: str):
    """``ember.random.<name>``: the module's :class:`RandomState`'s bound method ``name``
    (``seed`` reseeds that generator in place, so a method taken earlier stays current)."""
    return getattr(_rand, name)


__all__ = ["RandomState", "FUNCTIONS", "function"]
