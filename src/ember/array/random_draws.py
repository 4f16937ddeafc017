"""The host side of :mod:`ember.array.random_dists`' distributions (that module's docstring
has the samplers and the counter layout): parameter checks as NumPy's ``Generator`` makes
them, and the launches.  :class:`ember.array.random.Generator`'s methods call these."""

from __future__ import annotations

import math
from typing import Any

from ember import dtypes
from ember.array.ndarray import ndarray, normalize_shape
from ember.array.random_dists import MAX_LAM, dirichlet_kernel, each_kernel, inverse_kernel


def scalar(v: Any, what: str, method: str) -> float:
    """A Python or NumPy scalar parameter as a float (the callers send array parameters to
    :func:`array_params` and :mod:`.random_arrays` first)."""
    if isinstance(v, ndarray) or getattr(v, "shape", ()) != ():
        raise TypeError(f"{method}: {what} must be a number here, got an array")
    return float(v)


def _arrays():
    from ember.array import random_arrays

    return random_arrays


def is_array(*params) -> bool:
    """Whether any parameter is array-like (an Ember array, a NumPy array, a list)."""
    return any(isinstance(v, ndarray | list | tuple) or getattr(v, "shape", ()) != ()
               for v in params)  # fmt: skip


def array_params(method: str, size, dt, *params) -> tuple[tuple[int, ...], list]:
    """The output shape and the parameters as Ember arrays of ``dt`` (host array-likes are
    copied to the device; they are small), by NumPy's rule: without ``size`` the
    parameters' broadcast shape, else ``size``, which they must broadcast to."""
    import numpy as np

    from ember.array.creation import asarray

    arrays = [asarray(v, dtype=dt) for v in params]
    return sized(method, np.broadcast_shapes(*(a.shape for a in arrays)), size), arrays


def sized(method: str, shape: tuple[int, ...], size) -> tuple[int, ...]:
    """The draw's shape: the parameters' broadcast ``shape``, or ``size`` when given (the
    parameters must broadcast to it: NumPy's rule, a ValueError otherwise)."""
    import numpy as np

    if size is None:
        return shape
    want = normalize_shape(size)
    try:
        fits = np.broadcast_shapes(shape, want) == want
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{method}: the parameters' shape {shape} does not broadcast to "
                         f"size {want}")  # fmt: skip
    return want


def _shape(size) -> tuple[int, ...]:
    return () if size is None else normalize_shape(size)


def fill_draw(rng, name: str, size, p0: float, p1: float) -> ndarray:
    """An inverse-CDF draw: float64 (int64 for geometric), two values per block."""
    import numpy as np

    from ember.array.creation import empty
    from ember.array.random import _grid

    dt = dtypes.int64 if name == "geometric" else dtypes.float64
    out = empty(_shape(size), dt)
    n = out.size
    blocks = -(-n // 2)
    lo, hi = rng._take(blocks)
    if n:
        grid, block = _grid(blocks)
        kernel = inverse_kernel(name)
        kernel[grid, block](out.reshape(-1), n, *rng.key, lo, hi, np.float64(p0), np.float64(p1))
    return out


def each_draw(rng, name: str, size, dt, params, sample=None) -> ndarray:
    """A draw with one sub-stream per value: value ``i`` owns block ``counter + i``
    (``sample``: :func:`.random_dists.each_kernel`'s)."""
    from ember.array.creation import empty
    from ember.array.random import _grid

    out = empty(_shape(size), dt)
    n = out.size
    lo, hi = rng._take(n)
    if n:
        grid, block = _grid(n)
        each_kernel(name, sample)[grid, block](out.reshape(-1), n, *rng.key, lo, hi, *params)
    return out


def _loc_scale(method: str, loc, scale, what: str = "scale") -> tuple[float, float]:
    loc, scale = scalar(loc, "loc", method), scalar(scale, what, method)
    if scale < 0:
        raise ValueError(f"{what} < 0")
    return loc, scale


def scaled(method: str, size, dt, loc, scale, standard, what: str = "scale") -> ndarray:
    """``loc + scale * standard(shape)`` for array parameters broadcast as NumPy's
    (``loc=None``: no shift); a negative scale is NumPy's ValueError (a NaN passes, as in
    NumPy's check, and gives NaN draws)."""
    import ember

    params = (scale,) if loc is None else (scale, loc)
    shape, (sigma, *mu) = array_params(method, size, dt, *params)
    if sigma.size and bool(ember.any(sigma < 0)):
        raise ValueError(f"{what} < 0")
    out = sigma * standard(shape)
    return out + mu[0] if mu else out


def _loc_scale_draw(rng, name: str, loc, scale, size, what: str = "scale") -> ndarray:
    """A location-scale family's draw: its own kernel for scalar parameters; for array
    parameters standard draws of the broadcast shape, shifted and scaled."""
    import ember

    if not is_array(loc, scale):
        return fill_draw(rng, name, size, *_loc_scale(name, loc, scale, what))
    if name == "lognormal":  # exp(mean + sigma * z) of standard normals
        z = scaled(name, size, dtypes.float64, loc, scale, rng.standard_normal, what)
        return ember.exp(z)
    standard = (1.0, 0.0) if name == "rayleigh" else (0.0, 1.0)  # the kernel's parameters
    return scaled(name, size, dtypes.float64, loc, scale,
                  lambda shape: fill_draw(rng, name, shape, *standard), what)  # fmt: skip


def lognormal(rng, mean, sigma, size):
    return _loc_scale_draw(rng, "lognormal", mean, sigma, size, "sigma")


def laplace(rng, loc, scale, size):
    return _loc_scale_draw(rng, "laplace", loc, scale, size)


def logistic(rng, loc, scale, size):
    return _loc_scale_draw(rng, "logistic", loc, scale, size)


def gumbel(rng, loc, scale, size):
    return _loc_scale_draw(rng, "gumbel", loc, scale, size)


def weibull(rng, a, size):
    if is_array(a):
        return _arrays().weibull(rng, a, size)
    a = scalar(a, "a", "weibull")
    if a < 0:
        raise ValueError("a < 0")
    return fill_draw(rng, "weibull", size, a, 1.0 / a if a else 0.0)


def pareto(rng, a, size, name="pareto"):
    if is_array(a):
        return _arrays().pareto(rng, a, size, name)
    a = scalar(a, "a", name)
    if a <= 0:  # (a NaN passes, as in NumPy, and gives NaN draws)
        raise ValueError("a <= 0")
    return fill_draw(rng, name, size, 1.0 / a, 0.0)


def rayleigh(rng, scale, size):
    if is_array(scale):
        return scaled("rayleigh", size, dtypes.float64, None, scale,
                      lambda shape: fill_draw(rng, "rayleigh", shape, 1.0, 0.0))  # fmt: skip
    scale = scalar(scale, "scale", "rayleigh")
    if scale < 0:
        raise ValueError("scale < 0")
    return fill_draw(rng, "rayleigh", size, scale, 0.0)


def geometric(rng, p, size):
    if is_array(p):
        return _arrays().geometric(rng, p, size)
    p = scalar(p, "p", "geometric")
    if not 0 < p <= 1:
        raise ValueError("p <= 0, p > 1 or p contains NaNs")
    return fill_draw(rng, "geometric", size, math.log1p(-p) if p < 1 else -math.inf, 0.0)


def triangular(rng, left, mode, right, size):
    if is_array(left, mode, right):
        return _arrays().triangular(rng, left, mode, right, size)
    left, mode, right = (scalar(v, w, "triangular") for v, w in
                         ((left, "left"), (mode, "mode"), (right, "right")))  # fmt: skip
    if left > mode:
        raise ValueError("left > mode")
    if mode > right:
        raise ValueError("mode > right")
    if left == right:
        raise ValueError("left == right")
    return each_draw(rng, "triangular", size, dtypes.float64, _f64(left, mode, right, 0.0))


def _f64(*values):
    import numpy as np

    return tuple(np.float64(v) for v in values)


def standard_gamma(rng, shape, size, dt):
    """``dt``: float32 (computed in float32, as NumPy does) or float64."""
    if is_array(shape):
        return _arrays().standard_gamma(rng, shape, size, dt)
    shape = scalar(shape, "shape", "standard_gamma")
    if shape < 0:
        raise ValueError("shape < 0")
    if dt.name == "float32":
        import numpy as np

        params = tuple(np.float32(v) for v in (shape, 1.0, 0.0, 0.0))
        return each_draw(rng, "gamma32", size, dt, params)
    return each_draw(rng, "gamma64", size, dt, _f64(shape, 1.0, 0.0, 0.0))


def gamma(rng, shape, scale, size):
    if is_array(shape, scale):
        return _arrays().gamma(rng, shape, scale, size)
    shape, scale = scalar(shape, "shape", "gamma"), scalar(scale, "scale", "gamma")
    if shape < 0:
        raise ValueError("shape < 0")
    if scale < 0:
        raise ValueError("scale < 0")
    return each_draw(rng, "gamma64", size, dtypes.float64, _f64(shape, scale, 0.0, 0.0))


def _positive(method: str, **named) -> list[float]:
    values = []
    for what, v in named.items():
        v = scalar(v, what, method)
        if v <= 0:  # (a NaN passes, as in NumPy, and gives NaN draws)
            raise ValueError(f"{what} <= 0")
        values.append(v)
    return values


def beta(rng, a, b, size):
    if is_array(a, b):
        return _arrays().beta(rng, a, b, size)
    a, b = _positive("beta", a=a, b=b)
    return each_draw(rng, "gamma_pair", size, dtypes.float64, _f64(a, b, 0.0, 0.0))


def chisquare(rng, df, size):
    if is_array(df):
        return _arrays().chisquare(rng, df, size)
    (df,) = _positive("chisquare", df=df)
    return each_draw(rng, "gamma64", size, dtypes.float64, _f64(df / 2, 2.0, 0.0, 0.0))


def f(rng, dfnum, dfden, size):
    if is_array(dfnum, dfden):
        return _arrays().f(rng, dfnum, dfden, size)
    dfnum, dfden = _positive("f", dfnum=dfnum, dfden=dfden)
    params = _f64(dfnum / 2, dfden / 2, 1.0, math.log(dfden / dfnum))
    return each_draw(rng, "gamma_pair", size, dtypes.float64, params)


def standard_t(rng, df, size):
    if is_array(df):
        return _arrays().standard_t(rng, df, size)
    (df,) = _positive("standard_t", df=df)
    params = _f64(1.0, df / 2, 2.0, math.log(df / 2))
    return each_draw(rng, "gamma_pair", size, dtypes.float64, params)


def poisson(rng, lam, size):
    if is_array(lam):
        return _arrays().poisson(rng, lam, size)
    lam = scalar(lam, "lam", "poisson")
    if not lam >= 0:
        raise ValueError("lam < 0 or lam is NaN")
    if lam > MAX_LAM:
        raise ValueError("lam value too large")
    return each_draw(rng, "poisson", size, dtypes.int64, _f64(lam, 0.0, 0.0, 0.0))


def binomial(rng, n, p, size):
    import numpy as np

    if is_array(n, p):
        return _arrays().binomial(rng, n, p, size)
    _arrays().integer_counts(n)
    n, p = int(n), scalar(p, "p", "binomial")
    if n < 0:
        raise ValueError("n < 0")
    if not 0 <= p <= 1:
        raise ValueError("p < 0, p > 1 or p is NaN")
    params = (np.int64(n), np.float64(p), np.float64(0), np.float64(0))
    return each_draw(rng, "binomial", size, dtypes.int64, params)


def negative_binomial(rng, n, p, size):
    if is_array(n, p):
        return _arrays().negative_binomial(rng, n, p, size)
    n, p = scalar(n, "n", "negative_binomial"), scalar(p, "p", "negative_binomial")
    if math.isnan(n):
        raise ValueError("n must not be NaN")
    if not n > 0:
        raise ValueError("n <= 0")
    if not 0 < p <= 1:
        raise ValueError("p <= 0, p > 1 or p contains NaNs")
    if not (1.0 - p) / p * (n + 10.0 * math.sqrt(n)) <= MAX_LAM:  # the Poisson's mean
        raise ValueError(NB_TOO_LARGE)
    params = _f64(n, (1.0 - p) / p, 0.0, 0.0)
    return each_draw(rng, "negative_binomial", size, dtypes.int64, params)


# NumPy's refusal when the Poisson's mean (the gamma's mean plus 10 standard deviations)
# could pass the largest mean with int64 counts; no silent clamping of the counts.
NB_TOO_LARGE = "n too large or p too small, see Generator.negative_binomial Notes"


def dirichlet(rng, alpha, size):
    import numpy as np

    from ember.array.creation import asarray, empty
    from ember.array.random import _grid

    host = alpha.to_numpy() if isinstance(alpha, ndarray) else alpha
    host = np.asarray(host, dtype=np.float64)
    if host.ndim != 1:
        raise ValueError("alpha must be a one-dimensional sequence of floats")
    if np.any(host < 0) or np.any(np.isnan(host)):
        raise ValueError("alpha < 0")
    if host.size and not np.any(host > 0):
        raise ValueError("at least one value of alpha must be greater than zero")
    k = host.size
    out = empty(_shape(size) + (k,), dtypes.float64)
    rows = out.size // k if k else 0
    lo, hi = rng._take(rows * k)
    if rows:
        grid, block = _grid(rows)
        dirichlet_kernel[grid, block](out.reshape(-1), rows, k, asarray(host), *rng.key, lo, hi)
    return out


def cov_factor(c, method: str, tol: float):
    """``(A, psd)``: ``A`` (an ember array) with ``A.T @ A = c``, by ``ember.linalg`` (the
    device's solver where it has one), and NumPy's positive-semidefinite check."""
    import numpy as np

    from ember.array import linalg
    from ember.array.creation import asarray

    if c.shape[0] == 0:
        return asarray(c), True
    if method == "cholesky":  # A = L.T, no check (as NumPy's): a non-PD cov raises
        return linalg.cholesky(asarray(c)).mT, True
    if method == "eigh":
        w, v = (x.to_numpy() for x in linalg.eigh(asarray(c)))
        return asarray((v * np.sqrt(np.abs(w))).T.copy()), not np.any(w < -tol)
    u, s, vh = (x.to_numpy() for x in linalg.svd(asarray(c)))
    psd = np.allclose((vh.T * s) @ vh, c, rtol=tol, atol=tol)
    return asarray(np.sqrt(s)[:, None] * vh), psd


def multivariate_normal(rng, mean, cov, size, check_valid, tol, method):
    """``mean + z @ A`` with ``A.T @ A = cov`` and ``z`` standard normals (float64)."""
    import warnings

    import numpy as np

    from ember.array.creation import asarray

    m = np.asarray(mean.to_numpy() if isinstance(mean, ndarray) else mean, np.float64)
    c = np.asarray(cov.to_numpy() if isinstance(cov, ndarray) else cov, np.float64)
    if m.ndim != 1:
        raise ValueError("mean must be 1 dimensional")
    if c.ndim != 2 or c.shape[0] != c.shape[1]:
        raise ValueError("cov must be 2 dimensional and square")
    if m.shape[0] != c.shape[0]:
        raise ValueError("mean and cov must have same length")
    if check_valid not in ("warn", "raise", "ignore"):
        raise ValueError("check_valid must equal 'warn', 'raise', or 'ignore'")
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError("method must be one of {'eigh', 'svd', 'cholesky'}")
    factor, psd = cov_factor(c, method, tol)
    if not psd and check_valid == "raise":
        raise ValueError("covariance is not symmetric positive-semidefinite.")
    if not psd and check_valid == "warn":
        warnings.warn("covariance is not symmetric positive-semidefinite.", RuntimeWarning,
                      stacklevel=3)  # fmt: skip
    z = rng.standard_normal(_shape(size) + m.shape)
    return z @ factor + asarray(m)


# ------------------------------------------------------------ the Generator's argument checks
def uniform_span(lo: float, hi: float, dt: dtypes.DType):
    """``high - low`` of a scalar ``uniform`` in ``dt``, refused as NumPy's when it is not
    finite (an infinite bound, a NaN, or a range beyond the dtype) or negative."""
    import numpy as np

    with np.errstate(over="ignore", invalid="ignore"):
        span = dt(hi - lo)
    if not math.isfinite(float(span)):
        raise OverflowError("uniform: high - low range exceeds valid bounds")
    if span < 0:
        raise ValueError("uniform: high - low < 0")
    return span


def is_int(v: Any) -> bool:
    """Whether ``v`` is a Python or NumPy integer (not an array, not a bool array)."""
    return not isinstance(v, ndarray) and getattr(v, "shape", ()) == () and hasattr(v, "__index__")


def population(v: Any) -> int:
    """``choice``'s ``a`` read from a 0-d array: an integer, or NumPy's ValueError."""
    if not hasattr(v, "__index__"):
        raise ValueError(f"choice: a must be a sequence or an integer, not {type(v).__name__}")
    return int(v.__index__())


def device_array(x: Any, what: str) -> ndarray:
    """An ember array as is; a list, tuple or host array copied to the device (they are the
    user's host data: one copy, as for the distributions' array parameters); a float
    refused with NumPy's message."""
    if isinstance(x, ndarray):
        return x
    if isinstance(x, list | tuple) or hasattr(x, "__array_interface__"):
        from ember.array.creation import asarray

        return asarray(x)
    if what == "choice":
        raise ValueError(f"choice: a must be a sequence or an integer, not {type(x).__name__}")
    raise TypeError(f"{what} takes an int or an array, not {type(x).__name__}")


def sum_tolerance(dt: dtypes.DType) -> float:
    """How far from 1 ``choice``'s probabilities may sum: NumPy's ``sqrt(eps)`` of float64,
    or of ``p``'s own float dtype when that is coarser (float32 weights sum to 1 only
    within float32's rounding)."""
    eps = 2.0**-52
    if dt.is_float and dt.itemsize < 8:
        eps = {4: 2.0**-23, 2: 2.0**-10}.get(dt.itemsize, eps)
    return math.sqrt(eps)
