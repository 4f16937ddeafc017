"""Kernel launch: the packing plan of a kernel's arguments and :class:`CudaFunction`.

This is Ember's hot path, so the work is split in two:

* once per function and thread, a *frame*: one ctypes buffer holding a ``CUlaunchConfig``
  (grid, block, shared memory, stream), one 8-byte slot per argument, and the array of
  pointers to those slots that the driver takes as ``kernelParams``;
* per launch, one ``Struct.pack_into`` that writes the configuration and every argument
  into the frame, and one call of the driver's ``cuLaunchKernelEx`` through ``ctypes``
  (:mod:`.direct`) with three pointers made once: the status tested with a bare ``if err``,
  then ``stream.submitted += 1`` (see :mod:`ember.runtime.sync`).

Where the optional C stub is built (:func:`.direct.native`), :meth:`CudaFunction.launch`
is the stub's launcher, with no Python frame at all: it packs the configuration and the
arguments on the C stack (no frame shared by threads, nothing remembered between launches),
calls ``cuLaunchKernelEx`` and counts the launch on its stream.  A value it cannot pack (a
NumPy scalar for an unsigned parameter, a float16, a grid given as an int), a closed stream
or several devices in use send that launch down the ``ctypes`` path below, which converts,
explains or makes the context current.

Where ``ctypes`` cannot reach the driver's entry point (:func:`.direct.entry` says None)
the launch goes through the driver table's ``cuLaunchKernel`` (:mod:`.cdriver`, or
``cuda.bindings`` under ``EMBER_CUDA_DRIVER=bindings``) with the slots alone;
docs/design/cuda-backend.md compares the three.

The driver reads the frame while the call runs, with the GIL released, so two threads
launching the same function at once must not share one: each thread gets its own through
a ``threading.local`` (~0.05 µs a launch; a per-function lock measured ~0.2-0.33 µs).
"""

from __future__ import annotations

import ctypes
import functools
import struct
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ember.backends.cuda import device as _cuda_device
from ember.backends.cuda import direct as _direct
from ember.backends.cuda.driver import check, cu, error
from ember.dtypes import DType
from ember.dtypes import dtype as to_dtype
from ember.errors import LaunchError
from ember.runtime.backend import PTR, Function
from ember.runtime.checks import LaunchLimits, check_arg_count, dim3

if TYPE_CHECKING:
    from ember.backends.cuda.device import PrimaryContext
    from ember.backends.cuda.module import CudaModule
    from ember.backends.cuda.stream import CudaStream

_launch = cu.cuLaunchKernel  # the driver table's entry: the fallback path

# struct format character of each scalar type; device pointers are 64-bit integers.
_FORMAT = {
    "bool": "?", "int8": "b", "int16": "h", "int32": "i", "int64": "q",
    "uint8": "B", "uint16": "H", "uint32": "I", "uint64": "Q",
    "float16": "e", "float32": "f", "float64": "d", PTR: "Q",
}  # fmt: skip
# The launch limits of every CUDA device since compute capability 3.0 (the programming
# guide's table); the driver refuses larger launches, and these name the limit broken.
LIMITS = LaunchLimits((2**31 - 1, 65535, 65535), (2**31 - 1) * 65535**2, (1024, 1024, 64), 1024)
SLOT = 8  # bytes per argument slot: every supported scalar fits, at its natural alignment
# CUlaunchConfig: grid x/y/z, block x/y/z, shared bytes (unsigned ints), 4 bytes of padding,
# the stream, then attrs (NULL) and numAttrs (0) as 16 zero bytes: 56 bytes in all.
CONFIG = "<7I4xQ16x"
CONFIG_SIZE = struct.calcsize(CONFIG)
_NATIVE_KINDS = frozenset("?bhiqBHIQfd")  # what the C stub packs (float16: the ctypes path)
_DEFAULT_SHARED = 48 * 1024  # dynamic shared memory a launch gets without opting in


def _param_spec(param: Any) -> tuple[str, str]:
    """(display name, struct format character) of one kernel parameter."""
    if isinstance(param, str) and param == PTR:
        return PTR, _FORMAT[PTR]
    try:
        dt = param if isinstance(param, DType) else to_dtype(param)
    except TypeError as exc:
        raise LaunchError(f"kernel parameter type {param!r} is not supported: {exc}") from None
    if dt.name not in _FORMAT:  # complex: Ember kernels take its parts (codegen/abi.py)
        raise LaunchError(
            f"kernel parameter type {dt.name} is not supported: pass a complex number as two "
            "real parameters (its real and imaginary parts)"
        )
    return dt.name, _FORMAT[dt.name]


# The direct launch, generated per arity by CudaFunction._direct_launch ({names}: "a0, a1, ").
# ``last`` remembers the configuration packed in this thread's frame (grid and block only
# when they are tuples, which cannot change; the stream by its address, None once closed),
# so a launch with the configuration of the previous one packs just its arguments.
_LAUNCH_SOURCE = """
def launch(grid, block, args, shared_mem=0, stream=None):
    try:
        buf, go, last = _local.frame
    except AttributeError:
        buf, go, last = _frame()
    s = stream or _default
    if _devices.opened > 1:  # several devices: this function's context, current
        _context.ensure_current()
    try:
        {unpack}
        if grid is not last[0] or block is not last[1] or shared_mem != last[2] or (
            s._address is not last[3]
        ):
            g0, g1, g2 = grid
            b0, b1, b2 = block
            _pack_config(buf, 0, g0, g1, g2, b0, b1, b2, shared_mem, s._address)
            last[:] = _memo(grid, block, shared_mem, s._address)
        {pack}
    except Exception:  # anything unusual: the checked path packs it or says what is wrong
        last[0] = None
        _pack(buf, 0, *_checked(grid, block, shared_mem, s, args))
    err = go()
    if err:
        return _failed(err, grid, block, shared_mem, stream, args)
    s.submitted += 1  # after the enqueue: ember.runtime.sync's idle-stream fast path
"""


def _memo(grid, block, shared_mem, address) -> tuple:
    """What ``last`` holds after packing a configuration (lists are never remembered)."""
    if type(grid) is tuple and type(block) is tuple:
        return (grid, block, shared_mem, address)
    return (None, None, -1, None)


class PackingPlan:
    """How to write one function's arguments: a struct with one 8-byte slot per parameter
    (:attr:`struct`), and the same slots after a ``CUlaunchConfig`` (:attr:`frame_struct`)."""

    def __init__(self, params: Sequence[Any]):
        specs = [_param_spec(p) for p in params]
        self.type_names = tuple(name for name, _ in specs)
        slots = "".join(c + "x" * (SLOT - struct.calcsize("<" + c)) for _, c in specs)
        self.struct = struct.Struct("<" + slots)
        self.frame_struct = struct.Struct(CONFIG + slots)
        self.config_struct = struct.Struct(CONFIG)
        self.count = len(specs)
        self.kinds = "".join(c for _, c in specs).encode()  # the C stub's parameter kinds

    def new_buffers(self) -> tuple[ctypes.Array, ctypes.Array, int]:
        """Fresh (slots, pointer array, pointer array address) for one thread."""
        slots = ctypes.create_string_buffer(max(self.count, 1) * SLOT)
        base = ctypes.addressof(slots)
        pointers = (ctypes.c_void_p * max(self.count, 1))(
            *[base + i * SLOT for i in range(self.count)]
        )
        return slots, pointers, ctypes.addressof(pointers)

    def new_frame(self) -> tuple[ctypes.Array, ctypes.c_void_p, ctypes.c_void_p]:
        """A fresh frame for one thread: (buffer, address of its ``CUlaunchConfig``, address
        of its ``kernelParams``).  Layout: config, slots, pointers to the slots."""
        n = max(self.count, 1)
        buf = ctypes.create_string_buffer(CONFIG_SIZE + 2 * n * SLOT)
        base = ctypes.addressof(buf)
        table = base + CONFIG_SIZE + n * SLOT
        for i in range(self.count):
            ctypes.c_void_p.from_address(table + i * SLOT).value = base + CONFIG_SIZE + i * SLOT
        return buf, ctypes.c_void_p(base), ctypes.c_void_p(table)


class CudaFunction(Function):
    """A kernel of a loaded :class:`CudaModule`, ready to launch.

    Parameters
    ----------
    handle : CUfunction
        The driver's function handle.
    name : str
        The kernel's (``extern "C"``) name.
    params : sequence
        One :class:`DType` (or anything :func:`ember.dtype` takes) or ``"ptr"`` per parameter.
    module : CudaModule
        The module it lives in (kept alive while the function is).
    direct : bool, optional
        Launch through ``ctypes`` (:mod:`.direct`); default: wherever the driver's entry
        point can be had.  ``False`` keeps the ``cuda.bindings`` path (for comparisons).
    native : bool, optional
        Launch through the compiled stub where it is built (default); ``False`` keeps the
        ``ctypes`` path (for comparisons).
    """

    def __init__(
        self,
        handle: cu.CUfunction,
        name: str,
        params: Sequence[Any],
        module: CudaModule,
        direct: bool | None = None,
        native: bool | None = None,
    ):
        self.name = name
        self.params = tuple(params)
        self.handle = handle
        self.module = module
        self._context: PrimaryContext = module.context
        self._default_stream: CudaStream = module.default_stream
        self._plan = PackingPlan(self.params)
        self._pack = self._plan.struct.pack_into
        self._pack_frame = self._plan.frame_struct.pack_into
        self._local = threading.local()
        ex = None if direct is False else _direct.entry("cuLaunchKernelEx")
        self._ex = ex
        self._fptr = _direct.pointer(handle) if ex is not None else None
        # per instance: the stub's call, the direct path's generated code, or the bindings'
        self.launch = self._direct_launch() if ex is not None else self._launch_bindings
        stub = _direct.native() if ex is not None and native is not False else None
        self._native = stub is not None and set(self._plan.kinds.decode()) <= _NATIVE_KINDS
        if self._native:
            self.launch = self._native_launch(stub, self.launch)

    def _frame(self) -> tuple[ctypes.Array, Any, list]:
        """This thread's (frame buffer, bound driver call, configuration it holds), made on
        its first launch."""
        buf, config, params = self._plan.new_frame()
        go = functools.partial(self._ex, config, self._fptr, params, None)
        frame = self._local.frame = (buf, go, [None, None, -1, None])
        return frame

    def launch(self, grid, block, args, shared_mem=0, stream=None) -> None:
        """Enqueue one launch of ``grid`` blocks of ``block`` threads on ``stream``.

        ``grid`` and ``block`` are 3-tuples (an int or shorter tuple also works, slower).
        ``args`` holds one value per parameter: a number for a scalar, an int device address
        (:meth:`CudaBackend.native_pointer`) for a pointer.  ``stream=None`` is Ember's
        default stream.

        Raises
        ------
        LaunchError
            Wrong argument count, a value that does not fit its parameter's type, bad
            launch dimensions, or a closed stream.
        DriverError
            The driver refused the launch (too much shared memory, an invalid handle...).
        """
        # Replaced per instance by the code _direct_launch() generates for this arity;
        # this body is that code's meaning, for readers and for subclasses.
        try:
            buf, go, last = self._local.frame
        except AttributeError:
            buf, go, last = self._frame()
        s = stream or self._default_stream
        last[0] = None
        self._pack_frame(buf, 0, *self._checked(grid, block, shared_mem, s, args))
        err = go()
        if err:
            return self._failed(err, grid, block, shared_mem, stream, args)
        s.submitted += 1

    def _direct_launch(self) -> Any:
        """:meth:`launch` for this function's arity, as a plain function: the arguments
        unpacked into names and packed positionally (a ``*args`` call of ``pack_into`` costs
        twice as much), and no attribute lookups beyond the thread's frame."""
        names = "".join(f"a{i}, " for i in range(self._plan.count))
        pack = f"_pack_args(buf, {CONFIG_SIZE}, {names})" if names else "pass"
        source = _LAUNCH_SOURCE.format(unpack=f"[{names}] = args", pack=pack)
        namespace = {
            "_local": self._local, "_frame": self._frame, "_default": self._default_stream,
            "_pack": self._pack_frame, "_pack_config": self._plan.config_struct.pack_into,
            "_pack_args": self._plan.struct.pack_into, "_memo": _memo,
            "_checked": self._checked, "_failed": self._failed, "_devices": _cuda_device,
            "_context": self._context,
        }  # fmt: skip
        exec(compile(source, f"<ember launch of {self.name}>", "exec"), namespace)  # noqa: S102
        return namespace["launch"]

    def _native_launch(self, stub, slow) -> Any:
        """:meth:`launch` as one call of the C stub's launcher; ``slow`` (the ``ctypes``
        path) takes any launch the stub does not pack (it converts or explains)."""
        return stub.launcher(
            _direct.address(self._ex), int(self.handle), self._plan.kinds,
            self._default_stream, _cuda_device, slow, self._failed,
        )  # fmt: skip

    def guarded_runner(self, guards: tuple, sources: bytes, view, note) -> Any:
        """The specialization's guarded launch in the C stub (``_ccall.runner``), where
        this function launches through the stub; else None."""
        if not self._native:
            return None
        return _direct.native().runner(self.launch, guards, sources, view, note)

    def _checked(self, grid, block, shared_mem, s, args) -> list[Any]:
        """Slow path of :meth:`launch`: every value of the frame, or a LaunchError."""
        grid, block = dim3(grid, "grid"), dim3(block, "block")
        too_large = LIMITS.error(self.name, grid, block)
        if too_large is not None:
            raise too_large
        if not isinstance(shared_mem, int) or not 0 <= shared_mem < 2**32:
            raise LaunchError(f"shared_mem must be a non-negative int, got {shared_mem!r}")
        if getattr(s, "_handle", None) is None:
            raise LaunchError(f"cannot launch kernel {self.name!r} on a closed stream")
        return [*grid, *block, shared_mem, int(s._handle), *self._convert(args)]

    def _buffers(self) -> tuple[ctypes.Array, int]:
        """This thread's (slots, pointer array address) for the bindings' calls."""
        slots, pointers, address = self._plan.new_buffers()
        self._local.keep = pointers  # the pointer array must outlive the launches
        self._local.buffers = (slots, address)
        return slots, address

    def _launch_bindings(self, grid, block, args, shared_mem=0, stream=None) -> None:
        """:meth:`launch` through ``cuda.bindings`` (where :mod:`.direct` has no entry)."""
        try:
            gx, gy, gz = grid
            bx, by, bz = block
        except (TypeError, ValueError):
            (gx, gy, gz), (bx, by, bz) = dim3(grid, "grid"), dim3(block, "block")
        try:
            slots, address = self._local.buffers
        except AttributeError:
            slots, pointers, address = self._plan.new_buffers()
            self._local.keep = pointers  # the pointer array must outlive the launches
            self._local.buffers = (slots, address)
        try:
            self._pack(slots, 0, *args)
        except (struct.error, TypeError):
            self._pack(slots, 0, *self._convert(args))
        s = stream or self._default_stream
        h = s._handle
        if h is None:
            raise LaunchError(f"cannot launch kernel {self.name!r} on a closed stream")
        if _cuda_device.opened > 1:  # several devices: this function's context, current
            self._context.ensure_current()
        try:
            (err,) = _launch(self.handle, gx, gy, gz, bx, by, bz, shared_mem, h, address, 0)
        except (TypeError, ValueError, OverflowError) as exc:
            raise self._bad_config(grid, block, shared_mem, exc) from None
        if err:
            return self._failed(err, (gx, gy, gz), (bx, by, bz), shared_mem, stream, args)
        s.submitted += 1

    def _allow_shared(self, nbytes: int) -> None:
        """Opt in to ``nbytes`` of dynamic shared memory (above 48 KiB CUDA asks for it)."""
        A = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        check(cu.cuFuncSetAttribute(self.handle, A, nbytes), "cuFuncSetAttribute")
        self._shared_allowed = nbytes  # only once the driver agreed: a refusal is retried

    def launch_cooperative(self, grid, block, args, shared_mem=0, stream=None) -> None:
        """:meth:`launch` with every block resident at once (``cuLaunchCooperativeKernel``),
        for kernels that call ``ember.grid_sync()``.

        Raises
        ------
        LaunchError
            The grid has more blocks than fit on the device at once (the message says how
            many fit, from the occupancy of this block size and shared memory).
        """
        (gx, gy, gz), (bx, by, bz) = dim3(grid, "grid"), dim3(block, "block")
        blocks, threads = gx * gy * gz, bx * by * bz
        if shared_mem > _DEFAULT_SHARED and shared_mem > getattr(self, "_shared_allowed", 0):
            self._allow_shared(shared_mem)
        fit = self.co_resident(threads, shared_mem)
        if blocks > fit:
            raise LaunchError(
                f"kernel {self.name!r} calls ember.grid_sync(), so all its blocks must be "
                f"resident at once: {blocks} blocks of {threads} threads were asked, but at "
                f"most {fit} fit on this device ({fit // max(self._sms(), 1)} per "
                f"multiprocessor x {self._sms()}); launch at most {fit} blocks and loop over "
                "the work (a grid-stride loop)"
            )
        try:
            slots, address = self._local.buffers
        except AttributeError:
            slots, address = self._buffers()
        try:
            self._pack(slots, 0, *args)
        except (struct.error, TypeError):
            self._pack(slots, 0, *self._convert(args))
        s = stream or self._default_stream
        (err,) = cu.cuLaunchCooperativeKernel(
            self.handle, gx, gy, gz, bx, by, bz, shared_mem, s._handle, address
        )
        if err:
            raise error(
                err, "cuLaunchCooperativeKernel",
                f"launching kernel {self.name!r} cooperatively with grid={(gx, gy, gz)}, "
                f"block={(bx, by, bz)}, shared_mem={shared_mem}",
            )  # fmt: skip
        s.submitted += 1

    def co_resident(self, threads: int, shared_mem: int = 0) -> int:
        """How many blocks of ``threads`` threads (and ``shared_mem`` dynamic shared bytes)
        the device runs at once (cached per configuration)."""
        cache = self.__dict__.setdefault("_co_resident", {})
        key = (threads, shared_mem)
        if key not in cache:
            cache[key] = self.occupancy(threads, shared_mem) * self._sms()
        return cache[key]

    def _sms(self) -> int:
        A = cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
        device = check(cu.cuCtxGetDevice(), "cuCtxGetDevice")
        return check(cu.cuDeviceGetAttribute(A, device), "cuDeviceGetAttribute")

    def _failed(self, err, grid, block, shared_mem, stream, args) -> None:
        """Error path of :meth:`launch`: retry once without a current context, or once
        after allowing more than 48 KiB of dynamic shared memory, else raise (a
        :class:`LaunchError` naming the limit when the grid or block is too large)."""
        if self._context.retry_on_invalid_context(err):
            return self.launch(grid, block, args, shared_mem, stream)
        if shared_mem > _DEFAULT_SHARED and shared_mem > getattr(self, "_shared_allowed", 0):
            self._allow_shared(shared_mem)
            return self.launch(grid, block, args, shared_mem, stream)
        grid, block = dim3(grid, "grid"), dim3(block, "block")
        too_large = LIMITS.error(self.name, grid, block)
        if too_large is not None:
            raise too_large
        raise error(
            err,
            "cuLaunchKernel",
            f"launching kernel {self.name!r} with grid={grid}, block={block}, "
            f"shared_mem={shared_mem}",
        )

    def _bad_config(self, grid, block, shared_mem, exc: Exception) -> LaunchError:
        """The LaunchError for launch dimensions the bindings could not convert."""
        grid, block = dim3(grid, "grid"), dim3(block, "block")
        too_large = LIMITS.error(self.name, grid, block)
        if too_large is not None:
            return too_large
        if not isinstance(shared_mem, int) or shared_mem < 0:
            return LaunchError(f"shared_mem must be a non-negative int, got {shared_mem!r}")
        return LaunchError(f"cannot launch kernel {self.name!r}: {exc}")

    def _convert(self, args: Sequence[Any]) -> list[Any]:
        """Slow path: coerce pointer-like values; raise LaunchError naming a bad argument."""
        check_arg_count(self, args)
        out = []
        for i, (value, type_name) in enumerate(zip(args, self._plan.type_names, strict=True)):
            if type_name == PTR and not isinstance(value, (int, float, str)):
                value = _as_address(value)
            elif hasattr(value, "item") and not isinstance(value, (int, float)):
                value = value.item()  # a NumPy scalar: numpy.bool_ has no __index__ for "B"
            try:
                struct.pack("<" + _FORMAT[type_name], value)
            except (struct.error, TypeError, OverflowError) as exc:
                raise LaunchError(_bad_arg_message(self.name, i, type_name, value, exc)) from None
            out.append(value)
        return out

    def attributes(self) -> dict[str, int]:
        """Registers, shared/local/constant memory and max block size the compiler gave it."""
        A = cu.CUfunction_attribute
        names = {
            "num_regs": A.CU_FUNC_ATTRIBUTE_NUM_REGS,
            "shared_size_bytes": A.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
            "local_size_bytes": A.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
            "const_size_bytes": A.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,
            "max_threads_per_block": A.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        }
        return {
            key: check(cu.cuFuncGetAttribute(attr, self.handle), "cuFuncGetAttribute")
            for key, attr in names.items()
        }

    def resources(self) -> dict[str, int]:
        """:meth:`attributes` in the names of :mod:`ember.diagnostics.inspect`."""
        return {_RESOURCES[k]: int(v) for k, v in self.attributes().items() if k in _RESOURCES}

    def occupancy(self, block_threads: int, shared_mem: int = 0) -> int:
        """Blocks of ``block_threads`` threads (and ``shared_mem`` dynamic shared bytes)
        that can be resident on one SM at once (``cuOccupancyMaxActiveBlocksPerMultiprocessor``)."""
        self._context.ensure_current()
        return check(
            cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(self.handle, block_threads, shared_mem),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        )

    def __repr__(self) -> str:
        return f"<CudaFunction {self.name}({', '.join(self._plan.type_names)})>"


_RESOURCES = {
    "num_regs": "registers",
    "shared_size_bytes": "shared_bytes",
    "local_size_bytes": "local_bytes",
    "const_size_bytes": "const_bytes",
    "max_threads_per_block": "max_threads_per_block",
}


def _as_address(value: Any) -> Any:
    """A device address from an object that knows its own (a buffer, a CUdeviceptr)."""
    ptr = getattr(value, "handle", None)  # an Ember buffer (CudaBuffer or a pooled one)
    if isinstance(ptr, int):
        return ptr
    try:
        return int(value)  # CUdeviceptr and other int-convertible handles
    except (TypeError, ValueError):
        return value


def _bad_arg_message(kernel: str, index: int, type_name: str, value: Any, exc: Exception) -> str:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    expected = "a device pointer (int address)" if type_name == PTR else f"a {type_name} value"
    hint = ""
    if type_name == PTR and type(value).__module__.startswith("numpy"):
        hint = "; a NumPy array is host memory: copy it to the device first (ember.asarray(x))"
    elif type_name == PTR:
        hint = "; pass backend.native_pointer(buffer) or an Ember array"
    return (
        f"argument {index} of kernel {kernel!r} must be {expected}, got "
        f"{type(value).__name__} {shown} ({exc}){hint}"
    )
