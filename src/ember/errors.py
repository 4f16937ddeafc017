"""Ember's exception hierarchy.

Every error a user can trigger is an :class:`EmberError`; the subclass says which stage
failed.  Messages say what went wrong, where, and what to do.  Bugs in Ember itself raise
:class:`InternalError`, which asks to be reported.
"""

from __future__ import annotations

import platform
import sys


class EmberError(Exception):
    """Base class of every error Ember raises on purpose."""


class BackendUnavailableError(EmberError):
    """No backend could be used, or the requested one is not installed or has no device."""


class DriverError(EmberError):
    """A driver call failed.

    Attributes
    ----------
    code : int
        The numeric status (``CUresult`` or OpenCL error code).
    code_name : str
        The driver's name for it, e.g. ``CUDA_ERROR_INVALID_VALUE``.
    call : str
        The driver function that returned it.
    """

    def __init__(self, message: str, *, code: int = 0, code_name: str = "", call: str = ""):
        super().__init__(message)
        self.code = code
        self.code_name = code_name
        self.call = call


class OutOfMemoryError(DriverError, MemoryError):
    """A device allocation failed for lack of memory."""


class CompileError(EmberError):
    """Device source failed to compile.

    Attributes
    ----------
    log : str
        The full compiler log (NVRTC or OpenCL build log).
    source : str
        The source that was compiled.
    """

    def __init__(self, message: str, *, log: str = "", source: str = ""):
        super().__init__(message)
        self.log = log
        self.source = source


class KernelSyntaxError(EmberError):
    """A kernel uses Python syntax or a name Ember cannot compile."""


class UnsupportedFeatureError(KernelSyntaxError):
    """A kernel uses something the target lacks (e.g. sub-group shuffles on an OpenCL device
    without sub-groups, or 64-bit atomics without ``cl_khr_int64_base_atomics``)."""


class KernelTypeError(EmberError, TypeError):
    """Types in a kernel do not fit together (or arguments do not fit the kernel)."""


class BinaryError(EmberError):
    """A compiled binary (from the cache, a bundle or the caller) is damaged or is not a
    binary of this backend; it was checked before any driver was handed it."""


class ClosedError(EmberError, ValueError):
    """A stream, event, buffer or module was used after ``close()``."""


class LaunchError(EmberError):
    """A kernel launch was given bad arguments or a bad configuration."""


class ArgumentError(KernelTypeError, LaunchError):
    """Arguments given at a kernel launch do not fit the kernel (count, kinds, host arrays).

    Both a :class:`KernelTypeError` (so a ``TypeError``) and a :class:`LaunchError`."""


class KernelError(EmberError):
    """A device-side error (``raise``, ``assert``, a failed bounds check or checked
    conversion in a kernel), raised at the next synchronize or launch of a kernel that can
    fail.  The device stays usable.

    The message names the kernel, the Python line (with a caret), the block and thread.
    Attributes: ``kernel``, ``error`` (the Python exception's name, e.g. ``"IndexError"``),
    ``brief``, ``filename``, ``line``, ``col``, ``block``, ``thread``, ``kind``
    (``"bounds"``, ``"convert"``, ``"raise"``, ``"assert"``).  For a built-in exception the
    instance is also of that type: ``except IndexError`` catches a failed bounds check.
    """


class SlowPathError(EmberError):
    """``EMBER_DIAGNOSTICS=error``: a kernel pulls in slow paths; raised before its launch.

    ``items`` holds the :class:`~ember.diagnostics.report.SlowPath` entries."""

    def __init__(self, message: str, items=()):
        super().__init__(message)
        self.items = list(items)


class EmberPerformanceWarning(UserWarning):
    """A kernel pulls in slow paths (``EMBER_DIAGNOSTICS=warn``, the default): error
    checks, printing, float64 on a device with slow float64, local memory, low occupancy.
    Issued once per kernel specialization; ``kernel.report(*args)`` gives the items."""


class KernelTypeWarning(UserWarning):
    """Kernel code whose typing is legal but probably not what was meant: a variable
    assigned values of two types gets their NumPy promotion (``int32`` and ``uint32`` give
    ``int64``), which changes how its arithmetic wraps.  The message names the variable, the
    types and the fix (annotate the variable, or give each value its own name)."""


class RecompileWarning(UserWarning):
    """A kernel recompiles because a function it calls was redefined, or a module-level
    value it reads was rebound, since it was compiled (checked at each new notebook cell;
    :mod:`ember.compiler.freshness`).  The message names what changed."""


class InternalError(EmberError):
    """A bug in Ember: the message asks to report it, with versions."""

    def __init__(self, message: str):
        from ember._version import __version__

        super().__init__(
            f"{message}\n\nThis is a bug in Ember; please report it with this message "
            f"(ember {__version__}, Python {sys.version.split()[0]}, {platform.platform()})."
        )


def numbered(source: str) -> str:
    """Return ``source`` with right-aligned line numbers, for compile error messages."""
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}} | {line}" for i, line in enumerate(lines, 1))


def not_on_device(value: object, where: str) -> TypeError:
    """The error for host data passed where device memory is needed."""
    kind = type(value).__module__.split(".")[0] + "." + type(value).__name__
    return TypeError(
        f"{where} needs device memory but got a {kind} (host memory); "
        f"copy it to the device explicitly with ember.asarray(x) first"
    )


def axis_error(message: str) -> ValueError:
    """An axis out of range: NumPy's ``AxisError`` (a ``ValueError`` and an ``IndexError``),
    so code written for NumPy catches it by any of the three names."""
    try:
        from numpy.exceptions import AxisError
    except ImportError:  # NumPy < 1.25
        from numpy import AxisError  # type: ignore[attr-defined,no-redef]
    return AxisError(message)
