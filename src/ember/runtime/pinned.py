"""A pool of page-locked (pinned) host buffers for copies between host and device.

Two users:

- ``ember.asarray(x, stream=s)`` copies ``x`` into pooled pinned buffers and enqueues
  asynchronous host-to-device copies from them on ``s``, so the call returns without waiting
  for the stream and ``x`` may be changed as soon as it does;
- large copies of pageable NumPy memory (:mod:`ember.runtime.staging`) pass through a ring
  of these buffers, several chunks at once, at close to the copy engine's speed.

A buffer goes back to the pool only once the device is done with it: an event recorded after
its last copy is checked (never waited on) when a buffer is next needed.  Buffers are grouped
in the device allocator's size classes and never split.  Allocating pinned memory is slow
(``cuMemHostAlloc``: tens of µs to ms), so buffers are kept until :meth:`HostPool.empty_cache`.
Events are reused too.  On OpenCL, ``Backend.alloc_host`` gives ordinary host memory; the
semantics are the same.
"""

from __future__ import annotations

import threading
from typing import Any

from ember.runtime.allocator import size_class
from ember.runtime.backend import Backend, Buffer, Stream

# Asynchronous uploads at least this large are staged in chunks by worker threads.
CHUNKED_UPLOAD = 4 << 20


class HostPool:
    """Pinned staging buffers of one backend, reused once the device has read them."""

    def __init__(self, backend: Backend):
        self.backend = backend
        self._lock = threading.Lock()
        self._free: dict[int, list[Any]] = {}  # size class -> host uint8 arrays
        self._in_flight: list[tuple[Any, Any]] = []  # (event, array) per pending copy
        self._events: list[Any] = []  # events whose copies completed, to record again
        self.reserved = 0
        self.hits = self.misses = 0  # buffers taken from the cache / newly allocated
        self.uploads = 0  # asynchronous uploads (upload())
        self.staged = 0  # copies that went through the chunked pipeline

    def upload(self, dst: Buffer, offset: int, host: Any, stream: Stream) -> None:
        """Copy the C-contiguous NumPy array ``host`` to ``dst`` at ``offset``, async on
        ``stream``, through pinned buffers; ``host`` may be reused when this returns."""
        nbytes = host.nbytes
        flat = host.reshape(-1).view("uint8")
        self.uploads += 1
        if nbytes >= CHUNKED_UPLOAD:
            from ember.runtime import staging

            self.staged += 1
            staging.upload(self.backend, self, dst, offset, flat, stream, wait=False)
            return
        import numpy as np

        staging_buffer = self.take(nbytes)
        try:
            view = staging_buffer[:nbytes]
            np.copyto(view, flat)
            self.backend.copy_from_host(dst, offset, view, stream)
        except BaseException:
            self.give_back([staging_buffer])
            raise
        self.after(stream, [staging_buffer])

    # ------------------------------------------------------------------ buffers
    def take(self, nbytes: int) -> Any:
        """A pinned ``uint8`` buffer of at least ``nbytes`` (its size class), free for use."""
        size = size_class(max(nbytes, 1))
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

    def give_back(self, buffers: list[Any]) -> None:
        """Return buffers no copy is using (any more)."""
        with self._lock:
            for b in buffers:
                self._free.setdefault(b.nbytes, []).append(b)

    def after(self, stream: Stream, buffers: list[Any]) -> None:
        """Return ``buffers`` once the work queued so far on ``stream`` (copies that use
        them) has finished: an event is recorded now and checked later."""
        event = self.event()
        try:
            event.record(stream)
        except BaseException:
            self.return_events([event])
            raise
        with self._lock:
            self._in_flight += [(event, b) for b in buffers]

    def event(self) -> Any:
        """An event to record (reused once its last recording completed)."""
        with self._lock:
            if self._events:
                return self._events.pop()
        return self.backend.create_event()

    def return_events(self, events: list[Any]) -> None:
        """Events the caller no longer waits on (and no pending copy is tied to)."""
        with self._lock:
            self._events += events

    def _collect(self) -> None:
        """Under the lock: file the buffers whose copy has finished (queries, no waits)."""
        pending, done = [], set()
        for event, staging in self._in_flight:
            if id(event) in done or event.query():
                done.add(id(event))
                self._free.setdefault(staging.nbytes, []).append(staging)
                if not any(e is event for e in self._events):
                    self._events.append(event)
            else:
                pending.append((event, staging))
        self._in_flight = pending

    # ------------------------------------------------------------------ public
    def empty_cache(self) -> int:
        """Free the pinned buffers not in use by a copy; returns the bytes released."""
        with self._lock:
            self._collect()
            released = sum(a.nbytes for blocks in self._free.values() for a in blocks)
            self._free = {}
            self.reserved -= released
        return released

    def stats(self) -> dict[str, int]:
        """``host_reserved`` = ``host_in_flight`` (copies not finished, or buffers in use by
        a staged copy now) + ``host_cached`` bytes; ``host_uploads`` (asynchronous
        uploads), ``host_cache_hits`` (buffers reused), ``host_staged_copies``."""
        with self._lock:
            self._collect()
            cached = sum(a.nbytes for blocks in self._free.values() for a in blocks)
            return {
                "host_reserved": self.reserved,
                "host_in_flight": self.reserved - cached,
                "host_cached": cached,
                "host_uploads": self.uploads,
                "host_cache_hits": self.hits,
                "host_staged_copies": self.staged,
            }
