"""Stream-compaction kernels for devices with 32-lane warp ballots (the host side is
:mod:`.compact`; the portable kernels are :func:`.scan_kernels.tile_reduce` and
:func:`.scan_kernels.select`).

A tile is ``BLOCK x ITEMS`` flags; item ``j`` of thread ``tid`` is flag ``j * BLOCK + tid``
(coalesced loads, issued all at once: nothing is staged in shared memory). Each block takes
a *part*: ``per`` consecutive tiles (a few blocks per multiprocessor in all; a block per
tile made 16384 short blocks of a 2**26-element array, and a scan of as many counts). For
each item a warp's ballot is the bit set of its flags: its ``popc`` counts them, and
``popc`` of the bits below a lane is the lane's place among them.

:func:`flag_counts`
    each part's count of nonzero flags (the warps' ``popc``, summed by thread 0).
:func:`select_ballot`
    each warp writes the count of every item to shared memory (``(item, warp)`` order,
    which is element order), the block scans those ``ITEMS x NWARPS`` counts once, and
    every selected element goes to the part's start (``carry[b - 1]``) plus the tiles' before
    it in the part, its (item, warp)'s start and its lane's place: consecutive selected
    elements to consecutive places.

Both take ``WarpOps`` (:mod:`.sort_match`): the hardware's ballot and popcount, or their
shared-memory emulation, with which the tests run these kernels on CPU devices.
"""

from __future__ import annotations

import functools

import ember
from ember import dtypes
from ember.array import ops
from ember.array import scan_kernels as sk
from ember.array.sort_kernels import _named
from ember.array.sort_match import WARP, WarpOps
from ember.compiler.kernel import Kernel

ITEMS = 16  # flags per thread per tile


def _part(per, tiles):
    """``(first, end)``: the tiles of this block's part."""
    first = ember.int64(ember.block_idx.x) * per
    return first, min(first + per, tiles)


@functools.cache
def _loaders(BLOCK: int, what):
    """``(load_flags, load_values)`` for tiles of ``BLOCK x ITEMS`` elements."""
    TILE, WHAT = BLOCK * ITEMS, what

    def load_flags(sel, f, start, step, count, tid):
        """``sel[j]``: whether this thread's item ``j`` (tile element ``j * BLOCK + tid``
        of ``count``; the tile starts at ``f[start]``) is selected.  A full tile's loads
        are unconditional, so that all are in flight before the first is used (each load
        behind a branch and a ballot waited for the one before)."""
        if count == TILE:
            for j in range(ITEMS):
                sel[j] = f[start + (j * BLOCK + tid) * step] != 0
        else:
            for j in range(ITEMS):
                e = j * BLOCK + tid
                sel[j] = e < count and f[start + e * step] != 0

    def load_values(vals, sel, v, vbase, vstep, e0, tid):
        """``vals[j]``: what item ``j`` writes where it is selected (predicated loads, all
        in flight at once; nothing is read for the others)."""
        for j in range(ITEMS):
            vals[j] = vals.dtype(WHAT(v, vbase, vstep, e0 + j * BLOCK + tid) if sel[j] else 0)

    load_flags.__name__ = load_flags.__qualname__ = f"compact_flags_{BLOCK}"
    load_values.__name__ = load_values.__qualname__ = f"compact_{what.__name__}_{BLOCK}"
    return load_flags, load_values


@functools.cache
def flag_counts(block: int, warp_ops: WarpOps) -> Kernel:
    """``counts[b]`` = the nonzero flags of part ``b``: tiles ``b * per`` up to ``(b + 1) *
    per`` (``block * ITEMS`` flags each); one block per part."""
    BALLOT, POPC = warp_ops.ballot, warp_ops.popc
    BLOCK, NWARPS, TILE = block, block // WARP, block * ITEMS
    LOAD = _loaders(block, sk.index_of)[0]

    def flag_counts(n, tiles, per, f, fbase, fstep, counts):
        wcount = ember.shared((NWARPS,), ember.int32)
        wbuf = ember.shared((BLOCK,), ember.int32)
        sel = ember.local((ITEMS,), ember.bool_)
        tid = ember.thread_idx.x
        lane = tid % WARP
        w = tid // WARP
        t, end = _part(per, tiles)
        c = ember.int32(0)
        while t < end:
            e0 = t * TILE
            LOAD(sel, f, fbase + e0 * fstep, fstep, min(n - e0, TILE), tid)
            for j in range(ITEMS):
                c += POPC(BALLOT(sel[j], lane, w, wbuf))
            t += 1
        if lane == 0:
            wcount[w] = c
        ember.barrier()
        if tid == 0:
            total = ember.int32(0)
            for k in range(NWARPS):
                total += wcount[k]
            counts[ember.block_idx.x] = total

    return _named(flag_counts, f"flag_counts_{warp_ops.name}_{BLOCK}x{ITEMS}")


@functools.cache
def select_ballot(block: int, what, warp_ops: WarpOps) -> Kernel:
    """``out[k] = what(v, vbase, vstep, i)`` for the ``k``-th ``i`` whose flag is nonzero;
    ``carry[b]`` = the flags set in parts ``0..b`` (a scan of :func:`flag_counts`); each
    block walks its part's tiles in order from the part's start."""
    BALLOT, POPC = warp_ops.ballot, warp_ops.popc
    BLOCK, NWARPS, TILE, SLOTS = block, block // WARP, block * ITEMS, ITEMS * (block // WARP)
    LOAD_FLAGS, LOAD_VALUES = _loaders(block, what)
    block_scan = sk._tile_functions(ops.add, dtypes.int32, dtypes.int32, BLOCK, 1, WARP,
                                    EMU=warp_ops.name != "hw").block_scan  # fmt: skip

    def select_ballot(n, tiles, per, f, fbase, fstep, v, vbase, vstep, carry, out):
        starts = ember.shared((SLOTS,), ember.int32)
        buf = ember.shared((NWARPS + BLOCK,), ember.int32)
        wbuf = ember.shared((BLOCK,), ember.int32)
        masks = ember.local((ITEMS,), ember.uint32)
        sel = ember.local((ITEMS,), ember.bool_)
        vals = ember.local((ITEMS,), out.dtype)
        tid = ember.thread_idx.x
        lane = tid % WARP
        w = tid // WARP
        below = (ember.uint32(1) << lane) - ember.uint32(1)
        b = ember.block_idx.x
        base = carry[b - 1] if b > 0 else ember.int64(0)
        t, end = _part(per, tiles)
        while t < end:
            e0 = t * TILE
            count = min(n - e0, TILE)
            LOAD_FLAGS(sel, f, fbase + e0 * fstep, fstep, count, tid)
            LOAD_VALUES(vals, sel, v, vbase, vstep, e0, tid)
            for j in range(ITEMS):
                m = BALLOT(sel[j], lane, w, wbuf)
                masks[j] = m
                if lane == 0:
                    starts[j * NWARPS + w] = POPC(m)
            ember.barrier()
            c = starts[tid] if tid < SLOTS else ember.int32(0)
            excl, total = block_scan(buf, c, tid)
            ember.barrier()  # every count read before the starts replace them
            if tid < SLOTS:
                starts[tid] = excl if tid > 0 else ember.int32(0)
            ember.barrier()
            for j in range(ITEMS):
                if sel[j]:
                    m = masks[j]
                    out[base + starts[j * NWARPS + w] + POPC(m & below)] = vals[j]
            ember.barrier()
            base += total
            t += 1

    name = "select_" + ("indices" if what is sk.index_of else "values")
    return _named(select_ballot, f"{name}_{warp_ops.name}_{BLOCK}x{ITEMS}")
