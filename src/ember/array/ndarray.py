"""``ember.ndarray``: an n-dimensional array in device memory.

An array is a view: ``shape``, ``strides`` (bytes, may be negative or 0), ``dtype`` and
``offset`` (bytes) into a device :class:`~ember.runtime.backend.Buffer` that it keeps alive.
Several arrays may share one buffer (slices, transposes, reshapes are views).

Operators and methods follow NumPy 2 (NEP 50 promotion: Python scalars are weak); each is
an Ember kernel (:mod:`ember.array.elementwise`).  Nothing is copied to the host implicitly
except to display an array (``repr``/``str``), to convert a one-element array to a Python
number (``float(x)``, ``bool(x)``, ``x.item()``), and for scalar indexing (``x[3]``; see
:func:`ember.allowscalar`).  ``x.to_numpy()`` and ``ember.asnumpy(x)`` copy explicitly;
NumPy functions run on the device or refuse (:mod:`ember.array.protocols`).  Iterating
over an array yields views along its first axis (1-d arrays are copied to the host once and
yield NumPy scalars: element reads, under the scalar-indexing policy).
"""

from __future__ import annotations

import math
from typing import Any

from ember.array.core import ArrayCore, fill
from ember.array.methods import NumpyMethods
from ember.dtypes import DType
from ember.errors import not_on_device  # noqa: F401 - its users import it from here
from ember.runtime.allocator import note_uses
from ember.runtime.backend import Backend, Buffer
from ember.runtime.memory import copy_out, host_result
from ember.tracebacks import api


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Byte strides of a C-contiguous array of ``shape``."""
    if len(shape) == 1:
        return (itemsize,)
    found = _C_STRIDES.get((shape, itemsize))
    if found is not None:
        return found
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    found = tuple(reversed(strides))
    if len(_C_STRIDES) < 4096:  # the shapes a program uses repeat: computed once each
        _C_STRIDES[(shape, itemsize)] = found
    return found


_C_STRIDES: dict[tuple, tuple[int, ...]] = {}


def check_writable(x: ndarray) -> None:
    """Refuse a write into ``x`` where it repeats one element along an axis (a zero stride
    over more than one element: ``broadcast_to``, ``broadcast_arrays``).  Those elements
    are one memory location: the writes would collide (on a GPU, a race with no defined
    result), and NumPy makes such views read-only.  Raises ``ValueError`` as NumPy does."""
    strides = x.strides
    if 0 not in strides:
        return
    for axis, (n, step) in enumerate(zip(x.shape, strides, strict=True)):
        if step == 0 and n > 1:
            raise ValueError(
                f"assignment destination is read-only: this array is a broadcast view (axis "
                f"{axis} repeats one element {n} times), whose writes would land on one "
                "memory location; write into the array it views, or into a copy (x.copy())"
            )


def normalize_shape(shape: Any) -> tuple[int, ...]:
    """``shape`` as a tuple of non-negative ints (an int means a 1-d shape)."""
    if type(shape) is tuple:  # the usual spelling: checked without generators (~1 us)
        for n in shape:
            if type(n) is not int or n < 0:
                break
        else:
            return shape
    if isinstance(shape, int) or hasattr(shape, "__index__"):
        shape = (shape,)
    try:
        dims = tuple(int(n.__index__()) for n in shape)
    except (TypeError, AttributeError):
        raise TypeError(f"shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(n < 0 for n in dims):
        raise ValueError(f"negative dimensions are not allowed: shape {dims}")
    return dims


class ndarray(ArrayCore, NumpyMethods):  # noqa: N801 - NumPy's spelling
    """An array in device memory.  Create one with :func:`ember.empty`, :func:`ember.zeros`
    or :func:`ember.asarray`; read it back with :meth:`to_numpy`.

    ``shape``, ``strides``, ``dtype``, ``buffer``, ``offset`` and ``backend`` are fixed once
    the array is made (:mod:`ember.array.core`: setting one raises ``AttributeError``; make
    another array with ``reshape``, ``view``, ``astype``...).  ``_c`` caches whether the
    strides are exactly C strides (``None``: not computed yet); the elementwise fast paths
    read it.  ``_lv`` caches what a kernel launch reads of the array (``None`` until its first
    launch: ``ember.runtime.argtypes.launch_view``).  Both rely on those fields never changing.
    """

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]  # arrays compare elementwise, like NumPy's
    __array_priority__ = 100  # above NumPy's: libraries mixing both (Dask) pick Ember's type

    def __init__(
        self,
        shape: tuple[int, ...],
        dtype: DType,
        buffer: Buffer,
        backend: Backend,
        strides: tuple[int, ...] | None = None,
        offset: int = 0,
    ):
        if strides is None:
            strides = c_strides(shape, dtype.itemsize)
            fill(self, buffer, shape, strides, dtype, backend, offset, True)
        else:
            fill(self, buffer, shape, strides, dtype, backend, offset, None)

    # ------------------------------------------------------------------ properties
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def device(self):
        """The :class:`ember.Device` holding the data (it answers the attributes of its
        :class:`~ember.runtime.backend.DeviceInfo`: ``name``, ``kind``...)."""
        return devices.device_of(self.backend)

    @property
    def is_c_contiguous(self) -> bool:
        """True when the elements are laid out densely in C order (NumPy's flag: the
        strides of length-1 axes do not matter)."""
        if self.c_strided:
            return True
        if self.size <= 1:
            return True
        expected = c_strides(self.shape, self.dtype.itemsize)
        return all(
            n == 1 or s == e for n, s, e in zip(self.shape, self.strides, expected, strict=True)
        )

    @property
    def c_strided(self) -> bool:
        """True when ``strides`` are exactly the C strides of ``shape`` (cached)."""
        c = self._c
        if c is None:
            c = self._c = self.strides == c_strides(self.shape, self.dtype.itemsize)
        return c

    @property
    def T(self) -> ndarray:  # noqa: N802
        """The transpose (a view with the axes reversed)."""
        return manipulation.permute_dims(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self) -> ndarray:  # noqa: N802
        """The transpose of the last two axes (a view)."""
        if self.ndim < 2:
            raise ValueError(f"x.mT needs at least 2 dimensions, got {self.ndim}")
        axes = (*range(self.ndim - 2), self.ndim - 1, self.ndim - 2)
        return manipulation.permute_dims(self, axes)

    # ------------------------------------------------------------------ Python protocols
    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d ember.ndarray")
        return self.shape[0]

    def __contains__(self, value) -> bool:
        """``value in x``: NumPy's ``(x == value).any()`` (iterating rows compared each row
        with ``value`` by identity)."""
        from ember.array import reductions

        return bool(reductions.any(self == value))

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d ember.ndarray")
        if len(self.shape) == 1:  # one copy, not one bus round trip per element
            indexing.scalar_access("iterating over a 1-d array")  # element reads: the policy
            return iter(list(self.to_numpy()))
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                f"the truth value of an array with {self.size} elements is ambiguous; "
                "use x.any() or x.all() (ember.any, ember.all)"
                if self.size
                else "the truth value of an empty array is ambiguous"
            )
        return bool(self._one("bool"))

    def __float__(self) -> float:
        return float(self._one("float", zero_d=True))

    def __int__(self) -> int:
        return int(self._one("int", zero_d=True))

    def __complex__(self) -> complex:
        return parts.to_complex(self)

    # complex arrays: the parts are views (ember/array/parts.py)
    @property
    def real(self) -> ndarray:
        """The real part (a view for complex arrays, the array itself otherwise)."""
        return parts.part(self, "real")

    @real.setter
    def real(self, value) -> None:
        parts.set_part(self, "real", value)

    @property
    def imag(self) -> ndarray:
        """The imaginary part (a view for complex arrays, zeros otherwise)."""
        return parts.part(self, "imag")

    @imag.setter
    def imag(self, value) -> None:
        parts.set_part(self, "imag", value)

    def conj(self) -> ndarray:
        """The complex conjugate (:func:`ember.conj`)."""
        return ufuncs.conj(self)

    conjugate = conj

    def __index__(self) -> int:
        if self.shape or not self.dtype.is_integer:
            raise TypeError("only 0-d integer arrays can be converted to an index")
        return int(self._one("index"))

    def _one(self, what: str, zero_d: bool = False):
        if zero_d and self.shape:
            raise TypeError(
                f"only 0-d arrays can be converted to Python scalars ({what}() of an array "
                f"of shape {self.shape}); use x.item() for a one-element array"
            )
        return self._python_host().reshape(()).item()

    def item(self, *index):
        """The element as a Python number (one element, or the one at ``index``)."""
        if index:
            return indexing.read_element(self, index).item()
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self._python_host().reshape(()).item()

    def tolist(self):
        """The array as nested Python lists (copied to the host)."""
        return self._python_host().tolist()

    def _python_host(self):
        """:meth:`to_numpy` for Python numbers: a dtype NumPy lacks (bfloat16 without
        ml_dtypes) is read as its float32 values, which are exactly its values."""
        return (self if self.dtype.has_numpy else self.astype("float32")).to_numpy()

    # ------------------------------------------------------------------ host transfer
    def _extent(self) -> tuple[int, int]:
        """Lowest and one-past-highest byte (relative to ``offset``) the view touches."""
        if self.size == 0:
            return 0, 0
        low = sum(s * (n - 1) for n, s in zip(self.shape, self.strides, strict=True) if s < 0)
        high = sum(s * (n - 1) for n, s in zip(self.shape, self.strides, strict=True) if s > 0)
        return low, high + self.dtype.itemsize

    @api  # a KernelError found while reading shows the user's frames only
    def to_numpy(self, stream=None):
        """Copy the array to a new NumPy array (waits for the copy unless ``stream`` is given)."""
        import numpy as np

        if stream is not None:  # read on `stream`: keep the buffer until it has passed
            note_uses((self,), stream)
        if self.is_c_contiguous:
            out = host_result(self.backend, self.shape, self.dtype.numpy, stream)
            if out.nbytes:
                copy_out(self.backend, out, self.buffer, self.offset, stream)
            return out
        low, high = self._extent()
        raw = np.empty(high - low, np.uint8)
        copy_out(self.backend, raw, self.buffer, self.offset + low, stream)
        view = np.lib.stride_tricks.as_strided(
            raw[-low:].view(self.dtype.numpy) if low else raw.view(self.dtype.numpy),
            shape=self.shape,
            strides=self.strides,
        )
        return np.ascontiguousarray(view)

    # NumPy's protocols (NEP 13, NEP 18): NumPy functions run Ember's, or refuse
    @api
    def __array__(self, dtype=None, copy=None):
        return protocols.to_host(self, dtype, copy)

    @api
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return protocols.array_ufunc(ufunc, method, inputs, kwargs)

    @api
    def __array_function__(self, func, types, args, kwargs):
        return protocols.array_function(func, types, args, kwargs)

    # pickle through the host; copy.copy / copy.deepcopy copy on the device
    def __reduce__(self):
        return protocols.reduce(self)

    def __copy__(self) -> ndarray:
        return self.copy()

    def __deepcopy__(self, memo) -> ndarray:
        return self.copy()

    def __repr__(self) -> str:
        return display.array_repr(self)

    def __str__(self) -> str:
        return display.array_str(self)

    def __format__(self, spec: str) -> str:
        if not spec:
            return str(self)
        if self.shape:
            raise TypeError(f"unsupported format string passed to a {self.ndim}-d ember.ndarray")
        return format(self.to_numpy()[()], spec)  # a 0-d array formats as its number

    # ------------------------------------------------------------------ methods
    def astype(
        self, dtype, order="K", casting="unsafe", subok=True, copy=True, *, device=None
    ) -> ndarray:
        """The array converted to ``dtype`` (a new array unless ``copy=False`` and the dtype
        already matches), on ``device`` when given.  Conversions wrap or truncate like
        NumPy's ``astype``, whose parameters these are, in its order: ``order`` is the
        copy's layout (``'K'``: the memory order of this array, ``'C'``, ``'F'``, ``'A'``),
        ``casting`` a NumPy rule the conversion must follow (``'safe'``, ``'same_kind'``...;
        a TypeError otherwise), ``subok`` is accepted (Ember has no array subclasses)."""
        if casting != "unsafe":
            from ember.array.info import can_cast
            from ember.dtypes import dtype as as_dtype

            if not can_cast(self.dtype, dtype, casting):
                raise TypeError(
                    f"cannot cast an array of {self.dtype.name} to "
                    f"{as_dtype(dtype).name} under the rule {casting!r}"
                )
        if order == "C" or self.ndim < 2 or (order in ("K", "A") and self.is_c_contiguous):
            return manipulation.astype(self, dtype, copy=copy, device=device)
        from ember.array.joining import converted

        return converted(self, dtype, order, "astype", copy=copy, device=device)

    def fill(self, value) -> None:
        """Set every element to ``value``."""
        indexing.setitem(self, Ellipsis, value)

    def reshape(self, *shape, order: str = "C", copy: bool | None = None) -> ndarray:
        """The same data in a new shape: a view when the strides allow it, else a copy
        (``order``: :func:`ember.reshape`'s)."""
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return manipulation.reshape(self, shape, order, copy=copy)

    def transpose(self, *axes) -> ndarray:
        """The axes permuted (reversed by default): a view."""
        if len(axes) == 1 and isinstance(axes[0], tuple | list):
            axes = tuple(axes[0])
        return manipulation.permute_dims(self, axes or tuple(range(self.ndim - 1, -1, -1)))

    def squeeze(self, axis=None) -> ndarray:
        """The view without length-1 axes (or only ``axis``)."""
        return manipulation.squeeze(self, axis)

    def swapaxes(self, a: int, b: int) -> ndarray:
        """The view with axes ``a`` and ``b`` exchanged."""
        axes = list(range(self.ndim))
        axes[a], axes[b] = axes[b], axes[a]
        return manipulation.permute_dims(self, tuple(axes))

    def __getitem__(self, key) -> Any:
        return indexing.getitem(self, key)

    def __setitem__(self, key, value) -> None:
        indexing.setitem(self, key, value)

    # ------------------------------------------------------------------ interop
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return interop.dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return interop.dlpack_device(self)

    @property
    def __cuda_array_interface__(self) -> dict:
        return interop.cuda_array_interface(self)

    def __array_namespace__(self, *, api_version: str | None = None):
        return interop.namespace(api_version)

    def to_device(self, device, /, *, stream=None) -> ndarray:
        """The array on ``device`` (Array API): itself when it is already there."""
        return interop.to_device(self, device, stream)

    # ------------------------------------------------------------------ operators
    def __add__(self, other):
        return binary(ufuncs.add, self, other)

    def __radd__(self, other):
        return binary(ufuncs.add, other, self)

    def __sub__(self, other):
        return binary(ufuncs.subtract, self, other)

    def __rsub__(self, other):
        return binary(ufuncs.subtract, other, self)

    def __mul__(self, other):
        return binary(ufuncs.multiply, self, other)

    def __rmul__(self, other):
        return binary(ufuncs.multiply, other, self)

    def __truediv__(self, other):
        return binary(ufuncs.divide, self, other)

    def __rtruediv__(self, other):
        return binary(ufuncs.divide, other, self)

    def __floordiv__(self, other):
        return binary(ufuncs.floor_divide, self, other)

    def __rfloordiv__(self, other):
        return binary(ufuncs.floor_divide, other, self)

    def __mod__(self, other):
        return binary(ufuncs.remainder, self, other)

    def __rmod__(self, other):
        return binary(ufuncs.remainder, other, self)

    def __divmod__(self, other):
        return binary(ufuncs.floor_divide, self, other), binary(ufuncs.remainder, self, other)

    def __rdivmod__(self, other):
        return binary(ufuncs.floor_divide, other, self), binary(ufuncs.remainder, other, self)

    def __pow__(self, other, modulo=None):
        if modulo is not None:
            raise TypeError("pow() with a modulus is not supported for ember arrays")
        if type(other) is int and other == 2 and self.dtype.kind in "iuf":
            return ufuncs.square(self)  # NumPy's fast path (Dask's var/std square this way)
        return binary(ufuncs.pow, self, other)

    def __rpow__(self, other):
        return binary(ufuncs.pow, other, self)

    def __matmul__(self, other):
        return _matmul(self, other)

    def __rmatmul__(self, other):
        return _matmul(other, self)

    def __imatmul__(self, other):
        self[...] = _matmul(self, other)
        return self

    def __and__(self, other):
        return binary(ufuncs.bitwise_and, self, other)

    def __rand__(self, other):
        return binary(ufuncs.bitwise_and, other, self)

    def __or__(self, other):
        return binary(ufuncs.bitwise_or, self, other)

    def __ror__(self, other):
        return binary(ufuncs.bitwise_or, other, self)

    def __xor__(self, other):
        return binary(ufuncs.bitwise_xor, self, other)

    def __rxor__(self, other):
        return binary(ufuncs.bitwise_xor, other, self)

    def __lshift__(self, other):
        return binary(ufuncs.bitwise_left_shift, self, other)

    def __rlshift__(self, other):
        return binary(ufuncs.bitwise_left_shift, other, self)

    def __rshift__(self, other):
        return binary(ufuncs.bitwise_right_shift, self, other)

    def __rrshift__(self, other):
        return binary(ufuncs.bitwise_right_shift, other, self)

    def __eq__(self, other):  # type: ignore[override]
        return compare(ufuncs.equal, self, other)

    def __ne__(self, other):  # type: ignore[override]
        return compare(ufuncs.not_equal, self, other)

    def __lt__(self, other):
        return binary(ufuncs.less, self, other)

    def __le__(self, other):
        return binary(ufuncs.less_equal, self, other)

    def __gt__(self, other):
        return binary(ufuncs.greater, self, other)

    def __ge__(self, other):
        return binary(ufuncs.greater_equal, self, other)

    def __neg__(self):
        return ufuncs.negative(self)

    def __pos__(self):
        return ufuncs.positive(self)

    def __abs__(self):
        return ufuncs.abs(self)

    def __invert__(self):
        return ufuncs.bitwise_invert(self)

    def __iadd__(self, other):
        return inplace(ufuncs.add, self, other)

    def __isub__(self, other):
        return inplace(ufuncs.subtract, self, other)

    def __imul__(self, other):
        return inplace(ufuncs.multiply, self, other)

    def __itruediv__(self, other):
        return inplace(ufuncs.divide, self, other)

    def __ifloordiv__(self, other):
        return inplace(ufuncs.floor_divide, self, other)

    def __imod__(self, other):
        return inplace(ufuncs.remainder, self, other)

    def __ipow__(self, other):
        return inplace(ufuncs.pow, self, other)

    def __iand__(self, other):
        return inplace(ufuncs.bitwise_and, self, other)

    def __ior__(self, other):
        return inplace(ufuncs.bitwise_or, self, other)

    def __ixor__(self, other):
        return inplace(ufuncs.bitwise_xor, self, other)

    def __ilshift__(self, other):
        return inplace(ufuncs.bitwise_left_shift, self, other)

    def __irshift__(self, other):
        return inplace(ufuncs.bitwise_right_shift, self, other)


def asnumpy(x: Any):
    """Copy an :class:`ndarray` to NumPy (other inputs go through ``numpy.asarray``)."""
    if isinstance(x, ndarray):
        return x.to_numpy()
    import numpy as np

    return np.asarray(x)


# The operations are defined on top of the class (they create arrays): imported last.
from ember.array import (  # noqa: E402
    devices,
    display,
    indexing,
    interop,
    manipulation,
    parts,
    protocols,
    ufuncs,
)
from ember.array.elementwise import binary, compare, inplace  # noqa: E402
from ember.array.matmul import matmul as _matmul  # noqa: E402
