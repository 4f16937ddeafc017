"""The front door for device allocations.

Every Ember allocation (arrays, kernel scratch) goes through :func:`allocate`, so that the
caching allocator has exactly one place to sit.
"""

from __future__ import annotations

from ember.runtime.backend import Backend, Buffer, Stream


def allocate(backend: Backend, nbytes: int, stream: Stream | None = None) -> Buffer:
    """Allocate ``nbytes`` on ``backend``'s device.

    Zero-byte requests get a one-byte buffer, so every array owns a real buffer (drivers
    reject zero-size allocations).
    """
    if nbytes < 0:
        raise ValueError(f"cannot allocate a negative number of bytes ({nbytes})")
    return backend.alloc(max(int(nbytes), 1), stream)
