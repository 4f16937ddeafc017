"""Device buffers and pinned host memory.

Device memory is stream-ordered (``cuMemAllocAsync``/``cuMemFreeAsync`` from the device's
default memory pool) where the device supports memory pools, else ``cuMemAlloc``/
``cuMemFree``; so are the few allocations a new backend makes before its pool has started
(``start_pool``, in a thread of the backend's).  Pinned host memory (``cuMemHostAlloc``) is
handed out as a NumPy array.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

from ember.backends.cuda.driver import check, cu
from ember.errors import ClosedError
from ember.runtime.backend import Buffer, Resource

if TYPE_CHECKING:
    import numpy as np

    from ember.backends.cuda.device import PrimaryContext
    from ember.backends.cuda.stream import CudaStream


_alloc_async = cu.cuMemAllocAsync
_free_async = cu.cuMemFreeAsync


class CudaBuffer(Buffer):
    """``nbytes`` of device memory at address :attr:`handle` (an int; 0 once closed).

    A stream-ordered buffer is freed on the stream it was allocated on: work already queued
    there that uses it finishes first.  Work on *other* streams must be ordered before
    ``close()`` by the caller (an event, or a synchronize).
    """

    __slots__ = ("handle", "nbytes", "_cu", "_context", "_stream", "__weakref__")

    def __init__(
        self, ptr: cu.CUdeviceptr, nbytes: int, context: PrimaryContext, stream: CudaStream | None
    ):
        self.handle = int(ptr)  # a plain slot, not a property: read on every launch
        self.nbytes = nbytes
        self._cu = ptr  # the bindings' own object: the cheapest form to pass back to them
        self._context = context
        self._stream = stream  # None: allocated with cuMemAlloc

    @property
    def ptr(self) -> int:
        """The device address (same as :attr:`handle`)."""
        return self.handle

    def close(self) -> None:
        """Free the memory (stream-ordered where it was allocated so).  Idempotent."""
        ptr = self._cu
        if ptr is None:
            return
        self._cu = None
        self.handle = 0
        s = self._stream
        if s is not None and s._handle is not None and self._context.alive:
            (err,) = _free_async(ptr, s._handle)
            if not err:
                return
        self._release(ptr)

    def _release(self, ptr: cu.CUdeviceptr) -> None:
        """Slow path of :meth:`close`: synchronous frees, closed streams, errors."""
        context = self._context
        if not context.alive:
            return  # the context and all its memory are gone already
        context.ensure_current()
        s = self._stream
        if s is None:
            check(cu.cuMemFree(ptr), "cuMemFree", f"freeing {self.nbytes} bytes")
        else:  # on its stream, or on the NULL stream (in order) once that stream is closed
            h = s._handle if s._handle is not None else 0
            check(_free_async(ptr, h), "cuMemFreeAsync", f"freeing {self.nbytes} bytes")

    def __repr__(self) -> str:
        state = f"0x{self.handle:x}" if self.handle else "closed"
        return f"<CudaBuffer {self.nbytes} bytes at {state}>"


def allocate(
    nbytes: int, context: PrimaryContext, stream: CudaStream, use_pool: bool
) -> CudaBuffer:
    """Allocate ``nbytes`` of device memory (stream-ordered on ``stream`` if ``use_pool``).

    The backend's ``alloc`` tries ``cuMemAllocAsync`` inline first; this is the full path,
    with the checks and the messages.
    """
    if not isinstance(nbytes, int) or nbytes < 0:
        raise ValueError(f"cannot allocate {nbytes!r} bytes: need a non-negative int")
    size = max(nbytes, 1)  # the driver refuses 0 bytes; a 0-byte buffer still needs an address
    context.ensure_current()
    doing = f"allocating {nbytes} bytes of device memory"
    if use_pool:
        ptr = check(_alloc_async(size, stream.handle), "cuMemAllocAsync", doing)
        return CudaBuffer(ptr, nbytes, context, stream)
    ptr = check(cu.cuMemAlloc(size), "cuMemAlloc", doing)
    return CudaBuffer(ptr, nbytes, context, None)


def start_pool(context: PrimaryContext, stream: CudaStream) -> None:
    """Make (and free) a 1-byte stream-ordered allocation on ``stream``: the driver sets the
    device's pool up at the process's first one.  Returns quietly on any error."""
    try:
        context.ensure_current()
        h = stream._handle
        err, ptr = _alloc_async(1, h)
        if not err:
            _free_async(ptr, h)
    except Exception:  # noqa: BLE001 - the first real allocation reports it
        pass


class PinnedHostMemory(Resource):
    """Page-locked host memory (``cuMemHostAlloc``), fast and truly asynchronous to copy.

    :attr:`array` is a ``uint8`` NumPy view of it; view it as another dtype with
    ``array.view(dtype)``.  The memory is freed by :meth:`close`, or when this object and
    every array made from :attr:`array` are garbage (each array keeps this object alive).
    After ``close()`` those arrays must no longer be used.
    """

    def __init__(self, nbytes: int, context: PrimaryContext, device_map: bool = False):
        context.ensure_current()
        self.nbytes = nbytes
        self._context = context
        flags = cu.CU_MEMHOSTALLOC_DEVICEMAP if device_map else 0
        self.ptr = int(
            check(
                cu.cuMemHostAlloc(max(nbytes, 1), flags),
                "cuMemHostAlloc",
                f"allocating {nbytes} bytes of pinned host memory",
            )
        )
        # device_map: kernels can read and write it at this device address (no copy)
        self.device_ptr = 0
        if device_map:
            self.device_ptr = int(
                check(cu.cuMemHostGetDevicePointer(self.ptr, 0), "cuMemHostGetDevicePointer")
            )

    @property
    def array(self) -> np.ndarray:
        """A new ``uint8`` NumPy array over the whole memory; it keeps this object alive."""
        import numpy as np

        if not self.ptr:
            raise ClosedError("this pinned host memory was closed; allocate a new one")
        raw = (ctypes.c_ubyte * self.nbytes).from_address(self.ptr)
        raw._ember_owner = self  # array -> raw -> self: the memory lives as long as the array
        return np.frombuffer(raw, dtype=np.uint8)

    def close(self) -> None:
        """Free the pinned memory now.  Idempotent."""
        ptr, self.ptr = self.ptr, 0
        if ptr and self._context.alive:
            check(cu.cuMemFreeHost(ptr), "cuMemFreeHost")
