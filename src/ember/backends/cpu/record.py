"""The memory of the error record (:mod:`ember.diagnostics.device_errors`) on the CPU backend.

Plain host memory: the kernels write it with atomics (the claim) and stores, the host reads
it in place - :meth:`CPUErrorMemory.peek` costs one NumPy read, no copy.
"""

from __future__ import annotations

import numpy as np


class CPUErrorMemory:
    """Claim word and record; ``claim``/``record`` are the addresses kernels receive."""

    def __init__(self, nbytes: int):
        self._claim = np.zeros(2, np.uint32)
        self._record = np.zeros(max(nbytes // 8, 1), np.int64)
        self.claim = self._claim.ctypes.data
        self.record = self._record.ctypes.data

    def peek(self) -> int:
        """The record's first word, read in place."""
        return int(self._record[0])

    def read(self) -> np.ndarray:
        """A copy of the record's words."""
        return self._record.copy()

    def clear(self) -> None:
        """Empty the record and release the claim (no failing kernel may be running)."""
        self._record[:] = 0
        self._claim[:] = 0
