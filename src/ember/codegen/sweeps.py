"""Loops whose trip count differs between work-items, run in lockstep over the work-items.

Run for one work-item after another, a grid-stride loop (``while i < n: ...; i += step``,
``i`` starting at ``global_id()``) touches the memory of one work-item after the other, far
apart: every access misses the cache.  Run at group level instead - one iteration of every
work-item per *sweep* - the work-items of a sweep touch neighbouring elements.  This is done
for an innermost loop at the top of a region, left only through its condition
(:func:`sweepable`).

Two forms (:func:`sweep`):

* **affine**: the loop counter starts at ``U + thread_idx.x`` and grows by a positive
  ``S`` that is the same for the group, and the condition is ``i + C < N``: in a sweep the
  work-items still in the loop are those below a bound, so a sweep is a counted loop over
  ``thread_idx.x < N - C - base`` with ``i = base + thread_idx.x``, which the compiler
  vectorizes; ``base`` grows by ``S`` per sweep.  After the loop each work-item's counter
  is recomputed from the number of iterations it ran.  The array library's elementwise
  kernels are of this form.
* **general**: a per-work-item flag says who is still in the loop; each sweep runs one
  iteration of those, and the sweeps go on while any is.
"""

from __future__ import annotations

from dataclasses import dataclass

from ember import dtypes
from ember.codegen import regions
from ember.codegen.uniformity import SUBGROUP_OPS
from ember.frontend import ir, passes
from ember.frontend.types import WEAK_INT, scalar

_BOOL = scalar(dtypes.bool_)
_UNIFORM_INDEX = frozenset({"block_idx", "block_dim", "grid_dim", "global_size", "warp_size"})
_POSITIVE_INDEX = frozenset({"block_dim", "grid_dim", "global_size", "warp_size"})


def sweepable(low, s: ir.Stmt) -> bool:
    """An innermost loop at the top of a region whose trip count differs between
    work-items, left only through its condition (no ``break``, ``continue``, ``return``),
    in a kernel that cannot fail (a failing work-item would stay in the loop)."""
    if low.kernel.can_fail or not isinstance(s, ir.While | ir.ForRange):
        return False
    if not low.uniformity.loop_is_varying(s):
        # The same trip count everywhere: kept inside the item loop.  (As the outer loop it
        # leaves a loop over work-items to vectorize, but the tiled matmul ran 2-3x slower
        # so: per-work-item state through memory at every step, short item loops.)
        return False
    for st, e in passes.walk(s.body):
        stops = ir.While | ir.ForRange | ir.Break | ir.Continue | ir.Return | ir.Raise
        if e is None and isinstance(st, stops):
            return False
    return isinstance(s, ir.While) or s.step_sign != 0


def predicate_for(low, s: ir.Stmt) -> bool:
    """A branch on a varying condition with a loop to sweep directly inside (a reduction's
    ``if w < W: s = accumulate(...)``, its function inlined): lowered as a predicated
    block (``Lowering.block``), so that the loop can run in lockstep."""
    if not isinstance(s, ir.If) or low.kernel.can_fail:
        return False
    if not low.uniformity.is_varying(s.cond):
        return False
    for x, e in passes.walk([s]):
        if isinstance(e, ir.Intrinsic) and (e.name == "barrier" or e.name in SUBGROUP_OPS):
            return False
        if e is None and isinstance(x, ir.Break | ir.Continue | ir.Return | ir.Raise):
            return False
    return any(sweepable(low, x) or predicate_for(low, x) for x in [*s.body, *s.orelse])


def sweep(low, s: ir.Stmt, region: list[ir.Stmt], out: list[ir.Stmt]) -> list[ir.Stmt]:
    """Loop ``s`` at group level; ``region`` is the region being built before it.  Returns
    the start of the region after it."""
    form = _affine(low, s, region)
    if form is not None:
        return _affine_sweep(low, s, region, out, form)
    return _general_sweep(low, s, region, out)


def _as_while(s: ir.Stmt) -> tuple[list[ir.Stmt], ir.Expr, list[ir.Stmt]]:
    """(statements before, condition, body) of ``s`` as a while loop."""
    if isinstance(s, ir.While):
        return [], s.cond, list(s.body)
    var, loc = s.var, s.loc
    cond = ir.Compare(_BOOL, "<" if s.step_sign > 0 else ">", ir.Ref(var.type, var), s.stop)
    step = ir.Assign(loc, var, ir.Binary(var.type, "add", ir.Ref(var.type, var), s.step))
    return [ir.Assign(loc, var, s.start)], cond, [*s.body, step]


def _general_sweep(low, s, region, out) -> list[ir.Stmt]:
    loc = s.loc
    start, cond, body = _as_while(s)
    live = low.temp(_BOOL, "em_live")  # this work-item is still in the loop
    more = low.temp(_BOOL, "em_more")  # some work-item is: sweep again
    low.counters.add(more)
    mark = [
        ir.Assign(loc, live, cond),
        ir.If(loc, ir.Ref(_BOOL, live), [ir.Assign(loc, more, ir.Const(_BOOL, True))], []),
    ]
    out.append(ir.Assign(loc, more, ir.Const(_BOOL, False)))
    first = [*region, *start, *mark]
    if low.predicates:  # the others are not in the loop (and live may be stale)
        first = [ir.Assign(loc, live, ir.Const(_BOOL, False)), _under(low, loc, first)]
    low._flush(first, out, wrap=False)
    sweeps = [ir.Assign(loc, more, ir.Const(_BOOL, False))]
    low._flush([ir.If(loc, ir.Ref(_BOOL, live), [*body, *mark], [])], sweeps, wrap=False)
    out.append(ir.While(loc, ir.Ref(_BOOL, more), sweeps))
    return []


# ------------------------------------------------------------------------- affine loops


@dataclass
class Affine:
    """``i`` starts at ``base + thread_idx.x``, runs while ``i + shift < limit``, grows by
    ``step`` (positive); ``body`` is the loop's body without that growth; ``define`` the
    region's statement setting ``i`` (None: the loop's own start)."""

    var: ir.Variable
    base: ir.Expr
    shift: ir.Expr
    limit: ir.Expr
    step: ir.Expr
    body: list[ir.Stmt]
    define: ir.Stmt | None


def _affine(low, s: ir.Stmt, region: list[ir.Stmt]) -> Affine | None:
    fixed = set(low.kernel.params) | low.scalars | low.counters
    if isinstance(s, ir.ForRange):
        var, start, define, body = s.var, s.start, None, list(s.body)
        if s.step_sign <= 0 or var.type != WEAK_INT:
            return None
        shift, limit, step = ir.Const(WEAK_INT, 0), s.stop, s.step
    else:
        found = _while_parts(s)
        if found is None:
            return None
        var, shift, limit, step, body = found
        define = next((x for x in reversed(region) if var in regions.writes_of(x)), None)
        if not isinstance(define, ir.Assign) or _used_after(region, define, var):
            return None
        start = define.value
    base = _thread_x_plus(start)
    parts = (base, shift, limit, step)
    if base is None or not all(_fixed(e, fixed) for e in parts):
        return None
    if any(var in regions.writes_of(x) for x, e in passes.walk(body) if e is None):
        return None
    if not _positive(step, low.scalar_defs):
        return None
    return Affine(var, base, shift, limit, step, body, define)


def _while_parts(s: ir.While):
    """(counter, shift, limit, step, body without the step) of ``while i [+ C] < N:
    ...; i += S``, or None."""
    cond = s.cond
    if not (isinstance(cond, ir.Compare) and cond.op == "<") or not s.body:
        return None
    left, shift = cond.left, ir.Const(WEAK_INT, 0)
    if isinstance(left, ir.Binary) and left.op == "add":
        left, shift = left.left, left.right
    last = s.body[-1]
    if not (isinstance(left, ir.Ref) and left.type == WEAK_INT and isinstance(last, ir.Assign)):
        return None
    var, grow = left.var, last.value
    if last.target is not var or not isinstance(grow, ir.Binary) or grow.op != "add":
        return None
    if not (isinstance(grow.left, ir.Ref) and grow.left.var is var):
        return None
    return var, shift, cond.right, grow.right, s.body[:-1]


def _used_after(region: list[ir.Stmt], define: ir.Stmt, var: ir.Variable) -> bool:
    """Whether a statement of ``region`` after ``define`` reads ``var``."""
    later = region[region.index(define) + 1 :]
    return any(var in regions.reads_of(x) for x, e in passes.walk(later) if e is None)


def _thread_x_plus(e: ir.Expr) -> ir.Expr | None:
    """``U`` when ``e`` is ``U + thread_idx.x`` (or ``global_id(0)``: ``U`` is then
    ``block_idx.x * block_dim.x``), else None."""
    zero = ir.Const(WEAK_INT, 0)
    if _is_index(e, "thread_idx"):
        return zero
    if _is_index(e, "global_id"):
        return ir.Binary(WEAK_INT, "mul", _index("block_idx"), _index("block_dim"))
    if isinstance(e, ir.Binary) and e.op == "add":
        for a, b in ((e.left, e.right), (e.right, e.left)):
            inner = _thread_x_plus(b)
            if inner is not None:
                return a if inner == zero else ir.Binary(WEAK_INT, "add", a, inner)
    return None


def _index(name: str) -> ir.Intrinsic:
    return ir.Intrinsic(WEAK_INT, name, [ir.Const(WEAK_INT, 0)])


def _is_index(e: ir.Expr, name: str) -> bool:
    return (
        isinstance(e, ir.Intrinsic)
        and e.name == name
        and isinstance(e.args[0], ir.Const)
        and e.args[0].value == 0
    )


def _fixed(e: ir.Expr, fixed: set) -> bool:
    """Built from ``fixed`` variables, constants and group indices only (int64)."""
    if e.type != WEAK_INT:
        return False
    for x in passes.subexprs(e):
        if isinstance(x, ir.Ref) and x.var not in fixed:
            return False
        if isinstance(x, ir.Load | ir.Atomic | ir.Call):
            return False
        if isinstance(x, ir.Intrinsic) and x.name not in _UNIFORM_INDEX:
            return False
    return True


def _positive(e: ir.Expr, defs: dict, depth: int = 0) -> bool:
    """Provably > 0: positive constants, sizes, and sums and products of those."""
    if depth > 8:
        return False
    if isinstance(e, ir.Const):
        return e.value > 0
    if isinstance(e, ir.Intrinsic):
        return e.name in _POSITIVE_INDEX
    if isinstance(e, ir.Binary) and e.op in ("add", "mul"):
        return _positive(e.left, defs, depth + 1) and _positive(e.right, defs, depth + 1)
    if isinstance(e, ir.Ref):
        values = defs.get(e.var)
        return bool(values) and all(v is not None and _positive(v, defs, depth + 1) for v in values)
    return False


def _under(low, loc, body: list[ir.Stmt]) -> ir.Stmt:
    """``body`` under the predicates of the branches being lowered."""
    cond = low.predicates[0]
    for p in low.predicates[1:]:
        cond = ir.Logical(_BOOL, "and", cond, p)
    return ir.If(loc, cond, body, [])


def _affine_sweep(low, s, region, out, form: Affine) -> list[ir.Stmt]:
    loc, var = s.loc, form.var
    base = low.temp(WEAK_INT, "em_base")
    first = low.temp(WEAK_INT, "em_first")
    low.counters.update((base, first))
    kept = [x for x in region if x is not form.define]
    low._flush(kept, out)
    b = ir.Ref(WEAK_INT, base)
    out += [ir.Assign(loc, first, form.base), ir.Assign(loc, base, ir.Ref(WEAK_INT, first))]
    low.uniform_exprs += [form.base, form.shift, form.limit, form.step]
    tx = _index("thread_idx")
    # inside the sweep the counter is a local of its own: the per-work-item value is set
    # once, after the loop
    here = low.temp(WEAK_INT, "em_i")
    body = regions.map_block(form.body, lambda x: _renamed(x, var, here))
    sweeps: list[ir.Stmt] = []
    low._flush([ir.Assign(loc, here, _add(b, tx)), *body], sweeps)
    sweeps[-1].stop = _sub(_sub(form.limit, form.shift), b)  # those still in the loop
    sweeps.append(ir.Assign(loc, base, _add(b, form.step)))
    cond = ir.Compare(_BOOL, "<", _add(b, form.shift), form.limit)
    out.append(ir.While(loc, cond, sweeps))
    return [ir.Assign(loc, var, _final(form, ir.Ref(WEAK_INT, first), tx))]


def _final(form: Affine, first: ir.Expr, tx: ir.Expr) -> ir.Expr:
    """The counter's value after the loop: ``first + tx + k * step``, ``k`` the iterations
    this work-item ran (``ceil((limit - shift - first - tx) / step)``, at least 0)."""
    start = _add(first, tx)
    left = _sub(_sub(form.limit, form.shift), start)
    runs = ir.Binary(WEAK_INT, "floordiv", _sub(_add(left, form.step), ir.Const(WEAK_INT, 1)),
                     form.step)  # fmt: skip
    k = ir.Select(WEAK_INT, ir.Compare(_BOOL, ">", left, ir.Const(WEAK_INT, 0)), runs,
                  ir.Const(WEAK_INT, 0))  # fmt: skip
    return _add(start, ir.Binary(WEAK_INT, "mul", k, form.step))


def _renamed(s: ir.Stmt, old: ir.Variable, new: ir.Variable) -> ir.Stmt:
    return regions.map_stmt_exprs(s, lambda e: regions.rename(e, lambda v: new if v is old else v))


def _add(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return ir.Binary(WEAK_INT, "add", a, b)


def _sub(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return ir.Binary(WEAK_INT, "sub", a, b)
