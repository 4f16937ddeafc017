"""NVRTC without a GPU: cubins and PTX for explicit architectures, and compile errors."""

from __future__ import annotations

import pytest

pytest.importorskip("cuda.bindings", reason="cuda-bindings is not installed")

from ember.backends.cuda import nvrtc  # noqa: E402
from ember.errors import BackendUnavailableError, CompileError  # noqa: E402

KERNEL = r"""
extern "C" __global__ void axpy(float a, const float* x, float* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
BROKEN = 'extern "C" __global__ void broken(float* y) {\n    y[0] = undefined_name;\n}\n'


@pytest.fixture(scope="module", autouse=True)
def needs_nvrtc():
    try:
        nvrtc.nvrtc_version()
    except BackendUnavailableError as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_cubin_is_an_elf_image(arch):
    cubin = nvrtc.compile_cubin(KERNEL, arch, name="axpy")
    assert isinstance(cubin, bytes)
    assert cubin[:4] == b"\x7fELF"


def test_ptx_names_the_target_and_kernel():
    ptx = nvrtc.compile_ptx(KERNEL, "sm_90")
    assert ".target sm_90" in ptx
    assert ".entry axpy" in ptx


def test_version_and_supported_archs():
    major, minor = nvrtc.nvrtc_version()
    assert major >= 12 and minor >= 0
    assert "sm_90" in nvrtc.supported_archs()


def test_default_options_and_overrides():
    assert nvrtc.build_options("sm_90") == ["--gpu-architecture=sm_90", "-std=c++17"]
    opts = nvrtc.build_options("sm_90", ["-std=c++20", "--use_fast_math"])
    assert opts == ["--gpu-architecture=sm_90", "-std=c++20", "--use_fast_math"]
    assert "--use_fast_math" not in nvrtc.build_options("sm_80")


def test_syntax_error_has_log_and_numbered_source():
    with pytest.raises(CompileError, match="NVRTC_ERROR_COMPILATION") as info:
        nvrtc.compile_cubin(BROKEN, "sm_90", name="broken")
    err = info.value
    assert 'identifier "undefined_name" is undefined' in err.log
    assert "broken.cu(2)" in err.log
    message = str(err)
    assert err.log in message
    assert "2 |     y[0] = undefined_name;" in message
    assert err.source == BROKEN


def test_bad_option_and_bad_arch():
    with pytest.raises(CompileError, match="NVRTC_ERROR_INVALID_OPTION"):
        nvrtc.compile_cubin(KERNEL, "sm_90", options=["--no-such-option"])
    with pytest.raises(CompileError, match="expected 'sm_XX'"):
        nvrtc.compile_cubin(KERNEL, "90")
