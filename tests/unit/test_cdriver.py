"""The CUDA driver through ctypes (ember.backends.cuda.cdriver), with no GPU: it covers every
driver call the backend makes, its constants are the driver's, and it loads nothing until
a call needs the library."""

from __future__ import annotations

import ctypes.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

from ember.backends.cuda import cdriver

SRC = pathlib.Path(cdriver.__file__).parents[2]


def _names_used() -> set[str]:
    """Every ``cu.<name>`` the package's sources use."""
    used: set[str] = set()
    for path in SRC.rglob("*.py"):
        used |= set(re.findall(r"\bcu\.([A-Za-z_][A-Za-z0-9_]*)", path.read_text()))
    return used


def test_every_driver_call_and_constant_the_backend_uses_is_there():
    used = _names_used()
    assert {"cuInit", "cuMemAllocAsync", "cuModuleLoadData", "CUresult"} <= used
    missing = sorted(n for n in used if not hasattr(cdriver, n))
    assert not missing, f"cdriver lacks {missing}"


def test_every_constant_name_the_sources_use_is_there():
    found = {
        (enum, name)
        for path in SRC.rglob("*.py")
        for enum, name in re.findall(r"\b(CU\w+)\.(CU_\w+)", path.read_text())
    }
    text = "".join(p.read_text() for p in SRC.rglob("*.py"))
    found |= {("CUdevice_attribute", n) for n in re.findall(r'"(CU_DEVICE_ATTRIBUTE_\w+)"', text)}
    assert ("CUdevice_attribute", "CU_DEVICE_ATTRIBUTE_WARP_SIZE") in found
    assert not [(e, n) for e, n in found if not hasattr(getattr(cdriver, e), n)]


def test_constants_are_the_bindings_values():
    cu = pytest.importorskip("cuda.bindings.driver")
    enums = ("CUdevice_attribute", "CUfunction_attribute", "CUpointer_attribute", "CUmemorytype",
             "CUevent_flags", "CUstream_flags", "CUdriverProcAddress_flags")  # fmt: skip
    for enum in enums:
        mine = getattr(cdriver, enum)
        names = [n for n in vars(mine) if n.startswith("CU_")]
        assert names
        for name in names:
            assert getattr(mine, name) == int(getattr(getattr(cu, enum), name)), (enum, name)
    for code, name in cdriver._RESULT_NAMES.items():
        assert cu.CUresult(code).name == name
        assert getattr(cdriver.CUresult, name) == code
    assert cdriver.CU_MEMHOSTALLOC_DEVICEMAP == cu.CU_MEMHOSTALLOC_DEVICEMAP
    assert cdriver.CU_MEMHOSTREGISTER_PORTABLE == cu.CU_MEMHOSTREGISTER_PORTABLE


def test_statuses_have_names_and_unknown_ones_say_so():
    from ember.backends.cuda import driver

    assert cdriver.CUresult(2).name == "CUDA_ERROR_OUT_OF_MEMORY"
    assert cdriver.CUresult.CUDA_SUCCESS == 0 and cdriver.CUresult.CUDA_ERROR_NOT_READY == 600
    if driver.cu is cdriver:
        assert driver.result_name(201) == "CUDA_ERROR_INVALID_CONTEXT"
        if ctypes.util.find_library("cuda") is None:  # the driver cannot name it either
            assert driver.result_name(123456) == "CUresult 123456"


def test_handles_are_ints_and_null_is_zero():
    assert cdriver.CUstream() == 0 and cdriver.CUstream(None) == 0
    assert cdriver.CUfunction(0xF00) == 0xF00 and isinstance(cdriver.CUdeviceptr(7), int)


def test_the_convention_of_outputs_and_statuses():
    """``(status,)`` without outputs, ``(status, value)`` with one, the C call taking a
    pointer to the output first (a C function of the same signature stands in)."""
    probe = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t)

    @probe
    def alloc(out, nbytes):
        out[0] = 0x7000 + nbytes
        return 0 if nbytes else 1

    call = cdriver._call("cuMemAlloc", (ctypes.c_uint64,), (ctypes.c_size_t,))
    call.entry.append(alloc)  # the entry point, as if looked up
    assert call(16) == (0, 0x7010)
    assert call(0)[0] == 1
    none = cdriver._call("cuCtxSynchronize", (), ())
    none.entry.append(ctypes.CFUNCTYPE(ctypes.c_int)(lambda: 600))
    assert none() == (600,)


def test_importing_the_backend_loads_neither_the_library_nor_the_bindings():
    code = (
        "import sys, ember.backends.cuda.backend as b, ember.backends.cuda.cdriver as c\n"
        "print(c._library is None, any(m.startswith('cuda.') for m in sys.modules))"
    )
    env = dict(os.environ, EMBER_WARMUP="0", EMBER_CUDA_DRIVER="ctypes")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]


@pytest.mark.skipif(ctypes.util.find_library("cuda") is not None, reason="a driver is here")
def test_without_a_driver_the_first_call_raises_oserror():
    with pytest.raises(OSError):
        cdriver.cuDriverGetVersion()


def test_a_value_that_does_not_fit_its_c_type_is_refused_before_the_driver():
    """ctypes alone would pass -1 on as 4294967295; the calls raise as the bindings do."""
    seen = []
    sig = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int)
    setter = cdriver._call("cuFuncSetAttribute", (), (ctypes.c_void_p, ctypes.c_int, ctypes.c_int))
    setter.entry.append(sig(lambda f, a, v: seen.append(v) or 0))
    assert setter(0, 8, 49152) == (0,)
    for bad in (2**31, -(2**31) - 1):
        with pytest.raises(OverflowError, match="argument 3"):
            setter(0, 8, bad)
    assert seen == [49152]
    with pytest.raises(OverflowError, match="c_uint"):
        cdriver.cuLaunchKernel(0, 1, 1, 1, 32, 1, 1, -1, 0, 0, 0)


def test_the_allocation_calls_in_c_keep_the_convention():
    """The stub's cuMemAllocAsync / cuMemFreeAsync callers (a C-callable stand-in here)."""
    stub = pytest.importorskip("ember.backends.cuda._ccall")
    seen = []
    u64, size, ptr = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p

    @ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(u64), size, ptr)
    def alloc(out, nbytes, stream):
        out[0] = 0x1000 + nbytes
        seen.append(stream)
        return 0 if nbytes < 64 else 2

    @ctypes.CFUNCTYPE(ctypes.c_int, u64, ptr)
    def free(pointer, stream):
        seen.append((pointer, stream))
        return 600

    a, f = (ctypes.cast(fn, ptr).value for fn in (alloc, free))
    assert stub.alloc_async(a, 16, 7) == (0, 0x1010)
    assert stub.alloc_async(a, 64, None) == (2, 0x1040)
    assert stub.free_async(f, 2**64 - 1, 9) == (600,)
    assert seen == [7, None, (2**64 - 1, 9)]
    for bad in ((a, -1, 0), (a, 1.5, 0), (a, 16)):
        with pytest.raises((OverflowError, TypeError)):
            stub.alloc_async(*bad)
    with pytest.raises(OverflowError):
        stub.free_async(f, -5, 0)
    assert len(seen) == 3  # nothing refused reached the driver


def test_the_one_handle_calls_in_c_keep_the_convention():
    stub = pytest.importorskip("ember.backends.cuda._ccall")
    seen = []

    @ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
    def query(handle):
        seen.append(handle)
        return 600 if handle else 0

    q = ctypes.cast(query, ctypes.c_void_p).value
    assert stub.handle_call(q, 0xABC) == (600,)
    assert stub.handle_call(q, None) == (0,)
    assert seen == [0xABC, None]
    with pytest.raises(TypeError):
        stub.handle_call(q)
    assert set(cdriver._NATIVE) <= set(cdriver._CALLS)
