"""Block-uniform control flow for emulated warp operations (an IR pass).

On a device without sub-groups, warp operations are exchanges through shared memory between
block barriers (``codegen/warps.py``), so every thread of the block must reach each of them,
in the same order.  CUDA code calls them in branches only some threads take (``if warp ==
0: total = warp_reduce(total)``), in loops whose trip count differs per warp, after an
early ``return``.  This pass rewrites the functions that (transitively) use warp operations
the way a SIMT machine runs them - by predication:

* every function of the set gets a predicate (the kernel: ``live``, true at the start; a
  device function: an extra ``em_on`` parameter from its caller);
* a statement without collective operations runs under ``if (predicate)``;
* a statement with some has them lifted out: their arguments are computed under the
  predicate, the operation itself runs in every thread, the rest of the statement under the
  predicate again (a call of a device function of the set passes the predicate along);
* ``if`` splits the predicate (the condition is evaluated under it); a loop runs while any
  thread of the block still iterates (a block-wide vote, 3 barriers), each thread's
  iterations under its own predicate; ``break``/``continue``/``return`` clear the predicates
  they leave (a returning device function keeps its value for the end).

Inactive threads pass zeros into the operations (never an undefined value: a lane index must
stay one) and ignore what comes back, as CUDA's inactive lanes.  Kernels whose threads all
take the same path pay the predicates and, per loop iteration around a warp operation, the
vote.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ember.frontend import ir, rewrite
from ember.frontend.types import BOOL, VOID, Scalar, Tuple

# Operations every thread of the block must execute (in emulation).
COLLECTIVE = ir.WARP_OPS | {"barrier", "block_any"}


def make_uniform(program: ir.Program) -> ir.Program:
    """Predicate the functions that reach warp operations (emulated targets only)."""
    funcs = [*program.functions, program.kernel]
    reach: set[int] = set()
    for fn in funcs:  # callees first: one pass suffices
        if _direct(fn) or any(id(c) in reach for c in fn.callees):
            reach.add(id(fn))
    uses_warp = any(
        isinstance(e, ir.Intrinsic) and e.name in COLLECTIVE - {"barrier"}
        for fn in funcs for e in rewrite.all_exprs(fn.body)
    )  # fmt: skip
    if not uses_warp:
        return program
    for fn in funcs:
        if id(fn) in reach:
            _Predicator(fn, reach).run()
    return program


def _direct(fn: ir.Function) -> bool:
    return any(
        isinstance(e, ir.Intrinsic) and e.name in COLLECTIVE - {"barrier"}
        for e in rewrite.all_exprs(fn.body)
    )


@dataclass
class _Loop:
    alive: ir.Variable  # false once the thread broke out (or returned)
    depth: int  # the predicate stack's height at the loop's own predicate


@dataclass
class _Predicator:
    fn: ir.Function
    reach: set
    stack: list = field(default_factory=list)  # predicate variables, outermost first
    loops: list = field(default_factory=list)
    rets: list = field(default_factory=list)
    count: int = 0

    # ------------------------------------------------------------------ helpers
    def var(self, base: str, t) -> ir.Variable:
        self.count += 1
        v = ir.Variable(f"em_{base}{self.count}", t, base)
        self.fn.locals.append(v)
        return v

    def collective(self, e: ir.Expr) -> bool:
        if isinstance(e, ir.Intrinsic):
            return e.name in COLLECTIVE
        return isinstance(e, ir.Call) and id(e.function) in self.reach

    def has_collective(self, node) -> bool:
        exprs = rewrite.children(node)
        if any(self.collective(x) for e in exprs for x in rewrite.subexprs(e)):
            return True
        return any(self.has_collective(s) for b in rewrite.nested(node) for s in b)

    def escapes(self, s: ir.Stmt, in_loop: bool = False) -> bool:
        """Whether ``s`` holds a return, or a break/continue of a loop outside it."""
        if isinstance(s, ir.Return):
            return True
        if isinstance(s, ir.Break | ir.Continue):
            return not in_loop
        inner = in_loop or isinstance(s, ir.ForRange | ir.While)
        return any(self.escapes(x, inner) for b in rewrite.nested(s) for x in b)

    def pred(self) -> ir.Expr:
        v = self.stack[-1]
        return ir.Ref(v.type, v)

    def guarded(self, stmts: list[ir.Stmt], loc) -> list[ir.Stmt]:
        return [ir.If(loc, self.pred(), stmts, [])] if stmts else []

    # ------------------------------------------------------------------ driver
    def run(self) -> None:
        fn = self.fn
        decls = [s for s in fn.body if isinstance(s, ir.ArrayDecl)]
        body = [s for s in fn.body if not isinstance(s, ir.ArrayDecl)]
        live = self.var("live", BOOL)
        start: ir.Expr = ir.Const(BOOL, True)
        if not fn.is_kernel:  # the caller's predicate, as a last parameter
            on = ir.Variable("em_on", BOOL, "em_on")
            fn.params.append(on)
            start = ir.Ref(BOOL, on)
            self.rets = [self.var("rv", t) for t in fn.returns]
        self.stack = [live]
        out = [ir.Assign(fn.loc, live, start), *self.block(body)]
        if self.rets:
            refs = [ir.Ref(v.type, v) for v in self.rets]
            out.append(ir.Return(fn.loc, refs if not isinstance(fn.return_type, Tuple) else refs))
        fn.body = [*decls, *out]

    def block(self, stmts: list[ir.Stmt]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        plain: list[ir.Stmt] = []
        for s in stmts:
            if not self.has_collective(s) and not self.escapes(s):
                plain.append(s)
                continue
            if plain:
                out += self.guarded(plain, plain[0].loc)
                plain = []
            out += self.statement(s)
        if plain:
            out += self.guarded(plain, plain[0].loc)
        return out

    # ------------------------------------------------------------------ statements
    def statement(self, s: ir.Stmt) -> list[ir.Stmt]:
        if isinstance(s, ir.If):
            return self.if_(s)
        if isinstance(s, ir.While | ir.ForRange):
            return self.loop(s)
        if isinstance(s, ir.Return):
            return self.return_(s)
        if isinstance(s, ir.Break | ir.Continue):
            return self.jump(s)
        pre: list[ir.Stmt] = []
        rewrite.map_stmt(s, lambda e: self.lift(e, pre, s.loc))
        if isinstance(s, ir.Eval) and isinstance(s.expr, ir.Ref):
            return pre  # only the lifted operation was left
        return pre + self.guarded([s], s.loc)

    def lift(self, e: ir.Expr, pre: list[ir.Stmt], loc) -> ir.Expr:
        """A collective operation inside an expression: its arguments under the predicate,
        the operation in every thread; the expression gets a variable holding its value."""
        if not self.collective(e):
            return e
        args = []
        for a in e.args:
            if isinstance(a, ir.Const | ir.Ref):
                args.append(a)
                continue
            t = self.var("a", a.type)
            if isinstance(a.type, Scalar):  # inactive threads pass 0, never an undefined
                pre.append(ir.Assign(loc, t, ir.Const(a.type, 0)))  # value (a lane index)
            pre += self.guarded([ir.Assign(loc, t, a)], loc)
            args.append(ir.Ref(a.type, t))
        e.args = args
        if isinstance(e, ir.Call):
            e.args = [*args, self.pred()]
        elif e.name in ir.TAKING_PART:  # only the lanes running the call count (as CUDA's
            e.args = [*args, self.pred()]  # with activemask()): they need the predicate
        if e.type is VOID or (isinstance(e, ir.Call) and e.outs):
            pre.append(ir.Eval(loc, e))
            return ir.Ref(VOID, self.stack[0])  # a placeholder: the statement is done
        t = self.var("w", e.type)
        pre.append(ir.Assign(loc, t, e))
        return ir.Ref(e.type, t)

    def test(self, cond: ir.Expr, loc) -> tuple[list[ir.Stmt], ir.Variable]:
        """``q = cond`` evaluated under the predicate (false otherwise)."""
        pre: list[ir.Stmt] = []
        cond = rewrite.map_expr(cond, lambda e: self.lift(e, pre, loc))
        q = self.var("q", BOOL)
        pre.append(ir.Assign(loc, q, ir.Const(BOOL, False)))
        pre += self.guarded([ir.Assign(loc, q, cond)], loc)
        return pre, q

    def if_(self, s: ir.If) -> list[ir.Stmt]:
        out, q = self.test(s.cond, s.loc)
        p = self.pred()
        branches = []
        for body, cond in ((s.body, _ref(q)), (s.orelse, _not(q))):
            if body:  # both predicates before either branch runs (it may clear p)
                var = self.var("p", BOOL)
                out.append(ir.Assign(s.loc, var, ir.Logical(BOOL, "and", p, cond)))
                branches.append((var, body))
        for var, body in branches:
            self.stack.append(var)
            out += self.block(body)
            self.stack.pop()
        return out

    def loop(self, s) -> list[ir.Stmt]:
        loc = s.loc
        out: list[ir.Stmt] = []
        alive = self.var("alive", BOOL)
        out.append(ir.Assign(loc, alive, self.pred()))
        step_var = None
        if isinstance(s, ir.ForRange):  # start, stop and step evaluated once, under p
            bounds = []
            for e in (s.stop, s.step):
                v = self.var("b", e.type)
                out += self.guarded([ir.Assign(loc, v, e)], loc)
                bounds.append(ir.Ref(e.type, v))
            out += self.guarded([ir.Assign(loc, s.var, s.start)], loc)
            stop, step_var = bounds
            cond = _range_cond(s, stop, step_var)
        else:
            cond = s.cond
        self.stack.append(alive)
        head, q = self.test(cond, loc)
        self.stack.pop()
        on = self.var("on", BOOL)
        iteration = [*head, ir.Assign(loc, alive, ir.Logical(BOOL, "and", _ref(alive), _ref(q)))]
        iteration.append(ir.Assign(loc, on, _ref(alive)))
        vote = ir.Intrinsic(BOOL, "block_any", [_ref(alive)])
        iteration.append(ir.If(loc, ir.Unary(BOOL, "not", vote), [ir.Break(loc)], []))
        self.stack.append(on)
        self.loops.append(_Loop(alive, len(self.stack) - 1))
        iteration += self.block(s.body)
        self.loops.pop()
        self.stack.pop()
        if step_var is not None:  # the counter steps while the thread is still in the loop
            step = ir.Assign(loc, s.var, ir.Binary(s.var.type, "add", _ref(s.var), step_var))
            iteration.append(ir.If(loc, _ref(alive), [step], []))
        out.append(ir.While(loc, ir.Const(BOOL, True), iteration))
        return out

    def jump(self, s) -> list[ir.Stmt]:
        loop = self.loops[-1]
        clear = [ir.Assign(s.loc, v, ir.Const(BOOL, False)) for v in self.stack[loop.depth :]]
        if isinstance(s, ir.Break):
            clear.append(ir.Assign(s.loc, loop.alive, ir.Const(BOOL, False)))
        return self.guarded(clear, s.loc)

    def return_(self, s: ir.Return) -> list[ir.Stmt]:
        pre: list[ir.Stmt] = []
        values = [rewrite.map_expr(v, lambda e: self.lift(e, pre, s.loc)) for v in s.values]
        done = [ir.Assign(s.loc, r, v) for r, v in zip(self.rets, values, strict=False)]
        done += [ir.Assign(s.loc, v, ir.Const(BOOL, False)) for v in self.stack]
        done += [ir.Assign(s.loc, lp.alive, ir.Const(BOOL, False)) for lp in self.loops]
        return pre + self.guarded(done, s.loc)


def _ref(v: ir.Variable) -> ir.Ref:
    return ir.Ref(v.type, v)


def _not(v: ir.Variable) -> ir.Expr:
    return ir.Unary(BOOL, "not", _ref(v))


def _range_cond(s: ir.ForRange, stop: ir.Expr, step: ir.Expr) -> ir.Expr:
    i = _ref(s.var)
    if s.step_sign > 0:
        return ir.Compare(BOOL, "<", i, stop)
    if s.step_sign < 0:
        return ir.Compare(BOOL, ">", i, stop)
    zero = ir.Const(step.type, 0)
    up = ir.Logical(BOOL, "and", ir.Compare(BOOL, ">", step, zero), ir.Compare(BOOL, "<", i, stop))
    down = ir.Logical(
        BOOL, "and", ir.Compare(BOOL, "<", step, zero), ir.Compare(BOOL, ">", i, stop)
    )
    return ir.Logical(BOOL, "or", up, down)
