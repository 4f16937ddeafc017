"""The matmul family against NumPy: matmul/@ (1-d rules, batches, broadcasting, transposed
and reversed views, empty shapes), tensordot, vecdot, outer, dot, inner, einsum.

Tolerances (relative to the size of the result, K = 33): float64 1e-12, float32 1e-5,
float16 1e-2 (the product is accumulated in float32 and rounded once); integers and bools
exact (NumPy's wrapping)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.array import gemm

TOL = {"float16": 1e-2, "float32": 1e-5, "float64": 1e-12}


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def close(actual, expected):
    expected = np.asarray(expected)
    assert isinstance(actual, ember.ndarray)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype is ember.dtype(expected.dtype), (actual.dtype, expected.dtype)
    got = actual.to_numpy()
    if expected.dtype.kind == "f":
        tol = TOL[expected.dtype.name]
        scale = max(1.0, float(np.abs(expected).max(initial=0)))
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * scale)
    else:
        np.testing.assert_array_equal(got, expected)


SHAPES = [
    ((5, 7), (7, 3)),
    ((130, 33), (33, 70)),  # crosses a 128/64 tile edge in both directions
    ((7,), (7, 3)),
    ((5, 7), (7,)),
    ((33,), (33,)),
    ((2, 3, 5, 7), (7, 4)),
    ((3, 1, 5, 7), (4, 7, 2)),  # batch broadcast on both sides
    ((2, 1, 3, 1, 4, 5), (1, 2, 1, 3, 5, 6)),  # batch axes that do not coalesce
    ((0, 3), (3, 4)),
    ((4, 0), (0, 5)),  # K = 0: zeros
]


@pytest.mark.parametrize("s1, s2", SHAPES)
def test_matmul_shapes(backend, s1, s2):
    a, b = data(s1, "float32"), data(s2, "float32", 1)
    close(ember.asarray(a) @ ember.asarray(b), a @ b)


@pytest.mark.parametrize("dtype", ["float64", "float16", "int32", "uint8", "bool"])
def test_matmul_dtypes(backend, dtype):
    a, b = data((9, 33), dtype), data((33, 10), dtype, 1)
    close(ember.matmul(ember.asarray(a), ember.asarray(b)), a @ b)


def test_matmul_mixed_dtypes_promote(backend):
    a, b = data((4, 6), "int8"), data((6, 3), "float32")
    close(ember.asarray(a) @ ember.asarray(b), a @ b)


def test_matmul_views(backend):
    a, b = data((40, 33), "float32"), data((50, 40), "float32", 1)
    da, db = ember.asarray(a), ember.asarray(b)
    close(da.T @ db.T, a.T @ b.T)  # transposed operands (no copy on GPUs)
    close(da[::-1, ::2] @ db[:17, ::-3], a[::-1, ::2] @ b[:17, ::-3])
    x = ember.asarray(b[:33])
    x @= ember.asarray(b[:40, :40])  # in place: the product keeps x's shape
    close(x, b[:33] @ b[:40, :40])
    with pytest.raises(ValueError):
        x @= da  # (33, 40) @ (40, 33) does not fit x: NumPy refuses too


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_repeated_small_products(backend, dtype):
    """Repeated 2-d products of one shape: on Ember's kernel the launch is bound after the
    first (only the three addresses change); other data, row blocks of one buffer (other
    offsets), another shape, and the setting EMBER_BLAS switched in between."""
    from ember.array import matmul as mm

    a, b = data((3 * 9, 33), dtype), data((33, 10), dtype, 1)
    da, db = ember.asarray(a), ember.asarray(b)
    for _ in range(2):
        for i in range(3):
            close(da[9 * i : 9 * i + 9] @ db, a[9 * i : 9 * i + 9] @ b)
        close(db[:10] @ da[:10], b[:10] @ a[:10])
    entry = mm._FAST.get((da.dtype, db.dtype, da.backend))
    kernel = mm.vendor(da.backend, da.dtype) is None
    with ember.config.override(blas="ember" if not kernel else "auto"):
        close(da[:9] @ db, a[:9] @ b)
    fresh = data((9, 33), dtype, 2)
    close(ember.asarray(fresh) @ db, fresh @ b)
    if kernel:  # the bound launches exist only on Ember's kernel
        assert (9, 33, 10) in entry.bound and (10, 10, 33) in entry.bound


def test_matmul_errors(backend):
    a = ember.ones((3, 4), ember.float32)
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        a @ a
    with pytest.raises(ValueError, match="at least 1 dimension"):
        ember.matmul(ember.asarray(np.float32(2)), a)
    with pytest.raises(TypeError, match="ember.asarray"):
        ember.matmul(a, np.ones((4, 2)))


def test_tensordot_vecdot_outer_dot_inner(backend):
    a, b = data((3, 4, 5), "float64"), data((4, 5, 6), "float64", 1)
    da, db = ember.asarray(a), ember.asarray(b)
    close(ember.tensordot(da, db), np.tensordot(a, b))
    close(ember.tensordot(da, db, axes=([1], [0])), np.tensordot(a, b, axes=([1], [0])))
    close(ember.tensordot(da, db, axes=0), np.tensordot(a, b, axes=0))
    u, v = data((2, 3, 5), "float64"), data((3, 5), "float64", 1)
    close(ember.vecdot(ember.asarray(u), ember.asarray(v)), np.vecdot(u, v))
    close(ember.vecdot(ember.asarray(u), ember.asarray(v), axis=-2),
          np.vecdot(u, v, axis=-2))  # fmt: skip
    x, y = data(5, "float64"), data(4, "float64", 1)
    close(ember.outer(ember.asarray(x), ember.asarray(y)), np.outer(x, y))
    close(ember.dot(ember.asarray(x), ember.asarray(x)), np.dot(x, x))
    close(ember.dot(da, ember.asarray(x)), np.dot(a, x))
    close(ember.dot(da, db), np.dot(a, b))
    close(ember.inner(da, ember.asarray(x)), np.inner(a, x))
    with pytest.raises(ValueError, match="differ in length"):
        ember.vecdot(ember.asarray(u), ember.asarray(y))


def test_matmul_out(backend):
    a, b = data((3, 4), "float64"), data((4, 2), "float64", 1)
    out = ember.zeros((3, 2))
    assert np.matmul(ember.asarray(a), ember.asarray(b), out=out) is out  # NumPy's call
    close(out, a @ b)
    with pytest.raises(ValueError, match="out= has shape"):
        ember.matmul(ember.asarray(a), ember.asarray(b), out=ember.zeros((2, 3)))


def test_products_over_empty_axes(backend):
    """A summed length of 0 gives zeros (dot of (3, 0) and (0, 4) once failed to reshape)."""
    for f, s1, s2 in [(np.dot, (3, 0), (0, 4)), (np.dot, (0,), (0,)), (np.inner, (2, 0), (3, 0)),
                      (np.dot, (0, 3), (3, 2)), (np.dot, (2, 3, 0), (0, 4))]:  # fmt: skip
        a, b = np.ones(s1), np.ones(s2)
        got = f(ember.asarray(a), ember.asarray(b))  # NumPy's function, dispatched
        assert got.shape == f(a, b).shape
        np.testing.assert_array_equal(got.to_numpy(), f(a, b))
    a, b = np.ones((2, 0, 3)), np.ones((0, 3, 4))
    got = ember.tensordot(ember.asarray(a), ember.asarray(b), axes=2)
    np.testing.assert_array_equal(got.to_numpy(), np.tensordot(a, b, axes=2))


@pytest.mark.parametrize(
    "spec, shapes",
    [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]),
     ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
     ("ij->ji", [(3, 4)]), ("ii->i", [(4, 4)]), ("ii", [(4, 4)]), ("ij->", [(3, 4)]),
     ("ij->j", [(3, 4)]), ("i,i->", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]),
     ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]), ("ij,ij->i", [(3, 4), (3, 4)]),
     ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
     ("bi,bi->b", [(6, 7), (6, 7)])],
)  # fmt: skip
def test_einsum(backend, spec, shapes):
    ops = [data(s, "float64", k) for k, s in enumerate(shapes)]
    close(ember.einsum(spec, *map(ember.asarray, ops)), np.einsum(spec, *ops))


def test_einsum_takes_numpys_keywords_and_sublist_form(backend):
    a, b, c = data((3, 4), "float64"), data((4, 5), "float64", 1), data((5,), "float64", 2)
    ea, eb, ec = map(ember.asarray, (a, b, c))
    close(ember.einsum(ea, [0, 1], eb, [1, 2], [0, 2]), np.einsum(a, [0, 1], b, [1, 2], [0, 2]))
    close(ember.einsum(ea, [0, 1], eb, [1, 2]), np.einsum(a, [0, 1], b, [1, 2]))
    close(ember.einsum(ea, [..., 51], [...]), np.einsum(a, [..., 51], [...]))
    close(np.einsum(ea, [30, 1], [1, 30]), np.einsum(a, [30, 1], [1, 30]))  # dispatched
    with pytest.raises(ValueError, match="int in \\[0, 52\\)"):
        ember.einsum(ea, [0, 52])
    want = np.einsum("ij,jk", a, b, dtype=np.float32, casting="same_kind")
    close(ember.einsum("ij,jk", ea, eb, dtype=np.float32, casting="same_kind"), want)
    with pytest.raises(TypeError, match="safe"):  # NumPy's default casting for dtype=
        ember.einsum("ij,jk", ea, eb, dtype=np.float32)
    got = ember.einsum("ij,jk", ea, eb, dtype=np.int32, casting="unsafe")
    close(got, np.einsum("ij,jk", a, b, dtype=np.int32, casting="unsafe"))
    path = np.einsum_path("ij,jk,k->i", a, b, c)[0]
    for optimize in (True, "greedy", "optimal", path):
        want = np.einsum("ij,jk,k->i", a, b, c, optimize=optimize)
        close(np.einsum("ij,jk,k->i", ea, eb, ec, optimize=optimize), want)
    close(ember.einsum("ij,jk", ea, eb, order="F"), a @ b)


def test_matvec_and_vecmat_are_numpys(backend):
    z = data((2, 4), "float64") + 1j * data((2, 4), "float64", 1)
    m = data((2, 4, 3), "float64", 2) + 1j * data((2, 4, 3), "float64", 3)
    got = ember.vecmat(ember.asarray(z), ember.asarray(m))
    np.testing.assert_allclose(got.to_numpy(), np.vecmat(z, m), rtol=1e-12)  # z conjugated
    mt = np.ascontiguousarray(m.transpose(0, 2, 1))
    got = np.matvec(ember.asarray(mt), ember.asarray(z))  # dispatched; z not conjugated
    np.testing.assert_allclose(got.to_numpy(), np.matvec(mt, z), rtol=1e-12)
    a, v = data((1, 3, 4), "int32"), data((5, 4), "int32", 1)
    close(ember.matvec(ember.asarray(a), ember.asarray(v)), np.matvec(a, v))  # broadcast
    out = ember.zeros((5, 3), ember.int32)
    assert ember.matvec(ember.asarray(a), ember.asarray(v), out=out) is out
    close(out, np.matvec(a, v))
    with pytest.raises(ValueError, match="at least 2 and 1"):
        ember.matvec(ember.asarray(v[0]), ember.asarray(v[0]))


def test_kernel_geometry_invariant():
    # each thread stages exactly 4 elements of A and of B per step (the kernel's loads)
    for gpu in (True, False):
        for wide, huge, pair in ((True, False, False), (False, False, False),
                                 (True, True, True), (True, False, True)):  # fmt: skip
            ts, tt, tile, bk = gemm.geometry(gpu, wide, huge, pair)
            assert tile * bk == 4 * ts * ts and tile == ts * tt and bk % 4 == 0


@pytest.mark.parametrize("transposed", [False, True])
def test_the_gpu_geometry_on_this_device(backend, monkeypatch, transposed):
    """The GPU variant (128 x 128 tiles, 8 x 8 per thread, runs of four columns, strided
    operands read in place) computes the same products on any device."""
    from ember.array import matmul as mm

    monkeypatch.setattr(mm, "_is_gpu", lambda be: True)
    a, b = data((130, 33), "float32"), data((33, 140), "float32", 1)
    if transposed:  # both operands transposed views: the t/t kernel variant
        da, db = (
            ember.asarray(np.ascontiguousarray(a.T)).T,
            ember.asarray(np.ascontiguousarray(b.T)).T,
        )
    else:
        da, db = ember.asarray(a), ember.asarray(b)
    with ember.config.override(blas="ember"):
        close(da @ db, a @ b)
