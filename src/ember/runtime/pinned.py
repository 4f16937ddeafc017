"""A pool of page-locked (pinned) host buffers for asynchronous uploads.

``ember.asarray(x, stream=s)`` copies ``x`` into a pooled pinned buffer and enqueues an
asynchronous host-to-device copy from it on ``s``.  So:

- the call returns at once (the driver copies from pageable memory only after a host-side
  wait for the stream, and pinned memory is what lets the DMA engine run asynchronously);
- ``x`` may be changed or freed as soon as the call returns (it was copied);
- the pinned buffer goes back to the pool only once the stream has passed the copy: an
  event recorded after the copy is checked (never waited on) when a buffer is next needed.

Buffers are grouped in the device allocator's size classes and never split.  Allocating
pinned memory is slow (``cuMemHostAlloc``: tens of µs to ms), so buffers are kept until
:meth:`HostPool.empty_cache`.  Events are reused too.  On OpenCL, ``Backend.alloc_host``
gives ordinary host memory; staging still frees the caller's array at once.
"""

from __future__ import annotations

import threading
from typing import Any

from ember.runtime.allocator import size_class
from ember.runtime.backend import Backend, Buffer, Stream


class HostPool:
    """Pinned staging buffers of one backend, reused once the device has read them."""

    def __init__(self, backend: Backend):
        self.backend = backend
        self._lock = threading.Lock()
        self._free: dict[int, list[Any]] = {}  # size class -> host uint8 arrays
        self._in_flight: list[tuple[Any, Any]] = []  # (event, array) per pending upload
        self._events: list[Any] = []  # events whose upload completed, to record again
        self.reserved = 0
        self.hits = self.misses = 0

    def upload(self, dst: Buffer, offset: int, host: Any, stream: Stream) -> None:
        """Copy the C-contiguous NumPy array ``host`` to ``dst`` at ``offset``, async on
        ``stream``, through a pinned buffer; ``host`` may be reused when this returns."""
        import numpy as np

        nbytes = host.nbytes
        staging = self._take(size_class(max(nbytes, 1)))
        view = staging[:nbytes]
        np.copyto(view, host.reshape(-1).view(np.uint8))
        try:
            self.backend.copy_from_host(dst, offset, view, stream)
        except BaseException:
            self._give_back(staging)
            raise
        with self._lock:
            event = self._events.pop() if self._events else self.backend.create_event()
        event.record(stream)
        with self._lock:
            self._in_flight.append((event, staging))

    def _take(self, size: int):
        with self._lock:
            self._collect()
            blocks = self._free.get(size)
            if blocks:
                self.hits += 1
                return blocks.pop()
            self.misses += 1
            self.reserved += size
        try:
            return self.backend.alloc_host(size)
        except BaseException:
            with self._lock:
                self.reserved -= size
            raise

    def _give_back(self, staging) -> None:
        with self._lock:
            self._free.setdefault(staging.nbytes, []).append(staging)

    def _collect(self) -> None:
        """Under the lock: file the buffers whose upload has finished (queries, no waits)."""
        pending = []
        for event, staging in self._in_flight:
            if event.query():
                self._free.setdefault(staging.nbytes, []).append(staging)
                self._events.append(event)
            else:
                pending.append((event, staging))
        self._in_flight = pending

    def empty_cache(self) -> int:
        """Free the pinned buffers not in use by an upload; returns the bytes released."""
        with self._lock:
            self._collect()
            released = sum(a.nbytes for blocks in self._free.values() for a in blocks)
            self._free = {}
            self.reserved -= released
        return released

    def stats(self) -> dict[str, int]:
        """``host_reserved`` = ``host_in_flight`` + ``host_cached`` bytes, and counters."""
        with self._lock:
            self._collect()
            cached = sum(a.nbytes for blocks in self._free.values() for a in blocks)
            return {
                "host_reserved": self.reserved,
                "host_in_flight": self.reserved - cached,
                "host_cached": cached,
                "host_uploads": self.hits + self.misses,
                "host_cache_hits": self.hits,
            }
