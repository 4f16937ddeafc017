"""Array creation: ``empty``, ``zeros``, ``ones``, ``full`` (and ``*_like``), ``arange``,
``linspace``, ``eye``, ``asarray`` and ``from_dlpack`` (``ember.array`` is the package, not
NumPy's ``array`` function: use ``asarray``, with ``copy=True`` to copy).

Default dtypes follow NumPy: ``float64`` for ``empty``/``zeros``/``ones``, the value's
type for ``full`` and ``asarray`` (Python ints ``int64``, floats ``float64``, complex numbers
``complex128``).  Fills run
the elementwise ``copy`` kernel with a scalar operand; ``zeros`` is a device memset.
"""

from __future__ import annotations

import math
from typing import Any

from ember.array.core import make as _make
from ember.array.ndarray import ndarray, normalize_shape
from ember.dtypes import DType, bfloat16, bfloat16_bits, float64
from ember.dtypes import dtype as to_dtype
from ember.runtime import backend as _backend
from ember.runtime.allocator import note_uses
from ember.runtime.memory import allocate, copy_in, upload

_DTYPES: dict = {None: float64}  # dtype spec -> DType, filled as specs are seen


def on_device(x, what: str) -> ndarray:
    """``x`` when it is an ember array; else the TypeError of ``ember.<what>`` that says how
    to make one: host data (NumPy, Python numbers and lists) is copied with
    ``ember.asarray(x)``, another library's array wrapped by it (no copy on the same
    device).  The strict form of :func:`operand`, for functions that never copy."""
    if isinstance(x, ndarray):
        return x
    if type(x).__module__ == "numpy" or isinstance(x, list | tuple | int | float | complex | bool):
        from ember.array.ndarray import not_on_device

        raise not_on_device(x, f"ember.{what}")
    raise TypeError(
        f"ember.{what} takes an ember array, got a {type(x).__module__}.{type(x).__name__}; "
        "wrap arrays of other libraries with ember.asarray(x) (no copy on the same device)"
    )


def operand(x, what: str) -> ndarray:
    """``x`` as an operand of ``ember.<what>``: an ember array as it is, Python numbers and
    lists (small host descriptions) copied to the current device; NumPy arrays refused with
    the fix (``ember.asarray``), never copied behind the caller's back."""
    if isinstance(x, ndarray):
        return x
    if type(x).__module__.split(".")[0] == "numpy" and getattr(x, "ndim", 0):
        from ember.array.ndarray import not_on_device

        raise not_on_device(x, f"ember.{what}")
    return asarray(x)


def _dtype_of(spec: Any) -> DType:
    if type(spec) is DType:  # (a dict lookup would call DType.__hash__, a Python frame)
        return spec
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
    if type(shape) is tuple and len(shape) == 1 and type(shape[0]) is int:  # NumPy's 1-d
        shape = shape[0]
    if type(shape) is int and shape >= 0:
        buffer = allocate(be, shape * dt.itemsize, stream)
        out = ndarray((shape,), dt, buffer, be, (dt.itemsize,))
        out._c = True
        return out
    dims = normalize_shape(shape)
    return ndarray(dims, dt, allocate(be, math.prod(dims) * dt.itemsize, stream), be)


def _on(device):
    """The backend of ``device`` (None: the current one); see :mod:`ember.array.devices`."""
    if device is None:
        return _backend.current()
    from ember.array.devices import backend_of

    return backend_of(device)


def empty(shape: Any, dtype: Any = None, *, device=None, stream=None) -> ndarray:
    """A new array of ``shape`` and ``dtype`` (default float64, like NumPy), uninitialized,
    on ``device`` (default: the current backend's)."""
    # _new() inlined, and the array made without its __init__ frame: alloc + free of an
    # array is a hot loop (issue 19: target 0.65x the driver's cuMemAllocAsync + free).
    if type(dtype) is DType:  # ember.float32...: no dict lookup (DType.__hash__ is Python)
        dt = dtype
    else:
        try:
            dt = _DTYPES[dtype]
        except (KeyError, TypeError):
            dt = _dtype_of(dtype)
    be = _backend.current() if device is None else _on(device)
    if type(shape) is int and shape >= 0:
        buffer = allocate(be, shape * dt.itemsize, stream)
        return _make(ndarray, buffer, (shape,), (dt.itemsize,), dt, be, 0, True)
    return _new(shape, dt, stream, be)


def zeros(shape: Any, dtype: Any = None, *, device=None, stream=None) -> ndarray:
    """A new array of ``shape`` and ``dtype`` (default float64) filled with zeros."""
    out = _new(shape, dtype, stream, None if device is None else _on(device))
    out.backend.fill_zero(out.buffer, 0, out.nbytes, stream)
    return out


def full(shape: Any, fill_value, dtype: Any = None, *, device=None) -> ndarray:
    """A new array of ``shape`` filled with ``fill_value`` (dtype: NumPy's for the value,
    e.g. ``int64`` for a Python int, unless given)."""
    if dtype is None:
        dtype = _scalar_dtype(fill_value)
    out = _new(shape, dtype, be=None if device is None else _on(device))
    if out.size:
        out.fill(fill_value)
    return out


def ones(shape: Any, dtype: Any = None, *, device=None) -> ndarray:
    """A new array of ``shape`` and ``dtype`` (default float64) filled with ones."""
    return full(shape, 1, float64 if dtype is None else dtype, device=device)


def _scalar_dtype(value) -> DType:
    if isinstance(value, ndarray):
        if value.ndim:
            raise ValueError("fill_value must be a scalar or a 0-d array")
        return value.dtype
    if isinstance(value, bool):
        return to_dtype("bool")
    if isinstance(value, int):
        return to_dtype("int64")
    if isinstance(value, float):
        return float64
    if isinstance(value, complex):
        return to_dtype("complex128")
    dt = getattr(value, "dtype", None)
    if dt is None:
        raise TypeError(f"fill_value must be a number, got {type(value).__name__}")
    return to_dtype(dt)


def empty_like(
    x: ndarray, /, dtype: Any = None, *, device=None, shape=None, order: str = "K"
) -> ndarray:
    """An uninitialized array with the shape (and dtype and device, unless given) of ``x``
    (``shape``: another shape, as NumPy's ``empty_like(x, shape=...)``; ``order``: NumPy's,
    where only C order exists: ``"F"`` is refused)."""
    if order not in ("K", "A", "C"):
        raise ValueError(f"order={order!r}: Ember makes C-ordered arrays ('C', 'K' or 'A')")
    be = x.backend if device is None else _on(device)
    return _new(x.shape if shape is None else shape, x.dtype if dtype is None else dtype, be=be)


def zeros_like(
    x: ndarray, /, dtype: Any = None, *, device=None, shape=None, order: str = "K"
) -> ndarray:
    """Zeros with the shape (and dtype and device, unless given) of ``x``."""
    out = empty_like(x, dtype=dtype, device=device, shape=shape, order=order)
    out.backend.fill_zero(out.buffer, 0, out.nbytes)
    return out


def ones_like(
    x: ndarray, /, dtype: Any = None, *, device=None, shape=None, order: str = "K"
) -> ndarray:
    """Ones with the shape (and dtype and device, unless given) of ``x``."""
    return full_like(x, 1, dtype=dtype, device=device, shape=shape, order=order)


def full_like(
    x: ndarray, /, fill_value, dtype: Any = None, *, device=None, shape=None, order: str = "K"
) -> ndarray:
    """``fill_value`` with the shape (and dtype and device, unless given) of ``x``."""
    out = empty_like(x, dtype=dtype, device=device, shape=shape, order=order)
    if out.size:
        out.fill(fill_value)
    return out


# --------------------------------------------------------------------- ranges
def arange(start, /, stop=None, step=1, dtype: Any = None, *, device=None) -> ndarray:
    """Evenly spaced values in ``[start, stop)``: ``arange(5)``, ``arange(1, 2, 0.25)``.

    The dtype is NumPy's: ``int64`` when every argument is an integer, else ``float64``;
    ``dtype`` may be complex (the values are real), the bounds may not (as in the Array API).
    The values are NumPy's too: the first two converted to the dtype, then
    ``first + i * (second - first)`` in its arithmetic (``arange(0, 5, 1.5, dtype=int)`` is
    ``[0, 1, 2, 3]``; float32 rounds as float32; a device that fuses the multiply-add may
    differ by one ulp).
    """
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


def linspace(start, stop, /, num: int = 50, *, dtype: Any = None, device=None,
             endpoint: bool = True):  # fmt: skip
    """``num`` evenly spaced values from ``start`` to ``stop`` (included unless
    ``endpoint=False``), computed as NumPy does: ``start + i * step``, the last one exact.
    Complex ``start``/``stop`` (or a complex ``dtype``) give a complex array, each part
    spaced on its own (default dtype complex128)."""
    if num < 0:
        raise ValueError(f"number of samples, {num}, must be non-negative")
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


def eye(n_rows: int, n_cols: int | None = None, /, k: int = 0, dtype: Any = None, *,
        device=None):  # fmt: skip
    """A 2-d array with ones on diagonal ``k`` and zeros elsewhere (``k`` and ``dtype`` may
    also come positionally, in NumPy's order: ``eye(3, 4, 1)``)."""
    n_cols = n_rows if n_cols is None else n_cols
    out = zeros((n_rows, n_cols), dtype, device=device)
    start = (0, k) if k >= 0 else (-k, 0)
    length = max(0, min(n_rows - start[0], n_cols - start[1]))
    if length:
        isz = out.dtype.itemsize
        diagonal = ndarray(
            (length,), out.dtype, out.buffer, out.backend, ((n_cols + 1) * isz,),
            (start[0] * n_cols + start[1]) * isz,
        )  # fmt: skip
        diagonal.fill(1)
    return out


def meshgrid(
    *arrays: ndarray, indexing: str = "xy", sparse: bool = False, copy: bool = True
) -> list[ndarray]:
    """Coordinate matrices from 1-d coordinate arrays (``indexing`` ``"xy"`` or ``"ij"``),
    with NumPy's ``sparse`` (each result keeps length 1 on the other axes) and ``copy``:
    new arrays by default; ``copy=False`` gives views of the inputs, the dense ones
    broadcast and so read-only (as NumPy's)."""
    from ember.array.manipulation import astype, broadcast_to

    if indexing not in ("xy", "ij"):
        raise ValueError("meshgrid: indexing must be 'xy' or 'ij'")
    n = len(arrays)
    shape = [a.size for a in arrays]
    if indexing == "xy" and n > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for k, a in enumerate(arrays):
        axis = (1 - k if k < 2 else k) if indexing == "xy" and n > 1 else k
        view_shape = [1] * n
        view_shape[axis] = a.size
        grid = a.reshape(view_shape)
        if not sparse:
            grid = broadcast_to(grid, tuple(shape))
        out.append(astype(grid, grid.dtype, copy=True) if copy else grid)
    return out


def tril(x: ndarray, /, k: int = 0) -> ndarray:
    """``x`` with the elements above diagonal ``k`` of its last two axes zeroed."""
    return _triangle(x, k, lower=True)


def triu(x: ndarray, /, k: int = 0) -> ndarray:
    """``x`` with the elements below diagonal ``k`` of its last two axes zeroed."""
    return _triangle(x, k, lower=False)


def _triangle(x: ndarray, k: int, lower: bool) -> ndarray:
    from ember.array.blocks import triangle

    return triangle(x, k, lower)


# --------------------------------------------------------------------- from data
def asarray(
    obj: Any, dtype: Any = None, *, copy: bool | None = None, device=None, stream=None
) -> ndarray:
    """An ember array of ``obj``: a NumPy array, list, scalar, ember array, or another
    library's array.

    Host data is copied to the device (``copy=False`` refuses); non-contiguous NumPy inputs
    are packed C-contiguous.  An ember array is returned as is unless ``dtype`` differs or
    ``copy=True`` (conversions run on the device).  CUDA arrays of other libraries
    (``__cuda_array_interface__``, DLPack: PyTorch, CuPy, JAX...) are wrapped without a
    copy.  With ``stream`` the host-to-device copy is asynchronous: the data is staged in
    pooled pinned host memory and copied on ``stream``, so the call returns at once and
    ``obj`` may be changed right away (see :mod:`ember.runtime.pinned`).

    Raises
    ------
    TypeError
        For dtypes Ember does not support (complex, strings, objects).
    """
    be = None if device is None else _on(device)
    if not isinstance(obj, ndarray):
        foreign = _foreign(obj)
        if foreign is not None:
            obj = foreign  # another library's device memory, wrapped
    if isinstance(obj, ndarray):
        if be is not None and obj.backend is not be:
            obj = obj.to_device(be, stream=stream)
            copy = None if copy else copy  # (the move made a new array)
        return _from_device(obj, dtype, copy, stream)
    if copy is False:
        raise ValueError("asarray(copy=False) of host data: putting it on the device always copies")
    import numpy as np

    dt: DType | None = None if dtype is None else to_dtype(dtype)
    if dt is bfloat16:
        host = _host_bfloat16(np, obj)
    else:
        host = _host_array(np, obj, None if dt is None else dt.numpy)
        dt = _dtype_of(host.dtype)  # (cached: to_dtype takes ~2 µs)
    if not host.flags.c_contiguous:  # (ascontiguousarray would make a 0-d array 1-d)
        host = np.ascontiguousarray(host)
    out = _new(host.shape, dt, stream, be)
    if host.nbytes:
        if stream is None:
            copy_in(out.backend, out.buffer, 0, host)
        else:
            upload(out.backend, out.buffer, 0, host, stream)
    return out


def _host_array(np, obj, want):
    """``numpy.asarray(obj, dtype=want)``, refusing to drop imaginary parts (NumPy warns
    and drops them; the Array API refuses complex-to-real casts)."""
    if want is None or want.kind == "c":
        return np.asarray(obj, dtype=want)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        try:
            return np.asarray(obj, dtype=want)
        except (np.exceptions.ComplexWarning, TypeError) as exc:
            if isinstance(exc, TypeError) and "complex" not in str(exc):
                raise
            raise TypeError(
                f"asarray: cannot convert complex data to {want.name}: the Array API refuses "
                "complex-to-real casts; convert the real or imaginary part explicitly"
            ) from None


def _host_bfloat16(np, obj):
    """Host data as bfloat16 bits (``uint16``): an ml_dtypes bfloat16 array's own, else the
    values as float32 rounded to nearest even (ml_dtypes' way; it need not be installed)."""
    if isinstance(obj, np.ndarray) and obj.dtype == bfloat16:
        return obj.view(np.uint16)
    return bfloat16_bits(_host_array(np, obj, np.dtype(np.float32)))


def _foreign(obj: Any) -> ndarray | None:
    """``obj`` as an ember view when it is another library's device array, else None."""
    if type(obj).__module__.split(".")[0] == "numpy":
        return None
    if hasattr(obj, "__cuda_array_interface__"):
        from ember.array.interop import from_cuda_array_interface

        return from_cuda_array_interface(obj)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        from ember.array.interop import CPU, from_dlpack

        if int(obj.__dlpack_device__()[0]) != CPU:
            return from_dlpack(obj)
    return None


def _from_device(x: ndarray, dtype: Any, copy: bool | None, stream, fresh: bool = True):
    from ember.array.manipulation import astype

    dt = x.dtype if dtype is None else to_dtype(dtype)
    if dt is not x.dtype:
        if copy is False:
            raise ValueError(f"asarray(copy=False) cannot convert {x.dtype} to {dt}")
        return astype(x, dt)
    if not copy:
        return x
    if not x.is_c_contiguous:
        return astype(x, dt)
    out = _new(x.shape, x.dtype, stream, x.backend)
    if x.nbytes:
        x.backend.copy_device(out.buffer, 0, x.buffer, x.offset, x.nbytes, stream)
        note_uses((x,), stream)
    return out


def from_dlpack(x: Any, /, *, device=None, copy: bool | None = None) -> ndarray:
    """An ember array sharing the memory of a DLPack producer (see
    :func:`ember.array.interop.from_dlpack`)."""
    from ember.array.interop import from_dlpack as _from_dlpack

    return _from_dlpack(x, device=device, copy=copy)
