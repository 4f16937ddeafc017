"""The memory of the context's error record (:mod:`ember.diagnostics.device_errors`).

Two small buffers: the *claim word* (the first failing work-item wins it with
``atomic_cmpxchg``) and the *record*.  The host reads and clears them through a private
in-order queue, so a read never waits behind the user's work on Ember's streams (it is
done only once the launches that could have failed are complete).
"""

from __future__ import annotations

import numpy as np

from ember.backends.opencl.check import cl, driver_error
from ember.runtime.backend import ErrorMemory


class OpenCLErrorMemory(ErrorMemory):
    """Claim word and record of one context; ``claim``/``record`` are the ``cl.Buffer``
    kernel arguments."""

    def __init__(self, context: cl.Context, device: cl.Device, nbytes: int):
        flags = cl.mem_flags.READ_WRITE
        try:
            self._queue = cl.CommandQueue(context, device)
            self.claim = cl.Buffer(context, flags, 8)
            self.record = cl.Buffer(context, flags, nbytes)
        except cl.Error as exc:
            raise driver_error(exc, "creating the error record") from exc
        self._zeros = np.zeros(nbytes // 8, np.int64)
        self.clear()

    def peek(self) -> None:
        """No in-place view on OpenCL: the caller reads the record once a launch is done."""
        return None

    def read(self) -> np.ndarray:
        """The record's words (a blocking read on the private queue)."""
        out = np.empty_like(self._zeros)
        try:
            cl.enqueue_copy(self._queue, out, self.record, is_blocking=True)
        except cl.Error as exc:
            raise driver_error(exc, "reading the error record") from exc
        return out

    def clear(self) -> None:
        """Empty the record and release the claim (no failing kernel may be running)."""
        try:
            cl.enqueue_copy(self._queue, self.record, self._zeros, is_blocking=True)
            cl.enqueue_copy(self._queue, self.claim, self._zeros[:1], is_blocking=True)
        except cl.Error as exc:
            raise driver_error(exc, "clearing the error record") from exc
