"""NumPy's multidimensional histograms: ``histogramdd`` and ``histogram2d``, on the
machinery of :func:`ember.histogram` (:mod:`ember.array.stats`).

For each dimension ``d`` the edges are made as NumPy's ``histogramdd`` makes them: an
integer ``bins[d]`` gives ``bins[d] + 1`` float64 edges by ``numpy.linspace`` over the range
(default: the column's min and max, one device read each, through
:func:`ember.array.stats._outer_edges`, the helper :func:`ember.histogram` uses), an array
gives the edges as they are (checked to increase: one boolean read).  The stats module's
:func:`~ember.array.stats_kernels.bin_kernel` then maps every value of the column to its bin
by a binary search among the edges (every bin half-open but the last, which holds its right
edge; -1 outside the edges, NaN included: NumPy's ``searchsorted`` with its ``on_edge``
correction gives the same bins).  The per-dimension bins combine into one flat C-order
index (-1 when any dimension is outside; :func:`combine_kernel`, in place), counted by the
stats module's :func:`count` (the atomic counting kernel of :func:`ember.bincount`, or its
sort-based twin on devices without 64-bit atomics).  Nothing copies the sample to the host.

As NumPy, the histogram is float64 (weighted or not); ``density=True`` divides by the
bin volumes and the total: the edges (a few values per dimension) and the total are read
back, the volumes multiplied out on the host and the histogram divided once on the device.
"""

from __future__ import annotations

import functools
import math
import operator

import numpy as np

import ember
from ember import dtypes
from ember.array import kernels, launch, manipulation
from ember.array.ndarray import ndarray, not_on_device
from ember.array.stats import _outer_edges, count
from ember.array.stats_kernels import BLOCK, bin_kernel
from ember.compiler.kernel import Kernel

F64, I64 = dtypes.float64, dtypes.int64


def _columns(sample, what: str) -> list[ndarray]:
    """The ``D`` columns of ``sample`` (an ``(N, D)`` array, a 1-d array: ``D = 1``, or a
    sequence of ``D`` equally long 1-d arrays), as 1-d views or arrays on one device."""
    if isinstance(sample, ndarray):
        if sample.ndim > 2:
            raise ValueError(f"ember.{what}: sample must be an (N, D) array or a sequence of D "
                             f"1-d arrays, got shape {sample.shape}")  # fmt: skip
        x = manipulation.reshape(sample, (-1, 1)) if sample.ndim < 2 else sample
        return [x[:, d] for d in range(x.shape[1])]
    if not isinstance(sample, list | tuple) or not sample:
        raise TypeError(f"ember.{what}: sample must be an ember array or a non-empty list of "
                        f"them, got {type(sample).__name__}")  # fmt: skip
    be = next((c.backend for c in sample if isinstance(c, ndarray)), None)
    cols = []
    for c in sample:
        if not isinstance(c, ndarray):
            if type(c).__module__ == "numpy" and np.ndim(c):
                raise not_on_device(c, f"ember.{what}")
            c = ember.asarray(c, device=be)
        cols.append(manipulation.reshape(c, (-1,)) if c.ndim == 0 else c)
    if any(c.ndim != 1 for c in cols) or len({c.shape[0] for c in cols}) != 1:
        raise ValueError(f"ember.{what}: the sample's coordinates must be 1-d arrays of one "
                         f"length, got shapes {[c.shape for c in cols]}")  # fmt: skip
    return cols


def _edges(col: ndarray, spec, rng, d: int, what: str) -> ndarray:
    """Dimension ``d``'s edges on the device, NumPy's rules for ``bins[d]``."""
    if isinstance(spec, ndarray) and spec.ndim == 0:
        spec = spec.item()
    ndim = spec.ndim if isinstance(spec, ndarray) else np.ndim(spec)
    if ndim == 0:
        if spec < 1:
            raise ValueError(f"ember.{what}: `bins[{d}]` must be positive, when an integer")
        try:
            n = operator.index(spec)
        except TypeError:
            raise TypeError(f"ember.{what}: `bins[{d}]` must be an integer, when a "
                            "scalar") from None  # fmt: skip
        first, last = _outer_edges(col, rng, what)
        return ember.asarray(np.linspace(first, last, n + 1), device=col.backend)
    if ndim != 1:
        raise ValueError(f"ember.{what}: `bins[{d}]` must be a scalar or 1d array")
    if isinstance(spec, ndarray):
        e = spec
    elif type(spec).__module__ == "numpy":
        raise not_on_device(spec, f"ember.{what}")
    else:
        e = ember.asarray(np.asarray(spec), device=col.backend)
    if e.dtype.is_complex or e.dtype.kind == "b":
        raise TypeError(f"ember.{what}: `bins[{d}]` must hold real numbers, not {e.dtype}")
    if e.shape[0] > 1 and bool(ember.any(e[:-1] > e[1:])):
        raise ValueError(f"ember.{what}: `bins[{d}]` must be monotonically increasing, when "
                         "an array")  # fmt: skip
    return e


def _bins(col: ndarray, e: ndarray) -> ndarray:
    """The bin of each value of ``col`` among the edges ``e`` (int64, -1 outside)."""
    n, be = col.shape[0], col.backend
    idx = launch.new(be, (n,), I64)
    if n:
        et = dtypes.dtype(np.result_type(col.dtype.numpy, e.dtype.numpy))
        cv, cb, (cs,) = launch.flat(col)
        edges = manipulation.ascontiguousarray(e)
        args = (n, cv, cb, cs, edges, e.shape[0] - 1, 0.0, False, idx)
        launch.run(bin_kernel(et), launch.grid(be, n, BLOCK, whole=True), BLOCK, args)
    return idx


@functools.cache
def combine_kernel() -> Kernel:
    """``flat[i] = flat[i] * nb + k[i]``, or -1 when either is outside (negative)."""

    def histogram_combine(n, flat, k, nb):
        i = ember.global_id()
        while i < n:
            f = flat[i]
            b = k[i]
            flat[i] = -1 if f < 0 or b < 0 else f * nb + b
            i += ember.global_size()

    return kernels._named(histogram_combine, "histogram_combine")


def _combine(flat: ndarray | None, k: ndarray, nb: int) -> ndarray:
    """The C-order index of the bins so far (``flat``) and the next dimension's ``k``."""
    n = k.shape[0]
    if flat is None or n == 0:
        return k
    launch.run(combine_kernel(), launch.grid(k.backend, n, BLOCK), BLOCK, (n, flat, k, nb))
    return flat


def _per_dimension(value, D: int, name: str, what: str) -> list:  # noqa: N803
    if value is None:
        return [None] * D
    if len(value) != D:
        raise ValueError(f"ember.{what}: {name} argument must have one entry per dimension "
                         f"({D}), got {len(value)}")  # fmt: skip
    return list(value)


def _bin_specs(bins, D: int, what: str) -> list:  # noqa: N803
    try:
        m = len(bins)
    except TypeError:  # one integer for every dimension
        return [bins] * D
    if isinstance(bins, ndarray) and bins.ndim == 0:
        return [bins] * D
    if m != D:
        raise ValueError(f"ember.{what}: the dimension of bins ({m}) must be equal to the "
                         f"dimension of the sample x ({D})")  # fmt: skip
    return [bins[d] for d in range(D)]


def _weights(weights, n: int, be, what: str) -> ndarray | None:
    if weights is None:
        return None
    if not isinstance(weights, ndarray):
        if type(weights).__module__ == "numpy" and np.ndim(weights):
            raise not_on_device(weights, f"ember.{what}")
        weights = ember.asarray(weights, device=be)
    if weights.shape != (n,):
        raise ValueError(f"ember.{what}: weights must be 1-d with one weight per sample "
                         f"point ({n}), got shape {weights.shape}")  # fmt: skip
    if weights.dtype.is_complex:
        raise TypeError(f"ember.{what}: complex weights are not supported")
    return weights


def histogramdd(sample, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """The multidimensional histogram of ``sample`` (NumPy's ``histogramdd``):
    ``(hist, edges)``.

    ``sample`` is an ``(N, D)`` ember array (a 1-d array is ``D = 1``) or a sequence of
    ``D`` 1-d arrays (the coordinates).  ``bins`` is one integer for every dimension or a
    sequence of ``D`` specs, each an integer (that many equal bins over ``range[d]``,
    default the data's min and max) or an array of increasing edges.  Every bin is
    half-open but the last of each dimension, which holds its right edge; points outside
    (NaNs too) are dropped.  ``hist`` is float64 of shape ``(nbins_0, ..., nbins_{D-1})``
    (the weights' sums with ``weights``, of length ``N``); ``density=True`` divides by the
    bin volumes and the total.  ``edges`` is the list of the ``D`` edge arrays (float64 for
    integer bins, as NumPy's ``linspace``).  On the device: the bins of each dimension by
    the kernel of :func:`ember.histogram`, then one count of the combined index.  Reads
    back: each automatic range's min and max, one boolean per edge array; with
    ``density``, the edges and the total."""
    cols = _columns(sample, "histogramdd")
    D, n, be = len(cols), cols[0].shape[0], cols[0].backend  # noqa: N806
    for c in cols:
        if c.dtype.is_complex:
            raise TypeError("ember.histogramdd: complex samples are not supported")
    cols = [manipulation.astype(c, dtypes.uint8) if c.dtype.kind == "b" else c for c in cols]
    specs = _bin_specs(bins, D, "histogramdd")
    ranges = _per_dimension(range, D, "range", "histogramdd")
    edges = [_edges(c, s, r, d, "histogramdd") for d, (c, s, r) in
             enumerate(zip(cols, specs, ranges, strict=True))]  # fmt: skip
    w = _weights(weights, n, be, "histogramdd")
    shape = tuple(e.shape[0] - 1 for e in edges)
    flat = None
    for c, e, nb in zip(cols, edges, shape, strict=True):
        flat = _combine(flat, _bins(c, e), nb)
    hist = count(flat, w, math.prod(shape))
    hist = manipulation.reshape(manipulation.astype(hist, F64, copy=False), shape)
    if density:  # the volumes from the edges read back (a few values), one division
        widths = [np.diff(e.to_numpy()).astype(np.float64) for e in edges]
        volume = functools.reduce(np.multiply.outer, widths) if D > 1 else widths[0]
        total = float(launch.read(ember.sum(hist), ()))
        hist = hist / ember.asarray(volume * total, device=be)
    return hist, edges


def histogram2d(x, y, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """The two-dimensional histogram of the points ``(x[i], y[i])`` (NumPy's
    ``histogram2d``): ``(hist, xedges, yedges)``, ``hist`` float64 of shape ``(nx, ny)``.

    ``bins`` is an integer (both dimensions), a pair of integers or edge arrays
    ``[bx, by]``, or one edge array used for both (any length but 1 and 2, as NumPy's
    rule); ``range`` is ``[[xmin, xmax], [ymin, ymax]]``.  See :func:`histogramdd`."""
    for v in (x, y):
        if isinstance(v, ndarray) and v.ndim != 1:
            raise ValueError(f"ember.histogram2d: x and y must be 1-d, got shape {v.shape}")
    if isinstance(x, ndarray) and isinstance(y, ndarray) and x.shape != y.shape:
        raise ValueError("ember.histogram2d: x and y must have the same length.")
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if isinstance(bins, ndarray) and bins.ndim == 0:
        nb = 1
    if nb not in (1, 2):
        bins = [bins, bins]
    hist, edges = histogramdd([x, y], bins, range, density, weights)
    return hist, edges[0], edges[1]


__all__ = ["histogramdd", "histogram2d"]
