"""The launch path without a device: a fake backend records what the compiler hands it
(parameter types, packed native arguments, grid and block), so the ABI, the specialization
cache, the inline cache and the cache keys are checked exactly."""

from __future__ import annotations

import re

import numpy as np
import pytest
from fake_backend import FAKE_DEVICE, FakeBase, FakeBufferBase, FakeFunctionBase, FakeModuleBase

import ember
from ember import config
from ember.codegen import dialects
from ember.compiler import driver
from ember.runtime.backend import PTR, DeviceInfo

# a fake backend counts its compiles: a warm shared cache would serve them (conftest.py)
pytestmark = pytest.mark.cold_cache

SCALE = 3  # a captured constant


class FakeBuffer(FakeBufferBase):
    pass


class FakeFunction(FakeFunctionBase):
    def launch(self, grid, block, args, shared_mem=0, stream=None):
        self.log.append((self.name, grid, block, tuple(args), shared_mem, stream))


class FakeModule(FakeModuleBase):
    def __init__(self, backend):
        self.backend = backend

    def function(self, name, params):
        self.backend.params.append(tuple(params))
        return FakeFunction(name, params, self.backend.launches)


class FakeBackend(FakeBase):
    """Enough of the backend contract for the compiler: an OpenCL-dialect device."""

    device = FAKE_DEVICE

    def __init__(self):
        self.sources, self.params, self.launches = [], [], []

    def compile(self, source, name, options=()):
        self.sources.append(source)
        return source.encode()

    def load_module(self, binary):
        return FakeModule(self)

    def library_versions(self):
        return {"fake": "1.0"}

    def native_pointer(self, buffer, offset=0):
        return buffer.handle


@pytest.fixture
def fake():
    return FakeBackend()


def array(fake, shape, dtype=ember.float32, strides=None, offset=0, nbytes=4096):
    return ember.ndarray(tuple(shape), ember.dtype(dtype), FakeBuffer(nbytes), fake, strides,
                         offset)  # fmt: skip


@ember.kernel
def axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i] * SCALE


def test_first_launch_compiles_then_launches_pack_the_abi(fake):
    x, y = array(fake, (10,)), array(fake, (10,), offset=8)
    axpy[2, 8](2.0, x, y)
    axpy[2, 8](2.0, x, y)
    assert len(fake.sources) == 1  # compiled once
    assert fake.params == [(ember.float64, PTR, ember.int64, ember.int64,
                            PTR, ember.int64, ember.int64)]  # fmt: skip
    expected = (2.0, x.buffer.handle, 0, 10, y.buffer.handle, 2, 10)
    (name, *launch), again = fake.launches
    assert re.fullmatch(r"axpy_[0-9a-f]{16}", name)  # the C name ends in the cache key
    assert launch == [(2, 1, 1), (8, 1, 1), expected, 0, None] and again == fake.launches[0]


def test_signatures_get_their_own_specializations_and_the_inline_cache_switches(fake):
    k = ember.kernel(axpy.py_func)
    f32 = (array(fake, (4,)), array(fake, (4,)))
    f64 = (array(fake, (4,), "float64"), array(fake, (4,), "float64"))
    for args in (f32, f64, f32, f64):
        k[1, 4](1.5, *args)
    k[1, 4](np.float32(1.5), *f32)  # a NumPy scalar is strong: a third signature
    assert len(fake.sources) == 3 and len(k.specializations) >= 3
    assert [launch[3][1] for launch in fake.launches] == [f32[0].buffer.handle,
        f64[0].buffer.handle, f32[0].buffer.handle, f64[0].buffer.handle,
        f32[0].buffer.handle]  # fmt: skip
    assert "double a" in fake.sources[0] and "float a" in fake.sources[2]


@ember.kernel
def copy2d(x, y):
    i, j = ember.grid(2)
    if i < x.shape[0] and j < x.shape[1]:
        y[i, j] = x[i, j]


def test_non_contiguous_views_pass_element_strides(fake):
    base = np.zeros((6, 8), np.float32)
    view = base[::-2, 1::3]
    offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    x = array(fake, view.shape, strides=view.strides, offset=offset)
    y = array(fake, view.shape)
    copy2d.launch(view.shape)(x, y)
    (launch,) = fake.launches
    assert launch[3] == (x.buffer.handle, offset // 4, 3, 3, -16, 3,
                         y.buffer.handle, 0, 3, 3)  # fmt: skip
    assert launch[1:3] == ((1, 1, 1), (16, 16, 1))  # launch(n): the device-chosen block
    assert "x.data[i * x.strides[0] + j * x.strides[1]]" in fake.sources[0]
    assert "y.data[i * y.shape[1] + j]" in fake.sources[0]


def test_an_array_is_read_once_for_all_its_launches(fake):
    x, y = array(fake, (10,)), array(fake, (10,), offset=8)
    assert x._lv is None  # nothing read until its first launch
    axpy[2, 8](2.0, x, y)
    view = x._lv
    assert view[1:] == (x.buffer.handle, 0, 10, 1) and y._lv[1:] == (y.buffer.handle, 2, 10, 1)
    axpy[2, 8](3.0, x, y)
    assert x._lv is view  # the second launch reused it
    assert fake.launches[1][3] == (3.0, x.buffer.handle, 0, 10, y.buffer.handle, 2, 10)


def test_a_c_layout_specialization_never_takes_other_strides(fake):
    # copy2d's first specialization is for C-strided arrays; a transposed view of the same
    # dtype and rank must not pass its guard (it gets a strided specialization)
    x, y = array(fake, (3, 4)), array(fake, (3, 4))
    copy2d[1, (4, 4)](x, y)
    t = array(fake, (4, 3), strides=(4, 16))
    out = array(fake, (4, 3))
    copy2d[1, (4, 4)](t, out)
    copy2d[1, (4, 4)](x, y)  # and back: the strided specialization takes C strides too
    assert len(fake.sources) == 2
    assert "x.data[i * x.strides[0] + j * x.strides[1]]" in fake.sources[1]
    assert fake.launches[1][3][:5] == (t.buffer.handle, 0, 4, 3, 1)  # data, start, shape
    assert fake.launches[1][3][5] == 4  # the column stride, in elements
    assert fake.launches[2][3][:6] == (x.buffer.handle, 0, 3, 4, 4, 1)


def test_misaligned_view_is_refused(fake):
    x = array(fake, (4,), offset=2)
    with pytest.raises(ember.ArgumentError, match="not multiples of its item size"):
        axpy[1, 4](1.0, x, x)


@ember.kernel
def scalars(flag, half, shape, out):
    if flag:
        out[0] = half + shape[0] + shape[1]


def test_bool_float16_and_tuple_arguments(fake):
    out = array(fake, (1,))
    scalars[1, 1, "stream", 64](True, np.float16(0.5), (3, 4), out, shared_mem=128)
    assert fake.params[0] == (ember.uint8, ember.float32, ember.int64, ember.int64, PTR,
                              ember.int64, ember.int64)  # fmt: skip
    (launch,) = fake.launches
    assert launch[3][:4] == (True, np.float16(0.5), 3, 4)
    assert launch[4:] == (128, "stream")  # keyword overrides the configured shared_mem
    assert "bool flag = flag_u8 != 0;" in fake.sources[0]


def test_launch_sizes(fake):
    x, y = array(fake, (1000,)), array(fake, (1000,))
    axpy.launch(1000)(1.0, x, y)
    axpy.launch(1000, block=100)(1.0, x, y)
    axpy.launch(0)(1.0, x, y)  # nothing to launch
    assert [launch[1:3] for launch in fake.launches] == [((4, 1, 1), (256, 1, 1)),
                                                        ((10, 1, 1), (100, 1, 1))]  # fmt: skip
    with pytest.raises(ember.LaunchError, match="block must be a positive int"):
        axpy[1, 0]
    with pytest.raises(ember.LaunchError, match=r"axpy\[grid, block\]"):
        axpy[1]


def test_cache_key_is_persistable_and_covers_what_changes_the_binary(fake):
    x = array(fake, (4,))
    key = ember.kernel(axpy.py_func).specialize(2.0, x, x).key
    assert len(key) == 64 and int(key, 16) >= 0
    assert ember.kernel(axpy.py_func).specialize(2.0, x, x).key == key  # stable
    assert ember.kernel(axpy.py_func).specialize(2, x, x).key != key  # argument types
    options = ember.kernel(axpy.py_func, options=("-cl-fast-relaxed-math",))
    assert options.specialize(2.0, x, x).key != key  # options
    program = driver.typed_ir(axpy.captured, [ember.frontend.types.WEAK_FLOAT] * 1 +
                              [ember.frontend.types.Array(ember.float32, 1)] * 2,
                              driver.target_of(fake))  # fmt: skip
    assert ("axpy.SCALE", "3") in program.constants  # captured constants are in the key


def test_dump_prints_the_stages(fake, capsys):
    x = array(fake, (4,))
    with config.override(dump=frozenset({"ir", "source"})):
        ember.kernel(axpy.py_func).specialize(2.0, x, x)
    err = capsys.readouterr().err
    assert "===== ember: ir of kernel 'axpy' =====" in err
    assert "===== ember: source of kernel 'axpy' =====" in err
    assert re.search(r"__kernel void axpy_[0-9a-f]{16}\(", err)


FROZEN = 1.5


@ember.kernel
def uses_global(x):
    x[0] = FROZEN


def test_captured_values_are_frozen_at_first_compile(fake):
    global FROZEN
    uses_global[1, 1](array(fake, (1,)))
    FROZEN = 9.0  # too late: the kernel froze 1.5 when it first compiled
    try:
        uses_global[1, 1](array(fake, (1,), "float64"))
    finally:
        FROZEN = 1.5
    assert len(fake.sources) == 2 and all("1.5" in s for s in fake.sources)


def test_float64_on_an_opencl_device_without_it(fake):
    fake.device = DeviceInfo("fake", 1, "no fp64", 1 << 30, 4, 8, 1024, 65536)
    x = array(fake, (4,))
    with pytest.raises(ember.UnsupportedFeatureError, match=r"uses float64.*cl_khr_fp64"):
        axpy[1, 4](2.0, x, x)  # a Python float is a float64
    axpy[1, 4](np.float32(2.0), x, x)
    assert len(fake.launches) == 1


class FakeCuda(FakeBackend):
    """A CUDA-dialect fake: its 'binary' is the source, but EMBER_DUMP=ptx runs NVRTC."""

    dialect = dialects.get("cuda")
    offline_stages = frozenset({"ptx"})
    device = DeviceInfo("fake", 0, "fake gpu", 1 << 30, 4, 32, 1024, 49152, (9, 0))

    @classmethod
    def inspect_offline(cls, stage, source, target, name, options=()):
        from ember.backends.cuda.backend import CudaBackend

        return CudaBackend.inspect_offline(stage, source, target, name, options)


def test_dump_ptx_on_the_cuda_dialect(capsys):
    pytest.importorskip("cuda.bindings.nvrtc")
    fake = FakeCuda()
    x = array(fake, (4,))
    try:
        with config.override(dump=frozenset({"ptx"})):
            ember.kernel(axpy.py_func).specialize(np.float32(2), x, x)
    except ember.BackendUnavailableError as exc:
        pytest.skip(f"NVRTC unavailable: {exc}")
    err = capsys.readouterr().err
    assert "===== ember: ptx of kernel 'axpy' =====" in err and ".target sm_90" in err
    assert re.search(r'extern "C" __global__ void axpy_[0-9a-f]{16}\(float a', fake.sources[0])
