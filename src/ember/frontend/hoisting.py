"""IR passes that move declarations and queries to where every target accepts them.

* :func:`hoist_shared` - a shared array declared in a device function (CUDA allows
  ``__shared__`` there, OpenCL only at kernel scope) becomes a hidden trailing parameter of
  that function and of every function that calls it; the kernel declares it once.  As in
  CUDA, every call of the function in a block sees the same array.
* :func:`hoist_thread_queries` - thread-index and launch-size queries (``block_dim``,
  ``thread_idx``...) used inside a loop are read once, into a variable, at the top of the
  function.  They are constant for a thread's life, so this changes nothing but it works
  around PoCL 3.1 miscompiling ``get_local_size`` in a loop whose body has a barrier (a
  silently wrong reduction in ``while s < ember.block_dim.x``).
"""

from __future__ import annotations

from ember.frontend import ir, rewrite

# Queries whose value is fixed for the life of a thread.
THREAD_QUERIES = frozenset(
    {"thread_idx", "block_idx", "block_dim", "grid_dim", "global_id", "global_size",
     "warp_size", "lane_id"}
)  # fmt: skip


def _functions(program: ir.Program) -> list[ir.Function]:
    return [*program.functions, program.kernel]  # callees first


# ------------------------------------------------------------------------- shared arrays


def hoist_shared(program: ir.Program, specials: list | None = None) -> ir.Program:
    """Make device functions' shared arrays hidden parameters declared by the kernel.

    ``specials``: (variable, uses) pairs of pointers the kernel gets from elsewhere (the
    warp scratch: the dynamic shared memory; the grid barrier: a kernel parameter), given
    to every device function for which ``uses(fn)`` holds and to their callers."""
    specials = specials or []
    for fn in _functions(program):
        hoisted = []
        if not fn.is_kernel:
            own = [s for s in fn.body if isinstance(s, ir.ArrayDecl) and _shared(s.var)]
            fn.body = [s for s in fn.body if not (isinstance(s, ir.ArrayDecl) and _shared(s.var))]
            hoisted = [s.var for s in own]
            for v in hoisted:
                v.owner = fn.name  # type: ignore[attr-defined]
            hoisted += [var for var, uses in specials if uses(fn)]
        for callee in fn.callees:
            hoisted += [v for v in callee.hoisted if not any(v is h for h in hoisted)]
        if fn.is_kernel:
            special = [var for var, _ in specials]
            fn.hoisted = [v for v in hoisted if not any(v is s for s in special)]
            fn.body = [*(ir.ArrayDecl(fn.loc, v) for v in fn.hoisted), *fn.body]
        else:
            fn.hoisted = hoisted
    return program


def _shared(var: ir.Variable) -> bool:
    return getattr(var.type, "space", None) == "shared"


def hoisted_name(fn: ir.Function, var: ir.Variable) -> str:
    """The C name of a hoisted shared array inside function ``fn``."""
    owner = getattr(var, "owner", None)
    if owner is None or owner == fn.name:
        return var.name
    return f"em_sh_{owner}_{var.name}"


WARP_OPS = ir.WARP_OPS | {"lane_id", "warp_size", "block_any"}


def uses_warp(fn: ir.Function) -> bool:
    """Whether ``fn`` itself calls a warp operation."""
    return _calls(fn, WARP_OPS)


def uses_grid_sync(fn: ir.Function) -> bool:
    """Whether ``fn`` itself calls ``grid_sync``."""
    return _calls(fn, {"grid_sync"})


def _calls(fn: ir.Function, names) -> bool:
    return any(isinstance(e, ir.Intrinsic) and e.name in names for e in rewrite.all_exprs(fn.body))


# ------------------------------------------------------------------------- thread queries


def hoist_thread_queries(program: ir.Program) -> ir.Program:
    """Read the thread queries used inside loops once, at the top of each function."""
    for fn in _functions(program):
        found: dict[tuple[str, int], ir.Variable] = {}

        def replace(e: ir.Expr, found=found) -> ir.Expr:
            if not (isinstance(e, ir.Intrinsic) and e.name in THREAD_QUERIES):
                return e
            axis = e.args[0].value if e.args else 0
            key = (e.name, axis)
            if key not in found:
                suffix = f"_{'xyz'[axis]}" if e.args else ""
                found[key] = ir.Variable(f"em_{e.name}{suffix}", e.type, e.name)
            return ir.Ref(e.type, found[key])

        _in_loops(fn.body, replace)
        if found:
            reads = [
                ir.Assign(fn.loc, var, _query(name, axis, var))
                for (name, axis), var in found.items()
            ]
            fn.locals += list(found.values())
            at = _after_declarations(fn.body)
            fn.body[at:at] = reads
    return program


def _query(name: str, axis: int, var: ir.Variable) -> ir.Intrinsic:
    args = [] if name in ("warp_size", "lane_id") else [ir.Const(var.type, axis)]
    return ir.Intrinsic(var.type, name, args)


def _in_loops(body: list[ir.Stmt], f) -> None:
    for s in body:
        if isinstance(s, ir.ForRange | ir.While):
            rewrite.map_stmt(s, f)
            rewrite.map_body(s.body, f)
        else:
            for inner in rewrite.nested(s):
                _in_loops(inner, f)


def _after_declarations(body: list[ir.Stmt]) -> int:
    k = 0
    while k < len(body) and isinstance(body[k], ir.ArrayDecl):
        k += 1
    return k
