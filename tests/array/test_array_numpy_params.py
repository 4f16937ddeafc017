"""NumPy's parameters of Ember's functions (the signature-parity audit): each NumPy call
below, with ember arrays, runs Ember's function and gives NumPy's result."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from array_common import check, sample

import ember


def check_layout(actual: ember.ndarray, expected: np.ndarray) -> None:
    """``check``, and the same C/F contiguity as NumPy's result."""
    check(actual, expected)
    assert actual.flags.c_contiguous == expected.flags.c_contiguous
    assert actual.flags.f_contiguous == expected.flags.f_contiguous


def check_step(actual, expected) -> None:
    """A ``retstep`` step: NumPy's type (a NumPy scalar, or NaN as a Python float)."""
    if isinstance(actual, ember.ndarray):
        check(actual, expected)
        return
    assert type(actual) is type(expected), (type(actual), type(expected))
    np.testing.assert_allclose(actual, expected, rtol=1e-12, equal_nan=True)


# --------------------------------------------------------------------- linspace
@pytest.mark.parametrize("num", [0, 1, 2, 5])
@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace_retstep_numbers(backend, num, endpoint):
    for start, stop in [(0, 1), (np.float32(-1), np.float32(2)), (1, 1), (0, 2j)]:
        y, step = ember.linspace(start, stop, num, endpoint, True)
        ey, estep = np.linspace(start, stop, num, endpoint, True)
        check(y, ey)
        check_step(step, estep)


def test_linspace_numpy_positional_order(backend):
    check(
        ember.linspace(0, 10, 5, False, False, "int32"),
        np.linspace(0, 10, 5, False, False, "int32"),
    )
    check(ember.linspace(start=2, stop=3, num=4), np.linspace(start=2, stop=3, num=4))
    check(ember.linspace(1, 2, 3, axis=-1), np.linspace(1, 2, 3, axis=-1))
    with pytest.raises(ValueError, match="Number of samples, -1, must be non-negative"):
        ember.linspace(0, 1, -1)
    with pytest.raises(np.exceptions.AxisError):
        ember.linspace(0, 1, 3, axis=1)
    with pytest.raises(TypeError):
        ember.linspace(0, 1, 2.5)


@pytest.mark.parametrize("axis", [1, -1])
def test_linspace_array_bounds_axis(backend, axis):
    a, b = sample("float64", (2, 3)), sample("float64", (3,), seed=1)
    y, step = np.linspace(ember.asarray(a), ember.asarray(b), 5, True, True, None, axis)
    ey, estep = np.linspace(a, b, 5, True, True, None, axis)
    check(y, ey)
    check(step, estep)
    check(ember.linspace(ember.asarray(a), 1.5, 4, False, axis=axis, dtype="int64"),
          np.linspace(a, 1.5, 4, False, axis=axis, dtype="int64"))  # fmt: skip
    check(ember.logspace(ember.asarray(a), 1.0, 3, axis=axis), np.logspace(a, 1.0, 3, axis=axis))


def test_linspace_array_bounds_edges(backend):
    a32 = sample("float32", (4,))
    check(ember.linspace(ember.asarray(a32), 2.0, 3), np.linspace(a32, 2.0, 3))  # weak 2.0
    check(ember.linspace([0, 1], ember.asarray(np.array([2.0, 3.0])), 3),
          np.linspace([0, 1], np.array([2.0, 3.0]), 3))  # fmt: skip
    y, step = ember.linspace(0, ember.asarray(np.array([1.0, 2.0])), 1, retstep=True)
    ey, estep = np.linspace(0, np.array([1.0, 2.0]), 1, retstep=True)
    check(y, ey)
    assert np.isnan(step) and np.isnan(estep)
    empty = np.zeros((0,))
    check(ember.linspace(ember.asarray(empty), 1, 3, axis=-1), np.linspace(empty, 1, 3, axis=-1))
    check(
        ember.linspace(0, ember.asarray(np.ones(2)), 0, axis=1),
        np.linspace(0, np.ones(2), 0, axis=1),
    )
    tiny = np.array([0.0, 5e-324 * 3])  # a step of zero: NumPy's y / div * delta (gh-5437)
    check(ember.linspace(0.0, ember.asarray(tiny), 4), np.linspace(0.0, tiny, 4), exact=True)


# --------------------------------------------------------------------- order= and like=
@pytest.mark.parametrize("order", ["C", "F"])
def test_new_arrays_order(backend, order):
    check_layout(ember.zeros((2, 3), order=order), np.zeros((2, 3), order=order))
    check_layout(ember.ones((2, 3, 4), "int32", order), np.ones((2, 3, 4), "int32", order))
    check_layout(ember.full((3, 2), 7, None, order), np.full((3, 2), 7, None, order))
    e = ember.empty((4, 2), order=order)
    assert e.shape == (4, 2) and e.flags.f_contiguous == (order == "F")
    check_layout(ember.eye(3, 4, -1, order=order), np.eye(3, 4, -1, order=order))
    with pytest.raises(ValueError, match="only 'C' or 'F' order is permitted"):
        ember.zeros(3, order="K")
    with pytest.raises(ValueError, match="order must be one of"):
        ember.ones(3, order="X")


def test_like_reference_array(backend):
    x = ember.arange(3.0)
    check(np.zeros((2, 2), like=x), np.zeros((2, 2)))
    check(np.full(3, 2.5, like=x), np.full(3, 2.5))
    check(np.eye(3, 2, 1, like=x), np.eye(3, 2, 1))
    check(np.ones(2, "int8", like=x), np.ones(2, "int8"))
    check(ember.arange(4, like=x), np.arange(4))
    check(ember.asarray([1, 2], like=x), np.asarray([1, 2]))
    check(ember.ascontiguousarray(x[::2], like=x), np.arange(3.0)[::2])
    with pytest.raises(TypeError, match="like= must be an ember array"):
        ember.zeros(3, like=np.zeros(3))


def test_eye_numpy_keywords(backend):
    check(ember.eye(N=3, M=2, k=1, dtype="int64"), np.eye(N=3, M=2, k=1, dtype="int64"))
    check(np.eye(2, like=ember.ones(1)), np.eye(2))


@pytest.mark.parametrize("order", ["K", "A", "C", "F"])
def test_like_functions_order_subok_shape(backend, order):
    h = sample("float32", (3, 4))
    for view in (lambda a: a, lambda a: a.T, lambda a: a[:, ::2].T):
        x, hx = ember.asarray(h), h
        x, hx = view(x), view(hx)
        check_layout(np.zeros_like(x, None, order, True), np.zeros_like(hx, None, order, True))
        check_layout(np.ones_like(x, "int16", order), np.ones_like(hx, "int16", order))
        check_layout(np.full_like(x, 3, None, order, False, (2, 5)),
                     np.full_like(hx, 3, None, order, False, (2, 5)))  # fmt: skip
        check_layout(np.full_like(x, 1, shape=(2, 2, 2), order=order),
                     np.full_like(hx, 1, shape=(2, 2, 2), order=order))  # fmt: skip
        e = np.empty_like(x, order=order, subok=True)
        assert (
            e.shape == hx.shape
            and e.flags.f_contiguous == np.empty_like(hx, order=order).flags.f_contiguous
        )


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
def test_asarray_order(backend, order):
    h = sample("float64", (3, 4))
    check(ember.asarray(h[::2], None, order), np.asarray(h[::2], None, order))  # (packed)
    for host in (h, h.T):
        check_layout(ember.asarray(host, None, order), np.asarray(host, None, order))
        c = np.ascontiguousarray(host)
        d = ember.asarray(c)
        for dv, hv in ((d, c), (d.T, c.T)):
            check_layout(ember.asarray(dv, "float32", order), np.asarray(hv, "float32", order))
            check_layout(ember.asarray(dv, order=order, copy=True), np.array(hv, order=order))
    x = ember.asarray(h)
    assert ember.asarray(x, order="C") is x and ember.asarray(x.T, order="A").buffer is x.buffer
    with pytest.raises(ValueError, match="copy"):
        ember.asarray(x.T, order="C", copy=False)


# --------------------------------------------------------------------- linalg
def _symmetric(n=4, seed=0, dtype="float64"):
    a = sample(dtype, (n, n), seed=seed)
    return (a + a.T).astype(dtype)


def test_matrix_rank_tol_hermitian(backend):
    s, z = _symmetric(), np.zeros((4, 4))
    low = np.outer(np.arange(1.0, 5.0), np.arange(2.0, 6.0))  # rank 1
    stack = np.stack([s, z, low])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ember.EmberPerformanceWarning)
        for args, kw in [((1.0,), {}), ((), {"hermitian": True}), (([0.5, 0.1, 1e-3],), {}),
                         ((None, False), {"rtol": 0.5})]:  # fmt: skip
            check(np.linalg.matrix_rank(ember.asarray(stack), *args, **kw),
                  np.linalg.matrix_rank(stack, *args, **kw))  # fmt: skip
        check(
            np.linalg.matrix_rank(ember.asarray(s), 1.0, True), np.linalg.matrix_rank(s, 1.0, True)
        )
        for v in (np.ones(3), np.zeros(3), np.zeros(0)):
            check(np.linalg.matrix_rank(ember.asarray(v)), np.linalg.matrix_rank(v))
        with pytest.raises(ValueError, match="`tol` and `rtol` can't be both set"):
            ember.linalg.matrix_rank(ember.asarray(s), 1.0, rtol=0.1)


def test_pinv_rcond_hermitian(backend):
    b, s = sample("float64", (3, 5)), _symmetric(seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ember.EmberPerformanceWarning)
        check(np.linalg.pinv(ember.asarray(b), 0.5), np.linalg.pinv(b, 0.5), rtol=1e-10)
        check(np.linalg.pinv(ember.asarray(s), hermitian=True), np.linalg.pinv(s, hermitian=True),
              rtol=1e-10)  # fmt: skip
        stack = np.stack([b, 2 * b])
        check(np.linalg.pinv(ember.asarray(stack), [0.1, 0.9]), np.linalg.pinv(stack, [0.1, 0.9]),
              rtol=1e-10)  # fmt: skip
        check(np.linalg.pinv(ember.asarray(np.zeros((0, 3)))), np.linalg.pinv(np.zeros((0, 3))))
        with pytest.raises(ValueError, match="`rtol` and `rcond` can't be both set"):
            ember.linalg.pinv(ember.asarray(b), 0.1, rtol=0.1)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_svd_hermitian_and_positional(backend, dtype):
    a = sample(dtype, (4, 4), seed=3)
    h = (a + a.conj().T).astype(dtype)
    tol = 1e-4 if dtype == "float32" else 1e-10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ember.EmberPerformanceWarning)
        for got, want in zip(np.linalg.svd(ember.asarray(h), True, True, True),
                             np.linalg.svd(h, True, True, True), strict=True):  # fmt: skip
            check(got, want, rtol=tol)
        values = np.linalg.svd(ember.asarray(h), False, False, True)
        check(values, np.linalg.svd(h, False, False, True), rtol=tol)
        b = sample(dtype, (3, 5))
        for got, want in zip(
            np.linalg.svd(ember.asarray(b), False), np.linalg.svd(b, False), strict=True
        ):
            check(
                abs(got) if got.ndim == 2 else got, abs(want) if want.ndim == 2 else want, rtol=tol
            )
        with pytest.raises(ember.linalg.LinAlgError, match="square"):
            ember.linalg.svd(ember.asarray(b), hermitian=True)


@pytest.mark.parametrize("shape", [(3, 5), (2, 4, 3)])
def test_qr_raw_and_positional_mode(backend, shape):
    a = sample("float64", shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ember.EmberPerformanceWarning)
        h, tau = np.linalg.qr(ember.asarray(a), "raw")
        eh, etau = np.linalg.qr(a, "raw")
        check(h, eh, rtol=1e-10)
        check(tau, etau, rtol=1e-10)
        check(np.linalg.qr(ember.asarray(a), "r"), np.linalg.qr(a, "r"), rtol=1e-10)
        if len(shape) == 2:
            with pytest.warns(DeprecationWarning, match="economic"):
                got = ember.linalg.qr(ember.asarray(a), "economic")
            with pytest.warns(DeprecationWarning):
                want = np.linalg.qr(a, "economic")
            check(got, want, rtol=1e-10)
            with pytest.warns(DeprecationWarning, match="'full' option is deprecated"):
                q, r = ember.linalg.qr(ember.asarray(a), "full")
            check(q @ r, a, rtol=1e-10)
        with pytest.raises(ValueError, match="unrecognized mode 'x'"):
            ember.linalg.qr(ember.asarray(a), "x")
        check(np.linalg.matrix_power(ember.asarray(_symmetric()), n=2),
              np.linalg.matrix_power(_symmetric(), n=2))  # fmt: skip


# --------------------------------------------------------------------- manipulation, fft
def test_manipulation_numpy_parameters(backend):
    a, b = sample("int32", (2, 3)), sample("float32", (1, 3))
    x, y = ember.asarray(a), ember.asarray(b)
    check(ember.concat((x, y), 0), np.concat((a, b), 0))
    check(ember.concat((x, y), None, dtype="float64"), np.concat((a, b), None, dtype="float64"))
    out = ember.empty((3, 3), dtype="float32")
    assert ember.concat([x, y], 0, out) is out
    check(out, np.concatenate([a, b], 0, np.empty((3, 3), np.float32)))
    with pytest.raises(TypeError, match="casting"):
        ember.concat([x, y], 0, dtype="int8", casting="safe")
    check(np.broadcast_to(x[0], (4, 3), subok=True), np.broadcast_to(a[0], (4, 3), subok=True))
    for got, want in zip(
        np.broadcast_arrays(x, y, subok=False), np.broadcast_arrays(a, b), strict=True
    ):
        check(got, want)
    check(np.tile(x, reps=(2, 1)), np.tile(a, reps=(2, 1)))
    check(np.repeat(x, repeats=2, axis=1), np.repeat(a, repeats=2, axis=1))
    check(np.stack(arrays=[x, x], axis=-1), np.stack(arrays=[a, a], axis=-1))


def test_fft_helpers_numpy_parameters(backend):
    check(np.fft.fftfreq(n=8, d=0.5), np.fft.fftfreq(n=8, d=0.5))
    check(ember.fft.fftfreq(7, 0.1, None), np.fft.fftfreq(7, 0.1, None))
    check(ember.fft.rfftfreq(n=9, d=2.0, device=None), np.fft.rfftfreq(n=9, d=2.0, device=None))
    a = sample("float64", (3, 4))
    check(np.fft.fftshift(x=ember.asarray(a), axes=1), np.fft.fftshift(x=a, axes=1))
    check(np.fft.ifftshift(x=ember.asarray(a)), np.fft.ifftshift(x=a))
