"""A RawKernel source in the other backend's language fails with an error that says so."""

from __future__ import annotations

import pytest

import ember
from ember.runtime.rawkernel import source_dialect

CUDA = 'extern "C" __global__ void fill(float* y) { y[threadIdx.x] = 1.0f; }'
OPENCL = "__kernel void fill(__global float* y) { y[get_global_id(0)] = 1.0f; }"
C = "EMBER_KERNEL void fill(float* y) { y[get_global_id(0)] = 1.0f; }"  # the cpu backend


def test_source_dialect():
    assert source_dialect(CUDA) == ("cuda", ["__global__", 'extern "C"', "threadIdx"])
    assert source_dialect(OPENCL) == ("opencl", ["__global ", "__kernel", "get_global_id"])
    assert source_dialect("void f(float* y) { y[0] = 1.0f; }") is None
    assert source_dialect(CUDA + OPENCL) is None  # both: no guess
    assert source_dialect(C) is None  # Ember's C and OpenCL's work-item functions


def test_other_dialect_is_named(backend):
    ours = {"cuda": CUDA, "opencl": OPENCL, "cpu": C}[backend.dialect.name]
    theirs = OPENCL if backend.dialect == "cuda" else CUDA
    language = "OpenCL C" if backend.dialect == "cuda" else "CUDA C\\+\\+"
    y = ember.zeros(4, ember.float32)
    with pytest.raises(ember.CompileError, match=f"this source is {language} .*EMBER_BACKEND="):
        ember.RawKernel(theirs, "fill")[1, 4](y)
    ember.RawKernel(ours, "fill")[1, 4](y)
    assert y.to_numpy().tolist() == [1.0] * 4
