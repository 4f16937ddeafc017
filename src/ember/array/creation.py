"""Array creation: ``empty``, ``zeros``, ``ones``, ``full`` (and ``*_like``), ``eye``,
``asarray`` and ``from_dlpack``; ``arange`` and ``linspace`` are :mod:`ember.array.ranges`'
(``ember.array`` is the package, not NumPy's ``array`` function: use ``asarray``, with
``copy=True`` to copy).

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


def _layout(order, what: str) -> str:
    """NumPy's ``order`` of a new array: ``'C'`` or ``'F'`` (either case); NumPy's errors."""
    if order is None or order in ("C", "c"):
        return "C"
    if order in ("F", "f"):
        return "F"
    if order in ("A", "a", "K", "k"):
        raise ValueError(f"ember.{what}: only 'C' or 'F' order is permitted")
    raise ValueError(f"ember.{what}: order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")


def _like(device, like, what: str):
    """``device``, or the device of NumPy's ``like=`` reference (an ember array: NEP 35's
    dispatch already chose Ember) when ``device`` is None."""
    if like is None:
        return device
    if not isinstance(like, ndarray):
        raise TypeError(
            f"ember.{what}: like= must be an ember array (its device is used), got a "
            f"{type(like).__module__}.{type(like).__name__}; call numpy.{what} for host arrays"
        )
    return like.backend if device is None else device


def _fortran(shape: Any, dtype: Any, be, stream=None) -> ndarray:
    """An uninitialized column-major array: the transposed view of a row-major one (the
    layout Ember's ``copy(order='F')`` makes)."""
    from ember.array.manipulation import permute_dims

    dims = normalize_shape(shape)
    return permute_dims(_new(dims[::-1], dtype, stream, be), tuple(range(len(dims)))[::-1])


def empty(shape: Any, dtype: Any = None, order: str = "C", *, device=None, like=None,
          stream=None) -> ndarray:  # fmt: skip
    """A new array of ``shape`` and ``dtype`` (default float64, like NumPy), uninitialized,
    on ``device`` (default: the current backend's, or that of NumPy's ``like=`` array).
    ``order='F'``: column-major (the transposed view of a row-major buffer), as NumPy's."""
    # _new() inlined, and the array made without its __init__ frame: alloc + free of an
    # array is a hot loop (issue 19: target 0.65x the driver's cuMemAllocAsync + free).
    if order != "C" or like is not None:
        return _empty_as(shape, dtype, order, device, like, stream, "empty")
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


def _empty_as(shape, dtype, order, device, like, stream, what: str) -> ndarray:
    """``empty`` with NumPy's ``order`` and ``like``."""
    device = _like(device, like, what)
    be = None if device is None else _on(device)
    if _layout(order, what) == "F":
        return _fortran(shape, dtype, be, stream)
    return _new(shape, dtype, stream, be)


def zeros(shape: Any, dtype: Any = None, order: str = "C", *, device=None, like=None,
          stream=None) -> ndarray:  # fmt: skip
    """A new array of ``shape`` and ``dtype`` (default float64) filled with zeros
    (``order``, ``like``: as in :func:`empty`)."""
    if order != "C" or like is not None:
        out = _empty_as(shape, dtype, order, device, like, stream, "zeros")
    else:
        out = _new(shape, dtype, stream, None if device is None else _on(device))
    out.backend.fill_zero(out.buffer, 0, out.nbytes, stream)
    return out


def full(shape: Any, fill_value, dtype: Any = None, order: str = "C", *, device=None,
         like=None) -> ndarray:  # fmt: skip
    """A new array of ``shape`` filled with ``fill_value`` (dtype: NumPy's for the value,
    e.g. ``int64`` for a Python int, unless given; ``order``, ``like``: as in
    :func:`empty`)."""
    if dtype is None:
        dtype = _scalar_dtype(fill_value)
    if order != "C" or like is not None:
        out = _empty_as(shape, dtype, order, device, like, None, "full")
    else:
        out = _new(shape, dtype, be=None if device is None else _on(device))
    if out.size:
        out.fill(fill_value)
    return out


def ones(shape: Any, dtype: Any = None, order: str = "C", *, device=None,
         like=None) -> ndarray:  # fmt: skip
    """A new array of ``shape`` and ``dtype`` (default float64) filled with ones
    (``order``, ``like``: as in :func:`empty`)."""
    return full(shape, 1, float64 if dtype is None else dtype, order, device=device, like=like)


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


def empty_like(x: ndarray, /, dtype: Any = None, order: str = "K", subok: bool = True,
               shape=None, *, device=None) -> ndarray:  # fmt: skip
    """An uninitialized array with the shape (and dtype and device, unless given) of ``x``,
    in NumPy's parameter order.  ``shape``: another shape; ``order``: NumPy's layout,
    ``'C'``, ``'F'`` (column-major), ``'A'`` (F when ``x`` is only F-contiguous) or ``'K'``
    (``x``'s stride order; C order when ``shape`` changes the number of dimensions);
    ``subok`` is accepted for NumPy's signature (Ember has no array subclasses)."""
    be = x.backend if device is None else _on(device)
    dt = x.dtype if dtype is None else dtype
    order = "K" if order is None else order.upper() if isinstance(order, str) else order
    if shape is None and (order == "C" or x.ndim < 2 and order in ("K", "A")):
        return _new(x.shape, dt, be=be)
    from ember.array.joining import _order

    if order not in ("C", "F", "A", "K"):  # (NumPy's message)
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    dims = x.shape if shape is None else normalize_shape(shape)
    if order == "A":  # F for an F-contiguous-only prototype, whatever the new shape
        f_only = _order("A", "empty_like", x) != list(range(x.ndim))
        order = "F" if f_only else "C"
    elif order == "K" and len(dims) != x.ndim:  # (NumPy: C order is implied)
        order = "C"
    if order in ("C", "F"):
        perm = list(range(len(dims)))[:: 1 if order == "C" else -1]
    else:
        perm = _order(order, "empty_like", x, copy=True)
    out = _new(tuple(dims[k] for k in perm), dt, be=be)
    if perm == sorted(perm):
        return out
    from ember.array.manipulation import permute_dims

    return permute_dims(out, sorted(range(len(perm)), key=perm.__getitem__))


def zeros_like(x: ndarray, /, dtype: Any = None, order: str = "K", subok: bool = True,
               shape=None, *, device=None) -> ndarray:  # fmt: skip
    """Zeros with the shape (and dtype and device, unless given) of ``x`` (``order``,
    ``subok``, ``shape``: as in :func:`empty_like`)."""
    out = empty_like(x, dtype, order, subok, shape, device=device)
    out.backend.fill_zero(out.buffer, 0, out.nbytes)  # (a permuted view spans its buffer)
    return out


def ones_like(x: ndarray, /, dtype: Any = None, order: str = "K", subok: bool = True,
              shape=None, *, device=None) -> ndarray:  # fmt: skip
    """Ones with the shape (and dtype and device, unless given) of ``x`` (``order``,
    ``subok``, ``shape``: as in :func:`empty_like`)."""
    return full_like(x, 1, dtype, order, subok, shape, device=device)


def full_like(x: ndarray, /, fill_value, dtype: Any = None, order: str = "K",
              subok: bool = True, shape=None, *, device=None) -> ndarray:  # fmt: skip
    """``fill_value`` with the shape (and dtype and device, unless given) of ``x``
    (``order``, ``subok``, ``shape``: as in :func:`empty_like`)."""
    out = empty_like(x, dtype, order, subok, shape, device=device)
    if out.size:
        out.fill(fill_value)
    return out


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None, order: str = "C", *,
        device=None, like=None):  # fmt: skip
    """A 2-d array with ones on diagonal ``k`` and zeros elsewhere, NumPy's parameters in
    NumPy's order (``eye(3, 4, 1)``; the Array API's ``n_rows``, ``n_cols`` are ``N``,
    ``M``).  ``order='F'``: column-major; ``like=``: NumPy's reference array (its device)."""
    device = _like(device, like, "eye")
    if _layout(order, "eye") == "F":  # the transposed view of the transposed identity
        return eye(N if M is None else M, N, -k, dtype, device=device).mT
    n_rows, n_cols = N, N if M is None else M
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
def asarray(obj: Any, dtype: Any = None, order: str | None = None, *, copy: bool | None = None,
            device=None, like=None, stream=None) -> ndarray:  # fmt: skip
    """An ember array of ``obj``: a NumPy array, list, scalar, ember array, or another
    library's array.

    Host data is copied to the device (``copy=False`` refuses); non-contiguous NumPy inputs
    are packed C-contiguous.  An ember array is returned as is unless ``dtype`` differs or
    ``copy=True`` (conversions run on the device).  CUDA arrays of other libraries
    (``__cuda_array_interface__``, DLPack: PyTorch, CuPy, JAX...) are wrapped without a
    copy.  With ``stream`` the host-to-device copy is asynchronous: the data is staged in
    pooled pinned host memory and copied on ``stream``, so the call returns at once and
    ``obj`` may be changed right away (see :mod:`ember.runtime.pinned`).

    ``order`` is NumPy's: ``'C'`` or ``'F'`` (copies an ember array of another layout),
    ``'A'`` (F for an F-contiguous-only input, else C), ``'K'`` (the input's layout; host
    data other than F-ordered is packed C); ``None`` (the default) packs host data C.
    ``like=``: NumPy's reference array (its device is used).

    Raises
    ------
    TypeError
        For dtypes Ember does not support (complex, strings, objects).
    """
    if like is not None:
        device = _like(device, like, "asarray")
    be = None if device is None else _on(device)
    if not isinstance(obj, ndarray):
        foreign = _foreign(obj)
        if foreign is not None:
            obj = foreign  # another library's device memory, wrapped
    if isinstance(obj, ndarray):
        if be is not None and obj.backend is not be:
            obj = obj.to_device(be, stream=stream)
            copy = None if copy else copy  # (the move made a new array)
        if order is not None:
            return _in_order(obj, dtype, order, copy)
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
    if order is not None and _host_fortran(host, order):
        return asarray(np.ascontiguousarray(host.T), dt, device=be, stream=stream).mT
    if not host.flags.c_contiguous:  # (ascontiguousarray would make a 0-d array 1-d)
        host = np.ascontiguousarray(host)
    out = _new(host.shape, dt, stream, be)
    if host.nbytes:
        if stream is None:
            copy_in(out.backend, out.buffer, 0, host)
        else:
            upload(out.backend, out.buffer, 0, host, stream)
    return out


def _order_name(order) -> str:
    if isinstance(order, str) and order.upper() in ("C", "F", "A", "K"):
        return order.upper()
    raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")


def _host_fortran(host, order) -> bool:
    """Whether ``asarray(host, order=order)`` is column-major (a 2-d or more array)."""
    order = _order_name(order)
    if host.ndim < 2 or order == "C":
        return False
    f_only = host.flags.f_contiguous and not host.flags.c_contiguous
    return order == "F" or f_only


def _in_order(x: ndarray, dtype: Any, order, copy: bool | None) -> ndarray:
    """``asarray(x, dtype, order, copy=copy)`` of an ember array, NumPy's layouts."""
    from ember.array.joining import converted
    from ember.array.manipulation import permute_dims

    order = _order_name(order)
    dt = x.dtype if dtype is None else to_dtype(dtype)
    f_contiguous = permute_dims(x, tuple(range(x.ndim))[::-1]).is_c_contiguous
    fits = {"C": x.is_c_contiguous, "F": f_contiguous, "A": x.is_c_contiguous or f_contiguous,
            "K": True}[order]  # fmt: skip
    if fits and dt is x.dtype and not copy:
        return x
    if copy is False:
        raise ValueError(f"asarray(copy=False): order={order!r} or dtype={dt} needs a copy")
    if order == "A":
        order = "F" if f_contiguous and not x.is_c_contiguous else "C"
    return converted(x, dt, order, "asarray")


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
