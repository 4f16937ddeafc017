"""Several devices in one process (issue 16): ``ember.devices()``, ``ember.Device``, the
current device per thread, arrays on their device, kernels on their arrays' device, copies
between devices, per-device streams, pools and compiled kernels, ``EMBER_DEVICE``.

CI runs these on two PoCL CPU devices (``POCL_DEVICES="pthread pthread"``, set by
tests/conftest.py before OpenCL starts); the ``two_devices`` fixture skips elsewhere.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest

import ember
from ember.runtime import backend as registry


@ember.kernel
def axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i]


def test_devices_are_named_interned_and_pickle(two_devices):
    d0, d1 = two_devices
    assert ember.Device(d1.index) is d1
    assert ember.Device(d1.backend, d1.index) is d1 and ember.Device(str(d1)) is d1
    assert ember.Device(d1) is d1 and ember.Device(d1.info) is d1
    assert d1 in ember.devices() and d0 != d1
    assert d1 == d1.info and d1.info == d1 and hash(d1) == hash((d1.backend, d1.index))
    assert pickle.loads(pickle.dumps(d1)) is d1
    assert repr(d1) == f"ember.Device({d1.backend!r}, {d1.index})"
    assert d1.name == d1.info.name and d1.kind == d1.info.kind  # DeviceInfo's attributes
    with pytest.raises(ValueError, match="has no device 99"):
        ember.Device(99)
    with pytest.raises(ValueError, match="unknown device"):
        ember.Device("tpu", 0)
    with pytest.raises(TypeError, match="a device is an index"):
        ember.Device(1.5)


def test_current_device_per_thread_and_block(two_devices):
    d0, d1 = two_devices
    assert ember.zeros(2).device is d0
    with d1:
        assert ember.zeros(2).device is d1 and ember.get_backend() is d1.get_backend()
        with d0:
            assert ember.zeros(2).device is d0
        assert ember.empty(3).device is d1
        seen = []
        t = threading.Thread(target=lambda: seen.append(ember.zeros(1).device))
        t.start()
        t.join()
        assert seen == [d0]  # another thread keeps the process's device
        with ember.use_backend(d1.backend):  # a backend block: its default device
            assert ember.zeros(1).device is d0
        assert ember.zeros(1).device is d1  # ... and this thread's choice again after it
    assert ember.zeros(2).device is d0


def test_use_sets_the_thread_device_until_changed(two_devices):
    d0, d1 = two_devices
    seen = []

    def work():
        d1.use()
        seen.append(ember.arange(3).device)
        ember.use_backend(d1.backend)  # the process's selection again, in this thread
        seen.append(ember.arange(3).device)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen == [d1, d0]
    assert ember.zeros(1).device is d0


def test_arrays_and_kernels_run_on_their_device(two_devices):
    d0, d1 = two_devices
    host = np.arange(1000, dtype=np.float32)
    x = ember.asarray(host, device=d1)
    y = ember.ones(1000, dtype=ember.float32, device=d1)
    assert x.device is d1 and x.backend is d1.get_backend()
    axpy.launch(1000)(np.float32(2), x, y)  # current device is d0: the arrays decide
    np.testing.assert_array_equal(y.to_numpy(), 2 * host + 1)
    for result in (x + y, ember.sin(x), x.sum(axis=0), x.reshape(10, 100).mean(axis=1), x[5:]):
        assert result.device is d1
    np.testing.assert_allclose(x.reshape(10, 100).std(axis=0).to_numpy(),
                               host.reshape(10, 100).std(axis=0), rtol=1e-5)  # fmt: skip
    # the kernel's specializations are per device; one compiled binary serves both
    z = ember.zeros(1000, dtype=ember.float32, device=d0)
    axpy.launch(1000)(np.float32(1), ember.asarray(host), z)
    np.testing.assert_array_equal(z.to_numpy(), host)


def test_mixing_devices_is_a_clear_error(two_devices):
    d0, d1 = two_devices
    a, b = ember.ones(4, device=d0), ember.ones(4, device=d1)
    with pytest.raises(ValueError, match=rf"different devices \({d0}.*{d1}\).*to_device"):
        a + b
    with pytest.raises(ember.ArgumentError, match="different devices"):
        axpy.launch(4)(np.float32(1), a, b)
    with pytest.raises(ValueError, match="different devices"):
        ember.concatenate([a, b])
    with pytest.raises(ValueError, match="different devices"):
        ember.matmul(a.reshape(2, 2), b.reshape(2, 2))


def test_copies_between_devices(two_devices):
    d0, d1 = two_devices
    host = np.arange(24, dtype=np.int32).reshape(4, 6)
    x = ember.asarray(host)
    assert x.to_device(d0) is x and ember.asarray(x, device=d0) is x
    for y in (x.to_device(d1), ember.asarray(x, device=d1), x.to_device(str(d1)),
              ember.astype(x, ember.float32, device=d1), x.T.to_device(d1),
              x[::2, 1:].to_device(d1)):  # fmt: skip
        assert y.device is d1
    np.testing.assert_array_equal(x.T.to_device(d1).to_numpy(), host.T)
    np.testing.assert_array_equal(x[::2, 1:].to_device(d1).to_numpy(), host[::2, 1:])
    back = (x.to_device(d1) * 2).to_device(d0)
    assert back.device is d0
    np.testing.assert_array_equal(back.to_numpy(), host * 2)
    assert ember.asarray(np.zeros(0), device=d1).device is d1


def test_each_device_has_its_own_runtime(two_devices):
    d0, d1 = two_devices
    b0, b1 = d0.get_backend(), d1.get_backend()
    assert b0 is not b1 and b0.default_stream is not b1.default_stream
    assert registry.device(d1.backend, d1.index) is b1 and b1 in registry.opened(d1.backend)
    x = ember.zeros(1 << 16, device=d1)
    assert ember.memory.pool(b1) is not ember.memory.pool(b0)
    assert ember.memory.stats(b1)["in_use"] >= x.nbytes
    with d1:
        stream = ember.Stream()
        assert ember.default_stream() is b1.default_stream
        ember.synchronize()
    y = ember.asarray(np.arange(8.0), device=d1, stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(y.to_numpy(), np.arange(8.0))
    d1.synchronize()
    assert b1.target == b0.target or b1.device.name != b0.device.name


def test_unpickled_arrays_land_on_the_current_device(two_devices):
    d0, d1 = two_devices
    blob = pickle.dumps(ember.arange(5, device=d0))
    with d1:
        y = pickle.loads(blob)
    assert y.device is d1
    np.testing.assert_array_equal(y.to_numpy(), np.arange(5))


def test_ember_device_picks_the_default_device(two_devices):
    d0, d1 = two_devices
    code = (
        "import ember; x = ember.arange(4) * 3; "
        "print(x.device.index, ember.get_backend().device.index, x.sum().item())"
    )
    env = {**os.environ, "EMBER_DEVICE": str(d1.index), "EMBER_BACKEND": d1.backend}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(d1.index), str(d1.index), "18"]


def test_warmup_opens_another_device(two_devices):
    d0, d1 = two_devices
    w = ember.warmup(device=d1)
    assert w.done() and w.error is None and d1.is_open
    assert d1 in ember.__array_namespace_info__().devices()
    with d1:
        assert ember.__array_namespace_info__().default_device() is d1


ADD = {
    "cuda": 'extern "C" __global__ void add_into(const float* x, float* y, long long n) {\n'
    "    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] += x[i];\n}",
    "opencl": "__kernel void add_into(__global const float* x, __global float* y, long n) {\n"
    "    long i = get_global_id(0);\n    if (i < n) y[i] += x[i];\n}",
}


def test_source_kernels_follow_their_arrays(two_devices):
    d0, d1 = two_devices
    k = ember.RawKernel(ADD[d0.get_backend().dialect], "add_into")
    a = ember.arange(8, dtype=ember.float32)
    b = ember.arange(8, dtype=ember.float32, device=d1)
    for x in (a, b, a, b):  # loaded once per device, launched where the arrays are
        k[1, 8](x, x, 8)
    np.testing.assert_array_equal(a.to_numpy(), np.arange(8) * 4)
    np.testing.assert_array_equal(b.to_numpy(), np.arange(8) * 4)
    with pytest.raises(ember.LaunchError, match="different devices"):
        k[1, 8](b, a, 8)
