"""NumPy's function-applying helpers: ``piecewise``, ``apply_along_axis`` and
``apply_over_axes``.  They call user functions on ember arrays, so they are host loops
around device work, as NumPy's are Python loops around NumPy's:

- ``piecewise`` loops over the conditions: a callable gets the selected elements
  (``x[cond]``: one stream compaction, whose count is read back) and its result is written
  to those positions (``y[cond] = ...``); a value is written by the same masked assignment.
- ``apply_along_axis`` calls the function once per 1-d slice (a view along ``axis``) and
  writes each result into a preallocated array: ``prod(other axes)`` calls and copies, a
  Python loop as NumPy's; use whole-array operations where the function has them.
- ``apply_over_axes`` calls the function once per axis and keeps the dimensions.

Nothing is copied to the host but the compaction counts: the user functions see ember
arrays and may return ember arrays or Python numbers.
"""

from __future__ import annotations

import numpy as np

import ember
from ember import dtypes
from ember.array import manipulation
from ember.array.creation import operand as _arr
from ember.array.ndarray import ndarray, not_on_device


def _result(r, be, what: str) -> ndarray:
    """A user function's result as an ember array (numbers and lists copied to ``be``)."""
    if isinstance(r, ndarray):
        return r
    if type(r).__module__ == "numpy" and np.ndim(r):
        raise TypeError(f"ember.{what}: the function returned a NumPy array; return an ember "
                        "array (compute with ember functions, or ember.asarray(...) the "
                        "result)")  # fmt: skip
    return ember.asarray(r, device=be)


# --------------------------------------------------------------------- piecewise
def _conditions(x: ndarray, condlist) -> list[ndarray]:
    """NumPy's reading of ``condlist``: one condition or a list of them, each a boolean
    array of ``x``'s shape (broadcast) on ``x``'s device."""
    if isinstance(condlist, ndarray):
        conds = list(manipulation.unstack(condlist)) if condlist.ndim == x.ndim + 1 else [
            condlist]  # fmt: skip
    elif (
        isinstance(condlist, list | tuple)
        and condlist
        and (isinstance(condlist[0], list | tuple | ndarray) or x.ndim == 0)
    ):
        conds = list(condlist)
    else:
        conds = [condlist]
    out = []
    for c in conds:
        if not isinstance(c, ndarray):
            if type(c).__module__ == "numpy" and np.ndim(c):
                raise not_on_device(c, "ember.piecewise")
            c = ember.asarray(np.asarray(c, dtype=bool), device=x.backend)
        c = manipulation.astype(c, dtypes.bool_, copy=False)
        try:
            out.append(manipulation.broadcast_to(c, x.shape))
        except ValueError:
            raise ValueError(f"ember.piecewise: a condition of shape {c.shape} does not match "
                             f"x's shape {x.shape}") from None  # fmt: skip
    return out


def piecewise(x, condlist, funclist, *args, **kw) -> ndarray:
    """A piecewise-defined function of ``x`` (NumPy's ``piecewise``): where ``condlist[i]``
    holds, ``funclist[i]`` applies: a callable gets ``x``'s selected elements (a 1-d
    ember array) with ``*args`` and ``**kw`` and returns their values; a number is the
    value.  One extra function is the default for where no condition holds; elsewhere
    the result is 0.  Later conditions win where several hold.  Result dtype: ``x``'s.
    A host loop over the conditions; each callable costs a compaction (one count read)."""
    x = _arr(x, "piecewise")
    conds = _conditions(x, condlist)
    n, n2 = len(conds), len(funclist)
    if n == n2 - 1:  # the "otherwise" function
        rest = conds[0] if n else None
        for c in conds[1:]:
            rest = ember.logical_or(rest, c)
        conds.append(ember.logical_not(rest) if n else ember.full(x.shape, True, dtypes.bool_,
                                                                   device=x.backend))  # fmt: skip
        n += 1
    elif n != n2:
        raise ValueError(f"ember.piecewise: with {n} condition(s), either {n} or {n + 1} "
                         f"functions are expected, got {n2}")  # fmt: skip
    flat = manipulation.reshape(x, (-1,)) if x.ndim == 0 else x  # (masks need an axis)
    y = ember.zeros(flat.shape, x.dtype, device=x.backend)
    for cond, func in zip(conds, funclist, strict=True):
        mask = manipulation.reshape(cond, flat.shape)
        if not callable(func):
            y[mask] = func
            continue
        vals = flat[mask]
        if vals.size:
            y[mask] = _result(func(vals, *args, **kw), x.backend, "piecewise")
    return manipulation.reshape(y, x.shape)


# --------------------------------------------------------------------- apply_along_axis
def apply_along_axis(func1d, axis, arr, *args, **kwargs) -> ndarray:
    """``func1d`` applied to the 1-d slices of ``arr`` along ``axis`` (NumPy's
    ``apply_along_axis``): the result has ``arr``'s shape with ``axis`` replaced by the
    shape of ``func1d``'s result (none for a scalar), its dtype that of the first result.
    ``func1d`` gets each slice as an ember array view and may return an ember array or a
    number.  **A Python loop**: one call and one device copy per slice, as NumPy's; when
    ``func1d`` is a reduction or an elementwise function, call it with ``axis=`` instead."""
    x = _arr(arr, "apply_along_axis")
    if x.ndim == 0:
        raise ValueError("ember.apply_along_axis: arr must have at least one dimension")
    axis = manipulation._axis(axis, x.ndim, "ember.apply_along_axis: axis")
    view = manipulation.moveaxis(x, axis, -1)
    lead = view.shape[:-1]
    if 0 in lead:
        raise ValueError("ember.apply_along_axis: cannot apply_along_axis when any iteration "
                         f"dimensions are 0 (shape {x.shape}, axis {axis})")  # fmt: skip
    indices = iter(np.ndindex(*lead))
    first = next(indices)
    res = _result(func1d(view[(*first, ...)], *args, **kwargs), x.backend, "apply_along_axis")
    buff = ember.empty(lead + res.shape, res.dtype, device=x.backend)
    manipulation.copy_into(buff[(*first, ...)], res)
    for ind in indices:
        r = _result(func1d(view[(*ind, ...)], *args, **kwargs), x.backend, "apply_along_axis")
        try:
            manipulation.copy_into(buff[(*ind, ...)], r)
        except ValueError:
            raise ValueError(f"ember.apply_along_axis: the function returned shape {r.shape} "
                             f"at index {ind}, but {res.shape} first; every call must return "
                             "the same shape") from None  # fmt: skip
    dims = list(range(buff.ndim))
    k = len(lead)
    return manipulation.permute_dims(buff, (*dims[:axis], *dims[k:], *dims[axis:k]))


# --------------------------------------------------------------------- apply_over_axes
def apply_over_axes(func, a, axes) -> ndarray:
    """``func(a, axis)`` applied over each of ``axes`` in turn, each result fed to the
    next (NumPy's ``apply_over_axes``): ``func`` must keep the dimensions or drop
    ``axis`` (it is put back as length 1), so the result has ``a``'s number of
    dimensions.  One call per axis (a host loop)."""
    val = _arr(a, "apply_over_axes")
    n = val.ndim
    for axis in (axes,) if np.ndim(axes) == 0 else axes:
        axis = int(axis)
        axis = axis + n if axis < 0 else axis
        res = _result(func(val, axis), val.backend, "apply_over_axes")
        if res.ndim != val.ndim:
            res = manipulation.expand_dims(res, axis)
            if res.ndim != val.ndim:
                raise ValueError("ember.apply_over_axes: function is not returning an array "
                                 f"of the correct shape (got {res.ndim - 1} dimensions for "
                                 f"{val.ndim}); it must keep or drop the axis")  # fmt: skip
        val = res
    return val


__all__ = ["piecewise", "apply_along_axis", "apply_over_axes"]
