"""The CUDA driver API as Ember uses it, and the one place where its statuses are checked.

:data:`cu` is :mod:`ember.backends.cuda.cdriver` (``ctypes``, no ``cuda.bindings`` import:
25-35 ms less Python work before a first kernel) unless ``EMBER_CUDA_DRIVER=bindings``
selects ``cuda.bindings.driver``; both take and return the same values.  Every other
module of the CUDA backend calls the driver through :data:`cu` and turns a failed
``CUresult`` into an Ember exception with :func:`check` (or :func:`error` on a hot path
that tests the status itself).  The message names the ``CUresult``, the call, the
driver's own description and what to do about it.
"""

from __future__ import annotations

from typing import Any

from ember.config import settings
from ember.errors import BackendUnavailableError, DriverError, OutOfMemoryError
from ember.runtime.backend import INSTALL_HINT

if settings.cuda_driver == "bindings":
    try:
        from cuda.bindings import driver as cu
    except ImportError as exc:  # pragma: no cover - exercised where cuda-bindings is absent
        raise BackendUnavailableError(
            f"EMBER_CUDA_DRIVER=bindings needs NVIDIA's cuda-bindings package, which cannot be "
            f"imported ({exc}); install it with: {INSTALL_HINT['cuda']}, or unset the setting"
        ) from exc
else:  # the driver through ctypes, in the bindings' convention (no cuda.bindings import)
    from ember.backends.cuda import cdriver as cu

SUCCESS = cu.CUresult.CUDA_SUCCESS
NOT_READY = cu.CUresult.CUDA_ERROR_NOT_READY
OUT_OF_MEMORY = cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY
INVALID_CONTEXT = cu.CUresult.CUDA_ERROR_INVALID_CONTEXT

# What to do, for the statuses a user can cause.  Anything else gets the generic advice.
_ADVICE = {
    "CUDA_ERROR_OUT_OF_MEMORY": (
        "free device memory (close arrays/buffers you no longer need, or empty Ember's "
        "allocation cache) or work on smaller pieces"
    ),
    "CUDA_ERROR_INVALID_VALUE": (
        "an argument is out of range: check sizes, offsets, grid and block dimensions "
        "(block threads <= the device's max_threads_per_block) and shared memory"
    ),
    "CUDA_ERROR_NO_DEVICE": "no CUDA device is visible: check CUDA_VISIBLE_DEVICES and nvidia-smi",
    "CUDA_ERROR_INVALID_DEVICE": "the device index is out of range: see ember.devices()",
    "CUDA_ERROR_NOT_INITIALIZED": "the CUDA driver is not initialized: this is a bug in Ember",
    "CUDA_ERROR_INSUFFICIENT_DRIVER": (
        "the NVIDIA driver is older than cuda-bindings needs: update the driver, or install "
        "the bindings matching it (" + INSTALL_HINT["cuda"] + ")"
    ),
    "CUDA_ERROR_INVALID_IMAGE": "the binary is not a valid cubin for this device: recompile it",
    "CUDA_ERROR_NO_BINARY_FOR_GPU": (
        "the binary was compiled for another GPU architecture: recompile for this device's sm_XX"
    ),
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": (
        "the code was compiled by an NVRTC newer than the driver: update the driver or use "
        "an NVRTC of the driver's CUDA version"
    ),
    "CUDA_ERROR_NOT_FOUND": "the named symbol does not exist in the module: check its name",
    "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES": (
        "the kernel needs more registers or shared memory than the block size allows: "
        "launch smaller blocks"
    ),
    "CUDA_ERROR_ILLEGAL_ADDRESS": (
        "a kernel accessed memory out of bounds; the CUDA context is now unusable, restart "
        "the process (EMBER_BOUNDSCHECK=1 finds the line)"
    ),
    "CUDA_ERROR_LAUNCH_FAILED": (
        "a kernel crashed; the CUDA context is now unusable, restart the process"
    ),
    "CUDA_ERROR_LAUNCH_TIMEOUT": "a kernel ran too long for the display watchdog: split the work",
    "CUDA_ERROR_INVALID_HANDLE": (
        "an object (stream, event, module, buffer) was used after close() or with another device"
    ),
    "CUDA_ERROR_INVALID_CONTEXT": (
        "no CUDA context is current in this thread: use Ember's backend API, which sets it"
    ),
}
_GENERIC_ADVICE = (
    "check the arguments of the call; if they look right, this may be a bug in Ember or the "
    "driver (report it with `ember info`)"
)


def result_name(err: Any) -> str:
    """The driver's name of a ``CUresult`` (``CUDA_ERROR_INVALID_VALUE``), or its number."""
    try:
        return cu.CUresult(int(err)).name
    except (ValueError, TypeError):
        return f"CUresult {err!r}"


def describe(err: Any) -> str:
    """The driver's description of ``err`` (``cuGetErrorString``), or ``""`` if unavailable."""
    try:
        status, text = cu.cuGetErrorString(err)
    except Exception:  # the driver library itself may be missing
        return ""
    if status != SUCCESS or not text:
        return ""
    return text.decode() if isinstance(text, bytes) else str(text)


def error(err: Any, call: str, context: str = "") -> DriverError:
    """Build the exception for a failed call: :class:`OutOfMemoryError` or :class:`DriverError`.

    Parameters
    ----------
    err : CUresult or int
        The failed status.
    call : str
        The driver function, e.g. ``"cuMemAlloc"``.
    context : str
        What Ember was doing, e.g. ``"allocating 1024 bytes"``; included in the message.
    """
    name = result_name(err)
    text = describe(err)
    doing = f" while {context}" if context else ""
    message = f"{call} failed with {name}{doing}"
    if text:
        message += f": {text}"
    message += f".  What to do: {_ADVICE.get(name, _GENERIC_ADVICE)}."
    cls = OutOfMemoryError if name == "CUDA_ERROR_OUT_OF_MEMORY" else DriverError
    return cls(message, code=int(err), code_name=name, call=call)


def check(result: tuple, call: str, context: str = "") -> Any:
    """Return the value of a ``cuda.bindings`` call's result tuple, or raise.

    ``cuda.bindings`` returns ``(CUresult,)`` or ``(CUresult, value, ...)``.  Success gives
    ``None``, the single value, or a tuple of the values; a failure raises the exception made
    by :func:`error`.
    """
    err = result[0]
    if err:
        raise error(err, call, context)
    n = len(result)
    if n == 1:
        return None
    if n == 2:
        return result[1]
    return result[1:]


def finished(query: Any, handle: Any, context: Any, call: str, doing: str) -> bool:
    """Run a non-blocking ``cuStreamQuery``/``cuEventQuery``: True when the work is done,
    False when it is not ready; any other status raises (after one retry on a thread that
    had no current context yet)."""
    while True:
        err = query(handle)[0]
        if not err:
            return True
        if err == NOT_READY:
            return False
        if not context.retry_on_invalid_context(err):
            raise error(err, call, doing)
