"""The cross-backend suite: every test runs on each available backend, checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.runtime.backend import PTR

DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
]  # fmt: skip

AXPY = {
    "cuda": r"""
extern "C" __global__ void axpy(float a, const float* x, float* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}""",
    "opencl": r"""
__kernel void axpy(float a, __global const float* x, __global float* y, long n) {
    long i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}""",
    "cpu": r"""
EMBER_KERNEL void axpy(float a, const float* x, float* y, int64_t n) {
    int64_t i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}""",
}
BROKEN = {
    "cuda": 'extern "C" __global__ void broken(float* y) {\n  y[0] = undefined_name;\n}',
    "opencl": "__kernel void broken(__global float* y) {\n  y[0] = undefined_name;\n}",
    "cpu": "EMBER_KERNEL void broken(float* y) {\n  y[0] = undefined_name;\n}",
}


def sample(dtype: str, shape=(7, 5)) -> np.ndarray:
    rng = np.random.default_rng(42)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if info is not None:
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_every_dtype(backend, dtype):
    host = sample(dtype)
    dev = ember.asarray(host)
    assert dev.shape == host.shape and dev.dtype is ember.dtype(dtype)
    assert dev.backend is backend
    back = dev.to_numpy()
    assert back.dtype == host.dtype
    np.testing.assert_array_equal(back, host)


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a[::2],
        lambda a: a.T,
        lambda a: a[:, ::-1],
        lambda a: a[1:, 2:4],
        lambda a: np.broadcast_to(a[:1], (4, 5)),
    ],
    ids=["step", "transpose", "reversed", "slice", "broadcast"],
)
@pytest.mark.parametrize("dtype", ["int8", "float16", "float64"])
def test_non_contiguous_numpy_inputs(backend, view, dtype):
    host = view(sample(dtype))
    assert not host.flags.c_contiguous
    dev = ember.asarray(host)
    np.testing.assert_array_equal(dev.to_numpy(), host)


def test_zero_size_and_0d(backend):
    empty = ember.asarray(np.empty((0, 3), np.float32))
    assert empty.shape == (0, 3) and empty.size == 0
    assert empty.to_numpy().shape == (0, 3)
    scalar = ember.asarray(np.float32(2.5))
    assert scalar.shape == () and scalar.to_numpy() == np.float32(2.5)


def test_zeros_and_empty(backend):
    z = ember.zeros((3, 4), ember.int32)
    np.testing.assert_array_equal(z.to_numpy(), np.zeros((3, 4), np.int32))
    e = ember.empty(10)
    assert e.dtype is ember.float64 and e.shape == (10,) and e.nbytes == 80


def test_device_copy_and_asarray_of_device_array(backend):
    host = sample("float32")
    dev = ember.asarray(host)
    assert ember.asarray(dev) is dev
    clone = ember.asarray(dev, copy=True)
    assert clone.buffer is not dev.buffer
    np.testing.assert_array_equal(clone.to_numpy(), host)


def test_async_copies_on_a_stream(backend):
    stream = ember.Stream()
    host = np.arange(1 << 16, dtype=np.float32)
    dev = ember.asarray(host, stream=stream)
    out = np.empty_like(host)
    backend.copy_to_host(out, dev.buffer, 0, stream)
    stream.synchronize()
    assert stream.query()
    np.testing.assert_array_equal(out, host)


def test_events(backend):
    stream = ember.Stream()
    start, end = ember.Event(timing=True), ember.Event(timing=True)
    start.record(stream)
    ember.asarray(np.ones(1 << 16, np.float32), stream=stream)
    end.record(stream)
    end.synchronize()
    assert end.query()
    assert start.elapsed_ms(end) >= 0.0


def test_unsupported_dtype_is_rejected(backend):
    with pytest.raises(TypeError, match="does not support dtype 'str32'; supported dtypes: bool"):
        ember.asarray(np.array(["a", "b"]))
    with pytest.raises(TypeError, match="does not support dtype 'datetime64"):
        ember.asarray(np.ones(3, "datetime64[s]"))


def test_source_kernel_axpy_matches_numpy(backend):
    n = 1000
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    y = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    k = ember.RawKernel(AXPY[backend.dialect], "axpy")
    assert k.params == (ember.float32, PTR, PTR, ember.int64)
    dx, dy = ember.asarray(x), ember.asarray(y)
    k[(n + 127) // 128, 128](2.0, dx, dy, n)
    np.testing.assert_allclose(dy.to_numpy(), 2.0 * x + y, rtol=1e-6)


def test_compile_error_carries_the_compiler_log(backend):
    k = ember.RawKernel(BROKEN[backend.dialect], "broken")
    with pytest.raises(ember.CompileError, match="undefined_name") as info:
        k[1, 1](ember.zeros(1, ember.float32))
    assert "undefined_name" in info.value.log
    assert "2 |   y[0] = undefined_name;" in str(info.value)


def test_launch_with_bad_argument_count(backend):
    k = ember.RawKernel(AXPY[backend.dialect], "axpy")
    x = ember.zeros(4, ember.float32)
    with pytest.raises(ember.LaunchError, match=r"takes 4 argument\(s\).*got 3"):
        k[1, 4](2.0, x, x)


@pytest.mark.parametrize(
    "args, message",
    [
        (lambda x: ("two", x, x, 4), "argument 0 must be a float32 scalar, got str"),
        (lambda x: (2.0, x, x, 4.5), "argument 3 must be a int64 scalar, got float"),
        (lambda x: (2.0, 7, x, 4), "argument 1 must be an ember array"),
        (lambda x: (2.0, np.ones(4, np.float32), x, 4), r"ember\.asarray\(x\)"),
    ],
    ids=["string-for-float", "float-for-int", "int-for-pointer", "numpy-for-pointer"],
)
def test_launch_with_bad_argument_types(backend, args, message):
    k = ember.RawKernel(AXPY[backend.dialect], "axpy")
    x = ember.zeros(4, ember.float32)
    with pytest.raises(ember.LaunchError, match=message):
        k[1, 4](*args(x))


def test_bad_launch_configuration(backend):
    k = ember.RawKernel(AXPY[backend.dialect], "axpy")
    x = ember.zeros(4, ember.float32)
    with pytest.raises(ember.LaunchError, match="grid must be a positive int"):
        k[0, 4](2.0, x, x, 4)


def test_device_info(backend):
    info = backend.device
    assert info.name and info.total_memory > 0 and info.multiprocessors > 0
    assert info.max_threads_per_block >= 1 and info.shared_memory_per_block > 0
    assert info in backend.devices()
    assert backend.library_versions()
