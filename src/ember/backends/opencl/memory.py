"""OpenCL device memory: ``cl.Buffer`` allocations, copies and fills.

OpenCL has no pointer arithmetic on the host: a kernel argument is a whole ``cl.Buffer``.
So :meth:`OpenCLBackend.native_pointer` accepts offset 0 only, and Ember's compiled kernels
take a view's offset as a separate argument.  Copies and fills do take byte offsets.

OpenCL drivers may allocate lazily, at the first use of a buffer: an allocation that does
not fit can then fail at the first copy or launch (as :class:`OutOfMemoryError`) rather
than in :func:`allocate`.  Requests above ``CL_DEVICE_MAX_MEM_ALLOC_SIZE`` fail at once.

Every function here that enqueues work returns the ``cl.Event`` of that work; the backend
keeps it as its stream's last event (see :mod:`.stream`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backends.opencl.check import cl, driver_error
from ember.errors import ClosedError, OutOfMemoryError
from ember.runtime.backend import Buffer
from ember.runtime.checks import check_range, host_array


class OpenCLBuffer(Buffer):
    """Device memory owned by Ember: one ``cl.Buffer``.

    Parameters
    ----------
    handle : pyopencl.Buffer
        The buffer (at least one byte: OpenCL has no empty buffers).
    nbytes : int
        The size Ember asked for (may be 0 while ``handle`` holds one byte).
    """

    def __init__(self, handle: cl.Buffer, nbytes: int):
        self._handle = handle
        self.nbytes = nbytes

    @property
    def handle(self) -> cl.Buffer:
        """The ``cl.Buffer`` (what a ``PTR`` kernel parameter takes)."""
        if self._handle is None:
            raise ClosedError("this buffer was closed (freed); allocate a new one")
        return self._handle

    def close(self) -> None:
        """Drop Ember's reference to the ``cl.Buffer``.  Idempotent.

        pyopencl frees the memory when the last Python reference to the ``cl.Buffer`` goes
        (at once, when Ember held the only one), and the driver only after the work queued
        on it has finished.  Ember does not call ``cl.Buffer.release()``: that would leave
        every other reference (a kernel argument list, a pooled buffer's ``handle``)
        pointing at freed memory, which PoCL does not detect (silent corruption) and NVIDIA
        reports as ``CL_INVALID_MEM_OBJECT`` at the next launch.
        """
        self._handle = None

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else "open"
        return f"<OpenCLBuffer {self.nbytes} bytes ({state})>"


def allocate(context: cl.Context, nbytes: int, max_alloc: int) -> OpenCLBuffer:
    """``nbytes`` of read-write device memory in ``context``.

    Raises
    ------
    OutOfMemoryError
        ``nbytes`` exceeds ``max_alloc`` (``CL_DEVICE_MAX_MEM_ALLOC_SIZE``) or the driver
        is out of memory.
    """
    if nbytes < 0:
        raise ValueError(f"cannot allocate a negative number of bytes ({nbytes})")
    if nbytes > max_alloc:
        raise OutOfMemoryError(
            f"cannot allocate {nbytes} bytes: the OpenCL device's largest allocation is "
            f"{max_alloc} bytes (CL_DEVICE_MAX_MEM_ALLOC_SIZE); split the data into smaller "
            "arrays",
            code=-61,
            code_name="CL_INVALID_BUFFER_SIZE",
            call="clCreateBuffer",
        )
    try:
        handle = cl.Buffer(context, cl.mem_flags.READ_WRITE, max(nbytes, 1))
    except cl.Error as exc:
        raise driver_error(exc, f"allocating {nbytes} bytes") from exc
    return OpenCLBuffer(handle, nbytes)


def span(buffer: Any, offset: int, nbytes: int, what: str) -> cl.Buffer:
    """The ``cl.Buffer`` of ``buffer`` after checking ``[offset, offset + nbytes)`` fits.

    ``buffer`` is any Ember buffer (``.handle`` a ``cl.Buffer``, ``.nbytes``): the backend's
    own or the caching allocator's.
    """
    handle = getattr(buffer, "handle", None)
    if not isinstance(handle, cl.MemoryObjectHolder):
        raise TypeError(
            f"the {what} must be an OpenCL device buffer (backend.alloc), got {buffer!r}"
        )
    check_range(what, offset, nbytes, getattr(buffer, "nbytes", handle.size))
    return handle


def to_device(
    queue: cl.CommandQueue, dst: Any, offset: int, src: Any, blocking: bool
) -> cl.Event | None:
    """Copy host array ``src`` into ``dst`` at byte ``offset``; None when there is nothing."""
    src = host_array(src, writable=False)
    handle = span(dst, offset, src.nbytes, "destination")
    if not src.nbytes:
        return None
    try:
        return cl.enqueue_copy(
            queue, handle, src.reshape(-1).view(np.uint8), dst_offset=offset,
            is_blocking=blocking,
        )  # fmt: skip
    except cl.Error as exc:
        raise driver_error(exc, f"copying {src.nbytes} bytes to the device") from exc


def to_host(
    queue: cl.CommandQueue, dst: Any, src: Any, offset: int, blocking: bool
) -> cl.Event | None:
    """Copy ``dst.nbytes`` bytes of ``src`` from byte ``offset`` into host array ``dst``."""
    dst = host_array(dst, writable=True)
    handle = span(src, offset, dst.nbytes, "source")
    if not dst.nbytes:
        return None
    try:
        return cl.enqueue_copy(
            queue, dst.reshape(-1).view(np.uint8), handle, src_offset=offset,
            is_blocking=blocking,
        )  # fmt: skip
    except cl.Error as exc:
        raise driver_error(exc, f"copying {dst.nbytes} bytes to the host") from exc


def device_to_device(
    queue: cl.CommandQueue, dst: Any, dst_offset: int, src: Any, src_offset: int, nbytes: int
) -> cl.Event | None:
    """Asynchronous copy of ``nbytes`` between device buffers (the same one too)."""
    to = span(dst, dst_offset, nbytes, "destination")
    frm = span(src, src_offset, nbytes, "source")
    if not nbytes:
        return None
    if to.int_ptr == frm.int_ptr and abs(dst_offset - src_offset) < nbytes:
        raise ValueError(
            "source and destination ranges of a device copy overlap (OpenCL forbids it); "
            "copy through a temporary buffer"
        )
    try:
        return cl.enqueue_copy(
            queue, to, frm, byte_count=nbytes, src_offset=src_offset, dst_offset=dst_offset
        )
    except cl.Error as exc:
        raise driver_error(exc, f"copying {nbytes} bytes on the device") from exc


_ZERO32 = np.uint32(0)
_ZERO8 = np.uint8(0)


def fill_zero(queue: cl.CommandQueue, dst: Any, offset: int, nbytes: int) -> cl.Event | None:
    """Asynchronously zero ``nbytes`` of ``dst`` from ``offset`` (``clEnqueueFillBuffer``)."""
    handle = span(dst, offset, nbytes, "destination")
    if not nbytes:
        return None
    # A 4-byte pattern is faster on GPUs; it needs offset and size to be multiples of 4.
    pattern = _ZERO32 if offset % 4 == 0 and nbytes % 4 == 0 else _ZERO8
    try:
        return cl.enqueue_fill_buffer(queue, handle, pattern, offset, nbytes)
    except cl.Error as exc:
        raise driver_error(exc, f"zeroing {nbytes} bytes") from exc
