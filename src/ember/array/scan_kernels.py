"""The scan kernels, written in Ember's kernel language (the host side is :mod:`.scan`).

An inclusive scan of ``rows`` independent rows of ``n`` elements with any associative
operator ``OP`` computing in ``CT``.  A row is cut into *tiles* of ``TILE = BLOCK * ITEMS``
elements; one block scans one tile:

1. the tile is loaded into shared memory, coalesced (element ``j * BLOCK + t`` by thread
   ``t``; on devices with real warps in the single pass, each warp loads the ``32 * ITEMS``
   elements its lanes scan, so a warp sync replaces the block barrier: :func:`_layout`),
   cast to ``CT``;
2. each thread reduces its ``ITEMS`` consecutive elements serially;
3. the block scans the per-thread totals (warp shuffles where the device has 32-lane warps
   with shuffles, else a Hillis-Steele scan in shared memory), giving each thread the
   combination of the threads before it and the block the tile's total;
4. the tile's *prefix* (the combination of every earlier tile of its row) is found, by one
   of two designs;
5. each thread rescans its elements from its prefix, in shared memory, and the tile is
   stored, coalesced.

Shared-memory slots are padded by one per 32 (``pad``) so that the strided serial reads of
step 2 and 5 hit distinct banks.  No identity element is needed: out-of-range slots of the
last tile are never combined, and threads without a prefix start from their first element.

The prefix, step 4:

``scan_carry`` (reduce-then-scan, every device)
    A first kernel (``tile_reduce``) writes each tile's total; the host scans those totals
    (the same kernels, recursively: a row of ``T`` tiles becomes a row of ``T`` numbers);
    ``scan_carry`` reads the inclusive total of the tile before.  Moves ~3n elements.
``scan_lookback`` (single pass: decoupled look-back, Merrill & Garland 2016)
    Tiles are taken in launch order from an atomic counter (so every earlier tile belongs to
    a block that has started), or, on devices that start blocks in index order (CUDA: the
    assumption CUB's single-pass scan makes), from the block index, which saves each block
    an atomic round trip and a barrier before its first load.  A block publishes its tile's
    total (flag 1, the *aggregate*) as soon as it has it, then looks back over a window of
    the tiles before it at a time (32; 128 where one warp does the look-back: four per lane,
    folded with shuffles): each waits until that tile has published something, and the
    combination runs from the newest backwards until a tile that published its *inclusive
    prefix* (flag 2).  The block then publishes its own inclusive prefix.  A tile's flag and,
    for values of up to 4 bytes, the value's bits share one 64-bit word, written with one
    atomic exchange and read with one :func:`ember.atomic_load` (a plain volatile read: many
    blocks poll the same words, and read-modify-write atomics on one address queue
    up).  8-byte values take two such words, a half beside the flag in each, read together
    (:func:`.lookback.state_words`): no fence either.  Each word also holds the launch's
    *epoch*, so that the tiles' words need no zeroing between launches: with tiles by block
    index, one state (zeroed once) serves the scans of a device in turn, a new epoch each.
    Moves ~2n elements, but needs blocks that make progress while others wait on them:
    only on backends with ``forward_progress``.

``rows_serial`` scans short rows, one thread per row (and every row of an operator that is
not associative, a left fold); ``fold_segments`` folds segments of rows, one thread each.

The factories are memoized per ``(OP, CT, BLOCK, ITEMS, WARP)``; ``OP`` is a plain Python
function compiled as a device function (an operator of :mod:`ember.array.ops`, or the
user's function given to :func:`ember.accumulate`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING

import ember
from ember import dtypes
from ember.array import lookback as lb
from ember.array.lookback import PREFIX, WINDOW
from ember.compiler import kernel as compiled  # a module: ember.kernel may be importing us
from ember.dtypes import DType

if TYPE_CHECKING:  # when `ember.kernel` is the first thing a program imports (kernel.py ->
    from ember.compiler.kernel import Kernel  # args.py -> the array library -> here)


@dataclass(frozen=True)
class Geometry:
    """Launch shape of the tile kernels: ``block`` threads, ``items`` elements each, and
    ``warp`` (32: block scans with warp shuffles; 0: in shared memory); ``emulated``: the
    warp shuffles through shared memory (the same kernels on devices without sub-groups,
    for tests); ``warp_lookback``: one warp does the look-back alone (devices whose warps
    run sub-group operations in branches that split the block but not the warp);
    ``ordered``: the single pass takes its tile from its block index instead of a counter
    (devices whose blocks start in index order: ``Backend.ordered_blocks``); ``segments``:
    the single pass's warps load and store the elements they scan (:func:`_layout`: warp
    syncs instead of two block barriers; devices with real warps)."""

    block: int
    items: int
    warp: int
    emulated: bool = False
    warp_lookback: bool = False
    ordered: bool = False
    segments: bool = False

    @property
    def tile(self) -> int:
        return self.block * self.items


def storage(ct: DType) -> DType:
    """The dtype a ``ct`` value is kept in, in shared memory: 16-bit floats as float32
    (OpenCL has no ``__local half`` without ``cl_khr_fp16``), bool as uint8."""
    return dtypes.float32 if ct.is_narrow else dtypes.uint8 if ct is dtypes.bool_ else ct


def atomic_storage(ct: DType) -> DType:
    """The dtype a ``ct`` value is published in for the look-back: one with atomics."""
    if ct.is_float:
        return dtypes.float64 if ct.itemsize == 8 else dtypes.float32
    if ct.itemsize == 8:
        return ct
    return dtypes.uint32 if ct.kind == "u" else dtypes.int32


def _named(fn, name: str) -> Kernel:
    fn.__name__ = fn.__qualname__ = name
    return compiled.Kernel(fn)


def _name(prefix: str, op, ct: DType, g: Geometry) -> str:
    opname = op.__name__.removeprefix("ew_")
    return f"{prefix}_{opname}_{ct.name}_{g.block}x{g.items}" + _warp_name(g)


def _warp_name(g: Geometry) -> str:
    warp = (("we" if g.emulated else "w") + ("l" if g.warp_lookback else "")) if g.warp else ""
    return warp + ("o" if g.ordered else "") + ("s" if g.segments else "")


def _pre_name(pre) -> str:
    return "" if pre is same else f"_{pre.__name__}"


def pad(k):
    """Shared-memory slot of tile element ``k``: one spare slot per 32."""
    return k + (k >> 5)


# --------------------------------------------------------------------- device functions
def same(v):
    """The default ``pre``: elements are scanned as they are (cast to ``CT``)."""
    return v


def flag(v):
    """``pre`` of stream compaction: 1 where the element is nonzero (NaN counts)."""
    return v != 0


def _layout(BLOCK, ITEMS, SEGMENTS):
    """Where thread ``tid`` loads and stores a tile's elements: its ``j``-th element is
    ``first + j * STEP``, with ``(first, slot) = place(tid)`` and ``at(slot, e, j)`` the
    shared-memory slot of that element ``e`` (``pad(e)``).  Block-striped
    (``j * BLOCK + tid``; a block barrier before the elements are read by the thread that
    scans them), or with ``SEGMENTS`` warp-owned: warp ``w`` moves elements
    ``w * 32 * ITEMS ...`` of the tile, 32 consecutive ones a step, which are the elements
    its own lanes scan (a warp sync is enough).  Both are coalesced.  Where ``STEP`` is a
    multiple of 32 the slots are the first's plus constants (no ``pad`` arithmetic per
    element)."""
    if SEGMENTS:
        SPAN = 32 * ITEMS

        def place(tid):
            first = (tid >> 5) * SPAN + (tid & 31)
            return first, pad(first)

        STEP = 32
    else:

        def place(tid):
            return tid, pad(tid)

        STEP = BLOCK
    ROW = STEP + (STEP >> 5)

    def at_step(slot, e, j):
        return slot + j * ROW

    def at_pad(slot, e, j):
        return pad(e)

    return place, STEP, at_step if STEP % 32 == 0 else at_pad


def _own(ITEMS):
    """``own(base, j)``: the slot of the ``j``-th of a thread's ``ITEMS`` consecutive
    elements, ``base`` being ``tid * ITEMS``: ``pad(base) + j + (j >> 5)`` where ``ITEMS``
    is a power of two (its elements straddle a padding slot only at multiples of 32)."""

    def own_pow2(base, j):
        return pad(base) + j + (j >> 5)

    def own_pad(base, j):
        return pad(base + j)

    return own_pow2 if ITEMS & (ITEMS - 1) == 0 else own_pad


def _moves(CT, ST, PRE, BLOCK, ITEMS, SEGMENTS) -> SimpleNamespace:
    """A tile's loads into shared memory and stores from it, in :func:`_layout`'s order:
    ``load(s, x, start, step, count, first, slot)`` (``PRE`` of each element, cast to
    ``CT``, kept as ``ST``; zeros past ``count``), ``store(out, s, start, count, first,
    slot)``, and ``place(tid) -> (first, slot)``.  Full tiles take unguarded loops."""
    TILE = BLOCK * ITEMS
    place, ESTEP, at = _layout(BLOCK, ITEMS, SEGMENTS)

    def load_guarded(s, x, start, step, count, first, slot):
        for j in range(ITEMS):
            e = first + j * ESTEP
            if e < count:
                s[at(slot, e, j)] = ST(CT(PRE(x[start + e * step])))
            else:
                s[at(slot, e, j)] = ST(0)

    def load_by_4(s, x, start, step, count, first, slot):
        """Full tiles: unit-stride rows indexed without the stride (H200, float32 scan of
        2**26: 183 -> 176 us); others four loads issued before their stores (several
        requests in flight per thread; a store to shared memory could otherwise hold back
        the next load)."""
        if count < TILE:
            load_guarded(s, x, start, step, count, first, slot)
        elif step == 1:
            base = start + first
            for j in range(ITEMS):
                s[at(slot, first + j * ESTEP, j)] = ST(CT(PRE(x[base + j * ESTEP])))
        else:
            for j in range(0, ITEMS, 4):
                e = first + j * ESTEP
                a = x[start + e * step]
                b = x[start + (e + ESTEP) * step]
                c = x[start + (e + 2 * ESTEP) * step]
                d = x[start + (e + 3 * ESTEP) * step]
                s[at(slot, e, j)] = ST(CT(PRE(a)))
                s[at(slot, e + ESTEP, j + 1)] = ST(CT(PRE(b)))
                s[at(slot, e + 2 * ESTEP, j + 2)] = ST(CT(PRE(c)))
                s[at(slot, e + 3 * ESTEP, j + 3)] = ST(CT(PRE(d)))

    load = load_by_4 if ITEMS % 4 == 0 else load_guarded

    def store(out, s, start, count, first, slot):
        if count < TILE:
            for j in range(ITEMS):
                e = first + j * ESTEP
                if e < count:
                    out[start + e] = out.dtype(CT(s[at(slot, e, j)]))
        else:
            base = start + first
            for j in range(ITEMS):
                out[base + j * ESTEP] = out.dtype(CT(s[at(slot, first + j * ESTEP, j)]))

    return SimpleNamespace(place=place, load=load, store=store)


def _block_scan(CT, ST, BLOCK, WARP, EMU, combine):
    """``block_scan(buf, v, tid) -> (exclusive, total)`` of the block's ``v``: with 32-lane
    warp shuffles (``WARP``; through shared memory with ``EMU``) or Hillis-Steele in shared
    memory (``buf``: :func:`_sizes`' slots)."""
    NWARPS = BLOCK // WARP if WARP else 0
    LOG_BLOCK = BLOCK.bit_length() - 1

    def block_scan_shared(buf, v, tid):
        """(exclusive value for tid > 0, block total): Hillis-Steele, double-buffered."""
        buf[tid] = ST(v)
        ember.barrier()
        src = 0
        for k in range(LOG_BLOCK):
            d = 1 << k
            if tid >= d:
                v = combine(buf[src + tid - d], v)
            dst = BLOCK - src
            buf[dst + tid] = ST(v)
            ember.barrier()
            src = dst
        total = CT(buf[src + BLOCK - 1])
        excl = CT(buf[src + tid - 1]) if tid > 0 else v
        return excl, total

    def shfl_hw(buf, v, src, tid):
        """Lane ``src``'s ``v`` in this thread's warp."""
        return CT(ember.shfl(v, src))

    def shfl_emu(buf, v, src, tid):
        """The same through shared memory (``buf[NWARPS:]``)."""
        buf[NWARPS + tid] = ST(v)
        ember.barrier()
        o = CT(buf[NWARPS + tid - tid % WARP + src])
        ember.barrier()
        return o

    shfl = shfl_emu if EMU else shfl_hw

    def block_scan_warp(buf, v, tid):
        """The same with 32-lane warp shuffles and one pass over the warp totals."""
        lane = tid & (WARP - 1)
        w = tid >> 5
        for k in range(5):
            d = 1 << k
            o = shfl(buf, v, lane - d if lane >= d else 0, tid)
            if lane >= d:
                v = combine(o, v)
        up = shfl(buf, v, lane - 1 if lane > 0 else 0, tid)
        if lane == WARP - 1:
            buf[w] = ST(v)
        ember.barrier()
        total = CT(buf[0])
        wprefix = total
        for k in range(1, NWARPS):
            if k == w:
                wprefix = total
            total = combine(total, buf[k])
        excl = up
        if w > 0:
            excl = combine(wprefix, up) if lane > 0 else wprefix
        return excl, total

    return block_scan_warp if WARP else block_scan_shared


def _tile_functions(
    OP, CT, ST, BLOCK, ITEMS, WARP, PRE=same, EMU=False, SEGMENTS=False
) -> SimpleNamespace:
    """The per-tile steps shared by the kernels (see the module docstring); ``PRE`` maps
    each loaded element before it is cast to ``CT``; ``EMU``: shuffles in shared memory;
    ``SEGMENTS``: warp-owned loads and stores (:func:`_layout`).

    Full tiles take unguarded loops, and the shared-memory slots are offsets from one
    computed per thread (:func:`_layout`, :func:`_own`), not ``pad`` per element."""
    moves = _moves(CT, ST, PRE, BLOCK, ITEMS, SEGMENTS)
    own = _own(ITEMS)

    def combine(a, b):
        return CT(OP(CT(a), CT(b)))

    def thread_reduce(s, tid, m):
        base = tid * ITEMS
        acc = CT(s[pad(base)])
        if m == ITEMS:
            for j in range(1, ITEMS):
                acc = combine(acc, s[own(base, j)])
        else:
            for j in range(1, ITEMS):
                if j < m:
                    acc = combine(acc, s[own(base, j)])
        return acc

    def rescan(s, tid, m, excl, prefix, has_prefix):
        """Thread ``tid``'s elements from its start: ``prefix`` (the tile's, if any)
        combined with ``excl`` (the threads' before it, for ``tid > 0``)."""
        base = tid * ITEMS
        run = CT(s[pad(base)])
        if tid > 0:
            if has_prefix:
                excl = combine(prefix, excl)
            run = combine(excl, run)
        elif has_prefix:
            run = combine(prefix, run)
        s[pad(base)] = ST(run)
        if m == ITEMS:
            for j in range(1, ITEMS):
                run = combine(run, s[own(base, j)])
                s[own(base, j)] = ST(run)
        else:
            for j in range(1, ITEMS):
                if j < m:
                    run = combine(run, s[own(base, j)])
                    s[own(base, j)] = ST(run)

    block_scan = _block_scan(CT, ST, BLOCK, WARP, EMU, combine)

    def scan_tile(s, buf, tid, count, prefix, has_prefix):
        """Steps 2, 3 and 5 without the store: the tile in ``s`` becomes its inclusive
        scan from ``prefix``; returns the tile's total."""
        m = min(max(count - tid * ITEMS, 0), ITEMS)
        acc = thread_reduce(s, tid, m)
        excl, total = block_scan(buf, acc, tid)
        rescan(s, tid, m, excl, prefix, has_prefix)
        return total

    def sync_warp():
        ember.syncwarp()

    def sync_block():
        ember.barrier()

    return SimpleNamespace(
        combine=combine, load=moves.load, store=moves.store, thread_reduce=thread_reduce,
        rescan=rescan, block_scan=block_scan, scan_tile=scan_tile, place=moves.place,
        moved=sync_warp if SEGMENTS else sync_block,
    )  # fmt: skip


def _functions(op, ct: DType, g: Geometry, pre=same) -> SimpleNamespace:
    """The tile functions of ``g`` (``moved()``: the sync between a thread's loads or
    stores and the thread that reads the slots next, per :func:`_layout`)."""
    return _tile_functions(
        op, ct, storage(ct), g.block, g.items, g.warp, pre, g.emulated, g.segments
    )


# --------------------------------------------------------------------- kernels
def _sizes(g: Geometry):
    tile = g.tile
    slots = tile + (tile >> 5)
    buf = 2 * g.block if not g.warp else g.block // g.warp + (g.block if g.emulated else 0)
    return tile, slots, buf


@functools.cache
def tile_reduce(op, ct: DType, g: Geometry, pre=same) -> Kernel:
    """``partial[r * T + t]`` = the combination of tile ``t`` of row ``r`` (of ``pre``
    of its elements)."""
    f = _functions(op, ct, g, pre)
    load, thread_reduce, block_scan, place = f.load, f.thread_reduce, f.block_scan, f.place
    TILE, SLOTS, BUF = _sizes(g)
    ST, ITEMS = storage(ct), g.items

    def tile_reduce(rows, n, tiles, x, xbase, xrow, xstep, partial):
        s = ember.shared((SLOTS,), ST)
        buf = ember.shared((BUF,), ST)
        tid = ember.thread_idx.x
        first, slot = place(tid)
        t = ember.block_idx.x
        while t < rows * tiles:
            r = t // tiles
            e0 = (t - r * tiles) * TILE
            count = min(n - e0, TILE)
            load(s, x, xbase + r * xrow + e0 * xstep, xstep, count, first, slot)
            ember.barrier()
            m = min(max(count - tid * ITEMS, 0), ITEMS)
            _, total = block_scan(buf, thread_reduce(s, tid, m), tid)
            if tid == 0:
                partial[t] = partial.dtype(total)
            ember.barrier()
            t += ember.grid_dim.x

    return _named(tile_reduce, _name("scan_reduce", op, ct, g) + _pre_name(pre))


@functools.cache
def scan_carry(op, ct: DType, g: Geometry) -> Kernel:
    """Scan every tile, starting from the inclusive total of the tile before it in its
    row (``carry[r * T + t - 1]``, scanned by the host beforehand)."""
    f = _functions(op, ct, g)
    load, store, scan_tile, place = f.load, f.store, f.scan_tile, f.place
    TILE, SLOTS, BUF = _sizes(g)
    CT, ST = ct, storage(ct)

    def scan_carry(rows, n, tiles, x, xbase, xrow, xstep, out, obase, orow, carry):
        s = ember.shared((SLOTS,), ST)
        buf = ember.shared((BUF,), ST)
        tid = ember.thread_idx.x
        first, slot = place(tid)
        t = ember.block_idx.x
        while t < rows * tiles:
            r = t // tiles
            k = t - r * tiles
            e0 = k * TILE
            count = min(n - e0, TILE)
            load(s, x, xbase + r * xrow + e0 * xstep, xstep, count, first, slot)
            ember.barrier()
            scan_tile(s, buf, tid, count, CT(carry[t - 1 if k > 0 else 0]), k > 0)
            ember.barrier()
            store(out, s, obase + r * orow + e0, count, first, slot)
            ember.barrier()
            t += ember.grid_dim.x

    return _named(scan_carry, _name("scan_carry", op, ct, g))


@functools.cache
def scan_lookback(op, ct: DType, g: Geometry) -> Kernel:
    """The single-pass scan (decoupled look-back); see the module docstring.

    ``state`` (uint64, :func:`.lookback.state_size` words): ``state[0]`` is the tile
    counter (zero at launch where tiles come from it), then the tiles' words
    (:func:`.lookback.state_words`), which count only where they hold ``epoch``: a state
    serves many launches, each with its own epoch.  One block per tile.  The look-back's
    device functions are in :mod:`.lookback`."""
    f = _functions(op, ct, g)
    load, store, thread_reduce, block_scan = f.load, f.store, f.thread_reduce, f.block_scan
    rescan, place, moved = f.rescan, f.place, f.moved
    AT = atomic_storage(ct)
    warp_lookback = g.warp_lookback and g.warp == WINDOW and not g.emulated
    lookback = (lb.warp_lookback if warp_lookback else lb.block_lookback)(f.combine, ct, AT)
    publish = lb.state_words(AT).publish
    TILE, SLOTS, BUF = _sizes(g)
    ST, ITEMS, ORDERED = storage(ct), g.items, g.ordered

    def scan_lookback(rows, n, tiles, x, xbase, xrow, xstep, out, obase, orow, state, epoch):
        s = ember.shared((SLOTS,), ST)
        buf = ember.shared((BUF,), ST)
        wflag = ember.shared((WINDOW,), ember.int32)
        wval = ember.shared((WINDOW,), AT)
        ctl = ember.shared((2,), ember.int32)
        cval = ember.shared((1,), AT)
        tid = ember.thread_idx.x
        if ORDERED:  # blocks start in index order: every earlier tile's block has started
            t = ember.int64(ember.block_idx.x)  # 64-bit: k * TILE passes 2**31
        else:
            if tid == 0:
                ctl[0] = ember.int32(ember.atomic_add(state, 0, 1))  # its tile, in start order
            ember.barrier()
            t = ember.int64(ctl[0])
        r = 0  # one row (a plain cumsum): no 64-bit division
        if rows > 1:
            r = t // tiles
        k = t - r * tiles
        e0 = k * TILE
        count = min(n - e0, TILE)
        first, slot = place(tid)
        load(s, x, xbase + r * xrow + e0 * xstep, xstep, count, first, slot)
        moved()
        m = min(max(count - tid * ITEMS, 0), ITEMS)
        excl, total = block_scan(buf, thread_reduce(s, tid, m), tid)
        prefix = total
        if k > 0:
            prefix = lookback(state, wflag, wval, ctl, cval, t, t - k, tid, total, epoch)
        elif tid == 0:
            publish(state, t, AT(total), PREFIX, epoch)
        rescan(s, tid, m, excl, prefix, k > 0)
        moved()
        store(out, s, obase + r * orow + e0, count, first, slot)

    return _named(scan_lookback, _name("scan_lookback", op, ct, g))


@functools.cache
def rows_serial(op, ct: DType) -> Kernel:
    """Short rows: one thread scans one row."""

    def rows_serial(rows, n, x, xbase, xrow, xstep, out, obase, orow):
        r = ember.global_id()
        while r < rows:
            xi = xbase + r * xrow
            oi = obase + r * orow
            acc = CT(x[xi])
            out[oi] = out.dtype(acc)
            for e in range(1, n):
                acc = CT(OP(acc, CT(x[xi + e * xstep])))
                out[oi + e] = out.dtype(acc)
            r += ember.global_size()

    OP, CT = op, ct
    opname = op.__name__.removeprefix("ew_")
    return _named(rows_serial, f"scan_rows_{opname}_{ct.name}")


@functools.cache
def fold_segments(op, ct: DType, has_initial: bool) -> Kernel:
    """Left folds of segments, one thread each (``ufunc.reduceat``, and the reductions of
    operators that are not associative: ``subtract.reduce`` is ``x0 - x1 - x2 ...``).

    Item ``t`` of ``rows * m`` is segment ``i = t % m`` of row ``r = t // m``: the elements
    ``idx[i] .. idx[i + 1] - 1`` of the row (to ``n`` for the last segment; the one element
    ``idx[i]`` where ``idx[i + 1] <= idx[i]``: NumPy's rule), combined in order from the
    first (``has_initial``: from ``p1``, which an empty row then gives).  The work is the
    segments' total length, whatever their order; a long segment is serial."""

    def fold_segments(count, m, n, x, xbase, xrow, xstep, idx, out, obase, orow, p1):
        t = ember.global_id()
        while t < count:
            r = t // m
            i = t - r * m
            e = idx[i]
            end = n
            if i + 1 < m:
                end = max(idx[i + 1], e + 1)
            xi = xbase + r * xrow
            if INITIAL:
                acc = CT(p1)
            else:
                acc = CT(x[xi + e * xstep])
                e += 1
            while e < end:
                acc = CT(OP(acc, CT(x[xi + e * xstep])))
                e += 1
            out[obase + r * orow + i] = out.dtype(acc)
            t += ember.global_size()

    OP, CT, INITIAL = op, ct, has_initial
    opname = getattr(op, "__name__", "op").removeprefix("ew_")
    return _named(fold_segments, f"fold_{opname}_{ct.name}{'_i' if has_initial else ''}")


# --------------------------------------------------------------------- stream compaction
def value_at(v, vbase, vstep, i):
    """What :func:`select` writes for element ``i``: the value..."""
    return v[vbase + i * vstep]


def index_of(v, vbase, vstep, i):
    """... or its index, counted from ``vbase`` (0 for positions; a table's first value for
    the values of a counting ``unique``)."""
    return vbase + i


@functools.cache
def select(g: Geometry, what) -> Kernel:
    """Stream compaction: ``out[k] = what(v, ..., i)`` for the ``k``-th ``i`` whose
    ``flags[i]`` is nonzero.  ``carry[t]`` is the number of flags set in tiles ``0..t``
    (a scan of :func:`tile_reduce`'s counts); within a tile the positions come from the
    tile's scan of its flags."""
    from ember.array import ops

    if g.segments:
        raise ValueError("select reads its tile block-striped: a geometry without segments")
    f = _functions(ops.add, dtypes.int32, g, flag)
    load, scan_tile, place = f.load, f.scan_tile, f.place
    TILE, SLOTS, BUF = _sizes(g)
    BLOCK, ITEMS, WHAT = g.block, g.items, what

    def select(n, tiles, flags, fbase, fstep, v, vbase, vstep, carry, out):
        s = ember.shared((SLOTS,), ember.int32)
        buf = ember.shared((BUF,), ember.int32)
        tid = ember.thread_idx.x
        first, slot = place(tid)
        t = ember.block_idx.x
        while t < tiles:
            e0 = t * TILE
            count = min(n - e0, TILE)
            load(s, flags, fbase + e0 * fstep, fstep, count, first, slot)
            ember.barrier()
            scan_tile(s, buf, tid, count, ember.int32(0), False)
            ember.barrier()
            base = carry[t - 1] if t > 0 else ember.int64(0)
            for j in range(ITEMS):
                e = j * BLOCK + tid
                if e < count:
                    c = s[pad(e)]
                    if c != (s[pad(e - 1)] if e > 0 else 0):
                        out[base + c - 1] = out.dtype(WHAT(v, vbase, vstep, e0 + e))
            ember.barrier()
            t += ember.grid_dim.x

    name = "select_" + ("indices" if what is index_of else "values")
    return _named(select, f"{name}_{g.block}x{g.items}" + _warp_name(g))
