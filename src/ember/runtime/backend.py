"""The backend contract, the backend registry and backend selection.

A backend is *device + memory + module loader + compiler driver*.  Ember ships three:
``cuda`` (NVIDIA driver API through ``cuda-bindings``, NVRTC), ``opencl`` (``pyopencl``: GPUs
and the PoCL CPU device) and ``cpu`` (C compiled by the ``ziglang`` wheel, run with ctypes).
Everything above this layer (arrays, the kernel compiler, the CLI) talks only to the classes
below.

What a backend MUST implement is marked *abstract*: a backend class missing one of them is
refused when it is loaded (:func:`validate`), naming what is missing.  What it SHOULD
implement has a working but slower default here.  What it MAY implement is optional and
checked with ``hasattr`` by the callers.

Selection: ``EMBER_BACKEND=auto|cuda|opencl|cpu`` or :func:`use`.  ``auto`` picks CUDA when
a CUDA device answers, else an OpenCL GPU, else the cpu backend, else an OpenCL CPU device
(PoCL), else raises :class:`BackendUnavailableError` naming the extra to install.  Backends
are imported lazily: ``import ember`` touches no driver.
"""

from __future__ import annotations

import abc
import importlib
import operator
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ember.dtypes import DType  # noqa: F401 - named by Param and the docs
from ember.errors import BackendUnavailableError, InternalError, LaunchError

# A kernel parameter: a scalar of a DType, or the string "ptr" for a device pointer.
Param = "DType | str"
PTR = "ptr"

Dim3 = tuple[int, int, int]


@dataclass(frozen=True)
class DeviceInfo:
    """What Ember knows about one device.  Sizes are in bytes."""

    backend: str
    index: int
    name: str
    total_memory: int
    multiprocessors: int  # CUDA SMs / OpenCL compute units
    warp_size: int  # CUDA warp / OpenCL preferred work-group size multiple
    max_threads_per_block: int
    shared_memory_per_block: int
    compute_capability: tuple[int, int] | None = None  # CUDA only
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def arch(self) -> str | None:
        """``sm_XX`` for CUDA devices, ``None`` otherwise."""
        if self.compute_capability is None:
            return None
        return f"sm_{self.compute_capability[0]}{self.compute_capability[1]}"

    def summary(self) -> str:
        cc = f", compute {self.arch}" if self.arch else ""
        return (
            f"[{self.index}] {self.name}{cc}, {self.multiprocessors} SMs/CUs, "
            f"{self.total_memory / 2**30:.1f} GiB, warp {self.warp_size}, "
            f"{self.max_threads_per_block} threads/block, "
            f"{self.shared_memory_per_block // 1024} KiB shared/block"
        )


class Resource:
    """Something holding a driver object: ``close()`` releases it (idempotent), ``with``
    releases it at the end of the block, and ``__del__`` is only a backstop."""

    __slots__ = ()

    def close(self) -> None:  # noqa: B027 - optional: nothing to release by default
        """Release the driver object now.  Idempotent."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Buffer(Resource, abc.ABC):
    """Device memory owned by Ember.  ``close()`` frees it; ``__del__`` is a backstop."""

    __slots__ = ()

    nbytes: int

    @property
    @abc.abstractmethod
    def handle(self) -> Any:
        """The native object: a ``CUdeviceptr`` int on CUDA, a ``cl.Buffer`` on OpenCL."""

    @abc.abstractmethod
    def close(self) -> None:
        """Free the memory now.  Idempotent."""


class Stream(Resource, abc.ABC):
    """An in-order queue of device work."""

    @property
    @abc.abstractmethod
    def handle(self) -> Any:
        """The native stream / command queue."""

    @abc.abstractmethod
    def synchronize(self) -> None:
        """Block until every piece of work submitted to this stream has finished."""

    @abc.abstractmethod
    def query(self) -> bool:
        """Return True when all submitted work has finished (never blocks)."""

    def wait_event(self, event: Event) -> None:
        """SHOULD: make work submitted to this stream later wait for ``event``, on the device.

        Default: wait on the host (correct, but blocks the caller).
        """
        event.synchronize()


class Event(Resource, abc.ABC):
    """A marker in a stream, to wait on or time."""

    @abc.abstractmethod
    def record(self, stream: Stream) -> None:
        """Place the marker after the work submitted to ``stream`` so far."""

    @abc.abstractmethod
    def synchronize(self) -> None:
        """Block until the recorded work has finished."""

    @abc.abstractmethod
    def query(self) -> bool:
        """True when the recorded work has finished (never blocks)."""

    @abc.abstractmethod
    def elapsed_ms(self, end: Event) -> float:
        """Milliseconds between this event and ``end`` (both recorded and complete)."""


class Function(abc.ABC):
    """A kernel entry point in a loaded module, with its parameter list.

    ``params`` lists each parameter as a :class:`DType` (scalar) or :data:`PTR`.
    """

    name: str
    params: tuple

    @abc.abstractmethod
    def launch(
        self,
        grid: Dim3,
        block: Dim3,
        args: Sequence[Any],
        shared_mem: int = 0,
        stream: Stream | None = None,
    ) -> None:
        """Enqueue one launch of ``grid`` blocks of ``block`` threads.

        ``args`` holds native values in parameter order: Python/NumPy numbers for scalars
        and the backend's native pointer (:meth:`Backend.native_pointer`) for ``PTR``.
        A wrong count or an unconvertible value raises :class:`LaunchError`.
        """


class Module(Resource, abc.ABC):
    """A loaded binary."""

    @abc.abstractmethod
    def function(self, name: str, params: Sequence[Any]) -> Function:
        """Look up kernel ``name``; raise :class:`LaunchError` if the module has none."""


class Backend(abc.ABC):
    """One runtime (CUDA, OpenCL) bound to one device.

    Class attributes: ``name`` (registry key), ``dialect`` (the codegen dialect its compiler
    takes: ``"cuda"`` or ``"opencl"``), ``binary_kind`` (``"cubin"``, ``"opencl-binary"``...).
    """

    name: ClassVar[str]
    dialect: ClassVar[str]
    binary_kind: ClassVar[str]
    # MAY: True when every block of a launch that has started keeps running while other
    # blocks spin on flags it will publish (atomics + ember.threadfence() order them
    # device-wide).  The single-pass scan and radix sort (decoupled look-back, Merrill &
    # Garland 2016) need it.  False, the safe default, selects multi-pass designs: OpenCL
    # gives no such guarantee between work-groups.
    forward_progress: ClassVar[bool] = False

    # ---------------------------------------------------------------- MUST: devices
    @abc.abstractmethod
    def devices(self) -> list[DeviceInfo]:
        """Every device this backend can use, in index order."""

    @property
    @abc.abstractmethod
    def device(self) -> DeviceInfo:
        """The device this backend instance works on."""

    @abc.abstractmethod
    def library_versions(self) -> dict[str, str]:
        """Versions of the libraries and drivers in use, for ``ember info`` and cache keys."""

    # ---------------------------------------------------------------- MUST: memory
    @abc.abstractmethod
    def alloc(self, nbytes: int, stream: Stream | None = None) -> Buffer:
        """Allocate ``nbytes`` of device memory (stream-ordered where the driver has it)."""

    @abc.abstractmethod
    def native_pointer(self, buffer: Buffer, offset: int = 0) -> Any:
        """The value to pass for a ``PTR`` parameter: ``buffer`` plus ``offset`` bytes.

        A backend that cannot offset pointers (OpenCL) raises :class:`LaunchError` for a
        non-zero offset; Ember's compiled kernels pass offsets as separate arguments there.
        """

    @abc.abstractmethod
    def copy_from_host(self, dst: Buffer, dst_offset: int, src: Any, stream=None) -> None:
        """Copy a C-contiguous host array ``src`` to ``dst`` at ``dst_offset`` bytes.

        With ``stream=None`` the copy is finished when this returns; with a stream it is
        asynchronous and ``src`` must stay alive and unchanged until the stream passes it.
        """

    @abc.abstractmethod
    def copy_to_host(self, dst: Any, src: Buffer, src_offset: int, stream=None) -> None:
        """Copy ``dst.nbytes`` bytes from ``src`` at ``src_offset`` into the host array ``dst``."""

    @abc.abstractmethod
    def copy_device(
        self, dst: Buffer, dst_offset: int, src: Buffer, src_offset: int, nbytes: int, stream=None
    ) -> None:
        """Device-to-device copy of ``nbytes`` (asynchronous on the given/default stream)."""

    # ---------------------------------------------------------------- MUST: streams & events
    @abc.abstractmethod
    def create_stream(self) -> Stream:
        """A new stream that does not synchronize with the default stream."""

    @property
    @abc.abstractmethod
    def default_stream(self) -> Stream:
        """The stream Ember's own operations use when none is given."""

    @abc.abstractmethod
    def create_event(self, timing: bool = False) -> Event:
        """A new event; ``timing=True`` allows :meth:`Event.elapsed_ms`."""

    @abc.abstractmethod
    def synchronize(self, blocking: bool | None = None, spin: bool | None = None) -> None:
        """Wait for all work Ember submitted to the device (every stream it created).

        Streams known to be idle must cost no driver call (keep the streams in a
        :class:`ember.runtime.sync.StreamSet`).  ``blocking`` and ``spin`` are those of
        :meth:`ember.runtime.sync.Waitable.synchronize`.
        """

    async def synchronize_async(self) -> None:
        """SHOULD: :meth:`synchronize` without blocking the running asyncio event loop.

        Default: :meth:`synchronize` in the loop's default thread pool.
        """
        import asyncio

        await asyncio.get_running_loop().run_in_executor(None, self.synchronize)

    # ---------------------------------------------------------------- MUST: code
    @abc.abstractmethod
    def compile(self, source: str, name: str = "kernel", options: Sequence[str] = ()) -> bytes:
        """Compile C source in this backend's dialect to a binary for :attr:`device`.

        Raises :class:`CompileError` with the full log and the numbered source.
        """

    @abc.abstractmethod
    def load_module(self, binary: bytes) -> Module:
        """Load a binary produced by :meth:`compile`."""

    # ---------------------------------------------------------------- SHOULD
    def fill_zero(self, dst: Buffer, offset: int, nbytes: int, stream=None) -> None:
        """Set bytes to zero.  Default: copy zeros from the host (slow; override)."""
        import numpy as np

        self.copy_from_host(dst, offset, np.zeros(nbytes, np.uint8), stream)

    def alloc_host(self, nbytes: int) -> Any:
        """Host memory for fast async copies (pinned on CUDA).  Default: a NumPy byte array."""
        import numpy as np

        return np.empty(nbytes, np.uint8)

    def close(self) -> None:  # noqa: B027 - optional: a no-op by default
        """Release what the backend holds (streams, context references)."""

    # ---------------------------------------------------------------- MAY
    @classmethod
    def has_devices(cls, kind: str) -> bool:
        """MAY: whether a device of ``kind`` (``"GPU"``, ``"CPU"``) is present, found
        without creating a context or building anything.  Automatic selection asks it to
        prefer GPUs (``AUTO_ORDER``).  Default: True."""
        return True

    def describe(self) -> dict[str, str]:
        """MAY: more about the backend in words (compiler, target...), for ``ember info``;
        may be slow.  Default: nothing."""
        return {}

    # error_memory(nbytes) -> an object with ``claim`` and ``record`` (kernel argument
    # values: a 4-byte claim word and an ``nbytes`` record, both zeroed), ``peek()`` (the
    # record's first int64 read in place, or None where that needs a copy), ``read()`` (the
    # record as an int64 NumPy array) and ``clear()``.  Needed by kernels that can fail
    # (raise, assert, boundscheck=True); see ember/diagnostics/errors.py.
    #
    # blas() -> an object with ``gemm(dtype, opa, opb, m, n, k, a, lda, sa, b, ldb, sb, c,
    # ldc, sc, batch, stream, tf32)`` (column-major strided batched product on device
    # addresses; see ember/backends/cuda/blas.py), or None when the vendor library is not
    # installed.  solver() -> the dense factorizations of ember/backends/cuda/solver.py, or
    # None.  Without them, matrix products run Ember's own kernel and factorizations run
    # on the host (with an EmberPerformanceWarning).


# ------------------------------------------------------------------------- registry

# Explicit and lazy: name -> (module, class).  Importing happens on first use only.
REGISTRY: dict[str, tuple[str, str]] = {
    "cuda": ("ember.backends.cuda", "CudaBackend"),
    "opencl": ("ember.backends.opencl", "OpenCLBackend"),
    "cpu": ("ember.backends.cpu", "CPUBackend"),
}
# "name:KIND": that backend only if it has a device of that kind (Backend.has_devices).
AUTO_ORDER = ("cuda", "opencl:GPU", "cpu", "opencl")
INSTALL_HINT = {
    "cuda": "pip install 'ember[cuda]' (CUDA 13 driver) or 'ember[cuda12]' (CUDA 12 driver)",
    "opencl": "pip install 'ember[opencl]' (pyopencl + the PoCL CPU device)",
    "cpu": "pip install 'ember[cpu]' (the ziglang wheel: zig's C compiler)",
}

_lock = threading.RLock()
_instances: dict[str, Backend] = {}
_failures: dict[str, str] = {}
_current: str | None = None


def validate(cls: type) -> type:
    """Refuse a backend class that does not implement the contract, naming what is missing."""
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise InternalError(f"{cls!r} is not a subclass of ember.runtime.backend.Backend")
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    missing += [a for a in ("name", "dialect", "binary_kind") if not hasattr(cls, a)]
    if missing:
        raise InternalError(
            f"backend class {cls.__module__}.{cls.__qualname__} does not implement the backend "
            f"contract: missing {', '.join(missing)} (see ember/runtime/backend.py)"
        )
    return cls


def backend_class(name: str) -> type[Backend]:
    """Import and validate the class registered as ``name``."""
    if name not in REGISTRY:
        raise BackendUnavailableError(
            f"unknown backend {name!r}; known backends: {', '.join(REGISTRY)}"
        )
    module_name, class_name = REGISTRY[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendUnavailableError(
            f"the {name} backend cannot be imported ({exc}); install it with: {INSTALL_HINT[name]}"
        ) from exc
    return validate(getattr(module, class_name))


def _join_warmup(name: str | None) -> None:
    """Wait for a background warmup (ember.runtime.warmup) that may be creating backend
    ``name``, unless this thread holds the registry lock (the warmup may need it)."""
    if not _lock._is_owned():  # type: ignore[attr-defined]
        from ember.runtime import warmup

        warmup.join(name)


def _instantiate(name: str) -> Backend:
    if name not in _instances:
        _join_warmup(name)
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
        _join_warmup(None)
    with _lock:
        if _current is not None:
            return _current
        wanted = settings.backend
        candidates = AUTO_ORDER if wanted == "auto" else (wanted,)
        reasons = []
        for candidate in candidates:
            name, _, kind = candidate.partition(":")
            try:
                if kind and not backend_class(name).has_devices(kind):
                    continue  # e.g. OpenCL without a GPU: tried again later in the order
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


def use(name: str) -> Backend:
    """Make ``name`` (``"cuda"`` or ``"opencl"``) the current backend and return it."""
    global _current
    inst = _instantiate(name)
    with _lock:
        _current = name
    return inst


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


def dim3(value: Any, what: str, smallest: int = 1) -> Dim3:
    """An int or a tuple/list of 1-3 ints (each ≥ ``smallest``) as an (x, y, z) triple.

    Raises :class:`LaunchError` naming ``what`` (``"grid"``, ``"block"``...) otherwise.
    """
    items = value if isinstance(value, tuple | list) else (value,)
    try:
        dims = tuple(operator.index(d) for d in items)
    except TypeError:
        dims = ()
    if not dims or len(dims) > 3 or min(dims) < smallest:
        kind = "positive" if smallest >= 1 else "non-negative"
        raise LaunchError(
            f"{what} must be a {kind} int or a tuple of 1-3 {kind} ints, got {value!r}"
        )
    return (*dims, 1, 1)[:3]  # type: ignore[return-value]


def check_arg_count(function: Function, args: Sequence[Any]) -> None:
    """Raise :class:`LaunchError` when ``args`` does not match ``function.params`` in length."""
    if len(args) != len(function.params):
        raise LaunchError(
            f"kernel {function.name!r} takes {len(function.params)} argument(s) "
            f"({', '.join(str(p) for p in function.params)}), got {len(args)}"
        )
