"""Webs: a variable reused for unrelated values becomes one variable per value's life.

The uniformity analysis (:mod:`ember.codegen.uniformity`) looks at variables, not at program
points: a loop counter ``i`` that counts a uniform loop at the top of a kernel and, later, a
loop inside a branch taken by some work-items only (NVIDIA's shfl_scan sample does this) is
one variable assigned under a varying condition, hence varying everywhere - and the first
loop, which holds a shuffle, is refused.  Splitting the variable into *webs* fixes that
without making the analysis flow-sensitive: definitions that reach a common use belong to
one web (reaching definitions on the structured IR, then union-find), and each web but the
first gets its own variable.  The program computes exactly what it did.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ember.codegen import regions
from ember.frontend import ir

State = dict  # variable -> frozenset of definition numbers reaching this point


@dataclass
class _Loop:
    breaks: list = field(default_factory=list)
    continues: list = field(default_factory=list)


def split_webs(kernel: ir.Function) -> list[ir.Stmt]:
    """``kernel``'s body with each local that holds unrelated values split into one
    variable per web (new variables are added to ``kernel.locals``)."""
    a = _Analysis({v for v in kernel.locals if v not in set(kernel.params)})
    a.block(kernel.body, {}, [])
    names = a.renaming(kernel)
    if not names:
        return kernel.body
    return _rename_block(kernel.body, a, names)


def _rename_block(body: list[ir.Stmt], a, names) -> list[ir.Stmt]:
    out = []
    for s in body:
        new = _rename_stmt(s, a, names)  # keyed by the original statement
        changes = {n: _rename_block(getattr(s, n), a, names) for n in ("body", "orelse")
                   if isinstance(getattr(s, n, None), list)}  # fmt: skip
        out.append(dataclasses.replace(new, **changes) if changes else new)
    return out


class _Analysis:
    """Reaching definitions: ``defs[(id(stmt), var)]`` numbers a definition, ``uses[(id(stmt),
    var)]`` holds the definitions reaching a statement's reads of ``var``."""

    def __init__(self, candidates: set[ir.Variable]):
        self.candidates = candidates
        self.defs: dict[tuple[int, ir.Variable], int] = {}
        self.order: list[tuple[int, ir.Variable]] = []
        self.uses: dict[tuple[int, ir.Variable], set[int]] = {}

    def _def(self, s: ir.Stmt, var: ir.Variable) -> int:
        key = (id(s), var)
        if key not in self.defs:
            self.defs[key] = len(self.order)
            self.order.append(key)
        return self.defs[key]

    def _use(self, s: ir.Stmt, reads, state: State) -> None:
        for v in reads:
            if v in self.candidates:
                self.uses.setdefault((id(s), v), set()).update(state.get(v, ()))

    def _write(self, s: ir.Stmt, writes, state: State) -> State:
        state = dict(state)
        for v in writes:
            if v in self.candidates:
                state[v] = frozenset({self._def(s, v)})
        return state

    def block(self, body: list[ir.Stmt], state: State | None, loops: list) -> State | None:
        for s in body:
            if state is None:
                return None  # the rest is unreachable
            state = self.stmt(s, state, loops)
        return state

    def stmt(self, s: ir.Stmt, state: State, loops: list) -> State | None:
        reads, writes = regions._reads_writes(s)
        if isinstance(s, ir.If):
            self._use(s, reads, state)
            return _join(self.block(s.body, state, loops), self.block(s.orelse, state, loops))
        if isinstance(s, ir.While | ir.ForRange):
            return self._loop(s, reads, writes, state, loops)
        self._use(s, reads, state)
        if isinstance(s, ir.Return | ir.Raise):
            return None
        if isinstance(s, ir.Break | ir.Continue):
            target = loops[-1].breaks if isinstance(s, ir.Break) else loops[-1].continues
            target.append(state)
            return None
        return self._write(s, writes, state)

    def _loop(self, s, reads, writes, state: State, loops: list) -> State | None:
        if isinstance(s, ir.ForRange):
            self._use(s, reads, state)  # start, stop, step: once, before the loop
        head = state
        while True:
            if isinstance(s, ir.While):
                self._use(s, reads, head)  # the condition, at every iteration
            ctx = _Loop()
            entry = self._write(s, writes, head) if isinstance(s, ir.ForRange) else head
            end = self.block(s.body, entry, [*loops, ctx])
            new = _join(state, end, *ctx.continues)
            if new == head:
                return _join(head, *ctx.breaks)
            head = new

    def renaming(self, kernel: ir.Function) -> dict[int, ir.Variable]:
        """Definition number -> the variable of its web, for webs that get a new one."""
        parent = list(range(len(self.order)))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for ds in self.uses.values():
            ds = sorted(ds)
            for d in ds[1:]:
                parent[find(d)] = find(ds[0])
        webs: dict[ir.Variable, dict[int, ir.Variable | None]] = {}
        out: dict[int, ir.Variable] = {}
        for n, (_, var) in enumerate(self.order):  # program order: the first web keeps var
            seen = webs.setdefault(var, {})
            root = find(n)
            if root not in seen:
                if not seen:
                    seen[root] = None
                else:
                    new = ir.Variable(f"{var.name}_{len(seen)}", var.type, var.pyname)
                    kernel.locals.append(new)
                    seen[root] = new
            if seen[root] is not None:
                out[n] = seen[root]
        return out


def _join(*states: State | None) -> State | None:
    live = [s for s in states if s is not None]
    if not live:
        return None
    out = dict(live[0])
    for s in live[1:]:
        for v, ds in s.items():
            out[v] = out.get(v, frozenset()) | ds
    return out


def _rename_stmt(s: ir.Stmt, a: _Analysis, names: dict[int, ir.Variable]) -> ir.Stmt:
    def use_name(var: ir.Variable) -> ir.Variable:
        ds = a.uses.get((id(s), var))
        if not ds:
            return var
        return names.get(min(ds), var)

    def def_name(var: ir.Variable) -> ir.Variable:
        n = a.defs.get((id(s), var))
        return var if n is None else names.get(n, var)

    def expr(e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Ref):
            new = use_name(e.var)
            return e if new is e.var else ir.Ref(e.type, new)
        if isinstance(e, ir.Call) and e.outs:
            outs = [def_name(v) for v in e.outs]
            if any(x is not y for x, y in zip(outs, e.outs, strict=True)):
                return dataclasses.replace(e, outs=outs)
        return e

    new = regions.map_stmt_exprs(s, expr)
    if isinstance(new, ir.Assign) and def_name(new.target) is not new.target:
        new = dataclasses.replace(new, target=def_name(new.target))
    if isinstance(new, ir.ForRange) and def_name(new.var) is not new.var:
        new = dataclasses.replace(new, var=def_name(new.var))
    return new
