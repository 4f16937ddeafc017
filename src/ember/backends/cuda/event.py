"""CUDA events: markers in a stream to wait on, and optionally to time.

Timing is off unless asked for: an event without timing (``CU_EVENT_DISABLE_TIMING``) is
cheaper to record and to wait on.  Waiting follows :mod:`ember.runtime.sync` (an event never
recorded, or already waited for, is done without a driver call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ember.backends.cuda.driver import check, cu, error, finished
from ember.errors import ClosedError
from ember.runtime.backend import Event
from ember.runtime.sync import Waitable

if TYPE_CHECKING:
    from ember.backends.cuda.device import PrimaryContext
    from ember.backends.cuda.stream import CudaStream


class CudaEvent(Waitable, Event):
    """A CUDA event.

    Parameters
    ----------
    context : PrimaryContext
        The context the event belongs to.
    timing : bool
        Record timestamps, so that :meth:`elapsed_ms` works.
    blocking_sync : bool
        A host wait on it sleeps (``CU_EVENT_BLOCKING_SYNC``) instead of spinning.
    """

    def __init__(self, context: PrimaryContext, timing: bool = False, blocking_sync: bool = False):
        context.ensure_current()
        self._context = context
        self.timing = timing
        self.blocking_sync = blocking_sync
        flags = 0 if timing else int(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        if blocking_sync:
            flags |= int(cu.CUevent_flags.CU_EVENT_BLOCKING_SYNC)
        self._handle = check(cu.cuEventCreate(flags), "cuEventCreate", "creating an event")

    @property
    def handle(self) -> cu.CUevent:
        """The ``CUevent``."""
        if self._handle is None:
            raise ClosedError("this event was closed; create a new one")
        return self._handle

    def record(self, stream: CudaStream) -> None:
        """Place the marker after the work submitted to ``stream`` so far."""
        check(cu.cuEventRecord(self.handle, stream.handle), "cuEventRecord")
        self.submitted += 1

    # ----------------------------------------------------------- hooks of sync.Waitable
    def _native_query(self) -> bool:
        """``cuEventQuery``: True when the recorded work has finished (never blocks)."""
        return finished(
            cu.cuEventQuery, self.handle, self._context, "cuEventQuery", "querying an event"
        )

    def _native_block(self, blocking: bool) -> None:
        """``cuEventSynchronize`` (GIL released; sleeps if made with ``blocking_sync``)."""
        self._context.ensure_current()  # waits also run on waiter and user threads
        err = cu.cuEventSynchronize(self.handle)[0]
        if err:
            raise error(err, "cuEventSynchronize", "waiting for an event")

    def _async_marker(self) -> CudaEvent | _EventWatch:
        """What an ``await`` waits on in a waiter thread: something that sleeps, not spins.

        A blocking-sync event is its own marker.  Otherwise (``cuEventSynchronize`` on it
        would spin a CPU core) a private stream waits for it on the device and a
        blocking-sync event recorded there is waited on: it completes right after this one.
        """
        if self.blocking_sync:
            return self
        return _EventWatch(self)

    def elapsed_ms(self, end: CudaEvent) -> float:
        """Milliseconds from this event to ``end``; both need ``timing=True`` and to be done."""
        if not (self.timing and end.timing):
            raise ValueError(
                "elapsed_ms needs two events created with timing=True "
                "(backend.create_event(timing=True))"
            )
        return float(check(cu.cuEventElapsedTime(self.handle, end.handle), "cuEventElapsedTime"))

    def close(self) -> None:
        """Destroy the event.  Idempotent."""
        handle, self._handle = self._handle, None
        if handle is not None and self._context.alive:
            check(cu.cuEventDestroy(handle), "cuEventDestroy")


class _EventWatch:
    """A blocking-sync marker that completes when ``event`` does (see ``_async_marker``)."""

    def __init__(self, event: CudaEvent):
        from ember.backends.cuda.stream import CudaStream

        self.stream = CudaStream(event._context)  # its own: no other work to wait behind
        self.stream.wait_event(event)
        self.marker = self.stream._async_marker()

    def _native_block(self, blocking: bool) -> None:
        self.marker._native_block(True)

    def close(self) -> None:
        self.marker.close()
        self.stream.close()
