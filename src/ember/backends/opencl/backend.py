"""The OpenCL backend: ``pyopencl`` on any OpenCL device (PoCL's CPU device where no GPU is).

One module per concept: :mod:`.check` (the pyopencl import and the one error translator),
:mod:`.device` (enumeration, ``EMBER_OPENCL_DEVICE``, :class:`DeviceInfo`), :mod:`.memory`,
:mod:`.stream` (command queues), :mod:`.event` and :mod:`.module` (build, load, launch).
:class:`OpenCLBackend` ties them to one device in one context.

Conventions other layers rely on (details in each module):

* ``native_pointer(buffer, 0)`` is the ``cl.Buffer``; a non-zero offset is a
  :class:`LaunchError` because OpenCL cannot offset a buffer argument; Ember's kernels take
  a view's offset as a separate argument.
* A kernel using dynamic local memory declares a trailing ``__local`` pointer parameter,
  left out of ``params`` and ``args``; ``shared_mem`` sizes it.
* ``compile`` returns the device binary, or a *source binary* where the driver gives none
  (``load_module`` rebuilds those from source).
* Copies with ``stream=None`` run on the default queue and block; with a stream they are
  asynchronous.  ``fill_zero`` and ``copy_device`` are always asynchronous.
* ``alloc_host`` is the contract's default (a NumPy array): PoCL gains nothing from pinned
  memory, and OpenCL's way to pin (a mapped ``CL_MEM_ALLOC_HOST_PTR`` buffer) is left until
  an OpenCL GPU user needs faster host copies (NVIDIA: 10.5 GB/s pageable H2D measured).
"""

from __future__ import annotations

import atexit
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ember.backends.opencl import LABEL
from ember.backends.opencl import device as _device
from ember.backends.opencl import memory as _memory
from ember.backends.opencl.check import cl, driver_error
from ember.backends.opencl.event import OpenCLEvent
from ember.backends.opencl.memory import OpenCLBuffer
from ember.backends.opencl.module import (
    OpenCLFunction,
    OpenCLModule,
    check_binary,
    compile_program,
    load_program,
)
from ember.backends.opencl.stream import COMPLETE, OpenCLStream
from ember.codegen.dialects.opencl import OPENCL
from ember.errors import LaunchError
from ember.runtime.backend import DL_OPENCL, Backend, DeviceInfo
from ember.runtime.sync import StreamSet, interruptible, wait_all, wait_all_async

__all__ = [
    "OpenCLBackend", "OpenCLBuffer", "OpenCLEvent", "OpenCLFunction", "OpenCLModule",
    "OpenCLStream",
]  # fmt: skip


class OpenCLBackend(Backend):
    """Ember's runtime on one OpenCL device, in one context.

    Parameters
    ----------
    device : str, optional
        Which device, in ``EMBER_OPENCL_DEVICE``'s syntax (``"P:D"``, a flat index, or part
        of a device or platform name); default: the setting, whose empty default means the
        first GPU, else the first CPU device, that can build kernels.

    Raises
    ------
    BackendUnavailableError
        pyopencl is missing, there is no OpenCL platform or device, ``device`` matches
        none (the message lists those found), or the device cannot build OpenCL C.
    """

    name = "opencl"
    label = LABEL
    dialect = OPENCL
    binary_kind = "opencl-binary"
    dlpack_device_type = DL_OPENCL  # buffers have no address to share: shares_memory False
    inspect_stages = frozenset({"resources"})  # the driver's work-group info

    def __init__(self, device: str | None = None):
        if device is None:
            from ember.config import settings

            device = settings.opencl_device
        self._found = _device.choose(device)
        self._cl_device = self._found.device
        self._info = _device.describe(self._found)
        with_context = f"creating a context on {self._info.name}"
        try:
            self._context = cl.Context([self._cl_device])
        except cl.Error as exc:
            raise driver_error(exc, with_context) from exc
        self._max_alloc = int(self._info.extra["max_mem_alloc_size"])
        self._streams = StreamSet()  # every stream made here, the default one included
        self._default_stream = self.create_stream()
        _LIVE.add(self)  # its queues are finished at exit

    @classmethod
    def open_device(cls, index: int) -> OpenCLBackend:
        """The backend on OpenCL device ``index`` (the flat numbering across platforms of
        :meth:`devices`), in a context of its own: arrays move between two OpenCL devices
        through the host."""
        return cls(device=str(index))

    # ------------------------------------------------------------------ devices
    @classmethod
    def has_devices(cls, kind: str) -> bool:
        """Whether an OpenCL device of ``kind`` (``"GPU"``, ``"CPU"``) is present (no build)."""
        return any(f.kind == kind for f in _device.enumerate_devices())

    def devices(self) -> list[DeviceInfo]:
        """Every OpenCL device of every platform, by flat index (builds a probe on each)."""
        return [_device.describe(f) for f in _device.enumerate_devices()]

    @property
    def device(self) -> DeviceInfo:
        """The device this backend works on."""
        return self._info

    @property
    def context(self) -> cl.Context:
        """The ``cl.Context`` (one device)."""
        return self._context

    @property
    def cl_device(self) -> cl.Device:
        """The ``cl.Device``."""
        return self._cl_device

    def library_versions(self) -> dict[str, str]:
        """pyopencl, platform, driver, device and OpenCL C versions (cache keys use them)."""
        extra = self._info.extra
        return {
            "pyopencl": cl.VERSION_TEXT,
            "opencl-platform": f"{extra['platform']} {extra['platform_version']}",
            "opencl-device": f"{self._info.name} {extra['device_version']}",
            "opencl-driver": extra["driver_version"],
            "opencl-c": extra["opencl_c_version"],
        }

    # ------------------------------------------------------------------ memory
    def alloc(self, nbytes: int, stream: OpenCLStream | None = None) -> OpenCLBuffer:
        """``nbytes`` of device memory (OpenCL allocations are not stream-ordered)."""
        return _memory.allocate(self._context, nbytes, self._max_alloc)

    def native_pointer(self, buffer: Any, offset: int = 0) -> cl.Buffer:
        """The ``cl.Buffer`` to pass for a ``PTR`` parameter; ``offset`` must be 0.

        Raises
        ------
        LaunchError
            ``offset`` is not 0: OpenCL passes whole buffers to kernels.
        """
        if offset:
            raise LaunchError(
                f"OpenCL cannot pass a buffer at a byte offset ({offset}) to a kernel: a "
                "kernel argument is a whole cl.Buffer. Pass the buffer and give the kernel "
                "the offset as a separate argument (Ember's compiled kernels do), or copy "
                "the view into its own array first"
            )
        return _memory.span(buffer, 0, 0, "pointer")

    def copy_from_host(self, dst: Any, dst_offset: int, src: Any, stream=None) -> None:
        """Copy host array ``src`` into ``dst`` at ``dst_offset`` (blocking if no stream)."""
        _enqueue(
            stream or self._default_stream,
            lambda q: _memory.to_device(q, dst, dst_offset, src, blocking=False),
            stream is None,
        )

    def copy_to_host(self, dst: Any, src: Any, src_offset: int, stream=None) -> None:
        """Copy ``dst.nbytes`` bytes of ``src`` from ``src_offset`` (blocking if no stream)."""
        _enqueue(
            stream or self._default_stream,
            lambda q: _memory.to_host(q, dst, src, src_offset, blocking=False),
            stream is None,
        )

    def copy_device(
        self, dst: Any, dst_offset: int, src: Any, src_offset: int, nbytes: int, stream=None
    ) -> None:
        """Asynchronous device-to-device copy on ``stream`` (default stream)."""
        _enqueue(
            stream or self._default_stream,
            lambda q: _memory.device_to_device(q, dst, dst_offset, src, src_offset, nbytes),
            False,
        )

    def fill_zero(self, dst: Any, offset: int, nbytes: int, stream=None) -> None:
        """Asynchronously zero ``nbytes`` of ``dst`` from ``offset`` (``clEnqueueFillBuffer``)."""
        _enqueue(
            stream or self._default_stream,
            lambda q: _memory.fill_zero(q, dst, offset, nbytes),
            False,
        )

    def error_memory(self, nbytes: int):
        """The claim word and error record of failing kernels (``backends/opencl/record.py``)."""
        from ember.backends.opencl.record import OpenCLErrorMemory

        return OpenCLErrorMemory(self._context, self._cl_device, nbytes)

    # ------------------------------------------------------------------ streams & events
    def create_stream(self) -> OpenCLStream:
        """A new in-order command queue, independent of the default stream."""
        stream = OpenCLStream(self._context, self._cl_device)
        self._streams.add(stream)
        return stream

    @property
    def default_stream(self) -> OpenCLStream:
        """The queue Ember's operations use when none is given."""
        return self._default_stream

    def create_event(self, timing: bool = False) -> OpenCLEvent:
        """A new event; ``timing=True`` allows :meth:`OpenCLEvent.elapsed_ms`."""
        return OpenCLEvent(timing)

    def synchronize(self, blocking: bool | None = None, spin: bool | None = None) -> None:
        """Wait for the work of every stream this backend created (idle ones cost nothing).

        ``blocking`` and ``spin`` are those of :meth:`OpenCLStream.synchronize`.  (A closed
        stream finished its work when it was closed, so no work is ever out of reach.)
        """
        wait_all(self._streams.busy(), blocking, spin)

    async def synchronize_async(self) -> None:
        """:meth:`synchronize` without blocking the running event loop."""
        await wait_all_async(self._streams.busy())

    # ------------------------------------------------------------------ code
    def compile(self, source: str, name: str = "kernel", options: Sequence[str] = ()) -> bytes:
        """OpenCL C → this device's program binary (see :mod:`.module` for source binaries)."""
        return compile_program(self._context, self._cl_device, source, name, tuple(options))

    def check_binary(self, binary: bytes) -> None:
        """:class:`BinaryError` when ``binary`` is damaged (see :func:`.module.check_binary`)."""
        check_binary(bytes(binary))

    def load_module(self, binary: bytes) -> OpenCLModule:
        """Load a binary made by :meth:`compile` on this device and driver (checked first)."""
        program = load_program(self._context, self._cl_device, bytes(binary))
        return OpenCLModule(program, self._cl_device, self._default_stream)

    def close(self) -> None:
        """Finish and release every stream.  Idempotent."""
        for stream in list(self._streams):
            stream.close()

    def __repr__(self) -> str:
        return f"<OpenCLBackend {self._info.summary()} [{self._info.extra['id']}]>"


EXIT_FINISH_S = 10.0  # at exit, the longest wait for the work still queued
_LIVE: weakref.WeakSet = weakref.WeakSet()  # every OpenCLBackend made in this process


def _finish_at_exit() -> None:
    """At exit, wait (at most :data:`EXIT_FINISH_S`) for the work still queued on every
    OpenCL backend's streams, before the interpreter and the driver are torn down.

    A program may end right after a launch.  PoCL builds a kernel's work-group code when
    the kernel is first enqueued, on a thread of its own (it links the code with a child
    process), and a process that exited while that ran crashed with SIGSEGV in PoCL's
    teardown after the Python program had ended: 6 exits in 90 of a kernel new to PoCL's
    cache on a 2-core machine (six processes at once).  Waiting for the queues first makes
    that exit an ordinary one.  A kernel still running after the bound is left to the
    driver's teardown."""
    busy = [b for b in list(_LIVE) if b._streams.busy()]
    if not busy:
        return
    done = threading.Event()

    def finish() -> None:
        try:
            for backend in busy:
                try:
                    backend.synchronize(blocking=True)
                except Exception:  # a device error or a broken queue: nothing to report now
                    pass
        finally:
            done.set()

    threading.Thread(target=finish, name="ember-opencl-exit", daemon=True).start()
    done.wait(EXIT_FINISH_S)


atexit.register(_finish_at_exit)


def _enqueue(
    stream: OpenCLStream, enqueue: Callable[[cl.CommandQueue], cl.Event | None], wait: bool
) -> None:
    """Enqueue one command on ``stream`` and book it (see :mod:`.stream`); ``wait``: block.

    Under the stream's lock, so that ``last`` is always the latest command and a blocking
    copy marks complete only what was enqueued up to it, whatever other threads enqueue.
    ``enqueue`` returns None when there was nothing to do.
    """
    with stream.lock:
        event = enqueue(stream.handle)
        if event is None:
            return
        stream.last = event
        stream.submitted += 1
        target = stream.submitted
    if wait:
        try:  # in an in-order queue: everything before it is done too; Ctrl-C ends the wait
            interruptible(event.wait, query=lambda: event.command_execution_status == COMPLETE)
        except cl.Error as exc:
            raise driver_error(exc, "waiting for a copy") from exc
        stream._mark(target)
