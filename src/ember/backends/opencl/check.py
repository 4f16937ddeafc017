"""The one place where ``pyopencl`` errors become Ember errors.

Every module of the OpenCL backend imports ``pyopencl`` from here (so a missing package is
reported once, with the install command) and turns driver failures into Ember exceptions
with :func:`driver_error` or the :func:`translated` context manager:

* :class:`pyopencl.MemoryError` and the OpenCL out-of-memory codes become
  :class:`ember.errors.OutOfMemoryError`;
* every other :class:`pyopencl.Error` becomes :class:`ember.errors.DriverError` whose
  ``code_name`` is the OpenCL spelling (``CL_INVALID_KERNEL_ARGS``) and whose message says
  what Ember was doing and what to do about it.

Build failures are not translated here: :mod:`.module` raises :class:`CompileError` with the
build log and the numbered source instead.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator

from ember.errors import BackendUnavailableError, DriverError, OutOfMemoryError
from ember.runtime.backend import INSTALL_HINT

try:
    import pyopencl as cl
except ImportError as _exc:  # the registry reports this as "backend unavailable"
    raise BackendUnavailableError(
        f"the OpenCL backend needs pyopencl, which cannot be imported ({_exc}); install it "
        f"with: {INSTALL_HINT['opencl']}"
    ) from _exc

# pyopencl warns "Non-empty compiler output encountered. Set the environment variable
# PYOPENCL_COMPILER_OUTPUT=1 to see more." after every build whose log is not empty (NVIDIA's
# always is).  Ember silences that one generic line, once, when the backend is first used:
# a failed build's log is in its CompileError, and PYOPENCL_COMPILER_OUTPUT=1 still shows
# the full logs (a differently worded warning).  A permanent filter, because
# warnings.catch_warnings() around each build is not thread-safe (background warmup builds).
warnings.filterwarnings(
    "ignore", message="Non-empty compiler output encountered", category=cl.CompilerWarning
)

__all__ = ["build_log", "cl", "code_name", "driver_error", "status_error", "translated"]

# OpenCL status codes that mean "not enough memory" (device, host or driver resources).
OUT_OF_MEMORY_CODES = frozenset(
    {
        -4,  # CL_MEM_OBJECT_ALLOCATION_FAILURE
        -5,  # CL_OUT_OF_RESOURCES
        -6,  # CL_OUT_OF_HOST_MEMORY
        -61,  # CL_INVALID_BUFFER_SIZE (larger than CL_DEVICE_MAX_MEM_ALLOC_SIZE)
    }
)

# What to do, by code name.  Codes missing here get the generic advice.
ADVICE = {
    "CL_MEM_OBJECT_ALLOCATION_FAILURE": "free device arrays you no longer need, or use "
    "smaller ones",
    "CL_OUT_OF_RESOURCES": "the device ran out of memory or registers: free device arrays, "
    "or launch with a smaller block",
    "CL_OUT_OF_HOST_MEMORY": "the host ran out of memory: free host memory",
    "CL_INVALID_BUFFER_SIZE": "the size is zero or larger than the device's largest "
    "allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE); split the data into smaller arrays",
    "CL_INVALID_KERNEL_ARGS": "some kernel arguments were not set: pass one value per "
    "kernel parameter",
    "CL_INVALID_ARG_SIZE": "an argument does not have the size of its kernel parameter: "
    "check the parameter types Ember was given against the kernel source",
    "CL_INVALID_ARG_VALUE": "an argument is not valid for its kernel parameter: pass a "
    "device buffer for a pointer and a number for a scalar",
    "CL_INVALID_MEM_OBJECT": "a buffer was freed (closed) or belongs to another context",
    "CL_INVALID_WORK_GROUP_SIZE": "the block is larger than the device or this kernel "
    "allows (DeviceInfo.max_threads_per_block); launch with a smaller block",
    "CL_INVALID_WORK_ITEM_SIZE": "one block dimension is larger than the device allows "
    "(CL_DEVICE_MAX_WORK_ITEM_SIZES, in DeviceInfo.extra); launch with a smaller block",
    "CL_INVALID_GLOBAL_WORK_SIZE": "grid * block is zero or too large in some dimension; "
    "launch with a positive, smaller grid",
    "CL_INVALID_VALUE": "an offset or size is outside its buffer, or a value is out of range",
    "CL_INVALID_BINARY": "the binary was built for another device or driver: clear Ember's "
    "kernel cache (ember cache clear) so that it is compiled again",
    "CL_INVALID_KERNEL_NAME": "the program has no kernel of that name; check the spelling "
    "and that the kernel is declared __kernel",
    "CL_INVALID_COMMAND_QUEUE": "the stream was closed; create a new one",
    "CL_PROFILING_INFO_NOT_AVAILABLE": "create both events with timing=True and wait for "
    "the later one before asking for the elapsed time",
    "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST": "earlier work on the device failed; "
    "the first error raised says why",
    "CL_PLATFORM_NOT_FOUND_KHR": f"no OpenCL driver is installed: {INSTALL_HINT['opencl']}",
    "CL_DEVICE_NOT_FOUND": "the OpenCL driver found no device: check the driver install",
}
GENERIC_ADVICE = (
    "this is unexpected from the OpenCL driver; if it persists, report it with the output "
    "of `ember info`"
)


def code_name(code: int) -> str:
    """The OpenCL name of status ``code``, e.g. ``-52`` → ``CL_INVALID_KERNEL_ARGS``."""
    try:
        return "CL_" + cl.status_code.to_string(code)
    except (ValueError, TypeError):
        return f"CL_UNKNOWN_ERROR_{code}"


def driver_error(exc: BaseException, action: str) -> DriverError:
    """Translate a ``pyopencl`` exception raised while doing ``action`` into an Ember error.

    Parameters
    ----------
    exc : BaseException
        Usually a :class:`pyopencl.Error` (``.code``, ``.routine``).
    action : str
        What Ember was doing, in words ("allocating 1024 bytes").

    Returns
    -------
    DriverError
        :class:`OutOfMemoryError` for the out-of-memory codes and
        :class:`pyopencl.MemoryError`, else :class:`DriverError`; raise it ``from exc``.
    """
    code = int(getattr(exc, "code", 0) or 0)
    routine = str(getattr(exc, "routine", "") or "")
    error = status_error(code, routine, action, said=str(exc).strip())
    if isinstance(exc, cl.MemoryError) and not isinstance(error, OutOfMemoryError):
        return OutOfMemoryError(str(error), code=code, code_name=error.code_name, call=routine)
    return error


def status_error(code: int, routine: str, action: str, said: str = "") -> DriverError:
    """The Ember error for OpenCL status ``code`` returned by ``routine`` during ``action``.

    ``said`` is the driver's or pyopencl's own text; it is kept when it adds something to
    the code name.
    """
    name = code_name(code)
    advice = ADVICE.get(name, GENERIC_ADVICE)
    where = f" in {routine}" if routine else ""
    message = f"OpenCL error {name} ({code}){where} while {action}: {advice}"
    if said and not said.endswith(name[3:]):  # pyopencl says "<routine> failed: <NAME>"
        message += f" [pyopencl: {said}]"
    cls = OutOfMemoryError if code in OUT_OF_MEMORY_CODES else DriverError
    return cls(message, code=code, code_name=name, call=routine)


@contextlib.contextmanager
def translated(action: str) -> Iterator[None]:
    """Run a block of ``pyopencl`` calls, raising :func:`driver_error` on failure.

    Not for hot paths (a ``with`` costs about 0.3 µs): those catch :class:`pyopencl.Error`
    themselves and call :func:`driver_error`.
    """
    try:
        yield
    except cl.Error as exc:
        raise driver_error(exc, action) from exc


def build_log(exc: BaseException) -> str:
    """The compiler's log from a failed ``pyopencl`` build, without pyopencl's wrapping.

    pyopencl puts the per-device logs into the exception text, after ``Build on <device>:``
    and before ``(options: ...)``; the whole text is returned when that shape is missing.
    """
    text = str(exc)
    logs = re.findall(r"Build on [^\n]*:\n\n(.*?)(?=\n={10,}\n|\n\(options: |\Z)", text, re.S)
    return "\n".join(log.strip() for log in logs if log.strip()) or text.strip()
