"""Device functions with barriers or sub-group operations, inlined into the kernel.

The work-group lowering (:mod:`ember.codegen.workgroup`) splits the kernel's own body at
barriers; a barrier inside a called function cannot be split there, since the function runs
once per work-item.  So every device function that synchronizes (itself, or through a
function it calls) is inlined first: its parameters become locals set from the arguments,
its locals are renamed apart (its per-thread arrays too, which the kernel declares at its
top), and its final ``return`` assigns the call's result.

Calls nested in an expression are first taken out into a variable (``t = f(x)`` before
the statement), which evaluates them before the rest of the statement; a call in a
``while`` condition is refused, and so is a ``return`` before the end of an inlined
function (it would need a jump out of the middle of a region).
"""

from __future__ import annotations

import dataclasses
import itertools

from ember.codegen import regions
from ember.codegen.uniformity import SUBGROUP_OPS
from ember.errors import KernelSyntaxError
from ember.frontend import ir, messages, passes
from ember.frontend.hoisting import hoisted_name
from ember.frontend.types import Array


def synchronizing(functions: list[ir.Function]) -> set[ir.Function]:
    """The functions that reach a barrier or a sub-group operation (callees first)."""
    found: set[ir.Function] = set()
    for fn in functions:
        for _, e in passes.walk(fn.body):
            if isinstance(e, ir.Intrinsic) and (e.name == "barrier" or e.name in SUBGROUP_OPS):
                found.add(fn)
            elif isinstance(e, ir.Call) and e.function in found:
                found.add(fn)
    return found


class Inliner:
    """Inlines the calls to ``targets`` in one kernel; new locals go to ``kernel.locals``."""

    def __init__(self, kernel: ir.Function, targets: set[ir.Function], required=None):
        self.kernel = kernel
        self.targets = targets
        self.required = targets if required is None else required  # the others: optional
        self.count = itertools.count()
        # the inlined functions' per-thread arrays (``ember.local``), renamed apart: the
        # kernel declares them at its top, where the work-group lowering finds its arrays
        self.arrays: list[ir.ArrayDecl] = []

    def block(self, body: list[ir.Stmt]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for s in body:
            changes = {}
            for name in ("body", "orelse"):
                inner = getattr(s, name, None)
                if isinstance(inner, list):
                    changes[name] = self.block(inner)
            s = dataclasses.replace(s, **changes) if changes else s
            out.extend(self.statement(s))
        return out

    def statement(self, s: ir.Stmt) -> list[ir.Stmt]:
        if isinstance(s, ir.While) and self._first_or_none(s) is not None:
            if self._first(s) not in self.required:
                return [s]  # only worth inlining: leave the call where it is
        if isinstance(s, ir.Eval) and self._is_target(s.expr):
            return self.inline(s.expr, None, s.loc)
        if isinstance(s, ir.Assign) and self._is_target(s.value):
            return self.inline(s.value, s.target, s.loc)
        if not any(self._is_target(x) for e in passes.own_exprs(s) for x in passes.subexprs(e)):
            return [s]
        if isinstance(s, ir.While):
            raise messages.error(
                KernelSyntaxError,
                f"a while condition calls '{self._first(s).pyname}', which has a barrier or a "
                "sub-group operation: the cpu backend cannot run it there",
                s.loc,
                messages.STAGE_TARGET,
                "call it into a variable before the loop and at the end of its body",
            )
        before: list[ir.Stmt] = []

        def hoist(e: ir.Expr) -> ir.Expr:
            if not self._is_target(e):
                return e
            temp = self._local(e.type, "em_call")
            before.extend(self.inline(e, temp, s.loc))
            return ir.Ref(e.type, temp)

        rewritten = regions.map_stmt_exprs(s, hoist)  # fills `before`
        return [*before, rewritten]

    def _is_target(self, e: ir.Expr) -> bool:
        return isinstance(e, ir.Call) and e.function in self.targets

    def _first_or_none(self, s: ir.Stmt) -> ir.Function | None:
        try:
            return self._first(s)
        except StopIteration:
            return None

    def _first(self, s: ir.Stmt) -> ir.Function:
        return next(
            x.function
            for e in passes.own_exprs(s)
            for x in passes.subexprs(e)
            if self._is_target(x)
        )

    def _local(self, t, name: str, exact: bool = False) -> ir.Variable:
        var = ir.Variable(name if exact else f"{name}{next(self.count)}", t, name)
        self.kernel.locals.append(var)
        return var

    def inline(self, call: ir.Call, result: ir.Variable | None, loc) -> list[ir.Stmt]:
        """The statements of ``call``'s function with its arguments, setting ``result`` (or
        the call's tuple ``outs``) where it returns."""
        fn = call.function
        tag = next(self.count)
        assigned = {w for s, e in passes.walk(fn.body) if e is None for w in regions.writes_of(s)}
        names: dict[ir.Variable, ir.Variable] = {}
        start: list[ir.Stmt] = []
        for p, a in zip(fn.params, call.args, strict=True):
            if isinstance(p.type, Array) and isinstance(a, ir.Ref) and p not in assigned:
                names[p] = a.var  # an array argument: the callee uses the caller's variable
                continue
            names[p] = self._local(p.type, f"{p.name}_{fn.name}{tag}", exact=True)
            start.append(ir.Assign(loc, names[p], a))
        for v in fn.locals:
            names[v] = self._local(v.type, f"{v.name}_{fn.name}{tag}", exact=True)
        for v in fn.hoisted:  # shared arrays of device functions: the kernel declares them
            name = hoisted_name(self.kernel, v)
            if name != v.name:
                names[v] = ir.Variable(name, v.type, v.name)
        body = [s for s in fn.body if not isinstance(s, ir.ArrayDecl)]
        for d in fn.body:
            if isinstance(d, ir.ArrayDecl):  # (its shared arrays were hoisted already)
                v = d.var
                names[v] = ir.Variable(f"{v.name}_{fn.name}{tag}", v.type, v.pyname)
                self.arrays.append(dataclasses.replace(d, var=names[v]))
        last = body.pop() if body and isinstance(body[-1], ir.Return) else None
        for s, e in passes.walk(body):
            if e is None and isinstance(s, ir.Return):
                raise messages.error(
                    KernelSyntaxError,
                    f"device function '{fn.pyname}' has a barrier or a sub-group operation "
                    "and returns before its end: the cpu backend inlines such functions and "
                    "needs their only return to be the last statement",
                    s.loc,
                    messages.STAGE_TARGET,
                    "keep the result in a variable and return it at the end",
                )
        body = regions.map_block(body, lambda s: _renamed(s, names))
        end: list[ir.Stmt] = []
        if last is not None and last.values:
            rename = _get(names)
            values = [regions.map_expr(v, lambda x: regions.rename(x, rename)) for v in last.values]
            targets = call.outs if call.outs else ([result] if result is not None else [])
            if targets:
                end = [ir.Assign(last.loc, t, v) for t, v in zip(targets, values, strict=False)]
            else:  # the result is not used: keep what computing it does
                end = [ir.Eval(last.loc, v) for v in values if not passes.is_pure(v)]
        return self.block([*start, *body, *end])


def _get(names: dict):
    return lambda v: names.get(v, v)


def _renamed(s: ir.Stmt, names: dict) -> ir.Stmt:
    s = regions.map_stmt_exprs(s, lambda e: regions.rename(e, _get(names)))
    if isinstance(s, ir.Assign) and s.target in names:
        s = dataclasses.replace(s, target=names[s.target])
    elif isinstance(s, ir.ForRange) and s.var in names:
        s = dataclasses.replace(s, var=names[s.var])
    return s


def looping(functions: list[ir.Function]) -> set[ir.Function]:
    """The functions with a loop and no ``return`` before their end: inlined too, so that
    their loops can run in lockstep over the work-items (:mod:`ember.codegen.sweeps`)."""
    found: set[ir.Function] = set()
    for fn in functions:
        body = fn.body[:-1] if fn.body and isinstance(fn.body[-1], ir.Return) else fn.body
        statements = [s for s, e in passes.walk(body) if e is None]
        if any(isinstance(s, ir.Return) for s in statements):
            continue
        if any(isinstance(s, ir.While | ir.ForRange) for s in statements):
            found.add(fn)
    return found


def inline_synchronizing(program: ir.Program, kernel: ir.Function) -> list[ir.Function]:
    """Inline into ``kernel`` (its body replaced, in place) every call of a function that
    synchronizes, or that loops (:func:`looping`); return the device functions still
    needed."""
    targets = synchronizing(program.functions) | looping(program.functions)
    if not targets:
        return program.functions
    required = synchronizing(program.functions)
    inliner = Inliner(kernel, targets, required)
    body = inliner.block(kernel.body)
    kernel.body = [*inliner.arrays, *body]
    used = {
        e.function for fn in [kernel, *program.functions] if fn not in targets
        for _, e in passes.walk(fn.body) if isinstance(e, ir.Call)
    }  # fmt: skip
    return [fn for fn in program.functions if fn not in targets or fn in used]
