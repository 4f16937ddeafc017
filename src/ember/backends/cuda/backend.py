"""The CUDA backend: NVIDIA's driver API through ``cuda-bindings``, kernels built by NVRTC.

One module per driver concept: :mod:`.driver` (the bindings and the one status check),
:mod:`.device` (init, properties, primary context), :mod:`.memory`, :mod:`.stream`,
:mod:`.event`, :mod:`.module` and :mod:`.launch` (the hot path).  :class:`CudaBackend` ties
them to one device and implements :class:`ember.runtime.backend.Backend`.

Every submission adds 1 to its stream's ``submitted`` counter (:mod:`ember.runtime.sync`).
Copies with ``stream=None`` run on Ember's default stream and wait for it, so they are
ordered after the work already queued there (the driver's synchronous ``cuMemcpy*`` use
the legacy NULL stream, which a non-blocking stream does not wait for).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from typing import Any

from ember.backends.binaries import check_cuda_image
from ember.backends.cuda import LABEL
from ember.backends.cuda import device as _device
from ember.backends.cuda import direct as _direct
from ember.backends.cuda.driver import check, cu, error
from ember.backends.cuda.event import CudaEvent
from ember.backends.cuda.launch import CudaFunction
from ember.backends.cuda.memory import (
    CudaBuffer,
    PinnedHostMemory,
    _alloc_async,
    allocate,
    start_pool,
)
from ember.backends.cuda.module import CudaModule
from ember.backends.cuda.stream import CudaStream
from ember.codegen.dialects.cuda import CUDA
from ember.config import settings
from ember.errors import ClosedError
from ember.runtime.backend import (
    DL_CUDA,
    DL_CUDA_MANAGED,
    Backend,
    Buffer,
    DeviceInfo,
)
from ember.runtime.checks import check_range, host_array
from ember.runtime.sync import StreamSet, interruptible, wait_all, wait_all_async

_MEMORY_TYPE = cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE
_HOST = int(cu.CUmemorytype.CU_MEMORYTYPE_HOST)
_PORTABLE = cu.CU_MEMHOSTREGISTER_PORTABLE
BOUNCE = 4096  # waited-for copies to the host up to this size go through pinned memory

__all__ = [
    "CudaBackend", "CudaBuffer", "CudaEvent", "CudaFunction", "CudaModule", "CudaStream",
    "PinnedHostMemory",
]  # fmt: skip


class CudaBackend(Backend):
    """Ember's runtime on one CUDA device, in its primary context.

    Parameters
    ----------
    device : int
        Device ordinal (as ``nvidia-smi`` and ``CUDA_VISIBLE_DEVICES`` number them).

    Raises
    ------
    BackendUnavailableError
        cuda-bindings is missing, the driver library is missing, ``cuInit`` fails, there is
        no device, or ``device`` is out of range.
    """

    name = "cuda"
    label = LABEL
    dialect = CUDA
    binary_kind = "cubin"
    pointer_offsets = True
    dlpack_device_type = DL_CUDA
    shares_memory = True
    foreign_device_types = frozenset({DL_CUDA, DL_CUDA_MANAGED})
    inspect_stages = frozenset({"ptx", "cubin-info", "sass", "resources"})
    offline_stages = inspect_stages
    out_of_memory_code = "CUDA_ERROR_OUT_OF_MEMORY"
    forward_progress = True  # resident blocks are scheduled independently of waiting ones
    ordered_blocks = True  # and a launch's blocks start in index order
    staged_copies = True  # pageable copies: 7-14 GB/s up, 1-3 down; staged: see staging.py

    def __init__(self, device: int = 0):
        self._index = device
        self._cu_device = _device.get_device(device)  # runs cuInit: the availability test
        self._info = _device.device_info(device)
        self._context = _device.PrimaryContext(self._cu_device, device)
        self._use_pool = False  # True once the driver's pool has started (_start_pool)
        self._streams = StreamSet()  # every stream made here, the default one included
        self._bounce_local = threading.local()  # pinned buffers of small reads
        self._default_stream = self.create_stream()
        self._pool_start: threading.Thread | None = None
        if self._info.extra.get("memory_pools_supported"):
            self._pool_start = threading.Thread(
                target=self._start_pool, name="ember-cuda-pool", daemon=True
            )
            self._pool_start.start()

    def _start_pool(self) -> None:
        """A process's first ``cuMemAllocAsync`` takes 8-15 ms (the driver setting its pool
        up) where a first ``cuMemAlloc`` takes 0.1-0.4, and neither waits for the other.  So
        this thread makes that first stream-ordered allocation while the program's first
        operations take theirs with ``cuMemAlloc`` (freed with ``cuMemFree``); then every
        allocation is stream-ordered.  Errors are left to the first real allocation."""
        try:
            start_pool(self._context, self._default_stream)
        finally:
            self._use_pool = True

    # ------------------------------------------------------------------ devices
    def devices(self) -> list[DeviceInfo]:
        """Every CUDA device, in ordinal order."""
        return [_device.device_info(i) for i in range(_device.init())]

    @property
    def device(self) -> DeviceInfo:
        """The device this backend works on."""
        return self._info

    @property
    def context(self) -> _device.PrimaryContext:
        """The retained primary context (``.handle`` is the ``CUcontext``)."""
        return self._context

    def library_versions(self) -> dict[str, str]:
        """cuda-bindings, driver (CUDA version it supports) and NVRTC versions."""
        import cuda.bindings

        from ember.backends.cuda.nvrtc import nvrtc_version

        major, minor = _device.driver_version()
        try:
            nvrtc = "{}.{}".format(*nvrtc_version())
        except Exception as exc:  # no NVRTC: loading cubins still works
            nvrtc = f"unavailable ({type(exc).__name__})"
        return {
            "cuda-bindings": cuda.bindings.__version__,
            "cuda-driver": f"{major}.{minor}",
            "nvrtc": nvrtc,
        }

    def version_stamp(self) -> dict:
        """cuda-bindings' version, the driver's CUDA version and where NVRTC would come
        from (no library loaded): ``library_versions`` is read from the cache's record
        while these and the NVRTC file stay the same."""
        from ember.backends.cuda import version_stamp

        return version_stamp()

    def library_files(self) -> list[str]:
        """The NVRTC library files loaded (after ``library_versions``)."""
        from ember.backends.cuda.nvrtc import loaded_files

        return loaded_files()

    def describe(self) -> dict[str, str]:
        """For ``ember info``: how kernels are launched and large uploads staged (the
        compiled stubs, when built)."""
        if _direct.entry("cuLaunchKernelEx") is None:
            path = "the driver table's cuLaunchKernel (cuLaunchKernelEx is not reachable)"
        elif _direct.native() is not None:
            path = "compiled stub (ember.backends.cuda._ccall)"
        else:
            path = "ctypes (no C stub: reinstall where a C compiler and Python's headers are)"
        if _direct.fill() is not None:
            staged = "C threads (ember.backends.cuda._fill)"
        else:
            staged = "Python threads (no C stub: reinstall where a C compiler is)"
        calls = "cuda.bindings.driver" if cu.__name__.startswith("cuda.") else "ctypes table"
        return {"driver calls": f"{calls} (EMBER_CUDA_DRIVER)", "launch": path,
                "staged uploads": staged}  # fmt: skip

    # ------------------------------------------------------------------ memory
    def alloc(self, nbytes: int, stream: CudaStream | None = None) -> CudaBuffer:
        """``nbytes`` of device memory, stream-ordered on ``stream`` where pools exist."""
        s = stream or self._default_stream
        h = s._handle
        if self._use_pool and nbytes > 0 and h is not None:  # the fast path: one driver call
            err, ptr = _alloc_async(nbytes, h)
            if not err:
                return CudaBuffer(ptr, nbytes, self._context, s)
        return allocate(nbytes, self._context, s, self._use_pool)

    def native_pointer(self, buffer: Buffer, offset: int = 0) -> int:
        """The device address ``buffer + offset`` as an int, for a ``PTR`` parameter."""
        ptr = getattr(buffer, "handle", 0)
        if not (ptr and isinstance(ptr, int) and 0 <= offset <= buffer.nbytes):
            _span(buffer, offset, 0, "pointer")  # raises the explanatory error
        return ptr + offset

    def copy_from_host(self, dst: CudaBuffer, dst_offset: int, src: Any, stream=None) -> None:
        """Copy the C-contiguous host array ``src`` into ``dst`` at ``dst_offset`` bytes."""
        src = host_array(src, writable=False)
        address = _span(dst, dst_offset, src.nbytes, "destination")
        self._context.ensure_current()
        s = stream or self._default_stream
        check(
            cu.cuMemcpyHtoDAsync(address, src.ctypes.data, src.nbytes, s.handle),
            "cuMemcpyHtoDAsync",
            f"copying {src.nbytes} bytes to the device",
        )
        s.submitted += 1
        if stream is None:
            s.synchronize()

    def copy_chunks_from_host(
        self, dst: CudaBuffer, offset: int, host: Any, stream: CudaStream | None,
        buffers: list, events: list, chunk: int, primed: list[bool], threads: int,
    ) -> bool:  # fmt: skip
        """A staged upload's host copies on C threads and its transfers queued from C, the
        GIL released throughout (``ember.backends.cuda._fill``, where it was built; see
        :meth:`Backend.copy_chunks_from_host`).  False where the module is missing."""
        native = _direct.fill()
        if native is None:
            return False
        module, entries = native
        address = _span(dst, offset, host.nbytes, "destination")
        self._context.ensure_current()
        s = stream or self._default_stream
        done = module.upload_chunks(
            entries, int(self._context.handle), address, host.ctypes.data, host.nbytes,
            int(s.handle), tuple(b.ctypes.data for b in buffers),
            tuple(int(e.handle) for e in events), chunk, threads, bytes(map(bool, primed)),
        )  # fmt: skip
        if done is None:  # no thread could be started
            return False
        status, call, queued = done
        s.submitted += queued
        if status:
            doing = f"copying {host.nbytes} bytes to the device"
            raise error(status, _direct.FILL_CALLS[call], doing)
        return True

    def copy_to_host(self, dst: Any, src: CudaBuffer, src_offset: int, stream=None) -> None:
        """Copy ``dst.nbytes`` bytes of ``src`` from ``src_offset`` into host array ``dst``.

        A small waited-for copy (a scalar, a count: every ``int(x)`` and the size of a
        compaction) lands in a pinned bounce buffer first: one asynchronous copy and one
        wait, instead of a wait for the queue, the driver's staged pageable copy and a
        second wait."""
        dst = host_array(dst, writable=True)
        address = _span(src, src_offset, dst.nbytes, "source")
        self._context.ensure_current()
        s = stream or self._default_stream
        if stream is None and dst.nbytes <= BOUNCE:
            self._bounced_read(dst, address, s)
            return
        if stream is None and s.completed < s.submitted:
            s.synchronize()  # a copy to pageable memory would wait in the driver, deaf to Ctrl-C
        check(
            cu.cuMemcpyDtoHAsync(dst.ctypes.data, address, dst.nbytes, s.handle),
            "cuMemcpyDtoHAsync",
            f"copying {dst.nbytes} bytes to the host",
        )
        s.submitted += 1
        if stream is None:
            s.synchronize()

    def _bounced_read(self, dst, address: int, s: CudaStream) -> None:
        """:meth:`copy_to_host` of at most :data:`BOUNCE` bytes through this thread's
        pinned bounce buffer (per thread: a wait inside must not hold other threads')."""
        local = self._bounce_local
        bounce = getattr(local, "buffer", None)
        if bounce is None:
            bounce = local.buffer = PinnedHostMemory(BOUNCE, self._context)
        n = dst.nbytes
        check(
            cu.cuMemcpyDtoHAsync(bounce.ptr, address, n, s.handle),
            "cuMemcpyDtoHAsync",
            f"copying {n} bytes to the host",
        )
        s.submitted += 1
        s.synchronize()
        ctypes.memmove(dst.ctypes.data, bounce.ptr, n)

    def copy_device(
        self,
        dst: CudaBuffer,
        dst_offset: int,
        src: CudaBuffer,
        src_offset: int,
        nbytes: int,
        stream=None,
    ) -> None:
        """Asynchronous device-to-device copy of ``nbytes`` on ``stream`` (default stream)."""
        to = _span(dst, dst_offset, nbytes, "destination")
        frm = _span(src, src_offset, nbytes, "source")
        self._context.ensure_current()
        s = stream or self._default_stream
        check(
            cu.cuMemcpyDtoDAsync(to, frm, nbytes, s.handle),
            "cuMemcpyDtoDAsync",
            f"copying {nbytes} bytes on the device",
        )
        s.submitted += 1

    @classmethod
    def open_device(cls, index: int) -> CudaBackend:
        """The backend on CUDA device ``index`` (its primary context, its own streams)."""
        return cls(index)

    def copy_peer(self, dst, dst_offset, src_backend, src, src_offset, nbytes, stream=None):
        """``cuMemcpyPeerAsync`` from another CUDA device: direct over NVLink/PCIe where
        the two devices can access each other (peer access is enabled once per pair),
        else staged by the driver.  Events order it after the source device's queued work,
        and that device's later work (reusing ``src``) after it."""
        if not isinstance(src_backend, CudaBackend):
            return False
        to = _span(dst, dst_offset, nbytes, "destination")
        frm = _span(src, src_offset, nbytes, "source")
        s = stream or self._default_stream
        theirs = src_backend.default_stream
        self._enable_peer_access(src_backend)
        before = src_backend.create_event()
        before.record(theirs)
        s.wait_event(before)
        self._context.ensure_current()
        check(
            cu.cuMemcpyPeerAsync(
                to, self._context.handle, frm, src_backend.context.handle, nbytes, s.handle
            ),
            "cuMemcpyPeerAsync",
            f"copying {nbytes} bytes from device {src_backend.device.index} to device "
            f"{self._index}",
        )
        s.submitted += 1
        after = self.create_event()
        after.record(s)
        theirs.wait_event(after)
        return True

    def _enable_peer_access(self, other: CudaBackend) -> bool:
        """Let this context reach ``other``'s memory directly, once per pair; False when
        the two devices cannot (the driver then stages peer copies through the host)."""
        peers = self.__dict__.setdefault("_peers", {})
        if other._index not in peers:
            can = check(
                cu.cuDeviceCanAccessPeer(self._cu_device, other._cu_device),
                "cuDeviceCanAccessPeer",
            )
            if can:
                self._context.ensure_current()
                (err,) = cu.cuCtxEnablePeerAccess(other.context.handle, 0)
                already = cu.CUresult.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
                can = not err or err == already
            peers[other._index] = bool(can)
        return peers[other._index]

    def fill_zero(self, dst: CudaBuffer, offset: int, nbytes: int, stream=None) -> None:
        """Asynchronously set ``nbytes`` bytes of ``dst`` to zero (``cuMemsetD8Async``)."""
        address = _span(dst, offset, nbytes, "destination")
        self._context.ensure_current()
        s = stream or self._default_stream
        check(cu.cuMemsetD8Async(address, 0, nbytes, s.handle), "cuMemsetD8Async")
        s.submitted += 1

    def is_pinned(self, host: Any) -> bool:
        """Whether the NumPy array ``host`` is in page-locked memory (``cuMemHostAlloc``,
        ``cuMemHostRegister``, another library's pinned buffer): the driver then copies it
        at the copy engine's rate with no staging (``cuPointerGetAttribute``, ~1 µs)."""
        ptr = getattr(getattr(host, "ctypes", None), "data", 0)
        if not ptr:
            return False
        err, kind = cu.cuPointerGetAttribute(_MEMORY_TYPE, ptr)
        return not err and int(kind) == _HOST

    def pin_host(self, address: int, nbytes: int) -> bool:
        """Register host memory with the driver (``cuMemHostRegister``, portable to every
        context): ~1 ms for 16 MiB on the H200 host, after which copies to and from it run
        at the copy engine's rate.  False if the driver refuses (e.g. a page of it is
        registered already)."""
        self._context.ensure_current()
        return not cu.cuMemHostRegister(address, nbytes, _PORTABLE)[0]

    def unpin_host(self, address: int) -> None:
        self._context.ensure_current()
        check(cu.cuMemHostUnregister(address), "cuMemHostUnregister", "unpinning host memory")

    def alloc_host(self, nbytes: int) -> Any:
        """A pinned ``uint8`` NumPy array of ``nbytes``, freed when it is garbage."""
        return PinnedHostMemory(nbytes, self._context).array

    def alloc_pinned(self, nbytes: int) -> PinnedHostMemory:
        """Pinned host memory with an explicit :meth:`PinnedHostMemory.close`."""
        return PinnedHostMemory(nbytes, self._context)

    def grid_barrier(self, stream=None) -> int:
        """The device address of ``stream``'s grid-barrier word (``ember.grid_sync``):
        launches on one stream run one after the other, so they can share it; it is
        allocated once per stream and never reset (the barrier works from any value)."""
        s = stream or self._default_stream
        words = self.__dict__.setdefault("_grid_words", {})
        word = words.get(s)
        if word is None:
            word = words[s] = self.alloc(4)
            self.fill_zero(word, 0, 4, s)
        return word.handle

    def error_memory(self, nbytes: int):
        """The claim word and error record of failing kernels (``backends/cuda/record.py``)."""
        from ember.backends.cuda.record import CudaErrorMemory

        return CudaErrorMemory(self._context, nbytes)

    # ------------------------------------------------------------------ vendor libraries
    def blas(self):
        """cuBLAS on this device (:class:`ember.backends.cuda.blas.Blas`), made on first
        use; None when libcublas is not installed (the reason: :attr:`vendor_missing`)."""
        return self._vendor("blas", "ember.backends.cuda.blas", "Blas")

    def solver(self):
        """cuSOLVER on this device (:class:`ember.backends.cuda.solver.Solver`), or None."""
        return self._vendor("solver", "ember.backends.cuda.solver", "Solver")

    def fft(self):
        """cuFFT on this device (:class:`ember.backends.cuda.cufft.Fft`), or None."""
        return self._vendor("fft", "ember.backends.cuda.cufft", "Fft")

    def _vendor(self, what: str, module: str, cls: str):
        libs = self.__dict__.setdefault("_libs", {})
        if what not in libs:
            import importlib

            from ember.backends.cuda.vendor import VendorUnavailable

            try:
                libs[what] = getattr(importlib.import_module(module), cls)(self)
            except VendorUnavailable as exc:
                libs[what] = None
                self.__dict__.setdefault("vendor_missing", {})[what] = str(exc)
        return libs[what]

    # ------------------------------------------------------------------ streams & events
    def create_stream(self, priority: int = 0) -> CudaStream:
        """A new non-blocking stream."""
        stream = CudaStream(self._context, priority)
        stream.registry = self._streams
        self._streams.add(stream)
        return stream

    @property
    def default_stream(self) -> CudaStream:
        """Ember's default stream: a non-blocking stream, not the legacy NULL stream."""
        return self._default_stream

    def create_event(self, timing: bool = False) -> CudaEvent:
        """A new event; ``timing=True`` enables :meth:`CudaEvent.elapsed_ms`."""
        return CudaEvent(self._context, timing)

    def synchronize(self, blocking: bool | None = None, spin: bool | None = None) -> None:
        """Wait for all work Ember submitted to the device.

        No stream busy: no driver call.  One busy stream (or ``blocking=True``): that
        stream's wait, with its spin → yield → block policy.  Several, a stream closed with
        work running, or ``EMBER_SYNC=plain``: one device-wide ``cuCtxSynchronize``.
        ``blocking`` and ``spin`` are those of :meth:`CudaStream.synchronize`.
        """
        streams = self._streams
        plain = settings.sync == "plain"
        busy = streams.busy()
        if not (plain or streams.orphaned):
            if not busy:
                return
            if len(busy) == 1 or blocking:
                return wait_all(busy, blocking, spin)
        streams.orphaned = False  # before the wait: an orphan made during it sets it again
        self._device_wait()
        for stream, target in busy:
            stream._mark(target)

    def wait_for_foreign_stream(self, handle: int) -> None:
        """Order Ember's default stream after the work queued so far on the foreign stream
        ``handle`` (an event recorded there, waited for on the device)."""
        event = self.create_event()
        self._context.ensure_current()
        check(cu.cuEventRecord(event.handle, cu.CUstream(handle)), "cuEventRecord")
        event.submitted += 1
        self._default_stream.wait_event(event)

    def make_foreign_stream_wait(self, handle: int) -> None:
        """Make the foreign stream ``handle`` (1: the legacy default stream) wait on the
        device for the work queued so far on Ember's default stream."""
        ours = self._default_stream
        if ours.query():
            return  # nothing in flight: nothing to order
        event = self.create_event()
        event.record(ours)
        check(cu.cuStreamWaitEvent(cu.CUstream(handle), event.handle, 0), "cuStreamWaitEvent")

    async def synchronize_async(self) -> None:
        """:meth:`synchronize` without blocking the running event loop."""
        if self._streams.orphaned:
            import asyncio

            await asyncio.get_running_loop().run_in_executor(None, self.synchronize)
            return
        await wait_all_async(self._streams.busy())

    def _device_wait(self) -> None:
        """``cuCtxSynchronize``: wait for everything queued in the context (GIL released;
        interruptible by Ctrl-C, see :func:`ember.runtime.sync.interruptible`)."""
        interruptible(self._context_synchronize)

    def _context_synchronize(self) -> None:
        self._context.ensure_current()  # also runs on a waiter thread (sync.interruptible)
        check(cu.cuCtxSynchronize(), "cuCtxSynchronize", "waiting for the device")

    # ------------------------------------------------------------------ code
    def compile(self, source: str, name: str = "kernel", options: Sequence[str] = ()) -> bytes:
        """CUDA C++ → cubin for this device's exact ``sm_XX`` (NVRTC)."""
        from ember.backends.cuda.nvrtc import compile_cubin

        return compile_cubin(source, self._info.arch, name, options)

    @classmethod
    def inspect_offline(cls, stage, source, target, name, options=()) -> Any:
        """``ptx``, ``cubin-info``, ``sass`` or ``resources`` of ``source`` from NVRTC for
        ``target``'s architecture (no GPU needed; :mod:`.toolkit`)."""
        from ember.backends.cuda import toolkit

        return toolkit.offline(stage, source, target.arch or "sm_90", name, tuple(options))

    def disassemble(self, binary: bytes) -> str:
        """The SASS of a cubin (``nvdisasm`` or ``cuobjdump`` from the CUDA toolkit)."""
        from ember.backends.cuda import toolkit

        return toolkit.sass(binary)

    def check_binary(self, binary: bytes) -> None:
        """:class:`BinaryError` when ``binary`` is not a well-formed cubin, fatbin or PTX."""
        check_cuda_image(bytes(binary))

    def load_module(self, binary: bytes) -> CudaModule:
        """Load a cubin made by :meth:`compile` (checked first: :meth:`check_binary`)."""
        return CudaModule(binary, self._context, self._default_stream)

    def close(self) -> None:
        """Destroy the default stream and release the primary context.  Idempotent."""
        if self._pool_start is not None:
            self._pool_start.join()  # it uses the context and the stream
        if self._context.alive:
            self._default_stream.close()
            self._context.close()

    def __repr__(self) -> str:
        return f"<CudaBackend {self._info.summary()}>"


def _span(buffer: Buffer, offset: int, nbytes: int, what: str) -> int:
    """Address of ``buffer[offset:offset+nbytes]``; ValueError when it is out of range.

    Any :class:`Buffer` whose ``handle`` is a CUDA device address works (the caching
    allocator's pooled buffers as well as :class:`CudaBuffer`).
    """
    ptr = getattr(buffer, "handle", None)
    if not isinstance(ptr, int) or not isinstance(buffer, Buffer):
        raise TypeError(f"the {what} must be a CUDA buffer (backend.alloc), got {buffer!r}")
    if not ptr:
        raise ClosedError(f"the {what} buffer was closed (freed); allocate a new one")
    check_range(what, offset, nbytes, buffer.nbytes)
    return ptr + offset
