"""The backend registry and backend selection.

An explicit dict, imported lazily: ``import ember`` reads it (the background warmup asks the
backends' light packages whether to start), and nothing here imports a backend or the
contract until a backend is used.  :mod:`ember.runtime.backend` holds the contract and
re-exports these functions.

Selection: ``EMBER_BACKEND=auto|<name>`` or :func:`use`.  ``auto`` tries :data:`AUTO_ORDER`
(CUDA when a CUDA device answers, else an OpenCL GPU, else the native cpu backend, else an
OpenCL CPU device such as PoCL) and raises :class:`BackendUnavailableError` naming the extra
to install when none works.

Devices: a backend instance runs one device.  The first one of each backend (its
*default device*: ``EMBER_DEVICE``, else the backend's own choice) is what :func:`get`
returns; :func:`device` opens the others, one instance each, on first use.  Each thread may
choose its device (:func:`choose`, behind ``with ember.Device(1):``); :func:`current` is
that choice, else the process's selection.

State is private: other modules use :func:`instance`, :func:`disable` and :func:`on_create`
(the warmup), :func:`use` and ``ember.use_backend`` (tests, users) - never the globals.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from ember.errors import BackendUnavailableError, InternalError

if TYPE_CHECKING:
    from ember.runtime.backend import Backend

# Explicit and lazy: name -> (package, class, what to install).  The one line a new backend
# adds.  The package must import cheaply (it holds the start-up hooks the warmup reads:
# ember/backends/cuda/__init__.py); the class is imported on first use.  The dict's order is
# the order ``EMBER_BACKEND=auto`` tries.
REGISTRY: dict[str, tuple[str, str, str]] = {
    "cuda": ("ember.backends.cuda", "CudaBackend",
             "pip install 'ember[cuda]' (CUDA 13 driver) or 'ember[cuda12]' (CUDA 12 driver)"),
    "opencl": ("ember.backends.opencl", "OpenCLBackend",
               "pip install 'ember[opencl]' (pyopencl + the PoCL CPU device)"),
    "cpu": ("ember.backends.cpu", "CPUBackend",
            "pip install 'ember[cpu]' (the ziglang wheel: zig's C compiler)"),
}  # fmt: skip
AUTO_ORDER = tuple(REGISTRY)
# Backends ``auto`` takes in their place only for a GPU (Backend.has_devices("GPU")); their
# CPU devices come after every other backend: OpenCL GPUs before the native cpu backend,
# PoCL's CPU device after it.
GPU_FIRST = ("opencl",)
INSTALL_HINT = {name: entry[2] for name, entry in REGISTRY.items()}

_lock = threading.RLock()
_instances: dict[str, Backend] = {}
_failures: dict[str, str] = {}
_current: str | None = None
_hooks: list[Callable[[str | None], None]] = []
# every opened device: (name, index) -> its instance (the default devices included)
_by_device: dict[tuple[str, int], Backend] = {}
# each thread's device choice (ember.Device), read only once some thread made one
_tls = threading.local()
_threads_choose = False
# ``with ember.use_backend(name):`` - the selection to restore, per open block, and what
# the last use() replaced (so the block restores what was current before that call)
_generation = 0
_undo: tuple | None = None  # (backend, previous name, generation)
_restore: list[str | None] = []


def validate(cls: type) -> type:
    """Refuse a backend class that does not implement the contract, naming what is missing."""
    from ember.codegen.dialects import Dialect
    from ember.runtime.backend import Backend

    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise InternalError(f"{cls!r} is not a subclass of ember.runtime.backend.Backend")
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    missing += [a for a in ("name", "dialect", "binary_kind") if not hasattr(cls, a)]
    if hasattr(cls, "dialect") and not isinstance(cls.dialect, Dialect):
        missing.append("dialect (an ember.codegen.dialects.Dialect, not a name)")
    if missing:
        raise InternalError(
            f"backend class {cls.__module__}.{cls.__qualname__} does not implement the backend "
            f"contract: missing {', '.join(missing)} (see ember/runtime/backend.py)"
        )
    return cls


def _entry(name: str) -> tuple:
    if name not in REGISTRY:
        raise BackendUnavailableError(
            f"unknown backend {name!r}; known backends: {', '.join(REGISTRY)}"
        )
    return REGISTRY[name]


def package(name: str) -> ModuleType:
    """The (light) package of backend ``name``: its start-up hooks, no driver imported."""
    return importlib.import_module(_entry(name)[0])


def backend_class(name: str) -> type[Backend]:
    """Import and validate the class registered as ``name``."""
    module_name, class_name = _entry(name)[:2]
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except ImportError as exc:
        entry = REGISTRY[name]
        hint = entry[2] if len(entry) > 2 else INSTALL_HINT.get(name, "the backend's extra")
        raise BackendUnavailableError(
            f"the {name} backend cannot be imported ({exc}); install it with: {hint}"
        ) from exc
    return validate(cls)


def toolchain(dialect_name: str) -> type[Backend] | None:
    """The first importable backend class whose dialect is ``dialect_name`` (its class
    methods compile and inspect code without a device), or None."""
    for name in REGISTRY:
        try:
            cls = backend_class(name)
        except BackendUnavailableError:
            continue
        if cls.dialect == dialect_name:
            return cls
    return None


def on_create(hook: Callable[[str | None], None]) -> None:
    """Call ``hook(name)`` before the registry creates backend ``name`` (``None``: before
    it selects one), outside its lock - the background warmup joins there."""
    if hook not in _hooks:
        _hooks.append(hook)


def _before_create(name: str | None) -> None:
    if not _lock._is_owned():  # type: ignore[attr-defined]  # the hook may need the lock
        for hook in tuple(_hooks):
            hook(name)


def instance(name: str) -> Backend | None:
    """Backend ``name`` if it was created already, else None (creates nothing)."""
    return _instances.get(name)


def disable(name: str, reason: str, *, select: bool = False) -> None:
    """Forget backend ``name``: every later use raises :class:`BackendUnavailableError`
    with ``reason`` (after ``os.fork()``, for a driver the parent initialized).
    ``select=True`` also makes it the current choice when none was made yet, so that
    ``auto`` raises ``reason`` instead of falling back to another backend."""
    global _current
    with _lock:
        _instances.pop(name, None)
        for key in [k for k in _by_device if k[0] == name]:
            del _by_device[key]
        if getattr(_tls.__dict__.get("backend"), "name", None) == name:
            _tls.backend = None
        _failures[name] = reason
        if select and _current is None:
            _current = name


def repair_after_fork() -> None:
    """In a child of ``os.fork()``: a fresh lock, in case a thread of the parent (which does
    not exist here) held it at the moment of the fork."""
    global _lock
    _lock = threading.RLock()


def _instantiate(name: str) -> Backend:
    if name not in _instances:
        _before_create(name)
    with _lock:
        if name in _instances:
            return _instances[name]
        if name in _failures:
            raise BackendUnavailableError(_failures[name])
        try:
            cls = backend_class(name)
            index = _default_index()
            inst = cls() if index is None else cls.open_device(index)
        except BackendUnavailableError as exc:
            _failures[name] = str(exc)
            raise
        _instances[name] = inst
        _by_device[_key(inst)] = inst
        return inst


def _default_index() -> int | None:
    from ember.config import settings

    return settings.device


def device(name: str, index: int) -> Backend:
    """Backend ``name``'s instance on its device ``index`` (numbered as its
    :meth:`~ember.runtime.backend.Backend.devices`), opened on first use.

    Raises :class:`BackendUnavailableError` when the backend does not work here or has no
    such device (the message lists the devices).
    """
    inst = _by_device.get((name, index))
    if inst is not None:
        return inst
    _instantiate(name)  # the backend works here, and its default device is known
    with _lock:
        inst = _by_device.get((name, index))
        if inst is None:
            inst = backend_class(name).open_device(index)
            _by_device[(name, index)] = inst
        return inst


def opened(name: str | None = None) -> list[Backend]:
    """The instances opened so far (of backend ``name``), by backend and device index."""
    found = sorted(_by_device.items(), key=lambda item: item[0])
    return [be for (n, _), be in found if name in (None, n)]


def choose(backend: Backend | None) -> Backend | None:
    """Make ``backend`` (an opened device) the calling thread's current one - ``None``:
    the process's selection again - and return the thread's previous choice."""
    global _threads_choose
    if backend is not None:
        _check_opened(backend)
        _threads_choose = True
    previous = _tls.__dict__.get("backend")
    _tls.backend = backend
    return previous


def chosen() -> Backend | None:
    """The calling thread's own device choice, or None."""
    return _tls.__dict__.get("backend")


def _key(backend: Backend) -> tuple[str, int]:
    """(name, device index) of an instance (a test fake may have no device: index 0)."""
    return backend.name, getattr(backend.device, "index", 0)


def _check_opened(backend: Backend) -> None:
    name, index = _key(backend)
    if _by_device.get((name, index)) is not backend:
        raise BackendUnavailableError(
            f"{backend!r} is not the registry's {name} backend (for its device {index}); "
            f"only those can be made current: ember.use_backend({name!r}), "
            f"ember.Device({name!r}, {index})"
        )


def get(name: str | None = None) -> Backend:
    """Return the backend ``name``, or the current one (chosen by ``EMBER_BACKEND``).

    Raises :class:`BackendUnavailableError` saying why and what to install.
    """
    if name is not None:
        return _instantiate(name)
    return current()


def current() -> Backend:
    """The current backend: the calling thread's device choice, else the process's
    selection (the hot-path spelling of ``get()``)."""
    if _threads_choose:
        mine = _tls.__dict__.get("backend")
        if mine is not None:
            return mine
    inst = _instances.get(_current)  # type: ignore[arg-type]
    return inst if inst is not None else _instantiate(_select())


def _select() -> str:
    global _current
    from ember.config import settings

    if _current is None:
        _before_create(None)
    with _lock:
        if _current is not None:
            return _current
        wanted = settings.backend
        candidates = _auto_candidates() if wanted == "auto" else [wanted]
        reasons = []
        for candidate in candidates:
            name, _, kind = candidate.partition(":")
            if wanted == "auto" and not plausible(name, kind):
                if not kind:  # (a GPU-only candidate is tried again, for any device, later)
                    reasons.append(f"  {name}: no device of it can be here (no driver's device "
                                   f"file); EMBER_BACKEND={name} tries it anyway")  # fmt: skip
                continue
            try:
                if kind and not backend_class(name).has_devices(kind):
                    continue  # tried again at the end of the order, for its other devices
                _instantiate(name)
            except BackendUnavailableError as exc:
                if f"  {name}: {exc}" not in reasons:
                    reasons.append(f"  {name}: {exc}")
                continue
            _current = name
            return name
        raise BackendUnavailableError(
            f"no Ember backend is usable (EMBER_BACKEND={wanted}):\n" + "\n".join(reasons)
        )


def plausible(name: str, kind: str = "") -> bool:
    """Whether backend ``name`` may have a device (of ``kind``, "" for any) here, by its
    package's cheap test (``plausible(kind)``: a ``stat`` or two, no driver imported).
    Auto selection passes the others over without importing their bindings: where there is
    nothing to find, CUDA's and OpenCL's imports took 0.2 and 0.15 s of a first operation
    on the native cpu backend.  A package that cannot be imported or has no test: True
    (trying it says what is wrong)."""
    try:
        test = getattr(package(name), "plausible", None)
    except ImportError:
        return True
    if test is None:
        return True
    try:
        return bool(test(kind or None))
    except Exception:
        return True


def _auto_candidates() -> list[str]:
    """:data:`AUTO_ORDER` with each :data:`GPU_FIRST` backend as ``"name:GPU"`` in its place
    and again, for any device, at the end."""
    first = [f"{n}:GPU" if n in GPU_FIRST else n for n in AUTO_ORDER]
    return first + [n for n in AUTO_ORDER if n in GPU_FIRST]


def use(name: str) -> Backend:
    """Make ``name`` (a :data:`REGISTRY` key) the current backend and return it.

    As a context manager the choice lasts for the block::

        with use("opencl") as be:   # ember.use_backend("opencl")
            ...                     # the previous backend is current again afterwards
    """
    global _current, _generation, _undo
    inst = _instantiate(name)
    with _lock:
        previous, _current = _current, name
        _generation += 1
        _undo = (inst, previous, _generation, choose(None))
    return inst


def enter(backend: Backend) -> None:
    """``with backend:``: make ``backend`` current until :func:`leave`.  Right after
    ``use(name)`` returned it, the block restores what was current before that call."""
    global _current, _generation, _undo
    with _lock:
        _check_opened(backend)
        if _undo is not None and _undo[0] is backend and _undo[2] == _generation:
            previous, mine = _undo[1], _undo[3]
        else:
            previous, _current = _current, backend.name
            _generation += 1
            mine = choose(None if _instances.get(backend.name) is backend else backend)
        _undo = None
        _restore.append((previous, mine))


def leave() -> None:
    """The end of a ``with backend:`` block: the previous choice is current again (the
    process's, and the calling thread's device choice)."""
    global _current, _generation
    with _lock:
        _current, mine = _restore.pop()
        _generation += 1
        _tls.backend = mine


def available() -> dict[str, str | None]:
    """For each registered backend: ``None`` if usable, else the reason it is not."""
    out: dict[str, str | None] = {}
    for name in REGISTRY:
        try:
            _instantiate(name)
            out[name] = None
        except BackendUnavailableError as exc:
            out[name] = str(exc)
    return out
