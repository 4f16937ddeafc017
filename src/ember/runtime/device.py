"""``ember.Device``: one device of one backend, and the calling thread's current device.

A :class:`Device` names a device - a backend and an index in that backend's numbering
(:meth:`~ember.runtime.backend.Backend.devices`) - without opening it: listing devices
(:func:`devices`) creates no context.  The first use of a device opens it (the registry
keeps one backend instance per device: its own streams, allocator pool and loaded
modules), and from then on arrays made there remember it (``x.device``)::

    for d in ember.devices():             # the current backend's devices
        print(d, d.name, d.total_memory)

    with ember.Device(1):                 # this thread's current device, for the block
        x = ember.zeros(10**6)            # on device 1; its kernels run there
    y = x.to_device(ember.Device(0))      # a copy (peer to peer where the driver can)

    ember.Device("opencl", 1).use()       # from now on, in this thread

Devices are interned (``ember.Device(1) is ember.Device(1)``), compare equal to the
:class:`~ember.runtime.backend.DeviceInfo` that describes them, pickle as their name (an
unpickled device is the same index in the loading process), and answer the attributes of
their ``DeviceInfo`` (``name``, ``kind``, ``is_gpu``, ``total_memory``, ``features``...).
"""

from __future__ import annotations

import threading
from typing import Any

from ember.runtime import registry
from ember.runtime.backend import Backend, DeviceInfo
from ember.tracebacks import hide_internal_frames

_interned: dict[tuple[str, int], Device] = {}
_infos: dict[str, list[DeviceInfo]] = {}  # backend name -> its devices, listed once
_lock = threading.Lock()
_blocks = threading.local()  # .stack: the choices to restore at the end of `with` blocks


class Device:
    """A device: ``Device(i)`` (of the current backend), ``Device("cuda", i)``,
    ``Device("cuda:1")``, ``Device("cuda")`` (that backend's default device), or any of
    ``x.device``, a :class:`DeviceInfo` or a backend instance.

    Raises
    ------
    ValueError
        For a backend Ember does not know, or an index the backend does not have (the
        message lists its devices).
    """

    __slots__ = ("backend", "index", "__weakref__")
    backend: str  # the backend's registry name: "cuda", "opencl"...
    index: int

    def __new__(cls, *spec: Any) -> Device:
        if len(spec) == 1 and type(spec[0]) is Device:
            return spec[0]
        key = _parse(spec)
        return _interned.get(key) or _intern(key)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ember.Device objects are immutable")

    # ------------------------------------------------------------------ what it is
    @property
    def info(self) -> DeviceInfo:
        """What Ember knows about the device (no context is created to tell)."""
        opened = registry._by_device.get((self.backend, self.index))
        if opened is not None:
            return opened.device
        return next(info for info in _listing(self.backend) if info.index == self.index)

    def get_backend(self) -> Backend:
        """The backend instance running this device (opened on first use: a driver
        context, streams, an allocator pool)."""
        return registry.device(self.backend, self.index)

    @property
    def is_open(self) -> bool:
        """Whether the device was opened in this process (it holds a context)."""
        return (self.backend, self.index) in registry._by_device

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return getattr(self.info, name)
        except AttributeError:
            raise AttributeError(f"ember.Device has no attribute {name!r}") from None

    # ------------------------------------------------------------------ current device
    def use(self) -> Device:
        """Make this the calling thread's current device (until another ``use()``, or
        ``ember.use_backend``); returns the device."""
        registry.choose(self.get_backend())
        return self

    def __enter__(self) -> Device:
        stack = _blocks.__dict__.setdefault("stack", [])
        stack.append(registry.choose(self.get_backend()))
        return self

    def __exit__(self, *exc) -> None:
        registry._tls.backend = _blocks.stack.pop()

    def synchronize(self) -> None:
        """Wait for the work Ember submitted to this device (nothing when it was never
        opened)."""
        be = registry._by_device.get((self.backend, self.index))
        if be is None:
            return
        try:
            be.synchronize()
        except Exception as exc:
            hide_internal_frames(exc)
            raise

    # ------------------------------------------------------------------ value semantics
    def __eq__(self, other: object) -> bool:
        if isinstance(other, Device):
            return other is self
        if isinstance(other, DeviceInfo):
            return (other.backend, other.index) == (self.backend, self.index)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.backend, self.index))

    def __reduce__(self):
        return Device, (self.backend, self.index)

    def __repr__(self) -> str:
        return f"ember.Device({self.backend!r}, {self.index})"

    def __str__(self) -> str:
        return f"{self.backend}:{self.index}"


def devices(backend: str | None = None) -> list[Device]:
    """The devices of the current backend (or of ``backend``), by index; none is opened."""
    name = backend or registry.current().name
    return [Device(name, info.index) for info in _listing(name)]


def of(backend: Backend) -> Device:
    """The :class:`Device` a backend instance runs."""
    key = (backend.name, backend.device.index)
    return _interned.get(key) or _intern(key)


def _intern(key: tuple[str, int]) -> Device:
    with _lock:
        found = _interned.get(key)
        if found is None:
            found = object.__new__(Device)
            object.__setattr__(found, "backend", key[0])
            object.__setattr__(found, "index", key[1])
            _interned[key] = found
        return found


def current() -> Device:
    """The calling thread's current device."""
    return of(registry.current())


def _listing(name: str) -> list[DeviceInfo]:
    found = _infos.get(name)
    if found is None:
        found = _infos[name] = sorted(registry.get(name).devices(), key=lambda d: d.index)
    return found


def _parse(spec: tuple) -> tuple[str, int]:
    """``(backend name, index)`` of a device spelled as :class:`Device` accepts."""
    if len(spec) == 1:
        (what,) = spec
        if isinstance(what, Device):
            return what.backend, what.index
        if isinstance(what, DeviceInfo):
            return what.backend, what.index
        if isinstance(what, Backend):
            return what.name, what.device.index
        if isinstance(what, str):
            name, _, idx = what.partition(":")
            return _checked(name, _index(idx, what) if idx else None, what)
        return _checked(registry.current().name, _index(what, what), what)
    if len(spec) == 2:
        name, index = spec
        if not isinstance(name, str):
            raise TypeError(f"ember.Device(backend, index): backend must be a name, got {name!r}")
        return _checked(name, _index(index, spec), spec)
    raise TypeError(
        f"ember.Device takes an index, a backend name and an index, or a name; got {spec!r}"
    )


def _index(value: Any, spelled: Any) -> int:
    if isinstance(value, str):
        if not value.isdigit():
            raise ValueError(f"device {spelled!r}: the index must be a number, got {value!r}")
        return int(value)
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(
            f"a device is an index, 'backend:index', ember.Device, x.device or a backend; "
            f"got {type(value).__name__} {value!r}"
        )
    return int(value.__index__())


def _checked(name: str, index: int | None, spelled: Any) -> tuple[str, int]:
    if name not in registry.REGISTRY:
        raise ValueError(f"unknown device {spelled!r}; backends: {', '.join(registry.REGISTRY)}")
    if index is None:
        return name, registry.get(name).device.index
    listing = _listing(name)
    if not any(info.index == index for info in listing):
        shown = "\n".join(f"  {info.summary()}" for info in listing) or "  (none)"
        raise ValueError(
            f"device {spelled!r}: the {name} backend has no device {index}; its devices:\n{shown}"
        )
    return name, index
