"""Host memory as the CPU backend's device memory.

A buffer is a 64-byte aligned slice of a NumPy byte array: its ``handle`` is the address
kernels receive (a plain int, so a view's offset is added on the host, as on CUDA), and the
array owns the memory.  Copies and fills are ``memmove`` / ``memset`` through ctypes, which
release the GIL.

Freeing waits for the work queued before it: :meth:`Reclaimer.release` keeps a closed
buffer's memory until every stream has finished what was enqueued when it was closed (a
kernel queued on a stream still holds the raw address).  OpenCL drivers behave the same
way; without it an array dropped right after an asynchronous launch could be reused under
the running kernel.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from ember.errors import ClosedError, OutOfMemoryError
from ember.runtime.backend import Buffer
from ember.runtime.checks import check_range

ALIGN = 64  # a cache line, and the widest vector (AVX-512) a kernel loads


class CPUBuffer(Buffer):
    """``nbytes`` of 64-byte aligned host memory owned by Ember.

    Parameters
    ----------
    nbytes : int
        The size asked for.
    reclaimer : Reclaimer
        Where :meth:`close` hands the memory to be freed once no queued work can use it.
    """

    __slots__ = ("nbytes", "_owner", "_handle", "_reclaimer", "array")

    def __init__(self, nbytes: int, reclaimer: Reclaimer):
        try:
            owner = np.empty(nbytes + ALIGN, np.uint8)
        except MemoryError as exc:
            raise OutOfMemoryError(
                f"cannot allocate {nbytes} bytes of host memory for the cpu backend: free "
                "arrays you no longer need, or use smaller ones",
                call="numpy.empty",
            ) from exc
        start = -owner.ctypes.data % ALIGN
        self.array = owner[start : start + nbytes]
        self.nbytes = nbytes
        self._owner = owner
        self._handle = owner.ctypes.data + start
        self._reclaimer = reclaimer

    @property
    def handle(self) -> int:
        """The address of the first byte (what a ``PTR`` kernel parameter takes)."""
        if self._handle is None:
            raise ClosedError("this buffer was closed (freed); allocate a new one")
        return self._handle

    def close(self) -> None:
        """Free the memory once the work queued so far has finished.  Idempotent."""
        if self._handle is None:
            return
        self._handle = None
        owner, self._owner, self.array = self._owner, None, None
        self._reclaimer.release(owner)

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else f"at {self._handle:#x}"
        return f"<CPUBuffer {self.nbytes} bytes ({state})>"


class Reclaimer:
    """Memory of closed buffers, kept until the streams have passed their last use.

    Parameters
    ----------
    streams : iterable
        The backend's streams (a :class:`~ember.runtime.sync.StreamSet`): each has
        ``queued`` (jobs enqueued so far) and ``done`` (jobs finished).
    """

    def __init__(self, streams):
        self._streams = streams
        self._lock = threading.Lock()
        self._waiting: list[tuple[Any, list[tuple[Any, int]]]] = []

    def release(self, owner: Any) -> None:
        """Drop ``owner`` now if no stream has unfinished work, else once they finish it."""
        marks = [(s, s.queued) for s in self._streams if s.done < s.queued]
        with self._lock:
            if marks:
                self._waiting.append((owner, marks))
            self._sweep()

    def _sweep(self) -> None:
        """Under the lock: forget the memory no stream can touch any more."""
        if self._waiting:
            self._waiting = [
                (owner, marks)
                for owner, marks in self._waiting
                if any(s.done < mark for s, mark in marks)
            ]

    def sweep(self) -> None:
        """Free what has become free (called when memory is allocated)."""
        if self._waiting:
            with self._lock:
                self._sweep()


# ------------------------------------------------------------------------- copies


def address(buffer: Any, offset: int, nbytes: int, what: str) -> int:
    """The address of ``[offset, offset + nbytes)`` of an Ember buffer, range-checked.

    ``buffer`` is any Ember buffer of this backend (``handle`` an int address, ``nbytes``):
    the backend's own or the caching allocator's.
    """
    handle = getattr(buffer, "handle", None)
    if type(handle) is not int:
        raise TypeError(f"the {what} must be a cpu backend buffer (backend.alloc), got {buffer!r}")
    size = buffer.nbytes
    if offset < 0 or nbytes < 0 or offset + nbytes > size:
        check_range(what, offset, nbytes, size)  # raises, saying which range
    return handle + offset


def host_address(arr: np.ndarray) -> int:
    return arr.__array_interface__["data"][0]


def copy(dst: int, src: int, nbytes: int) -> None:
    """``memmove`` (GIL released); overlapping ranges are allowed."""
    if nbytes:
        ctypes.memmove(dst, src, nbytes)


def zero(dst: int, nbytes: int) -> None:
    if nbytes:
        ctypes.memset(dst, 0, nbytes)
