"""The CPU backend's threads: stream workers and the helpers that share a launch.

Two kinds of daemon threads, both Python threads that spend their time inside ctypes calls
(the GIL is released there):

* **workers** (:data:`workers`) run streams' queued jobs in the background, one stream at
  a time each, so that a launch returns before its kernel ends, as on a GPU.  A thread that
  synchronizes a stream runs the jobs no worker has started yet itself (see
  :mod:`.stream`), so a wait never pays a thread wake-up.
* **helpers** (:class:`Helpers`) join a large launch: every thread calls the same kernel
  entry, which takes chunks of work-groups from a shared atomic counter until none is left
  (dynamic scheduling: a helper that wakes late finds the work done and returns at once,
  so a busy machine costs nothing but the wake-up).  A launch the size of a few work-groups
  runs on the calling thread alone: waking a helper costs 35-56 µs on the 2-core test
  machine, more than such a kernel takes.

Threads get :data:`STACK_BYTES` of stack: a kernel keeps its shared arrays and per-work-item
arrays on the stack, and some platforms give new threads only 512 KiB.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable

from ember.runtime.sync import WaiterThreads

STACK_BYTES = 32 << 20
IDLE_S = 10.0  # a worker with nothing to do this long exits

_stack_lock = threading.Lock()


def start_thread(target: Callable[[], None], name: str) -> None:
    """A daemon thread with a :data:`STACK_BYTES` stack (set only around its creation)."""
    with _stack_lock:
        try:
            previous = threading.stack_size(STACK_BYTES)
        except (ValueError, RuntimeError):  # a platform that cannot set it: the default
            previous = None
        try:
            threading.Thread(target=target, name=name, daemon=True).start()
        finally:
            if previous is not None:
                threading.stack_size(previous)


def _new_workers() -> WaiterThreads:
    """Threads that run jobs (a stream's drain), started on demand (never refused: every
    busy worker means a new one), idle ones exit after :data:`IDLE_S`."""
    return WaiterThreads(sys.maxsize, IDLE_S, "ember-cpu-stream", start_thread)


workers = _new_workers()


class Share:
    """One launch shared between its thread and the helpers that join it."""

    __slots__ = ("call", "_lock", "_started", "_finished", "_closed", "_done")

    def __init__(self, call: Callable[[], None]):
        self.call = call
        self._lock = threading.Lock()
        self._started = self._finished = 0
        self._closed = False
        self._done = threading.Event()

    def join(self) -> None:
        """A helper's part: run the entry unless the launch has already ended."""
        with self._lock:
            if self._closed:
                return
            self._started += 1
        try:
            self.call()
        finally:
            with self._lock:
                self._finished += 1
                if self._closed and self._finished == self._started:
                    self._done.set()

    def close(self) -> None:
        """The launching thread's own part ended: wait for the helpers that joined."""
        with self._lock:
            self._closed = True
            if self._finished == self._started:
                return
        self._done.wait()


class Helpers:
    """``count`` helper threads (started on first use) that join large launches."""

    def __init__(self, count: int):
        self.count = count
        self._reset()
        _all_helpers.append(self)

    def _reset(self) -> None:
        self._tasks: queue.SimpleQueue[Share] = queue.SimpleQueue()
        self._started = False
        self._lock = threading.Lock()

    def run(self, call: Callable[[], None], helpers: int) -> None:
        """Run ``call`` on this thread and on up to ``helpers`` helper threads at once;
        return when every thread that started it has finished."""
        helpers = min(helpers, self.count)
        if helpers <= 0:
            call()
            return
        self._start()
        share = Share(call)
        for _ in range(helpers):
            self._tasks.put(share)
        try:
            call()
        finally:
            share.close()

    def _start(self) -> None:
        if self._started:
            return
        with self._lock:
            if not self._started:
                for k in range(self.count):
                    start_thread(self._serve, f"ember-cpu-helper-{k}")
                self._started = True

    def _serve(self) -> None:
        while True:
            share = self._tasks.get()
            try:
                share.join()
            except BaseException:  # the launching thread reports the kernel's errors
                pass


def _after_fork_in_child() -> None:
    """A forked child has none of the parent's threads: start from no workers, and let
    every :class:`Helpers` start its threads again."""
    global workers
    workers = _new_workers()
    for helpers in list(_all_helpers):
        helpers._reset()


_all_helpers: list = []
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
