"""The ctypes driver table (ember.backends.cuda.cdriver) against cuda.bindings on a real
device: the same answers, statuses and memory contents.  Need a CUDA GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

cu = pytest.importorskip("cuda.bindings.driver")
from ember.backends.cuda import cdriver as c  # noqa: E402


@pytest.fixture(scope="module")
def device():
    try:
        from ember.runtime import backend as registry

        backend = registry.get("cuda")
    except Exception as exc:
        pytest.skip(f"CUDA backend unavailable: {exc}")
    backend.context.ensure_current()
    return backend


def test_device_queries_agree(device):
    assert c.cuInit(0) == (0,) and int(cu.cuInit(0)[0]) == 0
    assert c.cuDriverGetVersion()[1] == cu.cuDriverGetVersion()[1]
    assert c.cuDeviceGetCount()[1] == cu.cuDeviceGetCount()[1]
    dev = c.cuDeviceGet(0)[1]
    for name in vars(c.CUdevice_attribute):
        if name.startswith("CU_"):
            mine = c.cuDeviceGetAttribute(getattr(c.CUdevice_attribute, name), dev)
            theirs = cu.cuDeviceGetAttribute(getattr(cu.CUdevice_attribute, name), dev)
            assert mine == (0, theirs[1]), name
    assert c.cuDeviceTotalMem(dev)[1] == cu.cuDeviceTotalMem(dev)[1]
    name = c.cuDeviceGetName(256, dev)[1]
    assert name.split(b"\0")[0] == cu.cuDeviceGetName(256, dev)[1].split(b"\0")[0]
    assert int(c.cuCtxGetDevice()[1]) == int(cu.cuCtxGetDevice()[1])


def test_memory_round_trip_and_statuses(device):
    data = np.arange(1 << 16, dtype=np.uint32)
    back = np.zeros_like(data)
    err, stream = c.cuStreamCreate(c.CUstream_flags.CU_STREAM_NON_BLOCKING)
    assert err == 0 and stream
    err, ptr = c.cuMemAllocAsync(data.nbytes, stream)
    assert err == 0 and ptr
    assert c.cuMemcpyHtoDAsync(ptr, data.ctypes.data, data.nbytes, stream) == (0,)
    assert c.cuMemsetD32Async(ptr, 7, 4, stream) == (0,)
    assert c.cuMemcpyDtoHAsync(back.ctypes.data, ptr, back.nbytes, stream) == (0,)
    assert c.cuStreamSynchronize(stream) == (0,)
    assert (back[:4] == 7).all() and (back[4:] == data[4:]).all()
    assert c.cuStreamQuery(stream) == (0,)
    kind = c.cuPointerGetAttribute(c.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr)
    assert kind == (0, c.CUmemorytype.CU_MEMORYTYPE_DEVICE)
    assert c.cuMemFreeAsync(ptr, stream) == (0,)
    assert c.cuStreamDestroy(stream) == (0,)
    err, _ = c.cuMemAlloc(1 << 62)  # more than any device has: the driver's own status
    assert err == int(cu.cuMemAlloc(1 << 62)[0]) == c.CUresult.CUDA_ERROR_OUT_OF_MEMORY
    assert c.CUresult(err).name == "CUDA_ERROR_OUT_OF_MEMORY"
    assert c.cuGetErrorString(err)[1] == cu.cuGetErrorString(cu.CUresult(err))[1]


def test_events_time_and_order(device):
    err, start = c.cuEventCreate(c.CUevent_flags.CU_EVENT_DEFAULT)
    _, end = c.cuEventCreate(c.CUevent_flags.CU_EVENT_DEFAULT)
    assert err == 0
    assert c.cuEventRecord(start, 0) == (0,) and c.cuEventRecord(end, 0) == (0,)
    assert c.cuEventSynchronize(end) == (0,)
    err, ms = c.cuEventElapsedTime(start, end)
    assert err == 0 and 0.0 <= ms < 1000.0
    assert c.cuEventQuery(end) == (0,)
    assert c.cuEventDestroy(start) == (0,) and c.cuEventDestroy(end) == (0,)


def test_modules_functions_and_launch(device):
    import ember

    @ember.kernel
    def fill(out, value):
        i = ember.global_id()
        if i < out.shape[0]:
            out[i] = value

    x = ember.zeros(100, ember.int32)
    fill.launch(100)(x, np.int32(5))
    assert (x.to_numpy() == 5).all()
    fn = fill.specialize(x, np.int32(5)).function
    assert "fill" in " ".join(fn.module.kernel_names())  # FunctionCount/Enumerate/GetName
    missing = c.cuModuleGetFunction(fn.module.handle, b"no_such_kernel")
    assert missing[0] == c.CUresult.CUDA_ERROR_NOT_FOUND
    attrs = fn.attributes()
    assert attrs["max_threads_per_block"] > 0 and attrs["num_regs"] > 0
    assert fn.occupancy(128) > 0


def test_the_backend_runs_without_cuda_bindings_driver():
    """A fresh process: a first array operation from the disk cache (warmed by this test)
    imports no cuda.bindings driver module and no cuda.pathfinder."""
    import os
    import subprocess
    import sys

    code = (
        "import ember, sys\n"
        "y = ember.ones(1000, ember.float32) * 2 + 1\n"
        "assert float(y.to_numpy()[5]) == 3.0\n"
        "print(sorted(m for m in sys.modules if m in ('cuda.bindings.driver', 'cuda.pathfinder')))"
    )
    env = dict(os.environ, EMBER_WARMUP="0")
    for _ in range(2):  # the first run may compile (NVRTC imports cuda.bindings)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
