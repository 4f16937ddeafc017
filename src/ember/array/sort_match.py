"""Radix passes for GPUs: warp-match ranking and the single-pass ``onesweep`` (Adinets &
Merrill 2022), written in Ember's kernel language.  Portable passes: :mod:`.sort_kernels`.

**Warp-match ranking.**  Each warp owns a contiguous run of its tile; item ``j`` of lane
``l`` is the run's key ``j * 32 + l`` (coalesced loads, kept in registers with their
ranks, two 16-bit ranks a register, until they are placed).  For each item the lanes
holding the same digit find each other through a per-warp word per digit (each sets its
bit with a shared ``atomic_or`` and reads the word back after a warp barrier); a lane's
rank among its warp's keys with that digit is the warp's running count of the digit
(which the lowest peer reads and bumps by their number, broadcast by a shuffle) plus the
peers below it.  After the items, the warps' counts are scanned per digit (warp order:
stable) and over the digits (the tile's digit starts; warp shuffles), keys move to their
tile position in shared memory, and runs of equal digits are written out contiguously.

**Global places.**  ``mode="classic"``: from the scan of the upsweep's digit-major counts,
as the portable passes.  ``mode="onesweep"``: one histogram kernel counts the digits of
every pass up front (:func:`histogram`, one read of the keys); then each pass is a single
kernel: tiles are taken in start order from an atomic counter (from the block index where
blocks start in index order: ``mode="onesweep-ordered"``), each tile publishes its digit
counts as soon as it has them, moves its keys to their tile positions, and then thread ``d``
looks back over earlier tiles for digit ``d`` (a flag in the top two bits of the count's
32-bit word: 1 = this tile's count, 2 = the inclusive count of every tile up to it) - a
decoupled look-back per digit, with the keys out of registers by then (the look-back's
own registers did not have to share them: 64 wanted without a cap, against 80).  Only on
backends with ``forward_progress``; counts below 2**30.

A tile's digit runs start at offsets of 32 bits where every position fits (positions
and the payload's indices are then ``int32``): the placement reads them at random.

``WarpOps`` gives the ballot, shuffle, popcount and warp barrier: the hardware's
(``ember.ballot``...) or a shared-memory emulation, with which the same kernel runs (slowly)
on devices without sub-groups, for tests."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import ember
from ember import dtypes
from ember.array import ops
from ember.array import scan_kernels as sk
from ember.array.sort_kernels import MASK, RADIX, RADIX_BITS, SortGeometry, _named, digit
from ember.compiler.kernel import Kernel
from ember.dtypes import DType

WARP = 32
AGG, INCL = 1, 2  # look-back flags (top two bits of a count word)
COUNT = (1 << 30) - 1
# earlier tiles whose words a digit's look-back requests at once (H200, 2**26 float32, the
# four onesweep passes: sort 2287 us with one at a time, 2150 with 4, 2205 with 8; argsort
# 3054, 2724, 2942)
LOOKBACK_TILES = 4
# blocks per multiprocessor the passes of keys of at most 4 bytes are compiled for (CUDA's
# __launch_bounds__: 64 registers a thread), keys only and with a payload, with
# sort.MATCH_ITEMS / MATCH_ITEMS_PAYLOAD keys per thread: what their shared memory allows.
# Uncapped, the payload passes took 72 registers (3 blocks).  For 5 blocks (48 registers),
# ptxas spilled (16 keys: 48 bytes, 24: 228); H200, 2**26 float32, sort with 16 keys: 1804
# us for 5 blocks, 1919 for 6; 20 keys: 1756 for 4, 1896 for 5 (measurements of sort.py)
KEYS_ONLY_BLOCKS = 4
PAYLOAD_BLOCKS = 4


# --------------------------------------------------------------------- warp operations
def _hw_ballot(p, lane, w, wbuf):
    return ember.ballot(p)


def _hw_shfl(v, src, lane, w, wbuf):
    return ember.shfl(v, src)


def _hw_popc(x):
    return ember.popc(x)


def _emu_ballot(p, lane, w, wbuf):
    """A warp ballot through shared memory (every thread of the block must call it)."""
    wbuf[w * WARP + lane] = 1 if p else 0
    ember.barrier()
    m = ember.uint32(0)
    for i in range(WARP):
        if wbuf[w * WARP + i] != 0:
            m |= ember.uint32(1) << i
    ember.barrier()
    return m


def _emu_shfl(v, src, lane, w, wbuf):
    wbuf[w * WARP + lane] = v
    ember.barrier()
    out = wbuf[w * WARP + src]
    ember.barrier()
    return out


def _emu_popc(x):
    x = x - ((x >> 1) & 0x55555555)
    x = (x & 0x33333333) + ((x >> 2) & 0x33333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F
    y = x * 0x01010101
    return ember.int32(y >> 24)


def _hw_sync():
    ember.syncwarp()


def _emu_sync():
    ember.barrier()


@dataclass(frozen=True)
class WarpOps:
    """Ballot, shuffle, popcount and warp barrier of one kind (see the module docstring)."""

    ballot: object
    shfl: object
    popc: object
    sync: object
    name: str


HARDWARE = WarpOps(_hw_ballot, _hw_shfl, _hw_popc, _hw_sync, "hw")
EMULATED = WarpOps(_emu_ballot, _emu_shfl, _emu_popc, _emu_sync, "emu")


def _rank_in_warp(ops_: WarpOps):
    """``rank(d, lane, w, whist, wmask, wbuf)``: this lane's position among its warp's keys
    with digit ``d`` so far (stable), counting the key in the warp's histogram ``whist``.

    The lanes holding digit ``d`` find each other through the warp's word ``wmask[w *
    RADIX + d]``: each sets its bit with a shared ``atomic_or`` and, after a warp barrier,
    reads the word back (two shared-memory operations; one ballot per digit bit took eight
    and was what bounded the pass).  The lowest of those peers adds their number to the
    warp's count of the digit (no other lane touches that count in this round) and clears
    the word; a shuffle gives every peer the count before them."""
    SHFL, POPC, SYNC = ops_.shfl, ops_.popc, ops_.sync

    def rank(d, lane, w, whist, wmask, wbuf):
        slot = w * RADIX + d
        ember.atomic_or(wmask, slot, ember.uint32(1) << lane)
        SYNC()
        peers = wmask[slot]
        below = (ember.uint32(1) << lane) - ember.uint32(1)
        leader = POPC((peers & (~peers + ember.uint32(1))) - ember.uint32(1))
        base = ember.int32(0)
        if leader == lane:
            base = whist[slot]
            whist[slot] = base + POPC(peers)
        base = SHFL(base, leader, lane, w, wbuf)
        if leader == lane:
            wmask[slot] = ember.uint32(0)
        SYNC()  # the count and the cleared word, seen by the next round's lanes
        return base + POPC(peers & below)

    return rank


# --------------------------------------------------------------------- kernels
@functools.cache
def histogram(U: DType, key_fns, g: SortGeometry, passes: int) -> Kernel:
    """``hist[p * RADIX + d]`` += keys whose digit ``p`` is ``d``, for every pass at once."""
    to_key = key_fns[0]
    BLOCK, TILE, ITEMS, SLOTS = g.block, g.tile, g.items, passes * RADIX

    def radix_histogram(n, tiles, kin, kbase, kstep, desc, hist):
        h = ember.shared((SLOTS,), ember.uint32)
        keys = ember.local((ITEMS,), U)
        tid = ember.thread_idx.x
        t = ember.block_idx.x
        for i in range(tid, SLOTS, BLOCK):
            h[i] = 0
        ember.barrier()
        while t < tiles:
            e0 = t * TILE
            # every load of the tile in flight before the first count (a load between
            # atomics waited for them: 257 -> 206 us for 2**26 float32 keys on an H100)
            for j in ember.static_range(ITEMS):
                e = e0 + j * BLOCK + tid
                keys[j] = kin[kbase + e * kstep] if e < n else U(0)
            for j in ember.static_range(ITEMS):
                if e0 + j * BLOCK + tid < n:
                    k = to_key(keys[j], desc)
                    for p in ember.static_range(passes):
                        ember.atomic_add(h, p * RADIX + digit(k, p * RADIX_BITS), 1)
            t += ember.grid_dim.x
        ember.barrier()
        for i in range(tid, SLOTS, BLOCK):
            if h[i] != 0:
                ember.atomic_add(hist, i, h[i])

    return _named(radix_histogram, f"radix_histogram_{to_key.__name__}_{passes}")


@functools.cache
def trivial_passes() -> Kernel:
    """``state[p * words + words - 1] = 1`` where pass ``p``'s digit counts (``hist``, one
    row of ``RADIX`` per pass) put all ``n`` keys under one digit: that pass would keep
    the order, so :func:`copy_pass` copies it and the ranking kernel ends at once
    (integers of a small range: their high bytes; 2**24 int32 values below 2**24 skip the
    ranking of their fourth pass)."""

    def radix_trivial(n, cells, hist, state, words):
        i = ember.global_id()
        if i < cells and hist[i] == n:
            state[(i // RADIX) * words + words - 1] = 1

    return _named(radix_trivial, "radix_trivial")


@functools.cache
def copy_pass(U: DType, key_fns, g: SortGeometry, payload: str, PT: DType, PO: DType) -> Kernel:
    """The onesweep pass where :func:`trivial_passes` marked it (every key has one digit:
    the stable pass keeps the order): the keys (to sort keys on the first pass, back to
    values on the last) and the payload, copied, tile by tile (``ITEMS`` loads in flight
    per thread); elsewhere each block reads the mark and ends.  A kernel of its own, so
    that the ranking kernel's registers are not those of two paths (a copy path inside
    it cost the keys-only pass 10 % on an H200)."""
    to_key, to_bits = key_fns
    BLOCK, ITEMS, TILE = g.block, g.items, g.tile
    IOTA, LOADS = payload == "iota", payload == "load"

    def radix_copy(n, tiles, kin, kbase, kstep, pin, pbase, pstep, shift, tin, tout, desc,
                   state, slot, kout, pout):  # fmt: skip
        if state[slot + 1] != 0:
            keys = ember.local((ITEMS,), U)
            pays = ember.local((ITEMS if LOADS else 1,), PT)
            tid = ember.thread_idx.x
            t = ember.int64(ember.block_idx.x)
            while t < tiles:
                e0 = t * TILE
                for j in ember.static_range(ITEMS):
                    e = e0 + j * BLOCK + tid
                    if e < n:
                        keys[j] = kin[kbase + e * kstep]
                        if LOADS:
                            pays[j] = pin[pbase + e * pstep]
                for j in ember.static_range(ITEMS):
                    e = e0 + j * BLOCK + tid
                    if e < n:
                        k = to_key(keys[j], desc) if tin else keys[j]
                        kout[e] = kout.dtype(to_bits(k, desc) if tout else k)
                        if IOTA:
                            pout[e] = PO(e)
                        elif LOADS:
                            pout[e] = PO(pays[j])
                t += ember.grid_dim.x

    name = f"radix_copy_{to_key.__name__}_{payload}{PT.name}_{PO.name}_{BLOCK}x{ITEMS}"
    return _named(radix_copy, name)


@functools.cache
def match_pass(U: DType, key_fns, g: SortGeometry, payload: str, PT: DType, PO: DType,
               mode: str, warp_ops: WarpOps) -> Kernel:  # fmt: skip
    """One radix pass with warp-match ranking; ``mode`` "classic", "onesweep" (tiles from
    a counter) or "onesweep-ordered" (tiles from the block index: devices that start blocks
    in index order, ``Backend.ordered_blocks``)."""
    to_key, to_bits = key_fns
    rank = _rank_in_warp(warp_ops)
    BLOCK, ITEMS, TILE = g.block, g.items, g.tile
    NWARPS, RUN = BLOCK // WARP, WARP * g.items
    DPT = max(1, RADIX // BLOCK)  # digits per thread in the scans over digits
    HAS_P, IOTA, ONESWEEP = payload != "none", payload == "iota", mode.startswith("onesweep")
    TICKET = mode == "onesweep"
    LOADS = payload == "load"
    # global offsets of the tile's digit runs: int32 where every position fits (PT, the
    # payload's index type, is int32 exactly then): half the shared-memory traffic of the
    # random reads of step 4
    GO = PT if PT is dtypes.int32 else dtypes.int64
    # the block scan over digits: warp shuffles where the warps are real (one barrier, not
    # eight of a scan in shared memory)
    SCAN_WARP = WARP if warp_ops is HARDWARE else 0
    scan_fns = sk._tile_functions(ops.add, dtypes.int32, dtypes.int32, BLOCK, 1, SCAN_WARP)
    SCAN_BUF, WBUF = (NWARPS, 1) if SCAN_WARP else (2 * BLOCK, BLOCK)
    block_scan = scan_fns.block_scan
    publish, lookback = _digit_lookback()
    load = _key_loader(U, to_key, g.items)

    def radix_pass(n, tiles, kin, kbase, kstep, pin, pbase, pstep, shift, tin, tout, desc,
                   places, state, slot, kout, pout):  # fmt: skip
        keys = ember.local((ITEMS,), U)
        ranks = ember.local(((ITEMS + 1) // 2,), ember.uint32)  # two 16-bit ranks a word
        pays = ember.local((ITEMS if LOADS else 1,), PT)
        sorted_keys = ember.shared((TILE,), U)
        sorted_pay = ember.shared((TILE if HAS_P else 1,), PT)
        whist = ember.shared((NWARPS * RADIX,), ember.int32)
        wmask = ember.shared((NWARPS * RADIX,), ember.uint32)
        dstart = ember.shared((RADIX,), ember.int32)
        dcount = ember.shared((RADIX,), ember.int32)
        gofs = ember.shared((RADIX,), GO)
        buf = ember.shared((SCAN_BUF,), ember.int32)
        wbuf = ember.shared((WBUF,), ember.int32)  # (emulated warp operations only)
        ctl = ember.shared((2,), ember.int32)
        tid = ember.thread_idx.x
        lane = tid % WARP
        w = tid // WARP
        for i in range(tid, NWARPS * RADIX, BLOCK):
            whist[i] = 0
            wmask[i] = ember.uint32(0)
        if tid == 0:
            ctl[0] = ember.atomic_add(state, slot, 1) if TICKET else ember.block_idx.x
            # onesweep: 1 where every key has one digit in this pass (trivial_passes); in
            # shared memory, not a register held across the loads (the payload passes sit
            # at 64 registers: 4 blocks per SM)
            ctl[1] = ember.int32(state[slot + 1]) if ONESWEEP else 0
        ember.barrier()
        t = ember.int64(ctl[0])  # 64-bit: t * TILE passes 2**31 in long rows
        e0 = t * TILE
        count = min(n - e0, TILE)
        if ctl[1] != 0:  # every key has one digit: copy_pass keeps the order instead
            return
        load(keys, kin, kbase + e0 * kstep, kstep, count, w * RUN + lane, tin, desc)
        if LOADS:  # the payload too, in flight with the keys (not one load per placement)
            for j in range(ITEMS):
                pos = w * RUN + j * WARP + lane
                pays[j] = pin[pbase + (e0 + pos) * pstep] if pos < count else PT(0)
        for j in ember.static_range(ITEMS):  # 1. rank within the warp, in tile order
            rk = ember.uint32(rank(digit(keys[j], shift), lane, w, whist, wmask, wbuf))
            if j % 2 == 0:
                ranks[j // 2] = rk
            else:
                ranks[j // 2] |= rk << 16
        ember.barrier()
        tot = ember.int32(0)  # 2. warps' counts scanned per digit, then over the digits
        for i in range(DPT):
            d = tid * DPT + i
            if d < RADIX:
                c = ember.int32(0)
                for v in range(NWARPS):
                    x = whist[v * RADIX + d]
                    whist[v * RADIX + d] = c
                    c += x
                dcount[d] = c
                tot += c
        excl, _ = block_scan(buf, tot, tid)
        run = excl if tid > 0 else ember.int32(0)
        for i in range(DPT):
            d = tid * DPT + i
            if d < RADIX:
                for v in range(NWARPS):  # each warp's first tile position for the digit
                    whist[v * RADIX + d] += run
                dstart[d] = run
                if ONESWEEP:  # the tile's count, for the look-backs of later tiles
                    publish(state, t, d, dcount[d] - (TILE - count if d == MASK else 0))
                run += dcount[d]
        ember.barrier()
        # 3. to the tile position, in shared memory (before this tile's own look-back,
        # which then runs with the keys and ranks no longer held in registers)
        for j in ember.static_range(ITEMS):
            pos = w * RUN + j * WARP + lane
            k = keys[j]
            d = digit(k, shift)
            r = whist[w * RADIX + d] + ember.int32((ranks[j // 2] >> (16 * (j % 2))) & 0xFFFF)
            sorted_keys[r] = k
            if HAS_P:
                if IOTA:
                    sorted_pay[r] = PT(e0 + pos)
                else:
                    sorted_pay[r] = pays[j]
        for i in range(DPT):
            d = tid * DPT + i
            if d < RADIX:
                start = ember.int64(0)
                if ONESWEEP:  # the digit's start in the output + its keys in earlier tiles
                    if d > 0:
                        start = places[d - 1]
                    start += lookback(state, t, d, dcount[d] - (TILE - count if d == MASK else 0))
                else:  # the scan of the upsweep's counts
                    f = d * tiles + t
                    if f > 0:
                        start = places[f - 1]
                gofs[d] = GO(start - dstart[d])
        ember.barrier()
        for j in range(ITEMS):  # 4. runs of equal digits to their places
            e = j * BLOCK + tid
            if e < count:
                k = sorted_keys[e]
                dst = ember.int64(gofs[digit(k, shift)] + GO(e))
                kout[dst] = kout.dtype(to_bits(k, desc) if tout else k)
                if HAS_P:
                    pout[dst] = PO(sorted_pay[e])

    name = (f"radix_{mode}_{warp_ops.name}_{to_key.__name__}_{payload}{PT.name}_"
            f"{BLOCK}x{ITEMS}")  # fmt: skip
    # (8-byte keys: their tile's shared memory fits 4 blocks an SM anyway)
    bounds = None if U.itemsize > 4 else (BLOCK, PAYLOAD_BLOCKS if HAS_P else KEYS_ONLY_BLOCKS)
    return _named(radix_pass, name, bounds)


def _key_loader(U, to_key, ITEMS):
    """``load(keys, kin, base, step, count, first, tin, desc)``: this thread's keys
    (positions ``first + j * 32``) into ``keys[j]`` (registers) as sort keys, past the end
    the largest key (ranked after every real one); all loads in flight at once."""

    def key(raw, p, count, tin, desc):
        if p >= count:
            return ~U(0)
        return to_key(raw, desc) if tin else raw

    def load(keys, kin, base, step, count, first, tin, desc):
        for j in range(ITEMS):
            p = first + j * WARP
            keys[j] = kin[base + p * step] if p < count else U(0)
        for j in range(ITEMS):
            keys[j] = key(keys[j], first + j * WARP, count, tin, desc)

    return load


def _digit_lookback():
    """``(publish, lookback)`` of thread ``d``, for its digit.  ``publish(state, t, d,
    count)``: tile ``t``'s count (inclusive for the first tile), as soon as the tile has
    it.  ``lookback(state, t, d, count)``, later: the counts of earlier tiles, added until
    one that published its inclusive count; then ours is published inclusive.

    ``state`` is this pass's: word ``t * RADIX + d`` (then the tile counter).  Flag and
    count share one word, so a plain volatile read (:func:`ember.atomic_load`) sees both
    or neither: polling with read-modify-write atomics queued every poller of a word at
    the L2 (as the scan's look-back found).  The words of :data:`LOOKBACK_TILES` earlier
    tiles are requested at once, and waited on newest first only until one is inclusive:
    a look-back that passes tiles with only their own counts costs one round trip per
    window, not per tile."""
    STOP = ember.uint32(INCL << 30)  # before the first tile: an inclusive count of 0

    def publish(state, t, d, count):
        flag = ember.uint32(INCL if t == 0 else AGG)
        ember.atomic_exchange(state, t * RADIX + d, (flag << 30) | ember.uint32(count))

    def lookback(state, t, d, count):
        total = ember.int64(0)
        if t == 0:
            return total
        j = t - 1
        while j >= 0:
            seen = ember.local((LOOKBACK_TILES,), ember.uint32)
            for i in range(LOOKBACK_TILES):
                seen[i] = ember.atomic_load(state, (j - i) * RADIX + d) if j >= i else STOP
            done = 0
            for i in range(LOOKBACK_TILES):
                if done == 0:
                    v = seen[i]
                    while (v >> 30) == 0:  # that tile's block has started: it will publish
                        v = ember.atomic_load(state, (j - i) * RADIX + d)
                    total += ember.int64(v & COUNT)
                    done = 1 if (v >> 30) == INCL else 0
            j = -1 if done else j - LOOKBACK_TILES
        mine = ember.uint32(total + count)
        ember.atomic_exchange(state, t * RADIX + d, (ember.uint32(INCL) << 30) | mine)
        return total

    return publish, lookback
