"""Stream compaction: the elements (or the indices) of a 1-d view where flags are nonzero,
in order - the engine of ``nonzero``, ``x[mask]`` and ``unique``.

Two kernels and a small scan: :func:`~ember.array.scan_kernels.tile_reduce` counts the
flags of each tile, :func:`~ember.array.scan.inclusive_scan` turns the counts into each
tile's end position (its last element, the total, is read by the host to size the result:
the one synchronization, as in every array library), and
:func:`~ember.array.scan_kernels.select` scans each tile's flags again and writes the
selected elements to their positions.  The flags are read twice and the values once.

Where the device has 32-lane warp ballots (:func:`.sort.ranking`), both kernels are those of
:mod:`.compact_kernels`: flags loaded straight into registers, counted and placed with
ballots (no tile staged in shared memory, one block-wide scan per tile).
"""

from __future__ import annotations

from ember import dtypes
from ember.array import compact_kernels as ck
from ember.array import launch, ops, scan, sort
from ember.array import scan_kernels as sk
from ember.array.ndarray import ndarray
from ember.array.scan import inclusive_scan

PARTS_PER_SM = 8  # ballot kernels: blocks (parts of the array) per multiprocessor


def positions(flags: ndarray) -> tuple[ndarray, int, tuple]:
    """``(ends, total, layout)``: ``ends[b]`` = the flags set in parts ``0..b`` of the 1-d
    view ``flags`` (int64, one per part of :func:`layout`), and their total."""
    be = flags.backend
    n = flags.shape[0]
    shape = warp_ops, block, tiles, per, parts = layout(be, n)
    f, fbase, (fstep,) = launch.flat(flags)
    counts = launch.new(be, (1, parts), dtypes.int32)
    if not n:
        counts.fill(0)
    elif warp_ops is not None:
        args = (n, tiles, per, f, fbase, fstep, launch.flat1(counts))
        launch.run(ck.flag_counts(block, warp_ops), parts, block, args)
    else:
        k = sk.tile_reduce(ops.add, dtypes.int32, scan.geometry(be, dtypes.int32), sk.flag)
        args = (1, n, tiles, f, fbase, 0, fstep, launch.flat1(counts))
        launch.run(k, min(tiles, launch.max_grid(be)), block, args)
    ends = launch.new(be, (1, parts), dtypes.int64)
    inclusive_scan(counts, ends, ops.add, dtypes.int64)
    return ends, int(launch.read(ends, (0, parts - 1))), shape


def compact(flags: ndarray, values: ndarray | None = None, dtype=None) -> ndarray:
    """The elements of the 1-d view ``values`` (or, if None, the int64 indices) where the
    1-d view ``flags`` (any dtype) is nonzero, as a new 1-d array (cast to ``dtype``)."""
    return compact_each(flags, [(values, dtype)])[0]


def compact_each(flags: ndarray, wanted: list) -> list[ndarray]:
    """:func:`compact` of each ``(values, dtype)`` in ``wanted`` by the same flags: one
    count of the flags and one synchronization for all of them.  ``values`` may also be an
    int ``first``: the indices counted from ``first`` (``first + i`` for flag ``i``)."""
    be = flags.backend
    ends, total, (warp_ops, block, tiles, per, parts) = positions(flags)
    n = flags.shape[0]
    f, fbase, (fstep,) = launch.flat(flags)
    found = []
    for values, dtype in wanted:
        indices = values is None or isinstance(values, int)
        what = sk.index_of if indices else sk.value_at
        dt = dtypes.int64 if indices else values.dtype
        out = launch.new(be, (total,), dtypes.dtype(dtype) if dtype is not None else dt)
        found.append(out)
        if total == 0:
            continue
        v, vbase, (vstep,) = (f, values or 0, (0,)) if indices else launch.flat(values)
        tail = (f, fbase, fstep, v, vbase, vstep, launch.flat1(ends), out)
        if warp_ops is not None:
            k = ck.select_ballot(block, what, warp_ops)
            launch.run(k, parts, block, (n, tiles, per, *tail))
        else:
            k = sk.select(scan.geometry(be, dtypes.int32), what)
            launch.run(k, min(tiles, launch.max_grid(be)), block, (n, tiles, *tail))
    return found


def layout(be, n: int) -> tuple:
    """``(warp ops or None, block, tiles, per, parts)``: how the compaction kernels cut ``n``
    flags on ``be`` - ``tiles`` of ``block`` threads, ``per`` tiles a part (one count and
    one block each; the portable kernels' parts are their tiles)."""
    warp_ops = sort.ranking(be)
    if warp_ops is None:
        g = scan.geometry(be, dtypes.int32)
        tiles = max(1, -(-n // g.tile))
        return None, g.block, tiles, 1, tiles
    block = 64 if launch.is_cpu(be) else 256  # CPU devices: the emulation, in tests
    tiles = max(1, -(-n // (block * ck.ITEMS)))
    per = -(-tiles // max(1, be.device.multiprocessors * PARTS_PER_SM))
    return warp_ops, block, tiles, per, -(-tiles // per)
