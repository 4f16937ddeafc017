"""The row-major -> column-major mapping of matrix products onto a vendor BLAS
(ember/array/blas_call.py), checked without a GPU: a fake backend whose "device memory" is
host memory and a fake ``gemm`` that computes the column-major strided batched product
it is asked for with NumPy, exactly as cuBLAS defines it."""

from __future__ import annotations

import numpy as np
import pytest
from fake_backend import FakeBase

import ember
from ember.array import blas_call, matmul
from ember.array.ndarray import ndarray


class Pool:
    """Host memory posing as device memory: buffers are slices of one array."""

    def __init__(self):
        self.mem = np.zeros(1 << 20, np.uint8)
        self.base = self.mem.ctypes.data
        self.used = 0

    def put(self, host: np.ndarray):
        start = self.used
        self.mem[start : start + host.nbytes] = host.reshape(-1).view(np.uint8)
        self.used += (host.nbytes + 255) // 256 * 256
        return Buffer(self.base + start, host.nbytes)

    def view(self, address, dtype, shape, strides):
        off = address - self.base
        flat = self.mem[off:].view(dtype)
        return np.lib.stride_tricks.as_strided(flat, shape, [s * flat.itemsize for s in strides])


class Buffer:
    def __init__(self, handle, nbytes):
        self.handle, self.nbytes = handle, nbytes


class Stream:
    submitted = 0


class Backend:
    def __init__(self):
        self.default_stream = Stream()

    def native_pointer(self, buffer, offset=0):
        return buffer.handle + offset


class FakeBlas:
    """cuBLAS's strided batched GEMM semantics, column-major, computed with NumPy."""

    def __init__(self, pool):
        self.pool, self.calls = pool, []

    def gemm(self, dtype, opa, opb, m, n, k, a, lda, sa, b, ldb, sb, c, ldc, sc, batch, stream,
             tf32=False):  # fmt: skip
        dt = np.dtype(dtype)
        self.calls.append((opa, opb, m, n, k, lda, ldb, ldc, sa, sb, sc, batch))
        for i in range(batch):
            shape_a = (m, k) if opa == "N" else (k, m)
            shape_b = (k, n) if opb == "N" else (n, k)
            A = self.pool.view(a + i * sa * dt.itemsize, dt, shape_a, (1, lda))
            B = self.pool.view(b + i * sb * dt.itemsize, dt, shape_b, (1, ldb))
            A = A if opa == "N" else A.T
            B = B if opb == "N" else B.T
            C = self.pool.view(c + i * sc * dt.itemsize, dt, (m, n), (1, ldc))
            wide = np.complex128 if dt.kind == "c" else np.float64
            C[...] = (A.astype(wide) @ B.astype(wide)).astype(dt)
        stream.submitted += 1


def device(pool, be, host: np.ndarray, view=lambda x: x) -> ndarray:
    """``view(host)`` as an ember array over the pool (same strides and offset)."""
    buf = pool.put(host)
    v = view(host)
    offset = v.__array_interface__["data"][0] - host.ctypes.data
    return ndarray(v.shape, ember.dtype(v.dtype), buf, be, v.strides, offset)


CASES = [
    ((5, 7), (7, 3), lambda x: x, lambda x: x),
    ((7, 5), (7, 3), lambda x: x.T, lambda x: x),  # A transposed
    ((5, 7), (3, 7), lambda x: x, lambda x: x.T),  # B transposed
    ((7, 5), (3, 7), lambda x: x.T, lambda x: x.T),
    ((1, 7), (7, 1), lambda x: x, lambda x: x),  # a row times a column
    ((4, 5, 7), (7, 3), lambda x: x, lambda x: x),  # batch on A only
    ((3, 1, 5, 7), (4, 7, 2), lambda x: x, lambda x: x),  # batch on both: two levels
    ((6, 8), (8, 4), lambda x: x[::2, 1:6], lambda x: x[1:6, :]),  # row-strided views
]


@pytest.mark.parametrize("sa, sb, va, vb", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "complex64", "complex128"])
def test_products_map_onto_column_major_gemm(sa, sb, va, vb, dtype):
    rng = np.random.default_rng(0)
    pool, be = Pool(), Backend()
    ha = rng.standard_normal(sa).astype(dtype)
    hb = rng.standard_normal(sb).astype(dtype)
    if np.dtype(dtype).kind == "c":  # (a transpose, never a conjugate)
        ha = ha + 1j * rng.standard_normal(sa).astype(dtype)
        hb = hb - 1j * rng.standard_normal(sb).astype(dtype)
    a, b = device(pool, be, ha, va), device(pool, be, hb, vb)
    A, B = va(ha), vb(hb)
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    expected = (A.astype(wide) @ B.astype(wide)).astype(dtype)
    out_host = np.zeros(expected.shape, dtype)
    out = device(pool, be, out_host)
    blas = FakeBlas(pool)
    assert blas_call.run(blas, a, b, out, tuple(batch))
    got = pool.view(be.native_pointer(out.buffer, out.offset), np.dtype(dtype), expected.shape,
                    [s // out_host.itemsize for s in out_host.strides])  # fmt: skip
    np.testing.assert_allclose(got, expected, rtol=1e-2 if dtype == "float16" else 1e-6)
    assert be.default_stream.submitted == len(blas.calls) >= 1
    for call in blas.calls:  # leading dimensions are valid for cuBLAS
        opa, opb, m, n, k, lda, ldb, ldc = call[:8]
        assert lda >= max(1, m if opa == "N" else k) and ldb >= max(1, k if opb == "N" else n)
        assert ldc >= max(1, m)


def test_vendor_is_asked_only_for_its_dtypes(monkeypatch):
    class Be(FakeBase):
        calls = 0

        def blas(self):
            Be.calls += 1
            return "lib"

    assert matmul.vendor(Be(), ember.float32) == "lib"
    assert matmul.vendor(Be(), ember.int32) is None
    with ember.config.override(blas="ember"):
        assert matmul.vendor(Be(), ember.float64) is None
    assert matmul.vendor(FakeBase(), ember.float32) is None  # a backend without one


def test_a_missing_library_is_a_clear_error():
    from ember.backends.cuda import vendor

    try:
        vendor.library("cusolver")
    except vendor.VendorUnavailable as exc:
        assert "ember[cuda]" in str(exc) and "libcusolver" in str(exc)
    else:
        pytest.skip("libcusolver is installed here")


def test_the_fast_path_of_2d_products(monkeypatch):
    """2-d C-contiguous operands go straight to one column-major call (C^T = B^T A^T);
    products of at most SMALL_PRODUCT multiply-adds to Ember's kernel instead."""
    pool = Pool()
    blas = FakeBlas(pool)

    class FastBackend(Backend):
        def blas(self):
            return blas

    be = FastBackend()
    monkeypatch.setattr(
        matmul, "allocate", lambda backend, nbytes: pool.put(np.zeros(nbytes, np.uint8))
    )
    monkeypatch.setattr(matmul, "_FAST", {})
    kernel_calls = []
    monkeypatch.setattr(
        matmul, "_kernel_entry", lambda a: lambda a, b: kernel_calls.append((a.shape, b.shape))
    )
    rng = np.random.default_rng(1)
    ha, hb = rng.standard_normal((70, 60)), rng.standard_normal((60, 70))  # > 64^3
    a, b = device(pool, be, ha), device(pool, be, hb)
    a._c = b._c = True
    out = matmul.matmul(a, b)
    assert out.shape == (70, 70) and len(blas.calls) == 1
    assert blas.calls[0][:5] == ("N", "N", 70, 70, 60) and not kernel_calls
    got = pool.view(be.native_pointer(out.buffer, out.offset), np.dtype("float64"), (70, 70),
                    (70, 1))  # fmt: skip
    np.testing.assert_allclose(got, ha @ hb, rtol=1e-12)
    small_a, small_b = device(pool, be, ha[:5, :3].copy()), device(pool, be, hb[:3, :4].copy())
    small_a._c = small_b._c = True
    matmul.matmul(small_a, small_b)
    assert kernel_calls == [((5, 3), (3, 4))] and len(blas.calls) == 1
