"""The memory of the context's error record (:mod:`ember.diagnostics.device_errors`).

* The *claim word*: 4 bytes of device memory.  The first failing thread wins it with
  ``atomicCAS``; atomics on device memory work on every GPU, whereas atomics on mapped host
  memory need PCIe atomics that not every host has.
* The *record*: mapped pinned host memory (``cuMemHostAlloc`` with ``DEVICEMAP``).  The winner
  writes it with plain stores, a system fence, then the "complete" word; the host reads it
  in place, with no copy and no driver call.

Clearing resets the claim on a private stream (``cuMemsetD32Async`` + its synchronize):
the legacy NULL stream would not be ordered with Ember's non-blocking streams.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ember.backends.cuda.driver import check, cu
from ember.backends.cuda.memory import PinnedHostMemory
from ember.runtime.backend import ErrorMemory

if TYPE_CHECKING:
    from ember.backends.cuda.device import PrimaryContext


class CudaErrorMemory(ErrorMemory):
    """Claim word and record of one context.  ``claim`` and ``record`` are the kernel
    argument values (device addresses)."""

    def __init__(self, context: PrimaryContext, nbytes: int):
        context.ensure_current()
        self._context = context
        self._host = PinnedHostMemory(nbytes, context, device_map=True)
        self.words = self._host.array.view(np.int64)
        self.words[:] = 0
        self.record = self._host.device_ptr
        self._claim = check(cu.cuMemAlloc(4), "cuMemAlloc", "allocating the error claim word")
        self.claim = int(self._claim)
        self._stream = check(
            cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate"
        )
        self._reset_claim()

    def peek(self) -> int:
        """The record's state word (2: complete), read in place."""
        return int(self.words[0])

    def read(self) -> np.ndarray:
        """A copy of the record's words."""
        return self.words.copy()

    def clear(self) -> None:
        """Empty the record and release the claim (no failing kernel may be running)."""
        self.words[:] = 0
        self._reset_claim()

    def _reset_claim(self) -> None:
        self._context.ensure_current()
        check(cu.cuMemsetD32Async(self._claim, 0, 1, self._stream), "cuMemsetD32Async")
        check(cu.cuStreamSynchronize(self._stream), "cuStreamSynchronize")
