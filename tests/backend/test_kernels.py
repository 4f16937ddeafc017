"""The kernel suite, part 1: Python constructs compiled to kernels, checked against NumPy on
every available backend (PoCL always; CUDA on the GPU machine), for several dtypes and for
non-contiguous views.  Part 2 (parallel primitives) is ``test_kernels_parallel.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from kernels_common import blocks, device_view, sample, tolerance

import ember

FLOATS = ["float16", "float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


# ---------------------------------------------------------------- 1. axpy, weak scalar
@ember.kernel
def axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
def test_axpy_python_scalar_is_weak(backend, dtype):
    x, y = sample(dtype, 1000, 1), sample(dtype, 1000, 2)
    a = 2.0 if np.dtype(dtype).kind == "f" else 3
    dx, dy = ember.asarray(x), ember.asarray(y)
    axpy[blocks(1000)](a, dx, dy)
    expected = a * x + y  # NEP 50: the Python scalar does not change the dtype
    assert expected.dtype == np.dtype(dtype)
    np.testing.assert_allclose(dy.to_numpy(), expected, **tolerance(dtype))


def test_axpy_ndrange_launch_and_numpy_scalar(backend):
    x, y = sample("float32", 777, 1), sample("float32", 777, 2)
    dx, dy = ember.asarray(x), ember.asarray(y)
    axpy.launch(777)(np.float32(0.5), dx, dy)
    np.testing.assert_allclose(dy.to_numpy(), np.float32(0.5) * x + y, **tolerance("float32"))


# ---------------------------------------------------------------- 2. views
@ember.kernel
def scale_2d(x, out, factor):
    i, j = ember.grid(2)
    n, m = x.shape
    if i < n and j < m:
        out[i, j] = x[i, j] * factor


@pytest.mark.parametrize(
    "view",
    [lambda a: a, lambda a: a[::2, 1:], lambda a: a.T, lambda a: a[::-1, ::-3]],
    ids=["contiguous", "stepped", "transposed", "reversed"],
)
@pytest.mark.parametrize("dtype", ["int16", "float32", "float64"])
def test_views_of_every_layout(backend, view, dtype):
    host, dev = device_view(sample(dtype, (12, 10)), view)
    out = ember.zeros(host.shape, dtype)
    scale_2d[(-(-host.shape[0] // 8), -(-host.shape[1] // 8)), (8, 8)](dev, out, 3)
    np.testing.assert_allclose(out.to_numpy(), host * 3, **tolerance(dtype))


# ---------------------------------------------------------------- 3. 2-D stencil
@ember.kernel
def stencil(u, out):
    i, j = ember.grid(2)
    n, m = u.shape
    if 0 < i < n - 1 and 0 < j < m - 1:
        out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) - u[i, j]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_five_point_stencil_with_chained_comparisons(backend, dtype):
    u = sample(dtype, (33, 45))
    du, dout = ember.asarray(u), ember.zeros(u.shape, dtype)
    stencil.launch(u.shape)(du, dout)
    expected = np.zeros_like(u)
    expected[1:-1, 1:-1] = (
        np.asarray(0.25, dtype) * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        - u[1:-1, 1:-1]
    )
    np.testing.assert_allclose(dout.to_numpy(), expected, **tolerance(dtype))


# ---------------------------------------------------------------- 4. floor division, modulo
@ember.kernel
def divmod_kernel(a, b, q, r, t):
    i = ember.global_id()
    if i < a.shape[0]:
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
        t[i] = a[i] / b[i]


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint16", "float32", "float64"])
def test_floor_division_and_modulo_follow_python(backend, dtype):
    n = 200
    a = sample(dtype, n, 3, low=0 if dtype[0] == "u" else -40, high=40)
    b = sample(dtype, n, 4, low=0 if dtype[0] == "u" else -7, high=7)
    b[:3] = 0  # NumPy: integer x // 0 == 0 and x % 0 == 0; floats give inf/nan
    b[3] = 1
    da, db = ember.asarray(a), ember.asarray(b)
    tdt = np.result_type(a.dtype, b.dtype, 1.0) if a.dtype.kind != "f" else a.dtype
    q, r, t = ember.zeros(n, dtype), ember.zeros(n, dtype), ember.zeros(n, tdt)
    divmod_kernel.launch(n)(da, db, q, r, t)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(q.to_numpy(), a // b)
        np.testing.assert_array_equal(r.to_numpy(), a % b)
        np.testing.assert_allclose(t.to_numpy(), a / b, **tolerance(tdt))


# ---------------------------------------------------------------- 5. integer wrap-around
@ember.kernel
def wrap_kernel(x, out):
    i = ember.global_id()
    if i < x.shape[0]:
        v = x[i]
        out[i] = v * v + v * 3 - (-v)


@pytest.mark.parametrize("dtype", INTS)
def test_integer_overflow_wraps_like_numpy(backend, dtype):
    info = np.iinfo(dtype)
    x = np.linspace(info.min // 2, info.max // 2, 101).astype(dtype)
    out = ember.zeros(101, dtype)
    wrap_kernel.launch(101)(ember.asarray(x), out)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out.to_numpy(), x * x + x * 3 - (-x))


# ---------------------------------------------------------------- 6. float16 arithmetic
@ember.kernel
def half_math(x, y, out):
    i = ember.global_id()
    if i < x.shape[0]:
        s = x[i] * y[i] + x[i] / (y[i] + 3)
        out[i] = ember.sqrt(abs(s)) - s


def test_float16_storage_and_arithmetic(backend):
    x, y = sample("float16", 300, 1), sample("float16", 300, 2, low=0, high=2)
    out = ember.zeros(300, ember.float16)
    half_math.launch(300)(ember.asarray(x), ember.asarray(y), out)
    s = x * y + x / (y + np.float16(3))
    np.testing.assert_allclose(out.to_numpy(), np.sqrt(np.abs(s)) - s, rtol=2e-3, atol=2e-3)


# ---------------------------------------------------------------- 7. loops
@ember.kernel
def reverse_cumsum(x, out):
    """out[i] = sum(x[i:]) computed with a negative-step range."""
    i = ember.global_id()
    n = len(x)
    if i < n:
        acc = 0
        for k in range(n - 1, i - 1, -1):
            acc += x[k]
        out[i] = acc


@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_negative_step_range_and_unified_accumulator(backend, dtype):
    x = sample(dtype, 50)
    out = ember.zeros(50, dtype)
    reverse_cumsum.launch(50)(ember.asarray(x), out)
    np.testing.assert_allclose(out.to_numpy(), np.cumsum(x[::-1])[::-1], **tolerance(dtype))


@ember.kernel
def ranges(out, start, stop, step):
    i = ember.global_id()
    if i == 0:
        count = 0
        total = 0
        for k in range(start, stop, step):  # step sign known only at run time
            count += 1
            total += k
        out[0] = count
        out[1] = total
        for k in range(3):
            out[2] += k
        for k in range(10, 0, -3):
            out[3] += k


@pytest.mark.parametrize("start, stop, step", [(0, 10, 3), (10, -5, -4), (5, 5, 1), (3, 9, -1)])
def test_range_with_one_to_three_arguments(backend, start, stop, step):
    out = ember.zeros(4, ember.int64)
    ranges[1, 1](out, start, stop, step)
    r = range(start, stop, step)
    np.testing.assert_array_equal(out.to_numpy(), [len(r), sum(r), 3, 22])


@ember.kernel
def collatz(n0, steps):
    i = ember.global_id()
    if i < n0.shape[0]:
        n = n0[i]
        count = 0
        while True:
            if n == 1:
                break
            count += 1
            if n % 2 == 0:
                n //= 2
                continue
            n = 3 * n + 1
        steps[i] = count


def test_while_break_continue(backend):
    n0 = np.arange(1, 65, dtype=np.int64)
    steps = ember.zeros(64, ember.int32)
    collatz.launch(64)(ember.asarray(n0), steps)

    def count(n):
        c = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            c += 1
        return c

    np.testing.assert_array_equal(steps.to_numpy(), [count(int(n)) for n in n0])


def smallest_factor(v):
    """Python's for ... else in a device function: -1 for a prime."""
    for d in range(2, v):
        if d * d > v:
            break
        if v % d == 0:
            return d
    else:
        return -2  # only v <= 2 gets here: the loop ran out without a break
    return -1


@ember.kernel
def loop_else(x, out):
    i = ember.global_id()
    if i < x.shape[0]:
        v = x[i]
        out[0, i] = smallest_factor(v)
        k = 0
        while k < v:  # while ... else, a break of a nested loop does not count
            for j in range(3):
                if j == 1:
                    break
            k += 3
            if k == 9:
                break
        else:
            k = -k
        out[1, i] = k
        for _j in range(v):  # no break at all: the else always runs after
            k += 1
        else:
            k *= 10
        out[2, i] = k


def test_for_and_while_else(backend):
    x = np.arange(0, 40, dtype=np.int64)
    out = ember.zeros((3, 40), ember.int64)
    loop_else.launch(40)(ember.asarray(x), out)
    want = np.zeros((3, 40), np.int64)
    for i, v in enumerate(x.tolist()):
        want[0, i] = smallest_factor(v)
        k = 0
        while k < v:
            for j in range(3):
                if j == 1:
                    break
            k += 3
            if k == 9:
                break
        else:
            k = -k
        want[1, i] = k
        for _j in range(v):
            k += 1
        else:
            k *= 10
        want[2, i] = k
    np.testing.assert_array_equal(out.to_numpy(), want)


# ---------------------------------------------------------------- 8. device functions
def clamp(v, lo, hi):
    return max(lo, min(v, hi))


def smooth(v):
    return clamp(v * v * (3 - 2 * v), 0.0, 1.0)


def sigmoid_ish(v):
    return smooth(clamp(0.5 + v / 4, 0.0, 1.0))


def three_levels(v):
    s = sigmoid_ish(v)
    return s, 1 - s


@ember.kernel
def device_function_chain(x, a, b):
    i = ember.global_id()
    if i < x.shape[0]:
        p, q = three_levels(x[i])
        a[i] = p
        b[i] = q


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_device_functions_four_levels_deep_with_tuple_return(backend, dtype):
    x = sample(dtype, 128, low=-4, high=4)
    a, b = ember.zeros(128, dtype), ember.zeros(128, dtype)
    device_function_chain.launch(128)(ember.asarray(x), a, b)

    def ref(v):
        c = np.clip(0.5 + v / 4, 0, 1)
        return np.clip(c * c * (3 - 2 * c), 0, 1)

    np.testing.assert_allclose(a.to_numpy(), ref(x), **tolerance(dtype))
    np.testing.assert_allclose(b.to_numpy(), 1 - ref(x), **tolerance(dtype))


# ---------------------------------------------------------------- 9. closures over constants
def make_poly(coefficients, dtype):
    scale = len(coefficients)

    @ember.kernel
    def poly(x, out):
        i = ember.global_id()
        if i < x.shape[0]:
            acc = dtype(0)
            for c in range(scale):
                acc = acc * x[i] + coefficients[c]
            out[i] = acc

    return poly


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_closure_constants_tuple_and_dtype(backend, dtype):
    coeffs = (1.5, -2.0, 0.25, 3.0)
    k = make_poly(coeffs, dtype)
    x = sample(dtype.name, 64)
    out = ember.zeros(64, dtype)
    k.launch(64)(ember.asarray(x), out)
    np.testing.assert_allclose(
        out.to_numpy(), np.polyval(np.asarray(coeffs, dtype.name), x), **tolerance(dtype.name)
    )
    assert "1.5" in k.inspect(ember.asarray(x), out, stage="source")  # folded as a constant


# ---------------------------------------------------------------- 10. math and builtins
@ember.kernel
def math_kernel(x, out):
    i = ember.global_id()
    if i < x.shape[0]:
        v = x[i]
        out[i, 0] = math.sqrt(abs(v)) + ember.exp(v / 4)
        out[i, 1] = math.log(abs(v) + 1) + math.sin(v) * math.cos(v) + math.tanh(v)
        out[i, 2] = ember.erf(v) + ember.pow(abs(v), 1.5) + math.tan(v / 3)
        out[i, 3] = math.floor(v * 3) + ember.ceil(v * 3) + round(v * 5)
        out[i, 4] = ember.fma(v, 2, 1) + ember.copysign(1.5, v) + math.pi
        out[i, 5] = min(v, 0.5, 2 * v) + max(v, -v) + float(int(v * 10))
        out[i, 6] = int(ember.isnan(v / v)) + int(ember.isinf(1 / v)) + int(bool(v > 0)) * 10


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_math_functions_and_builtins(backend, dtype):
    x = sample(dtype, 100)
    x[0], x[1] = 0, 0.5
    out = ember.zeros((100, 7), dtype)
    math_kernel.launch(100)(ember.asarray(x), out)
    with np.errstate(all="ignore"):
        t = x.dtype.type
        exp = np.stack([
            np.sqrt(np.abs(x)) + np.exp(x / t(4)),
            np.log(np.abs(x) + t(1)) + np.sin(x) * np.cos(x) + np.tanh(x),
            np.array([math.erf(v) for v in x], dtype) + np.abs(x) ** t(1.5) + np.tan(x / t(3)),
            np.floor(x * 3) + np.ceil(x * 3) + np.array([round(float(v * 5)) for v in x]),
            (x * 2 + 1) + np.copysign(t(1.5), x) + t(math.pi),
            np.array([min(v, 0.5, 2 * v) for v in x], dtype) + np.abs(x)
            + np.trunc(x * 10),
            np.isnan(x / x) * 1 + np.isinf(1 / x) * 1 + (x > 0) * 10,
        ], axis=1)  # fmt: skip
    np.testing.assert_allclose(
        out.to_numpy(),
        exp,
        rtol=2e-5 if dtype == "float32" else 1e-12,
        atol=2e-5 if dtype == "float32" else 1e-12,
    )


# ---------------------------------------------------------------- 11. casts and promotion
@ember.kernel
def casts(x, out8, outu, outf, outb):
    i = ember.global_id()
    if i < x.shape[0]:
        out8[i] = ember.int8(x[i] * 40)  # wraps like NumPy's astype
        outu[i] = x[i] * 40 + 300  # stored into uint16: converted like astype
        outf[i] = ember.float32(x[i]) * 2.5  # stays float32 (weak 2.5)
        outb[i] = x[i] > 0 and not x[i] > 3


def test_casts_and_bool_arrays(backend):
    x = np.arange(-5, 15, dtype=np.int32)
    o8, ou = ember.zeros(20, ember.int8), ember.zeros(20, ember.uint16)
    of, ob = ember.zeros(20, ember.float32), ember.zeros(20, ember.bool_)
    casts.launch(20)(ember.asarray(x), o8, ou, of, ob)
    np.testing.assert_array_equal(o8.to_numpy(), (x * 40).astype(np.int8))
    np.testing.assert_array_equal(ou.to_numpy(), (x * 40 + 300).astype(np.uint16))
    np.testing.assert_allclose(of.to_numpy(), x.astype(np.float32) * np.float32(2.5))
    np.testing.assert_array_equal(ob.to_numpy(), (x > 0) & ~(x > 3))


@ember.kernel
def bits_as(x, out, twice):
    i = ember.global_id()
    if i < x.shape[0]:
        b = ember.bitcast(x[i], out.dtype)
        out[i] = b
        twice[i] = ember.bitcast(b, x.dtype)  # and back: every bit kept


_SPECIAL = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 1e-40, 3.4e38, 1e-300]


@pytest.mark.parametrize(
    "src, dst",
    [("float32", "uint32"), ("float32", "int32"), ("float64", "int64"), ("float64", "uint64"),
     ("float16", "uint16"), ("int16", "uint16"), ("int8", "uint8"), ("uint32", "float32"),
     ("int64", "float64"), ("uint16", "float16")],
)  # fmt: skip
def test_bitcast_reads_the_bits_as_another_dtype(backend, src, dst):
    if np.dtype(src).kind == "f":
        with np.errstate(all="ignore"):
            x = np.concatenate([np.array(_SPECIAL), sample("float64", 90, 3) * 1e3]).astype(src)
        if src == "float16":  # a float16 NaN's pattern is the device's conversion's
            x = x[~np.isnan(x)]
    else:  # bit patterns of every kind, including those of NaNs and infinities
        x = np.random.default_rng(4).integers(
            0, 2 ** (8 * np.dtype(src).itemsize), 100, dtype=np.dtype(src).str.replace("i", "u")
        )
        x = x.view(src)
        if dst == "float16":  # float16 NaNs: one pattern (conversions keep no payload)
            x = x[~np.isnan(x.view(np.float16))]
    out, twice = ember.zeros(len(x), dst), ember.zeros(len(x), src)
    bits_as.launch(len(x))(ember.asarray(x), out, twice)
    np.testing.assert_array_equal(out.to_numpy().view(np.uint8), x.view(dst).view(np.uint8))
    np.testing.assert_array_equal(twice.to_numpy().view(np.uint8), x.view(np.uint8))


@ember.kernel
def promote(a, b, out):
    i = ember.global_id()
    if i < a.shape[0]:
        out[i] = a[i] + b[i] + 1


@pytest.mark.parametrize(
    "da, db",
    [
        ("int8", "uint8"),
        ("int16", "float16"),
        ("uint32", "int64"),
        ("int8", "float32"),
        ("uint64", "int8"),
    ],
)
def test_numpy_promotion_of_mixed_elements(backend, da, db):
    a, b = sample(da, 40, 1, low=0, high=20), sample(db, 40, 2, low=0, high=20)
    expected = a + b + 1
    out = ember.zeros(40, expected.dtype)
    promote.launch(40)(ember.asarray(a), ember.asarray(b), out)
    np.testing.assert_allclose(out.to_numpy(), expected, **tolerance(expected.dtype))


# ---------------------------------------------------------------- 12. bits and unsigned
@ember.kernel
def bits(x, out):
    i = ember.global_id()
    if i < x.shape[0]:
        v = x[i]
        out[i] = ((v << 3) ^ (v >> 2)) | (~v & 0x0F0F)


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint64"])
def test_bitwise_operators_and_shifts(backend, dtype):
    x = sample(dtype, 64, low=0, high=1 << 20)
    out = ember.zeros(64, dtype)
    bits.launch(64)(ember.asarray(x), out)
    t = x.dtype.type
    np.testing.assert_array_equal(out.to_numpy(), ((x << t(3)) ^ (x >> t(2))) | (~x & t(0x0F0F)))


# ---------------------------------------------------------------- 13. tuples
@ember.kernel
def tuples(x, out, offset):
    i, j = ember.grid(2)
    n, m = x.shape
    if i < n and j < m:
        di, dj = offset
        src = ((i + di) % n, (j + dj) % m)
        out[i, j] = x[src] if (i, j) != (0, 0) else -1
        if x.shape == (n, m) and x.ndim == 2 and x.size == n * m:
            out[i, j] += x[-1, -1] * 0


def test_tuples_as_values_and_arguments(backend):
    x = sample("int32", (9, 7))
    out = ember.zeros((9, 7), ember.int32)
    tuples.launch((9, 7))(ember.asarray(x), out, (2, -3))
    expected = np.roll(x, (-2, 3), axis=(0, 1))
    expected[0, 0] = -1
    np.testing.assert_array_equal(out.to_numpy(), expected)


# ---------------------------------------------------------------- 14. 3-d arrays, early return
@ember.kernel
def sum_last_axis(x, out):
    i = ember.global_id()
    if i >= x.shape[0] * x.shape[1]:
        return
    a = i // x.shape[1]
    b = i % x.shape[1]
    total = 0.0
    for c in range(x.shape[2]):
        total += x[a, b, c]
    out[a, b] = total


def test_three_dimensional_views_and_bare_return(backend):
    host, dev = device_view(sample("float64", (5, 6, 8)), lambda v: v[:, ::2, 1::2])
    out = ember.zeros((5, 3), ember.float64)
    sum_last_axis.launch(15)(dev, out)
    np.testing.assert_allclose(out.to_numpy(), host.sum(axis=2), rtol=1e-12)


# ---------------------------------------------------------------- 15. ternary, and/or, augmented
@ember.kernel
def relu_count(x, out, counts):
    i = ember.global_id()
    if i < x.shape[0]:
        v = x[i]
        out[i] = v if v > 0 else 0
        out[i] *= 2
        pos = v > 0 or v == -1
        counts[i] = 1 if pos and not (v > 1) else 0


@pytest.mark.parametrize("dtype", ["int16", "float32"])
def test_conditional_expressions_and_augmented_assignment(backend, dtype):
    x = sample(dtype, 90, low=-3, high=3)
    out, counts = ember.zeros(90, dtype), ember.zeros(90, ember.int32)
    relu_count.launch(90)(ember.asarray(x), out, counts)
    np.testing.assert_allclose(out.to_numpy(), np.where(x > 0, x, 0) * 2)
    np.testing.assert_array_equal(counts.to_numpy(), ((x > 0) | (x == -1)) & ~(x > 1))


# ---------------------------------------------------------------- 16. grid-stride loop, indices
@ember.kernel
def grid_stride(x, out):
    start = ember.block_idx.x * ember.block_dim.x + ember.thread_idx.x
    for i in range(start, x.shape[0], ember.global_size()):
        out[i] = x[i] + ember.grid_dim.x * 0


def test_grid_stride_loop_and_thread_indices(backend):
    x = sample("float32", 5000)
    out = ember.zeros(5000, ember.float32)
    grid_stride[4, 32](ember.asarray(x), out)
    np.testing.assert_array_equal(out.to_numpy(), x)


# ---------------------------------------------------------------- 17. 0-d arrays
@ember.kernel
def to_scalar(x, total):
    if ember.global_id() == 0:
        acc = total[()]
        for i in range(len(x)):
            acc += x[i]
        total[()] = acc


def test_zero_dimensional_arrays(backend):
    x = sample("float64", 20)
    total = ember.asarray(np.float64(1.5))
    assert total.shape == ()
    to_scalar[1, 1](ember.asarray(x), total)
    np.testing.assert_allclose(total.to_numpy(), 1.5 + x.sum(), rtol=1e-12)


# ---------------------------------------------------------------- launch_bounds
@ember.kernel(launch_bounds=(64, 2))
def bounded_add_one(x):
    i = ember.global_id()
    if i < x.shape[0]:
        x[i] += 1


def test_launch_bounds_limit_the_block_and_guide_the_compiler(backend):
    x = ember.zeros(300, ember.int32)
    bounded_add_one[5, 64](x)
    bounded_add_one.launch(300)(x)  # Ember's choice of block stays within the bound
    np.testing.assert_array_equal(x.to_numpy(), np.full(300, 2))
    with pytest.raises(ember.LaunchError, match="at most 64 threads"):
        bounded_add_one[3, 128](x)
    with pytest.raises(ember.LaunchError, match="launch_bounds of 64"):
        bounded_add_one.launch(300, block=(16, 8))
    source = bounded_add_one.inspect(np.zeros(4, np.int32), stage="source", dialect="cuda")
    assert "__global__ void __launch_bounds__(64, 2) bounded_add_one" in source


@pytest.mark.parametrize("bad", [0, 2048, (64, 2, 1), (64, -1), "64", 1.5])
def test_launch_bounds_refuse_what_cuda_would_not_take(bad):
    with pytest.raises(TypeError, match="launch_bounds of kernel 'k' must be"):

        @ember.kernel(launch_bounds=bad)
        def k(x):
            pass
