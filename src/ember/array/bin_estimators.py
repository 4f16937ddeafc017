"""NumPy's bin-count estimators for ``histogram(a, bins="auto")`` and the other strings.

Each estimator gives a bin width from a few statistics of the data (extremes, standard
deviation, quartiles, skewness), which are reduced on the device and read back as NumPy
scalars of their dtype: the width is then computed with NumPy's expressions on those
scalars, so its dtype and rounding are NumPy's (a float32 array's Scott width is a float32).
``stone`` reads back one histogram per candidate count (up to ``max(100, sqrt(n))`` of
them) and scores them on the host, as NumPy does.
"""

from __future__ import annotations

import warnings

import numpy as np

import ember
from ember.array.ndarray import ndarray

ESTIMATORS = ("auto", "doane", "fd", "rice", "scott", "sqrt", "stone", "sturges")
_UNSIGNED = {np.int8: np.uint8, np.int16: np.uint16, np.int32: np.uint32, np.int64: np.uint64}


def _scalar(x: ndarray):
    """A 0-d device result as a NumPy scalar of its dtype."""
    return x.to_numpy()[()]


def span(hi, lo):
    """``hi - lo`` as NumPy's ``_unsigned_subtract``: exact for signed integers (computed
    in the unsigned type of the same width), in the values' dtype otherwise."""
    dt = np.result_type(hi, lo)
    unsigned = _UNSIGNED.get(dt.type)
    if unsigned is None:
        return np.subtract(hi, lo, dtype=dt)
    return np.subtract(np.asarray(hi, dt), np.asarray(lo, dt), casting="unsafe", dtype=unsigned)


def _ptp(x: ndarray):
    return span(_scalar(ember.max(x)), _scalar(ember.min(x)))


def _sturges(x: ndarray, first, last):
    return _ptp(x) / (np.log2(x.size) + 1.0)


def _fd(x: ndarray, first, last):
    q75, q25 = ember.percentile(x, [75, 25]).to_numpy()
    return 2.0 * np.subtract(q75, q25) * x.size ** (-1.0 / 3.0)


def _auto(x: ndarray, first, last):
    fd, sturges = _fd(x, first, last), _sturges(x, first, last)
    return min(fd, sturges) if fd else sturges


def _doane(x: ndarray, first, last):
    if x.size <= 2:
        return 0.0
    sg1 = np.sqrt(6.0 * (x.size - 2) / ((x.size + 1.0) * (x.size + 3)))
    sigma = _scalar(ember.std(x))
    if not sigma > 0.0:
        return 0.0
    g1 = _scalar(ember.mean(((x - ember.mean(x)) / sigma) ** 3))
    return _ptp(x) / (1.0 + np.log2(x.size) + np.log2(1.0 + np.absolute(g1) / sg1))


def _stone(x: ndarray, first, last):
    n, width = x.size, _ptp(x)
    if n <= 1 or width == 0:
        return 0

    def jhat(nbins: int):
        p = ember.histogram(x, bins=nbins, range=(first, last))[0].to_numpy() / n
        return (2 - (n + 1) * p.dot(p)) / (width / nbins)

    upper = max(100, int(np.sqrt(n)))
    nbins = min(range(1, upper + 1), key=jhat)
    if nbins == upper:
        warnings.warn("The number of bins estimated may be suboptimal.", RuntimeWarning,
                      stacklevel=5)  # fmt: skip
    return width / nbins


_SELECTORS = {
    "sqrt": lambda x, f, l: _ptp(x) / np.sqrt(x.size),
    "sturges": _sturges,
    "rice": lambda x, f, l: _ptp(x) / (2.0 * x.size ** (1.0 / 3)),
    "scott": lambda x, f, l: (24.0 * np.pi**0.5 / x.size) ** (1.0 / 3.0) * _scalar(ember.std(x)),
    "fd": _fd,
    "doane": _doane,
    "stone": _stone,
    "auto": _auto,
}


def estimated_bins(x: ndarray, name: str, first, last) -> int:
    """NumPy's number of equal bins over ``[first, last]`` for the estimator ``name`` and
    the (flattened, range-truncated) data ``x``."""
    if x.size == 0:
        return 1
    width = _SELECTORS[name](x, first, last)
    if not width:
        return 1  # e.g. fd with a zero interquartile range
    if x.dtype.kind in "iu" and width < 1:
        width = 1
    return int(np.ceil(span(last, first) / width))


__all__ = ["ESTIMATORS", "estimated_bins", "span"]
