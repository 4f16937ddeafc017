"""OpenCL programs: build (source → binary), load (binary → module), kernels and launch.

Binaries
    :func:`compile_program` returns the device binary of the built program
    (``CL_PROGRAM_BINARIES``: PoCL's ``poclbin`` archive, NVIDIA's PTX, AMD's ELF...).  A
    driver that returns an empty binary gets a *source binary* instead: :data:`SOURCE_MARKER`,
    one JSON line with the build options, then the source.  :func:`load_program` rebuilds
    such a binary from source, so caches and bundles work everywhere, only slower there.

Launch conventions (:class:`OpenCLFunction`)
    * OpenCL's global size is ``grid * block`` per dimension, its local size ``block``.
    * A ``PTR`` parameter takes a ``cl.Buffer`` (:meth:`OpenCLBackend.native_pointer`); an
      Ember buffer is accepted too.  There is no pointer offset: see :mod:`.memory`.
    * A scalar parameter takes a Python or NumPy number; it is converted like
      ``DType.numpy.type(value)`` (NumPy's rules) and packed with the parameter's exact size.
    * Dynamic local memory (CUDA's ``extern __shared__``): the kernel declares one extra,
      *trailing* ``__local`` pointer parameter, not listed in ``params`` and not passed in
      ``args``; ``shared_mem`` bytes are bound to it at each launch (at least 1 byte, since
      OpenCL refuses an empty ``__local`` argument).  ``shared_mem > 0`` for a kernel without
      that parameter is a :class:`LaunchError`.
"""

from __future__ import annotations

import json
import struct
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember.backends import binaries
from ember.backends.opencl.check import build_log, cl, driver_error
from ember.backends.opencl.device import CPU_NAME_HINT
from ember.backends.opencl.stream import OpenCLStream
from ember.dtypes import dtype as as_dtype
from ember.errors import BinaryError, CompileError, LaunchError, numbered
from ember.runtime.backend import PTR, Buffer, Function, Module
from ember.runtime.checks import LaunchLimits, check_arg_count, dim3

SOURCE_MARKER = b"ember-opencl-source-v1\n"
# OpenCL states no limit on the number of work-groups; PoCL's CPU scheduler counts them in
# 32 bits and crashes past it (SIGILL, or an assert: issue 18), so no OpenCL launch may
# exceed it.  Work-group sizes are the driver's to refuse (it does, with an error).
MAX_GROUPS = 2**32 - 1
MAX_GLOBAL = 2**63 - 1  # a global size must fit size_t
LIMITS = LaunchLimits((MAX_GROUPS,) * 3, MAX_GROUPS, (MAX_GLOBAL,) * 3, MAX_GLOBAL)


# --------------------------------------------------------------------------- building


def compile_program(
    context: cl.Context, device: cl.Device, source: str, name: str, options: Sequence[str]
) -> bytes:
    """Build OpenCL C ``source`` for ``device``; return its binary (or a source binary).

    Raises
    ------
    CompileError
        The build failed; the message has the build log and the numbered source.
    """
    program = build_source(context, device, source, name, options)
    try:
        binary = program.get_info(cl.program_info.BINARIES)[0]
    except cl.Error as exc:
        raise driver_error(exc, f"reading the binary of {name!r}") from exc
    if not binary:
        return pack_source(source, options)
    return bytes(binary)


def build_source(
    context: cl.Context, device: cl.Device, source: str, name: str, options: Sequence[str]
) -> cl.Program:
    """A built program from ``source``; :class:`CompileError` when the build fails."""
    try:  # no pyopencl compiler-output nag: see check.py
        return cl.Program(context, source).build(options=list(options), cache_dir=False)
    except cl.Error as exc:
        raise compile_error(exc, device, source, name, options) from None


def compile_error(
    exc: cl.Error, device: cl.Device, source: str, name: str, options: Sequence[str]
) -> CompileError:
    """The :class:`CompileError` for a failed build: log, hint, numbered source."""
    log = build_log(exc)
    hint = f"\n{CPU_NAME_HINT}" if "unknown target CPU" in log else ""
    opts = f" with options {' '.join(options)!r}" if options else ""
    message = (
        f"OpenCL C build of kernel {name!r} failed on {device.name.strip()} "
        f"({device.platform.name.strip()}){opts}:\n{log}{hint}\n\n"
        f"Source:\n{numbered(source)}"
    )
    return CompileError(message, log=log, source=source)


def pack_source(source: str, options: Sequence[str]) -> bytes:
    """A *source binary*: the marker, the options as one JSON line, the source."""
    header = json.dumps({"options": list(options)}).encode()
    return SOURCE_MARKER + header + b"\n" + source.encode()


def unpack_source(binary: bytes) -> tuple[str, list[str]]:
    """The source and options of a source binary made by :func:`pack_source`."""
    header, _, source = binary[len(SOURCE_MARKER) :].partition(b"\n")
    try:
        options = json.loads(header)["options"]
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            raise TypeError("the options are not a list of strings")
        return source.decode(), options
    except (ValueError, KeyError, TypeError) as exc:
        raise BinaryError(f"a source binary is damaged ({exc}); it was not built") from None


def check_binary(binary: bytes) -> None:
    """Raise :class:`BinaryError` where ``binary`` is damaged as far as its format shows
    (``ember.backends.binaries``): PoCL archives and ELF images are walked; a source binary
    is parsed; other vendors' formats are opaque and only refused when empty."""
    if not binary:
        raise BinaryError("the OpenCL program binary is empty; it was not loaded")
    if binary.startswith(SOURCE_MARKER):
        unpack_source(binary)
    elif binary.startswith(binaries.POCL_MAGIC):
        binaries.check_pocl(binary)
    elif binary.startswith(binaries.ELF_MAGIC):
        binaries.check_elf(binary, f"the {len(binary)}-byte OpenCL program binary")


def load_program(context: cl.Context, device: cl.Device, binary: bytes) -> cl.Program:
    """A built program from a binary made by :func:`compile_program` (for this device);
    :class:`BinaryError` before any driver call when the binary is damaged."""
    check_binary(binary)
    if binary.startswith(SOURCE_MARKER):
        source, options = unpack_source(binary)
        return build_source(context, device, source, "<source binary>", options)
    try:
        return cl.Program(context, [device], [binary]).build()
    except cl.Error as exc:
        raise driver_error(exc, f"loading a {len(binary)}-byte OpenCL binary") from exc


# --------------------------------------------------------------------------- modules


class OpenCLModule(Module):
    """A built OpenCL program.

    Parameters
    ----------
    program : pyopencl.Program
        The built program.
    device : pyopencl.Device
        The device it was built for.
    default_stream : OpenCLStream
        Where launches go when no stream is given.
    """

    def __init__(self, program: cl.Program, device: cl.Device, default_stream: OpenCLStream):
        self.program = program
        self.device = device
        self.default_stream = default_stream

    @property
    def handle(self) -> cl.Program:
        """The ``cl.Program``."""
        return self.program

    def kernel_names(self) -> list[str]:
        """The names of the kernels in the program."""
        names = self.program.get_info(cl.program_info.KERNEL_NAMES)
        return [n for n in names.split(";") if n]

    def function(self, name: str, params: Sequence[Any]) -> OpenCLFunction:
        """Kernel ``name`` taking ``params`` (one DType or ``"ptr"`` each).

        Raises
        ------
        LaunchError
            No kernel of that name, or its parameter count does not match ``params``.
        """
        try:
            kernel = cl.Kernel(self.program, name)
        except cl.Error as exc:
            raise LaunchError(
                f"the OpenCL program has no kernel named {name!r}; it has: "
                f"{', '.join(self.kernel_names()) or '(none)'}"
            ) from exc
        return OpenCLFunction(kernel, name, params, self.default_stream)

    def __repr__(self) -> str:
        return f"<OpenCLModule kernels={self.kernel_names()}>"


# --------------------------------------------------------------------------- launch

_CL_BUFFER = cl.Buffer
# pyopencl packs typed scalars in C++: a value that does not fit raises a plain RuntimeError
# ("std::bad_cast"), not a cl.Error.
_BAD_VALUE = (struct.error, TypeError, ValueError, OverflowError, RuntimeError)


class OpenCLFunction(Function):
    """A kernel ready to launch; see the module docstring for the argument conventions.

    Parameters
    ----------
    kernel : pyopencl.Kernel
        The kernel (Ember's own: its argument slots are set at every launch).
    name : str
        The kernel's name.
    params : sequence
        One :class:`DType` (or anything :func:`ember.dtype` takes) or ``"ptr"`` per
        parameter, without a trailing ``__local`` parameter.
    default_stream : OpenCLStream
        Where launches go when no stream is given.
    """

    def __init__(
        self, kernel: cl.Kernel, name: str, params: Sequence[Any], default_stream: OpenCLStream
    ):
        self.name = name
        self.params = tuple(p if p == PTR else as_dtype(p) for p in params)
        self.kernel = kernel
        self.local_tail = _has_local_tail(kernel, name, len(self.params))
        self._nargs = len(self.params)
        self._pointers = tuple(i for i, p in enumerate(self.params) if p == PTR)
        self._scalars = tuple((i, p) for i, p in enumerate(self.params) if p != PTR)
        # pyopencl wraps out-of-range 8-bit integers (300 -> 44) where NumPy raises: those
        # parameters are always converted here unless already of the exact NumPy type.
        self._strict = tuple((i, p.numpy.type) for i, p in self._scalars if p.kind in "iu"
                             and p.itemsize == 1)  # fmt: skip
        types = [None if p == PTR else p.numpy for p in self.params]
        # pyopencl's typed invoker packs scalars with struct (no per-launch type dispatch):
        # 3.5 µs per launch on PoCL, against 28 µs for kernel.set_arg with NumPy scalars.
        kernel.set_arg_types(types + [None] * self.local_tail)
        self._default = default_stream
        self._lock = threading.Lock()  # a cl.Kernel's argument slots are shared state
        self._local: tuple[int, Any] = (0, None)

    def launch(self, grid, block, args, shared_mem=0, stream=None) -> None:
        """Enqueue one launch of ``grid`` work-groups of ``block`` work-items on ``stream``.

        ``grid`` and ``block`` are 3-tuples (an int or a shorter tuple also works, slower).

        Raises
        ------
        LaunchError
            Wrong argument count, a value that does not fit its parameter, a bad grid or
            block, ``shared_mem`` for a kernel without a trailing ``__local`` parameter.
        DriverError
            The driver refused the launch (block too large, out of resources...).
        """
        if len(args) != self._nargs:
            check_arg_count(self, args)
        for i in self._pointers:
            if type(args[i]) is not _CL_BUFFER:
                args = self._pointer_args(args)
                break
        for i, kind in self._strict:
            if type(args[i]) is not kind:
                args = self._convert(args)
                break
        if self.local_tail:
            args = (*args, self._local_memory(shared_mem))
        elif shared_mem:
            raise self._no_local_tail(shared_mem)
        try:
            gsize = (grid[0] * block[0], grid[1] * block[1], grid[2] * block[2])
        except (TypeError, IndexError):
            gsize = (0,)
        if 0 in gsize:  # also catches an empty range, which PoCL aborts the process on
            grid, block = dim3(grid, "grid"), dim3(block, "block")
            gsize = (grid[0] * block[0], grid[1] * block[1], grid[2] * block[2])
        if grid[0] * grid[1] * grid[2] > MAX_GROUPS or max(gsize) > MAX_GLOBAL:
            raise LIMITS.error(self.name, tuple(grid), tuple(block))  # PoCL: SIGILL, not an error
        s = stream or self._default
        try:
            with self._lock, s.lock:  # kernel arguments; the stream's `last` (see .stream)
                s.last = self.kernel(s.queue, gsize, block, *args)
                s.submitted += 1  # after the enqueue: ember.runtime.sync's idle-stream fast path
        except _BAD_VALUE:
            self._launch_slowly(gsize, grid, block, args, shared_mem, s)
        except cl.Error as exc:
            raise self._refused(exc, grid, block, shared_mem) from exc

    def _launch_slowly(self, gsize, grid, block, args, shared_mem, s: OpenCLStream) -> None:
        """Error path of :meth:`launch`: convert the scalars NumPy's way, try again."""
        grid, block = dim3(grid, "grid"), dim3(block, "block")
        gsize = tuple(g * b for g, b in zip(grid, block, strict=True))
        if s.queue is None:
            raise LaunchError(f"cannot launch kernel {self.name!r} on a closed stream")
        args = self._convert(args)
        try:
            with self._lock, s.lock:
                s.last = self.kernel(s.queue, gsize, block, *args)
                s.submitted += 1
        except cl.Error as exc:
            raise self._refused(exc, grid, block, shared_mem) from exc
        except _BAD_VALUE as exc:
            raise LaunchError(f"cannot launch kernel {self.name!r}: {exc}") from exc

    def _convert(self, args: Sequence[Any]) -> list[Any]:
        """Each scalar as its parameter's NumPy scalar type; LaunchError naming a bad one."""
        out = list(args)
        for i, param in self._scalars:
            value = args[i]
            kind = param.numpy.type
            if type(value) is kind:
                continue
            converted = None
            if not isinstance(value, (str, bytes)) and value is not None:
                try:
                    converted = kind(value)
                except _BAD_VALUE:
                    converted = None
            if type(converted) is not kind:  # rejected, or an array came back
                raise LaunchError(_bad_scalar(self.name, i, param.name, value))
            out[i] = converted
        return out

    def _pointer_args(self, args: Sequence[Any]) -> list[Any]:
        """Slow path for pointer arguments: unwrap Ember buffers, refuse anything else."""
        out = list(args)
        for i in self._pointers:
            value = args[i]
            if isinstance(value, cl.MemoryObjectHolder):
                continue
            handle = getattr(value, "handle", None) if isinstance(value, Buffer) else None
            if not isinstance(handle, cl.MemoryObjectHolder):
                raise LaunchError(_bad_pointer(self.name, i, value))
            out[i] = handle
        return out

    def _local_memory(self, nbytes: Any) -> cl.LocalMemory:
        """The ``__local`` argument for ``nbytes`` (reused while the size does not change)."""
        size, memory = self._local
        if nbytes == size:
            return memory
        if not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
            raise LaunchError(f"shared_mem must be a non-negative int, got {nbytes!r}")
        wanted = max(int(nbytes), 1)  # OpenCL refuses a zero-size __local argument
        if wanted != size:
            memory = cl.LocalMemory(wanted)
            self._local = (wanted, memory)
        return memory

    def _no_local_tail(self, shared_mem: Any) -> LaunchError:
        if not isinstance(shared_mem, int) or shared_mem < 0:
            return LaunchError(f"shared_mem must be a non-negative int, got {shared_mem!r}")
        return LaunchError(
            f"kernel {self.name!r} was launched with shared_mem={shared_mem} but has no "
            "trailing __local pointer parameter to receive it; in OpenCL C, dynamic local "
            "memory is declared as a last parameter such as `__local float* scratch`"
        )

    def _refused(self, exc: cl.Error, grid, block, shared_mem) -> Exception:
        action = (
            f"launching kernel {self.name!r} with grid={tuple(grid)}, block={tuple(block)}, "
            f"shared_mem={shared_mem}"
        )
        return driver_error(exc, action)

    def work_group_info(self, device: cl.Device) -> dict[str, int]:
        """The kernel's work-group limits on ``device`` (max size, preferred multiple...)."""
        info = cl.kernel_work_group_info
        names = {
            "max_threads_per_block": info.WORK_GROUP_SIZE,
            "preferred_multiple": info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
            "local_size_bytes": info.LOCAL_MEM_SIZE,
            "private_size_bytes": info.PRIVATE_MEM_SIZE,
        }
        return {k: int(self.kernel.get_work_group_info(v, device)) for k, v in names.items()}

    def resources(self) -> dict[str, int]:
        """:meth:`work_group_info` in the names of :mod:`ember.diagnostics.inspect`."""
        info = self.work_group_info(self.kernel.context.devices[0])  # one-device context
        return {
            "shared_bytes": info["local_size_bytes"],
            "local_bytes": info["private_size_bytes"],
            "max_threads_per_block": info["max_threads_per_block"],
        }

    def __repr__(self) -> str:
        shown = ", ".join(str(p) for p in self.params)
        tail = ", __local" if self.local_tail else ""
        return f"<OpenCLFunction {self.name}({shown}{tail})>"


def _has_local_tail(kernel: cl.Kernel, name: str, nparams: int) -> bool:
    """True when the kernel has exactly one parameter more than ``params`` (``__local``)."""
    count = int(kernel.num_args)
    if count not in (nparams, nparams + 1):
        raise LaunchError(
            f"kernel {name!r} has {count} parameter(s) but was described with {nparams}; "
            "give one DType or 'ptr' per parameter (a trailing __local pointer for dynamic "
            "local memory is the only one left out)"
        )
    return count == nparams + 1


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _bad_scalar(kernel: str, index: int, type_name: str, value: Any) -> str:
    return (
        f"kernel {kernel!r}: argument {index} must be a {type_name} scalar; cannot convert "
        f"{type(value).__name__} {_shown(value)}"
    )


def _bad_pointer(kernel: str, index: int, value: Any) -> str:
    if isinstance(value, np.ndarray):
        return (
            f"kernel {kernel!r}: argument {index} is a NumPy array but the parameter is a "
            "device pointer; copy it to the device first with ember.asarray(x)"
        )
    return (
        f"kernel {kernel!r}: argument {index} must be an OpenCL device buffer for a pointer "
        f"parameter (backend.native_pointer(buffer)), got {type(value).__name__} "
        f"{_shown(value)}"
    )
