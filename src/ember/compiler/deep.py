"""Deeply nested kernel code: compiled on a thread with a large stack, not a RecursionError.

The stages walk expressions recursively (the typer, the IR passes, the C emitter, the
cache key's scan): each level of nesting costs a few Python frames, so a 250-term sum
``x[0] + x[1] + ... + x[249]`` - a left-leaning tree 250 levels deep - exceeded Python's
recursion limit and surfaced as a raw ``RecursionError`` (issue 18).  Generated code
(SymPy, unrolled formulas) writes such expressions.

:func:`run` calls a stage as usual; only when it hits the recursion limit does it run the
stage again on a thread with a :data:`STACK_BYTES` stack and a recursion limit of
:data:`DEPTH` frames (the stack is what makes a high limit safe: the main thread's is
8 MiB).  Code nested beyond even that is a :class:`KernelSyntaxError` naming the deepest
statement.
"""

from __future__ import annotations

import ast
import sys
import threading
from typing import Any

from ember.errors import KernelSyntaxError
from ember.frontend import messages as diagnostics

STACK_BYTES = 512 << 20  # reserved address space: pages are committed only when touched
DEPTH = 60_000  # frames: ~10,000 levels of nesting
_limit_lock = threading.Lock()


def run(fn, *args, where=None) -> Any:
    """``fn(*args)``; on a ``RecursionError``, again with a deep stack (module docstring).

    ``where`` is the :class:`~ember.frontend.capture.Captured` function, for the location
    of the error when even that is not deep enough."""
    if getattr(threading.current_thread(), "_ember_deep", False):
        return fn(*args)  # already on the deep stack
    try:
        return fn(*args)
    except RecursionError:
        pass
    outcome: list = []

    def deep() -> None:
        try:
            outcome.append((True, fn(*args)))
        except BaseException as exc:  # handed back to the calling thread
            outcome.append((False, exc))

    with _limit_lock:  # the limit is the interpreter's: raised for this run only
        previous = sys.getrecursionlimit()
        size = threading.stack_size()
        try:
            threading.stack_size(STACK_BYTES)
            thread = threading.Thread(target=deep, name="ember-deep-compile", daemon=True)
            thread._ember_deep = True  # type: ignore[attr-defined]
        finally:
            threading.stack_size(size)
        sys.setrecursionlimit(max(previous, DEPTH))
        try:
            thread.start()
            thread.join()
        finally:
            sys.setrecursionlimit(previous)
    ok, value = outcome[0]
    if ok:
        return value
    if isinstance(value, RecursionError):
        raise _too_deep(where) from None
    raise value


def _too_deep(where) -> KernelSyntaxError:
    node = deepest_statement(where.tree) if where is not None else None
    loc = where.loc(node) if node is not None else None
    return diagnostics.error(
        KernelSyntaxError,
        "this code is nested too deeply to compile (more than ~10,000 levels)",
        loc,
        diagnostics.STAGE_SYNTAX,
        "split the expression into several statements with intermediate variables",
    )  # type: ignore[return-value]


def deepest_statement(tree: ast.AST) -> ast.stmt | None:
    """The statement holding the most deeply nested expression (found without recursion)."""
    best, best_depth = None, -1
    stack: list[tuple[ast.AST, int, ast.stmt | None]] = [(tree, 0, None)]
    while stack:
        node, depth, stmt = stack.pop()
        if isinstance(node, ast.stmt):
            stmt = node
        if depth > best_depth and stmt is not None:
            best, best_depth = stmt, depth
        stack.extend((child, depth + 1, stmt) for child in ast.iter_child_nodes(node))
    return best
