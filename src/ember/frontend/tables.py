"""Captured NumPy arrays as read-only constant tables (a mixin of
:class:`~ember.frontend.typer.FunctionTyper`).

A kernel (or a function it calls) that reads a NumPy array from its globals or closure -
filter taps, a lookup table - gets the array's values compiled into the program:
``__constant__`` memory on CUDA and ``__constant`` on OpenCL, up to the target's constant
memory (CUDA 64 KiB; an OpenCL device's ``CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE``).  Past it,
CUDA keeps the rest as initialized device-memory arrays (``__device__ const``); a dialect
without program-scope device memory (OpenCL 1.2) refuses, saying to pass the array as an
argument.

Like every captured value the array is read at the kernel's first compile and frozen for
the kernel object's life; its bytes are part of the cache key.  Constant memory is cached
and broadcast: fastest when the threads of a warp read the same element (filter taps), and
serialized when they read different ones (then an array argument is faster).
"""

from __future__ import annotations

import ast

from ember import dtypes
from ember.errors import KernelTypeError
from ember.frontend import ir
from ember.frontend.types import Array
from ember.frontend.values import c_identifier


def is_table(obj) -> bool:
    """Whether ``obj`` is a host NumPy array (a captured table)."""
    return type(obj).__module__ == "numpy" and type(obj).__name__ == "ndarray"


class TableTyper:
    """Captured NumPy arrays become constant tables of the program."""

    def table(self, array, node: ast.AST, name: str | None) -> ir.Expr:
        import numpy as np

        ctx = self.ctx
        found = ctx.tables.get(id(array))
        if found is not None:
            return ir.Ref(found[0].type, found[0])
        try:
            dt = dtypes.dtype(array.dtype)
        except (TypeError, ValueError):
            raise self.fail(
                KernelTypeError, f"a kernel cannot read a captured {array.dtype} array",
                node, "tables hold booleans, integers or floats",
            ) from None  # fmt: skip
        if dt.is_complex and not np.all(np.isfinite(array)):
            raise self.fail(
                KernelTypeError, "a captured complex table must hold finite values", node,
                "pass an array with infinities or NaN as a kernel argument",
            )  # fmt: skip
        if array.ndim == 0 or array.size == 0:
            raise self.fail(
                KernelTypeError, f"a captured table must have elements (shape {array.shape})",
                node, "capture a number instead of a 0-d array",
            )  # fmt: skip
        data = np.ascontiguousarray(array)
        base = "em_tbl_" + c_identifier(name or "table").rstrip("_")
        shape = tuple(data.shape)
        t = Array(dt, data.ndim, "C", "constant", shape)
        var = ir.Variable(ctx.function_names.internal(base), t, name or "table")
        var.placement = self._placement(data.nbytes, node)  # type: ignore[attr-defined]
        ctx.tables[id(array)] = (var, data)
        return ir.Ref(var.type, var)

    def _placement(self, nbytes: int, node: ast.AST) -> str:
        """``"constant"`` (constant memory) or ``"device"`` (initialized device memory,
        where the constant memory is full and the target has it); the table's type is
        read-only (space ``"constant"``) either way."""
        ctx = self.ctx
        limit = self.target.constant_bytes
        if ctx.constant_bytes + nbytes <= limit:
            ctx.constant_bytes += nbytes
            return "constant"
        if self.target.has("global_tables"):
            return "device"
        raise self.unsupported(
            f"the captured tables need {ctx.constant_bytes + nbytes} bytes of constant "
            f"memory; this device offers {limit}", node,
            "pass the large array as a kernel argument (ember.asarray(table))",
        )  # fmt: skip
