"""The elementwise functions: ``ember.add``, ``ember.sqrt``, ``ember.where``...

Names follow the Python Array API standard (2023.12), with NumPy's spellings as aliases
(``absolute``, ``arcsin``, ``power``, ``true_divide``, ``invert``...).  Every function is a
:class:`~ember.array.elementwise.Ufunc` over one of the generic kernels; its type rule is
in :mod:`ember.array.rules` and its device function in :mod:`ember.array.ops`.

The math functions that are also kernel functions (:mod:`ember.lang`: ``sqrt``, ``sin``,
``floor``, ``pow``...) carry ``__ember_intrinsic__``, so ``ember.sqrt(x)`` inside a kernel
still compiles to the intrinsic on a number, with the kernel language's semantics (there,
``ember.floor`` of an integer is a float and ``ember.pow`` is float ``pow``; on arrays they
follow NumPy 2: ``floor`` keeps integers, ``pow`` of integers is integer).
"""

from __future__ import annotations

import functools
import math

from ember import lang
from ember.array import ops, ops_numpy
from ember.array import rules as r
from ember.array.elementwise import Ufunc
from ember.array.ndarray import ndarray


def _np(name: str):
    def host(*args):
        import numpy as np

        return getattr(np, name)(*args)

    host.__name__ = name
    return host


def _lang_host(name: str):
    host = getattr(lang, name)._host
    if host is None:
        return None

    def run(*args):
        return host(*args)

    run.__name__ = name
    return run


def _binary(name, rule, np_name=None, intrinsic=None):
    return Ufunc(name, 2, rule, _np(np_name or name), intrinsic)


def _unary(name, rule, np_name=None, intrinsic=None):
    return Ufunc(name, 1, rule, _np(np_name or name), intrinsic)


# --------------------------------------------------------------------- arithmetic
add = _binary("add", r.Arithmetic("add", ops.add, ops.logical_or))
subtract = _binary("subtract", r.Arithmetic("subtract", ops.subtract))
multiply = _binary("multiply", r.Arithmetic("multiply", ops.multiply, ops.logical_and))
divide = _binary("divide", r.TrueDivide("divide"))
floor_divide = _binary("floor_divide", r.IntegerLike("floor_divide", ops.floor_divide))
remainder = _binary("remainder", r.IntegerLike("remainder", ops.remainder))
pow = _binary(  # noqa: A001
    "pow", r.IntegerPower("pow", ops.power, ops.power_int), "power", intrinsic="pow"
)
fmod = _binary("fmod", r.IntegerLike("fmod", ops.fmod, ops.fmod_int), intrinsic="fmod")

negative = _unary(
    "negative",
    r.Same("negative", ops.negative, "refuse", bool_hint="use ~ or ember.logical_not",
           complex_op=ops.negative),
)  # fmt: skip
positive = _unary("positive", r.Same("positive", ops.positive, "refuse", complex_op=ops.positive))
abs = _unary("abs", r.Abs("abs"), "absolute", intrinsic="py_abs")  # noqa: A001
sign = _unary("sign", r.Same("sign", ops.sign, "refuse", complex_op=ops.sign_complex))
square = _unary("square", r.Same("square", ops.square, "int8", complex_op=ops.square))
# integers stay integers, as in NumPy (1 / x truncated); bools become int8
reciprocal = _unary(
    "reciprocal",
    r.Same("reciprocal", ops.reciprocal, "int8", int_op=ops.reciprocal_int,
           complex_op=ops.reciprocal_complex),
)  # fmt: skip

# --------------------------------------------------------------------- comparisons, logic
equal = _binary("equal", r.Compare("equal", ops.equal, ordered=False))
not_equal = _binary("not_equal", r.Compare("not_equal", ops.not_equal, ordered=False))
less = _binary("less", r.Compare("less", ops.less))
less_equal = _binary("less_equal", r.Compare("less_equal", ops.less_equal))
greater = _binary("greater", r.Compare("greater", ops.greater))
greater_equal = _binary("greater_equal", r.Compare("greater_equal", ops.greater_equal))
logical_and = _binary("logical_and", r.Logical("logical_and", ops.logical_and))
logical_or = _binary("logical_or", r.Logical("logical_or", ops.logical_or))
logical_xor = _binary("logical_xor", r.Logical("logical_xor", ops.logical_xor))
logical_not = _unary("logical_not", r.Logical("logical_not", ops.logical_not))

bitwise_and = _binary("bitwise_and", r.Bitwise("bitwise_and", ops.bitwise_and))
bitwise_or = _binary("bitwise_or", r.Bitwise("bitwise_or", ops.bitwise_or))
bitwise_xor = _binary("bitwise_xor", r.Bitwise("bitwise_xor", ops.bitwise_xor))
bitwise_left_shift = _binary(
    "bitwise_left_shift", r.Shift("bitwise_left_shift", left=True), "left_shift"
)
bitwise_right_shift = _binary(
    "bitwise_right_shift", r.Shift("bitwise_right_shift", left=False), "right_shift"
)
bitwise_invert = _unary(
    "bitwise_invert",
    r.Same("bitwise_invert", ops.invert, on_bool=ops.logical_not, floats=False),
    "invert",
)

# --------------------------------------------------------------------- min / max
maximum = _binary("maximum", r.Same("maximum", ops.maximum))
minimum = _binary("minimum", r.Same("minimum", ops.minimum))
fmax = _binary("fmax", r.Same("fmax", ops.fmax), intrinsic="fmax")
fmin = _binary("fmin", r.Same("fmin", ops.fmin), intrinsic="fmin")

# --------------------------------------------------------------------- math
_FLOAT1 = {  # Array API name -> (NumPy name, kernel intrinsic)
    "sqrt": ("sqrt", "sqrt"), "rsqrt": (None, "rsqrt"), "cbrt": ("cbrt", "cbrt"),
    "exp": ("exp", "exp"), "exp2": ("exp2", "exp2"), "expm1": ("expm1", "expm1"),
    "log": ("log", "log"), "log2": ("log2", "log2"), "log10": ("log10", "log10"),
    "log1p": ("log1p", "log1p"), "sin": ("sin", "sin"), "cos": ("cos", "cos"),
    "tan": ("tan", "tan"), "asin": ("arcsin", "asin"), "acos": ("arccos", "acos"),
    "atan": ("arctan", "atan"), "sinh": ("sinh", "sinh"), "cosh": ("cosh", "cosh"),
    "tanh": ("tanh", "tanh"), "asinh": ("arcsinh", "asinh"), "acosh": ("arccosh", "acosh"),
    "atanh": ("arctanh", "atanh"), "erf": (None, "erf"), "erfc": (None, "erfc"),
    "lgamma": (None, "lgamma"), "tgamma": (None, "tgamma"), "rint": ("rint", "rint"),
    "fabs": ("fabs", "fabs"),
}  # fmt: skip


def _float1(name: str) -> Ufunc:
    np_name, intrinsic = _FLOAT1[name]
    host = _np(np_name) if np_name else _lang_host(intrinsic)
    return Ufunc(name, 1, r.FloatMath(name, getattr(ops, name)), host, intrinsic)


sqrt = _float1("sqrt")
rsqrt = _float1("rsqrt")
cbrt = _float1("cbrt")
exp = _float1("exp")
exp2 = _float1("exp2")
expm1 = _float1("expm1")
log = _float1("log")
log2 = _float1("log2")
log10 = _float1("log10")
log1p = _float1("log1p")
sin = _float1("sin")
cos = _float1("cos")
tan = _float1("tan")
asin = _float1("asin")
acos = _float1("acos")
atan = _float1("atan")
sinh = _float1("sinh")
cosh = _float1("cosh")
tanh = _float1("tanh")
asinh = _float1("asinh")
acosh = _float1("acosh")
atanh = _float1("atanh")
erf = _float1("erf")
erfc = _float1("erfc")
lgamma = _float1("lgamma")
tgamma = _float1("tgamma")
rint = _float1("rint")
fabs = _float1("fabs")

floor = _unary("floor", r.Same("floor", ops.floor, int_op=ops.copy), intrinsic="floor")
ceil = _unary("ceil", r.Same("ceil", ops.ceil, int_op=ops.copy), intrinsic="ceil")
trunc = _unary("trunc", r.Same("trunc", ops.trunc, int_op=ops.copy), intrinsic="trunc")

isnan = _unary("isnan", r.Predicate("isnan", ops.isnan), intrinsic="isnan")
isinf = _unary("isinf", r.Predicate("isinf", ops.isinf), intrinsic="isinf")
isfinite = _unary("isfinite", r.Predicate("isfinite", ops.isfinite), intrinsic="isfinite")
signbit = _unary("signbit", r.Predicate("signbit", ops.signbit, complex_ok=False))

atan2 = _binary("atan2", r.FloatMath("atan2", ops.atan2), "arctan2", intrinsic="atan2")
hypot = _binary("hypot", r.FloatMath("hypot", ops.hypot), intrinsic="hypot")
copysign = _binary("copysign", r.FloatMath("copysign", ops.copysign), intrinsic="copysign")
logaddexp = _binary("logaddexp", r.FloatMath("logaddexp", ops.logaddexp))

# --------------------------------------------------------------------- NumPy's other ufuncs
deg2rad = _unary("deg2rad", r.FloatMath("deg2rad", ops_numpy.deg2rad))
rad2deg = _unary("rad2deg", r.FloatMath("rad2deg", ops_numpy.rad2deg))
heaviside = _binary("heaviside", r.FloatMath("heaviside", ops_numpy.heaviside))
logaddexp2 = _binary("logaddexp2", r.FloatMath("logaddexp2", ops_numpy.logaddexp2))
spacing = _unary("spacing", r.FloatMathOf("spacing", ops_numpy.spacing))
gcd = _binary("gcd", r.Integers("gcd", ops_numpy.gcd))
lcm = _binary("lcm", r.Integers("lcm", ops_numpy.lcm))
bitwise_count = _unary(
    "bitwise_count", r.Integers("bitwise_count", ops_numpy.bitwise_count, r.UINT8, bool_as=r.INT8)
)
float_power = _binary("float_power", r.FloatPower("float_power"))
isposinf = _unary("isposinf", r.Predicate("isposinf", ops_numpy.isposinf, complex_ok=False))
isneginf = _unary("isneginf", r.Predicate("isneginf", ops_numpy.isneginf, complex_ok=False))
sinc = _unary("sinc", r.Float64Math("sinc", ops_numpy.sinc, complex_ok=True))
i0 = _unary("i0", r.Float64Math("i0", ops_numpy.i0))


def _host_modf(part: int):
    def host(x):
        import numpy as np

        return np.modf(x)[part]

    host.__name__ = "modf"
    return host


_modf_fraction = Ufunc("modf", 1, r.FloatMath("modf", ops_numpy.modf_fraction), _host_modf(0))
_modf_integral = Ufunc("modf", 1, r.FloatMath("modf", ops.trunc), _host_modf(1))


def _two_results(first, second, args: tuple, out):
    """``first(*args)`` and ``second(*args)`` into ``out`` (a pair of arrays, or None).

    Two kernels, one after the other: a first output that is also an input
    (``divmod(x, 2, out=(x, r))``) would be overwritten before the second kernel reads it.
    So where the first output shares a buffer with an input the second result is made
    first, and where both outputs do, the first goes to a new array copied over last."""
    o1, o2 = (None, None) if out is None else out

    def aliased(o) -> bool:
        return type(o) is ndarray and any(type(x) is ndarray and x.buffer is o.buffer for x in args)

    if not aliased(o1):
        return first(*args, out=o1), second(*args, out=o2)
    if not aliased(o2):
        b = second(*args, out=o2)
        return first(*args, out=o1), b
    a = first(*args)
    b = second(*args, out=o2)
    o1[...] = a
    return o1, b


def divmod(x1, x2, /, out=None):  # noqa: A001
    """``(floor_divide(x1, x2), remainder(x1, x2))``: NumPy's ``divmod`` (two kernels;
    ``out`` is a pair of arrays, or None; either may be an input)."""
    return _two_results(floor_divide, remainder, (x1, x2), out)


def modf(x, /, out=None):
    """``(fractional, integral)`` parts of ``x``, both with ``x``'s sign (NumPy's ``modf``:
    ``modf(-2.5) == (-0.5, -2.0)``, ``modf(inf) == (0.0, inf)``); integers become floats as
    in the math functions.  ``out`` is a pair of arrays, or None; either may be ``x``."""
    return _two_results(_modf_fraction, _modf_integral, (x,), out)


def _host_frexp(part: int):
    def host(x):
        import numpy as np

        return np.frexp(x)[part]

    host.__name__ = "frexp"
    return host


_frexp_mantissa = Ufunc(
    "frexp", 1, r.Frexp("frexp", ops_numpy.frexp_mantissa, exponent=False), _host_frexp(0)
)
_frexp_exponent = Ufunc(
    "frexp", 1, r.Frexp("frexp", ops_numpy.frexp_exponent, exponent=True), _host_frexp(1)
)


def frexp(x, /, out=None):
    """``(mantissa, exponent)`` with ``x == mantissa * 2**exponent`` and ``|mantissa|`` in
    ``[0.5, 1)`` (NumPy's ``frexp``): the mantissa in ``x``'s float type (integers become
    their smallest float, as in the math functions), the exponent int32; 0, inf and NaN
    are their own mantissa with exponent 0.  ``out`` is a pair of arrays, or None.  Inside
    a kernel, ``ember.frexp(v)`` is the intrinsic on a number."""
    return _two_results(_frexp_mantissa, _frexp_exponent, (x,), out)


ldexp = Ufunc("ldexp", 2, r.Ldexp("ldexp", ops_numpy.ldexp), _np("ldexp"), intrinsic="ldexp")
ldexp.__doc__ = (
    "ember.ldexp(x, e): ``x * 2**e`` elementwise (NumPy's ``ldexp``; ``out=`` optional).  "
    "The result has ``x``'s float type (integers become their smallest float; a Python "
    "number float64, where NumPy gives float16 for a Python int); ``e`` must be integer. "
    "Inside a kernel it is the intrinsic on numbers.\n\n" + r.Ldexp.__doc__
)
frexp.__ember_intrinsic__ = "frexp"  # type: ignore[attr-defined]


_where = Ufunc("where", 3, r.Where("where"), _np("where"))
_clip = Ufunc("clip", 3, r.Clip("clip"), _np("clip"))


_NO = object()


def where(condition, x1=_NO, x2=_NO, /, *, out=None):
    """Elements of ``x1`` where ``condition`` is true, else of ``x2`` (broadcast together;
    the result dtype promotes ``x1`` and ``x2``, Python scalars weakly).  With only
    ``condition``: NumPy's one-argument form, :func:`ember.nonzero`."""
    if x1 is _NO and x2 is _NO:
        from ember.array.search import nonzero

        return nonzero(condition)
    if x1 is _NO or x2 is _NO:
        raise TypeError("ember.where takes one argument (nonzero) or three, not two")
    return _where(condition, x1, x2, out=out)


def clip(x, /, min=None, max=None, out=None):  # noqa: A002
    """``x`` limited to ``[min, max]`` (either may be None); NaN in ``x`` or a bound gives
    NaN.  The result has ``x``'s dtype (the Array API's rule): integer bounds beyond an
    integer ``x``'s range are clamped to it (as NumPy 2 does for Python ints:
    ``clip(uint8_array, -1, 300)`` changes nothing) and same-kind array bounds are
    converted to ``x``'s dtype (NumPy would promote); bounds of another kind (a float bound
    for integers) promote as in NumPy.  ``out`` may be given by place, as NumPy's."""
    dt = getattr(x, "dtype", None)
    if dt is not None and hasattr(dt, "kind"):
        min, max = _bound(min, dt), _bound(max, dt)
    if min is None and max is None:
        return x.copy() if out is None else _copy_into(x, out)
    if max is None:
        return maximum(x, min, out=out)
    if min is None:
        return minimum(x, max, out=out)
    return _clip(x, min, max, out=out)


def _bound(bound, dt):
    """A clip bound in terms of ``x``'s dtype ``dt`` where that loses nothing clip needs."""
    from ember.array.info import iinfo
    from ember.array.ndarray import ndarray

    integer = dt.kind in "iu"
    if type(bound) is int and integer:
        info = iinfo(dt)
        return min(info.max, max(info.min, bound))
    if not isinstance(bound, ndarray) or bound.dtype is dt or bound.dtype.kind == "b":
        return bound
    if integer and bound.dtype.kind in "iu":
        info = iinfo(dt)
        return clip(bound, info.min, info.max).astype(dt)
    if dt.kind == "f" and bound.dtype.kind in "fiu":
        return bound.astype(dt)  # rounding is monotonic: the same as rounding the result
    return bound


def _copy_into(x, out):
    out[...] = x
    return out


def round(x, /, decimals: int = 0, out=None):  # noqa: A001
    """Round half to even (NumPy's ``round``): floats round to ``decimals`` digits
    (``x * 10**decimals`` rounded, then divided back, as NumPy does); integers keep their
    dtype (``decimals < 0`` rounds to tens, hundreds... through float64, as NumPy); the
    parts of a complex array are rounded each on its own (NumPy's rule).  ``out`` may be
    given by place, as NumPy's (``round(x, 2, out)``)."""
    if decimals == 0:
        return _round0(x, out=out)
    dt = getattr(x, "dtype", None)
    if dt is not None and dt.is_integer and hasattr(x, "backend"):
        if decimals > 0:
            result = x.astype(dt)
        else:
            scale = 10 ** (-decimals)
            result = multiply(_round0(divide(x, scale)), scale).astype(dt)
        return result if out is None else _copy_into(result, out)
    if getattr(getattr(x, "dtype", None), "is_complex", False):
        from ember.array.creation import empty_like

        result = empty_like(x) if out is None else out
        for part in ("real", "imag"):
            round(getattr(x, part), decimals, out=getattr(result, part))
        return result
    try:
        scale = 10.0**decimals
    except OverflowError:  # beyond float64: inf, as NumPy's float power (the result is NaN)
        scale = math.inf
    if dt is not None and dt.kind == "f" and not dt.is_narrow and hasattr(x, "backend"):
        # one kernel, the same operations in x's dtype (H200, 2**24 float32: 100 -> 33 us
        # against three); 16-bit floats round after each step, as NumPy's loops
        result = _rounded(x, scale)
        return result if out is None else _copy_into(result, out)
    return divide(_round0(multiply(x, scale)), scale, out=out)


def _round_scaled(v, scale):
    return lang.rint(v * scale) / scale


def _rounded(x, scale: float):
    """``rint(x * scale) / scale`` in one elementwise kernel (``scale`` weak: x's dtype)."""
    return _rounder()(x, scale)


@functools.cache
def _rounder():
    return vectorize(_round_scaled)


_round0 = Ufunc(
    "round", 1, r.Same("round", ops.rint, int_op=ops.copy, complex_op=ops.rint_complex),
    _np("round"),
)  # fmt: skip


def vectorize(func=None, *, dtype=None):
    """Make an elementwise array function from a scalar function: one fused kernel.

    ::

        @ember.vectorize
        def axpy(x, y):
            return 2 * x + y

        z = axpy(x, y)           # one pass over x and y (``2 * x + y`` makes two)
        axpy(x, y, out=y)        # in place

    ``func`` is compiled as a device function (the kernel language: numbers in, a number
    out) and runs in the generic kernels, with NumPy broadcasting and any layouts.  Its
    operands (1 to 3 arrays or scalars) are cast to their NEP 50 promotion first; the
    result has that dtype, or ``dtype`` when given (``dtype=bool`` for a predicate).
    Called with no ember array, ``func`` runs on the host as it is.
    """
    from ember.dtypes import dtype as to_dtype

    def make(f):
        import inspect

        nin = len(inspect.signature(f).parameters)
        if not 1 <= nin <= 3:
            raise TypeError(f"ember.vectorize takes functions of 1 to 3 operands, not {nin}")
        out = None if dtype is None else to_dtype(dtype)
        uf = Ufunc(f.__name__, nin, r.Custom(f.__name__, f, out), f)
        uf.__doc__ = f.__doc__ or uf.__doc__
        return uf

    return make if func is None else make(func)


_round0.rule.on_bool = "keep"

# NumPy's names
absolute = abs
power = pow
true_divide = divide
mod = remainder
invert = bitwise_invert
left_shift = bitwise_left_shift
right_shift = bitwise_right_shift
arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2
arcsinh, arccosh, arctanh = asinh, acosh, atanh
conj = conjugate = _unary(
    "conj", r.Same("conj", ops.copy, complex_op=ops.conj), "conjugate", intrinsic="conj"
)
_angle = _unary("angle", r.Angle("angle"))
degrees, radians = rad2deg, deg2rad


def real(x, /):
    """The real part of ``x``: for a complex array a view (as NumPy's ``x.real``: writing
    to it writes ``x``), of the part's float dtype; a real array itself."""
    from ember.array.parts import part

    return part(x, "real")


def imag(x, /):
    """The imaginary part of ``x``: for a complex array a view (writable, as NumPy's
    ``x.imag``); for a real array a new array of zeros."""
    from ember.array.parts import part

    return part(x, "imag")


def angle(z, /, deg: bool = False):
    """The angle of complex ``z`` (``atan2(imag, real)``, NumPy's ``angle``): real, in
    radians, or degrees with ``deg=True``; of a real array, 0 or pi."""
    a = _angle(z)
    return multiply(a, 180 / 3.141592653589793) if deg else a


real.__ember_intrinsic__ = "real"  # type: ignore[attr-defined]  # inside kernels: of a number
imag.__ember_intrinsic__ = "imag"  # type: ignore[attr-defined]
angle.__ember_intrinsic__ = "angle"  # type: ignore[attr-defined]

UNARY = (
    "negative", "positive", "abs", "sign", "square", "reciprocal", "logical_not",
    "bitwise_invert", *_FLOAT1, "floor", "ceil", "trunc", "isnan", "isinf", "isfinite",
    "signbit",
)  # fmt: skip
BINARY = (
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow", "fmod",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift", "maximum", "minimum", "fmax", "fmin",
    "atan2", "hypot", "copysign", "logaddexp",
)  # fmt: skip
ALIASES = (
    "absolute", "power", "true_divide", "mod", "invert", "left_shift", "right_shift",
    "arcsin", "arccos", "arctan", "arctan2", "arcsinh", "arccosh", "arctanh", "conj",
    "conjugate",
)  # fmt: skip
FUNCTIONS = ("where", "clip", "round", "vectorize", "real", "imag", "angle")
EXTRA_UNARY = (  # NumPy's ufuncs beyond the Array API (and its i0, sinc, isposinf, isneginf)
    "deg2rad", "rad2deg", "spacing", "bitwise_count", "isposinf", "isneginf", "sinc", "i0",
)  # fmt: skip
EXTRA_BINARY = ("heaviside", "logaddexp2", "gcd", "lcm", "float_power", "ldexp")
EXTRA_FUNCTIONS = ("divmod", "modf", "frexp", "degrees", "radians")
