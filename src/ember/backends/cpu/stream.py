"""Streams and events of the CPU backend: in-order job queues run by worker threads.

A stream is a FIFO of *jobs* (a launch, a copy, a fill, an event's marker, a wait for
another stream's event): Python callables that run one at a time, in order.  Submitting
one returns at once and hands the stream to a worker thread (:mod:`.pool`), so a kernel
runs while the caller goes on, and ``stream.query()`` is False until it is done - Ember's
usual stream semantics (``runtime/backend.py``), with the usual sync fast paths
(``runtime/sync.py``): a stream known idle costs an integer comparison.

Waiting *steals*: :meth:`CPUStream.run_until` runs, on the waiting thread, every job up to
the target that no worker has started, and sleeps (GIL released) only while a job started
by someone else runs.  So a launch followed by a synchronize never waits for a worker to
wake up - except a launch that may be long (:data:`STEAL_S`) when the waiter is the main
thread: Ctrl-C must interrupt the wait, and cannot interrupt a C call.  Waits never spin
(``spin = False``): on a CPU the spinning thread would take a core from the kernel.

A job that could not take long - a launch whose kernel ran in under
:data:`INLINE_S` last time, a small copy - runs at once on the submitting thread when the
stream is idle (:meth:`CPUStream.run_inline`): ``x + y`` on small arrays then costs no
thread hand-off at all.  Its stream still counts it as submitted work, so the sync rules
are unchanged: the next wait finds it done with one query.

``queued`` / ``done`` count jobs (events' markers included); ``submitted`` / ``completed``
(:class:`~ember.runtime.sync.Waitable`) count the work the sync layer knows about.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable

from ember.backends.cpu import pool
from ember.errors import ClosedError, DriverError
from ember.runtime.backend import Event, Stream
from ember.runtime.sync import Waitable, _signals_raise

INLINE_S = 50e-6  # a job this short runs on the submitting thread when the stream is idle
# A launch that may run longer (``job.long``) is not stolen by a wait on the main thread
# while Ctrl-C raises there: run by a worker, it leaves the wait interruptible.
STEAL_S = 20e-3


def _interruptible() -> bool:
    """Whether this thread is where Ctrl-C raises KeyboardInterrupt (the main thread, with
    Python's SIGINT handler)."""
    return threading.current_thread() is threading.main_thread() and _signals_raise()


class CPUStream(Waitable, Stream):
    """An in-order queue of jobs (see the module docstring)."""

    spin = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._pending: collections.deque[Callable[[], None]] = collections.deque()
        self._running = False  # a job of this stream is being run (by anyone)
        self._scheduled = False  # a worker was asked to drain the queue
        self._error: BaseException | None = None
        self.queued = 0  # jobs enqueued (or run inline) so far
        self.done = 0  # jobs finished
        self.submitted = self.completed = 0
        self.alive = True

    @property
    def handle(self) -> CPUStream:
        """The stream itself (it has no driver object)."""
        if not self.alive:
            raise ClosedError("this stream was closed; create a new one")
        return self

    # ------------------------------------------------------------------ submitting
    def submit(self, job: Callable[[], None], counts: bool = True) -> int:
        """Queue ``job``; return its number (wait for it with :meth:`run_until`).

        ``counts``: the job is work the sync layer counts (launches, copies), not a
        marker."""
        return self._queue(job, counts)[0]

    def _queue(self, job: Callable[[], None], counts: bool) -> tuple[int, int]:
        """Queue ``job``: its number, and ``submitted`` once it is counted."""
        with self._lock:
            if not self.alive:
                raise ClosedError(
                    "this stream was closed; create a new one (cannot submit work to it)"
                )
            self._pending.append(job)
            self.queued += 1
            number = self.queued
            if counts:
                self.submitted += 1
            counted = self.submitted
            wake = not self._scheduled
            self._scheduled = True
        if wake:
            pool.workers.submit(self._drain)
        return number, counted

    def run_inline(self, job: Callable[[], None], counts: bool = True) -> int:
        """Run ``job`` now on this thread if the stream is idle and return its number;
        0 (nothing run) if the stream is busy."""
        return self._inline(job, counts)[0]

    def _inline(self, job: Callable[[], None], counts: bool) -> tuple[int, int]:
        with self._lock:
            if self._running or self._pending or not self.alive:
                return 0, 0
            self._running = True
            self.queued += 1
            number = self.queued
            if counts:
                self.submitted += 1
            counted = self.submitted
        self._run(job)
        return number, counted

    def run_now(self, job: Callable[[], None]) -> None:
        """Run ``job`` after the work queued before it and return when it is done: a
        blocking copy.  Like a finished wait, it marks the stream complete up to it (so
        a kernel's error is raised here, as on every backend)."""
        number, counted = self._inline(job, True)
        if not number:
            number, counted = self._queue(job, True)
            self.run_until(number)
        self.raise_error()
        self._mark(counted)

    # ------------------------------------------------------------------ running
    def _run(self, job: Callable[[], None]) -> None:
        try:
            job()
        except KeyboardInterrupt:  # Ctrl-C in a job a wait stole: the waiter's to handle
            raise
        except BaseException as exc:  # kept for the next wait: jobs run on other threads
            if self._error is None:
                self._error = exc
        finally:
            with self._lock:
                self._running = False
                self.done += 1
                self._cond.notify_all()

    def run_until(self, target: int | None) -> None:
        """Run (or wait for) the jobs up to number ``target``; None: until none is queued.

        Jobs nobody has started run on this thread; a job another thread runs is waited
        for with the GIL released."""
        while True:
            with self._lock:
                while self._running and (target is None or self.done < target):
                    self._cond.wait()
                if target is not None and self.done >= target:
                    return
                if not self._pending:
                    return
                if getattr(self._pending[0], "long", False) and _interruptible():
                    self._cond.wait()  # a worker runs it (the submit scheduled one)
                    continue
                job = self._pending.popleft()
                self._running = True
            self._run(job)

    def _drain(self) -> None:
        """A worker's task: run everything queued, then let the next submit wake one."""
        while True:
            self.run_until(None)
            with self._lock:
                if not self._pending and not self._running:
                    self._scheduled = False
                    return

    def raise_error(self) -> None:
        """Raise the error a job of this stream hit, once."""
        error, self._error = self._error, None
        if error is not None:
            if isinstance(error, DriverError | MemoryError):
                raise error
            raise DriverError(
                f"work queued on a cpu stream failed: {type(error).__name__}: {error}",
                call="cpu stream",
            ) from error

    # ------------------------------------------------------------------ waiting
    def synchronize(self, blocking: bool | None = None, spin: bool | None = None) -> None:
        """Wait until all work submitted here has finished (running what nobody started)."""
        Waitable.synchronize(self, blocking, False)

    def _native_query(self) -> bool:
        if self.done >= self.queued:
            self.raise_error()
            return True
        return False

    def _native_block(self, blocking: bool) -> None:
        self.run_until(self.queued)
        self.raise_error()

    def wait_event(self, event: CPUEvent) -> None:
        """Make later work on this stream wait for ``event`` (a job that waits for it)."""
        mark = event.mark
        if mark is None or mark[0] is self or mark[0].done >= mark[1]:
            return  # never recorded, on this stream (in order anyway), or already passed
        other, number = mark
        self.submit(lambda: other.run_until(number), counts=False)

    def close(self) -> None:
        """Finish the queued work; later submissions are refused.  Idempotent."""
        if not self.alive:
            return
        self.run_until(None)
        with self._lock:
            while self._running:
                self._cond.wait()
            self.alive = False
        self._mark(self.submitted)

    def __repr__(self) -> str:
        state = "closed" if not self.alive else f"{self.queued - self.done} queued"
        return f"<CPUStream {state}>"


class CPUEvent(Waitable, Event):
    """A marker job in a stream; ``timing=True`` stamps the time it ran."""

    spin = False

    def __init__(self, timing: bool = False):
        self.timing = timing
        self.mark: tuple[CPUStream, int] | None = None  # (stream, job number)
        self._stamp: list[float] = [0.0]

    @property
    def handle(self) -> tuple[CPUStream, int] | None:
        """(stream, job number) of the last :meth:`record` (None before)."""
        return self.mark

    def record(self, stream: CPUStream) -> None:
        """Place the marker after the work submitted to ``stream`` so far."""
        stamp: list[float] = [0.0]

        def marker() -> None:
            stamp[0] = time.perf_counter()

        number = stream.run_inline(marker, counts=False) or stream.submit(marker, counts=False)
        self._stamp = stamp
        self.mark = (stream, number)
        self.submitted += 1

    def synchronize(self, blocking: bool | None = None, spin: bool | None = None) -> None:
        """Block until the recorded work has finished (at once if never recorded)."""
        Waitable.synchronize(self, blocking, False)

    def _native_query(self) -> bool:
        stream, number = self.mark  # type: ignore[misc]
        return stream.done >= number

    def _native_block(self, blocking: bool) -> None:
        stream, number = self.mark  # type: ignore[misc]
        stream.run_until(number)
        stream.raise_error()

    def elapsed_ms(self, end: CPUEvent) -> float:
        """Milliseconds from this event's marker to ``end``'s (both ``timing=True``, done)."""
        if not (self.timing and end.timing):
            raise ValueError(
                "elapsed_ms needs two events created with timing=True "
                "(backend.create_event(timing=True))"
            )
        if self.mark is None or end.mark is None:
            raise ValueError("elapsed_ms needs both events recorded (event.record(stream))")
        if not (self.query() and end.query()):
            raise ValueError("elapsed_ms needs both events complete: call end.synchronize() first")
        return (end._stamp[0] - self._stamp[0]) * 1e3

    def close(self) -> None:
        """Forget the marker.  Idempotent."""
        self.mark = None
        self._mark(self.submitted)

    def __repr__(self) -> str:
        state = "unrecorded" if self.mark is None else "recorded"
        return f"<CPUEvent {state}{', timing' if self.timing else ''}>"
