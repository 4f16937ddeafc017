"""The cuBLAS binding's per-call path (ember/backends/cuda/blas.py) on a fake library: the
handle is bound to a stream only when the stream changes, each product goes to its call
(cublas[SDCZ]gemm for float32 without TF32, float64 and complex; cublasGemmEx for 16-bit
floats and TF32) with the types and scalars of its dtype, and a failed status raises."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import pytest

from ember.backends.cuda import blas
from ember.errors import DriverError


class FakeApi:
    def __init__(self):
        self.calls: list = []
        self.status = 0

    def set_stream(self, handle, stream):
        self.calls.append(("stream", handle, stream))
        return 0

    def gemm_ex(self, *args):
        self.calls.append(("gemm", *args))
        return self.status

    def gemm_batched(self, *args):
        self.calls.append(("batched", *args))
        return self.status

    @property
    def typed(self):
        def call(name):
            def fn(*args):
                self.calls.append((name, *args))
                return self.status

            return fn

        return {d: (call(p + "gemm"), call(p + "batched")) for d, p in blas.TYPED.items()}


def _blas() -> blas.Blas:
    lib = object.__new__(blas.Blas)
    lib.api, lib.handle, lib._stream, lib._calls = FakeApi(), 42, None, {}
    lib.lt, lib._raw_stream = None, 0  # the fallback calls (tests/unit/test_blas_lt.py: cuBLASLt)
    lib.backend = SimpleNamespace(context=SimpleNamespace(ensure_current=lambda: None))
    lib._scalars = {t: (t(1), t(0)) for t in (ctypes.c_float, ctypes.c_double, blas.C_FLOAT,
                                              blas.C_DOUBLE)}  # fmt: skip
    lib._ptrs = {
        t: (ctypes.addressof(o), ctypes.addressof(z)) for t, (o, z) in lib._scalars.items()
    }
    return lib


def _gemm(lib, dtype, stream, batch=1, tf32=False):
    lib.gemm(dtype, "N", "T", 2, 3, 4, 1000, 2, 6, 2000, 3, 12, 3000, 2, 6, batch, stream, tf32)


def test_the_stream_is_set_only_when_it_changes():
    lib = _blas()
    s1, s2 = SimpleNamespace(handle=7, submitted=0), SimpleNamespace(handle=9, submitted=0)
    for s in (s1, s1, s2, s2, s1):
        _gemm(lib, "float32", s)
    kinds = [c if c[0] == "stream" else c[0] for c in lib.api.calls]
    assert kinds == [("stream", 42, 7), "Sgemm", "Sgemm", ("stream", 42, 9), "Sgemm", "Sgemm",
                     ("stream", 42, 7), "Sgemm"]  # fmt: skip
    assert (s1.submitted, s2.submitted) == (3, 2)


@pytest.mark.parametrize("dtype", list(blas.TYPES))
def test_each_product_passes_its_types_and_scalars(dtype):
    lib = _blas()
    s = SimpleNamespace(handle=7, submitted=0)
    dt, compute, scalar = blas.TYPES[dtype]
    one, zero = lib._ptrs[scalar]
    typed = blas.TYPED.get(dtype)
    for tf32 in (False, True, False):
        _gemm(lib, dtype, s, tf32=tf32)
        call = lib.api.calls[-1]
        fast = tf32 and dtype == "float32"
        if typed and not fast:
            assert call == (typed + "gemm", 42, 0, 1, 2, 3, 4, one, 1000, 2, 2000, 3, zero, 3000,
                            2)  # fmt: skip
        else:
            ct = blas.COMPUTE_32F_FAST_TF32 if fast else compute
            assert call == ("gemm", 42, 0, 1, 2, 3, 4, one, 1000, dt, 2, 2000, dt, 3, zero,
                            3000, dt, 2, ct, -1)  # fmt: skip
    _gemm(lib, dtype, s, batch=5)
    if typed:
        assert lib.api.calls[-1] == (typed + "batched", 42, 0, 1, 2, 3, 4, one, 1000, 2, 6,
                                     2000, 3, 12, zero, 3000, 2, 6, 5)  # fmt: skip
    else:
        assert lib.api.calls[-1] == ("batched", 42, 0, 1, 2, 3, 4, one, 1000, dt, 2, 6, 2000,
                                     dt, 3, 12, zero, 3000, dt, 2, 6, 5, compute, -1)  # fmt: skip
    _gemm(lib, dtype, s, batch=5, tf32=True)  # TF32 batches: the Ex call whatever the dtype
    tf32_applies = dtype == "float32"
    assert lib.api.calls[-1][0] == ("batched" if tf32_applies or not typed else typed + "batched")


def test_a_failed_product_raises_and_counts_nothing():
    lib = _blas()
    lib.api.status = 7
    s = SimpleNamespace(handle=7, submitted=0)
    with pytest.raises(DriverError, match="cublasDgemm.*CUBLAS_STATUS_INVALID_VALUE"):
        _gemm(lib, "float64", s)
    with pytest.raises(DriverError, match="cublasDgemmStridedBatched"):
        _gemm(lib, "float64", s, batch=2)
    with pytest.raises(DriverError, match="cublasGemmStridedBatchedEx"):
        _gemm(lib, "float16", s, batch=2)
    with pytest.raises(DriverError, match="cublasGemmEx"):
        _gemm(lib, "float32", s, tf32=True)
    assert s.submitted == 0
