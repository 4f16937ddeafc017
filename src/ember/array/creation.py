"""Array creation: :func:`empty`, :func:`zeros`, :func:`asarray`."""

from __future__ import annotations

import math
from typing import Any

from ember.array.ndarray import ndarray, normalize_shape
from ember.dtypes import DType, float64
from ember.dtypes import dtype as to_dtype
from ember.runtime import backend as _backend
from ember.runtime.allocator import note_uses
from ember.runtime.memory import allocate, upload

_DTYPES: dict = {None: float64}  # dtype spec -> DType, filled as specs are seen


def _dtype_of(spec: Any) -> DType:
    try:
        return _DTYPES[spec]
    except (KeyError, TypeError):
        dt = to_dtype(spec)
    try:
        _DTYPES[spec] = dt
    except TypeError:  # unhashable spec
        pass
    return dt


def _new(shape: Any, dtype: Any, stream=None, be=None) -> ndarray:
    """An uninitialized array; the common 1-d case is a handful of operations."""
    dt = _dtype_of(dtype)
    be = be or _backend.current()
    if type(shape) is int and shape >= 0:
        buffer = allocate(be, shape * dt.itemsize, stream)
        return ndarray((shape,), dt, buffer, be, (dt.itemsize,))
    dims = normalize_shape(shape)
    return ndarray(dims, dt, allocate(be, math.prod(dims) * dt.itemsize, stream), be)


def empty(shape: Any, dtype: Any = None, *, stream=None) -> ndarray:
    """A new array of ``shape`` and ``dtype`` (default float64, like NumPy), uninitialized."""
    dt = _dtype_of(dtype)  # _new() inlined: alloc + free of an array is a hot loop
    be = _backend.current()
    if type(shape) is int and shape >= 0:
        buffer = allocate(be, shape * dt.itemsize, stream)
        return ndarray((shape,), dt, buffer, be, (dt.itemsize,))
    return _new(shape, dt, stream, be)


def zeros(shape: Any, dtype: Any = None, *, stream=None) -> ndarray:
    """A new array of ``shape`` and ``dtype`` (default float64) filled with zeros."""
    out = _new(shape, dtype, stream)
    out.backend.fill_zero(out.buffer, 0, out.nbytes, stream)
    return out


def asarray(obj: Any, dtype: Any = None, *, copy: bool | None = None, stream=None) -> ndarray:
    """Copy ``obj`` (a NumPy array, list, scalar, or ember array) to the device.

    Non-contiguous NumPy inputs are packed into a C-contiguous device array.  An ember array
    of the requested dtype is returned as is (``copy=True`` copies it on the device).  With
    ``stream`` the host-to-device copy is asynchronous: the data is staged in pooled pinned
    host memory and copied on ``stream``, so the call returns at once and ``obj`` may be
    changed right away (see :mod:`ember.runtime.pinned`).

    Raises
    ------
    TypeError
        For dtypes Ember does not support (complex, strings, objects).
    """
    if isinstance(obj, ndarray):
        return _from_device(obj, dtype, copy, stream)
    import numpy as np

    want = None if dtype is None else to_dtype(dtype).numpy
    host = np.asarray(obj, dtype=want)
    dt: DType = to_dtype(host.dtype)
    if not host.flags.c_contiguous:  # (ascontiguousarray would make a 0-d array 1-d)
        host = np.ascontiguousarray(host)
    out = _new(host.shape, dt, stream)
    if host.nbytes:
        if stream is None:
            out.backend.copy_from_host(out.buffer, 0, host)
        else:
            upload(out.backend, out.buffer, 0, host, stream)
    return out


def _from_device(x: ndarray, dtype: Any, copy: bool | None, stream) -> ndarray:
    if dtype is not None and to_dtype(dtype) is not x.dtype:
        raise TypeError(
            f"asarray cannot convert a device array from {x.dtype} to {to_dtype(dtype)} yet; "
            "convert on the host with ember.asarray(x.to_numpy().astype(dtype))"
        )
    if not copy:
        return x
    if not x.is_c_contiguous:
        return asarray(x.to_numpy(), stream=stream)
    out = _new(x.shape, x.dtype, stream, x.backend)
    if x.nbytes:
        x.backend.copy_device(out.buffer, 0, x.buffer, x.offset, x.nbytes, stream)
        note_uses((x,), stream)
    return out
