"""NumPy 2's weighted quantiles: ``quantile(a, q, weights=w, method="inverted_cdf")``.

NumPy's definition: sort each slice, carry the weights along, form the empirical CDF
(cumulative weights in float64 over their total, cast to ``q``'s float dtype), and take the
first element whose CDF reaches ``q`` (CDF values of 0, from leading zero weights, count
as -1 so that ``q = 0`` takes the first element of positive weight).  Here the slices are
the rows of a ``(rows, n)`` view; each row's position for each ``q`` is the count of its
CDF values below ``q``, a broadcast comparison and a sum, then a gather.  A slice whose
largest element is NaN gives NaN, as NumPy's.

The ``nan`` forms (``nanquantile``/``nanpercentile``, ``skip_nan``) drop the NaNs with their
weights, as NumPy's: a NaN's weight counts as 0, and NaNs sort last, after every element
that can be taken.  A slice of NaNs only gives NaN (and NumPy's ``All-NaN slice
encountered`` warning).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import ember
from ember import dtypes
from ember.array import manipulation
from ember.array.ndarray import ndarray
from ember.array.scan import cumulative_fractions


def weighted_quantile(a: ndarray, qd: ndarray, qshape: tuple, proto, axes: tuple,
                      axis_given: bool, weights, keepdims: bool, method: str,
                      what: str, skip_nan: bool = False) -> ndarray:  # fmt: skip
    """The weighted ``inverted_cdf`` quantiles ``qd`` (float64, flattened; ``qshape`` their
    shape; ``proto`` their dtype's example) of ``a`` over ``axes``; ``skip_nan``: of the
    elements that are not NaN."""
    if method != "inverted_cdf":
        raise ValueError(f"ember.{what}: only method 'inverted_cdf' supports weights, got "
                         f"{method!r}")  # fmt: skip
    w = _weights(a, weights, axes, axis_given, what)
    rest = [k for k in range(a.ndim) if k not in axes]
    n = math.prod(a.shape[k] for k in axes)
    lead = tuple(a.shape[k] for k in rest)
    rows = math.prod(lead)
    if n == 0:
        raise IndexError(f"ember.{what}: cannot take a quantile of an empty slice")
    order = (*rest, *axes)
    x = manipulation.reshape(manipulation.permute_dims(a, order), (rows, n))
    w = manipulation.reshape(manipulation.permute_dims(w, order), (rows, n))
    skip_nan = skip_nan and a.dtype.is_float
    if skip_nan:
        w = ember.where(ember.isnan(x), 0, w)
    idx = ember.argsort(x, axis=-1, stable=True)
    xs = ember.take_along_axis(x, idx, axis=-1)
    cdf = cumulative_fractions(ember.take_along_axis(w, idx, axis=-1).astype(dtypes.float64))
    bad = ember.isnan(cdf[:, -1])
    if skip_nan:  # (the last sorted element is NaN where they all are)
        only_nan = ember.isnan(xs[:, -1]) & ember.isnan(xs[:, 0])
        bad, only_nan = bad & ~only_nan, ember.any(only_nan)
    if bool(ember.any(bad)):  # (one synchronization for both)
        raise ValueError(f"ember.{what}: weights included NaN, inf or were all zero")
    if skip_nan and bool(only_nan):
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=4)
    qt = np.asarray(proto).dtype
    if qt.kind == "f" and qt != np.float64:  # NumPy compares in q's float dtype
        cdf, qd = cdf.astype(qt.name), qd.astype(qt.name)
    cdf = ember.where(cdf == 0, -1, cdf)
    below = ember.sum(cdf[:, None, :] < qd[None, :, None], axis=-1)  # (rows, len(q))
    picked = ember.take_along_axis(xs, ember.minimum(below, n - 1), axis=-1)
    if a.dtype.is_float and not skip_nan:
        picked = ember.where(ember.isnan(xs[:, -1:]), xs[:, -1:], picked)
    shape = tuple(1 if k in axes else a.shape[k] for k in range(a.ndim)) if keepdims else lead
    return manipulation.reshape(manipulation.permute_dims(picked, (1, 0)), qshape + shape)


def _weights(a: ndarray, weights, axes: tuple, axis_given: bool, what: str) -> ndarray:
    """``weights`` as an array of ``a``'s shape, checked as NumPy checks them."""
    w = weights if isinstance(weights, ndarray) else ember.asarray(np.asarray(weights),
                                                                   device=a.backend)  # fmt: skip
    if w.shape != a.shape:
        if not axis_given:
            raise TypeError(f"ember.{what}: axis must be given when the shapes of a and "
                            "weights differ")  # fmt: skip
        if w.shape != tuple(a.shape[k] for k in axes):
            raise ValueError(f"ember.{what}: the shape of weights must be that of a, or of a "
                             "along the given axis")  # fmt: skip
        w = manipulation.permute_dims(w, tuple(int(k) for k in np.argsort(axes)))
        w = manipulation.reshape(w, tuple(s if k in axes else 1 for k, s in enumerate(a.shape)))
        w = ember.broadcast_to(w, a.shape)
    if w.size and bool(ember.any(w < 0)):
        raise ValueError(f"ember.{what}: weights must be non-negative")
    return w


__all__ = ["weighted_quantile"]
