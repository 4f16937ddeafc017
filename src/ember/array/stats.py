"""NumPy's statistics and counting functions: order statistics (``quantile``,
``percentile``, ``median`` and their ``nan*`` forms), ``average``, ``ptp``, ``bincount``,
``histogram``, ``histogram_bin_edges``, ``digitize``, ``nancumsum``, ``nancumprod``,
``cov`` and ``corrcoef``.

Order statistics sort each slice with :func:`ember.sort` (the reduced axes moved last and
flattened into rows; NaNs sort last), then one kernel (:func:`quantile_kernel`) computes
every ``(q, row)`` result: it counts a row's non-NaN values by a binary search for its
first NaN (the ``nan*`` forms) or sees a NaN in its last element (the others give NaN), turns
``q`` into NumPy's virtual index for the method, reads the one or two order statistics and
interpolates as NumPy's ``_lerp`` does.  The method is a launch argument, so each dtype
compiles one kernel for all methods.

Counting is :func:`count_kernel`: a grid-stride loop of ``ember.atomic_add`` into an int64
count array (a float64 one for weights), skipping indices outside ``[0, length)``.  64-bit
atomics (``int64_atomics``: float64 adds are compare-and-swap loops on the 64-bit pattern)
are on the cpu and CUDA backends and on OpenCL devices with ``cl_khr_int64_base_atomics``;
a device without them counts without atomics (:func:`count_sorted`): a stable sort of the
indices, a search of each bin's start, and one thread per bin summing its weights in order.
``bincount`` reads ``x``'s bounds (one pass, one read) to size the result; ``histogram``
maps each value to its bin (:func:`bin_kernel`: NumPy's computed index and its +-1
correction against the edges for uniform bins, a binary search for explicit edges; -1 for
values outside the edges) and counts those indices.  Uniform edges are computed on the host
from the range (NumPy's ``linspace``), which for ``range=None`` is one device min/max read.

``digitize`` is :func:`ember.searchsorted`; ``nancumsum``/``nancumprod`` a ``where`` then
the scan; ``average``, ``ptp``, ``cov`` and ``corrcoef`` compose reductions, elementwise
operations and ``matmul``.
"""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np

import ember
from ember import dtypes
from ember.array import launch, manipulation
from ember.array.creation import on_device as _device
from ember.array.ndarray import ndarray, not_on_device
from ember.array.reductions import axes_of, bounds
from ember.array.stats_kernels import (
    BLOCK,
    MEDIAN,
    METHODS,
    bin_kernel,
    count_kernel,
    quantile_kernel,
    segment_sum_kernel,
    shared_count_kernel,
)

F64, I64 = dtypes.float64, dtypes.int64


# --------------------------------------------------------------------- helpers
def _on(x, be, what: str) -> ndarray:
    """An argument that may be host data of a few values (q, edges, bins) on ``be``."""
    if isinstance(x, ndarray):
        return x
    return ember.asarray(np.asarray(x), device=be)


_into = manipulation.into


def _has(be, feature: str) -> bool:
    return feature in be.device.features


def _few_bins(be, bins: int) -> bool:
    """Whether ``bins`` uint32 counters fit in half a block's shared memory (then each
    block counts in its own: :func:`~ember.array.stats_kernels.shared_count_kernel`)."""
    return bins * 4 <= be.device.shared_memory_per_block // 2


def _no_bool_subtract(dt, what: str) -> None:
    if dt.kind == "b":
        raise TypeError(
            f"ember.{what}: boolean input cannot be subtracted (NumPy's rule); "
            "convert it first, e.g. x.astype(ember.uint8)"
        )


# --------------------------------------------------------------------- quantiles
def _q_values(q, scale: float, be, what: str):
    """``(q as a 1-d float64 device array, q's shape, q's stand-in for promotion)``."""
    noun = "Percentiles" if scale != 1 else "Quantiles"
    if isinstance(q, ndarray):
        qd = q if scale == 1 else q / scale
        proto = np.empty(0, qd.dtype.numpy)
        qd = manipulation.astype(manipulation.reshape(qd, (-1,)), F64)
        qa = qd.to_numpy()  # a few parameters, checked on the host
    else:
        weak = type(q) in (int, float)
        qa = np.asarray(q) if scale == 1 else np.true_divide(q, scale)
        if qa.dtype.kind not in "iufb":
            raise TypeError(f"ember.{what}: q must be real numbers, got {qa.dtype}")
        proto = (q if scale == 1 else float(qa)) if weak else np.empty(0, qa.dtype)
        qd = ember.asarray(qa.astype(np.float64).reshape(-1), device=be)
    if not (np.all(qa >= 0) and np.all(qa <= 1)):
        raise ValueError(f"ember.{what}: {noun} must be in the range [0, {scale:g}]")
    shape = q.shape if isinstance(q, ndarray) else np.shape(q)
    if len(shape) > 2:
        raise ValueError(f"ember.{what}: q must be a scalar or 1d")
    return qd, tuple(shape), proto


def _quantile(a, q, axis, out, method, keepdims, skip_nan, what, scale=1, weights=None):
    a = _device(a, what)
    if a.dtype.is_complex:
        raise TypeError(f"ember.{what}: a must be an array of real numbers")
    if method not in METHODS and method != MEDIAN:
        raise ValueError(f"ember.{what}: {method!r} is not a valid method; use one of "
                         f"{', '.join(METHODS)}")  # fmt: skip
    if weights is not None:
        return _weighted(a, q, axis, out, method, keepdims, skip_nan, what, scale, weights)
    if method == MEDIAN:
        code, discrete, alpha, beta = MEDIAN, False, 0, 0
        qd, qshape, proto = ember.asarray(np.array([0.5]), device=a.backend), (), 0.5
    else:
        code, discrete, alpha, beta = METHODS[method]
        qd, qshape, proto = _q_values(q, scale, a.backend, what)
        if method == "linear" and np.asarray(proto).dtype.kind in "iub":
            code, discrete = 1, True  # integer q: NumPy takes the elements, no interpolation
    if discrete:
        ot = a.dtype
    elif code == MEDIAN:
        ot = a.dtype if a.dtype.is_float else F64
    else:
        _no_bool_subtract(a.dtype, what)
        ot = dtypes.dtype(np.result_type(a.dtype.numpy, proto))
    return _order_statistics(a, qd, qshape, axis, keepdims, ot, (code, discrete, alpha, beta),
                             skip_nan, what, out)  # fmt: skip


def _weighted(a, q, axis, out, method, keepdims, skip_nan, what, scale, weights):
    """NumPy 2's weighted quantiles (``inverted_cdf`` only: :mod:`.weighted_quantile`)."""
    from ember.array.weighted_quantile import weighted_quantile

    qd, qshape, proto = _q_values(q, scale, a.backend, what)
    res = weighted_quantile(a, qd, qshape, proto, axes_of(axis, a.ndim, what), axis is not None,
                            weights, keepdims, method, what, skip_nan)  # fmt: skip
    return _into(out, res, what)


def _order_statistics(a, qd, qshape, axis, keepdims, ot, how, skip_nan, what, out):
    code, discrete, alpha, beta = how
    axes = axes_of(axis, a.ndim, what)
    rest = [k for k in range(a.ndim) if k not in axes]
    n = math.prod(a.shape[k] for k in axes)
    lead = tuple(a.shape[k] for k in rest)
    rows = math.prod(lead)
    shape = tuple(1 if k in axes else a.shape[k] for k in range(a.ndim)) if keepdims else lead
    shape = qshape + shape
    be = a.backend
    if n == 0 and rows * qd.size:
        if code != MEDIAN and not skip_nan:
            raise IndexError(f"ember.{what}: cannot take a quantile of an empty slice")
        warnings.warn("Mean of empty slice" if code == MEDIAN else "All-NaN slice encountered",
                      RuntimeWarning, stacklevel=3)  # fmt: skip
        res = ember.full(shape, math.nan, ot if ot.is_float else F64, device=be)
        return _into(out, res, what)
    res = launch.new(be, (qd.size * rows,), ot)
    if res.size:
        x = manipulation.permute_dims(a, (*rest, *axes)) if a.ndim else a
        s = ember.sort(manipulation.reshape(x, (rows, n)), axis=-1)
        s = manipulation.ascontiguousarray(s)
        it = F64 if _has(be, "fp64") else dtypes.float32
        ct = ot if ot in (dtypes.float32, F64) else dtypes.float32  # float16: in float32
        k = quantile_kernel(discrete, a.dtype.is_float, ct, it)
        args = (res.size, rows, n, launch.flat1(s), qd, res, code, float(alpha), float(beta),
                bool(skip_nan))  # fmt: skip
        launch.run(k, launch.grid(be, res.size, BLOCK, whole=True), BLOCK, args)
    return _into(out, manipulation.reshape(res, shape), what)


def _quantile_function(what: str, skip_nan: bool, scale: int, doc: str):
    def fn(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
           *, weights=None, interpolation=None):  # fmt: skip
        if interpolation is not None:  # NumPy's deprecated spelling of method=
            warnings.warn("interpolation= is deprecated; use method=", DeprecationWarning, 2)
            method = interpolation
        return _quantile(a, q, axis, out, method, keepdims, skip_nan, what, scale, weights)

    fn.__name__ = fn.__qualname__ = what
    fn.__doc__ = doc
    return fn


quantile = _quantile_function(
    "quantile",
    False,
    1,
    """The ``q``-th quantiles of ``a`` along
    ``axis`` (NumPy 2's ``quantile``).

    ``q`` (a scalar, a sequence or an ember array, in ``[0, 1]``) gives the leading axes
    of the result; ``axis`` is None (all), an int or a tuple.  Every NumPy method is
    supported: ``linear`` (default), ``lower``, ``higher``, ``nearest``, ``midpoint``,
    ``inverted_cdf``, ``averaged_inverted_cdf``, ``closest_observation``,
    ``interpolated_inverted_cdf``, ``hazen``, ``weibull``, ``median_unbiased``,
    ``normal_unbiased``.  Result dtypes are NumPy's: the input's for the methods that pick
    an element, else the promotion of the input with ``q`` (float64 for integers; a Python
    float ``q`` is weak).  A slice holding a NaN gives NaN.  ``overwrite_input`` is
    accepted and ignored (the sort makes a copy); ``weights=`` (NumPy 2's, of ``a``'s shape
    or of ``a`` along ``axis``; ``method="inverted_cdf"`` only) weighs the elements
    (:mod:`.weighted_quantile`); ``interpolation=`` is NumPy's deprecated spelling of
    ``method``.  Computed on the device: a sort along the axis, then one kernel.  An ember
    array ``q`` is read back to check its range.  Differences between integers are taken
    in float64 (NumPy takes them in the integer dtype, where they can wrap).
    """,
)
nanquantile = _quantile_function(
    "nanquantile",
    True,
    1,
    """:func:`quantile` ignoring NaNs
    (NumPy's ``nanquantile``): each slice's quantiles are those of its non-NaN values
    (counted in the kernel: NaNs sort last); an all-NaN slice gives NaN, without NumPy's
    ``All-NaN slice encountered`` warning (that would need a synchronization).  With
    ``weights=``, NaNs are dropped with their weights, and the warning is given (the
    weights' check reads back anyway).""",
)
percentile = _quantile_function(
    "percentile",
    False,
    100,
    """:func:`quantile` with ``q`` in
    percent (``[0, 100]``), NumPy's ``percentile``.""",
)
nanpercentile = _quantile_function(
    "nanpercentile",
    True,
    100,
    """:func:`nanquantile` with
    ``q`` in percent, NumPy's ``nanpercentile``.""",
)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median along ``axis`` (NumPy's ``median``): the mean of the middle one or two
    sorted elements, so float64 for integers and booleans, the input's dtype for floats;
    NaN for a slice holding a NaN, and NaN with a RuntimeWarning for an empty one.
    ``overwrite_input`` is accepted and ignored."""
    return _quantile(a, None, axis, out, MEDIAN, keepdims, False, "median")


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """:func:`median` of the non-NaN values of each slice (NumPy's ``nanmedian``); an
    all-NaN slice gives NaN (without NumPy's warning)."""
    return _quantile(a, None, axis, out, MEDIAN, keepdims, True, "nanmedian")


# --------------------------------------------------------------------- average, ptp
def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """The (weighted) average along ``axis`` (NumPy's ``average``): ``sum(a * w) /
    sum(w)``, in float64 for integer or boolean input (the promotion of ``a`` and ``w``
    otherwise).  ``weights`` has ``a``'s shape, or the shape of ``a`` along ``axis``.
    ``returned=True`` also gives the sum of the weights, broadcast to the result's shape.
    Weights summing to zero raise ``ZeroDivisionError`` (one value read back)."""
    a = _device(a, "average")
    if weights is None:
        avg = ember.mean(a, axis=axis, keepdims=keepdims)
        scl = a.size / max(avg.size, 1)
        return (avg, ember.full(avg.shape, scl, avg.dtype, device=a.backend)) if returned else avg
    w = _on(weights, a.backend, "average")
    if w.shape != a.shape:
        if axis is None:
            raise TypeError("ember.average: axis must be specified when the shapes of a and "
                            "weights differ")  # fmt: skip
        axes = tuple(k % a.ndim for k in (axis if isinstance(axis, tuple) else (axis,)))
        along = tuple(a.shape[k] for k in axes)
        if w.shape != along:
            raise ValueError(f"ember.average: the shape of weights must be that of a along "
                             f"axis {axis}, {along}; got {w.shape}")  # fmt: skip
        w = manipulation.permute_dims(w, tuple(int(k) for k in np.argsort(axes)))
        w = manipulation.reshape(w, tuple(n if k in axes else 1 for k, n in enumerate(a.shape)))
    inexact = a.dtype.is_inexact
    rt = np.result_type(a.dtype.numpy, w.dtype.numpy, *(() if inexact else (np.float64,)))
    rt = dtypes.dtype(rt)
    w = manipulation.astype(w, rt, copy=False)
    scl = ember.sum(w, axis=axis, keepdims=keepdims)
    if bool(ember.any(scl == 0)):
        raise ZeroDivisionError("ember.average: the weights sum to zero, can't be normalized")
    avg = ember.sum(manipulation.astype(a, rt, copy=False) * w, axis=axis, keepdims=keepdims)
    avg = avg / scl
    if returned and scl.shape != avg.shape:
        scl = manipulation.ascontiguousarray(ember.broadcast_to(scl, avg.shape))
    return (avg, scl) if returned else avg


def ptp(a, axis=None, out=None, keepdims=False):
    """Range of values (maximum - minimum) along ``axis``, NumPy's ``ptp``: in ``a``'s
    dtype (integers wrap, as NumPy's); booleans raise ``TypeError`` as in NumPy."""
    a = _device(a, "ptp")
    _no_bool_subtract(a.dtype, "ptp")
    res = ember.max(a, axis=axis, keepdims=keepdims) - ember.min(a, axis=axis, keepdims=keepdims)
    return _into(out, res, "ptp")


# --------------------------------------------------------------------- counting
def count(idx: ndarray, w: ndarray | None, length: int) -> ndarray:
    """``out[k]``: how many ``idx`` equal ``k`` (int64; with weights, the float64 sum of
    their weights) for ``k < length``; other indices are skipped."""
    be = idx.backend
    if not _has(be, "int64_atomics"):
        return count_sorted(idx, w, length)
    out = launch.zeroed(be, (length,), I64 if w is None else F64)
    n = idx.size
    if n and length:
        iv, ib, (ist,) = launch.flat(idx)
        if w is None and _few_bins(be, length):
            # few bins: counted per block in shared memory (H200, 2**24 int64 values, the
            # count kernel: 10 bins 4915 -> 39 us, 1000 bins 900 -> 47, 5000 401 -> 62;
            # the whole bincount 93-115 us against torch.bincount's 172-468)
            grid = launch.grid(be, n, BLOCK)
            args = (n, iv, ib, ist, out, length, 0.0, False, out)  # (no edges)
            launch.run(shared_count_kernel(I64, False), grid, BLOCK, args)
            return out
        wv, wb, (wst,) = (iv, ib, (ist,)) if w is None else launch.flat(w)
        args = (n, iv, ib, ist, wv, wb, wst, out, length)
        grid = launch.grid(be, n, BLOCK, whole=True)
        launch.run(count_kernel(w is not None), grid, BLOCK, args)
    return out


def count_sorted(idx: ndarray, w: ndarray | None, length: int) -> ndarray:
    """:func:`count` without atomics: a stable sort of the indices, each bin's start by a
    binary search, then the differences (or one thread per bin adding its weights in
    order, as NumPy)."""
    be = idx.backend
    keys = manipulation.astype(idx, I64, copy=False)
    order = ember.argsort(keys)
    starts = ember.searchsorted(ember.take(keys, order), ember.arange(length + 1, device=be))
    if w is None:
        return starts[1:] - starts[:-1]
    sw = manipulation.ascontiguousarray(ember.take(manipulation.astype(w, F64, copy=False), order))
    out = launch.new(be, (length,), F64)
    if length:
        launch.run(
            segment_sum_kernel(), launch.grid(be, length, BLOCK), BLOCK, (length, starts, sw, out)
        )
    return out


def bincount(x, /, weights=None, minlength=0):
    """Number of occurrences of each value of the non-negative integers ``x`` (1-d),
    NumPy's ``bincount``: int64 counts of length ``max(x.max() + 1, minlength)``, or with
    ``weights`` (``x``'s shape) the float64 sums of the weights.  Float input raises
    ``TypeError`` (as NumPy's safe cast to int64; so does uint64), a negative value
    ``ValueError``.  One device pass finds ``x``'s bounds (read back to size the result),
    then a kernel counts with ``ember.atomic_add``; weighted sums with float atomics are
    in an unspecified order (rounding may differ from NumPy's in the last bits)."""
    x = _device(x, "bincount")
    if x.ndim != 1:
        raise ValueError(f"ember.bincount: x must be 1-d, got {x.ndim} dimensions")
    if x.dtype.kind not in "iub" or x.dtype is dtypes.uint64:
        raise TypeError(f"ember.bincount: x must hold integers, got {x.dtype.name}; "
                        "convert it with x.astype(ember.int64)")  # fmt: skip
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError("ember.bincount: 'minlength' must not be negative")
    w = None if weights is None else _on(weights, x.backend, "bincount")
    if w is not None:
        if w.shape != x.shape:
            raise ValueError("ember.bincount: the weights and x don't have the same length")
        if w.dtype.is_complex:
            raise TypeError("ember.bincount: complex weights are not supported")
    length = minlength
    if x.size:
        lo, hi = (int(launch.read(v, ())) for v in bounds(x))
        if lo < 0:
            raise ValueError(f"ember.bincount: x must be non-negative, got a minimum of {lo}")
        length = max(hi + 1, minlength)
    return count(x, w, length)


# --------------------------------------------------------------------- histograms
def _outer_edges(a: ndarray, range, what: str):
    if range is not None:
        first, last = range
        if first > last:
            raise ValueError(f"ember.{what}: max must be larger than min in range parameter")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"ember.{what}: supplied range of [{first}, {last}] is not finite")
    elif a.size == 0:
        first, last = 0, 1
    else:
        lo, hi = bounds(a) if not a.dtype.is_inexact else (ember.min(a), ember.max(a))
        first, last = launch.read(lo, ()), launch.read(hi, ())
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"ember.{what}: autodetected range of [{first}, {last}] is not "
                             "finite; drop the NaNs/infs or pass range=")  # fmt: skip
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


def _bin_edges(a: ndarray, bins, range, what: str, weighted: bool = False):
    """``(edges on the device, nb, scale)`` as NumPy's ``_get_bin_edges``; ``scale`` is
    ``nb / (last - first)`` for uniform bins, 0 for explicit edges."""
    outer = None
    if isinstance(bins, str):
        bins, outer = _estimated(a, bins, range, what, weighted)
    if isinstance(bins, ndarray) or np.ndim(bins) == 1:
        edges = _on(bins, a.backend, what)
        if edges.ndim != 1 or edges.size < 1:
            raise ValueError(f"ember.{what}: `bins` must be 1d, when an array")
        if edges.size > 1 and bool(ember.any(edges[:-1] > edges[1:])):
            raise ValueError(f"ember.{what}: `bins` must increase monotonically, when an array")
        return edges, edges.size - 1, 0.0
    if np.ndim(bins) != 0:
        raise ValueError(f"ember.{what}: `bins` must be 1d, when an array")
    try:
        nb = operator.index(bins)
    except TypeError:
        raise TypeError(f"ember.{what}: `bins` must be an integer or an array") from None
    if nb < 1:
        raise ValueError(f"ember.{what}: `bins` must be positive, when an integer")
    first, last = outer or _outer_edges(a, range, what)
    bt = np.result_type(first, last, a.dtype.numpy)
    bt = np.result_type(bt, float) if bt.kind in "iub" else bt
    host = np.linspace(first, last, nb + 1, endpoint=True, dtype=bt)
    if np.any(host[:-1] >= host[1:]):
        raise ValueError(f"ember.{what}: too many bins for data range; cannot create {nb} "
                         "finite-sized bins")  # fmt: skip
    scale = float(nb / (np.float64(host[-1]) - np.float64(host[0])))
    return ember.asarray(host, device=a.backend), nb, scale


def _estimated(a: ndarray, name: str, range, what: str, weighted: bool):
    """``(bins, (first, last))``: the number of bins NumPy's estimator ``name`` gives
    (:mod:`.bin_estimators`) over the data inside ``range`` (all of it without one), and
    the outer edges it used (read back once, not again for the edges)."""
    from ember.array.bin_estimators import ESTIMATORS, estimated_bins

    if name not in ESTIMATORS:
        raise ValueError(f"ember.{what}: {name!r} is not a valid estimator for `bins`; use "
                         f"one of {', '.join(ESTIMATORS)}, a number or the edges")  # fmt: skip
    if weighted:
        raise TypeError(f"ember.{what}: automated estimation of the number of bins is not "
                        "supported for weighted data")  # fmt: skip
    first, last = _outer_edges(a, range, what)
    flat = manipulation.reshape(a, (-1,))
    if range is not None:
        keep = (flat >= first) & (flat <= last)
        if not bool(ember.all(keep)):
            flat = flat[keep]
    return estimated_bins(flat, name, first, last), (first, last)


def _hist_inputs(a, weights, what: str):
    a = _device(a, what)
    if a.dtype.kind == "b":
        warnings.warn("Converting input from bool to uint8 for compatibility.",
                      RuntimeWarning, stacklevel=3)  # fmt: skip
        a = manipulation.astype(a, dtypes.uint8)
    if a.dtype.is_complex:
        raise TypeError(f"ember.{what}: complex input is not supported")
    w = None if weights is None else _on(weights, a.backend, what)
    if w is not None and w.shape != a.shape:
        raise ValueError(f"ember.{what}: weights should have the same shape as a")
    return a, w


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The bin edges :func:`histogram` uses (NumPy's ``histogram_bin_edges``): for an
    integer ``bins``, ``bins + 1`` evenly spaced edges over ``range`` (default: the data's
    min and max, read back), float64 for integer input and the input's float dtype
    otherwise; explicit edges are checked to increase and returned.  A string names one of
    NumPy's estimators (``'auto'``, ``'fd'``, ``'sturges'``, ``'doane'``, ``'scott'``,
    ``'stone'``, ``'rice'``, ``'sqrt'``), which picks the number of equal bins from the data
    (a few statistics read back: :mod:`ember.array.bin_estimators`)."""
    a, w = _hist_inputs(a, weights, "histogram_bin_edges")
    return _bin_edges(a, bins, range, "histogram_bin_edges", w is not None)[0]


def histogram(a, bins=10, range=None, density=None, weights=None):
    """The histogram of ``a`` (flattened), NumPy's ``histogram``: ``(hist, bin_edges)``.

    ``bins`` is a number of equal bins over ``range`` (default: the data's min and max) or
    a 1-d array of increasing edges; every bin is half-open but the last, which includes
    its right edge; values outside the edges (and NaNs) are dropped.  ``hist`` is int64, or
    ``weights``' dtype with weights (summed in float64, or int64 for integer weights
    through float64 as NumPy's bincount; complex weights as their two parts), float64
    (complex128 for complex weights) with ``density=True``.  One kernel maps
    every value to its bin, the counting kernel of :func:`bincount` counts them; without
    weights and with few bins one kernel does both, counting in shared memory.
    String ``bins`` name NumPy's estimators (see :func:`histogram_bin_edges`); a NaN in the
    data without ``range`` raises ``ValueError`` like NumPy."""
    a, w = _hist_inputs(a, weights, "histogram")
    edges, nb, scale = _bin_edges(a, bins, range, "histogram", w is not None)
    flat = manipulation.reshape(a, (-1,))
    be, n = a.backend, flat.size
    et = dtypes.dtype(np.result_type(a.dtype.numpy, edges.dtype.numpy))
    av, ab, (ast,) = launch.flat(flat)
    e = manipulation.ascontiguousarray(edges)
    head = (n, av, ab, ast, e, nb, scale, scale > 0)
    if w is None and _has(be, "int64_atomics") and _few_bins(be, nb):
        # H200, 2**24 float32 in 100 bins: 214 -> 109 us with the range found on the
        # device (51 us given, 147 with edges searched); torch.histc 132
        hist = launch.zeroed(be, (nb,), I64)
        if n:
            k = shared_count_kernel(et, True)
            launch.run(k, launch.grid(be, n, BLOCK), BLOCK, (*head, hist))
    else:
        idx = launch.new(be, (n,), I64)
        if n:
            launch.run(bin_kernel(et), launch.grid(be, n, BLOCK, whole=True), BLOCK, (*head, idx))
        hist = _weighted_count(idx, None if w is None else manipulation.reshape(w, (-1,)), nb)
    if w is not None:
        hist = manipulation.astype(hist, w.dtype, copy=False)
    if density:
        widths = manipulation.astype(edges[1:] - edges[:-1], F64)
        wide = dtypes.complex128 if hist.dtype.is_complex else F64
        hist = manipulation.astype(hist, wide, copy=False)
        hist = hist / widths / ember.sum(hist)
    return hist, edges


def _weighted_count(idx: ndarray, w: ndarray | None, nb: int) -> ndarray:
    """:func:`count` of the bin indices ``idx``; complex weights (NumPy's histogram takes
    them) as their real and imaginary parts' counts, each summed in float64."""
    if w is None or not w.dtype.is_complex:
        return count(idx, w, nb)
    real = count(idx, ember.real(w), nb)
    return manipulation.astype(real, dtypes.complex128) + 1j * count(idx, ember.imag(w), nb)


def digitize(x, bins, right=False):
    """The index of the bin of each value of ``x`` (NumPy's ``digitize``), int64:
    ``bins[i-1] <= x < bins[i]`` for increasing ``bins`` (``<``/``<=`` swapped with
    ``right=True``), mirrored for decreasing ones; by :func:`ember.searchsorted`.  The
    monotonicity check reads one or two booleans back."""
    if isinstance(x, ndarray) and x.dtype.is_complex:
        raise TypeError("ember.digitize: x may not be complex")
    if not isinstance(x, ndarray) and type(x).__module__ == "numpy" and np.ndim(x):
        raise not_on_device(x, "ember.digitize")
    be = x.backend if isinstance(x, ndarray) else None
    b = _on(bins, be, "digitize") if be is not None else _device(bins, "digitize")
    if b.ndim != 1:
        raise ValueError(f"ember.digitize: bins must be 1-d, got {b.ndim} dimensions")
    side = "left" if right else "right"
    if b.size > 1 and bool(ember.any(b[:-1] > b[1:])):  # not increasing
        if bool(ember.any(b[1:] > b[:-1])):
            raise ValueError("ember.digitize: bins must be monotonically increasing or "
                             "decreasing")  # fmt: skip
        return b.size - ember.searchsorted(b[::-1], x, side=side)
    return ember.searchsorted(b, x, side=side)


# --------------------------------------------------------------------- nan scans
def _nan_scan(a, axis, dtype, out, fill, what: str):
    a = _device(a, what)
    if a.dtype.is_inexact:
        a = ember.where(ember.isnan(a), fill, a)
    scan = ember.cumsum if fill == 0 else ember.cumprod
    return scan(a, axis=axis, dtype=dtype, out=out)


def nancumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum treating NaNs as zero (NumPy's ``nancumsum``): flattened for
    ``axis=None``; dtypes as :func:`ember.cumsum` (int64 for narrow integers and bools)."""
    return _nan_scan(a, axis, dtype, out, 0, "nancumsum")


def nancumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product treating NaNs as one (NumPy's ``nancumprod``)."""
    return _nan_scan(a, axis, dtype, out, 1, "nancumprod")


__all__ = [
    "median", "nanmedian", "percentile", "nanpercentile", "quantile", "nanquantile",
    "average", "ptp", "bincount", "histogram", "histogram_bin_edges", "digitize",
    "nancumsum", "nancumprod",
]  # fmt: skip
