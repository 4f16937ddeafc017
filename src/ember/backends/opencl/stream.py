"""OpenCL command queues as Ember streams.

Every stream is an in-order ``cl.CommandQueue``.  Separate queues run independently, as
CUDA's non-blocking streams do; the default stream is one such queue.

Profiling (needed by :meth:`OpenCLEvent.elapsed_ms`) is on from the start on CPU devices,
where it is free (PoCL: launch 2.4 µs with it, 3.5 µs without; noise), and switched on the
first time a timing event is recorded on a stream elsewhere, because on NVIDIA's OpenCL it
doubles the cost of every command (H200: launch 4.9 → 10.4 µs, launch + wait 10.4 → 16.5
µs, marker 1.6 → 6.8 µs).  OpenCL cannot change a queue's properties, so the switch
(:meth:`OpenCLStream.enable_profiling`) moves the stream to a new, profiling queue whose
first command waits for the old queue's last one: order is kept, ``handle`` changes.

Waiting follows :mod:`ember.runtime.sync`: each piece of work Ember enqueues (launch, copy,
fill) adds one to :attr:`~ember.runtime.sync.Waitable.submitted` and leaves its
``cl.Event`` in :attr:`OpenCLStream.last`.  Synchronizing a stream known to be idle is an
integer comparison; otherwise Ember polls ``last`` (in an in-order queue, the last command
completing means all before it did), then blocks in ``clFinish`` without the GIL.  On a CPU
device (PoCL) the polling phase is skipped: the spinning thread takes a core from the
device's own worker threads, and launch + synchronize took 84 µs with it, 39-58 µs
without, on a 2-core machine.  Code that enqueues on :attr:`~OpenCLStream.handle` directly
must add 1 to ``submitted`` and set ``last``, or :meth:`synchronize` may return early.

Threads: commands are enqueued, and ``last``/``submitted`` updated, under the stream's
:attr:`~OpenCLStream.lock`.  Without it two threads could leave ``last`` pointing at the
earlier of their two commands, and a query would report the stream idle while the later
one still runs.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ember.backends.opencl.check import cl, driver_error, status_error
from ember.errors import ClosedError
from ember.runtime.backend import Stream
from ember.runtime.sync import Waitable

if TYPE_CHECKING:
    from ember.backends.opencl.event import OpenCLEvent

COMPLETE = int(cl.command_execution_status.COMPLETE)


class OpenCLStream(Waitable, Stream):
    """An in-order OpenCL command queue.

    Parameters
    ----------
    context : pyopencl.Context
        The backend's context.
    device : pyopencl.Device
        The device the queue submits to.
    spin : bool, optional
        Whether waits poll before blocking; default: the ``EMBER_SYNC`` policy on GPUs,
        no polling on CPU devices (see the module docstring).
    profiling : bool, optional
        Start with a profiling queue; default: on CPU devices only.
    """

    def __init__(
        self,
        context: cl.Context,
        device: cl.Device,
        spin: bool | None = None,
        profiling: bool | None = None,
    ):
        cpu = bool(int(device.type) & int(cl.device_type.CPU))
        self.context, self.device = context, device
        self.profiling = cpu if profiling is None else profiling
        self.queue = _new_queue(context, device, self.profiling)
        self.last: cl.Event | None = None  # the last command Ember enqueued here
        self.lock = threading.Lock()  # held while enqueueing and booking a command
        self.submitted = self.completed = 0
        self.spin = spin if spin is not None else (False if cpu else None)

    @property
    def handle(self) -> cl.CommandQueue:
        """The ``cl.CommandQueue``."""
        if self.queue is None:
            raise ClosedError("this stream was closed; create a new one")
        return self.queue

    @property
    def alive(self) -> bool:
        """False once the stream was closed."""
        return self.queue is not None

    def enable_profiling(self) -> None:
        """Move to a profiling queue (once), keeping the order of the work.

        The new queue's first command is a barrier on the old queue's last command; the
        old queue is flushed and released when its work is done.
        """
        with self.lock:
            if self.profiling:
                return
            old = self.handle
            new = _new_queue(self.context, self.device, True)
            try:
                if self.last is not None:
                    cl.enqueue_barrier(new, wait_for=[self.last])
                old.flush()
            except cl.Error as exc:
                raise driver_error(exc, "switching a stream to a profiling queue") from exc
            self.queue, self.profiling = new, True

    def synchronize(self, blocking: bool | None = None, spin: bool | None = None) -> None:
        """Wait until all work Ember submitted here has finished (see the module docstring).

        ``blocking`` and ``spin`` are those of :meth:`ember.runtime.sync.Waitable.synchronize`;
        ``spin`` defaults to this stream's policy.
        """
        Waitable.synchronize(self, blocking, self.spin if spin is None else spin)

    # ----------------------------------------------------------- hooks of sync.Waitable
    def _native_query(self) -> bool:
        """True when the last command Ember enqueued here has finished (never blocks)."""
        last = self.last
        if last is None:
            return True
        try:
            status = last.command_execution_status
        except cl.Error as exc:
            raise driver_error(exc, "querying a stream") from exc
        if status < 0:  # the command failed: its (negative) status is the error code
            raise status_error(status, "clGetEventInfo", "querying a stream")
        return status == COMPLETE

    def _native_block(self, blocking: bool) -> None:
        """``clFinish`` (GIL released); OpenCL has no spin-or-sleep choice to make."""
        try:
            self.handle.finish()
        except cl.Error as exc:
            raise driver_error(exc, "waiting for a stream") from exc

    def _async_marker(self) -> OpenCLEvent:
        """An event recorded now, for an ``await`` to wait on in a waiter thread."""
        from ember.backends.opencl.event import OpenCLEvent

        marker = OpenCLEvent()
        marker.record(self)  # a waiter thread blocks on it: no polling to tune
        return marker

    # ----------------------------------------------------------- the rest of the contract
    def wait_event(self, event: OpenCLEvent) -> None:
        """Make later work on this stream wait for ``event`` (no host wait)."""
        marker = event.marker
        if marker is None:
            return  # never recorded: nothing to wait for, as with CUDA
        try:
            with self.lock:
                cl.enqueue_barrier(self.handle, wait_for=[marker])
        except cl.Error as exc:
            raise driver_error(exc, "making a stream wait for an event") from exc

    def close(self) -> None:
        """Finish the queued work and release the queue.  Idempotent."""
        queue, self.queue = self.queue, None
        self.last = None
        self._mark(self.submitted)
        if queue is not None:  # dropping the last reference releases the queue
            try:
                queue.finish()
            except cl.Error as exc:
                raise driver_error(exc, "closing a stream") from exc

    def __repr__(self) -> str:
        return f"<OpenCLStream {'closed' if self.queue is None else 'open'}>"


def _new_queue(context: cl.Context, device: cl.Device, profiling: bool) -> cl.CommandQueue:
    props = cl.command_queue_properties.PROFILING_ENABLE if profiling else 0
    try:
        return cl.CommandQueue(context, device, properties=props)
    except cl.Error as exc:
        raise driver_error(exc, "creating a command queue") from exc
