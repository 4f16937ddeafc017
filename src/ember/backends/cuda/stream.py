"""CUDA streams.

Every stream Ember creates is non-blocking (``CU_STREAM_NON_BLOCKING``): it never waits
for the legacy NULL stream, which other libraries may keep busy.  Ember's default stream
is one such stream that the backend creates, not the NULL stream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ember.backends.cuda.driver import NOT_READY, check, cu, error
from ember.runtime.backend import Stream

if TYPE_CHECKING:
    from ember.backends.cuda.device import PrimaryContext


class CudaStream(Stream):
    """A non-blocking CUDA stream.

    Parameters
    ----------
    context : PrimaryContext
        The context the stream belongs to.
    priority : int
        Stream priority (lower numbers run first; 0 is the default priority).
    """

    def __init__(self, context: PrimaryContext, priority: int = 0):
        context.ensure_current()
        self._context = context
        self._handle = check(
            cu.cuStreamCreateWithPriority(cu.CUstream_flags.CU_STREAM_NON_BLOCKING, priority),
            "cuStreamCreateWithPriority",
            "creating a stream",
        )

    @property
    def handle(self) -> cu.CUstream:
        """The ``CUstream``."""
        if self._handle is None:
            raise ValueError("this stream was closed; create a new one")
        return self._handle

    @property
    def alive(self) -> bool:
        """False once the stream (or its context) was closed."""
        return self._handle is not None and self._context.alive

    def synchronize(self) -> None:
        """Block until all work submitted to this stream has finished (``cuStreamSynchronize``)."""
        err = cu.cuStreamSynchronize(self.handle)[0]
        if err:
            raise error(err, "cuStreamSynchronize", "waiting for a stream")

    def query(self) -> bool:
        """True when all submitted work has finished (``cuStreamQuery``; never blocks)."""
        err = cu.cuStreamQuery(self.handle)[0]
        if not err:
            return True
        if err == NOT_READY:
            return False
        raise error(err, "cuStreamQuery", "querying a stream")

    def wait_event(self, event) -> None:
        """Make later work on this stream wait until ``event`` has completed (no host wait)."""
        check(cu.cuStreamWaitEvent(self.handle, event.handle, 0), "cuStreamWaitEvent")

    def close(self) -> None:
        """Destroy the stream once its queued work has finished.  Idempotent."""
        handle, self._handle = self._handle, None
        if handle is not None and self._context.alive:
            check(cu.cuStreamDestroy(handle), "cuStreamDestroy")

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = f"0x{int(self._handle):x}" if self._handle is not None else "closed"
        return f"<CudaStream {state}>"
