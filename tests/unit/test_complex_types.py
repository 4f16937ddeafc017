"""Complex numbers in the compiler, without a device: promotion (the Array API's tables and
NumPy's), the typing rules of kernels, the refused operations, and the generated C."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import dtypes
from ember.frontend.types import WEAK_COMPLEX, WEAK_FLOAT, WEAK_INT, promote, promote_strong, scalar

F4, F8, C8, C16 = dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128

# The Array API 2024.12 floating-point promotion table (type_promotion.rst), real and complex.
ARRAY_API_FLOAT_TABLE = {
    (F4, F4): F4, (F4, F8): F8, (F4, C8): C8, (F4, C16): C16,
    (F8, F4): F8, (F8, F8): F8, (F8, C8): C16, (F8, C16): C16,
    (C8, F4): C8, (C8, F8): C16, (C8, C8): C8, (C8, C16): C16,
    (C16, F4): C16, (C16, F8): C16, (C16, C8): C16, (C16, C16): C16,
}  # fmt: skip


@pytest.mark.parametrize(("a", "b"), list(ARRAY_API_FLOAT_TABLE))
def test_the_array_api_floating_point_table(a, b):
    assert promote_strong(a, b) is ARRAY_API_FLOAT_TABLE[a, b]


@pytest.mark.parametrize("d", [d for d in dtypes.ALL if d is not dtypes.bfloat16], ids=str)
def test_python_complex_is_weak(d):
    """1j <op> float32 array is complex64 (the Array API: the array's precision); with
    integers and bools NumPy's complex128; a complex array keeps its dtype."""
    got = promote(scalar(d), WEAK_COMPLEX).dtype
    assert got is dtypes.dtype(np.result_type(d.numpy, 1j))
    if d.is_inexact and d is not dtypes.float16:  # (no complex of float16 parts)
        assert got.real is d.real
    assert promote(WEAK_COMPLEX, WEAK_FLOAT) == WEAK_COMPLEX
    assert promote(WEAK_INT, WEAK_COMPLEX) == WEAK_COMPLEX


def test_complex_dtypes_describe_themselves():
    assert C8.real is F4 and C16.real is F8 and F4.real is F4
    assert C8.itemsize == 8 and C16.itemsize == 16 and C8.kind == "c"
    assert C8.is_complex and C8.is_inexact and not C8.is_float
    assert ember.complex64(1, 2) == np.complex64(1 + 2j)
    assert ember.dtype("c16") is C16 and ember.dtype(complex) is C16
    with pytest.raises(TypeError, match="only complex dtypes"):
        ember.float32(1, 2)


# --------------------------------------------------------------------- kernels
def _source(kernel, *args, dialect="opencl"):
    return kernel.inspect(*args, stage="source", dialect=dialect)


@ember.kernel
def _arith(out, a, s):
    i = ember.global_id()
    z = a[i] * s + 1j
    out[i] = ember.sqrt(z / a[i]) + abs(z) + z.conjugate() + complex(z.imag, z.real)


def test_complex_values_are_a_dialect_type():
    c8 = np.zeros(4, np.complex64)
    ocl = _source(_arith, c8, c8, 2 + 0.5j)
    assert "typedef float2 em_c64;" in ocl and "typedef double2 em_c128;" in ocl
    assert "double s_re, double s_im" in ocl  # a Python complex: two double parameters
    assert "em_c64 s" not in ocl and "em_c128 s = em_c128_make(s_re, s_im);" in ocl
    cuda = _source(_arith, c8, c8, np.complex64(2), dialect="cuda")
    assert "typedef struct __align__(8) { float re; float im; } em_c64;" in cuda
    assert "float s_re, float s_im" in cuda  # a strong complex64 scalar
    for name in ("em_c64_mul", "em_c64_div", "em_c64_sqrt", "em_c64_abs", "em_c64_conj"):
        assert f"{name}(" in ocl and f"{name}(" in cuda
    assert ocl.index("typedef float2") < ocl.index("em_c64_1d;")  # types before structs


def test_complex128_needs_fp64():
    c16 = np.zeros(4, np.complex128)
    assert "cl_khr_fp64" in _source(_arith, c16, c16, 1j)


def _lt(out, a):
    out[0] = a[0] < a[1]


def _max(out, a):
    out[0] = max(a[0], a[1])


def _floordiv(out, a):
    out[0] = a[0] // a[1]


def _and(out, a):
    out[0] = a[0] & 1


def _to_float32(out, a):
    out[0] = ember.float32(a[0])


def _float(out, a):
    out[0] = float(a[0])


def _int(out, a):
    out[0] = int(a[0])


def _floor(out, a):
    out[0] = ember.floor(a[0])


def _atan2(out, a):
    out[0] = ember.atan2(a[0], a[1])


def _invert(out, a):
    out[0] = ~a[0]


def _phase(out, a):
    out[0] = a[0].phase


def _warp_max(out, a):
    out[0] = ember.warp_max(a[0])


@pytest.mark.parametrize(
    ("func", "message"),
    [
        (_lt, "complex numbers have no order"),
        (_max, "complex numbers have no order"),
        (_floordiv, "'//' is not defined for complex numbers"),
        (_and, "'&' is not defined for complex numbers"),
        (_to_float32, "(?s)cannot convert complex64 to float32.*z.real, z.imag or abs"),
        (_float, "cannot convert complex64 to Python float"),
        (_int, "cannot convert complex64"),
        (_floor, "floor\\(\\) is not defined for complex numbers"),
        (_atan2, "atan2\\(\\) is not defined for complex"),
        (_invert, "'~' needs an integer or bool"),
        (_phase, "complex64 has no attribute 'phase'"),
        (_warp_max, "they have no order"),
    ],
    ids=lambda v: getattr(v, "__name__", "")[1:],
)
def test_operations_without_meaning_for_complex_are_refused(func, message):
    c8 = np.zeros(2, np.complex64)
    with pytest.raises(ember.KernelTypeError, match=message):
        _source(ember.kernel(func), c8, c8, dialect="cuda")


@ember.kernel
def _parts(out, a, b):
    i = ember.global_id()
    out[i] = a[i].real + b[i].imag - b[i].real + ember.real(a[i]) * ember.imag(a[i])


def test_parts_of_real_numbers_follow_python():
    """x.real is x and x.imag is 0 for real x, as in Python and NumPy."""
    f4, c8 = np.zeros(2, np.float32), np.zeros(2, np.complex64)
    src = _source(_parts, f4, f4, f4)
    assert "a.data[i] + 0.0f - b.data[i] + a.data[i] * 0.0f;" in src and "em_c64" not in src
    src = _source(_parts, f4, c8, c8)
    assert "a.data[i].x + b.data[i].y - b.data[i].x + a.data[i].x * a.data[i].y;" in src


@ember.kernel
def _constants(out):
    out[0] = (1 + 2j) * (3 - 1j) + ember.complex64(0.5, -0.25) + complex(2)


def test_constant_complex_arithmetic_is_folded():
    src = _source(_constants, np.zeros(1, np.complex64))
    assert "em_c64_make(7.5f, 4.75f)" in src  # (5+5j) + (0.5-0.25j) + 2, folded exactly
