"""Generic traversal of the typed IR: the sub-expressions of every node, and replacement.

One table (:data:`EXPR_FIELDS`, :data:`STMT_FIELDS`) says which fields of each node hold
expressions: a plain name is one expression, ``*name`` a list of them and ``+name`` a list
of :class:`~ember.frontend.ir.IndexCheck`.  :func:`children` reads it (analyses) and
:func:`map_expr` / :func:`map_stmt` rewrite through it (passes), so a new node kind is one
line here rather than a case in every pass.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.frontend import ir

Rewrite = Callable[[ir.Expr], ir.Expr]

EXPR_FIELDS: dict[type, tuple[str, ...]] = {
    ir.Const: (),
    ir.Ref: (),
    ir.Field: ("array",),
    ir.Load: ("array", "*index", "+checks"),
    ir.Unary: ("operand",),
    ir.Binary: ("left", "right"),
    ir.Compare: ("left", "right"),
    ir.Logical: ("left", "right"),
    ir.Cast: ("value",),
    ir.Select: ("cond", "if_true", "if_false"),
    ir.Intrinsic: ("*args",),
    ir.Call: ("*args",),
    ir.Atomic: ("array", "*index", "*args", "+checks"),
    ir.View: ("array", "offset", "*shape", "*strides", "+checks"),
}

STMT_FIELDS: dict[type, tuple[str, ...]] = {
    ir.Assign: ("value",),
    ir.Store: ("value", "array", "*index", "+checks"),
    ir.Eval: ("expr",),
    ir.If: ("cond",),
    ir.ForRange: ("start", "stop", "step"),
    ir.While: ("cond",),
    ir.Return: ("*values",),
    ir.Print: ("*items",),  # literal text items are skipped
    ir.ArrayDecl: ("*size",),
}


def _fields(node) -> tuple[str, ...]:
    table = EXPR_FIELDS if isinstance(node, ir.Expr) else STMT_FIELDS
    return table.get(type(node), ())


def children(node) -> list[ir.Expr]:
    """The expressions directly inside ``node`` (an expression or a statement's own, not
    those of nested statement bodies), in evaluation order."""
    out: list[ir.Expr] = []
    for name in _fields(node):
        value = getattr(node, name.lstrip("*+"))
        if name[0] == "+":
            out += [x for c in value for x in (c.index, c.extent)]
        elif name[0] == "*":
            out += [v for v in value if isinstance(v, ir.Expr)]
        elif value is not None:
            out.append(value)
    return out


def _replace_children(node, f: Rewrite) -> None:
    for name in _fields(node):
        attr = name.lstrip("*+")
        value = getattr(node, attr)
        if name[0] == "+":
            for c in value:
                c.index, c.extent = map_expr(c.index, f), map_expr(c.extent, f)
        elif name[0] == "*":
            setattr(node, attr, [map_expr(v, f) if isinstance(v, ir.Expr) else v for v in value])
        elif value is not None:
            setattr(node, attr, map_expr(value, f))


def map_expr(e: ir.Expr, f: Rewrite) -> ir.Expr:
    """``e`` with ``f`` applied bottom-up to every sub-expression (children in place)."""
    _replace_children(e, f)
    return f(e)


def map_stmt(s: ir.Stmt, f: Rewrite) -> None:
    """Apply ``f`` to every expression of statement ``s`` itself (not nested bodies)."""
    _replace_children(s, f)


def map_body(body: list[ir.Stmt], f: Rewrite) -> None:
    """Apply ``f`` to every expression of every statement of ``body``, nested ones too."""
    for s in body:
        map_stmt(s, f)
        for inner in nested(s):
            map_body(inner, f)


def nested(s: ir.Stmt) -> list[list[ir.Stmt]]:
    """The statement lists inside ``s`` (if/else branches, loop bodies)."""
    return [getattr(s, n) for n in ("body", "orelse") if isinstance(getattr(s, n, None), list)]


def subexprs(e: ir.Expr):
    """``e`` and every expression inside it, depth first."""
    yield e
    for c in children(e):
        yield from subexprs(c)


def all_exprs(body: list[ir.Stmt]):
    """Every expression of every statement of ``body`` (nested ones too), depth first."""
    for s in body:
        for e in children(s):
            yield from subexprs(e)
        for inner in nested(s):
            yield from all_exprs(inner)
