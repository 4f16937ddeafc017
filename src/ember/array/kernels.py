"""The generic elementwise kernels, written in Ember's kernel language.

Every elementwise array operation (arithmetic, comparisons, math, casts, fills, copies) runs
one of the kernels below, made by a factory for one *operator* (a plain Python function,
compiled as a device function), one *compute dtype* ``CT`` and one pattern of operand kinds
(array or scalar); the factories are memoized, so each combination is one
:class:`~ember.compiler.kernel.Kernel` whose specializations (per argument dtypes) are
compiled on first use.  This is GPUArrays.jl's design: the array library is a handful of
generic kernels parametrized by operator.

``map_contiguous`` (one template for one, two and three operands: ``*ops``)
    Every array operand is a 1-d contiguous view of the same ``n`` elements (the same-shape
    fast path, and any broadcast that coalesces to it).  A grid-stride loop over tiles of
    ``UNROLL`` elements per thread: each thread issues all its loads before its stores, so
    several memory requests are in flight per thread (PyTorch's elementwise kernels unroll
    4 the same way).  The tile is unrolled with ``ember.static_range`` into a per-thread
    array indexed by constants only, which the device compiler keeps in registers.
``map_strided`` (strided, N-d; one template for every operand count)
    The general broadcast: output and inputs have any strides (0 for broadcast axes,
    negative for reversed views).  Each operand comes as a 1-d view starting at the lowest
    element it touches plus a tuple ``(base, stride_0, ..., stride_{nd-1})`` in elements;
    the linear index is split into a multi-index innermost axis first (one ``offsets``
    device function for every operand), ``UNROLL`` elements per thread as above.  Index arithmetic
    is ``uint32`` when every operand spans fewer than 2**31 elements, with division by
    precomputed magic numbers (Granlund & Montgomery 1994; PyTorch's ``IntDivider``), and
    ``uint64`` with plain division otherwise.  Unsigned arithmetic wraps, so negative
    strides work: the final offsets are exact.
``transpose2``
    A copy between 2-d layouts whose fast axes differ (``x.T.copy()``): 32x32 tiles through
    shared memory, so that reads and writes are both coalesced.

The captured ``OP``, ``CT``, per-operand compute types ``CTS``, loaders and ``NDIM`` are
compile-time constants (part of each kernel's cache key): ``len(ops)`` and the
``static_range`` loops are resolved at compile time, so each factory call compiles exactly
the code the old hand-unrolled 1/2/3-operand bodies spelled out.  The kernel's name says
which operator, compute type and operand kinds it was made for, so profiles and cache keys
tell them apart.
"""

from __future__ import annotations

import functools

import ember
from ember.compiler.kernel import Kernel
from ember.dtypes import DType

UNROLL = 4  # elements per thread per tile (a compile-time constant: the loops are unrolled)
TILE = 32  # transpose tile edge
TILE_ROWS = 8  # threads along y in a transpose block: each copies TILE // TILE_ROWS rows
TILE_PAD = 33  # TILE + 1: a padded row, so that column reads hit distinct shared banks


# --------------------------------------------------------------------- operand loaders
def elem(x, i):
    """An array operand: its element ``i``."""
    return x[i]


def scal(x, i):
    """A scalar operand: the same value for every element."""
    return x


def loader(is_array: bool):
    return elem if is_array else scal


def _named(fn, name: str) -> Kernel:
    fn.__name__ = name
    fn.__qualname__ = name
    return Kernel(fn)


def kernel_name(prefix: str, op, ct: DType, kinds: tuple[bool, ...], extra: str = "") -> str:
    """``map2_add_float32_as``: kind letters are ``a`` (array) and ``s`` (scalar)."""
    letters = "".join("a" if k else "s" for k in kinds)
    name = op.__name__.removeprefix("ew_")
    return f"{prefix}_{name}_{ct.name}_{letters}{extra}"


def apply(OP, CTS, row):
    """``OP`` on one element's operands (``row``: the operands in the compute type, each
    converted back to its operand's compute type; ``len(CTS)`` is known at compile time, so
    only one branch is compiled)."""
    if len(CTS) == 1:
        return OP(CTS[0](row[0]))
    elif len(CTS) == 2:
        return OP(CTS[0](row[0]), CTS[1](row[1]))
    else:
        return OP(CTS[0](row[0]), CTS[1](row[1]), CTS[2](row[2]))


# --------------------------------------------------------------------- contiguous
def contiguous(op, ct: DType, kinds: tuple[bool, ...], c0: DType | None = None) -> Kernel:
    """The contiguous kernel of ``op`` computing in ``ct`` on operands of ``kinds``
    (three operands: the first is cast to ``c0``, e.g. ``bool`` for ``where``)."""
    return _contiguous(op, ct, tuple(kinds), c0)


def _computes(ct: DType, c0: DType | None, n: int) -> tuple:
    """The compute type of each operand: ``ct``, the first ``c0`` (``where``'s condition)."""
    return ((c0 or ct),) + (ct,) * (n - 1) if n == 3 else (ct,) * n


@functools.cache
def _contiguous(op, ct: DType, kinds: tuple[bool, ...], c0: DType | None) -> Kernel:
    loaders = tuple(map(loader, kinds))
    fn = _contiguous_template(op, ct, _computes(ct, c0, len(kinds)), loaders)
    return _named(fn, kernel_name("map", op, ct, kinds))


def _contiguous_template(OP, CT, CTS, LOADERS):
    # Every operand is a 1-d view of the same n elements (or a scalar).  A grid-stride loop
    # over tiles of UNROLL elements per thread; the tile's loads all come before its stores,
    # so each thread has UNROLL requests per operand in flight.  The local array is indexed
    # by compile-time constants only: it lives in registers.
    def map_contiguous(n, out, *ops):
        bd = ember.block_dim.x
        i = ember.block_idx.x * bd * UNROLL + ember.thread_idx.x
        step = ember.grid_dim.x * bd * UNROLL
        vals = ember.local((UNROLL, len(ops)), CT)
        while i + (UNROLL - 1) * bd < n:
            for u in ember.static_range(UNROLL):
                for k in ember.static_range(len(ops)):
                    vals[u, k] = CT(CTS[k](LOADERS[k](ops[k], i + u * bd)))
            for u in ember.static_range(UNROLL):
                out[i + u * bd] = out.dtype(apply(OP, CTS, vals[u]))
            i += step
        while i < n:  # this thread's part of the last, partial tile
            for k in ember.static_range(len(ops)):
                vals[0, k] = CT(CTS[k](LOADERS[k](ops[k], i)))
            out[i] = out.dtype(apply(OP, CTS, vals[0]))
            i += bd

    return map_contiguous


# --------------------------------------------------------------------- strided
def div_magic(r, dims, k):
    """``r // dims[3k]`` for ``r < 2**31``: multiply by the magic number, shift."""
    return ember.uint32((ember.uint64(r) * ember.uint64(dims[3 * k + 1])) >> dims[3 * k + 2])


def div_plain(r, dims, k):
    """``r // dims[3k]`` in 64-bit unsigned arithmetic (arrays of 2**31 elements or more)."""
    return r // ember.uint64(dims[3 * k])


def strided(
    op, ct: DType, kinds: tuple[bool, ...], ndim: int, wide: bool, c0: DType | None = None
) -> Kernel:
    """The N-d strided kernel of ``op`` for ``ndim`` axes (``wide``: 64-bit indices)."""
    return _strided(op, ct, tuple(kinds), ndim, bool(wide), c0)


@functools.cache
def _strided(op, ct, kinds, ndim, wide, c0) -> Kernel:
    index = ember.uint64 if wide else ember.uint32
    div = div_plain if wide else div_magic
    offsets = _offsets(ndim, index, div)
    loaders = tuple(map(loader, kinds))
    fn = _strided_template(op, ct, _computes(ct, c0, len(kinds)), loaders, offsets, index)
    extra = f"_{ndim}d" + ("_wide" if wide else "")
    return _named(fn, kernel_name("smap", op, ct, kinds, extra))


def _offsets(NDIM, U, DIV):
    """The device function writing the element offsets of every operand (output first)
    for linear index ``i`` into ``offs``; ``strides`` holds ``(base, stride_0, ...)`` per
    operand."""

    def offsets(i, dims, strides, offs):
        r = U(i)
        for k in ember.static_range(len(strides)):
            offs[k] = U(strides[k][0])
        for ax in ember.static_range(NDIM - 1, 0, -1):  # innermost axis first
            q = DIV(r, dims, ax)
            m = r - q * U(dims[3 * ax])
            for k in ember.static_range(len(strides)):
                offs[k] += m * U(strides[k][ax + 1])
            r = q
        for k in ember.static_range(len(strides)):
            offs[k] += r * U(strides[k][1])

    offsets.__name__ = offsets.__qualname__ = f"offsets_{NDIM}d_{U.name}"
    return offsets


def _strided_template(OP, CT, CTS, LOADERS, OFF, U):
    # The general broadcast: operands come as (view, (base, stride_0, ...)) pairs after the
    # output's; UNROLL elements per thread per step as in the contiguous kernel, every
    # offset and load of the tile before its stores.
    def map_strided(n, dims, out, so, *operands):
        ops = operands[::2]
        strides = (so,) + operands[1::2]
        bd = ember.block_dim.x
        i = ember.block_idx.x * bd * UNROLL + ember.thread_idx.x
        step = ember.grid_dim.x * bd * UNROLL
        offs = ember.local((UNROLL, len(strides)), U)
        vals = ember.local((UNROLL, len(ops)), CT)
        while i + (UNROLL - 1) * bd < n:
            for u in ember.static_range(UNROLL):
                OFF(i + u * bd, dims, strides, offs[u])
            for u in ember.static_range(UNROLL):
                for k in ember.static_range(len(ops)):
                    vals[u, k] = CT(CTS[k](LOADERS[k](ops[k], offs[u, k + 1])))
            for u in ember.static_range(UNROLL):
                out[offs[u, 0]] = out.dtype(apply(OP, CTS, vals[u]))
            i += step
        while i < n:
            OFF(i, dims, strides, offs[0])
            for k in ember.static_range(len(ops)):
                vals[0, k] = CT(CTS[k](LOADERS[k](ops[k], offs[0, k + 1])))
            out[offs[0, 0]] = out.dtype(apply(OP, CTS, vals[0]))
            i += bd

    return map_strided


def prepare() -> None:
    """Read and parse the sources of the map kernels' templates and device functions now.

    :func:`~ember.frontend.capture.capture` keeps a source per code object, and every map
    kernel shares these: the first one made reads this file back and tokenizes it
    (4-6 ms on the build machine).  :func:`ember.startup.join` calls this while it waits
    for the driver, where that time is free."""
    from ember.frontend import capture

    for fn in (_contiguous_template(None, None, (), ()), elem, scal, apply):
        capture.capture(fn)


# --------------------------------------------------------------------- transpose
@functools.cache
def transpose2(ct: DType) -> Kernel:
    """Copy (and cast to the output's dtype) a 2-d array whose axis 0 is the fast one into
    a 2-d array whose axis 1 is, through ``TILE`` x ``TILE`` tiles of shared memory."""
    # 16-bit float tiles are kept as float32: OpenCL devices without cl_khr_fp16 have no
    # __local half (and the values convert exactly)
    tile = ember.float32 if ct.is_narrow else ct
    return _named(_transpose2(tile), f"transpose2_{ct.name}")


def _transpose2(CT):
    def transpose2(out, a):
        tile = ember.shared((TILE, TILE_PAD), CT)
        rows = out.shape[0]
        cols = out.shape[1]
        tx = ember.thread_idx.x
        ty = ember.thread_idx.y
        r0 = ember.block_idx.x * TILE
        c0 = ember.block_idx.y * TILE
        while c0 < cols:
            for k in range(0, TILE, TILE_ROWS):  # read down columns of a: rows are fast
                r = r0 + tx
                c = c0 + ty + k
                if r < rows and c < cols:
                    tile[ty + k, tx] = CT(a[r, c])
            ember.barrier()
            for k in range(0, TILE, TILE_ROWS):  # write along rows of out
                r = r0 + ty + k
                c = c0 + tx
                if r < rows and c < cols:
                    out[r, c] = out.dtype(tile[tx, ty + k])
            ember.barrier()
            c0 += ember.grid_dim.y * TILE

    return transpose2


# --------------------------------------------------------------------- ranges
@functools.cache
def linear(ct: DType, floor: bool = False) -> Kernel:
    """``out[i] = start + i * step`` computed in ``ct`` (``arange``, ``linspace``); element
    ``last`` is ``stop`` exactly (``linspace`` with its endpoint).  ``floor``: each value
    rounded down before it is converted to ``out``'s dtype (NumPy's ``linspace`` into
    integers: ``linspace(-5, 5, 4, dtype=int)`` is ``[-5, -2, 1, 5]``)."""
    return _named(_linear(ct, floor), f"linear_{ct.name}" + ("_floor" if floor else ""))


def _linear(CT, FLOOR):
    def linear(n, out, start, step, last, stop):
        i = ember.global_id()
        gs = ember.global_size()
        while i < n:
            if i == last:
                v = CT(stop)
            else:
                v = CT(start) + CT(i) * CT(step)
            if FLOOR:
                v = ember.lang.floor(v)
            out[i] = out.dtype(v)
            i += gs

    return linear
