"""Source capture: a Python function's source, AST, file positions and the names it can see.

:func:`capture` is the first stage of the pipeline.  It reads the function's source with
``inspect``, removes the common indentation (so methods and nested functions parse), keeps
the offsets needed to report ``file:line:col`` in the original file, and gives access to the
function's globals, closure cells and builtins for name lookup.

Captured globals and closure values are read when a kernel is first compiled and then frozen
for the life of the kernel object (:meth:`Captured.lookup` memoizes), so every specialization
sees the same constants and the cache key can record them.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import inspect
import linecache
import textwrap
import weakref
from dataclasses import field
from typing import Any

from ember._records import record
from ember.errors import KernelSyntaxError

_MISSING = object()


@record(frozen=True)
class Loc:
    """A position in user source: ``line`` and ``col`` are 1-based, as editors show them."""

    filename: str
    line: int
    col: int
    end_col: int  # 1-based, exclusive: the node spans columns col .. end_col - 1
    text: str  # the whole source line, as in the file
    function: str

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}"


@record(eq=False)
class Captured:
    """One Python function ready for the typer: source, AST, positions and name lookup."""

    func: Any
    name: str
    filename: str
    first_line: int  # file line number of the first source line
    indent: int  # columns removed by dedenting
    lines: list[str]  # the original (not dedented) source lines
    tree: ast.FunctionDef
    source_hash: str
    _frozen: dict[str, Any] = field(default_factory=dict)

    def loc(self, node: ast.AST) -> Loc:
        """The file position of ``node`` (falls back to the ``def`` line)."""
        lineno = getattr(node, "lineno", None) or self.tree.lineno
        col = getattr(node, "col_offset", 0) or 0
        end_col = getattr(node, "end_col_offset", None)
        if getattr(node, "end_lineno", lineno) != lineno or end_col is None:
            end_col = None
        text = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        start = col + self.indent
        end = (end_col + self.indent) if end_col is not None else len(text.rstrip())
        return Loc(
            self.filename, self.first_line + lineno - 1, start + 1, max(end, start + 1) + 1, text,
            self.name,
        )  # fmt: skip

    def lookup(self, name: str) -> Any:
        """The value ``name`` has for the function (closure, then globals, then builtins).

        Returns :data:`MISSING` when the name is not defined.  The first result is frozen.
        """
        if name in self._frozen:
            return self._frozen[name]
        value = self._closure().get(name, _MISSING)
        if value is _MISSING:
            value = self.func.__globals__.get(name, _MISSING)
        if value is _MISSING:
            value = getattr(builtins, name, _MISSING)
        self._frozen[name] = value
        return value

    def frozen_items(self) -> list[tuple[str, Any]]:
        """The names looked up so far and their values, sorted by name (for cache keys)."""
        return sorted(self._frozen.items())

    def _closure(self) -> dict[str, Any]:
        cells = self.func.__closure__ or ()
        out = {}
        for name, cell in zip(self.func.__code__.co_freevars, cells, strict=False):
            try:
                out[name] = cell.cell_contents
            except ValueError:  # an empty cell: defined later in the enclosing function
                pass
        return out


MISSING = _MISSING


def capture(func: Any) -> Captured:
    """Capture ``func`` (a plain Python function).

    Raises
    ------
    KernelSyntaxError
        When the source is not available (lambdas, functions typed at the prompt, builtins).
    """
    try:  # a decorated function (functools.wraps): the source, globals and file of the
        func = inspect.unwrap(func)  # function itself, never half of them the wrapper's
    except ValueError:  # a __wrapped__ cycle
        pass
    name = getattr(func, "__qualname__", getattr(func, "__name__", repr(func)))
    if not inspect.isfunction(func):
        raise KernelSyntaxError(
            f"cannot compile {name!r}: only plain Python functions (def) can be kernels or "
            f"device functions, got {type(func).__name__}"
        )
    try:
        source = _source_of(func)
    except (OSError, TypeError) as exc:
        raise KernelSyntaxError(
            f"cannot read the source of {name!r} ({exc}); define kernels in a file "
            "(not at the interactive prompt or with exec) so Ember can read them"
        ) from None
    first_line, filename = source[1], source[2]
    if func.__name__ == "<lambda>":
        raise KernelSyntaxError(
            f"cannot compile a lambda ({filename}:{first_line}); use a def function"
        )
    try:
        indent, fdef, digest, original = _parsed(source)
    except (SyntaxError, StopIteration) as exc:  # source that inspect cut out oddly
        raise KernelSyntaxError(
            f"cannot parse the source of {name!r} ({filename}:{first_line}): {exc}"
        ) from None
    cap = Captured(func, func.__name__, filename, first_line, indent, list(original), fdef, digest)
    if isinstance(fdef, ast.AsyncFunctionDef):
        from ember.frontend import messages as diagnostics

        raise diagnostics.error(
            KernelSyntaxError, f"cannot compile async function {name!r}", cap.loc(fdef),
            diagnostics.STAGE_CAPTURE, "kernels and device functions are plain 'def' functions",
        )  # fmt: skip
    return cap


# The source of each code object read so far, and its parse: the array library makes many
# kernels from one factory (every elementwise operation's kernel shares its code object) and
# each kernel captures its device functions again; reading a function's lines back from its
# file (tokenizing it to find its end) and parsing them was most of a capture.  The AST is
# shared by every Captured of that code (nothing changes an AST after capture: the typer
# reads it to build the IR).  A redefined function (an edited notebook cell, a reloaded
# module) has a new code object, so it is read afresh.
_sources: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _source_of(func: Any) -> list:
    """``[lines, first line, file name, parse or None, tree or None]`` of ``func``'s source
    (the lines ``inspect.getsourcelines`` gives), kept per code object; :func:`_parsed`
    fills the parse (from the tree :func:`_block` parsed, where it read the lines)."""
    code = func.__code__
    found = _sources.get(code)
    if found is None:
        filename = inspect.getsourcefile(func) or code.co_filename
        block = _block(func, filename)
        if block is None:
            lines, first_line = inspect.getsourcelines(func)
            block = (tuple(lines), first_line, None)
        found = _sources[code] = [block[0], block[1], filename, None, block[2]]
    return found


def _block(func: Any, filename: str) -> tuple[tuple[str, ...], int, ast.Module] | None:
    """``(lines, first line, their parse)`` of ``func``'s definition, read from its file by
    indentation (None where that is not plain): from its first line (a decorator's, as
    ``co_firstlineno``) to the last code line indented past it, as ``inspect`` finds it.
    ``inspect`` tokenizes the file from there, which cost ~2 ms of a first kernel (its
    tokenizer's expressions compiled on first use).  The header may span lines (brackets
    are counted until its closing ``:``); where indentation or the count misleads (a string
    continued at the left margin, a bracket inside a string, a one-line ``def``), the
    lines read do not parse as that one definition: None, and ``inspect`` reads them."""
    lines = linecache.getlines(filename, func.__globals__)
    start = func.__code__.co_firstlineno - 1
    if not 0 <= start < len(lines):
        return None
    base = len(lines[start]) - len(lines[start].lstrip())
    header, depth, seen_def, end, body = True, 0, False, start, None
    for i in range(start, len(lines)):
        code = lines[i].split("#", 1)[0].strip()  # (a '#' in a string: see above)
        indent = len(lines[i]) - len(lines[i].lstrip())
        if not code:  # blank, or a comment: kept where code follows it, or (as inspect
            if body is not None and lines[i].strip() and indent >= body:  # does) where it
                end = i + 1  # is indented as far as the body's first line
            continue
        if not header and indent <= base:
            break  # the next statement after the definition
        if not header and body is None:
            body = indent
        if header:
            seen_def |= indent == base and code.startswith(("def ", "async def "))
            depth += sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
            header = not (seen_def and depth == 0 and code.endswith(":"))
        end = i + 1
    if header:
        return None
    block = tuple(lines[start:end])
    try:
        tree = ast.parse(textwrap.dedent("".join(block)))
    except SyntaxError:
        return None
    stmts = tree.body
    if len(stmts) != 1 or getattr(stmts[0], "name", None) != func.__code__.co_name:
        return None
    return block, start + 1, tree


def _parsed(source: list) -> tuple[int, Any, str, tuple[str, ...]]:
    """``(indent, the def's AST, the source's SHA-256, the lines without newlines)``."""
    if source[3] is None:
        lines = source[0]
        text = "".join(lines)
        tree = source[4] or ast.parse(textwrap.dedent(text))
        source[4] = None  # (the parse below keeps what is needed of it)
        fdef = next(n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
        digest = hashlib.sha256(text.encode()).hexdigest()
        source[3] = (_indent_of(lines), fdef, digest, tuple(ln.rstrip("\n") for ln in lines))
    return source[3]


def _indent_of(lines: list[str]) -> int:
    widths = [len(ln) - len(ln.lstrip()) for ln in lines if ln.strip()]
    return min(widths) if widths else 0
