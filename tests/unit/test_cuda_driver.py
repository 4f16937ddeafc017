"""The CUDA backend's status check and argument packing, with no GPU."""

from __future__ import annotations

import struct
import types

import pytest

pytest.importorskip("cuda.bindings", reason="cuda-bindings is not installed")

from ember import dtypes  # noqa: E402
from ember.backends.cuda import driver  # noqa: E402
from ember.backends.cuda.launch import SLOT, CudaFunction, PackingPlan  # noqa: E402
from ember.errors import DriverError, LaunchError, OutOfMemoryError  # noqa: E402
from ember.runtime.backend import PTR  # noqa: E402

cu = driver.cu


def test_check_returns_values():
    assert driver.check((cu.CUresult.CUDA_SUCCESS,), "cuCtxSynchronize") is None
    assert driver.check((cu.CUresult.CUDA_SUCCESS, 5), "cuDeviceGetCount") == 5
    assert driver.check((cu.CUresult.CUDA_SUCCESS, 1, 2), "cuMemGetInfo") == (1, 2)


def test_check_names_the_result_the_call_and_the_fix():
    with pytest.raises(DriverError) as info:
        driver.check((cu.CUresult.CUDA_ERROR_INVALID_VALUE, None), "cuMemcpyHtoD", "copying")
    err = info.value
    assert not isinstance(err, OutOfMemoryError)
    assert "CUDA_ERROR_INVALID_VALUE" in str(err)
    assert "cuMemcpyHtoD" in str(err) and "while copying" in str(err)
    assert "What to do:" in str(err)
    assert (err.code, err.code_name, err.call) == (1, "CUDA_ERROR_INVALID_VALUE", "cuMemcpyHtoD")


def test_out_of_memory_is_its_own_class():
    with pytest.raises(OutOfMemoryError, match="CUDA_ERROR_OUT_OF_MEMORY.*free device memory"):
        driver.check((cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY, None), "cuMemAlloc")
    with pytest.raises(MemoryError):  # OutOfMemoryError is also a MemoryError
        driver.check((2, None), "cuMemAlloc")


def test_plain_int_and_unknown_codes():
    with pytest.raises(DriverError, match="CUDA_ERROR_NOT_FOUND"):
        driver.check((500,), "cuModuleGetFunction")
    assert driver.result_name(123456) == "CUresult 123456"


def test_packing_plan_puts_each_argument_in_its_slot():
    plan = PackingPlan([dtypes.float32, PTR, dtypes.int64, dtypes.bool_, "float16"])
    assert plan.struct.size == 5 * SLOT
    slots, pointers, address = plan.new_buffers()
    plan.struct.pack_into(slots, 0, 2.5, 0xDEADBEEF, -3, True, 1.5)
    raw = bytes(slots)
    assert struct.unpack_from("<f", raw, 0)[0] == 2.5
    assert struct.unpack_from("<Q", raw, 8)[0] == 0xDEADBEEF
    assert struct.unpack_from("<q", raw, 16)[0] == -3
    assert struct.unpack_from("<?", raw, 24)[0] is True
    assert struct.unpack_from("<e", raw, 32)[0] == 1.5
    assert [pointers[i] - pointers[0] for i in range(5)] == [0, 8, 16, 24, 32]
    assert address != 0


def _fake_function(params):
    stream = types.SimpleNamespace(_handle=cu.CUstream())
    module = types.SimpleNamespace(context=None, default_stream=stream)
    return CudaFunction(cu.CUfunction(), "axpy", params, module)


def test_wrong_argument_count_is_a_launch_error():
    fn = _fake_function([dtypes.float32, PTR, PTR, dtypes.int64])
    with pytest.raises(LaunchError, match=r"'axpy' takes 4 argument\(s\).*got 3"):
        fn.launch((1, 1, 1), (32, 1, 1), [2.0, 1, 2])


def test_unpackable_value_names_index_and_type():
    fn = _fake_function([dtypes.float32, PTR, PTR, dtypes.int64])
    with pytest.raises(LaunchError, match=r"argument 3 of kernel 'axpy' must be a int64 value"):
        fn.launch((1, 1, 1), (32, 1, 1), [2.0, 1, 2, 1.5])
    with pytest.raises(LaunchError, match=r"argument 1 .* device pointer.*ember.asarray"):
        import numpy as np

        fn.launch((1, 1, 1), (32, 1, 1), [2.0, np.zeros(3), 2, 4])
    with pytest.raises(LaunchError, match=r"argument 2 .* device pointer"):
        fn.launch((1, 1, 1), (32, 1, 1), [2.0, 1, "x", 4])


def test_bad_dims_are_launch_errors():
    fn = _fake_function([PTR])
    with pytest.raises(LaunchError, match="grid must be"):
        fn.launch("abc", (32, 1, 1), [1])
    with pytest.raises(LaunchError, match="block must be"):
        fn.launch(1, (0, 1), [1])
    with pytest.raises(LaunchError, match="shared_mem must be"):
        fn.launch(1, 32, [1], shared_mem=-1)


def test_unsupported_parameter_type():
    with pytest.raises(LaunchError, match="not supported"):
        PackingPlan(["complex64"])


class _Context:
    def __init__(self, retries):
        self.retries = retries

    def retry_on_invalid_context(self, err):
        if err == driver.cu.CUresult.CUDA_ERROR_INVALID_CONTEXT and self.retries:
            self.retries -= 1
            return True
        return False


def test_finished_maps_query_statuses():
    R = driver.cu.CUresult
    ok = lambda h: (R.CUDA_SUCCESS,)  # noqa: E731
    busy = lambda h: (R.CUDA_ERROR_NOT_READY,)  # noqa: E731
    assert driver.finished(ok, 0, _Context(0), "cuStreamQuery", "querying a stream") is True
    assert driver.finished(busy, 0, _Context(0), "cuStreamQuery", "querying a stream") is False
    answers = [(R.CUDA_ERROR_INVALID_CONTEXT,), (R.CUDA_SUCCESS,)]
    assert driver.finished(lambda h: answers.pop(0), 0, _Context(1), "cuEventQuery", "q") is True
    bad = lambda h: (R.CUDA_ERROR_LAUNCH_FAILED,)  # noqa: E731
    with pytest.raises(
        DriverError,
        match="cuEventQuery failed with CUDA_ERROR_LAUNCH_FAILED while querying an event",
    ):
        driver.finished(bad, 0, _Context(0), "cuEventQuery", "querying an event")


# ------------------------------------------------------------------ the direct launch


class _Stream:
    def __init__(self, address):
        self._handle = cu.CUstream(address)
        self._address = address
        self.submitted = 0

    def close(self):
        self._handle = self._address = None


def _direct_function(monkeypatch, params):
    """A CudaFunction whose ctypes entry point is a Python function reading the frame the
    driver would read: every launch's (grid, block, shared, stream, slot bytes)."""
    import ctypes

    from ember.backends.cuda import direct
    from ember.backends.cuda.launch import CONFIG, CONFIG_SIZE

    launches = []

    def fake_ex(config, function, kernel_params, extra):
        raw = ctypes.string_at(config.value, CONFIG_SIZE)
        gx, gy, gz, bx, by, bz, shared, stream = struct.unpack(CONFIG, raw)
        table = (ctypes.c_void_p * max(len(params), 1)).from_address(kernel_params.value)
        slots = [ctypes.string_at(table[i], SLOT) for i in range(len(params))]
        launches.append(((gx, gy, gz), (bx, by, bz), shared, stream, slots))
        return 1 if gy > 65535 else 0  # the driver refuses what the device cannot run

    monkeypatch.setattr(direct, "entry", lambda name: fake_ex)
    default = _Stream(0x1000)
    module = types.SimpleNamespace(context=_Context(0), default_stream=default)
    fn = CudaFunction(cu.CUfunction(), "k", params, module)
    assert fn._ex is fake_ex
    return fn, launches, default


def test_direct_launch_writes_config_and_arguments(monkeypatch):
    fn, launches, default = _direct_function(monkeypatch, [dtypes.float32, PTR, dtypes.int64])
    fn.launch((2, 3, 4), (32, 1, 1), [1.5, 0xABC, -7])
    (grid, block, shared, stream, slots) = launches[-1]
    assert (grid, block, shared, stream) == ((2, 3, 4), (32, 1, 1), 0, 0x1000)
    assert struct.unpack_from("<f", slots[0])[0] == 1.5
    assert struct.unpack_from("<Q", slots[1])[0] == 0xABC
    assert struct.unpack_from("<q", slots[2])[0] == -7
    assert default.submitted == 1


def test_direct_launch_never_reuses_a_stale_configuration(monkeypatch):
    fn, launches, default = _direct_function(monkeypatch, [PTR])
    grid = (1, 1, 1)
    fn.launch(grid, (32, 1, 1), [1])
    fn.launch(grid, (32, 1, 1), [2])  # same configuration objects: only the argument packed
    assert [entry[:4] for entry in launches] == [((1, 1, 1), (32, 1, 1), 0, 0x1000)] * 2
    fn.launch((5, 1, 1), (32, 1, 1), [3])
    assert launches[-1][0] == (5, 1, 1)
    fn.launch((5, 1, 1), (64, 1, 1), [3], shared_mem=128)
    assert launches[-1][1:3] == ((64, 1, 1), 128)
    mutable = [7, 1, 1]  # a list may change between launches: never remembered
    fn.launch(mutable, (64, 1, 1), [4])
    mutable[0] = 9
    fn.launch(mutable, (64, 1, 1), [4])
    assert [e[0] for e in launches[-2:]] == [(7, 1, 1), (9, 1, 1)]
    other = _Stream(0x2000)
    fn.launch(grid, (32, 1, 1), [5], stream=other)
    assert launches[-1][3] == 0x2000 and other.submitted == 1
    other.close()
    with pytest.raises(LaunchError, match="closed stream"):
        fn.launch(grid, (32, 1, 1), [5], stream=other)
    fn.launch(32, [8], [6])  # an int and a short list: the checked path
    assert launches[-1][:2] == ((32, 1, 1), (8, 1, 1))
    fn.launch(grid, (32, 1, 1), [7])  # and back: the configuration is packed again
    assert launches[-1][:3] == ((1, 1, 1), (32, 1, 1), 0)


def test_direct_launch_errors_leave_nothing_half_packed(monkeypatch):
    fn, launches, _ = _direct_function(monkeypatch, [dtypes.int32, PTR])
    grid, block = (4, 1, 1), (32, 1, 1)
    fn.launch(grid, block, [1, 2])
    with pytest.raises(LaunchError, match="argument 0 of kernel 'k' must be a int32"):
        fn.launch((9, 1, 1), block, [2**40, 2])  # fails after the new grid was packed
    fn.launch(grid, block, [3, 4])  # the frame holds the right grid again
    assert launches[-1][0] == (4, 1, 1) and len(launches) == 2
    with pytest.raises(LaunchError, match="grid dimension y is 70000"):  # the driver refused
        fn.launch((1, 70000, 1), block, [1, 2])
    with pytest.raises(LaunchError, match="takes 2 argument"):
        fn.launch(grid, block, [1])
