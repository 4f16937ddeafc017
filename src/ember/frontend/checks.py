"""Run-time checks and printing (a mixin of :class:`~ember.frontend.typer.FunctionTyper`).

* ``raise SomeError("message")`` and ``assert cond, "message"``: the message is a
  compile-time string; the failing thread records where it failed and ends
  (:class:`~ember.frontend.ir.Raise`).  The host raises :class:`~ember.errors.KernelError`
  at the next synchronize (``docs/design/diagnostics.md``).
* With checking on (``@ember.kernel(boundscheck=True)`` or ``EMBER_BOUNDSCHECK=1``): every
  array index that :mod:`~ember.frontend.ranges` cannot prove in range gets an
  :class:`~ember.frontend.ir.IndexCheck`, and every float -> integer conversion a range
  check (NaN, infinities and values that do not fit fail).
* ``ember.unsafe_trunc(x, dtype)``: the unchecked conversion, for code that knows its values.
* ``print(...)``: CUDA / OpenCL ``printf``; numbers, bools and string literals.
"""

from __future__ import annotations

import ast

from ember.errors import KernelSyntaxError, KernelTypeError
from ember.frontend import ir, ranges
from ember.frontend.operators import OperatorError, cast, unary
from ember.frontend.passes import is_pure
from ember.frontend.types import WEAK_INT, Scalar, as_dtype, describe, scalar
from ember.frontend.values import Static, TupleVal, Value


class CheckTyper:
    """raise, assert, print, bounds checks, checked conversions, unsafe_trunc."""

    # ------------------------------------------------------------------ raise / assert
    def stmt_Raise(self, node: ast.Raise) -> None:
        if node.exc is None:
            raise self.fail(
                KernelSyntaxError, "a bare 'raise' has nothing to re-raise in a kernel", node,
                'raise an exception with a message: raise ValueError("what went wrong")',
            )  # fmt: skip
        if node.cause is not None:
            raise self.fail(
                KernelSyntaxError, "'raise ... from ...' is not supported in kernels",
                node.cause, "raise the exception alone",
            )  # fmt: skip
        name, message = self._exception(node.exc)
        loc = self.loc(node)
        self.emit(ir.Raise(loc, ir.Site("raise", message, loc, name)))

    def _exception(self, exc: ast.expr) -> tuple[str, str]:
        """(exception class name, message) of ``ValueError("msg")`` / ``ValueError``."""
        call = exc if isinstance(exc, ast.Call) else None
        cls = self.value(call.func if call else exc)
        if not (
            isinstance(cls, Static)
            and isinstance(cls.obj, type)
            and issubclass(cls.obj, BaseException)
        ):
            raise self.fail(
                KernelTypeError, "a kernel can only raise an exception class", exc,
                'e.g. raise ValueError("x must be positive")',
            )  # fmt: skip
        args = call.args if call else []
        if call and (call.keywords or len(args) > 1 or not _is_text(args[0] if args else None)):
            raise self.fail(
                KernelTypeError, "the message of an exception raised in a kernel must be one "
                "string literal", call,
                "messages are compile-time text; write values into an array to see them",
            )  # fmt: skip
        return cls.obj.__name__, args[0].value if args else ""

    def stmt_Assert(self, node: ast.Assert) -> None:
        if node.msg is not None and not _is_text(node.msg):
            raise self.fail(
                KernelTypeError, "the message of an assert in a kernel must be a string literal",
                node.msg, "messages are compile-time text",
            )  # fmt: skip
        cond = self.condition(node.test)
        if isinstance(cond, ir.Const) and cond.value:
            return
        loc = self.loc(node)
        text = node.msg.value if node.msg is not None else ""
        site = ir.Site("assert", text or f"assertion failed: {ast.unparse(node.test)}", loc,
                       "AssertionError")  # fmt: skip
        if isinstance(cond, ir.Const):
            self.emit(ir.Raise(loc, site))
        else:
            self.emit(ir.If(loc, unary("not", cond), [ir.Raise(loc, site)], []))
            self.exit_facts = self.ranges.facts(cond)  # it holds after the assert

    # ------------------------------------------------------------------ print
    def _py_print(self, node: ast.Call) -> Value:
        if self.no_spill:
            raise self.fail(
                KernelSyntaxError, f"print() cannot be inside {self.no_spill}", node,
                "call it on a line of its own",
            )  # fmt: skip
        sep, end = " ", "\n"
        for kw in node.keywords:
            if kw.arg not in ("sep", "end") or not _is_text(kw.value):
                raise self.fail(
                    KernelTypeError, "print() in a kernel takes only sep= and end=, as string "
                    "literals", kw,
                )  # fmt: skip
            sep, end = (kw.value.value, end) if kw.arg == "sep" else (sep, kw.value.value)
        items: list = []
        for k, arg in enumerate(node.args):
            if k:
                items.append(sep)
            items.extend(self._print_item(arg))
        items.append(end)
        self.emit(ir.Print(self.loc(node), items))
        return Static(None)

    def _print_item(self, arg: ast.expr) -> list:
        if _is_text(arg):
            return [arg.value]
        v = self.value(arg)
        if isinstance(v, TupleVal):
            parts: list = ["("]
            for k, item in enumerate(v.items):
                parts += [", "] if k else []
                parts.append(self.scalar_arg(item, arg, "print()"))
            return [*parts, ",)" if len(v.items) == 1 else ")"]
        e = self.scalar_of(v, arg)
        if not isinstance(e.type, Scalar):
            raise self.fail(
                KernelTypeError, f"print() in a kernel cannot show {describe(e.type)}", arg,
                "print single elements, e.g. print(x[i])",
            )  # fmt: skip
        return [e]

    # ------------------------------------------------------------------ bounds checks
    def index_checks(self, array: ir.Expr, index: list[ir.Expr], node: ast.AST, axes=None):
        """Bounds checks for ``array[index]`` (none when checking is off or proven);
        ``axes``: the axis of each index (default: 0, 1, ...).

        Index values with side effects are first evaluated into temporaries, since a checked
        access reads its index twice (in the check and in the address)."""
        if not self.ctx.checks:
            return []
        out = []
        name = ranges.var_name(array) or "array"
        for j, i in enumerate(index):
            k = j if axes is None else axes[j]
            if self.proven(array, k, i):
                continue
            if not is_pure(i):
                i = index[j] = self.spill(i, node)
            site = ir.Site("bounds", name, self.loc(node), "IndexError", axis=k)
            out.append(ir.IndexCheck(i, self.extent(array, k), site))
        return out

    def proven(self, array: ir.Expr, axis: int, index: ir.Expr) -> bool:
        """Whether ``0 <= index < array.shape[axis]`` is known here."""
        facts = self.facts
        r = self.ranges
        return r.nonneg(index, facts) and r.below(index, array, axis, facts)

    # ------------------------------------------------------------------ conversions
    def checked(self, value: ir.Expr, node: ast.AST, source: ir.Expr | None = None) -> ir.Expr:
        """``value`` (a conversion of ``source`` just made by ``cast``) with a run-time range
        check if it is a float -> integer conversion and checking is on (NaN, infinities and
        values out of the integer's range fail).  A value that is ``source`` itself (no
        conversion was needed, e.g. an ``unsafe_trunc`` result) is left alone."""
        if value is source or not self.ctx.checks:
            return value
        if not (isinstance(value, ir.Cast) and value.site is None):
            return value
        src, dst = value.value.type, value.type
        if not (isinstance(src, Scalar) and src.dtype.is_float):
            return value
        if not (dst.dtype.is_integer and dst.dtype.kind != "b"):
            return value
        text = f"{src.dtype.name} to {'int' if dst.weak else dst.dtype.name}"
        value.site = ir.Site("convert", text, self.loc(node), "ValueError")
        return value

    def _k_unsafe_trunc(self, node: ast.Call) -> Value:
        x, dtype = self.args_of(node, ("x", "dtype"), 1)
        e = self.scalar_arg(x, node, "unsafe_trunc()")
        t = WEAK_INT
        if dtype is not None:
            dt = as_dtype(dtype.obj) if isinstance(dtype, Static) else None
            if dt is None or not dt.is_integer or dt.kind == "b":
                raise self.fail(
                    KernelTypeError, "unsafe_trunc() converts to an integer dtype", node,
                    "e.g. ember.unsafe_trunc(x, ember.int32)",
                )  # fmt: skip
            t = scalar(dt)
        try:
            return cast(e, t, check=False)
        except OperatorError as exc:
            raise self.type_error(exc, node) from None


def _is_text(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)
