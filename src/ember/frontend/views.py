"""Views inside kernels (a mixin of :class:`~ember.frontend.typer.FunctionTyper`).

``x[i, :]``, ``x[lo:hi]``, ``x[::2]``, ``x[:, j]`` and ``x[i]`` on a 2-d array make a view: an
array value that shares ``x``'s memory (global, shared, per-thread or constant), which can be
indexed, sliced again, measured (``.shape``, ``len``) and passed to device functions.  A
view costs an offset computation and, when its extents are not compile-time constants, a
small struct (pointer, shape, strides) in registers; nothing is copied.

Semantics follow NumPy for the cases kernels meet: a constant negative index or bound counts
from the end; slice bounds are clamped into the extent (run-time bounds too, with two
min/max operations each); the step must be a constant.  A run-time negative index is not
wrapped (as for element access).

Layout: a view of a contiguous array is contiguous when it keeps a run of whole trailing
axes (``x[i]``, ``x[i, :]``, ``x[lo:hi]``, ``x[lo:hi, :]``); other views carry strides.  A
view of a per-block or per-thread array with a static shape keeps a static shape when its
extents are constants (``s[warp, :]`` of a ``(8, 32)`` shared array is a 32-element pointer).
"""

from __future__ import annotations

import ast

from ember.errors import KernelSyntaxError, KernelTypeError
from ember.frontend import ir
from ember.frontend.operators import fold, minmax
from ember.frontend.passes import is_pure
from ember.frontend.types import WEAK_INT, Array, Scalar, describe


class ViewTyper:
    """``array[...]`` with slices or fewer indices than axes."""

    def stride_of(self, array: ir.Expr, axis: int) -> ir.Expr:
        """The distance in elements between neighbours along ``axis``."""
        t = array.type
        if t.layout == "A":
            return ir.Field(WEAK_INT, array, "strides", axis)
        stride: ir.Expr = ir.Const(WEAK_INT, 1)
        for k in range(axis + 1, t.ndim):
            stride = _mul(stride, self.extent(array, k))
        return stride

    def view(self, array: ir.Expr, parts: list, node: ast.AST) -> ir.Expr:
        """The view ``array[parts]`` (a part is an index - an AST node or a typed value - an
        ``ast.Slice``, or None: the whole axis)."""
        t = array.type
        if not isinstance(array, ir.Ref) and not self.no_spill:
            array = self.spill(array, node, "em_view")  # x[i][lo:hi]: evaluate x[i] once
        if len(parts) > t.ndim:
            raise self.fail(
                KernelTypeError, f"too many indices for {describe(t)}: {len(parts)}", node
            )
        parts = [*parts, *[None] * (t.ndim - len(parts))]
        offset: ir.Expr = ir.Const(WEAK_INT, 0)
        shape, strides, kinds = [], [], []
        ints, axes = [], []
        for k, part in enumerate(parts):
            stride = self.stride_of(array, k)
            if part is None or isinstance(part, ast.Slice):
                start, length, step, full = self._slice(part, array, k, node)
                offset = _add(offset, _mul(start, stride))
                shape.append(length)
                strides.append(_mul(stride, ir.Const(WEAK_INT, step)))
                kinds.append("full" if full else ("slice" if step == 1 else "step"))
            else:
                where = part if isinstance(part, ast.AST) else node
                i = self._index(self._item(part), array, k, where)
                ints.append(i)
                axes.append(k)
                kinds.append("int")
        checks = self.index_checks(array, ints, node, axes)
        for i, k in zip(ints, axes, strict=True):
            offset = _add(offset, _mul(_widen(i), self.stride_of(array, k)))
        layout = "C" if t.layout == "C" and _contiguous(kinds) else "A"
        static = (
            tuple(s.value for s in shape) if all(isinstance(s, ir.Const) for s in shape) else None
        )
        if t.is_pointer and layout == "C" and static is not None:
            vt = Array(t.dtype, len(shape), "C", t.space, static)
            return ir.View(vt, array, offset, checks=checks)
        vt = Array(t.dtype, len(shape), layout, t.space, None)
        return ir.View(vt, array, offset, shape, strides if layout == "A" else [], checks)

    def _slice(self, part, array: ir.Expr, axis: int, node: ast.AST):
        """(start, length, step, covers the whole axis) of one slice of ``array``."""
        extent = self.extent(array, axis)
        if part is None:
            return ir.Const(WEAK_INT, 0), extent, 1, True
        step = 1
        if part.step is not None:
            v = self.value(part.step)
            if not (isinstance(v, ir.Const) and isinstance(v.value, int)) or v.value == 0:
                raise self.fail(
                    KernelTypeError, "a slice step in a kernel must be a non-zero constant "
                    "integer", part.step, "e.g. x[::2] or x[::-1]",
                )  # fmt: skip
            step = int(v.value)
        lo = self._bound(part.lower, extent)
        hi = self._bound(part.upper, extent)
        zero, one = ir.Const(WEAK_INT, 0), ir.Const(WEAK_INT, 1)
        if step > 0:
            start = zero if lo is None else _clamp(lo, zero, extent)
            stop = extent if hi is None else _clamp(hi, start, extent)
            span = _sub(stop, start)
        else:
            last = _sub(extent, one)
            before = ir.Const(WEAK_INT, -1)
            start = last if lo is None else _clamp(lo, before, last)
            stop = before if hi is None else _clamp(hi, before, start)
            span = _sub(start, stop)
        n = abs(step)
        length = span if n == 1 else _floordiv(_add(span, ir.Const(WEAK_INT, n - 1)), n)
        full = step == 1 and part.lower is None and part.upper is None
        return start, length, step, full

    def _bound(self, node: ast.expr | None, extent: ir.Expr) -> ir.Expr | None:
        if node is None:
            return None
        e = self.scalar_of(self.value(node), node)
        if not (isinstance(e.type, Scalar) and e.type.dtype.is_integer):
            raise self.fail(
                KernelTypeError, f"slice bounds must be integers, got {describe(e.type)}", node
            )
        if isinstance(e, ir.Const) and e.value < 0:  # counted from the end, as in Python
            return _add(extent, ir.Const(WEAK_INT, int(e.value)))
        if not is_pure(e):
            e = self.spill(e, node)
        return _widen(e)

    def refuse_slice_store(self, node: ast.AST) -> Exception:
        return self.fail(
            KernelSyntaxError, "assigning to a slice is not supported in kernels", node,
            "assign the elements one at a time in a loop",
        )  # fmt: skip


def _contiguous(kinds: list[str]) -> bool:
    """Whether a view of a C-contiguous array keeps C order: integer indices, then one
    slice with step 1, then whole axes."""
    k = 0
    while k < len(kinds) and kinds[k] == "int":
        k += 1
    if k == len(kinds):
        return True
    if kinds[k] not in ("slice", "full"):
        return False
    return all(x == "full" for x in kinds[k + 1 :])


def _widen(e: ir.Expr) -> ir.Expr:
    return e if e.type == WEAK_INT else ir.Cast(WEAK_INT, e)


def _mul(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    if isinstance(a, ir.Const) and a.value == 1:
        return b
    if isinstance(b, ir.Const) and b.value == 1:
        return a
    if (isinstance(a, ir.Const) and a.value == 0) or (isinstance(b, ir.Const) and b.value == 0):
        return ir.Const(WEAK_INT, 0)
    return fold(ir.Binary(WEAK_INT, "mul", a, b))


def _add(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    if isinstance(a, ir.Const) and a.value == 0:
        return b
    if isinstance(b, ir.Const) and b.value == 0:
        return a
    return fold(ir.Binary(WEAK_INT, "add", a, b))


def _sub(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    if isinstance(b, ir.Const) and b.value <= 0:
        return _add(a, ir.Const(WEAK_INT, -b.value))
    return fold(ir.Binary(WEAK_INT, "sub", a, b))


def _floordiv(a: ir.Expr, n: int) -> ir.Expr:
    return fold(ir.Binary(WEAK_INT, "floordiv", a, ir.Const(WEAK_INT, n)))


def _clamp(e: ir.Expr, low: ir.Expr, high: ir.Expr) -> ir.Expr:
    return minmax("min", minmax("max", e, low), high)
