"""OpenCL-specific tests: device choice, builds, buffers, queues and events, launches, errors.

The cross-backend suite (test_suite.py) covers the contract; these cover what only the
OpenCL backend has.  Tests needing a device skip when the backend is unavailable (no
pyopencl, no platform, or no device that can build kernels); the translator tests need only
pyopencl.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ember
from ember import config
from ember.errors import (
    BackendUnavailableError,
    CompileError,
    DriverError,
    LaunchError,
    OutOfMemoryError,
)
from ember.runtime import backend as registry
from ember.runtime.backend import PTR

cl = pytest.importorskip("pyopencl")
check = pytest.importorskip("ember.backends.opencl.check")

AXPY = r"""
__kernel void axpy(float a, __global const float* x, __global float* y, long n) {
    long i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}"""
BLOCK_SUMS = r"""
__kernel void block_sums(__global const float* x, __global float* out, __local float* tmp) {
    int l = get_local_id(0);
    tmp[l] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0) {
        float s = 0.0f;
        for (int i = 0; i < get_local_size(0); ++i) s += tmp[i];
        out[get_group_id(0)] = s;
    }
}"""
INDEX_2D = r"""
__kernel void index2d(__global int* out, int width) {
    int x = get_global_id(0), y = get_global_id(1);
    out[y * width + x] = 1000 * y + x;
}"""


@pytest.fixture(scope="module")
def be():
    """The OpenCL backend, or a clean skip saying why there is none."""
    try:
        return registry.get("opencl")
    except BackendUnavailableError as exc:
        pytest.skip(f"OpenCL backend unavailable: {str(exc).splitlines()[0]}")


@pytest.fixture(scope="module")
def axpy(be):
    return be.load_module(be.compile(AXPY, "axpy")).function(
        "axpy", (ember.float32, PTR, PTR, ember.int64)
    )


def upload(be, host: np.ndarray):
    buf = be.alloc(host.nbytes)
    be.copy_from_host(buf, 0, host)
    return buf


def download(be, buf, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    be.copy_to_host(out, buf, 0)
    return out


# ----------------------------------------------------------------- the error translator


class FakeClError(Exception):
    """Stands in for pyopencl.Error: .code and .routine, and pyopencl's text."""

    def __init__(self, code: int, routine: str):
        name = cl.status_code.to_string(code)
        super().__init__(f"{routine} failed: {name}")
        self.code, self.routine = code, routine


def test_translator_names_the_code_and_says_what_to_do():
    err = check.driver_error(FakeClError(-52, "clEnqueueNDRangeKernel"), "launching 'k'")
    assert type(err) is DriverError
    assert err.code == -52 and err.code_name == "CL_INVALID_KERNEL_ARGS"
    assert err.call == "clEnqueueNDRangeKernel"
    assert "while launching 'k'" in str(err) and "pass one value per kernel parameter" in str(err)


@pytest.mark.parametrize("code", [-4, -5, -6, -61])
def test_translator_out_of_memory_codes(code):
    err = check.driver_error(FakeClError(code, "clCreateBuffer"), "allocating 1 GiB")
    assert isinstance(err, OutOfMemoryError) and isinstance(err, DriverError)
    assert isinstance(err, MemoryError)


def test_translator_unknown_code_and_extra_text():
    err = check.status_error(-12345, "clFoo", "doing a thing", said="clFoo failed: details")
    assert err.code_name == "CL_UNKNOWN_ERROR_-12345"
    assert "report it" in str(err) and "[pyopencl: clFoo failed: details]" in str(err)


def test_build_log_is_cut_out_of_pyopencl_text():
    text = (
        "clBuildProgram failed: BUILD_PROGRAM_FAILURE - clBuildProgram failed\n\n"
        "Build on <pyopencl.Device 'cpu' at 0x1>:\n\nerror: t.cl:2:10: use of undeclared "
        "identifier 'q'\n1 error generated.\n\n(options: -I /x)"
    )
    log = check.build_log(Exception(text))
    assert log == "error: t.cl:2:10: use of undeclared identifier 'q'\n1 error generated."
    assert check.build_log(Exception("no log here")) == "no log here"


def test_real_driver_error_is_translated(be):
    with pytest.raises(DriverError, match="CL_INVALID_WORK_GROUP_SIZE") as info:
        too_big = be.device.max_threads_per_block * 2
        kernel = be.load_module(be.compile(AXPY, "axpy")).function(
            "axpy", (ember.float32, PTR, PTR, ember.int64)
        )
        buf = be.alloc(4)
        kernel.launch((1, 1, 1), (too_big, 1, 1), (1.0, buf.handle, buf.handle, 0))
    assert info.value.code == -54 and "smaller block" in str(info.value)


# ----------------------------------------------------------------- device choice


def test_device_info(be):
    info = be.device
    extra = info.extra
    assert info.backend == "opencl" and info.warp_size >= 1
    assert extra["device_type"] in ("GPU", "CPU", "ACCELERATOR", "OTHER")
    assert isinstance(extra["fp64"], bool) and isinstance(extra["extensions"], list)
    assert extra["can_compile"] and extra["id"].count(":") == 1
    versions = be.library_versions()
    assert versions["pyopencl"] == cl.VERSION_TEXT and versions["opencl-c"].startswith("OpenCL C")
    assert info in be.devices()


def test_choose_device_by_index_and_by_name(be):
    cls = type(be)
    ident = be.device.extra["id"]
    by_id = cls(device=ident)
    assert by_id.device == be.device
    assert cls(device=str(be.device.index)).device == be.device
    fragment = be.device.name[-6:].upper()  # case-insensitive substring
    assert cls(device=fragment).device.name.upper().find(fragment) >= 0
    with config.override(opencl_device=ident):
        assert cls().device == be.device


def test_bad_device_choice_lists_the_devices(be):
    with pytest.raises(BackendUnavailableError, match="matches no OpenCL device") as info:
        type(be)(device="no-such-device-anywhere")
    assert be.device.name in str(info.value)
    with pytest.raises(BackendUnavailableError, match="matches no OpenCL device"):
        type(be)(device="99:0")


# ----------------------------------------------------------------- builds


def test_build_error_has_log_and_numbered_source(be):
    source = "__kernel void broken(__global float* y) {\n  y[0] = undefined_name;\n}"
    with pytest.raises(CompileError, match="undefined_name") as info:
        be.compile(source, "broken")
    err = info.value
    assert "undefined_name" in err.log and err.source == source
    assert "2 |   y[0] = undefined_name;" in str(err)
    assert "OpenCL C build of kernel 'broken' failed" in str(err)


def test_build_options_reach_the_compiler(be):
    source = "__kernel void k(__global int* y) { y[0] = VALUE; }"
    module = be.load_module(be.compile(source, "k", ["-D", "VALUE=42"]))
    out = be.alloc(4)
    module.function("k", (PTR,)).launch((1, 1, 1), (1, 1, 1), (out.handle,))
    assert download(be, out, np.zeros(1, np.int32))[0] == 42


def test_source_binary_is_rebuilt_on_load(be):
    from ember.backends.opencl.module import pack_source

    binary = pack_source("__kernel void k(__global int* y) { y[0] = V; }", ["-DV=7"])
    out = be.alloc(4)
    be.load_module(binary).function("k", (PTR,)).launch((1, 1, 1), (1, 1, 1), (out.handle,))
    assert download(be, out, np.zeros(1, np.int32))[0] == 7


def test_unknown_kernel_and_wrong_param_count(be):
    module = be.load_module(be.compile(AXPY, "axpy"))
    with pytest.raises(LaunchError, match="no kernel named 'nope'; it has: axpy"):
        module.function("nope", ())
    with pytest.raises(LaunchError, match="has 4 parameter"):
        module.function("axpy", (PTR,))


def test_garbage_binary_is_a_driver_error(be):
    with pytest.raises(DriverError, match="CL_INVALID_BINARY|CL_BUILD_PROGRAM_FAILURE"):
        be.load_module(b"\x7fnot a binary at all" * 8)


# ----------------------------------------------------------------- memory


def test_buffer_round_trips_with_offsets(be):
    host = np.arange(256, dtype=np.uint8)
    buf = be.alloc(300)
    be.fill_zero(buf, 0, 300)
    be.copy_from_host(buf, 40, host)
    out = np.empty(300, np.uint8)
    be.copy_to_host(out, buf, 0)
    np.testing.assert_array_equal(out[40:296], host)
    assert not out[:40].any() and not out[296:].any()
    other = be.alloc(100)
    be.copy_device(other, 0, buf, 50, 100)
    be.fill_zero(other, 3, 5)  # unaligned: the 1-byte pattern
    part = np.empty(100, np.uint8)
    be.copy_to_host(part, other, 0)
    expected = host[10:110].copy()
    expected[3:8] = 0
    np.testing.assert_array_equal(part, expected)


def test_zero_size_buffers_and_copies(be):
    buf = be.alloc(0)
    assert buf.nbytes == 0
    be.copy_from_host(buf, 0, np.empty(0, np.float32))
    be.copy_to_host(np.empty(0, np.float32), buf, 0)
    be.fill_zero(buf, 0, 0)
    buf.close()
    buf.close()  # idempotent


def test_out_of_range_and_closed_buffers(be):
    buf = be.alloc(16)
    with pytest.raises(ValueError, match=r"range \[12, 20\) is outside the 16-byte buffer"):
        be.copy_from_host(buf, 12, np.zeros(8, np.uint8))
    with pytest.raises(ValueError, match="C-contiguous"):
        be.copy_from_host(buf, 0, np.zeros((4, 4), np.uint8)[:, ::2])
    with pytest.raises(OutOfMemoryError, match="CL_DEVICE_MAX_MEM_ALLOC_SIZE"):
        be.alloc(be.device.extra["max_mem_alloc_size"] + 1)
    buf.close()
    with pytest.raises(ValueError, match="closed"):
        be.native_pointer(buf)


def test_closing_a_buffer_leaves_other_references_valid(be):
    handle = be.alloc(16).handle  # the OpenCLBuffer is gone at once: close() ran
    host = np.arange(4, dtype=np.int32)
    queue = be.default_stream.handle
    cl.enqueue_copy(queue, handle, host, is_blocking=True)
    out = np.empty_like(host)
    cl.enqueue_copy(queue, out, handle, is_blocking=True)
    np.testing.assert_array_equal(out, host)


def test_native_pointer_refuses_offsets(be):
    buf = be.alloc(64)
    assert be.native_pointer(buf) is buf.handle
    with pytest.raises(LaunchError, match="cannot pass a buffer at a byte offset"):
        be.native_pointer(buf, 16)


# ----------------------------------------------------------------- streams and events


def test_async_copies_events_and_queries(be):
    stream = be.create_stream()
    assert stream.query()  # nothing submitted: no driver call
    host = np.arange(1 << 18, dtype=np.float32)
    buf = be.alloc(host.nbytes)
    start, end = be.create_event(timing=True), be.create_event(timing=True)
    start.record(stream)
    be.copy_from_host(buf, 0, host, stream)
    out = np.empty_like(host)
    be.copy_to_host(out, buf, 0, stream)
    end.record(stream)
    end.synchronize()
    assert end.query() and start.query()
    assert start.elapsed_ms(end) >= 0.0
    stream.synchronize()
    assert stream.query()
    np.testing.assert_array_equal(out, host)
    with pytest.raises(ValueError, match="timing=True"):
        be.create_event().elapsed_ms(end)
    stream.close()
    stream.close()
    with pytest.raises(ValueError, match="closed"):
        _ = stream.handle


def test_timing_event_switches_a_stream_to_profiling_in_order(be):
    from ember.backends.opencl.stream import OpenCLStream

    stream = OpenCLStream(be.context, be.cl_device, profiling=False)
    old_queue = stream.handle
    host = np.arange(1 << 16, dtype=np.float32)
    buf = be.alloc(host.nbytes)
    be.copy_from_host(buf, 0, host, stream)  # still queued on the old queue
    start, end = be.create_event(timing=True), be.create_event(timing=True)
    start.record(stream)
    assert stream.profiling and stream.handle is not old_queue
    out = np.empty_like(host)
    be.copy_to_host(out, buf, 0, stream)  # on the new queue, after the upload
    end.record(stream)
    end.synchronize()
    assert start.elapsed_ms(end) >= 0.0
    np.testing.assert_array_equal(out, host)
    untimed = be.create_event()
    untimed.record(stream)
    stream.enable_profiling()  # already on: nothing changes
    assert stream.profiling


def test_unrecorded_event_is_done(be):
    event = be.create_event()
    assert event.query()
    event.synchronize()


def test_wait_event_orders_two_streams(be):
    first, second = be.create_stream(), be.create_stream()
    host = np.arange(1 << 16, dtype=np.int32)
    buf, copy = be.alloc(host.nbytes), be.alloc(host.nbytes)
    be.copy_from_host(buf, 0, host, first)
    done = be.create_event()
    done.record(first)
    second.wait_event(done)
    be.copy_device(copy, 0, buf, 0, host.nbytes, second)
    out = np.empty_like(host)
    be.copy_to_host(out, copy, 0, second)
    second.synchronize()
    np.testing.assert_array_equal(out, host)


def test_backend_synchronize_waits_for_every_stream(be):
    streams = [be.create_stream() for _ in range(3)]
    buf = be.alloc(1 << 20)
    for s in streams:
        be.fill_zero(buf, 0, 1 << 20, s)
    be.synchronize()
    assert all(s.query() for s in streams)


# ----------------------------------------------------------------- launches


def test_axpy_matches_numpy(be, axpy):
    n = 1000
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    dx, dy = upload(be, x), upload(be, y)
    axpy.launch(((n + 127) // 128, 1, 1), (128, 1, 1), (2.0, dx.handle, dy.handle, n))
    np.testing.assert_allclose(download(be, dy, y), 2.0 * x + y, rtol=1e-6)
    # NumPy scalars of other types, an Ember buffer for a pointer, a stream, short dims
    stream = be.create_stream()
    axpy.launch(8, 128, (np.float64(0.5), dx, dy.handle, np.int32(n)), stream=stream)
    stream.synchronize()
    np.testing.assert_allclose(download(be, dy, y), 2.5 * x + y, rtol=1e-5)


def test_two_dimensional_launch(be):
    module = be.load_module(be.compile(INDEX_2D, "index2d"))
    kernel = module.function("index2d", (PTR, ember.int32))
    width, height = 8, 6
    out = be.alloc(4 * width * height)
    kernel.launch((2, 3, 1), (4, 2, 1), (out.handle, width))
    got = download(be, out, np.zeros((height, width), np.int32))
    ys, xs = np.mgrid[0:height, 0:width]
    np.testing.assert_array_equal(got, 1000 * ys + xs)


def test_dynamic_local_memory_through_a_trailing_local_parameter(be):
    module = be.load_module(be.compile(BLOCK_SUMS, "block_sums"))
    kernel = module.function("block_sums", (PTR, PTR))
    assert kernel.local_tail
    x = np.arange(64, dtype=np.float32)
    dx, out = upload(be, x), be.alloc(4 * 4)
    kernel.launch((4, 1, 1), (16, 1, 1), (dx.handle, out.handle), shared_mem=16 * 4)
    np.testing.assert_allclose(download(be, out, np.zeros(4, np.float32)), x.reshape(4, 16).sum(1))


def test_shared_mem_without_a_local_parameter(be, axpy):
    buf = be.alloc(16)
    with pytest.raises(LaunchError, match="no trailing __local pointer parameter"):
        axpy.launch((1, 1, 1), (4, 1, 1), (1.0, buf.handle, buf.handle, 4), shared_mem=64)


def test_bad_argument_count(be, axpy):
    buf = be.alloc(16)
    with pytest.raises(LaunchError, match=r"takes 4 argument\(s\).*got 3"):
        axpy.launch((1, 1, 1), (4, 1, 1), (1.0, buf.handle, buf.handle))


@pytest.mark.parametrize(
    "args, message",
    [
        (lambda b: ("two", b, b, 4), r"argument 0 must be a float32 scalar.*str 'two'"),
        (lambda b: (None, b, b, 4), r"argument 0 must be a float32 scalar.*NoneType"),
        (lambda b: (1.0, b, b, 2**70), r"argument 3 must be a int64 scalar"),
        (lambda b: (1.0, np.ones(4, np.float32), b, 4), r"ember\.asarray\(x\)"),
        (lambda b: (1.0, 7, b, 4), r"argument 1 must be an OpenCL device buffer.*got int 7"),
    ],
    ids=["string", "none", "overflow", "numpy-for-pointer", "int-for-pointer"],
)
def test_bad_argument_types(be, axpy, args, message):
    buf = be.alloc(16).handle
    with pytest.raises(LaunchError, match=message):
        axpy.launch((1, 1, 1), (4, 1, 1), args(buf))


def test_scalars_follow_numpy_conversion(be):
    source = "__kernel void put(__global uchar* out, uchar v) { out[0] = v; }"
    kernel = be.load_module(be.compile(source, "put")).function("put", (PTR, ember.uint8))
    out = be.alloc(1)
    kernel.launch((1, 1, 1), (1, 1, 1), (out.handle, 200))
    assert download(be, out, np.zeros(1, np.uint8))[0] == 200
    with pytest.raises(LaunchError, match="argument 1 must be a uint8 scalar"):
        kernel.launch((1, 1, 1), (1, 1, 1), (out.handle, 300))  # NumPy raises; no wrap


def test_bad_dims_and_closed_stream(be, axpy):
    buf = be.alloc(16).handle
    with pytest.raises(LaunchError, match="grid must be a positive int"):
        axpy.launch((0, 1, 1), (4, 1, 1), (1.0, buf, buf, 4))  # PoCL aborts on empty ranges
    with pytest.raises(LaunchError, match="grid must be a positive int"):
        axpy.launch((-1, 1, 1), (-4, 1, 1), (1.0, buf, buf, 4))
    with pytest.raises(LaunchError, match="block must be a positive int"):
        axpy.launch((1, 1, 1), (4, 0, 1), (1.0, buf, buf, 4))
    stream = be.create_stream()
    stream.close()
    with pytest.raises(LaunchError, match="closed stream"):
        axpy.launch((1, 1, 1), (4, 1, 1), (1.0, buf, buf, 4), stream=stream)


def test_concurrent_launches_of_one_function(be, axpy):
    n = 256
    xs = [np.full(n, i, np.float32) for i in range(8)]
    dx = [upload(be, x) for x in xs]
    dy = [upload(be, np.zeros(n, np.float32)) for _ in xs]

    def work(i):
        stream = be.create_stream()
        for _ in range(20):
            axpy.launch(
                (n // 64, 1, 1), (64, 1, 1), (1.0, dx[i].handle, dy[i].handle, n), stream=stream
            )
        stream.synchronize()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, y in enumerate(dy):
        np.testing.assert_array_equal(download(be, y, xs[i]), 20.0 * xs[i])


def test_await_a_stream_and_an_event(be):
    import asyncio

    stream = be.create_stream()
    host = np.arange(1 << 16, dtype=np.float32)
    buf = be.alloc(host.nbytes)
    out = np.empty_like(host)

    async def main():
        be.copy_from_host(buf, 0, host, stream)
        be.copy_to_host(out, buf, 0, stream)
        await stream
        event = be.create_event()
        event.record(stream)
        await event

    asyncio.run(main())
    assert stream.query()
    np.testing.assert_array_equal(out, host)


EXIT_CHILD = """
import atexit, random, numpy as np
states = []

def after_ember():  # registered first: runs after Ember's own exit handlers
    print("complete" if states[0]() else "still queued", flush=True)

atexit.register(after_ember)
import ember
from ember.backends.opencl.stream import COMPLETE
C = float(random.randint(1, 10**9))  # a kernel new to PoCL's own cache: built at enqueue

@ember.kernel
def spin(x, n):
    i = ember.global_id()
    if i < x.shape[0]:
        acc = x[i] + C
        for k in range(n):
            acc = acc * 1.0000001 + 1e-7
        x[i] = acc

x = ember.asarray(np.ones(1024, np.float32))
spin.launch(1024)(x, 100000)
stream = ember.get_backend().default_stream
states.append(lambda: stream.last.command_execution_status == COMPLETE)
print("launched", flush=True)
"""


def test_work_queued_at_exit_is_finished_before_teardown(be, tmp_path):
    """A program that ends right after a launch: its queue is finished before the
    interpreter and PoCL are torn down (PoCL builds the kernel's work-group code at
    enqueue on a thread of its own; exiting during it crashed the process with SIGSEGV,
    about one exit in fifteen)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, EMBER_BACKEND="opencl", EMBER_CACHE="0", EMBER_WARMUP="0",
               EMBER_OPENCL_DEVICE=be.device.extra["id"])  # fmt: skip
    script = tmp_path / "ends_after_a_launch.py"  # a file: Ember reads the kernel's source
    script.write_text(EXIT_CHILD)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["launched", "complete"]
