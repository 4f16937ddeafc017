"""The second half of the work-group lowering: values across regions, work-item indices,
returns, and guards that become loop bounds (see :mod:`ember.codegen.workgroup`).

After the kernel is split into regions (:class:`~ember.codegen.workitems.ItemLoop`):

* **Per-work-item arrays.**  A variable that one region sets and another reads (or that
  group-level code reads, or that a region reads before setting it, from an earlier pass
  of a group-level loop) needs one value per work-item: it becomes an array ``v_w`` of
  the group's size, ``v_w[em_wi]`` in regions.  Group-level code reads the value of the
  *lead* work-item (0, or the first one still running once some returned): a uniform value
  is the same in all of them.  Everything else stays a plain C local.
* **Indices.**  ``thread_idx`` & co. become the item loops' counters (``em_lx``...) and the
  group's (``em_gx``, ``em_bx``...).
* **Returns.**  ``return`` in a region ends that work-item only (:class:`ItemExit`); when
  later regions exist, a per-work-item flag keeps it out of them.
* **Guards to bounds.**  A region that is one ``if global_id() < n:`` (or begins with
  ``if i >= n: return``) loops over the work-items below the bound instead, so the
  compiler sees a plain counted loop it can vectorize (3-5x on axpy: no masked loads).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ember.codegen.uniformity import SUBGROUP_OPS
from ember.frontend import ir, passes
from ember.frontend.types import WEAK_INT

WI = ir.Ref(WEAK_INT, ir.Variable("em_wi", WEAK_INT, "em_wi"))  # flat work-item index
WG = ir.Ref(WEAK_INT, ir.Variable("em_wg", WEAK_INT, "em_wg"))  # work-items in the group
_AXES = "xyz"


def _index_var(prefix: str, axis: int) -> ir.Ref:
    name = f"em_{prefix}{_AXES[axis]}"
    return ir.Ref(WEAK_INT, ir.Variable(name, WEAK_INT, name))


# ------------------------------------------------------------------------- IR mapping


def map_expr(e: ir.Expr, f: Callable[[ir.Expr], ir.Expr]) -> ir.Expr:
    """``e`` rebuilt bottom-up with ``f`` applied to every node (new nodes only where
    something changed; the input is never modified)."""
    changes = {}
    for fld in dataclasses.fields(e):
        value = getattr(e, fld.name)
        if isinstance(value, ir.Expr):
            new = map_expr(value, f)
        elif fld.name in ("index", "args") and isinstance(value, list):
            new = [map_expr(x, f) for x in value]
            new = value if all(a is b for a, b in zip(new, value, strict=True)) else new
        elif fld.name == "checks" and value:
            new = _map_checks(value, f)
        else:
            continue
        if new is not value:
            changes[fld.name] = new
    if changes:
        e = dataclasses.replace(e, **changes)
    return f(e)


def _map_checks(checks: list[ir.IndexCheck], f) -> list[ir.IndexCheck]:
    out = []
    for c in checks:
        index, extent = map_expr(c.index, f), map_expr(c.extent, f)
        out.append(
            c if (index, extent) == (c.index, c.extent) else ir.IndexCheck(index, extent, c.site)
        )
    return out


_STMT_EXPRS = ("value", "expr", "cond", "start", "stop", "step", "array")


def map_stmt_exprs(s: ir.Stmt, f: Callable[[ir.Expr], ir.Expr]) -> ir.Stmt:
    """Statement ``s`` with its own expressions (not its nested bodies') mapped by ``f``."""
    changes: dict = {}
    for name in _STMT_EXPRS:
        value = getattr(s, name, None)
        if isinstance(value, ir.Expr):
            new = map_expr(value, f)
            if new is not value:
                changes[name] = new
    if isinstance(s, ir.Store):
        changes["index"] = [map_expr(x, f) for x in s.index]
        changes["checks"] = _map_checks(s.checks, f)
    elif isinstance(s, ir.Return) and s.values:
        changes["values"] = [map_expr(v, f) for v in s.values]
    elif isinstance(s, ir.Print):
        changes["items"] = [i if isinstance(i, str) else map_expr(i, f) for i in s.items]
    return dataclasses.replace(s, **changes) if changes else s


def map_block(body: list[ir.Stmt], fs: Callable[[ir.Stmt], ir.Stmt | list]) -> list[ir.Stmt]:
    """``body`` with ``fs`` applied to every statement, innermost bodies first; ``fs`` may
    return a list of statements to put in its place."""
    out: list[ir.Stmt] = []
    for s in body:
        changes = {}
        for name in ("body", "orelse"):
            inner = getattr(s, name, None)
            if isinstance(inner, list):
                changes[name] = map_block(inner, fs)
        new = fs(dataclasses.replace(s, **changes) if changes else s)
        out.extend(new if isinstance(new, list) else [new])
    return out


# ------------------------------------------------------------------------- variables


def reads_of(s: ir.Stmt) -> list[ir.Variable]:
    """The variables statement ``s`` itself reads."""
    return _reads_writes(s)[0]


def writes_of(s: ir.Stmt) -> list[ir.Variable]:
    """The variables statement ``s`` itself sets."""
    return _reads_writes(s)[1]


def _reads_writes(s: ir.Stmt) -> tuple[list[ir.Variable], list[ir.Variable]]:
    """Variables statement ``s`` itself reads and writes (not its nested bodies)."""
    reads, writes = [], []
    for e in passes.own_exprs(s):
        for sub in passes.subexprs(e):
            if isinstance(sub, ir.Ref):
                reads.append(sub.var)
            elif isinstance(sub, ir.Call):
                writes += sub.outs
    if isinstance(s, ir.Assign):
        writes.append(s.target)
    elif isinstance(s, ir.ForRange):
        writes.append(s.var)
    return reads, writes


def live_in(body: list[ir.Stmt], assigned: set | None = None) -> set[ir.Variable]:
    """Variables ``body`` may read before setting them (its values from outside)."""
    assigned = set() if assigned is None else assigned
    out: set[ir.Variable] = set()
    for s in body:
        reads, writes = _reads_writes(s)
        out |= {v for v in reads if v not in assigned}
        if isinstance(s, ir.If):
            then, other = set(assigned), set(assigned)
            out |= live_in(s.body, then) | live_in(s.orelse, other)
            assigned |= then & other
        elif isinstance(s, ir.ForRange | ir.While):
            inner = set(assigned) | (set(writes) if isinstance(s, ir.ForRange) else set())
            out |= live_in(s.body, inner)
        assigned |= set(writes) - ({s.var} if isinstance(s, ir.ForRange) else set())
    return out


def _all_vars(body: list[ir.Stmt]) -> set[ir.Variable]:
    found: set[ir.Variable] = set()
    for s, _ in passes.walk(body):
        reads, writes = _reads_writes(s)
        found |= set(reads) | set(writes)
    return found


# ------------------------------------------------------------------------- finishing


def finish(kernel: ir.Function, low) -> ir.Function:
    """The kernel of a :class:`~ember.codegen.workgroup.Lowering` with its regions
    rewritten (see the module docstring)."""
    from ember.codegen import workgroup as wg
    from ember.codegen import workitems as wi

    loops = low.regions
    params = set(kernel.params)
    items = _item_variables(kernel, low)
    remat = _recomputable(loops, items, params)
    items -= set(remat)
    exits = any(isinstance(s, ir.Return) for loop in loops for s, _ in passes.walk(loop.body))
    nested = len(loops) > 1 or not any(s is loops[0] for s in kernel.body) if loops else False
    done = exits and nested
    names = _Names(items, "em_lead" if done else "0")
    extra = _declarations(kernel, low, items, names, done)
    failed = ""
    if kernel.can_fail:
        failed = "kept" if (low.program.no_return and len(loops) > 1) else "reset"
    item = bool(low.program.functions) or kernel.can_fail

    fixed = params | low.scalars | low.counters  # constant within a region

    def region(loop: wi.ItemLoop) -> list[ir.Stmt]:
        body = _bound(loop, _with_recomputed(loop.body, remat), items, fixed, done)
        body = map_block(body, lambda s: _in_region(s, names, done))
        new = dataclasses.replace(loop, body=body, item=item, done=done, failed=failed)
        if new.stop is not None:
            new.stop = map_expr(new.stop, _indices)
        has_exit = any(isinstance(s, wi.ItemExit) for s, _ in passes.walk(body))
        return [new, wi.LeadUpdate(loop.loc)] if done and has_exit else [new]

    def uniform(e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Ref) and e.var in remat:
            e = remat[e.var]
        return _indices(_rename(e, names.at_lead))

    def group(s: ir.Stmt) -> ir.Stmt | list:
        if isinstance(s, wi.ItemLoop):
            return region(s)
        if isinstance(s, ir.If | ir.While | ir.ForRange | ir.Assign):
            return map_stmt_exprs(s, uniform)
        return s

    body = _map_group(kernel.body, group)
    shared_decls = [s for s in body if isinstance(s, ir.ArrayDecl)]
    rest = [s for s in body if not isinstance(s, ir.ArrayDecl)]
    locals_ = [v for v in kernel.locals if v not in items]
    if failed == "kept":
        flag = ir.Variable("em_failed_w", _int32(), "em_failed")
        extra.append(wi.ItemArray(kernel.loc, flag, True))
    return wg.copy_function(kernel, body=[*shared_decls, *extra, *rest], locals=locals_)


def _item_variables(kernel: ir.Function, low) -> set[ir.Variable]:
    """The locals that need one value per work-item: used in several regions or at group
    level, or read by a region before it sets them."""
    places: dict[ir.Variable, set] = {}
    for loop in low.regions:
        for v in _all_vars(loop.body):
            places.setdefault(v, set()).add(loop.label)
    for e in low.uniform_exprs:
        for sub in passes.subexprs(e):
            if isinstance(sub, ir.Ref):
                places.setdefault(sub.var, set()).add("group")
    own = set(kernel.locals) - {s.var for s in kernel.body if isinstance(s, ir.ArrayDecl)}
    own -= low.counters | low.scalars
    live: set[ir.Variable] = set()
    for loop in low.regions:
        live |= live_in(loop.body)
    return {v for v, where in places.items() if v in own and (len(where) > 1 or v in live)}


def _declarations(kernel, low, items, names, done: bool) -> list[ir.Stmt]:
    from ember.codegen import workitems as wi

    ordered = sorted(items, key=lambda v: v.name)
    out: list[ir.Stmt] = [wi.ItemArray(kernel.loc, names.array(v)) for v in ordered]
    if done:
        out.append(wi.ItemArray(kernel.loc, ir.Variable("em_done", _bool(), "em_done"), True))
    return out


# ------------------------------------------------------------------------- recomputing


def _recomputable(loops, items: set[ir.Variable], params: set) -> dict[ir.Variable, ir.Expr]:
    """Per-work-item variables set once, at the top of a region, from indices, parameters
    and constants only (``row = block_idx.y * T + thread_idx.y``): each region that reads
    one computes it again instead of keeping an array.  Variable -> its value, written
    with indices and parameters only."""
    counts: dict[ir.Variable, int] = {}
    for loop in loops:
        for s, e in passes.walk(loop.body):
            for v in writes_of(s) if e is None else ():  # each statement once
                counts[v] = counts.get(v, 0) + 1
    defs = {
        s.target: s.value
        for loop in loops
        for s in loop.body
        if isinstance(s, ir.Assign) and s.target in items and counts.get(s.target) == 1
    }
    out: dict[ir.Variable, ir.Expr] = {}

    def closed(v: ir.Variable, seen: frozenset) -> ir.Expr | None:
        if v in out:
            return out[v]
        if v not in defs or v in seen:
            return None
        bad = []

        def visit(x: ir.Expr) -> ir.Expr:
            if isinstance(x, ir.Ref) and x.var not in params:
                inner = closed(x.var, seen | {v})
                if inner is None:
                    bad.append(x)
                return inner if inner is not None else x
            if isinstance(x, ir.Load | ir.Atomic | ir.Call):
                bad.append(x)
            if isinstance(x, ir.Intrinsic) and (x.name == "barrier" or x.name in SUBGROUP_OPS):
                bad.append(x)
            return x

        value = map_expr(defs[v], visit)
        if bad:
            return None
        out[v] = value
        return value

    for v in list(defs):
        closed(v, frozenset())
    return out


def _with_recomputed(body: list[ir.Stmt], remat: dict) -> list[ir.Stmt]:
    """``body`` starting with the recomputation of the variables it reads but does not set."""
    if not remat:
        return body
    read: set[ir.Variable] = set()
    written: set[ir.Variable] = set()
    for s, _ in passes.walk(body):
        r, w = _reads_writes(s)
        read |= set(r)
        written |= set(w)
    needed = sorted((v for v in read - written if v in remat), key=lambda v: v.name)
    loc = body[0].loc
    return [ir.Assign(loc, v, remat[v]) for v in needed] + body


def _map_group(body: list[ir.Stmt], fs) -> list[ir.Stmt]:
    """Like :func:`map_block` at group level: item loops are not entered."""
    from ember.codegen.workitems import ItemLoop

    out: list[ir.Stmt] = []
    for s in body:
        if not isinstance(s, ItemLoop):
            changes = {}
            for name in ("body", "orelse"):
                inner = getattr(s, name, None)
                if isinstance(inner, list):
                    changes[name] = _map_group(inner, fs)
            s = dataclasses.replace(s, **changes) if changes else s
        new = fs(s)
        out.extend(new if isinstance(new, list) else [new])
    return out


def _bool():
    from ember import dtypes
    from ember.frontend.types import scalar

    return scalar(dtypes.bool_)


def _int32():
    from ember import dtypes
    from ember.frontend.types import scalar

    return scalar(dtypes.int32)


class _Names:
    """The C names of per-work-item variables: ``v_w[em_wi]`` in regions, ``v_w[lead]``
    at group level."""

    def __init__(self, items: set[ir.Variable], lead: str):
        self.items = items
        self.lead = lead
        self._item: dict[ir.Variable, ir.Variable] = {}
        self._lead: dict[ir.Variable, ir.Variable] = {}

    def array(self, v: ir.Variable) -> ir.Variable:
        return ir.Variable(f"{v.name}_w", v.type, v.pyname)

    def at_item(self, v: ir.Variable) -> ir.Variable:
        if v not in self.items:
            return v
        if v not in self._item:
            self._item[v] = ir.Variable(f"{v.name}_w[em_wi]", v.type, v.pyname)
        return self._item[v]

    def at_lead(self, v: ir.Variable) -> ir.Variable:
        if v not in self.items:
            return v
        if v not in self._lead:
            self._lead[v] = ir.Variable(f"{v.name}_w[{self.lead}]", v.type, v.pyname)
        return self._lead[v]

    def uniform(self, e: ir.Expr) -> ir.Expr:
        return map_expr(e, lambda x: _rename(x, self.at_lead))

    def region(self, e: ir.Expr) -> ir.Expr:
        return map_expr(e, lambda x: _rename(x, self.at_item))


def rename(e: ir.Expr, f) -> ir.Expr:
    """``e`` (one node) with its variables mapped by ``f`` (for :func:`map_expr`)."""
    return _rename(e, f)


def _rename(e: ir.Expr, f) -> ir.Expr:
    if isinstance(e, ir.Ref):
        v = f(e.var)
        return e if v is e.var else ir.Ref(e.type, v)
    if isinstance(e, ir.Call) and e.outs:
        outs = [f(v) for v in e.outs]
        return dataclasses.replace(e, outs=outs)
    return e


_INDEX_NAMES = frozenset({"thread_idx", "block_idx", "block_dim", "grid_dim", "global_id",
                          "global_size", "warp_size", "lane_id", "activemask"})  # fmt: skip


def _indices(e: ir.Expr) -> ir.Expr:
    """A work-item index intrinsic as the item loops' and group's variables."""
    if not isinstance(e, ir.Intrinsic) or e.name not in _INDEX_NAMES:
        return e
    axis = e.args[0].value if e.args else 0
    name = e.name
    if name == "thread_idx":
        return _index_var("l", axis)
    if name == "block_idx":
        return _index_var("g", axis)
    if name == "block_dim":
        return _index_var("b", axis)
    if name == "grid_dim":
        return _index_var("n", axis)
    if name == "global_id":
        base = ir.Binary(WEAK_INT, "mul", _index_var("g", axis), _index_var("b", axis))
        return ir.Binary(WEAK_INT, "add", base, _index_var("l", axis))
    if name == "global_size":
        return ir.Binary(WEAK_INT, "mul", _index_var("n", axis), _index_var("b", axis))
    if name == "warp_size":
        from ember.codegen.subgroups import LANES

        return ir.Const(WEAK_INT, LANES)
    if name == "lane_id":
        from ember.codegen.subgroups import lane

        return lane()
    if name == "activemask":
        from ember.codegen.subgroups import active_mask

        return active_mask()
    return e


def _in_region(s: ir.Stmt, names: _Names, done: bool) -> ir.Stmt:
    from ember.codegen.workitems import ItemExit

    if isinstance(s, ir.Return):
        return ItemExit(s.loc, done)
    s = map_stmt_exprs(s, lambda e: _indices(_rename(e, names.at_item)))
    if isinstance(s, ir.Assign) and s.target in names.items:
        s = dataclasses.replace(s, target=names.at_item(s.target))
    elif isinstance(s, ir.ForRange) and s.var in names.items:
        s = dataclasses.replace(s, var=names.at_item(s.var))
    return s


# ------------------------------------------------------------------------- guards


def _bound(loop, body: list[ir.Stmt], items: set, params: set, done: bool) -> list[ir.Stmt]:
    """``body`` (of ``loop``) with a leading guard on ``global_id(0)`` or ``thread_idx.x``
    turned into ``loop.stop`` (set here); the body unchanged when there is none.  An early
    ``return`` becomes a bound only when no later region runs (``done`` False): past the
    bound, work-items would else miss being marked as returned.  A loop with a bound
    already (a lockstep sweep's) keeps it."""
    if loop.stop is not None:
        return body
    prefix: list[ir.Stmt] = []
    values: dict[ir.Variable, ir.Expr] = {}
    for s in body:
        if isinstance(s, ir.Assign) and s.target not in items and passes.is_pure(s.value):
            prefix.append(s)
            values[s.target] = s.value
            continue
        break
    else:
        return body
    rest = body[len(prefix) + 1 :]
    if isinstance(s, ir.If) and not s.orelse and not rest:
        found = _split_guard(s.cond, values, prefix, params)
        if found is None:
            return body
        stop, remaining = found
        inner = s.body if remaining is None else [dataclasses.replace(s, cond=remaining)]
        loop.stop = stop
        return [*prefix, *inner]
    if (
        not done
        and isinstance(s, ir.If)
        and not s.orelse
        and len(s.body) == 1
        and isinstance(s.body[0], ir.Return)
        and isinstance(s.cond, ir.Compare)
    ):
        flipped = {">=": "<", ">": "<="}.get(s.cond.op)
        if flipped is None:
            return body
        cond = ir.Compare(s.cond.type, flipped, s.cond.left, s.cond.right)
        found = _split_guard(cond, values, prefix, params)
        if found is None or found[1] is not None:
            return body
        loop.stop = found[0]
        return [*prefix, *rest]
    return body


def _split_guard(cond: ir.Expr, values, prefix, params) -> tuple[ir.Expr, ir.Expr | None] | None:
    """(bound on thread_idx.x, remaining condition or None) for ``gid < n [and rest]``."""
    rest = None
    if isinstance(cond, ir.Logical) and cond.op == "and":
        cond, rest = cond.left, cond.right
    if not isinstance(cond, ir.Compare) or cond.op not in ("<", "<=", ">", ">="):
        return None
    op, left, right = cond.op, cond.left, cond.right
    if op in (">", ">="):
        op, left, right = {">": "<", ">=": "<="}[op], right, left
    which = _index_of(left, values, prefix)
    if which is None or left.type != WEAK_INT:
        return None
    bound = _uniform_value(right, values, params)
    if bound is None or bound.type != WEAK_INT:
        return None
    if op == "<=":
        bound = ir.Binary(WEAK_INT, "add", bound, ir.Const(WEAK_INT, 1))
    if which == "thread_idx":
        return bound, rest
    x = [ir.Const(WEAK_INT, 0)]
    base = ir.Binary(WEAK_INT, "mul", ir.Intrinsic(WEAK_INT, "block_idx", x),
                     ir.Intrinsic(WEAK_INT, "block_dim", x))  # fmt: skip
    return ir.Binary(WEAK_INT, "sub", bound, base), rest


def _index_of(e: ir.Expr, values, prefix) -> str | None:
    """``"global_id"`` / ``"thread_idx"`` when ``e`` is that index along x (or a variable
    the region's prefix set to it, once), else None."""
    if isinstance(e, ir.Ref) and e.var in values:
        if sum(1 for s in prefix if s.target is e.var) != 1:
            return None
        e = values[e.var]
    if (
        isinstance(e, ir.Intrinsic)
        and e.name in ("global_id", "thread_idx")
        and isinstance(e.args[0], ir.Const)
        and e.args[0].value == 0
    ):
        return e.name
    return None


_UNIFORM_INDEX = frozenset({"block_idx", "block_dim", "grid_dim", "global_size", "warp_size"})


def _uniform_value(e: ir.Expr, values, params) -> ir.Expr | None:
    """``e`` rebuilt from parameters, constants and group indices only (the prefix's
    variables replaced by their values), or None: it can then be computed before the
    item loop."""
    bad = []

    def visit(x: ir.Expr) -> ir.Expr:
        if isinstance(x, ir.Ref):
            if x.var in values:
                inner = _uniform_value(values[x.var], {}, params)
                if inner is None:
                    bad.append(x)
                    return x
                return inner
            if x.var not in params:
                bad.append(x)
        elif isinstance(x, ir.Load | ir.Atomic | ir.Call):
            bad.append(x)
        elif isinstance(x, ir.Intrinsic) and x.name not in _UNIFORM_INDEX and not x.args:
            bad.append(x)
        elif isinstance(x, ir.Intrinsic) and x.name in ("thread_idx", "global_id", "lane_id"):
            bad.append(x)
        return x

    out = map_expr(e, visit)
    return None if bad else out
