"""Array creation: :func:`empty`, :func:`zeros`, :func:`asarray`."""

from __future__ import annotations

from typing import Any

from ember.array.ndarray import ndarray, normalize_shape
from ember.dtypes import DType, float64
from ember.dtypes import dtype as to_dtype
from ember.runtime import backend as _backend
from ember.runtime.memory import allocate


def _new(shape: Any, dtype: Any, stream=None, be=None) -> ndarray:
    dims = normalize_shape(shape)
    dt = float64 if dtype is None else to_dtype(dtype)
    be = be or _backend.get()
    size = 1
    for n in dims:
        size *= n
    return ndarray(dims, dt, allocate(be, size * dt.itemsize, stream), be)


def empty(shape: Any, dtype: Any = None, *, stream=None) -> ndarray:
    """A new array of ``shape`` and ``dtype`` (default float64, like NumPy), uninitialized."""
    return _new(shape, dtype, stream)


def zeros(shape: Any, dtype: Any = None, *, stream=None) -> ndarray:
    """A new array of ``shape`` and ``dtype`` (default float64) filled with zeros."""
    out = _new(shape, dtype, stream)
    out.backend.fill_zero(out.buffer, 0, out.nbytes, stream)
    return out


def asarray(obj: Any, dtype: Any = None, *, copy: bool | None = None, stream=None) -> ndarray:
    """Copy ``obj`` (a NumPy array, list, scalar, or ember array) to the device.

    Non-contiguous NumPy inputs are packed into a C-contiguous device array.  An ember array
    of the requested dtype is returned as is (``copy=True`` copies it on the device).  With
    ``stream`` the host-to-device copy is asynchronous: keep ``obj`` unchanged until the
    stream passes it.

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
    host = np.ascontiguousarray(host)
    out = _new(host.shape, dt, stream)
    if host.nbytes:
        out.backend.copy_from_host(out.buffer, 0, host, stream)
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
    return out
