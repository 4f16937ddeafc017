"""The reductions of the array library: ``sum``, ``prod``, ``min``, ``max``, ``mean``,
``var``, ``std``, ``argmin``, ``argmax``, ``any``, ``all``, ``count_nonzero``, NumPy's
``nan*`` family, and PyTorch's one-pass ``var_mean``/``std_mean``.

Each function resolves its dtypes (NumPy 2 / Array API: integer sums in ``int64`` or
``uint64``, means and variances of integers in ``float64``, float16 data accumulated in
float32), picks a :class:`~ember.array.reducers.Reducer` and hands it to
:func:`run` - one path for all of them (:mod:`ember.array.reduce`).  Results are ember
arrays, 0-d for a full reduction (no implicit copy to the host: ``float(x.sum())`` or
``x.sum().item()`` asks for one).
"""

from __future__ import annotations

import contextvars
import functools
import math
import warnings

from ember import dtypes
from ember.array import masked_reductions as masked
from ember.array import reduce as plan
from ember.array import reducers as rd
from ember.array.creation import on_device
from ember.array.ndarray import ndarray
from ember.array.rules import no_order, refuse_complex_to_real
from ember.dtypes import DType
from ember.errors import axis_error

BOOL, I8, I64, U64 = dtypes.bool_, dtypes.int8, dtypes.int64, dtypes.uint64
F32, F64 = dtypes.float32, dtypes.float64
CALL_CACHE = 4096
_calls: dict = {}  # (function, dtype, shape, strides, backend, arguments) -> Call
_key: contextvars.ContextVar = contextvars.ContextVar("ember_reduction_key", default=None)


# --------------------------------------------------------------------- the common path
def axes_of(axis, ndim: int, what: str) -> tuple[int, ...]:
    """``axis`` (None, an int or a tuple of ints) as a sorted tuple of axes."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, tuple | list) else (axis,)
    out = []
    for a in items:
        try:
            k = int(a.__index__())
        except (AttributeError, TypeError):
            raise TypeError(
                f"ember.{what}: axis must be None, an int or a tuple of ints, got {axis!r}"
            ) from None
        if not -ndim <= k < (ndim or 1) or (ndim == 0 and k not in (0, -1)):
            raise axis_error(f"axis {k} is out of bounds for array of dimension {ndim}")
        out.append(k % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"ember.{what}: duplicate value in 'axis': {axis!r}")
    return tuple(sorted(set(out))) if ndim else ()


def run(
    R: rd.Reducer, x, axis, keepdims: bool, out_dtype: DType, what: str, *, p1=0, p2=0,
    ordered: bool = False, mean_dtype: DType | None = None, empty: str | None = None,
    out=None, cache: bool = True,
):  # fmt: skip
    """Reduce ``axis`` of ``x`` with ``R`` into a new ``out_dtype`` array (and a second one
    of ``mean_dtype`` for ``var_mean``).  ``empty`` is the error for a reduction over no
    elements (operations without an identity); ``out=`` receives the result.  The
    prepared :class:`~ember.array.reduce.Call` serves the next identical call
    (:func:`prepared`) unless ``cache`` is false."""
    x = on_device(x, what)
    axes = axes_of(axis, x.ndim, what)
    n = math.prod(x.shape[k] for k in axes)
    if n == 0 and empty is not None:
        raise ValueError(empty)
    shape = _out_shape(x.shape, axes, keepdims)
    call = plan.Call(R, x, axes, ordered, shape, out_dtype, mean_dtype, n, p1, p2)
    key = _key.get()
    if cache and key is not None and out is None:
        if len(_calls) >= CALL_CACHE:
            _calls.clear()
        _calls[key] = call
    res = call(x)
    return res if out is None else _into(out, res, what)


def prepared(fn):
    """Serve repeated calls of the reduction ``fn`` with the same array layout and
    arguments from the :class:`~ember.array.reduce.Call` its first call prepared: a dict
    lookup, then allocation and launches.  Calls with unhashable arguments (``out=``, an
    axis list) take the full path."""

    @functools.wraps(fn)
    def reduction(x, /, *args, **kwargs):
        if type(x) is not ndarray:
            return fn(x, *args, **kwargs)
        key = (fn, x.dtype, x.shape, x.strides, x.backend, args, tuple(kwargs.items()))
        try:
            call = _calls.get(key)
        except TypeError:
            return fn(x, *args, **kwargs)
        if call is not None:
            return call(x)
        token = _key.set(key)
        try:
            return fn(x, *args, **kwargs)
        finally:
            _key.reset(token)

    return reduction


def _out_shape(shape, axes, keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if k in axes else n for k, n in enumerate(shape))
    return tuple(n for k, n in enumerate(shape) if k not in axes)


def _into(out, res: ndarray, what: str):
    from ember.array.manipulation import into

    return into(out, res, what)


def _dtype_arg(dtype) -> DType | None:
    return None if dtype is None else dtypes.dtype(dtype)


def _int_sum_dtype(dt: DType) -> DType:
    return U64 if dt.kind == "u" else I64


# --------------------------------------------------------------------- sum, prod
def sum_reducer(kind: str, x_dtype: DType, dtype=None) -> tuple[rd.Reducer, DType]:
    """The reducer and result dtype of ``sum``/``prod``/``nansum``/``nanprod``."""
    dt = _dtype_arg(dtype)
    refuse_complex_to_real(x_dtype, dt, kind)
    if dt is None:
        dt = x_dtype if x_dtype.is_inexact else _int_sum_dtype(x_dtype)
    product = kind.endswith("prod")
    if dt is BOOL:  # NumPy: a boolean sum is `any`, a boolean product `all`
        return rd.logical(not product), BOOL
    acc = rd.float_acc(dt) if dt.is_inexact else dt
    nan = kind.startswith("nan") and x_dtype.is_inexact
    pre = rd.nan_to(acc, 1 if product else 0) if nan else None
    return (rd.prod if product else rd.sum_)(acc, dt, pre, "prod" if product else "sum"), dt


def _sum_like(kind: str, x, axis, dtype, out, keepdims, initial, where=True):
    x = on_device(x, kind)
    if where is not True:  # NumPy's where=: the other elements as the identity
        x = masked.identity_masked(kind, x, where, initial)
    R, dt = sum_reducer(kind, x.dtype, dtype)
    p1 = (1 if kind.endswith("prod") else 0) if initial is None else initial
    # (a masked call is never replayed from the cache: the replay would skip the mask)
    return run(R, x, axis, keepdims, dt, kind, p1=p1 if dt is not BOOL else False, out=out,
               cache=where is True)  # fmt: skip


@prepared
def sum(x, /, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):  # noqa: A001
    """Sum of the elements over ``axis`` (None: all; an int or a tuple of ints).

    NumPy 2 / Array API dtypes: booleans and signed integers sum in ``int64``, unsigned
    ones in ``uint64``, floats in their own dtype (float16 accumulates in float32);
    ``dtype=`` chooses another.  float32 sums are Kahan-compensated per thread, then
    merged as a tree (see :mod:`ember.array.reducers`).  The sum of no elements is 0
    (plus ``initial``).  ``where=`` (NumPy's) sums only the elements where it is true
    (:mod:`ember.array.masked_reductions`, as every reduction's).  Returns an ember array
    (0-d for a full sum).
    """
    return _sum_like("sum", x, axis, dtype, out, keepdims, initial, where)


@prepared
def prod(x, /, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """Product of the elements over ``axis`` (dtypes as :func:`sum`; of none: 1)."""
    return _sum_like("prod", x, axis, dtype, out, keepdims, initial, where)


@prepared
def nansum(x, /, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """:func:`sum` treating NaN as 0."""
    return _sum_like("nansum", x, axis, dtype, out, keepdims, initial, where)


@prepared
def nanprod(x, /, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """:func:`prod` treating NaN as 1."""
    return _sum_like("nanprod", x, axis, dtype, out, keepdims, initial, where)


# --------------------------------------------------------------------- min, max
def _compute(dt: DType) -> DType:
    """Comparisons of 16-bit floats run in float32 (exact); of booleans in int8."""
    return F32 if dt.is_narrow else (I8 if dt is BOOL else dt)


def extremum_reducer(x_dtype: DType, largest: bool, skip_nan: bool = False) -> rd.Reducer:
    """The reducer of ``max``/``min`` (``nanmax``/``nanmin``); 16-bit floats compare in
    float32."""
    ct = F32 if x_dtype.is_narrow else x_dtype
    return rd.extremum(ct, x_dtype, largest, skip_nan and ct.is_float)


def _extremum(largest: bool, skip_nan: bool, x, axis, out, keepdims, initial, where=True):
    what = ("nan" if skip_nan else "") + ("max" if largest else "min")
    x = on_device(x, what)
    if where is not True:  # the other elements as `initial` (NumPy requires one)
        x = masked.identity_masked(what, x, where, initial)
    no_order(x.dtype, what)
    R = extremum_reducer(x.dtype, largest, skip_nan)
    empty = None
    if initial is None:
        name = "maximum" if largest else "minimum"
        empty = f"zero-size array to reduction operation {name} which has no identity"
    p1 = R.identity if initial is None else initial
    return run(R, x, axis, keepdims, x.dtype, what, p1=p1, empty=empty, out=out,
               cache=where is True)  # fmt: skip


@prepared
def max(x, /, axis=None, out=None, keepdims=False, initial=None, where=True):  # noqa: A001
    """Largest element over ``axis``; NaN if any element is NaN (as NumPy).  An empty
    reduction is an error unless ``initial`` is given."""
    return _extremum(True, False, x, axis, out, keepdims, initial, where)


@prepared
def min(x, /, axis=None, out=None, keepdims=False, initial=None, where=True):  # noqa: A001
    """Smallest element over ``axis``; NaN if any element is NaN (as NumPy)."""
    return _extremum(False, False, x, axis, out, keepdims, initial, where)


@prepared
def nanmax(x, /, axis=None, out=None, keepdims=False, initial=None, where=True):
    """:func:`max` ignoring NaN (NaN only where every element is NaN)."""
    return _extremum(True, True, x, axis, out, keepdims, initial, where)


@prepared
def nanmin(x, /, axis=None, out=None, keepdims=False, initial=None, where=True):
    """:func:`min` ignoring NaN (NaN only where every element is NaN)."""
    return _extremum(False, True, x, axis, out, keepdims, initial, where)


amax, amin = max, min


@prepared
def bounds(x, /):
    """``(min, max)`` of every element of the non-empty integer or boolean array ``x``, two
    0-d arrays from one pass (the range of an integer ``unique``'s table)."""
    x = on_device(x, "bounds")
    return run(rd.bounds(x.dtype), x, None, False, x.dtype, "bounds", mean_dtype=x.dtype,
               empty="ember.bounds of an empty array")  # fmt: skip


# --------------------------------------------------------------------- argmin, argmax
def arg_reducer(x_dtype: DType, largest: bool, skip_nan: bool = False) -> rd.Reducer:
    """The reducer of ``argmax``/``argmin`` (``nanargmax``/``nanargmin``)."""
    return rd.arg(_compute(x_dtype), largest, skip_nan and x_dtype.is_float)


def _arg(largest: bool, skip_nan: bool, x, axis, out, keepdims):
    what = ("nan" if skip_nan else "") + ("argmax" if largest else "argmin")
    x = on_device(x, what)
    no_order(x.dtype, what)
    if axis is not None and isinstance(axis, tuple | list):
        raise TypeError(f"ember.{what}: axis must be None or an int, got {axis!r}")
    R = arg_reducer(x.dtype, largest, skip_nan)
    empty = f"attempt to get {what.removeprefix('nan')} of an empty sequence"
    res = run(R, x, axis, keepdims, I64, what, ordered=True, empty=empty)
    if skip_nan and x.dtype.is_float and res.size:
        from ember.array import ufuncs

        if bool(any(ufuncs.equal(res, rd.INDEX_NONE))):  # waits for the device, as NumPy's check
            raise ValueError("All-NaN slice encountered")
    return res if out is None else _into(out, res, what)


@prepared
def argmax(x, /, axis=None, out=None, *, keepdims=False):
    """Index of the largest element over ``axis`` (None: of the flattened array); the
    first of equal ones, and of NaNs (NaN counts as the largest, as in NumPy)."""
    return _arg(True, False, x, axis, out, keepdims)


@prepared
def argmin(x, /, axis=None, out=None, *, keepdims=False):
    """Index of the smallest element over ``axis`` (first occurrence; NaN counts as the
    smallest, as in NumPy)."""
    return _arg(False, False, x, axis, out, keepdims)


def nanargmax(x, /, axis=None, out=None, *, keepdims=False):
    """:func:`argmax` ignoring NaN; an all-NaN slice is a ``ValueError`` (NumPy's; the
    check waits for the device)."""
    return _arg(True, True, x, axis, out, keepdims)


def nanargmin(x, /, axis=None, out=None, *, keepdims=False):
    """:func:`argmin` ignoring NaN; an all-NaN slice is a ``ValueError``."""
    return _arg(False, True, x, axis, out, keepdims)


# --------------------------------------------------------------------- any, all, count
@prepared
def any(x, /, axis=None, out=None, keepdims=False, *, where=True):  # noqa: A001
    """Whether any element over ``axis`` is true (not zero; NaN is true)."""
    if where is not True:
        x = masked.identity_masked("any", on_device(x, "any"), where, None)
    return run(rd.logical(True), x, axis, keepdims, BOOL, "any", out=out, cache=where is True)


@prepared
def all(x, /, axis=None, out=None, keepdims=False, *, where=True):  # noqa: A001
    """Whether every element over ``axis`` is true (not zero; NaN is true)."""
    if where is not True:
        x = masked.identity_masked("all", on_device(x, "all"), where, None)
    return run(rd.logical(False), x, axis, keepdims, BOOL, "all", out=out, cache=where is True)


@prepared
def count_nonzero(x, /, axis=None, *, keepdims=False):
    """Number of elements that are not zero, over ``axis``: an ``int64`` array (0-d for
    ``axis=None``, where NumPy returns a Python int: ``int(...)`` gives it)."""
    R = rd.sum_(I64, I64, rd.nonzero(I64), "count_nonzero")
    return run(R, x, axis, keepdims, I64, "count_nonzero")


# --------------------------------------------------------------------- statistics
def stat_reducer(what: str, x_dtype: DType, dtype=None, skip_nan: bool = False):
    """``(reducer, result dtype)`` of ``mean``, ``var``, ``std``, ``var_mean``,
    ``std_mean`` (and their nan-versions): floats keep their dtype, others give float64;
    float16 accumulates in float32.  Complex data: the mean is complex, the variance and
    standard deviation real (the part's dtype)."""
    dt = _dtype_arg(dtype)
    refuse_complex_to_real(x_dtype, dt, ("nan" if skip_nan else "") + what)
    if dt is None:
        dt = x_dtype if x_dtype.is_inexact else F64
    acc = rd.float_acc(dt) if dt.is_inexact else F64
    skip_nan = skip_nan and x_dtype.is_inexact
    if what == "mean":
        return (rd.nanmean(acc, dt) if skip_nan else rd.mean(acc, dt)), dt
    return rd.moments(acc, dt, what, skip_nan), (dt if what == "mean" else dt.real)


@prepared
def mean(x, /, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """Arithmetic mean over ``axis`` (integers: float64; float16: accumulated in float32;
    sums as :func:`sum`).  The mean of no elements is NaN, with NumPy's RuntimeWarning."""
    x = on_device(x, "mean")
    if where is not True:
        return masked.masked_statistic(nanmean, "mean", x, where, axis, keepdims, out,
                                       dtype=dtype)  # fmt: skip
    R, dt = stat_reducer("mean", x.dtype, dtype)
    warned = _warn_empty(x, axis, "mean", 0)
    return run(R, x, axis, keepdims, dt, "mean", out=out, cache=not warned)


@prepared
def nanmean(x, /, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """:func:`mean` of the elements that are not NaN (NaN where there are none)."""
    x = on_device(x, "nanmean")
    if where is not True:
        return masked.masked_statistic(nanmean, "nanmean", x, where, axis, keepdims, out,
                                       dtype=dtype)  # fmt: skip
    R, dt = stat_reducer("mean", x.dtype, dtype, skip_nan=True)
    return run(R, x, axis, keepdims, dt, "nanmean", out=out)


def _correction(ddof, correction) -> float:
    if correction is not None:
        if ddof not in (0, None):
            raise ValueError("ember.var/std: give ddof= or correction=, not both")
        return correction
    return ddof or 0


def _about_mean(what, x, axis, keepdims, ct, rt, out, dof, skip_nan, mean):
    """``var``/``std`` with NumPy 2's ``mean=`` (the mean, shaped as with keepdims=True):
    the squared deviations from it, summed (NaNs skipped for the nan forms) over the count
    less ``dof`` (nanvar: NaN where that is not positive, var: inf or NaN, as NumPy)."""
    from ember.array import manipulation, ufuncs
    from ember.array.creation import asarray

    name = ("nan" if skip_nan else "") + what
    m = mean if isinstance(mean, ndarray) else asarray(mean, device=x.backend)
    d = ufuncs.subtract(manipulation.astype(x, ct, copy=False), manipulation.astype(m, ct))
    sq = ufuncs.real(d * ufuncs.conj(d)) if ct.is_complex else d * d
    if skip_nan:
        total = nansum(sq, axis=axis, keepdims=keepdims)
        n = sum(ufuncs.logical_not(ufuncs.isnan(sq)), axis=axis, keepdims=keepdims)
    else:
        total = sum(sq, axis=axis, keepdims=keepdims)
        n = math.prod(x.shape[k] for k in axes_of(axis, x.ndim, name))
    dofs = ufuncs.subtract(n, dof)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        v = ufuncs.divide(total, ufuncs.maximum(dofs, 0))
        if skip_nan:
            v = ufuncs.where(ufuncs.greater(dofs, 0), v, float("nan"))
    if what == "std":
        v = ufuncs.sqrt(v)
    return manipulation.into(out, manipulation.astype(v, rt, copy=False), name)


def _moments(what, x, axis, dtype, out, ddof, keepdims, correction, skip_nan=False,
             where=True, mean=None):  # fmt: skip
    name = ("nan" if skip_nan else "") + what
    x = on_device(x, name)
    if where is not True:
        stat = nanvar if what == "var" else nanstd
        return masked.masked_statistic(stat, name, x, where, axis, keepdims, out, dtype=dtype,
                                       ddof=_correction(ddof, correction))  # fmt: skip
    R, dt = stat_reducer(what, x.dtype, dtype, skip_nan)
    dof = _correction(ddof, correction)
    if mean is not None:
        return _about_mean(what, x, axis, keepdims, R.ct, dt.real, out, dof, skip_nan, mean)
    warned = _warn_empty(x, axis, name, dof)
    mean_dt = None
    if what.endswith("_mean"):  # (complex data: a real variance and a complex mean)
        mean_dt = dtypes.complex_of(dt) if R.ct.is_complex else dt
    return run(
        R, x, axis, keepdims, dt, name, p2=dof, mean_dtype=mean_dt, out=out, cache=not warned
    )


@prepared
def var(x, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None,
        where=True, mean=None):  # fmt: skip
    """Variance over ``axis``: the sum of squared deviations from the mean divided by
    ``n - correction`` (``ddof`` is NumPy's name).  One pass (Welford per element, Chan
    et al.'s merge of partial results); never ``E[x**2] - E[x]**2``.  ``mean=`` (NumPy 2):
    the mean, shaped as with ``keepdims=True``, used instead of computing it."""
    return _moments("var", x, axis, dtype, out, ddof, keepdims, correction, where=where, mean=mean)


@prepared
def std(x, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None,
        where=True, mean=None):  # fmt: skip
    """Standard deviation over ``axis``: the square root of :func:`var`."""
    return _moments("std", x, axis, dtype, out, ddof, keepdims, correction, where=where, mean=mean)


@prepared
def nanvar(x, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None,
        where=True, mean=None):  # fmt: skip
    """:func:`var` of the elements that are not NaN."""
    return _moments("var", x, axis, dtype, out, ddof, keepdims, correction, True, where, mean)


@prepared
def nanstd(x, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None,
        where=True, mean=None):  # fmt: skip
    """:func:`std` of the elements that are not NaN."""
    return _moments("std", x, axis, dtype, out, ddof, keepdims, correction, True, where, mean)


@prepared
def var_mean(x, /, axis=None, *, correction=0, keepdims=False, dtype=None):
    """``(var, mean)`` in one pass over the data (PyTorch's ``torch.var_mean``)."""
    return _moments("var_mean", x, axis, dtype, None, 0, keepdims, correction)


@prepared
def std_mean(x, /, axis=None, *, correction=0, keepdims=False, dtype=None):
    """``(std, mean)`` in one pass over the data (PyTorch's ``torch.std_mean``)."""
    return _moments("std_mean", x, axis, dtype, None, 0, keepdims, correction)


def _warn_empty(x: ndarray, axis, what: str, dof) -> bool:
    """NumPy's RuntimeWarnings for means of nothing and variances with no freedom; True
    when one was given (such calls are not served from the cache, so they warn again)."""
    axes = axes_of(axis, x.ndim, what)
    n = math.prod(x.shape[k] for k in axes)
    size = math.prod(n for k, n in enumerate(x.shape) if k not in axes)
    if not size or what.startswith("nan"):
        return False
    if n == 0 and "mean" in what:
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=5)
        return True
    if n - dof <= 0 and what != "mean":
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=5)
        return True
    return False
