"""Driver entry points called through ``ctypes``, for the hot paths that the bindings slow.

``cuda.bindings`` wraps every driver call in a Cython function that converts each argument
to its own type, builds a helper for ``kernelParams`` and returns an enum inside a tuple:
about 0.6 µs a call on the machines Ember is measured on, a fifth of a kernel launch.  A
``ctypes`` call of the same C function with arguments that are already ``c_void_p``
objects skips that work (docs/design/cuda-backend.md has the measurements).

The function pointers come from ``cuGetProcAddress`` through the bindings themselves, so
they are exactly the ones the bindings would call, from the driver library they loaded
(no second ``dlopen``, no symbol-version guessing).  Anything that goes wrong while looking
one up (no driver, an old driver, a ``ctypes`` without ``CFUNCTYPE``) makes
:func:`entry` return None and the caller keeps the bindings' path.

Calls through :data:`ctypes.CFUNCTYPE` release the GIL, as the bindings do: a launch can
block while the driver's queue is full, and another thread may be needed to drain it.

Where the optional C stub ``ember.backends.cuda._ccall`` is built (``setup.py``; a C
compiler and Python's headers at install time), :func:`native` returns it: its launchers
pack a kernel's arguments and call ``cuLaunchKernelEx`` (at :func:`address`) without
``ctypes``' per-call conversions, also with the GIL released.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from typing import Any

from ember.backends.cuda.driver import cu

# The CUDA version whose ABI of each entry point is used (cuGetProcAddress's cudaVersion).
_VERSIONS = {"cuLaunchKernelEx": 12000, "cuLaunchKernel": 4000}
_lock = threading.Lock()
_found: dict[str, Any] = {}


def entry(name: str) -> Any:
    """The driver function ``name`` as a ``ctypes`` function returning the ``CUresult``
    as an int, or None when it cannot be had here (the caller uses the bindings)."""
    try:
        return _found[name]
    except KeyError:
        pass
    with _lock:
        if name not in _found:
            _found[name] = _lookup(name)
        return _found[name]


def _lookup(name: str) -> Any:
    try:
        flags = cu.CUdriverProcAddress_flags.CU_GET_PROC_ADDRESS_DEFAULT
        result = cu.cuGetProcAddress(name.encode(), _VERSIONS.get(name, 12000), flags)
    except Exception:  # no driver library, or bindings without the call
        return None
    if result[0] or len(result) < 2 or not result[1]:
        return None
    if len(result) > 2 and int(result[2]) != 0:  # CU_GET_PROC_ADDRESS_SUCCESS
        return None
    try:
        return ctypes.CFUNCTYPE(ctypes.c_int)(int(result[1]))
    except (TypeError, ValueError, AttributeError):
        return None


def address(fn: Any) -> int:
    """The C address of an :func:`entry` function (for the compiled stub)."""
    return ctypes.cast(fn, ctypes.c_void_p).value


@functools.cache
def native() -> Any:
    """The compiled stub module (its ``launcher``), or None where it was not built (looked
    for once: a missing module is a file-system search per attempt)."""
    try:
        from ember.backends.cuda import _ccall
    except ImportError:
        return None
    _ccall.numpy_scalars(_scalar_samples())
    return _ccall


def _scalar_samples() -> tuple:
    """(type, struct kind, an instance, its value's bytes) of each NumPy scalar type the
    stub may read in place (it checks each instance's layout before it does)."""
    import numpy as np

    samples = {
        "?": np.bool_(True), "b": np.int8(-77), "h": np.int16(-12345),
        "i": np.int32(-123456789), "q": np.int64(-1234567890123), "B": np.uint8(201),
        "H": np.uint16(54321), "I": np.uint32(3123456789), "Q": np.uint64(2**64 - 12345),
        "f": np.float32(-2.75), "d": np.float64(3.125),
    }  # fmt: skip
    return tuple((type(v), kind, v, v.tobytes()) for kind, v in samples.items())


# The entry points of a staged upload in C (ember.backends.cuda._fill), in its order.
FILL_CALLS = ("cuCtxSetCurrent", "cuMemcpyHtoDAsync", "cuEventRecord", "cuEventSynchronize")


@functools.cache
def fill() -> tuple[Any, tuple[int, ...]] | None:
    """The compiled staged-upload module and the addresses of its :data:`FILL_CALLS`, or
    None where the module was not built or an entry point cannot be had (looked for once)."""
    try:
        from ember.backends.cuda import _fill
    except ImportError:
        return None
    if not hasattr(_fill, "upload_chunks"):  # built without threads (Windows)
        return None
    found = [entry(name) for name in FILL_CALLS]
    if any(f is None for f in found):
        return None
    return _fill, tuple(address(f) for f in found)


def pointer(value: Any) -> ctypes.c_void_p:
    """A ``c_void_p`` holding the address or handle ``value`` (a bindings handle or an int),
    made once and passed to :func:`entry` functions as is (the cheapest argument)."""
    return ctypes.c_void_p(int(value) or None)
