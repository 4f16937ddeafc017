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
        self.made_current = 0

    def ensure_current(self):
        self.made_current += 1

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


def _direct_function(monkeypatch, params, native=False):
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
    fn = CudaFunction(cu.CUfunction(), "k", params, module, native=native)
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


# ------------------------------------------------------------------ the compiled stub's launch


def _native_function(monkeypatch, params, result=0):
    """A CudaFunction launching through the C stub, whose driver entry point is the stub's
    own probe: it records the configuration and the argument slots the driver would read."""
    _ccall = pytest.importorskip("ember.backends.cuda._ccall", reason="C stub not built")
    from ember.backends.cuda import direct

    fn, ctypes_launches, default = _direct_function(monkeypatch, params)
    monkeypatch.setattr(direct, "address", lambda fn: _ccall.probe_address())
    fn = CudaFunction(cu.CUfunction(0xF00), "k", params, fn.module)
    assert fn._native
    _ccall.probe_arm(len(params), result)
    return fn, _ccall, ctypes_launches, default


def test_native_launch_packs_config_and_arguments(monkeypatch):
    params = [dtypes.bool_, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64]
    params += [dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64]
    params += [dtypes.float32, dtypes.float64, PTR]
    fn, stub, ctypes_launches, default = _native_function(monkeypatch, params)
    values = [True, -5, -300, -70000, -(2**40), 200, 60000, 2**32 - 1, 2**64 - 1]
    values += [1.5, -2.25, 0xDEADBEEF000]
    fn.launch((2, 3, 4), (32, 2, 1), tuple(values), shared_mem=256)
    *_, function, params_table, extra, grid, block, shared, stream, slots = (
        None,
        *stub.probe_recorded(),
    )
    assert (grid, block, shared, stream) == ((2, 3, 4), (32, 2, 1), 256, 0x1000)
    assert function == 0xF00 and extra == 0 and params_table != 0
    formats = "?bhiqBHIQfdQ"
    got = [struct.unpack_from("<" + f, slots, 8 * i)[0] for i, f in enumerate(formats)]
    assert got == values
    # unused bytes of each slot are zero (the driver reads only the parameter's size)
    assert slots[1:8] == bytes(7) and slots[8 * 3 + 4 : 8 * 4] == bytes(4)
    assert default.submitted == 1 and ctypes_launches == []
    # NumPy scalars of each parameter's own type, read in place: the same slots
    import numpy as np

    kinds = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32)
    kinds += (np.uint64, np.float32, np.float64)
    scalars = [t(v) for t, v in zip(kinds, values, strict=False)] + [values[-1]]
    fn.launch((2, 3, 4), (32, 2, 1), tuple(scalars), shared_mem=256)
    assert stub.probe_recorded()[-1] == slots
    assert default.submitted == 2 and ctypes_launches == []
    fn.launch((2, 3, 4), (32, 2, 1), (np.bool_(False), *values[1:]), shared_mem=256)
    assert stub.probe_recorded()[-1][0] == 0


def test_native_launch_hands_what_it_cannot_pack_to_the_ctypes_path(monkeypatch):
    import numpy as np

    fn, stub, ctypes_launches, default = _native_function(
        monkeypatch, [dtypes.uint32, dtypes.float32]
    )
    fn.launch((1, 1, 1), (32, 1, 1), [np.uint16(7), 1.0])  # another type's scalar, a list
    fn.launch(4, 64, (7, 2.0))  # launch dimensions as ints
    assert [launch[:2] for launch in ctypes_launches] == [
        ((1, 1, 1), (32, 1, 1)),
        ((4, 1, 1), (64, 1, 1)),
    ]
    with pytest.raises(LaunchError, match="argument 0 of kernel 'k' must be a uint32"):
        fn.launch((1, 1, 1), (32, 1, 1), (-1, 1.0))
    with pytest.raises(LaunchError, match="argument 1 of kernel 'k' must be a float32"):
        fn.launch((1, 1, 1), (32, 1, 1), (1, 1e300))  # no silent infinity
    with pytest.raises(LaunchError, match=r"takes 2 argument\(s\)"):
        fn.launch((1, 1, 1), (32, 1, 1), (1,))
    closed = _Stream(0x2000)
    closed.close()
    with pytest.raises(LaunchError, match="closed stream"):  # never the legacy NULL stream
        fn.launch((1, 1, 1), (32, 1, 1), (1, 1.0), stream=closed)
    assert default.submitted == 2


def test_native_launch_reports_the_driver_status(monkeypatch):
    fn, stub, _, default = _native_function(monkeypatch, [PTR], result=1)  # INVALID_VALUE
    with pytest.raises(DriverError, match="CUDA_ERROR_INVALID_VALUE"):
        fn.launch((1, 1, 1), (32, 1, 1), (0,))
    assert default.submitted == 0  # nothing was enqueued


def test_native_launch_takes_many_parameters(monkeypatch):
    params = [dtypes.int32] * 100  # beyond the stub's stack buffer
    fn, stub, _, _ = _native_function(monkeypatch, params)
    fn.launch((1, 1, 1), (1, 1, 1), tuple(range(100)))
    slots = stub.probe_recorded()[-1]
    assert [struct.unpack_from("<i", slots, 8 * i)[0] for i in range(16)] == list(range(16))


def test_native_launch_takes_keywords_and_counts_on_its_stream(monkeypatch):
    fn, stub, ctypes_launches, default = _native_function(monkeypatch, [PTR])
    other = _Stream(0x2000)
    fn.launch((1, 1, 1), (32, 1, 1), (5,), 64, other)  # all five positionally
    assert stub.probe_recorded()[6:8] == (64, 0x2000) and other.submitted == 1
    fn.launch(grid=(2, 1, 1), block=(32, 1, 1), args=(6,), stream=other, shared_mem=8)
    assert stub.probe_recorded()[4] == (2, 1, 1) and other.submitted == 2
    fn.launch((3, 1, 1), (32, 1, 1), (7,), stream=None)
    assert stub.probe_recorded()[7] == 0x1000 and default.submitted == 1
    with pytest.raises(TypeError, match="unexpected or repeated keyword"):
        fn.launch((1, 1, 1), (32, 1, 1), (5,), grid=(1, 1, 1))
    with pytest.raises(TypeError, match="takes 3 to 5 positional arguments"):
        fn.launch((1, 1, 1), (32, 1, 1))
    assert ctypes_launches == [] and default.submitted == 1


def test_native_launch_leaves_several_devices_to_the_python_path(monkeypatch):
    from ember.backends.cuda import device

    fn, stub, ctypes_launches, default = _native_function(monkeypatch, [PTR])
    monkeypatch.setattr(device, "opened", 2)  # the Python path makes the context current
    fn.launch((1, 1, 1), (32, 1, 1), (5,))
    assert len(ctypes_launches) == 1 and default.submitted == 1
    assert fn._context.made_current == 1


def test_native_launcher_is_collected_with_its_function(monkeypatch):
    import gc
    import weakref

    fn, *_ = _native_function(monkeypatch, [PTR])
    gone = weakref.ref(fn)  # fn -> launcher -> fn._failed -> fn: a cycle the GC must break
    del fn
    gc.collect()
    assert gone() is None


def test_the_stub_reads_numpy_scalars_in_place_only_after_checking_their_layout():
    _ccall = pytest.importorskip("ember.backends.cuda._ccall", reason="C stub not built")
    import numpy as np

    from ember.backends.cuda import direct

    samples = direct._scalar_samples()
    assert sorted(_ccall.numpy_scalars(samples)) == sorted("?bhiqBHIQfd")
    wrong = ((np.float32, "f", np.float32(1.0), np.float32(2.0).tobytes()),)
    assert _ccall.numpy_scalars(wrong) == []  # the sample does not hold those bytes
    assert _ccall.numpy_scalars(((np.float32, "x", np.float32(1.0), b"\0" * 4),)) == []
    assert _ccall.numpy_scalars(((np.float64, "f", np.float64(1.0), b"\0" * 8),)) == []
