"""The backend registry and backend selection.

An explicit dict, imported lazily: ``import ember`` reads it (the background warmup asks the
backends' light packages whether to start), and nothing here imports a backend or the
contract until a backend is used.  :mod:`ember.runtime.backend` holds the contract and
re-exports these functions.

Selection: ``EMBER_BACKEND=auto|<name>`` or :func:`use`.  ``auto`` tries :data:`AUTO_ORDER`
(CUDA when a CUDA device answers, else an OpenCL GPU, else the native cpu backend, else an
OpenCL CPU device such as PoCL) and raises :class:`BackendUnavailableError` naming the extra
to install when none works.

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
            inst = backend_class(name)()
        except BackendUnavailableError as exc:
            _failures[name] = str(exc)
            raise
        _instances[name] = inst
        return inst


def get(name: str | None = None) -> Backend:
    """Return the backend ``name``, or the current one (chosen by ``EMBER_BACKEND``).

    Raises :class:`BackendUnavailableError` saying why and what to install.
    """
    if name is not None:
        return _instantiate(name)
    inst = _instances.get(_current) if _current else None
    if inst is not None:
        return inst
    return _instantiate(_select())


def current() -> Backend:
    """The current backend: the hot-path spelling of ``get()``."""
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
        _undo = (inst, previous, _generation)
    return inst


def enter(backend: Backend) -> None:
    """``with backend:``: make ``backend`` current until :func:`leave`.  Right after
    ``use(name)`` returned it, the block restores what was current before that call."""
    global _current, _generation, _undo
    with _lock:
        if _instances.get(backend.name) is not backend:
            raise BackendUnavailableError(
                f"{backend!r} is not the registry's {backend.name} backend; only those can be "
                "made current (ember.use_backend(name))"
            )
        if _undo is not None and _undo[0] is backend and _undo[2] == _generation:
            previous = _undo[1]
        else:
            previous, _current = _current, backend.name
            _generation += 1
        _undo = None
        _restore.append(previous)


def leave() -> None:
    """The end of a ``with backend:`` block: the previous choice is current again."""
    global _current, _generation
    with _lock:
        _current = _restore.pop()
        _generation += 1


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
