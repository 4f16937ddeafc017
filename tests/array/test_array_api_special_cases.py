"""Special cases of the Array API 2024.12 (data-apis/array-api, the "Special cases" lists of
src/array_api_stubs/_2024_12/elementwise_functions.py), each function's inputs batched into
one array; where the standard is silent, NumPy 2 is the reference."""

from __future__ import annotations

import numpy as np
import pytest
from array_common import COMPLEX

import ember

INF, NAN = np.inf, np.nan
# the real special values of the lists: signed zeros, infinities, NaN, finite numbers either
# side of 1 and of 0, an odd and an even integer, a subnormal
REAL = np.array([0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -3.0, 2.5, INF, -INF, NAN, 5e-324])


def _same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Per element: NaN where NaN, else equal with the same sign (zeros and infinities)."""
    both_nan = np.isnan(got) & np.isnan(want)
    return both_nan | ((got == want) & (np.signbit(got) == np.signbit(want)))


def _parts(z: list[complex], dtype: str) -> np.ndarray:
    """``z`` as ``dtype``, each part as written (``complex(a, b)`` keeps ``-0.0`` parts)."""
    out = np.zeros(len(z), dtype)
    out.real = [v.real for v in z]
    out.imag = [v.imag for v in z]
    return out


@pytest.mark.parametrize("dtype", COMPLEX)
def test_sign_of_complex_special_values(backend, dtype):
    # the standard: a NaN part gives NaN + NaN j (NumPy 2 gave 0 + 1j for nan + inf j, and so
    # did Ember), both zero 0 + 0j, else z / |z| by the division rules (two infinite parts:
    # inf / inf is NaN; one: its direction)
    cases = {
        complex(NAN, INF): (NAN, NAN), complex(INF, NAN): (NAN, NAN),
        complex(-INF, NAN): (NAN, NAN), complex(NAN, 0.0): (NAN, NAN),
        complex(0.0, NAN): (NAN, NAN), complex(NAN, -2.0): (NAN, NAN),
        complex(0.0, 0.0): (0.0, 0.0), complex(-0.0, -0.0): (0.0, 0.0),
        complex(INF, INF): (NAN, NAN), complex(INF, 2.0): (1.0, 0.0),
        complex(-3.0, -INF): (0.0, -1.0), complex(0.0, -2.0): (0.0, -1.0),
        complex(-4.0, 0.0): (-1.0, 0.0),
    }  # fmt: skip
    got = ember.sign(ember.asarray(_parts(list(cases), dtype))).to_numpy()
    want = np.array([complex(*v) for v in cases.values()])
    ok = _same(got.real, want.real) & _same(got.imag, want.imag)
    assert ok.all(), [(z, g) for z, g, k in zip(cases, got, ok, strict=True) if not k]


@pytest.mark.parametrize("dtype", COMPLEX)
def test_sign_of_complex_needs_no_finite_modulus(backend, dtype):
    # |z| overflows (3e38 + 3e38j in complex64: the sign was 0j, NumPy's 1j) or loses digits
    # to subnormals (5e-45 + 5e-45j: 0.667 + 0.667j) when the parts are not scaled first
    f = np.finfo(np.dtype(dtype).char.lower())
    big, tiny = float(f.max) * 0.9, float(f.smallest_subnormal) * 4
    z = _parts([complex(big, big), complex(tiny, tiny), complex(-big, tiny), complex(3, -4)],
               dtype)  # fmt: skip
    got = ember.sign(ember.asarray(z)).to_numpy()
    r = np.sqrt(0.5)
    want = np.array([complex(r, r), complex(r, r), complex(-1, 0), complex(0.6, -0.8)])
    np.testing.assert_allclose(got, want, rtol=4 * float(f.eps), atol=0)


_BINARY = {"add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
           "floor_divide": "floor_divide", "remainder": "remainder", "pow": "power",
           "atan2": "arctan2"}  # fmt: skip


def test_binary_special_values_follow_numpy(backend):
    # every pair of REAL: the standard's lists for these agree with NumPy 2 (floor_divide
    # and remainder take Python's side of the standard's "may" notes, as NumPy does)
    a, b = np.repeat(REAL, REAL.size), np.tile(REAL, REAL.size)
    da, db = ember.asarray(a), ember.asarray(b)
    for name, np_name in _BINARY.items():
        got = getattr(ember, name)(da, db).to_numpy()
        with np.errstate(all="ignore"):
            want = getattr(np, np_name)(a, b)
        exact = _same(got, want)
        close = np.isfinite(want) & (want != 0) & np.isclose(got, want, rtol=4e-16, atol=0)
        bad = ~(exact | close)
        assert not bad.any(), (name, list(zip(a[bad], b[bad], got[bad], want[bad], strict=True)))


def test_namespace_capabilities_say_what_works(backend):
    caps = ember.__array_namespace_info__().capabilities()
    # data-dependent output shapes work (unique_*, nonzero, x[mask], repeat with array counts:
    # tests/array/test_array_search.py, test_array_setops.py...); the capability was False, a
    # claim left from before stream compaction, which makes conformance suites skip them
    assert caps["data-dependent shapes"] is True
    x = ember.asarray(np.array([3, 1, 3, 0]))
    # 0-d masks: the standard's (1, *x.shape) / (0, *x.shape)
    assert caps["boolean indexing"] is True
    assert x[ember.asarray(True)].shape == (1, 4) and x[ember.asarray(False)].shape == (0, 4)
