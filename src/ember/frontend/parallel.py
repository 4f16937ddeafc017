"""Typing of the parallel primitives: thread indices, barrier, shared memory, atomics and
warp / sub-group operations (a mixin of :class:`~ember.frontend.typer.FunctionTyper`).

What a target lacks is reported here, before any device work, with
:class:`~ember.errors.UnsupportedFeatureError`: shuffles and warp reductions on an OpenCL
device without sub-groups, 64-bit atomics without ``cl_khr_int64_base_atomics``.
"""

from __future__ import annotations

import ast

from ember import dtypes
from ember.errors import KernelSyntaxError, KernelTypeError, UnsupportedFeatureError
from ember.frontend import diagnostics, ir
from ember.frontend.operators import OperatorError, cast
from ember.frontend.types import VOID, WEAK_INT, Array, describe, scalar
from ember.frontend.values import SharedVal, Static, TupleVal, Value, as_dtype

ATOMIC_DTYPES = (
    dtypes.int32,
    dtypes.uint32,
    dtypes.int64,
    dtypes.uint64,
    dtypes.float32,
    dtypes.float64,
)
_BITWISE = ("and", "or", "xor")
_SHUFFLES = {"shfl": "lane", "shfl_up": "delta", "shfl_down": "delta", "shfl_xor": "mask"}
_SHUFFLE_FEATURE = {
    "shfl": "subgroup_shuffle",
    "shfl_xor": "subgroup_shuffle",
    "shfl_up": "subgroup_shuffle_relative",
    "shfl_down": "subgroup_shuffle_relative",
}


class ParallelTyper:
    """Thread indexing, synchronization, shared memory, atomics, shuffles."""

    def unsupported(self, message: str, node: ast.AST, hint: str) -> Exception:
        return diagnostics.error(
            UnsupportedFeatureError,
            message,
            self.loc(node),
            diagnostics.STAGE_TARGET,
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

    def _k_lane_id(self, node: ast.Call) -> Value:
        self.args_of(node, (), 0)
        self._need_subgroups("lane_id()", node)
        return ir.Intrinsic(WEAK_INT, "lane_id", [])

    def _k_warp_size(self, node: ast.Call) -> Value:
        self.args_of(node, (), 0)
        self._need_subgroups("warp_size()", node)
        return ir.Intrinsic(WEAK_INT, "warp_size", [])

    def _k_barrier(self, node: ast.Call) -> Value:
        self.args_of(node, (), 0)
        return ir.Intrinsic(VOID, "barrier", [])

    def _k_threadfence(self, node: ast.Call) -> Value:
        self.args_of(node, (), 0)
        return ir.Intrinsic(VOID, "threadfence", [])

    # ------------------------------------------------------------------ shared memory
    def _k_shared(self, node: ast.Call) -> Value:
        shape_v, dtype_v = self.args_of(node, ("shape", "dtype"), 2)
        if not self.is_kernel:
            raise self.fail(
                KernelSyntaxError, "ember.shared() can only be called in the kernel itself, "
                "not in a device function", node,
                "allocate it in the kernel and pass the array to the function",
            )  # fmt: skip
        items = shape_v.items if isinstance(shape_v, TupleVal) else [shape_v]
        if not items or not all(
            isinstance(i, ir.Const)
            and isinstance(i.value, int)
            and not isinstance(i.value, bool)
            and i.value > 0
            for i in items
        ):
            raise self.fail(
                KernelTypeError, "ember.shared() needs a shape of positive constant integers",
                node, "use numbers or module-level constants, e.g. ember.shared((16, 16), "
                "ember.float32)",
            )  # fmt: skip
        dtype = as_dtype(dtype_v.obj) if isinstance(dtype_v, Static) else None
        if dtype is None:
            raise self.fail(
                KernelTypeError, "ember.shared() needs a dtype, e.g. ember.float32", node
            )
        shape = tuple(int(i.value) for i in items)
        return SharedVal(Array(dtype, len(shape), "C", "shared", shape))

    # ------------------------------------------------------------------ atomics
    def atomic(self, op: str, node: ast.Call) -> Value:
        names = (
            ("array", "index", "expected", "value") if op == "cas" else ("array", "index", "value")
        )
        values = self.args_of(node, names, len(names))
        array = self.scalar_of(values[0], node)
        if not isinstance(array.type, Array):
            raise self.fail(
                KernelTypeError,
                f"atomic_{op}() needs an array first, got {describe(array.type)}",
                node,
            )
        dtype = array.type.dtype
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
        if dtype not in ATOMIC_DTYPES:
            raise self.fail(
                KernelTypeError, f"atomic_{op}() is not available for {dtype.name} elements",
                node, "atomics work on int32, uint32, int64, uint64, float32 and float64 arrays",
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

    # ------------------------------------------------------------------ warps
    def _need_subgroups(self, what: str, node: ast.AST, feature: str = "subgroups") -> None:
        if not self.target.has(feature):
            api = self.target.feature_names.get(feature)
            raise self.unsupported(
                f"{what} needs sub-groups, which {self.target.device} does not have"
                + (f" ({api})" if api else ""), node,
                "use a shared-memory reduction with ember.barrier(), or a GPU with sub-groups",
            )  # fmt: skip

    def _shuffle(self, name: str, node: ast.Call) -> Value:
        value, lane = self.args_of(node, ("value", _SHUFFLES[name]), 2)
        self._need_subgroups(f"ember.{name}()", node, _SHUFFLE_FEATURE[name])
        v = self.scalar_arg(value, node, f"{name}()")
        k = self.scalar_arg(lane, node, f"{name}()")
        if not k.type.dtype.is_integer:
            raise self.fail(KernelTypeError, f"{name}() lane argument must be an integer", node)
        return ir.Intrinsic(v.type, name, [v, cast(k, scalar(dtypes.int32), check=False)])

    def _k_shfl(self, node):
        return self._shuffle("shfl", node)

    def _k_shfl_up(self, node):
        return self._shuffle("shfl_up", node)

    def _k_shfl_down(self, node):
        return self._shuffle("shfl_down", node)

    def _k_shfl_xor(self, node):
        return self._shuffle("shfl_xor", node)

    def _warp_reduce(self, name: str, node: ast.Call) -> Value:
        (value,) = self.args_of(node, ("value",), 1)
        self._need_subgroups(f"ember.{name}()", node)
        v = self.scalar_arg(value, node, f"{name}()")
        t = v.type
        if t.dtype.kind == "b":
            raise self.fail(
                KernelTypeError, f"{name}() needs numbers, got bool", node, "convert with int(x)"
            )
        return ir.Intrinsic(t, name, [v])

    def _k_warp_sum(self, node):
        return self._warp_reduce("warp_sum", node)

    def _k_warp_min(self, node):
        return self._warp_reduce("warp_min", node)

    def _k_warp_max(self, node):
        return self._warp_reduce("warp_max", node)


def _keyword(node: ast.Call, name: str) -> ast.expr:
    for kw in node.keywords:
        if kw.arg == name:
            return kw.value
    return node
