"""The fields of :class:`ember.ndarray`, fixed once set: its base class ``ArrayCore``.

``shape``, ``strides``, ``dtype``, ``buffer``, ``offset`` and ``backend`` describe one view of
device memory, and an array caches what is derived from them (``_c``: C-strided or not;
``_lv``: what a kernel launch reads).  Setting one of them again would leave those caches
stale and a later op reading the wrong elements, so the compiled base class
(``ember/array/_core.c``) refuses it with an ``AttributeError`` that says what to do instead.

``make(cls, buffer, shape, strides, dtype, backend, offset, c)`` makes an array without its
``__init__`` (the fast paths' outputs) and ``fill(array, ...)`` is ``__init__``'s stores in
one call.  Where the C stub was not built, the same names are plain slots and Python
functions: the same results, without the guard.
"""

from __future__ import annotations

try:
    from ember.array._core import FIELDS, FIXED, ArrayCore, fill, make

    GUARDED = True
except ImportError:  # built without a C compiler: unguarded slots
    GUARDED = False
    FIELDS = ("buffer", "shape", "strides", "dtype", "backend", "offset", "_c", "_lv")
    FIXED = FIELDS[:6]

    class ArrayCore:  # type: ignore[no-redef]
        """The fields of an ember.ndarray (its base class); see ember.ndarray."""

        __slots__ = (*FIELDS, "__weakref__")

    def fill(a, buffer, shape, strides, dtype, backend, offset, c) -> None:  # type: ignore[misc]
        a.buffer, a.shape, a.strides, a.dtype = buffer, shape, strides, dtype
        a.backend, a.offset, a._c, a._lv = backend, offset, c, None

    def make(cls, buffer, shape, strides, dtype, backend, offset, c):  # type: ignore[misc]
        a = object.__new__(cls)
        fill(a, buffer, shape, strides, dtype, backend, offset, c)
        return a
