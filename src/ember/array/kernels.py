"""The generic elementwise kernels, written in Ember's kernel language.

Every elementwise array operation (arithmetic, comparisons, math, casts, fills, copies) runs
one of the kernels below, made by a factory for one *operator* (a plain Python function,
compiled as a device function), one *compute dtype* ``CT`` and one pattern of operand kinds
(array or scalar); the factories are memoized, so each combination is one
:class:`~ember.compiler.kernel.Kernel` whose specializations (per argument dtypes) are
compiled on first use.  This is GPUArrays.jl's design: the array library is a handful of
generic kernels parametrized by operator.

``map1/map2/map3`` (contiguous)
    Every array operand is a 1-d contiguous view of the same ``n`` elements (the same-shape
    fast path, and any broadcast that coalesces to it).  A grid-stride loop over tiles of
    ``UNROLL`` elements per thread: each thread issues all its loads before its stores, so
    several memory requests are in flight per thread (PyTorch's elementwise kernels unroll
    4 the same way).
``smap1/smap2/smap3`` (strided, N-d)
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

The captured ``OP``, ``CT``, loaders and ``NDIM`` are compile-time constants (part of each
kernel's cache key); the kernel's name says which operator, compute type and operand kinds
it was made for, so profiles and cache keys tell them apart.
"""

from __future__ import annotations

import functools

import ember
from ember.compiler.kernel import Kernel
from ember.dtypes import DType

UNROLL = 4  # elements per thread per tile in the contiguous kernels (written out below)
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


# --------------------------------------------------------------------- contiguous
def contiguous(op, ct: DType, kinds: tuple[bool, ...], c0: DType | None = None) -> Kernel:
    """The contiguous kernel of ``op`` computing in ``ct`` on operands of ``kinds``
    (three operands: the first is cast to ``c0``, e.g. ``bool`` for ``where``)."""
    return _contiguous(op, ct, tuple(kinds), c0)


@functools.cache
def _contiguous(op, ct: DType, kinds: tuple[bool, ...], c0: DType | None) -> Kernel:
    loaders = tuple(map(loader, kinds))
    if len(kinds) == 3:
        fn = _contiguous3(op, c0 or ct, ct, *loaders)
    else:
        fn = (_contiguous1, _contiguous2)[len(kinds) - 1](op, ct, *loaders)
    return _named(fn, kernel_name("map", op, ct, kinds))


def _contiguous1(OP, CT, L0):
    def map1(n, out, a):
        bd = ember.block_dim.x
        i = ember.block_idx.x * bd * 4 + ember.thread_idx.x
        step = ember.grid_dim.x * bd * 4
        while i + 3 * bd < n:
            i1 = i + bd
            i2 = i1 + bd
            i3 = i2 + bd
            a0 = L0(a, i)
            a1 = L0(a, i1)
            a2 = L0(a, i2)
            a3 = L0(a, i3)
            out[i] = out.dtype(OP(CT(a0)))
            out[i1] = out.dtype(OP(CT(a1)))
            out[i2] = out.dtype(OP(CT(a2)))
            out[i3] = out.dtype(OP(CT(a3)))
            i += step
        while i < n:  # this thread's part of the last, partial tile
            out[i] = out.dtype(OP(CT(L0(a, i))))
            i += bd

    return map1


def _contiguous2(OP, CT, L0, L1):
    def map2(n, out, a, b):
        bd = ember.block_dim.x
        i = ember.block_idx.x * bd * 4 + ember.thread_idx.x
        step = ember.grid_dim.x * bd * 4
        while i + 3 * bd < n:
            i1 = i + bd
            i2 = i1 + bd
            i3 = i2 + bd
            a0 = L0(a, i)
            a1 = L0(a, i1)
            a2 = L0(a, i2)
            a3 = L0(a, i3)
            b0 = L1(b, i)
            b1 = L1(b, i1)
            b2 = L1(b, i2)
            b3 = L1(b, i3)
            out[i] = out.dtype(OP(CT(a0), CT(b0)))
            out[i1] = out.dtype(OP(CT(a1), CT(b1)))
            out[i2] = out.dtype(OP(CT(a2), CT(b2)))
            out[i3] = out.dtype(OP(CT(a3), CT(b3)))
            i += step
        while i < n:
            out[i] = out.dtype(OP(CT(L0(a, i)), CT(L1(b, i))))
            i += bd

    return map2


def _contiguous3(OP, C0, CT, L0, L1, L2):
    # three operands (where, clip) are rarer: one element per thread per step
    def map3(n, out, a, b, c):
        i = ember.global_id()
        step = ember.global_size()
        while i < n:
            out[i] = out.dtype(OP(C0(L0(a, i)), CT(L1(b, i)), CT(L2(c, i))))
            i += step

    return map3


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
    if len(kinds) == 3:
        fn = _strided3(op, c0 or ct, ct, offsets, *loaders)
    else:
        fn = (_strided1, _strided2)[len(kinds) - 1](op, ct, offsets, *loaders)
    extra = f"_{ndim}d" + ("_wide" if wide else "")
    return _named(fn, kernel_name("smap", op, ct, kinds, extra))


def _offsets(NDIM, U, DIV):
    """The device function giving the element offsets of the output and up to three
    operands for linear index ``i`` (missing operands pass zero strides)."""

    def offsets(i, dims, so, sa, sb, sc):
        r = U(i)
        jo = U(so[0])
        ja = U(sa[0])
        jb = U(sb[0])
        jc = U(sc[0])
        for k in range(NDIM - 1, 0, -1):  # innermost axis first
            q = DIV(r, dims, k)
            m = r - q * U(dims[3 * k])
            jo += m * U(so[k + 1])
            ja += m * U(sa[k + 1])
            jb += m * U(sb[k + 1])
            jc += m * U(sc[k + 1])
            r = q
        return jo + r * U(so[1]), ja + r * U(sa[1]), jb + r * U(sb[1]), jc + r * U(sc[1])

    offsets.__name__ = offsets.__qualname__ = f"offsets_{NDIM}d_{U.name}"
    return offsets


# The strided kernels process UNROLL elements per thread per step, as the contiguous ones:
# all offsets and loads before the stores, so each thread has several loads in flight.
def _strided1(OP, CT, OFF, L0):
    def smap1(n, dims, out, so, a, sa):
        bd = ember.block_dim.x
        i = ember.block_idx.x * bd * 4 + ember.thread_idx.x
        step = ember.grid_dim.x * bd * 4
        while i + 3 * bd < n:
            o0, p0, _, _ = OFF(i, dims, so, sa, so, so)
            o1, p1, _, _ = OFF(i + bd, dims, so, sa, so, so)
            o2, p2, _, _ = OFF(i + 2 * bd, dims, so, sa, so, so)
            o3, p3, _, _ = OFF(i + 3 * bd, dims, so, sa, so, so)
            a0 = L0(a, p0)
            a1 = L0(a, p1)
            a2 = L0(a, p2)
            a3 = L0(a, p3)
            out[o0] = out.dtype(OP(CT(a0)))
            out[o1] = out.dtype(OP(CT(a1)))
            out[o2] = out.dtype(OP(CT(a2)))
            out[o3] = out.dtype(OP(CT(a3)))
            i += step
        while i < n:
            o, p, _, _ = OFF(i, dims, so, sa, so, so)
            out[o] = out.dtype(OP(CT(L0(a, p))))
            i += bd

    return smap1


def _strided2(OP, CT, OFF, L0, L1):
    def smap2(n, dims, out, so, a, sa, b, sb):
        bd = ember.block_dim.x
        i = ember.block_idx.x * bd * 4 + ember.thread_idx.x
        step = ember.grid_dim.x * bd * 4
        while i + 3 * bd < n:
            o0, p0, q0, _ = OFF(i, dims, so, sa, sb, so)
            o1, p1, q1, _ = OFF(i + bd, dims, so, sa, sb, so)
            o2, p2, q2, _ = OFF(i + 2 * bd, dims, so, sa, sb, so)
            o3, p3, q3, _ = OFF(i + 3 * bd, dims, so, sa, sb, so)
            a0 = L0(a, p0)
            a1 = L0(a, p1)
            a2 = L0(a, p2)
            a3 = L0(a, p3)
            b0 = L1(b, q0)
            b1 = L1(b, q1)
            b2 = L1(b, q2)
            b3 = L1(b, q3)
            out[o0] = out.dtype(OP(CT(a0), CT(b0)))
            out[o1] = out.dtype(OP(CT(a1), CT(b1)))
            out[o2] = out.dtype(OP(CT(a2), CT(b2)))
            out[o3] = out.dtype(OP(CT(a3), CT(b3)))
            i += step
        while i < n:
            o, p, q, _ = OFF(i, dims, so, sa, sb, so)
            out[o] = out.dtype(OP(CT(L0(a, p)), CT(L1(b, q))))
            i += bd

    return smap2


def _strided3(OP, C0, CT, OFF, L0, L1, L2):
    def smap3(n, dims, out, so, a, sa, b, sb, c, sc):
        i = ember.global_id()
        step = ember.global_size()
        while i < n:
            o, p, q, t = OFF(i, dims, so, sa, sb, sc)
            out[o] = out.dtype(OP(C0(L0(a, p)), CT(L1(b, q)), CT(L2(c, t))))
            i += step

    return smap3


# --------------------------------------------------------------------- transpose
@functools.cache
def transpose2(ct: DType) -> Kernel:
    """Copy (and cast to the output's dtype) a 2-d array whose axis 0 is the fast one into
    a 2-d array whose axis 1 is, through ``TILE`` x ``TILE`` tiles of shared memory."""
    # float16 tiles are kept as float32: OpenCL devices without cl_khr_fp16 have no
    # __local half (and the values convert exactly)
    tile = ember.float32 if ct is ember.float16 else ct
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
def linear(ct: DType) -> Kernel:
    """``out[i] = start + i * step`` computed in ``ct`` (``arange``, ``linspace``); element
    ``last`` is ``stop`` exactly (``linspace`` with its endpoint)."""
    return _named(_linear(ct), f"linear_{ct.name}")


def _linear(CT):
    def linear(n, out, start, step, last, stop):
        i = ember.global_id()
        gs = ember.global_size()
        while i < n:
            if i == last:
                out[i] = out.dtype(CT(stop))
            else:
                out[i] = out.dtype(CT(start) + CT(i) * CT(step))
            i += gs

    return linear
