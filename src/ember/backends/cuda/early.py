"""The driver's start-up (``cuInit``, device 0, its primary context) through ``ctypes``
alone, for the background warmup.

Importing ``cuda.bindings.driver`` (and ``cuda.pathfinder`` under it) takes 50-250 ms in a
fresh process on the machines Ember is measured on, and ``cuInit`` plus retaining the
primary context another ~220 ms (issue 19).  The driver work needs none of the bindings:
done here, it starts when ``import ember`` returns and runs (GIL-free) beside those
imports, so a first kernel waits for the longer of the two instead of their sum.

The driver library is the one the bindings load later: the OS loader's ``libcuda.so.1``
(``nvcuda.dll``), found the same way (``cuda.pathfinder`` looks for an already loaded copy
first), so the process holds one driver, initialized once.  Entry points come from
``cuGetProcAddress`` for CUDA 12.0, the versions of the calls the bindings make.  Nothing
here is on a hot path, and nothing outside the warmup uses it.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable

ABI = 12000  # the CUDA version whose entry points are asked for (R525+ drivers)


def _library() -> ctypes.CDLL:
    if sys.platform == "win32":
        return ctypes.WinDLL("nvcuda.dll")
    return ctypes.CDLL("libcuda.so.1")


def _entry(lib: ctypes.CDLL, name: str, *argtypes) -> Callable[..., int]:
    """Driver function ``name`` from ``cuGetProcAddress`` (v2 where the driver has it)."""
    pfn, status = ctypes.c_void_p(), ctypes.c_int(0)
    get = getattr(lib, "cuGetProcAddress_v2", None)
    if get is not None:
        err = get(name.encode(), ctypes.byref(pfn), ABI, ctypes.c_uint64(0), ctypes.byref(status))
    else:
        err = lib.cuGetProcAddress(name.encode(), ctypes.byref(pfn), ABI, ctypes.c_uint64(0))
    if err or not pfn.value or status.value:
        raise RuntimeError(f"the CUDA driver has no {name} (cuGetProcAddress: {err})")
    return ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(pfn.value)


def start() -> Callable[[], None]:
    """``cuInit``, device 0 and a reference to its primary context; returns the function
    that releases that reference (the backend takes its own).  Raises on any failure: the
    backend's own start-up then says what is wrong."""
    lib = _library()
    init = _entry(lib, "cuInit", ctypes.c_uint)
    get = _entry(lib, "cuDeviceGet", ctypes.POINTER(ctypes.c_int), ctypes.c_int)
    retain = _entry(lib, "cuDevicePrimaryCtxRetain", ctypes.POINTER(ctypes.c_void_p), ctypes.c_int)
    release = _entry(lib, "cuDevicePrimaryCtxRelease", ctypes.c_int)
    device, context = ctypes.c_int(), ctypes.c_void_p()
    _check(init(0), "cuInit")
    _check(get(ctypes.byref(device), 0), "cuDeviceGet")
    _check(retain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
    return lambda: release(device)


def _check(status: int, call: str) -> None:
    if status:
        raise RuntimeError(f"{call} failed with CUresult {status}")
