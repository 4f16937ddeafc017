"""Typing of warp / sub-group operations (a mixin of
:class:`~ember.frontend.typer.FunctionTyper`).

``lane_id warp_size shfl shfl_up shfl_down shfl_xor`` (``width=``), their CUDA-order
spellings ``shfl_sync(mask, value, lane, width)`` & co., ``ballot all_sync any_sync``
(``(pred)`` or ``(mask, pred)``), ``match_any_sync`` (``(value)`` or ``(mask, value)``),
``syncwarp activemask`` and ``warp_sum/min/max``.

Where they run (codegen/warps.py):

* CUDA: the ``__*_sync`` intrinsics, with the mask and width given;
* an OpenCL device with sub-groups: the ``sub_group_*`` built-ins (a warp is a sub-group;
  masks are ignored: every lane of the sub-group takes part);
* a device without sub-groups (the PoCL CPU device): *emulated* through shared memory.  A
  warp is then 32 consecutive threads of the block (CUDA's numbering: x fastest), and each
  operation is an exchange through a per-block scratch array between two block barriers;
  the functions that reach warp operations are predicated so that every thread of the
  block reaches each of them (``frontend/uniform.py``); the mask is ignored.

Every operation returns what CUDA's does: ``ballot``, ``activemask`` and ``match_any_sync`` a
``uint32`` (lanes 0-31; ``match_any_sync``: the lanes whose value has the same bits as this
lane's), ``all_sync``/``any_sync`` a bool, shuffles the value's type.
"""

from __future__ import annotations

import ast

from ember import dtypes
from ember.errors import KernelTypeError
from ember.frontend import ir
from ember.frontend.operators import cast, truth
from ember.frontend.types import BOOL, VOID, WEAK_INT, Scalar, scalar
from ember.frontend.values import Value

FULL_MASK = 0xFFFFFFFF
EMULATED_WARP = 32  # lanes of an emulated warp (CUDA's warp size)
_SHUFFLES = {"shfl": "lane", "shfl_up": "delta", "shfl_down": "delta", "shfl_xor": "lane_mask"}
_FEATURE = {
    "shfl": "subgroup_shuffle",
    "shfl_xor": "subgroup_shuffle",
    "shfl_up": "subgroup_shuffle_relative",
    "shfl_down": "subgroup_shuffle_relative",
}
I32, U32 = scalar(dtypes.int32), scalar(dtypes.uint32)


class WarpTyper:
    """Warp-level operations; see the module docstring for where they run."""

    def warp_target(self, what: str, node: ast.AST, feature: str | None = None) -> None:
        """Note that the program uses a warp operation: emulated without sub-groups; an
        ``UnsupportedFeatureError`` where the device has sub-groups but not ``feature``."""
        if not self.target.has("subgroups"):
            self.ctx.warp_emulated = True
            return
        if feature is not None and not self.target.has(feature):
            raise self.unsupported(
                f"{what} needs cl_khr_{feature}, which this device's sub-groups lack", node,
                "use ember.shfl() (with width=) or a shared-memory exchange",
            )  # fmt: skip

    def _mask(self, v: Value | None, node: ast.AST, what: str) -> ir.Expr:
        if v is None:
            return ir.Const(U32, FULL_MASK)
        e = self.scalar_arg(v, node, what)
        if not e.type.dtype.is_integer:
            raise self.fail(KernelTypeError, f"{what} mask must be an integer", node)
        return cast(e, U32, check=False)

    def _k_lane_id(self, node: ast.Call) -> Value:
        self.args_of(node, (), 0)
        self.warp_target("lane_id()", node)
        return ir.Intrinsic(WEAK_INT, "lane_id", [])

    def _k_warp_size(self, node: ast.Call) -> Value:
        self.args_of(node, (), 0)
        self.warp_target("warp_size()", node)
        return ir.Intrinsic(WEAK_INT, "warp_size", [])

    # ------------------------------------------------------------------ shuffles
    def _shuffle(self, name: str, node: ast.Call, sync: bool = False) -> Value:
        names = ("value", _SHUFFLES[name], "width")
        if sync:
            mask, value, lane, width = self.args_of(node, ("mask", *names), 3)
        else:
            (value, lane, width), mask = self.args_of(node, names, 2), None
        what = f"ember.{name}{'_sync' if sync else ''}()"
        feature = "subgroup_shuffle" if width is not None else _FEATURE[name]
        self.warp_target(what, node, feature)
        v = self.scalar_arg(value, node, what)
        k = self.scalar_arg(lane, node, what)
        if not k.type.dtype.is_integer:
            raise self.fail(KernelTypeError, f"{what}: the lane argument must be an integer", node)
        w = ir.Const(I32, 0) if width is None else self._width(width, node, what)
        args = [v, cast(k, I32, check=False), w, self._mask(mask, node, what)]
        return ir.Intrinsic(v.type, name, args)

    def _width(self, width: Value, node: ast.AST, what: str) -> ir.Expr:
        e = self.scalar_arg(width, node, what)
        if isinstance(e, ir.Const):
            w = e.value
            if not (isinstance(w, int) and 1 <= w <= 32 and w & (w - 1) == 0):
                raise self.fail(
                    KernelTypeError, f"{what}: width must be a power of two from 1 to 32", node
                )
        elif not e.type.dtype.is_integer:
            raise self.fail(KernelTypeError, f"{what}: width must be an integer", node)
        return cast(e, I32, check=False)

    def _k_shfl(self, node):
        return self._shuffle("shfl", node)

    def _k_shfl_up(self, node):
        return self._shuffle("shfl_up", node)

    def _k_shfl_down(self, node):
        return self._shuffle("shfl_down", node)

    def _k_shfl_xor(self, node):
        return self._shuffle("shfl_xor", node)

    def _k_shfl_sync(self, node):
        return self._shuffle("shfl", node, sync=True)

    def _k_shfl_up_sync(self, node):
        return self._shuffle("shfl_up", node, sync=True)

    def _k_shfl_down_sync(self, node):
        return self._shuffle("shfl_down", node, sync=True)

    def _k_shfl_xor_sync(self, node):
        return self._shuffle("shfl_xor", node, sync=True)

    # ------------------------------------------------------------------ votes
    def _vote(self, name: str, node: ast.Call) -> Value:
        """``name(pred)`` or ``name(mask, pred)`` (Numba's and CUDA's order)."""
        if len(node.args) + len(node.keywords) == 2:
            mask, pred = self.args_of(node, ("mask", "predicate"), 2)
        else:
            (pred,), mask = self.args_of(node, ("predicate",), 1), None
        what = f"ember.{name}()"
        self.warp_target(what, node)
        p = truth(self.scalar_arg(pred, node, what))
        t = U32 if name == "ballot" else BOOL
        return ir.Intrinsic(t, name, [p, self._mask(mask, node, what)])

    def _k_ballot(self, node):
        return self._vote("ballot", node)

    def _k_all_sync(self, node):
        return self._vote("all_sync", node)

    def _k_any_sync(self, node):
        return self._vote("any_sync", node)

    def _k_match_any_sync(self, node: ast.Call) -> Value:
        """``match_any_sync(value)`` or ``(mask, value)``: the lanes holding the same bits.
        Integers narrower than 32 bits and bools compare as ``int32`` (same equality)."""
        if len(node.args) + len(node.keywords) == 2:
            mask, value = self.args_of(node, ("mask", "value"), 2)
        else:
            (value,), mask = self.args_of(node, ("value",), 1), None
        what = "ember.match_any_sync()"
        self.warp_target(what, node, "subgroup_shuffle")
        v = self.scalar_arg(value, node, what)
        dt = v.type.dtype
        if dt.is_complex or dt.is_narrow:
            raise self.fail(
                KernelTypeError, f"{what} compares 32- or 64-bit values, got {dt.name}", node,
                "match the bits: ember.bitcast(x, ember.uint16) widened to ember.uint32(...)",
            )  # fmt: skip
        if v.type.weak:
            v = cast(v, scalar(dtypes.int64), check=False)
        elif dt.is_float:  # the bits: NaNs of one pattern match, -0.0 and 0.0 do not
            v = ir.Intrinsic(scalar(dtypes.uint32 if dt.itemsize == 4 else dtypes.uint64),
                             "bitcast", [v])  # fmt: skip
        elif dt.itemsize < 4:
            v = cast(v, I32, check=False)
        return ir.Intrinsic(U32, "match_any_sync", [v, self._mask(mask, node, what)])

    def _k_syncwarp(self, node: ast.Call) -> Value:
        (mask,) = self.args_of(node, ("mask",), 0)
        self.warp_target("ember.syncwarp()", node)
        return ir.Intrinsic(VOID, "syncwarp", [self._mask(mask, node, "ember.syncwarp()")])

    def _k_activemask(self, node: ast.Call) -> Value:
        self.args_of(node, (), 0)
        self.warp_target("ember.activemask()", node)
        return ir.Intrinsic(U32, "activemask", [])

    # ------------------------------------------------------------------ reductions
    def _warp_reduce(self, name: str, node: ast.Call) -> Value:
        (value,) = self.args_of(node, ("value",), 1)
        self.warp_target(f"ember.{name}()", node)
        v = self.scalar_arg(value, node, f"{name}()")
        t = v.type
        if not isinstance(t, Scalar) or t.dtype.kind == "b":
            raise self.fail(
                KernelTypeError, f"{name}() needs numbers, got bool", node, "convert with int(x)"
            )
        if t.dtype.is_complex and name != "warp_sum":
            raise self.fail(
                KernelTypeError, f"{name}() of complex numbers: they have no order", node,
                "reduce abs(z), z.real or z.imag instead",
            )  # fmt: skip
        return ir.Intrinsic(t, name, [v])

    def _k_warp_sum(self, node):
        return self._warp_reduce("warp_sum", node)

    def _k_warp_min(self, node):
        return self._warp_reduce("warp_min", node)

    def _k_warp_max(self, node):
        return self._warp_reduce("warp_max", node)
