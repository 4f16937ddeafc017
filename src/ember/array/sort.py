"""Sorting: ``sort`` and ``argsort`` (stable; ``descending=``; along any axis), as Ember
kernels (:mod:`ember.array.sort_kernels`).

Rows of at most :data:`SEGMENT` elements are sorted one block per row (a bitonic network in
shared memory); longer ones by an LSD radix sort of their keys, 8 bits per pass, one pass
per byte of the dtype (float32: 4 passes): on devices with 32-lane warp ballots and
``forward_progress`` (CUDA) one kernel per pass (onesweep, after one histogram of every
pass), elsewhere an upsweep (tile digit counts), a scan and a ranking/scatter kernel per
pass.  ``argsort`` carries the original indices.  Rows longer than :data:`SEGMENT` of a
many-row array are radix-sorted one row at a time.  See ``docs/design/scans-and-sorts.md``.

NumPy's order: NaNs last (first with ``descending=True``, where they count as the largest
values, as in PyTorch and array-api-strict); ``-0.0`` and ``0.0`` are equal (stable order)
for ``argsort``; ``sort`` returns them ``-0.0`` first (the values are equal either way).
All sorts are stable: ``kind=`` and ``stable=`` are accepted and change nothing.
"""

from __future__ import annotations

import functools
import math

from ember import dtypes
from ember.array import launch, manipulation, ops
from ember.array import sort_kernels as kern
from ember.array import sort_match as match
from ember.array.ndarray import ndarray, not_on_device
from ember.array.scan import inclusive_scan
from ember.dtypes import DType

SEGMENT = 2048  # rows up to this long: one block each (bitonic); longer: radix passes
NETWORKS = (64, 512, SEGMENT)  # bitonic network sizes (few: each is a compiled kernel)


STATIC_SHARED = 48 * 1024  # the most static shared memory a block may declare (CUDA)
# keys per thread of the warp-match passes, at most, without and with a payload: each keeps
# its keys and ranks (16-bit, two a register; and its payload) in registers from the load to
# the placement, and more cost occupancy.  With the passes compiled for 4 blocks an SM
# (sort_match.KEYS_ONLY_BLOCKS, PAYLOAD_BLOCKS), H200, 2**26 float32, same run as CuPy's
# sort (1809-1823 us) and PyTorch's stable sort with indices (2973-2996 us): sort 1756 us
# with 20 keys, 1729 with 22, 1712 with 24 (16 keys for 5 blocks: 1804-1823); argsort 2744
# us with 11 keys, 2669 with 12, 2602 with 13 (11 uncapped, 3 blocks: 2870-2906)
MATCH_ITEMS = 24
MATCH_ITEMS_PAYLOAD = 13
MATCH_BLOCK = 256  # threads per block of the warp-match passes (GPUs)
# the onesweep histogram's blocks on GPUs (4 keys a thread, 4 blocks an SM): H200, 2**26
# keys, 124 us against 136 with the passes' 256 x 16 (256 x 8: 135, 512 x 8: 130)
HISTOGRAM_BLOCK, HISTOGRAM_ITEMS = 1024, 4


def ranking(be):
    """The warp operations for warp-match ranking (:mod:`.sort_match`) where the device has
    32-lane warps with ballots, else None: per-thread counters (:mod:`.sort_kernels`)."""
    from ember.compiler.driver import target_of

    t = target_of(be)
    if t.warp_size == 32 and t.has("subgroup_ballot") and t.has("subgroup_shuffle"):
        return match.HARDWARE
    return None


def _shared_budget(be) -> int:
    """Bytes of shared memory a radix block may use: GPUs cap static shared memory at 48
    KiB; CPU devices' local memory is ordinary memory (PoCL: 512 KiB)."""
    shared = be.device.shared_memory_per_block
    return (shared if launch.is_cpu(be) else min(STATIC_SHARED, shared)) - 1024


@functools.cache
def geometry(be, U: DType, PT: DType | None, warp_ops) -> kern.SortGeometry:
    """Radix tile shape from the device's shared memory: the most keys per thread (up to
    16; :data:`MATCH_ITEMS` and :data:`MATCH_ITEMS_PAYLOAD` for warp ranking) whose
    buffers fit.  Warp ranking: 256 threads (64 on CPU devices, which emulate the warps in
    tests); per-thread counters: 64 threads on CPUs (the 256 x 64 counter table fits in
    their large local memory), as many as fit elsewhere."""
    budget = _shared_budget(be)
    pay = PT.itemsize if PT is not None else 0  # None: keys only
    items = 16
    if warp_ops is not None:
        block = 64 if launch.is_cpu(be) else min(MATCH_BLOCK, be.device.max_threads_per_block)
        # warp histograms and match words, digit starts/counts (int32) and offsets (int64),
        # the block scan's buffer and the emulated warp operations' (one word a warp with
        # hardware warps); 512 bytes for the 16-byte alignment of each array; keys and
        # ranks are in registers until they are placed
        warps = block // 32
        scan = warps * 4 if warp_ops is match.HARDWARE else block * 12
        fixed = warps * kern.RADIX * 8 + kern.RADIX * 16 + scan + 512
        per_key = U.itemsize + pay
        items = MATCH_ITEMS if PT is None else MATCH_ITEMS_PAYLOAD
        if launch.is_cpu(be):  # (the tests' emulated warps: 24 unrolled keys took the
            items = min(items, 16 if PT is None else 11)  # sort tests 16 -> 44 s on cpu)
    else:
        block = 64 if launch.is_cpu(be) else 32
        while block > 1 and kern.RADIX * block * 4 * 33 // 32 > budget // 2:
            block //= 2
        fixed = kern.RADIX * block * 4 * 33 // 32 + kern.RADIX * 12 + block * 8
        per_key = 2 * (U.itemsize + pay) + 1
    while items > 1 and fixed + block * items * per_key > budget:
        items -= 1
    return kern.SortGeometry(block, items)


def _keys(x: ndarray, merge_zeros: bool):
    """``(U, key functions)`` of ``x``'s dtype."""
    dt = x.dtype
    kind = "f" if dt.is_float else "i" if dt.kind == "i" else "u"
    U = kern.unsigned(dt.itemsize)
    return U, kern.key_functions(kind, U, merge_zeros and kind == "f")


def _as(x: ndarray, dt: DType) -> ndarray:
    """``x``'s memory seen as ``dt`` (same itemsize)."""
    return ndarray(x.shape, dt, x.buffer, x.backend, x.strides, x.offset)


# --------------------------------------------------------------------- rows
def sort_rows(src: ndarray, values: bool, indices: bool, descending: bool):
    """Sort each row of the 2-d view ``src``: ``(values, indices)`` as new C-contiguous
    ``(rows, n)`` arrays (None where not wanted)."""
    rows, n = src.shape
    be = src.backend
    if values and indices and src.dtype.is_float and rows and n:
        _, iout = sort_rows(src, False, True, descending)  # merged zeros lose -0.0's sign
        from ember.array.gather import take_along_axis

        return take_along_axis(src, iout, axis=1), iout
    vout = launch.new(be, src.shape, src.dtype) if values else None
    iout = launch.new(be, src.shape, dtypes.int64) if indices else None
    if rows == 0 or n == 0:
        return vout, iout
    U, fns = _keys(src, merge_zeros=indices)
    raw = _as(src, U)
    if n <= SEGMENT:
        _bitonic(raw, U, fns, descending, vout, iout)
        return vout, iout
    for r in range(rows):
        _radix(raw[r], U, fns, descending, vout[r] if values else None,
               iout[r] if indices else None)  # fmt: skip
    return vout, iout


def _bitonic(raw: ndarray, U, fns, descending, vout, iout) -> None:
    rows, n = raw.shape
    be = raw.backend
    p = next(p for p in NETWORKS if p >= n)
    block = max(1, min(p // 2, 64 if launch.is_cpu(be) else 256, be.device.max_threads_per_block))
    x, xbase, (xrow, xstep) = launch.flat(raw)
    dummy_v = launch.new(be, (1,), U)
    dummy_i = launch.new(be, (1,), dtypes.int64)
    v, vbase, vrow = (launch.flat1(_as(vout, U)), 0, n) if vout is not None else (dummy_v, 0, 0)
    i, ibase, irow = (launch.flat1(iout), 0, n) if iout is not None else (dummy_i, 0, 0)
    args = (rows, n, x, xbase, xrow, xstep, descending, vout is not None, v, vbase, vrow,
            iout is not None, i, ibase, irow)  # fmt: skip
    k = kern.bitonic_rows(U, fns, p, block)
    launch.run(k, min(rows, launch.max_grid(be)), block, args)


def _radix(raw: ndarray, U, fns, descending, vout, iout) -> None:
    """LSD radix sort of the 1-d view ``raw`` (``U`` bits) into ``vout`` (values, same
    memory as ``U``) and/or ``iout`` (int64 indices)."""
    be = raw.backend
    n = raw.shape[0]
    warp_ops = ranking(be)
    pt = dtypes.int32 if n < 1 << 31 else dtypes.int64
    g = geometry(be, U, pt if iout is not None else None, warp_ops)
    tiles = -(-n // g.tile)
    passes = max(1, U.itemsize * 8 // kern.RADIX_BITS)
    onesweep = warp_ops is not None and be.forward_progress and n <= match.COUNT
    keys = [launch.new(be, (n,), U) for _ in range(min(passes - 1, 2))]
    pays = [launch.new(be, (n,), pt) for _ in range(min(passes - 1, 2))] if iout is not None else []
    dummy = launch.new(be, (1,), pt)
    kin, kbase, (kstep,) = launch.flat(raw)
    pin, pbase, pstep = dummy, 0, 0
    run = _onesweep(raw, U, fns, g, tiles, passes, descending, warp_ops) if onesweep else None
    for p in range(passes):
        last = p == passes - 1
        if last:
            kout = launch.flat1(_as(vout, U)) if vout is not None else launch.new(be, (n,), U)
            pout = iout if iout is not None else dummy
        else:
            kout = keys[p % 2]
            pout = pays[p % 2] if iout is not None else dummy
        payload = "none" if iout is None else "iota" if p == 0 else "load"
        head = (n, tiles, kin, kbase, kstep, pin, pbase, pstep, p * kern.RADIX_BITS, p == 0,
                last and vout is not None, descending)  # fmt: skip
        po = dtypes.int64 if last and iout is not None else pt
        if run is not None:
            run(p, payload, pt, po, head, kout, pout)
        else:
            _classic_pass(be, U, fns, g, tiles, warp_ops, payload, pt, po, head, kout, pout)
        kin, kbase, kstep = kout, 0, 1
        pin, pbase, pstep = pout, 0, 1


def _classic_pass(be, U, fns, g, tiles, warp_ops, payload, pt, po, head, kout, pout) -> None:
    """Upsweep (tile digit counts), their scan, and the ranking/scatter kernel."""
    n, _, kin, kbase, kstep, _, _, _, shift, tin, _, desc = head
    counts = launch.new(be, (1, kern.RADIX * tiles), dtypes.uint32)
    grid = min(tiles, launch.max_grid(be))
    launch.run(kern.upsweep(U, fns, g), grid, g.block,
               (n, tiles, kin, kbase, kstep, shift, tin, desc, launch.flat1(counts)))  # fmt: skip
    scanned = launch.new(be, (1, kern.RADIX * tiles), dtypes.int64)
    inclusive_scan(counts, scanned, ops.add, dtypes.int64)
    places = launch.flat1(scanned)
    if warp_ops is None:
        down = kern.downsweep(U, fns, g, payload, pt, po)
        launch.run(down, grid, g.block, (*head, places, kout, pout))
        return
    k = match.match_pass(U, fns, g, payload, pt, po, "classic", warp_ops)
    launch.run(k, tiles, g.block, (*head, places, launch.flat1(counts), 0, kout, pout))


def histogram_geometry(be, g: kern.SortGeometry) -> kern.SortGeometry:
    """The onesweep histogram's blocks: :data:`HISTOGRAM_BLOCK` x :data:`HISTOGRAM_ITEMS`
    on GPUs, the passes' ``g`` on CPU devices."""
    if launch.is_cpu(be):
        return g
    return kern.SortGeometry(min(HISTOGRAM_BLOCK, be.device.max_threads_per_block),
                             HISTOGRAM_ITEMS)  # fmt: skip


def onesweep_mode(be) -> str:
    """``match_pass``'s mode for ``be``: tiles from the block index where blocks start in
    index order, else from a counter."""
    return "onesweep-ordered" if be.ordered_blocks else "onesweep"


def _onesweep(raw, U, fns, g, tiles, passes, descending, warp_ops):
    """The histogram of every pass, and a function running one onesweep pass."""
    be = raw.backend
    n = raw.shape[0]
    kin, kbase, (kstep,) = launch.flat(raw)
    hist = launch.zeroed(be, (passes, kern.RADIX), dtypes.uint32)
    gh = histogram_geometry(be, g)
    k = match.histogram(U, fns, gh, passes)
    htiles = -(-n // gh.tile)
    grid = min(htiles, max(1, be.device.multiprocessors) * 4)
    args = (n, htiles, kin, kbase, kstep, descending, launch.flat1(hist))
    launch.run(k, grid, gh.block, args)
    starts = launch.new(be, (passes, kern.RADIX), dtypes.int64)
    inclusive_scan(hist, starts, ops.add, dtypes.int64)
    # per pass: tile x digit words, the tile counter, and 1 if the pass keeps the order
    words = tiles * kern.RADIX + 2
    state = launch.zeroed(be, (passes, words), dtypes.uint32)
    cells = passes * kern.RADIX
    launch.run(match.trivial_passes(), -(-cells // 256), 256,
               (n, cells, launch.flat1(hist), launch.flat1(state), words))  # fmt: skip

    copies = min(tiles, max(1, be.device.multiprocessors) * 4)
    mode = onesweep_mode(be)
    rows = [(launch.row(starts, p), launch.row(state, p)) for p in range(passes)]

    def run(p, payload, pt, po, head, kout, pout):
        places, words_p = rows[p]
        # the copy where the pass is marked to keep the order, else the pass
        kc = match.copy_pass(U, fns, g, payload, pt, po)
        launch.run(kc, copies, g.block, (*head, words_p, words - 2, kout, pout))
        kp = match.match_pass(U, fns, g, payload, pt, po, mode, warp_ops)
        args = (*head, places, words_p, words - 2, kout, pout)
        launch.run(kp, tiles, g.block, args)

    return run


# --------------------------------------------------------------------- along an axis
def _along(x: ndarray, axis, values: bool, indices: bool, descending: bool):
    if axis is None:
        x, axis = manipulation.reshape(x, (-1,)), 0
    if x.ndim == 0:
        raise ValueError("cannot sort a 0-d array along an axis (reshape it to 1-d)")
    k = manipulation._axis(axis, x.ndim)
    moved = manipulation.moveaxis(x, k, -1)
    lead, n = moved.shape[:-1], moved.shape[-1]
    src = manipulation.reshape(moved, (math.prod(lead), n))
    vout, iout = sort_rows(src, values, indices, descending)

    def back(a):
        if a is None:
            return None
        a = manipulation.reshape(a, (*lead, n))
        if k == x.ndim - 1:
            return a
        return manipulation.ascontiguousarray(manipulation.moveaxis(a, -1, k))

    return back(vout), back(iout)


def _check(x, what: str) -> ndarray:
    if not isinstance(x, ndarray):
        raise not_on_device(x, f"ember.{what}")
    from ember.array.rules import no_order

    no_order(x.dtype, what)
    return x


def _kind(kind, order) -> None:
    if order is not None:
        raise ValueError("order= (structured arrays) is not supported by ember")
    if kind not in (None, "quicksort", "mergesort", "heapsort", "stable"):
        raise ValueError(f"sort kind must be one of 'quicksort', 'mergesort', 'heapsort', "
                         f"'stable', got {kind!r}")  # fmt: skip


def sort(x, /, axis: int | None = -1, kind=None, order=None, *, descending: bool = False,
         stable: bool = True) -> ndarray:  # fmt: skip
    """A sorted copy of ``x`` along ``axis`` (the flattened array if None).

    Parameters
    ----------
    x : ndarray
    axis : int or None
        Default the last axis.
    kind, order :
        NumPy's; every sort here is stable (radix or bitonic with index ties), so ``kind``
        changes nothing; ``order`` is not supported.
    descending : bool
        Largest first (Array API); still stable; NaNs first.
    stable : bool
        Accepted for the Array API (always stable).

    Returns
    -------
    ndarray
        NaNs last (ascending), like NumPy.
    """
    x = _check(x, "sort")
    _kind(kind, order)
    return _along(x, axis, True, False, descending)[0]


def argsort(x, /, axis: int | None = -1, kind=None, order=None, *, descending: bool = False,
            stable: bool = True) -> ndarray:  # fmt: skip
    """The int64 indices that sort ``x`` along ``axis``, stable (equal elements keep their
    order, ``-0.0`` equals ``0.0``); see :func:`sort` for the arguments."""
    x = _check(x, "argsort")
    _kind(kind, order)
    return _along(x, axis, False, True, descending)[1]


def sort_inplace(x: ndarray, axis: int = -1, kind=None, order=None) -> None:
    """``x.sort()``: sort ``x`` in place along ``axis``."""
    _kind(kind, order)
    manipulation.copy_into(x, _along(x, axis, True, False, False)[0])


__all__ = ["sort", "argsort"]
