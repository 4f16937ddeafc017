"""The CUDA driver API through ``ctypes``, in ``cuda.bindings``' calling convention, for
exactly the calls the CUDA backend makes.

Importing ``cuda.bindings.driver`` costs 25-35 ms of Python work in a fresh process (most
of it ``cuda.pathfinder``, which it imports to find ``libcuda``), all of it holding the GIL
beside a program's own first steps; the first array operation of a program waited for it
(issue 19).  This module needs only ``ctypes``: the backend runs on it by default
(``EMBER_CUDA_DRIVER=bindings`` selects ``cuda.bindings.driver`` instead, with the same
results), and ``cuda.bindings`` is imported only when NVRTC compiles.

The convention is the bindings': ``cu.cuMemAlloc(nbytes)`` returns ``(status, pointer)``,
``cu.cuStreamSynchronize(stream)`` returns ``(status,)``; statuses are ints (``0`` is
success), handles and device pointers ints (``0`` for NULL), names ``bytes``.  Arguments
are ints (or anything with ``__int__``).  The driver library is loaded, and each entry
point looked up (``cuGetProcAddress``, the ABI of CUDA :data:`ABI` unless the table says
otherwise), at a function's first call: importing this module touches no library, and
where ``libcuda`` is missing the first call raises :class:`OSError`.

Every call releases the GIL (``ctypes.CFUNCTYPE``), as the bindings' calls do.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
from collections.abc import Callable
from ctypes import byref, c_char_p, c_float, c_int, c_size_t, c_ubyte, c_uint, c_uint64
from ctypes import c_void_p as _P
from typing import Any

ABI = 12000  # the CUDA version whose entry points are asked for (R525+ drivers)

_I, _U, _S, _D, _F, _C = c_int, c_uint, c_size_t, c_uint64, c_float, c_char_p
_G = (_U, _U, _U, _U, _U, _U, _U)  # grid, block, shared memory bytes

# name -> (outputs, inputs[, CUDA version]): the C function takes a pointer to each output
# first, then the inputs, as most of the driver API does; the calls that do not are below.
_CALLS: dict[str, tuple] = {
    "cuInit": ((), (_U,)),
    "cuDriverGetVersion": ((_I,), ()),
    "cuDeviceGetCount": ((_I,), ()),
    "cuDeviceGet": ((_I,), (_I,)),
    "cuDeviceGetAttribute": ((_I,), (_I, _I)),
    "cuDeviceTotalMem": ((_S,), (_I,)),
    "cuDeviceCanAccessPeer": ((_I,), (_I, _I)),
    "cuDevicePrimaryCtxRetain": ((_P,), (_I,)),
    "cuDevicePrimaryCtxRelease": ((), (_I,)),
    "cuCtxSetCurrent": ((), (_P,)),
    "cuCtxGetDevice": ((_I,), ()),
    "cuCtxSynchronize": ((), ()),
    "cuCtxEnablePeerAccess": ((), (_P, _U)),
    "cuStreamCreate": ((_P,), (_U,)),
    "cuStreamCreateWithPriority": ((_P,), (_U, _I)),
    "cuStreamQuery": ((), (_P,)),
    "cuStreamSynchronize": ((), (_P,)),
    "cuStreamWaitEvent": ((), (_P, _P, _U)),
    "cuStreamDestroy": ((), (_P,)),
    "cuEventCreate": ((_P,), (_U,)),
    "cuEventRecord": ((), (_P, _P)),
    "cuEventQuery": ((), (_P,)),
    "cuEventSynchronize": ((), (_P,)),
    "cuEventElapsedTime": ((_F,), (_P, _P)),
    "cuEventDestroy": ((), (_P,)),
    "cuMemAlloc": ((_D,), (_S,)),
    "cuMemAllocAsync": ((_D,), (_S, _P)),
    "cuMemFree": ((), (_D,)),
    "cuMemFreeAsync": ((), (_D, _P)),
    "cuMemHostAlloc": ((_P,), (_S, _U)),
    "cuMemFreeHost": ((), (_P,)),
    "cuMemHostGetDevicePointer": ((_D,), (_P, _U)),
    "cuMemHostRegister": ((), (_P, _S, _U)),
    "cuMemHostUnregister": ((), (_P,)),
    "cuMemcpyHtoDAsync": ((), (_D, _P, _S, _P)),
    "cuMemcpyDtoHAsync": ((), (_P, _D, _S, _P)),
    "cuMemcpyDtoDAsync": ((), (_D, _D, _S, _P)),
    "cuMemcpyPeerAsync": ((), (_D, _P, _D, _P, _S, _P)),
    "cuMemsetD8Async": ((), (_D, c_ubyte, _S, _P)),
    "cuMemsetD32Async": ((), (_D, _U, _S, _P)),
    "cuPointerGetAttribute": ((_D,), (_I, _D)),  # integer attributes (zeroed 8 bytes)
    "cuModuleLoadData": ((_P,), (_C,)),
    "cuModuleGetFunction": ((_P,), (_P, _C)),
    "cuModuleGetFunctionCount": ((_U,), (_P,), 12040),
    "cuModuleUnload": ((), (_P,)),
    "cuFuncGetName": ((_C,), (_P,), 12030),
    "cuFuncGetAttribute": ((_I,), (_I, _P)),
    "cuFuncSetAttribute": ((), (_P, _I, _I)),
    "cuOccupancyMaxActiveBlocksPerMultiprocessor": ((_I,), (_P, _I, _S)),
    "cuLaunchKernel": ((), (_P, *_G, _P, _P, _P)),
    "cuLaunchCooperativeKernel": ((), (_P, *_G, _P, _P)),
}

_lock = threading.RLock()  # a lookup loads the library under it
_library: Any = None
_get_proc: Any = None  # cuGetProcAddress(_v2), straight from the library


def library() -> ctypes.CDLL:
    """The driver library the OS loader finds (``libcuda.so.1``, ``nvcuda.dll``): the one
    ``cuda.pathfinder`` would take too (it looks for an already loaded copy first), so the
    process holds one driver.  Raises :class:`OSError` where there is none."""
    global _library
    if _library is None:
        with _lock:
            if _library is None:
                if sys.platform == "win32":
                    _library = ctypes.WinDLL("nvcuda.dll")
                else:
                    _library = ctypes.CDLL("libcuda.so.1")
    return _library


def cuGetProcAddress(symbol: bytes, version: int, flags: int = 0) -> tuple[int, int, int]:
    """``(status, address, symbol status)`` of the driver function ``symbol`` in the ABI of
    CUDA ``version`` (``cuGetProcAddress_v2``; the first form where the driver is older)."""
    global _get_proc
    lib = library()
    if _get_proc is None:
        v2 = getattr(lib, "cuGetProcAddress_v2", None)
        fn = v2 if v2 is not None else lib.cuGetProcAddress
        fn.restype = c_int
        fn.argtypes = (_C, ctypes.POINTER(_P), _I, c_uint64) + ((ctypes.POINTER(_I),) * bool(v2))
        _get_proc = (fn, v2 is not None)
    fn, has_status = _get_proc
    address, status = _P(), _I(0)
    if has_status:
        err = fn(symbol, byref(address), int(version), int(flags), byref(status))
    else:
        err = fn(symbol, byref(address), int(version), int(flags))
    return err, address.value or 0, status.value


def _function(name: str, argtypes: tuple, version: int) -> Any:
    err, address, status = cuGetProcAddress(name.encode(), version)
    if err or status or not address:
        raise RuntimeError(
            f"the CUDA driver has no {name} for CUDA {version // 1000}.{version % 1000 // 10} "
            f"(cuGetProcAddress: status {err}, symbol status {status}): update the NVIDIA "
            f"driver"
        )
    return ctypes.CFUNCTYPE(c_int, *argtypes)(address)


def _call(name: str, outs: tuple, ins: tuple, version: int = ABI) -> Callable[..., tuple]:
    """The bindings-style function for driver call ``name``: it looks its entry point up at
    its first call, then passes its arguments on and returns ``(status, *outputs)``."""
    fn = _special(name, (*map(ctypes.POINTER, outs), *ins), version)
    found = fn.found  # type: ignore[attr-defined]

    if not outs:

        def call(*args):
            return ((found[0] if found else fn())(*args),)

    elif outs == (_P,):  # a handle: 0 for NULL, as the bindings' handles convert

        def call(*args):
            out = _P()
            err = (found[0] if found else fn())(byref(out), *args)
            return err, out.value or 0

    elif len(outs) == 1:
        kind = outs[0]

        def call(*args):
            out = kind()
            err = (found[0] if found else fn())(byref(out), *args)
            return err, out.value

    else:  # pragma: no cover - no call in the table has two outputs yet
        raise ValueError(f"{name}: more than one output")
    if name in _CHECKED:
        call = _range_checked(call, name, ins)
    if name in _NATIVE:
        call = _native(name, version, call)
    call.__name__ = call.__qualname__ = name
    call.entry = found  # type: ignore[attr-defined]  # [] until looked up, then [the C function]
    call.__doc__ = f"``{name}`` (the driver's), in the bindings' convention."
    return call


# ctypes wraps an int that does not fit its C type silently (-1 -> 4294967295); the
# bindings raise OverflowError, and so do the calls that take values a user chose (launch
# configurations, fill values, attributes, device numbers) before the driver sees them.
# The others take sizes, addresses and handles that Ember computed and checked (a negative
# size is refused before any allocation or copy); a check costs them ~0.3 us a call.
_CHECKED = frozenset({
    "cuLaunchKernel", "cuLaunchCooperativeKernel", "cuFuncSetAttribute", "cuMemsetD8Async",
    "cuMemsetD32Async", "cuOccupancyMaxActiveBlocksPerMultiprocessor", "cuDeviceGet",
    "cuDeviceGetAttribute", "cuStreamCreateWithPriority", "cuDeviceCanAccessPeer",
})  # fmt: skip
_RANGES = {
    c_int: (-(2**31), 2**31 - 1), c_uint: (0, 2**32 - 1), c_size_t: (0, 2**64 - 1),
    c_uint64: (0, 2**64 - 1), c_ubyte: (0, 255),
}  # fmt: skip


def _range_checked(call: Callable[..., tuple], name: str, ins: tuple) -> Callable[..., tuple]:
    checks = tuple((i, *_RANGES[t]) for i, t in enumerate(ins) if t in _RANGES)
    if not checks:
        return call
    inner = call

    def call(*args):
        try:
            for i, low, high in checks:
                if not low <= args[i] <= high:
                    raise OverflowError(
                        f"{name}: argument {i + 1} ({args[i]!r}) does not fit a "
                        f"{ins[i].__name__} (from {low} to {high})"
                    )
        except IndexError:  # too few arguments: ctypes says so
            pass
        return inner(*args)

    return call


# Calls the compiled stub (ember.backends.cuda._ccall, where it is built) makes without
# ctypes' per-call conversions (~0.4-0.8 us a call on the build machine, ~0.6 us more than
# the bindings' for a cuStreamSynchronize on an H200): the backend's allocation path makes
# the first two once a buffer, a synchronize or a query of work the others.
_NATIVE = {
    "cuMemAllocAsync": "alloc_async", "cuMemFreeAsync": "free_async",
    "cuStreamSynchronize": "handle_call", "cuStreamQuery": "handle_call",
    "cuEventSynchronize": "handle_call", "cuEventQuery": "handle_call",
}  # fmt: skip


def _native(name: str, version: int, fallback: Callable[..., tuple]) -> Callable[..., tuple]:
    found: list = []

    def resolve() -> Callable[..., tuple]:
        with _lock:
            if not found:
                fn = fallback
                try:
                    from ember.backends.cuda import _ccall

                    stub = getattr(_ccall, _NATIVE[name])
                except (ImportError, AttributeError):  # not built: ctypes
                    pass
                else:
                    err, address, status = cuGetProcAddress(name.encode(), version)
                    if not (err or status) and address:
                        fn = functools.partial(stub, address)
                found.append(fn)
        return found[0]

    def call(*args):
        return (found[0] if found else resolve())(*args)

    return call


def _special(name: str, argtypes: tuple, version: int = ABI) -> Callable[[], Any]:
    """The getter of driver function ``name``'s ctypes function, looked up at its first
    use; ``getter.found`` is ``[]`` until then, then ``[the function]``."""
    found: list = []

    def fn() -> Any:
        if not found:
            with _lock:
                if not found:
                    found.append(_function(name, argtypes, version))
        return found[0]

    fn.found = found  # type: ignore[attr-defined]
    return fn


_error_name = _special("cuGetErrorName", (_I, ctypes.POINTER(_C)))
_error_string = _special("cuGetErrorString", (_I, ctypes.POINTER(_C)))
_device_name = _special("cuDeviceGetName", (_C, _I, _I))
_enumerate = _special("cuModuleEnumerateFunctions", (ctypes.POINTER(_P), _U, _P), 12040)


def cuGetErrorName(error: int) -> tuple[int, bytes | None]:
    out = _C()
    return _error_name()(int(error), byref(out)), out.value


def cuGetErrorString(error: int) -> tuple[int, bytes | None]:
    out = _C()
    return _error_string()(int(error), byref(out)), out.value


def cuDeviceGetName(length: int, device: int) -> tuple[int, bytes]:
    """``(status, the name's buffer of ``length`` bytes, NUL-padded)``."""
    buffer = ctypes.create_string_buffer(length)
    return _device_name()(buffer, length, device), buffer.raw


def cuModuleEnumerateFunctions(count: int, module: int) -> tuple[int, list[int]]:
    handles = (_P * count)()
    err = _enumerate()(handles, count, module)
    return err, [h or 0 for h in handles]


_FUNCTIONS = {name: _call(name, *spec) for name, spec in _CALLS.items()}
globals().update(_FUNCTIONS)  # cuInit, cuMemAlloc, ...: the module is the namespace


# ---------------------------------------------------------------- types and constants
# Handles and device pointers are ints; these make (and name) them as the bindings' do.
class _Handle(int):
    def __new__(cls, value: Any = 0):
        return int.__new__(cls, int(value or 0))


class CUstream(_Handle):
    pass


class CUevent(_Handle):
    pass


class CUdevice(_Handle):
    pass


class CUcontext(_Handle):
    pass


class CUmodule(_Handle):
    pass


class CUfunction(_Handle):
    pass


class CUdeviceptr(_Handle):
    pass


# The driver's names of the statuses Ember's messages give advice for, where the driver
# itself cannot be asked (no libcuda here); it is asked first.
_RESULT_NAMES = {
    0: "CUDA_SUCCESS", 1: "INVALID_VALUE", 2: "OUT_OF_MEMORY", 3: "NOT_INITIALIZED",
    4: "DEINITIALIZED", 34: "STUB_LIBRARY", 100: "NO_DEVICE", 101: "INVALID_DEVICE",
    200: "INVALID_IMAGE", 201: "INVALID_CONTEXT", 208: "ALREADY_MAPPED",
    209: "NO_BINARY_FOR_GPU", 211: "NOT_MAPPED", 214: "ECC_UNCORRECTABLE",
    217: "PEER_ACCESS_UNSUPPORTED", 218: "INVALID_PTX", 222: "UNSUPPORTED_PTX_VERSION",
    300: "INVALID_SOURCE", 400: "INVALID_HANDLE", 500: "NOT_FOUND", 600: "NOT_READY",
    700: "ILLEGAL_ADDRESS", 701: "LAUNCH_OUT_OF_RESOURCES", 702: "LAUNCH_TIMEOUT",
    704: "PEER_ACCESS_ALREADY_ENABLED", 709: "CONTEXT_IS_DESTROYED", 710: "ASSERT",
    712: "HOST_MEMORY_ALREADY_REGISTERED", 713: "HOST_MEMORY_NOT_REGISTERED",
    714: "HARDWARE_STACK_ERROR", 715: "ILLEGAL_INSTRUCTION", 716: "MISALIGNED_ADDRESS",
    718: "INVALID_PC", 719: "LAUNCH_FAILED", 720: "COOPERATIVE_LAUNCH_TOO_LARGE",
    800: "NOT_PERMITTED", 801: "NOT_SUPPORTED", 803: "SYSTEM_DRIVER_MISMATCH",
    804: "COMPAT_NOT_SUPPORTED_ON_DEVICE", 999: "UNKNOWN",
}  # fmt: skip
_RESULT_NAMES = {k: v if k == 0 else "CUDA_ERROR_" + v for k, v in _RESULT_NAMES.items()}


class CUresult(int):
    """A driver status: an int with the driver's ``name`` (``CUDA_ERROR_INVALID_VALUE``)."""

    @property
    def name(self) -> str:
        try:
            err, text = cuGetErrorName(self)
            if not err and text:
                return text.decode()
        except Exception:  # no driver library here: the table, else the number
            pass
        try:
            return _RESULT_NAMES[int(self)]
        except KeyError:
            raise ValueError(f"{int(self)} is not a CUresult this driver names") from None


for _code, _text in _RESULT_NAMES.items():
    setattr(CUresult, _text, CUresult(_code))


class CUdevice_attribute:  # noqa: N801 - the driver's names
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
    CU_DEVICE_ATTRIBUTE_INTEGRATED = 18
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33
    CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36
    CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
    CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO = 87
    CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115


class CUfunction_attribute:  # noqa: N801
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
    CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2
    CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
    CU_FUNC_ATTRIBUTE_NUM_REGS = 4
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


class CUpointer_attribute:  # noqa: N801
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2


class CUmemorytype:
    CU_MEMORYTYPE_HOST = 1
    CU_MEMORYTYPE_DEVICE = 2


class CUevent_flags:  # noqa: N801
    CU_EVENT_DEFAULT = 0
    CU_EVENT_BLOCKING_SYNC = 1
    CU_EVENT_DISABLE_TIMING = 2


class CUstream_flags:  # noqa: N801
    CU_STREAM_DEFAULT = 0
    CU_STREAM_NON_BLOCKING = 1


class CUdriverProcAddress_flags:  # noqa: N801
    CU_GET_PROC_ADDRESS_DEFAULT = 0


CU_MEMHOSTALLOC_DEVICEMAP = 2
CU_MEMHOSTREGISTER_PORTABLE = 1


def start(index: int = 0) -> Callable[[], None]:
    """``cuInit``, device ``index`` and a reference to its primary context, for the
    background warmup (no Ember import on the way: it runs GIL-free at once); returns the
    function that releases that reference (the backend takes its own).  Raises on any
    failure: the backend's own start-up then says what is wrong."""
    f = _FUNCTIONS
    err = f["cuInit"](0)[0]
    if not err:
        err, device = f["cuDeviceGet"](index)
        call = "cuDeviceGet"
        if not err:
            err, _context = f["cuDevicePrimaryCtxRetain"](device)
            call = "cuDevicePrimaryCtxRetain"
    else:
        call = "cuInit"
    if err:
        raise RuntimeError(f"{call} failed with CUresult {err}")
    return lambda: f["cuDevicePrimaryCtxRelease"](device)
