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

import math
import warnings

from ember import dtypes
from ember.array import reduce as plan
from ember.array import reducers as rd
from ember.array.ndarray import ndarray, not_on_device
from ember.dtypes import DType
from ember.runtime.memory import allocate

BOOL, I8, I64, U64 = dtypes.bool_, dtypes.int8, dtypes.int64, dtypes.uint64
F16, F32, F64 = dtypes.float16, dtypes.float32, dtypes.float64


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
            raise ValueError(f"axis {k} is out of bounds for array of dimension {ndim}")
        out.append(k % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"ember.{what}: duplicate value in 'axis': {axis!r}")
    return tuple(sorted(set(out))) if ndim else ()


def run(
    R: rd.Reducer, x, axis, keepdims: bool, out_dtype: DType, what: str, *, p1=0, p2=0,
    ordered: bool = False, mean_dtype: DType | None = None, empty: str | None = None,
    out=None,
):  # fmt: skip
    """Reduce ``axis`` of ``x`` with ``R`` into a new ``out_dtype`` array (and a second one
    of ``mean_dtype`` for ``var_mean``).  ``empty`` is the error for a reduction over no
    elements (operations without an identity); ``out=`` receives the result."""
    x = _array(x, what)
    axes = axes_of(axis, x.ndim, what)
    n = math.prod(x.shape[k] for k in axes)
    if n == 0 and empty is not None:
        raise ValueError(empty)
    shape = _out_shape(x.shape, axes, keepdims)
    be = x.backend
    res = _new(shape, out_dtype, be)
    aux = _new(shape, mean_dtype, be) if mean_dtype is not None else None
    if res.size:
        outs = (plan.flat_out(res), plan.flat_out(aux) if aux is not None else None)
        if outs[1] is None:
            outs = (outs[0], outs[0])
        _launch(R, x, axes, ordered, outs, n, R.p1.numpy.type(p1), R.p2.numpy.type(p2))
    if out is not None:
        return _into(out, res, what)
    return res if aux is None else (res, aux)


def _array(x, what: str) -> ndarray:
    if isinstance(x, ndarray):
        return x
    if type(x).__module__ == "numpy" or isinstance(x, list | tuple | int | float | bool):
        raise not_on_device(x, f"ember.{what}")
    raise TypeError(f"ember.{what} takes an ember array, got a {type(x).__name__}")


def _out_shape(shape, axes, keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if k in axes else n for k, n in enumerate(shape))
    return tuple(n for k, n in enumerate(shape) if k not in axes)


def _new(shape, dt: DType, be) -> ndarray:
    return ndarray(shape, dt, allocate(be, math.prod(shape) * dt.itemsize), be)


def _launch(R, x: ndarray, axes, ordered: bool, outs, n: int, p1, p2) -> None:
    dev = plan.device_of(x.backend)
    p = plan.plan_for(R, x, axes, ordered, dev)
    if p.fallback:  # too many axes to index: a C-contiguous copy, reduced axes last
        from ember.array import manipulation

        kept = [k for k in range(x.ndim) if k not in axes]
        copy = manipulation.ascontiguousarray(manipulation.permute_dims(x, (*kept, *axes)))
        x = manipulation.reshape(copy, (math.prod(x.shape[k] for k in kept), n))
        axes = (1,)
        p = plan.plan_for(R, x, axes, ordered, dev)
    plan.execute(R, p, x, outs, n, p1, p2)


def _into(out, res: ndarray, what: str):
    from ember.array.manipulation import copy_into

    if not isinstance(out, ndarray):
        raise TypeError(f"ember.{what}: out= must be an ember array")
    if out.shape != res.shape:
        raise ValueError(
            f"ember.{what}: out= has shape {out.shape}, the result has shape {res.shape}"
        )
    copy_into(out, res)
    return out


def _dtype_arg(dtype) -> DType | None:
    return None if dtype is None else dtypes.dtype(dtype)


def _int_sum_dtype(dt: DType) -> DType:
    return U64 if dt.kind == "u" else I64


# --------------------------------------------------------------------- sum, prod
def _sum_like(kind: str, x, axis, dtype, out, keepdims, initial, pre=None):
    what = {"sum": "sum", "prod": "prod", "nansum": "nansum", "nanprod": "nanprod"}[kind]
    x = _array(x, what)
    dt = _dtype_arg(dtype)
    if dt is None:
        dt = x.dtype if x.dtype.is_float else _int_sum_dtype(x.dtype)
    product = kind.endswith("prod")
    if dt is BOOL:  # NumPy: a boolean sum is `any`, a boolean product `all`
        return run(rd.logical(not product), x, axis, keepdims, BOOL, what, out=out)
    acc = rd.float_acc(dt) if dt.is_float else dt
    if kind.startswith("nan") and x.dtype.is_float:
        pre = rd.nan_to(acc, 1 if product else 0)
    R = (rd.prod if product else rd.sum_)(acc, dt, pre, "prod" if product else "sum")
    p1 = (1 if product else 0) if initial is None else initial
    return run(R, x, axis, keepdims, dt, what, p1=p1, out=out)


def sum(x, /, axis=None, dtype=None, out=None, keepdims=False, initial=None):  # noqa: A001
    """Sum of the elements over ``axis`` (None: all; an int or a tuple of ints).

    NumPy 2 / Array API dtypes: booleans and signed integers sum in ``int64``, unsigned
    ones in ``uint64``, floats in their own dtype (float16 accumulates in float32);
    ``dtype=`` chooses another.  float32 sums are Kahan-compensated per thread, then
    merged as a tree (see :mod:`ember.array.reducers`).  The sum of no elements is 0
    (plus ``initial``).  Returns an ember array (0-d for a full sum).
    """
    return _sum_like("sum", x, axis, dtype, out, keepdims, initial)


def prod(x, /, axis=None, dtype=None, out=None, keepdims=False, initial=None):
    """Product of the elements over ``axis`` (dtypes as :func:`sum`; of none: 1)."""
    return _sum_like("prod", x, axis, dtype, out, keepdims, initial)


def nansum(x, /, axis=None, dtype=None, out=None, keepdims=False, initial=None):
    """:func:`sum` treating NaN as 0."""
    return _sum_like("nansum", x, axis, dtype, out, keepdims, initial)


def nanprod(x, /, axis=None, dtype=None, out=None, keepdims=False, initial=None):
    """:func:`prod` treating NaN as 1."""
    return _sum_like("nanprod", x, axis, dtype, out, keepdims, initial)


# --------------------------------------------------------------------- min, max
def _compute(dt: DType) -> DType:
    """Comparisons of float16 run in float32 (exact); of booleans in int8."""
    return F32 if dt is F16 else (I8 if dt is BOOL else dt)


def _extremum(largest: bool, skip_nan: bool, x, axis, out, keepdims, initial):
    what = ("nan" if skip_nan else "") + ("max" if largest else "min")
    x = _array(x, what)
    ct = F32 if x.dtype is F16 else x.dtype
    R = rd.extremum(ct, x.dtype, largest, skip_nan and ct.is_float)
    ident = rd.extreme(ct, largest)
    empty = None
    if initial is None:
        name = "maximum" if largest else "minimum"
        empty = f"zero-size array to reduction operation {name} which has no identity"
    p1 = ident if initial is None else initial
    return run(R, x, axis, keepdims, x.dtype, what, p1=p1, empty=empty, out=out)


def max(x, /, axis=None, out=None, keepdims=False, initial=None):  # noqa: A001
    """Largest element over ``axis``; NaN if any element is NaN (as NumPy).  An empty
    reduction is an error unless ``initial`` is given."""
    return _extremum(True, False, x, axis, out, keepdims, initial)


def min(x, /, axis=None, out=None, keepdims=False, initial=None):  # noqa: A001
    """Smallest element over ``axis``; NaN if any element is NaN (as NumPy)."""
    return _extremum(False, False, x, axis, out, keepdims, initial)


def nanmax(x, /, axis=None, out=None, keepdims=False, initial=None):
    """:func:`max` ignoring NaN (NaN only where every element is NaN)."""
    return _extremum(True, True, x, axis, out, keepdims, initial)


def nanmin(x, /, axis=None, out=None, keepdims=False, initial=None):
    """:func:`min` ignoring NaN (NaN only where every element is NaN)."""
    return _extremum(False, True, x, axis, out, keepdims, initial)


amax, amin = max, min


# --------------------------------------------------------------------- argmin, argmax
def _arg(largest: bool, skip_nan: bool, x, axis, out, keepdims):
    what = ("nan" if skip_nan else "") + ("argmax" if largest else "argmin")
    x = _array(x, what)
    if axis is not None and isinstance(axis, tuple | list):
        raise TypeError(f"ember.{what}: axis must be None or an int, got {axis!r}")
    R = rd.arg(_compute(x.dtype), largest, skip_nan and x.dtype.is_float)
    empty = f"attempt to get {what.removeprefix('nan')} of an empty sequence"
    res = run(R, x, axis, keepdims, I64, what, ordered=True, empty=empty)
    if skip_nan and x.dtype.is_float and res.size:
        from ember.array import ufuncs

        if bool(any(ufuncs.equal(res, rd.INDEX_NONE))):  # waits for the device, as NumPy's check
            raise ValueError("All-NaN slice encountered")
    return res if out is None else _into(out, res, what)


def argmax(x, /, axis=None, out=None, *, keepdims=False):
    """Index of the largest element over ``axis`` (None: of the flattened array); the
    first of equal ones, and of NaNs (NaN counts as the largest, as in NumPy)."""
    return _arg(True, False, x, axis, out, keepdims)


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
def any(x, /, axis=None, out=None, keepdims=False):  # noqa: A001
    """Whether any element over ``axis`` is true (not zero; NaN is true)."""
    return run(rd.logical(True), x, axis, keepdims, BOOL, "any", out=out)


def all(x, /, axis=None, out=None, keepdims=False):  # noqa: A001
    """Whether every element over ``axis`` is true (not zero; NaN is true)."""
    return run(rd.logical(False), x, axis, keepdims, BOOL, "all", out=out)


def count_nonzero(x, /, axis=None, *, keepdims=False):
    """Number of elements that are not zero, over ``axis``: an ``int64`` array (0-d for
    ``axis=None``, where NumPy returns a Python int: ``int(...)`` gives it)."""
    R = rd.sum_(I64, I64, rd.nonzero(I64), "count_nonzero")
    return run(R, x, axis, keepdims, I64, "count_nonzero")


# --------------------------------------------------------------------- statistics
def _stat_dtypes(x: ndarray, dtype) -> tuple[DType, DType]:
    """(accumulator, result) of mean/var/std: floats keep their dtype, others float64."""
    dt = _dtype_arg(dtype)
    if dt is None:
        dt = x.dtype if x.dtype.is_float else F64
    return (rd.float_acc(dt) if dt.is_float else F64), dt


def mean(x, /, axis=None, dtype=None, out=None, keepdims=False):
    """Arithmetic mean over ``axis`` (integers: float64; float16: accumulated in float32;
    sums as :func:`sum`).  The mean of no elements is NaN, with NumPy's RuntimeWarning."""
    x = _array(x, "mean")
    acc, dt = _stat_dtypes(x, dtype)
    _warn_empty(x, axis, "mean", 0)
    return run(rd.mean(acc, dt), x, axis, keepdims, dt, "mean", out=out)


def nanmean(x, /, axis=None, dtype=None, out=None, keepdims=False):
    """:func:`mean` of the elements that are not NaN (NaN where there are none)."""
    x = _array(x, "nanmean")
    acc, dt = _stat_dtypes(x, dtype)
    R = rd.moments(acc, dt, "mean", skip_nan=True) if x.dtype.is_float else rd.mean(acc, dt)
    return run(R, x, axis, keepdims, dt, "nanmean", out=out)


def _correction(ddof, correction) -> float:
    if correction is not None:
        if ddof not in (0, None):
            raise ValueError("ember.var/std: give ddof= or correction=, not both")
        return correction
    return ddof or 0


def _moments(what, x, axis, dtype, out, ddof, keepdims, correction, skip_nan=False):
    name = ("nan" if skip_nan else "") + what
    x = _array(x, name)
    acc, dt = _stat_dtypes(x, dtype)
    dof = _correction(ddof, correction)
    _warn_empty(x, axis, name, dof)
    R = rd.moments(acc, dt, what, skip_nan and x.dtype.is_float)
    mean_dt = dt if what.endswith("_mean") else None
    return run(R, x, axis, keepdims, dt, name, p2=dof, mean_dtype=mean_dt, out=out)


def var(x, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None):
    """Variance over ``axis``: the sum of squared deviations from the mean divided by
    ``n - correction`` (``ddof`` is NumPy's name).  One pass (Welford per element, Chan
    et al.'s merge of partial results); never ``E[x**2] - E[x]**2``."""
    return _moments("var", x, axis, dtype, out, ddof, keepdims, correction)


def std(x, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None):
    """Standard deviation over ``axis``: the square root of :func:`var`."""
    return _moments("std", x, axis, dtype, out, ddof, keepdims, correction)


def nanvar(x, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None):
    """:func:`var` of the elements that are not NaN."""
    return _moments("var", x, axis, dtype, out, ddof, keepdims, correction, True)


def nanstd(x, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None):
    """:func:`std` of the elements that are not NaN."""
    return _moments("std", x, axis, dtype, out, ddof, keepdims, correction, True)


def var_mean(x, /, axis=None, *, correction=0, keepdims=False, dtype=None):
    """``(var, mean)`` in one pass over the data (PyTorch's ``torch.var_mean``)."""
    return _moments("var_mean", x, axis, dtype, None, 0, keepdims, correction)


def std_mean(x, /, axis=None, *, correction=0, keepdims=False, dtype=None):
    """``(std, mean)`` in one pass over the data (PyTorch's ``torch.std_mean``)."""
    return _moments("std_mean", x, axis, dtype, None, 0, keepdims, correction)


def _warn_empty(x: ndarray, axis, what: str, dof) -> None:
    """NumPy's RuntimeWarnings for means of nothing and variances with no freedom."""
    axes = axes_of(axis, x.ndim, what)
    n = math.prod(x.shape[k] for k in axes)
    size = math.prod(n for k, n in enumerate(x.shape) if k not in axes)
    if not size or what.startswith("nan"):
        return
    if n == 0 and "mean" in what:
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=4)
    elif n - dof <= 0 and what != "mean":
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=4)
