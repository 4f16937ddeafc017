"""Work-groups on a CPU: the kernel split at barriers into loops over work-items.

A GPU runs a work-group's work-items at the same time; a CPU thread runs them one after
another.  Where there is no barrier that is just a loop around the kernel body.  A barrier
needs every work-item to reach it before any goes on, so the kernel is *split* there
(loop fission, the "region" approach of PoCL and Intel's CPU OpenCL, done here on Ember's
structured IR instead of LLVM's CFG)::

    a = x[i]                         for each work-item:  a[wi] = x[i[wi]]; s[t[wi]] = a[wi]
    s[t] = a                   ->    for each work-item:  y[i[wi]] = s[B - 1 - t[wi]]
    barrier()
    y[i] = s[B - 1 - t]

A *region* is a maximal run of statements between barriers; it becomes an
:class:`ItemLoop`.  A branch or loop containing a barrier stays outside the item loops,
executed once for the whole group: its condition must be *uniform*
(:mod:`ember.codegen.uniformity`), else the kernel is refused with a
:class:`~ember.errors.KernelSyntaxError` (on a GPU such a barrier deadlocks or is
undefined).  Values used across regions live in per-work-item arrays
(:mod:`ember.codegen.regions`).

Sub-group operations (``shfl*``, ``warp_sum/min/max``) split a region the same way: the
operand is stored in a scratch array, the region ends, and the next one reads the lanes it
needs (shuffles) or combines its sub-group's :data:`LANES` entries (reductions).  A
sub-group is :data:`LANES` consecutive work-items, like a CUDA warp.
"""

from __future__ import annotations

import dataclasses
import itertools

from ember import dtypes
from ember.codegen import regions, subgroups, sweeps
from ember.codegen.inline import inline_synchronizing
from ember.codegen.uniformity import SUBGROUP_OPS, Uniformity
from ember.codegen.uniformity import VARYING_INTRINSICS as VARYING
from ember.codegen.webs import split_webs
from ember.codegen.workitems import ItemArray, ItemLoop, ItemStorage
from ember.errors import KernelSyntaxError
from ember.frontend import ir, messages, passes
from ember.frontend.types import WEAK_INT, Array, Scalar, scalar

LANES = subgroups.LANES  # the sub-group size of the cpu backend (DeviceInfo.warp_size)
_BOOL = scalar(dtypes.bool_)


# ------------------------------------------------------------------------- entry point


def lower(program: ir.Program) -> ir.Program:
    """A copy of ``program`` whose kernel runs one work-group with loops over its work-items.

    Device functions are shared with ``program``, which is left unchanged; those with a
    barrier or a sub-group operation are inlined into the kernel (:mod:`.inline`).

    Raises
    ------
    KernelSyntaxError
        A barrier or sub-group operation under a condition that differs between the
        work-items of a group, or in a device function that cannot be inlined.
    """
    kernel = copy_function(program.kernel, locals=list(program.kernel.locals))
    functions = inline_synchronizing(program, kernel)  # barriers only in the kernel's body
    for fn in functions:
        _refuse_sync_in_device_function(fn)
    kernel.body = _copy_assigned_params(_hoist_subgroup_operands(kernel.body, kernel), kernel)
    kernel.body = split_webs(kernel)  # a reused variable: one per value's life
    program = dataclasses.replace(program, functions=functions)
    lowered = Lowering(kernel, program).run()
    return dataclasses.replace(program, kernel=lowered)


def copy_function(fn: ir.Function, **changes) -> ir.Function:
    """``fn`` with ``changes``, keeping the attributes the typer adds (``param_sources``)."""
    new = dataclasses.replace(fn, **changes)
    for name, value in vars(fn).items():
        if name not in vars(new):
            setattr(new, name, value)
    return new


def _refuse_sync_in_device_function(fn: ir.Function) -> None:
    for s, e in passes.walk(fn.body):
        if isinstance(e, ir.Intrinsic) and (e.name == "barrier" or e.name in SUBGROUP_OPS):
            what = "ember.barrier()" if e.name == "barrier" else f"ember.{e.name}()"
            raise messages.error(
                KernelSyntaxError,
                f"{what} in device function '{fn.pyname}': the cpu backend runs a work-group's "
                "work-items one after another and splits only the kernel itself at barriers "
                "and sub-group operations",
                s.loc,
                messages.STAGE_TARGET,
                "call it in the kernel (pass the values the device function needs)",
            )


def synchronizes(e: ir.Expr) -> bool:
    """A barrier or sub-group operation anywhere in ``e``."""
    return any(
        isinstance(x, ir.Intrinsic) and (x.name == "barrier" or x.name in SUBGROUP_OPS)
        for x in passes.subexprs(e)
    )


def _own_sync(s: ir.Stmt) -> bool:
    return any(synchronizes(e) for e in passes.own_exprs(s))


# ------------------------------------------------------------------------- hoisting


def _copy_assigned_params(body: list[ir.Stmt], kernel: ir.Function) -> list[ir.Stmt]:
    """Parameters the kernel assigns become locals set from them at the start: a
    parameter is otherwise one value for the whole group."""
    written: set[ir.Variable] = set()
    for s, _ in passes.walk(body):
        written |= set(regions.writes_of(s))
    params = [p for p in kernel.params if p in written]
    if not params:
        return body
    copies = {p: ir.Variable(f"{p.name}_v", p.type, p.pyname) for p in params}
    kernel.locals.extend(copies.values())

    def rename(s: ir.Stmt) -> ir.Stmt:
        s = regions.map_stmt_exprs(s, lambda e: regions.rename(e, lambda v: copies.get(v, v)))
        if isinstance(s, ir.Assign) and s.target in copies:
            s = dataclasses.replace(s, target=copies[s.target])
        if isinstance(s, ir.ForRange) and s.var in copies:
            s = dataclasses.replace(s, var=copies[s.var])
        return s

    start = [ir.Assign(kernel.loc, copy, ir.Ref(p.type, p)) for p, copy in copies.items()]
    return start + regions.map_block(body, rename)


def _hoist_subgroup_operands(body: list[ir.Stmt], kernel: ir.Function) -> list[ir.Stmt]:
    """Sub-group operations out of ``if`` conditions and ``range()`` bounds, into
    variables assigned just before: the split then happens between simple statements."""
    out: list[ir.Stmt] = []
    for s in body:
        if isinstance(s, ir.While) and synchronizes(s.cond):
            raise messages.error(
                KernelSyntaxError,
                "a sub-group operation in a while condition is not supported on the cpu backend",
                s.loc,
                messages.STAGE_TARGET,
                "compute it into a variable before the loop and at the end of its body",
            )
        changes: dict = {}
        for name in ("cond", "start", "stop", "step"):
            e = getattr(s, name, None)
            if isinstance(e, ir.Expr) and not isinstance(s, ir.While) and synchronizes(e):
                temp = ir.Variable(f"em_h{len(kernel.locals)}", e.type, "em_h")
                kernel.locals.append(temp)
                out.append(ir.Assign(s.loc, temp, e))
                changes[name] = ir.Ref(e.type, temp)
        for name in ("body", "orelse"):
            inner = getattr(s, name, None)
            if isinstance(inner, list):
                changes[name] = _hoist_subgroup_operands(inner, kernel)
        out.append(dataclasses.replace(s, **changes) if changes else s)
    return out


# ------------------------------------------------------------------------- lowering


class Lowering:
    """Splits one kernel into regions (see the module docstring)."""

    def __init__(self, kernel: ir.Function, program: ir.Program):
        self.kernel = kernel
        self.program = program
        self.uniformity = Uniformity(kernel)
        self.sync: set[int] = set()  # id() of statements that run at group level
        self.labels = itertools.count()
        self.temps = itertools.count()
        self.scratch: dict[str, ir.Variable] = {}  # dtype name (+ turn) -> scratch array
        self._turns: dict[str, int] = {}  # dtype name -> the scratch array used last (0, 1)
        self.counters: set[ir.Variable] = set()  # the group-level loops' own variables
        self.predicates: list[ir.Expr] = []  # conditions of the branches being lowered
        self.regions: list[ItemLoop] = []
        self.uniform_exprs: list[ir.Expr] = []  # evaluated once per group
        self._mark(kernel.body)
        self.scalars = self._group_scalars()

    def run(self) -> ir.Function:
        arrays = [s for s in self.kernel.body if isinstance(s, ir.ArrayDecl)]
        shared = [s for s in arrays if s.var.type.space != "local"]
        local = [s.var for s in arrays if s.var.type.space == "local"]
        rest = [s for s in self.kernel.body if not isinstance(s, ir.ArrayDecl)]
        body = self.block(rest)
        decls = [ItemArray(self.kernel.loc, v, scratch=True) for v in self.scratch.values()]
        lowered = copy_function(self.kernel, body=[*shared, *decls, *body])
        lowered = regions.finish(lowered, self)
        if local:
            _place_local_arrays(lowered, local)
        return lowered

    # ------------------------------------------------------------------ marking
    def _mark(self, body: list[ir.Stmt]) -> bool:
        """Mark the statements that must run at group level; True if ``body`` has one.

        A statement runs at group level when it holds a barrier or a sub-group operation,
        or a ``break``/``continue`` of a loop that runs at group level."""
        found = False
        for s in body:
            own = _own_sync(s)
            if isinstance(s, ir.While | ir.ForRange):
                inner = self._mark(s.body)
                if inner:
                    self._mark_exits(s.body)
                own = own or inner
            elif isinstance(s, ir.If):
                own = self._mark(s.body) | self._mark(s.orelse) or own
            if own:
                self.sync.add(id(s))
                found = True
        return found

    def _mark_exits(self, body: list[ir.Stmt]) -> bool:
        """In a group-level loop: the ``if``\\s around its own ``break``/``continue``
        run at group level too.  True if ``body`` has such an exit."""
        found = False
        for s in body:
            if isinstance(s, ir.Break | ir.Continue):
                self.sync.add(id(s))
                found = True
            elif isinstance(s, ir.If) and (self._mark_exits(s.body) | self._mark_exits(s.orelse)):
                self.sync.add(id(s))
                found = True
        return found

    # ------------------------------------------------------------------ group scalars
    def _group_scalars(self) -> set[ir.Variable]:
        """Uniform variables set only by assignments at group level (outside any region's
        control flow) from parameters, constants, group indices and other such variables:
        ``step = B // 2`` ... ``step //= 2`` in a tree reduction.  They are plain scalars
        set once per group, between regions, instead of once per work-item."""
        writes: dict[ir.Variable, list[ir.Expr | None]] = {}
        elsewhere: set[ir.Variable] = set()

        def note(var: ir.Variable, value: ir.Expr | None, predicated: bool) -> None:
            # In a branch some work-items skip, only a variable living in the branch alone
            # may be set for the whole group: no work-item reads it elsewhere.
            # (Without run-time checks: set for the group, it is computed even when no
            # work-item takes the branch.)
            if predicated and (var not in self.uniformity.branch_local or _checked(value)):
                elsewhere.add(var)
            else:
                writes.setdefault(var, []).append(value)

        def visit(body: list[ir.Stmt], predicated: bool = False) -> None:
            for s in body:
                sync = id(s) in self.sync
                if sync and isinstance(s, ir.If):
                    inner = predicated or self._predicated(s)
                    visit(s.body, inner)
                    visit(s.orelse, inner)
                elif sync and isinstance(s, ir.While | ir.ForRange):
                    if isinstance(s, ir.ForRange):
                        note(s.var, None, predicated)  # the loop sets it
                    visit(s.body, predicated)
                elif not sync and isinstance(s, ir.Assign):
                    note(s.target, s.value, predicated)
                else:
                    for st, e in passes.walk([s]):
                        if e is None:
                            elsewhere.update(regions.writes_of(st))

        visit(self.kernel.body)
        params = set(self.kernel.params)
        found = {
            v for v in writes
            if v not in elsewhere and v not in self.uniformity.varying and v not in params
        }  # fmt: skip
        changed = True
        while changed:  # drop those computed from something else (fixed point)
            keep = {v for v in found if all(_from(e, found | params) for e in writes[v])}
            changed, found = keep != found, keep
        self.scalar_defs = {v: writes[v] for v in found}  # None: a loop's counting
        return found

    # ------------------------------------------------------------------ building
    def block(self, body: list[ir.Stmt]) -> list[ir.Stmt]:
        """``body`` at group level: regions of plain statements, group-level statements."""
        out: list[ir.Stmt] = []
        region: list[ir.Stmt] = []
        for s in body:
            if isinstance(s, ir.Assign) and s.target in self.scalars:
                # Set once for the group, before the region being built: its value reads
                # nothing the region changes.  Unless the region already read the old value:
                # then the region ends here.
                if any(
                    s.target in regions.reads_of(r) for r, e in passes.walk(region) if e is None
                ):
                    self._flush(region, out)
                    region = []
                out.append(s)
                self.uniform_exprs.append(s.value)
                continue
            if id(s) not in self.sync and not sweeps.predicate_for(self, s):
                if sweeps.sweepable(self, s):
                    region = sweeps.sweep(self, s, region, out)
                else:
                    region.append(s)
                continue
            if (
                isinstance(s, ir.Eval)
                and isinstance(s.expr, ir.Intrinsic)
                and (s.expr.name == "barrier")
            ):
                self._flush(region, out)
                region = []
            elif isinstance(s, ir.If) and (self._predicated(s) or sweeps.predicate_for(self, s)):
                pred = self.temp(_BOOL, "em_p")
                region.append(ir.Assign(s.loc, pred, s.cond))
                self._flush(region, out)
                region = []
                self.predicates.append(ir.Ref(_BOOL, pred))
                out.extend(self.block(s.body))
                self.predicates[-1] = ir.Unary(_BOOL, "not", ir.Ref(_BOOL, pred))
                out.extend(self.block(s.orelse))
                self.predicates.pop()
            elif isinstance(s, ir.If | ir.While | ir.ForRange):
                self._flush(region, out)
                region = []
                out.append(self._group_level(s))
            elif isinstance(s, ir.Break | ir.Continue):
                self._flush(region, out)
                region = []
                out.append(s)
            else:  # a plain statement with sub-group operations
                region = self._split_subgroups(s, region, out)
        self._flush(region, out)
        return out

    def _predicated(self, s: ir.If) -> bool:
        """A branch on a varying condition with barriers or sub-group operations inside
        (``if warp == 0: v = warp_sum(v)``, ``if i < n: ... ember.barrier() ...``): its
        regions run under a per-work-item predicate, so a barrier there synchronizes the
        work-items that took the branch (the others have nothing to do until it ends).  On a
        GPU such a barrier is undefined unless every thread of the block takes the branch,
        where this gives the same result; a shuffle from a lane that did not take the branch
        reads a stale value, as there.  A ``break``/``continue`` of a group-level loop
        inside is refused (:meth:`_group_level`)."""
        if not self.uniformity.is_varying(s.cond):
            return False
        return not self._mark_exits([s])

    def _flush(self, region: list[ir.Stmt], out: list[ir.Stmt], wrap: bool = True) -> None:
        """End ``region``: an item loop in ``out`` (its statements under the predicates of
        the branches being lowered, unless ``wrap`` is False: they test them already)."""
        if region and self.predicates and wrap:
            cond = self.predicates[0]
            for p in self.predicates[1:]:
                cond = ir.Logical(_BOOL, "and", cond, p)
            region = [ir.If(region[0].loc, cond, region, [])]
        if region:
            loop = ItemLoop(region[0].loc, region, next(self.labels))
            self.regions.append(loop)
            out.append(loop)

    def _group_level(self, s: ir.Stmt) -> ir.Stmt:
        """A branch or loop with a barrier inside: uniform header, lowered bodies."""
        if isinstance(s, ir.If):
            self._uniform(s.cond, s, "if")
            return dataclasses.replace(s, body=self.block(s.body), orelse=self.block(s.orelse))
        if isinstance(s, ir.While):
            self._uniform(s.cond, s, "while")
            return dataclasses.replace(s, body=self.block(s.body))
        for e in (s.start, s.stop, s.step):
            self._uniform(e, s, "for")
        if s.var in self.scalars:  # a group scalar: the loop counts with it
            return dataclasses.replace(s, body=self.block(s.body))
        # Else the group counts with its own variable; each work-item's copy of the loop
        # variable is set from it at the start of the body (the body may change it).
        counter = self.temp(s.var.type, "em_u")
        self.counters.add(counter)
        start = [ir.Assign(s.loc, s.var, ir.Ref(s.var.type, counter))]
        return dataclasses.replace(s, var=counter, body=self.block([*start, *s.body]))

    def _uniform(self, e: ir.Expr, s: ir.Stmt, what: str) -> None:
        """``e`` decides a group-level branch or loop: refuse it unless uniform and pure."""
        if not passes.is_pure(e):
            raise messages.error(
                KernelSyntaxError,
                f"this {what} contains {self._sync_what(s)}, and its condition calls a "
                "function or does an atomic: the cpu backend evaluates it once for the whole "
                "block",
                s.loc,
                messages.STAGE_TARGET,
                "assign the condition's value to a variable first",
            )
        local = [
            x.var.pyname for x in passes.subexprs(e)
            if isinstance(x, ir.Ref) and x.var in self.uniformity.branch_local
            and x.var not in self.scalars
        ]  # fmt: skip
        if local and self.predicates:
            raise messages.error(
                KernelSyntaxError,
                f"this {what} contains {self._sync_what(s)} and is inside a branch some "
                f"work-items of a block skip; its condition reads '{local[0]}', which the "
                "cpu backend keeps per work-item there, so it cannot evaluate the condition "
                "once for the work-items in the branch",
                s.loc,
                messages.STAGE_TARGET,
                f"compute '{local[0]}' from arguments, constants and block indices only, or "
                "before the branch",
            )
        early = isinstance(s, ir.While | ir.ForRange) and self.uniformity.loop_is_varying(s)
        if self.uniformity.is_varying(e) or early:
            why = (
                "its condition differs between the work-items of a block"
                if self.uniformity.is_varying(e)
                else "some work-items leave it early (a break or continue under a condition "
                "that differs between them)"
            )
            raise messages.error(
                KernelSyntaxError,
                f"this {what} contains {self._sync_what(s)}, but {why}: every work-item of "
                "a block must reach the same barriers and sub-group operations (on a GPU this "
                "deadlocks or gives undefined results; the cpu backend refuses it)",
                s.loc,
                messages.STAGE_TARGET,
                "make the condition depend only on values equal across the block (arguments, "
                "block_idx, block_dim, values loaded at a uniform index), or move the barrier "
                "out of the branch",
            )
        self.uniform_exprs.append(e)

    def _sync_what(self, s: ir.Stmt) -> str:
        for _, e in passes.walk([s]):
            if isinstance(e, ir.Intrinsic) and e.name == "barrier":
                return f"ember.barrier() (line {_line_of(s, e)})"
            if isinstance(e, ir.Intrinsic) and e.name in SUBGROUP_OPS:
                return f"ember.{e.name}() (line {_line_of(s, e)})"
        return "a break or continue of a loop with a barrier"

    # ------------------------------------------------------------------ sub-groups
    def temp(self, t, prefix: str) -> ir.Variable:
        var = ir.Variable(f"{prefix}{next(self.temps)}", t, prefix)
        self.kernel.locals.append(var)
        return var

    def _scratch(self, t: Scalar) -> ir.Variable:
        """The scratch array of the next sub-group operation on ``t`` values.  Two per dtype,
        used in turn: the region that reads one operation's lanes also stores the next
        operation's operand (``shfl_xor(a, k)`` then ``shfl_xor(b, k)``), and a store into
        the same array would overwrite lanes later work-items of that region still read."""
        turn = self._turns[t.dtype.name] = 1 - self._turns.get(t.dtype.name, 1)
        key = f"{t.dtype.name}{'_b' if turn else ''}"
        if key not in self.scratch:
            arr = Array(t.dtype, 1, "C", "shared", (LANES,))
            self.scratch[key] = ir.Variable(f"em_lanes_{key}", arr, "em_lanes")
        return self.scratch[key]

    def _split_subgroups(self, s: ir.Stmt, region: list, out: list) -> list[ir.Stmt]:
        """Split ``region`` at each sub-group operation of ``s`` (innermost first); return
        the region that ends with ``s`` rewritten to read the results."""
        state = {"region": region}

        def visit(e: ir.Expr) -> ir.Expr:
            if not (isinstance(e, ir.Intrinsic) and e.name in SUBGROUP_OPS):
                return e
            if e.name == "syncwarp":  # the region ends: writes before it are seen after
                self._flush(state["region"], out)
                state["region"] = []
                return e
            value = e.args[0]
            scratch = self._scratch(value.type)
            wi = regions.WI
            on = None
            if e.name in ir.TAKING_PART:  # only the work-items that run it take part:
                # a flag (matches) or the vote itself (all_sync: "no") starts False for all
                votes = e.name != "match_any_sync"
                on = scratch if votes else self._scratch(_BOOL)
                if e.name == "all_sync":
                    value = ir.Unary(_BOOL, "not", value)
                self._flush(state["region"], out)
                flag = ir.Ref(on.type, on)
                clear = ir.Store(s.loc, flag, [wi], ir.Const(_BOOL, False), flat=True)
                self._flush([clear], out, wrap=False)  # every work-item, taking part or not
                yes = ir.Store(s.loc, flag, [wi], ir.Const(_BOOL, True), flat=True)
                state["region"] = [] if votes else [yes]
            state["region"].append(
                ir.Store(s.loc, ir.Ref(scratch.type, scratch), [wi], value, flat=True)
            )
            self._flush(state["region"], out)
            state["region"] = after = []
            result = self.temp(e.type, "em_sg")
            if e.name.startswith("shfl"):
                after.append(ir.Assign(s.loc, result, subgroups.shuffled(e, scratch)))
            else:
                j = self.temp(WEAK_INT, "em_lane")
                after.extend(subgroups.reduction(s.loc, e.name, scratch, result, j, on))
            return ir.Ref(e.type, result)

        rewritten = regions.map_stmt_exprs(s, visit)
        if not (isinstance(rewritten, ir.Eval) and _is_syncwarp(rewritten.expr)):
            state["region"].append(rewritten)
        return state["region"]


def _from(e: ir.Expr | None, allowed: set[ir.Variable]) -> bool:
    """``e`` (None: a loop's own counting) computed from ``allowed`` variables, constants
    and group indices only: no memory, no calls, nothing that differs between work-items."""
    if e is None:
        return True
    for x in passes.subexprs(e):
        if isinstance(x, ir.Ref) and x.var not in allowed:
            return False
        if isinstance(x, ir.Load | ir.Atomic | ir.Call):
            return False
        if isinstance(x, ir.Intrinsic) and (x.name in VARYING or x.name in SUBGROUP_OPS):
            return False
    return True


def _checked(e: ir.Expr | None) -> bool:
    """``e`` holds a run-time check (an index or a conversion that can fail)."""
    return e is not None and any(
        getattr(x, "checks", None) or getattr(x, "site", None) for x in passes.subexprs(e)
    )


def _place_local_arrays(kernel: ir.Function, arrays: list[ir.Variable]) -> None:
    """Give every region the kernel's per-thread arrays: declared inside the only region
    of a kernel that has one (they may then live in registers), else one slice each of a
    group-wide storage, so that a work-item's array keeps its contents across regions and
    work-items in lockstep sweeps do not share one."""
    loops: list[ItemLoop] = []

    def find(body: list[ir.Stmt]) -> None:
        for s in body:
            if isinstance(s, ItemLoop):
                loops.append(s)
            else:
                for name in ("body", "orelse"):
                    inner = getattr(s, name, None)
                    if isinstance(inner, list):
                        find(inner)

    find(kernel.body)
    only = len(loops) == 1 and any(s is loops[0] for s in kernel.body)
    for loop in loops:
        loop.arrays = list(arrays)
        loop.declares = only
    if not only:
        at = sum(1 for s in kernel.body if isinstance(s, ir.ArrayDecl | ItemArray))
        kernel.body[at:at] = [ItemStorage(kernel.loc, v) for v in arrays]


def _is_syncwarp(e: ir.Expr) -> bool:
    return isinstance(e, ir.Intrinsic) and e.name == "syncwarp"


def _line_of(s: ir.Stmt, e: ir.Expr) -> int:
    return s.loc.line
