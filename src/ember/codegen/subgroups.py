"""Sub-group operations on the cpu backend: what a shuffle or a warp reduction reads.

A sub-group is :data:`LANES` consecutive work-items of a group (a CUDA warp).  The work-group
lowering (:mod:`ember.codegen.workgroup`) stores each operand in a scratch array, one slot
per work-item, ends the region, and in the next region replaces the operation with what is
built here: a read of the source lane's slot (shuffles, with CUDA's ``width`` rule), or a
loop over the sub-group's slots (reductions; votes: ``ballot``, ``all_sync``, ``any_sync``;
``match_any_sync``).
``syncwarp`` only ends the region; ``activemask`` is every lane the sub-group has (as on an
OpenCL device: lanes of a sub-group are never reported inactive).  Masks are ignored: every
lane of the sub-group takes part, as in Ember's OpenCL and emulated warp operations.
"""

from __future__ import annotations

from ember import dtypes
from ember.codegen import regions
from ember.frontend import ir
from ember.frontend.types import WEAK_INT, scalar

LANES = 32
_BOOL = scalar(dtypes.bool_)
_U32 = scalar(dtypes.uint32)


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


def active_mask() -> ir.Expr:
    """``activemask()``: one bit per lane this work-item's sub-group has."""
    n = lane_count()
    full = ir.Const(_U32, 0xFFFFFFFF)
    part = ir.Binary(_U32, "sub", ir.Binary(_U32, "lshift", ir.Const(_U32, 1), ir.Cast(_U32, n)),
                     ir.Const(_U32, 1))  # fmt: skip
    return ir.Select(_U32, ir.Compare(_BOOL, ">=", n, _i(LANES)), full, part)


def _is_const(e: ir.Expr, value: int) -> bool:
    return isinstance(e, ir.Const) and e.value == value


def shuffled(e: ir.Intrinsic, scratch: ir.Variable) -> ir.Expr:
    """The value a shuffle reads: its source lane's entry (CUDA's rule for ``width``, 32
    by default), or its own when the source lane does not exist (the edges of
    ``shfl_up``/``shfl_down``, a partial last sub-group)."""
    k = ir.Cast(WEAK_INT, e.args[1])
    width = e.args[2] if len(e.args) > 2 else _i(0)
    w = _i(LANES) if _is_const(width, 0) else ir.Cast(WEAK_INT, width)
    me = lane()
    low = _op("bitand", me, _op("sub", w, _i(1)))  # lane within its group of w
    base = _op("sub", me, low)
    if e.name == "shfl":
        src = _op("add", base, _op("bitand", k, _op("sub", w, _i(1))))
    elif e.name == "shfl_up":
        src = ir.Select(WEAK_INT, ir.Compare(_BOOL, ">=", low, k), _op("sub", me, k), me)
    elif e.name == "shfl_down":
        fits = ir.Compare(_BOOL, "<", _op("add", low, k), w)
        src = ir.Select(WEAK_INT, fits, _op("add", me, k), me)
    else:  # shfl_xor: CUDA lets a lane read earlier groups of w lanes, never later ones
        other = _op("bitxor", me, k)
        other_base = _op("sub", other, _op("bitand", other, _op("sub", w, _i(1))))
        later = ir.Compare(_BOOL, ">", other_base, base)
        src = ir.Select(WEAK_INT, later, me, other)
    ok = ir.Logical(
        _BOOL, "and", ir.Compare(_BOOL, ">=", src, _i(0)), ir.Compare(_BOOL, "<", src, lane_count())
    )
    ref = ir.Ref(scratch.type, scratch)
    theirs = ir.Load(e.type, ref, [_op("add", lane_base(), src)], flat=True)
    mine = ir.Load(e.type, ref, [regions.WI], flat=True)
    return ir.Select(e.type, ok, theirs, mine)


def reduction(loc, name: str, scratch: ir.Variable, result: ir.Variable, j: ir.Variable,
              on: ir.Variable | None = None):  # fmt: skip
    """Statements setting ``result`` to the sum/min/max of this sub-group's entries, or to
    their vote (``ballot``, ``all_sync``, ``any_sync``), or to the lanes whose entry equals
    this work-item's (``match_any_sync``, among the lanes whose ``on`` flag is set) (``j``:
    a fresh loop variable)."""
    t = result.type
    ref = ir.Ref(scratch.type, scratch)
    if name in ("ballot", "all_sync", "any_sync"):
        return _vote(loc, name, ref, result, j)
    if name == "match_any_sync":
        return _match(loc, scratch, result, j, on)
    op = {"warp_sum": "add", "warp_min": "min", "warp_max": "max"}[name]
    first = ir.Assign(loc, result, ir.Load(t, ref, [lane_base()], flat=True))
    item = ir.Load(t, ref, [_op("add", lane_base(), ir.Ref(WEAK_INT, j))], flat=True)
    step = ir.Assign(loc, result, ir.Binary(t, op, ir.Ref(t, result), item))
    loop = ir.ForRange(loc, j, _i(1), lane_count(), _i(1), 1, [step])
    return [first, loop]


def _vote(loc, name: str, ref: ir.Ref, result: ir.Variable, j: ir.Variable) -> list[ir.Stmt]:
    """The entries of the work-items that did not run the vote are False (all_sync's are
    its "no": true when no entry is set)."""
    t = result.type
    jr = ir.Ref(WEAK_INT, j)
    item = ir.Load(_BOOL, ref, [_op("add", lane_base(), jr)], flat=True)
    if name == "ballot":
        first = ir.Assign(loc, result, ir.Const(t, 0))
        bit = ir.Binary(t, "lshift", ir.Cast(t, item), ir.Cast(t, jr))
        step = ir.Assign(loc, result, ir.Binary(t, "bitor", ir.Ref(t, result), bit))
    else:  # any_sync: some entry set; all_sync: none of the "no" entries set
        first = ir.Assign(loc, result, ir.Const(t, False))
        step = ir.Assign(loc, result, ir.Logical(t, "or", ir.Ref(t, result), item))
        if name == "all_sync":
            flip = ir.Assign(loc, result, ir.Unary(t, "not", ir.Ref(t, result)))
            return [first, ir.ForRange(loc, j, _i(0), lane_count(), _i(1), 1, [step]), flip]
    return [first, ir.ForRange(loc, j, _i(0), lane_count(), _i(1), 1, [step])]


def _match(loc, scratch, result, j, on) -> list[ir.Stmt]:
    """``match_any_sync``: the lanes that run it (``on``) whose entry equals this
    work-item's (integers: floats arrive as their bits)."""
    t = result.type
    ref = ir.Ref(scratch.type, scratch)
    vt = scratch.type.dtype
    jr = ir.Ref(WEAK_INT, j)
    theirs = ir.Load(scalar(vt), ref, [_op("add", lane_base(), jr)], flat=True)
    mine = ir.Load(scalar(vt), ref, [regions.WI], flat=True)
    bit = ir.Binary(t, "lshift", ir.Const(t, 1), ir.Cast(t, jr))
    lane_on = ir.Load(_BOOL, ir.Ref(on.type, on), [_op("add", lane_base(), jr)], flat=True)
    same = ir.Logical(_BOOL, "and", lane_on, ir.Compare(_BOOL, "==", theirs, mine))
    step = ir.If(
        loc, same, [ir.Assign(loc, result, ir.Binary(t, "bitor", ir.Ref(t, result), bit))], []
    )
    first = ir.Assign(loc, result, ir.Const(t, 0))
    return [first, ir.ForRange(loc, j, _i(0), lane_count(), _i(1), 1, [step])]
