"""ember.linalg against NumPy on every backend: factorization residuals (||A - QR||,
||A - L L^T||, ||A V - V diag(w)||, ||A - U S Vh||, ||A X - B||), orthogonality, the
compositions (norms, trace, cross, diagonal, matrix_power, pinv, matrix_rank).

Tolerances: residuals relative to ||A||, float64 1e-10, float32 1e-4.  On a device
without a solver library the factorizations run on the host (EmberPerformanceWarning);
on CUDA with cuSOLVER they run on the device: the same tests cover both."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

import ember
from ember.errors import EmberPerformanceWarning

pytestmark = pytest.mark.filterwarnings("ignore::ember.EmberPerformanceWarning")
RES = {"float32": 1e-4, "float64": 1e-10}
needs_reductions = pytest.mark.skipif(
    importlib.util.find_spec("ember.array.reduce") is None,
    reason="needs the reductions of ember.array.reduce",
)


def rand(shape, dtype="float64", seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def spd(n, batch=(), dtype="float64"):
    a = rand((*batch, n, n), dtype)
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


def residual(x, y, ref):
    scale = max(1.0, float(np.abs(ref).max()))
    return float(np.abs(np.asarray(x) - np.asarray(y)).max()) / scale


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cholesky(backend, dtype):
    a = spd(6, (2,), dtype)
    L = ember.linalg.cholesky(ember.asarray(a))
    assert L.dtype is ember.dtype(dtype) and L.shape == a.shape
    h = L.to_numpy()
    assert np.allclose(np.triu(h, 1), 0)
    assert residual(h @ np.swapaxes(h, -1, -2), a, a) < RES[dtype]
    U = ember.linalg.cholesky(ember.asarray(a), upper=True).to_numpy()
    assert (
        np.allclose(np.tril(U, -1), 0) and residual(np.swapaxes(U, -1, -2) @ U, a, a) < RES[dtype]
    )
    with pytest.raises(ember.linalg.LinAlgError, match="positive definite"):
        ember.linalg.cholesky(ember.asarray(-np.eye(3, dtype=dtype)))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_reads_one_triangle_as_numpy_does(backend, upper):
    """NumPy's cholesky reads the lower triangle (upper=True: the upper one); the other
    may hold anything (here noise), and the factor is the same."""
    a = spd(5, (2,))
    noise = np.random.default_rng(5).standard_normal(a.shape)
    junk = np.triu(noise, 1) if not upper else np.tril(noise, -1)
    got = ember.linalg.cholesky(ember.asarray(a + junk), upper=upper).to_numpy()
    np.testing.assert_allclose(got, np.linalg.cholesky(a, upper=upper), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(7, 4), (4, 7), (2, 5, 5)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(backend, shape, mode):
    a = rand(shape)
    q, r = ember.linalg.qr(ember.asarray(a), mode=mode)
    eq, er = np.linalg.qr(a, mode=mode)
    assert q.shape == eq.shape and r.shape == er.shape
    hq, hr = q.to_numpy(), r.to_numpy()
    assert residual(hq @ hr, a, a) < 1e-10
    assert np.allclose(np.swapaxes(hq, -1, -2) @ hq, np.eye(hq.shape[-1]), atol=1e-10)
    assert np.allclose(np.tril(hr, -1), 0)
    if mode == "reduced":  # NumPy's mode="r": that R alone
        r_only = np.linalg.qr(ember.asarray(a), mode="r")
        np.testing.assert_allclose(r_only.to_numpy(), hr, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_eigh_and_eigvalsh(backend, dtype):
    a = spd(5, (3,), dtype)
    w, v = ember.linalg.eigh(ember.asarray(a))
    hw, hv = w.to_numpy(), v.to_numpy()
    np.testing.assert_allclose(hw, np.linalg.eigvalsh(a), rtol=RES[dtype] * 10)
    assert residual(a @ hv, hv * hw[..., None, :], a) < RES[dtype]
    np.testing.assert_allclose(ember.linalg.eigvalsh(ember.asarray(a)).to_numpy(), hw,
                               rtol=RES[dtype] * 10)  # fmt: skip


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_reads_one_triangle_as_numpy_does(backend, dtype, uplo):
    """Only the lower triangle (UPLO='U': the upper one) is read: the other may hold
    anything.  The device solver reads column-major, where the triangles swap; it read
    the upper one for UPLO='L' until 2026-12-03, a silent difference for such input."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((2, 4, 4))
    if dtype == "complex128":
        a = a + 1j * rng.standard_normal((2, 4, 4))
    keep = np.tril if uplo == "L" else np.triu
    h = keep(a) + np.conj(np.swapaxes(keep(a, -1 if uplo == "L" else 1), -1, -2))
    h = h - 1j * np.imag(h) * np.eye(4) if dtype == "complex128" else h  # a real diagonal
    w, v = ember.linalg.eigh(ember.asarray(a), UPLO=uplo)
    np.testing.assert_allclose(w.to_numpy(), np.linalg.eigvalsh(h), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.to_numpy(), np.linalg.eigvalsh(a, UPLO=uplo), rtol=1e-10)
    hv = v.to_numpy()
    assert residual(h @ hv, hv * w.to_numpy()[..., None, :], h) < 1e-10
    got = np.linalg.eigvalsh(ember.asarray(a), UPLO=uplo)  # NumPy's call, dispatched
    np.testing.assert_allclose(got.to_numpy(), np.linalg.eigvalsh(h), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="UPLO must be 'L' or 'U'"):
        ember.linalg.eigvalsh(ember.asarray(a), UPLO="X")


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 3, 3)])
@pytest.mark.parametrize("full", [True, False])
def test_svd_and_svdvals(backend, shape, full):
    a = rand(shape)
    u, s, vh = ember.linalg.svd(ember.asarray(a), full_matrices=full)
    eu, es, evh = np.linalg.svd(a, full_matrices=full)
    assert (u.shape, s.shape, vh.shape) == (eu.shape, es.shape, evh.shape)
    hu, hs, hvh = u.to_numpy(), s.to_numpy(), vh.to_numpy()
    np.testing.assert_allclose(hs, es, rtol=1e-10)
    k = hs.shape[-1]
    assert residual((hu[..., :, :k] * hs[..., None, :]) @ hvh[..., :k, :], a, a) < 1e-10
    np.testing.assert_allclose(ember.linalg.svdvals(ember.asarray(a)).to_numpy(), es, rtol=1e-10)
    values = np.linalg.svd(ember.asarray(a), compute_uv=False)  # NumPy's keyword, dispatched
    assert isinstance(values, ember.ndarray)
    np.testing.assert_allclose(values.to_numpy(), es, rtol=1e-10)


def test_solve_inv_det_slogdet(backend):
    a = spd(4, (3,)) + rand((3, 4, 4), seed=1)  # not symmetric
    b = rand((3, 4, 2), seed=2)
    x = ember.linalg.solve(ember.asarray(a), ember.asarray(b))
    assert x.shape == (3, 4, 2) and residual(a @ x.to_numpy(), b, b) < 1e-10
    v = rand(4, seed=3)
    xv = ember.linalg.solve(ember.asarray(a[0]), ember.asarray(v))
    assert xv.shape == (4,) and residual(a[0] @ xv.to_numpy(), v, v) < 1e-10
    xb = ember.linalg.solve(ember.asarray(a), ember.asarray(b[0]))  # b broadcast over a's batch
    np.testing.assert_allclose(xb.to_numpy(), np.linalg.solve(a, b[0]), rtol=1e-9, atol=1e-12)
    inv = ember.linalg.inv(ember.asarray(a)).to_numpy()
    assert residual(a @ inv, np.broadcast_to(np.eye(4), a.shape), a) < 1e-10
    np.testing.assert_allclose(ember.linalg.det(ember.asarray(a)).to_numpy(), np.linalg.det(a),
                               rtol=1e-10)  # fmt: skip
    sign, logabs = ember.linalg.slogdet(ember.asarray(a))
    es, el = np.linalg.slogdet(a)
    np.testing.assert_array_equal(sign.to_numpy(), es)
    np.testing.assert_allclose(logabs.to_numpy(), el, rtol=1e-10)
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.solve(ember.zeros((3, 3)), ember.ones(3))
    assert ember.linalg.det(ember.zeros((2, 2))).to_numpy() == 0


def test_one_matrix_gives_0d_determinants(backend):
    # NumPy's det and slogdet of one matrix are scalars; Ember's are 0-d arrays (the host
    # path used to make them 1-d: numpy.ascontiguousarray of a 0-d array is 1-d)
    a = spd(3) + rand((3, 3), seed=4)
    d = ember.linalg.det(ember.asarray(a))
    assert d.shape == () and float(d) == pytest.approx(np.linalg.det(a), rel=1e-10)
    sign, logabs = ember.linalg.slogdet(ember.asarray(a))
    assert sign.shape == logabs.shape == ()
    assert float(sign) == np.sign(np.linalg.det(a))
    assert ember.linalg.matrix_rank(ember.asarray(a)).shape == ()


def test_products_views_and_errors(backend):
    a, b = rand((2, 3, 4)), rand((2, 4, 5), seed=1)
    np.testing.assert_allclose(ember.linalg.matmul(ember.asarray(a), ember.asarray(b))
                               .to_numpy(), a @ b, rtol=1e-12)  # fmt: skip
    assert ember.linalg.matrix_transpose(ember.asarray(a)).shape == (2, 4, 3)
    np.testing.assert_array_equal(
        ember.linalg.diagonal(ember.asarray(a), offset=-1).to_numpy(),
        np.diagonal(a, -1, -2, -1),
    )
    x, y = rand((4, 3)), rand((1, 3), seed=1)
    np.testing.assert_allclose(ember.linalg.cross(ember.asarray(x), ember.asarray(y))
                               .to_numpy(), np.cross(x, y), rtol=1e-12)  # fmt: skip
    np.testing.assert_allclose(ember.linalg.cross(ember.asarray(x.T), ember.asarray(y.T), axis=0)
                               .to_numpy(), np.cross(x.T, y.T, axis=0), rtol=1e-12)  # fmt: skip
    m = rand((3, 3), seed=4)
    for n in (0, 1, 2, 5, -1, -3):
        np.testing.assert_allclose(ember.linalg.matrix_power(ember.asarray(m), n).to_numpy(),
                                   np.linalg.matrix_power(m, n), rtol=1e-9, atol=1e-12)  # fmt: skip
    with pytest.raises(ember.linalg.LinAlgError, match="square"):
        ember.linalg.inv(ember.ones((2, 3)))
    with pytest.raises(TypeError, match="float16"):
        ember.linalg.inv(ember.ones((2, 2), ember.float16))
    with pytest.raises(ValueError, match="1-d"):
        ember.linalg.outer(ember.ones((2, 2)), ember.ones(2))
    assert ember.linalg.inv(ember.asarray(np.eye(2, dtype=np.int32))).dtype is ember.float64


def test_host_fallback_warns(backend):
    if backend.solver() is not None:
        pytest.skip("this device factors on the device")
    from ember.array import linalg

    linalg._warned.discard("eigvalsh")
    with pytest.warns(EmberPerformanceWarning, match="runs on the host"):
        ember.linalg.eigvalsh(ember.asarray(spd(3)))


@needs_reductions
def test_norms_trace_pinv_rank(backend):
    a = rand((2, 4, 5))
    da = ember.asarray(a)
    for ord in (2, 1, math.inf, -math.inf, 0, 3.5):
        np.testing.assert_allclose(ember.linalg.vector_norm(da, ord=ord).to_numpy(),
                                   np.linalg.vector_norm(a, ord=ord), rtol=1e-10)  # fmt: skip
    np.testing.assert_allclose(
        ember.linalg.vector_norm(da, axis=(0, 2), keepdims=True).to_numpy(),
        np.linalg.vector_norm(a, axis=(0, 2), keepdims=True),
        rtol=1e-10,
    )
    for ord in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        np.testing.assert_allclose(ember.linalg.matrix_norm(da, ord=ord).to_numpy(),
                                   np.linalg.matrix_norm(a, ord=ord), rtol=1e-10)  # fmt: skip
    i = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = ember.linalg.trace(ember.asarray(i), offset=1)
    assert t.dtype is ember.int64 and t.to_numpy() == np.trace(i, offset=1)
    np.testing.assert_allclose(ember.linalg.pinv(da).to_numpy(), np.linalg.pinv(a), atol=1e-10)
    low = rand((5, 2), seed=1) @ rand((2, 5), seed=2)
    assert int(ember.linalg.matrix_rank(ember.asarray(low)).to_numpy()) == 2


# ---------------------------------------------------------------- numpy.linalg extras
def test_norm_over_every_axis_choice(backend):
    dtype = "float64"
    h = rand((3, 4, 5), dtype)
    x = ember.asarray(h)
    tol = RES[dtype]
    cases = [(None, None), (None, 1), (1, -1), (-math.inf, 0), (0, 2), (3.5, 1), ("fro", (1, 2)),
             ("nuc", (0, 1)), (2, (2, 0)), (-1, (0, 2)), (math.inf, (1, 0))]  # fmt: skip
    for ord_, axis in cases:
        for keep in (False, True):
            got = ember.linalg.norm(x, ord_, axis, keepdims=keep)
            want = np.linalg.norm(h, ord_, axis, keepdims=keep)
            assert got.shape == want.shape and got.dtype == ember.dtype(dtype), (ord_, axis)
            assert residual(got.to_numpy(), want, want) < tol, (ord_, axis, keep)
    assert np.isclose(float(ember.linalg.norm(x[0], 2)), np.linalg.norm(h[0], 2), rtol=tol)
    f = ember.linalg.norm(x.astype(ember.float32), 1, 1)  # float32 stays float32
    assert f.dtype == ember.float32
    assert residual(f.to_numpy(), np.linalg.norm(h, 1, 1), h) < RES["float32"]
    i = ember.asarray(np.arange(6).reshape(2, 3))
    assert ember.linalg.norm(i).dtype == ember.float64  # integers in float64, as NumPy
    assert isinstance(np.linalg.norm(x), ember.ndarray)  # NumPy's function stays here
    with pytest.raises(ValueError, match="improper number of dimensions"):
        ember.linalg.norm(x, 2)
    with pytest.raises(ValueError, match="for vectors"):
        ember.linalg.norm(x, "fro", axis=1)
    with pytest.raises(ValueError, match="duplicate"):
        ember.linalg.norm(x, None, (1, -2))


def test_lstsq_cond_multi_dot(backend):
    a, b = rand((7, 4), seed=1), rand((7, 3), seed=2)
    for bb in (b, b[:, 0]):
        got = ember.linalg.lstsq(ember.asarray(a), ember.asarray(bb))
        want = np.linalg.lstsq(a, bb)
        for g, w in zip((got.x, got.residuals, got.s), (want[0], want[1], want[3]), strict=True):
            assert g.shape == w.shape and residual(g.to_numpy(), w, w) < 1e-10
        assert got.rank == want[2] == 4
    low = np.outer(rand(5, seed=3), rand(4, seed=4))  # rank 1: no residuals, as NumPy
    got, want = (
        ember.linalg.lstsq(ember.asarray(low), ember.asarray(b[:5])),
        np.linalg.lstsq(low, b[:5]),
    )
    assert got.rank == want[2] == 1 and got.residuals.shape == (0,)
    assert residual(got.x.to_numpy(), want[0], want[0]) < 1e-10
    sq = rand((2, 4, 4), seed=5)
    for p in (None, 2, -2, 1, -math.inf, "fro", "nuc"):
        want = np.linalg.cond(sq, p)
        assert residual(ember.linalg.cond(ember.asarray(sq), p).to_numpy(), want, want) < 1e-9
    singular = np.ones((3, 3))
    assert float(ember.linalg.cond(ember.asarray(singular), 1)) == math.inf
    chain = [rand(6, seed=6), rand((6, 40), seed=7), rand((40, 3), seed=8), rand((3, 2), seed=9)]
    want = np.linalg.multi_dot(chain)
    got = ember.linalg.multi_dot([ember.asarray(c) for c in chain])
    assert got.shape == want.shape and residual(got.to_numpy(), want, want) < 1e-10
    with pytest.raises(ValueError, match="at least two"):
        ember.linalg.multi_dot([ember.asarray(a)])
    # the cheapest order: (A B) C costs 10*100*5 + 10*5*50, A (B C) 100*5*50 + 10*100*50
    from ember.array.linalg_numpy import _order

    assert _order([10, 100, 5, 50])[0][2] == 1


def test_eig_tensorsolve_tensorinv(backend):
    h = rand((4, 4), seed=10)
    with pytest.warns(EmberPerformanceWarning, match="non-symmetric"):
        from ember.array import linalg as la

        la._warned.discard("eig")
        w, v = ember.linalg.eig(ember.asarray(h))
    hw = np.linalg.eig(h).eigenvalues
    assert np.allclose(np.sort_complex(w.to_numpy()), np.sort_complex(hw))
    assert np.allclose(h @ v.to_numpy(), v.to_numpy() * w.to_numpy())
    assert np.allclose(np.sort_complex(ember.linalg.eigvals(ember.asarray(h)).to_numpy()),
                       np.sort_complex(hw))  # fmt: skip
    t = rand((6, 2, 3), seed=11)
    want = np.linalg.tensorinv(t, ind=1)
    assert residual(ember.linalg.tensorinv(ember.asarray(t), ind=1).to_numpy(), want, want) < 1e-9
    a, b = rand((2, 3, 6), seed=12), rand((2, 3), seed=13)
    want = np.linalg.tensorsolve(a, b)
    got = ember.linalg.tensorsolve(ember.asarray(a), ember.asarray(b))
    assert got.shape == want.shape and residual(got.to_numpy(), want, want) < 1e-9


def test_norm_dtypes_and_empty_inputs(backend):
    # ord=0 counts in the real dtype (it stayed complex); norms of empty inputs are 0, as
    # NumPy's (max of no magnitudes raised)
    for a, ord_ in ((np.array([1 + 1j, 0, 2j]), 0), (np.array([1 + 1j, 0], np.complex64), 0),
                    (np.zeros(0), np.inf), (np.zeros((0, 3)), 2), (np.zeros((0, 3)), 1),
                    (np.zeros((3, 0)), np.inf), (np.zeros((0, 3)), "nuc")):  # fmt: skip
        got, want = ember.linalg.norm(ember.asarray(a), ord_), np.linalg.norm(a, ord_)
        assert got.dtype == want.dtype, (a.dtype, ord_)
        np.testing.assert_allclose(got.to_numpy(), want)


def test_lstsq_of_single_precision_is_numpys(backend):
    # NumPy solves float32 in float64 (its default rcond is double's): rank 2 here
    a, b = np.diag([1.0, 1e-8]).astype(np.float32), np.ones(2, np.float32)
    want = np.linalg.lstsq(a, b)
    got = ember.linalg.lstsq(ember.asarray(a), ember.asarray(b))
    assert got[2] == want[2] and type(got[2]) is type(want[2])
    np.testing.assert_allclose(got[0].to_numpy(), want[0], rtol=1e-6)
    assert got[0].dtype == want[0].dtype
