"""The reduction kernels compile for CUDA (NVRTC, sm_90) without a GPU: every pass kind of
every reducer family, with the warp-shuffle trees a GPU gets (the CPU device here builds
shared-memory trees only), so the GPU batch finds no CUDA-only codegen problem.  Also:
the passes a reduction launches are the ones the standard precompiled set holds."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from array_common import check
from gpu_standin import nvrtc_available, to_ptx

import ember
from ember.array import mapreduce, ops, reducers
from ember.array import reduce as red
from ember.array import reductions as r

nvrtc = pytest.importorskip("ember.backends.cuda.nvrtc")

H100 = red.Device(block=256, threads=132 * 2048, max_grid=(1 << 31) - 1, shuffle=True)
EVERY_PASS = tuple(itertools.product(("rows", "cols"), (False, True), (False, True)))


# slow: hundreds of NVRTC compiles (pytest -m slow; the GPU machine's batch runs them)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not nvrtc_available(), reason="NVRTC is not available"),
]


def bigger(a, b):
    return a if a > b else b


def square(v):
    return v * v


def families():
    """(reducer, input dtype, output dtype, mean dtype) of each reducer family."""
    f16, f32, f64, i64 = ember.float16, ember.float32, ember.float64, ember.int64
    yield r.sum_reducer("sum", ember.int8)[0], ember.int8, i64, None
    yield r.sum_reducer("nansum", f16)[0], f16, f16, None
    yield r.sum_reducer("prod", ember.uint16)[0], ember.uint16, ember.uint64, None
    yield r.extremum_reducer(ember.uint64, True), ember.uint64, ember.uint64, None
    yield r.extremum_reducer(f32, False, skip_nan=True), f32, f32, None
    yield r.arg_reducer(f16, True), f16, i64, None
    yield r.arg_reducer(ember.bool_, False), ember.bool_, i64, None
    yield r.stat_reducer("mean", ember.int32)[0], ember.int32, f64, None
    yield r.stat_reducer("var", f64)[0], f64, f64, None
    yield r.stat_reducer("std_mean", f32)[0], f32, f32, f32
    yield r.stat_reducer("mean", f32, skip_nan=True)[0], f32, f32, None
    yield reducers.logical(True), f32, ember.bool_, None
    yield reducers.sum_(i64, i64, reducers.nonzero(i64), "count_nonzero"), f64, i64, None
    yield mapreduce.custom(bigger, ember.int32, None, None, True), ember.int32, ember.int32, None
    zero = np.float32(0).tobytes()
    yield mapreduce.custom(ops.add, f32, square, zero, False), f32, f32, None


def test_every_pass_of_a_float32_sum_compiles_for_cuda():
    R, out = r.sum_reducer("sum", ember.float32)
    for kernel, args in red.examples(R, ember.float32, out, dev=H100, passes=EVERY_PASS):
        assert ".entry" in to_ptx(kernel, args), kernel.__name__


@pytest.mark.parametrize("family", list(range(15)))
def test_every_reducer_family_compiles_for_cuda(family):
    R, dt, out, mean = list(families())[family]
    for kernel, args in red.examples(R, dt, out, mean, dev=H100):
        assert "shfl" in kernel.__name__ or "cols" in kernel.__name__
        assert ".entry" in to_ptx(kernel, args), kernel.__name__


def test_registers_leave_room_for_full_blocks():
    """The hot kernels have no spills, and 64 registers or fewer per thread (four
    256-thread blocks, half the threads an H100 multiprocessor holds)."""
    R, out = r.sum_reducer("sum", ember.float32)
    for kernel, args in red.examples(R, ember.float32, out, dev=H100):
        res = kernel.inspect(*args, stage="resources", dialect="cuda")
        assert res["spill_stores"] == 0 and res["local_bytes"] == 0, (kernel.__name__, res)
        assert res["registers"] <= 64, (kernel.__name__, res)


def test_a_reduction_runs_the_standard_sets_specializations(backend):
    """After a reduction, specializing its standard example compiles nothing new."""
    from ember.precompile import _device_args

    x = ember.asarray(np.arange(50, dtype=np.float32))
    ember.sum(x)
    ember.sum(ember.asarray(np.ones((7, 3), np.float32)), axis=0)
    ember.sum(ember.asarray(np.ones(300_001, np.float32)))  # reduce_flat, then the states
    R, out = r.sum_reducer("sum", ember.float32)
    passes = [red.COMMON_PASSES[k] for k in (0, 3, 4, 2)]
    assert passes[2][0] == "flat"
    for kernel, args in red.examples(R, ember.float32, out, passes=passes):
        before = _compiled(kernel)
        assert before, kernel.__name__
        kernel.specialize(*_device_args(args))
        assert _compiled(kernel) == before, kernel.__name__


def _compiled(kernel) -> int:
    return len({id(spec) for spec in kernel.specializations.values()})


@pytest.fixture
def cuda():
    from ember.runtime import registry

    with registry.use("cuda") as be:
        yield be


@pytest.mark.gpu
def test_more_than_2_to_the_31_elements(cuda):
    """64-bit indexing end to end: sums, argmax and a row reduction past 2**31 elements."""
    n = (1 << 31) + 77
    if cuda.device.total_memory < 6 * n:
        pytest.skip("needs ~6 bytes of device memory per element")
    x = ember.zeros(n, ember.int8)
    x[n - 1] = 5
    x[n - 3] = 5  # the first of equal maxima counts
    x[(1 << 31) + 1] = -2
    check(ember.sum(x), np.int64(8))
    check(ember.argmax(x), np.int64(n - 3))
    check(ember.argmin(x), np.int64((1 << 31) + 1))
    rows = x[: (1 << 31) + 64].reshape(2, (1 << 30) + 32)
    check(ember.min(rows, axis=1), np.array([0, -2], np.int8))
    del x, rows
    y = ember.ones((1 << 31) + 3, ember.float16)
    check(ember.sum(y, dtype=ember.float32), np.float32((1 << 31) + 3))
