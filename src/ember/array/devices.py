"""Devices as the Array API sees them: the ``device=`` argument of creation functions and
``astype``, and ``x.to_device``.

A device is what ``x.device`` returns (a :class:`~ember.runtime.backend.DeviceInfo`), a
backend object, a backend name (``"cuda"``, ``"opencl"``) or ``"name:index"``; ``None``
is the current backend's device.  Ember runs one device per backend today, so a device
picks a backend.  Moving an array to a device of another backend copies it through the
host (the only path between two runtimes).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from ember.runtime import backend as registry


def backend_of(device: Any):
    """The backend that holds arrays for ``device`` (see the module docstring).

    Raises
    ------
    ValueError
        For a device Ember does not know or cannot reach, naming the ones it can.
    """
    if device is None:
        return registry.current()
    if isinstance(device, registry.Backend):
        return device
    if isinstance(device, registry.DeviceInfo):
        name, index = device.backend, device.index
    elif isinstance(device, str):
        name, _, idx = device.partition(":")
        index = int(idx) if idx.isdigit() else 0
        if idx and not idx.isdigit():
            raise ValueError(f"device {device!r}: the index after ':' must be a number")
    else:
        raise TypeError(
            f"device must be x.device, a backend or a backend name ('cuda', 'opencl'), got "
            f"{type(device).__name__}"
        )
    if name not in registry.REGISTRY:
        raise ValueError(f"unknown device {device!r}; backends: {', '.join(registry.REGISTRY)}")
    be = registry.get(name)
    if be.device.index != index:
        raise ValueError(
            f"device {device!r}: Ember uses device {be.device.index} of the {name} backend "
            f"({be.device.name}); select another with CUDA_VISIBLE_DEVICES / "
            "EMBER_OPENCL_DEVICE"
        )
    return be


def to_device(x, device, stream=None):
    """``x`` on ``device``: ``x`` itself when it is already there, else a copy through
    the host (asynchronous on the target's ``stream`` when given)."""
    from ember.array.creation import asarray

    be = backend_of(device)
    if be is x.backend:
        return x
    host = x.to_numpy()
    with on_backend(be):
        return asarray(host, stream=stream)


_lock = threading.Lock()


@contextlib.contextmanager
def on_backend(be):
    """Make ``be`` the current backend for a block (uploads of host data allocate there).
    Used for host -> other-backend copies only; serialized, as it swaps a global."""
    with _lock:
        previous = registry._current
        registry._current = be.name
        try:
            yield
        finally:
            registry._current = previous
