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
    with pytest.raises(DriverError, match="cuEventQuery failed with CUDA_ERROR_LAUNCH_FAILED while querying an event"):
        driver.finished(bad, 0, _Context(0), "cuEventQuery", "querying an event")
