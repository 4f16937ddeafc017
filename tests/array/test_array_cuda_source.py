"""Every array kernel Ember ships compiles for CUDA (NVRTC, sm_90), without a GPU: the
standard precompiled set and the other kernel shapes (strided N-d, 64-bit indices, three
operands, transposes, ranges), so the GPU batch finds no CUDA-only codegen problem."""

from __future__ import annotations

import re

import numpy as np
import pytest
from gpu_standin import H100, nvrtc_available, to_ptx

import ember
from ember.array import broadcast, kernels, ops
from ember.array.standard import standard_kernels

nvrtc = pytest.importorskip("ember.backends.cuda.nvrtc")


pytestmark = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC is not available")


PARTS = 4  # the slow rest of the set in interleaved quarters (xdist workers share them)


def _family(name: str) -> str:
    """A kernel's family: its name up to the first dtype (``map_add``, ``reduce_cols_sum``)."""
    return re.sub(r"_(bool|u?int\d+|float\d+|complex\d+).*", "", name)


def _standard_set_part(part: int) -> list:
    """Part 0: the first kernel of every family (each generated shape compiled once, in CI);
    parts 1..PARTS: the other kernels, interleaved (`slow`: the GPU batch runs them)."""
    firsts, rest, seen = [], [], set()
    for kernel, args in standard_kernels(fp64=True, backend=H100):
        family = _family(kernel.__name__)
        (rest if family in seen else firsts).append((kernel, args))
        seen.add(family)
    return firsts if part == 0 else rest[part - 1 :: PARTS]


@pytest.mark.parametrize(
    "part", [0, *(pytest.param(p, marks=pytest.mark.slow) for p in range(1, PARTS + 1))]
)
def test_the_standard_set_compiles_for_cuda(part):
    for kernel, args in _standard_set_part(part):
        if any(isinstance(a, ember.ndarray) for a in args):
            args = tuple(np.zeros((16, 4), a.dtype.numpy).T if isinstance(a, ember.ndarray)
                         else a for a in args)  # fmt: skip
        assert ".entry" in to_ptx(kernel, args), kernel.__name__


def _strided_args(ndim: int, kinds, dtype):
    dims = (3,) * ndim
    arr = np.zeros(27, dtype)
    st = (0, *(1,) * ndim)
    args = [27, broadcast.divisors(dims), arr, st]
    for is_array in kinds:
        args += [arr, st] if is_array else [1.0, (0,) * (ndim + 1)]
    return tuple(args)


@pytest.mark.parametrize("ndim", [1, 3, 5])
@pytest.mark.parametrize("wide", [False, True])
def test_strided_kernels_compile_for_cuda(ndim, wide):
    for kinds in [(True,), (True, False), (False, True), (True, True, True), (True, False, True)]:
        op = {1: ops.sqrt, 2: ops.maximum, 3: ops.clip}[len(kinds)]
        k = kernels.strided(op, ember.float32, kinds, ndim, wide)
        assert ".entry" in to_ptx(k, _strided_args(ndim, kinds, np.float32))


@pytest.mark.parametrize("dtype", ["float16", "int8", "float64", "bool", "uint64"])
def test_transpose_where_and_shift_kernels_compile_for_cuda(dtype):
    dt = ember.dtype(dtype)
    a = np.zeros((8, 8), dtype)
    assert ".entry" in to_ptx(kernels.transpose2(dt), (a, a.T))
    flat = np.zeros(8, dtype)
    where = kernels.contiguous(ops.where, dt, (True, True, False), ember.bool_)
    assert ".entry" in to_ptx(
        where, (8, flat, np.zeros(8, bool), flat, True if dtype == "bool" else 1)
    )
    if dt.is_integer:
        left, right = ops.shifts(dt.bits)
        for op in (left, right):
            assert ".entry" in to_ptx(
                kernels.contiguous(op, dt, (True, True)), (8, flat, flat, flat)
            )
