"""Complex arrays on every backend, against NumPy: creation, the promotion tables (the Array
API's and NumPy's), elementwise arithmetic and math, the parts (views), comparisons,
casts, conversions, printing, pickling, DLPack and NumPy's protocols.

Tolerances (``array_common.TOLERANCE``): complex64 1e-5, complex128 1e-12, relative and
absolute per part (the math functions are a few ulp from the C library NumPy calls; see
``tests/backend/test_kernels_complex.py`` for the functions on special values).
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from array_common import COMPLEX, DTYPES, check, sample

import ember
from ember.array import ufuncs
from ember.array.rules import scalar_type
from ember.frontend.types import WEAK_COMPLEX, scalar

ORDERED = {"less", "less_equal", "greater", "greater_equal", "maximum", "minimum", "fmax",
           "fmin"}  # fmt: skip
NUMPY = {"pow": "power", "atan2": "arctan2", "asin": "arcsin", "acos": "arccos",
         "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh",
         "abs": "absolute", "bitwise_left_shift": "left_shift",
         "bitwise_right_shift": "right_shift", "bitwise_invert": "invert"}  # fmt: skip


def _numpy(name):
    return getattr(np, NUMPY.get(name, name))


def _numpy_dtype(name, *operands):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return np.asarray(_numpy(name)(*operands)).dtype
        except TypeError:
            return TypeError


def _ember_dtype(name, *types):
    try:
        return getattr(ufuncs, name).rule(types).out.numpy
    except TypeError:
        return TypeError


# --------------------------------------------------------------------- type rules (no device)
@pytest.mark.parametrize("name", ufuncs.BINARY)
def test_binary_rules_with_complex_match_numpy_except_order(name):
    """Every dtype pair with a complex side: NumPy's result dtype, or NumPy's refusal; the
    ordered operations are refused (the Array API), where NumPy orders lexicographically."""
    for a in COMPLEX:
        for b in DTYPES + COMPLEX:
            for x, y in ((a, b), (b, a)):
                expected = _numpy_dtype(name, np.ones(2, x), np.ones(2, y))
                got = _ember_dtype(name, scalar(ember.dtype(x)), scalar(ember.dtype(y)))
                if name in ORDERED:
                    expected = TypeError
                assert got == expected, f"{name}({x}, {y}): ember {got}, NumPy {expected}"


@pytest.mark.parametrize("name", ufuncs.BINARY)
def test_python_complex_scalars_are_weak(name):
    for a in DTYPES + COMPLEX:
        for args in ((np.ones(2, a), 1.5j), (1.5j, np.ones(2, a))):
            expected = TypeError if name in ORDERED else _numpy_dtype(name, *args)
            types = tuple(
                scalar(ember.dtype(v.dtype)) if isinstance(v, np.ndarray) else scalar_type(v)
                for v in args
            )
            assert _ember_dtype(name, *types) == expected, (name, a, args)


@pytest.mark.parametrize(
    "name", [n for n in ufuncs.UNARY if n not in ("rsqrt", "erf", "erfc", "lgamma", "tgamma")]
)
def test_unary_rules_on_complex_match_numpy(name):
    for a in COMPLEX:
        expected = _numpy_dtype(name, np.ones(2, a))
        assert _ember_dtype(name, scalar(ember.dtype(a))) == expected, (name, a)


def test_result_type_and_can_cast():
    assert ember.result_type(ember.float32, ember.complex64) is ember.complex64
    assert ember.result_type(ember.float64, ember.complex64) is ember.complex128
    assert ember.result_type(ember.float32, 1j) is ember.complex64
    assert ember.result_type(ember.int8, ember.complex64) is ember.complex64
    assert ember.can_cast(ember.float32, ember.complex64)
    assert not ember.can_cast(ember.complex64, ember.float64)
    assert not ember.can_cast(ember.complex128, ember.complex64)
    assert scalar_type(2j) == WEAK_COMPLEX and scalar_type(np.complex64(1)) == scalar(
        ember.complex64
    )


def test_dtype_inspection():
    for dt, part in ((ember.complex64, ember.float32), (ember.complex128, ember.float64)):
        assert ember.isdtype(dt, "complex floating") and ember.isdtype(dt, "numeric")
        assert not ember.isdtype(dt, "real floating") and not ember.isdtype(dt, "integral")
        info = ember.finfo(dt)
        assert info.dtype is part and info.eps == float(np.finfo(dt.numpy).eps)
    assert not ember.isdtype(ember.float32, "complex floating")
    space = ember.__array_namespace_info__()
    kinds = space.dtypes(kind="complex floating")
    assert set(kinds) <= {"complex64", "complex128"} and "complex64" in kinds
    assert space.default_dtypes()["complex floating"] in (ember.complex64, ember.complex128)


# --------------------------------------------------------------------- creation
def test_creation(backend):
    a = sample("complex64", (3, 4))
    check(ember.asarray(a), a, exact=True)
    check(ember.asarray([1 + 2j, 3]), np.asarray([1 + 2j, 3]), exact=True)
    check(ember.asarray(a.tolist(), dtype="complex64"), a, exact=True)
    check(ember.zeros((2, 3), ember.complex64), np.zeros((2, 3), np.complex64), exact=True)
    check(ember.ones(3, "complex128"), np.ones(3, np.complex128), exact=True)
    check(ember.full((2, 2), 1 - 2j), np.full((2, 2), 1 - 2j), exact=True)
    check(ember.full(3, 2, dtype="c8"), np.full(3, 2, np.complex64), exact=True)
    check(ember.arange(5, dtype=ember.complex64), np.arange(5, dtype=np.complex64))
    check(ember.linspace(-1j, 2 + 1j, 7), np.linspace(-1j, 2 + 1j, 7))
    check(ember.linspace(0, 1, 4, dtype="complex64"), np.linspace(0, 1, 4, dtype=np.complex64))
    check(ember.eye(3, k=1, dtype=ember.complex128), np.eye(3, k=1, dtype=np.complex128))
    x = ember.asarray(a)
    check(ember.full_like(x, 3j), np.full_like(a, 3j), exact=True)
    check(ember.zeros_like(x), np.zeros_like(a), exact=True)
    with pytest.raises(TypeError, match="must be real numbers"):
        ember.arange(0, 3j)


# --------------------------------------------------------------------- elementwise
@pytest.mark.parametrize("dtype", COMPLEX)
def test_arithmetic_matches_numpy(backend, dtype):
    a, b = sample(dtype, (4, 5), 1), sample(dtype, (4, 5), 3, nonzero=True)
    x, y = ember.asarray(a), ember.asarray(b)
    check(x + y, a + b)
    check(x - y, a - b)
    check(x * y, a * b)
    check(x / y, a / b)
    check(-x, -a)
    check(x == y, a == b)
    check(x != x, a != a)
    check(x[:, ::-2] * y[0, ::2], a[:, ::-2] * b[0, ::2])  # strided and broadcast


def test_mixed_real_complex_and_scalars(backend):
    a = sample("complex64", (6,), 1)
    f = sample("float32", (6,), 2)
    d = sample("float64", (6,), 3)
    x, xf, xd = ember.asarray(a), ember.asarray(f), ember.asarray(d)
    check(x * xf, a * f)  # complex64: the Array API's table
    check(xd + x, d + a)  # complex128
    check(xf * 2j, f * 2j)  # a Python complex takes the array's precision: complex64
    check(1j + xd, 1j + d)
    check(x * 2.5, a * 2.5)
    check(3 - x, 3 - a)
    check(x**2, a**2)
    check(x / np.complex128(1 + 1j), a / np.complex128(1 + 1j))  # a strong NumPy scalar
    y = ember.asarray(a.copy())
    y *= 1j
    y += xf
    check(y, a * 1j + f)


def test_power_matches_numpy(backend):
    a = sample("complex128", (8,), 1)
    b = sample("complex128", (8,), 2)
    check(ember.asarray(a) ** ember.asarray(b), a**b)
    z = np.array([0j, 0j, 0j, 1 + 1j, 2 - 1j], np.complex128)
    w = np.array([0j, 2 + 0j, 1j, 3 + 0j, -2 + 0j], np.complex128)
    with np.errstate(all="ignore"):
        check(ember.asarray(z) ** ember.asarray(w), z**w)


def test_power_special_values_match_numpy(backend):
    # 0 to a complex power with a positive real part is 0 (it was NaN); NumPy's z ** 1,
    # z ** -1, z ** 2 and z ** 0.5 keep infinite parts (repeated squaring from 1 lost them)
    inf, nan = np.inf, np.nan
    zero = np.zeros(4, np.complex128)
    w = np.array([0.5 + 1j, 2.5 + 0j, -1 + 0j, 1j])
    with np.errstate(all="ignore"):
        check(ember.asarray(zero) ** ember.asarray(w), zero**w)
        z = np.array([complex(inf, 0), complex(0, inf), complex(-inf, 1), complex(nan, 0),
                      complex(1, inf), 0.5 - 3j, 3 + 4j, 0j])  # fmt: skip
        for n in (1, -1, 2, 3, 4, -2, 0.5, 0.5 + 1j):
            got, want = (ember.asarray(z) ** n).to_numpy(), z**n
            np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True, err_msg=str(n))


@pytest.mark.parametrize(
    ("names", "dtype"),
    [
        (("sqrt", "exp", "log", "sin", "tanh", "acos", "log1p", "expm1"), "complex64"),
        (("sqrt", "log10", "cos", "atan", "asinh", "exp2", "tan", "arccosh"), "complex128"),
    ],
)
def test_math_matches_numpy(backend, names, dtype):
    a = sample(dtype, (9,), 4) / 2
    x = ember.asarray(a)
    for name in names:
        check(getattr(ember, name)(x), _numpy(name)(a))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_abs_angle_sign_and_rounding(backend, dtype):
    a = sample(dtype, (7,), 5)
    a[:3] = [0, complex(np.inf, 1), complex(-np.inf, -np.inf)]
    x = ember.asarray(a)
    with np.errstate(all="ignore"):
        check(ember.abs(x), np.abs(a))
        check(abs(x), np.abs(a))
        check(ember.angle(x), np.angle(a))
        check(ember.angle(x, deg=True), np.angle(a, deg=True))
        check(ember.sign(x), np.sign(a))
        check(ember.square(x), np.square(a))
        check(ember.reciprocal(x), np.reciprocal(a))
        check(ember.round(x * 7), np.round(a * 7))
        check(ember.round(x, decimals=1), np.round(a, 1))
        check(ember.conj(x), np.conj(a), exact=True)
        check(x.conjugate(), a.conjugate(), exact=True)
        for name in ("isnan", "isinf", "isfinite"):
            check(getattr(ember, name)(x), getattr(np, name)(a))
    check(ember.angle(ember.asarray(np.array([-1.0, 0.0, 2.0]))), np.angle([-1.0, 0.0, 2.0]))


def test_parts_are_views(backend):
    a = sample("complex128", (3, 4), 6)
    x = ember.asarray(a)
    check(x.real, a.real, exact=True)
    check(ember.imag(x), a.imag, exact=True)
    check(ember.real(x.T), a.T.real, exact=True)
    check(x[:, 1:3].imag, a[:, 1:3].imag, exact=True)
    x.imag[...] = 0  # writes x, as NumPy's views do
    b = a.copy()
    b.imag[...] = 0
    check(x, b, exact=True)
    x.real = 5
    b.real = 5
    check(x, b, exact=True)
    check(x.imag * 2 + x.real, b.imag * 2 + b.real, exact=True)
    f = ember.asarray(np.arange(3.0))
    assert f.real is f and f.conj().dtype is ember.float64
    check(f.imag, np.zeros(3), exact=True)
    with pytest.raises(TypeError, match="no imaginary part"):
        f.imag = 1


def test_ordering_and_meaningless_operations_are_refused(backend):
    x = ember.asarray(sample("complex64", (4,), 1))
    for op in (lambda: x < x, lambda: x >= 1, lambda: ember.maximum(x, x),
               lambda: ember.clip(x, 0, 1)):  # fmt: skip
        with pytest.raises(TypeError, match="complex numbers have no order"):
            op()
    for op in (lambda: x // x, lambda: x % 2, lambda: ember.floor(x), lambda: ember.atan2(x, x),
               lambda: ember.signbit(x), lambda: x & x):  # fmt: skip
        with pytest.raises(TypeError, match="complex|integer or bool"):
            op()


# --------------------------------------------------------------------- casts and conversions
def test_casts_follow_the_array_api(backend):
    a = sample("complex128", (5,), 2)
    a[0] = 0
    x = ember.asarray(a)
    check(x.astype("complex64"), a.astype(np.complex64))
    check(x.astype(bool), a.astype(bool), exact=True)  # 0+0j is False
    check(ember.asarray(np.arange(4, dtype=np.int16)).astype("complex64"),
          np.arange(4, dtype=np.complex64), exact=True)  # fmt: skip
    # an int64 goes straight to float32 parts: through complex128 it rounded twice (1 ulp)
    wide = np.array([2**62 + 2**38 + 1, -(2**62 + 2**38 + 1), 2**53 + 1], dtype=np.int64)
    check(ember.asarray(wide).astype("complex64"), wide.astype(np.complex64), exact=True)
    for target in ("float64", "float32", "int64", "uint8"):
        with pytest.raises(TypeError, match="refuses complex-to-real casts"):
            x.astype(target)
    for host in (a, a.tolist(), 2j):
        with pytest.raises(TypeError, match="refuses complex-to-real"):
            ember.asarray(host, dtype="float32")  # (NumPy would drop the imaginary part)
    y = ember.zeros(5, "float64")
    with pytest.raises(TypeError, match="refuses complex-to-real"):
        y[...] = x
    with pytest.raises(TypeError, match="refuses complex-to-real"):
        y[...] = 1j
    with pytest.raises(TypeError, match="same_kind"):
        ember.add(x, x, out=y)
    z = ember.zeros(5, "complex128")
    z[1:3] = ember.asarray(np.array([1.5, -2.0], np.float32))
    with ember.allowscalar():
        z[3] = 2 - 1j
    expected = np.zeros(5, np.complex128)
    expected[1:3] = [1.5, -2.0]
    expected[3] = 2 - 1j
    check(z, expected, exact=True)


def test_python_conversions(backend):
    x = ember.asarray(np.array([1.5 - 2j, 3j], np.complex64))
    assert complex(x[0:1].reshape(())) == 1.5 - 2j
    assert x[1:].item() == 3j and x.tolist() == [1.5 - 2j, 3j]
    assert bool(x[1:]) and not bool(ember.zeros(1, "complex64"))
    with pytest.raises(TypeError, match="0-d"):
        complex(x)
    with pytest.raises(TypeError):
        float(x[0:1].reshape(()))


def test_repr_and_str_are_numpys(backend):
    a = np.array([1 + 2j, -3.5 + 0.25j, 0j], np.complex64)
    x = ember.asarray(a)
    assert repr(x) == "ember.as" + np.array_repr(a)
    assert str(x) == str(a)
    big = ember.zeros((40, 40), "complex64")
    assert "..." in repr(big) and "complex64" in repr(big)


def test_pickle_round_trip(backend):
    a = sample("complex128", (2, 3), 7)
    y = pickle.loads(pickle.dumps(ember.asarray(a)))
    check(y, a, exact=True)
    assert pickle.loads(pickle.dumps(ember.complex64)) is ember.complex64


def test_dlpack_round_trips_with_numpy(backend):
    a = sample("complex64", (3, 4), 8)
    x = ember.asarray(a)
    host = np.from_dlpack(x, device="cpu")  # kDLComplex, 64 bits
    assert host.dtype == np.complex64
    np.testing.assert_array_equal(host, a)
    back = ember.from_dlpack(a.T)
    check(back, a.T, exact=True)
    b = sample("complex128", (5,), 9)
    check(ember.from_dlpack(b[::2]), b[::2], exact=True)


def test_numpy_functions_run_on_the_device(backend):
    a = sample("complex64", (6,), 10)
    x = ember.asarray(a)
    for result, expected in (
        (np.sqrt(x), np.sqrt(a)),
        (np.multiply(x, 2j), a * 2j),
        (np.conjugate(x), np.conjugate(a)),
        (np.real(x), np.real(a)),
        (np.imag(x), np.imag(a)),
        (np.angle(x), np.angle(a)),
        (np.abs(x), np.abs(a)),
    ):
        assert isinstance(result, ember.ndarray)
        check(result, expected)


def test_vectorize_with_complex(backend):
    @ember.vectorize
    def rotate(z, t):
        return z * ember.exp(1j * t)

    a = sample("complex64", (5,), 11)
    t = sample("float32", (5,), 12)
    check(rotate(ember.asarray(a), ember.asarray(t)), a * np.exp(1j * t))


# --------------------------------------------------------------------- reductions and scans
@pytest.mark.parametrize("dtype", COMPLEX)
def test_reductions_match_numpy(backend, dtype):
    a = sample(dtype, (37, 50), 13)
    x = ember.asarray(a)
    rtol = 2e-5 if dtype == "complex64" else 1e-12
    for name in ("sum", "mean", "var", "std"):
        for axis in (None, 0, 1):
            check(getattr(ember, name)(x, axis=axis), getattr(np, name)(a, axis=axis), rtol=rtol)
    small = a[:6, :5] / 2
    check(ember.prod(ember.asarray(small), axis=1), np.prod(small, axis=1), rtol=rtol)
    check(ember.var(x, axis=1, correction=1), np.var(a, axis=1, ddof=1), rtol=rtol)
    v, m = ember.var_mean(x, axis=0)
    check(v, np.var(a, axis=0), rtol=rtol)
    check(m, np.mean(a, axis=0), rtol=rtol)
    b = a[:4].copy()
    b[1, 3] = complex(np.nan, 1)
    check(ember.nansum(ember.asarray(b), axis=1), np.nansum(b, axis=1), rtol=rtol)
    check(ember.count_nonzero(ember.asarray(np.array([0j, 1j, 2, 0]))), np.int64(2))
    check(ember.any(x[:2] * 0), np.any(a[:2] * 0))
    check(ember.sum(x, dtype="complex128"), np.sum(a, dtype=np.complex128), rtol=rtol)


def test_long_complex64_sums_are_compensated(backend):
    n = 1 << 17
    a = np.full(n, 0.1 + 0.2j, np.complex64)
    got = complex(ember.sum(ember.asarray(a)))
    exact = n * complex(np.complex64(0.1 + 0.2j))
    assert abs(got - exact) / abs(exact) < 1e-6  # a float32 running sum drifts far more


def test_ordering_reductions_are_refused(backend):
    x = ember.asarray(sample("complex64", (5,), 1))
    for f in (ember.max, ember.min, ember.argmax, ember.nanargmin, ember.sort, ember.argsort,
              ember.unique_values, lambda v: ember.searchsorted(v, 0j)):  # fmt: skip
        with pytest.raises(TypeError, match="complex numbers have no order"):
            f(x)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_cumulative_sums_and_products(backend, dtype):
    rtol = 2e-5 if dtype == "complex64" else 1e-11
    for shape, axis in (((3000,), 0), ((5, 300), 1), ((300, 5), 0)):
        a = (sample(dtype, shape, 14) * 0.05 + 1).astype(dtype)
        x = ember.asarray(a)
        check(ember.cumsum(x, axis=axis), np.cumsum(a, axis=axis), rtol=rtol)
        check(ember.cumprod(x, axis=axis), np.cumprod(a, axis=axis), rtol=10 * rtol)
    a = sample(dtype, (4, 3), 15)
    got = ember.cumulative_sum(ember.asarray(a), axis=0, include_initial=True)
    check(got, np.concatenate([np.zeros((1, 3), dtype), np.cumsum(a, axis=0)]), rtol=rtol)


def test_warp_shuffle_scans_of_complex(backend, monkeypatch):
    """The GPU's block scan (32-lane warp shuffles of both parts), emulated in shared memory."""
    from ember.array import scan, scan_kernels

    monkeypatch.setattr(scan, "geometry", lambda be, ct: scan_kernels.Geometry(64, 8, 32, True))
    a = (sample("complex64", (64 * 8 * 3 + 7,), 16) * 0.01).astype(np.complex64)
    check(ember.cumsum(ember.asarray(a)), np.cumsum(a), rtol=1e-4)


# --------------------------------------------------------------------- products, linalg
@pytest.mark.parametrize("dtype", COMPLEX)
def test_matmul_matches_numpy(backend, dtype):
    rtol = 2e-5 if dtype == "complex64" else 1e-12
    a, b = sample(dtype, (3, 37, 20), 17), sample(dtype, (20, 45), 18)
    x, y = ember.asarray(a), ember.asarray(b)
    check(x @ y, a @ b, rtol=rtol)  # batched, broadcast
    check(x[0].T @ x[1], a[0].T @ a[1], rtol=rtol)  # a transposed view
    check(x[1, 0] @ y, a[1, 0] @ b, rtol=rtol)  # 1-d first operand
    f = sample("float32" if dtype == "complex64" else "float64", (20, 6), 19)
    check(x @ ember.asarray(f), a @ f, rtol=rtol)  # mixed real/complex: complex
    check(ember.tensordot(x, y, axes=1), np.tensordot(a, b, axes=1), rtol=rtol)
    check(ember.einsum("bij,jk->bik", x, y), np.einsum("bij,jk->bik", a, b), rtol=rtol)


def test_vecdot_conjugates_the_first_operand(backend):
    a, b = sample("complex128", (4, 6), 20), sample("complex128", (4, 6), 21)
    x, y = ember.asarray(a), ember.asarray(b)
    check(ember.vecdot(x, y), np.vecdot(a, b), rtol=1e-12)
    check(ember.linalg.vecdot(x, y, axis=0), np.vecdot(a, b, axis=0), rtol=1e-12)
    check(ember.vdot(x, y), np.vdot(a, b), rtol=1e-12)
    check(ember.inner(x, y), np.inner(a, b), rtol=1e-12)  # no conjugate (NumPy's inner)
    check(ember.dot(x[0], y[1]), np.dot(a[0], b[1]), rtol=1e-12)
    check(ember.outer(x[0], y[1]), np.outer(a[0], b[1]), rtol=1e-12)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_linalg_residuals(backend, dtype):
    """Factorizations of complex matrices (the device solver, or NumPy on the host with a
    warning): residuals ||A - QR||, ||A - L L^H||, ||A V - V w||, ||A - U S V^H||."""
    tol = 2e-4 if dtype == "complex64" else 1e-11
    n = 6
    a = sample(dtype, (2, n, n), 22)
    h = (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)
    x, hx = ember.asarray(a), ember.asarray(h)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ember.EmberPerformanceWarning)
        q, r = (t.to_numpy() for t in ember.linalg.qr(x))
        lo = ember.linalg.cholesky(hx).to_numpy()
        w, v = ember.linalg.eigh(hx)
        u, s, vh = ember.linalg.svd(x, full_matrices=False)
        det = ember.linalg.det(x).to_numpy()
        sign, logabs = ember.linalg.slogdet(x)
        solved = ember.linalg.solve(x, ember.asarray(h)).to_numpy()
        inverse = ember.linalg.inv(x).to_numpy()
        pinv = ember.linalg.pinv(x).to_numpy()
    scale = np.abs(h).max()
    np.testing.assert_allclose(q @ r, a, atol=tol * 10)
    np.testing.assert_allclose(lo @ np.conj(np.swapaxes(lo, -1, -2)), h, atol=tol * scale)
    assert w.dtype is ember.dtype(dtype).real and s.dtype is ember.dtype(dtype).real
    w, v = w.to_numpy(), v.to_numpy()
    np.testing.assert_allclose(h @ v, v * w[..., None, :], atol=tol * scale)
    u, s, vh = u.to_numpy(), s.to_numpy(), vh.to_numpy()
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, atol=tol * 10)
    np.testing.assert_allclose(det, np.linalg.det(a), rtol=tol * 10)
    assert sign.dtype is ember.dtype(dtype) and logabs.dtype is ember.dtype(dtype).real
    np.testing.assert_allclose(sign.to_numpy(), np.linalg.slogdet(a)[0], rtol=tol * 10)
    np.testing.assert_allclose(a @ solved, h, atol=tol * scale * 10)
    np.testing.assert_allclose(inverse, np.linalg.inv(a), rtol=tol * 100, atol=tol * 100)
    np.testing.assert_allclose(pinv, np.linalg.pinv(a), rtol=tol * 100, atol=tol * 100)
    check(ember.linalg.vector_norm(x, axis=-1), np.linalg.norm(a, axis=-1), rtol=tol)
    check(ember.linalg.matrix_norm(x, ord=1), np.linalg.norm(a, ord=1, axis=(-2, -1)), rtol=tol)


# --------------------------------------------------------------------- CUDA, without a GPU
def _nvrtc_available() -> bool:
    from ember.array import kernels, ops

    try:
        kernels.contiguous(ops.add, ember.complex64, (True, True)).inspect(
            1, *(np.zeros(2, np.complex64),) * 3, stage="ptx", dialect="cuda"
        )
    except Exception:
        return False
    return True


@pytest.mark.parametrize(
    "ct", [ember.complex128, pytest.param(ember.complex64, marks=pytest.mark.slow)]
)
def test_complex_array_kernels_compile_for_cuda(ct):
    """The GEMM (both GPU geometries), reductions with shuffle trees, scans with warp
    shuffles and their passes: NVRTC compiles every complex variant (complex64's in the
    `slow` set: its code differs from complex128's only in the part type)."""
    if not _nvrtc_available():
        pytest.skip("NVRTC is not available")
    import itertools

    from ember.array import gemm, ops, reduce, reductions
    from ember.array import scan_kernels as sk

    def ptx(kernel, args):
        return kernel.inspect(*args, stage="ptx", dialect="cuda")

    dev = reduce.Device(block=256, threads=132 * 2048, max_grid=(1 << 31) - 1, shuffle=True)
    z = np.zeros(8, ct.numpy)
    for a_kfast, b_nfast in itertools.product((True, False), repeat=2):
        k = gemm.gemm_kernel(ct, True, a_kfast, b_nfast)
        assert ".entry" in ptx(k, (z, z, z, 2, 2, 2, 2, 1, 2, 1, 1, 1, 0, 0, 0, 0))
    for what in ("sum", "prod"):
        R, out = reductions.sum_reducer(what, ct)
        for kernel, args in reduce.examples(R, ct, out, dev=dev):
            assert ".entry" in ptx(kernel, args), kernel.__name__
    for what, mean in (("var", None), ("std_mean", ct), ("mean", None)):
        R, out = reductions.stat_reducer(what, ct)
        for kernel, args in reduce.examples(R, ct, out, mean, dev=dev):
            assert ".entry" in ptx(kernel, args), kernel.__name__
    for op in (ops.add, ops.multiply):
        g = sk.Geometry(256, 8, 32)
        head = (1, 8, 1, z, 0, 8, 1, z, 0, 8)
        assert "shfl.sync" in ptx(sk.scan_carry(op, ct, g), (*head, z))
        assert ".entry" in ptx(sk.tile_reduce(op, ct, g), (1, 8, 1, z, 0, 8, 1, z))
        assert ".entry" in ptx(sk.rows_serial(op, ct), (1, 1, z, 0, 8, 1, z, 0, 8))


def test_complex_reductions_refuse_a_real_dtype_cleanly(backend):
    # a TypeError naming the function and the way out, not a kernel compile error
    x = ember.asarray(np.array([1.7 + 2j, 2.2 - 1j]))
    for name in ("sum", "prod", "mean", "nansum", "nanmean", "var", "cumsum", "cumprod"):
        with pytest.raises(
            TypeError, match=rf"ember\.\w*{name[-3:]}.*complex128 data with dtype=float64"
        ):
            getattr(ember, name)(x, dtype=ember.float64)
    check(ember.sum(x, dtype=ember.complex64), np.sum(x.to_numpy(), dtype=np.complex64))


def test_atan_and_atanh_of_infinite_parts(backend):
    # C99 Annex G (NumPy's): atan(inf + 0j) is pi/2 (it was 3 pi / 8), atanh of an
    # infinite part +-0 + i pi/2
    inf, nan = np.inf, np.nan
    z = np.array([complex(inf, 0), complex(0, inf), complex(0, nan), complex(inf, inf),
                  complex(-inf, 1), complex(1, -inf), complex(nan, inf), complex(inf, nan),
                  complex(-inf, -inf), 0.5 + 0.25j, -2 + 0.1j])  # fmt: skip
    for dtype in ("complex128", "complex64"):
        a = z.astype(dtype)
        for name in ("arctan", "arctanh"):
            got, want = getattr(ember, name)(ember.asarray(a)).to_numpy(), getattr(np, name)(a)
            np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True, err_msg=name)
