"""Uniformity: which values of a kernel are the same for every work-item of a work-group.

The CPU code generator (:mod:`ember.codegen.workgroup`) runs a work-group's work-items one
after another and splits the kernel at barriers.  A branch or loop that contains a barrier
is then executed *once* for the whole group, so its condition must be *uniform*: equal in
every work-item.  This module finds the *varying* values; everything else is uniform.

Varying, by construction:

* the work-item's own indices: ``thread_idx``, ``global_id``, ``lane_id``;
* the results of atomics and sub-group operations (each work-item gets its own);
* a call to a device function that reads those, or takes a varying argument;
* a load whose array or index is varying;
* a variable assigned a varying value, or assigned under a varying condition (some
  work-items assign it, others keep the old value), or in a loop some work-items leave
  early (a ``break``/``continue`` under a varying condition).

Uniform: constants, parameters, ``block_idx``, ``block_dim``, ``grid_dim``,
``global_size``, ``warp_size``, and anything computed only from uniform values - loads at a
uniform index included (every work-item reads the same element).  The analysis iterates to
a fixed point, since a loop can carry a varying value back to its start.
"""

from __future__ import annotations

from ember.frontend import ir, passes

VARYING_INTRINSICS = frozenset({"thread_idx", "global_id", "lane_id", "activemask"})
SUBGROUP_OPS = frozenset({"shfl", "shfl_up", "shfl_down", "shfl_xor", "warp_sum", "warp_min",
                          "warp_max", "ballot", "all_sync", "any_sync", "syncwarp"})  # fmt: skip


def thread_dependent(fn: ir.Function, memo: dict | None = None) -> bool:
    """Whether device function ``fn`` (or a function it calls) reads a work-item index or
    does an atomic: its result may then differ between work-items given equal arguments."""
    memo = {} if memo is None else memo
    if fn in memo:
        return memo[fn]
    memo[fn] = False  # (recursion is impossible in kernels; this only ends a cycle)
    found = False
    for _, e in passes.walk(fn.body):
        if isinstance(e, ir.Atomic):
            found = True
        elif isinstance(e, ir.Intrinsic) and (
            e.name in VARYING_INTRINSICS or e.name in SUBGROUP_OPS
        ):
            found = True
        elif isinstance(e, ir.Call) and thread_dependent(e.function, memo):
            found = True
        if found:
            break
    memo[fn] = found
    return found


class Uniformity:
    """The varying variables of one kernel (:attr:`varying`), and :meth:`is_varying` for
    any expression of it."""

    def __init__(self, kernel: ir.Function):
        self.varying: set[ir.Variable] = set()
        self._memo: dict = {}
        self._divergent: set[int] = set()  # id() of loops left early by some work-items
        # a per-thread array (ember.local) is one array per work-item: what it holds varies
        self.varying |= {
            s.var for s in kernel.body if isinstance(s, ir.ArrayDecl) and s.var.type.space == "local"
        }
        changed = True
        while changed:
            before = (len(self.varying), len(self._divergent))
            self._block(kernel.body, False)
            changed = (len(self.varying), len(self._divergent)) != before

    # ------------------------------------------------------------------ expressions
    def is_varying(self, e: ir.Expr) -> bool:
        """Whether ``e`` may differ between the work-items of a group."""
        if isinstance(e, ir.Ref):
            return e.var in self.varying
        if isinstance(e, ir.Atomic):
            return True
        if isinstance(e, ir.Intrinsic):
            if e.name in VARYING_INTRINSICS or e.name in SUBGROUP_OPS:
                return True
        elif isinstance(e, ir.Call):
            if thread_dependent(e.function, self._memo):
                return True
        return any(self.is_varying(c) for c in passes.children(e))

    def loop_is_varying(self, s: ir.While | ir.ForRange) -> bool:
        """Whether work-items may run loop ``s`` a different number of times."""
        if id(s) in self._divergent:
            return True
        if isinstance(s, ir.While):
            return self.is_varying(s.cond)
        return any(self.is_varying(x) for x in (s.start, s.stop, s.step))

    # ------------------------------------------------------------------ statements
    def _assign(self, var: ir.Variable, varying: bool) -> None:
        if varying:
            self.varying.add(var)

    def _block(self, body: list[ir.Stmt], control: bool) -> None:
        for s in body:
            self._stmt(s, control)

    def _stmt(self, s: ir.Stmt, control: bool) -> None:
        if isinstance(s, ir.Assign):
            self._assign(s.target, control or self.is_varying(s.value))
        elif isinstance(s, ir.If):
            inner = control or self.is_varying(s.cond)
            self._block(s.body, inner)
            self._block(s.orelse, inner)
        elif isinstance(s, ir.ForRange | ir.While):
            inner = control or self.loop_is_varying(s)
            if isinstance(s, ir.ForRange):
                self._assign(s.var, inner)
            self._block(s.body, inner)
            if not inner and _leaves_early(s.body, self):
                self._divergent.add(id(s))
        for e in passes.own_exprs(s):  # tuple results of calls are assigned too
            for sub in passes.subexprs(e):
                if isinstance(sub, ir.Call) and sub.outs:
                    varying = control or self.is_varying(sub)
                    for v in sub.outs:
                        self._assign(v, varying)


def _leaves_early(body: list[ir.Stmt], u: Uniformity, control: bool = False) -> bool:
    """A ``break``/``continue`` of this loop (not of an inner one) under a varying
    condition: work-items then run the loop a different number of times."""
    for s in body:
        if isinstance(s, ir.Break | ir.Continue) and control:
            return True
        if isinstance(s, ir.If):
            inner = control or u.is_varying(s.cond)
            if _leaves_early(s.body, u, inner) or _leaves_early(s.orelse, u, inner):
                return True
    return False
