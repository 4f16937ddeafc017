"""Waiting for the device: fast paths, spin → yield → block, and asyncio.

Every stream and event counts what was submitted to it (:class:`Waitable`): a launch or copy
does ``stream.submitted += 1``; a finished wait sets ``completed`` to the count it waited for.
So:

- a stream nothing was ever submitted to, or whose last submission is known complete, is
  synchronized by comparing two integers — no driver call;
- otherwise we query the driver a bounded number of times (CUDA.jl's policy: 32 queries,
  then up to 256 queries separated by ``sleep(0)`` yields), then block in a driver wait
  that releases the GIL (a blocking-sync event when ``blocking=True``, so the thread
  sleeps instead of spinning in the driver).

asyncio: :func:`wait_async` never blocks the event loop.  The default waits in a small pool
of waiter threads that block in GIL-free driver waits and hand completion back with
``loop.call_soon_threadsafe``; no Python code runs on driver callback threads.
``EMBER_ASYNC_WAIT=poll`` polls with exponential backoff instead.  See
docs/design/sync.md for the measurements behind the defaults.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

SPINS = 32
YIELDS = 256
POLL_FIRST_S = 20e-6
POLL_MAX_S = 1e-3


class Waitable:
    """Bookkeeping shared by streams and events; backends implement the native hooks.

    Subclasses implement ``_native_query() -> bool`` (never blocks) and
    ``_native_block(blocking: bool)`` (waits without holding the GIL).
    """

    submitted = 0  # pieces of work submitted so far (class default: nothing yet)
    completed = 0  # pieces known to be finished

    def _native_query(self) -> bool:
        raise NotImplementedError

    def _native_block(self, blocking: bool) -> None:
        raise NotImplementedError

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

    def __await__(self):
        return wait_async(self).__await__()


def wait(obj: Waitable, blocking: bool | None = None, spin: bool | None = None) -> None:
    """Spin → yield → block until ``obj``'s native query says done."""
    from ember.config import settings

    plain = settings.sync == "plain"
    if spin if spin is not None else not plain:
        query = obj._native_query
        for _ in range(SPINS):
            if query():
                return
        sleep = time.sleep
        for _ in range(YIELDS):
            sleep(0)
            if query():
                return
    obj._native_block(settings.sync_blocking if blocking is None else blocking)


# ----------------------------------------------------------------------------- asyncio

_pool_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None


def _waiters() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(8, thread_name_prefix="ember-wait")
        return _pool


async def wait_async(obj: Waitable) -> None:
    """Wait for ``obj`` without blocking the running event loop."""
    from ember.config import settings

    target = obj.submitted
    if obj.completed >= target or obj._native_query():
        obj._mark(target)
        return
    if settings.async_wait == "poll":
        await _poll(obj)
    else:
        await _in_waiter_thread(obj)
    obj._mark(target)


async def _poll(obj: Waitable) -> None:
    delay = POLL_FIRST_S
    while not obj._native_query():
        await asyncio.sleep(delay)
        delay = min(delay * 2, POLL_MAX_S)


async def _in_waiter_thread(obj: Waitable) -> None:
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    marker = obj._async_marker() if hasattr(obj, "_async_marker") else obj

    def block_then_wake() -> None:
        error = None
        try:
            marker._native_block(True)  # GIL released inside the driver
        except BaseException as exc:  # handed to the awaiting task, never lost
            error = exc
        try:
            loop.call_soon_threadsafe(_settle, done, error)
        except RuntimeError:
            pass  # the loop was closed while we waited: nobody is waiting any more

    _waiters().submit(block_then_wake)
    await done


def _settle(future: asyncio.Future, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
