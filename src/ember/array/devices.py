"""Devices as arrays see them: the ``device=`` argument of creation functions and
``astype``, ``x.device`` and ``x.to_device``.

A device is an :class:`ember.Device` (what ``x.device`` returns), a
:class:`~ember.runtime.backend.DeviceInfo`, a backend instance, an index of the current
backend's devices, a backend name (``"cuda"``: its default device) or ``"name:index"``;
``None`` is the calling thread's current device.  Each device has its own backend
instance (:mod:`ember.runtime.device`), so "the array's device" is ``x.backend``.

Moving an array to another device copies it device to device where the backend can
(:meth:`~ember.runtime.backend.Backend.copy_peer`: CUDA peer copies), else through the
host (the only path between two runtimes, or between OpenCL contexts).
"""

from __future__ import annotations

from typing import Any

from ember.errors import BackendUnavailableError
from ember.runtime import backend as registry


def backend_of(device: Any):
    """The backend instance that holds arrays for ``device`` (see the module docstring).

    Raises
    ------
    ValueError
        For a device Ember does not know or cannot reach, naming the ones it can.
    TypeError
        For something that is not a device.
    """
    if device is None:
        return registry.current()
    if isinstance(device, registry.Backend):
        return device
    from ember.runtime.device import Device

    try:
        return Device(device).get_backend()
    except TypeError:
        raise TypeError(
            "device must be x.device, an ember.Device, an index, a backend name ('cuda', "
            f"'opencl') or 'name:index', got {type(device).__name__}"
        ) from None
    except BackendUnavailableError as exc:
        raise ValueError(f"device {device!r} cannot be used: {exc}") from exc


def device_of(backend):
    """The :class:`ember.Device` a backend instance runs (``x.device``)."""
    from ember.runtime.device import of

    return of(backend)


def where(backend) -> str:
    """``"name:index"`` of a backend instance's device, for messages."""
    return f"{backend.name}:{backend.device.index}"


def to_device(x, device, stream=None):
    """``x`` on ``device``: ``x`` itself when it is already there, else a copy - device to
    device when both are devices of one backend class and its driver can
    (:meth:`Backend.copy_peer`), else through the host.  With ``stream`` (of the target
    device) the copy is asynchronous there."""
    be = backend_of(device)
    if be is x.backend:
        return x
    if type(be) is type(x.backend) and x.size:
        out = _peer_copy(x, be, stream)
        if out is not None:
            return out
    from ember.array.creation import asarray

    return asarray(x.to_numpy(), device=be, stream=stream)


def _peer_copy(x, be, stream):
    """``x`` copied to ``be`` device to device, or None where the driver cannot."""
    from ember.array import launch

    src = x if x.is_c_contiguous else x.copy()
    out = launch.new(be, x.shape, x.dtype)
    # (the backend orders the copy after the source's work, and the source's later work
    # after the copy: src's memory is reused only once the copy has read it)
    if not be.copy_peer(out.buffer, 0, src.backend, src.buffer, src.offset, src.nbytes, stream):
        return None
    return out
