"""Zero-copy interop: DLPack (both ways, with the standard's stream semantics), the CUDA
Array Interface v3 (both ways) and the Array API namespace.

Export
    ``x.__dlpack__(stream=s)`` makes the consumer's stream ``s`` wait (on the device, with
    an event) for the work Ember queued on its default stream, then hands out a capsule
    that keeps ``x`` alive until the consumer calls its deleter.  A capsule nobody consumed
    releases ``x`` once nobody holds it, at the next export or garbage collection (not
    from a capsule destructor: see :func:`sweep`).  ``stream=None`` means the
    legacy default stream, ``-1`` no synchronization (the standard's rules).
    ``x.__cuda_array_interface__`` (v3) names Ember's default stream when it has work in
    flight (the consumer must order itself after it), else ``None``.  Only CUDA memory can
    be exported; OpenCL buffers have no address to share (``__dlpack__`` raises
    ``BufferError``), except as a host copy when the consumer asks for the CPU.
Import
    :func:`from_dlpack` and :func:`ember.asarray` wrap another library's CUDA memory
    (PyTorch, CuPy, JAX, Numba...) as an :class:`ember.ndarray` without copying: the
    producer orders its work before Ember's default stream, and the memory stays alive
    until the Ember array (and every view of it) is gone.
"""

from __future__ import annotations

import ctypes
import gc
import sys
import threading
from typing import Any

from ember import dtypes
from ember.array.ndarray import c_strides, ndarray
from ember.runtime import backend as registry
from ember.runtime.backend import DL_CPU, DL_CUDA, DL_CUDA_MANAGED, DL_OPENCL, Buffer

CPU, CUDA, OPENCL, CUDA_MANAGED = DL_CPU, DL_CUDA, DL_OPENCL, DL_CUDA_MANAGED
_DEVICE_NAMES = {CPU: "host", CUDA: "CUDA device", OPENCL: "OpenCL", CUDA_MANAGED: "CUDA managed"}
API_VERSIONS = ("2023.12", "2024.12")
_CODES = {"b": 6, "i": 0, "u": 1, "f": 2, "c": 5}  # DLPack's kDLComplex is 5
_KINDS = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 5: "complex", 6: "bool"}
_BFLOAT = 4  # kDLBfloat: its own type code (bits 16), not a kind of kDLFloat


# --------------------------------------------------------------------- DLPack structures
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
        ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
    ]  # fmt: skip


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER),
]  # fmt: skip


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER),
        ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor),
    ]  # fmt: skip


IS_COPIED = 1 << 1
NAME, NAME_VERSIONED = b"dltensor", b"dltensor_versioned"  # must outlive the capsules
USED, USED_VERSIONED = b"used_dltensor", b"used_dltensor_versioned"


def _capi(name: str, restype, *argtypes):
    """A private prototype of a C-API function (``ctypes.pythonapi``'s are shared)."""
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


_new_capsule = _capi("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                     ctypes.c_void_p)  # fmt: skip
_is_valid = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_pointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)
_set_name = _capi("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)

# exported tensors: address of the managed struct -> what must stay alive until deleted
_exports: dict[int, tuple] = {}


@DELETER
def _delete(address):
    _exports.pop(address, None)


# Capsules handed out, held until nobody else does.  A capsule destructor (C code calling
# back into Python through ctypes) would run inside the consumer's failure: NumPy drops a
# CUDA capsule while its "Unsupported device" error is set, and ctypes then turned that
# error into its own, so NumPy returned NULL without an exception (SystemError) and the
# array stayed exported.  Sweeping from Python instead calls no C code with an error set.
_live: list = []
_live_lock = threading.Lock()


def sweep() -> None:
    """Let go of the capsules only this module still holds, calling the deleter of those
    nobody consumed (the standard's rule for an unconsumed capsule).  Runs at each export
    and after each garbage collection."""
    if not _live_lock.acquire(blocking=False):
        return  # an export or a sweep is under way (maybe below us, in this thread)
    try:
        keep = []
        for c in _live:
            if sys.getrefcount(c) > 3:  # the list, ``c`` and the call's argument
                keep.append(c)
                continue
            for name in (NAME, NAME_VERSIONED):
                if _is_valid(c, name):  # not renamed "used_...": nobody consumed it
                    _delete(_pointer(c, name))
                    break
        _live[:] = keep
    finally:
        _live_lock.release()


def _after_collection(phase: str, info: dict) -> None:
    if phase == "stop" and _live:
        sweep()


gc.callbacks.append(_after_collection)


def make_capsule(ptr, shape, strides, dtype, device, owner, versioned: bool, copied=False):
    """A DLPack capsule for memory at ``ptr`` (strides in elements, or None for C order)
    that keeps ``owner`` alive until the consumer calls the deleter."""
    ndim = len(shape)
    shape_arr = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides_arr = None if strides is None else (ctypes.c_int64 * max(ndim, 1))(*strides)
    managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    t = managed.dl_tensor
    t.data = ptr or None
    t.device = DLDevice(*device)
    t.ndim = ndim
    code = _BFLOAT if dtype is dtypes.bfloat16 else _CODES[dtype.kind]
    t.dtype = DLDataType(code, dtype.bits, 1)
    t.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64)) if strides_arr else None
    t.byte_offset = 0
    managed.deleter = _delete
    if versioned:
        managed.version = DLPackVersion(1, 0)
        managed.flags = IS_COPIED if copied else 0
    address = ctypes.addressof(managed)
    _exports[address] = (managed, shape_arr, strides_arr, owner)
    name = NAME_VERSIONED if versioned else NAME
    capsule = _new_capsule(address, name, None)
    sweep()
    with _live_lock:
        _live.append(capsule)
    return capsule


def dlpack_device(x: ndarray) -> tuple[int, int]:
    """``(device_type, device_id)``: the backend's DLPack device type (kDLCUDA, kDLOpenCL...)."""
    return x.backend.dlpack_device_type, x.backend.device.index


def dlpack(x: ndarray, stream=None, max_version=None, dl_device=None, copy=None):
    """``x.__dlpack__``: see the module docstring."""
    versioned = max_version is not None and tuple(max_version)[0] >= 1
    here = dlpack_device(x)
    if dl_device is not None and tuple(dl_device) != here:
        if tuple(dl_device)[0] != CPU or copy is False:
            raise BufferError(f"cannot export an ember array on {here} to device {dl_device}")
        return _host_capsule(x, versioned)
    if not x.backend.shares_memory:
        if copy is False or dl_device is None:
            raise BufferError(
                f"DLPack export needs device memory with an address to share; "
                f"{x.backend.label or x.backend.name} buffers have none (ask for a host copy "
                "with dl_device=(1, 0), or use x.to_numpy())"
            )
        return _host_capsule(x, versioned)
    if copy:
        x = x.copy()
    _order_for_consumer(x.backend, stream)
    strides = None if x.c_strided else [s // x.dtype.itemsize for s in x.strides]
    ptr = x.buffer.handle + x.offset if x.size else 0
    return make_capsule(ptr, x.shape, strides, x.dtype, here, x, versioned, bool(copy))


def _host_capsule(x: ndarray, versioned: bool):
    host = x.to_numpy()
    strides = [s // host.itemsize for s in host.strides]
    return make_capsule(
        host.ctypes.data, host.shape, strides, x.dtype, (CPU, 0), host, versioned, copied=True
    )


def _order_for_consumer(backend, stream) -> None:
    """Make the consumer's ``stream`` wait for Ember's default stream (DLPack semantics)."""
    if stream == -1:
        return
    if stream == 0:
        raise ValueError("stream=0 is ambiguous for CUDA in DLPack; use 1 (legacy default)")
    backend.make_foreign_stream_wait(1 if stream is None else int(stream))


# --------------------------------------------------------------------- CUDA array interface
def cuda_array_interface(x: ndarray) -> dict:
    """``x.__cuda_array_interface__`` (version 3)."""
    if not (x.backend.shares_memory and x.backend.dlpack_device_type == CUDA):
        raise AttributeError("__cuda_array_interface__ exists only for CUDA device arrays")
    if x.dtype is dtypes.bfloat16:  # the interface's typestrs are NumPy's: none for it
        raise AttributeError(
            f"__cuda_array_interface__ has no typestr for {x.dtype}; share it through DLPack"
        )
    ours = x.backend.default_stream
    return {
        "shape": x.shape,
        "typestr": x.dtype.numpy.str,
        "data": (x.buffer.handle + x.offset if x.size else 0, False),
        "version": 3,
        "strides": None if x.c_strided else x.strides,
        "stream": None if ours.query() else int(ours.handle),
    }


# --------------------------------------------------------------------- import
class ForeignBuffer(Buffer):
    """Device memory owned by another library, kept alive by ``owner``; ``close()`` lets
    go of it (and calls the DLPack deleter, if there is one)."""

    __slots__ = ("handle", "nbytes", "owner", "_release")

    def __init__(self, handle: int, nbytes: int, owner, release=None):
        self.handle = handle
        self.nbytes = nbytes
        self.owner = owner
        self._release = release

    def close(self) -> None:
        release, self._release = self._release, None
        self.owner = None
        if release is not None:
            release()


def _backend_for(kind: int, what: str, index: int | None = None):
    """The current backend, if its kernels can use memory of DLPack device type ``kind``
    (on its device ``index`` when given: another device of the same backend)."""
    be = registry.current()
    if kind not in be.foreign_device_types:
        raise BufferError(
            f"{what} is {_DEVICE_NAMES.get(kind, f'DLPack device type {kind}')} memory, which "
            f"the current Ember backend ({be.label or be.name}) cannot use; select the "
            "backend of that device (EMBER_BACKEND)"
        )
    if index is not None and index != be.device.index:
        be = registry.device(be.name, index)
    return be


def _wrap(be, ptr: int, shape, strides_bytes, dt, owner, release=None) -> ndarray:
    """An ember array over foreign memory at ``ptr`` (strides in bytes, or None)."""
    shape = tuple(int(n) for n in shape)
    strides = c_strides(shape, dt.itemsize) if strides_bytes is None else tuple(strides_bytes)
    low = sum(s * (n - 1) for n, s in zip(shape, strides, strict=True) if s < 0 and n)
    high = sum(s * (n - 1) for n, s in zip(shape, strides, strict=True) if s > 0 and n)
    size = 0 if 0 in shape else high - low + dt.itemsize
    buf = ForeignBuffer(ptr + low, size, owner, release)
    return ndarray(shape, dt, buf, be, strides, -low)


def from_cuda_array_interface(obj: Any) -> ndarray:
    """An ember array viewing ``obj.__cuda_array_interface__`` memory (no copy)."""
    import numpy as np

    cai = obj.__cuda_array_interface__
    be = _backend_for(CUDA, type(obj).__name__)
    if cai.get("mask") is not None:
        raise ValueError("masked CUDA arrays are not supported")
    dt = dtypes.dtype(np.dtype(cai["typestr"]))
    # v3 names the producer's stream (None: nothing to wait for); older producers say
    # nothing, and their work is on the legacy default stream (PyTorch's and CuPy's default)
    stream = cai.get("stream", 1 if cai.get("version", 0) < 3 else None)
    if stream is not None:
        be.wait_for_foreign_stream(int(stream))
    return _wrap(be, int(cai["data"][0]), cai["shape"], cai.get("strides"), dt, obj)


def from_dlpack(x: Any, /, *, device=None, copy: bool | None = None) -> ndarray:
    """An ember array sharing the memory of any DLPack producer (PyTorch, CuPy, JAX,
    NumPy...).  CUDA memory is wrapped without a copy (``copy=True`` copies); host memory
    is copied to the device (``copy=False`` refuses).
    """
    if isinstance(x, ndarray):
        return x.copy() if copy else x
    kind, index = x.__dlpack_device__()
    if int(kind) == CPU:
        if copy is False:
            raise BufferError("from_dlpack of host memory needs a copy to the device")
        import numpy as np

        from ember.array.creation import asarray

        return asarray(np.from_dlpack(x))
    be = _backend_for(int(kind), type(x).__name__, int(index))
    stream = int(be.default_stream.handle)
    try:
        capsule = x.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:  # producers older than DLPack 1.0
        capsule = x.__dlpack__(stream=stream)
    out = _from_capsule(be, capsule, x)
    return out.copy() if copy else out


def _from_capsule(be, capsule, owner) -> ndarray:
    if _is_valid(capsule, NAME_VERSIONED):
        managed = DLManagedTensorVersioned.from_address(_pointer(capsule, NAME_VERSIONED))
        _set_name(capsule, USED_VERSIONED)
    elif _is_valid(capsule, NAME):
        managed = DLManagedTensor.from_address(_pointer(capsule, NAME))
        _set_name(capsule, USED)
    else:
        raise BufferError("not a DLPack capsule (or one that was already consumed)")
    t = managed.dl_tensor
    kind = _KINDS.get(t.dtype.code)
    if kind is None or t.dtype.lanes != 1:
        raise BufferError(
            f"DLPack dtype code {t.dtype.code} ({t.dtype.bits} bits) is not supported"
        )
    dt = dtypes.bool_ if kind == "bool" else dtypes.dtype(f"{kind}{t.dtype.bits}")
    shape = [t.shape[k] for k in range(t.ndim)]
    strides = [t.strides[k] * dt.itemsize for k in range(t.ndim)] if t.strides else None
    deleter = managed.deleter
    address = ctypes.addressof(managed)

    def release():
        if deleter:
            deleter(address)

    ptr = (t.data or 0) + t.byte_offset
    return _wrap(be, ptr, shape, strides, dt, owner, release)


# --------------------------------------------------------------------- namespace
def namespace(api_version: str | None = None):
    """``x.__array_namespace__()``: the ``ember`` module (Array API 2024.12)."""
    if api_version is not None and api_version not in API_VERSIONS:
        raise ValueError(
            f"Ember implements the Array API {', '.join(API_VERSIONS)}, not {api_version!r}"
        )
    import ember

    return ember


def to_device(x: ndarray, device, stream=None) -> ndarray:
    """``x.to_device(device)``: ``x`` itself when ``device`` is where it lives, else a copy
    (see :mod:`ember.array.devices`)."""
    from ember.array.devices import to_device as move

    return move(x, device, stream)
