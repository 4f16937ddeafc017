"""Which array indices are provably in range, so that their bounds checks can be left out.

With checking on (``boundscheck=True``) every index gets a run-time check unless the typer
can prove ``0 <= i < x.shape[k]`` from the code around the access:

* ``i`` is never negative: every assignment to the name ``i`` in the function stores a
  thread index (``ember.global_id()``, ``ember.grid(n)``, ``ember.thread_idx.x``...), an
  extent (``x.shape[k]``, ``len(x)``), a non-negative integer constant, a sum, product,
  quotient or remainder of such values, or it is the variable of a ``for`` loop over a
  ``range`` that starts at a non-negative value with a positive step; or ``i`` has an
  unsigned type; or an enclosing condition says ``i >= 0``.
* ``i < x.shape[k]`` holds: an enclosing ``if`` says so (directly, in an ``and``, or
  through a name that is only ever assigned ``x.shape[k]``, as in ``n, m = x.shape``), or
  an earlier ``if i >= x.shape[k]: return`` (or ``continue``/``break``/``raise``) in the
  same block, or the loop is ``for i in range(x.shape[k])``.
* Neither ``i`` nor ``x`` (nor that name) is assigned where the fact is used.

Facts are kept by Python name: a name has one type and one variable per function.  The
analysis is deliberately small; what it cannot prove keeps its check, and the slow-path
report lists it ("indexing that cannot be proven in range").
"""

from __future__ import annotations

import ast
import types

from ember.frontend import ir
from ember.frontend.intrinsics import intrinsic_name, is_index_triple
from ember.frontend.types import Array, Scalar

_NONNEG_CALLS = {"global_id", "global_size", "lane_id", "warp_size", "grid", "py_len"}
_NONNEG_OPS = (ast.Add, ast.Mult, ast.FloorDiv, ast.Mod, ast.RShift)
_FLIP = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
_SWAP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}

# A fact: ("lt", name, bound) with bound ("shape", array, axis) or ("const", c);
# or ("nonneg", name).
Fact = tuple


def stored_names(stmts: list[ast.stmt]) -> set[str]:
    """Names assigned anywhere in ``stmts`` (loop targets included)."""
    return {
        n.id
        for s in stmts
        for n in ast.walk(s)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def fact_names(fact: Fact) -> set[str]:
    """The names a fact depends on: it stops holding where one of them is assigned."""
    names = {fact[1]}
    if fact[0] == "lt" and fact[2][0] == "shape":
        names.add(fact[2][1])
    return names


def surviving(facts: list[Fact], stmts: list[ast.stmt]) -> list[Fact]:
    """The facts that still hold throughout ``stmts`` (none of their names is assigned)."""
    stored = stored_names(stmts)
    return [f for f in facts if not (fact_names(f) & stored)]


class Ranges:
    """Per-function syntactic knowledge: never-negative names, names holding an extent."""

    def __init__(self, tree: ast.FunctionDef, lookup):
        self.lookup = lookup
        params = {a.arg for a in tree.args.args}
        if tree.args.vararg is not None:
            params.add(tree.args.vararg.arg)
        self.stores: dict[str, list[tuple[str, ast.AST]]] = {}
        for stmt in tree.body:
            self._collect(stmt)
        self.extents = self._extent_names(params)
        self.nonneg_names = self._nonneg_names(params)

    # ------------------------------------------------------------------ collection
    def _add(self, name: str, kind: str, node: ast.AST) -> None:
        self.stores.setdefault(name, []).append((kind, node))

    def _collect(self, stmt: ast.AST) -> None:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._target(target, node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                self._add(node.target.id, "value", node.value or node)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                self._add(node.target.id, "aug", node)
            elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
                self._add(node.target.id, "for", node.iter)
            elif isinstance(node, ast.NamedExpr):
                self._add(node.target.id, "other", node)
        for node in ast.walk(stmt):  # anything else that stores a name
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.stores.setdefault(node.id, [("other", node)])

    def _target(self, target: ast.AST, value: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self._add(target.id, "value", value)
        elif isinstance(target, ast.Tuple | ast.List):
            if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts, strict=True):
                    self._target(t, v)
            else:
                for k, t in enumerate(target.elts):
                    if isinstance(t, ast.Name):
                        self._add(t.id, f"item{k}", value)
                    else:
                        for n in ast.walk(t):
                            if isinstance(n, ast.Name):
                                self._add(n.id, "other", value)

    # ------------------------------------------------------------------ names
    def _extent_names(self, params: set[str]) -> dict[str, tuple[str, int]]:
        """Names only ever assigned ``x.shape[k]`` / ``len(x)`` of an unassigned parameter."""
        out = {}
        for name, stores in self.stores.items():
            found = {self._extent_of(kind, node) for kind, node in stores}
            if len(found) == 1 and None not in found and name not in params:
                array, axis = found.pop()
                if array in params and array not in self.stores:
                    out[name] = (array, axis)
        return out

    def _extent_of(self, kind: str, node: ast.AST) -> tuple[str, int] | None:
        if kind.startswith("item") and _is_shape(node):
            return node.value.id, int(kind[4:])
        if kind != "value":
            return None
        if (
            isinstance(node, ast.Subscript)
            and _is_shape(node.value)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, int)
        ):
            return node.value.value.id, node.slice.value
        if isinstance(node, ast.Call) and self._call_name(node) == "py_len" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Name):
                return arg.id, 0
        return None

    def _nonneg_names(self, params: set[str]) -> set[str]:
        """The greatest set of names whose every assignment stores a non-negative value
        computed from constants, thread indices, extents and names of the set."""
        names = {n for n in self.stores if n not in params}
        changed = True
        while changed:
            changed = False
            for name in sorted(names):
                if not all(
                    self._nonneg_store(kind, node, names) for kind, node in self.stores[name]
                ):
                    names.discard(name)
                    changed = True
        return names

    def _nonneg_store(self, kind: str, node: ast.AST, names: set[str]) -> bool:
        if kind == "value":
            return self.nonneg_expr(node, names)
        if kind.startswith("item"):
            return _is_shape(node) or self._call_name(node) == "grid"
        if kind == "aug":
            ok_op = isinstance(node.op, _NONNEG_OPS)
            return ok_op and self.nonneg_expr(node.value, names)
        if kind == "for":
            return self._nonneg_range(node, names)
        return False

    def _nonneg_range(self, node: ast.AST, names: set[str]) -> bool:
        if not (isinstance(node, ast.Call) and self._static(node.func) is range):
            return False
        args = node.args
        if len(args) == 3:
            step = args[2]
            if not (isinstance(step, ast.Constant) and isinstance(step.value, int)):
                return False
            if step.value <= 0:
                return False
        return len(args) == 1 or (len(args) > 1 and self.nonneg_expr(args[0], names))

    def nonneg_expr(self, node: ast.AST, names: set[str]) -> bool:
        """Whether the expression ``node`` is never negative (syntactically)."""
        if isinstance(node, ast.Constant):
            v = node.value
            return isinstance(v, int) and not isinstance(v, bool) and v >= 0
        if isinstance(node, ast.Name):
            return node.id in names
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, _NONNEG_OPS):
                return self.nonneg_expr(node.left, names) and self.nonneg_expr(node.right, names)
            if isinstance(node.op, ast.BitAnd):
                return self.nonneg_expr(node.left, names) or self.nonneg_expr(node.right, names)
            return False
        if isinstance(node, ast.Subscript):
            return _is_shape(node.value)
        if isinstance(node, ast.Attribute):
            if node.attr in ("size", "ndim", "itemsize") and isinstance(node.value, ast.Name):
                return True
            base = self._static(node.value)
            return node.attr in ("x", "y", "z") and is_index_triple(intrinsic_name(base))
        if isinstance(node, ast.Call):
            return self._call_name(node) in _NONNEG_CALLS
        return False

    def _call_name(self, node: ast.AST) -> str | None:
        if not isinstance(node, ast.Call):
            return None
        return intrinsic_name(self._static(node.func))

    def _static(self, node: ast.AST):
        """The object a Name / module attribute chain refers to, or None (no side effects)."""
        if isinstance(node, ast.Name):
            if node.id in self.stores:
                return None
            return self.lookup(node.id)
        if isinstance(node, ast.Attribute):
            base = self._static(node.value)
            if isinstance(base, types.ModuleType):
                return getattr(base, node.attr, None)
        return None

    # ------------------------------------------------------------------ facts from IR
    def facts(self, cond: ir.Expr | None, negate: bool = False) -> list[Fact]:
        """What ``cond`` (or ``not cond``) being true says about indices."""
        if cond is None:
            return []
        if isinstance(cond, ir.Unary) and cond.op == "not":
            return self.facts(cond.operand, not negate)
        if isinstance(cond, ir.Logical):
            if (cond.op == "and") != negate:  # a and b; not (a or b)
                return self.facts(cond.left, negate) + self.facts(cond.right, negate)
            return []
        if isinstance(cond, ir.Compare):
            op = _FLIP[cond.op] if negate else cond.op
            return self._compare(op, cond.left, cond.right) + self._compare(
                _SWAP[op], cond.right, cond.left
            )
        return []

    def _compare(self, op: str, left: ir.Expr, right: ir.Expr) -> list[Fact]:
        """Facts about ``left`` from ``left <op> right``."""
        name = var_name(left)
        if name is None:
            return []
        out: list[Fact] = []
        if op in (">=", ">") and isinstance(right, ir.Const) and not isinstance(right.value, bool):
            if right.value >= (0 if op == ">=" else -1):
                out.append(("nonneg", name))
        if op == "<":
            bound = self.bound_of(right)
            if bound is not None:
                out.append(("lt", name, bound))
        return out

    def bound_of(self, e: ir.Expr):
        """``("shape", array, axis)`` or ``("const", c)`` for an extent-like expression."""
        e = _unwrap(e)
        if isinstance(e, ir.Field) and e.name == "shape":
            array = var_name(e.array)
            return None if array is None else ("shape", array, e.axis)
        if isinstance(e, ir.Const) and isinstance(e.value, int):
            return ("const", e.value)
        name = var_name(e)
        if name in self.extents:
            array, axis = self.extents[name]
            return ("shape", array, axis)
        return None

    def nonneg(self, e: ir.Expr, facts: list[Fact]) -> bool:
        e = _unwrap(e)
        if isinstance(e, ir.Const):
            return e.value >= 0
        t = e.type
        if isinstance(t, Scalar) and t.dtype.kind == "u":
            return True
        name = var_name(e)
        return name is not None and (name in self.nonneg_names or ("nonneg", name) in facts)

    def below(self, e: ir.Expr, array: ir.Expr, axis: int, facts: list[Fact]) -> bool:
        """Whether ``e < array.shape[axis]`` is known."""
        e = _unwrap(e)
        t = array.type
        static = t.shape[axis] if isinstance(t, Array) and t.shape is not None else None
        if isinstance(e, ir.Const):
            return static is not None and e.value < static
        name = var_name(e)
        if name is None:
            return False
        if ("lt", name, ("shape", var_name(array), axis)) in facts and var_name(array):
            return True
        if static is not None:
            return any(
                f[0] == "lt" and f[1] == name and f[2][0] == "const" and f[2][1] <= static
                for f in facts
            )
        return False


def var_name(e: ir.Expr) -> str | None:
    """The Python name of a variable reference (through value-preserving casts)."""
    e = _unwrap(e)
    return e.var.pyname if isinstance(e, ir.Ref) else None


def _unwrap(e: ir.Expr) -> ir.Expr:
    """``e`` without integer casts that keep every value (int32 -> int64, uint32 -> int64)."""
    while isinstance(e, ir.Cast):
        src, dst = e.value.type, e.type
        if not (isinstance(src, Scalar) and isinstance(dst, Scalar)):
            break
        s, d = src.dtype, dst.dtype
        widening = s.is_integer and d.is_integer and d.itemsize >= s.itemsize
        if not widening or (s.kind == "u" and d.kind == "i" and d.itemsize == s.itemsize):
            break
        if s.kind == "i" and d.kind == "u":
            break
        e = e.value
    return e


def _is_shape(node: ast.AST) -> bool:
    """``x.shape`` with ``x`` a plain name."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "shape"
        and isinstance(node.value, ast.Name)
    )
