"""Complex numbers in kernels on every backend, against NumPy: every complex math function
on random values over six decades of magnitude, the C99 Annex G special values of the
functions that have them (``exp log sqrt sinh cosh tanh sin cos tan``, the inverse functions
with the signs of zeros, ``* /``, ``abs``), ``atan``/``atanh`` of huge values, kernel
arguments (Python and NumPy complex scalars), casts, parts and literals; and the same kernels
compiled for CUDA by NVRTC (no GPU needed).

Tolerances: complex64 rtol 1e-4, complex128 rtol 1e-11 on the modulus of the error over
the random magnitudes (a few ulp, amplified by the functions' condition near their branch
points); 2e-5 / 1e-12 per part on moderate values and special values.
"""

from __future__ import annotations

import cmath

import numpy as np
import pytest

import ember

COMPLEX = ["complex64", "complex128"]


@ember.kernel
def every_function(out, z):
    i = ember.global_id()
    if i < z.shape[0]:
        v = z[i]
        out[0, i] = ember.sqrt(v)
        out[1, i] = ember.exp(v)
        out[2, i] = ember.log(v)
        out[3, i] = ember.sin(v)
        out[4, i] = ember.cos(v)
        out[5, i] = ember.tan(v)
        out[6, i] = ember.sinh(v)
        out[7, i] = ember.cosh(v)
        out[8, i] = ember.tanh(v)
        out[9, i] = ember.asin(v)
        out[10, i] = ember.acos(v)
        out[11, i] = ember.atan(v)
        out[12, i] = ember.asinh(v)
        out[13, i] = ember.acosh(v)
        out[14, i] = ember.atanh(v)
        out[15, i] = ember.exp2(v)
        out[16, i] = ember.expm1(v)
        out[17, i] = ember.log2(v)
        out[18, i] = ember.log10(v)
        out[19, i] = ember.log1p(v)
        out[20, i] = abs(v)
        out[21, i] = v * v
        out[22, i] = 1 / v
        out[23, i] = v**2.5


FUNCTIONS = [
    np.sqrt, np.exp, np.log, np.sin, np.cos, np.tan, np.sinh, np.cosh, np.tanh, np.arcsin,
    np.arccos, np.arctan, np.arcsinh, np.arccosh, np.arctanh, np.exp2, np.expm1, np.log2,
    np.log10, np.log1p, np.abs, lambda v: v * v, lambda v: 1 / v, lambda v: v**2.5,
]  # fmt: skip
NAMES = ("sqrt exp log sin cos tan sinh cosh tanh asin acos atan asinh acosh atanh exp2 expm1 "
         "log2 log10 log1p abs square reciprocal pow").split()  # fmt: skip
ANNEX_G = {"sqrt", "exp", "log", "sin", "cos", "tan", "sinh", "cosh", "tanh", "abs", "square",
           "reciprocal", "asin", "acos", "atan", "asinh", "acosh", "atanh"}  # fmt: skip
# The inverse functions' special values are also compared by the signs of zeros, except the
# parts whose sign C99 Annex G and the Array API leave unspecified (a mask of z's parts for
# each part of the result), compared by magnitude.
ANY_SIGN = {
    "asin": lambda x, y: (False, np.isinf(x) & np.isnan(y)),  # NaN +- i inf
    "acos": lambda x, y: (False, np.isinf(x) & np.isnan(y)),
    "atan": lambda x, y: (False, np.isinf(x) & np.isnan(y)),  # +-pi/2 +- i 0
    "asinh": lambda x, y: (np.isnan(x) & np.isinf(y), False),  # +-inf + i NaN
    "atanh": lambda x, y: (np.isnan(x) & np.isinf(y), False),  # +-0 + i pi/2
    "acosh": lambda x, y: (False, (x == 0) & np.isnan(y)),  # NaN +- i pi/2
}


def run_every_function(z: np.ndarray) -> np.ndarray:
    out = ember.zeros((len(FUNCTIONS), z.size), z.dtype)
    every_function[-(-z.size // 64), 64](out, ember.asarray(z))
    return out.to_numpy()


def _same_parts(got, ref, z, name, tol) -> np.ndarray:
    """Each part: NaN where NaN, the same infinities, close elsewhere; for the functions of
    :data:`ANY_SIGN` also the same signs of zeros where the standard gives them."""
    ok = np.ones(z.shape, bool)
    for which, part in enumerate((np.real, np.imag)):
        g, r = part(got), part(ref)
        if name in ANY_SIGN:
            loose = ANY_SIGN[name](z.real, z.imag)[which]
            g, r = np.where(loose, np.abs(g), g), np.where(loose, np.abs(r), r)
            ok &= (r != 0) | (np.signbit(g) == np.signbit(r))
        ok &= np.isclose(g, r, equal_nan=True, **tol)
    return ok


def _failures(got, z, tol, special=False) -> list[str]:
    out = []
    with np.errstate(all="ignore"):
        for k, f in enumerate(FUNCTIONS):
            if special and NAMES[k] not in ANNEX_G:
                continue
            ref = f(z)
            g = got[k]
            if special:
                ok = _same_parts(g, ref, z, NAMES[k], tol)
            elif tol.get("atol") == 0:  # relative error of the modulus
                ok = ~np.isfinite(ref) | (np.abs(g - ref) <= tol["rtol"] * np.abs(ref))
            else:
                ok = np.isclose(g, ref, **tol)
            out += [f"{NAMES[k]}({z[j]}) = {g[j]}, NumPy {ref[j]}" for j in np.flatnonzero(~ok)]
    return out


@pytest.mark.parametrize("dtype", COMPLEX)
def test_every_function_matches_numpy(backend, dtype):
    rng = np.random.default_rng(0)
    uniform = rng.uniform(-2, 2, 200) + 1j * rng.uniform(-2, 2, 200)
    wide = 10 ** rng.uniform(-3, 3, 200) * np.exp(1j * rng.uniform(-np.pi, np.pi, 200))
    z = np.concatenate([uniform, wide]).astype(dtype)
    got = run_every_function(z)
    c64 = dtype == "complex64"
    moderate = {"rtol": 2e-5, "atol": 1e-6} if c64 else {"rtol": 1e-12, "atol": 1e-13}
    modulus = {"rtol": 1e-4 if c64 else 1e-11, "atol": 0}
    bad = _failures(got[:, :200], z[:200], moderate)
    bad += _failures(got[:, 200:], z[200:], modulus)
    assert not bad, "\n".join(bad[:20])


@pytest.mark.parametrize("dtype", COMPLEX)
def test_special_values_follow_c99_annex_g_as_numpy(backend, dtype):
    values = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, np.inf, -np.inf, np.nan]
    z = np.array([complex(a, b) for a in values for b in values], dtype)
    got = run_every_function(z)
    tol = {"rtol": 2e-5, "atol": 1e-6} if dtype == "complex64" else {"rtol": 1e-12, "atol": 0}
    bad = _failures(got, z, tol, special=True)
    assert not bad, "\n".join(bad[:20])


@pytest.mark.parametrize("dtype", COMPLEX)
def test_atan_and_atanh_of_huge_values_keep_their_small_part(backend, dtype):
    """atan z = pi/2 + 1/z + ...: 1/z is not lost where |1 + iz|**2 overflows (past 1e154
    in double, 1e19 in single precision), nor pi/2 where 2z does."""
    big, top = (1e30, 3e38) if dtype == "complex64" else (1e300, 1e308)
    z = np.array([0.5 + 1j * big, -2 - 1j * big, 1j * big, big * (1 + 1j), big / 3, top + 0.5j])
    z = np.concatenate([z, z * 1j, np.conj(z)]).astype(dtype)
    got = run_every_function(z)
    tol = {"rtol": 2e-5 if dtype == "complex64" else 1e-12, "atol": 0}
    bad = []
    for name, f in (("atan", np.arctan), ("atanh", np.arctanh)):
        g, ref = got[NAMES.index(name)], f(z)
        ok = np.isclose(g.real, ref.real, **tol) & np.isclose(g.imag, ref.imag, **tol)
        bad += [f"{name}({z[j]}) = {g[j]}, NumPy {ref[j]}" for j in np.flatnonzero(~ok)]
    assert not bad, "\n".join(bad)


@ember.kernel
def arguments(out, parts, a, s, t):
    i = ember.global_id()
    if i < a.shape[0]:
        z = a[i]
        w = z * s + t  # s: a complex kernel argument, t: a real one
        out[0, i] = w
        out[1, i] = complex(z.imag, z.real) + ember.conj(z) * 1j
        out[2, i] = ember.complex64(z.real, 2.5) if t > 0 else z.conjugate()
        out[3, i] = ember.complex128(i) + (z == w) + (z != z) * 2j
        out[4, i] = -z / (z - s) if z != s else z
        parts[0, i] = abs(w) + ember.angle(z)
        parts[1, i] = z.real * z.imag + ember.real(w) - ember.imag(w)
        parts[2, i] = 1.0 if bool(z) and ember.isfinite(w) and not ember.isnan(z) else 0.0


@pytest.mark.parametrize(("dtype", "s"), [("complex64", 1.5 - 0.5j), ("complex128", 2 + 1j),
                                          ("complex64", np.complex64(0.25 + 3j))])  # fmt: skip
def test_scalars_parts_casts_and_comparisons(backend, dtype, s):
    rng = np.random.default_rng(1)
    a = (rng.normal(size=70) + 1j * rng.normal(size=70)).astype(dtype)
    a[0], a[1] = 0, s
    t = 0.75
    out = ember.zeros((5, a.size), dtype)
    parts = ember.zeros((3, a.size), "float32" if dtype == "complex64" else "float64")
    arguments[2, 64](out, parts, ember.asarray(a), s, t)
    got, got_parts = out.to_numpy(), parts.to_numpy()
    w = (a * np.asarray(s).astype(np.result_type(a, s)) + t).astype(dtype)
    i = np.arange(a.size)
    with np.errstate(all="ignore"):
        expected = [
            w,
            (a.imag + 1j * a.real) + np.conj(a) * 1j,
            (a.real + 2.5j).astype(np.complex64),
            i + (a == w) + (a != a) * 2j,
            np.where(a != s, -a / (a - s), a),
        ]
        expected_parts = [
            np.abs(w) + np.angle(a),
            a.real * a.imag + w.real - w.imag,
            ((a != 0) & np.isfinite(w) & ~np.isnan(a)).astype(float),
        ]
    rtol = 1e-5 if dtype == "complex64" else 1e-12
    for k, e in enumerate(expected):
        np.testing.assert_allclose(got[k], e, rtol=rtol, atol=rtol, err_msg=f"row {k}")
    for k, e in enumerate(expected_parts):
        np.testing.assert_allclose(got_parts[k], e, rtol=rtol, atol=rtol, err_msg=f"part {k}")


@ember.kernel
def shared_and_shuffles(out, a):
    buf = ember.shared((64,), ember.complex64)
    t = ember.thread_idx.x
    buf[t] = a[t]
    ember.barrier()
    out[t] = buf[63 - t] * 1j


def test_shared_memory_holds_complex_values(backend):
    a = (np.arange(64) + 1j * np.arange(64, 0, -1)).astype(np.complex64)
    out = ember.zeros(64, ember.complex64)
    shared_and_shuffles[1, 64](out, ember.asarray(a))
    np.testing.assert_array_equal(out.to_numpy(), a[::-1] * 1j)


TWIDDLES = np.exp(-2j * np.pi * np.arange(8) / 8).astype(np.complex64)  # a captured table
TABLE2 = (TWIDDLES.astype(np.complex128) * 2).reshape(2, 4)


@ember.kernel
def twiddle(out, x):
    i = ember.global_id()
    if i < 8:
        out[i] = x[i] * TWIDDLES[i] + TABLE2[i // 4, i % 4]


def test_captured_complex_tables(backend):
    """Captured NumPy complex arrays are constant tables (FFT twiddles, filter taps)."""
    x = np.arange(8).astype(np.complex64) + 1j
    out = ember.zeros(8, ember.complex128)
    twiddle[1, 8](out, ember.asarray(x))
    expected = x.astype(np.complex128) * TWIDDLES + TABLE2.ravel()
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-6)


@ember.kernel
def with_cmath(out, parts, z, x):
    i = ember.global_id()
    if i < z.shape[0]:
        v = z[i]
        out[0, i] = cmath.sqrt(v) + cmath.exp(v) * cmath.log(v) - cmath.tanh(v)
        out[1, i] = cmath.asin(v) + cmath.acosh(v) + cmath.log10(v) + cmath.log(v, 3.0)
        out[2, i] = cmath.sqrt(x[i])  # a real argument: a complex result (NumPy's is NaN)
        out[3, i] = cmath.log(x[i]) + cmath.rect(2.0, x[i])
        r, phi = cmath.polar(v)
        parts[0, i] = r + phi - cmath.phase(v)
        parts[1, i] = cmath.isnan(v) + 2 * cmath.isinf(v) + 4 * cmath.isfinite(v)


def test_cmath_functions_are_pythons(backend):
    """Numba kernels call cmath: its functions give complex results for real arguments."""
    rng = np.random.default_rng(3)
    z = rng.standard_normal(16) + 1j * rng.standard_normal(16)
    z[:3] = [complex(np.nan, 1), complex(np.inf, 0), 0.5]
    x = np.linspace(-4, 4, 16)
    out, parts = ember.zeros((4, 16), ember.complex128), ember.zeros((2, 16), ember.float64)
    with_cmath[1, 16](out, parts, ember.asarray(z), ember.asarray(x))
    with np.errstate(all="ignore"):
        want = [
            [cmath.sqrt(v) + cmath.exp(v) * cmath.log(v) - cmath.tanh(v) for v in z],
            [cmath.asin(v) + cmath.acosh(v) + cmath.log10(v) + cmath.log(v, 3.0) for v in z],
            [cmath.sqrt(v) for v in x],
            [cmath.log(v) + cmath.rect(2.0, v) if v else complex(-np.inf, 0) for v in x],
        ]
    got = out.to_numpy()
    finite = np.isfinite(np.asarray(want[0])) & np.isfinite(np.asarray(want[1]))
    for row in (0, 1):  # (the special values are checked against NumPy above)
        np.testing.assert_allclose(got[row][finite], np.asarray(want[row])[finite], rtol=1e-11)
    np.testing.assert_allclose(got[2:], want[2:], rtol=1e-12)
    flags = [cmath.isnan(v) + 2 * cmath.isinf(v) + 4 * cmath.isfinite(v) for v in z]
    np.testing.assert_array_equal(parts.to_numpy()[1], flags)
    r = np.array([cmath.polar(v)[0] for v in z[3:]])
    np.testing.assert_allclose(parts.to_numpy()[0, 3:], r, rtol=1e-12)
    x32 = ember.asarray(np.array([-4.0, 9.0], np.float32))
    out32, parts32 = ember.zeros((4, 2), ember.complex64), ember.zeros((2, 2), ember.float32)
    with_cmath[1, 2](out32, parts32, ember.asarray(np.array([1j, 2], np.complex64)), x32)
    np.testing.assert_allclose(out32.to_numpy()[2], [2j, 3], rtol=1e-6)


# --------------------------------------------------------------------- NVRTC, without a GPU
def _nvrtc_available() -> bool:
    try:
        every_function.inspect(np.zeros((24, 4), np.complex64), np.zeros(4, np.complex64),
                               stage="ptx", dialect="cuda")  # fmt: skip
    except Exception:
        return False
    return True


@ember.kernel
def warp_ops(out, a):
    i = ember.global_id()
    v = a[i]
    v = v + ember.shfl_xor(v, 1) + ember.shfl_down(v, 2) * ember.shfl(v, 0)
    out[i] = ember.warp_sum(v) + ember.shfl_up(v, 1)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_kernels_compile_for_cuda(dtype):
    if not _nvrtc_available():
        pytest.skip("NVRTC is not available")
    z = np.zeros(4, dtype)
    ptx = every_function.inspect(np.zeros((24, 4), dtype), z, stage="ptx", dialect="cuda")
    # the aligned pair is loaded as one vector
    assert ("ld.global.v2.f32" if dtype == "complex64" else "ld.global.v2.f64") in ptx
    real = "float32" if dtype == "complex64" else "float64"
    ptx = arguments.inspect(np.zeros((5, 4), dtype), np.zeros((3, 4), real), z, 1j, 0.5,
                            stage="ptx", dialect="cuda")  # fmt: skip
    assert ".entry" in ptx
    assert ".const" in twiddle.inspect(np.zeros(8, np.complex128), z, stage="ptx", dialect="cuda")
    real_x = np.zeros(4, real)
    parts = np.zeros((2, 4), real)
    ptx = with_cmath.inspect(np.zeros((4, 4), dtype), parts, z, real_x, stage="ptx", dialect="cuda")
    assert ".entry" in ptx
    ptx = warp_ops.inspect(z, z, stage="ptx", dialect="cuda")
    assert "shfl.sync.bfly" in ptx and "shfl.sync.down" in ptx
    source = every_function.inspect(np.zeros((24, 4), dtype), z, stage="source", dialect="cuda")
    width = 8 if dtype == "complex64" else 16
    assert f"__align__({width})" in source
