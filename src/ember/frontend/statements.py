"""Statement typing (a mixin of :class:`~ember.frontend.typer.FunctionTyper`).

Supported: assignment (also to several targets and with tuple unpacking), augmented and
annotated assignment, ``if/elif/else``, ``for ... in range(...)``, ``while``, ``break``,
``continue``, ``return``, ``pass`` and expression statements (calls); ``raise`` and
``assert`` are in :mod:`~ember.frontend.checks`.  Everything else is a
:class:`~ember.errors.KernelSyntaxError` that says what to do instead.
"""

from __future__ import annotations

import ast
import copy

from ember.errors import KernelSyntaxError, KernelTypeError
from ember.frontend import ir, ranges
from ember.frontend.intrinsics import intrinsic_name
from ember.frontend.operators import OperatorError, cast
from ember.frontend.passes import is_pure
from ember.frontend.types import WEAK_INT, Array, Scalar, as_dtype, describe, scalar
from ember.frontend.values import ArrayVal, Pending, Static, TupleVal, c_identifier

ARITH = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
    ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift",
    ast.RShift: "rshift", ast.BitAnd: "bitand", ast.BitOr: "bitor", ast.BitXor: "bitxor",
}  # fmt: skip

_UNSUPPORTED = {
    ast.With: ("'with' is not supported in kernels", None),
    ast.Try: ("'try' is not supported in kernels", "kernels cannot catch exceptions"),
    ast.FunctionDef: ("a kernel cannot define functions inside it", "define the helper at "
                      "module level; kernels compile plain functions they call"),
    ast.ClassDef: ("a kernel cannot define classes", None),
    ast.Import: ("a kernel cannot import", "import at module level; kernels can use modules "
                 "they see"),
    ast.ImportFrom: ("a kernel cannot import", "import at module level"),
    ast.Global: ("a kernel cannot assign global variables", "write results into an array "
                 "argument"),
    ast.Nonlocal: ("a kernel cannot assign enclosing variables", "write results into an array"),
    ast.Delete: ("'del' is not supported in kernels", None),
    ast.AsyncFor: ("'async for' is not supported in kernels", None),
    ast.AsyncWith: ("'async with' is not supported in kernels", None),
}  # fmt: skip


_EXITS = (ast.Return, ast.Continue, ast.Break, ast.Raise)


class StatementTyper:
    """Statement visitors; see :class:`~ember.frontend.typer.FunctionTyper` for the state."""

    def statement(self, node: ast.stmt) -> None:
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is not None:
            method(node)
            return
        message, hint = _UNSUPPORTED.get(
            type(node), (f"'{type(node).__name__}' statements are not supported in kernels", None)
        )
        raise self.fail(KernelSyntaxError, message, node, hint)

    # ------------------------------------------------------------------ assignment
    def stmt_Assign(self, node: ast.Assign) -> None:
        value = self.expr(node.value)
        if len(node.targets) > 1:  # a[i] = b[i] = v: v is evaluated once, as in Python
            value = self._evaluated(self.materialize(value, node), node)
        for target in node.targets:
            self.assign_target(target, value, node)

    def _evaluated(self, value, node: ast.stmt):
        """``value`` computed into temporaries (constants stay): a chained assignment must
        not evaluate it again per target - ``x[i] = y[i] = x[i] + 1`` once gave ``y`` the
        value computed from the new ``x[i]`` (issue 18)."""
        if isinstance(value, TupleVal):
            return TupleVal([self._evaluated(item, node) for item in value.items])
        if isinstance(value, ir.Expr) and not isinstance(value, ir.Const):
            return self.spill(value, node)
        return value

    def assign_target(self, target: ast.expr, value, node: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            self.assign_name(target.id, value, node)
        elif isinstance(target, ast.Tuple | ast.List):
            self._unpack(target, value, node)
        elif isinstance(target, ast.Subscript):
            self.store(target, self.materialize(value, node), node)
        elif isinstance(target, ast.Attribute):
            raise self.fail(
                KernelSyntaxError,
                "cannot assign to an attribute in a kernel",
                target,
                "assign to a variable or an array element",
            )
        else:
            raise self.fail(KernelSyntaxError, "cannot assign to this target", target)

    def _unpack(self, target: ast.Tuple | ast.List, value, node: ast.stmt) -> None:
        if any(isinstance(e, ast.Starred) for e in target.elts):
            raise self.fail(
                KernelSyntaxError,
                "starred assignment is not supported in kernels",
                target,
                "unpack every item: a, b, c = t",
            )
        if not isinstance(value, TupleVal):
            what = describe(value.type) if isinstance(value, ir.Expr) else "this value"
            raise self.fail(
                KernelTypeError, f"cannot unpack {what} into {len(target.elts)} names", node
            )
        if len(value.items) != len(target.elts):
            raise self.fail(
                KernelTypeError,
                f"cannot unpack {len(value.items)} values into {len(target.elts)} names",
                node,
            )
        items = value.items
        targets = {n.id for t in target.elts for n in ast.walk(t) if isinstance(n, ast.Name)}
        reads = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
        if targets & reads:  # a, b = b, a: evaluate every value before assigning any
            items = [
                self.spill(i, node) if isinstance(i, ir.Expr) and not isinstance(i, ir.Const) else i
                for i in items
            ]
        for sub, item in zip(target.elts, items, strict=True):
            self.assign_target(sub, item, node)

    def store(self, target: ast.Subscript, value, node: ast.stmt) -> None:
        array = self.runtime(target.value)
        if isinstance(array, TupleVal):
            raise self.fail(
                KernelTypeError,
                "tuples cannot be changed (they are immutable)",
                target,
                "build a new tuple, or use an array",
            )
        if not isinstance(array.type, Array):
            raise self.fail(
                KernelTypeError, f"cannot assign to an element of a {describe(array.type)}", target
            )
        self._writable(array, target)
        index = self.indices(array, target.slice, target)
        checks = self.index_checks(array, index, target)
        element = self._element_value(value, array.type, node)
        self.emit(ir.Store(self.loc(node), array, index, element, checks=checks))

    def _writable(self, array: ir.Expr, node: ast.AST) -> None:
        if array.type.space == "constant":
            raise self.fail(
                KernelTypeError, "a captured NumPy array is a read-only table in kernels", node,
                "pass the array as a kernel argument (ember.asarray(a)) to write to it",
            )  # fmt: skip

    def _element_value(self, value, t: Array, node: ast.AST) -> ir.Expr:
        v = self.scalar_of(value, node)
        if not isinstance(v.type, Scalar):
            raise self.fail(
                KernelTypeError,
                f"cannot store {describe(v.type)} into an element of {describe(t)}",
                node,
                "store one element at a time",
            )
        try:
            return self.checked(cast(v, scalar(t.dtype)), node, v)
        except OperatorError as exc:
            raise self.type_error(exc, node) from None

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        op = self._arith_op(node.op, node)
        target = node.target
        if isinstance(target, ast.Name):
            current = self.read_name(target.id, target)
            rhs = self.value(node.value)
            self.assign_name(target.id, self.arith(op, current, rhs, node), node)
        elif isinstance(target, ast.Subscript):
            array = self.runtime(target.value)
            if not isinstance(array, ir.Expr) or not isinstance(array.type, Array):
                raise self.fail(
                    KernelTypeError,
                    "augmented assignment needs a variable or an array element",
                    target,
                )
            self._writable(array, target)
            index = [
                i if is_pure(i) else self.spill(i, node)
                for i in self.indices(array, target.slice, target)
            ]
            # the store's checks guard the whole statement, the load of the old value too
            checks = self.index_checks(array, index, target)
            old = ir.Load(scalar(array.type.dtype), array, list(index))
            new = self.arith(op, old, self.value(node.value), node)
            element = self._element_value(new, array.type, node)
            self.emit(ir.Store(self.loc(node), array, index, element, checks=checks))
        else:
            raise self.fail(KernelSyntaxError, "cannot use augmented assignment here", target)

    def _arith_op(self, op: ast.operator, node: ast.AST) -> str:
        if type(op) not in ARITH:
            raise self.fail(
                KernelSyntaxError,
                "the '@' operator is not supported in kernels",
                node,
                "write the loops, or call a matrix-multiply kernel",
            )
        return ARITH[type(op)]

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.fail(
                KernelSyntaxError, "annotations are only supported on plain names", node.target
            )
        name = node.target.id
        ann = self.value(node.annotation)
        dtype = as_dtype(ann.obj) if isinstance(ann, Static) else None
        if dtype is None:
            raise self.fail(
                KernelTypeError,
                "a variable annotation must be a dtype",
                node.annotation,
                "e.g. acc: ember.float32 = 0",
            )
        t = scalar(dtype)
        if self.fixed.get(name, t) != t:
            raise self.fail(
                KernelTypeError, f"'{name}' is annotated twice with different types", node
            )
        if name not in self.fixed:
            self.fixed[name] = t
            self.var_types[name] = t
            self.bindings.pop(name, None)
            self.changed = True
        if node.value is not None:
            self.assign_name(name, self.expr(node.value), node)

    # ------------------------------------------------------------------ control flow
    def stmt_If(self, node: ast.If) -> None:
        cond = self._header(lambda: self.condition(node.test), node.test)
        if isinstance(cond, ir.Const):  # compile time: only the branch that runs is typed
            self.blocks[-1].extend(self.block(node.body if cond.value else node.orelse))
            return
        known = self.ranges.facts(cond), self.ranges.facts(cond, negate=True)
        body = self.with_facts(known[0], node.body)
        orelse = self.with_facts(known[1], node.orelse)
        if not node.orelse and node.body and isinstance(node.body[-1], _EXITS):
            self.exit_facts = known[1]  # `if i >= n: return` -> i < n after it
        if cond is not None:
            self.emit(ir.If(self.loc(node), cond, body, orelse))

    def _header(self, typed, node: ast.AST):
        """Type a loop or if header; a pending name still lets the body be typed."""
        try:
            return typed()
        except Pending as p:
            self.pending.append((p.name, p.node))
            return None

    def stmt_While(self, node: ast.While) -> None:
        if node.orelse:
            self._loop_else(node)
            return
        saved, self.no_spill = self.no_spill, "a while condition"
        try:
            cond = self._header(lambda: self.condition(node.test), node.test)
        finally:
            self.no_spill = saved
        body = self._loop_body(node.body)
        if cond is not None:
            self.emit(ir.While(self.loc(node), cond, body))

    def _loop_body(self, stmts: list[ast.stmt]) -> list[ir.Stmt]:
        self.loop_depth += 1
        try:
            return self.block(stmts)
        finally:
            self.loop_depth -= 1

    def _loop_else(self, node: ast.For | ast.While) -> None:
        """``for/while ... else``: the ``else`` block runs when the loop ends without a
        ``break`` of its own.  Written as a flag that the loop's breaks set (on copies of
        the body: the function's tree is typed again for other argument types)."""
        loop = copy.copy(node)
        loop.orelse = []
        if not any(_breaks(s) for s in node.body):  # no break: the else block always runs
            self.statement(loop)
            for s in node.orelse:
                self.statement(s)
            return
        flag = f"_em_broke_{node.lineno}_{node.col_offset}"
        self.assigned.add(flag)  # a local (Python's rule reads the tree before typing)

        def assign(value: bool, at: ast.AST) -> ast.stmt:
            target = ast.Name(id=flag, ctx=ast.Store())
            return ast.copy_location(ast.Assign(targets=[target], value=ast.Constant(value)), at)

        loop.body = [_SetBeforeBreak(assign).visit(copy.deepcopy(s)) for s in node.body]
        test = ast.UnaryOp(op=ast.Not(), operand=ast.Name(id=flag, ctx=ast.Load()))
        after = ast.copy_location(ast.If(test=test, body=node.orelse, orelse=[]), node)
        for s in (assign(False, node), loop, after):
            self.statement(ast.fix_missing_locations(s))

    def stmt_For(self, node: ast.For) -> None:
        if node.orelse:
            self._loop_else(node)
            return
        if not isinstance(node.target, ast.Name):
            raise self.fail(
                KernelSyntaxError,
                "a for loop in a kernel needs one loop variable",
                node.target,
                "for i in range(n): ...",
            )
        if self._static_range(node.iter):
            self._unroll(node)
            return
        header = self._header(lambda: self._range_header(node), node.iter)
        name = node.target.id
        counter = None
        known: list = []
        if header is not None:
            counter = self._loop_variable(name, header[0], node)
            known = self._range_facts(name, *header[1:])
        depth = len(self.facts)
        self.facts += ranges.surviving(known, node.body)
        try:
            body = self._loop_body(node.body)
        finally:
            del self.facts[depth:]
        if header is None or counter is None:
            return
        t, start, stop, step, sign = header
        var, prefix = counter
        stop, step = self._stable(stop, node), self._stable(step, node)
        loc = self.loc(node)
        self.emit(
            ir.ForRange(
                loc,
                var,
                self._to(start, var, node),
                self._to(stop, var, node),
                self._to(step, var, node),
                sign,
                prefix + body,
            )
        )

    # ------------------------------------------------------------------ static_range
    def _static_range(self, it: ast.expr) -> bool:
        if not isinstance(it, ast.Call):
            return False
        func = self.value(it.func)
        return isinstance(func, Static) and intrinsic_name(func.obj) == "static_range"

    def _unroll(self, node: ast.For) -> None:
        """``for k in ember.static_range(...)``: the body once per value, with ``k`` a
        compile-time constant in each copy (it can index tuples, pick compile-time values)."""
        call = node.iter
        if call.keywords or not 1 <= len(call.args) <= 3:
            raise self.fail(KernelTypeError, "static_range() takes 1 to 3 arguments", call)
        bounds = [self.const_int(self.value(a), a, "a static_range() bound", 0) for a in call.args]
        if len(bounds) == 3 and bounds[2] == 0:
            raise self.fail(KernelTypeError, "static_range() step must not be zero", call)
        values = range(*bounds)
        if len(values) > MAX_UNROLL:
            raise self.fail(
                KernelTypeError, f"static_range() of {len(values)} iterations: unrolled, the "
                f"body would be copied more than {MAX_UNROLL} times", call,
                "use range() for long loops",
            )  # fmt: skip
        for inner in node.body:
            jump = _jump(inner)
            if jump is not None:
                raise self.fail(
                    KernelSyntaxError, "break and continue are not supported in a "
                    "static_range() loop (it is unrolled)", jump, "use an if around the rest",
                )  # fmt: skip
        name = node.target.id
        saved = self.static_names.get(name)
        try:
            for v in values:
                self.static_names[name] = ir.Const(WEAK_INT, v)
                self.blocks[-1].extend(self.block(node.body))
        finally:
            self.static_names.pop(name, None)
            if saved is not None:
                self.static_names[name] = saved
        if values and saved is None and self._read_after(name, node):
            self.assign_name(name, ir.Const(WEAK_INT, values[-1]), node)  # as in Python

    def _read_after(self, name: str, loop: ast.For) -> bool:
        """Whether ``name`` is read anywhere in the function outside ``loop``'s body."""
        inside = {id(n) for s in loop.body for n in ast.walk(s)}
        return any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
            and id(n) not in inside
            for n in ast.walk(self.cap.tree)
        )  # fmt: skip

    def _range_facts(self, name: str, start, stop, step, sign: int) -> list:
        """``for i in range(a, x.shape[k])`` with a >= 0 and a positive step:
        ``0 <= i < x.shape[k]`` in the body."""
        if sign <= 0:
            return []
        out = []
        if self.ranges.nonneg(start, self.facts):
            out.append(("nonneg", name))
        bound = self.ranges.bound_of(stop)
        if bound is not None:
            out.append(("lt", name, bound))
        return out

    def _range_header(self, node: ast.For):
        call = node.iter
        func = self.value(call.func) if isinstance(call, ast.Call) else None
        if not (isinstance(func, Static) and func.obj is range):
            raise self.fail(
                KernelSyntaxError,
                "a for loop in a kernel must iterate over range(...)",
                node.iter,
                "for i in range(start, stop, step): ...",
            )
        if call.keywords or not 1 <= len(call.args) <= 3:
            raise self.fail(KernelTypeError, "range() takes 1 to 3 positional arguments", call)
        args = [self.scalar_of(self.value(a), a) for a in call.args]
        for a, n in zip(args, call.args, strict=True):
            if not (isinstance(a.type, Scalar) and a.type.dtype.is_integer):
                raise self.fail(
                    KernelTypeError,
                    f"range() needs integers, got {describe(a.type)}",
                    n,
                    "convert with int(x)",
                )
        if len(args) == 1:
            args = [ir.Const(args[0].type, 0), args[0]]
        start, stop = args[0], args[1]
        step = args[2] if len(args) == 3 else ir.Const(args[0].type, 1)
        t = WEAK_INT  # Python's range() counts in Python ints, whatever the bounds' types
        sign = 0
        if isinstance(step, ir.Const):
            if step.value == 0:
                raise self.fail(KernelTypeError, "range() step must not be zero", call.args[2])
            sign = 1 if step.value > 0 else -1
        return t, start, stop, step, sign

    def _loop_variable(self, name: str, t: Scalar, node: ast.For):
        """The C variable the loop counts with, and statements that start each iteration."""
        assigned_in_body = any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
            for stmt in node.body for n in ast.walk(stmt)
        )  # fmt: skip
        self.assign_name(name, ir.Const(t, 0), node)  # unify the loop variable's type
        self.blocks[-1].pop()  # ...without keeping that assignment
        var = self.bindings[name]
        vt = var.type if isinstance(var, ir.Variable) else None
        if not (isinstance(vt, Scalar) and vt.dtype.is_integer):
            raise self.fail(
                KernelTypeError,
                f"loop variable '{name}' is {describe(vt)} "
                "elsewhere; a range() loop variable must stay an integer",
                node.target,
            )
        if not assigned_in_body:
            return var, []
        hidden = ir.Variable(self.names.internal("em_" + c_identifier(name)), vt, name)
        self.locals.append(hidden)
        return hidden, [ir.Assign(self.loc(node), var, ir.Ref(vt, hidden))]

    def _to(self, e: ir.Expr, var: ir.Variable, node: ast.AST) -> ir.Expr:
        try:
            return cast(e, var.type)
        except OperatorError as exc:
            raise self.type_error(exc, node) from None

    def _stable(self, e: ir.Expr, node: ast.For) -> ir.Expr:
        """``e`` itself when re-evaluating it each iteration is safe, else a temporary."""
        changed = {
            n.id
            for s in node.body
            for n in ast.walk(s)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        if _reads_only(e, changed):
            return e
        return self.spill(e, node, "em_stop")

    def stmt_Break(self, node: ast.Break) -> None:
        self._in_loop(node, "break")
        self.emit(ir.Break(self.loc(node)))

    def stmt_Continue(self, node: ast.Continue) -> None:
        self._in_loop(node, "continue")
        self.emit(ir.Continue(self.loc(node)))

    def _in_loop(self, node: ast.AST, word: str) -> None:
        if self.loop_depth == 0:
            raise self.fail(KernelSyntaxError, f"'{word}' outside a loop", node)

    def stmt_Return(self, node: ast.Return) -> None:
        none = node.value is None or (
            isinstance(node.value, ast.Constant) and node.value.value is None
        )
        if self.is_kernel and not none:
            raise self.fail(
                KernelSyntaxError, "a kernel cannot return a value", node,
                "write the result into an array argument; a bare 'return' ends the thread",
            )  # fmt: skip
        value = None if none else self.runtime(node.value)
        values = self.note_return(value, node)
        self.emit(ir.Return(self.loc(node), values))

    def stmt_Pass(self, node: ast.Pass) -> None:
        pass

    def stmt_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        value = self.expr(node.value)
        if isinstance(value, ArrayVal):
            self.materialize(value, node)
        elif isinstance(value, ir.Expr) and not is_pure(value):
            self.emit(ir.Eval(self.loc(node), value))


MAX_UNROLL = 1024  # copies of a static_range() body


def _breaks(node: ast.AST) -> bool:
    """Whether ``node`` holds a break of this loop level (not of nested loops)."""
    if isinstance(node, ast.Break):
        return True
    if isinstance(node, ast.For | ast.While | ast.FunctionDef):
        return False
    return any(_breaks(child) for child in ast.iter_child_nodes(node))


class _SetBeforeBreak(ast.NodeTransformer):
    """Each break of this loop level becomes ``flag = True; break`` (``assign(True, at)``
    makes the assignment); nested loops keep theirs."""

    def __init__(self, assign):
        self.assign = assign

    def visit_Break(self, node: ast.Break):
        return [self.assign(True, node), node]

    def visit_For(self, node: ast.For):
        return node

    def visit_While(self, node: ast.While):
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef):
        return node


def _jump(node: ast.AST) -> ast.AST | None:
    """A break/continue of this loop level in ``node`` (not of nested loops)."""
    if isinstance(node, ast.Break | ast.Continue):
        return node
    if isinstance(node, ast.For | ast.While | ast.FunctionDef):
        return None
    for child in ast.iter_child_nodes(node):
        found = _jump(child)
        if found is not None:
            return found
    return None


def _reads_only(e: ir.Expr, changed: set[str]) -> bool:
    """True when ``e`` has no side effects and reads no variable named in ``changed``."""
    if isinstance(e, ir.Const):
        return True
    if isinstance(e, ir.Ref):
        return e.var.pyname not in changed and e.var.name not in changed
    if isinstance(e, ir.Field):
        return _reads_only(e.array, changed)
    if isinstance(e, ir.Cast):
        return _reads_only(e.value, changed)
    if isinstance(e, ir.Binary):
        return _reads_only(e.left, changed) and _reads_only(e.right, changed)
    return False
