"""Ranges: ``arange`` and ``linspace`` (NumPy's values, dtypes and parameters), filled on
the device by :func:`ember.array.kernels.linear`; the other creation functions are
:mod:`ember.array.creation`'s."""

from __future__ import annotations

import math
import operator
from typing import Any

from ember.array.creation import _like, _new, _on
from ember.array.ndarray import ndarray
from ember.dtypes import dtype as to_dtype
from ember.dtypes import float64


def arange(start, /, stop=None, step=1, dtype: Any = None, *, device=None,
           like=None) -> ndarray:  # fmt: skip
    """Evenly spaced values in ``[start, stop)``: ``arange(5)``, ``arange(1, 2, 0.25)``.

    The dtype is NumPy's: ``int64`` when every argument is an integer, else ``float64``;
    ``dtype`` may be complex (the values are real), the bounds may not (as in the Array API).
    The values are NumPy's too: the first two converted to the dtype, then
    ``first + i * (second - first)`` in its arithmetic (``arange(0, 5, 1.5, dtype=int)`` is
    ``[0, 1, 2, 3]``; float32 rounds as float32; a device that fuses the multiply-add may
    differ by one ulp).  ``like=``: NumPy's reference array (its device is used).
    """
    device = _like(device, like, "arange")
    # NumPy scalars and 0-d arrays as the Python numbers they hold (arange(np.int64(5)) is
    # int64, as NumPy's; isinstance(np.int64(5), int) is False)
    start, stop, step = (_number(v) for v in (start, stop, step))
    if any(isinstance(v, complex) for v in (start, stop, step)):
        raise TypeError("arange: start, stop and step must be real numbers (the Array API's "
                        "rule); for complex values use linspace or arange(...) * 1j")  # fmt: skip
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    n = max(0, math.ceil((stop - start) / step))
    if dtype is None:
        ints = all(isinstance(v, int) for v in (start, stop, step))
        dtype = "int64" if ints else float64
    out = _new(n, dtype, be=None if device is None else _on(device))
    if out.dtype.kind == "b" and n > 2:  # NumPy's rule: a third bool would repeat one
        raise TypeError(
            f"arange() is only supported for booleans when the result has at most length 2 "
            f"(this one has {n}); make it in another dtype and convert: "
            "ember.arange(...).astype(bool)"
        )
    if n > 1 and (out.dtype.kind in "iu" or out.dtype.name in _NUMPY_FLOATS):
        _arange_fill(out, start, step)
    else:
        _linear(out, start, step, -1, 0)
    return out


_NUMPY_FLOATS = {"float16": "float32", "float32": "float32", "float64": "float64"}


def _number(v):
    """``v``, or the Python number a NumPy scalar or 0-d (ember or NumPy) array holds."""
    if (
        v is None
        or isinstance(v, bool | int | float | complex)
        and type(v).__module__ == "builtins"
    ):
        return v
    if getattr(v, "ndim", None) == 0 and hasattr(v, "item"):
        return v.item()
    return v


def _arange_fill(out: ndarray, start, step) -> None:
    """NumPy's way of filling an ``arange``: the first two values converted to the dtype,
    then ``first + i * (second - first)`` in the dtype's own arithmetic (float16's in
    float32).  So ``arange(0, 5, 1.5, dtype=int)`` is ``[0, 1, 2, 3]`` (the step is
    ``int(1.5) - 0``), and float32 ranges round as NumPy's do."""
    import numpy as np

    dt = out.dtype
    with np.errstate(all="ignore"):  # (conversions NumPy refuses raise as in its arange)
        first, second = dt.numpy.type(start), dt.numpy.type(start + step)
        if dt.kind in "iu":  # the difference wraps in the dtype, as NumPy's does
            delta = int(second - first)
            _linear(out, int(first), delta, -1, 0)
            return
        ct = np.dtype(_NUMPY_FLOATS[dt.name]).type
        first, second = ct(first), ct(second)
        _linear(out, first, second - first, 1, second, ct=to_dtype(ct))


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: Any = None, axis: int = 0, *, device=None):  # fmt: skip
    """``num`` evenly spaced values from ``start`` to ``stop`` (included unless
    ``endpoint=False``), computed as NumPy does: ``start + i * step``, the last one exact.
    Complex ``start``/``stop`` (or a complex ``dtype``) give a complex array, each part
    spaced on its own (default dtype complex128).

    NumPy's parameters, in NumPy's order: ``start`` and ``stop`` may also be ember arrays
    (or lists), broadcast together, the samples then along ``axis`` of the result;
    ``retstep=True`` returns ``(samples, step)``, the step a NumPy scalar for numbers (NaN
    when ``num`` is 0, or 1 with ``endpoint``, as NumPy's) and an ember array for arrays."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    if _is_array(start) or _is_array(stop):
        from ember.array.grids import linspace_arrays

        y, step = linspace_arrays(start, stop, num, endpoint, dtype, axis, device)
        return (y, step) if retstep else y
    y = _linspace_numbers(start, stop, num, endpoint, dtype, device)
    if axis not in (0, -1):
        from ember.array.manipulation import moveaxis

        y = moveaxis(y, 0, axis)  # (NumPy's AxisError for a 1-d result)
    return (y, _step(start, stop, num, endpoint)) if retstep else y


def _is_array(v) -> bool:
    return isinstance(v, ndarray | list | tuple) or getattr(v, "ndim", 0) > 0


def _step(start, stop, num: int, endpoint: bool):
    """NumPy's ``retstep`` of numbers: ``(stop - start) / div`` in the bounds' inexact
    result type, a NumPy scalar; NaN (a Python float) when ``div`` is not positive."""
    import numpy as np

    div = (num - 1) if endpoint else num
    if div <= 0:
        return math.nan
    dt = np.result_type(start, stop, 1.0)
    return np.subtract(np.asarray(stop), np.asarray(start), dtype=dt) / div


def _linspace_numbers(start, stop, num: int, endpoint: bool, dtype, device) -> ndarray:
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else 0.0
    if dtype is None:
        dtype = "complex128" if isinstance(start + stop, complex) else float64
        if type(start).__module__ == "numpy" or type(stop).__module__ == "numpy":
            import numpy as np  # NumPy's result_type(start, stop, float(num)): float32 bounds

            dtype = np.result_type(start, stop, 1.0).name  # give float32 (weak 1.0)
    out = _new(num, dtype, be=None if device is None else _on(device))
    last = num - 1 if endpoint and num > 1 else -1
    if out.dtype.is_complex:  # the parts are real ranges (views: ember/array/parts.py)
        for part in ("real", "imag"):
            parts = [getattr(complex(v), part) for v in (start, step, stop)]
            _linear(getattr(out, part), parts[0], parts[1], last, parts[2])
        return out
    if isinstance(start + stop, complex):
        raise TypeError(f"linspace: complex start/stop need a complex dtype, not {out.dtype}")
    # into integers each value is rounded down first, as NumPy 2 does (not into bools)
    floor = out.dtype.kind in "iu"
    _linear(out, float(start), float(step), last, float(stop), floor)
    return out


def _linear(out: ndarray, start, step, last: int, stop, floor: bool = False, ct=None) -> None:
    """``out[i] = start + i * step`` (element ``last``: ``stop``), computed in ``ct`` (by
    default float64 where the device has it for float values, else int64/uint64)."""
    from ember.array import kernels

    n = out.size
    if not n:
        return
    dt = out.dtype
    if ct is None and (dt.is_float or isinstance(start, float) or isinstance(step, float)):
        fp64 = "fp64" in out.backend.device.features
        ct = to_dtype("float64") if fp64 else to_dtype("float32")
    elif ct is None:
        ct = to_dtype("uint64") if dt.name == "uint64" else to_dtype("int64")
    if ct.is_float:
        start, step, stop = (ct.numpy.type(v) for v in (start, step, stop))
    block = min(256, out.backend.device.max_threads_per_block)
    grid = min(-(-n // block), 1024)
    kernels.linear(ct, floor)[grid, block](n, out, start, step, last, stop)
