"""Kernel-language semantics found wrong by differential probing against NumPy 2 (NEP 50) and
Python, on every available backend: exact integer comparisons, Python int constant folding,
range() counters, and the refusal of tuples of arrays as launch arguments.  Many cases share
a few kernels, so the file stays fast; the CUDA source of each kernel must also compile.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernels_common import blocks

import ember

XU = np.array([0, 5, 2**64 - 1, 2**63, 2**53, 7], np.uint64)
XI = np.array([0, -1, 2**63 - 1, -(2**63), 2**53 + 1, 7], np.int64)
XB = np.array([True, False, True, False, True, False])
XF = np.array([1.0, -2.0, 3.5, 0.0, 0.25, -7.5])


# ------------------------------------------------------------- exact integer comparisons
@ember.kernel
def integer_compares(xi, xu, xb, out):
    i = ember.global_id()
    if i < xi.shape[0]:
        out[i, 0] = xi[i] < xu[i]  # int64 with uint64: NumPy 2 compares exactly
        out[i, 1] = xi[i] == xu[i]
        out[i, 2] = xu[i] > xi[i]
        out[i, 3] = xi[i] != xu[i]
        out[i, 4] = xi[i] >= xu[i]
        out[i, 5] = xu[i] <= xi[i]
        out[i, 6] = xu[i] > -1  # a negative Python int with a uint64
        out[i, 7] = xu[i] >= -5
        out[i, 8] = xu[i] == -1
        out[i, 9] = xu[i] > i - 3  # ...computed at run time
        out[i, 10] = i - 3 < xu[i]
        out[i, 11] = xi[i] < 2**63  # Python ints beyond int64
        out[i, 12] = xi[i] > -(2**64)
        out[i, 13] = xi[i] != 2**64
        out[i, 14] = xi[i] == 18446744073709551615
        out[i, 15] = i < 2**63
        out[i, 16] = xb[i] == 300
        out[i, 17] = xb[i] < -2
        out[i, 18] = -(2**63) == xi[i]
        out[i, 19] = xi[i] > -9223372036854775808


def _expected_compares() -> np.ndarray:
    xi, xu, xb = XI, XU, XB
    k = np.arange(len(xi))
    cols = [
        xi < xu, xi == xu, xu > xi, xi != xu, xi >= xu, xu <= xi,
        xu > -1, xu >= -5, xu == -1,
        [int(u) > int(j) - 3 for u, j in zip(xu, k, strict=True)],
        [int(j) - 3 < int(u) for u, j in zip(xu, k, strict=True)],
        xi < 2**63, xi > -(2**64), xi != 2**64, xi == 18446744073709551615, k < 2**63,
        xb == 300, xb < -2, -(2**63) == xi, xi > -9223372036854775808,
    ]  # fmt: skip
    return np.stack([np.asarray(c, bool) for c in cols], 1)


def test_integer_comparisons_are_exact(backend):
    out = ember.zeros((len(XI), 20), ember.bool_)
    integer_compares[blocks(len(XI))](ember.asarray(XI), ember.asarray(XU), ember.asarray(XB), out)
    expected = _expected_compares()
    got = out.to_numpy()
    bad = np.argwhere(got != expected)
    assert not len(bad), f"(row, case) wrong: {bad.tolist()}"


# ------------------------------------------------------------- Python int constant folding
@ember.kernel
def python_int_constants(xu, xf, out_u, out_f):
    i = ember.global_id()
    if i < xu.shape[0]:
        out_u[i, 0] = xu[i] & (1 << 63)  # 2**63: a Python int, not int64's -2**63
        out_u[i, 1] = xu[i] & ((1 << 64) - 1)  # folds through 2**64
        out_u[i, 2] = xu[i] ^ (2**64 - 1)
        out_u[i, 3] = xu[i] + (18446744073709551615 - 1)  # this folding once crashed
        out_u[i, 4] = xu[i] | -(2**63 - 2**64 + 2**63 - 5)
        out_f[i, 0] = xf[i] * 2**70  # wider than 64 bits: converted to a float
        out_f[i, 1] = xf[i] + (1 << 63)
        out_f[i, 2] = 2**64 // 3 + xf[i]
        out_f[i, 3] = 10**20 * 1.0 + xf[i]
        out_f[i, 4] = xf[i] - ~(2**64)


def test_python_int_constants_fold_exactly(backend):
    out_u = ember.zeros((len(XU), 5), ember.uint64)
    out_f = ember.zeros((len(XU), 5), ember.float64)
    python_int_constants[blocks(len(XU))](ember.asarray(XU), ember.asarray(XF), out_u, out_f)
    u = np.uint64
    expected_u = np.stack(
        [XU & u(1 << 63), XU & u(2**64 - 1), XU ^ u(2**64 - 1), XU + u(2**64 - 2), XU | u(5)], 1
    )
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out_u.to_numpy(), expected_u)
    expected_f = np.stack([XF * 2**70, XF + 2**63, 2**64 // 3 + XF, 1e20 + XF, XF - ~(2**64)], 1)
    np.testing.assert_array_equal(out_f.to_numpy(), expected_f)


@ember.kernel
def wide_variable(out):
    i = ember.global_id()
    if i < out.shape[0]:
        n = 2**64
        out[i] = n


@ember.kernel
def huge_power(x, out):
    i = ember.global_id()
    if i < out.shape[0]:
        out[i] = x[i] * 3 ** (10**9)


def test_python_int_constants_wider_than_64_bits_are_errors(backend):
    with pytest.raises(ember.KernelTypeError, match="18446744073709551616 does not fit in 64 bits"):
        wide_variable[1, 1](ember.zeros(1, ember.float64))
    with pytest.raises(ember.KernelTypeError, match=r"3\*\*1000000000 does not fit in 64 bits"):
        huge_power[1, 1](ember.zeros(1, ember.float64), ember.zeros(1, ember.float64))


# ------------------------------------------------------------- range() counts in Python ints
@ember.kernel
def strong_range_bounds(x, out):
    i = ember.global_id()
    if i < x.shape[0]:
        s = 0
        for k in range(x[i], x[i] + 2):
            s = k * 1000000000  # int32 arithmetic would wrap
        out[i] = s


def test_range_counter_is_a_python_int_for_strong_bounds(backend):
    x = np.array([3, 5, -4, 100], np.int32)
    out = ember.zeros(4, ember.int64)
    strong_range_bounds[blocks(4)](ember.asarray(x), out)
    np.testing.assert_array_equal(out.to_numpy(), (x.astype(np.int64) + 1) * 1000000000)


# ------------------------------------------------------------- launch arguments
@ember.kernel
def first_of_tuple(x, outs):
    i = ember.global_id()
    if i < x.shape[0]:
        outs[0][i] = x[i]


def test_tuple_of_arrays_argument_is_refused_clearly(backend):
    x = ember.zeros(4, ember.float64)
    with pytest.raises(ember.ArgumentError, match="may hold numbers only"):
        first_of_tuple[1, 4](x, (ember.zeros(4, ember.float64),))


# ------------------------------------------------------------- locals naming compile-time objects
def _twice(x):
    return 2 * x


@ember.kernel
def static_aliases(x, out):
    tid = ember.thread_idx  # Numba's `tid = cuda.threadIdx`
    bid = ember.block_idx
    dt = np.float32
    op = _twice
    i = bid.x * ember.block_dim.x + tid.x
    if i < x.shape[0]:
        out[i] = op(dt(x[i]))


@ember.kernel
def static_alias_rebound(out):
    dt = np.float32
    dt = np.float64
    out[0] = dt(1)


def test_a_local_may_name_a_compile_time_object(backend):
    x = np.arange(10, dtype=np.float64) + 0.25
    out = ember.zeros(10, ember.float32)
    static_aliases[2, 8](ember.asarray(x), out)
    np.testing.assert_array_equal(out.to_numpy(), 2 * x.astype(np.float32))
    with pytest.raises(ember.KernelSyntaxError, match="cannot be assigned another value"):
        static_alias_rebound[1, 1](ember.zeros(1, ember.float64))


# ------------------------------------------------------------- CUDA, without a GPU
def test_semantics_kernels_compile_for_cuda():
    try:
        integer_compares.inspect(XI, XU, XB, np.zeros((6, 20), bool), stage="ptx", dialect="cuda")
    except ember.CompileError:
        raise
    except Exception as exc:  # no NVRTC here
        pytest.skip(f"NVRTC is not available: {str(exc).splitlines()[0]}")
    ptx = python_int_constants.inspect(
        XU, XF, np.zeros((6, 5), np.uint64), np.zeros((6, 5)), stage="ptx", dialect="cuda"
    )
    assert ".entry" in ptx
