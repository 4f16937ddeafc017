"""OpenCL command queues as Ember streams.

Every stream is an in-order ``cl.CommandQueue`` with profiling enabled: on PoCL profiling
costs nothing measurable (a launch enqueues in 2.4 µs with it, 3.5 µs without; noise), and
it lets any pair of events report :meth:`OpenCLEvent.elapsed_ms`.  Separate queues run
independently, as CUDA's non-blocking streams do; the default stream is one such queue.

:meth:`OpenCLStream.query` costs one attribute read when the stream is idle: the backend
keeps the ``cl.Event`` of the last command it enqueued on a stream in ``stream.last``
(launches, copies, fills, markers, waits).  In an in-order queue, that event completing
means everything before it completed.  Work that other code enqueues directly on
``stream.handle`` is not seen by :meth:`~OpenCLStream.query`; :meth:`synchronize` waits
for it too (``clFinish``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ember.backends.opencl.check import cl, driver_error, status_error
from ember.runtime.backend import Stream

if TYPE_CHECKING:
    from ember.backends.opencl.event import OpenCLEvent

COMPLETE = int(cl.command_execution_status.COMPLETE)


class OpenCLStream(Stream):
    """An in-order, profiling-enabled OpenCL command queue.

    Parameters
    ----------
    context : pyopencl.Context
        The backend's context.
    device : pyopencl.Device
        The device the queue submits to.
    """

    def __init__(self, context: cl.Context, device: cl.Device):
        try:
            self.queue = cl.CommandQueue(
                context, device, properties=cl.command_queue_properties.PROFILING_ENABLE
            )
        except cl.Error as exc:
            raise driver_error(exc, "creating a command queue") from exc
        self.last: cl.Event | None = None  # the last command Ember enqueued here

    @property
    def handle(self) -> cl.CommandQueue:
        """The ``cl.CommandQueue``."""
        if self.queue is None:
            raise ValueError("this stream was closed; create a new one")
        return self.queue

    @property
    def alive(self) -> bool:
        """False once the stream was closed."""
        return self.queue is not None

    def synchronize(self) -> None:
        """Block until all work submitted to this queue has finished (``clFinish``)."""
        try:
            self.handle.finish()
        except cl.Error as exc:
            raise driver_error(exc, "waiting for a stream") from exc
        self.last = None

    def query(self) -> bool:
        """True when all work Ember submitted here has finished (never blocks)."""
        last = self.last
        if last is None:
            return True
        try:
            status = last.command_execution_status
        except cl.Error as exc:
            raise driver_error(exc, "querying a stream") from exc
        if status == COMPLETE:
            self.last = None
            return True
        if status < 0:  # the command failed: its (negative) status is the error code
            raise status_error(status, "clGetEventInfo", "querying a stream")
        return False

    def wait_event(self, event: OpenCLEvent) -> None:
        """Make later work on this stream wait for ``event`` (no host wait)."""
        marker = event.marker
        if marker is None:
            return  # never recorded: nothing to wait for, as with CUDA
        try:
            self.last = cl.enqueue_barrier(self.handle, wait_for=[marker])
        except cl.Error as exc:
            raise driver_error(exc, "making a stream wait for an event") from exc

    def close(self) -> None:
        """Finish the queued work and release the queue.  Idempotent."""
        queue, self.queue = self.queue, None
        self.last = None
        if queue is not None:  # dropping the last reference releases the queue
            try:
                queue.finish()
            except cl.Error as exc:
                raise driver_error(exc, "closing a stream") from exc

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"<OpenCLStream {'closed' if self.queue is None else 'open'}>"
