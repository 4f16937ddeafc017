"""Typing of the parallel primitives: thread indices, barriers, shared and per-thread
arrays, atomics (a mixin of :class:`~ember.frontend.typer.FunctionTyper`; warp operations
are in :mod:`~ember.frontend.warps`).

What a target lacks is reported here, before any device work, with
:class:`~ember.errors.UnsupportedFeatureError`: 64-bit atomics without
``cl_khr_int64_base_atomics``, ``grid_sync`` without a cooperative launch.
"""

from __future__ import annotations

import ast

from ember import dtypes
from ember.errors import KernelSyntaxError, KernelTypeError, UnsupportedFeatureError
from ember.frontend import ir, launchsize, messages, ranges
from ember.frontend.operators import OperatorError, cast
from ember.frontend.types import VOID, WEAK_INT, Array, as_dtype, describe, scalar
from ember.frontend.values import ArrayVal, Static, TupleVal, Value

ATOMIC_DTYPES = (
    dtypes.int32,
    dtypes.uint32,
    dtypes.int64,
    dtypes.uint64,
    dtypes.float32,
    dtypes.float64,
)
# compare-and-swap and exchange: every integer and float type (8- and 16-bit elements
# through a compare-and-swap loop on the 32-bit word that holds them)
EXCHANGE_DTYPES = (
    dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, *ATOMIC_DTYPES, dtypes.float16,
    dtypes.bfloat16,
)  # fmt: skip
_BITWISE = ("and", "or", "xor")


class ParallelTyper:
    """Thread indexing, synchronization, shared memory, atomics, shuffles."""

    def unsupported(self, message: str, node: ast.AST, hint: str) -> Exception:
        return messages.error(
            UnsupportedFeatureError,
            message,
            self.loc(node),
            messages.STAGE_TARGET,
            hint,
            self.ctx.notes(),
        )

    # ------------------------------------------------------------------ indices
    def index_intrinsic(self, name: str, axis: int) -> ir.Expr:
        return ir.Intrinsic(WEAK_INT, name, [ir.Const(WEAK_INT, axis)])

    def _axis(self, node: ast.Call, what: str) -> int:
        (axis,) = self.args_of(node, ("axis",), 0)
        k = self.const_int(axis, node, f"{what}() axis", 0)
        if not 0 <= k <= 2:
            raise self.fail(KernelTypeError, f"{what}() axis must be 0, 1 or 2", node)
        return k

    def _k_global_id(self, node: ast.Call) -> Value:
        return self.index_intrinsic("global_id", self._axis(node, "global_id"))

    def _k_global_size(self, node: ast.Call) -> Value:
        return self.index_intrinsic("global_size", self._axis(node, "global_size"))

    def _k_grid(self, node: ast.Call) -> Value:
        (ndim,) = self.args_of(node, ("ndim",), 1)
        n = self.const_int(ndim, node, "grid() ndim", 1)
        if not 1 <= n <= 3:
            raise self.fail(KernelTypeError, "grid(ndim) needs ndim 1, 2 or 3", node)
        ids = [self.index_intrinsic("global_id", k) for k in range(n)]
        return ids[0] if n == 1 else TupleVal(list(ids))

    def _k_barrier(self, node: ast.Call) -> Value:
        self.args_of(node, (), 0)
        return ir.Intrinsic(VOID, "barrier", [])

    def _k_threadfence(self, node: ast.Call) -> Value:
        self.args_of(node, (), 0)
        return ir.Intrinsic(VOID, "threadfence", [])

    def _k_grid_sync(self, node: ast.Call) -> Value:
        self.args_of(node, (), 0)
        if not self.target.has("cooperative_launch"):
            raise self.unsupported(
                "ember.grid_sync() needs a cooperative launch (every block of the grid "
                "resident at once), which this device's backend does not offer", node,
                "split the kernel into two launches at the grid_sync(): the end of a launch "
                "synchronizes the whole grid",
            )  # fmt: skip
        self.ctx.grid_sync = True
        return ir.Intrinsic(VOID, "grid_sync", [])

    # ------------------------------------------------------------------ shared / local arrays
    def _array_dtype(self, dtype_v: Value, node: ast.Call, what: str):
        dtype = as_dtype(dtype_v.obj) if isinstance(dtype_v, Static) else None
        if dtype is None:
            raise self.fail(
                KernelTypeError, f"ember.{what}() needs a dtype, e.g. ember.float32", node
            )
        return dtype

    def _k_shared(self, node: ast.Call) -> Value:
        shape_v, dtype_v = self.args_of(node, ("shape", "dtype"), 2)
        dtype = self._array_dtype(dtype_v, node, "shared")
        items = shape_v.items if isinstance(shape_v, TupleVal) else [shape_v]
        shape = _static_shape(items)
        if shape is not None:
            return ArrayVal(Array(dtype, len(shape), "C", "shared", shape))
        if len(items) == 1 and isinstance(items[0], ir.Const) and items[0].value == 0:
            return self._rest_of_dynamic(dtype, node)
        if not self.is_kernel:
            raise self.fail(
                KernelSyntaxError, "a shared array whose size is known only at launch can "
                "only be made in the kernel itself, not in a device function", node,
                "make it in the kernel and pass it to the function",
            )  # fmt: skip
        sizes = [self._launch_size(i, node) for i in items]
        return ArrayVal(Array(dtype, len(sizes), "C", "shared", None), sizes)

    def _rest_of_dynamic(self, dtype, node: ast.Call) -> Value:
        """``ember.shared(0, dtype)`` (Numba's spelling): the launch's dynamic shared
        memory after the sized arrays, its extent from the bytes the launch gives
        (``k[grid, block, shared_bytes]`` or ``shared_mem=``)."""
        if not self.is_kernel or self.rest_made:
            raise self.fail(
                KernelSyntaxError, "ember.shared(0, dtype) (the rest of the launch's dynamic "
                "shared memory) can be made once, in the kernel itself", node,
                "give the other arrays sizes, or carve one array yourself",
            )  # fmt: skip
        self.rest_made = True
        size = ir.Intrinsic(WEAK_INT, "dynamic_rest", [ir.Const(WEAK_INT, dtype.itemsize)])
        return ArrayVal(Array(dtype, 1, "C", "shared", None), [size])

    def _launch_size(self, item: Value, node: ast.Call) -> ir.Expr:
        """One extent of a dynamic shared array: an integer the launch can compute from the
        kernel's arguments, their shapes and ``ember.block_dim`` (it sizes the memory)."""
        e = self.scalar_arg(item, node, "ember.shared()")
        if not e.type.dtype.is_integer or (isinstance(e, ir.Const) and e.value <= 0):
            raise self.fail(
                KernelTypeError, "ember.shared() needs positive integer extents", node,
                "e.g. ember.shared(ember.block_dim.x, ember.float32)",
            )  # fmt: skip
        tree = launchsize.tree(e, self.launch_args())
        if tree is None:
            raise self.fail(
                KernelTypeError, "the size of a shared array must be a constant or computable "
                "at launch: from the kernel's arguments (not reassigned in the kernel), their "
                "shapes, ember.block_dim and constants, with + - * // << >> min max", node,
                "e.g. ember.shared(n, ember.float32) with n a kernel argument, or "
                "ember.shared(ember.block_dim.x, ember.float32)",
            )  # fmt: skip
        return e

    def launch_args(self) -> dict:
        """Kernel parameter variables never reassigned -> (argument index, tuple path)."""
        stored = ranges.stored_names(self.cap.tree.body)
        names = [a.arg for a in self.cap.tree.args.args]
        return {
            id(var): source
            for var, source in zip(self.params, self.param_sources, strict=True)
            if names[source[0]] not in stored
        }

    def _k_local(self, node: ast.Call) -> Value:
        shape_v, dtype_v = self.args_of(node, ("shape", "dtype"), 2)
        dtype = self._array_dtype(dtype_v, node, "local")
        items = shape_v.items if isinstance(shape_v, TupleVal) else [shape_v]
        shape = _static_shape(items)
        if shape is None:
            raise self.fail(
                KernelTypeError, "ember.local() needs a shape of positive constant integers",
                node, "per-thread arrays live in registers: their size is fixed at compile "
                "time, e.g. ember.local(8, ember.float32) or a module-level constant",
            )  # fmt: skip
        return ArrayVal(Array(dtype, len(shape), "C", "local", shape))

    # ------------------------------------------------------------------ atomics
    def atomic(self, op: str, node: ast.Call) -> Value:
        op = "exchange" if op == "exch" else op
        names = ("array", "index", "value")
        if op == "cas":
            names = ("array", "index", "expected", "value")
        elif op in ("inc", "dec"):
            names = ("array", "index", "limit")
        elif op == "load":
            names = ("array", "index")
        values = self.args_of(node, names, len(names))
        array = self.scalar_of(values[0], node)
        if not isinstance(array.type, Array):
            raise self.fail(
                KernelTypeError,
                f"atomic_{op}() needs an array first, got {describe(array.type)}",
                node,
            )
        dtype = array.type.dtype
        if array.type.space not in ("global", "shared"):
            raise self.fail(
                KernelTypeError, f"atomic_{op}() works on global and shared arrays, not on "
                f"{describe(array.type)}", node,
                "a per-thread array needs no atomics: update it directly",
            )  # fmt: skip
        self._check_atomic(op, dtype, node)
        index_node = node.args[1] if len(node.args) > 1 else _keyword(node, "index")
        index = self.indices(array, index_node, node)
        checks = self.index_checks(array, index, index_node)
        args = []
        for v in values[2:]:
            e = self.scalar_arg(v, node, f"atomic_{op}()")
            try:
                args.append(cast(e, scalar(dtype)))
            except OperatorError as exc:
                raise self.type_error(exc, node) from None
        return ir.Atomic(scalar(dtype), op, array, index, args, checks=checks)

    def _check_atomic(self, op: str, dtype, node: ast.AST) -> None:
        if op in ("cas", "exchange"):
            allowed = EXCHANGE_DTYPES
            what = "every integer and float type"
        elif op == "load":
            allowed = tuple(d for d in EXCHANGE_DTYPES if not d.is_narrow)
            what = "every integer type, float32 and float64"
        elif op in ("inc", "dec"):
            allowed = tuple(d for d in ATOMIC_DTYPES if d.is_integer)
            what = "int32, uint32, int64 and uint64"
        else:
            allowed = ATOMIC_DTYPES
            what = "int32, uint32, int64, uint64, float32 and float64"
        if dtype not in allowed:
            raise self.fail(
                KernelTypeError, f"atomic_{op}() is not available for {dtype.name} elements",
                node, f"atomic_{op}() works on arrays of {what}",
            )  # fmt: skip
        if op in _BITWISE and dtype.is_float:
            raise self.fail(
                KernelTypeError, f"atomic_{op}() needs integer elements, got {dtype.name}", node
            )
        if dtype.itemsize == 8 and not self.target.has("int64_atomics"):
            raise self.unsupported(
                f"{self.target.lacks('int64_atomics', '64-bit atomics')}, needed for "
                f"atomic_{op}() on {dtype.name}", node,
                "use a 32-bit array (int32/uint32/float32), or a device with 64-bit atomics",
            )  # fmt: skip


def _static_shape(items: list) -> tuple[int, ...] | None:
    """The shape when every item is a positive constant integer, else None."""
    if items and all(
        isinstance(i, ir.Const) and isinstance(i.value, int) and not isinstance(i.value, bool)
        and i.value > 0 for i in items
    ):  # fmt: skip
        return tuple(int(i.value) for i in items)
    return None


def _keyword(node: ast.Call, name: str) -> ast.expr:
    for kw in node.keywords:
        if kw.arg == name:
            return kw.value
    return node
