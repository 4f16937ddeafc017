"""User-facing runtime functions: backend choice, devices, streams, events, synchronize."""

from __future__ import annotations

from ember.runtime import backend as _backend
from ember.runtime.backend import Backend, DeviceInfo
from ember.runtime.backend import Event as _Event
from ember.runtime.backend import Stream as _Stream


def get_backend(name: str | None = None) -> Backend:
    """The current backend (chosen by ``EMBER_BACKEND``), or the one called ``name``."""
    return _backend.get(name)


def use_backend(name: str) -> Backend:
    """Make ``name`` (``"cuda"`` or ``"opencl"``) the backend Ember uses from now on."""
    return _backend.use(name)


def devices(backend: str | None = None) -> list[DeviceInfo]:
    """The devices of the current backend (or of ``backend``)."""
    return _backend.get(backend).devices()


def synchronize() -> None:
    """Wait until all work Ember submitted to the current device has finished."""
    _backend.get().synchronize()


def default_stream() -> _Stream:
    """The stream Ember's operations use when none is given."""
    return _backend.get().default_stream


def Stream() -> _Stream:  # noqa: N802 - reads as a constructor
    """Create a new stream on the current backend's device."""
    return _backend.get().create_stream()


def Event(timing: bool = False) -> _Event:  # noqa: N802 - reads as a constructor
    """Create a new event on the current backend; ``timing=True`` allows ``elapsed_ms``."""
    return _backend.get().create_event(timing)
