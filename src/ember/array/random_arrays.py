"""Array parameters of :class:`ember.array.random.Generator`'s shape-parameter distributions
(``gamma(shape=[...])``, ``beta(a, b)`` with arrays, ``poisson(lam=x)``...): NumPy's rules.

The parameters broadcast with each other and with ``size`` as NumPy's (without ``size``
the result has their broadcast shape; with it, they must broadcast to it:
:func:`.random_draws.array_params`).  NumPy's checks are made on every element (one
reduction and a read each), with NumPy's messages; a NaN passes the checks that NumPy's
pass it through, and gives NaN draws.

* The rejection samplers (gamma, beta, chi-square, F, Student's t, Poisson, binomial,
  negative binomial, triangular) run the scalar draws' device functions with each
  parameter read per value (:func:`.random_dists.each_arrays_kernel`): value ``i`` uses the
  same sub-stream as with scalar parameters, so equal parameters give equal numbers.
* The inverse-CDF families (Weibull, Pareto, power, geometric) transform standard
  exponential draws, as NumPy defines them: ``E ** (1/a)``, ``expm1(E / a)``,
  ``(-expm1(-E)) ** (1/a)`` and ``ceil(E / -log1p(-p))``.
"""

from __future__ import annotations

import math

import ember
from ember import dtypes
from ember.array.ndarray import ndarray
from ember.array.random_dists import MAX_LAM, each_arrays_kernel
from ember.array.random_draws import NB_TOO_LARGE, array_params

F64 = dtypes.float64


def _refuse(bad: ndarray, message: str) -> None:
    """NumPy's ValueError where any element of the bool array ``bad`` is set."""
    if bad.size and bool(ember.any(bad)):
        raise ValueError(message)


def _flat(v, shape: tuple[int, ...], dt) -> tuple[ndarray, int]:
    """A parameter as the kernel reads it: ``(array, step)``, a number or a one-element
    array with step 0, else the parameter broadcast to ``shape``, contiguous, step 1."""
    from ember.array.creation import asarray
    from ember.array.manipulation import ascontiguousarray, broadcast_to

    if not isinstance(v, ndarray):
        return asarray([v], dtype=dt), 0
    v = v.astype(dt, copy=False)
    if v.size == 1:
        return ascontiguousarray(v.reshape(1)), 0
    return ascontiguousarray(broadcast_to(v, shape)).reshape(-1), 1


def _draw(rng, name: str, shape: tuple[int, ...], out_dt, params, param_dt=F64,
          sample=None) -> ndarray:  # fmt: skip
    """One value per element of ``shape`` from the sampler ``name`` (``sample``: one not in
    :mod:`.random_dists`' table) with its four parameters (arrays or numbers;
    ``param_dt``: their dtype, binomial's ``n`` int64)."""
    from ember.array.creation import empty
    from ember.array.random import _grid

    out = empty(shape, out_dt)
    n = out.size
    lo, hi = rng._take(n)
    if n:
        dts = param_dt if isinstance(param_dt, tuple) else (param_dt,) * 4
        flat = [x for v, dt in zip(params, dts, strict=True) for x in _flat(v, shape, dt)]
        grid, block = _grid(n)
        each_arrays_kernel(name, sample)[grid, block](out.reshape(-1), n, *rng.key, lo, hi,
                                                      *flat)  # fmt: skip
    return out


# --------------------------------------------------------------------- gamma family
def standard_gamma(rng, shape, size, dt) -> ndarray:
    """``dt``: float32 (computed in float32, as NumPy does) or float64."""
    out_shape, (k,) = array_params("standard_gamma", size, dt, shape)
    _refuse(k < 0, "shape < 0")
    name = "gamma32" if dt is dtypes.float32 else "gamma64"
    return _draw(rng, name, out_shape, dt, (k, 1.0, 0.0, 0.0), dt)


def gamma(rng, shape, scale, size) -> ndarray:
    out_shape, (k, theta) = array_params("gamma", size, F64, shape, scale)
    _refuse(k < 0, "shape < 0")
    _refuse(theta < 0, "scale < 0")
    return _draw(rng, "gamma64", out_shape, F64, (k, theta, 0.0, 0.0))


def beta(rng, a, b, size) -> ndarray:
    out_shape, (a, b) = array_params("beta", size, F64, a, b)
    _refuse(a <= 0, "a <= 0")
    _refuse(b <= 0, "b <= 0")
    return _draw(rng, "gamma_pair", out_shape, F64, (a, b, 0.0, 0.0))


def chisquare(rng, df, size) -> ndarray:
    out_shape, (df,) = array_params("chisquare", size, F64, df)
    _refuse(df <= 0, "df <= 0")
    return _draw(rng, "gamma64", out_shape, F64, (df / 2, 2.0, 0.0, 0.0))


def f(rng, dfnum, dfden, size) -> ndarray:
    out_shape, (num, den) = array_params("f", size, F64, dfnum, dfden)
    _refuse(num <= 0, "dfnum <= 0")
    _refuse(den <= 0, "dfden <= 0")
    return _draw(rng, "gamma_pair", out_shape, F64, (num / 2, den / 2, 1.0, ember.log(den / num)))


def standard_t(rng, df, size) -> ndarray:
    out_shape, (df,) = array_params("standard_t", size, F64, df)
    _refuse(df <= 0, "df <= 0")
    return _draw(rng, "gamma_pair", out_shape, F64, (1.0, df / 2, 2.0, ember.log(df / 2)))


# --------------------------------------------------------------------- counts
def poisson(rng, lam, size) -> ndarray:
    out_shape, (lam,) = array_params("poisson", size, F64, lam)
    _refuse(lam > MAX_LAM, "lam value too large")
    _refuse(~(lam >= 0), "lam < 0 or lam contains NaNs")
    return _draw(rng, "poisson", out_shape, dtypes.int64, (lam, 0.0, 0.0, 0.0))


def integer_counts(n) -> None:
    """NumPy's refusal of an array of floats (0-d too) as binomial's ``n``; a list of Python
    floats, or a float scalar, is truncated, as there."""
    import numpy as np

    kind = str(getattr(n, "dtype", "int"))
    if isinstance(n, ndarray | np.ndarray) and kind.startswith(("float", "complex", "bfloat")):
        raise TypeError(f"binomial: n must hold integers; cannot cast array data from {kind} "
                        "to int64 according to the rule 'safe' (as NumPy)")  # fmt: skip


def binomial(rng, n, p, size) -> ndarray:
    """``n``: integers (:func:`integer_counts`)."""
    integer_counts(n)
    out_shape, (n, p) = array_params("binomial", size, F64, n, p)
    n = ember.trunc(n)
    _refuse(n < 0, "n < 0")
    _refuse(~((p >= 0) & (p <= 1)), "p < 0, p > 1 or p contains NaNs")
    params = (n.astype(dtypes.int64), p, 0.0, 0.0)
    return _draw(rng, "binomial", out_shape, dtypes.int64, params, (dtypes.int64, F64, F64, F64))


def negative_binomial(rng, n, p, size) -> ndarray:
    out_shape, (n, p) = array_params("negative_binomial", size, F64, n, p)
    _refuse(ember.isnan(n), "n must not be NaN")
    _refuse(n <= 0, "n <= 0")
    _refuse(~((p > 0) & (p <= 1)), "p <= 0, p > 1 or p contains NaNs")
    _refuse(~((1.0 - p) / p * (n + 10.0 * ember.sqrt(n)) <= MAX_LAM), NB_TOO_LARGE)
    return _draw(rng, "negative_binomial", out_shape, dtypes.int64, (n, (1.0 - p) / p, 0.0, 0.0))


def triangular(rng, left, mode, right, size) -> ndarray:
    out_shape, (lo, mid, hi) = array_params("triangular", size, F64, left, mode, right)
    _refuse(lo > mid, "left > mode")
    _refuse(mid > hi, "mode > right")
    _refuse(lo == hi, "left == right")
    return _draw(rng, "triangular", out_shape, F64, (lo, mid, hi, 0.0))


def integers(rng, low, high, size, dt, endpoint: bool) -> ndarray:
    """``integers`` with array bounds.  The bounds are read to the host (an ember array is
    copied back: a synchronization) and checked there exactly, with NumPy's rules: float
    bounds truncated, ``low`` and ``high`` within ``dt`` (``high`` exclusive unless
    ``endpoint``), ``low < high`` (``<=`` with ``endpoint``); each value then owns a block
    of the stream, scaled to its span as the scalar draws scale theirs."""
    import numpy as np

    from ember.array.creation import asarray
    from ember.array.random import _bounds
    from ember.array.random_kernels import s_integers

    lo_ok, hi_ok = _bounds(dt)
    lows, highs = (_host_integers(v) for v in (low, high))
    unsigned = dt.kind == "u" and dt.itemsize == 8
    for what, ok in (("low", lo_ok <= lows), ("high", lo_ok <= highs)):
        if not np.all(ok):
            raise ValueError(f"{what} is out of bounds for {dt}")
    if not np.all(highs <= hi_ok if endpoint else highs <= hi_ok + 1):
        raise ValueError(f"high is out of bounds for {dt}")
    if not np.all(lows <= highs if endpoint else lows < highs):
        raise ValueError("low > high" if endpoint else "low >= high")
    if object in (lows.dtype, highs.dtype):  # Python ints past 64 bits (high = 2**64)
        wrap = 1 << 64
        lows, highs = lows.astype(object), highs.astype(object)
        base = (lows % wrap).astype(np.uint64)
        span = ((highs - lows + int(endpoint)) % wrap).astype(np.uint64)  # 0: 2**64
    else:
        as64 = np.uint64 if unsigned else np.int64
        lows, highs = lows.astype(as64), highs.astype(as64)  # in range now
        base = lows.astype(np.uint64)
        span = highs.astype(np.uint64) - base + np.uint64(endpoint)  # 0: 2**64
    shape, (base, width) = array_params("integers", size, dtypes.uint64,
                                        asarray(base), asarray(span))  # fmt: skip
    u64 = (dtypes.uint64,) * 4
    return _draw(rng, "integers", shape, dt, (base, width, 0, 0), u64, s_integers)


def _host_integers(v):
    """A bound as a NumPy integer array (floats truncated, as NumPy's ``integers``), or an
    object array of Python ints for bounds no 64-bit dtype holds."""
    import numpy as np

    a = v.to_numpy() if isinstance(v, ndarray) else np.asarray(v)
    if a.dtype.kind == "f":
        a = np.trunc(a)
        a = a.astype(np.uint64 if a.size and a.min() >= 0 and a.max() >= 2**63 else np.int64)
    elif a.dtype.kind == "O":  # Python ints beyond int64 and uint64 (2**64): exact, as ints
        a = np.array([int(x) for x in a.ravel()], dtype=object).reshape(a.shape)
    elif a.dtype.kind not in "iu":
        a = a.astype(np.int64)
    return a


# --------------------------------------------------------------------- inverse CDF
def weibull(rng, a, size) -> ndarray:
    out_shape, (a,) = array_params("weibull", size, F64, a)
    _refuse(a < 0, "a < 0")
    e = rng.standard_exponential(out_shape)
    return ember.where(a == 0, 0.0, e ** (1.0 / a))


def pareto(rng, a, size, name: str = "pareto") -> ndarray:
    """NumPy's ``pareto`` (Lomax: ``expm1(E / a)``) or ``power`` (``(1 - exp(-E)) **
    (1 / a)``, in ``[0, 1]``)."""
    out_shape, (a,) = array_params(name, size, F64, a)
    _refuse(a <= 0, "a <= 0")
    e = rng.standard_exponential(out_shape)
    if name == "power":
        return (-ember.expm1(-e)) ** (1.0 / a)
    return ember.expm1(e / a)


def geometric(rng, p, size) -> ndarray:
    """Trials up to the first success: ``ceil(E / -log1p(-p))``, at least 1 (int64)."""
    out_shape, (p,) = array_params("geometric", size, F64, p)
    _refuse(~((p > 0) & (p <= 1)), "p <= 0, p > 1 or p contains NaNs")
    e = rng.standard_exponential(out_shape)
    k = ember.ceil(e / -ember.log1p(-p))
    k = ember.minimum(ember.maximum(k, 1.0), math.ldexp(1.0, 62))  # p = 1: E / inf = 0
    return k.astype(dtypes.int64)


__all__ = [
    "standard_gamma", "gamma", "beta", "chisquare", "f", "standard_t", "poisson", "binomial",
    "negative_binomial", "triangular", "weibull", "pareto", "geometric", "integers",
]  # fmt: skip
