"""User-facing runtime functions: backend choice, devices, streams, events, synchronize."""

from __future__ import annotations

from ember.runtime import backend as _backend
from ember.runtime.backend import Backend
from ember.runtime.backend import Event as _Event
from ember.runtime.backend import Stream as _Stream
from ember.tracebacks import hide_internal_frames


def get_backend(name: str | None = None) -> Backend:
    """The current backend (chosen by ``EMBER_BACKEND``), or the one called ``name``."""
    return _backend.get(name)


def use_backend(name: str) -> Backend:
    """Make ``name`` (``"cuda"``, ``"opencl"``...) the backend Ember uses from now on, and
    return it; in a ``with`` statement, only inside the block::

        ember.use_backend("opencl")             # from now on
        with ember.use_backend("cuda") as be:   # inside the block; then the previous one
            ...
    """
    return _backend.use(name)


def devices(backend: str | None = None) -> list:
    """The devices of the current backend (or of ``backend``), as :class:`ember.Device`
    objects (listing opens none of them)."""
    from ember.runtime.device import devices as listed

    return listed(backend)


def synchronize(blocking: bool | None = None, spin: bool | None = None) -> None:
    """Wait until all work Ember submitted to the current device has finished (the
    calling thread's device: ``ember.Device(i).synchronize()`` waits for another).

    Costs no driver call when no stream Ember created has unfinished work.

    Parameters
    ----------
    blocking : bool, optional
        After spinning, sleep in the driver instead of letting it spin (saves a CPU core
        on long waits).  Default: ``EMBER_SYNC_BLOCKING``.
    spin : bool, optional
        Query the device briefly before blocking.  Default: on, unless ``EMBER_SYNC=plain``.
    """
    try:  # costs nothing until it catches: a KernelError shows the user's frames only
        _backend.current().synchronize(blocking, spin)
    except Exception as exc:
        hide_internal_frames(exc)
        raise


async def synchronize_async() -> None:
    """Wait like :func:`synchronize` without blocking the running asyncio event loop.

    ::

        await ember.synchronize_async()     # other tasks keep running meanwhile

    Streams and events are awaitable too: ``await stream``, ``await event``.
    """
    await _backend.current().synchronize_async()


def default_stream() -> _Stream:
    """The stream Ember's operations use when none is given."""
    return _backend.get().default_stream


def Stream() -> _Stream:  # noqa: N802 - reads as a constructor
    """Create a new stream on the current backend's device."""
    return _backend.get().create_stream()


def Event(timing: bool = False) -> _Event:  # noqa: N802 - reads as a constructor
    """Create a new event on the current backend; ``timing=True`` allows ``elapsed_ms``."""
    return _backend.get().create_event(timing)
