"""Sizes computed at launch: the extents of dynamic shared arrays as small JSON trees.

A dynamic shared array (``ember.shared(n, dtype)`` with ``n`` known only at launch) is
carved out of the launch's dynamic shared memory, so the launch must know how many bytes
to ask for before the kernel runs.  Its extents are typed IR; :func:`tree` turns one into a
JSON tree over the launch arguments, which the cache stores with the binary (never Python
source: a cache entry or bundle must not carry code) and :func:`python` turns back into a
Python expression for the generated launch function, accepting only the operations below.

Tree nodes::

    ["const", 12]              ["arg", 0, [path...]]       a scalar argument (path: tuple items)
    ["shape", 1, [path], k]    the extent k of an array argument
    ["block", k]               block_dim along axis k
    ["add" | "sub" | "mul" | "floordiv" | "min" | "max" | "lshift" | "rshift", a, b]

Layout (:func:`layout_bytes`): arrays in declaration order, each starting at a multiple of
:data:`ALIGN` bytes, then the warp-emulation scratch (8 bytes per thread of the block, and 8
for a block-wide flag) when warp operations are emulated, then ``ember.shared(0, dtype)``:
whatever the launch gives beyond (``k[grid, block, shared_bytes]``).  The kernel computes the
same offsets (codegen).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ember.frontend.types import Array, Scalar

if TYPE_CHECKING:  # a launch from the cache reads the trees; a compile makes them from the IR
    from ember.frontend import ir

ALIGN = 16  # bytes: every dynamic array starts at a multiple of this
SCRATCH_BYTES = 8  # per thread, for emulated warp operations (one 64-bit value each)
_OPS = ("add", "sub", "mul", "floordiv", "min", "max", "lshift", "rshift")


def tree(e: ir.Expr, args: dict[int, tuple[int, tuple[int, ...]]]) -> list | None:
    """``e`` as a tree over the launch, or None when the launch cannot compute it.

    ``args`` maps ``id(param variable)`` to (argument index, tuple path) for the kernel's
    parameters that keep their argument's value."""
    from ember.frontend import ir

    if isinstance(e, ir.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return ["const", int(e.value)]
    if isinstance(e, ir.Ref) and id(e.var) in args and _is_int(e.type):
        index, path = args[id(e.var)]
        return ["arg", index, list(path)]
    if isinstance(e, ir.Field) and e.name == "shape" and isinstance(e.array, ir.Ref):
        source = args.get(id(e.array.var))
        if source is not None:
            return ["shape", source[0], list(source[1]), e.axis]
        return None
    if isinstance(e, ir.Intrinsic) and e.name == "block_dim":
        return ["block", int(e.args[0].value)]
    if isinstance(e, ir.Cast) and _is_int(e.type) and _is_int(e.value.type):
        return tree(e.value, args)  # sizes are small and positive: widths do not matter
    if isinstance(e, ir.Binary) and e.op in _OPS and _is_int(e.type):
        a, b = tree(e.left, args), tree(e.right, args)
        return None if a is None or b is None else [e.op, a, b]
    return None


def _is_int(t) -> bool:
    return isinstance(t, Scalar) and t.dtype.is_integer and t.dtype.kind != "b"


def python(node: Any) -> str:
    """The Python expression of a tree, over the launch function's names (``a0, a1...``
    for the arguments and ``block``); ValueError for anything that is not a tree."""
    if not isinstance(node, list) or not node:
        raise ValueError(f"not a launch-size tree: {node!r}")
    kind = node[0]
    if kind == "const":
        return str(_int(node[1]))
    if kind == "arg":
        return f"int(a{_int(node[1])}{_path(node[2])})"
    if kind == "shape":
        return f"a{_int(node[1])}{_path(node[2])}.shape[{_int(node[3])}]"
    if kind == "block":
        return f"block[{_int(node[1])}]"
    if kind in _OPS and len(node) == 3:
        a, b = python(node[1]), python(node[2])
        if kind in ("min", "max"):
            return f"{kind}({a}, {b})"
        op = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "lshift": "<<",
              "rshift": ">>"}[kind]  # fmt: skip
        return f"({a} {op} {b})"
    raise ValueError(f"not a launch-size tree: {node!r}")


def _int(v: Any) -> int:
    if type(v) is not int:
        raise ValueError(f"not a launch-size tree item: {v!r}")
    return v


def _path(path: Any) -> str:
    if not isinstance(path, list):
        raise ValueError(f"not a launch-size path: {path!r}")
    return "".join(f"[{_int(k)}]" for k in path)


def layout(program: ir.Program) -> dict:
    """What the launch needs to size the dynamic shared memory of ``program``: each
    dynamic array's itemsize and extent trees (checked computable by the typer), and
    whether there is a warp scratch."""
    from ember.frontend import ir

    k = program.kernel
    args = {id(v): src for v, src in zip(k.params, k.param_sources, strict=True)}  # type: ignore[attr-defined]
    arrays = []
    for s in program.kernel.body:
        if isinstance(s, ir.ArrayDecl) and s.size and not is_rest(s):
            trees = [tree(e, args) for e in s.size]
            arrays.append([s.var.type.dtype.itemsize, trees])
    return {"arrays": arrays, "scratch": bool(program.warp_emulated)}


def layout_bytes(layout: dict) -> str | None:
    """The Python expression of the dynamic shared bytes a launch needs (None: none)."""
    terms = []
    for itemsize, trees in layout.get("arrays", ()):
        count = " * ".join(python(t) for t in trees) or "1"
        terms.append(f"-(-({count}) * {_int(itemsize)} // {ALIGN}) * {ALIGN}")
    if layout.get("scratch"):
        terms.append(f"(block[0] * block[1] * block[2] + 1) * {SCRATCH_BYTES}")
    return " + ".join(terms) if terms else None


def is_rest(decl: ir.ArrayDecl) -> bool:
    """Whether a declaration is ``ember.shared(0, dtype)``: the launch's dynamic shared
    memory beyond the sized arrays (its extent from the launch's bytes, a hidden argument)."""
    from ember.frontend import ir

    size = decl.size
    return len(size) == 1 and isinstance(size[0], ir.Intrinsic) and size[0].name == "dynamic_rest"


def is_dynamic(t: Array) -> bool:
    """Whether an array type is a dynamic shared array (extents known at launch)."""
    return t.space == "shared" and t.shape is None
