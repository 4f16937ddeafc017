"""Elementwise operations on every backend, against NumPy: operators and ufuncs across
dtypes, Python scalars (NEP 50), broadcasting, strided and reversed views, 0-d and empty
arrays, ``out=`` and in-place operators, and the errors."""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
from array_common import COMMON, DTYPES, check, device, sample

import ember

ALL_DTYPE_OPS = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder",
                 "less", "equal", "maximum"]  # fmt: skip
COMMON_OPS = ["pow", "fmod", "not_equal", "less_equal", "greater", "greater_equal",
              "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
              "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "minimum", "fmax",
              "fmin", "atan2", "hypot", "copysign", "logaddexp"]  # fmt: skip
NUMPY = {"pow": "power", "bitwise_left_shift": "left_shift",
         "bitwise_right_shift": "right_shift", "atan2": "arctan2"}  # fmt: skip


def numpy_op(name):
    return getattr(np, NUMPY.get(name, name))


def operands(name, dtype, shape=(5, 7)):
    """Two sample arrays suited to ``name`` (no zero divisors, sane shifts and powers)."""
    if name in ("floor_divide", "remainder", "fmod", "divide"):
        return sample(dtype, shape, 1), sample(dtype, shape, 2, nonzero=True)
    if name in ("bitwise_left_shift", "bitwise_right_shift"):
        bits = np.dtype(dtype).itemsize * 8
        return sample(dtype, shape, 1), sample(dtype, shape, 2, low=0, high=bits + 2)
    if name == "pow":
        high = 3 if np.dtype(dtype).kind != "f" else None
        return sample(dtype, shape, 1, low=-4, high=4), sample(dtype, shape, 2, low=0, high=high)
    return sample(dtype, shape, 1), sample(dtype, shape, 2)


def run_binary(name, a, b):
    """Compare ``ember.<name>`` with NumPy's on host arrays (or scalars) ``a`` and ``b``;
    when NumPy refuses the dtypes, Ember must refuse them too."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = numpy_op(name)(a, b)
        except TypeError:
            expected = TypeError
    da = ember.asarray(a) if isinstance(a, np.ndarray) else a
    db = ember.asarray(b) if isinstance(b, np.ndarray) else b
    if expected is TypeError:
        with pytest.raises(TypeError):
            getattr(ember, name)(da, db)
        return
    check(getattr(ember, name)(da, db), expected)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ALL_DTYPE_OPS)
def test_binary_every_dtype(backend, name, dtype):
    run_binary(name, *operands(name, dtype))


@pytest.mark.parametrize("dtype", COMMON)
@pytest.mark.parametrize("name", COMMON_OPS)
def test_binary_common_dtypes(backend, name, dtype):
    run_binary(name, *operands(name, dtype))


@pytest.mark.parametrize(
    "pair",
    [
        ("int8", "uint8"),
        ("int32", "float32"),
        ("uint64", "int64"),
        ("bool", "float16"),
        ("float16", "float64"),
        ("int16", "uint32"),
    ],  # fmt: skip
    ids=lambda p: "-".join(p),
)
@pytest.mark.parametrize("name", ["add", "divide", "less", "maximum"])
def test_binary_mixed_dtypes_promote_like_numpy(backend, name, pair):
    run_binary(name, sample(pair[0], (9,), 1), sample(pair[1], (9,), 2, nonzero=True))


UNARY_FLOAT = ["negative", "positive", "abs", "sign", "square", "reciprocal", "sqrt",
               "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos",
               "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
               "atanh", "floor", "ceil", "trunc", "rint", "fabs", "isnan", "isinf",
               "isfinite", "signbit", "logical_not"]  # fmt: skip
NUMPY_UNARY = {"abs": "absolute", "asin": "arcsin", "acos": "arccos", "atan": "arctan",
               "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh",
               "bitwise_invert": "invert"}  # fmt: skip


def run_unary(name, a, rtol=None):
    with np.errstate(all="ignore"):
        expected = getattr(np, NUMPY_UNARY.get(name, name))(a)
    check(getattr(ember, name)(ember.asarray(a)), expected, rtol=rtol)


def special_floats(dtype):
    values = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -3.5, 1e3, np.inf, -np.inf, np.nan]
    return np.array(values + list(sample(dtype, (20,), 3)), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", UNARY_FLOAT)
def test_unary_math_floats(backend, name, dtype):
    rtol = 2e-5 if dtype == "float32" else 1e-12  # device libm: a few ulp
    run_unary(name, special_floats(dtype), rtol)


@pytest.mark.parametrize("name", ["sqrt", "exp", "sin", "tanh", "floor", "isnan", "sign"])
def test_unary_math_float16(backend, name):
    run_unary(name, special_floats("float16"))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64", "bool"])
@pytest.mark.parametrize(
    "name", ["negative", "abs", "sign", "square", "bitwise_invert", "floor", "sqrt", "isnan"]
)
def test_unary_integers_and_bools(backend, name, dtype):
    a = sample(dtype, (11,), 4)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = getattr(np, NUMPY_UNARY.get(name, name))(a)
        except TypeError:
            with pytest.raises(TypeError):
                getattr(ember, name)(ember.asarray(a))
            return
    check(getattr(ember, name)(ember.asarray(a)), expected)


def test_special_functions_without_numpy_equivalent(backend):
    import math

    x = np.array([0.25, 0.5, 1.5, 3.0], np.float64)
    d = ember.asarray(x)
    for name, fn in [("erf", math.erf), ("erfc", math.erfc), ("lgamma", math.lgamma),
                     ("tgamma", math.gamma), ("rsqrt", lambda v: 1 / math.sqrt(v))]:  # fmt: skip
        check(getattr(ember, name)(d), np.array([fn(v) for v in x]), rtol=1e-12)


# --------------------------------------------------------------------- operators, scalars
OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
             operator.mod, operator.lt, operator.ge, operator.eq, operator.ne]  # fmt: skip


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("value", [3, 2.5], ids=["int", "float"])
def test_python_scalars_are_weak(backend, dtype, value):
    a = sample(dtype, (13,), 5, low=-50, high=50, nonzero=True)
    d = ember.asarray(a)
    for op in OPERATORS:
        with np.errstate(all="ignore"):
            check(op(d, value), op(a, value))
            check(op(value, d), op(value, a))


def test_operator_table(backend):
    a = sample("int32", (4, 6), 6, low=-100, high=100, nonzero=True)
    b = sample("int32", (4, 6), 7, low=1, high=5)
    da, db = ember.asarray(a), ember.asarray(b)
    for op in (operator.pow, operator.and_, operator.or_, operator.xor, operator.lshift,
               operator.rshift, operator.le, operator.gt):  # fmt: skip
        check(op(da, db), op(a, b))
    check(-da, -a)
    check(+da, +a)
    check(abs(da), abs(a))
    check(~da, ~a)
    q, r = divmod(da, db)
    check(q, a // b)
    check(r, a % b)
    check(2**db, 2**b)
    check(7 // db, 7 // b)
    check(da.__rmod__(7), 7 % a)


def test_numpy_scalars_are_strong(backend):
    a = sample("float32", (6,), 8)
    d = ember.asarray(a)
    check(d + np.float64(1.5), a + np.float64(1.5))
    check(np.float16(2) * d, np.float16(2) * a)  # ember's __rmul__ (NumPy defers to it)
    i = sample("int8", (6,), 9)
    check(ember.asarray(i) + np.int64(3), i + np.int64(3))


def test_python_int_out_of_range(backend):
    u8 = ember.asarray(np.array([0, 7, 255], np.uint8))
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for uint8"):
        u8 + 300
    with pytest.raises(OverflowError, match="out of bounds for uint8"):
        u8 - (-1)
    host = np.array([0, 7, 255], np.uint8)
    check(u8 < 300, host < 300)  # comparisons are exact (NumPy 2)
    check(u8 == -1, host == -1)
    i64 = ember.asarray(np.array([-5, 2**62], np.int64))
    check(i64 < 2**63, np.array([-5, 2**62], np.int64) < 2**63)
    with pytest.raises(ValueError, match="negative integer powers"):
        ember.asarray(np.arange(3)) ** -1


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "uint64"])
def test_comparisons_with_python_ints_beyond_the_dtype_are_exact(backend, dtype):
    # NumPy 2 compares exactly: int64 2**63 - 1 is not 2**63 (through float64 it was equal)
    info = np.iinfo(dtype)
    host = np.array([info.min, info.min + 1, 0, info.max - 1, info.max], dtype)
    x = ember.asarray(host)
    values = [int(info.max) + 1, int(info.min) - 1, 2**64, -(2**64), 2**70, 2**63, -(2**63) - 1]
    compare = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]
    for v in values:
        for op in compare:
            check(op(x, v), op(host, v))
            check(op(v, x), op(v, host))  # the int on the left
    out = ember.ones(5, ember.bool_)
    assert ember.equal(x, 2**64, out=out) is out
    check(out, np.zeros(5, bool))
    check(ember.less(x[::2], 2**64), np.ones(3, bool))  # a strided view


def test_numpy_scalars_on_the_left_of_comparisons(backend):
    host = np.arange(4.0)
    x = ember.asarray(host)
    check(np.float32(1.5) < x, np.float32(1.5) < host)  # NumPy passes a 0-d array
    check(np.float64(1.0) == x, np.float64(1.0) == host)
    check(np.int64(2) >= x, np.int64(2) >= host)


def test_bool_arithmetic_follows_numpy(backend):
    a, b = sample("bool", (8,), 1), sample("bool", (8,), 2)
    da, db = ember.asarray(a), ember.asarray(b)
    check(da + db, a + b)
    check(da * db, a * b)
    check(da // ember.asarray(np.ones(8, bool)), a // np.ones(8, bool))
    check(~da, ~a)
    check(da + 1, a + 1)
    with pytest.raises(TypeError, match="subtracting booleans"):
        da - db
    with pytest.raises(TypeError, match="ember.negative does not support bool"):
        _ = -da


# --------------------------------------------------------------------- broadcasting, layout
VIEWS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: a.T,
    "stepped": lambda a: a[::2, 1::3],
    "reversed": lambda a: a[::-1, ::-2],
    "row": lambda a: a[2],
    "column": lambda a: a[:, 3:4],
}


@pytest.mark.parametrize("left", list(VIEWS))
@pytest.mark.parametrize("right", ["contiguous", "reversed", "row", "column"])
def test_broadcast_and_views(backend, left, right):
    a, b = sample("float32", (8, 8), 1), sample("float32", (8, 8), 2)
    da, va = device(a, VIEWS[left])
    db, vb = device(b, VIEWS[right])
    try:
        expected = va * vb + vb
    except ValueError:
        with pytest.raises(ValueError, match="could not be broadcast together"):
            da * db
        return
    check(da * db + db, expected)


def test_broadcast_n_d(backend):
    a = sample("int32", (3, 1, 5, 1), 1, low=-9, high=9)
    b = sample("int32", (4, 1, 6), 2, low=-9, high=9)
    c = sample("int32", (1, 1), 3, low=-9, high=9)
    da, db, dc = map(ember.asarray, (a, b, c))
    check(da - db, a - b)
    check(ember.where(da > db, dc, db), np.where(a > b, c, b))
    check(ember.maximum(da[:, :, ::-2], 0), np.maximum(a[:, :, ::-2], 0))


def test_views_of_one_geometry_at_other_offsets(backend):
    """The strided path keeps its layout arithmetic by geometry (shapes, strides, item
    sizes), not by offset or buffer: slices of one shape at every offset, forward and
    reversed, of two arrays, each give NumPy's answer."""
    a, b = sample("float32", (12, 9), 1), sample("float32", (12, 9), 2)
    row = sample("float32", (1, 9), 3)
    da, db, drow = ember.asarray(a), ember.asarray(b), ember.asarray(row)
    for i in range(0, 9, 2):
        for x, dx in ((a, da), (b, db)):
            check(dx[i : i + 3] + drow, x[i : i + 3] + row)
            check(dx[i + 2 : i - 1 if i else None : -1, ::-2] * drow[:, ::-2],
                  x[i + 2 : i - 1 if i else None : -1, ::-2] * row[:, ::-2])  # fmt: skip
            check(dx[i : i + 3].T - 1, x[i : i + 3].T - 1)
            for cols in (slice(0, 5), slice(None, None, 2)):  # one shape, two strides
                check(dx[i : i + 3, cols] + drow[:, :5], x[i : i + 3, cols] + row[:, :5])


def test_zero_d_and_empty(backend):
    z = ember.asarray(np.float32(2.5))
    check(z * 2, np.asarray(np.float32(2.5) * 2))
    check(z + ember.asarray(np.arange(3, dtype=np.float32)), 2.5 + np.arange(3, dtype=np.float32))
    e = ember.asarray(np.zeros((0, 4), np.float32))
    check(e + 1, np.zeros((0, 4), np.float32) + 1)
    check(e + ember.asarray(np.ones(4, np.float32)), np.zeros((0, 4), np.float32) + 1)
    check(ember.sqrt(ember.asarray(np.zeros((3, 0), np.float64))), np.zeros((3, 0)))


def test_large_arrays_use_the_grid_stride_loops(backend):
    n = (1 << 20) + 3
    a = np.arange(n, dtype=np.float32)
    d = ember.asarray(a)
    check(d * 2 + 1, a * 2 + 1)
    m = ember.asarray(a[: 1024 * 1023].reshape(1024, 1023))
    check(m.T + 1, a[: 1024 * 1023].reshape(1024, 1023).T + 1)


def test_transpose_copy_uses_tiles(backend):
    for dtype in ("float32", "float16", "int8", "float64"):
        a = sample(dtype, (70, 50), 3)
        d = ember.asarray(a)
        check(d.T.copy(), a.T.copy(), exact=True)
        check(d[::-1].T.copy(), a[::-1].T.copy(), exact=True)
        check(ember.asarray(a.T).T.astype("float32"), a.astype("float32"), exact=True)


# --------------------------------------------------------------------- out= and in-place
def test_out_and_in_place(backend):
    a, b = sample("float32", (4, 5), 1), sample("float32", (5,), 2)
    da, db = ember.asarray(a), ember.asarray(b)
    out = ember.empty((4, 5), ember.float64)
    assert ember.add(da, db, out=out) is out
    check(out, (a + b).astype(np.float64))
    x = da.copy()
    alias = x
    x += db
    assert x is alias  # in place
    x *= 2
    x -= 1.5
    x /= 3
    check(x, ((a + b) * 2 - np.float32(1.5)) / 3)
    same = ember.asarray(a.copy())
    same += same
    same *= same
    check(same, (a + a) * (a + a))
    ints = ember.asarray(np.arange(6, dtype=np.int64))
    with pytest.raises(TypeError, match="same_kind"):
        ints += 1.5
    with pytest.raises(ValueError, match="non-broadcastable output"):
        ember.add(da, db, out=ember.empty(5, ember.float32))
    view = da.copy()
    row = view[1:3, ::2]
    row += 100  # an in-place operator on a strided view writes through to the base
    expected = a.copy()
    expected[1:3, ::2] += 100
    check(view, expected)


def test_overlapping_in_place_reads_before_writing(backend):
    a = np.arange(10, dtype=np.int32)
    d = ember.asarray(a)
    d[1:] += d[:-1]
    a[1:] += a[:-1].copy()
    check(d, a)
    m = np.arange(12, dtype=np.float64).reshape(3, 4)
    dm = ember.asarray(m)
    dm += dm[0]
    m += m[0].copy()
    check(dm, m)


# --------------------------------------------------------------------- functions, errors
def test_where_clip_round(backend):
    a = sample("float32", (6, 4), 1)
    d = ember.asarray(a)
    check(ember.where(d > 0, d, 0.0), np.where(a > 0, a, np.float32(0)))
    check(ember.where(d > 0, 1, -1), np.where(a > 0, 1, -1))
    check(ember.clip(d, -1, 1), np.clip(a, -1, 1))
    check(ember.clip(d, max=0.5), np.clip(a, None, 0.5))
    check(ember.round(d * 10), np.round(a * 10))
    check(ember.round(d, decimals=2), np.round(a, 2), rtol=1e-6)
    i = np.array([15, 25, -35, 149, 250], np.int32)  # integers keep their dtype, as NumPy
    check(ember.round(ember.asarray(i), -1), np.round(i, -1))
    check(ember.round(ember.asarray(i), 2), np.round(i, 2))
    i = ember.asarray(np.arange(-3, 3))
    check(ember.clip(i, -1, 1), np.clip(np.arange(-3, 3), -1, 1))


def test_errors(backend):
    x = ember.zeros((2, 3), ember.float32)
    with pytest.raises(
        ValueError, match=r"could not be broadcast together with shapes \(2, 3\) \(4,\)"
    ):
        x + ember.zeros(4, ember.float32)
    with pytest.raises(TypeError, match=r"ember.add needs device memory.*ember.asarray"):
        x + np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match="needs device memory"):
        np.ones((2, 3), np.float32) + x
    with pytest.raises(TypeError, match="needs device memory"):
        x * [1, 2, 3]
    with pytest.raises(TypeError, match="bitwise operations need integer"):
        x & x
    with pytest.raises(TypeError, match="does not support dtype 'datetime64"):
        x * np.datetime64(1, "s")
    with pytest.raises(TypeError, match="does not support dtype 'float128'.*complex64"):
        ember.zeros(3, "float128")
    check(x == None, np.zeros(x.shape, bool))  # noqa: E711 - elementwise, as NumPy 2's
    check(x != None, np.ones(x.shape, bool))  # noqa: E711
    with pytest.raises(TypeError, match="needs device memory"):
        x == [0.0, 0.0, 0.0]  # noqa: B015 - host data, as for <: Python False was silent
    assert x != "text"


def test_ufuncs_on_host_values_use_numpy():
    assert ember.sqrt(4.0) == 2.0
    np.testing.assert_array_equal(ember.add(np.arange(3), 1), np.arange(3) + 1)
    assert repr(ember.add) == "<ember ufunc add>"


# --------------------------------------------------------------------- vectorize
@ember.vectorize
def axpy_like(x, y):
    return 2 * x + y


@ember.vectorize(dtype="bool")
def inside(x, lo, hi):
    return lo <= x and x < hi


def test_vectorize_fuses_a_scalar_function(backend):
    a, b = sample("float32", (6, 5), 1), sample("float32", (5,), 2)
    da, db = ember.asarray(a), ember.asarray(b)
    check(axpy_like(da, db), 2 * a + b)
    check(axpy_like(da.T, 1.5), 2 * a.T + np.float32(1.5))
    out = ember.zeros((6, 5), ember.float32)
    assert axpy_like(da, db, out=out) is out
    check(out, 2 * a + b)
    check(inside(da, -1, 1.0), (-1 <= a) & (a < 1))
    i = sample("int16", (7,), 3)
    check(axpy_like(ember.asarray(i), 3), (2 * i + 3).astype(np.int16))
    np.testing.assert_array_equal(axpy_like(a, b), 2 * a + b)  # host values: the function
    assert axpy_like.__name__ == "axpy_like" and axpy_like.nin == 2


def test_round_to_more_digits_than_float64_holds(backend):
    # 10.0 ** 309 overflows Python's float power; NumPy's is inf, so the result NaN
    x = np.array([1.5, 0.1, -2.5])
    for decimals in (309, 400, -400, 308):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            want = np.round(x, decimals)
            got = ember.round(ember.asarray(x), decimals)
        check(got, want)


def test_in_is_numpys_any_of_equal(backend):
    m = np.array([[1.5, 2.0], [3.0, 4.0]])
    x = ember.asarray(m)
    assert 1.5 in x and 7 not in x and 2 in ember.asarray(np.array(2.0))
    assert ember.asarray(np.array([3.0, 9.0])) in x  # (x == v).any(): a row matching in part
    with pytest.raises(TypeError, match="needs device memory"):
        [3.0, 9.0] in x  # noqa: B015 - host data is refused, not compared row by row


def test_arange_of_numpy_scalars_and_0d_arrays(backend):
    for args in ((np.int64(5),), (np.int8(0), np.int8(100), np.int8(7)), (1, np.int64(7), 2),
                 (ember.asarray(np.array(4)),), (np.float32(2.5),)):  # fmt: skip
        got = ember.arange(*args)
        want = np.arange(*(a.to_numpy()[()] if isinstance(a, ember.ndarray) else a for a in args))
        assert got.dtype == want.dtype
        check(got, want)
