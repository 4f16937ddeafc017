"""Device functions of NumPy's other ufuncs (:mod:`ember.array.ufuncs`: ``deg2rad``,
``heaviside``, ``logaddexp2``, ``modf``, ``isposinf``, ``gcd``, ``lcm``, ``bitwise_count``,
``spacing``, ``sinc``, ``i0``...), beside :mod:`ember.array.ops`'s operators; the per-dtype
ones are built (and memoized) by factories."""

from __future__ import annotations

import functools

import ember
from ember import lang
from ember.array.ops import prefix_c_names, signbit

RAD_PER_DEG = 0.017453292519943295  # pi / 180
DEG_PER_RAD = 57.29577951308232  # 180 / pi
LOG2E = 1.4426950408889634  # 1 / ln 2
PI = 3.141592653589793


def deg2rad(x):
    return x * RAD_PER_DEG


def rad2deg(x):
    return x * DEG_PER_RAD


def heaviside(x, h):
    if x < 0:
        return 0
    if x > 0:
        return 1
    if x == 0:
        return h
    return x  # NaN


def logaddexp2(a, b):
    if a == b:  # also both infinite of one sign
        return a + 1
    d = a - b
    if d > 0:
        return a + lang.log1p(lang.exp2(-d)) * LOG2E
    if d <= 0:
        return b + lang.log1p(lang.exp2(d)) * LOG2E
    return d  # NaN


def modf_fraction(x):
    if lang.isinf(x):
        return lang.copysign(0, x)
    return lang.copysign(x - lang.trunc(x), x)  # -0.0 for negative integers, as C's modf


def frexp_mantissa(x):
    if lang.isfinite(x) and x != 0:
        m, _ = lang.frexp(x)
        return m
    return x  # 0, -0.0, inf and nan are their own mantissa (NumPy's)


def frexp_exponent(x):
    if lang.isfinite(x) and x != 0:
        _, e = lang.frexp(x)
        return e
    return 0


LDEXP_MOST = 2200  # beyond any float's exponent range: larger |e| saturates to 0 or inf


def ldexp(x, e):
    # ``e`` arrives in ``x``'s compute type (exact up to 2**24 even in float32, and a
    # larger |e| saturates anyway); clamped before the conversion so it never overflows
    if e > LDEXP_MOST:
        e = LDEXP_MOST
    elif e < -LDEXP_MOST:
        e = -LDEXP_MOST
    return lang.ldexp(x, ember.int32(e))


def isposinf(x):
    return lang.isinf(x) and not signbit(x)


def isneginf(x):
    return lang.isinf(x) and signbit(x)


def _unsigned(dt):
    from ember import dtypes

    return dtypes.dtype(f"uint{dt.bits}")


@functools.cache
def magnitude(ct):
    """``|x|`` of integer type ``ct`` as its unsigned type: exact for the most negative
    value too (``|int8(-128)|`` is ``uint8(128)``)."""
    UT = _unsigned(ct)

    def magnitude_signed(x):
        if x < 0:
            return UT(0) - UT(x)
        return UT(x)

    def magnitude_unsigned(x):
        return UT(x)

    fn = magnitude_signed if ct.kind == "i" else magnitude_unsigned
    fn.__name__ = fn.__qualname__ = f"ew_magnitude_{ct.name}"
    return fn


def euclid(u, v):
    """The greatest common divisor of two unsigned integers (Euclid's algorithm)."""
    while u != 0:
        r = v % u
        v = u
        u = r
    return v


@functools.cache
def gcd(ct):
    """NumPy's ``gcd`` on integer type ``ct``: of the magnitudes, so never negative (but
    for ``gcd(-128, 0)`` in int8, whose magnitude wraps, as NumPy's)."""
    CT, MAG = ct, magnitude(ct)

    def gcd(a, b):
        return CT(euclid(MAG(a), MAG(b)))

    gcd.__name__ = gcd.__qualname__ = f"ew_gcd_{ct.name}"
    return gcd


@functools.cache
def lcm(ct):
    """NumPy's ``lcm`` on integer type ``ct``: ``|a| / gcd * |b|``, wrapping on overflow."""
    CT, MAG = ct, magnitude(ct)

    def lcm(a, b):
        u = MAG(a)
        v = MAG(b)
        g = euclid(u, v)
        if g == 0:
            return CT(0)
        return CT(u // g * v)

    lcm.__name__ = lcm.__qualname__ = f"ew_lcm_{ct.name}"
    return lcm


@functools.cache
def bitwise_count(ct):
    """NumPy 2's ``bitwise_count``: the number of 1 bits of ``|x|``."""
    MAG = magnitude(ct)

    def bitwise_count(x):
        return lang.popc(MAG(x))

    bitwise_count.__name__ = bitwise_count.__qualname__ = f"ew_bitwise_count_{ct.name}"
    return bitwise_count


@functools.cache
def spacing(ct):
    """NumPy's ``spacing`` for float type ``ct``: the distance from ``x`` to the next float
    away from zero, with ``x``'s sign (``spacing(-1.0) == -eps``); ``+0`` and ``-0`` give
    the smallest positive subnormal, NaN and infinities NaN.  Integer steps of the bits:
    the next float of larger magnitude is the bit pattern plus one."""
    CT, UT = ct, _unsigned(ct)

    def spacing(x):
        if lang.isnan(x) or lang.isinf(x):
            return x - x  # NaN
        if x == 0:
            return lang.bitcast(UT(1), CT)
        return lang.bitcast(lang.bitcast(x, UT) + UT(1), CT) - x

    spacing.__name__ = spacing.__qualname__ = f"ew_spacing_{ct.name}"
    return spacing


@functools.cache
def sinc(ct):
    """NumPy's ``sinc``: ``sin(pi x) / (pi x)``, 1 at 0, with ``pi x`` rounded to ``ct``
    first as NumPy computes it (``sinc(1.0)`` is 3.9e-17, not 0)."""
    CT = ct

    def sinc(x):
        if x == 0:
            return CT(1)
        y = CT(PI * x)
        return lang.sin(y) / y

    sinc.__name__ = sinc.__qualname__ = f"ew_sinc_{ct.name}"
    return sinc


# The modified Bessel function I0 as in Cephes (Moshier, "Methods and Programs for
# Mathematical Functions", 1989, i0.c): exp(x) times a Chebyshev series in x/4 - 1 of
# exp(-x) I0(x) for 0 <= x <= 8, and exp(x) / sqrt(x) times a series in 16/x - 1 of
# exp(-x) sqrt(x) I0(x) for x > 8.  The coefficients are our own: Chebyshev interpolation
# at 90 nodes in 60-digit decimal arithmetic, of I0's power series (x < 90) and its
# asymptotic series sum(((2k-1)!!)^2 / (k! (8x)^k)) / sqrt(2 pi) (x >= 90), kept while
# above 1e-18 (f(t) = c0/2 + sum c_k T_k(t)); max relative error vs NumPy's i0 4.4e-16.
I0_SMALL = (
    0.6767952744094761, -0.3046826723431984, 0.17162090152220877, -0.09490109704804764,
    0.04930528423967071, -0.02373741480589947, 0.010546460394594998, -0.004324309995050576,
    0.0016394756169413357, -0.0005763755745385824, 0.00018850288509584165,
    -5.754195010082104e-05, 1.6448448070728896e-05, -4.4167383584587505e-06,
    1.1173875391201037e-06, -2.670793853940612e-07, 6.046995022541919e-08,
    -1.300025009986248e-08, 2.6598237246823866e-09, -5.189795601635263e-10,
    9.675809035373237e-11, -1.726826291441556e-11, 2.95505266312964e-12,
    -4.856446783111929e-13, 7.676185498604936e-14, -1.1685332877993451e-14,
    1.715391285555133e-15, -2.431279846547955e-16, 3.3307945188222384e-17,
    -4.4153416464793395e-18,
)  # fmt: skip
I0_LARGE = (
    0.8044904110141088, 0.0033691164782556943, 6.889758346916825e-05, 2.8913705208347567e-06,
    2.0489185894690638e-07, 2.266668990498178e-08, 3.3962320257083865e-09,
    4.94060238822497e-10, 1.1889147107846439e-11, -3.1499165279632416e-11,
    -1.3215811840447713e-11, -1.7941785315068062e-12, 7.180124451383666e-13,
    3.8527783827421426e-13, 1.54008621752141e-14, -4.150569347287222e-14,
    -9.554846698828307e-15, 3.8116806693526224e-15, 1.7725601330565263e-15,
    -3.425485619677219e-16, -2.8276239805165836e-16, 3.461222867697461e-17,
    4.46562142029676e-17, -4.830504485944182e-18, -7.233180487874754e-18,
    9.921475412173699e-19, 1.193650890845982e-18,
)  # fmt: skip


def _chebyshev_terms(coefficients, eps: float) -> tuple:
    """The coefficients that matter at precision ``eps``, highest degree first."""
    last = max(k for k, c in enumerate(coefficients) if abs(c) > eps * 1e-2)
    return tuple(reversed(coefficients[: last + 1]))


@functools.cache
def i0(ct):
    """NumPy's ``i0`` for float type ``ct``, computed in ``ct`` (16-bit floats in float32,
    rounded once at the end); the series is cut where its terms fall below ``ct``'s
    precision.  Clenshaw's recurrence (1955) sums the Chebyshev series."""
    from ember import dtypes

    CT = ct
    WT = dtypes.float32 if ct.is_narrow else ct
    eps = 2.0**-52 if WT.bits == 64 else 2.0**-23
    SMALL = _chebyshev_terms(I0_SMALL, eps)
    LARGE = _chebyshev_terms(I0_LARGE, eps)

    def i0(v):
        x = abs(WT(v))
        if x <= 8:
            y = WT(0.5) * x - 2  # 2t, t = x/4 - 1 in [-1, 1]
            b0, b1, b2 = WT(SMALL[0]), WT(0), WT(0)
            for k in ember.static_range(1, len(SMALL)):
                b2 = b1
                b1 = b0
                b0 = y * b1 - b2 + SMALL[k]
            return CT(lang.exp(x) * (WT(0.5) * (b0 - b2)))
        y = 32 / x - 2  # 2t, t = 16/x - 1 in (-1, 1]
        b0, b1, b2 = WT(LARGE[0]), WT(0), WT(0)
        for k in ember.static_range(1, len(LARGE)):
            b2 = b1
            b1 = b0
            b0 = y * b1 - b2 + LARGE[k]
        return CT(lang.exp(x) * (WT(0.5) * (b0 - b2)) / lang.sqrt(x))

    i0.__name__ = i0.__qualname__ = f"ew_i0_{ct.name}"
    return i0


prefix_c_names(globals())
