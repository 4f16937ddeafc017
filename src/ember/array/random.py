"""``ember.random``: random numbers on the device from one counter-based stream.

::

    rng = ember.random.default_rng(42)
    x = rng.standard_normal((1000, 1000), dtype=ember.float32)
    i = rng.integers(0, 10, size=5)
    p = rng.permutation(100)

The generator is Philox4x32-10 (:mod:`ember.array.philox`), written as Ember kernels: the
same seed gives the same numbers on every backend and for any launch shape, and a user
kernel can draw the same numbers with the device functions re-exported here
(:func:`philox`, :func:`uniform4`, :func:`normal4`, :func:`uniform2_f64`,
:func:`normal2_f64`).

The stream
----------
A generator is a key ``(k0, k1)`` and a 64-bit block counter ``c`` (``rng.key``,
``rng.counter``).  An integer seed ``s`` in ``[0, 2**64)`` gives ``k0 = s mod 2**32``,
``k1 = s >> 32`` and ``c = 0``; other seeds (``None``, sequences) go through NumPy's
``SeedSequence`` to two words.  A draw of ``n`` values uses the Philox blocks
``c, c + 1, ...`` (block ``b`` is the counter ``(b mod 2**32, b >> 32, 0, 0)``) and then
advances ``c`` past them.  Value ``i`` of the draw (C order) comes from block
``c + i // P``, with ``P`` values per block:

=============================================  ===  =====================================
draw                                            P    value ``j`` of a block
=============================================  ===  =====================================
``random``/``uniform``, float32                 4    word ``j`` (:func:`uniform4`)
``random``/``uniform``, float64                 2    words ``2j, 2j+1`` (:func:`uniform2_f64`)
``standard_normal``/``normal``, float32         4    :func:`normal4`
``standard_normal``/``normal``, float64         2    :func:`normal2_f64`
``exponential``                                 4/2  ``-log1p(-u)`` of the uniform above
``integers``, range ``r <= 2**32``              2    ``floor(x * r / 2**64)``, ``x`` = words
                                                     ``2j, 2j+1`` (big-endian)
``integers``, wider range                       1    ``floor(x * r / 2**128)``, ``x`` = the
                                                     four words (big-endian)
``lognormal``                                   2    ``exp`` of ``normal``'s value
``laplace``, ``logistic``, ``gumbel``,          2    inverse CDF of ``u + 2**-54``, ``u`` the
``weibull``, ``pareto``, ``power``,                  float64 uniform above (in (0, 1))
``rayleigh``, ``standard_cauchy``, ``geometric``
``triangular``                                  1    inverse CDF, words 0-1 as above
``standard_gamma``, ``gamma``, ``chisquare``,   1    a rejection sampler on the block's
``beta``, ``f``, ``standard_t``, ``poisson``,        sub-stream ``(b mod 2**32, b >> 32, j,
``binomial``, ``negative_binomial``,                 s)``: attempt/sub-block ``j``, stage
``dirichlet`` (``k`` values a row)                   ``s`` (:mod:`~ember.array.random_dists`)
``hypergeometric``, ``logseries``, ``zipf``,    1    the same, :mod:`~ember.array.random_more`
``vonmises``, ``wald``, ``noncentral_*``,
``multinomial``,
``multivariate_hypergeometric`` (``k`` a row)
=============================================  ===  =====================================

so ``rng.standard_normal(n, dtype=float32)[i]`` is ``normal4(rng.key, (c + i // 4,
0, 0, 0))[i % 4]`` (for ``c + i // 4 < 2**32``).  Integers use no rejection: the bias is
at most ``r / 2**64`` (resp. ``2**-64``).  Uniform and integer draws are bit-identical on
every backend; normal and exponential draws up to the device math library's rounding of
``log``, ``sqrt``, ``sin`` and ``cos`` (a few ulp).  A rejection sampler's value ``i``
owns every counter whose words 0-1 are block ``c + i``, so retries never take another
value's numbers; the other distributions and their layouts are documented in
:mod:`ember.array.random_dists`.

``permutation``, ``shuffle``, ``permuted`` and ``choice(replace=False)`` sort random keys:
value ``i`` of ``range(n)`` gets the 64-bit key ``integers(0, 2**64, dtype=uint64)[i]`` (words
0-1 of block ``c + i``, big-endian) and the permutation is the stable argsort of the keys, a
uniformly random permutation up to ties (probability below ``n**2 / 2**65``; tied values keep
their order).  (Until 2026-12 a 4-round Feistel bijection with cycle walking was used: it
reached only even permutations of ``2**2k`` elements and skewed every small permutation.)

NumPy's streams are not reproduced: the same
seed gives different numbers in NumPy and Ember.  NumPy's legacy functions
(``ember.random.seed``, ``rand``, ``randint``...) draw from one module-level generator
(:mod:`ember.array.random_legacy`).
"""

from __future__ import annotations

import functools
import math
import os
from typing import Any

import ember
from ember import dtypes
from ember.array import random_draws as rd
from ember.array.ndarray import ndarray, normalize_shape
from ember.array.philox import normal2_f64, normal4, philox, uniform2_f64, uniform4
from ember.array.random_kernels import fill_kernel
from ember.array.random_more_draws import MoreDistributions
from ember.errors import axis_error

BLOCK = 256
MAX_BLOCKS = 65535
U64 = (1 << 64) - 1


def _grid(work: int) -> tuple[int, int]:
    return max(1, min(-(-work // BLOCK), MAX_BLOCKS)), BLOCK


# --------------------------------------------------------------------- the generator
class Generator(MoreDistributions):
    """NumPy's ``Generator`` surface on the device; see the module docstring for the
    stream.  Make one with :func:`default_rng`.

    Attributes
    ----------
    key : tuple of int
        The Philox key ``(k0, k1)`` (two 32-bit words).
    counter : int
        The next unused Philox block (64 bits).
    """

    def __init__(self, key: tuple[int, int], counter: int = 0):
        self.key = (int(key[0]) & 0xFFFFFFFF, int(key[1]) & 0xFFFFFFFF)
        self.counter = int(counter) & U64
        self._salt = 0

    def __repr__(self) -> str:
        return f"Generator(Philox4x32-10, key=({self.key[0]:#x}, {self.key[1]:#x}), " \
               f"counter={self.counter})"  # fmt: skip

    # ----------------------------------------------------------------- plumbing
    def _take(self, blocks: int) -> tuple[int, int]:
        base = self.counter
        self.counter = (base + blocks) & U64
        return base & 0xFFFFFFFF, base >> 32

    def _draw(self, dist: str, size, dt: dtypes.DType, p0, p1) -> ndarray:
        from ember.array.creation import empty

        shape = () if size is None else normalize_shape(size)
        out = empty(shape, dt)
        kernel, per = fill_kernel(dist, dt.itemsize if dt.is_float else 0)
        n = out.size
        blocks = -(-n // per)
        lo, hi = self._take(blocks)
        if n:
            flat = out.reshape(-1)
            grid, block = _grid(blocks)
            kernel[grid, block](flat, n, self.key[0], self.key[1], lo, hi, p0, p1)
        return out

    @staticmethod
    def _float(dtype, what: str) -> dtypes.DType:
        dt = dtypes.dtype(dtype)
        if dt.name not in ("float32", "float64"):
            raise TypeError(f"{what}: dtype must be float32 or float64 (NumPy's rule), got {dt}")
        return dt

    # ----------------------------------------------------------------- floats
    def random(self, size=None, dtype=dtypes.float64, out: ndarray | None = None) -> ndarray:
        """Uniform floats in [0, 1) (``size`` values; a 0-d array for ``size=None``)."""
        return self._with_out(out, lambda s, d: self.uniform(0.0, 1.0, s, dtype=d), size, dtype)

    def uniform(self, low=0.0, high=1.0, size=None, *, dtype=dtypes.float64) -> ndarray:
        """Uniform floats in [low, high) (``low + (high - low) * u``); the bounds may be
        arrays (broadcast with each other and ``size``, as NumPy's)."""
        dt = self._float(dtype, "uniform")
        if rd.is_array(low, high):
            shape, (lo, hi) = rd.array_params("uniform", size, dt, low, high)
            span = hi - lo
            if span.size and not bool(ember.all(ember.isfinite(span))):  # NaN too, as NumPy
                raise OverflowError("uniform: high - low range exceeds valid bounds")
            if span.size and bool(ember.any(span < 0)):
                raise ValueError("uniform: high - low < 0")
            return lo + span * self._draw("uniform", shape, dt, dt(0), dt(1))
        lo, hi = _number(low, "low"), _number(high, "high")
        span = rd.uniform_span(lo, hi, dt)
        return self._draw("uniform", size, dt, dt(lo), span)

    def standard_normal(self, size=None, dtype=dtypes.float64, out=None) -> ndarray:
        """Standard normal floats (Box-Muller on Philox uniforms)."""
        return self._with_out(out, lambda s, d: self.normal(0.0, 1.0, s, dtype=d), size, dtype)

    def normal(self, loc=0.0, scale=1.0, size=None, *, dtype=dtypes.float64) -> ndarray:
        """Normal floats of mean ``loc`` and standard deviation ``scale`` (scalars, or arrays
        broadcast as NumPy's)."""
        dt = self._float(dtype, "normal")
        if rd.is_array(loc, scale):
            standard = functools.partial(self._draw, "std_normal", dt=dt, p0=dt(0), p1=dt(1))
            return rd.scaled("normal", size, dt, loc, scale, standard)
        loc, scale = _number(loc, "loc"), _number(scale, "scale")
        if scale < 0:
            raise ValueError("normal: scale < 0")
        dist = "std_normal" if loc == 0 and scale == 1 else "normal"  # 3% faster on an H100
        return self._draw(dist, size, dt, dt(loc), dt(scale))

    def exponential(self, scale=1.0, size=None, *, dtype=dtypes.float64) -> ndarray:
        """Exponential floats of mean ``scale`` (``-scale * log1p(-u)``; ``scale`` may be an
        array, broadcast as NumPy's)."""
        dt = self._float(dtype, "exponential")
        if rd.is_array(scale):
            standard = functools.partial(self._draw, "exponential", dt=dt, p0=dt(1), p1=dt(0))
            return rd.scaled("exponential", size, dt, None, scale, standard)
        scale = _number(scale, "scale")
        if scale < 0:
            raise ValueError("exponential: scale < 0")
        return self._draw("exponential", size, dt, dt(scale), dt(0))

    def standard_exponential(self, size=None, dtype=dtypes.float64, method="zig",
                             out=None) -> ndarray:  # fmt: skip
        """Exponential floats of mean 1 (``-log1p(-u)``).  ``method`` is NumPy's choice of
        algorithm, ``"zig"`` (ziggurat) or ``"inv"`` (inversion): both give the inversion's
        numbers here, of the same distribution."""
        if method not in ("zig", "inv"):
            raise ValueError(f"standard_exponential: method must be 'zig' or 'inv', got {method!r}")
        make = lambda s, d: self.exponential(1.0, s, dtype=d)  # noqa: E731
        return self._with_out(out, make, size, dtype)

    def _with_out(self, out, make, size, dtype):
        if out is None:
            return make(size, dtype)
        if size is not None and normalize_shape(size) != out.shape:
            raise ValueError(f"size {size} does not match out's shape {out.shape}")
        out[...] = make(out.shape, out.dtype)
        return out

    # ----------------------------------------------------------------- integers
    def integers(self, low, high=None, size=None, dtype=dtypes.int64, endpoint=False):
        """Integers in ``[low, high)`` (``[low, high]`` with ``endpoint=True``; ``[0, low)``
        when ``high`` is None) of an integer or bool ``dtype``.  The bounds may be arrays,
        broadcast as NumPy's (:func:`.random_arrays.integers`)."""
        dt = dtypes.dtype(dtype)
        if dt.kind not in "iub":
            raise TypeError(f"integers: dtype must be an integer or bool dtype, got {dt}")
        if high is None:
            low, high = 0, low
        if rd.is_array(low, high):
            from ember.array import random_arrays

            return random_arrays.integers(self, low, high, size, dt, endpoint)
        low, high = _integer(low, "low"), _integer(high, "high")
        if endpoint:
            high += 1
        lo_ok, hi_ok = _bounds(dt)
        if low < lo_ok:
            raise ValueError(f"integers: low {low} is out of bounds for {dt}")
        if high - 1 > hi_ok:
            raise ValueError(f"integers: high {high} is out of bounds for {dt}")
        if high <= low:
            if size is not None and math.prod(normalize_shape(size)) == 0:
                from ember.array.creation import empty

                return empty(normalize_shape(size), dt)  # NumPy's: no values, no check
            raise ValueError("integers: low >= high" if not endpoint else "integers: low > high")
        span = high - low
        dist = "int_narrow" if span <= 1 << 32 else "int_wide"
        import numpy as np

        return self._draw(dist, size, dt, np.uint64(low & U64), np.uint64(span & U64))

    # ----------------------------------------------------------------- permutations
    def permutation(self, x, axis: int = 0) -> ndarray:
        """A random permutation of ``range(x)`` (an int), or a shuffled copy of the array
        ``x`` (an ember array, or a host array-like copied to the device) along ``axis``."""
        if rd.is_int(x):
            return self._perm(int(x))
        x = rd.device_array(x, "permutation")
        if x.ndim == 0:
            raise ValueError("permutation: x must be an int or an array of at least 1 dimension")
        return _take_rows(x, self._perm(x.shape[_axis(axis, x.ndim)]), axis)

    def shuffle(self, x: ndarray, axis: int = 0) -> None:
        """Shuffle the array ``x`` in place along ``axis``."""
        if not isinstance(x, ndarray):
            raise TypeError("shuffle takes an ember array (ember.asarray(x)) and works in place")
        if x.ndim == 0:
            raise ValueError("shuffle: x must be an array of at least 1 dimension")
        x[...] = self.permutation(x, axis)

    def permuted(self, x, *, axis: int | None = None, out: ndarray | None = None) -> ndarray:
        """``x`` with each of its 1-d slices along ``axis`` shuffled independently (NumPy's
        ``permuted``; ``axis=None``: the flattened array, reshaped back).  ``out`` (``x``
        itself for in place) receives the result and is returned."""
        x = rd.device_array(x, "permuted")
        if out is not None and (not isinstance(out, ndarray) or out.shape != x.shape):
            raise ValueError("permuted: out must be an ember array of x's shape")
        if axis is None or x.ndim <= 1:
            if axis is not None:
                _axis(axis, x.ndim)
            flat = x.reshape(-1)
            result = _take_rows(flat, self._perm(flat.size), 0).reshape(x.shape)
        else:
            from ember.array.gather import take_along_axis
            from ember.array.sort import argsort

            k = _axis(axis, x.ndim)
            keys = self.integers(0, 1 << 64, x.shape, dtype=dtypes.uint64)
            result = take_along_axis(x, argsort(keys, axis=k, stable=True), axis=k)
        if out is None:
            return result
        out[...] = result
        return out

    def choice(self, a, size=None, replace: bool = True, p=None, axis: int = 0,
               shuffle: bool = True) -> ndarray:  # fmt: skip
        """Random samples of ``range(a)`` (an int) or of the array ``a`` (an ember array, or a
        host array-like copied to the device) along ``axis``: uniform with replacement,
        without replacement (the start of a permutation), or with probabilities ``p``
        (inverse-CDF sampling; without replacement, Efraimidis and Spirakis' exponential
        keys)."""
        shape = () if size is None else normalize_shape(size)
        count = math.prod(shape)
        if not rd.is_int(a):
            a = rd.device_array(a, "choice")
            if a.ndim == 0:  # NumPy's: a 0-d array is the integer it holds
                a = rd.population(a.to_numpy().item())
        if isinstance(a, ndarray):
            n = a.shape[_axis(axis, a.ndim)]
        else:
            n = int(a)
            if n < 0 or (n == 0 and count):
                raise ValueError("choice: a must be a positive integer unless no samples are "
                                 f"taken, got {n}")  # fmt: skip
        if n == 0 and count:
            raise ValueError("choice: a cannot be empty unless no samples are taken")
        if p is not None:
            index = self._weighted(n, shape, p, replace)
        elif replace:
            index = self.integers(0, max(n, 1), shape)
        else:
            if count > n:
                raise ValueError("choice: cannot take a larger sample than the population "
                                 "when replace=False")  # fmt: skip
            index = self._perm(n)[:count].reshape(shape)
        if not isinstance(a, ndarray):
            return index
        taken = _take_rows(a, index.reshape(-1), axis)
        k = _axis(axis, a.ndim)
        return taken.reshape(a.shape[:k] + shape + a.shape[k + 1 :])

    def _perm(self, n: int) -> ndarray:
        """A uniformly random permutation of ``range(n)``: the stable argsort of ``n`` random
        64-bit keys (the module docstring)."""
        from ember.array.sort import argsort

        if n < 0:
            raise ValueError(f"permutation: n must be non-negative, got {n}")
        keys = self.integers(0, 1 << 64, n, dtype=dtypes.uint64)
        return argsort(keys, stable=True).astype(dtypes.int64, copy=False)

    def _weighted(self, n: int, shape, p, replace: bool) -> ndarray:
        """Inverse-CDF sampling: the first index whose cumulative probability exceeds a
        uniform draw (a scan and a binary search on the device).  Without replacement:
        Efraimidis and Spirakis (2006), each index keyed by an exponential draw over its
        probability and the smallest keys taken, in order: the distribution of successive
        weighted draws without replacement, as NumPy's."""
        from ember.array.creation import asarray
        from ember.array.scan import cumulative_fractions
        from ember.array.search import searchsorted
        from ember.array.ufuncs import divide, less, minimum

        probs = p if isinstance(p, ndarray) else asarray(p, dtypes.float64)
        if probs.ndim != 1:
            raise ValueError(f"choice: p must be 1-dimensional, got shape {probs.shape}")
        if probs.shape != (n,):
            raise ValueError(f"choice: p must have {n} entries, got shape {probs.shape}")
        atol = rd.sum_tolerance(probs.dtype)
        probs = probs.astype(dtypes.float64, copy=False)
        total = float(ember.sum(probs))  # the checks NumPy makes read two numbers
        if math.isnan(total):
            raise ValueError("choice: probabilities contain NaN")
        if bool(ember.any(less(probs, 0))):
            raise ValueError("choice: probabilities must be non-negative")
        if not abs(total - 1.0) <= atol:  # (an inf in p: a NaN or inf sum, refused)
            raise ValueError(f"choice: probabilities must sum to 1 (within {atol:.2g}), the "
                             f"sum is {total!r}")  # fmt: skip
        if not replace:
            count = math.prod(shape)
            if int(ember.count_nonzero(probs > 0)) < count:
                raise ValueError("choice: fewer non-zero entries in p than size")
            keys = divide(self.standard_exponential(n), probs)  # p = 0: never before p > 0
            first = ember.argsort(keys, stable=True)[:count]
            return first.astype(dtypes.int64, copy=False).reshape(shape)
        # a p = 0 entry repeats the fraction before it exactly, and the last positive one
        # is exactly 1: a uniform in [0, 1) never lands on a p = 0 entry
        cdf = cumulative_fractions(probs.reshape(1, n)).reshape(n)
        u = self.random(shape).reshape(-1)
        index = minimum(searchsorted(cdf, u, side="right"), n - 1)
        return index.astype(dtypes.int64, copy=False).reshape(shape)

    # ----------------------------------------------------------------- more distributions
    # Thin: the checks and launches are in ember.array.random_draws, the samplers and the
    # sub-stream layout in ember.array.random_dists.
    def lognormal(self, mean=0.0, sigma=1.0, size=None) -> ndarray:
        """Log-normal floats: ``exp`` of ``normal(mean, sigma)``'s numbers."""
        return rd.lognormal(self, mean, sigma, size)

    def laplace(self, loc=0.0, scale=1.0, size=None) -> ndarray:
        """Laplace (double exponential) floats (inverse CDF)."""
        return rd.laplace(self, loc, scale, size)

    def logistic(self, loc=0.0, scale=1.0, size=None) -> ndarray:
        """Logistic floats (inverse CDF)."""
        return rd.logistic(self, loc, scale, size)

    def gumbel(self, loc=0.0, scale=1.0, size=None) -> ndarray:
        """Gumbel (extreme value type I) floats (inverse CDF)."""
        return rd.gumbel(self, loc, scale, size)

    def weibull(self, a, size=None) -> ndarray:
        """Weibull floats of shape ``a`` (scale 1; 0 for ``a = 0``)."""
        return rd.weibull(self, a, size)

    def pareto(self, a, size=None) -> ndarray:
        """Pareto II (Lomax) floats of shape ``a``, as NumPy's (add 1 for classical Pareto)."""
        return rd.pareto(self, a, size)

    def power(self, a, size=None) -> ndarray:
        """Power-function floats in [0, 1] of exponent ``a - 1`` (``u ** (1/a)``)."""
        return rd.pareto(self, a, size, "power")

    def rayleigh(self, scale=1.0, size=None) -> ndarray:
        """Rayleigh floats (``scale * sqrt(-2 log u)``)."""
        return rd.rayleigh(self, scale, size)

    def standard_cauchy(self, size=None) -> ndarray:
        """Standard Cauchy floats (``tan(pi (u - 1/2))``)."""
        return rd.fill_draw(self, "cauchy", size, 0.0, 0.0)

    def triangular(self, left, mode, right, size=None) -> ndarray:
        """Triangular floats on ``[left, right]`` peaking at ``mode`` (inverse CDF)."""
        return rd.triangular(self, left, mode, right, size)

    def geometric(self, p, size=None) -> ndarray:
        """Geometric int64: trials up to the first success (>= 1), by inversion."""
        return rd.geometric(self, p, size)

    def standard_gamma(self, shape, size=None, dtype=dtypes.float64, out=None) -> ndarray:
        """Gamma floats of scale 1 (Marsaglia & Tsang; float32 computes in float32)."""
        dt = self._float(dtype, "standard_gamma")
        make = lambda s, d: rd.standard_gamma(self, shape, s, d)  # noqa: E731
        return self._with_out(out, make, size, dt)

    def gamma(self, shape, scale=1.0, size=None) -> ndarray:
        """Gamma floats: ``scale * standard_gamma(shape)``."""
        return rd.gamma(self, shape, scale, size)

    def beta(self, a, b, size=None) -> ndarray:
        """Beta floats: ``Ga / (Ga + Gb)`` of two gammas."""
        return rd.beta(self, a, b, size)

    def chisquare(self, df, size=None) -> ndarray:
        """Chi-square floats: ``2 * standard_gamma(df / 2)``."""
        return rd.chisquare(self, df, size)

    def f(self, dfnum, dfden, size=None) -> ndarray:
        """F (Fisher-Snedecor) floats: a ratio of two scaled chi-squares."""
        return rd.f(self, dfnum, dfden, size)

    def standard_t(self, df, size=None) -> ndarray:
        """Student's t floats: ``z / sqrt(chisquare(df) / df)``."""
        return rd.standard_t(self, df, size)

    def poisson(self, lam=1.0, size=None) -> ndarray:
        """Poisson int64 (inversion for ``lam < 10``, Hörmann's PTRS above)."""
        return rd.poisson(self, lam, size)

    def binomial(self, n, p, size=None) -> ndarray:
        """Binomial int64 (inversion for ``n min(p, 1-p) < 30``, Hörmann's BTRD above)."""
        return rd.binomial(self, n, p, size)

    def negative_binomial(self, n, p, size=None) -> ndarray:
        """Negative binomial int64: ``poisson(gamma(n, (1 - p) / p))``."""
        return rd.negative_binomial(self, n, p, size)

    def dirichlet(self, alpha, size=None) -> ndarray:
        """Dirichlet floats, shape ``size + (len(alpha),)``: normalized gammas."""
        return rd.dirichlet(self, alpha, size)

    def multivariate_normal(self, mean, cov, size=None, check_valid="warn", tol=1e-8, *,
                            method="svd") -> ndarray:  # fmt: skip
        """``mean + z @ A`` with ``A.T @ A = cov`` (``method``: svd, eigh or cholesky, by
        ``ember.linalg``) and ``z`` standard normals; shape ``size + mean.shape``."""
        return rd.multivariate_normal(self, mean, cov, size, check_valid, tol, method)

    def spawn(self, n_children: int) -> list[Generator]:
        """``n_children`` independent generators (keys derived from this one's)."""
        import numpy as np

        seq = np.random.SeedSequence([*self.key, self.counter, self._salt])
        self._salt += 1
        words = seq.generate_state(2 * n_children, np.uint32)
        return [Generator((int(words[2 * i]), int(words[2 * i + 1]))) for i in range(n_children)]


def _take_rows(x: ndarray, index: ndarray, axis: int) -> ndarray:
    """``x`` with its slices along ``axis`` picked by ``index`` (a new array)."""
    from ember.array.gather import take

    return take(x, index, axis=_axis(axis, x.ndim))


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise axis_error(f"axis {axis} is out of bounds for an array of {ndim} dimensions")
    return axis % ndim


def _number(v: Any, what: str) -> float:
    """A scalar parameter as a float (array-likes took :func:`.random_draws.is_array`'s
    path before this)."""
    try:
        return float(v)  # a string that is no number: float's ValueError, as NumPy's
    except TypeError:
        raise TypeError(
            f"{what} must be a number or an array of numbers, not {type(v).__name__}"
        ) from None


def _integer(v: Any, what: str) -> int:
    """A scalar bound as an int: integers as they are, floats truncated (NumPy's rule, as
    :func:`.random_arrays.integers` for array bounds)."""
    if not isinstance(v, ndarray) and not hasattr(v, "__index__"):
        try:
            f = float(v)
        except (TypeError, ValueError):
            f = None
        if f is None or not math.isfinite(f):
            raise TypeError(f"integers: {what} must be an integer or a finite float, got {v!r}")
        return math.trunc(f)
    if isinstance(v, ndarray):
        raise TypeError(f"integers: {what} must be a Python or NumPy integer, got {v!r}")
    return int(v.__index__())


def _bounds(dt: dtypes.DType) -> tuple[int, int]:
    if dt.kind == "b":
        return 0, 1
    if dt.kind == "u":
        return 0, (1 << dt.bits) - 1
    return -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1


def default_rng(seed=None) -> Generator:
    """A :class:`Generator` seeded with ``seed``: an int in ``[0, 2**64)`` is the Philox key
    itself (``k0 = seed mod 2**32``, ``k1 = seed >> 32``); ``None`` takes OS entropy; larger
    ints and sequences of non-negative ints go through ``numpy.random.SeedSequence``, and a
    ``SeedSequence`` gives its first two words; a :class:`Generator` is returned as is.
    Negative seeds are refused, as NumPy does."""
    if isinstance(seed, Generator):
        return seed
    import numpy as np

    if isinstance(seed, np.random.SeedSequence):
        words = seed.generate_state(2, np.uint32)
        return Generator((int(words[0]), int(words[1])))
    if seed is None:
        word = int.from_bytes(os.urandom(8), "little")
        return Generator((word & 0xFFFFFFFF, word >> 32))
    if not isinstance(seed, bool) and hasattr(seed, "__index__") and int(seed) <= U64:
        s = int(seed)
        if s < 0:
            raise ValueError(f"default_rng: the seed must be non-negative, got {s}")
        return Generator((s & 0xFFFFFFFF, s >> 32))
    return default_rng(np.random.SeedSequence(seed))


def __getattr__(name: str):
    """NumPy's legacy functions (``ember.random.seed``, ``rand``, ``randint``...) and
    ``RandomState``, from :mod:`ember.array.random_legacy` on first use."""
    from ember.array import random_legacy

    if name == "RandomState":
        return random_legacy.RandomState
    if name in random_legacy.FUNCTIONS:
        return random_legacy.function(name)
    raise AttributeError(f"module 'ember.random' has no attribute {name!r}")


def __dir__():
    from ember.array import random_legacy

    return sorted(set(globals()) | {"RandomState", *random_legacy.FUNCTIONS})


__all__ = [
    "Generator", "default_rng", "philox", "uniform4", "normal4", "uniform2_f64", "normal2_f64",
]  # fmt: skip
