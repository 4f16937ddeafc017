"""Typing of the integer-bit and extra math functions of CUDA's library (a mixin of
:class:`~ember.frontend.typer.FunctionTyper`): ``popc clz ffs brev umulhi mulhi`` on
integers, ``sincos frexp ldexp`` on floats, ``bitcast`` between dtypes of one size
(``erfinv``/``erfcinv`` are typed with the other float functions,
:meth:`~ember.frontend.calls.CallTyper._math`).

Integer arguments narrower than 32 bits are zero-extended to 32 bits (their own bits count:
``popc(int8(-1)) == 8``, ``clz(uint8(1)) == 31``); 64-bit ones use the ``...ll`` /
``...64...`` forms.  ``popc clz ffs`` return an ``int32``, ``brev`` an unsigned
integer of the operand's width, ``umulhi`` (``mulhi``) the unsigned (signed) high half.
"""

from __future__ import annotations

import ast

from ember import dtypes
from ember.errors import KernelTypeError
from ember.frontend import ir
from ember.frontend.operators import cast
from ember.frontend.passes import is_pure
from ember.frontend.types import as_dtype, float_result, scalar
from ember.frontend.values import Static, TupleVal, Value

I32 = scalar(dtypes.int32)
_UNSIGNED = {4: scalar(dtypes.uint32), 8: scalar(dtypes.uint64)}
_SIGNED = {4: I32, 8: scalar(dtypes.int64)}


class BitsTyper:
    """popc, clz, ffs, brev, umulhi, mulhi, sincos, frexp, ldexp, bitcast."""

    def _int_arg(self, v: Value, node: ast.AST, what: str) -> ir.Expr:
        e = self.scalar_arg(v, node, f"{what}()")
        if not e.type.dtype.is_integer or e.type.dtype.kind == "b":
            raise self.fail(
                KernelTypeError, f"{what}() needs an integer, got {e.type.dtype.name}", node,
                "convert with ember.uint32(x) (or int64/uint64)",
            )  # fmt: skip
        return e

    def _bit_count(self, name: str, node: ast.Call) -> Value:
        (x,) = self.args_of(node, ("x",), 1)
        e = self._int_arg(x, node, name)
        size = e.type.dtype.itemsize
        if size < 4:  # the value's own bits: through the unsigned type of its width
            e = cast(e, scalar(dtypes.dtype(f"uint{8 * size}")), check=False)
        width = 8 if size == 8 else 4
        operand = cast(e, _UNSIGNED[width], check=False)
        result = _UNSIGNED[width] if name == "brev" else I32
        return ir.Intrinsic(result, name, [operand])

    def _k_popc(self, node):
        return self._bit_count("popc", node)

    def _k_clz(self, node):
        return self._bit_count("clz", node)

    def _k_ffs(self, node):
        return self._bit_count("ffs", node)

    def _k_brev(self, node):
        return self._bit_count("brev", node)

    def _high_product(self, name: str, node: ast.Call) -> Value:
        a, b = self.args_of(node, ("a", "b"), 2)
        ea, eb = self._int_arg(a, node, name), self._int_arg(b, node, name)
        wide = max(ea.type.dtype.itemsize, eb.type.dtype.itemsize, 4)
        t = (_UNSIGNED if name == "umulhi" else _SIGNED)[wide]
        return ir.Intrinsic(t, "mulhi", [cast(ea, t, check=False), cast(eb, t, check=False)])

    def _k_umulhi(self, node):
        return self._high_product("umulhi", node)

    def _k_mulhi(self, node):
        return self._high_product("mulhi", node)

    # ------------------------------------------------------------------ floats
    def _float_arg(self, v: Value, node: ast.AST, what: str) -> ir.Expr:
        e = self.scalar_arg(v, node, f"{what}()")
        t = float_result(e.type)
        e = cast(e, t, check=False)
        if not is_pure(e):
            e = self.spill(e, node)
        return e

    def _k_sincos(self, node: ast.Call) -> Value:
        (x,) = self.args_of(node, ("x",), 1)
        e = self._float_arg(x, node, "sincos")
        return TupleVal([ir.Intrinsic(e.type, "sin", [e]), ir.Intrinsic(e.type, "cos", [e])])

    def _k_frexp(self, node: ast.Call) -> Value:
        (x,) = self.args_of(node, ("x",), 1)
        e = self._float_arg(x, node, "frexp")
        return TupleVal([ir.Intrinsic(e.type, "frexp_m", [e]), ir.Intrinsic(I32, "frexp_e", [e])])

    def _k_ldexp(self, node: ast.Call) -> Value:
        x, n = self.args_of(node, ("x", "e"), 2)
        e = self._float_arg(x, node, "ldexp")
        k = self._int_arg(n, node, "ldexp")
        return ir.Intrinsic(e.type, "ldexp", [e, cast(k, I32, check=False)])

    # ------------------------------------------------------------------ bits as another dtype
    def _k_bitcast(self, node: ast.Call) -> Value:
        x, dtype = self.args_of(node, ("x", "dtype"), 2)
        e = self.scalar_arg(x, node, "bitcast()")
        dt = as_dtype(dtype.obj) if isinstance(dtype, Static) else None
        if dt is None or dt.kind in "bc":
            raise self.fail(
                KernelTypeError, "bitcast() reads the bits as an integer or float dtype", node,
                "e.g. ember.bitcast(x, ember.uint32)",
            )  # fmt: skip
        src = e.type.dtype
        if e.type.weak or src.kind in "bc":
            what = "a Python number" if e.type.weak else f"a {src.name}"
            raise self.fail(
                KernelTypeError, f"bitcast() needs an integer or float of a known dtype, got "
                f"{what}", node, "give the value its dtype first, e.g. ember.float32(x)",
            )  # fmt: skip
        if src.itemsize != dt.itemsize:
            raise self.fail(
                KernelTypeError, f"bitcast() keeps the bits, so the sizes must match: "
                f"{src.name} has {src.itemsize} bytes, {dt.name} {dt.itemsize}", node,
                f"bitcast to a {src.itemsize}-byte dtype, or convert the value with "
                f"ember.{dt.name}(x)",
            )  # fmt: skip
        if src is dt:
            return e
        return ir.Intrinsic(scalar(dt), "bitcast", [e])
