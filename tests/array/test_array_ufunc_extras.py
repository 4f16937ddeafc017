"""NumPy's elementwise functions beyond the Array API (deg2rad, heaviside, gcd, spacing, i0...)
against NumPy: result dtypes for every dtype (no device), then values on every backend with
special values (NaN, infinities, signed zeros, the largest and smallest magnitudes),
broadcasting with scalars, ``out=`` and NumPy's ufunc protocol.

Each distinct kernel compiles once per test run, so the device tests pick a few dtypes each
(the rule tests cover the rest): the file must stay fast on CI's CPU backend."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from array_common import COMPLEX, DTYPES, check, sample

import ember
from ember.array import ufuncs
from ember.array.rules import scalar_type
from ember.frontend.types import scalar

UNARY = ["deg2rad", "rad2deg", "spacing", "bitwise_count", "isposinf", "isneginf", "sinc", "i0"]
BINARY = ["heaviside", "logaddexp2", "gcd", "lcm", "float_power"]
INF, NAN = np.inf, np.nan


def numpy_dtypes(fn, *operands):
    """The dtype(s) of NumPy's result, or TypeError when NumPy refuses the operands."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            result = fn(*operands)
        except TypeError:
            return TypeError
    if isinstance(result, tuple):
        return tuple(np.asarray(r).dtype for r in result)
    return np.asarray(result).dtype


def ember_dtype(uf, *types):
    try:
        return uf.rule(types).out.numpy
    except TypeError:
        return TypeError


def kernel_type(x):
    return scalar(ember.dtype(x.dtype)) if isinstance(x, np.ndarray) else scalar_type(x)


# --------------------------------------------------------------------- type rules (no device)
@pytest.mark.parametrize("name", UNARY + ["modf", "frexp"])
def test_unary_rules_match_numpy(name):
    for a in DTYPES + COMPLEX:
        x = np.ones(2, a)
        expected = numpy_dtypes(getattr(np, name), x)
        if name == "modf":  # two ufuncs: the fraction's and the integral part's
            parts = (ufuncs._modf_fraction, ufuncs._modf_integral)
            got = tuple(ember_dtype(uf, kernel_type(x)) for uf in parts)
            got = TypeError if TypeError in got else got
        elif name == "frexp":  # the mantissa's ufunc and the exponent's
            parts = (ufuncs._frexp_mantissa, ufuncs._frexp_exponent)
            got = tuple(ember_dtype(uf, kernel_type(x)) for uf in parts)
            got = TypeError if TypeError in got else got
        else:
            got = ember_dtype(getattr(ufuncs, name), kernel_type(x))
        assert got == expected, f"{name}({a}): ember {got}, NumPy {expected}"


@pytest.mark.parametrize("name", BINARY)
def test_binary_rules_match_numpy(name):
    values = [np.ones(2, d) for d in DTYPES + COMPLEX] + [True, 3, 2.5]
    for a in values[:-3]:
        for b in values:
            for args in ((a, b), (b, a)):
                expected = numpy_dtypes(getattr(np, name), *args)
                got = ember_dtype(getattr(ufuncs, name), *map(kernel_type, args))
                assert got == expected, f"{name}{[getattr(x, 'dtype', x) for x in args]}: {got}"


def test_ldexp_rules_match_numpy():
    # NumPy's loops: x to its smallest float, e any integer that casts safely to int64;
    # a Python int x is float64 here (NumPy picks float16, which overflows at 65504)
    values = [np.ones(2, d) for d in DTYPES + COMPLEX]
    for a in values:
        for b in [*values, True, 3, 2.5]:
            expected = numpy_dtypes(np.ldexp, a, b)
            got = ember_dtype(ufuncs.ldexp, kernel_type(a), kernel_type(b))
            assert got == expected, f"ldexp({a.dtype}, {getattr(b, 'dtype', b)}): {got}"
    for b in values:
        want = TypeError if numpy_dtypes(np.ldexp, 2.5, b) is TypeError else np.float64
        assert ember_dtype(ufuncs.ldexp, kernel_type(2.5), kernel_type(b)) == want
        assert ember_dtype(ufuncs.ldexp, kernel_type(3), kernel_type(b)) == want


def test_aliases_and_host_values():
    assert ember.degrees is ember.rad2deg and ember.radians is ember.deg2rad
    assert ember.gcd(12, 18) == 6  # no ember array: NumPy's
    frac, whole = ember.modf(np.array([-2.5]))
    assert frac[0] == -0.5 and whole[0] == -2.0
    assert ember.divmod(7, -2) == (-4, -1)


# --------------------------------------------------------------------- values
def special(dtype, extra=()):
    """Special values, the extremes of ``dtype`` and random ones."""
    f = np.finfo(dtype)
    values = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -3.5, 7.0, 9.0, -30.0, INF, -INF, NAN,
              f.max, -f.max, f.tiny, -f.smallest_subnormal, *extra]  # fmt: skip
    return np.concatenate([np.array(values, dtype), sample(dtype, (9,), 7)])


def run(name, *args, rtol=None, exact=False, signs=False):
    """``ember.<name>`` on ``args`` (host arrays go to the device) against NumPy's."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = getattr(np, name)(*args)
    got = getattr(ember, name)(*(ember.asarray(a) if isinstance(a, np.ndarray) else a
                                 for a in args))  # fmt: skip
    pairs = zip(got, expected, strict=True) if isinstance(expected, tuple) else [(got, expected)]
    for g, e in pairs:
        check(g, e, exact=exact, rtol=rtol)
        if signs:  # signed zeros (NaN's sign is not specified)
            g, e = g.to_numpy(), np.asarray(e)
            np.testing.assert_array_equal(np.signbit(g) | np.isnan(e), np.signbit(e) | np.isnan(e))


def test_angle_conversions(backend):
    run("deg2rad", special("float64", [1e308]), signs=True)
    run("rad2deg", special("float32"), signs=True)  # float32 max overflows to inf


def test_heaviside(backend):
    x = special("float64")
    h = np.resize(np.array([0.5, NAN, -0.0, 2.0]), x.shape)
    run("heaviside", x, h, signs=True)
    run("heaviside", special("float32"), 0.5, signs=True)  # a Python float stays weak


def test_logaddexp2(backend):
    x = special("float64", [-1e3, 1074.0])
    run("logaddexp2", x, x[::-1].copy())
    run("logaddexp2", x, x.copy())  # equal operands, infinities of one sign


def test_gcd_lcm(backend):
    a = np.array([-128, -100, 0, 0, 12, 127, -1, 35, -7, 64], np.int8)
    b = np.array([6, 3, 0, -5, 18, -1, -128, -21, 0, 48], np.int8)
    run("gcd", a, b)  # never negative, except gcd(-128, 0): the magnitude wraps, as NumPy's
    run("lcm", a, b)  # |a| / gcd * |b|, wrapping on overflow
    u = np.array([0, 1, 12, 2**63, 2**64 - 1, 2**64 - 2], np.uint64)
    run("gcd", u, 18)
    with pytest.raises(TypeError, match="ember.gcd does not support float32"):
        ember.gcd(ember.asarray(np.ones(3, np.float32)), 2)
    with pytest.raises(TypeError, match="ember.lcm does not support bool and bool"):
        ember.lcm(ember.asarray(np.ones(3, bool)), ember.asarray(np.ones(3, bool)))


def test_bitwise_count(backend):
    run("bitwise_count", np.array([0, 1, -1, 127, -128, 85, -86], np.int8))  # of |x|
    run("bitwise_count", np.array([0, 2**64 - 1, 2**63, 12345678901234567], np.uint64))
    with pytest.raises(TypeError, match="bitwise_count does not support float64"):
        ember.bitwise_count(ember.asarray(np.ones(2)))


def test_float_power(backend):
    a = sample("int64", (12,), 2, low=-9, high=9)
    run("float_power", a, sample("int64", (12,), 3, low=-4, high=4))  # negative powers too


def test_divmod_and_modf(backend):
    x, y = special("float64"), np.resize(np.array([3.0, -0.0, -2.5, INF, 0.0, NAN]), 27)
    run("divmod", x, y, signs=True)
    run("modf", x, signs=True)  # (fraction, integral), both with x's sign
    q, r = ember.empty(27, ember.float64), ember.empty(27, ember.float64)
    assert ember.divmod(ember.asarray(x), ember.asarray(y), out=(q, r)) == (q, r)
    with np.errstate(all="ignore"):
        check(r, np.remainder(x, y))
        frac, whole = np.modf(ember.asarray(x), out=(q, r))  # NumPy's protocol, out= too
    assert frac is q and whole is r
    check(frac, np.modf(x)[0])


def test_frexp_and_ldexp(backend):
    for dtype in ("float64", "float32", "float16"):
        x = special(dtype, [3.0, -0.1, 1e-40 if dtype != "float16" else 1e-6])
        run("frexp", x, exact=True, signs=True)  # 0, inf, NaN: themselves, exponent 0
        e = np.resize(np.array([0, 1, -1, 3, -60, 200, -1100, 1100, 2000, -2000]), x.shape)
        run("ldexp", x, e, exact=True, signs=True)  # to subnormals, overflow to inf
        run("ldexp", x, e.astype(np.int8), exact=True)
        run("ldexp", x, 7, exact=True)
    run("frexp", np.array([0, 1, -3, 100, 127], np.int8), exact=True)  # float16 mantissas
    run("ldexp", np.array([1, -3, 5], np.int32), np.array([2, -1, 10], np.int16), exact=True)
    huge = ember.ldexp(ember.asarray(np.array([1.0, -1.0, 0.0])), ember.asarray(
        np.array([2**40, -(2**62), 2**62])))  # fmt: skip
    check(huge, np.array([INF, -0.0, 0.0]), exact=True)  # saturates (NumPy: OverflowError)
    m, e = ember.empty(3, ember.float64), ember.empty(3, ember.int32)
    got = np.frexp(ember.asarray(np.array([8.0, -0.375, 1.0])), out=(m, e))  # NumPy's protocol
    assert got[0] is m and got[1] is e
    check(m, np.array([0.5, -0.75, 0.5]), exact=True)
    check(e, np.array([4, -1, 1], np.int32), exact=True)
    with pytest.raises(TypeError, match="exponent must be an integer"):
        ember.ldexp(ember.asarray(np.ones(2)), 1.5)
    with pytest.raises(TypeError, match="not defined for complex"):
        ember.frexp(ember.asarray(np.ones(2, np.complex64)))


def test_frexp_and_ldexp_inside_kernels(backend):
    @ember.kernel
    def split_and_join(x, m, e, y):
        i = ember.global_id()
        if i < x.shape[0]:
            mm, ee = ember.frexp(x[i])
            m[i] = mm
            e[i] = ee
            y[i] = ember.ldexp(mm, ee)

    for dtype in ("float64", "float32"):
        host = np.array([3.0, 0.1, -7.25, 1e-30, 6e4], dtype)
        x, m = ember.asarray(host), ember.empty(5, ember.dtype(dtype))
        e, y = ember.empty(5, ember.int32), ember.empty(5, ember.dtype(dtype))
        split_and_join.launch(5)(x, m, e, y)
        want_m, want_e = np.frexp(host)
        check(m, want_m, exact=True)
        check(e, want_e, exact=True)
        check(y, host, exact=True)


def test_spacing(backend):
    for dtype in ("float64", "float32"):
        run("spacing", special(dtype), exact=True, signs=True)
    # float16: NumPy's half-precision loop has its own (wrong) rule for negative values
    # (spacing(-1) == +2**-11); Ember gives the float32/float64 rule: -(2**-10)
    x = special("float16")
    with np.errstate(all="ignore"):
        away = np.nextafter(x, np.copysign(np.float16(INF), x))
        expected = np.where(x == 0, np.float16(2**-24), away - x).astype(np.float16)
    expected[~np.isfinite(x)] = NAN
    check(ember.spacing(ember.asarray(x)), expected, exact=True)


def test_isposinf_isneginf(backend):
    x = special("float64")
    run("isposinf", x)
    run("isneginf", x)
    with pytest.raises(TypeError, match="not defined for complex"):
        ember.isposinf(ember.asarray(np.ones(2, np.complex64)))


def test_sinc(backend):
    run("sinc", special("float64", [1e300, -1e-300, 3.0]))


def test_i0(backend):
    x = np.concatenate([special("float64"), np.linspace(-40, 40, 81), [700.0, 713.0, -8.0]])
    run("i0", x)  # exp(x) overflows beyond 709.78, to inf as NumPy's
    run("i0", special("float32", [8.0, 88.0, -89.0]), rtol=1e-5)  # NumPy also sums in float32
    # float16: summed in float32 and rounded once (NumPy sums in float16, less accurately,
    # and overflows beyond |x| 11.1: Ember's result is finite up to |x| 12.8)
    h = np.linspace(-11, 11, 45, dtype=np.float16)
    check(ember.i0(ember.asarray(h)), np.i0(h.astype(np.float64)).astype(np.float16))


def test_broadcasting_out_and_the_numpy_protocol(backend):
    x = sample("float64", (5, 1), 4, low=-2, high=2).round()
    h = sample("float64", (1, 7), 5)
    out = ember.empty((5, 7), ember.float64)
    assert ember.heaviside(ember.asarray(x), ember.asarray(h), out=out) is out
    check(out, np.heaviside(x, h))
    d = ember.asarray(special("float64"))
    for fn in (np.deg2rad, np.radians, np.isposinf, np.i0):
        result = fn(d)  # ufuncs through __array_ufunc__, the others __array_function__
        assert isinstance(result, ember.ndarray), fn.__name__
        with np.errstate(all="ignore"):
            check(result, fn(special("float64")))


@pytest.mark.slow
def test_the_new_kernels_compile_for_cuda():
    from gpu_standin import nvrtc_available, to_ptx

    from ember.array import kernels

    if not nvrtc_available():
        pytest.skip("NVRTC is not available")
    cases = [
        ("spacing", "float16"), ("spacing", "float32"), ("i0", "float16"), ("i0", "float64"),
        ("gcd", "int8", "int8"), ("lcm", "uint64", "uint64"), ("bitwise_count", "int16"),
        ("sinc", "complex64"), ("logaddexp2", "float32", "float32"),
        ("heaviside", "float16", "float16"), ("isneginf", "int32"), ("rad2deg", "float16"),
        ("float_power", "complex128", "complex128"), ("_modf_fraction", "float16"),
        ("_frexp_mantissa", "float16"), ("_frexp_exponent", "float64"),
        ("ldexp", "float16", "int64"), ("ldexp", "float32", "int8"),
    ]  # fmt: skip
    for name, *dts in cases:
        res = getattr(ufuncs, name).rule(tuple(scalar(ember.dtype(d)) for d in dts))
        k = kernels.contiguous(res.op, res.ct, (True,) * len(dts))
        args = (4, np.zeros(4, res.out.numpy), *(np.zeros(4, d) for d in dts))
        assert ".entry" in to_ptx(k, args), (name, dts)


@pytest.mark.parametrize("which", ["first", "second", "both"])
def test_divmod_and_modf_into_their_own_inputs(backend, which):
    # two kernels, one per result: an input that is also the first output must not be
    # overwritten before the second kernel reads it (NumPy computes both in one loop)
    host_x, host_y = np.array([1.5, -2.5, 3.25, 7.0]), np.array([2.0, 2.0, -2.0, 0.5])
    x, y = ember.asarray(host_x), ember.asarray(host_y)
    out = {"first": (x, ember.zeros(4)), "second": (ember.zeros(4), x), "both": (x, y)}[which]
    got = ember.divmod(x, y, out=out)
    assert got[0] is out[0] and got[1] is out[1]
    for g, want in zip(got, np.divmod(host_x, host_y), strict=True):
        check(g, want)
    x, m = ember.asarray(host_x), ember.zeros(4)
    out = {"first": (x, m), "second": (m, x), "both": (x[:2], x[2:])}[which]
    got = ember.modf(x[:2] if which == "both" else x, out=out)  # "both": x[2:] is disjoint
    want = np.modf(host_x[:2] if which == "both" else host_x)
    for g, w in zip(got, want, strict=True):
        check(g, w)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "int64", "uint64"])
def test_reciprocal_of_integers_stays_integer(backend, dtype):
    # NumPy: 1 / x truncated, in the input's type (bool: int8); 0 is left out (its result
    # differs between NumPy's own loops)
    values = (
        [True]
        if dtype == "bool"
        else [1, 2, 3, 100, 127] + ([-1, -2, -127] if "u" not in dtype else [255])
    )
    host = np.array(values, dtype=dtype)
    check(ember.reciprocal(ember.asarray(host)), np.reciprocal(host))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_integers_to_negative_integer_array_powers_raise(backend, dtype):
    # NumPy raises ValueError; a Python int exponent is checked before the launch, an
    # array one by the kernel (raised at the next synchronization, the device stays usable)
    base = ember.asarray(np.array([2, 3, 2], dtype))
    with pytest.raises(ValueError, match="negative integer powers"):
        (base ** ember.asarray(np.array([1, -1, 2], dtype))).to_numpy()
    with pytest.raises(ValueError, match="negative integer powers"):
        (2 ** ember.asarray(np.array([1, -2], dtype))).to_numpy()
    with pytest.raises(ValueError, match="negative integer powers"):
        base**-1
    good = np.array([3, 0, 2], dtype)
    check(base ** ember.asarray(good), np.array([2, 3, 2], dtype) ** good)
    check(base**2, np.array([2, 3, 2], dtype) ** 2)
