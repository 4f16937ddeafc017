"""The kernel ABI: how each Python argument becomes C kernel parameters.

Used by the emitter (the parameter list and the prologue that rebuilds array structs) and by
the launcher (the backend's parameter types and the packing of arguments), so the two
cannot disagree.

Per kernel argument, in order:

* a number: one scalar parameter.  Python ints are ``int64``, Python floats ``float64``,
  bools travel as ``uint8`` (OpenCL has no bool kernel arguments) and 16-bit float scalars
  (float16, bfloat16) as ``float32`` (the value they have in registers); a complex number is
  two parameters, ``<name>_re`` and ``<name>_im``, of its part's float type (no struct
  crosses the launch API, whose struct layout rules differ between drivers);
* a tuple: its items, flattened, each as a number;
* an array of ``ndim`` dimensions: ``<name>_data`` (a device pointer), in a dialect with
  ``separate_offsets`` ``<name>_start`` (the element offset of the view: OpenCL cannot
  offset a buffer argument; CUDA folds the offset into the pointer), ``<name>_shape0..``
  (int64), and for non-contiguous ("A" layout) arrays ``<name>_stride0..`` (int64, in
  elements, may be negative).

A kernel that calls ``ember.grid_sync()`` takes a hidden ``em_gbar`` (a pointer to a barrier
word of the launch's stream, from the backend's ``grid_barrier(stream)``).

A kernel that can fail (``ir.Function.can_fail``: ``raise``, ``assert`` or checks) takes three
hidden trailing parameters, supplied by the launcher, never by the user: ``em_claim`` (a
pointer to the context's claim word), ``em_rec`` (a pointer to its error record) and
``em_kid`` (``uint32``, the id of the specialization; :mod:`ember.diagnostics.device_errors`).
The record is :data:`RECORD_WORDS` int64 words, written by the failing thread
(:mod:`ember.codegen.runtime_checks`) and read on the host once its first word is
:data:`DONE`.  Kernels that cannot fail keep the plain ABI above.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ember import dtypes
from ember._records import record
from ember.codegen.dialects.base import Dialect
from ember.dtypes import DType
from ember.frontend.types import Array, Scalar

if TYPE_CHECKING:  # a launch from the cache needs the ABI, only a compile the IR
    from ember.frontend import ir

RECORD_WORDS = 16  # state, kernel id, site, block xyz, thread xyz, value 0, value 1, spare
DONE = 2  # record[0] once the winner has written everything


@record(frozen=True)
class AbiParam:
    """One C kernel parameter."""

    name: str
    # "scalar" | "re" | "im" | "data" | "start" | "shape" | "stride" | "grid" | "claim" |
    # "record" | "kid"
    kind: str
    dtype: DType | None  # the scalar type passed (None for "data")
    arg: int  # index of the Python argument
    path: tuple[int, ...]  # position inside a tuple argument
    axis: int = 0
    itemsize: int = 0  # of the array's elements ("start", "stride": bytes -> elements)


def abi_names(var_name: str, t: Array, dialect: Dialect) -> list[str]:
    """The C parameter names an array parameter ``var_name`` expands to."""
    names = [f"{var_name}_data"]
    if dialect.separate_offsets:
        names.append(f"{var_name}_start")
    names += [f"{var_name}_shape{k}" for k in range(t.ndim)]
    if t.layout == "A":
        names += [f"{var_name}_stride{k}" for k in range(t.ndim)]
    return names


def scalar_abi_dtype(t: Scalar) -> DType:
    """The dtype a scalar argument of type ``t`` is passed as."""
    if t.dtype is dtypes.bool_:
        return dtypes.uint8
    if t.dtype.is_narrow:  # the value a 16-bit float has in registers
        return dtypes.float32
    return t.dtype


def kernel_abi(fn: ir.Function, dialect: Dialect) -> list[AbiParam]:
    """The C parameters of kernel ``fn``, in order."""
    out: list[AbiParam] = []
    sources = fn.param_sources  # type: ignore[attr-defined]
    for var, (arg, path) in zip(fn.params, sources, strict=True):
        t = var.type
        if isinstance(t, Scalar) and t.dtype.is_complex:
            for part in ("re", "im"):
                out.append(AbiParam(f"{var.name}_{part}", part, t.dtype.real, arg, path))
            continue
        if isinstance(t, Scalar):
            name = f"{var.name}_u8" if t.dtype is dtypes.bool_ else var.name
            out.append(AbiParam(name, "scalar", scalar_abi_dtype(t), arg, path))
            continue
        assert isinstance(t, Array)
        size = t.dtype.itemsize
        out.append(AbiParam(f"{var.name}_data", "data", None, arg, path, 0, size))
        if dialect.separate_offsets:
            out.append(AbiParam(f"{var.name}_start", "start", dtypes.int64, arg, path, 0, size))
        for k in range(t.ndim):
            out.append(AbiParam(f"{var.name}_shape{k}", "shape", dtypes.int64, arg, path, k))
        if t.layout == "A":
            for k in range(t.ndim):
                out.append(
                    AbiParam(f"{var.name}_stride{k}", "stride", dtypes.int64, arg, path, k, size)
                )
    if getattr(fn, "grid_sync", False):  # a barrier word of the launch (grid_sync)
        out.append(AbiParam("em_gbar", "grid", None, -1, ()))
    if getattr(fn, "dynamic_bytes", False):  # the launch's shared_mem (ember.shared(0, ..))
        out.append(AbiParam("em_dyn_bytes", "dynbytes", dtypes.int64, -1, ()))
    if fn.can_fail:
        out += [
            AbiParam("em_claim", "claim", None, -1, ()),
            AbiParam("em_rec", "record", None, -1, ()),
            AbiParam("em_kid", "kid", dtypes.uint32, -1, ()),
        ]
    return out
