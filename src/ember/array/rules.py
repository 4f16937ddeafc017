"""Type resolution of elementwise operations: NumPy 2's ufunc rules on NEP 50 promotion.

Operands are described by the kernel compiler's scalar types
(:class:`ember.frontend.types.Scalar`): arrays and NumPy scalars are *strong*, Python
``int``/``float`` are *weak*; :func:`ember.frontend.types.promote` combines them exactly as
kernels do, so an array expression and the same expression in a kernel agree.  A rule
turns the operand types into a :class:`Resolution`: the device function to apply, the
dtype operands are cast to before it (``ct``) and the result dtype (``out``).  Where NumPy
has no loop for a dtype (``-bool``, float ``&``) the rule raises ``TypeError`` naming the
operation, the dtypes and what to do.  The property tests compare every rule with NumPy.

Complex operands follow NumPy where the Array API agrees and the Array API where they
differ: ordering (``<``, ``maximum``, ``clip``, ``sort``) is refused, as are ``//``, ``%``,
``floor``/``ceil``/``trunc`` and the real-only math functions; ``abs`` of a complex array
is real, ``sign`` is ``z / |z|`` (NumPy 2).
"""

from __future__ import annotations

from typing import Any

from ember import dtypes
from ember._records import record
from ember.array import ops
from ember.dtypes import DType
from ember.frontend.types import (
    COMPLEX_MATH,
    WEAK_COMPLEX,
    WEAK_FLOAT,
    WEAK_INT,
    Scalar,
    float_result,
    promote,
    scalar,
)

BOOL, INT8, FLOAT64 = dtypes.bool_, dtypes.int8, dtypes.float64


@record(frozen=True)
class Resolution:
    """How to compute one operation: ``op`` on operands cast to ``ct``, giving ``out``.

    ``c0`` (three-operand operations) is the dtype the first operand is cast to instead.
    """

    op: Any
    ct: DType
    out: DType
    c0: DType | None = None


class Rule:
    """A ufunc's type rule; ``name`` is the public name used in error messages."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, types: tuple[Scalar, ...]) -> Resolution:
        raise NotImplementedError

    def refuse(self, types: tuple[Scalar, ...], what: str) -> TypeError:
        names = " and ".join(describe(t) for t in types)
        return TypeError(f"ember.{self.name} does not support {names}: {what}")


def describe(t: Scalar) -> str:
    if t.weak:
        return {"f": "a Python float", "c": "a Python complex"}.get(t.dtype.kind, "a Python int")
    return t.dtype.name


_ORDERED = {"maximum", "minimum", "fmax", "fmin"}
NO_ORDER = (
    "complex numbers have no order (the Array API's rule; compare ember.abs(x) or ember.real(x))"
)


def common(types: tuple[Scalar, ...]) -> Scalar:
    """NEP 50 promotion of all operand types."""
    t = types[0]
    for u in types[1:]:
        t = promote(t, u)
    return t


def strong(t: Scalar) -> DType:
    """The dtype of a promotion result (an all-weak result is Python's int64/float64)."""
    return t.dtype


def _all_bool(types) -> bool:
    return all(t.dtype.kind == "b" and not t.weak for t in types)


def no_order(dt: DType, what: str) -> None:
    """Refuse to order complex numbers (sort, max, argmin, searchsorted...): the Array API's
    rule; NumPy orders them lexicographically."""
    if dt.is_complex:
        raise TypeError(f"ember.{what} of {dt.name}: {NO_ORDER}")


def _is_factory(op) -> bool:
    """A memoized operator factory taking the compute dtype (``ops.sign_complex``)."""
    return hasattr(op, "cache_info")


# --------------------------------------------------------------------- rules
class Arithmetic(Rule):
    """``+ - *``: the promoted type; on two bools ``+`` is ``or`` and ``*`` is ``and``."""

    def __init__(self, name: str, op, bool_op=None):
        super().__init__(name)
        self.op, self.bool_op = op, bool_op

    def __call__(self, types):
        t = strong(common(types))
        if t is BOOL:
            if self.bool_op is None:
                raise self.refuse(
                    types, "subtracting booleans is not defined; use ^ or ember.logical_xor"
                )
            return Resolution(self.bool_op, BOOL, BOOL)
        return Resolution(self.op, t, t)


class IntegerLike(Rule):
    """``// % ** fmod``, squares: the promoted type; two bools compute in int8 (NumPy).
    Complex numbers only take ``**`` (``complex_ok``)."""

    def __init__(self, name: str, op, int_op=None, complex_ok: bool = False):
        super().__init__(name)
        self.op, self.int_op, self.complex_ok = op, int_op or op, complex_ok

    def __call__(self, types):
        t = strong(common(types))
        if t.is_complex and not self.complex_ok:
            raise self.refuse(types, "it is not defined for complex numbers (as in NumPy)")
        if t is BOOL:
            t = INT8
        return Resolution(self.int_op if t.kind in "iu" else self.op, t, t)


class IntegerPower(IntegerLike):
    """``**``: :class:`IntegerLike`, with ``checked_op`` for signed integers whose exponent
    is not a Python scalar (an array, a NumPy scalar): it raises on a negative exponent, as
    NumPy does.  A Python int exponent is checked on the host before the launch, so those
    kernels keep the plain (faster: no error path) ``op``."""

    def __init__(self, name: str, op, checked_op):
        super().__init__(name, op, complex_ok=True)
        self.checked_op = checked_op

    def __call__(self, types):
        res = super().__call__(types)
        if res.ct.kind == "i" and not types[-1].weak and types[-1].dtype.kind in "iub":
            return Resolution(self.checked_op, res.ct, res.out)
        return res


class TrueDivide(Rule):
    """``/``: floats and complex keep their type; integers and bools divide in float64."""

    def __call__(self, types):
        t = strong(common(types))
        if not t.is_inexact:
            t = FLOAT64
        return Resolution(ops.divide, t, t)


class Bitwise(Rule):
    """``& | ^``: integers and bools only."""

    def __init__(self, name: str, op):
        super().__init__(name)
        self.op = op

    def __call__(self, types):
        t = strong(common(types))
        if t.is_inexact:
            raise self.refuse(types, "bitwise operations need integer or bool operands")
        return Resolution(self.op, t, t)


class Shift(Rule):
    """``<< >>``: integers (two bools shift as int8); NumPy's results past the width."""

    def __init__(self, name: str, left: bool):
        super().__init__(name)
        self.left = left

    def __call__(self, types):
        t = strong(common(types))
        if t.is_inexact:
            raise self.refuse(types, "shifts need integer operands")
        if t is BOOL:
            t = INT8
        left, right = ops.shifts(t.bits)
        return Resolution(left if self.left else right, t, t)


class Compare(Rule):
    """``== != < <= > >=``: compare in the promoted type, give bool (complex numbers: only
    ``==`` and ``!=``, ``ordered=False``)."""

    def __init__(self, name: str, op, ordered: bool = True):
        super().__init__(name)
        self.op, self.ordered = op, ordered

    def __call__(self, types):
        t = strong(common(types))
        if t.is_complex and self.ordered:
            raise self.refuse(types, NO_ORDER)
        return Resolution(self.op, t, BOOL)


class Logical(Rule):
    """``logical_and/or/xor/not``: operands become bools (nonzero is true)."""

    def __init__(self, name: str, op):
        super().__init__(name)
        self.op = op

    def __call__(self, types):
        return Resolution(self.op, BOOL, BOOL)


class Same(Rule):
    """Unary operations that keep the dtype (``-x``, ``abs``, ``sign``...).

    ``on_bool``: ``"refuse"`` (with ``bool_hint``), ``"keep"``, an operator to use instead
    (``~b`` is ``not b``), or ``"int8"`` (``square(b)``); ``int_op``: the operator for
    integers when it differs (``floor`` of an integer is the integer); ``floats=False``
    refuses floats (``~x``).
    """

    def __init__(
        self, name, op, on_bool="keep", int_op=None, bool_hint="", floats=True, complex_op=None
    ):  # fmt: skip
        super().__init__(name)
        self.op, self.on_bool, self.int_op, self.bool_hint = op, on_bool, int_op, bool_hint
        self.floats, self.complex_op = floats, complex_op

    def __call__(self, types):
        t = strong(common(types))
        if t.is_inexact and not self.floats:
            raise self.refuse(types, "it needs integer or bool operands")
        if t.is_complex:
            if self.complex_op is None:
                raise self.refuse(types, NO_ORDER if self.name in _ORDERED else
                                  "it is not defined for complex numbers")  # fmt: skip
            op = self.complex_op(t) if _is_factory(self.complex_op) else self.complex_op
            return Resolution(op, t, t)
        if t is BOOL:
            if self.on_bool == "refuse":
                raise self.refuse(types, self.bool_hint or "it has no boolean version")
            if self.on_bool == "int8":
                return Resolution(self.int_op or self.op, INT8, INT8)
            if self.on_bool != "keep":
                return Resolution(self.on_bool, BOOL, BOOL)
            return Resolution(self.int_op or self.op, BOOL, BOOL)
        if t.kind in "iu" and self.int_op is not None:
            return Resolution(self.int_op, t, t)
        return Resolution(self.op, t, t)


class FloatMath(Rule):
    """Math functions: integers become the smallest float holding them (int8 -> float16,
    int16 -> float32, wider -> float64; bool -> float16), as NumPy's ufuncs do; complex
    operands stay complex where the function is defined for them (``COMPLEX_MATH``)."""

    def __init__(self, name: str, op):
        super().__init__(name)
        self.op = op

    def __call__(self, types):
        # each operand to its own smallest float first: NumPy picks the first float loop
        # every operand casts to safely (arctan2(int8, uint8) is float16, not float32)
        strong_types = tuple(t for t in types if not t.weak)
        if strong_types and len(strong_types) < len(types):  # NEP 50: weak ones adapt first
            base = common(strong_types)
            types = tuple(promote(t, base) if t.weak else t for t in types)
        t = strong(common(tuple(float_result(t) for t in types)))
        if t.is_complex and self.name not in COMPLEX_MATH and self.name not in _COMPLEX_FLOAT_MATH:
            raise self.refuse(types, "it is not defined for complex numbers")
        special = _COMPLEX_FLOAT_MATH.get(self.name) if t.is_complex else None
        return Resolution(special(t) if special else self.op, t, t)


# math functions whose complex version is another device function (a factory of ops.py)
_COMPLEX_FLOAT_MATH = {"reciprocal": ops.reciprocal_complex, "rint": ops.rint_complex}


class Predicate(Rule):
    """``isnan``, ``signbit``...: bool results, computed on the input as it is (complex:
    ``isnan``/``isinf`` of either part, ``isfinite`` of both)."""

    def __init__(self, name: str, op, complex_ok: bool = True):
        super().__init__(name)
        self.op, self.complex_ok = op, complex_ok

    def __call__(self, types):
        t = strong(common(types))
        if t.is_complex and not self.complex_ok:
            raise self.refuse(types, "it is not defined for complex numbers")
        return Resolution(self.op, t, BOOL)


class Angle(Rule):
    """``angle``: ``atan2(imag, real)`` in the operand's (smallest) float type; a complex
    operand's angle is real."""

    def __call__(self, types):
        t = strong(common(tuple(float_result(t) for t in types)))
        return Resolution(ops.angle, t, t.real)


class Abs(Rule):
    """``abs``: the dtype of the operand; a complex operand's modulus is real (``hypot``)."""

    def __call__(self, types):
        t = strong(common(types))
        if t.is_complex:
            return Resolution(ops.absolute, t, t.real)
        return Resolution(ops.absolute, t, t)


class Where(Rule):
    """``where(cond, x, y)``: ``cond`` as bool, the result in the promotion of x and y."""

    def __call__(self, types):
        t = strong(common(types[1:]))
        return Resolution(ops.where, t, t, c0=BOOL)


class Clip(Rule):
    """``clip(x, lo, hi)``: the promotion of all three (Python bounds are weak)."""

    def __call__(self, types):
        t = strong(common(types))
        if t.is_complex:
            raise self.refuse(types, NO_ORDER)
        return Resolution(ops.clip, t, t, c0=t)


class Custom(Rule):
    """A user function (:func:`ember.vectorize`): operands promote together (NEP 50) and the
    result has that dtype, or ``dtype`` when given."""

    def __init__(self, name: str, op, dtype: DType | None = None):
        super().__init__(name)
        self.op, self.dtype = op, dtype

    def __call__(self, types):
        t = strong(common(types))
        return Resolution(self.op, t, self.dtype or t)


class Cast(Rule):
    """``astype``/copies: ``copy`` into the target dtype (set by the caller).  Complex to a
    real dtype other than bool is refused (the Array API's rule; NumPy drops the imaginary
    part with a ComplexWarning)."""

    def __init__(self, target: DType):
        super().__init__("astype")
        self.target = target

    def __call__(self, types):
        if types[0].dtype.is_complex and self.target.kind not in "cb":
            raise TypeError(
                f"cannot cast {describe(types[0])} to {self.target.name}: the Array API "
                "refuses complex-to-real casts (NumPy drops the imaginary part); convert "
                "ember.real(x), ember.imag(x) or ember.abs(x) instead"
            )
        return Resolution(ops.copy, self.target, self.target)


def refuse_complex_to_real(src: DType, dst: DType | None, what: str) -> None:
    """A reduction or scan of complex data asked for a real ``dtype=``: refused (the Array
    API's rule; NumPy drops the imaginary part with a ComplexWarning)."""
    if dst is not None and src.is_complex and not dst.is_complex:
        raise TypeError(
            f"ember.{what} of {src.name} data with dtype={dst.name}: the Array API refuses "
            "complex-to-real casts (NumPy drops the imaginary part); reduce ember.real(x), "
            "ember.imag(x) or ember.abs(x) instead"
        )


# --------------------------------------------------------------------- NumPy's other ufuncs
UINT8 = dtypes.uint8


class FloatMathOf(FloatMath):
    """A math function whose device function depends on the float type (``spacing``):
    :class:`FloatMath`'s types, the device function made by ``factory(ct)``."""

    def __init__(self, name: str, factory):
        super().__init__(name, None)
        self.factory = factory

    def __call__(self, types):
        res = super().__call__(types)
        return Resolution(self.factory(res.ct), res.ct, res.out)


class Integers(Rule):
    """``gcd``, ``lcm``, ``bitwise_count``: integer operands only (NumPy has no float
    loops); the device function is ``factory(ct)``.  Two bools are refused, as NumPy does
    for ``gcd``/``lcm``, unless ``bool_as`` names the dtype they compute in
    (``bitwise_count``: int8); ``out`` fixes the result dtype (uint8 counts)."""

    def __init__(self, name: str, factory, out: DType | None = None, bool_as=None):
        super().__init__(name)
        self.factory, self.out, self.bool_as = factory, out, bool_as

    def __call__(self, types):
        t = strong(common(types))
        if t.is_inexact:
            raise self.refuse(types, "it needs integer operands (NumPy has no float loop)")
        if t is BOOL:
            if self.bool_as is None:
                raise self.refuse(types, "it needs integer operands; convert with .astype()")
            t = self.bool_as
        return Resolution(self.factory(t), t, self.out or t)


class FloatPower(Rule):
    """``float_power``: always float64, or complex128 when an operand is complex."""

    def __call__(self, types):
        t = strong(common(types))
        t = dtypes.complex128 if t.is_complex else FLOAT64
        return Resolution(ops.power, t, t)


class Float64Math(Rule):
    """``sinc`` and ``i0`` (NumPy functions written in Python on ufuncs): floats keep their
    type, integers and bools become float64 (NumPy's ``x * pi``, ``x.astype(float)``);
    complex operands only where ``complex_ok``.  The device function is ``factory(ct)``."""

    def __init__(self, name: str, factory, complex_ok: bool = False):
        super().__init__(name)
        self.factory, self.complex_ok = factory, complex_ok

    def __call__(self, types):
        t = strong(common(types))
        if t.is_complex and not self.complex_ok:
            raise self.refuse(types, "it is not defined for complex numbers (as in NumPy)")
        if not t.is_inexact:
            t = FLOAT64
        return Resolution(self.factory(t), t, t)


FLOAT16, FLOAT32, INT32 = dtypes.float16, dtypes.float32, dtypes.int32


class Frexp(Rule):
    """``frexp``: a real operand (integers to their smallest float, as :class:`FloatMath`);
    the mantissa in that float type, the exponent (``exponent=True``) int32.  float16
    computes in float32, which holds every float16 exactly."""

    def __init__(self, name: str, op, exponent: bool):
        super().__init__(name)
        self.op, self.exponent = op, exponent

    def __call__(self, types):
        t = strong(common(tuple(float_result(t) for t in types)))
        if t.is_complex:
            raise self.refuse(types, "it is not defined for complex numbers")
        return Resolution(self.op, FLOAT32 if t is FLOAT16 else t, INT32 if self.exponent else t)


class Ldexp(Rule):
    """``ldexp(x, e)``: ``x * 2**e`` in ``x``'s float type (integers to their smallest float,
    a Python number to float64), ``e`` an integer (a float exponent is refused, as NumPy
    has no loop for it).  float16 computes in float32: the product is exact there, so it
    is rounded once, as float16's own would be."""

    def __init__(self, name: str, op):
        super().__init__(name)
        self.op = op

    def __call__(self, types):
        x, e = types
        if e.dtype.is_inexact or (e.dtype is dtypes.uint64 and not e.weak):
            raise self.refuse(
                types, "the exponent must be an integer array or a Python int (NumPy has "
                "no loop for a float or uint64 exponent); convert it with .astype(ember.int64)"
            )  # fmt: skip
        t = FLOAT64 if x.weak and not x.dtype.is_complex else strong(float_result(x))
        if t.is_complex:
            raise self.refuse(types, "it is not defined for complex numbers")
        return Resolution(self.op, FLOAT32 if t is FLOAT16 else t, t)


# --------------------------------------------------------------------- scalar operands
PY_TYPES: dict[type, Scalar] = {
    int: WEAK_INT,
    float: WEAK_FLOAT,
    complex: WEAK_COMPLEX,
    bool: scalar(BOOL),
}


def scalar_type(value: Any) -> Scalar:
    """The kernel type of a scalar operand: Python ``int``/``float``/``complex`` are weak
    (NEP 50), ``bool`` and NumPy scalars strong."""
    t = PY_TYPES.get(type(value))
    if t is not None:
        return t
    dt = getattr(value, "dtype", None)  # NumPy scalars (numpy.float64 subclasses float)
    if dt is not None and getattr(value, "ndim", None) == 0:
        return scalar(dtypes.dtype(dt))
    if isinstance(value, bool | int | float | complex):  # subclasses (IntEnum...)
        for cls in (bool, int, float, complex):
            if isinstance(value, cls):
                return PY_TYPES[cls]
    raise TypeError(
        f"unsupported operand of type {type(value).__module__}.{type(value).__name__}: "
        "elementwise operations take ember arrays and Python or NumPy scalars"
    )
