"""NVIDIA's math libraries (cuBLAS, cuSOLVER, cuFFT) from their PyPI wheels, through ctypes.

Why a thin ctypes binding and not ``nvmath-python``: Ember needs a handful of entry points
(GEMM, a few dense factorizations), stream-ordered on its own streams and with workspace
from its own allocator; ``nvmath-python`` is a large extra dependency (its own Cython
bindings of every library and its own memory management) that is not on the GPU machines
Ember is measured on and would have to be carried there.  The libraries are located by
``cuda.pathfinder.load_nvidia_dynamic_lib`` (part of ``cuda-bindings``' dependencies),
which finds the ``nvidia-cublas``/``nvidia-cusolver``/``nvidia-cufft`` wheels (the
``ember[cuda]`` extra) or a CUDA toolkit.  A call through ctypes costs about a microsecond.

:func:`library` loads one library once per process; :class:`VendorUnavailable` says what
is missing and what to install.
"""

from __future__ import annotations

import ctypes
import functools

from ember.errors import BackendUnavailableError, DriverError

INSTALL = "pip install 'ember[cuda]' (it pulls nvidia-cublas, nvidia-cusolver and nvidia-cufft)"


class VendorUnavailable(BackendUnavailableError):
    """An NVIDIA math library is not installed (or cannot be loaded)."""


@functools.cache
def library(name: str) -> ctypes.CDLL:
    """The shared library ``name`` (``"cublas"``, ``"cusolver"``, ``"cufft"``) loaded with
    ctypes.

    Raises
    ------
    VendorUnavailable
        When neither a wheel nor a toolkit provides it; the message says what to install.
    """
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib
    except ImportError as exc:
        raise VendorUnavailable(
            f"cannot locate lib{name}: cuda-pathfinder is missing ({exc}); {INSTALL}"
        ) from exc
    try:
        loaded = load_nvidia_dynamic_lib(name)
    except Exception as exc:  # DynamicLibNotFoundError and friends
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise VendorUnavailable(f"lib{name} was not found ({first}); {INSTALL}") from exc
    try:
        if loaded.abs_path:
            return ctypes.CDLL(loaded.abs_path)
        return ctypes.CDLL(None, handle=loaded._handle_uint)
    except OSError as exc:
        raise VendorUnavailable(f"lib{name} could not be loaded ({exc}); {INSTALL}") from exc


def bind(lib: ctypes.CDLL, name: str, *argtypes) -> ctypes._CFuncPtr:
    """``lib.name`` with its argument types set and an ``int`` status result."""
    fn = getattr(lib, name)
    fn.argtypes = list(argtypes)
    fn.restype = ctypes.c_int
    return fn


VP = ctypes.c_void_p
INT = ctypes.c_int
I64 = ctypes.c_int64


def raise_status(status: int, call: str, names: dict, library_name: str, hint: str = "") -> None:
    """Raise :class:`DriverError` for the failed status ``status`` of a vendor library's
    ``call`` (``names``: the library's status names; ``hint``: what the user may check)."""
    name = names.get(status, f"{library_name} status {status}")
    raise DriverError(
        f"{call} failed: {name}{hint} (this may be a bug in Ember: please report it with "
        "`ember info`)",
        code=status,
        code_name=name,
        call=call,
    )
