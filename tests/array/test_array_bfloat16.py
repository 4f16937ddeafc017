"""bfloat16 arrays on every backend against NumPy float32 computed and rounded to bfloat16.

NumPy has no bfloat16: the reference rounds float32 values with NumPy bit operations
(:func:`round_bf16`, written here, independent of Ember's and ml_dtypes' code).  Element-wise
arithmetic and square roots are correctly rounded in float32 on every backend, so Ember's
result (computed in float32, rounded once to bfloat16) must equal the reference bit for bit;
libm functions (exp, sin...) may differ from NumPy's by a float32 ulp, so they are allowed
one bfloat16 ulp (2**-7 relative).  Sums accumulate in float32 and round once: within one
bfloat16 ulp of the exact sum of the bfloat16 inputs.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember import dtypes

BF = ember.bfloat16
ULP = 2.0**-7  # bfloat16's machine epsilon: one unit in the last place, relative
SPECIAL = np.array(
    [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 3.4e38, -3.39e38, 1e-40, 1e-45,
     1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, 255.0, 257.0, 65504.0],
    np.float32,
)  # fmt: skip


def round_bf16(x) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), as float32; NaN stays NaN."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    lsb = (u >> 16) & 1
    top = ((u + 0x7FFF + lsb) >> 16) << 16
    out = top.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), np.float32(np.nan), out)


def values(x: ember.ndarray) -> np.ndarray:
    """An ember bfloat16 array's values as float32 (needs no ml_dtypes)."""
    assert x.dtype is BF, x.dtype
    return x.astype(ember.float32).to_numpy()


def same(actual: ember.ndarray, expected) -> None:
    """bfloat16 ``actual`` holds exactly ``expected``'s values (NaN where NaN, signed zeros)."""
    got, want = values(actual), np.asarray(expected, np.float32)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(
        got.view(np.uint32) | np.isnan(got), want.view(np.uint32) | np.isnan(want)
    )


def near(actual: ember.ndarray, expected, ulps: float = 1.0) -> None:
    got, want = values(actual), np.asarray(expected, np.float32)
    scale = np.maximum(np.abs(want), 1e-30)
    np.testing.assert_allclose(got, want, rtol=ulps * ULP, atol=0)
    assert np.all(np.abs(got - want) <= ulps * ULP * scale)


def sample(shape, seed=0, scale=3.0) -> np.ndarray:
    """float32 values that are bfloat16 values (so the inputs are exact)."""
    return round_bf16(np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * scale)


def test_reference_rounding_matches_ml_dtypes():
    ml = pytest.importorskip("ml_dtypes")
    x = np.concatenate([SPECIAL, np.random.default_rng(0).standard_normal(1000).astype(np.float32)])
    want = x.astype(ml.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(round_bf16(x), want)
    np.testing.assert_array_equal(dtypes.bfloat16_values(dtypes.bfloat16_bits(x)), want)


# --------------------------------------------------------------------- creation, casts
def test_creation(backend):
    same(ember.zeros((2, 3), dtype=BF), np.zeros((2, 3)))
    same(ember.ones(4, dtype="bfloat16"), np.ones(4))
    same(ember.full(3, 1.1, dtype=BF), round_bf16(np.full(3, 1.1, np.float32)))
    assert ember.empty((2, 2), dtype=BF).dtype is BF
    same(ember.arange(0, 3, 0.375, dtype=BF), round_bf16(np.arange(0, 3, 0.375, dtype=np.float32)))
    same(ember.asarray(SPECIAL.tolist(), dtype=BF), round_bf16(SPECIAL))
    same(ember.asarray(SPECIAL.astype(np.float64), dtype=BF), round_bf16(SPECIAL))
    same(ember.asarray([True, False, 3], dtype=BF), [1, 0, 3])


def test_astype_both_ways(backend):
    x = ember.asarray(SPECIAL)
    b = x.astype(BF)
    same(b, round_bf16(SPECIAL))  # float32 -> bfloat16: nearest, ties to even, NaN kept
    back = b.astype(ember.float32)
    assert back.dtype is ember.float32
    np.testing.assert_array_equal(back.to_numpy(), round_bf16(SPECIAL))  # exact
    # float64 -> bfloat16 goes through float32, as ml_dtypes and PyTorch convert
    wide = np.array([1 + 2**-8 + 2**-40, 1.1, -7e-39, 1e300], np.float64)
    with np.errstate(over="ignore"):
        same(ember.asarray(wide).astype(BF), round_bf16(wide.astype(np.float32)))
    h = ember.asarray([1.5, -2.25, 1000.0, 3e38], dtype=BF).astype(ember.float16)
    np.testing.assert_array_equal(h.to_numpy(), np.array([1.5, -2.25, 1000.0, np.inf], np.float16))
    ints = ember.asarray([-3.75, 2.5, 300.0], dtype=BF).astype(ember.int32)
    np.testing.assert_array_equal(ints.to_numpy(), [-3, 2, 300])
    same(ember.asarray(np.array([255, 257, -259], np.int32)).astype(BF), [255, 256, -260])


# --------------------------------------------------------------------- element-wise
def test_arithmetic_is_float32_rounded_once(backend):
    a, b = sample(300), sample(300, seed=1)
    x, y = ember.asarray(a, dtype=BF), ember.asarray(b, dtype=BF)
    same(x + y, round_bf16(a + b))
    same(x * y - x, round_bf16(round_bf16(a * b) - a))
    same(x / y, round_bf16(a / b))
    same(ember.sqrt(ember.abs(x)), round_bf16(np.sqrt(np.abs(a))))
    same(-x, -a)
    near(ember.exp(x), round_bf16(np.exp(a)))
    near(ember.sin(x), round_bf16(np.sin(a)), ulps=2)


def test_promotion_in_array_expressions(backend):
    a = sample(8)
    x = ember.asarray(a, dtype=BF)
    scaled = x * 2.5  # a Python float is weak
    assert scaled.dtype is BF
    same(scaled, round_bf16(a * np.float32(2.5)))
    i = ember.asarray(np.arange(8, dtype=np.int32) * 37)
    summed = x + i  # PyTorch's and JAX's rule: bfloat16
    assert summed.dtype is BF
    same(summed, round_bf16(a + np.arange(8, dtype=np.float32) * 37))
    h = ember.asarray(a.astype(np.float16))
    assert (x + h).dtype is ember.float32
    np.testing.assert_array_equal((x + h).to_numpy(), a + a.astype(np.float16).astype(np.float32))
    f = x + ember.asarray(a)
    assert f.dtype is ember.float32
    assert (x + 1j).dtype is ember.complex64


def test_comparisons_where_clip(backend):
    a = sample(50)
    x = ember.asarray(a, dtype=BF)
    np.testing.assert_array_equal((x > 0.5).to_numpy(), a > 0.5)
    np.testing.assert_array_equal((x == x).to_numpy(), a == a)
    same(ember.where(x > 0, x, 0.0), np.where(a > 0, a, 0))
    same(ember.clip(x, -1, 1.5), np.clip(a, -1, 1.5))
    same(ember.maximum(x, -x), np.maximum(a, -a))
    nan = ember.asarray([1.0, np.nan], dtype=BF)
    np.testing.assert_array_equal(ember.isnan(nan).to_numpy(), [False, True])


# --------------------------------------------------------------------- reductions
def test_reductions_accumulate_in_float32(backend):
    a = sample((64, 40))
    x = ember.asarray(a, dtype=BF)
    total = x.sum()
    assert total.dtype is BF and total.shape == ()
    near(total, np.float32(a.astype(np.float64).sum()), ulps=1.5)
    near(x.sum(axis=0), a.astype(np.float64).sum(axis=0), ulps=1.5)
    near(x.mean(axis=1), a.astype(np.float64).mean(axis=1), ulps=1.5)
    # 4096 ones: a bfloat16 accumulator would stop at 256 (256 + 1 rounds back to 256)
    same(ember.ones(4096, dtype=BF).sum(), np.float32(4096))
    same(x.max(axis=1), a.max(axis=1))
    same(x.min(), a.min())
    assert int(ember.argmax(x)) == int(np.argmax(a))
    assert x.std().dtype is BF
    near(x.std(), np.float32(a.astype(np.float64).std()), ulps=2)
    c = ember.cumsum(ember.asarray(a[0], dtype=BF))
    assert c.dtype is BF  # partial sums may be rounded: bounded by the running magnitude
    err = np.abs(values(c) - np.cumsum(a[0].astype(np.float64)))
    assert np.all(err <= 2 * ULP * np.cumsum(np.abs(a[0]).astype(np.float64))), err.max()


# --------------------------------------------------------------------- matmul
@pytest.mark.parametrize("s1, s2", [((5, 7), (7, 3)), ((130, 33), (33, 70))])
def test_matmul_accumulates_in_float32(backend, s1, s2):
    a, b = sample(s1, scale=1.0), sample(s2, seed=1, scale=1.0)
    got = ember.asarray(a, dtype=BF) @ ember.asarray(b, dtype=BF)
    assert got.dtype is BF
    exact = a.astype(np.float64) @ b.astype(np.float64)
    # one rounding to bfloat16 plus float32 accumulation error (K terms)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    err = np.abs(values(got) - exact)
    assert np.all(err <= ULP * np.abs(exact) + 1e-6 * scale), err.max()


# --------------------------------------------------------------------- kernels
@ember.kernel
def _axpy(out, a, x, y):
    i = ember.global_id()
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]


def test_kernel_with_bfloat16_arrays_and_scalars(backend):
    ml = pytest.importorskip("ml_dtypes")
    xs, ys = sample(100), sample(100, seed=2)
    out = ember.empty(100, dtype=BF)
    _axpy[1, 128](out, ml.bfloat16(1.5), ember.asarray(xs, dtype=BF), ember.asarray(ys, dtype=BF))
    same(out, round_bf16(round_bf16(np.float32(1.5) * xs) + ys))
    _axpy[1, 128](out, 0.1, ember.asarray(xs, dtype=BF), ember.asarray(ys, dtype=BF))
    # a Python float is weak: 0.1 becomes bfloat16 (0.10009765625) before the product
    same(out, round_bf16(round_bf16(round_bf16(np.float32(0.1)) * xs) + ys))


# --------------------------------------------------------------------- NumPy, DLPack
def test_to_numpy_gives_ml_dtypes_arrays(backend):
    ml = pytest.importorskip("ml_dtypes")
    host = np.array([1.5, -0.1, np.inf], ml.bfloat16)
    x = ember.asarray(host)
    assert x.dtype is BF
    back = x.to_numpy()
    assert back.dtype == np.dtype(ml.bfloat16)
    np.testing.assert_array_equal(back.view(np.uint16), host.view(np.uint16))
    assert x[1:].to_numpy().dtype == back.dtype  # a view
    assert isinstance(x.tolist()[0], float) and x.tolist()[0] == 1.5
    assert float(x[:1].reshape(())) == 1.5


def test_a_first_operation_does_not_import_ml_dtypes(backend):
    # a fresh process: hashing dtypes and the kernels' argument tables leave ml_dtypes alone
    # (its import took 0.9 s of a first ember.ones on the build machine)
    code = (
        "import sys, ember; x = ember.ones(8) * 2 + 1; ember.synchronize(); "
        "hash(ember.bfloat16); print('ml_dtypes' in sys.modules)"
    )
    env = {**os.environ, "EMBER_BACKEND": backend.name}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_without_ml_dtypes_to_numpy_says_what_to_do(backend, monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # `import ml_dtypes` fails
    monkeypatch.setattr(BF, "_numpy", None)  # forget the NumPy dtype found before
    x = ember.asarray([1.5, 2.0], dtype=BF)  # host data needs no ml_dtypes
    with pytest.raises(TypeError, match=r"ml_dtypes.*astype\(ember.float32\)"):
        x.to_numpy()
    np.testing.assert_array_equal(x.astype(ember.float32).to_numpy(), [1.5, 2.0])
    assert x.tolist() == [1.5, 2.0] and float(x[1:].reshape(())) == 2.0
    assert "dtype=bfloat16" in repr(x)


def test_dlpack_round_trip(backend):
    a = sample(10)
    x = ember.asarray(a, dtype=BF)
    y = ember.from_dlpack(x)
    assert y.dtype is BF
    same(y, a)
