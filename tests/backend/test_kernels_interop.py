"""Kernel arguments from other libraries (CUDA only: ``__cuda_array_interface__`` and DLPack,
passed without a copy) and the argument errors every backend gives."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.runtime.backend import DL_CUDA


@ember.kernel
def double_into(x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = 2 * x[i]


class CudaArrayView:
    """A minimal foreign array: an Ember CUDA array seen through the CUDA array interface."""

    def __init__(self, arr: ember.ndarray, step: int = 1):
        self.base = arr
        n = -(-arr.shape[0] // step)
        address = arr.buffer.handle if isinstance(arr.buffer.handle, int) else 4096
        self.__cuda_array_interface__ = {
            "shape": (n,), "typestr": arr.dtype.numpy.str, "version": 3,
            "data": (address + arr.offset, False),
            "strides": None if step == 1 else (step * arr.dtype.itemsize,),
        }  # fmt: skip


def test_cuda_array_interface_without_a_copy(backend):
    x = ember.asarray(np.arange(10, dtype=np.float32))
    y = ember.zeros(10, ember.float32)
    if DL_CUDA not in backend.foreign_device_types:
        with pytest.raises(ember.ArgumentError, match="device type 2 cannot be passed on the"):
            double_into.launch(10)(CudaArrayView(x), y)
        return
    double_into.launch(5)(CudaArrayView(x, step=2), CudaArrayView(y))  # strided input view
    np.testing.assert_array_equal(y.to_numpy()[:5], 2 * np.arange(10, dtype=np.float32)[::2])


def test_numpy_array_at_launch_names_asarray(backend):
    y = ember.zeros(4, ember.float32)
    with pytest.raises(ember.ArgumentError, match=r"(?s)argument 'x' \(#0\).*ember\.asarray"):
        double_into.launch(4)(np.ones(4, np.float32), y)


def test_wrong_argument_count_at_launch(backend):
    with pytest.raises(ember.ArgumentError, match=r"takes 2 argument\(s\) \(x, y\), got 1"):
        double_into[1, 4](ember.zeros(4, ember.float32))


@pytest.mark.parametrize("library", ["torch", "cupy"])
def test_tensors_of_other_libraries(backend, library):
    if DL_CUDA not in backend.foreign_device_types:
        pytest.skip("foreign CUDA arrays need a backend that takes them (CUDA)")
    lib = pytest.importorskip(library)
    if library == "torch":
        if not lib.cuda.is_available():
            pytest.skip("torch without CUDA")
        x = lib.arange(12, dtype=lib.float32, device="cuda")
        y = lib.zeros(6, dtype=lib.float32, device="cuda")
        lib.cuda.synchronize()
    else:
        x, y = lib.arange(12, dtype=lib.float32), lib.zeros(6, dtype=lib.float32)
        lib.cuda.Device().synchronize()
    double_into.launch(6)(x[::2], y)  # a strided view, by its device address
    backend.synchronize()
    np.testing.assert_array_equal(_host(y), 2 * np.arange(12, dtype=np.float32)[::2])


class DLPackOnly:
    """An object that only speaks DLPack (like a JAX array)."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, stream=None):
        return self.tensor.__dlpack__()

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


def test_dlpack_objects(backend):
    if DL_CUDA not in backend.foreign_device_types:
        pytest.skip("foreign CUDA arrays need a backend that takes them (CUDA)")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    x = torch.arange(8, dtype=torch.float64, device="cuda")
    y = torch.zeros(8, dtype=torch.float64, device="cuda")
    torch.cuda.synchronize()
    double_into.launch(8)(DLPackOnly(x), DLPackOnly(y))
    backend.synchronize()
    np.testing.assert_array_equal(y.cpu().numpy(), 2 * np.arange(8.0))


def _host(a):
    return a.cpu().numpy() if hasattr(a, "cpu") else a.get()
