"""NumPy's ufunc methods on ember arrays against NumPy 2: ``accumulate``, ``reduce`` and
``reduceat`` of every binary ufunc (associative ones by the scan and reduction kernels,
the others as NumPy's left folds, bit for bit), and ``ufunc.at`` with repeated indices
by compare-and-swap loops.

The loops' dtypes are checked for every ufunc and dtype without a device; the device
tests batch a few dtypes per operator, since each (operator, dtype) compiles a kernel."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from array_common import DTYPES, check, sample

import ember
from ember.array import ops, scatter, ufunc_methods
from ember.array import scan_kernels as sk
from ember.array.elementwise import Ufunc

NAN = np.nan
TRANSCENDENTAL = ("hypot", "power", "arctan2")  # the device's libm: within rounding


def _binary_ufuncs():
    out = []
    for name in sorted(dir(np)):
        f = getattr(np, name)
        if isinstance(f, np.ufunc) and f.nin == 2 and f.nout == 1 and name != "matmul":
            target = getattr(ember, name, None)
            if isinstance(target, Ufunc):
                out.append(name)
    return out


def numpy_result(fn, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(*args, **kwargs)
        except (TypeError, ValueError) as exc:
            return ValueError if isinstance(exc, ValueError) else TypeError


def ember_result(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args, **kwargs)
        except (TypeError, ValueError) as exc:
            return ValueError if isinstance(exc, ValueError) else TypeError


def compare(fn, a, *args, exact=True, **kwargs):
    """``fn`` (a NumPy ufunc method) of ``a`` on the host and on the device agree: the same
    dtype and values, or the same kind of error."""
    expected = numpy_result(fn, a, *args, **kwargs)
    got = ember_result(fn, ember.asarray(a), *args, **kwargs)
    label = f"{fn.__self__.__name__}.{fn.__name__}({a.dtype}, {args}, {kwargs})"
    if isinstance(expected, type):
        assert got is (ValueError if issubclass(expected, ValueError) else TypeError), label
        return
    assert isinstance(got, ember.ndarray), (label, got)
    try:
        check(got, expected, exact=exact)
    except AssertionError as exc:
        raise AssertionError(f"{label}: {exc}") from None


# --------------------------------------------------------------------- loops (no device)
def test_the_loops_match_numpy():
    """For every binary ufunc and dtype, ``reduce``'s and ``accumulate``'s dtype is NumPy's
    (add.accumulate of int8 is int64, hypot of int8 float16...), or both refuse."""
    checked = 0
    for name in _binary_ufuncs():
        uf, npu = getattr(ember, name), getattr(np, name)
        for dt in DTYPES:
            x = np.ones(3, dt)
            expected = numpy_result(npu.accumulate, x)
            if name == "ldexp" or expected is ValueError:
                continue  # ldexp's loop takes an int exponent: refused here, a loop in NumPy
            try:
                got = ufunc_methods.loop(uf, ember.dtype(dt), None, name)[1].numpy
            except TypeError:
                got = TypeError
            want = expected if isinstance(expected, type) else expected.dtype
            assert got == want, f"{name}.accumulate({dt}): ember {got}, NumPy {want}"
            checked += 1
    assert checked > 300


# --------------------------------------------------------------------- accumulate
ACCUMULATE = [
    ("maximum", ["int8", "float32"]), ("minimum", ["uint16"]), ("fmax", ["float32"]),
    ("fmin", ["float64"]), ("logical_and", ["bool", "int32"]), ("logical_or", ["bool"]),
    ("logical_xor", ["bool", "float32"]), ("bitwise_and", ["int16", "bool"]),
    ("bitwise_or", ["uint8"]), ("bitwise_xor", ["int64"]), ("add", ["int8", "bool"]),
    ("multiply", ["int16"]), ("subtract", ["float64", "int32"]), ("divide", ["float32"]),
    ("hypot", ["int8"]), ("floor_divide", ["int32"]), ("arctan2", ["float64"]),
]  # fmt: skip


def _data(dt, shape=(4, 6), seed=0):
    a = sample(dt, shape, seed, low=-9, high=9, nonzero=True)
    if a.dtype.kind == "f" and a.size > 5:
        a.flat[3], a.flat[7] = NAN, -0.0  # NaN handling of maximum vs fmax
    return a


@pytest.mark.parametrize("name, dts", ACCUMULATE, ids=[c[0] for c in ACCUMULATE])
def test_accumulate_matches_numpy(backend, name, dts):
    npu = getattr(np, name)
    # folds in NumPy's order: the same bits (sums and products: a tree order)
    exact = name not in ("add", "multiply", *TRANSCENDENTAL)
    for dt in dts:
        a = _data(dt)
        for axis in (0, 1, -1):
            compare(npu.accumulate, a, axis=axis, exact=exact)
        compare(npu.accumulate, a[:, ::-2], axis=1, exact=exact)  # a strided view


def test_accumulate_long_rows_use_the_tree_scan(backend):
    a = sample("float32", (2, 3000), 3)
    compare(np.maximum.accumulate, a, axis=1)
    compare(np.fmin.accumulate, np.where(a > 1, NAN, a).astype(np.float32), axis=1)
    compare(np.bitwise_xor.accumulate, sample("uint32", 5000, 4))
    compare(np.subtract.accumulate, sample("int64", 3000, 5, -50, 50))  # a serial row


def test_accumulate_arguments(backend):
    a = sample("int16", (3, 5), 1, -100, 100)
    x = ember.asarray(a)
    compare(np.maximum.accumulate, a, axis=1, dtype=np.float64)
    compare(np.add.accumulate, a, axis=(1,), dtype=np.int8)  # wraps like NumPy
    compare(np.maximum.accumulate, a[0], axis=None)
    out = ember.zeros((3, 5), dtype=ember.float32)
    assert np.minimum.accumulate(x, axis=0, out=out) is out
    check(out, np.minimum.accumulate(a, axis=0).astype(np.float32))
    with pytest.raises(ValueError, match="does not allow multiple axes"):
        np.maximum.accumulate(x, axis=None)
    with pytest.raises(TypeError, match="cannot accumulate on a scalar"):
        np.maximum.accumulate(x[0, 0])
    with pytest.raises(TypeError, match="No loop matching"):
        np.less.accumulate(x)  # (integers in, bools out: NumPy has no reduction loop)
    with pytest.raises(TypeError):
        np.bitwise_or.accumulate(ember.asarray(np.ones(3)))
    compare(np.equal.accumulate, np.array([True, False, False, True]))


# --------------------------------------------------------------------- reduce
# (operator, dtype, axes): each reduction layout compiles its own kernels, so each case
# takes a few; the plans themselves are the tuned reductions' (test_array_reduce.py)
REDUCE = [
    ("fmax", "float32", (-1, None)), ("fmax", "int8", (0,)), ("fmin", "float64", ((0, 2),)),
    ("bitwise_and", "uint8", (None, 1)), ("bitwise_and", "int32", (0,)),
    ("bitwise_or", "bool", (-1,)), ("bitwise_xor", "uint64", ((0, 2),)),
    ("logical_xor", "float32", (None,)), ("logical_xor", "bool", (1,)), ("gcd", "int32", (-1,)),
    ("subtract", "float64", (0, 1, -1, ())), ("subtract", "int8", (None, 1)),
    ("divide", "float32", (-1,)), ("hypot", "float32", ((0, 2), 1)), ("power", "float64", (1,)),
]  # fmt: skip


@pytest.mark.parametrize("name, dt, axes", REDUCE, ids=[f"{c[0]}-{c[1]}" for c in REDUCE])
def test_reduce_matches_numpy(backend, name, dt, axes):
    npu = getattr(np, name)
    a = _data(dt, (3, 4, 5))
    exact = name not in TRANSCENDENTAL
    for axis in axes:
        compare(npu.reduce, a, axis=axis, exact=exact)
    compare(npu.reduce, a, axis=axes[0], keepdims=True, exact=exact)
    if name in ("subtract", "hypot"):  # a serial fold of a reversed view, two axes
        compare(npu.reduce, a[:, ::-1], axis=(0, 1), keepdims=True, exact=exact)


def test_reduce_arguments(backend):
    a = sample("int32", (4, 6), 2, -20, 20)
    f = sample("float64", (4, 6), 3)
    m = sample("bool", (4, 6), 4)
    compare(np.subtract.reduce, a, axis=1, initial=100)
    compare(np.bitwise_or.reduce, a, axis=0, initial=0x100)
    compare(np.fmax.reduce, f, axis=1, where=m, initial=-5.0)
    compare(np.fmax.reduce, f, axis=1, where=m)  # no identity: initial= required
    compare(np.bitwise_xor.reduce, a, axis=None, where=m)
    compare(np.hypot.reduce, f, axis=1, where=m, exact=False)  # hypot's identity 0
    compare(np.fmin.reduce, a, axis=0, dtype=np.float32)
    compare(np.logical_xor.reduce, a, axis=1)  # integers read as bools
    compare(np.subtract.reduce, f, axis=(0, 1))  # not reorderable: ValueError
    compare(np.arctan2.reduce, f, axis=None, exact=False)  # not reorderable
    out = ember.empty((6,), dtype=ember.float64)
    assert np.bitwise_and.reduce(ember.asarray(a), axis=0, out=out) is out
    check(out, np.bitwise_and.reduce(a, axis=0).astype(np.float64))
    with pytest.raises(TypeError, match="not supported for ember arrays"):
        np.subtract.reduce(ember.asarray(f), axis=1, where=ember.asarray(m), initial=1.0)


def test_empty_reductions(backend):
    for a in (np.zeros((0, 3), np.int16), np.zeros((0, 3), np.float32)):
        for name in ("fmax", "bitwise_and", "bitwise_xor", "logical_xor", "subtract", "hypot"):
            npu = getattr(np, name)
            compare(npu.reduce, a, axis=0)  # the identity, or NumPy's ValueError
            compare(npu.reduce, a, axis=1)  # an empty result
            compare(npu.reduce, a, axis=0, initial=7)
    with pytest.raises(ValueError, match="fmax which has no identity"):
        np.fmax.reduce(ember.zeros((0,)))


def test_named_reductions_still_route(backend):
    a = sample("int8", (3, 4), 5)
    compare(np.add.reduce, a, axis=1)  # ember.sum: int64
    compare(np.maximum.reduce, a, axis=None)
    compare(np.maximum.reduce, a, axis=0, dtype=np.float32)  # ember.max takes no dtype=
    compare(np.multiply.reduce, a.astype(np.float32), axis=0, exact=False)


# --------------------------------------------------------------------- reduceat
REDUCEAT = [
    ("add", "int8"), ("add", "float64"), ("maximum", "float32"), ("fmin", "float32"),
    ("bitwise_xor", "uint16"), ("logical_and", "bool"), ("subtract", "int32"),
    ("divide", "float64"), ("multiply", "bool"),
]  # fmt: skip


@pytest.mark.parametrize("name, dt", REDUCEAT, ids=[f"{n}-{d}" for n, d in REDUCEAT])
def test_reduceat_matches_numpy(backend, name, dt):
    npu = getattr(np, name)
    a = _data(dt, (5, 9))
    exact = dt != "float64" or name != "add"
    for idx in ([0, 4, 1, 5], [0, 3, 3, 8], [8, 2, 2], [0], [5, 6, 7, 8], []):
        compare(npu.reduceat, a[0], idx, exact=exact)
        compare(npu.reduceat, a, idx, axis=1, exact=exact)
    compare(npu.reduceat, a, [4, 0, 2, 2, 3], axis=0, exact=exact)
    compare(npu.reduceat, a, np.array([1, 3], np.uint8), axis=-1, exact=exact)


def test_reduceat_arguments(backend):
    a = sample("float32", 40, 7)
    x = ember.asarray(a)
    idx = [0, 10, 10, 35, 2]
    got = np.add.reduceat(x, ember.asarray(np.array(idx)))  # indices on the device
    check(got, np.add.reduceat(a, idx))
    check(np.add.reduceat(x, idx, dtype=np.float64), np.add.reduceat(a, idx, dtype=np.float64))
    out = ember.empty((5,), dtype=ember.float32)
    assert np.maximum.reduceat(x, idx, out=out) is out
    check(out, np.maximum.reduceat(a, idx))
    for bad in ([0, 40], [-1], ember.asarray(np.array([3, 40]))):
        with pytest.raises(IndexError, match=r"index -?\d+ out-of-bounds in add\.reduceat"):
            np.add.reduceat(x, bad)
    with pytest.raises(ValueError, match="does not allow multiple axes"):
        np.add.reduceat(ember.ones((2, 3)), [0], axis=None)
    with pytest.raises(TypeError, match="No loop matching"):
        np.less.reduceat(x, [0, 2])


# --------------------------------------------------------------------- ufunc.at
AT = [
    ("multiply", ["int8", "float32", "uint64"], 3),
    ("divide", ["float16", "float64"], 2.0), ("fmax", ["float32", "int16"], 1),
    ("fmin", ["float64"], 0.5), ("floor_divide", ["int32", "float64"], -2),
    ("power", ["int64", "float32"], 2), ("remainder", ["int32"], 3),
    ("logical_and", ["bool", "int32"], 0), ("logical_or", ["bool"], True),
    ("logical_xor", ["bool", "uint8"], 1), ("bitwise_and", ["bool"], True),
    ("add", ["bool"], True), ("maximum", ["bool"], True),
]  # fmt: skip


def _at(name, host, idx, *b):
    h = host.copy()
    getattr(np, name).at(h, idx, *b)
    d = ember.asarray(host)
    assert getattr(np, name).at(d, idx, *b) is None
    return d, h


@pytest.mark.parametrize("name, dts, b", AT, ids=[c[0] for c in AT])
def test_at_matches_numpy(backend, name, dts, b):
    idx = np.array([0, 1, 1, 3, 3, 3, 5, 0, 7, 7])  # repeats all count
    for dt in dts:
        a = sample(dt, 8, 1, 1, 4) if dt != "float16" else sample(dt, 8, 1, -2, 2)
        if dt[0] == "f":
            a[2] = NAN
        d, h = _at(name, a, idx, np.asarray(b).astype(dt) if dt == "bool" else b)
        check(d, h, rtol=1e-6 if dt != "float16" else 2e-3)
    d, h = _at(name, a, (idx,), (np.arange(1, 11) % 3 + 1).astype(a.dtype))  # b per index
    check(d, h, rtol=1e-6)


def test_at_more(backend):
    a = sample("float32", (4, 5), 2)
    d, h = _at("negative", a, ([0, 0, 2], [1, 1, 3]))  # a unary ufunc, 2-d indices
    check(d, h)
    d, h = _at("multiply", a, (slice(None), [0, 0]), np.float32(2))
    check(d, h)
    d, h = _at("fmax", a, np.array([[True, False] * 2 + [True]] * 4), 0.5)  # a mask
    check(d, h)
    x = ember.arange(4, dtype=ember.int32)
    with pytest.raises(ValueError, match="negative integer powers"):
        np.power.at(x, [1], -1)
    with pytest.raises(TypeError, match="same_kind"):
        np.divide.at(x, [1], 2)  # float64 quotients do not cast back to int32
    with pytest.raises(TypeError, match="no atomic updates"):
        np.multiply.at(ember.ones(3, dtype=ember.complex64), [0], 2)
    with pytest.raises(TypeError, match="takes one operand"):
        ember.negative.at(x, [0], 1)


# --------------------------------------------------------------------- CUDA (no GPU)
def test_new_kernels_compile_for_cuda():
    gpu_standin = pytest.importorskip("gpu_standin")
    if not gpu_standin.nvrtc_available():
        pytest.skip("NVRTC is not available")
    to_ptx = gpu_standin.to_ptx
    idx = np.zeros(2, np.int64)
    for op, ct, init in ((ops.subtract, ember.float64, False), (ops.maximum, ember.int8, True)):
        xs = np.zeros(8, ct.numpy)
        args = (2, 2, 4, xs, 0, 4, 1, idx, np.zeros(4, ct.numpy), 0, 2, ct.numpy.type(0))
        assert ".entry" in to_ptx(sk.fold_segments(op, ct, init), args)
    for op, ct, adt, work, unary in (
        (ops.multiply, ember.float32, ember.float32, ember.float32, False),
        (ops.fmax, ember.float64, ember.float64, ember.float64, False),
        (ops.logical_and, ember.bool_, ember.bool_, ember.uint32, False),
        (ops.multiply, ember.int8, ember.int8, ember.int32, False),
        (ops.negative, ember.float32, ember.float32, ember.float32, True),
    ):
        vals = np.zeros(2, ct.numpy) if not unary else idx
        kernel = scatter.cas_kernel(op, ct, adt, work, unary)
        ptx = to_ptx(kernel, (2, np.zeros(8, work.numpy), idx, vals))
        assert "atom.global.cas" in ptx


def test_the_methods_on_embers_own_ufuncs(backend):
    host = np.array([3.0, 1.0, 4.0, 1.0, 5.0])
    x = ember.asarray(host)
    np.testing.assert_array_equal(
        ember.maximum.accumulate(x).to_numpy(), np.maximum.accumulate(host)
    )
    assert float(ember.subtract.reduce(x)) == np.subtract.reduce(host)
    np.testing.assert_array_equal(
        ember.add.reduceat(x, [0, 2]).to_numpy(), np.add.reduceat(host, [0, 2])
    )
