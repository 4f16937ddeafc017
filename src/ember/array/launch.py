"""Host-side helpers of the array kernels that are not elementwise (scans, sorts, searches,
gathers): new arrays on an array's device, operands as flat views plus element strides,
launch geometry chosen from what the device reports, and one launch call.

Kernels take an N-d view as a 1-d contiguous view of the span it touches plus a base and
strides in elements (the convention of the strided elementwise kernels), so one compiled
specialization serves every layout, negative strides included.
"""

from __future__ import annotations

import functools
import math

from ember.array import broadcast
from ember.array.ndarray import ndarray
from ember.dtypes import DType
from ember.runtime.memory import allocate, copy_out


def new(be, shape: tuple[int, ...], dtype: DType) -> ndarray:
    """An uninitialized C-contiguous array on backend ``be``."""
    return ndarray(tuple(shape), dtype, allocate(be, math.prod(shape) * dtype.itemsize), be)


def zeroed(be, shape: tuple[int, ...], dtype: DType) -> ndarray:
    """A zero-filled C-contiguous array on ``be`` (a device memset)."""
    out = new(be, shape, dtype)
    if out.nbytes:
        be.fill_zero(out.buffer, out.offset, out.nbytes)
    return out


def flat(x: ndarray) -> tuple[ndarray, int, tuple[int, ...]]:
    """``(view, base, strides)``: element ``idx`` of ``x`` is ``view[base + sum(idx *
    strides)]``, where ``view`` is a 1-d contiguous view of exactly the span ``x`` touches
    and ``strides`` are in elements."""
    isz = x.dtype.itemsize
    if len(x.strides) == 1 and x.strides[0] == isz:  # itself: its launch view is kept
        return x, 0, (1,)
    strides = tuple(s // isz for s in x.strides)
    if x.size == 0:
        low, extent = 0, 0
    else:
        low, high = broadcast.span(x.shape, strides)
        extent = high - low + 1
    view = ndarray((extent,), x.dtype, x.buffer, x.backend, (isz,), x.offset + low * isz)
    view._c = True
    return view, -low, strides


def flat1(x: ndarray, count: int | None = None, first: int = 0) -> ndarray:
    """A C-contiguous ``x`` as a 1-d view of its elements (``count`` of them from element
    ``first``: all by default); ``x`` itself where it is that view already, so that its
    launch view, made at its first launch, is kept."""
    n = x.size - first if count is None else count
    isz = x.dtype.itemsize
    if not first and len(x.shape) == 1 and x.shape[0] == n and x.strides[0] == isz:
        return x
    v = ndarray((n,), x.dtype, x.buffer, x.backend, (isz,), x.offset + first * isz)
    v._c = True
    return v


def row(x: ndarray, i: int) -> ndarray:
    """Row ``i`` of the C-contiguous 2-d ``x`` as a 1-d view (``x[i]`` without the
    indexing machinery: a radix sort takes a few per pass)."""
    n = x.shape[1]
    return flat1(x, n, i * n)


def is_cpu(be) -> bool:
    """Whether ``be``'s device is a CPU (work-groups on a thread pool: few, large ones)."""
    return be.device.kind == "CPU"


# threads a multiprocessor holds at once (every NVIDIA GPU since Maxwell but a few with
# 1024 or 1536: they get two waves instead of one)
THREADS_PER_SM = 2048


@functools.lru_cache(maxsize=4096)  # (one entry per size: bounded)
def grid(be, n: int, block: int, whole: bool = False) -> int:
    """Blocks of ``block`` threads for a grid-stride loop over ``n`` items: one item a
    thread up to one full wave of the device (every multiprocessor full), then more items a
    thread; at least one block.  H200, flags of 2**24 sorted int32 (``run_starts``): a
    block per 256 items 68 us, one wave (132 x 8 blocks) 34.6, two 36.3, half a wave 58.9.
    ``whole``: one item a thread however many (random gathers: more loads in flight).
    CPU devices: :func:`max_grid`."""
    if is_cpu(be) or whole:
        cap = max_grid(be)
    else:
        cap = max(1, be.device.multiprocessors) * max(1, THREADS_PER_SM // block)
    return max(1, min(-(-n // block), cap))


def max_grid(be) -> int:
    """The most blocks worth launching for a grid-stride loop on ``be``'s device."""
    if is_cpu(be):
        return max(1, be.device.multiprocessors) * 8
    return (1 << 31) - 1


def run(kernel, grid: int, block: int, args: tuple) -> None:
    """Launch ``kernel`` on ``grid`` x ``block`` threads (1-d) with ``args``, through its
    inline cache (:meth:`~ember.compiler.kernel.Kernel.launch_args`; H200: the launches of
    a sort pass, ~17 arguments, took 14-38 us of host time when each computed the
    signature)."""
    kernel.launch_args((grid if grid > 1 else 1, 1, 1), (block, 1, 1), args)


def read(x: ndarray, index: tuple[int, ...]):
    """One element of ``x`` as a NumPy scalar: a copy to the host that Ember's own
    operations make on purpose (a result's size, a range), outside the scalar-indexing
    policy.  The element's bytes are copied straight from its offset (a view of it and
    ``to_numpy`` took twice the host time)."""
    import numpy as np

    offset = x.offset
    for i, n, stride in zip(index, x.shape, x.strides, strict=True):
        if not -n <= i < n:
            raise IndexError(f"index {index} is out of bounds for shape {x.shape}")
        offset += (i + n if i < 0 else i) * stride
    out = np.empty((), x.dtype.numpy)
    copy_out(x.backend, out, x.buffer, offset)
    return out[()]
