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
* Comparisons compare in the promoted type, except integers, which compare exactly as in
  NumPy 2: a Python int against a strong integer in ``int64`` (``u8 < 300``), a Python int
  constant out of range by its known answer (``u64 > -1``), and a signed integer or a
  run-time Python int against a ``uint64`` as an int64 with a uint64 (an emitter helper).
* A Python int literal that does not fit a strong integer type it meets is an error, like
  NumPy's ``OverflowError``; Python int values computed at run time wrap instead.  Constant
  expressions of Python ints fold exactly (Python's arithmetic, not int64's); a result
  wider than 64 bits is an error where it is used.
* Complex numbers take ``+ - * / **``, ``== !=`` and unary ``-``/``+``; they have no order
  (``<``, ``min``, ``max`` are refused, as in the Array API), no ``//``/``%`` (NumPy 2) and no
  conversion to a real type (``z.real``, ``z.imag`` or ``abs(z)`` say which number is meant).
"""

from __future__ import annotations

import operator
import warnings

from ember import dtypes
from ember.frontend import ir
from ember.frontend.types import (
    BOOL,
    FLOAT64,
    INT64,
    WEAK_FLOAT,
    WEAK_INT,
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
    if lt.dtype.kind in "biu" and rt.dtype.kind in "biu" and t.dtype.kind != "b":
        return fold(_compare_integers(op, left, right, t))
    result = ir.Compare(BOOL, op, cast(left, t, check=False), cast(right, t, check=False))
    return fold(result)


_SWAP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _compare_integers(op: str, left: ir.Expr, right: ir.Expr, t: Scalar) -> ir.Expr:
    """An exact comparison of two integers (or an integer and a bool), as NumPy 2 makes it.

    A Python int compares with a strong integer in ``int64`` (``u8 < 300`` is exact), with
    a ``uint64`` in ``uint64`` when it is a constant that fits; a Python int constant out of
    that range has a known answer (``i64 < 2**63``, ``u64 > -1``).  A run-time Python int
    with a ``uint64``, and a signed integer with a ``uint64`` (whose promoted type is
    ``float64``), compare as an ``int64`` with a ``uint64``: the emitter writes the sign
    test.  Two strong integers of one signedness compare in the promoted type."""
    lt, rt = left.type, right.type
    wide = dtypes.uint64 if t.dtype is dtypes.uint64 else dtypes.int64
    for const, other, flipped in ((right, left, False), (left, right, True)):
        if _python_int(const) and not isinstance(other, ir.Const):
            known = _outside(_SWAP[op] if flipped else op, other, const.value, wide)
            if known is not None:
                return known
    if lt.weak and rt.weak:
        return ir.Compare(BOOL, op, left, right)
    if lt.weak != rt.weak and wide is dtypes.int64:  # int64 holds both
        return ir.Compare(BOOL, op, cast(left, INT64), cast(right, INT64))
    if lt.weak == rt.weak and t.dtype.is_integer:  # the promoted type holds both
        return ir.Compare(BOOL, op, cast(left, t), cast(right, t))
    return ir.Compare(BOOL, op, _as_64(left), _as_64(right))


def _as_64(e: ir.Expr) -> ir.Expr:
    """An integer or bool operand of a mixed-sign comparison, widened to 64 bits of its
    signedness (a Python int stays a Python int: an ``int64``; a fitting constant of a
    ``uint64`` comparison becomes a ``uint64``)."""
    dt = e.type.dtype
    if e.type.weak:
        if isinstance(e, ir.Const) and e.value >= 0:
            return cast(e, scalar(dtypes.uint64))
        return e
    return cast(e, INT64 if dt.kind == "i" else scalar(dtypes.uint64), check=False)


def _outside(op: str, x: ir.Expr, value: int, wide: dtypes.DType) -> ir.Expr | None:
    """``x <op> value`` when the Python int ``value`` is outside the range of ``wide``, the
    type the comparison is made in: always true or always false, written as a comparison
    of ``x`` with a bound that has that answer (so ``x`` is still evaluated); None when
    ``value`` is in range."""
    if fits(value, wide):
        return None
    below = value < 0
    true = op in ("!=", ">", ">=") if below else op in ("!=", "<", "<=")
    x = cast(x, scalar(wide))
    return ir.Compare(BOOL, ">=" if true else "<", x, ir.Const(x.type, dtypes_min(wide)))


def dtypes_min(dt: dtypes.DType) -> int:
    """The smallest value of integer ``dt``."""
    return 0 if dt.kind == "u" else -(1 << (dt.bits - 1))


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
    if isinstance(value, int) and not fits_64(value):  # a folded Python int (no NumPy int)
        if t.dtype.is_integer:
            raise too_wide(value)
        try:
            value = float(value)
        except OverflowError:
            raise too_wide(value) from None
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
        if _python_int(e.operand):  # exactly, as Python: -(2**63) is an int64
            return _python_int_const(-v if e.op == "neg" else ~v)
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
    if isinstance(e, ir.Compare) and all(c.type.dtype.kind in "biu" for c in (e.left, e.right)):
        return ir.Const(BOOL, _PYTHON_COMPARE[e.op](int(e.left.value), int(e.right.value)))
    if _python_int(e.left) and _python_int(e.right) and e.type == e.left.type:
        return _fold_python_ints(e)
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


_PYTHON_COMPARE = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}  # fmt: skip
_PYTHON_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "bitand": operator.and_,
    "bitor": operator.or_, "bitxor": operator.xor, "min": min, "max": max,
}  # fmt: skip


def _python_int(c: ir.Expr) -> bool:
    """Whether ``c`` is a Python int constant (weak: exact, folded as Python would)."""
    return isinstance(c, ir.Const) and c.type.weak and c.type.dtype.is_integer


def fits_64(value: int) -> bool:
    """Whether a Python int can be a kernel value (``int64``, or a ``uint64`` constant)."""
    return -(1 << 63) <= value < (1 << 64)


def too_wide(value: int, shown: str | None = None) -> OperatorError:
    """The error for a Python int constant that a kernel cannot hold."""
    shown = shown or (str(value) if abs(value) < 10**30 else f"{value:.3e}")
    return OperatorError(
        f"the integer {shown} does not fit in 64 bits (a kernel's Python ints are int64, "
        "its constants at most uint64)",
        "compute it in floating point (2.0 ** 70), or with a wrapping dtype "
        "(ember.uint64(1) << 63)",
    )


def _python_int_const(value: int, shown: str | None = None) -> ir.Const:
    """A Python int constant computed by folding.  It may be wider than 64 bits (``2**64 -
    1`` folds through ``2**64``; ``x * 2**70`` converts it to a float); one that is still
    too wide where it is used is an error then (the typer checks each statement).  Beyond
    :data:`_WIDEST` bits, no use could fit: an error now."""
    if value.bit_length() > _WIDEST:
        raise too_wide(value, shown)
    return ir.Const(WEAK_INT, value)


_WIDEST = 1024  # bits: a float64 holds up to 2**1024


def _fold_python_ints(e: ir.Binary) -> ir.Expr:
    """``e`` on two Python int constants, exactly as Python computes it (NumPy's ``int64``
    would wrap: ``2**64`` is 0 there).  Where Python has no value that the kernel's rules
    share - a zero divisor (0 in kernels), a negative shift count (undefined) - the
    run-time rules decide."""
    a, b = int(e.left.value), int(e.right.value)
    op = e.op
    if op in _PYTHON_OPS:
        return _python_int_const(_PYTHON_OPS[op](a, b))
    if op in ("floordiv", "mod"):
        return _python_int_const(0 if b == 0 else (a // b if op == "floordiv" else a % b))
    if op == "rshift" and b >= 0:
        return _python_int_const(a >> b)
    if op == "lshift" and b >= 0:
        return _python_int_const(a << min(b, _WIDEST + 1), f"{a} << {b}")
    if op == "pow" and b >= 0:
        if abs(a) > 1 and b > _WIDEST:  # too wide: say so without computing it
            return _python_int_const(1 << (_WIDEST + 1), f"{a}**{b}")
        return _python_int_const(a**b)
    return e
