"""Complex numbers in kernels (a mixin of :class:`~ember.frontend.typer.FunctionTyper`).

``complex64`` and ``complex128`` values are scalars like any other: array elements, kernel
arguments (a Python ``complex`` is weak, NEP 50, like a Python float), literals (``1j``),
and the results of ``complex(re, im)``, ``ember.complex64(re, im)`` and casts.  On top of the
operators (:mod:`ember.frontend.operators`) they have:

* ``z.real``, ``z.imag`` (floats of the part's dtype) and ``z.conjugate()`` / ``z.conj()``;
  on real numbers ``x.real`` is ``x``, ``x.imag`` is 0 and ``x.conjugate()`` is ``x``, as in
  Python and NumPy;
* ``abs(z)`` (the modulus, a float: ``hypot``), ``ember.conj``, ``ember.real``,
  ``ember.imag``, ``ember.angle`` (``atan2(imag, real)``);
* the math functions of :data:`COMPLEX_MATH` (``ember.exp(z)``, ``ember.sqrt(z)``...) and
  ``z ** w`` / ``ember.pow``, with C99's branch cuts (those of NumPy); ``ember.isnan``,
  ``isinf`` and ``isfinite`` test both parts.

The IR spells these as intrinsics whose operand is complex (``real``, ``imag``, ``conj``,
``abs``, ``angle``, ``complex`` (two floats to a complex), the math names); the emitter
(:mod:`ember.codegen.complexes`) writes them as helper functions of the dialect.
"""

from __future__ import annotations

import ast

from ember import dtypes
from ember.errors import KernelTypeError
from ember.frontend import ir
from ember.frontend.operators import OperatorError, binary, cast
from ember.frontend.types import (
    BOOL,
    COMPLEX_MATH,
    WEAK_COMPLEX,
    WEAK_FLOAT,
    Scalar,
    describe,
    float_result,
    promote,
    scalar,
)
from ember.frontend.values import TupleVal, Value

# (COMPLEX_MATH, the math functions defined on complex numbers as NumPy's complex loops
# are, lives in frontend/types.py.)
SCALAR_METHODS = ("conjugate", "conj")


def is_complex(t) -> bool:
    return isinstance(t, Scalar) and t.dtype.is_complex


def part_type(t: Scalar) -> Scalar:
    """The type of one part of a complex ``t`` (weak stays weak: a Python complex's parts
    are Python floats)."""
    return WEAK_FLOAT if t.weak else scalar(t.dtype.real)


def complex_type(t: Scalar) -> Scalar:
    """The complex type holding a real ``t`` (a weak float or int: a Python complex)."""
    if t.weak:
        return WEAK_COMPLEX
    if t.dtype.is_complex:
        return t
    real = t.dtype if t.dtype.is_float else promote(t, scalar(dtypes.float16)).dtype
    return scalar(dtypes.complex_of(real))


def make(re: ir.Expr, im: ir.Expr) -> ir.Expr:
    """The complex number ``re + im*1j`` of two real numbers (promoted together)."""
    t = complex_type(promote(re.type, im.type))
    part = part_type(t)
    re, im = cast(re, part, check=False), cast(im, part, check=False)
    if isinstance(re, ir.Const) and isinstance(im, ir.Const):
        return ir.Const(t, complex(re.value, im.value))
    return ir.Intrinsic(t, "complex", [re, im])


def part(e: ir.Expr, which: str) -> ir.Expr:
    """``e.real`` or ``e.imag`` of a number (complex or real)."""
    t = e.type
    if not t.dtype.is_complex:
        if which == "real":
            return e
        return ir.Const(t if t.dtype.kind != "b" else scalar(dtypes.int64), 0)
    if isinstance(e, ir.Const):
        return ir.Const(part_type(t), getattr(complex(e.value), which))
    return ir.Intrinsic(part_type(t), which, [e])


def conjugate(e: ir.Expr) -> ir.Expr:
    if not e.type.dtype.is_complex:
        return e
    if isinstance(e, ir.Const):
        return ir.Const(e.type, complex(e.value).conjugate())
    return ir.Intrinsic(e.type, "conj", [e])


class ComplexTyper:
    """Attributes, methods, builtins and intrinsics of complex numbers."""

    def scalar_attribute(self, e: ir.Expr, attr: str, node: ast.AST) -> ir.Expr:
        """``x.real`` / ``x.imag`` of a number."""
        if attr in ("real", "imag"):
            return part(e, attr)
        hint = "numbers have .real and .imag (and the method .conjugate())"
        if attr in SCALAR_METHODS:
            hint = f"call it: x.{attr}()"
        raise self.fail(KernelTypeError, f"{describe(e.type)} has no attribute '{attr}'",
                        node, hint)  # fmt: skip

    def scalar_method(self, node: ast.Call) -> ir.Expr | None:
        """``x.conjugate()`` / ``x.conj()`` of a number; None when ``node`` is not one."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr in SCALAR_METHODS):
            return None
        base = self.value(func.value)
        if not (isinstance(base, ir.Expr) and isinstance(base.type, Scalar)):
            return None  # (a module's conj: the plain call path)
        if node.args or node.keywords:
            raise self.fail(KernelTypeError, f"{func.attr}() takes no arguments", node)
        return conjugate(base)

    # ------------------------------------------------------------------ builtins
    def _py_complex(self, node: ast.Call) -> ir.Expr:
        re, im = self.args_of(node, ("real", "imag"), 0)
        a = self.scalar_arg(re, node, "complex()") if re is not None else ir.Const(WEAK_FLOAT, 0.0)
        b = self.scalar_arg(im, node, "complex()") if im is not None else ir.Const(WEAK_FLOAT, 0.0)
        try:
            if not (is_complex(a.type) or is_complex(b.type)):
                result = make(a, b)
            else:  # complex(z, w) is z + w*1j, as in Python
                j = ir.Const(WEAK_COMPLEX, 1j)
                result = binary("add", a, binary("mul", b, j))
            return cast(result, WEAK_COMPLEX)  # a Python complex, as float(x) is a float
        except OperatorError as exc:
            raise self.type_error(exc, node) from None

    def complex_dtype_call(self, dtype, node: ast.Call) -> ir.Expr:
        """``ember.complex64(x)`` (a cast) or ``ember.complex64(re, im)``."""
        re, im = self.args_of(node, ("real", "imag"), 0)
        t = scalar(dtype)
        if re is None:
            return ir.Const(t, 0j)
        a = self.scalar_arg(re, node, f"{dtype.name}()")
        part_t = scalar(dtype.real)
        try:
            if im is None and is_complex(a.type):
                return cast(a, t)
            if im is None:  # a real: straight to the part's type (int64 -> complex128 ->
                # complex64 would round twice, as NumPy's astype does not)
                return make(cast(a, part_t, check=False), ir.Const(part_t, 0.0))
            b = self.scalar_arg(im, node, f"{dtype.name}()")
            return make(cast(a, part_t, check=False), cast(b, part_t, check=False))
        except OperatorError as exc:
            raise self.type_error(exc, node) from None

    # ------------------------------------------------------------------ intrinsics
    def _k_conj(self, node: ast.Call) -> ir.Expr:
        (x,) = self.args_of(node, ("x",), 1)
        return conjugate(self.scalar_arg(x, node, "conj()"))

    def _k_real(self, node: ast.Call) -> ir.Expr:
        (x,) = self.args_of(node, ("x",), 1)
        return part(self.scalar_arg(x, node, "real()"), "real")

    def _k_imag(self, node: ast.Call) -> ir.Expr:
        (x,) = self.args_of(node, ("x",), 1)
        return part(self.scalar_arg(x, node, "imag()"), "imag")

    def _k_angle(self, node: ast.Call) -> ir.Expr:
        (x,) = self.args_of(node, ("x",), 1)
        e = self.scalar_arg(x, node, "angle()")
        if not is_complex(e.type):
            e = make(e, ir.Const(e.type, 0))
        return ir.Intrinsic(part_type(e.type), "angle", [e])

    def cmath(self, name: str, node: ast.Call) -> Value:
        """``cmath.<name>(...)`` (:data:`CMATH`): Python's complex functions, whose result
        is complex for a real argument too (``cmath.sqrt(-1.0)`` is ``1j``; ``ember.sqrt``
        follows NumPy, NaN there).  A float32 argument gives complex64, the others
        complex128 (a Python number a Python complex)."""
        what = f"cmath.{name}()"
        if name == "rect":
            r, phi = (self.scalar_arg(v, node, what) for v in self.args_of(node, ("r", "phi"), 2))
            t = float_result(promote(r.type, phi.type))
            if is_complex(t):
                raise self.fail(KernelTypeError, "cmath.rect() takes real numbers", node)
            r, phi = cast(r, t, check=False), cast(phi, t, check=False)
            return make(
                binary("mul", r, ir.Intrinsic(t, "cos", [phi])),
                binary("mul", r, ir.Intrinsic(t, "sin", [phi])),
            )
        x, base = self.args_of(node, ("x", "base"), 1) if name == "log" else (
            *self.args_of(node, ("x",), 1), None)  # fmt: skip
        z = self.scalar_arg(x, node, what)
        t = complex_type(float_result(z.type))
        z = cast(z, t, check=False)
        if name == "phase":
            return ir.Intrinsic(part_type(t), "angle", [z])
        if name == "polar":
            return TupleVal([self.complex_abs(z), ir.Intrinsic(part_type(t), "angle", [z])])
        if name in ("isnan", "isinf", "isfinite"):
            return ir.Intrinsic(BOOL, name, [z])
        result = self.complex_math(name, [z], t, node)
        if base is not None:  # log(x, base): log(x) / log(base), as Python's
            b = self.scalar_arg(base, node, what)
            tb = complex_type(float_result(promote(t, b.type)))
            result = binary(
                "truediv", cast(result, tb, check=False),
                self.complex_math("log", [cast(b, tb, check=False)], tb, node),
            )  # fmt: skip
        return result

    def complex_math(self, name: str, args: list[ir.Expr], t: Scalar, node: ast.Call):
        """``name`` (a math function) on operands promoted to the complex type ``t``."""
        if name not in COMPLEX_MATH:
            raise self.fail(
                KernelTypeError, f"{name}() is not defined for complex numbers", node,
                "apply it to z.real, z.imag or abs(z)",
            )  # fmt: skip
        return ir.Intrinsic(t, name, [cast(a, t, check=False) for a in args])

    def complex_abs(self, e: ir.Expr) -> ir.Expr:
        return ir.Intrinsic(part_type(e.type), "abs", [e])
