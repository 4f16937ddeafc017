"""A read-before-assignment check on a function's AST (Python's UnboundLocalError, early).

The typer gives each variable one type from all its assignments, so a read that comes before
every assignment would silently read an uninitialized C variable.  :func:`check_reads`
walks the statements in order with the set of names that *may* be assigned so far (any
branch counts; inside a loop, everything the loop assigns counts, since an earlier iteration
may have assigned it) and reports the first read of a local outside that set.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

_OWN_SCOPE = (
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.Lambda,
    ast.FunctionDef,
    ast.ClassDef,
)


def walk(node: ast.AST):
    """``ast.walk`` without entering nested scopes (comprehensions, lambdas, definitions)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        todo.extend(c for c in ast.iter_child_nodes(n) if not isinstance(c, _OWN_SCOPE))


def _stored(nodes: Iterable[ast.AST]) -> set[str]:
    return {
        n.id
        for node in nodes
        for n in walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def check_reads(fdef: ast.FunctionDef, local: set[str]) -> ast.Name | None:
    """The first ``Name`` that reads a local before any assignment may have run, or None."""
    assigned = {a.arg for a in fdef.args.args}
    if fdef.args.vararg is not None:
        assigned.add(fdef.args.vararg.arg)
    return _block(fdef.body, assigned, local)


def _reads(node: ast.AST | None, assigned: set[str], local: set[str]) -> ast.Name | None:
    if node is None:
        return None
    for n in walk(node):
        if (
            isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)
            and n.id in local
            and n.id not in assigned
        ):
            return n
    return None


def _block(body: list[ast.stmt], assigned: set[str], local: set[str]) -> ast.Name | None:
    for stmt in body:
        found = _statement(stmt, assigned, local)
        if found is not None:
            return found
    return None


def _statement(stmt: ast.stmt, assigned: set[str], local: set[str]) -> ast.Name | None:
    if isinstance(stmt, ast.For | ast.While):
        head = stmt.iter if isinstance(stmt, ast.For) else stmt.test
        assigned |= _stored([stmt])  # an earlier iteration may have assigned these
        return _reads(head, assigned, local) or _block(stmt.body, assigned, local)
    if isinstance(stmt, ast.If):
        found = _reads(stmt.test, assigned, local)
        if found is not None:
            return found
        then, other = set(assigned), set(assigned)
        found = _block(stmt.body, then, local) or _block(stmt.orelse, other, local)
        assigned |= then | other
        return found
    if isinstance(stmt, ast.AugAssign):
        found = _reads(stmt.value, assigned, local) or _reads(
            ast.Name(stmt.target.id, ast.Load()) if isinstance(stmt.target, ast.Name) else None,
            assigned, local,
        )  # fmt: skip
        if found is not None and not hasattr(found, "lineno"):
            found = stmt.target  # type: ignore[assignment]
        assigned |= _stored([stmt])
        return found
    if isinstance(stmt, ast.Assign | ast.AnnAssign):
        found = _reads(stmt.value, assigned, local)
        if found is None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            found = next((r for t in targets if (r := _reads(t, assigned, local))), None)
        assigned |= _stored([stmt])
        return found
    found = _reads(stmt, assigned, local)
    assigned |= _stored([stmt])
    return found


def assigned_names(tree: ast.FunctionDef) -> set[str]:
    """Names the function assigns anywhere (Python's rule for what is local)."""
    names = {a.arg for a in tree.args.args}
    if tree.args.vararg is not None:
        names.add(tree.args.vararg.arg)
    for stmt in tree.body:
        for node in walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names
