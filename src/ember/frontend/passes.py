"""Small IR passes and queries.

* :func:`is_pure` - whether evaluating an expression twice (or not at all) is harmless.
* :func:`linearize` - rewrite every multi-index ``x[i, j]`` into one flat element index using
  the array's layout (C order from the shape, or the strides passed at launch), so the
  emitter prints ``x.data[i * x.shape[1] + j]`` without knowing about layouts.
* :func:`number_sites` - number the run-time checks (:class:`~ember.frontend.ir.Site`) in
  program order and mark the functions that can fail (they get the error context); in a
  program that also synchronizes threads, mark it ``no_return`` (see ``codegen/runtime_checks.py``).
* :func:`walk` - every statement and expression of a function, for analyses
  (:mod:`ember.diagnostics.report`).
* :func:`run` - the pass pipeline the driver applies after typing.
"""

from __future__ import annotations

from ember.frontend import ir, rewrite
from ember.frontend.operators import fold
from ember.frontend.types import WEAK_INT, Array

# Intrinsics with effects beyond their value (ordering, synchronization).
EFFECTFUL = ir.WARP_OPS | {"barrier", "threadfence", "grid_sync", "block_any"}


def children(e: ir.Expr) -> list[ir.Expr]:
    """The direct sub-expressions of ``e``."""
    return rewrite.children(e)


def is_pure(e: ir.Expr) -> bool:
    """No calls, atomics or synchronizing intrinsics anywhere in ``e``."""
    if isinstance(e, ir.Call | ir.Atomic):
        return False
    if isinstance(e, ir.Intrinsic) and e.name in EFFECTFUL:
        return False
    return all(is_pure(c) for c in children(e))


# ------------------------------------------------------------------------- linearize


def flat_index(array: ir.Expr, index: list[ir.Expr]) -> ir.Expr:
    """The element offset of ``array[index...]`` from the start of its data."""
    t = array.type
    assert isinstance(t, Array)
    if t.ndim == 0:
        return ir.Const(WEAK_INT, 0)
    if t.layout == "A":
        terms = [_mul(i, ir.Field(WEAK_INT, array, "strides", k)) for k, i in enumerate(index)]
        flat = terms[0]
        for term in terms[1:]:
            flat = _add(flat, term)
        return flat
    flat = index[0]
    for k in range(1, t.ndim):
        flat = _add(_mul(flat, _extent(array, k)), index[k])
    return flat


def _extent(array: ir.Expr, axis: int) -> ir.Expr:
    t = array.type
    if t.shape is not None:
        return ir.Const(WEAK_INT, t.shape[axis])
    return ir.Field(WEAK_INT, array, "shape", axis)


def _mul(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    if isinstance(b, ir.Const) and b.value == 1:
        return a
    return fold(ir.Binary(WEAK_INT, "mul", _index(a), b))


def _add(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    if isinstance(b, ir.Const) and b.value == 0:
        return a
    return fold(ir.Binary(WEAK_INT, "add", a, _index(b)))


def _index(e: ir.Expr) -> ir.Expr:
    """Index arithmetic is done in int64; narrower index values are widened."""
    if e.type == WEAK_INT:
        return e
    return ir.Cast(WEAK_INT, e)


def _flatten(e: ir.Expr) -> ir.Expr:
    if isinstance(e, ir.Load | ir.Atomic) and not e.flat:
        e.index = [flat_index(e.array, e.index)]
        e.flat = True
    return e


def _flatten_stores(body: list[ir.Stmt]) -> None:
    for s in body:
        if isinstance(s, ir.Store) and not s.flat:
            s.index = [flat_index(s.array, s.index)]
            s.flat = True
        for inner in rewrite.nested(s):
            _flatten_stores(inner)


def linearize(program: ir.Program) -> ir.Program:
    """Give every Load, Store and Atomic a single flat element index (in place)."""
    for fn in [*program.functions, program.kernel]:
        rewrite.map_body(fn.body, _flatten)
        _flatten_stores(fn.body)
    return program


# ------------------------------------------------------------------------- walking


def own_exprs(s: ir.Stmt) -> list[ir.Expr]:
    """The expressions statement ``s`` evaluates itself (not those of nested bodies)."""
    return rewrite.children(s)


bodies = rewrite.nested
subexprs = rewrite.subexprs


def walk(body: list[ir.Stmt]):
    """(statement, expression) for every expression of every statement, in program order;
    (statement, None) once for each statement first."""
    for s in body:
        yield s, None
        for e in own_exprs(s):
            for sub in subexprs(e):
                yield s, sub
        for b in bodies(s):
            yield from walk(b)


def sites_of(s: ir.Stmt, e: ir.Expr | None) -> list[ir.Site]:
    """The run-time check sites at one step of :func:`walk`."""
    if e is None:
        out = [c.site for c in s.checks] if isinstance(s, ir.Store) else []
        return out + ([s.site] if isinstance(s, ir.Raise) else [])
    if isinstance(e, ir.Load | ir.Atomic | ir.View):
        return [c.site for c in e.checks]
    if isinstance(e, ir.Cast) and e.site is not None:
        return [e.site]
    return []


def number_sites(program: ir.Program) -> ir.Program:
    """Number every :class:`~ember.frontend.ir.Site` in program order (callees first) into
    ``program.sites``; set ``can_fail`` on each function that has one or calls one that
    does."""
    sites: list[ir.Site] = []
    for fn in [*program.functions, program.kernel]:  # callees first
        own = False
        for s, e in walk(fn.body):
            for site in sites_of(s, e):
                own = True
                if site.id < 0:
                    site.id = len(sites)
                    sites.append(site)
        fn.can_fail = own or any(c.can_fail for c in fn.callees)
    program.sites = sites
    functions = [*program.functions, program.kernel]
    if program.kernel.can_fail and any(_synchronizes(fn) for fn in functions):
        # A failed thread must not return early where the others wait for it (barriers,
        # warp operations): it runs on, and every access of every function is guarded.
        program.no_return = True
        for fn in functions:
            fn.can_fail = True
    return program


def _synchronizes(fn: ir.Function) -> bool:
    return any(isinstance(e, ir.Intrinsic) and e.name in EFFECTFUL for _, e in walk(fn.body) if e)


def run(program: ir.Program) -> ir.Program:
    """The passes, in order, applied to a freshly typed program."""
    from ember.frontend import hoisting, uniform

    if program.warp_emulated:  # every thread of the block reaches each warp operation
        uniform.make_uniform(program)
    specials = []
    if program.warp_emulated:
        specials.append((warp_scratch(), hoisting.uses_warp))
    if program.grid_sync:
        specials.append((grid_barrier(), hoisting.uses_grid_sync))
        program.kernel.grid_sync = True
    from ember.frontend import launchsize

    program.kernel.dynamic_bytes = any(
        isinstance(s, ir.ArrayDecl) and launchsize.is_rest(s) for s in program.kernel.body
    )
    hoisting.hoist_shared(linearize(program), specials)
    return number_sites(hoisting.hoist_thread_queries(program))


def warp_scratch() -> ir.Variable:
    """The per-block scratch array of emulated warp operations (one 64-bit word per thread,
    at the end of the launch's dynamic shared memory: ``frontend/launchsize.py``)."""
    from ember import dtypes
    from ember.frontend.types import Array

    return ir.Variable("em_wscratch", Array(dtypes.uint64, 1, "C", "shared", (1,)), "scratch")


def grid_barrier() -> ir.Variable:
    """The barrier word of ``grid_sync`` in device memory (a hidden kernel parameter)."""
    from ember import dtypes
    from ember.frontend.types import Array

    return ir.Variable("em_gbar", Array(dtypes.uint32, 1, "C", "global", (1,)), "grid barrier")
