"""Expression typing (a mixin of :class:`~ember.frontend.typer.FunctionTyper`).

Each ``ex_<Node>`` method returns a typer value: an IR expression, a :class:`TupleVal`, a
:class:`Static` compile-time object or a :class:`ArrayVal`.  Names resolve to locals first
(Python's rule: a name assigned anywhere in the function is local), then to the captured
closure, globals and builtins.
"""

from __future__ import annotations

import ast
import difflib

from ember.errors import KernelSyntaxError, KernelTypeError
from ember.frontend import ir
from ember.frontend.capture import MISSING
from ember.frontend.intrinsics import intrinsic_name, is_index_triple
from ember.frontend.operators import OperatorError, cast, compare, logical, unary
from ember.frontend.passes import is_pure
from ember.frontend.tables import is_table
from ember.frontend.types import BOOL, VOID, WEAK_INT, Array, Scalar, describe, promote, scalar
from ember.frontend.values import (
    NotRepresentable,
    Static,
    TupleVal,
    Value,
    from_python,
    value_type,
)

_COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_UNARY = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "not"}
_AXES = {"x": 0, "y": 1, "z": 2}


class ExprTyper:
    """Expression visitors."""

    # ------------------------------------------------------------------ entry points
    def expr(self, node: ast.expr) -> Value:
        method = getattr(self, "ex_" + type(node).__name__, None)
        if method is None:
            raise self.fail(KernelSyntaxError, _unsupported_expr(node), node, _expr_hint(node))
        return method(node)

    def value(self, node: ast.expr) -> Value:
        """Like :meth:`expr`, with an unnamed ``ember.shared(...)`` declared."""
        return self.materialize(self.expr(node), node)

    def runtime(self, node: ast.expr):
        """A value that exists at run time (an IR expression or a tuple)."""
        v = self.value(node)
        self.require_runtime(v, node)
        return v

    def require_runtime(self, v: Value, node: ast.AST):
        if isinstance(v, Static):
            raise self.fail(
                KernelTypeError,
                f"{_describe_static(v.obj)} is not a value a kernel can compute with",
                node,
            )
        t = value_type(v)
        if t is VOID:
            raise self.fail(KernelTypeError, "this call returns nothing; it has no value", node)
        return t

    def scalar_of(self, v: Value, node: ast.AST) -> ir.Expr:
        """``v`` as one IR expression (number or array); tuples and objects are refused."""
        self.require_runtime(v, node)
        if isinstance(v, TupleVal):
            raise self.fail(
                KernelTypeError, "a tuple cannot be used here", node, "index the tuple, e.g. t[0]"
            )
        return v

    def from_python(self, obj, node: ast.AST, name: str | None = None) -> Value:
        if is_table(obj):  # a captured NumPy array: a constant table (frontend/tables.py)
            return self.table(obj, node, name)
        try:
            return from_python(obj)
        except NotRepresentable as exc:
            raise self.fail(KernelTypeError, exc.message, node, exc.hint) from None

    # ------------------------------------------------------------------ atoms
    def ex_Constant(self, node: ast.Constant) -> Value:
        if isinstance(node.value, str | bytes):
            raise self.fail(KernelSyntaxError, "strings are not supported in kernels", node)
        if node.value is None or node.value is Ellipsis:
            return Static(node.value)
        return self.from_python(node.value, node)

    def ex_Name(self, node: ast.Name) -> Value:
        if node.id in self.assigned:
            return self.read_name(node.id, node)
        obj = self.cap.lookup(node.id)
        if obj is MISSING:
            raise self.fail(
                KernelSyntaxError, f"name '{node.id}' is not defined", node, self._suggest(node.id)
            )
        return self.from_python(obj, node, node.id)

    def _suggest(self, name: str) -> str:
        known = list(self.var_types) + list(self.cap.func.__globals__)
        close = difflib.get_close_matches(name, known, n=1)
        if close:
            return f"did you mean '{close[0]}'?"
        return "define it at module level, pass it as an argument, or assign it first"

    def ex_Tuple(self, node: ast.Tuple | ast.List) -> Value:
        if any(isinstance(e, ast.Starred) for e in node.elts):
            raise self.fail(KernelSyntaxError, "'*' unpacking is not supported in kernels", node)
        return TupleVal([self.value(e) for e in node.elts])

    ex_List = ex_Tuple  # list displays act as tuples (shapes: ember.shared([16, 16], ...))

    # ------------------------------------------------------------------ operators
    def ex_BinOp(self, node: ast.BinOp) -> Value:
        op = self._arith_op(node.op, node)
        left, right = self.value(node.left), self.value(node.right)
        if op == "add" and isinstance(left, TupleVal) and isinstance(right, TupleVal):
            return TupleVal(left.items + right.items)
        return self.arith(op, left, right, node)

    def ex_UnaryOp(self, node: ast.UnaryOp) -> Value:
        operand = self.scalar_of(self.value(node.operand), node)
        try:
            return unary(_UNARY[type(node.op)], operand)
        except OperatorError as exc:
            raise self.type_error(exc, node) from None

    def ex_BoolOp(self, node: ast.BoolOp) -> Value:
        op = "and" if isinstance(node.op, ast.And) else "or"
        result = self.scalar_of(self.value(node.values[0]), node.values[0])
        saved, self.no_spill = self.no_spill, f"the right side of '{op}'"
        try:
            for sub in node.values[1:]:
                right = self.scalar_of(self.value(sub), sub)
                result = logical(op, result, right)
        except OperatorError as exc:
            raise self.type_error(exc, node) from None
        finally:
            self.no_spill = saved
        return result

    def ex_Compare(self, node: ast.Compare) -> Value:
        left = self.value(node.left)
        result = None
        saved = self.no_spill
        try:
            for i, (op, sub) in enumerate(zip(node.ops, node.comparators, strict=True)):
                if type(op) not in _COMPARE:
                    raise self.fail(
                        KernelSyntaxError,
                        f"'{_op_text(op)}' is not supported in kernels",
                        node,
                        "compare numbers with == != < <= > >=",
                    )
                right = self.value(sub)
                if i + 1 < len(node.ops) and isinstance(right, ir.Expr) and not is_pure(right):
                    right = self.spill(right, sub)
                part = self._compare(_COMPARE[type(op)], left, right, node)
                result = part if result is None else logical("and", result, part)
                left = right
                self.no_spill = "a chained comparison"
        except OperatorError as exc:
            raise self.type_error(exc, node) from None
        finally:
            self.no_spill = saved
        return result

    def _compare(self, op: str, left: Value, right: Value, node: ast.AST) -> ir.Expr:
        if isinstance(left, TupleVal) and isinstance(right, TupleVal) and op in ("==", "!="):
            if len(left.items) != len(right.items):
                return ir.Const(BOOL, op == "!=")
            parts = [
                self._compare("==", a, b, node)
                for a, b in zip(left.items, right.items, strict=True)
            ]
            result = parts[0] if parts else ir.Const(BOOL, True)
            for p in parts[1:]:
                result = logical("and", result, p)
            return unary("not", result) if op == "!=" else result
        return compare(op, self.scalar_of(left, node), self.scalar_of(right, node))

    def ex_IfExp(self, node: ast.IfExp) -> Value:
        cond = self.condition(node.test)
        if isinstance(cond, ir.Const):  # compile time: only the value that is used is typed
            return self.value(node.body if cond.value else node.orelse)
        saved, self.no_spill = self.no_spill, "a conditional expression"
        try:
            a, b = self.runtime(node.body), self.runtime(node.orelse)
        finally:
            self.no_spill = saved
        if isinstance(cond, ir.Const):
            return a if cond.value else b
        return self._select(cond, a, b, node)

    def _select(self, cond: ir.Expr, a: Value, b: Value, node: ast.AST) -> Value:
        if isinstance(a, TupleVal) and isinstance(b, TupleVal) and len(a.items) == len(b.items):
            return TupleVal(
                [self._select(cond, x, y, node) for x, y in zip(a.items, b.items, strict=True)]
            )
        ta, tb = value_type(a), value_type(b)
        if isinstance(ta, Scalar) and isinstance(tb, Scalar):
            t = promote(ta, tb)
            return ir.Select(t, cond, cast(a, t, check=False), cast(b, t, check=False))
        if ta == tb and isinstance(ta, Array):
            return ir.Select(ta, cond, a, b)
        raise self.fail(
            KernelTypeError,
            f"the two sides of this conditional expression have "
            f"different kinds of types: {describe(ta)} and {describe(tb)}",
            node,
        )

    # ------------------------------------------------------------------ attributes
    def ex_Attribute(self, node: ast.Attribute) -> Value:
        base = self.value(node.value)
        attr = node.attr
        if isinstance(base, Static):
            return self._static_attribute(base.obj, attr, node)
        if isinstance(base, ir.Expr) and isinstance(base.type, Array):
            return self._array_attribute(base, attr, node)
        if isinstance(base, ir.Expr) and isinstance(base.type, Scalar):
            return self.scalar_attribute(base, attr, node)  # x.real, x.imag
        what = "a tuple" if isinstance(base, TupleVal) else describe(value_type(base))
        raise self.fail(KernelTypeError, f"{what} has no attribute '{attr}' in kernels", node)

    def _static_attribute(self, obj, attr: str, node: ast.Attribute) -> Value:
        name = intrinsic_name(obj)
        if is_index_triple(name):
            if attr not in _AXES:
                raise self.fail(
                    KernelSyntaxError, f"ember.{name} has .x, .y and .z, not .{attr}", node
                )
            return self.index_intrinsic(name, _AXES[attr])
        try:
            value = getattr(obj, attr)
        except AttributeError:
            raise self.fail(
                KernelSyntaxError, f"{_describe_static(obj)} has no attribute '{attr}'", node
            ) from None
        return self.from_python(value, node, attr)

    def _array_attribute(self, array: ir.Expr, attr: str, node: ast.AST) -> Value:
        t = array.type
        if attr == "shape":
            return TupleVal([self.extent(array, k) for k in range(t.ndim)])
        if attr == "ndim":
            return ir.Const(WEAK_INT, t.ndim)
        if attr == "size":
            size: ir.Expr = ir.Const(WEAK_INT, 1)
            for k in range(t.ndim):
                size = self.arith("mul", size, self.extent(array, k), node)
            return size
        if attr == "dtype":
            return Static(t.dtype)
        if attr == "itemsize":
            return ir.Const(WEAK_INT, t.dtype.itemsize)
        raise self.fail(
            KernelSyntaxError,
            f"arrays in kernels have no attribute '{attr}'",
            node,
            "available: shape, ndim, size, dtype, itemsize",
        )

    def extent(self, array: ir.Expr, axis: int) -> ir.Expr:
        if array.type.shape is not None:
            return ir.Const(WEAK_INT, array.type.shape[axis])
        return ir.Field(WEAK_INT, array, "shape", axis)

    # ------------------------------------------------------------------ subscripts
    def ex_Subscript(self, node: ast.Subscript) -> Value:
        base = self.value(node.value)
        if isinstance(base, TupleVal):
            if isinstance(node.slice, ast.Slice):
                return self._tuple_slice(base, node.slice)
            return self._tuple_item(base, node)
        if isinstance(base, ir.Expr) and isinstance(base.type, Array):
            parts = _parts(node.slice)
            if len(parts) == 1 and not _has_slice(node.slice):  # x[i], x[t] (a tuple)
                v = self.value(node.slice)
                parts = v.items if isinstance(v, TupleVal) else [v]
            if _has_slice(node.slice) or len(parts) < base.type.ndim:
                return self.view(base, parts, node)
            index = self.indices(base, node.slice, node, parts)
            checks = self.index_checks(base, index, node)
            return ir.Load(scalar(base.type.dtype), base, index, checks=checks)
        what = (
            describe(value_type(base))
            if not isinstance(base, Static)
            else _describe_static(base.obj)
        )
        raise self.fail(KernelTypeError, f"{what} cannot be indexed", node)

    def indices(
        self, array: ir.Expr, index_node: ast.expr, node: ast.AST, items=None
    ) -> list[ir.Expr]:
        """The typed indices of ``array[index_node]``, one per axis (``items``: the index
        values or AST nodes, when already split)."""
        if items is None:
            if isinstance(index_node, ast.Slice) or _has_slice(index_node):
                raise self.refuse_slice_store(node)
            v = self.value(index_node)
            items = v.items if isinstance(v, TupleVal) else [v]
        t = array.type
        if len(items) != t.ndim:
            raise self.fail(
                KernelTypeError, f"{describe(t)} needs {t.ndim} indices, got {len(items)}", node,
                "index every axis to reach one element, e.g. x[i, j] (x[i] is a view of a row)",
            )  # fmt: skip
        return [self._index(self._item(item), array, k, index_node) for k, item in enumerate(items)]

    def _item(self, item):
        """An index item: a value, or an AST node to type."""
        return self.value(item) if isinstance(item, ast.AST) else item

    def _index(self, item: Value, array: ir.Expr, axis: int, node: ast.AST) -> ir.Expr:
        e = self.scalar_of(item, node)
        et = e.type
        if not (isinstance(et, Scalar) and et.dtype.is_integer):
            raise self.fail(
                KernelTypeError,
                f"array indices must be integers, got {describe(et)}",
                node,
                "convert with int(x)",
            )
        if isinstance(e, ir.Const) and e.value < 0:  # x[-1]: counted from the end, as in Python
            return self.arith("add", self.extent(array, axis), e, node)
        return e

    def _tuple_slice(self, tup: TupleVal, part: ast.Slice) -> Value:
        """``t[a:b:c]`` with constant bounds: a new tuple (compile-time)."""
        bounds = []
        for b in (part.lower, part.upper, part.step):
            v = None if b is None else self.value(b)
            if v is not None and not (isinstance(v, ir.Const) and isinstance(v.value, int)):
                raise self.fail(KernelTypeError, "tuple slices need constant bounds", b)
            bounds.append(None if v is None else int(v.value))
        if bounds[2] == 0:
            raise self.fail(KernelTypeError, "slice step cannot be zero", part)
        return TupleVal(tup.items[slice(*bounds)])

    def _tuple_item(self, tup: TupleVal, node: ast.Subscript) -> Value:
        idx = self.scalar_of(self.value(node.slice), node.slice)
        if not (isinstance(idx.type, Scalar) and idx.type.dtype.is_integer):
            raise self.fail(KernelTypeError, "tuple indices must be integers", node.slice)
        n = len(tup.items)
        if isinstance(idx, ir.Const):
            k = idx.value + n if idx.value < 0 else idx.value
            if not 0 <= k < n:
                raise self.fail(
                    KernelTypeError,
                    f"tuple index {idx.value} out of range for a tuple of {n}",
                    node,
                )
            return tup.items[k]
        types = [value_type(i) for i in tup.items]
        if not types or not all(isinstance(t, Scalar) for t in types):
            raise self.fail(
                KernelTypeError,
                "a tuple indexed by a run-time value must hold numbers",
                node,
                "index it with a constant",
            )
        if not is_pure(idx):
            idx = self.spill(idx, node)
        self.notes.append(("tuple-index", self.loc(node), n))  # a chain of n selects
        t = types[0]
        for other in types[1:]:
            t = promote(t, other)
        result = cast(tup.items[-1], t, check=False)
        for k in range(n - 2, -1, -1):
            hit = compare("==", idx, ir.Const(WEAK_INT, k))
            result = ir.Select(t, hit, cast(tup.items[k], t, check=False), result)
        return result

    # ------------------------------------------------------------------ unsupported
    def ex_Lambda(self, node: ast.Lambda) -> Value:
        raise self.fail(
            KernelSyntaxError,
            "lambda is not supported in kernels",
            node,
            "define a function at module level and call it",
        )

    def ex_NamedExpr(self, node: ast.NamedExpr) -> Value:
        raise self.fail(
            KernelSyntaxError,
            "':=' is not supported in kernels",
            node,
            "assign on a line of its own",
        )


def _parts(node: ast.expr) -> list[ast.expr]:
    """The items of an index: ``x[i, j]`` -> [i, j]; ``x[i]`` -> [i]."""
    return list(node.elts) if isinstance(node, ast.Tuple) else [node]


def _has_slice(node: ast.expr) -> bool:
    if isinstance(node, ast.Slice):
        return True
    return isinstance(node, ast.Tuple) and any(isinstance(e, ast.Slice) for e in node.elts)


def _describe_static(obj) -> str:
    if obj is None:
        return "None"
    name = getattr(obj, "__name__", None)
    kind = type(obj).__name__
    if kind == "module":
        return f"module '{name}'"
    return f"{kind} '{name}'" if name else f"a {kind} object"


def _op_text(op: ast.cmpop) -> str:
    return {ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}.get(
        type(op), type(op).__name__
    )


_EXPR_NAMES = {
    ast.ListComp: "list comprehensions", ast.SetComp: "set comprehensions",
    ast.DictComp: "dict comprehensions", ast.GeneratorExp: "generator expressions",
    ast.Dict: "dicts", ast.Set: "sets", ast.JoinedStr: "f-strings", ast.Await: "await",
    ast.Yield: "yield", ast.YieldFrom: "yield", ast.Starred: "'*' unpacking",
    ast.Slice: "slices",
}  # fmt: skip


def _unsupported_expr(node: ast.AST) -> str:
    what = _EXPR_NAMES.get(type(node), f"'{type(node).__name__}' expressions")
    return f"{what} cannot be used in kernels"


def _expr_hint(node: ast.AST) -> str | None:
    if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.Dict | ast.Set):
        return "kernels work on numbers, tuples and arrays; write a loop"
    return None
