"""The operators of the elementwise kernels: plain Python functions, compiled as device
functions for the compute dtype the kernel casts their operands to.

Each follows NumPy's ufunc of the same name for that dtype.  The kernel language already
has NumPy's semantics for ``+ - * / // % **`` (floor division and modulo with the sign of
the divisor, integer ``x // 0 == 0``, wrapping integer overflow); what NumPy defines
beyond C is written out here (NaN-propagating ``maximum``, ``fmod`` of integers, shifts by
more than the width).  One module-level function per operator: the function's source is
part of every kernel's cache key, so two operators never share a binary.
"""

from __future__ import annotations

import functools

import ember
from ember import lang

LN2 = 0.6931471805599453


# --------------------------------------------------------------------- arithmetic
def copy(x):
    return x


def add(a, b):
    return a + b


def subtract(a, b):
    return a - b


def multiply(a, b):
    return a * b


def divide(a, b):
    return a / b


def floor_divide(a, b):
    return a // b


def remainder(a, b):
    return a % b


def power(a, b):
    return a**b


def power_int(a, b):
    """``a ** b`` of integers: a negative exponent raises, as NumPy's integer power does
    (here at the next synchronization: a device error)."""
    if b < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")
    return a**b


def fmod_int(a, b):
    r = a % b  # the sign of b; C's fmod has the sign of a
    if r != 0 and (r < 0) != (a < 0):
        r -= b
    return r


def fmod(a, b):
    return lang.fmod(a, b)


def negative(x):
    return -x


def positive(x):
    return +x


def absolute(x):
    return abs(x)


def square(x):
    return x * x


def reciprocal(x):
    return 1 / x


def reciprocal_int(x):
    """NumPy's reciprocal of an integer: ``1 / x`` in C, truncated (0 unless ``x`` is 1 or
    -1; ``1 / 0`` is 0 here, where NumPy's loops give 0 or the type's minimum by width)."""
    if x == 1 or (x < 0 and x + 1 == 0):
        return x
    return x - x


def sign(x):
    return 1 if x > 0 else (-1 if x < 0 else x - x)  # +0 for 0 and -0.0 (NumPy 2), NaN


# --------------------------------------------------------------------- comparisons, logic
def equal(a, b):
    return a == b


def not_equal(a, b):
    return a != b


def less(a, b):
    return a < b


def less_equal(a, b):
    return a <= b


def greater(a, b):
    return a > b


def greater_equal(a, b):
    return a >= b


def logical_and(a, b):
    return a and b


def logical_or(a, b):
    return a or b


def logical_xor(a, b):
    return a != b


def logical_not(x):
    return not x


def bitwise_and(a, b):
    return a & b


def bitwise_or(a, b):
    return a | b


def bitwise_xor(a, b):
    return a ^ b


def invert(x):
    return ~x


@functools.cache
def shifts(bits: int):
    """``(left_shift, right_shift)`` for ``bits``-bit integers: NumPy shifts by ``bits`` or
    more (and by negative counts) give 0, or -1 for right shifts of negative numbers."""

    def left_shift(a, b):
        if ember.uint64(b) < BITS:
            return a << b
        return a - a

    def right_shift(a, b):
        if ember.uint64(b) < BITS:
            return a >> b
        if a < 0:
            return a - a - 1
        return a - a

    BITS = bits
    left_shift.__name__ = left_shift.__qualname__ = f"ew_left_shift_{bits}"
    right_shift.__name__ = right_shift.__qualname__ = f"ew_right_shift_{bits}"
    return left_shift, right_shift


# --------------------------------------------------------------------- min / max
# NaN tests are lang.isnan, which is the constant False on integers: `b != b` would make C
# compilers warn about a self-comparison in every integer specialization.
def maximum(a, b):
    if a > b or lang.isnan(a):  # NaN in either propagates; ties (0.0, -0.0) give b, as NumPy's
        return a
    return b


def minimum(a, b):
    if a < b or lang.isnan(a):
        return a
    return b


def fmax(a, b):
    if a < b or lang.isnan(a):  # NaN in one is ignored
        return b
    return a


def fmin(a, b):
    if b < a or lang.isnan(a):
        return b
    return a


def clip(x, lo, hi):
    return minimum(maximum(x, lo), hi)


def where(c, x, y):
    if c:
        return x
    return y


# --------------------------------------------------------------------- math
def sqrt(x):
    return lang.sqrt(x)


def rsqrt(x):
    return lang.rsqrt(x)


def cbrt(x):
    return lang.cbrt(x)


def exp(x):
    return lang.exp(x)


def exp2(x):
    return lang.exp2(x)


def expm1(x):
    return lang.expm1(x)


def log(x):
    return lang.log(x)


def log2(x):
    return lang.log2(x)


def log10(x):
    return lang.log10(x)


def log1p(x):
    return lang.log1p(x)


def sin(x):
    return lang.sin(x)


def cos(x):
    return lang.cos(x)


def tan(x):
    return lang.tan(x)


def asin(x):
    return lang.asin(x)


def acos(x):
    return lang.acos(x)


def atan(x):
    return lang.atan(x)


def sinh(x):
    return lang.sinh(x)


def cosh(x):
    return lang.cosh(x)


def tanh(x):
    return lang.tanh(x)


def asinh(x):
    return lang.asinh(x)


def acosh(x):
    return lang.acosh(x)


def atanh(x):
    return lang.atanh(x)


def erf(x):
    return lang.erf(x)


def erfc(x):
    return lang.erfc(x)


def lgamma(x):
    return lang.lgamma(x)


def tgamma(x):
    return lang.tgamma(x)


def floor(x):
    return lang.floor(x)


def ceil(x):
    return lang.ceil(x)


def trunc(x):
    return lang.trunc(x)


def rint(x):
    return lang.rint(x)


def fabs(x):
    return lang.fabs(x)


def isnan(x):
    return lang.isnan(x)


def isinf(x):
    return lang.isinf(x)


def isfinite(x):
    return lang.isfinite(x)


def signbit(x):
    return lang.copysign(1, x) < 0


def atan2(a, b):
    return lang.atan2(a, b)


def hypot(a, b):
    return lang.hypot(a, b)


def copysign(a, b):
    return lang.copysign(a, b)


def pow_float(a, b):
    return lang.pow(a, b)


def logaddexp(a, b):
    if a == b:  # also both infinite of one sign
        return a + LN2
    d = a - b
    if d > 0:
        return a + lang.log1p(lang.exp(-d))
    if d <= 0:
        return b + lang.log1p(lang.exp(d))
    return d  # NaN


# --------------------------------------------------------------------- complex numbers
def conj(x):
    return x.conjugate()


def angle(x):
    return lang.atan2(x.imag, x.real)


@functools.cache
def sign_complex(ct):
    """``sign`` of a complex number, ``z / |z|`` (0 for 0), with the Array API's special
    cases: a NaN part gives NaN + NaN j (NumPy 2 gives ``1j`` for ``nan + inf j``), two
    infinite parts NaN + NaN j (``inf / inf``), one infinite part its direction.  The parts
    are scaled by the larger magnitude first, so ``|z|`` neither overflows nor loses digits
    to subnormals (``3e38 + 3e38j`` in complex64 was ``0j``, NumPy's is ``1j``)."""
    CT, RT = ct, ct.real

    def sign(z):
        re, im = z.real, z.imag
        if lang.isnan(re) or lang.isnan(im) or (lang.isinf(re) and lang.isinf(im)):
            return CT(RT(0) / RT(0), RT(0) / RT(0))
        if lang.isinf(re) or lang.isinf(im):
            return CT(lang.copysign(1, re) if lang.isinf(re) else RT(0),
                      lang.copysign(1, im) if lang.isinf(im) else RT(0))  # fmt: skip
        m = lang.fabs(re) if lang.fabs(re) > lang.fabs(im) else lang.fabs(im)
        if m == 0:
            return CT(0)
        u, v = re / m, im / m
        h = lang.hypot(u, v)  # in [1, sqrt(2)]
        return CT(u / h, v / h)

    sign.__name__ = sign.__qualname__ = f"ew_sign_{ct.name}"
    return sign


@functools.cache
def rint_complex(ct):
    """``rint``/``round`` of a complex number: each part to the nearest even integer."""
    CT = ct

    def rint(z):
        return CT(lang.rint(z.real), lang.rint(z.imag))

    rint.__name__ = rint.__qualname__ = f"ew_rint_{ct.name}"
    return rint


@functools.cache
def reciprocal_complex(ct):
    """``1 / z`` as NumPy's ``reciprocal`` computes it (Smith's scaling; 0 gives NaN)."""
    CT = ct

    def reciprocal(z):
        re, im = z.real, z.imag
        if abs(re) >= abs(im):
            r = im / re
            d = 1 / (re + im * r)
            return CT(d, -r * d)
        r = re / im
        d = 1 / (re * r + im)
        return CT(r * d, -d)

    reciprocal.__name__ = reciprocal.__qualname__ = f"ew_reciprocal_{ct.name}"
    return reciprocal


def prefix_c_names(namespace: dict) -> None:
    """Device functions get their C name from ``__name__``; OpenCL C has built-ins with
    several of these names (``remainder``, ``sign``, ``fmax``...), so prefix them all (the
    public functions defined in the module whose ``globals()`` is ``namespace``)."""
    module = namespace["__name__"]
    for name, fn in list(namespace.items()):
        if callable(fn) and getattr(fn, "__module__", None) == module and name[0] != "_":
            if not hasattr(fn, "cache_info"):  # (factories name their own functions)
                fn.__name__ = "ew_" + name


prefix_c_names(globals())
