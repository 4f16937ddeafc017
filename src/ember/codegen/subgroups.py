"""Sub-group operations on the cpu backend: what a shuffle or a warp reduction reads.

A sub-group is :data:`LANES` consecutive work-items of a group (a CUDA warp).  The work-group
lowering (:mod:`ember.codegen.workgroup`) stores each operand in a scratch array, one slot
per work-item, ends the region, and in the next region replaces the operation with what is
built here: a read of the source lane's slot (shuffles), or a loop over the sub-group's
slots (reductions).
"""

from __future__ import annotations

from ember import dtypes
from ember.codegen import regions
from ember.frontend import ir
from ember.frontend.types import WEAK_INT, scalar

LANES = 32
_BOOL = scalar(dtypes.bool_)


def _i(value: int) -> ir.Const:
    return ir.Const(WEAK_INT, value)


def _op(op: str, a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return ir.Binary(WEAK_INT, op, a, b)


def lane() -> ir.Expr:
    """This work-item's lane in its sub-group."""
    return _op("bitand", regions.WI, _i(LANES - 1))


def lane_base() -> ir.Expr:
    """The work-item index of lane 0 of this work-item's sub-group."""
    return _op("sub", regions.WI, lane())


def lane_count() -> ir.Expr:
    """Lanes in this sub-group (the last one of a block may be partial)."""
    return _op("min", _i(LANES), _op("sub", regions.WG, lane_base()))


def shuffled(e: ir.Intrinsic, scratch: ir.Variable) -> ir.Expr:
    """The value a shuffle reads: its source lane's entry, or its own when the source lane
    does not exist (CUDA's rule for ``shfl_up``/``shfl_down`` at the edges)."""
    k = ir.Cast(WEAK_INT, e.args[1])
    src = {
        "shfl": _op("bitand", k, _i(LANES - 1)),
        "shfl_up": _op("sub", lane(), k),
        "shfl_down": _op("add", lane(), k),
        "shfl_xor": _op("bitxor", lane(), k),
    }[e.name]
    ok = ir.Logical(
        _BOOL, "and", ir.Compare(_BOOL, ">=", src, _i(0)), ir.Compare(_BOOL, "<", src, lane_count())
    )
    ref = ir.Ref(scratch.type, scratch)
    theirs = ir.Load(e.type, ref, [_op("add", lane_base(), src)], flat=True)
    mine = ir.Load(e.type, ref, [regions.WI], flat=True)
    return ir.Select(e.type, ok, theirs, mine)


def reduction(loc, name: str, scratch: ir.Variable, result: ir.Variable, j: ir.Variable):
    """Statements setting ``result`` to the sum/min/max of this sub-group's entries
    (``j``: a fresh loop variable)."""
    op = {"warp_sum": "add", "warp_min": "min", "warp_max": "max"}[name]
    t = result.type
    ref = ir.Ref(scratch.type, scratch)
    first = ir.Assign(loc, result, ir.Load(t, ref, [lane_base()], flat=True))
    item = ir.Load(t, ref, [_op("add", lane_base(), ir.Ref(WEAK_INT, j))], flat=True)
    step = ir.Assign(loc, result, ir.Binary(t, op, ir.Ref(t, result), item))
    loop = ir.ForRange(loc, j, _i(1), lane_count(), _i(1), 1, [step])
    return [first, loop]
