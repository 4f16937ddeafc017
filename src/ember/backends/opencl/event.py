"""OpenCL events as Ember events.

OpenCL has no "event object to record later": an event is what enqueueing a command
returns.  :meth:`OpenCLEvent.record` therefore enqueues a marker (``clEnqueueMarker
WithWaitList``, which in an in-order queue completes after everything enqueued before it)
and keeps the marker's ``cl.Event``.  Recording again replaces it.

Waiting follows :mod:`ember.runtime.sync`: an event never recorded, or already waited
for, is done without a driver call.

Timing reads the markers' ``CL_PROFILING_COMMAND_END``.  Recording a ``timing=True`` event
switches its stream to a profiling queue if it is not one yet (see :mod:`.stream`).
"""

from __future__ import annotations

from ember.backends.opencl.check import cl, driver_error, status_error
from ember.backends.opencl.stream import COMPLETE, OpenCLStream
from ember.runtime.backend import Event
from ember.runtime.sync import Waitable


class OpenCLEvent(Waitable, Event):
    """A marker in an OpenCL queue.

    Parameters
    ----------
    timing : bool
        Allow :meth:`elapsed_ms` on this event.
    """

    def __init__(self, timing: bool = False):
        self.timing = timing
        self.marker: cl.Event | None = None  # the cl.Event of the last record()
        self.spin: bool | None = None  # the polling policy of the stream last recorded on

    @property
    def handle(self) -> cl.Event | None:
        """The marker's ``cl.Event`` (None before the first :meth:`record`)."""
        return self.marker

    def record(self, stream: OpenCLStream) -> None:
        """Place the marker after the work submitted to ``stream`` so far."""
        if self.timing and not stream.profiling:
            stream.enable_profiling()
        try:
            with stream.lock:  # the queue may be switched to a profiling one meanwhile
                self.marker = cl.enqueue_marker(stream.handle)
        except cl.Error as exc:
            raise driver_error(exc, "recording an event") from exc
        self.spin = stream.spin
        self.submitted += 1

    def synchronize(self, blocking: bool | None = None, spin: bool | None = None) -> None:
        """Block until the recorded work has finished (at once if never recorded).

        ``spin`` defaults to the policy of the stream the event was recorded on.
        """
        Waitable.synchronize(self, blocking, self.spin if spin is None else spin)

    # ----------------------------------------------------------- hooks of sync.Waitable
    def _native_query(self) -> bool:
        """True when the marker has completed (never blocks)."""
        try:
            status = self.marker.command_execution_status
        except cl.Error as exc:
            raise driver_error(exc, "querying an event") from exc
        if status < 0:  # a failed command reports its error code as its status
            raise status_error(status, "clGetEventInfo", "querying an event")
        return status == COMPLETE

    def _native_block(self, blocking: bool) -> None:
        """``clWaitForEvents`` on the marker (GIL released)."""
        try:
            self.marker.wait()
        except cl.Error as exc:
            raise driver_error(exc, "waiting for an event") from exc

    def elapsed_ms(self, end: OpenCLEvent) -> float:
        """Milliseconds from this event to ``end``; both need ``timing=True`` and to be done."""
        if not (self.timing and end.timing):
            raise ValueError(
                "elapsed_ms needs two events created with timing=True "
                "(backend.create_event(timing=True))"
            )
        if self.marker is None or end.marker is None:
            raise ValueError("elapsed_ms needs both events recorded (event.record(stream))")
        if not (self.query() and end.query()):
            raise ValueError("elapsed_ms needs both events complete: call end.synchronize() first")
        try:
            start_ns = self.marker.get_profiling_info(cl.profiling_info.END)
            end_ns = end.marker.get_profiling_info(cl.profiling_info.END)
        except cl.Error as exc:
            raise driver_error(exc, "reading event times") from exc
        return (end_ns - start_ns) / 1e6

    def close(self) -> None:
        """Drop the marker.  Idempotent."""
        self.marker = None
        self._mark(self.submitted)

    def __repr__(self) -> str:
        state = "unrecorded" if self.marker is None else "recorded"
        return f"<OpenCLEvent {state}{', timing' if self.timing else ''}>"
