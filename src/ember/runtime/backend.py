"""The backend contract: what a backend MUST, SHOULD and MAY implement, and its capabilities.

A backend is *device + memory + module loader + compiler driver*.  Ember ships three:
``cuda`` (NVIDIA driver API through ``cuda-bindings``, NVRTC), ``opencl`` (``pyopencl``: GPUs
and the PoCL CPU device) and ``cpu`` (C compiled by the ``ziglang`` wheel, run with ctypes).
Everything above this layer (arrays, the kernel compiler, the CLI) talks only to the classes
below, and asks a backend what it *can do* (its capabilities), never which one it is
(``tests/unit/test_layers.py``).

* MUST: the abstract methods - a backend class missing one is refused when it is loaded
  (:func:`~ember.runtime.registry.validate`), naming what is missing - and the class
  attributes ``name``, ``dialect`` (a :class:`~ember.codegen.dialects.Dialect`),
  ``binary_kind``.
* SHOULD: methods with a working but slower default here (``fill_zero``, ``alloc_host``,
  ``synchronize_async``, ``Stream.wait_event``).
* MAY: capabilities (class attributes whose default is the conservative answer) and
  optional methods whose default refuses or says "unknown" (``error_memory``, ``blas``,
  ``solver``, ``fft``, the foreign-stream waits, ``disassemble``, ``inspect_offline``;
  ``Function.resources/attributes/occupancy``).  Callers never probe with ``hasattr``.
* :class:`DeviceInfo` describes the device: ``kind``, ``features``, ``fp64_ratio``...

The objects a backend hands out (buffers, streams, events, modules, functions, the error
memory) and their contract are in :mod:`ember.runtime.resources`, named here too.
Streams and events also subclass :class:`ember.runtime.sync.Waitable` and add 1 to
``submitted`` per piece of work, so waits on idle work make no driver call.  The registry
and selection live in :mod:`ember.runtime.registry` (re-exported at the end of this module).
``docs/design/backend.md`` lists the capabilities and what a new backend writes.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import field
from types import MappingProxyType
from typing import Any, ClassVar

from ember._records import record
from ember.codegen.dialects import Dialect
from ember.dtypes import DType  # noqa: F401 - named by Param and the docs
from ember.errors import BackendUnavailableError, UnsupportedFeatureError
from ember.frontend.types import Target
from ember.runtime.resources import (  # noqa: F401 - the contract's objects, named here too
    PTR,
    Buffer,
    ErrorMemory,
    Event,
    Function,
    Module,
    Resource,
    Stream,
)

# Kernel features a device may have (DeviceInfo.features; the compiler's Target):
FEATURES = {
    "fp64": "double precision",
    "fp16": "half precision arithmetic",
    "int64_atomics": "64-bit atomics",
    "subgroups": "sub-groups (warps): lane ids, sub-group reductions",
    "subgroup_shuffle": "sub-group shuffles by lane",
    "subgroup_shuffle_relative": "sub-group shuffles up and down",
    "subgroup_ballot": "sub-group ballots (ember.ballot)",
    "cooperative_launch": "cooperative launches (ember.grid_sync)",
    "global_tables": "program-scope device memory (captured tables past constant memory)",
}

# DLPack device types (dlpack.h): Backend.dlpack_device_type, foreign_device_types
DL_CPU, DL_CUDA, DL_OPENCL, DL_CUDA_MANAGED = 1, 2, 4, 13

# A kernel parameter: a scalar of a DType, or the string "ptr" for a device pointer.
Param = "DType | str"


@record(frozen=True)
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
    # What the device is and can do, in words code outside the backend can test:
    kind: str = "GPU"  # "GPU", "CPU", "ACCELERATOR" or "OTHER"
    features: frozenset[str] = frozenset()  # what kernels may use (see FEATURES)
    fp64_ratio: float | None = None  # float32 : float64 throughput; None: unknown
    cooperative_launch: bool = False  # grid-wide synchronization is possible
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def is_gpu(self) -> bool:
        """Whether the device is a GPU (wide parallelism, launch sizes in the 10⁵)."""
        return self.kind == "GPU"

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


class Backend(abc.ABC):
    """One runtime (CUDA, OpenCL...) bound to one device.  A process that uses several
    devices of a backend holds one instance per device (:meth:`open_device`).

    Class attributes a backend MUST set: ``name`` (registry key), ``dialect`` (the
    :class:`~ember.codegen.dialects.Dialect` its compiler takes), ``binary_kind``
    (``"cubin"``, ``"opencl-binary"``...).

    The *capabilities* below have the conservative answer as default; a backend sets those
    it has.  Code outside ``ember/backends/`` asks them (and :class:`DeviceInfo`'s ``kind``,
    ``features``, ``fp64_ratio``), never :attr:`name`.
    """

    name: ClassVar[str]
    dialect: ClassVar[Dialect]
    binary_kind: ClassVar[str]

    # ---------------------------------------------------------------- capabilities
    label: ClassVar[str] = ""  # in messages: "CUDA", "OpenCL" (default: name)
    # Buffer.handle is the integer device address, and a pointer argument may point into a
    # buffer: native_pointer(b, offset) == b.handle + offset (launch paths add it inline).
    pointer_offsets: ClassVar[bool] = False
    # DLPack device type of this backend's memory (DL_CUDA, DL_OPENCL, DL_CPU).
    dlpack_device_type: ClassVar[int] = 0
    # Buffers are exchanged with other libraries by address, without a copy: DLPack export
    # (and __cuda_array_interface__ for DL_CUDA memory), and kernels and arrays accept
    # other libraries' memory of these DLPack device types (wait_for_foreign_stream...).
    shares_memory: ClassVar[bool] = False
    foreign_device_types: ClassVar[frozenset[int]] = frozenset()
    # kernel.inspect stages beyond "ir" and "source" for code on this backend's device
    # ("ptx", "cubin-info", "sass", "resources"), and those it gives without a device
    # (:meth:`inspect_offline`, e.g. ``inspect(..., dialect="cuda")``).
    inspect_stages: ClassVar[frozenset[str]] = frozenset()
    offline_stages: ClassVar[frozenset[str]] = frozenset()
    out_of_memory_code: ClassVar[str] = ""  # the driver's status name for "out of memory"
    # Every block of a launch that has started keeps running while other blocks spin on
    # flags it will publish (atomics + ember.threadfence() order them device-wide).  The
    # single-pass scan and radix sort (decoupled look-back, Merrill & Garland 2016) need
    # it.  False, the safe default, selects multi-pass designs: OpenCL gives no such
    # guarantee between work-groups.
    forward_progress: ClassVar[bool] = False
    # With forward_progress: the blocks of a launch start in block-index order, so a block
    # may wait on any block of a lower index (CUB's single-pass scan assumes this of CUDA
    # devices).  False: such kernels number their tiles from an atomic counter instead.
    ordered_blocks: ClassVar[bool] = False
    # why a vendor library the backend MAY use (blas(), solver(), fft()) is absent here, by name
    vendor_missing: ClassVar[Mapping[str, str]] = MappingProxyType({})
    # (DeviceInfo.cooperative_launch: every block of a grid resident at once, so that
    # ember.grid_sync() can wait for the whole grid.)  A backend whose devices can also
    # implements ``Function.launch_cooperative`` (launch's arguments; a LaunchError saying
    # how many blocks fit when the grid does not) and ``grid_barrier(stream)`` (the native
    # pointer of a 4-byte device word per stream the kernel's grid barrier counts on).

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

    def version_stamp(self) -> dict | None:
        """MAY: what decides :meth:`library_versions`, read with no library loaded; the
        cache keeps the versions under it (ember.cache.key).  None: always asked."""
        return None

    def library_files(self) -> list[str]:
        """MAY: the files :meth:`library_versions` read (a record holds while they do)."""
        return []

    @property
    def target(self) -> Target:
        """What code is generated for on this backend's device (the compiler's
        :class:`~ember.frontend.types.Target`: dialect, arch, warp size, features); read
        once.  Part of every cache key."""
        found = self.__dict__.get("_ember_target")
        if found is None:
            dev, dialect = self.device, self.dialect
            features = frozenset(dev.features)
            if dev.cooperative_launch:  # ember.grid_sync() (a cooperative launch)
                features |= {"cooperative_launch"}
            found = self.__dict__["_ember_target"] = Target(
                dialect.name, dev.arch, dev.warp_size or 1, features,
                device=f"this {self.label or self.name} device ({dev.name})",
                feature_names=dialect.feature_names,
                constant_bytes=int(dev.extra.get("max_constant_buffer_size", 65536)),
            )  # fmt: skip
        return found

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

    # MAY: large copies of pageable host memory are faster through pinned staging buffers
    # (alloc_host) than the driver's own copy (ember.runtime.staging); CUDA: yes.
    staged_copies = False

    def is_pinned(self, host: Any) -> bool:
        """MAY: whether the NumPy array's memory is page-locked, so the device copies it
        directly (no staging).  Default: False."""
        return False

    def pin_host(self, address: int, nbytes: int) -> bool:
        """MAY: page-lock host memory for direct copies until ``unpin_host(address)`` (the
        caller keeps it alive meanwhile); False where it cannot (the default)."""
        return False

    def unpin_host(self, address: int) -> None:  # noqa: B027 - a no-op by default
        """MAY: undo :meth:`pin_host`."""

    def copy_chunks_from_host(
        self, dst: Buffer, offset: int, host: Any, stream: Any, buffers: list, events: list,
        chunk: int, primed: list[bool], threads: int,
    ) -> bool:  # fmt: skip
        """MAY: a staged upload's pipeline in native code (:mod:`ember.runtime.staging`):
        copy the 1-d ``uint8`` array ``host`` to ``dst`` at ``offset`` through the pinned
        ``buffers`` (``chunk`` bytes each, reused in turn, each with its event of
        ``events``; ``primed[k]``: that event was recorded after an earlier transfer out of
        buffer ``k``) on up to ``threads`` host threads, queueing the transfers on
        ``stream`` and recording each buffer's event after its last one.  False where it
        cannot (the default: nothing was done, the caller runs its own pipeline)."""
        return False

    def alloc_host(self, nbytes: int) -> Any:
        """Host memory for fast async copies (pinned on CUDA).  Default: a NumPy byte array."""
        import numpy as np

        return np.empty(nbytes, np.uint8)

    def close(self) -> None:  # noqa: B027 - optional: a no-op by default
        """Release what the backend holds (streams, context references)."""

    @classmethod
    def open_device(cls, index: int) -> Backend:
        """MAY: a new instance of this backend on its device ``index`` (the numbering of
        :meth:`devices`).  The registry keeps one instance per device it opened
        (:func:`ember.runtime.registry.device`); each has its own streams, allocator pool
        and compiled modules.  Default: one device only - index 0 is ``cls()``."""
        if index == 0:
            return cls()
        raise BackendUnavailableError(
            f"the {cls.label or cls.name} backend runs on one device only; there is no "
            f"device {index} (ember.devices() lists them)"
        )

    def copy_peer(
        self, dst: Buffer, dst_offset: int, src_backend: Backend, src: Buffer, src_offset: int,
        nbytes: int, stream: Stream | None = None,
    ) -> bool:  # fmt: skip
        """MAY: copy ``nbytes`` from ``src`` (a buffer of ``src_backend``, another device
        of this backend class) into ``dst``, device to device, ordered after the work queued
        so far on ``src_backend``'s default stream and on ``stream`` (this backend's
        default stream when None).  Returns False where the driver cannot (the caller then
        stages the copy through host memory).  Default: False."""
        return False

    def check_binary(self, binary: bytes) -> None:  # noqa: B027 - optional check
        """SHOULD: raise :class:`~ember.errors.BinaryError` when ``binary`` is damaged as far
        as its format shows (sizes and offsets past its end...), without a driver call.
        :meth:`load_module` must call it first: drivers crash on damaged images
        (``ember.backends.binaries`` has the checks).  Default: no check."""

    def __enter__(self) -> Backend:
        """``with ember.use_backend(name):`` - this backend is the current one inside the
        block, the previous choice again after it (:func:`ember.runtime.registry.enter`)."""
        from ember.runtime import registry

        registry.enter(self)
        return self

    def __exit__(self, *exc) -> None:
        from ember.runtime import registry

        registry.leave()

    # ---------------------------------------------------------------- MAY
    @classmethod
    def has_devices(cls, kind: str) -> bool:
        """MAY: whether a device of ``kind`` (``"GPU"``, ``"CPU"``) is present, found
        without creating a context or building anything.  Automatic selection asks it to
        try one backend's GPUs before another backend (``registry.AUTO_ORDER``).  Default:
        True."""
        return True

    def portable_binary(self, binary: bytes, source: str, name: str) -> bytes | None:
        """MAY: ``binary`` (compiled from ``source``, kernel ``name``) made loadable on every
        device of this backend's kind, for a bundle to carry (the cpu backend adds a baseline
        build next to the one for this CPU).  Default None: it is, as it is."""
        return None

    def describe(self) -> dict[str, str]:
        """MAY: more about the backend in words (compiler, target...), for ``ember info``;
        may be slow.  Default: nothing."""
        return {}

    def error_memory(self, nbytes: int) -> ErrorMemory:
        """MAY: the claim word and ``nbytes`` error record that kernels that can fail
        (``raise``, ``assert``, ``boundscheck=True``) write (ember/diagnostics/device_errors.py).
        Default: such kernels are refused on this backend."""
        raise UnsupportedFeatureError(
            f"the {self.label or self.name} backend cannot run kernels that can fail (raise, "
            "assert, boundscheck=True): it has no error memory (Backend.error_memory)"
        )

    def blas(self) -> Any:
        """MAY: the vendor BLAS, an object with ``gemm(dtype, opa, opb, m, n, k, a, lda, sa,
        b, ldb, sb, c, ldc, sc, batch, stream, tf32)`` (column-major strided batched product
        on device addresses; ember/backends/cuda/blas.py).  Default None: matrix products
        run Ember's own kernel."""
        return None

    def solver(self) -> Any:
        """MAY: the vendor dense factorizations (ember/backends/cuda/solver.py).  Default
        None: factorizations run on the host (with an EmberPerformanceWarning)."""
        return None

    def fft(self) -> Any:
        """MAY: the vendor FFT (ember/backends/cuda/cufft.py): ``plan(...)`` (cached),
        ``execute(plan, src, dst, inverse, stream)`` on device addresses, and ``cache``
        (the plan cache, with its statistics).  Default None: ``ember.fft`` runs Ember's
        own kernels."""
        return None

    def wait_for_foreign_stream(self, handle: int) -> None:
        """MAY (with :attr:`shares_memory`): make Ember's default stream wait, on the
        device, for the work queued so far on another library's stream ``handle`` (a native
        stream handle as an int; DLPack / CUDA Array Interface import)."""
        raise UnsupportedFeatureError(f"the {self.label or self.name} backend shares no streams")

    def make_foreign_stream_wait(self, handle: int) -> None:
        """MAY (with :attr:`shares_memory`): make another library's stream ``handle`` wait,
        on the device, for the work queued so far on Ember's default stream (DLPack
        export; ``1`` is CUDA's legacy default stream)."""
        raise UnsupportedFeatureError(f"the {self.label or self.name} backend shares no streams")

    def disassemble(self, binary: bytes) -> str:
        """MAY (``"sass"`` in :attr:`inspect_stages`): the machine code of a binary."""
        raise UnsupportedFeatureError(f"the {self.label or self.name} backend cannot disassemble")

    @classmethod
    def inspect_offline(
        cls, stage: str, source: str, target: Any, name: str, options: Sequence[str] = ()
    ) -> Any:
        """MAY: stage ``stage`` (one of :attr:`offline_stages`) of ``source``, generated for
        ``target``, without a device - e.g. PTX or register counts from NVRTC."""
        raise UnsupportedFeatureError(
            f"stage {stage!r} needs a {cls.label or cls.name} device: pass device arrays"
        )


# The registry and selection live in ember.runtime.registry (light: ``import ember`` reads it);
# this module re-exports them, so ``from ember.runtime import backend as registry`` works.
from ember.runtime.registry import AUTO_ORDER as AUTO_ORDER  # noqa: E402
from ember.runtime.registry import INSTALL_HINT as INSTALL_HINT  # noqa: E402
from ember.runtime.registry import REGISTRY as REGISTRY  # noqa: E402
from ember.runtime.registry import available as available  # noqa: E402
from ember.runtime.registry import backend_class as backend_class  # noqa: E402
from ember.runtime.registry import choose as choose  # noqa: E402
from ember.runtime.registry import current as current  # noqa: E402
from ember.runtime.registry import device as device  # noqa: E402
from ember.runtime.registry import disable as disable  # noqa: E402
from ember.runtime.registry import get as get  # noqa: E402
from ember.runtime.registry import instance as instance  # noqa: E402
from ember.runtime.registry import on_create as on_create  # noqa: E402
from ember.runtime.registry import opened as opened  # noqa: E402
from ember.runtime.registry import package as package  # noqa: E402
from ember.runtime.registry import toolchain as toolchain  # noqa: E402
from ember.runtime.registry import use as use  # noqa: E402
from ember.runtime.registry import validate as validate  # noqa: E402
