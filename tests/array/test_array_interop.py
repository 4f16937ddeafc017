"""Interop: DLPack (both ways), the CUDA Array Interface, the Array API namespace.

The CPU-side tests run everywhere (host copies through DLPack, capsule layout and
ownership); the zero-copy tests against PyTorch and CuPy need the GPU machine."""

from __future__ import annotations

import ctypes
import gc
import sys

import numpy as np
import pytest
from array_common import check, sample

import ember
from ember.array import interop
from ember.runtime import backend as registry


# --------------------------------------------------------------------- everywhere
def test_numpy_takes_a_host_copy_through_dlpack(backend):
    host = sample("float32", (3, 4))
    x = ember.asarray(host)
    np.testing.assert_array_equal(np.from_dlpack(x, device="cpu"), host)
    np.testing.assert_array_equal(np.from_dlpack(x.T, device="cpu"), host.T)
    if not backend.shares_memory:  # OpenCL: buffers have no address to share
        assert x.__dlpack_device__() == (backend.dlpack_device_type, backend.device.index)
        with pytest.raises(BufferError, match=backend.label):
            x.__dlpack__()
    if backend.dlpack_device_type != interop.CUDA:
        assert not hasattr(x, "__cuda_array_interface__")


class _Exporter:
    """Hands NumPy a capsule made by Ember's exporter (unversioned or versioned)."""

    def __init__(self, capsule, device=(interop.CPU, 0)):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


@pytest.mark.parametrize("versioned", [False, True])
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "float16", "float64"])
def test_capsules_describe_the_memory_and_keep_it_alive(versioned, dtype):
    host = sample(dtype, (4, 6))[::-1, ::2]  # negative and stepped strides
    strides = [s // host.itemsize for s in host.strides]
    capsule = interop.make_capsule(
        host.ctypes.data, host.shape, strides, ember.dtype(dtype), (interop.CPU, 0),
        host, versioned,
    )  # fmt: skip
    assert len(interop._exports) >= 1
    back = np.from_dlpack(_Exporter(capsule))
    np.testing.assert_array_equal(back, host)
    del back, capsule
    gc.collect()


def test_an_unconsumed_capsule_releases_its_array():
    before = len(interop._exports)
    host = np.arange(5.0)
    capsule = interop.make_capsule(
        host.ctypes.data, host.shape, None, ember.float64, (interop.CPU, 0), host, False
    )
    assert len(interop._exports) == before + 1
    del capsule
    gc.collect()
    assert len(interop._exports) == before


@pytest.mark.parametrize("versioned", [False, True])
def test_a_consumer_that_refuses_the_capsule_keeps_its_error_and_nothing_stays_exported(
    versioned,
):
    # NumPy refuses a CUDA capsule and drops it with its error set: the capsule's release
    # must neither replace that error (NumPy used to end in SystemError) nor keep the
    # array exported
    host = np.arange(4, dtype=np.float32)
    before = len(interop._exports)

    class CudaExporter:  # the consumer holds the only reference to the capsule
        def __dlpack__(self, **kwargs):
            return interop.make_capsule(
                host.ctypes.data, host.shape, None, ember.float32, (interop.CUDA, 0), host,
                versioned,
            )  # fmt: skip

        def __dlpack_device__(self):
            return (interop.CUDA, 0)

    unraisable = []
    hook, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        with pytest.raises((BufferError, RuntimeError), match="[Dd]evice"):
            np.from_dlpack(CudaExporter())
        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert unraisable == []
    assert len(interop._exports) == before


def test_importing_a_capsule_reads_shape_strides_and_calls_the_deleter():
    host = np.arange(24, dtype=np.int32).reshape(4, 6)[:, ::-2]
    called = []
    capsule = host.__dlpack__(max_version=(1, 0))

    class FakeCuda:
        name = "fake"

    out = interop._from_capsule(FakeCuda(), capsule, host)
    assert out.shape == (4, 3) and out.dtype is ember.int32
    assert out.strides == host.strides
    assert out.buffer.handle + out.offset == host.ctypes.data
    np.testing.assert_array_equal(np.asarray(out.strides), host.strides)
    out.buffer._release = lambda r=out.buffer._release: (called.append(1), r())
    out.buffer.close()
    assert called == [1]
    with pytest.raises(BufferError, match="already consumed"):
        interop._from_capsule(FakeCuda(), capsule, host)


def test_array_namespace(backend):
    x = ember.asarray(np.arange(4, dtype=np.float32))
    xp = x.__array_namespace__()
    assert xp is ember and xp.__array_api_version__ == "2024.12"
    assert x.__array_namespace__(api_version="2023.12") is ember
    with pytest.raises(ValueError, match="2023.12"):
        x.__array_namespace__(api_version="2021.12")
    y = xp.sqrt(xp.asarray([1.0, 4.0, 9.0], dtype=xp.float32)) + xp.ones(3, dtype=xp.float32)
    check(y, np.array([2, 3, 4], np.float32))
    assert xp.result_type(xp.int8, xp.uint8) is xp.int16
    assert xp.result_type(x, 1.0) is xp.float32
    assert xp.isdtype(xp.float32, "real floating") and not xp.isdtype(xp.bool, "numeric")
    assert xp.isdtype(xp.int8, ("bool", "signed integer"))
    assert xp.finfo(xp.float32).eps == np.finfo(np.float32).eps
    assert xp.iinfo(xp.uint8).max == 255
    assert xp.can_cast(xp.int8, xp.float32) and not xp.can_cast(xp.float64, xp.int8)
    check(
        xp.where(x > 1, x, xp.zeros_like(x)),
        np.where(np.arange(4) > 1, np.arange(4.0), 0).astype(np.float32),
    )
    assert x.to_device(x.device) is x
    assert xp.bool is ember.bool_ and xp.newaxis is None


# --------------------------------------------------------------------- GPU machine
@pytest.fixture
def cuda():
    with registry.use("cuda") as be:
        yield be


@pytest.mark.gpu
def test_torch_round_trips_without_copies(cuda):
    torch = pytest.importorskip("torch")
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    x = ember.asarray(t)  # __cuda_array_interface__ / DLPack: a view
    assert x.buffer.handle + x.offset == t.data_ptr() and x.shape == (3, 4)
    check(x * 2, t.cpu().numpy() * 2)
    xt = ember.asarray(t.T)
    assert xt.strides == (4, 16)
    check(xt + 1, t.T.cpu().numpy() + 1)
    x[0] = 100.0  # Ember writes, torch sees (after ordering on the streams)
    ember.synchronize()
    assert float(t[0, 0]) == 100.0
    y = ember.arange(10, dtype="float32")
    ty = torch.from_dlpack(y)
    assert ty.data_ptr() == y.buffer.handle + y.offset and ty.device.type == "cuda"
    torch.testing.assert_close(ty.cpu(), torch.arange(10, dtype=torch.float32))
    tz = torch.as_tensor(y[::2], device="cuda")  # through __cuda_array_interface__
    assert tz.data_ptr() == y.buffer.handle + y.offset
    assert tz.stride() == (2,)
    back = ember.from_dlpack(torch.ones(5, dtype=torch.int64, device="cuda") * 3)
    check(back, np.full(5, 3, np.int64))


@pytest.mark.gpu
def test_torch_dlpack_stream_semantics(cuda):
    torch = pytest.importorskip("torch")
    x = ember.zeros(1 << 24, ember.float32)
    for _ in range(20):  # queue work on Ember's stream
        x += 1
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        t = torch.from_dlpack(x)  # s waits for Ember's stream (DLPack semantics)
        total = float(t.sum())
    assert total == 20.0 * (1 << 24)


@pytest.mark.gpu
def test_cupy_round_trips_without_copies(cuda):
    cp = pytest.importorskip("cupy")
    a = cp.arange(20, dtype=cp.int32).reshape(4, 5)[::-1, ::2]  # negative strides
    x = ember.asarray(a)
    assert x.strides == a.strides
    check(x + 1, cp.asnumpy(a) + 1)
    y = ember.linspace(0, 1, 9, dtype="float64")
    c = cp.asarray(y)  # __cuda_array_interface__
    assert c.data.ptr == y.buffer.handle + y.offset
    cp.testing.assert_allclose(c, cp.linspace(0, 1, 9))
    d = cp.from_dlpack(y[::2])
    assert d.data.ptr == y.buffer.handle + y.offset
    cp.testing.assert_allclose(d, cp.linspace(0, 1, 9)[::2])
    e = ember.from_dlpack(cp.ones((2, 3), dtype=cp.float16))
    check(e, np.ones((2, 3), np.float16))


@pytest.mark.gpu
def test_cuda_array_interface_fields(cuda):
    x = ember.zeros((3, 4), ember.float32)
    cai = x.__cuda_array_interface__
    assert cai["version"] == 3 and cai["typestr"] == "<f4" and cai["shape"] == (3, 4)
    assert cai["strides"] is None and cai["data"] == (x.buffer.handle, False)
    t = x.T.__cuda_array_interface__
    assert t["strides"] == (4, 16)
    ember.synchronize()
    assert x.__cuda_array_interface__["stream"] is None  # idle: nothing to order
    capsule = x.__dlpack__(stream=-1)
    ptr = ctypes.pythonapi.PyCapsule_IsValid
    ptr.restype, ptr.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
    assert ptr(capsule, b"dltensor")
    assert x.__dlpack_device__() == (interop.CUDA, cuda.device.index)
