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
  early (a ``break``/``continue`` under a varying condition).  Except a variable that lives
  only inside one varying branch (set there before it is read, read nowhere else): it is
  *branch-local* (:attr:`Uniformity.branch_local`), the same in every work-item that took
  the branch when it is set from uniform values.

Uniform: constants, parameters, ``block_idx``, ``block_dim``, ``grid_dim``,
``global_size``, ``warp_size``, and anything computed only from uniform values - loads at a
uniform index included (every work-item reads the same element).  The analysis iterates to
a fixed point, since a loop can carry a varying value back to its start.
"""

from __future__ import annotations

from ember.frontend import ir, passes

VARYING_INTRINSICS = frozenset({"thread_idx", "global_id", "lane_id", "activemask"})
# the warp operations the cpu lowering splits regions at (activemask reads no lane: it is
# one of the VARYING_INTRINSICS)
SUBGROUP_OPS = ir.WARP_OPS - {"activemask"}


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
        # uniform only among the work-items of the varying branch they live in (_local)
        self.branch_local: set[ir.Variable] = set()
        self._memo: dict = {}
        self._everywhere = _occurrences(kernel.body)
        self._inside: dict[int, tuple] = {}
        self._divergent: set[int] = set()  # id() of loops left early by some work-items
        # a per-thread array (ember.local) is one array per work-item: what it holds varies
        self.varying |= {
            s.var
            for s in kernel.body
            if isinstance(s, ir.ArrayDecl) and s.var.type.space == "local"
        }
        changed = True
        while changed:
            before = (len(self.varying), len(self._divergent))
            self._block(kernel.body, False)
            self.branch_local -= self.varying
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
    # ``control`` says why the statements being visited may run in some work-items only:
    # False (they run in all), True (a loop some work-items run more often), or the body
    # of the innermost branch on a varying condition.
    def _assign(self, var: ir.Variable, varying: bool, control) -> None:
        if varying or control is True:
            self.varying.add(var)
        elif control is not False:
            if self._local(var, control):
                self.branch_local.add(var)
            else:
                self.varying.add(var)

    def _local(self, var: ir.Variable, body: list[ir.Stmt]) -> bool:
        """Whether ``var`` lives only inside branch ``body``: every statement that sets or
        reads it is in there, and it is set there before it is read.  Its value is then the
        same in every work-item that took the branch when it is computed from uniform
        values (``offset = warp_size() // 2`` for a shuffle loop in ``if tid < 32:``)."""
        from ember.codegen import regions  # (regions imports this module)

        key = id(body)
        if key not in self._inside:
            self._inside[key] = (_occurrences(body), regions.live_in(body))
        inside, live = self._inside[key]
        return var not in live and inside.get(var, 0) == self._everywhere.get(var, 0)

    def _block(self, body: list[ir.Stmt], control) -> None:
        for s in body:
            self._stmt(s, control)

    def _stmt(self, s: ir.Stmt, control) -> None:
        if isinstance(s, ir.Assign):
            self._assign(s.target, self.is_varying(s.value), control)
        elif isinstance(s, ir.If):
            varying = self.is_varying(s.cond) and control is not True
            self._block(s.body, s.body if varying else control)
            self._block(s.orelse, s.orelse if varying else control)
        elif isinstance(s, ir.ForRange | ir.While):
            inner = True if self.loop_is_varying(s) else control
            if isinstance(s, ir.ForRange):
                self._assign(s.var, False, inner)
            self._block(s.body, inner)
            if inner is not True and _leaves_early(s.body, self):
                self._divergent.add(id(s))
        for e in passes.own_exprs(s):  # tuple results of calls are assigned too
            for sub in passes.subexprs(e):
                if isinstance(sub, ir.Call) and sub.outs:
                    for v in sub.outs:
                        self._assign(v, self.is_varying(sub), control)


def _occurrences(body: list[ir.Stmt]) -> dict[ir.Variable, int]:
    """How many statements of ``body`` (nested ones included) read or set each variable."""
    from ember.codegen import regions  # (regions imports this module)

    out: dict[ir.Variable, int] = {}
    for s, e in passes.walk(body):
        if e is None:
            for v in set(regions.reads_of(s)) | set(regions.writes_of(s)):
                out[v] = out.get(v, 0) + 1
    return out


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
