"""Small IR passes and queries.

* :func:`is_pure` - whether evaluating an expression twice (or not at all) is harmless.
* :func:`linearize` - rewrite every multi-index ``x[i, j]`` into one flat element index using
  the array's layout (C order from the shape, or the strides passed at launch), so the
  emitter prints ``x.data[i * x.shape[1] + j]`` without knowing about layouts.
* :func:`run` - the pass pipeline the driver applies after typing.
"""

from __future__ import annotations

from ember.frontend import ir
from ember.frontend.operators import fold
from ember.frontend.types import WEAK_INT, Array

# Intrinsics with effects beyond their value (ordering, synchronization).
EFFECTFUL = frozenset(
    {"barrier", "shfl", "shfl_up", "shfl_down", "shfl_xor", "warp_sum", "warp_min", "warp_max"}
)


def children(e: ir.Expr) -> list[ir.Expr]:
    """The direct sub-expressions of ``e``."""
    if isinstance(e, ir.Field):
        return [e.array]
    if isinstance(e, ir.Load):
        return [e.array, *e.index]
    if isinstance(e, ir.Unary):
        return [e.operand]
    if isinstance(e, ir.Binary | ir.Compare | ir.Logical):
        return [e.left, e.right]
    if isinstance(e, ir.Cast):
        return [e.value]
    if isinstance(e, ir.Select):
        return [e.cond, e.if_true, e.if_false]
    if isinstance(e, ir.Intrinsic | ir.Call):
        return list(e.args)
    if isinstance(e, ir.Atomic):
        return [e.array, *e.index, *e.args]
    return []


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


def _rewrite_expr(e: ir.Expr) -> ir.Expr:
    for name in ("array", "operand", "left", "right", "value", "cond", "if_true", "if_false"):
        sub = getattr(e, name, None)
        if isinstance(sub, ir.Expr):
            setattr(e, name, _rewrite_expr(sub))
    if isinstance(e, ir.Intrinsic | ir.Call | ir.Atomic):
        e.args = [_rewrite_expr(a) for a in e.args]
    if isinstance(e, ir.Load | ir.Atomic) and not e.flat:
        e.index = [flat_index(e.array, [_rewrite_expr(i) for i in e.index])]
        e.flat = True
    return e


def _rewrite_block(body: list[ir.Stmt]) -> None:
    for s in body:
        if isinstance(s, ir.Store) and not s.flat:
            s.array = _rewrite_expr(s.array)
            s.index = [flat_index(s.array, [_rewrite_expr(i) for i in s.index])]
            s.flat = True
        for name in ("value", "expr", "cond", "start", "stop", "step"):
            sub = getattr(s, name, None)
            if isinstance(sub, ir.Expr):
                setattr(s, name, _rewrite_expr(sub))
        if isinstance(s, ir.Return):
            s.values = [_rewrite_expr(v) for v in s.values]
        for name in ("body", "orelse"):
            if isinstance(getattr(s, name, None), list):
                _rewrite_block(getattr(s, name))


def linearize(program: ir.Program) -> ir.Program:
    """Give every Load, Store and Atomic a single flat element index (in place)."""
    for fn in [*program.functions, program.kernel]:
        _rewrite_block(fn.body)
    return program


def run(program: ir.Program) -> ir.Program:
    """The passes, in order, applied to a freshly typed program."""
    return linearize(program)
