"""CUDA streams.

Every stream Ember creates is non-blocking (``CU_STREAM_NON_BLOCKING``): it never waits
for the legacy NULL stream, which other libraries may keep busy.  Ember's default stream
is one such stream that the backend creates, not the NULL stream.

Waiting follows :mod:`ember.runtime.sync`: each submission (launch, copy, memset) adds one
to :attr:`submitted`, so synchronizing a stream known to be idle is an integer comparison;
otherwise the driver is queried briefly, then waited on without the GIL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ember.backends.cuda.driver import check, cu, error, finished
from ember.backends.cuda.event import CudaEvent
from ember.errors import ClosedError
from ember.runtime.backend import Stream
from ember.runtime.sync import Waitable

if TYPE_CHECKING:
    from ember.backends.cuda.device import PrimaryContext


class CudaStream(Waitable, Stream):
    """A non-blocking CUDA stream.

    Parameters
    ----------
    context : PrimaryContext
        The context the stream belongs to.
    priority : int
        Stream priority (lower numbers run first; 0 is the default priority).

    Attributes
    ----------
    submitted : int
        Pieces of work submitted so far; whoever enqueues work on :attr:`handle` directly
        must add 1 after enqueuing it, or :meth:`synchronize` may not wait for it.
    """

    def __init__(self, context: PrimaryContext, priority: int = 0):
        context.ensure_current()
        self._context = context
        self._handle = check(
            cu.cuStreamCreateWithPriority(cu.CUstream_flags.CU_STREAM_NON_BLOCKING, priority),
            "cuStreamCreateWithPriority",
            "creating a stream",
        )
        self._address = int(self._handle)  # what direct launches pack; None once closed
        self._block_event: CudaEvent | None = None
        self.registry = None  # the backend's StreamSet, told when work is left orphaned

    @property
    def handle(self) -> cu.CUstream:
        """The ``CUstream``."""
        if self._handle is None:
            raise ClosedError("this stream was closed; create a new one")
        return self._handle

    @property
    def alive(self) -> bool:
        """False once the stream (or its context) was closed."""
        return self._handle is not None and self._context.alive

    # ----------------------------------------------------------- hooks of sync.Waitable
    def _native_query(self) -> bool:
        """``cuStreamQuery``: True when the stream has no unfinished work (never blocks)."""
        return finished(
            cu.cuStreamQuery, self.handle, self._context, "cuStreamQuery", "querying a stream"
        )

    def _native_block(self, blocking: bool) -> None:
        """Wait in the driver (GIL released); ``blocking``: sleep rather than spin."""
        self._context.ensure_current()  # waits also run on waiter and user threads
        if blocking:
            # One event per stream, read once: another thread may be waiting on it too
            # (a re-record by that thread only makes this wait cover more work).
            event = self._block_event
            if event is None:
                event = self._block_event = CudaEvent(self._context, blocking_sync=True)
            event.record(self)
            event._native_block(True)
            return
        err = cu.cuStreamSynchronize(self.handle)[0]
        if err:
            raise error(err, "cuStreamSynchronize", "waiting for a stream")

    def _async_marker(self) -> CudaEvent:
        """A blocking-sync event recorded now, for an ``await`` to wait on in a thread."""
        marker = CudaEvent(self._context, blocking_sync=True)
        marker.record(self)
        return marker

    # ----------------------------------------------------------- the rest of the contract
    def wait_event(self, event: CudaEvent) -> None:
        """Make later work on this stream wait until ``event`` has completed (no host wait)."""
        check(cu.cuStreamWaitEvent(self.handle, event.handle, 0), "cuStreamWaitEvent")

    def close(self) -> None:
        """Destroy the stream once its queued work has finished.  Idempotent.

        Work still running is then out of reach of per-stream waits: the backend is told,
        and its next ``synchronize()`` waits for the whole device.
        """
        handle, self._handle = self._handle, None
        self._address = None
        if handle is not None and self.completed < self.submitted and self.registry is not None:
            self.registry.orphaned = True
        if self._block_event is not None:
            self._block_event.close()
        if handle is not None and self._context.alive:
            check(cu.cuStreamDestroy(handle), "cuStreamDestroy")

    def __repr__(self) -> str:
        state = f"0x{int(self._handle):x}" if self._handle is not None else "closed"
        return f"<CudaStream {state}>"
