"""Typing rules of operators: result types (NumPy 2 / NEP 50), casts and constant folding.

Each function takes typed IR operands and returns a typed IR expression whose operands
already have the computation type.  Mistakes raise :class:`OperatorError` (message + hint);
the typer adds the source position.

Semantics (also in ``docs/design/compiler.md``):

* ``+ - * & | ^ << >>`` compute in the promoted type; integer results wrap (two's
  complement).  Operations on two bools other than ``& | ^`` are refused.
* ``/`` is true division: integer (and bool) operands give ``float64`` (a Python float for
  two weak ints), float operands keep their promoted float type.
* ``//`` and ``%`` round toward negative infinity like Python and NumPy; ``x % y`` has the
  sign of ``y``; integer division by zero gives 0 (NumPy's result, without the warning).
* ``**`` on integers is integer power (a negative constant exponent is refused; at run time it
  gives 0 unless the base is 1 or -1); on floats it is ``pow``.
* Comparisons compare in the promoted type, except a Python int against a strong integer,
  which compares in ``int64`` (``uint64`` for ``uint64``) so ``u8 < 300`` is exact.
* A Python int literal that does not fit a strong integer type it meets is an error, like
  NumPy's ``OverflowError``; Python int values computed at run time wrap instead.
* Complex numbers take ``+ - * / **``, ``== !=`` and unary ``-``/``+``; they have no order
  (``<``, ``min``, ``max`` are refused, as in the Array API), no ``//``/``%`` (NumPy 2) and no
  conversion to a real type (``z.real``, ``z.imag`` or ``abs(z)`` say which number is meant).
"""

from __future__ import annotations

import warnings

from ember import dtypes
from ember.frontend import ir
from ember.frontend.types import (
    BOOL,
    FLOAT64,
    INT64,
    WEAK_FLOAT,
    Scalar,
    describe,
    promote,
    scalar,
)


class OperatorError(Exception):
    """A type mistake in an operation: ``message`` and an optional ``hint``."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint


SYMBOL = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
    "pow": "**", "lshift": "<<", "rshift": ">>", "bitand": "&", "bitor": "|", "bitxor": "^",
}  # fmt: skip
_BOOL_OK = {"bitand", "bitor", "bitxor", "truediv"}
_INT_ONLY = {"lshift", "rshift", "bitand", "bitor", "bitxor"}
_COMPLEX_OK = {"add", "sub", "mul", "truediv", "pow"}
_NO_ORDER_HINT = "compare abs(z), z.real or z.imag instead"


def _scalar_operand(e: ir.Expr, what: str) -> Scalar:
    if isinstance(e.type, Scalar):
        return e.type
    hint = None
    if describe(e.type).startswith("array"):
        hint = "index the array to get one element, e.g. x[i]; kernels work element by element"
    raise OperatorError(f"cannot use {describe(e.type)} in {what}", hint)


def binary(op: str, left: ir.Expr, right: ir.Expr) -> ir.Expr:
    """``left <op> right`` (op names: see :data:`SYMBOL`)."""
    sym = SYMBOL[op]
    lt = _scalar_operand(left, f"'{sym}'")
    rt = _scalar_operand(right, f"'{sym}'")
    t = promote(lt, rt)
    kind = t.dtype.kind
    if kind == "b" and op not in _BOOL_OK:
        raise OperatorError(
            f"cannot apply '{sym}' to two bools",
            "convert first, e.g. int(a) + int(b), or use & | ^ for logic",
        )
    if kind == "c" and op not in _COMPLEX_OK:
        raise OperatorError(
            f"'{sym}' is not defined for complex numbers ({describe(lt)} and {describe(rt)})",
            "use + - * / ** on complex numbers; z.real and z.imag are floats",
        )
    if op in _INT_ONLY and kind == "f":
        raise OperatorError(
            f"'{sym}' needs integers, got {describe(lt)} and {describe(rt)}",
            "convert with int(x) or ember.int32(x) first",
        )
    if op in ("lshift", "rshift") and kind == "b":
        raise OperatorError(f"'{sym}' needs integers, got two bools", "convert with int(x)")
    if op == "truediv" and kind not in "fc":
        t = WEAK_FLOAT if t.weak else FLOAT64
    if op == "pow" and kind in "iu" and isinstance(right, ir.Const) and right.value < 0:
        raise OperatorError(
            "integers to negative integer powers are not allowed (as in NumPy)",
            "make the base a float: float(x) ** -1",
        )
    result = ir.Binary(t, op, cast(left, t), cast(right, t))
    return fold(result)


def minmax(op: str, left: ir.Expr, right: ir.Expr) -> ir.Expr:
    """Python's ``min``/``max`` of two numbers: the first wins ties and unordered (NaN)."""
    lt = _scalar_operand(left, f"{op}()")
    rt = _scalar_operand(right, f"{op}()")
    t = promote(lt, rt)
    if t.dtype.is_complex:
        raise OperatorError(f"{op}() of complex numbers: complex numbers have no order",
                            _NO_ORDER_HINT)  # fmt: skip
    return fold(ir.Binary(t, op, cast(left, t), cast(right, t)))


def compare(op: str, left: ir.Expr, right: ir.Expr) -> ir.Expr:
    """``left <op> right`` for ``< <= > >= == !=``; a bool."""
    lt = _scalar_operand(left, f"'{op}'")
    rt = _scalar_operand(right, f"'{op}'")
    t = promote(lt, rt)
    if t.dtype.is_complex and op not in ("==", "!="):
        raise OperatorError(f"'{op}' of complex numbers: complex numbers have no order",
                            _NO_ORDER_HINT)  # fmt: skip
    if lt.weak != rt.weak and t.dtype.is_integer and (lt.dtype.is_integer and rt.dtype.is_integer):
        t = scalar(dtypes.uint64) if t.dtype is dtypes.uint64 else INT64
    result = ir.Compare(BOOL, op, cast(left, t, check=False), cast(right, t, check=False))
    return fold(result)


def unary(op: str, operand: ir.Expr) -> ir.Expr:
    """``-x``, ``+x``, ``~x`` or ``not x``."""
    if op == "not":
        return fold(ir.Unary(BOOL, "not", truth(operand)))
    sym = {"neg": "-", "pos": "+", "invert": "~"}[op]
    t = _scalar_operand(operand, f"unary '{sym}'")
    if op == "pos":
        if t.dtype.kind == "b":
            raise OperatorError("cannot apply unary '+' to a bool", "convert with int(x)")
        return operand
    if op == "neg" and t.dtype.kind == "b":
        raise OperatorError("cannot negate a bool (as in NumPy)", "use 'not x' or ~x")
    if op == "invert":
        if t.dtype.is_inexact:
            raise OperatorError(f"'~' needs an integer or bool, got {describe(t)}")
        if t.dtype.kind == "b":
            return fold(ir.Unary(BOOL, "not", operand))
    return fold(ir.Unary(t, op, operand))


def truth(e: ir.Expr) -> ir.Expr:
    """``e`` as a condition (``bool(e)``): numbers compare with zero."""
    if isinstance(e.type, Scalar):
        if e.type.dtype.kind == "b":
            return e
        zero = 0j if e.type.dtype.is_complex else 0
        return fold(ir.Compare(BOOL, "!=", e, ir.Const(e.type, zero)))
    hint = None
    if describe(e.type).startswith("array"):
        hint = "compare an element instead, e.g. x[i] > 0"
    raise OperatorError(f"the truth value of {describe(e.type)} is not defined", hint)


def logical(op: str, left: ir.Expr, right: ir.Expr) -> ir.Expr:
    """Short-circuit ``and`` / ``or`` of two conditions."""
    return fold(ir.Logical(BOOL, op, truth(left), truth(right)))


# --------------------------------------------------------------------- casts


def fits(value: int, dtype: dtypes.DType) -> bool:
    """Whether the Python int ``value`` is representable in integer ``dtype``."""
    if dtype.kind == "u":
        return 0 <= value < (1 << dtype.bits)
    return -(1 << (dtype.bits - 1)) <= value < (1 << (dtype.bits - 1))


def cast(e: ir.Expr, t: Scalar, check: bool = True) -> ir.Expr:
    """``e`` converted to ``t`` (a :class:`~ember.ir.Cast`, or a new constant).

    ``check``: refuse a Python int literal that does not fit a strong integer type.
    """
    if e.type == t:
        return e
    if isinstance(e.type, Scalar) and e.type.dtype.is_complex and not t.dtype.is_complex:
        if t.dtype.kind == "b":  # 0 + 0j is False, anything else True (the Array API's rule)
            return truth(e)
        raise OperatorError(
            f"cannot convert {describe(e.type)} to {describe(t)}: which part is meant?",
            "use z.real, z.imag or abs(z) (the Array API refuses complex-to-real casts)",
        )
    if isinstance(e, ir.Const) and isinstance(e.type, Scalar):
        src = e.type
        if check and src.weak and not src.dtype.is_float and t.dtype.is_integer and not t.weak:
            if not fits(e.value, t.dtype):
                raise OperatorError(
                    f"Python integer {e.value} is out of bounds for {t.dtype.name} "
                    "(NumPy raises OverflowError here)",
                    f"use a value in range, or convert explicitly: ember.{t.dtype.name}(...)",
                )
        value = convert_constant(e.value, t)
        if value is not None:
            return ir.Const(t, value)
    return ir.Cast(t, e)


def convert_constant(value, t: Scalar):
    """``value`` converted to type ``t`` as NumPy ``astype`` does; None if undefined in C."""
    import numpy as np

    if t.dtype.kind == "b":
        return bool(value)
    if t.dtype.is_complex:
        return complex(np.array(value).astype(t.dtype.numpy).item())
    if isinstance(value, float) and t.dtype.is_integer:
        if value != value or value in (float("inf"), float("-inf")):
            return None
        value = int(value)  # truncation toward zero, as C does
        if not fits(value, t.dtype):
            return None  # out-of-range float -> int is undefined in C; leave to run time
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if t.dtype is dtypes.bfloat16:  # no NumPy dtype: Ember's own rounding
            return float(dtypes.bfloat16_values(dtypes.bfloat16_bits(float(value))))
        if t.dtype.is_integer:
            return int(
                np.array(int(value))
                .astype(np.int64 if value < 0 else np.uint64)
                .astype(t.dtype.numpy)
                .item()
            )
        return float(np.array(value).astype(t.dtype.numpy).item())


# --------------------------------------------------------------------- folding

_NUMPY_OPS = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "lshift": "left_shift",
    "rshift": "right_shift", "bitand": "bitwise_and", "bitor": "bitwise_or",
    "bitxor": "bitwise_xor", "<": "less", "<=": "less_equal", ">": "greater",
    ">=": "greater_equal", "==": "equal", "!=": "not_equal",
}  # fmt: skip


def _np_value(c: ir.Const):
    if c.type.dtype is dtypes.bfloat16:  # computed in float32, rounded by _from_np
        import numpy as np

        return np.float32(c.value)
    return c.type.dtype.numpy.type(c.value)


def _from_np(value, t: Scalar):
    if t.dtype.kind == "b":
        return bool(value)
    if t.dtype is dtypes.bfloat16:
        return convert_constant(float(value), t)
    if t.dtype.is_complex:
        return complex(value)
    return int(value) if t.dtype.is_integer else float(value)


def fold(e: ir.Expr) -> ir.Expr:
    """Evaluate ``e`` now when its operands are constants (with NumPy's exact semantics)."""
    import numpy as np

    if isinstance(e, ir.Unary) and isinstance(e.operand, ir.Const):
        v = e.operand.value
        if e.op == "not":
            return ir.Const(BOOL, not v)
        with np.errstate(all="ignore"):
            r = (
                np.negative(_np_value(e.operand))
                if e.op == "neg"
                else np.invert(_np_value(e.operand))
            )
        return ir.Const(e.type, _from_np(r, e.type))
    if isinstance(e, ir.Logical) and isinstance(e.left, ir.Const):
        decided = (e.op == "and") != bool(e.left.value)
        return ir.Const(BOOL, bool(e.left.value)) if decided else e.right
    if not isinstance(e, ir.Binary | ir.Compare):
        return e
    if not (isinstance(e.left, ir.Const) and isinstance(e.right, ir.Const)):
        return e
    a, b = _np_value(e.left), _np_value(e.right)
    if e.op in ("min", "max"):
        pick = (b < a) if e.op == "min" else (b > a)
        return ir.Const(e.type, _from_np(b if pick else a, e.type))
    if e.op in ("lshift", "rshift") and not 0 <= int(b) < e.left.type.dtype.bits:
        return e  # undefined in C: leave it to run time
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = getattr(np, _NUMPY_OPS[e.op])(a, b)
    except (ValueError, ZeroDivisionError, OverflowError, TypeError):
        return e
    return ir.Const(e.type, _from_np(r, e.type))
