"""Waiting for the device: fast paths, spin → yield → block, and asyncio.

Every stream and event counts what was submitted to it (:class:`Waitable`): a launch or copy
does ``stream.submitted += 1``; a finished wait sets ``completed`` to the count it waited for.
So:

- a stream nothing was ever submitted to, or whose last submission is known complete, is
  synchronized by comparing two integers — no driver call;
- otherwise we query the driver a bounded number of times (CUDA.jl's policy: 32 queries,
  then up to 256 queries separated by ``os.sched_yield()``), then block in a driver wait
  that releases the GIL (a blocking-sync event when ``blocking=True``, so the thread
  sleeps instead of spinning in the driver).  Not ``time.sleep(0)``: on Linux that sleeps
  for the timer slack (~50-80 µs), so 256 of them made a 10-20 ms sleeping poll (H200:
  +37 µs on a 10 ms kernel; docs/design/sync.md).

Ctrl-C: a driver wait holds signals off (Python runs handlers only between bytecodes of the
main thread), so on the main thread the blocking phase runs on a waiter thread while the main
thread waits on a lock that a signal interrupts (:func:`interruptible`): ``KeyboardInterrupt``
within milliseconds, the device work goes on, the next wait waits for it again.

The counters are plain ints.  ``x.submitted += 1`` is not a lock-free atomic in general,
but on a GIL build of CPython ≥ 3.10 no thread switch can happen inside it (switches happen
only at calls and backward jumps), and ``tests/backend/test_sync.py`` checks that 8 threads
launching on one stream never lose a count.

A backend keeps the streams it created in a :class:`StreamSet`, so a device-wide
``ember.synchronize()`` with no stream busy makes no driver call either.

asyncio: :func:`wait_async` never blocks the event loop.  The default waits in waiter
threads (daemon threads, at most :data:`MAX_WAITERS`) that block in GIL-free driver waits and
hand completion back with ``loop.call_soon_threadsafe``; no Python code runs on driver
callback threads.  When every waiter thread is taken, or with ``EMBER_ASYNC_WAIT=poll``,
the task polls with exponential backoff instead.  See docs/design/sync.md for the
measurements behind the defaults.
"""

from __future__ import annotations

import atexit
import os
import queue
import signal
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from ember.config import settings

if TYPE_CHECKING:  # asyncio is imported where a coroutine runs, not at start-up (~40 ms)
    import asyncio

SPINS = 32
YIELDS = 256
# A non-blocking wait keeps polling (query + yield) this long before the driver's wait: on
# the main thread that wait is handed to a waiter thread (Ctrl-C), and waking from it cost
# 60-130 us on an H200 (a 16k x 16k sum(axis=1) loop: 20 x 246 us of GPU time took 251 us
# a call, CuPy's 241 for 240 of GPU time).  The driver's own wait spins a core as well.
POLL_S = 0.02
_yield = getattr(os, "sched_yield", lambda: time.sleep(0))  # (no sched_yield on Windows)
POLL_FIRST_S = 20e-6
POLL_MAX_S = 1e-3
ASYNC_SPINS = 16  # queries an await makes on the loop before handing the wait off
MAX_WAITERS = 32  # waiter threads; more concurrent awaits poll instead
WAITER_IDLE_S = 30.0  # an idle waiter thread exits after this long
SIGNAL_SLICE_S = 0.05  # the main thread's longest sleep in a wait where signals wake no lock
HANDOFF_YIELDS = 8  # queries before a main-thread wait is handed to a waiter thread
EXIT_SETTLE_S = 0.5  # at exit, the longest wait for waiter threads still in a driver wait

# Error records (ember.diagnostics.device_errors) with launches of kernels that can fail not yet
# checked.  Every completed wait reads them; while there are none this costs a list test.
pending_errors: list = []


try:  # the counters as C fields, which compiled launchers add to in place
    from ember.runtime._waitable import WaitableCore as _Counters
except ImportError:  # built without a C compiler: instance attributes over class defaults

    class _Counters:  # type: ignore[no-redef]
        """The counters of a stream or event (the base of Waitable)."""

        __slots__ = ()
        submitted = 0  # pieces of work submitted so far (class default: nothing yet)
        completed = 0  # pieces known to be finished
        _address = None  # the native handle as an int, for compiled launchers (None: none)


class Waitable(_Counters):
    """Bookkeeping shared by streams and events; backends implement the native hooks.

    The rule every backend keeps: each piece of work submitted to a stream (a launch, a
    copy, a fill, an event recorded) adds 1 to its ``submitted``, so a wait compares
    ``completed`` with it before asking the driver.

    MUST: ``_native_query() -> bool`` (never blocks) and ``_native_block(blocking)`` (waits
    without holding the GIL).  MAY: ``_async_marker()`` and ``spin`` (below).

    ``submitted``, ``completed`` (ints, 0 at first) and ``_address`` (None at first) come
    from the base class: C fields where ``ember.runtime._waitable`` is built (the CUDA
    launcher counts a launch there without a dictionary), else class defaults.
    """

    # False: never spin on the driver before blocking (the device's policy, e.g. an OpenCL
    # CPU device, where spinning steals the core the kernel runs on); None: the default
    spin: bool | None = None

    def _native_query(self) -> bool:
        raise NotImplementedError

    def _native_block(self, blocking: bool) -> None:
        raise NotImplementedError

    def _async_marker(self) -> Waitable:
        """MAY: what an ``await`` blocks on in a waiter thread - something whose
        ``_native_block(True)`` sleeps until the work submitted so far is done.  A new
        object is closed (``close()``) after the wait.  Default: this object itself."""
        return self

    def query(self) -> bool:
        """True when everything submitted so far has finished.  Never blocks."""
        target = self.submitted
        if self.completed >= target:
            return True
        if self._native_query():
            self._mark(target)
            return True
        return False

    def synchronize(self, blocking: bool | None = None, spin: bool | None = None) -> None:
        """Wait until everything submitted so far has finished.

        Parameters
        ----------
        blocking : bool, optional
            After spinning, sleep in the driver (a blocking-sync wait) instead of letting the
            driver spin.  Default: ``EMBER_SYNC_BLOCKING``.
        spin : bool, optional
            Query the driver briefly before blocking (lowest latency for short work).
            Default True unless ``EMBER_SYNC=plain``.
        """
        target = self.submitted
        if self.completed >= target:
            return
        wait(self, blocking, spin)
        self._mark(target)

    def _mark(self, target: int) -> None:
        if target > self.completed:
            self.completed = target
        if pending_errors:  # a kernel that can fail ran: raise its KernelError, if any
            for record in tuple(pending_errors):
                record.check()

    def __await__(self):
        return wait_async(self).__await__()


def wait(obj: Waitable, blocking: bool | None = None, spin: bool | None = None) -> None:
    """Spin → yield → block until ``obj``'s native query says done: :data:`SPINS` queries,
    :data:`YIELDS` queries after a yield each, and (non-blocking waits) more of those for up
    to :data:`POLL_S`, then the driver's wait."""
    plain = settings.sync == "plain"
    query = obj._native_query
    spun = spin if spin is not None else not plain
    blocking = settings.sync_blocking if blocking is None else blocking
    if spun:
        for _ in range(SPINS):
            if query():
                return
        # YIELDS polls, then (a non-blocking wait: a blocking one must not spin a core) more
        # until POLL_S has passed
        end = time.perf_counter() + (0.0 if blocking else POLL_S)
        polls = 0
        while polls < YIELDS or time.perf_counter() < end:
            _yield()  # releases the GIL; returns at once when no other thread wants the core
            if query():
                return
            polls += 1
    # a few queries before the hand-off, only where the stream's policy skipped spinning
    # (EMBER_SYNC=plain means: the driver's wait and nothing else)
    interruptible(obj._native_block, blocking, query=None if spun or plain else query)


def interruptible(block: Callable[..., None], *args, query: Callable[[], bool] | None = None):
    """Run ``block(*args)``, a driver wait that holds off signals, so that Ctrl-C still
    interrupts the main thread (within :data:`SIGNAL_SLICE_S` at worst).

    Python runs signal handlers only in the main thread, between bytecodes: a main thread
    blocked in ``clFinish`` or ``cuEventSynchronize`` saw its ``KeyboardInterrupt`` only
    when the kernel ended (issue 18: 3-4 s late).  There the wait runs on a waiter thread
    while the main thread waits on a lock, which a signal interrupts.  That hand-off costs
    two thread wake-ups, so ``query`` (when given: work that was not polled yet) is first
    tried a few times (:data:`HANDOFF_YIELDS`), which short work passes.  An interrupted
    wait leaves the device alone: the work goes on, nothing is marked complete, and the
    next wait waits for it again.  Other threads (which receive no signals) block in the
    driver directly, as does the main thread when every waiter thread is taken."""
    if threading.get_ident() != threading.main_thread().ident or not _signals_raise():
        return block(*args)
    if query is not None:
        for _ in range(HANDOFF_YIELDS):
            if query():
                return None
            _yield()
    done = threading.Lock()
    done.acquire()
    failure: list[BaseException] = []

    def job() -> None:
        try:
            block(*args)
        except BaseException as exc:  # handed to the waiting thread, if it still waits
            failure.append(exc)
        finally:
            done.release()

    if not waiters.submit(job):
        return block(*args)
    while not done.acquire(timeout=SIGNAL_SLICE_S):  # POSIX: a signal ends it at once
        pass
    if failure:
        raise failure[0]
    return None


def _signals_raise() -> bool:
    """Whether SIGINT runs a Python handler (by default one that raises KeyboardInterrupt);
    with SIG_DFL or SIG_IGN a wait has nothing to let through."""
    return callable(signal.getsignal(signal.SIGINT))


# ----------------------------------------------------------------------------- registry


class StreamSet:
    """The streams a backend created, held weakly, readable without a lock.

    The set is a tuple of weak references replaced (under a lock) when a stream is added or
    dies, so :meth:`busy` — the device-wide synchronize's fast path — only reads it.
    ``orphaned`` is set when a stream is closed with work still running: that work can no
    longer be waited for stream by stream, so the next device-wide wait must be the
    driver's.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()  # re-entrant: a weakref callback may run inside add()
        self._refs: tuple[weakref.ref, ...] = ()
        self.orphaned = False

    def add(self, stream: Waitable) -> None:
        with self._lock:
            self._refs = (*self._refs, weakref.ref(stream, self._forget))

    def _forget(self, ref: weakref.ref) -> None:
        with self._lock:
            self._refs = tuple(r for r in self._refs if r is not ref)

    def __iter__(self):
        for ref in self._refs:
            stream = ref()
            if stream is not None:
                yield stream

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def busy(self) -> list[tuple[Waitable, int]]:
        """(stream, submitted) for every stream with work not known to be complete."""
        out = []
        for ref in self._refs:
            s = ref()
            if s is not None and s.completed < s.submitted:
                out.append((s, s.submitted))
        return out


def wait_all(
    busy: list[tuple[Waitable, int]], blocking: bool | None = None, spin: bool | None = None
) -> None:
    """Wait for each (stream, target) in turn, then mark it complete up to its target."""
    for stream, target in busy:
        if stream.completed < target:
            stream.synchronize(blocking, spin)
            stream._mark(target)


async def wait_all_async(busy: list[tuple[Waitable, int]]) -> None:
    """:func:`wait_all` without blocking the event loop."""
    for stream, target in busy:
        if stream.completed < target:
            await wait_async(stream, target)


# ----------------------------------------------------------------------------- asyncio


def _daemon_thread(target: Callable[[], None], name: str) -> None:
    threading.Thread(target=target, name=name, daemon=True).start()


class WaiterThreads:
    """Daemon threads that run blocking jobs (driver waits) for awaiting tasks.

    At most ``limit`` threads; :meth:`submit` returns False when all are busy (the caller
    then polls).  Idle threads exit after ``idle_s`` seconds.  Daemon threads, so that a
    process exiting while the device still runs cancelled waits is not held up by them.
    """

    def __init__(self, limit: int = MAX_WAITERS, idle_s: float = WAITER_IDLE_S,
                 name: str = "ember-wait", start: Callable | None = None):  # fmt: skip
        self.limit = limit
        self.idle_s = idle_s
        self.name = name  # of the threads
        self._start = start or _daemon_thread  # start(target, name): a new thread running target
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)  # notified when a job ends
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self.threads = 0  # alive
        self.idle = 0  # alive and not reserved for a job
        self.running = 0  # jobs running now

    @property
    def busy(self) -> int:
        """Threads running (or about to run) a job."""
        return self.threads - self.idle

    def submit(self, job: Callable[[], None]) -> bool:
        """Run ``job`` on a waiter thread; False (and nothing run) if all are busy."""
        with self._lock:
            if self.idle:
                self.idle -= 1
            elif self.threads < self.limit:
                self.threads += 1
                self._start(self._serve, self.name)
            else:
                return False
            self._jobs.put(job)
        return True

    def _serve(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self.idle_s)
            except queue.Empty:
                with self._lock:
                    if self.idle:  # no job is on its way to this thread: leave
                        self.idle -= 1
                        self.threads -= 1
                        return
                continue  # a job was reserved for an idle thread just now: take it
            with self._lock:
                self.running += 1
            try:
                job()
            except BaseException:  # jobs hand their errors on; never kill the thread
                pass
            with self._lock:
                self.running -= 1
                self.idle += 1
                self._settled.notify_all()

    def settle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s until no job runs; False if one still does.

        Called at exit: a daemon thread that comes back from a driver wait while the
        interpreter finalizes is ended inside the extension's C++ frames, which aborts the
        process ("terminate called without an active exception").  A wait interrupted by
        Ctrl-C just before exit is the usual such job; it ends within microseconds."""
        with self._settled:
            return self._settled.wait_for(lambda: not self.running, timeout)


waiters = WaiterThreads()
atexit.register(waiters.settle, EXIT_SETTLE_S)


async def wait_async(obj: Waitable, target: int | None = None) -> None:
    """Wait for ``obj`` (up to submission ``target``) without blocking the running loop."""
    if target is None:
        target = obj.submitted
    if obj.completed >= target:
        return
    query = obj._native_query
    # A few queries first: short work is done before a thread hand-off would be (no spinning
    # where the stream's policy says not to, e.g. OpenCL CPU devices).
    for _ in range(ASYNC_SPINS if obj.spin is not False else 1):
        if query():
            obj._mark(target)
            return
    if settings.async_wait == "poll" or not await _in_waiter_thread(obj):
        await _poll(obj)
    obj._mark(target)


async def _poll(obj: Waitable) -> None:
    import asyncio  # (imported already: an event loop is running)

    delay = POLL_FIRST_S
    while not obj._native_query():
        await asyncio.sleep(delay)
        delay = min(delay * 2, POLL_MAX_S)


async def _in_waiter_thread(obj: Waitable) -> bool:
    """Wait in a waiter thread; False (nothing waited) when none is free."""
    import asyncio

    loop = asyncio.get_running_loop()
    done = loop.create_future()
    marker = obj._async_marker()

    def block_then_wake() -> None:
        error = None
        try:
            marker._native_block(True)  # GIL released inside the driver
        except BaseException as exc:  # handed to the awaiting task, never lost
            error = exc
        if marker is not obj:
            try:
                marker.close()
            except Exception:
                pass
        try:
            loop.call_soon_threadsafe(_settle, done, error)
        except RuntimeError:
            pass  # the loop was closed while we waited: nobody is waiting any more

    if not waiters.submit(block_then_wake):
        if marker is not obj:
            marker.close()
        return False
    await done
    return True


def _settle(future: asyncio.Future, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
