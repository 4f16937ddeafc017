"""CUDA-specific backend tests (the cross-backend suite is test_suite.py).  Need a CUDA GPU."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ember.errors import DriverError, LaunchError, OutOfMemoryError
from ember.runtime import backend as registry
from ember.runtime.backend import PTR

pytestmark = pytest.mark.gpu

SOURCE = r"""
extern "C" __global__ void axpy(float a, const float* x, float* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void fill(int* out, int value, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
}
"""
AXPY = ("float32", PTR, PTR, "int64")


@pytest.fixture(scope="module")
def cuda():
    try:
        return registry.get("cuda")
    except Exception as exc:
        pytest.skip(f"CUDA backend unavailable: {exc}")


@pytest.fixture(scope="module")
def module(cuda):
    return cuda.load_module(cuda.compile(SOURCE, "test_cuda"))


def to_device(cuda, host):
    buf = cuda.alloc(host.nbytes)
    cuda.copy_from_host(buf, 0, host)
    return buf


def to_host(cuda, buf, like):
    out = np.empty_like(like)
    cuda.copy_to_host(out, buf, 0)
    return out


def test_device_properties_are_sane(cuda):
    info = cuda.device
    assert info.backend == "cuda" and info.index == 0 and info.name
    assert info.compute_capability[0] >= 7 and info.arch.startswith("sm_")
    assert info.multiprocessors > 0 and info.warp_size == 32
    assert info.max_threads_per_block >= 1024
    assert info.shared_memory_per_block >= 48 * 1024
    assert info.total_memory > 2**30
    for key in ("clock_rate_khz", "l2_cache_bytes", "memory_bus_width_bits", "driver_version"):
        assert key in info.extra
    assert cuda.devices()[0].name == info.name
    versions = cuda.library_versions()
    assert set(versions) == {"cuda-bindings", "cuda-driver", "nvrtc"}
    assert versions["cuda-driver"][0].isdigit()


def test_alloc_copy_round_trip(cuda):
    host = np.random.default_rng(0).standard_normal(100_003).astype(np.float32)
    buf = to_device(cuda, host)
    np.testing.assert_array_equal(to_host(cuda, buf, host), host)
    other = cuda.alloc(host.nbytes)
    cuda.copy_device(other, 0, buf, 0, host.nbytes)
    cuda.fill_zero(buf, 4, 8)
    back = to_host(cuda, other, host)
    np.testing.assert_array_equal(back, host)
    part = to_host(cuda, buf, host)
    assert part[1] == 0 and part[2] == 0 and part[3] == host[3]
    assert cuda.native_pointer(buf, 16) == buf.handle + 16
    buf.close()
    buf.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        cuda.copy_to_host(np.empty(4, np.float32), buf, 0)
    with pytest.raises(ValueError, match="outside"):
        cuda.copy_from_host(other, host.nbytes - 4, np.zeros(2, np.float32))


def test_a_new_backend_allocates_before_its_pool_has_started(cuda, monkeypatch):
    """Until its pool thread's first cuMemAllocAsync returns, a backend allocates with
    cuMemAlloc; those buffers work like any other, are freed with cuMemFree, and every
    allocation after the start is stream-ordered."""
    from ember.backends.cuda import backend as cuda_backend

    if not cuda.device.extra.get("memory_pools_supported"):
        pytest.skip("this device has no stream-ordered memory pools")
    gate, real = threading.Event(), cuda_backend.start_pool

    def held_start(context, stream):
        gate.wait(30)
        real(context, stream)

    monkeypatch.setattr(cuda_backend, "start_pool", held_start)
    b = cuda_backend.CudaBackend(0)
    try:
        host = np.arange(5000, dtype=np.float32)
        early = b.alloc(host.nbytes)
        assert early._stream is None  # cuMemAlloc
        b.copy_from_host(early, 0, host)
        fn = b.load_module(b.compile(SOURCE, "test_cuda_early")).function("axpy", AXPY)
        fn.launch(((5000 + 255) // 256, 1, 1), (256, 1, 1), [np.float32(2), early, early, 5000])
        gate.set()
        b._pool_start.join()
        late = b.alloc(host.nbytes)
        assert late._stream is not None  # cuMemAllocAsync from here on
        b.copy_device(late, 0, early, 0, host.nbytes)
        early.close()  # cuMemFree: after the queued work that uses it
        out = np.empty_like(host)
        b.copy_to_host(out, late, 0)
        np.testing.assert_array_equal(out, 3 * host)
        late.close()
    finally:
        gate.set()
        b.close()
    quick = cuda_backend.CudaBackend(0)
    quick.close()  # right away: waits for its pool thread, which uses the context
    assert not quick._pool_start.is_alive()


def test_small_reads_through_the_bounce_buffer(cuda, module):
    """Waited-for reads up to BOUNCE bytes go through a per-thread pinned buffer: every
    size and offset round-trips, after the queued work that wrote it, from many threads."""
    from ember.backends.cuda.backend import BOUNCE

    host = np.random.default_rng(1).integers(0, 255, 3 * BOUNCE, dtype=np.uint8)
    buf = to_device(cuda, host)
    for n, off in ((1, 0), (3, 5), (BOUNCE, 7), (BOUNCE + 1, 0), (2 * BOUNCE, BOUNCE)):
        out = np.empty(n, np.uint8)
        cuda.copy_to_host(out, buf, off)
        np.testing.assert_array_equal(out, host[off : off + n])
    n = 4096
    y = cuda.alloc(n * 4)
    spin = module.function("spin", ("int64",))
    fill = module.function("fill", (PTR, "int32", "int64"))
    errors = []

    def worker():
        try:
            for _ in range(20):
                out = np.zeros(2, np.int32)
                cuda.copy_to_host(out, y, 4 * (n - 2))
                assert (out == 5).all(), out
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    spin.launch((1, 1, 1), (1, 1, 1), [10_000_000])
    fill.launch((n // 256, 1, 1), (256, 1, 1), [y, 5, n])
    last = np.empty(1, np.int32)
    cuda.copy_to_host(last, y, 4 * (n - 1))  # waits for the spin and the fill
    assert last[0] == 5
    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_zero_byte_alloc(cuda):
    with cuda.alloc(0) as buf:
        assert buf.nbytes == 0 and buf.handle != 0


def test_async_copies_with_pinned_buffers(cuda):
    n = 1 << 20
    pinned = cuda.alloc_host(n * 4).view(np.float32)
    pinned[:] = np.arange(n, dtype=np.float32)
    stream = cuda.create_stream()
    buf = cuda.alloc(n * 4, stream)
    cuda.copy_from_host(buf, 0, pinned, stream)
    back = cuda.alloc_host(n * 4).view(np.float32)
    back[:] = -1
    cuda.copy_to_host(back, buf, 0, stream)
    stream.synchronize()
    np.testing.assert_array_equal(back, pinned)
    with cuda.alloc_pinned(64) as mem:
        assert mem.array.nbytes == 64
    stream.close()


def test_streams_and_events(cuda, module):
    spin = module.function("spin", ("int64",))
    stream = cuda.create_stream()
    start, end = cuda.create_event(timing=True), cuda.create_event(timing=True)
    start.record(stream)
    spin.launch((1, 1, 1), (1, 1, 1), [200_000_000], stream=stream)  # ~0.1 s
    end.record(stream)
    assert not stream.query() and not end.query()
    end.synchronize()
    assert end.query() and stream.query()
    assert start.elapsed_ms(end) > 10
    stream.synchronize()
    untimed = cuda.create_event()
    untimed.record(stream)
    untimed.synchronize()
    with pytest.raises(ValueError, match="timing=True"):
        untimed.elapsed_ms(end)
    cuda.synchronize()
    stream.close()


def test_launch_axpy_matches_numpy(cuda, module):
    n = 1_000_003
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    dx, dy = to_device(cuda, x), to_device(cuda, y)
    fn = module.function("axpy", AXPY)
    args = [np.float32(2.5), cuda.native_pointer(dx), cuda.native_pointer(dy), n]
    fn.launch(((n + 255) // 256, 1, 1), (256, 1, 1), args)
    expected = 2.5 * x.astype(np.float64) + y  # the GPU fuses a*x+y (one rounding): compare
    np.testing.assert_allclose(to_host(cuda, dy, y), expected, rtol=1e-6, atol=1e-6)
    fn.launch((n + 255) // 256, 256, [1.0, dx, dy.handle, n])  # ints and a buffer: slow path
    expected = 1.0 * x.astype(np.float64) + expected
    np.testing.assert_allclose(to_host(cuda, dy, y), expected, rtol=1e-5, atol=1e-5)


def test_launches_from_threads_keep_their_arguments(cuda, module):
    n, threads = 4096, 8
    fill = module.function("fill", (PTR, "int32", "int64"))
    bufs = [cuda.alloc(n * 4) for _ in range(threads)]

    def work(i):
        stream = cuda.create_stream()
        for _ in range(200):
            fill.launch((n // 256, 1, 1), (256, 1, 1), [bufs[i].handle, i, n], stream=stream)
        stream.synchronize()
        stream.close()

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    for i, buf in enumerate(bufs):
        assert (to_host(cuda, buf, np.empty(n, np.int32)) == i).all()


def test_launch_from_a_fresh_thread_sets_the_context(cuda, module):
    fill = module.function("fill", (PTR, "int32", "int64"))
    buf = cuda.alloc(1024 * 4)
    failures = []

    def work():
        try:
            fill.launch((4, 1, 1), (256, 1, 1), [buf.handle, 7, 1024])
        except Exception as exc:  # reported below, in the test's thread
            failures.append(exc)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert not failures
    assert (to_host(cuda, buf, np.empty(1024, np.int32)) == 7).all()


def test_bad_arguments_are_launch_errors(cuda, module):
    fn = module.function("axpy", AXPY)
    with pytest.raises(LaunchError, match=r"takes 4 argument"):
        fn.launch((1, 1, 1), (32, 1, 1), [1.0, 0, 0])
    with pytest.raises(LaunchError, match=r"argument 3 of kernel 'axpy' must be a int64"):
        fn.launch((1, 1, 1), (32, 1, 1), [1.0, 0, 0, "ten"])
    with pytest.raises(LaunchError, match="no kernel named 'axpz'.*axpy"):
        module.function("axpz", AXPY)


def test_driver_error_names_the_result(cuda, module):
    fn = module.function("fill", (PTR, "int32", "int64"))
    too_much_shared = 16 * 2**20  # more than any device's shared memory per block
    # above 48 KiB the launch first opts in to the size, which the driver refuses, named
    named = "cu(LaunchKernel|FuncSetAttribute) failed with CUDA_ERROR_INVALID_VALUE"
    for _ in range(2):  # a refused opt-in is not remembered as granted
        with pytest.raises(DriverError, match=named):
            fn.launch((1, 1, 1), (32, 1, 1), [0, 0, 0], shared_mem=too_much_shared)
    too_many = cuda.device.max_threads_per_block * 2  # caught before the driver, named
    with pytest.raises(LaunchError, match=f"block dimension x is {too_many}, the device allows"):
        fn.launch((1, 1, 1), (too_many, 1, 1), [0, 0, 0])
    cuda.synchronize()  # the device is still usable


def test_out_of_memory_is_readable(cuda):
    huge = cuda.device.total_memory * 4
    with pytest.raises(OutOfMemoryError) as info:
        cuda.alloc(huge)
    message = str(info.value)
    assert "CUDA_ERROR_OUT_OF_MEMORY" in message and f"allocating {huge} bytes" in message
    assert "What to do" in message
    with cuda.alloc(1 << 20):  # still works afterwards
        pass


RECORD = r"""
extern "C" __global__ void record(signed char a, short b, int c, long long d,
                                  unsigned char e, unsigned short f, unsigned int g,
                                  unsigned long long h, float i, double j, double* out) {
    out[0] = a; out[1] = b; out[2] = c; out[3] = (double)d; out[4] = e; out[5] = f;
    out[6] = g; out[7] = (double)h; out[8] = i; out[9] = j;
}
"""
RECORD_PARAMS = (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", PTR,
)  # fmt: skip


def test_direct_and_bindings_launches_pass_the_same_values(cuda):
    from ember.backends.cuda.launch import CudaFunction

    mod = cuda.load_module(cuda.compile(RECORD, "record"))
    direct = mod.function("record", RECORD_PARAMS)
    assert direct._ex is not None  # a real driver: the ctypes entry point is there
    slow = CudaFunction(direct.handle, "record", RECORD_PARAMS, mod, direct=False)
    values = [-5, -300, -70000, -(2**40), 200, 60000, 4_000_000_000, 2**53, 1.5, -2.25]
    for fn in (direct, slow):
        out = cuda.alloc(10 * 8)
        fn.launch((1, 1, 1), (1, 1, 1), [*values, out.handle])
        np.testing.assert_array_equal(to_host(cuda, out, np.empty(10)), values)
        numpy_values = [np.int8(-5), np.int16(-300), np.int32(-70000), np.int64(-(2**40))]
        fn.launch(1, [1], [*numpy_values, *values[4:], out.handle])  # int/list dims: slow path
        np.testing.assert_array_equal(to_host(cuda, out, np.empty(10)), values)


def test_direct_launch_keeps_the_checks(cuda, module):
    fill = module.function("fill", (PTR, "int32", "int64"))
    buf = cuda.alloc(1024 * 4)
    with pytest.raises(LaunchError, match="takes 3 argument"):
        fill.launch((1, 1, 1), (32, 1, 1), [buf.handle, 1])
    with pytest.raises(LaunchError, match="argument 1 of kernel 'fill' must be a int32"):
        fill.launch((1, 1, 1), (32, 1, 1), [buf.handle, 2**40, 1024])
    with pytest.raises(LaunchError, match="grid must be"):
        fill.launch((0, 1, 1), (32, 1, 1), [buf.handle, 1, 1024])
    with pytest.raises(LaunchError, match="grid dimension y is 70000"):
        fill.launch((1, 70000, 1), (32, 1, 1), [buf.handle, 1, 1024])
    with pytest.raises(LaunchError, match="shared_mem must be"):
        fill.launch((1, 1, 1), (32, 1, 1), [buf.handle, 1, 1024], shared_mem=-1)
    stream = cuda.create_stream()
    stream.close()
    with pytest.raises(LaunchError, match="closed stream"):
        fill.launch((1, 1, 1), (32, 1, 1), [buf.handle, 1, 1024], stream=stream)
    other = cuda.create_stream()  # a launch on another stream after those: counted there
    fill.launch((4, 1, 1), (256, 1, 1), [buf.handle, 3, 1024], stream=other)
    assert other.submitted == 1
    other.synchronize()
    assert (to_host(cuda, buf, np.empty(1024, np.int32)) == 3).all()
