"""``ember.ndarray``: an n-dimensional array in device memory.

An array is a view: ``shape``, ``strides`` (bytes, may be negative), ``dtype`` and ``offset``
(bytes) into a device :class:`~ember.runtime.backend.Buffer` that it keeps alive.  Several
arrays may share one buffer.
"""

from __future__ import annotations

import math
from typing import Any

from ember.dtypes import DType
from ember.runtime.allocator import note_uses
from ember.runtime.backend import Backend, Buffer


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Byte strides of a C-contiguous array of ``shape``."""
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def normalize_shape(shape: Any) -> tuple[int, ...]:
    """``shape`` as a tuple of non-negative ints (an int means a 1-d shape)."""
    if isinstance(shape, int) or hasattr(shape, "__index__"):
        shape = (shape,)
    try:
        dims = tuple(int(n.__index__()) for n in shape)
    except (TypeError, AttributeError):
        raise TypeError(f"shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(n < 0 for n in dims):
        raise ValueError(f"negative dimensions are not allowed: shape {dims}")
    return dims


class ndarray:  # noqa: N801 - NumPy's spelling
    """An array in device memory.  Create one with :func:`ember.empty`, :func:`ember.zeros`
    or :func:`ember.asarray`; read it back with :meth:`to_numpy`.
    """

    __slots__ = ("shape", "strides", "dtype", "buffer", "offset", "backend", "__weakref__")

    def __init__(
        self,
        shape: tuple[int, ...],
        dtype: DType,
        buffer: Buffer,
        backend: Backend,
        strides: tuple[int, ...] | None = None,
        offset: int = 0,
    ):
        self.shape = shape
        self.dtype = dtype
        self.buffer = buffer
        self.backend = backend
        self.strides = c_strides(shape, dtype.itemsize) if strides is None else strides
        self.offset = offset

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
        """The :class:`~ember.runtime.backend.DeviceInfo` of the device holding the data."""
        return self.backend.device

    @property
    def is_c_contiguous(self) -> bool:
        """True when the elements are laid out densely in C order."""
        if self.size <= 1:
            return True
        expected = c_strides(self.shape, self.dtype.itemsize)
        return all(n == 1 or s == e for n, s, e in zip(self.shape, self.strides, expected))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d ember.ndarray")
        return self.shape[0]

    # ------------------------------------------------------------------ host transfer
    def _extent(self) -> tuple[int, int]:
        """Lowest and one-past-highest byte (relative to ``offset``) the view touches."""
        if self.size == 0:
            return 0, 0
        low = sum(s * (n - 1) for n, s in zip(self.shape, self.strides) if s < 0)
        high = sum(s * (n - 1) for n, s in zip(self.shape, self.strides) if s > 0)
        return low, high + self.dtype.itemsize

    def to_numpy(self, stream=None):
        """Copy the array to a new NumPy array (waits for the copy unless ``stream`` is given)."""
        import numpy as np

        if stream is not None:  # read on `stream`: keep the buffer until it has passed
            note_uses((self,), stream)
        if self.is_c_contiguous:
            out = np.empty(self.shape, self.dtype.numpy)
            if out.nbytes:
                self.backend.copy_to_host(out, self.buffer, self.offset, stream)
            return out
        low, high = self._extent()
        raw = np.empty(high - low, np.uint8)
        self.backend.copy_to_host(raw, self.buffer, self.offset + low, stream)
        view = np.lib.stride_tricks.as_strided(
            raw[-low:].view(self.dtype.numpy) if low else raw.view(self.dtype.numpy),
            shape=self.shape,
            strides=self.strides,
        )
        return np.ascontiguousarray(view)

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError(
                "an ember.ndarray lives in device memory: converting it to NumPy always copies"
            )
        out = self.to_numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __repr__(self) -> str:
        return (
            f"ember.ndarray(shape={self.shape}, dtype={self.dtype.name}, "
            f"backend={self.backend.name}, device={self.backend.device.name!r})"
        )


def asnumpy(x: Any):
    """Copy an :class:`ndarray` to NumPy (other inputs go through ``numpy.asarray``)."""
    if isinstance(x, ndarray):
        return x.to_numpy()
    import numpy as np

    return np.asarray(x)


def not_on_device(value: Any, where: str) -> TypeError:
    """The error for host data passed where device memory is needed."""
    kind = type(value).__module__.split(".")[0] + "." + type(value).__name__
    return TypeError(
        f"{where} needs device memory but got a {kind} (host memory); "
        f"copy it to the device explicitly with ember.asarray(x) first"
    )
