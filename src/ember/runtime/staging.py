"""Host <-> device copies of pageable NumPy memory at pinned speed.

A device's copy engine reads and writes only page-locked (pinned) host memory.  Given an
ordinary NumPy array, the CUDA driver copies it through small pinned buffers of its own, one
piece after the other on the calling thread: on the H100 machine of issue 19 that moved 7-14
GB/s to the device and 1-3 GB/s back into a fresh array, against 54 GB/s from pinned memory.
Registering the array's pages instead (``cuMemHostRegister``) cost more than the copy: 65 ms
to register and 73 ms to unregister 1 GiB (docs/design/memory.md).

So Ember stages large copies itself.  The array is cut into chunks; worker threads copy
chunks between the array and a ring of pinned buffers from the backend's
:class:`~ember.runtime.pinned.HostPool` (NumPy's copy releases the GIL, and the page faults
of a fresh destination are taken in parallel); the calling thread enqueues each chunk's
transfer as soon as its buffer is filled (uploads), or hands each chunk to a worker as soon
as its transfer has landed (downloads).  Where the backend runs that upload pipeline in
native code (``Backend.copy_chunks_from_host``; CUDA: C threads and non-temporal stores,
``ember.backends.cuda._fill``), it does, with no Python hand-off per chunk.  The host
copies and the transfers overlap, so the rate is that of the slower of the two: on the
H200 machine's host, the host copies (their aggregate memory bandwidth, ~20-28 GB/s with
4-8 threads for 16 MiB).  A download's
destination is, where it can be, reused memory pinned by :mod:`ember.runtime.hostcache`:
that copy needs no staging at all.

Whatever happens mid-copy (a driver error, a failed host copy, Ctrl-C), every pinned buffer
goes back to the pool: at once when no transfer can still be using it, else once an event
recorded after the transfers it took part in has completed.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import Any

MiB = 1 << 20
# Smaller copies go straight to the driver: on the H200 machine (2026-11-27) a 4 MiB
# upload moved 13.2 GB/s that way against 9.4 staged, a 16 MiB one 11.4 against 17-19.
STAGE_MIN = 8 * MiB
# Handing a chunk to a thread and back costs tens of µs: 1 MiB chunks ran 16 MiB at 11-13
# GB/s against 17-19 with 2 MiB ones (same machine, 8 workers).
CHUNK_MIN = 2 * MiB
CHUNK_MAX = 8 * MiB
CHUNK_STEP = 1 * MiB  # chunks are whole multiples of this
MAX_WORKERS = 8
# A native pipeline (Backend.copy_chunks_from_host) runs without the GIL: one call copies
# at most this much (~10 ms on the H200 host), so that Ctrl-C is seen between calls.
NATIVE_BATCH = 256 * MiB


def worker_count() -> int:
    """Host-copy threads: half the cores (a copy thread saturates about one core's share of
    memory bandwidth), 1 to :data:`MAX_WORKERS`."""
    return max(1, min(MAX_WORKERS, (os.cpu_count() or 2) // 2))


def chunk_size(nbytes: int, workers: int) -> int:
    """Bytes per chunk: enough chunks to keep every worker and the copy engine busy, each
    large enough that handing it to a thread costs little (1-8 MiB, whole MiB)."""
    per = -(-nbytes // (2 * workers))
    per = -(-per // CHUNK_STEP) * CHUNK_STEP
    return max(CHUNK_MIN, min(CHUNK_MAX, per))


# ------------------------------------------------------------------------- worker threads


class Job:
    """One task handed to the workers; :meth:`wait` returns its result or raises its error.
    A job given a ``finished`` queue also puts itself there when it ends (either way)."""

    __slots__ = ("fn", "args", "done", "error", "finished", "tag")

    def __init__(self, fn: Callable[..., Any], args: tuple, finished=None, tag: int = 0):
        self.fn, self.args = fn, args
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.finished, self.tag = finished, tag

    def run(self) -> None:
        try:
            self.fn(*self.args)
        except BaseException as exc:  # handed to the waiting thread, which raises it
            self.error = exc
        finally:
            self.done.set()
            if self.finished is not None:
                self.finished.put(self)

    def wait(self) -> None:
        self.done.wait()
        if self.error is not None:
            raise self.error


class Workers:
    """A few daemon threads running :class:`Job` s in order of submission."""

    def __init__(self, n: int):
        self.n = n
        self._queue: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], *args: Any, finished=None, tag: int = 0) -> Job:
        if len(self._threads) < self.n:
            self._start()
        job = Job(fn, args, finished, tag)
        self._queue.put(job)
        return job

    def _start(self) -> None:
        with self._lock:
            while len(self._threads) < self.n:
                t = threading.Thread(target=self._loop, name="ember-staging", daemon=True)
                self._threads.append(t)
                t.start()

    def _loop(self) -> None:
        while True:
            self._queue.get().run()


_workers: Workers | None = None
_workers_lock = threading.Lock()


def workers() -> Workers:
    """The process's staging threads (started on first use; a forked child starts anew)."""
    global _workers
    if _workers is None:
        with _workers_lock:
            if _workers is None:
                _workers = Workers(worker_count())
    return _workers


def _forget_workers() -> None:
    global _workers, _workers_lock
    _workers, _workers_lock = None, threading.Lock()  # the parent's threads are not here


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


# ------------------------------------------------------------------------- host copies


def _fill(wait_for: Any, staging: Any, host: Any, start: int, size: int) -> None:
    """Worker: once ``wait_for`` (the buffer's previous transfer) is done, copy
    ``host[start:start + size]`` into the pinned buffer."""
    import numpy as np

    if wait_for is not None:
        wait_for.synchronize(spin=False)  # in the driver, GIL released: see _drain
    np.copyto(staging[:size], host[start : start + size])


def _drain(landed: Any, staging: Any, out: Any, start: int, size: int) -> None:
    """Worker: once ``landed`` (the chunk's transfer) is done, copy it out of the buffer."""
    import numpy as np

    # No spinning on queries here: each query takes the GIL, which the calling thread and
    # the other workers' copies need; a wait in the driver leaves it to them.
    landed.synchronize(spin=False)
    np.copyto(out[start : start + size], staging[:size])


# ------------------------------------------------------------------------- pipelines


class _Ring:
    """The pinned buffers and events of one staged copy, and what to do with them after."""

    def __init__(self, pool: Any):
        self.pool = pool
        self.buffers: list[Any] = []
        self.events: list[Any] = []
        self.jobs: list[Job] = []
        self.recorded: list[bool] = []

    def take(self, count: int, chunk: int) -> None:
        """``count`` buffers of ``chunk`` bytes and their events (one by one: after a failure
        the ring holds what it took, to give back)."""
        for _ in range(count):
            self.buffers.append(self.pool.take(chunk))
        for _ in range(count):
            self.events.append(self.pool.event())
        self.recorded = [False] * count

    def settle(self) -> None:
        """Let every submitted job finish (their errors are not the first: dropped)."""
        for job in self.jobs:
            job.done.wait()

    def release(self, stream: Any, in_flight: bool) -> None:
        """Give every buffer back: at once, or (``in_flight``) after the work queued so far
        on ``stream``, which may still be reading or writing them."""
        buffers, self.buffers = self.buffers, []
        events, self.events = self.events, []
        if in_flight and buffers:
            try:
                self.pool.after(stream, buffers)
            except BaseException:
                _wait_quietly(stream)  # nothing to tell when they are free: make sure
                self.pool.give_back(buffers)
        else:
            self.pool.give_back(buffers)
        self.pool.return_events(events)


def _wait_quietly(stream: Any) -> None:
    try:
        stream.synchronize()
    except BaseException:  # the device is failing: its transfers are over either way
        pass


def upload(backend: Any, pool: Any, dst: Any, offset: int, host: Any, stream: Any, wait: bool):
    """Copy the 1-d ``uint8`` array ``host`` into ``dst`` at ``offset`` on ``stream``.

    ``wait=True``: a ring of buffers reused as transfers finish, and the call returns when
    the data is on the device.  ``wait=False``: a buffer per chunk (never a wait for the
    stream, which may be busy), returned to the pool when the transfers are done; the call
    returns once ``host`` has been copied out (it may then be changed).
    """
    n = host.nbytes
    w = workers()
    chunk = chunk_size(n, w.n)
    count = -(-n // chunk)
    ring = _Ring(pool)
    try:
        ring.take(min(count, w.n + 2) if wait else count, chunk)
        if not _native_chunks(backend, ring, dst, offset, host, stream, chunk, w.n):
            _upload_chunks(backend, ring, dst, offset, host, stream, chunk, count, w)
        if wait:
            stream.synchronize()
    except BaseException:
        ring.settle()
        ring.release(stream, in_flight=True)
        raise
    ring.release(stream, in_flight=not wait)


def _native_chunks(backend, ring: _Ring, dst, offset, host, stream, chunk, threads) -> bool:
    """The pipeline of :func:`_upload_chunks` in the backend's native code, where it has
    one (``copy_chunks_from_host``; CUDA: C threads, no GIL hand-off per chunk), a batch of
    at most :data:`NATIVE_BATCH` bytes a call so that Ctrl-C is seen between batches.
    False (nothing done) where the backend has none."""
    n, slots = host.nbytes, len(ring.buffers)
    batch = max(chunk, NATIVE_BATCH // chunk * chunk)
    for start in range(0, n, batch):
        part = host[start : start + batch]
        if not backend.copy_chunks_from_host(
            dst, offset + start, part, stream, ring.buffers, ring.events, chunk,
            ring.recorded, threads,
        ):  # fmt: skip
            if start:  # pragma: no cover - a backend that stops mid-copy breaks its contract
                raise RuntimeError("the backend's native staged upload stopped mid-copy")
            return False
        used = min(slots, -(-part.nbytes // chunk))
        ring.recorded[:used] = [True] * used
    return True


def _upload_chunks(backend, ring: _Ring, dst, offset, host, stream, chunk, count, w) -> None:
    """Fill chunk ``j`` (a worker, after the buffer's previous transfer), transfer it (here),
    and queue the fill that reuses its buffer; fills run ahead by the ring's length.

    Transfers are queued in the order the fills finish, not by index (the chunks are
    disjoint): fills side by side finish out of order (2 MiB each took 190-700 µs on the
    H200 host, contending for memory bandwidth), and by index a finished chunk waited for a
    slower one.  Same run, GB/s by index -> by completion: 13.0 -> 14.7 (16 MiB), 23.5 ->
    26.6 (64 MiB), 26.7 -> 28.6 (256 MiB)."""
    n, slots = host.nbytes, len(ring.buffers)
    finished: queue.SimpleQueue[Job] = queue.SimpleQueue()

    def fill(j: int) -> None:
        k = j % slots
        before = ring.events[k] if ring.recorded[k] else None
        size = min(chunk, n - j * chunk)
        job = w.submit(
            _fill, before, ring.buffers[k], host, j * chunk, size, finished=finished, tag=j
        )
        ring.jobs.append(job)

    for j in range(min(slots, count)):
        fill(j)
    for _ in range(count):
        job = finished.get()
        if job.error is not None:
            raise job.error
        j = job.tag
        k, start = j % slots, j * chunk
        size = min(chunk, n - start)
        backend.copy_from_host(dst, offset + start, ring.buffers[k][:size], stream)
        ring.events[k].record(stream)
        ring.recorded[k] = True
        if j + slots < count:
            fill(j + slots)


def download(backend: Any, pool: Any, out: Any, src: Any, offset: int, stream: Any) -> None:
    """Copy ``out.nbytes`` bytes of ``src`` from ``offset`` into the 1-d ``uint8`` array
    ``out`` (after the work queued on ``stream``); returns when ``out`` holds them."""
    n = out.nbytes
    w = workers()
    chunk = chunk_size(n, w.n)
    count = -(-n // chunk)
    ring = _Ring(pool)
    try:
        ring.take(min(count, w.n + 2), chunk)
        _download_chunks(backend, ring, out, src, offset, stream, chunk, count, w)
    except BaseException:
        ring.settle()
        ring.release(stream, in_flight=True)
        raise
    ring.release(stream, in_flight=False)


def _download_chunks(backend, ring: _Ring, out, src, offset, stream, chunk, count, w) -> None:
    """Transfer chunk ``j`` into a free buffer (here) and hand it to a worker that copies it
    out once it has landed; a buffer is free again when that copy is done."""
    n, slots = out.nbytes, len(ring.buffers)
    drains: list[Job] = []
    for j in range(count):
        k, start = j % slots, j * chunk
        if j >= slots:
            drains[j - slots].wait()  # the buffer's previous chunk is out
        size = min(chunk, n - start)
        backend.copy_to_host(ring.buffers[k][:size], src, offset + start, stream)
        ring.events[k].record(stream)
        drains.append(w.submit(_drain, ring.events[k], ring.buffers[k], out, start, size))
        ring.jobs.append(drains[-1])
    for job in drains:
        job.wait()
