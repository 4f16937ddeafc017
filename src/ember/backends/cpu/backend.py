"""The cpu backend: Ember's kernels as C, compiled by the ``ziglang`` wheel's clang.

Nothing but pip: ``pip install 'ember[cpu]'`` brings zig (clang 22, every current
``-march``), and kernels need no C library (:mod:`ember.codegen.cpu_runtime`).  The cpu
dialect's code generator turns each kernel into C that runs the work-items of a work-group
one after another, split at barriers (``codegen/workgroup.py``, docs/design/cpu-backend.md).

One module per concept: :mod:`.toolchain` (zig, flags, versions, the CPU target),
:mod:`.memory` (host memory as device memory), :mod:`.stream` (job queues, events),
:mod:`.pool` (worker and helper threads), :mod:`.module` (binaries, loading, launch),
:mod:`.raw` (raw C kernels), :mod:`.printing`, :mod:`.record` (the error record) and
:mod:`.device`.  :class:`CPUBackend` ties them together.

Conventions other layers rely on:

* ``native_pointer(buffer, offset)`` is the address ``buffer.handle + offset`` (an int):
  views are passed by address, as on CUDA;
* copies with ``stream=None`` are finished when they return; with a stream they are jobs
  on it (the source array is kept alive until the copy ran);
* every stream's work runs in order; a wait runs the jobs no worker has started yet;
* binaries are containers of builds (:func:`.module.pack`): native for this CPU, plus a
  portable baseline build in bundles (:meth:`CPUBackend.portable_binary`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from ember.backends.cpu import LABEL, toolchain
from ember.backends.cpu import device as _device
from ember.backends.cpu import memory as _memory
from ember.backends.cpu import module as _module
from ember.backends.cpu import raw as _raw
from ember.backends.cpu.memory import CPUBuffer, Reclaimer
from ember.backends.cpu.module import CPUFunction, CPUModule
from ember.backends.cpu.pool import Helpers
from ember.backends.cpu.stream import CPUEvent, CPUStream
from ember.codegen.dialects.cpu import CPU
from ember.runtime.backend import DL_CPU, Backend, DeviceInfo
from ember.runtime.checks import host_array
from ember.runtime.sync import StreamSet, wait_all, wait_all_async

__all__ = ["CPUBackend", "CPUBuffer", "CPUEvent", "CPUFunction", "CPUModule", "CPUStream"]

INLINE_COPY_BYTES = 1 << 20  # a copy this small runs on the caller's thread when idle


class CPUBackend(Backend):
    """Ember's runtime on this machine's CPU.

    Raises
    ------
    BackendUnavailableError
        The ``ziglang`` wheel is missing or has no compiler for this platform.
    """

    name = "cpu"
    label = LABEL
    dialect = CPU
    binary_kind = "cpu-library"
    pointer_offsets = True  # handles are addresses: a view is passed as address + offset
    dlpack_device_type = DL_CPU
    shares_memory = True  # DLPack export by address: numpy.from_dlpack(x) copies nothing
    inspect_stages = frozenset({"resources"})  # shared and per-work-item bytes

    def __init__(self, threads: int | None = None):
        toolchain.zig_path()  # BackendUnavailableError (with the install command) if missing
        if threads is None:
            from ember.config import settings

            threads = settings.cpu_threads
        self.threads = max(1, threads or _device.usable_cores())
        self.helpers = Helpers(self.threads - 1)
        self._info = _device.describe(self.threads)
        self._streams = StreamSet()
        self._reclaimer = Reclaimer(self._streams)
        self._default_stream = self.create_stream()

    # ------------------------------------------------------------------ devices
    def devices(self) -> list[DeviceInfo]:
        """The one CPU device."""
        return [self._info]

    @property
    def device(self) -> DeviceInfo:
        return self._info

    def library_versions(self) -> dict[str, str]:
        """The compiler (the ``ziglang`` wheel's version fixes zig's clang) and the CPU
        family; cache keys use them, so they are cheap (no compiler process)."""
        return {
            "ziglang": toolchain.zig_version(),
            "cpu-family": toolchain.family(),
            "vector-math": toolchain.veclib() or "none",
        }

    def describe(self) -> dict[str, str]:
        """The compiler and target in words, for ``ember info`` (runs zig twice, ~0.1 s)."""
        return {
            "compiler": f"zig cc (clang {toolchain.clang_version()}) at {toolchain.zig_path()}",
            "flags": " ".join(toolchain.FLAGS[:3]),
            "target": f"-march=native ({toolchain.native_cpu()}, "
            f"{toolchain.cpu_fingerprint()}); portable builds: -march={toolchain.baseline()}",
            "threads": f"{self.threads} of {_device.usable_cores()} cores (EMBER_CPU_THREADS)",
        }

    # ------------------------------------------------------------------ memory
    def alloc(self, nbytes: int, stream: CPUStream | None = None) -> CPUBuffer:
        """``nbytes`` of 64-byte aligned host memory."""
        if nbytes < 0:
            raise ValueError(f"cannot allocate a negative number of bytes ({nbytes})")
        self._reclaimer.sweep()
        return CPUBuffer(nbytes, self._reclaimer)

    def native_pointer(self, buffer: Any, offset: int = 0) -> int:
        """The address of ``buffer`` plus ``offset`` bytes (what a ``PTR`` parameter takes)."""
        return _memory.address(buffer, offset, 0, "pointer")

    def copy_from_host(self, dst: Any, dst_offset: int, src: Any, stream=None) -> None:
        """Copy host array ``src`` into ``dst`` at ``dst_offset`` (finished on return if no
        stream)."""
        arr = host_array(src, writable=False)
        to = _memory.address(dst, dst_offset, arr.nbytes, "destination")
        self._copy(to, arr, _memory.host_address(arr), arr.nbytes, stream)

    def copy_to_host(self, dst: Any, src: Any, src_offset: int, stream=None) -> None:
        """Copy ``dst.nbytes`` bytes of ``src`` from ``src_offset`` into host array ``dst``."""
        arr = host_array(dst, writable=True)
        frm = _memory.address(src, src_offset, arr.nbytes, "source")
        self._copy(_memory.host_address(arr), arr, frm, arr.nbytes, stream)

    def copy_device(
        self, dst: Any, dst_offset: int, src: Any, src_offset: int, nbytes: int, stream=None
    ) -> None:
        """Copy ``nbytes`` between buffers (asynchronous on ``stream``, default stream)."""
        to = _memory.address(dst, dst_offset, nbytes, "destination")
        frm = _memory.address(src, src_offset, nbytes, "source")
        job = partial(_memory.copy, to, frm, nbytes)
        self._submit(job, stream or self._default_stream, nbytes)

    def fill_zero(self, dst: Any, offset: int, nbytes: int, stream=None) -> None:
        """Zero ``nbytes`` of ``dst`` from ``offset`` (asynchronous)."""
        to = _memory.address(dst, offset, nbytes, "destination")
        self._submit(partial(_memory.zero, to, nbytes), stream or self._default_stream, nbytes)

    def _copy(self, to: int, keep: np.ndarray, frm: int, nbytes: int, stream) -> None:
        """A host copy: finished on return without a stream, else a job (``keep`` alive)."""
        if stream is None:
            self._default_stream.run_now(partial(_copy_keeping, to, frm, nbytes, keep))
            return
        self._submit(partial(_copy_keeping, to, frm, nbytes, keep), stream, nbytes)

    def _submit(self, job, stream: CPUStream, nbytes: int) -> None:
        if nbytes <= INLINE_COPY_BYTES and stream.run_inline(job):
            return
        stream.submit(job)

    def alloc_host(self, nbytes: int) -> np.ndarray:
        """Host memory for staging copies: a NumPy byte array (all memory is host memory)."""
        return np.empty(nbytes, np.uint8)

    def make_foreign_stream_wait(self, handle: int) -> None:
        """A DLPack consumer reads host memory now: finish the default stream's work."""
        self._default_stream.synchronize()

    def error_memory(self, nbytes: int):
        """The claim word and error record of failing kernels (:mod:`.record`)."""
        from ember.backends.cpu.record import CPUErrorMemory

        return CPUErrorMemory(nbytes)

    # ------------------------------------------------------------------ streams & events
    def create_stream(self) -> CPUStream:
        """A new in-order stream, independent of the default stream."""
        stream = CPUStream()
        self._streams.add(stream)
        return stream

    @property
    def default_stream(self) -> CPUStream:
        return self._default_stream

    def create_event(self, timing: bool = False) -> CPUEvent:
        return CPUEvent(timing)

    def synchronize(self, blocking: bool | None = None, spin: bool | None = None) -> None:
        """Wait for the work of every stream this backend created (idle ones cost nothing)."""
        wait_all(self._streams.busy(), blocking, False)

    async def synchronize_async(self) -> None:
        await wait_all_async(self._streams.busy())

    # ------------------------------------------------------------------ code
    def compile(self, source: str, name: str = "kernel", options: Sequence[str] = ()) -> bytes:
        """C -> a binary for this CPU (raw kernels are wrapped first: :mod:`.raw`)."""
        return self._build(source, name, tuple(options), ("native",))

    def portable_binary(self, binary: bytes, source: str, name: str) -> bytes | None:
        """``binary`` with a baseline build (``x86-64-v2`` / ``armv8-a``) beside its build
        for this CPU, so that any CPU of the family loads it: what bundles carry.  None when
        it has one already."""
        builds = _module.unpack(binary)
        if any(meta.get("cpu") is None for meta, _ in builds):
            return None
        baseline = self._build(source, name, (), (toolchain.baseline(),))
        return _module.pack([*builds, *_module.unpack(baseline)])

    def _build(self, source: str, name: str, options, targets) -> bytes:
        raw = _raw.is_raw(source, name)
        text = _raw.wrap(source, name) if raw else source
        prints = "printf(" in text.split("// ---- end of the runtime ----", 1)[-1]
        builds = []
        for target in targets:
            blob, seconds = toolchain.compile_shared(
                text, name, target, options, shown=source if raw else None
            )
            native = target == "native"
            meta = {
                "march": target,
                "cpu": toolchain.cpu_fingerprint() if native else None,
                "family": toolchain.family(),
                "kernels": [name],
                "prints": prints,
                "compile_s": round(seconds, 4),
            }
            builds.append((meta, blob))
        return _module.pack(builds)

    def check_binary(self, binary: bytes) -> None:
        """:class:`~ember.errors.BinaryError` when ``binary`` is damaged (see
        :func:`.module.check`)."""
        _module.check(bytes(binary))

    def load_module(self, binary: bytes) -> CPUModule:
        """Load a binary made by :meth:`compile` (the build made for this CPU); a damaged
        one is a :class:`~ember.errors.BinaryError`, checked before it is loaded."""
        return CPUModule(bytes(binary), self)

    def close(self) -> None:
        """Finish every stream's work.  Idempotent."""
        for stream in list(self._streams):
            stream.close()

    def __repr__(self) -> str:
        return f"<CPUBackend {self._info.summary()}>"


def _copy_keeping(to: int, frm: int, nbytes: int, keep: Any) -> None:
    """A queued copy; ``keep`` (the host array) stays referenced until it ran."""
    _memory.copy(to, frm, nbytes)
