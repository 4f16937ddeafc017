"""Kernel arguments at launch: the signature (hot path), the kernel types (first launch) and
the packing of native values (generated once per specialization).

Hot path (every launch)
    :func:`signature` maps each argument to a small hashable key - its Python type for
    numbers, ``(dtype, ndim, layout, backend)`` for Ember arrays - and the kernel looks the
    tuple up in its specializations.  Nothing is hashed or typed beyond that.
Slow path (first launch of a signature)
    :func:`arg_type` gives the kernel type of each argument, or an :class:`ArgProblem` that
    the kernel turns into a located :class:`~ember.errors.ArgumentError`.
Packing
    :func:`make_packer` writes a Python function for one specialization that turns the
    arguments into the backend's native values, following :mod:`ember.codegen.abi`.

Foreign arrays: any object with ``__cuda_array_interface__`` (CuPy, PyTorch, Numba) or
``__dlpack__`` on a device is passed by its device address, without a copy, to a backend
whose ``foreign_device_types`` holds its DLPack device type (CUDA).
"""

from __future__ import annotations

import ctypes
import functools
import types as pytypes
from typing import Any

from ember import dtypes
from ember.codegen.abi import AbiParam
from ember.frontend import launchsize
from ember.frontend.intrinsics import intrinsic_name
from ember.frontend.types import (
    WEAK_COMPLEX,
    WEAK_FLOAT,
    WEAK_INT,
    Array,
    CompileTime,
    Tuple,
    Type,
    as_dtype,
    scalar,
)
from ember.runtime import argtypes
from ember.runtime.allocator import note_uses
from ember.runtime.argtypes import launch_view, layout, token
from ember.runtime.backend import DL_CPU, DL_CUDA


class Slow(Exception):
    """An argument the hot path does not key (tuples of tuples, foreign arrays...)."""


class ArgProblem(Exception):
    """An argument that cannot be passed: ``message`` and ``hint``."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint


def _scalar_types() -> dict[type, Type]:
    import numpy as np

    table: dict[type, Type] = {
        bool: scalar(dtypes.bool_),
        int: WEAK_INT,
        float: WEAK_FLOAT,
        complex: WEAK_COMPLEX,
    }
    for d in dtypes.ALL:
        t = dtypes.loaded_scalar_type(d)  # (bfloat16: ml_dtypes', once it is imported)
        if t is not None:
            table[t] = scalar(d)
    table[np.bool_] = scalar(dtypes.bool_)
    return table


SCALARS = _scalar_types()


def _late_scalar(t: type) -> bool:
    """Whether ``t`` is ml_dtypes' scalar type, imported after :data:`SCALARS` (it joins)."""
    if t.__module__ == "ml_dtypes":
        SCALARS.update(_scalar_types())
    return t in SCALARS


def signature(args: tuple) -> tuple:
    """The hashable key of the argument types (raises :class:`Slow` for unusual ones)."""
    key = []
    array = argtypes.ARRAY
    for a in args:
        t = type(a)
        if t is array:
            key.append((a.dtype, len(a.shape), layout(a), a.backend))
        elif t in SCALARS:
            key.append(t)
        elif t is tuple and all(type(i) in SCALARS for i in a):
            key.append(tuple(map(type, a)))
        elif t in _STATIC:  # a compile-time argument: the object itself
            key.append((_STATIC_KEY, a))
        else:
            raise Slow
    return tuple(key)


_STATIC = (pytypes.FunctionType, dtypes.DType)
_STATIC_KEY = object()  # marks compile-time items in signatures


# ------------------------------------------------------------------------- foreign arrays


class ForeignArray:
    """A device array of another library, seen through its interface (no copy);
    ``device_type`` is its DLPack device type (``None``: a host stand-in for inspection)."""

    __slots__ = ("ptr", "shape", "strides", "dtype", "offset", "owner", "device_type")

    def __init__(self, ptr: int, shape, strides, dtype, owner, device_type=DL_CUDA):
        self.ptr = ptr
        self.device_type = device_type
        self.shape = tuple(shape)
        item = dtype.itemsize
        if strides is None:
            strides, step = [], item
            for n in reversed(self.shape):
                strides.insert(0, step)
                step *= max(n, 1)
        self.strides = tuple(strides)
        self.dtype = dtype
        self.offset = 0
        self.owner = owner  # keeps the memory alive while the launch is built


def foreign(value: Any) -> ForeignArray | None:
    """``value`` as a :class:`ForeignArray` if it exposes device memory (the CUDA Array
    Interface, or DLPack on any device but the host's), else None.  Whether the kernel's
    backend can use it is the backend's ``foreign_device_types``."""
    cai = getattr(value, "__cuda_array_interface__", None)
    if isinstance(cai, dict):
        import numpy as np

        dt = dtypes.dtype(np.dtype(cai["typestr"]))
        return ForeignArray(int(cai["data"][0]), cai["shape"], cai.get("strides"), dt, value)
    if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        device_type, _ = value.__dlpack_device__()
        if int(device_type) != DL_CPU:  # host memory: copied explicitly (ember.asarray)
            return _from_dlpack(value, int(device_type))
    return None


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
        ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8),
        ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
        ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]  # fmt: skip


_DL_KINDS = {0: "int", 1: "uint", 2: "float", 5: "complex", 6: "bool"}


def _from_dlpack(value: Any, device_type: int) -> ForeignArray:
    capsule = value.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    t = _DLTensor.from_address(get(capsule, b"dltensor"))
    kind = _DL_KINDS.get(t.code)
    if kind is None or t.lanes != 1:
        raise ArgProblem(f"DLPack dtype code {t.code} ({t.bits} bits) is not supported")
    dt = dtypes.bool_ if kind == "bool" else dtypes.dtype(f"{kind}{t.bits}")
    shape = [t.shape[k] for k in range(t.ndim)]
    strides = [t.strides[k] * dt.itemsize for k in range(t.ndim)] if t.strides else None
    ptr = (t.data or 0) + t.byte_offset
    return ForeignArray(ptr, shape, strides, dt, (value, capsule), device_type)


# ------------------------------------------------------------------------- typing


def static_value(value: Any) -> Any:
    """``value`` as a compile-time argument (a dtype, a function, a tuple of those), or
    None when it is not one."""
    if isinstance(value, tuple):
        items = [static_value(v) for v in value]
        return tuple(items) if value and all(i is not None for i in items) else None
    if isinstance(value, pytypes.FunctionType) or intrinsic_name(value) is not None:
        return value
    if isinstance(getattr(value, "__ember_py_func__", None), pytypes.FunctionType):
        return value  # an @ember.kernel, called as a device function
    return as_dtype(value)


def arg_type(value: Any) -> Type:
    """The kernel type of one launch argument (raises :class:`ArgProblem`)."""
    t = type(value)
    if t in SCALARS or _late_scalar(t):
        return SCALARS[t]
    static = static_value(value) if t not in (int, float, bool) else None
    if static is not None:
        return CompileTime(static)
    if isinstance(value, ForeignArray) or argtypes.is_array(value):
        kind = layout(value)  # type: ignore[arg-type]
        if not kind:
            raise ArgProblem(
                "this array view's offset or strides are not multiples of its item size",
                "copy it into a new array first",
            )
        return Array(value.dtype, len(value.shape), kind)
    if isinstance(value, tuple):
        items = tuple(arg_type(v) for v in value)
        if not all(i in SCALARS.values() for i in items):
            # the launch (guards, devices, stream bookkeeping) sees only top-level arrays
            raise ArgProblem(
                "a tuple passed to a kernel may hold numbers only (or only compile-time "
                "values: dtypes, functions)",
                "pass arrays as separate arguments; `def k(*arrays)` collects them into a "
                "tuple inside the kernel",
            )
        return Tuple(items)
    if t.__module__ == "numpy" and hasattr(value, "shape"):
        raise ArgProblem(
            "a NumPy array is host memory and cannot be passed to a kernel",
            "copy it to the device explicitly with ember.asarray(x) first",
        )
    if isinstance(value, list):
        raise ArgProblem(
            "a list cannot be passed to a kernel",
            "pass a tuple of numbers, or an array: ember.asarray(x)",
        )
    raise ArgProblem(
        f"a {t.__module__}.{t.__name__} cannot be passed to a kernel",
        "kernels take ember arrays, numbers, tuples of numbers, and (on CUDA) arrays with "
        "__cuda_array_interface__ or DLPack",
    )


# ------------------------------------------------------------------------- packing


def _native(p: AbiParam, foreign_args: set[int], offsets: bool) -> str:
    """The Python expression of one native argument value (see :mod:`ember.codegen.abi`)."""
    if p.kind in _HIDDEN:
        return _HIDDEN[p.kind]
    v = f"a{p.arg}" + "".join(f"[{k}]" for k in p.path)
    if p.kind == "scalar":
        return v
    if p.kind in ("re", "im"):  # the parts of a complex number (codegen/abi.py)
        return f"{v}.{'real' if p.kind == 're' else 'imag'}"
    if p.kind == "data":
        if p.arg in foreign_args:
            return f"{v}.ptr"
        # the value backend.native_pointer(buffer, offset) gives, without its checks on the
        # hot path: with the offset folded in (a dialect without separate offsets runs on a
        # backend with pointer_offsets: Buffer.handle is the address), else the buffer
        return f"{v}.buffer.handle" if offsets else f"{v}.buffer.handle + {v}.offset"
    if p.kind == "start":
        return f"{v}.offset // {p.itemsize}"
    if p.kind == "shape":
        return f"{v}.shape[{p.axis}]"
    return f"{v}.strides[{p.axis}] // {p.itemsize}"


# The hidden arguments of kernels that can fail (codegen/abi.py): names bound in the
# generated code's namespace to the values diagnostics.device_errors.attach() returns.
_HIDDEN = {
    "claim": "_em_claim",
    "record": "_em_rec",
    "kid": "_em_kid",
    "grid": "_em_grid(stream)",  # grid_sync's barrier word, one per stream
    "dynbytes": "shared_mem",  # the launch's dynamic shared memory (ember.shared(0, ...))
}


def _array_tokens(t: Array, backend) -> Any:
    """What array type ``t``'s guard accepts as the first item of a launch view: the token of
    its layout, or for a strided ``t`` a frozenset with the C token too."""
    key = (t.dtype, backend, t.ndim)
    if t.layout == "C":
        return token((*key, "C"))
    return frozenset(token((*key, lay)) for lay in ("C", t.layout))


def _array_guard(i: int, t: Array, backend, namespace: dict[str, Any]) -> str:
    """The guard of array argument ``a<i>``: its launch view ``v<i>`` (made on the array's
    first launch) has the token of ``t``'s layout, or for a strided ``t`` the C token too."""
    view = f"((v{i} := a{i}._lv) or (v{i} := _view(a{i})))[0]"
    namespace[f"_k{i}"] = _array_tokens(t, backend)
    return f"type(a{i}) is _nd and {view} {'is' if t.layout == 'C' else 'in'} _k{i}"


def _view_item(p: AbiParam, t: Array) -> int | None:
    """The item of array ``t``'s launch view that native value ``p`` is (None: not one)."""
    if p.kind == "data":
        return 1
    if p.kind == "shape":
        return 3 + p.axis
    if p.kind in ("start", "stride") and p.itemsize == t.dtype.itemsize:  # in elements
        return 2 if p.kind == "start" else 3 + t.ndim + p.axis
    return None  # anything else (another item size): from the array, as before


def _view_value(p: AbiParam, t: Array) -> str | None:
    """The launch-view expression of native value ``p`` of array argument ``t`` (None: not
    from the view)."""
    k = _view_item(p, t)
    return None if k is None else f"v{p.arg}[{k}]"


def _native_guards(abi, types: list[Type], backend) -> tuple[tuple, bytes] | None:
    """The guards and value sources of :meth:`Function.guarded_runner` (its encoding: the
    CUDA stub's ``runner``) for a specialization, or None where some argument or value is
    beyond it (tuples, complex parts, hidden arguments...)."""
    if len(types) > 255:  # the encoding's argument numbers are bytes
        return None
    guards: list[tuple] = []
    for t in types:
        if isinstance(t, Array):
            guards.append((1, argtypes.ARRAY, _array_tokens(t, backend)))
        elif isinstance(t, CompileTime):
            guards.append((2, t.value, None))
        elif isinstance(t, Tuple):
            return None
        else:
            guards.append((0, next(c for c, st in SCALARS.items() if st == t), None))
    sources = bytearray()
    for p in abi:
        if p.kind in _HIDDEN or p.path or not 0 <= p.arg < len(types):
            return None
        t = types[p.arg]
        item = _view_item(p, t) if isinstance(t, Array) else (-1 if p.kind == "scalar" else None)
        if item is None:
            return None
        sources += bytes((p.arg, item + 1))
    return tuple(guards), bytes(sources)


def _guard(i: int, t: Type, backend, namespace: dict[str, Any]) -> str:
    """A Python condition true when argument ``a<i>`` has exactly the type ``t``."""
    v = f"a{i}"
    if isinstance(t, Array):
        return _array_guard(i, t, backend, namespace)
    if isinstance(t, CompileTime):  # the very object the kernel was specialized on
        namespace[f"_c{i}"] = t.value
        return f"({v} is _c{i} or {v} == _c{i})"
    if isinstance(t, Tuple):
        items = [f"type({v}) is tuple", f"len({v}) == {len(t.items)}"]
        for k, it in enumerate(t.items):
            cls = next(c for c, st in SCALARS.items() if st == it)
            namespace[f"_t{i}_{k}"] = cls
            items.append(f"type({v}[{k}]) is _t{i}_{k}")
        return " and ".join(items)
    cls = next(c for c, st in SCALARS.items() if st == t)
    namespace[f"_t{i}"] = cls
    return f"type({v}) is _t{i}"


def _grid(abi, backend) -> dict[str, Any]:
    """The name the ``grid`` hidden argument calls: the backend's barrier word per stream."""
    if any(p.kind == "grid" for p in abi):
        return {"_em_grid": backend.grid_barrier}
    return {}


@functools.lru_cache(maxsize=1024)
def _code(source: str, name: str) -> pytypes.CodeType:
    """The compiled form of generated ``source`` (specializations of one shape generate
    the same text: compiled once, executed in each one's own namespace)."""
    return compile(source, name, "exec")


def make_packer(
    abi: list[AbiParam], nargs: int, foreign_args: set[int], backend, hidden=None
) -> Any:
    """A function ``pack(*args) -> tuple`` of native values for one specialization.

    ``hidden``: the values of a failing kernel's hidden arguments (``_em_claim``...)."""
    offsets = backend.dialect.separate_offsets
    values = "".join(f"        {_native(p, foreign_args, offsets)},\n" for p in abi)
    params = "".join(f"a{i}, " for i in range(nargs))
    source = f"def pack({params}stream=None, shared_mem=0):\n    return (\n{values}    )\n"
    namespace: dict[str, Any] = {**_grid(abi, backend), **(hidden or {})}
    exec(_code(source, "<ember argument packing>"), namespace)  # noqa: S102
    pack = namespace["pack"]
    pack.source = source
    return pack


def _dynamic_bytes(info: dict | None) -> str | None:
    """The Python expression of the dynamic shared bytes a launch needs, from the stored
    layout (ValueError for a malformed one: a damaged cache entry)."""
    return launchsize.layout_bytes(info or {})


def make_shared_bytes(info: dict | None, nargs: int) -> Any:
    """``shared_bytes(grid, block, args)`` for a kernel with dynamic shared memory, else
    None."""
    text = _dynamic_bytes(info)
    if text is None:
        return None
    names = "".join(f"a{i}, " for i in range(nargs))
    source = f"def shared_bytes(grid, block, args):\n    ({names}) = args\n    return {text}\n"
    namespace: dict[str, Any] = {}
    exec(_code(source, "<ember shared memory size>"), namespace)  # noqa: S102
    return namespace["shared_bytes"]


def make_runner(
    abi,
    types: list[Type],
    foreign_args: set[int],
    backend,
    launch,
    hidden=None,
    info=None,
    function=None,
) -> Any:
    """A function ``run(grid, block, shared_mem, stream, args) -> bool`` that launches when
    the arguments have exactly this specialization's types (and returns False otherwise).

    It is the launch fast path: type guards, native values and the backend's launch in one
    generated function, so a launch costs three Python calls (launcher, this, backend).

    A kernel that can fail (``hidden`` given) also reports an earlier launch's failure
    before launching and books the launch for the error check after it
    (:mod:`ember.diagnostics.device_errors`).

    ``function``: the :class:`~ember.runtime.backend.Function` whose ``launch`` is
    ``launch``; where it offers a native runner (:meth:`Function.guarded_runner`: the CUDA
    stub) for these arguments, that is returned instead of the Python function: the same
    guards and values in one C call (on an H200 host the Python one cost 0.5-1.2 us of a
    4-5 us launch)."""
    dynamic = _dynamic_bytes(info)
    if function is not None and not (foreign_args or hidden or dynamic) and len(abi) <= 64:
        spec = _native_guards(abi, types, backend)
        native = None if spec is None else function.guarded_runner(*spec, launch_view, note_uses)
        if native is not None:
            return native
    offsets = backend.dialect.separate_offsets
    namespace: dict[str, Any] = {
        "_nd": argtypes.ARRAY,
        "_be": backend,
        "_launch": launch,
        "_note": note_uses,
        **_grid(abi, backend),
        **(hidden or {}),
    }
    nargs = len(types)
    namespace["_view"] = launch_view
    if foreign_args:
        guard = "False"
    else:
        guard = " and ".join(_guard(i, t, backend, namespace) for i, t in enumerate(types))
        guard = guard or "True"

    def value(p: AbiParam) -> str:
        t = types[p.arg] if p.kind not in _HIDDEN and 0 <= p.arg < nargs else None
        viewed = None
        if isinstance(t, Array) and not p.path and not foreign_args:
            viewed = _view_value(p, t)
        return viewed or _native(p, foreign_args, offsets)

    values = "".join(f"            {value(p)},\n" for p in abi)
    names = "".join(f"a{i}, " for i in range(nargs))
    source = (
        "def run(grid, block, shared_mem, stream, args):\n"
        "    try:\n"
        f"        ({names}) = args\n"
        "    except ValueError:\n"
        "        return False\n"
        f"    if {guard}:\n"
        + (f"        shared_mem = max(shared_mem, {dynamic})\n" if dynamic else "")
        + ("        _em_before()\n" if hidden else "")
        + f"        _launch(grid, block, (\n{values}        ), shared_mem, stream)\n"
        + ("        _em_launched(stream)\n" if hidden else "")
        + "        if stream is not None:\n"
        "            _note(args, stream)\n"
        "        return True\n"
        "    return False\n"
    )
    exec(_code(source, "<ember launch fast path>"), namespace)  # noqa: S102
    run = namespace["run"]
    run.source = source
    return run


def make_bound(abi, native: tuple, varying: dict[int, tuple[int, int]], launch, grid, block,
               offsets: bool, slots: int | None = None) -> Any:  # fmt: skip
    """A function ``go(s0, s1, ...)`` launching one specialization with every native value
    fixed (``native``: what :func:`make_packer`'s function gave for a template of the
    arguments) except the addresses of the arrays named in ``varying``: argument ``i``
    becomes the array ``s<k>`` at ``delta`` more bytes for ``varying[i] == (k, delta)``.

    No guard runs: the caller promises that each ``s<k>`` has the dtype, backend, shape and
    strides the template's argument had and an offset aligned to its items, and launches
    on the default stream (no other stream is noted).  Values used more than once are
    computed once.  ``slots``: how many arrays ``go`` takes (default: up to the last one
    named in ``varying``)."""
    parts: list[str] = []
    const: list[Any] = []
    lines: list[str] = []
    names: dict[tuple, str] = {}
    namespace: dict[str, Any] = {"_launch": launch, "_grid": grid, "_block": block}

    def flush() -> None:  # a run of fixed values: one constant tuple, unpacked
        if const:
            name = f"_k{len(parts)}"
            namespace[name] = tuple(const)
            parts.append(f"*{name}")
            const.clear()

    for p, value in zip(abi, native, strict=True):
        slot = varying.get(p.arg)
        if slot is None or p.kind not in ("data", "start"):
            const.append(value)
            continue
        flush()
        k, delta = slot
        key = (p.kind, k, delta, p.itemsize)
        if key not in names:
            names[key] = f"v{len(names)}"
            at = f"s{k}.offset + {delta}" if delta else f"s{k}.offset"
            if p.kind == "start":
                expr = f"({at}) // {p.itemsize}"
            else:
                expr = f"s{k}.buffer.handle" if offsets else f"s{k}.buffer.handle + {at}"
            lines.append(f"    {names[key]} = {expr}\n")
        parts.append(names[key])
    flush()
    count = 1 + max((k for k, _ in varying.values()), default=-1) if slots is None else slots
    params = ", ".join(f"s{k}" for k in range(count))
    values = f"({', '.join(parts)},)" if parts else "()"
    call = f"    _launch(_grid, _block, {values}, 0, None)\n"
    source = f"def go({params}):\n" + "".join(lines) + call
    exec(_code(source, "<ember bound launch>"), namespace)  # noqa: S102
    go = namespace["go"]
    go.source = source
    return go
