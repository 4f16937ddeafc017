"""The sort kernels, written in Ember's kernel language (the host side is :mod:`.sort`).

**Keys.**  Values are sorted as unsigned integers of their width (``U``: uint8..uint64),
read through an unsigned view of the same memory: unsigned values as they are, signed ones
with the sign bit flipped, floats with the usual flip (negative: all bits inverted;
positive: the sign bit set), so that unsigned order is numeric order.  Every NaN becomes
the largest key (NumPy sorts NaNs last); for ``argsort`` ``-0.0`` becomes ``+0.0`` (they
compare equal, so a stable sort keeps their order, as NumPy's does).  ``descending``
complements the key: still stable, NaNs then come first (they are the largest values).
The last pass of ``sort`` turns keys back into values.

**LSD radix sort** (:func:`upsweep`, :func:`downsweep`): ``RADIX_BITS`` bits per pass from
the least significant; each pass is a stable counting sort of tiles of ``TILE = BLOCK *
ITEMS`` keys:

``upsweep``
    each tile's digit counts, written digit-major (``counts[d * tiles + t]``), so that one
    inclusive scan of that array gives every (digit, tile) its place in the output;
``downsweep``
    ranks the tile's keys (stable), places them in shared memory in digit order, then
    writes each run of equal digits to its place: ``scanned[d * tiles + t - 1] +`` the
    key's position within its run - mostly contiguous stores.

A *payload* travels with the keys: the original indices for ``argsort`` (generated in the
first pass, ``int32`` while they fit, ``int64`` from the last pass).

**Ranking in a tile** (stable) with per-thread counters: thread ``t`` owns keys ``t *
ITEMS ...`` (consecutive), counts its digits in its own column of a ``RADIX x BLOCK``
counter table in shared memory (no atomics, no conflicts), the table is scanned in
(digit, thread) order, and each thread walks its keys again taking positions from its
counters.

**Small segments** (:func:`bitonic_rows`): each row of at most ``P`` elements (a power of
two) is sorted by one block, a bitonic network over ``(key, index)`` pairs in shared
memory (the index breaks ties: stable), padded with the largest key.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import ember
from ember import dtypes
from ember.array import ops
from ember.array import scan_kernels as sk
from ember.array.scan_kernels import pad
from ember.compiler.kernel import Kernel
from ember.dtypes import DType

RADIX_BITS = 8
RADIX = 1 << RADIX_BITS
MASK = RADIX - 1


@dataclass(frozen=True)
class SortGeometry:
    """``block`` threads x ``items`` keys per tile (radix passes)."""

    block: int
    items: int

    @property
    def tile(self) -> int:
        return self.block * self.items


def unsigned(itemsize: int) -> DType:
    """The unsigned dtype of a key's width."""
    return {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[itemsize]


def _named(fn, name: str, launch_bounds=None) -> Kernel:
    fn.__name__ = fn.__qualname__ = name
    return Kernel(fn, launch_bounds=launch_bounds)


# --------------------------------------------------------------------- keys
@functools.cache
def key_functions(kind: str, U: DType, merge_zeros: bool):
    """``(to_key(bits, desc), to_bits(key, desc))`` for values of ``kind`` ("u", "i", "f";
    bool is "u") stored as ``U`` bits; ``merge_zeros``: -0.0 gets +0.0's key."""
    TOP = U.bits - 1
    INF = {16: 0x7C00, 32: 0x7F800000, 64: 0x7FF0000000000000}.get(U.bits, 0)
    MERGE = merge_zeros

    def key_u(b, desc):
        return ~b if desc else b

    def bits_u(k, desc):
        return ~k if desc else k

    def key_i(b, desc):
        k = b ^ (U(1) << TOP)
        return ~k if desc else k

    def bits_i(k, desc):
        return (~k if desc else k) ^ (U(1) << TOP)

    def key_f(b, desc):
        sign = U(1) << TOP
        mag = b & ~sign
        k = ~b if b & sign else b | sign
        if mag > INF:  # every NaN: the largest key
            k = ~U(0)
        elif MERGE and mag == 0:  # -0.0 as +0.0
            k = sign
        return ~k if desc else k

    def bits_f(k, desc):
        sign = U(1) << TOP
        k = ~k if desc else k
        return k ^ sign if k & sign else ~k

    found = {"f": (key_f, bits_f), "i": (key_i, bits_i)}.get(kind, (key_u, bits_u))
    for f in found:
        f.__name__ = f.__qualname__ = f"{f.__name__}_{U.name}" + ("_m" if merge_zeros else "")
    return found


def digit(k, shift):
    return ember.int32((k >> shift) & MASK)


def cidx(d, t, BLOCK):
    """Slot of thread ``t``'s counter for digit ``d`` (padded: conflict-free columns)."""
    return pad(d * BLOCK + t)


# --------------------------------------------------------------------- radix passes
@functools.cache
def upsweep(U: DType, key_fns, g: SortGeometry) -> Kernel:
    """``counts[d * tiles + t]`` = keys of tile ``t`` with digit ``d`` at ``shift``."""
    to_key = key_fns[0]
    TILE, BLOCK, ITEMS = g.tile, g.block, g.items

    def upsweep(n, tiles, kin, kbase, kstep, shift, tin, desc, counts):
        hist = ember.shared((RADIX,), ember.uint32)
        tid = ember.thread_idx.x
        t = ember.block_idx.x
        while t < tiles:
            for d in range(tid, RADIX, BLOCK):
                hist[d] = 0
            ember.barrier()
            e0 = t * TILE
            count = min(n - e0, TILE)
            for j in range(ITEMS):
                e = j * BLOCK + tid
                if e < count:
                    k = kin[kbase + (e0 + e) * kstep]
                    if tin:
                        k = to_key(k, desc)
                    ember.atomic_add(hist, digit(k, shift), 1)
            ember.barrier()
            for d in range(tid, RADIX, BLOCK):
                counts[d * tiles + t] = hist[d]
            ember.barrier()
            t += ember.grid_dim.x

    return _named(upsweep, f"radix_upsweep_{to_key.__name__}_{BLOCK}x{ITEMS}")


def _counter_ranker(U, g: SortGeometry):
    """``rank(sk, cnt, buf, dstart, tid, shift)``: the stable tile position of each of
    thread ``tid``'s keys (``sk[pad(tid * ITEMS + j)]``), and ``dstart[d]`` = the tile
    position of the first key with digit ``d``."""
    BLOCK, ITEMS = g.block, g.items
    PER = RADIX  # counters per thread in the raking scan (RADIX * BLOCK of them)
    f = sk._tile_functions(ops.add, dtypes.int32, dtypes.int32, BLOCK, 1, 0)
    block_scan = f.block_scan

    def count(sk_, cnt, tid, shift):
        for d in range(RADIX):
            cnt[cidx(d, tid, BLOCK)] = 0
        for j in range(ITEMS):
            c = cidx(digit(sk_[pad(tid * ITEMS + j)], shift), tid, BLOCK)
            cnt[c] += 1
        ember.barrier()

    def scan_counters(cnt, buf, dstart, tid):
        total = ember.int32(0)
        for i in range(PER):
            total += ember.int32(cnt[pad(tid * PER + i)])
        excl, _ = block_scan(buf, total, tid)
        run = excl if tid > 0 else ember.int32(0)
        for i in range(PER):
            c = ember.int32(cnt[pad(tid * PER + i)])
            cnt[pad(tid * PER + i)] = run
            run += c
        ember.barrier()
        for d in range(tid, RADIX, BLOCK):
            dstart[d] = cnt[cidx(d, 0, BLOCK)]
        ember.barrier()

    return count, scan_counters


@functools.cache
def downsweep(U: DType, key_fns, g: SortGeometry, payload: str, PT: DType, PO: DType) -> Kernel:
    """One stable counting-sort pass: keys (and the payload: ``"none"``, ``"iota"`` made
    from positions, or ``"load"``ed as ``PT``, written as ``PO``) to their places."""
    to_key, to_bits = key_fns
    count, scan_counters = _counter_ranker(U, g)
    TILE, BLOCK, ITEMS = g.tile, g.block, g.items
    SLOTS = TILE + (TILE >> 5)
    CSLOTS = RADIX * BLOCK + (RADIX * BLOCK >> 5)
    HAS_P, IOTA = payload != "none", payload == "iota"

    def downsweep(n, tiles, kin, kbase, kstep, pin, pbase, pstep, shift, tin, tout, desc,
                  scanned, kout, pout):  # fmt: skip
        sk_ = ember.shared((SLOTS,), U)
        sk2 = ember.shared((TILE,), U)
        sp = ember.shared((SLOTS if HAS_P else 1,), PT)
        sp2 = ember.shared((TILE if HAS_P else 1,), PT)
        cnt = ember.shared((CSLOTS,), ember.int32)
        buf = ember.shared((2 * BLOCK,), ember.int32)
        dstart = ember.shared((RADIX,), ember.int32)
        gofs = ember.shared((RADIX,), ember.int64)
        tid = ember.thread_idx.x
        t = ember.block_idx.x
        while t < tiles:
            e0 = t * TILE
            cnt_ = min(n - e0, TILE)
            for j in range(ITEMS):
                e = j * BLOCK + tid
                k = ~U(0)  # past the end: the largest key, ranked after every real one
                if e < cnt_:
                    k = kin[kbase + (e0 + e) * kstep]
                    if tin:
                        k = to_key(k, desc)
                sk_[pad(e)] = k
                if HAS_P:
                    sp[pad(e)] = PT(e0 + e) if IOTA else (pin[pbase + (e0 + e) * pstep]
                                                          if e < cnt_ else PT(0))  # fmt: skip
            ember.barrier()
            count(sk_, cnt, tid, shift)
            scan_counters(cnt, buf, dstart, tid)
            for j in range(ITEMS):
                s = pad(tid * ITEMS + j)
                k = sk_[s]
                c = cidx(digit(k, shift), tid, BLOCK)
                pos = cnt[c]
                cnt[c] = pos + 1
                sk2[pos] = k
                if HAS_P:
                    sp2[pos] = sp[s]
            for d in range(tid, RADIX, BLOCK):
                f = d * tiles + t
                start = scanned[f - 1] if f > 0 else ember.int64(0)
                gofs[d] = ember.int64(start) - dstart[d]
            ember.barrier()
            for j in range(ITEMS):
                e = j * BLOCK + tid
                if e < cnt_:
                    k = sk2[e]
                    dst = gofs[digit(k, shift)] + e
                    kout[dst] = kout.dtype(to_bits(k, desc) if tout else k)
                    if HAS_P:
                        pout[dst] = PO(sp2[e])
            ember.barrier()
            t += ember.grid_dim.x

    name = f"radix_downsweep_{to_key.__name__}_{payload}{PT.name}_{BLOCK}x{ITEMS}"
    return _named(downsweep, name)


# --------------------------------------------------------------------- small segments
@functools.cache
def bitonic_rows(U: DType, key_fns, P: int, block: int) -> Kernel:
    """Sort each row (``n <= P`` elements) by one block: keys and/or indices out."""
    to_key, to_bits = key_fns
    LOGP = P.bit_length() - 1
    BLOCK = block

    def bitonic_rows(rows, n, x, xbase, xrow, xstep, desc, want_values, vout, vbase, vrow,
                     want_index, iout, ibase, irow):  # fmt: skip
        keys = ember.shared((P,), U)
        idx = ember.shared((P,), ember.int32)
        tid = ember.thread_idx.x
        r = ember.block_idx.x
        while r < rows:
            for e in range(tid, P, BLOCK):
                k = ~U(0)
                if e < n:
                    k = to_key(x[xbase + r * xrow + e * xstep], desc)
                keys[e] = k
                idx[e] = e
            ember.barrier()
            for kk in range(1, LOGP + 1):
                for jj in range(kk - 1, -1, -1):
                    half = 1 << jj
                    for i in range(tid, P, BLOCK):
                        other = i ^ half
                        if other > i:
                            a = keys[i]
                            b = keys[other]
                            ia = idx[i]
                            ib = idx[other]
                            later = a > b or (a == b and ia > ib)
                            if later == ((i & (1 << kk)) == 0):
                                keys[i] = b
                                keys[other] = a
                                idx[i] = ib
                                idx[other] = ia
                    ember.barrier()
            for e in range(tid, n, BLOCK):
                if want_values:
                    vout[vbase + r * vrow + e] = vout.dtype(to_bits(keys[e], desc))
                if want_index:
                    iout[ibase + r * irow + e] = idx[e]
            ember.barrier()
            r += ember.grid_dim.x

    return _named(bitonic_rows, f"bitonic_rows_{to_key.__name__}_{P}")
